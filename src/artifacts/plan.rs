//! Saving a load plan as an artifact (backend `planner`): the cohort, the
//! result whose SHA-256 is its `result_id`, and the bundled model and
//! checker that produced it. Replay plans the saved cohort again and
//! compares ids.
//!
//! The gate: the plan has a recommended card, and every feasible card's
//! solution was confirmed `CORRECT` by the bundled checker (the planner
//! already marks a card infeasible otherwise).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Number;
use tokio_util::sync::CancellationToken;

use super::Artifacts;
use super::manifest::{
    ArtifactManifest, Backend, PlannerRecord, RunStatus, SaveStatus, SavedFile, VerificationRecord,
};
use super::target::{FileSet, check_target, commit, pretty};
use crate::diagnostics::{Category, Diagnostic, ToolError};
use crate::planner::{LoadPlan, LoadProblem, PlanResult, model};
use crate::progress::{Progress, Stage};
use crate::sha256_hex;
use crate::userfiles::off_thread;

/// A plan to save.
#[derive(Debug, Clone)]
pub struct SavePlanRequest {
    /// The cohort to plan, saved as `problem.json`.
    pub problem: LoadProblem,
    /// Absolute path of the directory to create (its parent must exist),
    /// or of a previous save to replace with `overwrite`.
    pub target_dir: String,
    /// Allows replacing a previous solvergate save in `target_dir`.
    pub overwrite: bool,
}

/// What saving a plan did.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SavePlanResult {
    /// `saved` or `not_verified`.
    pub status: SaveStatus,
    /// One sentence: the recommended card and where the plan was saved, or
    /// why nothing was written.
    pub message: String,
    /// The resolved target; on `not_verified` the directory that was not
    /// written.
    pub target_dir: String,
    /// The plan's id (also the SHA-256 of the saved `result.json`).
    pub result_id: String,
    /// The name of the recommended card; `null` when no card is feasible.
    pub recommended: Option<String>,
    /// What was written (empty unless `saved`).
    pub files: Vec<SavedFile>,
    /// `not_verified` with why the plan failed the gate, or `null` when
    /// saved.
    pub diagnostic: Option<Diagnostic>,
}

/// The verification summary of a plan: status `planned`, the recommended
/// card's total as the objective.
pub(crate) fn plan_outcome(plan: &LoadPlan) -> VerificationRecord {
    let recommended = plan.cards.iter().find(|card| card.recommended);
    VerificationRecord {
        status: match recommended {
            Some(_) => RunStatus::Planned,
            None => RunStatus::NoFeasiblePlan,
        },
        objective: recommended
            .and_then(|card| card.cost.as_ref())
            .and_then(|cost| Number::from_f64(cost.total)),
        checker_status: recommended.and_then(|card| card.checker.clone()),
        level: if recommended.is_some() {
            "checked"
        } else {
            "none"
        }
        .to_owned(),
    }
}

impl Artifacts {
    /// Plans a cohort and saves it when the plan passes the gate.
    pub async fn save_plan(
        &self,
        request: &SavePlanRequest,
        progress: &Progress,
        cancel: &CancellationToken,
    ) -> Result<SavePlanResult, ToolError> {
        progress.report(Stage::Validating, "checking the cohort and the target");
        request.problem.validate()?;
        self.check_plan_target(request).await?;
        progress.report(Stage::Running, "planning");
        let planned = self
            .planner
            .plan(&request.problem, progress, cancel)
            .await?;
        self.save_planned(request, &planned, progress, cancel).await
    }

    /// Refuses a target a save could not write, before any planning.
    pub async fn check_plan_target(&self, request: &SavePlanRequest) -> Result<(), ToolError> {
        let (dir, overwrite) = (request.target_dir.clone(), request.overwrite);
        off_thread(move || check_target(&dir, overwrite)).await?;
        Ok(())
    }

    /// Saves a plan already made for `request.problem` when it passes the
    /// gate, so what is saved is exactly what the caller has shown.
    pub async fn save_planned(
        &self,
        request: &SavePlanRequest,
        planned: &PlanResult,
        progress: &Progress,
        cancel: &CancellationToken,
    ) -> Result<SavePlanResult, ToolError> {
        let target = {
            let (dir, overwrite) = (request.target_dir.clone(), request.overwrite);
            off_thread(move || check_target(&dir, overwrite)).await?
        };
        let plan = &planned.result;
        let outcome = plan_outcome(plan);
        let unconfirmed = plan
            .cards
            .iter()
            .any(|card| card.feasible && card.checker.as_deref() != Some("CORRECT"));
        let refusal = match (&plan.recommended, unconfirmed) {
            (None, _) => Some("no plan is feasible for this cohort".to_owned()),
            (_, true) => Some("a feasible card was not confirmed by the checker".to_owned()),
            _ => None,
        };
        if let Some(why) = refusal {
            return Ok(SavePlanResult {
                status: SaveStatus::NotVerified,
                message: format!("{why}; nothing was written"),
                target_dir: target.dir.display().to_string(),
                result_id: planned.result_id.clone(),
                recommended: plan.recommended.clone(),
                files: Vec::new(),
                diagnostic: Some(Diagnostic::new(Category::NotVerified, why)),
            });
        }
        progress.report(Stage::Parsing, "writing the artifact");
        let mut set = FileSet::default();
        set.add("problem", "problem.json", pretty(&request.problem)?);
        set.add("plan_result", "result.json", plan.canonical());
        set.add("model", "model.mzn", model::MODEL.as_bytes().to_vec());
        set.add(
            "checker",
            "load_planner.mzc.mzn",
            model::CHECKER.as_bytes().to_vec(),
        );
        let files = set.files().to_vec();
        let runtime_version = self.minizinc.runtime().version(cancel).await.ok();
        let mut manifest =
            ArtifactManifest::new(Backend::Planner, runtime_version, outcome, files.clone());
        manifest.planner = Some(PlannerRecord {
            result_id: planned.result_id.clone(),
            model_sha256: sha256_hex(model::MODEL.as_bytes()),
            checker_sha256: sha256_hex(model::CHECKER.as_bytes()),
        });
        let staged = set.with_manifest(&manifest);
        let journal = self.journal.clone();
        let pause = self.pause_before_swap;
        let overwrite = request.overwrite;
        let written = target.clone();
        off_thread(move || commit(&written, &staged, overwrite, &journal, pause)).await?;
        Ok(SavePlanResult {
            status: SaveStatus::Saved,
            message: format!(
                "planned ({} recommended) and saved {} file(s) to {}",
                plan.recommended.as_deref().unwrap_or("none"),
                files.len() + 1,
                target.dir.display()
            ),
            target_dir: target.dir.display().to_string(),
            result_id: planned.result_id.clone(),
            recommended: plan.recommended.clone(),
            files,
            diagnostic: None,
        })
    }
}
