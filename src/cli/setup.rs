//! What several commands set up the same way: the per-user data dir's
//! folders (planner results, jobs, in-progress saves), the job backend of the two
//! MCP servers (`stdio`, `serve --http`) and their start-up banner's
//! runtime and limits lines.

use crate::jobs::{BackendChoice, SlurmConfig};
use crate::runtime::cpsat::CpsatRuntime;
use crate::runtime::{self, Runtime};
use crate::settings::{JobBackendKind, SLURM_WORKDIR_VAR, Settings};

/// The per-user data dir's folder of planner results.
pub(crate) const PLANNER_STORE: &str = "planner";

/// The per-user data dir's folder of background jobs' states and results.
pub(crate) const JOB_STORE: &str = "jobs";

/// The per-user data dir's folder recording in-progress saves.
pub(crate) const ARTIFACT_JOURNAL: &str = "saves-in-progress";

/// How long the server waits at exit for its jobs to stop.
pub(crate) const JOB_SHUTDOWN_DEADLINE: std::time::Duration = std::time::Duration::from_secs(10);

/// Why the Slurm job backend cannot start.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BackendError {
    #[error(
        "the Slurm job backend needs {SLURM_WORKDIR_VAR}: an absolute path to a directory every node mounts at the same path"
    )]
    NoWorkdir,
    #[error(
        "the Slurm job backend needs this binary's path for the nodes to run, and it is unknown"
    )]
    NoWorkerPath(#[source] std::io::Error),
}

/// The job backend `kind` names, with what it needs resolved; a Slurm
/// backend without a work directory is refused before the server starts.
pub(crate) fn backend_choice(
    kind: JobBackendKind,
    settings: &Settings,
    runtime: &Runtime,
    cpsat: &CpsatRuntime,
) -> Result<BackendChoice, BackendError> {
    match kind {
        JobBackendKind::Local => Ok(BackendChoice::Local),
        JobBackendKind::Slurm => {
            let workdir = settings
                .slurm
                .workdir
                .clone()
                .ok_or(BackendError::NoWorkdir)?;
            let worker = std::env::current_exe().map_err(BackendError::NoWorkerPath)?;
            Ok(BackendChoice::Slurm(Box::new(SlurmConfig {
                settings: settings.slurm.clone(),
                workdir,
                worker,
                search_path: settings.search_path.clone(),
                runtime_dir: runtime.location().dir.clone(),
                cpsat_python: cpsat.python.clone(),
                pythonpath: settings
                    .pythonpath
                    .as_ref()
                    .map(|path| path.to_string_lossy().into_owned()),
            })))
        }
    }
}

/// The start-up banner's runtime lines (stdio and HTTP servers), on
/// stderr, and how the limits are enforced.
pub(crate) fn print_runtimes(runtime: &Runtime, cpsat: &CpsatRuntime) {
    let location = runtime.location();
    eprintln!(
        "runtime dir: {} ({})",
        location.dir.display(),
        location.source.describe()
    );
    if runtime.is_installed() {
        eprintln!("minizinc: installed at {}", runtime.binary().display());
    } else {
        eprintln!("minizinc: not installed — {}", runtime::INSTALL_HINT);
    }
    eprintln!(
        "cp-sat python: {} ({}); probed on first use",
        cpsat.python.display(),
        cpsat.source.describe_python()
    );
    if let Some(limits) = crate::exec::limits::enforcement() {
        eprint!("{}", super::render::limits_lines(&limits));
    }
    eprintln!("sandbox: {}", crate::exec::sandbox::state_in_words());
    let roots = crate::exec::reads::operator_roots();
    if crate::exec::sandbox::support().is_some_and(|found| found.reads == "enforced")
        && crate::exec::sandbox::enabled()
    {
        eprintln!(
            "reads: runtime, system, scratch and named files{}",
            match roots {
                [] => " (widen with --allow-read DIR)".to_owned(),
                roots => format!(
                    ", and beneath {}",
                    roots
                        .iter()
                        .map(|root| root.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            }
        );
    }
    eprintln!("environment: {}", crate::exec::environment_in_words());
}
