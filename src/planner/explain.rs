//! Words for a stored planner result, and the guard that checks any words
//! against it.
//!
//! `narrate` fills a fixed template by key lookup: every figure is the
//! stored value's own JSON text, the recommended card is found by the flag
//! the planner set, and nothing on this path adds, rounds, converts or
//! compares numbers. `verify` scans a narration for digit runs (`12`,
//! `0.1246`) and rejects any that the stored result does not contain —
//! as a value, or inside one of its strings or keys (so `eta_p90_days`
//! admits `90`). It is a lexical check on numeric tokens: a right number
//! under a wrong label still passes.

use std::collections::BTreeSet;
use std::fmt::Write;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Card, LoadPlan, Objective};

/// What the guard found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NarrationCheck {
    /// Every numeric token appears in the stored result.
    pub ok: bool,
    /// The tokens that do not, in order of appearance.
    pub offending: Vec<String>,
    /// How many numeric tokens the narration has.
    pub tokens_checked: usize,
}

/// `explain_load_plan`'s answer.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Explanation {
    /// The id of the explained result.
    pub result_id: String,
    /// The fixed template's text, filled with values read from the stored
    /// result.
    pub narration: String,
    /// The guard run on `narration` itself.
    pub check: NarrationCheck,
}

/// The numeric tokens of `text`: digit runs, with a fractional part when a
/// dot and digits follow.
pub fn tokens(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut found = Vec::new();
    let mut index = 0;
    while index < chars.len() {
        if !chars[index].is_ascii_digit() {
            index += 1;
            continue;
        }
        let start = index;
        while index < chars.len() && chars[index].is_ascii_digit() {
            index += 1;
        }
        if index + 1 < chars.len() && chars[index] == '.' && chars[index + 1].is_ascii_digit() {
            index += 1;
            while index < chars.len() && chars[index].is_ascii_digit() {
                index += 1;
            }
        }
        found.push(chars[start..index].iter().collect());
    }
    found
}

/// Every token the stored result admits.
fn admitted(plan: &LoadPlan) -> BTreeSet<String> {
    let mut allowed = BTreeSet::new();
    let value = serde_json::to_value(plan).unwrap_or(Value::Null);
    collect(&value, &mut allowed);
    allowed
}

fn collect(value: &Value, allowed: &mut BTreeSet<String>) {
    match value {
        Value::Number(number) => {
            let text = number.to_string();
            allowed.extend(tokens(&text));
            // 11480.0 is also written 11480.
            if let Some(whole) = text.strip_suffix(".0") {
                allowed.insert(whole.to_owned());
            }
        }
        Value::String(text) => allowed.extend(tokens(text)),
        Value::Array(items) => items.iter().for_each(|item| collect(item, allowed)),
        Value::Object(map) => {
            for (key, item) in map {
                allowed.extend(tokens(key));
                collect(item, allowed);
            }
        }
        Value::Null | Value::Bool(_) => {}
    }
}

/// Checks every numeric token of `narration` against the stored result.
pub fn verify(narration: &str, plan: &LoadPlan) -> NarrationCheck {
    let allowed = admitted(plan);
    let found = tokens(narration);
    let offending: Vec<String> = found
        .iter()
        .filter(|token| !allowed.contains(*token))
        .cloned()
        .collect();
    NarrationCheck {
        ok: offending.is_empty(),
        tokens_checked: found.len(),
        offending,
    }
}

/// A stored number as its JSON text.
fn shown(value: f64) -> String {
    Value::from(value).to_string()
}

fn shown_opt(value: Option<f64>) -> String {
    value.map_or_else(|| "none".to_owned(), shown)
}

/// The fixed template, filled by key lookup.
pub fn narrate(plan: &LoadPlan) -> String {
    let mut text = String::new();
    let recommended = plan.cards.iter().find(|card| card.recommended);
    match recommended {
        Some(card) => {
            let _ = writeln!(text, "Recommended plan: {}.", card.name);
            if !card.within_policy {
                text.push_str("No card is within the policy, so the least risky is recommended.\n");
            }
            line(&mut text, card);
        }
        None => text.push_str("No plan is feasible for this cohort.\n"),
    }
    text.push_str("All plans:\n");
    for card in &plan.cards {
        text.push_str("- ");
        line(&mut text, card);
    }
    text.push_str("Transit by mode:\n");
    for (mode, read) in &plan.modes {
        let _ = writeln!(
            text,
            "- {mode}: arrives in {} days at the median and {} days at the 90th percentile; the worst tenth of delays averages {} days ({} delay figures).",
            read.eta_p50_days,
            read.eta_p90_days,
            shown(read.cvar90_delay_days),
            read.delay_source
        );
    }
    for note in &plan.notes {
        let _ = writeln!(text, "Note: {note}.");
    }
    let _ = writeln!(text, "Solved by {}.", plan.solver);
    text
}

fn line(text: &mut String, card: &Card) {
    if !card.feasible {
        let _ = writeln!(
            text,
            "{}: not feasible — {}.",
            card.name,
            card.infeasible_reason
                .as_deref()
                .unwrap_or("no reason recorded")
        );
        return;
    }
    let cost = card.cost.as_ref();
    let _ = write!(
        text,
        "{}: total cost {} (air {}, LCL {}, containers {}); chance that a shipment misses its deadline {}",
        card.name,
        shown_opt(cost.map(|c| c.total)),
        shown_opt(cost.map(|c| c.air)),
        shown_opt(cost.map(|c| c.lcl)),
        shown_opt(cost.map(|c| c.fcl)),
        shown_opt(card.miss_probability),
    );
    if !card.containers.is_empty() {
        let booked: Vec<String> = card.containers.iter().map(ToString::to_string).collect();
        let _ = write!(
            text,
            "; containers {} filled to {}",
            booked.join(", "),
            shown_opt(card.fill_rate)
        );
    }
    let _ = writeln!(
        text,
        "; {} the policy{}; checker {}.",
        if card.within_policy {
            "within"
        } else {
            "outside"
        },
        match (card.objective, card.within_policy) {
            (Objective::LeastRisky, false) => {
                " (no plan meets the policy: this is the least risky plan, the cheapest of those)"
            }
            (Objective::LeastRisky, true) => " (the least risky plan, the cheapest of those)",
            (Objective::Cheapest | Objective::CheapestWithinPolicy, _) => "",
        },
        card.checker.as_deref().unwrap_or("silent")
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::planner::{CardCost, ModeRead, PLANNER_FORMAT};

    fn stored() -> LoadPlan {
        LoadPlan {
            planner: PLANNER_FORMAT.to_owned(),
            solver: "ortools-cpsat+py3dbp".to_owned(),
            cards: vec![Card {
                name: "all_air".to_owned(),
                objective: Objective::Cheapest,
                feasible: true,
                status: crate::minizinc::SolveStatus::Optimal,
                infeasible_reason: None,
                modes: Default::default(),
                cost: Some(CardCost {
                    air: 11480.0,
                    lcl: 0.0,
                    fcl: 0.0,
                    total: 11480.0,
                }),
                containers: Vec::new(),
                fill_rate: None,
                shipments: Vec::new(),
                miss_probability: Some(0.1246),
                checker: Some("CORRECT".to_owned()),
                within_policy: false,
                recommended: true,
            }],
            modes: [(
                "air".to_owned(),
                ModeRead {
                    eta_p50_days: 3,
                    eta_p90_days: 4,
                    cvar90_delay_days: 2.5,
                    delay_source: "seed".to_owned(),
                },
            )]
            .into(),
            packing: Vec::new(),
            recommended: Some("all_air".to_owned()),
            notes: Vec::new(),
        }
    }

    #[test]
    fn the_guard_rejects_numbers_the_solver_never_produced() {
        let plan = stored();
        for (narration, offending) in [
            ("Air costs about 11500.", vec!["11500"]),
            ("A 12.46% chance of missing.", vec!["12.46"]),
            ("Together 22960 for both.", vec!["22960"]),
            ("It saves 300 compared to sea.", vec!["300"]),
        ] {
            let check = verify(narration, &plan);
            assert!(!check.ok, "{narration}");
            assert_eq!(check.offending, offending, "{narration}");
        }
    }

    #[test]
    fn the_guard_admits_stored_values_strings_and_keys() {
        let plan = stored();
        for narration in [
            "Air costs 11480.0 in total, that is 11480.",
            "The miss probability is 0.1246.",
            "Solved by ortools-cpsat+py3dbp, which admits 3.",
            "The eta_p90_days field admits 90, and p50 is 3 days.",
            "No digits at all.",
        ] {
            let check = verify(narration, &plan);
            assert!(check.ok, "{narration}: {:?}", check.offending);
        }
    }

    #[test]
    fn the_template_passes_its_own_guard() {
        let plan = stored();
        let narration = narrate(&plan);
        assert!(
            narration.starts_with("Recommended plan: all_air."),
            "{narration}"
        );
        assert!(narration.contains("11480.0"), "{narration}");
        let check = verify(&narration, &plan);
        assert!(check.ok, "{:?}\n{narration}", check.offending);
        assert!(check.tokens_checked > 5);
    }

    #[test]
    fn tokens_are_digit_runs_with_their_fraction() {
        assert_eq!(
            tokens("a 12.46% b 1,200 c 3. d v2.0.1 e-5"),
            vec!["12.46", "1", "200", "3", "2.0", "1", "5"]
        );
    }
}

#[cfg(test)]
mod properties {
    use super::*;
    use crate::planner::{CardCost, ContainerCount, ModeRead, PLANNER_FORMAT};
    use proptest::prelude::*;

    /// Text as a stored result may hold it: mostly digits, dots and the
    /// template's own punctuation, now and then anything.
    fn text() -> impl Strategy<Value = String> {
        prop_oneof![3 => "[a-z0-9. ×:;,()-]{0,12}", 1 => any::<String>()]
    }

    fn number() -> impl Strategy<Value = f64> {
        prop_oneof![
            any::<f64>(),
            (0u32..1_000_000, 0i32..5).prop_map(|(n, scale)| f64::from(n) / 10f64.powi(scale)),
        ]
    }

    fn card() -> impl Strategy<Value = Card> {
        (
            (
                text(),
                any::<bool>(),
                proptest::option::of(text()),
                proptest::option::of(text()),
            ),
            proptest::option::of((number(), number(), number(), number())),
            prop::collection::vec((text(), any::<u32>()), 0..3),
            (
                proptest::option::of(number()),
                proptest::option::of(number()),
            ),
            (any::<bool>(), any::<bool>()),
        )
            .prop_map(
                |(
                    (name, feasible, reason, checker),
                    cost,
                    containers,
                    (fill, miss),
                    (within, recommended),
                )| Card {
                    name,
                    objective: Objective::LeastRisky,
                    feasible,
                    status: crate::minizinc::SolveStatus::Optimal,
                    infeasible_reason: reason,
                    modes: Default::default(),
                    cost: cost.map(|(air, lcl, fcl, total)| CardCost {
                        air,
                        lcl,
                        fcl,
                        total,
                    }),
                    containers: containers
                        .into_iter()
                        .map(|(container_type, count)| ContainerCount {
                            container_type,
                            count,
                        })
                        .collect(),
                    fill_rate: fill,
                    shipments: Vec::new(),
                    miss_probability: miss,
                    checker,
                    within_policy: within,
                    recommended,
                },
            )
    }

    fn plan() -> impl Strategy<Value = LoadPlan> {
        (
            text(),
            prop::collection::vec(card(), 0..4),
            prop::collection::btree_map(
                text(),
                (any::<u32>(), any::<u32>(), number(), text()),
                0..3,
            ),
            prop::collection::vec(text(), 0..3),
        )
            .prop_map(|(solver, cards, modes, notes)| LoadPlan {
                planner: PLANNER_FORMAT.to_owned(),
                solver,
                cards,
                modes: modes
                    .into_iter()
                    .map(
                        |(mode, (eta_p50_days, eta_p90_days, cvar90_delay_days, delay_source))| {
                            (
                                mode,
                                ModeRead {
                                    eta_p50_days,
                                    eta_p90_days,
                                    cvar90_delay_days,
                                    delay_source,
                                },
                            )
                        },
                    )
                    .collect(),
                packing: Vec::new(),
                recommended: None,
                notes,
            })
    }

    proptest! {
        #![proptest_config(crate::strategies::cases(256))]

        /// Every ASCII digit of any text belongs to exactly one token, and
        /// the tokens are digit runs with at most one fraction, in order.
        #[test]
        fn tokens_cover_every_digit_in_order(text in prop_oneof![any::<String>(), "[0-9. a-]{0,30}"]) {
            let found = tokens(&text);
            let digits = text.chars().filter(char::is_ascii_digit).count();
            let in_tokens: usize = found.iter().map(|t| t.chars().filter(char::is_ascii_digit).count()).sum();
            prop_assert_eq!(digits, in_tokens);
            let mut rest = text.as_str();
            for token in &found {
                prop_assert!(token.starts_with(|c: char| c.is_ascii_digit()) && token.ends_with(|c: char| c.is_ascii_digit()));
                prop_assert!(token.matches('.').count() <= 1);
                let at = rest.find(token.as_str());
                prop_assert!(at.is_some(), "{:?} not in order in {:?}", token, text);
                rest = &rest[at.unwrap_or(0) + token.len()..];
            }
        }

        /// Whatever a stored result holds, the template's own words pass
        /// the guard, and a number it does not hold is caught.
        #[test]
        fn the_template_always_passes_its_guard(plan in plan()) {
            let narration = narrate(&plan);
            let check = verify(&narration, &plan);
            prop_assert!(check.ok, "{:?}\n{}", check.offending, narration);
            let allowed = admitted(&plan);
            let invented = (1u64..).map(|n| format!("9{n}7")).find(|n| !allowed.contains(n)).unwrap_or_default();
            let check = verify(&format!("{narration} It costs {invented} more."), &plan);
            prop_assert_eq!(check.offending, vec![invented]);
        }
    }
}
