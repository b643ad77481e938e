//! `solvergate install-runtime --only cpsat` for real: a venv built with a
//! system Python and filled by pip from the registry with the manifest's
//! hash-locked pins. Needs the package registry (CI has it).

use std::path::{Path, PathBuf};

mod common;
use common::{Home, stderr};

const BUILTIN: &str = include_str!("../runtime-manifest.toml");

/// A home whose pip shares its downloads between runs (pip still checks
/// every hash).
fn pip_home() -> Home {
    Home::new().with_env(
        "PIP_CACHE_DIR",
        Path::new(env!("CARGO_TARGET_TMPDIR")).join("pip-cache"),
    )
}

/// The venv `install-runtime --only cpsat` builds, and what it leaves.
impl Home {
    fn venv(&self) -> PathBuf {
        self.path().join("data/solvergate/cpsat")
    }

    /// What is in the data dir besides `keep`.
    fn leftovers(&self, keep: &[&str]) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(self.path().join("data/solvergate")) else {
            return Vec::new();
        };
        entries
            .flatten()
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .filter(|name| !keep.contains(&name.as_str()))
            .collect()
    }
}

/// The reason PyPI cannot be reached from here, if it cannot: these tests
/// install real packages and say why they did not run rather than fail.
fn pypi_unreachable() -> Option<String> {
    use std::net::ToSocketAddrs;
    let addresses = match ("pypi.org", 443).to_socket_addrs() {
        Ok(addresses) => addresses.collect::<Vec<_>>(),
        Err(error) => return Some(format!("pypi.org does not resolve ({error})")),
    };
    let reachable = addresses.iter().any(|address| {
        std::net::TcpStream::connect_timeout(address, std::time::Duration::from_secs(5)).is_ok()
    });
    (!reachable).then(|| "pypi.org:443 does not answer".to_owned())
}

#[test]
fn builds_a_hash_locked_venv_that_imports_cp_sat() {
    if let Some(reason) = pypi_unreachable() {
        eprintln!("skipped: {reason}; the CP-SAT install tests need PyPI");
        return;
    }
    let home = pip_home();
    let output = home.run(&["install-runtime", "--only", "cpsat", "--yes"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("Installed OR-Tools 9.15.6755"), "{stdout}");

    let python = home.venv().join("bin/python");
    assert!(python.exists());
    let marker: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(home.venv().join(".solvergate-runtime.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(marker["version"], "9.15.6755");
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(home.config_file()).unwrap()).unwrap();
    assert_eq!(config["cpsat_python"], python.to_str().unwrap());
    assert!(
        home.leftovers(&["cpsat"]).is_empty(),
        "{:?}",
        home.leftovers(&["cpsat"])
    );

    let check = home.run(&["check-runtime", "--only", "cpsat", "--json"]);
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );
    let status: serde_json::Value = serde_json::from_slice(&check.stdout).unwrap();
    assert_eq!(status["cpsat"]["ortools_version"], "9.15.6755");
    assert_eq!(status["cpsat"]["source"], "config");

    // Replacing our own venv needs a confirmation nobody can give here.
    let again = home.run(&["install-runtime", "--only", "cpsat"]);
    assert_eq!(again.status.code(), Some(1));
    assert!(stderr(&again).contains("--yes"), "{}", stderr(&again));
    assert!(python.exists(), "a refused re-install keeps the venv");
}

#[test]
fn a_wrong_pin_is_refused_and_leaves_nothing() {
    if let Some(reason) = pypi_unreachable() {
        eprintln!("skipped: {reason}; the CP-SAT install tests need PyPI");
        return;
    }
    let home = pip_home();
    // Every ortools hash in the manifest replaced by one that matches no wheel.
    let start = BUILTIN.find("name = \"ortools\"").unwrap();
    let list_start = start + BUILTIN[start..].find("sha256 = [").unwrap();
    let list_end = list_start + BUILTIN[list_start..].find(']').unwrap() + 1;
    let manifest_text = format!(
        "{}sha256 = [\"{}\"]{}",
        &BUILTIN[..list_start],
        "0".repeat(64),
        &BUILTIN[list_end..]
    );
    let manifest = home.path().join("manifest.toml");
    std::fs::write(&manifest, manifest_text).unwrap();
    let output = home.run(&[
        "install-runtime",
        "--only",
        "cpsat",
        "--yes",
        "--manifest",
        manifest.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let message = stderr(&output).to_ascii_lowercase();
    assert!(message.contains("hash"), "{message}");
    assert!(!home.venv().exists());
    assert!(!home.config_file().exists());
    assert!(home.leftovers(&[]).is_empty(), "{:?}", home.leftovers(&[]));
}
