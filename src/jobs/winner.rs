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

use crate::minizinc::{SolveResult, SolveStatus};

/// How a race picks its winner.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WinnerPolicy {
    /// On an optimisation model only a proven verdict stops the race; the best
    /// objective among the attempts wins (the full rule is `description`).
    #[default]
    BestObjective,
    /// The first attempt with any decisive verdict, `satisfied` included, wins
    /// and stops the race.
    FirstDecisive,
}

impl WinnerPolicy {
    /// The rule in words, as the result states it.
    pub(crate) fn description(self) -> &'static str {
        match self {
            WinnerPolicy::BestObjective => {
                "best_objective: optimal, unsatisfiable, unbounded and unsat_or_unbounded are decisive and stop the race at once (satisfied too on a satisfaction model); with a checker, only a solution it accepted is decisive and unsatisfiable or unbounded claims are not; otherwise every attempt runs to its end and the attempt with the best objective wins among those with a solution the checker (if any) accepted, then claims of unsatisfiability, then other attempts with a solution and no checker, then unknown, then a timeout without a solution, then an error; a solution the checker did not accept never wins; ties go to the earlier attempt"
            }
            WinnerPolicy::FirstDecisive => {
                "first_decisive: the first attempt with a decisive verdict (optimal, satisfied, unsatisfiable, unbounded, unsat_or_unbounded) wins and the others are cancelled at once; with a checker, only a solution it accepted is decisive and unsatisfiable or unbounded claims are not; if none is decisive, the best terminal attempt wins: a timeout or error with a solution the checker (if any) accepted, then claims of unsatisfiability, then unknown, then a timeout without a solution, then an error; a solution the checker did not accept never wins; ties go to the earlier attempt"
            }
        }
    }

    /// Whether `result` ends the race at once. With a checker, only an
    /// answer it accepted does: a proof of unsatisfiability cannot be
    /// checked, and a buggy formulation that claims one first must not
    /// cancel the formulation that would have found a checked solution.
    pub(crate) fn is_decisive(self, result: &SolveResult) -> bool {
        let trusted = match answer(result) {
            Answer::Trusted => true,
            Answer::Refused => false,
            Answer::Missing => result.checker.is_none(),
        };
        match result.status {
            SolveStatus::Optimal => trusted,
            SolveStatus::Unsatisfiable | SolveStatus::Unbounded | SolveStatus::UnsatOrUnbounded => {
                result.checker.is_none()
            }
            SolveStatus::Satisfied => {
                trusted
                    && match self {
                        WinnerPolicy::FirstDecisive => true,
                        WinnerPolicy::BestObjective => sense_of(result).is_none(),
                    }
            }
            SolveStatus::Timeout | SolveStatus::Error | SolveStatus::Unknown => false,
        }
    }
}

/// What an attempt's solution is worth to a race.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer {
    /// A solution, and no checker or one that accepted it.
    Trusted,
    /// A solution the checker did not accept (rejected, errored, said
    /// nothing, ran out of time): it never wins.
    Refused,
    /// No solution.
    Missing,
}

/// Whether the race may trust `result`'s solution.
pub(crate) fn answer(result: &SolveResult) -> Answer {
    if result.solution.is_none() {
        return Answer::Missing;
    }
    match &result.checker {
        Some(checker) if !checker.verdict.is_accepted() => Answer::Refused,
        _ => Answer::Trusted,
    }
}

/// Why the race did not trust an attempt's solution, when it did not.
pub(crate) fn refusal(result: &SolveResult) -> Option<String> {
    if answer(result) != Answer::Refused {
        return None;
    }
    result.checker.as_ref()?.refusal()
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
    match (result.status, answer(result)) {
        (_, Answer::Refused) => None,
        (_, Answer::Trusted) => Some(0),
        (
            SolveStatus::Unsatisfiable | SolveStatus::Unbounded | SolveStatus::UnsatOrUnbounded,
            _,
        ) => Some(1),
        (SolveStatus::Unknown, _) => Some(2),
        (SolveStatus::Timeout, _) => Some(3),
        (SolveStatus::Error, _) => Some(4),
        (SolveStatus::Optimal | SolveStatus::Satisfied, Answer::Missing) => None,
    }
}

/// Tier of an attempt under `best_objective`; lower is better, `None` not
/// eligible.
fn objective_tier(result: &SolveResult) -> Option<u8> {
    let checked = result.checker.is_some();
    match (result.status, answer(result)) {
        (_, Answer::Refused) => None,
        (SolveStatus::Optimal | SolveStatus::Satisfied | SolveStatus::Timeout, Answer::Trusted) => {
            Some(0)
        }
        (
            SolveStatus::Unsatisfiable | SolveStatus::Unbounded | SolveStatus::UnsatOrUnbounded,
            _,
        ) if checked => Some(1),
        (_, Answer::Trusted) => Some(2),
        (SolveStatus::Unknown, _) => Some(3),
        (SolveStatus::Timeout, _) => Some(4),
        (SolveStatus::Error, _) => Some(5),
        (
            SolveStatus::Optimal
            | SolveStatus::Satisfied
            | SolveStatus::Unsatisfiable
            | SolveStatus::Unbounded
            | SolveStatus::UnsatOrUnbounded,
            Answer::Missing,
        ) => None,
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
    use crate::verdict::Verdict;
    use serde_json::{Map, json};

    fn result(status: &str, objective: Option<i64>, method: Option<&str>) -> SolveResult {
        let solution = objective.map(|value| {
            let mut solution = Map::new();
            solution.insert("x".to_owned(), json!(value));
            solution
        });
        SolveResult {
            status: serde_json::from_value(json!(status)).unwrap(),
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
            trajectory: Vec::new(),
        }
    }

    fn checked(mut result: SolveResult, verdict: Verdict) -> SolveResult {
        result.checker = Some(CheckerReport {
            status: crate::minizinc::CheckerStatus::Completed,
            verdict,
            reason: (!verdict.is_accepted()).then(|| "why".to_owned()),
            checks: Vec::new(),
            transcript: String::new(),
        });
        result
    }

    fn rejected(result: SolveResult) -> SolveResult {
        checked(result, Verdict::Rejected)
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
        // A refused solution never wins, whatever else there is.
        let race = vec![
            Some(result("unknown", None, Some("maximize"))),
            Some(rejected(result("satisfied", Some(99), Some("maximize")))),
        ];
        assert_eq!(winner(WinnerPolicy::BestObjective, &race), Some(0));
        assert_eq!(winner(WinnerPolicy::FirstDecisive, &race), Some(0));
        let race = vec![Some(rejected(result(
            "timeout",
            Some(99),
            Some("maximize"),
        )))];
        assert_eq!(winner(WinnerPolicy::BestObjective, &race), None);
        assert_eq!(winner(WinnerPolicy::FirstDecisive, &race), None);
    }

    #[test]
    fn with_a_checker_only_an_accepted_answer_ends_the_race() {
        for policy in [WinnerPolicy::BestObjective, WinnerPolicy::FirstDecisive] {
            for verdict in [
                Verdict::Rejected,
                Verdict::Error,
                Verdict::NoVerdict,
                Verdict::Timeout,
            ] {
                let optimal = checked(result("optimal", Some(3), Some("minimize")), verdict);
                assert!(!policy.is_decisive(&optimal), "{policy:?} {verdict}");
                let sat = checked(result("satisfied", Some(3), Some("satisfy")), verdict);
                assert!(!policy.is_decisive(&sat), "{policy:?} {verdict}");
                // The accepted attempt wins over the refused one, in either order.
                let accepted = checked(
                    result("optimal", Some(9), Some("minimize")),
                    Verdict::Accepted,
                );
                for race in [
                    vec![Some(optimal.clone()), Some(accepted.clone())],
                    vec![Some(accepted.clone()), Some(optimal.clone())],
                ] {
                    let index = winner(policy, &race).unwrap();
                    assert!(
                        race[index]
                            .as_ref()
                            .unwrap()
                            .checker
                            .as_ref()
                            .unwrap()
                            .verdict
                            .is_accepted()
                    );
                }
            }
            let accepted = checked(
                result("optimal", Some(3), Some("minimize")),
                Verdict::Accepted,
            );
            assert!(policy.is_decisive(&accepted));
            // An unsatisfiability claim cannot be checked: with a checker it
            // does not stop the race, and a checked solution beats it.
            let unsat = checked(
                result("unsatisfiable", None, Some("minimize")),
                Verdict::NoVerdict,
            );
            assert!(!policy.is_decisive(&unsat));
            let incumbent = checked(
                result("timeout", Some(5), Some("minimize")),
                Verdict::Accepted,
            );
            let race = vec![Some(unsat.clone()), Some(incumbent)];
            assert_eq!(winner(policy, &race), Some(1));
            let race = vec![Some(result("unknown", None, None)), Some(unsat)];
            assert_eq!(winner(policy, &race), Some(1));
        }
        let unchecked_unsat = result("unsatisfiable", None, Some("minimize"));
        assert!(WinnerPolicy::BestObjective.is_decisive(&unchecked_unsat));
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
