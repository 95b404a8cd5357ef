//! One shard's keys: a directory of small hash tables indexed by bits of the key hash,
//! plus an expiry index.
//!
//! Why a directory and not one big table: SCAN must return every key that exists for
//! the whole iteration, whatever the inserts, deletes and resizes in between. Keys live
//! in the sub-table of their hash "slot"; a cursor is a position in slot space, and
//! sub-tables only ever split in place (slot ranges refine), so a cursor stays valid
//! across growth. The slot bits are taken from the middle of the hash because hashbrown
//! uses the top bits (control bytes) and low bits (bucket index) itself.
//!
//! Replication adds two things, both off for a lone node: tombstones (the removal
//! metadata of keys that no longer exist, kept apart so that no read ever sees them)
//! and the Merkle leaves of anti-entropy, updated on every change of a live key or a
//! tombstone.
//!
//! Secondary indexes (the vector engine) add a third: when asked, the keyspace notes
//! every key whose live state changed (put, update, remove, clear) for the shard to
//! hand to them after the operation; off, it costs one branch per change.
//!
//! Expiry: a min-heap of `(expire_at_ms, key)` with lazy invalidation; entries whose key
//! has changed TTL or gone are skipped when popped, and the heap is rebuilt when stale
//! entries outnumber live ones, so it stays bounded by twice the keys with a TTL.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::hash::BuildHasher;

use bytes::Bytes;
use hashbrown::HashTable;

use super::value::KeyState;
use crate::engine::kv::merkle::{self, MerkleLeaves};
use growth::insert_new;

/// Slot positions are 32-bit; a SCAN cursor carries one.
pub const SLOT_SPACE: u64 = 1 << 32;
const SLOT_BITS_MIN: u32 = 4;
const SLOT_BITS_MAX: u32 = 24;
/// Average keys per sub-table before the directory doubles.
const KEYS_PER_TABLE_MAX: usize = 64;
/// Expiry heap entries allowed beyond twice the live TTL count before a rebuild.
const EXPIRY_HEAP_SLACK: usize = 1024;

/// Hash of a key: decides its slot and its anti-entropy leaf (not its shard: that is
/// `routing`). Seeded per cluster (`hash_seed`), so clients cannot craft collisions.
#[inline]
pub fn key_hash(key: &[u8]) -> u64 {
    key_hash_with_seed(super::hash_seed::key_hash_seed(), key)
}

/// [`key_hash`] under a given seed.
#[inline]
pub fn key_hash_with_seed(seed: u64, key: &[u8]) -> u64 {
    foldhash::fast::FixedState::with_seed(seed).hash_one(key)
}

fn slot_position(hash: u64) -> u32 {
    (hash >> 16) as u32
}

/// The sub-table of a key hash under `slot_bits` bits of directory.
fn table_index_of(slot_bits: u32, hash: u64) -> usize {
    (slot_position(hash) >> (32 - slot_bits)) as usize
}

/// The anti-entropy leaf of a key hash.
pub fn leaf_of(hash: u64) -> u16 {
    merkle::leaf_of_position(slot_position(hash))
}

type TombstoneMap = hashbrown::HashMap<Bytes, KeyState, foldhash::fast::FixedState>;

mod digests;
mod entry;
mod expiry;
mod growth;
mod prefetch;
mod removals;
mod tombstone_keys;

use tombstone_keys::TombstoneKeys;

pub use prefetch::{PREFETCH_KEYS_MAX, Prefetch};

pub use entry::Entry;

impl Entry {
    /// The key's hash, computed again rather than stored: it is needed only when a
    /// table grows or splits and by anti-entropy's leaf scans, and 8 bytes a key would
    /// take a short key's entry past jemalloc's 48-byte size class (see `entry.rs`).
    pub fn hash(&self) -> u64 {
        key_hash(self.key())
    }
}

pub struct Keyspace {
    /// Entries are one allocation each (`entry.rs`): a table keeps some buckets empty
    /// (hashbrown grows at 7/8 full, and a split table starts half empty), and an empty
    /// bucket of pointers costs 8 bytes where one of inline entries would cost a whole
    /// entry. Each entry has room for its Merkle digest exactly while `merkle` is kept:
    /// the digest lets a write take the old state out of its leaf without reading it
    /// again (the old value's bytes are cold in a big keyspace, a cache miss per
    /// overwrite); a node without peers keeps no leaves and pays no room for it.
    tables: Vec<HashTable<Entry>>,
    slot_bits: u32,
    len: usize,
    expiring: usize,
    /// The sum of the expiring keys' instants (ms): INFO's `avg_ttl` is its mean less
    /// the time now, exact where Redis samples. u128: a billion keys' instants overflow u64.
    expiry_sum_ms: u128,
    expiry_heap: BinaryHeap<Reverse<(u64, Bytes)>>,
    tombstones: TombstoneMap,
    merkle: Option<MerkleLeaves>,
    /// The entries whose digest a hot key's writes left for later (`digests.rs`).
    deferred: digests::Deferred,
    /// Live keys whose collection holds element tombstones (what tombstone GC visits
    /// besides key tombstones), noted on every store of a state: a superset, since a key
    /// that lost them since is skipped by the visit.
    element_tombstone_keys: TombstoneKeys,
    /// Keys whose live state changed since `take_changes` (`None`: nobody follows them),
    /// and the count of changes under the watched prefix.
    changes: Changes,
    /// Every live key went at once (`clear`) since `take_changes`.
    cleared: bool,
    /// Removals by bucket of hash: a missing key's WATCH token (`removals.rs`).
    removals: removals::RemovalCounts,
}

/// What the keyspace notes about changes as they happen.
#[derive(Default)]
struct Changes {
    /// Keys whose live state changed since `take_changes` (`None`: nobody follows
    /// them). Drained after every shard operation, so it holds one operation's keys at
    /// most.
    keys: Option<Vec<Bytes>>,
    /// The prefix whose keys' changes are counted (`watch_prefix`).
    watched: Option<&'static [u8]>,
    watched_count: u64,
}

impl Default for Keyspace {
    fn default() -> Self {
        Keyspace::new()
    }
}

impl Keyspace {
    pub fn new() -> Keyspace {
        Keyspace {
            tables: (0..1 << SLOT_BITS_MIN).map(|_| HashTable::new()).collect(),
            slot_bits: SLOT_BITS_MIN,
            len: 0,
            expiring: 0,
            expiry_sum_ms: 0,
            expiry_heap: BinaryHeap::new(),
            tombstones: TombstoneMap::with_hasher(foldhash::fast::FixedState::with_seed(super::hash_seed::key_hash_seed())),
            merkle: None,
            deferred: digests::Deferred::default(),
            element_tombstone_keys: TombstoneKeys::new(super::hash_seed::key_hash_seed()),
            changes: Changes::default(),
            cleared: false,
            removals: removals::RemovalCounts::default(),
        }
    }

    /// What WATCH compares a missing key by (see `removals.rs`).
    pub fn absent_token(&self, hash: u64) -> u64 {
        self.removals.token(hash)
    }

    /// Note changed keys from now on (or stop). The vector engine turns this on when it
    /// builds its first index on the shard.
    pub fn track_changes(&mut self, on: bool) {
        match (on, self.changes.keys.is_some()) {
            (true, false) => self.changes.keys = Some(Vec::new()),
            (false, true) => self.changes.keys = None,
            _ => {}
        }
    }

    /// The keys whose state changed since the last call (each at least once), and
    /// whether the whole keyspace was cleared meanwhile.
    pub fn take_changes(&mut self) -> (Vec<Bytes>, bool) {
        let cleared = std::mem::take(&mut self.cleared);
        (self.changes.keys.as_mut().map(std::mem::take).unwrap_or_default(), cleared)
    }

    /// Count every change to a key under `prefix` from now on (FT.* definitions: the
    /// node's definition cache is told when the count moves). Always on, unlike
    /// `track_changes`: a definition replicated from a peer must be seen even on a
    /// shard that has built no index.
    pub fn watch_prefix(&mut self, prefix: &'static [u8]) {
        self.changes.watched = Some(prefix);
    }

    /// How many changes (puts, updates, removes, clears) touched keys under the
    /// watched prefix so far. Only ever grows.
    pub fn watched_changes(&self) -> u64 {
        self.changes.watched_count
    }

    fn note_change(changes: &mut Changes, key: &[u8]) {
        if let Some(keys) = &mut changes.keys {
            keys.push(Bytes::copy_from_slice(key));
        }
        // `key` is usually an entry's own: compared by `same_bytes`, which reads no byte
        // past it (see there why).
        if changes
            .watched
            .is_some_and(|prefix| key.len() >= prefix.len() && crate::engine::bytes_eq::same_bytes(&key[..prefix.len()], prefix))
        {
            changes.watched_count += 1;
        }
    }

    /// Tombstones kept for replication.
    pub fn tombstones_len(&self) -> usize {
        self.tombstones.len()
    }

    pub fn tombstones(&self) -> impl Iterator<Item = (&Bytes, &KeyState)> {
        self.tombstones.iter()
    }

    pub fn tombstone(&self, key: &[u8]) -> Option<&KeyState> {
        if self.tombstones.is_empty() { None } else { self.tombstones.get(key) }
    }

    /// What this keyspace holds of `key`: its live state, else its tombstone.
    pub fn state_or_tombstone(&self, key: &[u8], hash: u64) -> Option<&KeyState> {
        self.get(key, hash).map(|e| e.state()).or_else(|| self.tombstone(key))
    }

    /// Take the tombstone of `key` out (the key is being written again).
    pub fn take_tombstone(&mut self, key: &[u8], hash: u64) -> Option<KeyState> {
        if self.tombstones.is_empty() {
            return None;
        }
        let state = self.tombstones.remove(key)?;
        self.merkle_toggle(key, hash, &state);
        Some(state)
    }

    /// Store (or replace) the tombstone of a key that does not exist as a live key. The
    /// key must be an owned copy (never a slice of a client's read buffer).
    pub fn put_tombstone(&mut self, key: Bytes, hash: u64, state: KeyState) {
        if crate::bugs::active(crate::bugs::Bug::TombstonesDropped) {
            return;
        }
        debug_assert!(!state.exists(), "a tombstone holds no value");
        debug_assert!(self.get(&key, hash).is_none(), "a key is live or a tombstone, never both");
        if let Some(old) = self.tombstones.remove(&key) {
            self.merkle_toggle(&key, hash, &old);
        }
        self.merkle_toggle(&key, hash, &state);
        self.tombstones.insert(key, state);
    }

    /// Drop the tombstones `drop` picks; returns how many went.
    pub fn drop_tombstones_where(&mut self, mut drop: impl FnMut(&[u8], &KeyState) -> bool) -> usize {
        let before = self.tombstones.len();
        let merkle = &mut self.merkle;
        self.tombstones.retain(|key, state| {
            let go = drop(key, state);
            if go && let Some(leaves) = merkle.as_mut() {
                leaves.toggle(leaf_of(key_hash(key)), merkle::digest(key, state));
            }
            !go
        });
        before - self.tombstones.len()
    }

    /// Change in place the tombstones `pick` picks (`change` returns how much it changed,
    /// 0 for nothing; their digests follow); returns the sum of those counts.
    pub fn update_tombstones_where(
        &mut self,
        mut pick: impl FnMut(&[u8], &KeyState) -> bool,
        mut change: impl FnMut(&mut KeyState) -> usize,
    ) -> usize {
        let mut changed = 0;
        let merkle = &mut self.merkle;
        for (key, state) in self.tombstones.iter_mut() {
            if !pick(key, state) {
                continue;
            }
            let before = merkle.as_ref().map(|_| merkle::digest(key, state));
            let count = change(state);
            changed += count;
            if count > 0
                && let (Some(leaves), Some(before)) = (merkle.as_mut(), before)
            {
                leaves.toggle(leaf_of(key_hash(key)), before ^ merkle::digest(key, state));
            }
        }
        changed
    }

    /// Every live key and tombstone in one anti-entropy leaf.
    pub fn for_each_in_leaf(&self, leaf: u16, mut visit: impl FnMut(&[u8], &KeyState)) {
        let leaf_bits = merkle::LEAF_BITS;
        let (first, last) = if self.slot_bits >= leaf_bits {
            let shift = self.slot_bits - leaf_bits;
            ((leaf as usize) << shift, ((leaf as usize + 1) << shift) - 1)
        } else {
            let table = (leaf as usize) >> (leaf_bits - self.slot_bits);
            (table, table)
        };
        for table in &self.tables[first..=last] {
            for entry in table.iter().filter(|e| leaf_of(e.hash()) == leaf) {
                visit(entry.key(), entry.state());
            }
        }
        for (key, state) in &self.tombstones {
            if leaf_of(key_hash(key)) == leaf {
                visit(key, state);
            }
        }
    }

    /// Keys stored (including expired keys nobody has touched yet).
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Keys that carry a TTL.
    pub fn expiring(&self) -> usize {
        self.expiring
    }

    /// The sum of the expiring keys' expiry instants in ms (INFO's `avg_ttl`).
    pub fn expiry_sum_ms(&self) -> u128 {
        self.expiry_sum_ms
    }

    fn table_index(&self, hash: u64) -> usize {
        table_index_of(self.slot_bits, hash)
    }

    /// Note a stored state's element tombstones (one branch for a string key).
    fn note_element_tombstones(keys: &mut TombstoneKeys, key: &[u8], hash: u64, state: &KeyState) {
        if state.element_tombstones() > 0 {
            keys.note(key, hash);
        }
    }

    /// The keys noted as holding element tombstones, handed over (the caller visits
    /// them through [`Keyspace::update`], which notes again those that keep some).
    pub fn take_element_tombstone_keys(&mut self) -> Vec<Bytes> {
        self.element_tombstone_keys.take()
    }

    pub fn get(&self, key: &[u8], hash: u64) -> Option<&Entry> {
        self.tables[self.table_index(hash)].find(hash, |e| e.has_key(key))
    }

    /// Insert or replace the state of `key`; keeps the TTL count and expiry index right.
    /// The key is borrowed: an existing entry keeps its own copy, a new one gets an
    /// exact-size copy (the caller's key may be a slice of a connection's read buffer,
    /// which must not stay pinned for as long as the key lives). Returns the entry.
    pub fn put(&mut self, key: &[u8], hash: u64, state: KeyState) -> &Entry {
        let new_expiry = state.expire_at_ms();
        let index = self.table_index(hash);
        let (stored_key, old_expiry) = match self.tables[index].find_mut(hash, |e| e.has_key(key)) {
            Some(entry) => {
                debug_assert!(Self::digest_is_current_or_stale(self.merkle.is_some(), key, entry), "a wrong digest");
                let old = entry.state().expire_at_ms();
                let (stored, slot) = entry.key_and_state_mut();
                Self::note_element_tombstones(&mut self.element_tombstone_keys, stored, hash, &state);
                Self::note_change(&mut self.changes, stored);
                *slot = state;
                Self::rewrite_digest(&mut self.merkle, &mut self.deferred, entry, hash);
                // The expiry index needs the key only when the TTL changed.
                (if old != new_expiry { Some(entry.key_to_bytes()) } else { None }, old)
            }
            None => {
                let digest = self.digest_to_store(key, &state);
                if let (Some(leaves), Some(digest)) = (self.merkle.as_mut(), digest) {
                    leaves.toggle(leaf_of(hash), digest);
                }
                Self::note_element_tombstones(&mut self.element_tombstone_keys, key, hash, &state);
                Self::note_change(&mut self.changes, key);
                let entry = Entry::new(key, state, digest);
                self.len += 1;
                if new_expiry.is_none() {
                    // Split first, so that the new entry's place is final and the reference
                    // the insertion gives is the one to return: a second lookup of a new
                    // key cost a cache miss per new key (`perf`: 6 % of SETs' time while
                    // the keyspace grows). A key with a TTL goes into the expiry index
                    // after it is stored (rebuilding the index reads the tables).
                    self.maybe_grow();
                    let index = self.table_index(hash);
                    return insert_new(&mut self.tables[index], hash, entry);
                }
                insert_new(&mut self.tables[index], hash, entry);
                (Some(Bytes::copy_from_slice(key)), None)
            }
        };
        if let Some(stored_key) = stored_key {
            self.track_expiry(stored_key, old_expiry, new_expiry);
        }
        self.maybe_grow();
        let index = self.table_index(hash);
        self.tables[index].find(hash, |e| e.has_key(key)).expect("the entry just stored")
    }

    /// Insert a key known to be absent (a decoded key): no lookup.
    pub fn insert_new_owned(&mut self, key: Bytes, hash: u64, state: KeyState) {
        let index = self.table_index(hash);
        debug_assert!(self.tables[index].find(hash, |e| e.has_key(&key)).is_none());
        let expiry = state.expire_at_ms();
        let digest = self.digest_to_store(&key, &state);
        self.merkle_replace(hash, 0, digest.unwrap_or(0));
        Self::note_element_tombstones(&mut self.element_tombstone_keys, &key, hash, &state);
        Self::note_change(&mut self.changes, &key);
        self.tables[index].insert_unique(hash, Entry::new(&key, state, digest), |e| e.hash());
        self.len += 1;
        self.track_expiry(key, None, expiry);
        self.maybe_grow();
    }

    /// Change the state of an existing key in place (one lookup, no copy); keeps the
    /// TTL count, the expiry index and the Merkle leaves right. `f` gets the stored key
    /// and the state. `None` when the key is absent.
    pub fn update<R>(&mut self, key: &[u8], hash: u64, f: impl FnOnce(&[u8], &mut KeyState) -> R) -> Option<R> {
        let admitted = self.update_admitted(key, hash, |_| Ok::<(), std::convert::Infallible>(()), |stored, state, ()| f(stored, state));
        admitted.map(|result| result.unwrap_or_else(|never| match never {}))
    }

    /// [`Keyspace::update`] of a key that `admit` accepts as it stands, in the same one
    /// lookup: `admit` reads the state first and either refuses (its `Err`, the key
    /// untouched and no change noted) or hands `f` what it read. `None` when the key is
    /// absent. What a write that must first check its key (its type, its TTL) calls
    /// instead of a lookup and then an update.
    pub fn update_admitted<A, E, R>(
        &mut self,
        key: &[u8],
        hash: u64,
        admit: impl FnOnce(&KeyState) -> Result<A, E>,
        f: impl FnOnce(&[u8], &mut KeyState, A) -> R,
    ) -> Option<Result<R, E>> {
        let index = self.table_index(hash);
        let entry = self.tables[index].find_mut(hash, |e| e.has_key(key))?;
        let admitted = match admit(entry.state()) {
            Ok(admitted) => admitted,
            Err(refused) => return Some(Err(refused)),
        };
        debug_assert!(Self::digest_is_current_or_stale(self.merkle.is_some(), key, entry), "a wrong digest");
        let old = entry.state().expire_at_ms();
        let (stored, state) = entry.key_and_state_mut();
        let result = f(stored, state, admitted);
        Self::note_element_tombstones(&mut self.element_tombstone_keys, stored, hash, state);
        Self::note_change(&mut self.changes, stored);
        let new = state.expire_at_ms();
        Self::rewrite_digest(&mut self.merkle, &mut self.deferred, entry, hash);
        if old != new {
            let stored_key = entry.key_to_bytes();
            self.track_expiry(stored_key, old, new);
        }
        Some(Ok(result))
    }

    pub fn remove(&mut self, key: &[u8], hash: u64) -> Option<KeyState> {
        let index = self.table_index(hash);
        let entry = self.tables[index].find_entry(hash, |e| e.has_key(key)).ok()?;
        let (removed, _) = entry.remove();
        self.removals.note(hash);
        Self::note_change(&mut self.changes, removed.key());
        debug_assert!(Self::digest_is_current_or_stale(self.merkle.is_some(), key, &removed), "a wrong digest");
        self.merkle_replace(hash, removed.kept_digest(), 0);
        self.len -= 1;
        if let Some(at_ms) = removed.state().expire_at_ms() {
            self.expiring -= 1;
            self.expiry_sum_ms -= u128::from(at_ms);
        }
        Some(removed.into_state())
    }

    /// Remove every live key; tombstones stay (they still guard against old writes).
    pub fn clear(&mut self) {
        let tombstones = std::mem::take(&mut self.tombstones);
        let merkle = self.merkle.is_some();
        let following = self.changes.keys.is_some();
        // The count moves on (watched keys may have gone) and never goes back.
        let (watched, watched_count) = (self.changes.watched, self.changes.watched_count + 1);
        // Each live key is removed, and counted so (a watcher of a missing key is not
        // aborted by FLUSHALL, as in Redis; FLUSHALL visits every key already).
        let mut removals = std::mem::take(&mut self.removals);
        for entry in self.iter() {
            removals.note(key_hash(entry.key()));
        }
        *self = Keyspace::new();
        self.removals = removals;
        self.tombstones = tombstones;
        self.track_changes(following);
        self.changes.watched = watched;
        self.changes.watched_count = watched_count;
        self.cleared = following;
        if merkle {
            self.enable_merkle();
        }
    }

    /// Visit whole sub-tables from slot position `cursor` on until at least `count`
    /// entries were offered to `visit`. Returns the next cursor, or `SLOT_SPACE` at the
    /// end.
    pub fn scan(&self, cursor: u64, count: usize, mut visit: impl FnMut(&Entry)) -> u64 {
        debug_assert!(cursor < SLOT_SPACE);
        let shift = 32 - self.slot_bits;
        let mut index = (cursor >> shift) as usize;
        let mut offered = 0;
        while index < self.tables.len() {
            for entry in self.tables[index].iter() {
                visit(entry);
                offered += 1;
            }
            index += 1;
            if offered >= count {
                break;
            }
        }
        if index >= self.tables.len() { SLOT_SPACE } else { (index as u64) << shift }
    }

    pub fn iter(&self) -> impl Iterator<Item = &Entry> {
        self.tables.iter().flat_map(|t| t.iter())
    }

    /// The `n`-th entry of a random non-empty table, chosen from `pick` (a random u64).
    pub fn random_entry(&self, pick: u64) -> Option<&Entry> {
        if self.len == 0 {
            return None;
        }
        let start = (pick as usize) % self.tables.len();
        let table = (0..self.tables.len()).map(|i| &self.tables[(start + i) % self.tables.len()]).find(|t| !t.is_empty())?;
        table.iter().nth(((pick >> 32) as usize) % table.len())
    }
}

#[cfg(test)]
mod tests;
