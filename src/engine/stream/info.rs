//! XINFO STREAM [FULL], XINFO GROUPS and XINFO CONSUMERS, shaped as Redis 7.0 shapes
//! them (maps in RESP3, flat arrays in RESP2). The radix-tree figures Redis reports are
//! its own layout's; here they are what that layout would hold for this many entries
//! (one node per `stream-node-max-entries`), so tools that read them see sane values.
//!
//! Pure: reads only.

use bytes::Bytes;

use super::groups::Shape;
use super::store::StreamView;
use super::{entries_frame, view_of};
use crate::command::errors;
use crate::command::stream::InfoOf;
use crate::command::stream::id::StreamId;
use crate::engine::kv::KvEngine;
use crate::protocol::Frame;

fn field(name: &'static str, value: Frame) -> (Frame, Frame) {
    (Frame::Bulk(Bytes::from_static(name.as_bytes())), value)
}

fn int(n: impl TryInto<i64>) -> Frame {
    Frame::Integer(n.try_into().unwrap_or(i64::MAX))
}

pub fn info(kv: &mut KvEngine, key: Bytes, of: InfoOf, now_ms: u64) -> Result<Frame, Frame> {
    let node_max = kv.encoding.stream_node_max_entries.max(1) as u64;
    let Some((view, live)) = view_of(kv, &key, now_ms)? else { return Err(errors::error("ERR no such key")) };
    let shape = Shape::of(view, live);
    match of {
        InfoOf::Stream { full } => Ok(stream_info(view, &shape, full, node_max)),
        InfoOf::Groups => Ok(Frame::Array(
            view.groups()
                .into_iter()
                .map(|(name, state)| {
                    let mut pending = 0;
                    view.pending(&name, StreamId::ZERO, StreamId::MAX, |_, _| {
                        pending += 1;
                        true
                    });
                    Frame::Map(vec![
                        field("name", Frame::Bulk(name.clone())),
                        field("consumers", int(view.consumers(&name).len())),
                        field("pending", int(pending)),
                        field("last-delivered-id", state.last_delivered.to_frame()),
                        field("entries-read", entries_read(state.entries_read)),
                        field("lag", shape.lag(&state).map_or(Frame::Null, Frame::Integer)),
                    ])
                })
                .collect(),
        )),
        InfoOf::Consumers(group) => {
            if view.group(&group).is_none() {
                return Err(Frame::error(format!(
                    "NOGROUP No such consumer group '{}' for key name '{}'",
                    String::from_utf8_lossy(&group),
                    String::from_utf8_lossy(&key)
                )));
            }
            let pending = pending_by_consumer(view, &group);
            Ok(Frame::Array(
                view.consumers(&group)
                    .into_iter()
                    .map(|(name, seen)| {
                        let count = pending.iter().filter(|(_, c, _, _)| *c == name).count();
                        Frame::Map(vec![
                            field("name", Frame::Bulk(name)),
                            field("pending", int(count)),
                            field("idle", int(now_ms.saturating_sub(seen))),
                        ])
                    })
                    .collect(),
            ))
        }
    }
}

fn entries_read(n: i64) -> Frame {
    if n == -1 { Frame::Null } else { Frame::Integer(n) }
}

/// A group's pending entries: (id, consumer, delivery time, deliveries).
fn pending_by_consumer(view: StreamView<'_>, group: &[u8]) -> Vec<(StreamId, Bytes, u64, u64)> {
    let mut out = Vec::new();
    view.pending(group, StreamId::ZERO, StreamId::MAX, |id, p| {
        out.push((id, p.consumer, p.delivered_ms, p.deliveries));
        true
    });
    out
}

fn stream_info(view: StreamView<'_>, shape: &Shape, full: Option<u64>, node_max: u64) -> Frame {
    let nodes = shape.len.div_ceil(node_max);
    let mut fields = vec![
        field("length", int(shape.len)),
        field("radix-tree-keys", int(nodes)),
        field("radix-tree-nodes", int(if nodes == 0 { 1 } else { nodes * 2 })),
        field("last-generated-id", shape.counters.last_id.to_frame()),
        field("max-deleted-entry-id", shape.counters.max_deleted.to_frame()),
        field("entries-added", int(shape.counters.entries_added)),
        field("recorded-first-entry-id", shape.first.to_frame()),
    ];
    let groups = view.groups();
    let Some(count) = full else {
        fields.push(field("groups", int(groups.len())));
        let edge = |entry: Option<(StreamId, Bytes)>| entry.map_or(Frame::Null, |(id, v)| super::entry_frame(id, &v));
        fields.push(field("first-entry", edge(view.first_entry())));
        fields.push(field("last-entry", edge(view.last_entry())));
        return Frame::Map(fields);
    };
    let limit = |n: usize| count == 0 || (n as u64) < count;
    fields.push(field("entries", entries_frame(&view.range(StreamId::ZERO, StreamId::MAX, false, count))));
    let groups = groups
        .into_iter()
        .map(|(name, state)| {
            let pending = pending_by_consumer(view, &name);
            let pel: Vec<Frame> = pending
                .iter()
                .take_while({
                    let mut n = 0;
                    move |_| {
                        let keep = limit(n);
                        n += 1;
                        keep
                    }
                })
                .map(|(id, c, at, n)| Frame::Array(vec![id.to_frame(), Frame::Bulk(c.clone()), int(*at), int(*n)]))
                .collect();
            let consumers = view
                .consumers(&name)
                .into_iter()
                .map(|(consumer, seen)| {
                    let own: Vec<_> = pending.iter().filter(|(_, c, _, _)| *c == consumer).collect();
                    let listed = own.iter().take(if count == 0 { usize::MAX } else { count as usize });
                    Frame::Map(vec![
                        field("name", Frame::Bulk(consumer.clone())),
                        field("seen-time", int(seen)),
                        field("pel-count", int(own.len())),
                        field(
                            "pending",
                            Frame::Array(listed.map(|(id, _, at, n)| Frame::Array(vec![id.to_frame(), int(*at), int(*n)])).collect()),
                        ),
                    ])
                })
                .collect();
            Frame::Map(vec![
                field("name", Frame::Bulk(name)),
                field("last-delivered-id", state.last_delivered.to_frame()),
                field("entries-read", entries_read(state.entries_read)),
                field("lag", shape.lag(&state).map_or(Frame::Null, Frame::Integer)),
                field("pel-count", int(pending.len())),
                field("pending", Frame::Array(pel)),
                field("consumers", Frame::Array(consumers)),
            ])
        })
        .collect();
    fields.push(field("groups", Frame::Array(groups)));
    Frame::Map(fields)
}
