//! The key-value engine of one shard: strings, counters, key commands and TTL.
//!
//! It owns the shard's [`Keyspace`] and executes typed commands against it. Every
//! write takes a fresh dot from the [`WriteCtx`] (the shard's clock) and hands the new
//! key state to the delta sink, which is what replication and persistence consume.
//! It never reads a clock or does I/O: `now_ms` arrives in the context.

pub mod bits;
pub mod collection_writes;
pub mod delta_sink;
pub mod dump;
pub mod element;
pub mod elements;
pub mod geo;
pub mod geohash;
pub mod glob;
pub mod hash_seed;
pub mod hashes;
pub mod keys;
pub mod keyspace;
pub mod lazyfree;
#[cfg(test)]
mod list_runs_tests;
pub mod list_table;
pub mod lists;
pub mod merkle;
pub mod packed;
pub mod position;
pub mod score_order;
pub mod sets;
pub mod strings;
mod tail_append;
mod tombstone_gc;
pub mod value;
#[cfg(test)]
mod value_laws;
#[cfg(test)]
mod value_outcomes;
pub mod zset_query;
pub mod zsets;

use bytes::Bytes;

use crate::crdt::{Dot, HlcClock, NodeId, VersionVector};
use crate::notify::{Class, Notifier};
use crate::routing::ShardScope;
pub use delta_sink::DeltaSink;
pub use keyspace::{Keyspace, key_hash};
pub use value::{KeyKind, KeyState, StrVal};

/// Everything a write needs from outside the keyspace.
pub struct WriteCtx<'a> {
    pub clock: &'a mut HlcClock,
    pub node: NodeId,
    /// Wall-clock time handed in by the driver (shell or simulator).
    pub now_ms: u64,
    /// `proto-max-bulk-len`: the longest string a write may build.
    pub string_bytes_max: usize,
    pub deltas: &'a mut dyn DeltaSink,
}

impl WriteCtx<'_> {
    pub fn next_dot(&mut self) -> Dot {
        Dot::new(self.clock.tick(self.now_ms), self.node)
    }
}

/// The sizes up to which Redis keeps a collection in its compact encoding: what `OBJECT
/// ENCODING` reports (`CONFIG SET hash-max-listpack-entries` and the like change them).
/// Meridian's own layout does not depend on them.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct EncodingLimits {
    pub hash_max_listpack_entries: usize,
    pub hash_max_listpack_value: usize,
    pub set_max_intset_entries: usize,
    pub zset_max_listpack_entries: usize,
    pub zset_max_listpack_value: usize,
    /// How many entries a Redis stream node holds: the block `XADD/XTRIM ... ~` trims by
    /// (`engine::stream`).
    pub stream_node_max_entries: usize,
    /// Accepted and reported; blocks here are counted in entries only.
    pub stream_node_max_bytes: usize,
}

impl Default for EncodingLimits {
    /// Redis 7.0's defaults.
    fn default() -> Self {
        EncodingLimits {
            hash_max_listpack_entries: 512,
            hash_max_listpack_value: 64,
            set_max_intset_entries: 512,
            zset_max_listpack_entries: 128,
            zset_max_listpack_value: 64,
            stream_node_max_entries: 100,
            stream_node_max_bytes: 4096,
        }
    }
}

/// Counters for INFO stats.
#[derive(Clone, Debug, Default)]
pub struct KvStats {
    pub keyspace_hits: u64,
    pub keyspace_misses: u64,
    pub expired_keys: u64,
}

/// One shard's key-value data.
#[derive(Default)]
pub struct KvEngine {
    pub keys: Keyspace,
    pub stats: KvStats,
    /// Whether expiries are recorded for persistence (see [`KvEngine::expired`]).
    pub record_expiries: bool,
    /// Keys removed by expiry since the shard last looked, as tombstones of exactly the
    /// state that expired (kept when expiries are recorded or peers exist). Persisting
    /// them makes an expiry durable (a clock that jumps back after a restart cannot
    /// revive the key) without a new write stamp; shipping them to the peers makes it
    /// final everywhere: replayed or merged anywhere, a tombstone removes only what had
    /// expired here. Without it, a peer's write that arrives after this node expired
    /// the key survives here, while the peer, merging the TTL, expires its own write:
    /// the nodes would disagree until anti-entropy met them.
    pub expired: Vec<(Bytes, KeyState)>,
    /// Keep the removal metadata of keys that no longer exist (replication): a delete
    /// must still win over an older write that reaches this node after it.
    pub keep_tombstones: bool,
    /// The contexts of every FLUSHALL merged here, per shard scope: a write one had
    /// seen that arrives later (from a peer) for a key in its scope is removed on
    /// arrival, as if it had been here to flush.
    flushed: Vec<(ShardScope, VersionVector)>,
    /// The keys this engine owns (what a local FLUSHALL covers).
    pub scope: ShardScope,
    /// When this process began incrementing: the incarnation of its counter slots.
    incarnation: Option<crate::crdt::Hlc>,
    /// Everything dropped tombstones had covered (tombstone GC): a state arriving for a
    /// key with neither a live entry nor a tombstone loses every write this covers.
    forgotten: VersionVector,
    /// The same for collected element tombstones. Recorded apart from `forgotten` (a
    /// checkpoint and replay keep the two kinds of collection apart).
    forgotten_elements: VersionVector,
    /// Both joined: what states arriving here are filtered by, keys and elements alike
    /// (`value::absence`). Either kind covers only writes this node had merged.
    forgotten_any: VersionVector,
    /// Replayed tombstone collections of *other* shards (another shard of this layout,
    /// or any shard of an older one), per scope: (key tombstones, element tombstones).
    /// A stored stream interleaves the shards' logs, so a record of shard A can come
    /// before deltas that shard B had merged earlier; applied to B's keys at once, it
    /// would take those keys for collected and remove their writes (a restarted node
    /// then spread the removal to every replica). Each record therefore filters only
    /// the keys of its own scope until replay is over (`settle_replayed_forgets`).
    replayed_forgets: Vec<(ShardScope, VersionVector, VersionVector)>,
    /// The newest causally stable vector seen (tombstone GC, or its replay): every
    /// node holds every write it covers. What a whole-key remove may claim at key level
    /// beyond this node's own writes (see `Elements::remove_held`).
    stable: VersionVector,
    /// The nodes the last tombstone collection spared, sorted (`tombstone_gc`).
    spared: Vec<crate::crdt::NodeId>,
    /// Tombstones dropped as causally stable since start.
    pub tombstones_dropped: u64,
    /// What OBJECT ENCODING reports, by size.
    pub encoding: EncodingLimits,
    /// Keyspace notifications raised by the commands run here (`crate::notify`).
    pub notify: Notifier,
    /// Decoded graphs kept between GRAPH.* queries (a cache; `engine::graph`).
    pub graph_views: crate::engine::graph::ViewCache,
}

impl KvEngine {
    pub fn new() -> KvEngine {
        KvEngine::default()
    }

    /// Whether a key holding `state` is expired at `now_ms` (Redis: strictly after).
    fn is_expired(state: &KeyState, now_ms: u64) -> bool {
        if crate::bugs::active(crate::bugs::Bug::TtlNeverFires) {
            return false;
        }
        state.expire_at_ms().is_some_and(|at| now_ms > at)
    }

    /// Look a key up for reading, expiring it lazily.
    pub fn live(&mut self, key: &[u8], hash: u64, now_ms: u64) -> Option<&KeyState> {
        // While no key carries a TTL none can have expired: one lookup, not two (the
        // borrow of a found entry cannot outlive the branch that may remove it).
        if self.keys.expiring() == 0 {
            return self.keys.get(key, hash).map(|e| e.state());
        }
        let expired = match self.keys.get(key, hash) {
            None => return None,
            Some(entry) => Self::is_expired(entry.state(), now_ms),
        };
        if expired {
            self.remove_expired(key, hash);
            return None;
        }
        self.keys.get(key, hash).map(|e| e.state())
    }

    fn remove_expired(&mut self, key: &[u8], hash: u64) {
        if let Some(state) = self.keys.remove(key, hash) {
            self.stats.expired_keys += 1;
            self.notify.raise(Class::Expired, "expired", key);
            if !self.record_expiries && !self.keep_tombstones {
                return;
            }
            let safe = self.whole_key_safe(None);
            let tombstone = state.expired_tombstone(safe.as_ref());
            let key = Bytes::copy_from_slice(key);
            if self.keep_tombstones {
                self.keys.put_tombstone(key.clone(), hash, tombstone.clone());
            }
            self.expired.push((key, tombstone));
        }
    }

    /// Remove the key if it has expired (the lazy half of expiry).
    fn expire_if_due(&mut self, key: &[u8], hash: u64, now_ms: u64) {
        if self.keys.get(key, hash).is_some_and(|e| Self::is_expired(e.state(), now_ms)) {
            self.remove_expired(key, hash);
        }
    }

    /// The current state of a key for a write (expired keys count as absent).
    fn take_for_write(&mut self, key: &[u8], hash: u64, now_ms: u64) -> Option<KeyState> {
        self.live(key, hash, now_ms)?;
        self.keys.get(key, hash).map(|e| e.state().clone())
    }

    /// Store the result of a write and emit its delta. A state that no longer exists is
    /// removed (tombstones are kept by replication once it exists; a lone node has no
    /// one to tell).
    fn commit(&mut self, ctx: &mut WriteCtx, key: Bytes, hash: u64, state: KeyState) {
        self.commit_shipping(ctx, key, hash, state, false);
    }

    /// [`KvEngine::commit`] for a key the write created (or replaced whole): its
    /// elements ship with it.
    fn commit_new(&mut self, ctx: &mut WriteCtx, key: Bytes, hash: u64, state: KeyState) {
        self.commit_shipping(ctx, key, hash, state, true);
    }

    /// Store a write's result and ship it. A write to the key alone (a TTL, a DEL)
    /// ships a collection's key-level part only: its elements did not change, and a big
    /// collection must not travel for an EXPIRE.
    fn commit_shipping(&mut self, ctx: &mut WriteCtx, key: Bytes, hash: u64, mut state: KeyState, whole: bool) {
        // A key that appears raises `new` before the command's own event (Redis adds
        // the key, then notifies the command).
        if self.notify.wants(&[Class::New])
            && state.exists()
            && self.keys.get(&key, hash).is_none()
            && !(crate::bugs::active(crate::bugs::Bug::NewOnlyForStrings) && state.has_collection())
        {
            self.notify.raise(Class::New, "new", &key);
        }
        // A key written again after a delete: the write has seen the delete, and all
        // the tombstone holds (a TTL write that arrived after the delete, say) is what
        // it replaces, not something concurrent with it.
        let mut write_alone = None;
        if let Some(mut tombstone) = self.keys.take_tombstone(&key, hash) {
            let safe = self.whole_key_safe(None);
            tombstone.clear_held(safe.as_ref(), None);
            if tombstone.element_tombstones() > 0 {
                // The write ships with the key-level part alone: peers have each removed
                // element's tombstone from its removal (or by anti-entropy), and shipping
                // them all on every refill made a queue that empties often quadratic.
                // So it ships as a part, which supersedes nothing: as a whole state it
                // replaced the removal's own delta when both fell in one replication
                // window, and peers never got the element tombstones (a hash field's
                // increment absorbed by a DEL came back on them when the field was
                // set again: found by the replicated fuzz test).
                let mut shipped = tombstone.without_elements();
                shipped.merge(&state);
                write_alone = Some(shipped);
            }
            state = joined_with_tombstone(state, tombstone, &VersionVector::new());
        }
        let part_only = !whole && state.has_collection();
        if !self.keep_tombstones && state.exists() && state.element_tombstones() > 0 {
            // A lone node has no one to tell: a removed element leaves nothing here.
            // Its log still gets them, before they go: the counter floors a whole-key
            // remove absorbed are what removes those increments again on recovery (a
            // merged remove absorbs none), and replay drops them as this does.
            let key = Bytes::copy_from_slice(&key);
            if part_only {
                ctx.deltas.key_part_changed(&key, &state.without_elements());
            } else {
                ctx.deltas.key_changed(&key, &state);
            }
            state.drop_element_tombstones();
            self.keys.put(&key, hash, state);
            return;
        }
        if state.exists() {
            let entry = self.keys.put(&key, hash, state);
            drop(key);
            // The delta names the keyspace's own copy of the key: no copy of it, and no
            // client read buffer kept alive by a slice of it.
            if part_only {
                ctx.deltas.key_part_changed(entry.key(), &entry.state().without_elements());
            } else if let Some(shipped) = &write_alone {
                // Not a whole state: it must not supersede the removal's delta.
                ctx.deltas.key_part_changed(entry.key(), shipped);
            } else {
                ctx.deltas.key_changed(entry.key(), entry.state());
            }
        } else {
            let key = Bytes::copy_from_slice(&key);
            if part_only {
                ctx.deltas.key_part_changed(&key, &state.without_elements());
            } else if let Some(shipped) = &write_alone {
                ctx.deltas.key_part_changed(&key, shipped);
            } else {
                ctx.deltas.key_changed(&key, &state);
            }
            self.keys.remove(&key, hash);
            if self.keep_tombstones {
                self.keys.put_tombstone(key, hash, state);
            }
        }
    }

    /// A write to a live key's key-level state alone (its TTL: EXPIRE, PERSIST), made in
    /// place and shipped: a collection's elements neither change nor travel, and are
    /// not copied (a write through [`KvEngine::take_for_write`] copies the whole state,
    /// a million elements for an EXPIRE on a big hash). The caller has checked, through
    /// [`KvEngine::live`], that the key is live.
    fn update_key_level(&mut self, ctx: &mut WriteCtx, key: &[u8], hash: u64, write: impl FnOnce(&mut KeyState)) {
        let updated = self.keys.update(key, hash, |_, state| write(state));
        assert!(updated.is_some(), "a key-level write to a key that is not there");
        let entry = self.keys.get(key, hash).expect("the key just updated");
        if entry.state().has_collection() {
            ctx.deltas.key_part_changed(entry.key(), &entry.state().without_elements());
        } else {
            ctx.deltas.key_changed(entry.key(), entry.state());
        }
    }

    /// Delete a key if it exists (DEL, UNLINK, GETDEL, EXPIRE in the past).
    fn delete(&mut self, ctx: &mut WriteCtx, key: &Bytes, hash: u64) -> bool {
        if self.live(key, hash, ctx.now_ms).is_none() {
            return false;
        }
        // Taken out of the keyspace, not copied: a DEL of a million-element collection
        // must not first clone it (the emptied table then goes to the lazy-free thread).
        // `commit_new` stores what is left (a tombstone) or nothing.
        let Some(mut state) = self.keys.remove(key, hash) else {
            return false;
        };
        let dot = ctx.next_dot();
        self.remove_elements_for_write(&mut state, dot);
        state.delete(dot);
        // Whole: what is left of a collection's elements are the counter floors the
        // DEL absorbed and the exact tombstones of elements not yet stable, which its
        // peers need (a merged remove absorbs nothing itself).
        self.commit_new(ctx, key.clone(), hash, state);
        true
    }

    /// What a whole-key remove here may claim at key level beyond each element's own
    /// history: this node's writes up to `dot` and what is causally stable; `None` (all
    /// it has seen) on a node without peers.
    fn whole_key_safe(&self, dot: Option<Dot>) -> Option<VersionVector> {
        whole_key_safe_of(self.keep_tombstones, &self.stable, dot)
    }

    /// Before a write that replaces the whole key at `dot` (DEL, a STORE, RESTORE): its
    /// collection parts go, claiming only what is safe (see `whole_key_safe`).
    pub(super) fn remove_elements_for_write(&self, state: &mut KeyState, dot: Dot) {
        if state.has_collection() {
            let safe = self.whole_key_safe(Some(dot));
            state.remove_elements(safe.as_ref(), Some(dot));
        }
    }

    /// Join a key state from elsewhere (recovery, a peer) into this shard.
    pub fn merge_key(&mut self, key: Bytes, mut incoming: KeyState) {
        let hash = key_hash(&key);
        for (scope, seen) in &self.flushed {
            if scope.contains(&key) && incoming.has_dot_covered_by(seen) {
                incoming.remove_observed(seen);
            }
        }
        // What this shard collected covers writes it had merged (and so, lacking them,
        // removed): a key's and an element's alike, whichever kind of tombstone went.
        let forgotten_any = forgotten_for(&self.forgotten_any, &self.replayed_forgets, &key);
        let forgotten = forgotten_any.as_ref();
        let keep_tombstones = self.keep_tombstones;
        // In place when the key is here, moved in when it is not: no copies.
        match self.keys.update(&key, hash, |_, state| {
            // What it holds that this key does not and this shard has forgotten was
            // removed here (its removal since collected): it stays removed.
            if let Some(absent) = incoming.absent_writes(Some(state), forgotten) {
                incoming.remove_absent(&absent);
            }
            state.merge_forgetting(&incoming, forgotten);
            if !keep_tombstones && state.element_tombstones() > 0 {
                // Replayed history of a lone node: a removed element leaves nothing, as
                // it did when it was removed (and one added again goes last, as then).
                state.drop_element_tombstones();
            }
            state.exists()
        }) {
            Some(true) => {}
            Some(false) => {
                if let Some(state) = self.keys.remove(&key, hash)
                    && self.keep_tombstones
                {
                    self.keys.put_tombstone(key, hash, state);
                }
            }
            None => {
                let mut state = incoming;
                match self.keys.take_tombstone(&key, hash) {
                    Some(tombstone) => state = joined_with_tombstone(state, tombstone, forgotten),
                    // No trace of the key: whatever of it this node had seen before its
                    // tombstone was collected was removed here, so it stays removed.
                    None if !forgotten.is_empty() && state.has_dot_covered_by(forgotten) => {
                        state.remove_observed(forgotten);
                    }
                    None => {}
                }
                // Keys reach here decoded: an exact-size copy.
                if state.exists() {
                    if !self.keep_tombstones && state.element_tombstones() > 0 {
                        state.drop_element_tombstones();
                    }
                    self.keys.insert_new_owned(key, hash, state);
                } else if self.keep_tombstones && self.keeps_merged_tombstone(&state, forgotten) {
                    self.keys.put_tombstone(key, hash, state);
                }
            }
        }
    }

    /// Replay a FLUSHALL: remove, from every key in its scope, what the flush had seen.
    pub fn merge_flush(&mut self, seen: &VersionVector, scope: ShardScope) {
        self.record_flush(seen, scope);
        let keys: Vec<Bytes> = self.keys.iter().filter(|e| scope.contains(e.key())).map(|e| e.key_to_bytes()).collect();
        for key in keys {
            let hash = key_hash(&key);
            let Some(entry) = self.keys.get(&key, hash) else { continue };
            let mut state = entry.state().clone();
            state.remove_observed(seen);
            if state.exists() {
                self.keys.put(&key, hash, state);
            } else {
                self.keys.remove(&key, hash);
                if self.keep_tombstones {
                    self.keys.put_tombstone(key, hash, state);
                }
            }
        }
    }

    /// This process's counter incarnation: the stamp of its first increment.
    fn incarnation(&mut self, dot: Dot) -> crate::crdt::Hlc {
        *self.incarnation.get_or_insert(dot.hlc)
    }

    /// Remember a FLUSHALL's context (see [`KvEngine::merge_flush`]).
    fn record_flush(&mut self, seen: &VersionVector, scope: ShardScope) {
        match self.flushed.iter_mut().find(|(s, _)| *s == scope) {
            Some((_, all)) => all.merge(seen),
            None => self.flushed.push((scope, seen.clone())),
        }
    }

    /// Expire up to `limit` keys that are due; returns how many were removed.
    pub fn expire_due(&mut self, now_ms: u64, limit: usize) -> usize {
        if crate::bugs::active(crate::bugs::Bug::TtlNeverFires) {
            return 0;
        }
        let due = self.keys.pop_expired(now_ms.saturating_sub(1), limit);
        let mut removed = 0;
        for key in due {
            let hash = key_hash(&key);
            if self.keys.get(&key, hash).is_some_and(|e| Self::is_expired(e.state(), now_ms)) {
                self.remove_expired(&key, hash);
                removed += 1;
            }
        }
        removed
    }
}

/// What a state arriving for `key` is filtered by: what this shard's own collections
/// covered (`own`: `forgotten_any`), joined with the replayed records of other shards
/// that owned the key (`replayed_forgets`), of both kinds.
fn forgotten_for<'a>(
    own: &'a VersionVector,
    replayed: &[(ShardScope, VersionVector, VersionVector)],
    key: &[u8],
) -> std::borrow::Cow<'a, VersionVector> {
    let mut covering = replayed.iter().filter(|(scope, ..)| scope.contains(key)).peekable();
    if covering.peek().is_none() {
        return std::borrow::Cow::Borrowed(own);
    }
    let mut joined = own.clone();
    covering.for_each(|(_, keys, elements)| {
        joined.merge(keys);
        joined.merge(elements);
    });
    std::borrow::Cow::Owned(joined)
}

/// The join of `state` (a write, or a state merged from a peer) with the `tombstone`
/// the key left. With a long history of removed elements (a queue's pops waiting for
/// a peer to merge them) `state` joins the history rather than the history `state`:
/// the same join, in O(`state`) instead of O(history), for a queue that empties and
/// refills on every job. A short history keeps `state`'s own order first (a small
/// hash's or set's replies follow insertion).
///
/// What `state` holds that the tombstone does not and `forgotten` (this shard's
/// collections, empty for a local write) covers was removed here and stays removed, as
/// for a live key (`value::absence`); a state holding some joins the tombstone the way
/// that filters its elements too (`Elements::merge`).
fn joined_with_tombstone(mut state: KeyState, mut tombstone: KeyState, forgotten: &VersionVector) -> KeyState {
    if let Some(absent) = state.absent_writes(Some(&tombstone), forgotten) {
        state.remove_absent(&absent);
    }
    let filtered = !forgotten.is_empty() && state.has_dot_covered_by(forgotten);
    if filtered || tombstone.element_tombstones() > elements::ORDERED_ENTRIES_MAX {
        tombstone.merge_forgetting(&state, forgotten);
        tombstone
    } else {
        state.merge(&tombstone);
        state
    }
}

/// [`KvEngine::whole_key_safe`] from its two fields, for a caller that holds the key
/// table borrowed (a write changing a key in place).
fn whole_key_safe_of(keep_tombstones: bool, stable: &VersionVector, dot: Option<Dot>) -> Option<VersionVector> {
    if !keep_tombstones {
        return None;
    }
    let mut safe = stable.clone();
    if let Some(dot) = dot {
        safe.add(dot);
    }
    Some(safe)
}
