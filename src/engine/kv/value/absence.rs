//! What a key state (or an element's) holds that another replica's state of the same
//! key does not, among the writes a vector of that replica's forgotten writes covers.
//! Such a write was merged there (the vector never passes what its node had merged)
//! and is held no more: it was removed there, and the record of that removal has
//! since been collected as causally stable. Used both ways: a state arriving here loses
//! what this shard has forgotten (`KvEngine::merge_key`, `Elements::merge`), and a peer's
//! anti-entropy states carry what it has forgotten to the keys held here
//! (`shard::absence`).
//!
//! Removal is by observation, as a DEL's is: value and TTL writes by joining the
//! forgotten vector into the context (per node only up to below the oldest write of
//! that node the other state holds, so that nothing it holds is covered), counter
//! slots by raising their floor. Pure: no I/O, no clock.

use super::{Counters, KeyState};
use crate::crdt::counter::{Counter, CounterValue, Slot};
use crate::crdt::{Dot, Hlc, NodeId, VersionVector};

/// A state's writes that another does not hold (see the module docs).
#[derive(Debug, Default, PartialEq)]
pub struct AbsentWrites {
    /// Value and TTL writes: removed by observing this vector.
    values: VersionVector,
    /// Counter slots: absorbed (their floor raised to them).
    ints: Vec<Slot<i64>>,
    floats: Vec<Slot<f64>>,
}

impl KeyState {
    /// The key-level writes of this state (values, TTL writes, counter slots; not a
    /// collection's elements) that `other` (`None`: a state of nothing) does not hold
    /// and `forgotten` covers. `None` when there are none.
    pub fn absent_writes(&self, other: Option<&KeyState>, forgotten: &VersionVector) -> Option<AbsentWrites> {
        // Most states arriving are fresh writes, above anything forgotten: one pass.
        if forgotten.is_empty() || !self.has_own_dot_covered_by(forgotten) {
            return None;
        }
        let other_dots: Vec<Dot> = other.map_or(Vec::new(), |o| o.values().dots().chain(o.ttl().dots()).collect());
        // Per node, the oldest write `other` holds: a vector may cover nothing at or
        // above it, or observing it would remove that write.
        let held_from = |node: NodeId| other_dots.iter().filter(|d| d.node == node).map(|d| d.hlc).min().unwrap_or(Hlc(u64::MAX));
        let removes_value = self.values().dots().chain(self.ttl().dots()).any(|d| forgotten.covers(d) && d.hlc < held_from(d.node));
        // All of `forgotten` that covers none of the other's writes: what the remover
        // of each write had seen is then observed too, as a DEL's context would be.
        let mut values = VersionVector::new();
        if removes_value {
            for dot in forgotten.iter() {
                let below = held_from(dot.node);
                let upto = if dot.hlc < below { dot.hlc } else { Hlc(below.0 - 1) };
                if upto > Hlc::ZERO {
                    values.add(Dot::new(upto, dot.node));
                }
            }
        }
        let counters = self.counters();
        let other_counters = other.and_then(KeyState::counters);
        let (ints, floats) = match counters.as_deref() {
            Some(c) => (
                absent_slots(&c.ints, other_counters.as_deref().map(|o| &o.ints), forgotten),
                absent_slots(&c.floats, other_counters.as_deref().map(|o| &*o.floats), forgotten),
            ),
            None => (Vec::new(), Vec::new()),
        };
        if values.is_empty() && ints.is_empty() && floats.is_empty() {
            return None;
        }
        Some(AbsentWrites { values, ints, floats })
    }

    /// Whether removing `absent` (found in this state by [`KeyState::absent_writes`])
    /// changes what a reader sees of it: the key or element goes, or its value or sum
    /// changes. Merges a pure removal into a copy: called only where the absence rule
    /// found something, which is rare (after a peer was given up on).
    pub fn removal_changes_readout(&self, absent: &AbsentWrites) -> bool {
        if !self.exists() {
            return false;
        }
        let mut removal = KeyState::new();
        removal.remove_absent(absent);
        let mut after = self.clone();
        after.merge(&removal);
        self.reads_differently_from(&after)
    }

    /// Whether a reader tells the two states apart: one exists and the other not, the
    /// value or sum differs, or a collection holds another number of live elements
    /// (what a removal changes; an element's value is not compared).
    pub fn reads_differently_from(&self, other: &KeyState) -> bool {
        self.exists() != other.exists()
            || self.read() != other.read()
            || !self.collections().map(|c| c.len()).eq(other.collections().map(|c| c.len()))
    }

    /// Record that `absent` was removed: its value and TTL writes are removed by
    /// observation (any this state holds go, and the context covers them), and its
    /// counter slots are absorbed. Applied to the state that holds them, they go; to
    /// the other state, merging it into the one that holds them removes them there.
    pub fn remove_absent(&mut self, absent: &AbsentWrites) {
        if !absent.values.is_empty() {
            self.remove_covered_values(&absent.values);
        }
        if absent.ints.is_empty() && absent.floats.is_empty() {
            return;
        }
        let counters = self.full_mut().counters.get_or_insert_with(Box::<Counters>::default);
        counters.ints.absorb_slots(&absent.ints);
        if !absent.floats.is_empty() {
            counters.floats.update(|f| f.absorb_slots(&absent.floats));
        }
        self.settle();
    }
}

/// The slots of `mine` whose newest increment `forgotten` covers and that `other`
/// holds neither at that increment nor later (as a slot or a floor). A replica that
/// merged an increment holds its slot at it or later until a remove absorbs it; one
/// holding the slot only at an earlier increment got that copy back after the
/// removal's record was collected (a late state, merged as removed), so the newer
/// increment was removed there too (seed 604 of `dst --no-periodic-anti-entropy`).
fn absent_slots<V: CounterValue>(mine: &Counter<V>, other: Option<&Counter<V>>, forgotten: &VersionVector) -> Vec<Slot<V>> {
    let held = |slot: &Slot<V>| {
        other.is_some_and(|o| {
            o.slots().iter().chain(o.floor()).any(|s| s.node == slot.node && s.incarnation == slot.incarnation && s.hlc >= slot.hlc)
        })
    };
    mine.slots().iter().filter(|s| forgotten.covers(Dot::new(s.hlc, s.node)) && !held(s)).copied().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::kv::StrVal;

    fn dot(ms: u64, node: NodeId) -> Dot {
        Dot::new(Hlc::from_parts(ms, 0), node)
    }

    fn vv(entries: &[(NodeId, u64)]) -> VersionVector {
        let mut v = VersionVector::new();
        entries.iter().for_each(|&(node, ms)| v.add(dot(ms, node)));
        v
    }

    #[test]
    fn a_value_the_other_lacks_below_its_forgotten_vector_goes_and_what_it_holds_is_never_covered() {
        // Node 2's value at 10 was overwritten on the other replica, whose record of
        // it is gone; the other holds node 3's value at 30.
        let mine = KeyState::with_value(dot(10, 2), StrVal::Int(1), None);
        let theirs = KeyState::with_value(dot(30, 3), StrVal::Int(2), None);
        let forgotten = vv(&[(2, 20), (3, 40)]);
        let absent = mine.absent_writes(Some(&theirs), &forgotten).expect("node 2's write at 10 is forgotten there");
        let mut here = mine.clone();
        here.remove_absent(&absent);
        assert!(!here.exists());
        assert!(here.causal_context().covers(dot(10, 2)));
        assert!(!here.causal_context().covers(dot(30, 3)), "nothing the other holds is covered");
        // Merging the other side's state now leaves exactly its value.
        here.merge(&theirs);
        assert_eq!(here.read(), Some(StrVal::Int(2)));
        // Applied to the other side instead (anti-entropy's direction), the join is the same.
        let mut there = theirs.clone();
        there.remove_absent(&absent);
        let mut joined = mine.clone();
        joined.merge(&there);
        assert_eq!(joined.read(), Some(StrVal::Int(2)));
    }

    #[test]
    fn a_removal_changes_the_readout_only_where_it_takes_away_what_a_reader_sees() {
        let mine = KeyState::with_value(dot(10, 2), StrVal::Int(1), None);
        let theirs = KeyState::with_value(dot(30, 3), StrVal::Int(2), None);
        let absent = mine.absent_writes(Some(&theirs), &vv(&[(2, 20), (3, 40)])).expect("node 2's value");
        assert!(mine.removal_changes_readout(&absent), "the value a GET read goes");
        let incarnation = Hlc::from_parts(1, 0);
        let mut counted = KeyState::new();
        counted.incr_by(dot(10, 2), incarnation, -1);
        counted.incr_by(dot(30, 1), incarnation, 5);
        assert_eq!(counted.read(), Some(StrVal::Int(4)));
        let absent = counted.absent_writes(None, &vv(&[(2, 20)])).expect("node 2's slot");
        assert!(counted.removal_changes_readout(&absent), "the sum loses node 2's -1");
        // Node 2's increment already absorbed here (a DEL took it), under a live one of
        // node 1: removing it again changes nothing a reader sees.
        let mut absorbed = KeyState::new();
        absorbed.incr_by(dot(10, 2), incarnation, -1);
        absorbed.remove_observed(&vv(&[(2, 10)]));
        absorbed.incr_by(dot(30, 1), incarnation, 5);
        assert_eq!(absorbed.read(), Some(StrVal::Int(5)));
        let absent = absorbed.absent_writes(None, &vv(&[(2, 20)]));
        assert!(absent.as_ref().is_none_or(|a| !absorbed.removal_changes_readout(a)), "{absent:?}");
        // A state that reads as nothing: nothing to change.
        let mut gone = mine.clone();
        gone.remove_observed(&vv(&[(2, 10)]));
        let absent = mine.absent_writes(None, &vv(&[(2, 20)])).expect("node 2's value");
        assert!(!gone.removal_changes_readout(&absent));
    }

    #[test]
    fn nothing_is_absent_that_the_vector_does_not_cover_or_the_other_holds() {
        let mine = KeyState::with_value(dot(10, 2), StrVal::Int(1), None);
        assert_eq!(mine.absent_writes(None, &vv(&[(2, 9)])), None, "written after what was forgotten");
        assert_eq!(mine.absent_writes(Some(&mine.clone()), &vv(&[(2, 20)])), None, "held there too");
        assert_eq!(mine.absent_writes(None, &VersionVector::new()), None);
        assert!(mine.absent_writes(None, &vv(&[(2, 10)])).is_some());
    }

    #[test]
    fn an_increment_the_other_absorbed_and_forgot_is_absorbed_and_one_it_holds_stays() {
        let incarnation = Hlc::from_parts(1, 0);
        let mut mine = KeyState::new();
        mine.incr_by(dot(5, 1), incarnation, 3);
        mine.incr_by_float(dot(6, 2), incarnation, 1.5);
        // The other replica holds node 1's slot (a later increment) but not node 2's.
        let mut theirs = KeyState::new();
        theirs.incr_by(dot(5, 1), incarnation, 3);
        theirs.incr_by(dot(8, 1), incarnation, 4);
        let absent = mine.absent_writes(Some(&theirs), &vv(&[(1, 10), (2, 10)])).expect("node 2's float slot");
        assert_eq!(absent.ints, Vec::new(), "node 1's slot is held there");
        assert_eq!(absent.floats.len(), 1);
        let mut here = mine.clone();
        here.remove_absent(&absent);
        here.merge(&theirs);
        assert_eq!(here.read(), Some(StrVal::Int(7)), "node 2's 1.5 is absorbed; node 1's 7 stays");
        let mut there = theirs.clone();
        there.remove_absent(&absent);
        there.merge(&mine);
        assert_eq!(there.read(), here.read(), "either direction converges");
    }

    #[test]
    fn an_increment_the_other_holds_only_an_earlier_copy_of_is_absorbed() {
        // The other replica absorbed node 2's +4 at 20 with a DEL, collected that
        // record, and later merged a late copy of the slot as of 10 (absorbed too).
        let incarnation = Hlc::from_parts(1, 0);
        let mut older = KeyState::new();
        older.incr_by(dot(10, 2), incarnation, -1);
        let mut newer = older.clone();
        newer.incr_by(dot(20, 2), incarnation, 5);
        let mut theirs = older.clone();
        theirs.remove_observed(&vv(&[(2, 10)]));
        assert_eq!(theirs.read(), None, "the earlier copy arrived absorbed");
        let absent = newer.absent_writes(Some(&theirs), &vv(&[(2, 25)])).expect("the increment at 20 is not held there");
        assert_eq!(absent.ints.len(), 1);
        let mut here = newer.clone();
        here.remove_absent(&absent);
        here.merge(&theirs);
        assert_eq!(here.read(), None, "the +4 at 20 is absorbed here too");
        // Not covered by what the other forgot: nothing is absent.
        assert_eq!(newer.absent_writes(Some(&theirs), &vv(&[(2, 15)])), None);
    }
}
