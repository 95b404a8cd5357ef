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

use std::cmp::Ordering;

use super::{
    DELTA_KEY_WITH_HASH, DELTA_KEY_WITH_PARTS, DELTA_LIST_PUSH, EMPTY_KEY_STATE, VARINT_BYTES_MAX, Writer, part_flag, plain,
    write_key_state,
};
use crate::crdt::Dot;
use crate::engine::kv::KeyState;
use crate::engine::kv::collection_writes::Part;
use crate::engine::kv::element::ElementRef;
use crate::engine::kv::position;

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
    if part == Part::List && !elements.is_empty() && elements.iter().all(|(name, state)| pushed(name, state)) {
        write_list_push_head(w, key, elements.len());
        in_delta_order(part, elements, |(name, state)| plain::write_pushed_element(w, name, ElementRef::of_state(state)));
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

/// Whether a list element holds one value at the dot its name was made with (what
/// `DELTA_LIST_PUSH` can carry without the dot).
fn pushed(name: &[u8], state: &KeyState) -> bool {
    state.plain_value().is_some_and(|(dot, _)| position::maker(name) == Some(dot))
}

/// [`write_part_delta`] of a list push's new elements, each one value at the dot its
/// name was made with, from views of them (no states built): the `DELTA_LIST_PUSH`
/// that `write_part_delta` writes for the same elements as states (compared in
/// `tests.rs`). Names are distinct.
pub fn write_list_push(w: &mut Writer, key: &[u8], elements: &[(&[u8], ElementRef<'_>)]) {
    debug_assert!(!elements.is_empty());
    debug_assert!(elements.iter().all(|(name, element)| element.plain_dot().is_some() && element.plain_dot() == position::maker(name)));
    if let [(name, element)] = elements {
        plain::write_one_pushed(w, key, name, *element);
        return;
    }
    write_list_push_head(w, key, elements.len());
    in_delta_order(Part::List, elements, |(name, element)| plain::write_pushed_element(w, name, *element));
}

/// Visit `elements` in the order a part delta holds them: a collection's as written, a
/// list's in name order (a push names its elements ascending (RPUSH) or descending
/// (LPUSH); anything else sorts).
fn in_delta_order<'a, T>(part: Part, elements: &'a [(&'a [u8], T)], write: impl FnMut(&'a (&'a [u8], T))) {
    let ascending = elements.windows(2).all(|pair| pair[0].0 < pair[1].0);
    if part != Part::List || ascending {
        debug_assert!(part == Part::List || distinct(elements), "a write names each element once");
        elements.iter().for_each(write);
    } else if elements.windows(2).all(|pair| pair[0].0 > pair[1].0) {
        elements.iter().rev().for_each(write);
    } else {
        let mut order: Vec<&(&[u8], T)> = elements.iter().collect();
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

// `write_removed_element` writes the empty key state as zeros.
const _: () = {
    let mut i = 0;
    while i < EMPTY_KEY_STATE.len() {
        assert!(EMPTY_KEY_STATE[i] == 0);
        i += 1;
    }
};

/// [`write_part_delta`] of one element removed from one value at `old` by the write at
/// `by`: the bytes of `KeyState::plain_removed(old, by)` as that element, without
/// building the state (`DeltaSink::key_element_removed`, every LPOP and RPOP; compared
/// in `tests.rs`), through one reserved cursor (`plain.rs` says why).
pub fn write_removed_element(w: &mut Writer, key: &[u8], part: Part, name: &[u8], old: Dot, by: Dot) {
    // The tombstone's context {old, by} as a version vector holds it: one entry when one
    // node wrote both (a pop of its own push), else one per node in node order.
    let (first, second) = match old.node.cmp(&by.node) {
        Ordering::Equal => (Dot::new(old.hlc.max(by.hlc), old.node), None),
        Ordering::Less => (old, Some(by)),
        Ordering::Greater => (by, Some(old)),
    };
    const DOT_BYTES_MAX: usize = VARINT_BYTES_MAX + 2;
    let element_max = VARINT_BYTES_MAX + 1 + 2 * DOT_BYTES_MAX + 6;
    w.reserved(ONE_ELEMENT_HEAD_BYTES_MAX + key.len() + element_max + name.len(), |c| {
        one_element_head(c, key, part);
        // The element: its name, then `write_context_only` of the context.
        c.bytes(name);
        c.var(1 + u64::from(second.is_some()));
        for dot in std::iter::once(first).chain(second) {
            c.var(dot.hlc.0);
            c.u8(dot.node as u8);
            c.u8((dot.node >> 8) as u8);
        }
        // No values, int slots, int floor, float slots, float floor or TTL writes.
        c.zeros::<6>();
    });
}

/// Most bytes [`one_element_head`] writes besides the key's own.
const ONE_ELEMENT_HEAD_BYTES_MAX: usize = 1 + VARINT_BYTES_MAX + EMPTY_KEY_STATE.len() + 3;

/// `write_part_head` of one element, through a cursor.
#[inline(always)]
fn one_element_head(c: &mut plain::Cursor, key: &[u8], part: Part) {
    c.u8(if part == Part::Hash { DELTA_KEY_WITH_HASH } else { DELTA_KEY_WITH_PARTS });
    c.bytes(key);
    c.zeros::<{ EMPTY_KEY_STATE.len() }>();
    if part != Part::Hash {
        c.u8(part_flag(part));
    }
    c.var(0);
    c.var(1);
}

/// [`write_part_delta`] of one element of a hash, set or sorted set that now holds one
/// value at one dot (an HSET of one field, an SADD or ZADD of one member, done in
/// place), from its view: the same bytes (compared in `tests.rs`), through one cursor,
/// with no state built. Not for a list, whose push takes `DELTA_LIST_PUSH`.
pub fn write_element_set(w: &mut Writer, key: &[u8], part: Part, name: &[u8], element: ElementRef<'_>) {
    debug_assert!(part != Part::List, "a list's element write may be a push");
    let element_max = VARINT_BYTES_MAX + plain::PLAIN_STATE_BYTES_MAX + plain::view_value_bytes(element);
    w.reserved(ONE_ELEMENT_HEAD_BYTES_MAX + key.len() + element_max + name.len(), |c| {
        one_element_head(c, key, part);
        plain::view_element(c, name, element);
    });
}

fn distinct<T>(elements: &[(&[u8], T)]) -> bool {
    let names: std::collections::HashSet<&[u8]> = elements.iter().map(|(name, _)| *name).collect();
    names.len() == elements.len()
}
