//! Commands for keys of other shards: queued per shard, sent in batches through the
//! router, their replies filed in their pipeline slots. Part of [`super::Connection`];
//! a shard runs its batches in the order they arrive, so its operations keep the
//! pipeline's order.

use std::time::Instant;

use super::{Connection, PendingBatch, REMOTE_BATCH_SEND_OPS};
use crate::protocol::Frame;
use crate::shard::{ShardOp, ShardReply};
use crate::shell::command_stats::Outcome;

impl Connection {
    /// Queue `op` for a remote shard; send that shard's batch at once when it is full
    /// (its replies are collected by `flush_pending` with the rest). A shard runs its
    /// batches in the order they arrive, so its operations keep the pipeline's order.
    pub(super) async fn queue(&mut self, shard: usize, op: ShardOp, slot: usize, index: Option<usize>) {
        if self.pending.is_empty() {
            self.pending_since = Some(Instant::now());
        }
        let at = match self.pending.iter().position(|p| p.shard == shard) {
            Some(at) => at,
            None => {
                self.pending.push(PendingBatch { shard, ops: Vec::new(), slots: Vec::new() });
                self.pending.len() - 1
            }
        };
        let batch = &mut self.pending[at];
        batch.ops.push(op);
        batch.slots.push((slot, index));
        if batch.ops.len() >= REMOTE_BATCH_SEND_OPS {
            let batch = self.pending.swap_remove(at);
            if self.pending.is_empty() {
                self.pending_since = None;
            }
            self.send_batch(batch).await;
        }
    }

    /// Send every queued batch; their replies are collected by `flush_pending`.
    pub(super) async fn send_pending(&mut self) {
        self.pending_since = None;
        for batch in std::mem::take(&mut self.pending) {
            self.send_batch(batch).await;
        }
    }

    pub(super) async fn send_batch(&mut self, batch: PendingBatch) {
        let receiver = self.state().router.send(batch.shard, batch.ops).await;
        self.in_flight.push((receiver, batch.slots));
    }

    /// Send every queued batch, wait for all replies (of those sent early too), and
    /// file them in their slots.
    pub(super) async fn flush_pending(&mut self) {
        if self.pending.is_empty() && self.in_flight.is_empty() {
            return;
        }
        self.send_pending().await;
        let idle_poll = self.state().config.idle_poll();
        for (receiver, slots) in std::mem::take(&mut self.in_flight) {
            let replies = crate::shell::idle_poll::reply(receiver, idle_poll).await.unwrap_or_default();
            let mut replies = replies.into_iter();
            for (slot, index) in slots {
                let frame = replies.next().map_or(Frame::static_error("ERR server is shutting down"), ShardReply::into_frame);
                if let Frame::Error(message) = &frame {
                    let stats = &self.access.state.command_stats;
                    stats.add_error_reply(message);
                    if let Some(index) = index {
                        stats.add_outcome(self.access.home, index, Outcome::Ran { failed: true });
                    }
                }
                self.replies[slot] = Some(frame);
            }
        }
    }
}
