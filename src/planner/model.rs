//! From a validated problem to the four cards: build the MiniZinc data (all
//! integers: cents, kg, litres, and the policy as log-space terms in
//! millionths), solve the bundled model once per card with the bundled
//! checker, and read back modes, containers and costs.
//!
//! The optimised card is solved with the policy as a constraint: the
//! cheapest plan whose chance of any miss is within it. When no plan is
//! (the constrained solve is unsatisfiable), two more solves find the least
//! risky plan and the cheapest of those, and a note says so. The card's
//! miss probability is always re-computed exactly in [`super::risk`]; the
//! model's rounded terms only ever make it stricter.
//!
//! Containers: the model books them by litres, what one container of a
//! type holds read off the packer's placements (`containers.rs`).
//! That is an estimate for a card whose FCL pallets are of several kinds,
//! so each card's containers are checked with the packer; when they are
//! not the cheapest mix found that the packer fills, the same plan is
//! solved again with that mix (`aggregated` data), and the checker
//! confirms what the card shows. Why each order goes by its mode is worked
//! out here, from the plan and the risk arithmetic, and stored with each
//! shipment for the narration to read.
//!
//! The model and checker are compiled into the binary (`models/` and
//! `checkers/` at the repository root) and written to a private temp dir for
//! each plan, so `cargo install` works anywhere and a person can run the same
//! files with plain `minizinc`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};

use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::containers::{self, Fit, Placed, TypeSpec};
use super::packer::{self, ContainerSpec, Packing, PalletUnit};
use super::problem::{ContainerType, LoadProblem};
use super::risk::{self, Distribution};
use super::{
    Card, CardCost, ContainerCount, LoadPlan, Mode, ModeRead, NAMED, Objective, PLANNER_FORMAT,
    PackingRead, Reason, Shipment, SingleTypeCost, Why, listed,
};
use crate::budget::Budget;
use crate::diagnostics::{Category, ToolError};
use crate::minizinc::{MiniZinc, SolveControls, SolveRequest, SolveResult, SolveStatus, Sources};
use crate::progress::{Progress, Stage};
use crate::runtime::SolverInfo;

/// The bundled model and checker.
pub const MODEL: &str = include_str!("../../models/load_planner/model.mzn");
/// The bundled checker that grades each card's solution.
pub const CHECKER: &str = include_str!("../../checkers/load_planner.mzc.mzn");

/// Budget of each card's solve; a solve that proves its optimum sooner ends
/// sooner.
const SOLVE_TIMEOUT: Budget = Budget::from_millis(20_000).unwrap();
/// The upper bound that bounds nothing (below the model's integer limit).
const NO_BOUND: i64 = 2_000_000_000;
/// MIP solvers the planner prefers when the runtime can run one: the model
/// is linear, and they prove its optimum where a CP search would only run
/// out of budget on a large cohort.
const MIP_SOLVERS: [&str; 2] = ["org.minizinc.mip.coin-bc", "org.minizinc.mip.highs"];
/// Without a MIP solver, Gecode searches, within a failure budget rather
/// than a clock, so a plan it cannot prove optimal is the same plan on any
/// machine, however busy: [`GECODE_FAILURES`] divided by the classes of
/// orders (a failure costs about a class's worth of propagation), between
/// the bounds below — about 2 to 4 s here for 330 or 10,000 classes. The
/// README's 1,000-pallet cohort proves its optimum within 1,000 failures.
const GECODE: &str = "org.gecode.gecode";
const GECODE_FAILURES: usize = 30_000_000;
const GECODE_FAILURES_BOUNDS: (usize, usize) = (1_000, 100_000);
/// Gecode copies its search state every few levels; a deep dive over
/// 10,000 classes took 2.4 GB at the default distances and 0.4 GB at
/// these (the search itself is the same).
const GECODE_COMMIT_DISTANCE: u32 = 64;
const GECODE_ADAPTION_DISTANCE: u32 = 8;

/// Gecode's failure budget for a model of `classes` classes.
fn gecode_failures(classes: usize) -> usize {
    (GECODE_FAILURES / classes.max(1)).clamp(GECODE_FAILURES_BOUNDS.0, GECODE_FAILURES_BOUNDS.1)
}

/// The flags that bound Gecode's search and memory for a model of
/// `classes` classes, spelled as `solver` declares them; none for another
/// solver, or a flag it does not declare.
fn search_flags(solver: &SolverInfo, classes: usize) -> Vec<String> {
    if solver.id != GECODE {
        return Vec::new();
    }
    let mut flags = Vec::new();
    for (name, value) in [
        ("fail", gecode_failures(classes).to_string()),
        ("c-d", GECODE_COMMIT_DISTANCE.to_string()),
        ("a-d", GECODE_ADAPTION_DISTANCE.to_string()),
    ] {
        if let Some(flag) = solver.capabilities.extra_flag(name) {
            flags.extend([flag.to_owned(), value]);
        }
    }
    flags
}

/// The four cards, in the order they are reported.
const CARDS: [(&str, Option<Mode>); 4] = [
    ("all_air", Some(Mode::Air)),
    ("all_lcl", Some(Mode::Lcl)),
    ("all_fcl", Some(Mode::Fcl)),
    ("optimised", None),
];

/// What one solve of the model is asked.
#[derive(Clone)]
struct Solve {
    /// The data file's stem in the scratch dir.
    file: &'static str,
    /// Every order on this mode; `None`: free.
    fixed: Option<Mode>,
    /// The most the used shipments' miss terms may sum to; `None`: no bound.
    miss_budget: Option<i64>,
    /// What the solve minimises.
    objective: Objective,
    /// The containers it may book, when not the cohort's own estimate.
    containers: Option<ContainerData>,
    /// The model's data, when not the cohort's (a repair's [`aggregated`]).
    data: Option<Arc<Map<String, Value>>>,
}

/// The model's data for a card's plan, one class per mode it uses: each
/// class is one "order" holding all of the card's orders on that mode
/// (their kilograms, litres and sea prices summed, the tightest deadline's
/// level), allowed only that mode. The model's costs, capacity and policy
/// terms are sums over a mode's orders, so the plan's figures are the
/// card's; a solve of it books containers for exactly that plan, and the
/// checker confirms the whole plan's figures (each order's mode was
/// confirmed by the card's own solve).
fn aggregated(cohort: &Cohort, card: &Card) -> Map<String, Value> {
    let mut level = vec![0; cohort.orders.len()];
    for class in &cohort.model.classes {
        for member in &class.members {
            if let Some(slot) = level.get_mut(*member) {
                *slot = class.level;
            }
        }
    }
    let unit = cohort.model.money_unit_cents;
    let mut classes: Vec<(Mode, [i64; 4], usize)> = Vec::new();
    for mode in Mode::ALL {
        let mut sums = [0i64; 4];
        let mut tightest = usize::MAX;
        for (index, order) in cohort.orders.iter().enumerate() {
            if card.modes.get(&order.id) == Some(&mode) {
                sums[0] += order.kg;
                sums[1] += order.volume_l;
                sums[2] += order.lcl_cents;
                sums[3] += to_units(order.lcl_cents, unit);
                tightest = tightest.min(level.get(index).copied().unwrap_or(1));
            }
        }
        if tightest != usize::MAX {
            classes.push((mode, sums, tightest));
        }
    }
    let column = |at: usize| {
        json!(
            classes
                .iter()
                .map(|(_, sums, _)| sums[at])
                .collect::<Vec<_>>()
        )
    };
    let mut data = cohort.model.data.clone();
    data.insert("n_classes".to_owned(), json!(classes.len()));
    data.insert("class_size".to_owned(), json!(vec![1; classes.len()]));
    data.insert("class_kg".to_owned(), column(0));
    data.insert("class_volume_l".to_owned(), column(1));
    data.insert("class_lcl_cents".to_owned(), column(2));
    data.insert("class_lcl_units".to_owned(), column(3));
    data.insert(
        "allowed".to_owned(),
        json!(
            classes
                .iter()
                .map(|(mode, _, _)| Mode::ALL.map(|each| each == *mode).to_vec())
                .collect::<Vec<_>>()
        ),
    );
    data.insert(
        "class_level".to_owned(),
        json!(
            classes
                .iter()
                .map(|(_, _, level)| *level)
                .collect::<Vec<_>>()
        ),
    );
    data
}

/// The containers a solve may book: what one container of each type holds
/// and how many of each, in the order of the types.
#[derive(Clone)]
struct ContainerData {
    capacity_l: Vec<i64>,
    max_count: Vec<u32>,
}

impl ContainerData {
    /// Exactly a mix the packer fills: at most its containers of each type,
    /// each holding its share of what the packer put in that type's
    /// containers (rounded up), so the mix holds the pallets in the model
    /// and no smaller mix does.
    fn of(placed: &Placed) -> ContainerData {
        ContainerData {
            capacity_l: placed
                .mix
                .iter()
                .zip(&placed.litres)
                .map(|(count, litres)| match i64::from(*count) {
                    0 => 0,
                    count => (litres + count - 1) / count,
                })
                .collect(),
            max_count: placed.mix.clone(),
        }
    }
}

/// A card as its solves settled it.
struct Settled {
    card: Card,
    /// The last solve's status.
    status: SolveStatus,
    /// The status of the card's first solve.
    first_status: SolveStatus,
    /// The card's containers were solved again: the cheapest mix the
    /// packer fills with its FCL pallets, for the same plan.
    repaired: bool,
    /// The packer fills neither the booked containers nor any mix it found.
    refused: bool,
}

/// One order, reduced to what the model needs.
struct OrderFacts {
    id: String,
    kg: i64,
    volume_l: i64,
    lcl_cents: i64,
    deadline_days: u32,
    allowed: [bool; 3],
    units: Vec<PalletUnit>,
}

/// A validated cohort, packed and reduced to the model's data.
struct Cohort {
    orders: Vec<OrderFacts>,
    fcl: FclFacts,
    packing: Vec<PackingRead>,
    reads: BTreeMap<Mode, ModeRead>,
    distributions: BTreeMap<Mode, Distribution>,
    model: ModelData,
    notes: Vec<String>,
}

impl Cohort {
    fn new(problem: &LoadProblem, progress: &Progress) -> Result<Cohort, ToolError> {
        let mut notes = Vec::new();
        let (reads, distributions) = mode_reads(problem);
        let mut orders = order_facts(problem, &reads, &mut notes);
        let pallets: usize = orders.iter().map(|order| order.units.len()).sum();
        progress.report_step(
            Stage::Running,
            1,
            STEPS,
            format!("packing {pallets} pallets into each container type"),
        );
        let (packing, fcl) = pack(problem, &mut orders, &mut notes);
        let model = model_data(problem, &orders, &fcl, &distributions)?;
        if model.money_unit_cents > 1 {
            notes.push(format!(
                "the cohort's costs are too large for the solver's integers in cents, so the solves compared costs in whole units of {} (each order's sea consolidation price and each container price rounded to the unit, air rounded up); every cost shown is exact to the cent",
                money(model.money_unit_cents)
            ));
        }
        Ok(Cohort {
            orders,
            fcl,
            packing,
            reads,
            distributions,
            model,
            notes,
        })
    }
}

/// Progress steps of a plan: packing, the four plans side by side, a
/// card's containers solved again as the packer fills them, and the least
/// risky plan when no plan meets the policy.
const STEPS: u32 = 4;

/// An amount of cents as a person reads it: `1.00`, `100.00`.
fn money(amount_cents: i64) -> String {
    format!("{}.{:02}", amount_cents / 100, amount_cents % 100)
}

/// The data of the free (optimised) solve as MiniZinc JSON, for a person
/// who wants to run `models/load_planner/model.mzn` with plain `minizinc`;
/// set `fixed_mode` to 1, 2 or 3 for the single-mode plans.
pub fn minizinc_data(problem: &LoadProblem) -> Result<Value, ToolError> {
    problem.validate()?;
    let cohort = Cohort::new(problem, &Progress::none())?;
    let mut data = cohort.model.data;
    data.insert("fixed_mode".to_owned(), json!(0));
    data.insert("upper_bound_units".to_owned(), json!(NO_BOUND));
    data.insert(
        "miss_budget".to_owned(),
        json!(risk::miss_budget(problem.policy.max_miss_probability).unwrap_or(-1)),
    );
    data.insert("objective".to_owned(), json!(0));
    Ok(Value::Object(data))
}

/// The solver the cards are solved with: the first MIP solver the runtime
/// can run, else its default.
async fn planner_solver(
    minizinc: &MiniZinc,
    cancel: &CancellationToken,
) -> Result<SolverInfo, ToolError> {
    if let Ok(list) = minizinc.runtime().solver_list(cancel).await
        && let Some(mip) = MIP_SOLVERS
            .iter()
            .find_map(|id| list.solvers.iter().find(|s| s.id == *id && s.available))
    {
        return Ok(mip.clone());
    }
    minizinc.select_solver(None, cancel).await
}

/// Plans a validated problem; on a terminal `progress` shows each step.
pub async fn plan(
    minizinc: &MiniZinc,
    problem: &LoadProblem,
    progress: &Progress,
    cancel: &CancellationToken,
) -> Result<LoadPlan, ToolError> {
    // Packing 100,000 pallets takes a moment: off the async threads.
    let owned = problem.clone();
    let packer_progress = progress.clone();
    let mut cohort =
        crate::userfiles::off_thread(move || Cohort::new(&owned, &packer_progress)).await?;
    let mut notes = std::mem::take(&mut cohort.notes);
    // Shared with the threads that check each card's containers.
    let cohort = Arc::new(cohort);
    let budget = risk::miss_budget(problem.policy.max_miss_probability);
    let chosen = planner_solver(minizinc, cancel).await?;
    let flags = search_flags(&chosen, cohort.model.classes.len());
    let solver = chosen.id;

    let dir = crate::exec::scratch_dir("solvergate-planner-")?;
    let model_path = dir.path().join("model.mzn");
    let checker_path = dir.path().join("load_planner.mzc.mzn");
    let write = |path: &std::path::Path, text: &str| {
        std::fs::write(path, text).map_err(|error| {
            ToolError::invalid(format!("could not write {}: {error}", path.display()))
        })
    };
    write(&model_path, MODEL)?;
    write(&checker_path, CHECKER)?;

    let solve_card = |solve: &Solve| {
        let mut card_data = solve.data.as_deref().unwrap_or(&cohort.model.data).clone();
        card_data.insert(
            "fixed_mode".to_owned(),
            json!(solve.fixed.map_or(0, Mode::number)),
        );
        card_data.insert("upper_bound_units".to_owned(), json!(NO_BOUND));
        card_data.insert(
            "miss_budget".to_owned(),
            json!(solve.miss_budget.unwrap_or(-1)),
        );
        card_data.insert(
            "objective".to_owned(),
            json!(i64::from(solve.objective == Objective::LeastRisky)),
        );
        if let Some(containers) = &solve.containers {
            card_data.insert("type_capacity_l".to_owned(), json!(containers.capacity_l));
            card_data.insert("type_max_count".to_owned(), json!(containers.max_count));
        }
        let data_path = dir.path().join(format!(
            "{}{}.json",
            solve.file,
            if solve.data.is_some() {
                "-containers"
            } else {
                ""
            }
        ));
        let model_path = model_path.clone();
        let checker_path = checker_path.clone();
        let solver = solver.clone();
        let solver_flags = flags.clone();
        async move {
            write(&data_path, &Value::Object(card_data).to_string())?;
            let request = SolveRequest {
                sources: Sources::Files {
                    model_path: model_path.to_string_lossy().into_owned(),
                    data_path: Some(data_path.to_string_lossy().into_owned()),
                    checker_path: Some(checker_path.to_string_lossy().into_owned()),
                },
                solver: Some(solver),
                timeout_ms: SOLVE_TIMEOUT,
                controls: SolveControls {
                    solver_flags,
                    ..SolveControls::default()
                },
            };
            minizinc.solve(&request, &Progress::none(), cancel).await
        }
    };
    // A card's solve, then the packer's word on the containers it booked.
    // The model books by its estimate of what a container holds; when that
    // is not the cheapest mix found that the packer fills with the card's
    // FCL pallets, the containers are solved again for the same plan
    // ([`aggregated`]), so the card books that mix and the checker confirms
    // the plan as it is reported.
    let fit = |name: &'static str,
               mut card: Card,
               result: SolveResult,
               miss_budget: Option<i64>,
               label: Objective| {
        let (solve_card, cohort) = (&solve_card, &cohort);
        async move {
            let first_status = result.status;
            let settled = |card, result: SolveResult, repaired, refused| Settled {
                card,
                status: result.status,
                first_status,
                repaired,
                refused,
            };
            let Some(confirmation) = confirm_card(cohort, &card).await? else {
                return Ok(settled(card, result, false, false));
            };
            card.single_type_costs = confirmation.alone;
            if confirmation.settled {
                return Ok(settled(card, result, false, false));
            }
            if let Some(cheapest) = &confirmation.cheapest {
                progress.report_step(
                    Stage::Running,
                    3,
                    STEPS,
                    format!("{name}: booking the cheapest containers the packer fills"),
                );
                let repair = Solve {
                    file: name,
                    fixed: None,
                    miss_budget,
                    objective: Objective::Cheapest,
                    containers: Some(ContainerData::of(cheapest)),
                    data: Some(Arc::new(aggregated(cohort, &card))),
                };
                let repaired = solve_card(&repair).await?;
                let mut again = self::card(
                    name,
                    label,
                    &repaired,
                    problem,
                    cohort,
                    OrderModes::Kept(&card),
                )?;
                // The same plan, so the same FCL pallets: booking exactly
                // the mix the packer filled settles it without packing them
                // again; any other booking is checked as the first was.
                let settled_again = if !again.feasible {
                    None
                } else if booked(&cohort.fcl, &again) == cheapest.mix {
                    Some(card.single_type_costs.clone())
                } else {
                    confirm_card(cohort, &again)
                        .await?
                        .filter(|confirmation| confirmation.settled)
                        .map(|confirmation| confirmation.alone)
                };
                if let Some(alone) = settled_again {
                    // The same plan with other containers: a plan the
                    // model admits, not one it proved the cheapest.
                    again.status = SolveStatus::Satisfied;
                    again.single_type_costs = alone;
                    return Ok(settled(again, repaired, true, false));
                }
            }
            card.feasible = false;
            card.within_policy = false;
            card.infeasible_reason = Some(
                "the packer does not fit the full-container pallets into the containers the solve booked, nor into a mix it found"
                    .to_owned(),
            );
            Ok(settled(card, result, false, true))
        }
    };
    let settle = |name: &'static str, solve: Solve, label: Objective| {
        let (solve_card, fit, cohort) = (&solve_card, &fit, &cohort);
        async move {
            let result = solve_card(&solve).await?;
            let card = card(name, label, &result, problem, cohort, OrderModes::Counted)?;
            fit(name, card, result, solve.miss_budget, label).await
        }
    };
    // The four plans side by side: the single-mode ones without the
    // policy (each is reported with its own miss probability), the free
    // one with the policy as a constraint. A single-mode plan within the
    // policy is also one the free solve may choose: when the free solve
    // ends with a dearer plan, or none, that plan is the optimised one. A
    // mode some order cannot take in time (or in a container) makes its
    // card infeasible before any solve.
    progress.report_step(
        Stage::Running,
        2,
        STEPS,
        format!(
            "solving the four plans with {solver} (at most {} s each)",
            SOLVE_TIMEOUT.duration().as_secs()
        ),
    );
    // All full containers: when every order may go so, its pallets are the
    // ones the cohort packed, and the solve books the cheapest mix found.
    let all_fcl_containers = cohort
        .fcl
        .cheapest
        .as_ref()
        .filter(|_| cohort.orders.iter().all(|order| order.allowed[2]))
        .map(ContainerData::of);
    let objective = match budget {
        Some(_) => Objective::CheapestWithinPolicy,
        None => Objective::Cheapest,
    };
    // Each one, as it ends, is news on the status line.
    let ended = AtomicUsize::new(0);
    let solves = CARDS.iter().map(|(name, fixed)| {
        let possible = fixed.is_none_or(|mode| {
            cohort
                .orders
                .iter()
                .all(|order| order.allowed[(mode.number() - 1) as usize])
        });
        let label = if fixed.is_some() {
            Objective::Cheapest
        } else {
            objective
        };
        let settling = settle(
            name,
            Solve {
                file: name,
                fixed: *fixed,
                miss_budget: if fixed.is_some() { None } else { budget },
                objective: label,
                containers: all_fcl_containers
                    .clone()
                    .filter(|_| *fixed == Some(Mode::Fcl)),
                data: None,
            },
            label,
        );
        let (ended, solver, cohort) = (&ended, &solver, &cohort);
        async move {
            let result = if possible {
                settling.await
            } else {
                Ok(unsolvable(name, &cohort.orders))
            };
            let count = ended.fetch_add(1, AtomicOrdering::Relaxed) + 1;
            progress.report_step(
                Stage::Running,
                2,
                STEPS,
                format!("solving the four plans with {solver}: {name} done ({count} of 4)"),
            );
            result
        }
    });
    let mut settled = Vec::new();
    for each in futures_util::future::join_all(solves).await {
        let each: Settled = each?;
        note_settled(&mut notes, &each);
        settled.push(each);
    }
    let free = settled
        .pop()
        .ok_or_else(|| ToolError::new(Category::Unknown, "the load planner solved no free plan"))?;
    let mut cards: Vec<Card> = settled.into_iter().map(|each| each.card).collect();
    let total = |card: &Card| card.cost.as_ref().map(|cost| cost.total);
    let best_single = cards
        .iter()
        .filter(|card| card.within_policy)
        .filter_map(|card| total(card).map(|total| (total, card.name.clone())))
        .min_by(|a, b| a.0.total_cmp(&b.0));
    let (mut optimised, free_refused, free_repaired, free_first, free_status) = (
        free.card,
        free.refused,
        free.repaired,
        free.first_status,
        free.status,
    );
    if optimised.feasible && free_first == SolveStatus::Satisfied {
        notes.push(if solver == GECODE {
            format!(
                "the free solve stopped at its search limit ({} failures of Gecode's search) or its {} s budget before proving the optimised plan the cheapest: it is the cheapest the search found (a runtime with a MIP solver such as COIN-BC proves the optimum)",
                gecode_failures(cohort.model.classes.len()),
                SOLVE_TIMEOUT.duration().as_secs()
            )
        } else {
            format!(
                "the free solve stopped at its {} s budget before proving the optimised plan the cheapest: it is the cheapest the search found",
                SOLVE_TIMEOUT.duration().as_secs()
            )
        });
    }
    let fallback = best_single
        .as_ref()
        .and_then(|(_, best)| cards.iter().find(|card| &card.name == best))
        .filter(|best| {
            !optimised.feasible
                || total(&optimised)
                    .zip(total(best))
                    .is_some_and(|(free, single)| free > single)
        });
    if let Some(fallback) = fallback {
        // Within its budget the free solve may find nothing better than
        // the best single-mode plan within the policy (a large cohort), at
        // the policy's very bound the model's rounding (always toward
        // refusing) may refuse what the exact figure admits, and the
        // containers the packer fills may cost more than the model's
        // estimate: that plan is then the optimised one too — never a
        // worse incumbent.
        let best = &fallback.name;
        notes.push(if free_refused {
            format!(
                "the packer does not fit the free solve's full-container pallets into any mix of containers it found; the optimised plan is {best}'s"
            )
        } else if optimised.feasible && free_repaired {
            format!(
                "the containers the packer fills with the free solve's full-container pallets cost more than the model's estimate, which made that plan dearer than {best}; the optimised plan is {best}'s"
            )
        } else if optimised.feasible {
            format!(
                "the free solve ({free_first}) found nothing as cheap as {best}{}; the optimised plan is {best}'s",
                if budget.is_some() {
                    " within the policy"
                } else {
                    ""
                }
            )
        } else if free_status == SolveStatus::Unsatisfiable {
            format!(
                "the model, whose rounding refuses plans within a few millionths of the policy's bound, admits no plan within the policy; the exact figure puts {best} within it, so the optimised plan is {best}'s"
            )
        } else {
            format!(
                "the free solve found nothing cheaper than {best}{} within {} s ({}); the optimised plan is {best}'s",
                if budget.is_some() {
                    " within the policy"
                } else {
                    ""
                },
                SOLVE_TIMEOUT.duration().as_secs(),
                free_status
            )
        });
        optimised = Card {
            name: "optimised".to_owned(),
            objective,
            // A plan the free model admits, not one it proved optimal.
            status: SolveStatus::Satisfied,
            recommended: false,
            ..fallback.clone()
        };
    } else if !optimised.feasible
        && !free_refused
        && budget.is_some()
        && free_status == SolveStatus::Unsatisfiable
    {
        // No plan meets the policy: the least risky plan, then the
        // cheapest of those (two solves, so the sum of the terms and the
        // cost never share one objective's integer).
        progress.report_step(
            Stage::Running,
            4,
            STEPS,
            "no plan meets the policy: solving for the least risky plan",
        );
        let least_risky = solve_card(&Solve {
            file: "least_risky",
            fixed: None,
            miss_budget: None,
            objective: Objective::LeastRisky,
            containers: None,
            data: None,
        })
        .await?;
        let least = card(
            "optimised",
            Objective::LeastRisky,
            &least_risky,
            problem,
            &cohort,
            OrderModes::Counted,
        )?;
        if least.feasible
            && let Some(solution) = &least_risky.solution
        {
            let units = int_at(solution, "plan_miss_units")?;
            let cheapest = settle(
                "optimised",
                Solve {
                    file: "least_risky_cheapest",
                    fixed: None,
                    miss_budget: Some(units),
                    objective: Objective::Cheapest,
                    containers: None,
                    data: None,
                },
                Objective::LeastRisky,
            )
            .await?;
            // The least risky plan's own containers are the packer's word
            // only when it is the one reported.
            let chosen = if cheapest.card.feasible {
                cheapest
            } else {
                fit("optimised", least, least_risky, None, Objective::LeastRisky).await?
            };
            note_settled(&mut notes, &chosen);
            optimised = chosen.card;
            notes.push(if optimised.within_policy {
                // Only at the policy's very bound, where the model's
                // rounding refuses what the exact figure admits.
                "the model, whose rounding refuses plans within a few millionths of the policy's bound, admits no plan within the policy; the optimised plan is the least risky one, and the cheapest of those, which the exact figure puts within it"
            } else {
                "no plan meets the policy (max_miss_probability): the optimised plan is the least risky one, and the cheapest of those"
            }
            .to_owned());
        }
    }
    cards.push(optimised);
    drop(dir);
    let recommended = recommend(&mut cards);
    for card in &mut cards {
        give_reasons(card, problem, &cohort);
    }
    Ok(LoadPlan {
        planner: PLANNER_FORMAT.to_owned(),
        solver,
        cards,
        modes: cohort
            .reads
            .iter()
            .map(|(mode, read)| (mode.as_str().to_owned(), read.clone()))
            .collect(),
        packing: cohort.packing.clone(),
        recommended,
        notes,
    })
}

impl Card {
    /// A card with no plan yet: not feasible, nothing booked, no figures;
    /// the solve's `status` and the checker's verdict as given.
    fn unplanned(
        name: &str,
        objective: Objective,
        status: SolveStatus,
        checker: Option<String>,
    ) -> Card {
        Card {
            name: name.to_owned(),
            objective,
            feasible: false,
            status,
            infeasible_reason: None,
            modes: BTreeMap::new(),
            cost: None,
            containers: Vec::new(),
            single_type_costs: Vec::new(),
            fill_rate: None,
            shipments: Vec::new(),
            miss_probability: None,
            checker,
            within_policy: false,
            recommended: false,
        }
    }
}

/// A single-mode card some order cannot take: infeasible from the data
/// alone (the model's `allowed` forbids it), as its solve would end.
fn unsolvable(name: &str, orders: &[OrderFacts]) -> Settled {
    let mut card = Card::unplanned(name, Objective::Cheapest, SolveStatus::Unsatisfiable, None);
    card.infeasible_reason = Some(infeasible_reason(name, orders));
    Settled {
        card,
        status: SolveStatus::Unsatisfiable,
        first_status: SolveStatus::Unsatisfiable,
        repaired: false,
        refused: false,
    }
}

/// The note a settled card leaves: its containers solved again as the
/// packer fills them, or refused by the packer.
fn note_settled(notes: &mut Vec<String>, settled: &Settled) {
    let name = &settled.card.name;
    if settled.refused {
        notes.push(format!(
            "{name}: the packer does not fit the card's full-container pallets into the containers its solve booked, nor into any mix it found"
        ));
    } else if settled.repaired {
        notes.push(format!(
            "{name}: the containers the model booked by its estimate of what a container holds were not the cheapest mix the packer fills with the card's full-container pallets, so the same plan was solved again with that mix, which the checker confirmed (a plan the model admits, not one it proved the cheapest)"
        ));
    }
}

/// The containers a card books, per type, in the order of the types.
fn booked(fcl: &FclFacts, card: &Card) -> Vec<u32> {
    fcl.types
        .iter()
        .map(|container| {
            card.containers
                .iter()
                .find(|booked| booked.container_type == container.name)
                .map_or(0, |booked| booked.count)
        })
        .collect()
}

/// The packer's word on a feasible card's containers, off the async
/// threads; `None` when no order of it goes by full container.
async fn confirm_card(
    cohort: &Arc<Cohort>,
    card: &Card,
) -> Result<Option<Confirmation>, ToolError> {
    if !card.feasible {
        return Ok(None);
    }
    let on_fcl: Vec<bool> = cohort
        .orders
        .iter()
        .map(|order| card.modes.get(&order.id) == Some(&Mode::Fcl))
        .collect();
    if !on_fcl.contains(&true) {
        return Ok(None);
    }
    let booked = booked(&cohort.fcl, card);
    let cohort = Arc::clone(cohort);
    crate::userfiles::off_thread(move || Ok(Some(confirm(&cohort, &on_fcl, &booked)))).await
}

fn transit_days(problem: &LoadProblem, mode: Mode) -> u32 {
    match mode {
        Mode::Air => problem.rates.air.transit_days,
        Mode::Lcl => problem.rates.lcl.transit_days,
        Mode::Fcl => problem.rates.fcl.transit_days,
    }
}

/// The chance that a shipment of `mode` whose tightest deadline is
/// `deadline_days` misses it, as its card reports it (6 decimals); the
/// model's policy terms are made of the same figures.
fn shipment_miss(
    problem: &LoadProblem,
    distributions: &BTreeMap<Mode, Distribution>,
    mode: Mode,
    deadline_days: u32,
) -> Option<f64> {
    let distribution = distributions.get(&mode)?;
    let miss = risk::miss_probability(transit_days(problem, mode), distribution, deadline_days);
    Some(round(miss, 6))
}

/// Each mode's risk read and distribution (given, else the seed).
fn mode_reads(problem: &LoadProblem) -> (BTreeMap<Mode, ModeRead>, BTreeMap<Mode, Distribution>) {
    let mut reads = BTreeMap::new();
    let mut distributions = BTreeMap::new();
    for mode in Mode::ALL {
        let table = match mode {
            Mode::Air => &problem.delays.air,
            Mode::Lcl => &problem.delays.lcl,
            Mode::Fcl => &problem.delays.fcl,
        };
        let transit = transit_days(problem, mode);
        let (distribution, source) = match table {
            Some(table) => (
                Distribution::from_table(table).unwrap_or_else(|_| Distribution::seed(mode)),
                "given",
            ),
            None => (Distribution::seed(mode), "seed"),
        };
        let risk = risk::mode_risk(transit, &distribution);
        reads.insert(
            mode,
            ModeRead {
                eta_p50_days: risk.eta_p50_days,
                eta_p90_days: risk.eta_p90_days,
                cvar90_delay_days: round(risk.cvar90_delay_days, 6),
                delay_source: source.to_owned(),
            },
        );
        distributions.insert(mode, distribution);
    }
    (reads, distributions)
}

fn order_facts(
    problem: &LoadProblem,
    reads: &BTreeMap<Mode, ModeRead>,
    notes: &mut Vec<String>,
) -> Vec<OrderFacts> {
    let per_cbm_cents = problem.rates.lcl.per_cbm * 100.0;
    let mut late = Vec::new();
    let orders = problem
        .orders
        .iter()
        .map(|order| {
            let mut kg = 0.0;
            let mut volume_l = 0i64;
            let mut units = Vec::new();
            for (line, pallet) in order.pallets.iter().enumerate() {
                let dims = [pallet.length_cm, pallet.width_cm, pallet.height_cm].map(|d| d.ceil());
                let litres = (dims[0] * dims[1] * dims[2] / 1000.0).ceil() as i64;
                volume_l += litres * i64::from(pallet.count);
                kg += pallet.weight_kg * f64::from(pallet.count);
                for copy in 1..=pallet.count {
                    units.push(PalletUnit {
                        label: format!("order {} line {} pallet {copy}", order.id, line + 1),
                        length_cm: dims[0] as u32,
                        width_cm: dims[1] as u32,
                        height_cm: dims[2] as u32,
                        weight_kg: pallet.weight_kg,
                        stackable: pallet.stackable,
                    });
                }
            }
            let allowed = Mode::ALL.map(|mode| {
                reads
                    .get(&mode)
                    .is_some_and(|read| read.eta_p90_days <= order.deadline_days)
            });
            if !allowed.iter().any(|ok| *ok) {
                let named = format!("order {} (deadline {} days)", order.id, order.deadline_days);
                late.push((
                    format!("{named} cannot arrive in time by any mode at the 90th percentile"),
                    named,
                ));
            }
            OrderFacts {
                id: order.id.clone(),
                kg: kg.ceil() as i64,
                volume_l,
                lcl_cents: (per_cbm_cents * volume_l as f64 / 1000.0).ceil() as i64,
                deadline_days: order.deadline_days,
                allowed,
                units,
            }
        })
        .collect();
    note_each(
        notes,
        late,
        "cannot arrive in time by any mode at the 90th percentile",
    );
    orders
}

/// Notes on orders, each given as (its own note, its name in a list): one
/// note per order when there are at most [`NAMED`], else one note
/// (`<n> orders <what>: <names>`) that names the first of them and counts
/// the rest.
fn note_each(notes: &mut Vec<String>, orders: Vec<(String, String)>, what: &str) {
    if orders.len() <= NAMED {
        notes.extend(orders.into_iter().map(|(note, _)| note));
    } else {
        let names: Vec<String> = orders.into_iter().map(|(_, name)| name).collect();
        notes.push(format!("{} orders {what}: {}", names.len(), listed(&names)));
    }
}

/// Container types as the model sees them, and the packer's placements of
/// every FCL-eligible pallet in each.
struct FclFacts {
    types: Vec<ContainerType>,
    /// The types as the packer and the search for the cheapest mix see them.
    specs: Vec<TypeSpec>,
    /// Litres one container of each type holds, by the packer's placements.
    capacity_l: Vec<i64>,
    /// Containers of each type alone for every eligible pallet.
    max_count: Vec<u32>,
    volume_l: Vec<f64>,
    /// Every pallet of the FCL-eligible orders, in input order.
    units: Vec<PalletUnit>,
    /// Each type's packing of `units`.
    packings: Vec<Packing>,
    /// The cheapest mix found that holds all of `units`.
    cheapest: Option<Placed>,
}

fn spec(container: &ContainerType) -> ContainerSpec {
    ContainerSpec {
        length_cm: container.length_cm.floor() as u32,
        width_cm: container.width_cm.floor() as u32,
        height_cm: container.height_cm.floor() as u32,
        max_payload_kg: container.max_payload_kg,
    }
}

fn fits(unit: &PalletUnit, spec: &ContainerSpec) -> bool {
    let floor = (unit.length_cm <= spec.length_cm && unit.width_cm <= spec.width_cm)
        || (unit.width_cm <= spec.length_cm && unit.length_cm <= spec.width_cm);
    floor && unit.height_cm <= spec.height_cm && unit.weight_kg <= spec.max_payload_kg
}

/// Which orders may go FCL, and the packer's fill rate per container type.
fn pack(
    problem: &LoadProblem,
    orders: &mut [OrderFacts],
    notes: &mut Vec<String>,
) -> (Vec<PackingRead>, FclFacts) {
    let types = problem.rates.fcl.containers.clone();
    let specs: Vec<ContainerSpec> = types.iter().map(spec).collect();
    let mut too_big = Vec::new();
    for order in orders.iter_mut() {
        if !order.allowed[2] {
            continue;
        }
        if let Some(unit) = order
            .units
            .iter()
            .find(|unit| !specs.iter().any(|spec| fits(unit, spec)))
        {
            order.allowed[2] = false;
            too_big.push((
                format!(
                    "order {} cannot go by full container: {} fits no container type",
                    order.id, unit.label
                ),
                order.id.clone(),
            ));
        }
    }
    note_each(
        notes,
        too_big,
        "cannot go by full container, each with a pallet that fits no container type",
    );
    let units: Vec<PalletUnit> = orders
        .iter()
        .filter(|order| order.allowed[2])
        .flat_map(|order| order.units.iter().cloned())
        .collect();
    let specs: Vec<TypeSpec> = types
        .iter()
        .zip(specs)
        .map(|(container, spec)| TypeSpec {
            spec,
            price_cents: cents(container.price),
        })
        .collect();
    let mut packing = Vec::new();
    let mut fcl = FclFacts {
        types: types.clone(),
        specs: Vec::new(),
        capacity_l: Vec::new(),
        max_count: Vec::new(),
        volume_l: Vec::new(),
        units: Vec::new(),
        packings: Vec::new(),
        cheapest: None,
    };
    for (container, kind) in types.iter().zip(&specs) {
        let spec = &kind.spec;
        let packed = packer::pack(&units, spec);
        let inner_l =
            f64::from(spec.length_cm) * f64::from(spec.width_cm) * f64::from(spec.height_cm)
                / 1000.0;
        // What a container holds is read off the packer's placements (the
        // litres of the pallets it put in each), not off the mean fill of
        // all of them, which the last container's remainder drags down.
        fcl.capacity_l
            .push(containers::capacity_l(&containers::loads_l(
                &packed, &units,
            )));
        fcl.max_count.push(packed.containers);
        fcl.volume_l.push(inner_l);
        packing.push(PackingRead {
            container_type: container.name.clone(),
            containers: packed.containers,
            fill_rate: round(packed.fill_rate, 6),
            unplaceable: packed.unplaceable.iter().take(NAMED).cloned().collect(),
            unplaceable_pallets: packed.unplaceable.len(),
        });
        fcl.packings.push(packed);
    }
    fcl.cheapest = Fit::packed(&units, &specs, &fcl.packings).cheapest();
    fcl.specs = specs;
    fcl.units = units;
    (packing, fcl)
}

/// What the packer says of a card's containers.
struct Confirmation {
    /// The booked mix holds the card's FCL pallets and costs no more than
    /// the cheapest mix found for them.
    settled: bool,
    /// Each type alone, for the card.
    alone: Vec<SingleTypeCost>,
    /// The cheapest mix found, to solve the card again with.
    cheapest: Option<Placed>,
}

/// Whether `booked` (containers per type) holds the pallets of the orders
/// `on_fcl` marks, as the packer places them, and is the cheapest mix
/// found for them.
fn confirm(cohort: &Cohort, on_fcl: &[bool], booked: &[u32]) -> Confirmation {
    let fcl = &cohort.fcl;
    let eligible = cohort
        .orders
        .iter()
        .zip(on_fcl)
        .all(|(order, fcl)| *fcl == order.allowed[2]);
    let units: Vec<PalletUnit>;
    let (fit, cheapest) = if eligible {
        // Every eligible order: the cohort's own packings serve.
        (
            Fit::packed(&fcl.units, &fcl.specs, &fcl.packings),
            fcl.cheapest.clone(),
        )
    } else {
        units = cohort
            .orders
            .iter()
            .zip(on_fcl)
            .filter(|(_, fcl)| **fcl)
            .flat_map(|(order, _)| order.units.iter().cloned())
            .collect();
        let fit = Fit::new(&units, &fcl.specs);
        let cheapest = fit.cheapest();
        (fit, cheapest)
    };
    let alone = fit
        .alone()
        .into_iter()
        .zip(&fcl.types)
        .zip(&fcl.specs)
        .map(|((containers, container), kind)| SingleTypeCost {
            container_type: container.name.clone(),
            containers,
            // As a card's costs are read: cents over 100.
            cost: containers.map(|count| (i64::from(count) * kind.price_cents) as f64 / 100.0),
        })
        .collect();
    let cost = containers::mix_cost(booked, &fcl.specs);
    let settled = fit.place(booked).is_some()
        && cheapest
            .as_ref()
            .is_none_or(|best| cost <= best.cost_cents(&fcl.specs));
    Confirmation {
        settled,
        alone,
        cheapest,
    }
}

fn cents(amount: f64) -> i64 {
    (amount * 100.0).round() as i64
}

/// Orders the model cannot tell apart: the same weight, volume, LCL price,
/// allowed modes and deadline. The model chooses how many of a class go by
/// each mode; [`card`] hands the members out in input order.
#[derive(Debug, Clone)]
struct Class {
    /// Indices into the orders, in input order.
    members: Vec<usize>,
    /// The deadline's level: 1 is the tightest deadline of the cohort.
    level: usize,
    /// The modes its orders may take (air, LCL, FCL).
    allowed: [bool; 3],
}

/// What the model is given, beside the per-solve settings.
struct ModelData {
    data: Map<String, Value>,
    classes: Vec<Class>,
    /// Cents per money unit of the solve's costs (1: exact cents).
    money_unit_cents: i64,
}

/// Largest integer the model's solve-side figures may reach: CP solvers
/// (Gecode, Chuffed) have 32-bit integers.
const SOLVER_INT_MAX: i64 = 2_000_000_000;

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 { a.abs() } else { gcd(b, a % b) }
}

/// `cents` in money units of `unit` cents, to the nearest unit (halves up).
fn to_units(cents: i64, unit: i64) -> i64 {
    (cents + unit / 2) / unit
}

/// The classes' part of the model's data: their sizes, one member's
/// figures, the modes they may take and their deadlines' levels.
fn class_data(classes: &[Class], orders: &[OrderFacts], unit: i64, data: &mut Map<String, Value>) {
    let first = |class: &Class| class.members.first().and_then(|index| orders.get(*index));
    let per_class = |figure: &dyn Fn(&OrderFacts) -> i64| {
        json!(
            classes
                .iter()
                .map(|class| first(class).map_or(0, figure))
                .collect::<Vec<_>>()
        )
    };
    data.insert("n_classes".to_owned(), json!(classes.len()));
    data.insert(
        "class_size".to_owned(),
        json!(classes.iter().map(|c| c.members.len()).collect::<Vec<_>>()),
    );
    data.insert("class_kg".to_owned(), per_class(&|o| o.kg));
    data.insert("class_volume_l".to_owned(), per_class(&|o| o.volume_l));
    data.insert("class_lcl_cents".to_owned(), per_class(&|o| o.lcl_cents));
    data.insert(
        "class_lcl_units".to_owned(),
        per_class(&|o| to_units(o.lcl_cents, unit)),
    );
    data.insert(
        "allowed".to_owned(),
        json!(
            classes
                .iter()
                .map(|class| class.allowed.to_vec())
                .collect::<Vec<_>>()
        ),
    );
    data.insert(
        "class_level".to_owned(),
        json!(classes.iter().map(|c| c.level).collect::<Vec<_>>()),
    );
}

/// The model's data, without `fixed_mode`, `upper_bound_units`,
/// `miss_budget` and `objective`; refuses a cohort whose weights or volumes
/// would overflow the solve's integers, and picks the money unit so its
/// costs fit them.
fn model_data(
    problem: &LoadProblem,
    orders: &[OrderFacts],
    fcl: &FclFacts,
    distributions: &BTreeMap<Mode, Distribution>,
) -> Result<ModelData, ToolError> {
    let rates = &problem.rates;
    let divisor = rates.air.volumetric_divisor.round().max(1.0) as i64;
    let common = gcd(1000, divisor);
    let (volume_num, volume_den) = (1000 / common, divisor / common);
    let total_kg: i64 = orders.iter().map(|order| order.kg).sum();
    let total_l: i64 = orders.iter().map(|order| order.volume_l).sum();
    let chargeable = total_kg.max((total_l * volume_num + volume_den - 1) / volume_den);
    let container_l: i64 = fcl
        .capacity_l
        .iter()
        .zip(&fcl.max_count)
        .map(|(litres, count)| litres * i64::from(*count))
        .sum();
    let container_kg: i64 = fcl
        .types
        .iter()
        .zip(&fcl.max_count)
        .map(|(t, count)| t.max_payload_kg.floor() as i64 * i64::from(*count))
        .sum();
    let quantities = [
        total_kg,
        total_l.saturating_mul(volume_num),
        chargeable.saturating_mul(volume_den),
        container_l,
        container_kg,
    ];
    if quantities.iter().any(|amount| *amount >= SOLVER_INT_MAX) {
        return Err(ToolError::invalid(format!(
            "the cohort is too large for the planner's integer model: its weight ({} t), volume ({} m³) or container capacity must stay below 2,000,000 (t, m³, and m³ per kg of air volumetric weight); split it into smaller cohorts",
            total_kg / 1000,
            total_l / 1000
        )));
    }
    let per_kg_cents = cents(rates.air.per_kg);
    let air_min_cents = cents(rates.air.min_charge);
    let lcl_min_cents = (rates.lcl.min_cbm * rates.lcl.per_cbm * 100.0).ceil() as i64;
    let price_cents: Vec<i64> = fcl.types.iter().map(|t| cents(t.price)).collect();
    // The most any plan can cost, in cents, decides the money unit: the
    // solve's costs, with each order's rounding, must fit its integers.
    let worst = (per_kg_cents as f64) * (chargeable as f64)
        + air_min_cents as f64
        + orders
            .iter()
            .map(|order| order.lcl_cents as f64)
            .sum::<f64>()
        + lcl_min_cents as f64
        + price_cents
            .iter()
            .zip(&fcl.max_count)
            .map(|(price, count)| *price as f64 * f64::from(*count))
            .sum::<f64>();
    let slack = orders.len() as f64 + 10.0;
    let mut unit = 1i64;
    while worst / unit as f64 + slack >= SOLVER_INT_MAX as f64 && unit < 1_000_000_000_000 {
        unit *= 10;
    }
    // The policy's terms: one per mode and distinct deadline (a shipment's
    // term is that of its tightest deadline).
    let levels: Vec<u32> = orders
        .iter()
        .map(|order| order.deadline_days)
        .collect::<std::collections::BTreeSet<u32>>()
        .into_iter()
        .collect();
    let level_of = |deadline: u32| levels.partition_point(|level| *level < deadline) + 1;
    let mut classes: Vec<Class> = Vec::new();
    let mut class_of: BTreeMap<(i64, i64, i64, [bool; 3], u32), usize> = BTreeMap::new();
    for (index, order) in orders.iter().enumerate() {
        let key = (
            order.kg,
            order.volume_l,
            order.lcl_cents,
            order.allowed,
            order.deadline_days,
        );
        let slot = *class_of.entry(key).or_insert_with(|| {
            classes.push(Class {
                members: Vec::new(),
                level: level_of(order.deadline_days),
                allowed: order.allowed,
            });
            classes.len() - 1
        });
        classes[slot].members.push(index);
    }
    let mut data = Map::new();
    class_data(&classes, orders, unit, &mut data);
    data.insert("money_unit_cents".to_owned(), json!(unit));
    data.insert("air_per_kg_cents".to_owned(), json!(per_kg_cents));
    data.insert("air_min_charge_cents".to_owned(), json!(air_min_cents));
    data.insert(
        "air_min_charge_units".to_owned(),
        json!(to_units(air_min_cents, unit)),
    );
    data.insert("air_volumetric_divisor".to_owned(), json!(divisor));
    data.insert("air_volume_num".to_owned(), json!(volume_num));
    data.insert("air_volume_den".to_owned(), json!(volume_den));
    data.insert("lcl_min_charge_cents".to_owned(), json!(lcl_min_cents));
    data.insert(
        "lcl_min_charge_units".to_owned(),
        json!(to_units(lcl_min_cents, unit)),
    );
    data.insert("n_types".to_owned(), json!(fcl.types.len()));
    data.insert("type_capacity_l".to_owned(), json!(fcl.capacity_l));
    data.insert(
        "type_payload_kg".to_owned(),
        json!(
            fcl.types
                .iter()
                .map(|t| t.max_payload_kg.floor() as i64)
                .collect::<Vec<_>>()
        ),
    );
    data.insert(
        "type_price_units".to_owned(),
        json!(
            price_cents
                .iter()
                .map(|price| to_units(*price, unit))
                .collect::<Vec<_>>()
        ),
    );
    data.insert("type_price_cents".to_owned(), json!(price_cents));
    data.insert("type_max_count".to_owned(), json!(fcl.max_count));
    data.insert("n_levels".to_owned(), json!(levels.len()));
    data.insert("miss_units_cap".to_owned(), json!(risk::MISS_UNITS_CAP));
    data.insert(
        "miss_units".to_owned(),
        json!(
            Mode::ALL
                .iter()
                .map(|mode| levels
                    .iter()
                    .map(|deadline| risk::miss_units(
                        shipment_miss(problem, distributions, *mode, *deadline).unwrap_or(1.0)
                    ))
                    .collect::<Vec<_>>())
                .collect::<Vec<_>>()
        ),
    );
    Ok(ModelData {
        data,
        classes,
        money_unit_cents: unit,
    })
}

fn int_at(solution: &Map<String, Value>, key: &str) -> Result<i64, ToolError> {
    solution.get(key).and_then(Value::as_i64).ok_or_else(|| {
        ToolError::new(
            Category::Unknown,
            format!("the load planner model's solution has no integer {key}"),
        )
    })
}

fn ints_at(solution: &Map<String, Value>, key: &str) -> Result<Vec<i64>, ToolError> {
    solution
        .get(key)
        .and_then(Value::as_array)
        .map(|values| values.iter().filter_map(Value::as_i64).collect())
        .ok_or_else(|| {
            ToolError::new(
                Category::Unknown,
                format!("the load planner model's solution has no array {key}"),
            )
        })
}

/// Each order's mode number, from the solution's count of each class's
/// orders per mode: a class's members (in input order) take air first,
/// then LCL, then FCL. The members are interchangeable in the model, so
/// this is the plan the solver chose.
fn order_modes(
    classes: &[Class],
    n_orders: usize,
    solution: &Map<String, Value>,
) -> Result<Vec<i64>, ToolError> {
    let malformed = || {
        ToolError::new(
            Category::Unknown,
            "the load planner model's solution has no count of orders per class and mode",
        )
    };
    let rows = solution
        .get("count")
        .and_then(Value::as_array)
        .ok_or_else(malformed)?;
    if rows.len() != classes.len() {
        return Err(malformed());
    }
    let mut modes = vec![0; n_orders];
    for (class, row) in classes.iter().zip(rows) {
        let counts: Vec<usize> = row
            .as_array()
            .map(|row| {
                row.iter()
                    .filter_map(Value::as_u64)
                    .map(|n| n as usize)
                    .collect()
            })
            .unwrap_or_default();
        if counts.len() != 3 || counts.iter().sum::<usize>() != class.members.len() {
            return Err(malformed());
        }
        let mut members = class.members.iter();
        for (mode, count) in Mode::ALL.iter().zip(counts) {
            for index in members.by_ref().take(count) {
                modes[*index] = mode.number();
            }
        }
    }
    Ok(modes)
}

/// Where a card's orders' modes come from: the solve's count of each of
/// the cohort's classes per mode, or an earlier card whose plan the solve
/// (of [`aggregated`] data) only books containers for.
#[derive(Clone, Copy)]
enum OrderModes<'a> {
    Counted,
    Kept(&'a Card),
}

/// Reads one solve into a card (without the recommendation).
fn card(
    name: &str,
    objective: Objective,
    result: &SolveResult,
    problem: &LoadProblem,
    cohort: &Cohort,
    modes: OrderModes,
) -> Result<Card, ToolError> {
    let orders = &cohort.orders;
    let fcl = &cohort.fcl;
    let distributions = &cohort.distributions;
    let checker = result
        .checker
        .as_ref()
        .and_then(|report| report.checks.last())
        .map(|check| check.output.trim().to_owned());
    let mut card = Card::unplanned(name, objective, result.status, checker.clone());
    let solution = match (&result.solution, result.status) {
        (Some(solution), SolveStatus::Optimal | SolveStatus::Satisfied) => solution,
        (_, SolveStatus::Unsatisfiable) => {
            card.infeasible_reason = Some(infeasible_reason(name, orders));
            return Ok(card);
        }
        (_, status) => {
            card.infeasible_reason = Some(format!(
                "the solve ended {status}{}",
                result
                    .diagnostic
                    .as_ref()
                    .map_or(String::new(), |d| format!(": {}", d.message))
            ));
            return Ok(card);
        }
    };
    let modes = match modes {
        OrderModes::Counted => order_modes(&cohort.model.classes, orders.len(), solution)?,
        OrderModes::Kept(earlier) => orders
            .iter()
            .map(|order| earlier.modes.get(&order.id).map_or(0, |mode| mode.number()))
            .collect(),
    };
    let containers = ints_at(solution, "containers")?;
    for (order, number) in orders.iter().zip(&modes) {
        let mode = Mode::from_number(*number).ok_or_else(|| {
            ToolError::new(Category::Unknown, format!("the model chose mode {number}"))
        })?;
        card.modes.insert(order.id.clone(), mode);
    }
    let money = |key: &str| int_at(solution, key).map(|c| c as f64 / 100.0);
    card.cost = Some(CardCost {
        air: money("air_cents")?,
        lcl: money("lcl_cents")?,
        fcl: money("fcl_cents")?,
        total: money("total_cents")?,
    });
    let mut booked_l = 0.0;
    for ((container, count), inner_l) in fcl.types.iter().zip(&containers).zip(&fcl.volume_l) {
        if *count > 0 {
            card.containers.push(ContainerCount {
                container_type: container.name.clone(),
                count: u32::try_from(*count).unwrap_or(0),
            });
            booked_l += *count as f64 * inner_l;
        }
    }
    let fcl_l: i64 = orders
        .iter()
        .zip(&modes)
        .filter(|(_, mode)| **mode == Mode::Fcl.number())
        .map(|(order, _)| order.volume_l)
        .sum();
    card.fill_rate = (booked_l > 0.0).then(|| round(fcl_l as f64 / booked_l, 6));
    for mode in Mode::ALL {
        let on_mode: Vec<&OrderFacts> = orders
            .iter()
            .zip(&modes)
            .filter(|(_, number)| **number == mode.number())
            .map(|(order, _)| order)
            .collect();
        let Some(tightest) = on_mode.iter().map(|order| order.deadline_days).min() else {
            continue;
        };
        let Some(distribution) = distributions.get(&mode) else {
            continue;
        };
        let Some(miss) = shipment_miss(problem, distributions, mode, tightest) else {
            continue;
        };
        let read = risk::mode_risk(transit_days(problem, mode), distribution);
        card.shipments.push(Shipment {
            mode,
            orders: on_mode.len(),
            eta_p50_days: read.eta_p50_days,
            eta_p90_days: read.eta_p90_days,
            cvar90_delay_days: round(read.cvar90_delay_days, 6),
            miss_probability: miss,
            why: Vec::new(),
        });
    }
    let misses: Vec<f64> = card.shipments.iter().map(|s| s.miss_probability).collect();
    let miss = round(risk::any_miss(&misses), 6);
    card.miss_probability = Some(miss);
    // The checker's typed verdict decides, not its text.
    let accepted = result
        .checker
        .as_ref()
        .is_some_and(|report| report.verdict.is_accepted());
    card.feasible = accepted;
    if !card.feasible {
        let reason = result
            .checker
            .as_ref()
            .and_then(|report| report.reason.clone())
            .or_else(|| checker.clone())
            .unwrap_or_else(|| "no verdict".to_owned());
        card.infeasible_reason = Some(format!(
            "the checker did not confirm the solution: {reason}"
        ));
    }
    card.within_policy = card.feasible && miss <= problem.policy.max_miss_probability;
    Ok(card)
}

/// Why each order of a feasible card goes by its mode, by shipment: no
/// other mode meets its deadline; every other would take the plan's chance
/// of a miss over the policy (for a plan outside it, the least risky:
/// raise it), re-computed exactly as the card's is; or another would do,
/// and the plan with it here is the cheapest found — the optimised card's
/// and the recommended one's. Another single-mode card sends every order
/// by its mode. Each shipment names its first [`NAMED`] orders, in input
/// order, across its groups.
fn give_reasons(card: &mut Card, problem: &LoadProblem, cohort: &Cohort) {
    if !card.feasible {
        return;
    }
    let fixed = !card.recommended
        && CARDS
            .iter()
            .any(|(name, mode)| *name == card.name && mode.is_some());
    let slot = |mode: Mode| (mode.number() - 1) as usize;
    let on: Vec<Option<Mode>> = cohort
        .orders
        .iter()
        .map(|order| card.modes.get(&order.id).copied())
        .collect();
    // Each mode's deadlines on the card, tightest first.
    let mut deadlines: [Vec<u32>; 3] = Default::default();
    for (order, mode) in cohort.orders.iter().zip(&on) {
        if let Some(mode) = mode {
            deadlines[slot(*mode)].push(order.deadline_days);
        }
    }
    for each in &mut deadlines {
        each.sort_unstable();
    }
    let miss = |mode: Mode, tightest: Option<u32>| {
        tightest
            .and_then(|deadline| shipment_miss(problem, &cohort.distributions, mode, deadline))
            .unwrap_or(0.0)
    };
    let now: [f64; 3] = Mode::ALL.map(|mode| miss(mode, deadlines[slot(mode)].first().copied()));
    let plan_miss = |shipments: &[f64; 3]| round(risk::any_miss(shipments), 6);
    // Within the policy, a move must keep the plan within it; outside it
    // (the least risky plan), a move must not raise its chance of a miss.
    let bound = if card.within_policy {
        Some(problem.policy.max_miss_probability)
    } else {
        Some(plan_miss(&now))
    };
    // The plan's chance of a miss with `order` moved from `from` to `to`.
    let moved = |order: &OrderFacts, from: Mode, to: Mode| {
        let mut shipments = now;
        let left = &deadlines[slot(from)];
        // Without the order, its shipment's tightest deadline is the next
        // one when the order alone held it.
        let tightest = match left.as_slice() {
            [first, second, ..] if *first == order.deadline_days => Some(*second),
            [first, ..] if *first == order.deadline_days => None,
            [first, ..] => Some(*first),
            [] => None,
        };
        shipments[slot(from)] = miss(from, tightest);
        let joined = deadlines[slot(to)]
            .first()
            .map_or(order.deadline_days, |first| {
                (*first).min(order.deadline_days)
            });
        shipments[slot(to)] = miss(to, Some(joined));
        plan_miss(&shipments)
    };
    let mut groups: [[Vec<usize>; 4]; 3] = Default::default();
    for (index, (order, mode)) in cohort.orders.iter().zip(&on).enumerate() {
        let Some(mode) = *mode else {
            continue;
        };
        let others: Vec<Mode> = Mode::ALL
            .into_iter()
            .filter(|other| *other != mode && order.allowed[slot(*other)])
            .collect();
        let why = if others.is_empty() {
            Why::Deadline
        } else if fixed {
            Why::SingleMode
        } else if bound.is_some_and(|bound| {
            others
                .iter()
                .all(|other| moved(order, mode, *other) > bound)
        }) {
            Why::Risk
        } else {
            Why::Cost
        };
        groups[slot(mode)][why as usize].push(index);
    }
    for shipment in &mut card.shipments {
        let mut quota = NAMED;
        shipment.why = [Why::Deadline, Why::Risk, Why::Cost, Why::SingleMode]
            .into_iter()
            .zip(&groups[slot(shipment.mode)])
            .filter(|(_, members)| !members.is_empty())
            .map(|(why, members)| {
                let named: Vec<String> = members
                    .iter()
                    .take(quota)
                    .filter_map(|index| cohort.orders.get(*index))
                    .map(|order| order.id.clone())
                    .collect();
                quota -= named.len();
                Reason {
                    why,
                    orders: members.len(),
                    more: members.len() - named.len(),
                    named,
                }
            })
            .collect();
    }
}

fn infeasible_reason(name: &str, orders: &[OrderFacts]) -> String {
    let fixed = CARDS
        .iter()
        .find(|(card, _)| *card == name)
        .and_then(|(_, mode)| *mode);
    let blocked: Vec<String> = orders
        .iter()
        .filter(|order| match fixed {
            Some(mode) => !order.allowed[(mode.number() - 1) as usize],
            None => !order.allowed.iter().any(|ok| *ok),
        })
        .map(|order| order.id.clone())
        .collect();
    match (fixed, blocked.is_empty()) {
        (Some(mode), false) => format!(
            "{} cannot go by {}: at the 90th percentile it arrives after the deadline, or a pallet fits no container",
            listed(&blocked),
            mode.as_str()
        ),
        (None, false) => format!("no mode carries {} in time", listed(&blocked)),
        _ => "the containers cannot hold the full-container orders".to_owned(),
    }
}

/// Marks the recommended card: the cheapest within the policy, else the
/// least risky; ties go to the earlier card.
fn recommend(cards: &mut [Card]) -> Option<String> {
    let cost = |card: &Card| card.cost.as_ref().map_or(f64::INFINITY, |c| c.total);
    let miss = |card: &Card| card.miss_probability.unwrap_or(1.0);
    let mut best: Option<usize> = None;
    for (index, card) in cards.iter().enumerate() {
        if !card.feasible {
            continue;
        }
        best = match best {
            None => Some(index),
            Some(current) => {
                let other = &cards[current];
                let better = match (card.within_policy, other.within_policy) {
                    (true, false) => true,
                    (false, true) => false,
                    (true, true) => cost(card) < cost(other),
                    (false, false) => {
                        miss(card) < miss(other)
                            || (miss(card) == miss(other) && cost(card) < cost(other))
                    }
                };
                Some(if better { index } else { current })
            }
        };
    }
    let index = best?;
    cards[index].recommended = true;
    Some(cards[index].name.clone())
}

/// Rounds to `places` decimals (results carry no float noise), and never
/// to a signed zero: a figure that rounds to nothing is `0.0`.
fn round(value: f64, places: i32) -> f64 {
    let scale = 10f64.powi(places);
    // -0.0 + 0.0 is 0.0.
    (value * scale).round() / scale + 0.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::planner::problem::generated;

    fn gecode(extra: &str) -> SolverInfo {
        let json = format!(
            r#"[{{"id": "org.gecode.gecode", "stdFlags": ["-a"], "extraFlags": [["{extra}fail", "", "int", "0"], ["{extra}c-d", "", "int", "8"], ["{extra}a-d", "", "int", "2"]]}}]"#
        );
        crate::runtime::SolverCatalog::parse(&json).unwrap().solvers[0].clone()
    }

    #[test]
    fn gecode_searches_within_a_failure_budget_that_shrinks_with_the_classes() {
        assert_eq!(
            search_flags(&gecode("-"), 330),
            ["-fail", "90909", "-c-d", "64", "-a-d", "8"]
        );
        assert_eq!(
            search_flags(&gecode("--"), 10_000),
            ["--fail", "3000", "--c-d", "64", "--a-d", "8"]
        );
        assert_eq!(search_flags(&gecode("-"), 1)[1], "100000");
        assert_eq!(search_flags(&gecode("-"), 1_000_000)[1], "1000");
        let mut other = gecode("-");
        other.id = "org.minizinc.mip.coin-bc".to_owned();
        assert!(search_flags(&other, 10).is_empty());
        // A Gecode that declares none of them gets none.
        let mut bare = gecode("-");
        bare.capabilities.extra_flags.clear();
        assert!(search_flags(&bare, 10).is_empty());
    }

    fn cohort(problem: &LoadProblem) -> Cohort {
        Cohort::new(problem, &Progress::none()).unwrap()
    }

    #[test]
    fn interchangeable_orders_share_a_class_and_the_money_unit_fits_the_costs() {
        // Orders i and i + 330 have the same kind (i mod 6) and deadline
        // (37 i mod 55): 330 classes of interchangeable orders at most.
        let small = cohort(&generated(1_000).unwrap());
        assert_eq!(small.model.classes.len(), 50);
        assert_eq!(small.model.money_unit_cents, 1);
        let large = cohort(&generated(100_000).unwrap());
        assert_eq!(large.model.classes.len(), 330);
        let members: usize = large.model.classes.iter().map(|c| c.members.len()).sum();
        assert_eq!(members, 5_000);
        for class in &large.model.classes {
            let first = &large.orders[class.members[0]];
            assert!(class.members.windows(2).all(|pair| pair[0] < pair[1]));
            for member in &class.members {
                let order = &large.orders[*member];
                assert_eq!(
                    (
                        order.kg,
                        order.volume_l,
                        order.lcl_cents,
                        order.allowed,
                        order.deadline_days
                    ),
                    (
                        first.kg,
                        first.volume_l,
                        first.lcl_cents,
                        first.allowed,
                        first.deadline_days
                    )
                );
            }
        }
        // About 190 million in costs: whole units of 1.00, said in a note.
        assert_eq!(large.model.money_unit_cents, 100);
        assert!(
            large
                .notes
                .iter()
                .any(|note| note.contains("whole units of 1.00"))
        );
        let data = &large.model.data;
        assert_eq!(data["n_classes"], 330);
        let price: Vec<i64> = serde_json::from_value(data["type_price_units"].clone()).unwrap();
        assert_eq!(price, [1800, 2900]);
    }

    #[test]
    fn counts_hand_a_class_out_air_first_in_input_order() {
        let classes = vec![
            Class {
                members: vec![0, 2, 3],
                level: 1,
                allowed: [true; 3],
            },
            Class {
                members: vec![1],
                level: 2,
                allowed: [true; 3],
            },
        ];
        let solution: Map<String, Value> =
            serde_json::from_value(json!({"count": [[1, 0, 2], [0, 1, 0]]})).unwrap();
        assert_eq!(order_modes(&classes, 4, &solution).unwrap(), [1, 2, 3, 3]);
        // Counts that do not add up to the class are refused, not guessed.
        for bad in [
            json!([[1, 0, 1], [0, 1, 0]]),
            json!([[1, 0, 2]]),
            json!([[1, 0, 2], [0, 1]]),
            json!("x"),
        ] {
            let solution: Map<String, Value> =
                serde_json::from_value(json!({ "count": bad })).unwrap();
            assert!(order_modes(&classes, 4, &solution).is_err(), "{bad}");
        }
    }

    /// One order of `count` EUR pallets of 139 cm, and the issue's 20ft
    /// (2,200) and 40ft (3,500).
    fn eur(count: u32, kg: f64) -> LoadProblem {
        let problem = json!({
            "orders": [{"id": "E-1", "deadline_days": 45, "pallets": [
                {"length_cm": 120, "width_cm": 80, "height_cm": 139, "weight_kg": kg, "count": count}
            ]}],
            "rates": {
                "air": {"per_kg": 4.2, "min_charge": 150, "volumetric_divisor": 6000, "transit_days": 3},
                "lcl": {"per_cbm": 85, "min_cbm": 1, "transit_days": 30},
                "fcl": {"transit_days": 28, "containers": [
                    {"type": "20ft", "length_cm": 589, "width_cm": 235, "height_cm": 239, "max_payload_kg": 28000, "price": 2200},
                    {"type": "40ft", "length_cm": 1203, "width_cm": 235, "height_cm": 239, "max_payload_kg": 26500, "price": 3500}
                ]}
            }
        });
        LoadProblem::parse(&problem.to_string()).unwrap()
    }

    /// What the issue measured: the mean fill of every container, the last
    /// one's remainder in it, said a 20ft holds 10 of 30 pallets and a 40ft
    /// 15 (and, floored, that one 20ft holds less than the 10 it takes),
    /// so the model booked 2 × 20ft + 40ft for 30 and one of each for 10.
    #[test]
    fn what_a_container_holds_is_read_off_the_packer_placements() {
        let litres = 1_335; // 120 × 80 × 139 cm, rounded up
        let thirty = cohort(&eur(30, 500.0));
        assert_eq!(thirty.fcl.capacity_l, [11 * litres, 25 * litres]);
        assert_eq!(thirty.fcl.max_count, [3, 2]);
        assert_eq!(
            thirty.model.data["type_capacity_l"],
            json!([11 * litres, 25 * litres])
        );
        let ten = cohort(&eur(10, 500.0));
        assert_eq!(ten.fcl.capacity_l, [10 * litres, 10 * litres]);
        // 1,200 kg: a 40ft takes 22 by weight, though 25 fit.
        let heavy = cohort(&eur(60, 1_200.0));
        assert_eq!(heavy.fcl.capacity_l[1], 22 * litres);
        // The all_fcl solve is given exactly the cheapest mix: it holds the
        // pallets in the model, and one container fewer of any type does
        // not.
        for (problem, mix) in [
            (&thirty, [1, 1]),
            (&ten, [1, 0]),
            (&cohort(&eur(25, 500.0)), [0, 1]),
            (&cohort(&eur(61, 500.0)), [1, 2]),
        ] {
            let cheapest = problem.fcl.cheapest.as_ref().unwrap();
            assert_eq!(cheapest.mix, mix);
            let data = ContainerData::of(cheapest);
            assert_eq!(data.max_count, mix);
            let volume: i64 = problem.orders.iter().map(|order| order.volume_l).sum();
            let holds = |counts: &[u32]| {
                counts
                    .iter()
                    .zip(&data.capacity_l)
                    .map(|(count, litres)| i64::from(*count) * litres)
                    .sum::<i64>()
                    >= volume
            };
            assert!(holds(&mix), "{mix:?}");
            for t in 0..2 {
                if mix[t] > 0 {
                    let mut fewer = mix;
                    fewer[t] -= 1;
                    assert!(!holds(&fewer), "{fewer:?}");
                }
            }
        }
    }

    #[test]
    fn rounding_never_gives_a_signed_zero() {
        for value in [-0.0, -1e-9, -4e-7, 0.0, 1e-9] {
            let rounded = round(value, 6);
            assert!(
                rounded == 0.0 && rounded.is_sign_positive(),
                "{value}: {rounded:?}"
            );
        }
        assert_eq!(round(-0.25, 6), -0.25);
    }

    /// A card's containers are solved again on one class per mode: each
    /// mode's orders summed, allowed only that mode, at its tightest
    /// deadline's level.
    #[test]
    fn a_repair_sums_each_modes_orders_into_one_class() {
        let problem = LoadProblem::parse(crate::planner::problem::EXAMPLE).unwrap();
        let cohort = cohort(&problem);
        let mode = |id: &str| {
            if id == "PO-1001" {
                Mode::Air
            } else {
                Mode::Fcl
            }
        };
        let card = Card {
            name: "optimised".to_owned(),
            objective: Objective::CheapestWithinPolicy,
            feasible: true,
            status: SolveStatus::Optimal,
            infeasible_reason: None,
            modes: cohort
                .orders
                .iter()
                .map(|order| (order.id.clone(), mode(&order.id)))
                .collect(),
            cost: None,
            containers: Vec::new(),
            single_type_costs: Vec::new(),
            fill_rate: None,
            shipments: Vec::new(),
            miss_probability: None,
            checker: None,
            within_policy: true,
            recommended: false,
        };
        let data = aggregated(&cohort, &card);
        assert_eq!(data["n_classes"], 2);
        assert_eq!(data["class_size"], json!([1, 1]));
        // 2 × 180 kg by air; 14 × 620 + 8 × 450 + 3 × 95 kg in containers.
        assert_eq!(data["class_kg"], json!([360, 12_565]));
        let litres = |id: &str| -> i64 {
            cohort
                .orders
                .iter()
                .filter(|order| mode(&order.id) == mode(id))
                .map(|order| order.volume_l)
                .sum()
        };
        assert_eq!(
            data["class_volume_l"],
            json!([litres("PO-1001"), litres("PO-1002")])
        );
        assert_eq!(
            data["allowed"],
            json!([[true, false, false], [false, false, true]])
        );
        // Deadlines 6, 40 and 45 are levels 1, 2 and 3; the containers'
        // tightest is PO-1004's 40.
        assert_eq!(data["class_level"], json!([1, 2]));
        assert_eq!(data["n_levels"], 3);
    }
}
