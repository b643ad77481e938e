//! The job registry under load and the portfolio's loser kill, as figures
//! (nothing is asserted on time):
//! - 500 submits pipelined at once against the 4 running / 16 queued caps:
//!   how many are admitted and refused;
//! - 10,000 `get_solve_job` polls while 4 jobs run: polls per second, and
//!   the server's RSS before and after;
//! - portfolio races of an easy and a hard formulation: time from the
//!   winner's verdict to the last loser process gone (target <= 100 ms);
//! - 64 finished jobs that each printed a few hundred kilobytes: the size of
//!   the `list_solve_jobs` answer (target < 64 KiB) beside one full
//!   `get_solve_job`, and how long after a poll first shows a job ended its
//!   full status is on disk (written off the job's path; target <= 2 ms);
//! - 10,000 `tasks/get` polls of an MCP task (protocol 2026-07-28, the
//!   tasks extension declared) while its solve runs: polls per second
//!   (target >= 10,000, as a job poll).
//!
//! Run: `cargo bench --bench jobs` (runtime at `SOLVERGATE_BENCH_RUNTIME`,
//! default `/usr`). Everything stays on loopback pipes and stops by itself.

mod common;

use std::time::{Duration, Instant, SystemTime};

use common::{Client, median, ms};
use serde_json::json;

const LONG_MODEL: &str = "int: n = 60; array[1..n] of var 1..n: q;\ninclude \"alldifferent.mzn\";\nconstraint alldifferent(q);\nconstraint alldifferent([q[i] + i | i in 1..n]);\nconstraint alldifferent([q[i] - i | i in 1..n]);\nsolve maximize sum(i in 1..n)(q[i] * q[i] * i);\n";
const EASY_MODEL: &str = "var 1..10: x; solve maximize x;\n";
const CHATTY_MODEL: &str =
    "array[1..8] of var 0..2: x;\nsolve satisfy;\noutput [show(x), \"\\n\"];\n";
const MARK: &str = "SOLVERGATE_BENCH_MARK";

/// Live processes started under the server (they inherit the marker).
fn marked_processes(mark: &str) -> usize {
    let needle = format!("{MARK}={mark}");
    std::fs::read_dir("/proc")
        .map(|entries| {
            entries
                .flatten()
                .filter(|entry| entry.file_name().to_string_lossy().parse::<u32>().is_ok())
                .filter(|entry| {
                    let comm =
                        std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
                    (comm.starts_with("minizinc") || comm.starts_with("fzn-"))
                        && std::fs::read(entry.path().join("environ"))
                            .map(|env| {
                                String::from_utf8_lossy(&env)
                                    .split('\0')
                                    .any(|var| var == needle)
                            })
                            .unwrap_or(false)
                })
                .count()
        })
        .unwrap_or(0)
}

fn main() {
    let Some(runtime) = common::runtime_with_minizinc() else {
        return;
    };
    let mark = format!("{}", std::process::id());
    let mut client = Client::start(&runtime, &["--toolset", "full"], &[(MARK, &mark)]);
    client.initialize();
    let rss_start = client.rss_kib();

    // 500 submits at once.
    let submit = json!({"name": "submit_solve_job", "arguments": {"model": LONG_MODEL, "timeout_ms": 60_000}});
    let started = Instant::now();
    for _ in 0..500 {
        client.send_request("tools/call", submit.clone());
    }
    let mut admitted = Vec::new();
    let mut refused = 0;
    for _ in 0..500 {
        let response = client.read_response();
        if response["result"]["isError"] == true {
            refused += 1;
        } else if let Some(id) = response["result"]["structuredContent"]["job_id"].as_str() {
            admitted.push(id.to_owned());
        }
    }
    let admission = started.elapsed();
    let rss_admitted = client.rss_kib();

    // 10,000 polls while the 4 admitted-and-running jobs solve.
    let running_id = admitted.first().cloned().unwrap_or_default();
    let poll = json!({"name": "get_solve_job", "arguments": {"job_id": running_id}});
    let polling = pipelined(&mut client, "tools/call", &poll);
    let rss_polled = client.rss_kib();
    for id in &admitted {
        client.call("cancel_solve_job", json!({"job_id": id}));
    }
    let left_after_cancel = marked_processes(&mark);

    // Portfolio races: an easy and a hard formulation, one solver.
    let mut kill_latencies = Vec::new();
    for _ in 0..10 {
        let submitted = client.call(
            "submit_portfolio_job",
            json!({"models": [EASY_MODEL, LONG_MODEL, LONG_MODEL], "solvers": ["gecode"], "per_attempt_timeout_ms": 60_000}),
        );
        let job_id = submitted["result"]["structuredContent"]["job_id"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let attempts: Vec<String> = submitted["result"]["structuredContent"]["attempt_job_ids"]
            .as_array()
            .map(|ids| {
                ids.iter()
                    .filter_map(|id| id.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        // Watch /proc until the hard attempts' processes are gone.
        let watch_started = Instant::now();
        let mut seen = false;
        let gone_at = loop {
            let alive = marked_processes(&mark);
            seen |= alive > 0;
            if seen && alive == 0 {
                break SystemTime::now();
            }
            if watch_started.elapsed() > Duration::from_secs(60) {
                break SystemTime::now();
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        let winner = client.call("get_solve_job", json!({"job_id": attempts[0]}));
        let verdict_at = winner["result"]["structuredContent"]["finished_at"]
            .as_str()
            .and_then(|text| humantime::parse_rfc3339(text).ok());
        if let Some(verdict_at) = verdict_at {
            kill_latencies.push(gone_at.duration_since(verdict_at).unwrap_or(Duration::ZERO));
        }
        client.call("get_portfolio_job", json!({"job_id": job_id}));
    }

    let (list_bytes, one_bytes, kept) = list_sizes(&runtime, &mark);
    let task_polling = task_polls(&runtime, &mark);

    println!(
        "500 submits at once: {} admitted, {refused} refused (caps 4 running + 16 queued) in {:.1} ms",
        admitted.len(),
        ms(admission)
    );
    println!(
        "10,000 get_solve_job polls with 4 jobs running: {:.0} polls/s ({:.2} s)",
        10_000.0 / polling.as_secs_f64(),
        polling.as_secs_f64()
    );
    if let Some(task_polling) = task_polling {
        println!(
            "10,000 tasks/get polls of a running task: {:.0} polls/s ({:.2} s; target >= 10,000)",
            10_000.0 / task_polling.as_secs_f64(),
            task_polling.as_secs_f64()
        );
    }
    println!(
        "server RSS: {rss_start} KiB at start, {rss_admitted} KiB with 20 jobs admitted, {rss_polled} KiB after the polls"
    );
    println!("solver processes left after cancelling every job: {left_after_cancel}");
    if !kill_latencies.is_empty() {
        let worst = kill_latencies.iter().max().copied().unwrap_or_default();
        println!(
            "portfolio: winner's verdict to last loser process gone: median {:.1} ms, worst {:.1} ms over {} races (target <= 100 ms)",
            ms(median(kill_latencies)),
            ms(worst),
            10
        );
    }
    println!(
        "list_solve_jobs with 64 finished jobs: {list_bytes} bytes (target < 65536); one get_solve_job of them: {one_bytes} bytes"
    );
    if !kept.is_empty() {
        let worst = kept.iter().max().copied().unwrap_or_default();
        println!(
            "a finished job's status on disk after a poll first shows it ended: median {:.2} ms, worst {:.2} ms over {} jobs (target <= 2 ms)",
            ms(median(kept.clone())),
            ms(worst),
            kept.len()
        );
    }
}

/// How long 10,000 `method` requests with `params` take, sent 100 at a
/// time before their answers are read.
fn pipelined(client: &mut Client, method: &str, params: &serde_json::Value) -> Duration {
    let started = Instant::now();
    for _ in 0..100 {
        for _ in 0..100 {
            client.send_request(method, params.clone());
        }
        for _ in 0..100 {
            client.read_response();
        }
    }
    started.elapsed()
}

/// How long 10,000 `tasks/get` polls of a running task take, pipelined
/// 100 at a time like the job polls; `None` when no task was made.
fn task_polls(runtime: &std::path::Path, mark: &str) -> Option<Duration> {
    let mut client = Client::start(runtime, &["--toolset", "full"], &[(MARK, mark)]);
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
    });
    let created = client.request(
        "tools/call",
        json!({"name": "solve_minizinc_model", "arguments": {"model": LONG_MODEL, "timeout_ms": 60_000}, "_meta": meta}),
    );
    let task_id = created["result"]["taskId"].as_str()?.to_owned();
    let poll = json!({"taskId": task_id, "_meta": meta});
    let polling = pipelined(&mut client, "tasks/get", &poll);
    client.request("tasks/cancel", poll);
    Some(polling)
}

/// Sizes of the list answer with 64 finished chatty jobs retained, and of
/// one full job; and for each job, how long after a poll first showed it
/// ended its done file appeared (the server keeps jobs in a data dir of
/// the bench's own).
fn list_sizes(runtime: &std::path::Path, mark: &str) -> (usize, usize, Vec<Duration>) {
    let data = tempfile::tempdir().expect("a data dir");
    let data_dir = data.path().to_string_lossy().into_owned();
    let done = data.path().join("solvergate/jobs/solve/done");
    let mut client = Client::start(
        runtime,
        &["--toolset", "full"],
        &[
            (MARK, mark),
            ("SOLVERGATE_MAX_QUEUED_JOBS", "60"),
            ("XDG_DATA_HOME", &data_dir),
        ],
    );
    client.initialize();
    let submit = json!({"model": CHATTY_MODEL, "solver": "gecode", "all_solutions": true, "timeout_ms": 60_000});
    let ids: Vec<String> = (0..64)
        .filter_map(|_| {
            let reply = client.call("submit_solve_job", submit.clone());
            reply["result"]["structuredContent"]["job_id"]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    let mut one_bytes = 0;
    let mut kept = Vec::new();
    for id in &ids {
        loop {
            let job = client.call("get_solve_job", json!({"job_id": id}));
            let state = job["result"]["structuredContent"]["state"]
                .as_str()
                .unwrap_or("failed")
                .to_owned();
            if !matches!(state.as_str(), "queued" | "running") {
                let ended = Instant::now();
                let file = done.join(format!("{id}.json"));
                while !file.exists() && ended.elapsed() < Duration::from_secs(5) {
                    std::thread::sleep(Duration::from_micros(100));
                }
                kept.push(ended.elapsed());
                one_bytes = job.to_string().len();
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    let list = client.call("list_solve_jobs", json!({}));
    (list.to_string().len(), one_bytes, kept)
}
