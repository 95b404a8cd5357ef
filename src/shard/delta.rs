//! The bounded log of deltas a shard produced: what replication and the persistence
//! streamer consume. When nothing consumes deltas (a lone node without persistence)
//! the log does not record, so it costs nothing; when something does and falls
//! behind, the log fills to its bound and the shard refuses writes with a clear error
//! instead of growing without limit.

use std::collections::VecDeque;

use bytes::Bytes;

use crate::crdt::{Dot, VersionVector};
use crate::engine::kv::{DeltaSink, KeyState};
use crate::shard::routing::ShardScope;

/// One change to ship: a key's new state, or a whole-shard flush. A flush carries the
/// causal context it had seen and the keys it covered (its shard), so it removes exactly
/// that (observed-remove at database level): writes it had not seen survive it,
/// wherever and in whatever order it lands.
#[derive(Clone, Debug, PartialEq)]
pub enum Delta {
    Key {
        key: Bytes,
        state: KeyState,
    },
    Flush {
        seen: VersionVector,
        scope: ShardScope,
    },
    /// Tombstones covered by `below` were dropped as causally stable: from here on a
    /// state arriving for an absent key loses every write `below` covers (this node had
    /// seen those writes and removed them). Local only: never sent to a peer.
    Forget {
        below: VersionVector,
    },
}

impl Delta {
    /// The newest stamp the delta carries (what a clock must move past).
    pub fn max_hlc(&self) -> crate::crdt::Hlc {
        match self {
            Delta::Key { state, .. } => state.max_hlc(),
            Delta::Flush { seen, .. } => seen.max_hlc(),
            Delta::Forget { below } => below.max_hlc(),
        }
    }

    pub fn approx_bytes(&self) -> usize {
        match self {
            Delta::Key { key, state } => key.len() + state.approx_bytes(),
            Delta::Flush { seen, .. } | Delta::Forget { below: seen } => seen.len() * std::mem::size_of::<Dot>(),
        }
    }
}

#[derive(Debug)]
pub struct DeltaLog {
    queue: VecDeque<Delta>,
    bytes: usize,
    entries_max: usize,
    bytes_max: usize,
    recording: bool,
    /// Deltas produced since start, recorded or not.
    pub produced: u64,
    /// Deltas drained since start: a position in this shard's delta stream.
    drained_total: u64,
}

impl DeltaLog {
    pub fn new(recording: bool, entries_max: usize, bytes_max: usize) -> DeltaLog {
        assert!(entries_max > 0 && bytes_max > 0);
        DeltaLog { queue: VecDeque::new(), bytes: 0, entries_max, bytes_max, recording, produced: 0, drained_total: 0 }
    }

    pub fn is_recording(&self) -> bool {
        self.recording
    }

    /// Whether one more write may be admitted.
    pub fn has_room(&self) -> bool {
        !self.recording || (self.queue.len() < self.entries_max && self.bytes < self.bytes_max)
    }

    pub fn len(&self) -> usize {
        self.queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Position of the newest recorded delta in this shard's stream: once everything
    /// drained up to here is stored, every write made so far is durable.
    pub fn recorded_total(&self) -> u64 {
        self.drained_total + self.queue.len() as u64
    }

    /// Position up to which deltas were drained.
    pub fn drained_total(&self) -> u64 {
        self.drained_total
    }

    /// Take up to `max` deltas, oldest first.
    pub fn drain(&mut self, max: usize) -> Vec<Delta> {
        let n = max.min(self.queue.len());
        let out: Vec<Delta> = self.queue.drain(..n).collect();
        self.drained_total += out.len() as u64;
        for delta in &out {
            self.bytes -= delta.approx_bytes();
        }
        debug_assert!(self.queue.is_empty() == (self.bytes == 0));
        out
    }

    /// Record that tombstones under `below` were dropped (see [`Delta::Forget`]).
    pub fn forgot(&mut self, below: &VersionVector) {
        self.push(Delta::Forget { below: below.clone() });
    }

    fn push(&mut self, delta: Delta) {
        self.produced += 1;
        if !self.recording {
            return;
        }
        // A write admitted with room left may overshoot the bound by its own deltas
        // (a multi-key command); the next write is then refused.
        self.bytes += delta.approx_bytes();
        self.queue.push_back(delta);
    }
}

impl DeltaSink for DeltaLog {
    fn key_changed(&mut self, key: &Bytes, state: &KeyState) {
        if self.recording {
            self.push(Delta::Key { key: key.clone(), state: state.clone() });
        } else {
            self.produced += 1;
        }
    }

    fn flushed(&mut self, seen: &VersionVector, scope: ShardScope) {
        self.push(Delta::Flush { seen: seen.clone(), scope });
    }
}
