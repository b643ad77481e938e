//! The checker self-test: after an accepted verdict, grade four corrupted
//! copies of the solution with the same checker. Rejections prove the
//! checker is not vacuous; acceptances count tolerated corruption.
//!
//! The probe turns one checker child into five, so `test_checker` is gated
//! on a projected wall clock of 120 s: each child is charged its timeout
//! plus 8250 ms of termination overhead, all four mutations assumed. With
//! no explicit `checker_timeout_ms` the checker gets the smaller of the
//! script budget and the largest that fits (8100 ms at the 30 s default),
//! never derived below 2000 ms.

use std::path::Path;

use serde_json::{Map, Number, Value};
use tokio_util::sync::CancellationToken;

use super::checker::{Graded, PreparedChecker, run_checker};
use super::mutations;
use super::results::{CheckerStatus, CheckerTest, MutationRow, ScriptStatus};
use crate::budget::Budget;
use crate::diagnostics::ToolError;

/// Wall-clock ceiling of a call with `test_checker`.
pub const PROBE_BUDGET_MS: u64 = 120_000;
/// What each child is charged beyond its timeout.
pub const CHILD_OVERHEAD_MS: u64 = 8_250;
/// The derived checker timeout never goes below this.
pub const MIN_DERIVED_CHECKER_MS: u64 = 2_000;
/// Baseline checker plus four mutants.
const CHECKER_CHILDREN: u64 = 5;
/// Longest compact-JSON errors prefix kept per mutation row.
const ERRORS_PREFIX_BYTES: usize = 8 * 1024;

/// The checker timeout to use, or why the request cannot fit the budget.
pub fn checker_budget(
    script: Budget,
    explicit: Option<Budget>,
    test_checker: bool,
) -> Result<Budget, ToolError> {
    if !test_checker {
        return Ok(explicit.unwrap_or(script));
    }
    let script_ms = script.as_millis();
    let script_charge = script_ms.saturating_add(CHILD_OVERHEAD_MS);
    match explicit {
        Some(checker) => {
            let checker_ms = checker.as_millis();
            let total = script_charge.saturating_add(
                CHECKER_CHILDREN.saturating_mul(checker_ms.saturating_add(CHILD_OVERHEAD_MS)),
            );
            if total > PROBE_BUDGET_MS {
                return Err(ToolError::invalid(format!(
                    "test_checker would take up to {total} ms: script {script_ms} ms + {CHECKER_CHILDREN} checker runs of {checker_ms} ms, each child charged {CHILD_OVERHEAD_MS} ms of overhead, over the {PROBE_BUDGET_MS} ms ceiling; lower checker_timeout_ms or script_timeout_ms"
                )));
            }
            Ok(checker)
        }
        None => {
            let room = PROBE_BUDGET_MS.saturating_sub(script_charge) / CHECKER_CHILDREN;
            let fits = room.saturating_sub(CHILD_OVERHEAD_MS);
            if fits < MIN_DERIVED_CHECKER_MS {
                return Err(ToolError::invalid(format!(
                    "with script_timeout_ms {script_ms} the checker would get only {fits} ms under the {PROBE_BUDGET_MS} ms test_checker ceiling ({CHECKER_CHILDREN} checker runs, {CHILD_OVERHEAD_MS} ms overhead each), below the {MIN_DERIVED_CHECKER_MS} ms floor; lower script_timeout_ms (at most about 60500 ms) or drop test_checker"
                )));
            }
            // Between the floor and the script's own budget.
            Ok(Budget::saturating(script_ms.min(fits)))
        }
    }
}

/// Grades every mutation; a fault in one row never discards the others.
#[allow(clippy::too_many_arguments)]
pub async fn probe(
    python: &Path,
    checker: &PreparedChecker,
    problem: Option<&str>,
    solution: &Map<String, Value>,
    objective: Option<&Number>,
    solver_status: ScriptStatus,
    checker_timeout: Budget,
    cancel: &CancellationToken,
) -> Result<CheckerTest, ToolError> {
    let objective_value = objective.map(|number| Value::Number(number.clone()));
    let mut rows = Vec::new();
    for mutant in mutations::mutations(solution, objective_value.as_ref()) {
        let name = mutant.name.to_owned();
        let payload = match mutant.outcome {
            Ok(payload) => payload,
            Err(reason) => {
                rows.push(skipped(name, reason.to_string()));
                continue;
            }
        };
        let changed = mutations::changed(
            solution,
            objective_value.as_ref(),
            &payload.solution,
            payload.objective.as_ref(),
        );
        let mutated_objective = match &payload.objective {
            Some(Value::Number(number)) => Some(number.clone()),
            _ => None,
        };
        let graded = Graded {
            problem,
            solution: &payload.solution,
            objective: mutated_objective.as_ref(),
            solver_status,
        };
        let report = run_checker(python, checker, graded, checker_timeout, cancel).await?;
        if report.status == CheckerStatus::Error
            && report
                .message
                .as_deref()
                .is_some_and(|m| m.contains("could not start"))
        {
            rows.push(skipped(name, report.message.unwrap_or_default()));
            continue;
        }
        rows.push(MutationRow {
            name,
            skipped_reason: None,
            changed,
            errors: Some(bounded_errors(&report.errors)),
            duration_ms: Some(report.duration_ms),
            status: Some(report.status),
        });
    }
    let count =
        |status: CheckerStatus| rows.iter().filter(|row| row.status == Some(status)).count();
    Ok(CheckerTest {
        rejected_count: count(CheckerStatus::Rejected),
        accepted_count: count(CheckerStatus::Accepted),
        mutations: rows,
    })
}

fn skipped(name: String, reason: String) -> MutationRow {
    MutationRow {
        name,
        skipped_reason: Some(reason),
        changed: None,
        status: None,
        errors: None,
        duration_ms: None,
    }
}

/// The checker's `errors` as an array, bounded at about 8 KiB of JSON:
/// whole entries while they fit, then one string saying how many were left
/// out (a single huge entry is cut, with a marker).
fn bounded_errors(errors: &[Value]) -> Vec<Value> {
    let mut kept = Vec::new();
    let mut used = 2;
    for (index, error) in errors.iter().enumerate() {
        let size = serde_json::to_string(error).map_or(0, |text| text.len()) + 1;
        if used + size > ERRORS_PREFIX_BYTES {
            if kept.is_empty() {
                let text = error
                    .as_str()
                    .map_or_else(|| error.to_string(), str::to_owned);
                let mut cut = ERRORS_PREFIX_BYTES / 2;
                while !text.is_char_boundary(cut.min(text.len())) {
                    cut -= 1;
                }
                kept.push(Value::from(format!(
                    "{}…[truncated]",
                    &text[..cut.min(text.len())]
                )));
                let rest = errors.len() - index - 1;
                if rest > 0 {
                    kept.push(Value::from(format!("…[{rest} more errors left out]")));
                }
            } else {
                kept.push(Value::from(format!(
                    "…[{} more errors left out]",
                    errors.len() - index
                )));
            }
            return kept;
        }
        used += size;
        kept.push(error.clone());
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_at_the_defaults() {
        let ms = |ms| Budget::from_millis(ms).unwrap();
        let checker_budget = |script, explicit: Option<u64>, test_checker| {
            checker_budget(ms(script), explicit.map(ms), test_checker).map(Budget::as_millis)
        };
        assert_eq!(checker_budget(30_000, None, false).unwrap(), 30_000);
        assert_eq!(checker_budget(30_000, Some(5_000), false).unwrap(), 5_000);
        assert_eq!(checker_budget(30_000, None, true).unwrap(), 8_100);
        assert_eq!(
            checker_budget(1_000, None, true).unwrap(),
            1_000,
            "a short script keeps its own budget"
        );
        assert!(
            checker_budget(30_000, Some(30_000), true)
                .unwrap_err()
                .to_string()
                .contains("229500")
        );
        assert!(checker_budget(60_500, None, true).is_ok());
        assert!(
            checker_budget(61_000, None, true)
                .unwrap_err()
                .to_string()
                .contains("2000 ms floor")
        );
    }

    #[test]
    fn errors_stay_an_array_and_are_bounded() {
        let short = vec![Value::from("task 3 overlaps task 4")];
        assert_eq!(bounded_errors(&short), short);
        let huge = vec![Value::from("é".repeat(10_000))];
        let cut = bounded_errors(&huge);
        assert_eq!(cut.len(), 1);
        assert!(cut[0].as_str().unwrap().ends_with("…[truncated]"));
        let many: Vec<Value> = (0..2000)
            .map(|i| Value::from(format!("error {i}")))
            .collect();
        let kept = bounded_errors(&many);
        assert!(serde_json::to_string(&kept).unwrap().len() <= ERRORS_PREFIX_BYTES + 64);
        let last = kept.last().unwrap().as_str().unwrap();
        assert!(last.contains("more errors left out"), "{last}");
        assert_eq!(kept[0], many[0]);
    }
}
