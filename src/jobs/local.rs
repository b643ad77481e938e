//! The local backend: admitted jobs run in this process's executor (the
//! default), and the choice between it and Slurm a server starts with.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::backend::{
    BoxFuture, CpsatJob, CpsatJobOutput, JobBackend, RunContext, SlurmHandoff, cpsat_outcome,
    execute_solve, run_job, solve_outcome,
};
use super::registry::{Outcome, Work};
use super::slurm::{SlurmBackend, SlurmConfig};
use crate::cpsat::Cpsat;
use crate::diagnostics::ToolError;
use crate::minizinc::{MiniZinc, SolveRequest, SolveResult};
use crate::progress::Progress;

/// Which backend a server uses.
#[derive(Debug, Clone)]
pub enum BackendChoice {
    /// Run jobs in this process (the default).
    Local,
    /// Hand each job to Slurm, with the resolved cluster configuration.
    Slurm(Box<SlurmConfig>),
}

/// Builds the backend `choice` names over the server's services.
pub fn build(choice: &BackendChoice, minizinc: MiniZinc, cpsat: Cpsat) -> Arc<dyn JobBackend> {
    match choice {
        BackendChoice::Local => Arc::new(LocalBackend { minizinc, cpsat }),
        BackendChoice::Slurm(config) => Arc::new(SlurmBackend::new(config.as_ref().clone())),
    }
}

/// Why a local server does not follow a job an earlier server left on Slurm.
const NOT_SLURM: &str = "this server runs jobs on this machine (SOLVERGATE_JOB_BACKEND=local), so it cannot follow a Slurm job; a server started with the Slurm backend and the same work directory can";

/// Work that the server runs itself.
#[derive(Clone)]
pub struct LocalBackend {
    minizinc: MiniZinc,
    cpsat: Cpsat,
}

impl LocalBackend {
    /// A backend that runs solves through `minizinc` and scripts through
    /// `cpsat`.
    pub fn new(minizinc: MiniZinc, cpsat: Cpsat) -> Self {
        LocalBackend { minizinc, cpsat }
    }
}

impl JobBackend for LocalBackend {
    fn name(&self) -> &'static str {
        "local"
    }

    fn describe(&self) -> String {
        "jobs: local (this machine)".to_owned()
    }

    fn preflight<'a>(
        &'a self,
        _cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<(), ToolError>> {
        Box::pin(async { Ok(()) })
    }

    fn solve(&self, request: SolveRequest, run: RunContext) -> Work<SolveResult> {
        let minizinc = self.minizinc.clone();
        Box::pin(async move {
            let progress = Progress::into_slot(run.live);
            let result = execute_solve(&minizinc, &request, &progress, &run.token).await;
            solve_outcome(result, &run.token)
        })
    }

    fn cpsat(&self, job: CpsatJob, run: RunContext) -> Work<CpsatJobOutput> {
        let cpsat = self.cpsat.clone();
        Box::pin(async move {
            let progress = Progress::into_slot(run.live);
            let result = run_job(&cpsat, &job, &progress, &run.token).await;
            cpsat_outcome(result, &run.token)
        })
    }

    fn resumable(&self, _handoff: &SlurmHandoff) -> Result<(), String> {
        Err(NOT_SLURM.to_owned())
    }

    fn resume_solve(&self, _handoff: SlurmHandoff, _run: RunContext) -> Work<SolveResult> {
        Box::pin(async { Outcome::Failed(NOT_SLURM.to_owned()) })
    }

    fn resume_cpsat(&self, _handoff: SlurmHandoff, _run: RunContext) -> Work<CpsatJobOutput> {
        Box::pin(async { Outcome::Failed(NOT_SLURM.to_owned()) })
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        // Local work stops with its job tokens; nothing is held elsewhere.
        Box::pin(async {})
    }
}
