//! The job backend seam: where a job's work runs once the registry has
//! admitted it.
//!
//! The registries (bounds, queue, cancel, retention, portfolio races) never
//! change with the backend; only the work each admitted job starts does.
//! [`LocalBackend`] runs it in this process's executor (the default);
//! [`SlurmBackend`](super::slurm::SlurmBackend) hands it to Slurm as one
//! batch job that runs `solvergate worker` on a node. Both end in the same
//! [`execute`] call, so a result is the same struct whichever ran it.
//!
//! A backend must keep the registry's contract: when the work's future
//! resolves after its token was cancelled, nothing it started is still
//! running. Synchronous tools never go through a backend.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::cpsat::{CpsatJobOutput, CpsatJobRequest, run_job};
use super::registry::{JobState, Outcome, Work};
use super::slurm::{SlurmBackend, SlurmConfig};
use crate::cpsat::Cpsat;
use crate::diagnostics::ToolError;
use crate::minizinc::{MiniZinc, SolveRequest, SolveResult};
use crate::progress::{LiveSlot, Progress};

/// A boxed future a backend returns.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Where a job runs on a cluster, as its status reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SlurmPlacement {
    // Field docs stay out of the published schema: tools/list is bounded.
    /// Slurm's job id.
    pub job_id: String,
    pub node: Option<String>,
    /// As last seen: PENDING, RUNNING, COMPLETED, CANCELLED, ...
    pub state: String,
    pub reason: Option<String>,
}

/// Shared with the job's status: the backend fills it in as it learns.
pub type PlacementSlot = Arc<Mutex<Option<SlurmPlacement>>>;

/// The last placement a slot holds.
pub(crate) fn placement_of(slot: &PlacementSlot) -> Option<SlurmPlacement> {
    slot.lock().ok().and_then(|placement| placement.clone())
}

/// The state a client reads: a job the registry started but Slurm still
/// holds `PENDING` is `queued`.
pub(crate) fn visible_state(state: JobState, placement: Option<&SlurmPlacement>) -> JobState {
    match placement {
        Some(placement) if state == JobState::Running && placement.state == "PENDING" => {
            JobState::Queued
        }
        _ => state,
    }
}

/// What a job's work is handed besides its request.
#[derive(Clone)]
pub struct RunContext {
    /// Cancelled by `cancel_*_job`, a portfolio's winner, or shutdown.
    pub token: CancellationToken,
    /// A solve's figures so far (the local backend fills it).
    pub live: LiveSlot,
    /// Where the job runs (the Slurm backend fills it).
    pub placement: PlacementSlot,
}

/// Runs admitted jobs somewhere.
pub trait JobBackend: Send + Sync {
    /// `local` or `slurm`.
    fn name(&self) -> &'static str;

    /// One line for the start-up banner.
    fn describe(&self) -> String;

    /// Checks, before a job is admitted, that work can be handed over at
    /// all; a refusal is a `runtime_missing` error naming what failed.
    fn preflight<'a>(
        &'a self,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<(), ToolError>>;

    /// One MiniZinc solve (a solve job or a portfolio attempt).
    fn solve(&self, request: SolveRequest, run: RunContext) -> Work<SolveResult>;

    /// One CP-SAT job: the script, then its checker.
    fn cpsat(
        &self,
        request: CpsatJobRequest,
        checker_timeout_ms: Option<u64>,
        run: RunContext,
    ) -> Work<CpsatJobOutput>;

    /// Stops whatever this backend still has running elsewhere (the server
    /// is going away); waits until it has.
    fn shutdown(&self) -> BoxFuture<'_, ()>;
}

/// Which backend a server uses.
#[derive(Debug, Clone)]
pub enum BackendChoice {
    Local,
    Slurm(Box<SlurmConfig>),
}

/// Builds the backend `choice` names over the server's services.
pub fn build(choice: &BackendChoice, minizinc: MiniZinc, cpsat: Cpsat) -> Arc<dyn JobBackend> {
    match choice {
        BackendChoice::Local => Arc::new(LocalBackend { minizinc, cpsat }),
        BackendChoice::Slurm(config) => Arc::new(SlurmBackend::new(config.as_ref().clone())),
    }
}

/// Work that the server runs itself.
#[derive(Clone)]
pub struct LocalBackend {
    minizinc: MiniZinc,
    cpsat: Cpsat,
}

impl LocalBackend {
    pub fn new(minizinc: MiniZinc, cpsat: Cpsat) -> Self {
        LocalBackend { minizinc, cpsat }
    }
}

impl JobBackend for LocalBackend {
    fn name(&self) -> &'static str {
        "local"
    }

    fn describe(&self) -> String {
        "jobs: local (this machine)".to_owned()
    }

    fn preflight<'a>(
        &'a self,
        _cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<(), ToolError>> {
        Box::pin(async { Ok(()) })
    }

    fn solve(&self, request: SolveRequest, run: RunContext) -> Work<SolveResult> {
        let minizinc = self.minizinc.clone();
        Box::pin(async move {
            let progress = Progress::into_slot(run.live);
            let result = execute_solve(&minizinc, &request, &progress, &run.token).await;
            solve_outcome(result, &run.token)
        })
    }

    fn cpsat(
        &self,
        request: CpsatJobRequest,
        checker_timeout_ms: Option<u64>,
        run: RunContext,
    ) -> Work<CpsatJobOutput> {
        let cpsat = self.cpsat.clone();
        Box::pin(async move {
            let result = run_job(&cpsat, &request, checker_timeout_ms, &run.token).await;
            cpsat_outcome(result, &run.token)
        })
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        // Local work stops with its job tokens; nothing is held elsewhere.
        Box::pin(async {})
    }
}

/// The one solve every backend ends in (the Slurm worker calls it too).
pub(crate) async fn execute_solve(
    minizinc: &MiniZinc,
    request: &SolveRequest,
    progress: &Progress,
    token: &CancellationToken,
) -> Result<SolveResult, ToolError> {
    minizinc.solve(request, progress, token).await
}

/// How a solve's result becomes a job's outcome.
pub(crate) fn solve_outcome(
    result: Result<SolveResult, ToolError>,
    token: &CancellationToken,
) -> Outcome<SolveResult> {
    match result {
        Ok(result) if result.status == "timeout" => Outcome::TimedOut(result),
        Ok(result) => Outcome::Succeeded(result),
        Err(_) if token.is_cancelled() => Outcome::Cancelled,
        Err(error) => Outcome::Failed(error.to_string()),
    }
}

/// How a CP-SAT job's output becomes its outcome.
pub(crate) fn cpsat_outcome(
    result: Result<CpsatJobOutput, ToolError>,
    token: &CancellationToken,
) -> Outcome<CpsatJobOutput> {
    match result {
        Ok(output) if output.result.status == "timeout" => Outcome::TimedOut(output),
        Ok(output) => Outcome::Succeeded(output),
        Err(_) if token.is_cancelled() => Outcome::Cancelled,
        Err(error) => Outcome::Failed(error.to_string()),
    }
}

/// A fresh context for work nobody watches (tests, the worker).
pub fn detached_context(token: CancellationToken) -> RunContext {
    RunContext {
        token,
        live: LiveSlot::default(),
        placement: PlacementSlot::default(),
    }
}

/// The binary a Slurm node runs: this one, when it can say where it is.
pub fn this_binary() -> Option<PathBuf> {
    std::env::current_exe().ok()
}
