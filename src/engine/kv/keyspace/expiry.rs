//! The expiry index of [`super::Keyspace`]: a min-heap of (instant, key) for the keys
//! with a TTL, kept within twice their number (stale entries, left by a changed or
//! removed TTL, are dropped when popped or by a rebuild). Part of [`super::Keyspace`].
//!
//! Must never: decide that a key expired (the caller checks the key's own TTL against
//! its clock), or hold more than [`Keyspace::expiry_index_bound`] entries.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use bytes::Bytes;

use super::{EXPIRY_HEAP_SLACK, Keyspace, key_hash};

impl Keyspace {
    pub(super) fn track_expiry(&mut self, key: Bytes, old: Option<u64>, new: Option<u64>) {
        match (old, new) {
            (None, Some(_)) => self.expiring += 1,
            (Some(_), None) => self.expiring -= 1,
            _ => {}
        }
        self.expiry_sum_ms = self.expiry_sum_ms + u128::from(new.unwrap_or(0)) - u128::from(old.unwrap_or(0));
        if let Some(at_ms) = new
            && old != new
        {
            self.expiry_heap.push(Reverse((at_ms, key)));
            if self.expiry_heap.len() > 2 * self.expiring + EXPIRY_HEAP_SLACK {
                self.rebuild_expiry_heap();
            }
        }
    }

    fn rebuild_expiry_heap(&mut self) {
        let live: Vec<Reverse<(u64, Bytes)>> = self
            .tables
            .iter()
            .flat_map(|t| t.iter())
            .filter_map(|e| e.state().expire_at_ms().map(|at| Reverse((at, e.key_to_bytes()))))
            .collect();
        debug_assert_eq!(live.len(), self.expiring);
        debug_assert_eq!(live.iter().map(|Reverse((at, _))| u128::from(*at)).sum::<u128>(), self.expiry_sum_ms);
        self.expiry_heap = BinaryHeap::from(live);
    }

    /// Keys whose expiry instant is at or before `now_ms`, at most `limit` of them,
    /// taken off the expiry index. Stale index entries are dropped on the way.
    pub fn pop_expired(&mut self, now_ms: u64, limit: usize) -> Vec<Bytes> {
        let mut due = Vec::new();
        while due.len() < limit {
            let Some(Reverse((at_ms, _))) = self.expiry_heap.peek() else { break };
            if *at_ms > now_ms {
                break;
            }
            let Some(Reverse((at_ms, key))) = self.expiry_heap.pop() else { break };
            let hash = key_hash(&key);
            if self.get(&key, hash).is_some_and(|e| e.state().expire_at_ms() == Some(at_ms)) {
                due.push(key);
            }
        }
        due
    }

    /// Whether some key is already due to expire.
    pub fn has_due_expiry(&self, now_ms: u64) -> bool {
        self.expiry_heap.peek().is_some_and(|Reverse((at, _))| *at <= now_ms)
    }

    /// Heap entries in the expiry index (for the bound assertions in tests).
    pub fn expiry_index_len(&self) -> usize {
        self.expiry_heap.len()
    }

    /// The most entries the expiry index may hold (twice the keys with a TTL, plus slack).
    pub fn expiry_index_bound(&self) -> usize {
        2 * self.expiring + EXPIRY_HEAP_SLACK + 1
    }
}
