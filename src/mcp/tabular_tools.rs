//! The two tabular tools: read a page of a local spreadsheet or CSV file,
//! and write a table to a new `.xlsx` or `.csv` file. Adapters over
//! `tabular`; the blocking file work runs on the blocking pool.

use rmcp::handler::server::common::schema_for_output;
use rmcp::model::{CallToolResult, JsonObject};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, tool, tool_router};

use super::args::{self, LoadTabularArgs, WriteTabularArgs};
use super::{SolvergateServer, render};
use crate::tabular::{self, TabularData, TabularWriteResult};
use crate::userfiles::off_thread;

#[tool_router(router = tabular_router, vis = "pub(super)")]
impl SolvergateServer {
    #[tool(
        description = "Read a page of a local spreadsheet or CSV file (.xlsx, .xls, .ods, .csv; absolute path) as headers plus rows of JSON scalars, to turn into model data. Headers are always strings (a blank one, or every one with has_header=false, is col_1, col_2, ...); spreadsheet numbers and booleans keep their type, dates come back as ISO-8601 text, formula cells give their cached value; every CSV cell is a string. Pages: row_offset and max_rows, and never more than 1 MiB of rows; when truncated, call again with row_offset = next_row_offset. total_rows counts every data row. Reads only: it never interprets what a column means.",
        input_schema = args::schema::<LoadTabularArgs>(),
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
            async |request, _cancel| off_thread(move || tabular::load(&request)).await,
            render::tabular_page,
        )
        .await
    }

    #[tool(
        description = "Write a table (headers plus rows of string, number, boolean or null cells) to a new local .xlsx or .csv file at an absolute target_path whose directory exists. Atomic: the file appears whole or not at all; an existing file is refused and left untouched unless overwrite is true. XLSX stores every string as text, never a formula; values XLSX would not read back unchanged (an empty string, a whole-number float such as 2.0, an integer beyond 2^53, a trailing all-null row) are refused with the cell named. CSV refuses text starting with =, + , - or @ (send numbers as numbers). Returns the path, format, rows written and the file's sha256.",
        input_schema = args::schema::<WriteTabularArgs>(),
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
