//! Tombstone collection (DESIGN §6): dropping the key and element tombstones every
//! node has seen, and replaying a recorded collection on recovery.
//!
//! A tombstone may go once the node-wide stable vector covers its causal context:
//! every node has seen the removal, and everything concurrent with it has arrived. What
//! went is remembered (`forgotten`, `forgotten_elements`, and other shards' replayed
//! records), so a late state for a collected removal is filtered on merge
//! (`KvEngine::merge_key`) instead of coming back.
//!
//! A collection that left peers out (given up on, `replication::stability`) *spares*
//! the tombstones holding a counter slot or floor of one of them: a counter slot is a
//! running sum, and the peer may hold a later sum of the same slot that no one else
//! has seen yet. Without the floor the removal left, that later sum would count again
//! everything the removal had absorbed (seeds 4574 and 4932 of
//! `dst --no-periodic-anti-entropy`). What was spared goes in the first collection
//! that counts the peer again.
//!
//! Must never: drop a tombstone `stable` does not cover, drop one that holds a counter
//! of a spared node, or forget what it dropped.

use super::{KvEngine, key_hash};
use crate::crdt::{NodeId, VersionVector};
use crate::routing::ShardScope;

/// Whether the key tombstone `state` may go under the stable vector `stable`: every node
/// has seen it, and it holds no TTL write still to come due (`KeyState::holds_pending_ttl`,
/// against the latest instant `stable` has reached: a record replayed on recovery
/// decides as the collection it records did).
fn collectable(state: &super::KeyState, stable: &VersionVector, spared: &[NodeId]) -> bool {
    stable.dominates(&state.causal_context()) && !pending_ttl_under(state, stable) && !state.holds_counter_of(spared)
}

/// `KeyState::holds_pending_ttl` as of the latest instant `stable` has reached.
fn pending_ttl_under(state: &super::KeyState, stable: &VersionVector) -> bool {
    state.holds_pending_ttl(stable.max_hlc().physical_ms())
}

impl KvEngine {
    /// Tombstone GC: drop every tombstone whose causal context `stable` covers (every
    /// node has seen the removal and everything concurrent with it has arrived here),
    /// but those holding a counter of a node in `spared` (the peers this collection
    /// left out; see the module doc). Returns how many key tombstones and element
    /// tombstones were dropped; `stable` is remembered (in `forgotten`,
    /// `forgotten_elements`) only where one was.
    pub fn forget_stable(&mut self, stable: &VersionVector, spared: &[NodeId]) -> (usize, usize) {
        // Collection runs once the node serves: replay is over.
        self.settle_replayed_forgets();
        self.stable.merge(stable);
        self.spared = spared.to_vec();
        let keys = self.keys.drop_tombstones_where(|_, state| collectable(state, stable, spared));
        let elements = self.forget_element_tombstones(stable, spared, None);
        if keys > 0 {
            self.forgotten.merge(stable);
        }
        if elements > 0 {
            self.forgotten_elements.merge(stable);
        }
        if keys + elements > 0 {
            self.forgotten_any.merge(stable);
        }
        self.tombstones_dropped += (keys + elements) as u64;
        (keys, elements)
    }

    /// Replay a recorded tombstone GC (recovery, checkpoints) of shard `scope`: of key
    /// tombstones, or of element tombstones, sparing those that GC spared. This shard's
    /// own record applies as the GC did; another shard's only to the keys of its scope
    /// (see `replayed_forgets`).
    pub fn merge_forget(&mut self, below: &VersionVector, spared: &[NodeId], elements: bool, scope: ShardScope) {
        // A recorded GC was of stable writes.
        self.stable.merge(below);
        // What it spared is held here now, and a checkpoint taken before the next
        // collection must keep it too: every replayed record's spared nodes count
        // until a collection runs (a few node ids at most).
        for &node in spared {
            if let Err(at) = self.spared.binary_search(&node) {
                self.spared.insert(at, node);
            }
        }
        let only = if scope == self.scope {
            let forgotten = if elements { &mut self.forgotten_elements } else { &mut self.forgotten };
            forgotten.merge(below);
            self.forgotten_any.merge(below);
            None
        } else {
            let at = match self.replayed_forgets.iter().position(|(s, ..)| *s == scope) {
                Some(at) => at,
                None => {
                    self.replayed_forgets.push((scope, VersionVector::new(), VersionVector::new()));
                    self.replayed_forgets.len() - 1
                }
            };
            let (_, keys, element_vv) = &mut self.replayed_forgets[at];
            if elements {
                element_vv.merge(below)
            } else {
                keys.merge(below)
            }
            Some(scope)
        };
        if elements {
            self.forget_element_tombstones(below, spared, only);
        } else {
            self.keys.drop_tombstones_where(|key, state| only.is_none_or(|scope| scope.contains(key)) && collectable(state, below, spared));
        }
    }

    /// Replay is over (every shard's stream is in): every replayed record now covers
    /// every key, as the node-wide stable vectors they were.
    pub fn settle_replayed_forgets(&mut self) {
        for (_, keys, elements) in std::mem::take(&mut self.replayed_forgets) {
            self.forgotten.merge(&keys);
            self.forgotten_elements.merge(&elements);
            self.forgotten_any.merge(&keys);
            self.forgotten_any.merge(&elements);
        }
    }

    /// Drop the element tombstones that `stable` covers (of the keys in `only`, when
    /// given): of live collections, and of key tombstones kept for a TTL not yet due
    /// (`collectable`), which would otherwise keep theirs until that instant, each node
    /// a different set of them.
    fn forget_element_tombstones(&mut self, stable: &VersionVector, spared: &[NodeId], only: Option<ShardScope>) -> usize {
        let mut dropped = self.keys.update_tombstones_where(
            |key, state| state.element_tombstones() > 0 && only.is_none_or(|scope| scope.contains(key)) && pending_ttl_under(state, stable),
            |state| state.forget_stable_elements_of_tombstone(stable, spared),
        );
        for key in self.keys.take_element_tombstone_keys() {
            // `update` notes the key again while it keeps element tombstones.
            self.keys.update(&key, key_hash(&key), |key, state| {
                if state.element_tombstones() > 0 && only.is_none_or(|scope| scope.contains(key)) {
                    dropped += state.forget_stable_elements(stable, spared);
                }
            });
        }
        dropped
    }

    /// Whether a merge that leaves the key dead keeps its tombstone `state`, where what
    /// this shard forgot (`forgotten`) may cover it: as collection would, it keeps one
    /// that `forgotten` does not cover, one with a TTL write still to come due (as of
    /// the last stable vector collection ran with), and one holding a counter of a
    /// peer the last collection spared (seed 1228 of `dst
    /// --no-periodic-anti-entropy`: a resent batch the removal covered dropped it, and
    /// the peer's later sum counted again what the removal had absorbed).
    pub fn keeps_merged_tombstone(&self, state: &super::KeyState, forgotten: &VersionVector) -> bool {
        !forgotten.dominates(&state.causal_context()) || self.keeps_for_ttl(state) || state.holds_counter_of(&self.spared)
    }

    /// Whether tombstone collection keeps the key tombstone `state` for a TTL write
    /// still to come due (see `collectable`), as of the last stable vector it ran with.
    pub fn keeps_for_ttl(&self, state: &super::KeyState) -> bool {
        pending_ttl_under(state, &self.stable)
    }

    /// The nodes the last collection spared (see the module doc), or since the start
    /// every replayed record spared: a checkpoint's record carries them, so that loading
    /// it keeps what those collections kept.
    pub fn spared(&self) -> &[NodeId] {
        &self.spared
    }

    /// What this shard's dropped tombstones covered (a checkpoint carries it, after
    /// `settle_replayed_forgets`; see `forget_stable`).
    pub fn forgotten(&self) -> &VersionVector {
        &self.forgotten
    }

    /// Both of the above joined: what states arriving here are filtered by.
    pub fn forgotten_any(&self) -> &VersionVector {
        &self.forgotten_any
    }

    /// What dropped element tombstones covered (a checkpoint carries it too).
    pub fn forgotten_elements(&self) -> &VersionVector {
        &self.forgotten_elements
    }
}

#[cfg(test)]
#[path = "ttl_tombstone_tests.rs"]
mod ttl_tombstone_tests;

#[cfg(test)]
#[path = "spared_counter_tests.rs"]
mod spared_counter_tests;
