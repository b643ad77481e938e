//! The job backend seam: where a job's work runs once the registry has
//! admitted it.
//!
//! The registries (bounds, queue, cancel, retention, portfolio races) never
//! change with the backend; only the work each admitted job starts does.
//! This file holds the seam itself — the [`JobBackend`] trait, the work a
//! backend is handed ([`CpsatJobRequest`], a `SolveRequest`) and the one
//! function each kind of work ends in ([`execute_solve`], [`run_job`]) —
//! and imports no backend. `LocalBackend` (`local.rs`) runs the work in
//! this process's executor (the default); `SlurmBackend` (`slurm.rs`) hands
//! it to Slurm as one batch job that runs `solvergate worker` on a node,
//! which ends in the same functions, so a result is the same struct
//! whichever ran it.
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

use super::registry::{JobState, Outcome, Work};
use crate::cpsat::{CheckerReport, CheckerSource, Cpsat, CpsatPythonResult, ScriptRequest};
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

/// A CP-SAT job as submitted.
#[derive(Debug, Clone)]
pub struct CpsatJobRequest {
    pub script: ScriptRequest,
    pub checker: Option<CheckerSource>,
    pub problem: Option<String>,
    pub checker_timeout_ms: Option<i64>,
}

/// What a finished CP-SAT job holds.
#[derive(Debug, Clone)]
pub struct CpsatJobOutput {
    pub result: Arc<CpsatPythonResult>,
    pub checker: Option<CheckerReport>,
    pub checker_skipped_reason: Option<String>,
}

/// The script, then — with a checkable answer — the checker (every
/// backend ends here; the Slurm worker too).
pub(crate) async fn run_job(
    cpsat: &Cpsat,
    request: &CpsatJobRequest,
    checker_timeout_ms: Option<u64>,
    token: &CancellationToken,
) -> Result<CpsatJobOutput, ToolError> {
    let mut result = cpsat.run(&request.script, &Progress::none(), token).await?;
    let (Some(checker), Some(checker_ms)) = (&request.checker, checker_timeout_ms) else {
        return Ok(CpsatJobOutput {
            result: Arc::new(result),
            checker: None,
            checker_skipped_reason: None,
        });
    };
    let solution = match result.checkable() {
        Ok(solution) => solution.clone(),
        Err(reason) => {
            return Ok(CpsatJobOutput {
                result: Arc::new(result),
                checker: None,
                checker_skipped_reason: Some(reason),
            });
        }
    };
    let report = cpsat
        .check(
            checker,
            request.problem.as_deref(),
            &solution,
            &result,
            checker_ms,
            token,
        )
        .await?;
    result.diagnostic = crate::cpsat::checked_diagnostic(&result, Some(&report));
    Ok(CpsatJobOutput {
        result: Arc::new(result),
        checker: Some(report),
        checker_skipped_reason: None,
    })
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
