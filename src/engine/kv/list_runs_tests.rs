//! Lists whose elements sit in chunks (`list_table.rs`), through the writes that cut a
//! push's run apart (a removal from its middle, an insert inside it, an LSET in it),
//! concurrent pushes from two writers, merges of a peer's run into a local one, and a
//! checkpoint's encode and decode: every replica reads the same list, in the same
//! order, with the same digest, and the chunk form never changes what a list means.

use bytes::Bytes;

use super::collection_writes::Part;
use super::lists::{push_positions, walk};
use super::position::{self, Placement};
use super::value::SetTtl;
use super::{KeyState, StrVal};
use crate::command::list::End;
use crate::crdt::{Dot, Hlc, NodeId};
use crate::delta::Delta;
use crate::delta::codec::{Reader, Writer, read_delta, write_key_delta};

/// One node's copy of one list key, and the deltas its writes shipped.
struct Replica {
    node: NodeId,
    clock: u64,
    state: KeyState,
    shipped: Vec<KeyState>,
}

impl Replica {
    fn new(node: NodeId) -> Replica {
        Replica { node, clock: 1 << 20, state: KeyState::default(), shipped: Vec::new() }
    }

    fn dot(&mut self) -> Dot {
        self.clock += 1;
        Dot::new(Hlc(self.clock), self.node)
    }

    /// Write these elements at one dot and ship them, as the engine does.
    fn write(&mut self, dot: Dot, names: &[Bytes], mut write: impl FnMut(usize, &mut KeyState)) {
        let mut delta = Vec::new();
        for (i, name) in names.iter().enumerate() {
            let element = self.state.part_mut(Part::List).write(name, |s| write(i, s));
            delta.push((name.clone(), element));
        }
        let _ = dot;
        self.shipped.push(KeyState::part_delta(Part::List, delta));
    }

    fn push(&mut self, end: End, values: &[String]) -> Vec<Bytes> {
        let dot = self.dot();
        let edge = self.state.list_elements().and_then(|l| l.list()).and_then(|t| t.edge(end == End::Right));
        let names: Vec<Bytes> = push_positions(edge.as_deref(), end, values.len(), dot).iter().map(|n| Bytes::copy_from_slice(n)).collect();
        self.write(dot, &names, |i, s| s.set(dot, StrVal::from_bytes(Bytes::from(values[i].clone())), SetTtl::Keep));
        names
    }

    fn names(&self) -> Vec<Bytes> {
        self.state.list_elements().map_or(Vec::new(), |l| walk(l, false).map(|(n, _)| Bytes::copy_from_slice(&n)).collect())
    }

    fn values(&self) -> Vec<String> {
        self.state.list_elements().map_or(Vec::new(), |l| {
            walk(l, false)
                .map(|(_, e)| String::from_utf8(e.read().map(|v| v.to_bytes()).unwrap_or_default().to_vec()).expect("utf-8"))
                .collect()
        })
    }

    fn remove(&mut self, name: &Bytes) {
        let dot = self.dot();
        self.write(dot, std::slice::from_ref(name), |_, s| s.delete(dot));
    }

    fn set(&mut self, name: &Bytes, value: &str) {
        let dot = self.dot();
        self.write(dot, std::slice::from_ref(name), |_, s| s.set(dot, StrVal::from_bytes(Bytes::from(value.to_owned())), SetTtl::Keep));
    }

    /// An LINSERT between two neighbours (the engine's placement for the middle).
    fn insert_between(&mut self, low: &Bytes, high: &Bytes, value: &str) -> Bytes {
        let dot = self.dot();
        let name = Bytes::from(position::between(Some(low), Some(high), dot, Placement::Middle));
        self.write(dot, std::slice::from_ref(&name), |_, s| s.set(dot, StrVal::from_bytes(Bytes::from(value.to_owned())), SetTtl::Keep));
        name
    }

    /// Merge every delta `from` shipped since `since` (returns the new mark).
    fn receive(&mut self, from: &Replica, since: usize) -> usize {
        for delta in &from.shipped[since..] {
            self.state.merge(delta);
        }
        from.shipped.len()
    }
}

fn values(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i:06}")).collect()
}

/// A checkpoint: the key encoded and decoded as storage and anti-entropy carry it.
fn round_trip(state: &KeyState) -> KeyState {
    let mut w = Writer::default();
    write_key_delta(&mut w, b"k", state);
    let mut r = Reader::new(&w.buf);
    let back = read_delta(&mut r).expect("decodes");
    assert_eq!(r.remaining(), 0);
    match back {
        Delta::Key { state, .. } => state,
        other => panic!("a key delta, not {other:?}"),
    }
}

fn assert_same(a: &Replica, b: &Replica) {
    assert_eq!(a.values(), b.values());
    assert_eq!(a.names(), b.names());
    assert_eq!(a.state, b.state);
    assert_eq!(super::merkle::digest(b"k", &a.state), super::merkle::digest(b"k", &b.state));
}

#[test]
fn a_run_cut_by_a_middle_removal_an_insert_and_an_lset_reads_the_same_on_a_peer_and_after_a_checkpoint() {
    let mut a = Replica::new(1);
    let mut b = Replica::new(2);
    let mut model = values("a", 300);
    let names = a.push(End::Right, &model);
    // The run spans three chunks; the peer gets it as one delta.
    let mut seen = b.receive(&a, 0);
    assert_same(&a, &b);
    // LREM of an element in the middle of the run.
    a.remove(&names[150]);
    model.remove(150);
    // LINSERT between two elements of the run (one level deeper than the run).
    a.insert_between(&names[10], &names[11], "inserted");
    model.insert(11, "inserted".to_owned());
    // LSET of an element of the run: its dot is no longer the run's.
    a.set(&names[200], "replaced");
    let at = model.iter().position(|v| v == "a000200").expect("present");
    model[at] = "replaced".to_owned();
    // A removal at each end of a chunk (pops from the run's edges).
    a.remove(&names[0]);
    model.remove(0);
    a.remove(&names[127]);
    model.retain(|v| v != "a000127");
    assert_eq!(a.values(), model);
    seen = b.receive(&a, seen);
    assert_same(&a, &b);
    let checkpoint = Replica { state: round_trip(&a.state), ..Replica::new(1) };
    assert_same(&a, &checkpoint);
    // The peer keeps writing into the recovered copy's runs: pushes at both ends.
    b.push(End::Left, &values("b", 3));
    b.push(End::Right, &values("c", 2));
    a.receive(&b, 0);
    let _ = seen;
    assert_same(&a, &b);
    // LPUSH b0 b1 b2 reads b2 b1 b0, as in Redis.
    let pushed_left: Vec<String> = values("b", 3).into_iter().rev().collect();
    assert_eq!(a.values()[..3], pushed_left[..]);
    assert_eq!(a.values()[a.values().len() - 2..], values("c", 2)[..]);
}

#[test]
fn concurrent_pushes_from_two_writers_keep_each_push_together_in_one_order_everywhere() {
    let mut a = Replica::new(1);
    let mut b = Replica::new(2);
    a.push(End::Right, &values("base", 5));
    b.receive(&a, 0);
    let (a_mark, b_mark) = (a.shipped.len(), b.shipped.len());
    // Concurrent: neither has seen the other's push.
    a.push(End::Right, &values("a", 200));
    b.push(End::Right, &values("b", 200));
    a.push(End::Left, &values("x", 130));
    b.push(End::Left, &values("y", 130));
    a.receive(&b, b_mark);
    b.receive(&a, a_mark);
    assert_same(&a, &b);
    let read = a.values();
    assert_eq!(read.len(), 5 + 400 + 260);
    for (prefix, n, left) in [("a", 200, false), ("b", 200, false), ("x", 130, true), ("y", 130, true)] {
        let first = read.iter().position(|v| v.starts_with(prefix) && !v.starts_with("base")).expect("present");
        let mut pushed = values(prefix, n);
        if left {
            pushed.reverse();
        }
        assert_eq!(read[first..first + n], pushed[..], "{prefix}'s push stays together");
    }
    // A third replica that merges full states (anti-entropy) in either order agrees.
    let mut c = Replica::new(3);
    c.state.merge(&b.state);
    c.state.merge(&a.state);
    assert_same(&a, &c);
}

#[test]
fn a_peer_run_merged_into_a_local_one_interleaves_by_position_and_tombstones_stay_out_of_chunks() {
    let mut a = Replica::new(1);
    let mut b = Replica::new(2);
    let names = a.push(End::Right, &values("a", 400));
    b.receive(&a, 0);
    let mark = b.shipped.len();
    // The peer inserts into the middle of the local run and removes from it.
    let inside = b.insert_between(&names[199], &names[200], "peer");
    b.remove(&names[300]);
    // Concurrently, the local node sets the element the peer removes: both survive
    // as the CRDT says (the LSET's value is a write the removal had not seen).
    a.set(&names[300], "kept");
    a.receive(&b, mark);
    b.receive(&a, 1);
    assert_same(&a, &b);
    let read = a.values();
    assert_eq!(read[200], "peer");
    assert!(read.contains(&"kept".to_owned()));
    assert!(a.names().contains(&inside));
    // Full-state merges both ways are idempotent.
    let before = a.state.clone();
    a.state.merge(&b.state);
    assert_eq!(a.state, before);
}
