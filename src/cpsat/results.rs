//! The result shapes of the CP-SAT tools, defined once: MCP output schema,
//! CLI `--json` and job payloads alike.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};

use crate::verdict::Verdict;

use crate::diagnostics::Diagnostic;

/// What one script run produced.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CpsatPythonResult {
    /// The envelope's `status` (`optimal`, `feasible`, `infeasible`,
    /// `unknown`, `error`), or `error` when the run broke its contract, or
    /// `timeout` when the time limit stopped it.
    pub status: String,
    /// The envelope's `solution`; on a timeout, the last valid intermediate
    /// one (unproven); `null` when there is none.
    pub solution: Option<Map<String, Value>>,
    pub objective: Option<Number>,
    /// Diagnostic only; never used for acceptance.
    pub best_objective_bound: Option<Number>,
    /// The child's raw stdout and stderr (together capped at 1 MiB).
    pub stdout: String,
    pub stderr: String,
    /// `null` when solvergate stopped the child (timeout, output cap).
    pub return_code: Option<i32>,
    pub timed_out: bool,
    pub truncated: bool,
    pub duration_ms: u64,
    pub diagnostic: Option<Diagnostic>,
    /// Only with the sandbox on: what it enforced for this run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<crate::exec::SandboxReport>,
}

impl CpsatPythonResult {
    /// A result with a solution a checker can grade: a reported
    /// optimal/feasible answer, or a recovered incumbent on timeout.
    pub fn checkable(&self) -> Result<&Map<String, Value>, String> {
        match (&self.solution, self.status.as_str()) {
            (Some(solution), "optimal" | "feasible" | "timeout") if !solution.is_empty() => {
                Ok(solution)
            }
            (_, "optimal" | "feasible" | "timeout") => Err(format!(
                "status {} with an empty solution: nothing to check",
                self.status
            )),
            (_, status) => Err(format!("status {status}: no incumbent to check")),
        }
    }
}

/// A checker's verdict.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CheckerReport {
    /// `accepted`, `rejected`, `error` or `timeout`. Anything but a
    /// well-formed final line becomes `error`.
    pub status: String,
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
    pub stdout: String,
    pub stderr: String,
    pub return_code: Option<i32>,
    pub timed_out: bool,
    pub truncated: bool,
    pub duration_ms: u64,
}

impl CheckerReport {
    /// Why the answer is not verified, in one sentence (the verdict, then
    /// why it was normalised, when it was); `None` when it was accepted.
    pub fn refusal(&self) -> Option<String> {
        (!self.verdict.is_accepted()).then(|| {
            let why = self
                .message
                .as_deref()
                .map(|message| format!(": {message}"))
                .unwrap_or_default();
            format!("the checker's verdict is {}{why}", self.verdict)
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
    /// The checker's verdict on the mutant.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// The checker's errors (an array like `checker.errors`), bounded at
    /// about 8 KiB; a last string says how many were left out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors: Option<Vec<Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}

/// The mutation probe: does the checker reject corrupted solutions?
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CheckerTest {
    pub mutations: Vec<MutationRow>,
    /// Mutants the checker refused: evidence it is not vacuous.
    pub rejected_count: usize,
    /// Mutants the checker accepted: tolerated corruption.
    pub accepted_count: usize,
}

/// A run plus its checker.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CpsatPythonCheckedResult {
    #[serde(flatten)]
    pub run: CpsatPythonResult,
    /// The checker's report; absent when the checker was skipped.
    pub checker: Option<CheckerReport>,
    /// Why the checker did not run (no checkable incumbent).
    pub checker_skipped_reason: Option<String>,
    pub checker_timeout_ms: u64,
    /// The mutation probe, when `test_checker` asked for it and the
    /// baseline was accepted.
    pub checker_test: Option<CheckerTest>,
}
