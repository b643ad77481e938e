//! Warm forkers: a pre-started Python that has already imported a module
//! list and forks a fresh child for each script it is asked to run.
//!
//! A forker is started through this module like any child (its own
//! session, remembered for the watchdog and the exit sweep) with a UNIX
//! socket as its stdin and `forker.py` as its program. For a run we make two
//! pipes, send one JSON line (script, argv, cwd, environment changes) and
//! the pipes' write ends over the socket (`SCM_RIGHTS`), and drop our copies
//! of the write ends. The forker forks; the child calls `setsid` (a session
//! of its own, as a cold child has), makes `/dev/null` its stdin and the two
//! pipes its stdout and stderr, closes every other descriptor, applies the
//! environment, and runs the script as `__main__`. Only then does the forker
//! answer `{"pid": N}`; we remember session `N` (so the watchdog and the exit
//! sweep cover it), and read the pipes into the same bounded head and tail
//! as a cold run. The forker reaps the child and answers with its raw wait
//! status. Deadline, cancellation and the whole-tree kill are the cold
//! run's: SIGTERM to the child's group, the grace, the SIGKILL sweep of its
//! session, the drop guard. The forker itself never runs user code, so no
//! script sees what another did; a forker that misbehaves (no answer, a
//! wrong answer, end of file) is marked broken and its owner discards it.
//!
//! What differs from a cold `python -u script`: the interpreter's start-up
//! state is the forker's — the same string hash seed in every child (a
//! cold run draws one per process), `sys.orig_argv` and `sys.flags` of the
//! forker — while `random` and `numpy.random` are reseeded in each child.
//! A child whose forker never answers with its pid (a wedged forker, within
//! [`ANSWER_TIMEOUT`]) is not known to us and cannot be swept.

use std::ffi::OsString;
use std::io::{self, IoSlice};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use nix::sys::socket::{ControlMessage, MsgFlags, sendmsg};
use nix::unistd::Pid;
use process_wrap::tokio::{ChildWrapper, CommandWrap, ProcessSession};
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::escape::{self, RunTag};
use super::{
    ChildCommand, Ending, ExecError, HeadAndTail, Limits, LineWatcher, RunOutput, Sweep, TreeGuard,
};

/// The forker's Python source, run with `python -c`.
const FORKER: &str = include_str!("forker.py");

/// How long a forker may take to answer that a child started.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

/// A started forker: its session, its socket, its answers.
pub struct Forker {
    leader: Pid,
    child: Box<dyn ChildWrapper>,
    /// A blocking-mode handle on our end of the socket, for `sendmsg`.
    sender: UnixStream,
    answers: mpsc::UnboundedReceiver<String>,
    broken: bool,
    /// A run began and has not finished (its future was dropped midway).
    busy: bool,
    /// The forker's run tag: in the initial environment of every process
    /// it forks that does not `exec` (see [`escape`]).
    tag: RunTag,
}

impl std::fmt::Debug for Forker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Forker")
            .field("pid", &self.leader.as_raw())
            .field("broken", &self.broken)
            .finish()
    }
}

/// Why a forked run did not happen: nothing was started, the caller may
/// run the script cold instead.
#[derive(Debug, thiserror::Error)]
#[error("the warm forker could not start the script: {0}")]
pub struct NotForked(pub String);

impl Forker {
    /// Starts `interpreter` as a forker that imports `preload`, and waits
    /// (up to `ready_within`) until it has.
    pub async fn start(
        interpreter: &Path,
        preload: &[&str],
        env_set: &[(OsString, OsString)],
        env_remove: &[OsString],
        ready_within: Duration,
    ) -> Result<Forker, ExecError> {
        let program = interpreter.display().to_string();
        let io_error = |what: &'static str| {
            let program = program.clone();
            move |source| ExecError::Io {
                what,
                program,
                source,
            }
        };
        let (ours, theirs) = UnixStream::pair().map_err(io_error("make a socket"))?;
        let sender = ours.try_clone().map_err(io_error("share a socket"))?;
        let tag = RunTag::new();
        let mut wrap = CommandWrap::with_new(interpreter, |cmd| {
            cmd.arg("-c")
                .arg(FORKER)
                .args(preload)
                .current_dir("/")
                .stdin(Stdio::from(OwnedFd::from(theirs)))
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            // Built, not inherited: what a child of the forker starts with
            // (its `/proc/self/environ`) holds nothing the server was given.
            cmd.env_clear()
                .envs(super::spawn::passed_environment().iter().cloned());
            for key in env_remove {
                cmd.env_remove(key);
            }
            for (key, value) in env_set {
                cmd.env(key, value);
            }
            cmd.env(escape::RUN_TAG, tag.value());
        });
        wrap.wrap(ProcessSession);
        super::watchdog::ensure_started();
        let forking = escape::spawning();
        let child = wrap.spawn().map_err(|source| ExecError::Spawn {
            program: program.clone(),
            source,
        })?;
        let Some(pid) = child.id().and_then(|id| i32::try_from(id).ok()) else {
            return Err(ExecError::Spawn {
                program,
                source: io::Error::other("the forker exited before its pid could be read"),
            });
        };
        let leader = Pid::from_raw(pid);
        escape::spawned(leader);
        drop(forking);
        super::live::remember(leader);
        drop(wrap);
        ours.set_nonblocking(true)
            .map_err(io_error("configure a socket"))?;
        let stream = tokio::net::UnixStream::from_std(ours).map_err(io_error("watch a socket"))?;
        let (lines, answers) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut reader = tokio::io::BufReader::new(stream).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                if lines.send(line).is_err() {
                    return;
                }
            }
        });
        let mut forker = Forker {
            leader,
            child,
            sender,
            answers,
            broken: false,
            busy: false,
            tag,
        };
        let ready = tokio::time::timeout(ready_within, forker.answers.recv()).await;
        match ready {
            Ok(Some(line)) if line.contains("\"ready\"") => Ok(forker),
            other => {
                forker.broken = true;
                let why = match other {
                    Err(_) => "it did not get ready in time".to_owned(),
                    Ok(None) => "it exited while importing (is the module installed?)".to_owned(),
                    Ok(Some(line)) => format!("it answered {line:?}"),
                };
                Err(ExecError::Spawn {
                    program,
                    source: io::Error::other(format!("the warm forker failed: {why}")),
                })
            }
        }
    }

    /// The forker's own pid (its session id).
    pub fn pid(&self) -> i32 {
        self.leader.as_raw()
    }

    /// Whether the forker can take another run: it answered every message
    /// as expected, finished its last run, and is still alive.
    pub fn is_healthy(&mut self) -> bool {
        !self.broken && !self.busy && matches!(self.child.try_wait(), Ok(None))
    }

    /// Runs `python -u <script> <args>…` as described by `command` in a child
    /// forked from this forker, under `limits` and `cancel`, exactly as
    /// [`super::run_stoppable`] would with [`Limits::keep_head_and_tail`]
    /// (`watcher` sees each stdout line as it is written).
    pub async fn run(
        &mut self,
        command: &ChildCommand,
        limits: Limits,
        cancel: &CancellationToken,
        watcher: Option<LineWatcher<'_>>,
    ) -> Result<RunOutput, NotForked> {
        let tag = RunTag::new();
        // The child confines itself as a cold one does (forker.py's
        // `confine`), in a scratch dir of its own that is its TMPDIR; the
        // ruleset and the shared namespaces travel as descriptors after
        // its stdout and stderr.
        let unprepared =
            |error: io::Error| NotForked(format!("could not prepare the confinement: {error}"));
        let mut jail = super::Jail::prepare(command).map_err(unprepared)?;
        let mut command = command.clone().env(escape::RUN_TAG, tag.value());
        let (mut confinement, mut extra_fds, mut held) = (Value::Null, Vec::new(), None);
        if let Some(jail) = &jail {
            for (key, value) in command.jail_environment(&jail.write_dir) {
                command = command.env(key, value);
            }
            let prepared = jail.confinement(&command).map_err(unprepared)?;
            (confinement, extra_fds) = prepared.to_json(2);
            held = Some(prepared);
        }
        let request = request_line(&command, confinement)?;
        self.busy = true;
        let not_forked = |this: &mut Forker, why: String| {
            this.broken = true;
            NotForked(why)
        };
        let (out_read, out_write) =
            io::pipe().map_err(|error| NotForked(format!("no pipe: {error}")))?;
        let (err_read, err_write) =
            io::pipe().map_err(|error| NotForked(format!("no pipe: {error}")))?;
        let cap = limits.output_cap;
        let out = HeadAndTail::shared(cap / 4 * 3);
        let err = HeadAndTail::shared(cap / 4);
        let mut readers = super::Readers::default();
        readers
            .drain(out_read, out.clone())
            .and_then(|()| readers.drain(err_read, err.clone()))
            .map_err(|error| NotForked(format!("no pipe reader: {error}")))?;
        // Answers left from an earlier run cannot be ours.
        while self.answers.try_recv().is_ok() {}
        let started = Instant::now();
        let mut fds = vec![out_write.as_raw_fd(), err_write.as_raw_fd()];
        fds.append(&mut extra_fds);
        if let Err(error) = self.send(&request, &fds).await {
            return Err(not_forked(
                self,
                format!("could not send the request: {error}"),
            ));
        }
        drop((out_write, err_write, held));
        // Not cut short by `cancel`: once the request is out a child may
        // exist, and only its pid lets us kill it (the select below sees
        // the cancellation at once).
        let answer = tokio::time::timeout(ANSWER_TIMEOUT, self.answers.recv()).await;
        let child = match answer.ok().flatten().as_deref().and_then(answered_pid) {
            Some(pid) => Pid::from_raw(pid),
            None => {
                // The readers end with the pipes.
                return Err(not_forked(self, "no pid came back".to_owned()));
            }
        };
        super::live::remember(child);
        let outputs = readers.ids();
        tag.claim(&outputs);
        let guard = TreeGuard {
            leader: child,
            sweep: Sweep {
                // A warm child's processes that fork without exec carry the
                // forker's tag: every one but the forker is the child's.
                tags: vec![tag.value().to_owned(), self.tag.value().to_owned()],
                spare: vec![self.leader],
                outputs,
            },
        };

        let deadline = tokio::time::Instant::from_std(started + limits.timeout);
        if let Some(jail) = &mut jail {
            jail.watch(&command, child);
        }
        let over_limit = async {
            match &jail {
                Some(jail) => jail.over_limit().await,
                None => std::future::pending().await,
            }
        };
        let mut over_limit = Box::pin(over_limit);
        let mut watched = super::Watched::default();
        let mut watch = tokio::time::interval(super::CAP_POLL);
        let (ending, status) = loop {
            tokio::select! {
                answer = self.answers.recv() => {
                    // Only what the tree wrote until now is its output.
                    readers.cut();
                    break (Ending::Exited, answer);
                }
                () = tokio::time::sleep_until(deadline) => break (Ending::TimedOut, None),
                () = cancel.cancelled() => break (Ending::Cancelled, None),
                () = over_limit.as_mut() => break (Ending::OverLimit, None),
                _ = watch.tick(), if watcher.is_some() => {
                    if let Some(watcher) = watcher {
                        watched.feed_capture(&out, watcher);
                    }
                }
            }
        };
        let mut wait_status = status.as_deref().and_then(answered_status);
        if ending == Ending::Exited && wait_status.is_none() {
            // The forker is gone (or babbles) while the child may live on:
            // let the child run to its end (the pipes close) or the deadline.
            self.broken = true;
        }
        if matches!(ending, Ending::TimedOut | Ending::OverLimit) {
            super::tree::signal_group(child, Signal::SIGTERM);
            if let Ok(Some(answer)) =
                tokio::time::timeout(limits.term_grace, self.answers.recv()).await
            {
                wait_status = answered_status(&answer);
            }
        }
        let elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let (guard, escaped) = guard.sweep_off_thread().await;
        std::mem::forget(guard);
        drop(tag);
        if ending != Ending::Exited && wait_status.is_none() && !self.broken {
            // The forker reaps the killed child and says so; until it has,
            // it cannot take another run.
            match tokio::time::timeout(ANSWER_TIMEOUT, self.answers.recv()).await {
                Ok(Some(answer)) if answered_status(&answer).is_some() => {}
                _ => self.broken = true,
            }
        }
        let late_output_bytes = readers.finish().await;
        let (stdout, out_dropped) = HeadAndTail::text(&out);
        let (stderr, err_dropped) = HeadAndTail::text(&err);
        self.busy = false;
        let return_code = match ending {
            Ending::Exited => wait_status.map(decode_wait_status),
            _ => None,
        };
        drop(over_limit);
        let (sandbox, breach) = match jail {
            Some(jail) => jail.finish(ending, return_code, &stdout, &stderr).await,
            None => (None, None),
        };
        Ok(RunOutput {
            ending,
            return_code,
            truncated: out_dropped || err_dropped,
            elapsed_ms,
            stdout,
            stderr,
            sandbox,
            late_output_bytes,
            escaped,
            breach,
        })
    }

    /// Sends one request line with `fds` attached (the child's stdout and
    /// stderr, then what its confinement names).
    async fn send(&self, line: &str, raw: &[RawFd]) -> io::Result<()> {
        let bytes = line.as_bytes();
        let mut sent = 0;
        let mut tries = 0;
        while sent < bytes.len() {
            let slice = [IoSlice::new(&bytes[sent..])];
            // The descriptors travel with the first bytes only.
            let control = [ControlMessage::ScmRights(raw)];
            let control: &[ControlMessage<'_>] = if sent == 0 { &control } else { &[] };
            match sendmsg::<()>(
                self.sender.as_raw_fd(),
                &slice,
                control,
                MsgFlags::MSG_NOSIGNAL,
                None,
            ) {
                Ok(count) => sent += count,
                Err(nix::errno::Errno::EAGAIN) if tries < 1000 => {
                    tries += 1;
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                Err(error) => return Err(io::Error::from(error)),
            }
        }
        Ok(())
    }
}

impl Drop for Forker {
    fn drop(&mut self) {
        let also = Sweep {
            tags: vec![self.tag.value().to_owned()],
            ..Sweep::default()
        };
        super::sweep(self.leader, &also);
        escape::reaped(self.leader);
    }
}

/// The request line for `command`, which must be `python -u <script> …`
/// with UTF-8 arguments and environment.
fn request_line(command: &ChildCommand, confine: Value) -> Result<String, NotForked> {
    let text = |value: &OsString| {
        value
            .to_str()
            .map(str::to_owned)
            .ok_or_else(|| NotForked(format!("{value:?} is not UTF-8")))
    };
    let mut args = command.args.iter();
    if args.next().map(OsString::as_os_str) != Some("-u".as_ref()) {
        return Err(NotForked("not a `python -u <script>` command".to_owned()));
    }
    let script = args
        .next()
        .ok_or_else(|| NotForked("no script".to_owned()))
        .and_then(text)?;
    let argv = args.map(text).collect::<Result<Vec<_>, _>>()?;
    let cwd = match &command.cwd {
        Some(dir) => dir
            .to_str()
            .ok_or_else(|| NotForked("the directory is not UTF-8".to_owned()))?
            .to_owned(),
        None => "/".to_owned(),
    };
    // The child's whole environment, as a cold child's is built.
    let mut env = serde_json::Map::new();
    for (key, value) in super::spawn::environment(command, &[]) {
        env.insert(text(&key)?, Value::String(text(&value)?));
    }
    let line = json!({
        "script": script, "argv": argv, "cwd": cwd, "env": env, "confine": confine,
    });
    Ok(format!("{line}\n"))
}

fn answered_pid(line: &str) -> Option<i32> {
    let value: Value = serde_json::from_str(line).ok()?;
    if value.get("wait_status").is_some() {
        return None;
    }
    i32::try_from(value.get("pid")?.as_i64()?)
        .ok()
        .filter(|pid| *pid > 1)
}

fn answered_status(line: &str) -> Option<i32> {
    let value: Value = serde_json::from_str(line).ok()?;
    i32::try_from(value.get("wait_status")?.as_i64()?).ok()
}

/// A raw `waitpid` status as [`RunOutput::return_code`] has it: the exit
/// code, or minus the signal number.
fn decode_wait_status(status: i32) -> i32 {
    let signal = status & 0x7f;
    if signal == 0 {
        (status >> 8) & 0xff
    } else {
        -signal
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_statuses_decode_like_exit_statuses() {
        assert_eq!(decode_wait_status(0), 0);
        assert_eq!(decode_wait_status(3 << 8), 3);
        assert_eq!(decode_wait_status(9), -9);
        assert_eq!(decode_wait_status(15), -15);
    }

    #[test]
    fn only_python_dash_u_commands_are_forked() {
        let command = ChildCommand::new("/usr/bin/python3")
            .arg("-u")
            .arg("/tmp/s.py")
            .arg("--n")
            .cwd("/tmp")
            .env("A", "1")
            .env_remove("B");
        let line = request_line(&command, Value::Null).unwrap();
        let value: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(value["script"], "/tmp/s.py");
        assert_eq!(value["argv"], json!(["--n"]));
        assert_eq!(value["env"]["A"], "1");
        assert!(value["env"].get("B").is_none());
        // Only what passes: no variable the server was given beyond them.
        for key in value["env"].as_object().unwrap().keys() {
            assert!(
                key == "A"
                    || key.starts_with("LC_")
                    || crate::settings::PASSED_VARIABLES.contains(&key.as_str()),
                "{key} passed"
            );
        }
        assert!(request_line(&ChildCommand::new("/bin/sh").arg("-c"), Value::Null).is_err());
    }

    #[test]
    fn answers_are_told_apart() {
        assert_eq!(answered_pid("{\"pid\": 42}"), Some(42));
        assert_eq!(answered_pid("{\"pid\": 42, \"wait_status\": 0}"), None);
        assert_eq!(
            answered_status("{\"pid\": 42, \"wait_status\": 256}"),
            Some(256)
        );
        assert_eq!(answered_pid("garbage"), None);
    }
}
