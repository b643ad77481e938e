//! The Slurm backend: each solve job, portfolio attempt and CP-SAT job is
//! one Slurm batch job that runs `solvergate worker DIR` on a node.
//!
//! Per job: a directory of its own under the shared work directory with
//! `task.json` (see [`wire`](super::wire)) and a two-line `job.sh`;
//! `sbatch --parsable` (time limit = the job's budget plus grace, rounded
//! up to minutes; `--cpus-per-task` from `parallel` or 1; `--mem` when
//! configured); then a poll: the result file every 100 ms, `squeue` every
//! 500 ms for Slurm's state, node and reason. The worker renames its
//! `result.json` into place when it is done; the moment the server sees it
//! the job's work ends, so a portfolio's winner cancels its losers without
//! waiting for Slurm to notice the winner exited. Cancelling runs `scancel`
//! and waits until Slurm reports the job ended (not `COMPLETING`): its
//! processes are gone then, as with the local backend. Slurm's end states
//! without a result map to ours: `CANCELLED` → cancelled, anything else
//! (`TIMEOUT`, `FAILED`, `NODE_FAIL`, `OUT_OF_MEMORY`, ...) → failed, with
//! Slurm's state, reason and the tail of the job's output.
//!
//! The server's environment goes with the job, except its run tag (`exec`
//! kills what carries it when the server dies; a Slurm job outlives its
//! server). When `sbatch` returns, the run's handoff slot is told the Slurm
//! job id and directory, for the job's journal record: should the server
//! be killed, the next one resumes the same poll from there
//! ([`super::reattach`]); fresh and resumed jobs share one loop
//! (`follow`), and each removes its directory at the end.
//!
//! Every Slurm command goes through `exec` (unconfined: the sandbox would
//! cut it off from slurmctld). What this module must never do: report a
//! job ended while the Slurm job may still run.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::backend::{
    BoxFuture, CpsatJob, CpsatJobOutput, JobBackend, PlacementSlot, RunContext, SlurmHandoff,
    SlurmPlacement, SlurmState, cpsat_outcome, solve_outcome,
};
use super::registry::{Outcome, Work};
use super::wire::{
    RESULT_FILE, TASK_FILE, WorkerOutcome, WorkerTask, WorkerWork, write_atomically,
};
use crate::budget::Budget;
use crate::diagnostics::{Category, ToolError};
use crate::exec::{self, ChildCommand, Limits};
use crate::minizinc::{SolveRequest, SolveResult};
use crate::settings::SlurmSettings;

/// How often the result file is looked for.
const RESULT_POLL: Duration = Duration::from_millis(100);
/// `squeue` runs every this many result polls (500 ms).
const SQUEUE_EVERY: u32 = 5;
/// Added to a job's own budget for Slurm's time limit: the node's start-up,
/// the runtimes' own grace, writing the result.
const TIME_LIMIT_GRACE_MS: u64 = 60_000;
/// How long a Slurm client command may take.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a cancelled job may take to end in Slurm's eyes (its KillWait
/// plus slack) before we give up waiting.
const CANCEL_WAIT: Duration = Duration::from_secs(120);
/// `squeue` failures in a row before a job is given up as failed.
const SQUEUE_FAILURES: u32 = 20;

/// How a job left Slurm's queue without a result.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Gone {
    /// Slurm reports the job in an ended state.
    Ended(SlurmState),
    /// Slurm no longer knows the job at all: we cannot tell how it ended.
    Forgotten,
}

/// Everything the backend needs, resolved by the face at start-up.
#[derive(Debug, Clone)]
pub struct SlurmConfig {
    /// Partition, account, memory and work directory from `SOLVERGATE_SLURM_*`.
    pub settings: SlurmSettings,
    /// The shared work directory (`SOLVERGATE_SLURM_WORKDIR`).
    pub workdir: PathBuf,
    /// The `solvergate` binary the nodes run (same path on every node).
    pub worker: PathBuf,
    /// The server's `PATH`: where `sbatch`, `squeue`, `scancel` and
    /// `scontrol` are looked up.
    pub search_path: Option<OsString>,
    /// The MiniZinc runtime root and CP-SAT interpreter the server
    /// resolved; the worker uses the same paths.
    pub runtime_dir: PathBuf,
    /// The CP-SAT interpreter the server resolved; the worker runs scripts with
    /// it.
    pub cpsat_python: PathBuf,
    /// The server's `PYTHONPATH`, passed on to the worker for scripts.
    pub pythonpath: Option<String>,
}

/// Jobs handed to Slurm.
#[derive(Clone)]
pub struct SlurmBackend {
    config: Arc<SlurmConfig>,
    /// Slurm job ids submitted and not yet seen ended.
    submitted: Arc<Mutex<BTreeSet<String>>>,
}

/// A Slurm client command that did not do its job.
#[derive(Debug)]
struct CommandFailure {
    message: String,
}

/// Why a job's directory could not be written, or its result not read.
#[derive(Debug, thiserror::Error)]
enum JobDirError {
    #[error("could not {what} in the Slurm work directory {}: {source}", .workdir.display())]
    Write {
        what: &'static str,
        workdir: PathBuf,
        source: std::io::Error,
    },
    /// The blocking task that writes the directory did not finish.
    #[error("{}", .0.0.message)]
    Thread(ToolError),
    #[error("could not read {}: {source}", .path.display())]
    ReadResult {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The result file is there but not a result; `tail` is the job's
    /// output.
    #[error("the worker's {} could not be read: {source}; {tail}", .path.display())]
    BadResult {
        path: PathBuf,
        source: serde_json::Error,
        tail: String,
    },
}

/// How a dispatched job ended.
enum Dispatched {
    Done(Box<WorkerOutcome>),
    Cancelled,
    Failed(String),
}

impl Dispatched {
    /// A solve job's outcome, as the local backend would have ended it.
    fn solved(self, token: &CancellationToken) -> Outcome<SolveResult> {
        match self {
            Dispatched::Done(outcome) => solve_outcome(outcome.into_solve(), token),
            Dispatched::Cancelled => Outcome::Cancelled,
            Dispatched::Failed(message) => Outcome::Failed(message),
        }
    }

    /// A CP-SAT job's outcome, as the local backend would have ended it.
    fn scripted(self, token: &CancellationToken) -> Outcome<CpsatJobOutput> {
        match self {
            Dispatched::Done(outcome) => cpsat_outcome(outcome.into_cpsat(), token),
            Dispatched::Cancelled => Outcome::Cancelled,
            Dispatched::Failed(message) => Outcome::Failed(message),
        }
    }
}

/// What one Slurm job asks for.
struct Resources {
    kind: &'static str,
    cpus: u64,
    budget_ms: u64,
}

impl Resources {
    /// Slurm's time limit in whole minutes (at least 1).
    fn minutes(&self) -> u64 {
        self.budget_ms
            .saturating_add(TIME_LIMIT_GRACE_MS)
            .div_ceil(60_000)
            .max(1)
    }
}

/// A job's directory in the shared work directory, removed with its guard.
struct JobDir {
    path: PathBuf,
}

impl Drop for JobDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

impl SlurmBackend {
    /// A backend submitting through `config`'s Slurm client commands.
    pub fn new(config: SlurmConfig) -> Self {
        SlurmBackend {
            config: Arc::new(config),
            submitted: Arc::default(),
        }
    }

    /// A Slurm client command found on the server's `PATH`.
    fn program(&self, name: &str) -> Result<PathBuf, ToolError> {
        let found = self.config.search_path.as_ref().and_then(|path| {
            std::env::split_paths(path)
                .map(|dir| dir.join(name))
                .find(|candidate| candidate.is_file())
        });
        found.ok_or_else(|| {
            ToolError::new(
                Category::RuntimeMissing,
                format!(
                    "the Slurm job backend needs `{name}`, and it is not on the server's PATH; install Slurm's client commands (Debian: slurm-client) or start the server with them on PATH, or use SOLVERGATE_JOB_BACKEND=local"
                ),
            )
        })
    }

    /// Runs a Slurm client command to its end (never cut short by a job's
    /// token: a half-sent `sbatch` would leave a job we do not know of).
    async fn command(&self, name: &str, args: &[String]) -> Result<String, CommandFailure> {
        let line = std::iter::once(name.to_owned())
            .chain(args.iter().cloned())
            .collect::<Vec<_>>()
            .join(" ");
        let program = self.program(name).map_err(|error| CommandFailure {
            message: error.0.message,
        })?;
        let command = ChildCommand::new(program).args(args).unconfined();
        let run = exec::run(
            &command,
            Limits::new(COMMAND_TIMEOUT),
            &CancellationToken::new(),
        )
        .await
        .map_err(|error| CommandFailure {
            message: format!("`{line}` could not run: {error}"),
        })?;
        if run.ending == exec::Ending::Exited && run.return_code == Some(0) {
            return Ok(run.stdout);
        }
        // Slurm's clients print some refusals on stdout (`scontrol show
        // partition X`: "Partition X not found").
        let said = match (run.stderr.trim(), run.stdout.trim()) {
            ("", "") => "it printed nothing",
            ("", stdout) => stdout,
            (stderr, _) => stderr,
        };
        Err(CommandFailure {
            message: format!("`{line}` failed ({}): {said}", exec::ending_in_words(&run)),
        })
    }

    async fn check_usable(&self) -> Result<(), ToolError> {
        let workdir = &self.config.workdir;
        if !workdir.is_dir() {
            return Err(ToolError::new(
                Category::RuntimeMissing,
                format!(
                    "the Slurm work directory {} (SOLVERGATE_SLURM_WORKDIR) is not a directory; create it on a file system every node mounts at the same path",
                    workdir.display()
                ),
            ));
        }
        let mut args = vec!["show".to_owned(), "partition".to_owned()];
        args.extend(self.config.settings.partition.clone());
        self.command("scontrol", &args).await.map_err(|failure| {
            ToolError::new(
                Category::RuntimeMissing,
                format!(
                    "Slurm is not usable, so no job was admitted: {}. Check that slurmctld is reachable from this host and that SOLVERGATE_SLURM_PARTITION names a partition, or use SOLVERGATE_JOB_BACKEND=local",
                    failure.message
                ),
            )
        })?;
        for name in ["sbatch", "squeue", "scancel"] {
            self.program(name)?;
        }
        Ok(())
    }

    /// Writes the job's directory, submits it, tells the run where it went
    /// (its placement, and the handoff its journal record keeps), and
    /// follows it to its end.
    async fn dispatch(
        &self,
        work: WorkerWork,
        resources: Resources,
        run: &RunContext,
    ) -> Dispatched {
        let dir = match self.prepare(work).await {
            Ok(dir) => dir,
            Err(error) => return Dispatched::Failed(error.to_string()),
        };
        let id = match self.submit(&dir, &resources).await {
            Ok(id) => id,
            Err(failure) => return Dispatched::Failed(failure.message),
        };
        set(
            &run.placement,
            SlurmPlacement {
                job_id: id.clone(),
                node: None,
                state: SlurmState::Pending,
                reason: None,
            },
        );
        run.handoff.send_replace(Some(SlurmHandoff {
            job_id: id.clone(),
            dir: dir.path.clone(),
        }));
        self.follow(id, dir, run).await
    }

    /// Follows a job an earlier server submitted and left running, from
    /// where it left it: the same poll, cancel and end mapping as a job this
    /// server submitted, and its directory removed at the end.
    async fn resume(&self, handoff: SlurmHandoff, run: &RunContext) -> Dispatched {
        if let Err(why) = self.resumable(&handoff) {
            return Dispatched::Failed(why);
        }
        self.track(&handoff.job_id, true);
        let dir = JobDir { path: handoff.dir };
        self.follow(handoff.job_id, dir, run).await
    }

    /// Polls submitted job `id` until its result appears, Slurm says it
    /// ended without one, or its token is cancelled (then `scancel` and a
    /// wait). Fresh and resumed jobs both end here.
    async fn follow(&self, id: String, dir: JobDir, run: &RunContext) -> Dispatched {
        let mut ticks = 0u32;
        let mut failures = 0u32;
        loop {
            if run.token.is_cancelled() {
                return self.cancel(&id, &run.placement).await;
            }
            match read_result(&dir.path) {
                Ok(Some(outcome)) => {
                    // One look now, so the status names the node even when
                    // the job ran between two polls; then follow it to its
                    // end in the background.
                    if let Ok(Some(now)) = self.query(&id).await {
                        set(&run.placement, now);
                    }
                    self.follow_to_end(id, run.placement.clone(), dir);
                    return Dispatched::Done(Box::new(outcome));
                }
                Ok(None) => {}
                Err(error) => {
                    self.cancel(&id, &run.placement).await;
                    return Dispatched::Failed(error.to_string());
                }
            }
            if ticks.is_multiple_of(SQUEUE_EVERY) {
                match self.query(&id).await {
                    Ok(Some(placement)) => {
                        failures = 0;
                        let state = placement.state.clone();
                        set(&run.placement, placement);
                        if state.is_ended() {
                            return self.ended_without_result(&id, Gone::Ended(state), &dir, run);
                        }
                    }
                    Ok(None) => {
                        return self.ended_without_result(&id, Gone::Forgotten, &dir, run);
                    }
                    Err(failure) => {
                        failures += 1;
                        if failures >= SQUEUE_FAILURES {
                            self.cancel(&id, &run.placement).await;
                            return Dispatched::Failed(format!(
                                "lost track of Slurm job {id}: {}",
                                failure.message
                            ));
                        }
                    }
                }
            }
            ticks = ticks.wrapping_add(1);
            tokio::select! {
                () = run.token.cancelled() => {}
                () = tokio::time::sleep(RESULT_POLL) => {}
            }
        }
    }

    /// The job's directory with its task and script.
    async fn prepare(&self, work: WorkerWork) -> Result<JobDir, JobDirError> {
        let task = WorkerTask {
            runtime_dir: self.config.runtime_dir.clone(),
            cpsat_python: self.config.cpsat_python.clone(),
            pythonpath: self.config.pythonpath.clone(),
            work,
            // The caps the job was admitted under: the registry runs its
            // work under them, and the node's worker lowers its limits by them.
            limits: crate::exec::limits::current_caps(),
        };
        let workdir = self.config.workdir.clone();
        let worker = self.config.worker.clone();
        let written = crate::userfiles::off_thread(move || {
            let path = workdir.join(format!("job-{}", uuid::Uuid::new_v4().simple()));
            let problem = |what: &'static str, source: std::io::Error| JobDirError::Write {
                what,
                workdir: workdir.clone(),
                source,
            };
            let write = || -> Result<JobDir, JobDirError> {
                std::fs::create_dir(&path)
                    .map_err(|error| problem("create a job directory", error))?;
                let dir = JobDir { path };
                write_atomically(&dir.path.join(TASK_FILE), &task)
                    .map_err(|error| problem("write task.json", error))?;
                let script = format!(
                    "#!/bin/sh\nexec {} worker {}\n",
                    shell_quote(&worker),
                    shell_quote(&dir.path)
                );
                std::fs::write(dir.path.join("job.sh"), script)
                    .map_err(|error| problem("write job.sh", error))?;
                Ok(dir)
            };
            Ok(write())
        })
        .await;
        written.map_err(JobDirError::Thread)?
    }

    async fn submit(&self, dir: &JobDir, resources: &Resources) -> Result<String, CommandFailure> {
        let settings = &self.config.settings;
        let path = |name: &str| dir.path.join(name).to_string_lossy().into_owned();
        let mut args = vec![
            "--parsable".to_owned(),
            // The server's environment goes with the job (so sandbox and
            // Python settings apply on the node), but not its run tag: a
            // process carrying it is killed by this server's watchdog when
            // the server dies, and a Slurm job outlives its server.
            format!("--export=ALL,{}=", exec::escape::RUN_TAG),
            format!("--job-name=solvergate-{}", resources.kind),
            format!("--output={}", path("slurm.out")),
            format!("--chdir={}", dir.path.to_string_lossy()),
            "--nodes=1".to_owned(),
            "--ntasks=1".to_owned(),
            format!("--cpus-per-task={}", resources.cpus),
            format!("--time={}", resources.minutes()),
        ];
        if let Some(partition) = &settings.partition {
            args.push(format!("--partition={partition}"));
        }
        if let Some(account) = &settings.account {
            args.push(format!("--account={account}"));
        }
        if let Some(memory) = &settings.memory {
            args.push(format!("--mem={memory}"));
        }
        args.push(path("job.sh"));
        let out = self.command("sbatch", &args).await?;
        // `--parsable` prints `id` or `id;cluster`.
        let id = out.trim().split(';').next().unwrap_or("").trim().to_owned();
        if id.is_empty() || !id.chars().all(|c| c.is_ascii_digit()) {
            return Err(CommandFailure {
                message: format!("`sbatch --parsable` printed {out:?}, not a job id"),
            });
        }
        self.track(&id, true);
        Ok(id)
    }

    fn track(&self, id: &str, submitted: bool) {
        if let Ok(mut ids) = self.submitted.lock() {
            if submitted {
                ids.insert(id.to_owned());
            } else {
                ids.remove(id);
            }
        }
    }

    /// Slurm's view of a job; `None` when Slurm no longer knows it.
    async fn query(&self, id: &str) -> Result<Option<SlurmPlacement>, CommandFailure> {
        let args = [
            "--noheader".to_owned(),
            format!("--jobs={id}"),
            "--states=all".to_owned(),
            "--format=%T|%N|%r".to_owned(),
        ];
        match self.command("squeue", &args).await {
            Ok(out) => Ok(out
                .lines()
                .find(|line| !line.trim().is_empty())
                .map(|line| {
                    let mut fields = line.trim().splitn(3, '|');
                    let state = SlurmState::from_word(fields.next().unwrap_or(""));
                    let node = fields
                        .next()
                        .map(str::to_owned)
                        .filter(|node| !node.is_empty());
                    let reason = fields
                        .next()
                        .map(str::to_owned)
                        .filter(|reason| !reason.is_empty() && reason != "None");
                    SlurmPlacement {
                        job_id: id.to_owned(),
                        node,
                        state,
                        reason,
                    }
                })),
            Err(failure) if failure.message.contains("Invalid job id") => Ok(None),
            Err(failure) => Err(failure),
        }
    }

    /// `scancel`, then waits until Slurm says the job ended.
    async fn cancel(&self, id: &str, placement: &PlacementSlot) -> Dispatched {
        let _ = self.command("scancel", &[id.to_owned()]).await;
        let waited = tokio::time::timeout(CANCEL_WAIT, async {
            loop {
                match self.query(id).await {
                    Ok(Some(now)) => {
                        let done = now.state.is_ended();
                        set(placement, now);
                        if done {
                            return;
                        }
                    }
                    Ok(None) => return,
                    Err(_) => {}
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        })
        .await;
        if waited.is_ok() {
            self.track(id, false);
        }
        Dispatched::Cancelled
    }

    /// The job ended in Slurm's eyes; one last look for its result.
    fn ended_without_result(
        &self,
        id: &str,
        gone: Gone,
        dir: &JobDir,
        run: &RunContext,
    ) -> Dispatched {
        self.track(id, false);
        match read_result(&dir.path) {
            Ok(Some(outcome)) => return Dispatched::Done(Box::new(outcome)),
            Ok(None) => {}
            Err(error) => return Dispatched::Failed(error.to_string()),
        }
        if gone == Gone::Ended(SlurmState::Cancelled) || run.token.is_cancelled() {
            return Dispatched::Cancelled;
        }
        let reason = super::backend::placement_of(&run.placement)
            .and_then(|placement| placement.reason)
            .map(|reason| format!(", reason {reason}"))
            .unwrap_or_default();
        let what = match gone {
            Gone::Forgotten => format!("Slurm no longer knows job {id} and it left no result"),
            Gone::Ended(state) => format!("Slurm job {id} ended {state}{reason} without a result"),
        };
        Dispatched::Failed(format!("{what}; {}", output_tail(&dir.path)))
    }

    /// After the result arrived: follows the job until Slurm reports it
    /// ended, so the status shows Slurm's final state, then removes its
    /// directory.
    fn follow_to_end(&self, id: String, placement: PlacementSlot, dir: JobDir) {
        let backend = self.clone();
        tokio::spawn(async move {
            let _dir = dir;
            for _ in 0..(CANCEL_WAIT.as_millis() / 200) {
                match backend.query(&id).await {
                    Ok(Some(now)) => {
                        let done = now.state.is_ended();
                        set(&placement, now);
                        if done {
                            break;
                        }
                    }
                    Ok(None) => break,
                    Err(_) => {}
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            backend.track(&id, false);
        });
    }

    fn solve_resources(request: &SolveRequest) -> Resources {
        Resources {
            kind: "solve",
            cpus: request
                .controls
                .parallel
                .and_then(|threads| u64::try_from(threads).ok())
                .unwrap_or(1)
                .max(1),
            // MiniZinc's own limit plus the executor's grace on top of it.
            budget_ms: u64::try_from(request.timeout_ms.with_grace().as_millis())
                .unwrap_or(u64::MAX),
        }
    }
}

fn set(slot: &PlacementSlot, placement: SlurmPlacement) {
    if let Ok(mut held) = slot.lock() {
        *held = Some(placement);
    }
}

/// The worker's result, once it is there.
fn read_result(dir: &Path) -> Result<Option<WorkerOutcome>, JobDirError> {
    let path = dir.join(RESULT_FILE);
    match std::fs::read(&path) {
        Ok(bytes) => {
            serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|source| JobDirError::BadResult {
                    tail: output_tail(dir),
                    path,
                    source,
                })
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(JobDirError::ReadResult { path, source }),
    }
}

/// The last lines of the job's output, for a message.
fn output_tail(dir: &Path) -> String {
    let text = std::fs::read_to_string(dir.join("slurm.out")).unwrap_or_default();
    let lines: Vec<&str> = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .collect();
    if lines.is_empty() {
        return "the job printed nothing".to_owned();
    }
    let tail = lines[lines.len().saturating_sub(10)..].join("\n");
    let tail: String = tail
        .chars()
        .rev()
        .take(2000)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    format!("the job's last output:\n{tail}")
}

/// `path` as one single-quoted shell word.
fn shell_quote(path: &Path) -> String {
    format!("'{}'", path.to_string_lossy().replace('\'', "'\\''"))
}

impl JobBackend for SlurmBackend {
    fn name(&self) -> &'static str {
        "slurm"
    }

    fn describe(&self) -> String {
        format!(
            "jobs: slurm (partition {}, work directory {}, worker {})",
            self.config
                .settings
                .partition
                .as_deref()
                .unwrap_or("the cluster's default"),
            self.config.workdir.display(),
            self.config.worker.display()
        )
    }

    fn preflight<'a>(
        &'a self,
        _cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<(), ToolError>> {
        Box::pin(self.check_usable())
    }

    fn solve(&self, request: SolveRequest, run: RunContext) -> Work<SolveResult> {
        let backend = self.clone();
        Box::pin(async move {
            let resources = SlurmBackend::solve_resources(&request);
            let work = crate::userfiles::off_thread(move || WorkerWork::solve(&request)).await;
            let work = match work {
                Ok(work) => work,
                Err(error) => return Outcome::Failed(error.to_string()),
            };
            let dispatched = backend.dispatch(work, resources, &run).await;
            dispatched.solved(&run.token)
        })
    }

    fn cpsat(&self, job: CpsatJob, run: RunContext) -> Work<CpsatJobOutput> {
        let backend = self.clone();
        Box::pin(async move {
            let resources = Resources {
                kind: "cpsat",
                cpus: 1,
                budget_ms: job
                    .script
                    .timeout_ms
                    .as_millis()
                    .saturating_add(job.checker_timeout_ms.map_or(0, Budget::as_millis)),
            };
            let dispatched = backend
                .dispatch(WorkerWork::Cpsat(job), resources, &run)
                .await;
            dispatched.scripted(&run.token)
        })
    }

    fn resumable(&self, handoff: &SlurmHandoff) -> Result<(), String> {
        let id = &handoff.job_id;
        if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!("{id:?} is not a Slurm job id"));
        }
        let in_workdir = handoff.dir.parent() == Some(self.config.workdir.as_path())
            && handoff
                .dir
                .file_name()
                .and_then(|name| name.to_str())
                .and_then(|name| name.strip_prefix("job-"))
                .is_some_and(|uuid| {
                    uuid.len() == 32
                        && uuid
                            .bytes()
                            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
                });
        if !in_workdir {
            return Err(format!(
                "its directory {} is not a job directory of this server's Slurm work directory {} (SOLVERGATE_SLURM_WORKDIR)",
                handoff.dir.display(),
                self.config.workdir.display()
            ));
        }
        Ok(())
    }

    fn resume_solve(&self, handoff: SlurmHandoff, run: RunContext) -> Work<SolveResult> {
        let backend = self.clone();
        Box::pin(async move { backend.resume(handoff, &run).await.solved(&run.token) })
    }

    fn resume_cpsat(&self, handoff: SlurmHandoff, run: RunContext) -> Work<CpsatJobOutput> {
        let backend = self.clone();
        Box::pin(async move { backend.resume(handoff, &run).await.scripted(&run.token) })
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let ids: Vec<String> = self
                .submitted
                .lock()
                .map(|ids| ids.iter().cloned().collect())
                .unwrap_or_default();
            if !ids.is_empty() {
                let _ = self.command("scancel", &ids).await;
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_limits_round_up_to_minutes_with_grace() {
        let minutes = |budget_ms| {
            Resources {
                kind: "solve",
                cpus: 1,
                budget_ms,
            }
            .minutes()
        };
        assert_eq!(minutes(0), 1);
        assert_eq!(minutes(1_000), 2);
        assert_eq!(minutes(120_000), 3);
        assert_eq!(minutes(u64::MAX), u64::MAX.div_ceil(60_000));
    }

    /// Only a job directory of this server's work directory is followed
    /// (and so removed at the end), whatever a record on disk says.
    #[test]
    fn only_job_dirs_of_the_work_directory_are_resumed() {
        let backend = SlurmBackend::new(SlurmConfig {
            settings: SlurmSettings::default(),
            workdir: PathBuf::from("/shared/sg"),
            worker: PathBuf::from("/usr/bin/solvergate"),
            search_path: None,
            runtime_dir: PathBuf::from("/opt/minizinc"),
            cpsat_python: PathBuf::from("/usr/bin/python3"),
            pythonpath: None,
        });
        let handoff = |job_id: &str, dir: &str| SlurmHandoff {
            job_id: job_id.to_owned(),
            dir: PathBuf::from(dir),
        };
        let good = "/shared/sg/job-0123456789abcdef0123456789abcdef";
        assert_eq!(backend.resumable(&handoff("41", good)), Ok(()));
        let refused = [
            handoff("", good),
            handoff("41;rm", good),
            handoff("41", "/home/me"),
            handoff("41", "/shared/sg"),
            handoff("41", "/shared/sg/job-0123456789abcdef0123456789abcdef/.."),
            handoff(
                "41",
                "/shared/sg/../sg/job-0123456789abcdef0123456789abcdef",
            ),
            handoff("41", "/shared/sg/job-0123456789ABCDEF0123456789abcdef"),
            handoff(
                "41",
                "/shared/sg/other/job-0123456789abcdef0123456789abcdef",
            ),
        ];
        for handoff in refused {
            assert!(backend.resumable(&handoff).is_err(), "{handoff:?}");
        }
    }

    #[test]
    fn paths_are_quoted_for_the_shell() {
        assert_eq!(shell_quote(Path::new("/a b/it's")), "'/a b/it'\\''s'");
    }

    #[test]
    fn slurm_end_states() {
        let ended = |word| SlurmState::from_word(word).is_ended();
        assert!(ended("CANCELLED") && ended("TIMEOUT") && ended("NODE_FAIL"));
        assert!(!ended("PENDING") && !ended("RUNNING") && !ended("COMPLETING"));
        assert!(!ended("SOMETHING_NEW"));
    }
}
