//! Words for a stored planner result, and the guard that checks any words
//! against it.
//!
//! `narrate` fills a fixed template by key lookup: every figure is the
//! stored value's own JSON text (a zero never signed), the recommended
//! card is found by the flag the planner set, its orders by mode and the
//! reasons for them are the groups the planner stored with each shipment,
//! and nothing on this path adds, rounds, converts or compares numbers.
//! `verify` scans a narration for numbers (`12`, `0.1246`, and `13,754.25`
//! or `1,000,000` written with thousands separators) and rejects any that
//! the stored result does not contain — as a value, or inside one of its
//! strings or keys (so `eta_p90_days` admits `90`). It is a lexical check
//! on numeric tokens: a right number under a wrong label still passes.

use std::collections::BTreeSet;
use std::fmt::Write;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Card, LoadPlan, Mode, Objective, Reason, Shipment, Why};

/// What the guard found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NarrationCheck {
    /// Every numeric token appears in the stored result.
    pub ok: bool,
    /// The tokens that do not, as written, in order of appearance.
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

/// The numeric tokens of `text`, as written: digit runs, with a fractional
/// part when a dot and digits follow. Digit runs joined by single commas
/// are one number when they are thousands groups — a first group of one to
/// three digits, then groups of exactly three (`13,754.25`, `1,000,000`);
/// otherwise each comma separates two numbers (`3,4`, `12,34,567`,
/// `1,2345`), and only the last run takes the fraction.
pub fn tokens(text: &str) -> Vec<String> {
    let bytes = text.as_bytes();
    // ASCII digits, commas and dots are single bytes in UTF-8, and no byte
    // of another character is one of them: byte offsets are char bounds.
    let digits_from = |mut at: usize| {
        while at < bytes.len() && bytes[at].is_ascii_digit() {
            at += 1;
        }
        at
    };
    let fraction_from = |at: usize| {
        if at + 1 < bytes.len() && bytes[at] == b'.' && bytes[at + 1].is_ascii_digit() {
            digits_from(at + 1)
        } else {
            at
        }
    };
    let mut found = Vec::new();
    let mut index = 0;
    while index < bytes.len() {
        if !bytes[index].is_ascii_digit() {
            index += 1;
            continue;
        }
        let mut runs = vec![(index, digits_from(index))];
        while let Some(&(_, end)) = runs.last()
            && end + 1 < bytes.len()
            && bytes[end] == b','
            && bytes[end + 1].is_ascii_digit()
        {
            runs.push((end + 1, digits_from(end + 1)));
        }
        let grouped = runs.len() > 1
            && (1..=3).contains(&(runs[0].1 - runs[0].0))
            && runs[1..].iter().all(|(start, end)| end - start == 3);
        let last = runs.len() - 1;
        let pieces: Vec<(usize, usize)> = if grouped {
            vec![(runs[0].0, runs[last].1)]
        } else {
            runs
        };
        for (number, (start, end)) in pieces.iter().enumerate() {
            let end = if number + 1 == pieces.len() {
                fraction_from(*end)
            } else {
                *end
            };
            found.push(text[*start..end].to_owned());
            index = end;
        }
    }
    found
}

/// A token's number: its thousands separators dropped.
fn number(token: &str) -> String {
    token.replace(',', "")
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
        Value::Number(value) => {
            let text = value.to_string();
            allowed.extend(tokens(&text).iter().map(|token| number(token)));
            // 11480.0 is also written 11480.
            if let Some(whole) = text.strip_suffix(".0") {
                allowed.insert(whole.to_owned());
            }
        }
        Value::String(text) => allowed.extend(tokens(text).iter().map(|token| number(token))),
        Value::Array(items) => items.iter().for_each(|item| collect(item, allowed)),
        Value::Object(map) => {
            for (key, item) in map {
                allowed.extend(tokens(key).iter().map(|token| number(token)));
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
        .filter(|token| !allowed.contains(&number(token)))
        .cloned()
        .collect();
    NarrationCheck {
        ok: offending.is_empty(),
        tokens_checked: found.len(),
        offending,
    }
}

/// A stored number as its JSON text; a zero is never signed (`-0.0 + 0.0`
/// is `0.0`, and every other number is itself).
fn shown(value: f64) -> String {
    Value::from(value + 0.0).to_string()
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
            by_mode(&mut text, card);
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

/// The recommended card's orders, by mode: each shipment's figures, then
/// its orders in the groups the planner stored, each with its reason.
fn by_mode(text: &mut String, card: &Card) {
    if card.shipments.is_empty() {
        return;
    }
    text.push_str("Which orders go by which mode, and why:\n");
    for shipment in &card.shipments {
        let cost = card.cost.as_ref().map(|cost| match shipment.mode {
            Mode::Air => cost.air,
            Mode::Lcl => cost.lcl,
            Mode::Fcl => cost.fcl,
        });
        let _ = write!(
            text,
            "- By {}, {} {}: arrives in {} days at the median and {} days at the 90th percentile, and misses its tightest deadline with {}; costs {}.",
            mode_words(shipment.mode),
            shipment.orders,
            if shipment.orders == 1 {
                "order"
            } else {
                "orders"
            },
            shipment.eta_p50_days,
            shipment.eta_p90_days,
            shown(shipment.miss_probability),
            shown_opt(cost),
        );
        for reason in &shipment.why {
            let _ = write!(text, " {}: {}.", who(reason), why(reason, shipment, card));
        }
        text.push('\n');
    }
}

fn mode_words(mode: Mode) -> &'static str {
    match mode {
        Mode::Air => "air",
        Mode::Lcl => "sea consolidation (LCL)",
        Mode::Fcl => "full containers (FCL)",
    }
}

/// A group's orders as stored: the names, and how many more (a group
/// after the shipment's ten names: how many more orders).
fn who(reason: &Reason) -> String {
    match (reason.named.as_slice(), reason.more) {
        ([], _) => format!(
            "{} more {}",
            reason.orders,
            if reason.orders == 1 {
                "order"
            } else {
                "orders"
            }
        ),
        (named, 0) => named.join(", "),
        (named, more) => format!("{} and {more} more", named.join(", ")),
    }
}

/// A group's reason in words.
fn why(reason: &Reason, shipment: &Shipment, card: &Card) -> String {
    let one = reason.orders == 1;
    let (its, deadline) = if one {
        ("its", "deadline")
    } else {
        ("their", "deadlines")
    };
    match reason.why {
        Why::Deadline => {
            format!("no other mode meets {its} {deadline} at the 90th percentile")
        }
        Why::Risk if card.within_policy => format!(
            "any other mode that meets {its} {deadline} would take the plan's chance of a miss over the policy"
        ),
        Why::Risk => format!(
            "any other mode that meets {its} {deadline} would raise the plan's chance of a miss"
        ),
        Why::Cost => format!(
            "another mode would meet {its} {deadline} within the policy, and the plan with {} here is the cheapest found",
            if one { "it" } else { "them" }
        ),
        Why::SingleMode => format!(
            "the card sends every order by {}",
            mode_words(shipment.mode)
        ),
    }
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
        let alone: Vec<String> = card
            .single_type_costs
            .iter()
            .map(|each| match (each.containers, each.cost) {
                (Some(count), Some(cost)) => {
                    format!("{count} × {} for {}", each.container_type, shown(cost))
                }
                _ => format!("{} cannot hold every pallet", each.container_type),
            })
            .collect();
        if !alone.is_empty() {
            let _ = write!(
                text,
                " (each type alone: {}; the mix booked costs {})",
                alone.join(", "),
                shown_opt(cost.map(|c| c.fcl))
            );
        }
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
                single_type_costs: Vec::new(),
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
            tokens("a 12.46% b 1,20 c 3. d v2.0.1 e-5"),
            vec!["12.46", "1", "20", "3", "2.0", "1", "5"]
        );
    }

    /// Thousands separators, adversarial first: a comma joins digit runs
    /// into one number only as thousands groups (one to three digits, then
    /// groups of exactly three); anywhere else it separates numbers.
    #[test]
    fn thousands_separators_join_only_groups_of_three() {
        for (text, want) in [
            ("13,754.25", vec!["13,754.25"]),
            ("1,000,000", vec!["1,000,000"]),
            ("1,000", vec!["1,000"]),
            ("999,999.5", vec!["999,999.5"]),
            ("costs 1,200.", vec!["1,200"]),
            ("3,4", vec!["3", "4"]),
            ("12,34,567", vec!["12", "34", "567"]),
            ("1,2345", vec!["1", "2345"]),
            ("1234,567", vec!["1234", "567"]),
            ("1,000,00", vec!["1", "000", "00"]),
            ("1,000,0000", vec!["1", "000", "0000"]),
            ("12,345,6789.5", vec!["12", "345", "6789.5"]),
            ("3,4.5", vec!["3", "4.5"]),
            ("1,,000", vec!["1", "000"]),
            ("1, 000", vec!["1", "000"]),
            ("1,000,", vec!["1,000"]),
            (",100", vec!["100"]),
            ("0.5,000", vec!["0.5", "000"]),
            ("1,000.25.7", vec!["1,000.25", "7"]),
            ("é1,000€", vec!["1,000"]),
        ] {
            assert_eq!(tokens(text), want, "{text}");
        }
    }

    #[test]
    fn the_guard_reads_a_grouped_number_as_one() {
        let mut plan = stored();
        plan.cards[0].cost = Some(CardCost {
            air: 13754.25,
            lcl: 0.0,
            fcl: 1000000.0,
            total: 1013754.25,
        });
        for narration in [
            "Air costs 13,754.25 of 1,013,754.25, containers 1,000,000.",
            "Air costs 13754.25.",
        ] {
            let check = verify(narration, &plan);
            assert!(check.ok, "{narration}: {:?}", check.offending);
        }
        for (narration, offending, checked) in [
            ("Air costs 13,755.25.", vec!["13,755.25"], 1),
            ("It is 13,754 and 25.", vec!["13,754", "25"], 2),
            // Not thousands groups: 1, 3754.25 — neither is stored.
            ("Air costs 1,3754.25.", vec!["1", "3754.25"], 2),
            ("A 1,000,00 total.", vec!["1", "000", "00"], 3),
        ] {
            let check = verify(narration, &plan);
            assert!(!check.ok, "{narration}");
            assert_eq!(check.offending, offending, "{narration}");
            assert_eq!(check.tokens_checked, checked, "{narration}");
        }
    }

    #[test]
    fn no_zero_is_shown_signed() {
        assert_eq!(shown(-0.0), "0.0");
        assert_eq!(shown(0.0), "0.0");
        assert_eq!(shown(-1.5), "-1.5");
        let mut plan = stored();
        plan.cards[0].miss_probability = Some(-0.0);
        plan.cards[0].cost = Some(CardCost {
            air: -0.0,
            lcl: -0.0,
            fcl: -0.0,
            total: -0.0,
        });
        let narration = narrate(&plan);
        assert!(!narration.contains("-0"), "{narration}");
        assert!(verify(&narration, &plan).ok);
    }

    /// A card that ships by two modes, with the groups the planner stores.
    fn mixed() -> LoadPlan {
        let mut plan = stored();
        let card = &mut plan.cards[0];
        card.name = "optimised".to_owned();
        card.objective = Objective::CheapestWithinPolicy;
        card.within_policy = true;
        card.cost = Some(CardCost {
            air: 3150.0,
            lcl: 0.0,
            fcl: 2900.0,
            total: 6050.0,
        });
        card.miss_probability = Some(0.03);
        card.containers = vec![crate::planner::ContainerCount {
            container_type: "40HC".to_owned(),
            count: 1,
        }];
        card.single_type_costs = vec![
            crate::planner::SingleTypeCost {
                container_type: "20GP".to_owned(),
                containers: Some(2),
                cost: Some(3600.0),
            },
            crate::planner::SingleTypeCost {
                container_type: "40HC".to_owned(),
                containers: Some(1),
                cost: Some(2900.0),
            },
        ];
        card.fill_rate = Some(0.512);
        let reason = |why, orders, named: &[&str], more| Reason {
            why,
            orders,
            named: named.iter().map(|name| (*name).to_owned()).collect(),
            more,
        };
        card.shipments = vec![
            Shipment {
                mode: Mode::Air,
                orders: 14,
                eta_p50_days: 3,
                eta_p90_days: 4,
                cvar90_delay_days: 2.4,
                miss_probability: 0.03,
                why: vec![
                    reason(Why::Deadline, 1, &["P-AIR"], 0),
                    reason(
                        Why::Risk,
                        13,
                        &[
                            "T-1", "T-2", "T-3", "T-4", "T-5", "T-6", "T-7", "T-8", "T-9",
                        ],
                        4,
                    ),
                ],
            },
            Shipment {
                mode: Mode::Fcl,
                orders: 1,
                eta_p50_days: 28,
                eta_p90_days: 33,
                cvar90_delay_days: 11.5,
                miss_probability: 0.0,
                why: vec![reason(Why::Cost, 1, &["P-LONG"], 0)],
            },
        ];
        plan.recommended = Some("optimised".to_owned());
        plan
    }

    #[test]
    fn the_narration_says_which_orders_go_by_which_mode_and_why() {
        let plan = mixed();
        let narration = narrate(&plan);
        let section = narration
            .split("Which orders go by which mode, and why:\n")
            .nth(1)
            .and_then(|rest| rest.split("All plans:").next())
            .unwrap_or_default();
        assert_eq!(
            section,
            "- By air, 14 orders: arrives in 3 days at the median and 4 days at the 90th percentile, and misses its tightest deadline with 0.03; costs 3150.0. \
             P-AIR: no other mode meets its deadline at the 90th percentile. \
             T-1, T-2, T-3, T-4, T-5, T-6, T-7, T-8, T-9 and 4 more: any other mode that meets their deadlines would take the plan's chance of a miss over the policy.\n\
             - By full containers (FCL), 1 order: arrives in 28 days at the median and 33 days at the 90th percentile, and misses its tightest deadline with 0.0; costs 2900.0. \
             P-LONG: another mode would meet its deadline within the policy, and the plan with it here is the cheapest found.\n",
            "{narration}"
        );
        assert!(
            narration.contains(
                "containers 1 × 40HC filled to 0.512 (each type alone: 2 × 20GP for 3600.0, 1 × 40HC for 2900.0; the mix booked costs 2900.0)"
            ),
            "{narration}"
        );
        let check = verify(&narration, &plan);
        assert!(check.ok, "{:?}\n{narration}", check.offending);
    }
}

#[cfg(test)]
mod properties {
    use super::*;
    use crate::planner::{CardCost, ContainerCount, ModeRead, PLANNER_FORMAT, SingleTypeCost};
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

    fn reason() -> impl Strategy<Value = Reason> {
        (
            prop_oneof![
                Just(Why::Deadline),
                Just(Why::Risk),
                Just(Why::Cost),
                Just(Why::SingleMode)
            ],
            any::<usize>(),
            prop::collection::vec(text(), 0..3),
            any::<usize>(),
        )
            .prop_map(|(why, orders, named, more)| Reason {
                why,
                orders,
                named,
                more,
            })
    }

    fn shipment() -> impl Strategy<Value = Shipment> {
        (
            prop_oneof![Just(Mode::Air), Just(Mode::Lcl), Just(Mode::Fcl)],
            any::<usize>(),
            (any::<u32>(), any::<u32>()),
            (number(), number()),
            prop::collection::vec(reason(), 0..3),
        )
            .prop_map(
                |(mode, orders, (eta_p50_days, eta_p90_days), (cvar, miss), why)| Shipment {
                    mode,
                    orders,
                    eta_p50_days,
                    eta_p90_days,
                    cvar90_delay_days: cvar,
                    miss_probability: miss,
                    why,
                },
            )
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
            prop::collection::vec(
                (
                    text(),
                    proptest::option::of(any::<u32>()),
                    proptest::option::of(number()),
                ),
                0..3,
            ),
            prop::collection::vec(shipment(), 0..3),
            prop_oneof![
                Just(Objective::LeastRisky),
                Just(Objective::Cheapest),
                Just(Objective::CheapestWithinPolicy)
            ],
        )
            .prop_map(
                |(
                    (name, feasible, reason, checker),
                    cost,
                    containers,
                    (fill, miss),
                    (within, recommended),
                    alone,
                    shipments,
                    objective,
                )| Card {
                    name,
                    objective,
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
                    single_type_costs: alone
                        .into_iter()
                        .map(|(container_type, containers, cost)| SingleTypeCost {
                            container_type,
                            containers,
                            cost,
                        })
                        .collect(),
                    fill_rate: fill,
                    shipments,
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

    /// A stored result with nothing in it.
    fn properties_plan() -> LoadPlan {
        LoadPlan {
            planner: PLANNER_FORMAT.to_owned(),
            solver: String::new(),
            cards: Vec::new(),
            modes: Default::default(),
            packing: Vec::new(),
            recommended: None,
            notes: Vec::new(),
        }
    }

    proptest! {
        #![proptest_config(crate::strategies::cases(256))]

        /// Every ASCII digit of any text belongs to exactly one token, and
        /// the tokens are digit runs with at most one fraction, in order.
        #[test]
        fn tokens_cover_every_digit_in_order(text in prop_oneof![any::<String>(), "[0-9. a-]{0,30}", "[0-9,. ]{0,30}"]) {
            let found = tokens(&text);
            let digits = text.chars().filter(char::is_ascii_digit).count();
            let in_tokens: usize = found.iter().map(|t| t.chars().filter(char::is_ascii_digit).count()).sum();
            prop_assert_eq!(digits, in_tokens);
            let mut rest = text.as_str();
            for token in &found {
                prop_assert!(token.starts_with(|c: char| c.is_ascii_digit()) && token.ends_with(|c: char| c.is_ascii_digit()));
                prop_assert!(token.matches('.').count() <= 1);
                // Commas only as thousands separators: groups of three after
                // a first group of one to three, all before the fraction.
                let whole = token.split('.').next().unwrap_or_default();
                let groups: Vec<&str> = whole.split(',').collect();
                prop_assert!(!token.split('.').nth(1).is_some_and(|fraction| fraction.contains(',')));
                if groups.len() > 1 {
                    prop_assert!((1..=3).contains(&groups[0].len()), "{:?}", token);
                    prop_assert!(groups[1..].iter().all(|group| group.len() == 3), "{:?}", token);
                }
                let at = rest.find(token.as_str());
                prop_assert!(at.is_some(), "{:?} not in order in {:?}", token, text);
                rest = &rest[at.unwrap_or(0) + token.len()..];
            }
        }

        /// A stored number written with thousands separators passes the
        /// guard; the same number one unit off does not.
        #[test]
        fn grouped_numbers_pass_and_others_do_not(whole in 1_000u64..1_000_000_000_000, cents in 0u64..100) {
            let value = whole as f64 + cents as f64 / 100.0;
            let mut plan = properties_plan();
            plan.notes = vec![serde_json::Value::from(value).to_string()];
            let plain = serde_json::Value::from(value).to_string();
            let (integer, fraction) = plain.split_once('.').unwrap_or((plain.as_str(), ""));
            let mut grouped = String::new();
            for (index, digit) in integer.chars().enumerate() {
                if index > 0 && (integer.len() - index) % 3 == 0 {
                    grouped.push(',');
                }
                grouped.push(digit);
            }
            let written = if fraction.is_empty() { grouped.clone() } else { format!("{grouped}.{fraction}") };
            let check = verify(&format!("It costs {written}."), &plan);
            prop_assert!(check.ok, "{} {:?}", written, check.offending);
            let off = format!("{}{}", &grouped[..grouped.len() - 1], if grouped.ends_with('9') { '8' } else { '9' });
            let off = if fraction.is_empty() { off } else { format!("{off}.{fraction}") };
            let check = verify(&format!("It costs {off}."), &plan);
            prop_assert_eq!(check.offending, vec![off]);
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
