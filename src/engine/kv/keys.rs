//! Key commands: TTL, existence, type, deletion, and the whole-keyspace operations a
//! shard does for DBSIZE, FLUSHALL, KEYS, SCAN and RANDOMKEY.

use bytes::Bytes;

use super::collection_writes::Part;
use super::glob::glob_match;
use super::hashes::hash_encoding;
use super::keyspace::SLOT_SPACE;
use super::sets::set_encoding;
use super::value::{KeyKind, MEMBER_MARK, SetTtl, score_value};
use super::zsets::zset_encoding;
use super::{KeyState, KvEngine, StrVal, WriteCtx, key_hash};
use crate::command::errors::{self, invalid_expire};
use crate::command::{ExpireCondition, TimeUnit};
use crate::notify::Class;
use crate::protocol::Frame;

/// A key's readable value and TTL, moved between shards by RENAME and COPY.
#[derive(Clone, Debug, PartialEq)]
pub struct KeySnapshot {
    pub value: SnapshotValue,
    pub expire_at_ms: Option<u64>,
}

/// What a key reads as, by type.
#[derive(Clone, Debug, PartialEq)]
pub enum SnapshotValue {
    String(StrVal),
    /// Fields and values, in the hash's order.
    Hash(Vec<(Bytes, StrVal)>),
    /// Members, in the set's order.
    Set(Vec<Bytes>),
    /// Members and scores, in score order.
    Zset(Vec<(Bytes, f64)>),
    /// Elements, head first.
    List(Vec<Bytes>),
    /// A graph's or a stream's live elements (`engine::graph` and `engine::stream`
    /// name them), copied as they are.
    Named(Part, Vec<(Bytes, StrVal)>),
}

/// The type name TYPE and SCAN TYPE use.
pub fn type_name(state: &KeyState) -> &'static str {
    match state.kind() {
        Some(KeyKind::Hash) => "hash",
        Some(KeyKind::Set) => "set",
        Some(KeyKind::Zset) => "zset",
        Some(KeyKind::List) => "list",
        // FalkorDB's module type name.
        Some(KeyKind::Graph) => "graphdata",
        Some(KeyKind::Stream) => "stream",
        Some(KeyKind::String) | None => "string",
    }
}

impl KvEngine {
    pub fn expire(&mut self, ctx: &mut WriteCtx, key: &Bytes, ms: i64, absolute: bool, condition: ExpireCondition, command: &str) -> Frame {
        let when = if absolute { Some(ms) } else { ms.checked_add(ctx.now_ms as i64) };
        let Some(when) = when else {
            return invalid_expire(command);
        };
        let hash = key_hash(key);
        let Some(state) = self.live(key, hash, ctx.now_ms) else {
            return Frame::Integer(0);
        };
        let current = state.expire_at_ms().map(|at| at as i64);
        let refused = (condition.nx && current.is_some())
            || (condition.xx && current.is_none())
            || (condition.gt
                && current.is_none_or(|c| if crate::bugs::active(crate::bugs::Bug::ExpireGtInverted) { when >= c } else { when <= c }))
            || (condition.lt && current.is_some_and(|c| when >= c));
        if refused {
            return Frame::Integer(0);
        }
        // A time already past deletes the key, and Redis says `del`, not `expire`.
        if when <= ctx.now_ms as i64 {
            self.delete(ctx, key, hash);
            self.notify.raise(Class::Generic, "del", key);
        } else {
            let dot = ctx.next_dot();
            self.update_key_level(ctx, key, hash, |state| state.expire_at(dot, when as u64));
            self.notify.raise(Class::Generic, "expire", key);
        }
        Frame::Integer(1)
    }

    pub fn ttl(&mut self, key: &[u8], unit: TimeUnit, now_ms: u64) -> Frame {
        let Some(state) = self.live(key, key_hash(key), now_ms) else {
            return Frame::Integer(-2);
        };
        match state.expire_at_ms() {
            None => Frame::Integer(-1),
            Some(at) => {
                let left_ms = at.saturating_sub(now_ms);
                Frame::Integer(if unit == TimeUnit::Millis { left_ms as i64 } else { rounded_seconds(left_ms) })
            }
        }
    }

    pub fn expire_time(&mut self, key: &[u8], unit: TimeUnit, now_ms: u64) -> Frame {
        let Some(state) = self.live(key, key_hash(key), now_ms) else {
            return Frame::Integer(-2);
        };
        match state.expire_at_ms() {
            None => Frame::Integer(-1),
            Some(at) => Frame::Integer(if unit == TimeUnit::Millis { at as i64 } else { rounded_seconds(at) }),
        }
    }

    pub fn persist(&mut self, ctx: &mut WriteCtx, key: &Bytes) -> Frame {
        let hash = key_hash(key);
        let Some(state) = self.live(key, hash, ctx.now_ms) else {
            return Frame::Integer(0);
        };
        if state.expire_at_ms().is_none() {
            return Frame::Integer(0);
        }
        if crate::bugs::active(crate::bugs::Bug::PersistIgnored) {
            return Frame::Integer(1);
        }
        let dot = ctx.next_dot();
        self.update_key_level(ctx, key, hash, |state| state.persist(dot));
        self.notify.raise(Class::Generic, "persist", key);
        Frame::Integer(1)
    }

    /// WATCH's token: the digest of the key's whole state (value, TTL, every element and
    /// the causal metadata), so any write changes it, from this node or merged from a
    /// peer, and so does an expiry; 0 for a missing (or expired) key.
    /// What WATCH remembers of a key and EXEC compares: a live key's digest (any write
    /// changes it), a missing key's count of removals (`Keyspace::absent_token`: one
    /// created and removed again meanwhile changes it too).
    pub fn watch_token(&mut self, key: &[u8], now_ms: u64) -> u64 {
        let hash = key_hash(key);
        match self.live(key, hash, now_ms) {
            Some(state) => super::merkle::digest(key, state),
            None => self.keys.absent_token(hash),
        }
    }

    pub fn type_of(&mut self, key: &[u8], now_ms: u64) -> Frame {
        match self.live(key, key_hash(key), now_ms) {
            Some(state) => Frame::simple(type_name(state)),
            None => Frame::simple("none"),
        }
    }

    pub fn object_encoding(&mut self, key: &[u8], now_ms: u64) -> Frame {
        let limits = self.encoding;
        if let Some(state) = self.live(key, key_hash(key), now_ms) {
            match state.kind() {
                Some(KeyKind::Hash) => return Frame::bulk_str(state.hash().map_or("listpack", |h| hash_encoding(h, &limits))),
                Some(KeyKind::Set) => return Frame::bulk_str(state.set_members().map_or("intset", |s| set_encoding(s, &limits))),
                Some(KeyKind::Zset) => return Frame::bulk_str(state.zset_members().map_or("listpack", |z| zset_encoding(z, &limits))),
                // Redis 7.0 keeps every list in a quicklist (listpack lists came in 7.2).
                Some(KeyKind::List) => return Frame::bulk_str("quicklist"),
                Some(KeyKind::Stream) => return Frame::bulk_str("stream"),
                _ => {}
            }
        }
        match self.read_value(key, now_ms) {
            None => Frame::Null,
            Some(StrVal::Int(_)) => Frame::bulk_str("int"),
            Some(StrVal::Raw(b)) if b.len() <= 44 => Frame::bulk_str("embstr"),
            Some(StrVal::Raw(_)) => Frame::bulk_str("raw"),
        }
    }

    /// OBJECT REFCOUNT: what Redis would report. Meridian shares no values between keys,
    /// so every value has one reference, except that Redis shares the integers below
    /// 10,000 and reports `i32::MAX` for them; tools and tests read that number, so it is
    /// reported the same way. Nil for a missing key.
    pub fn object_refcount(&mut self, key: &[u8], now_ms: u64) -> Frame {
        const SHARED_INTEGERS: i64 = 10_000;
        if self.live(key, key_hash(key), now_ms).is_none() {
            return Frame::Null;
        }
        match self.read_value(key, now_ms) {
            Some(StrVal::Int(n)) if (0..SHARED_INTEGERS).contains(&n) => Frame::Integer(i64::from(i32::MAX)),
            _ => Frame::Integer(1),
        }
    }

    /// OBJECT FREQ: Redis's answer under a `maxmemory-policy` that is not LFU (Meridian's
    /// one policy is `noeviction`): access frequency is not tracked. Nil for a missing key.
    pub fn object_freq(&mut self, key: &[u8], now_ms: u64) -> Frame {
        if self.live(key, key_hash(key), now_ms).is_none() {
            return Frame::Null;
        }
        Frame::static_error(
            "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.",
        )
    }

    /// MEMORY USAGE: an estimate of what the key takes, in bytes: its entry, its key and
    /// value bytes, and per element (hash field, set or sorted set member) its state and
    /// bytes (a sorted set's score order too). An estimate (it does not ask the
    /// allocator), nil for a missing key.
    pub fn memory_usage(&mut self, key: &[u8], now_ms: u64) -> Frame {
        const ENTRY_BYTES: usize = 64;
        let Some(state) = self.live(key, key_hash(key), now_ms) else {
            return Frame::Null;
        };
        let element = std::mem::size_of::<super::element::Stored>() + 40;
        let value_bytes = |s: super::element::ElementRef<'_>| s.value_len().unwrap_or(0);
        // A packed hash or set is its one allocation.
        let fields: usize = state.hash().map_or(0, |h| {
            if h.is_packed() { h.packed_bytes() } else { h.entries().map(|(f, s)| element + f.len() + value_bytes(s)).sum() }
        });
        let members: usize = state
            .set_members()
            .map_or(0, |h| if h.is_packed() { h.packed_bytes() } else { h.entries().map(|(m, _)| element + m.len()).sum() });
        let order_entry = std::mem::size_of::<(f64, Bytes)>();
        let scored: usize = state.zset_members().map_or(0, |z| z.entries().map(|(m, _)| element + order_entry + m.len()).sum());
        // A list's or a graph's chunks, and its elements held outside them as side-map
        // entries (a name and a stored element in a run, `list_table/side_map.rs`).
        let chunked = |l: &super::list_table::ListTable| {
            let entry = std::mem::size_of::<(super::list_table::Name, super::element::Stored)>();
            l.chunk_bytes().0
                + l.others()
                    .map(|(p, s)| {
                        let name = if p.spilled() { p.len() } else { 0 };
                        entry + name + value_bytes(s.view())
                    })
                    .sum::<usize>()
        };
        let listed: usize = state.list_elements().and_then(|l| l.list()).map_or(0, chunked)
            + state.part(Part::Graph).and_then(|g| g.list()).map_or(0, chunked)
            + state.part(Part::Stream).and_then(|g| g.list()).map_or(0, chunked);
        let scored = scored + listed;
        let string = if state.kind() == Some(KeyKind::String) { state.read().map_or(0, |v| v.len()) } else { 0 };
        Frame::Integer((ENTRY_BYTES + std::mem::size_of::<KeyState>() + key.len() + string + fields + members + scored) as i64)
    }

    /// DEL/UNLINK for the keys of this shard: how many existed.
    pub fn del(&mut self, ctx: &mut WriteCtx, keys: &[Bytes]) -> i64 {
        let mut deleted = 0;
        for key in keys {
            if self.delete(ctx, key, key_hash(key)) {
                self.notify.raise(Class::Generic, "del", key);
                deleted += 1;
            }
        }
        deleted
    }

    /// EXISTS/TOUCH for the keys of this shard (a key named twice counts twice).
    pub fn count_existing(&mut self, keys: &[Bytes], now_ms: u64) -> i64 {
        keys.iter().filter(|key| self.live(key, key_hash(key), now_ms).is_some()).count() as i64
    }

    /// Read a key for RENAME/COPY.
    pub fn snapshot(&mut self, key: &[u8], now_ms: u64) -> Option<KeySnapshot> {
        let state = self.live(key, key_hash(key), now_ms)?;
        let value = match state.kind()? {
            KeyKind::String => SnapshotValue::String(state.read()?),
            KeyKind::Hash => {
                SnapshotValue::Hash(state.hash()?.iter().filter_map(|(f, s)| Some((Bytes::copy_from_slice(f), s.read()?))).collect())
            }
            KeyKind::Set => SnapshotValue::Set(state.set_members()?.iter().map(|(m, _)| Bytes::copy_from_slice(m)).collect()),
            KeyKind::Zset => {
                SnapshotValue::Zset(state.zset_members()?.score_order()?.iter(false).map(|(s, m)| (Bytes::copy_from_slice(m), s)).collect())
            }
            kind @ (KeyKind::Graph | KeyKind::Stream) => {
                // A graph's or a stream's elements are in chunks: walked, not iterated
                // (`elements.rs`).
                let part = if kind == KeyKind::Graph { Part::Graph } else { Part::Stream };
                let mut elements = Vec::new();
                state.part(part)?.for_each_entry(|n, s| elements.extend(s.read().map(|v| (Bytes::copy_from_slice(n), v))));
                SnapshotValue::Named(part, elements)
            }
            KeyKind::List => {
                let list = state.list_elements()?;
                SnapshotValue::List(super::lists::walk(list, false).filter_map(|(_, e)| Some(e.read()?.to_bytes())).collect())
            }
        };
        Some(KeySnapshot { value, expire_at_ms: state.expire_at_ms() })
    }

    /// Write a snapshot under `key` (the second half of RENAME/COPY). With `replace`
    /// false, an existing key is left alone and `false` returned. Raises no event: the
    /// command's events are RENAME's or COPY's (`crate::notify::renamed`, `copied`).
    pub fn restore(&mut self, ctx: &mut WriteCtx, key: Bytes, snapshot: KeySnapshot, replace: bool) -> bool {
        let hash = key_hash(&key);
        let old = self.take_for_write(&key, hash, ctx.now_ms);
        if old.is_some() && !replace {
            return false;
        }
        let was_quiet = self.notify.set_quiet(true);
        self.restore_quietly(ctx, key, hash, old, snapshot);
        self.notify.set_quiet(was_quiet);
        true
    }

    fn restore_quietly(&mut self, ctx: &mut WriteCtx, key: Bytes, hash: u64, old: Option<KeyState>, snapshot: KeySnapshot) {
        let ttl = snapshot.expire_at_ms.map_or(SetTtl::Clear, SetTtl::At);
        let dot = ctx.next_dot();
        let mut state = old.unwrap_or_default();
        // The old key goes whole (its elements claimed only as far as is safe).
        self.remove_elements_for_write(&mut state, dot);
        match snapshot.value {
            SnapshotValue::String(value) => {
                state.set(dot, value, ttl);
                // Whole, as SET ships: a collection it replaced leaves the tombstones
                // of elements its peers may hold and the key-level context does not
                // cover (another node's fields not yet stable). Shipped as a part they
                // stayed on the peers (RENAME of a counter over another region's hash:
                // found by the three-region fuzz test).
                self.commit_new(ctx, key, hash, state);
            }
            collection => {
                // The old key goes whole, then the elements are written anew: the key
                // is replaced, as Redis replaces it, and ships whole.
                let dot = if state.exists() || !state.is_blank() {
                    state.delete(dot);
                    if !self.keep_tombstones && state.element_tombstones() > 0 {
                        // A lone node keeps no element tombstones, but the ones this
                        // remove left (a counter field's absorbed floor) would hold
                        // their old places, and a restored element of the same name
                        // would take its old place instead of the payload's (Redis adds
                        // them to a new key in the payload's order). So the remove is
                        // logged as it is, floors and all (recovery absorbs the old
                        // increments again, as for a DEL), and its tombstones go before
                        // the elements are written. Found by the simulator's `--dumps`.
                        ctx.deltas.key_changed(&key, &state);
                        state.drop_element_tombstones();
                    }
                    // The old elements' tombstones carry the remove's dot: the new
                    // elements are a write after it.
                    ctx.next_dot()
                } else {
                    dot
                };
                match collection {
                    SnapshotValue::Hash(fields) => {
                        let elements = state.hash_mut();
                        elements.set_pack_limit(self.pack_limit(Part::Hash));
                        for (field, value) in fields {
                            elements.write(&field, |s| s.set(dot, value, SetTtl::Keep));
                        }
                    }
                    SnapshotValue::Set(members) => {
                        let elements = state.set_mut();
                        elements.set_pack_limit(self.pack_limit(Part::Set));
                        for member in members {
                            elements.write(&member, |s| s.set(dot, MEMBER_MARK, SetTtl::Keep));
                        }
                    }
                    SnapshotValue::Zset(members) => {
                        let elements = state.part_mut(Part::Zset);
                        for (member, score) in members {
                            elements.write(&member, |s| s.set(dot, score_value(score), SetTtl::Keep));
                        }
                    }
                    SnapshotValue::List(elements) => KvEngine::list_state(dot, &mut state, elements),
                    SnapshotValue::Named(part, elements) => {
                        let part = state.part_mut(part);
                        for (name, value) in elements {
                            part.write(&name, |s| s.set(dot, value, SetTtl::Keep));
                        }
                    }
                    SnapshotValue::String(_) => unreachable!("strings are restored above"),
                }
                if let SetTtl::At(at_ms) = ttl {
                    state.expire_at(ctx.next_dot(), at_ms);
                }
                self.commit_new(ctx, key, hash, state);
            }
        }
    }

    /// Remove every key (FLUSHALL/FLUSHDB). The flush record claims, for every key at
    /// once, what this shard had seen as far as that is safe to claim (its own writes
    /// and what is causally stable; see `Elements::remove_held` for why not more): so
    /// replaying it removes no write it never held. A key holding writes beyond that
    /// claim is removed on its own, exactly (a tombstone of what it held), as expiry
    /// removes a key.
    pub fn flush(&mut self, ctx: &mut WriteCtx) {
        let dot = ctx.next_dot();
        let mut seen = crate::crdt::VersionVector::new();
        seen.add(dot);
        for entry in self.keys.iter() {
            seen.merge(&entry.state().causal_context());
        }
        let safe = self.whole_key_safe(Some(dot));
        let claim = match &safe {
            Some(safe) => seen.meet(safe),
            None => seen,
        };
        let beyond: Vec<(Bytes, KeyState)> = self
            .keys
            .iter()
            .filter(|e| !claim.dominates(&e.state().causal_context()))
            .map(|e| (e.key_to_bytes(), e.state().clone()))
            .collect();
        ctx.deltas.flushed(&claim, self.scope);
        self.record_flush(&claim, self.scope);
        self.keys.clear();
        for (key, mut state) in beyond {
            let hash = key_hash(&key);
            state.clear_held(safe.as_ref(), Some(dot));
            ctx.deltas.key_changed(&key, &state);
            if self.keep_tombstones {
                self.keys.put_tombstone(key, hash, state);
            }
        }
    }

    /// KEYS: every live key matching `pattern`.
    pub fn matching_keys(&self, pattern: &[u8], now_ms: u64) -> Vec<Bytes> {
        let match_all = pattern == b"*";
        self.keys
            .iter()
            .filter(|e| !Self::is_expired(e.state(), now_ms) && (match_all || glob_match(pattern, e.key())))
            .map(|e| e.key_to_bytes())
            .collect()
    }

    /// One SCAN step over this shard from slot position `cursor`. Returns the keys and
    /// the next position (`SLOT_SPACE` when this shard is done).
    pub fn scan(&self, cursor: u64, count: usize, pattern: Option<&[u8]>, type_filter: Option<&[u8]>, now_ms: u64) -> (Vec<Bytes>, u64) {
        let mut keys = Vec::new();
        let next = self.keys.scan(cursor.min(SLOT_SPACE - 1), count, |e| {
            if Self::is_expired(e.state(), now_ms) {
                return;
            }
            if pattern.is_some_and(|p| !glob_match(p, e.key())) {
                return;
            }
            if type_filter.is_some_and(|t| !t.eq_ignore_ascii_case(type_name(e.state()).as_bytes())) {
                return;
            }
            keys.push(e.key_to_bytes());
        });
        (keys, next)
    }

    /// A random live key; `picks` supplies random numbers (the shard's seeded RNG).
    pub fn random_key(&mut self, now_ms: u64, mut picks: impl FnMut() -> u64) -> Option<Bytes> {
        const TRIES_MAX: usize = 100;
        for _ in 0..TRIES_MAX {
            let entry = self.keys.random_entry(picks())?;
            let key = entry.key_to_bytes();
            if self.live(&key, key_hash(&key), now_ms).is_some() {
                return Some(key);
            }
        }
        None
    }

    /// An error reply for RENAME of a missing key.
    pub fn no_such_key() -> Frame {
        errors::error(errors::NO_SUCH_KEY)
    }
}

/// Milliseconds as the nearest whole second, as TTL and EXPIRETIME answer: exact up
/// to an expiry at `i64::MAX` ms (whose `+ 500` overflowed an i64: found by the
/// differential fuzz test, `PEXPIREAT k 9223372036854775807` then `EXPIRETIME k`).
fn rounded_seconds(ms: u64) -> i64 {
    ((u128::from(ms) + 500) / 1000) as i64
}
