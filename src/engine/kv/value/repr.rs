//! How a [`KeyState`] is stored: compact forms for the states almost every key
//! holds, and the full state boxed for the rest (issue 16's key memory). Owns only the
//! storage: which form holds a state, the moves between forms, and the read views over
//! them. What the fields mean, and every CRDT rule, is `value.rs`'s; this module never
//! changes what a state is, only how its fields are laid out.
//!
//! - `Str`: one value written at one dot, nothing else (no explicit context, TTL,
//!   counters or elements): a string key written by one node since it was last
//!   deleted, and most element states.
//! - `Count`: one writer's counter slot with no floor, nothing else: a key only
//!   `INCRBY` has written, by one node incarnation, never SET or deleted since.
//! - `Coll`: collection parts and nothing else (a hash, set, sorted set or list key),
//!   the parts' own allocation without a full box around it.
//! - `Meta`: an explicit context (and TTL writes) and nothing else: a tombstone, such
//!   as every element a node with peers removes leaves until they have all merged it
//!   (each LPOP's), in the context's one box without a full box around it.
//! - `Full`: anything else, boxed ([`Full`], the fields as they always were).
//!
//! A state is *settled* into the smallest form that holds it after every public
//! mutation ([`KeyState::settle`]); a mutation first moves a compact state into the
//! full form ([`KeyState::full_mut`]), so the CRDT logic exists once. Equality,
//! digests and the codec's parts read through views that are the same for every
//! form, so two equal states are equal whatever their forms.

use std::borrow::Cow;

use super::meta::KeyMeta;
use super::sparse::{Sparse, SparseValue};
use super::{Collections, Counters, KeyState, StrVal};
use crate::crdt::counter::{Counter, Slot};
use crate::crdt::register::MvRegister;
use crate::crdt::{Dot, Hlc, NodeId};
use crate::engine::kv::elements::Elements;

/// The whole state, as every state was stored before the compact forms (64 bytes:
/// jemalloc's 64-byte class once boxed).
#[derive(Clone, Debug, Default)]
pub(super) struct Full {
    /// The explicit causal context and the TTL register (see [`KeyMeta`]).
    pub(super) meta: Sparse<KeyMeta>,
    pub(super) value: MvRegister<StrVal>,
    pub(super) counters: Option<Box<Counters>>,
    /// The collection parts (a hash's fields, a set's or sorted set's members).
    pub(super) collections: Option<Box<Collections>>,
}

const _: () = assert!(std::mem::size_of::<Full>() <= 64);

/// The furthest a compact counter slot's `since` may lie behind its `hlc`: what 40
/// bits hold (2^24 ms of HLC, about 4.6 hours). A slot whose epoch began earlier is
/// held in the full form.
const SINCE_BACK_MAX: u64 = (1 << 40) - 1;

#[derive(Clone, Debug, Default)]
pub(super) enum Repr {
    /// Nothing at all (a new state, a blank delta).
    #[default]
    Empty,
    /// One value at one dot. Not a `(Dot, StrVal)`: a `Dot` pads its node id to 16
    /// bytes, and the tag fits in that padding only when the fields are apart.
    Str {
        node: NodeId,
        hlc: Hlc,
        value: StrVal,
    },
    /// One counter slot, no floor: `since` is stored as its distance back from `hlc`
    /// in 5 bytes, which with the tag and the node fill the first word.
    Count {
        since_back: [u8; 5],
        node: NodeId,
        incarnation: Hlc,
        hlc: Hlc,
        sum: i64,
    },
    /// Collection parts and nothing else (a hash, set, sorted set or list key whose
    /// string part never held anything): the parts' one allocation, no full box.
    Coll(Box<Collections>),
    /// An explicit context and TTL writes, nothing else (a tombstone): the [`KeyMeta`]
    /// box the full form would hold, without the full box around it. Never empty.
    Meta(Box<KeyMeta>),
    Full(Box<Full>),
}

// A key's entry is its key (24), this (32) and its digest (8): jemalloc's 64-byte
// class (`keyspace.rs`). 40 bytes would take the entry to the 80-byte class, and
// every string key would pay 16 bytes more.
const _: () = assert!(std::mem::size_of::<Repr>() == 32);

/// The values a state's register holds, in dot order, whatever its form.
#[derive(Clone, Copy)]
pub enum Values<'a> {
    Slice(&'a [(Dot, StrVal)]),
    One(Dot, &'a StrVal),
}

impl<'a> Values<'a> {
    pub fn len(&self) -> usize {
        match self {
            Values::Slice(entries) => entries.len(),
            Values::One(..) => 1,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn iter(self) -> impl Iterator<Item = (Dot, &'a StrVal)> + Clone + 'a {
        let (slice, one) = match self {
            Values::Slice(entries) => (entries, None),
            Values::One(dot, value) => (&[][..], Some((dot, value))),
        };
        slice.iter().map(|(d, v)| (*d, v)).chain(one)
    }

    pub fn dots(self) -> impl Iterator<Item = Dot> + 'a {
        self.iter().map(|(d, _)| d)
    }

    /// The value reads return (see [`MvRegister::winner`]).
    pub fn winner(self) -> Option<(Dot, &'a StrVal)> {
        match self {
            Values::Slice(_) if crate::bugs::active(crate::bugs::Bug::LwwTieBreakInverted) => self.iter().next(),
            Values::Slice(entries) => entries.last().map(|(d, v)| (*d, v)),
            Values::One(dot, value) => Some((dot, value)),
        }
    }
}

/// Counter slots, borrowed or (a compact state's one slot) copied out.
pub enum Slots<'a, V> {
    One(Slot<V>),
    Many(&'a [Slot<V>]),
}

impl<V> std::ops::Deref for Slots<'_, V> {
    type Target = [Slot<V>];
    fn deref(&self) -> &[Slot<V>] {
        match self {
            Slots::One(slot) => std::slice::from_ref(slot),
            Slots::Many(slots) => slots,
        }
    }
}

fn pack_since(hlc: Hlc, since: Hlc) -> Option<[u8; 5]> {
    let back = hlc.0.checked_sub(since.0).filter(|b| *b <= SINCE_BACK_MAX)?;
    let bytes = back.to_le_bytes();
    Some([bytes[0], bytes[1], bytes[2], bytes[3], bytes[4]])
}

fn unpack_since(hlc: Hlc, since_back: [u8; 5]) -> Hlc {
    let mut bytes = [0u8; 8];
    bytes[..5].copy_from_slice(&since_back);
    Hlc(hlc.0 - u64::from_le_bytes(bytes))
}

impl KeyState {
    /// Start loading the state's first heap allocation (a string's bytes, a
    /// collection's header, a full state's box) into cache: a hint that changes
    /// nothing (`engine/prefetch.rs`).
    #[inline]
    pub fn prefetch_heap(&self) {
        use crate::engine::prefetch::prefetch;
        match &self.repr {
            Repr::Str { value: super::StrVal::Raw(bytes), .. } => prefetch(bytes.as_ptr()),
            Repr::Coll(collections) => prefetch(&**collections),
            Repr::Full(full) => prefetch(&**full),
            Repr::Meta(meta) => prefetch(&**meta),
            Repr::Empty | Repr::Count { .. } | Repr::Str { value: super::StrVal::Int(_), .. } => {}
        }
    }

    /// The elements of the key's hash, set or sorted set (those a command names one of).
    #[inline]
    pub fn named_elements(&self) -> Option<&Elements> {
        self.hash().or_else(|| self.set_members()).or_else(|| self.zset_members())
    }

    /// The explicit context and TTL (an empty pair for a compact state).
    pub(super) fn meta_ref(&self) -> &KeyMeta {
        match &self.repr {
            Repr::Full(full) => &full.meta,
            Repr::Meta(meta) => meta,
            _ => KeyMeta::empty(),
        }
    }

    pub(super) fn values(&self) -> Values<'_> {
        match &self.repr {
            Repr::Full(full) => Values::Slice(full.value.entries()),
            Repr::Str { node, hlc, value } => Values::One(Dot::new(*hlc, *node), value),
            Repr::Empty | Repr::Count { .. } | Repr::Coll(_) | Repr::Meta(_) => Values::Slice(&[]),
        }
    }

    /// The one integer counter slot of a state that holds nothing else (no context,
    /// value, floor, float counter, TTL write or collection): what INCR leaves, which
    /// the codec and `max_hlc` read without building the counters.
    pub fn compact_count(&self) -> Option<Slot<i64>> {
        match self.repr {
            Repr::Count { since_back, node, incarnation, hlc, sum } => {
                Some(Slot { node, incarnation, hlc, since: unpack_since(hlc, since_back), sum })
            }
            _ => None,
        }
    }

    /// The counters, if any (a compact counter's are built on the stack: no allocation).
    pub(super) fn counters(&self) -> Option<Cow<'_, Counters>> {
        match &self.repr {
            Repr::Full(full) => full.counters.as_deref().map(Cow::Borrowed),
            _ => self.compact_count().map(|slot| Cow::Owned(Counters { ints: Counter::with_slot(slot), floats: Sparse::default() })),
        }
    }

    pub(super) fn has_counters(&self) -> bool {
        match &self.repr {
            Repr::Full(full) => full.counters.is_some(),
            Repr::Count { .. } => true,
            _ => false,
        }
    }

    /// The integer counter's slots and floor.
    pub(super) fn int_slots(&self) -> (Slots<'_, i64>, Slots<'_, i64>) {
        match &self.repr {
            Repr::Full(full) => match full.counters.as_deref() {
                Some(c) => (Slots::Many(c.ints.slots()), Slots::Many(c.ints.floor())),
                None => (Slots::Many(&[]), Slots::Many(&[])),
            },
            _ => match self.compact_count() {
                Some(slot) => (Slots::One(slot), Slots::Many(&[])),
                None => (Slots::Many(&[]), Slots::Many(&[])),
            },
        }
    }

    /// The counters of the full form (a compact state's are in [`KeyState::counters`]).
    pub(super) fn full_counters(&self) -> Option<&Counters> {
        match &self.repr {
            Repr::Full(full) => full.counters.as_deref(),
            _ => None,
        }
    }

    /// The collection parts, for changes that keep the form (`None` unless full).
    pub(super) fn colls_mut(&mut self) -> Option<&mut Collections> {
        match &mut self.repr {
            Repr::Full(full) => full.collections.as_deref_mut(),
            Repr::Coll(collections) => Some(collections),
            _ => None,
        }
    }

    /// A local SET of `value` at `dot` with no TTL to keep, where the result is that
    /// value alone: on a state of nothing, or of one value this node wrote earlier
    /// (its dot is then implied by the new one, so no context remains). What the full
    /// path (`KeyState::set`) would compute, without the move to the full form and
    /// back. Hands the value back when the state is another.
    pub(super) fn overwrite_compact(&mut self, dot: Dot, value: StrVal) -> Result<(), StrVal> {
        match self.repr {
            Repr::Empty => {}
            Repr::Str { node, hlc, .. } if node == dot.node && hlc < dot.hlc => {}
            _ => return Err(value),
        }
        self.repr = Repr::Str { node: dot.node, hlc: dot.hlc, value };
        Ok(())
    }

    /// A local INCRBY on a compact counter of the same incarnation, or on nothing: the
    /// slot the full path would compute (no floor: no new epoch; a new slot's epoch
    /// starts just before `dot`), in place. `false` when the state is another, or the
    /// slot would no longer fit the compact form.
    pub(super) fn incr_compact(&mut self, dot: Dot, incarnation: Hlc, by: i64) -> bool {
        debug_assert!(incarnation <= dot.hlc);
        let slot = match self.compact_count() {
            Some(slot) if slot.node == dot.node && slot.incarnation == incarnation && slot.hlc < dot.hlc => {
                Slot { hlc: dot.hlc, sum: slot.sum.wrapping_add(by), ..slot }
            }
            None if matches!(self.repr, Repr::Empty) => {
                Slot { node: dot.node, incarnation, hlc: dot.hlc, since: Hlc(dot.hlc.0 - 1), sum: by }
            }
            _ => return false,
        };
        let Some(since_back) = pack_since(slot.hlc, slot.since) else { return false };
        self.repr = Repr::Count { since_back, node: slot.node, incarnation: slot.incarnation, hlc: slot.hlc, sum: slot.sum };
        true
    }

    pub(super) fn colls(&self) -> Option<&Collections> {
        match &self.repr {
            Repr::Full(full) => full.collections.as_deref(),
            Repr::Coll(collections) => Some(collections),
            _ => None,
        }
    }

    /// The full form, moving a compact state into it (nothing is copied: the value's
    /// allocation moves with it).
    pub(super) fn full_mut(&mut self) -> &mut Full {
        if !matches!(self.repr, Repr::Full(_)) {
            let mut full = Box::<Full>::default();
            if let Some(slot) = self.compact_count() {
                full.counters = Some(Box::new(Counters { ints: Counter::with_slot(slot), floats: Sparse::default() }));
            }
            match std::mem::take(&mut self.repr) {
                Repr::Str { node, hlc, value } => full.value.write(Dot::new(hlc, node), value),
                Repr::Coll(collections) => full.collections = Some(collections),
                Repr::Meta(meta) => full.meta = Sparse::from_box(meta),
                _ => {}
            }
            self.repr = Repr::Full(full);
        }
        match &mut self.repr {
            Repr::Full(full) => full,
            _ => unreachable!("just made full"),
        }
    }

    /// Move a full state that a compact form can hold into it (after every mutation).
    pub(super) fn settle(&mut self) {
        let Repr::Full(full) = &mut self.repr else { return };
        if !full.meta.is_empty() {
            if full.value.is_empty()
                && full.counters.is_none()
                && full.collections.is_none()
                && let Some(meta) = full.meta.take_box()
            {
                self.repr = Repr::Meta(meta);
            }
            return;
        }
        if full.collections.is_some() {
            if full.value.is_empty()
                && full.counters.is_none()
                && let Some(collections) = full.collections.take()
            {
                self.repr = Repr::Coll(collections);
            }
            return;
        }
        let compact = match (full.value.len(), full.counters.as_deref()) {
            (0, None) => Repr::Empty,
            (1, None) => {
                let Some((dot, value)) = full.value.winner_mut().map(|(d, v)| (*d, std::mem::replace(v, StrVal::Int(0)))) else {
                    return;
                };
                Repr::Str { node: dot.node, hlc: dot.hlc, value }
            }
            (0, Some(c)) if c.floats.is_empty() && c.ints.floor().is_empty() => {
                let [slot] = c.ints.slots() else { return };
                let Some(since_back) = pack_since(slot.hlc, slot.since) else { return };
                Repr::Count { since_back, node: slot.node, incarnation: slot.incarnation, hlc: slot.hlc, sum: slot.sum }
            }
            _ => return,
        };
        self.repr = compact;
    }

    /// A state of `meta` alone (a tombstone; the compact form directly: one box).
    pub(super) fn of_meta(meta: KeyMeta) -> KeyState {
        if meta.is_empty() { KeyState::default() } else { KeyState { repr: Repr::Meta(Box::new(meta)) } }
    }

    /// A state of one value at one dot (the compact form directly: no box on the way).
    pub(super) fn one_value(dot: Dot, value: StrVal) -> KeyState {
        KeyState { repr: Repr::Str { node: dot.node, hlc: dot.hlc, value } }
    }

    /// Which form holds this state (tests of the forms themselves).
    #[cfg(test)]
    pub(super) fn form(&self) -> &'static str {
        match self.repr {
            Repr::Empty => "empty",
            Repr::Str { .. } => "str",
            Repr::Count { .. } => "count",
            Repr::Coll(_) => "coll",
            Repr::Meta(_) => "meta",
            Repr::Full(_) => "full",
        }
    }
}

impl PartialEq for KeyState {
    /// Equal fields, whatever the forms holding them.
    fn eq(&self, other: &Self) -> bool {
        let values_eq = {
            let (a, b) = (self.values(), other.values());
            a.len() == b.len() && a.iter().zip(b.iter()).all(|(x, y)| x == y)
        };
        values_eq && self.meta_ref() == other.meta_ref() && self.counters() == other.counters() && self.colls() == other.colls()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::kv::value::SetTtl;

    fn dot(ms: u64, node: NodeId) -> Dot {
        Dot::new(Hlc::from_parts(ms, 0), node)
    }

    #[test]
    fn a_string_written_by_one_node_stays_compact_and_a_second_writer_makes_it_full() {
        let mut a = KeyState::with_value(dot(1, 1), StrVal::raw("v1"), None);
        assert_eq!(a.form(), "str");
        a.set(dot(2, 1), StrVal::raw("v2"), SetTtl::Clear);
        assert_eq!(a.form(), "str");
        let b = KeyState::with_value(dot(3, 2), StrVal::raw("w"), None);
        let mut merged = a.clone();
        merged.merge(&b);
        // Two concurrent values: only the full form holds them.
        assert_eq!(merged.form(), "full");
        assert_eq!(merged.concurrent_values(), 2);
        a.expire_at(dot(4, 1), 10_000);
        assert_eq!(a.form(), "full", "a TTL needs the full form");
        a.set(dot(5, 1), StrVal::raw("v3"), SetTtl::Clear);
        assert_eq!(a.form(), "str", "a plain SET by the same node clears the TTL and compacts again");
    }

    #[test]
    fn a_one_writer_counter_is_compact_until_a_set_absorbs_it() {
        let mut c = KeyState::new();
        c.incr_by(dot(1, 1), Hlc::from_parts(1, 0), 5);
        assert_eq!(c.form(), "count");
        c.incr_by(dot(2, 1), Hlc::from_parts(1, 0), -2);
        assert_eq!(c.form(), "count");
        assert_eq!(c.read(), Some(StrVal::Int(3)));
        let mut other = KeyState::new();
        other.incr_by(dot(3, 2), Hlc::from_parts(1, 0), 10);
        let mut both = c.clone();
        both.merge(&other);
        assert_eq!(both.form(), "full");
        assert_eq!(both.read(), Some(StrVal::Int(13)));
        c.set(dot(4, 1), StrVal::Int(7), SetTtl::Clear);
        assert_eq!(c.form(), "full", "the absorbed slot is a floor");
        assert_eq!(c.read(), Some(StrVal::Int(7)));
    }

    #[test]
    fn a_counter_epoch_too_old_for_five_bytes_is_held_full_and_reads_the_same() {
        let mut c = KeyState::new();
        c.incr_by(dot(1, 1), Hlc::from_parts(1, 0), 1);
        // 2^24 ms later, `since` lies 2^40 HLC units behind: more than 5 bytes hold.
        c.incr_by(dot(1 + (1 << 24), 1), Hlc::from_parts(1, 0), 1);
        assert_eq!(c.form(), "full");
        assert_eq!(c.read(), Some(StrVal::Int(2)));
        let mut near = KeyState::new();
        near.incr_by(dot(1, 1), Hlc::from_parts(1, 0), 1);
        near.incr_by(dot((1 << 24) - 1, 1), Hlc::from_parts(1, 0), 1);
        assert_eq!(near.form(), "count");
    }

    #[test]
    fn a_collection_key_holds_its_parts_without_a_full_box() {
        let mut h = KeyState::new();
        let _delta = h.hash_mut().write(b"f", |s| s.set(dot(1, 1), StrVal::raw("v"), SetTtl::Clear));
        assert_eq!(h.form(), "coll");
        assert!(h.hash().is_some_and(|e| !e.is_empty()));
        let mut full = h.clone();
        full.full_mut();
        assert_eq!(full, h);
        let mut settled = full.clone();
        settled.settle();
        assert_eq!(settled.form(), "coll");
        // A SET over the hash replaces it: the string form again.
        h.set(dot(2, 1), StrVal::raw("s"), SetTtl::Clear);
        assert_eq!(h.kind(), Some(crate::engine::kv::value::KeyKind::String));
    }

    /// A tombstone is held in the context-only form, whether built directly (a pop's)
    /// or left by a mutation, and equal either way.
    #[test]
    fn a_tombstone_holds_its_context_without_a_full_box() {
        for (old, by) in [(dot(1, 1), dot(2, 1)), (dot(1, 2), dot(2, 1)), (dot(3, 1), dot(2, 2))] {
            let direct = KeyState::plain_removed(old, by);
            assert_eq!(direct.form(), "meta");
            let mut general = KeyState::new();
            let mut ctx = crate::crdt::VersionVector::new();
            ctx.add(old);
            ctx.add(by);
            general.ctx_set(ctx);
            general.settle();
            assert_eq!(general.form(), "meta");
            assert_eq!(general, direct);
            assert!(!direct.exists());
            // Written again: the full form's logic, then settled back to a value.
            let mut rewritten = direct.clone();
            rewritten.set(dot(9, 1), StrVal::raw("v"), crate::engine::kv::value::SetTtl::Keep);
            assert!(rewritten.exists());
            assert_ne!(rewritten.form(), "meta");
        }
        let mut deleted = KeyState::with_value(dot(6, 1), StrVal::Int(1), None);
        deleted.delete(dot(7, 2));
        assert_eq!(deleted.form(), "meta");
    }

    #[test]
    fn every_form_encodes_digests_and_compares_as_its_full_equal() {
        let mut states = vec![KeyState::new(), KeyState::with_value(dot(1, 1), StrVal::raw("abc"), None)];
        let mut counter = KeyState::new();
        counter.incr_by(dot(2, 3), Hlc::from_parts(1, 0), 9);
        states.push(counter);
        states.push(KeyState::with_value(dot(3, 1), StrVal::Int(-4), None));
        // Tombstones: a pop's (one writer, two writers) and a deleted key's.
        states.push(KeyState::plain_removed(dot(4, 1), dot(5, 1)));
        states.push(KeyState::plain_removed(dot(4, 2), dot(5, 1)));
        let mut deleted = KeyState::with_value(dot(6, 1), StrVal::Int(1), None);
        deleted.delete(dot(7, 2));
        states.push(deleted);
        for state in states {
            assert_ne!(state.form(), "full");
            // The same fields held full, as every state was before the compact forms.
            let mut full = state.clone();
            full.full_mut();
            assert_eq!(full.form(), "full");
            assert_eq!(full, state);
            assert_eq!(state, full);
            let digest = |s: &KeyState| {
                let mut bytes = Vec::new();
                s.feed_digest(&mut |b: &[u8]| bytes.extend_from_slice(b));
                bytes
            };
            assert_eq!(digest(&full), digest(&state));
            let encode = |s: &KeyState| {
                let mut w = crate::delta::codec::Writer::default();
                crate::delta::codec::write_key_state(&mut w, s);
                w.buf
            };
            assert_eq!(encode(&full), encode(&state));
            let mut settled = full.clone();
            settled.settle();
            assert_eq!(settled.form(), state.form());
        }
    }
}
