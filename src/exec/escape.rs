//! Catching processes that left their run's session.
//!
//! A child's tree is its session ([`super::tree`]), but any process in it may
//! call `setsid` and leave. Two nets catch such escapees:
//!
//! - **The run tag.** Every child [`super::run`] starts (and every warm
//!   forker and warm child) gets `SOLVERGATE_RUN=<server pid>.<server start
//!   time>.<random>` in its environment, a value unique to the run. A
//!   process inherits it, across `setsid`, `fork` and `exec`. After a run the
//!   sweep kills its session, then every live process whose
//!   `/proc/PID/environ` carries that exact value, and scans again until none
//!   is left. The watchdog, when we die however we die (SIGKILL included),
//!   kills every process carrying our server's prefix.
//! - **The subreaper.** The binary makes itself a child subreaper
//!   ([`adopt_orphans`]): a descendant whose parent dies becomes our child
//!   rather than PID 1's. A child of ours that we did not spawn and that is
//!   in no live run's session or tag is a stray: the sweep kills and reaps
//!   it (`waitpid` on that pid only — never on a pid tokio or process-wrap
//!   waits for: those are recorded in [`spawned`] from before the fork until
//!   they are reaped, and a stray scan cannot run while a fork waits to be
//!   recorded). A stray is counted as a run's escapee when it holds one of
//!   that run's output pipes or files open; one holding another live run's
//!   is left to that run's sweep.
//!
//! What is caught: a `setsid` grandchild (tag), a double fork (tag, and the
//! orphan is ours), one that cleared its environment (`env -i`) once its
//! parent is dead (stray), and — on a SIGKILL of the server — every escapee
//! that kept the tag (watchdog).
//!
//! What is not caught: an escapee that cleared or overwrote its environment
//! when the server is SIGKILLed (it is orphaned to PID 1, not to the
//! watchdog); one whose `/proc/PID/environ` we cannot read (another user's,
//! after a set-uid exec) while its parent lives; one whose ancestor became a
//! subreaper of its own and lives on outside the session untagged. A warm
//! child's processes that fork without `exec` carry the forker's tag rather
//! than the child's (Python's `os.environ` does not rewrite the initial
//! environment): the warm sweep kills the forker's tag too, sparing only the
//! forker itself.
//!
//! Not exact either: the cut at the exit is taken when we *see* the exit
//! (tokio's wait returning, a warm forker's answer), some time after the
//! kernel closed the child's files. An escapee woken by that close (a pipe
//! end only the child held) can write in between — one wrote 4 MB in a
//! test — and its bytes count as the child's. If it is still alive at the
//! sweep it is counted in `escaped` (a checker is then an error). One that
//! wrote and exited at once is only a zombie orphan of ours by then, which
//! no longer shows its environment or files: a stray zombie outside every
//! live session that died on its own (not by our SIGKILL) is counted in
//! `escaped` of every live run that started before it was born
//! ([`note_died_alone`]) — on the safe side, since whose it was cannot be
//! read any more.
//!
//! What a maintainer must not break: nothing but a stray is ever reaped
//! here, and a stray scan never runs while a fork is between `fork` and
//! [`spawned`] (the guard from [`spawning`]).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock, RwLock, RwLockReadGuard};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{Signal, kill};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;

use super::tree::{Stat, all_pids, stat_of};

/// The environment variable that tags a run's processes.
pub const RUN_TAG: &str = "SOLVERGATE_RUN";

/// How long a sweep keeps killing escapees that reappear (a fork bomb).
const ESCAPE_DEADLINE: Duration = Duration::from_secs(5);

/// This server's tag prefix: `<pid>.<start time>.`.
pub(super) fn server_prefix() -> &'static str {
    static PREFIX: OnceLock<String> = OnceLock::new();
    PREFIX.get_or_init(|| {
        let me = Pid::this();
        let start = stat_of(me).map(|stat| stat.start_time).unwrap_or_default();
        format!("{me}.{start}.")
    })
}

/// One run's tag value; live (a stray scan spares its processes) until
/// dropped.
#[derive(Debug)]
pub(super) struct RunTag {
    value: String,
}

impl RunTag {
    pub(super) fn new() -> RunTag {
        let value = format!("{}{}", server_prefix(), uuid::Uuid::new_v4().simple());
        let run = LiveRun {
            started: now_ticks(),
            died_alone: 0,
        };
        live_runs().insert(value.clone(), run);
        RunTag { value }
    }

    pub(super) fn value(&self) -> &str {
        &self.value
    }

    /// Records the run's output files (`(dev, inode)`): while the run is
    /// live, a stray holding one is left to this run's sweep.
    pub(super) fn claim(&self, outputs: &[(u64, u64)]) {
        live_outputs().extend(outputs.iter().map(|id| (*id, self.value.clone())));
    }
}

impl Drop for RunTag {
    fn drop(&mut self) {
        live_runs().remove(&self.value);
        live_outputs().retain(|_, owner| *owner != self.value);
    }
}

/// A live run, as the stray scans see it.
#[derive(Debug)]
struct LiveRun {
    /// When its tag was made, in clock ticks since boot (the clock of a
    /// process's start time in `/proc/PID/stat`).
    started: u64,
    /// Escapees that may be this run's and that died before any sweep saw
    /// them alive (see [`note_died_alone`]).
    died_alone: u32,
}

/// Every live run, by tag.
fn live_runs() -> MutexGuard<'static, BTreeMap<String, LiveRun>> {
    static RUNS: Mutex<BTreeMap<String, LiveRun>> = Mutex::new(BTreeMap::new());
    RUNS.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Now, in clock ticks since boot; 0 if the clock cannot be read (every
/// run then counts as started before any escapee: the safe side).
fn now_ticks() -> u64 {
    let ticks_per_second = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .and_then(|ticks| u64::try_from(ticks).ok())
        .unwrap_or(100);
    fs::read_to_string("/proc/uptime")
        .ok()
        .and_then(|text| text.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0, |seconds| (seconds * ticks_per_second as f64) as u64)
}

/// A stray that left every live session and died on its own (not by our
/// SIGKILL) before a sweep saw it: an escapee that may have written into a
/// run's output between that run's exit and its cut, then vanished. Which
/// run it came from can no longer be read (a zombie shows no environment or
/// files), so every live run that started before it was born counts it:
/// a checker among them is then not trusted. The error is on the safe
/// side — a run beside a misbehaving one may be refused, never one that
/// should not be trusted accepted.
fn note_died_alone(born: Option<u64>) {
    count_died_alone(&mut live_runs(), born);
}

fn count_died_alone(runs: &mut BTreeMap<String, LiveRun>, born: Option<u64>) {
    for run in runs.values_mut() {
        if born.is_none_or(|born| run.started <= born.saturating_add(1)) {
            run.died_alone = run.died_alone.saturating_add(1);
        }
    }
}

/// Every live run's output files, with the run's tag.
fn live_outputs() -> MutexGuard<'static, BTreeMap<(u64, u64), String>> {
    static OUTPUTS: Mutex<BTreeMap<(u64, u64), String>> = Mutex::new(BTreeMap::new());
    OUTPUTS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The `SOLVERGATE_RUN` values in a process's initial environment; `None`
/// when it cannot be read (gone, a zombie, another user's).
fn tags_of(pid: Pid) -> Option<Vec<String>> {
    let environ = fs::read(format!("/proc/{pid}/environ")).ok()?;
    let prefix = format!("{RUN_TAG}=");
    Some(
        environ
            .split(|byte| *byte == 0)
            .filter_map(|entry| entry.strip_prefix(prefix.as_bytes()))
            .map(|value| String::from_utf8_lossy(value).into_owned())
            .collect(),
    )
}

/// Live processes (not us, not zombies) with a tag `matches` accepts.
fn tagged(matches: &dyn Fn(&str) -> bool) -> Vec<(Pid, Stat)> {
    let me = Pid::this();
    let uid = nix::unistd::geteuid().as_raw();
    all_pids()
        .into_iter()
        .filter(|pid| *pid != me)
        // A process's /proc dir belongs to its user: skip strangers cheaply.
        .filter(|pid| {
            fs::metadata(format!("/proc/{pid}")).is_ok_and(|meta| meta.uid() == uid || uid == 0)
        })
        .filter(|pid| tags_of(*pid).is_some_and(|tags| tags.iter().any(|tag| matches(tag))))
        .filter_map(|pid| Some((pid, stat_of(pid)?)))
        .filter(|(_, stat)| stat.is_live())
        .collect()
}

// --- the subreaper and its strays ---

static ADOPTING: AtomicBool = AtomicBool::new(false);

/// Makes this process a child subreaper: orphaned descendants become our
/// children, and sweeps kill and reap the strays among them. The binary
/// calls it at start-up; a process that spawns children outside `exec`
/// (a test harness) must not.
pub fn adopt_orphans() {
    match nix::sys::prctl::set_child_subreaper(true) {
        Ok(()) => ADOPTING.store(true, Ordering::SeqCst),
        Err(error) => eprintln!(
            "solvergate: warning: could not become a child subreaper ({error}); escaped processes that clear their environment are not caught"
        ),
    }
}

/// Pids of children we spawned and have not seen reaped.
fn spawned_set() -> MutexGuard<'static, BTreeSet<i32>> {
    static SPAWNED: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());
    SPAWNED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Held from before a fork until its child is in [`spawned`]; a stray scan
/// waits for every holder.
static FORKING: RwLock<()> = RwLock::new(());

/// Held around every fork of ours until its pid is [`spawned`]. Never take
/// it twice on one thread (a waiting scan would deadlock it).
pub(super) fn spawning() -> RwLockReadGuard<'static, ()> {
    FORKING
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Records a child of ours that someone (tokio, process-wrap) will reap.
pub(super) fn spawned(pid: Pid) {
    spawned_set().insert(pid.as_raw());
}

/// The child has been reaped by whoever waited for it.
pub(super) fn reaped(pid: Pid) {
    spawned_set().remove(&pid.as_raw());
}

/// One pass over our strays: reaps the dead ones and SIGKILLs the live
/// ones (a later pass reaps them). Returns the live ones killed that hold
/// a file in `outputs` (`(dev, inode)` of a run's captures and pipes), and
/// how many strays it met, live or reaped: a stray that died since the
/// pass listed our children may have left children of its own to us
/// that the list missed, so only a pass that met none is the last.
fn strays_pass(outputs: &[(u64, u64)]) -> (Vec<Pid>, usize) {
    if !ADOPTING.load(Ordering::SeqCst) {
        return (Vec::new(), 0);
    }
    let _no_fork = FORKING
        .write()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let me = Pid::this().as_raw();
    let spawned = spawned_set().clone();
    let sessions: BTreeSet<i32> = super::live::all().iter().map(|pid| pid.as_raw()).collect();
    let tags: BTreeSet<String> = live_runs().keys().cloned().collect();
    let others: BTreeSet<(u64, u64)> = live_outputs()
        .keys()
        .filter(|id| !outputs.contains(id))
        .copied()
        .collect();
    let mut ours = Vec::new();
    let mut alive = 0;
    for pid in candidate_children() {
        if spawned.contains(&pid.as_raw()) {
            continue;
        }
        let Some(stat) = stat_of(pid) else { continue };
        if stat.ppid != me {
            continue;
        }
        if !stat.is_live() {
            reap_stray(pid, &stat, &sessions);
            alive += 1;
            continue;
        }
        // A live run's own process (an orphan still in its session, or
        // carrying its tag): that run's sweep decides.
        let in_live_run = sessions.contains(&stat.session)
            || tags_of(pid).is_some_and(|found| found.iter().any(|tag| tags.contains(tag)));
        if in_live_run {
            continue;
        }
        let held = held_outputs(pid);
        if held.iter().any(|id| outputs.contains(id)) {
            ours.push(pid);
        } else if held.iter().any(|id| others.contains(id)) {
            // Another live run's escapee: its sweep counts and kills it.
            continue;
        }
        alive += 1;
        sigkill(pid);
    }
    (ours, alive)
}

/// Where our children are found: the kernel's list of them, or (where it
/// keeps none) every process, each checked for its parent.
fn candidate_children() -> Vec<Pid> {
    super::tree::own_children().unwrap_or_else(all_pids)
}

/// Reaps a dead stray of ours, counting it for the live runs when it died
/// by itself outside every live run's session.
fn reap_stray(pid: Pid, stat: &Stat, sessions: &BTreeSet<i32>) {
    // Read before the reap takes the /proc entry away.
    let outside = !sessions.contains(&stat.session);
    let born = Some(stat.start_time);
    let status = waitpid(pid, Some(WaitPidFlag::WNOHANG));
    let ours_killed = matches!(status, Ok(WaitStatus::Signaled(_, Signal::SIGKILL, _)));
    if outside && !ours_killed && status.is_ok() {
        note_died_alone(born);
    }
}

/// Whether a run whose `leader` has ended left nothing alive, known
/// without a scan of `/proc`: as a child subreaper we adopt every orphan,
/// so once the leader is gone each live process of its tree is a child of
/// ours we did not spawn (or below one). With no such child, the tree is
/// gone. The dead strays found on the way are reaped. `false` whenever
/// it cannot be known this way (not a subreaper, the leader still alive,
/// a stray of any run, live or just dead): the caller then sweeps.
pub(super) fn tree_gone(leader: Pid) -> bool {
    if !ADOPTING.load(Ordering::SeqCst) || stat_of(leader).is_some_and(|stat| stat.is_live()) {
        return false;
    }
    let Some(children) = super::tree::own_children() else {
        return false;
    };
    // No fork of ours is between its fork and `spawned` while we look.
    let _no_fork = FORKING
        .write()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let spawned = spawned_set().clone();
    let sessions: BTreeSet<i32> = super::live::all().iter().map(|pid| pid.as_raw()).collect();
    let me = Pid::this().as_raw();
    let mut gone = true;
    for pid in children {
        if spawned.contains(&pid.as_raw()) {
            continue;
        }
        let Some(stat) = stat_of(pid) else { continue };
        if stat.ppid != me {
            continue;
        }
        // A live stray, or a dead one whose own orphans may have come to
        // us after the list was read: the caller sweeps.
        if stat.is_live() {
            return false;
        }
        reap_stray(pid, &stat, &sessions);
        gone = false;
    }
    gone
}

/// How many processes that escaped the run tagged `tag` died by themselves
/// before a sweep could kill them.
pub(super) fn died_alone(tag: &str) -> u32 {
    live_runs().get(tag).map_or(0, |run| run.died_alone)
}

/// The `(dev, inode)` of every file `pid` has open.
fn held_outputs(pid: Pid) -> Vec<(u64, u64)> {
    let Ok(fds) = fs::read_dir(format!("/proc/{pid}/fd")) else {
        return Vec::new();
    };
    fds.filter_map(|fd| fd.ok())
        .filter_map(|fd| fs::metadata(fd.path()).ok())
        .map(|meta| (meta.dev(), meta.ino()))
        .collect()
}

fn sigkill(pid: Pid) {
    match kill(pid, Signal::SIGKILL) {
        Ok(()) | Err(Errno::ESRCH) => {}
        Err(error) => eprintln!("solvergate: could not kill process {pid}: {error}"),
    }
}

/// What a sweep of a run's escapees found.
#[derive(Debug, Default)]
pub(super) struct Escaped {
    /// Distinct processes killed outside the run's session.
    pub count: u32,
}

/// Kills, after the run's session is swept, every live process carrying
/// one of `tags` (except `spare` and members of `session`, which the
/// session sweep owns) and every stray, until none is left (up to
/// [`ESCAPE_DEADLINE`]). Blocking.
pub(super) fn kill_escapees(
    session: Pid,
    tags: &[&str],
    spare: &[Pid],
    outputs: &[(u64, u64)],
) -> Escaped {
    let mut killed = BTreeSet::new();
    let started = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        let found = tagged(&|tag| tags.contains(&tag));
        let mut left = 0;
        for (pid, stat) in found {
            if spare.contains(&pid) {
                continue;
            }
            if stat.session != session.as_raw() {
                killed.insert(pid.as_raw());
            }
            left += 1;
            sigkill(pid);
        }
        let (strays, alive) = strays_pass(outputs);
        killed.extend(strays.iter().map(|pid| pid.as_raw()));
        left += alive;
        if left == 0 {
            break;
        }
        if started.elapsed() > ESCAPE_DEADLINE {
            eprintln!(
                "solvergate: {left} escaped process(es) still alive {} s after SIGKILL",
                ESCAPE_DEADLINE.as_secs()
            );
            break;
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(20));
    }
    // The strays killed on the last pass are reaped by the next sweep's;
    // give the kernel a moment and reap what is dead now.
    strays_pass(&[]);
    // The run's own tag comes first; a warm forker's, which outlives many
    // runs, does not make this run's escapees.
    let died_alone = tags.first().map_or(0, |tag| died_alone(tag));
    Escaped {
        count: u32::try_from(killed.len())
            .unwrap_or(u32::MAX)
            .saturating_add(died_alone),
    }
}

/// Kills every live process carrying a tag that starts with `prefix`, and
/// every stray, until none is left: the watchdog's last act for a server
/// that is gone, and the binary's before it exits.
pub fn kill_tagged_prefix(prefix: &str) {
    let started = Instant::now();
    loop {
        let found = tagged(&|tag| tag.starts_with(prefix));
        let (_, strays) = strays_pass(&[]);
        if found.is_empty() && strays == 0 {
            return;
        }
        for (pid, _) in found {
            sigkill(pid);
        }
        if started.elapsed() > ESCAPE_DEADLINE {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The `(dev, inode)` of an open file or pipe end, to recognise it in
/// another process's fd table.
pub(super) fn file_id(file: &impl std::os::fd::AsFd) -> Option<(u64, u64)> {
    let meta = nix::sys::stat::fstat(file.as_fd()).ok()?;
    Some((meta.st_dev, meta.st_ino))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tag_is_unique_and_starts_with_the_server_prefix() {
        let one = RunTag::new();
        let two = RunTag::new();
        assert_ne!(one.value(), two.value());
        assert!(one.value().starts_with(server_prefix()));
        assert!(server_prefix().starts_with(&format!("{}.", std::process::id())));
        assert!(live_runs().contains_key(one.value()));
        let value = one.value().to_owned();
        drop(one);
        assert!(!live_runs().contains_key(&value));
    }

    #[test]
    fn an_escapee_that_died_alone_counts_for_the_runs_started_before_it() {
        let run = |started| LiveRun {
            started,
            died_alone: 0,
        };
        let mut runs: BTreeMap<String, LiveRun> = [
            ("early".to_owned(), run(100)),
            ("late".to_owned(), run(500)),
        ]
        .into();
        count_died_alone(&mut runs, Some(200));
        let count = |runs: &BTreeMap<String, LiveRun>, tag: &str| runs[tag].died_alone;
        assert_eq!((count(&runs, "early"), count(&runs, "late")), (1, 0));
        // Unknown birth: every live run counts it.
        count_died_alone(&mut runs, None);
        assert_eq!((count(&runs, "early"), count(&runs, "late")), (2, 1));
        assert!(now_ticks() > 0, "the boot clock is readable here");
    }

    #[test]
    fn our_own_environment_is_readable() {
        assert!(tags_of(Pid::this()).is_some());
        assert!(stat_of(Pid::this()).is_some_and(|stat| stat.ppid > 0));
    }
}
