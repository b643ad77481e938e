//! Run budgets: the default and the ceiling of every `*_timeout_ms`
//! argument, and the one check each of them goes through.
//!
//! Shared by the MiniZinc and CP-SAT services (and the jobs, saves and
//! faces above them), so neither service imports the other for it. Only
//! arithmetic lives here: the wall-clock grace a run adds on top belongs to
//! the service that starts it.

use crate::diagnostics::ToolError;

/// The default budget of every MiniZinc tool and CP-SAT script run, in
/// milliseconds.
pub const DEFAULT_TIMEOUT_MS: i64 = 30_000;

/// Largest budget accepted, in milliseconds: one day.
pub const MAX_TIMEOUT_MS: i64 = 24 * 60 * 60 * 1000;

/// Checks the budget argument `name` (milliseconds) and returns it.
///
/// `default_ms` is what the argument means when omitted, named in the
/// message for a non-positive value; `None` when its default is not a
/// fixed number (e.g. a checker budget that follows the script's). The one
/// upper bound, [`MAX_TIMEOUT_MS`], holds for every run, background jobs
/// included.
pub fn validate_budget(name: &str, value: i64, default_ms: Option<i64>) -> Result<u64, ToolError> {
    if value <= 0 {
        let remedy = match default_ms {
            Some(default_ms) => {
                format!("pass a real budget or omit {name} for the {default_ms} ms default")
            }
            None => format!("pass a real budget in milliseconds or omit {name}"),
        };
        return Err(ToolError::invalid(format!(
            "{name} must be strictly positive, got {value}; 0 does not mean \"no limit\" — {remedy}"
        )));
    }
    if value > MAX_TIMEOUT_MS {
        return Err(ToolError::invalid(format!(
            "{name} must be at most {MAX_TIMEOUT_MS} ms (one day, the cap on every run, background jobs included), got {value}"
        )));
    }
    Ok(value.unsigned_abs())
}

/// Checks a tool's `timeout_ms` (default [`DEFAULT_TIMEOUT_MS`]).
pub fn validate_timeout(timeout_ms: i64) -> Result<u64, ToolError> {
    validate_budget("timeout_ms", timeout_ms, Some(DEFAULT_TIMEOUT_MS))
}

#[cfg(test)]
mod tests {
    use super::*;

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
