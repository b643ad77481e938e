//! The two tabular tools: read a page of a local spreadsheet or CSV file,
//! and write a table to a new `.xlsx` or `.csv` file. Adapters over
//! `tabular`; the blocking file work runs on the blocking pool.

mod args;
mod render;

use rmcp::handler::server::common::schema_for_output;
use rmcp::model::{CallToolResult, JsonObject};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, tool, tool_router};

use self::args::{LoadTabularArgs, WriteTabularArgs};
use super::SolvergateServer;
use super::args::schema;
use crate::tabular::{self, TabularData, TabularWriteResult};
use crate::userfiles::off_thread;

#[tool_router(router = tabular_router, vis = "pub(super)")]
impl SolvergateServer {
    #[tool(
        description = "Read a page of a local spreadsheet or CSV file as headers plus rows of JSON scalars, to turn into model data. Headers are strings (blank ones are col_1, col_2, ...); spreadsheet numbers and booleans keep their type, dates are ISO-8601 text, formulas give their cached value; CSV cells are strings. When truncated, call again with row_offset = next_row_offset. Reads only.",
        input_schema = schema::<LoadTabularArgs>(),
        output_schema = schema_for_output::<TabularData>()
    )]
    async fn load_tabular_data(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.quick_call::<LoadTabularArgs, _>(
            arguments,
            &context,
            async |request, _cancel| {
                let request = tabular::LoadRequest {
                    page_ceiling: self.page_ceiling,
                    ..request
                };
                off_thread(move || tabular::load(&request)).await
            },
            render::tabular_page,
        )
        .await
    }

    #[tool(
        description = "Write a table to a new local .xlsx or .csv file, atomically. XLSX strings are always text, never formulas; values XLSX would not read back unchanged (empty string, whole-number float such as 2.0, integer beyond 2^53, trailing all-null row) are refused with the cell named; CSV refuses text starting with = + - or @. Returns path, format, rows written and sha256.",
        input_schema = schema::<WriteTabularArgs>(),
        output_schema = schema_for_output::<TabularWriteResult>()
    )]
    async fn write_tabular_result(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.quick_call::<WriteTabularArgs, _>(
            arguments,
            &context,
            async |request, cancel| {
                let cancel = cancel.clone();
                off_thread(move || tabular::write(&request, &cancel)).await
            },
            render::tabular_written,
        )
        .await
    }
}
