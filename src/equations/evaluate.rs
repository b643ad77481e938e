//! The two tools that need no solver: `validate_equations` (parse each
//! side, list what is wrong and where) and `evaluate_equations` (compute
//! both sides from given values in real units and judge the relation).
//!
//! Evaluation is plain `f64` arithmetic on the parsed tree — never `eval`
//! of text. `%` is the remainder with the sign of the dividend (as in
//! MiniZinc's `mod`, which `correct_values` compiles it to), so the two
//! tools agree.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::parse::{self, Expr, Op, ParseError, ParseErrors, ProblemKind};
use super::request::{EvaluateRequest, EvaluatedEquation, ExpressionPair, Relation};

/// Which side of an equation a problem is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    /// The left-hand side.
    Lhs,
    /// The right-hand side.
    Rhs,
}

/// One problem in one side of an equation, with its position.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExpressionError {
    /// The side whose text `column` counts in.
    pub side: Side,
    /// What kind of problem: `syntax_error`, `unary_operator`, `exponent`
    /// or `limit_exceeded` (the message starts with the same words).
    pub kind: ProblemKind,
    /// 1-based character column in that side's text.
    pub column: usize,
    /// The offending text (`end of expression` when it ended too early).
    pub found: String,
    /// What is wrong, in words.
    pub message: String,
}

impl ExpressionError {
    fn new(side: Side, error: ParseError) -> Self {
        ExpressionError {
            side,
            kind: error.kind,
            column: error.column,
            found: error.found,
            message: error.message,
        }
    }

    /// One line: `rhs column 1, at '-': …`.
    pub fn line(&self) -> String {
        let side = match self.side {
            Side::Lhs => "lhs",
            Side::Rhs => "rhs",
        };
        let error = ParseError {
            kind: self.kind,
            column: self.column,
            found: self.found.clone(),
            message: self.message.clone(),
        };
        format!("{side} {error}")
    }
}

/// `validate_equations`' verdict on one equation.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct EquationCheck {
    /// The left-hand side, as given.
    pub lhs: String,
    /// The right-hand side, as given.
    pub rhs: String,
    /// Empty when the equation is valid; else one line per problem (and a
    /// last line saying how many more there are, if any).
    pub errors: Vec<String>,
    /// The problems listed, with side, kind, column and offending text
    /// apart.
    pub details: Vec<ExpressionError>,
    /// Problems found beyond those listed (each side lists at most 10).
    pub unlisted: usize,
}

/// Outcome of `validate_equations`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ValidationResult {
    /// Every equation parsed.
    pub valid: bool,
    /// One entry per equation, in order.
    pub equations: Vec<EquationCheck>,
}

/// Every problem found in the two sides of an equation.
#[derive(Debug, Clone, Default)]
pub struct SideErrors {
    /// The problems listed, left side first.
    pub details: Vec<ExpressionError>,
    /// Problems found beyond those listed.
    pub unlisted: usize,
    /// Per side, how many it left unlisted.
    sides: Vec<(Side, usize)>,
}

impl SideErrors {
    fn add(&mut self, side: Side, errors: ParseErrors) {
        self.details.extend(
            errors
                .errors
                .into_iter()
                .map(|e| ExpressionError::new(side, e)),
        );
        self.unlisted += errors.unlisted;
        if errors.unlisted > 0 {
            self.sides.push((side, errors.unlisted));
        }
    }

    /// One line per problem, then one per side with problems unlisted.
    pub fn lines(&self) -> Vec<String> {
        let mut lines: Vec<String> = self.details.iter().map(ExpressionError::line).collect();
        for (side, count) in &self.sides {
            let side = match side {
                Side::Lhs => "lhs",
                Side::Rhs => "rhs",
            };
            lines.push(format!(
                "{side}: {count} more problem(s) not listed; fix these and check again"
            ));
        }
        lines
    }
}

/// Both sides of an equation, parsed, or every problem found in them.
pub fn parse_sides(lhs: &str, rhs: &str) -> Result<(Expr, Expr), SideErrors> {
    match (parse::parse(lhs), parse::parse(rhs)) {
        (Ok(lhs), Ok(rhs)) => Ok((lhs, rhs)),
        (left, right) => {
            let mut errors = SideErrors::default();
            if let Err(e) = left {
                errors.add(Side::Lhs, e);
            }
            if let Err(e) = right {
                errors.add(Side::Rhs, e);
            }
            Err(errors)
        }
    }
}

/// Parses every equation and reports what is wrong with each.
pub fn validate(equations: &[ExpressionPair]) -> ValidationResult {
    let equations: Vec<EquationCheck> = equations
        .iter()
        .map(|equation| {
            let problems = parse_sides(&equation.lhs, &equation.rhs)
                .err()
                .unwrap_or_default();
            EquationCheck {
                lhs: equation.lhs.clone(),
                rhs: equation.rhs.clone(),
                errors: problems.lines(),
                unlisted: problems.unlisted,
                details: problems.details,
            }
        })
        .collect();
    ValidationResult {
        valid: equations.iter().all(|e| e.errors.is_empty()),
        equations,
    }
}

/// How one equation fared against the values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EvaluationStatus {
    /// The relation holds within the tolerance.
    Passed,
    /// Both sides have values, and the relation misses by more than the
    /// tolerance.
    Failed,
    /// A variable it mentions has no value.
    MissingValues,
    /// It does not parse, or cannot be computed (division by zero).
    Error,
}

/// `evaluate_equations`' verdict on one equation.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct EquationEvaluation {
    /// The left-hand side, as given.
    pub lhs: String,
    /// The right-hand side, as given.
    pub rhs: String,
    /// The relation judged: `==`, `<=` or `>=`.
    pub relation: Relation,
    /// The tolerance applied, in real units.
    pub tolerance: f64,
    /// Whether the relation held; `actual`, `computed` and `error` are set only
    /// when both sides have values.
    pub status: EvaluationStatus,
    /// The left-hand side's value.
    pub actual: Option<f64>,
    /// The right-hand side's value.
    pub computed: Option<f64>,
    /// `==`: |actual − computed|; `<=`: how far actual is above computed;
    /// `>=`: how far it is below (0 when the relation holds exactly).
    pub error: Option<f64>,
    /// Variables without a value (status `missing_values`).
    pub missing: Vec<String>,
    /// Why the status is `error`.
    pub message: Option<String>,
}

/// Outcome of `evaluate_equations`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct EvaluationResult {
    /// Every equation passed.
    pub all_passed: bool,
    /// One entry per equation, in order.
    pub results: Vec<EquationEvaluation>,
}

/// Slack for floating-point noise on top of the tolerance: relative to the
/// size of the values compared (so 0.1 + 0.2 == 0.3 passes).
const FLOAT_SLACK: f64 = 1e-9;

/// Evaluates every equation with the given values.
pub fn evaluate(request: &EvaluateRequest) -> EvaluationResult {
    let results: Vec<EquationEvaluation> = request
        .equations
        .iter()
        .map(|equation| evaluate_one(equation, &request.values, request.mult_factors.as_ref()))
        .collect();
    EvaluationResult {
        all_passed: results.iter().all(|r| r.status == EvaluationStatus::Passed),
        results,
    }
}

fn evaluate_one(
    equation: &EvaluatedEquation,
    values: &BTreeMap<String, f64>,
    mult_factors: Option<&BTreeMap<String, i64>>,
) -> EquationEvaluation {
    let mut result = EquationEvaluation {
        lhs: equation.lhs.clone(),
        rhs: equation.rhs.clone(),
        relation: equation.relation,
        tolerance: equation.tolerance,
        status: EvaluationStatus::Error,
        actual: None,
        computed: None,
        error: None,
        missing: Vec::new(),
        message: None,
    };
    let (lhs, rhs) = match parse_sides(&equation.lhs, &equation.rhs) {
        Ok(sides) => sides,
        Err(errors) => {
            result.message = Some(errors.lines().join("; "));
            return result;
        }
    };
    if let Some(mults) = mult_factors {
        // correct_values' unit: 1 / the largest mult_factor of the equation.
        let m = lhs
            .names()
            .union(&rhs.names())
            .map(|name| mults.get(*name).copied().unwrap_or(1))
            .max()
            .unwrap_or(1);
        result.tolerance = equation.tolerance / m as f64;
    }
    let mut missing: Vec<String> = lhs
        .names()
        .union(&rhs.names())
        .filter(|name| !values.contains_key(**name))
        .map(|name| (*name).to_owned())
        .collect();
    missing.sort();
    if !missing.is_empty() {
        result.status = EvaluationStatus::MissingValues;
        result.missing = missing;
        return result;
    }
    let lookup = |name: &str| values.get(name).copied();
    let (actual, computed) = match (value(&lhs, &lookup), value(&rhs, &lookup)) {
        (Ok(actual), Ok(computed)) => (actual, computed),
        (Err(message), _) => {
            result.message = Some(format!("lhs: {message}"));
            return result;
        }
        (_, Err(message)) => {
            result.message = Some(format!("rhs: {message}"));
            return result;
        }
    };
    let error = match equation.relation {
        Relation::Equal => (actual - computed).abs(),
        Relation::AtMost => (actual - computed).max(0.0),
        Relation::AtLeast => (computed - actual).max(0.0),
    };
    let slack = FLOAT_SLACK * actual.abs().max(computed.abs()).max(1.0);
    result.actual = Some(actual);
    result.computed = Some(computed);
    result.error = Some(error);
    result.status = if error <= result.tolerance + slack {
        EvaluationStatus::Passed
    } else {
        EvaluationStatus::Failed
    };
    result
}

/// Why an expression has no value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum NoValue {
    /// A variable the expression mentions has no value; carries its name.
    #[error("{0} has no value")]
    Unbound(String),
    /// A division or remainder whose right operand is 0.
    #[error("'{}' by zero (its right operand is 0)", .0.symbol())]
    ByZero(Op),
    /// A value on the way is infinite or NaN (it overflows `f64`).
    #[error("the value is too large to compute")]
    NotFinite,
}

/// The value of an expression, or why it has none.
pub fn value(expr: &Expr, lookup: &dyn Fn(&str) -> Option<f64>) -> Result<f64, NoValue> {
    let result = match expr {
        Expr::Number(decimal) => decimal.to_f64(),
        Expr::Name(name) => lookup(name).ok_or_else(|| NoValue::Unbound(name.clone()))?,
        Expr::Power { base, exponent } => value(base, lookup)?.powi(*exponent as i32),
        Expr::Binary { op, left, right } => {
            let (a, b) = (value(left, lookup)?, value(right, lookup)?);
            match op {
                Op::Add => a + b,
                Op::Sub => a - b,
                Op::Mul => a * b,
                Op::Div | Op::Mod if b == 0.0 => return Err(NoValue::ByZero(*op)),
                Op::Div => a / b,
                Op::Mod => a % b,
            }
        }
    };
    if result.is_finite() {
        Ok(result)
    } else {
        Err(NoValue::NotFinite)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eq(lhs: &str, rhs: &str, relation: Relation, tolerance: f64) -> EvaluatedEquation {
        EvaluatedEquation {
            lhs: lhs.to_owned(),
            rhs: rhs.to_owned(),
            relation,
            tolerance,
            weight: None,
        }
    }

    #[test]
    fn evaluation_judges_each_relation() {
        let values: BTreeMap<String, f64> = [("a", 520.0), ("q", 10.0), ("r", 52.0), ("x", 0.0)]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
        let request = EvaluateRequest {
            mult_factors: None,
            equations: vec![
                eq("a", "q * r", Relation::Equal, 0.0),
                eq("a", "q * r + 1", Relation::Equal, 0.5),
                eq("a", "q * r + 1", Relation::AtMost, 0.0),
                eq("a + 3", "q * r", Relation::AtMost, 2.0),
                eq("a", "q / x", Relation::Equal, 0.0),
                eq("a", "b * c", Relation::Equal, 0.0),
                eq("0.1 + 0.2", "0.3", Relation::Equal, 0.0),
                eq("-a", "1", Relation::Equal, 0.0),
                eq("7 % 3", "1", Relation::Equal, 0.0),
            ],
            values,
        };
        let result = evaluate(&request);
        let statuses: Vec<_> = result.results.iter().map(|r| r.status).collect();
        use EvaluationStatus::*;
        assert_eq!(
            statuses,
            [
                Passed,
                Failed,
                Passed,
                Failed,
                Error,
                MissingValues,
                Passed,
                Error,
                Passed
            ]
        );
        assert!(!result.all_passed);
        assert_eq!(result.results[1].error, Some(1.0));
        assert_eq!(result.results[3].error, Some(3.0));
        assert_eq!(result.results[5].missing, ["b", "c"]);
        assert!(
            result.results[4]
                .message
                .as_deref()
                .unwrap()
                .contains("by zero")
        );
        assert!(
            result.results[7]
                .message
                .as_deref()
                .unwrap()
                .contains("lhs column 1")
        );
    }

    #[test]
    fn validation_lists_problems_per_side() {
        let result = validate(&[
            ExpressionPair {
                lhs: "total".into(),
                rhs: "taxable + tax".into(),
                relation: None,
            },
            ExpressionPair {
                lhs: "x ** y".into(),
                rhs: "-base * 0.1".into(),
                relation: None,
            },
            ExpressionPair {
                lhs: "a".into(),
                rhs: "-b ** c + ".repeat(12),
                relation: None,
            },
        ]);
        assert!(!result.valid);
        assert!(result.equations[0].errors.is_empty());
        let details = &result.equations[1].details;
        assert_eq!(details.len(), 2);
        assert_eq!((details[0].side, details[0].column), (Side::Lhs, 6));
        assert_eq!((details[1].side, details[1].column), (Side::Rhs, 1));
        assert!(result.equations[1].errors[1].starts_with("rhs column 1, at '-'"));
        assert_eq!(details[0].kind, ProblemKind::Exponent);
        // 12 unary signs, 12 exponents and a missing last operand: ten
        // listed, the rest counted in a last line.
        let many = &result.equations[2];
        assert_eq!((many.details.len(), many.unlisted), (10, 15));
        assert_eq!(many.errors.len(), 11);
        assert_eq!(
            many.errors[10],
            "rhs: 15 more problem(s) not listed; fix these and check again"
        );
    }
}
