//! The unsat-core tools: adapters that parse arguments, call the unsat-core
//! service and wrap its result.

mod args;
mod render;

use rmcp::handler::server::common::schema_for_output;
use rmcp::model::{CallToolResult, JsonObject};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, tool, tool_router};

use self::args::{UnsatFilesArgs, UnsatModelArgs};
use super::SolvergateServer;
use super::args::schema;
use crate::unsat::UnsatCoreResult;

#[tool_router(router = unsat_router, vis = "pub(super)")]
impl SolvergateServer {
    #[tool(
        description = "Find why a MiniZinc model is unsatisfiable: a set of its top-level constraint items that cannot hold together (mus_found, with line/column spans and source text), or no_core with the reason (e.g. the model is satisfiable). Uses findMUS, or a deletion search that re-solves without each constraint in turn (solver_calls is its cost; minimal says whether the core is proven minimal).",
        input_schema = schema::<UnsatModelArgs>(),
        output_schema = schema_for_output::<UnsatCoreResult>()
    )]
    async fn find_unsat_core(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.long_call::<UnsatModelArgs, _>(
            "find_unsat_core",
            arguments,
            &context,
            async |request, progress, cancel| self.unsat.find(&request, progress, cancel).await,
            render::unsat_core,
        )
        .await
    }

    #[tool(
        description = "find_unsat_core for a model file (and a .dzn/.json data file): same result. Only the entry model's top-level constraint items can be in the core.",
        input_schema = schema::<UnsatFilesArgs>(),
        output_schema = schema_for_output::<UnsatCoreResult>()
    )]
    async fn find_unsat_core_files(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.long_call::<UnsatFilesArgs, _>(
            "find_unsat_core_files",
            arguments,
            &context,
            async |request, progress, cancel| self.unsat.find(&request, progress, cancel).await,
            render::unsat_core,
        )
        .await
    }
}
