//! The result shapes of the CP-SAT tools, defined once: MCP output schema,
//! CLI `--json` and job payloads alike.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};

use super::envelope::ReportedStatus;
use crate::verdict::Verdict;

use crate::diagnostics::Diagnostic;

/// How a script run ended: the status its envelope reported, or `error`
/// when the run broke its contract, or `timeout` when the time limit
/// stopped it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ScriptStatus {
    /// The script reports a solution, proven optimal.
    Optimal,
    /// The script reports a solution, not proven optimal.
    Feasible,
    /// The script reports the model infeasible.
    Infeasible,
    /// The script reports no solution and no proof.
    Unknown,
    /// The script reports an error, or the run broke its contract.
    Error,
    /// The time limit stopped the run (a recovered incumbent is unproven).
    Timeout,
}

impl ScriptStatus {
    /// The status as it reads in the JSON (`optimal`, `timeout`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            ScriptStatus::Optimal => "optimal",
            ScriptStatus::Feasible => "feasible",
            ScriptStatus::Infeasible => "infeasible",
            ScriptStatus::Unknown => "unknown",
            ScriptStatus::Error => "error",
            ScriptStatus::Timeout => "timeout",
        }
    }
}

impl From<ReportedStatus> for ScriptStatus {
    fn from(status: ReportedStatus) -> ScriptStatus {
        match status {
            ReportedStatus::Optimal => ScriptStatus::Optimal,
            ReportedStatus::Feasible => ScriptStatus::Feasible,
            ReportedStatus::Infeasible => ScriptStatus::Infeasible,
            ReportedStatus::Unknown => ScriptStatus::Unknown,
            ReportedStatus::Error => ScriptStatus::Error,
        }
    }
}

impl std::fmt::Display for ScriptStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a CP-SAT checker's run came to; [`CheckerReport::verdict`] says
/// whether the answer passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CheckerStatus {
    /// A well-formed `accepted` verdict line.
    Accepted,
    /// A well-formed `rejected` verdict line.
    Rejected,
    /// An `error` verdict line, or anything but a well-formed one.
    Error,
    /// The checker ran out of time.
    Timeout,
}

impl CheckerStatus {
    /// The status as it reads in the JSON (`accepted`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            CheckerStatus::Accepted => "accepted",
            CheckerStatus::Rejected => "rejected",
            CheckerStatus::Error => "error",
            CheckerStatus::Timeout => "timeout",
        }
    }
}

impl std::fmt::Display for CheckerStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What one script run produced.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CpsatPythonResult {
    /// The envelope's `status`, or `error` when the run broke its contract,
    /// or `timeout` when the time limit stopped it.
    pub status: ScriptStatus,
    /// The envelope's `solution`; on a timeout, the last valid intermediate
    /// one (unproven); `null` when there is none.
    pub solution: Option<Map<String, Value>>,
    /// The envelope's `objective` (from the same line as `solution`);
    /// `null` when it printed `null` or there is no envelope.
    pub objective: Option<Number>,
    /// Diagnostic only; never used for acceptance.
    pub best_objective_bound: Option<Number>,
    /// The child's raw stdout (stdout and stderr together capped at 1 MiB).
    pub stdout: String,
    /// The child's raw stderr.
    pub stderr: String,
    /// `null` when solvergate stopped the child (timeout, output cap).
    pub return_code: Option<i32>,
    /// The run was stopped at its budget.
    pub timed_out: bool,
    /// The output went over the 1 MiB cap.
    pub truncated: bool,
    /// Wall-clock time from spawn to the end of the run, in milliseconds.
    pub duration_ms: u64,
    /// What the caller should know beyond the status (no envelope, a
    /// timeout, `infeasible`, processes that outlived the script, ...);
    /// `null` for a clean `optimal` or `feasible`.
    pub diagnostic: Option<Diagnostic>,
    /// Only with the sandbox on: what it enforced for this run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<crate::exec::SandboxReport>,
}

impl CpsatPythonResult {
    /// A result with a solution a checker can grade: a reported
    /// optimal/feasible answer, or a recovered incumbent on timeout.
    pub fn checkable(&self) -> Result<&Map<String, Value>, String> {
        use ScriptStatus::{Error, Feasible, Infeasible, Optimal, Timeout, Unknown};
        match (&self.solution, self.status) {
            (Some(solution), Optimal | Feasible | Timeout) if !solution.is_empty() => Ok(solution),
            (_, Optimal | Feasible | Timeout) => Err(format!(
                "status {} with an empty solution: nothing to check",
                self.status
            )),
            (_, status @ (Infeasible | Unknown | Error)) => {
                Err(format!("status {status}: no incumbent to check"))
            }
        }
    }
}

/// A checker's verdict.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CheckerReport {
    /// Anything but a well-formed final line becomes `error`.
    pub status: CheckerStatus,
    /// `accepted` only for a well-formed `accepted` line from a checker
    /// that exited 0 with nothing left running; `no_verdict` when it ran
    /// to its end without a verdict line.
    pub verdict: Verdict,
    /// The checker's `errors` list, verbatim.
    pub errors: Vec<Value>,
    /// The checker's `details` object, verbatim.
    pub details: Map<String, Value>,
    /// Why the verdict was normalised to `error`, when it was.
    pub message: Option<String>,
    /// The checker's raw stdout (stdout and stderr together capped at 1 MiB).
    pub stdout: String,
    /// The checker's raw stderr.
    pub stderr: String,
    /// The checker's exit code; `null` when solvergate stopped it or it
    /// never ran.
    pub return_code: Option<i32>,
    /// The checker was stopped at its budget.
    pub timed_out: bool,
    /// The checker's output went over the 1 MiB cap.
    pub truncated: bool,
    /// Wall-clock time of the checker, in milliseconds (0 when it never
    /// ran).
    pub duration_ms: u64,
    /// The resource limit that stopped the checker, when one did: the
    /// checked run's diagnostic says `resource_limit` (carried inside the
    /// process only; the diagnostic is what clients see).
    #[serde(skip)]
    #[schemars(skip)]
    pub breach: Option<crate::exec::Breach>,
}

impl CheckerReport {
    /// Why the answer is not verified, in one sentence (the verdict, then
    /// why it was normalised, when it was); `None` when it was accepted.
    pub fn refusal(&self) -> Option<String> {
        self.refusal_noting("")
    }

    /// [`CheckerReport::refusal`] with how many errors the checker listed,
    /// after the verdict: the save gate's reason.
    pub fn refusal_with_error_count(&self) -> Option<String> {
        self.refusal_noting(&format!(" with {} error(s)", self.errors.len()))
    }

    /// The refusal sentence, `note` right after the verdict.
    fn refusal_noting(&self, note: &str) -> Option<String> {
        (!self.verdict.is_accepted()).then(|| {
            let why = self
                .message
                .as_deref()
                .map(|message| format!(": {message}"))
                .unwrap_or_default();
            format!("the checker's verdict is {}{note}{why}", self.verdict)
        })
    }
}

/// One row of the checker self-test.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct MutationRow {
    /// `objective_perturbed`, `element_dropped`, `element_duplicated` or
    /// `numeric_field_perturbed`.
    pub name: String,
    /// Set when the mutation was not graded (could not be built, or the
    /// probe faulted); otherwise `status` is set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped_reason: Option<String>,
    /// What the mutant changed, e.g. `loads[0]: 2450 -> 2451`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed: Option<String>,
    /// The checker's status on the mutant.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<CheckerStatus>,
    /// The checker's errors (an array like `checker.errors`), bounded at
    /// about 8 KiB; a last string says how many were left out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors: Option<Vec<Value>>,
    /// Wall-clock time of the checker on the mutant, in milliseconds;
    /// absent when it was skipped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}

/// The mutation probe: does the checker reject corrupted solutions?
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CheckerTest {
    /// One row per mutation, always four, in the fixed order.
    pub mutations: Vec<MutationRow>,
    /// Mutants the checker refused: evidence it is not vacuous.
    pub rejected_count: usize,
    /// Mutants the checker accepted: tolerated corruption.
    pub accepted_count: usize,
}

/// A run plus its checker.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CpsatPythonCheckedResult {
    /// The script's run, its fields inline; its diagnostic is the checked
    /// one (a run timeout's, else a checker refusal's, else the run's own).
    #[serde(flatten)]
    pub run: CpsatPythonResult,
    /// The checker's report; absent when the checker was skipped.
    pub checker: Option<CheckerReport>,
    /// Why the checker did not run (no checkable incumbent).
    pub checker_skipped_reason: Option<String>,
    /// The budget the checker ran (or would have run) under, in milliseconds:
    /// `checker_timeout_ms` when given, else derived from the script's.
    pub checker_timeout_ms: u64,
    /// The mutation probe, when `test_checker` asked for it and the
    /// baseline was accepted.
    pub checker_test: Option<CheckerTest>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn script_statuses_round_trip_through_serde_as_todays_words() {
        for (status, word) in [
            (ScriptStatus::Optimal, "optimal"),
            (ScriptStatus::Feasible, "feasible"),
            (ScriptStatus::Infeasible, "infeasible"),
            (ScriptStatus::Unknown, "unknown"),
            (ScriptStatus::Error, "error"),
            (ScriptStatus::Timeout, "timeout"),
        ] {
            assert_eq!(status.as_str(), word);
            assert_eq!(status.to_string(), word);
            assert_eq!(serde_json::to_value(status).unwrap(), json!(word));
            let back: ScriptStatus = serde_json::from_value(json!(word)).unwrap();
            assert_eq!(back, status);
        }
        for status in ReportedStatus::ALL {
            assert_eq!(ScriptStatus::from(status).as_str(), status.as_str());
        }
    }

    #[test]
    fn checker_statuses_round_trip_through_serde_as_todays_words() {
        for (status, word) in [
            (CheckerStatus::Accepted, "accepted"),
            (CheckerStatus::Rejected, "rejected"),
            (CheckerStatus::Error, "error"),
            (CheckerStatus::Timeout, "timeout"),
        ] {
            assert_eq!(status.as_str(), word);
            assert_eq!(status.to_string(), word);
            assert_eq!(serde_json::to_value(status).unwrap(), json!(word));
            let back: CheckerStatus = serde_json::from_value(json!(word)).unwrap();
            assert_eq!(back, status);
        }
    }

    /// A word outside the set is not a status: a result (a Slurm node's
    /// result.json, an experiment handed back as provenance) that carries
    /// one does not parse.
    #[test]
    fn an_unknown_word_is_no_status() {
        for word in ["solved", "OPTIMAL", "model_invalid", "no_verdict", ""] {
            assert!(
                serde_json::from_value::<ScriptStatus>(json!(word)).is_err(),
                "{word:?}"
            );
        }
        for word in ["no_verdict", "ACCEPTED", "ok", ""] {
            assert!(
                serde_json::from_value::<CheckerStatus>(json!(word)).is_err(),
                "{word:?}"
            );
        }
    }

    #[test]
    fn the_save_gates_refusal_counts_the_errors() {
        let report = CheckerReport {
            status: CheckerStatus::Rejected,
            verdict: Verdict::Rejected,
            errors: vec![json!("a"), json!("b")],
            details: Map::new(),
            message: Some("why".to_owned()),
            stdout: String::new(),
            stderr: String::new(),
            return_code: Some(0),
            timed_out: false,
            truncated: false,
            duration_ms: 1,
            breach: None,
        };
        assert_eq!(
            report.refusal().as_deref(),
            Some("the checker's verdict is rejected: why")
        );
        assert_eq!(
            report.refusal_with_error_count().as_deref(),
            Some("the checker's verdict is rejected with 2 error(s): why")
        );
        let accepted = CheckerReport {
            status: CheckerStatus::Accepted,
            verdict: Verdict::Accepted,
            message: None,
            errors: Vec::new(),
            ..report
        };
        assert_eq!(accepted.refusal(), None);
        assert_eq!(accepted.refusal_with_error_count(), None);
    }
}
