//! The Slurm job backend's dispatch overhead, as figures (nothing is
//! asserted on time): the same trivial solve job, submit → result (polling
//! `get_solve_job` every 5 ms), on the local backend and on the Slurm
//! backend, median and worst of 10 jobs each; the difference is what
//! handing a job to Slurm costs (sbatch, the scheduler, the node starting
//! `solvergate worker`, the result file, our polls).
//!
//! Needs the cluster of `scripts/slurm-cluster` (partition `solvergate`, or
//! `SOLVERGATE_BENCH_SLURM_PARTITION`). Run: `SOLVERGATE_TEST_SLURM=1 cargo
//! bench --bench slurm` (runtime at `SOLVERGATE_BENCH_RUNTIME`, default
//! `/usr`). Without SOLVERGATE_TEST_SLURM=1 it says so and exits.

mod common;

use std::time::{Duration, Instant};

use common::{Client, median, ms};
use serde_json::json;

const EASY_MODEL: &str = "var 1..10: x; solve maximize x;\n";
const JOBS: usize = 10;

fn dispatch_times(client: &mut Client) -> Vec<Duration> {
    let mut times = Vec::new();
    for _ in 0..JOBS {
        let started = Instant::now();
        let submitted = client.call(
            "submit_solve_job",
            json!({"model": EASY_MODEL, "solver": "gecode", "timeout_ms": 10_000}),
        );
        let id = submitted["result"]["structuredContent"]["job_id"]
            .as_str()
            .unwrap_or_else(|| panic!("submit refused: {submitted}"))
            .to_owned();
        loop {
            let job = client.call("get_solve_job", json!({"job_id": id}));
            let state = job["result"]["structuredContent"]["state"]
                .as_str()
                .unwrap_or("")
                .to_owned();
            if !matches!(state.as_str(), "queued" | "running") {
                assert_eq!(state, "succeeded", "{job}");
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        times.push(started.elapsed());
    }
    times
}

fn main() {
    let runtime = common::runtime_root();
    if std::env::var("SOLVERGATE_TEST_SLURM").as_deref() != Ok("1") {
        eprintln!(
            "no Slurm cluster: run scripts/slurm-cluster (as root) and set SOLVERGATE_TEST_SLURM=1"
        );
        return;
    }
    let partition = std::env::var("SOLVERGATE_BENCH_SLURM_PARTITION")
        .unwrap_or_else(|_| "solvergate".to_owned());
    let workdir = tempfile::tempdir().expect("a work directory");
    let workdir_text = workdir.path().to_string_lossy().into_owned();

    let mut local = Client::start(&runtime, &["--toolset", "full"], &[]);
    local.initialize();
    let local_times = dispatch_times(&mut local);
    drop(local);

    let mut slurm = Client::start(
        &runtime,
        &["--toolset", "full", "--job-backend", "slurm"],
        &[
            ("SOLVERGATE_SLURM_PARTITION", partition.as_str()),
            ("SOLVERGATE_SLURM_WORKDIR", workdir_text.as_str()),
        ],
    );
    slurm.initialize();
    let slurm_times = dispatch_times(&mut slurm);
    drop(slurm);

    let worst = |times: &[Duration]| times.iter().max().copied().unwrap_or_default();
    let (local_median, slurm_median) = (median(local_times.clone()), median(slurm_times.clone()));
    println!("trivial solve job, submit -> result, {JOBS} jobs each:");
    println!(
        "  local backend: median {:.1} ms, worst {:.1} ms",
        ms(local_median),
        ms(worst(&local_times))
    );
    println!(
        "  slurm backend: median {:.1} ms, worst {:.1} ms (partition {partition})",
        ms(slurm_median),
        ms(worst(&slurm_times))
    );
    println!(
        "  dispatch overhead per job (slurm - local, medians): {:.1} ms",
        ms(slurm_median.saturating_sub(local_median))
    );
}
