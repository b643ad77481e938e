//! Exact risk figures from discrete delay distributions: ETA percentiles,
//! the chance of missing a deadline, and the CVaR of the delay — computed by
//! summing probabilities, never by sampling, so the same input gives the
//! same figures everywhere.
//!
//! Conventions a maintainer must keep: a percentile is the smallest value
//! whose cumulative probability reaches the level; CVaR90 is the mean of the
//! worst 10% of the probability mass (the atom at the 90% quantile counted
//! in part); shipments are independent.

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

    /// P(delay > `days`).
    pub fn exceeds(&self, days: i64) -> f64 {
        let tail: f64 = self
            .atoms
            .iter()
            .filter(|(day, _)| i64::from(*day) > days)
            .map(|(_, p)| p)
            .sum();
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
        assert!((miss_probability(30, &d, 20) - 1.0).abs() < 1e-12);
        assert!((any_miss(&[0.1, 0.2]) - 0.28).abs() < 1e-12);
        assert_eq!(any_miss(&[]), 0.0);
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
