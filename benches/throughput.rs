//! Throughput under load, as figures (not asserted): 64 clients over
//! Streamable HTTP on loopback, each with a session of its own, each
//! making 10 trivial `solve_minizinc_model` calls one after another, all
//! clients at once; beside the same 640 solves run straight through
//! `minizinc`, four at a time (the floor on two cores). Prints solves per
//! second for both and their ratio, the calls' p50 / p99, failed calls and
//! the server's peak RSS.
//!
//! Run: `cargo bench --bench throughput` (runtime at
//! `SOLVERGATE_BENCH_RUNTIME`, default `/usr`; `SOLVERGATE_BENCH_BIN`
//! measures another build; `SOLVERGATE_BENCH_CLIENTS` and
//! `SOLVERGATE_BENCH_CALLS` change the load). Target (issue 42, this
//! machine): at least 90% of the floor, no failed call.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const MODEL: &str = "var 1..3: x;\nsolve satisfy;\n";

fn count(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

/// The JSON-RPC message of `id` in a response body (plain JSON or SSE).
fn message_of(body: &str, id: u64) -> Option<Value> {
    let candidates = body
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(str::trim)
        .chain(std::iter::once(body.trim()));
    candidates
        .filter_map(|text| serde_json::from_str::<Value>(text).ok())
        .find(|message| message["id"] == id)
}

struct Session {
    http: reqwest::Client,
    url: String,
    id: String,
    next: u64,
}

impl Session {
    async fn open(http: reqwest::Client, url: String) -> Result<Session, String> {
        let reply = http
            .post(&url)
            .header("Accept", "application/json, text/event-stream")
            .header("Content-Type", "application/json")
            .body(
                json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "throughput", "version": "0"}}})
                .to_string(),
            )
            .send()
            .await
            .map_err(|error| error.to_string())?;
        let id = reply
            .headers()
            .get("mcp-session-id")
            .and_then(|value| value.to_str().ok())
            .ok_or("no session id")?
            .to_owned();
        reply.text().await.map_err(|error| error.to_string())?;
        let mut session = Session {
            http,
            url,
            id,
            next: 1,
        };
        session
            .post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await?;
        Ok(session)
    }

    async fn post(&mut self, message: Value) -> Result<String, String> {
        let reply = self
            .http
            .post(&self.url)
            .header("Accept", "application/json, text/event-stream")
            .header("Mcp-Session-Id", &self.id)
            .header("Mcp-Protocol-Version", "2025-06-18")
            .header("Content-Type", "application/json")
            .body(message.to_string())
            .send()
            .await
            .map_err(|error| error.to_string())?;
        let status = reply.status();
        let body = reply.text().await.map_err(|error| error.to_string())?;
        match status.is_success() {
            true => Ok(body),
            false => Err(format!("HTTP {status}: {body}")),
        }
    }

    async fn solve(&mut self) -> Result<(), String> {
        let id = self.next;
        self.next += 1;
        let body = self
            .post(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "solve_minizinc_model", "arguments": {"model": MODEL}}}))
            .await?;
        let message = message_of(&body, id).ok_or_else(|| format!("no answer in {body}"))?;
        match message["result"]["structuredContent"]["status"].as_str() {
            Some("satisfied") => Ok(()),
            _ => Err(format!("not satisfied: {message}")),
        }
    }
}

fn percentile(sorted: &[Duration], share: f64) -> f64 {
    let index = ((sorted.len() as f64 - 1.0) * share).round() as usize;
    common::ms(sorted[index])
}

fn main() {
    let Some(runtime) = common::runtime_with_minizinc() else {
        return;
    };
    let clients = count("SOLVERGATE_BENCH_CLIENTS", 64);
    let calls = count("SOLVERGATE_BENCH_CALLS", 10);
    let solves = clients * calls;
    let _ = rustls::crypto::ring::default_provider().install_default();

    // The floor: the same solves straight through minizinc, four at a time.
    let minizinc = runtime.join("bin/minizinc");
    let scratch = tempfile::tempdir().expect("temp dir");
    let model = scratch.path().join("model.mzn");
    std::fs::write(&model, MODEL).expect("write model");
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let (next, minizinc, model) = (next.clone(), minizinc.clone(), model.clone());
            std::thread::spawn(move || {
                while next.fetch_add(1, Ordering::Relaxed) < solves {
                    let status = Command::new(&minizinc)
                        .args(["--json-stream", "--output-mode", "json", "--statistics"])
                        .arg(&model)
                        .stdin(Stdio::null())
                        .stdout(Stdio::null())
                        .stderr(Stdio::null())
                        .status()
                        .expect("run minizinc");
                    assert!(status.success());
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().expect("a worker");
    }
    let floor = solves as f64 / started.elapsed().as_secs_f64();

    let mut server = Command::new(common::binary())
        .arg("--runtime-dir")
        .arg(&runtime)
        .args(["serve", "--http", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the server");
    let stderr = server.stderr.take().expect("stderr");
    let mut lines = BufReader::new(stderr).lines();
    let url = loop {
        let line = lines
            .next()
            .expect("the server says where it listens")
            .expect("stderr");
        if let Some(at) = line.find("http://") {
            let url = line[at..].split_whitespace().next().unwrap_or_default();
            break url.trim_end_matches(['.', ',']).to_owned();
        }
    };
    // Keep reading stderr so the server never blocks on it.
    std::thread::spawn(move || for _ in lines {});
    let server_pid = server.id();

    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let (elapsed, mut latencies, failures) = tokio.block_on(async {
        let http = reqwest::Client::builder()
            .pool_max_idle_per_host(clients)
            .timeout(Duration::from_secs(300))
            .build()
            .expect("an HTTP client");
        let mut sessions = Vec::new();
        for _ in 0..clients {
            sessions.push(
                Session::open(http.clone(), url.clone())
                    .await
                    .expect("a session"),
            );
        }
        let started = Instant::now();
        let tasks: Vec<_> = sessions
            .into_iter()
            .map(|mut session| {
                tokio::spawn(async move {
                    let mut results = Vec::new();
                    for _ in 0..calls {
                        let call = Instant::now();
                        let outcome = session.solve().await;
                        results.push((call.elapsed(), outcome));
                    }
                    results
                })
            })
            .collect();
        let (mut latencies, mut failures) = (Vec::new(), Vec::new());
        for task in tasks {
            for (latency, outcome) in task.await.expect("a client") {
                latencies.push(latency);
                if let Err(why) = outcome {
                    failures.push(why);
                }
            }
        }
        (started.elapsed(), latencies, failures)
    });
    let peak_rss = std::fs::read_to_string(format!("/proc/{server_pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|line| {
            line.strip_prefix("VmHWM:")
                .map(|value| value.trim().to_owned())
        })
        .unwrap_or_default();
    let _ = server.kill();
    let _ = server.wait();

    latencies.sort();
    let ours = solves as f64 / elapsed.as_secs_f64();
    println!("server: {}", common::binary().display());
    println!(
        "{clients} HTTP clients x {calls} trivial solves: {ours:6.1} solves/s (p50 {:.0} ms, p99 {:.0} ms), {} failed, server peak RSS {peak_rss}",
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99),
        failures.len()
    );
    println!("minizinc directly, 4 at a time: {floor:6.1} solves/s");
    println!("ours / floor: {:.0}% (target >= 90%)", 100.0 * ours / floor);
    for why in failures.iter().take(3) {
        println!("  failed: {why}");
    }
}
