//! What solvergate costs on top of MiniZinc, printed as figures (not
//! asserted): the median round trip of `solve_minizinc_model` through MCP
//! beside the median of the same model run by invoking `minizinc` directly,
//! the cold start to a `tools/list` answer, and the server's idle RSS.
//!
//! Run: `cargo bench --bench overhead` (needs the runtime at
//! `SOLVERGATE_BENCH_RUNTIME`, default `/usr`). Targets: overhead ≤ 5 ms,
//! cold start ≤ 20 ms.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const MODEL: &str =
    "var 1..10: x; var 1..10: y;\nconstraint x + y <= 12;\nsolve maximize 2*x + y;\n";
const ROUNDS: usize = 30;

/// A minimal JSON-RPC client over the server's stdio.
struct Client {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Client {
    fn start(runtime: &Path) -> Client {
        let mut child = Command::new(env!("CARGO_BIN_EXE_solvergate"))
            .args(["stdio", "--runtime-dir"])
            .arg(runtime)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start solvergate");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        Client {
            child,
            stdin,
            stdout,
            next_id: 1,
        }
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").expect("write");
        self.stdin.flush().expect("flush");
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let mut line = String::new();
        loop {
            line.clear();
            assert!(
                self.stdout.read_line(&mut line).expect("read") > 0,
                "server closed"
            );
            let message: Value = serde_json::from_str(&line).expect("json");
            if message["id"] == id {
                return message;
            }
        }
    }

    fn initialize(&mut self) {
        self.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "bench", "version": "0"}}),
        );
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    }

    fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn main() {
    let runtime =
        PathBuf::from(std::env::var("SOLVERGATE_BENCH_RUNTIME").unwrap_or_else(|_| "/usr".into()));
    let minizinc = runtime.join("bin/minizinc");
    if !minizinc.exists() {
        eprintln!(
            "no MiniZinc at {}; set SOLVERGATE_BENCH_RUNTIME",
            minizinc.display()
        );
        return;
    }
    let scratch = tempfile::tempdir().expect("temp dir");
    let model = scratch.path().join("model.mzn");
    std::fs::write(&model, MODEL).expect("write model");

    // Same solver and flags the server uses for a solve.
    let mut client = Client::start(&runtime);
    client.initialize();
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
    let idle_rss = client.rss_kib();
    drop(client);

    let mut cold = Vec::new();
    for _ in 0..20 {
        let started = Instant::now();
        let mut fresh = Client::start(&runtime);
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
    println!("server RSS after the solves:       {idle_rss} KiB");
}
