//! The MCP prompts: workflows a user picks from the client's prompt menu.
//! `solve_constraint_problem` (every toolset) is the short backend-neutral
//! one; the full toolset adds a detailed MiniZinc workflow, a detailed CP-SAT
//! workflow, and a workflow that compares formulations before answering.
//! Prompts are user-controlled; the tools' own descriptions do the routing
//! when nobody picks one.

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
4. MiniZinc: call check_minizinc_model (with the data you will solve with) and repair until its status is \"ok\", then solve_minizinc_model. To verify answers, pass a checker: a .mzc.mzn that declares the output variables as parameters (`int: x;`) and prints CORRECT or INCORRECT: <why> for every solution; only checker.verdict \"accepted\" is a pass. Use check_minizinc_files / solve_minizinc_files for models already on disk.
   CP-SAT: embed the instance in the script (stdin is empty) and make its last stdout line one JSON object {\"status\": \"optimal|feasible|infeasible|unknown|error\", \"objective\": <number or null>, \"solution\": {<every decision value>}}; run it with run_cpsat_python, or run_cpsat_python_file for a script on disk. If the result says status error, read diagnostic.details.field, fix the script and run again.
5. Answer in the user's terms: the status as returned (say optimal only when it is), the objective, and the solution. A timeout with a solution is a best-so-far answer, not a proven one.";

/// Prompts only the full toolset offers (they lean on its tools).
pub(super) const FULL_ONLY_PROMPTS: &[&str] = &[
    "minizinc_solution_workflow",
    "cpsat_python_solution_workflow",
    "auto_tune_constraint_problem",
];

const MINIZINC_WORKFLOW: &str = "\
Solve the problem below with a MiniZinc model that solvergate checks, runs and verifies. solvergate never writes the model: you do, and the runtime's answer is what you report.
1. Understand it. Name the decision variables and their domains, every rule, and the objective (or that any feasible answer will do). When something that changes the answer is missing, ask the user a short question instead of inventing a value. If the data is in a spreadsheet, read it with load_tabular_data (follow next_row_offset until it is null) and copy the values into MiniZinc data; never guess what a column means — ask.
2. Draft a complete model: parameters and their data, variable declarations, constraints, exactly one solve item and an output item. Prefer global constraints (alldifferent, cumulative, table, circuit) where they fit. Modelling code only — no network access, no file writes or deletes, no starting other programs — unless the user asked for it.
3. Check before solving: call check_minizinc_model with the model and the same data you will solve with. Status \"ok\": go on. Status \"error\": read the diagnostic and stderr, repair, check again. Status \"timeout\": ask the user whether to simplify, raise timeout_ms, or solve anyway. For a model already on disk use check_minizinc_files / solve_minizinc_files with absolute paths; relative includes resolve from the model's directory.
4. When correctness matters, also write a checker and pass it as checker: a .mzc.mzn file that declares the output variables it checks as parameters without a value (`int: x; array[1..n] of int: route;` — no `var`, no `solve` item), recomputes every rule from them, and prints for every solution a line starting CORRECT, or INCORRECT: <which rule and why>. Guard indexes and divisions: an evaluation error in the checker is not a pass. Only checker.verdict \"accepted\" verifies a solution; rejected, error, no_verdict and timeout come with checker.reason. A checker that does not accept a solution is something to report, not to hide.
5. Solve with solve_minizinc_model. For a solve that may outlast the client's request timeout use submit_solve_job and poll get_solve_job. To try several solvers or seeds at once use submit_portfolio_job.
6. Read the result by its status: optimal (proven best), satisfied (a solution; on an optimisation model, not proven best), unsatisfiable (no solution exists), timeout (with a solution: the best found in time; without: no answer), error (read diagnostic.category and stderr). On unsatisfiable, call find_unsat_core with the same model and data: it names the constraints that conflict, by line; show them to the user and ask which rule may be relaxed. Never relax a rule on your own.
7. Answer leading with the result: the status in plain words, the solution as the result gives it (a table when there are many similar items), the objective, and the solver's statistics as reported. Say \"optimal\" only when the status says so.
8. Only when the user asks: save the verified model with save_verified_minizinc_model into an absolute directory the user names (the server re-runs and re-checks it before writing anything; replay_artifact re-runs a save later), or write the solution to a spreadsheet with write_tabular_result.
A person can run the same thing in a terminal with `solvergate solve MODEL.mzn DATA.dzn`; never suggest a minizinc found on PATH.";

const CPSAT_WORKFLOW: &str = "\
Solve the problem below with an OR-Tools CP-SAT Python script that solvergate runs and verifies. solvergate never writes the script: you do, and the script's own answer is what you report.
1. Understand it. Name the decision variables and their domains, every rule, and the objective. When something that changes the answer is missing, ask the user a short question instead of inventing a value. Spreadsheet data: read it with load_tabular_data (follow next_row_offset until it is null) and embed the values in the script.
2. Write one complete, runnable script. It gets no stdin: embed the instance, or read a file named in args. Its last stdout line must be one JSON object {\"status\": \"optimal|feasible|infeasible|unknown|error\", \"objective\": number or null, \"solution\": {every decision value}} (optionally \"best_objective_bound\"). The easy way: `import solvergate` and end with `solvergate.report(solver, status, {\"x\": x, ...}, model=model)`, which maps CP-SAT's status and turns variables and nested lists into values. For a result you may save, set solver.parameters.random_seed and use one search worker, or read the seed solvergate passes in SOLVERGATE_CPSAT_SEED. Modelling code only: no network access, no file writes or deletes, no starting other programs, unless the user asked for it — the script runs on the user's machine.
3. Run it with run_cpsat_python (a script on disk: run_cpsat_python_file). If the status is error, read diagnostic (details.line for a syntax error, details.exception and the traceback tail otherwise), fix the script and run again.
4. When correctness matters, write a separate checker script: it gets a JSON payload file (problem, solution, objective, solver_status) as argv[1] and prints as its last line exactly one JSON object {\"status\": \"accepted|rejected|error\", \"errors\": [...]} (each key once) before it exits; it must not start background processes (output after it exits is ignored). Only checker.verdict \"accepted\" is a pass. Run script and checker together with run_cpsat_python_file_checked (test_checker: true once shows whether it rejects mutated answers — a checker that accepts everything proves nothing) or with submit_cpsat_python_job and a checker.
5. Several variants (different formulations, the same script under different configs or seeds): one run_cpsat_python_experiment call, not many separate runs. Keep the attempts' own num_workers times max_parallel_attempts near the machine's core count.
6. Read the result: optimal is proven best; feasible is a valid answer not proven best; infeasible means no solution exists; unknown and timeout mean no proof either way (a best_objective_bound is a hint, not a solution); error means the script failed or broke the contract.
7. Answer leading with the result: the status in plain words, the solution in the user's terms (a table when there are many similar items), the objective. Say \"optimal\" only when the status says so.
8. Only when the user asks: save the script with save_verified_cpsat_python into an absolute directory the user names (the server re-runs it, and its checker if any, before writing anything; pass experiment_result and config when the script won an experiment), or write the answer to a spreadsheet with write_tabular_result.";

const AUTO_TUNE_WORKFLOW: &str = "\
The user wants formulations compared before one answer is given. Use the solvergate tools in three tiers; solvergate runs and verifies, you draft and compare.
1. Understand the problem: variables, domains, every rule, the objective. Ask only about what changes the answer. Look for a model the user already has on disk (.mzn/.dzn or a CP-SAT script): review it and include it as one candidate.
2. Draft two to four candidates: MiniZinc models (one shared data interface, so one .dzn serves them all) and/or CP-SAT scripts. Write a checker for each backend you use: comparing candidates without a checker compares nothing. A MiniZinc checker declares the output variables it reads as parameters (`int: x;`, no `var` or `solve`) and prints CORRECT or INCORRECT: <why> for every solution; a CP-SAT checker prints {\"status\": \"accepted|rejected|error\", \"errors\": [...]} as its last line. Only a checker verdict of accepted counts: a race with a checker never lets a refused solution win. Modelling code only — no network access, no file writes or deletes, no starting other programs — unless the user asked for it.
3. Tier 1, smoke test on a tiny instance: check_minizinc_model (and inspect_minizinc_model) per MiniZinc candidate, one short run_cpsat_python per CP-SAT candidate. Drop only candidates that are broken; a toy instance does not rank anything.
4. Tier 2, race on a representative instance, larger than the smoke one: submit_portfolio_job per MiniZinc candidate across solvers and seeds (winner_policy best_objective keeps the best incumbent on optimisation models), and one run_cpsat_python_experiment across the CP-SAT candidates with their checker. Rank by checker-accepted first, then objective, then time. Nothing from this tier is the answer.
5. Tier 3, the full instance: run the provisional winner with its checker (solve_minizinc_model or submit_solve_job; a checked submit_cpsat_python_job for CP-SAT). If the checker rejects the solution, or the status is unsatisfiable/infeasible/error, stop and report that instead of an answer; on unsatisfiable, find_unsat_core says which rules conflict. A timeout with no solution is inconclusive: say so.
6. Present the full-instance result only: status in plain words, the solution, the objective, which candidate won and why (a short table of the candidates and their tier-2 figures).
7. Only when the user asks: save the winner with save_verified_minizinc_model or save_verified_cpsat_python into an absolute directory the user names, passing portfolio_result or experiment_result when the final run came from that tool.";

#[prompt_router(router = "prompt_router", vis = "pub(super)")]
#[expect(
    missing_docs,
    reason = "rmcp's #[prompt] generates an undocumented `pub fn <name>_prompt_attr` for each prompt"
)]
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
            with_problem(WORKFLOW, &args.problem),
        )]
    }

    #[prompt(
        name = "minizinc_solution_workflow",
        description = "A detailed workflow for modelling a constraint problem in MiniZinc: check, solve, verify with a checker, explain an unsatisfiable model with its conflicting constraints, and save on request."
    )]
    async fn minizinc_solution_workflow(
        &self,
        Parameters(args): Parameters<ProblemArgs>,
    ) -> Vec<PromptMessage> {
        vec![PromptMessage::new_text(
            Role::User,
            with_problem(MINIZINC_WORKFLOW, &args.problem),
        )]
    }

    #[prompt(
        name = "cpsat_python_solution_workflow",
        description = "A detailed workflow for writing an OR-Tools CP-SAT Python script for a constraint problem: the output contract, running and checking it, comparing variants, and saving on request."
    )]
    async fn cpsat_python_solution_workflow(
        &self,
        Parameters(args): Parameters<ProblemArgs>,
    ) -> Vec<PromptMessage> {
        vec![PromptMessage::new_text(
            Role::User,
            with_problem(CPSAT_WORKFLOW, &args.problem),
        )]
    }

    #[prompt(
        name = "auto_tune_constraint_problem",
        description = "Compare several MiniZinc and CP-SAT formulations of one problem (smoke test, representative race, full-instance check) before presenting a single verified answer."
    )]
    async fn auto_tune_constraint_problem(
        &self,
        Parameters(args): Parameters<ProblemArgs>,
    ) -> Vec<PromptMessage> {
        vec![PromptMessage::new_text(
            Role::User,
            with_problem(AUTO_TUNE_WORKFLOW, &args.problem),
        )]
    }
}

/// A workflow followed by the user's problem.
fn with_problem(workflow: &str, problem: &str) -> String {
    format!("{workflow}\n\nProblem:\n{}", problem.trim())
}
