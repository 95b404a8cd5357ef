//! The reference semantics of replicated hashes and sets (DESIGN §5, docs/semantics.md
//! tables "Hashes" and "Sets"), written independently of the CRDT code: every accepted
//! element write with what its node had observed, and rules that say which elements
//! survive.
//!
//! - An element write (SADD of a member, HSET or HINCRBY of a field) survives unless a
//!   later write removed it: an element remove (SREM, SPOP, HDEL, SMOVE's source) or an
//!   HSET of the same element whose node held it (the element's own context there
//!   covered it), or a whole-key remove (DEL, a STORE) whose key context covered it.
//!   Increments are the exception to the last: a DEL absorbs only the increments its
//!   node *held* in the field, not the ones its key context merely claims.
//! - An element exists while one of its writes survives (add wins over a concurrent
//!   remove); a field's value is its surviving HSET with the largest `(hlc, node)`.
//! - Sorted sets (DESIGN §5, rows Sorted set): a ZADD is a value write of the member
//!   (it removes the writes it held, increments included), a ZINCRBY an increment; a
//!   member's score is its surviving ZADD with the largest `(hlc, node)` (none: 0) plus
//!   every surviving increment, so two regions' ZINCRBYs both count and an increment
//!   a ZADD, ZREM or DEL had not seen survives it.
//! - Lists: elements are named by their positions (read from the engine: they are the
//!   elements' identities); a push, LINSERT or LSET is a value write of an element, a
//!   pop, LREM or LTRIM removes what its node held, so an element popped concurrently
//!   in two regions is gone once (each pop saw it) and one LSET concurrently with a pop
//!   survives it. Order is `oracle_lists.rs`'s.
//!
//! What a node had observed is read from the engine before the write (the key's
//! context, each named element's context); what survives is decided here alone.
//!
//! Crashes: a write its own node no longer holds after a restart (lost, or held only
//! by other nodes: an orphan, docs/testing.md) is *doubtful*, and its key *tainted*.
//! A tainted key is checked for safety only: every element that must survive (a
//! surviving write that is not doubtful, that no remove could have observed) is there,
//! no element that was never written is, and none that a sure remove removed in every
//! write is. An untainted key must hold exactly the surviving elements, and each field
//! whose surviving writes are HSETs alone exactly the winning value. TTLs of collection
//! keys and field values with surviving increments are not checked here (the single-node
//! model checks both reply by reply).

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use meridian::crdt::{Dot, VersionVector};

/// What a write did to one element.
#[derive(Clone, Debug, PartialEq)]
pub enum Write {
    /// SADD (also SMOVE's destination and a STORE's result).
    Member,
    /// HSET (HSETNX that wrote).
    Value(Bytes),
    /// HINCRBY, HINCRBYFLOAT.
    Incr,
    /// ZADD of a score: a register write (last writer wins).
    Score(f64),
    /// ZINCRBY (or ZADD ... INCR): an increment of the member's score (increments add).
    AddScore(f64),
}

#[derive(Clone, Debug)]
pub struct CollOp {
    pub dot: Dot,
    /// Elements written at `dot`.
    pub writes: Vec<(Bytes, Write)>,
    /// Elements removed (each by its context in `element_ctx`).
    pub removes: Vec<Bytes>,
    /// A whole-key remove (DEL; the first half of a STORE): of every live element, by
    /// its context in `element_ctx`.
    pub remove_all: bool,
    /// The key's causal context on the writer just before the write.
    pub key_ctx: VersionVector,
    /// Each live element's context on the writer just before the write (those named,
    /// or every one for a whole-key remove).
    pub element_ctx: BTreeMap<Bytes, VersionVector>,
    /// Its node no longer held it after a restart (see the module doc).
    pub doubtful: bool,
    pub sim_ms: u64,
}

impl CollOp {
    fn element_covers(&self, element: &Bytes, dot: Dot) -> bool {
        self.element_ctx.get(element).is_some_and(|c| c.covers(dot))
    }

    /// Whether this op removes `write` of `element`, made by `by`.
    fn removes(&self, element: &Bytes, write: &Write, by: &CollOp) -> bool {
        if self.dot == by.dot {
            return false;
        }
        if self.removes.contains(element) && self.element_covers(element, by.dot) {
            return true;
        }
        if self.writes.iter().any(|(e, w)| e == element && matches!(w, Write::Value(_) | Write::Score(_)))
            && self.element_covers(element, by.dot)
        {
            return true;
        }
        // A whole-key remove removes what it held: each live element by its own context
        // (not by the key's context, which may name writes relayed in another
        // element's history that this node never received; see
        // `Elements::remove_held`). Increments too: it absorbs those it held.
        if self.remove_all {
            let _ = write;
            return self.element_covers(element, by.dot);
        }
        false
    }
}

/// An element's name for a report: as text, or (a list position) as hex.
pub fn show_element(name: &[u8]) -> String {
    if name.iter().all(|c| c.is_ascii_graphic() || *c == b' ') {
        String::from_utf8_lossy(name).into_owned()
    } else {
        name.iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// What a collection key must hold once every write has reached every node.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Bounds {
    /// Elements that must be there, with the value each must have where it is known.
    pub must: BTreeMap<Bytes, Option<Bytes>>,
    /// Elements that may be there (every element ever written).
    pub may: BTreeSet<Bytes>,
    /// Whether `must` is exact: no other element may be there.
    pub exact: bool,
}

impl Bounds {
    /// Check a converged key's elements (name and, for a hash, value) against these
    /// bounds; an error names what is wrong.
    pub fn check(&self, actual: &BTreeMap<Bytes, Option<Bytes>>) -> Result<(), String> {
        let show = |b: &Bytes| show_element(b);
        for (element, value) in &self.must {
            match actual.get(element) {
                None => return Err(format!("{} must survive and is missing", show(element))),
                Some(v) if value.is_some() && v != value => {
                    return Err(format!(
                        "{} holds {:?}, the oracle says {:?}",
                        show(element),
                        v.as_ref().map(show),
                        value.as_ref().map(show)
                    ));
                }
                Some(_) => {}
            }
        }
        for element in actual.keys() {
            if !self.may.contains(element) {
                return Err(format!("{} was never written and is there", show(element)));
            }
            if self.exact && !self.must.contains_key(element) {
                return Err(format!("{} was removed by every write's remover and is there", show(element)));
            }
        }
        Ok(())
    }
}

#[derive(Clone, Debug, Default)]
pub struct CollectionOracle {
    pub ops: BTreeMap<Bytes, Vec<CollOp>>,
    /// Keys with a doubtful write (checked for safety only).
    pub tainted: BTreeSet<Bytes>,
    /// A node restarted during the run: a write it accepted but never stored nor sent
    /// may have its stamp reused by the new process, so stamps are no longer checked
    /// to grow per node (the values still are, against the same rules).
    pub restarted: bool,
}

impl CollectionOracle {
    pub fn record(&mut self, key: Bytes, op: CollOp) -> Result<(), String> {
        let restarted = self.restarted;
        let ops = self.ops.entry(key.clone()).or_default();
        if !restarted && let Some(earlier) = ops.iter().find(|o| o.dot.node == op.dot.node && o.dot.hlc >= op.dot.hlc) {
            return Err(format!(
                "node {} stamped a write to {key:?} at {:?}, not after its earlier {:?}",
                op.dot.node, op.dot, earlier.dot
            ));
        }
        ops.push(op);
        Ok(())
    }

    /// After `node` restarted: its writes that `held` says it no longer holds become
    /// doubtful and their keys tainted. Returns how many.
    pub fn mark_doubtful(&mut self, node: u16, held: impl Fn(&Bytes, Dot) -> bool) -> usize {
        self.restarted = true;
        let mut marked = 0;
        for (key, ops) in self.ops.iter_mut() {
            for op in ops.iter_mut().filter(|o| o.dot.node == node && !o.doubtful) {
                if !held(key, op.dot) {
                    op.doubtful = true;
                    marked += 1;
                    self.tainted.insert(key.clone());
                }
            }
        }
        marked
    }

    /// The bounds of every key written.
    pub fn bounds(&self) -> BTreeMap<Bytes, Bounds> {
        self.ops.iter().map(|(key, ops)| (key.clone(), bounds(ops, !self.tainted.contains(key)))).collect()
    }
}

fn bounds(ops: &[CollOp], exact: bool) -> Bounds {
    let mut out = Bounds { exact, ..Bounds::default() };
    // Per element: its writes, each with whether it survives.
    let mut writes: BTreeMap<&Bytes, Vec<(&CollOp, &Write, bool)>> = BTreeMap::new();
    for op in ops {
        for (element, write) in &op.writes {
            let survives = !ops.iter().any(|r| r.removes(element, write, op));
            writes.entry(element).or_default().push((op, write, survives));
        }
    }
    for (element, ws) in writes {
        out.may.insert(element.clone());
        let sure_survivor = ws.iter().any(|(op, _, survives)| *survives && !op.doubtful);
        if !sure_survivor {
            continue;
        }
        let incremented = ws.iter().any(|(_, w, survives)| *survives && **w == Write::Incr);
        let winner = ws
            .iter()
            .filter(|(_, _, survives)| *survives)
            .filter_map(|(op, w, _)| match w {
                Write::Value(v) => Some((op.dot, v.clone())),
                _ => None,
            })
            .max_by_key(|(dot, _)| *dot);
        let is_member = ws.iter().all(|(_, w, _)| **w == Write::Member);
        let is_scored = ws.iter().all(|(_, w, _)| matches!(w, Write::Score(_) | Write::AddScore(_)));
        // A value is known when no increment survives on top of it and nothing made
        // the key doubtful; a score always (the surviving ZADD's, or 0, plus every
        // surviving increment).
        let value = match (is_member, incremented, winner) {
            _ if is_scored => exact.then(|| Bytes::from(score_text(&ws))),
            (false, false, Some((_, v))) if exact => Some(v),
            _ => None,
        };
        out.must.insert(element.clone(), value);
    }
    out
}

/// A sorted set member's converged score (DESIGN §5, rows Sorted set): the surviving
/// ZADD with the largest `(hlc, node)` (none: 0) plus every surviving increment, as
/// text ([`score_text_of`]).
fn score_text(ws: &[(&CollOp, &Write, bool)]) -> String {
    let base = ws
        .iter()
        .filter(|(_, _, survives)| *survives)
        .filter_map(|(op, w, _)| match w {
            Write::Score(s) => Some((op.dot, *s)),
            _ => None,
        })
        .max_by_key(|(dot, _)| *dot)
        .map_or(0.0, |(_, s)| s);
    let increments: f64 = ws
        .iter()
        .filter(|(_, _, survives)| *survives)
        .filter_map(|(_, w, _)| match w {
            Write::AddScore(by) => Some(*by),
            _ => None,
        })
        .sum();
    score_text_of(base + increments)
}

/// A score as the oracle and the simulator compare it (`-0` is `0`).
pub fn score_text_of(score: f64) -> String {
    format!("{}", if score == 0.0 { 0.0 } else { score })
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

    fn op(d: Dot) -> CollOp {
        CollOp {
            dot: d,
            writes: vec![],
            removes: vec![],
            remove_all: false,
            key_ctx: VersionVector::new(),
            element_ctx: BTreeMap::new(),
            doubtful: false,
            sim_ms: 0,
        }
    }

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    #[test]
    fn a_concurrent_sadd_survives_the_srem_that_saw_only_the_older_add() {
        let mut add = op(dot(1, 1));
        add.writes = vec![(b("m"), Write::Member)];
        let mut again = op(dot(3, 2));
        again.writes = vec![(b("m"), Write::Member)];
        let mut rem = op(dot(4, 3));
        rem.removes = vec![b("m")];
        rem.element_ctx.insert(b("m"), seen(&[dot(1, 1)]));
        let result = bounds(&[add.clone(), again, rem.clone()], true);
        assert!(result.must.contains_key(&b("m")));
        let result = bounds(&[add, rem], true);
        assert!(result.must.is_empty() && result.may.contains(&b("m")));
        assert!(result.check(&BTreeMap::from([(b("m"), None)])).is_err(), "removed in every write");
    }

    #[test]
    fn concurrent_zincrbys_add_and_a_zadd_absorbs_only_the_increments_it_held() {
        let mut add = op(dot(1, 1));
        add.writes = vec![(b("m"), Write::Score(10.0))];
        let mut incr_a = op(dot(2, 2));
        incr_a.writes = vec![(b("m"), Write::AddScore(1.5))];
        incr_a.element_ctx.insert(b("m"), seen(&[dot(1, 1)]));
        let mut incr_b = op(dot(2, 3));
        incr_b.writes = vec![(b("m"), Write::AddScore(-4.0))];
        incr_b.element_ctx.insert(b("m"), seen(&[dot(1, 1)]));
        let both = bounds(&[add.clone(), incr_a.clone(), incr_b.clone()], true);
        assert_eq!(both.must.get(&b("m")), Some(&Some(b("7.5"))), "10 + 1.5 - 4");
        // A ZADD that had seen node 2's increment absorbs it, not node 3's.
        let mut again = op(dot(3, 1));
        again.writes = vec![(b("m"), Write::Score(2.0))];
        again.element_ctx.insert(b("m"), seen(&[dot(1, 1), dot(2, 2)]));
        let result = bounds(&[add, incr_a, incr_b.clone(), again], true);
        assert_eq!(result.must.get(&b("m")), Some(&Some(b("-2"))), "2 - 4");
        // A ZREM that saw nothing of node 3's increment leaves it: the member stays.
        let mut rem = op(dot(4, 1));
        rem.removes = vec![b("m")];
        rem.element_ctx.insert(b("m"), seen(&[dot(1, 1), dot(2, 2), dot(3, 1)]));
        let mut ops = vec![incr_b, rem];
        ops.insert(0, op(dot(1, 1)));
        assert_eq!(bounds(&ops, true).must.get(&b("m")), Some(&Some(b("-4"))));
    }

    #[test]
    fn a_del_removes_what_it_held_and_nothing_its_key_context_only_names() {
        let mut put = op(dot(1, 1));
        put.writes = vec![(b("f"), Write::Value(b("x"))), (b("g"), Write::Value(b("y")))];
        let mut incr = op(dot(2, 2));
        incr.writes = vec![(b("n"), Write::Incr)];
        let mut del = op(dot(5, 3));
        del.remove_all = true;
        // The DEL's node held `f` only; it learnt of dots (1, 1) and (2, 2) through
        // other elements' histories, and never held `g` or `n`.
        del.key_ctx = seen(&[dot(1, 1), dot(2, 2)]);
        del.element_ctx.insert(b("f"), seen(&[dot(1, 1)]));
        let result = bounds(&[put, incr, del], true);
        assert!(!result.must.contains_key(&b("f")));
        assert!(result.must.contains_key(&b("g")), "the DEL never held g");
        assert!(result.must.contains_key(&b("n")), "the DEL never held the increment");
    }
}
