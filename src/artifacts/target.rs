//! Where a save may write, and writing there so that a reader — or a crash —
//! only ever sees the old directory or the new one.
//!
//! A target is an absolute path whose parent exists. A new path or an empty
//! directory is written; a non-empty directory is replaced only when it
//! holds our manifest, `overwrite` is set, and it has no file the prior save
//! did not write. Every refusal happens before any solver runs.
//!
//! The new content is written and synced in a hidden staging sibling
//! (`.<name>.solvergate-staging-<pid>-<id>`), then swapped in with one
//! `renameat2(RENAME_EXCHANGE)` (or one `rename` for a new path), so the
//! target path names a whole directory at every instant, SIGKILL included.
//! The old content, now in the staging sibling, is removed afterwards. A
//! journal entry in the data dir names every staging sibling while it
//! exists, so the next start removes any a killed save left behind; a save
//! also removes its target's stale siblings whose process is gone.
//!
//! What a maintainer must not break: nothing is ever written outside the
//! target and its staging sibling, and a foreign file is never removed.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::fs;
use std::io::Write;
use std::path::{Component, Path, PathBuf};

use serde::Serialize;

use crate::diagnostics::{Category, ToolError};

use super::manifest::{ArtifactManifest, MANIFEST_FILE, SavedFile};

const STAGING_MARK: &str = ".solvergate-staging-";

/// What is at the target path now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetState {
    /// Nothing there yet: the save renames its staging dir into place.
    Absent,
    /// An empty directory: the save exchanges its staging dir with it.
    Empty,
    /// A prior save of ours, to be replaced.
    PriorSave,
}

/// A checked save target.
#[derive(Debug, Clone)]
pub struct Target {
    /// Absolute, with its parent's symlinks resolved.
    pub dir: PathBuf,
    /// What was there when it was checked; [`commit`] refuses a target
    /// whose state changed since (bar an empty directory since removed).
    pub state: TargetState,
}

fn refuse(message: String) -> ToolError {
    ToolError::new(Category::InvalidSaveTarget, message)
}

/// Checks `target_dir` as a save target; `overwrite` allows replacing a
/// prior save. Reads only; writes nothing.
pub fn check_target(target_dir: &str, overwrite: bool) -> Result<Target, ToolError> {
    if target_dir.trim().is_empty() {
        return Err(refuse(
            "target_dir must not be empty: pass the absolute path of the directory to save into"
                .to_owned(),
        ));
    }
    let path = Path::new(target_dir);
    if !path.is_absolute() {
        return Err(refuse(format!(
            "target_dir {target_dir:?} is not an absolute path; pass the full path (it is not resolved against the server's working directory)"
        )));
    }
    if path
        .components()
        .any(|part| matches!(part, Component::ParentDir | Component::CurDir))
    {
        return Err(refuse(format!(
            "target_dir {target_dir:?} contains `.` or `..`; pass the path without them"
        )));
    }
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(refuse(format!(
            "target_dir {target_dir:?} names no directory (the root cannot be a save target)"
        )));
    };
    let parent = fs::canonicalize(parent).map_err(|_| {
        refuse(format!(
            "the parent of target_dir, {}, does not exist; create it first (a save creates only the last directory)",
            parent.display()
        ))
    })?;
    if !parent.is_dir() {
        return Err(refuse(format!(
            "the parent of target_dir, {}, is not a directory",
            parent.display()
        )));
    }
    let dir = parent.join(name);
    let state = state_of(&dir, overwrite)?;
    Ok(Target { dir, state })
}

fn state_of(dir: &Path, overwrite: bool) -> Result<TargetState, ToolError> {
    let meta = match fs::symlink_metadata(dir) {
        Ok(meta) => meta,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Ok(TargetState::Absent);
        }
        Err(error) => {
            return Err(refuse(format!(
                "target_dir {} cannot be read: {error}",
                dir.display()
            )));
        }
    };
    if meta.file_type().is_symlink() {
        return Err(refuse(format!(
            "target_dir {} is a symbolic link; name the real directory",
            dir.display()
        )));
    }
    if !meta.is_dir() {
        return Err(refuse(format!(
            "target_dir {} exists and is not a directory",
            dir.display()
        )));
    }
    let entries = entries_of(dir)?;
    if entries.is_empty() {
        return Ok(TargetState::Empty);
    }
    if !entries.contains(MANIFEST_FILE) {
        return Err(refuse(format!(
            "target_dir {} is not empty and holds no {MANIFEST_FILE}: it is not a solvergate artifact, so nothing there will be replaced; pick a new or empty directory",
            dir.display()
        )));
    }
    let manifest = ArtifactManifest::read(dir).map_err(|problem| {
        refuse(format!(
            "target_dir {} has a {MANIFEST_FILE} that cannot be used ({problem}); nothing there will be replaced",
            dir.display()
        ))
    })?;
    let ours: BTreeSet<&str> = manifest
        .files
        .iter()
        .map(|file| file.name.as_str())
        .chain([MANIFEST_FILE])
        .collect();
    let foreign: Vec<&String> = entries
        .iter()
        .filter(|entry| !ours.contains(entry.as_str()))
        .collect();
    if !foreign.is_empty() {
        return Err(refuse(format!(
            "target_dir {} holds files the previous save did not write ({}); move them away first — a save never deletes files it did not write",
            dir.display(),
            foreign
                .iter()
                .map(|name| name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    if !overwrite {
        return Err(refuse(format!(
            "target_dir {} holds a previous solvergate save; pass overwrite: true to replace it",
            dir.display()
        )));
    }
    Ok(TargetState::PriorSave)
}

/// The names in a directory (subdirectories included, as names).
fn entries_of(dir: &Path) -> Result<BTreeSet<String>, ToolError> {
    let read = fs::read_dir(dir)
        .map_err(|error| refuse(format!("cannot list {}: {error}", dir.display())))?;
    let mut names = BTreeSet::new();
    for entry in read {
        let entry =
            entry.map_err(|error| refuse(format!("cannot list {}: {error}", dir.display())))?;
        names.insert(entry.file_name().to_string_lossy().into_owned());
    }
    Ok(names)
}

/// One file of a save: its fixed name and bytes.
pub struct StagedFile {
    /// The bare file name inside the saved directory.
    pub name: String,
    /// The content, written verbatim.
    pub bytes: Vec<u8>,
}

/// The files of one save, collected with their manifest entries.
#[derive(Default)]
pub struct FileSet {
    staged: Vec<StagedFile>,
    files: Vec<SavedFile>,
}

impl FileSet {
    /// A file the save writes: `bytes` under the bare `name`, listed in
    /// the manifest in `role`.
    pub fn add(&mut self, role: &str, name: &str, bytes: Vec<u8>) {
        self.files.push(SavedFile::of(role, name, &bytes));
        self.staged.push(StagedFile {
            name: name.to_owned(),
            bytes,
        });
    }

    /// A file copied into the save from `source` (an include).
    pub fn add_copy(&mut self, name: &str, source: &Path, bytes: Vec<u8>) {
        let mut file = SavedFile::of("include", name, &bytes);
        file.source = Some(source.display().to_string());
        self.files.push(file);
        self.staged.push(StagedFile {
            name: name.to_owned(),
            bytes,
        });
    }

    /// The manifest entries so far.
    pub fn files(&self) -> &[SavedFile] {
        &self.files
    }

    /// Everything to write, the manifest last.
    pub fn with_manifest(mut self, manifest: &ArtifactManifest) -> Vec<StagedFile> {
        self.staged.push(StagedFile {
            name: MANIFEST_FILE.to_owned(),
            bytes: manifest.to_bytes(),
        });
        self.staged
    }
}

/// Writes `files` into the target, wholly replacing what was there.
/// `journal` is the directory of in-progress saves. The target's state is
/// checked again just before the swap: a directory that changed since
/// [`check_target`] is refused, not overwritten.
pub fn commit(
    target: &Target,
    files: &[StagedFile],
    overwrite: bool,
    journal: &Path,
    pause_before_swap: Option<std::time::Duration>,
) -> Result<(), ToolError> {
    let (parent, name) = split(&target.dir)?;
    remove_stale_siblings(&parent, &name);
    let staging = parent.join(format!(
        ".{}{STAGING_MARK}{}-{}",
        name.to_string_lossy(),
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ));
    let entry = Journal::open(journal, &staging)?;
    let outcome = stage_and_swap(target, files, overwrite, &staging, pause_before_swap);
    // The staging path holds the new content on failure or the old content
    // after an exchange; either way it goes now.
    let _ = fs::remove_dir_all(&staging);
    entry.close();
    outcome
}

fn stage_and_swap(
    target: &Target,
    files: &[StagedFile],
    overwrite: bool,
    staging: &Path,
    pause_before_swap: Option<std::time::Duration>,
) -> Result<(), ToolError> {
    let io = |what: &str, path: &Path, error: std::io::Error| {
        ToolError::new(
            Category::InvalidSaveTarget,
            format!("could not {what} {}: {error}", path.display()),
        )
    };
    fs::create_dir(staging).map_err(|error| io("create", staging, error))?;
    for file in files {
        let path = staging.join(&file.name);
        let mut out = fs::File::create(&path).map_err(|error| io("create", &path, error))?;
        out.write_all(&file.bytes)
            .and_then(|()| out.sync_all())
            .map_err(|error| io("write", &path, error))?;
    }
    sync_dir(staging);
    if let Some(pause) = pause_before_swap {
        std::thread::sleep(pause);
    }
    // The directory may have changed while the solver ran.
    let now = state_of(&target.dir, overwrite)?;
    if now != target.state && !(target.state == TargetState::Empty && now == TargetState::Absent) {
        return Err(refuse(format!(
            "target_dir {} changed while the save was verifying; nothing was written — call again",
            target.dir.display()
        )));
    }
    match now {
        TargetState::Absent => fs::rename(staging, &target.dir)
            .map_err(|error| io("move the new save into", &target.dir, error))?,
        TargetState::Empty | TargetState::PriorSave => exchange(staging, &target.dir)
            .map_err(|error| io("swap the new save into", &target.dir, error))?,
    }
    if let Some(parent) = target.dir.parent() {
        sync_dir(parent);
    }
    Ok(())
}

/// Swaps two directories atomically.
fn exchange(a: &Path, b: &Path) -> std::io::Result<()> {
    use nix::fcntl::{AT_FDCWD, RenameFlags, renameat2};
    renameat2(AT_FDCWD, a, AT_FDCWD, b, RenameFlags::RENAME_EXCHANGE)
        .map_err(|errno| std::io::Error::from_raw_os_error(errno as i32))
}

fn sync_dir(dir: &Path) {
    if let Ok(handle) = fs::File::open(dir) {
        let _ = handle.sync_all();
    }
}

fn split(dir: &Path) -> Result<(PathBuf, OsString), ToolError> {
    match (dir.parent(), dir.file_name()) {
        (Some(parent), Some(name)) => Ok((parent.to_path_buf(), name.to_os_string())),
        _ => Err(refuse(format!("{} names no directory", dir.display()))),
    }
}

/// Removes staging siblings of `name` left by a process that is gone.
fn remove_stale_siblings(parent: &Path, name: &OsString) {
    let prefix = format!(".{}{STAGING_MARK}", name.to_string_lossy());
    let Ok(entries) = fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let file_name = entry.file_name().to_string_lossy().into_owned();
        if let Some(rest) = file_name.strip_prefix(&prefix)
            && owner_is_gone(rest)
        {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

/// `rest` is `<pid>-<id>`: true when no process has that pid.
fn owner_is_gone(rest: &str) -> bool {
    let Some(pid) = rest
        .split('-')
        .next()
        .and_then(|pid| pid.parse::<i32>().ok())
    else {
        return false;
    };
    pid != std::process::id() as i32 && !Path::new(&format!("/proc/{pid}")).exists()
}

/// Removes staging dirs recorded by saves whose process is gone (killed
/// mid-save). Called once at start.
pub fn recover_interrupted(journal: &Path) -> usize {
    let Ok(entries) = fs::read_dir(journal) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let file_name = entry.file_name().to_string_lossy().into_owned();
        let Some(rest) = file_name.strip_suffix(".staging") else {
            continue;
        };
        if !owner_is_gone(rest) {
            continue;
        }
        if let Ok(text) = fs::read_to_string(entry.path()) {
            let staging = PathBuf::from(text.trim());
            let ours = staging
                .file_name()
                .is_some_and(|name| name.to_string_lossy().contains(STAGING_MARK));
            if ours && staging.is_absolute() && fs::remove_dir_all(&staging).is_ok() {
                removed += 1;
            }
        }
        let _ = fs::remove_file(entry.path());
    }
    removed
}

/// The journal entry naming one staging dir while it exists.
struct Journal {
    path: Option<PathBuf>,
}

impl Journal {
    fn open(journal: &Path, staging: &Path) -> Result<Journal, ToolError> {
        let id = staging
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .and_then(|name| {
                name.split(STAGING_MARK)
                    .nth(1)
                    .map(|rest| format!("{rest}.staging"))
            })
            .ok_or_else(|| refuse("internal: malformed staging name".to_owned()))?;
        fs::create_dir_all(journal).map_err(|error| {
            refuse(format!(
                "could not create the save journal {}: {error}",
                journal.display()
            ))
        })?;
        let path = journal.join(id);
        fs::write(&path, staging.to_string_lossy().as_bytes()).map_err(|error| {
            refuse(format!(
                "could not write the save journal {}: {error}",
                path.display()
            ))
        })?;
        Ok(Journal { path: Some(path) })
    }

    fn close(mut self) {
        if let Some(path) = self.path.take() {
            let _ = fs::remove_file(path);
        }
    }
}

/// A result as a saved JSON file: pretty-printed, with a final newline.
pub(crate) fn pretty<T: Serialize>(value: &T) -> Result<Vec<u8>, ToolError> {
    let mut text = serde_json::to_string_pretty(value).map_err(|error| {
        ToolError::new(
            Category::Unknown,
            format!("could not encode a result: {error}"),
        )
    })?;
    text.push('\n');
    Ok(text.into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(text: &str) -> Vec<StagedFile> {
        vec![StagedFile {
            name: "model.mzn".to_owned(),
            bytes: text.as_bytes().to_vec(),
        }]
    }

    fn manifest_for(names: &[&str]) -> String {
        let files: Vec<_> = names
            .iter()
            .map(|name| serde_json::json!({"role": "model", "name": name, "sha256": "00", "bytes": 0}))
            .collect();
        serde_json::json!({
            "format": "solvergate-artifact",
            "format_version": 1,
            "tool_version": "0.1.0",
            "saved_at": "2026-01-01T00:00:00Z",
            "backend": "minizinc",
            "runtime_version": null,
            "minizinc": null,
            "cpsat": null,
            "verification": {"status": "satisfied", "objective": null, "checker_status": null, "level": "solved"},
            "experiment": null,
            "files": files,
        })
        .to_string()
    }

    #[test]
    fn paths_are_checked_before_anything_is_written() {
        let root = tempfile::tempdir().unwrap();
        let root_text = root.path().to_string_lossy().into_owned();
        for (path, fragment) in [
            ("relative/dir".to_owned(), "not an absolute path"),
            (format!("{root_text}/missing/dir"), "does not exist"),
            (format!("{root_text}/a/../b"), "`..`"),
            ("/".to_owned(), "names no directory"),
            ("  ".to_owned(), "must not be empty"),
        ] {
            let error = check_target(&path, true).unwrap_err();
            assert_eq!(error.0.category, Category::InvalidSaveTarget, "{path}");
            assert!(error.0.message.contains(fragment), "{path}: {error}");
        }
        assert_eq!(fs::read_dir(root.path()).unwrap().count(), 0);
    }

    #[test]
    fn foreign_and_unmarked_directories_are_refused() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("project");
        fs::create_dir(&dir).unwrap();
        fs::write(dir.join("notes.txt"), "mine").unwrap();
        let error = check_target(dir.to_str().unwrap(), true).unwrap_err();
        assert!(
            error.0.message.contains("not a solvergate artifact"),
            "{error}"
        );

        fs::write(dir.join(MANIFEST_FILE), "{not json").unwrap();
        let error = check_target(dir.to_str().unwrap(), true).unwrap_err();
        assert!(error.0.message.contains("cannot be used"), "{error}");

        fs::write(dir.join(MANIFEST_FILE), manifest_for(&["model.mzn"])).unwrap();
        fs::write(dir.join("model.mzn"), "solve satisfy;").unwrap();
        let error = check_target(dir.to_str().unwrap(), true).unwrap_err();
        assert!(error.0.message.contains("notes.txt"), "{error}");

        fs::remove_file(dir.join("notes.txt")).unwrap();
        let error = check_target(dir.to_str().unwrap(), false).unwrap_err();
        assert!(error.0.message.contains("overwrite: true"), "{error}");
        let target = check_target(dir.to_str().unwrap(), true).unwrap();
        assert_eq!(target.state, TargetState::PriorSave);
    }

    #[test]
    fn a_commit_replaces_the_whole_directory_and_leaves_no_sibling() {
        let root = tempfile::tempdir().unwrap();
        let journal = root.path().join("journal");
        let dir = root.path().join("saved");
        let target = check_target(dir.to_str().unwrap(), false).unwrap();
        assert_eq!(target.state, TargetState::Absent);
        let mut first = files("first");
        first.push(StagedFile {
            name: MANIFEST_FILE.to_owned(),
            bytes: manifest_for(&["model.mzn", "data.dzn"]).into_bytes(),
        });
        first.push(StagedFile {
            name: "data.dzn".to_owned(),
            bytes: b"n = 1;".to_vec(),
        });
        commit(&target, &first, false, &journal, None).unwrap();
        assert_eq!(fs::read_to_string(dir.join("model.mzn")).unwrap(), "first");

        let target = check_target(dir.to_str().unwrap(), true).unwrap();
        let mut second = files("second");
        second.push(StagedFile {
            name: MANIFEST_FILE.to_owned(),
            bytes: manifest_for(&["model.mzn"]).into_bytes(),
        });
        commit(&target, &second, true, &journal, None).unwrap();
        assert_eq!(fs::read_to_string(dir.join("model.mzn")).unwrap(), "second");
        assert!(!dir.join("data.dzn").exists(), "a stale file survived");
        let names: Vec<_> = fs::read_dir(root.path())
            .unwrap()
            .flatten()
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
        assert_eq!(fs::read_dir(&journal).unwrap().count(), 0);
    }

    #[test]
    fn stale_staging_dirs_of_dead_processes_are_removed() {
        let root = tempfile::tempdir().unwrap();
        let journal = root.path().join("journal");
        fs::create_dir(&journal).unwrap();
        // A pid far above pid_max cannot be alive.
        let stale = root.path().join(".saved.solvergate-staging-99999999-abc");
        fs::create_dir(&stale).unwrap();
        fs::write(stale.join("model.mzn"), "half").unwrap();
        fs::write(
            journal.join("99999999-abc.staging"),
            stale.to_string_lossy().as_bytes(),
        )
        .unwrap();
        let live = root.path().join(format!(
            ".saved.solvergate-staging-{}-def",
            std::process::id()
        ));
        fs::create_dir(&live).unwrap();
        assert_eq!(recover_interrupted(&journal), 1);
        assert!(!stale.exists());
        assert!(live.exists(), "a live process's staging dir was removed");
        assert_eq!(fs::read_dir(&journal).unwrap().count(), 0);
    }
}
