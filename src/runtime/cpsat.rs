//! The CP-SAT runtime: a Python interpreter that can import OR-Tools.
//!
//! Resolved like the MiniZinc runtime, most specific first:
//! `SOLVERGATE_CPSAT_PYTHON`, then `cpsat_python` in `install.json`, then
//! the managed venv `<data dir>/cpsat/bin/python`. "Installed" means the
//! interpreter answered `import ortools.sat.python.cp_model`, not merely
//! that a file exists.

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

/// Python run by the probe: imports the CP-SAT API and prints the version.
const PROBE: &str = "import ortools, ortools.sat.python.cp_model; print(ortools.__version__)";

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
}

impl CpsatRuntime {
    /// Resolves the interpreter: env, then config, then the managed venv.
    pub fn resolve(settings: &Settings, dirs: &UserDirs) -> CpsatRuntime {
        if let Some(python) = &settings.cpsat_python {
            return CpsatRuntime {
                python: python.clone(),
                source: LocationSource::Env,
                inherited_pythonpath: settings.pythonpath.clone(),
            };
        }
        if let config::ConfigRead::Found(config::InstallConfig {
            cpsat_python: Some(python),
            ..
        }) = config::read(&dirs.config_dir)
        {
            return CpsatRuntime {
                python,
                source: LocationSource::Config,
                inherited_pythonpath: settings.pythonpath.clone(),
            };
        }
        CpsatRuntime {
            python: venv_python(&default_venv(dirs)),
            source: LocationSource::Default,
            inherited_pythonpath: settings.pythonpath.clone(),
        }
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
pub async fn probe_python(python: &Path, cancel: &CancellationToken) -> Result<String, ProbeError> {
    if !is_executable(python) {
        return Err(ProbeError::NoPython(python.to_path_buf()));
    }
    let command = ChildCommand::new(python).args(["-c", PROBE]);
    let output = exec::run(&command, Limits::new(Duration::from_secs(60)), cancel).await?;
    match (output.ending, output.return_code) {
        (Ending::Exited, Some(0)) => Ok(output.stdout.trim().to_owned()),
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
