//! The text parts of the tabular tools: a page of rows, a written file.

use std::fmt::Write;

use crate::tabular::{Cell, TabularData, TabularWriteResult, TruncationReason};

pub fn tabular_page(page: &TabularData) -> String {
    let source = page
        .sheet_name
        .as_ref()
        .map(|sheet| format!("sheet {sheet:?}"))
        .unwrap_or_else(|| "CSV".to_owned());
    let shown = page.rows.len() as u64;
    let mut text = if shown == 0 {
        format!(
            "Table ({source}): no rows at row_offset {} of {} data rows; {} columns.\n",
            page.row_offset,
            page.total_rows,
            page.headers.len()
        )
    } else {
        format!(
            "Table ({source}): data rows {}–{} of {}; {} columns.\n",
            page.row_offset,
            page.row_offset + shown - 1,
            page.total_rows,
            page.headers.len()
        )
    };
    let mut names = page
        .headers
        .iter()
        .take(20)
        .map(|name| format!("{name:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    if page.headers.len() > 20 {
        let _ = write!(names, ", … ({} more)", page.headers.len() - 20);
    }
    let _ = writeln!(text, "Headers: {names}");
    if page.available_sheets.len() > 1 {
        let _ = writeln!(text, "Sheets: {}", page.available_sheets.join(", "));
    }
    match (page.next_row_offset, page.truncation_reason) {
        (Some(next), Some(reason)) => {
            let _ = writeln!(
                text,
                "Truncated ({}): call again with row_offset {next} for more.",
                match reason {
                    TruncationReason::MaxRows => "max_rows",
                    TruncationReason::MaxBytes => "96 KiB page ceiling",
                }
            );
        }
        _ => text.push_str("End of data.\n"),
    }
    cells(&mut text, page);
    text
}

/// The most the table of cells takes in the text part, in bytes.
const CELLS_BUDGET: usize = 8 * 1024;

/// The page's cells as a table, whole rows while they fit in
/// [`CELLS_BUDGET`], then which rows are left out and where they are.
fn cells(text: &mut String, page: &TabularData) {
    if page.rows.is_empty() || page.headers.is_empty() {
        return;
    }
    let row = |cells: &mut dyn Iterator<Item = String>| {
        let mut line = String::from("|");
        for cell in cells {
            let _ = write!(line, " {cell} |");
        }
        line.push('\n');
        line
    };
    let mut table = row(&mut page.headers.iter().map(|h| escaped(h)));
    table.push_str(&row(&mut page.headers.iter().map(|_| "---".to_owned())));
    let mut shown = 0;
    for cells in &page.rows {
        let line = row(&mut cells.iter().map(cell_text));
        if table.len() + line.len() > CELLS_BUDGET {
            break;
        }
        table.push_str(&line);
        shown += 1;
    }
    if shown == 0 {
        let _ = writeln!(
            text,
            "The first row alone is over {} KB: the cells are whole in the result's `rows`.",
            CELLS_BUDGET / 1024
        );
        return;
    }
    text.push_str(&table);
    if shown < page.rows.len() {
        let first = page.row_offset + shown as u64;
        let _ = writeln!(
            text,
            "Rows {first}–{} of this page are not shown here (whole in the result's `rows`).",
            page.row_offset + page.rows.len() as u64 - 1
        );
    }
}

/// A cell as the table shows it: empty for an empty cell, a number or
/// boolean as JSON writes it, text with `|` and line breaks escaped.
fn cell_text(cell: &Cell) -> String {
    match cell {
        Cell::Null => String::new(),
        Cell::Bool(b) => b.to_string(),
        Cell::Int(i) => i.to_string(),
        Cell::Float(x) => {
            serde_json::Number::from_f64(*x).map_or_else(|| x.to_string(), |n| n.to_string())
        }
        Cell::String(s) => escaped(s),
    }
}

fn escaped(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('|', "\\|")
        .replace('\r', "\\r")
        .replace('\n', "\\n")
}

pub fn tabular_written(result: &TabularWriteResult) -> String {
    format!(
        "Wrote {} ({}): {} data rows.\nsha256: {}\n",
        result.target_path,
        result.format.as_str(),
        result.rows_written,
        result.sha256
    )
}
