//! Streams (XADD family, consumer groups), Redis 7.0-compatible, over add-wins elements
//! of a stream part (`store.rs` names them). DESIGN §5 has no stream row yet; what
//! replicas converge to is in docs/streams.md:
//! - an entry is an element named by its id: entries added anywhere are kept
//!   everywhere, in id order; XDEL and trims remove what they saw;
//! - ids `*` generates are unique across regions once the node has peers: the
//!   sequence's low 16 bits are the node id (as Redis Enterprise Active-Active puts the
//!   region in the sequence). On a lone node ids are Redis's, byte for byte;
//! - consumer groups, consumers and pending entries are elements too: they replicate
//!   and persist, and concurrent deliveries in two regions are at-least-once.
//!
//! Module layout: ids are `command::stream::id`'s (parsed and ordered there), [`store`]
//! maps a stream onto elements and reads it, [`groups`] runs the consumer-group
//! commands, [`info`] XINFO; this file runs the rest and owns id generation and trims.
//!
//! Part of the deterministic core: no clock (times come in the write context), no I/O.
//! Must never write anything but its own key's stream part.

pub mod dumped;
pub mod groups;
pub mod info;
pub mod store;

use bytes::Bytes;

use crate::command::errors;
use crate::command::stream::id::{AddId, StreamId};
use crate::command::stream::{ReadFrom, StreamCommand, Trim, TrimTo};
use crate::engine::kv::collection_writes::Part;
use crate::engine::kv::elements::Elements;
use crate::engine::kv::value::SetTtl;
use crate::engine::kv::{KeyKind, KvEngine, StrVal, WriteCtx, key_hash};
use crate::notify::Class;
use crate::protocol::Frame;
use store::{NodeCounters, StreamView};

/// With peers, a generated id's sequence is `k << NODE_BITS | node`.
const NODE_BITS: u32 = 16;

/// What a write does to one element: set it to a value, or remove it.
pub type ElementWrites = Vec<(Bytes, Option<Bytes>)>;

fn wrong_type() -> Frame {
    errors::error(errors::WRONG_TYPE)
}

/// The stream at `key`: `Ok(None)` when it does not exist, WRONGTYPE for another type.
pub fn stream_of<'a>(kv: &'a mut KvEngine, key: &[u8], now_ms: u64) -> Result<Option<&'a Elements>, Frame> {
    match kv.live(key, key_hash(key), now_ms) {
        None => Ok(None),
        Some(state) if state.kind() == Some(KeyKind::Stream) => Ok(state.part(Part::Stream)),
        Some(_) => Err(wrong_type()),
    }
}

/// [`stream_of`] as a view with its live element count.
fn view_of<'a>(kv: &'a mut KvEngine, key: &[u8], now_ms: u64) -> Result<Option<(StreamView<'a>, usize)>, Frame> {
    Ok(stream_of(kv, key, now_ms)?.and_then(|e| StreamView::of(e).map(|v| (v, e.len()))))
}

/// Apply `writes` to `key`'s stream part at one dot (creating the key if absent).
pub fn write(kv: &mut KvEngine, ctx: &mut WriteCtx, key: Bytes, writes: ElementWrites) {
    if !writes.is_empty() {
        let dot = ctx.next_dot();
        write_at(kv, ctx, dot, key, writes);
    }
}

/// [`write`] at a dot the caller took (XADD names its entry after it).
fn write_at(kv: &mut KvEngine, ctx: &mut WriteCtx, dot: crate::crdt::Dot, key: Bytes, writes: ElementWrites) {
    let (names, values): (Vec<Bytes>, Vec<Option<Bytes>>) = writes.into_iter().unzip();
    kv.write_elements_at(ctx, dot, key, Part::Stream, &names, false, |i, dot, _, element| match &values[i] {
        Some(value) => element.set(dot, StrVal::raw(value), SetTtl::Keep),
        None => element.delete(dot),
    });
}

/// An entry as replies show it: `[id, [field, value, ...]]`.
pub fn entry_frame(id: StreamId, value: &Bytes) -> Frame {
    let fields = store::decode_fields(value);
    let mut flat = Vec::with_capacity(fields.len() * 2);
    for (f, v) in fields {
        flat.push(Frame::Bulk(f));
        flat.push(Frame::Bulk(v));
    }
    Frame::Array(vec![id.to_frame(), Frame::Array(flat)])
}

pub fn entries_frame(entries: &[(StreamId, Bytes)]) -> Frame {
    Frame::Array(entries.iter().map(|(id, v)| entry_frame(*id, v)).collect())
}

/// Execute a stream command on the key it names.
pub fn command(kv: &mut KvEngine, ctx: &mut WriteCtx, cmd: StreamCommand) -> Frame {
    let now_ms = ctx.now_ms;
    let node_max = kv.encoding.stream_node_max_entries;
    let result = match cmd {
        StreamCommand::Add { key, id, fields, no_mkstream, trim } => add(kv, ctx, key, id, &fields, no_mkstream, trim),
        StreamCommand::Len(key) => view_of(kv, &key, now_ms).map(|s| Frame::Integer(s.map_or(0, |(v, n)| v.len(n)) as i64)),
        StreamCommand::Range { key, start, end, empty, count, rev } => view_of(kv, &key, now_ms).map(|s| match (s, count) {
            (None, _) => Frame::Array(Vec::new()),
            (Some(_), Some(0)) => Frame::NullArray,
            (Some(_), _) if empty => Frame::Array(Vec::new()),
            (Some((view, _)), count) => entries_frame(&view.range(start, end, rev, count.unwrap_or(0))),
        }),
        StreamCommand::Del { key, ids } => del(kv, ctx, key, ids),
        StreamCommand::Trim { key, trim } => {
            match view_of(kv, &key, now_ms).map(|s| s.map(|(view, live)| trim_writes(view, live, trim, node_max))) {
                Err(e) => Err(e),
                Ok(None) => Ok(Frame::Integer(0)),
                Ok(Some(writes)) => {
                    let n = writes.len();
                    write(kv, ctx, key.clone(), writes);
                    if n > 0 {
                        kv.notify.raise(Class::Stream, "xtrim", &key);
                    }
                    Ok(Frame::Integer(n as i64))
                }
            }
        }
        StreamCommand::SetId { key, last, entries_added, max_deleted } => set_id(kv, ctx, key, last, entries_added, max_deleted),
        StreamCommand::Read { key, from, count } => view_of(kv, &key, now_ms).map(|s| read(s.map(|(v, _)| v), key, from, count)),
        StreamCommand::LastId(key) => view_of(kv, &key, now_ms).map(|s| s.map_or(StreamId::ZERO, |(v, _)| v.counters().last_id).to_frame()),
        StreamCommand::Info { key, of } => info::info(kv, key, of, now_ms),
        other => groups::command(kv, ctx, other),
    };
    result.unwrap_or_else(|error| error)
}

/// The sequence `*` generates after `after` (`None`: the first of a millisecond):
/// Redis's next number on a lone node, the next one that carries `node` with peers.
fn next_seq(after: Option<u64>, node: u16, regions: bool) -> Option<u64> {
    if !regions {
        return after.map_or(Some(0), |s| s.checked_add(1));
    }
    let low = u64::from(node);
    let step = 1u64 << NODE_BITS;
    match after {
        None => Some(low),
        Some(s) => {
            let base = (s >> NODE_BITS) << NODE_BITS;
            let candidate = base | low;
            if candidate > s { Some(candidate) } else { candidate.checked_add(step) }
        }
    }
}

/// The id XADD adds at, or its error (Redis's `streamAppendItem` rules).
fn new_id(last: StreamId, asked: AddId, now_ms: u64, node: u16, regions: bool) -> Result<StreamId, Frame> {
    let too_small = || Frame::static_error("ERR The ID specified in XADD is equal or smaller than the target stream top item");
    let id = match asked {
        AddId::Explicit(id) => id,
        AddId::AutoSeq(ms) => {
            let after = (ms == last.ms).then_some(last.seq);
            match next_seq(after, node, regions) {
                Some(seq) => StreamId::new(ms, seq),
                // The millisecond's sequences are used up (Redis's answer).
                None => return Err(Frame::static_error("ERR Elements are too large to be stored")),
            }
        }
        AddId::Auto => {
            let ms = now_ms.max(last.ms);
            let after = (ms == last.ms).then_some(last.seq);
            match next_seq(after, node, regions) {
                Some(seq) => StreamId::new(ms, seq),
                None => {
                    let ms = ms.checked_add(1).ok_or_else(too_small)?;
                    StreamId::new(ms, next_seq(None, node, regions).unwrap_or(0))
                }
            }
        }
    };
    if id <= last {
        return Err(too_small());
    }
    Ok(id)
}

fn add(
    kv: &mut KvEngine,
    ctx: &mut WriteCtx,
    key: Bytes,
    asked: AddId,
    fields: &[(Bytes, Bytes)],
    no_mkstream: bool,
    trim: Option<Trim>,
) -> Result<Frame, Frame> {
    let regions = kv.keep_tombstones && !crate::bugs::active(crate::bugs::Bug::StreamIdsIgnoreNode);
    let node_max = kv.encoding.stream_node_max_entries;
    let (counters, own, tail) = match view_of(kv, &key, ctx.now_ms)? {
        None if no_mkstream => return Ok(Frame::Null),
        None => (NodeCounters::default(), NodeCounters::default(), None),
        Some((view, _)) => {
            let (counters, own) = view.counters_and_own(Some(ctx.node));
            (counters, own, view.last_slot())
        }
    };
    if counters.last_id == StreamId::MAX {
        return Err(Frame::static_error("ERR The stream has exhausted the last possible ID, unable to add more items"));
    }
    // With peers, `*` takes its milliseconds from the write's own stamp rather than the
    // wall clock: a restarted node's stamps start above every stamp that left it
    // (`replication::reservation`), so it never generates again an id that another
    // region may hold though this node lost it in the crash. (A stamp is never behind
    // the wall clock, nor behind an id this node has seen: ids follow stamps.)
    let dot = ctx.next_dot();
    let clock_ms = if regions { dot.hlc.physical_ms() } else { ctx.now_ms };
    let id = new_id(counters.last_id, asked, clock_ms, ctx.node, regions)?;
    let own = NodeCounters { last_id: id, entries_added: own.entries_added + 1, max_deleted: own.max_deleted };
    let (entry, value) = (store::entry_name(id), store::encode_entry(store::Slot::after(tail, node_max as u64), fields));
    let (counters_name, counters) = (store::node_name(ctx.node), own.encode());
    // Onto a stream that exists, the entry goes past its last chunk directly.
    if !kv.append_and_set(ctx, dot, &key, Part::Stream, (&entry, &value), (&counters_name, &counters)) {
        let writes = vec![(Bytes::copy_from_slice(&entry), Some(value)), (Bytes::copy_from_slice(&counters_name), Some(counters))];
        write_at(kv, ctx, dot, key.clone(), writes);
    }
    kv.notify.raise(Class::Stream, "xadd", &key);
    if let Some(trim) = trim {
        let writes = match view_of(kv, &key, ctx.now_ms)? {
            Some((view, live)) => trim_writes(view, live, trim, node_max),
            None => Vec::new(),
        };
        if !writes.is_empty() {
            write(kv, ctx, key.clone(), writes);
            kv.notify.raise(Class::Stream, "xtrim", &key);
        }
    }
    Ok(id.to_frame())
}

/// The removals a trim makes. Exact trims remove entry by entry. `~` removes only
/// whole blocks, as Redis removes only whole radix-tree nodes: a block is the entries
/// that share a [`store::Slot`]'s block, which are Redis's nodes (a block takes
/// `stream-node-max-entries` entries, and a new one starts once its last entry is gone,
/// as Redis frees an emptied node; Redis also closes a node at `stream-node-max-bytes`,
/// which blocks here do not count). At most `limit` entries go (whole blocks; 0 is no
/// limit), and a block goes only if what is left still holds `MAXLEN` entries, or if
/// every entry in it is below `MINID`.
fn trim_writes(view: StreamView<'_>, live: usize, trim: Trim, node_max: usize) -> ElementWrites {
    let len = view.len(live);
    let limit = match trim.limit {
        u64::MAX => match (node_max as u64).saturating_mul(100) {
            0 => 10_000,
            n => n.min(1_000_000),
        },
        n => n,
    };
    let remove: Vec<StreamId> = match (trim.to, trim.approx) {
        (TrimTo::MaxLen(max), false) => {
            let excess = len.saturating_sub(max) as usize;
            let mut remove = Vec::with_capacity(excess.min(1 << 16));
            if excess > 0 {
                view.head_slots(|id, _| {
                    remove.push(id);
                    remove.len() < excess
                });
            }
            remove
        }
        (TrimTo::MinId(min), false) => {
            let mut remove = Vec::new();
            view.head_slots(|id, _| {
                let below = id < min;
                if below {
                    remove.push(id);
                }
                below
            });
            remove
        }
        (_, true) if node_max == 0 => Vec::new(),
        (TrimTo::MaxLen(max), true) => {
            // Redis reads a node's entry count from its header; here a block's count is
            // bounded by its slots (the tail block's by the last entry's slot), which is
            // exact unless XDEL left holes in it (then fewer entries go than in Redis:
            // `~` keeps at least `MAXLEN` either way). Only the entries that go and the
            // first one that stays are read.
            let per_block = node_max as u64;
            let tail = view.last_slot();
            let mut remove = Vec::new();
            let mut left = len;
            let mut current = None;
            view.head_slots(|id, slot| {
                if current != Some(slot.block) {
                    let bound = match tail {
                        Some(t) if t.block == slot.block => t.index.saturating_sub(slot.index) + 1,
                        _ => per_block.saturating_sub(slot.index).max(1),
                    };
                    if (limit > 0 && remove.len() as u64 + bound > limit) || left < max.saturating_add(bound) {
                        return false;
                    }
                    current = Some(slot.block);
                }
                remove.push(id);
                left -= 1;
                true
            });
            remove
        }
        (TrimTo::MinId(min), true) => {
            // A block goes if every entry in it is below MINID: read whole blocks, at
            // most `limit` entries' worth and the block after.
            let block = node_max as u64;
            let limit_or_all = if limit == 0 { u64::MAX } else { limit };
            let look = limit_or_all.saturating_add(block);
            let mut head = Vec::new();
            let mut stopped = false;
            view.head_slots(|id, slot| {
                head.push((id, slot));
                stopped = (head.len() as u64) >= look || id >= min;
                !stopped
            });
            let mut remove = Vec::new();
            let mut at = 0;
            while at < head.len() {
                let node = head[at].1.block;
                let end = at + head[at..].iter().take_while(|(_, slot)| slot.block == node).count();
                let count = (end - at) as u64;
                if limit > 0 && remove.len() as u64 + count > limit {
                    break;
                }
                // The block is whole only if the walk went past its end (or read all).
                if !(head[end - 1].0 < min && (end < head.len() || !stopped)) {
                    break;
                }
                remove.extend(head[at..end].iter().map(|(id, _)| *id));
                at = end;
            }
            remove
        }
    };
    remove.into_iter().map(|id| (Bytes::copy_from_slice(&store::entry_name(id)), None)).collect()
}

fn del(kv: &mut KvEngine, ctx: &mut WriteCtx, key: Bytes, ids: Result<Vec<StreamId>, Frame>) -> Result<Frame, Frame> {
    let Some((view, _)) = view_of(kv, &key, ctx.now_ms)? else { return Ok(Frame::Integer(0)) };
    let ids = ids?;
    let counters = view.counters();
    let mut own = view.node_counters(ctx.node);
    let mut writes: ElementWrites = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for &id in &ids {
        if seen.insert(id) && view.has_entry(id) {
            writes.push((Bytes::copy_from_slice(&store::entry_name(id)), None));
            if id > counters.max_deleted && id > own.max_deleted {
                own.max_deleted = id;
            }
        }
    }
    let deleted = writes.len();
    if deleted > 0 {
        if own.max_deleted > counters.max_deleted {
            own.last_id = own.last_id.max(counters.last_id);
            writes.push((Bytes::copy_from_slice(&store::node_name(ctx.node)), Some(own.encode())));
        }
        write(kv, ctx, key.clone(), writes);
        kv.notify.raise(Class::Stream, "xdel", &key);
    }
    Ok(Frame::Integer(deleted as i64))
}

fn set_id(
    kv: &mut KvEngine,
    ctx: &mut WriteCtx,
    key: Bytes,
    last: StreamId,
    entries_added: Option<i64>,
    max_deleted: Option<StreamId>,
) -> Result<Frame, Frame> {
    let Some((view, live)) = view_of(kv, &key, ctx.now_ms)? else { return Err(errors::error("ERR no such key")) };
    let len = view.len(live);
    if len > 0 {
        if view.last_entry().is_some_and(|(top, _)| last < top) {
            return Err(Frame::static_error("ERR The ID specified in XSETID is smaller than the target stream top item"));
        }
        if entries_added.is_some_and(|n| (n as u64) < len) {
            return Err(Frame::static_error("ERR The entries_added specified in XSETID is smaller than the target stream length"));
        }
    }
    let all = view.counters();
    let mut own = view.node_counters(ctx.node);
    own.last_id = last;
    if let Some(n) = entries_added {
        // The stream's count is the sum over nodes: this node's share makes it `n`.
        own.entries_added = n - (all.entries_added - own.entries_added);
    }
    if let Some(max) = max_deleted.filter(|m| !m.is_zero()) {
        own.max_deleted = max;
    }
    write(kv, ctx, key.clone(), vec![(Bytes::copy_from_slice(&store::node_name(ctx.node)), Some(own.encode()))]);
    kv.notify.raise(Class::Stream, "xsetid", &key);
    Ok(Frame::ok())
}

/// One key's part of XREAD: `[key, entries]` when something is after `from`, else
/// nothing (`Frame::Null`; the caller leaves the key out).
fn read(view: Option<StreamView<'_>>, key: Bytes, from: ReadFrom, count: u64) -> Frame {
    let after = match from {
        ReadFrom::Invalid(error) => return error,
        _ if view.is_none() => return Frame::Null,
        ReadFrom::After(id) => id,
        // `$` (not blocking) and `>` (never here: the parser refuses it) read nothing.
        ReadFrom::Last | ReadFrom::New => return Frame::Null,
    };
    let Some(view) = view else { return Frame::Null };
    match view.last_entry() {
        Some((top, _)) if top > after => {}
        _ => return Frame::Null,
    }
    let Some(start) = after.next() else { return Frame::Null };
    Frame::Array(vec![Frame::Bulk(key), entries_frame(&view.range(start, StreamId::MAX, false, count))])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_ids_follow_redis_alone_and_carry_the_node_with_peers() {
        let last = StreamId::new(10, 4);
        assert_eq!(new_id(last, AddId::Auto, 5, 3, false), Ok(StreamId::new(10, 5)));
        assert_eq!(new_id(last, AddId::Auto, 11, 3, false), Ok(StreamId::new(11, 0)));
        assert_eq!(new_id(last, AddId::AutoSeq(10), 0, 3, false), Ok(StreamId::new(10, 5)));
        assert!(new_id(last, AddId::AutoSeq(9), 0, 3, false).is_err());
        assert!(new_id(last, AddId::Explicit(last), 0, 3, false).is_err());
        assert_eq!(new_id(StreamId::ZERO, AddId::AutoSeq(0), 0, 3, false), Ok(StreamId::new(0, 1)), "0-0 is never an id");
        assert_eq!(new_id(StreamId::new(10, u64::MAX), AddId::Auto, 0, 3, false), Ok(StreamId::new(11, 0)));
        // With peers: node 3's ids in one millisecond are 3, 65539, ...; never another's.
        assert_eq!(new_id(last, AddId::Auto, 11, 3, true), Ok(StreamId::new(11, 3)));
        assert_eq!(new_id(last, AddId::Auto, 5, 3, true), Ok(StreamId::new(10, 65_539)));
        assert_eq!(new_id(StreamId::new(10, 3), AddId::Auto, 10, 3, true), Ok(StreamId::new(10, 65_539)));
        assert_eq!(new_id(StreamId::new(10, 3), AddId::Auto, 10, 4, true), Ok(StreamId::new(10, 4)));
    }
}
