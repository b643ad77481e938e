//! The load planner's input: a cohort of orders, the rates of the three
//! modes, optional delay distributions and policy — parsed and validated
//! with errors that name the field.
//!
//! Validation is the whole contract: everything downstream (packer, risk,
//! the MiniZinc data) may assume positive dimensions, known modes,
//! distributions that sum to 1 and amounts that fit the model's integers.
//!
//! These types are `plan_load`'s input schema: a field's `///` is the
//! description a client reads. Fields whose name says all a client needs
//! (`length_cm`, `per_kg`, `orders`) carry none, to keep tools/list small,
//! and are `pub(crate)`: only this crate builds or reads them.

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::diagnostics::ToolError;

/// One line of an order: `count` identical pallets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Pallet {
    pub(crate) length_cm: f64,
    pub(crate) width_cm: f64,
    pub(crate) height_cm: f64,
    pub(crate) weight_kg: f64,
    #[serde(default = "one")]
    pub(crate) count: u32,
    /// Another pallet may stand on it, and it may stand on another.
    #[serde(default)]
    pub stackable: bool,
}

fn one() -> u32 {
    1
}

/// One order: shipped whole, by one mode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Order {
    pub(crate) id: String,
    pub(crate) pallets: Vec<Pallet>,
    /// Days from now by which the order must arrive.
    pub deadline_days: u32,
}

/// Air freight: one consolidated shipment of the air orders.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AirRate {
    pub(crate) per_kg: f64,
    pub(crate) min_charge: f64,
    /// Chargeable weight is max(kg, cm³ / volumetric_divisor); 6000 is usual.
    pub volumetric_divisor: f64,
    pub(crate) transit_days: u32,
}

/// Sea consolidation: priced per cubic metre.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LclRate {
    pub(crate) per_cbm: f64,
    pub(crate) min_cbm: f64,
    pub(crate) transit_days: u32,
}

/// One container type's inside and price.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContainerType {
    #[serde(rename = "type")]
    pub(crate) name: String,
    pub(crate) length_cm: f64,
    pub(crate) width_cm: f64,
    pub(crate) height_cm: f64,
    pub(crate) max_payload_kg: f64,
    pub(crate) price: f64,
}

/// Full containers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FclRate {
    pub(crate) containers: Vec<ContainerType>,
    pub(crate) transit_days: u32,
}

/// The price list of the three modes, all in one currency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Rates {
    pub(crate) air: AirRate,
    pub(crate) lcl: LclRate,
    pub(crate) fcl: FclRate,
}

/// Extra days of delay beyond transit, as day → probability (must sum to 1).
pub type DelayTable = BTreeMap<String, f64>;

/// Delay distributions per mode; a mode left out uses its seed shape.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Delays {
    #[serde(default)]
    pub(crate) air: Option<DelayTable>,
    #[serde(default)]
    pub(crate) lcl: Option<DelayTable>,
    #[serde(default)]
    pub(crate) fcl: Option<DelayTable>,
}

/// How much risk a recommended plan may carry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// The optimised plan is the cheapest with at most this chance of any miss
    /// (else the least risky); 1 bounds nothing.
    #[serde(default = "default_max_miss")]
    pub max_miss_probability: f64,
}

fn default_max_miss() -> f64 {
    0.1
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            max_miss_probability: default_max_miss(),
        }
    }
}

/// A cohort to plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LoadProblem {
    pub(crate) orders: Vec<Order>,
    pub(crate) rates: Rates,
    /// Optional delay distributions per mode; seeds are used where absent.
    #[serde(default)]
    pub delays: Delays,
    #[serde(default)]
    pub(crate) policy: Policy,
}

/// Most orders and pallets a cohort may hold (the packer places one unit
/// per pallet).
pub const MAX_ORDERS: usize = 10_000;
/// Most pallets, counted with their `count`, in one cohort.
pub const MAX_PALLETS: u64 = 200_000;

impl LoadProblem {
    /// Parses JSON text into a validated problem; a missing field's error
    /// shows the field's shape.
    pub fn parse(text: &str) -> Result<LoadProblem, ToolError> {
        let mut reader = serde_json::Deserializer::from_str(text);
        let problem: LoadProblem = serde_path_to_error::deserialize(&mut reader)
            .map_err(|error| ToolError::invalid(format!("problem: {}", explained(&error))))?;
        problem.validate()?;
        Ok(problem)
    }

    /// Reads a problem from a JSON value (not yet validated); the error, in
    /// words, names where it is and shows a missing field's shape.
    pub fn from_value(value: serde_json::Value) -> Result<LoadProblem, String> {
        serde_path_to_error::deserialize(value).map_err(|error| explained(&error))
    }

    /// Every rule downstream code relies on.
    pub fn validate(&self) -> Result<(), ToolError> {
        let bad = |message: String| Err(ToolError::invalid(message));
        if self.orders.is_empty() {
            return bad("orders is empty: a cohort needs at least one order".to_owned());
        }
        if self.orders.len() > MAX_ORDERS {
            return bad(format!(
                "orders lists {} orders; a cohort takes at most {MAX_ORDERS}",
                self.orders.len()
            ));
        }
        let mut ids = BTreeSet::new();
        let mut pallets = 0u64;
        for (index, order) in self.orders.iter().enumerate() {
            let at = format!("orders[{index}]");
            if order.id.trim().is_empty() {
                return bad(format!("{at}.id is empty"));
            }
            if !ids.insert(order.id.as_str()) {
                return bad(format!(
                    "{at}.id {:?} repeats an earlier order's id",
                    order.id
                ));
            }
            if order.pallets.is_empty() {
                return bad(format!("{at} ({:?}) has no pallets", order.id));
            }
            for (line, pallet) in order.pallets.iter().enumerate() {
                let at = format!("{at}.pallets[{line}]");
                for (name, value, max) in [
                    ("length_cm", pallet.length_cm, 10_000.0),
                    ("width_cm", pallet.width_cm, 10_000.0),
                    ("height_cm", pallet.height_cm, 10_000.0),
                    ("weight_kg", pallet.weight_kg, 100_000.0),
                ] {
                    positive(&format!("{at}.{name}"), value, max)?;
                }
                if pallet.count == 0 {
                    return bad(format!("{at}.count must be at least 1"));
                }
                pallets += u64::from(pallet.count);
            }
        }
        if pallets > MAX_PALLETS {
            return bad(format!(
                "the cohort has {pallets} pallets; the planner takes at most {MAX_PALLETS}"
            ));
        }
        let rates = &self.rates;
        positive("rates.air.per_kg", rates.air.per_kg, 1e6)?;
        non_negative("rates.air.min_charge", rates.air.min_charge, 1e9)?;
        positive(
            "rates.air.volumetric_divisor",
            rates.air.volumetric_divisor,
            1e7,
        )?;
        positive("rates.lcl.per_cbm", rates.lcl.per_cbm, 1e7)?;
        non_negative("rates.lcl.min_cbm", rates.lcl.min_cbm, 1e5)?;
        if rates.fcl.containers.is_empty() {
            return bad(
                "rates.fcl.containers is empty: give at least one container type".to_owned(),
            );
        }
        let mut names = BTreeSet::new();
        for (index, container) in rates.fcl.containers.iter().enumerate() {
            let at = format!("rates.fcl.containers[{index}]");
            if container.name.trim().is_empty() {
                return bad(format!("{at}.type is empty"));
            }
            if !names.insert(container.name.as_str()) {
                return bad(format!(
                    "{at}.type {:?} repeats an earlier container type",
                    container.name
                ));
            }
            for (name, value, max) in [
                ("length_cm", container.length_cm, 100_000.0),
                ("width_cm", container.width_cm, 10_000.0),
                ("height_cm", container.height_cm, 10_000.0),
                ("max_payload_kg", container.max_payload_kg, 1_000_000.0),
                ("price", container.price, 1e8),
            ] {
                positive(&format!("{at}.{name}"), value, max)?;
            }
        }
        for (mode, table) in [
            ("air", &self.delays.air),
            ("lcl", &self.delays.lcl),
            ("fcl", &self.delays.fcl),
        ] {
            if let Some(table) = table {
                super::risk::Distribution::from_table(table)
                    .map_err(|problem| ToolError::invalid(format!("delays.{mode}: {problem}")))?;
            }
        }
        let max_miss = self.policy.max_miss_probability;
        if !(0.0..=1.0).contains(&max_miss) {
            return bad(format!(
                "policy.max_miss_probability must be between 0 and 1, got {max_miss}"
            ));
        }
        Ok(())
    }
}

/// A reading error with where it is, and for a missing field the shape it
/// takes, as the example writes it: `rates: missing field `air` — it looks
/// like "air": {"per_kg": 4.2, ...}`.
fn explained<E: std::fmt::Display>(error: &serde_path_to_error::Error<E>) -> String {
    let path = error.path().to_string();
    let problem = error.inner().to_string();
    let mut text = if path == "." || problem.starts_with(&path) {
        problem.clone()
    } else {
        format!("{path}: {problem}")
    };
    if let Some(shape) = missing_shape(error.path(), &problem) {
        text.push_str(&shape);
    }
    text
}

/// For "missing field `name`" at `path`: ` — it looks like "name": <the
/// example's value there>`; `None` for any other error, or a field the
/// example lacks.
fn missing_shape(path: &serde_path_to_error::Path, problem: &str) -> Option<String> {
    use serde_path_to_error::Segment;
    let field = problem.strip_prefix("missing field `")?.split('`').next()?;
    let example: serde_json::Value = serde_json::from_str(EXAMPLE).ok()?;
    let mut at = &example;
    for segment in path.iter() {
        at = match segment {
            Segment::Map { key } => at.get(key)?,
            // The example's first item stands for any.
            Segment::Seq { .. } => at.get(0)?,
            Segment::Enum { .. } | Segment::Unknown => return None,
        };
    }
    let shape = at.get(field)?;
    Some(format!(" — it looks like \"{field}\": {shape}"))
}

fn positive(name: &str, value: f64, max: f64) -> Result<(), ToolError> {
    if !value.is_finite() || value <= 0.0 {
        return Err(ToolError::invalid(format!(
            "{name} must be a positive number, got {value}"
        )));
    }
    if value > max {
        return Err(ToolError::invalid(format!(
            "{name} is {value}; the planner takes at most {max}"
        )));
    }
    Ok(())
}

fn non_negative(name: &str, value: f64, max: f64) -> Result<(), ToolError> {
    if !value.is_finite() || value < 0.0 {
        return Err(ToolError::invalid(format!(
            "{name} must be zero or more, got {value}"
        )));
    }
    if value > max {
        return Err(ToolError::invalid(format!(
            "{name} is {value}; the planner takes at most {max}"
        )));
    }
    Ok(())
}

/// A valid sample cohort, for `solvergate plan --example`.
pub const EXAMPLE: &str = r#"{
  "orders": [
    {"id": "PO-1001", "deadline_days": 6,
     "pallets": [{"length_cm": 120, "width_cm": 80, "height_cm": 110, "weight_kg": 180, "count": 2}]},
    {"id": "PO-1002", "deadline_days": 45,
     "pallets": [{"length_cm": 120, "width_cm": 80, "height_cm": 150, "weight_kg": 620, "count": 14, "stackable": false}]},
    {"id": "PO-1003", "deadline_days": 45,
     "pallets": [{"length_cm": 120, "width_cm": 100, "height_cm": 120, "weight_kg": 450, "count": 8, "stackable": true}]},
    {"id": "PO-1004", "deadline_days": 40,
     "pallets": [{"length_cm": 80, "width_cm": 60, "height_cm": 90, "weight_kg": 95, "count": 3}]}
  ],
  "rates": {
    "air": {"per_kg": 4.2, "min_charge": 150, "volumetric_divisor": 6000, "transit_days": 3},
    "lcl": {"per_cbm": 85, "min_cbm": 1, "transit_days": 30},
    "fcl": {"transit_days": 28, "containers": [
      {"type": "20GP", "length_cm": 589, "width_cm": 235, "height_cm": 239, "max_payload_kg": 28000, "price": 1800},
      {"type": "40HC", "length_cm": 1203, "width_cm": 235, "height_cm": 269, "max_payload_kg": 26500, "price": 2900}
    ]}
  },
  "policy": {"max_miss_probability": 0.1}
}
"#;

/// A generated cohort of `pallets` pallets, for `solvergate plan --example
/// --pallets N`, the planner's bench and its tests at scale: orders of 20
/// pallets (the last takes the rest), each of one of six kinds (the order's
/// index modulo 6), with the deadline 6 + (37 i mod 55) days for order i
/// (0-based), the example's rates, seed delays and a policy of 0.1.
pub fn generated(pallets: u32) -> Result<LoadProblem, ToolError> {
    // (length, width, height cm, kg, stackable)
    const KINDS: [(f64, f64, f64, f64, bool); 6] = [
        (120.0, 80.0, 110.0, 350.0, true),
        (120.0, 80.0, 150.0, 520.0, false),
        (120.0, 100.0, 120.0, 450.0, true),
        (120.0, 100.0, 160.0, 700.0, false),
        (80.0, 60.0, 90.0, 120.0, true),
        (110.0, 110.0, 130.0, 600.0, true),
    ];
    const PER_ORDER: u32 = 20;
    let mut orders = Vec::new();
    let mut left = pallets;
    while left > 0 {
        let i = orders.len();
        let count = left.min(PER_ORDER);
        let (length_cm, width_cm, height_cm, weight_kg, stackable) = KINDS[i % KINDS.len()];
        orders.push(Order {
            id: format!("SO-{:05}", i + 1),
            deadline_days: 6 + (i as u32 * 37) % 55,
            pallets: vec![Pallet {
                length_cm,
                width_cm,
                height_cm,
                weight_kg,
                count,
                stackable,
            }],
        });
        left -= count;
    }
    Ok(LoadProblem {
        orders,
        // The example's rates, read from the example itself.
        rates: LoadProblem::parse(EXAMPLE)?.rates,
        delays: Delays::default(),
        policy: Policy::default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_cohorts_are_valid_up_to_the_limit() {
        for pallets in [1, 19, 20, 21, 1_000, MAX_PALLETS as u32] {
            let problem = generated(pallets).unwrap();
            problem.validate().unwrap();
            let counted: u32 = problem
                .orders
                .iter()
                .flat_map(|order| &order.pallets)
                .map(|pallet| pallet.count)
                .sum();
            assert_eq!(counted, pallets);
            assert_eq!(problem.orders.len(), pallets.div_ceil(20) as usize);
        }
    }

    #[test]
    fn the_example_is_valid() {
        let problem = LoadProblem::parse(EXAMPLE).unwrap();
        assert_eq!(problem.orders.len(), 4);
        assert_eq!(problem.policy.max_miss_probability, 0.1);
    }

    #[test]
    fn bad_input_names_the_field() {
        use serde_json::json;
        let example: serde_json::Value = serde_json::from_str(EXAMPLE).unwrap();
        // (what the error names, the JSON pointer to change, the new value)
        let cases = [
            (
                "orders[0].pallets[0].length_cm",
                "/orders/0/pallets/0/length_cm",
                json!(-5),
            ),
            ("orders is empty", "/orders", json!([])),
            ("repeats an earlier order", "/orders/1/id", json!("PO-1001")),
            (
                "rates.fcl.containers is empty",
                "/rates/fcl/containers",
                json!([]),
            ),
            (
                "max_miss_probability",
                "/policy/max_miss_probability",
                json!(2),
            ),
            ("count", "/orders/0/pallets/0/count", json!(0)),
        ];
        for (fragment, pointer, value) in cases {
            let mut problem = example.clone();
            *problem.pointer_mut(pointer).unwrap() = value;
            let error = LoadProblem::parse(&problem.to_string()).unwrap_err();
            assert!(error.0.message.contains(fragment), "{fragment}: {error}");
        }
        let mut problem = example.clone();
        problem["delays"] = json!({"air": {"0": 0.5, "1": 0.4}});
        let error = LoadProblem::parse(&problem.to_string()).unwrap_err();
        assert!(error.0.message.contains("delays.air"), "{error}");
        let mut problem = example;
        problem["rates"]["ship"] = json!({});
        let error = LoadProblem::parse(&problem.to_string()).unwrap_err();
        assert!(error.0.message.contains("unknown field"), "{error}");
    }

    /// A missing field's error names where it is missing and shows the
    /// field's shape as the example writes it; other errors show none.
    #[test]
    fn a_missing_field_shows_its_shape() {
        use serde_json::json;
        let example: serde_json::Value = serde_json::from_str(EXAMPLE).unwrap();
        let rates = example["rates"].to_string();
        let container = example["rates"]["fcl"]["containers"][0]["price"].to_string();
        let cases = [
            (
                "/rates",
                "missing field `rates`".to_owned(),
                format!(" — it looks like \"rates\": {rates}"),
            ),
            (
                "/rates/air/per_kg",
                "rates.air: missing field `per_kg`".to_owned(),
                " — it looks like \"per_kg\": 4.2".to_owned(),
            ),
            (
                "/rates/fcl/containers/1/price",
                "rates.fcl.containers[1]: missing field `price`".to_owned(),
                format!(" — it looks like \"price\": {container}"),
            ),
            (
                "/orders/2/pallets/0/weight_kg",
                "orders[2].pallets[0]: missing field `weight_kg`".to_owned(),
                " — it looks like \"weight_kg\": 180".to_owned(),
            ),
            (
                "/orders/3/id",
                "orders[3]: missing field `id`".to_owned(),
                " — it looks like \"id\": \"PO-1001\"".to_owned(),
            ),
        ];
        for (pointer, fragment, shape) in cases {
            let mut problem = example.clone();
            let (parent, field) = pointer.rsplit_once('/').unwrap();
            let removed = problem
                .pointer_mut(if parent.is_empty() { "" } else { parent })
                .and_then(|parent| parent.as_object_mut())
                .and_then(|parent| parent.remove(field));
            assert!(removed.is_some(), "{pointer}");
            let from_value = LoadProblem::from_value(problem.clone()).unwrap_err();
            assert_eq!(from_value, format!("{fragment}{shape}"), "{pointer}");
            let parsed = LoadProblem::parse(&problem.to_string()).unwrap_err();
            assert!(
                parsed
                    .0
                    .message
                    .starts_with(&format!("problem: {fragment}"))
                    && parsed.0.message.ends_with(&shape),
                "{pointer}: {}",
                parsed.0.message
            );
        }
        // The shape shown is one the planner reads: the example's rates
        // put back in place parse.
        let mut problem = example.clone();
        problem.as_object_mut().unwrap().remove("rates");
        let error = LoadProblem::from_value(problem.clone()).unwrap_err();
        let (_, shape) = error.split_once("\"rates\": ").unwrap();
        problem["rates"] = serde_json::from_str(shape).unwrap();
        LoadProblem::from_value(problem)
            .unwrap()
            .validate()
            .unwrap();
        // Not a missing field: no shape.
        let mut problem = example;
        problem["rates"]["air"]["per_kg"] = json!("cheap");
        let error = LoadProblem::from_value(problem).unwrap_err();
        assert!(
            error.starts_with("rates.air.per_kg: invalid type"),
            "{error}"
        );
        assert!(!error.contains("looks like"), "{error}");
    }
}
