//! Installing the pinned MiniZinc bundle: download (or a local archive),
//! SHA256 check, safe extraction into a staging directory beside the
//! target, a smoke check of the staged binary, then a rename into place,
//! the `.solvergate-runtime.json` marker and the saved config.
//!
//! What must not break: a failed or interrupted install leaves the previous
//! runtime, the config and the parent directory as they were — the staging
//! directory is a guard that removes itself. The one exception is a swap
//! whose rollback fails too: the previous runtime is then kept in the
//! staging directory, never deleted, and the error says where it is and how
//! to move it back. A non-empty target is replaced
//! only when it carries our marker and the caller confirmed; anything else
//! (a home directory, a checkout) is refused whatever the flags.
//!
//! Prompts and progress bars belong to the CLI: this module reports events
//! and takes decisions as arguments.

mod archive;
pub mod cpsat;
mod download;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

/// For `crate::fuzzing` only.
pub(crate) use archive::extract_tar;
pub use archive::{ArchiveError, Refusal};

use super::catalog::SolverCatalog;
use super::config;
use super::manifest::Bundle;
use crate::exec::{self, ChildCommand, Ending, Limits};

/// The marker file that makes a directory ours to replace.
pub const MARKER_FILE: &str = ".solvergate-runtime.json";

const STAGING_PREFIX: &str = ".solvergate-staging-";

/// What the marker records about an install.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuntimeMarker {
    /// The manifest's MiniZinc version that was installed.
    pub version: String,
    /// The manifest's URL for the bundle (what was verified against).
    pub source_url: String,
    /// The local archive it was installed from, for `--from-archive`.
    #[serde(default)]
    pub source_archive: Option<PathBuf>,
    /// The SHA256 the archive was verified against (the manifest's).
    pub sha256: String,
    /// RFC 3339, UTC.
    pub installed_at: String,
}

/// What is at the install target now.
#[derive(Debug, Clone, PartialEq)]
pub enum TargetState {
    /// Nothing is there.
    Missing,
    /// An empty directory.
    Empty,
    /// A previous install of ours.
    Managed(RuntimeMarker),
    /// Something else: never touched.
    Unmanaged,
}

/// Looks at `target` without changing it.
pub fn target_state(target: &Path) -> TargetState {
    let Ok(meta) = fs::symlink_metadata(target) else {
        return TargetState::Missing;
    };
    if !meta.is_dir() {
        return TargetState::Unmanaged;
    }
    let empty = fs::read_dir(target)
        .map(|mut entries| entries.next().is_none())
        .unwrap_or(false);
    if empty {
        return TargetState::Empty;
    }
    fs::read_to_string(target.join(MARKER_FILE))
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .map_or(TargetState::Unmanaged, TargetState::Managed)
}

/// Refuses a target that is not ours, or ours without confirmation.
fn ensure_replaceable(target: &Path, replace_confirmed: bool) -> Result<(), InstallError> {
    match target_state(target) {
        TargetState::Unmanaged => Err(InstallError::Unmanaged {
            path: target.to_path_buf(),
        }),
        TargetState::Managed(_) if !replace_confirmed => Err(InstallError::NeedsConfirmation {
            path: target.to_path_buf(),
        }),
        _ => Ok(()),
    }
}

/// Where the archive comes from.
#[derive(Debug, Clone)]
pub enum ArchiveSource {
    /// The manifest's URL.
    Download,
    /// A file already on disk (offline machines, mirrors), same checks.
    Local(PathBuf),
}

/// Milestones, for whoever renders progress.
#[derive(Debug, Clone, PartialEq)]
pub enum InstallEvent {
    /// The download of `url` starts.
    Downloading {
        /// The manifest's URL for the bundle.
        url: String,
    },
    /// Bytes of the download so far.
    Progress {
        /// Bytes received.
        done: u64,
        /// The size the server announced; `None` when it did not.
        total: Option<u64>,
    },
    /// A local archive's SHA256 is being checked (a download is checked as it
    /// streams).
    Verifying,
    /// The archive is being unpacked into the staging directory.
    Extracting,
    /// The CP-SAT venv is being created.
    CreatingVenv {
        /// The base interpreter the venv is made from.
        python: String,
    },
    /// pip is installing the pinned packages.
    InstallingPackages {
        /// How many packages are pinned.
        count: usize,
    },
    /// A line a tool the installer runs (pip) printed.
    Tool {
        /// The line, trimmed (never empty).
        line: String,
    },
    /// The staged runtime is being run once to see that it works.
    SmokeCheck,
}

/// Why an install did not happen.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// The download did not arrive: the URL, what broke and its causes,
    /// laid out for a person (see `download::describe`).
    #[error("download failed: {0}")]
    Network(String),
    /// The server answered, but not with the archive.
    #[error("download failed: {url} answered HTTP {status}")]
    HttpStatus {
        /// The manifest's URL for the bundle.
        url: String,
        /// The HTTP status it answered with.
        status: u16,
    },
    /// What arrived is not the archive the manifest pins.
    #[error(
        "SHA256 mismatch: the manifest pins {expected}, the archive is {actual}; nothing was installed"
    )]
    HashMismatch {
        /// The manifest's SHA256.
        expected: String,
        /// The SHA256 of what arrived.
        actual: String,
    },
    /// The archive was refused or could not be unpacked.
    #[error(transparent)]
    Archive(#[from] ArchiveError),
    /// The installed `minizinc` ran but did not answer as a runtime does.
    #[error("the installed runtime does not work: {0}")]
    SmokeCheck(String),
    /// The smoke check's child could not be run.
    #[error("the installed runtime does not work")]
    SmokeRun(#[source] crate::exec::ExecError),
    /// The installed `minizinc` listed no solvers MiniZinc's way.
    #[error("the installed runtime does not work")]
    Catalog(#[from] crate::runtime::catalog::CatalogError),
    /// The new venv's interpreter cannot import CP-SAT.
    #[error("the installed runtime does not work")]
    Probe(#[from] crate::runtime::cpsat::ProbeError),
    /// A file operation of the install failed.
    #[error("could not {what} {path}")]
    Io {
        /// The operation, as a verb (`create`, `write`, `rename`, ...).
        what: &'static str,
        /// The file or directory it was done to.
        path: PathBuf,
        /// Why it failed.
        source: std::io::Error,
    },
    /// The target holds files solvergate did not install; never replaced.
    #[error(
        "{path} is not empty and was not installed by solvergate (no {MARKER_FILE}); refusing to replace it — pick an empty or new directory"
    )]
    Unmanaged {
        /// The target directory.
        path: PathBuf,
    },
    /// The target holds our previous install, and nobody confirmed
    /// replacing it.
    #[error("{path} holds a previous solvergate install; confirm replacing it (--yes)")]
    NeedsConfirmation {
        /// The target directory.
        path: PathBuf,
    },
    /// Neither the new runtime nor the previous one could be moved into
    /// place; the message says where the previous one is kept and how to
    /// restore it.
    #[error(
        "could not move the new runtime into {target}: {install}; moving the previous runtime back failed too: {restore}. The previous runtime is kept, untouched, at {previous} — restore it with `mv '{previous}' '{target}'` (move away anything now at {target} first), then delete {staging}"
    )]
    RestoreFailed {
        /// Where the runtime was to go.
        target: PathBuf,
        /// Where the previous runtime is kept.
        previous: PathBuf,
        /// The staging directory left behind.
        staging: PathBuf,
        /// Why the new runtime could not be moved in.
        install: std::io::Error,
        /// Why the previous runtime could not be moved back.
        restore: std::io::Error,
    },
    /// No interpreter to build the CP-SAT venv with.
    #[error("no suitable Python: {0}")]
    NoPython(String),
    /// A step of the CP-SAT install (venv, pip) failed, in its own words.
    #[error("{0}")]
    Step(String),
    /// Ctrl-C or SIGTERM during the install.
    #[error("install cancelled; nothing was changed")]
    Cancelled,
}

impl InstallError {
    pub(crate) fn io(what: &'static str, path: &Path, source: std::io::Error) -> Self {
        InstallError::Io {
            what,
            path: path.to_path_buf(),
            source,
        }
    }
}

/// What an install request needs: which archive, where, and whether the
/// caller confirmed replacing a previous managed install.
#[derive(Debug, Clone)]
pub struct InstallRequest {
    /// The platform's pinned archive: URL, SHA256, layout.
    pub bundle: Bundle,
    /// The MiniZinc version the manifest pins, recorded in the marker.
    pub version: String,
    /// The runtime root to create or replace.
    pub target: PathBuf,
    /// Download the bundle, or read a local archive.
    pub source: ArchiveSource,
    /// The caller agreed to replace a previous managed install at `target`.
    pub replace_confirmed: bool,
    /// Where `install.json` is saved with the new `runtime_dir`.
    pub config_dir: PathBuf,
}

/// What an install did.
#[derive(Debug, Clone)]
pub struct InstallOutcome {
    /// The installed runtime root.
    pub target: PathBuf,
    /// What was written to its `.solvergate-runtime.json`.
    pub marker: RuntimeMarker,
    /// The first line of the new binary's `--version`.
    pub minizinc_version: String,
    /// How many solvers its `--solvers-json` lists.
    pub solver_count: usize,
    /// The `install.json` that now points at it.
    pub config_path: PathBuf,
}

/// Installs the bundle into `request.target`. A failed install leaves no
/// directory behind that it created, parents included.
pub async fn install_minizinc(
    request: &InstallRequest,
    events: &(dyn Fn(InstallEvent) + Send + Sync),
    cancel: &CancellationToken,
) -> Result<InstallOutcome, InstallError> {
    let missing = MissingParents::of(&request.target);
    let outcome = install_minizinc_into(request, events, cancel).await;
    if outcome.is_err() {
        missing.remove_if_empty();
    }
    outcome
}

/// The ancestors of a target that do not exist yet, deepest first: what an
/// install creates on the way and must take away again if it fails.
pub(crate) struct MissingParents(Vec<PathBuf>);

impl MissingParents {
    pub(crate) fn of(target: &Path) -> MissingParents {
        let mut missing = Vec::new();
        let mut next = target.parent();
        while let Some(dir) = next {
            if dir.as_os_str().is_empty() || dir.exists() {
                break;
            }
            missing.push(dir.to_path_buf());
            next = dir.parent();
        }
        MissingParents(missing)
    }

    /// Removes them, deepest first, as long as each is empty.
    pub(crate) fn remove_if_empty(self) {
        for dir in self.0 {
            if fs::remove_dir(&dir).is_err() {
                break;
            }
        }
    }
}

async fn install_minizinc_into(
    request: &InstallRequest,
    events: &(dyn Fn(InstallEvent) + Send + Sync),
    cancel: &CancellationToken,
) -> Result<InstallOutcome, InstallError> {
    let target = &request.target;
    ensure_replaceable(target, request.replace_confirmed)?;
    let staging = stage_beside(target)?;

    let archive_path = match &request.source {
        ArchiveSource::Download => {
            let path = staging.path().join("bundle.download");
            events(InstallEvent::Downloading {
                url: request.bundle.url.clone(),
            });
            let progress = |done, total| events(InstallEvent::Progress { done, total });
            let actual = download::fetch(&request.bundle.url, &path, &progress, cancel).await?;
            verify(&request.bundle.sha256, &actual)?;
            path
        }
        ArchiveSource::Local(path) => {
            events(InstallEvent::Verifying);
            let hashed = path.clone();
            let actual = tokio::task::spawn_blocking(move || download::hash_file(&hashed))
                .await
                .map_err(|error| InstallError::io("hash", path, std::io::Error::other(error)))??;
            verify(&request.bundle.sha256, &actual)?;
            path.clone()
        }
    };

    events(InstallEvent::Extracting);
    let root = staging.path().join("root");
    fs::create_dir(&root).map_err(|source| InstallError::io("create", &root, source))?;
    extract(
        &archive_path,
        &root,
        request.bundle.strip_prefix.clone(),
        cancel,
    )
    .await?;

    events(InstallEvent::SmokeCheck);
    let (minizinc_version, solver_count) = smoke_check(&root, cancel).await?;

    let marker = RuntimeMarker {
        version: request.version.clone(),
        source_url: request.bundle.url.clone(),
        source_archive: match &request.source {
            ArchiveSource::Local(path) => {
                Some(std::path::absolute(path).unwrap_or_else(|_| path.clone()))
            }
            ArchiveSource::Download => None,
        },
        sha256: request.bundle.sha256.clone(),
        installed_at: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
    };
    write_marker(&root, &marker)?;
    if cancel.is_cancelled() {
        return Err(InstallError::Cancelled);
    }

    swap_into_place(&root, target, staging)?;
    let config_path = save_setting(&request.config_dir, |config| {
        config.runtime_dir = Some(target.clone());
    })?;
    Ok(InstallOutcome {
        target: target.clone(),
        marker,
        minizinc_version,
        solver_count,
        config_path,
    })
}

fn verify(expected: &str, actual: &str) -> Result<(), InstallError> {
    if expected.eq_ignore_ascii_case(actual) {
        Ok(())
    } else {
        Err(InstallError::HashMismatch {
            expected: expected.to_owned(),
            actual: actual.to_owned(),
        })
    }
}

async fn extract(
    archive_path: &Path,
    root: &Path,
    strip_prefix: Option<String>,
    cancel: &CancellationToken,
) -> Result<(), InstallError> {
    let file = fs::File::open(archive_path)
        .map_err(|source| InstallError::io("open", archive_path, source))?;
    let root = root.to_path_buf();
    let token = cancel.clone();
    let extracted = tokio::task::spawn_blocking(move || {
        archive::extract_tar_gz(
            std::io::BufReader::new(file),
            &root,
            strip_prefix.as_deref(),
            &|| token.is_cancelled(),
        )
    })
    .await
    .map_err(|error| InstallError::io("extract", archive_path, std::io::Error::other(error)))?;
    match extracted {
        Err(ArchiveError::Cancelled) => Err(InstallError::Cancelled),
        other => other.map(|_| ()).map_err(InstallError::from),
    }
}

/// Runs the staged `bin/minizinc --version` and `--solvers-json`.
async fn smoke_check(
    root: &Path,
    cancel: &CancellationToken,
) -> Result<(String, usize), InstallError> {
    let binary = super::minizinc_binary(root);
    if !super::is_executable(&binary) {
        return Err(InstallError::SmokeCheck(format!(
            "the archive has no executable bin/minizinc (looked for {})",
            binary.display()
        )));
    }
    let run = |flag: &'static str| {
        let binary = binary.clone();
        async move {
            // The staged tree is not yet a runtime the sandbox knows.
            let command = ChildCommand::new(&binary).arg(flag).readable(root);
            let output = exec::run(&command, Limits::new(Duration::from_secs(60)), cancel)
                .await
                .map_err(InstallError::SmokeRun)?;
            match (output.ending, output.return_code) {
                (Ending::Exited, Some(0)) => Ok(output.stdout),
                (Ending::Cancelled, _) => Err(InstallError::Cancelled),
                _ => Err(InstallError::SmokeCheck(format!(
                    "`minizinc {flag}` failed ({}): {}",
                    crate::exec::ending_in_words(&output),
                    output.stderr.trim()
                ))),
            }
        }
    };
    let version = run("--version").await?;
    let solvers = run("--solvers-json").await?;
    let catalog = SolverCatalog::parse(&solvers)?;
    let version = version.lines().next().unwrap_or_default().trim().to_owned();
    Ok((version, catalog.solvers.len()))
}

/// Moves the staged root (inside `staging`) to `target`; an existing (empty
/// or managed) target goes into the staging dir first and comes back if the
/// move fails. The staging dir, and the previous runtime with it, is removed
/// when this returns — except when the previous runtime cannot come back:
/// then the staging dir is kept and [`InstallError::RestoreFailed`] says
/// where the previous runtime is.
fn swap_into_place(
    root: &Path,
    target: &Path,
    staging: tempfile::TempDir,
) -> Result<(), InstallError> {
    swap_with(root, target, staging, |from, to| fs::rename(from, to))
}

/// [`swap_into_place`] with the rename to use (tests make it fail).
fn swap_with(
    root: &Path,
    target: &Path,
    staging: tempfile::TempDir,
    rename: impl Fn(&Path, &Path) -> std::io::Result<()>,
) -> Result<(), InstallError> {
    let previous = staging.path().join("previous");
    let had_previous = target.exists();
    if had_previous {
        rename(target, &previous)
            .map_err(|source| InstallError::io("move aside", target, source))?;
    }
    if let Err(install) = rename(root, target) {
        if had_previous && let Err(restore) = rename(&previous, target) {
            // Dropping the guard would delete the previous runtime.
            let staging = staging.keep();
            return Err(InstallError::RestoreFailed {
                target: target.to_path_buf(),
                previous: staging.join("previous"),
                staging,
                install,
                restore,
            });
        }
        return Err(InstallError::io("move into place", target, install));
    }
    Ok(())
}

/// A staging directory in the target's parent (same filesystem, so the
/// final move is a rename); it removes itself unless emptied by the move.
fn stage_beside(target: &Path) -> Result<tempfile::TempDir, InstallError> {
    let parent = target.parent().ok_or_else(|| {
        InstallError::io("use", target, std::io::Error::other("no parent directory"))
    })?;
    fs::create_dir_all(parent).map_err(|source| InstallError::io("create", parent, source))?;
    tempfile::Builder::new()
        .prefix(STAGING_PREFIX)
        .tempdir_in(parent)
        .map_err(|source| InstallError::io("create a staging directory in", parent, source))
}

fn write_marker(root: &Path, marker: &RuntimeMarker) -> Result<(), InstallError> {
    let path = root.join(MARKER_FILE);
    let text = serde_json::to_string_pretty(marker)
        .map_err(|error| InstallError::io("encode", &path, std::io::Error::other(error)))?;
    fs::write(&path, text).map_err(|source| InstallError::io("write", &path, source))
}

/// Records a setting in `install.json`, keeping whatever else is there.
fn save_setting(
    config_dir: &Path,
    change: impl FnOnce(&mut config::InstallConfig),
) -> Result<PathBuf, InstallError> {
    config::update(config_dir, change)
        .map_err(|source| InstallError::io("write the config in", config_dir, source))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_states() {
        let scratch = tempfile::tempdir().unwrap();
        let root = scratch.path();
        assert_eq!(target_state(&root.join("new")), TargetState::Missing);
        fs::create_dir(root.join("empty")).unwrap();
        assert_eq!(target_state(&root.join("empty")), TargetState::Empty);
        fs::create_dir(root.join("home")).unwrap();
        fs::write(root.join("home/notes.txt"), "mine").unwrap();
        assert_eq!(target_state(&root.join("home")), TargetState::Unmanaged);
        fs::write(root.join("file"), "x").unwrap();
        assert_eq!(target_state(&root.join("file")), TargetState::Unmanaged);
        fs::create_dir(root.join("ours")).unwrap();
        let marker = RuntimeMarker {
            version: "2.9.7".into(),
            source_url: "https://example.invalid/b.tgz".into(),
            source_archive: None,
            sha256: "00".into(),
            installed_at: "2026-01-01T00:00:00Z".into(),
        };
        fs::write(
            root.join("ours").join(MARKER_FILE),
            serde_json::to_string(&marker).unwrap(),
        )
        .unwrap();
        assert_eq!(
            target_state(&root.join("ours")),
            TargetState::Managed(marker)
        );
    }

    /// A managed runtime at `<parent>/runtime`, a staging dir beside it
    /// holding a new root.
    fn swap_fixture() -> (tempfile::TempDir, PathBuf, tempfile::TempDir, PathBuf) {
        let parent = tempfile::tempdir().unwrap();
        let target = parent.path().join("runtime");
        fs::create_dir(&target).unwrap();
        fs::write(target.join(MARKER_FILE), "previous").unwrap();
        let staging = stage_beside(&target).unwrap();
        let root = staging.path().join("root");
        fs::create_dir(&root).unwrap();
        fs::write(root.join(MARKER_FILE), "new").unwrap();
        (parent, target, staging, root)
    }

    #[test]
    fn a_swap_replaces_the_previous_runtime() {
        let (_parent, target, staging, root) = swap_fixture();
        let staging_dir = staging.path().to_path_buf();
        swap_into_place(&root, &target, staging).unwrap();
        assert_eq!(fs::read_to_string(target.join(MARKER_FILE)).unwrap(), "new");
        assert!(!staging_dir.exists());
    }

    #[test]
    fn a_failed_swap_puts_the_previous_runtime_back() {
        let (_parent, target, staging, root) = swap_fixture();
        let staging_dir = staging.path().to_path_buf();
        let rename = |from: &Path, to: &Path| {
            if from == root {
                Err(std::io::Error::other("no space left"))
            } else {
                fs::rename(from, to)
            }
        };
        let error = swap_with(&root, &target, staging, rename).unwrap_err();
        assert!(matches!(error, InstallError::Io { .. }), "{error}");
        assert_eq!(
            fs::read_to_string(target.join(MARKER_FILE)).unwrap(),
            "previous"
        );
        assert!(!staging_dir.exists());
    }

    #[test]
    fn a_failed_restore_keeps_the_previous_runtime_and_says_where() {
        let (_parent, target, staging, root) = swap_fixture();
        let staging_dir = staging.path().to_path_buf();
        // Moving aside works; moving the new runtime in and the previous one
        // back both fail.
        let rename = |from: &Path, to: &Path| {
            if from == target {
                fs::rename(from, to)
            } else {
                Err(std::io::Error::other("no space left"))
            }
        };
        let error = swap_with(&root, &target, staging, rename).unwrap_err();
        let previous = staging_dir.join("previous");
        assert!(
            matches!(&error, InstallError::RestoreFailed { previous: kept, .. } if *kept == previous),
            "{error}"
        );
        assert_eq!(
            fs::read_to_string(previous.join(MARKER_FILE)).unwrap(),
            "previous",
            "the previous runtime is still there"
        );
        let message = error.to_string();
        let command = format!("`mv '{}' '{}'`", previous.display(), target.display());
        assert!(message.contains(&command), "{message}");
        assert!(message.contains("no space left"), "{message}");
        // Following the advice restores it.
        fs::rename(&previous, &target).unwrap();
        assert_eq!(
            fs::read_to_string(target.join(MARKER_FILE)).unwrap(),
            "previous"
        );
        fs::remove_dir_all(&staging_dir).unwrap();
    }

    #[test]
    fn hashes_compare_without_case() {
        assert!(verify("ABCD", "abcd").is_ok());
        assert!(matches!(
            verify("abcd", "abce"),
            Err(InstallError::HashMismatch { .. })
        ));
    }
}
