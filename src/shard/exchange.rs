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
use crate::engine::kv::{DeltaSink, KeyState, key_hash};

/// How long after its first merge from a peer a replayed shard looks for writes of its
/// own that a crash lost (local milliseconds): the rounds a restarted node has with
/// each peer on connecting are long over by then; a later one is a periodic round's.
const LOST_WRITES_WINDOW_MS: u64 = 60_000;

/// Keys that may hold a write a crash lost here, each with its stamp and the state held
/// here before a round's merge (`Shard::own_writes_lacked`).
type Suspects = Vec<(Bytes, Hlc, Option<KeyState>)>;

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
        let rounds_wanted = std::mem::take(&mut self.stale_copies_possible);
        ShardReply::Outbox { batch, stable: self.clock.last(), recorded: self.deltas.recorded_total(), rounds_wanted }
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
        let (mut own_lost, suspects) = self.own_writes_lacked(&deltas, now_ms);
        let reply = self.merge_remote(deltas, now_ms);
        if matches!(reply, ShardReply::Count(_)) {
            self.absence_removals += removals.keys as u64;
            self.stale_copies_possible |= removals.of_live;
            // A suspect whose state this round changed may have brought the write.
            for (key, stamp, before) in suspects {
                if self.kv.keys.state_or_tombstone(&key, key_hash(&key)) != before.as_ref() {
                    own_lost.push((key, stamp));
                }
            }
            self.ship_own_writes_back(own_lost);
        }
        reply
    }

    /// The newest own stamp this shard replayed, while it still looks for writes a
    /// crash lost after those (`LOST_WRITES_WINDOW_MS` from its first merge from a peer).
    fn after_replay(&mut self, now_ms: u64) -> Option<Hlc> {
        let replayed = self.replayed_own_newest?;
        let until = *self.lost_writes_until_ms.get_or_insert(now_ms.saturating_add(LOST_WRITES_WINDOW_MS));
        (now_ms < until).then_some(replayed)
    }

    /// The keys of `deltas` (a peer's anti-entropy states) holding a write of this
    /// node newer than any this node holds of the key or has forgotten (collected the
    /// tombstone of), each with the stamp of it: a write a crash lost here after it had
    /// reached that peer (docs/replication.md, "Writes a crash lost locally"). Peers
    /// never forward each other's writes, so a peer that had not received it before
    /// the crash gets it only from here.
    ///
    /// And the suspects: keys whose state holds a write of this node newer than the
    /// newest it replayed (`after_replay`), with that stamp and the state held here
    /// before the merge. A stamp does not tell whether this node holds such a write: a
    /// batch's delta of one element carries the key's whole causal context, a lost DEL's
    /// stamp in it, but not the removal of the other elements (seed 1420 of
    /// `--no-periodic-anti-entropy`), and a write made here since the restart hides an
    /// older lost one (seed 6663 of an earlier attempt). So a suspect is shipped again
    /// after any round whose state changed it here, and only on a node that replayed a
    /// store: elsewhere an entry of this node in a peer's context (a floor, not a write)
    /// is no sign of a loss.
    fn own_writes_lacked(&mut self, deltas: &[Delta], now_ms: u64) -> (Vec<(Bytes, Hlc)>, Suspects) {
        let replayed = self.after_replay(now_ms);
        let me = self.config.node_id;
        // A write of this node removed here and its tombstone collected is not lacked.
        let forgotten = self.kv.forgotten_any().get(me);
        let (mut lacked, mut suspects) = (Vec::new(), Vec::new());
        for delta in deltas {
            let Delta::Key { key, state } = delta else { continue };
            let theirs = state.newest_stamp_of(me);
            if theirs <= forgotten {
                continue;
            }
            if self.own_stamp_held(key) < theirs {
                lacked.push((key.clone(), theirs));
            } else if replayed.is_some_and(|replayed| theirs > replayed) {
                suspects.push((key.clone(), theirs, self.kv.keys.state_or_tombstone(key, key_hash(key)).cloned()));
            }
        }
        (lacked, suspects)
    }

    /// The latest stamp of this node's writes that the key's state here holds.
    fn own_stamp_held(&self, key: &[u8]) -> Hlc {
        let state = self.kv.keys.state_or_tombstone(key, key_hash(key));
        state.map_or(Hlc::ZERO, |s| s.newest_stamp_of(self.config.node_id))
    }

    /// After `own_writes_lacked`'s states merged: ship the keys that hold those writes
    /// again to every peer, as this node's writes (its whole state of each such key: a
    /// merge may have filtered what the peer sent, and what is shipped must be what is
    /// held here). Rare: only after a crash lost acknowledged writes.
    fn ship_own_writes_back(&mut self, lacked: Vec<(Bytes, Hlc)>) {
        let Some(outbox) = self.outbox.as_mut() else { return };
        for (key, stamp) in lacked {
            let Some(state) = self.kv.keys.state_or_tombstone(&key, key_hash(&key)) else { continue };
            if state.newest_stamp_of(self.config.node_id) < stamp {
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
        self.after_replay(now_ms); // the window opens at the first merge from a peer
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

#[cfg(test)]
mod tests {
    use super::super::absence::tests::{all_leaves, b, export, node};
    use super::super::{Shard, ShardOp, ShardReply};
    use crate::command::{HashCommand, KeyCommand};
    use crate::crdt::Hlc;
    use crate::delta::Delta;
    use crate::protocol::Frame;

    fn hincr(shard: &mut Shard, field: &str, now: u64) {
        let op = ShardOp::Key(KeyCommand::Hash(HashCommand::IncrByFloat { key: b("h"), field: b(field), by: 1.0 }));
        assert!(matches!(shard.apply(op, now), ShardReply::Frame(Frame::Bulk(_))));
    }

    fn hexists(shard: &mut Shard, field: &str) -> bool {
        let op = ShardOp::Key(KeyCommand::Hash(HashCommand::Exists { key: b("h"), field: b(field) }));
        shard.apply(op, 100) == ShardReply::Frame(Frame::Integer(1))
    }

    /// The deltas of a node's next replication batch.
    fn batch(shard: &mut Shard, now: u64) -> Vec<Delta> {
        match shard.apply(ShardOp::DrainOutbox { floor: Hlc::ZERO }, now) {
            ShardReply::Outbox { batch, .. } => batch.deltas.decode().unwrap(),
            other => panic!("{other:?}"),
        }
    }

    fn round(from: &mut Shard, to: &mut Shard, now: u64) {
        let deltas = export(from);
        assert!(matches!(to.apply(ShardOp::MergeLeaves { leaves: all_leaves(), deltas }, now), ShardReply::Count(_)));
    }

    /// Node 2 deletes a hash; its DEL reaches node 1 only, and a crash loses it on node
    /// 2. Node 1's next field write carries the key's context, the DEL's stamp in it,
    /// to both: they hold the stamp without the removal of field `f0`. Node 3's round
    /// then brings node 2 a state holding the stamp and not the removal, node 1's round
    /// the removal: node 2 must ship its state again after that round too, or node 3
    /// keeps `f0` until a periodic round (seed 1420 of `--no-periodic-anti-entropy`).
    #[test]
    fn a_lost_delete_whose_stamp_came_back_first_is_shipped_again_once_a_round_brings_it() {
        let (mut one, mut two, mut three) = (node(1), node(2), node(3));
        hincr(&mut one, "f0", 10);
        let written = batch(&mut one, 11);
        two.apply(ShardOp::MergeRemote(written.clone()), 12);
        three.apply(ShardOp::MergeRemote(written.clone()), 12);

        two.apply(ShardOp::Del(vec![b("h")]), 20);
        one.apply(ShardOp::MergeRemote(batch(&mut two, 21)), 22);
        // Restarted: its store held the field, not the DEL.
        let mut two = node(2);
        written.into_iter().for_each(|delta| two.merge_delta(delta));
        assert!(hexists(&mut two, "f0") && !hexists(&mut one, "f0"));

        hincr(&mut one, "f1", 40);
        let field_write = batch(&mut one, 41);
        two.apply(ShardOp::MergeRemote(field_write.clone()), 42);
        three.apply(ShardOp::MergeRemote(field_write), 42);
        assert!(hexists(&mut two, "f0") && hexists(&mut three, "f0"), "a field write removes no other field");

        round(&mut three, &mut two, 50);
        round(&mut one, &mut two, 51);
        assert!(!hexists(&mut two, "f0"), "node 1's round brought the removal back");
        three.apply(ShardOp::MergeRemote(batch(&mut two, 52)), 53);
        assert!(!hexists(&mut three, "f0"), "node 2 shipped the key again after node 1's round");

        // A minute after its first merge from a peer, the stamps it replayed no longer count.
        assert!(two.after_replay(41 + super::LOST_WRITES_WINDOW_MS).is_some());
        assert!(two.after_replay(42 + super::LOST_WRITES_WINDOW_MS).is_none());
    }

    /// A node that replayed nothing (a new one) never takes a peer's stamps of its own
    /// for a loss beyond the rule of `own_writes_lacked`.
    #[test]
    fn a_node_that_replayed_nothing_ships_only_what_it_lacks() {
        let (mut one, mut two) = (node(1), node(2));
        hincr(&mut two, "f0", 10);
        one.apply(ShardOp::MergeRemote(batch(&mut two, 11)), 12);
        hincr(&mut one, "f1", 13);
        round(&mut one, &mut two, 14);
        assert!(hexists(&mut two, "f1"));
        assert_eq!(two.after_replay(14), None);
        assert_eq!(two.stats().own_writes_shipped_back, 0);
    }
}
