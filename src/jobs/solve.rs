//! MiniZinc solves as background jobs: submit returns at once, the solve
//! runs on the registry, polls read its state.
//!
//! State contract: `result` is present exactly for `succeeded` and
//! `timeout`. A solver-level `error` is a `succeeded` job whose result says
//! `error`; `failed` means our machinery failed (see `message`).

use std::sync::{Arc, OnceLock};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use serde_json::{Number, Value};

use super::backend::{
    HandoffSlot, JobBackend, PlacementSlot, RunContext, SlurmHandoff, SlurmPlacement, handoff_slot,
    placement_of,
};
use super::reattach::{self, Reattach};
use super::registry::{JobRegistry, JobSnapshot, Start};
use super::status::{BackgroundJobs, JobKind, JobLife, ResultStatus, full, live_figures};
use super::store::JobJournal;
use crate::budget::Budget;
use crate::diagnostics::ToolError;
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
    /// Told when the job is handed to Slurm, for its journal record.
    pub handoff: HandoffSlot,
}

impl SolveJobMeta {
    /// The meta of a job under `timeout_ms`, its live figures, placement
    /// and handoff still empty.
    pub fn new(timeout_ms: Budget) -> Self {
        SolveJobMeta {
            timeout_ms,
            live: LiveSlot::default(),
            placement: PlacementSlot::default(),
            handoff: handoff_slot(),
        }
    }
}

/// One solve job as `get_solve_job` reports it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SolveJobStatus {
    /// Id, state, times, message and diagnostic (the result's own once
    /// there is one).
    #[serde(flatten)]
    pub job: JobLife,
    /// The requested solve budget, echoed.
    pub timeout_ms: i64,
    /// RFC 3339, once the job has started.
    pub started_at: Option<String>,
    /// While `running`: solutions the solver has printed so far and the
    /// latest objective, read from its output as it arrives; `null` before
    /// the first solution and once the job has ended (see `result`).
    pub live: Option<LiveFigures>,
    /// The full result: present exactly when `state` is `succeeded` or `timeout`.
    pub result: Option<Arc<SolveResult>>,
    /// Slurm backend only.
    pub slurm: Option<SlurmPlacement>,
}

/// Background MiniZinc solves.
#[derive(Clone)]
pub struct SolveJobs {
    minizinc: MiniZinc,
    backend: Arc<dyn JobBackend>,
    registry: JobRegistry<SolveResult, SolveJobMeta>,
    /// Where the registry keeps its jobs, once it does: read again to take
    /// over a job an earlier server left on Slurm.
    journal: Arc<OnceLock<Arc<JobJournal<SolveJobs>>>>,
}

impl SolveJobs {
    /// Solve jobs over `minizinc`, run by `backend`, under the registry
    /// `bounds`; `shutdown` cancels every job.
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
            journal: Arc::default(),
        }
    }

    /// Keeps every job admitted from now on in `journal` too; the first
    /// journal given stays.
    pub fn keep_in(&self, journal: Arc<JobJournal<SolveJobs>>) {
        self.registry.keep_in(journal.clone());
        let _ = self.journal.set(journal);
    }

    /// The MiniZinc service solves are checked and solvers selected against.
    pub fn minizinc(&self) -> &MiniZinc {
        &self.minizinc
    }

    pub(crate) fn backend(&self) -> &Arc<dyn JobBackend> {
        &self.backend
    }

    /// The work of one solve job (also a portfolio attempt), run by the
    /// backend; its figures so far and its placement go to `meta`'s slots.
    pub(crate) fn start(&self, request: SolveRequest, meta: &SolveJobMeta) -> Start<SolveResult> {
        let backend = self.backend.clone();
        let (live, placement) = (meta.live.clone(), meta.placement.clone());
        let handoff = meta.handoff.clone();
        Box::new(move |token: CancellationToken| {
            backend.solve(
                request,
                RunContext {
                    token,
                    live,
                    placement,
                    handoff,
                },
            )
        })
    }
}

impl Reattach for SolveJobs {
    fn journal(&self) -> Option<&Arc<JobJournal<SolveJobs>>> {
        self.journal.get()
    }

    fn job_backend(&self) -> &Arc<dyn JobBackend> {
        &self.backend
    }

    fn stored_meta(
        status: &Value,
        handoff: SlurmHandoff,
        placement: SlurmPlacement,
    ) -> Option<SolveJobMeta> {
        let meta = SolveJobMeta::new(Budget::from_millis(status["timeout_ms"].as_u64()?)?);
        *meta.placement.lock().ok()? = Some(placement);
        meta.handoff.send_replace(Some(handoff));
        Some(meta)
    }

    fn resume(
        backend: Arc<dyn JobBackend>,
        handoff: SlurmHandoff,
        meta: &SolveJobMeta,
    ) -> Start<SolveResult> {
        let (live, placement) = (meta.live.clone(), meta.placement.clone());
        let told = meta.handoff.clone();
        Box::new(move |token: CancellationToken| {
            backend.resume_solve(
                handoff,
                RunContext {
                    token,
                    live,
                    placement,
                    handoff: told,
                },
            )
        })
    }
}

impl BackgroundJobs for SolveJobs {
    type Request = SolveRequest;
    type Result = SolveResult;
    type Meta = SolveJobMeta;
    type Status = SolveJobStatus;
    const KIND: JobKind = JobKind::Solve;

    fn registry(&self) -> &JobRegistry<SolveResult, SolveJobMeta> {
        &self.registry
    }

    async fn submit(
        &self,
        request: SolveRequest,
        cancel: &CancellationToken,
    ) -> Result<SolveJobStatus, ToolError> {
        self.minizinc.admit(&request, cancel).await?;
        self.backend.preflight(cancel).await?;
        let meta = SolveJobMeta::new(request.timeout_ms);
        let work = self.start(request, &meta);
        let admitted = self.registry.submit(meta, work).map_err(full)?;
        Ok(Self::status(admitted))
    }

    fn status(snapshot: JobSnapshot<SolveResult, SolveJobMeta>) -> SolveJobStatus {
        let slurm = placement_of(&snapshot.meta.placement);
        let job = JobLife::of(&snapshot, slurm.as_ref(), |result| {
            result.diagnostic.clone()
        });
        SolveJobStatus {
            timeout_ms: snapshot.meta.timeout_ms.as_i64(),
            started_at: job.started_at(&snapshot),
            live: live_figures(snapshot.state, &snapshot.meta.live),
            result: snapshot.result,
            slurm,
            job,
        }
    }

    fn headline(result: &SolveResult) -> (ResultStatus, Option<Number>) {
        (ResultStatus::Solve(result.status), result.objective.clone())
    }

    fn handoff(meta: &SolveJobMeta) -> Option<&HandoffSlot> {
        Some(&meta.handoff)
    }

    fn reattach(&self, id: &str) -> bool {
        reattach::reattach(self, id)
    }

    fn reattach_orphans(&self) -> usize {
        reattach::reattach_orphans(self)
    }

    fn cancel_abandoned(&self) -> usize {
        reattach::cancel_abandoned(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::status::fixtures::{assert_pinned, snapshot};
    use crate::jobs::{JobState, SlurmState};

    /// A status's JSON, pinned for each way a job can stand: a change to
    /// the fields or to how a snapshot becomes a status is a reviewed diff.
    #[test]
    fn statuses_keep_their_json() {
        let running = snapshot(
            SolveJobMeta::new(Budget::from_millis(2000).unwrap()),
            JobState::Running,
            None,
            None,
        );
        *running.meta.live.lock().unwrap() = Some(LiveFigures {
            solutions: 2,
            objective: Some(7.into()),
            bound: None,
        });
        let pending = snapshot(
            SolveJobMeta::new(Budget::from_millis(2000).unwrap()),
            JobState::Running,
            None,
            None,
        );
        *pending.meta.placement.lock().unwrap() = Some(SlurmPlacement {
            job_id: "41".to_owned(),
            node: None,
            state: SlurmState::Pending,
            reason: Some("Resources".to_owned()),
        });
        let solved: SolveResult = serde_json::from_str(
            r#"{"status":"unknown","solver":"org.gecode.gecode","return_code":0,"timed_out":false,"truncated":false,"stdout":"","stderr":"","elapsed_ms":9,"solution":null,"solutions":[],"objective":null,"statistics":{},"checker":null,"diagnostic":{"category":"unknown","message":"none found"}}"#,
        )
        .unwrap();
        let cases = [
            (
                snapshot(
                    SolveJobMeta::new(Budget::from_millis(2000).unwrap()),
                    JobState::Queued,
                    None,
                    None,
                ),
                r#"{"diagnostic":null,"elapsed_ms":0,"finished_at":null,"job_id":"j1","live":null,"message":null,"result":null,"slurm":null,"started_at":null,"state":"queued","submitted_at":"1970-01-01T00:00:01.000Z","timeout_ms":2000}"#,
            ),
            (
                running,
                r#"{"diagnostic":null,"elapsed_ms":250,"finished_at":null,"job_id":"j1","live":{"objective":7,"solutions":2},"message":null,"result":null,"slurm":null,"started_at":"1970-01-01T00:00:01.250Z","state":"running","submitted_at":"1970-01-01T00:00:01.000Z","timeout_ms":2000}"#,
            ),
            (
                pending,
                r#"{"diagnostic":null,"elapsed_ms":0,"finished_at":null,"job_id":"j1","live":null,"message":null,"result":null,"slurm":{"job_id":"41","node":null,"reason":"Resources","state":"PENDING"},"started_at":null,"state":"queued","submitted_at":"1970-01-01T00:00:01.000Z","timeout_ms":2000}"#,
            ),
            (
                snapshot(
                    SolveJobMeta::new(Budget::from_millis(2000).unwrap()),
                    JobState::Cancelled,
                    Some("cancelled; its processes were stopped"),
                    None,
                ),
                r#"{"diagnostic":{"category":"cancelled","message":"cancelled; its processes were stopped"},"elapsed_ms":250,"finished_at":"1970-01-01T00:00:01.500Z","job_id":"j1","live":null,"message":"cancelled; its processes were stopped","result":null,"slurm":null,"started_at":"1970-01-01T00:00:01.250Z","state":"cancelled","submitted_at":"1970-01-01T00:00:01.000Z","timeout_ms":2000}"#,
            ),
            (
                snapshot(
                    SolveJobMeta::new(Budget::from_millis(2000).unwrap()),
                    JobState::Failed,
                    None,
                    None,
                ),
                r#"{"diagnostic":{"category":"job_failed","message":"the job failed"},"elapsed_ms":250,"finished_at":"1970-01-01T00:00:01.500Z","job_id":"j1","live":null,"message":null,"result":null,"slurm":null,"started_at":"1970-01-01T00:00:01.250Z","state":"failed","submitted_at":"1970-01-01T00:00:01.000Z","timeout_ms":2000}"#,
            ),
            (
                snapshot(
                    SolveJobMeta::new(Budget::from_millis(2000).unwrap()),
                    JobState::Succeeded,
                    None,
                    Some(solved),
                ),
                r#"{"diagnostic":{"category":"unknown","message":"none found"},"elapsed_ms":250,"finished_at":"1970-01-01T00:00:01.500Z","job_id":"j1","live":null,"message":null,"result":{"checker":null,"diagnostic":{"category":"unknown","message":"none found"},"elapsed_ms":9,"objective":null,"return_code":0,"solution":null,"solutions":[],"solver":"org.gecode.gecode","statistics":{},"status":"unknown","stderr":"","stdout":"","timed_out":false,"truncated":false},"slurm":null,"started_at":"1970-01-01T00:00:01.250Z","state":"succeeded","submitted_at":"1970-01-01T00:00:01.000Z","timeout_ms":2000}"#,
            ),
        ];
        assert_pinned::<SolveJobs>(cases);
    }
}
