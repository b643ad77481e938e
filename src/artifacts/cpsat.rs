//! `save_verified_cpsat_python`: re-run an inline CP-SAT script and save it
//! only if every gate it names passes — or, with `verify_only`, run the
//! same gates and save nothing.
//!
//! Gates, in order, each short-circuiting: reported (status `optimal` or
//! `feasible` with a non-empty solution); expectation (the objective meets
//! a threshold — a quality gate, not a proof of optimality); checker (the
//! checker says `accepted` with no errors). The target and the experiment
//! provenance are checked before any child runs.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value, json};
use tokio_util::sync::CancellationToken;

use super::Artifacts;
use super::manifest::{
    ArtifactManifest, Backend, CpsatRecord, Expectation, RunStatus, SavedFile, VerificationRecord,
};
use super::target::{FileSet, Target, check_target, commit, pretty};
use crate::budget::Budget;
use crate::cpsat::{
    CheckerReport, CpsatPythonExperimentResult, CpsatPythonResult, ScriptRequest, ScriptSource,
    ScriptStatus, config_sha256, validate_seed,
};
use crate::diagnostics::{Category, Diagnostic, ToolError};
use crate::progress::{Progress, Stage};
use crate::sha256_hex;
use crate::userfiles::off_thread;
use crate::verdict::RaceStatus;

/// A CP-SAT save as requested.
#[derive(Debug, Clone)]
pub struct SavePythonRequest {
    /// The complete inline script, saved as `model.py`; the save re-runs it
    /// inline in a fresh directory.
    pub source: String,
    /// Required unless `verify_only`.
    pub target_dir: Option<String>,
    /// The re-run's budget, checked where the request was made.
    pub script_timeout_ms: Budget,
    /// The instance text handed to the checker in its payload; saved as
    /// `problem.txt` whenever given.
    pub problem: Option<String>,
    /// The objective threshold of the expectation gate; `None` skips that
    /// gate.
    pub expectation: Option<Expectation>,
    /// Inline Python checker, saved as `checker.py` (with the run's
    /// `solution.json`); `None` skips the checker gate.
    pub checker: Option<String>,
    /// The checker's budget; `None`: the script's. Given without a checker,
    /// it is refused.
    pub checker_timeout_ms: Option<Budget>,
    /// Allows replacing a previous solvergate save in `target_dir`.
    pub overwrite: bool,
    /// Runs every gate and writes nothing; `target_dir` and `overwrite` are
    /// then ignored.
    pub verify_only: bool,
    /// Replay seed, passed to the script as `SOLVERGATE_CPSAT_SEED` and
    /// recorded in the manifest; must fit a signed 32-bit integer.
    pub seed: Option<i64>,
    /// Replay config, handed to the script through `SOLVERGATE_CPSAT_CONFIG`
    /// and saved as `replay-config.json`; `{}` counts as none.
    pub config: Option<Map<String, Value>>,
    /// Provenance only: the experiment an accepted attempt of this script
    /// came from.
    pub experiment_result: Option<CpsatPythonExperimentResult>,
}

/// The highest gate that passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum VerificationLevel {
    /// Not even the reported gate passed.
    None,
    /// The script reported `optimal` or `feasible` with a non-empty
    /// solution and exited 0.
    Reported,
    /// The objective also met the expectation's threshold.
    Expectation,
    /// The checker also accepted, with no errors.
    Checked,
}

impl VerificationLevel {
    /// The level as it reads in the JSON and in the manifest's
    /// `verification.level` (`reported`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            VerificationLevel::None => "none",
            VerificationLevel::Reported => "reported",
            VerificationLevel::Expectation => "expectation",
            VerificationLevel::Checked => "checked",
        }
    }
}

/// What a CP-SAT save (or verify-only run) did.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SaveVerifiedPythonResult {
    /// Something was written. Never the verdict: that is `reason == null`.
    pub saved: bool,
    /// Why a gate failed; `null` when every gate passed.
    pub reason: Option<String>,
    /// The highest gate that passed.
    pub verification_level: VerificationLevel,
    /// The reported gate passed: status `optimal` or `feasible`, a
    /// non-empty solution, exit code 0.
    pub reported_passed: bool,
    /// `null` when no expectation was given or an earlier gate failed.
    pub expectation_passed: Option<bool>,
    /// The checker's report, when it ran.
    pub checker: Option<CheckerReport>,
    /// The resolved target; `null` for verify-only.
    pub target_dir: Option<String>,
    /// What was written (empty unless `saved`).
    pub files: Vec<SavedFile>,
    /// The re-run itself.
    pub status: ScriptStatus,
    /// The re-run's solution; `null` when it reported none.
    pub solution: Option<Map<String, Value>>,
    /// The re-run's objective; `null` when it reported none.
    pub objective: Option<Number>,
    /// The re-run's raw stdout (stdout and stderr together capped at 1 MiB).
    pub stdout: String,
    /// The re-run's raw stderr.
    pub stderr: String,
    /// The re-run was stopped at `script_timeout_ms`.
    pub timed_out: bool,
    /// The re-run's output went over the 1 MiB cap.
    pub truncated: bool,
    /// Wall-clock time of the re-run alone (not the checker), in
    /// milliseconds.
    pub duration_ms: u64,
    /// `not_verified` when a gate failed, else the run's own diagnostic.
    pub diagnostic: Option<Diagnostic>,
}

/// How the gates went.
pub(crate) struct Gates {
    pub level: VerificationLevel,
    pub reported_passed: bool,
    pub expectation_passed: Option<bool>,
    pub checker: Option<CheckerReport>,
    pub reason: Option<String>,
}

impl Artifacts {
    /// Re-runs a CP-SAT script through its gates and saves it when they pass.
    pub async fn save_cpsat(
        &self,
        request: &SavePythonRequest,
        progress: &Progress,
        cancel: &CancellationToken,
    ) -> Result<SaveVerifiedPythonResult, ToolError> {
        progress.report(Stage::Validating, "checking the arguments and the target");
        let checker_budget = match (request.checker_timeout_ms, &request.checker) {
            (Some(_), None) => {
                return Err(ToolError::invalid("checker_timeout_ms needs a checker"));
            }
            (Some(budget), Some(_)) => budget,
            (None, _) => request.script_timeout_ms,
        };
        if let Some(expectation) = &request.expectation {
            check_expectation(expectation)?;
        }
        validate_seed(request.seed)?;
        let script = ScriptRequest {
            source: ScriptSource::Inline(request.source.clone()),
            args: Vec::new(),
            seed: request.seed,
            config: request.config.clone(),
            timeout_ms: request.script_timeout_ms,
        };
        drop(script.prepare_async().await?);
        let checker = request.checker.clone().map(ScriptSource::Inline);
        if let Some(checker) = &checker {
            drop(checker.prepare_checker_async().await?);
        }
        let target = match (&request.target_dir, request.verify_only) {
            (_, true) => None,
            (None, false) => {
                return Err(ToolError::new(
                    Category::InvalidSaveTarget,
                    "target_dir is required to save (pass verify_only: true to run the gates without saving)",
                ));
            }
            (Some(dir), false) => {
                let (dir, overwrite) = (dir.clone(), request.overwrite);
                Some(off_thread(move || check_target(&dir, overwrite)).await?)
            }
        };
        if let Some(experiment) = &request.experiment_result {
            check_experiment(experiment, request)?;
        }
        self.cpsat.python(cancel).await?;

        progress.report(Stage::Running, "re-running the script");
        let run = self.cpsat.run(&script, &Progress::none(), cancel).await?;
        let gates = self
            .gates(
                &run,
                request.expectation.as_ref(),
                checker.as_ref(),
                request.problem.as_deref(),
                checker_budget,
                progress,
                cancel,
            )
            .await?;
        let written = match (&target, &gates.reason) {
            (Some(target), None) => {
                progress.report(Stage::Parsing, "writing the artifact");
                let ortools = self.cpsat.ortools_version(cancel).await.ok();
                let files = self
                    .commit_cpsat(request, target, &run, &gates, ortools)
                    .await?;
                Some((target, files))
            }
            _ => None,
        };
        progress.report(Stage::Complete, "done");
        Ok(python_result(run, gates, target.as_ref(), written))
    }

    /// Runs the gates in order on a finished run.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn gates(
        &self,
        run: &CpsatPythonResult,
        expectation: Option<&Expectation>,
        checker: Option<&ScriptSource>,
        problem: Option<&str>,
        checker_budget: Budget,
        progress: &Progress,
        cancel: &CancellationToken,
    ) -> Result<Gates, ToolError> {
        let mut gates = Gates {
            level: VerificationLevel::None,
            reported_passed: false,
            expectation_passed: None,
            checker: None,
            reason: None,
        };
        use ScriptStatus::{Error, Feasible, Infeasible, Optimal, Timeout, Unknown};
        let solution = match (&run.solution, run.status) {
            (Some(solution), Optimal | Feasible) if !solution.is_empty() => solution,
            (_, Optimal | Feasible) => {
                gates.reason = Some(format!(
                    "reported gate: status {} with an empty solution",
                    run.status
                ));
                return Ok(gates);
            }
            (_, status @ (Timeout | Infeasible | Unknown | Error)) => {
                gates.reason = Some(format!(
                    "reported gate: status {status}, not optimal or feasible"
                ));
                return Ok(gates);
            }
        };
        if let Some(code) = run.return_code.filter(|code| *code != 0) {
            gates.reason = Some(format!(
                "reported gate: the script printed an answer but exited with code {code}; a save needs a clean exit"
            ));
            return Ok(gates);
        }
        gates.reported_passed = true;
        gates.level = VerificationLevel::Reported;
        if let Some(expectation) = expectation {
            let met = meets(expectation, run.objective.as_ref());
            gates.expectation_passed = Some(met.is_ok());
            if let Err(why) = met {
                gates.reason = Some(format!("expectation gate: {why}"));
                return Ok(gates);
            }
            gates.level = VerificationLevel::Expectation;
        }
        if let Some(checker) = checker {
            progress.report(Stage::Parsing, "running the checker");
            let report = self
                .cpsat
                .check(checker, problem, solution, run, checker_budget, cancel)
                .await?;
            match report.refusal_with_error_count() {
                Some(refusal) => gates.reason = Some(format!("checker gate: {refusal}")),
                None => gates.level = VerificationLevel::Checked,
            }
            gates.checker = Some(report);
        }
        Ok(gates)
    }

    async fn commit_cpsat(
        &self,
        request: &SavePythonRequest,
        target: &Target,
        run: &CpsatPythonResult,
        gates: &Gates,
        ortools: Option<String>,
    ) -> Result<Vec<SavedFile>, ToolError> {
        let mut set = FileSet::default();
        set.add("model", "model.py", request.source.clone().into_bytes());
        if let Some(problem) = &request.problem {
            set.add("problem", "problem.txt", problem.clone().into_bytes());
        }
        if let Some(checker) = &request.checker {
            set.add("checker", "checker.py", checker.clone().into_bytes());
            set.add("solution", "solution.json", pretty(&run.solution)?);
        }
        let config = request.config.as_ref().filter(|config| !config.is_empty());
        let mut config_sha = None;
        if let Some(config) = config {
            let bytes = pretty(config)?;
            config_sha = Some(sha256_hex(&bytes));
            set.add("replay_config", "replay-config.json", bytes);
        }
        let experiment = match &request.experiment_result {
            Some(experiment) => {
                let (log, summary) = experiment_log(experiment);
                set.add("experiment_log", "experiment-log.json", pretty(&log)?);
                Some(summary)
            }
            None => None,
        };
        let verification = VerificationRecord {
            status: run.status.into(),
            objective: run.objective.clone(),
            checker_status: gates
                .checker
                .as_ref()
                .map(|report| report.status.to_string()),
            level: gates.level.as_str().to_owned(),
        };
        let files = set.files().to_vec();
        let mut manifest = ArtifactManifest::new(
            Backend::CpsatPython,
            ortools.map(|version| format!("ortools {version}")),
            verification,
            files.clone(),
        );
        manifest.cpsat = Some(CpsatRecord {
            script_timeout_ms: request.script_timeout_ms.as_i64(),
            checker_timeout_ms: request.checker_timeout_ms.map(Budget::as_i64),
            replay_seed: request.seed,
            replay_config_sha256: config_sha,
            expectation: request.expectation.clone(),
        });
        manifest.experiment = experiment;
        let staged = set.with_manifest(&manifest);
        let journal = self.journal.clone();
        let pause = self.pause_before_swap;
        let overwrite = request.overwrite;
        let target = target.clone();
        off_thread(move || commit(&target, &staged, overwrite, &journal, pause)).await?;
        Ok(files)
    }
}

fn check_expectation(expectation: &Expectation) -> Result<(), ToolError> {
    if !matches!(
        expectation.objective_sense.as_str(),
        "maximize" | "minimize"
    ) {
        return Err(ToolError::invalid(format!(
            "expectation.objective_sense must be \"maximize\" or \"minimize\", got {:?}",
            expectation.objective_sense
        )));
    }
    if !expectation.objective_threshold.is_finite() {
        return Err(ToolError::invalid(
            "expectation.objective_threshold must be a finite number",
        ));
    }
    Ok(())
}

/// Why a run's objective does not meet the save's expectation.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum Unmet {
    #[error("the run reported no finite objective")]
    NoObjective,
    #[error("objective {value} does not meet the threshold {threshold} ({sense})")]
    Threshold {
        value: f64,
        threshold: f64,
        sense: String,
    },
}

/// Whether the objective meets the expectation; why not otherwise.
pub(crate) fn meets(expectation: &Expectation, objective: Option<&Number>) -> Result<(), Unmet> {
    let Some(value) = objective.and_then(Number::as_f64).filter(|v| v.is_finite()) else {
        return Err(Unmet::NoObjective);
    };
    let threshold = expectation.objective_threshold;
    let ok = match expectation.objective_sense.as_str() {
        "maximize" => value >= threshold,
        _ => value <= threshold,
    };
    if ok {
        Ok(())
    } else {
        Err(Unmet::Threshold {
            value,
            threshold,
            sense: expectation.objective_sense.clone(),
        })
    }
}

/// The experiment must hold an accepted inline attempt of this very script,
/// seed and config.
fn check_experiment(
    experiment: &CpsatPythonExperimentResult,
    request: &SavePythonRequest,
) -> Result<(), ToolError> {
    let refuse = |why: String| {
        ToolError::invalid(format!(
            "experiment_result does not match this save: {why}; nothing was run"
        ))
    };
    match experiment.status {
        RaceStatus::Winner => {}
        RaceStatus::NoWinner => {
            return Err(refuse(format!(
                "its status is {:?}; only an experiment with an accepted attempt is provenance",
                experiment.status.as_str()
            )));
        }
    }
    let source_sha = sha256_hex(request.source.as_bytes());
    let config_sha = config_sha256(request.config.as_ref());
    let matches: Vec<_> = experiment
        .attempts
        .iter()
        .filter(|attempt| {
            attempt.accepted
                && attempt.source_sha256 == source_sha
                && attempt.seed == request.seed
                && attempt.config_sha256 == config_sha
        })
        .collect();
    if matches.is_empty() {
        return Err(refuse(
            "no accepted attempt ran this source with this seed and config".to_owned(),
        ));
    }
    if matches.iter().all(|attempt| attempt.used_script_path) {
        return Err(refuse(
            "every matching attempt ran from script_path, which a save cannot replay (it re-runs inline source in a fresh directory); re-run the script as an inline source attempt".to_owned(),
        ));
    }
    Ok(())
}

/// The experiment as saved in `experiment-log.json` (hashes and scalar
/// outcomes only), and its manifest summary.
fn experiment_log(experiment: &CpsatPythonExperimentResult) -> (Value, Value) {
    let rows: Vec<Value> = experiment
        .attempts
        .iter()
        .map(|attempt| {
            json!({
                "index": attempt.index,
                "name": attempt.name,
                "seed": attempt.seed,
                "source_sha256": attempt.source_sha256,
                "config_sha256": attempt.config_sha256,
                "used_script_path": attempt.used_script_path,
                "script_timeout_ms": attempt.script_timeout_ms,
                "status": attempt.status,
                "objective": attempt.objective,
                "accepted": attempt.accepted,
                "checker_status": attempt.checker_status,
                "message": attempt.message,
                "timed_out": attempt.timed_out,
                "truncated": attempt.truncated,
                "duration_ms": attempt.duration_ms,
            })
        })
        .collect();
    let log = json!({
        "source": "experiment",
        "winner_index": experiment.winner_index,
        "winner_name": experiment.winner_name,
        "objective_sense": experiment.objective_sense,
        "selection_policy": experiment.selection_policy,
        "checker_sha256": experiment.checker_sha256,
        "problem_sha256": experiment.problem_sha256,
        "attempts": rows,
    });
    let summary = json!({
        "source": "experiment",
        "attempts": experiment.attempts.len(),
        "accepted": experiment.attempts.iter().filter(|attempt| attempt.accepted).count(),
        "winner_index": experiment.winner_index,
    });
    (log, summary)
}

fn python_result(
    run: CpsatPythonResult,
    gates: Gates,
    target: Option<&Target>,
    written: Option<(&Target, Vec<SavedFile>)>,
) -> SaveVerifiedPythonResult {
    let diagnostic = match &gates.reason {
        Some(reason) => Some(Diagnostic::new(
            Category::NotVerified,
            format!("{reason}; nothing was written"),
        )),
        None => run.diagnostic.clone(),
    };
    let (saved, files) = match written {
        Some((_, files)) => (true, files),
        None => (false, Vec::new()),
    };
    SaveVerifiedPythonResult {
        saved,
        reason: gates.reason,
        verification_level: gates.level,
        reported_passed: gates.reported_passed,
        expectation_passed: gates.expectation_passed,
        checker: gates.checker,
        target_dir: target.map(|target| target.dir.display().to_string()),
        files,
        status: run.status,
        solution: run.solution,
        objective: run.objective,
        stdout: run.stdout,
        stderr: run.stderr,
        timed_out: run.timed_out,
        truncated: run.truncated,
        duration_ms: run.duration_ms,
        diagnostic,
    }
}

/// A script run's status as a manifest records it (the same words).
impl From<ScriptStatus> for RunStatus {
    fn from(status: ScriptStatus) -> RunStatus {
        match status {
            ScriptStatus::Optimal => RunStatus::Optimal,
            ScriptStatus::Feasible => RunStatus::Feasible,
            ScriptStatus::Infeasible => RunStatus::Infeasible,
            ScriptStatus::Unknown => RunStatus::Unknown,
            ScriptStatus::Error => RunStatus::Error,
            ScriptStatus::Timeout => RunStatus::Timeout,
        }
    }
}
