//! Which containers hold a set of full-container (FCL) pallets, as the
//! packer places them: what one container of each type holds (the model's
//! capacities), whether a mix of types holds a card's pallets, how many
//! containers each type alone needs, and the cheapest mix a short search
//! finds.
//!
//! A mix holds pallets when the packer, placing them first-fit into the
//! mix's containers opened a block of one type after another, leaves none
//! over. First-fit never changes what an earlier container takes because a
//! later one exists, so the first `k` containers of one unbounded packing
//! into a type are exactly what a block of `k` containers of that type
//! takes: one packing per type serves every block size, and what it leaves
//! goes on to the next block. Payload limits hold because the packer keeps
//! them in every container.
//!
//! What it deliberately does not do: search every mix. The cheapest mix is
//! the best of each type alone and of each ordered pair of types in which
//! the first type's last few containers give way to the second type's
//! (then any others, for what neither takes). Nothing here estimates from
//! volumes: a mix said to hold the pallets holds them by the packer's own
//! placements — the one thing a maintainer must not break.

use std::borrow::Cow;

use super::packer::{self, ContainerSpec, Packing, PalletUnit};

/// One container type: its inside and its price.
#[derive(Debug, Clone)]
pub(crate) struct TypeSpec {
    pub(crate) spec: ContainerSpec,
    pub(crate) price_cents: i64,
}

/// How many of the first type's last containers the search gives way to
/// another type.
const TAIL: u32 = 3;

/// The litres a unit counts for, as an order's volume counts its pallets:
/// its whole-centimetre box, rounded up to the litre.
pub(crate) fn litres(unit: &PalletUnit) -> i64 {
    let cm3 = f64::from(unit.length_cm) * f64::from(unit.width_cm) * f64::from(unit.height_cm);
    (cm3 / 1000.0).ceil() as i64
}

/// The litres each container of `packing` holds, in opening order.
pub(crate) fn loads_l(packing: &Packing, units: &[PalletUnit]) -> Vec<i64> {
    packing
        .loads
        .iter()
        .map(|load| {
            load.placements
                .iter()
                .filter_map(|placed| units.get(placed.unit_index))
                .map(litres)
                .sum()
        })
        .collect()
}

/// What one container of a type holds, for the model, from the litres its
/// containers hold in a packing: the mean of the full ones (every one but
/// the last, which takes what is left), and never less than an equal share
/// of all of it, so that the packing's own count of containers holds, in
/// the model too, everything it packed. A lone container: what it holds.
pub(crate) fn capacity_l(loads: &[i64]) -> i64 {
    let Some((_, full)) = loads.split_last() else {
        return 0;
    };
    let total: i64 = loads.iter().sum();
    if full.is_empty() {
        return total;
    }
    let count = loads.len() as i64;
    let share = (total + count - 1) / count;
    let mean_full = full.iter().sum::<i64>() / full.len() as i64;
    mean_full.max(share)
}

/// A mix the packer fills: containers per type, in the order of the types,
/// and the litres each type's containers hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Placed {
    pub(crate) mix: Vec<u32>,
    pub(crate) litres: Vec<i64>,
}

impl Placed {
    /// What the mix costs, in cents.
    pub(crate) fn cost_cents(&self, types: &[TypeSpec]) -> i64 {
        mix_cost(&self.mix, types)
    }
}

/// What `mix` costs, in cents.
pub(crate) fn mix_cost(mix: &[u32], types: &[TypeSpec]) -> i64 {
    mix.iter()
        .zip(types)
        .map(|(count, kind)| i64::from(*count) * kind.price_cents)
        .sum()
}

/// A set of pallets and the container types, with each type's unbounded
/// packing of every pallet.
pub(crate) struct Fit<'a> {
    units: &'a [PalletUnit],
    types: &'a [TypeSpec],
    alone: Cow<'a, [Packing]>,
}

impl<'a> Fit<'a> {
    /// Packs `units` into each type.
    pub(crate) fn new(units: &'a [PalletUnit], types: &'a [TypeSpec]) -> Self {
        let alone = types
            .iter()
            .map(|kind| packer::pack(units, &kind.spec))
            .collect();
        Fit {
            units,
            types,
            alone: Cow::Owned(alone),
        }
    }

    /// With each type's packing of `units` already made (one per type, in
    /// order).
    pub(crate) fn packed(
        units: &'a [PalletUnit],
        types: &'a [TypeSpec],
        alone: &'a [Packing],
    ) -> Self {
        Fit {
            units,
            types,
            alone: Cow::Borrowed(alone),
        }
    }

    /// Containers of each type that hold every pallet alone; `None` for a
    /// type some pallet fits no container of.
    pub(crate) fn alone(&self) -> Vec<Option<u32>> {
        self.alone
            .iter()
            .map(|packing| packing.unplaceable.is_empty().then_some(packing.containers))
            .collect()
    }

    /// Whether `mix` holds every pallet, trying its types' blocks in a few
    /// orders (the types with the most containers first, then the others;
    /// every order when it uses at most three types); the first placement
    /// that leaves nothing over.
    pub(crate) fn place(&self, mix: &[u32]) -> Option<Placed> {
        if mix.len() != self.types.len() {
            return None;
        }
        if self.units.is_empty() {
            return Some(Placed {
                mix: mix.to_vec(),
                litres: vec![0; mix.len()],
            });
        }
        let mut used: Vec<usize> = (0..mix.len()).filter(|t| mix[*t] > 0).collect();
        used.sort_by(|a, b| mix[*b].cmp(&mix[*a]).then(a.cmp(b)));
        let orders = if used.len() <= 3 {
            permutations(&used)
        } else {
            let mut reversed = used.clone();
            reversed.reverse();
            vec![used, reversed]
        };
        orders.iter().find_map(|order| {
            let blocks: Vec<(usize, Option<u32>)> =
                order.iter().map(|t| (*t, Some(mix[*t]))).collect();
            self.fill(&blocks)
        })
    }

    /// The cheapest mix found that holds every pallet (ties: fewer
    /// containers, then the earlier types); `None` when none does.
    pub(crate) fn cheapest(&self) -> Option<Placed> {
        let mut candidates = Vec::new();
        for (t, packing) in self.alone.iter().enumerate() {
            candidates.extend(self.fill(&[(t, None)]));
            for other in (0..self.types.len()).filter(|other| *other != t) {
                // The first type's last few containers give way to the
                // other; then the remaining types, for what neither takes.
                let rest = (0..self.types.len()).filter(|r| *r != t && *r != other);
                let after: Vec<(usize, Option<u32>)> = std::iter::once((other, None))
                    .chain(rest.map(|r| (r, None)))
                    .collect();
                let most = packing.containers;
                for kept in most.saturating_sub(TAIL)..=most {
                    let mut blocks = vec![(t, Some(kept))];
                    blocks.extend(after.iter().copied());
                    candidates.extend(self.fill(&blocks));
                }
            }
        }
        candidates.into_iter().min_by(|a, b| {
            a.cost_cents(self.types)
                .cmp(&b.cost_cents(self.types))
                .then(a.mix.iter().sum::<u32>().cmp(&b.mix.iter().sum::<u32>()))
                .then(b.mix.cmp(&a.mix))
        })
    }

    /// Places the pallets block by block — each block a type and at most
    /// how many of its containers (`None`: as many as it takes) — and
    /// returns the mix used when nothing is left over. The first block
    /// reads the type's unbounded packing; each later one packs what is
    /// left.
    fn fill(&self, blocks: &[(usize, Option<u32>)]) -> Option<Placed> {
        let mut mix = vec![0u32; self.types.len()];
        let mut litres = vec![0i64; self.types.len()];
        let mut left: Option<Vec<PalletUnit>> = None;
        for (position, (t, most)) in blocks.iter().enumerate() {
            let units: &[PalletUnit] = left.as_deref().unwrap_or(self.units);
            if units.is_empty() {
                break;
            }
            let kind = self.types.get(*t)?;
            let fresh;
            let packing = if position == 0 {
                self.alone.get(*t)?
            } else {
                fresh = packer::pack(units, &kind.spec);
                &fresh
            };
            let taken = most.map_or(packing.containers, |most| most.min(packing.containers));
            let mut held = vec![false; units.len()];
            for load in packing.loads.iter().take(taken as usize) {
                for placed in &load.placements {
                    if let Some(slot) = held.get_mut(placed.unit_index) {
                        *slot = true;
                    }
                }
            }
            mix[*t] += taken;
            litres[*t] += units
                .iter()
                .zip(&held)
                .filter(|(_, held)| **held)
                .map(|(unit, _)| litres_of(unit))
                .sum::<i64>();
            left = Some(
                units
                    .iter()
                    .zip(&held)
                    .filter(|(_, held)| !**held)
                    .map(|(unit, _)| unit.clone())
                    .collect(),
            );
        }
        let nothing_left = left.as_ref().map_or(self.units.is_empty(), Vec::is_empty);
        nothing_left.then_some(Placed { mix, litres })
    }
}

fn litres_of(unit: &PalletUnit) -> i64 {
    litres(unit)
}

/// Every order of `items` (a handful at most).
fn permutations(items: &[usize]) -> Vec<Vec<usize>> {
    if items.len() <= 1 {
        return vec![items.to_vec()];
    }
    let mut all = Vec::new();
    for (index, first) in items.iter().enumerate() {
        let mut rest = items.to_vec();
        rest.remove(index);
        for mut tail in permutations(&rest) {
            tail.insert(0, *first);
            all.push(tail);
        }
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The container types: 20ft at 2,200 and 40ft at 3,500.
    fn types() -> Vec<TypeSpec> {
        vec![
            TypeSpec {
                spec: ContainerSpec {
                    length_cm: 589,
                    width_cm: 235,
                    height_cm: 239,
                    max_payload_kg: 28_000.0,
                },
                price_cents: 220_000,
            },
            TypeSpec {
                spec: ContainerSpec {
                    length_cm: 1203,
                    width_cm: 235,
                    height_cm: 239,
                    max_payload_kg: 26_500.0,
                },
                price_cents: 350_000,
            },
        ]
    }

    fn eur(count: usize, height_cm: u32, weight_kg: f64) -> Vec<PalletUnit> {
        (0..count)
            .map(|i| PalletUnit {
                label: format!("EUR {height_cm} #{i:03}"),
                length_cm: 120,
                width_cm: 80,
                height_cm,
                weight_kg,
                stackable: false,
            })
            .collect()
    }

    #[test]
    fn the_packer_puts_eleven_in_a_20ft_and_twenty_five_in_a_40ft() {
        let types = types();
        let units = eur(100, 139, 500.0);
        let fit = Fit::new(&units, &types);
        assert_eq!(fit.alone(), [Some(10), Some(4)]);
        let per = |t: usize| loads_l(&fit.alone[t], &units);
        // 1,335 litres a pallet (120 × 80 × 139 cm, rounded up).
        assert_eq!(litres(&units[0]), 1_335);
        assert_eq!(capacity_l(&per(0)), 11 * 1_335);
        assert_eq!(capacity_l(&per(1)), 25 * 1_335);
    }

    #[test]
    fn capacity_is_the_mean_full_container_never_below_an_equal_share() {
        assert_eq!(capacity_l(&[]), 0);
        assert_eq!(capacity_l(&[700]), 700);
        // 11, 11, 8 pallets: a full container holds 11.
        assert_eq!(capacity_l(&[11, 11, 8]), 11);
        // A last container fuller than the others' mean: an equal share,
        // so three containers still hold the 32.
        assert_eq!(capacity_l(&[10, 11, 11]), 11);
        assert_eq!(capacity_l(&[10, 10, 12]), 11);
    }

    /// (pallets, the cheapest mix, its cost, each type alone): the small
    /// type wins, the big type wins, a mix wins.
    #[test]
    fn the_cheapest_mix_of_the_packer_placements() {
        let types = types();
        for (count, mix, cost, alone) in [
            (10, [1, 0], 220_000, [Some(1), Some(1)]),
            (11, [1, 0], 220_000, [Some(1), Some(1)]),
            (12, [0, 1], 350_000, [Some(2), Some(1)]),
            (25, [0, 1], 350_000, [Some(3), Some(1)]),
            (30, [1, 1], 570_000, [Some(3), Some(2)]),
            (36, [1, 1], 570_000, [Some(4), Some(2)]),
            (37, [0, 2], 700_000, [Some(4), Some(2)]),
            (61, [1, 2], 920_000, [Some(6), Some(3)]),
        ] {
            let units = eur(count, 139, 500.0);
            let fit = Fit::new(&units, &types);
            assert_eq!(fit.alone(), alone, "{count}");
            let best = fit.cheapest().unwrap();
            assert_eq!(
                (best.mix.as_slice(), best.cost_cents(&types)),
                (&mix[..], cost),
                "{count}"
            );
            assert_eq!(
                best.litres.iter().sum::<i64>(),
                count as i64 * 1_335,
                "{count}"
            );
            // Never dearer than the best type alone.
            let single = alone
                .iter()
                .zip(&types)
                .filter_map(|(n, kind)| n.map(|n| i64::from(n) * kind.price_cents))
                .min()
                .unwrap();
            assert!(cost <= single, "{count}");
            // It holds them, as placed again; one container fewer does not.
            assert_eq!(fit.place(&mix), Some(best.clone()), "{count}");
            for t in 0..2 {
                if mix[t] > 0 {
                    let mut less = mix;
                    less[t] -= 1;
                    assert_eq!(fit.place(&less), None, "{count} {less:?}");
                }
            }
        }
    }

    #[test]
    fn payload_bounds_what_a_container_holds() {
        // 1,200 kg pallets: 22 by weight in a 40ft (26,500 kg), though 25
        // fit by space; a 20ft takes 11 (13,200 kg, within 28,000).
        let types = types();
        let units = eur(25, 139, 1_200.0);
        let fit = Fit::new(&units, &types);
        assert_eq!(fit.alone(), [Some(3), Some(2)]);
        assert_eq!(capacity_l(&loads_l(&fit.alone[1], &units)), 22 * 1_335);
        assert_eq!(fit.place(&[0, 1]), None);
        let best = fit.cheapest().unwrap();
        assert_eq!(best.mix, [1, 1]);
    }

    #[test]
    fn pallets_one_type_cannot_take_go_to_the_other() {
        // 250 cm tall: too tall for these 239 cm types, so a taller type
        // must take them.
        let mut types = types();
        types.push(TypeSpec {
            spec: ContainerSpec {
                length_cm: 1203,
                width_cm: 235,
                height_cm: 269,
                max_payload_kg: 26_500.0,
            },
            price_cents: 400_000,
        });
        let mut units = eur(12, 139, 500.0);
        units.extend(eur(2, 250, 500.0));
        let fit = Fit::new(&units, &types);
        assert_eq!(fit.alone(), [None, None, Some(1)]);
        let best = fit.cheapest().unwrap();
        assert_eq!(best.mix, [0, 0, 1]);
        assert_eq!(fit.place(&[2, 0, 0]), None);
        assert!(fit.place(&[1, 0, 1]).is_some());
    }

    #[test]
    fn nothing_to_place_needs_nothing() {
        let types = types();
        let fit = Fit::new(&[], &types);
        assert_eq!(fit.alone(), [Some(0), Some(0)]);
        assert_eq!(fit.cheapest().map(|p| p.mix), Some(vec![0, 0]));
        assert!(fit.place(&[0, 0]).is_some());
    }
}
