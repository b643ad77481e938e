//! Every tool's title and behaviour annotations, in one table read by
//! [`super::schema::finish`]: what a client shows for a tool and whether
//! calling it reads, starts a job, stops one or writes the user's files.
//! A tool missing here has no title; the unit test below catches that.

use rmcp::model::ToolAnnotations;

/// How a tool touches the world, for its annotations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Effect {
    /// Reads, runs or computes; changes nothing the user owns.
    Reads,
    /// Starts a background job on the server (a new one every call).
    Starts,
    /// Stops a job; calling it again changes nothing more.
    Cancels,
    /// Writes a file or directory the user named (may replace one with
    /// `overwrite`).
    Writes,
}

/// Every tool's title and effect. A tool missing here is a bug the unit
/// test below catches.
pub(super) const TOOLS: &[(&str, &str, Effect)] = &[
    ("check_runtime", "Check runtimes", Effect::Reads),
    (
        "list_available_solvers",
        "List MiniZinc solvers",
        Effect::Reads,
    ),
    (
        "check_minizinc_model",
        "Compile-check a MiniZinc model",
        Effect::Reads,
    ),
    (
        "check_minizinc_files",
        "Compile-check MiniZinc files",
        Effect::Reads,
    ),
    (
        "inspect_minizinc_model",
        "Inspect a MiniZinc model",
        Effect::Reads,
    ),
    (
        "inspect_minizinc_files",
        "Inspect MiniZinc files",
        Effect::Reads,
    ),
    (
        "solve_minizinc_model",
        "Solve a MiniZinc model",
        Effect::Reads,
    ),
    (
        "solve_minizinc_files",
        "Solve MiniZinc files",
        Effect::Reads,
    ),
    ("submit_solve_job", "Start a solve job", Effect::Starts),
    ("get_solve_job", "Get a solve job", Effect::Reads),
    ("cancel_solve_job", "Cancel a solve job", Effect::Cancels),
    ("list_solve_jobs", "List solve jobs", Effect::Reads),
    (
        "submit_portfolio_job",
        "Start a portfolio race",
        Effect::Starts,
    ),
    ("get_portfolio_job", "Get a portfolio race", Effect::Reads),
    (
        "cancel_portfolio_job",
        "Cancel a portfolio race",
        Effect::Cancels,
    ),
    ("list_portfolio_jobs", "List portfolio races", Effect::Reads),
    ("run_cpsat_python", "Run a CP-SAT script", Effect::Reads),
    (
        "run_cpsat_python_file",
        "Run a CP-SAT script file",
        Effect::Reads,
    ),
    (
        "run_cpsat_python_file_checked",
        "Run and check a CP-SAT script file",
        Effect::Reads,
    ),
    (
        "run_cpsat_python_experiment",
        "Compare CP-SAT script variants",
        Effect::Reads,
    ),
    (
        "submit_cpsat_python_job",
        "Start a CP-SAT job",
        Effect::Starts,
    ),
    (
        "submit_cpsat_python_file_job",
        "Start a CP-SAT file job",
        Effect::Starts,
    ),
    ("get_cpsat_python_job", "Get a CP-SAT job", Effect::Reads),
    (
        "cancel_cpsat_python_job",
        "Cancel a CP-SAT job",
        Effect::Cancels,
    ),
    ("list_cpsat_python_jobs", "List CP-SAT jobs", Effect::Reads),
    (
        "save_verified_minizinc_model",
        "Save a verified MiniZinc model",
        Effect::Writes,
    ),
    (
        "save_verified_cpsat_python",
        "Save a verified CP-SAT script",
        Effect::Writes,
    ),
    ("replay_artifact", "Replay a saved artifact", Effect::Reads),
    ("plan_load", "Plan container loads", Effect::Reads),
    ("explain_load_plan", "Explain a load plan", Effect::Reads),
    (
        "verify_narration",
        "Verify a load-plan narration",
        Effect::Reads,
    ),
    ("save_load_plan", "Save a load plan", Effect::Writes),
    ("find_unsat_core", "Find an unsat core", Effect::Reads),
    (
        "find_unsat_core_files",
        "Find an unsat core in files",
        Effect::Reads,
    ),
    (
        "load_tabular_data",
        "Read spreadsheet or CSV data",
        Effect::Reads,
    ),
    (
        "write_tabular_result",
        "Write a spreadsheet or CSV file",
        Effect::Writes,
    ),
    (
        "correct_values",
        "Correct values to fit equations",
        Effect::Reads,
    ),
    ("validate_equations", "Validate equations", Effect::Reads),
    ("evaluate_equations", "Evaluate equations", Effect::Reads),
    (
        "optimize_expression",
        "Optimise an expression under equations",
        Effect::Reads,
    ),
];

/// The MCP annotations an effect stands for.
pub(super) fn annotations(effect: Effect) -> ToolAnnotations {
    let (read_only, destructive, idempotent) = match effect {
        Effect::Reads => (true, false, true),
        Effect::Starts => (false, false, false),
        Effect::Cancels => (false, false, true),
        Effect::Writes => (false, true, false),
    };
    ToolAnnotations::new()
        .read_only(read_only)
        .destructive(destructive)
        .idempotent(idempotent)
        .open_world(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_has_a_title_and_an_effect() {
        let names: Vec<&str> = TOOLS.iter().map(|(name, ..)| *name).collect();
        for name in super::super::FULL_ONLY {
            assert!(names.contains(name), "{name} has no entry in TOOLS");
        }
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len(), "a tool is listed twice");
    }
}
