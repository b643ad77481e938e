//! The load planner: for a cohort of orders, choose air, sea consolidation
//! (LCL) or full containers (FCL) per order, price four plans, attach an
//! exact risk read, and recommend one.
//!
//! The pieces, in the order a plan runs: [`problem`] validates the input;
//! [`packer`] places the FCL pallets in 3D and yields a fill rate per
//! container type, and `containers` what a container holds, whether a mix
//! of types holds a card's pallets and the cheapest mix it finds;
//! [`risk`] turns delay distributions into ETA percentiles,
//! miss probabilities and CVaR; [`model`] solves the bundled MiniZinc model
//! four times (all air, all LCL, all FCL, and the free mix with the policy
//! as a constraint — the least risky mix when no plan meets it) with the
//! bundled checker; this module assembles the cards and picks the
//! recommended one. [`store`]
//! keeps results (never problems) by content hash; [`explain`] renders a
//! stored result through a fixed template and guards narrations.
//!
//! The rule a maintainer must keep: a result holds what the solver and the
//! risk arithmetic produced, nothing copied from the problem's rates,
//! weights or deadlines, and the explain path never computes.

pub(crate) mod containers;
pub mod explain;
pub mod model;
pub mod packer;
pub mod problem;
pub mod risk;
pub mod store;

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::diagnostics::ToolError;
use crate::minizinc::{MiniZinc, SolveStatus};
use crate::progress::Progress;

pub use problem::LoadProblem;
pub use store::ResultStore;

/// Most items (orders, pallets) a note, a reason or a text part names one
/// by one; the rest are counted, so a cohort of 100,000 pallets reads as
/// briefly as one of ten.
pub(crate) const NAMED: usize = 10;

/// `items` joined with commas, the first [`NAMED`] of them and then how
/// many more.
pub(crate) fn listed(items: &[String]) -> String {
    let mut text = items
        .iter()
        .take(NAMED)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > NAMED {
        text.push_str(&format!(" and {} more", items.len() - NAMED));
    }
    text
}

/// A freight mode.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Air freight: one consolidated air shipment, priced by chargeable weight.
    Air,
    /// Less than container load: sea consolidation, priced per cubic metre.
    Lcl,
    /// Full container load: the order's pallets packed into booked containers.
    Fcl,
}

impl Mode {
    /// Every mode, in the model's order (air, LCL, FCL).
    pub const ALL: [Mode; 3] = [Mode::Air, Mode::Lcl, Mode::Fcl];

    /// The mode's name in results and messages: `air`, `lcl` or `fcl`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Air => "air",
            Mode::Lcl => "lcl",
            Mode::Fcl => "fcl",
        }
    }

    /// The model's number for the mode.
    pub fn number(self) -> i64 {
        match self {
            Mode::Air => 1,
            Mode::Lcl => 2,
            Mode::Fcl => 3,
        }
    }

    /// The mode the model's number stands for; `None` outside 1..=3.
    pub fn from_number(number: i64) -> Option<Mode> {
        match number {
            1 => Some(Mode::Air),
            2 => Some(Mode::Lcl),
            3 => Some(Mode::Fcl),
            _ => None,
        }
    }
}

/// The risk read of one mode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ModeRead {
    /// Transit plus the median delay, in days.
    pub eta_p50_days: u32,
    /// Transit plus the 90th-percentile delay, in days.
    pub eta_p90_days: u32,
    /// Mean delay of the worst 10% of outcomes, in days.
    pub cvar90_delay_days: f64,
    /// `seed` (the documented default shape) or `given`.
    pub delay_source: String,
}

/// What the packer achieved for one container type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PackingRead {
    /// The container type's name, as given in `rates.fcl.containers`.
    #[serde(rename = "type")]
    pub container_type: String,
    /// Containers of this type for every FCL-eligible pallet.
    pub containers: u32,
    /// Packed volume over the containers' inner volume.
    pub fill_rate: f64,
    /// Pallets that fit no container of this type: the first ten labels,
    /// in input order (`unplaceable_pallets` counts them all).
    pub unplaceable: Vec<String>,
    /// How many pallets fit no container of this type (0 in a result of
    /// format 2, which listed them all).
    #[serde(default)]
    pub unplaceable_pallets: usize,
}

/// A card's cost per mode and in total, in the currency of the rates, to the
/// cent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CardCost {
    /// What the card's air orders cost.
    pub air: f64,
    /// What the card's LCL orders cost.
    pub lcl: f64,
    /// What the card's booked containers cost.
    pub fcl: f64,
    /// The sum of the three, as the model computed it.
    pub total: f64,
}

/// How many containers of one type a card books.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ContainerCount {
    /// The container type's name, as given in `rates.fcl.containers`.
    #[serde(rename = "type")]
    pub container_type: String,
    /// Containers of this type booked (never 0: unused types are left out).
    pub count: u32,
}

/// As a person reads it: `2 × 40HC`.
impl std::fmt::Display for ContainerCount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} × {}", self.count, self.container_type)
    }
}

/// What a card's full-container pallets take in one container type alone,
/// as the packer places them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SingleTypeCost {
    /// The container type's name, as given in `rates.fcl.containers`.
    #[serde(rename = "type")]
    pub container_type: String,
    /// Containers of this type alone; `null` when some pallet fits none.
    pub containers: Option<u32>,
    /// What they cost; `null` likewise.
    pub cost: Option<f64>,
}

/// One shipment of a card: every order on one mode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Shipment {
    /// The mode every order of the shipment goes by.
    pub mode: Mode,
    /// How many orders travel in it.
    pub orders: usize,
    /// Transit plus the median delay, in days.
    pub eta_p50_days: u32,
    /// Transit plus the 90th-percentile delay, in days.
    pub eta_p90_days: u32,
    /// Mean delay of the worst 10% of outcomes, in days.
    pub cvar90_delay_days: f64,
    /// Chance this shipment arrives after the tightest deadline on it.
    pub miss_probability: f64,
    /// Why its orders go by this mode, in groups; ten of them named in all.
    #[serde(default)]
    pub why: Vec<Reason>,
}

/// Why some of a shipment's orders go by its mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Why {
    /// No other mode meets their deadlines at the 90th percentile.
    Deadline,
    /// Every other mode that does would take the plan's chance of a miss
    /// over the policy (a plan outside it: raise it).
    Risk,
    /// Another mode would do within the policy; the plan with them here is
    /// the cheapest found.
    Cost,
    /// A single-mode card (not recommended) sends every order by its mode.
    SingleMode,
}

/// Some of a shipment's orders and why they go by its mode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Reason {
    pub(crate) why: Why,
    pub(crate) orders: usize,
    /// Their ids, in input order, within the shipment's ten.
    pub named: Vec<String>,
    /// How many of them `named` leaves out.
    pub more: usize,
}

/// What a card's plan was solved for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Objective {
    /// The cheapest plan of its kind: every single-mode card, and the free
    /// mix when the policy bounds nothing (`max_miss_probability` 1).
    Cheapest,
    /// The cheapest plan whose chance of any miss is within the policy: the
    /// free mix solved with the policy as a constraint.
    CheapestWithinPolicy,
    /// No plan meets the policy: the plan with the least chance of a miss,
    /// and the cheapest of those.
    LeastRisky,
}

/// One plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Card {
    /// `all_air`, `all_lcl`, `all_fcl` or `optimised`.
    pub name: String,
    /// What the plan was solved for: the single-mode cards are the cheapest
    /// of their mode; the optimised card is the cheapest within the policy,
    /// or the least risky when no plan meets it.
    pub objective: Objective,
    /// The solver found a solution and the bundled checker accepted it.
    pub feasible: bool,
    /// The solve's status (`optimal`, `unsatisfiable`, ...).
    pub status: SolveStatus,
    /// Why the card is not feasible.
    pub infeasible_reason: Option<String>,
    /// Order id → mode.
    pub modes: BTreeMap<String, Mode>,
    /// What the plan costs; `None` when the solve found no solution.
    pub cost: Option<CardCost>,
    /// The containers the plan books, per type: the cheapest mix found
    /// that the packer fills with the FCL pallets; empty without them.
    pub containers: Vec<ContainerCount>,
    /// Beside that mix (`cost.fcl`): each container type alone.
    #[serde(default)]
    pub single_type_costs: Vec<SingleTypeCost>,
    /// FCL volume over the booked containers' inner volume.
    pub fill_rate: Option<f64>,
    /// One per mode the plan uses, in mode order.
    pub shipments: Vec<Shipment>,
    /// Chance that any shipment misses (shipments independent).
    pub miss_probability: Option<f64>,
    /// The checker's verdict on the solution (`CORRECT` or `INCORRECT: …`).
    pub checker: Option<String>,
    /// Feasible, and `miss_probability` is at most the policy's
    /// `max_miss_probability`.
    pub within_policy: bool,
    /// This is the card [`LoadPlan::recommended`] names.
    pub recommended: bool,
}

/// A planner result: what is stored, hashed and explained.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LoadPlan {
    /// The planner and its result format.
    pub planner: String,
    /// The MiniZinc solver that solved the cards.
    pub solver: String,
    /// The four plans, in order: `all_air`, `all_lcl`, `all_fcl`, `optimised`.
    pub cards: Vec<Card>,
    /// Mode name → its risk read.
    pub modes: BTreeMap<String, ModeRead>,
    /// The packer's result per container type, in the order of
    /// `rates.fcl.containers`.
    pub packing: Vec<PackingRead>,
    /// The name of the recommended card; `null` when none is feasible.
    pub recommended: Option<String>,
    /// Facts the planner noticed (an order no mode can carry in time, ...).
    pub notes: Vec<String>,
}

/// What `plan_load` returns.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct PlanResult {
    /// SHA-256 of the canonical result: the same problem gives the same id.
    pub result_id: String,
    /// SHA-256 of the stored bytes (the store is content-addressed, so it
    /// equals `result_id`).
    pub content_hash: String,
    /// The plan itself, as stored under `result_id`.
    pub result: LoadPlan,
}

/// The `planner` field of every result: bumped when the result format changes.
pub const PLANNER_FORMAT: &str = "solvergate load planner, result format 4";

impl LoadPlan {
    /// The canonical bytes: compact JSON with keys in order.
    pub fn canonical(&self) -> Vec<u8> {
        let value = serde_json::to_value(self).unwrap_or(serde_json::Value::Null);
        value.to_string().into_bytes()
    }

    /// The result's id: the SHA-256 hex of [`LoadPlan::canonical`].
    pub fn id(&self) -> String {
        crate::sha256_hex(&self.canonical())
    }
}

/// Plans, stores and explains.
#[derive(Clone)]
pub struct Planner {
    minizinc: MiniZinc,
    store: ResultStore,
}

impl Planner {
    /// A planner that solves with `minizinc` and keeps its results in `store`.
    pub fn new(minizinc: MiniZinc, store: ResultStore) -> Self {
        Planner { minizinc, store }
    }

    /// The store that plans are written to and explained from.
    pub fn store(&self) -> &ResultStore {
        &self.store
    }

    /// Plans a cohort and stores the result; `progress` hears each step
    /// (packing, the single-mode plans, the free solve).
    pub async fn plan(
        &self,
        problem: &LoadProblem,
        progress: &Progress,
        cancel: &CancellationToken,
    ) -> Result<PlanResult, ToolError> {
        problem.validate()?;
        let plan = model::plan(&self.minizinc, problem, progress, cancel).await?;
        let bytes = plan.canonical();
        let id = crate::sha256_hex(&bytes);
        let store = self.store.clone();
        let stored_id = id.clone();
        crate::userfiles::off_thread(move || store.put(&stored_id, &bytes)).await?;
        Ok(PlanResult {
            content_hash: id.clone(),
            result_id: id,
            result: plan,
        })
    }

    /// The stored result for an id.
    pub async fn load(&self, result_id: &str) -> Result<LoadPlan, ToolError> {
        let store = self.store.clone();
        let id = result_id.to_owned();
        crate::userfiles::off_thread(move || store.get(&id)).await
    }
}
