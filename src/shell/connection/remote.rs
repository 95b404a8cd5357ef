//! Commands for keys of other shards: queued per shard, sent in batches through the
//! router, their replies filed in their pipeline slots. Part of [`super::Connection`];
//! a shard runs its batches in the order they arrive, so its operations keep the
//! pipeline's order.
//!
//! A batch's buffers come back with its replies (`router::Batch`) and are kept for the
//! next one, a few of them and up to a small size each: once warm, a command for
//! another shard allocates nothing on either thread but the reply channel.

use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use super::Connection;
use crate::protocol::Frame;
use crate::shard::{ShardOp, ShardReply};
use crate::shell::command_stats::Outcome;
use crate::shell::router::Batch;

/// A remote shard's batch is sent once it holds this many operations, without waiting
/// for the end of what was read: the other shards then work while this thread runs its
/// own share. Eight operations per hop keep the hop's cost small next to theirs; a
/// short pipeline (P=16 over several shards) never fills one.
const REMOTE_BATCH_SEND_OPS: usize = 8;
/// Queued remote operations are sent before the next home-shard command once they have
/// waited this long behind home-shard work. Without it, a pipeline of expensive writes
/// (vector-indexed HSETs, ~0.3 ms each) ran shard after shard: each read's home share
/// first, then the remote batches (measured: 2 shards inserted no faster than 1). Cheap
/// commands never wait this long, so they keep one hop per shard per read.
const REMOTE_WAIT_MAX: Duration = Duration::from_micros(25);
/// Batch buffers a connection keeps for reuse: one per remote shard a short pipeline
/// touches on small nodes; a pipeline over more shards allocates the rest.
const SPARE_BATCHES_MAX: usize = 4;
/// Operations a kept batch's buffers hold at most (a longer one, grown by a long
/// pipeline, is freed): with [`SPARE_BATCHES_MAX`], at most ~9 KiB per connection
/// (operations and replies are at most 128 bytes each: `shard::ops`).
const SPARE_BATCH_OPS_MAX: usize = REMOTE_BATCH_SEND_OPS;

/// A reply slot of the pipeline, with the command it answers (for its failure's count
/// in INFO commandstats).
type ReplySlot = (usize, Option<usize>);

/// Operations queued for one remote shard, with the reply slots they fill.
struct PendingBatch {
    shard: usize,
    batch: Batch,
    slots: Vec<ReplySlot>,
}

/// The remote half of a pipeline: what is queued per shard, what was sent and waits
/// for replies, and the buffers kept for the next batches.
#[derive(Default)]
pub(super) struct RemoteQueue {
    pending: Vec<PendingBatch>,
    /// When home-shard work first ran with operations in `pending` (read only then:
    /// a pipeline with no home-shard command after its remote ones reads no clock).
    pending_since: Option<Instant>,
    /// Batches sent before the end of the pipeline: their replies and the slots they fill.
    in_flight: Vec<(oneshot::Receiver<Batch>, Vec<ReplySlot>)>,
    /// Emptied buffers of answered batches.
    spare: Vec<(Batch, Vec<ReplySlot>)>,
}

impl RemoteQueue {
    /// Whether operations queued for other shards have waited behind this thread's
    /// own work long enough to be sent before the next home-shard command.
    pub(super) fn waited_too_long(&mut self) -> bool {
        if self.pending.is_empty() {
            return false;
        }
        match self.pending_since {
            Some(since) => since.elapsed() >= REMOTE_WAIT_MAX,
            None => {
                self.pending_since = Some(Instant::now());
                false
            }
        }
    }

    fn idle(&self) -> bool {
        self.pending.is_empty() && self.in_flight.is_empty()
    }

    /// Drop the kept buffers of answered batches (an idle connection holds none).
    pub(super) fn give_back_spares(&mut self) {
        self.spare = Vec::new();
    }

    /// Keep an answered batch's emptied buffers for a next batch, if there is room.
    fn keep(&mut self, batch: Batch, slots: Vec<ReplySlot>) {
        debug_assert!(batch.ops.is_empty() && batch.replies.is_empty() && slots.is_empty());
        let small = [batch.ops.capacity(), batch.replies.capacity(), slots.capacity()].iter().all(|&room| room <= SPARE_BATCH_OPS_MAX);
        if self.spare.len() < SPARE_BATCHES_MAX && small {
            self.spare.push((batch, slots));
        }
    }

    fn fresh(&mut self) -> (Batch, Vec<ReplySlot>) {
        self.spare.pop().unwrap_or_else(|| {
            let room = REMOTE_BATCH_SEND_OPS;
            (Batch { ops: Vec::with_capacity(room), replies: Vec::with_capacity(room) }, Vec::with_capacity(room))
        })
    }
}

impl Connection {
    /// Queue `op` for a remote shard; send that shard's batch at once when it is full
    /// (its replies are collected by `flush_pending` with the rest). A shard runs its
    /// batches in the order they arrive, so its operations keep the pipeline's order.
    pub(super) async fn queue(&mut self, shard: usize, op: ShardOp, slot: usize, index: Option<usize>) {
        let remote = &mut self.remote;
        let at = match remote.pending.iter().position(|p| p.shard == shard) {
            Some(at) => at,
            None => {
                let (batch, slots) = remote.fresh();
                remote.pending.push(PendingBatch { shard, batch, slots });
                remote.pending.len() - 1
            }
        };
        let pending = &mut remote.pending[at];
        pending.batch.ops.push(op);
        pending.slots.push((slot, index));
        if pending.batch.ops.len() >= REMOTE_BATCH_SEND_OPS {
            let pending = remote.pending.swap_remove(at);
            if remote.pending.is_empty() {
                remote.pending_since = None;
            }
            self.send_batch(pending).await;
        }
    }

    /// Send every queued batch; their replies are collected by `flush_pending`.
    pub(super) async fn send_pending(&mut self) {
        self.remote.pending_since = None;
        let mut pending = std::mem::take(&mut self.remote.pending);
        for batch in pending.drain(..) {
            self.send_batch(batch).await;
        }
        // The list's own room is kept too (nothing was queued meanwhile: sending only
        // waits for room in a mailbox).
        debug_assert!(self.remote.pending.is_empty());
        self.remote.pending = pending;
    }

    async fn send_batch(&mut self, pending: PendingBatch) {
        let receiver = self.state().router.send_batch(pending.shard, pending.batch).await;
        self.remote.in_flight.push((receiver, pending.slots));
    }

    /// Send every queued batch, wait for all replies (of those sent early too), and
    /// file them in their slots.
    pub(super) async fn flush_pending(&mut self) {
        if self.remote.idle() {
            return;
        }
        self.send_pending().await;
        let idle_poll = self.state().config.idle_poll();
        let mut in_flight = std::mem::take(&mut self.remote.in_flight);
        for (receiver, mut slots) in in_flight.drain(..) {
            let mut answered = crate::shell::idle_poll::reply(receiver, idle_poll).await;
            let mut replies = answered.as_mut().map(|batch| batch.replies.drain(..));
            for (slot, index) in slots.drain(..) {
                let reply = replies.as_mut().and_then(Iterator::next);
                let frame = reply.map_or(Frame::static_error("ERR server is shutting down"), ShardReply::into_frame);
                if let Frame::Error(message) = &frame {
                    let stats = &self.access.state.command_stats;
                    stats.add_error_reply(message);
                    if let Some(index) = index {
                        stats.add_outcome(self.access.home, index, Outcome::Ran { failed: true });
                    }
                }
                self.replies[slot] = Some(frame);
            }
            drop(replies);
            if let Some(batch) = answered {
                self.remote.keep(batch, slots);
            }
        }
        debug_assert!(self.remote.in_flight.is_empty());
        self.remote.in_flight = in_flight;
    }
}
