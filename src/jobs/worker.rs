//! The node side of the Slurm backend: `solvergate worker DIR` reads the
//! job's `task.json`, runs it through the same [`execute_solve`] / CP-SAT
//! job code as the local backend (same executor, caps, checker and
//! envelope rules) under the node's limits lowered by the call's caps, and
//! renames `result.json` into place.
//!
//! A cancelled run (Slurm's `scancel` sends SIGTERM, which the face turns
//! into the token) writes no result: the server decided the job's end
//! already, and its processes are killed by the executor as they would be
//! locally.

use std::ffi::OsString;
use std::path::Path;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::backend::{execute_solve, run_job};
use super::wire::{
    RESULT_FILE, TASK_FILE, WorkerOutcome, WorkerTask, WorkerWork, write_atomically,
};
use crate::cpsat::Cpsat;
use crate::exec::limits::with_caps;
use crate::minizinc::{MiniZinc, SolveRequest};
use crate::progress::Progress;
use crate::runtime::cpsat::CpsatRuntime;
use crate::runtime::{LocationSource, Runtime, RuntimeLocation};

/// Why the worker left no result.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// The task file could not be read or is not a task.
    #[error("could not read the task {path}: {problem}")]
    Task {
        /// The `task.json` the worker tried to read.
        path: String,
        /// The read or parse error, in words.
        problem: String,
    },
    /// The run was cancelled (Slurm's `scancel`); the server decides the job's
    /// end.
    #[error("cancelled; no result was written")]
    Cancelled,
    /// The result file could not be written into place.
    #[error("could not write the result {path}: {source}")]
    Result {
        /// The `result.json` the worker tried to write.
        path: String,
        /// Why the write or the rename failed.
        source: std::io::Error,
    },
}

/// Runs the task in `dir` and writes its result there.
pub async fn run(dir: &Path, cancel: &CancellationToken) -> Result<(), WorkerError> {
    let task_path = dir.join(TASK_FILE);
    let task: WorkerTask = std::fs::read(&task_path)
        .map_err(|error| error.to_string())
        .and_then(|bytes| serde_json::from_slice(&bytes).map_err(|error| error.to_string()))
        .map_err(|problem| WorkerError::Task {
            path: task_path.display().to_string(),
            problem,
        })?;
    let outcome = with_caps(task.limits, execute(task, cancel)).await;
    if cancel.is_cancelled() {
        return Err(WorkerError::Cancelled);
    }
    let result_path = dir.join(RESULT_FILE);
    write_atomically(&result_path, &outcome).map_err(|source| WorkerError::Result {
        path: result_path.display().to_string(),
        source,
    })
}

/// Runs the task's work as the local backend would.
async fn execute(task: WorkerTask, cancel: &CancellationToken) -> WorkerOutcome {
    match task.work {
        WorkerWork::Solve {
            sources,
            solver,
            timeout_ms,
            controls,
        } => {
            let request = SolveRequest {
                sources,
                solver,
                timeout_ms,
                controls,
            };
            let runtime = Runtime::new(RuntimeLocation {
                dir: task.runtime_dir,
                source: LocationSource::Flag,
            });
            let minizinc = MiniZinc::new(Arc::new(runtime));
            match execute_solve(&minizinc, &request, &Progress::none(), cancel).await {
                Ok(result) => WorkerOutcome::Solve {
                    result: Box::new(result),
                },
                Err(error) => WorkerOutcome::refused(error),
            }
        }
        WorkerWork::Cpsat(job) => {
            let cpsat = Cpsat::new(Arc::new(CpsatRuntime::at(
                task.cpsat_python,
                LocationSource::Flag,
                task.pythonpath.map(OsString::from),
            )));
            match run_job(&cpsat, &job, &crate::progress::Progress::none(), cancel).await {
                Ok(output) => WorkerOutcome::Cpsat(output),
                Err(error) => WorkerOutcome::refused(error),
            }
        }
    }
}
