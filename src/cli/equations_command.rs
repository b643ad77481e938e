//! `solvergate equations correct|validate|evaluate|optimize FILE.json`: the
//! four equation tools for a person, reading the same JSON the MCP tools
//! take and printing the same readable text (or, with `--json`, the
//! structured result).

use std::process::ExitCode;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

use super::args::{EquationsArgs, EquationsCommand};
use super::render;
use super::terminal::{fail, interrupt_signal, out, refuse_error};
use crate::diagnostics::Category;
use crate::equations::{
    self, CorrectRequest, EquationStatus, Equations, EvaluateRequest, EvaluationStatus,
    OptimizeRequest, ValidateRequest, report,
};
use crate::minizinc::MiniZinc;
use crate::progress::Progress;
use crate::runtime::Runtime;
use crate::userfiles::text_file;

const INFEASIBLE: u8 = 3;
const INVALID: u8 = 4;
const NO_ANSWER: u8 = 5;
const REJECTED: u8 = 6;
const INTERRUPTED: u8 = 130;

/// A request file whose JSON is not the request's shape.
#[derive(Debug, thiserror::Error)]
#[error("{}: not a valid request", .path.display())]
struct NotARequest {
    path: std::path::PathBuf,
    #[source]
    source: serde_json::Error,
}

fn read<T: DeserializeOwned>(file: &std::path::Path) -> Result<T, ExitCode> {
    let (path, text) = text_file("FILE", &file.to_string_lossy()).map_err(|e| fail(&e))?;
    serde_json::from_str(&text).map_err(|source| refuse_error(&NotARequest { path, source }))
}

fn status_code(status: EquationStatus) -> u8 {
    match status {
        EquationStatus::Optimal | EquationStatus::Feasible => 0,
        EquationStatus::Infeasible => INFEASIBLE,
        EquationStatus::InvalidEquation => INVALID,
        EquationStatus::Unknown => NO_ANSWER,
    }
}

/// Runs one `equations` subcommand.
pub async fn run(runtime: Arc<Runtime>, args: EquationsArgs) -> ExitCode {
    match args.command {
        EquationsCommand::Validate(args) => {
            let request: ValidateRequest = match read(&args.file) {
                Ok(request) => request,
                Err(code) => return code,
            };
            let result = equations::validate(&request.equations);
            print(args.json, &result, report::validation);
            ExitCode::from(if result.valid { 0 } else { INVALID })
        }
        EquationsCommand::Evaluate(args) => {
            let request: EvaluateRequest = match read(&args.file) {
                Ok(request) => request,
                Err(code) => return code,
            };
            if let Err(error) = request.validate() {
                return fail(&error);
            }
            let result = equations::evaluate(&request);
            print(args.json, &result, report::evaluation);
            let worst = result.results.iter().map(|r| match r.status {
                EvaluationStatus::Passed => 0,
                EvaluationStatus::Failed | EvaluationStatus::MissingValues => REJECTED,
                EvaluationStatus::Error => INVALID,
            });
            // An equation that cannot be computed says more than one that fails.
            let code = worst.fold(0, |code, next| match (code, next) {
                (INVALID, _) | (_, INVALID) => INVALID,
                (a, b) => a.max(b),
            });
            ExitCode::from(code)
        }
        EquationsCommand::Correct(args) => {
            let request: CorrectRequest = match read(&args.file) {
                Ok(request) => request,
                Err(code) => return code,
            };
            let service = Equations::new(MiniZinc::new(runtime));
            let cancel = on_interrupt();
            let outcome = service.correct(&request, &Progress::none(), &cancel).await;
            match outcome {
                Ok(result) => {
                    print(args.json, &result, report::correction);
                    ExitCode::from(status_code(result.status))
                }
                Err(error) if error.category() == Category::Cancelled => interrupted(),
                Err(error) => fail(&error),
            }
        }
        EquationsCommand::Optimize(args) => {
            let request: OptimizeRequest = match read(&args.file) {
                Ok(request) => request,
                Err(code) => return code,
            };
            let service = Equations::new(MiniZinc::new(runtime));
            let cancel = on_interrupt();
            let outcome = service.optimize(&request, &Progress::none(), &cancel).await;
            match outcome {
                Ok(result) => {
                    print(args.json, &result, report::optimisation);
                    ExitCode::from(status_code(result.status))
                }
                Err(error) if error.category() == Category::Cancelled => interrupted(),
                Err(error) => fail(&error),
            }
        }
    }
}

fn print<T: serde::Serialize>(json: bool, result: &T, text: fn(&T) -> String) {
    if json {
        out(&format!("{}\n", render::json(result)));
    } else {
        out(&text(result));
    }
}

/// A token cancelled by the first Ctrl-C, SIGTERM or SIGHUP: the solver is
/// stopped and nothing is printed.
fn on_interrupt() -> CancellationToken {
    let cancel = CancellationToken::new();
    let on_signal = cancel.clone();
    tokio::spawn(async move {
        interrupt_signal().await;
        on_signal.cancel();
    });
    cancel
}

fn interrupted() -> ExitCode {
    eprintln!("solvergate: interrupted; the solver was stopped");
    ExitCode::from(INTERRUPTED)
}
