//! Run budgets: the default and the ceiling of every `*_timeout_ms`
//! argument, the one check each of them goes through, and the wall-clock
//! grace a run is given on top of its budget.
//!
//! The faces (CLI arguments, MCP tool arguments) turn a raw number into a
//! [`Budget`] once, with [`Budget::parse`], naming the argument in the
//! error; every service below takes the checked type and never re-checks
//! it. Shared by the MiniZinc and CP-SAT services (and the jobs, saves and
//! faces above them), so neither service imports the other for it.
//!
//! A `Budget` is serialised as its plain number of milliseconds (a Slurm
//! task file carries it so) and refused on the way back in unless it is
//! inside its bounds. Results that echo a budget keep their own published
//! integer type, through [`Budget::as_i64`] or [`Budget::as_millis`].

use std::num::NonZeroU64;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::diagnostics::ToolError;

/// The default budget of every MiniZinc tool and CP-SAT script run, in
/// milliseconds.
pub const DEFAULT_TIMEOUT_MS: i64 = 30_000;

/// Largest budget accepted, in milliseconds: one day.
pub const MAX_TIMEOUT_MS: i64 = 24 * 60 * 60 * 1000;

/// Added to a budget for the hard wall-clock cap of a run whose runtime
/// enforces the budget itself (MiniZinc's `--time-limit`), so that the
/// runtime normally ends the run cleanly first; a cluster job's time limit
/// includes it too.
pub const WALL_CLOCK_GRACE: Duration = Duration::from_secs(3);

/// A checked run budget: strictly positive and at most [`MAX_TIMEOUT_MS`]
/// milliseconds. Only [`Budget::parse`] and [`Budget::from_millis`] make
/// one (reading one back from its serialised number, or
/// [`Budget::saturating`], goes through the latter), so a service holding a
/// `Budget` never checks it again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "u64", into = "u64")]
pub struct Budget(NonZeroU64);

/// A number of milliseconds outside a budget's bounds (0, or more than
/// [`MAX_TIMEOUT_MS`]), refused when a serialised budget is read back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a budget must be from 1 to {MAX_TIMEOUT_MS} ms, got {0}")]
pub struct OutOfBounds(pub u64);

impl Budget {
    /// [`DEFAULT_TIMEOUT_MS`] as a budget.
    pub const DEFAULT: Budget = Budget(NonZeroU64::new(DEFAULT_TIMEOUT_MS.unsigned_abs()).unwrap());

    /// Checks the budget argument `name` (milliseconds).
    ///
    /// `default_ms` is what the argument means when omitted, named in the
    /// message for a non-positive value; `None` when its default is not a
    /// fixed number (e.g. a checker budget that follows the script's). The
    /// one upper bound, [`MAX_TIMEOUT_MS`], holds for every run, background
    /// jobs included.
    pub fn parse(name: &str, value: i64, default_ms: Option<i64>) -> Result<Budget, ToolError> {
        if value > MAX_TIMEOUT_MS {
            return Err(ToolError::invalid(format!(
                "{name} must be at most {MAX_TIMEOUT_MS} ms (one day, the cap on every run, background jobs included), got {value}"
            )));
        }
        match u64::try_from(value).ok().and_then(NonZeroU64::new) {
            Some(ms) => Ok(Budget(ms)),
            None => {
                let remedy = match default_ms {
                    Some(default_ms) => {
                        format!("pass a real budget or omit {name} for the {default_ms} ms default")
                    }
                    None => format!("pass a real budget in milliseconds or omit {name}"),
                };
                Err(ToolError::invalid(format!(
                    "{name} must be strictly positive, got {value}; 0 does not mean \"no limit\" — {remedy}"
                )))
            }
        }
    }

    /// A budget of `ms` milliseconds, or `None` outside 1..=[`MAX_TIMEOUT_MS`].
    pub const fn from_millis(ms: u64) -> Option<Budget> {
        if ms > MAX_TIMEOUT_MS.unsigned_abs() {
            return None;
        }
        match NonZeroU64::new(ms) {
            Some(ms) => Some(Budget(ms)),
            None => None,
        }
    }

    /// The budget nearest to `ms` milliseconds: 1 ms for 0, one day for
    /// more. For a budget derived from one already checked (what is left of
    /// it), never for a user's number, which [`Budget::parse`] refuses.
    pub fn saturating(ms: u64) -> Budget {
        Budget::from_millis(ms.clamp(1, MAX_TIMEOUT_MS.unsigned_abs())).unwrap_or(Budget::DEFAULT)
    }

    /// The budget in milliseconds.
    pub fn as_millis(self) -> u64 {
        self.0.get()
    }

    /// The budget in milliseconds as the signed number the results echo
    /// (always exact: the ceiling is far below `i64::MAX`).
    pub fn as_i64(self) -> i64 {
        i64::try_from(self.0.get()).unwrap_or(MAX_TIMEOUT_MS)
    }

    /// The budget as a duration.
    pub fn duration(self) -> Duration {
        Duration::from_millis(self.0.get())
    }

    /// The hard wall-clock cap of a run the runtime bounds itself: the
    /// budget plus [`WALL_CLOCK_GRACE`].
    pub fn with_grace(self) -> Duration {
        self.duration() + WALL_CLOCK_GRACE
    }
}

impl TryFrom<u64> for Budget {
    type Error = OutOfBounds;

    fn try_from(ms: u64) -> Result<Budget, OutOfBounds> {
        Budget::from_millis(ms).ok_or(OutOfBounds(ms))
    }
}

impl From<Budget> for u64 {
    fn from(budget: Budget) -> u64 {
        budget.as_millis()
    }
}

impl std::fmt::Display for Budget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ms", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_is_made_only_inside_its_bounds() {
        for bad in [i64::MIN, -1, 0, MAX_TIMEOUT_MS + 1, i64::MAX] {
            assert!(Budget::parse("timeout_ms", bad, None).is_err(), "{bad}");
        }
        assert_eq!(Budget::from_millis(0), None);
        assert_eq!(Budget::from_millis(MAX_TIMEOUT_MS.unsigned_abs() + 1), None);
        let day = Budget::parse("timeout_ms", MAX_TIMEOUT_MS, None).unwrap();
        assert_eq!(day.as_millis(), 86_400_000);
        assert_eq!(day.as_i64(), MAX_TIMEOUT_MS);
        assert_eq!(Budget::DEFAULT.as_millis(), 30_000);
        let small = Budget::parse("timeout_ms", 1, None).unwrap();
        assert_eq!(small.with_grace(), Duration::from_millis(3_001));
        assert_eq!(small.to_string(), "1 ms");
    }

    #[test]
    fn timeouts_are_positive_and_at_most_a_day() {
        let timeout = |ms| Budget::parse("timeout_ms", ms, Some(DEFAULT_TIMEOUT_MS));
        assert!(timeout(0).is_err());
        assert!(timeout(-5).is_err());
        assert_eq!(timeout(1500).unwrap().as_millis(), 1500);
        assert_eq!(timeout(MAX_TIMEOUT_MS).unwrap().as_millis(), 86_400_000);
        assert!(timeout(MAX_TIMEOUT_MS + 1).is_err());
    }

    #[test]
    fn a_budget_travels_as_its_plain_number_and_is_checked_coming_back() {
        let budget = Budget::from_millis(4000).unwrap();
        assert_eq!(serde_json::to_string(&budget).unwrap(), "4000");
        assert_eq!(serde_json::to_string(&Some(budget)).unwrap(), "4000");
        assert_eq!(serde_json::from_str::<Budget>("4000").unwrap(), budget);
        assert_eq!(
            serde_json::from_str::<Option<Budget>>("null").unwrap(),
            None
        );
        for refused in ["0", "-1", "86400001", "1.5", "\"4000\""] {
            assert!(
                serde_json::from_str::<Budget>(refused).is_err(),
                "{refused} came back as a budget"
            );
        }
        let message = serde_json::from_str::<Budget>("0").unwrap_err().to_string();
        assert!(
            message.contains("from 1 to 86400000 ms, got 0"),
            "{message}"
        );
    }

    #[test]
    fn a_saturating_budget_stays_inside_the_bounds() {
        assert_eq!(Budget::saturating(0).as_millis(), 1);
        assert_eq!(Budget::saturating(250).as_millis(), 250);
        assert_eq!(Budget::saturating(u64::MAX).as_i64(), MAX_TIMEOUT_MS);
    }

    #[test]
    fn budget_messages_name_the_argument_and_its_own_default() {
        let message = |name: &str, value: i64, default_ms: Option<i64>| {
            Budget::parse(name, value, default_ms)
                .unwrap_err()
                .to_string()
        };
        let zero = message("per_attempt_timeout_ms", 0, Some(30_000));
        assert!(
            zero.contains("per_attempt_timeout_ms must be strictly positive, got 0"),
            "{zero}"
        );
        assert!(
            zero.contains("omit per_attempt_timeout_ms for the 30000 ms default"),
            "{zero}"
        );
        let other_default = message("script_timeout_ms", -1, Some(5_000));
        assert!(
            other_default.contains("the 5000 ms default"),
            "{other_default}"
        );
        assert!(!other_default.contains("30000"), "{other_default}");
        let no_default = message("checker_timeout_ms", 0, None);
        assert!(no_default.contains("checker_timeout_ms"), "{no_default}");
        assert!(!no_default.contains("default"), "{no_default}");
        let huge = message("checker_timeout_ms", MAX_TIMEOUT_MS + 1, None);
        assert!(
            huge.starts_with(
                "Diagnostic: invalid_request — checker_timeout_ms must be at most 86400000 ms"
            ),
            "{huge}"
        );
        assert!(!huge.contains("use a background job"), "{huge}");
        let timeout = message("timeout_ms", 0, Some(DEFAULT_TIMEOUT_MS));
        assert!(
            timeout.contains("timeout_ms must be strictly positive"),
            "{timeout}"
        );
        assert!(timeout.contains("the 30000 ms default"), "{timeout}");
    }
}
