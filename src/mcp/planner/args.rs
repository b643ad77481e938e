//! The arguments of the load planner's tools: plan, explain, verify a
//! narration, save.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer};

use crate::artifacts::SavePlanRequest;
use crate::diagnostics::ToolError;
use crate::mcp::args::IntoRequest;
use crate::planner::LoadProblem;

/// Arguments of `plan_load`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanLoadArgs {
    /// The cohort of orders, with rates per mode, delays and policy; the
    /// plan_shipping_loads prompt holds a complete one.
    #[serde(deserialize_with = "problem")]
    pub problem: LoadProblem,
}

/// A problem whose reading error names where it is and, for a missing
/// field, shows the field's shape.
fn problem<'de, D: Deserializer<'de>>(deserializer: D) -> Result<LoadProblem, D::Error> {
    let value = serde_json::Value::deserialize(deserializer)?;
    LoadProblem::from_value(value).map_err(serde::de::Error::custom)
}

impl IntoRequest for PlanLoadArgs {
    type Request = LoadProblem;

    fn into_request(self) -> Result<LoadProblem, ToolError> {
        self.problem.validate()?;
        Ok(self.problem)
    }
}

/// Arguments of `explain_load_plan`: the id, and nothing else.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExplainArgs {
    /// A result_id from plan_load.
    pub result_id: String,
}

impl IntoRequest for ExplainArgs {
    type Request = String;

    fn into_request(self) -> Result<String, ToolError> {
        Ok(self.result_id)
    }
}

/// Arguments of `verify_narration`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VerifyNarrationArgs {
    /// The text to check, in any words.
    pub narration: String,
    /// The result_id the narration speaks about.
    pub result_id: String,
}

impl IntoRequest for VerifyNarrationArgs {
    type Request = (String, String);

    fn into_request(self) -> Result<(String, String), ToolError> {
        Ok((self.narration, self.result_id))
    }
}

/// Arguments of `save_load_plan`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SavePlanArgs {
    #[serde(deserialize_with = "problem")]
    pub problem: LoadProblem,
    /// Absolute path of the directory to create (its parent must exist), or
    /// of a previous save to replace with `overwrite`.
    pub target_dir: String,
    /// Replace a previous solvergate save in target_dir.
    #[serde(default)]
    pub overwrite: bool,
}

impl IntoRequest for SavePlanArgs {
    type Request = SavePlanRequest;

    fn into_request(self) -> Result<SavePlanRequest, ToolError> {
        self.problem.validate()?;
        Ok(SavePlanRequest {
            problem: self.problem,
            target_dir: self.target_dir,
            overwrite: self.overwrite,
        })
    }
}
