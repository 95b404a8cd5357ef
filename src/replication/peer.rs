//! One peer's queue of batches not yet acknowledged (DESIGN §6: at least once, with a
//! per-peer cursor, bounded).
//!
//! A batch is encoded once and shared by every peer's queue. It leaves the queue when
//! the peer acknowledges it; after a reconnect everything unacknowledged is sent again
//! (merging is idempotent, so duplicates are harmless). When a peer falls so far behind
//! that its queue would pass its byte bound, the queue is dropped and the peer marked
//! for anti-entropy, which repairs it from full key states instead.
//!
//! On every connection the queue sends nothing until that connection's first whole
//! anti-entropy round has sent its states (`states_sent`): the link is FIFO, so the
//! peer merges what this node holds, with the records of what it collected (the
//! absence rule, `shard::absence`), before any write of this node that came after
//! those removals. Without that, a peer that had been given up on took this node's
//! newer writes first and, until the round, answered from a state that still held
//! what they causally follow the removal of. The batches queued before that round
//! started are then dropped, not resent: the round's states hold whatever of their
//! writes is still alive, and a write removed since (and its removal collected) would
//! come back on the peer if it arrived after the round that told it of the removal
//! (docs/replication.md, "Catch-up before batches").

use std::collections::VecDeque;

use bytes::Bytes;

#[derive(Debug)]
struct Pending {
    seq: u64,
    frame: Bytes,
    deltas: usize,
    queued_at_ms: u64,
}

/// Figures INFO shows for a peer's queue.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PeerQueueStats {
    pub batches_sent: u64,
    pub bytes_sent: u64,
    pub batches_acked: u64,
    pub deltas_acked: u64,
    pub overflows: u64,
    /// Batches dropped unsent because a catch-up round's states held what they carried.
    pub superseded: u64,
}

#[derive(Debug)]
pub struct PeerQueue {
    pending: VecDeque<Pending>,
    bytes: usize,
    bytes_max: usize,
    /// Highest sequence sent on the current connection.
    sent_upto: u64,
    /// Highest sequence acknowledged.
    acked: u64,
    /// Set when batches were dropped (or never sent: a new link); cleared once an
    /// anti-entropy round starts.
    pub needs_anti_entropy: bool,
    /// Every connection catches up before its batches (see the module docs).
    catch_up: bool,
    /// This connection has not yet sent a whole anti-entropy round's states: batches
    /// wait (see the module docs).
    catching_up: bool,
    /// The last sequence queued.
    last_queued: u64,
    /// While catching up: the last sequence queued when the round in flight started.
    round_mark: Option<u64>,
    pub stats: PeerQueueStats,
}

impl PeerQueue {
    /// A queue whose every connection first sends a whole anti-entropy round's states
    /// (the server's and the simulator's links, FIFO connections: see the module docs).
    pub fn with_catch_up(bytes_max: usize) -> PeerQueue {
        PeerQueue { catch_up: true, catching_up: true, ..PeerQueue::new(bytes_max) }
    }

    /// A queue that sends its batches as soon as a connection is up (a link over a
    /// network that loses and reorders messages, where a round's states cannot be
    /// ordered before the batches anyway: `maelstrom`).
    pub fn new(bytes_max: usize) -> PeerQueue {
        assert!(bytes_max > 0);
        PeerQueue {
            pending: VecDeque::new(),
            bytes: 0,
            bytes_max,
            sent_upto: 0,
            acked: 0,
            needs_anti_entropy: true,
            catch_up: false,
            catching_up: false,
            last_queued: 0,
            round_mark: None,
            stats: PeerQueueStats::default(),
        }
    }

    /// Queue a batch (sequences increase across calls).
    pub fn push(&mut self, seq: u64, frame: Bytes, deltas: usize, now_ms: u64) {
        debug_assert!(self.pending.back().is_none_or(|p| p.seq < seq));
        if self.bytes + frame.len() > self.bytes_max {
            self.pending.clear();
            self.bytes = 0;
            self.needs_anti_entropy = true;
            self.stats.overflows += 1;
        }
        self.bytes += frame.len();
        self.last_queued = seq;
        self.pending.push_back(Pending { seq, frame, deltas, queued_at_ms: now_ms });
    }

    /// The next batch to write on the current connection, marked as sent; none while
    /// the connection's first round has not sent its states.
    pub fn next_to_send(&mut self) -> Option<Bytes> {
        if self.catching_up {
            return None;
        }
        let next = self.pending.iter().find(|p| p.seq > self.sent_upto)?;
        self.sent_upto = next.seq;
        self.stats.batches_sent += 1;
        self.stats.bytes_sent += next.frame.len() as u64;
        Some(next.frame.clone())
    }

    /// The peer merged everything up to `seq`.
    pub fn on_ack(&mut self, seq: u64) {
        self.acked = self.acked.max(seq);
        while let Some(front) = self.pending.front() {
            if front.seq > self.acked {
                break;
            }
            self.bytes -= front.frame.len();
            self.stats.batches_acked += 1;
            self.stats.deltas_acked += front.deltas as u64;
            self.pending.pop_front();
        }
    }

    /// The connection dropped: whatever was sent but not acknowledged goes again, after
    /// the next connection's first whole round.
    pub fn on_disconnect(&mut self) {
        self.sent_upto = self.acked;
        self.catching_up = self.catch_up;
    }

    /// An anti-entropy round starts on this connection.
    pub fn round_started(&mut self) {
        if self.catching_up {
            self.round_mark = Some(self.last_queued);
        }
    }

    /// An anti-entropy round on this connection sent its states (none, when no leaf
    /// differed); `whole`: every differing leaf, not cut at the per-round bound. After
    /// a whole one, batches flow, less those queued before the round started (see the
    /// module docs).
    pub fn states_sent(&mut self, whole: bool) {
        if !whole || !self.catching_up {
            return;
        }
        self.catching_up = false;
        let Some(mark) = self.round_mark.take() else { return };
        while let Some(front) = self.pending.front() {
            if front.seq > mark {
                break;
            }
            self.bytes -= front.frame.len();
            self.stats.superseded += 1;
            self.pending.pop_front();
        }
        self.sent_upto = self.sent_upto.max(mark);
    }

    /// Whether batches wait for this connection's first whole round.
    pub fn catching_up(&self) -> bool {
        self.catching_up
    }

    pub fn acked(&self) -> u64 {
        self.acked
    }

    pub fn pending_batches(&self) -> usize {
        self.pending.len()
    }

    pub fn pending_bytes(&self) -> usize {
        self.bytes
    }

    pub fn pending_deltas(&self) -> usize {
        self.pending.iter().map(|p| p.deltas).sum()
    }

    /// How long the oldest unacknowledged batch has waited: the peer's lag.
    pub fn lag_ms(&self, now_ms: u64) -> u64 {
        self.pending.front().map_or(0, |p| now_ms.saturating_sub(p.queued_at_ms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(n: usize) -> Bytes {
        Bytes::from(vec![0u8; n])
    }

    #[test]
    fn unacknowledged_batches_are_sent_again_after_a_reconnect() {
        let mut queue = PeerQueue::new(1 << 20);
        for seq in 1..=3 {
            queue.push(seq, frame(10), 1, 0);
        }
        queue.states_sent(true);
        assert!(queue.next_to_send().is_some());
        assert!(queue.next_to_send().is_some());
        queue.on_ack(1);
        queue.on_disconnect();
        queue.states_sent(true);
        let mut resent = 0;
        while queue.next_to_send().is_some() {
            resent += 1;
        }
        assert_eq!(resent, 2, "batches 2 and 3");
        queue.on_ack(3);
        assert_eq!(queue.pending_batches(), 0);
        assert_eq!(queue.pending_bytes(), 0);
    }

    #[test]
    fn each_connection_sends_no_batch_before_a_whole_rounds_states() {
        let mut plain = PeerQueue::new(1 << 20);
        plain.push(1, frame(10), 1, 0);
        plain.on_disconnect();
        assert!(plain.next_to_send().is_some(), "a queue made without catch-up never waits");
        let mut queue = PeerQueue::with_catch_up(1 << 20);
        queue.push(1, frame(10), 1, 0);
        assert!(queue.catching_up() && queue.next_to_send().is_none(), "a new queue's first connection");
        queue.states_sent(false);
        assert!(queue.next_to_send().is_none(), "a round cut at its bound caught the peer up only in part");
        queue.states_sent(true);
        assert!(queue.next_to_send().is_some());
        queue.push(2, frame(10), 1, 0);
        queue.on_disconnect();
        assert!(queue.next_to_send().is_none(), "the next connection catches up first too");
        queue.round_started();
        queue.push(3, frame(10), 1, 0);
        queue.states_sent(true);
        assert_eq!(queue.next_to_send().map(|f| f.len()), Some(10), "what was queued after the round started");
        assert!(queue.next_to_send().is_none(), "batches 1 and 2, unacknowledged, went with the round's states");
        assert_eq!((queue.pending_batches(), queue.stats.superseded), (1, 2));
        queue.on_ack(3);
        assert_eq!(queue.pending_bytes(), 0);
    }

    #[test]
    fn a_peer_too_far_behind_is_dropped_to_anti_entropy_and_memory_stays_bounded() {
        let mut queue = PeerQueue::new(100);
        queue.needs_anti_entropy = false;
        for seq in 1..=50 {
            queue.push(seq, frame(30), 1, seq);
            assert!(queue.pending_bytes() <= 100);
        }
        assert!(queue.needs_anti_entropy);
        assert!(queue.stats.overflows > 0);
        assert_eq!(queue.lag_ms(60), 60 - 49, "the oldest batch left is one of the last");
    }
}
