//! Run budgets: the default and the ceiling of every `*_timeout_ms`
//! argument, the one check each of them goes through, and the wall-clock
//! grace a run is given on top of its budget.
//!
//! The faces (CLI arguments, MCP tool arguments) turn a raw number into a
//! [`Budget`] once, with [`Budget::parse`], naming the argument in the
//! error; every service below takes the checked type and never re-checks
//! it. Shared by the MiniZinc and CP-SAT services (and the jobs, saves and
//! faces above them), so neither service imports the other for it.

use std::num::NonZeroU64;
use std::time::Duration;

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
/// one, so a service holding a `Budget` never checks it again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Budget(NonZeroU64);

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
    pub fn from_millis(ms: u64) -> Option<Budget> {
        if ms > MAX_TIMEOUT_MS.unsigned_abs() {
            return None;
        }
        NonZeroU64::new(ms).map(Budget)
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

impl std::fmt::Display for Budget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ms", self.0)
    }
}

/// [`Budget::parse`], in milliseconds: for callers not yet holding a
/// [`Budget`].
pub fn validate_budget(name: &str, value: i64, default_ms: Option<i64>) -> Result<u64, ToolError> {
    Budget::parse(name, value, default_ms).map(Budget::as_millis)
}

/// Checks a tool's `timeout_ms` (default [`DEFAULT_TIMEOUT_MS`]).
pub fn validate_timeout(timeout_ms: i64) -> Result<u64, ToolError> {
    validate_budget("timeout_ms", timeout_ms, Some(DEFAULT_TIMEOUT_MS))
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
        assert!(validate_timeout(0).is_err());
        assert!(validate_timeout(-5).is_err());
        assert_eq!(validate_timeout(1500).unwrap(), 1500);
        assert_eq!(validate_timeout(MAX_TIMEOUT_MS).unwrap(), 86_400_000);
        assert!(validate_timeout(MAX_TIMEOUT_MS + 1).is_err());
    }

    #[test]
    fn budget_messages_name_the_argument_and_its_own_default() {
        let message = |name: &str, value: i64, default_ms: Option<i64>| {
            validate_budget(name, value, default_ms)
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
        let timeout = validate_timeout(0).unwrap_err().to_string();
        assert!(
            timeout.contains("timeout_ms must be strictly positive"),
            "{timeout}"
        );
        assert!(timeout.contains("the 30000 ms default"), "{timeout}");
    }
}
