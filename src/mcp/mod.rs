//! The MCP face: an rmcp server over stdio whose tools are thin adapters —
//! parse the arguments, call the service, wrap the result.
//!
//! Each tool returns the service's result struct as structured content
//! (its schema is the tool's output schema) plus a readable text part.
//! Argument and environment problems come back as tool errors whose text
//! starts `Diagnostic: <category> — <message>`. Long tools report stages as
//! progress notifications (when the request carries a progress token) and
//! as info-level log notifications.

// MCP logging is deprecated in the newest protocol revision but is still
// what older clients show; we keep sending it for them.
#![allow(deprecated)]

mod args;
mod progress;
mod render;

use std::sync::{Arc, Mutex};

use rmcp::handler::server::common::schema_for_output;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ContentBlock, Implementation, LoggingLevel, ServerCapabilities, ServerConfig,
    SetLevelRequestParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, tool, tool_handler, tool_router};
use serde::Serialize;

use crate::diagnostics::ToolError;
use crate::minizinc::{
    CheckResult, MiniZinc, ModelInspectionResult, PreflightRequest, SolveRequest, SolveResult,
};
use crate::runtime::cpsat::CpsatRuntime;
use crate::runtime::{self, Runtime, RuntimeStatus, SolverList};
use args::{FilesArgs, ModelArgs, SolveFilesArgs, SolveModelArgs};

/// Which tools the server advertises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Toolset {
    /// The essential tools: runtime, check and solve (inline and files).
    Core,
    /// Every tool, including model inspection.
    Full,
}

/// Tools only the full toolset advertises.
const FULL_ONLY: &[&str] = &["inspect_minizinc_model", "inspect_minizinc_files"];

const INSTRUCTIONS: &str = "\
solvergate runs constraint models on a local MiniZinc runtime and reports the runtime's own answer. \
Route constraint satisfaction and optimisation work here — scheduling, rostering, timetabling, assignment, \
routing, packing, knapsack, resource allocation, production planning — instead of reasoning the answer out or \
running solver code yourself.\n\
Workflow: draft a complete MiniZinc model, call check_minizinc_model (pass the same data you will solve with), \
repair and re-check until status is \"ok\", then solve_minizinc_model. Branch on `status`; when something needs \
attention, `diagnostic.category` says what. A checker (MiniZinc .mzc.mzn source) verifies every solution.\n\
Models on disk: use the *_files tools with absolute paths; relative includes resolve from the model's directory.\n\
Rules for what you draft: modelling code only — no network access, no file writes or deletes, no process \
spawning — unless the user asked for it. Report the solver's status, objective and solution as returned; \
an `ok` check means the model compiles, not that it is satisfiable.";

/// The solvergate MCP server.
#[derive(Clone)]
pub struct SolvergateServer {
    minizinc: MiniZinc,
    cpsat: Arc<CpsatRuntime>,
    tool_router: ToolRouter<Self>,
    log_level: Arc<Mutex<LoggingLevel>>,
}

/// Structured content plus its readable rendering.
fn reply<T: Serialize>(result: &T, text: String) -> Result<CallToolResult, ErrorData> {
    let value = serde_json::to_value(result).map_err(|error| {
        ErrorData::internal_error(format!("could not encode the result: {error}"), None)
    })?;
    let mut reply = CallToolResult::structured(value);
    reply.content = vec![ContentBlock::text(text)];
    Ok(reply)
}

/// A problem found before any result: an error result the client shows.
fn refuse(error: &ToolError) -> Result<CallToolResult, ErrorData> {
    Ok(CallToolResult::error(vec![ContentBlock::text(
        error.to_string(),
    )]))
}

fn answer<T: Serialize>(
    outcome: Result<T, ToolError>,
    render: impl FnOnce(&T) -> String,
) -> Result<CallToolResult, ErrorData> {
    match outcome {
        Ok(result) => {
            let text = render(&result);
            reply(&result, text)
        }
        Err(error) => refuse(&error),
    }
}

#[tool_router]
impl SolvergateServer {
    pub fn new(runtime: Arc<Runtime>, cpsat: Arc<CpsatRuntime>, toolset: Toolset) -> Self {
        let mut tool_router = Self::tool_router();
        if toolset == Toolset::Core {
            for name in FULL_ONLY {
                tool_router.remove_route(name);
            }
        }
        SolvergateServer {
            minizinc: MiniZinc::new(runtime),
            cpsat,
            tool_router,
            log_level: Arc::new(Mutex::new(LoggingLevel::Info)),
        }
    }

    /// Names of the tools this server advertises.
    pub fn tool_names(&self) -> Vec<String> {
        self.tool_router
            .list_all()
            .into_iter()
            .map(|tool| tool.name.to_string())
            .collect()
    }

    fn wants_info_logs(&self) -> bool {
        let level = self
            .log_level
            .lock()
            .map(|level| *level)
            .unwrap_or(LoggingLevel::Info);
        matches!(level, LoggingLevel::Debug | LoggingLevel::Info)
    }

    #[tool(
        description = "Report whether the runtimes are installed: MiniZinc (directory, binary, version, which rule chose it) and CP-SAT (the Python interpreter and its OR-Tools version). Call first when a tool fails with runtime_missing.",
        output_schema = schema_for_output::<RuntimeStatus>()
    )]
    async fn check_runtime(
        &self,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let status = runtime::status(self.minizinc.runtime(), &self.cpsat, &context.ct).await;
        let text = render::runtime_status(&status);
        reply(&status, text)
    }

    #[tool(
        description = "List the solvers the MiniZinc runtime offers (id, name, version, tags) with each one's capabilities (all_solutions, free_search, parallel, random_seed, num_solutions) read from its declared flags, and the solver used when none is named.",
        output_schema = schema_for_output::<SolverList>()
    )]
    async fn list_available_solvers(
        &self,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let outcome = self
            .minizinc
            .runtime()
            .catalog(&context.ct)
            .await
            .map(SolverList::from_catalog);
        answer(outcome, render::solver_list)
    }

    #[tool(
        description = "Compile-check a complete MiniZinc model (and optional inline data) for a solver without solving: catches syntax, type, missing-data and unsupported-construct errors cheaply. status \"ok\" means it compiles, not that it is satisfiable. Use before solve_minizinc_model, with the same data.",
        output_schema = schema_for_output::<CheckResult>()
    )]
    async fn check_minizinc_model(
        &self,
        Parameters(args): Parameters<ModelArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let request = PreflightRequest::from(args);
        let (progress, done) =
            progress::start(&context, "check_minizinc_model", self.wants_info_logs());
        let outcome = self.minizinc.check(&request, &progress, &context.ct).await;
        progress::finish(progress, done).await;
        answer(outcome, render::check)
    }

    #[tool(
        description = "Report a MiniZinc model's interface without solving: the parameters it still needs (given any data passed), its output variables, and whether it minimises, maximises or satisfies. Use to learn what data to write before a solve.",
        output_schema = schema_for_output::<ModelInspectionResult>()
    )]
    async fn inspect_minizinc_model(
        &self,
        Parameters(args): Parameters<ModelArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let request = PreflightRequest::from(args);
        let (progress, done) =
            progress::start(&context, "inspect_minizinc_model", self.wants_info_logs());
        let outcome = self
            .minizinc
            .inspect(&request, &progress, &context.ct)
            .await;
        progress::finish(progress, done).await;
        answer(outcome, render::inspection)
    }

    #[tool(
        description = "Solve a constraint satisfaction or optimisation problem — scheduling, rostering, timetabling, assignment, routing, packing, knapsack, resource allocation — written as a complete MiniZinc model (plus optional inline .dzn data and an optional solution checker) on the local runtime. Returns the solver's status, every solution as a variable map, the objective, statistics and, with a checker, a verdict per solution.",
        output_schema = schema_for_output::<SolveResult>()
    )]
    async fn solve_minizinc_model(
        &self,
        Parameters(args): Parameters<SolveModelArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let request = SolveRequest::from(args);
        let (progress, done) =
            progress::start(&context, "solve_minizinc_model", self.wants_info_logs());
        let outcome = self.minizinc.solve(&request, &progress, &context.ct).await;
        progress::finish(progress, done).await;
        answer(outcome, render::solve)
    }

    #[tool(
        description = "Compile-check a MiniZinc model file (and optional .dzn/.json data file) without solving. Runs in the model's directory so relative includes resolve. Prefer absolute paths.",
        output_schema = schema_for_output::<CheckResult>()
    )]
    async fn check_minizinc_files(
        &self,
        Parameters(args): Parameters<FilesArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let request = PreflightRequest::from(args);
        let (progress, done) =
            progress::start(&context, "check_minizinc_files", self.wants_info_logs());
        let outcome = self.minizinc.check(&request, &progress, &context.ct).await;
        progress::finish(progress, done).await;
        answer(outcome, render::check)
    }

    #[tool(
        description = "Report the interface of a MiniZinc model file (required parameters, output variables, method) without solving. Runs in the model's directory so relative includes resolve.",
        output_schema = schema_for_output::<ModelInspectionResult>()
    )]
    async fn inspect_minizinc_files(
        &self,
        Parameters(args): Parameters<FilesArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let request = PreflightRequest::from(args);
        let (progress, done) =
            progress::start(&context, "inspect_minizinc_files", self.wants_info_logs());
        let outcome = self
            .minizinc
            .inspect(&request, &progress, &context.ct)
            .await;
        progress::finish(progress, done).await;
        answer(outcome, render::inspection)
    }

    #[tool(
        description = "Solve a constraint satisfaction or optimisation problem whose MiniZinc model is a local file (plus optional data file and checker file ending .mzc or .mzc.mzn). Runs in the model's directory so relative includes resolve; returns the same result as solve_minizinc_model. Prefer absolute paths.",
        output_schema = schema_for_output::<SolveResult>()
    )]
    async fn solve_minizinc_files(
        &self,
        Parameters(args): Parameters<SolveFilesArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let request = SolveRequest::from(args);
        let (progress, done) =
            progress::start(&context, "solve_minizinc_files", self.wants_info_logs());
        let outcome = self.minizinc.solve(&request, &progress, &context.ct).await;
        progress::finish(progress, done).await;
        answer(outcome, render::solve)
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for SolvergateServer {
    fn get_info(&self) -> ServerConfig {
        let mut server_info = Implementation::new("solvergate", env!("CARGO_PKG_VERSION"));
        server_info.title = Some("solvergate".to_owned());
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_logging()
                .build(),
        )
        .with_server_info(server_info)
        .with_instructions(INSTRUCTIONS)
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if let Ok(mut level) = self.log_level.lock() {
            *level = request.level;
        }
        Ok(())
    }
}
