//! The arguments of the two tabular tools: read a page of a spreadsheet or
//! CSV file, write a table.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::diagnostics::ToolError;
use crate::mcp::args::IntoRequest;

fn default_has_header() -> bool {
    true
}

fn default_max_rows() -> i64 {
    crate::tabular::DEFAULT_MAX_ROWS as i64
}

/// Arguments of `load_tabular_data`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LoadTabularArgs {
    /// Absolute path of a local `.xlsx`, `.xls`, `.ods` or `.csv` file (the
    /// extension decides how it is read; at most 64 MiB).
    pub path: String,
    /// The sheet to read; omitted: the first. Not allowed for CSV.
    #[serde(default)]
    pub sheet: Option<String>,
    /// Whether the first row holds column names; false: every row is data,
    /// columns are col_1, col_2, ...
    #[serde(default = "default_has_header")]
    pub has_header: bool,
    /// Zero-based offset among the data rows (the header row is not one);
    /// pass the previous page's next_row_offset.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub row_offset: i64,
    /// The most rows to return; a page also stops before 96 KiB.
    #[serde(default = "default_max_rows")]
    #[schemars(range(min = 1))]
    pub max_rows: i64,
}

impl IntoRequest for LoadTabularArgs {
    type Request = crate::tabular::LoadRequest;

    fn into_request(self) -> Result<crate::tabular::LoadRequest, ToolError> {
        Ok(crate::tabular::LoadRequest {
            path: self.path,
            sheet: self.sheet,
            has_header: self.has_header,
            row_offset: self.row_offset,
            max_rows: self.max_rows,
            // The server's own, when its response bound was raised.
            page_ceiling: crate::tabular::PAGE_CEILING_BYTES,
        })
    }
}

/// Arguments of `write_tabular_result`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteTabularArgs {
    /// Column names, written as the first row.
    pub headers: Vec<String>,
    /// Data rows, each exactly as long as headers. A cell is a string,
    /// number, boolean or null.
    #[schemars(with = "Vec<Vec<crate::tabular::Cell>>")]
    pub rows: Vec<Vec<serde_json::Value>>,
    /// Absolute path of the file to write, ending .xlsx or .csv; its
    /// directory must exist.
    pub target_path: String,
    /// Replace an existing file at target_path (atomically); false: an existing
    /// file is left untouched and the call fails.
    #[serde(default)]
    pub overwrite: bool,
}

impl IntoRequest for WriteTabularArgs {
    type Request = crate::tabular::WriteRequest;

    fn into_request(self) -> Result<crate::tabular::WriteRequest, ToolError> {
        Ok(crate::tabular::WriteRequest {
            headers: self.headers,
            rows: self.rows,
            target_path: self.target_path,
            overwrite: self.overwrite,
        })
    }
}
