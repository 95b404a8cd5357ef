//! What replication asks of a node's shards in the simulator: its Merkle leaves, its
//! leaf states for anti-entropy, and merging a peer's deltas (a batch, or leaf states
//! with what the peer has forgotten), as the server's `shell::replication` does. Part
//! of [`Sim`]; `replicate.rs` drives the links.

use meridian::delta::Delta;
use meridian::engine::kv::merkle::MerkleLeaves;
use meridian::shard::{ShardOp, ShardReply};

use super::Sim;

impl Sim {
    /// The node's leaves: its shards' leaves combined. Read in place rather than
    /// through `ShardOp::MerkleLeaves` (which hands the server's batcher a 32 KiB copy
    /// per shard, and has no other effect): copying them was 7% of a replicated run.
    pub(super) fn leaves(&mut self, node: usize) -> MerkleLeaves {
        let mut leaves = MerkleLeaves::new();
        for shard in &mut self.nodes[node].shards {
            if let Some(l) = shard.kv.keys.merkle() {
                leaves.combine(l);
            }
        }
        leaves
    }

    pub(super) fn export(&mut self, node: usize, leaves: &[u16], now: u64) -> Vec<Delta> {
        let mut deltas = Vec::new();
        for shard in &mut self.nodes[node].shards {
            if let ShardReply::Deltas(d) = shard.apply(ShardOp::ExportLeaves(leaves.to_vec()), now) {
                deltas.extend(d);
            }
        }
        deltas
    }

    /// Merge a peer's deltas; the positions they reached in each shard's delta stream,
    /// or None when a shard refused (its persistence is behind).
    pub(super) fn merge(&mut self, node: usize, deltas: Vec<Delta>, now: u64) -> Option<Vec<u64>> {
        self.merge_parts(node, deltas, None, now)
    }

    /// [`Sim::merge`] of a peer's anti-entropy states of `leaves`, with what its forget
    /// records imply (`ShardOp::MergeLeaves`).
    pub(super) fn merge_leaf_states(&mut self, node: usize, leaves: &[u16], deltas: Vec<Delta>, now: u64) -> Option<Vec<u64>> {
        self.merge_parts(node, deltas, Some(leaves), now)
    }

    fn merge_parts(&mut self, node: usize, deltas: Vec<Delta>, leaves: Option<&[u16]>, now: u64) -> Option<Vec<u64>> {
        let shards = self.nodes[node].shards.len();
        let parts = meridian::shard::split_by_shard(deltas, shards);
        let mut positions = vec![0u64; shards];
        let mut all = true;
        self.nodes[node].notify_on();
        self.nodes[node].take_events();
        for (shard, part) in parts.into_iter().enumerate() {
            if part.is_empty() {
                continue;
            }
            let op = match leaves {
                Some(leaves) => ShardOp::MergeLeaves { leaves: leaves.to_vec(), deltas: part },
                None => ShardOp::MergeRemote(part),
            };
            match self.nodes[node].shards[shard].apply(op, now) {
                ShardReply::Count(position) => positions[shard] = position as u64,
                _ => all = false,
            }
            self.notify_merged(node, shard);
        }
        all.then_some(positions)
    }
}
