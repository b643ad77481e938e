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
    /// Optional inline `.dzn` data shared by every attempt.
    #[serde(default)]
    pub data: Option<String>,
    /// Optional MiniZinc checker shared by every attempt.
    #[serde(default)]
    pub checker: Option<String>,
    /// 1: each (model, solver) runs once unseeded; n > 1: with seeds 1..n
    /// (every solver must support -r). At most 1000.
    #[serde(default = "one")]
    #[schemars(range(min = 1, max = MAX_SEEDS))]
    pub seed_count: i64,
    /// Exact seeds instead of seed_count (1 to 1000 values, no repeats).
    #[serde(default)]
    #[schemars(length(min = 1, max = MAX_SEEDS))]
    pub seeds: Option<Vec<i64>>,
    /// Budget of each attempt in milliseconds; strictly positive.
    #[serde(default = "default_timeout_ms")]
    pub per_attempt_timeout_ms: i64,
    /// `-f` for every attempt.
    #[serde(default)]
    pub free_search: bool,
    /// `-p <n>` for every attempt, 1 to 256.
    #[serde(default)]
    #[schemars(range(min = 1, max = MAX_PARALLEL))]
    pub parallel: Option<i64>,
    /// `-a` for every attempt.
    #[serde(default)]
    pub all_solutions: bool,
    /// `-n <n>` for every attempt, at least 1.
    #[serde(default)]
    pub num_solutions: Option<i64>,
    /// How the race picks its winner (see the tool description).
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
