//! Reading one page of a sheet or CSV file.
//!
//! Every format is read as a stream of non-empty cells, twice: the first
//! pass finds the used area (first and last row and column), the second
//! keeps only the header row and the rows of the requested page, and stops
//! keeping rows once they alone pass the page ceiling. So memory follows
//! the page, not the file — except where calamine itself holds a whole
//! sheet (`.xls`, `.ods`) or the shared-string table (`.xlsx`).
//!
//! Bounds applied before any parser runs: the file is at most
//! [`MAX_FILE_BYTES`]; a zip container (`.xlsx`, `.ods`) declares at most
//! [`MAX_UNPACKED_BYTES`] unpacked, and the zip reader refuses an entry
//! that inflates past its declared size, so a zip bomb ends in an error.
//! `.xls` and `.ods` files, which calamine lays out whole as dense grids,
//! are first measured by `guard` and refused above [`MAX_GRID_CELLS`].

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use calamine::{Data, Ods, Range, Reader, Xls, Xlsx};

use super::cell::{Cell, positional_name};
use super::guard::{self, MAX_GRID_CELLS};
use super::page::{self, PageError};
use super::{Format, LoadRequest, TabularData, TruncationReason, absolute_path};
use crate::diagnostics::ToolError;
use crate::userfiles::{self, SizeLimit};

/// The largest file `load_tabular_data` reads: 64 MiB, checked on the open
/// handle before a byte is parsed.
pub const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

const TABLE_LIMIT: SizeLimit = SizeLimit {
    bytes: MAX_FILE_BYTES,
    applies_to: "tables read",
    remedy: "split the file",
};

/// The most a `.xlsx` or `.ods` file may declare unpacked, all entries
/// together: 128 MiB.
pub const MAX_UNPACKED_BYTES: u64 = 128 * 1024 * 1024;

/// The widest table read: Excel's 16,384 columns.
const MAX_COLUMNS: usize = 16_384;

/// The used area of a sheet: from A1 (as spreadsheet programs count) to
/// the last row and column holding a non-empty cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Area {
    last_row: u32,
    last_col: u32,
}

impl Area {
    fn around(area: Option<Area>, row: u32, col: u32) -> Area {
        let area = area.unwrap_or(Area {
            last_row: row,
            last_col: col,
        });
        Area {
            last_row: area.last_row.max(row),
            last_col: area.last_col.max(col),
        }
    }

    fn width(self) -> usize {
        self.last_col as usize + 1
    }

    fn rows(self) -> u64 {
        u64::from(self.last_row) + 1
    }
}

/// A sheet or file that can be walked cell by cell, more than once.
enum Source {
    Csv(File),
    Xlsx(Box<Xlsx<BufReader<File>>>),
    /// `.xls` and `.ods`: calamine reads the whole sheet at once.
    Grid(Range<Data>),
}

pub fn load(request: &LoadRequest) -> Result<TabularData, ToolError> {
    let offset = u64::try_from(request.row_offset).map_err(|_| {
        ToolError::invalid(format!(
            "row_offset must be 0 or more (got {})",
            request.row_offset
        ))
    })?;
    let max_rows = u64::try_from(request.max_rows)
        .ok()
        .filter(|rows| *rows >= 1)
        .ok_or_else(|| {
            ToolError::invalid(format!(
                "max_rows must be at least 1 (got {})",
                request.max_rows
            ))
        })?;
    let path = absolute_path("path", &request.path)?;
    let format = Format::of("path", path)?;
    let (file, _) = userfiles::open_bounded("path", path, &TABLE_LIMIT)?;
    let (mut source, sheets, sheet) = open(format, path, file, request.sheet.as_deref())?;
    let area = used_area(&mut source, path, sheet.as_deref())?;
    if let Some(area) = area
        && area.width() > MAX_COLUMNS
    {
        return Err(ToolError::invalid(format!(
            "{} is {} columns wide, over the {MAX_COLUMNS} columns (Excel's limit) a page carries",
            path.display(),
            area.width()
        )));
    }
    let window = Window {
        has_header: request.has_header,
        offset,
        max_rows,
        ceiling: request.page_ceiling,
    };
    let kept = collect(&mut source, path, sheet.as_deref(), area, window)?;
    assemble(kept, area, window, sheet, sheets)
}

fn cannot_read(path: &Path, error: &io::Error) -> ToolError {
    userfiles::cannot_read("path", path, error)
}

fn unreadable(path: &Path, format: Format, error: impl std::fmt::Display) -> ToolError {
    ToolError::invalid(format!(
        "path {} is not a readable .{} file ({error}); check that the extension matches the content",
        path.display(),
        format.as_str()
    ))
}

/// The source, the workbook's sheet names and the chosen sheet (`None`
/// for CSV).
fn open(
    format: Format,
    path: &Path,
    mut file: File,
    sheet: Option<&str>,
) -> Result<(Source, Vec<String>, Option<String>), ToolError> {
    let (source, sheets, chosen) = match format {
        Format::Csv => {
            if let Some(sheet) = sheet {
                return Err(ToolError::invalid(format!(
                    "sheet {sheet:?} was given but {} is a CSV file, which has no sheets; leave sheet out",
                    path.display()
                )));
            }
            return Ok((Source::Csv(file), Vec::new(), None));
        }
        Format::Xlsx => {
            check_zip(format, path, &mut file)?;
            let workbook =
                Xlsx::new(BufReader::new(file)).map_err(|error| unreadable(path, format, error))?;
            let sheets = workbook.sheet_names();
            let chosen = choose_sheet(path, &sheets, sheet)?;
            (Source::Xlsx(Box::new(workbook)), sheets, chosen)
        }
        Format::Xls => {
            check_xls(path, &mut file)?;
            let workbook =
                Xls::new(BufReader::new(file)).map_err(|error| unreadable(path, format, error))?;
            whole_sheet(workbook, path, format, sheet)?
        }
        Format::Ods => {
            check_zip(format, path, &mut file)?;
            let workbook =
                Ods::new(BufReader::new(file)).map_err(|error| unreadable(path, format, error))?;
            whole_sheet(workbook, path, format, sheet)?
        }
    };
    Ok((source, sheets, Some(chosen)))
}

/// The chosen sheet of a workbook calamine reads whole.
fn whole_sheet<W: Reader<BufReader<File>>>(
    mut workbook: W,
    path: &Path,
    format: Format,
    sheet: Option<&str>,
) -> Result<(Source, Vec<String>, String), ToolError>
where
    W::Error: std::fmt::Display,
{
    let sheets = workbook.sheet_names();
    let chosen = choose_sheet(path, &sheets, sheet)?;
    let range = workbook
        .worksheet_range(&chosen)
        .map_err(|error| unreadable(path, format, error))?;
    Ok((Source::Grid(range), sheets, chosen))
}

fn choose_sheet(path: &Path, sheets: &[String], wanted: Option<&str>) -> Result<String, ToolError> {
    match wanted {
        Some(name) if sheets.iter().any(|sheet| sheet == name) => Ok(name.to_owned()),
        Some(name) => Err(ToolError::invalid(format!(
            "sheet {name:?} is not in {}; its sheets are: {}",
            path.display(),
            quoted_list(sheets)
        ))),
        None => sheets
            .first()
            .cloned()
            .ok_or_else(|| ToolError::invalid(format!("{} has no sheets", path.display()))),
    }
}

fn quoted_list(names: &[String]) -> String {
    names
        .iter()
        .map(|name| format!("{name:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Checks a zip container's declared unpacked size, then rewinds `file`.
fn check_zip(format: Format, path: &Path, file: &mut File) -> Result<(), ToolError> {
    let handle = file
        .try_clone()
        .map_err(|error| cannot_read(path, &error))?;
    let mut archive = zip::ZipArchive::new(BufReader::new(handle)).map_err(|error| {
        ToolError::invalid(format!(
            "path {} is not a zip archive, as every .{} file is ({error}); if it is a CSV or another format, give it that extension",
            path.display(),
            format.as_str()
        ))
    })?;
    let mut unpacked: u64 = 0;
    for index in 0..archive.len() {
        let entry = archive
            .by_index_raw(index)
            .map_err(|error| unreadable(path, format, error))?;
        unpacked = unpacked.saturating_add(entry.size());
    }
    if unpacked > MAX_UNPACKED_BYTES {
        return Err(ToolError::invalid(format!(
            "path {} unpacks to {unpacked} bytes, over the {MAX_UNPACKED_BYTES}-byte (128 MiB) limit on spreadsheets read; split the workbook",
            path.display()
        )));
    }
    if format == Format::Ods {
        let content = archive
            .by_name("content.xml")
            .map_err(|error| unreadable(path, format, format!("content.xml: {error}")))?;
        let cells = guard::ods_grid_cells(BufReader::new(content))
            .map_err(|error| unreadable(path, format, format!("content.xml: {error}")))?;
        within_grid(path, cells)?;
    }
    file.seek(SeekFrom::Start(0))
        .map_err(|error| cannot_read(path, &error))?;
    Ok(())
}

/// Checks the grid an `.xls` workbook would make calamine allocate, then
/// rewinds `file`.
fn check_xls(path: &Path, file: &mut File) -> Result<(), ToolError> {
    let handle = file
        .try_clone()
        .map_err(|error| cannot_read(path, &error))?;
    let not_xls = |error: &dyn std::fmt::Display| unreadable(path, Format::Xls, error);
    let mut container = cfb::CompoundFile::open(BufReader::new(handle)).map_err(|error| {
        ToolError::invalid(format!(
            "path {} is not an OLE2 compound file, as every .xls file is ({error}); if it is a CSV, an .xlsx or another format, give it that extension",
            path.display()
        ))
    })?;
    let name = ["/Workbook", "/Book"]
        .into_iter()
        .find(|name| container.is_stream(name))
        .ok_or_else(|| not_xls(&"it has no Workbook stream"))?;
    let stream = container
        .open_stream(name)
        .map_err(|error| not_xls(&error))?;
    let cells = guard::xls_grid_cells(BufReader::new(stream)).map_err(|error| not_xls(&error))?;
    within_grid(path, cells)?;
    file.seek(SeekFrom::Start(0))
        .map_err(|error| cannot_read(path, &error))?;
    Ok(())
}

fn within_grid(path: &Path, cells: u64) -> Result<(), ToolError> {
    if cells <= MAX_GRID_CELLS {
        return Ok(());
    }
    Err(ToolError::invalid(format!(
        "path {} spans {cells} cells (the box from its first to its last used cell, all sheets together), over the {MAX_GRID_CELLS}-cell limit for .xls and .ods files, which are read whole; save it as .xlsx (read as a stream) or .csv, or split it",
        path.display()
    )))
}

/// Walks every non-empty cell of the source: `(row, column, cell)`.
fn each_cell(
    source: &mut Source,
    path: &Path,
    sheet: Option<&str>,
    visit: &mut dyn FnMut(u32, u32, Cell),
) -> Result<(), ToolError> {
    match source {
        Source::Csv(file) => each_csv_cell(file, path, visit),
        Source::Xlsx(workbook) => {
            let sheet = sheet.unwrap_or_default();
            let mut cells = workbook
                .worksheet_cells_reader(sheet)
                .map_err(|error| unreadable(path, Format::Xlsx, error))?;
            while let Some(cell) = cells
                .next_cell()
                .map_err(|error| unreadable(path, Format::Xlsx, error))?
            {
                let (row, col) = cell.get_position();
                if let Some(value) = Cell::from_spreadsheet(cell.get_value()) {
                    visit(row, col, value);
                }
            }
            Ok(())
        }
        Source::Grid(range) => {
            let (first_row, first_col) = range.start().unwrap_or((0, 0));
            for (row, col, data) in range.used_cells() {
                if let Some(value) = Cell::from_data(data) {
                    let row = first_row.saturating_add(u32::try_from(row).unwrap_or(u32::MAX));
                    let col = first_col.saturating_add(u32::try_from(col).unwrap_or(u32::MAX));
                    visit(row, col, value);
                }
            }
            Ok(())
        }
    }
}

/// CSV: comma-separated, `"`-quoted, UTF-8 with an optional BOM, records
/// of any length. Every field is a string cell, empty ones included.
fn each_csv_cell(
    file: &mut File,
    path: &Path,
    visit: &mut dyn FnMut(u32, u32, Cell),
) -> Result<(), ToolError> {
    file.seek(SeekFrom::Start(0))
        .map_err(|error| cannot_read(path, &error))?;
    let handle = file
        .try_clone()
        .map_err(|error| cannot_read(path, &error))?;
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(handle.take(MAX_FILE_BYTES));
    let mut record = csv::StringRecord::new();
    let mut row: u32 = 0;
    loop {
        match reader.read_record(&mut record) {
            Ok(false) => return Ok(()),
            Ok(true) => {}
            Err(error) => return Err(csv_error(path, &error)),
        }
        for (col, field) in record.iter().enumerate() {
            let col = u32::try_from(col).unwrap_or(u32::MAX);
            visit(row, col, Cell::String(field.to_owned()));
        }
        row = row.checked_add(1).ok_or_else(|| {
            ToolError::invalid(format!("{} has too many records", path.display()))
        })?;
    }
}

fn csv_error(path: &Path, error: &csv::Error) -> ToolError {
    let line = error
        .position()
        .map(|position| format!(" at line {}", position.line()))
        .unwrap_or_default();
    match error.kind() {
        csv::ErrorKind::Utf8 { .. } => ToolError::invalid(format!(
            "path {} is not UTF-8 text{line}; save the CSV as UTF-8 (or, if it is a workbook, give it its .xlsx/.xls/.ods extension)",
            path.display()
        )),
        _ => ToolError::invalid(format!(
            "path {} is not a readable CSV file{line}: {error}",
            path.display()
        )),
    }
}

fn used_area(
    source: &mut Source,
    path: &Path,
    sheet: Option<&str>,
) -> Result<Option<Area>, ToolError> {
    let mut area = None;
    each_cell(source, path, sheet, &mut |row, col, _| {
        area = Some(Area::around(area, row, col));
    })?;
    Ok(area)
}

/// The header row's cells and the page's candidate rows, by data offset.
#[derive(Debug, Default)]
struct Kept {
    header: Vec<(u32, Cell)>,
    rows: BTreeMap<u64, Vec<(u32, Cell)>>,
    /// Rows after this data offset were not kept: the kept ones alone
    /// pass the page ceiling.
    last_kept: Option<u64>,
}

/// Which rows a page may hold: from `offset`, at most `max_rows`, within
/// `ceiling` bytes (the header row first, when `has_header`).
#[derive(Debug, Clone, Copy)]
struct Window {
    has_header: bool,
    offset: u64,
    max_rows: u64,
    ceiling: usize,
}

fn collect(
    source: &mut Source,
    path: &Path,
    sheet: Option<&str>,
    area: Option<Area>,
    window: Window,
) -> Result<Kept, ToolError> {
    let Window {
        has_header,
        offset,
        max_rows,
        ceiling,
    } = window;
    let mut kept = Kept::default();
    if area.is_none() {
        return Ok(kept);
    }
    let header_rows = u64::from(has_header);
    let end = offset.saturating_add(max_rows);
    let mut bytes = 0usize;
    each_cell(source, path, sheet, &mut |row, col, cell| {
        let position = u64::from(row);
        if position < header_rows {
            kept.header.push((col, cell));
            return;
        }
        let index = position - header_rows;
        if index < offset || index >= end || kept.last_kept.is_some_and(|last| index > last) {
            return;
        }
        bytes = bytes.saturating_add(cell.json_len() + 1);
        kept.rows.entry(index).or_default().push((col, cell));
        if bytes > ceiling && kept.last_kept.is_none() {
            kept.last_kept = Some(index);
        }
    })?;
    Ok(kept)
}

fn dense_row(width: usize, cells: Option<&Vec<(u32, Cell)>>) -> Vec<Cell> {
    let mut row = vec![Cell::Null; width];
    for (col, cell) in cells.into_iter().flatten() {
        if let Some(slot) = row.get_mut(*col as usize) {
            *slot = cell.clone();
        }
    }
    row
}

fn row_json_len(row: &[Cell]) -> usize {
    2 + row.iter().map(Cell::json_len).sum::<usize>() + row.len().saturating_sub(1)
}

fn assemble(
    kept: Kept,
    area: Option<Area>,
    window: Window,
    sheet_name: Option<String>,
    available_sheets: Vec<String>,
) -> Result<TabularData, ToolError> {
    let Window {
        has_header,
        offset,
        max_rows,
        ceiling,
    } = window;
    let width = area.map_or(0, Area::width);
    let total = area.map_or(0, |area| area.rows().saturating_sub(u64::from(has_header)));
    let mut headers: Vec<String> = (0..width).map(positional_name).collect();
    for (col, cell) in &kept.header {
        if let (Some(slot), Some(text)) = (headers.get_mut(*col as usize), cell.header_text()) {
            *slot = text;
        }
    }
    let mut data = TabularData {
        headers,
        rows: Vec::new(),
        sheet_name,
        available_sheets,
        row_offset: offset,
        next_row_offset: Some(total),
        total_rows: total,
        truncated: true,
        truncation_reason: Some(TruncationReason::MaxBytes),
    };
    let empty_page = serde_json::to_vec(&data).map_or(usize::MAX, |bytes| bytes.len());
    let mut rows = Vec::new();
    let end = page::fit(
        empty_page,
        offset,
        max_rows,
        total,
        ceiling,
        |index| {
            if kept.last_kept.is_some_and(|last| index > last) {
                // Never the first row; the kept rows already fill the page.
                return usize::MAX;
            }
            let row = dense_row(width, kept.rows.get(&index));
            let bytes = row_json_len(&row);
            rows.push(row);
            bytes
        },
    )
    .map_err(|error| match error {
        PageError::HeadersTooLarge { bytes } => ToolError::invalid(format!(
            "the headers alone are {bytes} bytes as JSON, over the {ceiling}-byte page ceiling; this table cannot be paged unless the server's response bound is raised (SOLVERGATE_MAX_RESPONSE_BYTES; the ceiling is that less 32 KiB)"
        )),
        PageError::RowTooLarge { offset, bytes } => ToolError::invalid(format!(
            "the row at row_offset {offset} is {bytes} bytes as JSON, over the {ceiling}-byte page ceiling on its own; it cannot be returned (rows before and after it can: page around it; SOLVERGATE_MAX_RESPONSE_BYTES raises the ceiling, which is that less 32 KiB)"
        )),
    })?;
    rows.truncate(end.rows as usize);
    data.rows = rows;
    data.truncated = end.reason.is_some();
    data.truncation_reason = end.reason;
    data.next_row_offset = end.reason.map(|_| offset + end.rows);
    Ok(data)
}
