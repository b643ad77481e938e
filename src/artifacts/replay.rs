//! Replay: prove a saved artifact still is what was saved, run it again the
//! way it was verified, and say whether the answer came back.
//!
//! Integrity first: the manifest's own seal must hold (an edited seed,
//! budget, solver or hash refuses the replay, naming the manifest), every
//! file it lists must be there with its recorded sha256, and nothing else
//! may be (a changed, missing or extra file refuses the replay, naming it,
//! before any process starts). Then the
//! recorded backend, solver, controls, seed, config, checker and expectation
//! run again. `reproduced` means the same status and objective and every
//! gate passing again; when not, `reason` says what differed and why it can
//! (a time-limited status, another runtime version).

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};
use tokio_util::sync::CancellationToken;

use super::Artifacts;
use super::manifest::{
    ArtifactManifest, Backend, MANIFEST_FILE, ManifestError, RunStatus, check_seal,
};
use super::minizinc::solve_gate;
use crate::budget::{Budget, DEFAULT_TIMEOUT_MS};
use crate::cpsat::{CheckerReport, CpsatPythonResult, ScriptRequest, ScriptSource};
use crate::diagnostics::{Category, Diagnostic, ToolError};
use crate::minizinc::{SolveRequest, SolveResult, Sources};
use crate::planner::LoadPlan;
use crate::progress::{Progress, Stage};
use crate::sha256_hex;
use crate::userfiles::off_thread;

/// Status, objective and checker verdict of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReplayOutcome {
    /// The run's status, in the manifest's words.
    pub status: RunStatus,
    /// The run's objective; `null` when it had none.
    pub objective: Option<Number>,
    /// The checker's status; `null` when no checker ran.
    pub checker_status: Option<String>,
    /// The highest gate that passed (see the manifest's `verification`).
    pub level: String,
}

/// Recorded beside replayed.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ReplayResult {
    /// The artifact's directory, as given.
    pub target_dir: String,
    /// The runtime the artifact ran on again, from its manifest.
    pub backend: Backend,
    /// Same status, same objective, every gate passed again.
    pub reproduced: bool,
    /// What differed, and why it can; `null` when reproduced.
    pub reason: Option<String>,
    /// What the save's verifying run showed, from the manifest.
    pub recorded: ReplayOutcome,
    /// What the replay's run showed.
    pub replayed: ReplayOutcome,
    /// When the artifact was saved: RFC 3339, UTC.
    pub saved_at: String,
    /// The runtime version the save recorded; `null` when it had none.
    pub recorded_runtime_version: Option<String>,
    /// The runtime version replay ran on; `null` when it could not be read.
    pub runtime_version: Option<String>,
    /// The MiniZinc replay's full solve.
    pub solve: Option<SolveResult>,
    /// The CP-SAT replay's full run.
    pub run: Option<CpsatPythonResult>,
    /// The CP-SAT replay's checker report, when its checker ran (a
    /// MiniZinc checker's verdict is in `solve`).
    pub checker: Option<CheckerReport>,
    /// A plan's result id as the save recorded it.
    pub recorded_result_id: Option<String>,
    /// A plan's result id as the replay computed it.
    pub result_id: Option<String>,
    /// `null` when reproduced.
    pub diagnostic: Option<Diagnostic>,
    /// What changed in the planner since a plan was saved (its result
    /// format, its solver), for `reason`; not a field of its own.
    #[serde(skip)]
    #[schemars(skip)]
    plan_changes: Vec<String>,
}

/// The error for an artifact whose files no longer match its manifest.
fn tampered(message: String) -> ToolError {
    ToolError::new(Category::NotVerified, message)
}

/// Reads the manifest, checks its seal, and checks every file against it.
pub fn verify_files(dir: &Path) -> Result<ArtifactManifest, ToolError> {
    let not_ours = |problem: ManifestError| {
        ToolError::invalid(format!(
            "{} is not a solvergate artifact: {problem}",
            dir.display()
        ))
    };
    let bytes = ArtifactManifest::read_bytes(dir).map_err(not_ours)?;
    let manifest = ArtifactManifest::parse(&bytes).map_err(not_ours)?;
    check_seal(&bytes, &format!("{MANIFEST_FILE} in {}", dir.display()))
        .map_err(|problem| tampered(problem.to_string()))?;
    let listed: BTreeSet<&str> = manifest
        .files
        .iter()
        .map(|file| file.name.as_str())
        .collect();
    let entries = fs::read_dir(dir)
        .map_err(|error| ToolError::invalid(format!("cannot list {}: {error}", dir.display())))?;
    let mut extra = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name != MANIFEST_FILE && !listed.contains(name.as_str()) {
            extra.push(name);
        }
    }
    if !extra.is_empty() {
        extra.sort();
        return Err(tampered(format!(
            "{} holds file(s) the save did not write: {}; remove them or save again",
            dir.display(),
            extra.join(", ")
        )));
    }
    for file in &manifest.files {
        let path = dir.join(&file.name);
        let meta = fs::symlink_metadata(&path).map_err(|_| {
            tampered(format!(
                "{} is missing from {}; the artifact was changed since it was saved",
                file.name,
                dir.display()
            ))
        })?;
        if !meta.is_file() {
            return Err(tampered(format!(
                "{} in {} is no longer a regular file",
                file.name,
                dir.display()
            )));
        }
        let bytes = fs::read(&path)
            .map_err(|error| tampered(format!("{} cannot be read: {error}", path.display())))?;
        let sha = sha256_hex(&bytes);
        if sha != file.sha256 {
            return Err(tampered(format!(
                "{} in {} was changed since it was saved (sha256 {sha}, recorded {})",
                file.name,
                dir.display(),
                file.sha256
            )));
        }
    }
    Ok(manifest)
}

impl Artifacts {
    /// Verifies a saved directory and runs it again.
    pub async fn replay(
        &self,
        target_dir: &str,
        progress: &Progress,
        cancel: &CancellationToken,
    ) -> Result<ReplayResult, ToolError> {
        progress.report(Stage::Validating, "checking the files against the manifest");
        let dir = PathBuf::from(target_dir);
        if !dir.is_absolute() {
            return Err(ToolError::invalid(format!(
                "target_dir {target_dir:?} is not an absolute path"
            )));
        }
        let checked = dir.clone();
        let manifest = off_thread(move || verify_files(&checked)).await?;
        let recorded = ReplayOutcome {
            status: manifest.verification.status,
            objective: manifest.verification.objective.clone(),
            checker_status: manifest.verification.checker_status.clone(),
            level: manifest.verification.level.clone(),
        };
        progress.report(Stage::Running, "running the artifact again");
        let mut result = match manifest.backend {
            Backend::Minizinc => self.replay_minizinc(&dir, &manifest, cancel).await?,
            Backend::CpsatPython => self.replay_cpsat(&dir, &manifest, cancel).await?,
            Backend::Planner => self.replay_plan(&dir, &manifest, cancel).await?,
        };
        result.recorded = recorded;
        judge(&mut result);
        progress.report(
            Stage::Complete,
            if result.reproduced {
                "reproduced"
            } else {
                "not reproduced"
            },
        );
        Ok(result)
    }

    async fn replay_minizinc(
        &self,
        dir: &Path,
        manifest: &ArtifactManifest,
        cancel: &CancellationToken,
    ) -> Result<ReplayResult, ToolError> {
        let record = manifest.minizinc.as_ref().ok_or_else(|| {
            ToolError::invalid(format!(
                "{MANIFEST_FILE} in {} names the minizinc backend but records no solve",
                dir.display()
            ))
        })?;
        let path = |role: &str| {
            manifest
                .file(role)
                .map(|file| dir.join(&file.name).to_string_lossy().into_owned())
        };
        let model_path = path("model")
            .ok_or_else(|| ToolError::invalid(format!("{MANIFEST_FILE} lists no model file")))?;
        // The manifest is read from disk: its budget is checked as a tool's
        // argument would be.
        let timeout = Budget::parse("timeout_ms", record.timeout_ms, Some(DEFAULT_TIMEOUT_MS))?;
        let solve = self
            .minizinc
            .solve(
                &SolveRequest {
                    sources: Sources::Files {
                        model_path,
                        data_path: path("data"),
                        checker_path: path("checker"),
                    },
                    solver: Some(record.solver.clone()),
                    timeout_ms: timeout,
                    controls: record.solve_controls.clone(),
                },
                &Progress::none(),
                cancel,
            )
            .await?;
        let passed = solve_gate(&solve).is_none();
        let replayed = ReplayOutcome {
            status: solve.status.into(),
            objective: solve.objective.clone(),
            checker_status: solve
                .checker
                .as_ref()
                .map(|checker| checker.status.to_string()),
            level: match (passed, solve.checker.is_some()) {
                (false, _) => "none",
                (true, true) => "checked",
                (true, false) => "solved",
            }
            .to_owned(),
        };
        let runtime_version = self.minizinc.runtime().version(cancel).await.ok();
        Ok(blank(dir, manifest, replayed, runtime_version).with_solve(solve))
    }

    async fn replay_cpsat(
        &self,
        dir: &Path,
        manifest: &ArtifactManifest,
        cancel: &CancellationToken,
    ) -> Result<ReplayResult, ToolError> {
        let record = manifest.cpsat.as_ref().ok_or_else(|| {
            ToolError::invalid(format!(
                "{MANIFEST_FILE} in {} names the cpsat_python backend but records no run",
                dir.display()
            ))
        })?;
        let text = |role: &str| -> Result<Option<String>, ToolError> {
            manifest
                .file(role)
                .map(|file| {
                    fs::read_to_string(dir.join(&file.name)).map_err(|error| {
                        ToolError::invalid(format!("{} cannot be read: {error}", file.name))
                    })
                })
                .transpose()
        };
        let source = text("model")?
            .ok_or_else(|| ToolError::invalid(format!("{MANIFEST_FILE} lists no model.py")))?;
        let config = match text("replay_config")? {
            Some(text) => Some(serde_json::from_str::<Map<String, Value>>(&text).map_err(
                |error| {
                    ToolError::invalid(format!("replay-config.json is not a JSON object: {error}"))
                },
            )?),
            None => None,
        };
        let checker = text("checker")?.map(ScriptSource::Inline);
        let problem = text("problem")?;
        let script_budget = Budget::parse(
            "script_timeout_ms",
            record.script_timeout_ms,
            Some(DEFAULT_TIMEOUT_MS),
        )?;
        let script = ScriptRequest {
            source: ScriptSource::Inline(source),
            args: Vec::new(),
            seed: record.replay_seed,
            config,
            timeout_ms: script_budget,
        };
        let run = self.cpsat.run(&script, &Progress::none(), cancel).await?;
        // A recorded checker budget out of bounds is brought inside them.
        let checker_budget = record.checker_timeout_ms.map_or(script_budget, |ms| {
            Budget::saturating(u64::try_from(ms).unwrap_or(0))
        });
        let gates = self
            .gates(
                &run,
                record.expectation.as_ref(),
                checker.as_ref(),
                problem.as_deref(),
                checker_budget,
                &Progress::none(),
                cancel,
            )
            .await?;
        let replayed = ReplayOutcome {
            status: run.status.into(),
            objective: run.objective.clone(),
            checker_status: gates
                .checker
                .as_ref()
                .map(|report| report.status.to_string()),
            level: if gates.reason.is_some() {
                "none".to_owned()
            } else {
                gates.level.as_str().to_owned()
            },
        };
        let runtime_version = self
            .cpsat
            .ortools_version(cancel)
            .await
            .ok()
            .map(|version| format!("ortools {version}"));
        let mut result = blank(dir, manifest, replayed, runtime_version);
        result.run = Some(run);
        result.checker = gates.checker;
        Ok(result)
    }
}

impl Artifacts {
    async fn replay_plan(
        &self,
        dir: &Path,
        manifest: &ArtifactManifest,
        cancel: &CancellationToken,
    ) -> Result<ReplayResult, ToolError> {
        let record = manifest.planner.as_ref().ok_or_else(|| {
            ToolError::invalid(format!(
                "{MANIFEST_FILE} in {} names the planner backend but records no plan",
                dir.display()
            ))
        })?;
        let problem_file = manifest
            .file("problem")
            .ok_or_else(|| ToolError::invalid(format!("{MANIFEST_FILE} lists no problem.json")))?;
        let text = fs::read_to_string(dir.join(&problem_file.name)).map_err(|error| {
            ToolError::invalid(format!("{} cannot be read: {error}", problem_file.name))
        })?;
        let problem = crate::planner::LoadProblem::parse(&text)?;
        let planned = self
            .planner
            .plan(&problem, &crate::progress::Progress::none(), cancel)
            .await?;
        let replayed = super::plan::plan_outcome(&planned.result);
        let runtime_version = self.minizinc.runtime().version(cancel).await.ok();
        let mut result = blank(
            dir,
            manifest,
            ReplayOutcome {
                status: replayed.status,
                objective: replayed.objective,
                checker_status: replayed.checker_status,
                level: replayed.level,
            },
            runtime_version,
        );
        result.recorded_result_id = Some(record.result_id.clone());
        result.plan_changes = plan_changes(dir, manifest, &planned.result);
        result.result_id = Some(planned.result_id);
        Ok(result)
    }
}

/// How the planner that replays differs from the one that saved: the
/// saved result (whose hash the seal has checked) names its format and its
/// solver. A plan saved before the planner preferred a MIP solver, or
/// before a format change, gets a new result id for that reason alone.
fn plan_changes(dir: &Path, manifest: &ArtifactManifest, now: &LoadPlan) -> Vec<String> {
    let saved = manifest
        .file("plan_result")
        .and_then(|file| fs::read(dir.join(&file.name)).ok())
        .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok());
    let Some(saved) = saved else {
        return Vec::new();
    };
    let then = |key: &str| {
        saved
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or("unknown")
            .to_owned()
    };
    let mut changes = Vec::new();
    if then("planner") != now.planner {
        changes.push(format!(
            "the planner changed ({} then, {} now)",
            then("planner"),
            now.planner
        ));
    }
    if then("solver") != now.solver {
        changes.push(format!(
            "the plan was solved by {} then, by {} now",
            then("solver"),
            now.solver
        ));
    }
    changes
}

fn blank(
    dir: &Path,
    manifest: &ArtifactManifest,
    replayed: ReplayOutcome,
    runtime_version: Option<String>,
) -> ReplayResult {
    ReplayResult {
        target_dir: dir.display().to_string(),
        backend: manifest.backend,
        reproduced: false,
        reason: None,
        recorded: replayed.clone(),
        replayed,
        saved_at: manifest.saved_at.clone(),
        recorded_runtime_version: manifest.runtime_version.clone(),
        runtime_version,
        solve: None,
        run: None,
        checker: None,
        recorded_result_id: None,
        result_id: None,
        diagnostic: None,
        plan_changes: Vec::new(),
    }
}

impl ReplayResult {
    fn with_solve(mut self, solve: SolveResult) -> Self {
        self.solve = Some(solve);
        self
    }
}

/// Sets `reproduced`, `reason` and `diagnostic` from the two outcomes.
fn judge(result: &mut ReplayResult) {
    let (recorded, replayed) = (&result.recorded, &result.replayed);
    let mut differences = Vec::new();
    if replayed.level == "none" {
        differences.push("the replay did not pass the gates the save passed".to_owned());
    }
    if recorded.status != replayed.status {
        differences.push(format!(
            "status {} was recorded, {} came back",
            recorded.status, replayed.status
        ));
    }
    if !same_number(recorded.objective.as_ref(), replayed.objective.as_ref()) {
        differences.push(format!(
            "objective {} was recorded, {} came back",
            shown(recorded.objective.as_ref()),
            shown(replayed.objective.as_ref())
        ));
    }
    if result.recorded_result_id != result.result_id {
        differences.push(format!(
            "the plan's result_id was {}, the replay's is {}",
            result.recorded_result_id.as_deref().unwrap_or("none"),
            result.result_id.as_deref().unwrap_or("none")
        ));
    }
    if recorded.checker_status != replayed.checker_status {
        differences.push(format!(
            "the checker said {} then, {} now",
            recorded.checker_status.as_deref().unwrap_or("nothing"),
            replayed.checker_status.as_deref().unwrap_or("nothing")
        ));
    }
    if differences.is_empty() {
        result.reproduced = true;
        return;
    }
    let mut why = Vec::new();
    if recorded.status.is_incumbent() && recorded.objective.is_some() {
        why.push(format!(
            "the recorded status {} is an incumbent, not a proven optimum, so another run can end at another one",
            recorded.status
        ));
    }
    if result.recorded_runtime_version != result.runtime_version {
        why.push(format!(
            "the runtime changed ({} then, {} now)",
            result
                .recorded_runtime_version
                .as_deref()
                .unwrap_or("unknown"),
            result.runtime_version.as_deref().unwrap_or("unknown")
        ));
    }
    why.extend(result.plan_changes.iter().cloned());
    let mut reason = differences.join("; ");
    if !why.is_empty() {
        reason.push_str(" — ");
        reason.push_str(&why.join("; "));
    }
    result.diagnostic = Some(Diagnostic::new(Category::NotVerified, reason.clone()));
    result.reason = Some(reason);
}

fn same_number(a: Option<&Number>, b: Option<&Number>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => match (a.as_i64(), b.as_i64()) {
            (Some(a), Some(b)) => a == b,
            _ => a.as_f64() == b.as_f64(),
        },
        _ => false,
    }
}

fn shown(number: Option<&Number>) -> String {
    number.map_or("none".to_owned(), ToString::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::artifacts::manifest::RunStatus;

    fn plan_replay(recorded_id: &str, replayed_id: &str, changes: &[&str]) -> ReplayResult {
        let outcome = ReplayOutcome {
            status: RunStatus::Planned,
            objective: Number::from_f64(4412.0),
            checker_status: Some("CORRECT".to_owned()),
            level: "checked".to_owned(),
        };
        ReplayResult {
            target_dir: "plans/q3".to_owned(),
            backend: Backend::Planner,
            reproduced: false,
            reason: None,
            recorded: outcome.clone(),
            replayed: outcome,
            saved_at: "2026-12-01T00:00:00Z".to_owned(),
            recorded_runtime_version: Some("2.9.2".to_owned()),
            runtime_version: Some("2.9.2".to_owned()),
            solve: None,
            run: None,
            checker: None,
            recorded_result_id: Some(recorded_id.to_owned()),
            result_id: Some(replayed_id.to_owned()),
            diagnostic: None,
            plan_changes: changes.iter().map(|c| (*c).to_owned()).collect(),
        }
    }

    #[test]
    fn a_plan_whose_id_moved_says_what_changed_in_the_planner() {
        let mut result = plan_replay(
            "aa",
            "bb",
            &["the plan was solved by org.gecode.gecode then, by org.minizinc.mip.coin-bc now"],
        );
        judge(&mut result);
        assert!(!result.reproduced);
        assert_eq!(
            result.reason.as_deref(),
            Some(
                "the plan's result_id was aa, the replay's is bb — the plan was solved by org.gecode.gecode then, by org.minizinc.mip.coin-bc now"
            )
        );
        // The same id reproduces, whatever is noted.
        let mut result = plan_replay("aa", "aa", &["ignored"]);
        judge(&mut result);
        assert!(result.reproduced && result.reason.is_none());
        // Nothing to explain: the difference alone.
        let mut result = plan_replay("aa", "bb", &[]);
        judge(&mut result);
        assert_eq!(
            result.reason.as_deref(),
            Some("the plan's result_id was aa, the replay's is bb")
        );
        // Never a field of the result.
        let shown = serde_json::to_value(plan_replay("aa", "bb", &["x"])).unwrap();
        assert!(shown.get("plan_changes").is_none(), "{shown}");
    }
}
