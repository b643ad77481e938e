//! Load against the caps, as figures (the exact counts and the absence of
//! leaks are asserted by `tests/mcp/test_load.py`; nothing here is):
//! - 100 synchronous `solve_minizinc_model` calls pipelined at once on one
//!   session, three rounds: answers and their statuses, wall time, and the
//!   server's RSS and open descriptors after each round (flat, or not);
//! - 500 `submit_solve_job` calls pipelined at once against the default
//!   caps (4 running + 16 queued): admitted and refused, RSS with the jobs
//!   held, then every admitted job cancelled;
//! - what is left after each part: solver processes carrying this run's
//!   marker, entries in the server's scratch roots, descriptors;
//! - and after the server is SIGKILLed: processes and scratch roots left
//!   once its watchdog has cleaned up.
//!
//! Run: `cargo bench --bench load` (runtime at `SOLVERGATE_BENCH_RUNTIME`,
//! default `/usr`). Everything stays on loopback pipes and stops by itself
//! (a few minutes on two cores).

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{Client, ms};
use serde_json::{Value, json};

const MODEL: &str =
    "var 1..10: x; var 1..10: y;\nconstraint x + y <= 12;\nsolve maximize 2*x + y;\n";
/// `tests/mcp/helpers.py`'s `HARD_MODEL`: no answer within a minute on
/// Gecode, so every admitted job is still running or queued at the count.
const HARD_MODEL: &str = "int: n = 60; array[1..n] of var 1..n: q;\ninclude \"alldifferent.mzn\";\nconstraint alldifferent(q);\nconstraint alldifferent([q[i] + i | i in 1..n]);\nconstraint alldifferent([q[i] - i | i in 1..n]);\nconstraint sum(i in 1..n)(q[i] * i) mod 7 = 3;\nsolve maximize sum(i in 1..n)(q[i] * q[i] * i);\n";
const MARK: &str = "SOLVERGATE_BENCH_MARK";
const SYNC_CALLS: usize = 100;
const SYNC_ROUNDS: usize = 3;
const SUBMITS: usize = 500;

/// Processes other than the server and its watchdog that carry `mark`
/// (the server's children inherit it): `(pid, comm)`.
fn marked_children(mark: &str, server: u32) -> Vec<(u32, String)> {
    marked_processes(mark)
        .into_iter()
        .filter(|(pid, _, watchdog)| *pid != server && !watchdog)
        .map(|(pid, comm, _)| (pid, comm))
        .collect()
}

/// Every process that carries `mark`: `(pid, comm, is the watchdog)`.
fn marked_processes(mark: &str) -> Vec<(u32, String, bool)> {
    let needle = format!("{MARK}={mark}");
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_string_lossy().parse().ok()?;
            let environ = std::fs::read(entry.path().join("environ")).ok()?;
            let marked = String::from_utf8_lossy(&environ)
                .split('\0')
                .any(|var| var == needle);
            let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            let watchdog = String::from_utf8_lossy(&cmdline).contains("__watchdog");
            let comm = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
            marked.then(|| (pid, comm.trim().to_owned(), watchdog))
        })
        .collect()
}

/// The server's scratch roots (`$TMPDIR/solvergate-run-<pid>-*`).
fn scratch_roots(server: u32) -> Vec<PathBuf> {
    let prefix = format!("solvergate-run-{server}-");
    std::fs::read_dir(std::env::temp_dir())
        .map(|entries| {
            entries
                .flatten()
                .filter(|entry| entry.file_name().to_string_lossy().starts_with(&prefix))
                .map(|entry| entry.path())
                .collect()
        })
        .unwrap_or_default()
}

/// Entries in the server's scratch roots besides their `owner` files: the
/// runs' temp dirs still there.
fn scratch_entries(server: u32) -> usize {
    scratch_roots(server)
        .iter()
        .filter_map(|root| std::fs::read_dir(root).ok())
        .flat_map(|entries| entries.flatten())
        .filter(|entry| entry.file_name() != "owner")
        .count()
}

fn descriptors(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |entries| entries.count())
}

/// Waits (up to 10 s) until no marked child is left; returns those left.
fn settled_children(mark: &str, server: u32) -> Vec<(u32, String)> {
    let started = Instant::now();
    loop {
        let left = marked_children(mark, server);
        if left.is_empty() || started.elapsed() > Duration::from_secs(10) {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn describe(children: &[(u32, String)]) -> String {
    if children.is_empty() {
        return "0".to_owned();
    }
    let names: Vec<String> = children
        .iter()
        .map(|(pid, comm)| format!("{comm}[{pid}]"))
        .collect();
    format!("{} ({})", children.len(), names.join(", "))
}

fn is_error(response: &Value) -> bool {
    response.get("error").is_some() || response["result"]["isError"] == true
}

fn main() {
    let Some(runtime) = common::runtime_with_minizinc() else {
        return;
    };
    let mark = std::process::id().to_string();
    synchronous_calls(&runtime, &mark);
    job_submits(&runtime, &format!("{mark}-jobs"));
}

fn synchronous_calls(runtime: &Path, mark: &str) {
    let mut client = Client::start(runtime, &["--toolset", "core"], &[(MARK, mark)]);
    client.initialize();
    let server = client.child_pid;
    let (rss_start, fds_start) = (client.rss_kib(), descriptors(server));
    println!(
        "{SYNC_CALLS} synchronous solve_minizinc_model calls at once, {SYNC_ROUNDS} rounds (server pid {server}):"
    );
    println!("  start: RSS {rss_start} KiB, {fds_start} descriptors");
    let call = json!({"name": "solve_minizinc_model", "arguments": {"model": MODEL}});
    for round in 1..=SYNC_ROUNDS {
        let started = Instant::now();
        for _ in 0..SYNC_CALLS {
            client.send_request("tools/call", call.clone());
        }
        let mut statuses = std::collections::BTreeMap::<String, usize>::new();
        let mut errors = 0;
        for _ in 0..SYNC_CALLS {
            let response = client.read_response();
            if is_error(&response) {
                errors += 1;
                continue;
            }
            let status = response["result"]["structuredContent"]["status"]
                .as_str()
                .unwrap_or("(none)")
                .to_owned();
            *statuses.entry(status).or_default() += 1;
        }
        let elapsed = started.elapsed();
        let children = settled_children(mark, server);
        println!(
            "  round {round}: {} answered ({statuses:?}, {errors} errors) in {:.0} ms; RSS {} KiB, {} descriptors, children left {}, scratch entries left {}",
            statuses.values().sum::<usize>() + errors,
            ms(elapsed),
            client.rss_kib(),
            descriptors(server),
            describe(&children),
            scratch_entries(server),
        );
    }
    after_sigkill(client, mark, server);
}

fn job_submits(runtime: &Path, mark: &str) {
    let mut client = Client::start(runtime, &["--toolset", "full"], &[(MARK, mark)]);
    client.initialize();
    let server = client.child_pid;
    let (rss_start, fds_start) = (client.rss_kib(), descriptors(server));
    println!(
        "{SUBMITS} submit_solve_job calls at once against the caps (4 running + 16 queued) (server pid {server}):"
    );
    println!("  start: RSS {rss_start} KiB, {fds_start} descriptors");
    let submit = json!({"name": "submit_solve_job", "arguments": {"model": HARD_MODEL, "timeout_ms": 60_000}});
    let started = Instant::now();
    for _ in 0..SUBMITS {
        client.send_request("tools/call", submit.clone());
    }
    let mut admitted = Vec::new();
    let mut refused = 0;
    for _ in 0..SUBMITS {
        let response = client.read_response();
        match response["result"]["structuredContent"]["job_id"].as_str() {
            Some(id) if !is_error(&response) => admitted.push(id.to_owned()),
            _ => refused += 1,
        }
    }
    let admission = started.elapsed();
    let listed = client.call("list_solve_jobs", json!({}));
    let states: Vec<&str> = listed["result"]["structuredContent"]["jobs"]
        .as_array()
        .map(|jobs| {
            jobs.iter()
                .filter_map(|job| job["state"].as_str())
                .collect()
        })
        .unwrap_or_default();
    let count = |state: &str| states.iter().filter(|s| **s == state).count();
    println!(
        "  admission: {} admitted, {refused} refused in {:.0} ms; listed {} running, {} queued; RSS {} KiB, {} descriptors, {} solver processes",
        admitted.len(),
        ms(admission),
        count("running"),
        count("queued"),
        client.rss_kib(),
        descriptors(server),
        marked_children(mark, server).len(),
    );
    let started = Instant::now();
    let mut cancelled = 0;
    for id in &admitted {
        let answer = client.call("cancel_solve_job", json!({"job_id": id}));
        cancelled += usize::from(answer["result"]["structuredContent"]["state"] == "cancelled");
    }
    let cancelling = started.elapsed();
    let children = settled_children(mark, server);
    println!(
        "  cancel: {cancelled} of {} cancelled in {:.0} ms; RSS {} KiB, {} descriptors, children left {}, scratch entries left {}",
        admitted.len(),
        ms(cancelling),
        client.rss_kib(),
        descriptors(server),
        describe(&children),
        scratch_entries(server),
    );
    after_sigkill(client, mark, server);
}

/// SIGKILLs the server (the client's drop) and reports what its watchdog
/// left behind once it is done (the watchdog itself included).
fn after_sigkill(client: Client, mark: &str, server: u32) {
    drop(client);
    let started = Instant::now();
    let children = loop {
        let children: Vec<(u32, String)> = marked_processes(mark)
            .into_iter()
            .map(|(pid, comm, _)| (pid, comm))
            .collect();
        let done = children.is_empty() && scratch_roots(server).is_empty();
        if done || started.elapsed() > Duration::from_secs(10) {
            break children;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    println!(
        "  after SIGKILL of the server: processes left {}, scratch roots left {} ({:.0} ms to clean)",
        describe(&children),
        scratch_roots(server).len(),
        ms(started.elapsed()),
    );
}
