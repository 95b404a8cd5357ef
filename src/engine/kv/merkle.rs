//! The anti-entropy summary of a keyspace (DESIGN §6): a Tictac-style tree whose leaves
//! are the XOR of the digests of every `(key, state)` in one hash bucket.
//!
//! XOR makes the tree incremental: a write replaces `digest(old)` by `digest(new)` in
//! its leaf with two XORs, in any order, and the leaves of several shards combine into
//! the node's leaves with XOR too (shards partition the keys). Two nodes holding the
//! same states have equal leaves whatever their shard counts. Digests use XXH3 over an
//! explicit little-endian encoding, so every build on every platform agrees.
//!
//! Pure data: no I/O, no clock.

use xxhash_rust::xxh3::Xxh3;

use crate::crdt::{Dot, VersionVector};
use crate::engine::kv::{KeyState, StrVal};

/// Leaves: 4096 buckets of the key's slot position (its top 12 bits).
pub const LEAF_BITS: u32 = 12;
pub const LEAVES: usize = 1 << LEAF_BITS;
/// Leaves per group: the first exchange compares 64 group hashes, then only the leaves
/// of groups that differ.
pub const GROUP_LEAVES: usize = 64;
pub const GROUPS: usize = LEAVES / GROUP_LEAVES;

/// The leaf of a key, from its 32-bit slot position (see `engine::kv::keyspace`).
pub fn leaf_of_position(slot_position: u32) -> u16 {
    (slot_position >> (32 - LEAF_BITS)) as u16
}

/// The digest of one key and its full state.
pub fn digest(key: &[u8], state: &KeyState) -> u64 {
    // A state of one value at one dot (every SET's, and the only one a replicated node
    // digests on each such write) hashes the same bytes gathered in two copies instead
    // of fed field by field through a zeroed buffer: measured, that feeding was ~5 % of
    // a SET's time with peers (docs/benchmarks.md, "Thirty-first session").
    if let Some((dot, value)) = state.plain_value() {
        return match value {
            StrVal::Int(n) => digest_plain(key, &plain_head(dot, 0, n.to_le_bytes()), &[]),
            StrVal::Raw(bytes) => digest_plain(key, &plain_head(dot, 1, (bytes.len() as u64).to_le_bytes()), bytes),
        };
    }
    // A collection key and nothing else (every HSET, SADD, ZADD, LPUSH and LPOP's key
    // on a node with peers): its few fields written straight, as `lone_part_digest` says.
    if let Some((part, elements)) = state.lone_part() {
        return lone_part_digest(key, part.digest_tag(), elements.removed(), elements.entries_len() as u64, elements.digest());
    }
    // Gathered into one buffer first: one XXH3 call over ~60 bytes is several times
    // cheaper than a streaming update per field (this runs once or twice per write).
    let mut buf = Gather::new();
    buf.put(&(key.len() as u64).to_le_bytes());
    buf.put(key);
    state.feed_digest(&mut |bytes| buf.put(bytes));
    let digest = xxhash_rust::xxh3::xxh3_64(buf.as_slice());
    // Zero is the digest of "no key": keep real keys off it.
    if digest == 0 { 1 } else { digest }
}

/// [`digest`] of a key holding one collection part and nothing else: the bytes
/// `KeyState::feed_digest` feeds for it (no context, values or TTL writes, then the
/// part's tag, its removal context, its entry count and its elements' digest),
/// written into one buffer (`hash_filled`). Measured, the general feed was ~800 instructions of
/// an LPOP on a node with peers (callgrind, 2026-12-03): the part iterator and a
/// zeroed 256-byte gather buffer.
fn lone_part_digest(key: &[u8], tag: u8, removed: &VersionVector, entries: u64, elements_digest: u64) -> u64 {
    const FIXED: usize = 8 + 3 * 4 + 1 + 4 + 8 + 8;
    const DOT: usize = 8 + 2;
    let total = FIXED + key.len() + removed.len() * DOT;
    hash_filled(total, |buf| {
        let mut at = 0;
        let mut put = |bytes: &[u8]| {
            buf[at..at + bytes.len()].copy_from_slice(bytes);
            at += bytes.len();
        };
        put(&(key.len() as u64).to_le_bytes());
        put(key);
        // No explicit context, no values, no TTL writes: three zero counts.
        put(&[0; 12]);
        put(&[tag]);
        put(&(removed.len() as u32).to_le_bytes());
        for dot in removed.iter() {
            put(&dot.hlc.0.to_le_bytes());
            put(&dot.node.to_le_bytes());
        }
        put(&entries.to_le_bytes());
        put(&elements_digest.to_le_bytes());
        debug_assert_eq!(at, total);
    })
}

/// Fed bytes up to which [`hash_filled`] gathers on the stack: a key or element name,
/// a short value and a few fields (the common write) fit.
const STACK_GATHER_BYTES: usize = 128;

/// The digest of `total` fed bytes that `fill` writes into a zeroed buffer (on the
/// stack up to [`STACK_GATHER_BYTES`], else on the heap): XXH3, 0 moved to 1. What the
/// direct digests of the common states ([`digest_plain`], [`lone_part_digest`]) share.
#[inline(always)]
fn hash_filled(total: usize, fill: impl FnOnce(&mut [u8])) -> u64 {
    let mut inline = [0u8; STACK_GATHER_BYTES];
    let mut spilled;
    let buf: &mut [u8] = if total <= STACK_GATHER_BYTES {
        &mut inline[..total]
    } else {
        spilled = vec![0u8; total];
        &mut spilled
    };
    fill(buf);
    let digest = xxhash_rust::xxh3::xxh3_64(buf);
    if digest == 0 { 1 } else { digest }
}

/// The bytes before a plain element's value in its digest (see [`digest_plain`]).
pub const PLAIN_HEAD_BYTES: usize = 4 + 4 + 8 + 2 + 1 + 8;

/// What [`KeyState::feed_digest`] feeds for a state of one value at `dot` before the
/// value's own bytes: no explicit context, one value, its dot, the value's tag (0 an
/// integer, 1 bytes) and its integer or length (`word`).
pub fn plain_head(dot: Dot, tag: u8, word: [u8; 8]) -> [u8; PLAIN_HEAD_BYTES] {
    const _: () = assert!(std::mem::size_of::<crate::crdt::NodeId>() == 2, "a dot's node feeds 2 bytes");
    let mut head = [0u8; PLAIN_HEAD_BYTES];
    head[4..8].copy_from_slice(&1u32.to_le_bytes());
    head[8..16].copy_from_slice(&dot.hlc.0.to_le_bytes());
    head[16..18].copy_from_slice(&dot.node.to_le_bytes());
    head[18] = tag;
    head[19..27].copy_from_slice(&word);
    head
}

/// [`digest`] of a key whose state's fed bytes are `head`, then `value`, then a zero
/// `u32`: a collection's plain element, which has no [`KeyState`] to feed them
/// (`element.rs` says what the head holds). Gathered with two copies where feeding
/// makes an indirect call and a copy per field: an element write digests two.
pub fn digest_plain(key: &[u8], head: &[u8; PLAIN_HEAD_BYTES], value: &[u8]) -> u64 {
    hash_named(key, PLAIN_HEAD_BYTES + value.len() + 4, |rest| {
        let (fixed, rest) = rest.split_at_mut(PLAIN_HEAD_BYTES);
        fixed.copy_from_slice(head);
        let (bytes, trailer) = rest.split_at_mut(value.len());
        bytes.copy_from_slice(value);
        // The trailer is the zero `u32` the buffer already holds (no TTL write).
        debug_assert_eq!(trailer, &[0u8; 4]);
    })
}

/// [`digest`] of a key whose state feeds exactly `fed` (a form that holds no
/// [`KeyState`] to feed them, as a compact tombstone does: `element/tombstone.rs`).
pub fn digest_fed(key: &[u8], fed: &[u8]) -> u64 {
    hash_named(key, fed.len(), |rest| rest.copy_from_slice(fed))
}

/// [`hash_filled`] of a key's fed prefix (its length and bytes, as [`digest`] feeds
/// them) and then `rest` bytes that `fill` writes.
#[inline(always)]
fn hash_named(key: &[u8], rest: usize, fill: impl FnOnce(&mut [u8])) -> u64 {
    hash_filled(8 + key.len() + rest, |buf| {
        let (len, tail) = buf.split_at_mut(8);
        len.copy_from_slice(&(key.len() as u64).to_le_bytes());
        let (name, tail) = tail.split_at_mut(key.len());
        name.copy_from_slice(key);
        fill(tail)
    })
}

/// Bytes gathered on the stack, spilling to the heap past `GATHER_INLINE_BYTES` (a big
/// value). Cheaper per field than a growable small-vector: one bounds check, one copy.
struct Gather {
    inline: [u8; GATHER_INLINE_BYTES],
    len: usize,
    spill: Vec<u8>,
}

const GATHER_INLINE_BYTES: usize = 256;

impl Gather {
    fn new() -> Gather {
        Gather { inline: [0; GATHER_INLINE_BYTES], len: 0, spill: Vec::new() }
    }

    // Always inlined, with the spill out of line: its callers feed fixed-size fields
    // (a `u32`, a dot's `u64`) through a closure, and only when that closure stays
    // small is it inlined into them, each copy then a move of that size instead of a
    // call to `memcpy` with a variable length.
    #[inline(always)]
    fn put(&mut self, bytes: &[u8]) {
        let end = self.len + bytes.len();
        if end <= GATHER_INLINE_BYTES {
            self.inline[self.len..end].copy_from_slice(bytes);
            self.len = end;
            return;
        }
        self.spill_put(bytes);
    }

    #[cold]
    #[inline(never)]
    fn spill_put(&mut self, bytes: &[u8]) {
        let end = self.len + bytes.len();
        if self.spill.is_empty() {
            self.spill.reserve(end.max(2 * GATHER_INLINE_BYTES));
            self.spill.extend_from_slice(&self.inline[..self.len]);
        }
        self.spill.extend_from_slice(bytes);
        // Once spilled, everything goes to the heap: `len` stays past the inline size.
        self.len = end.max(GATHER_INLINE_BYTES + 1);
    }

    fn as_slice(&self) -> &[u8] {
        if self.spill.is_empty() { &self.inline[..self.len] } else { &self.spill }
    }
}

/// One keyspace's leaves (a shard's, or a node's once XOR-combined).
#[derive(Clone, PartialEq, Eq)]
pub struct MerkleLeaves {
    leaves: Box<[u64]>,
}

impl std::fmt::Debug for MerkleLeaves {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MerkleLeaves(root {:016x})", self.root())
    }
}

impl Default for MerkleLeaves {
    fn default() -> Self {
        MerkleLeaves::new()
    }
}

impl MerkleLeaves {
    pub fn new() -> MerkleLeaves {
        MerkleLeaves { leaves: vec![0u64; LEAVES].into_boxed_slice() }
    }

    pub fn from_leaves(leaves: Vec<u64>) -> Option<MerkleLeaves> {
        (leaves.len() == LEAVES).then(|| MerkleLeaves { leaves: leaves.into_boxed_slice() })
    }

    /// Add or remove one digest (XOR is its own inverse).
    pub fn toggle(&mut self, leaf: u16, digest: u64) {
        self.leaves[leaf as usize] ^= digest;
    }

    pub fn leaf(&self, leaf: u16) -> u64 {
        self.leaves[leaf as usize]
    }

    pub fn leaves(&self) -> &[u64] {
        &self.leaves
    }

    /// Combine another keyspace's leaves into these (shards into a node).
    pub fn combine(&mut self, other: &MerkleLeaves) {
        for (mine, theirs) in self.leaves.iter_mut().zip(other.leaves.iter()) {
            *mine ^= theirs;
        }
    }

    /// Each group's hash: XXH3 of its leaves' little-endian bytes. Gathered and hashed
    /// in one call (a streaming update per 8-byte leaf cost fifteen times more; the
    /// digest is the same, see the test).
    pub fn groups(&self) -> Vec<u64> {
        self.leaves
            .chunks(GROUP_LEAVES)
            .map(|chunk| {
                let mut bytes = [0u8; GROUP_LEAVES * 8];
                for (out, leaf) in bytes.chunks_exact_mut(8).zip(chunk) {
                    out.copy_from_slice(&leaf.to_le_bytes());
                }
                xxhash_rust::xxh3::xxh3_64(&bytes)
            })
            .collect()
    }

    /// One number for the whole tree (INFO, the simulator's convergence check).
    pub fn root(&self) -> u64 {
        let mut hasher = Xxh3::new();
        for group in self.groups() {
            hasher.update(&group.to_le_bytes());
        }
        hasher.digest()
    }

    /// The groups whose hashes differ from `theirs`.
    pub fn differing_groups(&self, theirs: &[u64]) -> Vec<u16> {
        let mine = self.groups();
        (0..GROUPS).filter(|&g| theirs.get(g) != Some(&mine[g])).map(|g| g as u16).collect()
    }

    /// The leaves of `group` (for the second exchange).
    pub fn group_leaves(&self, group: u16) -> &[u64] {
        let start = group as usize * GROUP_LEAVES;
        &self.leaves[start..start + GROUP_LEAVES]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crdt::{Dot, Hlc};
    use crate::engine::kv::StrVal;

    fn state(ms: u64, value: i64) -> KeyState {
        KeyState::with_value(Dot::new(Hlc::from_parts(ms, 0), 1), StrVal::Int(value), None)
    }

    #[test]
    fn a_digest_hashes_exactly_the_fed_bytes_whatever_their_size() {
        for value_bytes in [0usize, 3, 200, 250, 256, 1000, 70_000] {
            let value = StrVal::raw(bytes::Bytes::from(vec![b'v'; value_bytes]));
            // With a TTL (the general path) and without (a plain state's own path).
            for ttl in [Some(5), None] {
                let state = KeyState::with_value(Dot::new(Hlc::from_parts(9, 0), 2), value.clone(), ttl);
                assert_eq!(state.plain_value().is_some(), ttl.is_none());
                assert_eq!(digest(b"key", &state), digest_of_fed_bytes(b"key", &state), "value of {value_bytes} bytes, TTL {ttl:?}");
            }
        }
        for n in [0, -1, i64::MAX, i64::MIN] {
            let state = KeyState::with_value(Dot::new(Hlc::from_parts(u64::MAX >> 20, 7), 65_000), StrVal::Int(n), None);
            assert!(state.plain_value().is_some());
            assert_eq!(digest(b"counter", &state), digest_of_fed_bytes(b"counter", &state), "integer {n}");
        }
        let long_key = [b'k'; 300];
        let state = KeyState::with_value(Dot::new(Hlc::from_parts(9, 0), 2), StrVal::Int(3), None);
        assert_eq!(digest(&long_key, &state), digest_of_fed_bytes(&long_key, &state), "a key past the stack buffer");
    }

    /// A key holding one collection part and nothing else is digested without the
    /// general feed (`lone_part_digest`): the same digest for a hash, a set and a list,
    /// with elements and element tombstones from several nodes and a key past the
    /// stack buffer; the same keys written again after a DEL take the general path.
    #[test]
    fn a_lone_collection_part_digests_as_its_fed_bytes() {
        use crate::command::hash::{HSetReply, HashCommand};
        use crate::command::list::{End, ListCommand};
        use crate::command::set::SetCommand;
        use crate::engine::kv::{KvEngine, WriteCtx, key_hash};
        let mut kv = KvEngine { keep_tombstones: true, ..KvEngine::default() };
        let mut clock = crate::crdt::HlcClock::new();
        let mut sink = crate::engine::kv::collection_writes::lone_removal_tests::Deltas::default();
        let long_key = bytes::Bytes::from(vec![b'k'; 200]);
        let keys = [bytes::Bytes::from_static(b"h"), bytes::Bytes::from_static(b"s"), bytes::Bytes::from_static(b"l"), long_key];
        const ROUNDS: u16 = 11;
        let mut lone = 0;
        for round in 0..ROUNDS {
            // Each round's writes come from another node; every third round deletes the
            // keys first (a key written after its DEL holds that context: the general
            // path), and the others write onto what is there (a lone part).
            let mut ctx = WriteCtx { clock: &mut clock, node: round + 1, now_ms: 1_000, string_bytes_max: 1 << 20, deltas: &mut sink };
            for (i, key) in keys.iter().enumerate() {
                if round % 3 == 2 {
                    kv.del(&mut ctx, std::slice::from_ref(key));
                }
                let (a, b) = (bytes::Bytes::from(format!("a{round}")), bytes::Bytes::from(format!("b{round}")));
                match i {
                    1 => drop(kv.set_command(&mut ctx, SetCommand::Add { key: key.clone(), members: vec![a, b.clone()] }, &mut || 0)),
                    2 => {
                        kv.list_command(
                            &mut ctx,
                            ListCommand::Push { key: key.clone(), end: End::Left, elements: vec![a, b], only_if_exists: false },
                        );
                        kv.list_command(&mut ctx, ListCommand::Pop { key: key.clone(), end: End::Right, count: None });
                    }
                    _ => {
                        let pairs = vec![(a.clone(), b.clone()), (b.clone(), a)];
                        kv.hash_command(&mut ctx, HashCommand::Set { key: key.clone(), pairs, reply: HSetReply::Added }, &mut || 0);
                        kv.hash_command(&mut ctx, HashCommand::Del { key: key.clone(), fields: vec![b] }, &mut || 0);
                    }
                }
                let state = kv.keys.get(key, key_hash(key)).expect("written").state();
                lone += usize::from(state.lone_part().is_some());
                assert_eq!(digest(key, state), digest_of_fed_bytes(key, state), "round {round}, key {i}");
            }
            sink.0.clear();
        }
        assert!(lone >= 2 * keys.len(), "the lone-part path was taken ({lone} times)");
        assert!(lone < keys.len() * usize::from(ROUNDS), "and the general path too");
    }

    /// The definition of a digest: XXH3 of the key's length and bytes and every byte
    /// the state feeds, with 0 moved to 1.
    fn digest_of_fed_bytes(key: &[u8], state: &KeyState) -> u64 {
        let mut fed = (key.len() as u64).to_le_bytes().to_vec();
        fed.extend_from_slice(key);
        state.feed_digest(&mut |b| fed.extend_from_slice(b));
        let expected = xxhash_rust::xxh3::xxh3_64(&fed);
        if expected == 0 { 1 } else { expected }
    }

    #[test]
    fn leaves_are_order_independent_and_removal_restores_them() {
        let (a, b) = (digest(b"a", &state(1, 1)), digest(b"b", &state(2, 2)));
        let mut one = MerkleLeaves::new();
        one.toggle(3, a);
        one.toggle(3, b);
        let mut two = MerkleLeaves::new();
        two.toggle(3, b);
        two.toggle(3, a);
        assert_eq!(one, two);
        one.toggle(3, a);
        one.toggle(3, b);
        assert_eq!(one, MerkleLeaves::new());
    }

    #[test]
    fn different_states_or_keys_have_different_digests() {
        assert_ne!(digest(b"k", &state(1, 1)), digest(b"k", &state(1, 2)));
        assert_ne!(digest(b"k", &state(1, 1)), digest(b"k", &state(2, 1)));
        assert_ne!(digest(b"k", &state(1, 1)), digest(b"j", &state(1, 1)));
    }

    /// Group hashes cross the wire: they must stay what peers of earlier builds compute
    /// (a streaming XXH3 over each leaf's little-endian bytes).
    #[test]
    fn group_hashes_equal_a_streaming_hash_of_the_leaves() {
        let mut leaves = MerkleLeaves::new();
        for leaf in 0..LEAVES as u16 {
            leaves.toggle(leaf, (leaf as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        }
        let streamed: Vec<u64> = leaves
            .leaves()
            .chunks(GROUP_LEAVES)
            .map(|chunk| {
                let mut hasher = Xxh3::new();
                chunk.iter().for_each(|leaf| hasher.update(&leaf.to_le_bytes()));
                hasher.digest()
            })
            .collect();
        assert_eq!(leaves.groups(), streamed);
    }

    #[test]
    fn differing_groups_name_exactly_the_changed_groups() {
        let mut one = MerkleLeaves::new();
        let two = MerkleLeaves::new();
        one.toggle(0, 7);
        one.toggle((5 * GROUP_LEAVES + 3) as u16, 9);
        assert_eq!(one.differing_groups(&two.groups()), vec![0, 5]);
        assert!(one.differing_groups(&one.groups()).is_empty());
        assert_ne!(one.root(), two.root());
    }
}
