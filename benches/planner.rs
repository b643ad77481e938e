//! The load planner at scale, printed as figures (nothing is asserted; the
//! planner's results at scale are checked by its tests): for generated
//! cohorts (`solvergate::planner::problem::generated`, orders of 20 pallets
//! of six kinds, the example's rates, policy 0.1) of 100, 1,000, 10,000 and
//! 100,000 pallets, min / median / max over a few rounds of
//! - end to end: `Planner::plan` (validate, pack, solve the four cards with
//!   the bundled checker, store the result in a temp dir);
//! - the packer alone: `packer::pack` once per container type, over every
//!   pallet of the cohort and over the pallets the planner packs (those of
//!   the orders whose deadline full containers meet at the 90th
//!   percentile — the FCL read's ETA taken from the plan);
//! - the planner's steps, each the sum of the intervals from its progress
//!   reports to the next report (or to the end): packing and the model's
//!   data (in a first round also the runtime's solver catalog, read once),
//!   the four solves side by side (the single-mode ones and the free one),
//!   the container repairs (a card's plan solved again with the cheapest
//!   mix the packer fills, when the model's estimate booked another), and
//!   the least-risky solves when no plan meets the policy;
//!
//! and the solver used, the recommended card, the optimised card's status
//! and total, and whether every round gave the same `result_id`. One
//! Markdown table per runtime, ready for the README, goes to stdout;
//! progress goes to stderr.
//!
//! Run: `cargo bench --bench planner`. The runtime is
//! `SOLVERGATE_BENCH_RUNTIME` (default `/usr`); a second one, when
//! `SOLVERGATE_BENCH_RUNTIME2` names it, is measured too.
//! `SOLVERGATE_BENCH_SIZES=100,1000` chooses the sizes (default
//! 100,1000,10000,100000) and `SOLVERGATE_BENCH_ROUNDS=N` the rounds per
//! size (default 5 up to 1,000 pallets, 3 above).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use solvergate::minizinc::MiniZinc;
use solvergate::planner::packer::{self, ContainerSpec, PalletUnit};
use solvergate::planner::problem::generated;
use solvergate::planner::{LoadProblem, Planner, ResultStore};
use solvergate::progress::Progress;
use solvergate::runtime::{LocationSource, Runtime, RuntimeLocation};
use tokio_util::sync::CancellationToken;

const DEFAULT_SIZES: [u32; 4] = [100, 1_000, 10_000, 100_000];

/// The planner's steps as its progress reports number them.
const STEP_NAMES: [&str; 4] = [
    "packing + data",
    "the four solves",
    "container repairs",
    "least-risky solves",
];

/// One `Planner::plan` round.
struct Round {
    total: Duration,
    /// Step number (1..=4) → its time, from its reports to the next ones (or
    /// to the end).
    steps: [Option<Duration>; 4],
    solver: String,
    recommended: String,
    optimised_status: String,
    optimised_total: String,
    result_id: String,
    /// The FCL read's 90th-percentile ETA: orders due before it are not
    /// packed.
    fcl_eta_p90_days: Option<u32>,
    /// What the planner's packer made, per type (`20GP 33, 40HC 13`).
    packing: String,
}

/// What the packer alone measured at one size.
struct PackerRow {
    pallets: u32,
    units: usize,
    /// Each round's time over every container type.
    sums: Vec<Duration>,
    /// Container type → each round's time.
    per_type: Vec<Vec<Duration>>,
    /// What it made of the cohort, per type.
    made: String,
    /// The pallets the planner packs: those of the orders whose deadline
    /// full containers meet at the 90th percentile.
    eligible: usize,
    /// Each round's time over every container type, for those pallets.
    eligible_sums: Vec<Duration>,
}

/// What one size measured on one runtime.
struct Row {
    pallets: u32,
    orders: usize,
    rounds: Vec<Round>,
}

fn sizes() -> Vec<u32> {
    match std::env::var("SOLVERGATE_BENCH_SIZES") {
        Ok(text) => {
            text.split(',')
                .map(|size| {
                    size.trim().replace('_', "").parse().unwrap_or_else(|_| {
                        panic!("SOLVERGATE_BENCH_SIZES: {size:?} is not a count")
                    })
                })
                .collect()
        }
        Err(_) => DEFAULT_SIZES.to_vec(),
    }
}

fn rounds(pallets: u32) -> usize {
    match std::env::var("SOLVERGATE_BENCH_ROUNDS") {
        Ok(text) => text
            .trim()
            .parse()
            .ok()
            .filter(|rounds| *rounds > 0)
            .unwrap_or_else(|| panic!("SOLVERGATE_BENCH_ROUNDS: {text:?} is not a positive count")),
        Err(_) if pallets <= 1_000 => 5,
        Err(_) => 3,
    }
}

/// The runtimes to measure: `SOLVERGATE_BENCH_RUNTIME` (default `/usr`),
/// then `SOLVERGATE_BENCH_RUNTIME2` when set; those without `bin/minizinc`
/// are skipped with a word on stderr.
fn runtimes() -> Vec<PathBuf> {
    let first = std::env::var("SOLVERGATE_BENCH_RUNTIME").unwrap_or_else(|_| "/usr".into());
    let second = std::env::var("SOLVERGATE_BENCH_RUNTIME2").ok();
    std::iter::once(first)
        .chain(second.filter(|dir| !dir.is_empty()))
        .map(PathBuf::from)
        .filter(|dir| {
            let found = dir.join("bin/minizinc").exists();
            if !found {
                eprintln!(
                    "no MiniZinc at {}; skipped",
                    dir.join("bin/minizinc").display()
                );
            }
            found
        })
        .collect()
}

/// The cohort as the packer sees it: one unit per pallet, dimensions rounded
/// up (as the planner's `order_facts` does), and one spec per container type,
/// dimensions floored. Read from the problem's JSON, since its fields are
/// the crate's own.
/// A container type's name and inside.
type NamedSpec = (String, ContainerSpec);

/// Each unit comes with its order's deadline.
fn packer_input(problem: &LoadProblem) -> (Vec<(PalletUnit, u32)>, Vec<NamedSpec>) {
    let json = serde_json::to_value(problem).expect("a generated problem serializes");
    let number = |value: &Value, field: &str| {
        value[field]
            .as_f64()
            .unwrap_or_else(|| panic!("the problem's JSON has no number {field}: {value}"))
    };
    let mut units = Vec::new();
    for order in json["orders"]
        .as_array()
        .expect("the problem's JSON has orders")
    {
        let id = order["id"].as_str().expect("an order has an id");
        let deadline = order["deadline_days"].as_u64().unwrap_or(0) as u32;
        let lines = order["pallets"].as_array().expect("an order has pallets");
        for (line, pallet) in lines.iter().enumerate() {
            let dims = ["length_cm", "width_cm", "height_cm"].map(|d| number(pallet, d).ceil());
            let count = pallet["count"].as_u64().unwrap_or(1);
            for copy in 1..=count {
                units.push((
                    PalletUnit {
                        label: format!("order {id} line {} pallet {copy}", line + 1),
                        length_cm: dims[0] as u32,
                        width_cm: dims[1] as u32,
                        height_cm: dims[2] as u32,
                        weight_kg: number(pallet, "weight_kg"),
                        stackable: pallet["stackable"].as_bool().unwrap_or(false),
                    },
                    deadline,
                ));
            }
        }
    }
    let specs = json["rates"]["fcl"]["containers"]
        .as_array()
        .expect("the problem's JSON has container types")
        .iter()
        .map(|container| {
            let name = container["type"].as_str().unwrap_or("?").to_owned();
            let spec = ContainerSpec {
                length_cm: number(container, "length_cm").floor() as u32,
                width_cm: number(container, "width_cm").floor() as u32,
                height_cm: number(container, "height_cm").floor() as u32,
                max_payload_kg: number(container, "max_payload_kg"),
            };
            (name, spec)
        })
        .collect();
    (units, specs)
}

fn orders_of(problem: &LoadProblem) -> usize {
    serde_json::to_value(problem).expect("a generated problem serializes")["orders"]
        .as_array()
        .map_or(0, Vec::len)
}

/// One round of the packer alone over every container type: the time of
/// each type, and what it made of the cohort (`20GP 180 (fill 0.71)`).
fn pack_round(units: &[PalletUnit], specs: &[NamedSpec]) -> (Vec<Duration>, String) {
    let mut times = Vec::new();
    let mut made = Vec::new();
    for (name, spec) in specs {
        let started = Instant::now();
        let packing = packer::pack(units, spec);
        times.push(started.elapsed());
        made.push(format!(
            "{name} {} (fill {:.3}, {} unplaceable)",
            packing.containers,
            packing.fill_rate,
            packing.unplaceable.len()
        ));
    }
    (times, made.join(", "))
}

/// `rounds` rounds of the packer over `units`: each round's time over every
/// type, each type's times, and what the last round made.
fn pack_rounds(
    what: &str,
    units: &[PalletUnit],
    specs: &[NamedSpec],
    rounds: usize,
) -> (Vec<Duration>, Vec<Vec<Duration>>, String) {
    let mut sums = Vec::new();
    let mut per_type = vec![Vec::new(); specs.len()];
    let mut made = String::new();
    for round in 1..=rounds {
        let (times, packed) = pack_round(units, specs);
        eprintln!(
            "packer over {} {what} pallets, round {round}/{rounds}: {} s ({packed})",
            units.len(),
            secs(times.iter().sum())
        );
        sums.push(times.iter().sum());
        for (slot, time) in per_type.iter_mut().zip(times) {
            slot.push(time);
        }
        made = packed;
    }
    (sums, per_type, made)
}

async fn plan_round(planner: &Planner, problem: &LoadProblem) -> Round {
    let (progress, mut receiver) = Progress::channel();
    // A thread of its own stamps each report as it is sent, whatever the
    // async workers are busy with.
    let listener = std::thread::spawn(move || {
        let mut steps = Vec::new();
        while let Some(update) = receiver.blocking_recv() {
            if let Some((done, _)) = update.step {
                steps.push((done, Instant::now()));
            }
        }
        steps
    });
    let cancel = CancellationToken::new();
    let started = Instant::now();
    let result = planner.plan(problem, &progress, &cancel).await;
    let ended = Instant::now();
    drop(progress);
    let reports = listener.join().expect("the progress listener finished");
    let result = result.unwrap_or_else(|error| {
        panic!(
            "Planner::plan failed ({:?}): {}",
            error.0.category, error.0.message
        )
    });
    // Each interval between reports (the last one: to the end) counts for
    // the step of the report that opens it; a step reported several times
    // (each solve as it ends) sums its intervals.
    let mut steps: [Option<Duration>; 4] = [None; 4];
    for (index, (done, at)) in reports.iter().enumerate() {
        let next = reports.get(index + 1).map_or(ended, |(_, next)| *next);
        if let Some(slot) = (*done as usize)
            .checked_sub(1)
            .and_then(|slot| steps.get_mut(slot))
        {
            *slot = Some(slot.unwrap_or_default() + next.saturating_duration_since(*at));
        }
    }
    let plan = &result.result;
    let optimised = plan.cards.iter().find(|card| card.name == "optimised");
    Round {
        total: ended - started,
        steps,
        solver: plan.solver.clone(),
        recommended: plan.recommended.clone().unwrap_or_else(|| "none".into()),
        optimised_status: optimised.map_or("-".into(), |card| card.status.to_string()),
        optimised_total: optimised
            .and_then(|card| card.cost.as_ref())
            .map_or("-".into(), |cost| format!("{:.2}", cost.total)),
        packing: plan
            .packing
            .iter()
            .map(|read| format!("{} {}", read.container_type, read.containers))
            .collect::<Vec<_>>()
            .join(", "),
        fcl_eta_p90_days: plan.modes.get("fcl").map(|read| read.eta_p90_days),
        result_id: result.result_id,
    }
}

fn secs(duration: Duration) -> String {
    let secs = duration.as_secs_f64();
    if secs < 0.1 {
        format!("{secs:.4}")
    } else if secs < 10.0 {
        format!("{secs:.3}")
    } else {
        format!("{secs:.1}")
    }
}

/// `min / median / max` in seconds; `-` without samples.
fn spread(mut samples: Vec<Duration>) -> String {
    if samples.is_empty() {
        return "-".to_owned();
    }
    samples.sort();
    format!(
        "{} / {} / {}",
        secs(samples[0]),
        secs(samples[samples.len() / 2]),
        secs(samples[samples.len() - 1])
    )
}

/// The distinct values, in first-seen order, joined with ` / `.
fn distinct<'a>(values: impl Iterator<Item = &'a str>) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for value in values {
        if !seen.contains(&value) {
            seen.push(value);
        }
    }
    seen.join(" / ")
}

fn thousands(n: u32) -> String {
    let digits = n.to_string();
    let mut text = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            text.push(',');
        }
        text.push(digit);
    }
    text
}

fn planner_for(dir: &Path, store: &Path) -> Planner {
    let runtime = Runtime::new(RuntimeLocation {
        dir: dir.to_path_buf(),
        source: LocationSource::Flag,
    });
    Planner::new(
        MiniZinc::new(Arc::new(runtime)),
        ResultStore::new(store.to_path_buf(), 1_000),
    )
}

#[tokio::main]
async fn main() {
    let runtimes = runtimes();
    if runtimes.is_empty() {
        eprintln!("no runtime to measure; set SOLVERGATE_BENCH_RUNTIME");
        return;
    }
    let sizes = sizes();
    let store = tempfile::tempdir().expect("a temp dir for the result store");
    let cancel = CancellationToken::new();
    let mut planners = Vec::new();
    for (index, dir) in runtimes.iter().enumerate() {
        let planner = planner_for(dir, &store.path().join(format!("store-{index}")));
        let runtime = Runtime::new(RuntimeLocation {
            dir: dir.clone(),
            source: LocationSource::Flag,
        });
        let version = runtime
            .version(&cancel)
            .await
            .map(|version| match version.rsplit_once("version ") {
                Some((_, number)) => number.trim().to_owned(),
                None => version,
            })
            .unwrap_or_else(|error| format!("version unknown: {}", error.0.message));
        planners.push((dir.clone(), version, planner));
    }

    let mut packer_rows: Vec<PackerRow> = Vec::new();
    // Runtime index → rows.
    let mut rows: Vec<Vec<Row>> = planners.iter().map(|_| Vec::new()).collect();
    let mut type_names = Vec::new();
    for &pallets in &sizes {
        let problem = generated(pallets).expect("the generated cohort is valid");
        let orders = orders_of(&problem);
        let rounds = rounds(pallets);
        for (index, (dir, _, planner)) in planners.iter().enumerate() {
            let mut done = Vec::new();
            for round in 1..=rounds {
                let result = plan_round(planner, &problem).await;
                eprintln!(
                    "{pallets} pallets on {}: plan round {round}/{rounds}: {} s (steps {}) {} recommends {}, optimised {} {}, {}, packed {}",
                    dir.display(),
                    secs(result.total),
                    result
                        .steps
                        .iter()
                        .map(|step| step.map_or("-".into(), secs))
                        .collect::<Vec<_>>()
                        .join(" / "),
                    result.solver,
                    result.recommended,
                    result.optimised_status,
                    result.optimised_total,
                    &result.result_id[..12.min(result.result_id.len())],
                    result.packing,
                );
                done.push(result);
            }
            rows[index].push(Row {
                pallets,
                orders,
                rounds: done,
            });
        }
        let (units, specs) = packer_input(&problem);
        type_names = specs.iter().map(|(name, _)| name.clone()).collect();
        let fcl_eta = rows
            .iter()
            .filter_map(|rows| rows.last())
            .flat_map(|row| &row.rounds)
            .find_map(|round| round.fcl_eta_p90_days)
            .unwrap_or(0);
        let eligible: Vec<PalletUnit> = units
            .iter()
            .filter(|(_, deadline)| *deadline >= fcl_eta)
            .map(|(unit, _)| unit.clone())
            .collect();
        let units: Vec<PalletUnit> = units.into_iter().map(|(unit, _)| unit).collect();
        let (sums, per_type, made) = pack_rounds("(all)", &units, &specs, rounds);
        let (eligible_sums, _, _) = pack_rounds("FCL-eligible", &eligible, &specs, rounds);
        packer_rows.push(PackerRow {
            pallets,
            units: units.len(),
            sums,
            per_type,
            made,
            eligible: eligible.len(),
            eligible_sums,
        });
    }

    println!(
        "### Packer alone (each container type; every pallet of the cohort, and those the planner packs)\n"
    );
    println!(
        "| pallets | units | rounds | both types min / median / max (s) | {} | containers | FCL-eligible units | both types over those (s) |",
        type_names
            .iter()
            .map(|name| format!("{name} (s)"))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    println!(
        "|---:|---:|---:|---|{}---|---:|---|",
        "---|".repeat(type_names.len())
    );
    for row in &packer_rows {
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            thousands(row.pallets),
            row.units,
            row.sums.len(),
            spread(row.sums.clone()),
            row.per_type
                .iter()
                .map(|times| spread(times.clone()))
                .collect::<Vec<_>>()
                .join(" | "),
            row.made,
            row.eligible,
            spread(row.eligible_sums.clone()),
        );
    }
    for ((dir, version, _), rows) in planners.iter().zip(&rows) {
        println!(
            "\n### Planner end to end: {} (MiniZinc {version})\n",
            dir.display()
        );
        println!(
            "| pallets | orders | rounds | end to end min / median / max (s) | packer alone, as planned (s) | {} | solver | recommended | optimised status | optimised total | same result_id |",
            STEP_NAMES
                .iter()
                .map(|name| format!("{name} (s)"))
                .collect::<Vec<_>>()
                .join(" | ")
        );
        println!("|---:|---:|---:|---|---|---|---|---|---|---|---|---|---|---|");
        for (row, packer) in rows.iter().zip(&packer_rows) {
            let steps: Vec<String> = (0..STEP_NAMES.len())
                .map(|step| {
                    spread(
                        row.rounds
                            .iter()
                            .filter_map(|round| round.steps[step])
                            .collect(),
                    )
                })
                .collect();
            let ids = distinct(row.rounds.iter().map(|round| round.result_id.as_str()));
            let same = if ids.contains(" / ") {
                format!("no ({} ids)", ids.split(" / ").count())
            } else {
                format!("yes (`{}…`)", &ids[..12.min(ids.len())])
            };
            println!(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {same} |",
                thousands(row.pallets),
                row.orders,
                row.rounds.len(),
                spread(row.rounds.iter().map(|round| round.total).collect()),
                spread(packer.eligible_sums.clone()),
                steps.join(" | "),
                distinct(row.rounds.iter().map(|round| round.solver.as_str())),
                distinct(row.rounds.iter().map(|round| round.recommended.as_str())),
                distinct(
                    row.rounds
                        .iter()
                        .map(|round| round.optimised_status.as_str())
                ),
                distinct(
                    row.rounds
                        .iter()
                        .map(|round| round.optimised_total.as_str())
                ),
            );
        }
    }
}
