//! The files a user names by path: resolved to absolute, checked to be a
//! regular file, read as UTF-8. Every problem is an `invalid_request` that
//! names the argument and the path, raised before any process starts.

use std::fs;
use std::path::{Path, PathBuf};

use crate::diagnostics::ToolError;

/// Resolves `path` (relative to the current directory) to an absolute,
/// symlink-free path of an existing regular file.
pub fn existing_file(argument: &str, path: &str) -> Result<PathBuf, ToolError> {
    if path.trim().is_empty() {
        return Err(ToolError::invalid(format!("{argument} must not be empty")));
    }
    let resolved = fs::canonicalize(path).map_err(|error| {
        let shown = std::path::absolute(path).unwrap_or_else(|_| PathBuf::from(path));
        if error.kind() == std::io::ErrorKind::NotFound {
            ToolError::invalid(format!("{argument} {} does not exist", shown.display()))
        } else {
            ToolError::invalid(format!(
                "{argument} {} cannot be read: {error}",
                shown.display()
            ))
        }
    })?;
    if !resolved.is_file() {
        return Err(ToolError::invalid(format!(
            "{argument} {} is not a regular file",
            resolved.display()
        )));
    }
    Ok(resolved)
}

/// Reads a file as UTF-8 text.
pub fn utf8_text(argument: &str, path: &Path) -> Result<String, ToolError> {
    let bytes = fs::read(path).map_err(|error| {
        ToolError::invalid(format!(
            "{argument} {} cannot be read: {error}",
            path.display()
        ))
    })?;
    String::from_utf8(bytes).map_err(|error| {
        ToolError::invalid(format!(
            "{argument} {} is not valid UTF-8 (first bad byte at offset {}); save it as UTF-8",
            path.display(),
            error.utf8_error().valid_up_to()
        ))
    })
}

/// An existing, non-empty UTF-8 text file: its absolute path and text.
pub fn text_file(argument: &str, path: &str) -> Result<(PathBuf, String), ToolError> {
    let resolved = existing_file(argument, path)?;
    let text = utf8_text(argument, &resolved)?;
    if text.trim().is_empty() {
        return Err(ToolError::invalid(format!(
            "{argument} {} is empty",
            resolved.display()
        )));
    }
    Ok((resolved, text))
}
