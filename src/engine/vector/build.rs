//! Index builds in bounded steps: an index built over data that already exists
//! (FT.CREATE over existing keys, the first FT.* after a restart, a flush, a
//! compaction) indexes at most `keys_per_step` keys per shard step, so a build of
//! 100,000 documents never stalls the shard for the whole of it.
//!
//! Owns the build cursors. A build takes the sorted list of the keys its definition
//! covers when it starts (key clones only: no parsing, no vectors) and walks it step
//! by step, re-reading each key's hash when it reaches it. Writes during the build are
//! followed as always (`VectorEngine::follow`) and reindexing is idempotent, so the
//! index at the end is a function of the data at the end. A first build serves
//! queries over what it has indexed so far (as RediSearch does, with FT.INFO's
//! `indexing` 1); a compaction builds a shadow index while the old one keeps serving,
//! and swaps it in when done. Never does I/O or reads a clock.

use bytes::Bytes;

use super::index::Index;
use super::{DEF_KEY_PREFIX, hash_reader};
use crate::engine::kv::{KvEngine, key_hash};

/// Keys an index build indexes per shard step. An HNSW insert of a 384-dimension
/// vector at EF_CONSTRUCTION 200 costs tens of microseconds, so a step stays within a
/// few milliseconds to tens of milliseconds.
pub const BUILD_KEYS_PER_STEP: usize = 256;

pub struct Build {
    /// The keys to index, in key order (so that a rebuild on any node inserts alike).
    keys: Vec<Bytes>,
    next: usize,
    /// A compaction's replacement, built beside the index that keeps serving; `None`:
    /// the build fills the live index itself.
    pub shadow: Option<Index>,
}

impl Build {
    /// Start a build of `index`'s definition over the keys `kv` holds now.
    pub fn start(index: &Index, kv: &KvEngine, shadow: Option<Index>) -> Build {
        let mut keys: Vec<Bytes> = kv
            .keys
            .iter()
            .map(|e| e.key())
            .filter(|k| !k.starts_with(DEF_KEY_PREFIX) && index.def.covers(k))
            .map(Bytes::copy_from_slice)
            .collect();
        keys.sort_unstable();
        Build { keys, next: 0, shadow }
    }

    /// (keys indexed so far, keys to index in all).
    pub fn progress(&self) -> (usize, usize) {
        (self.next, self.keys.len())
    }

    pub fn is_done(&self) -> bool {
        self.next >= self.keys.len()
    }

    /// Index up to `keys_max` more keys into `live` (or into the shadow, if any).
    pub fn step(&mut self, live: &mut Index, kv: &KvEngine, keys_max: usize) {
        assert!(keys_max > 0, "a build step must make progress");
        let end = self.keys.len().min(self.next + keys_max);
        let target = self.shadow.as_mut().unwrap_or(live);
        for key in &self.keys[self.next..end] {
            let hash = key_hash(key);
            let state = kv.keys.get(key, hash).map(|e| e.state());
            // A key gone since the build started is left out (or removed: a write
            // during the build may have indexed it, and its delete was followed too).
            let reader = hash_reader(state);
            target.reindex(key, hash, reader.as_ref().map(|r| r as &dyn Fn(&[u8]) -> Option<Bytes>));
        }
        self.next = end;
        debug_assert!(self.next <= self.keys.len());
    }
}

/// Index every key of `kv` the definition covers, in one go (the audit's reference,
/// and tests).
pub fn build_whole(index: &mut Index, kv: &KvEngine) {
    let mut build = Build::start(index, kv, None);
    while !build.is_done() {
        build.step(index, kv, BUILD_KEYS_PER_STEP);
    }
}
