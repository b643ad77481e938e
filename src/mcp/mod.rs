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
mod shutdown;

use std::sync::{Arc, Mutex};

use rmcp::handler::server::common::schema_for_output;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{
    CallToolResult, ContentBlock, Implementation, JsonObject, LoggingLevel, ServerCapabilities,
    ServerConfig, SetLevelRequestParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, tool, tool_handler, tool_router};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::cpsat::{
    Cpsat, CpsatPythonCheckedResult, CpsatPythonExperimentResult, CpsatPythonResult,
};
use crate::diagnostics::ToolError;
use crate::jobs::{
    CpsatJobs, CpsatPythonJobList, CpsatPythonJobStatus, PortfolioJobList, PortfolioJobStatus,
    PortfolioRequest, Portfolios, SolveJobList, SolveJobStatus, SolveJobs,
};
use crate::minizinc::{
    CheckResult, MiniZinc, ModelInspectionResult, PreflightRequest, SolveRequest, SolveResult,
};
use crate::progress::Progress;
use crate::runtime::cpsat::CpsatRuntime;
use crate::runtime::{self, Runtime, RuntimeStatus, SolverList};
use crate::settings::JobBounds;
use args::{
    ExperimentArgs, FilesArgs, JobIdArgs, ModelArgs, NoArgs, PortfolioArgs, RunCpsatArgs,
    RunCpsatFileArgs, RunCpsatFileCheckedArgs, SolveFilesArgs, SolveModelArgs, SubmitCpsatArgs,
    SubmitCpsatFileArgs,
};
pub use shutdown::EofSignal;

/// Everything a server is built from.
pub struct ServerSetup {
    pub minizinc: Arc<Runtime>,
    pub cpsat: Arc<CpsatRuntime>,
    pub toolset: Toolset,
    pub jobs: JobBounds,
    pub cpsat_jobs: JobBounds,
    /// Cancelled when the client goes away; every call and job runs under it.
    pub shutdown: CancellationToken,
}

/// Which tools the server advertises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Toolset {
    /// The essential tools: runtime, check and solve (inline and files).
    Core,
    /// Every tool, including model inspection.
    Full,
}

/// Tools only the full toolset advertises.
const FULL_ONLY: &[&str] = &[
    "inspect_minizinc_model",
    "inspect_minizinc_files",
    "submit_solve_job",
    "get_solve_job",
    "cancel_solve_job",
    "list_solve_jobs",
    "submit_portfolio_job",
    "get_portfolio_job",
    "cancel_portfolio_job",
    "list_portfolio_jobs",
    "run_cpsat_python_file_checked",
    "run_cpsat_python_experiment",
    "submit_cpsat_python_job",
    "submit_cpsat_python_file_job",
    "get_cpsat_python_job",
    "cancel_cpsat_python_job",
    "list_cpsat_python_jobs",
];

const INSTRUCTIONS: &str = "\
solvergate runs constraint models on local runtimes and reports the runtime's own answer. Route constraint \
satisfaction and optimisation work here — scheduling, rostering, timetabling, assignment, routing, packing, \
knapsack, resource allocation, production planning — instead of reasoning the answer out or running solver \
code yourself.\n\
MiniZinc: draft a complete model, call check_minizinc_model (with the data you will solve with), repair and \
re-check until status is \"ok\", then solve_minizinc_model. A checker (MiniZinc .mzc.mzn source) verifies \
every solution. Models on disk: the *_files tools, absolute paths; relative includes resolve from the model's \
directory.\n\
OR-Tools CP-SAT: write a complete Python script whose last stdout line is one JSON object \
{\"status\": \"optimal|feasible|infeasible|unknown|error\", \"objective\": number or null, \"solution\": {...}} \
with every decision value in the solution; run it with run_cpsat_python (embed the instance; stdin is empty) or \
run_cpsat_python_file. A separate checker script can grade the answer.\n\
Branch on `status`; when something needs attention, `diagnostic.category` says what. Long runs: the \
background job tools (full toolset). Rules for what you draft: modelling code only — no network access, no \
file writes or deletes, no process spawning — unless the user asked for it. Report status, objective and \
solution as returned; a passing check or checker is not a proof of optimality.";

/// The solvergate MCP server.
#[derive(Clone)]
pub struct SolvergateServer {
    minizinc: MiniZinc,
    cpsat_service: Cpsat,
    cpsat_jobs: CpsatJobs,
    solve_jobs: SolveJobs,
    portfolios: Portfolios,
    cpsat: Arc<CpsatRuntime>,
    /// Cancelled when the client goes away; every call runs under a child.
    shutdown: CancellationToken,
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
    pub fn new(setup: ServerSetup) -> Self {
        let ServerSetup {
            minizinc: runtime,
            cpsat,
            toolset,
            jobs: bounds,
            cpsat_jobs,
            shutdown,
        } = setup;
        let mut tool_router = Self::tool_router();
        if toolset == Toolset::Core {
            for name in FULL_ONLY {
                tool_router.remove_route(name);
            }
        }
        let minizinc = MiniZinc::new(runtime);
        let solve_jobs = SolveJobs::new(minizinc.clone(), bounds, shutdown.clone());
        let portfolios = Portfolios::new(solve_jobs.clone(), bounds, shutdown.clone());
        let cpsat_service = Cpsat::new(cpsat.clone());
        let cpsat_jobs = CpsatJobs::new(cpsat_service.clone(), cpsat_jobs, shutdown.clone());
        SolvergateServer {
            minizinc,
            cpsat_service,
            cpsat_jobs,
            solve_jobs,
            portfolios,
            cpsat,
            shutdown,
            tool_router,
            log_level: Arc::new(Mutex::new(LoggingLevel::Info)),
        }
    }

    /// Stops every background job and waits until their processes are gone.
    pub async fn shutdown_jobs(&self) {
        self.portfolios.shutdown().await;
        self.solve_jobs.shutdown().await;
        self.cpsat_jobs.shutdown().await;
    }

    /// Names of the tools this server advertises.
    pub fn tool_names(&self) -> Vec<String> {
        self.tool_router
            .list_all()
            .into_iter()
            .map(|tool| tool.name.to_string())
            .collect()
    }

    /// A token cancelled when this request is cancelled or the server shuts
    /// down; the guard ends the link when the call returns.
    fn call_token(&self, context: &RequestContext<RoleServer>) -> (CancellationToken, DropGuard) {
        let token = self.shutdown.child_token();
        let request = context.ct.clone();
        let linked = token.clone();
        tokio::spawn(async move {
            tokio::select! {
                () = request.cancelled() => linked.cancel(),
                () = linked.cancelled() => {}
            }
        });
        (token.clone(), token.drop_guard())
    }

    /// The shape of every MiniZinc tool: parse the arguments, report stages,
    /// run under the call's token, answer with the result or the error.
    async fn minizinc_call<A, R, T>(
        &self,
        tool: &'static str,
        arguments: JsonObject,
        context: &RequestContext<RoleServer>,
        call: impl AsyncFnOnce(&MiniZinc, R, &Progress, &CancellationToken) -> Result<T, ToolError>,
        render: fn(&T) -> String,
    ) -> Result<CallToolResult, ErrorData>
    where
        A: DeserializeOwned,
        R: From<A>,
        T: Serialize,
    {
        let request = match args::parse::<A>(arguments) {
            Ok(args) => R::from(args),
            Err(error) => return refuse(&error),
        };
        let (cancel, _link) = self.call_token(context);
        let (progress, done) = progress::start(context, tool, self.wants_info_logs());
        let outcome = call(&self.minizinc, request, &progress, &cancel).await;
        progress::finish(progress, done).await;
        answer(outcome, render)
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
        let (cancel, _link) = self.call_token(&context);
        let status = runtime::status(self.minizinc.runtime(), &self.cpsat, &cancel).await;
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
            .catalog(&self.call_token(&context).0)
            .await
            .map(SolverList::from_catalog);
        answer(outcome, render::solver_list)
    }

    #[tool(
        description = "Compile-check a complete MiniZinc model (and optional inline data) for a solver without solving: catches syntax, type, missing-data and unsupported-construct errors cheaply. status \"ok\" means it compiles, not that it is satisfiable. Use before solve_minizinc_model, with the same data.",
        input_schema = args::schema::<ModelArgs>(),
        output_schema = schema_for_output::<CheckResult>()
    )]
    async fn check_minizinc_model(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.minizinc_call::<ModelArgs, PreflightRequest, _>(
            "check_minizinc_model",
            arguments,
            &context,
            async |service, request, progress, cancel| {
                service.check(&request, progress, cancel).await
            },
            render::check,
        )
        .await
    }

    #[tool(
        description = "Report a MiniZinc model's interface without solving: the parameters it still needs (given any data passed), its output variables, and whether it minimises, maximises or satisfies. Use to learn what data to write before a solve.",
        input_schema = args::schema::<ModelArgs>(),
        output_schema = schema_for_output::<ModelInspectionResult>()
    )]
    async fn inspect_minizinc_model(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.minizinc_call::<ModelArgs, PreflightRequest, _>(
            "inspect_minizinc_model",
            arguments,
            &context,
            async |service, request, progress, cancel| {
                service.inspect(&request, progress, cancel).await
            },
            render::inspection,
        )
        .await
    }

    #[tool(
        description = "Solve a constraint satisfaction or optimisation problem — scheduling, rostering, timetabling, assignment, routing, packing, knapsack, resource allocation — written as a complete MiniZinc model (plus optional inline .dzn data and an optional solution checker) on the local runtime. Returns the solver's status, every solution as a variable map, the objective, statistics and, with a checker, a verdict per solution.",
        input_schema = args::schema::<SolveModelArgs>(),
        output_schema = schema_for_output::<SolveResult>()
    )]
    async fn solve_minizinc_model(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.minizinc_call::<SolveModelArgs, SolveRequest, _>(
            "solve_minizinc_model",
            arguments,
            &context,
            async |service, request, progress, cancel| {
                service.solve(&request, progress, cancel).await
            },
            render::solve,
        )
        .await
    }

    #[tool(
        description = "Compile-check a MiniZinc model file (and optional .dzn/.json data file) without solving. Runs in the model's directory so relative includes resolve. Prefer absolute paths.",
        input_schema = args::schema::<FilesArgs>(),
        output_schema = schema_for_output::<CheckResult>()
    )]
    async fn check_minizinc_files(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.minizinc_call::<FilesArgs, PreflightRequest, _>(
            "check_minizinc_files",
            arguments,
            &context,
            async |service, request, progress, cancel| {
                service.check(&request, progress, cancel).await
            },
            render::check,
        )
        .await
    }

    #[tool(
        description = "Report the interface of a MiniZinc model file (required parameters, output variables, method) without solving. Runs in the model's directory so relative includes resolve.",
        input_schema = args::schema::<FilesArgs>(),
        output_schema = schema_for_output::<ModelInspectionResult>()
    )]
    async fn inspect_minizinc_files(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.minizinc_call::<FilesArgs, PreflightRequest, _>(
            "inspect_minizinc_files",
            arguments,
            &context,
            async |service, request, progress, cancel| {
                service.inspect(&request, progress, cancel).await
            },
            render::inspection,
        )
        .await
    }

    #[tool(
        description = "Solve a constraint satisfaction or optimisation problem whose MiniZinc model is a local file (plus optional data file and checker file ending .mzc or .mzc.mzn). Runs in the model's directory so relative includes resolve; returns the same result as solve_minizinc_model. Prefer absolute paths.",
        input_schema = args::schema::<SolveFilesArgs>(),
        output_schema = schema_for_output::<SolveResult>()
    )]
    async fn solve_minizinc_files(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.minizinc_call::<SolveFilesArgs, SolveRequest, _>(
            "solve_minizinc_files",
            arguments,
            &context,
            async |service, request, progress, cancel| {
                service.solve(&request, progress, cancel).await
            },
            render::solve,
        )
        .await
    }

    #[tool(
        description = "Start a MiniZinc solve in the background and return at once with a job_id (state queued or running). Same arguments as solve_minizinc_model; argument errors are reported before a job exists. Poll get_solve_job; use for solves that may outlast a client's request timeout.",
        input_schema = args::schema::<SolveModelArgs>(),
        output_schema = schema_for_output::<SolveJobStatus>()
    )]
    async fn submit_solve_job(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let args: SolveModelArgs = match args::parse(arguments) {
            Ok(args) => args,
            Err(error) => return refuse(&error),
        };
        let (cancel, _link) = self.call_token(&context);
        let outcome = self
            .solve_jobs
            .submit(SolveRequest::from(args), &cancel)
            .await;
        answer(outcome, render::solve_job)
    }

    #[tool(
        description = "Read a background solve job: state (queued, running, succeeded, failed, timeout, cancelled), timing, and the full SolveResult once it is succeeded or timeout. Pace polls against timeout_ms - elapsed_ms.",
        input_schema = args::schema::<JobIdArgs>(),
        output_schema = schema_for_output::<SolveJobStatus>()
    )]
    async fn get_solve_job(&self, arguments: JsonObject) -> Result<CallToolResult, ErrorData> {
        match args::parse::<JobIdArgs>(arguments) {
            Ok(args) => answer(self.solve_jobs.get(&args.job_id), render::solve_job),
            Err(error) => refuse(&error),
        }
    }

    #[tool(
        description = "Cancel a background solve job: a queued job is dropped, a running one has its MiniZinc and solver processes killed. Returns when the job is cancelled; idempotent.",
        input_schema = args::schema::<JobIdArgs>(),
        output_schema = schema_for_output::<SolveJobStatus>()
    )]
    async fn cancel_solve_job(&self, arguments: JsonObject) -> Result<CallToolResult, ErrorData> {
        match args::parse::<JobIdArgs>(arguments) {
            Ok(args) => answer(
                self.solve_jobs.cancel(&args.job_id).await,
                render::solve_job,
            ),
            Err(error) => refuse(&error),
        }
    }

    #[tool(
        description = "List the retained background solve jobs (portfolio attempts included), oldest first. Finished jobs are kept only up to a cap.",
        input_schema = args::schema::<NoArgs>(),
        output_schema = schema_for_output::<SolveJobList>()
    )]
    async fn list_solve_jobs(&self, arguments: JsonObject) -> Result<CallToolResult, ErrorData> {
        match args::parse::<NoArgs>(arguments) {
            Ok(_) => answer(
                Ok::<_, ToolError>(self.solve_jobs.list()),
                render::solve_jobs,
            ),
            Err(error) => refuse(&error),
        }
    }

    #[tool(
        description = "Race several formulations of one instance across solvers and seeds in the background; returns at once with a job_id. The first attempt with a decisive verdict (optimal, satisfied, unsatisfiable, unbounded) wins and the server kills the others immediately; otherwise the best attempt wins. Poll get_portfolio_job for the winner and the full attempts table.",
        input_schema = args::schema::<PortfolioArgs>(),
        output_schema = schema_for_output::<PortfolioJobStatus>()
    )]
    async fn submit_portfolio_job(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let args: PortfolioArgs = match args::parse(arguments) {
            Ok(args) => args,
            Err(error) => return refuse(&error),
        };
        let (cancel, _link) = self.call_token(&context);
        let outcome = self
            .portfolios
            .submit(PortfolioRequest::from(args), &cancel)
            .await;
        answer(outcome, render::portfolio_job)
    }

    #[tool(
        description = "Read a portfolio job: state (running, succeeded, cancelled) and, once succeeded, the PortfolioSolveResult with the winner, every attempt and provenance hashes. Reading never changes the race.",
        input_schema = args::schema::<JobIdArgs>(),
        output_schema = schema_for_output::<PortfolioJobStatus>()
    )]
    async fn get_portfolio_job(&self, arguments: JsonObject) -> Result<CallToolResult, ErrorData> {
        match args::parse::<JobIdArgs>(arguments) {
            Ok(args) => answer(self.portfolios.get(&args.job_id), render::portfolio_job),
            Err(error) => refuse(&error),
        }
    }

    #[tool(
        description = "Stop a portfolio race and every attempt (their processes are killed). Returns when all are stopped; idempotent.",
        input_schema = args::schema::<JobIdArgs>(),
        output_schema = schema_for_output::<PortfolioJobStatus>()
    )]
    async fn cancel_portfolio_job(
        &self,
        arguments: JsonObject,
    ) -> Result<CallToolResult, ErrorData> {
        match args::parse::<JobIdArgs>(arguments) {
            Ok(args) => answer(
                self.portfolios.cancel(&args.job_id).await,
                render::portfolio_job,
            ),
            Err(error) => refuse(&error),
        }
    }

    #[tool(
        description = "List the retained portfolio jobs, oldest first.",
        input_schema = args::schema::<NoArgs>(),
        output_schema = schema_for_output::<PortfolioJobList>()
    )]
    async fn list_portfolio_jobs(
        &self,
        arguments: JsonObject,
    ) -> Result<CallToolResult, ErrorData> {
        match args::parse::<NoArgs>(arguments) {
            Ok(_) => answer(
                Ok::<_, ToolError>(self.portfolios.list()),
                render::portfolio_jobs,
            ),
            Err(error) => refuse(&error),
        }
    }

    #[tool(
        description = "Run a complete OR-Tools CP-SAT Python script (written by you for the user's problem) in a bounded child process and return its answer. The script's last stdout line must be one JSON object {\"status\": \"optimal|feasible|infeasible|unknown|error\", \"objective\": number|null, \"solution\": {...}}; the executor enforces it and names the offending key when it is malformed. Embed the instance in the script; stdin is empty.",
        input_schema = args::schema::<RunCpsatArgs>(),
        output_schema = schema_for_output::<CpsatPythonResult>()
    )]
    async fn run_cpsat_python(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let request = match args::parse::<RunCpsatArgs>(arguments) {
            Ok(args) => args.into_request(),
            Err(error) => return refuse(&error),
        };
        let (cancel, _link) = self.call_token(&context);
        let (progress, done) =
            progress::start(&context, "run_cpsat_python", self.wants_info_logs());
        let outcome = self.cpsat_service.run(&request, &progress, &cancel).await;
        progress::finish(progress, done).await;
        answer(outcome, render::cpsat_run)
    }

    #[tool(
        description = "Run a local OR-Tools CP-SAT Python script file (prefer an absolute path) in its own directory, with optional args (its sys.argv[1:]) and replay seed/config. Same envelope contract and result as run_cpsat_python.",
        input_schema = args::schema::<RunCpsatFileArgs>(),
        output_schema = schema_for_output::<CpsatPythonResult>()
    )]
    async fn run_cpsat_python_file(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let request = match args::parse::<RunCpsatFileArgs>(arguments)
            .and_then(RunCpsatFileArgs::into_request)
        {
            Ok(request) => request,
            Err(error) => return refuse(&error),
        };
        let (cancel, _link) = self.call_token(&context);
        let (progress, done) =
            progress::start(&context, "run_cpsat_python_file", self.wants_info_logs());
        let outcome = self.cpsat_service.run(&request, &progress, &cancel).await;
        progress::finish(progress, done).await;
        answer(outcome, render::cpsat_run)
    }

    #[tool(
        description = "Run a local CP-SAT script file, then grade its answer with a local Python checker (payload file with problem, solution, objective, solver_status as argv[1]; last stdout line {\"status\": \"accepted|rejected|error\", \"errors\": [...]}). test_checker also grades four mutated solutions to show whether the checker rejects anything.",
        input_schema = args::schema::<RunCpsatFileCheckedArgs>(),
        output_schema = schema_for_output::<CpsatPythonCheckedResult>()
    )]
    async fn run_cpsat_python_file_checked(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let request = match args::parse::<RunCpsatFileCheckedArgs>(arguments)
            .and_then(RunCpsatFileCheckedArgs::into_request)
        {
            Ok(request) => request,
            Err(error) => return refuse(&error),
        };
        let (cancel, _link) = self.call_token(&context);
        let (progress, done) = progress::start(
            &context,
            "run_cpsat_python_file_checked",
            self.wants_info_logs(),
        );
        let outcome = self
            .cpsat_service
            .run_checked(&request, &progress, &cancel)
            .await;
        progress::finish(progress, done).await;
        answer(outcome, render::cpsat_checked)
    }

    #[tool(
        description = "Run several script variants of the same CP-SAT problem (inline source or script_path each), grade them with the same gates (a usable answer, a finite objective when ranking, then an optional checker) and pick one winner by objective, status, duration, attempt order. Every attempt is validated before any runs; the call is capped at 210 s of projected wall clock.",
        input_schema = args::schema::<ExperimentArgs>(),
        output_schema = schema_for_output::<CpsatPythonExperimentResult>()
    )]
    async fn run_cpsat_python_experiment(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let request = match args::parse::<ExperimentArgs>(arguments) {
            Ok(args) => crate::cpsat::ExperimentRequest::from(args),
            Err(error) => return refuse(&error),
        };
        let (cancel, _link) = self.call_token(&context);
        let (progress, done) = progress::start(
            &context,
            "run_cpsat_python_experiment",
            self.wants_info_logs(),
        );
        let outcome = self
            .cpsat_service
            .experiment(&request, &progress, &cancel)
            .await;
        progress::finish(progress, done).await;
        answer(outcome, render::experiment)
    }

    #[tool(
        description = "Start a CP-SAT Python script in the background (optionally with an inline checker run on its answer); returns at once with a job_id. Poll get_cpsat_python_job.",
        input_schema = args::schema::<SubmitCpsatArgs>(),
        output_schema = schema_for_output::<CpsatPythonJobStatus>()
    )]
    async fn submit_cpsat_python_job(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let request = match args::parse::<SubmitCpsatArgs>(arguments) {
            Ok(args) => args.into_request(),
            Err(error) => return refuse(&error),
        };
        let (cancel, _link) = self.call_token(&context);
        answer(
            self.cpsat_jobs.submit(request, &cancel).await,
            render::cpsat_job,
        )
    }

    #[tool(
        description = "Start a local CP-SAT script file in the background, in its own directory, with optional args and a checker (inline checker or checker_path, not both). Paths are validated and resolved at submit. Poll get_cpsat_python_job.",
        input_schema = args::schema::<SubmitCpsatFileArgs>(),
        output_schema = schema_for_output::<CpsatPythonJobStatus>()
    )]
    async fn submit_cpsat_python_file_job(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let request = match args::parse::<SubmitCpsatFileArgs>(arguments)
            .and_then(SubmitCpsatFileArgs::into_request)
        {
            Ok(request) => request,
            Err(error) => return refuse(&error),
        };
        let (cancel, _link) = self.call_token(&context);
        answer(
            self.cpsat_jobs.submit(request, &cancel).await,
            render::cpsat_job,
        )
    }

    #[tool(
        description = "Read a CP-SAT job: state, timing, and once succeeded or timeout the full result and the checker's verdict. A job stays running through its checker phase.",
        input_schema = args::schema::<JobIdArgs>(),
        output_schema = schema_for_output::<CpsatPythonJobStatus>()
    )]
    async fn get_cpsat_python_job(
        &self,
        arguments: JsonObject,
    ) -> Result<CallToolResult, ErrorData> {
        match args::parse::<JobIdArgs>(arguments) {
            Ok(args) => answer(self.cpsat_jobs.get(&args.job_id), render::cpsat_job),
            Err(error) => refuse(&error),
        }
    }

    #[tool(
        description = "Cancel a CP-SAT job: a queued one is dropped, a running one has its script or checker process tree killed. Returns when it is cancelled; idempotent.",
        input_schema = args::schema::<JobIdArgs>(),
        output_schema = schema_for_output::<CpsatPythonJobStatus>()
    )]
    async fn cancel_cpsat_python_job(
        &self,
        arguments: JsonObject,
    ) -> Result<CallToolResult, ErrorData> {
        match args::parse::<JobIdArgs>(arguments) {
            Ok(args) => answer(
                self.cpsat_jobs.cancel(&args.job_id).await,
                render::cpsat_job,
            ),
            Err(error) => refuse(&error),
        }
    }

    #[tool(
        description = "List the retained CP-SAT jobs (inline and file), oldest first.",
        input_schema = args::schema::<NoArgs>(),
        output_schema = schema_for_output::<CpsatPythonJobList>()
    )]
    async fn list_cpsat_python_jobs(
        &self,
        arguments: JsonObject,
    ) -> Result<CallToolResult, ErrorData> {
        match args::parse::<NoArgs>(arguments) {
            Ok(_) => answer(
                Ok::<_, ToolError>(self.cpsat_jobs.list()),
                render::cpsat_jobs,
            ),
            Err(error) => refuse(&error),
        }
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
