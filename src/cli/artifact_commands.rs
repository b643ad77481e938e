//! `solvergate replay DIR` and `solvergate artifacts ls DIR…`: a saved
//! artifact checked and run again, and saved artifacts found again, from the
//! terminal.
//!
//! Exit codes of `replay`: 0 reproduced; 1 a problem before running (not an
//! artifact, no runtime); 4 the files changed since the save; 5 it ran but
//! did not reproduce. `artifacts ls` exits 1 when a path is not a
//! directory, else 0.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use super::paths::absolute;
use super::render;
use super::setup::{ARTIFACT_JOURNAL, PLANNER_STORE};
use super::terminal::{cancel_on_interrupt, fail, interrupted, out, refuse_error};
use crate::artifacts::{self, Artifacts};
use crate::cpsat::Cpsat;
use crate::diagnostics::Category;
use crate::minizinc::MiniZinc;
use crate::planner::{Planner, ResultStore};
use crate::progress::Progress;
use crate::runtime::cpsat::CpsatRuntime;
use crate::runtime::{Runtime, UserDirs};
use crate::settings::Settings;

/// Exit code of a replay refused because the files changed.
const TAMPERED: u8 = 4;
/// Exit code of a replay that ran and did not reproduce.
const NOT_REPRODUCED: u8 = 5;

pub async fn replay(
    minizinc: Arc<Runtime>,
    cpsat: Arc<CpsatRuntime>,
    settings: &Settings,
    dirs: &UserDirs,
    dir: PathBuf,
    json: bool,
) -> ExitCode {
    let dir = match absolute(&dir) {
        Ok(dir) => dir,
        Err(error) => return refuse_error(&error),
    };
    let minizinc = MiniZinc::new(minizinc);
    let planner = Planner::new(
        minizinc.clone(),
        ResultStore::new(
            dirs.data_dir.join(PLANNER_STORE),
            settings.planner_max_results,
        ),
    );
    let service = Artifacts::new(
        minizinc,
        Cpsat::new(cpsat),
        planner,
        dirs.data_dir.join(ARTIFACT_JOURNAL),
    );
    let cancel = cancel_on_interrupt();
    let outcome = service
        .replay(&dir.to_string_lossy(), &Progress::none(), &cancel)
        .await;
    let result = match outcome {
        Ok(result) => result,
        Err(_) if cancel.is_cancelled() => return interrupted(),
        Err(error) if error.category() == Category::NotVerified => {
            fail(&error);
            return ExitCode::from(TAMPERED);
        }
        Err(error) => return fail(&error),
    };
    if json {
        out(&format!("{}\n", render::json(&result)));
    } else {
        out(&render::replay(&result));
    }
    if result.reproduced {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(NOT_REPRODUCED)
    }
}

pub fn list(dirs: Vec<PathBuf>, json: bool) -> ExitCode {
    let found = artifacts::list(&dirs);
    if json {
        out(&format!("{}\n", render::json(&found)));
    } else {
        out(&render::artifact_list(&found));
        for unreadable in &found.unreadable {
            eprintln!(
                "solvergate: warning: {} has a manifest that cannot be read: {}",
                unreadable.dir, unreadable.problem
            );
        }
    }
    for missing in &found.missing {
        eprintln!("solvergate: {missing} is not a directory");
    }
    if found.missing.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
