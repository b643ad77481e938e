//! The equation tools: check, evaluate, correct and optimise systems of
//! arithmetic equations over named values.
//!
//! - [`validate`] parses each side of each equation ([`parse`]) and says
//!   what is wrong and where.
//! - [`evaluate`] computes both sides from given values in real units.
//! - [`Equations::correct`] compiles the equations and observed values to a
//!   MiniZinc model over scaled integers ([`compile`], [`model`]: the
//!   trade-off between confidence and weight is documented there), solves
//!   it on the managed runtime through [`MiniZinc::solve`] and returns the
//!   corrected free values in real units.
//! - [`Equations::optimize`] does the same for an objective with hard and
//!   soft constraints.
//!
//! A malformed or uncompilable equation is a result with status
//! `INVALID_EQUATION` and the positions, never an error; argument problems
//! (a bound out of range, a bad timeout) are [`ToolError`]s raised before
//! anything runs. No process is started here except through the MiniZinc
//! service.

pub mod compile;
pub mod evaluate;
pub mod model;
pub mod narrow;
pub mod parse;
pub mod report;
pub mod request;

use std::collections::BTreeMap;
use std::time::Instant;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

pub use evaluate::{
    EquationCheck, EquationEvaluation, EvaluationResult, EvaluationStatus, ValidationResult,
    evaluate, validate,
};
pub use request::{CorrectRequest, EvaluateRequest, OptimizeRequest, ValidateRequest};

use crate::budget::Budget;
use crate::diagnostics::{Category, Diagnostic, ToolError};
use crate::minizinc::{MiniZinc, SolveControls, SolveRequest, SolveResult, SolveStatus, Sources};
use crate::progress::{Progress, Stage};
use compile::ModelVar;
use request::SolverSettings;

/// The outcome of a correction or an optimisation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum EquationStatus {
    /// The best values, proven best.
    Optimal,
    /// Values that satisfy the hard constraints, not proven best (the time
    /// ran out).
    Feasible,
    /// The hard constraints (bounds, pinned values, divisors) contradict.
    Infeasible,
    /// No answer: the time ran out first, or the solver failed (see
    /// `diagnostic`).
    Unknown,
    /// An expression does not parse or cannot be compiled (see `errors`).
    InvalidEquation,
}

impl EquationStatus {
    /// The status as results and messages spell it (`OPTIMAL`,
    /// `INVALID_EQUATION`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            EquationStatus::Optimal => "OPTIMAL",
            EquationStatus::Feasible => "FEASIBLE",
            EquationStatus::Infeasible => "INFEASIBLE",
            EquationStatus::Unknown => "UNKNOWN",
            EquationStatus::InvalidEquation => "INVALID_EQUATION",
        }
    }
}

/// Outcome of `correct_values`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CorrectionResult {
    /// How the correction ended: OPTIMAL and FEASIBLE carry `corrected`;
    /// the others say why in `diagnostic` (and `errors`).
    pub status: EquationStatus,
    /// Every free (not fixed) variable, in real units; empty unless
    /// OPTIMAL or FEASIBLE.
    pub corrected: BTreeMap<String, f64>,
    /// The free variables whose corrected value differs from `obs`, each
    /// with both values (an unobserved variable is never listed).
    pub changed: BTreeMap<String, Change>,
    /// The minimised total (equation penalties plus observation pulls, in
    /// scaled units); 0 means every equation holds and nothing moved.
    pub penalty: Option<i64>,
    /// The equations the answer still misses beyond their tolerance: the
    /// observations could not all be reconciled. Empty when every equation
    /// holds (or there is no answer).
    pub violations: Vec<model::Violation>,
    /// With INVALID_EQUATION: one line per problem, with its place
    /// (`equations[1] rhs column 1, at '-': …`).
    pub errors: Vec<String>,
    /// The MiniZinc solver that ran.
    pub solver: Option<String>,
    /// The generated MiniZinc model (run it with plain `minizinc`).
    pub model: Option<String>,
    /// Per equation: the unit its tolerance and weight count, and the
    /// real-unit slack applied (empty with INVALID_EQUATION).
    pub equation_units: Vec<model::EquationUnits>,
    /// `null` on OPTIMAL; otherwise what to act on.
    pub diagnostic: Option<Diagnostic>,
}

/// One value the correction changed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Change {
    /// What was read (`obs`).
    pub observed: f64,
    /// What the equations make it.
    pub corrected: f64,
}

/// Outcome of `optimize_expression`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct OptimizationResult {
    /// How the optimisation ended: OPTIMAL and FEASIBLE carry `values`; the
    /// others say why in `diagnostic` (and `errors`).
    pub status: EquationStatus,
    /// Every variable, in real units; empty unless OPTIMAL or FEASIBLE.
    pub values: BTreeMap<String, f64>,
    /// The objective computed from `values` in real units (soft-constraint
    /// penalties not included).
    pub objective_value: Option<f64>,
    /// The solver's objective: the objective in steps of its scale, minus
    /// (maximize) or plus (minimize) the soft penalties.
    pub solver_objective: Option<i64>,
    /// The soft constraints the answer misses beyond their tolerance, with
    /// what each costs. Empty when all hold (or there is no answer).
    pub violations: Vec<model::Violation>,
    /// With INVALID_EQUATION: one line per problem, with its place.
    pub errors: Vec<String>,
    /// The MiniZinc solver that ran; `None` when nothing ran
    /// (INVALID_EQUATION).
    pub solver: Option<String>,
    /// The generated MiniZinc model (run it with plain `minizinc`); `None` with
    /// INVALID_EQUATION.
    pub model: Option<String>,
    /// Per hard, then soft constraint: the unit its tolerance and weight
    /// count, and the real-unit slack applied.
    pub equation_units: Vec<model::EquationUnits>,
    /// `null` on OPTIMAL; otherwise what to act on.
    pub diagnostic: Option<Diagnostic>,
}

/// How long a correction's first solve runs, at most, before a second one
/// takes over below its answer's penalty (see [`Equations::correct`]): the
/// corpus's smaller cases are proved well within it.
const FIRST_SOLVE_MS: u64 = 300;

/// The solver the equation tools prefer (see [`Equations::default_solver`]).
pub const PREFERRED_SOLVER: &str = "org.gecode.gecode";

/// Corrects and optimises on one MiniZinc runtime.
#[derive(Debug, Clone)]
pub struct Equations {
    minizinc: MiniZinc,
}

/// What a finished solve produced, read back.
struct Outcome {
    status: EquationStatus,
    values: BTreeMap<String, f64>,
    /// Each soft equation's residual in steps, in the order of the
    /// model's checks; empty without an answer.
    residuals: Vec<i64>,
    objective: Option<i64>,
    solver: String,
    diagnostic: Option<Diagnostic>,
    /// The time limit ended the solve, with or without an answer (one
    /// that ended by itself, proved or not, did not time out).
    timed_out: bool,
}

impl Equations {
    /// Corrects and optimises with the solvers of `minizinc`'s runtime.
    pub fn new(minizinc: MiniZinc) -> Self {
        Equations { minizinc }
    }

    /// `correct_values`.
    pub async fn correct(
        &self,
        request: &CorrectRequest,
        progress: &Progress,
        cancel: &CancellationToken,
    ) -> Result<CorrectionResult, ToolError> {
        progress.report(Stage::Validating, "checking the variables and equations");
        request.validate()?;
        let built = match model::correction(request) {
            Ok(built) => built,
            Err(errors) => {
                return Ok(CorrectionResult {
                    status: EquationStatus::InvalidEquation,
                    corrected: BTreeMap::new(),
                    changed: BTreeMap::new(),
                    penalty: None,
                    violations: Vec::new(),
                    diagnostic: Some(invalid_diagnostic(&errors)),
                    errors: capped(errors),
                    solver: None,
                    model: None,
                    equation_units: Vec::new(),
                });
            }
        };
        // The answer's penalty bounds every better one: when the model over
        // the domains that leaves has no cut, nothing better was cut off.
        let proves = |penalty: i64| {
            model::correction_within(request, &narrow::by_penalty(request, penalty))
                .is_ok_and(|narrowed| narrowed.cuts.is_empty())
        };
        let (outcome, built) = self
            .solve_correction(request, built, &proves, progress, cancel)
            .await?;
        let changed = outcome
            .values
            .iter()
            .filter_map(|(name, value)| {
                let variable = request.variables.get(name)?;
                // An unobserved value has nothing to differ from.
                let obs = variable.obs?;
                let moved = (obs - value).abs() > 0.5 / variable.mult_factor as f64;
                moved.then(|| {
                    (
                        name.clone(),
                        Change {
                            observed: obs,
                            corrected: *value,
                        },
                    )
                })
            })
            .collect();
        let violations = violations(&built, &outcome);
        Ok(CorrectionResult {
            status: outcome.status,
            corrected: outcome.values,
            changed,
            penalty: outcome.objective,
            violations,
            errors: Vec::new(),
            solver: Some(outcome.solver),
            model: Some(built.text),
            equation_units: built.units,
            diagnostic: outcome.diagnostic,
        })
    }

    /// Solves a correction in up to two steps: the model searched from the
    /// observations, for a short share of the budget (a small case is
    /// proved there); then, when its answer is not proved, the model below
    /// that answer's penalty ([`model::correction_below`]) for the rest of
    /// the budget. Returns the outcome and the model that gave it. A first
    /// solve that ends without any answer is tried again with twice the
    /// time.
    async fn solve_correction(
        &self,
        request: &CorrectRequest,
        built: model::Built,
        proves: &(dyn Fn(i64) -> bool + Sync),
        progress: &Progress,
        cancel: &CancellationToken,
    ) -> Result<(Outcome, model::Built), ToolError> {
        let settings = request.settings();
        let budget = settings.validate()?.as_millis();
        let started = Instant::now();
        let left = || {
            let spent = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
            budget.saturating_sub(spent)
        };
        let mut share = FIRST_SOLVE_MS;
        loop {
            let time = Budget::saturating(share.min(left()));
            let outcome = self
                .run(&built, &settings, time, Some(proves), progress, cancel)
                .await?;
            // A solve that ended by itself was proved as far as it can be
            // (OPTIMAL, INFEASIBLE, or optimal among answers within the
            // range and not claimed so): a second solve adds nothing.
            if outcome.status == EquationStatus::Optimal
                || !outcome.timed_out
                || left() == 0
                || cancel.is_cancelled()
            {
                return Ok((outcome, built));
            }
            let Some(penalty) = outcome.objective.filter(|_| !outcome.values.is_empty()) else {
                // No answer in that time: again, with twice the time.
                share = share.saturating_mul(2);
                continue;
            };
            // Every better answer lies within what this penalty leaves of
            // each observation: the rest of the budget searches only there.
            let narrowed = narrow::by_penalty(request, penalty);
            let Ok(below) = model::correction_below(request, &narrowed, penalty) else {
                return Ok((outcome, built));
            };
            let time = Budget::saturating(left());
            let second = self
                .run(&below, &settings, time, Some(proves), progress, cancel)
                .await?;
            // The first answer satisfies the second model: the second solve
            // keeps it or finds a better one, unless its time ran out first.
            let kept = second
                .objective
                .is_some_and(|objective| objective <= penalty)
                && !second.values.is_empty();
            return Ok(if kept {
                (second, below)
            } else {
                (outcome, built)
            });
        }
    }

    /// `optimize_expression`.
    pub async fn optimize(
        &self,
        request: &OptimizeRequest,
        progress: &Progress,
        cancel: &CancellationToken,
    ) -> Result<OptimizationResult, ToolError> {
        progress.report(Stage::Validating, "checking the variables and constraints");
        request.validate()?;
        let built = match model::optimisation(request) {
            Ok(built) => built,
            Err(errors) => {
                return Ok(OptimizationResult {
                    status: EquationStatus::InvalidEquation,
                    values: BTreeMap::new(),
                    objective_value: None,
                    solver_objective: None,
                    violations: Vec::new(),
                    diagnostic: Some(invalid_diagnostic(&errors)),
                    errors: capped(errors),
                    solver: None,
                    model: None,
                    equation_units: Vec::new(),
                });
            }
        };
        let settings = request.settings();
        let budget = settings.validate()?;
        let outcome = self
            .run(&built, &settings, budget, None, progress, cancel)
            .await?;
        let objective_value = if outcome.values.is_empty() {
            None
        } else {
            parse::parse(&request.objective.expr).ok().and_then(|expr| {
                evaluate::value(&expr, &|name| outcome.values.get(name).copied()).ok()
            })
        };
        let violations = violations(&built, &outcome);
        Ok(OptimizationResult {
            status: outcome.status,
            values: outcome.values,
            objective_value,
            solver_objective: outcome.objective,
            violations,
            errors: Vec::new(),
            solver: Some(outcome.solver),
            model: Some(built.text),
            equation_units: built.units,
            diagnostic: outcome.diagnostic,
        })
    }

    /// The solver these models run on when the call names none: Gecode
    /// where the runtime has it, else the runtime's own default. Measured
    /// on invoices (both runtimes here): Gecode follows the models' search
    /// (from the observations) and proves the answer in tenths of a
    /// second; Chuffed refuses their ±2·10⁹ domains (its integers end at
    /// ±5·10⁸), and COIN-BC and HiGHS ran out of time on their products.
    async fn default_solver(
        &self,
        cancel: &CancellationToken,
    ) -> Result<Option<String>, ToolError> {
        let catalog = self.minizinc.runtime().catalog(cancel).await?;
        Ok(catalog
            .resolve(PREFERRED_SOLVER)
            .map(|solver| solver.id.clone()))
    }

    /// Solves `request` and the same model with the `alternative` search
    /// side by side: the first to prove its answer wins and the other is
    /// stopped; when neither proves, the better answer is kept.
    async fn race(
        &self,
        request: &SolveRequest,
        alternative: &str,
        progress: &Progress,
        cancel: &CancellationToken,
    ) -> Result<SolveResult, ToolError> {
        let other = SolveRequest {
            sources: Sources::Inline {
                model: alternative.to_owned(),
                data: None,
                checker: None,
            },
            ..request.clone()
        };
        let (stop_first, stop_second) = (cancel.child_token(), cancel.child_token());
        let quiet = Progress::none();
        let first = self.minizinc.solve(request, progress, &stop_first);
        let second = self.minizinc.solve(&other, &quiet, &stop_second);
        tokio::pin!(first, second);
        let proved = |result: &Result<SolveResult, ToolError>| {
            result.as_ref().is_ok_and(|result| {
                matches!(
                    result.status,
                    SolveStatus::Optimal | SolveStatus::Unsatisfiable
                )
            })
        };
        let (done, first_left) = tokio::select! {
            result = &mut first => (result, false),
            result = &mut second => (result, true),
        };
        let rest = if proved(&done) {
            // The loser is stopped and awaited, so its process is gone.
            if first_left {
                stop_first.cancel();
                let _ = first.await;
            } else {
                stop_second.cancel();
                let _ = second.await;
            }
            return done;
        } else if first_left {
            first.await
        } else {
            second.await
        };
        if proved(&rest) {
            return rest;
        }
        let objective = |result: &Result<SolveResult, ToolError>| {
            result
                .as_ref()
                .ok()
                .filter(|result| result.solution.is_some())
                .and_then(|result| result.objective.as_ref()?.as_i64())
        };
        Ok(match (objective(&done), objective(&rest)) {
            (Some(a), Some(b)) if b < a => rest?,
            (None, Some(_)) => rest?,
            _ => match done {
                Ok(done) => done,
                Err(_) => rest?,
            },
        })
    }

    async fn run(
        &self,
        built: &model::Built,
        settings: &SolverSettings<'_>,
        timeout_ms: Budget,
        proves_optimal: Option<&(dyn Fn(i64) -> bool + Sync)>,
        progress: &Progress,
        cancel: &CancellationToken,
    ) -> Result<Outcome, ToolError> {
        let solver = match settings.solver {
            Some(named) => Some(named.to_owned()),
            None => self.default_solver(cancel).await?,
        };
        let request = SolveRequest {
            sources: Sources::Inline {
                model: built.text.clone(),
                data: None,
                checker: None,
            },
            solver,
            timeout_ms,
            controls: SolveControls {
                parallel: settings.num_workers,
                final_only: true,
                ..SolveControls::default()
            },
        };
        let result = match &built.alternative {
            None => self.minizinc.solve(&request, progress, cancel).await?,
            Some(alternative) => self.race(&request, alternative, progress, cancel).await?,
        };
        let mut outcome = read_outcome(&result, &built.outputs, &built.checks);
        let mut proven_infeasible = false;
        if outcome.status == EquationStatus::Infeasible
            && built.cuts.is_empty()
            && !built.worse_cuts.is_empty()
        {
            // The objective's bound may be what has no answer: ask whether
            // the rest of the model has one.
            let check = SolveRequest {
                sources: Sources::Inline {
                    model: built.feasibility.clone(),
                    data: None,
                    checker: None,
                },
                ..request
            };
            let result = self.minizinc.solve(&check, progress, cancel).await?;
            proven_infeasible = result.status == SolveStatus::Unsatisfiable;
        }
        let proven_optimal = outcome.status == EquationStatus::Optimal
            && outcome
                .objective
                .zip(proves_optimal)
                .is_some_and(|(objective, proves)| proves(objective));
        if !proven_infeasible && !proven_optimal {
            limit_claims(&mut outcome, built);
        }
        Ok(outcome)
    }
}

/// A status claims no more than the model proves: when a ±INT_LIMIT bound
/// can cut answers, OPTIMAL becomes FEASIBLE and INFEASIBLE becomes
/// UNKNOWN, with a diagnostic naming the expressions.
fn limit_claims(outcome: &mut Outcome, built: &model::Built) {
    let (cuts, downgraded) = match outcome.status {
        EquationStatus::Optimal if !built.cuts.is_empty() => {
            (&built.cuts, EquationStatus::Feasible)
        }
        EquationStatus::Feasible if !built.cuts.is_empty() => {
            (&built.cuts, EquationStatus::Feasible)
        }
        EquationStatus::Infeasible if !built.cuts.is_empty() => {
            (&built.cuts, EquationStatus::Unknown)
        }
        EquationStatus::Infeasible if !built.worse_cuts.is_empty() => {
            (&built.worse_cuts, EquationStatus::Unknown)
        }
        _ => return,
    };
    let mut message = format!(
        "the search was limited to ±{} scaled units, and {} can leave that range, so answers outside it were not considered and the status claims no more than {}; use smaller bounds (min/max) or mult_factors",
        request::INT_LIMIT,
        cuts.join(", "),
        downgraded.as_str()
    );
    if let Some(previous) = &outcome.diagnostic {
        message.push_str(&format!("; also: {}", previous.message));
    }
    outcome.status = downgraded;
    if downgraded == EquationStatus::Unknown {
        outcome.values.clear();
        outcome.residuals.clear();
    }
    outcome.diagnostic = Some(Diagnostic::new(Category::NotVerified, message));
}

/// Most problem lines a result lists; a request with more says how many
/// were left out, so hostile input cannot make a huge answer.
pub const MAX_ERROR_LINES: usize = 50;

fn capped(mut errors: Vec<String>) -> Vec<String> {
    if errors.len() > MAX_ERROR_LINES {
        let left_out = errors.len() - MAX_ERROR_LINES;
        errors.truncate(MAX_ERROR_LINES);
        errors.push(format!(
            "{left_out} more line(s) of problems not listed; fix these and check again"
        ));
    }
    errors
}

fn invalid_diagnostic(errors: &[String]) -> Diagnostic {
    Diagnostic::new(
        Category::InvalidRequest,
        format!(
            "{} problem(s) in the expressions; nothing was solved: {}",
            errors.len(),
            errors.first().map(String::as_str).unwrap_or("")
        ),
    )
}

/// The soft equations the answer misses, from the residuals the model
/// output; the sides are computed from every variable's value.
fn violations(built: &model::Built, outcome: &Outcome) -> Vec<model::Violation> {
    let value = |name: &str| {
        outcome
            .values
            .get(name)
            .or_else(|| built.pinned.get(name))
            .copied()
    };
    built
        .checks
        .iter()
        .zip(&outcome.residuals)
        .filter_map(|(check, &steps)| check.violation(steps, &value))
        .collect()
}

fn read_outcome(
    result: &SolveResult,
    outputs: &BTreeMap<String, ModelVar>,
    checks: &[model::Check],
) -> Outcome {
    let has_solution = result.solution.is_some();
    let mut status = match result.status {
        SolveStatus::Optimal => EquationStatus::Optimal,
        SolveStatus::Satisfied => EquationStatus::Feasible,
        SolveStatus::Timeout if has_solution => EquationStatus::Feasible,
        SolveStatus::Unsatisfiable => EquationStatus::Infeasible,
        SolveStatus::Timeout
        | SolveStatus::Error
        | SolveStatus::Unbounded
        | SolveStatus::UnsatOrUnbounded
        | SolveStatus::Unknown => EquationStatus::Unknown,
    };
    let mut values = BTreeMap::new();
    let mut residuals = Vec::new();
    let mut diagnostic = result.diagnostic.clone();
    if let Some(said) = diagnostic.as_mut()
        && said.message.contains("max <= max_limit")
    {
        // Chuffed's own assertion on a domain beyond its integers.
        said.message.push_str(&format!(
            " (the solver's integers end before this model's ±{} scaled units; omit solver to use Gecode, or give every value min and max so that value × mult_factor stays within ±500000000)",
            request::INT_LIMIT
        ));
    }
    if matches!(status, EquationStatus::Optimal | EquationStatus::Feasible) {
        let solution = result.solution.clone().unwrap_or_default();
        let mut missing = Vec::new();
        for (name, var) in outputs {
            match solution.get(&var.ident).and_then(serde_json::Value::as_i64) {
                Some(scaled) => {
                    values.insert(name.clone(), scaled as f64 / var.mult as f64);
                }
                None => missing.push(name.as_str()),
            }
        }
        for check in checks {
            match solution
                .get(&check.ident)
                .and_then(serde_json::Value::as_i64)
            {
                Some(steps) => residuals.push(steps),
                None => missing.push(check.ident.as_str()),
            }
        }
        // Half an answer is no answer: nothing is claimed.
        if !missing.is_empty() {
            status = EquationStatus::Unknown;
            values.clear();
            residuals.clear();
            diagnostic = Some(Diagnostic::new(
                Category::Unknown,
                format!(
                    "the solver reported {} but its answer has no integer value for {}; nothing is returned (see the model and the runtime's output)",
                    result.status,
                    missing.join(", ")
                ),
            ));
        }
    }
    if status == EquationStatus::Infeasible {
        diagnostic = Some(Diagnostic::new(
            Category::Infeasible,
            format!(
                "no values satisfy the hard constraints together with the bounds, the fixed values and the non-zero divisors (or every answer needs a scaled value or penalty total beyond ±{})",
                request::INT_LIMIT
            ),
        ));
    }
    if status == EquationStatus::Unknown && diagnostic.is_none() {
        // The end of what it said, bounded however much it wrote.
        let said = crate::diagnostics::error_gist(&result.stderr);
        diagnostic = Some(Diagnostic::new(
            Category::Unknown,
            format!(
                "the solver ended with status {}: {}",
                result.status,
                if said.is_empty() {
                    "it wrote nothing to stderr".to_owned()
                } else {
                    said.join("; ")
                }
            ),
        ));
    }
    let objective = result
        .objective
        .as_ref()
        .and_then(serde_json::Number::as_i64);
    Outcome {
        status,
        values,
        residuals,
        objective,
        solver: result.solver.clone(),
        diagnostic,
        timed_out: result.timed_out
            || result.status == SolveStatus::Timeout
            || result
                .diagnostic
                .as_ref()
                .is_some_and(|said| said.category == Category::TimeoutWithIncumbent),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn solved(solution: serde_json::Value) -> SolveResult {
        serde_json::from_value(serde_json::json!({
            "status": "optimal", "solver": "org.gecode.gecode", "return_code": 0,
            "timed_out": false, "truncated": false, "stdout": "", "stderr": "",
            "elapsed_ms": 1, "solution": solution, "solutions": [solution],
            "objective": 0, "statistics": {}, "checker": null, "diagnostic": null
        }))
        .unwrap()
    }

    fn outputs() -> BTreeMap<String, ModelVar> {
        ["a", "b"]
            .into_iter()
            .map(|name| {
                let var = ModelVar {
                    ident: compile::ident(name),
                    mult: 100,
                    low: 0,
                    high: 1000,
                };
                (name.to_owned(), var)
            })
            .collect()
    }

    #[test]
    fn an_answer_missing_a_value_is_unknown_not_optimal() {
        let outcome = read_outcome(&solved(serde_json::json!({"v_a": 150})), &outputs(), &[]);
        assert_eq!(outcome.status, EquationStatus::Unknown);
        assert!(outcome.values.is_empty());
        let diagnostic = outcome.diagnostic.unwrap();
        assert!(
            diagnostic.message.contains("no integer value for b"),
            "{}",
            diagnostic.message
        );
        let result = CorrectionResult {
            status: outcome.status,
            corrected: outcome.values,
            changed: BTreeMap::new(),
            penalty: None,
            violations: Vec::new(),
            errors: Vec::new(),
            solver: None,
            model: None,
            equation_units: Vec::new(),
            diagnostic: Some(diagnostic),
        };
        let text = report::correction(&result);
        assert!(text.starts_with("UNKNOWN: nothing corrected"), "{text}");
        assert!(
            text.contains("Diagnostic: unknown — the solver reported optimal"),
            "{text}"
        );
    }

    #[test]
    fn long_problem_lists_are_capped_with_a_count() {
        let few: Vec<String> = (0..MAX_ERROR_LINES).map(|i| i.to_string()).collect();
        assert_eq!(capped(few.clone()), few);
        let many: Vec<String> = (0..MAX_ERROR_LINES + 7).map(|i| i.to_string()).collect();
        let kept = capped(many);
        assert_eq!(kept.len(), MAX_ERROR_LINES + 1);
        assert_eq!(kept[..MAX_ERROR_LINES], few[..]);
        assert!(kept[MAX_ERROR_LINES].starts_with("7 more line(s) of problems not listed"));
    }

    #[test]
    fn only_a_solve_the_time_limit_stopped_has_timed_out() {
        let answer = serde_json::json!({"v_a": 150, "v_b": 7});
        let outcome = read_outcome(&solved(answer.clone()), &outputs(), &[]);
        assert!(!outcome.timed_out);
        // MiniZinc's own --time-limit: an answer, unproven, and no cap fired.
        let mut stopped = solved(answer);
        stopped.status = SolveStatus::Satisfied;
        stopped.diagnostic = Some(Diagnostic::new(
            Category::TimeoutWithIncumbent,
            "the 300 ms time limit stopped the search before it proved optimality",
        ));
        let outcome = read_outcome(&stopped, &outputs(), &[]);
        assert_eq!(outcome.status, EquationStatus::Feasible);
        assert!(outcome.timed_out);
        let mut nothing = solved(serde_json::json!({}));
        (nothing.status, nothing.solution) = (SolveStatus::Timeout, None);
        let outcome = read_outcome(&nothing, &outputs(), &[]);
        assert_eq!(outcome.status, EquationStatus::Unknown);
        assert!(outcome.timed_out);
    }

    #[test]
    fn a_complete_answer_stays_optimal() {
        let outcome = read_outcome(
            &solved(serde_json::json!({"v_a": 150, "v_b": 7})),
            &outputs(),
            &[],
        );
        assert_eq!(outcome.status, EquationStatus::Optimal);
        assert_eq!(outcome.values["a"], 1.5);
        assert_eq!(outcome.values["b"], 0.07);
        assert!(outcome.diagnostic.is_none());
    }
}
