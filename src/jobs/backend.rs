//! The job backend seam: where a job's work runs once the registry has
//! admitted it.
//!
//! The registries (bounds, queue, cancel, retention, portfolio races) never
//! change with the backend; only the work each admitted job starts does.
//! This file holds the seam itself — the [`JobBackend`] trait, the work a
//! backend is handed ([`CpsatJob`], a `SolveRequest`) and the one
//! function each kind of work ends in ([`execute_solve`], [`run_job`]) —
//! and imports no backend. `LocalBackend` (`local.rs`) runs the work in
//! this process's executor (the default); `SlurmBackend` (`slurm.rs`) hands
//! it to Slurm as one batch job that runs `solvergate worker` on a node,
//! which ends in the same functions, so a result is the same struct
//! whichever ran it.
//!
//! A backend whose work may outlive its server (Slurm) tells where it went
//! ([`SlurmHandoff`], through the run's handoff slot) and can follow such
//! work from there in a later server (`resume_solve`, `resume_cpsat`).
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
use crate::budget::Budget;
use crate::cpsat::{
    CheckerReport, Cpsat, CpsatPythonResult, RunChecker, ScriptRequest, ScriptSource,
};
use crate::diagnostics::ToolError;
use crate::minizinc::{MiniZinc, SolveRequest, SolveResult, SolveStatus};
use crate::progress::{LiveSlot, Progress};

/// A boxed future a backend returns.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Where a job runs on a cluster, as its status reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SlurmPlacement {
    // Field docs stay out of the published schema: tools/list is bounded.
    /// Slurm's job id.
    pub job_id: String,
    /// The node running the job; `None` until Slurm has placed it.
    pub node: Option<String>,
    /// As last seen: PENDING, RUNNING, COMPLETED, CANCELLED, ...
    #[schemars(with = "String")]
    pub state: SlurmState,
    /// Slurm's reason while the job is pending (e.g. `Resources`), when it
    /// gives one.
    pub reason: Option<String>,
}

/// A Slurm job state as `squeue --format=%T` spells it.
///
/// Open on purpose: Slurm adds states across versions, so a word not listed
/// here is kept verbatim in [`SlurmState::Other`] (never taken for ended).
/// Serialised as Slurm's own word. That Slurm no longer knows a job at all
/// is not a state of the job: the backend says it apart.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum SlurmState {
    /// `BOOT_FAIL`: the node failed to boot.
    BootFail,
    /// `CANCELLED`: by a user or an administrator.
    Cancelled,
    /// `COMPLETED`: every process exited with 0.
    Completed,
    /// `COMPLETING`: ended, some processes may still run.
    Completing,
    /// `CONFIGURING`: allocated, nodes booting.
    Configuring,
    /// `DEADLINE`: ended at its deadline.
    Deadline,
    /// `FAILED`: a non-zero exit code or another failure.
    Failed,
    /// `NODE_FAIL`: a node it ran on failed.
    NodeFail,
    /// `OUT_OF_MEMORY`.
    OutOfMemory,
    /// `PENDING`: waiting for resources.
    Pending,
    /// `PREEMPTED`.
    Preempted,
    /// `REQUEUED`: put back in the queue.
    Requeued,
    /// `REQUEUE_FED`.
    RequeueFed,
    /// `REQUEUE_HOLD`.
    RequeueHold,
    /// `RESIZING`.
    Resizing,
    /// `RESV_DEL_HOLD`: held after its reservation was deleted.
    ResvDelHold,
    /// `REVOKED`: removed from a federation sibling.
    Revoked,
    /// `RUNNING`.
    Running,
    /// `SIGNALING`: being sent a signal.
    Signaling,
    /// `SPECIAL_EXIT`.
    SpecialExit,
    /// `STAGE_OUT`: staging out data.
    StageOut,
    /// `STOPPED`: stopped with SIGSTOP, resources kept.
    Stopped,
    /// `SUSPENDED`.
    Suspended,
    /// `TIMEOUT`: it reached its time limit.
    Timeout,
    /// A word this version does not know, verbatim.
    Other(String),
}

impl SlurmState {
    /// Reads Slurm's word.
    pub fn from_word(word: &str) -> SlurmState {
        match word {
            "BOOT_FAIL" => SlurmState::BootFail,
            "CANCELLED" => SlurmState::Cancelled,
            "COMPLETED" => SlurmState::Completed,
            "COMPLETING" => SlurmState::Completing,
            "CONFIGURING" => SlurmState::Configuring,
            "DEADLINE" => SlurmState::Deadline,
            "FAILED" => SlurmState::Failed,
            "NODE_FAIL" => SlurmState::NodeFail,
            "OUT_OF_MEMORY" => SlurmState::OutOfMemory,
            "PENDING" => SlurmState::Pending,
            "PREEMPTED" => SlurmState::Preempted,
            "REQUEUED" => SlurmState::Requeued,
            "REQUEUE_FED" => SlurmState::RequeueFed,
            "REQUEUE_HOLD" => SlurmState::RequeueHold,
            "RESIZING" => SlurmState::Resizing,
            "RESV_DEL_HOLD" => SlurmState::ResvDelHold,
            "REVOKED" => SlurmState::Revoked,
            "RUNNING" => SlurmState::Running,
            "SIGNALING" => SlurmState::Signaling,
            "SPECIAL_EXIT" => SlurmState::SpecialExit,
            "STAGE_OUT" => SlurmState::StageOut,
            "STOPPED" => SlurmState::Stopped,
            "SUSPENDED" => SlurmState::Suspended,
            "TIMEOUT" => SlurmState::Timeout,
            other => SlurmState::Other(other.to_owned()),
        }
    }

    /// Slurm's word.
    pub fn as_str(&self) -> &str {
        match self {
            SlurmState::BootFail => "BOOT_FAIL",
            SlurmState::Cancelled => "CANCELLED",
            SlurmState::Completed => "COMPLETED",
            SlurmState::Completing => "COMPLETING",
            SlurmState::Configuring => "CONFIGURING",
            SlurmState::Deadline => "DEADLINE",
            SlurmState::Failed => "FAILED",
            SlurmState::NodeFail => "NODE_FAIL",
            SlurmState::OutOfMemory => "OUT_OF_MEMORY",
            SlurmState::Pending => "PENDING",
            SlurmState::Preempted => "PREEMPTED",
            SlurmState::Requeued => "REQUEUED",
            SlurmState::RequeueFed => "REQUEUE_FED",
            SlurmState::RequeueHold => "REQUEUE_HOLD",
            SlurmState::Resizing => "RESIZING",
            SlurmState::ResvDelHold => "RESV_DEL_HOLD",
            SlurmState::Revoked => "REVOKED",
            SlurmState::Running => "RUNNING",
            SlurmState::Signaling => "SIGNALING",
            SlurmState::SpecialExit => "SPECIAL_EXIT",
            SlurmState::StageOut => "STAGE_OUT",
            SlurmState::Stopped => "STOPPED",
            SlurmState::Suspended => "SUSPENDED",
            SlurmState::Timeout => "TIMEOUT",
            SlurmState::Other(word) => word,
        }
    }

    /// Whether Slurm runs nothing more of the job (`COMPLETING` is not
    /// ended: processes may still run; an unknown word is not either).
    pub fn is_ended(&self) -> bool {
        match self {
            SlurmState::BootFail
            | SlurmState::Cancelled
            | SlurmState::Completed
            | SlurmState::Deadline
            | SlurmState::Failed
            | SlurmState::NodeFail
            | SlurmState::OutOfMemory
            | SlurmState::Preempted
            | SlurmState::Revoked
            | SlurmState::SpecialExit
            | SlurmState::Timeout => true,
            SlurmState::Completing
            | SlurmState::Configuring
            | SlurmState::Pending
            | SlurmState::Requeued
            | SlurmState::RequeueFed
            | SlurmState::RequeueHold
            | SlurmState::Resizing
            | SlurmState::ResvDelHold
            | SlurmState::Running
            | SlurmState::Signaling
            | SlurmState::StageOut
            | SlurmState::Stopped
            | SlurmState::Suspended
            | SlurmState::Other(_) => false,
        }
    }
}

impl From<String> for SlurmState {
    fn from(word: String) -> SlurmState {
        SlurmState::from_word(&word)
    }
}

impl From<SlurmState> for String {
    fn from(state: SlurmState) -> String {
        state.as_str().to_owned()
    }
}

impl std::fmt::Display for SlurmState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Shared with the job's status: the backend fills it in as it learns.
pub type PlacementSlot = Arc<Mutex<Option<SlurmPlacement>>>;

/// A job handed to Slurm, as its journal record keeps it: enough for a
/// later server to follow the job to its end when this one is gone
/// (Slurm jobs outlive their server; see [`super::reattach`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlurmHandoff {
    /// Slurm's job id.
    pub job_id: String,
    /// The job's directory in the shared work directory: its `task.json`,
    /// and the `result.json` its worker leaves.
    pub dir: PathBuf,
}

/// Where a job's work was handed off, told once by the backend the moment
/// `sbatch` returns; the registry's journal waits on it to write the job's
/// record again with it.
pub type HandoffSlot = Arc<tokio::sync::watch::Sender<Option<SlurmHandoff>>>;

/// A handoff slot with nothing told yet.
pub fn handoff_slot() -> HandoffSlot {
    Arc::new(tokio::sync::watch::Sender::new(None))
}

/// What a handoff slot holds.
pub(crate) fn handoff_of(slot: &HandoffSlot) -> Option<SlurmHandoff> {
    slot.borrow().clone()
}

/// The last placement a slot holds.
pub(crate) fn placement_of(slot: &PlacementSlot) -> Option<SlurmPlacement> {
    slot.lock().ok().and_then(|placement| placement.clone())
}

/// The state a client reads: a job the registry started but Slurm still
/// holds `PENDING` is `queued`.
pub(crate) fn visible_state(state: JobState, placement: Option<&SlurmPlacement>) -> JobState {
    match placement {
        Some(placement) if state == JobState::Running && placement.state == SlurmState::Pending => {
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
    /// Told once the work was handed to Slurm (the Slurm backend tells it).
    pub handoff: HandoffSlot,
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
    fn cpsat(&self, job: CpsatJob, run: RunContext) -> Work<CpsatJobOutput>;

    /// Whether this backend can follow `handoff`, a job an earlier server
    /// handed off and left running; `Err` says why not, in words.
    fn resumable(&self, handoff: &SlurmHandoff) -> Result<(), String>;

    /// Follows the solve `handoff` names from where its server left it
    /// (already submitted) to its end, as [`Self::solve`] would have.
    fn resume_solve(&self, handoff: SlurmHandoff, run: RunContext) -> Work<SolveResult>;

    /// Follows the CP-SAT job `handoff` names, as [`Self::cpsat`] would
    /// have.
    fn resume_cpsat(&self, handoff: SlurmHandoff, run: RunContext) -> Work<CpsatJobOutput>;

    /// Stops whatever this backend still has running elsewhere (the server
    /// is going away); waits until it has.
    fn shutdown(&self) -> BoxFuture<'_, ()>;
}

/// A CP-SAT job as submitted.
#[derive(Debug, Clone)]
pub struct CpsatJobRequest {
    /// The script, its arguments, replay variables and budget.
    pub script: ScriptRequest,
    /// The checker to run on the script's answer; `None`: the job only runs the
    /// script.
    pub checker: Option<ScriptSource>,
    /// The instance the checker validates against, as text.
    pub problem: Option<String>,
    /// The checker's budget, checked where the request was made; `None`:
    /// the script's. Given without a checker, it is refused at admission.
    pub checker_timeout_ms: Option<Budget>,
}

/// A CP-SAT job as admitted: its paths absolute, its checker's budget
/// decided. What a backend runs and, as it is, what a Slurm task file
/// carries (the script's fields at the top level, its source as `script`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CpsatJob {
    /// The script, its arguments, replay variables and budget.
    #[serde(flatten)]
    pub script: ScriptRequest,
    /// The checker run on the script's answer.
    pub checker: Option<ScriptSource>,
    /// The instance the checker validates against, as text.
    pub problem: Option<String>,
    /// Set exactly when `checker` is.
    pub checker_timeout_ms: Option<Budget>,
}

/// What a finished CP-SAT job holds (and, as it is, what a Slurm worker
/// leaves in its result file).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CpsatJobOutput {
    /// The script's run, its diagnostic set from the checker's verdict.
    pub result: Arc<CpsatPythonResult>,
    /// The checker's report, when it ran.
    pub checker: Option<CheckerReport>,
    /// Why the checker did not run on the answer.
    pub checker_skipped_reason: Option<String>,
}

/// The script, then — with a checkable answer — the checker (every
/// backend ends here; the Slurm worker too).
pub(crate) async fn run_job(
    cpsat: &Cpsat,
    job: &CpsatJob,
    progress: &Progress,
    token: &CancellationToken,
) -> Result<CpsatJobOutput, ToolError> {
    let checker = match (&job.checker, job.checker_timeout_ms) {
        (Some(checker), Some(budget)) => Some((RunChecker::Source(checker), budget)),
        _ => None,
    };
    let checked = cpsat
        .run_then_check(
            &job.script,
            checker,
            job.problem.as_deref(),
            progress,
            token,
        )
        .await?;
    Ok(CpsatJobOutput {
        result: Arc::new(checked.run),
        checker: checked.checker,
        checker_skipped_reason: checked.checker_skipped_reason,
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
        Ok(result) if result.status == SolveStatus::Timeout => Outcome::TimedOut(result),
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
        Ok(output) if output.result.status == crate::cpsat::ScriptStatus::Timeout => {
            Outcome::TimedOut(output)
        }
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
        handoff: handoff_slot(),
    }
}

/// The binary a Slurm node runs: this one, when it can say where it is.
pub fn this_binary() -> Option<PathBuf> {
    std::env::current_exe().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slurm_states_keep_slurms_words() {
        for word in ["PENDING", "OUT_OF_MEMORY", "RESV_DEL_HOLD", "SOMETHING_NEW"] {
            let state = SlurmState::from_word(word);
            assert_eq!(state.as_str(), word);
            assert_eq!(
                serde_json::to_string(&state).unwrap(),
                format!("\"{word}\"")
            );
            let back: SlurmState = serde_json::from_str(&format!("\"{word}\"")).unwrap();
            assert_eq!(back, state);
        }
        assert_eq!(
            SlurmState::from_word("SOMETHING_NEW"),
            SlurmState::Other("SOMETHING_NEW".to_owned())
        );
    }
}
