//! Replaying stored or received deltas into a node's shards: which shard each delta
//! goes to, whatever the shard count was when it was written. Owns only the routing;
//! how a shard joins a delta (and applies a scoped tombstone-collection record to its
//! own keys only) is `Shard::merge_delta`'s and `KvEngine::merge_forget`'s.

use super::Shard;
use crate::delta::Delta;
use crate::routing;

/// Apply recovered deltas to a node's shards, routing each key to its shard (whatever
/// the shard count was when they were written) and a flush to every shard.
pub fn merge_recovered(shards: &mut [Shard], deltas: Vec<Delta>) {
    let parts = split_by_shard(deltas, shards.len());
    for (shard, part) in shards.iter_mut().zip(parts) {
        part.into_iter().for_each(|delta| shard.merge_delta(delta));
    }
}

/// Split deltas into one run per shard, in order: each key to the shard that owns it
/// among `shards`, a flush or forget record to every shard.
pub fn split_by_shard(deltas: Vec<Delta>, shards: usize) -> Vec<Vec<Delta>> {
    assert!(shards > 0);
    let mut parts: Vec<Vec<Delta>> = (0..shards).map(|_| Vec::with_capacity(deltas.len() / shards + 1)).collect();
    for delta in deltas {
        match &delta {
            Delta::Key { key, .. } => parts[routing::shard_for_key(key, shards)].push(delta),
            Delta::Flush { .. } | Delta::Forget { .. } => parts.iter_mut().for_each(|p| p.push(delta.clone())),
        }
    }
    parts
}
