//! Group commit: which positions of the shards' delta streams a stored segment makes
//! durable, and whether a writer waits for deltas that no segment cut so far holds.
//!
//! Writers that must not be acknowledged before their deltas are stored (`--durability
//! sync`, WAITAOF) *request* a position per shard. While a request is above what has
//! been drained from the shards, the driver drains them at once; while it is above what
//! the segments cut so far hold, the streamer cuts the next segment at once
//! (`Streamer::flush_now`) instead of at the next flush interval. Whatever arrives while
//! a segment's PUT is in flight goes into the next segment together: one PUT per group
//! of writers, not per writer, so throughput grows with the number of waiting clients
//! and one writer's latency is about one PUT.
//!
//! Owns only bookkeeping over positions and segment numbers: no I/O, no clock, no
//! waiting. It must never claim a position stored before the segment holding it is
//! stored (`on_stored` publishes a cut's positions only once its segment is durable).

use std::collections::VecDeque;

/// Cut segments whose store is still awaited, at most. The streamer has one operation
/// in flight at a time, so one is the usual figure; the bound guards against a driver
/// that reports cuts without ever reporting them stored.
pub const MARKS_MAX: usize = 64;

#[derive(Debug)]
pub struct GroupCommit {
    /// Per shard: the stream position up to which deltas were handed to the streamer.
    drained: Vec<u64>,
    /// Per shard: the position up to which deltas are in segments already cut.
    cut: Vec<u64>,
    /// Per shard: the highest position any writer waits to see stored.
    requested: Vec<u64>,
    /// Per shard: the position up to which deltas are stored.
    stored: Vec<u64>,
    /// The last segment number whose cut was recorded (a retried PUT of the same
    /// segment is not a new cut).
    last_cut_seq: u64,
    /// (segment, per-shard positions it completes), oldest first: published when the
    /// segment is stored.
    marks: VecDeque<(u64, Vec<u64>)>,
}

impl GroupCommit {
    pub fn new(shards: usize) -> GroupCommit {
        assert!(shards > 0);
        GroupCommit {
            drained: vec![0; shards],
            cut: vec![0; shards],
            requested: vec![0; shards],
            stored: vec![0; shards],
            last_cut_seq: 0,
            marks: VecDeque::new(),
        }
    }

    /// Writers wait for these positions (per shard) to be stored. Requests only grow.
    pub fn request(&mut self, targets: &[u64]) {
        assert_eq!(targets.len(), self.requested.len(), "one target per shard");
        for (requested, target) in self.requested.iter_mut().zip(targets) {
            *requested = (*requested).max(*target);
        }
    }

    /// The streamer took a shard's deltas up to `through`.
    pub fn on_drained(&mut self, shard: usize, through: u64) {
        self.drained[shard] = self.drained[shard].max(through);
    }

    /// A waiter needs deltas the shards have not handed over yet: drain them now.
    pub fn wants_drain(&self) -> bool {
        self.requested.iter().zip(&self.drained).any(|(r, d)| r > d)
    }

    /// A waiter needs deltas no segment cut so far holds: cut one now.
    pub fn wants_flush(&self) -> bool {
        self.requested.iter().zip(&self.cut).any(|(r, c)| r > c)
    }

    /// Whether any writer waits for something not yet stored.
    pub fn has_waiters(&self) -> bool {
        self.requested.iter().zip(&self.stored).any(|(r, s)| r > s)
    }

    /// The streamer started storing segment `seq`; `took_everything` when that cut left
    /// nothing pending, so the segment completes every drained position.
    pub fn on_cut(&mut self, seq: u64, took_everything: bool) {
        if seq <= self.last_cut_seq {
            // The same segment again (a retry): it holds what it held the first time.
            return;
        }
        self.last_cut_seq = seq;
        if !took_everything {
            // A cut bounded by the entry limit: the positions it completes are unknown
            // at this granularity; the next cut that takes everything records them.
            return;
        }
        self.cut.clone_from(&self.drained);
        assert!(self.marks.len() < MARKS_MAX, "cut segments awaiting their store exceed {MARKS_MAX}");
        self.marks.push_back((seq, self.drained.clone()));
    }

    /// Segments up to `durable_seq` are stored: the positions they complete, if that
    /// moved any (then waiters should look again).
    pub fn on_stored(&mut self, durable_seq: u64) -> Option<&[u64]> {
        let mut advanced = false;
        while self.marks.front().is_some_and(|(seq, _)| *seq <= durable_seq) {
            let Some((_, positions)) = self.marks.pop_front() else { break };
            for (stored, position) in self.stored.iter_mut().zip(positions) {
                *stored = (*stored).max(position);
            }
            advanced = true;
        }
        advanced.then_some(self.stored.as_slice())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_waiter_asks_for_a_drain_then_a_cut_and_is_served_when_the_segment_is_stored() {
        let mut group = GroupCommit::new(2);
        assert!(!group.wants_drain() && !group.wants_flush() && !group.has_waiters());
        group.request(&[3, 0]);
        assert!(group.wants_drain() && group.wants_flush() && group.has_waiters());
        group.on_drained(0, 3);
        group.on_drained(1, 1);
        assert!(!group.wants_drain() && group.wants_flush());
        group.on_cut(1, true);
        assert!(!group.wants_flush(), "the segment in flight holds what the waiter needs");
        assert!(group.has_waiters(), "but it is not stored yet");
        assert_eq!(group.on_stored(0), None);
        assert_eq!(group.on_stored(1), Some(&[3u64, 1][..]));
        assert!(!group.has_waiters());
    }

    #[test]
    fn writes_arriving_during_a_put_go_into_the_next_segment_together() {
        let mut group = GroupCommit::new(1);
        group.request(&[1]);
        group.on_drained(0, 1);
        group.on_cut(1, true);
        // Three writers arrive while segment 1 is in flight.
        for target in [2, 4, 3] {
            group.request(&[target]);
        }
        assert!(group.wants_drain() && group.wants_flush());
        group.on_drained(0, 4);
        assert_eq!(group.on_stored(1), Some(&[1u64][..]));
        assert!(group.wants_flush(), "the three need one more segment");
        group.on_cut(2, true);
        assert!(!group.wants_flush());
        assert_eq!(group.on_stored(2), Some(&[4u64][..]));
        assert!(!group.has_waiters());
    }

    #[test]
    fn a_retried_put_is_not_a_new_cut() {
        let mut group = GroupCommit::new(1);
        group.on_drained(0, 2);
        group.on_cut(1, true);
        // More was drained while segment 1 failed and is retried: the retry still holds
        // only position 2.
        group.on_drained(0, 5);
        group.on_cut(1, true);
        assert_eq!(group.on_stored(1), Some(&[2u64][..]));
        group.request(&[5]);
        assert!(group.wants_flush(), "position 5 is in no segment yet");
    }

    #[test]
    fn a_cut_that_leaves_deltas_pending_claims_nothing() {
        let mut group = GroupCommit::new(1);
        group.on_drained(0, 9);
        group.on_cut(1, false);
        assert_eq!(group.on_stored(1), None, "segment 1 holds only part of what was drained");
        group.on_cut(2, true);
        assert_eq!(group.on_stored(2), Some(&[9u64][..]));
    }
}
