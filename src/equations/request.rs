//! The input shapes of the four equation tools — the MCP input schemas and
//! the JSON files `solvergate equations …` reads — and their range checks.
//!
//! Field names and defaults follow the reference (`obs`, `confidence`,
//! `mult_factor`, `min`, `max`, `fixed`; `lhs`, `rhs`, `relation`,
//! `weight`, `tolerance`; `timeout_seconds`, `num_workers`). A value out of
//! range is a [`ToolError`] naming the field, found before anything runs;
//! expressions are not parsed here (a bad one is a result, not an error).
//!
//! A field's `///` is the description a client reads in the input schema.
//! Fields whose name says all a client needs (`lhs`, `rhs`, `equations`,
//! `variables`, `objective`) carry none, to keep tools/list small, and are
//! `pub(crate)`: only this crate builds or reads them.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::budget::{Budget, MAX_TIMEOUT_MS};
use crate::diagnostics::ToolError;
use crate::minizinc::{MAX_PARALLEL, SolveControls};

/// Largest magnitude of any scaled integer the solver sees: a bound, an
/// observation, a constant, a residual, a penalty or the objective. Gecode,
/// the solver of Debian's runtime, works in 32-bit integers.
pub const INT_LIMIT: i64 = 2_000_000_000;
/// Largest `mult_factor`.
pub const MAX_MULT_FACTOR: i64 = 1_000_000_000;
/// Longest budget, in seconds: the shared cap on every run (one day).
pub const MAX_TIMEOUT_SECONDS: f64 = (MAX_TIMEOUT_MS / 1000) as f64;
/// The default budget (5 s), in milliseconds, for messages.
const DEFAULT_TIMEOUT_SECONDS_MS: i64 = 5000;

fn default_mult() -> i64 {
    1
}
fn default_weight() -> i64 {
    1000
}
fn default_timeout() -> f64 {
    DEFAULT_TIMEOUT_SECONDS_MS as f64 / 1000.0
}

/// How the two sides of an equation relate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Relation {
    /// `==`: both sides equal.
    #[default]
    #[serde(rename = "==")]
    Equal,
    /// `<=`: the left side at most the right.
    #[serde(rename = "<=")]
    AtMost,
    /// `>=`: the left side at least the right.
    #[serde(rename = ">=")]
    AtLeast,
}

impl Relation {
    /// The relation as written in an expression and a model: `==`, `<=` or
    /// `>=`.
    pub fn symbol(self) -> &'static str {
        match self {
            Relation::Equal => "==",
            Relation::AtMost => "<=",
            Relation::AtLeast => ">=",
        }
    }
}

/// One equation of `correct_values`, or a constraint of
/// `optimize_expression`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Equation {
    /// Left-hand side: numbers, variable names, + - * / % **, parentheses;
    /// (0 - x) for minus.
    pub lhs: String,
    /// Right-hand side, same syntax.
    pub rhs: String,
    /// `==` (default), `<=` or `>=`.
    #[serde(default)]
    pub relation: Relation,
    /// Penalty per unit of violation beyond the tolerance, at least 0; the unit
    /// is 1 / the largest mult_factor among the equation's variables
    /// (equation_units).
    #[serde(default = "default_weight")]
    pub weight: i64,
    /// Allowed slack, in the same unit as `weight` (200 is ±2.00 for cents).
    #[serde(default)]
    pub tolerance: i64,
}

/// An equation to check the syntax of (`validate_equations`).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ExpressionPair {
    pub(crate) lhs: String,
    pub(crate) rhs: String,
    /// Accepted and ignored, so the equations of the other tools can be
    /// passed as they are.
    #[serde(default)]
    pub relation: Option<Relation>,
}

/// An equation to evaluate (`evaluate_equations`).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EvaluatedEquation {
    pub(crate) lhs: String,
    pub(crate) rhs: String,
    /// `==` (default), `<=` or `>=`.
    #[serde(default)]
    pub relation: Relation,
    /// Allowed difference, at least 0: real units, or with `mult_factors`
    /// correct_values' units.
    #[serde(default)]
    pub tolerance: f64,
    /// Accepted and ignored (evaluation has no penalties).
    #[serde(default)]
    pub weight: Option<i64>,
}

/// A variable of `correct_values`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ObservedVariable {
    /// The observed (extracted) value, in real units. Required with
    /// `fixed`; a free variable without it is unobserved: it takes the
    /// value the equations force, pulled toward nothing.
    #[serde(default)]
    pub obs: Option<f64>,
    /// Trust in `obs`, 0 to 1: each scaled unit the correction moves away
    /// from it costs round(100 × confidence). Needs `obs` when above 0.
    #[serde(default)]
    pub confidence: f64,
    /// Scale to integers: the solver works on value × mult_factor (100 for
    /// amounts with cents, 1 for counts).
    #[serde(default = "default_mult")]
    pub mult_factor: i64,
    /// Lower bound in real units (default 0).
    #[serde(default)]
    pub min: Option<f64>,
    /// Upper bound in real units (default 2e9 / mult_factor).
    #[serde(default)]
    pub max: Option<f64>,
    /// Pin the variable to `obs`; it is not corrected and not returned.
    #[serde(default)]
    pub fixed: bool,
}

/// A decision variable of `optimize_expression`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DecisionVariable {
    /// Lower bound in real units (default 0).
    #[serde(default)]
    pub min: Option<f64>,
    /// Upper bound in real units (default 2e9 / mult_factor).
    #[serde(default)]
    pub max: Option<f64>,
    /// Scale to integers, as for correct_values.
    #[serde(default = "default_mult")]
    pub mult_factor: i64,
}

/// Which way to optimise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// The largest value of the objective is best.
    Maximize,
    /// The smallest value of the objective is best.
    Minimize,
}

/// The expression to optimise.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Objective {
    /// An expression over the variables (no division by a variable).
    pub expr: String,
    /// `maximize` or `minimize`.
    pub direction: Direction,
}

/// The solver settings shared by correct_values and optimize_expression
/// (the requests carry them as top-level fields).
#[derive(Debug, Clone)]
pub struct SolverSettings<'a> {
    /// The request's wall-clock budget, in seconds, unchecked.
    pub timeout_seconds: f64,
    /// The request's `-p` thread count, unchecked; `None` leaves the solver's
    /// default.
    pub num_workers: Option<i64>,
    /// The MiniZinc solver asked for; `None` picks Gecode when the runtime
    /// has it, else its default.
    pub solver: Option<&'a str>,
}

/// Arguments of `correct_values`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CorrectRequest {
    /// Every variable the equations mention, by name.
    pub variables: BTreeMap<String, ObservedVariable>,
    /// The equations the values should satisfy (all soft: weighted).
    pub equations: Vec<Equation>,
    /// Wall-clock budget of the solve in seconds.
    #[serde(default = "default_timeout")]
    pub timeout_seconds: f64,
    /// `-p` threads, 1 to 256, for a solver that declares it.
    #[serde(default)]
    pub num_workers: Option<i64>,
    /// MiniZinc solver id, short name or tag; omitted: Gecode when the
    /// runtime has it (it proves these models fastest), else its default.
    #[serde(default)]
    pub solver: Option<String>,
}

/// Arguments of `validate_equations`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ValidateRequest {
    pub(crate) equations: Vec<ExpressionPair>,
}

/// Arguments of `evaluate_equations`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EvaluateRequest {
    pub(crate) equations: Vec<EvaluatedEquation>,
    /// Variable values in real units.
    pub values: BTreeMap<String, f64>,
    /// The mult_factors ({name: factor}) given to correct_values (unlisted: 1);
    /// with them a `tolerance` is in correct_values' units, so both tools
    /// agree.
    #[serde(default)]
    pub mult_factors: Option<BTreeMap<String, i64>>,
}

/// Arguments of `optimize_expression`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OptimizeRequest {
    pub(crate) variables: BTreeMap<String, DecisionVariable>,
    pub(crate) objective: Objective,
    /// Must hold; contradictory ones give INFEASIBLE.
    #[serde(default)]
    pub hard_constraints: Vec<Equation>,
    /// Violations beyond the tolerance cost weight per scaled unit, subtracted
    /// from a maximised objective, added to a minimised one.
    #[serde(default)]
    pub soft_constraints: Vec<Equation>,
    /// Wall-clock budget of the solve in seconds.
    #[serde(default = "default_timeout")]
    pub timeout_seconds: f64,
    /// `-p` threads, 1 to 256, for a solver that declares it.
    #[serde(default)]
    pub num_workers: Option<i64>,
    /// MiniZinc solver id, short name or tag; omitted: Gecode when the
    /// runtime has it (it proves these models fastest), else its default.
    #[serde(default)]
    pub solver: Option<String>,
}

/// A variable's domain in scaled integers, checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scaled {
    /// The variable's `mult_factor`, from 1 to [`MAX_MULT_FACTOR`].
    pub mult: i64,
    /// `min` × `mult`, rounded up; 0 when no `min` was given.
    pub low: i64,
    /// `max` × `mult`, rounded down; [`INT_LIMIT`] when no `max` was given.
    pub high: i64,
}

/// Checks a name the way the parser reads names.
pub fn check_name(name: &str) -> Result<(), ToolError> {
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    if !first_ok || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(ToolError::invalid(format!(
            "variable name {name:?} is not usable in an expression: use ASCII letters, digits and '_', starting with a letter or '_'"
        )));
    }
    Ok(())
}

/// `value × mult` rounded to an integer within the solver's range.
pub fn scale_value(name: &str, field: &str, value: f64, mult: i64) -> Result<i64, ToolError> {
    if !value.is_finite() {
        return Err(ToolError::invalid(format!(
            "variables.{name}.{field} must be a finite number"
        )));
    }
    let scaled = (value * mult as f64).round();
    if scaled.abs() > INT_LIMIT as f64 {
        return Err(ToolError::invalid(format!(
            "variables.{name}.{field} is {value}; times mult_factor {mult} that is beyond the solver's integer range (±{INT_LIMIT}); lower mult_factor or the value"
        )));
    }
    Ok(scaled as i64)
}

/// The scaled domain of a variable from its real-unit bounds.
pub fn scaled_domain(
    name: &str,
    mult: i64,
    min: Option<f64>,
    max: Option<f64>,
) -> Result<Scaled, ToolError> {
    if !(1..=MAX_MULT_FACTOR).contains(&mult) {
        return Err(ToolError::invalid(format!(
            "variables.{name}.mult_factor must be from 1 to {MAX_MULT_FACTOR}, got {mult}"
        )));
    }
    let low = match min {
        Some(min) => scale_bound(name, "min", min, mult, f64::ceil)?,
        None => 0,
    };
    let high = match max {
        Some(max) => scale_bound(name, "max", max, mult, f64::floor)?,
        None => INT_LIMIT,
    };
    if low > high {
        return Err(ToolError::invalid(format!(
            "variables.{name}: min is above max (scaled by mult_factor {mult}: {low} > {high}); no value fits"
        )));
    }
    Ok(Scaled { mult, low, high })
}

fn scale_bound(
    name: &str,
    field: &str,
    value: f64,
    mult: i64,
    round: fn(f64) -> f64,
) -> Result<i64, ToolError> {
    if !value.is_finite() {
        return Err(ToolError::invalid(format!(
            "variables.{name}.{field} must be a finite number"
        )));
    }
    // A bound such as 0.1 × 10 must not round up to 1.0000000000000002.
    let scaled = round((value * mult as f64 * 1e9).round() / 1e9);
    if scaled.abs() > INT_LIMIT as f64 {
        return Err(ToolError::invalid(format!(
            "variables.{name}.{field} is {value}; times mult_factor {mult} that is beyond the solver's integer range (±{INT_LIMIT}); omit it or lower mult_factor"
        )));
    }
    Ok(scaled as i64)
}

fn check_equation(path: &str, equation: &Equation) -> Result<(), ToolError> {
    if equation.weight < 0 || equation.weight > INT_LIMIT {
        return Err(ToolError::invalid(format!(
            "{path}.weight must be from 0 to {INT_LIMIT}, got {}",
            equation.weight
        )));
    }
    if equation.tolerance < 0 || equation.tolerance > INT_LIMIT {
        return Err(ToolError::invalid(format!(
            "{path}.tolerance must be from 0 to {INT_LIMIT} (scaled units), got {}",
            equation.tolerance
        )));
    }
    Ok(())
}

impl SolverSettings<'_> {
    /// The budget, once the worker count is checked too.
    pub fn validate(&self) -> Result<Budget, ToolError> {
        // The shared checks decide; the messages name this tool's fields
        // and units.
        let seconds = self.timeout_seconds;
        let ms = if seconds.is_finite() {
            // Saturates for huge values, which the budget check refuses.
            (seconds * 1000.0).ceil() as i64
        } else {
            0
        };
        let budget = Budget::parse("timeout_seconds", ms, Some(DEFAULT_TIMEOUT_SECONDS_MS));
        let Ok(budget) = budget else {
            return Err(ToolError::invalid(format!(
                "timeout_seconds must be above 0 and at most {MAX_TIMEOUT_SECONDS}, got {seconds}"
            )));
        };
        let controls = SolveControls {
            parallel: self.num_workers,
            ..SolveControls::default()
        };
        if let (Some(workers), Err(_)) = (self.num_workers, controls.validate()) {
            return Err(ToolError::invalid(format!(
                "num_workers must be from 1 to {MAX_PARALLEL}, got {workers}; omit it for the solver's default"
            )));
        }
        Ok(budget)
    }
}

impl CorrectRequest {
    /// The solver settings this request carries as top-level fields.
    pub fn settings(&self) -> SolverSettings<'_> {
        SolverSettings {
            timeout_seconds: self.timeout_seconds,
            num_workers: self.num_workers,
            solver: self.solver.as_deref(),
        }
    }

    /// Range checks on every field (expressions excepted).
    pub fn validate(&self) -> Result<(), ToolError> {
        self.settings().validate()?;
        if self.equations.is_empty() {
            return Err(ToolError::invalid(
                "equations must not be empty: give at least one equation the values should satisfy",
            ));
        }
        for (name, variable) in &self.variables {
            check_name(name)?;
            let domain = scaled_domain(name, variable.mult_factor, variable.min, variable.max)?;
            if !(0.0..=1.0).contains(&variable.confidence) {
                return Err(ToolError::invalid(format!(
                    "variables.{name}.confidence must be from 0 to 1, got {}",
                    variable.confidence
                )));
            }
            match variable.obs {
                Some(obs) => {
                    scale_value(name, "obs", obs, domain.mult)?;
                }
                None if variable.fixed => {
                    return Err(ToolError::invalid(format!(
                        "variables.{name} is fixed but has no obs: give the value to pin it to as obs, or drop fixed to let the equations decide it"
                    )));
                }
                None if variable.confidence > 0.0 => {
                    return Err(ToolError::invalid(format!(
                        "variables.{name} has confidence {} but no obs to hold it to: give obs, or drop confidence for a value the equations decide alone",
                        variable.confidence
                    )));
                }
                None => {}
            }
        }
        for (index, equation) in self.equations.iter().enumerate() {
            check_equation(&format!("equations[{index}]"), equation)?;
        }
        Ok(())
    }
}

impl OptimizeRequest {
    /// The solver settings this request carries as top-level fields.
    pub fn settings(&self) -> SolverSettings<'_> {
        SolverSettings {
            timeout_seconds: self.timeout_seconds,
            num_workers: self.num_workers,
            solver: self.solver.as_deref(),
        }
    }

    /// Range checks on every field (expressions excepted).
    pub fn validate(&self) -> Result<(), ToolError> {
        self.settings().validate()?;
        if self.variables.is_empty() {
            return Err(ToolError::invalid(
                "variables must not be empty: name the decision variables and their bounds",
            ));
        }
        for (name, variable) in &self.variables {
            check_name(name)?;
            scaled_domain(name, variable.mult_factor, variable.min, variable.max)?;
        }
        for (index, equation) in self.hard_constraints.iter().enumerate() {
            check_equation(&format!("hard_constraints[{index}]"), equation)?;
        }
        for (index, equation) in self.soft_constraints.iter().enumerate() {
            check_equation(&format!("soft_constraints[{index}]"), equation)?;
        }
        Ok(())
    }
}

impl EvaluateRequest {
    /// Checks each tolerance (finite, at least 0, whole with `mult_factors`),
    /// each `mult_factor` and each value; a [`ToolError`] naming the field.
    pub fn validate(&self) -> Result<(), ToolError> {
        for (index, equation) in self.equations.iter().enumerate() {
            if !equation.tolerance.is_finite() || equation.tolerance < 0.0 {
                return Err(ToolError::invalid(format!(
                    "equations[{index}].tolerance must be a number of at least 0, got {}",
                    equation.tolerance
                )));
            }
            if self.mult_factors.is_some()
                && (equation.tolerance.fract() != 0.0 || equation.tolerance > INT_LIMIT as f64)
            {
                return Err(ToolError::invalid(format!(
                    "equations[{index}].tolerance is {}; with mult_factors it counts units of 1/mult_factor as in correct_values, so give a whole number from 0 to {INT_LIMIT} (or omit mult_factors for a tolerance in real units)",
                    equation.tolerance
                )));
            }
        }
        for (name, mult) in self.mult_factors.iter().flatten() {
            if !(1..=MAX_MULT_FACTOR).contains(mult) {
                return Err(ToolError::invalid(format!(
                    "mult_factors.{name} must be from 1 to {MAX_MULT_FACTOR}, got {mult}"
                )));
            }
        }
        for (name, value) in &self.values {
            if !value.is_finite() {
                return Err(ToolError::invalid(format!(
                    "values.{name} must be a finite number"
                )));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_scale_without_float_noise() {
        let d = scaled_domain("x", 10, Some(0.1), Some(0.3)).unwrap();
        assert_eq!((d.low, d.high), (1, 3));
        let d = scaled_domain("x", 100, Some(0.005), None).unwrap();
        assert_eq!((d.low, d.high), (1, INT_LIMIT));
        assert!(scaled_domain("x", 100, Some(5.0), Some(4.0)).is_err());
        assert!(scaled_domain("x", 0, None, None).is_err());
        assert!(scaled_domain("x", 100, None, Some(1e9)).is_err());
    }

    #[test]
    fn settings_use_the_shared_budget_and_parallel_checks() {
        let settings = |timeout_seconds: f64, num_workers: Option<i64>| SolverSettings {
            timeout_seconds,
            num_workers,
            solver: None,
        };
        assert_eq!(settings(0.0001, None).validate().unwrap().as_millis(), 1);
        assert_eq!(settings(2.5, Some(1)).validate().unwrap().as_millis(), 2500);
        assert_eq!(
            settings(MAX_TIMEOUT_SECONDS, Some(MAX_PARALLEL))
                .validate()
                .unwrap()
                .as_i64(),
            MAX_TIMEOUT_MS
        );
        for bad in [
            0.0,
            -1.0,
            MAX_TIMEOUT_SECONDS + 0.001,
            f64::INFINITY,
            f64::NAN,
        ] {
            let error = settings(bad, None).validate().unwrap_err();
            assert!(
                error.0.message.contains("timeout_seconds must be above 0"),
                "{bad}"
            );
        }
        for bad in [0, -3, MAX_PARALLEL + 1] {
            let error = settings(1.0, Some(bad)).validate().unwrap_err();
            assert!(
                error.0.message.contains("num_workers must be from 1"),
                "{bad}"
            );
        }
    }

    #[test]
    fn obs_may_be_left_out_only_for_a_free_unpulled_variable() {
        let request = |x: serde_json::Value| -> CorrectRequest {
            serde_json::from_value(serde_json::json!({
                "variables": {"x": x, "y": {"obs": 2, "fixed": true}},
                "equations": [{"lhs": "x", "rhs": "y"}]
            }))
            .unwrap()
        };
        assert!(request(serde_json::json!({"max": 10})).validate().is_ok());
        assert!(
            request(serde_json::json!({"confidence": 0}))
                .validate()
                .is_ok()
        );
        let error = request(serde_json::json!({"fixed": true}))
            .validate()
            .unwrap_err();
        assert!(
            error
                .0
                .message
                .starts_with("variables.x is fixed but has no obs"),
            "{}",
            error.0.message
        );
        let error = request(serde_json::json!({"confidence": 0.2}))
            .validate()
            .unwrap_err();
        assert!(
            error
                .0
                .message
                .starts_with("variables.x has confidence 0.2 but no obs"),
            "{}",
            error.0.message
        );
    }

    #[test]
    fn names_must_be_parser_names() {
        assert!(check_name("gross_amount").is_ok());
        assert!(check_name("_x1").is_ok());
        for bad in ["", "1x", "a-b", "prix€", "a b"] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }
}
