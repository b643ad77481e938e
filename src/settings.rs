//! Settings read from the environment once, at start-up.
//!
//! Nothing below the faces reads `std::env`: the CLI builds one [`Settings`]
//! and hands it down. A value that cannot be used stops start-up with a
//! message naming the variable.

use std::path::PathBuf;

/// Environment variable that overrides the MiniZinc runtime root.
pub const RUNTIME_DIR_VAR: &str = "SOLVERGATE_RUNTIME_DIR";

/// Everything the environment can configure.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// `SOLVERGATE_RUNTIME_DIR`, when set and not empty.
    pub runtime_dir: Option<PathBuf>,
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
        let runtime_dir = lookup(RUNTIME_DIR_VAR)
            .filter(|value| !value.is_empty())
            .map(PathBuf::from);
        if let Some(dir) = &runtime_dir
            && !dir.is_absolute()
        {
            return Err(SettingsError {
                variable: RUNTIME_DIR_VAR,
                problem: format!(
                    "must be an absolute path to a runtime root (the directory holding bin/minizinc), got {}",
                    dir.display()
                ),
            });
        }
        Ok(Settings { runtime_dir })
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
