//! What a shard exchanges with the rest of the node beyond commands: the checkpoint's
//! scan, a batch of local writes for the peers, Merkle leaves' states for anti-entropy,
//! deltas merged from a peer, and tombstone collection. Part of [`Shard`]: the same
//! deterministic state machine, no I/O; the shell's replication and persistence
//! drivers (and the simulator) send the ops that land here.

use bytes::Bytes;

use super::{Shard, ShardReply};
use crate::crdt::{Hlc, VersionVector};
use crate::delta::Delta;
use crate::delta::outbox::OutboxBatch;
use crate::engine::kv::{DeltaSink, key_hash};

impl Shard {
    /// One chunk of a checkpoint's scan from `cursor`, at most `count` keys; the last
    /// chunk also carries the tombstones and the collected-tombstone records.
    pub(super) fn export_chunk(&mut self, cursor: u64, count: usize) -> ShardReply {
        // No tombstone is collected while a checkpoint reads this shard: a key
        // whose tombstone went after the checkpoint began but before the scan
        // reached it would be in neither the checkpoint nor (as a collection
        // the checkpoint's record covers) replayed in order with the segments
        // after it, and a stale copy of it there would come back to life.
        self.checkpoint_scan_open = true;
        let mut deltas = Vec::new();
        let next = self.kv.keys.scan(cursor.min(crate::engine::kv::keyspace::SLOT_SPACE - 1), count, |e| {
            deltas.push(Delta::Key { key: e.key_to_bytes(), state: e.state().clone() })
        });
        // The last chunk also carries the tombstones: a checkpoint replaces the
        // segments before it, and a delete must outlive them.
        if next == crate::engine::kv::keyspace::SLOT_SPACE {
            self.checkpoint_scan_open = false;
            deltas.extend(self.kv.keys.tombstones().map(|(key, state)| Delta::Key { key: key.clone(), state: state.clone() }));
            // So must what collected tombstones covered: after this shard's
            // keys, for this shard's keys only (`Delta::Forget`). A checkpoint
            // is taken after replay, so replayed records count for every key.
            self.kv.settle_replayed_forgets();
            // The tombstones the last collection spared are among the states
            // above, and loading this must keep them as that collection did.
            let scope = self.kv.scope;
            let spared = self.kv.spared().to_vec();
            let forgotten = self.kv.forgotten().clone();
            if !forgotten.is_empty() {
                deltas.push(Delta::Forget { below: forgotten, spared: spared.clone(), elements: false, scope });
            }
            let forgotten_elements = self.kv.forgotten_elements().clone();
            if !forgotten_elements.is_empty() {
                deltas.push(Delta::Forget { below: forgotten_elements, spared, elements: true, scope });
            }
        }
        ShardReply::Chunk { deltas, next }
    }

    /// Tombstone GC: drop the tombstones `stable` covers but those holding a counter
    /// of a node in `spared`, and record that they went.
    pub(super) fn forget_stable(&mut self, stable: &VersionVector, spared: &[crate::crdt::NodeId]) -> ShardReply {
        if self.checkpoint_scan_open {
            return ShardReply::Count(0); // the next collection round runs it
        }
        let (keys, elements) = self.kv.forget_stable(stable, spared);
        if self.deltas.is_recording() {
            let scope = self.kv.scope;
            if keys > 0 {
                self.deltas.forgot(stable, spared, false, scope);
            }
            if elements > 0 {
                self.deltas.forgot(stable, spared, true, scope);
            }
        }
        ShardReply::Count((keys + elements) as i64)
    }

    /// The local writes since the last drain, for the next replication batch; the
    /// clock first moves up to `floor` and to now.
    pub(super) fn drain_outbox(&mut self, floor: Hlc, now_ms: u64) -> ShardReply {
        let batch = self.outbox.as_mut().map_or(OutboxBatch { deltas: Default::default(), overflowed: false }, |o| o.drain());
        // An idle shard's clock moves up to now (and to the other shards'), so
        // `stable` keeps up with time; every later local write is stamped above it.
        self.clock.witness(Hlc::from_parts(now_ms.saturating_sub(1), u16::MAX).max(floor));
        ShardReply::Outbox { batch, stable: self.clock.last(), recorded: self.deltas.recorded_total() }
    }

    /// Every key state in `leaves`, for a peer's anti-entropy, and after them this
    /// shard's records of what it has forgotten, read in the same step (so that they
    /// never cover a write merged after the states were read): the peer removes what
    /// they cover from keys and elements these states leave out (`shard::absence`).
    pub(super) fn export_leaves(&self, leaves: Vec<u16>) -> ShardReply {
        let mut deltas = Vec::new();
        for leaf in leaves {
            self.kv
                .keys
                .for_each_in_leaf(leaf, |key, state| deltas.push(Delta::Key { key: Bytes::copy_from_slice(key), state: state.clone() }));
        }
        let scope = self.kv.scope;
        for (below, elements) in [(self.kv.forgotten(), false), (self.kv.forgotten_elements(), true)] {
            if !below.is_empty() {
                // The peer reads only what they cover (`shard::absence`): what a
                // collection spared matters to this node's own replay, not to it.
                deltas.push(Delta::Forget { below: below.clone(), spared: Vec::new(), elements, scope });
            }
        }
        ShardReply::Deltas(deltas)
    }

    /// A peer's anti-entropy states of `leaves`: merged with the removals its forget
    /// records imply here (`shard::absence`).
    pub(super) fn merge_leaves(&mut self, leaves: Vec<u16>, mut deltas: Vec<Delta>, now_ms: u64) -> ShardReply {
        let removals = self.add_absence_removals(&leaves, &mut deltas);
        let own_lost = self.own_writes_lacked(&deltas);
        let reply = self.merge_remote(deltas, now_ms);
        if matches!(reply, ShardReply::Count(_)) {
            self.absence_removals += removals as u64;
            self.ship_own_writes_back(own_lost);
        }
        reply
    }

    /// The keys of `deltas` (a peer's anti-entropy states) holding a write of this
    /// node newer than any this node holds of the key or has forgotten (collected the
    /// tombstone of), each with the stamp of it: a write a crash lost here after it had
    /// reached that peer (docs/replication.md, "Writes a crash lost locally"). Peers
    /// never forward each other's writes, so a peer that had not received it before
    /// the crash gets it only from here.
    fn own_writes_lacked(&self, deltas: &[Delta]) -> Vec<(Bytes, Hlc)> {
        let me = self.config.node_id;
        // A write of this node removed here and its tombstone collected is not lacked.
        let forgotten = self.kv.forgotten_any().get(me);
        let mut lacked = Vec::new();
        for delta in deltas {
            let Delta::Key { key, state } = delta else { continue };
            let theirs = state.causal_context().get(me);
            if theirs <= forgotten {
                continue;
            }
            if self.own_stamp_held(key) < theirs {
                lacked.push((key.clone(), theirs));
            }
        }
        lacked
    }

    /// The latest stamp of this node's writes that the key's state here holds.
    fn own_stamp_held(&self, key: &[u8]) -> Hlc {
        let state = self.kv.keys.state_or_tombstone(key, key_hash(key));
        state.map_or(Hlc::ZERO, |s| s.causal_context().get(self.config.node_id))
    }

    /// After `own_writes_lacked`'s states merged: ship the keys that hold those writes
    /// again to every peer, as this node's writes (its whole state of each such key: a
    /// merge may have filtered what the peer sent, and what is shipped must be what is
    /// held here). Rare: only after a crash lost acknowledged writes.
    fn ship_own_writes_back(&mut self, lacked: Vec<(Bytes, Hlc)>) {
        let Some(outbox) = self.outbox.as_mut() else { return };
        for (key, stamp) in lacked {
            let Some(state) = self.kv.keys.state_or_tombstone(&key, key_hash(&key)) else { continue };
            if state.causal_context().get(self.config.node_id) < stamp {
                continue; // filtered here: removed, and its removal collected
            }
            outbox.key_changed(&key, state);
            self.own_writes_shipped_back += 1;
        }
    }

    /// Join deltas received from a peer: the clock moves past their stamps (counting
    /// those too far ahead), and they are recorded for persistence (this node's store
    /// holds everything it holds) but never put in the outbox (no echo; only
    /// `merge_leaves` ships again an own write a crash had lost here). Refused whole
    /// while persistence can't keep up (the deltas come back: `MergeRefused`).
    pub(super) fn merge_remote(&mut self, deltas: Vec<Delta>, now_ms: u64) -> ShardReply {
        if !self.deltas.has_room() {
            return ShardReply::MergeRefused(deltas);
        }
        let count = deltas.len();
        let mut watch = self.merge_watch();
        for delta in deltas {
            if matches!(delta, Delta::Forget { .. }) {
                // What this node may forget is its own decision, never a peer's.
                continue;
            }
            if let (Some(watch), Delta::Key { key, .. }) = (watch.as_mut(), &delta) {
                self.watch_merge(watch, key);
            }
            self.clock.observe(delta.max_hlc(), now_ms, self.config.max_clock_skew_ms);
            if self.deltas.is_recording() {
                match &delta {
                    Delta::Key { key, state } => self.deltas.key_changed(key, state),
                    Delta::Flush { seen, scope } => self.deltas.flushed(seen, *scope),
                    Delta::Forget { .. } => {}
                }
            }
            if crate::bugs::active(crate::bugs::Bug::ReplicationEchoes)
                && let (Some(outbox), Delta::Key { key, state }) = (self.outbox.as_mut(), &delta)
            {
                outbox.key_changed(key, state);
            }
            self.merge_into_kv(delta);
        }
        self.remote_deltas_merged += count as u64;
        if self.vector.is_tracking() {
            self.vector.follow_merged(&mut self.kv);
        }
        if let Some(watch) = watch {
            self.raise_merged(watch);
        }
        ShardReply::Count(self.deltas.recorded_total() as i64)
    }
}
