//! The random multi-replica histories the merge laws (`super`) run: the steps, their
//! strategies, the replicas that apply them (directly, by full state and by element-sized
//! deltas) and the checks of derived indexes, so the laws read as laws.

use std::collections::BTreeSet;

use bytes::Bytes;
use proptest::prelude::*;

use crate::crdt::{Dot, Hlc, HlcClock, NodeId, VersionVector};
use crate::engine::kv::collection_writes::Part;
use crate::engine::kv::value::{KeyKind, KeyState, MEMBER_MARK, SetTtl, StrVal, score_value};

/// One step of a random multi-replica history.
#[derive(Clone, Debug)]
pub(super) enum Step {
    Set(usize, i64),
    SetText(usize, u8),
    Incr(usize, i64),
    IncrFloat(usize, i8),
    Del(usize),
    Expire(usize, u64),
    Persist(usize),
    /// HSET of field .1 (of a few) to .2.
    HSet(usize, u8, i64),
    /// HINCRBY of field .1.
    HIncr(usize, u8, i64),
    /// HDEL of field .1 (when it exists).
    HDel(usize, u8),
    /// SADD of member .1 (a new dot even when it is there).
    SAdd(usize, u8),
    /// SREM of member .1 (when it exists).
    SRem(usize, u8),
    /// ZADD of member .1 at score .2.
    ZAdd(usize, u8, i8),
    /// ZINCRBY of member .1 by .2 / 2.
    ZIncr(usize, u8, i8),
    /// ZREM of member .1 (when it exists).
    ZRem(usize, u8),
    /// LPUSH (.1) or RPUSH of value .2.
    ListPush(usize, bool, u8),
    /// LPOP (.1) or RPOP (when the list has elements).
    ListPop(usize, bool),
    /// LSET of the element at index .1 (modulo the length) to .2.
    ListSet(usize, u8, u8),
    /// LINSERT of .2 before the element at index .1 (modulo the length).
    ListInsert(usize, u8, u8),
    /// Merge replica .0's state into replica .1.
    Sync(usize, usize),
    /// Merge one of replica .0's deltas (picked by .2) into replica .1: deltas arrive
    /// late, out of order and twice.
    Deliver(usize, usize, usize),
    /// Merge replica .0's oldest delta that replica .1 does not hold yet into it: an
    /// ordered link, so that what every replica holds grows as a prefix (stability).
    Ship(usize, usize),
    /// Tombstone GC on replica .0 at the causally stable vector (what every replica
    /// has merged without a gap), as `KvEngine::forget_stable` runs it on a live key.
    Forget(usize),
}

pub(super) const REPLICAS: usize = 3;

pub(super) fn step() -> impl Strategy<Value = Step> {
    let r = 0..REPLICAS;
    prop_oneof![
        (r.clone(), -5i64..5).prop_map(|(r, v)| Step::Set(r, v)),
        (r.clone(), 0u8..3).prop_map(|(r, v)| Step::SetText(r, v)),
        (r.clone(), -3i64..4).prop_map(|(r, v)| Step::Incr(r, v)),
        (r.clone(), -4i8..4).prop_map(|(r, v)| Step::IncrFloat(r, v)),
        r.clone().prop_map(Step::Del),
        (r.clone(), 1u64..50).prop_map(|(r, v)| Step::Expire(r, v)),
        r.clone().prop_map(Step::Persist),
        (r.clone(), 0u8..3, -5i64..5).prop_map(|(r, f, v)| Step::HSet(r, f, v)),
        (r.clone(), 0u8..3, -3i64..4).prop_map(|(r, f, v)| Step::HIncr(r, f, v)),
        (r.clone(), 0u8..3).prop_map(|(r, f)| Step::HDel(r, f)),
        (r.clone(), 0u8..3).prop_map(|(r, m)| Step::SAdd(r, m)),
        (r.clone(), 0u8..3).prop_map(|(r, m)| Step::SRem(r, m)),
        (r.clone(), 0u8..3, -3i8..3).prop_map(|(r, m, v)| Step::ZAdd(r, m, v)),
        (r.clone(), 0u8..3, -3i8..4).prop_map(|(r, m, v)| Step::ZIncr(r, m, v)),
        (r.clone(), 0u8..3).prop_map(|(r, m)| Step::ZRem(r, m)),
        (r.clone(), any::<bool>(), 0u8..4).prop_map(|(r, left, v)| Step::ListPush(r, left, v)),
        (r.clone(), any::<bool>()).prop_map(|(r, left)| Step::ListPop(r, left)),
        (r.clone(), 0u8..8, 0u8..4).prop_map(|(r, i, v)| Step::ListSet(r, i, v)),
        (r.clone(), 0u8..8, 0u8..4).prop_map(|(r, i, v)| Step::ListInsert(r, i, v)),
        (r.clone(), r.clone()).prop_map(|(a, b)| Step::Sync(a, b)),
        (r.clone(), r, 0usize..64).prop_map(|(a, b, i)| Step::Deliver(a, b, i)),
    ]
}

/// [`step`], with tombstone GC at the stable vector now and then, and more of what
/// makes element tombstones: element writes and removes, whole-key removes, single
/// deltas delivered (a whole-state sync makes everything before it stable at once).
pub(super) fn step_with_gc() -> impl Strategy<Value = Step> {
    let r = 0..REPLICAS;
    prop_oneof![
        4 => step(),
        2 => (r.clone(), 0u8..3, -5i64..5).prop_map(|(r, f, v)| Step::HSet(r, f, v)),
        1 => (r.clone(), 0u8..3).prop_map(|(r, f)| Step::HDel(r, f)),
        1 => (r.clone(), 0u8..3).prop_map(|(r, m)| Step::SAdd(r, m)),
        2 => r.clone().prop_map(Step::Del),
        2 => (r.clone(), r.clone(), 0usize..64).prop_map(|(a, b, i)| Step::Deliver(a, b, i)),
        8 => (r.clone(), r.clone()).prop_map(|(a, b)| Step::Ship(a, b)),
        2 => r.prop_map(Step::Forget),
    ]
}

pub(super) struct Replica {
    node: NodeId,
    clock: HlcClock,
    pub(super) state: KeyState,
    /// Every delta this replica's own writes produced, as the engine ships them.
    deltas: Vec<KeyState>,
    /// The stamp of each of `deltas`.
    stamps: Vec<Hlc>,
    /// Per origin replica, which of its deltas this state holds (its own included).
    merged: Vec<BTreeSet<usize>>,
    /// What collected element tombstones covered here (`forgotten_elements`).
    forgotten: VersionVector,
}

pub(super) fn replicas() -> Vec<Replica> {
    (0..REPLICAS)
        .map(|i| Replica {
            node: i as NodeId + 1,
            clock: HlcClock::new(),
            state: KeyState::new(),
            deltas: Vec::new(),
            stamps: Vec::new(),
            merged: vec![BTreeSet::new(); REPLICAS],
            forgotten: VersionVector::new(),
        })
        .collect()
}

/// The causally stable vector: per origin, the newest stamp below which every replica
/// holds every one of its deltas (`replication::stability`).
pub(super) fn stable(replicas: &[Replica]) -> VersionVector {
    let mut stable = VersionVector::new();
    for (o, origin) in replicas.iter().enumerate() {
        let prefix = |r: &Replica| (0..).take_while(|i| r.merged[o].contains(i)).count();
        let held = replicas.iter().map(prefix).min().unwrap_or(0);
        if held > 0 {
            stable.add(Dot::new(origin.stamps[held - 1], origin.node));
        }
    }
    stable
}

/// Merge replica `from`'s delta `i` into `to`.
pub(super) fn deliver(replicas: &mut [Replica], from: usize, to: usize, i: usize, now_ms: u64) {
    let delta = replicas[from].deltas[i].clone();
    let hlc = delta.max_hlc();
    let to = &mut replicas[to];
    to.clock.observe(hlc, now_ms, 2_000);
    to.state.merge_forgetting(&delta, &to.forgotten);
    to.merged[from].insert(i);
}

/// Merge replica `from`'s whole state into `to` (anti-entropy).
pub(super) fn sync(replicas: &mut [Replica], from: usize, to: usize, now_ms: u64) {
    let incoming = replicas[from].state.clone();
    let hlc = replicas[from].clock.last();
    let merged = replicas[from].merged.clone();
    let to = &mut replicas[to];
    to.clock.observe(hlc, now_ms, 2_000);
    to.state.merge_forgetting(&incoming, &to.forgotten);
    for (mine, theirs) in to.merged.iter_mut().zip(merged) {
        mine.extend(theirs);
    }
}

pub(in super::super) fn field(f: u8) -> Bytes {
    Bytes::from(vec![b'f', b'0' + f])
}

pub(in super::super) fn member(m: u8) -> Bytes {
    Bytes::from(vec![b'm', b'0' + m])
}

impl Replica {
    /// A write to the whole key: ships the key's state, without its elements where the
    /// write did not touch them (as `KvEngine::commit` does).
    fn key_write(&mut self, dot: Dot, write: impl FnOnce(&mut KeyState, Dot), touches_elements: bool) {
        write(&mut self.state, dot);
        let delta = if touches_elements || !self.state.has_collection() { self.state.clone() } else { self.state.without_elements() };
        self.push(dot, delta);
    }

    fn push(&mut self, dot: Dot, delta: KeyState) {
        let own = (self.node - 1) as usize;
        self.merged[own].insert(self.deltas.len());
        self.deltas.push(delta);
        self.stamps.push(dot.hlc);
    }

    /// A write to one hash field (when the key is not a string).
    fn field_write(&mut self, dot: Dot, f: u8, write: impl FnOnce(&mut KeyState, Dot)) {
        if !matches!(self.state.kind(), None | Some(KeyKind::Hash)) {
            return;
        }
        let name = field(f);
        let part = self.state.hash_mut().write(&name, |s| write(s, dot));
        self.push(dot, KeyState::hash_delta([(name, part)]));
    }

    /// A write to one set member (when the key is a set or absent), as the engine
    /// ships it: the member's state alone.
    fn member_write(&mut self, dot: Dot, m: u8, write: impl FnOnce(&mut KeyState, Dot)) {
        if !matches!(self.state.kind(), None | Some(KeyKind::Set)) {
            return;
        }
        let name = member(m);
        let part = self.state.set_mut().write(&name, |s| write(s, dot));
        self.push(dot, KeyState::set_delta([(name, part)]));
    }
}

impl Replica {
    /// A write to one sorted set member (when the key is a sorted set or absent), as
    /// the engine ships it: the member's state alone.
    fn zset_write(&mut self, dot: Dot, m: u8, write: impl FnOnce(&mut KeyState, Dot)) {
        if !matches!(self.state.kind(), None | Some(KeyKind::Zset)) {
            return;
        }
        let name = member(m);
        let part = self.state.part_mut(Part::Zset).write(&name, |s| write(s, dot));
        self.push(dot, KeyState::part_delta(Part::Zset, [(name, part)]));
    }
}

impl Replica {
    /// The live positions of the list, in order (empty when the key is no list).
    fn list_positions(&self) -> Vec<Bytes> {
        if self.state.kind() != Some(KeyKind::List) {
            return Vec::new();
        }
        self.state
            .list_elements()
            .map_or(Vec::new(), |l| crate::engine::kv::lists::walk(l, false).map(|(n, _)| Bytes::copy_from_slice(&n)).collect())
    }

    /// A write to one list element (when the key is a list or absent), as the engine
    /// ships it: the element's state alone.
    fn list_write(&mut self, dot: Dot, name: Bytes, write: impl FnOnce(&mut KeyState)) {
        if !matches!(self.state.kind(), None | Some(KeyKind::List)) {
            return;
        }
        let part = self.state.part_mut(Part::List).write(&name, write);
        self.push(dot, KeyState::part_delta(Part::List, [(name, part)]));
    }
}

/// Whether a list's table walks exactly its entries, live ones counted, in strictly
/// ascending byte order (its chunks and side map stay one sorted map).
pub(super) fn positions_match_elements(state: &KeyState) -> bool {
    let Some(list) = state.list_elements() else { return true };
    let Some(table) = list.list() else { return false };
    let all: Vec<Vec<u8>> = table.walk(false, false).map(|(n, _)| n.to_vec()).collect();
    let live = table.walk(false, true).count();
    live == list.len() && all.len() == list.entries_len() && all.windows(2).all(|w| w[0] < w[1])
}

/// Whether a sorted set's score order lists exactly its live members with their
/// scores, in (score, member) order (the index is derived; it must never drift).
pub(in super::super) fn score_order_matches_members(state: &KeyState) -> bool {
    let Some(zset) = state.zset_members() else { return true };
    let Some(order) = zset.score_order() else { return false };
    let mut expected: Vec<(Bytes, f64)> = zset.iter().map(|(m, s)| (Bytes::copy_from_slice(m), s.score())).collect();
    crate::engine::kv::zset_query::sort_by_score(&mut expected);
    let indexed: Vec<(Bytes, f64)> = order.iter(false).map(|(s, m)| (Bytes::copy_from_slice(m), s)).collect();
    indexed == expected
}

/// Run a history; returns the replicas' states.
pub(super) fn run(steps: &[Step]) -> Vec<KeyState> {
    let mut replicas = replicas();
    run_into(steps, &mut replicas);
    replicas.into_iter().map(|r| r.state).collect()
}

pub(super) fn run_into(steps: &[Step], replicas: &mut [Replica]) {
    for (t, step) in steps.iter().enumerate() {
        // Every collection keeps its digest from its first step on (it does only once
        // asked, `elements/digest.rs`): the laws then compare digests kept write by
        // write and merge by merge, and debug builds check each against its entries.
        for replica in replicas.iter() {
            crate::engine::kv::merkle::digest(b"k", &replica.state);
        }
        let now_ms = 1_000 + t as u64;
        let dot = |r: &mut Replica| Dot::new(r.clock.tick(now_ms), r.node);
        match *step {
            Step::Set(r, v) => {
                let d = dot(&mut replicas[r]);
                let safe = whole_key_safe(replicas, d);
                replicas[r].key_write(
                    d,
                    |s, d| {
                        s.remove_elements(Some(&safe), Some(d));
                        s.set(d, StrVal::Int(v), SetTtl::Clear)
                    },
                    true,
                );
            }
            Step::SetText(r, v) => {
                let d = dot(&mut replicas[r]);
                let safe = whole_key_safe(replicas, d);
                replicas[r].key_write(
                    d,
                    |s, d| {
                        s.remove_elements(Some(&safe), Some(d));
                        s.set(d, StrVal::raw(Bytes::from(vec![b'a' + v])), SetTtl::Keep)
                    },
                    true,
                );
            }
            Step::Incr(r, v) => {
                if matches!(replicas[r].state.kind(), Some(KeyKind::Hash | KeyKind::Set | KeyKind::Zset | KeyKind::List)) {
                    continue;
                }
                let d = dot(&mut replicas[r]);
                replicas[r].key_write(d, |s, d| s.incr_by(d, Hlc::ZERO, v), false);
            }
            Step::IncrFloat(r, v) => {
                if matches!(replicas[r].state.kind(), Some(KeyKind::Hash | KeyKind::Set | KeyKind::Zset | KeyKind::List)) {
                    continue;
                }
                let d = dot(&mut replicas[r]);
                replicas[r].key_write(d, |s, d| s.incr_by_float(d, Hlc::ZERO, v as f64 * 0.5), false);
            }
            Step::Del(r) => {
                let d = dot(&mut replicas[r]);
                let safe = whole_key_safe(replicas, d);
                replicas[r].key_write(
                    d,
                    |s, d| {
                        s.remove_elements(Some(&safe), Some(d));
                        s.delete(d)
                    },
                    true,
                );
            }
            Step::Expire(r, at) => {
                let d = dot(&mut replicas[r]);
                replicas[r].key_write(d, |s, d| s.expire_at(d, 10_000 + at), false);
            }
            Step::Persist(r) => {
                let d = dot(&mut replicas[r]);
                replicas[r].key_write(d, |s, d| s.persist(d), false);
            }
            Step::HSet(r, f, v) => {
                let d = dot(&mut replicas[r]);
                replicas[r].field_write(d, f, |s, d| s.set(d, StrVal::Int(v), SetTtl::Keep));
            }
            Step::HIncr(r, f, v) => {
                let d = dot(&mut replicas[r]);
                replicas[r].field_write(d, f, |s, d| s.incr_by(d, Hlc::ZERO, v));
            }
            Step::HDel(r, f) => {
                if replicas[r].state.hash().and_then(|h| h.get(&field(f))).is_none() || replicas[r].state.kind() != Some(KeyKind::Hash) {
                    continue;
                }
                let d = dot(&mut replicas[r]);
                replicas[r].field_write(d, f, |s, d| s.delete(d));
            }
            Step::SAdd(r, m) => {
                let d = dot(&mut replicas[r]);
                replicas[r].member_write(d, m, |s, d| s.set(d, MEMBER_MARK, SetTtl::Keep));
            }
            Step::SRem(r, m) => {
                if replicas[r].state.set_members().and_then(|s| s.get(&member(m))).is_none()
                    || replicas[r].state.kind() != Some(KeyKind::Set)
                {
                    continue;
                }
                let d = dot(&mut replicas[r]);
                replicas[r].member_write(d, m, |s, d| s.delete(d));
            }
            Step::ZAdd(r, m, v) => {
                let d = dot(&mut replicas[r]);
                replicas[r].zset_write(d, m, |s, d| s.set(d, score_value(v as f64), SetTtl::Keep));
            }
            Step::ZIncr(r, m, v) => {
                let d = dot(&mut replicas[r]);
                replicas[r].zset_write(d, m, |s, d| s.incr_by_float(d, Hlc::ZERO, v as f64 * 0.5));
            }
            Step::ZRem(r, m) => {
                if replicas[r].state.zset_members().and_then(|z| z.get(&member(m))).is_none()
                    || replicas[r].state.kind() != Some(KeyKind::Zset)
                {
                    continue;
                }
                let d = dot(&mut replicas[r]);
                replicas[r].zset_write(d, m, |s, d| s.delete(d));
            }
            Step::ListPush(r, left, v) => {
                let positions = replicas[r].list_positions();
                let d = dot(&mut replicas[r]);
                let name = if left {
                    crate::engine::kv::position::between(
                        None,
                        positions.first().map(|p| p.as_ref()),
                        d,
                        crate::engine::kv::position::Placement::BeforeHigh,
                    )
                } else {
                    crate::engine::kv::position::between(
                        positions.last().map(|p| p.as_ref()),
                        None,
                        d,
                        crate::engine::kv::position::Placement::AfterLow,
                    )
                };
                replicas[r].list_write(d, Bytes::from(name), |s| s.set(d, StrVal::Int(v as i64), SetTtl::Keep));
            }
            Step::ListPop(r, left) => {
                let positions = replicas[r].list_positions();
                let Some(name) = (if left { positions.first() } else { positions.last() }).cloned() else { continue };
                let d = dot(&mut replicas[r]);
                replicas[r].list_write(d, name, |s| s.delete(d));
            }
            Step::ListSet(r, i, v) => {
                let positions = replicas[r].list_positions();
                if positions.is_empty() {
                    continue;
                }
                let name = positions[i as usize % positions.len()].clone();
                let d = dot(&mut replicas[r]);
                replicas[r].list_write(d, name, |s| s.set(d, StrVal::Int(v as i64), SetTtl::Keep));
            }
            Step::ListInsert(r, i, v) => {
                let positions = replicas[r].list_positions();
                if positions.is_empty() {
                    continue;
                }
                let i = i as usize % positions.len();
                let low = i.checked_sub(1).map(|j| positions[j].as_ref());
                let d = dot(&mut replicas[r]);
                let name =
                    crate::engine::kv::position::between(low, Some(&positions[i]), d, crate::engine::kv::position::Placement::Middle);
                replicas[r].list_write(d, Bytes::from(name), |s| s.set(d, StrVal::Int(v as i64), SetTtl::Keep));
            }
            Step::Deliver(from, to, i) => {
                if !replicas[from].deltas.is_empty() {
                    let i = i % replicas[from].deltas.len();
                    deliver(replicas, from, to, i, now_ms);
                }
            }
            Step::Ship(from, to) => {
                if let Some(i) = (0..replicas[from].deltas.len()).find(|i| !replicas[to].merged[from].contains(i)) {
                    deliver(replicas, from, to, i, now_ms);
                }
            }
            Step::Sync(from, to) => sync(replicas, from, to, now_ms),
            Step::Forget(r) => forget(replicas, r),
        }
    }
}

/// What a whole-key remove at `dot` may claim at key level: the writer's own writes
/// and what is stable (`KvEngine::whole_key_safe`).
pub(super) fn whole_key_safe(replicas: &[Replica], dot: Dot) -> VersionVector {
    let mut safe = stable(replicas);
    safe.add(dot);
    safe
}

/// Tombstone GC on replica `r`, as the engine runs it: element tombstones of a live
/// key (a key tombstone goes whole, later).
pub(super) fn forget(replicas: &mut [Replica], r: usize) {
    let stable = stable(replicas);
    let replica = &mut replicas[r];
    if replica.state.exists() && replica.state.forget_stable_elements(&stable, &[]) > 0 {
        replica.forgotten.merge(&stable);
    }
}

/// Run a history; returns every replica's own deltas.
pub(super) fn run_deltas(steps: &[Step]) -> Vec<Vec<KeyState>> {
    let mut replicas = replicas();
    run_into(steps, &mut replicas);
    replicas.into_iter().map(|r| r.deltas).collect()
}

pub(in super::super) fn merged(a: &KeyState, b: &KeyState) -> KeyState {
    let mut out = a.clone();
    out.merge(b);
    out
}
