//! The end of a run: quiescing (replication runs heal every fault and let the links
//! drain) and the final comparison of every node with its model.

use std::collections::BTreeMap;

use bytes::Bytes;

use super::{Event, Node, QUIESCE_MS, Sim, TICK_MS};
use crate::model::ModelEntry;

impl Sim {
    /// Replication runs: the workload is done; heal every fault and let the links
    /// drain and the trees compare for a while.
    pub(super) fn start_quiescing(&mut self) {
        self.quiesce_until = Some(self.now + QUIESCE_MS);
        self.partitions.clear();
        for (cut, event) in std::mem::take(&mut self.held) {
            self.send(cut.from, cut.to, event);
        }
        self.slow_until = 0;
        for node in 0..self.nodes.len() {
            self.nodes[node].paused_until = self.nodes[node].paused_until.min(self.now);
        }
        self.log("workload done: quiescing".into());
    }

    /// Heal everything, let time pass, then compare every node with its model.
    pub(super) fn quiesce_and_check(&mut self) {
        if self.cfg.replicate {
            for node in 0..self.nodes.len() {
                if !self.nodes[node].up {
                    self.fail(format!("n{node} still down after quiescence"));
                    return;
                }
            }
            self.check_replicas();
            self.audit_every_node();
            return;
        }
        self.partitions.clear();
        for node in 0..self.nodes.len() {
            self.nodes[node].paused_until = 0;
            if !self.nodes[node].up {
                self.handle(Event::Restart { node });
            }
        }
        let end = self.now + 2 * TICK_MS;
        while self.now < end {
            self.now += TICK_MS;
            for node in 0..self.nodes.len() {
                self.tick(node);
            }
        }
        for node in 0..self.nodes.len() {
            let n = &self.nodes[node];
            let local = n.local_ms(self.now);
            let actual = live_entries(n, local);
            let expected = n.model.live_entries(local);
            if actual != expected {
                let reason = format!("n{node} final state differs from the model:\n  node:  {actual:?}\n  model: {expected:?}");
                self.fail(reason);
                return;
            }
        }
        self.log(format!("checked {} nodes after {} ops", self.nodes.len(), self.ops_done));
        self.audit_every_node();
    }

    /// The final index audit: every node's indexes equal their rebuilds from its
    /// (converged) data.
    fn audit_every_node(&mut self) {
        for node in 0..self.nodes.len() {
            if self.failure.is_some() {
                return;
            }
            self.audit_indexes(node, "final");
        }
    }
}

/// A node's live keys as the engine holds them, in the model's terms.
pub(super) fn live_entries(n: &Node, local: u64) -> BTreeMap<Bytes, ModelEntry> {
    let mut actual = BTreeMap::new();
    for shard in &n.shards {
        for entry in shard.kv.keys.iter() {
            let expire_at_ms = entry.state().expire_at_ms();
            if expire_at_ms.is_some_and(|at| local > at) {
                continue;
            }
            let (mut set, mut zset, mut list) = (None, None, None);
            let (value, hash) = match entry.state().kind() {
                Some(meridian::engine::kv::KeyKind::Hash) => {
                    let fields = entry.state().hash().map(|h| {
                        h.iter()
                            .map(|(f, s)| (Bytes::copy_from_slice(f), s.read().map(|v| v.to_bytes().to_vec()).unwrap_or_default()))
                            .collect()
                    });
                    (Vec::new(), fields)
                }
                Some(meridian::engine::kv::KeyKind::Set) => {
                    set = entry.state().set_members().map(|s| s.iter().map(|(m, _)| Bytes::copy_from_slice(m)).collect());
                    (Vec::new(), None)
                }
                Some(meridian::engine::kv::KeyKind::Zset) => {
                    zset = entry
                        .state()
                        .zset_members()
                        .and_then(|z| z.score_order())
                        .map(|o| o.iter(false).map(|(s, m)| (Bytes::copy_from_slice(m), s)).collect());
                    (Vec::new(), None)
                }
                Some(meridian::engine::kv::KeyKind::List) => {
                    list = entry.state().list_elements().map(list_values);
                    (Vec::new(), None)
                }
                _ => (entry.state().read().map(|v| v.to_bytes().to_vec()).unwrap_or_default(), None),
            };
            actual.insert(entry.key_to_bytes(), ModelEntry { value, expire_at_ms, hash, set, zset, list });
        }
    }
    actual
}

impl Sim {
    /// Runs without periodic anti-entropy: every node reads out alike (each key's type,
    /// TTL and content; a hash's fields and a set's members in any order, since each
    /// node keeps its own insertion order, as each Redis does). Metadata the deltas
    /// leave different (an absorbed increment's slot kept on one node, a context entry)
    /// is not compared: anti-entropy compares and repairs it, and no reply shows it.
    /// Returns whether they did.
    pub(super) fn check_readouts_alike(&mut self) -> bool {
        let readout = |n: &Node, local: u64| {
            let mut entries = live_entries(n, local);
            for entry in entries.values_mut() {
                if let Some(fields) = entry.hash.as_mut() {
                    fields.sort();
                }
                if let Some(members) = entry.set.as_mut() {
                    members.sort();
                }
            }
            entries
        };
        let first = readout(&self.nodes[0], self.nodes[0].local_ms(self.now));
        for node in 1..self.nodes.len() {
            let other = readout(&self.nodes[node], self.nodes[node].local_ms(self.now));
            if other != first {
                let diff: Vec<String> = first
                    .keys()
                    .chain(other.keys())
                    .filter(|k| first.get(*k) != other.get(*k))
                    .map(|k| format!("{k:?}: n0 {:?} / n{node} {:?}", first.get(k), other.get(k)))
                    .collect();
                self.log_link_states();
                self.fail(format!("replicas read out differently after quiescence (no periodic anti-entropy):\n  {}", diff.join("\n  ")));
                return false;
            }
        }
        true
    }
}

/// A list's element values in list order (its position index's order).
pub(super) fn list_values(list: &meridian::engine::kv::elements::Elements) -> Vec<Bytes> {
    meridian::engine::kv::lists::walk(list, false).map(|(_, e)| e.read().map(|v| v.to_bytes()).unwrap_or_default()).collect()
}
