//! `solvergate run-cpsat SCRIPT.py`: run an OR-Tools CP-SAT script from the
//! terminal under the same envelope contract and limits as the MCP tools,
//! and print its answer.
//!
//! With `--checker`, the answer is graded by a Python checker under the
//! tools' checker protocol, and only an `accepted` verdict keeps exit 0.
//!
//! Exit codes: 0 optimal or feasible; 1 a problem before running (no
//! interpreter, no such file); 3 infeasible; 4 the script failed or broke
//! the envelope contract; 5 no answer in time (timeout or unknown, nothing
//! found); 6 the checker did not accept the answer (rejected, error, no
//! verdict, timeout); 130 interrupted (Ctrl-C, SIGTERM or SIGHUP; the
//! script is killed).

use std::process::ExitCode;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::args::RunCpsatArgs;
use super::render;
use super::terminal::{fail, interrupt_signal, out, refuse, refuse_error};
use crate::budget::{Budget, DEFAULT_TIMEOUT_MS};
use crate::cpsat::{CheckedRequest, Cpsat, CpsatPythonResult, ScriptRequest, ScriptSource};
use crate::diagnostics::ToolError;
use crate::exec::limits::with_caps;
use crate::progress::Progress;
use crate::runtime::cpsat::CpsatRuntime;

/// A `--problem` file that could not be read.
#[derive(Debug, thiserror::Error)]
#[error("--problem {} cannot be read", .path.display())]
struct ProblemUnreadable {
    path: std::path::PathBuf,
    #[source]
    source: std::io::Error,
}

/// Runs `run-cpsat` as parsed: the budget is checked before the
/// interpreter is resolved.
pub async fn run(args: RunCpsatArgs, cpsat: impl FnOnce() -> Arc<CpsatRuntime>) -> ExitCode {
    let timeout = match Budget::parse("--timeout-ms", args.timeout_ms, Some(DEFAULT_TIMEOUT_MS)) {
        Ok(timeout) => timeout,
        Err(error) => return fail(&error),
    };
    let RunCpsatArgs {
        script,
        args,
        timeout_ms: _,
        seed,
        checker,
        problem,
        limits,
        json,
    } = args;
    let caps = limits.caps();
    let quiet = Progress::none();
    if !script.is_file() {
        return refuse(format!(
            "{} is not a file; pass the path of the Python script to run",
            script.display()
        ));
    }
    let problem =
        match problem.map(|path| std::fs::read_to_string(&path).map_err(|error| (path, error))) {
            None => None,
            Some(Ok(text)) => Some(text),
            Some(Err((path, source))) => {
                return refuse_error(&ProblemUnreadable { path, source });
            }
        };
    let request = ScriptRequest {
        source: ScriptSource::File(script.to_string_lossy().into_owned()),
        args,
        seed,
        config: None,
        timeout_ms: timeout,
    };
    let cancel = CancellationToken::new();
    let on_signal = cancel.clone();
    tokio::spawn(async move {
        interrupt_signal().await;
        on_signal.cancel();
    });
    let service = Cpsat::new(cpsat());
    let Some(checker) = checker else {
        let run = service.run(&request, &quiet, &cancel);
        let result = match with_caps(caps, run).await {
            Ok(result) => result,
            Err(error) => return stopped(&cancel, &error),
        };
        print(json, &result, render::cpsat_run);
        return ExitCode::from(exit_code(&result));
    };
    let checked = CheckedRequest {
        script: request,
        checker: ScriptSource::File(checker.to_string_lossy().into_owned()),
        problem,
        checker_timeout_ms: None,
        test_checker: false,
    };
    let run = service.run_checked(&checked, &quiet, &cancel);
    let result = match with_caps(caps, run).await {
        Ok(result) => result,
        Err(error) => return stopped(&cancel, &error),
    };
    print(json, &result, render::cpsat_checked);
    let refused = result
        .checker
        .as_ref()
        .is_some_and(|report| !report.verdict.is_accepted());
    ExitCode::from(if refused { 6 } else { exit_code(&result.run) })
}

/// How a run that did not finish ends: interrupted (130) or refused.
fn stopped(cancel: &CancellationToken, error: &ToolError) -> ExitCode {
    if cancel.is_cancelled() {
        eprintln!("solvergate: interrupted; the script was stopped");
        return ExitCode::from(130);
    }
    fail(error)
}

/// Prints a result as JSON, or as the text `text` makes of it.
fn print<T: serde::Serialize>(json: bool, result: &T, text: fn(&T) -> String) {
    if json {
        out(&format!("{}\n", render::json(result)));
    } else {
        out(&text(result));
    }
}

fn exit_code(result: &CpsatPythonResult) -> u8 {
    use crate::cpsat::ScriptStatus;
    match result.status {
        ScriptStatus::Optimal | ScriptStatus::Feasible => 0,
        ScriptStatus::Timeout if result.solution.is_some() => 0,
        ScriptStatus::Infeasible => 3,
        ScriptStatus::Error => 4,
        ScriptStatus::Timeout | ScriptStatus::Unknown => 5,
    }
}
