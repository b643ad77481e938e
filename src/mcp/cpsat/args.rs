//! The arguments of the CP-SAT Python tools: script runs inline and on
//! disk, checked runs, background jobs and experiments.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::budget::Budget;
use crate::cpsat::{CheckedRequest, ScriptRequest, ScriptSource, attempt_error};
use crate::diagnostics::ToolError;
use crate::exec::limits::LimitCaps;
use crate::jobs::CpsatJobRequest;
use crate::mcp::args::{
    CallLimits, IntoRequest, checked_budget, checked_seed, checker_budget, default_timeout_ms, one,
    problem_schema, problem_text,
};

/// Arguments of `run_cpsat_python`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunCpsatArgs {
    /// The complete script, ending with the JSON line the tool description
    /// states (optionally with "best_objective_bound"; earlier lines of that
    /// shape are what a timeout recovers).
    pub source: String,
    /// Wall-clock budget of the child in milliseconds, above 0.
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
    #[serde(default)]
    pub limits: CallLimits,
}

/// Arguments of `run_cpsat_python_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunCpsatFileArgs {
    /// Path of a local .py script, preferably absolute; it runs in its
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
    #[serde(default)]
    pub limits: CallLimits,
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
    /// The instance the checker validates against: text, or JSON (sent as its
    /// canonical text).
    #[serde(default, deserialize_with = "problem_text")]
    #[schemars(schema_with = "problem_schema")]
    pub problem: Option<String>,
    /// Checker budget in milliseconds; default script_timeout_ms (with
    /// test_checker, the largest that fits the 120 s ceiling, at least 2000).
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
    #[serde(default)]
    pub limits: CallLimits,
}

/// Arguments of `submit_cpsat_python_job`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SubmitCpsatArgs {
    pub source: String,
    #[serde(default = "default_timeout_ms")]
    pub script_timeout_ms: i64,
    #[serde(default, deserialize_with = "problem_text")]
    #[schemars(schema_with = "problem_schema")]
    pub problem: Option<String>,
    /// Inline Python checker run after the script.
    #[serde(default)]
    pub checker: Option<String>,
    #[serde(default)]
    pub checker_timeout_ms: Option<i64>,
    #[serde(default)]
    pub limits: CallLimits,
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
    #[serde(default)]
    pub limits: CallLimits,
}

impl IntoRequest for RunCpsatArgs {
    type Request = ScriptRequest;

    fn limits(&self) -> LimitCaps {
        self.limits.caps()
    }

    fn into_request(self) -> Result<ScriptRequest, ToolError> {
        Ok(ScriptRequest {
            source: ScriptSource::Inline(self.source),
            args: self.args.unwrap_or_default(),
            seed: checked_seed(self.seed)?,
            config: self.config,
            timeout_ms: checked_budget("script_timeout_ms", self.script_timeout_ms)?,
        })
    }
}

impl IntoRequest for RunCpsatFileArgs {
    type Request = ScriptRequest;

    fn limits(&self) -> LimitCaps {
        self.limits.caps()
    }

    fn into_request(self) -> Result<ScriptRequest, ToolError> {
        Ok(ScriptRequest {
            source: ScriptSource::File(self.script_path),
            args: self.args.unwrap_or_default(),
            seed: checked_seed(self.seed)?,
            config: self.config,
            timeout_ms: checked_budget("script_timeout_ms", self.script_timeout_ms)?,
        })
    }
}

impl IntoRequest for RunCpsatFileCheckedArgs {
    type Request = CheckedRequest;

    fn limits(&self) -> LimitCaps {
        self.limits.caps()
    }

    fn into_request(self) -> Result<CheckedRequest, ToolError> {
        Ok(CheckedRequest {
            script: ScriptRequest {
                source: ScriptSource::File(self.script_path),
                args: self.args.unwrap_or_default(),
                seed: checked_seed(self.seed)?,
                config: self.config,
                timeout_ms: checked_budget("script_timeout_ms", self.script_timeout_ms)?,
            },
            checker: ScriptSource::File(self.checker_path),
            problem: self.problem,
            checker_timeout_ms: checker_budget(self.checker_timeout_ms)?,
            test_checker: self.test_checker,
        })
    }
}

impl IntoRequest for SubmitCpsatArgs {
    type Request = CpsatJobRequest;

    fn limits(&self) -> LimitCaps {
        self.limits.caps()
    }

    fn into_request(self) -> Result<CpsatJobRequest, ToolError> {
        Ok(CpsatJobRequest {
            script: ScriptRequest {
                source: ScriptSource::Inline(self.source),
                args: Vec::new(),
                seed: None,
                config: None,
                timeout_ms: checked_budget("script_timeout_ms", self.script_timeout_ms)?,
            },
            checker: self.checker.map(ScriptSource::Inline),
            problem: self.problem,
            checker_timeout_ms: checker_budget(self.checker_timeout_ms)?,
        })
    }
}

impl IntoRequest for SubmitCpsatFileArgs {
    type Request = CpsatJobRequest;

    fn limits(&self) -> LimitCaps {
        self.limits.caps()
    }

    fn into_request(self) -> Result<CpsatJobRequest, ToolError> {
        let checker = match (self.checker, self.checker_path) {
            (Some(_), Some(_)) => {
                return Err(ToolError::invalid("pass checker or checker_path, not both"));
            }
            (Some(source), None) => Some(ScriptSource::Inline(source)),
            (None, Some(path)) => Some(ScriptSource::File(path)),
            (None, None) => None,
        };
        Ok(CpsatJobRequest {
            script: ScriptRequest {
                source: ScriptSource::File(self.script_path),
                args: self.args.unwrap_or_default(),
                seed: None,
                config: None,
                timeout_ms: checked_budget("script_timeout_ms", self.script_timeout_ms)?,
            },
            checker,
            problem: self.problem,
            checker_timeout_ms: checker_budget(self.checker_timeout_ms)?,
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
    #[serde(default)]
    pub limits: CallLimits,
}

impl IntoRequest for ExperimentArgs {
    type Request = crate::cpsat::ExperimentRequest;

    fn limits(&self) -> LimitCaps {
        self.limits.caps()
    }

    fn into_request(self) -> Result<crate::cpsat::ExperimentRequest, ToolError> {
        let default = checked_budget("default_script_timeout_ms", self.default_script_timeout_ms)?;
        let attempts = self
            .attempts
            .into_iter()
            .enumerate()
            .map(|(index, attempt)| {
                let mut request = crate::cpsat::AttemptRequest {
                    name: attempt.name,
                    source: attempt.source,
                    script_path: attempt.script_path,
                    args: attempt.args,
                    seed: attempt.seed,
                    config: attempt.config,
                    script_timeout_ms: None,
                };
                // Omitted, an attempt's budget is default_script_timeout_ms,
                // the default its message names.
                request.script_timeout_ms = attempt
                    .script_timeout_ms
                    .map(|ms| Budget::parse("script_timeout_ms", ms, Some(default.as_i64())))
                    .transpose()
                    .map_err(|error| {
                        attempt_error(index, &request.name_at(index), &error.0.message)
                    })?;
                Ok(request)
            })
            .collect::<Result<_, ToolError>>()?;
        Ok(crate::cpsat::ExperimentRequest {
            attempts,
            objective_sense: self.objective_sense,
            default_script_timeout_ms: default,
            checker: self.checker,
            checker_timeout_ms: checker_budget(self.checker_timeout_ms)?,
            problem: self.problem,
            max_parallel_attempts: self.max_parallel_attempts,
            include_winner_stdout: self.include_winner_stdout,
        })
    }
}
