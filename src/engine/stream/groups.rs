//! Consumer groups: XGROUP, XREADGROUP (one key's part), XACK, XPENDING, XCLAIM and
//! XAUTOCLAIM, with Redis 7.0's replies, errors and read counters (`entries-read` and
//! `lag`). A group, a consumer and a pending entry are elements of the stream
//! (`store.rs`), written as the command runs.
//!
//! Pure: times come in the write context.

use std::collections::BTreeMap;

use bytes::Bytes;

use super::store::{self, GroupState, NodeCounters, Pending, StreamView};
use super::{ElementWrites, entry_frame, view_of, write};
use crate::command::stream::id::StreamId;
use crate::command::stream::{ClaimOptions, GroupOp, PendingRange, ReadFrom, StreamCommand};
use crate::engine::kv::{KvEngine, WriteCtx};
use crate::notify::Class;
use crate::protocol::Frame;

fn lossy(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(bytes)
}

fn no_group(key: &[u8], group: &[u8]) -> Frame {
    Frame::error(format!("NOGROUP No such key '{}' or consumer group '{}'", lossy(key), lossy(group)))
}

/// The stream at `key` and its group `group`, or Redis's NOGROUP error (XPENDING,
/// XCLAIM, XAUTOCLAIM); WRONGTYPE for another type.
fn group_of<'a>(kv: &'a mut KvEngine, key: &[u8], group: &[u8], now_ms: u64) -> Result<(StreamView<'a>, GroupState), Frame> {
    let Some((view, _)) = view_of(kv, key, now_ms)? else { return Err(no_group(key, group)) };
    let state = view.group(group).ok_or_else(|| no_group(key, group))?;
    Ok((view, state))
}

/// What the read counters need to know of a stream (Redis's `stream` fields).
pub struct Shape {
    pub len: u64,
    /// The first entry's id, 0-0 when empty.
    pub first: StreamId,
    pub counters: NodeCounters,
}

impl Shape {
    pub fn of(view: StreamView<'_>, live: usize) -> Shape {
        let len = view.len(live);
        let first = if len == 0 { StreamId::ZERO } else { view.first_entry().map_or(StreamId::ZERO, |(id, _)| id) };
        Shape { len, first, counters: view.counters() }
    }

    /// Redis's `streamRangeHasTombstones(start, +)`.
    fn has_tombstones_from(&self, start: StreamId) -> bool {
        let max_deleted = self.counters.max_deleted;
        if self.len == 0 || max_deleted.is_zero() || self.first > max_deleted {
            return false;
        }
        start <= max_deleted
    }

    /// Redis's `streamEstimateDistanceFromFirstEverEntry`: `None` when unknown.
    pub fn estimate_read(&self, id: StreamId) -> Option<i64> {
        let (added, last) = (self.counters.entries_added, self.counters.last_id);
        if added == 0 {
            return Some(0);
        }
        if self.len == 0 && id <= last {
            return Some(added);
        }
        if id == last {
            return Some(added);
        }
        if id > last {
            return None;
        }
        let max_deleted = self.counters.max_deleted;
        if max_deleted.is_zero() || max_deleted < self.first {
            if id < self.first {
                return Some(added - self.len as i64);
            }
            if id == self.first {
                return Some(added - self.len as i64 + 1);
            }
        }
        None
    }

    /// A group's lag (Redis's `streamReplyWithCGLag`): `None` when unknown.
    pub fn lag(&self, group: &GroupState) -> Option<i64> {
        let added = self.counters.entries_added;
        if added == 0 {
            return Some(0);
        }
        if group.entries_read != -1 && !self.has_tombstones_from(group.last_delivered) {
            return Some(added - group.entries_read);
        }
        self.estimate_read(group.last_delivered).map(|read| added - read)
    }

    /// The group state after delivering `id` (Redis's update in `streamReplyWithRange`).
    fn delivered(&self, mut group: GroupState, id: StreamId) -> GroupState {
        if id > group.last_delivered {
            if group.entries_read != -1 && !self.has_tombstones_from(id) {
                group.entries_read += 1;
            } else if self.counters.entries_added != 0 {
                group.entries_read = self.estimate_read(id).unwrap_or(-1);
            }
            group.last_delivered = id;
        }
        group
    }
}

fn name(bytes: &[u8]) -> Bytes {
    Bytes::copy_from_slice(bytes)
}

/// Writes gathered by one command: one per element name, the last one kept.
#[derive(Default)]
struct Writes(BTreeMap<Bytes, Option<Bytes>>);

impl Writes {
    fn set(&mut self, name: Bytes, value: Bytes) {
        self.0.insert(name, Some(value));
    }

    fn remove(&mut self, name: Bytes) {
        self.0.insert(name, None);
    }

    fn into_writes(self) -> ElementWrites {
        self.0.into_iter().collect()
    }
}

pub fn command(kv: &mut KvEngine, ctx: &mut WriteCtx, cmd: StreamCommand) -> Result<Frame, Frame> {
    match cmd {
        StreamCommand::Group { key, group, op } => group_op(kv, ctx, key, group, op),
        StreamCommand::ReadGroup { key, group, consumer, from, count, noack } => {
            read_group(kv, ctx, key, group, consumer, from, count, noack)
        }
        StreamCommand::Ack { key, group, ids } => ack(kv, ctx, key, group, ids),
        StreamCommand::Pending { key, group, range } => pending(kv, ctx.now_ms, key, group, range),
        StreamCommand::Claim { key, group, consumer, min_idle, ids, options } => {
            claim(kv, ctx, key, group, consumer, min_idle, &ids, options)
        }
        StreamCommand::AutoClaim { key, group, consumer, min_idle, start, count, just_id } => {
            auto_claim(kv, ctx, key, group, consumer, min_idle, start, count, just_id)
        }
        other => Err(Frame::error(format!("ERR internal: {other:?} is not a consumer group command"))),
    }
}

fn group_op(kv: &mut KvEngine, ctx: &mut WriteCtx, key: Bytes, group: Bytes, op: GroupOp) -> Result<Frame, Frame> {
    let now_ms = ctx.now_ms;
    let node = ctx.node;
    let mkstream = matches!(op, GroupOp::Create { mkstream: true, .. });
    let found = view_of(kv, &key, now_ms)?;
    let (exists, last_id, group_state) = match &found {
        Some((view, _)) => (true, view.counters().last_id, view.group(&group)),
        None => (false, StreamId::ZERO, None),
    };
    if !exists && !mkstream {
        return Err(Frame::static_error(
            "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.",
        ));
    }
    let needs_group = matches!(op, GroupOp::SetId { .. } | GroupOp::CreateConsumer(_) | GroupOp::DelConsumer(_));
    if needs_group && group_state.is_none() {
        return Err(Frame::error(format!("NOGROUP No such consumer group '{}' for key name '{}'", lossy(&group), lossy(&key))));
    }
    if let GroupOp::Create { id: Err(error), .. } | GroupOp::SetId { id: Err(error), .. } = op {
        return Err(error);
    }
    let mut writes = Writes::default();
    let (reply, event) = match op {
        GroupOp::Create { id: Ok(id), entries_read, .. } => {
            if group_state.is_some() {
                return Err(Frame::static_error("BUSYGROUP Consumer Group name already exists"));
            }
            if !exists {
                writes.set(name(&store::node_name(node)), NodeCounters::default().encode());
            }
            let state = GroupState { last_delivered: id.unwrap_or(last_id), entries_read };
            writes.set(store::group_name(&group), state.encode());
            (Frame::ok(), Some("xgroup-create"))
        }
        GroupOp::SetId { id: Ok(id), entries_read } => {
            let state = GroupState { last_delivered: id.unwrap_or(last_id), entries_read };
            writes.set(store::group_name(&group), state.encode());
            (Frame::ok(), Some("xgroup-setid"))
        }
        GroupOp::Destroy => match (&found, group_state) {
            (Some((view, _)), Some(_)) => {
                writes.remove(store::group_name(&group));
                for (consumer, _) in view.consumers(&group) {
                    writes.remove(store::consumer_name(&group, &consumer));
                }
                view.pending(&group, StreamId::ZERO, StreamId::MAX, |id, _| {
                    writes.remove(store::pending_name(&group, id));
                    true
                });
                (Frame::Integer(1), Some("xgroup-destroy"))
            }
            _ => (Frame::Integer(0), None),
        },
        GroupOp::Create { id: Err(_), .. } | GroupOp::SetId { id: Err(_), .. } => unreachable!("answered above"),
        GroupOp::CreateConsumer(consumer) => {
            let Some((view, _)) = &found else { unreachable!("checked above") };
            if view.consumer(&group, &consumer).is_some() {
                (Frame::Integer(0), None)
            } else {
                writes.set(store::consumer_name(&group, &consumer), store::encode_seen(now_ms));
                (Frame::Integer(1), Some("xgroup-createconsumer"))
            }
        }
        GroupOp::DelConsumer(consumer) => {
            let Some((view, _)) = &found else { unreachable!("checked above") };
            if view.consumer(&group, &consumer).is_none() {
                (Frame::Integer(0), None)
            } else {
                let mut pending = 0;
                view.pending(&group, StreamId::ZERO, StreamId::MAX, |id, p| {
                    if p.consumer == consumer {
                        writes.remove(store::pending_name(&group, id));
                        pending += 1;
                    }
                    true
                });
                writes.remove(store::consumer_name(&group, &consumer));
                (Frame::Integer(pending), Some("xgroup-delconsumer"))
            }
        }
    };
    write(kv, ctx, key.clone(), writes.into_writes());
    if let Some(event) = event {
        kv.notify.raise(Class::Stream, event, &key);
    }
    Ok(reply)
}

/// Look the consumer up (refreshing its seen time) or create it: the write, and
/// whether it was created (`xgroup-createconsumer`).
fn touch_consumer(view: StreamView<'_>, writes: &mut Writes, group: &[u8], consumer: &[u8], now_ms: u64) -> bool {
    let created = view.consumer(group, consumer).is_none();
    writes.set(store::consumer_name(group, consumer), store::encode_seen(now_ms));
    created
}

#[allow(clippy::too_many_arguments)]
fn read_group(
    kv: &mut KvEngine,
    ctx: &mut WriteCtx,
    key: Bytes,
    group: Bytes,
    consumer: Bytes,
    from: ReadFrom,
    count: u64,
    noack: bool,
) -> Result<Frame, Frame> {
    let now_ms = ctx.now_ms;
    let missing = || {
        Frame::error(format!("NOGROUP No such key '{}' or consumer group '{}' in XREADGROUP with GROUP option", lossy(&key), lossy(&group)))
    };
    let Some((view, live)) = view_of(kv, &key, now_ms)? else { return Err(missing()) };
    let Some(state) = view.group(&group) else { return Err(missing()) };
    let mut writes = Writes::default();
    let entries = match from {
        ReadFrom::Invalid(error) => return Err(error),
        ReadFrom::After(after) => {
            // History: this consumer's pending entries after `after`.
            let created = touch_consumer(view, &mut writes, &group, &consumer, now_ms);
            let mut out = Vec::new();
            if let Some(start) = after.next() {
                view.pending(&group, start, StreamId::MAX, |id, mut p| {
                    if p.consumer != consumer {
                        return true;
                    }
                    match view.entry(id) {
                        Some(value) => {
                            out.push(entry_frame(id, &value));
                            p.delivered_ms = now_ms;
                            p.deliveries += 1;
                            writes.set(store::pending_name(&group, id), p.encode());
                        }
                        None => out.push(Frame::Array(vec![id.to_frame(), Frame::NullArray])),
                    }
                    count == 0 || (out.len() as u64) < count
                });
            }
            write_and_notify(kv, ctx, &key, writes, created.then_some("xgroup-createconsumer"));
            return Ok(Frame::Array(vec![Frame::Bulk(key), Frame::Array(out)]));
        }
        ReadFrom::New => match view.last_entry() {
            Some((top, _)) if top > state.last_delivered => {
                let start = state.last_delivered.next().unwrap_or(StreamId::MAX);
                view.range(start, StreamId::MAX, false, count)
            }
            _ => return Ok(Frame::Null),
        },
        ReadFrom::Last => return Ok(Frame::Null),
    };
    let created = touch_consumer(view, &mut writes, &group, &consumer, now_ms);
    let shape = Shape::of(view, live);
    let mut group_state = state;
    for (id, _) in &entries {
        group_state = shape.delivered(group_state, *id);
        if !noack {
            // A new pending entry, or one left by an earlier delivery (after XGROUP
            // SETID moved the group back) given to this consumer afresh.
            let p = Pending { delivered_ms: now_ms, deliveries: 1, consumer: consumer.clone() };
            writes.set(store::pending_name(&group, *id), p.encode());
        }
    }
    if group_state != state {
        writes.set(store::group_name(&group), group_state.encode());
    }
    let reply = Frame::Array(vec![Frame::Bulk(key.clone()), super::entries_frame(&entries)]);
    write_and_notify(kv, ctx, &key, writes, created.then_some("xgroup-createconsumer"));
    Ok(reply)
}

fn write_and_notify(kv: &mut KvEngine, ctx: &mut WriteCtx, key: &Bytes, writes: Writes, event: Option<&'static str>) {
    write(kv, ctx, key.clone(), writes.into_writes());
    if let Some(event) = event {
        kv.notify.raise(Class::Stream, event, key);
    }
}

fn ack(kv: &mut KvEngine, ctx: &mut WriteCtx, key: Bytes, group: Bytes, ids: Result<Vec<StreamId>, Frame>) -> Result<Frame, Frame> {
    let Some((view, _)) = view_of(kv, &key, ctx.now_ms)? else { return Ok(Frame::Integer(0)) };
    if view.group(&group).is_none() {
        return Ok(Frame::Integer(0));
    }
    let ids = ids?;
    let mut writes = Writes::default();
    let mut acked = 0;
    for &id in &ids {
        let name = store::pending_name(&group, id);
        if !writes.0.contains_key(&name) && view.pending_entry(&group, id).is_some() {
            writes.remove(name);
            acked += 1;
        }
    }
    write(kv, ctx, key, writes.into_writes());
    Ok(Frame::Integer(acked))
}

fn pending(kv: &mut KvEngine, now_ms: u64, key: Bytes, group: Bytes, range: Option<PendingRange>) -> Result<Frame, Frame> {
    let (view, _) = group_of(kv, &key, &group, now_ms)?;
    let Some(range) = range else {
        let mut count = 0i64;
        let (mut first, mut last) = (None, StreamId::ZERO);
        let mut per_consumer: BTreeMap<Bytes, i64> = BTreeMap::new();
        view.pending(&group, StreamId::ZERO, StreamId::MAX, |id, p| {
            count += 1;
            first.get_or_insert(id);
            last = id;
            *per_consumer.entry(p.consumer).or_default() += 1;
            true
        });
        let Some(first) = first else {
            return Ok(Frame::Array(vec![Frame::Integer(0), Frame::Null, Frame::Null, Frame::NullArray]));
        };
        let consumers =
            per_consumer.into_iter().map(|(c, n)| Frame::Array(vec![Frame::Bulk(c), Frame::Bulk(Bytes::from(n.to_string()))])).collect();
        return Ok(Frame::Array(vec![Frame::Integer(count), first.to_frame(), last.to_frame(), Frame::Array(consumers)]));
    };
    if let Some(consumer) = &range.consumer
        && view.consumer(&group, consumer).is_none()
    {
        return Ok(Frame::Array(Vec::new()));
    }
    let mut out = Vec::new();
    let mut left = range.count;
    if left > 0 {
        view.pending(&group, range.start, range.end, |id, p| {
            if range.consumer.as_ref().is_some_and(|c| *c != p.consumer) {
                return true;
            }
            let idle = now_ms.saturating_sub(p.delivered_ms) as i64;
            if range.min_idle > 0 && idle < range.min_idle {
                return true;
            }
            out.push(Frame::Array(vec![id.to_frame(), Frame::Bulk(p.consumer), Frame::Integer(idle), Frame::Integer(p.deliveries as i64)]));
            left -= 1;
            left > 0
        });
    }
    Ok(Frame::Array(out))
}

#[allow(clippy::too_many_arguments)]
fn claim(
    kv: &mut KvEngine,
    ctx: &mut WriteCtx,
    key: Bytes,
    group: Bytes,
    consumer: Bytes,
    min_idle: i64,
    ids: &[StreamId],
    options: ClaimOptions,
) -> Result<Frame, Frame> {
    let now_ms = ctx.now_ms;
    let (view, mut state) = group_of(kv, &key, &group, now_ms)?;
    let mut writes = Writes::default();
    if let Some(last) = options.last_id
        && last > state.last_delivered
    {
        state.last_delivered = last;
        writes.set(store::group_name(&group), state.encode());
    }
    let now = now_ms as i64;
    let delivery = match (options.idle_ms, options.time_ms) {
        (_, Some(time)) => time,
        (Some(idle), None) => now - idle,
        (None, None) => now,
    };
    let delivery = if delivery < 0 || delivery > now { now } else { delivery } as u64;
    let mut created = false;
    let mut touched = false;
    let mut out = Vec::new();
    for &id in ids {
        let pname = store::pending_name(&group, id);
        let existing = match writes.0.get(&pname) {
            Some(Some(value)) => Pending::decode(value),
            Some(None) => None,
            None => view.pending_entry(&group, id),
        };
        let Some(value) = view.entry(id) else {
            if existing.is_some() {
                writes.remove(pname);
            }
            continue;
        };
        let (mut p, owned) = match existing {
            Some(p) => (p, true),
            None if options.force => (Pending { delivered_ms: now_ms, deliveries: 1, consumer: Bytes::new() }, false),
            None => continue,
        };
        if owned && min_idle > 0 && (now_ms.saturating_sub(p.delivered_ms) as i64) < min_idle {
            continue;
        }
        if !touched {
            created = touch_consumer(view, &mut writes, &group, &consumer, now_ms);
            touched = true;
        }
        p.delivered_ms = delivery;
        match options.retry_count {
            Some(n) if n >= 0 => p.deliveries = n as u64,
            _ if !options.just_id => p.deliveries += 1,
            _ => {}
        }
        p.consumer = consumer.clone();
        writes.set(pname, p.encode());
        out.push(if options.just_id { id.to_frame() } else { entry_frame(id, &value) });
    }
    write_and_notify(kv, ctx, &key, writes, created.then_some("xgroup-createconsumer"));
    Ok(Frame::Array(out))
}

#[allow(clippy::too_many_arguments)]
fn auto_claim(
    kv: &mut KvEngine,
    ctx: &mut WriteCtx,
    key: Bytes,
    group: Bytes,
    consumer: Bytes,
    min_idle: i64,
    start: StreamId,
    count: u64,
    just_id: bool,
) -> Result<Frame, Frame> {
    let now_ms = ctx.now_ms;
    let (view, _) = group_of(kv, &key, &group, now_ms)?;
    let mut writes = Writes::default();
    let mut attempts = count.saturating_mul(10);
    let mut left = count;
    let mut claimed = Vec::new();
    let mut deleted = Vec::new();
    let mut next = StreamId::ZERO;
    let mut created = false;
    let mut touched = false;
    let mut reached_end = true;
    view.pending(&group, start, StreamId::MAX, |id, mut p| {
        if attempts == 0 || left == 0 {
            next = id;
            reached_end = false;
            return false;
        }
        attempts -= 1;
        let Some(value) = view.entry(id) else {
            writes.remove(store::pending_name(&group, id));
            deleted.push(id.to_frame());
            left -= 1;
            return true;
        };
        if min_idle > 0 && (now_ms.saturating_sub(p.delivered_ms) as i64) < min_idle {
            return true;
        }
        if !touched {
            created = touch_consumer(view, &mut writes, &group, &consumer, now_ms);
            touched = true;
        }
        p.delivered_ms = now_ms;
        if !just_id {
            p.deliveries += 1;
        }
        p.consumer = consumer.clone();
        writes.set(store::pending_name(&group, id), p.encode());
        claimed.push(if just_id { id.to_frame() } else { entry_frame(id, &value) });
        left -= 1;
        true
    });
    if reached_end {
        next = StreamId::ZERO;
    }
    write_and_notify(kv, ctx, &key, writes, created.then_some("xgroup-createconsumer"));
    Ok(Frame::Array(vec![next.to_frame(), Frame::Array(claimed), Frame::Array(deleted)]))
}
