//! The readable text of each equation tool's result: the MCP text part
//! and what `solvergate equations …` prints. Leads with the verdict, one
//! line per value or equation; the structured result stays the contract.

use std::fmt::Write;

use super::evaluate::{EvaluationResult, EvaluationStatus, ValidationResult};
use super::model::{EquationUnits, Violation};
use super::{CorrectionResult, EquationStatus, OptimizationResult};
use crate::diagnostics::Diagnostic;

fn problem_lines(text: &mut String, errors: &[String], diagnostic: Option<&Diagnostic>) {
    for error in errors {
        let _ = writeln!(text, "  {error}");
    }
    if errors.is_empty()
        && let Some(diagnostic) = diagnostic
    {
        let _ = writeln!(
            text,
            "Diagnostic: {} — {}",
            diagnostic.category, diagnostic.message
        );
    }
}

fn violation_lines(text: &mut String, violations: &[Violation], units: &[EquationUnits]) {
    for v in violations {
        let side =
            |value: Option<f64>| value.map_or("not computable".to_owned(), |v| v.to_string());
        // Residual and excess count the equation's unit: `200 × 0.01`.
        let in_units = |amount: f64| match units.iter().find(|u| u.place == v.place) {
            Some(u) => format!("{amount} × {}", u.unit),
            None => amount.to_string(),
        };
        let _ = writeln!(
            text,
            "  {} {}: lhs {}, rhs {}, residual {} ({} beyond the tolerance), penalty {}",
            v.place,
            v.equation,
            side(v.lhs_value),
            side(v.rhs_value),
            in_units(v.residual),
            in_units(v.excess),
            v.penalty
        );
    }
}

fn width<'a>(names: impl Iterator<Item = &'a String>) -> usize {
    names.map(|name| name.chars().count()).max().unwrap_or(0)
}

/// `correct_values`.
pub fn correction(result: &CorrectionResult) -> String {
    let mut text = String::new();
    match result.status {
        EquationStatus::Optimal | EquationStatus::Feasible => {
            let _ = writeln!(
                text,
                "{}: {} of {} free value(s) corrected ({}{})",
                result.status.as_str(),
                result.changed.len(),
                result.corrected.len(),
                result
                    .penalty
                    .map(|p| format!("penalty {p}, "))
                    .unwrap_or_default(),
                result.solver.as_deref().unwrap_or("no solver")
            );
            let pad = width(result.corrected.keys());
            for (name, value) in &result.corrected {
                let note = match result.changed.get(name) {
                    Some(change) => format!("  (observed {})", change.observed),
                    None => String::new(),
                };
                let _ = writeln!(text, "  {name:<pad$}  {value}{note}");
            }
            if !result.violations.is_empty() {
                let _ = writeln!(
                    text,
                    "The observations cannot all be reconciled: {} equation(s) still violated:",
                    result.violations.len()
                );
                violation_lines(&mut text, &result.violations, &result.equation_units);
            }
            if result.status == EquationStatus::Feasible {
                problem_lines(&mut text, &[], result.diagnostic.as_ref());
            }
        }
        status => {
            let _ = writeln!(text, "{}: nothing corrected", status.as_str());
            problem_lines(&mut text, &result.errors, result.diagnostic.as_ref());
        }
    }
    text
}

/// `optimize_expression`.
pub fn optimisation(result: &OptimizationResult) -> String {
    let mut text = String::new();
    match result.status {
        EquationStatus::Optimal | EquationStatus::Feasible => {
            let _ = writeln!(
                text,
                "{}: objective {} ({})",
                result.status.as_str(),
                result
                    .objective_value
                    .map_or("not computable".to_owned(), |v| v.to_string()),
                result.solver.as_deref().unwrap_or("no solver")
            );
            let pad = width(result.values.keys());
            for (name, value) in &result.values {
                let _ = writeln!(text, "  {name:<pad$}  {value}");
            }
            if !result.violations.is_empty() {
                let _ = writeln!(
                    text,
                    "{} soft constraint(s) violated:",
                    result.violations.len()
                );
                violation_lines(&mut text, &result.violations, &result.equation_units);
            }
            if result.status == EquationStatus::Feasible {
                problem_lines(&mut text, &[], result.diagnostic.as_ref());
            }
        }
        status => {
            let _ = writeln!(text, "{}: no values", status.as_str());
            problem_lines(&mut text, &result.errors, result.diagnostic.as_ref());
        }
    }
    text
}

/// `validate_equations`.
pub fn validation(result: &ValidationResult) -> String {
    let invalid = result
        .equations
        .iter()
        .filter(|e| !e.errors.is_empty())
        .count();
    let mut text = if invalid == 0 {
        format!("All {} equation(s) are valid.\n", result.equations.len())
    } else {
        format!(
            "{invalid} of {} equation(s) are invalid:\n",
            result.equations.len()
        )
    };
    for (index, equation) in result.equations.iter().enumerate() {
        if equation.errors.is_empty() {
            continue;
        }
        let _ = writeln!(text, "  [{index}] {} = {}", equation.lhs, equation.rhs);
        for error in &equation.errors {
            let _ = writeln!(text, "      {error}");
        }
    }
    text
}

/// `evaluate_equations`.
pub fn evaluation(result: &EvaluationResult) -> String {
    let passed = result
        .results
        .iter()
        .filter(|r| r.status == EvaluationStatus::Passed)
        .count();
    let mut text = format!("{passed} of {} equation(s) hold.\n", result.results.len());
    for (index, r) in result.results.iter().enumerate() {
        let equation = format!("{} {} {}", r.lhs, r.relation.symbol(), r.rhs);
        let detail = match r.status {
            EvaluationStatus::Passed | EvaluationStatus::Failed => format!(
                "lhs {}, rhs {}, error {} (tolerance {})",
                r.actual.unwrap_or_default(),
                r.computed.unwrap_or_default(),
                r.error.unwrap_or_default(),
                r.tolerance
            ),
            EvaluationStatus::MissingValues => format!("no value for {}", r.missing.join(", ")),
            EvaluationStatus::Error => r.message.clone().unwrap_or_default(),
        };
        let status = match r.status {
            EvaluationStatus::Passed => "passed",
            EvaluationStatus::Failed => "failed",
            EvaluationStatus::MissingValues => "missing_values",
            EvaluationStatus::Error => "error",
        };
        let _ = writeln!(text, "  [{index}] {status:<14} {equation}: {detail}");
    }
    text
}
