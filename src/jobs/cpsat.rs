//! CP-SAT scripts as background jobs, on the same generic registry with
//! their own bounds.
//!
//! Everything is validated at admission (budgets, paths resolved to
//! absolute, checker inputs, the interpreter); a queued job runs what was
//! named on submit. A checked job stays `running` through its checker
//! phase; cancel stops whichever child is running and discards the result.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use std::sync::Arc;

use super::backend::{
    CpsatJob, CpsatJobOutput, CpsatJobRequest, JobBackend, PlacementSlot, RunContext,
    SlurmPlacement, placement_of, visible_state,
};
use super::registry::{JobRegistry, JobSnapshot, JobState, Start};
use super::status::{
    JobKind, JobList, ResultStatus, full, lifecycle_diagnostic, list_of, timestamp, unknown_job,
};
use crate::budget::Budget;
use crate::cpsat::{CheckerReport, Cpsat, CpsatPythonResult, ScriptSource};
use crate::diagnostics::{Diagnostic, ToolError};
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
}

/// One CP-SAT job as `get_cpsat_python_job` reports it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CpsatPythonJobStatus {
    pub job_id: String,
    /// `queued`, `running`, `succeeded`, `failed`, `timeout` or `cancelled`.
    pub state: JobState,
    pub script_timeout_ms: i64,
    /// The checker's budget, when the job has a checker.
    pub checker_timeout_ms: Option<u64>,
    pub submitted_at: String,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    pub elapsed_ms: u64,
    /// Present exactly when `state` is `succeeded` or `timeout`.
    pub result: Option<Arc<CpsatPythonResult>>,
    /// The checker's verdict (diagnostic only, not a save gate).
    pub checker: Option<CheckerReport>,
    /// Why the checker did not run.
    pub checker_skipped_reason: Option<String>,
    pub message: Option<String>,
    pub diagnostic: Option<Diagnostic>,
    /// Slurm backend only.
    pub slurm: Option<SlurmPlacement>,
}

/// Background CP-SAT runs.
#[derive(Clone)]
pub struct CpsatJobs {
    cpsat: Cpsat,
    backend: Arc<dyn JobBackend>,
    registry: JobRegistry<CpsatJobOutput, CpsatJobMeta>,
}

impl CpsatJobs {
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
        }
    }

    /// Validates everything, resolves paths, then admits the job.
    pub async fn submit(
        &self,
        request: CpsatJobRequest,
        cancel: &CancellationToken,
    ) -> Result<CpsatPythonJobStatus, ToolError> {
        let job = self.admissible(request, cancel).await?;
        let meta = CpsatJobMeta {
            script_timeout_ms: job.script.timeout_ms,
            checker_timeout_ms: job.checker_timeout_ms,
            placement: PlacementSlot::default(),
        };
        let (backend, placement) = (self.backend.clone(), meta.placement.clone());
        let work: Start<CpsatJobOutput> = Box::new(move |token: CancellationToken| {
            backend.cpsat(
                job,
                RunContext {
                    token,
                    live: Default::default(),
                    placement,
                },
            )
        });
        let admitted = self.registry.submit(meta, work).map_err(full)?;
        Ok(status(admitted))
    }

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

    pub fn get(&self, id: &str) -> Result<CpsatPythonJobStatus, ToolError> {
        self.registry
            .get(id)
            .map(status)
            .ok_or_else(|| self.unknown(id))
    }

    pub async fn cancel(&self, id: &str) -> Result<CpsatPythonJobStatus, ToolError> {
        self.registry
            .cancel(id)
            .await
            .map(status)
            .ok_or_else(|| self.unknown(id))
    }

    /// Every retained job, summarised (`get` has the full result).
    pub fn list(&self) -> JobList {
        list_of(&self.registry, JobKind::CpsatPython, |output| {
            (
                ResultStatus::Script(output.result.status),
                output.result.objective.clone(),
            )
        })
    }

    /// Cancels every job; waits for them until `deadline`.
    pub async fn shutdown(&self, deadline: std::time::Duration) -> usize {
        self.registry.shutdown(deadline).await
    }

    fn unknown(&self, id: &str) -> ToolError {
        unknown_job(
            "CP-SAT job",
            id,
            self.registry.bounds().max_retained_terminal,
        )
    }
}

fn status(snapshot: JobSnapshot<CpsatJobOutput, CpsatJobMeta>) -> CpsatPythonJobStatus {
    let diagnostic =
        lifecycle_diagnostic(snapshot.state, snapshot.message.as_deref()).or_else(|| {
            snapshot
                .result
                .as_ref()
                .and_then(|output| output.result.diagnostic.clone())
        });
    let (result, checker, checker_skipped_reason) = match snapshot.result.as_deref() {
        Some(output) => (
            Some(output.result.clone()),
            output.checker.clone(),
            output.checker_skipped_reason.clone(),
        ),
        None => (None, None, None),
    };
    let slurm = placement_of(&snapshot.meta.placement);
    // A job Slurm still holds pending has not started, whatever slot the
    // registry gave it.
    let state = visible_state(snapshot.state, slurm.as_ref());
    let (started_at, elapsed_ms) = match state {
        JobState::Queued => (None, 0),
        _ => (snapshot.started_at, snapshot.elapsed_ms),
    };
    CpsatPythonJobStatus {
        job_id: snapshot.id,
        state,
        script_timeout_ms: snapshot.meta.script_timeout_ms.as_i64(),
        checker_timeout_ms: snapshot.meta.checker_timeout_ms.map(Budget::as_millis),
        submitted_at: timestamp(snapshot.submitted_at),
        started_at: started_at.map(timestamp),
        finished_at: snapshot.finished_at.map(timestamp),
        elapsed_ms,
        result,
        checker,
        checker_skipped_reason,
        message: snapshot.message,
        diagnostic,
        slurm,
    }
}
