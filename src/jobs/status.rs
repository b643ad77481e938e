//! What every kind of background job shares: the [`BackgroundJobs`] trait
//! each kind implements (solve jobs, portfolio races, CP-SAT jobs), which
//! gives them one get, cancel, list and shutdown and one unknown-id error;
//! the [`JobLife`] every status flattens in; the one-line summary the list
//! tools return.
//!
//! A kind states only what is its own: how a request is admitted, its
//! status type and how a snapshot becomes one, and what a list shows of
//! its result. Lists are summaries on purpose: a finished solve can carry
//! a megabyte of output, and a list of 64 of them would be tens of
//! megabytes. `get` returns the full result of one job.

use std::future::Future;
use std::time::{Duration, SystemTime};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Number;
use tokio_util::sync::CancellationToken;

use super::backend::{HandoffSlot, SlurmPlacement, visible_state};
use super::registry::{JobRegistry, JobSnapshot, JobState, RegistryFull};
use crate::cpsat::ScriptStatus;
use crate::diagnostics::{Category, Diagnostic, ToolError};
use crate::minizinc::SolveStatus;
use crate::progress::{LiveFigures, LiveSlot};
use crate::verdict::RaceStatus;

/// One kind of background job as its callers reach it. A kind says how a
/// request is admitted ([`submit`](Self::submit)), how a snapshot of its
/// registry becomes its status ([`status`](Self::status)) and what a list
/// shows of a result ([`headline`](Self::headline)); get, cancel, list
/// and shutdown are the same for every kind, and so is the error for an id
/// the registry does not have.
pub trait BackgroundJobs: Send + Sync {
    /// What a submit takes.
    type Request: Send;
    /// What a job of this kind produces.
    type Result: Send + Sync + 'static;
    /// What the submitter attaches to a job (its budgets, its slots).
    type Meta: Send + Sync + 'static;
    /// What submit, get and cancel return.
    type Status: Serialize + serde::de::DeserializeOwned + Send;
    /// The kind a list names.
    const KIND: JobKind;

    /// This kind's registry.
    fn registry(&self) -> &JobRegistry<Self::Result, Self::Meta>;

    /// Validates the request completely, then admits it.
    fn submit(
        &self,
        request: Self::Request,
        cancel: &CancellationToken,
    ) -> impl Future<Output = Result<Self::Status, ToolError>> + Send;

    /// The job a snapshot shows, as a client reads it.
    fn status(snapshot: JobSnapshot<Self::Result, Self::Meta>) -> Self::Status;

    /// A result's status and objective, as a list shows them.
    fn headline(result: &Self::Result) -> (ResultStatus, Option<Number>);

    /// Where a job tells that its work was handed to Slurm; `None` (the
    /// default) for a kind whose work always runs in its server.
    fn handoff(_meta: &Self::Meta) -> Option<&HandoffSlot> {
        None
    }

    /// Takes over job `id` when an earlier server handed it to Slurm and
    /// stopped while it ran ([`super::reattach`]); whether this server
    /// holds it now. `false` (the default) for a kind that never outlives
    /// its server.
    fn reattach(&self, _id: &str) -> bool {
        false
    }

    /// Takes over every job of this kind an earlier server left running on
    /// Slurm; how many. 0 (the default) for a kind that never outlives its
    /// server.
    fn reattach_orphans(&self) -> usize {
        0
    }

    /// Ends every job of this kind a dead server's HTTP session left
    /// running on Slurm, which nobody can read any more
    /// ([`super::reattach`]); how many. 0 (the default) for a kind that
    /// never outlives its server.
    fn cancel_abandoned(&self) -> usize {
        0
    }

    /// The job's status, or the unknown-id error.
    fn get(&self, id: &str) -> Result<Self::Status, ToolError> {
        let registry = self.registry();
        registry
            .get(id)
            .map(Self::status)
            .ok_or_else(|| unknown_job(registry, id))
    }

    /// Cancels the job and waits until its processes are gone (a race's:
    /// every attempt's); idempotent.
    fn cancel(&self, id: &str) -> impl Future<Output = Result<Self::Status, ToolError>> + Send {
        async move {
            let registry = self.registry();
            registry
                .cancel(id)
                .await
                .map(Self::status)
                .ok_or_else(|| unknown_job(registry, id))
        }
    }

    /// Every retained job, oldest first, summarised (`get` has the full
    /// result).
    fn list(&self) -> JobList {
        JobList {
            jobs: self
                .registry()
                .list()
                .iter()
                .map(|snapshot| summary(Self::KIND, snapshot, Self::headline))
                .collect(),
        }
    }

    /// Cancels every job; waits for them until `deadline`. Returns how
    /// many had not ended by then.
    fn shutdown(&self, deadline: Duration) -> impl Future<Output = usize> + Send {
        self.registry().shutdown(deadline)
    }
}

/// What every job status says of its job's life, whatever the kind; each
/// kind's status flattens it in beside what is its own.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct JobLife {
    /// Opaque id for get / cancel.
    pub job_id: String,
    /// `queued`, `running`, `succeeded`, `failed`, `timeout` or
    /// `cancelled` (a race is never `queued` nor `timeout`).
    pub state: JobState,
    /// RFC 3339 times; `finished_at` once the job has ended.
    pub submitted_at: String,
    /// RFC 3339, once the job has ended.
    pub finished_at: Option<String>,
    /// Running time so far, or in all once finished; 0 while queued.
    pub elapsed_ms: u64,
    /// Why a job failed or was cancelled.
    pub message: Option<String>,
    /// `cancelled`, `job_failed`, or the result's own diagnostic.
    pub diagnostic: Option<Diagnostic>,
}

impl JobLife {
    /// The life `snapshot` shows. A job Slurm still holds pending
    /// (`slurm`) has not started, whatever slot the registry gave it: it
    /// reads `queued`, with nothing elapsed. A cancelled or failed job's
    /// diagnostic says so; otherwise `own` reads the result's.
    pub(crate) fn of<R, M>(
        snapshot: &JobSnapshot<R, M>,
        slurm: Option<&SlurmPlacement>,
        own: impl FnOnce(&R) -> Option<Diagnostic>,
    ) -> JobLife {
        let state = visible_state(snapshot.state, slurm);
        JobLife {
            job_id: snapshot.id.clone(),
            state,
            submitted_at: timestamp(snapshot.submitted_at),
            finished_at: snapshot.finished_at.map(timestamp),
            elapsed_ms: match state {
                JobState::Queued => 0,
                _ => snapshot.elapsed_ms,
            },
            message: snapshot.message.clone(),
            diagnostic: lifecycle_diagnostic(snapshot.state, snapshot.message.as_deref())
                .or_else(|| snapshot.result.as_deref().and_then(own)),
        }
    }

    /// When the job started, as a client reads it: never while `queued`.
    pub(crate) fn started_at<R, M>(&self, snapshot: &JobSnapshot<R, M>) -> Option<String> {
        match self.state {
            JobState::Queued => None,
            _ => snapshot.started_at.map(timestamp),
        }
    }
}

/// RFC 3339 with milliseconds, UTC.
pub(crate) fn timestamp(time: SystemTime) -> String {
    humantime::format_rfc3339_millis(time).to_string()
}

/// The error for a job id `registry` does not have: never had, or no
/// longer keeps.
fn unknown_job<R, M>(registry: &JobRegistry<R, M>, id: &str) -> ToolError
where
    R: Send + Sync + 'static,
    M: Send + Sync + 'static,
{
    ToolError::invalid(format!(
        "no {} with id {id:?}; ids come from submit, and only the last {} finished jobs are kept",
        registry.what(),
        registry.bounds().max_retained_terminal
    ))
}

/// The diagnostic a cancelled or failed job carries; `None` otherwise,
/// when the result's own diagnostic speaks.
fn lifecycle_diagnostic(state: JobState, message: Option<&str>) -> Option<Diagnostic> {
    match state {
        JobState::Cancelled => Some(Diagnostic::new(
            Category::Cancelled,
            message.unwrap_or("cancelled"),
        )),
        JobState::Failed => Some(Diagnostic::new(
            Category::JobFailed,
            message.unwrap_or("the job failed"),
        )),
        _ => None,
    }
}

pub(crate) fn full(error: RegistryFull) -> ToolError {
    ToolError::invalid(error.to_string())
}

/// Which tool family a job belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum JobKind {
    /// A MiniZinc solve job (`submit_solve_job`), a portfolio attempt included.
    Solve,
    /// A portfolio race (`submit_portfolio_job`).
    Portfolio,
    /// A CP-SAT script job (`submit_cpsat_python_job`).
    CpsatPython,
}

/// One job in a list: enough to pick which to `get`, never the full result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct JobSummary {
    /// Opaque id for get / cancel.
    pub job_id: String,
    /// Which tool family the job belongs to, hence which `get_*` reads it.
    pub kind: JobKind,
    /// `queued`, `running`, `succeeded`, `failed`, `timeout` or `cancelled`.
    pub state: JobState,
    /// RFC 3339.
    pub submitted_at: String,
    /// RFC 3339, once the job has started.
    pub started_at: Option<String>,
    /// RFC 3339, once the job has ended.
    pub finished_at: Option<String>,
    /// Running time so far, or in all once finished; 0 while queued.
    pub elapsed_ms: u64,
    /// The result's status once there is one (a portfolio: `winner` or
    /// `no_winner`).
    pub status: Option<ResultStatus>,
    /// The result's objective (a portfolio: the winner's), when it has one.
    pub objective: Option<Number>,
    /// Why a job failed or was cancelled.
    pub message: Option<String>,
}

/// A finished job's result status, as its own kind spells it: serialised as
/// the bare status (`optimal`, `winner`, `feasible`, ...), the kind is in
/// [`JobSummary::kind`]. Read back, a word two kinds share (`optimal`,
/// `error`, ...) is the first variant's: the kind says which it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ResultStatus {
    /// A solve's status.
    Solve(SolveStatus),
    /// A portfolio's: `winner` or `no_winner`.
    Race(RaceStatus),
    /// A CP-SAT script run's status.
    Script(ScriptStatus),
}

impl ResultStatus {
    /// The status as it reads in the JSON.
    pub fn as_str(&self) -> &'static str {
        match self {
            ResultStatus::Solve(status) => status.as_str(),
            ResultStatus::Race(status) => status.as_str(),
            ResultStatus::Script(status) => status.as_str(),
        }
    }
}

impl std::fmt::Display for ResultStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a list tool returns: every retained job of its kind, oldest first.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct JobList {
    /// Every retained job of the kind, oldest first.
    pub jobs: Vec<JobSummary>,
}

/// Summarises a snapshot; `headline` reads status and objective off the
/// result.
fn summary<R, M>(
    kind: JobKind,
    snapshot: &JobSnapshot<R, M>,
    headline: impl FnOnce(&R) -> (ResultStatus, Option<Number>),
) -> JobSummary {
    let (status, objective) = snapshot
        .result
        .as_deref()
        .map(headline)
        .map_or((None, None), |(status, objective)| {
            (Some(status), objective)
        });
    JobSummary {
        job_id: snapshot.id.clone(),
        kind,
        state: snapshot.state,
        submitted_at: timestamp(snapshot.submitted_at),
        started_at: snapshot.started_at.map(timestamp),
        finished_at: snapshot.finished_at.map(timestamp),
        elapsed_ms: snapshot.elapsed_ms,
        status,
        objective,
        message: snapshot.message.clone(),
    }
}

/// The live figures a job's status shows: the latest while it runs, none
/// before or after (its result says what it found).
pub(super) fn live_figures(state: JobState, slot: &LiveSlot) -> Option<LiveFigures> {
    match state {
        JobState::Running => slot.lock().ok().and_then(|live| live.clone()),
        _ => None,
    }
}

/// What the kinds' tests build their statuses from.
#[cfg(test)]
pub(crate) mod fixtures {
    use std::sync::Arc;
    use std::time::{Duration, SystemTime};

    use super::*;

    fn at(ms: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_millis(ms)
    }

    /// Job `j1` in `state`: submitted 1 s after the epoch, started 250 ms
    /// later unless `queued`, finished 250 ms after that once it has ended.
    pub(crate) fn snapshot<R, M>(
        meta: M,
        state: JobState,
        message: Option<&str>,
        result: Option<R>,
    ) -> JobSnapshot<R, M> {
        let started = state != JobState::Queued;
        JobSnapshot {
            id: "j1".to_owned(),
            meta: Arc::new(meta),
            state,
            submitted_at: at(1_000),
            started_at: started.then(|| at(1_250)),
            finished_at: state.is_terminal().then(|| at(1_500)),
            elapsed_ms: if started { 250 } else { 0 },
            result: result.map(Arc::new),
            message: message.map(str::to_owned),
        }
    }

    /// Each case's status as a client reads it (structured content, keys
    /// sorted) is its pinned JSON.
    pub(crate) fn assert_pinned<K: BackgroundJobs>(
        cases: impl IntoIterator<Item = (JobSnapshot<K::Result, K::Meta>, &'static str)>,
    ) {
        for (snapshot, pinned) in cases {
            let status = serde_json::to_value(K::status(snapshot)).unwrap();
            assert_eq!(status.to_string(), pinned);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_status_serialises_as_the_bare_status() {
        let cases = [
            (
                ResultStatus::Solve(SolveStatus::UnsatOrUnbounded),
                "unsat_or_unbounded",
            ),
            (ResultStatus::Race(RaceStatus::NoWinner), "no_winner"),
            (ResultStatus::Script(ScriptStatus::Feasible), "feasible"),
            (ResultStatus::Script(ScriptStatus::Infeasible), "infeasible"),
        ];
        for (status, word) in cases {
            assert_eq!(
                serde_json::to_string(&status).unwrap(),
                format!("\"{word}\"")
            );
            assert_eq!(status.as_str(), word);
            let back: ResultStatus = serde_json::from_str(&format!("\"{word}\"")).unwrap();
            assert_eq!(back, status);
        }
    }
}
