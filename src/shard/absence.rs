//! Anti-entropy's absence rule: what a peer's leaf states leave out. Part of
//! [`Shard`]: the same deterministic state machine, no I/O.
//!
//! A peer's states of some Merkle leaves (`Message::AeStates`) end with what each of
//! its shards has forgotten: the records of its collected tombstones (`Delta::Forget`,
//! of keys and of elements, per shard; either covers only writes that shard's node had
//! merged). A write held here that such a record covers and the peer does not hold,
//! in a key or element it sent or in a key of those leaves it holds nothing of, was
//! merged there and removed, and the record of that removal has since been collected:
//! it is removed here too (`value::absence` says how). This is the mirror of the filter
//! `KvEngine::merge_key` applies to every state arriving here, and rests on the same
//! fact. Without it, a node that missed a removal whose tombstone every other node has
//! collected (a peer given up on after `--peer-horizon-ms`, `replication::stability`)
//! would keep what was removed, and the leaves would differ for ever.
//!
//! Decides only: it turns what the peer left out into removals carried by the peer's
//! states themselves (their contexts and counter floors widened, removed elements
//! added) and removals of the keys they leave out, which the shard then merges,
//! records and counts like any state from a peer. A removal is a fact about the key's
//! history, true wherever and whenever it is merged again.

use std::collections::HashSet;

use bytes::Bytes;

use super::Shard;
use crate::crdt::VersionVector;
use crate::delta::Delta;
use crate::engine::kv::key_hash;
use crate::routing::ShardScope;

/// What the absence rule found in a peer's leaf states.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct AbsenceRemovals {
    /// Keys whose states it added removals to, or that it removes.
    pub keys: usize,
    /// Whether any removal takes away something a reader sees here (a key, an element,
    /// a value, an increment). This node may have passed such a write on to other
    /// peers in its own rounds before it learned of the removal, and a peer that the
    /// remover caught up earlier keeps a copy it gets afterwards: nothing there
    /// remembers the removal. Every link then compares trees at once
    /// (`Shard::stale_copies_possible`).
    pub of_live: bool,
}

impl Shard {
    /// Add to a peer's states of `leaves` the removals its forget records imply here.
    pub(super) fn add_absence_removals(&self, leaves: &[u16], deltas: &mut Vec<Delta>) -> AbsenceRemovals {
        let mut found = AbsenceRemovals::default();
        if crate::bugs::active(crate::bugs::Bug::AbsenceIgnored) {
            return found;
        }
        // The peer's records for the shard of its that owns a key, of key and of
        // element tombstones joined: each covers writes that shard had merged.
        let mut covering_scopes: Vec<(ShardScope, VersionVector)> = Vec::new();
        for delta in deltas.iter() {
            let Delta::Forget { below, scope, .. } = delta else { continue };
            match covering_scopes.iter_mut().find(|(s, _)| s == scope) {
                Some((_, joined)) => joined.merge(below),
                None => covering_scopes.push((*scope, below.clone())),
            }
        }
        if covering_scopes.is_empty() {
            return found;
        }
        let covering = |key: &[u8]| covering_scopes.iter().find(|(s, _)| s.contains(key)).map(|(_, v)| v);
        let mut sent = HashSet::new();
        for delta in deltas.iter_mut() {
            let Delta::Key { key, state } = delta else { continue };
            sent.insert(key.clone());
            let (Some(entry), Some(forgotten)) = (self.kv.keys.get(key, key_hash(key)), covering(key)) else { continue };
            let mut touches = false;
            if let Some(absent) = entry.state().absent_writes(Some(state), forgotten) {
                found.of_live |= entry.state().removal_changes_readout(&absent);
                state.remove_absent(&absent);
                touches = true;
            }
            let (added, of_live) = state.add_removals_of_absent_elements(entry.state(), forgotten);
            found.of_live |= of_live;
            touches |= added;
            found.keys += touches as usize;
        }
        let mut removals = Vec::new();
        for &leaf in leaves {
            self.kv.keys.for_each_in_leaf(leaf, |key, state| {
                // Dead states too: a tombstone holding a TTL write not yet due is kept
                // for it (`keeps_for_ttl`), and the peer removed that write as well.
                if sent.contains(key) {
                    return;
                }
                if let Some(forgotten) = covering(key)
                    && state.has_dot_covered_by(forgotten)
                {
                    let mut removal = state.clone();
                    removal.remove_observed(forgotten);
                    found.of_live |= state.reads_differently_from(&removal);
                    removals.push(Delta::Key { key: Bytes::copy_from_slice(key), state: removal });
                }
            });
        }
        found.keys += removals.len();
        deltas.extend(removals);
        found
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::{KeyCommand, Shard, ShardConfig, ShardOp, ShardReply};
    use crate::command::HashCommand;
    use crate::crdt::{Dot, Hlc, VersionVector};
    use crate::delta::Delta;
    use crate::protocol::Frame;
    use bytes::Bytes;

    pub(in crate::shard) fn node(id: u16) -> Shard {
        let mut config = ShardConfig::new(0, id);
        config.replicate = true;
        Shard::new(config)
    }

    pub(in crate::shard) fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    pub(in crate::shard) fn all_leaves() -> Vec<u16> {
        (0..crate::engine::kv::merkle::LEAVES as u16).collect()
    }

    pub(in crate::shard) fn export(shard: &mut Shard) -> Vec<Delta> {
        match shard.apply(ShardOp::ExportLeaves(all_leaves()), 0) {
            ShardReply::Deltas(deltas) => deltas,
            other => panic!("{other:?}"),
        }
    }

    fn hincr(shard: &mut Shard, key: &str, field: &str, by: f64, now: u64) {
        let op = ShardOp::Key(KeyCommand::Hash(HashCommand::IncrByFloat { key: b(key), field: b(field), by }));
        assert!(matches!(shard.apply(op, now), ShardReply::Frame(Frame::Bulk(_))));
    }

    fn hget(shard: &mut Shard, key: &str, field: &str) -> Frame {
        match shard.apply(ShardOp::Key(KeyCommand::Hash(HashCommand::Get { key: b(key), field: b(field) })), 100) {
            ShardReply::Frame(frame) => frame,
            other => panic!("{other:?}"),
        }
    }

    fn bulk(s: &str) -> Frame {
        Frame::Bulk(b(s))
    }

    /// Whether the shard's next outbox drain asks every link for a round.
    fn rounds_wanted(shard: &mut Shard) -> bool {
        match shard.apply(ShardOp::DrainOutbox { floor: crate::crdt::Hlc::ZERO }, 100) {
            ShardReply::Outbox { rounds_wanted, .. } => rounds_wanted,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn what_a_peer_removed_and_forgot_is_removed_here_by_its_leaf_states_and_nothing_else() {
        let (mut a, mut p) = (node(1), node(3));
        hincr(&mut a, "h", "f1", 1.5, 10);
        hincr(&mut a, "h", "f2", 2.0, 11);
        hincr(&mut a, "g", "x", 1.0, 12);
        let everything = export(&mut a);
        assert!(!everything.iter().any(|d| matches!(d, Delta::Forget { .. })), "nothing forgotten yet");
        assert!(matches!(p.apply(ShardOp::MergeRemote(everything), 13), ShardReply::Count(_)));
        // Node 1 removes a field and a key; node 3 (given up on) never hears of it, and
        // node 1 collects both tombstones.
        let del = ShardOp::Key(KeyCommand::Hash(HashCommand::Del { key: b("h"), fields: vec![b("f1")] }));
        assert_eq!(a.apply(del, 14), ShardReply::Frame(Frame::Integer(1)));
        a.apply(ShardOp::Del(vec![b("g")]), 15);
        assert_eq!(hget(&mut a, "g", "x"), Frame::Null);
        let mut stable = VersionVector::new();
        stable.add(Dot::new(Hlc::from_parts(20, 0), 1));
        assert_eq!(a.apply(ShardOp::ForgetStable { stable, spared: Vec::new() }, 16), ShardReply::Count(2));
        // Meanwhile node 3 increments a field node 1 never had.
        hincr(&mut p, "h", "f3", 1.0, 17);
        let states = export(&mut a);
        assert!(states.iter().any(|d| matches!(d, Delta::Forget { .. })), "the leaf states end with what node 1 forgot");

        // A plain merge (what a batch does) keeps the removed writes: the leaves would
        // differ for ever.
        let mut plain = node(3);
        plain.apply(ShardOp::MergeRemote(export(&mut p)), 18);
        plain.apply(ShardOp::MergeRemote(states.clone()), 18);
        assert_eq!(hget(&mut plain, "h", "f1"), bulk("1.5"));

        assert!(!rounds_wanted(&mut plain), "a batch's merge asks for no round");
        assert!(!rounds_wanted(&mut p));
        assert!(matches!(p.apply(ShardOp::MergeLeaves { leaves: all_leaves(), deltas: states.clone() }, 18), ShardReply::Count(_)));
        assert_eq!(hget(&mut p, "h", "f1"), Frame::Null, "removed there, forgotten there: removed here");
        assert_eq!(hget(&mut p, "g", "x"), Frame::Null, "a key node 1 no longer holds at all");
        assert_eq!(hget(&mut p, "h", "f2"), bulk("2"), "what node 1 holds stays");
        assert_eq!(hget(&mut p, "h", "f3"), bulk("1"), "node 3's own write, which node 1 never had, stays");
        assert_eq!(p.stats().absence_removals, 2);
        // Node 3 may have passed on what went (in its own rounds): every link compares
        // trees at once. Once: the same states again change nothing a reader sees.
        assert!(rounds_wanted(&mut p), "a field and a key a reader saw went");
        assert!(!rounds_wanted(&mut p), "asked once");
        assert!(matches!(p.apply(ShardOp::MergeLeaves { leaves: all_leaves(), deltas: states }, 18), ShardReply::Count(_)));
        assert!(!rounds_wanted(&mut p), "nothing more went");

        // The other way: node 1 takes node 3's write and none of what it removed.
        assert!(matches!(a.apply(ShardOp::MergeLeaves { leaves: all_leaves(), deltas: export(&mut p) }, 19), ShardReply::Count(_)));
        assert_eq!(hget(&mut a, "h", "f1"), Frame::Null);
        assert_eq!(hget(&mut a, "h", "f3"), bulk("1"));
        assert_eq!(hget(&mut a, "g", "x"), Frame::Null);
        // Once node 3's own tombstones of what it removed are collected too, and one
        // more exchange has run each way, the two hold the same states.
        let mut stable = VersionVector::new();
        stable.add(Dot::new(Hlc::from_parts(20, 0), 1));
        stable.add(Dot::new(Hlc::from_parts(20, 0), 3));
        p.apply(ShardOp::ForgetStable { stable, spared: Vec::new() }, 20);
        p.apply(ShardOp::MergeLeaves { leaves: all_leaves(), deltas: export(&mut a) }, 21);
        a.apply(ShardOp::MergeLeaves { leaves: all_leaves(), deltas: export(&mut p) }, 21);
        let keys = |deltas: Vec<Delta>| deltas.into_iter().filter(|d| matches!(d, Delta::Key { .. })).collect::<Vec<_>>();
        assert_eq!(keys(export(&mut a)), keys(export(&mut p)), "the two converge");
        assert_eq!(a.stats().keyspace_digest, p.stats().keyspace_digest);
    }
}
