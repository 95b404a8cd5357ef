//! The end of a replicated run: after quiescence every replica must be identical
//! (live keys and tombstones), the Merkle trees equal, and every live key the value
//! the oracle computes. Reads the nodes only; the run's replication is in
//! `replicate.rs`.

use std::collections::BTreeMap;

use bytes::Bytes;
use meridian::engine::kv::KeyState;
use meridian::routing::shard_for_key;

use super::report::Converged;
use super::{Node, Sim};

impl Sim {
    /// After quiescence: every replica identical (live keys and tombstones), equal
    /// Merkle trees, and every live key equal to the oracle's converged value. Without
    /// periodic anti-entropy, replicas must read out alike rather than be identical
    /// (`check_readouts_alike` says why).
    pub(super) fn check_replicas(&mut self) {
        // Lists first: a list that differs between replicas is reported as a list.
        self.check_lists();
        if self.failure.is_some() {
            return;
        }
        let states: Vec<BTreeMap<Bytes, KeyState>> = self.nodes.iter().map(full_state).collect();
        if !self.cfg.periodic_anti_entropy && !self.check_readouts_alike() {
            return;
        }
        for node in (1..self.nodes.len()).filter(|_| self.cfg.periodic_anti_entropy) {
            if states[node] != states[0] {
                let diff: Vec<_> = states[0]
                    .keys()
                    .chain(states[node].keys())
                    .filter(|k| states[0].get(*k) != states[node].get(*k))
                    .map(|k| format!("{k:?}: n0 {:?} / n{node} {:?}", states[0].get(k), states[node].get(k)))
                    .collect();
                self.log_link_states();
                self.fail(format!("replicas differ after quiescence:\n  {}", diff.join("\n  ")));
                return;
            }
        }
        let roots: Vec<u64> = (0..self.nodes.len()).map(|n| self.leaves(n).root()).collect();
        if self.cfg.periodic_anti_entropy && roots.windows(2).any(|w| w[0] != w[1]) {
            self.fail(format!("Merkle roots differ with identical states: {roots:x?}"));
            return;
        }
        // A key whose tombstone was collected is covered by what its shard forgot (every
        // write its shard's collections covered, keys' or elements'), and so is a key
        // written again after that: its new state's context starts after the removal.
        let node0 = &self.nodes[0];
        let context = |key: &Bytes| {
            let mut ctx = node0.shards[shard_for_key(key, node0.shards.len())].kv.forgotten_any().clone();
            if let Some(state) = states[0].get(key) {
                ctx.merge(&state.causal_context());
            }
            ctx
        };
        if let Err(reason) = self.oracle.check_none_lost(context) {
            self.fail(reason);
            return;
        }
        let expected = self.oracle.expected();
        let actual: BTreeMap<Bytes, Converged> =
            states[0].iter().filter_map(|(k, s)| s.read().map(|v| (k.clone(), (v.to_bytes().to_vec(), s.expire_at_ms())))).collect();
        let wanted: BTreeMap<Bytes, Converged> = expected.into_iter().map(|(k, e)| (k, (e.value, e.expire_at_ms))).collect();
        if actual != wanted {
            let report = self.divergence_report(&actual, &wanted);
            self.fail(report);
            return;
        }
        self.check_collections(0);
        if self.failure.is_some() {
            return;
        }
        if self.cfg.streams {
            self.check_streams();
        }
        if self.cfg.graph {
            self.check_graphs();
            if self.failure.is_some() {
                return;
            }
        }
        let mut lines = Vec::new();
        for (i, n) in self.nodes.iter().enumerate() {
            if let Some(repl) = n.repl.as_ref() {
                let st = &repl.stability;
                let tomb: Vec<_> =
                    n.shards.iter().flat_map(|s| s.kv.keys.tombstones().map(|(k, v)| (k.clone(), v.causal_context()))).collect();
                lines.push(format!(
                    "n{i} stability: merged {:?} frozen {} pending {} stable {:?} tombstones {:?}",
                    st.merged(),
                    st.frozen_origins(),
                    st.pending_advances(),
                    st.stable_vector(n.local_ms(self.now)),
                    tomb
                ));
            }
        }
        lines.into_iter().for_each(|l| self.log(l));
        let left: usize = self.nodes[0].shards.iter().map(|s| s.kv.keys.tombstones_len()).sum();
        // A dead state holding a TTL write not yet due is kept until it is (see
        // `KeyState::holds_pending_ttl`): not a removal, so not one left behind.
        let kept_for_ttl: usize =
            self.nodes[0].shards.iter().map(|s| s.kv.keys.tombstones().filter(|(_, state)| s.kv.keeps_for_ttl(state)).count()).sum();
        // Liveness of collection: after the quiet period every removal is known to
        // every node, so no tombstone may be left anywhere.
        if left > kept_for_ttl {
            self.fail(format!("{} tombstones left after quiescence: collection made no progress", left - kept_for_ttl));
            return;
        }
        let element_left: usize = self.nodes[0]
            .shards
            .iter()
            .flat_map(|s| s.kv.keys.iter())
            .map(|e| e.state().hash().map_or(0, |h| h.tombstones()) + e.state().set_members().map_or(0, |m| m.tombstones()))
            .sum();
        if element_left > 0 {
            self.fail(format!("{element_left} hash field or set member tombstones left after quiescence: collection made no progress"));
            return;
        }
        let dropped: u64 = self.nodes.iter().flat_map(|n| &n.shards).map(|s| s.kv.tombstones_dropped).sum();
        self.log(format!(
            "checked {} identical replicas, root {:016x}, {} keys, {left} tombstones left ({kept_for_ttl} kept for a TTL not yet due), {dropped} collected",
            self.nodes.len(),
            roots[0],
            actual.len()
        ));
    }
}

/// Every key state of a node, live and tombstone.
fn full_state(node: &Node) -> BTreeMap<Bytes, KeyState> {
    let mut all = BTreeMap::new();
    for shard in &node.shards {
        for entry in shard.kv.keys.iter() {
            all.insert(entry.key_to_bytes(), entry.state().clone());
        }
        for (key, state) in shard.kv.keys.tombstones() {
            all.insert(key.clone(), state.clone());
        }
    }
    all
}
