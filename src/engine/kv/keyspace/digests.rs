//! The keyspace's Merkle leaves (anti-entropy, DESIGN §6) and each live entry's kept
//! digest, including the digests a hot key's writes leave for later.
//!
//! Why later: a key written over and over (a queue's pushes and pops, a counter, a
//! big hash) had its whole-key digest computed on every write, ~350 instructions of an
//! LPOP's ~7,000 on a node with peers (callgrind, 2026-12-04), though anti-entropy
//! reads the leaves about once a second. A write to the key the previous write also
//! changed takes the entry's digest out of its leaf and marks it stale (a kept digest
//! of 0, which no real digest is); the writes after it leave a stale entry alone, and
//! [`Keyspace::merkle`] puts every stale digest back before it hands the leaves out.
//! A key written once and then left (random keys) is digested at once, while its
//! entry is still in the cache: deferring it would cost a cache miss later.
//!
//! Invariant: every leaf is the XOR of the digests kept in the entries and tombstones
//! of its keys (a stale entry adds nothing); [`Keyspace::merkle`] leaves no entry
//! stale, so what it returns is the XOR of every key's true digest.
//!
//! Must never: hand out leaves with a stale entry in them, or let the list of stale
//! entries grow past [`STALE_DIGESTS_MAX`] (a write past it digests at once).

use super::{Entry, Keyspace, key_hash, leaf_of};
use crate::engine::kv::merkle::{self, MerkleLeaves};
use crate::engine::kv::value::KeyState;

/// Entries left stale at most; a write past this digests at once.
pub(super) const STALE_DIGESTS_MAX: usize = 4096;

/// The stale entries and what decides the next one.
#[derive(Default)]
pub(super) struct Deferred {
    /// The hash of every entry made stale and not settled since (an entry appears once
    /// for each time it was made stale; one removed or settled otherwise meanwhile is
    /// skipped when its turn comes).
    pub(super) stale: Vec<u64>,
    /// The hash of the last live entry a write changed.
    last_written: Option<u64>,
}

impl Keyspace {
    /// Keep Merkle leaves from now on (replication), starting from what is stored.
    pub fn enable_merkle(&mut self) {
        let mut leaves = MerkleLeaves::new();
        for table in &mut self.tables {
            // Every entry is made again with room for its digest.
            let entries: Vec<Entry> = table.drain().collect();
            for entry in entries {
                let digest = merkle::digest(entry.key(), entry.state());
                let hash = entry.hash();
                leaves.toggle(leaf_of(hash), digest);
                table.insert_unique(hash, entry.with_digest(Some(digest)), |e| e.hash());
            }
        }
        for (key, state) in &self.tombstones {
            leaves.toggle(leaf_of(key_hash(key)), merkle::digest(key, state));
        }
        self.merkle = Some(leaves);
        self.deferred = Deferred::default();
    }

    /// The leaves, every stale digest settled first (`None` while no leaves are kept).
    pub fn merkle(&mut self) -> Option<&MerkleLeaves> {
        self.settle_digests();
        self.merkle.as_ref()
    }

    /// Digest every entry left stale and put it back into its leaf.
    fn settle_digests(&mut self) {
        let Some(leaves) = &mut self.merkle else { return };
        let slot_bits = self.slot_bits;
        for hash in self.deferred.stale.drain(..) {
            let table = &mut self.tables[super::table_index_of(slot_bits, hash)];
            if let Some(entry) = table.find_mut(hash, |e| e.kept_digest() == 0 && e.hash() == hash) {
                let digest = merkle::digest(entry.key(), entry.state());
                leaves.toggle(leaf_of(hash), digest);
                entry.set_digest(digest);
            }
        }
    }

    /// The kept digest of a live entry whose state a write just changed, and its
    /// leaf: digested now, or made stale (see the module's docs). Nothing while no
    /// leaves are kept.
    pub(super) fn rewrite_digest(merkle: &mut Option<MerkleLeaves>, deferred: &mut Deferred, entry: &mut Entry, hash: u64) {
        let Some(leaves) = merkle else { return };
        let kept = entry.kept_digest();
        let again = deferred.last_written == Some(hash);
        deferred.last_written = Some(hash);
        if kept == 0 {
            // Stale already: settled later, from whatever state it holds then.
            return;
        }
        if again && deferred.stale.len() < STALE_DIGESTS_MAX {
            leaves.toggle(leaf_of(hash), kept);
            entry.set_digest(0);
            deferred.stale.push(hash);
            return;
        }
        let digest = merkle::digest(entry.key(), entry.state());
        leaves.toggle(leaf_of(hash), kept ^ digest);
        entry.set_digest(digest);
    }

    pub(super) fn merkle_toggle(&mut self, key: &[u8], hash: u64, state: &KeyState) {
        if let Some(leaves) = &mut self.merkle {
            leaves.toggle(leaf_of(hash), merkle::digest(key, state));
        }
    }

    /// The digest an entry holding `state` stores (`None`, and no room for one, while
    /// no leaves are kept).
    pub(super) fn digest_to_store(&self, key: &[u8], state: &KeyState) -> Option<u64> {
        self.merkle.is_some().then(|| merkle::digest(key, state))
    }

    /// An entry's state changed from the one digested as `old` to the one digested as
    /// `new` (0: none, or a stale entry's): its leaf swaps one for the other.
    pub(super) fn merkle_replace(&mut self, hash: u64, old: u64, new: u64) {
        if let Some(leaves) = &mut self.merkle {
            leaves.toggle(leaf_of(hash), old ^ new);
        }
    }

    /// Whether `entry`'s kept digest is its state's, or stale, on a keyspace that
    /// keeps leaves (`keeps_leaves`) or not (debug checks). Takes the flag rather than
    /// the keyspace: the writes check an entry they hold borrowed from its table.
    pub(super) fn digest_is_current_or_stale(keeps_leaves: bool, key: &[u8], entry: &Entry) -> bool {
        let kept = entry.kept_digest();
        if keeps_leaves { kept == 0 || kept == merkle::digest(key, entry.state()) } else { kept == 0 }
    }
}
