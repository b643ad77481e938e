//! Each case of the correction corpus (`tests/corpus/corrections.json`)
//! through `correct_values` over stdio, on one runtime: its status,
//! whether the changed fields are the ones a person would correct, and its
//! time (min / median / max of a few rounds, the server warm). Printed,
//! never asserted; the machine's load average before and after.
//!
//! Run: `cargo bench --bench corrections`, with `SOLVERGATE_BENCH_RUNTIME`
//! (default `/usr`; the Debian 13 runtime of `scripts/runtime-debian13` for
//! the other) and `SOLVERGATE_BENCH_ROUNDS` (default 3).

mod common;

use std::time::Instant;

use common::{Client, spread};
use serde_json::{Map, Value, json};

fn main() {
    let Some(runtime) = common::runtime_with_minizinc() else {
        return;
    };
    let rounds: usize = std::env::var("SOLVERGATE_BENCH_ROUNDS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(3)
        .max(1);
    let corpus: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/corpus/corrections.json"
        ))
        .expect("read the corpus"),
    )
    .expect("the corpus is JSON");
    let load = || std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("runtime {}; load {}", runtime.display(), load().trim());
    let mut client = Client::start(&runtime, &["--toolset", "full"], &[]);
    client.initialize();
    // The catalog and the first solve, not counted.
    client.call("list_available_solvers", json!({}));
    for case in corpus["cases"].as_array().expect("cases") {
        let name = case["name"].as_str().unwrap_or("?");
        let mut samples = Vec::new();
        let mut last = Value::Null;
        for _ in 0..rounds {
            let started = Instant::now();
            last = client.call("correct_values", case["request"].clone());
            samples.push(started.elapsed());
        }
        let result = &last["result"]["structuredContent"];
        let changed: Map<String, Value> = result["changed"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(field, change)| {
                (
                    field.clone(),
                    json!([change["observed"], change["corrected"]]),
                )
            })
            .collect();
        let expected = case["expect"]["changed"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        println!(
            "{name:34} {:10} {:8} {}{}",
            result["status"].as_str().unwrap_or("error"),
            if changed == expected {
                "expected"
            } else {
                "OTHER"
            },
            spread(samples),
            if case.get("open").is_some() {
                "  (open)"
            } else {
                ""
            }
        );
    }
    println!("load {}", load().trim());
}
