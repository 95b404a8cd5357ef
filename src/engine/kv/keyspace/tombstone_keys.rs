//! The live keys noted as holding element tombstones: what tombstone GC visits besides
//! key tombstones. A superset: a key that lost its tombstones since it was noted is
//! skipped by the visit.
//!
//! Every store of a state with element tombstones notes its key, and a queue's pops
//! with peers down store one on every pop: looking the key up in the set each time
//! (hash, probe, compare) was ~300 instructions of such an LPOP's ~7,000 (callgrind,
//! 2026-12-04). The key noted last is remembered, so the same key again costs a
//! compare of its bytes.
//!
//! Must never: forget a noted key before [`TombstoneKeys::take`] hands it over, or
//! remember a key as noted that the set does not hold.

use bytes::Bytes;

pub(super) struct TombstoneKeys {
    set: hashbrown::HashSet<Bytes, foldhash::fast::FixedState>,
    /// The key noted last (its bytes in a buffer reused from one to the next), with
    /// its keyspace hash, while the set holds it.
    last: Option<u64>,
    last_key: Vec<u8>,
}

impl TombstoneKeys {
    pub(super) fn new(seed: u64) -> TombstoneKeys {
        TombstoneKeys {
            set: hashbrown::HashSet::with_hasher(foldhash::fast::FixedState::with_seed(seed)),
            last: None,
            last_key: Vec::new(),
        }
    }

    /// Note `key` (keyspace hash `hash`) as holding element tombstones.
    pub(super) fn note(&mut self, key: &[u8], hash: u64) {
        if self.last == Some(hash) && crate::engine::bytes_eq::same_bytes(&self.last_key, key) {
            debug_assert!(self.set.contains(key));
            return;
        }
        self.set.get_or_insert_with(key, Bytes::copy_from_slice);
        self.last = Some(hash);
        self.last_key.clear();
        self.last_key.extend_from_slice(key);
    }

    /// Every noted key, handed over; the set starts empty again.
    pub(super) fn take(&mut self) -> Vec<Bytes> {
        self.last = None;
        self.set.drain().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_noted_again_is_handed_over_once_and_forgotten_after() {
        let mut keys = TombstoneKeys::new(7);
        for _ in 0..3 {
            keys.note(b"queue", 1);
        }
        keys.note(b"other", 2);
        keys.note(b"queue", 1);
        // Same hash, other bytes: a key of its own.
        keys.note(b"queux", 1);
        let mut taken = keys.take();
        taken.sort();
        assert_eq!(taken, vec![Bytes::from_static(b"other"), Bytes::from_static(b"queue"), Bytes::from_static(b"queux")]);
        // After the hand-over, the remembered key is noted again.
        keys.note(b"queue", 1);
        assert_eq!(keys.take(), vec![Bytes::from_static(b"queue")]);
        assert!(keys.take().is_empty());
    }
}
