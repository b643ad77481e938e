//! What solvergate costs on top of MiniZinc, printed as figures (not
//! asserted):
//! - a trivial solve through `solve_minizinc_model` against the same model
//!   run by invoking `minizinc` directly, paired round by round (each
//!   round runs all three, interleaved), on a server with the sandbox on
//!   and on one with it off (`SOLVERGATE_SANDBOX=0`), both with the
//!   server's default limits;
//! - a trivial CP-SAT script's round trip through `run_cpsat_python` on a
//!   warm forker, sandbox on (when `SOLVERGATE_BENCH_PYTHON`, default the
//!   test venv, can import ortools);
//! - the cold start to a `tools/list` answer, and the server's RSS.
//!
//! Run: `cargo bench --bench overhead` (runtime at `SOLVERGATE_BENCH_RUNTIME`,
//! default `/usr`; `SOLVERGATE_BENCH_BIN` measures another build of the
//! server). Targets (issue 42, this 2-core machine): overhead ≤ 3 ms with
//! the sandbox on, CP-SAT round trip ≤ 25 ms, cold start ≤ 20 ms.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{Client, median, ms, spread};
use serde_json::json;

const MODEL: &str = "var 1..3: x;\nsolve satisfy;\n";
/// Rounds unless `SOLVERGATE_BENCH_ROUNDS` says otherwise.
const ROUNDS: usize = 40;
const SCRIPT: &str = "from ortools.sat.python import cp_model\nimport json\nm = cp_model.CpModel()\nx = m.NewIntVar(0, 5, 'x')\nm.Maximize(x)\ns = cp_model.CpSolver()\ns.Solve(m)\nprint(json.dumps({'status': 'optimal', 'objective': s.ObjectiveValue(), 'solution': {'x': s.Value(x)}}))\n";

/// The median of the round-by-round differences `a - b`, in ms.
fn paired(a: &[Duration], b: &[Duration]) -> f64 {
    let mut differences: Vec<f64> = a.iter().zip(b).map(|(a, b)| ms(*a) - ms(*b)).collect();
    differences.sort_by(f64::total_cmp);
    differences[differences.len() / 2]
}

fn solve(client: &mut Client, solver: &str) -> Duration {
    let started = Instant::now();
    let response = client.call(
        "solve_minizinc_model",
        json!({"model": MODEL, "solver": solver}),
    );
    let elapsed = started.elapsed();
    assert_eq!(
        response["result"]["structuredContent"]["status"], "satisfied",
        "{response}"
    );
    elapsed
}

fn main() {
    let Some(runtime) = common::runtime_with_minizinc() else {
        return;
    };
    let minizinc = runtime.join("bin/minizinc");
    let scratch = tempfile::tempdir().expect("temp dir");
    let model = scratch.path().join("model.mzn");
    std::fs::write(&model, MODEL).expect("write model");

    let mut on = Client::start(&runtime, &[], &[]);
    on.initialize();
    let idle_rss = on.rss_kib();
    let mut off = Client::start(&runtime, &[], &[("SOLVERGATE_SANDBOX", "0")]);
    off.initialize();
    let catalog = on.call("list_available_solvers", json!({}));
    let solver = catalog["result"]["structuredContent"]["default_solver"]
        .as_str()
        .expect("a default solver")
        .to_owned();
    let sandbox = on.call("check_runtime", json!({}))["result"]["structuredContent"]["sandbox"]
        .as_str()
        .unwrap_or("?")
        .to_owned();

    // The flags the server passes for a solve.
    let direct = || {
        let started = Instant::now();
        let output = Command::new(&minizinc)
            .args([
                "--json-stream",
                "--output-mode",
                "json",
                "--output-objective",
            ])
            .args(["--statistics", "--solver", &solver, "--time-limit", "30000"])
            .arg(&model)
            .current_dir(scratch.path())
            .stdin(Stdio::null())
            .output()
            .expect("run minizinc");
        assert!(output.status.success());
        started.elapsed()
    };
    // Warm every path (page cache, catalog), then interleave the samples
    // so machine noise hits all three alike.
    direct();
    solve(&mut on, &solver);
    solve(&mut off, &solver);
    let rounds = std::env::var("SOLVERGATE_BENCH_ROUNDS")
        .ok()
        .and_then(|rounds| rounds.parse().ok())
        .filter(|rounds| *rounds > 0)
        .unwrap_or(ROUNDS);
    let (mut direct_samples, mut on_samples, mut off_samples) =
        (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        // Each of the three goes first in a third of the rounds.
        for turn in 0..3 {
            match (round + turn) % 3 {
                0 => direct_samples.push(direct()),
                1 => on_samples.push(solve(&mut on, &solver)),
                _ => off_samples.push(solve(&mut off, &solver)),
            }
        }
    }
    let busy_rss = on.rss_kib();
    drop((on, off));

    let cpsat = cpsat_round_trips(&runtime);

    let mut cold = Vec::new();
    for _ in 0..20 {
        let started = Instant::now();
        let mut fresh = Client::start(&runtime, &[], &[]);
        fresh.initialize();
        let tools = fresh.request("tools/list", json!({}));
        cold.push(started.elapsed());
        assert!(tools["result"]["tools"].is_array());
    }

    println!("server: {}", common::binary().display());
    println!("solver: {solver}, {rounds} interleaved rounds; sandbox: {sandbox}");
    println!(
        "minizinc directly:            {}",
        spread(direct_samples.clone())
    );
    println!(
        "MCP solve, sandbox on:        {}",
        spread(on_samples.clone())
    );
    println!(
        "MCP solve, sandbox off:       {}",
        spread(off_samples.clone())
    );
    println!(
        "overhead, sandbox on:  paired median {:6.2} ms (target <= 3 ms)",
        paired(&on_samples, &direct_samples)
    );
    println!(
        "overhead, sandbox off: paired median {:6.2} ms",
        paired(&off_samples, &direct_samples)
    );
    match cpsat {
        Some(samples) => println!(
            "run_cpsat_python, warm, sandbox on: {} (target median <= 25 ms)",
            spread(samples)
        ),
        None => println!("run_cpsat_python: not measured (no Python with ortools)"),
    }
    println!(
        "cold start to tools/list:     median {:8.2} ms (target <= 20 ms)",
        ms(median(cold))
    );
    println!("server RSS idle after start-up:    {idle_rss} KiB");
    println!("server RSS after the solves:       {busy_rss} KiB");
}

/// A trivial script's round trips on a server with warm forkers, sandbox
/// on; `None` without a Python that imports ortools.
fn cpsat_round_trips(runtime: &Path) -> Option<Vec<Duration>> {
    let python =
        std::env::var("SOLVERGATE_BENCH_PYTHON").unwrap_or_else(|_| ".venv/bin/python".into());
    let python = std::path::absolute(python).ok()?;
    let imports = Command::new(&python)
        .args(["-c", "import ortools.sat.python.cp_model"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if !imports {
        return None;
    }
    let python = python.to_string_lossy().into_owned();
    let mut client = Client::start(runtime, &[], &[("SOLVERGATE_CPSAT_PYTHON", &python)]);
    client.initialize();
    let mut round_trip = || {
        let started = Instant::now();
        let response = client.call("run_cpsat_python", json!({"source": SCRIPT}));
        let elapsed = started.elapsed();
        assert_eq!(
            response["result"]["structuredContent"]["status"], "optimal",
            "{response}"
        );
        elapsed
    };
    // The forkers start in the background; the first calls may be cold.
    for _ in 0..5 {
        round_trip();
        std::thread::sleep(Duration::from_millis(300));
    }
    Some((0..20).map(|_| round_trip()).collect())
}
