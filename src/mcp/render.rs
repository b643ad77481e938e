//! The readable text part of each tool result. The structured content is
//! the contract and holds the full data once; this text is what a model or
//! person reads first: a summary that leads with the verdict (status,
//! objective, one solution, statistics, diagnostic) and points to the
//! structured fields for the rest. Raw output is quoted verbatim but in
//! excerpts ([`excerpt`]), and [`bounded`] holds every text part to
//! [`TEXT_LIMIT`], whatever a result holds.

use std::fmt::Write;

use crate::artifacts::{
    ReplayResult, SavePlanResult, SaveVerifiedModelResult, SaveVerifiedPythonResult, SavedFile,
};
use crate::cpsat::{CpsatPythonCheckedResult, CpsatPythonExperimentResult, CpsatPythonResult};
use crate::diagnostics::Diagnostic;
use crate::jobs::{
    CpsatPythonJobStatus, JobList, PortfolioJobStatus, SolveJobStatus, WinnerPolicy,
};
use crate::minizinc::{CheckResult, ModelInspectionResult, SolveResult};
use crate::planner::PlanResult;
use crate::planner::explain::{Explanation, NarrationCheck};
use crate::runtime::{RuntimeStatus, SolverList};
use crate::tabular::{TabularData, TabularWriteResult, TruncationReason};
use crate::unsat::UnsatCoreResult;

/// `Sandbox: landlock enforced, network enforced`, when it was on.
fn sandbox_line(text: &mut String, sandbox: Option<&crate::exec::SandboxReport>) {
    if let Some(sandbox) = sandbox {
        let _ = writeln!(
            text,
            "Sandbox: landlock {}, network {}",
            sandbox.landlock, sandbox.network
        );
    }
}

fn diagnostic_line(text: &mut String, diagnostic: Option<&Diagnostic>) {
    if let Some(diagnostic) = diagnostic {
        let _ = writeln!(
            text,
            "Diagnostic: {} — {}",
            diagnostic.category, diagnostic.message
        );
    }
}

/// The most a text part holds, in bytes.
pub const TEXT_LIMIT: usize = 16 * 1024;

/// The most of one quoted output (a solution's text, stderr, ...), in
/// bytes; a handful fit in [`TEXT_LIMIT`] beside the summary lines.
const EXCERPT_LIMIT: usize = 2 * 1024;

/// `text` held to [`TEXT_LIMIT`]: cut at a line end, with a last line that
/// says so.
pub fn bounded(mut text: String) -> String {
    const NOTE: &str = "[solvergate: the text part ends here at 16 KB; the structured content has the whole result]\n";
    if text.len() <= TEXT_LIMIT {
        return text;
    }
    let keep = head_len(&text, TEXT_LIMIT - NOTE.len());
    text.truncate(keep);
    text.push_str(NOTE);
    text
}

/// How much of `text` to keep within `limit` bytes: up to the last whole
/// line that fits, or a char boundary when not even one line does.
fn head_len(text: &str, limit: usize) -> usize {
    if text.len() <= limit {
        return text.len();
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].rfind('\n').map_or(end, |newline| newline + 1)
}

/// At most [`EXCERPT_LIMIT`] bytes of `body`, and where the rest is.
fn excerpt(body: &str, field: &str) -> String {
    let body = body.trim_end();
    if body.len() <= EXCERPT_LIMIT {
        return body.to_owned();
    }
    let keep = head_len(body, EXCERPT_LIMIT);
    format!(
        "{}\n[… {} more bytes in the structured result's `{field}`]",
        body[..keep].trim_end(),
        body.len() - keep
    )
}

/// A titled excerpt of `body` (the structured result's `field`); nothing
/// when it is blank.
fn block(text: &mut String, title: &str, body: &str, field: &str) {
    if body.trim().is_empty() {
        return;
    }
    let _ = writeln!(text, "{title}:\n{}", excerpt(body, field));
}

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
            let _ = writeln!(
                text,
                "CP-SAT runtime not usable: {}. Run `solvergate install-runtime --only cpsat`, or adopt a Python that can import ortools with `solvergate configure-runtime --python <path>`.",
                cpsat.problem.as_deref().unwrap_or("unknown problem")
            );
        }
    }
    text
}

pub fn solver_list(list: &SolverList) -> String {
    let mut text = String::from("| id | name | version | runs here |\n| --- | --- | --- | --- |\n");
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
        let _ = writeln!(
            text,
            "| {} | {} | {} | {runs} |",
            solver.id, solver.name, solver.version
        );
    }
    let _ = writeln!(
        text,
        "\nWhen you answer, copy this table with every row ({} solvers); do not drop rows, turn it into prose or group entries.",
        list.solvers.len()
    );
    if let Some(default) = &list.default_solver {
        let _ = writeln!(text, "Solver used when none is named: {default}.");
    }
    text.push_str("Per-solver capabilities (all_solutions, free_search, parallel, random_seed, num_solutions, std_flags) are in the structured result; ask for them if you need them.\n");
    text.push_str("num_solutions works only on solvers that declare -n; for several optimal solutions, solve to optimality first, then re-solve with the objective fixed.\n");
    text.push_str("A solver marked no failed a one-variable probe solve here (a MIP solver without its library, a GUI solver without a display): do not offer it.\n");
    text
}

pub fn check(result: &CheckResult) -> String {
    let mut text = format!(
        "Check: {} (solver {}, {} ms){}\n",
        result.status,
        result.solver,
        result.elapsed_ms,
        if result.status == "ok" {
            " — the model compiles; that does not mean it is satisfiable"
        } else {
            ""
        }
    );
    diagnostic_line(&mut text, result.diagnostic.as_ref());
    block(&mut text, "Stdout", &result.stdout, "stdout");
    block(&mut text, "Stderr", &result.stderr, "stderr");
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
    block(&mut text, "Stderr", &result.stderr, "stderr");
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
    match result.solutions.len() {
        0 | 1 => block(&mut text, "Solution output", &result.stdout, "stdout"),
        count => {
            let title = format!(
                "Solution output (the last of {count}; every solution's text is in `stdout`, its values in `solutions`)"
            );
            block(
                &mut text,
                &title,
                last_solution_text(&result.stdout),
                "stdout",
            );
        }
    }
    block(&mut text, "Stderr", &result.stderr, "stderr");
    if !result.statistics.is_empty() {
        text.push_str("Statistics:\n");
        for (key, value) in &result.statistics {
            let _ = writeln!(text, "  {key}: {value}");
        }
        text.push_str(
            "When you answer, include the Statistics section as given; do not omit it.\n",
        );
    }
    text
}

pub fn solve_job(status: &SolveJobStatus) -> String {
    let mut text = format!(
        "Solve job {}: {} ({} ms of a {} ms budget)\n",
        status.job_id,
        status.state.as_str(),
        status.elapsed_ms,
        status.timeout_ms
    );
    if let Some(message) = &status.message {
        let _ = writeln!(text, "Message: {message}");
    }
    match &status.result {
        Some(result) => text.push_str(&solve(result)),
        None => diagnostic_line(&mut text, status.diagnostic.as_ref()),
    }
    text
}

pub fn solve_jobs(list: &JobList) -> String {
    job_list("solve", list)
}

pub fn portfolio_jobs(list: &JobList) -> String {
    job_list("portfolio", list)
}

pub fn cpsat_jobs(list: &JobList) -> String {
    job_list("CP-SAT", list)
}

/// A list tool's table: one row per job, oldest first.
fn job_list(kind: &str, list: &JobList) -> String {
    if list.jobs.is_empty() {
        return format!("No {kind} jobs are retained.\n");
    }
    let mut text = format!(
        "{} {kind} job(s), oldest first:\n| job_id | state | elapsed_ms | status | objective |\n| --- | --- | --- | --- | --- |\n",
        list.jobs.len()
    );
    for job in &list.jobs {
        let _ = writeln!(
            text,
            "| {} | {} | {} | {} | {} |",
            job.job_id,
            job.state.as_str(),
            job.elapsed_ms,
            job.status.as_deref().unwrap_or("-"),
            job.objective
                .as_ref()
                .map_or("-".to_owned(), ToString::to_string)
        );
    }
    text
}

pub fn portfolio_job(status: &PortfolioJobStatus) -> String {
    let mut text = format!(
        "Portfolio job {}: {} ({} attempts, {} ms)\n",
        status.job_id,
        status.state.as_str(),
        status.attempt_job_ids.len(),
        status.elapsed_ms
    );
    diagnostic_line(&mut text, status.diagnostic.as_ref());
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
            attempt.status.as_deref().unwrap_or("-"),
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
        let solution = serde_json::Value::Object(solution.clone()).to_string();
        let _ = writeln!(text, "Solution: {}", excerpt(&solution, "solution"));
    }
    block(&mut text, "Stderr", &result.stderr, "stderr");
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
                .clone()
                .or_else(|| {
                    row.skipped_reason
                        .as_ref()
                        .map(|reason| format!("skipped: {reason}"))
                })
                .unwrap_or_default();
            let _ = writeln!(text, "  - {}: {verdict}", row.name);
        }
    }
    text
}

pub fn cpsat_job(status: &CpsatPythonJobStatus) -> String {
    let mut text = format!(
        "CP-SAT job {}: {} ({} ms of a {} ms budget)\n",
        status.job_id,
        status.state.as_str(),
        status.elapsed_ms,
        status.script_timeout_ms
    );
    if let Some(message) = &status.message {
        let _ = writeln!(text, "Message: {message}");
    }
    match &status.result {
        Some(result) => text.push_str(&cpsat_run(result)),
        None => diagnostic_line(&mut text, status.diagnostic.as_ref()),
    }
    if let Some(checker) = &status.checker {
        let _ = writeln!(
            text,
            "Checker: {} ({} error(s))",
            checker.status,
            checker.errors.len()
        );
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
            attempt.checker_status.as_deref().unwrap_or("-"),
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

fn policy_name(policy: WinnerPolicy) -> &'static str {
    match policy {
        WinnerPolicy::BestObjective => "best_objective",
        WinnerPolicy::FirstDecisive => "first_decisive",
    }
}

pub fn saved_model(result: &SaveVerifiedModelResult) -> String {
    let mut text = format!("Save: {} — {}\n", result.status, result.message);
    diagnostic_line(&mut text, result.diagnostic.as_ref());
    let _ = writeln!(text, "Target: {}", result.target_dir);
    saved_files(&mut text, &result.files);
    let _ = writeln!(text, "Check: {}", result.check.status);
    if let Some(solve) = &result.solve {
        text.push_str("Verifying solve:\n");
        text.push_str(&self::solve(solve));
    } else {
        block(
            &mut text,
            "Check stderr",
            &result.check.stderr,
            "check.stderr",
        );
    }
    text
}

pub fn saved_python(result: &SaveVerifiedPythonResult) -> String {
    let verdict = match &result.reason {
        None if result.saved => "saved".to_owned(),
        None => "every gate passed (verify only, nothing written)".to_owned(),
        Some(reason) => format!("not verified — {reason}"),
    };
    let mut text = format!(
        "Save: {verdict}\nVerification level: {}\n",
        result.verification_level.as_str()
    );
    diagnostic_line(&mut text, result.diagnostic.as_ref());
    if let Some(target) = &result.target_dir {
        let _ = writeln!(text, "Target: {target}");
    }
    saved_files(&mut text, &result.files);
    let _ = writeln!(text, "Run: {} in {} ms", result.status, result.duration_ms);
    if let Some(objective) = &result.objective {
        let _ = writeln!(text, "Objective: {objective}");
    }
    if let Some(passed) = result.expectation_passed {
        let _ = writeln!(
            text,
            "Expectation: {}",
            if passed { "met" } else { "not met" }
        );
    }
    if let Some(checker) = &result.checker {
        let _ = writeln!(
            text,
            "Checker: {} ({} error(s))",
            checker.status,
            checker.errors.len()
        );
    }
    block(&mut text, "Stderr", &result.stderr, "stderr");
    text
}

fn saved_files(text: &mut String, files: &[SavedFile]) {
    if files.is_empty() {
        return;
    }
    text.push_str("| file | role | sha256 |\n| --- | --- | --- |\n");
    for file in files {
        let _ = writeln!(text, "| {} | {} | {} |", file.name, file.role, file.sha256);
    }
}

pub fn replay(result: &ReplayResult) -> String {
    let mut text = format!(
        "Replay of {} ({}): {}\n",
        result.target_dir,
        result.backend.as_str(),
        if result.reproduced {
            "reproduced"
        } else {
            "not reproduced"
        }
    );
    if let Some(reason) = &result.reason {
        let _ = writeln!(text, "Reason: {reason}");
    }
    let objective =
        |o: &Option<serde_json::Number>| o.as_ref().map_or("-".to_owned(), ToString::to_string);
    text.push_str("| | status | objective | checker | level |\n| --- | --- | --- | --- | --- |\n");
    for (label, outcome) in [
        ("recorded", &result.recorded),
        ("replayed", &result.replayed),
    ] {
        let _ = writeln!(
            text,
            "| {label} | {} | {} | {} | {} |",
            outcome.status,
            objective(&outcome.objective),
            outcome.checker_status.as_deref().unwrap_or("-"),
            outcome.level
        );
    }
    let _ = writeln!(
        text,
        "Saved {} on {}; replayed on {}",
        result.saved_at,
        result
            .recorded_runtime_version
            .as_deref()
            .unwrap_or("an unknown runtime"),
        result
            .runtime_version
            .as_deref()
            .unwrap_or("an unknown runtime")
    );
    text
}

pub fn load_plan(result: &PlanResult) -> String {
    let plan = &result.result;
    let mut text = format!(
        "Load plan {} ({} cards, solved by {}); recommended: {}\n",
        result.result_id,
        plan.cards.len(),
        plan.solver,
        plan.recommended
            .as_deref()
            .unwrap_or("none (no feasible card)")
    );
    for card in &plan.cards {
        let marker = if card.recommended {
            " (recommended)"
        } else {
            ""
        };
        let _ = write!(text, "- {}{marker}: {}", card.name, card.status);
        if let Some(reason) = &card.infeasible_reason {
            let _ = write!(text, " — {reason}");
        }
        if let Some(cost) = &card.cost {
            let _ = write!(
                text,
                "; cost {} (air {}, lcl {}, fcl {})",
                cost.total, cost.air, cost.lcl, cost.fcl
            );
        }
        if !card.modes.is_empty() {
            let counts: Vec<String> = crate::planner::Mode::ALL
                .iter()
                .filter_map(|mode| {
                    let orders = card.modes.values().filter(|each| *each == mode).count();
                    (orders > 0).then(|| format!("{orders} {}", mode.as_str()))
                })
                .collect();
            let _ = write!(text, "; orders: {}", counts.join(", "));
        }
        if !card.containers.is_empty() {
            let containers: Vec<String> = card.containers.iter().map(ToString::to_string).collect();
            let _ = write!(text, "; containers: {}", containers.join(", "));
        }
        if let Some(fill) = card.fill_rate {
            let _ = write!(text, "; fill rate {fill}");
        }
        if let Some(miss) = card.miss_probability {
            let _ = write!(text, "; miss probability {miss}");
        }
        if !card.within_policy {
            text.push_str("; outside policy");
        }
        if let Some(checker) = &card.checker {
            let _ = write!(text, "; checker: {checker}");
        }
        text.push('\n');
    }
    for (mode, read) in &plan.modes {
        let _ = writeln!(
            text,
            "Mode {mode}: ETA p50 {} d, p90 {} d, CVaR90 delay {} d ({} delays)",
            read.eta_p50_days, read.eta_p90_days, read.cvar90_delay_days, read.delay_source
        );
    }
    for packing in &plan.packing {
        let _ = write!(
            text,
            "Packing {}: {} container(s), fill rate {}",
            packing.container_type, packing.containers, packing.fill_rate
        );
        if !packing.unplaceable.is_empty() {
            let _ = write!(
                text,
                "; fits no {}: {}",
                packing.container_type,
                packing.unplaceable.join(", ")
            );
        }
        text.push('\n');
    }
    for note in &plan.notes {
        let _ = writeln!(text, "Note: {note}");
    }
    text.push_str(
        "Each order's mode and each shipment are in the structured result; \
         explain_load_plan puts the figures into words.\n",
    );
    text
}

pub fn explanation(explanation: &Explanation) -> String {
    let mut text = explanation.narration.clone();
    if !explanation.check.ok {
        let _ = writeln!(
            text,
            "Guard: offending tokens {}",
            explanation.check.offending.join(", ")
        );
    }
    text
}

pub fn narration_check(check: &NarrationCheck) -> String {
    if check.ok {
        format!(
            "Every number in the narration ({} token(s)) appears in the stored result.\n",
            check.tokens_checked
        )
    } else {
        format!(
            "Rejected: {} of {} numeric token(s) are not in the stored result: {}\n",
            check.offending.len(),
            check.tokens_checked,
            check.offending.join(", ")
        )
    }
}

pub fn saved_plan(result: &SavePlanResult) -> String {
    let mut text = format!("Save: {} — {}\n", result.status, result.message);
    diagnostic_line(&mut text, result.diagnostic.as_ref());
    let _ = writeln!(text, "Result id: {}", result.result_id);
    saved_files(&mut text, &result.files);
    text
}

pub fn unsat_core(result: &UnsatCoreResult) -> String {
    let mut text = format!(
        "Unsat core: {} (method {}, solver {}, {} solver call(s), {} ms)\n{}\n",
        result.status,
        result.method,
        result.solver,
        result.solver_calls,
        result.elapsed_ms,
        result.message
    );
    if !result.core.is_empty() {
        let minimal = if result.minimal {
            "minimal"
        } else {
            "NOT minimal"
        };
        let _ = writeln!(text, "Core ({minimal}):");
        for entry in &result.core {
            let _ = writeln!(
                text,
                "- line {}:{}-{}:{}: {}",
                entry.line,
                entry.column,
                entry.end_line,
                entry.end_column,
                entry
                    .source
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
            );
        }
    }
    diagnostic_line(&mut text, result.diagnostic.as_ref());
    if result.method == "findmus" {
        block(
            &mut text,
            "findMUS output (authoritative)",
            &result.stdout,
            "stdout",
        );
    }
    if result.status == "error" {
        block(&mut text, "stderr", &result.stderr, "stderr");
    }
    text
}
pub fn tabular_page(page: &TabularData) -> String {
    let source = page
        .sheet_name
        .as_ref()
        .map(|sheet| format!("sheet {sheet:?}"))
        .unwrap_or_else(|| "CSV".to_owned());
    let shown = page.rows.len() as u64;
    let mut text = if shown == 0 {
        format!(
            "Table ({source}): no rows at row_offset {} of {} data rows; {} columns.\n",
            page.row_offset,
            page.total_rows,
            page.headers.len()
        )
    } else {
        format!(
            "Table ({source}): data rows {}–{} of {}; {} columns.\n",
            page.row_offset,
            page.row_offset + shown - 1,
            page.total_rows,
            page.headers.len()
        )
    };
    let mut names = page
        .headers
        .iter()
        .take(20)
        .map(|name| format!("{name:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    if page.headers.len() > 20 {
        let _ = write!(names, ", … ({} more)", page.headers.len() - 20);
    }
    let _ = writeln!(text, "Headers: {names}");
    if page.available_sheets.len() > 1 {
        let _ = writeln!(text, "Sheets: {}", page.available_sheets.join(", "));
    }
    match (page.next_row_offset, page.truncation_reason) {
        (Some(next), Some(reason)) => {
            let _ = writeln!(
                text,
                "Truncated ({}): call again with row_offset {next} for more.",
                match reason {
                    TruncationReason::MaxRows => "max_rows",
                    TruncationReason::MaxBytes => "1 MiB page ceiling",
                }
            );
        }
        _ => text.push_str("End of data.\n"),
    }
    text.push_str("The cells are in the structured result's `rows`.\n");
    text
}

pub fn tabular_written(result: &TabularWriteResult) -> String {
    format!(
        "Wrote {} ({}): {} data rows.\nsha256: {}\n",
        result.target_path,
        result.format.as_str(),
        result.rows_written,
        result.sha256
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_cuts_at_a_line_and_says_so() {
        let short = "Status: optimal\n".to_owned();
        assert_eq!(bounded(short.clone()), short);
        let long: String = (0..5000).map(|i| format!("line {i}\n")).collect();
        let cut = bounded(long.clone());
        assert!(cut.len() <= TEXT_LIMIT, "{}", cut.len());
        let (kept, note) = cut.trim_end().rsplit_once('\n').unwrap();
        assert!(long.starts_with(&format!("{kept}\n")));
        assert!(note.starts_with("[solvergate: the text part ends here at 16 KB"));
        // One line longer than the limit is cut at a char boundary.
        let wide = "é".repeat(TEXT_LIMIT);
        assert!(bounded(wide).len() <= TEXT_LIMIT);
    }

    #[test]
    fn an_excerpt_names_the_field_with_the_rest() {
        assert_eq!(excerpt("a\nb\n", "stdout"), "a\nb");
        let long: String = (0..1000).map(|i| format!("{i:04}\n")).collect();
        let short = excerpt(&long, "stderr");
        let (head, pointer) = short.rsplit_once('\n').unwrap();
        assert!(head.len() <= EXCERPT_LIMIT);
        assert!(long.starts_with(head));
        let rest = long.trim_end().len() - head.len() - 1;
        assert_eq!(
            pointer,
            format!("[… {rest} more bytes in the structured result's `stderr`]")
        );
    }

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
