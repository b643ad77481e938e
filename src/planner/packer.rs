//! Deterministic 3D pallet packer for full-container (FCL) loads.
//!
//! [`pack`] places physical pallet units into as many containers of a single
//! container type as needed and reports the container count, the achieved
//! volumetric fill rate and the units that fit no empty container at all. The
//! load planner runs it before the MiniZinc mode-choice model, which consumes
//! the container count and fill rate.
//!
//! How: units are sorted by a total order on their contents (floor area desc,
//! height desc, length desc, width desc, stackable first, weight desc, then
//! label asc), then placed first-fit over the open containers in opening
//! order. Within a container a stackable unit first tries to go on top of an
//! existing column whose top pallet is stackable and covers its footprint
//! (best fit by wasted top area, then by leftover height); otherwise the unit
//! goes on the floor, which is managed as a MaxRects free-rectangle list with
//! best-short-side-fit over both floor rotations. A new container is opened only when no open container takes the
//! unit. Coordinates: `x` runs along the container length, `y` along its
//! width, `z` up, all from one bottom corner.
//!
//! Speed: units that differ only in their label are contiguous in that order
//! and form a run. Within a run the first-fit scan resumes at the container
//! that took the previous unit (the earlier ones refused an identical unit
//! and have not changed since), and every open container keeps cheap bounds
//! (weight loaded, largest short and long side over the free floor
//! rectangles and over the stackable tops, lowest stackable top) that rule it
//! out in O(1) without calling the placement code. Both only ever skip
//! containers that would refuse the unit, so the result is exactly that of
//! plain first-fit, and a cohort of a few dozen pallet kinds packs in about
//! O(n log n).
//!
//! What it deliberately does not do: it is a heuristic, not an optimiser (no
//! backtracking or search, so it can use more containers than the optimum);
//! it packs into one container type only; pallets rotate only about the
//! vertical axis; stacks are simple columns (an upper pallet sits in the
//! corner of the single pallet below it, no bridging across several pallets
//! and no partial overlaps); it ignores axle loads, centre of gravity, load
//! securing, door access and loading sequence, and per-pallet crush limits.
//! Units with a zero dimension or with a negative or non-finite weight are
//! treated as unplaceable rather than packed.
//!
//! The one thing a maintainer must not break: determinism. The output must be
//! a pure function of the input, bit for bit, in every process. Keep the sort
//! key a total order (ties fall back to the input index only for units that
//! are identical in every field), iterate only over `Vec`s and slices in a
//! fixed order (never a `HashMap`/`HashSet`), accumulate floating-point
//! weights in placement order, and use no randomness, clocks or threads.
//! The speed-ups above must stay exact: they may only skip containers that
//! would refuse the unit (the tests compare `pack` with plain first-fit).

use std::cmp::Ordering;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One physical pallet (a `count` of N in the input becomes N units).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PalletUnit {
    /// Human-readable name, e.g. `"order A pallet 1 #3"`; used to name
    /// unplaceable pallets and placements.
    pub label: String,
    /// Extent along the container length when not rotated.
    pub length_cm: u32,
    /// Extent along the container width when not rotated.
    pub width_cm: u32,
    /// Height; pallets are never tipped over.
    pub height_cm: u32,
    /// Counts against the container's `max_payload_kg`.
    pub weight_kg: f64,
    /// May carry another pallet on top, and may be put on top of another.
    pub stackable: bool,
}

/// The inside of one container type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ContainerSpec {
    /// Inner length: the floor's x extent.
    pub length_cm: u32,
    /// Inner width: the floor's y extent.
    pub width_cm: u32,
    /// Inner height: the tallest stack it takes.
    pub height_cm: u32,
    /// The most the placed units may weigh together.
    pub max_payload_kg: f64,
}

/// Where one unit went inside its container.
///
/// `x_cm` runs along the container length, `y_cm` along its width and `z_cm`
/// up. `length_cm`/`width_cm` are the extents along x/y as placed, so when
/// `rotated` is true they are the unit's width/length swapped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Placement {
    /// The placed unit's [`PalletUnit::label`].
    pub label: String,
    /// Index of the unit in the slice passed to [`pack`].
    pub unit_index: usize,
    /// Where the unit starts along the container length, from the origin
    /// corner.
    pub x_cm: u32,
    /// Where the unit starts along the container width, from the origin
    /// corner.
    pub y_cm: u32,
    /// Height of the unit's bottom above the floor (0 on the floor).
    pub z_cm: u32,
    /// Extent along x as placed.
    pub length_cm: u32,
    /// Extent along y as placed.
    pub width_cm: u32,
    /// The unit's height.
    pub height_cm: u32,
    /// True when the footprint is turned 90° about the vertical axis.
    pub rotated: bool,
}

/// The contents of one container.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ContainerLoad {
    /// In placement order.
    pub placements: Vec<Placement>,
    /// Sum of the placed units' weights, never above `max_payload_kg`.
    pub weight_kg: f64,
    /// Sum of the placed units' volumes.
    pub volume_cm3: u64,
}

/// Result of [`pack`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Packing {
    /// Containers used (0 when nothing is packed).
    pub containers: u32,
    /// One per container, in opening order.
    pub loads: Vec<ContainerLoad>,
    /// Sum of the placed units' volumes.
    pub packed_volume_cm3: u64,
    /// `packed_volume_cm3 / (containers × container volume)`; 0.0 when
    /// `containers == 0`.
    pub fill_rate: f64,
    /// Labels of units that fit no empty container (too long/wide/tall in both
    /// floor rotations, heavier than `max_payload_kg`, or degenerate), in
    /// input order.
    pub unplaceable: Vec<String>,
}

/// Packs `units` into containers of type `container`. Deterministic.
#[must_use]
pub fn pack(units: &[PalletUnit], container: &ContainerSpec) -> Packing {
    let (order, mut unplaceable) = admit_and_sort(units, container);

    let mut open: Vec<OpenContainer> = Vec::new();
    // First-fit, one run of identical units at a time. `resume` is where the
    // first-fit scan for the next unit starts; every container before it is
    // known to refuse that unit. Why skipping them changes nothing:
    //
    // * `try_place` either places the unit or returns false without touching
    //   the container, and whether it places it (and where) depends only on
    //   the container's state and the unit's `length_cm`, `width_cm`,
    //   `height_cm`, `weight_kg` and `stackable` (label and index are only
    //   copied into the placement).
    // * Within a run (consecutive units equal in those fields, see
    //   `same_kind`), every container before index `t` refused the previous
    //   unit of the run, where `t` is the container that took it (possibly a
    //   new one) or, if it went unplaceable, the number of open containers:
    //   the ones before the previous `resume` by this very argument, the
    //   ones scanned since by an actual refusal or by their bounds (below).
    //   Since then only container `t` changed, or a new container was
    //   appended at `t`. So every container before `t` is in the same state
    //   as when it refused an identical unit and refuses this one too:
    //   resuming at `t` finds the same first fit as scanning from 0.
    // * A new run starts the scan at container 0 again.
    //
    // Within the scan, a container is skipped without calling `try_place`
    // when its `Bounds` rule the unit out, which they only ever do when
    // `try_place` would refuse it. `bounds[i]` is `open[i].bounds`, kept in a
    // separate dense vector so the scan over full containers stays cheap.
    let mut bounds: Vec<Bounds> = Vec::new();
    let mut resume = 0usize;
    let mut previous: Option<&PalletUnit> = None;
    for &index in &order {
        let unit = &units[index];
        if !previous.is_some_and(|p| same_kind(p, unit)) {
            resume = 0;
        }
        previous = Some(unit);
        let mut start = resume;
        let mut taken = None;
        while let Some(i) = (start..open.len()).find(|&i| !bounds[i].rules_out(unit, container)) {
            if open[i].try_place(index, unit, container) {
                bounds[i] = open[i].bounds;
                taken = Some(i);
                break;
            }
            start = i + 1;
        }
        match taken {
            Some(i) => resume = i,
            None => {
                let mut fresh = OpenContainer::new(container);
                // `fits_empty` guarantees an empty container takes the unit;
                // the check keeps a broken invariant from silently dropping
                // it.
                if fresh.try_place(index, unit, container) {
                    resume = open.len();
                    bounds.push(fresh.bounds);
                    open.push(fresh);
                } else {
                    // Nothing changed and every open container refused.
                    resume = open.len();
                    unplaceable.push(unit.label.clone());
                }
            }
        }
    }
    summarise(open, unplaceable, container)
}

/// Splits the input into the indices of the units that fit an empty
/// container, sorted into packing order, and the labels of the others in
/// input order.
fn admit_and_sort(units: &[PalletUnit], container: &ContainerSpec) -> (Vec<usize>, Vec<String>) {
    let mut unplaceable = Vec::new();
    let mut order: Vec<usize> = Vec::with_capacity(units.len());
    for (index, unit) in units.iter().enumerate() {
        if fits_empty(unit, container) {
            order.push(index);
        } else {
            unplaceable.push(unit.label.clone());
        }
    }
    order.sort_by(|&a, &b| pack_order(&units[a], &units[b]).then(a.cmp(&b)));
    (order, unplaceable)
}

/// The [`Packing`] for the filled containers, in opening order.
fn summarise(
    open: Vec<OpenContainer>,
    unplaceable: Vec<String>,
    container: &ContainerSpec,
) -> Packing {
    let loads: Vec<ContainerLoad> = open.into_iter().map(|c| c.load).collect();
    let packed_volume_cm3 = loads
        .iter()
        .fold(0u64, |acc, l| acc.saturating_add(l.volume_cm3));
    let containers = u32::try_from(loads.len()).unwrap_or(u32::MAX);
    let capacity = f64::from(containers) * volume_f64(container);
    let fill_rate = if containers == 0 || capacity <= 0.0 {
        0.0
    } else {
        packed_volume_cm3 as f64 / capacity
    };
    Packing {
        containers,
        loads,
        packed_volume_cm3,
        fill_rate,
        unplaceable,
    }
}

/// True when `unit` fits into an empty `container` in some floor rotation and
/// within the payload. Degenerate units (a zero dimension, negative or
/// non-finite weight) never fit.
fn fits_empty(unit: &PalletUnit, container: &ContainerSpec) -> bool {
    let dims_ok = unit.length_cm > 0 && unit.width_cm > 0 && unit.height_cm > 0;
    let weight_ok = unit.weight_kg.is_finite()
        && unit.weight_kg >= 0.0
        && unit.weight_kg <= container.max_payload_kg;
    let floor_ok = (unit.length_cm <= container.length_cm && unit.width_cm <= container.width_cm)
        || (unit.width_cm <= container.length_cm && unit.length_cm <= container.width_cm);
    dims_ok && weight_ok && floor_ok && unit.height_cm <= container.height_cm
}

fn floor_area(unit: &PalletUnit) -> u64 {
    u64::from(unit.length_cm) * u64::from(unit.width_cm)
}

fn unit_volume(unit: &PalletUnit) -> u64 {
    floor_area(unit).saturating_mul(u64::from(unit.height_cm))
}

fn volume_f64(container: &ContainerSpec) -> f64 {
    f64::from(container.length_cm) * f64::from(container.width_cm) * f64::from(container.height_cm)
}

/// Packing order: a total order on everything that influences placement, so
/// that only units identical in every field fall back to the input index.
/// The label comes last, so units that differ only in their label (the same
/// pallet kind in different orders) are contiguous and `pack` can treat them
/// as one run.
fn pack_order(a: &PalletUnit, b: &PalletUnit) -> Ordering {
    floor_area(b)
        .cmp(&floor_area(a))
        .then(b.height_cm.cmp(&a.height_cm))
        .then(b.length_cm.cmp(&a.length_cm))
        .then(b.width_cm.cmp(&a.width_cm))
        .then(b.stackable.cmp(&a.stackable))
        .then(b.weight_kg.total_cmp(&a.weight_kg))
        .then_with(|| a.label.cmp(&b.label))
}

/// True when `try_place` treats the two units alike: equal in every field but
/// the label. Weights compare by bits, matching `total_cmp` in `pack_order`,
/// so a run is always contiguous in packing order.
fn same_kind(a: &PalletUnit, b: &PalletUnit) -> bool {
    a.length_cm == b.length_cm
        && a.width_cm == b.width_cm
        && a.height_cm == b.height_cm
        && a.stackable == b.stackable
        && a.weight_kg.to_bits() == b.weight_kg.to_bits()
}

/// An axis-aligned floor rectangle: `x`/`len` along the container length,
/// `y`/`wid` along its width. Always lies inside the container floor, so
/// `x + len` and `y + wid` cannot overflow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Rect {
    x: u32,
    y: u32,
    len: u32,
    wid: u32,
}

impl Rect {
    fn x_end(&self) -> u32 {
        self.x + self.len
    }

    fn y_end(&self) -> u32 {
        self.y + self.wid
    }

    fn intersects(&self, other: &Rect) -> bool {
        self.x < other.x_end()
            && other.x < self.x_end()
            && self.y < other.y_end()
            && other.y < self.y_end()
    }

    fn contains(&self, other: &Rect) -> bool {
        self.x <= other.x
            && self.y <= other.y
            && other.x_end() <= self.x_end()
            && other.y_end() <= self.y_end()
    }
}

/// Floor-spot score, compared lexicographically (smaller is better):
/// (short-side leftover, long-side leftover, x, y, rotated).
type FloorKey = (u32, u32, u32, u32, bool);

/// A column of pallets on one floor position; only its top matters.
#[derive(Debug, Clone, Copy)]
struct Stack {
    x: u32,
    y: u32,
    /// Footprint of the top pallet as placed.
    top_len: u32,
    top_wid: u32,
    /// Height of the top surface above the floor.
    top_z: u32,
    top_stackable: bool,
}

#[derive(Clone)]
struct OpenContainer {
    /// MaxRects free list: maximal empty floor rectangles, none contained in
    /// another.
    free: Vec<Rect>,
    stacks: Vec<Stack>,
    load: ContainerLoad,
    /// This container's [`Bounds`], refreshed after every placement.
    bounds: Bounds,
}

/// Cheap bounds on what one [`OpenContainer`] can still take.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Bounds {
    /// Weight already loaded.
    weight_kg: f64,
    /// Largest short side and largest long side over the free floor
    /// rectangles (not necessarily of the same rectangle); 0 when there are
    /// none.
    free_short: u32,
    free_long: u32,
    /// Largest short side and largest long side over the tops of the stacks
    /// whose top is stackable; 0 when there are none.
    top_short: u32,
    top_long: u32,
    /// Lowest `top_z` over the stacks with a stackable top; `u32::MAX` when
    /// there are none.
    top_z: u32,
}

impl Bounds {
    /// No free floor and no stackable top.
    const NONE: Bounds = Bounds {
        weight_kg: f64::INFINITY,
        free_short: 0,
        free_long: 0,
        top_short: 0,
        top_long: 0,
        top_z: u32::MAX,
    };

    /// The bounds of an empty container.
    fn empty(spec: &ContainerSpec) -> Self {
        Bounds {
            weight_kg: 0.0,
            free_short: spec.length_cm.min(spec.width_cm),
            free_long: spec.length_cm.max(spec.width_cm),
            ..Bounds::NONE
        }
    }

    fn of(weight_kg: f64, free: &[Rect], stacks: &[Stack]) -> Self {
        let mut bounds = Bounds {
            weight_kg,
            ..Bounds::NONE
        };
        for r in free {
            bounds.free_short = bounds.free_short.max(r.len.min(r.wid));
            bounds.free_long = bounds.free_long.max(r.len.max(r.wid));
        }
        for s in stacks.iter().filter(|s| s.top_stackable) {
            bounds.top_short = bounds.top_short.max(s.top_len.min(s.top_wid));
            bounds.top_long = bounds.top_long.max(s.top_len.max(s.top_wid));
            bounds.top_z = bounds.top_z.min(s.top_z);
        }
        bounds
    }

    /// True only when `try_place` would refuse the unit in the container
    /// these bounds describe; O(1). Why it never rules out a unit that the
    /// container takes:
    ///
    /// * payload: this is the very test `try_place` makes first, on the
    ///   very same numbers (`weight_kg` is the container's loaded weight);
    /// * a footprint fits a rectangle in some rotation about the vertical
    ///   axis exactly when its short side is at most the rectangle's short
    ///   side and its long side at most the rectangle's long side;
    /// * so a floor spot needs a free rectangle whose short and long sides,
    ///   hence `free_short` and `free_long`, are at least the unit's;
    /// * a stack spot needs a stackable unit and a stackable top covering the
    ///   footprint in some rotation, hence `top_short` and `top_long` at
    ///   least the unit's sides, with `top_z + height` within the container,
    ///   and that top's `top_z` is at least the lowest one.
    fn rules_out(&self, unit: &PalletUnit, spec: &ContainerSpec) -> bool {
        if self.weight_kg + unit.weight_kg > spec.max_payload_kg {
            return true;
        }
        let short = unit.length_cm.min(unit.width_cm);
        let long = unit.length_cm.max(unit.width_cm);
        let floor = short <= self.free_short && long <= self.free_long;
        let stack = unit.stackable
            && short <= self.top_short
            && long <= self.top_long
            && u64::from(self.top_z) + u64::from(unit.height_cm) <= u64::from(spec.height_cm);
        !floor && !stack
    }
}

impl OpenContainer {
    fn new(spec: &ContainerSpec) -> Self {
        OpenContainer {
            free: vec![Rect {
                x: 0,
                y: 0,
                len: spec.length_cm,
                wid: spec.width_cm,
            }],
            stacks: Vec::new(),
            load: ContainerLoad {
                placements: Vec::new(),
                weight_kg: 0.0,
                volume_cm3: 0,
            },
            bounds: Bounds::empty(spec),
        }
    }

    /// Places the unit on a stack or on the floor if it fits; returns whether
    /// it was placed.
    fn try_place(&mut self, index: usize, unit: &PalletUnit, spec: &ContainerSpec) -> bool {
        let new_weight = self.load.weight_kg + unit.weight_kg;
        // `fits_empty` admitted the unit, so the payload is not NaN here.
        if new_weight > spec.max_payload_kg {
            return false;
        }
        if unit.stackable
            && let Some(slot) = self.best_stack(unit, spec)
        {
            let stack = self.stacks[slot];
            let rotated = !(unit.length_cm <= stack.top_len && unit.width_cm <= stack.top_wid);
            let (len, wid) = footprint(unit, rotated);
            self.record(
                index,
                unit,
                stack.x,
                stack.y,
                stack.top_z,
                rotated,
                new_weight,
            );
            self.stacks[slot] = Stack {
                x: stack.x,
                y: stack.y,
                top_len: len,
                top_wid: wid,
                top_z: stack.top_z + unit.height_cm,
                top_stackable: true,
            };
            self.bounds = Bounds::of(self.load.weight_kg, &self.free, &self.stacks);
            return true;
        }
        if let Some((rect, rotated)) = self.best_floor_spot(unit) {
            self.split_free(rect);
            self.record(index, unit, rect.x, rect.y, 0, rotated, new_weight);
            self.stacks.push(Stack {
                x: rect.x,
                y: rect.y,
                top_len: rect.len,
                top_wid: rect.wid,
                top_z: unit.height_cm,
                top_stackable: unit.stackable,
            });
            self.bounds = Bounds::of(self.load.weight_kg, &self.free, &self.stacks);
            return true;
        }
        false
    }

    #[allow(clippy::too_many_arguments)]
    fn record(
        &mut self,
        index: usize,
        unit: &PalletUnit,
        x: u32,
        y: u32,
        z: u32,
        rotated: bool,
        new_weight: f64,
    ) {
        let (len, wid) = footprint(unit, rotated);
        self.load.placements.push(Placement {
            label: unit.label.clone(),
            unit_index: index,
            x_cm: x,
            y_cm: y,
            z_cm: z,
            length_cm: len,
            width_cm: wid,
            height_cm: unit.height_cm,
            rotated,
        });
        self.load.weight_kg = new_weight;
        self.load.volume_cm3 = self.load.volume_cm3.saturating_add(unit_volume(unit));
    }

    /// The stack whose stackable top covers the unit and has head room, with
    /// the least wasted top area, then the least leftover height, then the
    /// earliest stack.
    fn best_stack(&self, unit: &PalletUnit, spec: &ContainerSpec) -> Option<usize> {
        let area = floor_area(unit);
        let mut best: Option<((u64, u64), usize)> = None;
        for (slot, stack) in self.stacks.iter().enumerate() {
            if !stack.top_stackable {
                continue;
            }
            let covers = (unit.length_cm <= stack.top_len && unit.width_cm <= stack.top_wid)
                || (unit.width_cm <= stack.top_len && unit.length_cm <= stack.top_wid);
            let top = u64::from(stack.top_z) + u64::from(unit.height_cm);
            if !covers || top > u64::from(spec.height_cm) {
                continue;
            }
            let waste = u64::from(stack.top_len) * u64::from(stack.top_wid) - area;
            let key = (waste, u64::from(spec.height_cm) - top);
            if best.is_none_or(|(best_key, _)| key < best_key) {
                best = Some((key, slot));
            }
        }
        best.map(|(_, slot)| slot)
    }

    /// Best-short-side-fit over all free rectangles and both rotations; ties
    /// go to the smaller long-side leftover, then smaller x, then smaller y,
    /// then unrotated.
    fn best_floor_spot(&self, unit: &PalletUnit) -> Option<(Rect, bool)> {
        let mut best: Option<(FloorKey, Rect)> = None;
        for free in &self.free {
            for rotated in [false, true] {
                let (len, wid) = footprint(unit, rotated);
                if len > free.len || wid > free.wid {
                    continue;
                }
                let dx = free.len - len;
                let dy = free.wid - wid;
                let key = (dx.min(dy), dx.max(dy), free.x, free.y, rotated);
                if best.as_ref().is_none_or(|(best_key, _)| key < *best_key) {
                    let rect = Rect {
                        x: free.x,
                        y: free.y,
                        len,
                        wid,
                    };
                    best = Some((key, rect));
                }
            }
        }
        best.map(|((.., rotated), rect)| (rect, rotated))
    }

    /// MaxRects update: splits every free rectangle overlapping `used` into
    /// its up to four maximal remainders, then drops contained rectangles.
    fn split_free(&mut self, used: Rect) {
        let mut next: Vec<Rect> = Vec::with_capacity(self.free.len() + 4);
        for r in &self.free {
            if !r.intersects(&used) {
                next.push(*r);
                continue;
            }
            if used.x > r.x {
                next.push(Rect {
                    len: used.x - r.x,
                    ..*r
                });
            }
            if used.x_end() < r.x_end() {
                next.push(Rect {
                    x: used.x_end(),
                    len: r.x_end() - used.x_end(),
                    ..*r
                });
            }
            if used.y > r.y {
                next.push(Rect {
                    wid: used.y - r.y,
                    ..*r
                });
            }
            if used.y_end() < r.y_end() {
                next.push(Rect {
                    y: used.y_end(),
                    wid: r.y_end() - used.y_end(),
                    ..*r
                });
            }
        }
        // Keep a rectangle unless another one contains it; of two equal
        // rectangles the earlier one survives.
        let kept: Vec<Rect> = next
            .iter()
            .enumerate()
            .filter(|&(i, r)| {
                !next
                    .iter()
                    .enumerate()
                    .any(|(j, o)| j != i && o.contains(r) && (o != r || j < i))
            })
            .map(|(_, r)| *r)
            .collect();
        self.free = kept;
    }
}

/// Footprint (extent along the container length, along its width).
fn footprint(unit: &PalletUnit, rotated: bool) -> (u32, u32) {
    if rotated {
        (unit.width_cm, unit.length_cm)
    } else {
        (unit.length_cm, unit.width_cm)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWENTY_FOOT: ContainerSpec = ContainerSpec {
        length_cm: 589,
        width_cm: 235,
        height_cm: 239,
        max_payload_kg: 28_000.0,
    };

    const FORTY_FOOT: ContainerSpec = ContainerSpec {
        length_cm: 1203,
        width_cm: 235,
        height_cm: 239,
        max_payload_kg: 26_500.0,
    };

    fn unit(label: &str, l: u32, w: u32, h: u32, kg: f64, stackable: bool) -> PalletUnit {
        PalletUnit {
            label: label.to_string(),
            length_cm: l,
            width_cm: w,
            height_cm: h,
            weight_kg: kg,
            stackable,
        }
    }

    fn eur(n: usize, h: u32, kg: f64, stackable: bool) -> Vec<PalletUnit> {
        (0..n)
            .map(|i| unit(&format!("EUR #{i:02}"), 120, 80, h, kg, stackable))
            .collect()
    }

    /// The first way one load breaks the rules, if any, checked against the
    /// container and the input units: dims match
    /// the unit (per `rotated`), everything inside the container, no 3D
    /// overlap, non-stackable units on the floor, every raised unit resting on
    /// a stackable unit whose top is at its base and whose footprint covers
    /// it, weight and volume totals right and weight within payload.
    fn first_problem(
        load: &ContainerLoad,
        container: &ContainerSpec,
        units: &[PalletUnit],
    ) -> Option<String> {
        let mut weight = 0.0;
        let mut volume = 0u64;
        for p in &load.placements {
            let Some(u) = units.get(p.unit_index) else {
                return Some(format!(
                    "{}: unit index {} out of range",
                    p.label, p.unit_index
                ));
            };
            if p.label != u.label {
                return Some(format!("{}: label differs from unit {}", p.label, u.label));
            }
            let (len, wid) = footprint(u, p.rotated);
            if (p.length_cm, p.width_cm, p.height_cm) != (len, wid, u.height_cm) {
                return Some(format!("{}: placed dims differ from unit dims", p.label));
            }
            let inside = u64::from(p.x_cm) + u64::from(p.length_cm)
                <= u64::from(container.length_cm)
                && u64::from(p.y_cm) + u64::from(p.width_cm) <= u64::from(container.width_cm)
                && u64::from(p.z_cm) + u64::from(p.height_cm) <= u64::from(container.height_cm);
            if !inside {
                return Some(format!("{}: outside the container", p.label));
            }
            if p.z_cm > 0 {
                if !u.stackable {
                    return Some(format!("{}: non-stackable unit off the floor", p.label));
                }
                let supported = load.placements.iter().any(|q| {
                    units[q.unit_index].stackable
                        && q.z_cm + q.height_cm == p.z_cm
                        && q.x_cm <= p.x_cm
                        && p.x_cm + p.length_cm <= q.x_cm + q.length_cm
                        && q.y_cm <= p.y_cm
                        && p.y_cm + p.width_cm <= q.y_cm + q.width_cm
                });
                if !supported {
                    return Some(format!(
                        "{}: not resting on a covering stackable unit",
                        p.label
                    ));
                }
            }
            weight += u.weight_kg;
            volume += unit_volume(u);
        }
        for (i, p) in load.placements.iter().enumerate() {
            for q in &load.placements[i + 1..] {
                let overlap = p.x_cm < q.x_cm + q.length_cm
                    && q.x_cm < p.x_cm + p.length_cm
                    && p.y_cm < q.y_cm + q.width_cm
                    && q.y_cm < p.y_cm + p.width_cm
                    && p.z_cm < q.z_cm + q.height_cm
                    && q.z_cm < p.z_cm + p.height_cm;
                if overlap {
                    return Some(format!("{} overlaps {}", p.label, q.label));
                }
            }
        }
        if weight > container.max_payload_kg {
            return Some(format!("weight {weight} over payload"));
        }
        if weight != load.weight_kg || volume != load.volume_cm3 {
            return Some("load totals do not match placements".to_string());
        }
        None
    }

    fn validate_all(packing: &Packing, container: &ContainerSpec, units: &[PalletUnit]) {
        assert_eq!(packing.containers as usize, packing.loads.len());
        for (i, load) in packing.loads.iter().enumerate() {
            assert!(!load.placements.is_empty(), "container {i} is empty");
            if let Some(e) = first_problem(load, container, units) {
                panic!("container {i}: {e}");
            }
        }
        let volume: u64 = packing.loads.iter().map(|l| l.volume_cm3).sum();
        assert_eq!(packing.packed_volume_cm3, volume);
    }

    fn per_container(packing: &Packing) -> Vec<usize> {
        packing.loads.iter().map(|l| l.placements.len()).collect()
    }

    #[test]
    fn empty_input_uses_no_container() {
        let packing = pack(&[], &TWENTY_FOOT);
        assert_eq!(packing.containers, 0);
        assert!(packing.loads.is_empty());
        assert_eq!(packing.packed_volume_cm3, 0);
        assert_eq!(packing.fill_rate, 0.0);
        assert!(packing.unplaceable.is_empty());
    }

    #[test]
    fn eur_pallets_non_stackable_need_two_twenty_foot() {
        let units = eur(20, 150, 500.0, false);
        let packing = pack(&units, &TWENTY_FOOT);
        validate_all(&packing, &TWENTY_FOOT, &units);
        assert_eq!(packing.containers, 2, "{:?}", per_container(&packing));
        assert!(packing.loads[0].placements.len() >= 10);
        assert!(
            packing
                .loads
                .iter()
                .flat_map(|l| &l.placements)
                .all(|p| p.z_cm == 0)
        );
        assert!(packing.unplaceable.is_empty());
        assert_eq!(per_container(&packing).iter().sum::<usize>(), 20);
    }

    #[test]
    fn eur_pallets_floor_in_forty_foot() {
        let units = eur(30, 150, 500.0, false);
        let packing = pack(&units, &FORTY_FOOT);
        validate_all(&packing, &FORTY_FOOT, &units);
        assert!(
            packing.loads[0].placements.len() >= 23,
            "{:?}",
            per_container(&packing)
        );
        assert_eq!(packing.containers, 2);
    }

    #[test]
    fn stackable_eur_pallets_stack_into_one_container() {
        let units = eur(20, 100, 500.0, true);
        let packing = pack(&units, &TWENTY_FOOT);
        validate_all(&packing, &TWENTY_FOOT, &units);
        let placements = &packing.loads[0].placements;
        assert!(placements.iter().any(|p| p.z_cm > 0), "no stacking used");
        assert_eq!(packing.containers, 1, "{:?}", per_container(&packing));
        assert_eq!(placements.len(), 20);
        let floor = placements.iter().filter(|p| p.z_cm == 0).count();
        assert_eq!(floor, 10, "stacking should halve the floor positions");
        // Two layers of 100 cm fit under 239 cm, three do not.
        assert!(placements.iter().all(|p| p.z_cm == 0 || p.z_cm == 100));
    }

    #[test]
    fn weight_bound_splits_containers() {
        let units: Vec<_> = (0..10)
            .map(|i| unit(&format!("heavy #{i}"), 120, 100, 100, 3000.0, true))
            .collect();
        let packing = pack(&units, &TWENTY_FOOT);
        validate_all(&packing, &TWENTY_FOOT, &units);
        assert!(packing.containers >= 2);
        assert_eq!(per_container(&packing), vec![9, 1]);
        for load in &packing.loads {
            assert!(load.weight_kg <= TWENTY_FOOT.max_payload_kg);
        }
    }

    #[test]
    fn overlong_pallet_is_unplaceable_others_packed() {
        let mut units = eur(3, 150, 500.0, false);
        units.insert(1, unit("pipe rack", 700, 100, 100, 800.0, false));
        units.push(unit("too heavy", 120, 80, 100, 30_000.0, false));
        units.push(unit("too tall", 120, 80, 240, 100.0, false));
        let packing = pack(&units, &TWENTY_FOOT);
        validate_all(&packing, &TWENTY_FOOT, &units);
        assert_eq!(
            packing.unplaceable,
            vec!["pipe rack", "too heavy", "too tall"]
        );
        assert_eq!(packing.containers, 1);
        let mut placed: Vec<_> = packing.loads[0]
            .placements
            .iter()
            .map(|p| p.unit_index)
            .collect();
        placed.sort_unstable();
        assert_eq!(placed, vec![0, 2, 3]);
    }

    #[test]
    fn rotation_used_when_only_rotated_fits() {
        // 235 cm across does not fit a 200 cm wide container, so the pallet
        // must lie with its 235 cm side along the container length.
        let narrow = ContainerSpec {
            length_cm: 589,
            width_cm: 200,
            height_cm: 239,
            max_payload_kg: 28_000.0,
        };
        let units = vec![unit("long side across", 100, 235, 100, 400.0, false)];
        let packing = pack(&units, &narrow);
        validate_all(&packing, &narrow, &units);
        assert!(packing.unplaceable.is_empty());
        let p = &packing.loads[0].placements[0];
        assert!(p.rotated);
        assert_eq!((p.length_cm, p.width_cm), (235, 100));

        // Same in a standard 20': a 100 × 300 pallet only fits lengthwise.
        let units = vec![unit("wide", 100, 300, 100, 400.0, false)];
        let packing = pack(&units, &TWENTY_FOOT);
        validate_all(&packing, &TWENTY_FOOT, &units);
        let p = &packing.loads[0].placements[0];
        assert!(p.rotated);
        assert_eq!((p.length_cm, p.width_cm), (300, 100));
    }

    #[test]
    fn stacked_pallet_rotates_to_fit_the_one_below() {
        let units = vec![
            unit("base", 120, 100, 100, 500.0, true),
            unit("top", 90, 110, 100, 300.0, true),
        ];
        let narrow = ContainerSpec {
            length_cm: 120,
            width_cm: 100,
            height_cm: 239,
            max_payload_kg: 28_000.0,
        };
        let packing = pack(&units, &narrow);
        validate_all(&packing, &narrow, &units);
        assert_eq!(packing.containers, 1);
        let top = &packing.loads[0].placements[1];
        assert_eq!(
            (top.label.as_str(), top.z_cm, top.rotated),
            ("top", 100, true)
        );
    }

    #[test]
    fn non_stackable_never_carries_or_rides() {
        let units = vec![
            unit("fragile", 120, 100, 100, 500.0, false),
            unit("small", 60, 50, 100, 100.0, true),
            unit("small nonstack", 60, 50, 100, 100.0, false),
        ];
        let tiny = ContainerSpec {
            length_cm: 120,
            width_cm: 100,
            height_cm: 239,
            max_payload_kg: 28_000.0,
        };
        let packing = pack(&units, &tiny);
        validate_all(&packing, &tiny, &units);
        // No floor room next to "fragile", and it must not carry anything.
        assert_eq!(per_container(&packing), vec![1, 2]);
        // The stackable one may carry nothing here: the non-stackable one
        // cannot ride, so both small units stand on the floor.
        assert!(packing.loads[1].placements.iter().all(|p| p.z_cm == 0));
    }

    #[test]
    fn deterministic_and_order_independent() {
        let mut units = eur(14, 150, 500.0, true);
        units.extend((0..9).map(|i| unit(&format!("crate #{i}"), 100, 120, 80, 250.0, i % 2 == 0)));
        units.extend((0..5).map(|i| unit(&format!("long #{i}"), 240, 110, 120, 900.0, false)));
        units.push(unit("oversize", 700, 100, 100, 100.0, false));
        let first = pack(&units, &TWENTY_FOOT);
        let again = pack(&units, &TWENTY_FOOT);
        assert_eq!(first, again);
        assert_eq!(first.fill_rate.to_bits(), again.fill_rate.to_bits());

        let reversed: Vec<_> = units.iter().rev().cloned().collect();
        let other = pack(&reversed, &TWENTY_FOOT);
        validate_all(&other, &TWENTY_FOOT, &reversed);
        assert_eq!(first.containers, other.containers);
        assert_eq!(first.fill_rate.to_bits(), other.fill_rate.to_bits());
        // Labels are unique here, so the placements agree modulo indices.
        let strip = |p: &Packing| -> Vec<Vec<Placement>> {
            p.loads
                .iter()
                .map(|l| {
                    l.placements
                        .iter()
                        .map(|q| Placement {
                            unit_index: 0,
                            ..q.clone()
                        })
                        .collect()
                })
                .collect()
        };
        assert_eq!(strip(&first), strip(&other));
    }

    #[test]
    fn validator_rejects_broken_loads() {
        let units = vec![
            unit("a", 120, 80, 100, 500.0, true),
            unit("b", 120, 80, 100, 500.0, false),
        ];
        let good = pack(&units, &TWENTY_FOOT);
        let load = &good.loads[0];
        assert_eq!(first_problem(load, &TWENTY_FOOT, &units), None);

        let mut overlap = load.clone();
        overlap.placements[1].x_cm = overlap.placements[0].x_cm + 10;
        overlap.placements[1].y_cm = overlap.placements[0].y_cm;
        assert!(first_problem(&overlap, &TWENTY_FOOT, &units).is_some());

        let mut outside = load.clone();
        outside.placements[0].x_cm = 560;
        assert!(first_problem(&outside, &TWENTY_FOOT, &units).is_some());

        let mut floating = load.clone();
        floating.placements[0].z_cm = 50;
        assert!(first_problem(&floating, &TWENTY_FOOT, &units).is_some());

        // "a" on top of non-stackable "b".
        let mut on_fragile = load.clone();
        let b = on_fragile
            .placements
            .iter()
            .position(|p| p.label == "b")
            .unwrap_or(1);
        let a = 1 - b;
        let (bx, by) = (on_fragile.placements[b].x_cm, on_fragile.placements[b].y_cm);
        on_fragile.placements[a].x_cm = bx;
        on_fragile.placements[a].y_cm = by;
        on_fragile.placements[a].z_cm = 100;
        on_fragile.placements[a].length_cm = on_fragile.placements[b].length_cm;
        on_fragile.placements[a].width_cm = on_fragile.placements[b].width_cm;
        on_fragile.placements[a].rotated = on_fragile.placements[b].rotated;
        assert!(first_problem(&on_fragile, &TWENTY_FOOT, &units).is_some());

        let light = ContainerSpec {
            max_payload_kg: 900.0,
            ..TWENTY_FOOT
        };
        assert!(first_problem(load, &light, &units).is_some());

        let mut wrong_dims = load.clone();
        wrong_dims.placements[0].rotated = !wrong_dims.placements[0].rotated;
        assert!(first_problem(&wrong_dims, &TWENTY_FOOT, &units).is_some());
    }

    /// The plain algorithm `pack` must reproduce exactly: one unit at a time
    /// in the same order, first fit over all open containers from the first,
    /// no bounds and no resuming.
    fn reference(units: &[PalletUnit], container: &ContainerSpec) -> Packing {
        let (order, mut unplaceable) = admit_and_sort(units, container);
        let mut open: Vec<OpenContainer> = Vec::new();
        for &index in &order {
            let unit = &units[index];
            if !open.iter_mut().any(|c| c.try_place(index, unit, container)) {
                let mut fresh = OpenContainer::new(container);
                if fresh.try_place(index, unit, container) {
                    open.push(fresh);
                } else {
                    unplaceable.push(unit.label.clone());
                }
            }
        }
        summarise(open, unplaceable, container)
    }

    fn assert_same(got: &Packing, want: &Packing, what: &str) {
        assert_eq!(got.containers, want.containers, "{what}: containers");
        for (i, (g, w)) in got.loads.iter().zip(&want.loads).enumerate() {
            assert_eq!(g, w, "{what}: container {i}");
            assert_eq!(g.weight_kg.to_bits(), w.weight_kg.to_bits(), "{what}");
        }
        assert_eq!(got.fill_rate.to_bits(), want.fill_rate.to_bits(), "{what}");
        assert_eq!(got, want, "{what}");
    }

    /// Random cohorts built to stress the run/resume and bound logic: few and
    /// many kinds, mixed stackability, weights near or over the payload,
    /// degenerate units, heights that just fit, tiny containers, long runs of
    /// identical units and duplicate labels.
    #[test]
    fn pack_equals_plain_first_fit_on_random_cohorts() {
        let mut rng = Lcg(0xB0B5_1EDD);
        for case in 0..600 {
            let spec = match rng.range(0, 5) {
                0 => TWENTY_FOOT,
                1 => FORTY_FOOT,
                2 => ContainerSpec {
                    length_cm: rng.range(60, 260),
                    width_cm: rng.range(40, 140),
                    height_cm: rng.range(50, 260),
                    max_payload_kg: f64::from(rng.range(100, 3000)),
                },
                3 => ContainerSpec {
                    length_cm: rng.range(0, 20),
                    width_cm: rng.range(0, 20),
                    height_cm: rng.range(0, 20),
                    max_payload_kg: f64::from(rng.range(0, 40)),
                },
                _ => ContainerSpec {
                    length_cm: rng.range(200, 700),
                    width_cm: rng.range(150, 260),
                    height_cm: rng.range(150, 280),
                    max_payload_kg: f64::from(rng.range(1000, 30_000)),
                },
            };
            let small = spec.length_cm < 30;
            let payload = spec.max_payload_kg;
            let kinds_n = [1, 2, 3, 5, 8, 20, 60][rng.range(0, 6) as usize];
            let kinds: Vec<PalletUnit> = (0..kinds_n)
                .map(|k| {
                    let dim = |rng: &mut Lcg, full: u32| match rng.range(0, 9) {
                        0 => 0,
                        1 => full,
                        2 => full.saturating_add(1),
                        3 => full / 2,
                        4 => full / 3,
                        _ if small => rng.range(1, 20),
                        _ => rng.range(20, 200),
                    };
                    let l = dim(&mut rng, spec.length_cm);
                    let w = dim(&mut rng, spec.width_cm);
                    let h = match rng.range(0, 5) {
                        0 => spec.height_cm,
                        1 => spec.height_cm / 2,
                        2 => spec.height_cm.saturating_sub(1),
                        3 => spec.height_cm.saturating_add(1),
                        _ => rng.range(1, 150),
                    };
                    let kg = match rng.range(0, 14) {
                        0 => f64::NAN,
                        1 => -1.0,
                        2 => -0.0,
                        3 => 0.0,
                        4 => payload,
                        5 => payload / 2.0,
                        6 => payload / 3.0 + 0.1,
                        7 => payload + 1.0,
                        8 => f64::INFINITY,
                        9 => payload * 0.3,
                        _ => f64::from(rng.range(1, 2000)) * 0.25,
                    };
                    unit(&format!("kind {k}"), l, w, h, kg, rng.range(0, 2) != 0)
                })
                .collect();
            // Sometimes near-twins: every kind is the first one with one
            // field changed, so kinds differ in a single placement field.
            let kinds: Vec<PalletUnit> = if rng.range(0, 2) == 0 {
                let base = kinds[0].clone();
                (0..kinds_n)
                    .map(|_| {
                        let mut u = base.clone();
                        match rng.range(0, 6) {
                            0 => u.height_cm = rng.range(1, spec.height_cm.max(1)),
                            1 => u.weight_kg = f64::from(rng.range(0, 3000)) * 0.5,
                            2 => u.stackable = !u.stackable,
                            3 => (u.length_cm, u.width_cm) = (u.width_cm, u.length_cm),
                            4 => u.length_cm = u.length_cm.saturating_sub(rng.range(0, 3)),
                            _ => u.width_cm = u.width_cm.saturating_sub(rng.range(0, 3)),
                        }
                        u
                    })
                    .collect()
            } else {
                kinds
            };
            let n = match rng.range(0, 4) {
                0 => rng.range(1, 10),
                1 => rng.range(1, 80),
                2 => rng.range(100, 400),
                _ => rng.range(400, 900),
            } as usize;
            let units: Vec<PalletUnit> = (0..n)
                .map(|i| {
                    let mut u = kinds[rng.range(0, kinds_n - 1) as usize].clone();
                    // Sometimes distinct labels, sometimes shared ones.
                    if rng.range(0, 3) != 0 {
                        u.label = format!("order {} pallet {i}", rng.range(0, 9));
                    }
                    u
                })
                .collect();
            let got = pack(&units, &spec);
            let want = reference(&units, &spec);
            assert_same(&got, &want, &format!("case {case}"));
            validate_all(&got, &spec, &units);
        }
    }

    /// The bounds themselves, apart from the scan: at every step of random
    /// packings, each container's cached bounds equal freshly computed ones,
    /// and whenever they rule a probe unit out, `try_place` on a copy of the
    /// container refuses it too.
    #[test]
    fn bounds_never_rule_out_what_try_place_takes() {
        let mut rng = Lcg(0xB0_0D5);
        let mut ruled_out = 0u32;
        for case in 0..150 {
            let spec = ContainerSpec {
                length_cm: rng.range(100, 600),
                width_cm: rng.range(80, 240),
                height_cm: rng.range(100, 260),
                max_payload_kg: f64::from(rng.range(500, 20_000)),
            };
            let random_unit = |rng: &mut Lcg, i: u32| {
                unit(
                    &format!("u{i}"),
                    rng.range(20, spec.length_cm),
                    rng.range(20, spec.width_cm),
                    rng.range(1, spec.height_cm),
                    f64::from(rng.range(0, 4000)) * 0.5,
                    rng.range(0, 2) != 0,
                )
            };
            let units: Vec<PalletUnit> = (0..rng.range(1, 60))
                .map(|i| random_unit(&mut rng, i))
                .collect();
            let probes: Vec<PalletUnit> = (0..12).map(|i| random_unit(&mut rng, i)).collect();
            let (order, _) = admit_and_sort(&units, &spec);
            let mut open: Vec<OpenContainer> = Vec::new();
            for &index in &order {
                for c in &open {
                    let fresh = Bounds::of(c.load.weight_kg, &c.free, &c.stacks);
                    assert_eq!(c.bounds, fresh, "case {case}: stale bounds");
                    for probe in probes.iter().filter(|p| fits_empty(p, &spec)) {
                        if c.bounds.rules_out(probe, &spec) {
                            ruled_out += 1;
                            let mut copy = c.clone();
                            assert!(
                                !copy.try_place(0, probe, &spec),
                                "case {case}: bounds rule out {probe:?}, but it fits"
                            );
                        }
                    }
                }
                let unit = &units[index];
                if !open.iter_mut().any(|c| c.try_place(index, unit, &spec)) {
                    let mut fresh = OpenContainer::new(&spec);
                    assert!(fresh.try_place(index, unit, &spec));
                    open.push(fresh);
                }
            }
        }
        assert!(ruled_out > 1000, "the bounds hardly ever bite: {ruled_out}");
    }

    /// The planner's own shape of input, small enough for the reference.
    #[test]
    fn pack_equals_plain_first_fit_on_planner_cohorts() {
        for (n, seed) in [(50, 1), (700, 2), (3000, 3), (2000, 4)] {
            let mut units = cohort(n, seed);
            if seed == 4 {
                // Every pallet its own weight: runs of length one.
                for (i, u) in units.iter_mut().enumerate() {
                    u.weight_kg += i as f64 * 0.001;
                }
            }
            for spec in [TWENTY_FOOT, FORTY_FOOT] {
                assert_same(
                    &pack(&units, &spec),
                    &reference(&units, &spec),
                    &format!("{n} units seed {seed}"),
                );
            }
        }
    }

    #[test]
    fn hundred_thousand_pallets_are_each_placed_once_and_valid() {
        let units = cohort(100_000, 0xC0FFEE);
        let packing = pack(&units, &FORTY_FOOT);
        validate_all(&packing, &FORTY_FOOT, &units);
        assert!(packing.unplaceable.is_empty());
        let mut seen = vec![0u32; units.len()];
        for p in packing.loads.iter().flat_map(|l| &l.placements) {
            seen[p.unit_index] += 1;
        }
        assert!(seen.iter().all(|&s| s == 1));
        let volume: u64 = units.iter().map(unit_volume).sum();
        let weight: f64 = units.iter().map(|u| u.weight_kg).sum();
        let capacity = FORTY_FOOT.length_cm * FORTY_FOOT.width_cm * FORTY_FOOT.height_cm;
        let by_volume = volume.div_ceil(u64::from(capacity));
        let by_weight = (weight / FORTY_FOOT.max_payload_kg).ceil() as u64;
        let containers = u64::from(packing.containers);
        assert!(containers >= by_volume.max(by_weight), "{containers}");
        // A heuristic, but not a wasteful one: at most three times the
        // volume/weight lower bound.
        assert!(containers <= 3 * by_volume.max(by_weight), "{containers}");
        assert!(packing.fill_rate > 0.0 && packing.fill_rate <= 1.0);
    }

    /// A realistic planner cohort: `n` pallets of about twenty kinds spread
    /// over many orders, labelled the way the planner labels them.
    fn cohort(n: usize, seed: u64) -> Vec<PalletUnit> {
        let mut rng = Lcg(seed);
        let kinds: Vec<(u32, u32, u32, f64, bool)> = (0..20)
            .map(|_| {
                let (l, w) = match rng.range(0, 4) {
                    0 => (120, 80),
                    1 => (120, 100),
                    2 => (80, 60),
                    3 => (114, 114),
                    _ => (rng.range(60, 240), rng.range(50, 120)),
                };
                let h = rng.range(60, 220);
                let kg = f64::from(rng.range(80, 1400)) * 0.5;
                (l, w, h, kg, rng.range(0, 2) != 0)
            })
            .collect();
        let mut units = Vec::with_capacity(n);
        let mut order = 0;
        while units.len() < n {
            order += 1;
            for line in 1..=rng.range(1, 4) {
                let (l, w, h, kg, stackable) = kinds[rng.range(0, 19) as usize];
                for pallet in 1..=rng.range(1, 40) {
                    if units.len() < n {
                        let label = format!("order PO-{order} line {line} pallet {pallet}");
                        units.push(unit(&label, l, w, h, kg, stackable));
                    }
                }
            }
        }
        units
    }

    #[test]
    #[ignore = "prints timings; run in release with --ignored --nocapture"]
    fn timing_figures() {
        for distinct_weights in [false, true] {
            for n in [1_000, 10_000, 100_000] {
                let mut units = cohort(n, 0xC0FFEE);
                if distinct_weights {
                    // Adversarial: (almost) every pallet weighs differently,
                    // so runs of identical units have length one.
                    for (i, u) in units.iter_mut().enumerate() {
                        u.weight_kg += (i % 7919) as f64 * 0.001;
                    }
                }
                let start = std::time::Instant::now();
                let packing = pack(&units, &FORTY_FOOT);
                let took = start.elapsed();
                println!(
                    "pack {n:>6} units{}: {took:>12.3?}  containers {} unplaceable {}",
                    if distinct_weights {
                        " (distinct weights)"
                    } else {
                        ""
                    },
                    packing.containers,
                    packing.unplaceable.len()
                );
            }
        }
    }

    /// Tiny deterministic LCG (Knuth MMIX constants).
    struct Lcg(u64);

    impl Lcg {
        fn next(&mut self) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            self.0 >> 33
        }

        fn range(&mut self, lo: u32, hi: u32) -> u32 {
            lo + u32::try_from(self.next() % u64::from(hi - lo + 1)).unwrap_or(0)
        }
    }

    #[test]
    fn random_instances_are_valid_and_complete() {
        let specs = [
            TWENTY_FOOT,
            FORTY_FOOT,
            ContainerSpec {
                length_cm: 1203,
                width_cm: 235,
                height_cm: 269,
                max_payload_kg: 26_000.0,
            },
            ContainerSpec {
                length_cm: 300,
                width_cm: 200,
                height_cm: 200,
                max_payload_kg: 5_000.0,
            },
        ];
        let mut rng = Lcg(0x5EED_0FFC);
        let mut stacked_somewhere = false;
        let mut unplaceable_somewhere = false;
        for instance in 0..300 {
            let spec = &specs[rng.range(0, 3) as usize];
            let n = rng.range(1, 45) as usize;
            let mut units = Vec::with_capacity(n);
            for i in 0..n {
                let (l, w) = if rng.range(0, 3) == 0 {
                    (120, 80)
                } else {
                    (rng.range(30, 320), rng.range(30, 250))
                };
                units.push(unit(
                    &format!("i{instance} u{i}"),
                    l,
                    w,
                    rng.range(20, 280),
                    if rng.range(0, 19) == 0 {
                        f64::from(rng.range(4000, 60_000))
                    } else {
                        f64::from(rng.range(5, 3000)) * 0.5
                    },
                    rng.range(0, 1) == 1,
                ));
            }
            let packing = pack(&units, spec);
            validate_all(&packing, spec, &units);

            let mut seen = vec![0u32; n];
            for p in packing.loads.iter().flat_map(|l| &l.placements) {
                seen[p.unit_index] += 1;
            }
            let expected_unplaceable: Vec<&str> = units
                .iter()
                .filter(|u| {
                    let floor = (u.length_cm <= spec.length_cm && u.width_cm <= spec.width_cm)
                        || (u.width_cm <= spec.length_cm && u.length_cm <= spec.width_cm);
                    !(floor && u.height_cm <= spec.height_cm && u.weight_kg <= spec.max_payload_kg)
                })
                .map(|u| u.label.as_str())
                .collect();
            assert_eq!(
                packing.unplaceable, expected_unplaceable,
                "instance {instance}"
            );
            for (i, u) in units.iter().enumerate() {
                let want = u32::from(!expected_unplaceable.contains(&u.label.as_str()));
                assert_eq!(seen[i], want, "instance {instance}: {}", u.label);
            }
            unplaceable_somewhere |= !expected_unplaceable.is_empty();
            stacked_somewhere |= packing
                .loads
                .iter()
                .flat_map(|l| &l.placements)
                .any(|p| p.z_cm > 0);

            if packing.containers == 0 {
                assert_eq!(packing.fill_rate, 0.0);
                assert_eq!(expected_unplaceable.len(), n);
            } else {
                assert!(
                    packing.fill_rate > 0.0 && packing.fill_rate <= 1.0,
                    "instance {instance}: fill {}",
                    packing.fill_rate
                );
                let capacity = f64::from(packing.containers)
                    * f64::from(spec.length_cm)
                    * f64::from(spec.width_cm)
                    * f64::from(spec.height_cm);
                assert_eq!(
                    packing.fill_rate,
                    packing.packed_volume_cm3 as f64 / capacity
                );
            }

            let reversed: Vec<_> = units.iter().rev().cloned().collect();
            let other = pack(&reversed, spec);
            assert_eq!(packing.containers, other.containers, "instance {instance}");
            assert_eq!(packing.fill_rate.to_bits(), other.fill_rate.to_bits());
            assert_eq!(pack(&units, spec), packing);
        }
        assert!(stacked_somewhere && unplaceable_somewhere);
    }
}
