//! What the sandbox's read boundary costs a run: the same confined run
//! with reads confined (as every server runs) and with reads unhandled (as
//! before the boundary), paired in rotating order, through the executor
//! itself. Two runs: a trivial MiniZinc solve (its compiler opens some 700
//! files of its library, each walked up to a rule) and a cold Python that
//! imports OR-Tools' CP-SAT API (a thousand-odd files).
//!
//!   cargo bench --bench reads
//!   SOLVERGATE_BENCH_ROUNDS=60 cargo bench --bench reads
//!
//! `SOLVERGATE_TEST_RUNTIME` names the MiniZinc root (default /usr) and
//! `SOLVERGATE_TEST_PYTHON` the interpreter with `ortools` (default
//! `.venv/bin/python`). Prints medians in milliseconds; no assertion.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use solvergate::exec::{self, ChildCommand, Limits};
use tokio_util::sync::CancellationToken;

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

async fn timed(command: &ChildCommand) -> f64 {
    let started = Instant::now();
    let run = exec::run(
        command,
        Limits::new(Duration::from_secs(60)),
        &CancellationToken::new(),
    )
    .await
    .expect("the run starts");
    assert_eq!(run.return_code, Some(0), "{}", run.stderr);
    started.elapsed().as_secs_f64() * 1000.0
}

/// Rounds of the pair, alternating which half goes first.
async fn paired(name: &str, command: &ChildCommand, rounds: usize) {
    // One of each first: caches warm, the interpreter's roots known.
    for without in [false, true] {
        exec::reads::bench_without_boundary(without);
        timed(command).await;
    }
    let (mut bounded, mut open, mut differences) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        let mut pair = [0.0; 2];
        for step in 0..2 {
            let without = (round + step) % 2 == 1;
            exec::reads::bench_without_boundary(without);
            pair[usize::from(without)] = timed(command).await;
        }
        bounded.push(pair[0]);
        open.push(pair[1]);
        differences.push(pair[0] - pair[1]);
    }
    exec::reads::bench_without_boundary(false);
    println!(
        "{name:<34} reads confined {:>7.2} ms   reads open {:>7.2} ms   boundary {:>+6.2} ms (paired median, {rounds} rounds)",
        median(bounded),
        median(open),
        median(differences)
    );
}

fn main() {
    let rounds = std::env::var("SOLVERGATE_BENCH_ROUNDS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(30);
    let runtime = PathBuf::from(
        std::env::var("SOLVERGATE_TEST_RUNTIME").unwrap_or_else(|_| "/usr".to_owned()),
    );
    let python = PathBuf::from(
        std::env::var("SOLVERGATE_TEST_PYTHON").unwrap_or_else(|_| ".venv/bin/python".to_owned()),
    );
    // No `watchdog::enable()` here: it starts this executable again as
    // the watchdog, which a bench binary is not.
    let support = exec::confine::probe_sandbox();
    if support.reads != "enforced" {
        println!(
            "the read boundary is not enforced on this kernel ({support:?}): nothing to measure"
        );
        return;
    }
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    tokio.block_on(async {
        let scratch = tempfile::tempdir().expect("a temp dir");
        let model = scratch.path().join("trivial.mzn");
        std::fs::write(&model, "var 1..3: x;\nsolve satisfy;\n").expect("the model");
        // As the server would: the runtime's tree readable, the model named.
        exec::reads::allow([runtime.as_path()]);
        let solve = ChildCommand::new(runtime.join("bin/minizinc"))
            .args(["--solver", "gecode"])
            .arg(&model)
            .reads_beside(&model);
        paired("minizinc, trivial solve", &solve, rounds).await;

        let probed =
            solvergate::runtime::cpsat::probe_python(&python, &CancellationToken::new()).await;
        match probed {
            Ok(_) => {
                let import = ChildCommand::new(&python)
                    .args(["-c", "import ortools.sat.python.cp_model"])
                    .scratch_home();
                paired("python, import cp_model (cold)", &import, rounds).await;
            }
            Err(error) => println!("python, import cp_model: not measured ({error})"),
        }
    });
}
