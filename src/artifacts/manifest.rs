//! `.solvergate-artifact.json`: what a saved directory holds, how it was
//! verified, and how to run it again.
//!
//! The manifest is the only file a save writes that is not a verbatim input
//! or result; replay and `artifacts ls` read nothing else to decide what to
//! do. A manifest we cannot parse, or one of another format, marks a
//! directory we will not touch. Bump [`FORMAT_VERSION`] when a field changes
//! meaning; readers refuse versions newer than theirs.

use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Number, Value};

use crate::minizinc::SolveControls;
use crate::sha256_hex;

/// The manifest's file name inside a saved directory.
pub const MANIFEST_FILE: &str = ".solvergate-artifact.json";
/// The `format` value that marks a manifest as ours.
pub const FORMAT: &str = "solvergate-artifact";
/// The manifest layout this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// Which runtime a saved artifact runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Backend {
    Minizinc,
    CpsatPython,
    /// A load plan (`plan_load`'s result and its cohort).
    Planner,
}

impl Backend {
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Minizinc => "minizinc",
            Backend::CpsatPython => "cpsat_python",
            Backend::Planner => "planner",
        }
    }
}

/// One saved file: its role, fixed name, hash and size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SavedFile {
    /// `model`, `data`, `checker`, `problem`, `solve_result`, `solution`,
    /// `replay_config` or `experiment_log`.
    pub role: String,
    /// The bare file name inside the saved directory.
    pub name: String,
    pub sha256: String,
    pub bytes: u64,
}

impl SavedFile {
    pub fn of(role: &str, name: &str, bytes: &[u8]) -> SavedFile {
        SavedFile {
            role: role.to_owned(),
            name: name.to_owned(),
            sha256: sha256_hex(bytes),
            bytes: bytes.len() as u64,
        }
    }
}

/// How a MiniZinc artifact was solved.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct MinizincRecord {
    /// Canonical solver id.
    pub solver: String,
    pub solver_version: String,
    pub timeout_ms: i64,
    pub solve_controls: SolveControls,
}

/// An objective threshold a CP-SAT save had to meet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Expectation {
    /// `maximize` or `minimize`.
    pub objective_sense: String,
    pub objective_threshold: f64,
}

/// How a CP-SAT artifact was run.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CpsatRecord {
    pub script_timeout_ms: i64,
    /// Only when it was given explicitly (else the script's budget).
    pub checker_timeout_ms: Option<i64>,
    /// Passed as `SOLVERGATE_CPSAT_SEED`.
    pub replay_seed: Option<i64>,
    /// SHA256 of `replay-config.json`, when a config was given.
    pub replay_config_sha256: Option<String>,
    pub expectation: Option<Expectation>,
}

/// What the verifying run showed.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct VerificationRecord {
    /// The run's status (`optimal`, `satisfied`, `feasible`, ...).
    pub status: String,
    pub objective: Option<Number>,
    /// The checker's status, when a checker ran.
    pub checker_status: Option<String>,
    /// MiniZinc: `solved` or `checked`; CP-SAT: `reported`, `expectation`
    /// or `checked` — the highest gate that passed.
    pub level: String,
}

/// The whole manifest.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ArtifactManifest {
    /// Always `solvergate-artifact`.
    pub format: String,
    pub format_version: u32,
    /// The solvergate version that saved it.
    pub tool_version: String,
    /// RFC 3339, UTC.
    pub saved_at: String,
    pub backend: Backend,
    /// `minizinc --version`'s first line, or the OR-Tools version.
    pub runtime_version: Option<String>,
    pub minizinc: Option<MinizincRecord>,
    pub cpsat: Option<CpsatRecord>,
    /// Present for the `planner` backend.
    #[serde(default)]
    pub planner: Option<super::plan::PlannerRecord>,
    pub verification: VerificationRecord,
    /// A compact summary of the race or experiment the save came from.
    pub experiment: Option<Value>,
    /// Every file the save wrote besides this manifest.
    pub files: Vec<SavedFile>,
}

impl ArtifactManifest {
    /// A manifest of this build, saved now; the caller fills in the
    /// backend's record and any experiment summary.
    pub fn new(
        backend: Backend,
        runtime_version: Option<String>,
        verification: VerificationRecord,
        files: Vec<SavedFile>,
    ) -> ArtifactManifest {
        ArtifactManifest {
            format: FORMAT.to_owned(),
            format_version: FORMAT_VERSION,
            tool_version: env!("CARGO_PKG_VERSION").to_owned(),
            saved_at: super::now(),
            backend,
            runtime_version,
            minizinc: None,
            cpsat: None,
            planner: None,
            verification,
            experiment: None,
            files,
        }
    }

    /// Reads and checks the manifest in `dir`; the problem in words when it
    /// is missing, unreadable, not ours or too new.
    pub fn read(dir: &Path) -> Result<ArtifactManifest, String> {
        let path = dir.join(MANIFEST_FILE);
        let meta = std::fs::metadata(&path).map_err(|error| match error.kind() {
            std::io::ErrorKind::NotFound => format!("there is no {MANIFEST_FILE} in it"),
            _ => format!("{MANIFEST_FILE}: {error}"),
        })?;
        if meta.len() > 16 * 1024 * 1024 {
            return Err(format!(
                "{MANIFEST_FILE} is {} bytes, too large to be ours",
                meta.len()
            ));
        }
        let bytes = std::fs::read(&path).map_err(|error| format!("{MANIFEST_FILE}: {error}"))?;
        ArtifactManifest::parse(&bytes)
    }

    /// Checks the bytes of a manifest: JSON, ours, not too new, and every
    /// listed file a bare name a save could have written.
    pub fn parse(bytes: &[u8]) -> Result<ArtifactManifest, String> {
        let value: Value = serde_json::from_slice(bytes)
            .map_err(|error| format!("{MANIFEST_FILE} is not JSON: {error}"))?;
        if value.get("format").and_then(Value::as_str) != Some(FORMAT) {
            return Err(format!("{MANIFEST_FILE} is not a {FORMAT} manifest"));
        }
        let version = value
            .get("format_version")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        if version == 0 || version > u64::from(FORMAT_VERSION) {
            return Err(format!(
                "{MANIFEST_FILE} has format_version {version}; this solvergate reads up to {FORMAT_VERSION}"
            ));
        }
        let manifest: ArtifactManifest = serde_json::from_value(value)
            .map_err(|error| format!("{MANIFEST_FILE} does not match its format: {error}"))?;
        for file in &manifest.files {
            let plain = Path::new(&file.name)
                .file_name()
                .is_some_and(|name| name == file.name.as_str());
            if !plain || file.name == MANIFEST_FILE || file.name.starts_with('.') {
                return Err(format!(
                    "{MANIFEST_FILE} lists {:?}, which is not a file name a save writes",
                    file.name
                ));
            }
        }
        Ok(manifest)
    }

    /// The manifest as the bytes a save writes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_else(|_| "{}".to_owned());
        text.push('\n');
        text.into_bytes()
    }

    pub fn file(&self, role: &str) -> Option<&SavedFile> {
        self.files.iter().find(|file| file.role == role)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by `manifests_round_trip`: without serde_json's
    /// `float_roundtrip`, this threshold came back one ULP lower, so a
    /// replay could judge a borderline objective differently from the save.
    #[test]
    fn a_threshold_reads_back_exactly() {
        let mut manifest = ArtifactManifest::new(
            Backend::CpsatPython,
            None,
            VerificationRecord {
                status: "optimal".to_owned(),
                objective: Number::from_f64(0.1 + 0.2),
                checker_status: None,
                level: "expectation".to_owned(),
            },
            Vec::new(),
        );
        manifest.cpsat = Some(CpsatRecord {
            script_timeout_ms: 1000,
            checker_timeout_ms: None,
            replay_seed: None,
            replay_config_sha256: None,
            expectation: Some(Expectation {
                objective_sense: "maximize".to_owned(),
                objective_threshold: 3.6682772134204464e-90,
            }),
        });
        let read = ArtifactManifest::parse(&manifest.to_bytes()).unwrap();
        let expectation = read.cpsat.and_then(|cpsat| cpsat.expectation).unwrap();
        assert_eq!(
            expectation.objective_threshold.to_bits(),
            3.6682772134204464e-90_f64.to_bits()
        );
        assert_eq!(read.verification.objective, Number::from_f64(0.1 + 0.2));
    }
}
