//! The confinement's cgroup v2 path on this kernel: between fork and exec
//! the child clones itself straight into its group
//! (`clone3(CLONE_INTO_CGROUP)`) and waits outside it as the clone's
//! supervisor, ending exactly as the program did — its exit code, its
//! signal, a group signal left to the program to act on; an exec that
//! fails is the spawn's error, as for any child.
//!
//! Runs wherever a cgroup2 hierarchy lets us make a group: as root on
//! these machines (a cgroup2 mount beside the v1 controllers, which is
//! all CLONE_INTO_CGROUP needs: membership, no controller), and on a v2
//! host. The whole server on a v2 host with memory and pids is proven in a
//! VM by `scripts/cgroup2-vm`.

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::time::Duration;

/// A fresh group in a cgroup2 hierarchy we may write, removed on drop.
struct Group(PathBuf);

impl Group {
    /// `Ok(None)` where this host has no cgroup2 hierarchy or does not
    /// let us write it; any other failure is the test's.
    fn make(name: &str) -> Result<Option<Group>, std::io::Error> {
        let mounts = std::fs::read_to_string("/proc/mounts")?;
        let Some(root) = mounts.lines().find_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            (fields.get(2) == Some(&"cgroup2")).then(|| PathBuf::from(fields[1]))
        }) else {
            return Ok(None);
        };
        let dir = root.join(format!("solvergate-test-{name}-{}", std::process::id()));
        match std::fs::create_dir(&dir) {
            Ok(()) => Ok(Some(Group(dir))),
            Err(error) if error.kind() == std::io::ErrorKind::PermissionDenied => Ok(None),
            Err(error) if error.raw_os_error() == Some(nix::libc::EROFS) => Ok(None),
            Err(error) => Err(error),
        }
    }

    fn procs(&self) -> PathBuf {
        self.0.join("cgroup.procs")
    }

    /// The group as `/proc/PID/cgroup` names it: `0::/<path under the mount>`.
    fn line(&self) -> String {
        format!(
            "0::/{}",
            self.0
                .file_name()
                .map(|n| n.to_string_lossy())
                .unwrap_or_default()
        )
    }
}

impl Drop for Group {
    /// Kills what is left in the group (a program's background child),
    /// then removes it.
    fn drop(&mut self) {
        let left = std::fs::read_to_string(self.procs()).unwrap_or_default();
        for pid in left.split_whitespace().filter_map(|pid| pid.parse().ok()) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        for _ in 0..50 {
            if std::fs::remove_dir(&self.0).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn confined(group: &Group, rlimits: &[(&'static str, u64)], program: &[&str]) -> Command {
    let mut command =
        solvergate::exec::confine::command_in_v2_group(&group.0, rlimits, program).unwrap();
    command.stdin(Stdio::null());
    command
}

fn sh(script: &str) -> [&str; 3] {
    ["/bin/sh", "-c", script]
}

/// The group for `test`, or `None` (said on stderr) where no cgroup2
/// hierarchy lets us make one (none mounted, or not ours to write: not
/// root, or a read-only mount).
fn group_for(test: &str) -> Option<Group> {
    let group = Group::make(test).expect("a cgroup2 group where the hierarchy is writable");
    if group.is_none() {
        eprintln!("confine_v2: no writable cgroup2 hierarchy here; {test} not run");
    }
    group
}

#[test]
fn the_program_runs_inside_the_group_and_the_supervisor_waits_outside() {
    let Some(group) = group_for("inside") else {
        return;
    };
    let child = confined(
        &group,
        &[],
        &sh("echo $PPID; cat /proc/self/cgroup; echo parent; cat /proc/$PPID/cgroup"),
    )
    .stdout(Stdio::piped())
    .spawn()
    .unwrap();
    let supervisor_pid = child.id();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{output:?}");
    let text = String::from_utf8_lossy(&output.stdout);
    let (ppid, text) = text.split_once('\n').unwrap();
    assert_eq!(
        ppid,
        supervisor_pid.to_string(),
        "the program is the started child's clone"
    );
    let (own, parent) = text.split_once("parent\n").unwrap();
    assert!(own.lines().any(|line| line == group.line()), "{text}");
    assert!(!parent.lines().any(|line| line == group.line()), "{text}");
}

#[test]
fn the_supervisor_ends_as_the_program_ended() {
    let Some(group) = group_for("ends") else {
        return;
    };
    let status =
        |script: &str| -> ExitStatus { confined(&group, &[], &sh(script)).status().unwrap() };
    assert_eq!(status("exit 42").code(), Some(42));
    assert_eq!(status("exit 0").code(), Some(0));
    assert_eq!(status("kill -TERM $$").signal(), Some(15));
    assert_eq!(status("kill -KILL $$").signal(), Some(9));
    // A crash, without a core file of the supervisor's.
    let crashed = status("ulimit -c 0; kill -SEGV $$");
    assert_eq!(crashed.signal(), Some(11), "{crashed:?}");
    // What the child set holds in the clone (the rlimit, before exec).
    let output = confined(&group, &[("fsize", 1048576)], &sh("ulimit -f"))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "2048");
}

#[test]
fn a_signal_to_the_group_is_the_programs_to_act_on() {
    let Some(group) = group_for("signal") else {
        return;
    };
    let mut child = confined(
        &group,
        &[],
        &sh("trap 'sleep 0.3; exit 7' TERM; echo ready; sleep 30 & wait"),
    )
    .stdout(Stdio::piped())
    .process_group(0)
    .spawn()
    .unwrap();
    let mut ready = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut ready,
    )
    .unwrap();
    assert_eq!(ready, "ready\n");
    let group_id = nix::unistd::Pid::from_raw(-(child.id() as i32));
    nix::sys::signal::kill(group_id, nix::sys::signal::Signal::SIGTERM).unwrap();
    let status = child.wait().unwrap();
    // The supervisor kept the signal blocked and waited: the program's
    // own answer to it (exit 7 after its trap) is what ends the run.
    assert_eq!(status.code(), Some(7), "{status:?}");
}

#[test]
fn an_exec_that_fails_is_the_spawns_error() {
    let Some(group) = group_for("exec") else {
        return;
    };
    let error = confined(&group, &[], &["/nonexistent/program"])
        .output()
        .unwrap_err();
    assert_eq!(error.kind(), std::io::ErrorKind::NotFound, "{error}");
    // Nothing of the attempt is left in the group.
    std::thread::sleep(Duration::from_millis(100));
    let left = std::fs::read_to_string(group.procs()).unwrap();
    assert_eq!(left.trim(), "", "{left}");
}
