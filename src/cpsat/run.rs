//! The CP-SAT service: run a script (inline or on disk) on the CP-SAT
//! runtime's interpreter through the executor, optionally grade its answer
//! with a checker and probe that checker with mutations.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::checker::{self, CheckerSource, Graded};
use super::probe;
use super::results::{CheckerReport, CpsatPythonCheckedResult, CpsatPythonResult};
use super::script::ScriptRequest;
use super::verdict;
use super::warm::WarmPool;
use crate::budget::{DEFAULT_TIMEOUT_MS, validate_budget};
use crate::diagnostics::{Category, ToolError};
use crate::exec::{self, Ending, Limits};
use crate::progress::{Progress, Stage};
use crate::runtime::cpsat::CpsatRuntime;

/// A run graded by a checker.
#[derive(Debug, Clone)]
pub struct CheckedRequest {
    pub script: ScriptRequest,
    pub checker: CheckerSource,
    /// The instance the checker validates against, as text.
    pub problem: Option<String>,
    pub checker_timeout_ms: Option<i64>,
    pub test_checker: bool,
}

/// Checks the millisecond budget `name` whose default, when omitted, is not
/// a fixed number (`checker_timeout_ms` follows the script's budget). For
/// an argument with a fixed default use [`validate_budget`] and name it.
pub fn positive_ms(name: &str, value: i64) -> Result<u64, ToolError> {
    validate_budget(name, value, None)
}

/// Runs scripts and checkers on one CP-SAT runtime.
#[derive(Debug, Clone)]
pub struct Cpsat {
    runtime: Arc<CpsatRuntime>,
    /// Warm forkers, when the server turned them on.
    warm: WarmPool,
}

impl Cpsat {
    pub fn new(runtime: Arc<CpsatRuntime>) -> Self {
        Cpsat {
            runtime,
            warm: WarmPool::default(),
        }
    }

    /// Keeps `size` warm forkers of the interpreter from the first script
    /// run on, until `shutdown` (0: every run is cold).
    ///
    /// With the sandbox on, scripts always start cold, through the sandbox
    /// trampoline: a forked child would inherit its forker's freedom.
    pub fn enable_warm_pool(&self, size: usize, shutdown: CancellationToken) {
        let size = if exec::sandbox::enabled() { 0 } else { size };
        self.warm.arm(size, shutdown);
    }

    /// The interpreter, once it has imported `ortools.sat.python.cp_model`
    /// (asked once per interpreter file, see `CpsatRuntime::probe`).
    pub async fn python(&self, cancel: &CancellationToken) -> Result<PathBuf, ToolError> {
        self.probed(cancel).await?;
        Ok(self.runtime.python.clone())
    }

    /// The OR-Tools version the interpreter imports.
    pub async fn ortools_version(&self, cancel: &CancellationToken) -> Result<String, ToolError> {
        self.probed(cancel).await
    }

    async fn probed(&self, cancel: &CancellationToken) -> Result<String, ToolError> {
        self.runtime.probe(cancel).await.map_err(|problem| {
            ToolError::new(
                Category::RuntimeMissing,
                format!(
                    "the CP-SAT runtime is not usable: {problem}; run `solvergate install-runtime --only cpsat`, or adopt a Python that can import ortools with `solvergate configure-runtime --python <path>`"
                ),
            )
        })
    }

    /// Runs one script and reads its envelope.
    pub async fn run(
        &self,
        request: &ScriptRequest,
        progress: &Progress,
        cancel: &CancellationToken,
    ) -> Result<CpsatPythonResult, ToolError> {
        progress.report(Stage::Validating, "validating the script and arguments");
        let timeout_ms = validate_budget(
            "script_timeout_ms",
            request.timeout_ms,
            Some(DEFAULT_TIMEOUT_MS),
        )?;
        request.validate()?;
        let python = self.python(cancel).await?;
        let prepared = request.prepare_async().await?;
        let command = prepared.command(
            &python,
            &request.args,
            request.seed,
            request.config.as_ref(),
            self.runtime.inherited_pythonpath.as_deref(),
        )?;
        progress.report(Stage::Running, "running the CP-SAT script");
        // A chatty script is not stopped for its output: the head and the
        // tail are kept, and its answer is the tail's last line.
        let limits = Limits::new(Duration::from_millis(timeout_ms)).keep_head_and_tail();
        self.warm
            .start_once(&python, self.runtime.inherited_pythonpath.as_deref());
        let run = match self.warm.run(&command, limits, cancel).await {
            Some(run) => run,
            None => exec::run(&command, limits, cancel)
                .await
                .map_err(|error| ToolError::new(Category::RuntimeMissing, error.to_string()))?,
        };
        if run.ending == Ending::Cancelled {
            return Err(ToolError::new(
                Category::Cancelled,
                "the request was cancelled; the script was stopped",
            ));
        }
        progress.report(Stage::Parsing, "reading the envelope");
        let result = verdict::script_result(run, timeout_ms);
        progress.report(Stage::Complete, format!("run finished: {}", result.status));
        Ok(result)
    }

    /// Grades an answer with a checker. A checker that cannot be prepared
    /// any more (a file deleted since admission) is an `error` report, not
    /// a failure; only cancellation is an error.
    pub async fn check(
        &self,
        checker: &CheckerSource,
        problem: Option<&str>,
        solution: &serde_json::Map<String, serde_json::Value>,
        result: &CpsatPythonResult,
        timeout_ms: u64,
        cancel: &CancellationToken,
    ) -> Result<CheckerReport, ToolError> {
        let prepared = match checker.prepare_async().await {
            Ok(prepared) => prepared,
            Err(error) => return Ok(checker::error_report(error.0.message)),
        };
        let python = self.python(cancel).await?;
        let graded = Graded {
            problem,
            solution,
            objective: result.objective.as_ref(),
            solver_status: result.status,
        };
        checker::run_checker(&python, &prepared, graded, timeout_ms, cancel).await
    }

    /// Runs the script, then the checker on its answer (when there is one),
    /// then — on request and after an accepted baseline — the mutation probe.
    pub async fn run_checked(
        &self,
        request: &CheckedRequest,
        progress: &Progress,
        cancel: &CancellationToken,
    ) -> Result<CpsatPythonCheckedResult, ToolError> {
        let script_ms = validate_budget(
            "script_timeout_ms",
            request.script.timeout_ms,
            Some(DEFAULT_TIMEOUT_MS),
        )?;
        let explicit = request
            .checker_timeout_ms
            .map(|ms| positive_ms("checker_timeout_ms", ms))
            .transpose()?;
        let checker_timeout_ms = probe::checker_budget(script_ms, explicit, request.test_checker)?;
        request.script.validate()?;
        // Both files are validated before anything runs.
        let checker = request.checker.prepare_async().await?;
        drop(request.script.prepare_async().await?);
        let run = self.run(&request.script, progress, cancel).await?;
        let python = self.python(cancel).await?;
        let (report, skipped) = match run.checkable() {
            Ok(solution) => {
                progress.report(Stage::Parsing, "running the checker");
                let graded = Graded {
                    problem: request.problem.as_deref(),
                    solution,
                    objective: run.objective.as_ref(),
                    solver_status: run.status,
                };
                let report =
                    checker::run_checker(&python, &checker, graded, checker_timeout_ms, cancel)
                        .await?;
                (Some(report), None)
            }
            Err(reason) => (None, Some(reason)),
        };
        let checker_test = match (&report, run.solution.as_ref()) {
            (Some(baseline), Some(solution))
                if request.test_checker && baseline.verdict.is_accepted() =>
            {
                progress.report(Stage::Parsing, "probing the checker with mutated solutions");
                Some(
                    probe::probe(
                        &python,
                        &checker,
                        request.problem.as_deref(),
                        solution,
                        run.objective.as_ref(),
                        run.status,
                        checker_timeout_ms,
                        cancel,
                    )
                    .await?,
                )
            }
            _ => None,
        };
        let mut run = run;
        run.diagnostic = verdict::checked_diagnostic(&run, report.as_ref());
        Ok(CpsatPythonCheckedResult {
            run,
            checker: report,
            checker_skipped_reason: skipped,
            checker_timeout_ms,
            checker_test,
        })
    }
}
