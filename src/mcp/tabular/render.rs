//! The text parts of the tabular tools: a page of rows, a written file.

use std::fmt::Write;

use crate::tabular::{TabularData, TabularWriteResult, TruncationReason};

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
                    TruncationReason::MaxBytes => "1 MiB page ceiling",
                }
            );
        }
        _ => text.push_str("End of data.\n"),
    }
    text.push_str("The cells are in the structured result's `rows`.\n");
    text
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
