//! The arguments of `submit_portfolio_job` (a solve job takes
//! `solve_minizinc_model`'s, the get, cancel and list tools the shared ones).

use schemars::JsonSchema;
use serde::Deserialize;

use crate::diagnostics::ToolError;
use crate::exec::limits::LimitCaps;
use crate::jobs::{MAX_SEEDS, PortfolioRequest, WinnerPolicy};
use crate::mcp::args::{CallLimits, IntoRequest, checked_budget, default_timeout_ms, one};
use crate::minizinc::MAX_PARALLEL;

/// Arguments of `submit_portfolio_job`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PortfolioArgs {
    /// Alternative formulations of the same instance (complete MiniZinc
    /// models sharing `data` and `checker`); not a batch of different problems.
    pub models: Vec<String>,
    /// Solvers to race (ids, short names or tags).
    pub solvers: Vec<String>,
    /// Inline data (`.dzn` text).
    #[serde(default)]
    pub data: Option<String>,
    /// Checker source (`.mzc.mzn` text) run on every solution; it prints
    /// CORRECT or INCORRECT: why.
    #[serde(default)]
    pub checker: Option<String>,
    /// 1: each (model, solver) runs once unseeded; n > 1: with seeds 1..n
    /// (every solver must support -r).
    #[serde(default = "one")]
    #[schemars(range(min = 1, max = MAX_SEEDS))]
    pub seed_count: i64,
    /// Exact seeds instead of seed_count, no repeats.
    #[serde(default)]
    #[schemars(length(min = 1, max = MAX_SEEDS))]
    pub seeds: Option<Vec<i64>>,
    /// Budget of each attempt in milliseconds, above 0.
    #[serde(default = "default_timeout_ms")]
    pub per_attempt_timeout_ms: i64,
    /// `-f`: let the solver ignore the model's search annotations.
    #[serde(default)]
    pub free_search: bool,
    /// `-p <n>`: parallel threads.
    #[serde(default)]
    #[schemars(range(min = 1, max = MAX_PARALLEL))]
    pub parallel: Option<i64>,
    /// `-a`: all solutions (satisfaction) or the improving sequence
    /// (optimisation), each in `solutions`.
    #[serde(default)]
    pub all_solutions: bool,
    /// `-n <n>`: at most n (at least 1) solutions of a satisfaction problem,
    /// for solvers that declare `-n`.
    #[serde(default)]
    pub num_solutions: Option<i64>,
    #[serde(default)]
    pub winner_policy: WinnerPolicy,
    #[serde(default)]
    pub limits: CallLimits,
}

impl IntoRequest for PortfolioArgs {
    type Request = PortfolioRequest;

    fn limits(&self) -> LimitCaps {
        self.limits.caps()
    }

    fn into_request(self) -> Result<PortfolioRequest, ToolError> {
        Ok(PortfolioRequest {
            models: self.models,
            solvers: self.solvers,
            data: self.data,
            checker: self.checker,
            seed_count: self.seed_count,
            seeds: self.seeds,
            per_attempt_timeout_ms: checked_budget(
                "per_attempt_timeout_ms",
                self.per_attempt_timeout_ms,
            )?,
            free_search: self.free_search,
            parallel: self.parallel,
            all_solutions: self.all_solutions,
            num_solutions: self.num_solutions,
            winner_policy: self.winner_policy,
        })
    }
}
