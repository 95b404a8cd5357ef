//! Which shard owns a key: a hash of the key, or of its `{hash tag}` so related keys
//! can share a shard (and multi-key commands on them stay single-shard and atomic).
//! Pure: the shell's router and the simulator both use it.
//!
//! The routing hash keeps a fixed, public seed on purpose, unlike the key hash
//! (`engine::kv::hash_seed`). Which shard a key lands on is written into stored and
//! replicated records (a FLUSHALL of one shard names the keys that route to `index` of
//! `count`, see [`ShardScope`]), so it must give the same answer in every process, on
//! every node and after any restart, secret or not. And a crafted key set can do no
//! more here than put many keys on one shard: a load imbalance bounded by the shard
//! count, not the quadratic lookups of colliding keys within a hash table, which the
//! seeded key hash prevents.

use std::hash::BuildHasher;

/// Seed of the routing hash; distinct from the keyspace hash so that the keys of one
/// shard still spread over all of its hash-table buckets.
const ROUTE_HASH_SEED: u64 = 0x726f_7574_655f_6b65;

/// The part of a key that decides its shard: the first non-empty `{...}` section, or
/// the whole key (Redis Cluster's hash-tag rule).
pub fn routing_part(key: &[u8]) -> &[u8] {
    // `memchr`, not a byte loop: every command for a key of a node with several shards
    // routes it (a pipelined one twice: its prefetch, then its run), and the loop cost
    // ~100 instructions of the ~195 a routing took for a 16-byte key.
    if let Some(open) = memchr::memchr(b'{', key)
        && let Some(len) = memchr::memchr(b'}', &key[open + 1..])
        && len > 0
    {
        return &key[open + 1..open + 1 + len];
    }
    key
}

/// The keys one shard owned: its index among `count` shards. A FLUSHALL is carried out
/// by every shard on its own keys, each with its own causal context (shards keep their
/// own clocks); replayed on another shard count or merged on another node, each part
/// must apply to exactly the keys it covered, or it would remove writes another shard
/// made after it with lower stamps.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ShardScope {
    pub index: u16,
    pub count: u16,
}

impl Default for ShardScope {
    fn default() -> ShardScope {
        ShardScope::ALL
    }
}

impl ShardScope {
    /// Every key (a node with one shard; FLUSHALL records written before scopes).
    pub const ALL: ShardScope = ShardScope { index: 0, count: 1 };

    pub fn contains(&self, key: &[u8]) -> bool {
        shard_for_key(key, self.count.max(1) as usize) == self.index as usize
    }
}

/// The shard (of `shards`) that owns `key`.
pub fn shard_for_key(key: &[u8], shards: usize) -> usize {
    debug_assert!(shards > 0);
    if shards <= 1 {
        return 0;
    }
    let hash = foldhash::fast::FixedState::with_seed(ROUTE_HASH_SEED).hash_one(routing_part(key));
    ((hash as u128 * shards as u128) >> 64) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_tags_pick_the_routing_part() {
        assert_eq!(routing_part(b"user:{42}:name"), b"42");
        assert_eq!(routing_part(b"{}x"), b"{}x");
        assert_eq!(routing_part(b"plain"), b"plain");
        assert_eq!(routing_part(b"a{b"), b"a{b");
        // Redis Cluster's rule exactly: the first `{`, then the first `}` after it.
        assert_eq!(routing_part(b"}{x}"), b"x");
        assert_eq!(routing_part(b"a{b}{c}"), b"b");
        assert_eq!(routing_part(b"{{x}}"), b"{x");
        assert_eq!(routing_part(b"{"), b"{");
        assert_eq!(routing_part(b""), b"");
    }

    #[test]
    fn keys_with_one_tag_share_a_shard_and_keys_spread() {
        assert_eq!(shard_for_key(b"{u1}:a", 8), shard_for_key(b"{u1}:b", 8));
        let used: std::collections::HashSet<usize> = (0..200).map(|i| shard_for_key(format!("k{i}").as_bytes(), 8)).collect();
        assert_eq!(used.len(), 8);
    }
}
