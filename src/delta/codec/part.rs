//! The deltas of writes to some elements of one collection part, written straight from
//! the elements' states (or, for a pop's tombstone, its two dots) instead of from a
//! built part state: the same bytes as `write_key_delta` of that state. Part of
//! [`super`] (the codec); `plain.rs` writes the elements that hold one value.
//!
//! Must never: write bytes `write_key_delta` of the equivalent state would not
//! (compared in `tests.rs`).

use super::{DELTA_KEY_WITH_HASH, DELTA_KEY_WITH_PARTS, EMPTY_KEY_STATE, Writer, part_flag, plain, write_context_only, write_key_state};
use crate::crdt::{Dot, VersionVector};
use crate::engine::kv::KeyState;
use crate::engine::kv::collection_writes::Part;

/// The delta of a write to some elements of one collection part, written straight
/// from the elements' new states: the same bytes as [`super::write_key_delta`] writes for
/// `KeyState::part_delta(part, elements)` (a key state with nothing but that part, its
/// `removed` context empty, a list's elements in name order), without building that
/// collection: a push's delta is written once, not packed into a chunk and walked back
/// out. Names are distinct (a write names each element once).
pub fn write_part_delta(w: &mut Writer, key: &[u8], part: Part, elements: &[(&[u8], KeyState)]) {
    debug_assert!(elements.iter().all(|(_, state)| state.is_element()));
    write_part_head(w, key, part, elements.len());
    let write_entry = |(name, state): &(&[u8], KeyState)| match state.plain_value() {
        Some((dot, value)) => plain::write_plain_element(w, name, dot, value),
        None => {
            w.bytes(name);
            write_key_state(w, state);
        }
    };
    // A collection's delta keeps the order written, a list's is in name order: a push
    // names its elements ascending (RPUSH) or descending (LPUSH), anything else sorts.
    let ascending = elements.windows(2).all(|pair| pair[0].0 < pair[1].0);
    if part != Part::List || ascending {
        debug_assert!(part == Part::List || distinct(elements), "a write names each element once");
        elements.iter().for_each(write_entry);
    } else if elements.windows(2).all(|pair| pair[0].0 > pair[1].0) {
        elements.iter().rev().for_each(write_entry);
    } else {
        let mut order: Vec<&(&[u8], KeyState)> = elements.iter().collect();
        order.sort_unstable_by(|a, b| a.0.cmp(b.0));
        debug_assert!(order.windows(2).all(|pair| pair[0].0 < pair[1].0), "a write names each element once");
        order.into_iter().for_each(write_entry);
    }
}

/// What [`write_part_delta`] writes before its elements: the key with an empty state, the
/// part, its `removed` context (empty) and the number of elements.
fn write_part_head(w: &mut Writer, key: &[u8], part: Part, elements: usize) {
    w.u8(if part == Part::Hash { DELTA_KEY_WITH_HASH } else { DELTA_KEY_WITH_PARTS });
    w.bytes(key);
    w.buf.extend_from_slice(&EMPTY_KEY_STATE);
    if part != Part::Hash {
        w.u8(part_flag(part));
    }
    w.var(0);
    w.var(elements as u64);
}

/// [`write_part_delta`] of one element removed from one value at `old` by the write at
/// `by`: the bytes of `KeyState::plain_removed(old, by)` as that element, without
/// building the state (`DeltaSink::key_element_removed`; compared in `tests.rs`).
pub fn write_removed_element(w: &mut Writer, key: &[u8], part: Part, name: &[u8], old: Dot, by: Dot) {
    let mut ctx = VersionVector::new();
    ctx.add(old);
    ctx.add(by);
    write_part_head(w, key, part, 1);
    w.bytes(name);
    write_context_only(w, &ctx);
}

fn distinct(elements: &[(&[u8], KeyState)]) -> bool {
    let names: std::collections::HashSet<&[u8]> = elements.iter().map(|(name, _)| *name).collect();
    names.len() == elements.len()
}
