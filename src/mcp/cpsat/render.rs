//! The text parts of the CP-SAT Python tools: a run, a checked run, a job
//! and its list, an experiment.

use std::fmt::Write;

use crate::cpsat::{
    CheckerReport, CheckerStatus, CpsatPythonCheckedResult, CpsatPythonExperimentResult,
    CpsatPythonResult,
};
use crate::jobs::{CpsatPythonJobStatus, JobList};
use crate::mcp::answer;
use crate::mcp::render::{
    budgeted_job, diagnostic_line, error_gist, job_list, sandbox_line, stderr_block,
};
use crate::verdict::Verdict;

pub fn cpsat_jobs(list: &JobList) -> String {
    job_list("CP-SAT", list)
}

pub fn cpsat_run(result: &CpsatPythonResult) -> String {
    let mut text = format!(
        "Status: {}\nDuration: {} ms\n",
        result.status, result.duration_ms
    );
    if let Some(objective) = &result.objective {
        let _ = writeln!(text, "Objective: {objective}");
    }
    if let Some(bound) = &result.best_objective_bound {
        let _ = writeln!(text, "Best objective bound: {bound}");
    }
    sandbox_line(&mut text, result.sandbox.as_ref());
    diagnostic_line(&mut text, result.diagnostic.as_ref());
    if let Some(solution) = &result.solution {
        answer::solution(&mut text, solution, answer::WHOLE_SOLUTION);
    }
    stderr_block(&mut text, &result.stderr);
    text
}

pub fn cpsat_checked(result: &CpsatPythonCheckedResult) -> String {
    let mut text = cpsat_run(&result.run);
    match (&result.checker, &result.checker_skipped_reason) {
        (Some(checker), _) => {
            let _ = writeln!(
                text,
                "Checker: {} ({} error(s), {} ms){}",
                checker.status,
                checker.errors.len(),
                checker.duration_ms,
                checker
                    .message
                    .as_ref()
                    .map(|m| format!(" — {m}"))
                    .unwrap_or_default()
            );
            for error in checker.errors.iter().take(10) {
                let _ = writeln!(text, "  - {error}");
            }
            checker_error(&mut text, checker);
        }
        (None, Some(reason)) => {
            let _ = writeln!(text, "Checker skipped: {reason}");
        }
        (None, None) => {}
    }
    if let Some(test) = &result.checker_test {
        let _ = writeln!(
            text,
            "Checker self-test: {} mutant(s) rejected, {} accepted",
            test.rejected_count, test.accepted_count
        );
        for row in &test.mutations {
            let verdict = row
                .status
                .map(|status| status.to_string())
                .or_else(|| {
                    row.skipped_reason
                        .as_ref()
                        .map(|reason| format!("skipped: {reason}"))
                })
                .unwrap_or_default();
            let changed = row
                .changed
                .as_ref()
                .map(|changed| format!(" ({changed})"))
                .unwrap_or_default();
            let _ = writeln!(text, "  - {}{changed}: {verdict}", row.name);
        }
    }
    text
}

/// A checker that gave no verdict, in its own words: the end of its
/// stderr (a traceback's exception and where it was raised), or that it
/// failed without a word. Nothing for a verdict the checker gave.
pub fn checker_error(text: &mut String, checker: &CheckerReport) {
    if matches!(checker.verdict, Verdict::Accepted | Verdict::Rejected) {
        return;
    }
    let gist = error_gist(&checker.stderr);
    if !gist.is_empty() {
        text.push_str("Checker's error (the end of its stderr):\n");
        for line in gist {
            let _ = writeln!(text, "  {line}");
        }
    } else if let Some(code) = checker.return_code.filter(|code| *code != 0) {
        let _ = writeln!(
            text,
            "Checker's error: none — it exited with code {code} and wrote nothing to stderr"
        );
    }
}

pub fn cpsat_job(status: &CpsatPythonJobStatus) -> String {
    let result = status.result.as_deref().map(cpsat_run);
    let mut text = budgeted_job("CP-SAT", &status.job, status.script_timeout_ms, result);
    if let Some(checker) = &status.checker {
        let _ = writeln!(
            text,
            "Checker: {} ({} error(s))",
            checker.status,
            checker.errors.len()
        );
        checker_error(&mut text, checker);
    }
    if let Some(reason) = &status.checker_skipped_reason {
        let _ = writeln!(text, "Checker skipped: {reason}");
    }
    text
}

pub fn experiment(result: &CpsatPythonExperimentResult) -> String {
    let mut text = match (&result.winner_name, result.winner_index) {
        (Some(name), Some(index)) => format!(
            "Experiment: winner {name} (attempt {index}), {} ms\n",
            result.elapsed_ms
        ),
        _ => format!("Experiment: no winner, {} ms\n", result.elapsed_ms),
    };
    diagnostic_line(&mut text, result.diagnostic.as_ref());
    text.push_str("| attempt | name | status | objective | accepted | checker | ms | why not |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for attempt in &result.attempts {
        let _ = writeln!(
            text,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            attempt.index,
            attempt.name,
            attempt.status,
            attempt
                .objective
                .as_ref()
                .map_or("-".to_owned(), ToString::to_string),
            attempt.accepted,
            attempt.checker_status.map_or("-", CheckerStatus::as_str),
            attempt.duration_ms,
            attempt.rejection.as_deref().unwrap_or("")
        );
    }
    for warning in &result.warnings {
        let _ = writeln!(text, "Note: {warning}");
    }
    if let Some(winner) = &result.winner {
        text.push_str("\nWinning run:\n");
        text.push_str(&cpsat_run(winner));
    }
    text
}
