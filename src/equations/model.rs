//! The two MiniZinc models the equation tools generate: value correction
//! (`correct_values`) and expression optimisation (`optimize_expression`).
//!
//! **How confidence and weight trade off** (`correct_values`). The model
//! minimises, in scaled integers,
//!
//! ```text
//!   Σ over equations   weight × max(0, |residual| − tolerance)      (== ; <= and >= count only
//!                                                                   the side that breaks them)
//! + Σ over free vars   round(100 × confidence) × |x × mult − obs × mult|
//! ```
//!
//! where an equation's violation and tolerance count units of 1 / the
//! largest mult_factor among its variables: the residual (steps of 1 / S,
//! see [`super::compile`]) is compared with the tolerance converted to
//! steps (rounded down), and its excess is rounded up to whole units.
//! So moving a variable by one scaled unit (one cent at `mult_factor`
//! 100) costs `round(100 × confidence)`, at most 100, and leaving an
//! equation off by one unit (one cent when its finest value is in cents)
//! costs its `weight`
//! (default 1000). With the defaults an equation always outweighs one
//! fully trusted observation, unit for unit; when the equations cannot all
//! hold, the values with the lowest confidence move first. A variable with
//! confidence 0 is not pulled at all: it takes whatever value the equations
//! prefer (any one of them when several are equally good).
//!
//! `optimize_expression` maximises (minimises) the objective counted in
//! steps of its own scale, minus (plus) `weight × violation` of each soft
//! constraint; hard constraints hold within their tolerance.
//!
//! The optimisation's search first branches on each soft equation's
//! excess, trying 0 first (the equation holds exactly, which propagates
//! through it), then on the decision variables, by halving domains
//! (`indomain_split`), which reaches a value among billions in a few dozen
//! steps. The correction's two orders are described at
//! `correction_search`.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::compile::{
    CompileError, Cut, Interval, ModelText, ModelVar, Residual, Term, comment, gcd, ident,
};
use super::evaluate::{self, parse_sides};
use super::parse::{self, Expr};
use super::request::{
    CorrectRequest, Direction, Equation, INT_LIMIT, OptimizeRequest, Relation, Scaled, scale_value,
    scaled_domain,
};

/// A generated model and what is needed to read its solution.
#[derive(Debug)]
pub struct Built {
    /// The MiniZinc model with its objective.
    pub text: String,
    /// The same model with another search, raced against `text` (the
    /// correction's two orders, see `correction_search`).
    pub alternative: Option<String>,
    /// The variables to read back, by user name.
    pub outputs: BTreeMap<String, ModelVar>,
    /// Expressions whose ±[`INT_LIMIT`] bound can cut answers the model
    /// should allow: neither OPTIMAL nor INFEASIBLE is proven then.
    pub cuts: Vec<String>,
    /// Expressions whose bound can only cut worse answers: INFEASIBLE is
    /// not proven then, unless `feasibility` has no answer either.
    pub worse_cuts: Vec<String>,
    /// The model without its objective (`solve satisfy`).
    pub feasibility: String,
    /// How each equation's tolerance and weight were applied.
    pub units: Vec<EquationUnits>,
    /// One per soft equation: how to read, from an answer, whether it
    /// still misses and by how much.
    pub checks: Vec<Check>,
    /// The fixed variables at the value the model pins them to, in real
    /// units (the observation rounded to its mult_factor).
    pub pinned: BTreeMap<String, f64>,
}

/// A soft equation as an answer is checked against it: its residual is an
/// output of the model, and its excess is computed from that exactly as the
/// model computes it, so an equation is listed as violated exactly when it
/// adds to the penalty (or would, with a weight above 0).
#[derive(Debug, Clone)]
pub struct Check {
    /// `equations[0]`, `soft_constraints[1]`, …
    pub place: String,
    /// `lhs relation rhs`, on one line.
    pub equation: String,
    /// Both sides, parsed.
    pub sides: (Expr, Expr),
    /// The model's output holding the residual, in steps of 1 / `scale`.
    pub ident: String,
    relation: Relation,
    /// The tolerance in residual steps.
    tolerance: i64,
    weight: i64,
    per: i64,
    worth: i64,
    /// Residual steps per real unit.
    scale: i64,
    /// The equation's unit is 1 / `m`.
    m: i64,
}

/// A soft equation the answer still misses by more than its tolerance.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Violation {
    /// `equations[0]`, `soft_constraints[1]`, …
    pub place: String,
    /// The equation as given: `lhs relation rhs`.
    pub equation: String,
    /// The left side computed from the answer, in real units (`null` when it
    /// cannot be computed in floating point).
    pub lhs_value: Option<f64>,
    /// The right side, likewise.
    pub rhs_value: Option<f64>,
    /// Left minus right as the model counts it, in the equation's unit (see
    /// `equation_units`: 1 / the largest mult_factor among its variables;
    /// for an equation that divides by variables, multiplied through by
    /// those divisors).
    pub residual: f64,
    /// How far beyond the tolerance, in the same unit.
    pub excess: f64,
    /// This equation's share of the penalty: weight × the excess rounded up
    /// to whole units.
    pub penalty: i64,
}

impl Check {
    /// The violation, if the residual `steps` misses by more than the
    /// tolerance; `values` gives each variable in real units.
    pub fn violation(&self, steps: i64, values: &dyn Fn(&str) -> Option<f64>) -> Option<Violation> {
        let (r, tolerance) = (i128::from(steps), i128::from(self.tolerance));
        // The model's excess, term for term.
        let excess = match self.relation {
            Relation::Equal => (r.abs() - tolerance).max(0),
            Relation::AtMost => (r - tolerance).max(0),
            Relation::AtLeast => (-r - tolerance).max(0),
        };
        if excess == 0 {
            return None;
        }
        let per = i128::from(self.per);
        let counted = excess / per + i128::from(excess % per > 0);
        let penalty = i128::from(self.weight) * i128::from(self.worth) * counted;
        let in_units = |steps: i128| steps as f64 * self.m as f64 / self.scale as f64;
        Some(Violation {
            place: self.place.clone(),
            equation: self.equation.clone(),
            lhs_value: evaluate::value(&self.sides.0, values).ok(),
            rhs_value: evaluate::value(&self.sides.1, values).ok(),
            residual: in_units(r),
            excess: in_units(excess),
            penalty: penalty.clamp(0, i128::from(i64::MAX)) as i64,
        })
    }
}

/// How one equation's tolerance and weight were applied, in real units.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct EquationUnits {
    /// `equations[0]`, `hard_constraints[1]`, …
    pub place: String,
    /// The unit tolerance and weight count: 1 / the largest mult_factor
    /// among the equation's variables.
    pub unit: f64,
    /// The compiled residual counts steps of 1 / residual_scale.
    pub residual_scale: i64,
    /// The slack allowed, in real units: tolerance × unit, rounded down to
    /// a whole residual step.
    pub tolerance: f64,
    /// A side divides by an expression with variables: tolerance and
    /// weight then apply to the equation multiplied through by those
    /// divisors (each at its scaled value), not to the plain difference.
    pub divides_by_variables: bool,
}

/// An equation's tolerance in residual steps, and how a violation in
/// residual steps becomes one in the documented unit 1/m: it is rounded up
/// to whole multiples of `per` steps, each worth `worth` units (exact when
/// the residual's scale S is a multiple or a divisor of m).
struct Conversion {
    m: i64,
    tolerance: i64,
    per: i64,
    worth: i64,
    units: EquationUnits,
}

fn conversion(
    place: String,
    equation: &Equation,
    sides: &(Expr, Expr),
    residual: &Residual,
    lookup: &dyn Fn(&str) -> Option<ModelVar>,
) -> Conversion {
    let m = sides
        .0
        .names()
        .into_iter()
        .chain(sides.1.names())
        .filter_map(|name| lookup(name).map(|var| var.mult))
        .max()
        .unwrap_or(1);
    let scale = residual.scale;
    let steps = i128::from(equation.tolerance) * i128::from(scale) / i128::from(m);
    let tolerance = steps.min(i128::from(INT_LIMIT)) as i64;
    let g = gcd(scale, m);
    Conversion {
        m,
        tolerance,
        per: scale / g,
        worth: m / g,
        units: EquationUnits {
            place,
            unit: 1.0 / m as f64,
            residual_scale: scale,
            tolerance: tolerance as f64 / scale as f64,
            divides_by_variables: residual.divided,
        },
    }
}

/// Every problem that makes the equations unusable, one line each
/// (`equations[1] rhs column 1, at '-': …`).
pub type Invalid = Vec<String>;

/// How much one scaled unit of distance from an observation costs.
pub fn pull(confidence: f64) -> i64 {
    (confidence * 100.0).round() as i64
}

fn parse_all(path: &str, equations: &[Equation], invalid: &mut Invalid) -> Vec<(Expr, Expr)> {
    let mut parsed = Vec::new();
    for (index, equation) in equations.iter().enumerate() {
        match parse_sides(&equation.lhs, &equation.rhs) {
            Ok(sides) => parsed.push(sides),
            Err(errors) => invalid.extend(
                errors
                    .lines()
                    .into_iter()
                    .map(|line| format!("{path}[{index}] {line}")),
            ),
        }
    }
    parsed
}

/// One soft equation's penalty: the variable holding its excess over the
/// tolerance, the weighted term, and the largest value the term can take.
struct Penalty {
    excess: String,
    term: String,
    max: i128,
}

/// A soft equation's weight, counted in the residual's finer units, does
/// not fit MiniZinc's integers.
#[derive(Debug, thiserror::Error)]
#[error(
    "weight {weight} counts units of {unit}, which the residual resolves {worth} times more finely; weight × {worth} is beyond ±{INT_LIMIT}: lower the weight"
)]
struct WeightTooLarge {
    weight: i64,
    unit: f64,
    worth: i64,
}

/// Declares the soft penalty of one equation; `None` when its weight is 0.
/// `cut` says what the excess variable's upper bound can exclude.
fn penalty(
    text: &mut ModelText,
    equation: &Equation,
    residual: &Residual,
    conversion: &Conversion,
    cut: Cut,
) -> Result<Option<Penalty>, WeightTooLarge> {
    if equation.weight == 0 {
        return Ok(None);
    }
    let r = &residual.term;
    let tolerance = conversion.tolerance;
    let (lo, hi) = residual.bounds;
    let (excess, largest) = match equation.relation {
        Relation::Equal => (
            format!("max(0, abs({r}) - {tolerance})"),
            lo.abs().max(hi.abs()),
        ),
        Relation::AtMost => (format!("max(0, {r} - {tolerance})"), hi),
        Relation::AtLeast => (format!("max(0, (-{r}) - {tolerance})"), -lo),
    };
    let values: Interval = (0, (largest - i128::from(tolerance)).max(0));
    let name = text.define(0, &excess, values, cut);
    text.objective_only_last();
    let mut counted = name.clone();
    if conversion.per > 1 {
        // Whole units of 1/m started, without overflowing e + per - 1.
        let per = conversion.per;
        let kept = text.interval(&Term::Id(name.clone()));
        let values = (0, (kept.1 + i128::from(per) - 1) / i128::from(per));
        counted = text.define(
            0,
            &format!("{name} div {per} + bool2int({name} mod {per} > 0)"),
            values,
            cut,
        );
        text.objective_only_last();
    }
    let coefficient = i128::from(equation.weight) * i128::from(conversion.worth);
    if coefficient > i128::from(INT_LIMIT) {
        return Err(WeightTooLarge {
            weight: equation.weight,
            unit: conversion.units.unit,
            worth: conversion.worth,
        });
    }
    let kept = text.interval(&Term::Id(counted.clone()));
    Ok(Some(Penalty {
        term: format!("{coefficient} * {counted}"),
        max: kept.1 * coefficient,
        excess: name,
    }))
}

/// Adds one equation's compilation, or its error, with its comment.
/// The penalties of soft equations: their terms, the excess variables the
/// search tries at 0 first, and the largest total they can reach.
struct SoftPenalties {
    terms: Vec<String>,
    excesses: Vec<String>,
    largest: i128,
    checks: Vec<Check>,
}

/// Compiles each soft equation of `path` and declares its penalty; each
/// equation's units go to `units`, each problem to `invalid`.
fn soft_penalties<'a>(
    text: &mut ModelText,
    path: &str,
    equations: impl Iterator<Item = (&'a Equation, &'a (Expr, Expr))>,
    lookup: &dyn Fn(&str) -> Option<ModelVar>,
    cut: Cut,
    invalid: &mut Invalid,
    units: &mut Vec<EquationUnits>,
) -> SoftPenalties {
    let mut soft = SoftPenalties {
        terms: Vec::new(),
        excesses: Vec::new(),
        largest: 0,
        checks: Vec::new(),
    };
    for (index, (equation, sides)) in equations.enumerate() {
        let Some(residual) = compile_equation(text, path, index, equation, sides, lookup, invalid)
        else {
            continue;
        };
        let place = format!("{path}[{index}]");
        let conversion = conversion(place.clone(), equation, sides, &residual, lookup);
        match penalty(text, equation, &residual, &conversion, cut) {
            Ok(Some(penalty)) => {
                soft.excesses.push(penalty.excess);
                soft.terms.push(penalty.term);
                soft.largest += penalty.max;
            }
            Ok(None) => {}
            Err(message) => invalid.push(format!("{place}: {message}")),
        }
        // The residual as an output, to say afterwards what still misses.
        let output = format!("r_{path}_{index}");
        // Declared without a right-hand side, so MiniZinc prints it.
        text.objective_line(format!(
            "var -{INT_LIMIT}..{INT_LIMIT}: {output}; constraint {output} = {};  % {place}'s residual, read back",
            residual.term
        ));
        soft.checks.push(Check {
            place,
            equation: format!(
                "{} {} {}",
                comment(&equation.lhs),
                equation.relation.symbol(),
                comment(&equation.rhs)
            ),
            sides: sides.clone(),
            ident: output,
            relation: equation.relation,
            tolerance: conversion.tolerance,
            weight: equation.weight,
            per: conversion.per,
            worth: conversion.worth,
            scale: residual.scale,
            m: conversion.m,
        });
        units.push(conversion.units);
    }
    soft
}

fn compile_equation(
    text: &mut ModelText,
    path: &str,
    index: usize,
    equation: &Equation,
    sides: &(Expr, Expr),
    lookup: &dyn Fn(&str) -> Option<ModelVar>,
    invalid: &mut Invalid,
) -> Option<Residual> {
    text.context = format!(
        "{path}[{index}] ({} {} {})",
        comment(&equation.lhs),
        equation.relation.symbol(),
        comment(&equation.rhs)
    );
    text.line(format!(
        "% {path}[{index}]: {} {} {} (weight {}, tolerance {})",
        comment(&equation.lhs),
        equation.relation.symbol(),
        comment(&equation.rhs),
        equation.weight,
        equation.tolerance
    ));
    match text.relation(&sides.0, equation.relation, &sides.1, lookup) {
        Ok(residual) => Some(residual),
        Err(CompileError(message)) => {
            invalid.push(format!("{path}[{index}]: {message}"));
            None
        }
    }
}

/// The search: first the soft excesses, each tried at 0 first (the
/// equation holds, which propagates through it), then the decision
/// variables; both by halving domains.
fn search(excesses: &[String], vars: &[String]) -> String {
    let phases: Vec<String> = [excesses, vars]
        .into_iter()
        .filter(|group| !group.is_empty())
        .map(|group| {
            format!(
                "int_search([{}], input_order, indomain_split, complete)",
                group.join(", ")
            )
        })
        .collect();
    if phases.is_empty() {
        String::new()
    } else {
        format!(":: seq_search([{}]) ", phases.join(", "))
    }
}

/// The order a correction model searches in (see [`correction_search`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Order {
    /// The deviation from an observation with the smallest lower bound
    /// first, its domain halved (lower half first); then each equation's
    /// excess.
    Nearest,
    /// Each equation's excess first, 0 first (it holds, if it can); then
    /// each deviation smallest first, the most constrained first.
    HoldingFirst,
}

/// The correction's search starts from the observations. With
/// [`Order::Nearest`] it halves the deviation from an observation whose
/// lower bound is smallest, keeping the lower half first (each value
/// stays near its reading), then each equation's excess, 0 first, then
/// the values themselves, by halving: once an answer bounds the penalty,
/// that bound prunes whole halves of a domain at once, so the proof takes
/// a few hundred nodes. With [`Order::HoldingFirst`], each equation's
/// excess comes first (each equation holds, if it can), then each
/// deviation smallest first: its first answer moves only what the
/// equations force, a good bound quickly. Neither order proves every case
/// fastest, so the correction races the two (measured with Gecode on the
/// corpus in `tests/corpus/corrections.json`: a misread total, 0.05 s
/// against a timeout; a misread seed total, 0.0002 s against 0.1 s; on
/// invoices of twenty fields and more neither proves alone, and the
/// second solve of [`correction_below`] proves the first answer of
/// holding first in 0.05 s). Trying each deviation smallest first, value
/// by value, took 2.3 s on a dropped VAT digit and ran out of 20 s on the
/// twenty-field invoice; halving the values alone ran out of time on both
/// invoices of issue 44.
fn correction_search(
    deviations: &[String],
    excesses: &[String],
    vars: &[String],
    order: Order,
) -> String {
    let holding = (excesses, "input_order", "indomain_min");
    let phases = match order {
        Order::Nearest => [(deviations, "smallest", "indomain_split"), holding],
        Order::HoldingFirst => [holding, (deviations, "first_fail", "indomain_min")],
    };
    let phases: Vec<String> = phases
        .into_iter()
        .chain([(vars, "input_order", "indomain_split")])
        .filter(|(group, _, _)| !group.is_empty())
        .map(|(group, variables, values)| {
            format!(
                "int_search([{}], {variables}, {values}, complete)",
                group.join(", ")
            )
        })
        .collect();
    if phases.is_empty() {
        String::new()
    } else {
        format!(":: seq_search([{}]) ", phases.join(", "))
    }
}

/// The value-correction model.
pub fn correction(request: &CorrectRequest) -> Result<Built, Invalid> {
    correction_within(request, &BTreeMap::new())
}

/// Scaled domains that replace (narrow) the request's, by variable name.
pub type Narrowed = BTreeMap<String, (i64, i64)>;

/// The value-correction model, each variable of `narrowed` kept within its
/// scaled interval there (intersected with its own domain).
pub fn correction_within(request: &CorrectRequest, narrowed: &Narrowed) -> Result<Built, Invalid> {
    correction_model(request, narrowed, None)
}

/// The value-correction model over `narrowed` (see [`correction_within`])
/// with its total penalty at most `penalty`: the second solve of a
/// correction, after a first answer of that penalty. Every answer
/// of penalty `penalty` or less lies in `narrowed` when it comes from
/// [`super::narrow::by_penalty`], so with no cuts an OPTIMAL here is
/// optimal for the whole request.
pub fn correction_below(
    request: &CorrectRequest,
    narrowed: &Narrowed,
    penalty: i64,
) -> Result<Built, Invalid> {
    correction_model(request, narrowed, Some(penalty))
}

fn correction_model(
    request: &CorrectRequest,
    narrowed: &Narrowed,
    at_most: Option<i64>,
) -> Result<Built, Invalid> {
    let mut invalid = Invalid::new();
    let parsed = parse_all("equations", &request.equations, &mut invalid);
    if !invalid.is_empty() {
        return Err(invalid);
    }
    let mut text = ModelText::default();
    text.line("% generated by solvergate correct_values: every value is scaled by its mult_factor");
    let mut vars = BTreeMap::new();
    let mut outputs = BTreeMap::new();
    let mut pulls = Vec::new();
    let mut largest_total: i128 = 0;
    let mut free = Vec::new();
    let mut deviations = Vec::new();
    let mut pinned = BTreeMap::new();
    for (name, variable) in &request.variables {
        let domain = scaled_domain(name, variable.mult_factor, variable.min, variable.max);
        let obs = variable
            .obs
            .map(|obs| scale_value(name, "obs", obs, variable.mult_factor))
            .transpose();
        let (Ok(Scaled { mult, low, high }), Ok(obs)) = (domain, obs) else {
            // The request was validated; keep going defensively.
            invalid.push(format!("variables.{name}: out of range"));
            continue;
        };
        let (low, high) = match (variable.fixed, obs) {
            (true, Some(obs)) => (obs, obs),
            (true, None) => {
                // Refused by validation already.
                invalid.push(format!("variables.{name}: fixed without obs"));
                continue;
            }
            (false, _) => match narrowed.get(name) {
                Some(&(from, to)) => (low.max(from), high.min(to).max(low.max(from))),
                None => (low, high),
            },
        };
        let var = ModelVar {
            ident: ident(name),
            mult,
            low,
            high,
        };
        if variable.fixed {
            pinned.insert(name.clone(), low as f64 / mult as f64);
            text.line(format!(
                "int: {} = {low};  % fixed: {name} = {}",
                var.ident,
                variable.obs.unwrap_or_default()
            ));
        } else {
            match variable.obs.zip(obs) {
                Some((obs_real, obs)) => {
                    text.line(format!(
                        "var {low}..{high}: {};  % {name}, observed {obs_real} (confidence {})",
                        var.ident, variable.confidence
                    ));
                    let weight = pull(variable.confidence);
                    if weight > 0 {
                        let distance = (i128::from(obs) - i128::from(low))
                            .abs()
                            .max((i128::from(high) - i128::from(obs)).abs());
                        // A deviation beyond the range costs more than the
                        // total's own bound: only worse answers are cut.
                        let kept = distance.min(i128::from(INT_LIMIT));
                        let deviation = format!("d_{}", var.ident);
                        text.objective_line(format!(
                            "var 0..{kept}: {deviation} = abs({} - {});  % how far {name} moves",
                            var.ident,
                            Term::Lit(obs)
                        ));
                        pulls.push(format!("{weight} * {deviation}"));
                        deviations.push(deviation);
                        largest_total += i128::from(weight) * distance;
                    }
                }
                None => text.line(format!(
                    "var {low}..{high}: {};  % {name}, not observed",
                    var.ident
                )),
            }
            free.push(var.ident.clone());
            outputs.insert(name.clone(), var.clone());
        }
        vars.insert(name.clone(), var);
    }
    let lookup = |name: &str| vars.get(name).cloned();
    let mut units = Vec::new();
    // An excess above its bound makes the total exceed its own bound.
    let soft = soft_penalties(
        &mut text,
        "equations",
        request.equations.iter().zip(&parsed),
        &lookup,
        Cut::WorseOnly,
        &mut invalid,
        &mut units,
    );
    let (mut terms, excesses, checks) = (soft.terms, soft.excesses, soft.checks);
    largest_total += soft.largest;
    if !invalid.is_empty() {
        return Err(invalid);
    }
    text.context = "the total penalty".to_owned();
    text.note_bound(0, (0, largest_total), Cut::WorseOnly);
    terms.extend(pulls);
    if terms.is_empty() {
        terms.push("0".to_owned());
    }
    text.objective_line("% equation penalties, then the pull of each observation");
    text.objective_line(format!(
        "var 0..{INT_LIMIT}: total_penalty = {};",
        terms.join(" + ")
    ));
    if let Some(at_most) = at_most {
        text.objective_line(format!(
            "constraint total_penalty <= {};  % a first answer's penalty",
            at_most.max(0)
        ));
    }
    let solve = |order| {
        format!(
            "solve {}minimize total_penalty;",
            correction_search(&deviations, &excesses, &free, order)
        )
    };
    let (first, second) = (solve(Order::Nearest), solve(Order::HoldingFirst));
    text.objective_line(first.clone());
    let (cuts, worse_cuts) = (text.cuts.clone(), text.worse_cuts.clone());
    let model = text.finish();
    let alternative = (second != first).then(|| model.replacen(&first, &second, 1));
    Ok(Built {
        feasibility: text.feasibility(),
        text: model,
        alternative,
        units,
        outputs,
        cuts,
        worse_cuts,
        checks,
        pinned,
    })
}

/// The optimisation model; also returns the objective's scale.
pub fn optimisation(request: &OptimizeRequest) -> Result<Built, Invalid> {
    let mut invalid = Invalid::new();
    let objective = match parse::parse(&request.objective.expr) {
        Ok(expr) => Some(expr),
        Err(errors) => {
            invalid.extend(
                errors
                    .errors
                    .iter()
                    .map(|error| format!("objective.expr {error}")),
            );
            if errors.unlisted > 0 {
                invalid.push(format!(
                    "objective.expr: {} more problem(s) not listed; fix these and check again",
                    errors.unlisted
                ));
            }
            None
        }
    };
    let hard = parse_all("hard_constraints", &request.hard_constraints, &mut invalid);
    let soft = parse_all("soft_constraints", &request.soft_constraints, &mut invalid);
    let Some(objective) = objective else {
        return Err(invalid);
    };
    if !invalid.is_empty() {
        return Err(invalid);
    }
    let mut text = ModelText::default();
    text.line(
        "% generated by solvergate optimize_expression: every value is scaled by its mult_factor",
    );
    let mut vars = BTreeMap::new();
    for (name, variable) in &request.variables {
        let Ok(Scaled { mult, low, high }) =
            scaled_domain(name, variable.mult_factor, variable.min, variable.max)
        else {
            invalid.push(format!("variables.{name}: out of range"));
            continue;
        };
        let var = ModelVar {
            ident: ident(name),
            mult,
            low,
            high,
        };
        text.line(format!("var {low}..{high}: {};  % {name}", var.ident));
        vars.insert(name.clone(), var);
    }
    let lookup = |name: &str| vars.get(name).cloned();
    let mut units = Vec::new();
    for (index, (equation, sides)) in request.hard_constraints.iter().zip(&hard).enumerate() {
        let residual = compile_equation(
            &mut text,
            "hard_constraints",
            index,
            equation,
            sides,
            &lookup,
            &mut invalid,
        );
        if let Some(residual) = residual {
            let place = format!("hard_constraints[{index}]");
            let conversion = conversion(place, equation, sides, &residual, &lookup);
            let (term, tolerance) = (residual.term, conversion.tolerance);
            units.push(conversion.units);
            text.line(match (equation.relation, tolerance) {
                (Relation::Equal, 0) => format!("constraint {term} = 0;"),
                (Relation::Equal, _) => format!("constraint abs({term}) <= {tolerance};"),
                (Relation::AtMost, _) => format!("constraint {term} <= {tolerance};"),
                (Relation::AtLeast, _) => format!("constraint {term} >= -{tolerance};"),
            });
        }
    }
    let SoftPenalties {
        terms: penalties,
        excesses,
        largest: largest_penalty,
        checks,
    } = soft_penalties(
        &mut text,
        "soft_constraints",
        request.soft_constraints.iter().zip(&soft),
        &lookup,
        Cut::Real,
        &mut invalid,
        &mut units,
    );
    text.context = format!("the objective ({})", comment(&request.objective.expr));
    text.line(format!(
        "% objective: {} {}",
        match request.objective.direction {
            Direction::Maximize => "maximize",
            Direction::Minimize => "minimize",
        },
        comment(&request.objective.expr)
    ));
    let objective = match text.objective(&objective, &lookup) {
        Ok(compiled) => Some(compiled),
        Err(CompileError(message)) => {
            invalid.push(format!("objective.expr: {message}"));
            None
        }
    };
    let Some((objective, scale)) = objective else {
        return Err(invalid);
    };
    if !invalid.is_empty() {
        return Err(invalid);
    }
    let (sign, direction) = match request.objective.direction {
        Direction::Maximize => ("-", "maximize"),
        Direction::Minimize => ("+", "minimize"),
    };
    let mut total = objective.to_string();
    for term in &penalties {
        total.push_str(&format!(" {sign} {term}"));
    }
    // The bound on the worse side only drops answers worse than any kept;
    // on the better side it can drop the optimum.
    text.context = format!("the objective ({})", comment(&request.objective.expr));
    let (lo, hi) = text.interval(&objective);
    let limit = i128::from(INT_LIMIT);
    let (better, worse) = match request.objective.direction {
        Direction::Maximize => (hi > limit, lo - largest_penalty < -limit),
        Direction::Minimize => (lo < -limit, hi + largest_penalty > limit),
    };
    for (beyond, cut) in [(better, Cut::Real), (worse, Cut::WorseOnly)] {
        if beyond {
            text.note_cut(cut);
        }
    }
    text.objective_line(format!(
        "var -{INT_LIMIT}..{INT_LIMIT}: objective = {total};  % in steps of 1/{scale}"
    ));
    let decisions: Vec<String> = vars.values().map(|v| v.ident.clone()).collect();
    text.objective_line(format!(
        "solve {}{direction} objective;",
        search(&excesses, &decisions)
    ));
    let (cuts, worse_cuts) = (text.cuts.clone(), text.worse_cuts.clone());
    Ok(Built {
        feasibility: text.feasibility(),
        text: text.finish(),
        alternative: None,
        units,
        outputs: vars,
        cuts,
        worse_cuts,
        checks,
        pinned: BTreeMap::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confidence_pulls_at_most_as_hard_as_a_tenth_of_a_default_weight() {
        assert_eq!(pull(0.0), 0);
        assert_eq!(pull(0.3), 30);
        assert_eq!(pull(1.0), 100);
        assert!(pull(1.0) * 10 == 1000);
    }

    #[test]
    fn the_seed_model_pins_fixed_values_and_pulls_free_ones() {
        let request: CorrectRequest = serde_json::from_value(serde_json::json!({
            "variables": {
                "gross_amount": {"obs": 500, "confidence": 0.3, "mult_factor": 100, "min": 0, "max": 100000},
                "quantity": {"obs": 10, "fixed": true},
                "rate_per_pc": {"obs": 52, "mult_factor": 100, "fixed": true}
            },
            "equations": [{"lhs": "gross_amount", "rhs": "quantity * rate_per_pc", "relation": "==", "weight": 1000}]
        }))
        .unwrap();
        let built = correction(&request).unwrap();
        assert!(
            built.text.contains("int: v_quantity = 10;"),
            "{}",
            built.text
        );
        assert!(built.text.contains("int: v_rate_per_pc = 5200;"));
        assert!(built.text.contains("var 0..10000000: v_gross_amount;"));
        assert!(
            built
                .text
                .contains("d_v_gross_amount = abs(v_gross_amount - 50000);")
        );
        assert!(built.text.contains("30 * d_v_gross_amount"));
        // Nearest values first; raced with the same model searched
        // equations first.
        let (nearest, held, kept) = (
            "int_search([d_v_gross_amount], smallest, indomain_split, complete)",
            "int_search([t3], input_order, indomain_min, complete)",
            "int_search([d_v_gross_amount], first_fail, indomain_min, complete)",
        );
        assert!(
            built
                .text
                .contains(&format!("seq_search([{nearest}, {held}"))
        );
        let alternative = built.alternative.as_deref().unwrap();
        assert_eq!(
            alternative,
            built
                .text
                .replace(&format!("{nearest}, {held}"), &format!("{held}, {kept}"))
        );
        assert!(!built.text.contains("total_penalty <="));
        assert_eq!(built.outputs.keys().collect::<Vec<_>>(), ["gross_amount"]);
        // Below a first answer's penalty: the same model, bounded, over the
        // narrowed domains.
        let narrowed = Narrowed::from([("gross_amount".to_owned(), (50000, 52000))]);
        let below = correction_below(&request, &narrowed, 60000).unwrap();
        assert!(below.text.contains("var 50000..52000: v_gross_amount;"));
        let bound = "constraint total_penalty <= 60000;";
        assert!(below.text.contains(bound), "{}", below.text);
        assert!(!below.feasibility.contains(bound));
        assert!(below.alternative.as_deref().unwrap().contains(bound));
    }

    #[test]
    fn a_violation_is_counted_as_the_model_counts_its_penalty() {
        // x == y * 0.5 over whole numbers: residual steps are halves, the
        // unit is 1, and a started unit costs a whole weight.
        let request = |tolerance: i64| -> CorrectRequest {
            serde_json::from_value(serde_json::json!({
                "variables": {"x": {"obs": 1, "fixed": true}, "y": {"obs": 3, "fixed": true}},
                "equations": [{"lhs": "x", "rhs": "y * 0.5", "weight": 1000, "tolerance": tolerance}]
            }))
            .unwrap()
        };
        let built = correction(&request(0)).unwrap();
        assert_eq!(built.pinned["y"], 3.0);
        assert_eq!(built.units[0].residual_scale, 2);
        let check = &built.checks[0];
        assert!(
            built
                .text
                .contains(&format!("constraint {} = ", check.ident)),
            "{}",
            built.text
        );
        let values = |name: &str| built.pinned.get(name).copied();
        assert!(check.violation(0, &values).is_none());
        let v = check.violation(-1, &values).unwrap();
        assert_eq!((v.lhs_value, v.rhs_value), (Some(1.0), Some(1.5)));
        assert_eq!((v.residual, v.excess, v.penalty), (-0.5, 0.5, 1000));
        let v = check.violation(3, &values).unwrap();
        assert_eq!((v.excess, v.penalty), (1.5, 2000));
        // A tolerance of one unit is two steps, on either side.
        let built = correction(&request(1)).unwrap();
        let check = &built.checks[0];
        assert!(check.violation(-2, &values).is_none());
        assert!(check.violation(2, &values).is_none());
        let v = check.violation(-3, &values).unwrap();
        assert_eq!((v.residual, v.excess, v.penalty), (-1.5, 0.5, 1000));
    }

    #[test]
    fn every_bad_equation_is_reported_with_its_place() {
        let request: CorrectRequest = serde_json::from_value(serde_json::json!({
            "variables": {"a": {"obs": 1}},
            "equations": [
                {"lhs": "a", "rhs": "-a"},
                {"lhs": "a ** b", "rhs": "(a"},
                {"lhs": "a", "rhs": "zz"}
            ]
        }))
        .unwrap();
        let invalid = correction(&request).unwrap_err();
        assert_eq!(invalid.len(), 3, "{invalid:?}");
        assert!(invalid[0].starts_with("equations[0] rhs column 1, at '-'"));
        assert!(invalid[1].starts_with("equations[1] lhs column 6"));
        assert!(invalid[2].starts_with("equations[1] rhs column 3, at the end"));
        let request: CorrectRequest = serde_json::from_value(serde_json::json!({
            "variables": {"a": {"obs": 1}},
            "equations": [{"lhs": "a", "rhs": "zz"}]
        }))
        .unwrap();
        let invalid = correction(&request).unwrap_err();
        assert_eq!(
            invalid,
            [
                "equations[0]: unknown variable 'zz': add it to variables (with its mult_factor and bounds)"
            ]
        );
    }
}
