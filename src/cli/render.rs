//! What a person at a terminal sees. Plain text on stdout; `--json` prints
//! the same result structs the MCP tools return.

use std::fmt::Write;

use serde::Serialize;

use super::RuntimeKind;
use crate::artifacts::{ArtifactList, ReplayResult};
use crate::cpsat::CpsatPythonResult;
use crate::minizinc::SolveResult;
use crate::planner::PlanResult;
use crate::runtime::{INSTALL_HINT, RuntimeStatus, SolverList};

/// Pretty JSON of any result (cannot fail for our plain structs).
pub fn json<T: Serialize>(value: &T) -> String {
    serde_json::to_string_pretty(value)
        .unwrap_or_else(|error| format!("{{\"error\": \"{error}\"}}"))
}

pub fn runtime_status(status: &RuntimeStatus, only: Option<RuntimeKind>) -> String {
    let mut text = String::new();
    if only != Some(RuntimeKind::Cpsat) {
        text.push_str("MiniZinc\n");
        let _ = writeln!(
            text,
            "  runtime dir: {} ({})",
            status.runtime_dir,
            status.source.describe()
        );
        match &status.minizinc_binary {
            Some(binary) => {
                let _ = writeln!(text, "  minizinc:    {binary}");
                if let Some(version) = &status.minizinc_version {
                    let _ = writeln!(text, "  version:     {version}");
                }
                if let Some(count) = status.solver_count {
                    let _ = writeln!(text, "  solvers:     {count} (solvergate list-solvers)");
                }
                text.push_str("  status:      installed\n");
            }
            None => {
                let _ = writeln!(text, "  status:      not installed — {INSTALL_HINT}");
            }
        }
    }
    if only != Some(RuntimeKind::Minizinc) {
        let cpsat = &status.cpsat;
        text.push_str("CP-SAT\n");
        let _ = writeln!(
            text,
            "  python:      {} ({})",
            cpsat.python,
            cpsat.source.describe_python()
        );
        match &cpsat.ortools_version {
            Some(version) => {
                let _ = writeln!(text, "  ortools:     {version}");
                text.push_str("  status:      installed\n");
            }
            None => {
                let _ = writeln!(
                    text,
                    "  status:      not installed — {}; run `solvergate install-runtime --only cpsat` or `solvergate configure-runtime --python <path>`",
                    cpsat.problem.as_deref().unwrap_or("unknown problem")
                );
            }
        }
    }
    text
}

pub fn solver_table(list: &SolverList) -> String {
    let width = |f: fn(&crate::runtime::SolverInfo) -> &str, title: &str| {
        list.solvers
            .iter()
            .map(|s| f(s).chars().count())
            .chain([title.len()])
            .max()
            .unwrap_or(0)
    };
    let id_w = width(|s| &s.id, "ID");
    let name_w = width(|s| &s.name, "NAME");
    let version_w = width(|s| &s.version, "VERSION");
    let mut text = format!(
        "{:id_w$}  {:name_w$}  {:version_w$}  FLAGS\n",
        "ID", "NAME", "VERSION"
    );
    for solver in &list.solvers {
        let marker = if list.default_solver.as_deref() == Some(solver.id.as_str()) {
            "  (default)".to_owned()
        } else if !solver.available {
            format!(
                "  (cannot run here: {})",
                solver
                    .unavailable_reason
                    .as_deref()
                    .unwrap_or("the probe failed")
            )
        } else {
            String::new()
        };
        let _ = writeln!(
            text,
            "{:id_w$}  {:name_w$}  {:version_w$}  {}{marker}",
            solver.id,
            solver.name,
            solver.version,
            solver.capabilities.std_flags.join(" ")
        );
    }
    text
}

pub fn solve(result: &SolveResult) -> String {
    let mut text = String::new();
    let _ = writeln!(text, "status:    {}", result.status);
    let _ = writeln!(text, "solver:    {}", result.solver);
    if let Some(objective) = &result.objective {
        let _ = writeln!(text, "objective: {objective}");
    }
    let _ = writeln!(text, "elapsed:   {} ms", result.elapsed_ms);
    if let Some(diagnostic) = &result.diagnostic {
        let _ = writeln!(
            text,
            "note:      {} — {}",
            diagnostic.category, diagnostic.message
        );
    }
    if let Some(checker) = &result.checker {
        // The first rejected solution's verdict, else the last verdict.
        let shown = checker
            .checks
            .iter()
            .enumerate()
            .find(|(_, check)| check.violation)
            .or_else(|| checker.checks.iter().enumerate().next_back());
        match shown {
            Some((index, check)) if !check.output.trim().is_empty() => {
                let verdict = check.output.trim().replace('\n', " / ");
                let _ = writeln!(
                    text,
                    "checker:   {} — {verdict} (solution {} of {})",
                    checker.status,
                    index + 1,
                    checker.checks.len()
                );
            }
            _ => {
                let _ = writeln!(text, "checker:   {}", checker.status);
            }
        }
    }
    if !result.stdout.is_empty() {
        let _ = write!(text, "\n{}", result.stdout);
    }
    if !result.stderr.trim().is_empty() {
        let _ = write!(text, "\nstderr:\n{}", result.stderr);
        if !result.stderr.ends_with('\n') {
            text.push('\n');
        }
    }
    if !result.statistics.is_empty() {
        text.push_str("\nstatistics:\n");
        for (key, value) in &result.statistics {
            let _ = writeln!(text, "  {key}: {value}");
        }
    }
    text
}

/// A replay: recorded beside replayed, then the verdict.
pub fn replay(result: &ReplayResult) -> String {
    let mut text = format!(
        "Replayed {} ({}, saved {})\n",
        result.target_dir,
        result.backend.as_str(),
        result.saved_at
    );
    let objective = |value: &Option<serde_json::Number>| {
        value.as_ref().map_or("-".to_owned(), ToString::to_string)
    };
    let rows = [
        (
            "",
            "status",
            "objective".to_owned(),
            "checker",
            "verified by",
        ),
        (
            "recorded",
            result.recorded.status.as_str(),
            objective(&result.recorded.objective),
            result.recorded.checker_status.as_deref().unwrap_or("-"),
            result.recorded.level.as_str(),
        ),
        (
            "replayed",
            result.replayed.status.as_str(),
            objective(&result.replayed.objective),
            result.replayed.checker_status.as_deref().unwrap_or("-"),
            result.replayed.level.as_str(),
        ),
    ];
    let widths = [
        rows.iter().map(|row| row.0.len()).max().unwrap_or(0),
        rows.iter().map(|row| row.1.len()).max().unwrap_or(0),
        rows.iter().map(|row| row.2.len()).max().unwrap_or(0),
        rows.iter().map(|row| row.3.len()).max().unwrap_or(0),
    ];
    for (label, status, objective, checker, level) in &rows {
        let line = format!(
            "  {label:<w0$}  {status:<w1$}  {objective:<w2$}  {checker:<w3$}  {level}",
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2],
            w3 = widths[3],
        );
        let _ = writeln!(text, "{}", line.trim_end());
    }
    let runtime =
        |version: &Option<String>| version.clone().unwrap_or_else(|| "unknown".to_owned());
    let _ = writeln!(
        text,
        "  runtime: {} at the save, {} now",
        runtime(&result.recorded_runtime_version),
        runtime(&result.runtime_version)
    );
    match &result.reason {
        None => text.push_str("reproduced\n"),
        Some(reason) => {
            let _ = writeln!(text, "not reproduced: {reason}");
        }
    }
    text
}

/// `artifacts ls`: one aligned row per artifact.
pub fn artifact_list(list: &ArtifactList) -> String {
    if list.artifacts.is_empty() {
        return "No solvergate artifacts found.\n".to_owned();
    }
    let header = [
        "DIRECTORY".to_owned(),
        "BACKEND".to_owned(),
        "STATUS".to_owned(),
        "OBJECTIVE".to_owned(),
        "SAVED AT".to_owned(),
        "VERIFIED BY".to_owned(),
    ];
    let mut rows = vec![header];
    for artifact in &list.artifacts {
        rows.push([
            artifact.dir.clone(),
            artifact.backend.as_str().to_owned(),
            artifact.status.clone(),
            artifact
                .objective
                .as_ref()
                .map_or("-".to_owned(), ToString::to_string),
            artifact.saved_at.clone(),
            artifact.verified_by.clone(),
        ]);
    }
    let widths: Vec<usize> = (0..6)
        .map(|column| rows.iter().map(|row| row[column].len()).max().unwrap_or(0))
        .collect();
    let mut text = String::new();
    for row in &rows {
        let mut line = String::new();
        for (column, cell) in row.iter().enumerate() {
            let _ = write!(line, "{cell:<width$}  ", width = widths[column]);
        }
        let _ = writeln!(text, "{}", line.trim_end());
    }
    text
}

/// A load plan as a person reads it: one row per card, then the modes.
pub fn load_plan(result: &PlanResult) -> String {
    let plan = &result.result;
    let number = |value: Option<f64>| {
        value.map_or("-".to_owned(), |v| serde_json::Value::from(v).to_string())
    };
    let mut rows = vec![
        [
            "CARD",
            "FEASIBLE",
            "TOTAL",
            "AIR",
            "LCL",
            "FCL",
            "CONTAINERS",
            "FILL",
            "MISS P",
            "CHECKER",
        ]
        .map(str::to_owned),
    ];
    for card in &plan.cards {
        let cost = card.cost.as_ref();
        let containers: Vec<String> = card
            .containers
            .iter()
            .map(|c| format!("{}×{}", c.count, c.container_type))
            .collect();
        rows.push([
            format!("{}{}", card.name, if card.recommended { " *" } else { "" }),
            if card.feasible { "yes" } else { "no" }.to_owned(),
            number(cost.map(|c| c.total)),
            number(cost.map(|c| c.air)),
            number(cost.map(|c| c.lcl)),
            number(cost.map(|c| c.fcl)),
            if containers.is_empty() {
                "-".to_owned()
            } else {
                containers.join(" ")
            },
            number(card.fill_rate),
            number(card.miss_probability),
            card.checker.clone().unwrap_or_else(|| "-".to_owned()),
        ]);
    }
    let widths: Vec<usize> = (0..10)
        .map(|column| {
            rows.iter()
                .map(|row| row[column].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut text = format!(
        "Load plan {} (solved by {})\n",
        result.result_id, plan.solver
    );
    for row in &rows {
        let mut line = String::new();
        for (column, cell) in row.iter().enumerate() {
            let pad = widths[column].saturating_sub(cell.chars().count());
            let _ = write!(line, "{cell}{}  ", " ".repeat(pad));
        }
        let _ = writeln!(text, "{}", line.trim_end());
    }
    match &plan.recommended {
        Some(name) => {
            let _ = writeln!(text, "* recommended: {name}");
        }
        None => text.push_str("No card is feasible.\n"),
    }
    for card in plan.cards.iter().filter(|card| !card.feasible) {
        if let Some(reason) = &card.infeasible_reason {
            let _ = writeln!(text, "{}: {reason}", card.name);
        }
    }
    text.push_str("Transit by mode (ETA days at p50 / p90, mean of the worst tenth of delays):\n");
    for (mode, read) in &plan.modes {
        let _ = writeln!(
            text,
            "  {mode:<4} {} / {}, {} ({} delays)",
            read.eta_p50_days,
            read.eta_p90_days,
            serde_json::Value::from(read.cvar90_delay_days),
            read.delay_source
        );
    }
    for note in &plan.notes {
        let _ = writeln!(text, "note: {note}");
    }
    text
}

/// A CP-SAT script's answer.
pub fn cpsat_run(result: &CpsatPythonResult) -> String {
    let mut text = String::new();
    let _ = writeln!(text, "status:    {}", result.status);
    if let Some(objective) = &result.objective {
        let _ = writeln!(text, "objective: {objective}");
    }
    if let Some(bound) = &result.best_objective_bound {
        let _ = writeln!(text, "bound:     {bound}");
    }
    let _ = writeln!(text, "elapsed:   {} ms", result.duration_ms);
    if let Some(diagnostic) = &result.diagnostic {
        let _ = writeln!(
            text,
            "note:      {} — {}",
            diagnostic.category, diagnostic.message
        );
    }
    if let Some(solution) = result.solution.as_ref().filter(|s| !s.is_empty()) {
        let pretty = serde_json::to_string_pretty(&serde_json::Value::Object(solution.clone()))
            .unwrap_or_default();
        let _ = writeln!(text, "\nsolution:\n{pretty}");
    }
    if !result.stderr.trim().is_empty() {
        let _ = write!(text, "\nstderr:\n{}", result.stderr);
        if !result.stderr.ends_with('\n') {
            text.push('\n');
        }
    }
    text
}
