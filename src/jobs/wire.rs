//! What the server and a `solvergate worker` on a cluster node exchange
//! through the shared work directory: `task.json` (the request, with
//! every source inline or as an absolute path the node sees) and
//! `result.json` (the result struct the local run would have produced, or
//! the refusal it would have raised).
//!
//! The work travels in the services' own types: a solve's [`Sources`]
//! (with the files the server wrote sent as their text), an admitted
//! [`CpsatJob`] and its [`CpsatJobOutput`] as they are, so nothing is
//! converted on the way to the node and back. The call's limit caps
//! travel beside the work, so the node lowers its own limits as the
//! server would have. Both files are written whole and renamed into place
//! ([`write_atomically`]): a reader sees a complete file or none.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::backend::{CpsatJob, CpsatJobOutput};
use crate::budget::Budget;
use crate::diagnostics::{Category, Diagnostic, ToolError};
use crate::exec::limits::LimitCaps;
use crate::minizinc::{SolveControls, SolveRequest, SolveResult, Sources};

/// The task file's name in a job's directory.
pub const TASK_FILE: &str = "task.json";
/// The result file's name in a job's directory.
pub const RESULT_FILE: &str = "result.json";

/// One job's work, as the worker reads it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkerTask {
    /// The MiniZinc runtime root the server resolved (same path on every node).
    pub runtime_dir: PathBuf,
    /// The CP-SAT interpreter the server resolved.
    pub cpsat_python: PathBuf,
    /// The server's `PYTHONPATH`, kept for scripts.
    pub pythonpath: Option<String>,
    /// The job to run.
    pub work: WorkerWork,
    /// The submitting call's limit caps, lowering the node's own limits
    /// (absent from the file when there are none, as before they existed).
    #[serde(default, skip_serializing_if = "no_caps")]
    pub limits: LimitCaps,
}

fn no_caps(caps: &LimitCaps) -> bool {
    *caps == LimitCaps::default()
}

/// What to run.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WorkerWork {
    /// A MiniZinc solve (a solve job or a portfolio attempt).
    Solve {
        /// Text, or paths the node sees; never `Written` (see
        /// [`WorkerWork::solve`]).
        sources: Sources,
        /// The solver as the request named it; `None`: cp-sat when available,
        /// else the runtime's default.
        solver: Option<String>,
        /// Written as its number of milliseconds.
        timeout_ms: Budget,
        /// The search flags (`-f`, `-p`, `-r`, `-a`, `-n`), already gated on
        /// the solver.
        controls: SolveControls,
    },
    /// Its paths were made absolute at admission.
    Cpsat(CpsatJob),
}

/// What the worker leaves in `result.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum WorkerOutcome {
    /// The solve's result, as the local run would have returned it.
    Solve {
        /// Boxed: a solve result is twice the size of the other outcomes.
        result: Box<SolveResult>,
    },
    /// The CP-SAT job's run and checker report.
    Cpsat(CpsatJobOutput),
    /// The run was refused or our machinery failed, as it would have locally.
    Refused {
        /// The refusal's diagnostic, as the local run would have raised it.
        diagnostic: Diagnostic,
    },
}

/// A request's sources as the node can read them: paths absolute, and the
/// files the server wrote (a portfolio's shared sources) as their text,
/// since the server's temp dir is not on the nodes.
fn for_the_node(sources: &Sources) -> Result<Sources, ToolError> {
    let read = |path: &Path| {
        std::fs::read_to_string(path).map_err(|error| {
            ToolError::invalid(format!("could not read {}: {error}", path.display()))
        })
    };
    Ok(match sources {
        Sources::Inline { .. } => sources.clone(),
        Sources::Files {
            model_path,
            data_path,
            checker_path,
        } => Sources::Files {
            model_path: absolute(model_path),
            data_path: data_path.as_deref().map(absolute),
            checker_path: checker_path.as_deref().map(absolute),
        },
        Sources::Written(prepared) => Sources::Inline {
            model: read(&prepared.model)?,
            data: prepared.data.as_deref().map(read).transpose()?,
            checker: prepared.checker.as_deref().map(read).transpose()?,
        },
    })
}

/// A path made absolute against the server's working directory, so the
/// node (which starts elsewhere) reads the same file.
fn absolute(path: &str) -> String {
    std::path::absolute(path)
        .map(|path| path.to_string_lossy().into_owned())
        .unwrap_or_else(|_| path.to_owned())
}

impl WorkerWork {
    /// The wire form of a solve (blocking: it may read the files the
    /// server wrote).
    pub fn solve(request: &SolveRequest) -> Result<WorkerWork, ToolError> {
        Ok(WorkerWork::Solve {
            sources: for_the_node(&request.sources)?,
            solver: request.solver.clone(),
            timeout_ms: request.timeout_ms,
            controls: request.controls.clone(),
        })
    }
}

impl WorkerOutcome {
    /// A refusal, as the local run would have raised it.
    pub fn refused(error: ToolError) -> WorkerOutcome {
        WorkerOutcome::Refused {
            diagnostic: error.0,
        }
    }

    /// The solve result, or the error the local run would have returned.
    pub fn into_solve(self) -> Result<SolveResult, ToolError> {
        match self {
            WorkerOutcome::Solve { result } => Ok(*result),
            WorkerOutcome::Refused { diagnostic } => Err(ToolError(diagnostic)),
            WorkerOutcome::Cpsat(_) => Err(mismatch("a solve", "a CP-SAT result")),
        }
    }

    /// The CP-SAT output, or the error the local run would have returned.
    pub fn into_cpsat(self) -> Result<CpsatJobOutput, ToolError> {
        match self {
            WorkerOutcome::Cpsat(output) => Ok(output),
            WorkerOutcome::Refused { diagnostic } => Err(ToolError(diagnostic)),
            WorkerOutcome::Solve { .. } => Err(mismatch("a CP-SAT job", "a solve result")),
        }
    }
}

fn mismatch(asked: &str, got: &str) -> ToolError {
    ToolError::new(
        Category::JobFailed,
        format!(
            "the worker ran {asked} but left {got}; this is a solvergate bug — please report it"
        ),
    )
}

/// Writes `value` as JSON to `path` through a temp file in the same
/// directory and a rename: a reader sees the whole file or none.
pub fn write_atomically(path: &Path, value: &impl Serialize) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut staged = tempfile::NamedTempFile::new_in(dir)?;
    serde_json::to_writer(&mut staged, value)?;
    staged.as_file().sync_all()?;
    staged.persist(path).map_err(|error| error.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpsat::{ScriptRequest, ScriptSource};
    use serde_json::{Map, Value};

    #[test]
    fn a_task_round_trips() {
        let task = WorkerTask {
            runtime_dir: "/usr".into(),
            cpsat_python: "/venv/bin/python".into(),
            pythonpath: None,
            limits: LimitCaps::default(),
            work: WorkerWork::Solve {
                sources: Sources::Inline {
                    model: "var 1..3: x; solve maximize x;".into(),
                    data: None,
                    checker: None,
                },
                solver: Some("gecode".into()),
                timeout_ms: Budget::from_millis(1000).unwrap(),
                controls: SolveControls::default(),
            },
        };
        let text = serde_json::to_string(&task).unwrap();
        let back: WorkerTask = serde_json::from_str(&text).unwrap();
        assert_eq!(serde_json::to_string(&back).unwrap(), text);
        let WorkerWork::Solve { timeout_ms, .. } = back.work else {
            panic!("a solve came back as something else");
        };
        assert_eq!(timeout_ms.as_millis(), 1000);
    }

    /// The task file's bytes, pinned: a node running an older or newer
    /// build of the same release reads what the server wrote.
    #[test]
    fn task_files_keep_their_bytes() {
        let solve = |sources| WorkerTask {
            runtime_dir: "/usr".into(),
            cpsat_python: "/venv/bin/python".into(),
            pythonpath: Some("/opt/lib".into()),
            limits: LimitCaps::default(),
            work: WorkerWork::Solve {
                sources,
                solver: None,
                timeout_ms: Budget::from_millis(2000).unwrap(),
                controls: SolveControls::default(),
            },
        };
        let cases = [
            (
                solve(Sources::Inline {
                    model: "var 1..3: x;".into(),
                    data: None,
                    checker: Some("check".into()),
                }),
                r#"{"runtime_dir":"/usr","cpsat_python":"/venv/bin/python","pythonpath":"/opt/lib","work":{"kind":"solve","sources":{"inline":{"model":"var 1..3: x;","data":null,"checker":"check"}},"solver":null,"timeout_ms":2000,"controls":{"free_search":false,"parallel":null,"random_seed":null,"all_solutions":false,"num_solutions":null}}}"#,
            ),
            (
                solve(Sources::Files {
                    model_path: "/m/a.mzn".into(),
                    data_path: Some("/m/a.dzn".into()),
                    checker_path: None,
                }),
                r#"{"runtime_dir":"/usr","cpsat_python":"/venv/bin/python","pythonpath":"/opt/lib","work":{"kind":"solve","sources":{"files":{"model_path":"/m/a.mzn","data_path":"/m/a.dzn","checker_path":null}},"solver":null,"timeout_ms":2000,"controls":{"free_search":false,"parallel":null,"random_seed":null,"all_solutions":false,"num_solutions":null}}}"#,
            ),
            (
                WorkerTask {
                    runtime_dir: "/usr".into(),
                    cpsat_python: "/venv/bin/python".into(),
                    pythonpath: None,
                    limits: LimitCaps::default(),
                    work: WorkerWork::Cpsat(CpsatJob {
                        script: ScriptRequest {
                            source: ScriptSource::File("/s/model.py".into()),
                            args: vec!["--fast".into()],
                            seed: Some(7),
                            config: Some(Map::from_iter([(
                                "num_workers".to_owned(),
                                Value::from(2),
                            )])),
                            timeout_ms: Budget::from_millis(5000).unwrap(),
                        },
                        checker: Some(ScriptSource::Inline("print(1)".into())),
                        problem: Some("{}".into()),
                        checker_timeout_ms: Budget::from_millis(4000),
                    }),
                },
                r#"{"runtime_dir":"/usr","cpsat_python":"/venv/bin/python","pythonpath":null,"work":{"kind":"cpsat","script":{"file":"/s/model.py"},"args":["--fast"],"seed":7,"config":{"num_workers":2},"timeout_ms":5000,"checker":{"inline":"print(1)"},"problem":"{}","checker_timeout_ms":4000}}"#,
            ),
            (
                WorkerTask {
                    runtime_dir: "/usr".into(),
                    cpsat_python: "/venv/bin/python".into(),
                    pythonpath: None,
                    limits: LimitCaps::default(),
                    work: WorkerWork::Cpsat(CpsatJob {
                        script: ScriptRequest {
                            source: ScriptSource::Inline("print(2)".into()),
                            args: vec![],
                            seed: None,
                            config: None,
                            timeout_ms: Budget::from_millis(5000).unwrap(),
                        },
                        checker: None,
                        problem: None,
                        checker_timeout_ms: None,
                    }),
                },
                r#"{"runtime_dir":"/usr","cpsat_python":"/venv/bin/python","pythonpath":null,"work":{"kind":"cpsat","script":{"inline":"print(2)"},"args":[],"seed":null,"config":null,"timeout_ms":5000,"checker":null,"problem":null,"checker_timeout_ms":null}}"#,
            ),
            (
                WorkerTask {
                    limits: LimitCaps {
                        memory_mb: Some(256),
                        processes: Some(32),
                        ..LimitCaps::default()
                    },
                    ..solve(Sources::Inline {
                        model: "var 1..3: x;".into(),
                        data: None,
                        checker: None,
                    })
                },
                r#"{"runtime_dir":"/usr","cpsat_python":"/venv/bin/python","pythonpath":"/opt/lib","work":{"kind":"solve","sources":{"inline":{"model":"var 1..3: x;","data":null,"checker":null}},"solver":null,"timeout_ms":2000,"controls":{"free_search":false,"parallel":null,"random_seed":null,"all_solutions":false,"num_solutions":null}},"limits":{"memory_mb":256,"processes":32}}"#,
            ),
        ];
        for (task, pinned) in cases {
            assert_eq!(serde_json::to_string(&task).unwrap(), pinned);
            let back: WorkerTask = serde_json::from_str(pinned).unwrap();
            assert_eq!(serde_json::to_string(&back).unwrap(), pinned);
        }
    }

    /// Files the server wrote live in its own temp dir: they travel as
    /// their text, and never as the server's paths.
    #[test]
    fn written_sources_travel_as_text() {
        let scratch = std::sync::Arc::new(tempfile::tempdir().unwrap());
        let model = scratch.path().join("model.mzn");
        std::fs::write(&model, "var 1..2: x;").unwrap();
        let written = Sources::Written(crate::minizinc::Prepared::written(
            scratch.clone(),
            model,
            None,
            scratch.path().to_path_buf(),
            None,
        ));
        assert!(serde_json::to_string(&written).is_err());
        let work = WorkerWork::solve(&SolveRequest {
            sources: written,
            solver: None,
            timeout_ms: Budget::from_millis(1000).unwrap(),
            controls: SolveControls::default(),
        })
        .unwrap();
        let text = serde_json::to_string(&work).unwrap();
        assert!(
            text.contains(
                r#""sources":{"inline":{"model":"var 1..2: x;","data":null,"checker":null}}"#
            ),
            "{text}"
        );
        assert!(!text.contains(&*scratch.path().to_string_lossy()), "{text}");
    }

    /// The result file's bytes, pinned as the task file's are.
    #[test]
    fn result_files_keep_their_bytes() {
        let pinned = [
            r#"{"outcome":"cpsat","result":{"status":"optimal","solution":{"x":[1,2]},"objective":3,"best_objective_bound":3.5,"stdout":"out","stderr":"","return_code":0,"timed_out":false,"truncated":false,"duration_ms":12,"diagnostic":null},"checker":{"status":"accepted","verdict":"accepted","errors":[],"details":{"k":1},"message":null,"stdout":"ok","stderr":"","return_code":0,"timed_out":false,"truncated":false,"duration_ms":4},"checker_skipped_reason":null}"#,
            r#"{"outcome":"cpsat","result":{"status":"infeasible","solution":null,"objective":null,"best_objective_bound":null,"stdout":"","stderr":"","return_code":0,"timed_out":false,"truncated":false,"duration_ms":1,"diagnostic":null},"checker":null,"checker_skipped_reason":"status infeasible: no incumbent to check"}"#,
        ];
        for pinned in pinned {
            let outcome: WorkerOutcome = serde_json::from_str(pinned).unwrap();
            assert_eq!(serde_json::to_string(&outcome).unwrap(), pinned);
            let output = outcome.into_cpsat().unwrap();
            let again = serde_json::to_string(&WorkerOutcome::Cpsat(output)).unwrap();
            assert_eq!(again, pinned);
        }
    }

    #[test]
    fn a_refusal_comes_back_as_the_same_error() {
        let error = ToolError::new(Category::RuntimeMissing, "no minizinc");
        let text = serde_json::to_string(&WorkerOutcome::refused(error.clone())).unwrap();
        let back: WorkerOutcome = serde_json::from_str(&text).unwrap();
        assert_eq!(back.into_solve().unwrap_err(), error);
    }
}
