//! The background MiniZinc tools: solve jobs and portfolio races. They
//! return at once, so they send no progress notifications.

mod args;
mod render;

use rmcp::handler::server::common::schema_for_output;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, tool, tool_router};

use self::args::PortfolioArgs;
use super::args::{JobIdArgs, JobPollArgs, NoArgs, schema};
use super::minizinc::args::SolveModelArgs;
use super::plot;
use super::{JobAction, JobPools, JobTools, SolvergateServer};
use crate::jobs::{JobKind, JobList, PortfolioJobStatus, Portfolios, SolveJobStatus, SolveJobs};
use crate::minizinc::TrajectoryPoint;

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
        description = "Start a MiniZinc solve in the background, for solves that may outlast a client's request timeout; returns a job_id at once (argument errors come before a job exists). Poll get_solve_job.",
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
        input_schema = schema::<JobPollArgs>(),
        output_schema = schema_for_output::<SolveJobStatus>()
    )]
    async fn get_solve_job(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.polled_with_plot::<SolveJobs>(arguments, &context)
            .await
    }

    #[tool(
        description = "Cancel a background solve job: a queued one is dropped, a running one has its processes killed. Returns when it is cancelled; idempotent.",
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
        description = "List the retained background solve jobs (portfolio attempts included), oldest first: one summary each (id, state, timing, status, objective). get_solve_job has a job's full result.",
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
        description = "Race formulations of one instance across solvers and seeds in the background; returns a job_id at once. A proven verdict (optimal, unsatisfiable, unbounded; satisfied on a satisfaction model) wins and the other attempts are killed. On an optimisation model winner_policy \"best_objective\" waits for budget-stopped attempts and takes the best objective; \"first_decisive\" takes the first satisfied one. Poll get_portfolio_job.",
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
        input_schema = schema::<JobPollArgs>(),
        output_schema = schema_for_output::<PortfolioJobStatus>()
    )]
    async fn get_portfolio_job(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.polled_with_plot::<Portfolios>(arguments, &context)
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

impl SolvergateServer {
    /// `get_solve_job` and `get_portfolio_job`: the status, and with
    /// `include_plot` an image of the objective over time (of the solve,
    /// or of every attempt of the race, the winner marked) and a line
    /// about it in the text.
    async fn polled_with_plot<K: JobTools>(
        &self,
        arguments: JsonObject,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let poll = match super::args::parse::<JobPollArgs>(arguments) {
            Ok(poll) => poll,
            Err(error) => return super::refuse(&error),
        };
        // As every job tool: a panic in it is an error result, not a hang.
        let outcome =
            super::contain_panic(self.polled::<K>(JobAction::Get, &poll.job_id, context)).await;
        let mut reply = super::answer(outcome, super::render_polled::<K>)?;
        if !poll.include_plot || reply.is_error == Some(true) {
            return Ok(reply);
        }
        let status = reply.structured_content.clone().unwrap_or_default();
        let lines = match K::KIND {
            JobKind::Portfolio => self.attempt_lines(&status, context).await,
            _ => vec![(solver_of(&status["result"]), trajectory_of(&status), false)],
        };
        let series: Vec<plot::Series<'_>> = lines
            .iter()
            .map(|(label, points, winner)| plot::Series {
                label: label.clone(),
                points,
                winner: *winner,
            })
            .collect();
        let image = plot::objective_over_time(&series);
        if let Some(ContentBlock::Text(text)) = reply.content.first_mut() {
            text.text = format!(
                "{}\n{}",
                text.text,
                plot::caption(image.is_some(), series.len())
            );
        }
        reply.content.extend(image);
        Ok(reply)
    }

    /// Each attempt of a race as (label, trajectory, winner), read from its
    /// solve job (held, or kept by the journal).
    async fn attempt_lines(
        &self,
        status: &serde_json::Value,
        context: &RequestContext<RoleServer>,
    ) -> Vec<(String, Vec<TrajectoryPoint>, bool)> {
        let winner = status["result"]["winner_index"].as_u64();
        let ids = status["attempt_job_ids"]
            .as_array()
            .map_or(&[][..], Vec::as_slice);
        let mut lines = Vec::new();
        for (index, id) in ids.iter().enumerate() {
            let Some(id) = id.as_str() else { continue };
            let Ok(polled) = self.polled::<SolveJobs>(JobAction::Get, id, context).await else {
                continue;
            };
            let Ok(attempt) = serde_json::to_value(polled) else {
                continue;
            };
            let label = format!("attempt {index} ({})", solver_of(&attempt["result"]));
            let won = winner == u64::try_from(index).ok();
            lines.push((label, trajectory_of(&attempt), won));
        }
        lines
    }
}

/// A solve job status's trajectory (none before it has a result).
fn trajectory_of(status: &serde_json::Value) -> Vec<TrajectoryPoint> {
    serde_json::from_value(status["result"]["trajectory"].clone()).unwrap_or_default()
}

/// A result's solver, without the vendor prefix (`gecode`).
fn solver_of(result: &serde_json::Value) -> String {
    let solver = result["solver"].as_str().unwrap_or("solver");
    solver.rsplit('.').next().unwrap_or(solver).to_owned()
}
