//! The result shapes of the MiniZinc tools. Each is defined once: it is the
//! MCP output schema, the CLI's `--json` and, later, the saved JSON.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};

use crate::diagnostics::Diagnostic;
use crate::verdict::Verdict;

/// How a compile check (`minizinc -c`) or an inspection
/// (`--model-interface-only`) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PreflightStatus {
    /// MiniZinc finished cleanly (an inspection: and printed the interface).
    Ok,
    /// MiniZinc failed, or an inspection printed no interface.
    Error,
    /// The wall-clock cap or MiniZinc's own time limit fired.
    Timeout,
}

impl PreflightStatus {
    /// The status as it reads in the JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            PreflightStatus::Ok => "ok",
            PreflightStatus::Error => "error",
            PreflightStatus::Timeout => "timeout",
        }
    }
}

impl std::fmt::Display for PreflightStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a solve ended; when several apply, the first in declaration order
/// wins (see [`super::verdict::solve_status`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SolveStatus {
    /// A time limit stopped the solve (solutions found so far are kept).
    Timeout,
    /// MiniZinc or the solver failed.
    Error,
    /// The solver proved there is no solution.
    Unsatisfiable,
    /// The solver proved the objective unbounded.
    Unbounded,
    /// Unsatisfiable or unbounded; the solver cannot tell which.
    UnsatOrUnbounded,
    /// The solver finished without a solution or a verdict.
    Unknown,
    /// A solution, proven optimal (or every solution, when asked for all).
    Optimal,
    /// A solution, not proven optimal.
    Satisfied,
}

impl SolveStatus {
    /// The status as it reads in the JSON (`unsat_or_unbounded`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            SolveStatus::Timeout => "timeout",
            SolveStatus::Error => "error",
            SolveStatus::Unsatisfiable => "unsatisfiable",
            SolveStatus::Unbounded => "unbounded",
            SolveStatus::UnsatOrUnbounded => "unsat_or_unbounded",
            SolveStatus::Unknown => "unknown",
            SolveStatus::Optimal => "optimal",
            SolveStatus::Satisfied => "satisfied",
        }
    }

    /// A proof that there is no (bounded) solution: `unsatisfiable`,
    /// `unbounded` or `unsat_or_unbounded`.
    pub fn is_infeasibility_claim(self) -> bool {
        matches!(
            self,
            SolveStatus::Unsatisfiable | SolveStatus::Unbounded | SolveStatus::UnsatOrUnbounded
        )
    }
}

impl std::fmt::Display for SolveStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How the solution checker's run went; [`CheckerReport::verdict`] says
/// whether the answer passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CheckerStatus {
    /// The checker judged every solution.
    Completed,
    /// The checker rejected a solution.
    Violation,
    /// There was no solution to check.
    NoSolution,
    /// The solve or the checker failed.
    Error,
    /// The solve ran out of time before the checker could finish.
    Timeout,
}

impl CheckerStatus {
    /// The status as it reads in the JSON (`no_solution`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            CheckerStatus::Completed => "completed",
            CheckerStatus::Violation => "violation",
            CheckerStatus::NoSolution => "no_solution",
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

/// Outcome of a compile check (`minizinc -c`): the model flattens for the
/// solver, or why not. `ok` does not mean satisfiable.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CheckResult {
    /// `ok`, `error` or `timeout`.
    pub status: PreflightStatus,
    /// Canonical id of the solver the model was flattened for.
    pub solver: String,
    /// Combined output went over the 1 MiB cap; stdout/stderr are partial.
    pub truncated: bool,
    /// The runtime's raw stdout.
    pub stdout: String,
    /// The runtime's stderr plus any diagnostics it sent on the stream.
    pub stderr: String,
    /// Wall-clock time of the run, in milliseconds.
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
    /// A set (`set of int`, ...) rather than a single value.
    pub is_set: bool,
    /// An optional (`opt`) type, which may be absent.
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
    /// The model has an `output` item.
    pub has_output_item: bool,
    /// The global constraints the model uses, by name.
    pub globals: Vec<String>,
    /// The files the model includes, as MiniZinc reports them.
    pub included_files: Vec<String>,
}

/// Outcome of `--model-interface-only`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ModelInspectionResult {
    /// `ok` (the interface was extracted), `error` or `timeout`.
    pub status: PreflightStatus,
    /// Canonical id of the solver the model was type-checked for.
    pub solver: String,
    /// Present only when `status` is `ok`.
    pub interface: Option<ModelInterface>,
    /// Combined output went over the 1 MiB cap; stdout/stderr are partial.
    pub truncated: bool,
    /// The runtime's raw stdout (the interface message itself is parsed into
    /// `interface`).
    pub stdout: String,
    /// The runtime's stderr plus any diagnostics it sent on the stream.
    pub stderr: String,
    /// Wall-clock time of the run, in milliseconds.
    pub elapsed_ms: u64,
    /// `null` on a clean success.
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
    pub status: CheckerStatus,
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

impl CheckerReport {
    /// Why the solve is not verified, in one sentence (the verdict, then
    /// its reason); `None` when the checker accepted it.
    pub fn refusal(&self) -> Option<String> {
        (!self.verdict.is_accepted()).then(|| {
            format!(
                "the checker's verdict is {}: {}",
                self.verdict,
                self.reason.as_deref().unwrap_or("not accepted")
            )
        })
    }
}

/// Outcome of a solve.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SolveResult {
    /// `timeout`, `error`, `unsatisfiable`, `unbounded`,
    /// `unsat_or_unbounded`, `unknown`, `optimal` or `satisfied` (when
    /// several apply, the first in this order wins).
    pub status: SolveStatus,
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
    /// Wall-clock time of the run, in milliseconds.
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
    /// `null` when the solve is a clean `optimal` or `satisfied` (and a checker
    /// accepted it); otherwise what to act on.
    pub diagnostic: Option<Diagnostic>,
    /// Only with the sandbox on: what it enforced for this run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<crate::exec::SandboxReport>,
    /// On an optimisation: the objective of each solution as it came, at
    /// most [`MAX_TRAJECTORY`] points (first and last always kept); the
    /// last carries the solver's bound when it reports one. Absent when no
    /// solution had an objective.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trajectory: Vec<TrajectoryPoint>,
}

/// Most points a [`SolveResult::trajectory`] keeps.
pub const MAX_TRAJECTORY: usize = 100;

/// One solution on an optimisation's path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TrajectoryPoint {
    /// When the solver printed it, in milliseconds since MiniZinc started;
    /// `null` when every solution was asked for (`all_solutions`), whose
    /// stream carries no times.
    pub time_ms: Option<u64>,
    /// Its objective.
    pub objective: Number,
    /// The solver's bound on the objective (MiniZinc's `objectiveBound`
    /// statistic), on the last point, when the solver reports one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound: Option<Number>,
}

/// `points` thinned to at most `max` (at least 2), evenly over the path,
/// the first and the last kept.
pub fn thinned(points: Vec<TrajectoryPoint>, max: usize) -> Vec<TrajectoryPoint> {
    let max = max.max(2);
    if points.len() <= max {
        return points;
    }
    let last = points.len() - 1;
    let mut kept: Vec<usize> = (0..max).map(|i| i * last / (max - 1)).collect();
    kept.dedup();
    points
        .into_iter()
        .enumerate()
        .filter(|(index, _)| kept.binary_search(index).is_ok())
        .map(|(_, point)| point)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_path_is_thinned_evenly_keeping_both_ends() {
        let point = |n: u64| TrajectoryPoint {
            time_ms: Some(n),
            objective: Number::from(n),
            bound: None,
        };
        let path: Vec<TrajectoryPoint> = (0..1000).map(point).collect();
        let kept = thinned(path, 100);
        assert_eq!(kept.len(), 100);
        assert_eq!(kept.first(), Some(&point(0)));
        assert_eq!(kept.last(), Some(&point(999)));
        assert!(
            kept.windows(2)
                .all(|pair| pair[0].time_ms < pair[1].time_ms)
        );
        let short: Vec<TrajectoryPoint> = (0..5).map(point).collect();
        assert_eq!(thinned(short.clone(), 100), short);
        assert_eq!(thinned((0..7).map(point).collect(), 1).len(), 2);
    }

    fn text<T: Serialize>(value: &T) -> String {
        serde_json::to_string(value).unwrap()
    }

    #[test]
    fn statuses_serialise_in_snake_case() {
        assert_eq!(text(&PreflightStatus::Ok), "\"ok\"");
        assert_eq!(
            text(&SolveStatus::UnsatOrUnbounded),
            "\"unsat_or_unbounded\""
        );
        assert_eq!(text(&CheckerStatus::NoSolution), "\"no_solution\"");
        for status in [
            SolveStatus::Timeout,
            SolveStatus::Error,
            SolveStatus::Unsatisfiable,
            SolveStatus::Unbounded,
            SolveStatus::UnsatOrUnbounded,
            SolveStatus::Unknown,
            SolveStatus::Optimal,
            SolveStatus::Satisfied,
        ] {
            assert_eq!(text(&status), format!("\"{status}\""));
            let back: SolveStatus = serde_json::from_str(&text(&status)).unwrap();
            assert_eq!(back, status);
        }
        for status in [
            CheckerStatus::Completed,
            CheckerStatus::Violation,
            CheckerStatus::NoSolution,
            CheckerStatus::Error,
            CheckerStatus::Timeout,
        ] {
            assert_eq!(text(&status), format!("\"{status}\""));
        }
        for status in [
            PreflightStatus::Ok,
            PreflightStatus::Error,
            PreflightStatus::Timeout,
        ] {
            assert_eq!(text(&status), format!("\"{status}\""));
        }
    }
}
