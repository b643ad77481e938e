//! How a portfolio race picks its winner: which verdicts end the race at
//! once, and how the remaining attempts rank when none did.
//!
//! Pure functions over `SolveResult`s; the coordinator in
//! [`portfolio`](super::portfolio) applies them. The rule a maintainer must
//! keep: on an optimisation model a budget-stopped `satisfied` result is an
//! incumbent, not an answer, under the default policy.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Number;

use crate::minizinc::SolveResult;

/// How a race picks its winner.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WinnerPolicy {
    // Plain comments, not doc comments: the published schema stays a plain
    // string enum. See `description` for the rules.
    // On an optimisation model only a proven verdict stops the race; the
    // best objective among the attempts wins.
    #[default]
    BestObjective,
    // The first attempt with any decisive verdict, `satisfied` included,
    // wins and stops the race.
    FirstDecisive,
}

impl WinnerPolicy {
    /// The rule in words, as the result states it.
    pub(crate) fn description(self) -> &'static str {
        match self {
            WinnerPolicy::BestObjective => {
                "best_objective: optimal, unsatisfiable, unbounded and unsat_or_unbounded are decisive and stop the race at once (satisfied too on a satisfaction model); otherwise every attempt runs to its end and the attempt with the best objective wins among those with a solution the checker (if any) accepted, then other attempts with a solution, then unknown, then a timeout without a solution, then an error; ties go to the earlier attempt"
            }
            WinnerPolicy::FirstDecisive => {
                "first_decisive: the first attempt with a decisive verdict (optimal, satisfied, unsatisfiable, unbounded, unsat_or_unbounded) wins and the others are cancelled at once; if none is decisive, the best terminal attempt wins: a timeout or error with a solution, then unknown, then a timeout without a solution, then an error; ties go to the earlier attempt"
            }
        }
    }

    /// Whether `result` ends the race at once.
    pub(crate) fn is_decisive(self, result: &SolveResult) -> bool {
        match result.status.as_str() {
            "optimal" | "unsatisfiable" | "unbounded" | "unsat_or_unbounded" => true,
            "satisfied" => match self {
                WinnerPolicy::FirstDecisive => true,
                WinnerPolicy::BestObjective => sense_of(result).is_none(),
            },
            _ => false,
        }
    }
}

/// Which way an objective improves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sense {
    Minimize,
    Maximize,
}

/// The objective sense of the model a result came from: MiniZinc's
/// flattening statistics name the method; without them, a result carrying
/// an objective is taken to optimise in an unknown direction.
fn sense_of(result: &SolveResult) -> Option<Option<Sense>> {
    match result.statistics.get("method").map(String::as_str) {
        Some("minimize") => Some(Some(Sense::Minimize)),
        Some("maximize") => Some(Some(Sense::Maximize)),
        Some(_) => None,
        None => result.objective.is_some().then_some(None),
    }
}

/// The winner when no attempt was decisive.
pub(crate) fn pick_winner(policy: WinnerPolicy, results: &[Option<&SolveResult>]) -> Option<usize> {
    match policy {
        WinnerPolicy::FirstDecisive => results
            .iter()
            .enumerate()
            .filter_map(|(index, result)| Some((first_decisive_rank(result.as_ref()?)?, index)))
            .min()
            .map(|(_, index)| index),
        WinnerPolicy::BestObjective => best_objective(results),
    }
}

/// The reference's fallback rank; lower is better, `None` not eligible.
fn first_decisive_rank(result: &SolveResult) -> Option<u8> {
    let has_solution = result.solution.is_some();
    match result.status.as_str() {
        "timeout" | "error" if has_solution => Some(0),
        "unknown" => Some(1),
        "timeout" => Some(2),
        "error" => Some(3),
        _ => None,
    }
}

/// Tier of an attempt under `best_objective`; lower is better.
fn objective_tier(result: &SolveResult) -> Option<u8> {
    let has_solution = result.solution.is_some();
    let checker_accepts = result
        .checker
        .as_ref()
        .is_none_or(|checker| checker.status == "completed");
    match result.status.as_str() {
        "optimal" | "satisfied" | "timeout" if has_solution && checker_accepts => Some(0),
        _ if has_solution => Some(1),
        "unknown" => Some(2),
        "timeout" => Some(3),
        "error" => Some(4),
        _ => None,
    }
}

/// The best attempt by tier, then objective (in the race's sense), then
/// plan order.
fn best_objective(results: &[Option<&SolveResult>]) -> Option<usize> {
    let sense = results
        .iter()
        .flatten()
        .find_map(|result| sense_of(result).flatten());
    let mut best: Option<(u8, usize)> = None;
    for (index, result) in results.iter().enumerate() {
        let Some(result) = result else { continue };
        let Some(tier) = objective_tier(result) else {
            continue;
        };
        let better = match best {
            None => true,
            Some((best_tier, _)) if tier != best_tier => tier < best_tier,
            Some((_, best_index)) => results[best_index].is_some_and(|incumbent| {
                improves(
                    sense,
                    result.objective.as_ref(),
                    incumbent.objective.as_ref(),
                )
            }),
        };
        if better {
            best = Some((tier, index));
        }
    }
    best.map(|(_, index)| index)
}

/// Whether `candidate` is strictly better than `incumbent`. An objective
/// beats none; without a known sense nothing is better than the earlier.
fn improves(sense: Option<Sense>, candidate: Option<&Number>, incumbent: Option<&Number>) -> bool {
    match (candidate, incumbent) {
        (Some(_), None) => true,
        (None, _) => false,
        (Some(candidate), Some(incumbent)) => {
            let order = compare(candidate, incumbent);
            match sense {
                Some(Sense::Minimize) => order == std::cmp::Ordering::Less,
                Some(Sense::Maximize) => order == std::cmp::Ordering::Greater,
                None => false,
            }
        }
    }
}

/// Orders two JSON numbers: exactly when both are integers, else as floats.
fn compare(a: &Number, b: &Number) -> std::cmp::Ordering {
    if let (Some(a), Some(b)) = (a.as_i64(), b.as_i64()) {
        return a.cmp(&b);
    }
    let (a, b) = (
        a.as_f64().unwrap_or(f64::NAN),
        b.as_f64().unwrap_or(f64::NAN),
    );
    a.partial_cmp(&b).unwrap_or(std::cmp::Ordering::Equal)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::minizinc::CheckerReport;
    use serde_json::{Map, json};

    fn result(status: &str, objective: Option<i64>, method: Option<&str>) -> SolveResult {
        let solution = objective.map(|value| {
            let mut solution = Map::new();
            solution.insert("x".to_owned(), json!(value));
            solution
        });
        SolveResult {
            status: status.to_owned(),
            solver: "org.gecode.gecode".to_owned(),
            return_code: Some(0),
            timed_out: false,
            truncated: false,
            stdout: String::new(),
            stderr: String::new(),
            elapsed_ms: 1,
            solution: solution.clone(),
            solutions: solution.into_iter().collect(),
            objective: objective.map(Number::from),
            statistics: method
                .map(|method| [("method".to_owned(), method.to_owned())].into())
                .unwrap_or_default(),
            checker: None,
            diagnostic: None,
            sandbox: None,
        }
    }

    fn rejected(mut result: SolveResult) -> SolveResult {
        result.checker = Some(CheckerReport {
            status: "violation".to_owned(),
            checks: Vec::new(),
            transcript: String::new(),
        });
        result
    }

    fn winner(policy: WinnerPolicy, results: &[Option<SolveResult>]) -> Option<usize> {
        let refs: Vec<Option<&SolveResult>> = results.iter().map(Option::as_ref).collect();
        pick_winner(policy, &refs)
    }

    #[test]
    fn satisfied_is_decisive_only_on_a_satisfaction_model() {
        let best = WinnerPolicy::BestObjective;
        let first = WinnerPolicy::FirstDecisive;
        let incumbent = result("satisfied", Some(5), Some("maximize"));
        assert!(!best.is_decisive(&incumbent));
        assert!(first.is_decisive(&incumbent));
        let sat = result("satisfied", None, Some("satisfy"));
        assert!(best.is_decisive(&sat) && first.is_decisive(&sat));
        // No method reported, but an objective: still an incumbent.
        assert!(!best.is_decisive(&result("satisfied", Some(5), None)));
        assert!(best.is_decisive(&result("satisfied", None, None)));
        for proven in [
            "optimal",
            "unsatisfiable",
            "unbounded",
            "unsat_or_unbounded",
        ] {
            assert!(best.is_decisive(&result(proven, None, Some("minimize"))));
        }
        for open in ["timeout", "unknown", "error"] {
            assert!(!best.is_decisive(&result(open, Some(1), Some("minimize"))));
        }
    }

    #[test]
    fn the_best_objective_wins_in_either_sense() {
        let race = |method| {
            vec![
                Some(result("satisfied", Some(10), Some(method))),
                Some(result("satisfied", Some(30), Some(method))),
                Some(result("satisfied", Some(20), Some(method))),
            ]
        };
        assert_eq!(
            winner(WinnerPolicy::BestObjective, &race("maximize")),
            Some(1)
        );
        assert_eq!(
            winner(WinnerPolicy::BestObjective, &race("minimize")),
            Some(0)
        );
        // Ties go to the earlier attempt.
        let tied = vec![
            Some(result("satisfied", Some(7), Some("maximize"))),
            Some(result("satisfied", Some(7), Some("maximize"))),
        ];
        assert_eq!(winner(WinnerPolicy::BestObjective, &tied), Some(0));
    }

    #[test]
    fn a_checked_solution_beats_a_rejected_better_one() {
        let race = vec![
            Some(rejected(result("satisfied", Some(99), Some("maximize")))),
            Some(result("satisfied", Some(10), Some("maximize"))),
            Some(result("unknown", None, Some("maximize"))),
        ];
        assert_eq!(winner(WinnerPolicy::BestObjective, &race), Some(1));
        // Without an accepted one, the rejected solution still beats unknown.
        let race = vec![
            Some(result("unknown", None, Some("maximize"))),
            Some(rejected(result("satisfied", Some(99), Some("maximize")))),
        ];
        assert_eq!(winner(WinnerPolicy::BestObjective, &race), Some(1));
    }

    #[test]
    fn without_solutions_the_reference_order_holds() {
        let race = vec![
            Some(result("error", None, None)),
            Some(result("timeout", None, None)),
            Some(result("unknown", None, None)),
            None,
        ];
        assert_eq!(winner(WinnerPolicy::BestObjective, &race), Some(2));
        assert_eq!(winner(WinnerPolicy::FirstDecisive, &race), Some(2));
        let race = vec![
            Some(result("error", None, None)),
            Some(result("timeout", None, None)),
        ];
        assert_eq!(winner(WinnerPolicy::BestObjective, &race), Some(1));
        assert_eq!(winner(WinnerPolicy::BestObjective, &[None, None]), None);
    }

    #[test]
    fn objectives_compare_exactly_as_integers_and_as_floats() {
        use std::cmp::Ordering;
        let big = Number::from(i64::MAX);
        let less = Number::from(i64::MAX - 1);
        assert_eq!(compare(&big, &less), Ordering::Greater);
        let half = Number::from_f64(0.5).unwrap();
        assert_eq!(compare(&half, &Number::from(1)), Ordering::Less);
    }
}
