//! Portfolio races: formulations × solvers × seeds of one instance, run as
//! ordinary solve jobs, one winner.
//!
//! Better than polling: a coordinator task watches the attempts; the moment
//! one reaches a decisive verdict it cancels the rest (queued ones are
//! dropped, running ones have their process trees killed), whether or not
//! anyone polls. `get_portfolio_job` only reads.
//!
//! Winner policy: the first decisive verdict (optimal, satisfied,
//! unsatisfiable, unbounded, unsat_or_unbounded) wins; otherwise the best
//! terminal attempt — a timeout or error with a solution, then unknown, then
//! a timeout without one, then an error — the earlier attempt on a tie.

use std::collections::BTreeSet;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Number;
use sha2::{Digest, Sha256};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use std::sync::{Arc, OnceLock};

use super::registry::{JobRegistry, JobSnapshot, JobState, Outcome, Start};
use super::solve::{SolveJobMeta, SolveJobs, full, lifecycle_diagnostic, timestamp, unknown_job};
use crate::diagnostics::{Category, Diagnostic, ToolError};
use crate::minizinc::{SolveControls, SolveRequest, SolveResult, Sources, validate_timeout};
use crate::settings::JobBounds;

/// The policy, as the result states it.
pub const SELECTION_POLICY: &str = "the first attempt with a decisive verdict (optimal, satisfied, unsatisfiable, unbounded, unsat_or_unbounded) wins and the others are cancelled at once; if none is decisive, the best terminal attempt wins: a timeout or error with a solution, then unknown, then a timeout without a solution, then an error; ties go to the earlier attempt";

/// A race as submitted.
#[derive(Debug, Clone)]
pub struct PortfolioRequest {
    /// Formulations of the same instance.
    pub models: Vec<String>,
    pub solvers: Vec<String>,
    pub data: Option<String>,
    pub checker: Option<String>,
    pub seed_count: i64,
    pub seeds: Option<Vec<i64>>,
    pub per_attempt_timeout_ms: i64,
    pub free_search: bool,
    pub parallel: Option<i64>,
    pub all_solutions: bool,
    pub num_solutions: Option<i64>,
}

/// The search configuration every attempt shared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SharedControls {
    pub free_search: bool,
    pub parallel: Option<i64>,
    pub all_solutions: bool,
    pub num_solutions: Option<i64>,
}

/// One row of the attempts table.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct PortfolioAttempt {
    /// Position in the plan (model index varies fastest).
    pub index: usize,
    /// Which of `models` this attempt ran.
    pub model_index: usize,
    pub solver: String,
    /// `null` for an unseeded attempt.
    pub seed: Option<i64>,
    /// The attempt's solve job (also visible in `list_solve_jobs`).
    pub job_id: String,
    pub state: JobState,
    /// The solve's status, when it produced a result.
    pub status: Option<String>,
    pub objective: Option<Number>,
    pub checker_status: Option<String>,
    pub elapsed_ms: u64,
    pub message: Option<String>,
}

/// What a race decided.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct PortfolioSolveResult {
    /// `winner` or `no_winner` (no attempt produced a result).
    pub status: String,
    /// Index into `attempts` of the winner.
    pub winner_index: Option<usize>,
    /// The winning solve; its own `status` says whether the win was decisive.
    pub winner: Option<SolveResult>,
    pub attempts: Vec<PortfolioAttempt>,
    /// SHA256 of each formulation, aligned with `models`.
    pub models_sha256: Vec<String>,
    /// SHA256 of `data`; `null` when no data was given.
    pub data_sha256: Option<String>,
    pub checker_sha256: Option<String>,
    pub solve_controls: SharedControls,
    pub selection_policy: String,
    pub elapsed_ms: u64,
}

/// What a portfolio job carries besides its result.
#[derive(Debug, Clone)]
pub struct PortfolioMeta {
    pub per_attempt_timeout_ms: i64,
    pub attempt_jobs: Vec<String>,
}

/// One portfolio job as `get_portfolio_job` reports it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct PortfolioJobStatus {
    pub job_id: String,
    /// `running`, `succeeded`, `failed` or `cancelled`.
    pub state: JobState,
    pub per_attempt_timeout_ms: i64,
    /// Solve job ids of the attempts, in plan order.
    pub attempt_job_ids: Vec<String>,
    pub submitted_at: String,
    pub finished_at: Option<String>,
    pub elapsed_ms: u64,
    /// Present exactly when `state` is `succeeded`.
    pub result: Option<PortfolioSolveResult>,
    pub message: Option<String>,
    pub diagnostic: Option<Diagnostic>,
}

/// `list_portfolio_jobs`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct PortfolioJobList {
    pub jobs: Vec<PortfolioJobStatus>,
}

/// One planned attempt.
#[derive(Debug, Clone)]
struct Planned {
    model_index: usize,
    solver: String,
    seed: Option<i64>,
}

/// Portfolio races on top of the solve jobs.
#[derive(Clone)]
pub struct Portfolios {
    solve_jobs: SolveJobs,
    registry: JobRegistry<PortfolioSolveResult, PortfolioMeta>,
}

fn sha256(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

impl Portfolios {
    pub fn new(solve_jobs: SolveJobs, bounds: JobBounds, shutdown: CancellationToken) -> Self {
        // Coordinators hold no process; the attempts are bounded by the
        // solve registry. Only retention applies here.
        let coordinator_bounds = JobBounds {
            max_running: usize::MAX / 2,
            max_queued: 0,
            max_retained_terminal: bounds.max_retained_terminal,
        };
        Portfolios {
            solve_jobs,
            registry: JobRegistry::new("portfolio job", coordinator_bounds, shutdown),
        }
    }

    /// Validates the whole plan, admits every attempt or none, then starts
    /// the coordinator.
    pub async fn submit(
        &self,
        request: PortfolioRequest,
        cancel: &CancellationToken,
    ) -> Result<PortfolioJobStatus, ToolError> {
        let plan = self.plan(&request, cancel).await?;
        let controls = SharedControls {
            free_search: request.free_search,
            parallel: request.parallel,
            all_solutions: request.all_solutions,
            num_solutions: request.num_solutions,
        };
        // Filled once the attempts are admitted: a decisive attempt drops its
        // queued siblings itself, before its slot can start one of them.
        let siblings: Arc<OnceLock<Vec<String>>> = Arc::new(OnceLock::new());
        let attempts: Vec<_> = plan
            .iter()
            .enumerate()
            .map(|(index, attempt)| {
                let solve = SolveRequest {
                    sources: Sources::Inline {
                        model: request.models[attempt.model_index].clone(),
                        data: request.data.clone(),
                        checker: request.checker.clone(),
                    },
                    solver: Some(attempt.solver.clone()),
                    timeout_ms: request.per_attempt_timeout_ms,
                    controls: SolveControls {
                        free_search: request.free_search,
                        parallel: request.parallel,
                        random_seed: attempt.seed,
                        all_solutions: request.all_solutions,
                        num_solutions: request.num_solutions,
                    },
                };
                let meta = SolveJobMeta {
                    timeout_ms: request.per_attempt_timeout_ms,
                };
                let work = self.solve_jobs.start(solve);
                (
                    meta,
                    self.decisive_drops_siblings(work, index, siblings.clone()),
                )
            })
            .collect();
        let admitted = self
            .solve_jobs
            .registry()
            .submit_all(attempts)
            .map_err(|error| {
                ToolError::invalid(format!(
                    "the plan has {} attempts (models × solvers × seeds) and {error}",
                    plan.len()
                ))
            })?;
        let attempt_jobs: Vec<String> = admitted.into_iter().map(|job| job.id).collect();
        let _ = siblings.set(attempt_jobs.clone());
        let race = Race {
            solve_jobs: self.solve_jobs.registry().clone(),
            plan,
            attempt_jobs: attempt_jobs.clone(),
            models_sha256: request.models.iter().map(|model| sha256(model)).collect(),
            data_sha256: request.data.as_deref().map(sha256),
            checker_sha256: request.checker.as_deref().map(sha256),
            controls,
        };
        let meta = PortfolioMeta {
            per_attempt_timeout_ms: request.per_attempt_timeout_ms,
            attempt_jobs: attempt_jobs.clone(),
        };
        let started = self.registry.submit(
            meta,
            Box::new(move |token: CancellationToken| Box::pin(race.run(token))),
        );
        match started {
            Ok(snapshot) => Ok(portfolio_status(snapshot)),
            Err(error) => {
                for id in &attempt_jobs {
                    self.solve_jobs.registry().request_cancel(id);
                }
                Err(full(error))
            }
        }
    }

    /// Wraps an attempt so that a decisive result cancels every sibling
    /// before the registry records it and frees the slot: queued siblings
    /// are dropped instead of started, running ones are killed.
    fn decisive_drops_siblings(
        &self,
        work: Start<SolveResult>,
        index: usize,
        siblings: Arc<OnceLock<Vec<String>>>,
    ) -> Start<SolveResult> {
        let registry = self.solve_jobs.registry().clone();
        Box::new(move |token: CancellationToken| {
            Box::pin(async move {
                let outcome = work(token).await;
                let decisive = matches!(&outcome, Outcome::Succeeded(result) if DECISIVE.contains(&result.status.as_str()));
                if decisive && let Some(ids) = siblings.get() {
                    for (sibling, id) in ids.iter().enumerate() {
                        if sibling != index {
                            registry.request_cancel(id);
                        }
                    }
                }
                outcome
            })
        })
    }

    /// Checks every rule before anything is admitted and lays out the
    /// attempts: seeds outermost, then solvers, the model index fastest.
    async fn plan(
        &self,
        request: &PortfolioRequest,
        cancel: &CancellationToken,
    ) -> Result<Vec<Planned>, ToolError> {
        if request.models.is_empty() {
            return Err(ToolError::invalid(
                "models must list at least one formulation",
            ));
        }
        if let Some(index) = request
            .models
            .iter()
            .position(|model| model.trim().is_empty())
        {
            return Err(ToolError::invalid(format!("models[{index}] is empty")));
        }
        if request.solvers.is_empty() {
            return Err(ToolError::invalid("solvers must list at least one solver"));
        }
        if request
            .checker
            .as_ref()
            .is_some_and(|checker| checker.trim().is_empty())
        {
            return Err(ToolError::invalid(
                "checker must not be empty; omit it for no checker",
            ));
        }
        validate_timeout(request.per_attempt_timeout_ms).map_err(|error| {
            ToolError::invalid(
                error
                    .0
                    .message
                    .replace("timeout_ms", "per_attempt_timeout_ms"),
            )
        })?;
        let seeds: Vec<Option<i64>> = match &request.seeds {
            Some(_) if request.seed_count != 1 => {
                return Err(ToolError::invalid(
                    "give either seeds or seed_count, not both: with an explicit seeds list, leave seed_count at 1",
                ));
            }
            Some(seeds) if seeds.is_empty() => {
                return Err(ToolError::invalid(
                    "seeds must not be empty; omit it for one unseeded run",
                ));
            }
            Some(seeds) => {
                let distinct: BTreeSet<_> = seeds.iter().collect();
                if distinct.len() != seeds.len() {
                    return Err(ToolError::invalid("seeds must not repeat a value"));
                }
                seeds.iter().copied().map(Some).collect()
            }
            None if request.seed_count < 1 => {
                return Err(ToolError::invalid(format!(
                    "seed_count must be at least 1, got {}",
                    request.seed_count
                )));
            }
            None if request.seed_count == 1 => vec![None],
            None => (1..=request.seed_count).map(Some).collect(),
        };
        let seeded = seeds.iter().any(Option::is_some);
        let mut solvers = Vec::new();
        for name in &request.solvers {
            let solver = self
                .solve_jobs
                .minizinc()
                .select_solver(Some(name), cancel)
                .await?;
            let gated = SolveControls {
                free_search: request.free_search,
                parallel: request.parallel,
                random_seed: seeded.then_some(1),
                all_solutions: request.all_solutions,
                num_solutions: request.num_solutions,
            };
            gated.validate()?;
            gated.gate(solver)?;
            if solvers.contains(&solver.id) {
                return Err(ToolError::invalid(format!(
                    "solvers names {} twice ({name:?} is the same solver)",
                    solver.id
                )));
            }
            solvers.push(solver.id.clone());
        }
        let mut plan = Vec::new();
        for seed in &seeds {
            for solver in &solvers {
                for model_index in 0..request.models.len() {
                    plan.push(Planned {
                        model_index,
                        solver: solver.clone(),
                        seed: *seed,
                    });
                }
            }
        }
        Ok(plan)
    }

    pub fn get(&self, id: &str) -> Result<PortfolioJobStatus, ToolError> {
        self.registry
            .get(id)
            .map(portfolio_status)
            .ok_or_else(|| self.unknown(id))
    }

    /// Stops the race and every attempt; waits until they are gone.
    pub async fn cancel(&self, id: &str) -> Result<PortfolioJobStatus, ToolError> {
        self.registry
            .cancel(id)
            .await
            .map(portfolio_status)
            .ok_or_else(|| self.unknown(id))
    }

    pub fn list(&self) -> PortfolioJobList {
        PortfolioJobList {
            jobs: self
                .registry
                .list()
                .into_iter()
                .map(portfolio_status)
                .collect(),
        }
    }

    pub async fn shutdown(&self) {
        self.registry.shutdown().await;
    }

    fn unknown(&self, id: &str) -> ToolError {
        unknown_job(
            "portfolio job",
            id,
            self.registry.bounds().max_retained_terminal,
        )
    }
}

/// Everything the coordinator needs, moved into its task.
struct Race {
    solve_jobs: JobRegistry<SolveResult, SolveJobMeta>,
    plan: Vec<Planned>,
    attempt_jobs: Vec<String>,
    models_sha256: Vec<String>,
    data_sha256: Option<String>,
    checker_sha256: Option<String>,
    controls: SharedControls,
}

impl Race {
    async fn run(self, token: CancellationToken) -> Outcome<PortfolioSolveResult> {
        let started = std::time::Instant::now();
        let mut pending = JoinSet::new();
        for (index, id) in self.attempt_jobs.iter().enumerate() {
            let registry = self.solve_jobs.clone();
            let id = id.clone();
            pending.spawn(async move { (index, registry.wait(&id).await) });
        }
        let mut decisive = None;
        loop {
            tokio::select! {
                () = token.cancelled() => {
                    self.stop_all(None).await;
                    return Outcome::Cancelled;
                }
                finished = pending.join_next() => {
                    let Some(finished) = finished else { break };
                    let Ok((index, Some(snapshot))) = finished else { continue };
                    if is_decisive(&snapshot) {
                        decisive = Some(index);
                        break;
                    }
                }
            }
        }
        pending.abort_all();
        self.stop_all(decisive).await;
        let snapshots: Vec<_> = self
            .attempt_jobs
            .iter()
            .map(|id| self.solve_jobs.get(id))
            .collect();
        let winner_index = decisive.or_else(|| best_of_the_rest(&snapshots));
        let attempts = self.table(&snapshots);
        let winner = winner_index
            .and_then(|index| snapshots.get(index))
            .and_then(|snapshot| snapshot.as_ref())
            .and_then(|snapshot| snapshot.result.clone());
        Outcome::Succeeded(PortfolioSolveResult {
            status: if winner.is_some() {
                "winner"
            } else {
                "no_winner"
            }
            .to_owned(),
            winner_index: winner.as_ref().and(winner_index),
            winner,
            attempts,
            models_sha256: self.models_sha256,
            data_sha256: self.data_sha256,
            checker_sha256: self.checker_sha256,
            solve_controls: self.controls,
            selection_policy: SELECTION_POLICY.to_owned(),
            elapsed_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        })
    }

    /// Cancels every attempt but `keep` at once, then waits for them all.
    async fn stop_all(&self, keep: Option<usize>) {
        let losers: Vec<&String> = self
            .attempt_jobs
            .iter()
            .enumerate()
            .filter(|(index, _)| Some(*index) != keep)
            .map(|(_, id)| id)
            .collect();
        for id in &losers {
            self.solve_jobs.request_cancel(id);
        }
        for id in losers {
            self.solve_jobs.wait(id).await;
        }
    }

    fn table(
        &self,
        snapshots: &[Option<JobSnapshot<SolveResult, SolveJobMeta>>],
    ) -> Vec<PortfolioAttempt> {
        self.plan
            .iter()
            .zip(&self.attempt_jobs)
            .zip(snapshots)
            .enumerate()
            .map(|(index, ((planned, job_id), snapshot))| {
                let result = snapshot.as_ref().and_then(|s| s.result.as_ref());
                PortfolioAttempt {
                    index,
                    model_index: planned.model_index,
                    solver: planned.solver.clone(),
                    seed: planned.seed,
                    job_id: job_id.clone(),
                    state: snapshot.as_ref().map_or(JobState::Cancelled, |s| s.state),
                    status: result.map(|r| r.status.clone()),
                    objective: result.and_then(|r| r.objective.clone()),
                    checker_status: result
                        .and_then(|r| r.checker.as_ref())
                        .map(|c| c.status.clone()),
                    elapsed_ms: snapshot.as_ref().map_or(0, |s| s.elapsed_ms),
                    message: snapshot
                        .as_ref()
                        .and_then(|s| s.message.clone())
                        .or_else(|| {
                            snapshot
                                .is_none()
                                .then(|| "evicted from the solve registry".to_owned())
                        }),
                }
            })
            .collect()
    }
}

/// Verdicts that end a race.
const DECISIVE: &[&str] = &[
    "optimal",
    "satisfied",
    "unsatisfiable",
    "unbounded",
    "unsat_or_unbounded",
];

fn is_decisive(snapshot: &JobSnapshot<SolveResult, SolveJobMeta>) -> bool {
    snapshot
        .result
        .as_ref()
        .is_some_and(|result| DECISIVE.contains(&result.status.as_str()))
}

/// Rank of a non-decisive attempt; lower is better, `None` is not eligible.
fn rank(snapshot: &JobSnapshot<SolveResult, SolveJobMeta>) -> Option<u8> {
    let result = snapshot.result.as_ref()?;
    let has_solution = result.solution.is_some();
    match result.status.as_str() {
        "timeout" | "error" if has_solution => Some(0),
        "unknown" => Some(1),
        "timeout" => Some(2),
        "error" => Some(3),
        _ => None,
    }
}

fn best_of_the_rest(snapshots: &[Option<JobSnapshot<SolveResult, SolveJobMeta>>]) -> Option<usize> {
    snapshots
        .iter()
        .enumerate()
        .filter_map(|(index, snapshot)| Some((rank(snapshot.as_ref()?)?, index)))
        .min()
        .map(|(_, index)| index)
}

fn portfolio_status(
    snapshot: JobSnapshot<PortfolioSolveResult, PortfolioMeta>,
) -> PortfolioJobStatus {
    let diagnostic =
        lifecycle_diagnostic(snapshot.state, snapshot.message.as_deref()).or_else(|| {
            snapshot
                .result
                .as_ref()
                .and_then(|result| match &result.winner {
                    None => Some(Diagnostic::new(
                        Category::NoWinner,
                        "no attempt produced a result (all failed or were cancelled)",
                    )),
                    Some(winner) => winner.diagnostic.clone(),
                })
        });
    PortfolioJobStatus {
        job_id: snapshot.id,
        state: snapshot.state,
        per_attempt_timeout_ms: snapshot.meta.per_attempt_timeout_ms,
        attempt_job_ids: snapshot.meta.attempt_jobs,
        submitted_at: timestamp(snapshot.submitted_at),
        finished_at: snapshot.finished_at.map(timestamp),
        elapsed_ms: snapshot.elapsed_ms,
        result: snapshot.result,
        message: snapshot.message,
        diagnostic,
    }
}
