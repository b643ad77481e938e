//! Where the MiniZinc runtime lives and what it offers.
//!
//! The runtime root is resolved in one order — `--runtime-dir` flag, then
//! `SOLVERGATE_RUNTIME_DIR`, then the persisted `install.json`, then the
//! per-user data dir — and the binary is always `<root>/bin/minizinc`.
//! A `minizinc` that happens to be on `PATH` is never used.
//!
//! [`Runtime`] also asks the binary for its version and solver catalog (both
//! through [`crate::exec`]) and keeps the catalog for the life of the process.

pub mod cache;
pub mod catalog;
pub mod config;
pub mod cpsat;
pub mod defects;
pub mod install;
pub mod manifest;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::sync::OnceCell;
use tokio_util::sync::CancellationToken;

use crate::diagnostics::{Category, ToolError};
use crate::exec::{self, ChildCommand, Ending, Limits};
use crate::settings::Settings;
pub use catalog::{SolverCapabilities, SolverCatalog, SolverInfo, SolverList};

/// How long the quick introspection calls (`--version`, `--solvers-json`)
/// may take.
const INTROSPECTION_TIMEOUT: Duration = Duration::from_secs(30);

/// The command a user runs to get a runtime.
pub const INSTALL_HINT: &str = "run `solvergate install-runtime`, or adopt an existing MiniZinc with `solvergate configure-runtime --runtime-dir <dir>` (the directory holding bin/minizinc)";

/// Per-user directories: data (runtimes) and config (`install.json`).
#[derive(Debug, Clone)]
pub struct UserDirs {
    /// Where managed runtimes are installed (`minizinc/`, `cpsat/` inside it).
    pub data_dir: PathBuf,
    /// Where `install.json` is kept.
    pub config_dir: PathBuf,
}

impl UserDirs {
    /// The platform's per-user dirs for solvergate.
    pub fn discover() -> Option<UserDirs> {
        let dirs = directories::ProjectDirs::from("", "", "solvergate")?;
        Some(UserDirs {
            data_dir: dirs.data_dir().to_path_buf(),
            config_dir: dirs.config_dir().to_path_buf(),
        })
    }

    /// Where a managed MiniZinc runtime goes by default.
    pub fn default_runtime_dir(&self) -> PathBuf {
        self.data_dir.join("minizinc")
    }
}

/// Which rule chose the runtime root.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LocationSource {
    /// A command-line flag (`--runtime-dir`, `--python`).
    Flag,
    /// An environment variable (`SOLVERGATE_RUNTIME_DIR`,
    /// `SOLVERGATE_CPSAT_PYTHON`).
    Env,
    /// The saved `install.json`.
    Config,
    /// The default place in the per-user data dir.
    Default,
    /// The Python environment this solvergate was installed into (`uv tool
    /// install`, `uvx`, `pip install`), which can import OR-Tools.
    ToolEnvironment,
}

impl LocationSource {
    /// Which rule chose the CP-SAT interpreter, in words.
    pub fn describe_python(self) -> &'static str {
        match self {
            LocationSource::Flag => "from --python",
            LocationSource::Env => "from SOLVERGATE_CPSAT_PYTHON",
            LocationSource::Config => "from install.json",
            LocationSource::Default => "default location",
            LocationSource::ToolEnvironment => "from the solvergate tool's environment",
        }
    }

    /// Which rule chose the MiniZinc runtime root, in words.
    pub fn describe(self) -> &'static str {
        match self {
            LocationSource::Flag => "from --runtime-dir",
            LocationSource::Env => "from SOLVERGATE_RUNTIME_DIR",
            LocationSource::Config => "from install.json",
            LocationSource::Default => "default location",
            // Never chosen for MiniZinc: no Python package carries it.
            LocationSource::ToolEnvironment => "from the solvergate tool's environment",
        }
    }
}

/// A resolved runtime root and why it was chosen.
#[derive(Debug, Clone)]
pub struct RuntimeLocation {
    /// The runtime root, made absolute: the directory holding `bin/minizinc`.
    pub dir: PathBuf,
    /// Which rule chose `dir`.
    pub source: LocationSource,
}

/// Resolves the runtime root. Returns a warning to print when the persisted
/// config exists but cannot be used.
pub fn resolve_location(
    flag: Option<&Path>,
    settings: &Settings,
    dirs: &UserDirs,
) -> (RuntimeLocation, Option<String>) {
    if let Some(dir) = flag {
        return (located(dir, LocationSource::Flag), None);
    }
    if let Some(dir) = &settings.runtime_dir {
        return (located(dir, LocationSource::Env), None);
    }
    let mut warning = None;
    match config::read(&dirs.config_dir) {
        config::ConfigRead::Found(config::InstallConfig {
            runtime_dir: Some(dir),
            ..
        }) => return (located(&dir, LocationSource::Config), None),
        config::ConfigRead::Found(_) | config::ConfigRead::Missing => {}
        config::ConfigRead::Corrupt(message) => {
            warning = Some(format!(
                "{message}; falling back to the default runtime location"
            ));
        }
    }
    (
        located(&dirs.default_runtime_dir(), LocationSource::Default),
        warning,
    )
}

fn located(dir: &Path, source: LocationSource) -> RuntimeLocation {
    let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    RuntimeLocation { dir, source }
}

/// The binary inside a runtime root.
pub fn minizinc_binary(root: &Path) -> PathBuf {
    root.join("bin").join("minizinc")
}

/// True when `path` is a regular file we may execute.
pub fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

/// What `check_runtime` reports.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RuntimeStatus {
    /// `bin/minizinc` exists and is executable.
    pub installed: bool,
    /// The resolved runtime root.
    pub runtime_dir: String,
    /// Full path of the MiniZinc binary, when installed.
    pub minizinc_binary: Option<String>,
    /// Which rule chose `runtime_dir`.
    pub source: LocationSource,
    /// First line of `minizinc --version`, when it ran.
    pub minizinc_version: Option<String>,
    /// How many solvers `--solvers-json` lists, when it ran.
    pub solver_count: Option<usize>,
    /// Known defects of this MiniZinc runtime that a probe found, each with
    /// what to do about it (empty when none was found).
    pub warnings: Vec<String>,
    /// The CP-SAT (Python + OR-Tools) runtime.
    pub cpsat: cpsat::CpsatStatus,
    /// The limits every run is held to and how this host enforces each.
    pub limits: Option<exec::limits::Enforcement>,
    /// The sandbox: what the start-up probe found it can enforce here, or
    /// why it is off.
    pub sandbox: String,
    /// Directories the operator lets sandboxed runs read besides their
    /// runtime, the system's files, their scratch dir and what a call
    /// names (`--allow-read`, `SOLVERGATE_READ_ROOTS`).
    pub read_roots: Vec<String>,
    /// The server's variables every run sees, by name; nothing else of its
    /// environment reaches a run.
    pub passed_variables: Vec<String>,
    /// Which of the server's variables pass to runs, as a rule.
    pub environment: String,
}

impl RuntimeStatus {
    /// What sandboxed runs may read, in words, when the boundary is on.
    pub fn reads_in_words(&self) -> Option<String> {
        self.sandbox.contains("reads enforced").then(|| {
            format!(
                "runs read only their runtime, the system's files, their scratch dir, what a call names{}",
                match self.read_roots.as_slice() {
                    [] => " (--allow-read DIR or SOLVERGATE_READ_ROOTS widen it)".to_owned(),
                    roots => format!(" and beneath {}", roots.join(", ")),
                }
            )
        })
    }
}

/// Both runtimes' status, probed concurrently.
pub async fn status(
    minizinc: &Runtime,
    cpsat: &cpsat::CpsatRuntime,
    cancel: &CancellationToken,
) -> RuntimeStatus {
    let (minizinc_facts, cpsat) = tokio::join!(
        async {
            if !minizinc.is_installed() {
                return (None, None, Vec::new());
            }
            let (version, catalog, defects) = tokio::join!(
                minizinc.version(cancel),
                minizinc.catalog(cancel),
                minizinc.defects(cancel)
            );
            let solvers = catalog.ok().map(|catalog| catalog.solvers.len());
            (version.ok(), solvers, defects)
        },
        cpsat.status(cancel)
    );
    let (minizinc_version, solver_count, warnings) = minizinc_facts;
    let installed = minizinc.is_installed();
    RuntimeStatus {
        installed,
        runtime_dir: minizinc.location.dir.display().to_string(),
        minizinc_binary: installed.then(|| minizinc.binary().display().to_string()),
        source: minizinc.location.source,
        minizinc_version,
        solver_count,
        warnings,
        cpsat,
        limits: exec::limits::enforcement(),
        sandbox: exec::sandbox::state_in_words(),
        read_roots: exec::reads::operator_roots()
            .iter()
            .map(|root| root.display().to_string())
            .collect(),
        passed_variables: exec::passed_variable_names(),
        environment: exec::environment_in_words(),
    }
}

/// How long one solver's availability probe may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(15);

/// A resolved MiniZinc runtime, shared by every request of a process.
#[derive(Debug)]
pub struct Runtime {
    location: RuntimeLocation,
    /// `--solvers-json`, until the binary changes.
    catalog: cache::Cached<SolverCatalog>,
    /// First line of `--version`, until the binary changes.
    version: cache::Cached<String>,
    /// Whether `minizinc --help` lists `--solution-checker` (2.9 does, 2.6
    /// does not), asked once.
    checker_flag: OnceCell<bool>,
    /// Solver id → why it cannot run (absent: it can), probed once.
    unavailable: OnceCell<std::collections::BTreeMap<String, String>>,
    /// The known defects ([`defects`]) this runtime shows, probed once.
    defects: OnceCell<Vec<String>>,
    /// Its tree (and what it declares it reads) was handed to the sandbox's
    /// read boundary.
    readable: std::sync::OnceLock<()>,
}

/// The file in a runtime dir that names, one absolute path a line, what
/// else its `bin/minizinc` reads (a wrapper's root, say); `#` starts a
/// comment.
pub const READ_ROOTS_FILE: &str = "solvergate-read-roots";

impl Runtime {
    /// A runtime at `location`; nothing is run until a catalog or version is
    /// asked for.
    pub fn new(location: RuntimeLocation) -> Self {
        Runtime {
            location,
            readable: std::sync::OnceLock::new(),
            catalog: cache::Cached::default(),
            version: cache::Cached::default(),
            checker_flag: OnceCell::new(),
            unavailable: OnceCell::new(),
            defects: OnceCell::new(),
        }
    }

    /// Where the runtime is and why.
    pub fn location(&self) -> &RuntimeLocation {
        &self.location
    }

    /// The path of `bin/minizinc` under the root, whether or not it exists.
    pub fn binary(&self) -> PathBuf {
        minizinc_binary(&self.location.dir)
    }

    /// What MiniZinc and its solvers read, besides the system's files: the
    /// runtime dir (as named and resolved), the tree its binary resolves
    /// into, what the runtime declares in [`READ_ROOTS_FILE`], and the
    /// user's MiniZinc configuration (`~/.minizinc`).
    fn read_roots(&self, binary: &Path) -> Vec<PathBuf> {
        let dir = &self.location.dir;
        let mut roots = vec![dir.clone()];
        roots.extend(dir.canonicalize());
        roots.extend(
            binary
                .canonicalize()
                .ok()
                .and_then(|real| Some(real.parent()?.parent()?.to_path_buf())),
        );
        if let Ok(text) = std::fs::read_to_string(dir.join(READ_ROOTS_FILE)) {
            roots.extend(
                text.lines()
                    .map(str::trim)
                    .filter(|line| !line.is_empty() && !line.starts_with('#'))
                    .map(PathBuf::from),
            );
        }
        if let Some(home) = directories::BaseDirs::new() {
            roots.push(home.home_dir().join(".minizinc"));
        }
        // Where the server's environment tells MiniZinc to look for solver
        // configurations and its library (both variables pass to runs).
        roots.extend(crate::settings::minizinc_search_dirs());
        // Never the file system's root, the home dir or the temp dir whole,
        // whatever a runtime says.
        roots.retain(|root| exec::reads::may_read_whole(root));
        roots
    }

    /// Whether `bin/minizinc` is an executable file.
    pub fn is_installed(&self) -> bool {
        is_executable(&self.binary())
    }

    /// The binary, or a `runtime_missing` error that says how to get one.
    pub fn require_binary(&self) -> Result<PathBuf, ToolError> {
        let binary = self.binary();
        if is_executable(&binary) {
            self.readable
                .get_or_init(|| exec::reads::allow(self.read_roots(&binary)));
            Ok(binary)
        } else {
            Err(ToolError::new(
                Category::RuntimeMissing,
                format!(
                    "no MiniZinc runtime at {} ({}): expected an executable {}; {INSTALL_HINT}",
                    self.location.dir.display(),
                    self.location.source.describe(),
                    binary.display()
                ),
            ))
        }
    }

    /// The first line of `minizinc --version`, asked once per binary.
    pub async fn version(&self, cancel: &CancellationToken) -> Result<String, ToolError> {
        let version = self
            .version
            .get_or_try_init(&self.binary(), async || {
                let output = self.introspect("--version", cancel).await?;
                Ok::<_, ToolError>(
                    output
                        .lines()
                        .find(|line| !line.trim().is_empty())
                        .unwrap_or_default()
                        .trim()
                        .to_owned(),
                )
            })
            .await?;
        Ok(version.as_ref().clone())
    }

    /// The solver catalog, loaded once per binary and kept.
    pub async fn catalog(
        &self,
        cancel: &CancellationToken,
    ) -> Result<Arc<SolverCatalog>, ToolError> {
        self.catalog
            .get_or_try_init(&self.binary(), async || {
                let json = self.introspect("--solvers-json", cancel).await?;
                exec::reads::allow(catalog::solver_read_roots(&json));
                SolverCatalog::parse(&json).map_err(|problem| {
                    ToolError::new(
                        Category::SolverUnavailable,
                        format!(
                            "{}: {}",
                            self.binary().display(),
                            crate::diagnostics::with_causes(&problem)
                        ),
                    )
                })
            })
            .await
    }

    /// The solver list with each solver's availability: every listed
    /// solver solves a one-variable model once per process (concurrently,
    /// about a tenth of a second each); one that fails is marked
    /// unavailable with the runtime's reason.
    pub async fn solver_list(&self, cancel: &CancellationToken) -> Result<SolverList, ToolError> {
        let catalog = self.catalog(cancel).await?;
        let unavailable = self
            .unavailable
            .get_or_try_init(|| self.probe_solvers(&catalog, cancel))
            .await?;
        let mut list = SolverList::from_catalog(&catalog);
        for solver in &mut list.solvers {
            if let Some(reason) = unavailable.get(&solver.id) {
                solver.available = false;
                solver.unavailable_reason = Some(reason.clone());
            }
        }
        Ok(list)
    }

    async fn probe_solvers(
        &self,
        catalog: &SolverCatalog,
        cancel: &CancellationToken,
    ) -> Result<std::collections::BTreeMap<String, String>, ToolError> {
        let binary = self.require_binary()?;
        let dir = crate::exec::scratch_dir("solvergate-probe-")?;
        let model = dir.path().join("probe.mzn");
        std::fs::write(&model, "var 0..1: x;\nsolve satisfy;\n").map_err(|error| {
            ToolError::invalid(format!("could not write {}: {error}", model.display()))
        })?;
        let probes = catalog.solvers.iter().map(|solver| {
            let command = ChildCommand::new(&binary)
                .args(["--solver", &solver.id])
                .arg(&model)
                .cwd(dir.path())
                .reads_dir(dir.path());
            async move {
                let output = exec::run(&command, Limits::new(PROBE_TIMEOUT), cancel).await;
                let reason = match output {
                    Ok(run) if run.return_code == Some(0) && run.stdout.contains("----------") => {
                        None
                    }
                    Ok(run) if run.timed_out() => Some(format!(
                        "a one-variable probe did not finish in {} s",
                        PROBE_TIMEOUT.as_secs()
                    )),
                    Ok(run) => Some(
                        run.stderr
                            .lines()
                            .chain(run.stdout.lines())
                            .map(str::trim)
                            .find(|line| line.contains("rror") || line.contains("plugin"))
                            .map(|line| {
                                line.trim_start_matches("Error: ")
                                    .trim_start_matches("error: ")
                            })
                            .unwrap_or("the one-variable probe found no solution")
                            .to_owned(),
                    ),
                    Err(error) => Some(error.to_string()),
                };
                (solver.id.clone(), reason)
            }
        });
        let results = futures_util::future::join_all(probes).await;
        if cancel.is_cancelled() {
            return Err(ToolError::new(Category::Cancelled, "request cancelled"));
        }
        Ok(results
            .into_iter()
            .filter_map(|(id, reason)| reason.map(|reason| (id, reason)))
            .collect())
    }

    /// What is known to be broken in this runtime, in words a person acts
    /// on (empty when nothing is): its default solver compiles a model that
    /// includes `globals.mzn` once per process, and the output is read for
    /// the signatures of [`defects`]. A probe that cannot run finds nothing;
    /// the version and catalog say why the runtime does not work.
    pub async fn defects(&self, cancel: &CancellationToken) -> Vec<String> {
        self.defects
            .get_or_init(|| async {
                let Ok(binary) = self.require_binary() else {
                    return Vec::new();
                };
                let Ok(dir) = crate::exec::scratch_dir("solvergate-probe-") else {
                    return Vec::new();
                };
                let model = dir.path().join("globals.mzn.probe.mzn");
                if std::fs::write(&model, defects::GLOBALS_PROBE_MODEL).is_err() {
                    return Vec::new();
                }
                let command = ChildCommand::new(&binary)
                    .args(["-c", "--fzn", "/dev/null", "--no-output-ozn"])
                    .arg(&model)
                    .cwd(dir.path())
                    .reads_dir(dir.path());
                match exec::run(&command, Limits::new(PROBE_TIMEOUT), cancel).await {
                    Ok(run) if defects::stderr_shows_broken_globals(&run.stderr) => {
                        vec![defects::BROKEN_GLOBALS_ADVICE.to_owned()]
                    }
                    _ => Vec::new(),
                }
            })
            .await
            .clone()
    }

    /// Whether this MiniZinc takes a checker with `--solution-checker`
    /// (otherwise a positional `*.mzc.mzn` is the way); asked once.
    pub async fn has_solution_checker_flag(
        &self,
        cancel: &CancellationToken,
    ) -> Result<bool, ToolError> {
        self.checker_flag
            .get_or_try_init(|| async {
                let help = self.introspect("--help", cancel).await?;
                Ok(help.contains("--solution-checker"))
            })
            .await
            .copied()
    }

    /// Runs the binary with one introspection flag and returns its stdout.
    async fn introspect(
        &self,
        flag: &str,
        cancel: &CancellationToken,
    ) -> Result<String, ToolError> {
        let binary = self.require_binary()?;
        let command = ChildCommand::new(&binary).arg(flag);
        let output = exec::run(&command, Limits::new(INTROSPECTION_TIMEOUT), cancel)
            .await
            .map_err(|error| ToolError::new(Category::RuntimeMissing, error.to_string()))?;
        match (output.ending, output.return_code) {
            (Ending::Exited, Some(0)) => Ok(output.stdout),
            (Ending::Cancelled, _) => Err(ToolError::new(Category::Cancelled, "request cancelled")),
            _ => Err(ToolError::new(
                Category::RuntimeMissing,
                format!(
                    "`{} {flag}` failed ({}): {}",
                    binary.display(),
                    exec::ending_in_words(&output),
                    output.stderr.trim()
                ),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dirs(root: &Path) -> UserDirs {
        UserDirs {
            data_dir: root.join("data"),
            config_dir: root.join("config"),
        }
    }

    #[test]
    fn resolution_order_is_flag_env_config_default() {
        let scratch = tempfile::tempdir().unwrap();
        let dirs = dirs(scratch.path());
        let env = Settings {
            runtime_dir: Some(PathBuf::from("/from/env")),
            ..Settings::default()
        };
        let none = Settings::default();

        let (location, _) = resolve_location(Some(Path::new("/from/flag")), &env, &dirs);
        assert_eq!(
            (location.dir.as_path(), location.source),
            (Path::new("/from/flag"), LocationSource::Flag)
        );

        let (location, _) = resolve_location(None, &env, &dirs);
        assert_eq!(location.source, LocationSource::Env);

        let (location, warning) = resolve_location(None, &none, &dirs);
        assert_eq!(location.source, LocationSource::Default);
        assert_eq!(location.dir, scratch.path().join("data").join("minizinc"));
        assert!(warning.is_none());

        config::write(
            &dirs.config_dir,
            &config::InstallConfig {
                runtime_dir: Some(PathBuf::from("/from/config")),
                cpsat_python: None,
            },
        )
        .unwrap();
        let (location, _) = resolve_location(None, &none, &dirs);
        assert_eq!(
            (location.dir.as_path(), location.source),
            (Path::new("/from/config"), LocationSource::Config)
        );
    }

    #[test]
    fn a_corrupt_config_warns_and_falls_back() {
        let scratch = tempfile::tempdir().unwrap();
        let dirs = dirs(scratch.path());
        std::fs::create_dir_all(&dirs.config_dir).unwrap();
        std::fs::write(dirs.config_dir.join(config::CONFIG_FILE), "][").unwrap();
        let (location, warning) = resolve_location(None, &Settings::default(), &dirs);
        assert_eq!(location.source, LocationSource::Default);
        assert!(warning.unwrap().contains("falling back"));
    }

    #[test]
    fn a_missing_runtime_says_how_to_install() {
        let runtime = Runtime::new(RuntimeLocation {
            dir: PathBuf::from("/nonexistent/runtime"),
            source: LocationSource::Flag,
        });
        let error = runtime.require_binary().unwrap_err();
        assert_eq!(error.category(), Category::RuntimeMissing);
        assert!(error.to_string().contains("install-runtime"));
    }
}
