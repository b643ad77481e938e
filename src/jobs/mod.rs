//! Background jobs: a bounded registry generic over its work
//! ([`registry`]), MiniZinc solves as jobs ([`solve`]), and portfolio races
//! whose losers the server kills the moment a winner is known
//! ([`portfolio`]), CP-SAT scripts as jobs ([`cpsat`]), and what every
//! kind shares ([`status`]: the [`BackgroundJobs`] trait callers reach each
//! kind by, and what every status says). Where admitted work
//! runs is the backend's business ([`backend`]): in this process, or on a
//! Slurm cluster ([`slurm`], whose nodes run [`worker`], talking through
//! the files of [`wire`]). What a job was survives its server on disk
//! ([`store`]), and a Slurm job, which runs on when its server is killed,
//! is taken over by the next server ([`reattach`]).

pub mod backend;
pub mod cpsat;
pub mod local;
pub mod portfolio;
pub mod reattach;
pub mod registry;
pub mod slurm;
pub mod solve;
pub mod status;
pub mod store;
pub mod winner;
pub mod wire;
pub mod worker;

pub use backend::{CpsatJobRequest, JobBackend, SlurmPlacement, SlurmState};
pub use cpsat::{CpsatJobs, CpsatPythonJobStatus};
pub use local::{BackendChoice, LocalBackend};
pub use portfolio::{
    MAX_SEEDS, PortfolioJobStatus, PortfolioRequest, PortfolioSolveResult, Portfolios, WinnerPolicy,
};
pub use registry::{Completion, JobRegistry, JobSnapshot, JobState, Outcome, RegistryFull, Start};
pub use slurm::SlurmConfig;
pub use solve::{SolveJobStatus, SolveJobs};
pub use status::{BackgroundJobs, JobKind, JobLife, JobList, JobSummary, ResultStatus};
