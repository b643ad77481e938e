//! Explicit experiments: run several client-written script variants of the
//! same problem, grade them with the same gates, pick one winner.
//!
//! Every attempt is validated before any child runs. Attempts run in a
//! bounded pool (`max_parallel_attempts` ≤ min(CPUs, 4)); results come back
//! in attempt order and ties resolve by that order, never by completion.
//! The call is synchronous, so its projected wall clock is capped up front.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::checker::{Graded, PreparedChecker, run_checker};
use super::probe::CHILD_OVERHEAD_MS;
use super::results::{CheckerReport, CheckerStatus, CpsatPythonResult, ScriptStatus};
use super::run::Cpsat;
use super::script::{ScriptRequest, ScriptSource, validate_seed};
use crate::budget::Budget;
use crate::diagnostics::{Category, Diagnostic, ToolError};
use crate::progress::{Progress, Stage};
use crate::sha256_hex;
use crate::userfiles::off_thread;
use crate::verdict::{RaceStatus, Verdict};

/// Longest projected wall clock of one experiment call.
pub const EXPERIMENT_BUDGET_MS: u64 = 210_000;
/// Most bytes of stderr kept for an attempt that errored.
const STDERR_TAIL_BYTES: usize = 2048;

/// The policy, as the result states it.
const FEASIBILITY_POLICY: &str = "accepted attempts (status optimal, feasible or timeout with a non-empty solution, then the checker if any) ranked by status (optimal > feasible > timeout), then shorter duration, then attempt order";
const OPTIMISATION_POLICY: &str = "accepted attempts (status optimal, feasible or timeout with a non-empty solution and a finite objective, then the checker if any) ranked by objective, then status (optimal > feasible > timeout), then shorter duration, then attempt order";
const REPRODUCIBILITY: &str = "the winner reflects one observed run: CP-SAT's randomised and parallel search can give a different objective on a re-run; fix random_seed and num_workers for steadier replays";

/// One attempt as requested.
#[derive(Debug, Clone)]
pub struct AttemptRequest {
    /// Unique within the experiment; `None` for `attempt-<index>`.
    pub name: Option<String>,
    /// An inline script; exactly one of `source` and `script_path` is set.
    pub source: Option<String>,
    /// A local script, run from its own directory.
    pub script_path: Option<String>,
    /// The script's `sys.argv[1:]`; refused for an inline `source`.
    pub args: Option<Vec<String>>,
    /// Replay seed, passed as `SOLVERGATE_CPSAT_SEED`; must fit a signed
    /// 32-bit integer.
    pub seed: Option<i64>,
    /// Replay config, handed over through `SOLVERGATE_CPSAT_CONFIG`.
    pub config: Option<Map<String, Value>>,
    /// This attempt's budget, checked where the request was made; `None`:
    /// the experiment's `default_script_timeout_ms`.
    pub script_timeout_ms: Option<Budget>,
}

impl AttemptRequest {
    /// The attempt's name: its own, or `attempt-<index>`.
    pub fn name_at(&self, index: usize) -> String {
        self.name
            .clone()
            .unwrap_or_else(|| format!("attempt-{index}"))
    }
}

/// A problem with attempt `index` (named `name`), worded as every attempt
/// error is: `attempts[<index>] (<name>): <problem>`.
pub fn attempt_error(index: usize, name: &str, problem: &str) -> ToolError {
    ToolError::invalid(format!("attempts[{index}] ({name}): {problem}"))
}

/// An experiment as requested.
#[derive(Debug, Clone)]
pub struct ExperimentRequest {
    /// The variants, at least one; ties go to the earlier.
    pub attempts: Vec<AttemptRequest>,
    /// `maximize`, `minimize`, or `None` for feasibility.
    pub objective_sense: Option<String>,
    /// The budget of an attempt that names none.
    pub default_script_timeout_ms: Budget,
    /// Inline Python checker, run on every attempt that passes the base
    /// gate; `None` accepts on the base gate alone.
    pub checker: Option<String>,
    /// The checker's budget; `None`: each attempt's own.
    pub checker_timeout_ms: Option<Budget>,
    /// The instance text handed to the checker in its payload.
    pub problem: Option<String>,
    /// How many attempts run at once: 1 to min(CPUs, 4).
    pub max_parallel_attempts: i64,
    /// Keeps the winner's raw stdout in the result; otherwise it is emptied.
    pub include_winner_stdout: bool,
}

/// One row of the attempts table.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ExperimentAttempt {
    /// The attempt's position in the request.
    pub index: usize,
    /// The name given, or `attempt-<index>`.
    pub name: String,
    /// How the run ended; `error` for an attempt that could not run.
    pub status: ScriptStatus,
    /// The reported objective; `null` when there is none.
    pub objective: Option<Number>,
    /// Diagnostic only; never used for acceptance or ranking.
    pub best_objective_bound: Option<Number>,
    /// Passed every gate.
    pub accepted: bool,
    /// Why it was not accepted.
    pub rejection: Option<String>,
    /// The checker's status; `null` when it did not run.
    pub checker_status: Option<CheckerStatus>,
    /// The checker's verdict; `null` when it did not run.
    pub checker_verdict: Option<Verdict>,
    /// Wall-clock time of the script run (not the checker), in
    /// milliseconds; 0 for an attempt that could not run.
    pub duration_ms: u64,
    /// SHA256 of the inline text or of the file's bytes.
    pub source_sha256: String,
    /// The config's canonical hash (keys sorted, compact); `null` for no
    /// config or `{}`.
    pub config_sha256: Option<String>,
    /// The replay seed the attempt ran with.
    pub seed: Option<i64>,
    /// The attempt's budget.
    pub script_timeout_ms: u64,
    /// The run was stopped at its budget.
    pub timed_out: bool,
    /// The run's output went over the 1 MiB cap.
    pub truncated: bool,
    /// It ran from `script_path`, which a save cannot replay.
    pub used_script_path: bool,
    /// One line about the run.
    pub message: Option<String>,
    /// The end of stderr, for an attempt whose status is `error`.
    pub stderr_tail: Option<String>,
}

/// What an experiment decided.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CpsatPythonExperimentResult {
    /// `winner` when an attempt passed every gate, else `no_winner`.
    pub status: RaceStatus,
    /// The winning attempt's index; `null` when none was accepted.
    pub winner_index: Option<usize>,
    /// The winning attempt's name; `null` when none was accepted.
    pub winner_name: Option<String>,
    /// The winner's full run, its stdout emptied unless
    /// `include_winner_stdout`.
    pub winner: Option<CpsatPythonResult>,
    /// The winner's checker verdict, when a checker ran.
    pub winner_checker: Option<CheckerReport>,
    /// One row per attempt, in request order.
    pub attempts: Vec<ExperimentAttempt>,
    /// Wall-clock time of the whole call, in milliseconds.
    pub elapsed_ms: u64,
    /// `maximize` or `minimize` as requested; `null` for feasibility.
    pub objective_sense: Option<String>,
    /// How the winner was chosen, in words.
    pub selection_policy: String,
    /// Aligned with `attempts`.
    pub source_sha256: Vec<String>,
    /// SHA-256 of the checker's text; `null` without a checker.
    pub checker_sha256: Option<String>,
    /// SHA-256 of the problem text; `null` without one.
    pub problem_sha256: Option<String>,
    /// Non-blocking advice (CPU oversubscription, reproducibility).
    pub warnings: Vec<String>,
    /// `no_winner` when no attempt passed the gates; `null` with a winner.
    pub diagnostic: Option<Diagnostic>,
}

/// A validated attempt, ready to run.
struct Planned {
    name: String,
    request: ScriptRequest,
    timeout_ms: u64,
    source_sha256: String,
    config_sha256: Option<String>,
    used_script_path: bool,
}

/// What one attempt produced.
struct Ran {
    result: CpsatPythonResult,
    checker: Option<CheckerReport>,
}

fn cpu_count() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

impl Cpsat {
    /// Runs an experiment: validate all, run in a bounded pool, grade, rank.
    pub async fn experiment(
        &self,
        request: &ExperimentRequest,
        progress: &Progress,
        cancel: &CancellationToken,
    ) -> Result<CpsatPythonExperimentResult, ToolError> {
        progress.report(Stage::Validating, "validating every attempt");
        let started = std::time::Instant::now();
        let optimising = match request.objective_sense.as_deref() {
            None => false,
            Some("maximize" | "minimize") => true,
            Some(other) => {
                return Err(ToolError::invalid(format!(
                    "objective_sense must be \"maximize\", \"minimize\" or omitted, got {other:?}"
                )));
            }
        };
        let plan = {
            let request = request.clone();
            off_thread(move || plan(&request)).await?
        };
        let parallel = parallelism(request.max_parallel_attempts)?;
        let checker = match &request.checker {
            Some(source) => Some(Arc::new(
                ScriptSource::Inline(source.clone())
                    .prepare_checker_async()
                    .await?,
            )),
            None => None,
        };
        let checker_budget = match (request.checker_timeout_ms, &checker) {
            (Some(_), None) => {
                return Err(ToolError::invalid("checker_timeout_ms needs a checker"));
            }
            (Some(budget), Some(_)) => Some(budget),
            (None, _) => None,
        };
        check_budget(
            &plan,
            parallel,
            checker.is_some(),
            checker_budget.map(Budget::as_millis),
        )?;
        let python = self.python(cancel).await?;

        progress.report(
            Stage::Running,
            format!("running {} attempts, {parallel} at a time", plan.len()),
        );
        let pool = Arc::new(Semaphore::new(parallel));
        let mut running = tokio::task::JoinSet::new();
        for (index, attempt) in plan.iter().enumerate() {
            let service = self.clone();
            let script = attempt.request.clone();
            let pool = pool.clone();
            let checker = checker.clone();
            let python = python.clone();
            let problem = request.problem.clone();
            let checker_budget = checker_budget.unwrap_or(attempt.request.timeout_ms);
            let token = cancel.clone();
            running.spawn(async move {
                let _slot = pool.acquire_owned().await;
                let ran = run_attempt(
                    &service,
                    &script,
                    checker.as_deref(),
                    &python,
                    problem.as_deref(),
                    checker_budget,
                    optimising,
                    &token,
                )
                .await;
                (index, ran)
            });
        }
        let mut outcomes: Vec<Option<Result<Ran, ToolError>>> = plan.iter().map(|_| None).collect();
        while let Some(joined) = running.join_next().await {
            if let Ok((index, ran)) = joined
                && let Some(slot) = outcomes.get_mut(index)
            {
                *slot = Some(ran);
            }
        }
        if cancel.is_cancelled() {
            return Err(ToolError::new(
                Category::Cancelled,
                "the experiment was cancelled; every child was stopped",
            ));
        }
        progress.report(Stage::Parsing, "ranking the attempts");
        let mut rows = Vec::new();
        let mut runs = Vec::new();
        for (index, (attempt, outcome)) in plan.iter().zip(outcomes).enumerate() {
            let ran = match outcome {
                Some(Ok(ran)) => Some(ran),
                Some(Err(error)) => {
                    rows.push(failed_row(index, attempt, error.to_string()));
                    runs.push(None);
                    continue;
                }
                None => None,
            };
            let Some(ran) = ran else {
                rows.push(failed_row(
                    index,
                    attempt,
                    "the attempt did not finish".to_owned(),
                ));
                runs.push(None);
                continue;
            };
            rows.push(row(index, attempt, &ran, optimising, checker.is_some()));
            runs.push(Some(ran));
        }
        let winner_index = rank(&rows, request.objective_sense.as_deref());
        let mut warnings = oversubscription(&plan, parallel);
        let (winner, winner_checker) = match winner_index
            .and_then(|index| runs.get_mut(index))
            .and_then(Option::take)
        {
            Some(mut ran) => {
                if !request.include_winner_stdout {
                    ran.result.stdout = String::new();
                }
                warnings.push(REPRODUCIBILITY.to_owned());
                (Some(ran.result), ran.checker)
            }
            None => (None, None),
        };
        let diagnostic = winner.is_none().then(|| {
            Diagnostic::new(
                Category::NoWinner,
                "no attempt passed the acceptance gates; see each attempt's rejection",
            )
        });
        let result = CpsatPythonExperimentResult {
            status: RaceStatus::of(&winner),
            winner_name: winner_index
                .and_then(|index| rows.get(index))
                .map(|row| row.name.clone()),
            winner_index: winner.as_ref().and(winner_index),
            winner,
            winner_checker,
            source_sha256: rows.iter().map(|row| row.source_sha256.clone()).collect(),
            attempts: rows,
            elapsed_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            objective_sense: request.objective_sense.clone(),
            selection_policy: if optimising {
                OPTIMISATION_POLICY
            } else {
                FEASIBILITY_POLICY
            }
            .to_owned(),
            checker_sha256: checker.as_ref().map(|checker| checker.sha256.clone()),
            problem_sha256: request
                .problem
                .as_deref()
                .map(|problem| sha256_hex(problem.as_bytes())),
            warnings,
            diagnostic,
        };
        progress.report(
            Stage::Complete,
            format!("experiment finished: {}", result.status),
        );
        Ok(result)
    }
}

/// Validates every attempt and resolves names, timeouts and hashes.
fn plan(request: &ExperimentRequest) -> Result<Vec<Planned>, ToolError> {
    if request.attempts.is_empty() {
        return Err(ToolError::invalid(
            "attempts must list at least one attempt",
        ));
    }
    let mut plan: Vec<Planned> = Vec::new();
    for (index, attempt) in request.attempts.iter().enumerate() {
        let name = attempt.name_at(index);
        let at = |problem: &str| attempt_error(index, &name, problem);
        if plan.iter().any(|planned| planned.name == name) {
            return Err(at(
                "the name is used twice; every attempt needs a unique name",
            ));
        }
        let source = match (&attempt.source, &attempt.script_path) {
            (Some(source), None) => {
                if attempt.args.is_some() {
                    return Err(at("args apply to script_path attempts only"));
                }
                ScriptSource::Inline(source.clone())
            }
            (None, Some(path)) => ScriptSource::File(path.clone()),
            _ => return Err(at("set exactly one of source or script_path")),
        };
        validate_seed(attempt.seed).map_err(|error| at(&error.0.message))?;
        // Omitted, an attempt's budget is default_script_timeout_ms.
        let timeout = attempt
            .script_timeout_ms
            .unwrap_or(request.default_script_timeout_ms);
        let script = ScriptRequest {
            source,
            args: attempt.args.clone().unwrap_or_default(),
            seed: attempt.seed,
            config: attempt.config.clone(),
            timeout_ms: timeout,
        };
        let prepared = script.prepare().map_err(|error| at(&error.0.message))?;
        let config_sha256 = config_sha256(attempt.config.as_ref());
        plan.push(Planned {
            used_script_path: attempt.script_path.is_some(),
            source_sha256: prepared.sha256.clone(),
            name,
            request: script,
            timeout_ms: timeout.as_millis(),
            config_sha256,
        });
    }
    Ok(plan)
}

/// The canonical hash of a replay config (keys sorted, compact); `None`
/// for no config or `{}`.
pub fn config_sha256(config: Option<&Map<String, Value>>) -> Option<String> {
    config
        .filter(|config| !config.is_empty())
        .map(|config| sha256_hex(Value::Object(config.clone()).to_string().as_bytes()))
}

fn parallelism(requested: i64) -> Result<usize, ToolError> {
    let cap = cpu_count().min(4);
    match usize::try_from(requested) {
        Ok(parallel) if (1..=cap).contains(&parallel) => Ok(parallel),
        _ => Err(ToolError::invalid(format!(
            "max_parallel_attempts must be between 1 and {cap} (min of this machine's {} CPUs and 4), got {requested}",
            cpu_count()
        ))),
    }
}

/// Refuses a plan whose projected wall clock exceeds the cap.
fn check_budget(
    plan: &[Planned],
    parallel: usize,
    checked: bool,
    checker_ms: Option<u64>,
) -> Result<(), ToolError> {
    let cost = |attempt: &Planned| {
        let script = attempt.timeout_ms + CHILD_OVERHEAD_MS;
        let checker = if checked {
            checker_ms.unwrap_or(attempt.timeout_ms) + CHILD_OVERHEAD_MS
        } else {
            0
        };
        script + checker
    };
    let total: u64 = plan
        .chunks(parallel)
        .map(|batch| batch.iter().map(cost).max().unwrap_or(0))
        .sum();
    if total > EXPERIMENT_BUDGET_MS {
        return Err(ToolError::invalid(format!(
            "the experiment could take up to {total} ms ({} attempts, {parallel} at a time, each child charged its timeout plus {CHILD_OVERHEAD_MS} ms) — over the {EXPERIMENT_BUDGET_MS} ms cap of a synchronous call; use fewer attempts or shorter timeouts, raise max_parallel_attempts, or run long attempts as background jobs",
            plan.len()
        )));
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
async fn run_attempt(
    service: &Cpsat,
    script: &ScriptRequest,
    checker: Option<&PreparedChecker>,
    python: &std::path::Path,
    problem: Option<&str>,
    checker_budget: Budget,
    optimising: bool,
    cancel: &CancellationToken,
) -> Result<Ran, ToolError> {
    let result = service.run(script, &Progress::none(), cancel).await?;
    let checker = match (checker, base_gate(&result, optimising)) {
        (Some(checker), Ok(solution)) => {
            let graded = Graded {
                problem,
                solution,
                objective: result.objective.as_ref(),
                solver_status: result.status,
            };
            Some(run_checker(python, checker, graded, checker_budget, cancel).await?)
        }
        _ => None,
    };
    Ok(Ran { result, checker })
}

/// Base acceptance: a usable answer (and a finite objective when optimising).
fn base_gate(result: &CpsatPythonResult, optimising: bool) -> Result<&Map<String, Value>, String> {
    let solution = result.checkable()?;
    if optimising && result.objective.as_ref().and_then(Number::as_f64).is_none() {
        let unread = result
            .diagnostic
            .as_ref()
            .is_some_and(|d| d.category == crate::diagnostics::Category::ObjectiveUnread);
        return Err(if unread {
            "no numeric objective to rank: the solvergate helper could not read it (objective_unread); pass model= to solvergate.report".to_owned()
        } else {
            "no numeric objective to rank".to_owned()
        });
    }
    Ok(solution)
}

fn row(
    index: usize,
    attempt: &Planned,
    ran: &Ran,
    optimising: bool,
    checked: bool,
) -> ExperimentAttempt {
    let result = &ran.result;
    let rejection = match (base_gate(result, optimising), &ran.checker) {
        (Err(reason), _) => Some(reason),
        (Ok(_), Some(report)) => report.refusal(),
        (Ok(_), None) if checked => Some("the checker did not run".to_owned()),
        _ => None,
    };
    let stderr_tail = (result.status == ScriptStatus::Error).then(|| tail(&result.stderr));
    ExperimentAttempt {
        index,
        name: attempt.name.clone(),
        status: result.status,
        objective: result.objective.clone(),
        best_objective_bound: result.best_objective_bound.clone(),
        accepted: rejection.is_none(),
        rejection,
        checker_status: ran.checker.as_ref().map(|report| report.status),
        checker_verdict: ran.checker.as_ref().map(|report| report.verdict),
        duration_ms: result.duration_ms,
        source_sha256: attempt.source_sha256.clone(),
        config_sha256: attempt.config_sha256.clone(),
        seed: attempt.request.seed,
        script_timeout_ms: attempt.timeout_ms,
        timed_out: result.timed_out,
        truncated: result.truncated,
        used_script_path: attempt.used_script_path,
        message: result
            .diagnostic
            .as_ref()
            .map(|diagnostic| diagnostic.message.clone()),
        stderr_tail,
    }
}

fn failed_row(index: usize, attempt: &Planned, message: String) -> ExperimentAttempt {
    ExperimentAttempt {
        index,
        name: attempt.name.clone(),
        status: ScriptStatus::Error,
        objective: None,
        best_objective_bound: None,
        accepted: false,
        rejection: Some(message.clone()),
        checker_status: None,
        checker_verdict: None,
        duration_ms: 0,
        source_sha256: attempt.source_sha256.clone(),
        config_sha256: attempt.config_sha256.clone(),
        seed: attempt.request.seed,
        script_timeout_ms: attempt.timeout_ms,
        timed_out: false,
        truncated: false,
        used_script_path: attempt.used_script_path,
        message: Some(message),
        stderr_tail: None,
    }
}

fn tail(text: &str) -> String {
    if text.len() <= STDERR_TAIL_BYTES {
        return text.to_owned();
    }
    let mut start = text.len() - STDERR_TAIL_BYTES;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    text[start..].to_owned()
}

fn status_strength(status: ScriptStatus) -> u8 {
    match status {
        ScriptStatus::Optimal => 0,
        ScriptStatus::Feasible => 1,
        ScriptStatus::Timeout
        | ScriptStatus::Infeasible
        | ScriptStatus::Unknown
        | ScriptStatus::Error => 2,
    }
}

/// The winner among accepted rows, by the stated policy.
fn rank(rows: &[ExperimentAttempt], sense: Option<&str>) -> Option<usize> {
    let objective = |row: &ExperimentAttempt| {
        row.objective
            .as_ref()
            .and_then(Number::as_f64)
            .unwrap_or(0.0)
    };
    rows.iter()
        .filter(|row| row.accepted)
        .min_by(|a, b| {
            let by_objective = match sense {
                Some("maximize") => objective(b).total_cmp(&objective(a)),
                Some("minimize") => objective(a).total_cmp(&objective(b)),
                _ => std::cmp::Ordering::Equal,
            };
            by_objective
                .then(status_strength(a.status).cmp(&status_strength(b.status)))
                .then(a.duration_ms.cmp(&b.duration_ms))
                .then(a.index.cmp(&b.index))
        })
        .map(|row| row.index)
}

/// Advice when cooperative `num_workers` configs oversubscribe the CPUs.
fn oversubscription(plan: &[Planned], parallel: usize) -> Vec<String> {
    let cpus = cpu_count();
    plan.iter()
        .filter_map(|attempt| {
            let workers = attempt.request.config.as_ref()?.get("num_workers")?.as_u64()?;
            let demand = workers.saturating_mul(parallel as u64);
            (demand > cpus as u64).then(|| {
                format!(
                    "{}: num_workers {workers} × max_parallel_attempts {parallel} = {demand} threads on {cpus} CPUs; oversubscribed runs are slower and less stable",
                    attempt.name
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unread_objective_is_named_in_the_rejection() {
        let unread = "{\"status\": \"optimal\", \"objective\": null, \"solution\": {\"x\": 0}, \"objective_unread\": \"not seen\"}\n";
        let plain = "{\"status\": \"optimal\", \"objective\": null, \"solution\": {\"x\": 0}}\n";
        let result = |stdout: &str| {
            super::super::verdict::script_result(
                crate::exec::RunOutput {
                    ending: crate::exec::Ending::Exited,
                    return_code: Some(0),
                    truncated: false,
                    elapsed_ms: 5,
                    stdout: stdout.to_owned(),
                    stderr: String::new(),
                    sandbox: None,
                    late_output_bytes: 0,
                    escaped: 0,
                    breach: None,
                },
                1000,
            )
        };
        let reason = base_gate(&result(unread), true).unwrap_err();
        assert!(
            reason.contains("objective_unread") && reason.contains("model="),
            "{reason}"
        );
        assert_eq!(
            base_gate(&result(plain), true).unwrap_err(),
            "no numeric objective to rank"
        );
        assert!(base_gate(&result(unread), false).is_ok());
    }

    fn attempt_row(
        index: usize,
        status: ScriptStatus,
        objective: Option<i64>,
        duration_ms: u64,
        accepted: bool,
    ) -> ExperimentAttempt {
        ExperimentAttempt {
            index,
            name: format!("attempt-{index}"),
            status,
            objective: objective.map(Number::from),
            best_objective_bound: None,
            accepted,
            rejection: None,
            checker_status: None,
            checker_verdict: None,
            duration_ms,
            source_sha256: String::new(),
            config_sha256: None,
            seed: None,
            script_timeout_ms: 1000,
            timed_out: false,
            truncated: false,
            used_script_path: false,
            message: None,
            stderr_tail: None,
        }
    }

    #[test]
    fn ranking_follows_the_policy() {
        let rows = vec![
            attempt_row(0, ScriptStatus::Feasible, Some(10), 50, true),
            attempt_row(1, ScriptStatus::Optimal, Some(10), 90, true),
            attempt_row(2, ScriptStatus::Optimal, Some(12), 10, false),
            attempt_row(3, ScriptStatus::Timeout, Some(11), 5, true),
        ];
        assert_eq!(
            rank(&rows, Some("maximize")),
            Some(3),
            "best objective first"
        );
        assert_eq!(
            rank(&rows, Some("minimize")),
            Some(1),
            "tie on 10: optimal beats feasible"
        );
        assert_eq!(
            rank(&rows, None),
            Some(1),
            "feasibility: status, then duration"
        );
        let tied = vec![
            attempt_row(0, ScriptStatus::Optimal, Some(1), 7, true),
            attempt_row(1, ScriptStatus::Optimal, Some(1), 7, true),
        ];
        assert_eq!(
            rank(&tied, Some("minimize")),
            Some(0),
            "attempt order breaks the last tie"
        );
        assert_eq!(
            rank(&[attempt_row(0, ScriptStatus::Error, None, 1, false)], None),
            None
        );
    }

    #[test]
    fn parallelism_is_bounded() {
        assert!(parallelism(0).is_err());
        assert_eq!(parallelism(1).unwrap(), 1);
        assert!(
            parallelism(99)
                .unwrap_err()
                .to_string()
                .contains("max_parallel_attempts")
        );
    }
}
