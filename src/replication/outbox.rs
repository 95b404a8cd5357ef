//! A shard's outbox: the local writes since the last replication batch.
//!
//! Deltas are whole key states, so a newer state of a key supersedes the older one:
//! the outbox keeps one entry per key and a batch carries each written key once, however
//! often it was written in the batch window (DESIGN §6, "merged at the sender"). Only
//! local writes enter it; states merged from peers never do, so nothing is echoed back.
//! It is bounded: past its byte bound it drops everything and says so, and the peers are
//! then repaired by anti-entropy instead of by unbounded memory.

use bytes::Bytes;

use crate::crdt::VersionVector;
use crate::engine::kv::KeyState;
use crate::shard::Delta;
use crate::shard::routing::ShardScope;

type KeyMap = hashbrown::HashMap<Bytes, KeyState, foldhash::fast::RandomState>;

#[derive(Debug, Default)]
pub struct Outbox {
    keys: KeyMap,
    flushes: Vec<(VersionVector, ShardScope)>,
    bytes: usize,
    bytes_max: usize,
    /// Set when the bound dropped deltas; cleared by the next drain.
    overflowed: bool,
    /// Times the bound was hit since start.
    pub overflows: u64,
}

/// What one drain hands to the replicator.
#[derive(Clone, Debug, PartialEq)]
pub struct OutboxBatch {
    pub deltas: Vec<Delta>,
    /// Deltas were dropped since the last drain: peers need anti-entropy.
    pub overflowed: bool,
}

impl Outbox {
    pub fn new(bytes_max: usize) -> Outbox {
        assert!(bytes_max > 0);
        Outbox { bytes_max, ..Default::default() }
    }

    pub fn len(&self) -> usize {
        self.keys.len() + self.flushes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }

    pub fn key_changed(&mut self, key: &Bytes, state: &KeyState) {
        let size = key.len() + state.approx_bytes();
        match self.keys.get_mut(key.as_ref()) {
            Some(old) => {
                self.bytes = self.bytes - old.approx_bytes() + state.approx_bytes();
                *old = state.clone();
            }
            None => {
                // Sinks get owned keys (see `DeltaSink`): keeping it is a reference count.
                self.keys.insert(key.clone(), state.clone());
                self.bytes += size;
            }
        }
        self.enforce_bound();
    }

    pub fn flushed(&mut self, seen: &VersionVector, scope: ShardScope) {
        self.bytes += seen.len() * 16;
        self.flushes.push((seen.clone(), scope));
        self.enforce_bound();
    }

    fn enforce_bound(&mut self) {
        if self.bytes > self.bytes_max {
            self.keys = KeyMap::default();
            self.flushes.clear();
            self.bytes = 0;
            self.overflowed = true;
            self.overflows += 1;
        }
    }

    /// Everything written since the last drain, each key once.
    pub fn drain(&mut self) -> OutboxBatch {
        let mut deltas: Vec<Delta> = self.flushes.drain(..).map(|(seen, scope)| Delta::Flush { seen, scope }).collect();
        deltas.extend(self.keys.drain().map(|(key, state)| Delta::Key { key, state }));
        self.bytes = 0;
        OutboxBatch { deltas, overflowed: std::mem::take(&mut self.overflowed) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crdt::{Dot, Hlc};
    use crate::engine::kv::StrVal;

    fn state(ms: u64) -> KeyState {
        KeyState::with_value(Dot::new(Hlc::from_parts(ms, 0), 1), StrVal::Int(ms as i64), None)
    }

    #[test]
    fn a_key_written_twice_in_a_window_is_sent_once_with_its_newest_state() {
        let mut outbox = Outbox::new(1 << 20);
        let key = Bytes::from_static(b"k");
        outbox.key_changed(&key, &state(1));
        outbox.key_changed(&key, &state(2));
        let batch = outbox.drain();
        assert_eq!(batch.deltas, vec![Delta::Key { key, state: state(2) }]);
        assert!(!batch.overflowed);
        assert!(outbox.drain().deltas.is_empty());
    }

    #[test]
    fn past_its_bound_the_outbox_drops_everything_and_reports_it_once() {
        let mut outbox = Outbox::new(1000);
        for i in 0..100u64 {
            outbox.key_changed(&Bytes::from(format!("key{i}")), &state(i));
        }
        assert!(outbox.bytes() <= 1000);
        assert!(outbox.overflows >= 1);
        assert!(outbox.drain().overflowed);
        assert!(!outbox.drain().overflowed);
    }
}
