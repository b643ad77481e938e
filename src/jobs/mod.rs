//! Background jobs: a bounded registry generic over its work
//! ([`registry`]), MiniZinc solves as jobs ([`solve`]), and portfolio races
//! whose losers the server kills the moment a winner is known
//! ([`portfolio`]).

pub mod cpsat;
pub mod portfolio;
pub mod registry;
pub mod solve;

pub use cpsat::{CpsatJobRequest, CpsatJobs, CpsatPythonJobList, CpsatPythonJobStatus};
pub use portfolio::{
    PortfolioJobList, PortfolioJobStatus, PortfolioRequest, PortfolioSolveResult, Portfolios,
};
pub use registry::{JobRegistry, JobSnapshot, JobState, Outcome, RegistryFull, Start};
pub use solve::{SolveJobList, SolveJobStatus, SolveJobs};
