//! The MiniZinc service: compile-check, inspect and solve a model on the
//! resolved runtime.
//!
//! Each call validates its arguments before anything runs (argument and
//! environment problems are [`ToolError`]s), resolves the solver against
//! the runtime's catalog (canonical id, short name or tag; cp-sat first when
//! none is named), gates the search controls on the solver's declared
//! flags, then runs MiniZinc once through [`crate::exec`] and turns its
//! `--json-stream` output into a result. Solver outcomes, including model
//! errors, are results with a `status`, never errors.
//!
//! Inline and path-based tools share this code; [`Sources`] is the only
//! difference.

mod checker;
mod controls;
mod inputs;
pub mod results;
pub mod stream;
mod verdict;

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

pub use checker::lint as lint_checker;
pub use controls::{MAX_PARALLEL, SolveControls};
pub(crate) use inputs::prepare_inline_models;
pub use inputs::{Prepared, Sources};
pub use results::{
    CheckResult, CheckerReport, CheckerStatus, InterfaceType, ModelInspectionResult,
    ModelInterface, PreflightStatus, SolutionCheck, SolveResult, SolveStatus, TrajectoryPoint,
};

use crate::budget::Budget;
use crate::diagnostics::{Category, ToolError};
use crate::exec::{self, ChildCommand, Ending, Limits, RunOutput};
use crate::progress::{LiveFigures, Progress, Stage};
use crate::runtime::{Runtime, SolverInfo};

/// A compile check or an inspection.
#[derive(Debug, Clone)]
pub struct PreflightRequest {
    /// The model, and optional data and checker, to compile.
    pub sources: Sources,
    /// `None`: cp-sat when available, else the runtime's default.
    pub solver: Option<String>,
    /// MiniZinc's `--time-limit`, checked where the request was made; the
    /// wall-clock cap adds [`crate::budget::WALL_CLOCK_GRACE`].
    pub timeout_ms: Budget,
}

/// A solve.
#[derive(Debug, Clone)]
pub struct SolveRequest {
    /// The model, and optional data and checker, to solve.
    pub sources: Sources,
    /// `None`: cp-sat when available, else the runtime's default.
    pub solver: Option<String>,
    /// MiniZinc's `--time-limit`, checked where the request was made; the
    /// wall-clock cap adds [`crate::budget::WALL_CLOCK_GRACE`].
    pub timeout_ms: Budget,
    /// The search flags (`-f`, `-p`, `-r`, `-a`, `-n`), gated on what the
    /// solver declares.
    pub controls: SolveControls,
}

/// With test hooks on (debug builds, `SOLVERGATE_TEST_HOOKS=1`), a solve
/// whose model contains this text panics: tests use it to prove that a
/// panic never hangs a request or holds a job slot.
pub const TEST_PANIC_MARKER: &str = "solvergate-test-hook: panic";

/// Compile-check, inspect and solve on one runtime.
#[derive(Debug, Clone)]
pub struct MiniZinc {
    runtime: Arc<Runtime>,
    test_hooks: bool,
}

impl MiniZinc {
    /// A service for `runtime`, test hooks off.
    pub fn new(runtime: Arc<Runtime>) -> Self {
        MiniZinc {
            runtime,
            test_hooks: false,
        }
    }

    /// Turns the test hooks on (see [`TEST_PANIC_MARKER`]).
    pub fn with_test_hooks(mut self, on: bool) -> Self {
        self.test_hooks = on && cfg!(debug_assertions);
        self
    }

    /// The runtime whose `minizinc` and solver catalog every run uses.
    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.runtime
    }

    /// Flattens the model for the solver without solving (`minizinc -c`).
    pub async fn check(
        &self,
        request: &PreflightRequest,
        progress: &Progress,
        cancel: &CancellationToken,
    ) -> Result<CheckResult, ToolError> {
        progress.report(Stage::Validating, "validating the model and arguments");
        let timeout_ms = request.timeout_ms;
        request.sources.validate()?;
        let solver = self
            .select_solver(request.solver.as_deref(), cancel)
            .await?;
        let prepared = request.sources.prepare_async().await?;
        let command = self
            .base_command(&prepared)?
            .args(["--json-stream", "-c", "--solver", &solver.id])
            .args(["--time-limit", &timeout_ms.as_millis().to_string()])
            .args(["--fzn", "/dev/null", "--no-output-ozn"])
            .args(model_and_data(&prepared));
        progress.report(Stage::Running, format!("compiling for {}", solver.id));
        let run = self.run(&command, timeout_ms, cancel).await?;
        progress.report(Stage::Parsing, "reading the compiler output");
        let report = stream::parse(&run.stdout, false);
        let result = verdict::check_result(run, &report, solver.id.clone(), timeout_ms.as_millis());
        progress.report(
            Stage::Complete,
            format!("check finished: {}", result.status),
        );
        Ok(result)
    }

    /// Reports the model's parameters and outputs (`--model-interface-only`).
    pub async fn inspect(
        &self,
        request: &PreflightRequest,
        progress: &Progress,
        cancel: &CancellationToken,
    ) -> Result<ModelInspectionResult, ToolError> {
        progress.report(Stage::Validating, "validating the model and arguments");
        let timeout_ms = request.timeout_ms;
        request.sources.validate()?;
        let solver = self
            .select_solver(request.solver.as_deref(), cancel)
            .await?;
        let prepared = request.sources.prepare_async().await?;
        let command = self
            .base_command(&prepared)?
            .args([
                "--json-stream",
                "--model-interface-only",
                "--solver",
                &solver.id,
            ])
            .args(model_and_data(&prepared));
        progress.report(Stage::Running, "extracting the model interface");
        let run = self.run(&command, timeout_ms, cancel).await?;
        progress.report(Stage::Parsing, "reading the interface");
        let report = stream::parse(&run.stdout, false);
        let result =
            verdict::inspection_result(run, &report, solver.id.clone(), timeout_ms.as_millis());
        progress.report(
            Stage::Complete,
            format!("inspection finished: {}", result.status),
        );
        Ok(result)
    }

    /// Solves the model and reports every solution, the verdict and, with a
    /// checker, each solution's check.
    pub async fn solve(
        &self,
        request: &SolveRequest,
        progress: &Progress,
        cancel: &CancellationToken,
    ) -> Result<SolveResult, ToolError> {
        self.solve_stoppable(request, progress, cancel, &CancellationToken::new())
            .await
    }

    /// [`MiniZinc::solve`] that `stop` can end early the way Ctrl-C ends a
    /// terminal solve: MiniZinc stops its solver, and the solutions found so
    /// far are the result (`cancel`, by contrast, discards everything).
    pub async fn solve_stoppable(
        &self,
        request: &SolveRequest,
        progress: &Progress,
        cancel: &CancellationToken,
        stop: &CancellationToken,
    ) -> Result<SolveResult, ToolError> {
        progress.report(Stage::Validating, "validating the model and arguments");
        let timeout_ms = request.timeout_ms;
        request.controls.validate()?;
        request.sources.validate()?;
        let solver = self
            .select_solver(request.solver.as_deref(), cancel)
            .await?;
        request.controls.gate(&solver)?;
        let prepared = request.sources.prepare_async().await?;
        let intermediate =
            watches_incumbents(&request.controls, &solver, prepared.checker.is_some());
        if self.test_hooks {
            panic_on_marker(&prepared.model);
        }
        let mut command = self
            .base_command(&prepared)?
            .args([
                "--json-stream",
                "--output-mode",
                "json",
                "--output-objective",
            ])
            .args(["--statistics", "--solver", &solver.id])
            .args(["--time-limit", &timeout_ms.as_millis().to_string()])
            .args(request.controls.args());
        if intermediate {
            // With each solution's time: the trajectory's clock. Only here,
            // so every other solve's stream stays as it was.
            command = command.args(["--intermediate", "--output-time"]);
        }
        command = command.args(model_and_data(&prepared));
        if let Some(checker) = &prepared.checker {
            // 2.9 names the checker with --solution-checker; 2.6 has no such
            // flag and recognises a positional *.mzc.mzn instead.
            if self.runtime.has_solution_checker_flag(cancel).await? {
                command = command.arg("--solution-checker");
            }
            command = command.arg(checker);
        }
        progress.report(Stage::Running, format!("solving with {}", solver.id));
        let seen = SolutionWatch::new(progress);
        let watcher = |line: &str| seen.line(line);
        let watcher: Option<exec::LineWatcher<'_>> = progress.is_listening().then_some(&watcher);
        // Without a checker, each solution is captured once (a record of its
        // text and values), or, when only we asked for the improving ones,
        // as its objective and time with the latest kept whole; with a
        // checker, the checker's transcript is the raw stream, so the
        // stream stays as MiniZinc printed it.
        let filter: Option<exec::NewLineFilter> = match (&prepared.checker, intermediate) {
            (Some(_), _) => None,
            (None, true) => Some(stream::incumbent_filter),
            (None, false) => Some(stream::solution_filter),
        };
        let run = self
            .run_until(&command, timeout_ms, cancel, stop, watcher, filter)
            .await?;
        progress.report(Stage::Parsing, "reading the solver output");
        let has_checker = prepared.checker.is_some();
        let result = solve_result(run, has_checker, &solver, timeout_ms, &request.controls);
        progress.report(
            Stage::Complete,
            format!("solve finished: {}", result.status),
        );
        Ok(result)
    }

    /// Runs the runtime's findMUS (`solver_id`, e.g. `org.minizinc.findmus`)
    /// on prepared files under `timeout_ms` and hands back the raw run: the
    /// unsat-core search's findMUS method reads its output itself. The only
    /// MiniZinc run here whose output is not `--json-stream`.
    pub async fn run_findmus(
        &self,
        prepared: &Prepared,
        solver_id: &str,
        timeout_ms: Budget,
        cancel: &CancellationToken,
    ) -> Result<RunOutput, ToolError> {
        // `-g` records the domain changes compilation makes (`x < 5`
        // becoming x's domain) as constraints, so they can be MUS members:
        // without it such a member drops out of the MUS, or findMUS gives
        // up ("background is not satisfiable"). The driver refuses `--data`
        // (and `-I`, which a user's model, run from its own directory, never
        // gets) for findMUS; a data file goes after the model instead.
        let mut command = self
            .base_command(prepared)?
            .args(["--solver", solver_id, "-g"])
            .args(["--time-limit", &timeout_ms.as_millis().to_string()])
            .arg(&prepared.model);
        if let Some(data) = &prepared.data {
            command = command.arg(data);
        }
        self.run(&command, timeout_ms, cancel).await
    }

    /// Everything about a solve request that can be checked without running
    /// it: controls, sources, solver, capability gate (its budget was
    /// checked where the request was made).
    async fn validate_solve(
        &self,
        request: &SolveRequest,
        cancel: &CancellationToken,
    ) -> Result<SolverInfo, ToolError> {
        request.controls.validate()?;
        request.sources.validate()?;
        let solver = self
            .select_solver(request.solver.as_deref(), cancel)
            .await?;
        request.controls.gate(&solver)?;
        Ok(solver)
    }

    /// Checks a solve request completely (paths included) without running
    /// it, so a background job is refused before it exists.
    pub async fn admit(
        &self,
        request: &SolveRequest,
        cancel: &CancellationToken,
    ) -> Result<(), ToolError> {
        self.validate_solve(request, cancel).await?;
        request.sources.prepare_async().await.map(drop)
    }

    /// The solver a request means, from the runtime's catalog.
    pub async fn select_solver(
        &self,
        requested: Option<&str>,
        cancel: &CancellationToken,
    ) -> Result<SolverInfo, ToolError> {
        let catalog = self.runtime.catalog(cancel).await?;
        let found = match requested.map(str::trim) {
            Some("") => {
                return Err(ToolError::invalid(
                    "solver must not be empty; omit it for the default",
                ));
            }
            Some(name) => catalog.resolve(name),
            None => catalog.default_choice(),
        };
        if let Some(solver) = found {
            return Ok(solver.clone());
        }
        // Name only what can run here; the rest are listed apart.
        let solvers = match self.runtime.solver_list(cancel).await {
            Ok(list) => list.solvers,
            Err(_) => catalog.solvers.clone(),
        };
        let (usable, unusable): (Vec<_>, Vec<_>) =
            solvers.iter().partition(|solver| solver.available);
        let named = |solvers: Vec<&SolverInfo>| {
            solvers
                .into_iter()
                .map(|s| format!("{} ({})", s.id, s.short_name()))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut message = format!(
            "the runtime has no solver called {:?}; available: {}",
            requested.unwrap_or("cp-sat"),
            named(usable)
        );
        if !unusable.is_empty() {
            message.push_str(&format!(
                "; listed but unable to run here: {}",
                named(unusable)
            ));
        }
        Err(ToolError::new(Category::SolverUnavailable, message))
    }

    fn base_command(&self, prepared: &inputs::Prepared) -> Result<ChildCommand, ToolError> {
        let binary = self.runtime.require_binary()?;
        // What the call named is all a sandboxed MiniZinc reads besides its
        // runtime: the model, data and checker (and their directories, for
        // their includes), its working and include directories.
        let mut command = ChildCommand::new(binary)
            .cwd(&prepared.cwd)
            .reads_dir(&prepared.cwd)
            .reads_beside(&prepared.model);
        for file in prepared.data.iter().chain(&prepared.checker) {
            command = command.reads_beside(file);
        }
        if let Some(dir) = &prepared.include_dir {
            command = command.arg("-I").arg(dir).reads_dir(dir);
        }
        Ok(command)
    }

    async fn run(
        &self,
        command: &ChildCommand,
        timeout_ms: Budget,
        cancel: &CancellationToken,
    ) -> Result<RunOutput, ToolError> {
        self.run_until(
            command,
            timeout_ms,
            cancel,
            &CancellationToken::new(),
            None,
            None,
        )
        .await
    }

    async fn run_until(
        &self,
        command: &ChildCommand,
        timeout_ms: Budget,
        cancel: &CancellationToken,
        stop: &CancellationToken,
        watcher: Option<exec::LineWatcher<'_>>,
        filter: Option<exec::NewLineFilter>,
    ) -> Result<RunOutput, ToolError> {
        let mut limits = Limits::new(timeout_ms.with_grace());
        limits.stdout_filter = filter;
        let run = exec::run_stoppable(command, limits, cancel, stop, watcher)
            .await
            .map_err(|error| ToolError::new(Category::RuntimeMissing, error.to_string()))?;
        if run.ending == Ending::Cancelled {
            return Err(ToolError::new(
                Category::Cancelled,
                "the request was cancelled; the solver was stopped",
            ));
        }
        Ok(run)
    }
}

/// Counts solutions on MiniZinc's JSON stream as they arrive and reports
/// them (at most a few times a second) as running progress.
struct SolutionWatch<'a> {
    progress: &'a Progress,
    state: std::sync::Mutex<(usize, Option<serde_json::Value>, Option<std::time::Instant>)>,
}

impl<'a> SolutionWatch<'a> {
    fn new(progress: &'a Progress) -> Self {
        SolutionWatch {
            progress,
            state: std::sync::Mutex::new((0, None, None)),
        }
    }

    fn line(&self, line: &str) {
        let Some((objective, so_far)) = stream::solution_seen(line) else {
            return;
        };
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        // An incumbent record says how many came (some were not kept).
        state.0 = so_far
            .and_then(|count| usize::try_from(count).ok())
            .unwrap_or(state.0 + 1);
        if objective.is_some() {
            state.1 = objective;
        }
        let due = state
            .2
            .is_none_or(|last| last.elapsed() >= Duration::from_millis(250));
        if due {
            state.2 = Some(std::time::Instant::now());
            let live = LiveFigures {
                solutions: state.0 as u64,
                objective: state.1.clone(),
                bound: None,
            };
            let text = live.text();
            self.progress.report_live(live, text);
        }
    }
}

/// Whether a solve asks for the improving solutions of an optimisation
/// (`--intermediate`) so its incumbents can be watched: when the solver
/// declares `-a` or `-i`, the caller asked for neither every solution nor
/// a number of them, and no checker would grade each one. On a
/// satisfaction model the flag changes nothing.
fn watches_incumbents(controls: &SolveControls, solver: &SolverInfo, checker: bool) -> bool {
    let declares = |flag: &str| solver.capabilities.std_flags.iter().any(|f| f == flag);
    !checker
        && !controls.final_only
        && !controls.all_solutions
        && controls.num_solutions.is_none()
        && (declares("-a") || declares("-i"))
}

/// The path of an optimisation's objective: from the incumbent records when
/// the solve watched its incumbents, else from its solutions; the solver's
/// bound (`objectiveBound`) on the last point.
fn trajectory(report: &stream::StreamReport) -> Vec<results::TrajectoryPoint> {
    let path: Vec<(Option<serde_json::Number>, Option<u64>)> = match report.incumbents.is_empty() {
        false => report.incumbents.clone(),
        true => report
            .solutions
            .iter()
            .map(|solution| (solution.objective.clone(), solution.time_ms))
            .collect(),
    };
    let mut points: Vec<results::TrajectoryPoint> = path
        .into_iter()
        .filter_map(|(objective, time_ms)| {
            Some(results::TrajectoryPoint {
                time_ms,
                objective: objective?,
                bound: None,
            })
        })
        .collect();
    if let Some(last) = points.last_mut() {
        last.bound = report
            .statistics
            .get("objectiveBound")
            .and_then(|bound| serde_json::from_str::<serde_json::Number>(bound).ok());
    }
    results::thinned(points, results::MAX_TRAJECTORY)
}

/// The test hook: panics when the model holds [`TEST_PANIC_MARKER`].
fn panic_on_marker(model: &std::path::Path) {
    let text = std::fs::read_to_string(model).unwrap_or_default();
    if text.contains(TEST_PANIC_MARKER) {
        panic!("test hook: the model asked this solve to panic");
    }
}

fn model_and_data(prepared: &inputs::Prepared) -> Vec<std::ffi::OsString> {
    let mut args = vec![prepared.model.clone().into_os_string()];
    if let Some(data) = &prepared.data {
        args.push("--data".into());
        args.push(data.clone().into_os_string());
    }
    args
}

fn solve_result(
    run: RunOutput,
    has_checker: bool,
    solver: &SolverInfo,
    timeout_ms: Budget,
    controls: &SolveControls,
) -> SolveResult {
    let report = stream::parse(&run.stdout, has_checker);
    let status = verdict::solve_status(&run, &report);
    let timed_out = run.timed_out();
    // The raw stream moves into the checker's transcript: kept once, not copied.
    let facts = checker::RunFacts {
        timed_out: timed_out || status == SolveStatus::Timeout,
        truncated: run.truncated,
        status,
    };
    let checker = has_checker.then(|| checker::checker_report(facts, &report, run.stdout));
    let solutions: Vec<_> = report.solutions.iter().map(|s| s.values.clone()).collect();
    let mut result = SolveResult {
        status,
        solver: solver.id.clone(),
        return_code: run.return_code,
        timed_out,
        truncated: run.truncated,
        stdout: verdict::solution_text(&report),
        stderr: verdict::merged_stderr(&run.stderr, &report),
        elapsed_ms: run.elapsed_ms,
        solution: solutions.last().cloned(),
        objective: report.solutions.last().and_then(|s| s.objective.clone()),
        solutions,
        statistics: report.statistics.clone(),
        checker,
        diagnostic: None,
        sandbox: run.sandbox.clone(),
        trajectory: trajectory(&report),
    };
    result.diagnostic = match &run.breach {
        Some(breach) => Some(verdict::breach_diagnostic(&result, breach)),
        None => verdict::solve_diagnostic(
            &result,
            &report,
            timeout_ms.as_millis(),
            controls.all_solutions,
        ),
    };
    result
}
