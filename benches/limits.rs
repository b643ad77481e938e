//! What resource limits cost a trivial solve, printed as figures (not
//! asserted): the same model solved through MCP by servers that differ only
//! in `SOLVERGATE_LIMITS` (`off`, `rlimit`, `auto` — a cgroup per run where
//! the host allows one), the rounds interleaved so machine noise hits all
//! alike, and the paired difference against `off` (its median). The sandbox
//! is on in every server, as by default, so the trampoline's own exec is in
//! all three and the difference is the limits alone.
//!
//! Run: `cargo bench --bench limits` (needs the runtime at
//! `SOLVERGATE_BENCH_RUNTIME`, default `/usr`). Target: ≤ 1 ms per solve.

mod common;

use std::time::{Duration, Instant};

use common::{Client, median, ms, spread};
use serde_json::json;

const MODEL: &str =
    "var 1..10: x; var 1..10: y;\nconstraint x + y <= 12;\nsolve maximize 2*x + y;\n";
const ROUNDS: usize = 40;
const MODES: [&str; 3] = ["off", "rlimit", "auto"];

fn main() {
    let Some(runtime) = common::runtime_with_minizinc() else {
        return;
    };
    let mut clients: Vec<Client> = MODES
        .iter()
        .map(|mode| {
            let mut client = Client::start(&runtime, &[], &[("SOLVERGATE_LIMITS", mode)]);
            client.initialize();
            client
        })
        .collect();
    let solve = |client: &mut Client| {
        let started = Instant::now();
        let response = client.call("solve_minizinc_model", json!({"model": MODEL}));
        let elapsed = started.elapsed();
        assert_eq!(response["result"]["structuredContent"]["status"], "optimal");
        elapsed
    };
    for client in &mut clients {
        solve(client);
    }
    let mut samples: Vec<Vec<Duration>> = vec![Vec::new(); MODES.len()];
    for _ in 0..ROUNDS {
        for (index, client) in clients.iter_mut().enumerate() {
            samples[index].push(solve(client));
        }
    }
    println!("trivial solve through MCP, {ROUNDS} interleaved rounds, sandbox on");
    for (mode, times) in MODES.iter().zip(&samples) {
        println!(
            "SOLVERGATE_LIMITS={mode:<7} min / median / max {}",
            spread(times.clone())
        );
    }
    for (index, mode) in MODES.iter().enumerate().skip(1) {
        let paired: Vec<f64> = samples[index]
            .iter()
            .zip(&samples[0])
            .map(|(with, without)| ms(*with) - ms(*without))
            .collect();
        let mut sorted = paired.clone();
        sorted.sort_by(f64::total_cmp);
        println!(
            "cost of {mode:<7} over off: paired median {:6.2} ms (target <= 1 ms); medians {:.2} vs {:.2} ms",
            sorted[sorted.len() / 2],
            ms(median(samples[index].clone())),
            ms(median(samples[0].clone())),
        );
    }
}
