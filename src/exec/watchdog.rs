//! What stops our children when we cannot: a small process that outlives us.
//!
//! The executor kills a child's tree when a run ends, when its future is
//! dropped and when the binary exits. None of that runs when the process is
//! killed with SIGKILL (or crashes): the children would live on under PID 1
//! and their temp dirs would stay. So the binary, once it starts children,
//! also starts a watchdog — itself, re-executed as `solvergate __watchdog
//! <scratch root>`, in a session of its own (no terminal signal reaches it)
//! with an empty environment. Its stdin is a pipe whose only write end we
//! hold (close-on-exec, so no child inherits it). We announce our run-tag
//! prefix as `=<prefix>` (see [`super::escape`]), each child session as
//! `+<id>` and each session seen empty as `-<id>`. When the pipe reaches end
//! of file — we exited, however we died — the watchdog SIGKILLs every
//! process still in an announced session and every process whose
//! environment carries a run tag with our prefix (one that escaped its
//! session), removes the scratch root, and exits.
//!
//! Why a watchdog rather than `PR_SET_PDEATHSIG`: the death signal fires
//! when the *thread* that forked the child ends (tokio's blocking threads
//! come and go), it reaches only the direct child (MiniZinc's solver, a
//! script's subprocesses would survive), and it needs `unsafe` code between
//! fork and exec. Our subreaper role ([`super::escape::adopt_orphans`])
//! cannot help either: it is us that dies.
//!
//! Temp dirs: every run's scratch dir lives under one scratch root per
//! process (`$TMPDIR/solvergate-run-<pid>-…`, with an `owner` file naming
//! the pid and its start time). The watchdog removes the root; should the
//! watchdog die too, the next start removes roots whose owner is gone —
//! only roots that carry a valid owner file and belong to our user.

use std::fs::{self, File};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::sync::{Mutex, MutexGuard, OnceLock};

use nix::unistd::Pid;
use process_wrap::std::{CommandWrap, ProcessSession};
use tempfile::TempDir;

use crate::diagnostics::ToolError;

/// The hidden argument that makes the binary a watchdog.
pub const WATCHDOG_ARG: &str = "__watchdog";

/// The name every scratch root starts with.
const ROOT_PREFIX: &str = "solvergate-run-";

/// The file in a scratch root that says whose it is.
const OWNER_FILE: &str = "owner";

/// The guard of this process, once enabled and started.
struct Guard {
    /// Write end of the watchdog's stdin; `None` if it could not start.
    announce: Mutex<Option<File>>,
    root: Option<PathBuf>,
}

static ENABLED: OnceLock<()> = OnceLock::new();
static GUARD: OnceLock<Guard> = OnceLock::new();

/// Lets this process start a watchdog (the binary does; library tests do
/// not, since their executable is not ours), makes it the subreaper of its
/// descendants (every child it starts goes through `exec`), and removes
/// scratch roots left by processes that are gone.
pub fn enable() {
    if ENABLED.set(()).is_ok() {
        super::escape::adopt_orphans();
        remove_stale_roots(&std::env::temp_dir());
    }
}

/// Starts the watchdog now if it is enabled and not yet running: before a
/// fork takes [`super::escape::spawning`], which the watchdog's own start
/// takes too.
pub(super) fn ensure_started() {
    let _ = guard();
}

fn lock(announce: &Mutex<Option<File>>) -> MutexGuard<'_, Option<File>> {
    announce
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The guard, started on first use when enabled.
fn guard() -> Option<&'static Guard> {
    ENABLED.get()?;
    Some(GUARD.get_or_init(start))
}

fn start() -> Guard {
    let root = make_root().ok();
    // Our own path, so the watchdog shows as `solvergate`; /proc/self/exe
    // when the file is gone (a rebuild replaced it).
    let program = std::env::current_exe()
        .ok()
        .filter(|path| path.is_file())
        .unwrap_or_else(|| PathBuf::from("/proc/self/exe"));
    let mut command = CommandWrap::with_new(program, |command| {
        use std::os::unix::process::CommandExt;
        command
            .arg0("solvergate")
            .arg(WATCHDOG_ARG)
            .args(root.iter())
            .env_clear()
            .current_dir("/")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit());
    });
    command.wrap(ProcessSession);
    let forking = super::escape::spawning();
    let spawned = command.spawn();
    if let Ok(child) = &spawned {
        // Never reaped: it outlives us.
        super::escape::spawned(Pid::from_raw(i32::try_from(child.id()).unwrap_or(0)));
    }
    drop(forking);
    let announce = match spawned {
        Ok(mut child) => child.stdin().take().and_then(|stdin| {
            let mut pipe = File::from(std::os::fd::OwnedFd::from(stdin));
            let prefix = format!("={}\n", super::escape::server_prefix());
            pipe.write_all(prefix.as_bytes()).ok().map(|()| pipe)
        }),
        Err(error) => {
            eprintln!(
                "solvergate: warning: could not start the watchdog that stops child processes if solvergate is killed: {error}"
            );
            None
        }
    };
    Guard {
        announce: Mutex::new(announce),
        root,
    }
}

/// Tells the watchdog about a session we started.
pub(super) fn started(session: Pid) {
    announce('+', session);
}

/// Tells the watchdog a session is empty.
pub(super) fn ended(session: Pid) {
    announce('-', session);
}

fn announce(sign: char, session: Pid) {
    let Some(guard) = guard() else { return };
    let mut announce = lock(&guard.announce);
    if let Some(pipe) = announce.as_mut()
        && pipe
            .write_all(format!("{sign}{session}\n").as_bytes())
            .is_err()
    {
        *announce = None;
    }
}

/// This process's scratch root, where every run's scratch dir is made,
/// once the watchdog guards it.
pub fn scratch_root() -> Option<PathBuf> {
    guard().and_then(|guard| guard.root.clone())
}

/// A private temp dir for one run: under this process's scratch root when
/// the watchdog guards it, else in the system temp dir. Removed on drop.
pub fn scratch_dir(prefix: &str) -> Result<TempDir, ToolError> {
    let mut builder = tempfile::Builder::new();
    builder.prefix(prefix);
    match guard().and_then(|guard| guard.root.as_deref()) {
        Some(root) if root.is_dir() => builder.tempdir_in(root),
        _ => builder.tempdir(),
    }
    .map_err(|error| ToolError::invalid(format!("could not create a temp dir: {error}")))
}

/// Creates this process's scratch root with its owner file.
fn make_root() -> std::io::Result<PathBuf> {
    let root = tempfile::Builder::new()
        .prefix(&format!("{ROOT_PREFIX}{}-", std::process::id()))
        .tempdir()?
        .keep();
    let owner = owner_line(Pid::this()).unwrap_or_default();
    fs::write(root.join(OWNER_FILE), owner)?;
    Ok(root)
}

/// `<pid> <start time>`: a pid alone could be reused by a stranger.
fn owner_line(pid: Pid) -> Option<String> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 1..];
    // Fields after the name: state is 3rd overall, start time the 22nd.
    let start_time = after_name.split_whitespace().nth(19)?;
    Some(format!("{pid} {start_time}"))
}

/// Removes scratch roots in `temp` whose owner process is gone. A directory
/// without a readable owner file, or not ours, is left alone.
fn remove_stale_roots(temp: &Path) {
    let Ok(entries) = fs::read_dir(temp) else {
        return;
    };
    let me = nix::unistd::geteuid().as_raw();
    for entry in entries.flatten() {
        if !entry.file_name().to_string_lossy().starts_with(ROOT_PREFIX) {
            continue;
        }
        let path = entry.path();
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        if !meta.is_dir() || meta.uid() != me {
            continue;
        }
        let Ok(owner) = fs::read_to_string(path.join(OWNER_FILE)) else {
            continue;
        };
        if owner_is_gone(&owner) {
            let _ = fs::remove_dir_all(&path);
        }
    }
}

/// Whether the process an owner line names no longer runs.
fn owner_is_gone(owner: &str) -> bool {
    let Some(pid) = owner
        .split_whitespace()
        .next()
        .and_then(|pid| pid.parse::<i32>().ok())
    else {
        return false;
    };
    owner_line(Pid::from_raw(pid)).as_deref() != Some(owner.trim())
}

/// The watchdog itself: reads announcements until end of file, then kills
/// what is left and removes the scratch root. Never returns an error code a
/// caller could act on; it has no caller left.
pub fn serve(root: Option<PathBuf>) -> ExitCode {
    let mut sessions = std::collections::BTreeSet::new();
    let mut prefix = None;
    for line in BufReader::new(std::io::stdin().lock()).lines() {
        let Ok(line) = line else { break };
        let (sign, id) = line.split_at(line.len().min(1));
        // `<pid>.<start time>.`: never empty, so never every tag.
        if sign == "=" && id.ends_with('.') && id.len() > 2 {
            prefix = Some(id.to_owned());
            continue;
        }
        let Ok(id) = id.parse::<i32>() else { continue };
        match sign {
            "+" => {
                sessions.insert(id);
            }
            "-" => {
                sessions.remove(&id);
            }
            _ => {}
        }
    }
    for session in sessions {
        super::tree::kill_session(Pid::from_raw(session));
    }
    if let Some(prefix) = prefix {
        super::escape::kill_tagged_prefix(&prefix);
    }
    if let Some(root) = root
        && root
            .file_name()
            .is_some_and(|name| name.to_string_lossy().starts_with(ROOT_PREFIX))
    {
        let _ = fs::remove_dir_all(root);
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_owner_line_is_alive_and_a_dead_one_is_not() {
        let mine = owner_line(Pid::this()).unwrap();
        assert!(!owner_is_gone(&mine));
        let pid = std::process::id();
        assert!(owner_is_gone(&format!("{pid} 1")), "a different start time");
        assert!(owner_is_gone("999999999 5"), "no such process");
        assert!(!owner_is_gone("not an owner"), "unreadable: left alone");
    }

    #[test]
    fn stale_roots_go_and_strangers_stay() {
        let temp = tempfile::tempdir().unwrap();
        let stale = temp.path().join(format!("{ROOT_PREFIX}1-abc"));
        fs::create_dir_all(stale.join("solvergate-x/inner")).unwrap();
        fs::write(stale.join(OWNER_FILE), "999999999 5").unwrap();
        let live = temp.path().join(format!("{ROOT_PREFIX}2-def"));
        fs::create_dir(&live).unwrap();
        fs::write(live.join(OWNER_FILE), owner_line(Pid::this()).unwrap()).unwrap();
        let stranger = temp.path().join(format!("{ROOT_PREFIX}3-ghi"));
        fs::create_dir(&stranger).unwrap();
        let elsewhere = temp.path().join("other-dir");
        fs::create_dir(&elsewhere).unwrap();
        fs::write(elsewhere.join(OWNER_FILE), "999999999 5").unwrap();

        remove_stale_roots(temp.path());
        assert!(!stale.exists());
        assert!(live.exists());
        assert!(stranger.exists(), "no owner file: not ours to remove");
        assert!(elsewhere.exists(), "not a scratch root");
    }
}
