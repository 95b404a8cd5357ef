//! Delivery of keyspace notifications: after a shard ran commands (or expired keys),
//! the events they raised (`crate::notify`) are published through the node's Pub/Sub
//! broker to this node's subscribers, before the commands' replies are written.
//!
//! Decides nothing about which events exist (the shard did); never forwards them to
//! peers: every node raises its own (see docs/pubsub.md).

use super::ServerState;
use crate::shard::Shard;

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
