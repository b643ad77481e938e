//! Starting a confined program straight inside its cgroup v2 group, with
//! `clone3(CLONE_INTO_CGROUP)`, instead of moving the trampoline there.
//!
//! Moving a process into a v2 group (a write to `cgroup.procs`) takes the
//! kernel's global threadgroup lock for writing, which waits for an RCU
//! grace period: 6–20 ms of wall time per run on a kernel without
//! `favordynmods`. v1 avoids it by moving the one thread through `tasks`;
//! v2 has no such file for a domain group. A process cloned into the group
//! never moves, and the fork path takes that lock only for reading.
//!
//! So on v2 the trampoline clones itself into the run's group
//! ([`clone_into`]): the clone goes on with the trampoline's other steps
//! and execs the program; the trampoline stays outside as a small
//! supervisor ([`supervise`]) that waits for it and ends exactly as it
//! ended (its exit code, or death by the same signal), so the executor,
//! which waits for the process it started, sees the program's own end. The
//! supervisor keeps SIGINT, SIGTERM, SIGHUP and SIGQUIT blocked: the
//! executor signals the whole process group, so the program gets them
//! itself and the supervisor only waits for it to act on them. A kernel
//! without `clone3` or `CLONE_INTO_CGROUP` (before 5.7) gets the write, as
//! before.
//!
//! The one `unsafe` of the crate is here: `clone3` is a fork, which Rust
//! cannot prove safe. It holds because the trampoline is a fresh
//! single-threaded process: the clone is a copy of that one thread, and
//! does only system calls (rlimits, namespaces, Landlock, a report line)
//! before it execs.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::ExitCode;

use nix::errno::Errno;
use nix::sys::resource::{Resource, setrlimit};
use nix::sys::signal::{SigSet, SigmaskHow, Signal, kill, sigprocmask};
use nix::sys::wait::{WaitStatus, waitpid};
use nix::unistd::{Pid, getpid};

/// The kernel's `struct clone_args`, up to `cgroup` (its second version,
/// 88 bytes, Linux 5.7).
#[repr(C)]
#[derive(Default)]
struct CloneArgs {
    flags: u64,
    pidfd: u64,
    child_tid: u64,
    parent_tid: u64,
    exit_signal: u64,
    stack: u64,
    stack_size: u64,
    tls: u64,
    set_tid: u64,
    set_tid_size: u64,
    cgroup: u64,
}

/// `CLONE_INTO_CGROUP`, from `linux/sched.h`.
const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;

/// Which side of [`clone_into`] a process is on.
pub(super) enum Side {
    /// The clone, already in the group: go on confining, then exec.
    Clone,
    /// The trampoline, outside the group: [`supervise`] the clone.
    Supervisor(Pid),
}

/// The signals the executor sends a run's process group, kept blocked in
/// the supervisor.
fn group_signals() -> SigSet {
    let mut set = SigSet::empty();
    for signal in [
        Signal::SIGINT,
        Signal::SIGTERM,
        Signal::SIGHUP,
        Signal::SIGQUIT,
    ] {
        set.add(signal);
    }
    set
}

/// Clones this process into the v2 group `dir`. `Err` when the kernel
/// cannot (no `clone3`, no `CLONE_INTO_CGROUP`) or refuses the group; the
/// caller then joins it by writing `cgroup.procs`, nothing having changed.
pub(super) fn clone_into(dir: &Path) -> io::Result<Side> {
    let group = File::open(dir)?;
    let group_fd = u64::try_from(group.as_raw_fd()).map_err(io::Error::other)?;
    // Blocked before the clone, so no group signal can end the supervisor
    // between the clone and its wait; the clone unblocks them at once.
    let mut before = SigSet::empty();
    sigprocmask(
        SigmaskHow::SIG_BLOCK,
        Some(&group_signals()),
        Some(&mut before),
    )?;
    let mut args = CloneArgs {
        flags: CLONE_INTO_CGROUP,
        exit_signal: Signal::SIGCHLD as u64,
        cgroup: group_fd,
        ..CloneArgs::default()
    };
    // SAFETY: a fork of a single-threaded process (the trampoline, see the
    // module doc): the child gets a copy of the one thread and its memory,
    // and runs on its own copy of the stack, as after fork(2). `args` is a
    // valid `clone_args` of the size passed, alive for the call.
    let pid = unsafe {
        nix::libc::syscall(
            nix::libc::SYS_clone3,
            &mut args as *mut CloneArgs,
            std::mem::size_of::<CloneArgs>(),
        )
    };
    let cloned = match pid {
        0 => Ok(Side::Clone),
        pid if pid > 0 => i32::try_from(pid)
            .map(|pid| Side::Supervisor(Pid::from_raw(pid)))
            .map_err(io::Error::other),
        _ => Err(io::Error::last_os_error()),
    };
    if !matches!(cloned, Ok(Side::Supervisor(_))) {
        // The clone, or the trampoline going on without one: the mask it
        // had.
        sigprocmask(SigmaskHow::SIG_SETMASK, Some(&before), None)?;
    }
    drop(group);
    cloned
}

/// The supervisor: waits for the clone and ends as it ended.
pub(super) fn supervise(clone: Pid) -> ExitCode {
    let status = loop {
        match waitpid(clone, None) {
            Err(Errno::EINTR) => continue,
            other => break other,
        }
    };
    match status {
        Ok(WaitStatus::Exited(_, code)) => ExitCode::from(u8::try_from(code).unwrap_or(u8::MAX)),
        Ok(WaitStatus::Signaled(_, signal, _)) => die_by(signal),
        // Stopped or continued: not asked for, so not reported.
        Ok(other) => {
            eprintln!("solvergate confine: unexpected wait status {other:?}");
            ExitCode::from(127)
        }
        Err(error) => {
            eprintln!("solvergate confine: could not wait for the program: {error}");
            ExitCode::from(127)
        }
    }
}

/// Ends this process by `signal`, as the program ended; with no core file
/// (the program's own, if any, is the one that counts). A signal this
/// process ignores (SIGPIPE, which the Rust runtime ignores) ends it with
/// the shell's `128 + N` instead.
fn die_by(signal: Signal) -> ExitCode {
    let _ = setrlimit(Resource::RLIMIT_CORE, 0, 0);
    let mut only = SigSet::empty();
    only.add(signal);
    let _ = sigprocmask(SigmaskHow::SIG_UNBLOCK, Some(&only), None);
    // Twice: the Rust runtime handles SIGSEGV and SIGBUS (to tell a stack
    // overflow); for a signal that is not one, its handler puts back the
    // default and returns, so the second is the kernel's.
    let _ = kill(getpid(), signal);
    let _ = kill(getpid(), signal);
    ExitCode::from(128u8.saturating_add(signal as u8))
}
