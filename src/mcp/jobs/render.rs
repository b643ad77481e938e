//! The text parts of the background MiniZinc tools: a solve job, a
//! portfolio race, and their lists.

use std::fmt::Write;

use crate::jobs::{JobList, PortfolioJobStatus, SolveJobStatus, WinnerPolicy};
use crate::mcp::minizinc::render::solve;
use crate::mcp::render::{budgeted_job, diagnostic_line, job_list};
use crate::minizinc::SolveStatus;

pub fn solve_job(status: &SolveJobStatus) -> String {
    let result = status.result.as_deref().map(solve);
    budgeted_job("Solve", &status.job, status.timeout_ms, result)
}

pub fn solve_jobs(list: &JobList) -> String {
    job_list("solve", list)
}

pub fn portfolio_jobs(list: &JobList) -> String {
    job_list("portfolio", list)
}

pub fn portfolio_job(status: &PortfolioJobStatus) -> String {
    let mut text = format!(
        "Portfolio job {}: {} ({} attempts, {} ms)\n",
        status.job.job_id,
        status.job.state.as_str(),
        status.attempt_job_ids.len(),
        status.job.elapsed_ms
    );
    diagnostic_line(&mut text, status.job.diagnostic.as_ref());
    let Some(result) = &status.result else {
        return text;
    };
    if let Some(index) = result.winner_index
        && let Some(attempt) = result.attempts.get(index)
    {
        let seed = attempt
            .seed
            .map_or("unseeded".to_owned(), |seed| format!("seed {seed}"));
        let _ = writeln!(
            text,
            "Winner: attempt {index} — model {} with {} ({seed}), by {}",
            attempt.model_index,
            attempt.solver,
            policy_name(result.winner_policy)
        );
    } else {
        let _ = writeln!(text, "No winner ({}).", policy_name(result.winner_policy));
    }
    text.push_str("| attempt | model | solver | seed | state | status | objective |\n| --- | --- | --- | --- | --- | --- | --- |\n");
    for attempt in &result.attempts {
        let _ = writeln!(
            text,
            "| {} | {} | {} | {} | {} | {} | {} |",
            attempt.index,
            attempt.model_index,
            attempt.solver,
            attempt.seed.map_or("-".to_owned(), |seed| seed.to_string()),
            attempt.state.as_str(),
            attempt.status.map_or("-", SolveStatus::as_str),
            attempt
                .objective
                .as_ref()
                .map_or("-".to_owned(), ToString::to_string)
        );
    }
    for attempt in &result.attempts {
        if let Some(why) = &attempt.refused {
            let _ = writeln!(text, "Refused: attempt {} — {why}", attempt.index);
        }
    }
    if let Some(winner) = &result.winner {
        text.push_str("\nWinning solve:\n");
        text.push_str(&solve(winner));
    }
    text
}

fn policy_name(policy: WinnerPolicy) -> &'static str {
    match policy {
        WinnerPolicy::BestObjective => "best_objective",
        WinnerPolicy::FirstDecisive => "first_decisive",
    }
}
