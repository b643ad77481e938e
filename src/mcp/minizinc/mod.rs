//! The MiniZinc tools and the runtime introspection tools: adapters that
//! parse arguments, call the MiniZinc service and wrap its result.

pub(super) mod args;
pub(super) mod render;

use rmcp::handler::server::common::schema_for_output;
use rmcp::model::{CallToolResult, JsonObject};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, tool, tool_router};

use self::args::{FilesArgs, ModelArgs, SolveFilesArgs, SolveModelArgs};
use super::args::{NoArgs, parse, schema};
use super::{SolvergateServer, answer, refuse, reply};
use crate::minizinc::{CheckResult, ModelInspectionResult, SolveResult};
use crate::runtime::{self, RuntimeStatus, SolverList};

#[tool_router(router = minizinc_router, vis = "pub(super)")]
impl SolvergateServer {
    #[tool(
        description = "Report whether the runtimes are installed: MiniZinc (directory, binary, version, which rule chose it) and CP-SAT (the Python interpreter, its OR-Tools version), and the resource limits every run is held to and how each is enforced. Call first when a tool fails with runtime_missing.",
        input_schema = schema::<NoArgs>(),
        output_schema = schema_for_output::<RuntimeStatus>()
    )]
    async fn check_runtime(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        if let Err(error) = parse::<NoArgs>(arguments) {
            return refuse(&error);
        }
        let (cancel, _link) = self.call_token(&context);
        let status = runtime::status(self.minizinc.runtime(), &self.cpsat, &cancel).await;
        let text = render::runtime_status(&status);
        reply(&status, text)
    }

    #[tool(
        description = "List the solvers the MiniZinc runtime offers (id, name, version, tags), each one's capabilities (all_solutions, free_search, parallel, random_seed, num_solutions) from its declared flags, whether it can run here (and why not: a MIP solver without its library), and the solver used when none is named.",
        input_schema = schema::<NoArgs>(),
        output_schema = schema_for_output::<SolverList>()
    )]
    async fn list_available_solvers(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        if let Err(error) = parse::<NoArgs>(arguments) {
            return refuse(&error);
        }
        let (cancel, _link) = self.call_token(&context);
        let outcome = self.minizinc.runtime().solver_list(&cancel).await;
        answer(outcome, render::solver_list)
    }

    #[tool(
        description = "Compile-check a complete MiniZinc model for a solver without solving: catches syntax, type, missing-data and unsupported-construct errors cheaply. status \"ok\" means it compiles, not that it is satisfiable. Use before solve_minizinc_model, with the same data.",
        input_schema = schema::<ModelArgs>(),
        output_schema = schema_for_output::<CheckResult>()
    )]
    async fn check_minizinc_model(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.long_call::<ModelArgs, _>(
            "check_minizinc_model",
            arguments,
            &context,
            async |request, progress, cancel| self.minizinc.check(&request, progress, cancel).await,
            render::check,
        )
        .await
    }

    #[tool(
        description = "Report a MiniZinc model's interface without solving: the parameters it still needs (given any data passed), its output variables, and whether it minimises, maximises or satisfies. Use to learn what data to write.",
        input_schema = schema::<ModelArgs>(),
        output_schema = schema_for_output::<ModelInspectionResult>()
    )]
    async fn inspect_minizinc_model(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.long_call::<ModelArgs, _>(
            "inspect_minizinc_model",
            arguments,
            &context,
            async |request, progress, cancel| {
                self.minizinc.inspect(&request, progress, cancel).await
            },
            render::inspection,
        )
        .await
    }

    #[tool(
        description = "Solve a constraint satisfaction or optimisation problem — scheduling, rostering, timetabling, assignment, routing, packing, knapsack, resource allocation — written as a complete MiniZinc model, on the local runtime. Returns the solver's status, every solution as a variable map, the objective, statistics and, with a checker, a verdict per solution.",
        input_schema = schema::<SolveModelArgs>(),
        output_schema = schema_for_output::<SolveResult>()
    )]
    async fn solve_minizinc_model(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.long_call::<SolveModelArgs, _>(
            "solve_minizinc_model",
            arguments,
            &context,
            async |request, progress, cancel| self.minizinc.solve(&request, progress, cancel).await,
            render::solve,
        )
        .await
    }

    #[tool(
        description = "check_minizinc_model for a model file (and a .dzn/.json data file) on disk: compile-check without solving.",
        input_schema = schema::<FilesArgs>(),
        output_schema = schema_for_output::<CheckResult>()
    )]
    async fn check_minizinc_files(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.long_call::<FilesArgs, _>(
            "check_minizinc_files",
            arguments,
            &context,
            async |request, progress, cancel| self.minizinc.check(&request, progress, cancel).await,
            render::check,
        )
        .await
    }

    #[tool(
        description = "inspect_minizinc_model for a model file (and a .dzn/.json data file) on disk: its required parameters, output variables and method, without solving.",
        input_schema = schema::<FilesArgs>(),
        output_schema = schema_for_output::<ModelInspectionResult>()
    )]
    async fn inspect_minizinc_files(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.long_call::<FilesArgs, _>(
            "inspect_minizinc_files",
            arguments,
            &context,
            async |request, progress, cancel| {
                self.minizinc.inspect(&request, progress, cancel).await
            },
            render::inspection,
        )
        .await
    }

    #[tool(
        description = "solve_minizinc_model for a constraint satisfaction or optimisation problem whose MiniZinc model (and data and checker) are local files: the same result.",
        input_schema = schema::<SolveFilesArgs>(),
        output_schema = schema_for_output::<SolveResult>()
    )]
    async fn solve_minizinc_files(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.long_call::<SolveFilesArgs, _>(
            "solve_minizinc_files",
            arguments,
            &context,
            async |request, progress, cancel| self.minizinc.solve(&request, progress, cancel).await,
            render::solve,
        )
        .await
    }
}
