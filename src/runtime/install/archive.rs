//! Safe extraction of a runtime archive (`.tar.gz`) into a directory.
//!
//! The tar crate's own `unpack` silently strips a leading `/`, skips `..`
//! entries and follows a symlink created earlier in the same archive, so
//! every entry is validated here before anything is written. Any refusal
//! refuses the whole archive; the caller throws the partial tree away.
//!
//! Two rules make escape impossible by construction rather than by
//! spotting bad spellings:
//!
//! - **Writes never follow a symlink.** An entry is written only where
//!   every parent, as it is on disk now, is a real directory; an existing
//!   entry at the destination is removed, never opened, and files are
//!   created with `O_CREAT | O_EXCL | O_NOFOLLOW`. Hardlinks must name a
//!   regular file reached the same way (so never a symlink).
//! - **Every symlink target is resolved against the tree as extracted**,
//!   component by component, following the links already there (at most
//!   [`MAX_LINK_DEPTH`] of them, as the kernel's `ELOOP` bound), and is
//!   refused if it is absolute or any `..` would climb above the root. A
//!   later entry can change what an earlier link means (`b -> x/x/../..`
//!   is harmless until `x -> .` arrives), so every link is resolved once
//!   more against the finished tree before extraction reports success.
//!
//! Why not directory handles (`cap-std`, `openat2(RESOLVE_BENEATH)`): they
//! keep *our* writes inside the root, which the first rule already does,
//! but the installed runtime is later used through ordinary paths by
//! MiniZinc and its solvers, which follow its links with no such guard. So
//! the tree itself must hold no link that leaves it, and that needs the
//! resolver either way. The staging directory is private to this process,
//! so checking the tree and then writing it has no race to lose.
//! Also refused: devices and FIFOs, paths with `..` or a leading `/`.

use std::ffi::OsString;
use std::fs;
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};

use tar::EntryType;

/// How many symlinks one resolution may follow before it is refused (the
/// kernel's own bound, `MAXSYMLINKS`); a link loop ends here too.
const MAX_LINK_DEPTH: usize = 40;

/// Why an archive was refused.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    /// An entry breaks a rule of a safe extraction.
    #[error("refusing archive entry {entry:?}")]
    Unsafe {
        /// The entry's path as the archive names it.
        entry: String,
        /// The rule it breaks.
        #[source]
        reason: Refusal,
    },
    /// An entry is outside the bundle's top-level directory.
    #[error("archive entry {entry:?} is not under the expected top-level directory {prefix:?}")]
    Layout {
        /// The entry's path as the archive names it.
        entry: String,
        /// The top-level directory the manifest names.
        prefix: String,
    },
    /// The archive itself could not be read (not gzip, not tar, cut off).
    #[error("could not read the archive")]
    Read(#[source] io::Error),
    /// An entry could not be written.
    #[error("could not write {path}")]
    Write {
        /// Where it was being written.
        path: PathBuf,
        /// Why it failed.
        source: io::Error,
    },
    /// Ctrl-C or SIGTERM between entries.
    #[error("extraction cancelled")]
    Cancelled,
}

/// Why one entry was refused: a fixed rule it broke, or where its link or
/// its parents lead.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// A rule the entry itself breaks (its kind, its spelling).
    #[error("{0}")]
    Rule(&'static str),
    /// A directory above the entry is a symlink.
    #[error("its parent {} is a symlink", .0.display())]
    SymlinkParent(PathBuf),
    /// A symlink to an absolute path.
    #[error("symlink to the absolute path {}", .0.display())]
    AbsoluteTarget(PathBuf),
    /// A link whose own path is absolute.
    #[error("absolute link path")]
    AbsoluteLink,
    /// A symlink whose target climbs out of the extraction root.
    #[error("symlink target {} leaves the root", .0.display())]
    LeavesRoot(PathBuf),
    /// A symlink that resolves through too many links.
    #[error("symlink target {} follows more than {MAX_LINK_DEPTH} links (a loop?)", .0.display())]
    TooManyLinks(PathBuf),
    /// A link already extracted could not be read back.
    #[error("could not read the link {}", .link.display())]
    ReadLink {
        /// The link.
        link: PathBuf,
        /// Why it could not be read.
        source: io::Error,
    },
    /// A symlink whose target passes through a link to an absolute path.
    #[error(
        "symlink target {} goes through {}, a link to the absolute path {}",
        .target.display(),
        .via.display(),
        .leads_to.display()
    )]
    ThroughAbsolute {
        /// The symlink's target.
        target: PathBuf,
        /// The link on the way.
        via: PathBuf,
        /// Where that link points.
        leads_to: PathBuf,
    },
    /// A link that was fine when written, refused against the whole tree.
    #[error("{0} (once the whole archive is extracted)")]
    Finished(Box<Refusal>),
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
    extract_tar(
        flate2::read::GzDecoder::new(reader),
        root,
        strip_prefix,
        cancelled,
    )
}

/// [`extract_tar_gz`] after decompression: the tar stream itself, every
/// entry validated before it is written. The fuzz target feeds it raw tar
/// bytes (through `crate::fuzzing`).
pub fn extract_tar(
    reader: impl Read,
    root: &Path,
    strip_prefix: Option<&str>,
    cancelled: &dyn Fn() -> bool,
) -> Result<u64, ArchiveError> {
    let mut archive = tar::Archive::new(reader);
    let mut written = 0;
    let mut links: Vec<(String, PathBuf)> = Vec::new();
    for entry in archive.entries().map_err(ArchiveError::Read)? {
        if cancelled() {
            return Err(ArchiveError::Cancelled);
        }
        let mut entry = entry.map_err(ArchiveError::Read)?;
        let raw = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let Some(relative) = relative_path(&raw, strip_prefix)? else {
            continue;
        };
        let unsafe_entry = |reason: Refusal| ArchiveError::Unsafe {
            entry: raw.clone(),
            reason,
        };
        let rule = |rule: &'static str| unsafe_entry(Refusal::Rule(rule));
        let destination = root.join(&relative);
        ensure_no_symlink_ancestor(root, &relative).map_err(unsafe_entry)?;
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
                    .custom_flags(libc::O_NOFOLLOW)
                    .open(&destination)
                    .map_err(|source| write_error(&destination, source))?;
                io::copy(&mut entry, &mut file)
                    .map_err(|source| write_error(&destination, source))?;
                set_mode(&destination, mode & 0o755)?;
                written += 1;
            }
            EntryType::Symlink => {
                let target = link_target(&entry).ok_or_else(|| rule("symlink without a target"))?;
                resolve_link(root, &relative, &target).map_err(unsafe_entry)?;
                make_parent(&destination)?;
                remove_existing(&destination)?;
                std::os::unix::fs::symlink(&target, &destination)
                    .map_err(|source| write_error(&destination, source))?;
                links.push((raw.clone(), relative));
                written += 1;
            }
            EntryType::Link => {
                let target =
                    link_target(&entry).ok_or_else(|| rule("hardlink without a target"))?;
                let target = relative_path(&target.to_string_lossy(), strip_prefix)
                    .map_err(|_| rule("hardlink target leaves the archive root"))?
                    .ok_or_else(|| rule("hardlink to the archive root"))?;
                ensure_no_symlink_ancestor(root, &target).map_err(unsafe_entry)?;
                let source_path = root.join(&target);
                if fs::symlink_metadata(&source_path)
                    .map(|m| !m.is_file())
                    .unwrap_or(true)
                {
                    return Err(rule(
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
                return Err(rule("device and FIFO entries are not allowed"));
            }
            // Metadata-only entries (PAX headers, GNU long names) are handled
            // by the tar reader; anything else carries nothing we install.
            _ => {}
        }
    }
    recheck_links(root, &links)?;
    Ok(written)
}

/// Resolves every link extracted (and still a link) against the finished
/// tree: a later entry may have changed what an earlier target leads to.
fn recheck_links(root: &Path, links: &[(String, PathBuf)]) -> Result<(), ArchiveError> {
    for (raw, relative) in links {
        let path = root.join(relative);
        let Ok(target) = fs::read_link(&path) else {
            continue; // replaced by a later entry
        };
        resolve_link(root, relative, &target).map_err(|reason| ArchiveError::Unsafe {
            entry: raw.clone(),
            reason: Refusal::Finished(Box::new(reason)),
        })?;
    }
    Ok(())
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
    let unsafe_entry = |rule: &'static str| ArchiveError::Unsafe {
        entry: raw.to_owned(),
        reason: Refusal::Rule(rule),
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
fn ensure_no_symlink_ancestor(root: &Path, relative: &Path) -> Result<(), Refusal> {
    let mut current = root.to_path_buf();
    let components: Vec<_> = relative.components().collect();
    for component in components.iter().take(components.len().saturating_sub(1)) {
        current.push(component);
        if let Ok(meta) = fs::symlink_metadata(&current)
            && meta.file_type().is_symlink()
        {
            return Err(Refusal::SymlinkParent(
                current.strip_prefix(root).unwrap_or(&current).to_path_buf(),
            ));
        }
    }
    Ok(())
}

/// One step of a path below the root.
enum Step {
    Up,
    Down(OsString),
}

/// The steps of a relative path; `None` if it is absolute.
fn steps(path: &Path) -> Option<Vec<Step>> {
    let mut steps = Vec::new();
    for component in path.components() {
        match component {
            Component::Normal(name) => steps.push(Step::Down(name.to_owned())),
            Component::ParentDir => steps.push(Step::Up),
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(steps)
}

/// Where the symlink at `link` (relative to `root`) with content `target`
/// leads, as a path below the root, following the links on disk now (at
/// most [`MAX_LINK_DEPTH`]). A component that does not exist yet, or is
/// not a directory, is taken as written. Refuses an absolute target
/// (including one reached through another link), any `..` that would climb
/// above the root, and chains longer than the bound.
fn resolve_link(root: &Path, link: &Path, target: &Path) -> Result<PathBuf, Refusal> {
    let mut pending = steps(target).ok_or_else(|| Refusal::AbsoluteTarget(target.to_path_buf()))?;
    let parent = link.parent().unwrap_or(Path::new(""));
    let mut start = steps(parent).ok_or(Refusal::AbsoluteLink)?;
    start.append(&mut pending);
    // A stack, next step last.
    pending = start;
    pending.reverse();
    let mut resolved = PathBuf::new();
    let mut followed = 0;
    while let Some(step) = pending.pop() {
        match step {
            Step::Up => {
                // Everything in `resolved` is a real directory (or missing),
                // never a link, so `..` is its parent, as for the kernel.
                if !resolved.pop() {
                    return Err(Refusal::LeavesRoot(target.to_path_buf()));
                }
            }
            Step::Down(name) => {
                resolved.push(name);
                let here = root.join(&resolved);
                let is_link = fs::symlink_metadata(&here).is_ok_and(|m| m.file_type().is_symlink());
                if !is_link {
                    continue;
                }
                followed += 1;
                if followed > MAX_LINK_DEPTH {
                    return Err(Refusal::TooManyLinks(target.to_path_buf()));
                }
                let next = fs::read_link(&here).map_err(|source| Refusal::ReadLink {
                    link: resolved.clone(),
                    source,
                })?;
                let mut next = steps(&next).ok_or_else(|| Refusal::ThroughAbsolute {
                    target: target.to_path_buf(),
                    via: resolved.clone(),
                    leads_to: next.clone(),
                })?;
                resolved.pop();
                next.reverse();
                pending.append(&mut next);
            }
        }
    }
    Ok(resolved)
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
            reason: Refusal::Rule("a file entry would replace a directory"),
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

    /// One entry of a test archive; raw names so hostile paths survive.
    #[derive(Clone, Debug)]
    pub(super) enum Entry {
        Dir(String),
        File(String, Vec<u8>),
        Symlink(String, String),
        Hardlink(String, String),
    }

    pub(super) fn dir(name: &str) -> Entry {
        Entry::Dir(name.to_owned())
    }
    pub(super) fn file(name: &str, body: &str) -> Entry {
        Entry::File(name.to_owned(), body.as_bytes().to_vec())
    }
    pub(super) fn symlink(name: &str, target: &str) -> Entry {
        Entry::Symlink(name.to_owned(), target.to_owned())
    }
    pub(super) fn hardlink(name: &str, target: &str) -> Entry {
        Entry::Hardlink(name.to_owned(), target.to_owned())
    }

    pub(super) fn tar_gz(entries: &[Entry]) -> Vec<u8> {
        let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
            Vec::new(),
            flate2::Compression::fast(),
        ));
        for entry in entries {
            let mut header = tar::Header::new_gnu();
            let (name, kind, body, link): (&str, EntryType, &[u8], Option<&str>) = match entry {
                Entry::Dir(name) => (name, EntryType::Directory, b"", None),
                Entry::File(name, body) => (name, EntryType::Regular, body, None),
                Entry::Symlink(name, target) => (name, EntryType::Symlink, b"", Some(target)),
                Entry::Hardlink(name, target) => (name, EntryType::Link, b"", Some(target)),
            };
            header.set_entry_type(kind);
            header.set_size(body.len() as u64);
            header.set_mode(0o755);
            let raw = header.as_old_mut();
            raw.name[..name.len()].copy_from_slice(name.as_bytes());
            if let Some(link) = link {
                raw.linkname[..link.len()].copy_from_slice(link.as_bytes());
            }
            header.set_cksum();
            builder.append(&header, body).unwrap();
        }
        builder.into_inner().unwrap().finish().unwrap()
    }

    /// Extracts into `<tempdir>/root`; the tempdir is returned so a test
    /// can look beside the root too.
    pub(super) fn extract(entries: &[Entry]) -> (tempfile::TempDir, Result<u64, ArchiveError>) {
        let outer = tempfile::tempdir().unwrap();
        let root = outer.path().join("root");
        fs::create_dir(&root).unwrap();
        let result = extract_tar_gz(&tar_gz(entries)[..], &root, None, &|| false);
        (outer, result)
    }

    fn refused(entries: &[Entry], expected: &str) {
        let (outer, result) = extract(entries);
        match result {
            Err(ArchiveError::Unsafe { reason, .. }) => {
                assert!(
                    reason.to_string().contains(expected),
                    "{entries:?}: {reason}"
                )
            }
            other => panic!("{entries:?}: expected a refusal, got {other:?}"),
        }
        let beside: Vec<_> = fs::read_dir(outer.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(beside, ["root"], "{entries:?}: wrote beside the root");
    }

    #[test]
    fn good_links_are_kept() {
        let (outer, result) = extract(&[
            dir("lib/"),
            file("lib/libx.so.1", "lib"),
            symlink("lib/libx.so", "libx.so.1"),
            dir("bin/"),
            file("lib/fzn", "fzn"),
            symlink("bin/fzn", "../lib/fzn"),
            symlink("here", "."),
            symlink("via", "here/here/lib/./libx.so"),
            symlink("dangling", "not/yet/there"),
            hardlink("lib/copy", "lib/libx.so.1"),
        ]);
        assert_eq!(result.unwrap(), 8);
        let root = outer.path().join("root");
        assert_eq!(fs::read_to_string(root.join("via")).unwrap(), "lib");
        assert_eq!(fs::read_to_string(root.join("bin/fzn")).unwrap(), "fzn");
        assert_eq!(fs::read_to_string(root.join("lib/copy")).unwrap(), "lib");
    }

    #[test]
    fn symlink_chains_that_leave_are_refused() {
        // Each lexically fine, each out of the root once links are followed.
        refused(
            &[symlink("a", "."), symlink("b", "a/a/../..")],
            "leaves the root",
        );
        refused(
            &[
                dir("sub/"),
                symlink("sub/up", ".."),
                symlink("esc", "sub/up/.."),
            ],
            "leaves the root",
        );
        refused(
            &[
                dir("d/"),
                symlink("d/self", "."),
                symlink("d/esc", "self/self/../.."),
            ],
            "leaves the root",
        );
        // A link to a link: `hop` is fine, `esc` climbs from where it lands.
        refused(
            &[
                dir("x/"),
                dir("x/y/"),
                symlink("hop", "x/y"),
                symlink("x/y/back", "../.."),
                symlink("esc", "hop/back/.."),
            ],
            "leaves the root",
        );
    }

    #[test]
    fn a_later_link_that_changes_an_earlier_one_is_refused() {
        // `b` is harmless while `x` is missing; `x -> .` makes it `../`.
        refused(
            &[symlink("b", "x/x/../.."), symlink("x", ".")],
            "once the whole archive is extracted",
        );
        // The property test's smallest case of the same.
        refused(
            &[symlink("a", "b/.."), symlink("b", ".")],
            "once the whole archive is extracted",
        );
    }

    #[test]
    fn absolute_and_root_escapes_are_refused() {
        refused(&[symlink("etc", "/etc")], "absolute");
        refused(&[symlink("up", "..")], "leaves the root");
        refused(&[symlink("up", "./../root")], "leaves the root");
        refused(&[dir("a/"), symlink("a/up", "../../x")], "leaves the root");
        refused(
            &[symlink("a", "b"), symlink("b", "a")],
            "more than 40 links",
        );
    }

    #[test]
    fn writes_never_go_through_a_link() {
        // A directory made a link after a file was written in it.
        refused(
            &[
                dir("real/"),
                file("real/f", "x"),
                symlink("alias", "real"),
                file("alias/g", "x"),
            ],
            "is a symlink",
        );
        refused(
            &[dir("real/"), symlink("alias", "real"), dir("alias/sub/")],
            "is a symlink",
        );
        // A file entry over a link replaces the link; the target is untouched.
        let (outer, result) = extract(&[file("t", "old"), symlink("l", "t"), file("l", "new")]);
        result.unwrap();
        let root = outer.path().join("root");
        assert_eq!(fs::read_to_string(root.join("t")).unwrap(), "old");
        assert!(fs::symlink_metadata(root.join("l")).unwrap().is_file());
    }

    #[test]
    fn hardlinks_only_to_regular_files_reached_without_links() {
        refused(
            &[file("t", "x"), symlink("l", "t"), hardlink("h", "l")],
            "not a regular file",
        );
        refused(
            &[
                dir("real/"),
                file("real/f", "x"),
                symlink("alias", "real"),
                hardlink("h", "alias/f"),
            ],
            "is a symlink",
        );
        refused(&[hardlink("h", "missing")], "not a regular file");
    }

    #[test]
    fn resolution_follows_links_on_disk() {
        let (outer, result) = extract(&[dir("x/"), dir("x/y/"), symlink("hop", "x/y")]);
        result.unwrap();
        let root = outer.path().join("root");
        let resolve =
            |link: &str, target: &str| resolve_link(&root, Path::new(link), Path::new(target));
        assert_eq!(resolve("l", "hop/..").unwrap(), PathBuf::from("x"));
        assert_eq!(resolve("x/l", "../hop/z").unwrap(), PathBuf::from("x/y/z"));
        assert!(resolve("l", "hop/../..").is_ok());
        assert!(resolve("l", "hop/../../..").is_err());
    }
}

#[cfg(test)]
mod properties {
    use super::tests::{Entry, extract};
    use super::*;
    use proptest::prelude::*;

    /// A path of one to three components (hostile spellings of entry
    /// paths are `accepted_paths_stay_below_the_root`'s business).
    fn name() -> impl Strategy<Value = String> {
        prop::collection::vec(prop::sample::select(vec!["a", "b", "c"]), 1..4)
            .prop_map(|parts| parts.join("/"))
    }

    /// A link target: mostly relative and short, climbing and staying put
    /// as often as descending; now and then absolute.
    fn target() -> impl Strategy<Value = String> {
        let part = prop::sample::select(vec!["a", "b", "c", ".", "..", ".."]);
        let path = (
            prop::bool::weighted(0.05),
            prop::collection::vec(part, 1..5),
        )
            .prop_map(|(absolute, parts)| {
                let joined = parts.join("/");
                if absolute {
                    format!("/{joined}")
                } else {
                    joined
                }
            });
        // Down through a name and back up as many times: lexically where
        // it started, anywhere at all once that name is a link.
        let there_and_back = (
            prop::sample::select(vec!["a", "b", "c"]),
            1..4usize,
            0..2usize,
        )
            .prop_map(|(name, down, extra_up)| {
                let mut parts = vec![name; down];
                parts.extend(std::iter::repeat_n("..", down + extra_up));
                parts.join("/")
            });
        // A link to its own directory is what turns `x/..` into a climb.
        prop_oneof![2 => path, 1 => Just(".".to_owned()), 2 => there_and_back]
    }

    /// `target` without the `..` steps that would, read as plain text,
    /// climb above the root from `link`'s directory: the links a lexical
    /// check accepts, which only resolution against the tree can judge.
    fn lexically_inside(link: &str, target: &str) -> String {
        let mut depth = link.split('/').count() - 1;
        let mut kept = Vec::new();
        for part in target.split('/') {
            match part {
                ".." if depth == 0 => continue,
                ".." => depth -= 1,
                "." | "" => {}
                _ => depth += 1,
            }
            kept.push(part);
        }
        if kept.is_empty() {
            ".".to_owned()
        } else {
            kept.join("/")
        }
    }

    fn entry() -> impl Strategy<Value = Entry> {
        prop_oneof![
            1 => name().prop_map(|name| Entry::Dir(format!("{name}/"))),
            2 => name().prop_map(|name| Entry::File(name, b"x".to_vec())),
            6 => (name(), target(), prop::bool::weighted(0.8))
                .prop_map(|(name, target, tame)| {
                    let target = if tame { lexically_inside(&name, &target) } else { target };
                    Entry::Symlink(name, target)
                }),
            1 => (name(), name()).prop_map(|(name, target)| Entry::Hardlink(name, target)),
            2 => Just(Entry::Dir("a/".to_owned())),
        ]
    }

    /// Every path in the tree under `dir`, without following links.
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            out.push(path.clone());
            if fs::symlink_metadata(&path).is_ok_and(|meta| meta.is_dir()) {
                walk(&path, out);
            }
        }
    }

    proptest! {
        #![proptest_config(crate::strategies::cases(256))]

        /// A path that passes is a plain relative path: it cannot name
        /// anything above the root.
        #[test]
        fn accepted_paths_stay_below_the_root(
            raw in prop_oneof![any::<String>(), "[a-z./]{0,16}", "(\\.\\./|/|\\./|a/)*[a-z]?"],
            prefix in proptest::option::of(prop::sample::select(vec!["top", "a"])),
        ) {
            if let Ok(Some(path)) = relative_path(&raw, prefix) {
                prop_assert!(path.components().all(|c| matches!(c, Component::Normal(_))), "{:?}", path);
                let root = Path::new("/staging/root");
                prop_assert!(root.join(&path).starts_with(root));
            }
        }
    }

    proptest! {
        #![proptest_config(crate::strategies::cases(192))]

        /// Whatever an archive holds, once it is accepted nothing in the
        /// tree resolves, by the kernel's own lookup, to a place outside
        /// the root; accepted or not, nothing is written beside it.
        #[test]
        fn nothing_extracted_leads_out_of_the_root(entries in prop::collection::vec(entry(), 1..10)) {
            let (outer, result) = extract(&entries);
            let beside: Vec<_> = fs::read_dir(outer.path())
                .map(|dir| dir.flatten().map(|entry| entry.file_name()).collect())
                .unwrap_or_default();
            prop_assert_eq!(beside, vec![std::ffi::OsString::from("root")]);
            if result.is_ok() {
                let root = fs::canonicalize(outer.path().join("root")).unwrap_or_default();
                let mut paths = Vec::new();
                walk(&root, &mut paths);
                for path in paths {
                    if let Ok(resolved) = fs::canonicalize(&path) {
                        prop_assert!(resolved.starts_with(&root), "{:?} -> {:?} ({:?})", path, resolved, entries);
                    }
                }
            }
        }

        /// Arbitrary bytes, compressed, give an answer, never a panic.
        #[test]
        fn any_bytes_give_an_answer(bytes in prop::collection::vec(any::<u8>(), 0..4096)) {
            use std::io::Write as _;
            let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            let _ = encoder.write_all(&bytes);
            let gz = encoder.finish().unwrap_or_default();
            let outer = tempfile::tempdir().map_err(|e| TestCaseError::fail(e.to_string()))?;
            let root = outer.path().join("root");
            fs::create_dir(&root).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let _ = extract_tar_gz(&gz[..], &root, None, &|| false);
            let _ = extract_tar_gz(&bytes[..], &root, Some("top"), &|| false);
        }
    }
}
