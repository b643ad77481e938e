//! What a run's whole tree holds in memory, where only rlimits bound it.
//!
//! Under rlimits memory is bounded per process (`RLIMIT_DATA`): a tree of
//! twenty processes, each under a 512 MiB limit, may hold ten times that.
//! So for every run whose memory is bounded by rlimits, one sampler shared
//! by all runs reads `/proc` every [`TICK`] and adds up the resident memory
//! of each watched run's session (the child leads a session of its own);
//! when a tree's sum passes its limit, that run's watch fires and the
//! executor stops the tree as it does at the scratch limit
//! (`Ending::OverLimit`, a [`super::Breach`] of kind `memory`).
//!
//! Cheap with many runs: one thread, one pass over `/proc` per tick for all
//! watched sessions (each process's `stat`, through [`super::tree`]), and
//! no pass at all while no run is watched (the thread sleeps until one is;
//! under a cgroup, which bounds the tree itself, none ever is). A resident
//! set counts the pages a process shares (a forked child's copy-on-write
//! pages, libraries) once per process; a sum over the limit is confirmed
//! with each process's proportional share (`Pss` of `smaps_rollup`, dearer,
//! so read only then) before the watch fires, so forked processes sharing
//! one parent's memory are not charged it twenty times.
//!
//! Under a cgroup v1 memory group the kernel bounds the tree, but at the
//! limit it kills one process and lets the rest run on (v1 has no
//! `memory.oom.group`), so a tree that lost its allocator would idle to its
//! timeout. The same sampler reads such a group's OOM-kill count
//! ([`TreeMemoryWatch::oom_counter`]) and fires at the first kill; the
//! breach is then the kernel's count, read when the run's groups go.
//!
//! What it does not do: bound exactly. A tree may grow for up to a tick
//! (and the executor's term grace) past the limit before it is stopped,
//! each process still under its own `RLIMIT_DATA`; a process that left the
//! session (`setsid`) is not counted (it is killed with the tree at the
//! end, [`super::escape`]). The one thing not to break: a watch is removed
//! when its run's guard drops, and nothing is sampled while none is left.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use nix::unistd::Pid;
use tokio_util::sync::CancellationToken;

use super::tree;

/// How often the watched trees are measured.
pub(super) const TICK: Duration = Duration::from_millis(200);

/// One run's watch, as the sampler sees it.
struct Watch {
    measure: Measure,
    over: CancellationToken,
    seen: Arc<Seen>,
}

/// What a watch measures.
#[derive(Clone)]
enum Measure {
    /// The session's resident memory, against a limit in bytes.
    Tree(u64),
    /// A v1 memory group's `memory.oom_control`: fires at its first OOM kill.
    OomCounter(PathBuf),
}

/// What the sampler saw when a tree went over its limit.
#[derive(Default)]
struct Seen {
    bytes: AtomicU64,
    processes: AtomicU64,
}

/// The watched sessions, by session id, and whether the sampler runs.
#[derive(Default)]
struct Watched {
    runs: BTreeMap<i32, Watch>,
    sampler: bool,
}

static WATCHED: Mutex<Watched> = Mutex::new(Watched {
    runs: BTreeMap::new(),
    sampler: false,
});
/// Wakes the sampler when a first run is watched.
static WAKE: Condvar = Condvar::new();

fn lock() -> MutexGuard<'static, Watched> {
    WATCHED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Watches the tree of the session led by `leader` against `limit` bytes
/// until dropped.
pub(super) struct TreeMemoryWatch {
    session: i32,
    over: CancellationToken,
    seen: Arc<Seen>,
    kernel: bool,
}

impl TreeMemoryWatch {
    /// Starts watching `leader`'s session (the sampler starts with the
    /// first watch ever made).
    pub fn start(leader: Pid, limit: u64) -> TreeMemoryWatch {
        TreeMemoryWatch::watch(leader, Measure::Tree(limit))
    }

    /// Starts watching the v1 memory group of `leader`'s run through its
    /// `memory.oom_control`: fires at the kernel's first OOM kill in it.
    pub fn oom_counter(leader: Pid, oom_control: PathBuf) -> TreeMemoryWatch {
        TreeMemoryWatch::watch(leader, Measure::OomCounter(oom_control))
    }

    /// Whether this watch reads the kernel's OOM-kill count (whose breach
    /// the run's group reports) rather than measuring the tree.
    pub fn counts_kernel_kills(&self) -> bool {
        self.kernel
    }

    fn watch(leader: Pid, measure: Measure) -> TreeMemoryWatch {
        let over = CancellationToken::new();
        let seen = Arc::new(Seen::default());
        let session = leader.as_raw();
        let kernel = matches!(measure, Measure::OomCounter(_));
        let mut watched = lock();
        watched.runs.insert(
            session,
            Watch {
                measure,
                over: over.clone(),
                seen: seen.clone(),
            },
        );
        if !watched.sampler {
            let started = std::thread::Builder::new()
                .name("solvergate-memory-watch".into())
                .spawn(sample_forever);
            match started {
                Ok(_) => watched.sampler = true,
                Err(error) => eprintln!(
                    "solvergate: could not start the tree memory watch ({error}); memory is bounded per process only"
                ),
            }
        }
        WAKE.notify_one();
        TreeMemoryWatch {
            session,
            over,
            seen,
            kernel,
        }
    }

    /// Resolves once the tree went over its limit.
    pub async fn exceeded(&self) {
        self.over.cancelled().await;
    }

    /// Whether the tree went over its limit.
    pub fn fired(&self) -> bool {
        self.over.is_cancelled()
    }

    /// What the tree held when it went over, in bytes, and in how many
    /// processes.
    pub fn seen(&self) -> (u64, u64) {
        (
            self.seen.bytes.load(Ordering::Relaxed),
            self.seen.processes.load(Ordering::Relaxed),
        )
    }
}

impl Drop for TreeMemoryWatch {
    fn drop(&mut self) {
        let mut watched = lock();
        // Only our own watch: a later run's session may reuse the id once
        // ours is reaped.
        if watched
            .runs
            .get(&self.session)
            .is_some_and(|watch| Arc::ptr_eq(&watch.seen, &self.seen))
        {
            watched.runs.remove(&self.session);
        }
    }
}

/// The sampler: sleeps while no run is watched, else measures every
/// watched tree once per [`TICK`].
fn sample_forever() {
    loop {
        let measures: Vec<(i32, Measure)> = {
            let mut watched = lock();
            while watched.runs.is_empty() {
                watched = WAKE
                    .wait(watched)
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
            }
            watched
                .runs
                .iter()
                .map(|(session, watch)| (*session, watch.measure.clone()))
                .collect()
        };
        let limits: BTreeMap<i32, u64> = measures
            .iter()
            .filter_map(|(session, measure)| match measure {
                Measure::Tree(limit) => Some((*session, *limit)),
                Measure::OomCounter(_) => None,
            })
            .collect();
        let mut over = if limits.is_empty() {
            Vec::new()
        } else {
            sample(&limits)
        };
        over.extend(
            measures
                .iter()
                .filter_map(|(session, measure)| match measure {
                    Measure::OomCounter(file) => {
                        let kills = super::cgroup::keyed(file, "oom_kill").unwrap_or(0);
                        (kills > 0).then_some((*session, 0, kills))
                    }
                    Measure::Tree(_) => None,
                }),
        );
        if !over.is_empty() {
            let mut watched = lock();
            for (session, bytes, processes) in over {
                if let Some(watch) = watched.runs.remove(&session) {
                    watch.seen.bytes.store(bytes, Ordering::Relaxed);
                    watch.seen.processes.store(processes, Ordering::Relaxed);
                    watch.over.cancel();
                }
            }
        }
        std::thread::sleep(TICK);
    }
}

/// One pass: the sessions of `limits` whose trees hold more than their
/// limit, with what they held and in how many processes.
fn sample(limits: &BTreeMap<i32, u64>) -> Vec<(i32, u64, u64)> {
    let sessions: BTreeSet<i32> = limits.keys().copied().collect();
    let resident = tree::resident_by_session(&sessions);
    let mut over = Vec::new();
    for (session, members) in resident {
        let Some(&limit) = limits.get(&session) else {
            continue;
        };
        let rss = members
            .iter()
            .map(|(_, bytes)| *bytes)
            .fold(0u64, u64::saturating_add);
        if rss <= limit {
            continue;
        }
        let held = proportional(&members);
        if held > limit {
            over.push((session, held, members.len() as u64));
        }
    }
    over
}

/// The tree's memory with shared pages counted once in all: each member's
/// proportional set size (nothing for one that has gone meanwhile), its
/// resident set when that may not be read.
fn proportional(members: &[(Pid, u64)]) -> u64 {
    members
        .iter()
        .map(|(pid, rss)| tree::proportional_bytes(*pid).unwrap_or(*rss))
        .fold(0u64, u64::saturating_add)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Child, Command, Stdio};
    use std::time::Instant;

    const MIB: u64 = 1024 * 1024;

    /// `python3 -c program` leading a session of its own (`setsid` execs
    /// in place: the child's pid is the session id), killed on drop.
    struct Tree(Child);

    impl Tree {
        fn start(program: &str) -> Tree {
            let child = Command::new("setsid")
                .args(["python3", "-c", program])
                .stdin(Stdio::null())
                .spawn()
                .unwrap();
            Tree(child)
        }

        fn session(&self) -> i32 {
            i32::try_from(self.0.id()).unwrap()
        }

        /// Waits until the tree's resident sets add up to `bytes`.
        fn holds(&self, bytes: u64) {
            let started = Instant::now();
            let session = BTreeSet::from([self.session()]);
            loop {
                let found = tree::resident_by_session(&session);
                let rss = found.get(&self.session()).map_or(0, |members| {
                    members.iter().map(|(_, bytes)| *bytes).sum::<u64>()
                });
                if rss >= bytes {
                    return;
                }
                assert!(
                    started.elapsed() < Duration::from_secs(60),
                    "the tree never held {bytes} bytes: {rss}"
                );
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }

    impl Drop for Tree {
        fn drop(&mut self) {
            tree::kill_session(Pid::from_raw(self.session()));
            let _ = self.0.wait();
        }
    }

    /// Four forked children, each touching 64 MiB of its own.
    const FOUR_HOLDERS: &str = "import os, time
for _ in range(4):
    if os.fork() == 0:
        held = bytearray(b'\\x01') * (64 << 20)
        time.sleep(60)
        os._exit(0)
time.sleep(60)
";

    /// A parent touching 64 MiB, then forking four children that share it.
    const FOUR_SHARERS: &str = "import os, time
held = bytearray(b'\\x01') * (64 << 20)
for _ in range(4):
    if os.fork() == 0:
        time.sleep(60)
        os._exit(0)
time.sleep(60)
";

    #[test]
    fn a_tree_is_charged_what_its_processes_hold_together() {
        let tree = Tree::start(FOUR_HOLDERS);
        tree.holds(4 * 64 * MIB);
        let over = sample(&BTreeMap::from([(tree.session(), 200 * MIB)]));
        let [(session, held, processes)] = over.as_slice() else {
            panic!("not seen over 200 MiB: {over:?}");
        };
        assert_eq!(*session, tree.session());
        assert!(*held > 200 * MIB, "{held}");
        assert_eq!(*processes, 5);
        assert!(sample(&BTreeMap::from([(tree.session(), 1024 * MIB)])).is_empty());
    }

    #[test]
    fn pages_shared_by_forked_processes_are_charged_once() {
        let tree = Tree::start(FOUR_SHARERS);
        // Each of the five resident sets counts the parent's 64 MiB.
        tree.holds(5 * 64 * MIB);
        let limits = BTreeMap::from([(tree.session(), 200 * MIB)]);
        assert!(
            sample(&limits).is_empty(),
            "shared pages charged per process"
        );
        let limits = BTreeMap::from([(tree.session(), 32 * MIB)]);
        assert_eq!(sample(&limits).len(), 1);
    }

    #[tokio::test]
    async fn the_shared_sampler_fires_the_watch_of_a_tree_over_its_limit() {
        let tree = Tree::start(FOUR_HOLDERS);
        let over = TreeMemoryWatch::start(Pid::from_raw(tree.session()), 200 * MIB);
        let under = TreeMemoryWatch::start(Pid::from_raw(std::process::id() as i32), u64::MAX);
        tokio::time::timeout(Duration::from_secs(60), over.exceeded())
            .await
            .unwrap();
        let (bytes, processes) = over.seen();
        assert!(bytes > 200 * MIB && processes == 5, "{bytes} {processes}");
        assert!(!under.fired());
        drop((over, under));
        assert!(
            lock().runs.is_empty(),
            "a dropped watch is no longer sampled"
        );
    }
}
