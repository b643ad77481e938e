//! The CP-SAT service: run a script (inline or on disk) on the CP-SAT
//! runtime's interpreter through the executor, optionally grade its answer
//! with a checker and probe that checker with mutations.

use std::path::PathBuf;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::checker::{self, Graded, PreparedChecker};
use super::live::EnvelopeWatch;
use super::probe;
use super::results::{CheckerReport, CpsatPythonCheckedResult, CpsatPythonResult};
use super::script::{ScriptRequest, ScriptSource};
use super::verdict;
use super::warm::WarmPool;
use crate::budget::Budget;
use crate::diagnostics::{Category, ToolError};
use crate::exec::{self, Ending, Limits};
use crate::progress::{Progress, Stage};
use crate::runtime::cpsat::CpsatRuntime;

/// A run graded by a checker.
#[derive(Debug, Clone)]
pub struct CheckedRequest {
    /// The run to grade.
    pub script: ScriptRequest,
    /// The checker, validated before the script runs.
    pub checker: ScriptSource,
    /// The instance the checker validates against, as text.
    pub problem: Option<String>,
    /// The checker's budget, checked where the request was made; `None`:
    /// the script's (with `test_checker`, the largest that fits the probe).
    pub checker_timeout_ms: Option<Budget>,
    /// After an accepted verdict, also grade the four mutated solutions
    /// (the result's `checker_test`); the script and all five checker runs
    /// must then fit the probe's ceiling, which sets an omitted checker
    /// budget.
    pub test_checker: bool,
}

/// The checker a run is graded by.
#[derive(Debug, Clone, Copy)]
pub(crate) enum RunChecker<'a> {
    /// Prepared before the run: a checked run refuses a checker it cannot
    /// prepare before anything runs.
    Prepared(&'a PreparedChecker),
    /// Prepared once the answer is there (a job's, admitted earlier); one
    /// that cannot be prepared any more is an `error` report.
    Source(&'a ScriptSource),
}

/// A script's run and what its checker made of it.
#[derive(Debug)]
pub(crate) struct CheckedRun {
    /// Its diagnostic set from the checker's verdict, when one ran.
    pub run: CpsatPythonResult,
    pub checker: Option<CheckerReport>,
    /// Why the checker did not run on an answer.
    pub checker_skipped_reason: Option<String>,
}

/// Runs scripts and checkers on one CP-SAT runtime.
#[derive(Debug, Clone)]
pub struct Cpsat {
    runtime: Arc<CpsatRuntime>,
    /// Warm forkers, when the server turned them on.
    warm: WarmPool,
}

impl Cpsat {
    /// The service on `runtime`; every run starts cold until
    /// [`Cpsat::enable_warm_pool`].
    pub fn new(runtime: Arc<CpsatRuntime>) -> Self {
        Cpsat {
            runtime,
            warm: WarmPool::default(),
        }
    }

    /// Keeps `size` warm forkers of the interpreter from the first script
    /// run on, until `shutdown` (0: every run is cold). A forked child
    /// confines itself as the trampoline would (limits, sandbox) before the
    /// script runs.
    pub fn enable_warm_pool(&self, size: usize, shutdown: CancellationToken) {
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
        let timeout_ms = request.timeout_ms;
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
        let limits = Limits::new(timeout_ms.duration()).keep_head_and_tail();
        self.warm
            .start_once(&python, self.runtime.inherited_pythonpath.as_deref());
        // The envelopes it prints as it goes are its live figures.
        let seen = EnvelopeWatch::new(progress);
        let watcher = |line: &str| seen.line(line);
        let watcher: Option<exec::LineWatcher<'_>> = progress.is_listening().then_some(&watcher);
        let run = match self.warm.run(&command, limits, cancel, watcher).await {
            Some(run) => run,
            None => {
                exec::run_stoppable(&command, limits, cancel, &CancellationToken::new(), watcher)
                    .await
                    .map_err(|error| ToolError::new(Category::RuntimeMissing, error.to_string()))?
            }
        };
        if run.ending == Ending::Cancelled {
            return Err(ToolError::new(
                Category::Cancelled,
                "the request was cancelled; the script was stopped",
            ));
        }
        progress.report(Stage::Parsing, "reading the envelope");
        let result = verdict::script_result(run, timeout_ms.as_millis());
        progress.report(Stage::Complete, format!("run finished: {}", result.status));
        Ok(result)
    }

    /// Grades an answer with a checker. A checker that cannot be prepared
    /// any more (a file deleted since admission) is an `error` report, not
    /// a failure; only cancellation is an error.
    pub async fn check(
        &self,
        checker: &ScriptSource,
        problem: Option<&str>,
        solution: &serde_json::Map<String, serde_json::Value>,
        result: &CpsatPythonResult,
        timeout: Budget,
        cancel: &CancellationToken,
    ) -> Result<CheckerReport, ToolError> {
        let prepared = match checker.prepare_checker_async().await {
            Ok(prepared) => prepared,
            Err(error) => return Ok(checker::error_report(error.0.message)),
        };
        self.grade(&prepared, problem, solution, result, timeout, cancel)
            .await
    }

    /// Runs a prepared checker on an answer of `result`'s.
    async fn grade(
        &self,
        checker: &PreparedChecker,
        problem: Option<&str>,
        solution: &serde_json::Map<String, serde_json::Value>,
        result: &CpsatPythonResult,
        timeout: Budget,
        cancel: &CancellationToken,
    ) -> Result<CheckerReport, ToolError> {
        let python = self.python(cancel).await?;
        let graded = Graded {
            problem,
            solution,
            objective: result.objective.as_ref(),
            solver_status: result.status,
        };
        checker::run_checker(&python, checker, graded, timeout, cancel).await
    }

    /// Runs the script, then — with a checker, when the script answered
    /// something checkable — the checker on its answer, and sets the run's
    /// diagnostic from the verdict. A checked run and a CP-SAT job (on any
    /// backend) both end here.
    pub(crate) async fn run_then_check(
        &self,
        script: &ScriptRequest,
        checker: Option<(RunChecker<'_>, Budget)>,
        problem: Option<&str>,
        progress: &Progress,
        cancel: &CancellationToken,
    ) -> Result<CheckedRun, ToolError> {
        let mut run = self.run(script, progress, cancel).await?;
        let Some((checker, timeout)) = checker else {
            return Ok(CheckedRun {
                run,
                checker: None,
                checker_skipped_reason: None,
            });
        };
        let report = match run.checkable() {
            Ok(solution) => {
                progress.report(Stage::Parsing, "running the checker");
                match checker {
                    RunChecker::Prepared(prepared) => {
                        self.grade(prepared, problem, solution, &run, timeout, cancel)
                            .await?
                    }
                    RunChecker::Source(source) => {
                        self.check(source, problem, solution, &run, timeout, cancel)
                            .await?
                    }
                }
            }
            Err(reason) => {
                return Ok(CheckedRun {
                    run,
                    checker: None,
                    checker_skipped_reason: Some(reason),
                });
            }
        };
        run.diagnostic = verdict::checked_diagnostic(&run, Some(&report));
        Ok(CheckedRun {
            run,
            checker: Some(report),
            checker_skipped_reason: None,
        })
    }

    /// Runs the script, then the checker on its answer (when there is one),
    /// then — on request and after an accepted baseline — the mutation probe.
    pub async fn run_checked(
        &self,
        request: &CheckedRequest,
        progress: &Progress,
        cancel: &CancellationToken,
    ) -> Result<CpsatPythonCheckedResult, ToolError> {
        let checker_timeout = probe::checker_budget(
            request.script.timeout_ms,
            request.checker_timeout_ms,
            request.test_checker,
        )?;
        request.script.validate()?;
        // Both files are validated before anything runs.
        let checker = request.checker.prepare_checker_async().await?;
        drop(request.script.prepare_async().await?);
        let checked = self
            .run_then_check(
                &request.script,
                Some((RunChecker::Prepared(&checker), checker_timeout)),
                request.problem.as_deref(),
                progress,
                cancel,
            )
            .await?;
        let (run, report) = (checked.run, checked.checker);
        let checker_test = match (&report, run.solution.as_ref()) {
            (Some(baseline), Some(solution))
                if request.test_checker && baseline.verdict.is_accepted() =>
            {
                progress.report(Stage::Parsing, "probing the checker with mutated solutions");
                Some(
                    probe::probe(
                        &self.python(cancel).await?,
                        &checker,
                        request.problem.as_deref(),
                        solution,
                        run.objective.as_ref(),
                        run.status,
                        checker_timeout,
                        cancel,
                    )
                    .await?,
                )
            }
            _ => None,
        };
        Ok(CpsatPythonCheckedResult {
            run,
            checker: report,
            checker_skipped_reason: checked.checker_skipped_reason,
            checker_timeout_ms: checker_timeout.as_millis(),
            checker_test,
        })
    }
}
