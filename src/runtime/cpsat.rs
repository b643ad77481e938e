//! The CP-SAT runtime: a Python interpreter that can import OR-Tools.
//!
//! Resolved like the MiniZinc runtime, most specific first:
//! `SOLVERGATE_CPSAT_PYTHON`, then `cpsat_python` in `install.json`, then
//! the Python environment this binary was installed into when it has
//! OR-Tools (the wheel's `cpsat` extra: `uv tool install 'solvergate[cpsat]'`,
//! `uvx`, `pip install` into a venv), then the managed venv
//! `<data dir>/cpsat/bin/python`. "Installed" means the interpreter answered
//! `import ortools.sat.python.cp_model`, not merely that a file exists.

use std::path::{Path, PathBuf};
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use super::cache::Cached;
use super::{LocationSource, UserDirs, config, is_executable};
use crate::exec::{self, ChildCommand, Ending, ExecError, Limits};
use crate::settings::Settings;

/// Probe answers per interpreter path, for the process.
static PROBES: Mutex<BTreeMap<PathBuf, Arc<Cached<String>>>> = Mutex::new(BTreeMap::new());

/// Python run by the probe: prints where the interpreter reads its modules
/// from (its prefixes and `sys.path`, as JSON), then imports the CP-SAT API
/// and prints the version.
const PROBE: &str = "import json, sys; print(json.dumps([sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix] + sys.path)); import ortools, ortools.sat.python.cp_model; print(ortools.__version__)";

/// Where the managed venv lives inside the data dir.
pub fn default_venv(dirs: &UserDirs) -> PathBuf {
    dirs.data_dir.join("cpsat")
}

/// The interpreter inside a venv.
pub fn venv_python(venv: &Path) -> PathBuf {
    venv.join("bin").join("python")
}

/// A resolved CP-SAT interpreter and why it was chosen.
#[derive(Debug, Clone)]
pub struct CpsatRuntime {
    /// The interpreter scripts run with.
    pub python: PathBuf,
    /// Which rule chose `python`.
    pub source: LocationSource,
    /// The server's own PYTHONPATH, kept after the helper module's dir
    /// when scripts run.
    pub inherited_pythonpath: Option<std::ffi::OsString>,
    /// The Python environment this binary was installed into, when it runs
    /// from one (chosen or not: without OR-Tools it is passed over).
    pub tool_environment: Option<ToolEnvironment>,
}

/// The Python environment a solvergate wheel was installed into: the venv
/// whose `bin` holds this executable (`uv tool` and `uvx` make one per
/// tool, `pip install` uses the active one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolEnvironment {
    /// The environment's interpreter.
    pub python: PathBuf,
    /// Its site-packages hold an `ortools` package.
    pub has_ortools: bool,
}

impl ToolEnvironment {
    /// The environment `exe` (this binary's own path) was installed into:
    /// its directory holds a `python` and its parent is a venv
    /// (`pyvenv.cfg`). `None` for a binary installed any other way.
    pub fn of(exe: &Path) -> Option<ToolEnvironment> {
        let bin = exe.parent()?;
        let root = bin.parent()?;
        let python = bin.join("python");
        if !(root.join("pyvenv.cfg").is_file() && is_executable(&python)) {
            return None;
        }
        // `lib/python3.X/site-packages/ortools`: looked at, not imported, so
        // resolving stays free; the probe still decides "installed".
        let has_ortools = std::fs::read_dir(root.join("lib")).is_ok_and(|entries| {
            entries.flatten().any(|entry| {
                entry.file_name().to_string_lossy().starts_with("python")
                    && entry.path().join("site-packages/ortools").is_dir()
            })
        });
        Some(ToolEnvironment {
            python,
            has_ortools,
        })
    }
}

/// How to add OR-Tools to the environment solvergate was installed into.
pub fn tool_environment_hint() -> String {
    let version = super::manifest::Manifest::builtin()
        .ok()
        .and_then(|manifest| manifest.cpsat)
        .map_or_else(|| "9.15.6755".to_owned(), |pins| pins.ortools);
    format!(
        "this solvergate was installed without OR-Tools: install it with its `cpsat` extra (`uv tool install 'solvergate[cpsat]'`) or add it (`uv tool install --with ortools=={version} solvergate`)"
    )
}

/// What `check_runtime` says about CP-SAT.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CpsatStatus {
    /// The interpreter imports `ortools.sat.python.cp_model`.
    pub installed: bool,
    /// The interpreter solvergate would run.
    pub python: String,
    /// Which rule chose it.
    pub source: LocationSource,
    /// `ortools.__version__`, when the import worked.
    pub ortools_version: Option<String>,
    /// Why it is not usable, when it is not.
    pub problem: Option<String>,
    /// How to make it usable where the generic advice does not fit: a
    /// solvergate installed as a Python tool without OR-Tools is told how
    /// to add it to that tool's environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

impl CpsatRuntime {
    /// The interpreter `python`, chosen by `source` (a flag, a Slurm task
    /// file), with `pythonpath` kept after the helper's dir.
    pub fn at(
        python: PathBuf,
        source: LocationSource,
        pythonpath: Option<std::ffi::OsString>,
    ) -> CpsatRuntime {
        CpsatRuntime {
            python,
            source,
            inherited_pythonpath: pythonpath,
            tool_environment: None,
        }
    }

    /// Resolves the interpreter: env, then config, then the tool's own
    /// environment (with OR-Tools), then the managed venv.
    pub fn resolve(settings: &Settings, dirs: &UserDirs) -> CpsatRuntime {
        let exe = std::env::current_exe().ok();
        CpsatRuntime::resolve_for(settings, dirs, exe.as_deref())
    }

    /// [`resolve`](Self::resolve) for a binary at `exe`.
    pub fn resolve_for(settings: &Settings, dirs: &UserDirs, exe: Option<&Path>) -> CpsatRuntime {
        let tool_environment = exe.and_then(ToolEnvironment::of);
        let chosen = |python: PathBuf, source: LocationSource| CpsatRuntime {
            python,
            source,
            inherited_pythonpath: settings.pythonpath.clone(),
            tool_environment: tool_environment.clone(),
        };
        if let Some(python) = &settings.cpsat_python {
            return chosen(python.clone(), LocationSource::Env);
        }
        if let config::ConfigRead::Found(config::InstallConfig {
            cpsat_python: Some(python),
            ..
        }) = config::read(&dirs.config_dir)
        {
            return chosen(python, LocationSource::Config);
        }
        if let Some(environment) = tool_environment.as_ref().filter(|env| env.has_ortools) {
            return chosen(environment.python.clone(), LocationSource::ToolEnvironment);
        }
        chosen(venv_python(&default_venv(dirs)), LocationSource::Default)
    }

    /// The interpreter's OR-Tools version: asked once per interpreter file
    /// for the whole process (every `CpsatRuntime` of the same path shares
    /// the answer) and asked again when the file changes. A failure is not
    /// kept, so a fixed runtime is seen at the next call.
    pub async fn probe(&self, cancel: &CancellationToken) -> Result<String, ProbeError> {
        let cached = {
            let mut probes = PROBES
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            probes
                .entry(self.python.clone())
                .or_insert_with(|| Arc::new(Cached::default()))
                .clone()
        };
        let version = cached
            .get_or_try_init(&self.python, async || {
                probe_python(&self.python, cancel).await
            })
            .await?;
        Ok(version.as_ref().clone())
    }

    /// What `check_runtime` reports about this interpreter (probing it if not
    /// yet done); never fails, a problem is a field.
    pub async fn status(&self, cancel: &CancellationToken) -> CpsatStatus {
        let probed = self.probe(cancel).await;
        CpsatStatus {
            installed: probed.is_ok(),
            python: self.python.display().to_string(),
            source: self.source,
            ortools_version: probed.as_ref().ok().cloned(),
            hint: (probed.is_err()
                && self
                    .tool_environment
                    .as_ref()
                    .is_some_and(|env| !env.has_ortools))
            .then(tool_environment_hint),
            problem: probed.err().map(|problem| problem.to_string()),
        }
    }
}

/// Why an interpreter is not a usable CP-SAT runtime.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// Nothing executable at the interpreter's path.
    #[error("no executable Python at {}", .0.display())]
    NoPython(PathBuf),
    /// The interpreter could not be run (its own text says why).
    #[error(transparent)]
    Run(#[from] ExecError),
    /// The probe was cancelled.
    #[error("cancelled")]
    Cancelled,
    /// The interpreter ran but the import failed; `reason` is the last
    /// line of its stderr.
    #[error("{} cannot import ortools.sat.python.cp_model: {reason}", .python.display())]
    NoOrtools {
        /// The interpreter probed.
        python: PathBuf,
        /// The last line of its stderr.
        reason: String,
    },
}

/// Runs `python -c PROBE`; the version on success, the reason otherwise.
/// What the interpreter reads its modules from becomes readable to every
/// sandboxed run ([`exec::reads::allow`]). The probe itself runs outside the
/// sandbox: it is our code on the interpreter the operator chose, and it
/// is what finds those directories.
pub async fn probe_python(python: &Path, cancel: &CancellationToken) -> Result<String, ProbeError> {
    if !is_executable(python) {
        return Err(ProbeError::NoPython(python.to_path_buf()));
    }
    let command = ChildCommand::new(python).args(["-c", PROBE]).unconfined();
    let output = exec::run(&command, Limits::new(Duration::from_secs(60)), cancel).await?;
    let mut lines = output.stdout.lines();
    if let Some(paths) = lines
        .next()
        .and_then(|line| serde_json::from_str::<Vec<PathBuf>>(line).ok())
    {
        exec::reads::allow(
            paths
                .into_iter()
                .filter(|path| path.is_absolute() && exec::reads::may_read_whole(path)),
        );
    }
    match (output.ending, output.return_code) {
        (Ending::Exited, Some(0)) => Ok(lines.next().unwrap_or_default().trim().to_owned()),
        (Ending::Cancelled, _) => Err(ProbeError::Cancelled),
        _ => Err(ProbeError::NoOrtools {
            python: python.to_path_buf(),
            reason: output
                .stderr
                .lines()
                .last()
                .unwrap_or("no error message")
                .trim()
                .to_owned(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn executable(path: &Path) {
        std::fs::write(path, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn a_tool_environment_is_a_venv_holding_the_binary_beside_its_python() {
        let root = tempfile::tempdir().unwrap();
        let bin = root.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let exe = bin.join("solvergate");
        // No venv marker, no python: an ordinary install.
        assert_eq!(ToolEnvironment::of(&exe), None);
        std::fs::write(root.path().join("pyvenv.cfg"), "home = /usr/bin\n").unwrap();
        assert_eq!(ToolEnvironment::of(&exe), None, "no python beside it");
        executable(&bin.join("python"));
        let found = ToolEnvironment::of(&exe).unwrap();
        assert_eq!(found.python, bin.join("python"));
        assert!(!found.has_ortools);
        // A file named like the package is not the package.
        let site = root.path().join("lib/python3.12/site-packages");
        std::fs::create_dir_all(&site).unwrap();
        std::fs::write(site.join("ortools"), "").unwrap();
        assert!(!ToolEnvironment::of(&exe).unwrap().has_ortools);
        std::fs::remove_file(site.join("ortools")).unwrap();
        std::fs::create_dir(site.join("ortools")).unwrap();
        assert!(ToolEnvironment::of(&exe).unwrap().has_ortools);
        // A binary at the file system's root has no environment.
        assert_eq!(ToolEnvironment::of(Path::new("/solvergate")), None);
    }
}
