//! The arguments of the MiniZinc tools (check, inspect and solve, inline
//! and on disk), with the defaults and descriptions of their input schemas.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::diagnostics::ToolError;
use crate::exec::limits::LimitCaps;
use crate::mcp::args::{CallLimits, IntoRequest, checked_budget, default_timeout_ms};
use crate::minizinc::{MAX_PARALLEL, PreflightRequest, SolveControls, SolveRequest, Sources};

/// Arguments of `check_minizinc_model` and `inspect_minizinc_model`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelArgs {
    /// The complete MiniZinc model source.
    pub model: String,
    /// Inline `.dzn` data: the same data you will solve with.
    #[serde(default)]
    pub data: Option<String>,
    /// Solver id, short name (`gecode`) or tag (`cp-sat`); omitted: cp-sat
    /// when available, else the runtime's default.
    #[serde(default)]
    pub solver: Option<String>,
    /// Budget in milliseconds, above 0.
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: i64,
    #[serde(default)]
    pub limits: CallLimits,
}

impl IntoRequest for ModelArgs {
    type Request = PreflightRequest;

    fn limits(&self) -> LimitCaps {
        self.limits.caps()
    }

    fn into_request(self) -> Result<PreflightRequest, ToolError> {
        Ok(PreflightRequest {
            sources: Sources::Inline {
                model: self.model,
                data: self.data,
                checker: None,
            },
            solver: self.solver,
            timeout_ms: checked_budget("timeout_ms", self.timeout_ms)?,
        })
    }
}

/// Arguments of `check_minizinc_files` and `inspect_minizinc_files`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FilesArgs {
    /// Path of a local `.mzn` file, preferably absolute; it runs in its
    /// directory, so relative includes resolve.
    pub model_path: String,
    /// Path of a `.dzn` or `.json` data file (may be empty).
    #[serde(default)]
    pub data_path: Option<String>,
    /// Solver id, short name (`gecode`) or tag (`cp-sat`); omitted: cp-sat
    /// when available, else the runtime's default.
    #[serde(default)]
    pub solver: Option<String>,
    /// Budget in milliseconds, above 0.
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: i64,
    #[serde(default)]
    pub limits: CallLimits,
}

impl IntoRequest for FilesArgs {
    type Request = PreflightRequest;

    fn limits(&self) -> LimitCaps {
        self.limits.caps()
    }

    fn into_request(self) -> Result<PreflightRequest, ToolError> {
        Ok(PreflightRequest {
            sources: Sources::Files {
                model_path: self.model_path,
                data_path: self.data_path,
                checker_path: None,
            },
            solver: self.solver,
            timeout_ms: checked_budget("timeout_ms", self.timeout_ms)?,
        })
    }
}

/// Arguments of `solve_minizinc_model`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SolveModelArgs {
    /// The complete MiniZinc model: declarations, constraints, one solve item
    /// and optionally an output item.
    pub model: String,
    /// Inline data (`.dzn` text).
    #[serde(default)]
    pub data: Option<String>,
    /// Checker source (`.mzc.mzn` text) run on every solution; it prints
    /// CORRECT or INCORRECT: why.
    #[serde(default)]
    pub checker: Option<String>,
    /// Solver id, short name or tag; omitted: cp-sat when available, else
    /// the runtime's default.
    #[serde(default)]
    pub solver: Option<String>,
    /// Solving budget in milliseconds, above 0 (0 is an error, not "no limit").
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: i64,
    /// `-f`: let the solver ignore the model's search annotations.
    #[serde(default)]
    pub free_search: bool,
    /// `-p <n>`: parallel threads.
    #[serde(default)]
    #[schemars(range(min = 1, max = MAX_PARALLEL))]
    pub parallel: Option<i64>,
    /// `-r <n>`: random seed.
    #[serde(default)]
    pub random_seed: Option<i64>,
    /// `-a`: all solutions (satisfaction) or the improving sequence
    /// (optimisation), each in `solutions`.
    #[serde(default)]
    pub all_solutions: bool,
    /// `-n <n>`: at most n (at least 1) solutions of a satisfaction problem,
    /// for solvers that declare `-n`.
    #[serde(default)]
    pub num_solutions: Option<i64>,
    #[serde(default)]
    pub limits: CallLimits,
}

impl IntoRequest for SolveModelArgs {
    type Request = SolveRequest;

    fn limits(&self) -> LimitCaps {
        self.limits.caps()
    }

    fn into_request(self) -> Result<SolveRequest, ToolError> {
        Ok(SolveRequest {
            sources: Sources::Inline {
                model: self.model,
                data: self.data,
                checker: self.checker,
            },
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
        })
    }
}

/// Arguments of `solve_minizinc_files`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SolveFilesArgs {
    /// Path of a local `.mzn` file, preferably absolute; it runs in its
    /// directory, so relative includes resolve.
    pub model_path: String,
    /// Path of a `.dzn` or `.json` data file.
    #[serde(default)]
    pub data_path: Option<String>,
    /// Path of a solution checker ending in `.mzc` or `.mzc.mzn` (see
    /// solve_minizinc_model's `checker`).
    #[serde(default)]
    pub checker_path: Option<String>,
    /// Solver id, short name or tag; omitted: cp-sat when available, else
    /// the runtime's default.
    #[serde(default)]
    pub solver: Option<String>,
    /// Solving budget in milliseconds, above 0 (0 is an error, not "no limit").
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: i64,
    /// `-f`: let the solver ignore the model's search annotations.
    #[serde(default)]
    pub free_search: bool,
    /// `-p <n>`: parallel threads.
    #[serde(default)]
    #[schemars(range(min = 1, max = MAX_PARALLEL))]
    pub parallel: Option<i64>,
    /// `-r <n>`: random seed.
    #[serde(default)]
    pub random_seed: Option<i64>,
    /// `-a`: all solutions (satisfaction) or the improving sequence
    /// (optimisation), each in `solutions`.
    #[serde(default)]
    pub all_solutions: bool,
    /// `-n <n>`: at most n (at least 1) solutions of a satisfaction problem,
    /// for solvers that declare `-n`.
    #[serde(default)]
    pub num_solutions: Option<i64>,
    #[serde(default)]
    pub limits: CallLimits,
}

impl IntoRequest for SolveFilesArgs {
    type Request = SolveRequest;

    fn limits(&self) -> LimitCaps {
        self.limits.caps()
    }

    fn into_request(self) -> Result<SolveRequest, ToolError> {
        Ok(SolveRequest {
            sources: Sources::Files {
                model_path: self.model_path,
                data_path: self.data_path,
                checker_path: self.checker_path,
            },
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
        })
    }
}
