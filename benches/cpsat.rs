//! What a CP-SAT script run costs through MCP, printed as figures (min /
//! median / max over the rounds): a trivial script's round trip through
//! `run_cpsat_python` on a server with warm forkers (the default) and on one
//! with `SOLVERGATE_CPSAT_WARM=0`, beside the import floor — `python -c
//! "import ortools.sat.python.cp_model"` — measured in the same run; the
//! first call of a fresh server; and `check_runtime`, its first call on a
//! fresh server against the later ones (cached introspection).
//!
//! Run: `cargo bench --bench cpsat` with `SOLVERGATE_BENCH_PYTHON` naming a
//! Python that can import ortools (default: the test venv, `.venv/bin/python`).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{Client, ms, spread};
use serde_json::json;

const ROUNDS: usize = 20;
const SCRIPT: &str = "from ortools.sat.python import cp_model\nimport json\nm = cp_model.CpModel()\nx = m.NewIntVar(0, 5, 'x')\nm.Maximize(x)\ns = cp_model.CpSolver()\ns.Solve(m)\nprint(json.dumps({'status': 'optimal', 'objective': s.ObjectiveValue(), 'solution': {'x': s.Value(x)}}))\n";

fn round_trip(client: &mut Client) -> Duration {
    let started = Instant::now();
    let response = client.call("run_cpsat_python", json!({"source": SCRIPT}));
    let elapsed = started.elapsed();
    assert_eq!(response["result"]["structuredContent"]["status"], "optimal");
    elapsed
}

fn server(runtime: &Path, python: &str, warm: &str) -> Client {
    let mut client = Client::start(
        runtime,
        &[],
        &[
            ("SOLVERGATE_CPSAT_PYTHON", python),
            ("SOLVERGATE_CPSAT_WARM", warm),
        ],
    );
    client.initialize();
    client
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
    let python_text = python.to_string_lossy().into_owned();

    // check_runtime: the first call of a fresh server, then later ones.
    let mut first_check = Vec::new();
    let mut later_check = Vec::new();
    for _ in 0..ROUNDS.min(10) {
        let mut client = server(&runtime, &python_text, "0");
        let started = Instant::now();
        let response = client.call("check_runtime", json!({}));
        first_check.push(started.elapsed());
        assert_eq!(
            response["result"]["structuredContent"]["cpsat"]["installed"],
            true
        );
    }
    let mut client = server(&runtime, &python_text, "0");
    client.call("check_runtime", json!({}));
    for _ in 0..ROUNDS {
        let started = Instant::now();
        client.call("check_runtime", json!({}));
        later_check.push(started.elapsed());
    }

    // The first CP-SAT call of a fresh server (cold: the pool starts with it).
    let mut warm = server(&runtime, &python_text, "2");
    // A person's first call comes a moment after the client starts the server.
    std::thread::sleep(Duration::from_secs(2));
    let started = Instant::now();
    let first = warm.call("run_cpsat_python", json!({"source": SCRIPT}));
    let first_round_trip = started.elapsed();
    let first_script_ms = first["result"]["structuredContent"]["duration_ms"]
        .as_u64()
        .unwrap_or(0);
    // Let the forkers import OR-Tools.
    std::thread::sleep(Duration::from_secs(3));
    let mut cold = server(&runtime, &python_text, "0");
    round_trip(&mut cold);

    let import_floor = || {
        let started = Instant::now();
        let status = Command::new(&python)
            .args(["-c", "import ortools.sat.python.cp_model"])
            .stdin(Stdio::null())
            .status()
            .expect("run python");
        assert!(status.success());
        started.elapsed()
    };
    let (mut floor, mut warm_runs, mut cold_runs) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        floor.push(import_floor());
        warm_runs.push(round_trip(&mut warm));
        cold_runs.push(round_trip(&mut cold));
    }
    println!(
        "python -c 'import ortools.sat.python.cp_model': {}",
        spread(floor)
    );
    println!(
        "run_cpsat_python, trivial model, warm:          {}",
        spread(warm_runs)
    );
    println!(
        "run_cpsat_python, trivial model, cold (WARM=0): {}",
        spread(cold_runs)
    );
    println!(
        "first run_cpsat_python of a fresh server:       {:8.2} ms round trip, {first_script_ms} ms of it the script",
        ms(first_round_trip)
    );
    println!(
        "check_runtime, first call of a fresh server:    {}",
        spread(first_check)
    );
    println!(
        "check_runtime, later calls:                     {}",
        spread(later_check)
    );
}
