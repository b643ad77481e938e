//! Settings read from the environment once, at start-up.
//!
//! Nothing below the faces reads `std::env`: the CLI builds one [`Settings`]
//! and hands it down. A value that cannot be used stops start-up with a
//! message naming the variable.

use std::path::PathBuf;

/// Environment variable that overrides the MiniZinc runtime root.
pub const RUNTIME_DIR_VAR: &str = "SOLVERGATE_RUNTIME_DIR";

/// Environment variable naming the CP-SAT runtime's Python interpreter.
pub const CPSAT_PYTHON_VAR: &str = "SOLVERGATE_CPSAT_PYTHON";

/// Everything the environment can configure.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// `SOLVERGATE_RUNTIME_DIR`, when set and not empty.
    pub runtime_dir: Option<PathBuf>,
    /// `SOLVERGATE_CPSAT_PYTHON`, when set and not empty.
    pub cpsat_python: Option<PathBuf>,
}

/// A variable whose value cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("{variable}: {problem}")]
pub struct SettingsError {
    pub variable: &'static str,
    pub problem: String,
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
        Ok(Settings {
            runtime_dir: absolute_path(
                RUNTIME_DIR_VAR,
                "a runtime root (the directory holding bin/minizinc)",
            )?,
            cpsat_python: absolute_path(
                CPSAT_PYTHON_VAR,
                "a Python interpreter that can import ortools",
            )?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_runtime_dir_is_unset() {
        let settings = Settings::from_lookup(|_| Some("".into())).unwrap();
        assert!(settings.runtime_dir.is_none());
    }

    #[test]
    fn relative_runtime_dir_names_the_variable() {
        let error = Settings::from_lookup(|_| Some("minizinc".into())).unwrap_err();
        assert!(error.to_string().starts_with("SOLVERGATE_RUNTIME_DIR:"));
    }
}
