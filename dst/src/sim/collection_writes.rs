//! What a replicated run's hash and set writes observed and did: the collection
//! oracle's side of replication runs (`oracle_collections.rs`). Before a command, the
//! writer's key context and element contexts are read from the engine; after it, a key
//! whose context gained a new dot of the writer was written, and the write is recorded
//! with what the command did (from its arguments, its reply for SPOP, the stored result
//! for a STORE). At the end every replica's collections are checked against the oracle.

use std::collections::BTreeMap;

use bytes::Bytes;
use meridian::crdt::{Dot, VersionVector};
use meridian::engine::kv::KeyState;
use meridian::engine::kv::element::ElementRef;
use meridian::protocol::Frame;

use super::Sim;
use super::writes::{context_of, state_of};
use meridian::engine::kv::elements::Elements;

use crate::oracle_collections::{CollOp, Write, score_text_of};
use crate::workload::is_collection_key;

/// Ops of a failing key shown in its report: the last ones.
const OPS_SHOWN_MAX: usize = 24;

/// A collection key a command may write, and what its writer had observed.
pub(super) struct CollectionBefore {
    key: Bytes,
    key_ctx: VersionVector,
    element_ctx: BTreeMap<Bytes, VersionVector>,
    /// A list's live elements in list order (empty for other types).
    order: Vec<Bytes>,
}

/// The elements of a key state's collection part (live ones), by name.
fn elements_of(state: &KeyState) -> Option<&Elements> {
    state.hash().or_else(|| state.set_members()).or_else(|| state.zset_members()).or_else(|| state.list_elements())
}

/// An element's value as the collection oracle compares it: a hash field's or a list
/// element's value, a sorted set member's score as text, nothing for a set member.
fn element_value(state: &KeyState, element: ElementRef<'_>) -> Option<Bytes> {
    if state.zset_members().is_some() {
        Some(Bytes::from(score_text_of(element.score())))
    } else if state.hash().is_some() || state.list_elements().is_some() {
        element.read().map(|v| v.to_bytes())
    } else {
        None
    }
}

/// The live elements of `key` on `node`: name and (but for a set) value.
fn live_elements(state: Option<&KeyState>) -> BTreeMap<Bytes, Option<Bytes>> {
    let Some(state) = state.filter(|s| s.exists()) else { return BTreeMap::new() };
    let mut live = BTreeMap::new();
    if let Some(elements) = elements_of(state) {
        // Every form, a list's chunks included.
        elements.for_each_entry(|name, s| {
            if s.exists() {
                live.insert(Bytes::copy_from_slice(name), element_value(state, s));
            }
        });
    }
    live
}

/// A list's live elements in list order, with their values (empty for no list).
fn list_order(state: Option<&KeyState>) -> Vec<(Bytes, Bytes)> {
    let Some(list) = state.filter(|s| s.exists()).and_then(|s| s.list_elements()) else { return Vec::new() };
    // The engine's own walk: the order its reads and pops see.
    meridian::engine::kv::lists::walk(list, false)
        .map(|(name, e)| (Bytes::copy_from_slice(&name), e.read().map(|v| v.to_bytes()).unwrap_or_default()))
        .collect()
}

/// The collection keys a replication-workload command may write.
fn written_collection_keys(args: &[Bytes]) -> Vec<Bytes> {
    let name = args[0].to_ascii_uppercase();
    let keys: Vec<Bytes> = match name.as_slice() {
        b"SADD" | b"SREM" | b"SPOP" | b"HSET" | b"HSETNX" | b"HDEL" | b"HINCRBY" | b"HINCRBYFLOAT" | b"DEL" | b"ZADD" | b"ZINCRBY"
        | b"ZREM" | b"ZPOPMIN" | b"ZPOPMAX" | b"LPUSH" | b"RPUSH" | b"LPOP" | b"RPOP" | b"LSET" | b"LINSERT" | b"LREM" | b"LTRIM" => {
            args.get(1).cloned().into_iter().collect()
        }
        b"SMOVE" => args[1..3].to_vec(),
        b"SINTERSTORE" | b"SUNIONSTORE" | b"SDIFFSTORE" => args.get(1).cloned().into_iter().collect(),
        _ => Vec::new(),
    };
    keys.into_iter().filter(|k| is_collection_key(k)).collect()
}

impl Sim {
    /// The collection keys the command may write, with their contexts before it: the
    /// key's, and every live element's (a remove's observed set is its element's).
    pub(super) fn collection_contexts_before(&self, node: usize, args: &[Bytes]) -> Vec<CollectionBefore> {
        let n = &self.nodes[node];
        written_collection_keys(args)
            .into_iter()
            .map(|key| {
                let state = state_of(n, &key);
                let element_ctx = state
                    .as_ref()
                    .filter(|s| s.exists())
                    .and_then(elements_of)
                    .map(|e| e.live_named().into_iter().map(|(name, s)| (name, s.causal_context())).collect())
                    .unwrap_or_default();
                let order = list_order(state.as_ref()).into_iter().map(|(name, _)| name).collect();
                CollectionBefore { key_ctx: context_of(n, &key), key, element_ctx, order }
            })
            .collect()
    }

    /// Record every collection write the command made.
    pub(super) fn record_collection_writes(&mut self, node: usize, args: &[Bytes], before: Vec<CollectionBefore>, reply: &Frame) {
        let n = &self.nodes[node];
        let own = n.id;
        let name = args[0].to_ascii_uppercase();
        let mut ops = Vec::new();
        let mut inserts = Vec::new();
        for CollectionBefore { key, key_ctx, element_ctx, order } in before {
            let after = context_of(n, &key);
            if after.get(own) <= key_ctx.get(own) {
                continue;
            }
            let mut op = CollOp {
                dot: Dot::new(after.get(own), own),
                writes: Vec::new(),
                removes: Vec::new(),
                remove_all: false,
                key_ctx,
                element_ctx,
                doubtful: false,
                sim_ms: self.now,
            };
            match name.as_slice() {
                b"SADD" => op.writes = args[2..].iter().map(|m| (m.clone(), Write::Member)).collect(),
                b"SREM" | b"HDEL" => op.removes = args[2..].to_vec(),
                b"SPOP" => op.removes = popped(reply),
                b"SMOVE" if key == args[1] => op.removes = vec![args[3].clone()],
                b"SMOVE" => op.writes = vec![(args[3].clone(), Write::Member)],
                b"SINTERSTORE" | b"SUNIONSTORE" | b"SDIFFSTORE" => {
                    op.remove_all = true;
                    op.writes = live_elements(state_of(n, &key).as_ref()).into_keys().map(|m| (m, Write::Member)).collect();
                }
                b"HSET" | b"HSETNX" => {
                    // The last value given for a field wins within one HSET.
                    for pair in args[2..].chunks(2) {
                        op.writes.retain(|(f, _)| *f != pair[0]);
                        op.writes.push((pair[0].clone(), Write::Value(pair[1].clone())));
                    }
                }
                b"HINCRBY" | b"HINCRBYFLOAT" => op.writes = vec![(args[2].clone(), Write::Incr)],
                b"DEL" => op.remove_all = true,
                b"ZADD" | b"ZINCRBY" | b"ZREM" | b"ZPOPMIN" | b"ZPOPMAX" | b"LPUSH" | b"RPUSH" | b"LPOP" | b"RPOP" | b"LSET"
                | b"LINSERT" | b"LREM" | b"LTRIM" => {
                    let after = state_of(n, &key);
                    (op.writes, op.removes) = element_changes(&name, args, &op, after.as_ref());
                    if matches!(name.as_slice(), b"LPUSH" | b"RPUSH" | b"LINSERT") {
                        let after: Vec<Bytes> = list_order(after.as_ref()).into_iter().map(|(n, _)| n).collect();
                        inserts.push((key.clone(), op.dot, order, after));
                    }
                }
                other => {
                    let reason = format!("n{node}: {} wrote {key:?}, which the oracle does not model", String::from_utf8_lossy(other));
                    self.fail(reason);
                    return;
                }
            }
            ops.push((key, op));
        }
        for (key, op) in ops {
            if let Err(reason) = self.oracle.collections.record(key, op) {
                self.fail(reason);
                return;
            }
        }
        for (key, dot, before, after) in inserts {
            if let Err(reason) = self.oracle.lists.record(key, dot, &before, &after, self.now) {
                self.fail(reason);
                return;
            }
        }
    }

    /// After quiescence (replicas already identical): every collection key on `node`
    /// within the oracle's bounds, and no sure write lost.
    pub(super) fn check_collections(&mut self, node: usize) {
        let mut checked = 0;
        // The first key that differs is reported in full, the others by name.
        let mut first: Option<String> = None;
        let mut others = Vec::new();
        for (key, bounds) in self.oracle.collections.bounds() {
            let actual = live_elements(state_of(&self.nodes[node], &key).as_ref());
            match bounds.check(&actual) {
                Ok(()) => checked += 1,
                Err(reason) if first.is_none() => first = Some(self.collection_report(&key, &actual, &reason)),
                Err(_) => others.push(String::from_utf8_lossy(&key).into_owned()),
            }
        }
        if let Some(report) = first {
            let others = if others.is_empty() { String::new() } else { format!("\n  other keys that differ: {others:?}") };
            self.fail(format!("{report}{others}"));
            return;
        }
        let tainted = self.oracle.collections.tainted.len();
        self.log(format!("checked {checked} collection keys against the oracle ({tainted} for safety only, after crashes)"));
    }

    /// After quiescence: every node's lists read the same, element by element, and
    /// their order keeps every rule of `oracle_lists.rs` (checked after crashes too).
    pub(super) fn check_lists(&mut self) {
        let show = |l: &[(Bytes, Bytes)]| l.iter().map(|(_, v)| String::from_utf8_lossy(v).into_owned()).collect::<Vec<_>>();
        let (mut checked, mut same_gap) = (0, 0);
        for key in crate::workload::REPLICATED_LIST_KEYS.map(|k| Bytes::from_static(k.as_bytes())) {
            let lists: Vec<Vec<(Bytes, Bytes)>> = self.nodes.iter().map(|n| list_order(state_of(n, &key).as_ref())).collect();
            if let Some(other) = lists.iter().position(|l| *l != lists[0]) {
                let reason = format!("list {key:?} reads {:?} on n0 and {:?} on n{other}", show(&lists[0]), show(&lists[other]));
                self.fail(reason);
                return;
            }
            match self.oracle.lists.check(&key, &lists[0]) {
                Ok(pairs) => same_gap += pairs,
                Err(reason) => {
                    let inserts = self.oracle.lists.inserts.get(&key).map_or(0, Vec::len);
                    self.fail(format!("list {key:?} out of order: {reason}\n  list: {:?}\n  {inserts} inserts", show(&lists[0])));
                    return;
                }
            }
            checked += self.oracle.lists.inserts.get(&key).map_or(0, Vec::len);
        }
        // Pops are at least once across regions: count the elements more than one
        // write removed (each had seen it), e.g. the same head popped in two regions.
        let mut twice = 0;
        for key in crate::workload::REPLICATED_LIST_KEYS.map(|k| Bytes::from_static(k.as_bytes())) {
            let mut removers: BTreeMap<&Bytes, usize> = BTreeMap::new();
            for op in self.oracle.collections.ops.get(&key).into_iter().flatten() {
                for name in op.removes.iter().filter(|n| op.element_ctx.contains_key(*n)) {
                    *removers.entry(name).or_default() += 1;
                }
            }
            twice += removers.values().filter(|&&n| n > 1).count();
        }
        self.log(format!("checked the order of the lists against {checked} inserts ({same_gap} pairs into one gap); {twice} list elements removed in more than one write"));
    }

    fn collection_report(&self, key: &Bytes, actual: &BTreeMap<Bytes, Option<Bytes>>, reason: &str) -> String {
        let show = |b: &Bytes| crate::oracle_collections::show_element(b);
        let ops = self.oracle.collections.ops.get(key).map(Vec::as_slice).unwrap_or_default();
        let mut out = format!(
            "converged {} differs from the oracle: {reason}\n  replicas: {:?}\n  {} writes ({} shown){}:",
            show(key),
            actual.iter().map(|(k, v)| (show(k), v.as_ref().map(show))).collect::<Vec<_>>(),
            ops.len(),
            ops.len().min(OPS_SHOWN_MAX),
            if self.oracle.collections.tainted.contains(key) { ", checked for safety only" } else { "" }
        );
        for op in &ops[ops.len().saturating_sub(OPS_SHOWN_MAX)..] {
            out.push_str(&format!(
                "\n    {:>6} ms {:?} writes {:?} removes {:?}{} key saw {:?} elements saw {:?}{}",
                op.sim_ms,
                op.dot,
                op.writes.iter().map(|(e, w)| format!("{}={w:?}", show(e))).collect::<Vec<_>>(),
                op.removes.iter().map(show).collect::<Vec<_>>(),
                if op.remove_all { " ALL" } else { "" },
                op.key_ctx,
                op.element_ctx.iter().map(|(e, c)| (show(e), c)).collect::<Vec<_>>(),
                if op.doubtful { " (doubtful)" } else { "" }
            ));
        }
        out
    }
}

/// What a sorted set or list write did to each element, read from the writer's state
/// after it: the elements it wrote (their contexts now cover its dot, and they are
/// live) and the live ones it removed. A ZINCRBY (ZADD ... INCR) is an increment by the
/// amount it names, whatever the engine made of it; a ZADD writes the member's score,
/// an insert or LSET the element's value.
fn element_changes(name: &[u8], args: &[Bytes], op: &CollOp, after: Option<&KeyState>) -> (Vec<(Bytes, Write)>, Vec<Bytes>) {
    let elements = after.and_then(elements_of);
    let element = |n: &Bytes| elements.and_then(|e| e.get(n));
    let mut writes = Vec::new();
    for (n, state) in elements.map(|e| e.live_named()).unwrap_or_default() {
        if !state.causal_context().covers(op.dot) {
            continue;
        }
        let increment = name == b"ZINCRBY" || (name == b"ZADD" && args.iter().any(|a| a.eq_ignore_ascii_case(b"INCR")));
        let write = if increment {
            // ZINCRBY key by member; ZADD key ... INCR by member: the amount comes
            // second to last.
            let by = if name == b"ZINCRBY" { &args[2] } else { &args[args.len() - 2] };
            Write::AddScore(std::str::from_utf8(by).ok().and_then(|t| t.parse().ok()).unwrap_or(f64::NAN))
        } else if name == b"ZADD" {
            Write::Score(state.score())
        } else {
            Write::Value(state.read().map(|v| v.to_bytes()).unwrap_or_default())
        };
        writes.push((n, write));
    }
    let removes = op.element_ctx.keys().filter(|n| element(n).is_none()).cloned().collect();
    (writes, removes)
}

/// The members an SPOP reply names.
fn popped(reply: &Frame) -> Vec<Bytes> {
    match reply {
        Frame::Bulk(m) => vec![m.clone()],
        Frame::Set(items) | Frame::Array(items) => items
            .iter()
            .filter_map(|i| match i {
                Frame::Bulk(m) => Some(m.clone()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}
