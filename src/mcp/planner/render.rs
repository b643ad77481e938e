//! The text parts of the load planner's tools: a plan, its explanation, a
//! narration check, a save.

use std::fmt::Write;

use crate::artifacts::SavePlanResult;
use crate::mcp::render::{diagnostic_line, saved_files};
use crate::planner::PlanResult;
use crate::planner::explain::{Explanation, NarrationCheck};

pub fn load_plan(result: &PlanResult) -> String {
    let plan = &result.result;
    let mut text = format!(
        "Load plan {} ({} cards, solved by {}); recommended: {}\n",
        result.result_id,
        plan.cards.len(),
        plan.solver,
        plan.recommended
            .as_deref()
            .unwrap_or("none (no feasible card)")
    );
    for card in &plan.cards {
        let marker = if card.recommended {
            " (recommended)"
        } else {
            ""
        };
        let _ = write!(text, "- {}{marker}: {}", card.name, card.status);
        if let Some(reason) = &card.infeasible_reason {
            let _ = write!(text, " — {reason}");
        }
        if let Some(cost) = &card.cost {
            let _ = write!(
                text,
                "; cost {} (air {}, lcl {}, fcl {})",
                number(cost.total),
                number(cost.air),
                number(cost.lcl),
                number(cost.fcl)
            );
        }
        if !card.modes.is_empty() {
            let counts: Vec<String> = crate::planner::Mode::ALL
                .iter()
                .filter_map(|mode| {
                    let orders = card.modes.values().filter(|each| *each == mode).count();
                    (orders > 0).then(|| format!("{orders} {}", mode.as_str()))
                })
                .collect();
            let _ = write!(text, "; orders: {}", counts.join(", "));
        }
        if !card.containers.is_empty() {
            let containers: Vec<String> = card.containers.iter().map(ToString::to_string).collect();
            let _ = write!(text, "; containers: {}", containers.join(", "));
            let alone: Vec<String> = card
                .single_type_costs
                .iter()
                .map(|each| match (each.containers, each.cost) {
                    (Some(count), Some(cost)) => {
                        format!("{count} × {} {}", each.container_type, number(cost))
                    }
                    _ => format!("{} cannot hold them all", each.container_type),
                })
                .collect();
            if !alone.is_empty() {
                let _ = write!(text, " (one type alone: {})", alone.join(", "));
            }
        }
        if let Some(fill) = card.fill_rate {
            let _ = write!(text, "; fill rate {}", number(fill));
        }
        if let Some(miss) = card.miss_probability {
            let _ = write!(text, "; miss probability {}", number(miss));
        }
        if !card.within_policy {
            text.push_str("; outside policy");
        }
        if card.objective == crate::planner::Objective::LeastRisky {
            text.push_str(if card.within_policy {
                "; the least risky plan"
            } else {
                "; no plan meets the policy: the least risky plan"
            });
        }
        if let Some(checker) = &card.checker {
            let _ = write!(text, "; checker: {checker}");
        }
        text.push('\n');
    }
    for (mode, read) in &plan.modes {
        let _ = writeln!(
            text,
            "Mode {mode}: ETA p50 {} d, p90 {} d, CVaR90 delay {} d ({} delays)",
            read.eta_p50_days,
            read.eta_p90_days,
            number(read.cvar90_delay_days),
            read.delay_source
        );
    }
    for packing in &plan.packing {
        let _ = write!(
            text,
            "Packing {}: {} container(s), fill rate {}",
            packing.container_type,
            packing.containers,
            number(packing.fill_rate)
        );
        if !packing.unplaceable.is_empty() {
            let more = packing
                .unplaceable_pallets
                .saturating_sub(packing.unplaceable.len());
            let _ = write!(
                text,
                "; fits no {}: {}{}",
                packing.container_type,
                packing.unplaceable.join(", "),
                if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                }
            );
        }
        text.push('\n');
    }
    for note in &plan.notes {
        let _ = writeln!(text, "Note: {note}");
    }
    if let Some(card) = plan.cards.iter().find(|card| card.recommended) {
        orders_by_mode(&mut text, card);
    }
    text.push_str(
        "explain_load_plan puts the figures into words, with why each order goes by its mode.\n",
    );
    text
}

/// `Orders of optimised by air (1): PO-1001`, one line per mode the card
/// uses, the first [`crate::planner::NAMED`] ids named and the rest counted.
fn orders_by_mode(text: &mut String, card: &crate::planner::Card) {
    for mode in crate::planner::Mode::ALL {
        let ids: Vec<String> = card
            .modes
            .iter()
            .filter(|(_, each)| **each == mode)
            .map(|(id, _)| id.clone())
            .collect();
        if !ids.is_empty() {
            let _ = writeln!(
                text,
                "Orders of {} by {} ({}): {}",
                card.name,
                mode.as_str(),
                ids.len(),
                crate::planner::listed(&ids)
            );
        }
    }
}

/// A figure as Rust writes it (`5700`, `0.03`), never a signed zero.
fn number(value: f64) -> f64 {
    value + 0.0
}

pub fn explanation(explanation: &Explanation) -> String {
    let mut text = explanation.narration.clone();
    if !explanation.check.ok {
        let _ = writeln!(
            text,
            "Guard: offending tokens {}",
            explanation.check.offending.join(", ")
        );
    }
    text
}

pub fn narration_check(check: &NarrationCheck) -> String {
    if check.ok {
        format!(
            "Every number in the narration ({} token(s)) appears in the stored result.\n",
            check.tokens_checked
        )
    } else {
        format!(
            "Rejected: {} of {} numeric token(s) are not in the stored result: {}\n",
            check.offending.len(),
            check.tokens_checked,
            check.offending.join(", ")
        )
    }
}

pub fn saved_plan(result: &SavePlanResult) -> String {
    let mut text = format!("Save: {} — {}\n", result.status, result.message);
    diagnostic_line(&mut text, result.diagnostic.as_ref());
    let _ = writeln!(text, "Result id: {}", result.result_id);
    saved_files(&mut text, &result.files);
    text
}
