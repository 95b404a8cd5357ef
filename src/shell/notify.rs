//! Delivery of keyspace notifications: after a shard ran commands (or expired keys),
//! the events they raised (`crate::notify`) are published through the node's Pub/Sub
//! broker to this node's subscribers, before the commands' replies are written.
//!
//! A command across shards whose parts run on several shards at once (MGET, MSET, DEL,
//! EXISTS, the reads of SINTER or ZUNION) has each part run one key at a time
//! ([`split`]); the events come back with the replies and [`unsplit`] puts them in
//! argument order, so subscribers see Redis's order whichever shard answered first.
//!
//! Decides nothing about which events exist (the shard did); never forwards them to
//! peers: every node raises its own (see docs/pubsub.md).

use super::ServerState;
use crate::notify::{self, KeyEvent};
use crate::shard::{Shard, ShardOp, ShardReply};

/// Hand a shard the current `notify-keyspace-events` (one atomic load).
pub fn sync_flags(shard: &mut Shard, state: &ServerState) {
    shard.set_notify_flags(state.runtime.notify_keyspace_events());
}

/// Publish what the shard's last commands raised, in the order raised. Costs one test
/// when nothing was raised (always, while notifications are off).
pub fn publish_raised(shard: &mut Shard, state: &ServerState) {
    if !shard.has_notifications() {
        return;
    }
    let flags = state.runtime.notify_keyspace_events();
    for event in shard.take_notifications() {
        for (channel, message) in event.channels(flags) {
            state.pubsub.publish(false, &channel, &message);
        }
    }
    let dropped = shard.take_notifications_dropped();
    if dropped > 0 {
        tracing::warn!(dropped, "keyspace notifications dropped: one batch raised more than {}", crate::notify::PENDING_EVENTS_MAX);
    }
}

/// Publish events a command across shards gathered (see [`unsplit`]), in their order.
pub fn publish(state: &ServerState, events: Vec<KeyEvent>) {
    if events.is_empty() {
        return;
    }
    let flags = state.runtime.notify_keyspace_events();
    for event in events {
        for (channel, message) in event.channels(flags) {
            state.pubsub.publish(false, &channel, &message);
        }
    }
}

/// One shard's part of a command across shards, as sent: run one key at a time
/// (`ShardOp::Split`) when `notifying`, else whole (notifications off cost nothing).
pub fn split(op: ShardOp, notifying: bool) -> ShardOp {
    if notifying { ShardOp::Split(Box::new(op)) } else { op }
}

/// The replies of parts sent through [`split`], one per group, back in the shape the
/// whole op answers, and the events their keys raised in argument order
/// ([`notify::in_argument_order`]). `positions[g]` are the argument positions of group
/// `g`'s keys. With `stop_at_failure`, no key after the first that failed (WRONGTYPE)
/// raises `keymiss`, as Redis looks no further (SINTER, ZUNION, BITOP); LCS looks up
/// both keys before it checks their types.
pub fn unsplit(replies: Vec<ShardReply>, positions: &[Vec<usize>], stop_at_failure: bool) -> (Vec<ShardReply>, Vec<KeyEvent>) {
    let total = positions.iter().map(Vec::len).sum::<usize>();
    let mut per_position: Vec<Vec<KeyEvent>> = vec![Vec::new(); total];
    let mut failed_at: Option<usize> = None;
    let mut whole = Vec::with_capacity(replies.len());
    for (reply, positions) in replies.into_iter().zip(positions) {
        let ShardReply::Split { reply, events, failed } = reply else {
            whole.push(reply);
            continue;
        };
        if let Some(failed) = failed.and_then(|i| positions.get(i)) {
            failed_at = Some(failed_at.map_or(*failed, |f| f.min(*failed)));
        }
        // A part the shard could not split raised everything at its first key.
        if events.len() == positions.len() {
            for (raised, position) in events.into_iter().zip(positions) {
                per_position[*position] = raised;
            }
        } else if let Some(first) = positions.first() {
            per_position[*first] = events.into_iter().flatten().collect();
        }
        whole.push(*reply);
    }
    (whole, notify::in_argument_order(per_position, failed_at.filter(|_| stop_at_failure)))
}
