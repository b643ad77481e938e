//! What a person at a terminal sees. Plain text on stdout; `--json` prints
//! the same result structs the MCP tools return.

use std::fmt::Write;

use serde::Serialize;

use super::RuntimeKind;
use crate::minizinc::SolveResult;
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
            cpsat.source.describe()
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
            "  (default)"
        } else {
            ""
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
        let _ = writeln!(text, "checker:   {}", checker.status);
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
