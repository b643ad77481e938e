//! The four equation tools: check and evaluate equations without a solver,
//! correct observed values and optimise an expression on the MiniZinc
//! runtime. Adapters only: the shapes, checks and models live in
//! [`crate::equations`].

mod args;

use rmcp::handler::server::common::schema_for_output;
use rmcp::model::{CallToolResult, JsonObject};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, tool, tool_router};

use super::SolvergateServer;
use super::args::schema;
use crate::equations::{
    self, CorrectRequest, CorrectionResult, EvaluateRequest, EvaluationResult, OptimizationResult,
    OptimizeRequest, ValidateRequest, ValidationResult, report,
};

#[tool_router(router = equation_router, vis = "pub(super)")]
impl SolvergateServer {
    #[tool(
        description = "Correct values read from a document (OCR, forms) so they satisfy known equations such as gross = quantity * rate: each move away from an observed value costs by its confidence, each violation by its equation's weight. Solved exactly on scaled integers with MiniZinc (status OPTIMAL never when the ±2e9 integer range could cut answers); returns the corrected free values.",
        input_schema = schema::<CorrectRequest>(),
        output_schema = schema_for_output::<CorrectionResult>()
    )]
    async fn correct_values(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.long_call::<CorrectRequest, _>(
            "correct_values",
            arguments,
            &context,
            async |request, progress, cancel| {
                self.equations.correct(&request, progress, cancel).await
            },
            report::correction,
        )
        .await
    }

    #[tool(
        description = "Check the syntax of equations (lhs, rhs) without solving: each gets an errors list (empty when valid) naming the side, column and offending text of every independent problem, each message starting with its kind: syntax error, unary '-'/'+' (write (0 - x)), exponent (** takes a constant whole number 1-16), limit exceeded. At most 10 per side are listed, the rest counted. Call before correct_values or optimize_expression.",
        input_schema = schema::<ValidateRequest>(),
        output_schema = schema_for_output::<ValidationResult>()
    )]
    async fn validate_equations(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.quick_call::<ValidateRequest, _>(
            arguments,
            &context,
            async |request, _cancel| Ok(equations::validate(&request.equations)),
            report::validation,
        )
        .await
    }

    #[tool(
        description = "Evaluate equations with given values (real units): per equation passed, failed, missing_values or error (does not parse, division by zero), with actual (lhs), computed (rhs), error (the difference beyond the relation) and the tolerance applied. No solver runs; use it to decide whether correct_values is needed.",
        input_schema = schema::<EvaluateRequest>(),
        output_schema = schema_for_output::<EvaluationResult>()
    )]
    async fn evaluate_equations(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.quick_call::<EvaluateRequest, _>(
            arguments,
            &context,
            async |request, _cancel| Ok(equations::evaluate(&request)),
            report::evaluation,
        )
        .await
    }

    #[tool(
        description = "Maximise or minimise an arithmetic expression over bounded variables subject to hard and soft constraints, solved exactly with MiniZinc (expressions and units as in correct_values). Returns status, every variable in real units and objective_value recomputed from them.",
        input_schema = schema::<OptimizeRequest>(),
        output_schema = schema_for_output::<OptimizationResult>()
    )]
    async fn optimize_expression(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        self.long_call::<OptimizeRequest, _>(
            "optimize_expression",
            arguments,
            &context,
            async |request, progress, cancel| {
                self.equations.optimize(&request, progress, cancel).await
            },
            report::optimisation,
        )
        .await
    }
}
