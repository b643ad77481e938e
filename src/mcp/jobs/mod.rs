//! The background MiniZinc tools: solve jobs and portfolio races. They
//! return at once, so they send no progress notifications.

mod args;
mod render;

use rmcp::handler::server::common::schema_for_output;
use rmcp::model::{CallToolResult, JsonObject};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, tool, tool_router};

use self::args::PortfolioArgs;
use super::args::{JobIdArgs, NoArgs, schema};
use super::minizinc::args::SolveModelArgs;
use super::{JobAction, JobPools, JobTools, SolvergateServer};
use crate::jobs::{JobList, PortfolioJobStatus, Portfolios, SolveJobStatus, SolveJobs};

impl JobTools for SolveJobs {
    const GET_TOOL: &'static str = "get_solve_job";
    const RENDER: fn(&SolveJobStatus) -> String = render::solve_job;
    const RENDER_LIST: fn(&JobList) -> String = render::solve_jobs;

    fn of(pools: &JobPools) -> &Self {
        &pools.solve_jobs
    }
}

impl JobTools for Portfolios {
    const GET_TOOL: &'static str = "get_portfolio_job";
    const RENDER: fn(&PortfolioJobStatus) -> String = render::portfolio_job;
    const RENDER_LIST: fn(&JobList) -> String = render::portfolio_jobs;

    fn of(pools: &JobPools) -> &Self {
        &pools.portfolios
    }
}

#[tool_router(router = job_router, vis = "pub(super)")]
impl SolvergateServer {
    #[tool(
        description = "Start a MiniZinc solve in the background; returns a job_id at once. Same arguments as solve_minizinc_model; argument errors come before a job exists. Poll get_solve_job; use for solves that may outlast a client's request timeout.",
        input_schema = schema::<SolveModelArgs>(),
        output_schema = schema_for_output::<SolveJobStatus>()
    )]
    async fn submit_solve_job(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.submit_job::<SolveJobs, SolveModelArgs>(arguments, &context)
            .await
    }

    #[tool(
        description = "Read a background solve job: state, timing, and the full SolveResult once it is succeeded or timeout. Pace polls against timeout_ms - elapsed_ms.",
        input_schema = schema::<JobIdArgs>(),
        output_schema = schema_for_output::<SolveJobStatus>()
    )]
    async fn get_solve_job(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.job_by_id::<SolveJobs>(JobAction::Get, arguments, &context)
            .await
    }

    #[tool(
        description = "Cancel a background solve job: a queued job is dropped, a running one has its processes killed. Returns when the job is cancelled; idempotent.",
        input_schema = schema::<JobIdArgs>(),
        output_schema = schema_for_output::<SolveJobStatus>()
    )]
    async fn cancel_solve_job(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.job_by_id::<SolveJobs>(JobAction::Cancel, arguments, &context)
            .await
    }

    #[tool(
        description = "List the retained background solve jobs (portfolio attempts included), oldest first: one summary each (id, state, timing, status, objective). get_solve_job returns a job's full result.",
        input_schema = schema::<NoArgs>(),
        output_schema = schema_for_output::<JobList>()
    )]
    async fn list_solve_jobs(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.list_jobs::<SolveJobs>(arguments, &context).await
    }

    #[tool(
        description = "Race formulations of one instance across solvers and seeds in the background; returns a job_id at once. A proven verdict (optimal, unsatisfiable, unbounded; satisfied on a satisfaction model) wins and the other attempts are killed. On an optimisation model the default winner_policy \"best_objective\" waits for budget-stopped attempts and takes the best objective; \"first_decisive\" takes the first satisfied one. Poll get_portfolio_job.",
        input_schema = schema::<PortfolioArgs>(),
        output_schema = schema_for_output::<PortfolioJobStatus>()
    )]
    async fn submit_portfolio_job(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.submit_job::<Portfolios, PortfolioArgs>(arguments, &context)
            .await
    }

    #[tool(
        description = "Read a portfolio job: state and, once succeeded, the PortfolioSolveResult with the winner, every attempt and provenance hashes.",
        input_schema = schema::<JobIdArgs>(),
        output_schema = schema_for_output::<PortfolioJobStatus>()
    )]
    async fn get_portfolio_job(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.job_by_id::<Portfolios>(JobAction::Get, arguments, &context)
            .await
    }

    #[tool(
        description = "Stop a portfolio race and every attempt (their processes are killed). Returns when all are stopped; idempotent.",
        input_schema = schema::<JobIdArgs>(),
        output_schema = schema_for_output::<PortfolioJobStatus>()
    )]
    async fn cancel_portfolio_job(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.job_by_id::<Portfolios>(JobAction::Cancel, arguments, &context)
            .await
    }

    #[tool(
        description = "List the retained portfolio jobs, oldest first: one summary each (id, state, timing, winner or no_winner, the winner's objective). get_portfolio_job returns the full race.",
        input_schema = schema::<NoArgs>(),
        output_schema = schema_for_output::<JobList>()
    )]
    async fn list_portfolio_jobs(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.list_jobs::<Portfolios>(arguments, &context).await
    }
}
