//! Settings read from the environment once, at start-up.
//!
//! Nothing below the faces reads `std::env`: the CLI builds one [`Settings`]
//! and hands it down. A value that cannot be used stops start-up with a
//! message naming the variable.

use std::path::PathBuf;

use crate::exec::limits::Mode as LimitsMode;
use crate::exec::{LimitKind, ResourceLimits};

/// Environment variable that overrides the MiniZinc runtime root.
pub const RUNTIME_DIR_VAR: &str = "SOLVERGATE_RUNTIME_DIR";

/// Environment variable naming the CP-SAT runtime's Python interpreter.
pub const CPSAT_PYTHON_VAR: &str = "SOLVERGATE_CPSAT_PYTHON";

/// Planner results kept on disk unless `SOLVERGATE_PLANNER_MAX_RESULTS`
/// says otherwise.
pub const DEFAULT_PLANNER_MAX_RESULTS: usize = 256;
/// The most a tool result's content takes in a response, in bytes, unless
/// `SOLVERGATE_MAX_RESPONSE_BYTES` raises it (it cannot lower it: a sheet's
/// page is sized to fit it): past it the largest values of the structured
/// result give way to markers naming the kept resource.
pub const DEFAULT_RESPONSE_LIMIT: usize = 128 * 1024;
/// Environment variable holding the bearer token `serve --http` requires.
pub const HTTP_TOKEN_VAR: &str = "SOLVERGATE_HTTP_TOKEN";
/// Environment variable listing directories sandboxed children may write
/// beneath.
pub const SANDBOX_WRITABLE_VAR: &str = "SOLVERGATE_SANDBOX_WRITABLE";

/// Environment variable listing directories sandboxed children may read
/// beneath besides their runtime, system files, scratch dir and what a call
/// names.
pub const READ_ROOTS_VAR: &str = "SOLVERGATE_READ_ROOTS";
/// Environment variable naming more of the server's variables a child may
/// see (comma-separated names), besides [`PASSED_VARIABLES`].
pub const PASS_ENV_VAR: &str = "SOLVERGATE_PASS_ENV";

/// The server's variables every child sees (when set): what a runtime needs
/// to start and to speak the user's language, and MiniZinc's own
/// configuration. Any `LC_*` passes too. Nothing else of the server's
/// environment does unless `SOLVERGATE_PASS_ENV` names it.
pub const PASSED_VARIABLES: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LANGUAGE",
    "TZ",
    "MZN_SOLVER_PATH",
    "MZN_STDLIB_DIR",
];

/// Environment variable choosing how limits are enforced: `auto`,
/// `rlimit` or `off`.
pub const LIMITS_VAR: &str = "SOLVERGATE_LIMITS";

/// Environment variable: how many warm CP-SAT forkers to keep (0: none).
pub const CPSAT_WARM_VAR: &str = "SOLVERGATE_CPSAT_WARM";

/// Warm CP-SAT forkers kept when `SOLVERGATE_CPSAT_WARM` is unset.
pub const DEFAULT_CPSAT_WARM: usize = 2;
/// The most warm CP-SAT forkers `SOLVERGATE_CPSAT_WARM` may ask for.
pub const MAX_CPSAT_WARM: usize = 8;

/// Environment variable choosing where background jobs run: `local`
/// (default) or `slurm`.
pub const JOB_BACKEND_VAR: &str = "SOLVERGATE_JOB_BACKEND";
/// Environment variable naming the Slurm backend's shared work directory.
pub const SLURM_WORKDIR_VAR: &str = "SOLVERGATE_SLURM_WORKDIR";

/// Where background jobs run. Synchronous tools always run locally.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum JobBackendKind {
    /// In this process's executor (the default).
    #[default]
    Local,
    /// One Slurm job per solve job, portfolio attempt and CP-SAT job.
    Slurm,
}

/// How the Slurm backend submits (`SOLVERGATE_SLURM_*`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SlurmSettings {
    /// `SOLVERGATE_SLURM_PARTITION`: `--partition`; the cluster's default
    /// partition when unset.
    pub partition: Option<String>,
    /// `SOLVERGATE_SLURM_ACCOUNT`: `--account`, when set.
    pub account: Option<String>,
    /// `SOLVERGATE_SLURM_WORKDIR`: a directory every node sees at the same
    /// path; each job's task and result live in a directory of its own
    /// there. Required with the Slurm backend.
    pub workdir: Option<PathBuf>,
    /// `SOLVERGATE_SLURM_MEMORY`: `--mem` (e.g. `2G`), when set.
    pub memory: Option<String>,
}

/// Bounds of a background job registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobBounds {
    /// Jobs running at once (at least 1).
    pub max_running: usize,
    /// Jobs waiting for a slot (at least 0).
    pub max_queued: usize,
    /// Finished jobs kept for polling, oldest evicted first (at least 1).
    pub max_retained_terminal: usize,
}

impl Default for JobBounds {
    fn default() -> Self {
        JobBounds {
            max_running: 4,
            max_queued: 16,
            max_retained_terminal: 64,
        }
    }
}

/// Everything the environment can configure.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// `SOLVERGATE_RUNTIME_DIR`, when set and not empty.
    pub runtime_dir: Option<PathBuf>,
    /// `SOLVERGATE_CPSAT_PYTHON`, when set and not empty.
    pub cpsat_python: Option<PathBuf>,
    /// `SOLVERGATE_MAX_RUNNING_JOBS`, `..._MAX_QUEUED_JOBS`,
    /// `..._MAX_RETAINED_TERMINAL`: the MiniZinc job registry.
    pub jobs: JobBounds,
    /// `SOLVERGATE_CPSAT_MAX_RUNNING_JOBS`, `..._MAX_QUEUED_JOBS`,
    /// `..._MAX_RETAINED_TERMINAL`: the CP-SAT job registry.
    pub cpsat_jobs: JobBounds,
    /// `PYTHONPATH` as the server got it: CP-SAT scripts keep it, after
    /// the helper module's directory.
    pub pythonpath: Option<std::ffi::OsString>,
    /// `PATH` as the server got it: where `install-runtime` looks for a
    /// Python to build the CP-SAT venv with.
    pub search_path: Option<std::ffi::OsString>,
    /// `SOLVERGATE_CPSAT_WARM`: warm CP-SAT forkers the server keeps
    /// (default 2, at most `MAX_CPSAT_WARM`; 0 turns them off).
    pub cpsat_warm: usize,
    /// `SOLVERGATE_PLANNER_MAX_RESULTS`: planner results kept on disk.
    pub planner_max_results: usize,
    /// `SOLVERGATE_MAX_RESPONSE_BYTES`: the most a tool result's content
    /// takes in a response (at least, and by default, [`DEFAULT_RESPONSE_LIMIT`]).
    pub response_limit: usize,
    /// `SOLVERGATE_TEST_HOOKS=1`, honoured in debug builds only: lets tests
    /// make a solve panic on purpose (see `minizinc::TEST_PANIC_MARKER`).
    /// Always false in a release build.
    pub test_hooks: bool,
    /// `SOLVERGATE_SANDBOX` (default on; `0` turns it off): confine
    /// scripts, checkers and solvers (Landlock, no network); the CLI's
    /// `--no-sandbox` turns it off too.
    pub sandbox: bool,
    /// `SOLVERGATE_SANDBOX_WRITABLE`: directories (absolute, existing,
    /// `:`-separated) sandboxed children may write beneath besides their
    /// scratch dir, e.g. where file scripts keep their output.
    pub sandbox_writable: Vec<PathBuf>,
    /// `SOLVERGATE_READ_ROOTS`: directories (absolute, existing,
    /// `:`-separated) sandboxed children may read beneath besides their
    /// runtime, the system's files, their scratch dir and what a call names.
    pub read_roots: Vec<PathBuf>,
    /// `SOLVERGATE_PASS_ENV`: more of the server's variables, by name
    /// (comma-separated), that children see besides [`PASSED_VARIABLES`].
    pub pass_env: Vec<String>,
    /// `SOLVERGATE_MEMORY_LIMIT_MB`, `SOLVERGATE_MAX_PROCESSES`,
    /// `SOLVERGATE_FILE_SIZE_LIMIT_MB`, `SOLVERGATE_SCRATCH_LIMIT_MB`: what
    /// every run's tree may use (defaults in [`ResourceLimits::defaults`]).
    pub limits: ResourceLimits,
    /// `SOLVERGATE_LIMITS`: `auto` (a cgroup where the host lets us make
    /// one, rlimits otherwise), `rlimit` (rlimits only) or `off`.
    pub limits_mode: LimitsMode,
    /// `SOLVERGATE_HTTP_TOKEN`, when set and not empty: the bearer token
    /// every request to `serve --http` must carry.
    pub http_token: Option<String>,
    /// `SOLVERGATE_HTTP_MAX_SESSIONS`: MCP sessions `serve --http` keeps at
    /// once (each with its own job bounds).
    pub http_max_sessions: usize,
    /// `SOLVERGATE_JOB_BACKEND`: `local` (default) or `slurm`; `stdio
    /// --job-backend` overrides it.
    pub job_backend: JobBackendKind,
    /// `SOLVERGATE_SLURM_PARTITION`, `..._ACCOUNT`, `..._WORKDIR`,
    /// `..._MEMORY`: how the Slurm backend submits.
    pub slurm: SlurmSettings,
}

/// Sessions `serve --http` keeps at once unless configured.
pub const DEFAULT_HTTP_MAX_SESSIONS: usize = 64;

/// A variable whose value cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("{variable}: {problem}")]
pub struct SettingsError {
    /// The environment variable, by name (`SOLVERGATE_RUNTIME_DIR`, ...).
    pub variable: &'static str,
    /// What is wrong with its value and what it must be, in words.
    pub problem: String,
}

/// This process's whole environment, which only the children that never
/// run user code start from (the installer's pip, Slurm's commands).
pub fn server_environment() -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    std::env::vars_os().collect()
}

/// Where MiniZinc is told to look beyond its own tree: the dirs of
/// `MZN_SOLVER_PATH` (solver configurations) and `MZN_STDLIB_DIR` (its
/// library), both of which pass to runs, so their runs must read them.
pub fn minizinc_search_dirs() -> Vec<std::path::PathBuf> {
    let mut dirs: Vec<std::path::PathBuf> = std::env::var_os("MZN_SOLVER_PATH")
        .map(|value| std::env::split_paths(&value).collect())
        .unwrap_or_default();
    dirs.extend(std::env::var_os("MZN_STDLIB_DIR").map(std::path::PathBuf::from));
    dirs
}

/// What of this process's environment a child starts with: the variables
/// of [`PASSED_VARIABLES`], any `LC_*`, and those `pass_env` names (the
/// executor then adds what the run needs). Never the HTTP token, an API
/// key or anything else the server was given.
pub fn passed_environment(pass_env: &[String]) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    std::env::vars_os()
        .filter(|(name, _)| {
            name.to_str().is_some_and(|name| {
                PASSED_VARIABLES.contains(&name)
                    || name.starts_with("LC_")
                    || pass_env.iter().any(|passed| passed == name)
            })
        })
        .collect()
}

impl Settings {
    /// Reads the process environment.
    pub fn from_env() -> Result<Settings, SettingsError> {
        Settings::from_lookup(|name| std::env::var_os(name))
    }

    /// Reads settings through `lookup`, so tests need not touch the real
    /// environment.
    pub fn from_lookup(
        lookup: impl Fn(&str) -> Option<std::ffi::OsString>,
    ) -> Result<Settings, SettingsError> {
        let absolute_path = |variable: &'static str, what: &str| {
            let value = lookup(variable)
                .filter(|value| !value.is_empty())
                .map(PathBuf::from);
            match value {
                Some(path) if !path.is_absolute() => Err(SettingsError {
                    variable,
                    problem: format!("must be an absolute path to {what}, got {}", path.display()),
                }),
                other => Ok(other),
            }
        };
        let count = |variable: &'static str, default: usize, minimum: usize| {
            let Some(value) = lookup(variable).filter(|value| !value.is_empty()) else {
                return Ok(default);
            };
            let text = value.to_string_lossy();
            match text.trim().parse::<usize>() {
                Ok(number) if number >= minimum => Ok(number),
                _ => Err(SettingsError {
                    variable,
                    problem: format!("must be a whole number of at least {minimum}, got {text:?}"),
                }),
            }
        };
        let defaults = JobBounds::default();
        let bounds = |running: &'static str, queued: &'static str, retained: &'static str| {
            Ok::<_, SettingsError>(JobBounds {
                max_running: count(running, defaults.max_running, 1)?,
                max_queued: count(queued, defaults.max_queued, 0)?,
                max_retained_terminal: count(retained, defaults.max_retained_terminal, 1)?,
            })
        };
        let text = |variable: &'static str| {
            lookup(variable)
                .filter(|value| !value.is_empty())
                .map(|value| value.to_string_lossy().trim().to_owned())
                .filter(|value| !value.is_empty())
        };
        let limit = |kind: LimitKind, default: u64| {
            count(
                kind.variable(),
                usize::try_from(default).unwrap_or(usize::MAX),
                1,
            )
            .map(|value| value as u64)
        };
        let default_limits = ResourceLimits::defaults();
        let dirs = |variable: &'static str| -> Result<Vec<PathBuf>, SettingsError> {
            let Some(value) = lookup(variable).filter(|value| !value.is_empty()) else {
                return Ok(Vec::new());
            };
            std::env::split_paths(&value)
                .filter(|dir| !dir.as_os_str().is_empty())
                .map(|dir| {
                    if dir.is_absolute() && dir.is_dir() {
                        Ok(dir)
                    } else {
                        Err(SettingsError {
                            variable,
                            problem: format!(
                                "must list existing directories by absolute path, separated by `:`; {} is not one",
                                dir.display()
                            ),
                        })
                    }
                })
                .collect()
        };
        let pass_env = text(PASS_ENV_VAR)
            .map(|names| {
                names
                    .split(',')
                    .map(str::trim)
                    .filter(|name| !name.is_empty())
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default();
        if let Some(bad) = pass_env
            .iter()
            .find(|name| name.contains('=') || name.starts_with("SOLVERGATE_"))
        {
            return Err(SettingsError {
                variable: PASS_ENV_VAR,
                problem: format!(
                    "must name variables separated by commas, none of solvergate's own (SOLVERGATE_*); {bad:?} is not one"
                ),
            });
        }
        Ok(Settings {
            sandbox_writable: dirs(SANDBOX_WRITABLE_VAR)?,
            read_roots: dirs(READ_ROOTS_VAR)?,
            pass_env,
            limits: ResourceLimits {
                memory_mb: limit(LimitKind::Memory, default_limits.memory_mb)?,
                processes: limit(LimitKind::Processes, default_limits.processes)?,
                file_size_mb: limit(LimitKind::FileSize, default_limits.file_size_mb)?,
                scratch_mb: limit(LimitKind::Scratch, default_limits.scratch_mb)?,
            },
            limits_mode: match text(LIMITS_VAR).as_deref() {
                None | Some("auto") => LimitsMode::Auto,
                Some("rlimit") => LimitsMode::Rlimit,
                Some("off") => LimitsMode::Off,
                Some(other) => {
                    return Err(SettingsError {
                        variable: LIMITS_VAR,
                        problem: format!("must be auto, rlimit or off, got {other:?}"),
                    });
                }
            },
            job_backend: match text(JOB_BACKEND_VAR).as_deref() {
                None | Some("local") => JobBackendKind::Local,
                Some("slurm") => JobBackendKind::Slurm,
                Some(other) => {
                    return Err(SettingsError {
                        variable: JOB_BACKEND_VAR,
                        problem: format!("must be local or slurm, got {other:?}"),
                    });
                }
            },
            slurm: SlurmSettings {
                partition: text("SOLVERGATE_SLURM_PARTITION"),
                account: text("SOLVERGATE_SLURM_ACCOUNT"),
                workdir: absolute_path(
                    SLURM_WORKDIR_VAR,
                    "a work directory every Slurm node sees at the same path",
                )?,
                memory: text("SOLVERGATE_SLURM_MEMORY"),
            },
            jobs: bounds(
                "SOLVERGATE_MAX_RUNNING_JOBS",
                "SOLVERGATE_MAX_QUEUED_JOBS",
                "SOLVERGATE_MAX_RETAINED_TERMINAL",
            )?,
            cpsat_jobs: bounds(
                "SOLVERGATE_CPSAT_MAX_RUNNING_JOBS",
                "SOLVERGATE_CPSAT_MAX_QUEUED_JOBS",
                "SOLVERGATE_CPSAT_MAX_RETAINED_TERMINAL",
            )?,
            runtime_dir: absolute_path(
                RUNTIME_DIR_VAR,
                "a runtime root (the directory holding bin/minizinc)",
            )?,
            cpsat_python: absolute_path(
                CPSAT_PYTHON_VAR,
                "a Python interpreter that can import ortools",
            )?,
            pythonpath: lookup("PYTHONPATH").filter(|value| !value.is_empty()),
            search_path: lookup("PATH").filter(|value| !value.is_empty()),
            cpsat_warm: match count(CPSAT_WARM_VAR, DEFAULT_CPSAT_WARM, 0)? {
                size if size <= MAX_CPSAT_WARM => size,
                size => {
                    return Err(SettingsError {
                        variable: CPSAT_WARM_VAR,
                        problem: format!("must be at most {}, got {size}", MAX_CPSAT_WARM),
                    });
                }
            },
            planner_max_results: count(
                "SOLVERGATE_PLANNER_MAX_RESULTS",
                DEFAULT_PLANNER_MAX_RESULTS,
                1,
            )?,
            response_limit: count(
                "SOLVERGATE_MAX_RESPONSE_BYTES",
                DEFAULT_RESPONSE_LIMIT,
                DEFAULT_RESPONSE_LIMIT,
            )?,
            test_hooks: cfg!(debug_assertions)
                && lookup("SOLVERGATE_TEST_HOOKS").is_some_and(|value| value == "1"),
            sandbox: match lookup("SOLVERGATE_SANDBOX")
                .as_deref()
                .and_then(|v| v.to_str())
            {
                Some("0" | "false") => false,
                None | Some("" | "1" | "true") => true,
                Some(other) => {
                    return Err(SettingsError {
                        variable: "SOLVERGATE_SANDBOX",
                        problem: format!("must be 1 or 0, got {other:?}"),
                    });
                }
            },
            http_max_sessions: count("SOLVERGATE_HTTP_MAX_SESSIONS", DEFAULT_HTTP_MAX_SESSIONS, 1)?,
            http_token: match lookup(HTTP_TOKEN_VAR).filter(|value| !value.is_empty()) {
                None => None,
                Some(value) => match value.into_string() {
                    Ok(token) if !token.trim().is_empty() && token.trim() == token => Some(token),
                    _ => {
                        return Err(SettingsError {
                            variable: HTTP_TOKEN_VAR,
                            problem: "must be printable text without surrounding spaces (it is sent in an Authorization header)".into(),
                        });
                    }
                },
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_default_validate_and_name_their_variable() {
        let settings = Settings::from_lookup(|_| None).unwrap();
        assert_eq!(settings.limits, ResourceLimits::defaults());
        assert_eq!(settings.limits_mode, LimitsMode::Auto);
        let low = Settings::from_lookup(|name| match name {
            "SOLVERGATE_MEMORY_LIMIT_MB" => Some("512".into()),
            "SOLVERGATE_MAX_PROCESSES" => Some("64".into()),
            "SOLVERGATE_FILE_SIZE_LIMIT_MB" => Some("8".into()),
            "SOLVERGATE_SCRATCH_LIMIT_MB" => Some("16".into()),
            "SOLVERGATE_LIMITS" => Some("rlimit".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(
            low.limits,
            ResourceLimits {
                memory_mb: 512,
                processes: 64,
                file_size_mb: 8,
                scratch_mb: 16
            }
        );
        assert_eq!(low.limits_mode, LimitsMode::Rlimit);
        for (variable, value) in [
            ("SOLVERGATE_MEMORY_LIMIT_MB", "0"),
            ("SOLVERGATE_MAX_PROCESSES", "lots"),
            ("SOLVERGATE_FILE_SIZE_LIMIT_MB", "-1"),
            ("SOLVERGATE_SCRATCH_LIMIT_MB", "1.5"),
            ("SOLVERGATE_LIMITS", "cgroup"),
            ("SOLVERGATE_SANDBOX_WRITABLE", "relative/dir"),
            (
                "SOLVERGATE_SANDBOX_WRITABLE",
                "/nonexistent/solvergate-test",
            ),
        ] {
            let error =
                Settings::from_lookup(|name| (name == variable).then(|| value.into())).unwrap_err();
            assert_eq!(error.variable, variable);
        }
    }

    #[test]
    fn empty_runtime_dir_is_unset() {
        let settings = Settings::from_lookup(|_| Some("".into())).unwrap();
        assert!(settings.runtime_dir.is_none());
    }

    #[test]
    fn job_bounds_default_and_validate() {
        let settings = Settings::from_lookup(|_| None).unwrap();
        assert_eq!(settings.jobs, JobBounds::default());
        let custom = Settings::from_lookup(|name| match name {
            "SOLVERGATE_MAX_RUNNING_JOBS" => Some("2".into()),
            "SOLVERGATE_MAX_QUEUED_JOBS" => Some("0".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!((custom.jobs.max_running, custom.jobs.max_queued), (2, 0));
        for (variable, value) in [
            ("SOLVERGATE_CPSAT_MAX_QUEUED_JOBS", "x"),
            ("SOLVERGATE_MAX_RUNNING_JOBS", "0"),
            ("SOLVERGATE_MAX_QUEUED_JOBS", "-1"),
            ("SOLVERGATE_MAX_RETAINED_TERMINAL", "many"),
        ] {
            let error =
                Settings::from_lookup(|name| (name == variable).then(|| value.into())).unwrap_err();
            assert!(error.to_string().starts_with(variable), "{error}");
        }
    }

    #[test]
    fn the_search_path_is_read_here() {
        let settings =
            Settings::from_lookup(|name| (name == "PATH").then(|| "/usr/bin:/bin".into())).unwrap();
        assert_eq!(settings.search_path, Some("/usr/bin:/bin".into()));
        assert!(
            Settings::from_lookup(|_| None)
                .unwrap()
                .search_path
                .is_none()
        );
    }

    #[test]
    fn http_token_is_read_once_and_checked() {
        assert!(
            Settings::from_lookup(|_| None)
                .unwrap()
                .http_token
                .is_none()
        );
        let with = |value: &str| {
            let value = value.to_owned();
            Settings::from_lookup(move |name| {
                (name == HTTP_TOKEN_VAR).then(|| value.clone().into())
            })
        };
        assert_eq!(with("abc").unwrap().http_token.as_deref(), Some("abc"));
        assert!(with("").unwrap().http_token.is_none());
        let error = with(" padded ").unwrap_err();
        assert!(error.to_string().starts_with(HTTP_TOKEN_VAR), "{error}");
    }

    #[test]
    fn warm_pool_size_defaults_and_is_bounded() {
        let settings = Settings::from_lookup(|_| None).unwrap();
        assert_eq!(settings.cpsat_warm, DEFAULT_CPSAT_WARM);
        let off = Settings::from_lookup(|name| (name == CPSAT_WARM_VAR).then(|| "0".into()));
        assert_eq!(off.unwrap().cpsat_warm, 0);
        for bad in ["99", "two", "-1"] {
            let error = Settings::from_lookup(|name| (name == CPSAT_WARM_VAR).then(|| bad.into()))
                .unwrap_err();
            assert!(error.to_string().starts_with(CPSAT_WARM_VAR), "{error}");
        }
    }

    #[test]
    fn the_response_bound_defaults_and_only_rises() {
        const VAR: &str = "SOLVERGATE_MAX_RESPONSE_BYTES";
        let settings = Settings::from_lookup(|_| None).unwrap();
        assert_eq!(settings.response_limit, DEFAULT_RESPONSE_LIMIT);
        let raised = Settings::from_lookup(|name| (name == VAR).then(|| "2097152".into()));
        assert_eq!(raised.unwrap().response_limit, 2 * 1024 * 1024);
        for bad in ["1000", "131071", "lots", "-1"] {
            let error =
                Settings::from_lookup(|name| (name == VAR).then(|| bad.into())).unwrap_err();
            assert_eq!(
                error.to_string(),
                format!("{VAR}: must be a whole number of at least 131072, got {bad:?}")
            );
        }
    }

    #[test]
    fn job_backend_and_slurm_settings() {
        let settings = Settings::from_lookup(|_| None).unwrap();
        assert_eq!(settings.job_backend, JobBackendKind::Local);
        assert_eq!(settings.slurm, SlurmSettings::default());
        let slurm = Settings::from_lookup(|name| match name {
            JOB_BACKEND_VAR => Some("slurm".into()),
            "SOLVERGATE_SLURM_PARTITION" => Some("debug".into()),
            SLURM_WORKDIR_VAR => Some("/shared/solvergate".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(slurm.job_backend, JobBackendKind::Slurm);
        assert_eq!(slurm.slurm.partition.as_deref(), Some("debug"));
        assert_eq!(
            slurm.slurm.workdir.as_deref(),
            Some(std::path::Path::new("/shared/solvergate"))
        );
        for (variable, value) in [(JOB_BACKEND_VAR, "kubernetes"), (SLURM_WORKDIR_VAR, "work")] {
            let error =
                Settings::from_lookup(|name| (name == variable).then(|| value.into())).unwrap_err();
            assert!(error.to_string().starts_with(variable), "{error}");
        }
    }

    #[test]
    fn relative_runtime_dir_names_the_variable() {
        let error =
            Settings::from_lookup(|name| (name == RUNTIME_DIR_VAR).then(|| "minizinc".into()))
                .unwrap_err();
        assert!(error.to_string().starts_with("SOLVERGATE_RUNTIME_DIR:"));
    }
}
