//! Background jobs: a bounded registry generic over its work
//! ([`registry`]), MiniZinc solves as jobs ([`solve`]), and portfolio races
//! whose losers the server kills the moment a winner is known
//! ([`portfolio`]), CP-SAT scripts as jobs ([`cpsat`]), and what every
//! kind shares in what a client reads ([`status`]).

pub mod cpsat;
pub mod portfolio;
pub mod registry;
pub mod solve;
pub mod status;
pub mod winner;

pub use cpsat::{CpsatJobRequest, CpsatJobs, CpsatPythonJobStatus};
pub use portfolio::{
    MAX_SEEDS, PortfolioJobStatus, PortfolioRequest, PortfolioSolveResult, Portfolios, WinnerPolicy,
};
pub use registry::{Completion, JobRegistry, JobSnapshot, JobState, Outcome, RegistryFull, Start};
pub use solve::{SolveJobStatus, SolveJobs};
pub use status::{JobKind, JobList, JobSummary};
