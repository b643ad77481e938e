//! The text parts of the MiniZinc tools and the runtime tools: runtime
//! status, the solver list, a check, an inspection and a solve (which the
//! job and save tools print too).

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::mcp::answer;
use crate::mcp::render::{
    block, diagnostic_line, limits_lines, sandbox_line, stderr_block, whole_block,
};
use crate::minizinc::{CheckResult, ModelInspectionResult, PreflightStatus, SolveResult};
use crate::runtime::{RuntimeStatus, SolverList};

/// The printed text of the last solution in a solve's `stdout` (each
/// solution's text ends with a `----------` line).
fn last_solution_text(stdout: &str) -> &str {
    const SEPARATOR: &str = "----------\n";
    let Some(end) = stdout.rfind(SEPARATOR) else {
        return stdout;
    };
    let before = &stdout[..end];
    let start = before
        .rfind(SEPARATOR)
        .map_or(0, |separator| separator + SEPARATOR.len());
    &before[start..]
}

pub fn runtime_status(status: &RuntimeStatus) -> String {
    let mut text = match (&status.minizinc_binary, &status.minizinc_version) {
        (Some(binary), version) => format!(
            "MiniZinc runtime installed: {binary}{}\nRuntime dir: {} ({}){}\n",
            version
                .as_ref()
                .map(|v| format!(" — {v}"))
                .unwrap_or_default(),
            status.runtime_dir,
            status.source.describe(),
            status
                .solver_count
                .map(|count| format!("; {count} solvers listed"))
                .unwrap_or_default()
        ),
        (None, _) => format!(
            "MiniZinc runtime not installed at {} ({}). {}\n",
            status.runtime_dir,
            status.source.describe(),
            crate::runtime::INSTALL_HINT
        ),
    };
    for warning in &status.warnings {
        let _ = writeln!(text, "Warning about this MiniZinc runtime: {warning}");
    }
    let cpsat = &status.cpsat;
    match &cpsat.ortools_version {
        Some(version) => {
            let _ = writeln!(
                text,
                "CP-SAT runtime installed: {} (OR-Tools {version}, {})",
                cpsat.python,
                cpsat.source.describe_python()
            );
        }
        None => {
            let problem = cpsat.problem.as_deref().unwrap_or("unknown problem");
            let _ = match &cpsat.hint {
                Some(hint) => writeln!(
                    text,
                    "CP-SAT runtime not usable: {problem}. Fix: {hint}, or run `solvergate install-runtime --only cpsat`."
                ),
                None => writeln!(
                    text,
                    "CP-SAT runtime not usable: {problem}. Run `solvergate install-runtime --only cpsat`, or adopt a Python that can import ortools with `solvergate configure-runtime --python <path>`."
                ),
            };
        }
    }
    limits_lines(&mut text, status.limits.as_ref());
    let _ = writeln!(text, "Sandbox: {}", status.sandbox);
    if let Some(reads) = status.reads_in_words() {
        let _ = writeln!(text, "Reads: {reads}");
    }
    let _ = writeln!(text, "Environment: {}", status.environment);
    text
}

pub fn solver_list(list: &SolverList) -> String {
    let mut text = String::from(
        "| id | name | version | runs here | options it takes |\n| --- | --- | --- | --- | --- |\n",
    );
    for solver in &list.solvers {
        let runs = if solver.available {
            "yes".to_owned()
        } else {
            format!(
                "no: {}",
                solver
                    .unavailable_reason
                    .as_deref()
                    .unwrap_or("the probe failed")
            )
        };
        let capabilities = &solver.capabilities;
        let options: Vec<&str> = [
            (capabilities.supports_all_solutions, "all_solutions"),
            (capabilities.supports_num_solutions, "num_solutions"),
            (capabilities.supports_free_search, "free_search"),
            (capabilities.supports_parallel, "parallel"),
            (capabilities.supports_random_seed, "random_seed"),
        ]
        .into_iter()
        .filter_map(|(takes, name)| takes.then_some(name))
        .collect();
        let _ = writeln!(
            text,
            "| {} | {} | {} | {runs} | {} |",
            solver.id,
            solver.name,
            solver.version,
            if options.is_empty() {
                "-".to_owned()
            } else {
                options.join(", ")
            }
        );
    }
    let running = list.solvers.iter().filter(|s| s.available).count();
    let _ = writeln!(
        text,
        "\n{} solver(s) listed, {running} run here.",
        list.solvers.len()
    );
    if let Some(default) = &list.default_solver {
        let _ = writeln!(text, "Solver used when none is named: {default}.");
    }
    text.push_str("num_solutions works only on solvers that take it; for several optimal solutions, solve to optimality first, then re-solve with the objective fixed.\n");
    text.push_str("A solver marked no failed a one-variable probe solve here (a MIP solver without its library, a GUI solver without a display), so a solve naming it fails.\n");
    text
}

pub fn check(result: &CheckResult) -> String {
    let mut text = format!(
        "Check: {} (solver {}, {} ms){}\n",
        result.status,
        result.solver,
        result.elapsed_ms,
        match result.status {
            PreflightStatus::Ok => " — the model compiles; that does not mean it is satisfiable",
            PreflightStatus::Error | PreflightStatus::Timeout => "",
        }
    );
    diagnostic_line(&mut text, result.diagnostic.as_ref());
    block(&mut text, "Stdout", &result.stdout, "stdout");
    stderr_block(&mut text, &result.stderr);
    text
}

pub fn inspection(result: &ModelInspectionResult) -> String {
    let mut text = format!(
        "Inspection: {} (solver {}, {} ms)\n",
        result.status, result.solver, result.elapsed_ms
    );
    diagnostic_line(&mut text, result.diagnostic.as_ref());
    if let Some(interface) = &result.interface {
        let _ = writeln!(text, "Method: {}", interface.method);
        let names = |map: &std::collections::BTreeMap<String, _>| {
            map.keys().cloned().collect::<Vec<String>>().join(", ")
        };
        if interface.required_parameters.is_empty() {
            text.push_str("Required parameters: none (the data is complete)\n");
        } else {
            let _ = writeln!(
                text,
                "Required parameters: {}",
                names(&interface.required_parameters)
            );
        }
        let _ = writeln!(
            text,
            "Output variables: {}",
            names(&interface.output_variables)
        );
    }
    stderr_block(&mut text, &result.stderr);
    text
}

pub fn solve(result: &SolveResult) -> String {
    let mut text = format!(
        "Status: {}\nSolver: {}\nElapsed: {} ms\n",
        result.status, result.solver, result.elapsed_ms
    );
    if let Some(objective) = &result.objective {
        let _ = writeln!(text, "Objective: {objective}");
    }
    if result.solutions.len() > 1 {
        let _ = writeln!(text, "Solutions: {}", result.solutions.len());
    }
    sandbox_line(&mut text, result.sandbox.as_ref());
    diagnostic_line(&mut text, result.diagnostic.as_ref());
    if let Some(checker) = &result.checker {
        let violations = checker.checks.iter().filter(|c| c.violation).count();
        let _ = writeln!(
            text,
            "Checker: {} ({}; {} check(s), {violations} violation(s))",
            checker.verdict,
            checker.status,
            checker.checks.len()
        );
        if let Some(reason) = &checker.reason {
            let _ = writeln!(text, "Not verified: {reason}");
        }
    }
    if let Some(solution) = &result.solution {
        answer::solution(&mut text, solution, answer::WHOLE_SOLUTION);
    }
    match result.solutions.len() {
        0 | 1 => whole_block(&mut text, "Solution output", &result.stdout, "stdout"),
        count => {
            let title = format!(
                "Solution output (the last of {count}; every solution's text is in `stdout`, its values in `solutions`)"
            );
            whole_block(
                &mut text,
                &title,
                last_solution_text(&result.stdout),
                "stdout",
            );
        }
    }
    stderr_block(&mut text, &result.stderr);
    statistics_line(&mut text, &result.statistics, result.solutions.len());
    text
}

/// One line of the figures a person reads of a solve (solve time,
/// solutions, nodes, the objective bound where the solver gives one); every
/// figure stays in the structured `statistics`.
fn statistics_line(text: &mut String, statistics: &BTreeMap<String, String>, kept: usize) {
    if statistics.is_empty() {
        return;
    }
    let figure = |key: &str| statistics.get(key).map(String::as_str);
    let mut read = Vec::new();
    if let Some(time) = figure("solveTime") {
        read.push(format!("solve time {time} s"));
    }
    if let Some(count) = figure("nSolutions").or_else(|| figure("solutions")) {
        // The solver's own count, which an optimisation's improving
        // solutions make larger than what the result keeps.
        if count
            .parse::<usize>()
            .is_ok_and(|found| found > kept.max(1))
        {
            read.push(format!(
                "{count} solutions found by the solver, {} kept in `solutions` (the last is the one shown)",
                kept.max(1)
            ));
        } else {
            read.push(format!("{count} solution(s)"));
        }
    }
    if let Some(nodes) = figure("nodes") {
        read.push(format!("{nodes} nodes"));
    }
    if let Some(bound) = figure("objectiveBound") {
        read.push(format!("objective bound {bound}"));
    }
    let all = format!(
        "{} figure(s) in the structured `statistics`",
        statistics.len()
    );
    if read.is_empty() {
        let _ = writeln!(text, "Statistics: {all}");
    } else {
        let _ = writeln!(text, "Statistics: {} ({all})", read.join(", "));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_solution_is_read_off_the_separators() {
        let stdout = "x = 1\n----------\nx = 2\ny\n----------\n==========\n";
        assert_eq!(last_solution_text(stdout), "x = 2\ny\n");
        assert_eq!(last_solution_text("x = 1\n----------\n"), "x = 1\n");
        assert_eq!(
            last_solution_text("=====UNSATISFIABLE=====\n"),
            "=====UNSATISFIABLE=====\n"
        );
    }
}
