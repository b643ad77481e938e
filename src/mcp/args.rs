//! The argument shapes of the MCP tools, with the defaults and descriptions
//! clients see in each tool's input schema. Unknown fields are refused so a
//! misspelt argument (`timeout` for `timeout_ms`) cannot pass silently.

use std::sync::Arc;

use rmcp::model::JsonObject;
use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::diagnostics::ToolError;
use crate::jobs::PortfolioRequest;
use crate::minizinc::{DEFAULT_TIMEOUT_MS, PreflightRequest, SolveControls, SolveRequest, Sources};

/// Reads a tool's arguments; a malformed one is an `invalid_request` that
/// names the problem (rmcp's own extractor would answer without our
/// `Diagnostic:` line).
pub fn parse<T: DeserializeOwned>(arguments: JsonObject) -> Result<T, ToolError> {
    serde_json::from_value(serde_json::Value::Object(arguments))
        .map_err(|error| ToolError::invalid(format!("invalid arguments: {error}")))
}

/// The input schema published for `T`.
pub fn schema<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    rmcp::handler::server::common::schema_for_input::<T>().unwrap_or_else(|_| {
        Arc::new(JsonObject::from_iter([(
            "type".to_owned(),
            serde_json::Value::String("object".to_owned()),
        )]))
    })
}

fn default_timeout_ms() -> i64 {
    DEFAULT_TIMEOUT_MS
}

/// Arguments of `check_minizinc_model` and `inspect_minizinc_model`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelArgs {
    /// The complete MiniZinc model source. Must not be empty.
    pub model: String,
    /// Optional inline data (`.dzn` text), written to a private temp file and
    /// passed after the model. Use the same data you will solve with.
    #[serde(default)]
    pub data: Option<String>,
    /// Solver id (`org.gecode.gecode`), short name (`gecode`) or tag
    /// (`cp-sat`). Omitted: cp-sat when the runtime has it, else its default.
    #[serde(default)]
    pub solver: Option<String>,
    /// Budget in milliseconds; must be strictly positive.
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: i64,
}

impl From<ModelArgs> for PreflightRequest {
    fn from(args: ModelArgs) -> Self {
        PreflightRequest {
            sources: Sources::Inline {
                model: args.model,
                data: args.data,
                checker: None,
            },
            solver: args.solver,
            timeout_ms: args.timeout_ms,
        }
    }
}

/// Arguments of `check_minizinc_files` and `inspect_minizinc_files`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FilesArgs {
    /// Path of a local `.mzn` file; prefer an absolute path (a relative one
    /// resolves against the server's working directory). Relative includes
    /// resolve from the model's own directory.
    pub model_path: String,
    /// Optional path of a `.dzn` or `.json` data file (may be empty).
    #[serde(default)]
    pub data_path: Option<String>,
    /// Solver id, short name or tag; omitted: cp-sat when available, else
    /// the runtime's default.
    #[serde(default)]
    pub solver: Option<String>,
    /// Budget in milliseconds; must be strictly positive.
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: i64,
}

impl From<FilesArgs> for PreflightRequest {
    fn from(args: FilesArgs) -> Self {
        PreflightRequest {
            sources: Sources::Files {
                model_path: args.model_path,
                data_path: args.data_path,
                checker_path: None,
            },
            solver: args.solver,
            timeout_ms: args.timeout_ms,
        }
    }
}

/// Arguments of `solve_minizinc_model`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SolveModelArgs {
    /// The complete MiniZinc model: declarations, constraints, one solve
    /// item and (optionally) an output item. Must not be empty.
    pub model: String,
    /// Optional inline data (`.dzn` text).
    #[serde(default)]
    pub data: Option<String>,
    /// Optional MiniZinc solution checker source (`.mzc.mzn` text); each
    /// solution is checked and the verdicts come back in `checker`.
    #[serde(default)]
    pub checker: Option<String>,
    /// Solver id, short name or tag; omitted: cp-sat when available, else
    /// the runtime's default. The one used is echoed in the result.
    #[serde(default)]
    pub solver: Option<String>,
    /// Solving budget in milliseconds; must be strictly positive (0 is an
    /// error, not "no limit").
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: i64,
    /// `-f`: let the solver ignore the model's search annotations.
    #[serde(default)]
    pub free_search: bool,
    /// `-p <n>`: parallel threads, at least 1.
    #[serde(default)]
    pub parallel: Option<i64>,
    /// `-r <n>`: random seed.
    #[serde(default)]
    pub random_seed: Option<i64>,
    /// `-a`: all solutions (satisfaction) or the improving sequence
    /// (optimisation), each in `solutions`.
    #[serde(default)]
    pub all_solutions: bool,
    /// `-n <n>`: at most n solutions of a satisfaction problem, for solvers
    /// that declare `-n`. At least 1.
    #[serde(default)]
    pub num_solutions: Option<i64>,
}

impl From<SolveModelArgs> for SolveRequest {
    fn from(args: SolveModelArgs) -> Self {
        SolveRequest {
            sources: Sources::Inline {
                model: args.model,
                data: args.data,
                checker: args.checker,
            },
            solver: args.solver,
            timeout_ms: args.timeout_ms,
            controls: SolveControls {
                free_search: args.free_search,
                parallel: args.parallel,
                random_seed: args.random_seed,
                all_solutions: args.all_solutions,
                num_solutions: args.num_solutions,
            },
        }
    }
}

/// Arguments of `solve_minizinc_files`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SolveFilesArgs {
    /// Path of a local `.mzn` file; prefer an absolute path. MiniZinc runs
    /// in the model's directory, so relative includes resolve.
    pub model_path: String,
    /// Optional path of a `.dzn` or `.json` data file.
    #[serde(default)]
    pub data_path: Option<String>,
    /// Optional path of a solution checker ending in `.mzc` or `.mzc.mzn`.
    #[serde(default)]
    pub checker_path: Option<String>,
    /// Solver id, short name or tag; omitted: cp-sat when available, else
    /// the runtime's default.
    #[serde(default)]
    pub solver: Option<String>,
    /// Solving budget in milliseconds; must be strictly positive.
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: i64,
    /// `-f`: let the solver ignore the model's search annotations.
    #[serde(default)]
    pub free_search: bool,
    /// `-p <n>`: parallel threads, at least 1.
    #[serde(default)]
    pub parallel: Option<i64>,
    /// `-r <n>`: random seed.
    #[serde(default)]
    pub random_seed: Option<i64>,
    /// `-a`: all solutions or the improving sequence.
    #[serde(default)]
    pub all_solutions: bool,
    /// `-n <n>`: at most n solutions of a satisfaction problem. At least 1.
    #[serde(default)]
    pub num_solutions: Option<i64>,
}

impl From<SolveFilesArgs> for SolveRequest {
    fn from(args: SolveFilesArgs) -> Self {
        SolveRequest {
            sources: Sources::Files {
                model_path: args.model_path,
                data_path: args.data_path,
                checker_path: args.checker_path,
            },
            solver: args.solver,
            timeout_ms: args.timeout_ms,
            controls: SolveControls {
                free_search: args.free_search,
                parallel: args.parallel,
                random_seed: args.random_seed,
                all_solutions: args.all_solutions,
                num_solutions: args.num_solutions,
            },
        }
    }
}

/// Arguments of the get and cancel job tools.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JobIdArgs {
    /// The id a submit returned.
    pub job_id: String,
}

/// Arguments of the list job tools (none).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

fn one() -> i64 {
    1
}

/// Arguments of `submit_portfolio_job`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PortfolioArgs {
    /// Alternative formulations of the same instance (complete MiniZinc
    /// models sharing `data` and `checker`); not a batch of different problems.
    pub models: Vec<String>,
    /// Solvers to race (ids, short names or tags).
    pub solvers: Vec<String>,
    /// Optional inline `.dzn` data shared by every attempt.
    #[serde(default)]
    pub data: Option<String>,
    /// Optional MiniZinc checker shared by every attempt.
    #[serde(default)]
    pub checker: Option<String>,
    /// 1: each (model, solver) runs once unseeded; n > 1: with seeds 1..n
    /// (every solver must support -r).
    #[serde(default = "one")]
    pub seed_count: i64,
    /// Exact seeds instead of seed_count (non-empty, no repeats).
    #[serde(default)]
    pub seeds: Option<Vec<i64>>,
    /// Budget of each attempt in milliseconds; strictly positive.
    #[serde(default = "default_timeout_ms")]
    pub per_attempt_timeout_ms: i64,
    /// `-f` for every attempt.
    #[serde(default)]
    pub free_search: bool,
    /// `-p <n>` for every attempt, at least 1.
    #[serde(default)]
    pub parallel: Option<i64>,
    /// `-a` for every attempt.
    #[serde(default)]
    pub all_solutions: bool,
    /// `-n <n>` for every attempt, at least 1.
    #[serde(default)]
    pub num_solutions: Option<i64>,
}

impl From<PortfolioArgs> for PortfolioRequest {
    fn from(args: PortfolioArgs) -> Self {
        PortfolioRequest {
            models: args.models,
            solvers: args.solvers,
            data: args.data,
            checker: args.checker,
            seed_count: args.seed_count,
            seeds: args.seeds,
            per_attempt_timeout_ms: args.per_attempt_timeout_ms,
            free_search: args.free_search,
            parallel: args.parallel,
            all_solutions: args.all_solutions,
            num_solutions: args.num_solutions,
        }
    }
}
