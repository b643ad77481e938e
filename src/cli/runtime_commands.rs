//! `configure-runtime`, `check-runtime` and `list-solvers`.

use std::path::PathBuf;
use std::process::ExitCode;

use tokio_util::sync::CancellationToken;

use super::args::RuntimeKind;
use super::paths::absolute;
use super::render;
use super::terminal::{fail, out, refuse, refuse_error};
use crate::runtime::cpsat::{self, CpsatRuntime};
use crate::runtime::{self, LocationSource, Runtime, RuntimeLocation, UserDirs, config};

/// The config file could not be written.
#[derive(Debug, thiserror::Error)]
#[error("could not write the config in {}", .dir.display())]
struct ConfigNotSaved {
    dir: PathBuf,
    #[source]
    source: std::io::Error,
}

/// Validates what the user points at, then saves it; nothing is saved
/// unless everything named is usable.
pub async fn configure(
    runtime_dir: Option<PathBuf>,
    python: Option<PathBuf>,
    dirs: &UserDirs,
) -> ExitCode {
    if runtime_dir.is_none() && python.is_none() {
        return refuse(
            "configure-runtime needs --runtime-dir PATH (the directory holding bin/minizinc) and/or --python PATH (an interpreter that can import ortools)",
        );
    }
    let cancel = CancellationToken::new();
    let mut lines = Vec::new();
    let runtime_dir = match runtime_dir.as_deref().map(absolute).transpose() {
        Ok(dir) => dir,
        Err(error) => return refuse_error(&error),
    };
    if let Some(dir) = &runtime_dir {
        // A common slip: naming the bin directory itself.
        if !dir.join("bin/minizinc").exists()
            && dir.join("minizinc").is_file()
            && let Some(parent) = dir.parent()
        {
            return refuse(format!(
                "{} holds minizinc itself, so it is not a runtime dir (the runtime dir is the one above bin/)\n  help: did you mean `solvergate configure-runtime --runtime-dir {}`?",
                dir.display(),
                parent.display()
            ));
        }
        let runtime = Runtime::new(RuntimeLocation {
            dir: dir.clone(),
            source: LocationSource::Flag,
        });
        match runtime.version(&cancel).await {
            Ok(version) => lines.push(format!("MiniZinc runtime: {} ({version})", dir.display())),
            Err(error) => return fail(&error),
        }
        for warning in runtime.defects(&cancel).await {
            lines.push(format!("  warning: {warning}"));
        }
    }
    // Keep the venv's own path: its python is a symlink to the base
    // interpreter, and resolving it would lose the venv.
    let python = match python.as_deref().map(absolute).transpose() {
        Ok(python) => python,
        Err(error) => return refuse_error(&error),
    };
    if let Some(python) = &python {
        match cpsat::probe_python(python, &cancel).await {
            Ok(version) => lines.push(format!(
                "CP-SAT runtime: {} (OR-Tools {version})",
                python.display()
            )),
            Err(error) => return refuse_error(&error),
        }
    }
    let saved = config::update(&dirs.config_dir, |config| {
        if let Some(dir) = runtime_dir {
            config.runtime_dir = Some(dir);
        }
        if let Some(python) = python {
            config.cpsat_python = Some(python);
        }
    });
    match saved {
        Ok(path) => {
            for line in lines {
                out(&format!("{line}\n"));
            }
            out(&format!("Saved in {}\n", path.display()));
            ExitCode::SUCCESS
        }
        Err(source) => refuse_error(&ConfigNotSaved {
            dir: dirs.config_dir.clone(),
            source,
        }),
    }
}

pub async fn check(
    minizinc: &Runtime,
    cpsat: &CpsatRuntime,
    only: Option<RuntimeKind>,
    json: bool,
) -> ExitCode {
    let status = runtime::status(minizinc, cpsat, &CancellationToken::new()).await;
    if json {
        out(&format!("{}\n", render::json(&status)));
    } else {
        out(&render::runtime_status(&status, only));
    }
    let ready = match only {
        Some(RuntimeKind::Minizinc) => status.installed,
        Some(RuntimeKind::Cpsat) => status.cpsat.installed,
        None => status.installed && status.cpsat.installed,
    };
    if ready {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

pub async fn list_solvers(runtime: &Runtime, json: bool) -> ExitCode {
    let list = match runtime.solver_list(&CancellationToken::new()).await {
        Ok(list) => list,
        Err(error) => return fail(&error),
    };
    if json {
        out(&format!("{}\n", render::json(&list)));
    } else {
        out(&render::solver_table(&list));
    }
    ExitCode::SUCCESS
}
