//! The verified-save tools and replay: adapters over the artifacts service.
//! Saves re-run the model or script on the runtime before writing anything;
//! replay checks a saved directory's files and runs it again.

mod args;
mod render;

use rmcp::handler::server::common::schema_for_output;
use rmcp::model::{CallToolResult, JsonObject};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, tool, tool_router};

use self::args::{ReplayArgs, SaveModelArgs, SavePythonArgs};
use super::SolvergateServer;
use super::args::schema;
use crate::artifacts::{ReplayResult, SaveVerifiedModelResult, SaveVerifiedPythonResult};

#[tool_router(router = artifact_router, vis = "pub(super)")]
impl SolvergateServer {
    #[tool(
        description = "Save a MiniZinc model to a local directory only after re-verifying it: compile check ok, a proven answer (optimal, or satisfied on a satisfaction model; no time limit hit) and, with a checker, verdict accepted. A failed gate gives status not_verified with the check and solve results, and writes nothing. Writes the inputs, local includes, solve-result.json and a manifest with every file's sha256; replay_artifact re-runs it.",
        input_schema = schema::<SaveModelArgs>(),
        output_schema = schema_for_output::<SaveVerifiedModelResult>()
    )]
    async fn save_verified_minizinc_model(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.long_call::<SaveModelArgs, _>(
            "save_verified_minizinc_model",
            arguments,
            &context,
            async |request, progress, cancel| {
                self.artifacts
                    .save_minizinc(&request, progress, cancel)
                    .await
            },
            render::saved_model,
        )
        .await
    }

    #[tool(
        description = "Re-run a CP-SAT script and save it only when its gates pass, in order: reported (optimal or feasible, non-empty solution), expectation, checker. reason is null exactly when every gate passed; saved says whether anything was written. Writes model.py, problem.txt, checker.py, solution.json, replay-config.json, experiment-log.json and a manifest; replay_artifact re-runs it.",
        input_schema = schema::<SavePythonArgs>(),
        output_schema = schema_for_output::<SaveVerifiedPythonResult>()
    )]
    async fn save_verified_cpsat_python(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.long_call::<SavePythonArgs, _>(
            "save_verified_cpsat_python",
            arguments,
            &context,
            async |request, progress, cancel| {
                self.artifacts.save_cpsat(&request, progress, cancel).await
            },
            render::saved_python,
        )
        .await
    }

    #[tool(
        description = "Replay a saved artifact: check the manifest's seal and every file's sha256 (a changed, missing or extra file is refused, naming it), run it again as recorded (solver, controls, seed, config, checker, expectation) and report recorded vs replayed status and objective, whether it reproduced, and why not.",
        input_schema = schema::<ReplayArgs>(),
        output_schema = schema_for_output::<ReplayResult>()
    )]
    async fn replay_artifact(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.long_call::<ReplayArgs, _>(
            "replay_artifact",
            arguments,
            &context,
            async |target_dir, progress, cancel| {
                self.artifacts.replay(&target_dir, progress, cancel).await
            },
            render::replay,
        )
        .await
    }
}
