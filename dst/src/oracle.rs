//! The reference semantics of replicated strings and counters (DESIGN §5), written
//! independently of the CRDT code: a list of every accepted write per key, each with
//! the causal context its node had when it wrote, and rules that say what survives.
//!
//! - A SET or DEL removes the value writes and absorbs the increments it had observed.
//! - Value: the surviving SET with the largest `(hlc, node)`, plus the surviving
//!   increments (summed per node, then in node order); a non-number hides them.
//! - TTL: a SET (other than KEEPTTL), DEL, EXPIRE or PERSIST replaces the TTL writes
//!   it had observed, and so does any write to a key that did not exist where it was
//!   made (a new key starts without a TTL); of those left, PERSIST beats all, else the
//!   longest TTL wins.
//! - A key exists while a SET or an increment survives.
//!
//! What a node had observed comes from the engine (the key's causal context before the
//! write, and whether the key was there); what survives and what the value is are
//! decided here alone. Whether the key was there is also derived here from the writes
//! the context covers, and the two must agree ([`Oracle::record`]), except where a
//! context covers writes its node never held: the writes a crash lost locally and a
//! later write superseded (`Op::supersedes`). A context is a version vector, so it
//! cannot say whether such a write's effects (the values *it* had removed) reached the
//! node through a merge; only the engine knows.

use std::collections::BTreeMap;

use bytes::Bytes;
use meridian::crdt::{Dot, VersionVector};
use meridian::engine::kv::value::{format_float, parse_f64, parse_i64};

#[derive(Clone, Debug, PartialEq)]
pub enum Ttl {
    Clear,
    Keep,
    At(u64),
}

#[derive(Clone, Debug, PartialEq)]
pub enum OpKind {
    Set { value: Bytes, ttl: Ttl },
    Incr(i64),
    Del,
    Expire(u64),
    Persist,
}

#[derive(Clone, Debug)]
pub struct Op {
    pub dot: Dot,
    pub kind: OpKind,
    /// The writer's causal context for the key just before this write.
    pub observed: VersionVector,
    /// Writes `observed` covers that the writer did not hold: its own increments that
    /// a crash lost locally after they had reached another node (a context is a
    /// version vector, so it claims every earlier write of a node). They survive it.
    pub unobserved: Vec<Dot>,
    /// The writer's own value and TTL writes that a crash lost locally after they had
    /// reached another node, and that this write (its first to the key since) covers
    /// with its stamp: replicas take them as seen and removed by it, whatever its kind.
    pub supersedes: Vec<Dot>,
    /// Whether the key existed on the writer's node just before this write (read from
    /// the engine, as `observed` is). It decides whether an INCR or a SET ... KEEPTTL
    /// keeps the TTL: a write to a key that did not exist starts it without one.
    pub existed: bool,
    /// When it was accepted, in simulated ms (failure reports only: no rule reads it).
    pub sim_ms: u64,
}

impl Op {
    /// Whether this write's node held `x` when it was made.
    fn had(&self, x: &Op) -> bool {
        self.observed.covers(x.dot) && !self.unobserved.contains(&x.dot) && !self.supersedes.contains(&x.dot)
    }

    /// Whether this write removes the value write `x` (or absorbs the increment `x`).
    fn removes(&self, x: &Op) -> bool {
        (self.removes_value() && self.had(x)) || self.supersedes.contains(&x.dot)
    }

    fn removes_value(&self) -> bool {
        matches!(self.kind, OpKind::Set { .. } | OpKind::Del)
    }

    fn writes_ttl(&self) -> Option<Option<u64>> {
        match self.kind {
            OpKind::Set { ttl: Ttl::At(at), .. } | OpKind::Expire(at) => Some(Some(at)),
            OpKind::Persist => Some(None),
            _ => None,
        }
    }

    /// Whether this write replaces the TTL writes it observed.
    fn replaces_ttl(&self) -> bool {
        !self.existed || !self.keeps_ttl()
    }

    /// Whether this write keeps the key's TTL when the key exists.
    fn keeps_ttl(&self) -> bool {
        matches!(self.kind, OpKind::Incr(_) | OpKind::Set { ttl: Ttl::Keep, .. })
    }
}

/// Whether the key exists once exactly `ops` are known (a SET or an increment survives).
fn exists(ops: &[&Op]) -> bool {
    let removed = |x: &Op| ops.iter().any(|o| o.removes(x));
    // Newest first: the newest write usually survives, and `any` stops there.
    ops.iter().rev().any(|x| matches!(x.kind, OpKind::Set { .. } | OpKind::Incr(_)) && !removed(x))
}

/// Whether `op`'s context covers a write that an earlier write superseded: a write a
/// crash lost on its node, so that no context covering it says whether the values it
/// had removed were removed where `op` was made (see the module doc).
fn claims_superseded_writes(earlier: &[Op], op: &Op) -> bool {
    earlier.iter().flat_map(|o| &o.supersedes).any(|&dot| op.observed.covers(dot))
}

/// What a key must read as once every write has reached every node.
#[derive(Clone, Debug, PartialEq)]
pub struct Expected {
    pub value: Vec<u8>,
    pub expire_at_ms: Option<u64>,
}

#[derive(Clone, Debug, Default)]
pub struct Oracle {
    pub ops: BTreeMap<Bytes, Vec<Op>>,
    /// Per node, by key: its writes that a crash lost locally but another node held
    /// (so they survive it). A later write of that node has not seen them unless it
    /// merged them back first.
    pub orphans: BTreeMap<u16, BTreeMap<Bytes, Vec<Dot>>>,
    /// The hash and set keys (`workload::is_collection_key`): their own rules.
    pub collections: crate::oracle_collections::CollectionOracle,
    /// The list keys' inserts, for their order (`oracle_lists.rs`).
    pub lists: crate::oracle_lists::ListOracle,
}

impl Oracle {
    /// Record an accepted write; an error if its node stamped it at or below one of its
    /// earlier writes to the key, not even across a restart (DESIGN §4): replicas would
    /// take the new write for one they had already seen.
    pub fn record(&mut self, key: Bytes, op: Op) -> Result<(), String> {
        let ops = self.ops.entry(key.clone()).or_default();
        if let Some(earlier) = ops.iter().find(|o| o.dot.node == op.dot.node && o.dot.hlc >= op.dot.hlc) {
            return Err(format!("node {} stamped a write to {key:?} at {:?}, not after its earlier {:?}", op.dot.node, op.dot, earlier));
        }
        if op.keeps_ttl() && !claims_superseded_writes(ops, &op) {
            let had: Vec<&Op> = ops.iter().filter(|x| op.had(x)).collect();
            let derived = exists(&had);
            if derived != op.existed {
                return Err(format!(
                    "node {} wrote {key:?} at {:?} where the engine says the key {} and the writes its context covers say it {}",
                    op.dot.node,
                    op.dot,
                    if op.existed { "existed" } else { "did not exist" },
                    if derived { "did" } else { "did not" },
                ) + &format!(
                    "\n  its context: {:?}\n  the writes it covers:\n    {}",
                    op.observed,
                    had.iter().map(|x| format!("{} ms {:?} {:?}", x.sim_ms, x.dot, x.kind)).collect::<Vec<_>>().join("\n    ")
                ));
            }
        }
        ops.push(op);
        Ok(())
    }

    /// A crash lost writes that had reached no store and no other node: drop every write
    /// `held` says no replica holds any more. Returns how many went.
    pub fn forget_lost(&mut self, held: impl Fn(&Bytes, Dot) -> bool) -> usize {
        let mut lost = 0;
        for (key, ops) in self.ops.iter_mut() {
            let before = ops.len();
            ops.retain(|op| held(key, op.dot));
            lost += before - ops.len();
        }
        // A lost stamp may be used again: nobody holds it.
        self.ops.retain(|_, ops| !ops.is_empty());
        lost
    }

    /// Every recorded write must be on the converged replicas: their causal context
    /// for its key covers it.
    pub fn check_none_lost(&self, converged: impl Fn(&Bytes) -> VersionVector) -> Result<(), String> {
        for (key, ops) in &self.ops {
            let ctx = converged(key);
            if let Some(op) = ops.iter().find(|op| !ctx.covers(op.dot)) {
                return Err(format!("acknowledged write {op:?} to {key:?} is on no replica"));
            }
        }
        Ok(())
    }

    /// The writes to `key` that survive (for failure reports).
    pub fn survivors(&self, key: &Bytes) -> Vec<Op> {
        let Some(ops) = self.ops.get(key) else { return Vec::new() };
        ops.iter().filter(|x| !ops.iter().any(|o| o.removes(x))).cloned().collect()
    }

    /// Every key's converged value, for keys that exist.
    pub fn expected(&self) -> BTreeMap<Bytes, Expected> {
        self.ops.iter().filter_map(|(key, ops)| expected(ops).map(|e| (key.clone(), e))).collect()
    }
}

fn expected(ops: &[Op]) -> Option<Expected> {
    let removed = |x: &Op| ops.iter().any(|o| o.removes(x));
    let winner = ops.iter().filter(|x| matches!(x.kind, OpKind::Set { .. }) && !removed(x)).max_by_key(|x| x.dot);
    let mut per_node: BTreeMap<u16, i128> = BTreeMap::new();
    for x in ops.iter().filter(|x| !removed(x)) {
        if let OpKind::Incr(by) = x.kind {
            *per_node.entry(x.dot.node).or_default() += by as i128;
        }
    }
    if winner.is_none() && per_node.is_empty() {
        return None;
    }
    let base = winner.map(|w| match &w.kind {
        OpKind::Set { value, .. } => value.clone(),
        _ => unreachable!("the winner is a SET"),
    });
    let value = match (base, per_node.is_empty()) {
        (Some(base), true) => base.to_vec(),
        (None, true) => unreachable!("no SET and no increment returned above"),
        (base, false) => {
            let base_int = match &base {
                None => Some(0),
                Some(b) => parse_i64(b),
            };
            match base_int {
                Some(n) => (n as i128 + per_node.values().sum::<i128>()).to_string().into_bytes(),
                None => {
                    let base = base.expect("a non-integer base exists");
                    match parse_f64(&base) {
                        None => base.to_vec(),
                        Some(f) => {
                            // Each node's slot is an i64 sum, added as a float in node order.
                            let total = per_node.values().fold(f, |acc, s| acc + (*s as i64) as f64);
                            if total.is_finite() { format_float(total).into_bytes() } else { base.to_vec() }
                        }
                    }
                }
            }
        }
    };
    let ttl_writes: Vec<Option<u64>> = ops
        .iter()
        .filter(|x| !ops.iter().any(|o| (o.replaces_ttl() && o.had(x)) || o.supersedes.contains(&x.dot)))
        .filter_map(|x| x.writes_ttl())
        .collect();
    let expire_at_ms = if ttl_writes.iter().any(Option::is_none) { None } else { ttl_writes.into_iter().flatten().max() };
    Some(Expected { value, expire_at_ms })
}

#[cfg(test)]
mod tests {
    use super::*;
    use meridian::crdt::Hlc;

    fn dot(ms: u64, node: u16) -> Dot {
        Dot::new(Hlc::from_parts(ms, 0), node)
    }

    fn seen(dots: &[Dot]) -> VersionVector {
        let mut vv = VersionVector::new();
        dots.iter().for_each(|d| vv.add(*d));
        vv
    }

    fn set(d: Dot, value: &str, observed: &[Dot]) -> Op {
        Op {
            dot: d,
            kind: OpKind::Set { value: Bytes::copy_from_slice(value.as_bytes()), ttl: Ttl::Clear },
            observed: seen(observed),
            unobserved: vec![],
            supersedes: vec![],
            existed: true,
            sim_ms: 0,
        }
    }

    #[test]
    fn set_then_concurrent_set_and_incr() {
        let base = set(dot(1, 1), "10", &[]);
        let incr = Op {
            dot: dot(2, 1),
            kind: OpKind::Incr(5),
            observed: seen(&[dot(1, 1)]),
            unobserved: vec![],
            supersedes: vec![],
            existed: true,
            sim_ms: 0,
        };
        let other = set(dot(3, 2), "100", &[dot(1, 1)]);
        let result = expected(&[base, incr, other]).unwrap();
        assert_eq!(result.value, b"105");
    }

    #[test]
    fn del_keeps_only_what_it_had_not_seen() {
        let base = set(dot(1, 1), "10", &[]);
        let del = Op {
            dot: dot(2, 1),
            kind: OpKind::Del,
            observed: seen(&[dot(1, 1)]),
            unobserved: vec![],
            supersedes: vec![],
            existed: true,
            sim_ms: 0,
        };
        let incr = Op {
            dot: dot(2, 2),
            kind: OpKind::Incr(3),
            observed: seen(&[dot(1, 1)]),
            unobserved: vec![],
            supersedes: vec![],
            existed: true,
            sim_ms: 0,
        };
        assert_eq!(expected(&[base.clone(), del.clone(), incr]).unwrap().value, b"3");
        assert_eq!(expected(&[base, del]), None);
    }

    fn op(d: Dot, kind: OpKind, observed: &[Dot]) -> Op {
        Op { dot: d, kind, observed: seen(observed), unobserved: vec![], supersedes: vec![], existed: true, sim_ms: 0 }
    }

    /// Seed 2004282 (issue 21), reduced: node 2 crashes after its SET `x` reached node 3
    /// but not its store; it restarts holding node 1's SET `a`, which `x` had removed.
    /// Its EXPIRE supersedes `x`; its INCR right after finds the key there (the EXPIRE
    /// needed it) and keeps the TTL. Node 3's SET, concurrent with both, removes only
    /// the TTL writes it saw, so the EXPIRE's TTL survives.
    #[test]
    fn an_incr_after_a_restart_keeps_the_ttl_its_node_had_although_its_context_claims_a_lost_write() {
        let a = set(dot(1, 1), "5", &[]);
        let x = set(dot(2, 2), "7", &[dot(1, 1)]);
        let mut expire = op(dot(10, 2), OpKind::Expire(99_000), &[dot(1, 1)]);
        expire.supersedes = vec![x.dot];
        let incr = op(dot(11, 2), OpKind::Incr(1), &[dot(1, 1), dot(10, 2)]);
        let other = set(dot(3, 3), "100", &[dot(1, 1), dot(2, 2)]);
        let mut oracle = Oracle::default();
        let key = Bytes::from_static(b"k");
        for o in [a, x, expire, incr, other] {
            oracle.record(key.clone(), o).expect("consistent writes");
        }
        let result = oracle.expected().remove(&key).expect("the key exists");
        assert_eq!(result.value, b"101");
        assert_eq!(result.expire_at_ms, Some(99_000));
    }

    #[test]
    fn an_engine_that_disagrees_about_existence_is_refused_where_the_context_tells() {
        let mut oracle = Oracle::default();
        let key = Bytes::from_static(b"k");
        oracle.record(key.clone(), set(dot(1, 1), "5", &[])).expect("a first write");
        let mut incr = op(dot(2, 2), OpKind::Incr(1), &[dot(1, 1)]);
        incr.existed = false;
        assert!(oracle.record(key, incr).is_err(), "the SET it had seen survives: the key existed");
    }
}
