//! A stream's elements (`store.rs` names them) to and from the neutral
//! [`DumpedStream`] a DUMP payload carries (`command::dump` encodes it).
//!
//! Both ways are whole-value copies: DUMP reads a snapshot's live elements, RESTORE
//! builds the elements of a new stream that it writes as one value
//! (`KvEngine::restore`). The stream's counters, summed over every node's `N` element
//! on the way out, come back as one `N` element of the restoring node: a restored
//! stream is a local write, as any RESTORE. Pure: no clock, no keyspace.

use std::collections::BTreeMap;

use bytes::Bytes;

use super::groups::Shape;
use super::store::{
    self, CONSUMER, ENTRY, GROUP, GroupState, NODE, NodeCounters, PENDING, Pending, Slot, consumer_name, decode_fields, entry_slot,
    group_name, pending_name,
};
use crate::command::dump::{DumpedEntry, DumpedGroup, DumpedPending, DumpedStream};
use crate::command::stream::id::{ID_BYTES, StreamId};
use crate::crdt::NodeId;
use crate::engine::kv::StrVal;

/// A `C` or `P` name's group and what follows it (`store::group_scope`).
fn scoped(name: &[u8]) -> Option<(&[u8], &[u8])> {
    let len = u32::from_be_bytes(name.get(1..5)?.try_into().ok()?) as usize;
    let group = name.get(5..5usize.checked_add(len)?)?;
    Some((group, &name[5 + len..]))
}

/// A group being gathered: its state once its `G` element is read, and the rest.
type Gathered = BTreeMap<Bytes, (bool, DumpedGroup)>;

/// The group named `name`, added (empty) if a consumer or pending entry names it
/// before its `G` element.
fn group_mut<'a>(groups: &'a mut Gathered, name: &[u8]) -> &'a mut (bool, DumpedGroup) {
    if !groups.contains_key(name) {
        let name = Bytes::copy_from_slice(name);
        let group = DumpedGroup {
            name: name.clone(),
            last_delivered: StreamId::ZERO,
            entries_read: Some(-1),
            pending: Vec::new(),
            consumers: Vec::new(),
        };
        groups.insert(name, (false, group));
    }
    groups.get_mut(name).expect("inserted above")
}

/// DUMP: a stream's live elements (any order) as a payload's value.
pub fn dumped_of(elements: &[(Bytes, StrVal)]) -> DumpedStream {
    let mut counters = NodeCounters::default();
    let mut entries = Vec::new();
    // By name; a group without its `G` element (a concurrent XGROUP DESTROY removed
    // it, not the consumers and pending entries it saw) is not the stream's any more.
    let mut groups = Gathered::new();
    for (name, value) in elements {
        let value = value.to_bytes();
        match name.first().copied() {
            Some(NODE) => {
                if let Some(c) = NodeCounters::decode(&value) {
                    counters.last_id = counters.last_id.max(c.last_id);
                    counters.entries_added += c.entries_added;
                    counters.max_deleted = counters.max_deleted.max(c.max_deleted);
                }
            }
            Some(ENTRY) => {
                if let Some(id) = StreamId::from_bytes(&name[1..]) {
                    let Slot { block, index } = entry_slot(&value);
                    entries.push(DumpedEntry { id, node: block, index, fields: decode_fields(&value) });
                }
            }
            Some(GROUP) => {
                if let Some(state) = GroupState::decode(&value) {
                    let (named, group) = group_mut(&mut groups, &name[1..]);
                    *named = true;
                    (group.last_delivered, group.entries_read) = (state.last_delivered, Some(state.entries_read));
                }
            }
            Some(CONSUMER) => {
                if let Some((group, consumer)) = scoped(name) {
                    group_mut(&mut groups, group).1.consumers.push((Bytes::copy_from_slice(consumer), store::decode_seen(&value)));
                }
            }
            Some(PENDING) => {
                let id = scoped(name).and_then(|(group, id)| Some((group, StreamId::from_bytes(id).filter(|_| id.len() == ID_BYTES)?)));
                if let (Some((group, id)), Some(p)) = (id, Pending::decode(&value)) {
                    let pending = DumpedPending { id, delivered_ms: p.delivered_ms, deliveries: p.deliveries, consumer: p.consumer };
                    group_mut(&mut groups, group).1.pending.push(pending);
                }
            }
            _ => {}
        }
    }
    entries.sort_by_key(|e| e.id);
    let mut groups: Vec<DumpedGroup> = groups.into_values().filter_map(|(named, group)| named.then_some(group)).collect();
    for group in &mut groups {
        group.pending.sort_by_key(|p| p.id);
        group.consumers.sort_by(|a, b| a.0.cmp(&b.0));
        // Redis has no pending entry without its consumer: one whose `C` a concurrent
        // XGROUP DELCONSUMER removed is written with its consumer back, seen when it
        // was delivered.
        for p in &group.pending {
            if let Err(at) = group.consumers.binary_search_by(|(c, _)| c.as_ref().cmp(&p.consumer)) {
                group.consumers.insert(at, (p.consumer.clone(), p.delivered_ms));
            }
        }
    }
    DumpedStream {
        entries,
        last_id: counters.last_id,
        max_deleted: counters.max_deleted,
        entries_added: counters.entries_added.max(0) as u64,
        groups,
    }
}

/// RESTORE: the elements of the stream `stream` describes, its counters `node`'s.
pub fn elements_of(stream: DumpedStream, node: NodeId) -> Vec<(Bytes, StrVal)> {
    let first = stream.entries.first().map_or(StreamId::ZERO, |e| e.id);
    let counters = NodeCounters { last_id: stream.last_id, entries_added: stream.entries_added as i64, max_deleted: stream.max_deleted };
    // A payload from before Redis 7.0 has no read counters: estimated as Redis does.
    let shape = Shape { len: stream.entries.len() as u64, first, counters };
    let mut out = Vec::with_capacity(1 + stream.entries.len());
    out.push((Bytes::copy_from_slice(&store::node_name(node)), StrVal::from_bytes(counters.encode())));
    for group in stream.groups {
        let entries_read = group.entries_read.unwrap_or_else(|| shape.estimate_read(group.last_delivered).unwrap_or(-1));
        let state = GroupState { last_delivered: group.last_delivered, entries_read };
        out.push((group_name(&group.name), StrVal::from_bytes(state.encode())));
        for (consumer, seen) in &group.consumers {
            out.push((consumer_name(&group.name, consumer), StrVal::from_bytes(store::encode_seen(*seen))));
        }
        for p in group.pending {
            let pending = Pending { delivered_ms: p.delivered_ms, deliveries: p.deliveries, consumer: p.consumer };
            out.push((pending_name(&group.name, p.id), StrVal::from_bytes(pending.encode())));
        }
    }
    for entry in stream.entries {
        let slot = Slot { block: entry.node, index: entry.index };
        out.push((Bytes::copy_from_slice(&store::entry_name(entry.id)), StrVal::from_bytes(store::encode_entry(slot, &entry.fields))));
    }
    out
}
