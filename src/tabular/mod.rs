//! Tabular data I/O: scalar cells between local spreadsheets and a client.
//!
//! [`load`] reads one page of a `.xlsx`, `.xls`, `.ods` or `.csv` file as
//! headers plus rows of JSON scalars; [`write`] writes a table to a new (or,
//! when asked, replaced) `.xlsx` or `.csv` file, atomically. The work is
//! mechanical: nothing here guesses what a column means.
//!
//! What a maintainer must not break:
//! - a cell is a JSON scalar (string, number, boolean, null), headers are
//!   always strings, dates come back as ISO-8601 text;
//! - a page never exceeds [`PAGE_CEILING_BYTES`] and only whole rows are
//!   returned;
//! - a write either publishes exactly the named file or leaves the
//!   filesystem as it was, and never emits a spreadsheet formula;
//! - reads are bounded ([`MAX_FILE_BYTES`], [`MAX_UNPACKED_BYTES`],
//!   [`MAX_GRID_CELLS`]) before a parser sees the file.
//!
//! All of it is blocking file I/O: callers run it off the async workers.

mod cell;
mod guard;
mod page;
mod read;
mod write;

use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use cell::Cell;
pub use guard::MAX_GRID_CELLS;
pub use page::PAGE_CEILING_BYTES;
pub use read::{MAX_FILE_BYTES, MAX_UNPACKED_BYTES};

use crate::diagnostics::ToolError;

/// The default page size of [`load`].
pub const DEFAULT_MAX_ROWS: u64 = 1000;

/// The file formats, named by extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// Office Open XML workbook (read and write).
    Xlsx,
    /// Legacy Excel 97-2003 workbook (read only).
    Xls,
    /// OpenDocument spreadsheet (read only).
    Ods,
    /// Comma-separated values, UTF-8 (read and write).
    Csv,
}

impl Format {
    /// The format a path's extension names (case-insensitive).
    fn of(argument: &str, path: &Path) -> Result<Format, ToolError> {
        let extension = path
            .extension()
            .and_then(|extension| extension.to_str())
            .map(str::to_ascii_lowercase);
        match extension.as_deref() {
            Some("xlsx") => Ok(Format::Xlsx),
            Some("xls") => Ok(Format::Xls),
            Some("ods") => Ok(Format::Ods),
            Some("csv") => Ok(Format::Csv),
            other => Err(ToolError::invalid(format!(
                "{argument} {} has {}; the format is taken from the extension: .xlsx, .xls, .ods or .csv",
                path.display(),
                match other {
                    Some(extension) => format!("the unsupported extension .{extension}"),
                    None => "no extension".to_owned(),
                }
            ))),
        }
    }

    /// The format's name, which is also its file extension: `xlsx`, `xls`,
    /// `ods` or `csv`.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Xlsx => "xlsx",
            Format::Xls => "xls",
            Format::Ods => "ods",
            Format::Csv => "csv",
        }
    }
}

/// What [`load`] is asked for.
#[derive(Debug, Clone)]
pub struct LoadRequest {
    /// Absolute path of the file to read.
    pub path: String,
    /// The sheet to read; `None` is the first. Not used for CSV.
    pub sheet: Option<String>,
    /// Whether the first row holds the column names.
    pub has_header: bool,
    /// Zero-based offset among the data rows.
    pub row_offset: i64,
    /// The most data rows one page returns; at least 1.
    pub max_rows: i64,
    /// The most bytes a page's structured body takes: [`PAGE_CEILING_BYTES`],
    /// or more where the server's response bound was raised.
    pub page_ceiling: usize,
}

/// Why a page stopped before the end of the data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TruncationReason {
    /// The page holds `max_rows` rows and more follow.
    MaxRows,
    /// The next row would have taken the page over the 96 KiB ceiling.
    MaxBytes,
}

/// One page of a table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TabularData {
    /// Column names, one per column of the widest row: always strings; a
    /// blank or missing name (and every name without a header row) is
    /// `col_<position>`, counted from 1. Repeated on every page.
    pub headers: Vec<String>,
    /// The page's data rows, each as wide as `headers`: string, number,
    /// boolean or null cells. CSV cells are always strings (a missing
    /// trailing field is null); spreadsheet dates are ISO-8601 strings.
    pub rows: Vec<Vec<Cell>>,
    /// The sheet read; null for CSV.
    pub sheet_name: Option<String>,
    /// Every sheet of the workbook, in order; empty for CSV.
    pub available_sheets: Vec<String>,
    /// The offset (among data rows) of the page's first row.
    pub row_offset: u64,
    /// Pass this as `row_offset` for the next page; null at the end.
    pub next_row_offset: Option<u64>,
    /// Every data row of the sheet or file, on every page.
    pub total_rows: u64,
    /// True when rows follow this page.
    pub truncated: bool,
    /// Which bound ended the page: `max_rows` or `max_bytes`; null at the end.
    pub truncation_reason: Option<TruncationReason>,
}

/// What [`write`] is asked for.
#[derive(Debug, Clone)]
pub struct WriteRequest {
    /// Column names, written as the first row.
    pub headers: Vec<String>,
    /// Data rows, each exactly as wide as `headers`; cells are JSON scalars.
    pub rows: Vec<Vec<serde_json::Value>>,
    /// Absolute path of the file to write; its extension picks the format.
    pub target_path: String,
    /// Replace an existing file (atomically) instead of refusing.
    pub overwrite: bool,
}

/// The outcome of a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WriteStatus {
    /// The file was published at `target_path`.
    Written,
}

/// What [`write`] published.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TabularWriteResult {
    /// `written`; every refusal is a tool error instead.
    pub status: WriteStatus,
    /// One line for a person.
    pub message: String,
    /// The absolute path written.
    pub target_path: String,
    /// SHA-256 (hex) of the bytes written.
    pub sha256: String,
    /// `xlsx` or `csv`.
    pub format: Format,
    /// Data rows written (the header row not counted).
    pub rows_written: u64,
}

/// Reads one page of a table. Blocking.
pub fn load(request: &LoadRequest) -> Result<TabularData, ToolError> {
    read::load(request)
}

/// Validates and writes a table. Blocking; once `cancel` fires, nothing
/// is published.
pub fn write(
    request: &WriteRequest,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<TabularWriteResult, ToolError> {
    write::write(request, cancel)
}

/// An absolute path from an argument, or an `invalid_request` naming it.
fn absolute_path<'a>(argument: &str, path: &'a str) -> Result<&'a Path, ToolError> {
    if path.trim().is_empty() {
        return Err(ToolError::invalid(format!("{argument} must not be empty")));
    }
    let candidate = Path::new(path);
    if !candidate.is_absolute() {
        return Err(ToolError::invalid(format!(
            "{argument} {path} is relative; pass an absolute path"
        )));
    }
    Ok(candidate)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};
    use tokio_util::sync::CancellationToken;

    fn rows_of(values: &[Value]) -> Vec<Vec<Value>> {
        values
            .iter()
            .map(|row| row.as_array().cloned().unwrap_or_default())
            .collect()
    }

    fn load_all(path: &Path, has_header: bool) -> TabularData {
        load(&LoadRequest {
            path: path.display().to_string(),
            sheet: None,
            has_header,
            row_offset: 0,
            max_rows: 1_000_000,
            page_ceiling: PAGE_CEILING_BYTES,
        })
        .unwrap()
    }

    fn written(dir: &Path, name: &str, headers: &[&str], rows: &[Value]) -> std::path::PathBuf {
        let target = dir.join(name);
        write(
            &WriteRequest {
                headers: headers.iter().map(|name| (*name).to_owned()).collect(),
                rows: rows_of(rows),
                target_path: target.display().to_string(),
                overwrite: false,
            },
            &CancellationToken::new(),
        )
        .unwrap();
        target
    }

    #[test]
    fn a_cancelled_write_publishes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("t.csv");
        let cancel = CancellationToken::new();
        cancel.cancel();
        let request = WriteRequest {
            headers: vec!["a".to_owned()],
            rows: rows_of(&[serde_json::json!([1])]),
            target_path: target.display().to_string(),
            overwrite: false,
        };
        let error = write(&request, &cancel).unwrap_err();
        assert_eq!(error.category(), crate::diagnostics::Category::Cancelled);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn xlsx_round_trips_every_value_the_writer_accepts() {
        let dir = tempfile::tempdir().unwrap();
        let rows = [
            json!(["a\r\nb", "_x0041_", "\u{fffe}\u{1}\u{0}", " lead", "=1+1"]),
            json!([0.1, 1e16, 9_007_199_254_740_992_i64, -3, 2.5e-300]),
            json!([true, false, null, "x".repeat(32_767), "emoji \u{1f600}"]),
            json!([null, null, null, null, 1]),
        ];
        let target = written(dir.path(), "t.xlsx", &["a", "", "c", "d", "e"], &rows);
        let page = load_all(&target, true);
        assert_eq!(page.headers, ["a", "col_2", "c", "d", "e"]);
        assert_eq!(serde_json::to_value(&page.rows).unwrap(), json!(rows));
        assert_eq!(page.sheet_name.as_deref(), Some("Sheet1"));
        assert_eq!(page.available_sheets, ["Sheet1"]);
        assert_eq!((page.total_rows, page.truncated), (4, false));
    }

    #[test]
    fn every_refused_xlsx_value_really_changes_on_read() {
        let dir = tempfile::tempdir().unwrap();
        let cases = [
            (json!(""), json!(null)),
            (json!(100.0), json!(100)),
            (
                json!(9_007_199_254_740_993_i64),
                json!(9_007_199_254_740_992_i64),
            ),
            (json!(10_000_000_000_000_000_i64), json!(1e16)),
        ];
        for (index, (sent, back)) in cases.iter().enumerate() {
            let rows = rows_of(&[json!([sent, 1])]);
            let bytes = write::encode_xlsx(&["a".to_owned(), "b".to_owned()], &rows).unwrap();
            let path = dir.path().join(format!("hazard-{index}.xlsx"));
            std::fs::write(&path, bytes).unwrap();
            let page = load_all(&path, true);
            assert_eq!(
                serde_json::to_value(&page.rows[0][0]).unwrap(),
                *back,
                "{sent}"
            );
            assert_ne!(back.to_string(), sent.to_string(), "{sent}");
        }
        // Trailing empty rows and columns leave no trace.
        let rows = rows_of(&[json!([1, null]), json!([null, null])]);
        let bytes = write::encode_xlsx(&["a".to_owned(), String::new()], &rows).unwrap();
        let path = dir.path().join("trailing.xlsx");
        std::fs::write(&path, bytes).unwrap();
        let page = load_all(&path, true);
        assert_eq!((page.headers.len(), page.total_rows), (1, 1));
    }

    #[test]
    fn csv_is_textual_and_tolerates_a_bom() {
        let dir = tempfile::tempdir().unwrap();
        let target = written(
            dir.path(),
            "t.csv",
            &["n", "note"],
            &[
                json!([3, "a,b\r\nc"]),
                json!([null, true]),
                json!([-1.5, " x "]),
            ],
        );
        let page = load_all(&target, true);
        assert_eq!(
            serde_json::to_value(&page.rows).unwrap(),
            json!([["3", "a,b\r\nc"], ["", "true"], ["-1.5", " x "]])
        );
        let bom = dir.path().join("bom.csv");
        std::fs::write(&bom, "\u{feff}id,name\n1,x,extra\n2\n").unwrap();
        let page = load_all(&bom, true);
        assert_eq!(page.headers, ["id", "name", "col_3"]);
        assert_eq!(
            serde_json::to_value(&page.rows).unwrap(),
            json!([["1", "x", "extra"], ["2", null, null]])
        );
        let page = load_all(&bom, false);
        assert_eq!(page.headers, ["col_1", "col_2", "col_3"]);
        assert_eq!(page.total_rows, 3);
    }

    #[test]
    fn pages_stop_at_the_byte_ceiling_with_whole_rows() {
        let dir = tempfile::tempdir().unwrap();
        // 30 kB a row: three rows fit under 96 KiB, four do not.
        let big = "y".repeat(3_000);
        let rows: Vec<Value> = (0..7)
            .map(|index| {
                let mut row = vec![json!(index)];
                row.extend(std::iter::repeat_n(json!(big), 10));
                Value::Array(row)
            })
            .collect();
        let names: Vec<String> = (0..11).map(|col| format!("c{col}")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let target = written(dir.path(), "big.xlsx", &names, &rows);
        let mut offset = 0;
        let mut seen = Vec::new();
        loop {
            let page = load(&LoadRequest {
                path: target.display().to_string(),
                sheet: None,
                has_header: true,
                row_offset: offset,
                max_rows: 1000,
                page_ceiling: PAGE_CEILING_BYTES,
            })
            .unwrap();
            assert!(serde_json::to_vec(&page).unwrap().len() <= PAGE_CEILING_BYTES);
            assert_eq!(page.total_rows, 7);
            seen.extend(page.rows.iter().map(|row| row[0].clone()));
            match page.next_row_offset {
                Some(next) => {
                    assert_eq!(page.truncation_reason, Some(TruncationReason::MaxBytes));
                    assert_eq!(page.rows.len(), 3);
                    offset = next as i64;
                }
                None => break,
            }
        }
        assert_eq!(seen, (0..7).map(Cell::Int).collect::<Vec<_>>());
    }

    #[test]
    fn a_row_over_the_ceiling_is_an_error_naming_its_offset() {
        let dir = tempfile::tempdir().unwrap();
        let huge = "z".repeat(600_000);
        let path = dir.path().join("huge.csv");
        std::fs::write(&path, format!("a,b\n1,2\n{huge},{huge}\n3,4\n")).unwrap();
        let error = load(&LoadRequest {
            path: path.display().to_string(),
            sheet: None,
            has_header: true,
            row_offset: 1,
            max_rows: 10,
            page_ceiling: PAGE_CEILING_BYTES,
        })
        .unwrap_err();
        assert!(
            error.to_string().contains("row at row_offset 1 "),
            "{error}"
        );
        let page = load(&LoadRequest {
            path: path.display().to_string(),
            sheet: None,
            has_header: true,
            row_offset: 0,
            max_rows: 10,
            page_ceiling: PAGE_CEILING_BYTES,
        })
        .unwrap();
        assert_eq!(page.rows.len(), 1);
        assert_eq!(page.next_row_offset, Some(1));
    }

    #[test]
    fn an_existing_target_wins_without_overwrite_and_no_staging_file_stays() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.csv");
        std::fs::write(&target, "keep me").unwrap();
        let request = WriteRequest {
            headers: vec!["a".to_owned()],
            rows: rows_of(&[json!([1])]),
            target_path: target.display().to_string(),
            overwrite: false,
        };
        let error = write(&request, &CancellationToken::new()).unwrap_err();
        assert_eq!(
            error.category(),
            crate::diagnostics::Category::InvalidSaveTarget
        );
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
        let replaced = write(
            &WriteRequest {
                overwrite: true,
                ..request
            },
            &CancellationToken::new(),
        )
        .unwrap();
        let bytes = std::fs::read(&target).unwrap();
        assert_eq!(bytes, b"a\n1\n");
        assert_eq!(replaced.sha256, crate::sha256_hex(&bytes));
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(names, ["out.csv"]);
    }

    /// A BIFF8 record: type, length, body.
    fn record(kind: u16, body: &[u8]) -> Vec<u8> {
        let mut bytes = kind.to_le_bytes().to_vec();
        bytes.extend((body.len() as u16).to_le_bytes());
        bytes.extend(body);
        bytes
    }

    /// The smallest `.xls` calamine (and Excel) read: a BIFF8 Workbook
    /// stream in an OLE2 compound file, its strings in the SST, XF 1 a date.
    fn make_xls(path: &Path, sheet_cells: &[Vec<u8>]) {
        let bof = |kind: u8| {
            record(
                0x0809,
                &[0x00, 0x06, kind, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            )
        };
        let xf = |format: u16| {
            let mut body = vec![0, 0];
            body.extend(format.to_le_bytes());
            body.extend([0; 16]);
            record(0x00E0, &body)
        };
        let mut sst = 2u32.to_le_bytes().to_vec();
        sst.extend(2u32.to_le_bytes());
        for text in ["item", "due"] {
            sst.extend((text.len() as u16).to_le_bytes());
            sst.push(0);
            sst.extend(text.as_bytes());
        }
        let mut globals = bof(0x05);
        globals.extend(xf(0));
        globals.extend(xf(14));
        globals.extend(record(0x00FC, &sst));
        let sheet_name = b"Stock";
        let boundsheet_len = 4 + 8 + sheet_name.len();
        let end_record_len = 4;
        let sheet_at = (globals.len() + boundsheet_len + end_record_len) as u32;
        let mut boundsheet = sheet_at.to_le_bytes().to_vec();
        boundsheet.extend([0, 0, sheet_name.len() as u8, 0]);
        boundsheet.extend(sheet_name);
        globals.extend(record(0x0085, &boundsheet));
        globals.extend(record(0x000A, &[]));
        assert_eq!(globals.len() as u32, sheet_at);
        globals.extend(bof(0x10));
        for cell in sheet_cells {
            globals.extend(cell);
        }
        globals.extend(record(0x000A, &[]));
        let mut container = cfb::CompoundFile::create(std::io::Cursor::new(Vec::new())).unwrap();
        {
            use std::io::Write as _;
            let mut stream = container.create_stream("/Workbook").unwrap();
            stream.write_all(&globals).unwrap();
        }
        container.flush().unwrap();
        std::fs::write(path, container.into_inner().into_inner()).unwrap();
    }

    fn cell_head(kind: u16, row: u16, col: u16, xf: u16, rest: &[u8]) -> Vec<u8> {
        let mut body = row.to_le_bytes().to_vec();
        body.extend(col.to_le_bytes());
        body.extend(xf.to_le_bytes());
        body.extend(rest);
        record(kind, &body)
    }

    #[test]
    fn xls_is_read_and_a_sparse_xls_is_refused_before_calamine() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stock.xls");
        make_xls(
            &path,
            &[
                cell_head(0x00FD, 0, 0, 0, &0u32.to_le_bytes()),
                cell_head(0x00FD, 0, 1, 0, &1u32.to_le_bytes()),
                cell_head(0x0203, 1, 0, 0, &3.5f64.to_le_bytes()),
                cell_head(0x0203, 1, 1, 1, &45_306.0f64.to_le_bytes()),
                cell_head(0x0205, 2, 0, 0, &[1, 0]),
            ],
        );
        let page = load_all(&path, true);
        assert_eq!(page.sheet_name.as_deref(), Some("Stock"));
        assert_eq!(page.headers, ["item", "due"]);
        assert_eq!(
            serde_json::to_value(&page.rows).unwrap(),
            json!([[3.5, "2024-01-15T00:00:00"], [true, null]])
        );
        let sparse = dir.path().join("sparse.xls");
        make_xls(
            &sparse,
            &[
                cell_head(0x0203, 0, 0, 0, &1f64.to_le_bytes()),
                cell_head(0x0203, 65_535, 255, 0, &1f64.to_le_bytes()),
            ],
        );
        let error = load(&LoadRequest {
            path: sparse.display().to_string(),
            sheet: None,
            has_header: true,
            row_offset: 0,
            max_rows: 10,
            page_ceiling: PAGE_CEILING_BYTES,
        })
        .unwrap_err()
        .to_string();
        assert!(error.contains("spans 16777216 cells"), "{error}");
        let named = dir.path().join("text.xls");
        std::fs::write(&named, "a,b\n1,2\n").unwrap();
        let error = load(&LoadRequest {
            path: named.display().to_string(),
            sheet: None,
            has_header: true,
            row_offset: 0,
            max_rows: 10,
            page_ceiling: PAGE_CEILING_BYTES,
        })
        .unwrap_err()
        .to_string();
        assert!(error.contains("not an OLE2 compound file"), "{error}");
    }

    #[test]
    fn a_table_wider_than_excel_is_refused_before_rows_are_built() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wide.csv");
        std::fs::write(&path, format!("a{}\n", ",".repeat(16_384))).unwrap();
        let error = load(&LoadRequest {
            path: path.display().to_string(),
            sheet: None,
            has_header: true,
            row_offset: 0,
            max_rows: 10,
            page_ceiling: PAGE_CEILING_BYTES,
        })
        .unwrap_err()
        .to_string();
        assert!(error.contains("is 16385 columns wide"), "{error}");
        std::fs::write(&path, format!("a{}\n", ",".repeat(16_383))).unwrap();
        // Its 185 KB of headers pass the default page ceiling; a raised
        // response bound raises the ceiling with it.
        let request = |page_ceiling| LoadRequest {
            path: path.display().to_string(),
            sheet: None,
            has_header: true,
            row_offset: 0,
            max_rows: 10,
            page_ceiling,
        };
        let error = load(&request(PAGE_CEILING_BYTES)).unwrap_err().to_string();
        assert_eq!(
            error,
            "Diagnostic: invalid_request — the headers alone are 185660 bytes as JSON, over the 98304-byte page ceiling; this table cannot be paged unless the server's response bound is raised (SOLVERGATE_MAX_RESPONSE_BYTES; the ceiling is that less 32 KiB)"
        );
        assert_eq!(load(&request(1 << 20)).unwrap().headers.len(), 16_384);
    }
}
