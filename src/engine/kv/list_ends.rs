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

use super::{End, list_end, pop_event, push_event, push_positions, table, value_of};
use crate::crdt::Dot;
use crate::engine::kv::collection_writes::Part;
use crate::engine::kv::element::ElementRef;
use crate::engine::kv::elements::Removed;
use crate::engine::kv::list_table::Name;
use crate::engine::kv::packed::PackLimit;
use crate::engine::kv::value::KeyKind;
use crate::engine::kv::{KeyState, KvEngine, WriteCtx, key_hash};
use crate::notify::Class;

/// Write a push's `elements`, named `names` (new positions at `end`, from `dot`), into
/// the list `state` of `stored_key`, each straight to its end chunk
/// (`Elements::push_list_element`), and ship them.
#[allow(clippy::too_many_arguments)]
fn push_into(
    ctx: &mut WriteCtx,
    stored_key: &[u8],
    state: &mut KeyState,
    end: End,
    dot: Dot,
    names: &[Name],
    elements: &[Bytes],
    pack_limit: PackLimit,
) {
    debug_assert_eq!(names.len(), elements.len());
    let tail = end == End::Right;
    let list = state.part_mut(Part::List);
    list.set_pack_limit(pack_limit);
    // Each element is one value at the push's dot, viewed in the command's own bytes:
    // stored (copied) once in its chunk, and shipped from the same view.
    let pushed: SmallVec<[(&[u8], ElementRef<'_>); 1]> =
        names.iter().zip(elements).map(|(name, element)| (name.as_slice(), ElementRef::plain(dot, element))).collect();
    for (name, element) in &pushed {
        list.push_list_element(tail, name, *element);
    }
    ctx.deltas.key_elements_pushed(stored_key, &pushed);
}

impl KvEngine {
    /// LPUSH/RPUSH onto `key` when it holds a live list: the key is looked up once, its
    /// type, TTL and end read and the elements written in the same update (a lookup
    /// and then an update cost two). Returns the new length, or `None`, writing
    /// nothing, when the key is missing, expired or of another type (the caller then
    /// takes the general way, which says which).
    pub(super) fn push_onto_live_list(&mut self, ctx: &mut WriteCtx, key: &Bytes, end: End, elements: &[Bytes]) -> Option<i64> {
        if elements.is_empty() {
            return None;
        }
        let now_ms = ctx.now_ms;
        let pack_limit = self.pack_limit(Part::List);
        let admit = |state: &KeyState| {
            let live_list = !Self::is_expired(state, now_ms) && state.kind() == Some(KeyKind::List);
            match state.list_elements() {
                Some(list) if live_list && !list.is_empty() => Ok(list_end(list, end)),
                _ => Err(()),
            }
        };
        let pushed = self.keys.update_admitted(key, key_hash(key), admit, |stored_key, state, (edge, len)| {
            let dot = ctx.next_dot();
            let names = push_positions(edge.as_deref(), end, elements.len(), dot);
            push_into(ctx, stored_key, state, end, dot, &names, elements, pack_limit);
            len + elements.len()
        });
        let len = pushed?.ok()?;
        let event_key = self.notify.key_for(&[Class::List], key);
        self.notify.raise_for(Class::List, push_event(end), event_key.as_ref());
        Some(len as i64)
    }

    /// Push `elements`, named `names` (new positions at `end`, from `dot`), onto the
    /// existing list `key` in one update of the key (`push_into`). Returns false,
    /// writing nothing, when the key is not found (the caller then writes the general
    /// way).
    pub(super) fn push_at_end(&mut self, ctx: &mut WriteCtx, key: &Bytes, end: End, dot: Dot, names: &[Name], elements: &[Bytes]) -> bool {
        debug_assert_eq!(names.len(), elements.len());
        if names.is_empty() {
            return false;
        }
        let pack_limit = self.pack_limit(Part::List);
        self.keys
            .update(key, key_hash(key), |stored_key, state| push_into(ctx, stored_key, state, end, dot, names, elements, pack_limit))
            .is_some()
    }

    /// Pop up to `count` elements from `end` of the list `key` when it is live and
    /// every live element of it is chunked: the key is looked up once, and each element
    /// read and cut from its chunk end in one step (`Elements::pop_list_end`) inside
    /// that one update, instead of a lookup, a walk that copies the names out and a
    /// write that looks each one up again by name and then removes it. The state left,
    /// the delta shipped (the tombstones in pop order, at one dot) and the events are
    /// those of `KvEngine::remove_list_elements` over the walk's names (tested in
    /// `list_pop_tests`). `Some(None)` when the key is missing (a poll of an empty
    /// queue: one lookup too); `None`, writing nothing, when it is expired, of another
    /// type or not all chunked, or `count` is 0 (the caller then takes the general way).
    pub(super) fn pop_at_end(&mut self, ctx: &mut WriteCtx, key: &Bytes, end: End, count: u64) -> Option<Option<Vec<Bytes>>> {
        let now_ms = ctx.now_ms;
        let planted = crate::bugs::active(crate::bugs::Bug::ListOrderByArrival) || crate::bugs::active(crate::bugs::Bug::HdelShipsOldField);
        let admit = |state: &KeyState| {
            let live_list = !planted && !Self::is_expired(state, now_ms) && state.kind() == Some(KeyKind::List);
            match state.list_elements() {
                Some(list) if live_list && count > 0 && !list.is_empty() && table(list).live_all_chunked() => {
                    Ok(count.min(list.len() as u64) as usize)
                }
                _ => Err(()),
            }
        };
        let hash = key_hash(key);
        let keep_tombstones = self.keep_tombstones;
        let pack_limit = self.pack_limit(Part::List);
        let mut values = Vec::new();
        let mut pop_dot = None;
        let popped = self.keys.update_admitted(key, hash, admit, |stored_key, state, take| {
            let dot = ctx.next_dot();
            pop_dot = Some(dot);
            values.reserve_exact(take);
            let elements = state.part_mut(Part::List);
            elements.set_pack_limit(pack_limit);
            if take == 1 {
                // The common pop of one element ships it as it is (no lists to zip).
                if let Some((name, value, removed)) = elements.pop_list_end(end == End::Right, dot, keep_tombstones, value_of) {
                    values.push(value);
                    match removed {
                        Removed::Plain { old, by } => ctx.deltas.key_element_removed(stored_key, Part::List, &name, old, by),
                        Removed::State(tombstone) => {
                            ctx.deltas.key_elements_changed(stored_key, Part::List, &[(name.as_slice(), tombstone)])
                        }
                    }
                } else {
                    debug_assert!(false, "admitted with a live chunked element");
                }
                return state.exists();
            }
            let mut names: SmallVec<[Name; 1]> = SmallVec::with_capacity(take);
            let mut tombstones: SmallVec<[KeyState; 1]> = SmallVec::with_capacity(take);
            for _ in 0..take {
                // Every element popped so far was chunked, so the rest are too.
                let Some((name, value, tombstone)) = elements.pop_list_end(end == End::Right, dot, keep_tombstones, value_of) else {
                    debug_assert!(false, "admitted with {take} live chunked elements");
                    break;
                };
                names.push(name);
                values.push(value);
                tombstones.push(tombstone.into_state());
            }
            let shipped: SmallVec<[(&[u8], KeyState); 1]> = names.iter().map(|n| n.as_slice()).zip(tombstones).collect();
            if !shipped.is_empty() {
                ctx.deltas.key_elements_changed(stored_key, Part::List, &shipped);
            }
            state.exists()
        });
        let Some(popped) = popped else { return Some(None) };
        let exists = popped.ok()?;
        if !exists && let Some(dot) = pop_dot {
            self.remove_emptied(ctx, dot, key.clone(), hash);
        }
        let event_key = self.event_key(Class::List, key);
        self.raise_collection_event(Class::List, pop_event(end), event_key);
        Some(Some(values))
    }
}
