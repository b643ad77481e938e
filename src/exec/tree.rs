//! Killing a child's whole process tree, and reading `/proc` about it.
//!
//! Every child we start leads a session of its own, so "the tree" is every
//! live process whose session id is the child's pid. A kill signals the
//! child's process group first (MiniZinc forwards SIGTERM to its solver),
//! then sweeps the session with SIGKILL, which also reaches processes that
//! moved to another group inside the session (MiniZinc puts its solver in
//! one). A grandchild that called `setsid` itself has left the session: the
//! sweep in [`super::escape`] catches it by its run tag or as an orphan.
//!
//! This is the one reader of `/proc/PID/stat` (for the sweep, the escapee
//! scans and the tree memory watch of [`super::memory_watch`]).

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
    all_pids()
        .into_iter()
        .filter(|pid| Some(*pid) != skip)
        .filter(|pid| {
            stat_of(*pid).is_some_and(|stat| stat.session == session.as_raw() && stat.is_live())
        })
        .collect()
}

/// This process's children: every thread's `children` list (a child
/// hangs off the thread that forked it, an adopted orphan off one the
/// kernel picks). `None` where the kernel does not list children
/// (`CONFIG_PROC_CHILDREN`), or when a thread came or went while they were
/// read (an ending thread hands its children to another, which may have
/// been read already): callers then scan all of `/proc` or sweep.
pub(super) fn own_children() -> Option<Vec<Pid>> {
    let threads = || -> Option<Vec<std::path::PathBuf>> {
        let mut threads: Vec<_> = fs::read_dir("/proc/self/task")
            .ok()?
            .filter_map(|task| task.ok().map(|task| task.path()))
            .collect();
        threads.sort();
        Some(threads)
    };
    let before = threads()?;
    let mut children = Vec::new();
    for thread in &before {
        let text = fs::read_to_string(thread.join("children")).ok()?;
        children.extend(
            text.split_whitespace()
                .filter_map(|pid| pid.parse::<i32>().ok())
                .map(Pid::from_raw),
        );
    }
    (threads()? == before).then_some(children)
}

/// Every process id in `/proc` (empty when `/proc` cannot be read).
pub(super) fn all_pids() -> Vec<Pid> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok())
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .map(Pid::from_raw)
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

/// What `/proc/PID/stat` says about a process: the one reader of it for
/// the tree sweep here and the escapee scans of [`super::escape`].
pub(super) struct Stat {
    /// The state letter (`R`, `S`, `Z` for a zombie, `X` for dead…).
    pub(super) state: char,
    /// The parent's pid.
    pub(super) ppid: i32,
    /// The session id: the pid of the session's leader.
    pub(super) session: i32,
    /// When the process started, in clock ticks since boot (field 22).
    pub(super) start_time: u64,
    /// Its resident set, in pages (field 24).
    pub(super) rss_pages: u64,
}

impl Stat {
    /// Neither a zombie nor dead: a process a signal can still stop.
    pub(super) fn is_live(&self) -> bool {
        !matches!(self.state, 'Z' | 'X')
    }
}

/// Reads `/proc/<pid>/stat`; `None` when the process is gone or the line
/// is not what the kernel writes.
pub(super) fn stat_of(pid: Pid) -> Option<Stat> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text)
}

/// The command name may contain spaces and parentheses, so fields are
/// counted from the last `)`.
fn parse_stat(text: &str) -> Option<Stat> {
    let after_name = &text[text.rfind(')')? + 1..];
    let mut fields = after_name.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let _pgrp = fields.next()?;
    let session = fields.next()?.parse().ok()?;
    // Fields 7 to 21 (tty_nr to itrealvalue) stand between the session
    // and the start time.
    let start_time = fields.nth(15)?.parse().ok()?;
    let _vsize = fields.next()?;
    let rss_pages = fields.next()?.parse().ok()?;
    Some(Stat {
        state,
        ppid,
        session,
        start_time,
        rss_pages,
    })
}

/// The resident memory of every live process of `sessions` (by session
/// id), in one pass over `/proc`: each session's processes with their
/// resident sets, in bytes. Blocking.
pub(super) fn resident_by_session(
    sessions: &std::collections::BTreeSet<i32>,
) -> std::collections::BTreeMap<i32, Vec<(Pid, u64)>> {
    let page = page_size();
    let mut found = std::collections::BTreeMap::<i32, Vec<(Pid, u64)>>::new();
    for pid in all_pids() {
        let Some(stat) = stat_of(pid) else {
            continue;
        };
        if stat.is_live() && sessions.contains(&stat.session) {
            let bytes = stat.rss_pages.saturating_mul(page);
            found.entry(stat.session).or_default().push((pid, bytes));
        }
    }
    found
}

/// A process's proportional set size in bytes (`Pss:` of
/// `/proc/PID/smaps_rollup`: each page shared with other processes counted
/// as its share). Walks the process's mappings: far dearer than its
/// `stat`, read only to confirm. `Ok(0)` for a process that is gone or
/// going (its memory already released); an error when it may not be read.
pub(super) fn proportional_bytes(pid: Pid) -> std::io::Result<u64> {
    let text = match fs::read_to_string(format!("/proc/{pid}/smaps_rollup")) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::PermissionDenied => return Err(error),
        Err(_) => return Ok(0),
    };
    let kib = text
        .lines()
        .find(|line| line.starts_with("Pss:"))
        .and_then(|line| line.split_whitespace().nth(1)?.parse::<u64>().ok())
        .unwrap_or(0);
    Ok(kib.saturating_mul(1024))
}

/// The size of a memory page, in bytes (4 KiB when it cannot be read).
fn page_size() -> u64 {
    nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE)
        .ok()
        .flatten()
        .and_then(|size| u64::try_from(size).ok())
        .unwrap_or(4096)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_stat_line_whose_name_has_spaces_and_parens() {
        let line = "4242 (fzn (gecode) x) S 4200 4242 4100 0 -1 4194560 161 0 0 0 \
                    12 3 0 0 20 0 1 0 987654 12345678 321 18446744073709551615";
        let stat = parse_stat(line).unwrap();
        assert_eq!(stat.state, 'S');
        assert_eq!(stat.ppid, 4200);
        assert_eq!(stat.session, 4100);
        assert_eq!(stat.start_time, 987_654);
        assert_eq!(stat.rss_pages, 321);
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

    #[test]
    fn our_own_stat_reads_the_same_start_time_as_the_kernel_line() {
        let stat = stat_of(Pid::this()).unwrap();
        assert!(stat.is_live() && stat.ppid > 0 && stat.start_time > 0);
        let line = fs::read_to_string("/proc/self/stat").unwrap();
        let field_22 = line[line.rfind(')').unwrap() + 1..]
            .split_whitespace()
            .nth(19)
            .unwrap();
        assert_eq!(stat.start_time.to_string(), field_22);
    }

    #[test]
    fn our_session_s_resident_memory_is_read_in_one_pass() {
        let session = nix::unistd::getsid(None).unwrap();
        let found = resident_by_session(&[session.as_raw()].into());
        let members = &found[&session.as_raw()];
        let (_, rss) = *members.iter().find(|(pid, _)| *pid == Pid::this()).unwrap();
        assert!(rss > 1024 * 1024, "{rss}");
        let pss = proportional_bytes(Pid::this()).unwrap();
        assert!(pss > 0 && pss <= rss, "{pss} {rss}");
        assert_eq!(proportional_bytes(Pid::from_raw(i32::MAX)).unwrap(), 0);
    }
}
