//! `solvergate plan`: plan a cohort from a file or stdin and print the cards
//! as a table, the result as JSON, or its narration.

use std::io::{IsTerminal, Read};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use tokio::sync::mpsc::UnboundedReceiver;

use super::args::PlanArgs;
use super::paths::absolute;
use super::render;
use super::setup::{ARTIFACT_JOURNAL, PLANNER_STORE};
use super::terminal::{cancel_on_interrupt, fail, interrupted, out, refuse, refuse_error};
use crate::artifacts::{Artifacts, SavePlanRequest, SaveStatus};
use crate::cpsat::Cpsat;
use crate::minizinc::MiniZinc;
use crate::planner::problem::EXAMPLE;
use crate::planner::{LoadProblem, Planner, ResultStore, explain};
use crate::progress::{Progress, ProgressUpdate};
use crate::runtime::cpsat::CpsatRuntime;
use crate::runtime::{Runtime, UserDirs};
use crate::settings::Settings;
use crate::userfiles::MAX_USER_FILE_BYTES;

/// Where `--save` writes.
#[derive(Debug, Clone)]
pub struct SaveTo {
    pub dir: PathBuf,
    pub overwrite: bool,
}

/// How the result is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanOutput {
    Table,
    Json,
    Explain,
}

/// Runs `plan` as parsed: the sample cohort, the MiniZinc data, or a plan
/// (printed as `--json` or `--explain` ask, saved with `--save`). Only a
/// plan needs the runtimes.
pub async fn run(
    args: PlanArgs,
    resolve: impl FnOnce() -> (Arc<Runtime>, Arc<CpsatRuntime>),
    settings: &Settings,
    dirs: &UserDirs,
) -> ExitCode {
    if args.example {
        return example(args.pallets);
    }
    if args.minizinc_data {
        return minizinc_data(args.file);
    }
    let (minizinc, cpsat) = resolve();
    let output = match (args.json, args.explain) {
        (true, _) => PlanOutput::Json,
        (_, true) => PlanOutput::Explain,
        _ => PlanOutput::Table,
    };
    let save = args.save.map(|dir| SaveTo {
        dir,
        overwrite: args.overwrite,
    });
    plan(minizinc, cpsat, settings, dirs, args.file, output, save).await
}

pub async fn plan(
    runtime: Arc<Runtime>,
    cpsat: Arc<CpsatRuntime>,
    settings: &Settings,
    dirs: &UserDirs,
    file: Option<PathBuf>,
    output: PlanOutput,
    save: Option<SaveTo>,
) -> ExitCode {
    let text = match read_problem(file) {
        Ok(text) => text,
        Err(error) => return refuse_error(&error),
    };
    let problem = match LoadProblem::parse(&text) {
        Ok(problem) => problem,
        Err(error) => return fail(&error),
    };
    let minizinc = MiniZinc::new(runtime);
    let planner = Planner::new(
        minizinc.clone(),
        ResultStore::new(
            dirs.data_dir.join(PLANNER_STORE),
            settings.planner_max_results,
        ),
    );
    let artifacts = Artifacts::new(
        minizinc,
        Cpsat::new(cpsat),
        planner.clone(),
        dirs.data_dir.join(ARTIFACT_JOURNAL),
    );
    let save = match save {
        None => None,
        Some(save) => match absolute(&save.dir) {
            Ok(dir) => Some(SavePlanRequest {
                problem: problem.clone(),
                target_dir: dir.to_string_lossy().into_owned(),
                overwrite: save.overwrite,
            }),
            Err(error) => return refuse_error(&error),
        },
    };
    // A target the save could not write is refused before any planning.
    if let Some(request) = &save
        && let Err(error) = artifacts.check_plan_target(request).await
    {
        return fail(&error);
    }
    let cancel = cancel_on_interrupt();
    // On a terminal, a status line once the plan takes more than a second.
    let (progress, status) = if std::io::stderr().is_terminal() {
        let (progress, updates) = Progress::channel();
        (progress, Some(tokio::spawn(plan_status(updates))))
    } else {
        (Progress::none(), None)
    };
    let outcome = planner.plan(&problem, &progress, &cancel).await;
    drop(progress);
    if let Some(status) = status {
        let _ = status.await;
    }
    let result = match outcome {
        Ok(result) => result,
        Err(_) if cancel.is_cancelled() => return interrupted(),
        Err(error) => return fail(&error),
    };
    match output {
        PlanOutput::Json => out(&format!("{}\n", render::json(&result))),
        PlanOutput::Explain => out(&explain::narrate(&result.result)),
        PlanOutput::Table => out(&render::load_plan(&result)),
    }
    // The plan just printed is the one saved: it is not planned again.
    if let Some(request) = save {
        match artifacts
            .save_planned(&request, &result, &Progress::none(), &cancel)
            .await
        {
            Ok(saved) if saved.status == SaveStatus::Saved => {
                eprintln!("saved to {}", saved.target_dir);
            }
            Ok(saved) => return refuse(saved.message),
            Err(error) => return fail(&error),
        }
    }
    if result.result.recommended.is_some() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(3)
    }
}

/// Prints the optimised solve's MiniZinc data for a cohort.
pub fn minizinc_data(file: Option<PathBuf>) -> ExitCode {
    let text = match read_problem(file) {
        Ok(text) => text,
        Err(error) => return refuse_error(&error),
    };
    let data = LoadProblem::parse(&text)
        .and_then(|problem| crate::planner::model::minizinc_data(&problem));
    match data {
        Ok(data) => {
            out(&format!("{}\n", render::json(&data)));
            ExitCode::SUCCESS
        }
        Err(error) => fail(&error),
    }
}

/// Prints the sample cohort, or a generated one of `pallets` pallets.
pub fn example(pallets: Option<u32>) -> ExitCode {
    match pallets {
        None => out(EXAMPLE),
        Some(pallets) => match crate::planner::problem::generated(pallets) {
            Ok(cohort) => out(&format!("{}\n", render::json(&cohort))),
            Err(error) => return fail(&error),
        },
    }
    ExitCode::SUCCESS
}

/// Why a cohort could not be read from its file or stdin.
#[derive(Debug, thiserror::Error)]
pub enum ProblemFileError {
    #[error("could not read {name}")]
    Read {
        name: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{name} is over the 16 MiB limit for a problem")]
    TooLarge { name: String },
    #[error("{name} is empty: pass a cohort as JSON (solvergate plan --example prints one)")]
    Empty { name: String },
    #[error("{name} is not UTF-8 text")]
    NotUtf8 {
        name: String,
        #[source]
        source: std::string::FromUtf8Error,
    },
}

fn read_problem(file: Option<PathBuf>) -> Result<String, ProblemFileError> {
    let limit = MAX_USER_FILE_BYTES;
    let name = file
        .as_ref()
        .map_or("stdin".to_owned(), |path| path.display().to_string());
    let read = |source| ProblemFileError::Read {
        name: name.clone(),
        source,
    };
    let mut bytes = Vec::new();
    match &file {
        Some(path) => {
            std::fs::File::open(path)
                .and_then(|handle| handle.take(limit + 1).read_to_end(&mut bytes))
                .map_err(read)?;
        }
        None => {
            std::io::stdin()
                .take(limit + 1)
                .read_to_end(&mut bytes)
                .map_err(read)?;
        }
    }
    if bytes.len() as u64 > limit {
        return Err(ProblemFileError::TooLarge { name });
    }
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ProblemFileError::Empty { name });
    }
    String::from_utf8(bytes).map_err(|source| ProblemFileError::NotUtf8 { name, source })
}

/// Shows the planner's steps on stderr (`[2/4] solving the single-mode
/// plans ...` and the time so far), from one second after the start until
/// the plan ends; a plan done sooner shows nothing.
async fn plan_status(mut updates: UnboundedReceiver<ProgressUpdate>) {
    let mut latest = "starting".to_owned();
    let mut bar: Option<indicatif::ProgressBar> = None;
    let shown = tokio::time::sleep(std::time::Duration::from_secs(1));
    tokio::pin!(shown);
    loop {
        tokio::select! {
            update = updates.recv() => {
                let Some(update) = update else { break };
                latest = match update.step {
                    Some((done, total)) => format!("[{done}/{total}] {}", update.message),
                    None => update.message,
                };
                if let Some(bar) = &bar {
                    bar.set_message(latest.clone());
                }
            }
            () = &mut shown, if bar.is_none() => {
                let spinner = super::solve_command::solve_spinner();
                spinner.set_message(latest.clone());
                bar = Some(spinner);
            }
        }
    }
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
}
