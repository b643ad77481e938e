//! The arguments of the verified-save tools and `replay_artifact`.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::artifacts::{Expectation, SaveModelRequest, SavePythonRequest};
use crate::cpsat::CpsatPythonExperimentResult;
use crate::diagnostics::ToolError;
use crate::jobs::PortfolioSolveResult;
use crate::mcp::args::{
    IntoRequest, checked_budget, checked_seed, checker_budget, default_timeout_ms, problem_schema,
    problem_text,
};
use crate::minizinc::{MAX_PARALLEL, SolveControls};

/// A result passed back unchanged as provenance: the structured content
/// another tool returned (its shape is that tool's output schema, and it is
/// checked when the arguments are parsed), or null.
fn provenance_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "anyOf": [{"type": "object", "additionalProperties": true}, {"type": "null"}],
        "default": null
    })
}

/// Arguments of `save_verified_minizinc_model`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SaveModelArgs {
    /// The complete MiniZinc model to verify and save (as `model.mzn`).
    pub model: String,
    /// Absolute path of the directory to create (its parent must exist), or
    /// of a previous save to replace with `overwrite`.
    pub target_dir: String,
    /// Inline `.dzn` data (saved as `data.dzn`).
    #[serde(default)]
    pub data: Option<String>,
    /// MiniZinc checker; the save passes only on its `accepted` (saved as
    /// `checker.mzc.mzn`).
    #[serde(default)]
    pub checker: Option<String>,
    /// The user's problem statement, saved verbatim as `problem.md`.
    #[serde(default)]
    pub problem: Option<String>,
    /// Solver id, short name or tag (recorded in the manifest).
    #[serde(default)]
    pub solver: Option<String>,
    /// Budget of the verifying check and solve, in milliseconds.
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: i64,
    #[serde(default)]
    pub free_search: bool,
    #[serde(default)]
    #[schemars(range(min = 1, max = MAX_PARALLEL))]
    pub parallel: Option<i64>,
    #[serde(default)]
    pub random_seed: Option<i64>,
    #[serde(default)]
    pub all_solutions: bool,
    #[serde(default)]
    pub num_solutions: Option<i64>,
    /// Replace a previous solvergate save in target_dir.
    #[serde(default)]
    pub overwrite: bool,
    /// Provenance only: the PortfolioSolveResult this model won, naming this
    /// model, data, solver, seed and search controls; saved as
    /// experiment-log.json, never in place of the fresh verification.
    #[serde(default)]
    #[schemars(schema_with = "provenance_schema")]
    pub portfolio_result: Option<PortfolioSolveResult>,
}

impl IntoRequest for SaveModelArgs {
    type Request = SaveModelRequest;

    fn into_request(self) -> Result<SaveModelRequest, ToolError> {
        Ok(SaveModelRequest {
            model: self.model,
            data: self.data,
            checker: self.checker,
            problem: self.problem,
            solver: self.solver,
            timeout_ms: checked_budget("timeout_ms", self.timeout_ms)?,
            controls: SolveControls {
                free_search: self.free_search,
                parallel: self.parallel,
                random_seed: self.random_seed,
                all_solutions: self.all_solutions,
                num_solutions: self.num_solutions,
                solver_flags: Vec::new(),
                final_only: false,
            },
            target_dir: self.target_dir,
            overwrite: self.overwrite,
            portfolio_result: self.portfolio_result,
        })
    }
}

/// Arguments of `save_verified_cpsat_python`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SavePythonArgs {
    /// The complete CP-SAT script; it re-runs inline in a fresh directory.
    pub source: String,
    /// Absolute path of the directory to create or replace; required unless
    /// verify_only.
    #[serde(default)]
    pub target_dir: Option<String>,
    #[serde(default = "default_timeout_ms")]
    pub script_timeout_ms: i64,
    #[serde(default, deserialize_with = "problem_text")]
    #[schemars(schema_with = "problem_schema")]
    pub problem: Option<String>,
    /// Quality gate, not a proof of optimality: the objective must be at least
    /// (maximize) or at most (minimize) the threshold.
    #[serde(default)]
    pub expectation: Option<Expectation>,
    /// Inline Python checker; the save passes only on `accepted` with no
    /// errors.
    #[serde(default)]
    pub checker: Option<String>,
    #[serde(default)]
    pub checker_timeout_ms: Option<i64>,
    /// Replace a previous solvergate save in target_dir.
    #[serde(default)]
    pub overwrite: bool,
    /// Run every gate and write nothing (target_dir and overwrite ignored).
    #[serde(default)]
    pub verify_only: bool,
    /// Replay seed, passed as SOLVERGATE_CPSAT_SEED (signed 32-bit).
    #[serde(default)]
    pub seed: Option<i64>,
    /// Replay config, written to a JSON file named by SOLVERGATE_CPSAT_CONFIG.
    #[serde(default)]
    pub config: Option<serde_json::Map<String, serde_json::Value>>,
    /// Provenance only: a CpsatPythonExperimentResult with an accepted inline
    /// attempt of this source, seed and config.
    #[serde(default)]
    #[schemars(schema_with = "provenance_schema")]
    pub experiment_result: Option<CpsatPythonExperimentResult>,
}

impl IntoRequest for SavePythonArgs {
    type Request = SavePythonRequest;

    fn into_request(self) -> Result<SavePythonRequest, ToolError> {
        let seed = checked_seed(self.seed)?;
        Ok(SavePythonRequest {
            source: self.source,
            target_dir: self.target_dir,
            script_timeout_ms: checked_budget("script_timeout_ms", self.script_timeout_ms)?,
            problem: self.problem,
            expectation: self.expectation,
            checker: self.checker,
            checker_timeout_ms: checker_budget(self.checker_timeout_ms)?,
            overwrite: self.overwrite,
            verify_only: self.verify_only,
            seed,
            config: self.config,
            experiment_result: self.experiment_result,
        })
    }
}

/// Arguments of `replay_artifact`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplayArgs {
    /// Absolute path of a directory a save wrote.
    pub target_dir: String,
}

impl IntoRequest for ReplayArgs {
    type Request = String;

    fn into_request(self) -> Result<String, ToolError> {
        Ok(self.target_dir)
    }
}
