//! The CP-SAT Python tools: script runs, checked runs, experiments and
//! CP-SAT jobs.

use rmcp::handler::server::common::schema_for_output;
use rmcp::model::{CallToolResult, JsonObject};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, tool, tool_router};

use super::args::{
    self, ExperimentArgs, JobIdArgs, NoArgs, RunCpsatArgs, RunCpsatFileArgs,
    RunCpsatFileCheckedArgs, SubmitCpsatArgs, SubmitCpsatFileArgs,
};
use super::{SolvergateServer, answer, progress, refuse, render};
use crate::cpsat::{CpsatPythonCheckedResult, CpsatPythonExperimentResult, CpsatPythonResult};
use crate::diagnostics::ToolError;
use crate::jobs::{CpsatPythonJobList, CpsatPythonJobStatus};

#[tool_router(router = cpsat_router, vis = "pub(super)")]
impl SolvergateServer {
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
