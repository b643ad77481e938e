//! The CP-SAT Python tools: script runs, checked runs, experiments and
//! CP-SAT jobs.

mod args;
pub(super) mod render;

use rmcp::handler::server::common::schema_for_output;
use rmcp::model::{CallToolResult, JsonObject};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, tool, tool_router};

use self::args::{
    ExperimentArgs, RunCpsatArgs, RunCpsatFileArgs, RunCpsatFileCheckedArgs, SubmitCpsatArgs,
    SubmitCpsatFileArgs,
};
use super::args::{JobIdArgs, NoArgs, schema};
use super::{JobAction, JobPools, JobTools, SolvergateServer};
use crate::cpsat::{CpsatPythonCheckedResult, CpsatPythonExperimentResult, CpsatPythonResult};
use crate::jobs::{CpsatJobs, CpsatPythonJobStatus, JobList};

impl JobTools for CpsatJobs {
    const GET_TOOL: &'static str = "get_cpsat_python_job";
    const RENDER: fn(&CpsatPythonJobStatus) -> String = render::cpsat_job;
    const RENDER_LIST: fn(&JobList) -> String = render::cpsat_jobs;

    fn of(pools: &JobPools) -> &Self {
        &pools.cpsat_jobs
    }
}

#[tool_router(router = cpsat_router, vis = "pub(super)")]
impl SolvergateServer {
    #[tool(
        description = "Run a complete OR-Tools CP-SAT Python script in a bounded child process and return its answer. Its last stdout line must be one JSON object {\"status\": \"optimal|feasible|infeasible|unknown|error\", \"objective\": number|null, \"solution\": {...}}; a malformed one is refused with the offending key named. Shortcut: `import solvergate` and end with `solvergate.report(solver, status, {\"x\": x, ...}, model=model)` (in a solution callback, `solvergate.report_intermediate(self, {...})`). Embed the instance; stdin is empty.",
        input_schema = schema::<RunCpsatArgs>(),
        output_schema = schema_for_output::<CpsatPythonResult>()
    )]
    async fn run_cpsat_python(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.long_call::<RunCpsatArgs, _>(
            "run_cpsat_python",
            arguments,
            &context,
            async |request, progress, cancel| {
                self.cpsat_service.run(&request, progress, cancel).await
            },
            render::cpsat_run,
        )
        .await
    }

    #[tool(
        description = "run_cpsat_python for a local OR-Tools CP-SAT Python script file, run in its own directory: the same envelope contract and result.",
        input_schema = schema::<RunCpsatFileArgs>(),
        output_schema = schema_for_output::<CpsatPythonResult>()
    )]
    async fn run_cpsat_python_file(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.long_call::<RunCpsatFileArgs, _>(
            "run_cpsat_python_file",
            arguments,
            &context,
            async |request, progress, cancel| {
                self.cpsat_service.run(&request, progress, cancel).await
            },
            render::cpsat_run,
        )
        .await
    }

    #[tool(
        description = "Run a local CP-SAT script file, then grade its answer with a local Python checker (last stdout line {\"status\": \"accepted|rejected|error\", \"errors\": [...]}).",
        input_schema = schema::<RunCpsatFileCheckedArgs>(),
        output_schema = schema_for_output::<CpsatPythonCheckedResult>()
    )]
    async fn run_cpsat_python_file_checked(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.long_call::<RunCpsatFileCheckedArgs, _>(
            "run_cpsat_python_file_checked",
            arguments,
            &context,
            async |request, progress, cancel| {
                self.cpsat_service
                    .run_checked(&request, progress, cancel)
                    .await
            },
            render::cpsat_checked,
        )
        .await
    }

    #[tool(
        description = "Run several script variants of the same CP-SAT problem, grade them with the same gates (a usable answer, a finite objective when ranking, then the checker) and pick one winner by objective, status, duration, attempt order. Every attempt is validated before any runs; the call is capped at 210 s of projected wall clock.",
        input_schema = schema::<ExperimentArgs>(),
        output_schema = schema_for_output::<CpsatPythonExperimentResult>()
    )]
    async fn run_cpsat_python_experiment(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.long_call::<ExperimentArgs, _>(
            "run_cpsat_python_experiment",
            arguments,
            &context,
            async |request, progress, cancel| {
                self.cpsat_service
                    .experiment(&request, progress, cancel)
                    .await
            },
            render::experiment,
        )
        .await
    }

    #[tool(
        description = "Start a CP-SAT Python script in the background, optionally checked; returns a job_id at once. Poll get_cpsat_python_job.",
        input_schema = schema::<SubmitCpsatArgs>(),
        output_schema = schema_for_output::<CpsatPythonJobStatus>()
    )]
    async fn submit_cpsat_python_job(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.submit_job::<CpsatJobs, SubmitCpsatArgs>(arguments, &context)
            .await
    }

    #[tool(
        description = "Start a local CP-SAT script file in the background, in its own directory, optionally checked; returns a job_id at once. Paths are validated and resolved at submit. Poll get_cpsat_python_job.",
        input_schema = schema::<SubmitCpsatFileArgs>(),
        output_schema = schema_for_output::<CpsatPythonJobStatus>()
    )]
    async fn submit_cpsat_python_file_job(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.submit_job::<CpsatJobs, SubmitCpsatFileArgs>(arguments, &context)
            .await
    }

    #[tool(
        description = "Read a CP-SAT job: state, timing, and once succeeded or timeout the full result and the checker's verdict. A job stays running through its checker phase.",
        input_schema = schema::<JobIdArgs>(),
        output_schema = schema_for_output::<CpsatPythonJobStatus>()
    )]
    async fn get_cpsat_python_job(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.job_by_id::<CpsatJobs>(JobAction::Get, arguments, &context)
            .await
    }

    #[tool(
        description = "Cancel a CP-SAT job: a queued one is dropped, a running one has its processes killed. Returns when it is cancelled; idempotent.",
        input_schema = schema::<JobIdArgs>(),
        output_schema = schema_for_output::<CpsatPythonJobStatus>()
    )]
    async fn cancel_cpsat_python_job(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.job_by_id::<CpsatJobs>(JobAction::Cancel, arguments, &context)
            .await
    }

    #[tool(
        description = "List the retained CP-SAT jobs, oldest first: one summary each (id, state, timing, status, objective). get_cpsat_python_job has a job's full result.",
        input_schema = schema::<NoArgs>(),
        output_schema = schema_for_output::<JobList>()
    )]
    async fn list_cpsat_python_jobs(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.list_jobs::<CpsatJobs>(arguments, &context).await
    }
}
