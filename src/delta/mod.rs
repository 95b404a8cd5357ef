//! Deltas: the unit of change that shards produce and that persistence and
//! replication carry (DESIGN §1, §6, §7), with their byte codec and the two per-shard
//! buffers that collect them.
//!
//! This layer sits beneath the shard, persistence and replication, which each depend on
//! it and on nothing of one another's: a write's path is shard → (delta log | outbox)
//! here → streamer (persistence) or batcher (replication). It depends only on the CRDT
//! types and the key-value engine's key state. Pure data and encodings: no I/O, no
//! clock.
//!
//! - [`Delta`]: a key's new state, a shard's flush, or a tombstone collection.
//! - [`EncodedDeltas`]: deltas already in their stored encoding (a segment body).
//! - [`codec`]: the byte encoding shared by segments, checkpoints and the wire.
//! - [`log`]: a shard's bounded log of deltas for the persistence streamer.
//! - [`outbox`]: a shard's local writes since the last replication batch.
//! - [`outgoing`]: encoded deltas on their way to the peers.

pub mod codec;
pub mod log;
pub mod outbox;
pub mod outgoing;

use bytes::Bytes;

use crate::crdt::{Hlc, VersionVector};
use crate::engine::kv::KeyState;
use crate::routing::ShardScope;
use codec::{DecodeError, Writer};
pub use log::DeltaLog;

/// Entries one segment object may hold: a drain of a shard's delta log must fit in one
/// (the log's bound is checked against it), and a segment header claiming more is
/// refused when read.
pub const SEGMENT_ENTRIES_MAX: u32 = 1 << 24;

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
    /// seen those writes and removed them). Never sent to a peer in a batch; a shard's
    /// anti-entropy states end with its records, and the peer removes what they cover
    /// from the keys and elements the states leave out (`shard::absence`), never
    /// collects anything by them.
    Forget {
        below: VersionVector,
        /// The nodes whose counters the collection spared: the peers it left out
        /// (`engine::kv::tombstone_gc`). Sorted, and empty in every record written
        /// before it existed.
        spared: Vec<crate::crdt::NodeId>,
        /// Element tombstones (of collections) were collected, not key tombstones.
        elements: bool,
        /// The shard that collected them. Replay applies the record to that shard's
        /// keys only: a stored stream interleaves the shards' logs, so another shard's
        /// keys may not have been replayed up to the moment it was recorded (records
        /// written before scopes existed read as `ShardScope::ALL`).
        scope: ShardScope,
    },
}

impl Delta {
    /// The newest stamp the delta carries (what a clock must move past).
    pub fn max_hlc(&self) -> crate::crdt::Hlc {
        match self {
            Delta::Key { state, .. } => state.max_hlc(),
            Delta::Flush { seen, .. } => seen.max_hlc(),
            Delta::Forget { below, .. } => below.max_hlc(),
        }
    }

    /// The newest stamp of `node` the delta carries (ZERO if it holds none of that
    /// node's writes): what the stamp reservation decides on for this node's own.
    pub fn newest_stamp_of(&self, node: crate::crdt::NodeId) -> Hlc {
        match self {
            Delta::Key { state, .. } => state.newest_stamp_of(node),
            Delta::Flush { seen, .. } => seen.get(node),
            Delta::Forget { .. } => Hlc::ZERO,
        }
    }
}

/// Deltas already in their stored encoding: entries of a segment body
/// (`delta::codec`), with how many there are and the range of stamps they carry.
/// What a shard's log records and a drain hands the streamer: bytes, so that nothing
/// the shard owns (a key's reference count, a state's allocations) is shared with the
/// persistence thread, and no state is copied or encoded twice.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EncodedDeltas {
    pub body: Vec<u8>,
    pub entries: usize,
    /// Smallest and largest stamp of the entries (both `Hlc::ZERO` when empty).
    pub hlc_min: Hlc,
    pub hlc_max: Hlc,
}

/// How far past its end a growing buffer of deltas is prefetched (see [`prefetch_ahead`]).
const PREFETCH_AHEAD_BYTES: usize = 512;

/// Ask for the two cache lines a few deltas past the end of `body`, which the next
/// deltas will be written into. A busy shard's delta log takes tens of megabytes
/// between two drains, far more than the caches hold, so each line it is written into
/// is first read from memory; without the hint the encoder's stores wait for those
/// reads (the samples of a pipelined SET with persistence on pile up on the encoder's
/// byte stores). Two lines a delta cover deltas of up to 128 bytes; longer runs of
/// bytes are the hardware prefetcher's. Nothing is asked past the buffer's capacity.
#[inline(always)]
fn prefetch_ahead(body: &Vec<u8>) {
    let ahead = body.len() + PREFETCH_AHEAD_BYTES;
    if ahead + 64 < body.capacity() {
        let at = body.as_ptr().wrapping_add(ahead);
        crate::engine::prefetch::prefetch(at);
        crate::engine::prefetch::prefetch(at.wrapping_add(64));
    }
}

impl EncodedDeltas {
    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// Append one delta (checkpoints, tests, and the log's rare kinds).
    pub fn push(&mut self, delta: &Delta) {
        self.push_with(delta.max_hlc(), |w| codec::write_delta(w, delta));
    }

    fn push_with(&mut self, hlc: Hlc, write: impl FnOnce(&mut Writer)) {
        Writer::append_to(&mut self.body, write);
        prefetch_ahead(&self.body);
        self.hlc_min = if self.entries == 0 { hlc } else { self.hlc_min.min(hlc) };
        self.hlc_max = self.hlc_max.max(hlc);
        self.entries += 1;
    }

    /// The entries as deltas again (tests, the simulator's planted bugs).
    pub fn decode(&self) -> Result<Vec<Delta>, DecodeError> {
        codec::read_deltas_exact(self.entries, &self.body)
    }

    pub fn from_deltas(deltas: &[Delta]) -> EncodedDeltas {
        let mut encoded = EncodedDeltas::default();
        deltas.iter().for_each(|d| encoded.push(d));
        encoded
    }
}
