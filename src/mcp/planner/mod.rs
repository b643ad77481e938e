//! The load planner's three tools: plan a cohort, explain a stored result
//! from its id alone, and check any narration against a stored result.

mod args;
pub(super) mod prompt;
mod render;

use rmcp::handler::server::common::schema_for_output;
use rmcp::model::{CallToolResult, JsonObject};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, tool, tool_router};

use self::args::{ExplainArgs, PlanLoadArgs, SavePlanArgs, VerifyNarrationArgs};
use super::SolvergateServer;
use super::args::schema;
use crate::artifacts::SavePlanResult;
use crate::planner::PlanResult;
use crate::planner::explain::{self, Explanation, NarrationCheck};

#[tool_router(router = planner_router, vis = "pub(super)")]
impl SolvergateServer {
    #[tool(
        description = "Plan a cohort of orders: choose air, sea consolidation (LCL) or full containers (FCL) per order, price four plans (all_air, all_lcl, all_fcl, optimised) on the bundled MiniZinc model with its checker, attach an exact risk read (ETA p50/p90, chance of missing a deadline, CVaR90 of the delay), and recommend one. Returns the result verbatim with result_id (SHA-256 of the result: the same cohort gives the same id). Put it into words with explain_load_plan, never by restating figures yourself.",
        input_schema = schema::<PlanLoadArgs>(),
        output_schema = schema_for_output::<PlanResult>()
    )]
    async fn plan_load(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.long_call::<PlanLoadArgs, _>(
            "plan_load",
            arguments,
            &context,
            async |problem, progress, cancel| self.planner.plan(&problem, progress, cancel).await,
            render::load_plan,
        )
        .await
    }

    #[tool(
        description = "Narrate a stored load plan from its result_id alone (which orders go by which mode, and why): a fixed template filled by key lookup (no arithmetic, no rounding), checked by the narration guard before it is returned. Quote it as given.",
        input_schema = schema::<ExplainArgs>(),
        output_schema = schema_for_output::<Explanation>()
    )]
    async fn explain_load_plan(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.quick_call::<ExplainArgs, _>(
            arguments,
            &context,
            async |result_id, _cancel| {
                let plan = self.planner.load(&result_id).await?;
                let narration = explain::narrate(&plan);
                let check = explain::verify(&narration, &plan);
                Ok(Explanation {
                    result_id,
                    narration,
                    check,
                })
            },
            render::explanation,
        )
        .await
    }

    #[tool(
        description = "Check a narration against a stored load plan: every number in the text (11480.0, 0.1246, or 13,754.25 with thousands separators) must appear in the stored result; rounded, converted (percentages), summed or invented figures are returned as offending tokens. A lexical check: a right number under a wrong label still passes.",
        input_schema = schema::<VerifyNarrationArgs>(),
        output_schema = schema_for_output::<NarrationCheck>()
    )]
    async fn verify_narration(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.quick_call::<VerifyNarrationArgs, _>(
            arguments,
            &context,
            async |(narration, result_id), _cancel| {
                let plan = self.planner.load(&result_id).await?;
                Ok(explain::verify(&narration, &plan))
            },
            render::narration_check,
        )
        .await
    }

    #[tool(
        description = "Plan a cohort and save it as an artifact when a plan is recommended and every feasible card was confirmed by the checker: problem.json, result.json (its SHA-256 is the result_id), the bundled model and checker, and a manifest. replay_artifact plans it again and compares result ids.",
        input_schema = schema::<SavePlanArgs>(),
        output_schema = schema_for_output::<SavePlanResult>()
    )]
    async fn save_load_plan(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.long_call::<SavePlanArgs, _>(
            "save_load_plan",
            arguments,
            &context,
            async |request, progress, cancel| {
                self.artifacts.save_plan(&request, progress, cancel).await
            },
            render::saved_plan,
        )
        .await
    }
}
