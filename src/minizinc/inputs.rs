//! Turning a request's model, data and checker into files MiniZinc can read.
//!
//! Inline text goes into a private temp dir (`model.mzn`, `data.dzn`,
//! `checker.mzc.mzn`) that lives as long as the run. Paths are resolved to
//! absolute and checked before any process starts: missing, not a regular
//! file, over the size limit, empty model, not UTF-8 — each a clear
//! `invalid_request` naming the path. Path runs use the model's own directory
//! as working directory, so a relative `include` resolves the way it does at a
//! terminal.
//!
//! MiniZinc knows a checker only by its name (`.mzc` / `.mzc.mzn`), so a
//! checker is passed under a name that has the extension even when it is a
//! symlink to a file that does not (see [`checker_file`]).
//!
//! Preparing reads and writes files: async callers use
//! [`Sources::prepare_async`], which does it on the blocking pool.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tempfile::TempDir;

use crate::diagnostics::ToolError;
use crate::userfiles::{check_utf8, existing_file, off_thread, utf8_text};

/// Where the model (and optional data and checker) come from.
///
/// `Inline` and `Files` serialise as a Slurm task file carries them
/// (`{"inline": {"model": …}}`, `{"files": {"model_path": …}}`); `Written`
/// names files in this server's temp dir and never travels: serialising it
/// is an error (the task file carries their text instead).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Sources {
    /// Text a client sent, written to a private temp dir for the run.
    Inline {
        /// The complete model; must not be blank.
        model: String,
        /// `.dzn` data.
        data: Option<String>,
        /// A MiniZinc checker; must not be blank when given.
        checker: Option<String>,
    },
    /// Files a user named, checked before any process starts; the run's
    /// working directory is the model's own.
    Files {
        /// The model file; must not be empty.
        model_path: String,
        /// A data file ending in `.dzn` or `.json`.
        data_path: Option<String>,
        /// A checker ending in `.mzc` or `.mzc.mzn`.
        checker_path: Option<String>,
    },
    /// Files the server already wrote from inline text (see
    /// [`prepare_inline_models`]), shared by several runs: used as they are,
    /// without the checks and the size limit for files a user names.
    #[serde(skip)]
    Written(Prepared),
}

/// Files ready for the command line, and the temp dir that holds them.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// Keeps inline files alive for the run; removed when the last clone
    /// is dropped.
    _scratch: Option<Arc<TempDir>>,
    /// The model file to pass MiniZinc, absolute.
    pub model: PathBuf,
    /// The data file, when there is one.
    pub data: Option<PathBuf>,
    /// The checker file, under a name MiniZinc takes for a checker (a
    /// symlink to a file without one is passed by its own name).
    pub checker: Option<PathBuf>,
    /// The run's working directory: the temp dir for inline text, the
    /// model's directory for a path.
    pub cwd: PathBuf,
    /// Passed as `-I`: where a relative `include` of a model that was
    /// copied out of its directory still finds its neighbours.
    pub include_dir: Option<PathBuf>,
}

impl Prepared {
    /// A model the server wrote into `scratch` (kept alive with it) that
    /// stands for a user's model: it runs in `cwd` with `include_dir` on the
    /// include path, so a relative `include` resolves as it would from the
    /// original. Used for the unsat-core search's candidate models.
    pub fn written(
        scratch: Arc<TempDir>,
        model: PathBuf,
        data: Option<PathBuf>,
        cwd: PathBuf,
        include_dir: Option<PathBuf>,
    ) -> Prepared {
        Prepared {
            _scratch: Some(scratch),
            model,
            data,
            checker: None,
            cwd,
            include_dir,
        }
    }
}

impl Sources {
    /// Checks what can be checked without touching the disk.
    pub(crate) fn validate(&self) -> Result<(), ToolError> {
        match self {
            Sources::Inline { model, checker, .. } => {
                if model.trim().is_empty() {
                    return Err(ToolError::invalid(
                        "model must not be empty: pass the complete MiniZinc source",
                    ));
                }
                if checker.as_ref().is_some_and(|text| text.trim().is_empty()) {
                    return Err(ToolError::invalid(
                        "checker must not be empty: pass a MiniZinc checker source or omit the argument",
                    ));
                }
                Ok(())
            }
            Sources::Files { model_path, .. } if model_path.trim().is_empty() => {
                Err(ToolError::invalid("model_path must not be empty"))
            }
            Sources::Files { .. } | Sources::Written(_) => Ok(()),
        }
    }

    /// [`Sources::prepare`] on the blocking pool, for async callers.
    pub(crate) async fn prepare_async(&self) -> Result<Prepared, ToolError> {
        let sources = self.clone();
        off_thread(move || sources.prepare()).await
    }

    /// Writes inline text to a private temp dir, or validates paths.
    /// Blocking file I/O: async code calls [`Sources::prepare_async`].
    pub(crate) fn prepare(&self) -> Result<Prepared, ToolError> {
        self.validate()?;
        match self {
            Sources::Inline {
                model,
                data,
                checker,
            } => prepare_inline(model, data.as_deref(), checker.as_deref()),
            Sources::Files {
                model_path,
                data_path,
                checker_path,
            } => prepare_files(model_path, data_path.as_deref(), checker_path.as_deref()),
            Sources::Written(prepared) => Ok(prepared.clone()),
        }
    }
}

fn prepare_inline(
    model: &str,
    data: Option<&str>,
    checker: Option<&str>,
) -> Result<Prepared, ToolError> {
    let mut prepared = write_inline(&[model], |_| "model.mzn".to_owned(), data, checker)?;
    prepared
        .pop()
        .ok_or_else(|| ToolError::invalid("no model to write"))
}

/// Writes several inline models (`model-<i>.mzn`) and one data file and
/// checker into one private temp dir, for runs that share them: one
/// [`Prepared`] per model, the dir removed when the last is dropped.
pub(crate) fn prepare_inline_models(
    models: &[String],
    data: Option<&str>,
    checker: Option<&str>,
) -> Result<Vec<Prepared>, ToolError> {
    let models: Vec<&str> = models.iter().map(String::as_str).collect();
    write_inline(&models, |index| format!("model-{index}.mzn"), data, checker)
}

fn write_inline(
    models: &[&str],
    model_file: impl Fn(usize) -> String,
    data: Option<&str>,
    checker: Option<&str>,
) -> Result<Vec<Prepared>, ToolError> {
    let scratch = crate::exec::scratch_dir("solvergate-")?;
    let write = |name: &str, text: &str| -> Result<PathBuf, ToolError> {
        let path = scratch.path().join(name);
        fs::write(&path, text).map_err(|error| {
            ToolError::invalid(format!("could not write {}: {error}", path.display()))
        })?;
        Ok(path)
    };
    if let Some(text) = checker {
        lint_checker("checker", text)?;
    }
    let data = data.map(|text| write("data.dzn", text)).transpose()?;
    let checker = checker
        .map(|text| write("checker.mzc.mzn", text))
        .transpose()?;
    let models = models
        .iter()
        .enumerate()
        .map(|(index, text)| write(&model_file(index), text))
        .collect::<Result<Vec<_>, _>>()?;
    let cwd = scratch.path().to_path_buf();
    let scratch = Arc::new(scratch);
    Ok(models
        .into_iter()
        .map(|model| Prepared {
            _scratch: Some(scratch.clone()),
            model,
            data: data.clone(),
            checker: checker.clone(),
            cwd: cwd.clone(),
            include_dir: None,
        })
        .collect())
}

fn prepare_files(
    model_path: &str,
    data_path: Option<&str>,
    checker_path: Option<&str>,
) -> Result<Prepared, ToolError> {
    let model = existing_file("model_path", model_path)?;
    let text = utf8_text("model_path", &model)?;
    if text.trim().is_empty() {
        return Err(ToolError::invalid(format!(
            "model_path {} is empty: a model needs at least a solve item",
            model.display()
        )));
    }
    let data = data_path
        .map(|path| {
            let data = existing_file("data_path", path)?;
            if !has_suffix(&data, &[".dzn", ".json"]) {
                return Err(ToolError::invalid(format!(
                    "data_path {} must end in .dzn or .json (MiniZinc picks the format by extension)",
                    data.display()
                )));
            }
            check_utf8("data_path", &data)?;
            Ok(data)
        })
        .transpose()?;
    let checker = checker_path.map(checker_file).transpose()?;
    let cwd = model
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("/"));
    Ok(Prepared {
        _scratch: None,
        model,
        data,
        checker,
        cwd,
        include_dir: None,
    })
}

/// The checker file to pass MiniZinc: the resolved path when it keeps the
/// checker extension, else (a symlink `chk.mzc.mzn -> real.mzn`) the path
/// as the user named it, made absolute but not resolved. MiniZinc would take
/// `real.mzn` for a second model; opening the link itself reaches the same
/// file, a relative link target resolving against the link's own directory
/// whatever the run's working directory.
fn checker_file(path: &str) -> Result<PathBuf, ToolError> {
    if !has_suffix(Path::new(path), CHECKER_SUFFIXES) {
        return Err(ToolError::invalid(format!(
            "checker_path {path} must end in .mzc or .mzc.mzn (MiniZinc recognises checkers by extension)"
        )));
    }
    let resolved = existing_file("checker_path", path)?;
    let checker = if has_suffix(&resolved, CHECKER_SUFFIXES) {
        resolved
    } else {
        std::path::absolute(path).map_err(|error| {
            ToolError::invalid(format!(
                "checker_path {path} cannot be made absolute: {error}"
            ))
        })?
    };
    // A compiled `.mzc` cannot be read; a `.mzc.mzn` must be a checker.
    if has_suffix(&checker, &[".mzc.mzn"]) {
        let text = utf8_text("checker_path", &checker)?;
        lint_checker(&format!("checker_path {path}"), &text)?;
    }
    Ok(checker)
}

/// Refuses a checker that cannot check (see [`super::checker::lint`]).
fn lint_checker(argument: &str, text: &str) -> Result<(), ToolError> {
    super::checker::lint(text).map_err(|problem| {
        ToolError::invalid(format!("{argument} is not a usable checker: {problem}"))
    })
}

/// The names MiniZinc takes for a solution checker.
const CHECKER_SUFFIXES: &[&str] = &[".mzc", ".mzc.mzn"];

fn has_suffix(path: &Path, suffixes: &[&str]) -> bool {
    let name = path.to_string_lossy();
    suffixes.iter().any(|suffix| name.ends_with(suffix))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(model: &str, data: Option<&str>, checker: Option<&str>) -> Sources {
        Sources::Files {
            model_path: model.to_owned(),
            data_path: data.map(str::to_owned),
            checker_path: checker.map(str::to_owned),
        }
    }

    fn message(sources: Sources) -> String {
        sources.prepare().unwrap_err().to_string()
    }

    #[test]
    fn inline_text_lands_in_a_private_dir() {
        let sources = Sources::Inline {
            model: "var 1..3: x; solve satisfy;".into(),
            data: Some(String::new()),
            checker: None,
        };
        let prepared = sources.prepare().unwrap();
        assert!(prepared.model.ends_with("model.mzn"));
        assert!(prepared.data.as_ref().unwrap().exists());
        assert_eq!(prepared.model.parent().unwrap(), prepared.cwd);
        let dir = prepared.cwd.clone();
        drop(prepared);
        assert!(!dir.exists(), "the temp dir goes with the run");
    }

    #[test]
    fn rejects_empty_inline_model() {
        let sources = Sources::Inline {
            model: "  \n".into(),
            data: None,
            checker: None,
        };
        assert!(message(sources).contains("model must not be empty"));
    }

    #[test]
    fn path_problems_name_the_argument_and_path() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let model = root.join("m.mzn");
        fs::write(&model, "solve satisfy;").unwrap();
        fs::write(root.join("empty.mzn"), " \n").unwrap();
        fs::write(root.join("latin1.mzn"), b"% caf\xe9\nsolve satisfy;").unwrap();
        fs::write(root.join("latin1.dzn"), b"% caf\xe9\n").unwrap();
        fs::write(root.join("d.txt"), "n = 1;").unwrap();
        let model = model.to_str().unwrap();
        let at = |name: &str| root.join(name).to_str().unwrap().to_owned();

        assert!(message(files(&at("nope.mzn"), None, None)).contains("does not exist"));
        assert!(message(files(root.to_str().unwrap(), None, None)).contains("not a regular file"));
        assert!(message(files(&at("empty.mzn"), None, None)).contains("is empty"));
        assert!(message(files(&at("latin1.mzn"), None, None)).contains("not valid UTF-8"));
        let data_error = message(files(model, Some(&at("latin1.dzn")), None));
        assert!(data_error.starts_with("Diagnostic: invalid_request — data_path"));
        assert!(data_error.contains("not valid UTF-8"));
        assert!(message(files(model, Some(&at("d.txt")), None)).contains(".dzn or .json"));
        assert!(message(files(model, None, Some(&at("check.mzn")))).contains(".mzc"));

        let prepared = files(model, None, None).prepare().unwrap();
        assert_eq!(prepared.cwd, fs::canonicalize(root).unwrap());
    }

    #[test]
    fn a_symlinked_checker_keeps_its_checker_name() {
        let dir = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        fs::write(root.join("m.mzn"), "var 1..3: x; solve satisfy;").unwrap();
        fs::create_dir(root.join("checks")).unwrap();
        fs::write(root.join("checks/real.mzn"), "int: x;\n").unwrap();
        fs::write(root.join("checks/real.mzc.mzn"), "int: x;\n").unwrap();
        std::os::unix::fs::symlink("checks/real.mzn", root.join("chk.mzc.mzn")).unwrap();
        std::os::unix::fs::symlink("checks/real.mzc.mzn", root.join("alias.mzc.mzn")).unwrap();
        let model = root.join("m.mzn");
        let model = model.to_str().unwrap();

        let linked = root.join("chk.mzc.mzn");
        let prepared = files(model, None, Some(linked.to_str().unwrap()))
            .prepare()
            .unwrap();
        assert_eq!(prepared.checker.as_deref(), Some(linked.as_path()));
        // The link resolves from its own directory, not the run's.
        assert_eq!(
            fs::read_to_string(prepared.checker.unwrap()).unwrap(),
            "int: x;\n"
        );

        // A link to a file that has the extension resolves as before.
        let alias = root.join("alias.mzc.mzn");
        let prepared = files(model, None, Some(alias.to_str().unwrap()))
            .prepare()
            .unwrap();
        assert_eq!(
            prepared.checker.as_deref(),
            Some(root.join("checks/real.mzc.mzn").as_path())
        );

        // A symlinked checker is still checked for UTF-8.
        fs::write(root.join("checks/real.mzn"), b"% caf\xe9\n").unwrap();
        let error = message(files(model, None, Some(linked.to_str().unwrap())));
        assert!(error.contains("checker_path"), "{error}");
        assert!(
            error.contains("not valid UTF-8 (first bad byte at offset 5)"),
            "{error}"
        );
    }

    #[test]
    fn named_files_over_the_limit_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let model = root.join("m.mzn");
        fs::write(&model, "solve satisfy;").unwrap();
        let huge = root.join("huge.dzn");
        fs::File::create(&huge)
            .unwrap()
            .set_len(crate::userfiles::MAX_USER_FILE_BYTES + 1)
            .unwrap();
        let error = message(files(
            model.to_str().unwrap(),
            Some(huge.to_str().unwrap()),
            None,
        ));
        assert!(error.contains("data_path"), "{error}");
        assert!(error.contains("16777217 bytes"), "{error}");
        let error = message(files(huge.to_str().unwrap(), None, None));
        assert!(error.contains("model_path"), "{error}");
    }

    #[tokio::test]
    async fn prepare_async_prepares_off_the_worker_thread() {
        let sources = Sources::Inline {
            model: "var 1..3: x; solve satisfy;".into(),
            data: None,
            checker: Some("int: x;".into()),
        };
        let prepared = sources.prepare_async().await.unwrap();
        assert!(prepared.checker.unwrap().ends_with("checker.mzc.mzn"));
        let missing = files("/nonexistent/m.mzn", None, None)
            .prepare_async()
            .await;
        assert!(missing.unwrap_err().to_string().contains("does not exist"));
    }
}
