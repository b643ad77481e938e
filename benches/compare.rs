//! The rows of issue 14's table, measured for solvergate and — when
//! `SOLVERGATE_BENCH_REFERENCE` names its executable — for the reference
//! server (openconstraint-mcp) in the same run, with the same JSON-RPC
//! client over stdio, the same models and the same MiniZinc runtime.
//! Printed as figures (min / median / max), never asserted; the machine's
//! load average is printed before and after.
//!
//! Rows: cold start to a `tools/list` answer; the `tools/list` size (full
//! toolset); idle and peak RSS; a trivial solve's overhead over `minizinc`
//! itself, paired in one loop; `check_runtime` after the first call; a
//! trivial CP-SAT script's round trip (ours warm and with
//! `SOLVERGATE_CPSAT_WARM=0`); solutions kept under the 1 MiB output cap
//! for an `all_solutions` model with an output item (ours before the
//! capture filter counted as the whole solution lines MiniZinc prints in
//! its first MiB); and the text part size of that capped result.
//!
//! Run: `cargo bench --bench compare`, with `SOLVERGATE_BENCH_RUNTIME`
//! (default `/usr`), `SOLVERGATE_BENCH_SOLVER` (default `gecode`),
//! `SOLVERGATE_BENCH_PYTHON` (a Python with ortools for our CP-SAT runs,
//! default `.venv/bin/python`) and optionally `SOLVERGATE_BENCH_REFERENCE`
//! (e.g. `/work/refvenv/bin/openconstraint-mcp`; it is told the runtime
//! through `OPENCONSTRAINT_MCP_RUNTIME_DIR` and runs scripts on its own
//! interpreter).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{Client, median, ms, spread};
use serde_json::{Value, json};

const ROUNDS: usize = 12;
const TRIVIAL_MODEL: &str =
    "var 1..10: x; var 1..10: y;\nconstraint x + y <= 12;\nsolve maximize 2*x + y;\n";
const PRINTING_MODEL: &str =
    "array[1..6] of var 0..9: x;\nconstraint sum(x) < 40;\noutput [\"x = \\(x)\\n\"];\n";
const SCRIPT: &str = "from ortools.sat.python import cp_model\nimport json\nm = cp_model.CpModel()\nx = m.NewIntVar(0, 5, 'x')\nm.Maximize(x)\ns = cp_model.CpSolver()\ns.Solve(m)\nprint(json.dumps({'status': 'optimal', 'objective': s.ObjectiveValue(), 'solution': {'x': s.Value(x)}}))\n";
const ONE_MIB: usize = 1024 * 1024;

/// How to start one of the two servers.
struct Server {
    name: &'static str,
    program: PathBuf,
    args: Vec<String>,
    env: Vec<(String, String)>,
}

impl Server {
    fn start(&self, extra_env: &[(&str, &str)]) -> Client {
        let mut command = Command::new(&self.program);
        command
            .args(&self.args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .envs(extra_env.iter().copied());
        let mut client = Client::spawn(command);
        client.initialize();
        client
    }
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

fn structured(response: &Value) -> &Value {
    &response["result"]["structuredContent"]
}

fn text_len(response: &Value) -> usize {
    response["result"]["content"]
        .as_array()
        .map(|parts| {
            parts
                .iter()
                .filter_map(|part| part["text"].as_str())
                .map(str::len)
                .sum()
        })
        .unwrap_or(0)
}

fn main() {
    let Some(runtime) = common::runtime_with_minizinc() else {
        return;
    };
    let minizinc = runtime.join("bin/minizinc");
    let solver = std::env::var("SOLVERGATE_BENCH_SOLVER").unwrap_or_else(|_| "gecode".into());
    let python = std::path::absolute(
        std::env::var("SOLVERGATE_BENCH_PYTHON").unwrap_or_else(|_| ".venv/bin/python".into()),
    )
    .unwrap_or_default();
    let runtime_text = runtime.to_string_lossy().into_owned();
    let mut servers = vec![Server {
        name: "solvergate",
        program: PathBuf::from(env!("CARGO_BIN_EXE_solvergate")),
        args: vec![
            "--runtime-dir".into(),
            runtime_text.clone(),
            "stdio".into(),
            "--toolset".into(),
            "full".into(),
        ],
        env: vec![(
            "SOLVERGATE_CPSAT_PYTHON".into(),
            python.to_string_lossy().into_owned(),
        )],
    }];
    if let Ok(reference) = std::env::var("SOLVERGATE_BENCH_REFERENCE") {
        servers.push(Server {
            name: "reference",
            program: PathBuf::from(reference),
            args: vec!["stdio".into(), "--toolset".into(), "full".into()],
            env: vec![(
                "OPENCONSTRAINT_MCP_RUNTIME_DIR".into(),
                runtime_text.clone(),
            )],
        });
    }
    println!("load average at start: {}", load());
    println!("runtime {}, solver {solver}", runtime.display());
    let scratch = tempfile::tempdir().expect("temp dir");
    for server in &servers {
        println!("\n== {}", server.name);
        measure(server, &minizinc, &solver, scratch.path());
    }
    println!("\nload average at end: {}", load());
}

fn measure(server: &Server, minizinc: &Path, solver: &str, scratch: &Path) {
    // Cold start to a tools/list answer, and the list's size.
    let mut cold = Vec::new();
    let mut list_bytes = 0;
    let mut tool_count = 0;
    for _ in 0..ROUNDS {
        let started = Instant::now();
        let mut client = server.start(&[]);
        let tools = client.request("tools/list", json!({}));
        cold.push(started.elapsed());
        list_bytes = tools["result"].to_string().len();
        tool_count = tools["result"]["tools"].as_array().map_or(0, Vec::len);
    }
    println!("cold start to tools/list:       {}", spread(cold));
    println!("tools/list, full toolset:       {list_bytes} B ({tool_count} tools)");

    let mut client = server.start(&[]);
    std::thread::sleep(Duration::from_millis(500));
    let idle_rss = client.rss_kib();

    // Trivial solve overhead, paired with minizinc itself in one loop.
    let model = scratch.join("trivial.mzn");
    std::fs::write(&model, TRIVIAL_MODEL).expect("write model");
    let solver_id = structured(&client.call(
        "solve_minizinc_model",
        json!({"model": TRIVIAL_MODEL, "solver": solver}),
    ))["solver"]
        .as_str()
        .unwrap_or(solver)
        .to_owned();
    let direct = || {
        let started = Instant::now();
        let output = Command::new(minizinc)
            .args([
                "--json-stream",
                "--output-mode",
                "json",
                "--output-objective",
            ])
            .args([
                "--statistics",
                "--solver",
                &solver_id,
                "--time-limit",
                "30000",
            ])
            .arg(&model)
            .current_dir(scratch)
            .stdin(Stdio::null())
            .output()
            .expect("run minizinc");
        assert!(output.status.success());
        started.elapsed()
    };
    let (mut direct_runs, mut served, mut paired) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        let alone = direct();
        let started = Instant::now();
        let response = client.call(
            "solve_minizinc_model",
            json!({"model": TRIVIAL_MODEL, "solver": solver}),
        );
        let through = started.elapsed();
        assert_eq!(structured(&response)["status"], "optimal", "{response}");
        direct_runs.push(alone);
        served.push(through);
        paired.push(through.saturating_sub(alone));
    }
    println!("minizinc directly:              {}", spread(direct_runs));
    println!("solve_minizinc_model:           {}", spread(served));
    println!(
        "trivial-solve overhead, paired: median {:.2} ms",
        ms(median(paired))
    );

    // check_runtime after the first call.
    let first = Instant::now();
    client.call("check_runtime", json!({}));
    let first = first.elapsed();
    let mut checks = Vec::new();
    for _ in 0..ROUNDS {
        let started = Instant::now();
        client.call("check_runtime", json!({}));
        checks.push(started.elapsed());
    }
    println!("check_runtime, first call:      {:8.2} ms", ms(first));
    println!("check_runtime, later calls:     {}", spread(checks));

    // A trivial CP-SAT script: the default server, and ours without forkers.
    let mut cpsat_rows = vec![("default", &mut client)];
    let mut cold_client;
    if server.name == "solvergate" {
        cold_client = server.start(&[("SOLVERGATE_CPSAT_WARM", "0")]);
        cpsat_rows.push(("SOLVERGATE_CPSAT_WARM=0", &mut cold_client));
    }
    // Let warm forkers import OR-Tools first, as after a moment of use.
    for (_, client) in cpsat_rows.iter_mut() {
        client.call("run_cpsat_python", json!({"source": SCRIPT}));
    }
    std::thread::sleep(Duration::from_secs(3));
    for (label, client) in cpsat_rows {
        let mut runs = Vec::new();
        let mut status = Value::Null;
        for _ in 0..ROUNDS {
            let started = Instant::now();
            let response = client.call("run_cpsat_python", json!({"source": SCRIPT}));
            runs.push(started.elapsed());
            status = structured(&response)["status"].clone();
        }
        println!(
            "CP-SAT round trip, {label:<24} {} status {status}",
            spread(runs)
        );
    }

    // The output cap: solutions kept and the text part's size.
    let response = client.call(
        "solve_minizinc_model",
        json!({"model": PRINTING_MODEL, "solver": solver, "all_solutions": true, "timeout_ms": 60000}),
    );
    let result = structured(&response);
    let kept = result["solutions"].as_array().map_or(0, Vec::len);
    println!(
        "all_solutions under the cap:    {kept} solutions kept (truncated: {})",
        result["truncated"]
    );
    println!("text part of the capped result: {} B", text_len(&response));
    if server.name == "solvergate" {
        let before = solutions_in_first_mib(minizinc, &solver_id, scratch);
        println!(
            "  before the capture filter:    {before} solutions (whole lines in MiniZinc's first MiB)"
        );
    }
    println!(
        "RSS: idle {idle_rss} KiB, peak {} KiB",
        client.peak_rss_kib()
    );
}

/// The whole solution lines in the first MiB MiniZinc prints for the
/// printing model: what the cap held when it captured the stream as is.
fn solutions_in_first_mib(minizinc: &Path, solver: &str, scratch: &Path) -> usize {
    use std::io::Read;
    let model = scratch.join("printing.mzn");
    std::fs::write(&model, PRINTING_MODEL).expect("write model");
    let mut child = Command::new(minizinc)
        .args([
            "--json-stream",
            "--output-mode",
            "json",
            "--output-objective",
            "--statistics",
            "--all-solutions",
        ])
        .args(["--solver", solver])
        .arg(&model)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("run minizinc");
    let mut head = Vec::new();
    if let Some(stdout) = child.stdout.take() {
        let _ = stdout.take(ONE_MIB as u64).read_to_end(&mut head);
    }
    let _ = child.kill();
    let _ = child.wait();
    head.split(|byte| *byte == b'\n')
        .filter_map(|line| serde_json::from_slice::<Value>(line).ok())
        .filter(|message| message["type"] == "solution")
        .count()
}
