//! The argument shapes of the MCP tools, with the defaults and descriptions
//! clients see in each tool's input schema. Unknown fields are refused so a
//! misspelt argument (`timeout` for `timeout_ms`) cannot pass silently.

use std::sync::Arc;

use rmcp::model::JsonObject;
use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::artifacts::{Expectation, SaveModelRequest, SavePlanRequest, SavePythonRequest};
use crate::cpsat::{
    CheckedRequest, CheckerSource, CpsatPythonExperimentResult, ScriptRequest, ScriptSource,
    canonical_problem, validate_seed,
};
use crate::diagnostics::ToolError;
use crate::jobs::{
    CpsatJobRequest, MAX_SEEDS, PortfolioRequest, PortfolioSolveResult, WinnerPolicy,
};
use crate::minizinc::{
    DEFAULT_TIMEOUT_MS, MAX_PARALLEL, PreflightRequest, SolveControls, SolveRequest, Sources,
};
use crate::planner::LoadProblem;
use crate::unsat::UnsatCoreRequest;

/// Reads a tool's arguments; a malformed one is an `invalid_request` that
/// names the problem (rmcp's own extractor would answer without our
/// `Diagnostic:` line).
pub fn parse<T: DeserializeOwned>(arguments: JsonObject) -> Result<T, ToolError> {
    serde_json::from_value(serde_json::Value::Object(arguments))
        .map_err(|error| ToolError::invalid(format!("invalid arguments: {error}")))
}

/// Arguments that become a service request, or an argument error.
pub trait IntoRequest {
    type Request;
    fn into_request(self) -> Result<Self::Request, ToolError>;
}

impl IntoRequest for JobIdArgs {
    type Request = String;

    fn into_request(self) -> Result<String, ToolError> {
        Ok(self.job_id)
    }
}

impl IntoRequest for NoArgs {
    type Request = ();

    fn into_request(self) -> Result<(), ToolError> {
        Ok(())
    }
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
    /// Optional inline `.dzn` data: the same data you will solve with.
    #[serde(default)]
    pub data: Option<String>,
    /// Solver id, short name (`gecode`) or tag (`cp-sat`); omitted: cp-sat
    /// when available, else the runtime's default.
    #[serde(default)]
    pub solver: Option<String>,
    /// Budget in milliseconds; must be strictly positive.
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: i64,
}

impl IntoRequest for ModelArgs {
    type Request = PreflightRequest;

    fn into_request(self) -> Result<PreflightRequest, ToolError> {
        Ok(PreflightRequest {
            sources: Sources::Inline {
                model: self.model,
                data: self.data,
                checker: None,
            },
            solver: self.solver,
            timeout_ms: self.timeout_ms,
        })
    }
}

/// Arguments of `check_minizinc_files` and `inspect_minizinc_files`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FilesArgs {
    /// Path of a local `.mzn` file, preferably absolute; relative includes
    /// resolve from its directory.
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

impl IntoRequest for FilesArgs {
    type Request = PreflightRequest;

    fn into_request(self) -> Result<PreflightRequest, ToolError> {
        Ok(PreflightRequest {
            sources: Sources::Files {
                model_path: self.model_path,
                data_path: self.data_path,
                checker_path: None,
            },
            solver: self.solver,
            timeout_ms: self.timeout_ms,
        })
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
    /// Optional checker source (`.mzc.mzn` text) run on every solution.
    #[serde(default)]
    pub checker: Option<String>,
    /// Solver id, short name or tag; omitted: cp-sat when available, else
    /// the runtime's default.
    #[serde(default)]
    pub solver: Option<String>,
    /// Solving budget in milliseconds; must be strictly positive (0 is an
    /// error, not "no limit").
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: i64,
    /// `-f`: let the solver ignore the model's search annotations.
    #[serde(default)]
    pub free_search: bool,
    /// `-p <n>`: parallel threads, 1 to 256.
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
    /// `-n <n>`: at most n solutions of a satisfaction problem, for solvers
    /// that declare `-n`. At least 1.
    #[serde(default)]
    pub num_solutions: Option<i64>,
}

impl IntoRequest for SolveModelArgs {
    type Request = SolveRequest;

    fn into_request(self) -> Result<SolveRequest, ToolError> {
        Ok(SolveRequest {
            sources: Sources::Inline {
                model: self.model,
                data: self.data,
                checker: self.checker,
            },
            solver: self.solver,
            timeout_ms: self.timeout_ms,
            controls: SolveControls {
                free_search: self.free_search,
                parallel: self.parallel,
                random_seed: self.random_seed,
                all_solutions: self.all_solutions,
                num_solutions: self.num_solutions,
            },
        })
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
    /// `-p <n>`: parallel threads, 1 to 256.
    #[serde(default)]
    #[schemars(range(min = 1, max = MAX_PARALLEL))]
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

impl IntoRequest for SolveFilesArgs {
    type Request = SolveRequest;

    fn into_request(self) -> Result<SolveRequest, ToolError> {
        Ok(SolveRequest {
            sources: Sources::Files {
                model_path: self.model_path,
                data_path: self.data_path,
                checker_path: self.checker_path,
            },
            solver: self.solver,
            timeout_ms: self.timeout_ms,
            controls: SolveControls {
                free_search: self.free_search,
                parallel: self.parallel,
                random_seed: self.random_seed,
                all_solutions: self.all_solutions,
                num_solutions: self.num_solutions,
            },
        })
    }
}

/// Arguments of `find_unsat_core`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UnsatModelArgs {
    /// The complete MiniZinc model that proved unsatisfiable. Must not be
    /// empty.
    pub model: String,
    /// Optional inline data (`.dzn` text): the same data the unsatisfiable
    /// solve used.
    #[serde(default)]
    pub data: Option<String>,
    /// Solver for solvergate's deletion search (id, short name or tag).
    /// Omitted: findMUS when the runtime has it, else the solve tools'
    /// default. Naming a solver runs the deletion search with it; naming
    /// findMUS itself (`org.minizinc.findmus`) runs findMUS.
    #[serde(default)]
    pub solver: Option<String>,
    /// Budget of the whole search in milliseconds, shared by all its solver
    /// runs; must be strictly positive.
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: i64,
}

impl IntoRequest for UnsatModelArgs {
    type Request = UnsatCoreRequest;

    fn into_request(self) -> Result<UnsatCoreRequest, ToolError> {
        Ok(UnsatCoreRequest {
            sources: Sources::Inline {
                model: self.model,
                data: self.data,
                checker: None,
            },
            solver: self.solver,
            timeout_ms: self.timeout_ms,
        })
    }
}

/// Arguments of `find_unsat_core_files`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UnsatFilesArgs {
    /// Path of a local `.mzn` file; prefer an absolute path. Runs in the
    /// model's directory so relative includes resolve.
    pub model_path: String,
    /// Optional path of a `.dzn` or `.json` data file.
    #[serde(default)]
    pub data_path: Option<String>,
    /// Solver for the deletion search; omitted: findMUS when the runtime
    /// has it, else the solve tools' default.
    #[serde(default)]
    pub solver: Option<String>,
    /// Budget of the whole search in milliseconds; strictly positive.
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: i64,
}

impl IntoRequest for UnsatFilesArgs {
    type Request = UnsatCoreRequest;

    fn into_request(self) -> Result<UnsatCoreRequest, ToolError> {
        Ok(UnsatCoreRequest {
            sources: Sources::Files {
                model_path: self.model_path,
                data_path: self.data_path,
                checker_path: None,
            },
            solver: self.solver,
            timeout_ms: self.timeout_ms,
        })
    }
}

/// Arguments of the get and cancel job tools.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JobIdArgs {
    /// The id a submit returned.
    pub job_id: String,
}

/// Arguments of the tools that take none (the list tools, `check_runtime`,
/// `list_available_solvers`): anything given is refused, as every other tool
/// refuses arguments it does not know.
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
    /// (every solver must support -r). At most 1000.
    #[serde(default = "one")]
    #[schemars(range(min = 1, max = MAX_SEEDS))]
    pub seed_count: i64,
    /// Exact seeds instead of seed_count (1 to 1000 values, no repeats).
    #[serde(default)]
    #[schemars(length(min = 1, max = MAX_SEEDS))]
    pub seeds: Option<Vec<i64>>,
    /// Budget of each attempt in milliseconds; strictly positive.
    #[serde(default = "default_timeout_ms")]
    pub per_attempt_timeout_ms: i64,
    /// `-f` for every attempt.
    #[serde(default)]
    pub free_search: bool,
    /// `-p <n>` for every attempt, 1 to 256.
    #[serde(default)]
    #[schemars(range(min = 1, max = MAX_PARALLEL))]
    pub parallel: Option<i64>,
    /// `-a` for every attempt.
    #[serde(default)]
    pub all_solutions: bool,
    /// `-n <n>` for every attempt, at least 1.
    #[serde(default)]
    pub num_solutions: Option<i64>,
    /// How the race picks its winner (see the tool description).
    #[serde(default)]
    pub winner_policy: WinnerPolicy,
}

impl IntoRequest for PortfolioArgs {
    type Request = PortfolioRequest;

    fn into_request(self) -> Result<PortfolioRequest, ToolError> {
        Ok(PortfolioRequest {
            models: self.models,
            solvers: self.solvers,
            data: self.data,
            checker: self.checker,
            seed_count: self.seed_count,
            seeds: self.seeds,
            per_attempt_timeout_ms: self.per_attempt_timeout_ms,
            free_search: self.free_search,
            parallel: self.parallel,
            all_solutions: self.all_solutions,
            num_solutions: self.num_solutions,
            winner_policy: self.winner_policy,
        })
    }
}

/// Reads `problem`: text as it is, a JSON object or array as its canonical
/// text, anything else refused with what was wrong.
fn problem_text<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<String>, D::Error> {
    use serde_json::Value;
    let value = Value::deserialize(deserializer)?;
    let kind = match &value {
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        _ => return Ok(canonical_problem(Some(&value))),
    };
    Err(serde::de::Error::custom(format!(
        "problem must be text, a JSON object or a JSON array (or null), got {kind}"
    )))
}

/// A result passed back unchanged as provenance: the structured content
/// another tool returned (its shape is that tool's output schema, and it is
/// checked when the arguments are parsed), or null.
fn provenance_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "anyOf": [{"type": "object", "additionalProperties": true}, {"type": "null"}],
        "default": null
    })
}

/// The schema `problem_text` accepts, stated exactly.
fn problem_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "description": "The instance the checker validates against: text, or a JSON object or array (sent as its canonical JSON text).",
        "type": ["string", "object", "array", "null"],
        "default": null
    })
}

/// Arguments of `run_cpsat_python`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunCpsatArgs {
    /// The complete OR-Tools CP-SAT Python script, ending with the JSON line
    /// the tool description states (optionally with "best_objective_bound";
    /// earlier lines of the same shape are what a timeout recovers).
    pub source: String,
    /// Wall-clock budget of the child in milliseconds; strictly positive.
    #[serde(default = "default_timeout_ms")]
    pub script_timeout_ms: i64,
    /// The script's sys.argv[1:] (no NUL, 32 KiB in all), as for the file tool.
    #[serde(default)]
    pub args: Option<Vec<String>>,
    /// Replay seed, passed as SOLVERGATE_CPSAT_SEED (signed 32-bit).
    #[serde(default)]
    pub seed: Option<i64>,
    /// Replay config, written to a JSON file named by SOLVERGATE_CPSAT_CONFIG.
    #[serde(default)]
    pub config: Option<serde_json::Map<String, serde_json::Value>>,
}

/// Arguments of `run_cpsat_python_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunCpsatFileArgs {
    /// Path of a local .py script (prefer absolute); it runs in its own
    /// directory, so relative opens and imports resolve.
    pub script_path: String,
    #[serde(default = "default_timeout_ms")]
    pub script_timeout_ms: i64,
    /// The script's sys.argv[1:] (no NUL, 32 KiB in all).
    #[serde(default)]
    pub args: Option<Vec<String>>,
    /// Replay seed, passed as SOLVERGATE_CPSAT_SEED (signed 32-bit).
    #[serde(default)]
    pub seed: Option<i64>,
    /// Replay config, written to a JSON file named by SOLVERGATE_CPSAT_CONFIG.
    #[serde(default)]
    pub config: Option<serde_json::Map<String, serde_json::Value>>,
}

/// Arguments of `run_cpsat_python_file_checked`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunCpsatFileCheckedArgs {
    pub script_path: String,
    /// Path of a local Python checker; it runs in its own directory and gets
    /// a payload file (problem, solution, objective, solver_status) as argv[1].
    pub checker_path: String,
    #[serde(default = "default_timeout_ms")]
    pub script_timeout_ms: i64,
    #[serde(default)]
    pub args: Option<Vec<String>>,
    /// The instance the checker validates against: text, or any JSON value
    /// (sent as its canonical text).
    #[serde(default, deserialize_with = "problem_text")]
    #[schemars(schema_with = "problem_schema")]
    pub problem: Option<String>,
    /// Checker budget; defaults to script_timeout_ms (with test_checker, to
    /// the largest that fits the 120 s ceiling, at least 2000 ms).
    #[serde(default)]
    pub checker_timeout_ms: Option<i64>,
    /// After an accepted verdict, grade four mutated solutions with the
    /// same checker to see whether it rejects anything.
    #[serde(default)]
    pub test_checker: bool,
    #[serde(default)]
    pub seed: Option<i64>,
    #[serde(default)]
    pub config: Option<serde_json::Map<String, serde_json::Value>>,
}

/// Arguments of `submit_cpsat_python_job`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SubmitCpsatArgs {
    /// The complete CP-SAT Python script (same envelope contract).
    pub source: String,
    #[serde(default = "default_timeout_ms")]
    pub script_timeout_ms: i64,
    #[serde(default, deserialize_with = "problem_text")]
    #[schemars(schema_with = "problem_schema")]
    pub problem: Option<String>,
    /// Optional inline Python checker run after the script.
    #[serde(default)]
    pub checker: Option<String>,
    #[serde(default)]
    pub checker_timeout_ms: Option<i64>,
}

/// Arguments of `submit_cpsat_python_file_job`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SubmitCpsatFileArgs {
    pub script_path: String,
    #[serde(default = "default_timeout_ms")]
    pub script_timeout_ms: i64,
    #[serde(default)]
    pub args: Option<Vec<String>>,
    #[serde(default, deserialize_with = "problem_text")]
    #[schemars(schema_with = "problem_schema")]
    pub problem: Option<String>,
    /// Inline checker source (exclusive with checker_path).
    #[serde(default)]
    pub checker: Option<String>,
    /// On-disk checker run in its own directory (exclusive with checker).
    #[serde(default)]
    pub checker_path: Option<String>,
    #[serde(default)]
    pub checker_timeout_ms: Option<i64>,
}

/// The seed, once CP-SAT could take it.
fn checked_seed(seed: Option<i64>) -> Result<Option<i64>, ToolError> {
    validate_seed(seed).map(|()| seed)
}

impl IntoRequest for RunCpsatArgs {
    type Request = ScriptRequest;

    fn into_request(self) -> Result<ScriptRequest, ToolError> {
        Ok(ScriptRequest {
            source: ScriptSource::Inline(self.source),
            args: self.args.unwrap_or_default(),
            seed: checked_seed(self.seed)?,
            config: self.config,
            timeout_ms: self.script_timeout_ms,
        })
    }
}

impl IntoRequest for RunCpsatFileArgs {
    type Request = ScriptRequest;

    fn into_request(self) -> Result<ScriptRequest, ToolError> {
        Ok(ScriptRequest {
            source: ScriptSource::File(self.script_path),
            args: self.args.unwrap_or_default(),
            seed: checked_seed(self.seed)?,
            config: self.config,
            timeout_ms: self.script_timeout_ms,
        })
    }
}

impl IntoRequest for RunCpsatFileCheckedArgs {
    type Request = CheckedRequest;

    fn into_request(self) -> Result<CheckedRequest, ToolError> {
        Ok(CheckedRequest {
            script: ScriptRequest {
                source: ScriptSource::File(self.script_path),
                args: self.args.unwrap_or_default(),
                seed: checked_seed(self.seed)?,
                config: self.config,
                timeout_ms: self.script_timeout_ms,
            },
            checker: CheckerSource::File(self.checker_path),
            problem: self.problem,
            checker_timeout_ms: self.checker_timeout_ms,
            test_checker: self.test_checker,
        })
    }
}

impl IntoRequest for SubmitCpsatArgs {
    type Request = CpsatJobRequest;

    fn into_request(self) -> Result<CpsatJobRequest, ToolError> {
        Ok(CpsatJobRequest {
            script: ScriptRequest {
                source: ScriptSource::Inline(self.source),
                args: Vec::new(),
                seed: None,
                config: None,
                timeout_ms: self.script_timeout_ms,
            },
            checker: self.checker.map(CheckerSource::Inline),
            problem: self.problem,
            checker_timeout_ms: self.checker_timeout_ms,
        })
    }
}

impl IntoRequest for SubmitCpsatFileArgs {
    type Request = CpsatJobRequest;

    fn into_request(self) -> Result<CpsatJobRequest, ToolError> {
        let checker = match (self.checker, self.checker_path) {
            (Some(_), Some(_)) => {
                return Err(ToolError::invalid("pass checker or checker_path, not both"));
            }
            (Some(source), None) => Some(CheckerSource::Inline(source)),
            (None, Some(path)) => Some(CheckerSource::File(path)),
            (None, None) => None,
        };
        Ok(CpsatJobRequest {
            script: ScriptRequest {
                source: ScriptSource::File(self.script_path),
                args: self.args.unwrap_or_default(),
                seed: None,
                config: None,
                timeout_ms: self.script_timeout_ms,
            },
            checker,
            problem: self.problem,
            checker_timeout_ms: self.checker_timeout_ms,
        })
    }
}

/// One attempt of `run_cpsat_python_experiment`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AttemptArgs {
    /// Unique name; defaults to `attempt-<index>`.
    #[serde(default)]
    pub name: Option<String>,
    /// A complete inline script (exactly one of source / script_path).
    #[serde(default)]
    pub source: Option<String>,
    /// A local script run in its own directory (exactly one of source / script_path).
    #[serde(default)]
    pub script_path: Option<String>,
    /// sys.argv[1:] of a script_path attempt.
    #[serde(default)]
    pub args: Option<Vec<String>>,
    /// Passed as SOLVERGATE_CPSAT_SEED.
    #[serde(default)]
    pub seed: Option<i64>,
    /// Written to a file named by SOLVERGATE_CPSAT_CONFIG (e.g. num_workers).
    #[serde(default)]
    pub config: Option<serde_json::Map<String, serde_json::Value>>,
    /// This attempt's budget; defaults to default_script_timeout_ms.
    #[serde(default)]
    pub script_timeout_ms: Option<i64>,
}

fn yes() -> bool {
    true
}

/// Arguments of `run_cpsat_python_experiment`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExperimentArgs {
    /// Script variants of the same problem, instance and objective.
    pub attempts: Vec<AttemptArgs>,
    /// `maximize` or `minimize` to rank by objective; omit for feasibility.
    #[serde(default)]
    pub objective_sense: Option<String>,
    #[serde(default = "default_timeout_ms")]
    pub default_script_timeout_ms: i64,
    /// One inline Python checker grading every base-accepted attempt.
    #[serde(default)]
    pub checker: Option<String>,
    #[serde(default)]
    pub checker_timeout_ms: Option<i64>,
    #[serde(default, deserialize_with = "problem_text")]
    #[schemars(schema_with = "problem_schema")]
    pub problem: Option<String>,
    /// Attempts run at once (1 = serial), at most min(CPUs, 4).
    #[serde(default = "one")]
    pub max_parallel_attempts: i64,
    /// Keep the winner's raw stdout in the result.
    #[serde(default = "yes")]
    pub include_winner_stdout: bool,
}

impl IntoRequest for ExperimentArgs {
    type Request = crate::cpsat::ExperimentRequest;

    fn into_request(self) -> Result<crate::cpsat::ExperimentRequest, ToolError> {
        Ok(crate::cpsat::ExperimentRequest {
            attempts: self
                .attempts
                .into_iter()
                .map(|attempt| crate::cpsat::AttemptRequest {
                    name: attempt.name,
                    source: attempt.source,
                    script_path: attempt.script_path,
                    args: attempt.args,
                    seed: attempt.seed,
                    config: attempt.config,
                    script_timeout_ms: attempt.script_timeout_ms,
                })
                .collect(),
            objective_sense: self.objective_sense,
            default_script_timeout_ms: self.default_script_timeout_ms,
            checker: self.checker,
            checker_timeout_ms: self.checker_timeout_ms,
            problem: self.problem,
            max_parallel_attempts: self.max_parallel_attempts,
            include_winner_stdout: self.include_winner_stdout,
        })
    }
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
    /// Optional inline `.dzn` data (saved as `data.dzn`).
    #[serde(default)]
    pub data: Option<String>,
    /// Optional MiniZinc checker; the save passes only on its `accepted`
    /// (saved as `checker.mzc.mzn`).
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
    /// Provenance only: the PortfolioSolveResult this model won. It must
    /// name this model, data, solver, seed and search controls; it is saved
    /// as experiment-log.json and never replaces the fresh verification.
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
            timeout_ms: self.timeout_ms,
            controls: SolveControls {
                free_search: self.free_search,
                parallel: self.parallel,
                random_seed: self.random_seed,
                all_solutions: self.all_solutions,
                num_solutions: self.num_solutions,
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
    /// The complete CP-SAT script (saved as `model.py`); it re-runs inline
    /// in a fresh directory.
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
    /// Optional quality gate: the objective must be at least (maximize) or
    /// at most (minimize) the threshold. Not a proof of optimality.
    #[serde(default)]
    pub expectation: Option<Expectation>,
    /// Optional inline Python checker; the save passes only on `accepted`
    /// with no errors.
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
    /// Replay seed, passed as SOLVERGATE_CPSAT_SEED and recorded.
    #[serde(default)]
    pub seed: Option<i64>,
    /// Replay config, passed through SOLVERGATE_CPSAT_CONFIG and saved as
    /// replay-config.json.
    #[serde(default)]
    pub config: Option<serde_json::Map<String, serde_json::Value>>,
    /// Provenance only: a CpsatPythonExperimentResult with an accepted
    /// inline attempt of this source, seed and config; saved as
    /// experiment-log.json.
    #[serde(default)]
    #[schemars(schema_with = "provenance_schema")]
    pub experiment_result: Option<CpsatPythonExperimentResult>,
}

impl IntoRequest for SavePythonArgs {
    type Request = SavePythonRequest;

    fn into_request(self) -> Result<SavePythonRequest, ToolError> {
        Ok(SavePythonRequest {
            source: self.source,
            target_dir: self.target_dir,
            script_timeout_ms: self.script_timeout_ms,
            problem: self.problem,
            expectation: self.expectation,
            checker: self.checker,
            checker_timeout_ms: self.checker_timeout_ms,
            overwrite: self.overwrite,
            verify_only: self.verify_only,
            seed: checked_seed(self.seed)?,
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

/// Arguments of `plan_load`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanLoadArgs {
    /// The cohort: orders (id, pallets with length/width/height cm, weight
    /// kg, count, stackable; deadline_days), rates (air, lcl, fcl with
    /// container types), optional delays per mode and policy. `solvergate
    /// plan --example` prints a complete one.
    pub problem: LoadProblem,
}

impl IntoRequest for PlanLoadArgs {
    type Request = LoadProblem;

    fn into_request(self) -> Result<LoadProblem, ToolError> {
        self.problem.validate()?;
        Ok(self.problem)
    }
}

/// Arguments of `explain_load_plan`: the id, and nothing else.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExplainArgs {
    /// A result_id from plan_load.
    pub result_id: String,
}

impl IntoRequest for ExplainArgs {
    type Request = String;

    fn into_request(self) -> Result<String, ToolError> {
        Ok(self.result_id)
    }
}

/// Arguments of `verify_narration`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VerifyNarrationArgs {
    /// The text to check, in any words.
    pub narration: String,
    /// The result_id the narration speaks about.
    pub result_id: String,
}

impl IntoRequest for VerifyNarrationArgs {
    type Request = (String, String);

    fn into_request(self) -> Result<(String, String), ToolError> {
        Ok((self.narration, self.result_id))
    }
}

/// Arguments of `save_load_plan`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SavePlanArgs {
    /// The cohort, as for plan_load.
    pub problem: LoadProblem,
    /// Absolute path of the directory to create or replace.
    pub target_dir: String,
    /// Replace a previous solvergate save in target_dir.
    #[serde(default)]
    pub overwrite: bool,
}

impl IntoRequest for SavePlanArgs {
    type Request = SavePlanRequest;

    fn into_request(self) -> Result<SavePlanRequest, ToolError> {
        self.problem.validate()?;
        Ok(SavePlanRequest {
            problem: self.problem,
            target_dir: self.target_dir,
            overwrite: self.overwrite,
        })
    }
}

fn default_has_header() -> bool {
    true
}

fn default_max_rows() -> i64 {
    crate::tabular::DEFAULT_MAX_ROWS as i64
}

/// Arguments of `load_tabular_data`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LoadTabularArgs {
    /// Absolute path of a local `.xlsx`, `.xls`, `.ods` or `.csv` file (the
    /// extension decides how it is read; at most 64 MiB).
    pub path: String,
    /// The sheet to read; omitted: the first. Not allowed for CSV.
    #[serde(default)]
    pub sheet: Option<String>,
    /// Whether the first row holds column names. False: every row is data
    /// and columns are named col_1, col_2, ...
    #[serde(default = "default_has_header")]
    pub has_header: bool,
    /// Zero-based offset among the data rows (the header row is not one);
    /// pass the previous page's next_row_offset.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub row_offset: i64,
    /// The most rows to return; at least 1. A page also stops before 1 MiB.
    #[serde(default = "default_max_rows")]
    #[schemars(range(min = 1))]
    pub max_rows: i64,
}

impl IntoRequest for LoadTabularArgs {
    type Request = crate::tabular::LoadRequest;

    fn into_request(self) -> Result<crate::tabular::LoadRequest, ToolError> {
        Ok(crate::tabular::LoadRequest {
            path: self.path,
            sheet: self.sheet,
            has_header: self.has_header,
            row_offset: self.row_offset,
            max_rows: self.max_rows,
        })
    }
}

/// Arguments of `write_tabular_result`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteTabularArgs {
    /// Column names, written as the first row.
    pub headers: Vec<String>,
    /// Data rows, each exactly as long as headers. A cell is a string,
    /// number, boolean or null.
    #[schemars(with = "Vec<Vec<crate::tabular::Cell>>")]
    pub rows: Vec<Vec<serde_json::Value>>,
    /// Absolute path of the file to write, ending .xlsx or .csv; its
    /// directory must exist.
    pub target_path: String,
    /// Replace an existing file at target_path (atomically). False: an
    /// existing file is left untouched and the call fails.
    #[serde(default)]
    pub overwrite: bool,
}

impl IntoRequest for WriteTabularArgs {
    type Request = crate::tabular::WriteRequest;

    fn into_request(self) -> Result<crate::tabular::WriteRequest, ToolError> {
        Ok(crate::tabular::WriteRequest {
            headers: self.headers,
            rows: self.rows,
            target_path: self.target_path,
            overwrite: self.overwrite,
        })
    }
}
