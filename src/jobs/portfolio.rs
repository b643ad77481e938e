//! Portfolio races: formulations × solvers × seeds of one instance, run as
//! ordinary solve jobs, one winner.
//!
//! A coordinator task watches the attempts' completions (subscribed at
//! admission, so retention cannot take a result away); the moment one
//! reaches a decisive verdict it cancels the rest (queued ones are dropped,
//! running ones have their process trees killed), whether or not anyone
//! polls. `get_portfolio_job` only reads.
//!
//! Winner policies ([`WinnerPolicy`]):
//! - `best_objective` (default): `optimal`, `unsatisfiable`, `unbounded` and
//!   `unsat_or_unbounded` are decisive; `satisfied` is decisive only on a
//!   satisfaction model. On an optimisation model an attempt stopped by its
//!   budget holds an incumbent, not an answer, so the race runs until every
//!   attempt has ended and the best objective wins.
//! - `first_decisive` (the reference's rule): `satisfied` is decisive too,
//!   whatever the model.
//!
//! Without a decisive attempt the best terminal attempt wins; ties go to the
//! earlier attempt in plan order.
//!
//! The plan is sized with checked arithmetic and compared with the solve
//! registry's free capacity before anything per attempt is built; the
//! sources are written once to a temp dir every attempt shares.

use std::collections::BTreeSet;
use std::sync::{Arc, OnceLock};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Number;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::backend::{SlurmPlacement, placement_of};
use super::registry::{Completion, JobRegistry, JobSnapshot, JobState, Outcome, Start};
use super::solve::{SolveJobMeta, SolveJobs};
use super::status::{BackgroundJobs, JobKind, JobLife, ResultStatus, full};
pub use super::winner::WinnerPolicy;
use super::winner::{pick_winner, refusal};
use crate::budget::Budget;
use crate::diagnostics::{Category, Diagnostic, ToolError};
use crate::minizinc::{
    CheckerStatus, SolveControls, SolveRequest, SolveResult, SolveStatus, Sources,
    prepare_inline_models,
};
use crate::settings::JobBounds;
use crate::verdict::RaceStatus;
use crate::verdict::Verdict;

/// The most seeds one race may use (`seed_count` or `seeds`).
pub const MAX_SEEDS: usize = 1000;

/// A race as submitted.
#[derive(Debug, Clone)]
pub struct PortfolioRequest {
    /// Formulations of the same instance.
    pub models: Vec<String>,
    /// Solvers to race, as the client named them (ids, short names or tags);
    /// each must resolve to a different solver.
    pub solvers: Vec<String>,
    /// Inline `.dzn` data shared by every attempt.
    pub data: Option<String>,
    /// A MiniZinc checker shared by every attempt; must not be blank.
    pub checker: Option<String>,
    /// 1: each (model, solver) runs once unseeded; n > 1: with seeds 1..=n.
    /// Must stay 1 when `seeds` is given.
    pub seed_count: i64,
    /// Exact seeds instead of `seed_count` (1 to [`MAX_SEEDS`] values, no
    /// repeats).
    pub seeds: Option<Vec<i64>>,
    /// Each attempt's budget, checked where the request was made.
    pub per_attempt_timeout_ms: Budget,
    /// `-f` for every attempt.
    pub free_search: bool,
    /// `-p <n>` for every attempt.
    pub parallel: Option<i64>,
    /// `-a` for every attempt.
    pub all_solutions: bool,
    /// `-n <n>` for every attempt.
    pub num_solutions: Option<i64>,
    /// How the race picks its winner.
    pub winner_policy: WinnerPolicy,
}

/// The search configuration every attempt shared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SharedControls {
    /// `-f` was passed to every attempt.
    pub free_search: bool,
    /// `-p <n>` given to every attempt; `None`: not passed.
    pub parallel: Option<i64>,
    /// `-a` was passed to every attempt.
    pub all_solutions: bool,
    /// `-n <n>` given to every attempt; `None`: not passed.
    pub num_solutions: Option<i64>,
}

/// One row of the attempts table.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct PortfolioAttempt {
    /// Position in the plan (model index varies fastest).
    pub index: usize,
    /// Which of `models` this attempt ran.
    pub model_index: usize,
    /// Canonical id of the solver this attempt ran.
    pub solver: String,
    /// `null` for an unseeded attempt.
    pub seed: Option<i64>,
    /// The attempt's solve job (also visible in `list_solve_jobs`).
    pub job_id: String,
    /// The solve job's state when the race ended (`failed` if its end was never
    /// reported).
    pub state: JobState,
    /// The solve's status, when it produced a result.
    pub status: Option<SolveStatus>,
    /// The attempt's final objective, when it found a solution.
    pub objective: Option<Number>,
    /// The MiniZinc checker's status on this attempt's solve, when it had a
    /// checker.
    pub checker_status: Option<CheckerStatus>,
    /// The checker's verdict on this attempt's solution, when it had a checker.
    pub checker_verdict: Option<Verdict>,
    /// Why its solution was refused (it never wins).
    pub refused: Option<String>,
    /// The attempt's running time in milliseconds; 0 if it never ran or its end
    /// was lost.
    pub elapsed_ms: u64,
    /// Why the attempt failed or was cancelled (or that its outcome was lost).
    pub message: Option<String>,
    /// Slurm backend only.
    pub slurm: Option<SlurmPlacement>,
}

/// What a race decided.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct PortfolioSolveResult {
    /// `winner` or `no_winner` (no attempt produced a result the race
    /// could trust).
    pub status: RaceStatus,
    /// Attempts whose solution the checker did not accept.
    pub refused_attempts: Vec<usize>,
    /// Index into `attempts` of the winner.
    pub winner_index: Option<usize>,
    /// The winning solve; its own `status` says whether the win was decisive.
    pub winner: Option<Arc<SolveResult>>,
    /// Every attempt, in plan order.
    pub attempts: Vec<PortfolioAttempt>,
    /// SHA256 of each formulation, aligned with `models`.
    pub models_sha256: Vec<String>,
    /// SHA256 of `data`; `null` when no data was given.
    pub data_sha256: Option<String>,
    /// SHA256 of `checker`; `null` when no checker was given.
    pub checker_sha256: Option<String>,
    /// The search flags every attempt shared.
    pub solve_controls: SharedControls,
    /// The policy the race ran under.
    pub winner_policy: WinnerPolicy,
    /// The policy in words, starting with its name.
    pub selection_policy: String,
    /// The race's running time in milliseconds, until its last attempt ended.
    pub elapsed_ms: u64,
}

/// What a portfolio job carries besides its result.
#[derive(Debug, Clone)]
pub struct PortfolioMeta {
    /// Each attempt's budget, echoed by the race's status.
    pub per_attempt_timeout_ms: Budget,
    /// Solve job ids of the attempts, in plan order.
    pub attempt_jobs: Vec<String>,
}

/// One portfolio job as `get_portfolio_job` reports it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct PortfolioJobStatus {
    /// Id, state (`running`, `succeeded`, `failed` or `cancelled`), times,
    /// message and diagnostic (`no_winner`, or the winner's own).
    #[serde(flatten)]
    pub job: JobLife,
    /// Each attempt's budget in milliseconds, echoed.
    pub per_attempt_timeout_ms: i64,
    /// Solve job ids of the attempts, in plan order.
    pub attempt_job_ids: Vec<String>,
    /// Present exactly when `state` is `succeeded`.
    pub result: Option<Arc<PortfolioSolveResult>>,
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
    crate::sha256_hex(text.as_bytes())
}

impl Portfolios {
    /// Races over `solve_jobs`' registry; `bounds` gives only the retention of
    /// finished races (the attempts are bounded by the solve registry);
    /// `shutdown` cancels every race.
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
}

impl BackgroundJobs for Portfolios {
    type Request = PortfolioRequest;
    type Result = PortfolioSolveResult;
    type Meta = PortfolioMeta;
    type Status = PortfolioJobStatus;
    const KIND: JobKind = JobKind::Portfolio;

    fn registry(&self) -> &JobRegistry<PortfolioSolveResult, PortfolioMeta> {
        &self.registry
    }

    /// Validates the whole plan, admits every attempt or none, then starts
    /// the coordinator.
    async fn submit(
        &self,
        request: PortfolioRequest,
        cancel: &CancellationToken,
    ) -> Result<PortfolioJobStatus, ToolError> {
        let plan = self.plan(&request, cancel).await?;
        self.solve_jobs.backend().preflight(cancel).await?;
        let policy = request.winner_policy;
        let controls = SharedControls {
            free_search: request.free_search,
            parallel: request.parallel,
            all_solutions: request.all_solutions,
            num_solutions: request.num_solutions,
        };
        let written = {
            let models = request.models.clone();
            let data = request.data.clone();
            let checker = request.checker.clone();
            crate::userfiles::off_thread(move || {
                prepare_inline_models(&models, data.as_deref(), checker.as_deref())
            })
            .await?
        };
        // Filled once the attempts are admitted: a decisive attempt drops its
        // queued siblings itself, before its slot can start one of them.
        let siblings: Arc<OnceLock<Vec<String>>> = Arc::new(OnceLock::new());
        let attempts: Vec<_> = plan
            .iter()
            .enumerate()
            .map(|(index, attempt)| {
                let solve = SolveRequest {
                    sources: Sources::Written(written[attempt.model_index].clone()),
                    solver: Some(attempt.solver.clone()),
                    timeout_ms: request.per_attempt_timeout_ms,
                    controls: SolveControls {
                        free_search: request.free_search,
                        parallel: request.parallel,
                        random_seed: attempt.seed,
                        all_solutions: request.all_solutions,
                        num_solutions: request.num_solutions,
                        solver_flags: Vec::new(),
                        final_only: false,
                    },
                };
                let meta = SolveJobMeta::new(request.per_attempt_timeout_ms);
                let work = self.solve_jobs.start(solve, &meta);
                (
                    meta,
                    self.decisive_drops_siblings(work, index, policy, siblings.clone()),
                )
            })
            .collect();
        drop(written);
        let admitted = self
            .solve_jobs
            .registry()
            .submit_all_watched(attempts)
            .map_err(|error| {
                ToolError::invalid(format!(
                    "the plan has {} attempts (models × solvers × seeds) and {error}",
                    plan.len()
                ))
            })?;
        let (attempt_jobs, completions): (Vec<String>, Vec<_>) = admitted
            .into_iter()
            .map(|(snapshot, completion)| (snapshot.id, completion))
            .unzip();
        let _ = siblings.set(attempt_jobs.clone());
        let race = Race {
            solve_jobs: self.solve_jobs.registry().clone(),
            plan,
            attempt_jobs: attempt_jobs.clone(),
            models_sha256: request.models.iter().map(|model| sha256(model)).collect(),
            data_sha256: request.data.as_deref().map(sha256),
            checker_sha256: request.checker.as_deref().map(sha256),
            controls,
            policy,
        };
        let meta = PortfolioMeta {
            per_attempt_timeout_ms: request.per_attempt_timeout_ms,
            attempt_jobs: attempt_jobs.clone(),
        };
        let started = self.registry.submit(
            meta,
            Box::new(move |token: CancellationToken| Box::pin(race.run(completions, token))),
        );
        match started {
            Ok(snapshot) => Ok(Self::status(snapshot)),
            Err(error) => {
                for id in &attempt_jobs {
                    self.solve_jobs.registry().request_cancel(id);
                }
                Err(full(error))
            }
        }
    }

    fn status(snapshot: JobSnapshot<PortfolioSolveResult, PortfolioMeta>) -> PortfolioJobStatus {
        PortfolioJobStatus {
            job: JobLife::of(&snapshot, None, race_diagnostic),
            per_attempt_timeout_ms: snapshot.meta.per_attempt_timeout_ms.as_i64(),
            attempt_job_ids: snapshot.meta.attempt_jobs.clone(),
            result: snapshot.result,
        }
    }

    /// A race's status and the winner's objective.
    fn headline(result: &PortfolioSolveResult) -> (ResultStatus, Option<Number>) {
        (
            ResultStatus::Race(result.status),
            result.winner.as_ref().and_then(|w| w.objective.clone()),
        )
    }
}

impl Portfolios {
    /// Wraps an attempt so that a decisive result cancels every sibling
    /// before the registry records it and frees the slot: queued siblings
    /// are dropped instead of started, running ones are killed.
    fn decisive_drops_siblings(
        &self,
        work: Start<SolveResult>,
        index: usize,
        policy: WinnerPolicy,
        siblings: Arc<OnceLock<Vec<String>>>,
    ) -> Start<SolveResult> {
        let registry = self.solve_jobs.registry().clone();
        Box::new(move |token: CancellationToken| {
            Box::pin(async move {
                let outcome = work(token).await;
                let decisive =
                    matches!(&outcome, Outcome::Succeeded(result) if policy.is_decisive(result));
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
    /// The plan's size is checked against the registry's free capacity
    /// before a single attempt is laid out.
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
        let seeds = Seeds::of(request)?;
        let attempts = request
            .models
            .len()
            .checked_mul(request.solvers.len())
            .and_then(|pairs| pairs.checked_mul(seeds.len()));
        let room = self.solve_jobs.registry();
        match attempts {
            Some(attempts) => room.check_room(attempts).map_err(|error| {
                ToolError::invalid(format!(
                    "the plan has {attempts} attempts (models × solvers × seeds) and {error}"
                ))
            })?,
            None => {
                return Err(ToolError::invalid(format!(
                    "the plan is too large to count (models × solvers × seeds overflows); the registry has room for {} more attempts",
                    room.free_capacity()
                )));
            }
        }
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
                random_seed: seeds.seeded().then_some(1),
                all_solutions: request.all_solutions,
                num_solutions: request.num_solutions,
                solver_flags: Vec::new(),
                final_only: false,
            };
            gated.validate()?;
            gated.gate(&solver)?;
            if solvers.contains(&solver.id) {
                return Err(ToolError::invalid(format!(
                    "solvers names {} twice ({name:?} is the same solver)",
                    solver.id
                )));
            }
            solvers.push(solver.id.clone());
        }
        let mut plan = Vec::new();
        for seed in seeds.iter() {
            for solver in &solvers {
                for model_index in 0..request.models.len() {
                    plan.push(Planned {
                        model_index,
                        solver: solver.clone(),
                        seed,
                    });
                }
            }
        }
        Ok(plan)
    }
}

/// The seeds of a race, counted before any is materialised.
enum Seeds<'a> {
    Unseeded,
    Count(usize),
    Listed(&'a [i64]),
}

impl<'a> Seeds<'a> {
    fn of(request: &'a PortfolioRequest) -> Result<Seeds<'a>, ToolError> {
        match &request.seeds {
            Some(_) if request.seed_count != 1 => Err(ToolError::invalid(
                "give either seeds or seed_count, not both: with an explicit seeds list, leave seed_count at 1",
            )),
            Some(seeds) if seeds.is_empty() => Err(ToolError::invalid(
                "seeds must not be empty; omit it for one unseeded run",
            )),
            Some(seeds) if seeds.len() > MAX_SEEDS => Err(ToolError::invalid(format!(
                "seeds lists {} values; a race takes at most {MAX_SEEDS}",
                seeds.len()
            ))),
            Some(seeds) => {
                let distinct: BTreeSet<_> = seeds.iter().collect();
                if distinct.len() != seeds.len() {
                    return Err(ToolError::invalid("seeds must not repeat a value"));
                }
                Ok(Seeds::Listed(seeds))
            }
            None if request.seed_count < 1 => Err(ToolError::invalid(format!(
                "seed_count must be at least 1, got {}",
                request.seed_count
            ))),
            None if request.seed_count == 1 => Ok(Seeds::Unseeded),
            None => match usize::try_from(request.seed_count) {
                Ok(count) if count <= MAX_SEEDS => Ok(Seeds::Count(count)),
                _ => Err(ToolError::invalid(format!(
                    "seed_count must be at most {MAX_SEEDS}, got {}",
                    request.seed_count
                ))),
            },
        }
    }

    fn len(&self) -> usize {
        match self {
            Seeds::Unseeded => 1,
            Seeds::Count(count) => *count,
            Seeds::Listed(seeds) => seeds.len(),
        }
    }

    fn seeded(&self) -> bool {
        !matches!(self, Seeds::Unseeded)
    }

    fn iter(&self) -> Box<dyn Iterator<Item = Option<i64>> + '_> {
        match self {
            Seeds::Unseeded => Box::new(std::iter::once(None)),
            Seeds::Count(count) => Box::new((1..=*count).map(|seed| i64::try_from(seed).ok())),
            Seeds::Listed(seeds) => Box::new(seeds.iter().copied().map(Some)),
        }
    }
}

type AttemptSnapshot = JobSnapshot<SolveResult, SolveJobMeta>;

/// Everything the coordinator needs, moved into its task.
struct Race {
    solve_jobs: JobRegistry<SolveResult, SolveJobMeta>,
    plan: Vec<Planned>,
    attempt_jobs: Vec<String>,
    models_sha256: Vec<String>,
    data_sha256: Option<String>,
    checker_sha256: Option<String>,
    controls: SharedControls,
    policy: WinnerPolicy,
}

impl Race {
    async fn run(
        self,
        completions: Vec<Completion<SolveResult, SolveJobMeta>>,
        token: CancellationToken,
    ) -> Outcome<PortfolioSolveResult> {
        let started = std::time::Instant::now();
        let mut pending = JoinSet::new();
        for (index, completion) in completions.into_iter().enumerate() {
            pending.spawn(async move { (index, completion.finished().await) });
        }
        // Every attempt's final snapshot, kept as it arrives: retention may
        // evict a finished attempt from the solve registry at any time.
        let mut finals: Vec<Option<AttemptSnapshot>> = vec![None; self.attempt_jobs.len()];
        let mut decisive = None;
        let mut cancelled = false;
        loop {
            tokio::select! {
                () = token.cancelled(), if !cancelled => {
                    cancelled = true;
                    self.cancel_all_but(None);
                }
                finished = pending.join_next() => {
                    let Some(finished) = finished else { break };
                    let Ok((index, Some(snapshot))) = finished else { continue };
                    let is_decisive = snapshot
                        .result
                        .as_deref()
                        .is_some_and(|result| self.policy.is_decisive(result));
                    if is_decisive && decisive.is_none() && !cancelled {
                        decisive = Some(index);
                        self.cancel_all_but(Some(index));
                    }
                    finals[index] = Some(snapshot);
                }
            }
        }
        if cancelled {
            return Outcome::Cancelled;
        }
        let results: Vec<Option<&SolveResult>> = finals
            .iter()
            .map(|snapshot| snapshot.as_ref().and_then(|s| s.result.as_deref()))
            .collect();
        let winner_index = decisive.or_else(|| pick_winner(self.policy, &results));
        let attempts = self.table(&finals);
        let refused_attempts = attempts
            .iter()
            .filter(|attempt| attempt.refused.is_some())
            .map(|attempt| attempt.index)
            .collect();
        let winner = winner_index
            .and_then(|index| finals.get(index))
            .and_then(|snapshot| snapshot.as_ref())
            .and_then(|snapshot| snapshot.result.clone());
        Outcome::Succeeded(PortfolioSolveResult {
            status: RaceStatus::of(&winner),
            winner_index: winner.as_ref().and(winner_index),
            winner,
            refused_attempts,
            attempts,
            models_sha256: self.models_sha256,
            data_sha256: self.data_sha256,
            checker_sha256: self.checker_sha256,
            solve_controls: self.controls,
            winner_policy: self.policy,
            selection_policy: self.policy.description().to_owned(),
            elapsed_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        })
    }

    /// Cancels every attempt but `keep` without waiting; the coordinator
    /// goes on collecting their final snapshots.
    fn cancel_all_but(&self, keep: Option<usize>) {
        for (index, id) in self.attempt_jobs.iter().enumerate() {
            if Some(index) != keep {
                self.solve_jobs.request_cancel(id);
            }
        }
    }

    fn table(&self, finals: &[Option<AttemptSnapshot>]) -> Vec<PortfolioAttempt> {
        self.plan
            .iter()
            .zip(&self.attempt_jobs)
            .zip(finals)
            .enumerate()
            .map(|(index, ((planned, job_id), snapshot))| {
                let result = snapshot.as_ref().and_then(|s| s.result.as_deref());
                PortfolioAttempt {
                    index,
                    model_index: planned.model_index,
                    solver: planned.solver.clone(),
                    seed: planned.seed,
                    job_id: job_id.clone(),
                    state: snapshot.as_ref().map_or(JobState::Failed, |s| s.state),
                    status: result.map(|r| r.status),
                    objective: result.and_then(|r| r.objective.clone()),
                    checker_status: result.and_then(|r| r.checker.as_ref()).map(|c| c.status),
                    checker_verdict: result.and_then(|r| r.checker.as_ref()).map(|c| c.verdict),
                    refused: result.and_then(refusal),
                    elapsed_ms: snapshot.as_ref().map_or(0, |s| s.elapsed_ms),
                    slurm: snapshot
                        .as_ref()
                        .and_then(|s| placement_of(&s.meta.placement)),
                    message: match snapshot {
                        Some(snapshot) => snapshot.message.clone(),
                        None => Some(
                            "the attempt's outcome was lost (its job never reported an end)"
                                .to_owned(),
                        ),
                    },
                }
            })
            .collect()
    }
}

/// What a finished race has to say: that no attempt won (and why), or
/// its winner's own diagnostic.
fn race_diagnostic(result: &PortfolioSolveResult) -> Option<Diagnostic> {
    match &result.winner {
        None if result.refused_attempts.is_empty() => Some(Diagnostic::new(
            Category::NoWinner,
            "no attempt produced a result (all failed or were cancelled)",
        )),
        None => Some(
            Diagnostic::new(
                Category::NoWinner,
                format!(
                    "no attempt produced a solution the checker accepted: {} solution(s) refused (see each attempt's refused)",
                    result.refused_attempts.len()
                ),
            )
            .with_detail("refused_attempts", result.refused_attempts.clone()),
        ),
        Some(winner) => winner.diagnostic.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::status::fixtures::{assert_pinned, snapshot};

    fn request(models: usize, solvers: usize, seed_count: i64) -> PortfolioRequest {
        PortfolioRequest {
            models: vec!["solve satisfy;".to_owned(); models],
            solvers: vec!["gecode".to_owned(); solvers],
            data: None,
            checker: None,
            seed_count,
            seeds: None,
            per_attempt_timeout_ms: Budget::from_millis(1000).unwrap(),
            free_search: false,
            parallel: None,
            all_solutions: false,
            num_solutions: None,
            winner_policy: WinnerPolicy::default(),
        }
    }

    #[test]
    fn seeds_are_counted_before_they_exist() {
        assert!(Seeds::of(&request(1, 1, i64::MAX)).is_err());
        assert!(Seeds::of(&request(1, 1, 100_000_000)).is_err());
        assert_eq!(Seeds::of(&request(1, 1, 1000)).unwrap().len(), 1000);
        let one = request(1, 1, 1);
        let unseeded = Seeds::of(&one).unwrap();
        assert_eq!(unseeded.iter().collect::<Vec<_>>(), vec![None]);
        let three = request(1, 1, 3);
        let counted = Seeds::of(&three).unwrap();
        assert_eq!(
            counted.iter().collect::<Vec<_>>(),
            vec![Some(1), Some(2), Some(3)]
        );
        let mut listed = request(1, 1, 1);
        listed.seeds = Some(vec![0; MAX_SEEDS + 1]);
        assert!(Seeds::of(&listed).is_err());
    }

    fn meta() -> PortfolioMeta {
        PortfolioMeta {
            per_attempt_timeout_ms: Budget::from_millis(4000).unwrap(),
            attempt_jobs: vec!["a0".to_owned(), "a1".to_owned()],
        }
    }

    fn race(winner: Option<SolveResult>, refused_attempts: Vec<usize>) -> PortfolioSolveResult {
        PortfolioSolveResult {
            status: RaceStatus::of(&winner.clone().map(Arc::new)),
            winner_index: winner.as_ref().map(|_| 1),
            winner: winner.map(Arc::new),
            refused_attempts,
            attempts: Vec::new(),
            models_sha256: vec!["m".to_owned()],
            data_sha256: None,
            checker_sha256: None,
            solve_controls: SharedControls {
                free_search: false,
                parallel: None,
                all_solutions: false,
                num_solutions: None,
            },
            winner_policy: WinnerPolicy::BestObjective,
            selection_policy: "best_objective".to_owned(),
            elapsed_ms: 650,
        }
    }

    /// A status's JSON, pinned for each way a race can stand: a change to
    /// the fields or to how a snapshot becomes a status is a reviewed diff.
    #[test]
    fn statuses_keep_their_json() {
        let winner: SolveResult = serde_json::from_str(
            r#"{"status":"satisfied","solver":"org.gecode.gecode","return_code":0,"timed_out":false,"truncated":false,"stdout":"","stderr":"","elapsed_ms":9,"solution":{},"solutions":[{}],"objective":null,"statistics":{},"checker":null,"diagnostic":{"category":"unknown","message":"not proven"}}"#,
        )
        .unwrap();
        let cases = [
            (
                snapshot(meta(), JobState::Running, None, None),
                r#"{"attempt_job_ids":["a0","a1"],"diagnostic":null,"elapsed_ms":250,"finished_at":null,"job_id":"j1","message":null,"per_attempt_timeout_ms":4000,"result":null,"state":"running","submitted_at":"1970-01-01T00:00:01.000Z"}"#,
            ),
            (
                snapshot(
                    meta(),
                    JobState::Cancelled,
                    Some("cancelled; its processes were stopped"),
                    None,
                ),
                r#"{"attempt_job_ids":["a0","a1"],"diagnostic":{"category":"cancelled","message":"cancelled; its processes were stopped"},"elapsed_ms":250,"finished_at":"1970-01-01T00:00:01.500Z","job_id":"j1","message":"cancelled; its processes were stopped","per_attempt_timeout_ms":4000,"result":null,"state":"cancelled","submitted_at":"1970-01-01T00:00:01.000Z"}"#,
            ),
            (
                snapshot(meta(), JobState::Succeeded, None, Some(race(None, vec![]))),
                r#"{"attempt_job_ids":["a0","a1"],"diagnostic":{"category":"no_winner","message":"no attempt produced a result (all failed or were cancelled)"},"elapsed_ms":250,"finished_at":"1970-01-01T00:00:01.500Z","job_id":"j1","message":null,"per_attempt_timeout_ms":4000,"result":{"attempts":[],"checker_sha256":null,"data_sha256":null,"elapsed_ms":650,"models_sha256":["m"],"refused_attempts":[],"selection_policy":"best_objective","solve_controls":{"all_solutions":false,"free_search":false,"num_solutions":null,"parallel":null},"status":"no_winner","winner":null,"winner_index":null,"winner_policy":"best_objective"},"state":"succeeded","submitted_at":"1970-01-01T00:00:01.000Z"}"#,
            ),
            (
                snapshot(
                    meta(),
                    JobState::Succeeded,
                    None,
                    Some(race(None, vec![0, 1])),
                ),
                r#"{"attempt_job_ids":["a0","a1"],"diagnostic":{"category":"no_winner","details":{"refused_attempts":[0,1]},"message":"no attempt produced a solution the checker accepted: 2 solution(s) refused (see each attempt's refused)"},"elapsed_ms":250,"finished_at":"1970-01-01T00:00:01.500Z","job_id":"j1","message":null,"per_attempt_timeout_ms":4000,"result":{"attempts":[],"checker_sha256":null,"data_sha256":null,"elapsed_ms":650,"models_sha256":["m"],"refused_attempts":[0,1],"selection_policy":"best_objective","solve_controls":{"all_solutions":false,"free_search":false,"num_solutions":null,"parallel":null},"status":"no_winner","winner":null,"winner_index":null,"winner_policy":"best_objective"},"state":"succeeded","submitted_at":"1970-01-01T00:00:01.000Z"}"#,
            ),
            (
                snapshot(
                    meta(),
                    JobState::Succeeded,
                    None,
                    Some(race(Some(winner), vec![0])),
                ),
                r#"{"attempt_job_ids":["a0","a1"],"diagnostic":{"category":"unknown","message":"not proven"},"elapsed_ms":250,"finished_at":"1970-01-01T00:00:01.500Z","job_id":"j1","message":null,"per_attempt_timeout_ms":4000,"result":{"attempts":[],"checker_sha256":null,"data_sha256":null,"elapsed_ms":650,"models_sha256":["m"],"refused_attempts":[0],"selection_policy":"best_objective","solve_controls":{"all_solutions":false,"free_search":false,"num_solutions":null,"parallel":null},"status":"winner","winner":{"checker":null,"diagnostic":{"category":"unknown","message":"not proven"},"elapsed_ms":9,"objective":null,"return_code":0,"solution":{},"solutions":[{}],"solver":"org.gecode.gecode","statistics":{},"status":"satisfied","stderr":"","stdout":"","timed_out":false,"truncated":false},"winner_index":1,"winner_policy":"best_objective"},"state":"succeeded","submitted_at":"1970-01-01T00:00:01.000Z"}"#,
            ),
        ];
        assert_pinned::<Portfolios>(cases);
    }
}
