//! Paths a person typed, made absolute once before any command uses them;
//! the one way a path that cannot be is refused.

use std::path::{Path, PathBuf};

/// A path that cannot be made absolute (empty, or the working directory
/// is gone).
#[derive(Debug, thiserror::Error)]
#[error("cannot resolve {}", .path.display())]
pub(crate) struct Unresolvable {
    path: PathBuf,
    #[source]
    source: std::io::Error,
}

/// `path` made absolute against the working directory, without touching
/// the file system (a venv's `python` symlink stays the venv's).
pub(crate) fn absolute(path: &Path) -> Result<PathBuf, Unresolvable> {
    std::path::absolute(path).map_err(|source| Unresolvable {
        path: path.to_path_buf(),
        source,
    })
}
