//! Runs that share the start-up's network namespace stay apart: one run
//! cannot reach another's abstract UNIX socket or signal its processes
//! (Landlock's scopes), cannot bring the namespace's loopback up, and
//! cannot leave the namespace for the host's. Each test also shows that
//! what it refuses between runs works within one run, so a refusal is the
//! sandbox's and not a broken probe.
//!
//! The sandbox is a process-wide setting: this file probes it once, as the
//! server does at start-up, and every run here is confined as a server's
//! would be.

use std::sync::Once;
use std::time::Duration;

use solvergate::exec::{self, ChildCommand, Limits};
use tokio_util::sync::CancellationToken;

fn python() -> String {
    std::env::var("SOLVERGATE_TEST_PYTHON").unwrap_or_else(|_| "python3".to_owned())
}

/// The sandbox as the server would have it; `false` (said on stderr) where
/// this kernel cannot share a namespace between runs.
fn shared_sandbox(test: &str) -> bool {
    static PROBE: Once = Once::new();
    PROBE.call_once(|| {
        exec::confine::probe_sandbox();
    });
    let report = exec::sandbox::support();
    let shared = exec::sandbox::shares_network_namespace();
    if !shared {
        eprintln!(
            "sandbox_shared: runs do not share a network namespace here ({report:?}); {test} not run"
        );
    }
    shared
}

async fn run_python(script: &str, seconds: u64) -> exec::RunOutput {
    // What the interpreter reads becomes readable to runs, as the server's
    // CP-SAT probe makes it (the read boundary admits nothing else).
    static ROOTS: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();
    ROOTS
        .get_or_init(|| async {
            let _ = solvergate::runtime::cpsat::probe_python(
                std::path::Path::new(&python()),
                &CancellationToken::new(),
            )
            .await;
        })
        .await;
    let command = ChildCommand::new(python()).args(["-c", script]);
    exec::run(
        &command,
        Limits::new(Duration::from_secs(seconds)),
        &CancellationToken::new(),
    )
    .await
    .expect("python runs")
}

/// A run that listens on an abstract socket and holds it for a few
/// seconds, printing `ready` once it listens; another run tries to connect.
const LISTEN: &str = r#"
import socket, sys, time
server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
server.bind(NAME)
server.listen(1)
own = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
own.connect(NAME)
print("ready, and its own run connects", flush=True)
time.sleep(4)
"#;

const CONNECT: &str = r#"
import socket
client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    client.connect(NAME)
    print("connected")
except OSError as error:
    print("refused:", error.errno)
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_cannot_reach_another_runs_abstract_socket() {
    if !shared_sandbox("abstract sockets") {
        return;
    }
    let name = format!("b'\\0solvergate-test-{}'", std::process::id());
    let listen = LISTEN.replace("NAME", &name);
    let connect = CONNECT.replace("NAME", &name);
    let listener = tokio::spawn(async move { run_python(&listen, 20).await });
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let other = run_python(&connect, 20).await;
    let listener = listener.await.expect("the listener's task");
    assert_eq!(
        listener.stdout, "ready, and its own run connects\n",
        "{listener:?}"
    );
    // EPERM: Landlock's scope refused it.
    assert_eq!(other.stdout, "refused: 1\n", "{other:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_cannot_signal_another_run() {
    if !shared_sandbox("signals") {
        return;
    }
    let target =
        tokio::spawn(
            async move { run_python("import time\ntime.sleep(3)\nprint('alive')", 20).await },
        );
    // The target's pid, from a process list that names its script.
    let mut pid = None;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        pid = std::fs::read_dir("/proc")
            .expect("/proc")
            .flatten()
            .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
            .find(|pid| {
                std::fs::read(format!("/proc/{pid}/cmdline"))
                    .is_ok_and(|line| String::from_utf8_lossy(&line).contains("print('alive')"))
            });
        if pid.is_some() {
            break;
        }
    }
    let pid = pid.expect("the target run started");
    let other = run_python(
        &format!(
            "import os, signal, subprocess\n\
             child = subprocess.Popen(['sleep', '5'])\n\
             os.kill(child.pid, signal.SIGTERM)\n\
             print('own child:', child.wait())\n\
             try:\n    os.kill({pid}, signal.SIGTERM)\n    print('signalled')\n\
             except OSError as error:\n    print('refused:', error.errno)"
        ),
        20,
    )
    .await;
    let target = target.await.expect("the target's task");
    assert_eq!(other.stdout, "own child: -15\nrefused: 1\n", "{other:?}");
    assert!(target.stdout.ends_with("alive\n"), "{target:?}");
}

#[tokio::test]
async fn a_run_can_neither_bring_the_loopback_up_nor_leave_the_namespace() {
    if !shared_sandbox("loopback") {
        return;
    }
    let run = run_python(
        r#"
import ctypes, fcntl, os, socket, struct
libc = ctypes.CDLL(None, use_errno=True)
probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
flags = struct.unpack('16sH14s', fcntl.ioctl(probe, 0x8913, struct.pack('16sH14s', b'lo', 0, bytes(14))))[1]
print('loopback up:', bool(flags & 1))
try:
    fcntl.ioctl(probe, 0x8914, struct.pack('16sH14s', b'lo', flags | 1, bytes(14)))
    print('brought up')
except OSError as error:
    print('bring up refused:', error.errno)
try:
    host = os.open('/proc/1/ns/net', os.O_RDONLY)
    if libc.setns(host, 0x40000000) != 0:
        raise OSError(ctypes.get_errno(), 'setns')
    print('left for the host')
except OSError:
    print('setns refused')
try:
    socket.create_connection(('127.0.0.1', 9), timeout=1)
    print('connected')
except OSError as error:
    print('connect refused')
"#,
        20,
    )
    .await;
    assert_eq!(
        run.stdout, "loopback up: False\nbring up refused: 1\nsetns refused\nconnect refused\n",
        "{run:?}"
    );
}

#[tokio::test]
async fn a_confined_start_finds_its_program_as_a_plain_one_does() {
    if !shared_sandbox("confined starts") {
        return;
    }
    let limits = || Limits::new(Duration::from_secs(10));
    let cancel = CancellationToken::new();
    // A program that is not there is the spawn error a plain start gives.
    let missing = ChildCommand::new("/nonexistent/minizinc");
    let error = exec::run(&missing, limits(), &cancel)
        .await
        .expect_err("nothing to run");
    assert!(
        matches!(&error, exec::ExecError::Spawn { source, .. } if source.kind() == std::io::ErrorKind::NotFound),
        "{error}"
    );
    assert!(
        error.to_string().contains("/nonexistent/minizinc"),
        "{error}"
    );
    // A program named without a path is found on PATH; the child gets its
    // scratch dir as TMPDIR, its arguments, its directory and its exit code.
    let dir = tempfile::tempdir().expect("a temp dir");
    let found = ChildCommand::new("sh")
        .args(["-c", "case $TMPDIR in */solvergate-sandbox-*/tmp) echo scratch;; esac; pwd; echo \"$1\"; exit 3", "sh", "an argument"])
        .cwd(dir.path());
    let run = exec::run(&found, limits(), &cancel).await.expect("sh runs");
    let canonical = dir.path().canonicalize().expect("the dir");
    assert_eq!(
        run.stdout,
        format!("scratch\n{}\nan argument\n", canonical.display()),
        "{run:?}"
    );
    assert_eq!(run.return_code, Some(3));
}
