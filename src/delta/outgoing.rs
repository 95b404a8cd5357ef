//! Deltas on their way to the peers, encoded once on the shard's thread.
//!
//! Each delta is kept as its bytes in the wire's delta encoding (the segment body
//! encoding of `delta::codec`), next to this node's newest stamp in it, which the
//! stamp reservation decides on. The batcher splits, holds back and frames these bytes
//! without decoding them; nothing the shard owns (a key's reference count, a state's
//! allocations) crosses to the replication thread. Never decodes on the send path;
//! `decode` is for tests and the simulator's checks.

use bytes::Bytes;

use crate::crdt::{Dot, Hlc, NodeId};
use crate::delta::Delta;
use crate::delta::codec::{self, DecodeError, Writer};
use crate::engine::kv::KeyState;
use crate::engine::kv::collection_writes::Part;
use crate::engine::kv::element::ElementRef;

/// One encoded delta: where it ends in the buffer, and this node's newest stamp in it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Item {
    end: u32,
    own_stamp: Hlc,
}

/// Deltas in send order. Bounded by its producers (the outbox's byte bound, the
/// batcher's held bound); a buffer past 4 GiB is refused by assertion, as offsets are u32.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Outgoing {
    bytes: Vec<u8>,
    items: Vec<Item>,
}

impl Outgoing {
    /// Room for about `bytes` of deltas, `items` of them, before growing.
    pub fn with_capacity(bytes: usize, items: usize) -> Outgoing {
        Outgoing { bytes: Vec::with_capacity(bytes), items: Vec::with_capacity(items) }
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Encoded bytes held.
    pub fn bytes_len(&self) -> usize {
        self.bytes.len()
    }

    /// Append a key's state (the write path: nothing is copied but the encoding).
    pub fn push_key(&mut self, own: NodeId, key: &[u8], state: &KeyState) {
        self.push_key_logged(own, key, state, None);
    }

    /// [`Outgoing::push_key`], copying `logged` when the persistence log has just
    /// encoded the same delta (see [`Outgoing::push_or_copy`]).
    pub fn push_key_logged(&mut self, own: NodeId, key: &[u8], state: &KeyState, logged: Option<&[u8]>) {
        self.push_or_copy(state.newest_stamp_of(own), logged, |w| codec::write_key_delta(w, key, state));
    }

    /// Append the delta of a write to some elements of one collection part, written
    /// straight from them (`codec::write_part_delta`).
    pub fn push_part(&mut self, own: NodeId, key: &[u8], part: Part, elements: &[(&[u8], KeyState)]) {
        // What `newest_stamp_of` reads from `KeyState::part_delta`: the contexts joined.
        let own_stamp = elements.iter().map(|(_, state)| state.newest_stamp_of(own)).max().unwrap_or_default();
        self.push_with(own_stamp, |w| codec::write_part_delta(w, key, part, elements));
    }

    /// [`Outgoing::push_part`] of a list push's new elements, from their views; copies
    /// `logged` as [`Outgoing::push_key_logged`] does.
    pub fn push_list_push(&mut self, own: NodeId, key: &[u8], elements: &[(&[u8], ElementRef<'_>)], logged: Option<&[u8]>) {
        // `newest_stamp_of(own)` of a state holding one value at `dot`: its stamp when
        // `own` wrote it.
        let own_stamp = elements
            .iter()
            .filter_map(|(_, element)| element.plain_dot())
            .filter(|dot| dot.node == own)
            .map(|dot| dot.hlc)
            .max()
            .unwrap_or_default();
        self.push_or_copy(own_stamp, logged, |w| codec::write_list_push(w, key, elements));
    }

    /// [`Outgoing::push_part`] of one element set to one value at one dot, from its view
    /// (`codec::write_element_set`); copies `logged` as [`Outgoing::push_key_logged`] does.
    pub fn push_element_set(&mut self, own: NodeId, key: &[u8], part: Part, name: &[u8], element: ElementRef<'_>, logged: Option<&[u8]>) {
        // `newest_stamp_of(own)` of that state: its dot's stamp when `own` wrote it.
        let own_stamp = element.plain_dot().filter(|dot| dot.node == own).map(|dot| dot.hlc).unwrap_or_default();
        self.push_or_copy(own_stamp, logged, |w| codec::write_element_set(w, key, part, name, element));
    }

    /// [`Outgoing::push_part`] of one element removed from one value at `old` by the
    /// write at `by` (a list pop's tombstone, `codec::write_removed_element`: the bytes
    /// of `KeyState::plain_removed(old, by)` as that element, without building it);
    /// copies `logged` as [`Outgoing::push_key_logged`] does.
    #[allow(clippy::too_many_arguments)]
    pub fn push_element_removed(&mut self, own: NodeId, key: &[u8], part: Part, name: &[u8], old: Dot, by: Dot, logged: Option<&[u8]>) {
        // `newest_stamp_of(own)` of that tombstone: the newest of its context's dots
        // that `own` wrote.
        let own_stamp = [old, by].iter().filter(|dot| dot.node == own).map(|dot| dot.hlc).max().unwrap_or_default();
        self.push_or_copy(own_stamp, logged, |w| codec::write_removed_element(w, key, part, name, old, by));
    }

    /// Append the delta `write` encodes, or, when the persistence log has just encoded
    /// the same write's delta with the same function, a copy of those `logged` bytes:
    /// a replicated write with persistence on is encoded once (a debug build checks the
    /// bytes against `write`).
    fn push_or_copy(&mut self, own_stamp: Hlc, logged: Option<&[u8]>, write: impl Fn(&mut Writer)) {
        let Some(logged) = logged else { return self.push_with(own_stamp, write) };
        debug_assert!(
            {
                let mut again = Vec::new();
                Writer::append_to(&mut again, &write);
                again == logged
            },
            "the logged bytes are this write's delta"
        );
        self.bytes.extend_from_slice(logged);
        super::prefetch_ahead(&self.bytes);
        assert!(self.bytes.len() <= u32::MAX as usize, "outgoing deltas past 4 GiB");
        self.items.push(Item { end: self.bytes.len() as u32, own_stamp });
    }

    /// Append any delta.
    pub fn push(&mut self, own: NodeId, delta: &Delta) {
        self.push_with(delta.newest_stamp_of(own), |w| codec::write_delta(w, delta));
    }

    fn push_with(&mut self, own_stamp: Hlc, write: impl FnOnce(&mut Writer)) {
        Writer::append_to(&mut self.bytes, write);
        // As the log's (`prefetch_ahead`): the outbox fills a fresh buffer after every
        // drain, so each line written is first read from memory.
        super::prefetch_ahead(&self.bytes);
        assert!(self.bytes.len() <= u32::MAX as usize, "outgoing deltas past 4 GiB");
        self.items.push(Item { end: self.bytes.len() as u32, own_stamp });
    }

    fn start_of(&self, index: usize) -> usize {
        if index == 0 { 0 } else { self.items[index - 1].end as usize }
    }

    fn item_bytes(&self, index: usize) -> &[u8] {
        &self.bytes[self.start_of(index)..self.items[index].end as usize]
    }

    /// The key of the delta at `index`, if it is a key's state.
    pub fn key_at(&self, index: usize) -> Option<&[u8]> {
        codec::key_of_delta(self.item_bytes(index))
    }

    /// This node's newest stamp in the delta at `index`.
    pub(super) fn own_stamp(&self, index: usize) -> Hlc {
        self.items[index].own_stamp
    }

    /// Append `other`'s deltas after these (a move when these are none).
    pub fn append(&mut self, other: Outgoing) {
        if self.is_empty() {
            *self = other;
            return;
        }
        let base = self.bytes.len() as u32;
        self.bytes.extend_from_slice(&other.bytes);
        assert!(self.bytes.len() <= u32::MAX as usize, "outgoing deltas past 4 GiB");
        self.items.extend(other.items.iter().map(|i| Item { end: base + i.end, ..*i }));
    }

    /// Keep only the deltas `keep` picks, in order, moving their bytes down in place:
    /// no allocation, and the deltas before the first dropped one stay where they are
    /// (an outbox drain drops a few superseded writes from tens of kilobytes).
    pub fn retain(&mut self, mut keep: impl FnMut(usize) -> bool) {
        // Each item's old start is the previous item's old end, carried in `read_end`:
        // the items are rewritten (at `kept`, never past `index`) as the loop goes.
        let (mut write_end, mut kept, mut read_end) = (0usize, 0usize, 0usize);
        for index in 0..self.items.len() {
            let item = self.items[index];
            let read = read_end..item.end as usize;
            read_end = read.end;
            if !keep(index) {
                continue;
            }
            let len = read.len();
            if read.start != write_end {
                self.bytes.copy_within(read, write_end);
            }
            write_end += len;
            self.items[kept] = Item { end: write_end as u32, own_stamp: item.own_stamp };
            kept += 1;
        }
        self.bytes.truncate(write_end);
        self.items.truncate(kept);
    }

    /// The deltas `keep` picks, in order (a copy of their bytes).
    pub fn filtered(&self, mut keep: impl FnMut(usize) -> bool) -> Outgoing {
        let mut out = Outgoing::default();
        for index in 0..self.items.len() {
            if keep(index) {
                out.bytes.extend_from_slice(self.item_bytes(index));
                out.items.push(Item { end: out.bytes.len() as u32, own_stamp: self.own_stamp(index) });
            }
        }
        out
    }

    /// Split off the deltas holding a stamp of this node above `ceiling` (they wait
    /// for a later batch: `replication::reservation`); returns them and the lowest
    /// such stamp.
    pub fn split_off_above(&mut self, ceiling: Hlc) -> (Outgoing, Option<Hlc>) {
        let lowest = self.items.iter().map(|i| i.own_stamp).filter(|s| *s > ceiling).min();
        if lowest.is_none() {
            return (Outgoing::default(), None);
        }
        let held = self.filtered(|i| self.items[i].own_stamp > ceiling);
        *self = self.filtered(|i| self.items[i].own_stamp <= ceiling);
        (held, lowest)
    }

    /// Consecutive runs of deltas of about `bytes_target` bytes each (a run ends once
    /// it reaches the target): what one batch frame carries. (count, bytes) per run.
    pub fn chunks(&self, bytes_target: usize) -> Vec<(usize, &[u8])> {
        let mut chunks = Vec::new();
        let (mut first, mut start) = (0usize, 0usize);
        for (index, item) in self.items.iter().enumerate() {
            let end = item.end as usize;
            if end - start >= bytes_target {
                chunks.push((index + 1 - first, &self.bytes[start..end]));
                (first, start) = (index + 1, end);
            }
        }
        if first < self.items.len() {
            chunks.push((self.items.len() - first, &self.bytes[start..]));
        }
        chunks
    }

    /// The deltas again (tests, the simulator's checks).
    pub fn decode(&self) -> Result<Vec<Delta>, DecodeError> {
        codec::read_deltas_exact(self.len(), &self.bytes)
    }

    /// The encoded bytes of every delta, in order.
    pub fn into_bytes(self) -> Bytes {
        Bytes::from(self.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crdt::Dot;
    use crate::engine::kv::StrVal;

    fn write(ms: u64, node: NodeId) -> Delta {
        let state = KeyState::with_value(Dot::new(Hlc::from_parts(ms, 0), node), StrVal::Int(ms as i64), None);
        Delta::Key { key: Bytes::from(format!("k{ms}")), state }
    }

    fn outgoing(deltas: &[Delta]) -> Outgoing {
        let mut out = Outgoing::default();
        deltas.iter().for_each(|d| out.push(1, d));
        out
    }

    #[test]
    fn deltas_come_back_in_order_after_append() {
        let (a, b) = (vec![write(1, 1), write(2, 2)], vec![write(3, 1)]);
        let mut out = outgoing(&a);
        out.append(outgoing(&b));
        assert_eq!(out.decode().unwrap(), [a, b].concat());
    }

    #[test]
    fn stamps_above_the_ceiling_are_split_off_with_the_lowest_of_them() {
        let deltas = vec![write(12, 1), write(14, 1), write(20, 2), write(13, 1)];
        let mut out = outgoing(&deltas);
        let (held, lowest) = out.split_off_above(Hlc::from_parts(12, 5));
        assert_eq!(out.decode().unwrap(), vec![deltas[0].clone(), deltas[2].clone()], "own stamps within it, and a peer's, go");
        assert_eq!(held.decode().unwrap(), vec![deltas[1].clone(), deltas[3].clone()]);
        assert_eq!(lowest, Some(Hlc::from_parts(13, 0)));
    }

    #[test]
    fn retain_keeps_exactly_the_picked_deltas_in_order() {
        let deltas: Vec<Delta> = (0..40).map(|i| write(i, 1 + (i % 3) as NodeId)).collect();
        for pick in [|i: usize| i % 3 != 1, |i: usize| i >= 10, |i: usize| i < 10, |_| false, |_| true, |i: usize| i.is_multiple_of(7)] {
            let mut out = outgoing(&deltas);
            out.retain(pick);
            let expected = outgoing(&deltas).filtered(pick);
            assert_eq!(out, expected);
            let kept: Vec<Delta> = deltas.iter().enumerate().filter(|(i, _)| pick(*i)).map(|(_, d)| d.clone()).collect();
            assert_eq!(out.decode().unwrap(), kept);
        }
    }

    #[test]
    fn chunks_cover_every_delta_once_in_order() {
        let deltas: Vec<Delta> = (0..50).map(|i| write(i, 1)).collect();
        let out = outgoing(&deltas);
        let chunks = out.chunks(64);
        assert!(chunks.len() > 1);
        let mut again = Vec::new();
        for (count, bytes) in &chunks {
            again.extend(codec::read_deltas_exact(*count, bytes).unwrap());
        }
        assert_eq!(again, deltas);
        assert!(outgoing(&[]).chunks(64).is_empty());
    }
}
