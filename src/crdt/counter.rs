//! Per-node counter slots with an observed-reset floor (DESIGN §5, INCR family).
//!
//! Each node *incarnation* owns one slot: the running sum of its own increments,
//! stamped with the HLC of its latest one. Only that incarnation writes the slot, so
//! merging keeps the slot with the newer HLC. A slot is keyed by node and incarnation
//! (the HLC at which the writing process began incrementing): a node that restarts
//! without some of its latest increments (not stored, but already sent to peers) must
//! not continue its old slot from an older sum, or the newer, smaller slot would
//! replace the one its peers hold and those increments would vanish everywhere. A new
//! incarnation writes a new slot beside the old one instead. A SET or DEL *absorbs* what it has observed by raising the floor to the
//! current slots; the counter contributes only what lies above the floor. Increments a
//! SET or DEL had not seen therefore survive it (observed reset), and increments it had
//! seen are dropped. Sums are combined in node-id order so every replica computes the
//! same float result.

use smallvec::SmallVec;

use super::hlc::{Hlc, NodeId};

/// The arithmetic a counter needs from its value type (`i64` or `f64`).
pub trait CounterValue: Copy + PartialEq + std::fmt::Debug {
    const ZERO: Self;
    /// `a + b`; integer sums wrap so that a slot can never trap (the difference to the
    /// floor is what carries meaning, and it is taken with wrapping arithmetic too).
    fn add(a: Self, b: Self) -> Self;
    fn sub(a: Self, b: Self) -> Self;
}

impl CounterValue for i64 {
    const ZERO: i64 = 0;
    fn add(a: i64, b: i64) -> i64 {
        a.wrapping_add(b)
    }
    fn sub(a: i64, b: i64) -> i64 {
        a.wrapping_sub(b)
    }
}

impl CounterValue for f64 {
    const ZERO: f64 = 0.0;
    fn add(a: f64, b: f64) -> f64 {
        a + b
    }
    fn sub(a: f64, b: f64) -> f64 {
        a - b
    }
}

/// One node's running sum, as of its write at `hlc`. The sum counts the increments
/// made after `since`: when a node increments a slot that a SET or DEL has absorbed
/// entirely, it restarts the sum from zero (a new epoch) instead of growing it further,
/// so that floats keep their precision (1e30 absorbed, then +1e-5, must read 1e-5).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Slot<V> {
    pub node: NodeId,
    /// The writer's incarnation: the HLC at which its process began incrementing.
    pub incarnation: Hlc,
    pub hlc: Hlc,
    pub since: Hlc,
    pub sum: V,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Counter<V: CounterValue> {
    /// Sorted by (node, incarnation).
    slots: SmallVec<[Slot<V>; 1]>,
    /// Sorted by (node, incarnation): for each slot, the value a SET or DEL absorbed.
    /// Boxed, and `None` while empty (never `Some` of an empty list, so equal counters
    /// compare equal): most counters are never SET or deleted, and an inline floor
    /// cost every counter 48 bytes (issue 16's counter memory).
    floor: Option<Box<SmallVec<[Slot<V>; 1]>>>,
}

impl<V: CounterValue> Default for Counter<V> {
    fn default() -> Self {
        Counter { slots: SmallVec::new(), floor: None }
    }
}

fn find<V>(slots: &[Slot<V>], node: NodeId, incarnation: Hlc) -> Result<usize, usize> {
    slots.binary_search_by_key(&(node, incarnation), |s| (s.node, s.incarnation))
}

/// Per slot, keep the copy with the newer HLC (each slot has exactly one writer).
fn merge_slots<V: CounterValue>(into: &mut SmallVec<[Slot<V>; 1]>, from: &[Slot<V>]) {
    for slot in from {
        match find(into, slot.node, slot.incarnation) {
            Ok(i) => {
                if slot.hlc > into[i].hlc {
                    into[i] = *slot;
                }
            }
            Err(i) => into.insert(i, *slot),
        }
    }
}

impl<V: CounterValue> Counter<V> {
    pub fn new() -> Self {
        Self::default()
    }

    /// One writer's slot and no floor (a key state's compact counter, unpacked).
    pub fn with_slot(slot: Slot<V>) -> Self {
        Counter { slots: SmallVec::from_buf([slot]), floor: None }
    }

    /// Merge `from` into the floor, creating it only when something is absorbed.
    fn raise_floor(&mut self, from: &[Slot<V>]) {
        if from.is_empty() {
            return;
        }
        merge_slots(self.floor.get_or_insert_with(Default::default), from);
        debug_assert!(self.floor.as_ref().is_some_and(|f| !f.is_empty()));
    }

    /// What the slot of `slot.node` adds above its floor. A floor from an earlier
    /// epoch absorbed nothing of the current sum; one from the current epoch absorbed
    /// the part of the sum it had seen. (Key states travel whole, so whoever holds a
    /// slot also holds the floor that started its epoch: a floor is never older than
    /// `since`.)
    fn contribution(&self, slot: &Slot<V>) -> V {
        let floor = self.floor();
        match find(floor, slot.node, slot.incarnation) {
            Ok(i) if floor[i].hlc >= slot.hlc => V::ZERO,
            Ok(i) if floor[i].hlc <= slot.since => slot.sum,
            Ok(i) => V::sub(slot.sum, floor[i].sum),
            Err(_) => slot.sum,
        }
    }

    /// The contributions of every node above its floor, in node-id order.
    pub fn contributions(&self) -> impl Iterator<Item = V> + '_ {
        self.slots.iter().map(|s| self.contribution(s))
    }

    /// Whether some increment has not been absorbed by a SET or DEL.
    pub fn has_unabsorbed(&self) -> bool {
        let floor = self.floor();
        self.slots.iter().any(|s| match find(floor, s.node, s.incarnation) {
            Ok(i) => s.hlc > floor[i].hlc,
            Err(_) => true,
        })
    }

    /// A local increment by `node`'s `incarnation` at `hlc` (newer than anything this
    /// node wrote).
    pub fn add(&mut self, node: NodeId, incarnation: Hlc, hlc: Hlc, by: V) {
        debug_assert!(incarnation <= hlc);
        let floor_hlc = match find(self.floor(), node, incarnation) {
            Ok(i) => self.floor()[i].hlc,
            Err(_) => Hlc::ZERO,
        };
        match find(&self.slots, node, incarnation) {
            Ok(i) => {
                let slot = &mut self.slots[i];
                debug_assert!(hlc > slot.hlc);
                if floor_hlc >= slot.hlc {
                    // Everything so far was absorbed: start a new epoch.
                    *slot = Slot { node, incarnation, hlc, since: Hlc(hlc.0 - 1), sum: by };
                } else {
                    slot.sum = V::add(slot.sum, by);
                    slot.hlc = hlc;
                }
            }
            // A new slot starts a new epoch: whatever floor this node's earlier slot had
            // (its key may have been deleted and forgotten here) is older than `since`.
            Err(i) => self.slots.insert(i, Slot { node, incarnation, hlc, since: Hlc(hlc.0 - 1), sum: by }),
        }
    }

    /// Absorb the slots an observed-remove with context `seen` had seen whole: those
    /// whose latest increment it covers (FLUSHALL replay).
    pub fn absorb_covered(&mut self, seen: &crate::crdt::VersionVector) {
        let covered: Vec<Slot<V>> = self.slots.iter().filter(|s| s.hlc <= seen.get(s.node)).copied().collect();
        self.raise_floor(&covered);
    }

    /// Absorb exactly these slots (each as of its stamp): what a replica that had
    /// merged them and no longer holds them removed (`engine::kv::value::absence`).
    pub fn absorb_slots(&mut self, slots: &[Slot<V>]) {
        self.raise_floor(slots);
    }

    /// A SET or DEL absorbs every increment it has observed.
    pub fn absorb_all(&mut self) {
        let slots = self.slots.clone();
        self.raise_floor(&slots);
    }

    pub fn merge(&mut self, other: &Self) {
        merge_slots(&mut self.slots, &other.slots);
        self.raise_floor(other.floor());
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty() && self.floor.is_none()
    }

    /// Every (node, hlc) this counter has seen: slots and floors are both observations.
    pub fn observed(&self) -> impl Iterator<Item = (NodeId, Hlc)> + '_ {
        self.slots.iter().chain(self.floor().iter()).map(|s| (s.node, s.hlc))
    }

    /// Rebuild from decoded slots and floor: each sorted by strictly increasing
    /// (node, incarnation).
    pub fn from_parts(slots: Vec<Slot<V>>, floor: Vec<Slot<V>>) -> Result<Self, &'static str> {
        let sorted = |s: &[Slot<V>]| s.windows(2).all(|w| (w[0].node, w[0].incarnation) < (w[1].node, w[1].incarnation));
        if !sorted(&slots) || !sorted(&floor) {
            return Err("counter slots out of order");
        }
        let floor = (!floor.is_empty()).then(|| Box::new(floor.into()));
        Ok(Counter { slots: slots.into(), floor })
    }

    pub fn slots(&self) -> &[Slot<V>] {
        &self.slots
    }

    pub fn floor(&self) -> &[Slot<V>] {
        self.floor.as_deref().map_or(&[], |f| f.as_slice())
    }
}
