//! Turning a script request into a child command: inline source into a
//! private temp dir, a path validated and run from its own directory, `args`
//! checked, and the replay protocol (`SOLVERGATE_CPSAT_SEED`,
//! `SOLVERGATE_CPSAT_CONFIG`) set or cleared — never inherited stale from
//! the server's own environment.

use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tempfile::TempDir;

use crate::budget::Budget;
use crate::diagnostics::ToolError;
use crate::exec::ChildCommand;
use crate::sha256_hex;
use crate::userfiles::{off_thread, text_file};

/// Env var carrying the replay seed to a cooperating script.
pub const SEED_VAR: &str = "SOLVERGATE_CPSAT_SEED";
/// Env var naming a JSON file with the replay config.
pub const CONFIG_VAR: &str = "SOLVERGATE_CPSAT_CONFIG";
/// The envelope helper every script can `import solvergate`.
pub const HELPER_MODULE: &str = include_str!("solvergate.py");
/// The start-up hook beside it: Python imports `sitecustomize` as it
/// starts, and this one loads the helper before the script runs (so each
/// `CpSolver` remembers whether its model had an objective), then runs the
/// `sitecustomize` it shadows.
pub const SITE_MODULE: &str = include_str!("sitecustomize.py");

/// Most bytes `args` may take, all entries together.
pub const MAX_ARGS_BYTES: usize = 32 * 1024;

/// Where a Python file the service runs comes from — a script or its
/// checker: the text itself, or the path of a file. Serialised as
/// `{"inline": text}` or `{"file": path}`, as a Slurm task file carries it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScriptSource {
    /// The Python text itself, written to a private temp dir and run there.
    Inline(String),
    /// The path of a local file, run from its own directory.
    File(String),
}

/// One script run as requested. Serialised with its source as `script`,
/// as a Slurm task file carries it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScriptRequest {
    /// The script to run.
    #[serde(rename = "script")]
    pub source: ScriptSource,
    /// The script's `sys.argv[1:]`: no NUL, 32 KiB in all.
    pub args: Vec<String>,
    /// Replay seed, set as `SOLVERGATE_CPSAT_SEED` (cleared when `None`);
    /// must fit a signed 32-bit integer.
    pub seed: Option<i64>,
    /// `{}` counts as none.
    pub config: Option<Map<String, Value>>,
    /// The child's wall-clock budget (`script_timeout_ms`), checked where
    /// the request was made.
    pub timeout_ms: Budget,
}

/// A script ready to run, with the temp dir that holds its files.
#[derive(Debug)]
pub(crate) struct PreparedScript {
    _scratch: TempDir,
    pub script: PathBuf,
    pub cwd: PathBuf,
    /// SHA256 of the script bytes.
    pub sha256: String,
}

impl ScriptRequest {
    /// Checks what needs no disk.
    pub(crate) fn validate(&self) -> Result<(), ToolError> {
        if let ScriptSource::Inline(source) = &self.source
            && source.trim().is_empty()
        {
            return Err(ToolError::invalid(
                "source must not be empty: pass the complete Python script",
            ));
        }
        validate_seed(self.seed)?;
        validate_args(&self.args)
    }

    /// [`ScriptRequest::prepare`] on the blocking pool, for async callers.
    pub(crate) async fn prepare_async(&self) -> Result<PreparedScript, ToolError> {
        let request = self.clone();
        off_thread(move || request.prepare()).await
    }

    /// Writes inline source (and any config) to a private temp dir, or
    /// validates the script path. Blocking file I/O: async code calls
    /// [`ScriptRequest::prepare_async`].
    pub(crate) fn prepare(&self) -> Result<PreparedScript, ToolError> {
        self.validate()?;
        let scratch = scratch_dir()?;
        let (script, cwd, bytes) = match &self.source {
            ScriptSource::Inline(source) => {
                let script = scratch.path().join("script.py");
                write(&script, source.as_bytes())?;
                (
                    script,
                    scratch.path().to_path_buf(),
                    source.as_bytes().to_vec(),
                )
            }
            ScriptSource::File(path) => {
                let (script, text) = text_file("script_path", path)?;
                let cwd = parent_of(&script);
                (script, cwd, text.into_bytes())
            }
        };
        Ok(PreparedScript {
            script,
            cwd,
            sha256: sha256_hex(&bytes),
            _scratch: scratch,
        })
    }
}

/// The user's `~/.local`, where a Python outside a venv finds its user
/// site: a sandboxed script's `HOME` is its scratch dir, so the base is
/// named for it (and the probe found the site readable).
pub(crate) fn user_base() -> Option<std::path::PathBuf> {
    let base = directories::BaseDirs::new()?.home_dir().join(".local");
    base.is_dir().then_some(base)
}

impl PreparedScript {
    /// `python -u script args…`, in the script's directory, with the replay
    /// protocol set or cleared.
    pub(crate) fn command(
        &self,
        python: &Path,
        args: &[String],
        seed: Option<i64>,
        config: Option<&Map<String, Value>>,
        inherited_pythonpath: Option<&std::ffi::OsStr>,
    ) -> Result<ChildCommand, ToolError> {
        // `import solvergate` finds the helper, and the interpreter's start
        // loads it through `sitecustomize`; the server's own PYTHONPATH
        // comes after them.
        let lib = self._scratch.path().join("lib");
        write_helper(&lib)?;
        let mut pythonpath = lib.into_os_string();
        if let Some(inherited) = inherited_pythonpath {
            pythonpath.push(":");
            pythonpath.push(inherited);
        }
        // A sandboxed script reads its runtime, the script and its
        // directory, the helper and its config; its caches go in its
        // scratch dir, its HOME.
        let mut command = ChildCommand::new(python)
            .arg("-u")
            .arg(&self.script)
            .args(args)
            .cwd(&self.cwd)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .env("PYTHONPATH", pythonpath)
            .reads_beside(&self.script)
            .reads_dir(&self.cwd)
            .readable(self._scratch.path())
            .scratch_home();
        if let Some(base) = user_base() {
            command = command.env("PYTHONUSERBASE", base);
        }
        // An inline script's directory is its own temp dir: it may write
        // there as a file script may beside itself where allowed.
        if self.cwd == self._scratch.path() {
            command = command.writable(&self.cwd);
        }
        command = match seed {
            Some(seed) => command.env(SEED_VAR, seed.to_string()),
            None => command.env_remove(SEED_VAR),
        };
        command = match config.filter(|config| !config.is_empty()) {
            Some(config) => {
                let path = self._scratch.path().join("config.json");
                let text = serde_json::to_string(config).map_err(|error| {
                    ToolError::invalid(format!("config cannot be encoded: {error}"))
                })?;
                write(&path, text.as_bytes())?;
                command.env(CONFIG_VAR, path)
            }
            None => command.env_remove(CONFIG_VAR),
        };
        Ok(command)
    }

    #[cfg(test)]
    pub(crate) fn scratch(&self) -> &Path {
        self._scratch.path()
    }
}

/// A replay seed must fit CP-SAT's signed 32-bit `random_seed`.
pub fn validate_seed(seed: Option<i64>) -> Result<(), ToolError> {
    match seed {
        Some(value) if i32::try_from(value).is_err() => Err(ToolError::invalid(format!(
            "seed must fit a signed 32-bit integer, as CP-SAT's random seed does, got {value}"
        ))),
        _ => Ok(()),
    }
}

/// `args` is a flag/path list: no NUL, at most 32 KiB in all (counting one
/// separator byte per entry).
pub fn validate_args(args: &[String]) -> Result<(), ToolError> {
    if let Some(index) = args.iter().position(|arg| arg.contains('\0')) {
        return Err(ToolError::invalid(format!(
            "args[{index}] contains a NUL byte"
        )));
    }
    let total: usize = args.iter().map(|arg| arg.len() + 1).sum();
    if total > MAX_ARGS_BYTES {
        return Err(ToolError::invalid(format!(
            "args take {total} bytes, more than the {MAX_ARGS_BYTES} allowed; pass bulk input in a file the script opens"
        )));
    }
    Ok(())
}

/// Writes the helper and its start-up hook into `dir` (made if missing),
/// the directory that goes first on an interpreter's `PYTHONPATH`.
pub(crate) fn write_helper(dir: &Path) -> Result<(), ToolError> {
    fs::create_dir_all(dir).map_err(|error| {
        ToolError::invalid(format!("could not create {}: {error}", dir.display()))
    })?;
    write(&dir.join("solvergate.py"), HELPER_MODULE.as_bytes())?;
    write(&dir.join("sitecustomize.py"), SITE_MODULE.as_bytes())
}

pub(crate) fn scratch_dir() -> Result<TempDir, ToolError> {
    crate::exec::scratch_dir("solvergate-cpsat-")
}

pub(crate) fn write(path: &Path, bytes: &[u8]) -> Result<(), ToolError> {
    fs::write(path, bytes)
        .map_err(|error| ToolError::invalid(format!("could not write {}: {error}", path.display())))
}

pub(crate) fn parent_of(path: &Path) -> PathBuf {
    path.parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_are_checked() {
        assert!(validate_args(&["data.json".into(), "--fast".into()]).is_ok());
        assert!(
            validate_args(&["a\0b".into()])
                .unwrap_err()
                .to_string()
                .contains("args[0]")
        );
        let huge = vec!["x".repeat(1024); 40];
        assert!(
            validate_args(&huge)
                .unwrap_err()
                .to_string()
                .contains("32768")
        );
    }

    #[test]
    fn replay_variables_are_set_or_cleared() {
        let request = ScriptRequest {
            source: ScriptSource::Inline("print(1)".into()),
            args: vec![],
            seed: Some(7),
            config: Some(Map::from_iter([("num_workers".to_owned(), Value::from(2))])),
            timeout_ms: Budget::from_millis(1000).unwrap(),
        };
        let prepared = request.prepare().unwrap();
        let command = prepared
            .command(
                Path::new("/usr/bin/python3"),
                &[],
                Some(7),
                request.config.as_ref(),
                Some(std::ffi::OsStr::new("/opt/inherited")),
            )
            .unwrap();
        let text = format!("{command:?}");
        assert!(text.contains("SOLVERGATE_CPSAT_SEED"), "{text}");
        assert!(text.contains("lib:/opt/inherited"), "{text}");
        assert!(prepared.scratch().join("lib/solvergate.py").exists());
        assert!(prepared.scratch().join("lib/sitecustomize.py").exists());
        assert!(prepared.scratch().join("config.json").exists());
        let cleared = prepared
            .command(
                Path::new("/usr/bin/python3"),
                &[],
                None,
                Some(&Map::new()),
                None,
            )
            .unwrap();
        let text = format!("{cleared:?}");
        assert!(
            text.contains("env_remove: [\"SOLVERGATE_CPSAT_SEED\", \"SOLVERGATE_CPSAT_CONFIG\"]"),
            "{text}"
        );
    }

    #[test]
    fn script_paths_are_validated() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope.py");
        let error = text_file("script_path", missing.to_str().unwrap()).unwrap_err();
        assert!(error.to_string().contains("does not exist"));
        fs::write(dir.path().join("empty.py"), "  \n").unwrap();
        let error =
            text_file("script_path", dir.path().join("empty.py").to_str().unwrap()).unwrap_err();
        assert!(error.to_string().contains("is empty"));
        fs::write(dir.path().join("latin.py"), b"# caf\xe9\n").unwrap();
        let error =
            text_file("script_path", dir.path().join("latin.py").to_str().unwrap()).unwrap_err();
        assert!(error.to_string().contains("UTF-8"));
    }
}
