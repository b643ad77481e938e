//! Installing the CP-SAT runtime: a venv made with a suitable system
//! Python, filled by `pip install --require-hashes` from the manifest's
//! pins, smoke-checked by importing the CP-SAT API.
//!
//! Same safety as the MiniZinc install: built in a staging directory beside
//! the target, renamed into place only when it works, marker-gated
//! replacement. pip is the one that touches the network here, as a child
//! process through the executor.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::{
    InstallError, InstallEvent, RuntimeMarker, ensure_replaceable, save_setting, stage_beside,
    swap_into_place, write_marker,
};
use crate::exec::{self, ChildCommand, Ending, Limits};
use crate::runtime::cpsat::{probe_python, venv_python};
use crate::runtime::manifest::CpsatPins;

/// Interpreters tried, newest first, when none is given.
const CANDIDATES: &[&str] = &[
    "python3.13",
    "python3.12",
    "python3.11",
    "python3.10",
    "python3",
];

/// What a CP-SAT install needs.
#[derive(Debug, Clone)]
pub struct CpsatInstallRequest {
    /// The OR-Tools version and the hash-locked packages to install.
    pub pins: CpsatPins,
    /// The interpreter to build the venv with; `None` searches `PATH`.
    pub base_python: Option<PathBuf>,
    /// The venv directory.
    pub target: PathBuf,
    /// The caller agreed to replace a previous managed venv at `target`.
    pub replace_confirmed: bool,
    /// Where `install.json` is saved with the new `cpsat_python`.
    pub config_dir: PathBuf,
    /// The search path for interpreters (the caller's `PATH`).
    pub search_path: Option<std::ffi::OsString>,
}

/// What a CP-SAT install did.
#[derive(Debug, Clone)]
pub struct CpsatOutcome {
    /// The venv directory.
    pub target: PathBuf,
    /// The venv's interpreter, now in `install.json`.
    pub python: PathBuf,
    /// The interpreter the venv was made from.
    pub base_python: PathBuf,
    /// What the new venv's `ortools.__version__` reports (equal to the pin).
    pub ortools_version: String,
    /// The `install.json` that now points at it.
    pub config_path: PathBuf,
}

/// Builds the venv and records its interpreter in the config.
pub async fn install_cpsat(
    request: &CpsatInstallRequest,
    events: &(dyn Fn(InstallEvent) + Send + Sync),
    cancel: &CancellationToken,
) -> Result<CpsatOutcome, InstallError> {
    let missing = super::MissingParents::of(&request.target);
    let outcome = install_cpsat_into(request, events, cancel).await;
    if outcome.is_err() {
        missing.remove_if_empty();
    }
    outcome
}

async fn install_cpsat_into(
    request: &CpsatInstallRequest,
    events: &(dyn Fn(InstallEvent) + Send + Sync),
    cancel: &CancellationToken,
) -> Result<CpsatOutcome, InstallError> {
    let target = &request.target;
    ensure_replaceable(target, request.replace_confirmed)?;
    let base = find_base_python(request, cancel).await?;
    let staging = stage_beside(target)?;
    let venv = staging.path().join("venv");

    events(InstallEvent::CreatingVenv {
        python: base.display().to_string(),
    });
    let venv_arg = venv.to_string_lossy().into_owned();
    run_step(
        // The installer writes the venv and fetches from PyPI: never sandboxed.
        ChildCommand::new(&base)
            .args(["-m", "venv", &venv_arg])
            .unconfined(),
        Duration::from_secs(300),
        "create the venv",
        cancel,
        None,
    )
    .await?;

    let requirements_text = request.pins.requirements();
    let requirements = staging.path().join("requirements.txt");
    std::fs::write(&requirements, &requirements_text)
        .map_err(|source| InstallError::io("write", &requirements, source))?;
    events(InstallEvent::InstallingPackages {
        count: request.pins.packages.len(),
    });
    let python = venv_python(&venv);
    let requirements_arg = requirements.to_string_lossy().into_owned();
    // pip's own lines ("Collecting ortools==…", "Installing collected
    // packages") reach whoever listens, as they come.
    let forward = |line: &str| {
        let line = line.trim();
        if !line.is_empty() {
            events(InstallEvent::Tool {
                line: line.to_owned(),
            });
        }
    };
    run_step(
        ChildCommand::new(&python)
            .unconfined()
            .args([
                "-m",
                "pip",
                "install",
                "--no-input",
                "--progress-bar",
                "off",
            ])
            .args(["--disable-pip-version-check", "--require-hashes"])
            .args(["--only-binary=:all:", "--no-deps", "-r", &requirements_arg]),
        Duration::from_secs(1200),
        "install the pinned packages (pip refuses any wheel whose hash is not pinned)",
        cancel,
        Some(&forward),
    )
    .await?;

    events(InstallEvent::SmokeCheck);
    let ortools_version = probe_python(&python, cancel).await?;
    if ortools_version != request.pins.ortools {
        return Err(InstallError::SmokeCheck(format!(
            "the venv reports OR-Tools {ortools_version}, the manifest pins {}",
            request.pins.ortools
        )));
    }
    let marker = RuntimeMarker {
        version: ortools_version.clone(),
        source_url: "https://pypi.org (hash-locked pins from runtime-manifest.toml)".to_owned(),
        source_archive: None,
        sha256: crate::sha256_hex(requirements_text.as_bytes()),
        installed_at: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
    };
    write_marker(&venv, &marker)?;
    if cancel.is_cancelled() {
        return Err(InstallError::Cancelled);
    }
    swap_into_place(&venv, target, staging)?;
    let installed_python = venv_python(target);
    let config_path = save_setting(&request.config_dir, |config| {
        config.cpsat_python = Some(installed_python.clone());
    })?;
    Ok(CpsatOutcome {
        target: target.clone(),
        python: installed_python,
        base_python: base,
        ortools_version,
        config_path,
    })
}

/// The given interpreter, or the newest on the search path the pins cover.
async fn find_base_python(
    request: &CpsatInstallRequest,
    cancel: &CancellationToken,
) -> Result<PathBuf, InstallError> {
    let candidates: Vec<PathBuf> = match &request.base_python {
        Some(python) => vec![python.clone()],
        None => request
            .search_path
            .as_ref()
            .map(|path| {
                std::env::split_paths(path)
                    .flat_map(|dir| CANDIDATES.iter().map(move |name| dir.join(name)))
                    .filter(|candidate| crate::runtime::is_executable(candidate))
                    .collect()
            })
            .unwrap_or_default(),
    };
    let mut seen = Vec::new();
    for candidate in candidates {
        let Some(version) = python_version(&candidate, cancel).await else {
            continue;
        };
        if request.pins.supports_python(&version) {
            return Ok(candidate);
        }
        seen.push(format!("{} ({version})", candidate.display()));
    }
    Err(InstallError::NoPython(format!(
        "need CPython {}–{} with the venv module; found {}. Install one, or pass --python PATH",
        request.pins.python_min,
        request.pins.python_max,
        if seen.is_empty() {
            "none".to_owned()
        } else {
            seen.join(", ")
        }
    )))
}

/// `major.minor` of an interpreter that has the venv module.
async fn python_version(python: &Path, cancel: &CancellationToken) -> Option<String> {
    // An installer's probe of a base interpreter, wherever it lives: not
    // sandboxed, as the installer's other steps are not.
    let command = ChildCommand::new(python)
        .args([
            "-c",
            "import sys, venv; print('%d.%d' % sys.version_info[:2])",
        ])
        .unconfined();
    let output = exec::run(&command, Limits::new(Duration::from_secs(30)), cancel)
        .await
        .ok()?;
    (output.return_code == Some(0)).then(|| output.stdout.trim().to_owned())
}

/// Runs one install step; a failure carries the tail of its output.
async fn run_step(
    command: ChildCommand,
    timeout: Duration,
    what: &str,
    cancel: &CancellationToken,
    watcher: Option<exec::LineWatcher<'_>>,
) -> Result<(), InstallError> {
    let never = CancellationToken::new();
    let output = exec::run_stoppable(&command, Limits::new(timeout), cancel, &never, watcher)
        .await
        .map_err(|error| InstallError::Step(format!("could not {what}: {error}")))?;
    match (output.ending, output.return_code) {
        (Ending::Exited, Some(0)) => Ok(()),
        (Ending::Cancelled, _) => Err(InstallError::Cancelled),
        _ => {
            let tail: Vec<&str> = output
                .stderr
                .lines()
                .chain(output.stdout.lines())
                .filter(|line| !line.trim().is_empty())
                .collect();
            let tail = tail[tail.len().saturating_sub(8)..].join("\n");
            let ended = exec::ending_in_words(&output);
            Err(InstallError::Step(format!(
                "could not {what}: {ended}:\n{tail}"
            )))
        }
    }
}
