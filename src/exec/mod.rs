//! The one subprocess executor: every child process solvergate starts goes
//! through [`run`].
//!
//! A child starts in a session of its own with stdin from `/dev/null` and its
//! stdout and stderr going to unnamed temp files. One combined cap bounds
//! what we keep of both; a wall-clock deadline bounds how long it may run; a
//! cancellation token stops it early. However the run ends, the child's
//! whole process tree is gone when `run` returns, and a guard kills it if the
//! future is dropped first (an early return, a cancelled MCP request, a
//! server shutting down).
//!
//! The blocking parts of a run — the `/proc` sweep with its pauses and
//! reading the captures back — happen on tokio's blocking pool, never on an
//! async worker thread; only the drop guard sweeps synchronously, since a
//! drop cannot wait.
//!
//! Processes that leave the child's session (`setsid`) are killed with its
//! tree ([`escape`]), and when the child exits by itself only what the tree
//! wrote until that moment is its output ([`pipes`] for the pipes, the
//! file lengths at the exit for capture files): later bytes are counted in
//! [`RunOutput::late_output_bytes`], escapees in [`RunOutput::escaped`].
//!
//! What this module does not do: interpret output. It hands back text and
//! facts (`return_code`, `timed_out`, `truncated`, `elapsed_ms`, what was
//! left behind); services decide what they mean.

mod cgroup;
mod clone_into;
pub mod confine;
pub mod escape;
mod forker;
mod jail;
mod last_words;
pub mod limits;
mod memory_watch;
mod pipes;
pub mod reads;
pub mod sandbox;
mod spawn;
mod tree;
pub mod watchdog;

pub use forker::{Forker, NotForked};
pub use limits::{Breach, LimitCaps, LimitKind, ResourceLimits};
pub use sandbox::SandboxReport;
pub use watchdog::scratch_dir;

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use nix::unistd::Pid;
use tokio_util::sync::CancellationToken;

use jail::Jail;
use pipes::{HeadAndTail, Readers, SharedCapture};

/// The combined cap on captured stdout + stderr: 1 MiB.
pub const OUTPUT_CAP: u64 = 1024 * 1024;

/// How often a running child's output files are measured against the cap.
const CAP_POLL: Duration = Duration::from_millis(20);

/// What to start: a program, its arguments, where, and with which changes
/// to the inherited environment.
#[derive(Debug, Clone)]
pub struct ChildCommand {
    program: PathBuf,
    args: Vec<OsString>,
    cwd: Option<PathBuf>,
    env_set: Vec<(OsString, OsString)>,
    env_remove: Vec<OsString>,
    unconfined: bool,
    writable: Vec<PathBuf>,
    /// What the call named, which a sandboxed child may read (see
    /// [`reads`]).
    readable: Vec<PathBuf>,
    /// `HOME` is the run's scratch dir, where a sandboxed child may write
    /// its caches, rather than the user's.
    scratch_home: bool,
}

impl ChildCommand {
    /// A command that runs `program` with no arguments, in the server's working
    /// directory, with the variables the server passes (see
    /// [`pass_environment`]).
    pub fn new(program: impl Into<PathBuf>) -> Self {
        ChildCommand {
            program: program.into(),
            args: Vec::new(),
            cwd: None,
            env_set: Vec::new(),
            env_remove: Vec::new(),
            unconfined: false,
            writable: Vec::new(),
            readable: Vec::new(),
            scratch_home: false,
        }
    }

    /// Lets the child read beneath `path` when sandboxed (a directory the
    /// call named, a runtime's module path): see [`reads`].
    pub fn readable(mut self, path: impl Into<PathBuf>) -> Self {
        self.readable.push(path.into());
        self
    }

    /// Lets the child read `file`, a file the call named, and its whole
    /// directory unless that is too broad to hand over (the file system's
    /// root, the home dir or above, the temp dir or above: see
    /// [`reads::may_read_whole`]). A symlink is read where it resolves
    /// to, so its target's directory (or the target alone) is granted too.
    pub fn reads_beside(mut self, file: impl AsRef<std::path::Path>) -> Self {
        self.readable.extend(reads::beside(file.as_ref()));
        self
    }

    /// Lets the child read all of `dir` (its working directory, an include
    /// directory) unless that is too broad ([`reads::may_read_whole`]).
    pub fn reads_dir(mut self, dir: impl AsRef<std::path::Path>) -> Self {
        let dir = dir.as_ref();
        if reads::may_read_whole(dir) {
            self.readable.push(dir.to_path_buf());
        }
        self
    }

    /// Gives a sandboxed child its scratch dir as `HOME` (a script's
    /// caches land there), where MiniZinc keeps the user's, whose
    /// configuration it reads.
    pub fn scratch_home(mut self) -> Self {
        self.scratch_home = true;
        self
    }

    /// Lets the child write beneath `dir` too when sandboxed (its own temp
    /// dir, say: an inline script's); measured with its scratch dir.
    pub fn writable(mut self, dir: impl Into<PathBuf>) -> Self {
        self.writable.push(dir.into());
        self
    }

    /// Where this child may write when sandboxed, given its scratch dir.
    fn write_dirs(&self, scratch: &std::path::Path) -> Vec<PathBuf> {
        let mut dirs = sandbox::writable(scratch);
        dirs.extend(self.writable.iter().cloned());
        dirs
    }

    /// What the executor adds to the child's environment when it runs in
    /// a jail: its scratch dir as `TMPDIR` (and `HOME`, when asked).
    fn jail_environment(&self, scratch: &std::path::Path) -> Vec<(OsString, OsString)> {
        let mut env = vec![(OsString::from("TMPDIR"), scratch.as_os_str().to_owned())];
        if self.scratch_home {
            env.push((OsString::from("HOME"), scratch.as_os_str().to_owned()));
        }
        env
    }

    /// What the scratch watchdog measures: the scratch dir and the
    /// child's own writable dirs.
    fn measured_dirs(&self, scratch: &std::path::Path) -> Vec<PathBuf> {
        let mut dirs = vec![scratch.to_path_buf()];
        dirs.extend(self.writable.iter().cloned());
        dirs
    }

    /// Never run this child in the sandbox (the installer's pip needs the
    /// network).
    pub fn unconfined(mut self) -> Self {
        self.unconfined = true;
        self
    }

    /// Appends one argument, passed as it is (no shell).
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Appends every argument of `args`, in order.
    pub fn args<I: IntoIterator<Item = S>, S: Into<OsString>>(mut self, args: I) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Runs the child in `dir` instead of the server's working directory.
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    /// Sets `key` for the child; applied after the removals, so it wins over
    /// [`Self::env_remove`].
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env_set.push((key.into(), value.into()));
        self
    }

    /// Removes `key` from what the child inherits.
    pub fn env_remove(mut self, key: impl Into<OsString>) -> Self {
        self.env_remove.push(key.into());
        self
    }
}

/// How long a child may run and how much of its output we keep.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Wall-clock budget from spawn; past it the tree is stopped.
    pub timeout: Duration,
    /// Time between SIGTERM to the group and SIGKILL to the session, when
    /// the deadline or the cap stops a child (a cancelled child is killed at
    /// once).
    pub term_grace: Duration,
    /// Combined cap on stdout + stderr bytes kept.
    pub output_cap: u64,
    /// What happens past the cap.
    pub overflow: Overflow,
    /// Rewrites stdout line by line before it reaches the capture (and the
    /// cap): the service's own way to keep one copy of what it needs. Each
    /// run makes its own filter.
    pub stdout_filter: Option<NewLineFilter>,
}

/// A stdout rewrite, fed each line (without its newline) in order. A line
/// longer than the cap is never handed over; it is captured as it is.
pub trait LineFilter: Send {
    /// `None` keeps the line as it is, `Some(text)` replaces it (with
    /// several lines as the filter needs; an empty text drops the line).
    fn line(&mut self, line: &str) -> Option<String>;

    /// At the end of the stream, what the filter held back, if anything.
    fn finish(&mut self) -> Option<String> {
        None
    }
}

/// A [`LineFilter`] that looks at each line alone.
pub struct EachLine(pub fn(&str) -> Option<String>);

impl LineFilter for EachLine {
    fn line(&mut self, line: &str) -> Option<String> {
        (self.0)(line)
    }
}

/// Makes a run's own [`LineFilter`] (a filter may keep state between lines).
pub type NewLineFilter = fn() -> Box<dyn LineFilter>;

/// What a run does when its output goes over the cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overflow {
    /// Stop the tree (`Ending::Capped`): MiniZinc, whose solutions are
    /// parsed as they come.
    Stop,
    /// Let the child run to its own end and keep a bounded head and tail
    /// of each stream (three quarters of the cap for stdout, a quarter for
    /// stderr): a chatty script's last line — its answer — survives.
    KeepHeadAndTail,
}

impl Limits {
    /// Limits with a `timeout`, a 500 ms term grace, the 1 MiB cap, stopping at
    /// the cap, no stdout filter.
    pub fn new(timeout: Duration) -> Self {
        Limits {
            timeout,
            term_grace: Duration::from_millis(500),
            output_cap: OUTPUT_CAP,
            overflow: Overflow::Stop,
            stdout_filter: None,
        }
    }

    /// Rewrite stdout through `filter` before capturing it (with
    /// [`Overflow::Stop`] only; a head-and-tail run keeps its text as is).
    pub fn filter_stdout(mut self, filter: NewLineFilter) -> Self {
        self.stdout_filter = Some(filter);
        self
    }

    /// Past the cap, keep the head and the tail instead of stopping.
    pub fn keep_head_and_tail(mut self) -> Self {
        self.overflow = Overflow::KeepHeadAndTail;
        self
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The child exited on its own (or was killed by someone else).
    Exited,
    /// The wall-clock deadline fired and we stopped the tree.
    TimedOut,
    /// The output went over the cap and we stopped the tree.
    Capped,
    /// The caller cancelled and we stopped the tree.
    Cancelled,
    /// The caller asked the child to stop and report (SIGINT, as Ctrl-C
    /// would, then the grace period): what it printed is kept.
    Stopped,
    /// The tree went over a limit the executor measures (its scratch dir;
    /// under rlimits, its memory) and we stopped it as at the deadline: [`RunOutput::breach`] says
    /// which.
    OverLimit,
}

/// What a finished run leaves behind.
#[derive(Debug, Clone)]
pub struct RunOutput {
    /// Why the run ended: by itself, or which of our stops ended it.
    pub ending: Ending,
    /// The exit code; minus the signal number when a signal we did not send
    /// ended it; `None` when we stopped it.
    pub return_code: Option<i32>,
    /// Combined output exceeded the cap (whether or not we had to kill).
    pub truncated: bool,
    /// Wall-clock time from spawn to the end of the run, in milliseconds.
    pub elapsed_ms: u64,
    /// What the child printed on stdout (as far as the cap kept it), invalid
    /// UTF-8 replaced.
    pub stdout: String,
    /// What the child printed on stderr (as far as the cap kept it), invalid
    /// UTF-8 replaced.
    pub stderr: String,
    /// What the sandbox enforced, when the child ran in one.
    pub sandbox: Option<SandboxReport>,
    /// Bytes the tree wrote after the child exited by itself (from a
    /// process that escaped its session, before the sweep killed it): not
    /// in `stdout`/`stderr`, which hold what was written until the exit.
    pub late_output_bytes: u64,
    /// Processes outside the child's session, started from its tree, that
    /// the sweep had to kill (see [`escape`]).
    pub escaped: u32,
    /// The resource limit the tree went over, when it did (see
    /// [`limits`]).
    pub breach: Option<Breach>,
}

impl RunOutput {
    /// Whether the wall-clock deadline ended the run ([`Ending::TimedOut`]).
    pub fn timed_out(&self) -> bool {
        self.ending == Ending::TimedOut
    }

    /// Whether the tree left something behind: an escaped process, or
    /// output after the child exited.
    pub fn left_behind(&self) -> bool {
        self.escaped > 0 || self.late_output_bytes > 0
    }
}

/// Fixes, once at start-up, which of the server's variables every child
/// sees: [`crate::settings::PASSED_VARIABLES`], any `LC_*`, and `names`
/// (`SOLVERGATE_PASS_ENV`). Nothing else of the server's environment
/// (its HTTP token, the user's API keys) reaches a child.
pub fn pass_environment(names: &[String]) {
    let _ = PASS_ENV.set(names.to_vec());
    spawn::pass_environment(names);
}

/// What `SOLVERGATE_PASS_ENV` named.
static PASS_ENV: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();

/// Which of the server's variables pass to runs, as a rule a person reads.
pub fn environment_in_words() -> String {
    let named = PASS_ENV.get().filter(|names| !names.is_empty());
    format!(
        "runs see only {}, LC_* and what SOLVERGATE_PASS_ENV names ({}) of the server's variables",
        crate::settings::PASSED_VARIABLES.join(", "),
        named.map_or("none".to_owned(), |names| names.join(", "))
    )
}

/// The names of the server's variables children see (for `check_runtime`).
pub fn passed_variable_names() -> Vec<String> {
    let mut names: Vec<String> = spawn::passed_environment()
        .iter()
        .map(|(key, _)| key.to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// What a tree left behind, in words ("2 processes that left its session
/// were killed; 40 bytes they wrote after it exited were ignored"), or
/// `None` when it left nothing.
pub fn left_behind_in_words(run: &RunOutput) -> Option<String> {
    let mut parts = Vec::new();
    match run.escaped {
        0 => {}
        1 => parts.push("1 process that left its session was killed".to_owned()),
        many => parts.push(format!(
            "{many} processes that left its session were killed"
        )),
    }
    if run.late_output_bytes > 0 {
        parts.push(format!(
            "{} bytes written after it exited were ignored",
            run.late_output_bytes
        ));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// How a run ended, in words for a message ("exited with code 3", "was
/// killed by signal 9", "ran out of time").
pub fn ending_in_words(run: &RunOutput) -> String {
    match (run.ending, run.return_code) {
        (Ending::TimedOut, _) => "it ran out of time".to_owned(),
        (Ending::Capped, _) => "its output went over the 1 MiB cap".to_owned(),
        (Ending::Cancelled, _) => "it was cancelled".to_owned(),
        (Ending::Stopped, _) => "it was stopped".to_owned(),
        (Ending::OverLimit, _) => "it went over a resource limit".to_owned(),
        (Ending::Exited, Some(code)) if code < 0 => format!("it was killed by signal {}", -code),
        (Ending::Exited, Some(code)) => format!("it exited with code {code}"),
        (Ending::Exited, None) => "it ended without an exit code".to_owned(),
    }
}

/// Why a child could not be run at all.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// The program could not be spawned (not found, not executable, ...).
    #[error("could not start {program}: {source}")]
    Spawn {
        /// The program, as a path.
        program: String,
        /// Why the spawn failed.
        source: io::Error,
    },
    /// Setting up the run failed before or around the spawn (a capture file,
    /// the sandbox dir, a socket).
    #[error("could not {what} for {program}: {source}")]
    Io {
        /// The step that failed, as a verb phrase (`create a capture file`).
        what: &'static str,
        /// The program the run was for, as a path.
        program: String,
        /// The I/O error of that step.
        source: io::Error,
    },
}

/// Runs `command` to completion under `limits`, or until `cancel` fires.
pub async fn run(
    command: &ChildCommand,
    limits: Limits,
    cancel: &CancellationToken,
) -> Result<RunOutput, ExecError> {
    run_stoppable(command, limits, cancel, &CancellationToken::new(), None).await
}

/// Called with each complete stdout line while the child runs (polled with
/// the cap check, so lines arrive within a few tens of milliseconds).
pub type LineWatcher<'a> = &'a (dyn Fn(&str) + Sync);

/// [`run`], and when `stop` fires the child's group gets SIGINT — the
/// signal a terminal's Ctrl-C sends, on which MiniZinc stops its solver
/// and flushes what it found — then, after the grace period, the SIGKILL
/// sweep. The output so far is returned with [`Ending::Stopped`].
pub async fn run_stoppable(
    command: &ChildCommand,
    limits: Limits,
    cancel: &CancellationToken,
    stop: &CancellationToken,
    watcher: Option<LineWatcher<'_>>,
) -> Result<RunOutput, ExecError> {
    let program = command.program.display().to_string();
    let io_error = |what: &'static str| {
        let program = program.clone();
        move |source| ExecError::Io {
            what,
            program,
            source,
        }
    };
    let stdout_file = tempfile::tempfile().map_err(io_error("create a capture file"))?;
    let stderr_file = tempfile::tempfile().map_err(io_error("create a capture file"))?;

    // A confined child confines itself between fork and exec (the run's
    // limits, and the sandbox when it is on), with a scratch dir of its
    // own as its TMPDIR: the only place it may write when sandboxed.
    let mut jail = Jail::prepare(command).map_err(io_error("prepare the run's confinement"))?;
    let confinement = match &jail {
        Some(jail) => Some(
            jail.confinement(command)
                .map_err(io_error("prepare the run's confinement"))?,
        ),
        None => None,
    };
    let tag = escape::RunTag::new();
    let mut env = vec![(OsString::from(escape::RUN_TAG), OsString::from(tag.value()))];
    if let Some(jail) = &jail {
        env.extend(command.jail_environment(&jail.write_dir));
    }
    let child_stdout = stdout_file
        .try_clone()
        .map_err(io_error("share a capture file"))?;
    let child_stderr = stderr_file
        .try_clone()
        .map_err(io_error("share a capture file"))?;
    let streaming = limits.overflow == Overflow::KeepHeadAndTail;
    let filter = limits.stdout_filter.filter(|_| !streaming);
    let cap = limits.output_cap;
    // Pipes are read on threads of their own: see [`Readers`].
    let mut readers = Readers::default();
    let mut drains = None;
    let (child_stdout, child_stderr): (OwnedFd, OwnedFd) = if streaming {
        drop((child_stdout, child_stderr));
        let (out_read, out_write) = io::pipe().map_err(io_error("make a pipe"))?;
        let (err_read, err_write) = io::pipe().map_err(io_error("make a pipe"))?;
        let out = HeadAndTail::shared(cap / 4 * 3);
        let err = HeadAndTail::shared(cap / 4);
        readers
            .drain(out_read, out.clone())
            .and_then(|()| readers.drain(err_read, err.clone()))
            .map_err(io_error("start a pipe reader"))?;
        drains = Some((out, err));
        (out_write.into(), err_write.into())
    } else if let Some(filter) = filter {
        // The filter writes our copy of the stdout capture.
        let (out_read, out_write) = io::pipe().map_err(io_error("make a pipe"))?;
        readers
            .filter(out_read, child_stdout, filter(), cap)
            .map_err(io_error("start a pipe reader"))?;
        (out_write.into(), child_stderr.into())
    } else {
        (child_stdout.into(), child_stderr.into())
    };

    let mut outputs: Vec<(u64, u64)> = [&stdout_file, &stderr_file]
        .into_iter()
        .filter_map(escape::file_id)
        .collect();
    outputs.extend(readers.ids());
    tag.claim(&outputs);
    let sweep = Sweep {
        tags: vec![tag.value().to_owned()],
        spare: Vec::new(),
        outputs,
    };
    watchdog::ensure_started();

    let started = Instant::now();
    // fork and exec on the blocking pool: the parent waits until the child
    // has exec'd, which took 50–200 ms a spawn with a hundred solves
    // starting at once on two cores; on an async worker that stalled every
    // other call for as long. The guard is made on the same thread, so a
    // caller that goes away meanwhile leaves no tree behind.
    let start = spawn::Start {
        command: command.clone(),
        env,
        stdout: child_stdout,
        stderr: child_stderr,
        confinement,
    };
    let spawned = tokio::task::spawn_blocking(move || {
        let forking = escape::spawning();
        let child = spawn::start(start)?;
        let Some(pid) = child.id().and_then(|id| i32::try_from(id).ok()) else {
            return Err(io::Error::other(
                "the child exited before its pid could be read",
            ));
        };
        let guard = TreeGuard {
            leader: Pid::from_raw(pid),
            sweep,
        };
        escape::spawned(guard.leader);
        drop(forking);
        live::remember(guard.leader);
        Ok((child, guard))
    })
    .await
    .unwrap_or_else(|error| Err(io::Error::other(error)));
    let (mut child, guard) = spawned.map_err(|source| ExecError::Spawn {
        program: program.clone(),
        source,
    })?;

    let deadline = tokio::time::Instant::from_std(started + limits.timeout);
    if let Some(jail) = &mut jail {
        jail.watch(command, guard.leader);
    }
    let over_limit = async {
        match &jail {
            Some(jail) => jail.over_limit().await,
            None => std::future::pending().await,
        }
    };
    let mut over_limit = Box::pin(over_limit);
    let mut watched = Watched::default();
    let mut cap_check = tokio::time::interval(CAP_POLL);
    let (ending, status) = loop {
        tokio::select! {
            status = child.wait() => {
                // Only what the tree wrote until now is its output.
                readers.cut();
                // With a stdout filter the stdout file is the reader's
                // output, cut at the pipe.
                let out = filter.is_none().then(|| captured_len(&stdout_file));
                let cut = (out, captured_len(&stderr_file));
                break (Ending::Exited, Some((status, cut)));
            }
            () = tokio::time::sleep_until(deadline) => break (Ending::TimedOut, None),
            () = cancel.cancelled() => break (Ending::Cancelled, None),
            () = stop.cancelled() => break (Ending::Stopped, None),
            () = over_limit.as_mut() => break (Ending::OverLimit, None),
            _ = cap_check.tick() => {
                match (watcher, &drains) {
                    (Some(watcher), Some((out, _))) => watched.feed_capture(out, watcher),
                    (Some(watcher), None) => watched.feed(&stdout_file, limits.output_cap, watcher),
                    (None, _) => {}
                }
                if !streaming
                    && captured_len(&stdout_file) + captured_len(&stderr_file) > limits.output_cap
                {
                    break (Ending::Capped, None);
                }
            }
        }
    };

    let (status, file_cut) = match status {
        Some((status, cut)) => (Some(status.map_err(io_error("wait"))?), Some(cut)),
        // Cancelled means "stop now": straight to the SIGKILL sweep below.
        None if ending == Ending::Cancelled => (None, None),
        None => {
            // Past the deadline or the cap, ask nicely first: MiniZinc
            // forwards SIGTERM to its solver and flushes what it has; asked
            // to stop, it gets the SIGINT of a Ctrl-C. Then make sure.
            let signal = if ending == Ending::Stopped {
                Signal::SIGINT
            } else {
                Signal::SIGTERM
            };
            tree::signal_group(guard.leader, signal);
            let _ = tokio::time::timeout(limits.term_grace, child.wait()).await;
            (None, None)
        }
    };
    let elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let leader = guard.leader;
    let (guard, escaped) = guard.sweep_off_thread().await;
    // Reap the leader; after the sweep it is dead or a zombie. Only the
    // leader: process-wrap's own wait also waits for every process of the
    // leader's group that is our child, and as a subreaper those include
    // orphans (a stray pass reaps them).
    let _ = child.wait().await;
    escape::reaped(leader);
    std::mem::forget(guard);
    drop(tag);

    let return_code = status.map(exit_code);
    let mut late_output_bytes = readers.finish().await;
    if let Some((out_at_exit, err_at_exit)) = file_cut {
        if let Some(out_at_exit) = out_at_exit {
            late_output_bytes += captured_len(&stdout_file).saturating_sub(out_at_exit);
        }
        late_output_bytes += captured_len(&stderr_file).saturating_sub(err_at_exit);
    }
    let file_cut = file_cut.map(|(out, err)| (out, Some(err)));
    let (stdout, stderr, truncated) = match drains {
        Some((out, err)) => {
            let (stdout, out_dropped) = HeadAndTail::text(&out);
            let (stderr, err_dropped) = HeadAndTail::text(&err);
            (stdout, stderr, out_dropped || err_dropped)
        }
        None => tokio::task::spawn_blocking(move || {
            read_captures(stdout_file, stderr_file, cap, file_cut)
        })
        .await
        .unwrap_or_else(|error| Err(io::Error::other(error)))
        .map_err(io_error("read the output"))?,
    };
    drop(over_limit);
    let (sandbox, breach) = match jail {
        Some(jail) => jail.finish(ending, return_code, &stdout, &stderr).await,
        None => (None, None),
    };
    Ok(RunOutput {
        ending,
        return_code,
        truncated,
        elapsed_ms,
        stdout,
        stderr,
        sandbox,
        late_output_bytes,
        escaped,
        breach,
    })
}

/// How far a watcher has read the stdout capture.
#[derive(Default)]
struct Watched {
    offset: u64,
    partial: Vec<u8>,
    /// Bytes were dropped before `partial`: it starts mid-line, so its
    /// first line is not whole.
    torn: bool,
}

impl Watched {
    /// Hands the watcher every complete line written since the last call
    /// (up to the cap; a few kilobytes at a time).
    fn feed(&mut self, file: &File, cap: u64, watcher: LineWatcher<'_>) {
        use std::os::unix::fs::FileExt;
        let end = captured_len(file).min(cap);
        while self.offset < end {
            let mut buffer =
                vec![0u8; usize::try_from((end - self.offset).min(64 * 1024)).unwrap_or(0)];
            let Ok(read) = file.read_at(&mut buffer, self.offset) else {
                return;
            };
            if read == 0 {
                return;
            }
            self.offset += read as u64;
            self.lines(&buffer[..read], watcher);
        }
    }

    /// [`Watched::feed`] from a head-and-tail capture (a script's output,
    /// which is never cut): what the tail dropped between two calls is not
    /// seen, and the line it tore is skipped.
    fn feed_capture(&mut self, capture: &SharedCapture, watcher: LineWatcher<'_>) {
        let since = HeadAndTail::since(capture, self.offset);
        self.offset = since.offset;
        self.lines(&since.head, watcher);
        if since.gap {
            self.partial.clear();
            self.torn = true;
        }
        self.lines(&since.tail, watcher);
    }

    /// Adds `bytes` and hands the watcher each line they complete.
    fn lines(&mut self, bytes: &[u8], watcher: LineWatcher<'_>) {
        self.partial.extend_from_slice(bytes);
        while let Some(newline) = self.partial.iter().position(|byte| *byte == b'\n') {
            let line: Vec<u8> = self.partial.drain(..=newline).collect();
            if std::mem::take(&mut self.torn) {
                continue;
            }
            watcher(String::from_utf8_lossy(&line).trim_end());
        }
    }
}

/// Kills every child session this process started and has not yet seen
/// empty, waiting for each to empty. The last step of a process that is
/// about to exit, after its async runtime is gone: whatever a dropped task
/// or an expired shutdown deadline left behind is stopped here. Returns how
/// many sessions were still alive afterwards.
pub fn kill_all_sessions() -> usize {
    let left = live::all()
        .into_iter()
        .filter(|leader| !sweep(*leader, &Sweep::default()).0)
        .count();
    escape::kill_tagged_prefix(escape::server_prefix());
    left
}

/// Beyond a tree's session, what its sweep also kills: processes carrying
/// one of `tags` (except `spare`), and strays; one holding a file of
/// `outputs` open counts as the tree's.
#[derive(Debug, Default, Clone)]
struct Sweep {
    tags: Vec<String>,
    spare: Vec<Pid>,
    outputs: Vec<(u64, u64)>,
}

/// Kills `leader`'s session and waits for it to empty (once it is empty the
/// session is no longer remembered), then the escapees `also` names.
/// Returns whether the session emptied, and how many escapees were killed.
fn sweep(leader: Pid, also: &Sweep) -> (bool, u32) {
    // A tree that ended by itself and left no orphan: nothing to scan for.
    if escape::tree_gone(leader) {
        live::forget(leader);
        let died_alone = also.tags.first().map_or(0, |tag| escape::died_alone(tag));
        return (true, died_alone);
    }
    let empty = tree::kill_session(leader);
    let tags: Vec<&str> = also.tags.iter().map(String::as_str).collect();
    let escaped = escape::kill_escapees(leader, &tags, &also.spare, &also.outputs);
    if empty {
        live::forget(leader);
    }
    (empty, escaped.count)
}

/// The sessions whose trees may still be alive: added at spawn, removed
/// once a sweep found the session empty.
mod live {
    use std::collections::BTreeSet;
    use std::sync::{Mutex, MutexGuard};

    use nix::unistd::Pid;

    static LIVE: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

    fn lock() -> MutexGuard<'static, BTreeSet<i32>> {
        LIVE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(super) fn remember(leader: Pid) {
        lock().insert(leader.as_raw());
        super::watchdog::started(leader);
    }

    pub(super) fn forget(leader: Pid) {
        if lock().remove(&leader.as_raw()) {
            super::watchdog::ended(leader);
        }
    }

    pub(super) fn all() -> Vec<Pid> {
        lock().iter().copied().map(Pid::from_raw).collect()
    }
}

/// Threads that did a run's blocking work, for the test that keeps it off
/// the async worker threads.
#[cfg(test)]
static BLOCKING_WORK_THREADS: std::sync::Mutex<Vec<std::thread::ThreadId>> =
    std::sync::Mutex::new(Vec::new());

/// Notes (in tests) which thread does a piece of blocking work.
pub(crate) fn note_blocking_work() {
    #[cfg(test)]
    if let Ok(mut threads) = BLOCKING_WORK_THREADS.lock() {
        threads.push(std::thread::current().id());
    }
}

/// Kills the child's session if the run future is dropped before the child
/// was reaped: synchronously (with the sweep's short pauses), as a drop
/// cannot wait.
struct TreeGuard {
    leader: Pid,
    sweep: Sweep,
}

impl TreeGuard {
    /// The sweep on the blocking pool, and the escapees it killed. The
    /// guard comes back, to be forgotten once the caller has reaped the
    /// leader; `None` when the pool did not run the sweep (a runtime
    /// shutting down: the guard swept synchronously as it dropped).
    async fn sweep_off_thread(self) -> (Option<TreeGuard>, u32) {
        let leader = self.leader;
        let also = self.sweep.clone();
        match tokio::task::spawn_blocking(move || sweep(leader, &also)).await {
            Ok((_, escaped)) => (Some(self), escaped),
            Err(_) => {
                drop(self);
                (None, 0)
            }
        }
    }
}

impl Drop for TreeGuard {
    fn drop(&mut self) {
        sweep(self.leader, &self.sweep);
        // Whoever reaps the leader now (tokio's orphan queue, or a stray
        // pass) reaps a zombie nobody waits for.
        escape::reaped(self.leader);
        // The tokio child handle is dropped too; tokio reaps orphaned
        // children in the background, so no zombie stays.
    }
}

#[cfg(unix)]
fn exit_code(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => code,
        (None, Some(signal)) => -signal,
        (None, None) => -1,
    }
}

fn captured_len(file: &File) -> u64 {
    file.metadata().map(|meta| meta.len()).unwrap_or(0)
}

/// Reads back both captures within the combined cap. When both together are
/// over it, stderr keeps at least a quarter of the cap (diagnostics are
/// small and precious), stdout gets what is left.
/// `cut` holds the lengths at the child's exit, past which nothing is read.
fn read_captures(
    mut stdout: File,
    mut stderr: File,
    cap: u64,
    cut: Option<(Option<u64>, Option<u64>)>,
) -> io::Result<(String, String, bool)> {
    note_blocking_work();
    let (out_cut, err_cut) = cut.unwrap_or((None, None));
    let out_len = captured_len(&stdout).min(out_cut.unwrap_or(u64::MAX));
    let err_len = captured_len(&stderr).min(err_cut.unwrap_or(u64::MAX));
    let truncated = out_len + err_len > cap;
    let (out_keep, err_keep) = split_cap(out_len, err_len, cap);
    Ok((
        read_prefix(&mut stdout, out_keep)?,
        read_prefix(&mut stderr, err_keep)?,
        truncated,
    ))
}

fn split_cap(out_len: u64, err_len: u64, cap: u64) -> (u64, u64) {
    if out_len + err_len <= cap {
        return (out_len, err_len);
    }
    let err_keep = err_len.min((cap - out_len.min(cap)).max(cap / 4));
    let out_keep = out_len.min(cap - err_keep);
    (out_keep, err_keep)
}

fn read_prefix(file: &mut File, len: u64) -> io::Result<String> {
    file.seek(SeekFrom::Start(0))?;
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    file.take(len).read_to_end(&mut bytes)?;
    Ok(match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(error) => String::from_utf8_lossy(error.as_bytes()).into_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cap_split_keeps_everything_under_the_cap() {
        assert_eq!(split_cap(10, 20, 100), (10, 20));
        assert_eq!(split_cap(60, 40, 100), (60, 40));
    }

    #[test]
    fn cap_split_reserves_a_quarter_for_stderr() {
        assert_eq!(split_cap(1000, 1000, 100), (75, 25));
        assert_eq!(split_cap(1000, 10, 100), (90, 10));
        assert_eq!(split_cap(10, 1000, 100), (10, 90));
    }

    #[tokio::test]
    async fn captures_both_streams_and_the_exit_code() {
        let command = ChildCommand::new("/bin/sh").args(["-c", "echo out; echo err >&2; exit 3"]);
        let output = run(
            &command,
            Limits::new(Duration::from_secs(10)),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
        assert_eq!(output.ending, Ending::Exited);
        assert_eq!(output.return_code, Some(3));
        assert_eq!(output.stdout, "out\n");
        assert_eq!(output.stderr, "err\n");
        assert!(!output.truncated);
    }

    /// `#[tokio::test]` runs on one thread, the test's own: blocking work
    /// done there would stall every other task of the runtime.
    #[tokio::test]
    async fn the_sweep_and_the_reads_run_off_the_async_thread() {
        let me = std::thread::current().id();
        let command = ChildCommand::new("/bin/sh").args(["-c", "sleep 30 & echo started"]);
        let output = run(
            &command,
            Limits::new(Duration::from_secs(10)),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
        assert_eq!(output.stdout, "started\n");
        let threads = BLOCKING_WORK_THREADS.lock().unwrap().clone();
        assert!(!threads.is_empty());
        assert!(
            !threads.contains(&me),
            "blocking work ran on the async thread"
        );
    }

    #[tokio::test]
    async fn stdin_is_empty() {
        let command = ChildCommand::new("/bin/sh").args(["-c", "cat; echo done"]);
        let output = run(
            &command,
            Limits::new(Duration::from_secs(10)),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
        assert_eq!(output.stdout, "done\n");
    }

    #[tokio::test]
    async fn a_missing_program_is_a_spawn_error() {
        let command = ChildCommand::new("/nonexistent/minizinc");
        let error = run(
            &command,
            Limits::new(Duration::from_secs(1)),
            &CancellationToken::new(),
        )
        .await
        .unwrap_err();
        assert!(matches!(error, ExecError::Spawn { .. }), "{error}");
        assert!(error.to_string().contains("/nonexistent/minizinc"));
    }

    #[test]
    fn head_and_tail_keep_both_ends_and_mark_the_gap() {
        let capture = HeadAndTail::shared(40);
        let mut text = String::new();
        for line in 0..50 {
            text.push_str(&format!("line {line}\n"));
        }
        capture.lock().unwrap().push(text.as_bytes());
        let (kept, dropped) = HeadAndTail::text(&capture);
        assert!(dropped);
        assert!(kept.starts_with("line 0\nline 1\n"), "{kept}");
        assert!(kept.ends_with("line 49\n"), "{kept}");
        assert!(kept.contains("bytes of output dropped here]\n"), "{kept}");
        let whole = HeadAndTail::shared(1000);
        whole.lock().unwrap().push(b"short\n");
        assert_eq!(HeadAndTail::text(&whole), ("short\n".to_owned(), false));
    }

    #[test]
    fn a_watcher_reads_a_head_and_tail_capture_as_it_grows() {
        let capture = HeadAndTail::shared(40); // 20 bytes of head, 20 of tail
        let seen = std::sync::Mutex::new(Vec::<String>::new());
        let collect = |line: &str| seen.lock().unwrap().push(line.to_owned());
        let mut watched = Watched::default();
        let push = |bytes: &[u8], watched: &mut Watched| {
            capture.lock().unwrap().push(bytes);
            watched.feed_capture(&capture, &collect);
        };
        // Lines in pieces, within the head.
        push(
            b"one
tw",
            &mut watched,
        );
        push(
            b"o
",
            &mut watched,
        );
        assert_eq!(*seen.lock().unwrap(), ["one", "two"]);
        // Past the head: the tail keeps the last 20 bytes; what it dropped
        // between two reads is not seen and the line it tore is skipped.
        push(
            b"three
four is a long line
five
six
",
            &mut watched,
        );
        assert_eq!(
            *seen.lock().unwrap(),
            ["one", "two", "three", "five", "six"]
        );
        // Within the tail, whole lines again.
        push(
            b"seven
",
            &mut watched,
        );
        assert_eq!(seen.lock().unwrap().last().unwrap(), "seven");
        let since = HeadAndTail::since(&capture, 1_000);
        assert!(since.head.is_empty() && since.tail.is_empty());
        assert!(since.offset == 1_000 && !since.gap);
    }

    fn shout(line: &str) -> Option<String> {
        line.starts_with('a').then(|| line.to_uppercase())
    }

    #[tokio::test]
    async fn a_filter_rewrites_lines_before_the_capture() {
        // Many small writes, a line without a newline at the end, stderr apart.
        let command = ChildCommand::new("/bin/sh").args([
            "-c",
            "for i in 1 2 3; do echo abc$i; echo keep$i; done; echo err >&2; printf abz",
        ]);
        let limits =
            Limits::new(Duration::from_secs(10)).filter_stdout(|| Box::new(EachLine(shout)));
        let output = run(&command, limits, &CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(output.ending, Ending::Exited);
        assert_eq!(output.stdout, "ABC1\nkeep1\nABC2\nkeep2\nABC3\nkeep3\nABZ");
        assert_eq!(output.stderr, "err\n");
        assert!(!output.truncated);
    }

    #[tokio::test]
    async fn the_cap_counts_what_the_filter_kept() {
        // 3 MB of lines the filter halves: 1.5 MB kept, over the 1 MiB cap.
        let command = ChildCommand::new("/bin/sh").args([
            "-c",
            "yes aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa | head -c 3000000",
        ]);
        fn halve(line: &str) -> Option<String> {
            Some(line[..line.len() / 2].to_owned())
        }
        let limits =
            Limits::new(Duration::from_secs(20)).filter_stdout(|| Box::new(EachLine(halve)));
        let output = run(&command, limits, &CancellationToken::new())
            .await
            .unwrap();
        assert!(output.truncated);
        assert_eq!(output.stdout.len() as u64, OUTPUT_CAP);
        assert!(output.stdout.lines().next().unwrap().len() == 31);
        // Under the cap, the same lines would all have been kept halved.
        let command = ChildCommand::new("/bin/sh").args([
            "-c",
            "yes aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa | head -c 1600000",
        ]);
        let limits =
            Limits::new(Duration::from_secs(20)).filter_stdout(|| Box::new(EachLine(halve)));
        let output = run(&command, limits, &CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(output.ending, Ending::Exited);
        assert!(!output.truncated);
        assert_eq!(
            output.stdout.len(),
            1_600_000 / 63 * 32 + (1_600_000 % 63) / 2
        );
    }

    #[tokio::test]
    async fn a_line_longer_than_the_cap_passes_unfiltered_and_trips_the_cap() {
        let command = ChildCommand::new("/bin/sh").args([
            "-c",
            "echo ab; head -c 2000000 /dev/zero | tr '\\0' a; echo; echo ab",
        ]);
        let limits =
            Limits::new(Duration::from_secs(20)).filter_stdout(|| Box::new(EachLine(shout)));
        let output = run(&command, limits, &CancellationToken::new())
            .await
            .unwrap();
        // The child may end before the cap check sees it: either way the
        // capture stops at the cap.
        assert!(output.truncated);
        assert_eq!(output.stdout.len() as u64, OUTPUT_CAP);
        assert!(
            output.stdout.starts_with("AB\naaaa"),
            "{}",
            &output.stdout[..10]
        );
    }

    #[tokio::test]
    async fn a_flood_does_not_stop_a_head_and_tail_run() {
        // 5 MB of output, then a last line: the run ends on its own.
        let command = ChildCommand::new("/bin/sh").args([
            "-c",
            "head -c 5000000 /dev/zero | tr '\\0' x; echo; echo '{\"last\": true}'",
        ]);
        let limits = Limits::new(Duration::from_secs(20)).keep_head_and_tail();
        let output = run(&command, limits, &CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(output.ending, Ending::Exited);
        assert_eq!(output.return_code, Some(0));
        assert!(output.truncated);
        assert!(
            output.stdout.len() < OUTPUT_CAP as usize,
            "{}",
            output.stdout.len()
        );
        assert_eq!(output.stdout.lines().last(), Some("{\"last\": true}"));
    }
}
