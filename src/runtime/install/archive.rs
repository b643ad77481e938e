//! Safe extraction of a runtime archive (`.tar.gz`) into a directory.
//!
//! The tar crate's own `unpack` silently strips a leading `/`, skips `..`
//! entries and follows a symlink created earlier in the same archive, so
//! every entry is validated here before anything is written: no absolute
//! paths, no `..`, no entry below a parent that is a symlink, no symlink or
//! hardlink whose target leaves the root, no devices or FIFOs. Any of these
//! refuses the whole archive; the caller throws the partial tree away.

use std::fs;
use std::io::{self, Read};
use std::path::{Component, Path, PathBuf};

use tar::EntryType;

/// Why an archive was refused.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    #[error("refusing archive entry {entry:?}: {reason}")]
    Unsafe { entry: String, reason: String },
    #[error("archive entry {entry:?} is not under the expected top-level directory {prefix:?}")]
    Layout { entry: String, prefix: String },
    #[error("could not read the archive: {0}")]
    Read(io::Error),
    #[error("could not write {path}: {source}")]
    Write { path: PathBuf, source: io::Error },
    #[error("extraction cancelled")]
    Cancelled,
}

/// Extracts a gzip-compressed tar from `reader` into `root` (which must
/// exist and be empty), dropping `strip_prefix` from every path.
/// `cancelled` is polled between entries.
pub fn extract_tar_gz(
    reader: impl Read,
    root: &Path,
    strip_prefix: Option<&str>,
    cancelled: &dyn Fn() -> bool,
) -> Result<u64, ArchiveError> {
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(reader));
    let mut written = 0;
    for entry in archive.entries().map_err(ArchiveError::Read)? {
        if cancelled() {
            return Err(ArchiveError::Cancelled);
        }
        let mut entry = entry.map_err(ArchiveError::Read)?;
        let raw = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let Some(relative) = relative_path(&raw, strip_prefix)? else {
            continue;
        };
        let unsafe_entry = |reason: &str| ArchiveError::Unsafe {
            entry: raw.clone(),
            reason: reason.to_owned(),
        };
        let destination = root.join(&relative);
        ensure_no_symlink_ancestor(root, &relative).map_err(|reason| unsafe_entry(&reason))?;
        let kind = entry.header().entry_type();
        match kind {
            EntryType::Directory => {
                fs::create_dir_all(&destination)
                    .map_err(|source| write_error(&destination, source))?;
            }
            EntryType::Regular | EntryType::Continuous => {
                make_parent(&destination)?;
                remove_existing(&destination)?;
                let mode = entry.header().mode().unwrap_or(0o644);
                let mut file = fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&destination)
                    .map_err(|source| write_error(&destination, source))?;
                io::copy(&mut entry, &mut file)
                    .map_err(|source| write_error(&destination, source))?;
                set_mode(&destination, mode & 0o755)?;
                written += 1;
            }
            EntryType::Symlink => {
                let target =
                    link_target(&entry).ok_or_else(|| unsafe_entry("symlink without a target"))?;
                check_symlink_target(&relative, &target).map_err(|reason| unsafe_entry(&reason))?;
                make_parent(&destination)?;
                remove_existing(&destination)?;
                std::os::unix::fs::symlink(&target, &destination)
                    .map_err(|source| write_error(&destination, source))?;
                written += 1;
            }
            EntryType::Link => {
                let target =
                    link_target(&entry).ok_or_else(|| unsafe_entry("hardlink without a target"))?;
                let target = relative_path(&target.to_string_lossy(), strip_prefix)
                    .map_err(|_| unsafe_entry("hardlink target leaves the archive root"))?
                    .ok_or_else(|| unsafe_entry("hardlink to the archive root"))?;
                ensure_no_symlink_ancestor(root, &target)
                    .map_err(|reason| unsafe_entry(&reason))?;
                let source_path = root.join(&target);
                if fs::symlink_metadata(&source_path)
                    .map(|m| !m.is_file())
                    .unwrap_or(true)
                {
                    return Err(unsafe_entry(
                        "hardlink target is not a regular file extracted earlier",
                    ));
                }
                make_parent(&destination)?;
                remove_existing(&destination)?;
                fs::hard_link(&source_path, &destination)
                    .map_err(|source| write_error(&destination, source))?;
                written += 1;
            }
            EntryType::Char | EntryType::Block | EntryType::Fifo => {
                return Err(unsafe_entry("device and FIFO entries are not allowed"));
            }
            // Metadata-only entries (PAX headers, GNU long names) are handled
            // by the tar reader; anything else carries nothing we install.
            _ => {}
        }
    }
    Ok(written)
}

fn write_error(path: &Path, source: io::Error) -> ArchiveError {
    ArchiveError::Write {
        path: path.to_path_buf(),
        source,
    }
}

/// The entry's path below the root, or `None` for the prefix directory
/// itself. Refuses absolute paths and `..`.
fn relative_path(raw: &str, strip_prefix: Option<&str>) -> Result<Option<PathBuf>, ArchiveError> {
    let unsafe_entry = |reason: &str| ArchiveError::Unsafe {
        entry: raw.to_owned(),
        reason: reason.to_owned(),
    };
    let path = Path::new(raw);
    let mut parts = Vec::new();
    for component in path.components() {
        match component {
            Component::Normal(part) => parts.push(part.to_owned()),
            Component::CurDir => {}
            Component::ParentDir => return Err(unsafe_entry("`..` in the path")),
            Component::RootDir | Component::Prefix(_) => {
                return Err(unsafe_entry("absolute path"));
            }
        }
    }
    if let Some(prefix) = strip_prefix {
        if parts
            .first()
            .is_none_or(|first| first.to_str() != Some(prefix))
        {
            return Err(ArchiveError::Layout {
                entry: raw.to_owned(),
                prefix: prefix.to_owned(),
            });
        }
        parts.remove(0);
    }
    if parts.is_empty() {
        return Ok(None);
    }
    Ok(Some(parts.iter().collect()))
}

/// Refuses an entry whose parent directories, as they are on disk now,
/// include a symlink: writing there would land outside the root.
fn ensure_no_symlink_ancestor(root: &Path, relative: &Path) -> Result<(), String> {
    let mut current = root.to_path_buf();
    let components: Vec<_> = relative.components().collect();
    for component in components.iter().take(components.len().saturating_sub(1)) {
        current.push(component);
        if let Ok(meta) = fs::symlink_metadata(&current)
            && meta.file_type().is_symlink()
        {
            return Err(format!(
                "its parent {} is a symlink",
                current.strip_prefix(root).unwrap_or(&current).display()
            ));
        }
    }
    Ok(())
}

/// A symlink may point anywhere inside the root, relative to its own
/// directory; never absolute, never above the root.
fn check_symlink_target(link: &Path, target: &Path) -> Result<(), String> {
    if target.is_absolute() {
        return Err(format!("symlink to the absolute path {}", target.display()));
    }
    let mut depth = link.components().count().saturating_sub(1) as i64;
    for component in target.components() {
        match component {
            Component::ParentDir => depth -= 1,
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => {
                return Err("symlink to an absolute path".to_owned());
            }
        }
        if depth < 0 {
            return Err(format!(
                "symlink target {} leaves the root",
                target.display()
            ));
        }
    }
    Ok(())
}

fn link_target<R: Read>(entry: &tar::Entry<'_, R>) -> Option<PathBuf> {
    entry
        .link_name()
        .ok()
        .flatten()
        .map(|name| name.into_owned())
}

fn make_parent(path: &Path) -> Result<(), ArchiveError> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).map_err(|source| write_error(parent, source))?;
    }
    Ok(())
}

/// A later entry replaces an earlier one; a symlink is removed, not followed.
fn remove_existing(path: &Path) -> Result<(), ArchiveError> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => Err(ArchiveError::Unsafe {
            entry: path.display().to_string(),
            reason: "a file entry would replace a directory".to_owned(),
        }),
        Ok(_) => fs::remove_file(path).map_err(|source| write_error(path, source)),
        Err(_) => Ok(()),
    }
}

fn set_mode(path: &Path, mode: u32) -> Result<(), ArchiveError> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
        .map_err(|source| write_error(path, source))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths() {
        let ok = |raw: &str, prefix| relative_path(raw, prefix).unwrap();
        assert_eq!(
            ok("top/bin/minizinc", Some("top")),
            Some(PathBuf::from("bin/minizinc"))
        );
        assert_eq!(ok("top/", Some("top")), None);
        assert_eq!(ok("./bin/x", None), Some(PathBuf::from("bin/x")));
        assert!(relative_path("/etc/passwd", None).is_err());
        assert!(relative_path("top/../../x", Some("top")).is_err());
        assert!(matches!(
            relative_path("other/bin/x", Some("top")),
            Err(ArchiveError::Layout { .. })
        ));
    }

    #[test]
    fn symlink_targets() {
        assert!(check_symlink_target(Path::new("lib/libx.so"), Path::new("libx.so.1")).is_ok());
        assert!(check_symlink_target(Path::new("bin/fzn"), Path::new("../lib/fzn")).is_ok());
        assert!(check_symlink_target(Path::new("bin/fzn"), Path::new("../../etc/passwd")).is_err());
        assert!(check_symlink_target(Path::new("x"), Path::new("/etc/passwd")).is_err());
        assert!(check_symlink_target(Path::new("a/b"), Path::new("c/../../../x")).is_err());
    }
}
