//! Writing a table: validate everything, encode in memory, stage beside the
//! target, publish with one link or rename.
//!
//! Order matters: every refusal (a bad cell, a formula-like CSV string, an
//! XLSX value that would not read back as sent, a bad target) happens
//! before the filesystem is touched. The bytes are staged in a file without
//! a name (`O_TMPFILE`), so a write killed at any moment — SIGKILL included
//! — leaves nothing behind. Publishing never clobbers unless asked: without
//! `overwrite` the staged file is linked to the target name, which fails if
//! anything — even a file created a moment ago — holds it; with `overwrite`
//! it is linked under a staging name and renamed over the target. Where the
//! filesystem has no nameless files the staging file has a name, removed on
//! every path but a kill (by its guard).

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use tokio_util::sync::CancellationToken;

use rust_xlsxwriter::Workbook;
use serde_json::Value;

use super::cell::{XLSX_MAX_CELL_CHARS, formula_like, not_a_scalar, xlsx_hazard};
use super::{Format, TabularWriteResult, WriteRequest, WriteStatus};
use crate::diagnostics::{Category, ToolError};

/// Excel's sheet limits: rows (the header included) and columns.
const XLSX_MAX_ROWS: usize = 1_048_576;
const XLSX_MAX_COLUMNS: usize = 16_384;

/// The prefix of staged files in the target's directory.
const STAGING_PREFIX: &str = ".tabular-staging-";

pub fn write(
    request: &WriteRequest,
    cancel: &CancellationToken,
) -> Result<TabularWriteResult, ToolError> {
    let target = target_path(&request.target_path)?;
    let format = match Format::of("target_path", target)? {
        format @ (Format::Xlsx | Format::Csv) => format,
        other => {
            return Err(ToolError::invalid(format!(
                "target_path {} asks for .{}, which is read-only here; write .xlsx or .csv",
                target.display(),
                other.as_str()
            )));
        }
    };
    validate(format, &request.headers, &request.rows)?;
    let parent = check_target(target, request.overwrite)?;
    let bytes = match format {
        Format::Xlsx => encode_xlsx(&request.headers, &request.rows)?,
        _ => encode_csv(&request.headers, &request.rows)?,
    };
    let sha256 = crate::sha256_hex(&bytes);
    // A call cancelled while the table was encoded publishes nothing.
    if cancel.is_cancelled() {
        return Err(ToolError::new(
            crate::diagnostics::Category::Cancelled,
            format!(
                "cancelled before {} was written; nothing was written",
                target.display()
            ),
        ));
    }
    publish(target, parent, &bytes, request.overwrite)?;
    let rows_written = request.rows.len() as u64;
    Ok(TabularWriteResult {
        status: WriteStatus::Written,
        message: format!(
            "wrote {rows_written} data rows and a header row of {} columns as .{}",
            request.headers.len(),
            format.as_str()
        ),
        target_path: target.display().to_string(),
        sha256,
        format,
        rows_written,
    })
}

fn bad_target(message: String) -> ToolError {
    ToolError::new(Category::InvalidSaveTarget, message)
}

fn target_path(path: &str) -> Result<&Path, ToolError> {
    if path.trim().is_empty() {
        return Err(bad_target("target_path must not be empty".to_owned()));
    }
    let target = Path::new(path);
    if !target.is_absolute() {
        return Err(bad_target(format!(
            "target_path {path} is relative; pass an absolute path"
        )));
    }
    if target.file_name().is_none() {
        return Err(bad_target(format!(
            "target_path {path} does not end in a file name"
        )));
    }
    Ok(target)
}

/// Every cell and header checked against the format's contract.
fn validate(format: Format, headers: &[String], rows: &[Vec<Value>]) -> Result<(), ToolError> {
    if format == Format::Xlsx {
        if headers.is_empty() {
            return Err(ToolError::invalid(
                "headers is empty: an XLSX sheet without a column has no cells, so its rows would not read back; give at least one column, or write .csv",
            ));
        }
        if headers.len() > XLSX_MAX_COLUMNS {
            return Err(ToolError::invalid(format!(
                "headers has {} columns, over Excel's {XLSX_MAX_COLUMNS}; write .csv",
                headers.len()
            )));
        }
        if rows.len() >= XLSX_MAX_ROWS {
            return Err(ToolError::invalid(format!(
                "rows has {} rows; Excel holds {} below the header row; write .csv",
                rows.len(),
                XLSX_MAX_ROWS - 1
            )));
        }
    } else if headers.is_empty() && !rows.is_empty() {
        return Err(ToolError::invalid(
            "headers is empty but rows are not: a CSV record with no field is a blank line, which the CSV reader (load_tabular_data included) skips, so the rows would not read back; give at least one column",
        ));
    }
    for (col, header) in headers.iter().enumerate() {
        let problem = match format {
            Format::Csv if formula_like(header) => Some(formula_message()),
            Format::Xlsx if header.chars().count() > XLSX_MAX_CELL_CHARS => Some(format!(
                "is over Excel's {XLSX_MAX_CELL_CHARS}-character cell limit; shorten it"
            )),
            _ => None,
        };
        if let Some(problem) = problem {
            return Err(ToolError::invalid(format!("headers[{col}] {problem}")));
        }
    }
    for (index, row) in rows.iter().enumerate() {
        if row.len() != headers.len() {
            return Err(ToolError::invalid(format!(
                "rows[{index}] has {} cells but headers has {}; every row must be exactly as wide as headers (use null for a missing value)",
                row.len(),
                headers.len()
            )));
        }
        for (col, value) in row.iter().enumerate() {
            if let Some(kind) = not_a_scalar(value) {
                return Err(ToolError::invalid(format!(
                    "rows[{index}][{col}] is {kind}; a cell is a string, number, boolean or null"
                )));
            }
            let problem = match (format, value) {
                (Format::Csv, Value::String(text)) if formula_like(text) => Some(formula_message()),
                (Format::Xlsx, value) => xlsx_hazard(value),
                _ => None,
            };
            if let Some(problem) = problem {
                return Err(ToolError::invalid(format!(
                    "rows[{index}][{col}] {problem}"
                )));
            }
        }
    }
    if format == Format::Xlsx {
        trailing_blanks(headers, rows)?;
    }
    Ok(())
}

fn formula_message() -> String {
    "starts with =, +, - or @ (after any whitespace), which a spreadsheet opening the CSV may run as a formula; send a number as a number (-5, not \"-5\"), change the text, or write .xlsx, which stores it as literal text".to_owned()
}

/// XLSX keeps no trace of a row or column without a cell: a last row of
/// nulls, or a last column with a blank header and only nulls, would not
/// read back.
fn trailing_blanks(headers: &[String], rows: &[Vec<Value>]) -> Result<(), ToolError> {
    if rows
        .last()
        .is_some_and(|row| row.iter().all(Value::is_null))
    {
        let index = rows.len() - 1;
        return Err(ToolError::invalid(format!(
            "rows[{index}] is the last row and has only null cells: XLSX keeps no trace of an empty row at the end of a sheet, so it would not read back; drop it, or write .csv"
        )));
    }
    let Some(last) = headers.len().checked_sub(1) else {
        return Ok(());
    };
    if headers[last].is_empty()
        && rows
            .iter()
            .all(|row| row.get(last).is_none_or(Value::is_null))
    {
        return Err(ToolError::invalid(format!(
            "column {last} (the last) has an empty header and only null cells: XLSX keeps no trace of it, so the table would read back one column narrower; name it, drop it, or write .csv"
        )));
    }
    Ok(())
}

/// The target's parent directory, after checking the target can be
/// written.
fn check_target(target: &Path, overwrite: bool) -> Result<&Path, ToolError> {
    let parent = target.parent().unwrap_or(Path::new("/"));
    match fs::metadata(parent) {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => {
            return Err(bad_target(format!(
                "target_path's parent {} is not a directory",
                parent.display()
            )));
        }
        Err(error) => {
            return Err(bad_target(format!(
                "target_path's parent directory {} cannot be used ({error}); create it first",
                parent.display()
            )));
        }
    }
    match fs::symlink_metadata(target) {
        Ok(meta) if meta.is_dir() => Err(bad_target(format!(
            "target_path {} is a directory; name a file",
            target.display()
        ))),
        Ok(_) if !overwrite => Err(exists(target)),
        _ => Ok(parent),
    }
}

fn exists(target: &Path) -> ToolError {
    bad_target(format!(
        "target_path {} already exists and overwrite is false; it was left untouched. Pass overwrite=true to replace it, or choose another name",
        target.display()
    ))
}

pub(super) fn encode_xlsx(headers: &[String], rows: &[Vec<Value>]) -> Result<Vec<u8>, ToolError> {
    let failed = |error: rust_xlsxwriter::XlsxError| {
        ToolError::invalid(format!("the XLSX writer refused the table: {error}"))
    };
    let mut workbook = Workbook::new();
    let sheet = workbook.add_worksheet();
    for (col, header) in headers.iter().enumerate() {
        if !header.is_empty() {
            sheet.write_string(0, col as u16, header).map_err(failed)?;
        }
    }
    for (index, row) in rows.iter().enumerate() {
        let line = index as u32 + 1;
        for (col, value) in row.iter().enumerate() {
            let col = col as u16;
            match value {
                Value::Bool(value) => sheet.write_boolean(line, col, *value),
                Value::Number(number) => match number.as_i64() {
                    Some(integer) => sheet.write_number(line, col, integer as f64),
                    None => sheet.write_number(line, col, number.as_f64().unwrap_or(f64::NAN)),
                },
                Value::String(text) => sheet.write_string(line, col, text),
                _ => continue,
            }
            .map_err(failed)?;
        }
    }
    workbook.save_to_buffer().map_err(failed)
}

fn encode_csv(headers: &[String], rows: &[Vec<Value>]) -> Result<Vec<u8>, ToolError> {
    let failed = |error: csv::Error| {
        ToolError::invalid(format!("the CSV writer refused the table: {error}"))
    };
    let mut writer = csv::WriterBuilder::new().from_writer(Vec::new());
    if !headers.is_empty() {
        writer.write_record(headers).map_err(failed)?;
    }
    for row in rows {
        writer
            .write_record(row.iter().map(|value| match value {
                Value::Null => String::new(),
                Value::String(text) => text.clone(),
                other => other.to_string(),
            }))
            .map_err(failed)?;
    }
    writer
        .into_inner()
        .map_err(|error| ToolError::invalid(format!("the CSV writer failed: {error}")))
}

fn publish(target: &Path, parent: &Path, bytes: &[u8], overwrite: bool) -> Result<(), ToolError> {
    let failed = |error: io::Error| {
        bad_target(format!(
            "could not write {}: {error}; nothing was written",
            target.display()
        ))
    };
    match Staged::anonymous(parent, bytes).map_err(failed)? {
        Some(staged) => staged.link(target, parent, overwrite)?,
        None => publish_named(target, parent, bytes, overwrite)?,
    }
    if let Ok(directory) = fs::File::open(parent) {
        let _ = directory.sync_all();
    }
    Ok(())
}

/// A file with the table's bytes that has no name yet (`O_TMPFILE`): if
/// the process dies before it is linked, the kernel frees it and the
/// directory never saw it.
struct Staged(fs::File);

impl Staged {
    /// `None` when the filesystem (or a missing `/proc`) cannot give
    /// nameless files; the caller stages under a name instead.
    fn anonymous(parent: &Path, bytes: &[u8]) -> io::Result<Option<Staged>> {
        use nix::errno::Errno;
        use nix::fcntl::{OFlag, open};
        use nix::sys::stat::Mode;
        if !Path::new("/proc/self/fd").is_dir() {
            return Ok(None);
        }
        let flags = OFlag::O_TMPFILE | OFlag::O_WRONLY | OFlag::O_CLOEXEC;
        let fd = match open(parent, flags, Mode::from_bits_truncate(0o644)) {
            Ok(fd) => fd,
            Err(Errno::EOPNOTSUPP | Errno::EISDIR | Errno::EINVAL) => return Ok(None),
            Err(errno) => return Err(errno.into()),
        };
        let mut file = fs::File::from(fd);
        file.write_all(bytes)?;
        file.set_permissions(fs::Permissions::from_mode(0o644))?;
        file.sync_all()?;
        Ok(Some(Staged(file)))
    }

    /// Gives the file a name: the target itself when it must not exist
    /// (the link fails if anything holds the name), or a staging name
    /// renamed over the target with `overwrite` (the only moment a name
    /// other than the target exists is between those two calls).
    fn link(self, target: &Path, parent: &Path, overwrite: bool) -> Result<(), ToolError> {
        use nix::errno::Errno;
        use nix::fcntl::{AT_FDCWD, AtFlags};
        use std::os::fd::AsRawFd;
        let failed = |error: io::Error| {
            bad_target(format!(
                "could not write {}: {error}; nothing was written",
                target.display()
            ))
        };
        let source = format!("/proc/self/fd/{}", self.0.as_raw_fd());
        let link_to = |name: &Path| {
            nix::unistd::linkat(
                AT_FDCWD,
                source.as_str(),
                AT_FDCWD,
                name,
                AtFlags::AT_SYMLINK_FOLLOW,
            )
        };
        if !overwrite {
            return match link_to(target) {
                Ok(()) => Ok(()),
                Err(Errno::EEXIST) => Err(exists(target)),
                Err(errno) => Err(failed(errno.into())),
            };
        }
        let staging = loop {
            let name = parent.join(format!("{STAGING_PREFIX}{}", uuid::Uuid::new_v4().simple()));
            match link_to(&name) {
                Ok(()) => break name,
                Err(Errno::EEXIST) => continue,
                Err(errno) => return Err(failed(errno.into())),
            }
        };
        fs::rename(&staging, target).map_err(|error| {
            let _ = fs::remove_file(&staging);
            failed(error)
        })
    }
}

/// Staging under a name, for filesystems without nameless files.
fn publish_named(
    target: &Path,
    parent: &Path,
    bytes: &[u8],
    overwrite: bool,
) -> Result<(), ToolError> {
    let failed = |error: io::Error| {
        bad_target(format!(
            "could not write {}: {error}; nothing was written",
            target.display()
        ))
    };
    let mut staged = tempfile::Builder::new()
        .prefix(STAGING_PREFIX)
        .tempfile_in(parent)
        .map_err(failed)?;
    staged.write_all(bytes).map_err(failed)?;
    staged
        .as_file()
        .set_permissions(fs::Permissions::from_mode(0o644))
        .map_err(failed)?;
    staged.as_file().sync_all().map_err(failed)?;
    if overwrite {
        staged
            .persist(target)
            .map_err(|error| failed(error.error))?;
    } else {
        match fs::hard_link(staged.path(), target) {
            Ok(()) => {}
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {
                return Err(exists(target));
            }
            Err(error) => return Err(failed(error)),
        }
        // `staged` is removed when it drops; the target keeps the bytes.
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn table(rows: Vec<Value>) -> Vec<Vec<Value>> {
        rows.into_iter()
            .map(|row| row.as_array().cloned().unwrap_or_default())
            .collect()
    }

    fn headers(names: &[&str]) -> Vec<String> {
        names.iter().map(|name| (*name).to_owned()).collect()
    }

    #[test]
    fn a_staged_table_has_no_name_until_it_is_published() {
        let dir = tempfile::tempdir().unwrap();
        let staged = Staged::anonymous(dir.path(), b"a,b\n1,2\n")
            .unwrap()
            .expect("the test's temp dir supports O_TMPFILE");
        // A kill here leaves the directory as it was: nothing has a name.
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
        let target = dir.path().join("t.csv");
        staged.link(&target, dir.path(), false).unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"a,b\n1,2\n");
        let mode = fs::metadata(&target).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o644);

        let again = Staged::anonymous(dir.path(), b"x\n").unwrap().unwrap();
        let refused = again.link(&target, dir.path(), false).unwrap_err();
        assert!(refused.to_string().contains("already exists"), "{refused}");
        let replace = Staged::anonymous(dir.path(), b"y\n").unwrap().unwrap();
        replace.link(&target, dir.path(), true).unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"y\n");
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(names, ["t.csv"]);
    }

    #[test]
    fn validation_names_the_offending_cell() {
        let cases = [
            (
                Format::Csv,
                headers(&["a", "b"]),
                table(vec![json!([1])]),
                "rows[0] has 1 cells",
            ),
            (
                Format::Csv,
                headers(&["a"]),
                table(vec![json!([[1]])]),
                "rows[0][0] is an array",
            ),
            (
                Format::Xlsx,
                headers(&["a"]),
                table(vec![json!([1]), json!([{"x": 1}])]),
                "rows[1][0] is an object",
            ),
            (
                Format::Csv,
                headers(&["a"]),
                table(vec![json!(["x"]), json!(["=SUM(A1)"])]),
                "rows[1][0] starts with =",
            ),
            (
                Format::Csv,
                headers(&["@who"]),
                vec![],
                "headers[0] starts with =",
            ),
            (
                Format::Xlsx,
                headers(&["a", "b"]),
                table(vec![json!([1, ""])]),
                "rows[0][1] is an empty string",
            ),
            (
                Format::Xlsx,
                headers(&["a"]),
                table(vec![json!([2.0])]),
                "rows[0][0] is the float 2.0",
            ),
            (Format::Xlsx, vec![], vec![], "headers is empty"),
            (
                Format::Csv,
                vec![],
                table(vec![json!([])]),
                "headers is empty but rows are not",
            ),
            (
                Format::Xlsx,
                headers(&["a"]),
                table(vec![json!([1]), json!([null])]),
                "rows[1] is the last row",
            ),
            (
                Format::Xlsx,
                headers(&["a", ""]),
                table(vec![json!([1, null])]),
                "column 1 (the last)",
            ),
        ];
        for (format, headers, rows, expected) in cases {
            let message = validate(format, &headers, &rows).unwrap_err().to_string();
            assert!(
                message.starts_with("Diagnostic: invalid_request — ") && message.contains(expected),
                "{expected}: {message}"
            );
        }
    }

    #[test]
    fn formula_like_text_is_fine_in_xlsx_and_null_rows_in_csv() {
        let rows = table(vec![json!(["=1+1", "-5", 3]), json!([null, null, null])]);
        validate(
            Format::Csv,
            &headers(&["a", "b", "c"]),
            &table(vec![json!([null, "x", -5])]),
        )
        .unwrap();
        validate(Format::Xlsx, &headers(&["a", "b", "c"]), &rows[..1]).unwrap();
        validate(Format::Csv, &headers(&["a", "b", "c"]), &rows[1..]).unwrap();
    }

    #[test]
    fn csv_text_is_one_fixed_dialect() {
        let bytes = encode_csv(
            &headers(&["name", "note"]),
            &table(vec![
                json!(["a,b", "say \"hi\""]),
                json!([1.5, null]),
                json!([true, "x\ny"]),
            ]),
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            "name,note\n\"a,b\",\"say \"\"hi\"\"\"\n1.5,\ntrue,\"x\ny\"\n"
        );
    }

    #[test]
    fn the_link_refuses_a_target_that_appeared_after_the_checks() {
        // check_target passed earlier; the file appears before publishing.
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("late.csv");
        check_target(&target, false).unwrap();
        fs::write(&target, "arrived first").unwrap();
        let error = publish(&target, dir.path(), b"a\n1\n", false).unwrap_err();
        assert_eq!(error.category(), Category::InvalidSaveTarget);
        assert!(error.to_string().contains("already exists"), "{error}");
        assert_eq!(fs::read_to_string(&target).unwrap(), "arrived first");
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(names, ["late.csv"], "the staged file stayed behind");
        publish(&target, dir.path(), b"a\n1\n", true).unwrap();
        assert_eq!(fs::read_to_string(&target).unwrap(), "a\n1\n");
        let mode = fs::metadata(&target).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o644);
    }
}
