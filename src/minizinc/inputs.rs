//! Turning a request's model, data and checker into files MiniZinc can read.
//!
//! Inline text goes into a private temp dir (`model.mzn`, `data.dzn`,
//! `checker.mzc.mzn`) that lives as long as the run. Paths are resolved to
//! absolute and checked before any process starts: missing, not a regular
//! file, empty model, not UTF-8 — each a clear `invalid_request` naming the
//! path. Path runs use the model's own directory as working directory, so a
//! relative `include` resolves the way it does at a terminal.

use std::fs;
use std::path::{Path, PathBuf};

use tempfile::TempDir;

use crate::diagnostics::ToolError;
use crate::userfiles::{existing_file, utf8_text};

/// Where the model (and optional data and checker) come from.
#[derive(Debug, Clone)]
pub enum Sources {
    Inline {
        model: String,
        data: Option<String>,
        checker: Option<String>,
    },
    Files {
        model_path: String,
        data_path: Option<String>,
        checker_path: Option<String>,
    },
}

/// Files ready for the command line, and the temp dir that holds them.
#[derive(Debug)]
pub(crate) struct Prepared {
    /// Keeps inline files alive for the run; removed on drop.
    _scratch: Option<TempDir>,
    pub model: PathBuf,
    pub data: Option<PathBuf>,
    pub checker: Option<PathBuf>,
    pub cwd: PathBuf,
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
            Sources::Files { .. } => Ok(()),
        }
    }

    /// Writes inline text to a private temp dir, or validates paths.
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
        }
    }
}

fn prepare_inline(
    model: &str,
    data: Option<&str>,
    checker: Option<&str>,
) -> Result<Prepared, ToolError> {
    let scratch = tempfile::Builder::new()
        .prefix("solvergate-")
        .tempdir()
        .map_err(|error| ToolError::invalid(format!("could not create a temp dir: {error}")))?;
    let write = |name: &str, text: &str| -> Result<PathBuf, ToolError> {
        let path = scratch.path().join(name);
        fs::write(&path, text).map_err(|error| {
            ToolError::invalid(format!("could not write {}: {error}", path.display()))
        })?;
        Ok(path)
    };
    let model = write("model.mzn", model)?;
    let data = data.map(|text| write("data.dzn", text)).transpose()?;
    let checker = checker
        .map(|text| write("checker.mzc.mzn", text))
        .transpose()?;
    let cwd = scratch.path().to_path_buf();
    Ok(Prepared {
        _scratch: Some(scratch),
        model,
        data,
        checker,
        cwd,
    })
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
            utf8_text("data_path", &data)?;
            Ok(data)
        })
        .transpose()?;
    let checker = checker_path
        .map(|path| {
            if !(path.ends_with(".mzc") || path.ends_with(".mzc.mzn")) {
                return Err(ToolError::invalid(format!(
                    "checker_path {path} must end in .mzc or .mzc.mzn (MiniZinc recognises checkers by extension)"
                )));
            }
            let checker = existing_file("checker_path", path)?;
            if has_suffix(&checker, &[".mzc.mzn"]) {
                utf8_text("checker_path", &checker)?;
            }
            Ok(checker)
        })
        .transpose()?;
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
    })
}

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
}
