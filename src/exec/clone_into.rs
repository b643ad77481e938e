//! Starting a confined program straight inside its cgroup v2 group, with
//! `clone3(CLONE_INTO_CGROUP)`, instead of moving the child there.
//!
//! Moving a process into a v2 group (a write to `cgroup.procs`) takes the
//! kernel's global threadgroup lock for writing, which waits for an RCU
//! grace period: 6–20 ms of wall time per run on a kernel without
//! `favordynmods`. v1 avoids it by moving the one thread through `tasks`;
//! v2 has no such file for a domain group. A process cloned into the group
//! never moves, and the fork path takes that lock only for reading.
//!
//! So on v2 the server's forked child, between fork and exec, clones
//! itself into the run's group ([`clone_into`]): the clone goes on with
//! the other steps of [`super::confine`] and execs the program; the child
//! stays outside as a small supervisor ([`supervise`]) that waits for it
//! and ends exactly as it ended (its exit code, or death by the same
//! signal), so the executor, which waits for the process it started, sees
//! the program's own end. The supervisor keeps SIGINT, SIGTERM, SIGHUP and
//! SIGQUIT blocked: the executor signals the whole process group, so the
//! program gets them itself and the supervisor only waits for it to act on
//! them. A kernel without `clone3` or `CLONE_INTO_CGROUP` (before 5.7)
//! gets the write, as before.
//!
//! `clone3` is a fork, which Rust cannot prove safe. It holds because the
//! caller is a fresh fork of one thread: the clone is a copy of it, and
//! both do only system calls on memory prepared before the first fork.

use std::io;
use std::os::fd::RawFd;

use nix::errno::Errno;
use nix::libc;
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
    /// The process that called, outside the group: [`supervise`] the clone.
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

/// Clones this process into the v2 group whose directory `group` is
/// open on. `Err` when the kernel cannot (no `clone3`, no
/// `CLONE_INTO_CGROUP`) or refuses the group; the caller then joins it by
/// writing `cgroup.procs`, nothing having changed.
pub(super) fn clone_into(group: RawFd) -> io::Result<Side> {
    let group_fd = u64::try_from(group).map_err(|_| io::Error::from_raw_os_error(libc::EBADF))?;
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
    // SAFETY: a fork of a process that is itself a fresh fork (the
    // server's child between fork and exec, one thread): the clone gets a
    // copy of that thread and its memory, and runs on its own copy of the
    // stack, as after fork(2). `args` is a valid `clone_args` of the size
    // passed, alive for the call.
    let pid = unsafe {
        libc::syscall(
            libc::SYS_clone3,
            &mut args as *mut CloneArgs,
            std::mem::size_of::<CloneArgs>(),
        )
    };
    let cloned = match pid {
        0 => Ok(Side::Clone),
        pid if pid > 0 => i32::try_from(pid)
            .map(|pid| Side::Supervisor(Pid::from_raw(pid)))
            .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL)),
        _ => Err(io::Error::last_os_error()),
    };
    if !matches!(cloned, Ok(Side::Supervisor(_))) {
        // The clone, or the child going on without one: the mask it had.
        sigprocmask(SigmaskHow::SIG_SETMASK, Some(&before), None)?;
    }
    cloned
}

/// The supervisor: lets go of every descriptor but the standard ones (so
/// the server's spawn, which waits for the exec's close-on-exec pipe to
/// close, sees the clone's exec), waits for the clone and ends as it
/// ended. System calls only: it is still the server's fork.
pub(super) fn supervise(clone: Pid) -> ! {
    // SAFETY: close_range(2) on descriptors this process owns; nothing in
    // it uses them again.
    unsafe { libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32) };
    let status = loop {
        match waitpid(clone, None) {
            Err(Errno::EINTR) => continue,
            other => break other,
        }
    };
    match status {
        Ok(WaitStatus::Exited(_, code)) => exit(code),
        Ok(WaitStatus::Signaled(_, signal, _)) => die_by(signal),
        // Stopped or continued: not asked for, so not reported.
        _ => exit(127),
    }
}

fn exit(code: i32) -> ! {
    // SAFETY: _exit(2) ends the process at once, running nothing of the
    // server's (no atexit handlers, no destructors).
    unsafe { libc::_exit(code) }
}

/// Ends this process by `signal`, as the program ended; with no core file
/// (the program's own, if any, is the one that counts). The disposition
/// is the default first: a forked server still has the server's handlers.
fn die_by(signal: Signal) -> ! {
    let _ = setrlimit(Resource::RLIMIT_CORE, 0, 0);
    // SAFETY: signal(2) to the default disposition, then the signal to
    // ourselves, unblocked.
    unsafe { libc::signal(signal as libc::c_int, libc::SIG_DFL) };
    let mut only = SigSet::empty();
    only.add(signal);
    let _ = sigprocmask(SigmaskHow::SIG_UNBLOCK, Some(&only), None);
    let _ = kill(getpid(), signal);
    exit(128 + signal as i32)
}
