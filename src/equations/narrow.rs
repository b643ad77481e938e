//! What an answer's penalty proves about every better answer: where its
//! values must lie.
//!
//! A correction model bounds every intermediate value to ±`INT_LIMIT`, so
//! with wide domains a product "can leave the range" and the model alone
//! cannot claim OPTIMAL ([`super::model::Built::cuts`]). But once the
//! solver proves an answer of penalty `P` best among those it considered,
//! any better answer has a penalty below `P`: each observed value with pull
//! `w` lies within `P / w` scaled units of its observation, and each
//! equation of weight `k` misses by at most `(tolerance + P / k)` of its
//! units, which bounds a value the equation defines (`x == expr`) by the
//! interval of `expr`. If the model built over those narrowed domains has
//! no cut, every better answer was inside the range the solver searched,
//! and there is none: the answer is optimal.
//!
//! Everything here over-approximates: intervals are widened outward by a
//! unit and a relative margin, so floating point can only make the
//! narrowing weaker, never unsound.

use std::collections::BTreeMap;

use super::model::{Narrowed, pull};
use super::parse::{self, Expr, Op};
use super::request::{CorrectRequest, INT_LIMIT, Relation, scale_value, scaled_domain};

/// A real interval; `lo <= hi`.
type Real = (f64, f64);

/// The scaled domains every answer with penalty at most `penalty` keeps
/// its free values in (a superset: the model built over them decides).
pub fn by_penalty(request: &CorrectRequest, penalty: i64) -> Narrowed {
    let penalty = penalty.max(0);
    let mut domains: BTreeMap<&str, (i64, i64, i64)> = BTreeMap::new();
    for (name, variable) in &request.variables {
        let Ok(scaled) = scaled_domain(name, variable.mult_factor, variable.min, variable.max)
        else {
            continue;
        };
        let obs = variable
            .obs
            .and_then(|obs| scale_value(name, "obs", obs, variable.mult_factor).ok());
        let (mut low, mut high) = (scaled.low, scaled.high);
        match (variable.fixed, obs) {
            (true, Some(obs)) => (low, high) = (obs, obs),
            (false, Some(obs)) if pull(variable.confidence) > 0 => {
                let radius = penalty / pull(variable.confidence);
                low = low.max(obs.saturating_sub(radius));
                high = high.min(obs.saturating_add(radius));
            }
            _ => {}
        }
        domains.insert(name, (scaled.mult, low, high.max(low)));
    }
    // Values the equations define, until nothing narrows further.
    let definitions: Vec<(String, Expr, f64)> = request
        .equations
        .iter()
        .filter(|equation| equation.relation == Relation::Equal && equation.weight > 0)
        .filter_map(|equation| {
            let (lhs, rhs) = (
                parse::parse(&equation.lhs).ok()?,
                parse::parse(&equation.rhs).ok()?,
            );
            let m = lhs
                .names()
                .into_iter()
                .chain(rhs.names())
                .filter_map(|name| domains.get(name).map(|(mult, _, _)| *mult))
                .max()
                .unwrap_or(1);
            // Real units the two sides may differ by in a better answer,
            // with a unit to spare.
            let slack =
                (equation.tolerance as f64 + (penalty / equation.weight) as f64 + 1.0) / m as f64;
            Some(
                [(lhs.clone(), rhs.clone()), (rhs, lhs)]
                    .into_iter()
                    .filter_map(move |(side, other)| match side {
                        Expr::Name(name)
                            if !other.names().contains(name.as_str())
                                && !divides_by_a_variable(&other) =>
                        {
                            Some((name, other, slack))
                        }
                        _ => None,
                    }),
            )
        })
        .flatten()
        .collect();
    for _ in 0..=domains.len() {
        let mut narrowed_any = false;
        for (name, other, slack) in &definitions {
            let real = |name: &str| {
                domains
                    .get(name)
                    .map(|&(mult, low, high)| (low as f64 / mult as f64, high as f64 / mult as f64))
            };
            let Some((lo, hi)) = interval(other, &real) else {
                continue;
            };
            let Some(entry) = domains.get_mut(name.as_str()) else {
                continue;
            };
            let (mult, low, high) = *entry;
            let margin = 1e-9 * lo.abs().max(hi.abs()) + slack;
            let (from, to) = (
                scaled_floor((lo - margin) * mult as f64) - 1,
                scaled_ceil((hi + margin) * mult as f64) + 1,
            );
            let (new_low, new_high) = (low.max(from), high.min(to));
            if (new_low, new_high) != (low, high) && new_low <= new_high {
                *entry = (mult, new_low, new_high);
                narrowed_any = true;
            }
        }
        if !narrowed_any {
            break;
        }
    }
    domains
        .into_iter()
        .filter(|(name, _)| request.variables.get(*name).is_some_and(|v| !v.fixed))
        .map(|(name, (_, low, high))| (name.to_owned(), (low, high)))
        .collect()
}

/// Whether `expr` divides by something holding a variable (the compiled
/// residual is then multiplied through, so the slack above does not hold).
fn divides_by_a_variable(expr: &Expr) -> bool {
    match expr {
        Expr::Number(_) | Expr::Name(_) => false,
        Expr::Power { base, .. } => divides_by_a_variable(base),
        Expr::Binary { op, left, right } => {
            (matches!(op, Op::Div | Op::Mod) && !right.names().is_empty())
                || divides_by_a_variable(left)
                || divides_by_a_variable(right)
        }
    }
}

/// The real interval `expr` takes over the variables' intervals; `None`
/// when it cannot be bounded (a remainder, a divisor that may be 0).
fn interval(expr: &Expr, real: &dyn Fn(&str) -> Option<Real>) -> Option<Real> {
    let result = match expr {
        Expr::Number(decimal) => {
            let value = decimal.to_f64();
            (value, value)
        }
        Expr::Name(name) => real(name)?,
        Expr::Power { base, exponent } => {
            let base = interval(base, real)?;
            let mut result = base;
            for _ in 1..*exponent {
                result = times(result, base);
            }
            result
        }
        Expr::Binary { op, left, right } => {
            let (a, b) = (interval(left, real)?, interval(right, real)?);
            match op {
                Op::Add => (a.0 + b.0, a.1 + b.1),
                Op::Sub => (a.0 - b.1, a.1 - b.0),
                Op::Mul => times(a, b),
                Op::Div if b.0 > 0.0 || b.1 < 0.0 => times(a, (1.0 / b.1, 1.0 / b.0)),
                Op::Div | Op::Mod => return None,
            }
        }
    };
    (result.0.is_finite() && result.1.is_finite()).then_some(result)
}

fn times(a: Real, b: Real) -> Real {
    let corners = [a.0 * b.0, a.0 * b.1, a.1 * b.0, a.1 * b.1];
    (
        corners.iter().copied().fold(f64::INFINITY, f64::min),
        corners.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    )
}

/// A scaled bound from a real product, kept inside what an `i64` domain
/// can say (anything beyond the range narrows nothing).
fn scaled_floor(value: f64) -> i64 {
    value
        .floor()
        .clamp(-4.0 * INT_LIMIT as f64, 4.0 * INT_LIMIT as f64) as i64
}

fn scaled_ceil(value: f64) -> i64 {
    value
        .ceil()
        .clamp(-4.0 * INT_LIMIT as f64, 4.0 * INT_LIMIT as f64) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(value: serde_json::Value) -> CorrectRequest {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn a_penalty_keeps_each_observation_within_its_reach() {
        let request = request(serde_json::json!({
            "variables": {
                "net": {"obs": 100, "confidence": 0.8, "mult_factor": 100},
                "total": {"obs": 191, "confidence": 0.5, "mult_factor": 100},
                "fixed": {"obs": 3, "fixed": true},
                "loose": {"obs": 7, "confidence": 0}
            },
            "equations": []
        }));
        let narrowed = by_penalty(&request, 4000);
        // 4000 / 80 = 50 cents either side; 4000 / 50 = 80.
        assert_eq!(narrowed["net"], (9950, 10050));
        assert_eq!(narrowed["total"], (19020, 19180));
        // A value without a pull, and a pinned one, are not narrowed here.
        assert_eq!(narrowed["loose"], (0, INT_LIMIT));
        assert!(!narrowed.contains_key("fixed"));
    }

    #[test]
    fn an_equation_bounds_the_value_it_defines() {
        let request = request(serde_json::json!({
            "variables": {
                "net": {"obs": 100, "confidence": 1, "mult_factor": 100},
                "vat": {"mult_factor": 100},
                "free": {"mult_factor": 100}
            },
            "equations": [
                {"lhs": "vat", "rhs": "net * 19 / 100"},
                {"lhs": "free", "rhs": "net", "weight": 0}
            ]
        }));
        let narrowed = by_penalty(&request, 1000);
        // net within 10 cents of 100.00; vat = 19% of that, give or take
        // the equation's 1000 / 1000 = 1 cent and a cent to spare.
        assert_eq!(narrowed["net"], (9990, 10010));
        let (low, high) = narrowed["vat"];
        assert!(
            (1893..=1897).contains(&low) && (1903..=1907).contains(&high),
            "{low}..{high}"
        );
        // Weight 0 proves nothing.
        assert_eq!(narrowed["free"], (0, INT_LIMIT));
    }

    #[test]
    fn what_cannot_be_bounded_is_left_alone() {
        let request = request(serde_json::json!({
            "variables": {
                "a": {"obs": 5, "confidence": 1},
                "b": {"mult_factor": 1},
                "c": {"mult_factor": 1},
                "d": {"mult_factor": 1}
            },
            "equations": [
                {"lhs": "b", "rhs": "10 / a"},
                {"lhs": "c", "rhs": "a % 3"},
                {"lhs": "d", "rhs": "d + a"}
            ]
        }));
        let narrowed = by_penalty(&request, 100);
        for name in ["b", "c", "d"] {
            assert_eq!(narrowed[name], (0, INT_LIMIT), "{name}");
        }
    }
}
