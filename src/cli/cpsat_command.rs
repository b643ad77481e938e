//! `solvergate run-cpsat SCRIPT.py`: run an OR-Tools CP-SAT script from the
//! terminal under the same envelope contract and limits as the MCP tools,
//! and print its answer.
//!
//! Exit codes: 0 optimal or feasible; 1 a problem before running (no
//! interpreter, no such file); 3 infeasible; 4 the script failed or broke
//! the envelope contract; 5 no answer in time (timeout or unknown, nothing
//! found); 130 interrupted (Ctrl-C, SIGTERM or SIGHUP; the script is killed).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::args::RunCpsatArgs;
use super::render;
use super::terminal::{fail, interrupt_signal, out, refuse};
use crate::cpsat::{Cpsat, CpsatPythonResult, ScriptRequest, ScriptSource};
use crate::minizinc::{DEFAULT_TIMEOUT_MS, validate_budget};
use crate::progress::Progress;
use crate::runtime::cpsat::CpsatRuntime;

/// Runs `run-cpsat` as parsed: the budget is checked before the
/// interpreter is resolved.
pub async fn run(args: RunCpsatArgs, cpsat: impl FnOnce() -> Arc<CpsatRuntime>) -> ExitCode {
    if let Err(error) = validate_budget("--timeout-ms", args.timeout_ms, Some(DEFAULT_TIMEOUT_MS)) {
        return fail(&error);
    }
    let RunCpsatArgs {
        script,
        args,
        timeout_ms,
        seed,
        json,
    } = args;
    run_cpsat(cpsat(), script, args, timeout_ms, seed, json).await
}

pub async fn run_cpsat(
    cpsat: Arc<CpsatRuntime>,
    script: PathBuf,
    args: Vec<String>,
    timeout_ms: i64,
    seed: Option<i64>,
    json: bool,
) -> ExitCode {
    if !script.is_file() {
        return refuse(format!(
            "{} is not a file; pass the path of the Python script to run",
            script.display()
        ));
    }
    let request = ScriptRequest {
        source: ScriptSource::File(script.to_string_lossy().into_owned()),
        args,
        seed,
        config: None,
        timeout_ms,
    };
    let cancel = CancellationToken::new();
    let on_signal = cancel.clone();
    tokio::spawn(async move {
        interrupt_signal().await;
        on_signal.cancel();
    });
    let service = Cpsat::new(cpsat);
    let result = match service.run(&request, &Progress::none(), &cancel).await {
        Ok(result) => result,
        Err(_) if cancel.is_cancelled() => {
            eprintln!("solvergate: interrupted; the script was stopped");
            return ExitCode::from(130);
        }
        Err(error) => return fail(&error),
    };
    if json {
        out(&format!("{}\n", render::json(&result)));
    } else {
        out(&render::cpsat_run(&result));
    }
    ExitCode::from(exit_code(&result))
}

fn exit_code(result: &CpsatPythonResult) -> u8 {
    match result.status.as_str() {
        "optimal" | "feasible" => 0,
        "timeout" if result.solution.is_some() => 0,
        "infeasible" => 3,
        "error" => 4,
        _ => 5,
    }
}
