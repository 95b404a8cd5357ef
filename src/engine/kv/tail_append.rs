//! One write of two elements at one dot into a part held in chunks: a new element past
//! its last entry, and one more element set over whatever it held (XADD's: the entry,
//! then the region's counters). The same state, digests, context and delta as
//! [`KvEngine::write_elements_at`] with two `KeyState::set`s, without the search for
//! the new element's chunk, its lookup before the write, or a state built to store it
//! (`Elements::push_list_element`, as a list push reaches its end chunk).
//!
//! No I/O, no clock: the dot comes from the caller.

use bytes::Bytes;

use super::collection_writes::Part;
use super::element::ElementRef;
use super::value::{SetTtl, StrVal};
use super::{KeyState, KvEngine, WriteCtx, key_hash};
use crate::crdt::Dot;

impl KvEngine {
    /// Write `appended` (a name new to `key`'s `part`, past every chunked entry of it)
    /// and `set` (name, raw value) at `dot`, shipped as one delta of the two in that
    /// order. Returns false, writing nothing, unless `key` is a live key of `part`'s
    /// type whose part is held in chunks and ends before `appended` (the caller then
    /// writes the general way, which says why).
    pub(crate) fn append_and_set(
        &mut self,
        ctx: &mut WriteCtx,
        dot: Dot,
        key: &Bytes,
        part: Part,
        appended: (&[u8], &[u8]),
        set: (&[u8], &[u8]),
    ) -> bool {
        let now_ms = ctx.now_ms;
        let keep_tombstones = self.keep_tombstones;
        let pack_limit = self.pack_limit(part);
        let admit = |state: &KeyState| {
            let live = !Self::is_expired(state, now_ms) && state.kind() == Some(part.kind());
            if live && state.part(part).is_some_and(|elements| elements.is_past_chunked_end(appended.0)) { Ok(()) } else { Err(()) }
        };
        let written = self.keys.update_admitted(key, key_hash(key), admit, |stored_key, state, ()| {
            let elements = state.part_mut(part);
            elements.set_pack_limit(pack_limit);
            // Stored raw, as `KeyState::set` of `StrVal::raw` stores it.
            let new = ElementRef::Raw(dot, appended.1);
            elements.push_list_element(true, appended.0, new);
            let other = elements.write_element(set.0, keep_tombstones, |s| s.set(dot, StrVal::raw(set.1), SetTtl::Keep));
            let new_state = new.to_state();
            debug_assert_eq!(
                new_state,
                {
                    let mut general = KeyState::new();
                    general.set(dot, StrVal::raw(appended.1), SetTtl::Keep);
                    general
                },
                "the state the general path would ship"
            );
            ctx.deltas.key_elements_changed(stored_key, part, &[(appended.0, new_state), (set.0, other.state)]);
        });
        matches!(written, Some(Ok(())))
    }
}
