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
        description = "Correct values read from a document (OCR, forms) so they satisfy known equations such as gross = quantity * rate. Variables: obs (may be left out for a free unknown), confidence 0-1 (resistance to change), mult_factor (100 for cents), optional min/max, fixed (needs obs). Equations: lhs, rhs (+ - * / % **, parentheses; (0 - x) for minus), relation ==/<=/>=, weight and tolerance in units of 1/(largest mult_factor), see equation_units. Solved exactly with MiniZinc; status OPTIMAL (never when the ±2e9 integer range could cut answers), FEASIBLE, INFEASIBLE, UNKNOWN or INVALID_EQUATION, and the corrected free values.",
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
        description = "Check the syntax of equations (lhs, rhs) without solving: each gets an errors list (empty when valid) with every independent problem, naming the side, the column and the offending text, each message starting with its kind: syntax error, unary '-'/'+' (write (0 - x)), exponent (** takes a constant whole number 1-16), limit exceeded. At most 10 per side are listed, the rest counted. Call before correct_values or optimize_expression.",
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
        description = "Evaluate equations with given values (real units): per equation passed, failed, missing_values or error (does not parse, division by zero), with actual (lhs), computed (rhs), error (the difference beyond the relation) and the tolerance applied. tolerance is in real units, or with mult_factors ({name: factor}) in correct_values' units, so both tools agree. No solver runs; use it to decide whether correct_values is needed.",
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
        description = "Maximise or minimise an arithmetic expression over bounded variables (min, max, mult_factor) subject to hard constraints (must hold; contradictory ones give INFEASIBLE) and soft constraints (weight per unit of violation, in correct_values' units; subtracted from a maximised objective, added to a minimised one). Same expression syntax as correct_values. Returns status, every variable in real units and objective_value recomputed from them.",
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
