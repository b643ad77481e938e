//! Starting a child: a confined one the way `posix_spawn` starts any
//! program, everything else through process-wrap.
//!
//! A `fork` of the server costs about 2 ms of wall time on these machines
//! (its page tables are copied, then every page either side writes is
//! copied again until the child execs), against well under one for a
//! `vfork`. So a confined child is started with `clone(CLONE_VM |
//! CLONE_VFORK)`: it runs on a stack of its own in the server's memory,
//! the server's thread waiting, and does what std and process-wrap would
//! do between fork and exec — `setsid`, its stdio, its directory — then
//! the confinement ([`super::confine`]) and `execve`. Everything it uses is
//! prepared before the clone (the path, argv and environment as C strings,
//! the descriptors), and it makes system calls only: no allocation, no
//! lock, nothing of the server's state written. Signals stay blocked from
//! before the clone until the child has reset every handler the server
//! installed, so no handler of the server's runs in the child. A failed
//! step or exec sends its errno back on a close-on-exec pipe, and the
//! start fails as std's would.
//!
//! The server waits for such a child through a pidfd (a kernel without
//! pidfds, before Linux 5.3, gets the fork below). A run whose
//! confinement clones into a cgroup v2 group ([`super::clone_into`]), where
//! the started process stays on as the clone's supervisor and never
//! execs, is started with a real fork, as is every unconfined child.

use std::ffi::{CString, OsString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};

use nix::libc;
use process_wrap::tokio::{ChildWrapper, CommandWrap, ProcessSession};
use tokio::io::unix::AsyncFd;

use super::ChildCommand;
use super::confine::{self, Confinement};

/// A started child, however it was started.
pub(super) enum Child {
    /// Through process-wrap (a real fork).
    Wrapped(Box<dyn ChildWrapper>),
    /// With `clone(CLONE_VM | CLONE_VFORK)`, followed through a pidfd.
    Vforked(Vforked),
}

impl Child {
    /// The child's pid.
    pub fn id(&self) -> Option<u32> {
        match self {
            Child::Wrapped(child) => child.id(),
            Child::Vforked(child) => u32::try_from(child.pid).ok(),
        }
    }

    /// Waits for the child to end and reaps it.
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        match self {
            Child::Wrapped(child) => child.inner_mut().wait().await,
            Child::Vforked(child) => child.wait().await,
        }
    }
}

/// A child started with `vfork` semantics, followed through its pidfd.
pub(super) struct Vforked {
    pid: libc::pid_t,
    pidfd: Option<AsyncFd<OwnedFd>>,
    status: Option<ExitStatus>,
}

impl Vforked {
    async fn wait(&mut self) -> io::Result<ExitStatus> {
        if let Some(status) = self.status {
            return Ok(status);
        }
        let pidfd = self
            .pidfd
            .as_ref()
            .ok_or_else(|| io::Error::other("the child's pidfd is gone"))?;
        loop {
            let mut ready = pidfd.readable().await?;
            if let Some(status) = reap(self.pid)? {
                self.status = Some(status);
                return Ok(status);
            }
            ready.clear_ready();
        }
    }
}

/// Reaps our child `pid` if it has ended.
fn reap(pid: libc::pid_t) -> io::Result<Option<ExitStatus>> {
    let mut status = 0;
    // SAFETY: waitpid(2) on our own child, WNOHANG.
    let reaped = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
    match reaped {
        0 => Ok(None),
        reaped if reaped == pid => Ok(Some(ExitStatus::from_raw(status))),
        _ => Err(io::Error::last_os_error()),
    }
}

impl Drop for Vforked {
    /// A child dropped before it was reaped (the run's future went away):
    /// the tree guard has killed it; reap it if it is gone already, else
    /// the next stray pass does.
    fn drop(&mut self) {
        if self.status.is_none() {
            let _ = reap(self.pid);
        }
    }
}

/// What a child is started with: the command, the variables the executor
/// adds, its stdout and stderr, its confinement.
pub(super) struct Start {
    pub command: ChildCommand,
    pub env: Vec<(OsString, OsString)>,
    pub stdout: OwnedFd,
    pub stderr: OwnedFd,
    pub confinement: Option<Confinement>,
}

/// Starts the child (blocking: the caller is on the blocking pool).
pub(super) fn start(start: Start) -> io::Result<Child> {
    match start.confinement {
        Some(confinement) if !confinement.clones_into_group() && has_pidfds() => vfork(
            &start.command,
            &start.env,
            &start.stdout,
            &start.stderr,
            &confinement,
        ),
        confinement => wrapped(
            &start.command,
            &start.env,
            start.stdout,
            start.stderr,
            confinement,
        ),
    }
}

/// Whether this kernel hands out pidfds (Linux 5.3), through which alone
/// a vforked child is followed; asked once.
fn has_pidfds() -> bool {
    static PIDFDS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *PIDFDS.get_or_init(|| {
        // SAFETY: pidfd_open(2) of ourselves; the descriptor is closed at
        // once.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, libc::getpid(), 0) };
        if fd >= 0 {
            unsafe { libc::close(fd as RawFd) };
        }
        fd >= 0
    })
}

/// The server's variables children see, fixed at start-up.
static PASSED: std::sync::OnceLock<Vec<(OsString, OsString)>> = std::sync::OnceLock::new();

/// Fixes, once at start-up, which of the server's variables every child
/// sees: those of [`crate::settings::PASSED_VARIABLES`], any `LC_*`, and
/// `names` (`SOLVERGATE_PASS_ENV`). Unset, they are the first two.
pub(super) fn pass_environment(names: &[String]) {
    let _ = PASSED.set(crate::settings::passed_environment(names));
}

/// The server's variables a child starts from.
pub(super) fn passed_environment() -> &'static [(OsString, OsString)] {
    PASSED.get_or_init(|| crate::settings::passed_environment(&[]))
}

/// The child's whole environment, built rather than inherited: the
/// server's passed variables (all of them for a child that never runs
/// user code: the installer's pip needs its proxy settings, `sbatch` the
/// settings its job carries to the node), the command's removals and
/// settings, then the executor's own variables (`extra`).
pub(super) fn environment(
    command: &ChildCommand,
    extra: &[(OsString, OsString)],
) -> Vec<(OsString, OsString)> {
    let base = match command.unconfined {
        true => crate::settings::server_environment(),
        false => passed_environment().to_vec(),
    };
    let mut env: Vec<(OsString, OsString)> = base
        .into_iter()
        .filter(|(key, _)| !command.env_remove.contains(key))
        .collect();
    for (key, value) in command.env_set.iter().chain(extra) {
        env.retain(|(existing, _)| existing != key);
        env.push((key.clone(), value.clone()));
    }
    env
}

/// `program` as execve needs it: as it is when it names a path, else found
/// on the child's `PATH` (as std's execvp would).
fn resolve(program: &Path, env: &[(OsString, OsString)]) -> io::Result<PathBuf> {
    if program.as_os_str().as_bytes().contains(&b'/') {
        return Ok(program.to_path_buf());
    }
    let path = env
        .iter()
        .find(|(key, _)| key == "PATH")
        .map(|(_, value)| value.clone())
        .unwrap_or_else(|| OsString::from("/usr/local/bin:/usr/bin:/bin"));
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| {
            use std::os::unix::fs::PermissionsExt;
            candidate
                .metadata()
                .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
        })
        .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))
}

fn c_string(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

/// Everything the vforked child reads, prepared before the clone.
struct Prepared<'a> {
    path: CString,
    argv: Vec<*const libc::c_char>,
    envp: Vec<*const libc::c_char>,
    cwd: Option<CString>,
    stdin: RawFd,
    stdout: RawFd,
    stderr: RawFd,
    confinement: &'a Confinement,
    why: RawFd,
    errno: RawFd,
    mask: libc::sigset_t,
}

fn vfork(
    command: &ChildCommand,
    extra: &[(OsString, OsString)],
    stdout: &OwnedFd,
    stderr: &OwnedFd,
    confinement: &Confinement,
) -> io::Result<Child> {
    let env = environment(command, extra);
    let path = c_string(resolve(&command.program, &env)?.as_os_str().as_bytes())?;
    let argv_strings = std::iter::once(command.program.as_os_str())
        .chain(command.args.iter().map(OsString::as_os_str))
        .map(|arg| c_string(arg.as_bytes()))
        .collect::<io::Result<Vec<CString>>>()?;
    let env_strings = env
        .into_iter()
        .map(|(key, value)| {
            let mut entry = key.into_vec();
            entry.push(b'=');
            entry.extend(value.into_vec());
            c_string(&entry)
        })
        .collect::<io::Result<Vec<CString>>>()?;
    let pointers = |strings: &[CString]| {
        strings
            .iter()
            .map(|string| string.as_ptr())
            .chain(std::iter::once(std::ptr::null()))
            .collect::<Vec<_>>()
    };
    let cwd = command
        .cwd
        .as_ref()
        .map(|dir| c_string(dir.as_os_str().as_bytes()))
        .transpose()?;
    let null = std::fs::File::open("/dev/null")?;
    let (why_read, why_write) = confine::why_pipe()?;
    let (errno_read, errno_write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
    let mut prepared = Prepared {
        path,
        argv: pointers(&argv_strings),
        envp: pointers(&env_strings),
        cwd,
        stdin: null.as_raw_fd(),
        stdout: stdout.as_raw_fd(),
        stderr: stderr.as_raw_fd(),
        confinement,
        why: why_write.as_raw_fd(),
        errno: errno_write.as_raw_fd(),
        // SAFETY: an all-zero sigset_t is a valid value, filled below.
        mask: unsafe { std::mem::zeroed() },
    };
    let mut stack = vec![0u8; CHILD_STACK];
    // SAFETY: the stack grows down from its end, kept 16-byte aligned.
    let top = unsafe { stack.as_mut_ptr().add(CHILD_STACK) }.map_addr(|addr| addr & !15);
    // SAFETY: sigset operations on memory we own; the mask is put back
    // right after the clone.
    let pid = unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut prepared.mask);
        // The child runs in our memory on `stack` until it execs or
        // exits; this thread waits until then (CLONE_VFORK). `prepared`
        // and `stack` outlive that.
        let pid = libc::clone(
            child_main,
            top.cast(),
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            (&raw mut prepared).cast(),
        );
        let error = io::Error::last_os_error();
        libc::pthread_sigmask(libc::SIG_SETMASK, &prepared.mask, std::ptr::null_mut());
        if pid < 0 {
            return Err(error);
        }
        pid
    };
    drop((stack, errno_write, why_write, null));
    let mut errno = [0u8; 4];
    // Nothing (end of file) when the exec closed the pipe; the errno when
    // a step or the exec failed.
    let read = loop {
        match nix::unistd::read(&errno_read, &mut errno) {
            Err(nix::errno::Errno::EINTR) => continue,
            other => break other.unwrap_or(0),
        }
    };
    if read == errno.len() {
        let mut status = 0;
        // SAFETY: waitpid(2) on the child that just failed.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        let error = io::Error::from_raw_os_error(i32::from_ne_bytes(errno));
        return Err(confine::spawn_error(&why_read, error));
    }
    // SAFETY: pidfd_open(2) of our unreaped child.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    let pidfd = match pidfd {
        fd if fd >= 0 => {
            // SAFETY: a descriptor the kernel just gave us, which the
            // AsyncFd then owns for its whole life.
            let owned = unsafe { OwnedFd::from_raw_fd(fd as RawFd) };
            unsafe { AsyncFd::register(owned) }.ok()
        }
        _ => None,
    };
    let mut child = Vforked {
        pid,
        pidfd,
        status: None,
    };
    if child.pidfd.is_none() {
        // Out of descriptors, say: the child cannot be followed here. It
        // was started, so stop it and say so.
        // SAFETY: kill(2) of our own child.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        let mut status = 0;
        unsafe { libc::waitpid(pid, &mut status, 0) };
        child.status = Some(ExitStatus::from_raw(status));
        return Err(io::Error::other(
            "could not open a pidfd for the started child",
        ));
    }
    Ok(Child::Vforked(child))
}

/// The vforked child's stack.
const CHILD_STACK: usize = 256 * 1024;

/// The vforked child: stdio, session, directory, confinement, exec. System
/// calls only (see the module doc).
extern "C" fn child_main(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the parent's `Prepared`, alive and unchanged while
    // the parent waits for this child to exec or exit.
    let prepared = unsafe { &*(arg as *const Prepared<'_>) };
    let fail = |errno: i32| -> ! {
        let bytes = errno.to_ne_bytes();
        // SAFETY: write(2) and _exit(2), as after any failed exec.
        unsafe {
            libc::write(prepared.errno, bytes.as_ptr().cast(), bytes.len());
            libc::_exit(127)
        }
    };
    let errno = || {
        io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EINVAL)
    };
    // SAFETY: system calls on descriptors and memory prepared by the
    // parent; nothing of the parent's state is written.
    unsafe {
        // No handler of the server's may run here: back to the defaults
        // (SIGPIPE too, which Rust ignores and children expect default).
        let mut default: libc::sigaction = std::mem::zeroed();
        default.sa_sigaction = libc::SIG_DFL;
        for signal in 1..=64 {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, std::ptr::null(), &mut old) == 0
                && (old.sa_sigaction != libc::SIG_IGN || signal == libc::SIGPIPE)
                && old.sa_sigaction != libc::SIG_DFL
            {
                libc::sigaction(signal, &default, std::ptr::null_mut());
            }
        }
        if libc::setsid() < 0 {
            fail(errno());
        }
        for (from, to) in [
            (prepared.stdin, 0),
            (prepared.stdout, 1),
            (prepared.stderr, 2),
        ] {
            if libc::dup2(from, to) < 0 {
                fail(errno());
            }
        }
        if let Some(cwd) = &prepared.cwd
            && libc::chdir(cwd.as_ptr()) < 0
        {
            fail(errno());
        }
        if let Err(error) = prepared.confinement.apply(prepared.why) {
            fail(error.raw_os_error().unwrap_or(libc::EINVAL));
        }
        libc::pthread_sigmask(libc::SIG_SETMASK, &prepared.mask, std::ptr::null_mut());
        libc::execve(
            prepared.path.as_ptr(),
            prepared.argv.as_ptr(),
            prepared.envp.as_ptr(),
        );
        fail(errno())
    }
}

/// A real fork through process-wrap (its own session), with the
/// confinement, if any, applied between fork and exec.
fn wrapped(
    command: &ChildCommand,
    extra: &[(OsString, OsString)],
    stdout: OwnedFd,
    stderr: OwnedFd,
    confinement: Option<Confinement>,
) -> io::Result<Child> {
    let (why_read, why_write) = confine::why_pipe()?;
    let mut wrap = CommandWrap::with_new(&command.program, |cmd| {
        cmd.args(&command.args)
            .stdin(Stdio::null())
            .stdout(Stdio::from(stdout))
            .stderr(Stdio::from(stderr));
        if let Some(dir) = &command.cwd {
            cmd.current_dir(dir);
        }
        cmd.env_clear().envs(environment(command, extra));
    });
    wrap.wrap(ProcessSession);
    let child = wrap.spawn_with(|cmd| {
        if let Some(confinement) = confinement {
            let why = why_write.as_raw_fd();
            // SAFETY: `apply` makes only system calls on memory prepared
            // before the fork (see `confine`); it runs after
            // process-wrap's `setsid`, as the last step before exec.
            unsafe {
                cmd.pre_exec(move || {
                    let _child_end = &why_write;
                    confinement.apply(why)
                });
            }
        }
        cmd.spawn()
    });
    // A step of the confinement that failed named itself.
    let child = child.map_err(|error| confine::spawn_error(&why_read, error))?;
    // The command's copies of the capture files and pipe ends close when
    // the wrapper goes.
    drop(wrap);
    Ok(Child::Wrapped(child))
}
