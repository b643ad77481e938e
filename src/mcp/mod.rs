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

// One folder per area: its tools (`mod.rs`), arguments and text parts.
mod artifacts;
mod cpsat;
mod equations;
mod jobs;
mod minizinc;
mod planner;
mod tabular;
mod unsat;

// What the areas share.
mod answer;
mod args;
mod bounded;
mod plot;
mod progress;
mod prompts;
mod render;
mod results;
mod schema;
pub mod stdio_gate;
mod tasks;
mod titles;

use std::sync::{Arc, Mutex};

use rmcp::handler::server::router::prompt::PromptRouter;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{
    CallToolResult, CancelTaskParams, ContentBlock, GetTaskParams, GetTaskResult, Implementation,
    JsonObject, LoggingLevel, ServerCapabilities, ServerConfig, SetLevelRequestParams,
    UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, prompt_handler, tool_handler};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::artifacts::Artifacts;
use crate::cpsat::Cpsat;
use crate::diagnostics::{Category, ToolError};
use crate::equations::Equations;
use crate::exec::limits::with_caps;
use crate::jobs::store::{JobJournal, JobStoreSetup};
use crate::jobs::{
    BackendChoice, BackgroundJobs, CpsatJobs, JobBackend, JobList, Portfolios, SolveJobs,
};
use crate::minizinc::MiniZinc;
use crate::planner::{Planner, ResultStore};
use crate::progress::Progress;
use crate::runtime::Runtime;
use crate::runtime::cpsat::CpsatRuntime;
use crate::settings::JobBounds;
use crate::unsat::UnsatCores;
use args::{IntoRequest, JobIdArgs, NoArgs};

/// Everything a server is built from.
pub struct ServerSetup {
    /// The MiniZinc runtime every solve and check runs on.
    pub minizinc: Arc<Runtime>,
    /// The Python interpreter with OR-Tools that CP-SAT scripts run on.
    pub cpsat: Arc<CpsatRuntime>,
    /// Which tools the server advertises.
    pub toolset: Toolset,
    /// Bounds of the MiniZinc job registry (solve jobs and portfolio attempts;
    /// portfolios take its retention).
    pub jobs: JobBounds,
    /// Bounds of the CP-SAT job registry.
    pub cpsat_jobs: JobBounds,
    /// Cancelled when the client goes away; every call and job runs under it.
    pub shutdown: CancellationToken,
    /// Debug builds only: honour the test panic marker.
    pub test_hooks: bool,
    /// Where in-progress saves record their staging dirs.
    pub artifact_journal: std::path::PathBuf,
    /// Where planner results are kept.
    pub planner_store: ResultStore,
    /// Warm CP-SAT forkers to keep (0: every script runs cold).
    pub cpsat_warm: usize,
    /// Where background jobs run.
    pub job_backend: BackendChoice,
    /// Where jobs are kept beyond this process, and whose they are.
    pub job_store: Option<JobStoreSetup>,
    /// The most a tool result's content takes in a response, in bytes.
    pub response_limit: usize,
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
    "save_verified_minizinc_model",
    "save_verified_cpsat_python",
    "replay_artifact",
    "plan_load",
    "explain_load_plan",
    "verify_narration",
    "save_load_plan",
    "find_unsat_core",
    "find_unsat_core_files",
    "load_tabular_data",
    "write_tabular_result",
    "correct_values",
    "validate_equations",
    "evaluate_equations",
    "optimize_expression",
];

/// What every toolset's instructions start with: what the server is for,
/// and the two solving paths.
macro_rules! instructions_common {
    () => {
        "\
solvergate runs constraint models on local runtimes and reports the runtime's own answer. Route constraint \
satisfaction and optimisation work here — scheduling, rostering, timetabling, assignment, routing, packing, \
knapsack, resource allocation, production planning — instead of reasoning the answer out or running solver \
code yourself.\n\
MiniZinc: draft a complete model, call check_minizinc_model (with the data you will solve with), repair and \
re-check until status is \"ok\", then solve_minizinc_model. A checker (MiniZinc .mzc.mzn source) verifies \
every solution: it declares the output variables it reads as parameters without a value (`int: x;`; no `var`, \
no `solve`) and prints, for every solution, a line starting CORRECT or INCORRECT: <why>. Only \
checker.verdict \"accepted\" is a pass; an error, no output or neither word is not. Models on disk: the *_files tools, absolute paths; relative includes resolve from the model's \
directory.\n\
OR-Tools CP-SAT: write a complete Python script whose last stdout line is one JSON object \
{\"status\": \"optimal|feasible|infeasible|unknown|error\", \"objective\": number or null, \"solution\": {...}} \
with every decision value in the solution (`import solvergate` and solvergate.report(...) writes it); run it \
with run_cpsat_python (embed the instance; stdin is empty) or run_cpsat_python_file.\n\
Branch on `status`; when something needs attention, `diagnostic.category` says what. Rules for what you \
draft: modelling code only — no network access, no file writes or deletes, no process spawning — unless the \
user asked for it. Report status, objective and solution as returned; a passing check or checker is not a \
proof of optimality.\n"
    };
}

const CORE_INSTRUCTIONS: &str = concat!(
    instructions_common!(),
    "This is the core toolset. Background jobs, races, unsat cores, spreadsheets, saves and the other tools \
need the server started with `--toolset full` (`solvergate stdio --toolset full`, or `solvergate serve --http ADDR --toolset full`)."
);

const FULL_INSTRUCTIONS: &str = concat!(
    instructions_common!(),
    "\
Also here: an unsatisfiable MiniZinc model → find_unsat_core (same model and data) names the conflicting \
constraints. Solves that may outlast a request → submit_solve_job / get_solve_job; several solvers, seeds or \
formulations raced → submit_portfolio_job; CP-SAT variants compared → run_cpsat_python_experiment; a CP-SAT \
answer graded by a checker script → run_cpsat_python_file_checked or submit_cpsat_python_job. Spreadsheet \
or CSV data → load_tabular_data to read, write_tabular_result to write (only when the user asks). Numbers \
that must satisfy equations (an invoice, a budget) → validate_equations, evaluate_equations, correct_values, \
optimize_expression. Shipping loads → plan_load. Save a verified result only when the user asks and names \
an absolute directory (save_verified_*); replay_artifact re-runs a save."
);

/// The solvergate MCP server.
#[derive(Clone)]
pub struct SolvergateServer {
    minizinc: MiniZinc,
    artifacts: Artifacts,
    planner: Planner,
    unsat: UnsatCores,
    equations: Equations,
    cpsat_service: Cpsat,
    /// This server's own background jobs (stdio, an HTTP session).
    jobs: JobPools,
    /// Over HTTP: the jobs of requests that come without a session (MCP
    /// 2026-07-28 and later), shared by every per-request server.
    sessionless_jobs: Option<JobPools>,
    cpsat: Arc<CpsatRuntime>,
    /// Cancelled when the client goes away; every call runs under a child.
    shutdown: CancellationToken,
    tool_router: ToolRouter<Self>,
    prompt_router: PromptRouter<Self>,
    toolset: Toolset,
    log_level: Arc<Mutex<LoggingLevel>>,
    cpsat_warm: usize,
    job_backend: Arc<dyn JobBackend>,
    /// Where this server's answers are kept as resources (beside the job
    /// store, in the same scope); none without a job store (tests).
    results: Option<results::Kept>,
    /// The most a sheet's page takes: the response bound less room for
    /// the text part and the rest of the result.
    page_ceiling: usize,
}

/// The background job registries a job tool works on. Over stdio and in an
/// HTTP session they are the server's own, so a job is visible only to
/// the client that submitted it. Requests without a session (MCP 2026-07-28
/// and later over HTTP: every request is served by a fresh server) share
/// one set kept by the HTTP face; there a job is reached by its id alone —
/// 122 random bits, a capability only its submitter was given — and the
/// list tools, which would show everyone's, refuse.
#[derive(Clone)]
pub struct JobPools {
    solve_jobs: SolveJobs,
    portfolios: Portfolios,
    cpsat_jobs: CpsatJobs,
    /// Tool calls answered with an MCP task ([`tasks`]).
    tasks: tasks::Tasks,
    /// The races' journal, once kept: a dead session's races are retired
    /// from it ([`Self::cancel_abandoned`]).
    race_journal: Arc<std::sync::OnceLock<Arc<JobJournal<Portfolios>>>>,
}

impl JobPools {
    fn new(
        minizinc: &MiniZinc,
        cpsat: &Cpsat,
        backend: &Arc<dyn JobBackend>,
        bounds: JobBounds,
        cpsat_bounds: JobBounds,
        shutdown: &CancellationToken,
    ) -> Self {
        let solve_jobs =
            SolveJobs::new(minizinc.clone(), backend.clone(), bounds, shutdown.clone());
        JobPools {
            tasks: tasks::registry(bounds, shutdown.clone()),
            portfolios: Portfolios::new(solve_jobs.clone(), bounds, shutdown.clone()),
            solve_jobs,
            race_journal: Arc::default(),
            cpsat_jobs: CpsatJobs::new(
                cpsat.clone(),
                backend.clone(),
                cpsat_bounds,
                shutdown.clone(),
            ),
        }
    }

    /// Keeps every kind's jobs in `store` too (see [`crate::jobs::store`]).
    fn keep_in(
        &self,
        store: &JobStoreSetup,
        bounds: JobBounds,
        cpsat_bounds: JobBounds,
        on_slurm: bool,
    ) {
        let (root, scope) = (&store.root, &store.scope);
        let retained = bounds.max_retained_terminal;
        self.solve_jobs
            .keep_in(Arc::new(JobJournal::<SolveJobs>::new(
                root, scope, retained, on_slurm,
            )));
        // A race runs in this process; its attempts are the solve jobs,
        // which outlive it on Slurm (its message on a restart says so).
        let races = Arc::new(JobJournal::<Portfolios>::new(
            root, scope, retained, on_slurm,
        ));
        self.portfolios.registry().keep_in(races.clone());
        let _ = self.race_journal.set(races);
        self.cpsat_jobs
            .keep_in(Arc::new(JobJournal::<CpsatJobs>::new(
                root,
                scope,
                cpsat_bounds.max_retained_terminal,
                on_slurm,
            )));
        // A task is a tool call, which runs in this process.
        self.tasks
            .keep_in(Arc::new(JobJournal::<tasks::TaskKind>::new(
                root, scope, retained, false,
            )));
    }

    /// Takes over the Slurm jobs an earlier server of this scope left
    /// running (see [`crate::jobs::reattach`]); how many.
    fn reattach_orphans(&self) -> usize {
        self.solve_jobs.reattach_orphans() + self.cpsat_jobs.reattach_orphans()
    }

    /// Ends the Slurm jobs of dead servers' HTTP sessions, which nobody
    /// can read any more, and retires their races (see
    /// [`crate::jobs::reattach`]); how many jobs it cancels.
    fn cancel_abandoned(&self) -> usize {
        if let Some(races) = self.race_journal.get() {
            crate::jobs::reattach::retire_abandoned_races(races);
        }
        self.solve_jobs.cancel_abandoned() + self.cpsat_jobs.cancel_abandoned()
    }

    /// Stops every job and waits until their processes are gone, or until
    /// `deadline` passes; returns how many jobs had not ended by then.
    pub async fn shutdown(&self, deadline: std::time::Duration) -> usize {
        let (portfolios, solves, cpsat, tasks) = tokio::join!(
            self.portfolios.shutdown(deadline),
            self.solve_jobs.shutdown(deadline),
            self.cpsat_jobs.shutdown(deadline),
            self.tasks.shutdown(deadline),
        );
        portfolios + solves + cpsat + tasks
    }
}

/// What the face adds to one kind of background job: where its registry
/// sits among the [`JobPools`], its get tool's name and its text parts.
/// Solve jobs, portfolio races and CP-SAT jobs each say these once
/// (`jobs/mod.rs`, `cpsat/mod.rs`); submit, get, cancel and list, and the
/// unknown-id error, are the service's ([`BackgroundJobs`]), so the tools
/// of every kind share one implementation ([`SolvergateServer::submit_job`],
/// [`SolvergateServer::job_by_id`], [`SolvergateServer::list_jobs`]).
trait JobTools: BackgroundJobs {
    /// The get tool of this kind, named when a list is refused.
    const GET_TOOL: &'static str;
    /// The text part of a status.
    const RENDER: fn(&Self::Status) -> String;
    /// The text part of a list.
    const RENDER_LIST: fn(&JobList) -> String;
    /// This kind's registry among `pools`.
    fn of(pools: &JobPools) -> &Self;
}

/// What a tool that takes a job id does with the job.
#[derive(Debug, Clone, Copy)]
enum JobAction {
    /// Read its status.
    Get,
    /// Cancel it and wait until its processes are gone.
    Cancel,
}

/// A job's status: from this server's registry, or as its journal stored
/// it (sent exactly as it was written).
#[derive(Serialize)]
#[serde(untagged)]
enum Polled<S> {
    /// The registry holds the job.
    Live(S),
    /// An earlier server's job, or one retention evicted.
    Stored(serde_json::Value),
}

/// The text part of a polled status; a stored one this version cannot
/// read as its status type says where its state is.
fn render_polled<K: JobTools>(polled: &Polled<K::Status>) -> String {
    match polled {
        Polled::Live(status) => K::RENDER(status),
        Polled::Stored(value) => match serde_json::from_value::<K::Status>(value.clone()) {
            Ok(status) => K::RENDER(&status),
            Err(_) => format!(
                "job {}: {} (kept by an earlier solvergate version; the structured content has its status)",
                value["job_id"].as_str().unwrap_or("?"),
                value["state"].as_str().unwrap_or("?")
            ),
        },
    }
}

/// Whether a request came without a session: a protocol revision without
/// the initialize handshake (2026-07-28 and later).
fn sessionless(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|version| !version.has_initialize())
}

/// Structured content plus its readable rendering, held to
/// [`render::TEXT_LIMIT`].
fn reply<T: Serialize>(result: &T, text: String) -> Result<CallToolResult, ErrorData> {
    let value = serde_json::to_value(result).map_err(|error| {
        ErrorData::internal_error(format!("could not encode the result: {error}"), None)
    })?;
    let mut reply = CallToolResult::structured(value);
    reply.content = vec![ContentBlock::text(render::bounded(text))];
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

impl SolvergateServer {
    /// Builds the server from `setup`: the services, the job registries and
    /// backend, and the router of `setup.toolset`.
    pub fn new(setup: ServerSetup) -> Self {
        let ServerSetup {
            minizinc: runtime,
            cpsat,
            toolset,
            jobs: bounds,
            cpsat_jobs,
            shutdown,
            test_hooks,
            artifact_journal,
            planner_store,
            cpsat_warm,
            job_backend,
            job_store,
            response_limit,
        } = setup;
        let mut tool_router = Self::minizinc_router()
            + Self::job_router()
            + Self::cpsat_router()
            + Self::artifact_router()
            + Self::planner_router()
            + Self::unsat_router()
            + Self::tabular_router()
            + Self::equation_router();
        let mut prompt_router = Self::prompt_router() + Self::planner_prompt_router();
        if toolset == Toolset::Core {
            for name in FULL_ONLY {
                tool_router.remove_route(name);
            }
            for name in prompts::FULL_ONLY_PROMPTS
                .iter()
                .chain(planner::prompt::PROMPTS)
            {
                prompt_router.remove_route(name);
            }
        }
        schema::finish(&mut tool_router);
        let minizinc = MiniZinc::new(runtime).with_test_hooks(test_hooks);
        let cpsat_service = Cpsat::new(cpsat.clone());
        let on_slurm = matches!(job_backend, BackendChoice::Slurm(_));
        let job_backend =
            crate::jobs::local::build(&job_backend, minizinc.clone(), cpsat_service.clone());
        let jobs = JobPools::new(
            &minizinc,
            &cpsat_service,
            &job_backend,
            bounds,
            cpsat_jobs,
            &shutdown,
        );
        if let Some(store) = &job_store {
            jobs.keep_in(store, bounds, cpsat_jobs, on_slurm);
        }
        let results = job_store.as_ref().map(|store| {
            results::Kept::new(
                store.root.with_file_name(results::DIR),
                &store.scope,
                results::MAX_COUNT,
                results::MAX_BYTES,
            )
            .with_response_limit(response_limit)
        });
        let planner = Planner::new(minizinc.clone(), planner_store);
        let equations = Equations::new(minizinc.clone());
        let artifacts = Artifacts::new(
            minizinc.clone(),
            cpsat_service.clone(),
            planner.clone(),
            artifact_journal,
        )
        .with_test_hooks(test_hooks);
        SolvergateServer {
            unsat: UnsatCores::new(minizinc.clone()),
            minizinc,
            artifacts,
            planner,
            equations,
            cpsat_service,
            jobs,
            sessionless_jobs: None,
            cpsat,
            shutdown,
            tool_router,
            prompt_router,
            toolset,
            log_level: Arc::new(Mutex::new(LoggingLevel::Info)),
            cpsat_warm,
            job_backend,
            results,
            page_ceiling: crate::tabular::PAGE_CEILING_BYTES
                + response_limit.saturating_sub(crate::settings::DEFAULT_RESPONSE_LIMIT),
        }
    }

    /// Starts, in the background, the one-time probes the first calls would
    /// otherwise pay for: the CP-SAT interpreter's `import ortools` (most of
    /// a second) and MiniZinc's solver catalogue. Failures are not cached;
    /// the first call that needs one reports it. The warm CP-SAT forkers
    /// are armed here and start with the first script run.
    pub fn warm_up(&self) {
        self.cpsat_service
            .enable_warm_pool(self.cpsat_warm, self.shutdown.clone());
        let cpsat = self.cpsat_service.clone();
        let minizinc = self.minizinc.clone();
        let shutdown = self.shutdown.clone();
        tokio::spawn(async move {
            let _ = tokio::join!(
                cpsat.python(&shutdown),
                minizinc.runtime().catalog(&shutdown)
            );
        });
    }

    /// The start-up banner's line about where jobs run.
    pub fn job_backend_line(&self) -> String {
        self.job_backend.describe()
    }

    /// How many handles to this server exist: every clone shares one
    /// log-level cell, so a count of one means only the caller holds it
    /// (the HTTP face uses this to notice a session that has ended).
    pub fn handle_count(&self) -> usize {
        Arc::strong_count(&self.log_level)
    }

    /// Stops every background job and waits until their processes are
    /// gone, or until `deadline` passes; returns how many jobs had not
    /// ended by then.
    pub async fn shutdown_jobs(&self, deadline: std::time::Duration) -> usize {
        let left = self.jobs.shutdown(deadline).await;
        // Whatever a backend still runs elsewhere (a Slurm job whose
        // cancel had not finished by the deadline) is stopped too.
        self.job_backend.shutdown().await;
        left
    }

    /// Takes over the Slurm jobs an earlier server left running, of this
    /// server's own scope: called once at start-up by a face whose scope
    /// outlives a process (stdio, an HTTP server's sessionless jobs).
    /// Says on stderr how many it took over, when any. Then ends the
    /// Slurm jobs of dead servers' HTTP sessions, which nobody can read
    /// any more (their `scancel` in the background), and says how many.
    pub fn reattach_slurm_jobs(&self) {
        let taken = self.jobs.reattach_orphans();
        if taken > 0 {
            eprintln!(
                "solvergate: following {taken} Slurm job(s) an earlier server left running; they finish here"
            );
        }
        let cancelled = self.jobs.cancel_abandoned();
        if cancelled > 0 {
            eprintln!(
                "solvergate: cancelling {cancelled} Slurm job(s) of HTTP sessions whose server stopped; no one can read them any more"
            );
        }
    }

    /// This server's own job registries, for [`Self::with_sessionless_jobs`].
    pub fn job_pools(&self) -> JobPools {
        self.jobs.clone()
    }

    /// Serves the job tools of requests without a session from `pools`
    /// (the HTTP face passes one set to every server it builds).
    pub fn with_sessionless_jobs(mut self, pools: JobPools) -> Self {
        self.sessionless_jobs = Some(pools);
        self
    }

    /// The registries this request's job tools use.
    fn jobs(&self, context: &RequestContext<RoleServer>) -> &JobPools {
        match &self.sessionless_jobs {
            Some(shared) if sessionless(context) => shared,
            _ => &self.jobs,
        }
    }

    /// Where the caller's answers are kept: this server's scope, or the
    /// shared one of requests without a session.
    fn results(&self, context: &RequestContext<RoleServer>) -> Option<results::Kept> {
        let kept = self.results.as_ref()?;
        Some(if self.sessionless_jobs.is_some() && sessionless(context) {
            kept.sessionless()
        } else {
            kept.clone()
        })
    }

    /// The registries a list tool shows: the caller's own. A request
    /// without a session has none (it would see every sessionless
    /// client's jobs), so it is refused with what to do instead.
    fn listed_jobs(
        &self,
        context: &RequestContext<RoleServer>,
        get_tool: &str,
    ) -> Result<&JobPools, ToolError> {
        if self.sessionless_jobs.is_some() && sessionless(context) {
            return Err(ToolError::new(
                Category::InvalidRequest,
                format!(
                    "job lists need a session, and this request came without one (MCP 2026-07-28 or later over HTTP): its jobs are reached by id alone. Keep the job_id the submit call returned and pass it to {get_tool}; or connect with a session (protocol 2025-11-25 or earlier) to list jobs"
                ),
            ));
        }
        Ok(&self.jobs)
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

    /// The shape of every long tool: parse the arguments, report stages,
    /// run under the call's token and its `limits` caps, answer with the
    /// result or the error.
    async fn long_call<A, T>(
        &self,
        tool: &'static str,
        arguments: JsonObject,
        context: &RequestContext<RoleServer>,
        call: impl AsyncFnOnce(A::Request, &Progress, &CancellationToken) -> Result<T, ToolError>,
        render: fn(&T) -> String,
    ) -> Result<CallToolResult, ErrorData>
    where
        A: DeserializeOwned + IntoRequest,
        T: Serialize,
    {
        let (caps, request) = match args::parse::<A>(arguments).and_then(args::capped_request) {
            Ok(parsed) => parsed,
            Err(error) => return refuse(&error),
        };
        let (cancel, _link) = self.call_token(context);
        let (progress, done) = progress::start(context, tool, self.wants_info_logs());
        let outcome = with_caps(caps, contain_panic(call(request, &progress, &cancel))).await;
        progress::finish(progress, done).await;
        answer(outcome, render)
    }

    /// The shape of every job tool: parse, call under the call's token and
    /// its `limits` caps, answer at once (no progress notifications).
    async fn quick_call<A, T>(
        &self,
        arguments: JsonObject,
        context: &RequestContext<RoleServer>,
        call: impl AsyncFnOnce(A::Request, &CancellationToken) -> Result<T, ToolError>,
        render: fn(&T) -> String,
    ) -> Result<CallToolResult, ErrorData>
    where
        A: DeserializeOwned + IntoRequest,
        T: Serialize,
    {
        let (caps, request) = match args::parse::<A>(arguments).and_then(args::capped_request) {
            Ok(parsed) => parsed,
            Err(error) => return refuse(&error),
        };
        let (cancel, _link) = self.call_token(context);
        // A job admitted here keeps the caps in its own task (the registry
        // carries them).
        let outcome = with_caps(caps, contain_panic(call(request, &cancel))).await;
        answer(outcome, render)
    }

    /// A submit tool of job kind `K`: parse `A`, then validate and admit
    /// under the call's token.
    async fn submit_job<K, A>(
        &self,
        arguments: JsonObject,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData>
    where
        K: JobTools,
        A: DeserializeOwned + IntoRequest<Request = K::Request>,
    {
        self.quick_call::<A, _>(
            arguments,
            context,
            async |request, cancel| K::of(self.jobs(context)).submit(request, cancel).await,
            K::RENDER,
        )
        .await
    }

    /// The get and cancel tools of job kind `K`: the status of the job
    /// the id names, after cancelling it for [`JobAction::Cancel`].
    /// A job this server does not hold is looked up in its registry's
    /// journal: an earlier server's job is answered as stored, and
    /// cancelling one that has ended returns it as it is.
    async fn job_by_id<K: JobTools>(
        &self,
        action: JobAction,
        arguments: JsonObject,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.quick_call::<JobIdArgs, _>(
            arguments,
            context,
            async |id, _cancel| self.polled::<K>(action, &id, context).await,
            render_polled::<K>,
        )
        .await
    }

    /// The status of job `id` of kind `K` (after cancelling it, for
    /// [`JobAction::Cancel`]): from the registry, else from its journal.
    async fn polled<K: JobTools>(
        &self,
        action: JobAction,
        id: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<Polled<K::Status>, ToolError> {
        let jobs = K::of(self.jobs(context));
        // A job an earlier server left running on Slurm becomes this one's.
        jobs.reattach(id);
        let live = match action {
            JobAction::Get => jobs.get(id),
            JobAction::Cancel => jobs.cancel(id).await,
        };
        match live {
            Ok(status) => Ok(Polled::Live(status)),
            Err(unknown) => jobs
                .registry()
                .stored(id)
                .map(Polled::Stored)
                .ok_or(unknown),
        }
    }

    /// The list tool of job kind `K`: the caller's own jobs, refused
    /// without a session (see [`Self::listed_jobs`]).
    async fn list_jobs<K: JobTools>(
        &self,
        arguments: JsonObject,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.quick_call::<NoArgs, _>(
            arguments,
            context,
            async |(), _cancel| Ok(K::of(self.listed_jobs(context, K::GET_TOOL)?).list()),
            K::RENDER_LIST,
        )
        .await
    }

    fn wants_info_logs(&self) -> bool {
        let level = self
            .log_level
            .lock()
            .map(|level| *level)
            .unwrap_or(LoggingLevel::Info);
        matches!(level, LoggingLevel::Debug | LoggingLevel::Info)
    }
}

/// Runs a tool's work so that a panic in it becomes an error result the
/// client sees, instead of a request that never answers.
async fn contain_panic<T>(
    work: impl std::future::Future<Output = Result<T, ToolError>>,
) -> Result<T, ToolError> {
    use futures_util::FutureExt;
    std::panic::AssertUnwindSafe(work)
        .catch_unwind()
        .await
        .unwrap_or_else(|payload| {
            let text = payload
                .downcast_ref::<&str>()
                .copied()
                .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
                .unwrap_or("no message");
            Err(ToolError::new(
                Category::Unknown,
                format!(
                    "solvergate hit an internal error ({text}) and stopped this call; its processes were stopped. This is a bug — please report it"
                ),
            ))
        })
}

#[tool_handler(router = self.tool_router)]
#[prompt_handler(router = self.prompt_router)]
impl ServerHandler for SolvergateServer {
    fn get_info(&self) -> ServerConfig {
        let mut server_info = Implementation::new("solvergate", env!("CARGO_PKG_VERSION"));
        server_info.title = Some("solvergate".to_owned());
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_prompts()
                .enable_resources()
                .enable_logging()
                .enable_tasks()
                .build(),
        )
        .with_server_info(server_info)
        .with_instructions(match self.toolset {
            Toolset::Core => CORE_INSTRUCTIONS,
            Toolset::Full => FULL_INSTRUCTIONS,
        })
    }

    /// As the generated handler, except that an unknown tool is an
    /// invalid-params error that names it (rmcp's says only "tool not
    /// found"), so a client can tell which name was wrong.
    async fn call_tool(
        &self,
        request: rmcp::model::CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, ErrorData> {
        if !self.tool_router.has_route(&request.name) {
            let toolset = match self.toolset {
                Toolset::Core => " in the core toolset",
                Toolset::Full => "",
            };
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown tool: {:?}{toolset}; tools/list names the tools this server has",
                    request.name
                ),
                None,
            ));
        }
        // A path outside the roots a confined server allows is refused
        // before anything runs (see `roots`).
        if let Err(error) = crate::roots::admit_arguments(request.arguments.as_ref()) {
            return refuse(&error).map(Into::into);
        }
        if tasks::wanted(&request.name, &context) {
            return tasks::start(self, &self.jobs(&context).tasks, request, &context);
        }
        let tool = request.name.clone();
        let results = self.results(&context);
        let version = context.protocol_version();
        let call = rmcp::handler::server::tool::ToolCallContext::new(self, request, context);
        let response = self.tool_router.call(call).await?;
        Ok(match (response, results) {
            (rmcp::model::CallToolResponse::Complete(result), Some(kept)) => {
                results::link(&kept, &tool, result, version.as_ref())
                    .await
                    .into()
            }
            (response, _) => response,
        })
    }

    async fn list_resources(
        &self,
        _request: Option<rmcp::model::PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourcesResult, ErrorData> {
        Ok(rmcp::model::ListResourcesResult::with_all_items(
            self.results(&context)
                .map(|kept| results::listed(&kept))
                .unwrap_or_default(),
        ))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<rmcp::model::PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourceTemplatesResult, ErrorData> {
        Ok(rmcp::model::ListResourceTemplatesResult::with_all_items(
            results::templates(),
        ))
    }

    async fn read_resource(
        &self,
        request: rmcp::model::ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceResponse, ErrorData> {
        // An unknown resource is -32602 with its URI in the data (SEP-2164).
        let not_found = |message: String| {
            ErrorData::invalid_params(message, Some(serde_json::json!({"uri": request.uri})))
        };
        let Some(kept) = self.results(&context) else {
            return Err(not_found("this server keeps no results".to_owned()));
        };
        // Up to READ_LIMIT bytes from disk: off the async threads.
        let uri = request.uri.clone();
        let read = tokio::task::spawn_blocking(move || kept.read(&uri))
            .await
            .map_err(|error| ErrorData::internal_error(error.to_string(), None))?;
        match read {
            Ok(text) => Ok(rmcp::model::ReadResourceResult::new(vec![
                rmcp::model::ResourceContents::TextResourceContents {
                    uri: request.uri,
                    mime_type: Some("application/json".to_owned()),
                    text,
                    meta: None,
                },
            ])
            .into()),
            Err(error) => Err(not_found(error.to_string())),
        }
    }

    /// The task's status; once it has ended, its result or error. An id
    /// this server does not hold is looked up in the journal.
    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        tasks::check_declared(&context)?;
        let tasks = &self.jobs(&context).tasks;
        let detailed = match tasks.get(&request.task_id) {
            Some(snapshot) => tasks::detailed(&snapshot),
            None => tasks
                .stored(&request.task_id)
                .and_then(tasks::read_stored)
                .ok_or_else(|| tasks::unknown(&request.task_id, tasks))?,
        };
        Ok(GetTaskResult::new(detailed))
    }

    /// Stops the task's processes and answers once they are gone; a task
    /// that has ended stays as it ended.
    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        tasks::check_declared(&context)?;
        let tasks = &self.jobs(&context).tasks;
        match tasks.cancel(&request.task_id).await {
            Some(_) => Ok(()),
            None => tasks::check_known(tasks, &request.task_id),
        }
    }

    /// No tool of ours asks for input, so there is nothing to resume: a
    /// known task acknowledges (unknown keys are ignored, as the extension
    /// says), an unknown one is an error.
    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        tasks::check_declared(&context)?;
        tasks::check_known(&self.jobs(&context).tasks, &request.task_id)
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
