//! Exact risk figures from discrete delay distributions: ETA percentiles,
//! the chance of missing a deadline, and the CVaR of the delay — computed by
//! summing probabilities, never by sampling, so the same input gives the
//! same figures everywhere.
//!
//! Conventions a maintainer must keep: a percentile is the smallest value
//! whose cumulative probability reaches the level; CVaR90 is the mean of the
//! worst 10% of the probability mass (the atom at the 90% quantile counted
//! in part); shipments are independent.
//!
//! The policy reaches the model as integers in log space (see
//! [`miss_units`] and [`miss_budget`]): each term is rounded up and the
//! budget down, so the model never admits a plan the exact product refuses.

use std::collections::BTreeMap;

/// Extra days beyond transit, with their probabilities (sorted by day).
#[derive(Debug, Clone, PartialEq)]
pub struct Distribution {
    atoms: Vec<(u32, f64)>,
}

/// Why a `{"day": probability}` table is not a distribution.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TableError {
    /// The table has no entries.
    #[error("the table is empty")]
    Empty,
    /// A key is not a whole number of days.
    #[error("{0:?} is not a whole number of days")]
    NotADay(String),
    /// A delay is longer than 3,650 days.
    #[error("a delay of {0} days is beyond ten years")]
    TooLong(u32),
    /// A probability is not a finite number in 0..=1.
    #[error("the probability of day {day} must be between 0 and 1, got {probability}")]
    NotAProbability {
        /// The table's key, as written.
        day: String,
        /// The probability given for it.
        probability: f64,
    },
    /// The probabilities do not sum to 1 (within 1e-6).
    #[error("the probabilities sum to {0}, not 1")]
    Sum(f64),
}

/// How far from 1 a table's probabilities may sum.
const SUM_TOLERANCE: f64 = 1e-6;

impl Distribution {
    /// Reads a `{"day": probability}` table; the problem in words when it is
    /// not a distribution.
    pub fn from_table(table: &BTreeMap<String, f64>) -> Result<Distribution, TableError> {
        if table.is_empty() {
            return Err(TableError::Empty);
        }
        let mut atoms = BTreeMap::new();
        for (day, probability) in table {
            let parsed: u32 = day
                .trim()
                .parse()
                .map_err(|_| TableError::NotADay(day.clone()))?;
            if parsed > 3650 {
                return Err(TableError::TooLong(parsed));
            }
            if !probability.is_finite() || *probability < 0.0 || *probability > 1.0 {
                return Err(TableError::NotAProbability {
                    day: day.clone(),
                    probability: *probability,
                });
            }
            *atoms.entry(parsed).or_insert(0.0) += probability;
        }
        let sum: f64 = atoms.values().sum();
        if (sum - 1.0).abs() > SUM_TOLERANCE {
            return Err(TableError::Sum(sum));
        }
        Ok(Distribution {
            atoms: atoms.into_iter().filter(|(_, p)| *p > 0.0).collect(),
        })
    }

    /// The documented seed for a mode, used when the caller gives none:
    /// plausible carrier-reliability shapes, not measurements of any lane.
    pub fn seed(mode: super::Mode) -> Distribution {
        let atoms: &[(u32, f64)] = match mode {
            super::Mode::Air => &[(0, 0.80), (1, 0.12), (2, 0.05), (4, 0.03)],
            super::Mode::Lcl => &[(0, 0.45), (3, 0.25), (7, 0.15), (12, 0.10), (20, 0.05)],
            super::Mode::Fcl => &[(0, 0.55), (2, 0.20), (5, 0.15), (10, 0.07), (15, 0.03)],
        };
        Distribution {
            atoms: atoms.to_vec(),
        }
    }

    /// The smallest delay whose cumulative probability reaches `level`.
    pub fn quantile(&self, level: f64) -> u32 {
        let mut cumulative = 0.0;
        for (day, probability) in &self.atoms {
            cumulative += probability;
            if cumulative + 1e-12 >= level {
                return *day;
            }
        }
        self.atoms.last().map_or(0, |(day, _)| *day)
    }

    /// P(delay > `days`); an empty tail is `0.0`, never `-0.0` (the sum of
    /// no floats is `-0.0`, and a clamp keeps its sign).
    pub fn exceeds(&self, days: i64) -> f64 {
        let tail = self
            .atoms
            .iter()
            .filter(|(day, _)| i64::from(*day) > days)
            .fold(0.0, |sum, (_, p)| sum + p);
        tail.clamp(0.0, 1.0)
    }

    /// The mean delay over the worst `1 - level` of the probability mass.
    pub fn cvar(&self, level: f64) -> f64 {
        let tail_mass = 1.0 - level;
        if tail_mass <= 0.0 {
            return self.atoms.last().map_or(0.0, |(day, _)| f64::from(*day));
        }
        let mut remaining = tail_mass;
        let mut total = 0.0;
        for (day, probability) in self.atoms.iter().rev() {
            let taken = probability.min(remaining);
            total += taken * f64::from(*day);
            remaining -= taken;
            if remaining <= 1e-15 {
                break;
            }
        }
        total / tail_mass
    }
}

/// The risk read of one mode.
#[derive(Debug, Clone, PartialEq)]
pub struct ModeRisk {
    /// Transit plus the median delay, in days.
    pub eta_p50_days: u32,
    /// Transit plus the 90th-percentile delay, in days.
    pub eta_p90_days: u32,
    /// Mean delay of the worst 10% of outcomes, in days.
    pub cvar90_delay_days: f64,
}

/// A mode's ETA percentiles and CVaR90, given its transit days and delays.
pub fn mode_risk(transit_days: u32, delays: &Distribution) -> ModeRisk {
    ModeRisk {
        eta_p50_days: transit_days.saturating_add(delays.quantile(0.5)),
        eta_p90_days: transit_days.saturating_add(delays.quantile(0.9)),
        cvar90_delay_days: delays.cvar(0.9),
    }
}

/// P(transit + delay > deadline).
pub fn miss_probability(transit_days: u32, delays: &Distribution, deadline_days: u32) -> f64 {
    delays.exceeds(i64::from(deadline_days) - i64::from(transit_days))
}

/// P(at least one of independent shipments misses).
pub fn any_miss(probabilities: &[f64]) -> f64 {
    let all_on_time: f64 = probabilities.iter().map(|p| 1.0 - p).product();
    (1.0 - all_on_time).clamp(0.0, 1.0)
}

/// The scale of the model's miss terms: millionths of −ln(1 − p).
pub const MISS_UNITS_PER_NAT: f64 = 1e6;
/// The term of a shipment that always misses (p = 1, −ln 0 = ∞): above
/// every budget a policy below 1 gives (−ln of the smallest positive
/// `1 − max` in f64 is under 37 nats), and three of them stay inside the
/// model's 32-bit integers.
pub const MISS_UNITS_CAP: i64 = 100_000_000;
/// A relative margin above the float error of `ln` and the scaling, so a
/// term rounded up is never below the exact one and a budget rounded down
/// never above.
const MARGIN: f64 = 1e-12;

/// −ln(1 − `p`) in millionths, rounded up: the log-space term of a shipment
/// that misses with `p`. Exactly 0 for `p ≤ 0`; [`MISS_UNITS_CAP`] for
/// `p ≥ 1` (or any term that would reach it).
pub fn miss_units(p: f64) -> i64 {
    if p.is_nan() || p >= 1.0 {
        return MISS_UNITS_CAP;
    }
    if p <= 0.0 {
        return 0;
    }
    let units = (-(-p).ln_1p() * MISS_UNITS_PER_NAT * (1.0 + MARGIN)).ceil();
    if units >= MISS_UNITS_CAP as f64 {
        MISS_UNITS_CAP
    } else {
        units.max(0.0) as i64
    }
}

/// −ln(1 − `max_miss`) in millionths, rounded down: the most the used
/// shipments' [`miss_units`] may sum to. `None` when the policy bounds
/// nothing (`max_miss ≥ 1`).
///
/// If the terms' sum is within the budget, then Σ −ln(1 − pᵢ) ≤ Σ termᵢ/10⁶
/// ≤ budget/10⁶ ≤ −ln(1 − max), so 1 − Π(1 − pᵢ) ≤ max: the model is never
/// more permissive than the exact figure (it may refuse a plan within a
/// few millionths of the bound).
pub fn miss_budget(max_miss: f64) -> Option<i64> {
    if max_miss.is_nan() || max_miss >= 1.0 {
        return None;
    }
    if max_miss <= 0.0 {
        return Some(0);
    }
    let units = (-(-max_miss).ln_1p() * MISS_UNITS_PER_NAT * (1.0 - MARGIN)).floor();
    Some(units.clamp(0.0, (MISS_UNITS_CAP - 1) as f64) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(pairs: &[(&str, f64)]) -> Distribution {
        let table: BTreeMap<String, f64> = pairs.iter().map(|(d, p)| (d.to_string(), *p)).collect();
        Distribution::from_table(&table).unwrap()
    }

    #[test]
    fn quantiles_take_the_smallest_day_that_reaches_the_level() {
        let d = table(&[("0", 0.5), ("2", 0.4), ("10", 0.1)]);
        assert_eq!(d.quantile(0.5), 0);
        assert_eq!(d.quantile(0.9), 2);
        assert_eq!(d.quantile(0.95), 10);
        let risk = mode_risk(28, &d);
        assert_eq!((risk.eta_p50_days, risk.eta_p90_days), (28, 30));
    }

    #[test]
    fn cvar_counts_the_boundary_atom_in_part() {
        // Worst 10%: exactly the 0.1 atom at day 10.
        let d = table(&[("0", 0.5), ("2", 0.4), ("10", 0.1)]);
        assert!((d.cvar(0.9) - 10.0).abs() < 1e-12);
        // Worst 10%: 0.05 at day 20 and 0.05 of the day-4 atom.
        let d = table(&[("0", 0.7), ("4", 0.25), ("20", 0.05)]);
        assert!((d.cvar(0.9) - 12.0).abs() < 1e-12, "{}", d.cvar(0.9));
    }

    #[test]
    fn miss_probability_is_the_tail_past_the_slack() {
        let d = table(&[("0", 0.6), ("3", 0.3), ("7", 0.1)]);
        assert!((miss_probability(30, &d, 32) - 0.4).abs() < 1e-12);
        assert!((miss_probability(30, &d, 37) - 0.0).abs() < 1e-12);
        // No tail at all: a plain zero, not the empty sum's -0.0.
        for deadline in [37, 40, 1_000] {
            let none = miss_probability(30, &d, deadline);
            assert!(
                none == 0.0 && none.is_sign_positive(),
                "{deadline}: {none:?}"
            );
        }
        assert!((miss_probability(30, &d, 20) - 1.0).abs() < 1e-12);
        assert!((any_miss(&[0.1, 0.2]) - 0.28).abs() < 1e-12);
        assert_eq!(any_miss(&[]), 0.0);
    }

    #[test]
    fn the_policy_in_log_space_is_never_more_permissive_than_the_product() {
        assert_eq!(miss_units(0.0), 0);
        assert_eq!(miss_units(-0.0), 0);
        assert_eq!(miss_units(1.0), MISS_UNITS_CAP);
        assert_eq!(miss_budget(1.0), None);
        assert_eq!(miss_budget(0.0), Some(0));
        // Any chance of a miss breaks a policy of 0.
        assert!(miss_units(1e-12) > 0);
        // -ln(0.9) = 0.105360515...: the term rounds up, the budget down.
        assert_eq!(miss_units(0.1), 105_361);
        assert_eq!(miss_budget(0.1), Some(105_360));
        // Nearly certain misses stay finite and below the cap; every
        // budget below 1 is below the cap.
        let nearly = 1.0 - f64::EPSILON / 2.0;
        assert!(miss_units(nearly) < MISS_UNITS_CAP);
        assert!(miss_budget(nearly).is_some_and(|b| b < MISS_UNITS_CAP));
        // Whenever the rounded terms fit the budget, the exact product
        // meets the policy.
        let ps = [
            0.0, 1e-6, 0.01, 0.03, 0.05, 0.0591, 0.08, 0.1, 0.15, 0.5, 0.999,
        ];
        for max in [0.0, 0.01, 0.05, 0.0591, 0.1, 0.127, 0.2, 0.5, 0.999] {
            let Some(budget) = miss_budget(max) else {
                continue;
            };
            for a in ps {
                for b in ps {
                    for c in ps {
                        let units = miss_units(a) + miss_units(b) + miss_units(c);
                        if units <= budget {
                            assert!(any_miss(&[a, b, c]) <= max, "{a} {b} {c} under {max}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn tables_that_are_not_distributions_are_refused() {
        let bad = |pairs: &[(&str, f64)]| {
            let table: BTreeMap<String, f64> =
                pairs.iter().map(|(d, p)| (d.to_string(), *p)).collect();
            Distribution::from_table(&table).unwrap_err().to_string()
        };
        assert!(bad(&[("0", 0.5), ("1", 0.4)]).contains("sum to"));
        assert!(bad(&[("x", 1.0)]).contains("not a whole number"));
        assert!(bad(&[("0", -0.5), ("1", 1.5)]).contains("between 0 and 1"));
        assert!(bad(&[]).contains("empty"));
    }

    #[test]
    fn the_seeds_are_distributions() {
        for mode in [
            super::super::Mode::Air,
            super::super::Mode::Lcl,
            super::super::Mode::Fcl,
        ] {
            let seed = Distribution::seed(mode);
            let sum: f64 = seed.atoms.iter().map(|(_, p)| p).sum();
            assert!((sum - 1.0).abs() < 1e-9, "{mode:?}");
        }
    }
}
