//! The writes of a push and a pop that reach a list's end chunk directly: a push's new
//! elements (named after its own dot, so never present) are neither looked up nor
//! searched for, and a pop reads and cuts each element from its chunk end in one step,
//! both in one update of the key. The state left, the delta shipped and the events are
//! those of the general path (`write_elements_at` by name; compared in
//! `list_pop_tests.rs`); a list the fast path does not fit (a live element outside the
//! chunks, a planted bug) goes the general way.
//!
//! Must never: change what a client, the delta log or a replica sees; do I/O.

use bytes::Bytes;
use smallvec::SmallVec;

use super::{End, element_value, pop_event, value_of};
use crate::crdt::Dot;
use crate::engine::kv::collection_writes::Part;
use crate::engine::kv::list_table::Name;
use crate::engine::kv::value::SetTtl;
use crate::engine::kv::{KeyState, KvEngine, WriteCtx, key_hash};
use crate::notify::Class;

impl KvEngine {
    /// Push `elements`, named `names` (new positions at `end`, from `dot`), onto the
    /// existing list `key` in one update of the key, each element written straight to
    /// its end chunk (`Elements::push_list_element`). Returns false, writing nothing,
    /// when the key is not found (the caller then writes the general way).
    pub(super) fn push_at_end(&mut self, ctx: &mut WriteCtx, key: &Bytes, end: End, dot: Dot, names: &[Name], elements: &[Bytes]) -> bool {
        debug_assert_eq!(names.len(), elements.len());
        if names.is_empty() {
            return false;
        }
        let pack_limit = self.pack_limit(Part::List);
        let tail = end == End::Right;
        self.keys
            .update(key, key_hash(key), |stored_key, state| {
                let list = state.part_mut(Part::List);
                list.set_pack_limit(pack_limit);
                if let ([name], [element]) = (names, elements) {
                    // The common push of one element ships it as it is (no list built).
                    let state = list.push_list_element(tail, name, |s| s.set(dot, element_value(element), SetTtl::Keep));
                    ctx.deltas.key_elements_changed(stored_key, Part::List, &[(name.as_slice(), state)]);
                    return;
                }
                let shipped: SmallVec<[(&[u8], KeyState); 1]> = names
                    .iter()
                    .zip(elements)
                    .map(|(name, element)| {
                        (name.as_slice(), list.push_list_element(tail, name, |s| s.set(dot, element_value(element), SetTtl::Keep)))
                    })
                    .collect();
                ctx.deltas.key_elements_changed(stored_key, Part::List, &shipped);
            })
            .is_some()
    }

    /// Pop `take` (≥ 1, at most the length) elements from `end` of the list `key`,
    /// every live element of which is chunked: each element is read and cut from its
    /// chunk end in one step (`Elements::pop_list_end`), inside one update of the key,
    /// instead of a walk that copies the names out and a write that looks each one up
    /// again by name and then removes it. The state left, the delta shipped (the
    /// tombstones in pop order, at one dot) and the events are those of
    /// `KvEngine::remove_list_elements` over the walk's names (tested in
    /// `list_pop_tests`).
    pub(super) fn pop_at_end(&mut self, ctx: &mut WriteCtx, key: Bytes, end: End, take: usize) -> Vec<Bytes> {
        debug_assert!(take > 0);
        let event_key = self.event_key(Class::List, &key);
        let dot = ctx.next_dot();
        let hash = key_hash(&key);
        let keep_tombstones = self.keep_tombstones;
        let pack_limit = self.pack_limit(Part::List);
        let mut values = Vec::with_capacity(take);
        let updated = self.keys.update(&key, hash, |stored_key, state| {
            let elements = state.part_mut(Part::List);
            elements.set_pack_limit(pack_limit);
            if take == 1 {
                // The common pop of one element ships it as it is (no lists to zip).
                if let Some((name, value, tombstone)) = elements.pop_list_end(end == End::Right, dot, keep_tombstones, value_of) {
                    values.push(value);
                    ctx.deltas.key_elements_changed(stored_key, Part::List, &[(name.as_slice(), tombstone)]);
                } else {
                    debug_assert!(false, "the caller saw a live chunked element");
                }
                return state.exists();
            }
            let mut names: SmallVec<[Name; 1]> = SmallVec::with_capacity(take);
            let mut tombstones: SmallVec<[KeyState; 1]> = SmallVec::with_capacity(take);
            for _ in 0..take {
                // Every element popped so far was chunked, so the rest are too.
                let Some((name, value, tombstone)) = elements.pop_list_end(end == End::Right, dot, keep_tombstones, value_of) else {
                    debug_assert!(false, "the caller saw {take} live chunked elements");
                    break;
                };
                names.push(name);
                values.push(value);
                tombstones.push(tombstone);
            }
            let shipped: SmallVec<[(&[u8], KeyState); 1]> = names.iter().map(|n| n.as_slice()).zip(tombstones).collect();
            if !shipped.is_empty() {
                ctx.deltas.key_elements_changed(stored_key, Part::List, &shipped);
            }
            state.exists()
        });
        debug_assert!(updated.is_some(), "the caller found the key");
        if updated == Some(false) {
            // The last element went: the key goes, its history kept as a tombstone
            // (as `write_elements_at` leaves it).
            if let Some(state) = self.keys.remove(&key, hash)
                && self.keep_tombstones
            {
                self.keys.put_tombstone(key, hash, state);
            }
        }
        self.raise_collection_event(Class::List, pop_event(end), event_key);
        values
    }
}
