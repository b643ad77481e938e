//! What a CP-SAT script run costs through MCP, printed as figures: the
//! median round trip of a trivial script through `run_cpsat_python`, beside
//! the import floor — `python -c "import ortools.sat.python.cp_model"` —
//! measured in the same run — and the first call of a fresh server beside
//! the script's own duration (the interpreter probe runs at start-up, in the
//! background, so a first call a moment later does not pay for it).
//!
//! Run: `cargo bench --bench cpsat` with `SOLVERGATE_BENCH_PYTHON` naming a
//! Python that can import ortools (default: the test venv, `.venv/bin/python`).

mod common;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Instant;

use common::{Client, median, ms};
use serde_json::json;

const ROUNDS: usize = 20;
const SCRIPT: &str = "from ortools.sat.python import cp_model\nimport json\nm = cp_model.CpModel()\nx = m.NewIntVar(0, 5, 'x')\nm.Maximize(x)\ns = cp_model.CpSolver()\ns.Solve(m)\nprint(json.dumps({'status': 'optimal', 'objective': s.ObjectiveValue(), 'solution': {'x': s.Value(x)}}))\n";

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
    let runtime =
        PathBuf::from(std::env::var("SOLVERGATE_BENCH_RUNTIME").unwrap_or_else(|_| "/usr".into()));
    let python_text = python.to_string_lossy().into_owned();
    let mut client = Client::start(&runtime, &[], &[("SOLVERGATE_CPSAT_PYTHON", &python_text)]);
    client.initialize();
    // A person's first call comes a moment after the client starts the server.
    std::thread::sleep(std::time::Duration::from_secs(2));
    let started = Instant::now();
    let first = client.call("run_cpsat_python", json!({"source": SCRIPT}));
    let first_round_trip = started.elapsed();
    let first_script_ms = first["result"]["structuredContent"]["duration_ms"]
        .as_u64()
        .unwrap_or(0);

    let import_floor = |_: usize| {
        let started = Instant::now();
        let status = Command::new(&python)
            .args(["-c", "import ortools.sat.python.cp_model"])
            .stdin(Stdio::null())
            .status()
            .expect("run python");
        assert!(status.success());
        started.elapsed()
    };
    let mut through_mcp = |_: usize| {
        let started = Instant::now();
        let response = client.call("run_cpsat_python", json!({"source": SCRIPT}));
        let elapsed = started.elapsed();
        assert_eq!(response["result"]["structuredContent"]["status"], "optimal");
        elapsed
    };
    import_floor(0);
    through_mcp(0);
    let mut floor = Vec::new();
    let mut mcp = Vec::new();
    for round in 0..ROUNDS {
        floor.push(import_floor(round));
        mcp.push(through_mcp(round));
    }
    let (floor, mcp) = (median(floor), median(mcp));
    println!(
        "python -c 'import ortools.sat.python.cp_model': median {:8.2} ms",
        ms(floor)
    );
    println!(
        "run_cpsat_python (trivial model, MCP):         median {:8.2} ms",
        ms(mcp)
    );
    println!(
        "above the import floor:                               {:8.2} ms",
        ms(mcp) - ms(floor)
    );
    println!(
        "first call of a fresh server: {:8.2} ms round trip, {first_script_ms} ms of it the script",
        ms(first_round_trip)
    );
}
