//! How a stream lives in a key: every entry, every node's counters and every consumer
//! group, consumer and pending entry is one element of the key's stream part
//! ([`Part::Stream`]), so the key-value engine's add-wins elements, deltas, codec,
//! Merkle leaves, persistence and anti-entropy carry streams unchanged. The part is
//! held in name-ordered chunks (as a list's or a graph's), so entries sit in id order.
//!
//! Element names (the tag byte orders the kinds; entries sort last):
//! - `N` node (2 bytes): what that node added: its last generated id, how many entries
//!   it added and the greatest id it deleted. Only that node writes it, so its writes
//!   are ordered; the stream's last id is the greatest of them, its entries-added the
//!   sum. This element also makes an empty stream exist (XTRIM to 0, MKSTREAM).
//! - `G` group: a consumer group's last delivered id and read counter (a register:
//!   concurrent deliveries in two regions keep one of the two; see docs/streams.md).
//! - `C` len group consumer: a consumer and when it was last seen.
//! - `P` len group id: a pending entry: its consumer, delivery time and count.
//! - `x` id (16 bytes, big-endian): an entry; its value is its field-value pairs.
//!
//! This module names, encodes and reads; it never writes and never reads a clock.

use bytes::{BufMut, Bytes, BytesMut};

use crate::command::stream::id::{ID_BYTES, StreamId};
use crate::crdt::NodeId;
use crate::engine::kv::element::ElementRef;
use crate::engine::kv::elements::Elements;
use crate::engine::kv::list_table::ListTable;

pub const ENTRY: u8 = b'x';
pub const NODE: u8 = b'N';
pub const GROUP: u8 = b'G';
pub const CONSUMER: u8 = b'C';
pub const PENDING: u8 = b'P';

pub fn entry_name(id: StreamId) -> [u8; 1 + ID_BYTES] {
    let mut name = [0u8; 1 + ID_BYTES];
    name[0] = ENTRY;
    name[1..].copy_from_slice(&id.to_bytes());
    name
}

pub fn node_name(node: NodeId) -> [u8; 3] {
    let n = node.to_be_bytes();
    [NODE, n[0], n[1]]
}

pub fn group_name(group: &[u8]) -> Bytes {
    let mut name = BytesMut::with_capacity(1 + group.len());
    name.put_u8(GROUP);
    name.put_slice(group);
    name.freeze()
}

/// The prefix shared by `tag`'s elements of one group (consumers or pending entries).
pub fn group_scope(tag: u8, group: &[u8]) -> Vec<u8> {
    let mut name = Vec::with_capacity(5 + group.len() + ID_BYTES);
    name.push(tag);
    name.extend_from_slice(&(group.len() as u32).to_be_bytes());
    name.extend_from_slice(group);
    name
}

pub fn consumer_name(group: &[u8], consumer: &[u8]) -> Bytes {
    let mut name = group_scope(CONSUMER, group);
    name.extend_from_slice(consumer);
    Bytes::from(name)
}

pub fn pending_name(group: &[u8], id: StreamId) -> Bytes {
    let mut name = group_scope(PENDING, group);
    name.extend_from_slice(&id.to_bytes());
    Bytes::from(name)
}

/// Where an entry sits among the blocks `~` trims by (Redis's radix-tree nodes, see
/// `trim_writes`): its block, and how many entries that block had been given before it.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Slot {
    pub block: u64,
    pub index: u64,
}

impl Slot {
    /// Where the next entry goes after `tail`, the stream's last live entry (`None`:
    /// no entry is left, and Redis has freed every node): the same block until it has
    /// been given `per_block` entries (0: no bound), then a new one.
    pub fn after(tail: Option<Slot>, per_block: u64) -> Slot {
        match tail {
            None => Slot::default(),
            Some(t) if per_block == 0 || t.index + 1 < per_block => Slot { block: t.block, index: t.index + 1 },
            Some(t) => Slot { block: t.block.wrapping_add(1), index: 0 },
        }
    }
}

fn put_varint(out: &mut BytesMut, mut n: u64) {
    while n >= 0x80 {
        out.put_u8((n as u8) | 0x80);
        n >>= 7;
    }
    out.put_u8(n as u8);
}

fn take_varint(value: &[u8], at: &mut usize) -> Option<u64> {
    let mut n = 0u64;
    for i in 0..10 {
        let b = *value.get(*at)?;
        *at += 1;
        n |= u64::from(b & 0x7f) << (7 * i);
        if b < 0x80 {
            return Some(n);
        }
    }
    None
}

/// An entry's value: its [`Slot`] (two LEB128 varints), then its pairs, `[count u32]`
/// then `[len u32][bytes]` for each.
pub fn encode_entry(slot: Slot, fields: &[(Bytes, Bytes)]) -> Bytes {
    let size = 20 + 4 + fields.iter().map(|(f, v)| 8 + f.len() + v.len()).sum::<usize>();
    let mut out = BytesMut::with_capacity(size);
    put_varint(&mut out, slot.block);
    put_varint(&mut out, slot.index);
    out.put_u32(fields.len() as u32);
    for (f, v) in fields {
        out.put_u32(f.len() as u32);
        out.put_slice(f);
        out.put_u32(v.len() as u32);
        out.put_slice(v);
    }
    out.freeze()
}

fn take_u32(bytes: &[u8], at: &mut usize) -> Option<usize> {
    let v = u32::from_be_bytes(bytes.get(*at..*at + 4)?.try_into().ok()?);
    *at += 4;
    Some(v as usize)
}

fn take_u64(bytes: &[u8], at: &mut usize) -> Option<u64> {
    let v = u64::from_be_bytes(bytes.get(*at..*at + 8)?.try_into().ok()?);
    *at += 8;
    Some(v)
}

fn take_id(bytes: &[u8], at: &mut usize) -> Option<StreamId> {
    let id = StreamId::from_bytes(bytes.get(*at..*at + ID_BYTES)?)?;
    *at += ID_BYTES;
    Some(id)
}

/// An entry value's [`Slot`] (see [`encode_entry`]); the first slot if it does not
/// decode (none this code writes).
pub fn entry_slot(value: &[u8]) -> Slot {
    let mut at = 0;
    match (take_varint(value, &mut at), take_varint(value, &mut at)) {
        (Some(block), Some(index)) => Slot { block, index },
        _ => Slot::default(),
    }
}

/// The pairs of an entry's value (slices of it). A value that does not decode (none
/// this code writes) reads as no pairs.
pub fn decode_fields(value: &Bytes) -> Vec<(Bytes, Bytes)> {
    let mut at = 0;
    if take_varint(value, &mut at).and_then(|_| take_varint(value, &mut at)).is_none() {
        return Vec::new();
    }
    let Some(n) = take_u32(value, &mut at) else { return Vec::new() };
    let mut out = Vec::with_capacity(n.min(1024));
    for _ in 0..n {
        let Some(flen) = take_u32(value, &mut at) else { break };
        if at + flen > value.len() {
            break;
        }
        let field = value.slice(at..at + flen);
        at += flen;
        let Some(vlen) = take_u32(value, &mut at) else { break };
        if at + vlen > value.len() {
            break;
        }
        out.push((field, value.slice(at..at + vlen)));
        at += vlen;
    }
    out
}

/// One node's counters (its `N` element).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeCounters {
    pub last_id: StreamId,
    /// Entries this node added, less what XSETID ENTRIESADDED took off (may go below 0
    /// on one node while the sum stays right).
    pub entries_added: i64,
    pub max_deleted: StreamId,
}

impl NodeCounters {
    pub fn encode(&self) -> Bytes {
        let mut out = BytesMut::with_capacity(2 * ID_BYTES + 8);
        out.put_slice(&self.last_id.to_bytes());
        out.put_i64(self.entries_added);
        out.put_slice(&self.max_deleted.to_bytes());
        out.freeze()
    }

    pub fn decode(value: &[u8]) -> Option<NodeCounters> {
        let mut at = 0;
        let last_id = take_id(value, &mut at)?;
        let entries_added = take_u64(value, &mut at)? as i64;
        let max_deleted = take_id(value, &mut at)?;
        Some(NodeCounters { last_id, entries_added, max_deleted })
    }
}

/// A consumer group's own state (its `G` element).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct GroupState {
    pub last_delivered: StreamId,
    /// Redis's `entries_read`: -1 when unknown.
    pub entries_read: i64,
}

impl GroupState {
    pub fn encode(&self) -> Bytes {
        let mut out = BytesMut::with_capacity(ID_BYTES + 8);
        out.put_slice(&self.last_delivered.to_bytes());
        out.put_i64(self.entries_read);
        out.freeze()
    }

    pub fn decode(value: &[u8]) -> Option<GroupState> {
        let mut at = 0;
        Some(GroupState { last_delivered: take_id(value, &mut at)?, entries_read: take_u64(value, &mut at)? as i64 })
    }
}

/// A pending entry (its `P` element).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pending {
    pub delivered_ms: u64,
    pub deliveries: u64,
    pub consumer: Bytes,
}

impl Pending {
    pub fn encode(&self) -> Bytes {
        let mut out = BytesMut::with_capacity(16 + self.consumer.len());
        out.put_u64(self.delivered_ms);
        out.put_u64(self.deliveries);
        out.put_slice(&self.consumer);
        out.freeze()
    }

    pub fn decode(value: &[u8]) -> Option<Pending> {
        let mut at = 0;
        let delivered_ms = take_u64(value, &mut at)?;
        let deliveries = take_u64(value, &mut at)?;
        Some(Pending { delivered_ms, deliveries, consumer: Bytes::copy_from_slice(&value[at..]) })
    }
}

/// A consumer's seen time (its `C` element's value).
pub fn encode_seen(ms: u64) -> Bytes {
    Bytes::copy_from_slice(&ms.to_be_bytes())
}

pub fn decode_seen(value: &[u8]) -> u64 {
    value.get(..8).and_then(|b| b.try_into().ok()).map_or(0, u64::from_be_bytes)
}

/// A stream as commands read it: the converged elements of its part.
#[derive(Clone, Copy)]
pub struct StreamView<'a> {
    table: &'a ListTable,
}

/// Live elements from `from` on (`rev`: backward from it), with their names and values
/// borrowed (nothing is copied unless an element holds concurrent values), while `keep`
/// says so; stops at the first it refuses.
fn walk_live(table: &ListTable, from: &[u8], rev: bool, mut keep: impl FnMut(&[u8], &[u8]) -> bool) {
    let mut visit = |name: &[u8], element: ElementRef<'_>| match element {
        ElementRef::Raw(_, value) => keep(name, value),
        other => match other.read() {
            Some(value) => keep(name, &value.to_bytes()),
            None => true,
        },
    };
    if !rev {
        table.scan_live_from(from, visit);
        return;
    }
    for (name, element) in table.walk_at(from, rev, true) {
        if &name[..] <= from && !visit(&name, element) {
            break;
        }
    }
}

impl<'a> StreamView<'a> {
    pub fn of(elements: &'a Elements) -> Option<StreamView<'a>> {
        elements.list().map(|table| StreamView { table })
    }

    /// Every node's counters, summed as the stream's.
    pub fn counters(&self) -> NodeCounters {
        self.counters_and_own(None).0
    }

    /// [`StreamView::counters`], and `node`'s own counters read on the way (XADD needs
    /// both: one pass over the `N` elements).
    pub fn counters_and_own(&self, node: Option<NodeId>) -> (NodeCounters, NodeCounters) {
        let (mut all, mut own) = (NodeCounters::default(), NodeCounters::default());
        let own_name = node.map(node_name);
        walk_live(self.table, &[NODE], false, |name, value| {
            if name.first() != Some(&NODE) {
                return false;
            }
            if let Some(c) = NodeCounters::decode(value) {
                all.last_id = all.last_id.max(c.last_id);
                all.entries_added += c.entries_added;
                all.max_deleted = all.max_deleted.max(c.max_deleted);
                if own_name.is_some_and(|own_name| name == own_name) {
                    own = c;
                }
            }
            true
        });
        (all, own)
    }

    /// This node's own counters.
    pub fn node_counters(&self, node: NodeId) -> NodeCounters {
        self.table.get(&node_name(node)).and_then(|e| e.read()).and_then(|v| NodeCounters::decode(&v.to_bytes())).unwrap_or_default()
    }

    /// Entries from `lo` to `hi` inclusive, in id order (`rev`: from `hi` down), at
    /// most `count` (0: all), each with its raw value.
    pub fn range(&self, lo: StreamId, hi: StreamId, rev: bool, count: u64) -> Vec<(StreamId, Bytes)> {
        let mut out = Vec::new();
        if lo > hi {
            return out;
        }
        let start = if rev { entry_name(hi) } else { entry_name(lo) };
        walk_live(self.table, &start, rev, |name, value| {
            let Some(id) = (name.first() == Some(&ENTRY)).then(|| StreamId::from_bytes(&name[1..])).flatten() else {
                return false;
            };
            if (rev && id < lo) || (!rev && id > hi) {
                return false;
            }
            out.push((id, Bytes::copy_from_slice(value)));
            count == 0 || (out.len() as u64) < count
        });
        out
    }

    /// Whether the entry exists (nothing copied).
    pub fn has_entry(&self, id: StreamId) -> bool {
        self.table.get(&entry_name(id)).is_some_and(|e| e.exists())
    }

    pub fn entry(&self, id: StreamId) -> Option<Bytes> {
        self.table.get(&entry_name(id)).and_then(|e| e.read()).map(|v| v.to_bytes())
    }

    /// Entries' ids and slots from the head, while `keep` says so (for trims: no value
    /// is copied).
    pub fn head_slots(&self, mut keep: impl FnMut(StreamId, Slot) -> bool) {
        walk_live(self.table, &[ENTRY], false, |name, value| {
            let Some(id) = (name.first() == Some(&ENTRY)).then(|| StreamId::from_bytes(&name[1..])).flatten() else {
                return false;
            };
            keep(id, entry_slot(value))
        });
    }

    /// The last entry's slot (where XADD puts the next), without copying it.
    pub fn last_slot(&self) -> Option<Slot> {
        // Entries sort last: the stream's last live element is its last entry, if any.
        let (name, element) = self.table.last_live()?;
        if name.first() != Some(&ENTRY) {
            return None;
        }
        match element {
            ElementRef::Raw(_, value) => Some(entry_slot(value)),
            other => other.read().map(|value| entry_slot(&value.to_bytes())),
        }
    }

    pub fn first_entry(&self) -> Option<(StreamId, Bytes)> {
        self.range(StreamId::ZERO, StreamId::MAX, false, 1).pop()
    }

    pub fn last_entry(&self) -> Option<(StreamId, Bytes)> {
        self.range(StreamId::ZERO, StreamId::MAX, true, 1).pop()
    }

    /// Live elements that are not entries (they sort first).
    fn others(&self) -> usize {
        let mut n = 0;
        walk_live(self.table, &[], false, |name, _| {
            if name.first() == Some(&ENTRY) {
                return false;
            }
            n += 1;
            true
        });
        n
    }

    /// XLEN: live entries.
    pub fn len(&self, live_elements: usize) -> u64 {
        live_elements.saturating_sub(self.others()) as u64
    }

    /// Consumer groups in name order.
    pub fn groups(&self) -> Vec<(Bytes, GroupState)> {
        let mut out = Vec::new();
        walk_live(self.table, &[GROUP], false, |name, value| {
            if name.first() != Some(&GROUP) {
                return false;
            }
            if let Some(state) = GroupState::decode(value) {
                out.push((Bytes::copy_from_slice(&name[1..]), state));
            }
            true
        });
        out
    }

    pub fn group(&self, group: &[u8]) -> Option<GroupState> {
        self.table.get(&group_name(group)).and_then(|e| e.read()).and_then(|v| GroupState::decode(&v.to_bytes()))
    }

    /// A group's consumers in name order, with their seen times.
    pub fn consumers(&self, group: &[u8]) -> Vec<(Bytes, u64)> {
        let scope = group_scope(CONSUMER, group);
        let mut out = Vec::new();
        walk_live(self.table, &scope, false, |name, value| {
            let Some(consumer) = name.strip_prefix(&scope[..]) else { return false };
            out.push((Bytes::copy_from_slice(consumer), decode_seen(value)));
            true
        });
        out
    }

    pub fn consumer(&self, group: &[u8], consumer: &[u8]) -> Option<u64> {
        self.table.get(&consumer_name(group, consumer)).and_then(|e| e.read()).map(|v| decode_seen(&v.to_bytes()))
    }

    /// A group's pending entries from `lo` to `hi`, in id order, while `keep` says so.
    pub fn pending(&self, group: &[u8], lo: StreamId, hi: StreamId, mut keep: impl FnMut(StreamId, Pending) -> bool) {
        let scope = group_scope(PENDING, group);
        let start = pending_name(group, lo);
        walk_live(self.table, &start, false, |name, value| {
            let Some(id) = name.strip_prefix(&scope[..]).and_then(StreamId::from_bytes) else { return false };
            if id > hi {
                return false;
            }
            match Pending::decode(value) {
                Some(p) => keep(id, p),
                None => true,
            }
        });
    }

    pub fn pending_entry(&self, group: &[u8], id: StreamId) -> Option<Pending> {
        self.table.get(&pending_name(group, id)).and_then(|e| e.read()).and_then(|v| Pending::decode(&v.to_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_decode_to_what_was_encoded() {
        let fields = vec![(Bytes::from("a"), Bytes::from("1")), (Bytes::new(), Bytes::from("xyz"))];
        for n in [0, 127, 128, u64::MAX] {
            let slot = Slot { block: n, index: n / 2 };
            let value = encode_entry(slot, &fields);
            assert_eq!((entry_slot(&value), decode_fields(&value)), (slot, fields.clone()));
        }
        assert_eq!(Slot::after(None, 100), Slot::default());
        assert_eq!(Slot::after(Some(Slot { block: 3, index: 98 }), 100), Slot { block: 3, index: 99 });
        assert_eq!(Slot::after(Some(Slot { block: 3, index: 99 }), 100), Slot { block: 4, index: 0 });
        assert_eq!(Slot::after(Some(Slot { block: 3, index: 99 }), 0), Slot { block: 3, index: 100 });
        let counters = NodeCounters { last_id: StreamId::new(5, 1), entries_added: -3, max_deleted: StreamId::new(2, 0) };
        assert_eq!(NodeCounters::decode(&counters.encode()), Some(counters));
        let pending = Pending { delivered_ms: 9, deliveries: 2, consumer: Bytes::from("bob") };
        assert_eq!(Pending::decode(&pending.encode()), Some(pending));
        let group = GroupState { last_delivered: StreamId::new(1, 2), entries_read: -1 };
        assert_eq!(GroupState::decode(&group.encode()), Some(group));
    }

    #[test]
    fn entries_sort_after_every_other_kind_and_in_id_order() {
        let entry = entry_name(StreamId::ZERO);
        for other in [&node_name(u16::MAX)[..], &group_name(b"\xff\xff"), &consumer_name(b"g", b"c"), &pending_name(b"g", StreamId::MAX)] {
            assert!(other < &entry[..]);
        }
        assert!(pending_name(b"g", StreamId::MAX).as_ref() < group_scope(PENDING, b"h").as_slice());
    }
}
