//! The result shapes of the MiniZinc tools. Each is defined once: it is the
//! MCP output schema, the CLI's `--json` and, later, the saved JSON.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};

use crate::diagnostics::Diagnostic;
use crate::verdict::Verdict;

/// Outcome of a compile check (`minizinc -c`): the model flattens for the
/// solver, or why not. `ok` does not mean satisfiable.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CheckResult {
    /// `ok`, `error` or `timeout`.
    pub status: String,
    /// Canonical id of the solver the model was flattened for.
    pub solver: String,
    /// Combined output went over the 1 MiB cap; stdout/stderr are partial.
    pub truncated: bool,
    /// The runtime's raw stdout.
    pub stdout: String,
    /// The runtime's stderr plus any diagnostics it sent on the stream.
    pub stderr: String,
    pub elapsed_ms: u64,
    /// `null` on a clean success.
    pub diagnostic: Option<Diagnostic>,
}

/// The type of one model parameter or output variable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InterfaceType {
    /// `int`, `bool`, `float`, `string`, `tuple`, `record` or `ann`
    /// (enums show as `int`).
    pub base_type: String,
    /// Array dimensions; 0 for a scalar.
    pub dim: u32,
    pub is_set: bool,
    pub is_optional: bool,
}

/// A model's interface as MiniZinc's type checker reports it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ModelInterface {
    /// `sat`, `min` or `max`.
    pub method: String,
    /// Parameters still needing a value, given the data passed; `{}` means
    /// the data is complete.
    pub required_parameters: BTreeMap<String, InterfaceType>,
    /// The model's output variables (advisory).
    pub output_variables: BTreeMap<String, InterfaceType>,
    pub has_output_item: bool,
    pub globals: Vec<String>,
    pub included_files: Vec<String>,
}

/// Outcome of `--model-interface-only`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ModelInspectionResult {
    /// `ok` (the interface was extracted), `error` or `timeout`.
    pub status: String,
    pub solver: String,
    /// Present only when `status` is `ok`.
    pub interface: Option<ModelInterface>,
    pub truncated: bool,
    pub stdout: String,
    pub stderr: String,
    pub elapsed_ms: u64,
    pub diagnostic: Option<Diagnostic>,
}

/// One checker verdict, aligned with `solutions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SolutionCheck {
    /// The checker rejected this solution (its constraints failed, or it
    /// printed INCORRECT).
    pub violation: bool,
    /// What the checker printed, verbatim.
    pub output: String,
    /// `accepted` (ran to its end, printed CORRECT and no INCORRECT),
    /// `rejected`, `error` or `no_verdict`.
    pub verdict: Verdict,
    /// Why not `accepted`.
    pub reason: Option<String>,
}

/// What the solution checker said about a solve.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CheckerReport {
    /// `completed`, `violation`, `no_solution`, `error` or `timeout`;
    /// `verdict` says whether it passed.
    pub status: String,
    /// The worst solution's verdict (`accepted` only if every one was),
    /// or why none was checked (`error`, `timeout`, `no_verdict`).
    pub verdict: Verdict,
    /// Why not `accepted`, naming the solution.
    pub reason: Option<String>,
    /// One verdict per produced solution, in order.
    pub checks: Vec<SolutionCheck>,
    /// The raw `--json-stream` transcript with solve and checker messages.
    pub transcript: String,
}

/// Outcome of a solve.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SolveResult {
    /// `timeout`, `error`, `unsatisfiable`, `unbounded`,
    /// `unsat_or_unbounded`, `unknown`, `optimal` or `satisfied` (when
    /// several apply, the first in this order wins).
    pub status: String,
    /// Canonical id of the solver that ran.
    pub solver: String,
    /// MiniZinc's exit code; `null` when solvergate stopped the process
    /// (timeout, output cap).
    pub return_code: Option<i32>,
    /// The wall-clock cap fired.
    pub timed_out: bool,
    /// Combined output went over the 1 MiB cap; solutions parsed before the
    /// cut are kept.
    pub truncated: bool,
    /// The solutions as text: each one's output block (or `name = value;`
    /// lines when the model has no output item), MiniZinc-style separators.
    pub stdout: String,
    /// The runtime's stderr plus the errors and warnings it sent on the stream.
    pub stderr: String,
    pub elapsed_ms: u64,
    /// The last (best) solution: variable name to value, objective excluded.
    pub solution: Option<Map<String, Value>>,
    /// Every solution in the order produced; the last is `solution`.
    pub solutions: Vec<Map<String, Value>>,
    /// The objective of the last solution; `null` for satisfaction problems.
    pub objective: Option<Number>,
    /// Solver and flattening statistics, stringified; keys vary by solver.
    pub statistics: BTreeMap<String, String>,
    /// Present when a checker was given.
    pub checker: Option<CheckerReport>,
    pub diagnostic: Option<Diagnostic>,
    /// Only with the sandbox on: what it enforced for this run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<crate::exec::SandboxReport>,
}
