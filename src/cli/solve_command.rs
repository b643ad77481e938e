//! `solvergate solve MODEL [DATA]`: a model file solved on the MiniZinc
//! runtime, the result printed (or, with `--json`, the structured result)
//! with an exit code per outcome (`solve --help` lists them). The first
//! Ctrl-C stops the solver and keeps what it found; on a terminal a status
//! line shows the solver's progress.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::args::SolveArgs;
use super::render;
use super::terminal::{fail, interrupt_signal, out};
use crate::budget::{Budget, DEFAULT_TIMEOUT_MS};
use crate::exec::limits::with_caps;
use crate::minizinc::{MiniZinc, SolveControls, SolveRequest, SolveStatus, Sources};
use crate::progress::Progress;
use crate::runtime::Runtime;

/// Solves, prints, and returns the outcome's exit code.
pub async fn solve(runtime: Arc<Runtime>, args: SolveArgs) -> ExitCode {
    let timeout = match Budget::parse("--timeout-ms", args.timeout_ms, Some(DEFAULT_TIMEOUT_MS)) {
        Ok(timeout) => timeout,
        Err(error) => return fail(&error),
    };
    let path = |p: PathBuf| p.to_string_lossy().into_owned();
    let request = SolveRequest {
        sources: Sources::Files {
            model_path: path(args.model),
            data_path: args.data.map(path),
            checker_path: args.checker.map(path),
        },
        solver: args.solver,
        timeout_ms: timeout,
        controls: SolveControls {
            free_search: args.free_search,
            parallel: args.parallel,
            random_seed: args.random_seed,
            all_solutions: args.all_solutions,
            num_solutions: args.num_solutions,
            solver_flags: Vec::new(),
            final_only: false,
        },
    };
    // The first Ctrl-C, SIGTERM or SIGHUP stops the solver the way Ctrl-C
    // at a `minizinc` prompt does (what it found is kept and printed); a
    // second one kills the tree at once.
    let stop = CancellationToken::new();
    let cancel = CancellationToken::new();
    let (on_stop, on_cancel) = (stop.clone(), cancel.clone());
    tokio::spawn(async move {
        interrupt_signal().await;
        on_stop.cancel();
        interrupt_signal().await;
        on_cancel.cancel();
    });
    let service = MiniZinc::new(runtime);
    // On a terminal, a status line fed by the solver's stream as it
    // arrives; nothing of it on a pipe or with --json.
    let spinner = (!args.json && std::io::stderr().is_terminal()).then(solve_spinner);
    let (progress, mut updates) = match &spinner {
        Some(_) => {
            let (progress, updates) = Progress::channel();
            (progress, Some(updates))
        }
        None => (Progress::none(), None),
    };
    if let (Some(bar), Some(mut updates)) = (spinner.clone(), updates.take()) {
        tokio::spawn(async move {
            // The objective's path so far, drawn after the figures.
            let mut path: Vec<f64> = Vec::new();
            while let Some(update) = updates.recv().await {
                let objective = update
                    .live
                    .as_ref()
                    .and_then(|live| live.objective.as_ref())
                    .and_then(serde_json::Value::as_f64);
                match objective {
                    Some(objective) => {
                        path.push(objective);
                        bar.set_message(format!("{} {}", update.message, sparkline(&path)));
                    }
                    None => bar.set_message(update.message),
                }
            }
        });
    }
    let outcome = with_caps(
        args.limits.caps(),
        service.solve_stoppable(&request, &progress, &cancel, &stop),
    )
    .await;
    if let Some(bar) = &spinner {
        bar.finish_and_clear();
    }
    let result = match outcome {
        Ok(result) => result,
        Err(error) => return fail(&error),
    };
    let interrupted = stop.is_cancelled();
    if args.json {
        out(&format!("{}\n", render::json(&result)));
    } else {
        out(&render::solve(&result));
    }
    if interrupted {
        eprintln!("solvergate: interrupted; the output above is what the solver had found by then");
        return ExitCode::from(SOLVE_INTERRUPTED);
    }
    ExitCode::from(solve_exit_code(&result))
}

/// The status line of a solve (and of a plan) on a terminal: elapsed time
/// and what the run has reported so far.
pub(super) fn solve_spinner() -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new_spinner();
    if let Ok(style) = indicatif::ProgressStyle::with_template("{spinner} {elapsed} {msg}") {
        bar.set_style(style);
    }
    bar.set_message("starting");
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    bar
}

/// The last [`SPARK_WIDTH`] values of `path` as a one-line chart, lowest
/// `▁` to highest `█` (all `▄` when they are equal).
fn sparkline(path: &[f64]) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let recent = &path[path.len().saturating_sub(SPARK_WIDTH)..];
    let (low, high) = recent
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(low, high), value| {
            (low.min(*value), high.max(*value))
        });
    recent
        .iter()
        .map(|value| match high > low {
            // In 0..=7 by construction; the cast only drops the fraction.
            true => BARS[(((value - low) / (high - low)) * 7.0).round() as usize],
            false => BARS[3],
        })
        .collect()
}

/// How many of the latest objectives the status line draws.
const SPARK_WIDTH: usize = 24;

/// `solve`'s exit codes (also in `solve --help` and the README).
const SOLVE_NO_SOLUTION_EXISTS: u8 = 3;
const SOLVE_MODEL_ERROR: u8 = 4;
const SOLVE_NO_ANSWER_IN_TIME: u8 = 5;
const SOLVE_CHECKER_REJECTED: u8 = 6;
const SOLVE_INTERRUPTED: u8 = 130;

/// What a finished solve's result means for the exit code.
fn solve_exit_code(result: &crate::minizinc::SolveResult) -> u8 {
    let rejected = result
        .checker
        .as_ref()
        .is_some_and(|checker| !checker.verdict.is_accepted());
    match result.status {
        _ if rejected && result.solution.is_some() => SOLVE_CHECKER_REJECTED,
        SolveStatus::Optimal | SolveStatus::Satisfied => 0,
        SolveStatus::Timeout if result.solution.is_some() => 0,
        SolveStatus::Unsatisfiable | SolveStatus::Unbounded | SolveStatus::UnsatOrUnbounded => {
            SOLVE_NO_SOLUTION_EXISTS
        }
        SolveStatus::Error => SOLVE_MODEL_ERROR,
        SolveStatus::Timeout | SolveStatus::Unknown => SOLVE_NO_ANSWER_IN_TIME,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_draws_from_lowest_to_highest() {
        assert_eq!(sparkline(&[1.0, 2.0, 3.0, 8.0]), "▁▂▃█");
        assert_eq!(sparkline(&[5.0, 5.0]), "▄▄");
        assert_eq!(sparkline(&[]), "");
        let long: Vec<f64> = (0..100).map(f64::from).collect();
        let drawn = sparkline(&long);
        assert_eq!(drawn.chars().count(), SPARK_WIDTH);
        assert!(drawn.starts_with('▁') && drawn.ends_with('█'), "{drawn}");
    }
}
