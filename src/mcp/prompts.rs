//! The MCP prompt every toolset offers: one backend-neutral workflow a user
//! can pick from the client's prompt menu. Prompts are user-controlled; the
//! tools' own descriptions do the routing when nobody picks one.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{PromptMessage, Role};
use rmcp::{prompt, prompt_router};
use schemars::JsonSchema;
use serde::Deserialize;

use super::SolvergateServer;

/// Arguments of `solve_constraint_problem`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ProblemArgs {
    /// The problem in the user's words: what to decide, the rules, the goal.
    pub problem: String,
}

const WORKFLOW: &str = "\
Solve the constraint problem below with the solvergate tools. Work in this order:
1. Name the decision variables and their domains, the constraints and the objective (or that any feasible answer will do). Ask the user only about information that changes the answer.
2. Pick a backend. MiniZinc suits declarative models built from global constraints (alldifferent, cumulative, table); OR-Tools CP-SAT in Python suits instances that need data wrangling or Python logic.
3. Write the complete model or script. Rule for everything you write: modelling code only — no network access, no file writes or deletes, no starting other programs — unless the user asked for it.
4. MiniZinc: call check_minizinc_model (with the data you will solve with) and repair until its status is \"ok\", then solve_minizinc_model. Use check_minizinc_files / solve_minizinc_files for models already on disk.
   CP-SAT: embed the instance in the script (stdin is empty) and make its last stdout line one JSON object {\"status\": \"optimal|feasible|infeasible|unknown|error\", \"objective\": <number or null>, \"solution\": {<every decision value>}}; run it with run_cpsat_python, or run_cpsat_python_file for a script on disk. If the result says status error, read diagnostic.details.field, fix the script and run again.
5. Answer in the user's terms: the status as returned (say optimal only when it is), the objective, and the solution. A timeout with a solution is a best-so-far answer, not a proven one.";

#[prompt_router(router = "prompt_router", vis = "pub(super)")]
impl SolvergateServer {
    #[prompt(
        name = "solve_constraint_problem",
        description = "A step-by-step workflow for solving a scheduling, assignment, routing, packing or other constraint problem with MiniZinc or OR-Tools CP-SAT through solvergate."
    )]
    async fn solve_constraint_problem(
        &self,
        Parameters(args): Parameters<ProblemArgs>,
    ) -> Vec<PromptMessage> {
        vec![PromptMessage::new_text(
            Role::User,
            format!("{WORKFLOW}\n\nProblem:\n{}", args.problem.trim()),
        )]
    }
}
