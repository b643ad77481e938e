//! Killing a child's whole process tree.
//!
//! Every child we start leads a session of its own, so "the tree" is every
//! live process whose session id is the child's pid. A kill signals the
//! child's process group first (MiniZinc forwards SIGTERM to its solver),
//! then sweeps the session with SIGKILL, which also reaches processes that
//! moved to another group inside the session (MiniZinc puts its solver in
//! one). A grandchild that called `setsid` itself has left the session: the
//! sweep in [`super::escape`] catches it by its run tag or as an orphan.

use std::fs;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

/// Sends `signal` to the process group led by `leader`. A group that is
/// already gone is not an error.
pub(crate) fn signal_group(leader: Pid, signal: Signal) {
    match killpg(leader, signal) {
        Ok(()) | Err(Errno::ESRCH) => {}
        Err(error) => eprintln!("solvergate: could not signal process group {leader}: {error}"),
    }
}

/// The live (non-zombie) processes of `session`, except `skip`.
pub(crate) fn session_members(session: Pid, skip: Option<Pid>) -> Vec<Pid> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok())
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .map(Pid::from_raw)
        .filter(|pid| Some(*pid) != skip)
        .filter(|pid| {
            stat_of(*pid).is_some_and(|stat| {
                stat.session == session.as_raw() && !matches!(stat.state, 'Z' | 'X')
            })
        })
        .collect()
}

/// How long a sweep waits for a SIGKILLed session to empty. A killed
/// process stays in `/proc` until the kernel has torn it down, which on a
/// loaded machine can take far longer than the signal.
const SWEEP_DEADLINE: Duration = Duration::from_secs(5);

/// SIGKILLs every live process in `session` and waits until none is left
/// (a process may fork while we sweep, and a killed one takes time to go),
/// up to [`SWEEP_DEADLINE`]. The leader itself is signalled through its
/// group, so a zombie leader we have not reaped yet cannot confuse the scan.
/// Returns whether the session is empty.
///
/// Blocking (it reads `/proc` and pauses between sweeps): async code runs it
/// on the blocking pool.
pub(crate) fn kill_session(session: Pid) -> bool {
    super::note_blocking_work();
    signal_group(session, Signal::SIGKILL);
    let started = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        let members = session_members(session, None);
        if members.is_empty() {
            return true;
        }
        if started.elapsed() > SWEEP_DEADLINE {
            eprintln!(
                "solvergate: {} process(es) of session {session} still alive {} s after SIGKILL",
                members.len(),
                SWEEP_DEADLINE.as_secs()
            );
            return false;
        }
        for pid in members {
            match kill(pid, Signal::SIGKILL) {
                Ok(()) | Err(Errno::ESRCH) => {}
                Err(error) => eprintln!("solvergate: could not kill process {pid}: {error}"),
            }
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

struct Stat {
    state: char,
    session: i32,
}

/// Reads the state and session id from `/proc/<pid>/stat`. The command
/// name may contain spaces and parentheses, so fields are counted from the
/// last `)`.
fn stat_of(pid: Pid) -> Option<Stat> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text)
}

fn parse_stat(text: &str) -> Option<Stat> {
    let after_name = &text[text.rfind(')')? + 1..];
    let mut fields = after_name.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let _pgrp = fields.next()?;
    let session = fields.next()?.parse().ok()?;
    Some(Stat { state, session })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_stat_line_whose_name_has_spaces_and_parens() {
        let stat = parse_stat("4242 (fzn (gecode) x) S 4200 4242 4100 0 -1 4194560 0").unwrap();
        assert_eq!(stat.state, 'S');
        assert_eq!(stat.session, 4100);
    }

    #[test]
    fn rejects_a_truncated_stat_line() {
        assert!(parse_stat("4242 (sh) S 1").is_none());
    }

    #[test]
    fn our_own_session_contains_us() {
        let me = Pid::this();
        let session = nix::unistd::getsid(None).unwrap();
        assert!(session_members(session, None).contains(&me));
    }
}
