//! The deltas of writes to some elements of one collection part, written straight from
//! the elements' states (or, for a pop's tombstone, its two dots) instead of from a
//! built part state: the same bytes as `write_key_delta` of that state, except a list
//! push's, which takes the compact kind `DELTA_LIST_PUSH` and reads back as the same
//! delta. Part of [`super`] (the codec); `plain.rs` writes the elements that hold one
//! value.
//!
//! Must never: write a delta that reads back other than `write_key_delta`'s of the
//! equivalent state (compared in `tests.rs`: the same bytes, or for a list push the same
//! delta read back).

use super::{
    DELTA_KEY_WITH_HASH, DELTA_KEY_WITH_PARTS, DELTA_LIST_PUSH, EMPTY_KEY_STATE, Writer, part_flag, plain, write_context_only,
    write_key_state,
};
use crate::crdt::{Dot, VersionVector};
use crate::engine::kv::KeyState;
use crate::engine::kv::collection_writes::Part;
use crate::engine::kv::position;
use crate::engine::kv::value::StrVal;

/// The delta of a write to some elements of one collection part, written straight
/// from the elements' new states: the same delta as [`super::write_key_delta`] writes
/// for `KeyState::part_delta(part, elements)` (a key state with nothing but that part,
/// its `removed` context empty, a list's elements in name order), without building that
/// collection: a push's delta is written once, not packed into a chunk and walked back
/// out. List elements that each hold one value at their name's dot (every push) take
/// the compact kind `DELTA_LIST_PUSH`, which reads as the same delta; everything else
/// has the same bytes as `write_key_delta`'s. Names are distinct (a write names each
/// element once).
pub fn write_part_delta(w: &mut Writer, key: &[u8], part: Part, elements: &[(&[u8], KeyState)]) {
    debug_assert!(elements.iter().all(|(_, state)| state.is_element()));
    if part == Part::List && !elements.is_empty() && elements.iter().all(|(name, state)| pushed_value(name, state).is_some()) {
        write_list_push_head(w, key, elements.len());
        in_delta_order(part, elements, |(name, state)| {
            plain::write_pushed_element(w, name, pushed_value(name, state).expect("checked above"));
        });
        return;
    }
    write_part_head(w, key, part, elements.len());
    in_delta_order(part, elements, |(name, state)| match state.plain_value() {
        Some((dot, value)) => plain::write_plain_element(w, name, dot, value),
        None => {
            w.bytes(name);
            write_key_state(w, state);
        }
    });
}

/// The value of a list element that holds one value at the dot its name was made with
/// (what `DELTA_LIST_PUSH` can carry without the dot).
fn pushed_value<'a>(name: &[u8], state: &'a KeyState) -> Option<&'a StrVal> {
    let (dot, value) = state.plain_value()?;
    (position::maker(name) == Some(dot)).then_some(value)
}

/// Visit `elements` in the order a part delta holds them: a collection's as written, a
/// list's in name order (a push names its elements ascending (RPUSH) or descending
/// (LPUSH); anything else sorts).
fn in_delta_order<'a>(part: Part, elements: &'a [(&'a [u8], KeyState)], write: impl FnMut(&'a (&'a [u8], KeyState))) {
    let ascending = elements.windows(2).all(|pair| pair[0].0 < pair[1].0);
    if part != Part::List || ascending {
        debug_assert!(part == Part::List || distinct(elements), "a write names each element once");
        elements.iter().for_each(write);
    } else if elements.windows(2).all(|pair| pair[0].0 > pair[1].0) {
        elements.iter().rev().for_each(write);
    } else {
        let mut order: Vec<&(&[u8], KeyState)> = elements.iter().collect();
        order.sort_unstable_by(|a, b| a.0.cmp(b.0));
        debug_assert!(order.windows(2).all(|pair| pair[0].0 < pair[1].0), "a write names each element once");
        order.into_iter().for_each(write);
    }
}

/// What a `DELTA_LIST_PUSH` holds before its elements: the key and their number.
fn write_list_push_head(w: &mut Writer, key: &[u8], elements: usize) {
    w.u8(DELTA_LIST_PUSH);
    w.bytes(key);
    w.var(elements as u64);
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
