//! FT.* indexes on simulated nodes: every node keeps a few search indexes over the
//! workload's keys, built when the node starts and again after each restart (as the
//! server's first FT.* after a restart does), and audited against the index rebuilt
//! from the node's data at checkpoints and at the end of every run
//! (`VectorEngine::audit`). Local writes, updates, deletes, expiries, type changes,
//! peers' merges (under partitions, drops and restarts) and recovery all reach the
//! indexes the way they do in the server: through each shard's change list.
//!
//! The definitions are installed on each node directly (not through a replicated
//! FT.CREATE), so that the workload, the oracle and every seed's run stay as they were;
//! the definition key's own replication is covered by tests/vector.rs.

use bytes::Bytes;
use meridian::engine::vector::schema::encode_args;
use meridian::engine::vector::{VectorOp, VectorReply};
use meridian::shard::{ShardOp, ShardReply};

use super::Sim;

/// Keys an index build takes per shard step in the simulator (the server's is 256):
/// small, so that a shard's build spans several ticks.
const BUILD_KEYS_PER_STEP: usize = 2;
/// Ticks between two checkpoint audits of a node's indexes (a tick is 100 ms; an
/// audit rebuilds every index, so they are spaced to keep the CI sweeps' time).
pub(super) const AUDIT_EVERY_TICKS: u64 = 50;

/// The indexes every node keeps, over the workload's hash fields `f0`..`f3` (whose
/// values are short strings, numbers and a few sentences and language names, see
/// `workload::hash_value`: a two-byte value is a valid FLOAT16 vector of one
/// dimension, a number a valid NUMERIC, anything else a counted indexing failure; every
/// value is TEXT, numbers cut at `-` and `.`). HNSW's EF_RUNTIME exceeds any shard's
/// document count, so its answers are exact. `dst_text` covers text postings, term
/// positions and frequencies, field weights, stemming (with a document's language from
/// `f3`), and the document score (from `f1`).
const DEFINITIONS: [(&str, &str); 4] = [
    ("dst_tags", "ON HASH PREFIX 3 h { n SCHEMA f0 TAG f1 TAG SEPARATOR . f2 TAG CASESENSITIVE f3 AS t3 TAG"),
    ("dst_flat", "ON HASH SCHEMA f0 TAG f1 NUMERIC f2 VECTOR FLAT 6 TYPE FLOAT16 DIM 1 DISTANCE_METRIC L2"),
    ("dst_hnsw", "ON HASH SCHEMA f3 VECTOR HNSW 12 TYPE FLOAT16 DIM 1 DISTANCE_METRIC IP M 4 EF_CONSTRUCTION 8 EF_RUNTIME 1000 f0 TAG"),
    ("dst_text", "ON HASH LANGUAGE_FIELD f3 SCORE_FIELD f1 SCHEMA f0 TEXT NOSTEM WEIGHT 2 f2 TEXT f1 TAG"),
];

impl Sim {
    /// Build every index on every shard of `node` from the data it holds now.
    pub(super) fn install_indexes(&mut self, node: usize) {
        let n = &mut self.nodes[node];
        let now = n.local_ms(self.now);
        for (name, line) in DEFINITIONS {
            let raw = encode_args(&line.split_whitespace().map(|w| Bytes::copy_from_slice(w.as_bytes())).collect::<Vec<_>>());
            for (s, shard) in n.shards.iter_mut().enumerate() {
                // Builds take several ticks, with writes, merges and audits between.
                shard.vector.set_build_keys_per_step(BUILD_KEYS_PER_STEP);
                let op = ShardOp::Vector(VectorOp::Sync { name: Bytes::from_static(name.as_bytes()), raw: raw.clone() });
                match shard.apply(op, now) {
                    ShardReply::Vector(VectorReply::Done) => {}
                    other => {
                        let reason = format!("n{node} shard {s}: index {name} not built: {other:?}");
                        self.fail(reason);
                        return;
                    }
                }
            }
        }
    }

    /// Every index of `node` equals the one rebuilt from its data now.
    pub(super) fn audit_indexes(&mut self, node: usize, when: &str) {
        let n = &mut self.nodes[node];
        let now = n.local_ms(self.now);
        let mut docs = 0;
        for (s, shard) in n.shards.iter_mut().enumerate() {
            match shard.vector.audit(&shard.kv, now) {
                Ok(count) => docs += count,
                Err(reason) => {
                    self.fail(format!("n{node} shard {s} ({when}): {reason}"));
                    return;
                }
            }
        }
        if when == "final" {
            self.log(format!("n{node} indexes equal their rebuilds: {docs} documents"));
        }
    }
}
