//! One peer link of a node, carried on Maelstrom's network instead of a TCP connection.
//!
//! Owns the per-peer bookkeeping that the server's link task keeps around the real
//! replication state machines: the batch queue ([`PeerQueue`]) and the anti-entropy
//! rounds ([`AntiEntropy`]) of this node's side (the *dialer*: it sends its batches and
//! starts its rounds), and the in-order check of the peer's batches (the *listener*).
//! Decides only: the node gathers leaves and states from its shards and moves frames.
//!
//! Maelstrom's network loses, duplicates and reorders messages; the server's links rely
//! on TCP, which does none of that within a connection. So a link here has *epochs*
//! standing in for connections: every batch carries its epoch and its place in it, the
//! listener merges batches of the newest epoch in their order, holding (a bounded
//! number of) those that overtook a missing one, as TCP would, and a dialer that gets no acknowledgement for [`ACK_TIMEOUT_MS`]
//! "reconnects": a new epoch, everything unacknowledged sent again, an anti-entropy
//! round due. That is exactly what the server does after a dropped connection, so the
//! acknowledgements keep their meaning (every batch up to `seq` merged) and the real
//! queue's resend logic runs unchanged. A batch or an anti-entropy answer of an older
//! epoch is dropped, as bytes of a closed connection are; an acknowledgement of an
//! older epoch still counts (it is cumulative and true whenever it was sent).

use std::collections::BTreeMap;

use bytes::Bytes;
use meridian::delta::Delta;
use meridian::engine::kv::merkle::MerkleLeaves;
use meridian::replication::anti_entropy::AntiEntropy;
use meridian::replication::peer::PeerQueue;
use meridian::replication::wire::Message;

/// Unacknowledged batches kept per peer; past this the queue is dropped and
/// anti-entropy repairs the peer (as in the server).
pub const PEER_QUEUE_BYTES_MAX: usize = 1 << 20;
/// Anti-entropy period per link.
pub const AE_INTERVAL_MS: u64 = 500;
/// A round whose messages were lost is abandoned after this long.
pub const AE_ROUND_TIMEOUT_MS: u64 = 2_000;
/// How long the oldest unacknowledged batch waits before the link reconnects.
pub const ACK_TIMEOUT_MS: u64 = 400;
/// Batches sent per link per tick at most (the rest go on the next tick).
pub const BATCHES_PER_TICK_MAX: usize = 64;
/// Batches held per link that arrived ahead of a missing one; past it they are
/// dropped, and sent again after the sender's reconnect.
pub const REORDER_BATCHES_MAX: usize = 256;

/// A peer's batch, decoded: its sequence (for the ack) and its deltas.
pub type InboundBatch = (u64, Vec<Delta>);

/// A frame for the peer, with the epoch it belongs to and its place among the epoch's
/// batches (0: not a batch).
#[derive(Clone, Debug, PartialEq)]
pub struct Outbound {
    pub frame: Bytes,
    pub epoch: u64,
    pub place: u64,
}

/// Figures a link reports (the node's stderr summary, tests).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LinkStats {
    pub reconnects: u64,
    pub batches_merged: u64,
    pub batches_refused: u64,
    pub stale_frames: u64,
}

#[derive(Debug)]
pub struct PeerLink {
    queue: PeerQueue,
    ae: AntiEntropy,
    /// The dialer side's current epoch and how many batches it placed on it.
    epoch: u64,
    placed: u64,
    /// When the oldest unacknowledged batch started waiting for its ack.
    waiting_since_ms: Option<u64>,
    /// The listener side: the newest epoch seen from the peer and the place of the
    /// next batch to merge in it.
    inbound_epoch: u64,
    inbound_next: u64,
    /// Batches of `inbound_epoch` past `inbound_next`, by place.
    reorder: BTreeMap<u64, InboundBatch>,
    pub stats: LinkStats,
}

impl Default for PeerLink {
    fn default() -> Self {
        PeerLink::new()
    }
}

impl PeerLink {
    pub fn new() -> PeerLink {
        PeerLink {
            queue: PeerQueue::new(PEER_QUEUE_BYTES_MAX),
            ae: AntiEntropy::new(AE_INTERVAL_MS, AE_ROUND_TIMEOUT_MS),
            epoch: 1,
            placed: 0,
            waiting_since_ms: None,
            inbound_epoch: 0,
            inbound_next: 1,
            reorder: BTreeMap::new(),
            stats: LinkStats::default(),
        }
    }

    /// Queue a batch for this peer (the node encodes it once for every peer).
    pub fn push_batch(&mut self, seq: u64, frame: Bytes, deltas: usize, now_ms: u64) {
        self.queue.push(seq, frame, deltas, now_ms);
    }

    /// The outboxes overflowed: this peer missed writes and needs a round.
    pub fn mark_gap(&mut self) {
        self.queue.needs_anti_entropy = true;
    }

    /// The batches to send now: after a reconnect when acknowledgements stopped
    /// coming, everything unacknowledged again.
    pub fn batches_to_send(&mut self, now_ms: u64) -> Vec<Outbound> {
        if self.waiting_since_ms.is_some_and(|since| now_ms > since + ACK_TIMEOUT_MS) {
            self.reconnect();
        }
        let mut out = Vec::new();
        while out.len() < BATCHES_PER_TICK_MAX {
            let Some(frame) = self.queue.next_to_send() else { break };
            self.placed += 1;
            out.push(Outbound { frame, epoch: self.epoch, place: self.placed });
        }
        if self.queue.pending_batches() > 0 && self.waiting_since_ms.is_none() {
            self.waiting_since_ms = Some(now_ms);
        }
        out
    }

    /// A new epoch, as after a dropped connection (`shell::peer_link`'s reconnect).
    fn reconnect(&mut self) {
        self.epoch += 1;
        self.placed = 0;
        self.waiting_since_ms = None;
        self.queue.on_disconnect();
        self.queue.needs_anti_entropy = true;
        self.ae.on_disconnect();
        self.stats.reconnects += 1;
    }

    /// The peer merged every batch up to `seq`.
    pub fn on_ack(&mut self, seq: u64, now_ms: u64) {
        let before = self.queue.acked();
        self.queue.on_ack(seq);
        if self.queue.acked() > before {
            self.waiting_since_ms = (self.queue.pending_batches() > 0).then_some(now_ms);
        }
    }

    /// Whether an anti-entropy round should start now.
    pub fn round_due(&mut self, now_ms: u64) -> bool {
        self.ae.due(now_ms, self.queue.needs_anti_entropy)
    }

    /// Start a round with this node's leaves.
    pub fn start_round(&mut self, now_ms: u64, leaves: MerkleLeaves) -> Outbound {
        self.queue.needs_anti_entropy = false;
        let groups = self.ae.start(now_ms, leaves);
        debug_assert!(matches!(groups, Message::AeGroups { .. }));
        Outbound { frame: meridian::replication::wire::encode(&groups), epoch: self.epoch, place: 0 }
    }

    /// The peer's leaves for a round: the leaves whose states to send it, or `None`
    /// when the answer is stale (another epoch or round) and is dropped.
    pub fn on_leaves(&mut self, epoch: u64, round: u64, leaves: &[(u16, u64)]) -> Option<Vec<u16>> {
        if epoch != self.epoch {
            self.stats.stale_frames += 1;
            return None;
        }
        // A duplicated or late answer names no round in flight: dropped (the server
        // closes the connection; here the round in flight, if any, times out).
        self.ae.on_leaves(round, leaves).ok()
    }

    /// The epoch of the dialer side, for frames that answer nothing.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// A batch of the peer arrived: the batches to merge (and acknowledge) now, in
    /// order. Only the newest epoch counts; a batch that overtook a missing one waits
    /// for it (bounded); a duplicate is dropped.
    pub fn accept_batch(&mut self, epoch: u64, place: u64, batch: InboundBatch) -> Vec<InboundBatch> {
        assert!(place > 0, "a batch has a place in its epoch");
        if epoch < self.inbound_epoch {
            self.stats.stale_frames += 1;
            return Vec::new();
        }
        if epoch > self.inbound_epoch {
            self.inbound_epoch = epoch;
            self.inbound_next = 1;
            self.reorder.clear();
        }
        if place < self.inbound_next {
            self.stats.batches_refused += 1;
            return Vec::new();
        }
        if place > self.inbound_next {
            if self.reorder.len() < REORDER_BATCHES_MAX {
                self.reorder.insert(place, batch);
            } else {
                self.stats.batches_refused += 1;
            }
            return Vec::new();
        }
        let mut ready = vec![batch];
        self.inbound_next += 1;
        while let Some(next) = self.reorder.remove(&self.inbound_next) {
            ready.push(next);
            self.inbound_next += 1;
        }
        debug_assert!(self.reorder.keys().all(|&p| p > self.inbound_next));
        self.stats.batches_merged += ready.len() as u64;
        ready
    }

    pub fn pending_batches(&self) -> usize {
        self.queue.pending_batches()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lost_batch_is_sent_again_in_a_new_epoch_after_the_ack_timeout() {
        let mut link = PeerLink::new();
        link.push_batch(1, Bytes::from_static(b"a"), 1, 0);
        link.push_batch(2, Bytes::from_static(b"b"), 1, 0);
        let first = link.batches_to_send(0);
        assert_eq!(first.iter().map(|o| (o.epoch, o.place)).collect::<Vec<_>>(), vec![(1, 1), (1, 2)]);
        assert!(link.batches_to_send(ACK_TIMEOUT_MS).is_empty(), "nothing new before the timeout");
        link.on_ack(1, 10);
        let again = link.batches_to_send(10 + ACK_TIMEOUT_MS + 1);
        assert_eq!(again.iter().map(|o| (o.epoch, o.place, o.frame.clone())).collect::<Vec<_>>(), vec![(2, 1, Bytes::from_static(b"b"))]);
        link.on_ack(2, 500);
        assert_eq!(link.pending_batches(), 0);
        assert!(link.batches_to_send(5_000).is_empty(), "no timeout with nothing unacknowledged");
        assert_eq!(link.stats.reconnects, 1);
    }

    #[test]
    fn the_listener_takes_batches_in_order_within_the_newest_epoch_only() {
        let mut link = PeerLink::new();
        let batch = |seq: u64| (seq, Vec::new());
        let seqs = |ready: Vec<InboundBatch>| ready.into_iter().map(|(seq, _)| seq).collect::<Vec<_>>();
        assert_eq!(seqs(link.accept_batch(1, 1, batch(10))), vec![10]);
        assert_eq!(seqs(link.accept_batch(1, 3, batch(12))), Vec::<u64>::new(), "held until place 2 comes");
        assert_eq!(seqs(link.accept_batch(1, 1, batch(10))), Vec::<u64>::new(), "a duplicate is dropped");
        assert_eq!(seqs(link.accept_batch(1, 2, batch(11))), vec![11, 12], "the gap filled: both, in order");
        assert_eq!(seqs(link.accept_batch(2, 1, batch(11))), vec![11], "a new epoch starts over");
        assert_eq!(seqs(link.accept_batch(1, 4, batch(13))), Vec::<u64>::new(), "the old epoch is gone");
    }
}
