//! What a confined child applies to itself between `fork` and `exec`.
//!
//! The server prepares everything a run's confinement needs before the
//! fork ([`Confinement`]: the cgroup files opened, the Landlock ruleset
//! built, the id maps formatted, the shared network namespace held open
//! since start-up), and the forked child applies it with system calls
//! alone ([`Confinement::apply`], a `pre_exec` hook), in this order, then
//! execs the program, which inherits all of it:
//!
//! 1. join the run's cgroups: write `0` (itself) to each v1 `tasks` file;
//!    on v2 clone itself into the group and wait outside as the clone's
//!    supervisor ([`super::clone_into`]), since a move into a v2 group
//!    waits for an RCU grace period and a clone does not;
//! 2. the network ([`Network`]): enter the network namespace the server
//!    made once at start-up (and, as a user, the user namespace that owns
//!    it), or make one of its own where the kernel cannot keep runs apart
//!    inside a shared one;
//! 3. a user namespace of the run's own, where `RLIMIT_NPROC` counts only
//!    its processes (when limits need it);
//! 4. rlimits, soft and hard, so the program cannot raise them again;
//! 5. as root, drop `CAP_SYS_ADMIN`, `CAP_NET_ADMIN` and `CAP_NET_RAW` from
//!    the bounding set, so the program can neither bring the shared
//!    namespace's loopback up nor `setns` its way out of it;
//! 6. Landlock: `no_new_privs`, then the run's ruleset.
//!
//! There is no second exec: the child is the server's own fork, so it does
//! only what is safe between fork and exec in a threaded process (system
//! calls on prepared memory: no allocation, no lock). Every step must hold:
//! one that fails writes its name to a pipe the server reads and fails the
//! spawn with its errno, so a child never runs with less confinement than
//! it was given. What each run enforces is what the start-up probe
//! ([`probe_sandbox`]) found the kernel enforces, since every run applies
//! the same steps or does not run.
//!
//! The warm forker's child (`forker.py`) applies the same [`Confinement`],
//! read from JSON with the ruleset and namespaces passed as descriptors.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use nix::libc;

use super::clone_into::{self, Side};
use super::sandbox::{self, Network, SandboxReport};

/// The network namespace shared by every run (and, when the server is not
/// root, the user namespace that owns it), held open by the server.
#[derive(Debug)]
pub(super) struct SharedNet {
    userns: Option<OwnedFd>,
    netns: OwnedFd,
}

static SHARED_NET: OnceLock<SharedNet> = OnceLock::new();

/// One rlimit to set, soft and hard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Rlimit {
    /// Its name in the forker's JSON: `fsize`, `data`, `nproc`.
    pub name: &'static str,
    /// Its value, in bytes or processes.
    pub value: u64,
}

impl Rlimit {
    fn resource(self) -> Option<libc::__rlimit_resource_t> {
        match self.name {
            "fsize" => Some(libc::RLIMIT_FSIZE),
            "data" => Some(libc::RLIMIT_DATA),
            "nproc" => Some(libc::RLIMIT_NPROC),
            _ => None,
        }
    }
}

/// A run's confinement, prepared in the server before the fork.
#[derive(Debug, Default)]
pub(super) struct Confinement {
    /// Files to join the run's cgroups through (`tasks` on v1,
    /// `cgroup.procs` on v2), opened for writing.
    joins: Vec<(PathBuf, OwnedFd)>,
    /// A v2 group to clone into, opened.
    clone_into: Option<OwnedFd>,
    /// rlimits to set.
    pub rlimits: Vec<Rlimit>,
    /// A user namespace of the run's own (for `nproc`).
    pub userns: bool,
    /// How the network is cut.
    pub network: Network,
    /// Drop the capabilities that reach the network (root only).
    pub drop_caps: bool,
    /// The run's Landlock ruleset.
    pub landlock: Option<OwnedFd>,
    /// The ruleset confines reads: the child adds its own `/proc/<pid>`.
    own_proc: bool,
    /// `uid uid 1` and `gid gid 1`, for the id maps of a new user namespace.
    maps: IdMaps,
}

/// What a step that failed is called, for the spawn error.
type Step = &'static str;

impl Confinement {
    /// A confinement with the sandbox as the start-up probe found it
    /// (writes only beneath `write`; reads beneath the read roots and
    /// `read`) and nothing else yet.
    pub fn sandboxed(write: &[PathBuf], read: &[PathBuf]) -> io::Result<Confinement> {
        let mut confinement = Confinement {
            maps: IdMaps::own(),
            ..Confinement::default()
        };
        if let Some(mode) = sandbox::mode() {
            confinement.network = mode.network;
            confinement.drop_caps = mode.network != Network::Open && is_root();
            if mode.landlock {
                confinement.landlock = Some(sandbox::ruleset(write, read)?);
                confinement.own_proc = super::reads::bounded();
            }
        }
        Ok(confinement)
    }

    /// Joins the run's cgroups through `files` (see `cgroup::join_file`):
    /// opened now, written in the child.
    pub fn join(&mut self, files: Vec<PathBuf>) -> io::Result<()> {
        let v2_group = match files.as_slice() {
            [file] if file.file_name().is_some_and(|name| name == "cgroup.procs") => {
                file.parent().map(Path::to_path_buf)
            }
            _ => None,
        };
        if let Some(dir) = v2_group {
            self.clone_into = Some(std::fs::File::open(dir)?.into());
        }
        for file in files {
            let fd = std::fs::OpenOptions::new().write(true).open(&file)?;
            self.joins.push((file, fd.into()));
        }
        Ok(())
    }

    /// Whether the child joins a v2 group by cloning itself into it, and
    /// so stays on as the clone's supervisor instead of exec'ing.
    pub fn clones_into_group(&self) -> bool {
        self.clone_into.is_some()
    }

    /// The cgroup files the forker's child joins through.
    pub fn join_files(&self) -> impl Iterator<Item = &Path> {
        self.joins.iter().map(|(path, _)| path.as_path())
    }

    /// The shared namespaces to enter, when the network is [`Network::Shared`]:
    /// the owning user namespace (a server that is not root) and the
    /// network namespace.
    pub fn shared_namespaces(&self) -> Option<(Option<RawFd>, RawFd)> {
        let shared = SHARED_NET
            .get()
            .filter(|_| self.network == Network::Shared)?;
        Some((
            shared.userns.as_ref().map(AsRawFd::as_raw_fd),
            shared.netns.as_raw_fd(),
        ))
    }

    /// Applies the confinement to this process: the `pre_exec` hook of a
    /// child forked from the server. Only system calls on memory prepared
    /// before the fork; a step that fails writes its name to `why` and
    /// fails with its errno. On v2 the process that called this becomes
    /// the supervisor of a clone that goes on, and never returns.
    pub fn apply(&self, why: RawFd) -> io::Result<()> {
        self.apply_steps().map_err(|(step, error)| {
            // SAFETY: write(2) of a static string to a descriptor we own.
            unsafe { libc::write(why, step.as_ptr().cast(), step.len()) };
            error
        })
    }

    fn apply_steps(&self) -> Result<(), (Step, io::Error)> {
        let mut joined = false;
        if let Some(group) = &self.clone_into {
            match clone_into::clone_into(group.as_raw_fd()) {
                Ok(Side::Clone) => joined = true,
                Ok(Side::Supervisor(clone)) => clone_into::supervise(clone),
                // No clone3 or CLONE_INTO_CGROUP: the write below.
                Err(_) => {}
            }
        }
        if !joined {
            for (_, fd) in &self.joins {
                // `0` is the writer itself: on v1's `tasks` the one thread
                // a forked child is, which the kernel moves without its
                // global lock.
                check("join the run's cgroup", unsafe {
                    libc::write(fd.as_raw_fd(), c"0".as_ptr().cast(), 1)
                })?;
            }
        }
        match self.network {
            Network::Open => {}
            Network::Shared => {
                let Some((userns, netns)) = self.shared_namespaces() else {
                    return Err(("enter the shared network namespace", einval()));
                };
                if let Some(userns) = userns {
                    check("enter the network's user namespace", unsafe {
                        libc::setns(userns, libc::CLONE_NEWUSER)
                    })?;
                }
                check("enter the shared network namespace", unsafe {
                    libc::setns(netns, libc::CLONE_NEWNET)
                })?;
            }
            Network::Own if is_root_now() => {
                check("make a network namespace", unsafe {
                    libc::unshare(libc::CLONE_NEWNET)
                })?;
            }
            Network::Own => {
                check("make a network namespace", unsafe {
                    libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET)
                })?;
                self.maps.write_self()?;
            }
        }
        if self.userns {
            check("make a user namespace for the process limit", unsafe {
                libc::unshare(libc::CLONE_NEWUSER)
            })?;
            self.maps.write_self()?;
        }
        for rlimit in &self.rlimits {
            let Some(resource) = rlimit.resource() else {
                return Err(("set an rlimit", einval()));
            };
            let value = libc::rlimit {
                rlim_cur: rlimit.value,
                rlim_max: rlimit.value,
            };
            check("set an rlimit", unsafe {
                libc::setrlimit(resource, &value)
            })?;
        }
        if self.drop_caps {
            for capability in DROPPED_CAPABILITIES {
                check("drop a capability", unsafe {
                    libc::prctl(libc::PR_CAPBSET_DROP, capability, 0, 0, 0)
                })?;
            }
        }
        if let Some(ruleset) = &self.landlock {
            if self.own_proc {
                read_own_proc_dir(ruleset.as_raw_fd())?;
            }
            check("set no_new_privs", unsafe {
                libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
            })?;
            check("apply the Landlock ruleset", unsafe {
                libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0)
            })?;
        }
        Ok(())
    }

    /// What the forker's child is told (`forker.py`'s `confine`), and the
    /// descriptors that go with it, in the order the JSON's indexes name.
    pub fn to_json(&self, first_fd: usize) -> (serde_json::Value, Vec<RawFd>) {
        let mut fds = Vec::new();
        let mut index = |fd: RawFd| {
            fds.push(fd);
            first_fd + fds.len() - 1
        };
        let landlock = self.landlock.as_ref().map(|fd| index(fd.as_raw_fd()));
        let (userns, netns) = match self.shared_namespaces() {
            Some((userns, netns)) => (userns.map(&mut index), Some(index(netns))),
            None => (None, None),
        };
        let rlimits: serde_json::Map<String, serde_json::Value> = self
            .rlimits
            .iter()
            .map(|rlimit| {
                (
                    rlimit.name.to_owned(),
                    serde_json::Value::from(rlimit.value),
                )
            })
            .collect();
        let network = match self.network {
            Network::Open => serde_json::Value::Null,
            Network::Shared => serde_json::json!({"userns": userns, "netns": netns}),
            Network::Own => serde_json::json!("own"),
        };
        let cgroups: Vec<String> = self
            .join_files()
            .map(|path| path.to_string_lossy().into_owned())
            .collect();
        let json = serde_json::json!({
            "cgroups": cgroups,
            "rlimits": rlimits,
            "userns": self.userns,
            "network": network,
            "drop_caps": self.drop_caps.then_some(DROPPED_CAPABILITIES),
            "landlock": landlock,
            "own_proc": self.own_proc,
        });
        (json, fds)
    }
}

/// `CAP_NET_ADMIN`, `CAP_NET_RAW`, `CAP_SYS_ADMIN` (`linux/capability.h`).
const DROPPED_CAPABILITIES: [libc::c_ulong; 3] = [12, 13, 21];

/// Lets the child read its own `/proc/<pid>` (what programs ask of
/// themselves: `maps`, `status`, `fd`), and no other process's: `/proc`
/// as a whole would hand over every environment of its user's processes
/// (the server's HTTP token, the client's API keys), which Landlock's
/// ptrace rule does not cover here. Added to the run's own ruleset from
/// the child, where `/proc/self` names it; it holds for what the child
/// execs (the pid stays), not for the children it starts.
fn read_own_proc_dir(ruleset: RawFd) -> Result<(), (Step, io::Error)> {
    /// `struct landlock_path_beneath_attr`.
    #[repr(C, packed)]
    struct PathBeneath {
        allowed_access: u64,
        parent_fd: i32,
    }
    const STEP: Step = "let the run read its own /proc entry";
    // SAFETY: open(2) of a constant path; the descriptor is closed below.
    let dir = unsafe {
        libc::open(
            c"/proc/self".as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    check(STEP, dir)?;
    let rule = PathBeneath {
        // LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR
        allowed_access: (1 << 2) | (1 << 3),
        parent_fd: dir,
    };
    // SAFETY: landlock_add_rule(2) reads `rule` during the call only.
    let added = unsafe {
        libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset,
            1, // LANDLOCK_RULE_PATH_BENEATH
            &rule as *const PathBeneath,
            0,
        )
    };
    // SAFETY: our own descriptor, opened above.
    unsafe { libc::close(dir) };
    check(STEP, added).map(drop)
}

/// A system call's result, or the step's name and errno.
fn check(step: Step, result: impl TryInto<i64>) -> Result<(), (Step, io::Error)> {
    match result.try_into().unwrap_or(-1) {
        result if result < 0 => Err((step, io::Error::last_os_error())),
        _ => Ok(()),
    }
}

fn einval() -> io::Error {
    io::Error::from_raw_os_error(libc::EINVAL)
}

fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// [`is_root`] in the child, without the allocation-free guarantee in
/// doubt: `geteuid` is a plain system call.
fn is_root_now() -> bool {
    // SAFETY: geteuid(2) cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// The id maps a new user namespace gets: our own ids, mapped to
/// themselves, so files keep their owner.
#[derive(Debug, Default)]
struct IdMaps {
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
}

impl IdMaps {
    fn own() -> IdMaps {
        let (uid, gid) = (nix::unistd::getuid(), nix::unistd::getgid());
        IdMaps {
            uid_map: format!("{uid} {uid} 1").into_bytes(),
            gid_map: format!("{gid} {gid} 1").into_bytes(),
        }
    }

    /// Writes the maps of the user namespace just made; `setgroups` is
    /// denied first, as an unprivileged gid map needs.
    fn write_self(&self) -> Result<(), (Step, io::Error)> {
        write_file(c"/proc/self/setgroups", b"deny")?;
        write_file(c"/proc/self/uid_map", &self.uid_map)?;
        write_file(c"/proc/self/gid_map", &self.gid_map)
    }
}

/// open(2), write(2), close(2): a file written between fork and exec.
fn write_file(path: &CStr, bytes: &[u8]) -> Result<(), (Step, io::Error)> {
    const STEP: Step = "map ids in a new user namespace";
    // SAFETY: a NUL-terminated path; the descriptor is ours and closed
    // here.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
    check(STEP, fd)?;
    let written = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
    let error = io::Error::last_os_error();
    unsafe { libc::close(fd) };
    match written {
        written if written < 0 => Err((STEP, error)),
        _ => Ok(()),
    }
}

/// The pipe a failed step names itself on: the child's end (close on
/// exec) and ours (non-blocking).
pub(super) fn why_pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
    nix::fcntl::fcntl(
        &read,
        nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK),
    )?;
    Ok((read, write))
}

/// A failed spawn's error, named after the confinement step that failed
/// when the child wrote one on `why` ("could not apply the Landlock
/// ruleset: …"), once the child is gone.
pub(super) fn spawn_error(why: &OwnedFd, error: io::Error) -> io::Error {
    let mut buffer = [0u8; 128];
    match nix::unistd::read(why, &mut buffer) {
        Ok(read) if read > 0 => {
            let step = String::from_utf8_lossy(&buffer[..read]);
            io::Error::new(error.kind(), format!("could not {step}: {error}"))
        }
        _ => error,
    }
}

/// Runs `/bin/true` under `confinement` and says whether it ran.
fn runs(confinement: Confinement) -> bool {
    use std::os::unix::process::CommandExt;
    let Ok((_read, write)) = why_pipe() else {
        return false;
    };
    let mut command = std::process::Command::new("/bin/true");
    command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let why = write.as_raw_fd();
    // SAFETY: `apply` makes only system calls on memory prepared before
    // the fork (see the module doc).
    unsafe {
        command.pre_exec(move || confinement.apply(why));
    }
    let status = command.status();
    drop(write);
    status.is_ok_and(|status| status.success())
}

/// The sandbox's start-up probe: finds the strongest confinement the
/// kernel enforces, by confining `/bin/true` (a shared network namespace
/// where Landlock scopes runs apart, else one per run; Landlock where the
/// kernel has it), and turns the sandbox on unless neither part can be
/// enforced. Returns what runs get (`unsupported` twice when nothing
/// could be).
pub fn probe_sandbox() -> SandboxReport {
    let abi = sandbox::landlock_abi();
    if abi >= sandbox::SCOPED_ABI
        && let Ok(shared) = SharedNet::make()
    {
        let _ = SHARED_NET.set(shared);
    }
    let networks = [Network::Shared, Network::Own, Network::Open]
        .into_iter()
        .filter(|network| *network != Network::Shared || SHARED_NET.get().is_some());
    let landlocks = if abi > 0 {
        &[true, false][..]
    } else {
        &[false]
    };
    let write = tempfile::tempdir().ok();
    for network in networks {
        for &landlock in landlocks {
            let mode = sandbox::Mode { network, landlock };
            if mode == sandbox::Mode::NOTHING {
                continue;
            }
            let confinement = Confinement {
                network,
                drop_caps: network != Network::Open && is_root(),
                landlock: match (landlock, &write) {
                    (true, Some(dir)) => sandbox::ruleset(&[dir.path().to_path_buf()], &[]).ok(),
                    _ => None,
                },
                maps: IdMaps::own(),
                ..Confinement::default()
            };
            if landlock && confinement.landlock.is_none() {
                continue;
            }
            if runs(confinement) {
                return sandbox::record_support(mode, abi);
            }
        }
    }
    sandbox::record_support(sandbox::Mode::NOTHING, abi)
}

/// Whether a child gets a user namespace of its own, in which
/// `RLIMIT_NPROC` counts only its run's processes: the start-up probe runs
/// `/bin/true` in one, with an `nproc` of `processes`. Some kernels refuse
/// unprivileged user namespaces (Ubuntu's AppArmor restriction,
/// `user.max_user_namespaces` at 0).
pub fn probe_user_namespace(processes: u64) -> bool {
    let Ok(mut confinement) = Confinement::sandboxed(&[], &[]) else {
        return false;
    };
    // The namespace alone: Landlock has nothing to add to the question.
    confinement.landlock = None;
    confinement.userns = true;
    confinement.rlimits.push(Rlimit {
        name: "nproc",
        value: processes,
    });
    runs(confinement)
}

impl SharedNet {
    /// A network namespace (inside a user namespace of ours when we are
    /// not root) made by a forked child that holds it while we open it.
    fn make() -> io::Result<SharedNet> {
        use nix::unistd::{ForkResult, fork, pipe2, read};
        let root = is_root();
        let maps = IdMaps::own();
        let cloexec = nix::fcntl::OFlag::O_CLOEXEC;
        let (ready_read, ready_write) = pipe2(cloexec)?;
        let (go_read, go_write) = pipe2(cloexec)?;
        // SAFETY: the child makes only system calls on memory prepared
        // before the fork, then `_exit`s.
        match unsafe { fork() }? {
            ForkResult::Child => {
                drop((ready_read, go_write));
                let flags = match root {
                    true => libc::CLONE_NEWNET,
                    false => libc::CLONE_NEWUSER | libc::CLONE_NEWNET,
                };
                let made =
                    unsafe { libc::unshare(flags) } == 0 && (root || maps.write_self().is_ok());
                let answer: &[u8] = if made { b"1" } else { b"0" };
                unsafe {
                    libc::write(ready_write.as_raw_fd(), answer.as_ptr().cast(), 1);
                    let mut byte = 0u8;
                    // Until the server has opened the namespaces (it closes
                    // its end of `go`).
                    libc::read(go_read.as_raw_fd(), (&raw mut byte).cast(), 1);
                    libc::_exit(0)
                }
            }
            ForkResult::Parent { child } => {
                drop((ready_write, go_read));
                let mut answer = [0u8; 1];
                let made =
                    read(&ready_read, &mut answer).is_ok_and(|count| count == 1) && answer == *b"1";
                let open = |kind: &str| -> io::Result<OwnedFd> {
                    Ok(std::fs::File::open(format!("/proc/{child}/ns/{kind}"))?.into())
                };
                let namespaces = match made {
                    true => open("net").and_then(|netns| {
                        let userns = if root { None } else { Some(open("user")?) };
                        Ok(SharedNet { userns, netns })
                    }),
                    false => Err(io::Error::other("the kernel refused the namespace")),
                };
                drop(go_write);
                let _ = nix::sys::wait::waitpid(child, None);
                namespaces
            }
        }
    }
}

/// For `tests/confine_v2.rs`: a command that runs `program` confined to
/// the v2 group `group` with `rlimits`, as the executor starts one.
#[doc(hidden)]
pub fn command_in_v2_group(
    group: &Path,
    rlimits: &[(&'static str, u64)],
    program: &[&str],
) -> io::Result<std::process::Command> {
    use std::os::unix::process::CommandExt;
    let mut confinement = Confinement::default();
    confinement.join(vec![group.join("cgroup.procs")])?;
    confinement.rlimits = rlimits
        .iter()
        .map(|&(name, value)| Rlimit { name, value })
        .collect();
    let (first, rest) = program.split_first().ok_or_else(einval)?;
    let mut command = std::process::Command::new(first);
    command.args(rest);
    // Both ends live as long as the command: a step that fails writes to
    // a pipe that still has its reader.
    let (read, write) = why_pipe()?;
    // SAFETY: see `runs`.
    unsafe {
        command.pre_exec(move || {
            let _reader = &read;
            confinement.apply(write.as_raw_fd())
        });
    }
    Ok(command)
}
