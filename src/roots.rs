//! The directories a client may name paths in, when the operator confines
//! them (`serve --http … --allow-remote`, `--allow-root DIR`). A server
//! that remote clients reach hands them no file of its machine by default:
//! every path a tool takes — to read it or to write there — must resolve,
//! symlinks and `..` included, beneath one of the roots, or the call is
//! refused before anything runs. A local server (stdio, loopback HTTP)
//! names no roots and admits every path, as its user's own tools do.
//!
//! The check is made on the call's arguments as they arrive
//! ([`admit_arguments`]): every string under a key that names a path
//! (`*_path`, `*_dir`, `path`), wherever it sits in the arguments, so a
//! tool that gains a path argument is covered without a change here.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::Value;

use crate::diagnostics::ToolError;

/// The roots, canonical, once the operator confined paths.
static ROOTS: OnceLock<Vec<PathBuf>> = OnceLock::new();

/// A root that is not an existing directory.
#[derive(Debug, thiserror::Error)]
#[error("--allow-root {}: must be an existing directory", .0.display())]
pub struct NotARoot(pub PathBuf);

/// Confines every path a call names to `roots` (none: no path at all).
/// Each must be an existing directory; its canonical form is kept.
pub fn confine_to(roots: &[PathBuf]) -> Result<(), NotARoot> {
    let canonical = roots
        .iter()
        .map(|root| match root.canonicalize() {
            Ok(real) if real.is_dir() => Ok(real),
            _ => Err(NotARoot(root.clone())),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let _ = ROOTS.set(canonical);
    Ok(())
}

/// The roots, when paths are confined.
pub fn confined() -> Option<&'static [PathBuf]> {
    ROOTS.get().map(Vec::as_slice)
}

/// Whether `key` names a path argument.
fn names_a_path(key: &str) -> bool {
    key == "path" || key.ends_with("_path") || key.ends_with("_dir") || key.ends_with("_paths")
}

/// Refuses the call when a path among `arguments` falls outside the roots
/// (a no-op when paths are not confined).
pub fn admit_arguments(
    arguments: Option<&serde_json::Map<String, Value>>,
) -> Result<(), ToolError> {
    let (Some(roots), Some(arguments)) = (confined(), arguments) else {
        return Ok(());
    };
    walk(roots, None, &Value::Object(arguments.clone()))
}

fn walk(roots: &[PathBuf], key: Option<&str>, value: &Value) -> Result<(), ToolError> {
    match value {
        Value::Object(map) => map
            .iter()
            .try_for_each(|(key, value)| walk(roots, Some(key), value)),
        Value::Array(items) => items.iter().try_for_each(|item| walk(roots, key, item)),
        Value::String(path) => match key {
            Some(key) if names_a_path(key) => admit(roots, key, path),
            _ => Ok(()),
        },
        _ => Ok(()),
    }
}

/// Admits `path` (the value of `argument`) when it resolves beneath a root.
fn admit(roots: &[PathBuf], argument: &str, path: &str) -> Result<(), ToolError> {
    match resolve(Path::new(path)) {
        Some(real) if roots.iter().any(|root| real.starts_with(root)) => Ok(()),
        _ => Err(ToolError::invalid(format!(
            "{argument} {path:?} is outside the directories this server lets its clients name ({}); pass the content inline (the tools without _files or _file take it), or ask the operator to serve with --allow-root DIR",
            if roots.is_empty() {
                "none: it serves remote clients without --allow-root".to_owned()
            } else {
                roots
                    .iter()
                    .map(|root| root.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        ))),
    }
}

/// Where `path` really is: its longest existing prefix resolved (symlinks
/// and `..` followed as the kernel would), then the names after it, none of
/// which may be `..`. `None` when it cannot be told.
fn resolve(path: &Path) -> Option<PathBuf> {
    let absolute = std::path::absolute(path).ok()?;
    let mut existing = absolute.as_path();
    let mut rest = Vec::new();
    let real = loop {
        if let Ok(real) = existing.canonicalize() {
            break real;
        }
        // `None` for a name that is `..`, or at the root.
        rest.push(existing.file_name()?);
        existing = existing.parent()?;
    };
    Some(rest.iter().rev().fold(real, |path, part| path.join(part)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_resolve_through_symlinks_and_never_climb_out() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let real_root = root.path().canonicalize().unwrap();
        let roots = vec![real_root.clone()];
        std::fs::write(root.path().join("m.mzn"), "").unwrap();
        std::fs::write(outside.path().join("secret"), "").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), root.path().join("link"))
            .unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("dir")).unwrap();
        let ok = |path: PathBuf| admit(&roots, "model_path", path.to_str().unwrap()).is_ok();
        assert!(ok(root.path().join("m.mzn")));
        // A target dir that does not exist yet, beneath the root.
        assert!(ok(root.path().join("new/saved")));
        assert!(!ok(outside.path().join("secret")));
        assert!(!ok(root.path().join("link")));
        assert!(!ok(root.path().join("dir/secret")));
        assert!(!ok(root.path().join("dir/new")));
        assert!(!ok(root.path().join("missing/../../secret")));
        assert!(!ok(PathBuf::from("/")));
        // No roots: nothing is admitted.
        assert!(admit(&[], "path", root.path().join("m.mzn").to_str().unwrap()).is_err());
    }

    #[test]
    fn path_arguments_are_found_wherever_they_sit() {
        assert!(names_a_path("model_path") && names_a_path("target_dir") && names_a_path("path"));
        assert!(!names_a_path("direction") && !names_a_path("model"));
        let root = tempfile::tempdir().unwrap();
        let roots = vec![root.path().canonicalize().unwrap()];
        let nested =
            serde_json::json!({"variants": [{"label": "a", "script_path": "/etc/passwd"}]});
        assert!(walk(&roots, None, &nested).is_err());
        let inline = serde_json::json!({"model": "/etc/passwd", "solver": "gecode"});
        assert!(walk(&roots, None, &inline).is_ok());
    }
}
