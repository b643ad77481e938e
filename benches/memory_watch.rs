//! What the tree memory watch of rlimit mode costs, printed as figures (not
//! asserted): a server with `SOLVERGATE_LIMITS=rlimit` runs N CP-SAT
//! scripts at once, each asleep, and the CPU time of its one sampler
//! thread (`solvergate-memory-watch`, from its `schedstat`) is read over a
//! window while all N are watched: per tick, and as a share of one core.
//! The same window with no run watched shows that it then samples nothing.
//! The cost of a tick is one pass over `/proc` whatever N is, so the
//! number of processes on the machine is printed with it.
//!
//! Run: `cargo bench --bench memory_watch` with `SOLVERGATE_BENCH_PYTHON`
//! naming a Python (default: the test venv, `.venv/bin/python`).

mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::Client;
use serde_json::json;

/// The sampler's tick (`exec::memory_watch::TICK`).
const TICK: Duration = Duration::from_millis(200);
/// How long the window of measurement lasts.
const WINDOW: Duration = Duration::from_secs(4);
/// Concurrent runs per round.
const RUNS: [usize; 3] = [1, 16, 48];

/// Sleeps long enough for every run of a round to start and the window to
/// pass, then answers.
const SLEEPER: &str = "import json, time\ntime.sleep(9)\nprint(json.dumps({'status': 'feasible', 'objective': 0, 'solution': {}}))\n";

/// The sampler thread's CPU time so far, in nanoseconds (`None` before it
/// started).
fn sampler_cpu_ns(server: u32) -> Option<u64> {
    let tasks = std::fs::read_dir(format!("/proc/{server}/task")).ok()?;
    for task in tasks.flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if comm.trim_end() == "solvergate-memo" {
            let schedstat = std::fs::read_to_string(task.path().join("schedstat")).ok()?;
            return schedstat.split_whitespace().next()?.parse().ok();
        }
    }
    None
}

fn processes_on_the_machine() -> usize {
    std::fs::read_dir("/proc")
        .map(|entries| {
            entries
                .flatten()
                .filter(|entry| entry.file_name().to_string_lossy().parse::<u32>().is_ok())
                .count()
        })
        .unwrap_or(0)
}

/// The sampler's CPU time over [`WINDOW`], in nanoseconds.
fn over_the_window(server: u32) -> u64 {
    let before = sampler_cpu_ns(server).unwrap_or(0);
    std::thread::sleep(WINDOW);
    sampler_cpu_ns(server).unwrap_or(0).saturating_sub(before)
}

fn main() {
    let python = PathBuf::from(
        std::env::var("SOLVERGATE_BENCH_PYTHON").unwrap_or_else(|_| ".venv/bin/python".into()),
    );
    let Ok(python) = std::path::absolute(&python) else {
        eprintln!("cannot resolve {}", python.display());
        return;
    };
    if !python.exists() {
        eprintln!(
            "no Python at {}; set SOLVERGATE_BENCH_PYTHON",
            python.display()
        );
        return;
    }
    let runtime = common::runtime_root();
    let python = python.to_string_lossy().into_owned();
    let mut server = Client::start(
        &runtime,
        &[],
        &[
            ("SOLVERGATE_LIMITS", "rlimit"),
            ("SOLVERGATE_CPSAT_PYTHON", python.as_str()),
            ("SOLVERGATE_CPSAT_WARM", "0"),
        ],
    );
    server.initialize();
    let ticks = WINDOW.as_secs_f64() / TICK.as_secs_f64();
    println!(
        "tree memory watch, SOLVERGATE_LIMITS=rlimit, a {} ms tick, {} s windows",
        TICK.as_millis(),
        WINDOW.as_secs()
    );
    for runs in RUNS {
        let started = Instant::now();
        for _ in 0..runs {
            server.send_request(
                "tools/call",
                json!({"name": "run_cpsat_python", "arguments": {"source": SLEEPER, "script_timeout_ms": 60000}}),
            );
        }
        // Every run started (Python's start-up on a busy machine).
        std::thread::sleep(Duration::from_millis(2500));
        let machine = processes_on_the_machine();
        let spent = over_the_window(server.child_pid);
        for _ in 0..runs {
            let response = server.read_response();
            assert_eq!(
                response["result"]["structuredContent"]["status"], "feasible",
                "{response}"
            );
        }
        println!(
            "{runs:>3} run(s) watched, {machine} processes on the machine: {:7.1} µs per tick, {:.3} % of one core (round {:.1} s)",
            spent as f64 / 1000.0 / ticks,
            spent as f64 / WINDOW.as_nanos() as f64 * 100.0,
            started.elapsed().as_secs_f64()
        );
    }
    let idle = over_the_window(server.child_pid);
    println!(
        "  0 runs watched: {idle} ns of sampler CPU in {} s (it sleeps until a run is watched)",
        WINDOW.as_secs()
    );
}
