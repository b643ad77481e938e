//! CP-SAT scripts as background jobs, on the same generic registry with
//! their own bounds.
//!
//! Everything is validated at admission (budgets, paths resolved to
//! absolute, checker inputs, the interpreter); a queued job runs what was
//! named on submit. A checked job stays `running` through its checker
//! phase; cancel stops whichever child is running and discards the result.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Number, Value};
use tokio_util::sync::CancellationToken;

use std::sync::{Arc, OnceLock};

use super::backend::{
    CpsatJob, CpsatJobOutput, CpsatJobRequest, HandoffSlot, JobBackend, PlacementSlot, RunContext,
    SlurmHandoff, SlurmPlacement, handoff_slot, placement_of,
};
use super::reattach::{self, Reattach};
use super::registry::{JobRegistry, JobSnapshot, Start};
use super::status::{BackgroundJobs, JobKind, JobLife, ResultStatus, full, live_figures};
use super::store::JobJournal;
use crate::budget::Budget;
use crate::cpsat::{CheckerReport, Cpsat, CpsatPythonResult, ScriptSource};
use crate::diagnostics::ToolError;
use crate::progress::{LiveFigures, LiveSlot};
use crate::settings::JobBounds;

/// The budgets a job echoes.
#[derive(Debug, Clone)]
pub struct CpsatJobMeta {
    /// The script's budget, echoed by the job's status.
    pub script_timeout_ms: Budget,
    /// The checker's, when the job has a checker.
    pub checker_timeout_ms: Option<Budget>,
    /// Where the job runs, when a cluster runs it.
    pub placement: PlacementSlot,
    /// The latest figures of the running script's intermediate envelopes.
    pub live: LiveSlot,
    /// Told when the job is handed to Slurm, for its journal record.
    pub handoff: HandoffSlot,
}

/// One CP-SAT job as `get_cpsat_python_job` reports it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CpsatPythonJobStatus {
    /// Id, state, times, message and diagnostic (the result's own once
    /// there is one).
    #[serde(flatten)]
    pub job: JobLife,
    /// The script's budget in milliseconds, echoed.
    pub script_timeout_ms: i64,
    /// The checker's budget, when the job has a checker.
    pub checker_timeout_ms: Option<u64>,
    /// RFC 3339, once the job has started.
    pub started_at: Option<String>,
    /// While `running`: the solutions the script has reported so far with
    /// intermediate envelopes (`solvergate.report_intermediate`), the latest
    /// objective and bound; `null` before the first and once the job has
    /// ended (see `result`).
    pub live: Option<LiveFigures>,
    /// Present exactly when `state` is `succeeded` or `timeout`.
    pub result: Option<Arc<CpsatPythonResult>>,
    /// The checker's verdict (diagnostic only, not a save gate).
    pub checker: Option<CheckerReport>,
    /// Why the checker did not run.
    pub checker_skipped_reason: Option<String>,
    /// Slurm backend only.
    pub slurm: Option<SlurmPlacement>,
}

/// Background CP-SAT runs.
#[derive(Clone)]
pub struct CpsatJobs {
    cpsat: Cpsat,
    backend: Arc<dyn JobBackend>,
    registry: JobRegistry<CpsatJobOutput, CpsatJobMeta>,
    /// Where the registry keeps its jobs, once it does: read again to take
    /// over a job an earlier server left on Slurm.
    journal: Arc<OnceLock<Arc<JobJournal<CpsatJobs>>>>,
}

impl CpsatJobs {
    /// CP-SAT jobs over `cpsat`, run by `backend`, under the registry `bounds`;
    /// `shutdown` cancels every job.
    pub fn new(
        cpsat: Cpsat,
        backend: Arc<dyn JobBackend>,
        bounds: JobBounds,
        shutdown: CancellationToken,
    ) -> Self {
        CpsatJobs {
            cpsat,
            backend,
            registry: JobRegistry::new("CP-SAT job", bounds, shutdown),
            journal: Arc::default(),
        }
    }

    /// Keeps every job admitted from now on in `journal` too; the first
    /// journal given stays.
    pub fn keep_in(&self, journal: Arc<JobJournal<CpsatJobs>>) {
        self.registry.keep_in(journal.clone());
        let _ = self.journal.set(journal);
    }
}

impl Reattach for CpsatJobs {
    fn journal(&self) -> Option<&Arc<JobJournal<CpsatJobs>>> {
        self.journal.get()
    }

    fn job_backend(&self) -> &Arc<dyn JobBackend> {
        &self.backend
    }

    fn stored_meta(
        status: &Value,
        handoff: SlurmHandoff,
        placement: SlurmPlacement,
    ) -> Option<CpsatJobMeta> {
        let checker_timeout_ms = match &status["checker_timeout_ms"] {
            Value::Null => None,
            budget => Some(Budget::from_millis(budget.as_u64()?)?),
        };
        let meta = CpsatJobMeta {
            script_timeout_ms: Budget::from_millis(status["script_timeout_ms"].as_u64()?)?,
            checker_timeout_ms,
            placement: Arc::new(std::sync::Mutex::new(Some(placement))),
            live: LiveSlot::default(),
            handoff: handoff_slot(),
        };
        meta.handoff.send_replace(Some(handoff));
        Some(meta)
    }

    fn resume(
        backend: Arc<dyn JobBackend>,
        handoff: SlurmHandoff,
        meta: &CpsatJobMeta,
    ) -> Start<CpsatJobOutput> {
        let (live, placement) = (meta.live.clone(), meta.placement.clone());
        let told = meta.handoff.clone();
        Box::new(move |token: CancellationToken| {
            backend.resume_cpsat(
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

impl BackgroundJobs for CpsatJobs {
    type Request = CpsatJobRequest;
    type Result = CpsatJobOutput;
    type Meta = CpsatJobMeta;
    type Status = CpsatPythonJobStatus;
    const KIND: JobKind = JobKind::CpsatPython;

    fn registry(&self) -> &JobRegistry<CpsatJobOutput, CpsatJobMeta> {
        &self.registry
    }

    /// Validates everything, resolves paths, then admits the job.
    async fn submit(
        &self,
        request: CpsatJobRequest,
        cancel: &CancellationToken,
    ) -> Result<CpsatPythonJobStatus, ToolError> {
        let job = self.admissible(request, cancel).await?;
        let meta = CpsatJobMeta {
            script_timeout_ms: job.script.timeout_ms,
            checker_timeout_ms: job.checker_timeout_ms,
            placement: PlacementSlot::default(),
            live: LiveSlot::default(),
            handoff: handoff_slot(),
        };
        let (backend, placement) = (self.backend.clone(), meta.placement.clone());
        let (live, handoff) = (meta.live.clone(), meta.handoff.clone());
        let work: Start<CpsatJobOutput> = Box::new(move |token: CancellationToken| {
            backend.cpsat(
                job,
                RunContext {
                    token,
                    live,
                    placement,
                    handoff,
                },
            )
        });
        let admitted = self.registry.submit(meta, work).map_err(full)?;
        Ok(Self::status(admitted))
    }

    fn status(snapshot: JobSnapshot<CpsatJobOutput, CpsatJobMeta>) -> CpsatPythonJobStatus {
        let slurm = placement_of(&snapshot.meta.placement);
        let job = JobLife::of(&snapshot, slurm.as_ref(), |output| {
            output.result.diagnostic.clone()
        });
        let output = snapshot.result.as_deref();
        CpsatPythonJobStatus {
            script_timeout_ms: snapshot.meta.script_timeout_ms.as_i64(),
            checker_timeout_ms: snapshot.meta.checker_timeout_ms.map(Budget::as_millis),
            started_at: job.started_at(&snapshot),
            live: live_figures(snapshot.state, &snapshot.meta.live),
            result: output.map(|output| output.result.clone()),
            checker: output.and_then(|output| output.checker.clone()),
            checker_skipped_reason: output.and_then(|output| output.checker_skipped_reason.clone()),
            slurm,
            job,
        }
    }

    fn headline(output: &CpsatJobOutput) -> (ResultStatus, Option<Number>) {
        (
            ResultStatus::Script(output.result.status),
            output.result.objective.clone(),
        )
    }

    fn handoff(meta: &CpsatJobMeta) -> Option<&HandoffSlot> {
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

impl CpsatJobs {
    /// The job `request` asks for, checked whole before it is admitted:
    /// budgets, both files (paths made absolute, so the job runs what was
    /// named on submit wherever it runs), the interpreter, the backend.
    async fn admissible(
        &self,
        mut request: CpsatJobRequest,
        cancel: &CancellationToken,
    ) -> Result<CpsatJob, ToolError> {
        let checker_timeout_ms = match (&request.checker, request.checker_timeout_ms) {
            (None, Some(_)) => {
                return Err(ToolError::invalid(
                    "checker_timeout_ms needs a checker (checker or checker_path)",
                ));
            }
            (None, None) => None,
            (Some(_), Some(budget)) => Some(budget),
            (Some(_), None) => Some(request.script.timeout_ms),
        };
        request.script.validate()?;
        let prepared = request.script.prepare_async().await?;
        if let ScriptSource::File(_) = request.script.source {
            request.script.source =
                ScriptSource::File(prepared.script.to_string_lossy().into_owned());
        }
        if let Some(checker) = &request.checker {
            let prepared = checker.prepare_checker_async().await?;
            if let ScriptSource::File(_) = checker {
                request.checker = Some(ScriptSource::File(
                    prepared.path().to_string_lossy().into_owned(),
                ));
            }
        }
        self.cpsat.python(cancel).await?;
        self.backend.preflight(cancel).await?;
        Ok(CpsatJob {
            script: request.script,
            checker: request.checker,
            problem: request.problem,
            checker_timeout_ms,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::status::fixtures::{assert_pinned, snapshot};
    use crate::jobs::{JobState, SlurmState};

    fn meta() -> CpsatJobMeta {
        CpsatJobMeta {
            script_timeout_ms: Budget::from_millis(3000).unwrap(),
            checker_timeout_ms: Budget::from_millis(1500),
            placement: PlacementSlot::default(),
            live: LiveSlot::default(),
            handoff: handoff_slot(),
        }
    }

    /// A status's JSON, pinned for each way a job can stand: a change to
    /// the fields or to how a snapshot becomes a status is a reviewed diff.
    #[test]
    fn statuses_keep_their_json() {
        let pending = snapshot(meta(), JobState::Running, None, None);
        *pending.meta.placement.lock().unwrap() = Some(SlurmPlacement {
            job_id: "42".to_owned(),
            node: Some("c1".to_owned()),
            state: SlurmState::Pending,
            reason: None,
        });
        let running = snapshot(meta(), JobState::Running, None, None);
        *running.meta.live.lock().unwrap() = Some(LiveFigures {
            solutions: 3,
            objective: Some(12.into()),
            bound: Some(15.into()),
        });
        let mut dropped = snapshot(
            meta(),
            JobState::Cancelled,
            Some("cancelled before it started"),
            None,
        );
        (dropped.started_at, dropped.elapsed_ms) = (None, 0);
        let run: Arc<CpsatPythonResult> = serde_json::from_str(
            r#"{"status":"feasible","solution":{"x":1},"objective":1,"best_objective_bound":2,"stdout":"","stderr":"","return_code":0,"timed_out":false,"truncated":false,"duration_ms":80,"diagnostic":{"category":"checker_failed","message":"refused"}}"#,
        )
        .unwrap();
        let checker: CheckerReport = serde_json::from_str(
            r#"{"status":"rejected","verdict":"rejected","errors":["x too small"],"details":{},"message":null,"stdout":"","stderr":"","return_code":0,"timed_out":false,"truncated":false,"duration_ms":20}"#,
        )
        .unwrap();
        let checked = CpsatJobOutput {
            result: run.clone(),
            checker: Some(checker),
            checker_skipped_reason: None,
        };
        let skipped = CpsatJobOutput {
            result: run,
            checker: None,
            checker_skipped_reason: Some("no solution to check".to_owned()),
        };
        let cases = [
            (
                snapshot(meta(), JobState::Queued, None, None),
                r#"{"checker":null,"checker_skipped_reason":null,"checker_timeout_ms":1500,"diagnostic":null,"elapsed_ms":0,"finished_at":null,"job_id":"j1","live":null,"message":null,"result":null,"script_timeout_ms":3000,"slurm":null,"started_at":null,"state":"queued","submitted_at":"1970-01-01T00:00:01.000Z"}"#,
            ),
            (
                pending,
                r#"{"checker":null,"checker_skipped_reason":null,"checker_timeout_ms":1500,"diagnostic":null,"elapsed_ms":0,"finished_at":null,"job_id":"j1","live":null,"message":null,"result":null,"script_timeout_ms":3000,"slurm":{"job_id":"42","node":"c1","reason":null,"state":"PENDING"},"started_at":null,"state":"queued","submitted_at":"1970-01-01T00:00:01.000Z"}"#,
            ),
            (
                running,
                r#"{"checker":null,"checker_skipped_reason":null,"checker_timeout_ms":1500,"diagnostic":null,"elapsed_ms":250,"finished_at":null,"job_id":"j1","live":{"bound":15,"objective":12,"solutions":3},"message":null,"result":null,"script_timeout_ms":3000,"slurm":null,"started_at":"1970-01-01T00:00:01.250Z","state":"running","submitted_at":"1970-01-01T00:00:01.000Z"}"#,
            ),
            (
                dropped,
                r#"{"checker":null,"checker_skipped_reason":null,"checker_timeout_ms":1500,"diagnostic":{"category":"cancelled","message":"cancelled before it started"},"elapsed_ms":0,"finished_at":"1970-01-01T00:00:01.500Z","job_id":"j1","live":null,"message":"cancelled before it started","result":null,"script_timeout_ms":3000,"slurm":null,"started_at":null,"state":"cancelled","submitted_at":"1970-01-01T00:00:01.000Z"}"#,
            ),
            (
                snapshot(meta(), JobState::Succeeded, None, Some(checked)),
                r#"{"checker":{"details":{},"duration_ms":20,"errors":["x too small"],"message":null,"return_code":0,"status":"rejected","stderr":"","stdout":"","timed_out":false,"truncated":false,"verdict":"rejected"},"checker_skipped_reason":null,"checker_timeout_ms":1500,"diagnostic":{"category":"checker_failed","message":"refused"},"elapsed_ms":250,"finished_at":"1970-01-01T00:00:01.500Z","job_id":"j1","live":null,"message":null,"result":{"best_objective_bound":2,"diagnostic":{"category":"checker_failed","message":"refused"},"duration_ms":80,"objective":1,"return_code":0,"solution":{"x":1},"status":"feasible","stderr":"","stdout":"","timed_out":false,"truncated":false},"script_timeout_ms":3000,"slurm":null,"started_at":"1970-01-01T00:00:01.250Z","state":"succeeded","submitted_at":"1970-01-01T00:00:01.000Z"}"#,
            ),
            (
                snapshot(meta(), JobState::Timeout, None, Some(skipped)),
                r#"{"checker":null,"checker_skipped_reason":"no solution to check","checker_timeout_ms":1500,"diagnostic":{"category":"checker_failed","message":"refused"},"elapsed_ms":250,"finished_at":"1970-01-01T00:00:01.500Z","job_id":"j1","live":null,"message":null,"result":{"best_objective_bound":2,"diagnostic":{"category":"checker_failed","message":"refused"},"duration_ms":80,"objective":1,"return_code":0,"solution":{"x":1},"status":"feasible","stderr":"","stdout":"","timed_out":false,"truncated":false},"script_timeout_ms":3000,"slurm":null,"started_at":"1970-01-01T00:00:01.250Z","state":"timeout","submitted_at":"1970-01-01T00:00:01.000Z"}"#,
            ),
        ];
        assert_pinned::<CpsatJobs>(cases);
    }
}
