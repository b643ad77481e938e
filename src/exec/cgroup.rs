//! Control groups for run trees: what the host lets us use, and one group
//! per run that bounds the memory and the tasks of the whole tree.
//!
//! Two layouts are understood, found once from `/proc/self/cgroup` and
//! `/proc/self/mountinfo`:
//!
//! - **cgroup v2** with a delegated subtree: our own group offers the
//!   `memory` and `pids` controllers and is writable. The server moves
//!   itself into a leaf `server` beside the run groups (a v2 group with
//!   controllers for its children holds no processes of its own), enables
//!   both controllers for the children, and each run gets `memory.max`,
//!   `memory.swap.max = 0`, `memory.oom.group = 1` (an OOM kill takes the
//!   whole tree, not one process) and `pids.max`.
//! - **cgroup v1** hierarchies for `memory` and `pids` that we may create
//!   groups in (in practice: root on a host that still mounts v1, as these
//!   machines do): `memory.limit_in_bytes` (and the memory+swap limit where
//!   swap is accounted) and `pids.max`. v1 has no `memory.oom.group`: the
//!   kernel kills one process at the limit, so the executor stops the rest
//!   of the tree at the group's first counted OOM kill
//!   ([`RunGroup::v1_oom_counter`]).
//!
//! A controller neither layout gives us falls back to an rlimit (see
//! [`super::limits`]). A run's group is created before the spawn; the
//! confined child ([`super::confine`]) joins each group (writes `0` to its
//! [`join_file`]) before it execs the program, so nothing of the tree runs
//! outside it. After the sweep, [`RunGroup::counted`] reads what the kernel
//! counted (an OOM kill, a refused fork); dropping the group (off the
//! run's path, once its result is out) kills whatever is still inside and
//! removes it.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// Which cgroup layout a controller comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// The unified hierarchy, in a delegated subtree.
    V2,
    /// A legacy per-controller hierarchy.
    V1,
}

/// Where run groups for one controller are made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parent {
    /// The layout.
    pub version: Version,
    /// The directory run groups are created in.
    pub dir: PathBuf,
}

/// What the host offers, per controller.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Host {
    /// Where memory-bounded run groups go, when we may make them.
    pub memory: Option<Parent>,
    /// Where task-bounded run groups go, when we may make them.
    pub pids: Option<Parent>,
    /// Why our v2 group, which offers `memory` and `pids`, is not used:
    /// said in `check_runtime` beside the fallback.
    pub v2_refused: Option<String>,
}

/// The name every run group starts with: `solvergate-<server pid>-<n>`.
const GROUP_PREFIX: &str = "solvergate-";

impl Host {
    /// Finds the usable controllers of this process's cgroups (and, on v2,
    /// moves this process into the `server` leaf that makes them usable).
    pub fn discover() -> Host {
        let own = fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        let mounts = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let v2_refused = match v2_parent(&own, &mounts, std::process::id()) {
            Ok(parent) => {
                return Host {
                    memory: Some(parent.clone()),
                    pids: Some(parent),
                    v2_refused: None,
                };
            }
            Err(refused) => refused,
        };
        let v1 = |controller: &str| {
            let dir = v1_dir(&own, &mounts, controller)?;
            remove_stale_groups(&dir);
            probe_writable(&dir).then_some(Parent {
                version: Version::V1,
                dir,
            })
        };
        Host {
            memory: v1("memory"),
            pids: v1("pids"),
            v2_refused,
        }
    }
}

/// The mount point of the v2 hierarchy, and of the v1 hierarchy that
/// carries `controller`.
fn mount_point(mounts: &str, controller: Option<&str>) -> Option<PathBuf> {
    mounts.lines().find_map(|line| {
        let (before, after) = line.split_once(" - ")?;
        let mount = before.split_whitespace().nth(4)?;
        let mut after = after.split_whitespace();
        let fstype = after.next()?;
        let options = after.nth(1).unwrap_or("");
        let wanted = match controller {
            None => fstype == "cgroup2",
            Some(controller) => fstype == "cgroup" && options.split(',').any(|o| o == controller),
        };
        wanted.then(|| PathBuf::from(mount))
    })
}

/// Our group's path in the hierarchy whose `/proc/self/cgroup` line names
/// `controllers` (`""` for v2's `0::/path`).
fn own_path<'a>(own: &'a str, controller: &str) -> Option<&'a str> {
    own.lines().find_map(|line| {
        let mut fields = line.splitn(3, ':');
        let _id = fields.next()?;
        let names = fields.next()?;
        let path = fields.next()?;
        let matches = if controller.is_empty() {
            names.is_empty()
        } else {
            names.split(',').any(|name| name == controller)
        };
        matches.then_some(path)
    })
}

fn v1_dir(own: &str, mounts: &str, controller: &str) -> Option<PathBuf> {
    let mount = mount_point(mounts, Some(controller))?;
    let path = own_path(own, controller)?;
    Some(mount.join(path.trim_start_matches('/')))
}

/// On v2: our group, when it offers `memory` and `pids` and we may
/// reorganise it (move ourselves, process `pid`, into a `server` leaf and
/// enable both controllers for the children). `Err(Some(why))` when the
/// group offers both but cannot be used, `Err(None)` when there is no v2
/// group with both to speak of.
fn v2_parent(own: &str, mounts: &str, pid: u32) -> Result<Parent, Option<String>> {
    let mount = mount_point(mounts, None).ok_or(None)?;
    let path = own_path(own, "").ok_or(None)?;
    let dir = mount.join(path.trim_start_matches('/'));
    let offered = fs::read_to_string(dir.join("cgroup.controllers")).map_err(|_| None)?;
    let has = |name: &str| offered.split_whitespace().any(|c| c == name);
    if !(has("memory") && has("pids")) {
        return Err(None);
    }
    let refused = |why: &str| Some(format!("our cgroup v2 group {} {why}", dir.display()));
    // The kernel gives controllers only to the children of a group that
    // holds no process itself (the root aside): a group shared with
    // another process (the terminal's shell, the MCP client that started
    // us) cannot be reorganised. Said before anything moves, so nothing is
    // left behind in a group that is not ours.
    let procs = fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
    let others = procs
        .split_whitespace()
        .filter(|other| *other != pid.to_string())
        .count();
    if others > 0 && path != "/" {
        return Err(refused(&format!(
            "holds {others} other process(es), and the kernel gives the controllers only to the children of a group without processes: start solvergate in a group of its own (`systemd-run --user --scope -p Delegate=yes solvergate …`, or `Delegate=yes` in its unit)"
        )));
    }
    let enabled = |dir: &Path| {
        fs::read_to_string(dir.join("cgroup.subtree_control")).is_ok_and(|text| {
            let on: Vec<&str> = text.split_whitespace().collect();
            on.contains(&"memory") && on.contains(&"pids")
        })
    };
    remove_stale_groups(&dir);
    if !enabled(&dir) {
        // A group that hands controllers to its children may hold no
        // process itself: move ourselves into a leaf first.
        let leaf = dir.join("server");
        let not_writable = || refused("is not writable by us");
        match fs::create_dir(&leaf) {
            Ok(()) => {}
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
            Err(_) => return Err(not_writable()),
        }
        fs::write(leaf.join("cgroup.procs"), pid.to_string()).map_err(|_| not_writable())?;
        fs::write(dir.join("cgroup.subtree_control"), "+memory +pids")
            .map_err(|error| refused(&format!("refused its children the controllers: {error}")))?;
    }
    if enabled(&dir) && probe_writable(&dir) {
        Ok(Parent {
            version: Version::V2,
            dir,
        })
    } else {
        Err(refused("does not let us make run groups in it"))
    }
}

/// Whether we can create (and remove) a group in `dir`.
fn probe_writable(dir: &Path) -> bool {
    let probe = dir.join(format!("{GROUP_PREFIX}{}-probe", std::process::id()));
    let made = fs::create_dir(&probe).is_ok();
    made && fs::remove_dir(&probe).is_ok()
}

/// Removes run groups left by a server that is gone (killed before it
/// could remove them); a group that still holds a process stays.
fn remove_stale_groups(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|name| name.strip_prefix(GROUP_PREFIX))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<i32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = fs::remove_dir(entry.path());
        }
    }
}

/// Run groups made so far by this process, for unique names.
static NEXT_GROUP: AtomicU64 = AtomicU64::new(0);

/// What the kernel counted for a run's group.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counted {
    /// Processes of the tree the OOM killer killed at the memory limit.
    pub oom_kills: u64,
    /// The most memory the tree held, in bytes, where the kernel says.
    pub memory_peak: Option<u64>,
    /// Forks refused at the task limit.
    pub forks_refused: u64,
    /// The most tasks the tree had at once, where the kernel says.
    pub tasks_peak: Option<u64>,
}

/// The groups of one run: one per controller (v1), or one for both (v2).
#[derive(Debug)]
pub struct RunGroup {
    memory: Option<(Version, PathBuf)>,
    pids: Option<(Version, PathBuf)>,
}

impl RunGroup {
    /// Makes the run's groups under `host`'s parents: at most
    /// `memory_bytes` of memory (when `host` has a memory parent), at most
    /// `tasks` tasks (when it has a pids parent).
    pub fn create(host: &Host, memory_bytes: u64, tasks: u64) -> io::Result<RunGroup> {
        let name = format!(
            "{GROUP_PREFIX}{}-{}",
            std::process::id(),
            NEXT_GROUP.fetch_add(1, Ordering::Relaxed)
        );
        let mut group = RunGroup {
            memory: None,
            pids: None,
        };
        if let Some(parent) = &host.memory {
            let dir = parent.dir.join(&name);
            fs::create_dir(&dir)?;
            group.memory = Some((parent.version, dir.clone()));
            let bytes = memory_bytes.to_string();
            match parent.version {
                Version::V2 => {
                    fs::write(dir.join("memory.max"), &bytes)?;
                    optional_write(&dir.join("memory.swap.max"), "0")?;
                    fs::write(dir.join("memory.oom.group"), "1")?;
                }
                Version::V1 => {
                    fs::write(dir.join("memory.limit_in_bytes"), &bytes)?;
                    optional_write(&dir.join("memory.memsw.limit_in_bytes"), &bytes)?;
                }
            }
        }
        if let Some(parent) = &host.pids {
            let shared = match (&group.memory, parent.version) {
                (Some((Version::V2, dir)), Version::V2) => Some(dir.clone()),
                _ => None,
            };
            let dir = match shared {
                Some(dir) => dir,
                None => {
                    let dir = parent.dir.join(&name);
                    fs::create_dir(&dir)?;
                    dir
                }
            };
            group.pids = Some((parent.version, dir.clone()));
            fs::write(dir.join("pids.max"), tasks.to_string())?;
        }
        Ok(group)
    }

    /// The files a confined child joins by writing `0` to each, once: a v2
    /// group's `cgroup.procs`, a v1 group's `tasks`. See [`join_file`].
    pub fn join_files(&self) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = [&self.memory, &self.pids]
            .into_iter()
            .flatten()
            .map(|(version, dir)| join_file(*version, dir))
            .collect();
        files.dedup();
        files
    }

    /// A v1 memory group's `memory.oom_control`, whose `oom_kill` count
    /// says the kernel killed a process of the tree at the limit. v1 has no
    /// `memory.oom.group`: the kernel kills one process and the rest of the
    /// tree runs on, so the executor watches this and stops the tree
    /// itself. `None` on v2, where the kernel takes the whole tree.
    pub fn v1_oom_counter(&self) -> Option<PathBuf> {
        match &self.memory {
            Some((Version::V1, dir)) => Some(dir.join("memory.oom_control")),
            _ => None,
        }
    }

    /// What the kernel counted in the run's groups.
    pub fn counted(&self) -> Counted {
        let mut counted = Counted::default();
        if let Some((version, dir)) = &self.memory {
            let (events, peak) = match version {
                Version::V2 => ("memory.events", "memory.peak"),
                Version::V1 => ("memory.oom_control", "memory.max_usage_in_bytes"),
            };
            counted.oom_kills = keyed(&dir.join(events), "oom_kill").unwrap_or(0);
            counted.memory_peak = number(&dir.join(peak));
        }
        if let Some((_, dir)) = &self.pids {
            counted.forks_refused = keyed(&dir.join("pids.events"), "max").unwrap_or(0);
            counted.tasks_peak = number(&dir.join("pids.peak"));
        }
        counted
    }
}

impl Drop for RunGroup {
    fn drop(&mut self) {
        for dir in [self.memory.take(), self.pids.take()]
            .into_iter()
            .flatten()
            .map(|(_, dir)| dir)
        {
            empty_and_remove(&dir);
        }
    }
}

/// The file a single-threaded process joins `dir` through by writing `0`
/// (itself) to it.
///
/// On v1 that is `tasks`, which moves only the writing thread, all there is
/// of a child forked from the server (or from a warm forker). The
/// kernel moves one thread that writes its own id without taking the global
/// threadgroup lock, whereas `cgroup.procs` takes it, and taking it waits
/// for an RCU grace period unless another move happened just before: 6–16
/// ms of wall time per run on these machines, against 0.3 ms. v2 does not
/// let a thread leave its process's domain, so there it is `cgroup.procs`.
fn join_file(version: Version, dir: &Path) -> PathBuf {
    match version {
        Version::V1 => dir.join("tasks"),
        Version::V2 => dir.join("cgroup.procs"),
    }
}

/// Kills every process left in a group and removes it, waiting up to a
/// second for the kernel to let the last ones go.
fn empty_and_remove(dir: &Path) {
    if !dir.exists() {
        return;
    }
    let deadline = Instant::now() + Duration::from_secs(1);
    loop {
        // v2 kills the whole group at once; v1 one pid at a time.
        if fs::write(dir.join("cgroup.kill"), "1").is_err() {
            let procs = fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
            for pid in procs
                .lines()
                .filter_map(|line| line.trim().parse::<i32>().ok())
            {
                let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
            }
        }
        match fs::remove_dir(dir) {
            Ok(()) => return,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return,
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            Err(error) => {
                eprintln!(
                    "solvergate: could not remove the run's cgroup {}: {error}",
                    dir.display()
                );
                return;
            }
        }
    }
}

/// Writes a control file that a kernel may not have (swap accounting off).
fn optional_write(path: &Path, value: &str) -> io::Result<()> {
    match fs::write(path, value) {
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

/// The value of `key` in a `key value` per line control file.
pub(super) fn keyed(path: &Path, key: &str) -> Option<u64> {
    let text = fs::read_to_string(path).ok()?;
    text.lines().find_map(|line| {
        let (name, value) = line.split_once(' ')?;
        (name == key).then(|| value.trim().parse().ok())?
    })
}

/// A control file holding one number.
fn number(path: &Path) -> Option<u64> {
    fs::read_to_string(path).ok()?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTS: &str = "\
35 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
36 30 0:32 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 30 0:36 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";
    const OWN: &str = "8:pids:/\n4:memory:/process_api/abc\n0::/\n";

    #[test]
    fn v1_dirs_join_the_mount_and_our_path() {
        assert_eq!(
            v1_dir(OWN, MOUNTS, "memory"),
            Some(PathBuf::from("/sys/fs/cgroup/memory/process_api/abc"))
        );
        assert_eq!(
            v1_dir(OWN, MOUNTS, "pids"),
            Some(PathBuf::from("/sys/fs/cgroup/pids"))
        );
        assert_eq!(v1_dir(OWN, MOUNTS, "cpu"), None);
        assert_eq!(
            mount_point(MOUNTS, None),
            Some(PathBuf::from("/sys/fs/cgroup/unified"))
        );
        assert_eq!(own_path(OWN, ""), Some("/"));
    }

    #[test]
    fn a_v2_group_shared_with_another_process_is_refused_untouched() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("app.slice/app-client.scope");
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("cgroup.controllers"), "cpu memory pids\n").unwrap();
        fs::write(dir.join("cgroup.subtree_control"), "").unwrap();
        fs::write(dir.join("cgroup.procs"), "41\n42\n").unwrap();
        let mounts = format!(
            "30 1 0:26 / {} rw,nsdelegate - cgroup2 cgroup2 rw\n",
            root.path().display()
        );
        let own = "0::/app.slice/app-client.scope\n";
        let why = v2_parent(own, &mounts, 42).unwrap_err().unwrap();
        assert!(
            why.contains("app-client.scope holds 1 other process(es)"),
            "{why}"
        );
        assert!(!dir.join("server").exists(), "nothing moved");
        // A group without the controllers is no v2 group to speak of.
        fs::write(dir.join("cgroup.controllers"), "cpu\n").unwrap();
        assert_eq!(v2_parent(own, &mounts, 42).unwrap_err(), None);
    }

    #[test]
    fn keyed_files_read_their_counter() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("memory.oom_control");
        fs::write(&path, "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n").unwrap();
        assert_eq!(keyed(&path, "oom_kill"), Some(2));
        assert_eq!(keyed(&path, "missing"), None);
        fs::write(dir.path().join("pids.peak"), "17\n").unwrap();
        assert_eq!(number(&dir.path().join("pids.peak")), Some(17));
    }
}
