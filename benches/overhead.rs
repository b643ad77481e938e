//! What solvergate costs on top of MiniZinc, printed as figures (not
//! asserted): the median round trip of `solve_minizinc_model` through MCP
//! beside the median of the same model run by invoking `minizinc` directly,
//! the cold start to a `tools/list` answer, and the server's idle RSS.
//!
//! Run: `cargo bench --bench overhead` (needs the runtime at
//! `SOLVERGATE_BENCH_RUNTIME`, default `/usr`). Targets: overhead ≤ 5 ms,
//! cold start ≤ 20 ms.

mod common;

use std::process::{Command, Stdio};
use std::time::Instant;

use common::{Client, median, ms};
use serde_json::json;

const MODEL: &str =
    "var 1..10: x; var 1..10: y;\nconstraint x + y <= 12;\nsolve maximize 2*x + y;\n";
const ROUNDS: usize = 30;

fn main() {
    let Some(runtime) = common::runtime_with_minizinc() else {
        return;
    };
    let minizinc = runtime.join("bin/minizinc");
    let scratch = tempfile::tempdir().expect("temp dir");
    let model = scratch.path().join("model.mzn");
    std::fs::write(&model, MODEL).expect("write model");

    // Same solver and flags the server uses for a solve.
    let mut client = Client::start(&runtime, &[], &[]);
    client.initialize();
    let idle_rss = client.rss_kib();
    let catalog = client.request(
        "tools/call",
        json!({"name": "list_available_solvers", "arguments": {}}),
    );
    let solver = catalog["result"]["structuredContent"]["default_solver"]
        .as_str()
        .expect("a default solver")
        .to_owned();

    let direct = |_: usize| {
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
    let mut through_mcp = |_: usize| {
        let started = Instant::now();
        let response = client.request(
            "tools/call",
            json!({"name": "solve_minizinc_model", "arguments": {"model": MODEL, "solver": solver}}),
        );
        let elapsed = started.elapsed();
        assert_eq!(response["result"]["structuredContent"]["status"], "optimal");
        elapsed
    };
    // Warm both paths (page cache, catalog), then interleave the samples so
    // machine noise hits both alike.
    direct(0);
    through_mcp(0);
    let mut direct_samples = Vec::new();
    let mut mcp_samples = Vec::new();
    for round in 0..ROUNDS {
        direct_samples.push(direct(round));
        mcp_samples.push(through_mcp(round));
    }
    let direct_median = median(direct_samples);
    let mcp_median = median(mcp_samples);
    let busy_rss = client.rss_kib();
    drop(client);

    let mut cold = Vec::new();
    for _ in 0..20 {
        let started = Instant::now();
        let mut fresh = Client::start(&runtime, &[], &[]);
        fresh.initialize();
        let tools = fresh.request("tools/list", json!({}));
        cold.push(started.elapsed());
        assert!(tools["result"]["tools"].is_array());
    }

    println!("solver: {solver}, {ROUNDS} rounds each");
    println!(
        "minizinc directly:          median {:8.2} ms",
        ms(direct_median)
    );
    println!(
        "solve_minizinc_model (MCP): median {:8.2} ms",
        ms(mcp_median)
    );
    println!(
        "overhead:                          {:8.2} ms (target <= 5 ms)",
        ms(mcp_median) - ms(direct_median)
    );
    println!(
        "cold start to tools/list:   median {:8.2} ms (target <= 20 ms)",
        ms(median(cold))
    );
    println!("server RSS idle after start-up:    {idle_rss} KiB");
    println!("server RSS after the solves:       {busy_rss} KiB");
}
