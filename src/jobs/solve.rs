//! MiniZinc solves as background jobs: submit returns at once, the solve
//! runs on the registry, polls read its state.
//!
//! State contract: `result` is present exactly for `succeeded` and
//! `timeout`. A solver-level `error` is a `succeeded` job whose result says
//! `error`; `failed` means our machinery failed (see `message`).

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::backend::{
    JobBackend, PlacementSlot, RunContext, SlurmPlacement, placement_of, visible_state,
};
use super::registry::{JobRegistry, JobSnapshot, JobState, Start};
use super::status::{
    JobKind, JobList, ResultStatus, full, lifecycle_diagnostic, list_of, timestamp, unknown_job,
};
use crate::budget::Budget;
use crate::diagnostics::{Diagnostic, ToolError};
use crate::minizinc::{MiniZinc, SolveRequest, SolveResult};
use crate::progress::{LiveFigures, LiveSlot};
use crate::settings::JobBounds;

/// What a solve job carries besides its result.
#[derive(Debug, Clone)]
pub struct SolveJobMeta {
    /// The solve's budget, echoed by its status.
    pub timeout_ms: Budget,
    /// What the running solve has found so far.
    pub live: LiveSlot,
    /// Where the job runs, when a cluster runs it.
    pub placement: PlacementSlot,
}

impl SolveJobMeta {
    pub fn new(timeout_ms: Budget) -> Self {
        SolveJobMeta {
            timeout_ms,
            live: LiveSlot::default(),
            placement: PlacementSlot::default(),
        }
    }
}

/// One solve job as `get_solve_job` reports it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SolveJobStatus {
    /// Opaque id for get / cancel.
    pub job_id: String,
    /// `queued`, `running`, `succeeded`, `failed`, `timeout` or `cancelled`.
    pub state: JobState,
    /// The requested solve budget, echoed.
    pub timeout_ms: i64,
    /// RFC 3339 times; `started_at` and `finished_at` once they happen.
    pub submitted_at: String,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    /// Running time so far, or in all once finished; 0 while queued.
    pub elapsed_ms: u64,
    /// While `running`: solutions the solver has printed so far and the
    /// latest objective, read from its output as it arrives; `null` before
    /// the first solution and once the job has ended (see `result`).
    pub live: Option<LiveFigures>,
    /// The full result: present exactly when `state` is `succeeded` or `timeout`.
    pub result: Option<Arc<SolveResult>>,
    pub message: Option<String>,
    /// `cancelled`, `job_failed`, or the result's own diagnostic.
    pub diagnostic: Option<Diagnostic>,
    /// Slurm backend only.
    pub slurm: Option<SlurmPlacement>,
}

/// Background MiniZinc solves.
#[derive(Clone)]
pub struct SolveJobs {
    minizinc: MiniZinc,
    backend: Arc<dyn JobBackend>,
    registry: JobRegistry<SolveResult, SolveJobMeta>,
}

impl SolveJobs {
    pub fn new(
        minizinc: MiniZinc,
        backend: Arc<dyn JobBackend>,
        bounds: JobBounds,
        shutdown: CancellationToken,
    ) -> Self {
        SolveJobs {
            minizinc,
            backend,
            registry: JobRegistry::new("solve job", bounds, shutdown),
        }
    }

    pub fn minizinc(&self) -> &MiniZinc {
        &self.minizinc
    }

    pub(crate) fn backend(&self) -> &Arc<dyn JobBackend> {
        &self.backend
    }

    pub(crate) fn registry(&self) -> &JobRegistry<SolveResult, SolveJobMeta> {
        &self.registry
    }

    /// Validates the request completely, then admits it.
    pub async fn submit(
        &self,
        request: SolveRequest,
        cancel: &CancellationToken,
    ) -> Result<SolveJobStatus, ToolError> {
        self.minizinc.admit(&request, cancel).await?;
        self.backend.preflight(cancel).await?;
        let meta = SolveJobMeta::new(request.timeout_ms);
        let work = self.start(request, &meta);
        let admitted = self.registry.submit(meta, work).map_err(full)?;
        Ok(status(admitted))
    }

    /// The work of one solve job (also a portfolio attempt), run by the
    /// backend; its figures so far and its placement go to `meta`'s slots.
    pub(crate) fn start(&self, request: SolveRequest, meta: &SolveJobMeta) -> Start<SolveResult> {
        let backend = self.backend.clone();
        let (live, placement) = (meta.live.clone(), meta.placement.clone());
        Box::new(move |token: CancellationToken| {
            backend.solve(
                request,
                RunContext {
                    token,
                    live,
                    placement,
                },
            )
        })
    }

    pub fn get(&self, id: &str) -> Result<SolveJobStatus, ToolError> {
        self.registry
            .get(id)
            .map(status)
            .ok_or_else(|| self.unknown(id))
    }

    /// Cancels and waits until the job's processes are gone.
    pub async fn cancel(&self, id: &str) -> Result<SolveJobStatus, ToolError> {
        self.registry
            .cancel(id)
            .await
            .map(status)
            .ok_or_else(|| self.unknown(id))
    }

    /// Every retained job, summarised (`get` has the full result).
    pub fn list(&self) -> JobList {
        list_of(&self.registry, JobKind::Solve, |result| {
            (ResultStatus::Solve(result.status), result.objective.clone())
        })
    }

    /// Cancels every job; waits for them until `deadline`.
    pub async fn shutdown(&self, deadline: std::time::Duration) -> usize {
        self.registry.shutdown(deadline).await
    }

    fn unknown(&self, id: &str) -> ToolError {
        unknown_job(
            "solve job",
            id,
            self.registry.bounds().max_retained_terminal,
        )
    }
}

fn status(snapshot: JobSnapshot<SolveResult, SolveJobMeta>) -> SolveJobStatus {
    let diagnostic =
        lifecycle_diagnostic(snapshot.state, snapshot.message.as_deref()).or_else(|| {
            snapshot
                .result
                .as_ref()
                .and_then(|result| result.diagnostic.clone())
        });
    let slurm = placement_of(&snapshot.meta.placement);
    // A job Slurm still holds pending has not started, whatever slot the
    // registry gave it.
    let state = visible_state(snapshot.state, slurm.as_ref());
    let (started_at, elapsed_ms) = match state {
        JobState::Queued => (None, 0),
        _ => (snapshot.started_at, snapshot.elapsed_ms),
    };
    SolveJobStatus {
        job_id: snapshot.id,
        state,
        timeout_ms: snapshot.meta.timeout_ms.as_i64(),
        submitted_at: timestamp(snapshot.submitted_at),
        started_at: started_at.map(timestamp),
        finished_at: snapshot.finished_at.map(timestamp),
        elapsed_ms,
        live: match snapshot.state {
            JobState::Running => snapshot.meta.live.lock().ok().and_then(|live| live.clone()),
            _ => None,
        },
        result: snapshot.result,
        message: snapshot.message,
        diagnostic,
        slurm,
    }
}
