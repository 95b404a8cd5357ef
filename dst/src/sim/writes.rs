//! What a replicated run accepted, and what its crashes lost: the oracle's side of
//! replication runs. Every write a client saw accepted is recorded with the context its
//! node had; at each restart the writes no node holds any more are forgotten (lost
//! within the documented window), and the ones only other nodes hold become orphans of
//! their node, whose later writes have not seen them (docs/testing.md).

use std::collections::BTreeMap;

use bytes::Bytes;
use meridian::crdt::{Dot, VersionVector};
use meridian::engine::kv::{KeyState, key_hash};
use meridian::routing::shard_for_key;

use super::{Node, Sim};
use crate::oracle::{Op, OpKind, Ttl};

pub(super) fn state_of(node: &Node, key: &[u8]) -> Option<KeyState> {
    let shard = &node.shards[shard_for_key(key, node.shards.len())];
    shard.kv.keys.get(key, key_hash(key)).map(|e| e.state().clone()).or_else(|| shard.kv.keys.tombstone(key).cloned())
}

pub(super) fn context_of(node: &Node, key: &[u8]) -> VersionVector {
    state_of(node, key).map(|s| s.causal_context()).unwrap_or_default()
}

/// Whether `key` is live on `node` at its local time `local_ms` (what a write there sees).
fn exists_on(node: &Node, key: &[u8], local_ms: u64) -> bool {
    let shard = &node.shards[shard_for_key(key, node.shards.len())];
    shard.kv.keys.get(key, key_hash(key)).is_some_and(|e| e.state().expire_at_ms().is_none_or(|at| local_ms <= at))
}

impl Sim {
    /// After a restart: a crash loses the writes its node had not stored, unless they
    /// had reached another node that still holds them (acknowledged from memory is the
    /// documented default). Drop from the oracle every write that no node holds any
    /// more: in memory for a running node, in its store for one that is down.
    pub(super) fn forget_lost_writes(&mut self, restarted: usize) {
        let now = self.now;
        let mut holders: Vec<Vec<meridian::shard::Shard>> = Vec::new();
        for node in 0..self.nodes.len() {
            if self.nodes[node].up {
                continue;
            }
            let n = &mut self.nodes[node];
            let mut shards = super::fresh_shards(0, n.id, self.cfg.shards, true);
            if let Err(e) = n.storage.recover(n.id, &mut shards) {
                self.fail(format!("n{node}'s store cannot be read while it is down: {e}"));
                return;
            }
            holders.push(shards);
        }
        let live: Vec<&[meridian::shard::Shard]> =
            self.nodes.iter().filter(|n| n.up).map(|n| n.shards.as_slice()).chain(holders.iter().map(|h| h.as_slice())).collect();
        // An increment is held where its slot (or the floor that absorbed it) is: a
        // context may claim it without (see `Orphaned`).
        // (Stamps are unique per key, not per node: shards keep their own clocks.)
        let increments: std::collections::BTreeSet<(Bytes, Dot)> = self
            .oracle
            .ops
            .iter()
            .flat_map(|(key, ops)| ops.iter().filter(|op| matches!(op.kind, OpKind::Incr(_))).map(|op| (key.clone(), op.dot)))
            .collect();
        let held = |key: &Bytes, dot: Dot| {
            live.iter().any(|shards| {
                if increments.contains(&(key.clone(), dot)) { holds_increment(shards, key, dot) } else { holds(shards, key, dot) }
            })
        };
        let lost = self.oracle.forget_lost(held);
        // The restarted node's increments that survive elsewhere but not in its own
        // recovered state: its next writes have not seen them.
        let node = &self.nodes[restarted];
        let mut orphans: BTreeMap<Bytes, Vec<Dot>> = BTreeMap::new();
        for (key, ops) in &self.oracle.ops {
            for op in ops.iter().filter(|op| op.dot.node == node.id) {
                let held = match op.kind {
                    OpKind::Incr(_) => holds_increment(&node.shards, key, op.dot),
                    _ => holds(&node.shards, key, op.dot),
                };
                if !held {
                    orphans.entry(key.clone()).or_default().push(op.dot);
                }
            }
        }
        let orphaned: usize = orphans.values().map(Vec::len).sum();
        let line = (!orphans.is_empty()).then(|| format!("writes of node {} that survive only on other nodes: {orphans:?}", node.id));
        self.oracle.orphans.insert(node.id, orphans);
        let node_id = node.id;
        let doubtful = self.oracle.collections.mark_doubtful(node_id, |key, dot| holds(&node.shards, key, dot));
        if doubtful > 0 {
            self.log(format!("{doubtful} hash and set writes of node {node_id} doubtful after its restart"));
        }
        if let Some(line) = line {
            self.log(line);
        }
        if lost > 0 || orphaned > 0 {
            self.log(format!("{lost} acknowledged writes lost with unstored memory, {orphaned} survive only elsewhere (at {now} ms)"));
        }
    }

    /// The keys a replication-workload command writes, with their contexts before it.
    pub(super) fn contexts_before(&self, node: usize, args: &[Bytes]) -> Vec<Orphaned> {
        let n = &self.nodes[node];
        let local_ms = n.local_ms(self.now);
        written_keys(args)
            .into_iter()
            .map(|k| {
                // What the write supersedes: its key's context, and every write the
                // shard has forgotten (merged, removed, the record collected: it holds
                // none of them, and drops any copy that arrives, `value::absence`).
                let mut ctx = context_of(n, &k);
                ctx.merge(n.shards[shard_for_key(&k, n.shards.len())].kv.forgotten_any());
                let (mut unobserved, mut supersedes) = (Vec::new(), Vec::new());
                for (&origin, by_key) in &self.oracle.orphans {
                    for &dot in by_key.get(&k).into_iter().flatten() {
                        let op = self.oracle.ops.get(&k).and_then(|ops| ops.iter().find(|op| op.dot == dot));
                        if op.is_some_and(|op| matches!(op.kind, OpKind::Incr(_))) {
                            // Any node's context may claim it (merged from the orphan's
                            // node after its restart) without the slot holding it.
                            if ctx.covers(dot) && !holds_increment(&n.shards, &k, dot) {
                                unobserved.push(dot);
                            }
                        } else if origin == n.id && !ctx.covers(dot) {
                            supersedes.push(dot);
                        }
                    }
                }
                let existed = exists_on(n, &k, local_ms);
                // What a RENAME or COPY writes to its destination: the source as it
                // reads here before the command.
                let copies = matches!(args[0].to_ascii_uppercase().as_slice(), b"RENAME" | b"RENAMENX" | b"COPY");
                let source = if copies && k != args[1] { string_on(n, &args[1], local_ms) } else { None };
                Orphaned { key: k, ctx, unobserved, supersedes, existed, source }
            })
            .collect()
    }

    /// Record in the oracle every write the command made: a key whose context gained a
    /// new dot of this node was written.
    pub(super) fn record_writes(&mut self, node: usize, args: &[Bytes], before: Vec<Orphaned>, local_ms: u64) {
        let n = &self.nodes[node];
        let own = n.id;
        let name = args[0].to_ascii_uppercase();
        for Orphaned { key, ctx: ctx_before, unobserved, supersedes, existed, source } in before {
            if crate::workload::is_collection_key(&key) {
                // Hash and set keys have their own oracle (`sim::collection_writes`).
                continue;
            }
            let ctx_after = context_of(n, &key);
            if ctx_after.get(own) <= ctx_before.get(own) {
                continue;
            }
            let dot = Dot::new(ctx_after.get(own), own);
            let kind = match name.as_slice() {
                b"SET" => {
                    let ttl = match args.iter().position(|a| a.eq_ignore_ascii_case(b"EX")) {
                        Some(i) => Ttl::At(local_ms + 1000 * parse_u64(&args[i + 1])),
                        None if args.iter().any(|a| a.eq_ignore_ascii_case(b"KEEPTTL")) => Ttl::Keep,
                        None => Ttl::Clear,
                    };
                    OpKind::Set { value: args[2].clone(), ttl }
                }
                b"MSET" => {
                    // The last value given for the key wins within one MSET.
                    let value = args[1..].chunks(2).rev().find(|p| p[0] == key).map(|p| p[1].clone()).unwrap_or_default();
                    OpKind::Set { value, ttl: Ttl::Clear }
                }
                b"INCR" => OpKind::Incr(1),
                b"INCRBY" => OpKind::Incr(parse_i64(&args[2])),
                b"DECRBY" => OpKind::Incr(-parse_i64(&args[2])),
                b"DEL" => OpKind::Del,
                b"EXPIRE" => match parse_i64(&args[2]) {
                    s if s <= 0 => OpKind::Del,
                    s => OpKind::Expire(local_ms + 1000 * s as u64),
                },
                b"PERSIST" => OpKind::Persist,
                // A RESTORE of a string payload is a SET of its value (docs/semantics.md).
                b"RESTORE" => match restored_string(args, local_ms) {
                    Some(kind) => kind,
                    None => {
                        self.fail(format!("n{node}: RESTORE wrote {key:?} from a payload the oracle does not model"));
                        return;
                    }
                },
                // The source is removed as a DEL removes it; the destination is written
                // as a SET of what the source held there, its TTL included.
                b"RENAME" | b"RENAMENX" if key == args[1] => OpKind::Del,
                b"RENAME" | b"RENAMENX" | b"COPY" => {
                    let Some((value, expire_at_ms)) = source else {
                        self.fail(format!("n{node}: {} wrote {key:?} from no string", String::from_utf8_lossy(&name)));
                        return;
                    };
                    OpKind::Set { value, ttl: expire_at_ms.map_or(Ttl::Clear, Ttl::At) }
                }
                other => {
                    let reason = format!("n{node}: {} wrote {key:?}, which the oracle does not model", String::from_utf8_lossy(other));
                    self.fail(reason);
                    return;
                }
            };
            if let Err(reason) =
                self.oracle.record(key, Op { dot, kind, observed: ctx_before, unobserved, supersedes, existed, sim_ms: self.now })
            {
                self.fail(reason);
                return;
            }
        }
    }
}

/// Whether `shards` hold the write `dot` to `key`: its causal context covers it, or what
/// its shard forgot does (merged, removed, the tombstone collected: for a key with
/// neither entry nor tombstone, and for one written again since, whose new context
/// starts after the removal).
pub(super) fn holds(shards: &[meridian::shard::Shard], key: &Bytes, dot: Dot) -> bool {
    let shard = &shards[shard_for_key(key, shards.len())];
    shard.kv.forgotten().covers(dot)
        || shard
            .kv
            .keys
            .get(key, key_hash(key))
            .map(|e| e.state())
            .or_else(|| shard.kv.keys.tombstone(key))
            .is_some_and(|s| s.causal_context().covers(dot))
}

/// A key a command is about to write: the writer's context for it, and which of its
/// own locally lost writes (`Oracle::orphans`) that context claims without holding.
pub(super) struct Orphaned {
    key: Bytes,
    ctx: VersionVector,
    unobserved: Vec<Dot>,
    supersedes: Vec<Dot>,
    /// Whether the key was live there.
    existed: bool,
    /// The destination of a RENAME or COPY: the source's value and TTL there.
    source: Option<(Bytes, Option<u64>)>,
}

/// Whether `shards` hold the increment `dot` of its node: a slot (or floor) of that node
/// from an incarnation begun at or before it has reached its stamp, or what its shard
/// forgot covers it (absorbed, the tombstone collected: as for [`holds`]).
fn holds_increment(shards: &[meridian::shard::Shard], key: &Bytes, dot: Dot) -> bool {
    let shard = &shards[shard_for_key(key, shards.len())];
    if shard.kv.forgotten().covers(dot) {
        return true;
    }
    let Some(state) = shard.kv.keys.get(key, key_hash(key)).map(|e| e.state()).or_else(|| shard.kv.keys.tombstone(key)) else {
        return false;
    };
    state.counter_slots().into_iter().any(|(node, incarnation, hlc)| node == dot.node && incarnation <= dot.hlc && hlc >= dot.hlc)
}

fn written_keys(args: &[Bytes]) -> Vec<Bytes> {
    let name = args[0].to_ascii_uppercase();
    match name.as_slice() {
        b"MSET" => {
            let mut keys: Vec<Bytes> = args[1..].chunks(2).map(|p| p[0].clone()).collect();
            keys.sort();
            keys.dedup();
            keys
        }
        b"SET" | b"INCR" | b"INCRBY" | b"DECRBY" | b"DEL" | b"EXPIRE" | b"PERSIST" => args.get(1).cloned().into_iter().collect(),
        b"RENAME" | b"RENAMENX" => args[1..].iter().take(2).cloned().collect(),
        b"COPY" => args.get(2).cloned().into_iter().collect(),
        b"RESTORE" => args.get(1).cloned().into_iter().collect(),
        _ => Vec::new(),
    }
}

/// The value a live string `key` reads on `node` at its local time `local_ms`, and its
/// TTL (what a RENAME or COPY of it writes).
fn string_on(node: &Node, key: &[u8], local_ms: u64) -> Option<(Bytes, Option<u64>)> {
    let shard = &node.shards[shard_for_key(key, node.shards.len())];
    let state = shard.kv.keys.get(key, key_hash(key))?.state();
    if state.expire_at_ms().is_some_and(|at| local_ms > at) {
        return None;
    }
    Some((Bytes::copy_from_slice(&state.read()?.to_bytes()), state.expire_at_ms()))
}

/// What `RESTORE key ttl payload [REPLACE] [ABSTTL]` of a string payload writes, as a
/// SET: the payload's value, with the TTL the arguments give (node-local `local_ms`).
fn restored_string(args: &[Bytes], local_ms: u64) -> Option<OpKind> {
    use meridian::command::dump::{DumpedValue, decode_payload};
    let DumpedValue::String(value) = decode_payload(args.get(3)?).ok()? else { return None };
    let absolute = args[4..].iter().any(|a| a.eq_ignore_ascii_case(b"ABSTTL"));
    let ttl = match parse_u64(&args[2]) {
        0 => Ttl::Clear,
        at_ms if absolute => Ttl::At(at_ms),
        after_ms => Ttl::At(local_ms + after_ms),
    };
    Some(OpKind::Set { value, ttl })
}

fn parse_i64(b: &[u8]) -> i64 {
    std::str::from_utf8(b).ok().and_then(|s| s.parse().ok()).unwrap_or(0)
}

fn parse_u64(b: &[u8]) -> u64 {
    std::str::from_utf8(b).ok().and_then(|s| s.parse().ok()).unwrap_or(0)
}
