//! The persisted install config: `install.json` in the per-user config dir.
//!
//! It remembers where the MiniZinc runtime lives so later commands and the
//! server find it without flags. A config that cannot be read is reported
//! as a warning and ignored, never fatal: the caller falls back to the next
//! place in the resolution order. Writes are atomic (temp file + rename), so
//! a crash never leaves a half-written config.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// File name of the config inside the config dir.
pub const CONFIG_FILE: &str = "install.json";

/// What `install.json` holds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct InstallConfig {
    /// Root of the MiniZinc runtime (the directory holding `bin/minizinc`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_dir: Option<PathBuf>,
    /// Python interpreter of the CP-SAT runtime (it can import ortools).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpsat_python: Option<PathBuf>,
}

/// The outcome of reading the config: a value, nothing, or a warning.
#[derive(Debug)]
pub enum ConfigRead {
    /// There is no `install.json`.
    Missing,
    /// The config, read and parsed.
    Found(InstallConfig),
    /// It cannot be read or parsed: the warning to print (it is then ignored).
    Corrupt(String),
}

/// Reads `install.json` from `config_dir`.
pub fn read(config_dir: &Path) -> ConfigRead {
    let path = config_dir.join(CONFIG_FILE);
    let text = match fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return ConfigRead::Missing,
        Err(error) => {
            return ConfigRead::Corrupt(format!("could not read {}: {error}", path.display()));
        }
    };
    match serde_json::from_str::<InstallConfig>(&text) {
        Ok(config) => ConfigRead::Found(config),
        Err(error) => ConfigRead::Corrupt(format!(
            "{} is not a valid install config ({error}); ignoring it",
            path.display()
        )),
    }
}

/// Writes `config` to `config_dir/install.json` atomically, creating the dir.
pub fn write(config_dir: &Path, config: &InstallConfig) -> std::io::Result<PathBuf> {
    fs::create_dir_all(config_dir)?;
    let path = config_dir.join(CONFIG_FILE);
    let mut staged = tempfile::NamedTempFile::new_in(config_dir)?;
    let text = serde_json::to_string_pretty(config).map_err(std::io::Error::other)?;
    staged.write_all(text.as_bytes())?;
    staged.write_all(b"\n")?;
    staged.as_file().sync_all()?;
    staged.persist(&path).map_err(|error| error.error)?;
    Ok(path)
}

/// Reads the config (a missing or corrupt one counts as empty), applies
/// `change` and writes it back, so one setting never erases another.
pub fn update(
    config_dir: &Path,
    change: impl FnOnce(&mut InstallConfig),
) -> std::io::Result<PathBuf> {
    let mut config = match read(config_dir) {
        ConfigRead::Found(config) => config,
        ConfigRead::Missing | ConfigRead::Corrupt(_) => InstallConfig::default(),
    };
    change(&mut config);
    write(config_dir, &config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_reports_corruption() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(read(dir.path()), ConfigRead::Missing));

        let config = InstallConfig {
            runtime_dir: Some(PathBuf::from("/opt/minizinc")),
            cpsat_python: None,
        };
        write(dir.path(), &config).unwrap();
        match read(dir.path()) {
            ConfigRead::Found(found) => assert_eq!(found, config),
            other => panic!("expected a config, got {other:?}"),
        }

        update(dir.path(), |config| {
            config.cpsat_python = Some(PathBuf::from("/venv/bin/python"))
        })
        .unwrap();
        match read(dir.path()) {
            ConfigRead::Found(found) => {
                assert_eq!(
                    found.runtime_dir, config.runtime_dir,
                    "update keeps other settings"
                );
                assert_eq!(found.cpsat_python, Some(PathBuf::from("/venv/bin/python")));
            }
            other => panic!("expected a config, got {other:?}"),
        }

        fs::write(dir.path().join(CONFIG_FILE), "{not json").unwrap();
        match read(dir.path()) {
            ConfigRead::Corrupt(message) => assert!(message.contains("install.json")),
            other => panic!("expected a warning, got {other:?}"),
        }
    }
}
