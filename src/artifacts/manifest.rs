//! `.solvergate-artifact.json`: what a saved directory holds, how it was
//! verified, and how to run it again.
//!
//! The manifest is the only file a save writes that is not a verbatim input
//! or result; replay and `artifacts ls` read nothing else to decide what to
//! do. A manifest we cannot parse, or one of another format, marks a
//! directory we will not touch. Bump [`FORMAT_VERSION`] when a field changes
//! meaning; readers refuse versions newer than theirs.
//!
//! The manifest seals itself: `manifest_sha256` is the SHA-256 of its own
//! canonical JSON (every field but that one, keys sorted, no whitespace),
//! so an edited control — the seed, the budget, the solver, a file hash —
//! is found by [`check_seal`] before replay trusts any of it. Version 1
//! manifests had no seal: they are still read (listed, replaced by a new
//! save) but replay refuses them, since accepting an unsealed manifest
//! would let anyone drop the field to get past the check.

use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Number, Value};

use crate::minizinc::{SolveControls, SolveStatus};
use crate::sha256_hex;

/// The manifest's file name inside a saved directory.
pub const MANIFEST_FILE: &str = ".solvergate-artifact.json";
/// The `format` value that marks a manifest as ours.
pub const FORMAT: &str = "solvergate-artifact";
/// The manifest layout this build writes and reads (2: sealed with
/// `manifest_sha256`).
pub const FORMAT_VERSION: u32 = 2;
/// The first layout whose manifests carry `manifest_sha256`.
pub const SEALED_SINCE: u32 = 2;
/// The field that holds the seal.
const SEAL_FIELD: &str = "manifest_sha256";

/// Which runtime a saved artifact runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Backend {
    /// A MiniZinc model (with its data, checker and includes) on the
    /// MiniZinc runtime.
    Minizinc,
    /// An OR-Tools CP-SAT Python script on the CP-SAT interpreter.
    CpsatPython,
    /// A load plan (`plan_load`'s result and its cohort).
    Planner,
}

impl Backend {
    /// The backend as it reads in the JSON (`cpsat_python`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Minizinc => "minizinc",
            Backend::CpsatPython => "cpsat_python",
            Backend::Planner => "planner",
        }
    }
}

/// Whether a save wrote its artifact.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SaveStatus {
    /// Every gate passed and the artifact was written.
    Saved,
    /// A gate failed; nothing was written (the diagnostic names the gate).
    NotVerified,
}

impl SaveStatus {
    /// The status as it reads in the JSON (`not_verified`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            SaveStatus::Saved => "saved",
            SaveStatus::NotVerified => "not_verified",
        }
    }
}

impl std::fmt::Display for SaveStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The status of a verifying run as a manifest records it: a MiniZinc
/// solve's, a CP-SAT script's or a plan's.
///
/// Saved manifests carry a self-hash, so every value here is written
/// exactly as the run's own status was (`optimal`, `unsat_or_unbounded`,
/// ...): add values, never rename one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// MiniZinc and CP-SAT: proven optimal.
    Optimal,
    /// MiniZinc: a solution, not proven optimal.
    Satisfied,
    /// CP-SAT: a solution, not proven optimal.
    Feasible,
    /// MiniZinc and CP-SAT: a time limit stopped the run.
    Timeout,
    /// MiniZinc and CP-SAT: the run failed.
    Error,
    /// MiniZinc: proven unsatisfiable.
    Unsatisfiable,
    /// MiniZinc: proven unbounded.
    Unbounded,
    /// MiniZinc: unsatisfiable or unbounded.
    UnsatOrUnbounded,
    /// CP-SAT: proven infeasible.
    Infeasible,
    /// MiniZinc and CP-SAT: no solution and no proof.
    Unknown,
    /// Planner: a plan was recommended.
    Planned,
    /// Planner: no card was feasible.
    NoFeasiblePlan,
}

impl RunStatus {
    /// The status as it reads in the JSON (`unsat_or_unbounded`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Optimal => "optimal",
            RunStatus::Satisfied => "satisfied",
            RunStatus::Feasible => "feasible",
            RunStatus::Timeout => "timeout",
            RunStatus::Error => "error",
            RunStatus::Unsatisfiable => "unsatisfiable",
            RunStatus::Unbounded => "unbounded",
            RunStatus::UnsatOrUnbounded => "unsat_or_unbounded",
            RunStatus::Infeasible => "infeasible",
            RunStatus::Unknown => "unknown",
            RunStatus::Planned => "planned",
            RunStatus::NoFeasiblePlan => "no_feasible_plan",
        }
    }

    /// A solution not proven optimal: another run may end at another one.
    pub fn is_incumbent(self) -> bool {
        match self {
            RunStatus::Satisfied | RunStatus::Feasible => true,
            RunStatus::Optimal
            | RunStatus::Timeout
            | RunStatus::Error
            | RunStatus::Unsatisfiable
            | RunStatus::Unbounded
            | RunStatus::UnsatOrUnbounded
            | RunStatus::Infeasible
            | RunStatus::Unknown
            | RunStatus::Planned
            | RunStatus::NoFeasiblePlan => false,
        }
    }
}

impl From<SolveStatus> for RunStatus {
    fn from(status: SolveStatus) -> RunStatus {
        match status {
            SolveStatus::Timeout => RunStatus::Timeout,
            SolveStatus::Error => RunStatus::Error,
            SolveStatus::Unsatisfiable => RunStatus::Unsatisfiable,
            SolveStatus::Unbounded => RunStatus::Unbounded,
            SolveStatus::UnsatOrUnbounded => RunStatus::UnsatOrUnbounded,
            SolveStatus::Unknown => RunStatus::Unknown,
            SolveStatus::Optimal => RunStatus::Optimal,
            SolveStatus::Satisfied => RunStatus::Satisfied,
        }
    }
}

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One saved file: its role, fixed name, hash and size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SavedFile {
    /// `model`, `data`, `checker`, `include`, `problem`, `solve_result`,
    /// `solution`, `replay_config` or `experiment_log`.
    pub role: String,
    /// The bare file name inside the saved directory.
    pub name: String,
    /// SHA-256 of the file's bytes, lowercase hex.
    pub sha256: String,
    /// The file's size in bytes.
    pub bytes: u64,
    /// Role `include` only: the path the file was copied from at the save
    /// (provenance; replay runs the copy, never this path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

impl SavedFile {
    /// The entry of `bytes` saved as `name` in `role`, hashed now; no
    /// `source`.
    pub fn of(role: &str, name: &str, bytes: &[u8]) -> SavedFile {
        SavedFile {
            role: role.to_owned(),
            name: name.to_owned(),
            sha256: sha256_hex(bytes),
            bytes: bytes.len() as u64,
            source: None,
        }
    }
}

/// How a MiniZinc artifact was solved.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct MinizincRecord {
    /// Canonical solver id.
    pub solver: String,
    /// The solver's version, as the runtime's catalog lists it.
    pub solver_version: String,
    /// The solve's budget in milliseconds; replay solves under it again.
    pub timeout_ms: i64,
    /// The search controls of the verifying solve; replay solves with them.
    pub solve_controls: SolveControls,
}

/// An objective threshold a CP-SAT save had to meet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Expectation {
    /// `maximize` or `minimize`.
    pub objective_sense: String,
    // What the objective must reach: at least this (maximize) or at most
    // this (minimize); finite. A plain comment and a crate-visible field:
    // a doc comment would add a description to the input schema of
    // `save_verified_cpsat_python`, which embeds this type.
    pub(crate) objective_threshold: f64,
}

/// How a CP-SAT artifact was run.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CpsatRecord {
    /// The script's budget in milliseconds; replay runs it under it again.
    pub script_timeout_ms: i64,
    /// Only when it was given explicitly (else the script's budget).
    pub checker_timeout_ms: Option<i64>,
    /// Passed as `SOLVERGATE_CPSAT_SEED`.
    pub replay_seed: Option<i64>,
    /// SHA256 of `replay-config.json`, when a config was given.
    pub replay_config_sha256: Option<String>,
    /// The objective threshold the save met; replay must meet it again.
    pub expectation: Option<Expectation>,
}

/// What the planner record of a manifest holds.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct PlannerRecord {
    /// The saved plan's id (the SHA-256 of its `result.json`); replay plans
    /// the cohort again and compares ids.
    pub result_id: String,
    /// SHA-256 of the bundled load-planner model that planned it.
    pub model_sha256: String,
    /// SHA-256 of the bundled checker that confirmed its cards.
    pub checker_sha256: String,
}

/// What the verifying run showed.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct VerificationRecord {
    /// The run's status (`optimal`, `satisfied`, `feasible`, ...).
    pub status: RunStatus,
    /// The run's objective (a plan's: the recommended card's total cost);
    /// `null` when there is none.
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
    /// The layout version it was written in ([`FORMAT_VERSION`] for this
    /// build's saves); readers refuse a newer one.
    pub format_version: u32,
    /// The solvergate version that saved it.
    pub tool_version: String,
    /// RFC 3339, UTC.
    pub saved_at: String,
    /// The runtime the artifact runs on; it names which record below is
    /// filled.
    pub backend: Backend,
    /// `minizinc --version`'s first line, or the OR-Tools version.
    pub runtime_version: Option<String>,
    /// Present for the `minizinc` backend.
    pub minizinc: Option<MinizincRecord>,
    /// Present for the `cpsat_python` backend.
    pub cpsat: Option<CpsatRecord>,
    /// Present for the `planner` backend.
    #[serde(default)]
    pub planner: Option<PlannerRecord>,
    /// What the verifying run showed; replay compares its own run to it.
    pub verification: VerificationRecord,
    /// A compact summary of the race or experiment the save came from.
    pub experiment: Option<Value>,
    /// Every file the save wrote besides this manifest.
    pub files: Vec<SavedFile>,
    /// SHA-256 of this manifest's canonical JSON without this field (keys
    /// sorted, no whitespace); written by [`ArtifactManifest::to_bytes`],
    /// checked by [`check_seal`]. `null` only in version 1 manifests.
    #[serde(default)]
    pub manifest_sha256: Option<String>,
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
            manifest_sha256: None,
        }
    }

    /// Reads and checks the manifest in `dir`; the problem in words when it
    /// is missing, unreadable, not ours or too new.
    pub fn read(dir: &Path) -> Result<ArtifactManifest, ManifestError> {
        ArtifactManifest::parse(&ArtifactManifest::read_bytes(dir)?)
    }

    /// The bytes of the manifest in `dir`, refused when missing, unreadable
    /// or too large to be ours.
    pub fn read_bytes(dir: &Path) -> Result<Vec<u8>, ManifestError> {
        let path = dir.join(MANIFEST_FILE);
        let meta = std::fs::metadata(&path).map_err(|error| match error.kind() {
            std::io::ErrorKind::NotFound => ManifestError::Missing(error),
            _ => ManifestError::Io(error),
        })?;
        if meta.len() > 16 * 1024 * 1024 {
            return Err(ManifestError::TooLarge(meta.len()));
        }
        std::fs::read(&path).map_err(ManifestError::Io)
    }

    /// Checks the bytes of a manifest: JSON, ours, not too new, and every
    /// listed file a bare name a save could have written.
    pub fn parse(bytes: &[u8]) -> Result<ArtifactManifest, ManifestError> {
        let value: Value = serde_json::from_slice(bytes).map_err(ManifestError::NotJson)?;
        if value.get("format").and_then(Value::as_str) != Some(FORMAT) {
            return Err(ManifestError::NotOurs);
        }
        let version = value
            .get("format_version")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        if version == 0 || version > u64::from(FORMAT_VERSION) {
            return Err(ManifestError::Version(version));
        }
        let manifest: ArtifactManifest =
            serde_json::from_value(value).map_err(ManifestError::Shape)?;
        for file in &manifest.files {
            let plain = Path::new(&file.name)
                .file_name()
                .is_some_and(|name| name == file.name.as_str());
            if !plain || file.name == MANIFEST_FILE || file.name.starts_with('.') {
                return Err(ManifestError::NotAFileName(file.name.clone()));
            }
        }
        Ok(manifest)
    }

    /// The manifest as the bytes a save writes, sealed: `manifest_sha256`
    /// is computed here from everything else, whatever the field held.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut value = serde_json::to_value(self).unwrap_or_default();
        if let Value::Object(fields) = &mut value {
            fields.remove(SEAL_FIELD);
            let seal = seal_of(&Value::Object(fields.clone()));
            fields.insert(SEAL_FIELD.to_owned(), Value::String(seal));
        }
        let mut text = serde_json::to_string_pretty(&value).unwrap_or_else(|_| "{}".to_owned());
        text.push('\n');
        text.into_bytes()
    }

    /// The first listed file in `role`; `None` when the save wrote none.
    pub fn file(&self, role: &str) -> Option<&SavedFile> {
        self.files.iter().find(|file| file.role == role)
    }
}

/// Why the bytes in a directory are not a manifest this solvergate reads.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// The directory has no manifest file.
    #[error("there is no {MANIFEST_FILE} in it")]
    Missing(#[source] std::io::Error),
    /// The manifest's metadata or bytes could not be read.
    #[error("{MANIFEST_FILE}: {0}")]
    Io(#[source] std::io::Error),
    /// Over the 16 MiB a manifest may take (its size in bytes).
    #[error("{MANIFEST_FILE} is {0} bytes, too large to be ours")]
    TooLarge(u64),
    /// Not a JSON document.
    #[error("{MANIFEST_FILE} is not JSON: {0}")]
    NotJson(#[source] serde_json::Error),
    /// JSON whose `format` is not [`FORMAT`].
    #[error("{MANIFEST_FILE} is not a {FORMAT} manifest")]
    NotOurs,
    /// `format_version` is missing (read as 0) or newer than
    /// [`FORMAT_VERSION`].
    #[error("{MANIFEST_FILE} has format_version {0}; this solvergate reads up to {FORMAT_VERSION}")]
    Version(u64),
    /// Ours and not too new, but its fields do not fit [`ArtifactManifest`].
    #[error("{MANIFEST_FILE} does not match its format: {0}")]
    Shape(#[source] serde_json::Error),
    /// A listed file is not a bare name: a path, a hidden name or the
    /// manifest itself.
    #[error("{MANIFEST_FILE} lists {0:?}, which is not a file name a save writes")]
    NotAFileName(String),
}

/// Why a manifest's seal does not hold; `named` is how the manifest is
/// named (its file name, and where it is).
#[derive(Debug, thiserror::Error)]
pub enum SealError {
    /// The bytes are not JSON.
    #[error("{named} is not JSON: {source}")]
    NotJson {
        /// How the manifest is named.
        named: String,
        /// The parser's error.
        source: serde_json::Error,
    },
    /// JSON, but not an object.
    #[error("{named} is not a JSON object")]
    NotAnObject {
        /// How the manifest is named.
        named: String,
    },
    /// A layout older than [`SEALED_SINCE`], which carried no seal.
    #[error(
        "{named} has format_version {version}, saved by an older solvergate that did not seal its manifest, so a changed seed, budget or file hash could not be told; save the artifact again to replay it"
    )]
    Unsealed {
        /// How the manifest is named.
        named: String,
        /// Its `format_version` (0 when missing).
        version: u64,
    },
    /// A sealed layout without its `manifest_sha256` string.
    #[error(
        "{named} has no {SEAL_FIELD} string, which every format_version {version} manifest carries: it was changed since it was saved"
    )]
    NoSeal {
        /// How the manifest is named.
        named: String,
        /// Its `format_version`.
        version: u64,
    },
    /// The content does not hash to the recorded seal: it was edited.
    #[error(
        "{named} was changed since it was saved: its content hashes to {actual}, its {SEAL_FIELD} records {recorded}"
    )]
    Changed {
        /// How the manifest is named.
        named: String,
        /// The SHA-256 of the content as it is now.
        actual: String,
        /// The `manifest_sha256` it records.
        recorded: String,
    },
}

/// Checks the seal of a manifest's bytes: the content without
/// `manifest_sha256` must hash to it. `named` is how the refusal names the
/// manifest (its file name, and where it is). Every field counts, including any a
/// save never writes, so nothing can be added, removed or changed.
pub fn check_seal(bytes: &[u8], named: &str) -> Result<(), SealError> {
    let named = || named.to_owned();
    let value: Value = serde_json::from_slice(bytes).map_err(|source| SealError::NotJson {
        named: named(),
        source,
    })?;
    let Value::Object(mut fields) = value else {
        return Err(SealError::NotAnObject { named: named() });
    };
    let version = fields
        .get("format_version")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    if version < u64::from(SEALED_SINCE) {
        return Err(SealError::Unsealed {
            named: named(),
            version,
        });
    }
    let recorded = match fields.remove(SEAL_FIELD) {
        Some(Value::String(seal)) => seal,
        _ => {
            return Err(SealError::NoSeal {
                named: named(),
                version,
            });
        }
    };
    let actual = seal_of(&Value::Object(fields));
    if actual != recorded {
        return Err(SealError::Changed {
            named: named(),
            actual,
            recorded,
        });
    }
    Ok(())
}

/// SHA-256 of the canonical JSON of `value`.
fn seal_of(value: &Value) -> String {
    let mut text = String::new();
    canonical(value, &mut text);
    sha256_hex(text.as_bytes())
}

/// Compact JSON with every object's keys sorted, whatever map the build's
/// serde_json uses.
fn canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(fields) => {
            let mut keys: Vec<&String> = fields.keys().collect();
            keys.sort();
            out.push('{');
            for (index, key) in keys.into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                if let Some(child) = fields.get(key) {
                    canonical(child, out);
                }
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_keep_their_saved_spelling() {
        let text = |status: RunStatus| serde_json::to_string(&status).unwrap();
        assert_eq!(text(RunStatus::UnsatOrUnbounded), "\"unsat_or_unbounded\"");
        assert_eq!(text(RunStatus::NoFeasiblePlan), "\"no_feasible_plan\"");
        for status in [
            SolveStatus::Timeout,
            SolveStatus::Error,
            SolveStatus::Unsatisfiable,
            SolveStatus::Unbounded,
            SolveStatus::UnsatOrUnbounded,
            SolveStatus::Unknown,
            SolveStatus::Optimal,
            SolveStatus::Satisfied,
        ] {
            assert_eq!(RunStatus::from(status).as_str(), status.as_str());
        }
        let saved = serde_json::to_string(&SaveStatus::NotVerified).unwrap();
        assert_eq!(saved, "\"not_verified\"");
        let back: RunStatus = serde_json::from_str("\"feasible\"").unwrap();
        assert_eq!(back, RunStatus::Feasible);
    }

    fn sealed_minizinc() -> Vec<u8> {
        let mut manifest = ArtifactManifest::new(
            Backend::Minizinc,
            Some("2.6.4".to_owned()),
            VerificationRecord {
                status: RunStatus::Optimal,
                objective: Some(Number::from(60)),
                checker_status: None,
                level: "solved".to_owned(),
            },
            vec![SavedFile::of("model", "model.mzn", b"solve satisfy;")],
        );
        manifest.minizinc = Some(MinizincRecord {
            solver: "org.gecode.gecode".to_owned(),
            solver_version: "6.2.0".to_owned(),
            timeout_ms: 20000,
            solve_controls: SolveControls {
                random_seed: Some(7),
                ..SolveControls::default()
            },
        });
        manifest.to_bytes()
    }

    /// Every edit of a recorded control or hash breaks the seal, and the
    /// refusal names the manifest.
    #[test]
    fn an_edited_manifest_is_refused() {
        let bytes = sealed_minizinc();
        check_seal(&bytes, MANIFEST_FILE).unwrap();
        let original: Value = serde_json::from_slice(&bytes).unwrap();
        type Edit = fn(&mut Value);
        let edits: [(&str, Edit); 8] = [
            ("the seed", |v| {
                v["minizinc"]["solve_controls"]["random_seed"] = 8.into()
            }),
            ("the budget", |v| v["minizinc"]["timeout_ms"] = 60000.into()),
            ("the solver", |v| {
                v["minizinc"]["solver"] = "org.chuffed.chuffed".into()
            }),
            ("a flag", |v| {
                v["minizinc"]["solve_controls"]["free_search"] = true.into()
            }),
            ("a file hash", |v| {
                v["files"][0]["sha256"] = "0".repeat(64).into()
            }),
            ("the seal", |v| v["manifest_sha256"] = "0".repeat(64).into()),
            ("no seal", |v| {
                v.as_object_mut().unwrap().remove("manifest_sha256");
            }),
            ("an added field", |v| v["note"] = "hello".into()),
        ];
        for (what, edit) in edits {
            let mut value = original.clone();
            edit(&mut value);
            let problem = check_seal(value.to_string().as_bytes(), MANIFEST_FILE)
                .unwrap_err()
                .to_string();
            assert!(problem.starts_with(MANIFEST_FILE), "{what}: {problem}");
            assert!(
                problem.contains("changed since it was saved"),
                "{what}: {problem}"
            );
        }
        // Whitespace and key order are not content.
        let compact = original.to_string();
        check_seal(compact.as_bytes(), MANIFEST_FILE).unwrap();
    }

    /// A version 1 manifest still reads (so a new save may replace it) but
    /// its seal check says to save it again.
    #[test]
    fn an_unsealed_legacy_manifest_reads_but_does_not_replay() {
        let mut value: Value = serde_json::from_slice(&sealed_minizinc()).unwrap();
        value["format_version"] = 1.into();
        value.as_object_mut().unwrap().remove("manifest_sha256");
        let bytes = value.to_string();
        assert!(ArtifactManifest::parse(bytes.as_bytes()).is_ok());
        let problem = check_seal(bytes.as_bytes(), MANIFEST_FILE)
            .unwrap_err()
            .to_string();
        assert!(problem.contains("save the artifact again"), "{problem}");
    }

    /// Found by `manifests_round_trip`: without serde_json's
    /// `float_roundtrip`, this threshold came back one ULP lower, so a
    /// replay could judge a borderline objective differently from the save.
    #[test]
    fn a_threshold_reads_back_exactly() {
        let mut manifest = ArtifactManifest::new(
            Backend::CpsatPython,
            None,
            VerificationRecord {
                status: RunStatus::Optimal,
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

#[cfg(test)]
mod properties {
    use super::*;
    use crate::strategies::{deeply_nested, json_value};
    use proptest::prelude::*;

    fn run_status() -> impl Strategy<Value = RunStatus> {
        proptest::sample::select(vec![
            RunStatus::Optimal,
            RunStatus::Satisfied,
            RunStatus::Feasible,
            RunStatus::Timeout,
            RunStatus::Error,
            RunStatus::Unsatisfiable,
            RunStatus::Unbounded,
            RunStatus::UnsatOrUnbounded,
            RunStatus::Infeasible,
            RunStatus::Unknown,
            RunStatus::Planned,
            RunStatus::NoFeasiblePlan,
        ])
    }

    /// A file name a save writes.
    fn plain_name() -> impl Strategy<Value = String> {
        "[a-z0-9_-][a-z0-9._-]{0,12}"
    }

    fn saved_file() -> impl Strategy<Value = SavedFile> {
        ("[a-z_]{1,12}", plain_name(), "[0-9a-f]{64}", any::<u64>()).prop_map(
            |(role, name, sha256, bytes)| SavedFile {
                role,
                name,
                sha256,
                bytes,
                source: None,
            },
        )
    }

    fn number() -> impl Strategy<Value = Number> {
        prop_oneof![
            any::<i64>().prop_map(Number::from),
            any::<u64>().prop_map(Number::from),
            any::<f64>().prop_filter_map("finite", Number::from_f64),
        ]
    }

    fn minizinc_record() -> impl Strategy<Value = MinizincRecord> {
        (
            any::<String>(),
            any::<String>(),
            any::<i64>(),
            (
                any::<bool>(),
                proptest::option::of(any::<i64>()),
                proptest::option::of(any::<i64>()),
                any::<bool>(),
                proptest::option::of(any::<i64>()),
            ),
        )
            .prop_map(|(solver, solver_version, timeout_ms, controls)| {
                let (free_search, parallel, random_seed, all_solutions, num_solutions) = controls;
                MinizincRecord {
                    solver,
                    solver_version,
                    timeout_ms,
                    solve_controls: SolveControls {
                        free_search,
                        parallel,
                        random_seed,
                        all_solutions,
                        num_solutions,
                        solver_flags: Vec::new(),
                        final_only: false,
                    },
                }
            })
    }

    fn cpsat_record() -> impl Strategy<Value = CpsatRecord> {
        (
            any::<i64>(),
            proptest::option::of(any::<i64>()),
            proptest::option::of(any::<i64>()),
            proptest::option::of("[0-9a-f]{64}"),
            proptest::option::of((
                "[a-z]{1,8}",
                any::<f64>().prop_filter("finite", |x| x.is_finite()),
            )),
        )
            .prop_map(|(script, checker, seed, config, expectation)| CpsatRecord {
                script_timeout_ms: script,
                checker_timeout_ms: checker,
                replay_seed: seed,
                replay_config_sha256: config,
                expectation: expectation.map(|(objective_sense, objective_threshold)| {
                    Expectation {
                        objective_sense,
                        objective_threshold,
                    }
                }),
            })
    }

    fn manifest() -> impl Strategy<Value = ArtifactManifest> {
        let head = (
            any::<String>(),
            any::<String>(),
            prop::sample::select(vec![
                Backend::Minizinc,
                Backend::CpsatPython,
                Backend::Planner,
            ]),
            proptest::option::of(any::<String>()),
        );
        let records = (
            proptest::option::of(minizinc_record()),
            proptest::option::of(cpsat_record()),
            proptest::option::of(("[a-z0-9]{1,16}", "[0-9a-f]{64}", "[0-9a-f]{64}").prop_map(
                |(result_id, model_sha256, checker_sha256)| PlannerRecord {
                    result_id,
                    model_sha256,
                    checker_sha256,
                },
            )),
        );
        let verification = (
            run_status(),
            proptest::option::of(number()),
            proptest::option::of(any::<String>()),
            any::<String>(),
        )
            .prop_map(
                |(status, objective, checker_status, level)| VerificationRecord {
                    status,
                    objective,
                    checker_status,
                    level,
                },
            );
        // `null` would come back as `None`: a save never writes it.
        let experiment =
            proptest::option::of(json_value(3).prop_filter("not null", |v| !v.is_null()));
        (
            head,
            records,
            verification,
            experiment,
            prop::collection::vec(saved_file(), 0..6),
        )
            .prop_map(
                |(
                    (tool_version, saved_at, backend, runtime_version),
                    (minizinc, cpsat, planner),
                    verification,
                    experiment,
                    files,
                )| {
                    ArtifactManifest {
                        format: FORMAT.to_owned(),
                        format_version: FORMAT_VERSION,
                        tool_version,
                        saved_at,
                        backend,
                        runtime_version,
                        minizinc,
                        cpsat,
                        planner,
                        verification,
                        experiment,
                        files,
                        manifest_sha256: None,
                    }
                },
            )
    }

    /// A name as a hostile manifest might list it.
    fn any_name() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z./\\\\\u{0}]{0,8}",
            Just(MANIFEST_FILE.to_owned()),
            Just("../escape".to_owned()),
            Just("/etc/passwd".to_owned()),
            Just("a/".to_owned()),
        ]
    }

    /// JSON pointers to every scalar in `value`.
    fn scalar_pointers(value: &Value, at: String, out: &mut Vec<String>) {
        match value {
            Value::Object(fields) => {
                for (key, child) in fields {
                    let key = key.replace('~', "~0").replace('/', "~1");
                    scalar_pointers(child, format!("{at}/{key}"), out);
                }
            }
            Value::Array(items) => {
                for (index, child) in items.iter().enumerate() {
                    scalar_pointers(child, format!("{at}/{index}"), out);
                }
            }
            _ => out.push(at),
        }
    }

    proptest! {
        #![proptest_config(crate::strategies::cases(128))]

        /// Any bytes get an answer; an accepted manifest is ours, not too
        /// new, and lists only bare names.
        #[test]
        fn any_bytes_give_an_answer(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
            if let Ok(manifest) = ArtifactManifest::parse(&bytes) {
                prop_assert_eq!(manifest.format, FORMAT);
            }
        }

        /// What a save writes, a reader reads back unchanged.
        #[test]
        fn manifests_round_trip(manifest in manifest()) {
            let bytes = manifest.to_bytes();
            let read = ArtifactManifest::parse(&bytes);
            prop_assert!(read.is_ok(), "{:?}", read.err());
            let read = read.unwrap_or_else(|_| unreachable!());
            let again = read.to_bytes();
            prop_assert_eq!(String::from_utf8_lossy(&again), String::from_utf8_lossy(&bytes));
        }

        /// What a save writes is sealed, and changing any one scalar in it
        /// breaks the seal.
        #[test]
        fn a_sealed_manifest_checks_and_any_scalar_edit_breaks_it(manifest in manifest(), pick in any::<prop::sample::Index>()) {
            let bytes = manifest.to_bytes();
            prop_assert!(check_seal(&bytes, MANIFEST_FILE).is_ok());
            let mut value: Value = serde_json::from_slice(&bytes).unwrap_or_default();
            let mut leaves = Vec::new();
            scalar_pointers(&value, String::new(), &mut leaves);
            leaves.retain(|pointer| pointer != "/manifest_sha256");
            prop_assume!(!leaves.is_empty());
            let pointer = &leaves[pick.index(leaves.len())];
            if let Some(leaf) = value.pointer_mut(pointer) {
                *leaf = match leaf {
                    Value::String(text) => Value::String(format!("{text}x")),
                    Value::Bool(flag) => Value::Bool(!*flag),
                    Value::Null => Value::from(1),
                    _ => Value::Null,
                };
            }
            prop_assert!(check_seal(value.to_string().as_bytes(), MANIFEST_FILE).is_err(), "{} edited", pointer);
        }

        /// A listed name is accepted exactly when it is a bare name that is
        /// neither hidden nor the manifest itself.
        #[test]
        fn only_bare_names_are_accepted(mut manifest in manifest(), name in any_name(), at in any::<prop::sample::Index>()) {
            let file = SavedFile::of("model", &name, b"x");
            let index = at.index(manifest.files.len() + 1);
            manifest.files.insert(index, file);
            let bare = !name.is_empty()
                && !name.contains('/')
                && !name.starts_with('.')
                && name != MANIFEST_FILE;
            let read = ArtifactManifest::parse(&manifest.to_bytes());
            prop_assert_eq!(read.is_ok(), bare, "{:?}: {:?}", name, read.err());
        }

        /// Another format or a newer version is refused, whatever else the
        /// manifest says.
        #[test]
        fn other_formats_and_newer_versions_are_refused(
            manifest in manifest(),
            format in "[a-z-]{0,24}",
            version in (FORMAT_VERSION + 1)..u32::MAX,
        ) {
            let mut value = serde_json::to_value(&manifest).unwrap_or_default();
            value["format_version"] = Value::from(version);
            prop_assert!(ArtifactManifest::parse(value.to_string().as_bytes()).is_err());
            let mut value = serde_json::to_value(&manifest).unwrap_or_default();
            value["format"] = Value::from(format.clone());
            prop_assert_eq!(ArtifactManifest::parse(value.to_string().as_bytes()).is_ok(), format == FORMAT);
        }
    }

    proptest! {
        #![proptest_config(crate::strategies::cases(16))]

        #[test]
        fn deep_nesting_is_refused_not_a_crash(depth in 150usize..20_000) {
            let text = format!(
                r#"{{"format": "{FORMAT}", "format_version": 1, "experiment": {}}}"#,
                deeply_nested(depth)
            );
            prop_assert!(ArtifactManifest::parse(text.as_bytes()).is_err());
        }
    }
}
