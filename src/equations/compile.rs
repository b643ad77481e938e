//! From parsed equations to MiniZinc text over scaled integers.
//!
//! Every variable `x` with `mult_factor` m is the integer `v_x = x × m`.
//! Each expression is compiled to an exact fraction `num / (scale × d1 × …
//! × dk)`: `num` an integer term, `scale` a positive constant (the product
//! or least common multiple of the operands' factors and decimal places),
//! `d1 … dk` divisors that contain variables. A relation `lhs R rhs` is
//! then multiplied through by the common scale and by every divisor — the
//! reference's "divisions move to the other side" — so no integer division
//! ever rounds. The integer residual `left − right` counts steps of
//! 1 / lcm(scale of lhs, scale of rhs) real units; [`super::model`]
//! converts tolerances and weights, given in units of 1 / mult_factor,
//! to those steps.
//!
//! A divisor with variables must be non-zero (`!= 0`, a hard constraint);
//! in an inequality it must be positive (`> 0`), so multiplying through
//! keeps the relation's direction.
//!
//! Every intermediate value is its own MiniZinc variable bounded to
//! ±[`INT_LIMIT`]: Gecode works in 32-bit integers and refuses a model
//! whose products are merely *bounded* beyond that, so we state the bound.
//! A value that would leave the range makes its assignment infeasible, so
//! the bound can cut real solutions. To know when, every term carries the
//! interval it can take (from the variables' scaled domains; a fixed value
//! is a point), computed exactly in `i128`; a declared bound that the
//! interval leaves is recorded in [`ModelText::cuts`] with the equation it
//! belongs to, and the caller must not claim OPTIMAL or INFEASIBLE then.
//! Constants and scales beyond the range are compile errors here.
//!
//! Do not break: the text written into the model comes only from parsed
//! names (prefixed `v_`) and numbers we format — never from raw input.

use std::fmt;

use super::parse::{Decimal, Expr, Op};
use super::request::{INT_LIMIT, Relation};

/// An integer term: a literal or a MiniZinc identifier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Term {
    /// A constant, in scaled integers.
    Lit(i64),
    /// A model identifier: a user's variable (`v_<name>`) or a declared
    /// intermediate (`t<n>`).
    Id(String),
}

impl fmt::Display for Term {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Term::Lit(value) if *value < 0 => write!(f, "({value})"),
            Term::Lit(value) => write!(f, "{value}"),
            Term::Id(id) => f.write_str(id),
        }
    }
}

/// `num / (scale × Π divisors)`.
#[derive(Debug, Clone)]
struct Frac {
    num: Term,
    scale: i64,
    divisors: Vec<Term>,
}

/// A variable as the model knows it.
#[derive(Debug, Clone)]
pub struct ModelVar {
    /// `v_<name>`.
    pub ident: String,
    /// The variable's `mult_factor`: the model's integer is the real value ×
    /// `mult`.
    pub mult: i64,
    /// The scaled domain (`low == high` for a fixed value).
    pub low: i64,
    /// Upper end of the scaled domain.
    pub high: i64,
}

/// The values a term can take, `lo..=hi`, in scaled integers.
pub type Interval = (i128, i128);

/// Why an expression cannot be compiled (beyond parsing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompileError(pub String);

type Compiled<T> = Result<T, CompileError>;

/// A relation compiled to its integer residual.
#[derive(Debug, Clone)]
pub struct Residual {
    /// `left − right`, in steps of 1 / `scale` real units.
    pub term: Term,
    /// How many steps of `term` make one real unit.
    pub scale: i64,
    /// The values `term` can take.
    pub bounds: Interval,
    /// A side divides by a term with variables: the residual is the
    /// relation multiplied through by those divisors' scaled values.
    pub divided: bool,
}

/// Writes the model's declarations one line at a time.
#[derive(Debug, Default)]
pub struct ModelText {
    lines: Vec<String>,
    /// Indexes into `lines` of what only the objective needs (the
    /// penalty excesses, the total, the solve item).
    objective_only: Vec<usize>,
    guards: Vec<String>,
    next: usize,
    /// The interval of every declared term, by identifier.
    bounds: std::collections::HashMap<String, Interval>,
    /// What is being compiled (`equations[0] (a == b * c)`), for [`Self::cuts`].
    pub context: String,
    /// The expressions whose declared ±[`INT_LIMIT`] bound can exclude
    /// assignments the model should allow, one entry each.
    pub cuts: Vec<String>,
    /// Bounds that can only exclude answers worse than any answer inside
    /// them (the minimised total's upper side): optimality stands, but "no
    /// answer" does not.
    pub worse_cuts: Vec<String>,
}

/// Whether a declared bound that cuts can only exclude worse answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// It can exclude answers the model should allow.
    Real,
    /// It can only exclude answers worse than any it keeps.
    WorseOnly,
}

fn corners(a: Interval, b: Interval) -> Interval {
    let products = [a.0 * b.0, a.0 * b.1, a.1 * b.0, a.1 * b.1];
    (
        products.iter().copied().min().unwrap_or(0),
        products.iter().copied().max().unwrap_or(0),
    )
}

fn check(value: i128, what: &str) -> Compiled<i64> {
    if value.abs() > i128::from(INT_LIMIT) {
        return Err(CompileError(format!(
            "{what} reaches {value}, beyond the solver's integer range (±{INT_LIMIT}); use smaller mult_factors or constants"
        )));
    }
    Ok(value as i64)
}

/// The greatest common divisor of `|a|` and `|b|`; 1 when both are 0, so it can
/// always divide.
pub fn gcd(a: i64, b: i64) -> i64 {
    let (mut a, mut b) = (a.abs(), b.abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a.max(1)
}

fn lcm(a: i64, b: i64) -> Compiled<i64> {
    check(
        i128::from(a / gcd(a, b)) * i128::from(b),
        "the common scale of an expression",
    )
}

/// MiniZinc identifier of a user's variable.
pub fn ident(name: &str) -> String {
    format!("v_{name}")
}

/// Text for a comment: one line, whatever the input held.
pub fn comment(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl ModelText {
    /// Appends one line of the model.
    pub fn line(&mut self, line: impl Into<String>) {
        self.lines.push(line.into());
    }

    /// A line only the objective needs.
    pub fn objective_line(&mut self, line: impl Into<String>) {
        self.objective_only.push(self.lines.len());
        self.lines.push(line.into());
    }

    /// Marks the last line as one only the objective needs.
    pub fn objective_only_last(&mut self) {
        if let Some(last) = self.lines.len().checked_sub(1) {
            self.objective_only.push(last);
        }
    }

    /// The declarations so far, then the guards.
    pub fn finish(&self) -> String {
        self.render(false)
    }

    /// The model without the objective, as a satisfaction problem: it has
    /// an answer exactly when the bounds, fixed values, divisors and
    /// intermediate ranges can hold together.
    pub fn feasibility(&self) -> String {
        self.render(true)
    }

    fn render(&self, feasibility: bool) -> String {
        let kept: Vec<&str> = self
            .lines
            .iter()
            .enumerate()
            .filter(|(index, _)| !feasibility || !self.objective_only.contains(index))
            .map(|(_, line)| line.as_str())
            .collect();
        let mut text = kept.join("\n");
        if !self.guards.is_empty() {
            text.push_str("\n% divisors that contain variables\n");
            text.push_str(&self.guards.join("\n"));
        }
        if feasibility {
            text.push_str("\nsolve satisfy;");
        }
        text.push('\n');
        text
    }

    /// The values a term can take.
    pub fn interval(&self, term: &Term) -> Interval {
        match term {
            Term::Lit(value) => (i128::from(*value), i128::from(*value)),
            Term::Id(id) => self
                .bounds
                .get(id)
                .copied()
                .unwrap_or((-i128::from(INT_LIMIT), i128::from(INT_LIMIT))),
        }
    }

    /// Notes a declared bound `low..INT_LIMIT` on a value that can take
    /// `values`; returns the values the declared variable can take.
    pub fn note_bound(&mut self, low: i64, values: Interval, cut: Cut) -> Interval {
        let (low, high) = (i128::from(low), i128::from(INT_LIMIT));
        if values.0 < low || values.1 > high {
            self.note_cut(cut);
        }
        (values.0.max(low), values.1.min(high))
    }

    /// Records that a bound in the current context can cut.
    pub fn note_cut(&mut self, cut: Cut) {
        let list = match cut {
            Cut::Real => &mut self.cuts,
            Cut::WorseOnly => &mut self.worse_cuts,
        };
        if !list.contains(&self.context) {
            list.push(self.context.clone());
        }
    }

    /// A bounded variable holding `expr`, which can take `values`.
    pub fn define(&mut self, low: i64, expr: &str, values: Interval, cut: Cut) -> String {
        self.next += 1;
        let name = format!("t{}", self.next);
        self.lines
            .push(format!("var {low}..{INT_LIMIT}: {name} = {expr};"));
        let kept = self.note_bound(low, values, cut);
        self.bounds.insert(name.clone(), kept);
        name
    }

    /// Registers a user's variable with its scaled domain.
    pub fn variable(&mut self, var: &ModelVar) {
        self.bounds.insert(
            var.ident.clone(),
            (i128::from(var.low), i128::from(var.high)),
        );
    }

    fn aux(&mut self, expr: String, values: Interval) -> Term {
        Term::Id(self.define(-INT_LIMIT, &expr, values, Cut::Real))
    }

    fn times(&mut self, a: &Term, b: &Term) -> Compiled<Term> {
        match (a, b) {
            (Term::Lit(x), Term::Lit(y)) => Ok(Term::Lit(check(
                i128::from(*x) * i128::from(*y),
                "a product of constants",
            )?)),
            (Term::Lit(1), other) | (other, Term::Lit(1)) => Ok(other.clone()),
            (Term::Lit(0), _) | (_, Term::Lit(0)) => Ok(Term::Lit(0)),
            (Term::Lit(k), Term::Id(id)) | (Term::Id(id), Term::Lit(k)) => {
                let values = corners(self.interval(a), self.interval(b));
                let k = Term::Lit(*k);
                Ok(self.aux(format!("{k} * {id}"), values))
            }
            _ => {
                let values = corners(self.interval(a), self.interval(b));
                Ok(self.aux(format!("{a} * {b}"), values))
            }
        }
    }

    fn product(&mut self, first: &Term, rest: &[Term], constant: i64) -> Compiled<Term> {
        let mut term = self.times(first, &Term::Lit(constant))?;
        for factor in rest {
            term = self.times(&term, factor)?;
        }
        Ok(term)
    }

    fn combine(&mut self, a: &Term, op: &str, b: &Term) -> Compiled<Term> {
        match (a, op, b) {
            (Term::Lit(x), "+", Term::Lit(y)) => Ok(Term::Lit(check(
                i128::from(*x) + i128::from(*y),
                "a sum of constants",
            )?)),
            (Term::Lit(x), "-", Term::Lit(y)) => Ok(Term::Lit(check(
                i128::from(*x) - i128::from(*y),
                "a difference of constants",
            )?)),
            (other, _, Term::Lit(0)) => Ok(other.clone()),
            _ => {
                let (x, y) = (self.interval(a), self.interval(b));
                let values = if op == "+" {
                    (x.0 + y.0, x.1 + y.1)
                } else {
                    (x.0 - y.1, x.1 - y.0)
                };
                Ok(self.aux(format!("{a} {op} {b}"), values))
            }
        }
    }

    fn guard(&mut self, divisor: &Term, positive: bool) {
        if let Term::Id(id) = divisor {
            let line = if positive {
                format!("constraint {id} > 0;")
            } else {
                format!("constraint {id} != 0;")
            };
            if !self.guards.contains(&line) {
                self.guards.push(line);
            }
        }
    }

    fn number(&mut self, decimal: Decimal) -> Compiled<Frac> {
        let too_big = || {
            CompileError(format!(
                "the constant {} needs integers beyond the solver's range (±{INT_LIMIT})",
                decimal.to_f64()
            ))
        };
        let denominator = 10u128.checked_pow(decimal.scale).ok_or_else(too_big)?;
        let mut g = decimal.digits;
        let mut b = denominator;
        while b != 0 {
            (g, b) = (b, g % b);
        }
        let g = g.max(1);
        let (num, scale) = (decimal.digits / g, denominator / g);
        if num > INT_LIMIT as u128 || scale > INT_LIMIT as u128 {
            return Err(too_big());
        }
        Ok(Frac {
            num: Term::Lit(num as i64),
            scale: scale as i64,
            divisors: Vec::new(),
        })
    }

    fn expr(&mut self, expr: &Expr, lookup: &dyn Fn(&str) -> Option<ModelVar>) -> Compiled<Frac> {
        match expr {
            Expr::Number(decimal) => self.number(*decimal),
            Expr::Name(name) => {
                let var = lookup(name).ok_or_else(|| {
                    CompileError(format!(
                        "unknown variable '{name}': add it to variables (with its mult_factor and bounds)"
                    ))
                })?;
                self.variable(&var);
                Ok(Frac {
                    num: Term::Id(var.ident),
                    scale: var.mult,
                    divisors: Vec::new(),
                })
            }
            Expr::Power { base, exponent } => {
                let base = self.expr(base, lookup)?;
                let mut result = base.clone();
                for _ in 1..*exponent {
                    result = self.multiply(&result, &base)?;
                }
                Ok(result)
            }
            Expr::Binary { op, left, right } => {
                let (a, b) = (self.expr(left, lookup)?, self.expr(right, lookup)?);
                match op {
                    Op::Add => self.add(&a, "+", &b),
                    Op::Sub => self.add(&a, "-", &b),
                    Op::Mul => self.multiply(&a, &b),
                    Op::Div => self.divide(&a, &b),
                    Op::Mod => self.modulo(&a, &b),
                }
            }
        }
    }

    fn add(&mut self, a: &Frac, op: &str, b: &Frac) -> Compiled<Frac> {
        let scale = lcm(a.scale, b.scale)?;
        let same = a.divisors == b.divisors;
        let (extra_a, extra_b): (&[Term], &[Term]) = if same {
            (&[], &[])
        } else {
            (&b.divisors, &a.divisors)
        };
        let left = self.product(&a.num, extra_a, scale / a.scale)?;
        let right = self.product(&b.num, extra_b, scale / b.scale)?;
        let num = self.combine(&left, op, &right)?;
        let mut divisors = a.divisors.clone();
        if !same {
            divisors.extend(b.divisors.iter().cloned());
        }
        Ok(Frac {
            num,
            scale,
            divisors,
        })
    }

    fn multiply(&mut self, a: &Frac, b: &Frac) -> Compiled<Frac> {
        let g1 = match &b.num {
            Term::Lit(n) => gcd(*n, a.scale),
            Term::Id(_) => 1,
        };
        let g2 = match &a.num {
            Term::Lit(n) => gcd(*n, b.scale),
            Term::Id(_) => 1,
        };
        // Cancel a constant numerator against the other side's scale first
        // (100 * price with price at ×100 is P / 1, not 100·P / 100).
        let reduce = |term: &Term, by: i64| match term {
            Term::Lit(n) => Term::Lit(n / by),
            other => other.clone(),
        };
        let num = self.times(&reduce(&a.num, g2), &reduce(&b.num, g1))?;
        let scale = check(
            i128::from(a.scale / g1) * i128::from(b.scale / g2),
            "the scale of a product",
        )?;
        let mut divisors = a.divisors.clone();
        divisors.extend(b.divisors.iter().cloned());
        Ok(Frac {
            num,
            scale,
            divisors,
        })
    }

    fn divide(&mut self, a: &Frac, b: &Frac) -> Compiled<Frac> {
        if let (Term::Lit(n), true) = (&b.num, b.divisors.is_empty()) {
            // A constant divisor n / sb folds into the scale.
            if *n == 0 {
                return Err(CompileError("division by zero".to_owned()));
            }
            let g = gcd(*n, b.scale);
            let (n, sb) = (n / g, b.scale / g);
            let sign = if n < 0 { -1 } else { 1 };
            let num = self.times(&a.num, &Term::Lit(sign * sb))?;
            let scale = check(
                i128::from(a.scale) * i128::from(n.abs()),
                "the scale of a division",
            )?;
            return Ok(Frac {
                num,
                scale,
                divisors: a.divisors.clone(),
            });
        }
        let num = self.product(&a.num, &b.divisors, b.scale)?;
        let mut divisors = a.divisors.clone();
        divisors.push(b.num.clone());
        Ok(Frac {
            num,
            scale: a.scale,
            divisors,
        })
    }

    fn modulo(&mut self, a: &Frac, b: &Frac) -> Compiled<Frac> {
        if !a.divisors.is_empty() || !b.divisors.is_empty() {
            return Err(CompileError(
                "'%' of a division by a variable is not supported; rewrite the equation without it"
                    .to_owned(),
            ));
        }
        let scale = lcm(a.scale, b.scale)?;
        let left = self.times(&a.num, &Term::Lit(scale / a.scale))?;
        let right = self.times(&b.num, &Term::Lit(scale / b.scale))?;
        let num = match (&left, &right) {
            (_, Term::Lit(0)) => return Err(CompileError("'%' by zero".to_owned())),
            (Term::Lit(x), Term::Lit(y)) => Term::Lit(x % y),
            _ => {
                self.guard(&right, false);
                // MiniZinc's mod truncates: the sign of the dividend, and
                // smaller in magnitude than both operands' largest value.
                let (x, y) = (self.interval(&left), self.interval(&right));
                let below = y.0.abs().max(y.1.abs()) - 1;
                let values = (x.0.min(0).max(-below), x.1.max(0).min(below));
                self.aux(format!("{left} mod {right}"), values)
            }
        };
        Ok(Frac {
            num,
            scale,
            divisors: Vec::new(),
        })
    }

    /// Compiles `lhs R rhs` to its integer residual `left − right`.
    pub fn relation(
        &mut self,
        lhs: &Expr,
        relation: Relation,
        rhs: &Expr,
        lookup: &dyn Fn(&str) -> Option<ModelVar>,
    ) -> Compiled<Residual> {
        let l = self.expr(lhs, lookup)?;
        let r = self.expr(rhs, lookup)?;
        let positive = relation != Relation::Equal;
        for divisor in l.divisors.iter().chain(&r.divisors) {
            self.guard(divisor, positive);
        }
        let scale = lcm(l.scale, r.scale)?;
        let left = self.product(&l.num, &r.divisors, scale / l.scale)?;
        let right = self.product(&r.num, &l.divisors, scale / r.scale)?;
        let term = self.combine(&left, "-", &right)?;
        let bounds = self.interval(&term);
        Ok(Residual {
            term,
            scale,
            bounds,
            divided: !l.divisors.is_empty() || !r.divisors.is_empty(),
        })
    }

    /// Compiles an objective: its integer value and scale (value / scale
    /// real units). A division by a variable is refused.
    pub fn objective(
        &mut self,
        expr: &Expr,
        lookup: &dyn Fn(&str) -> Option<ModelVar>,
    ) -> Compiled<(Term, i64)> {
        let frac = self.expr(expr, lookup)?;
        if !frac.divisors.is_empty() {
            return Err(CompileError(
                "an objective cannot divide by a variable; optimise the numerator and bound the divisor with a constraint".to_owned(),
            ));
        }
        Ok((frac.num, frac.scale))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::equations::parse::parse;

    fn lookup(name: &str) -> Option<ModelVar> {
        let mult = match name {
            "gross" | "rate" | "price" => 100,
            "qty" | "units" => 1,
            "t" => 10,
            _ => return None,
        };
        Some(ModelVar {
            ident: ident(name),
            mult,
            low: 0,
            high: 100_000 * mult,
        })
    }

    fn compile(lhs: &str, relation: Relation, rhs: &str) -> (String, Residual) {
        let mut text = ModelText::default();
        let residual = text
            .relation(
                &parse(lhs).unwrap(),
                relation,
                &parse(rhs).unwrap(),
                &lookup,
            )
            .unwrap();
        (text.finish(), residual)
    }

    #[test]
    fn a_product_keeps_real_units() {
        // gross×100 = qty × rate×100: residual in cents.
        let (text, residual) = compile("gross", Relation::Equal, "qty * rate");
        assert_eq!(residual.scale, 100);
        assert!(text.contains("t1 = v_qty * v_rate;"), "{text}");
        assert!(text.contains("t2 = v_gross - t1;"), "{text}");
    }

    #[test]
    fn mixed_scales_meet_at_their_lcm_and_decimals_are_exact() {
        let (text, residual) = compile("units + price", Relation::AtMost, "120");
        assert_eq!(residual.scale, 100);
        assert!(text.contains("100 * v_units"), "{text}");
        assert!(text.contains("- 12000"), "{text}");
        let (text, residual) = compile("0.5 * price", Relation::Equal, "t");
        assert_eq!(residual.scale, 200);
        assert!(text.contains("v_price - t"), "{text}");
        assert!(text.contains("20 * v_t"), "{text}");
    }

    #[test]
    fn divisions_move_to_the_other_side() {
        let (text, residual) = compile("rate", Relation::AtLeast, "gross / qty");
        assert_eq!(residual.scale, 100);
        assert!(text.contains("v_rate * v_qty"), "{text}");
        assert!(text.contains("constraint v_qty > 0;"), "{text}");
        let (text, _) = compile("rate", Relation::Equal, "gross / qty");
        assert!(text.contains("constraint v_qty != 0;"), "{text}");
        let (_, residual) = compile("gross / 4", Relation::Equal, "rate");
        assert_eq!(residual.scale, 400);
    }

    #[test]
    fn impossible_constants_are_compile_errors() {
        let mut text = ModelText::default();
        let error = text
            .relation(
                &parse("gross").unwrap(),
                Relation::Equal,
                &parse("qty / 0").unwrap(),
                &lookup,
            )
            .unwrap_err();
        assert!(error.0.contains("division by zero"));
        let error = text
            .relation(
                &parse("price ** 16").unwrap(),
                Relation::Equal,
                &parse("1").unwrap(),
                &lookup,
            )
            .unwrap_err();
        assert!(error.0.contains("beyond"), "{}", error.0);
        let error = text
            .relation(
                &parse("nope").unwrap(),
                Relation::Equal,
                &parse("1").unwrap(),
                &lookup,
            )
            .unwrap_err();
        assert!(error.0.contains("unknown variable 'nope'"));
    }

    #[test]
    fn a_term_that_can_leave_the_range_is_a_cut() {
        // qty ≤ 1e5 times rate ≤ 1e7 scaled: up to 1e12, beyond ±2e9.
        let mut text = ModelText {
            context: "equations[0]".to_owned(),
            ..ModelText::default()
        };
        let residual = text
            .relation(
                &parse("gross").unwrap(),
                Relation::Equal,
                &parse("qty * rate").unwrap(),
                &lookup,
            )
            .unwrap();
        assert_eq!(text.cuts, ["equations[0]"]);
        // The product is kept to ±2e9 downstream: that is what the model holds.
        assert_eq!(residual.bounds, (-2_000_000_000, 10_000_000));
        // Sums of bounded values stay inside: no cut.
        let mut text = ModelText::default();
        let residual = text
            .relation(
                &parse("units + price").unwrap(),
                Relation::AtMost,
                &parse("120").unwrap(),
                &lookup,
            )
            .unwrap();
        assert!(text.cuts.is_empty(), "{:?}", text.cuts);
        assert_eq!(
            residual.bounds,
            (-12_000, 100 * 100_000 + 10_000_000 - 12_000)
        );
        // '%' is smaller than its divisor whatever the dividend.
        let mut text = ModelText::default();
        let residual = text
            .relation(
                &parse("units % 7").unwrap(),
                Relation::Equal,
                &parse("0").unwrap(),
                &lookup,
            )
            .unwrap();
        assert_eq!(residual.bounds, (0, 6));
    }

    #[test]
    fn comments_stay_on_one_line() {
        assert_eq!(
            comment("a +\nconstraint false;  b"),
            "a + constraint false; b"
        );
    }
}
