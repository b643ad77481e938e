//! The executor against real processes: whole-tree kills on timeout, output
//! cap, cancellation and drop, and MiniZinc's solver (which lives in a
//! process group of its own) dying with it.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use solvergate::exec::{self, ChildCommand, Ending, Limits};
use tokio_util::sync::CancellationToken;

/// A `sleep` argument no other process on the machine uses, so the test
/// can find its own processes in /proc.
fn marker() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("1000.{}{}", std::process::id(), nanos)
}

/// Live (not dead, not zombie) processes whose command line contains `needle`.
fn processes_with(needle: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(needle) && !is_dead(pid) {
            found.push(pid);
        }
    }
    found
}

fn is_dead(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let after = &stat[stat.rfind(')')? + 1..];
            after.split_whitespace().next().map(|state| state == "Z")
        })
        .unwrap_or(true)
}

fn shell(script: &str) -> ChildCommand {
    ChildCommand::new("/bin/sh").args(["-c", script])
}

/// Shell text that starts `sleep <mark>` in a process group of its own
/// (still inside the child's session), in the background.
fn sleep_in_own_group(mark: &str) -> String {
    format!("perl -e 'setpgrp(0,0); exec @ARGV' sleep {mark} &")
}

fn limits(timeout_ms: u64) -> Limits {
    Limits::new(Duration::from_millis(timeout_ms))
}

#[tokio::test]
async fn timeout_kills_a_background_job_in_another_process_group() {
    let mark = marker();
    // A group kill alone would miss a sleep in another group.
    let command = shell(&format!("{} wait", sleep_in_own_group(&mark)));
    let output = exec::run(&command, limits(500), &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(output.ending, Ending::TimedOut);
    assert!(output.timed_out());
    assert_eq!(output.return_code, None);
    assert!(processes_with(&mark).is_empty(), "the sleep survived");
}

#[tokio::test]
async fn a_grandchild_left_behind_by_a_clean_exit_is_swept() {
    let mark = marker();
    let command = shell(&format!("sleep {mark} & echo started"));
    let output = exec::run(&command, limits(10_000), &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(output.ending, Ending::Exited);
    assert_eq!(output.return_code, Some(0));
    assert_eq!(output.stdout, "started\n");
    assert!(processes_with(&mark).is_empty(), "the sleep survived");
}

#[tokio::test]
async fn output_over_the_cap_is_cut_and_the_writer_killed() {
    let command = shell("yes solvergate");
    let output = exec::run(&command, limits(20_000), &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(output.ending, Ending::Capped);
    assert!(output.truncated);
    assert_eq!(output.return_code, None);
    assert!(output.stdout.len() as u64 <= exec::OUTPUT_CAP);
    assert!(output.stdout.starts_with("solvergate\nsolvergate\n"));
}

#[tokio::test]
async fn a_fast_writer_that_exits_keeps_its_code_but_is_marked_truncated() {
    let command = shell("head -c 3000000 /dev/zero | tr '\\0' x; exit 4");
    let output = exec::run(&command, limits(20_000), &CancellationToken::new())
        .await
        .unwrap();
    assert!(output.truncated);
    assert!(output.stdout.len() as u64 <= exec::OUTPUT_CAP);
    // Either the cap poll caught it while writing, or it exited first.
    match output.ending {
        Ending::Exited => assert_eq!(output.return_code, Some(4)),
        Ending::Capped => assert_eq!(output.return_code, None),
        other => panic!("unexpected ending {other:?}"),
    }
}

#[tokio::test]
async fn cancellation_stops_the_tree() {
    let mark = marker();
    let command = shell(&format!("{} sleep {mark}", sleep_in_own_group(&mark)));
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let watched = mark.clone();
    let seen = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(400)).await;
        let running = processes_with(&watched).len();
        trigger.cancel();
        running
    });
    let started = Instant::now();
    let output = exec::run(&command, limits(30_000), &cancel).await.unwrap();
    assert_eq!(
        seen.await.unwrap(),
        3,
        "the shell and both sleeps should have been running"
    );
    assert_eq!(output.ending, Ending::Cancelled);
    assert_eq!(output.return_code, None);
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(processes_with(&mark).is_empty(), "a sleep survived");
}

#[tokio::test]
async fn dropping_the_run_kills_the_tree() {
    let mark = marker();
    let command = shell(&format!("{} sleep {mark}", sleep_in_own_group(&mark)));
    let cancel = CancellationToken::new();
    let mut run = Box::pin(exec::run(&command, limits(30_000), &cancel));
    tokio::select! {
        _ = run.as_mut() => panic!("the run should still be going"),
        () = tokio::time::sleep(Duration::from_millis(400)) => {}
    }
    assert_eq!(
        processes_with(&mark).len(),
        3,
        "the shell and both sleeps should be running"
    );
    drop(run);
    // The future is gone; its guard has swept the session.
    assert!(
        processes_with(&mark).is_empty(),
        "a sleep survived the drop"
    );
}

fn minizinc() -> PathBuf {
    PathBuf::from(std::env::var("SOLVERGATE_TEST_RUNTIME").unwrap_or_else(|_| "/usr".into()))
        .join("bin/minizinc")
}

/// A queens model Gecode keeps improving for far longer than any test runs.
fn endless_model(dir: &std::path::Path) -> String {
    let model = dir.join("queens.mzn");
    std::fs::write(
        &model,
        "int: n = 200; array[1..n] of var 1..n: q;\n\
         include \"alldifferent.mzn\";\n\
         constraint alldifferent(q);\n\
         constraint alldifferent([q[i] + i | i in 1..n]);\n\
         constraint alldifferent([q[i] - i | i in 1..n]);\n\
         solve maximize sum(i in 1..n)(q[i] * i * i);\n",
    )
    .unwrap();
    model.to_string_lossy().into_owned()
}

/// Polls until fzn-gecode runs under the minizinc solving `model`.
/// Waits up to 30 s for the solver (MiniZinc compiles first, which on two
/// loaded cores can take seconds); the tests that call it run far longer
/// budgets, so a late start is not a failure of what they test.
async fn wait_for_solver(model: &str) -> Vec<(i32, i32, i32)> {
    for _ in 0..600 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let solvers = solver_children_of_minizinc_running(model);
        if !solvers.is_empty() {
            return solvers;
        }
    }
    Vec::new()
}

fn assert_solvers_dead(solvers: &[(i32, i32, i32)]) {
    assert!(!solvers.is_empty(), "never saw fzn-gecode start");
    for (solver, minizinc_pid, solver_group) in solvers {
        assert_ne!(
            solver_group, minizinc_pid,
            "expected the solver in a process group of its own"
        );
        assert!(is_dead(*solver), "fzn-gecode {solver} is still alive");
    }
}

/// MiniZinc's solver runs in its own process group: stopping minizinc at
/// the deadline must stop fzn-gecode too.
#[tokio::test]
async fn stopping_minizinc_stops_its_solver() {
    let dir = tempfile::tempdir().unwrap();
    let model = endless_model(dir.path());
    let command = ChildCommand::new(minizinc()).args(["--solver", "org.gecode.gecode", &model]);
    let watched = model.clone();
    let watcher = tokio::spawn(async move { wait_for_solver(&watched).await });
    // No --time-limit: only our deadline stops it. 8 s, so that the solver
    // has started by then even when compiling takes seconds on a loaded
    // machine (a deadline before it starts would prove nothing).
    let output = exec::run(&command, limits(8_000), &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(output.ending, Ending::TimedOut);
    assert_solvers_dead(&watcher.await.unwrap());
}

/// The drop guard has no time for SIGTERM: its SIGKILL must reach the
/// solver's group too, not just minizinc's.
#[tokio::test]
async fn dropping_a_minizinc_run_kills_its_solver() {
    let dir = tempfile::tempdir().unwrap();
    let model = endless_model(dir.path());
    let command = ChildCommand::new(minizinc()).args(["--solver", "org.gecode.gecode", &model]);
    let cancel = CancellationToken::new();
    let mut run = Box::pin(exec::run(&command, limits(60_000), &cancel));
    let solvers = tokio::select! {
        _ = run.as_mut() => panic!("minizinc stopped on its own"),
        solvers = wait_for_solver(&model) => solvers,
    };
    drop(run);
    assert_solvers_dead(&solvers);
}

/// (solver pid, minizinc pid, solver process group) for every fzn-gecode
/// whose parent minizinc runs `model`.
fn solver_children_of_minizinc_running(model: &str) -> Vec<(i32, i32, i32)> {
    let parents = processes_with(model);
    let mut solvers = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        if !comm.trim().starts_with("fzn-gecode") {
            continue;
        }
        if let (Some(parent), Some(group)) = (stat_field(pid, 1), stat_field(pid, 2))
            && parents.contains(&parent)
        {
            solvers.push((pid, parent, group));
        }
    }
    solvers
}

/// Field `index` after the state in /proc/<pid>/stat: 1 ppid, 2 pgrp, 3 session.
fn stat_field(pid: i32, index: usize) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(index)?.parse().ok()
}

// --- processes that leave the session ---

/// The three ways a run reads its child's stdout: capture files, pipes
/// into a head and tail, a pipe through a line filter.
fn capture_modes() -> [(&'static str, Limits); 3] {
    fn keep(line: &str) -> Option<String> {
        line.starts_with("never").then(String::new)
    }
    [
        ("files", limits(20_000)),
        ("head and tail", limits(20_000).keep_head_and_tail()),
        (
            "filter",
            limits(20_000).filter_stdout(|| Box::new(exec::EachLine(keep))),
        ),
    ]
}

fn python(script: &str, mark: &str) -> ChildCommand {
    ChildCommand::new("/usr/bin/python3").args(["-c", script, mark])
}

/// Prints `rejected`, leaves a `setsid` grandchild (argv carries the mark)
/// that prints `accepted` a second later, and exits.
const SETSID_LATE_VERDICT: &str = r#"
import os, sys, time
r, w = os.pipe()
if os.fork() == 0:
    os.setsid()
    os.write(w, b"s")
    time.sleep(1)
    print('{"status": "accepted", "errors": []}', flush=True)
    time.sleep(30)
    os._exit(0)
os.read(r, 1)
print('{"status": "rejected", "errors": ["x"]}', flush=True)
"#;

/// A double fork: the middle process exits at once, the grandchild (in a
/// session of its own, orphaned) waits for the leader's end (its pipe
/// closes) and writes 300 chunks as fast as it can, noting in a side file
/// (argv[2]) how many bytes it wrote, then waits to be killed.
const DOUBLE_FORK_FLOOD: &str = r#"
import os, sys, time
r, w = os.pipe()
up_r, up_w = os.pipe()
if os.fork() == 0:
    os.close(w)
    os.setsid()
    if os.fork() != 0:
        os._exit(0)
    os.write(up_w, b"u")
    os.read(r, 1)
    side = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT)
    chunk = b'{"status": "accepted", "errors": []}\n' * 10
    for count in range(1, 301):
        os.write(1, chunk)
        os.pwrite(side, b"%12d" % (count * len(chunk)), 0)
    time.sleep(30)
os.close(r)
os.read(up_r, 1)
print('{"status": "rejected", "errors": ["x"]}', flush=True)
"#;

const FLOOD_CHUNK: u64 = 370;

#[tokio::test]
async fn a_setsid_grandchild_is_killed_and_its_late_verdict_never_read() {
    exec::escape::adopt_orphans();
    for (mode, limits) in capture_modes() {
        let mark = marker();
        let started = Instant::now();
        let output = exec::run(
            &python(SETSID_LATE_VERDICT, &mark),
            limits,
            &CancellationToken::new(),
        )
        .await
        .unwrap();
        assert_eq!(output.ending, Ending::Exited, "{mode}");
        assert_eq!(output.return_code, Some(0), "{mode}");
        assert_eq!(
            output.stdout, "{\"status\": \"rejected\", \"errors\": [\"x\"]}\n",
            "{mode}"
        );
        assert!(output.escaped >= 1, "{mode}: {output:?}");
        assert_eq!(
            output.late_output_bytes, 0,
            "{mode}: killed before it wrote"
        );
        assert!(
            processes_with(&mark).is_empty(),
            "{mode}: the escapee survived"
        );
        assert!(
            started.elapsed() < Duration::from_millis(900),
            "{mode}: the run waited for the escapee ({:?})",
            started.elapsed()
        );
    }
}

/// Every byte the tree wrote is either kept (written before the exit) or
/// counted late, never both: the cut is exact. (How many are late depends
/// on how soon the escapee runs after the exit.)
#[tokio::test]
async fn output_after_the_exit_is_counted_not_kept() {
    exec::escape::adopt_orphans();
    let dir = tempfile::tempdir().unwrap();
    for (mode, limits) in capture_modes() {
        let mark = marker();
        let side = dir.path().join(format!("{}.count", mode.replace(' ', "-")));
        let command = ChildCommand::new("/usr/bin/python3").args([
            std::ffi::OsStr::new("-c"),
            DOUBLE_FORK_FLOOD.as_ref(),
            mark.as_ref(),
            side.as_os_str(),
        ]);
        let output = exec::run(&command, limits, &CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(output.ending, Ending::Exited, "{mode}");
        let verdict = "{\"status\": \"rejected\", \"errors\": [\"x\"]}\n";
        assert!(output.stdout.starts_with(verdict), "{mode}");
        assert!(!output.truncated, "{mode}");
        let flooded: u64 = std::fs::read_to_string(&side)
            .unwrap_or_default()
            .trim()
            .parse()
            .unwrap_or(0);
        let written = verdict.len() as u64 + flooded;
        let seen = output.stdout.len() as u64 + output.late_output_bytes;
        assert!(
            written <= seen && seen <= written + FLOOD_CHUNK,
            "{mode}: wrote {written} (+ at most one chunk), kept {} + late {}",
            output.stdout.len(),
            output.late_output_bytes
        );
        assert!(output.escaped >= 1, "{mode}");
        assert!(
            processes_with(&mark).is_empty(),
            "{mode}: the flood survived"
        );
    }
}

/// An escapee that clears its environment carries no run tag: once its
/// parent is gone it is ours (the subreaper), and holds our output.
#[tokio::test]
async fn an_escapee_with_a_cleared_environment_is_caught_as_an_orphan() {
    exec::escape::adopt_orphans();
    let dir = tempfile::tempdir().unwrap();
    let ready = dir.path().display();
    for (mode, limits) in capture_modes() {
        let mark = marker();
        let script = format!(
            "echo rejected; setsid env -i /bin/sh -c 'touch \"$0.up\"; sleep 1; echo accepted; sleep 30' {ready}/{mark} &
             while [ ! -e {ready}/{mark}.up ]; do sleep 0.01; done"
        );
        let output = exec::run(&shell(&script), limits, &CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(output.stdout, "rejected\n", "{mode}");
        assert!(output.escaped >= 1, "{mode}: {output:?}");
        assert!(
            processes_with(&mark).is_empty(),
            "{mode}: the escapee survived"
        );
    }
}

/// In a warm child: a `setsid` grandchild that forks without exec (it
/// carries the forker's environment) and one that execs a shell (it
/// carries the child's), which prints a verdict a second later.
const WARM_ESCAPES: &str = r#"
import os, sys, time
mark = sys.argv[1]
r, w = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        with open(__file__ + ".pid", "w") as out:
            out.write(str(os.getpid()))
        os.write(w, b"f")
        time.sleep(30)
        os._exit(0)
    os.write(w, b"e")
    os.execv("/bin/sh", ["sh", "-c", "sleep 1; echo accepted; exec sleep 30", mark])
os.read(r, 1)
os.read(r, 1)
print('{"status": "rejected", "errors": ["x"]}', flush=True)
"#;

/// A warm forker's child that leaves its session is caught the same way,
/// also when it forks without exec (it then carries the forker's tag).
#[tokio::test]
async fn a_warm_childs_escapee_is_killed_and_its_late_output_never_read() {
    exec::escape::adopt_orphans();
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("escape.py");
    std::fs::write(&script, WARM_ESCAPES).unwrap();
    let mut forker = exec::Forker::start(
        std::path::Path::new("/usr/bin/python3"),
        &["json"],
        &[],
        &[],
        Duration::from_secs(20),
    )
    .await
    .unwrap();
    let forker_pid = forker.pid();
    for _ in 0..2 {
        let mark = marker();
        let command = ChildCommand::new("/usr/bin/python3")
            .arg("-u")
            .arg(&script)
            .arg(&mark);
        let output = forker
            .run(
                &command,
                limits(20_000).keep_head_and_tail(),
                &CancellationToken::new(),
                None,
            )
            .await
            .unwrap();
        assert_eq!(output.ending, Ending::Exited);
        assert_eq!(
            output.stdout,
            "{\"status\": \"rejected\", \"errors\": [\"x\"]}\n"
        );
        assert!(output.escaped >= 2, "{output:?}");
        assert!(
            processes_with(&mark).is_empty(),
            "the warm child's escapee survived"
        );
        let forked: i32 = std::fs::read_to_string(format!("{}.pid", script.display()))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(
            is_dead(forked),
            "the escapee that forked without exec survived"
        );
        assert!(forker.is_healthy(), "the forker itself was spared");
        assert_eq!(forker.pid(), forker_pid);
    }
}
