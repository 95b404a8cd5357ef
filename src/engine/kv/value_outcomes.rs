//! The concurrent outcomes users are promised (DESIGN §5), one example each: two or
//! three replicas write the same key concurrently and the merged state must read as the
//! semantics say (larger stamp wins, unobserved increments survive a SET or a DEL,
//! longest EXPIRE and PERSIST, add-wins members, type clashes, whole-key tombstones).
//! The laws every history obeys are property tests in `value_laws`.

use bytes::Bytes;

use super::collection_writes::Part;
use super::value::{KeyKind, KeyState, MEMBER_MARK, SetTtl, StrVal, score_value};
use super::value_laws::{field, merged, score_order_matches_members};
use crate::crdt::{Dot, Hlc, NodeId, VersionVector};

fn dot(ms: u64, node: NodeId) -> Dot {
    Dot::new(crate::crdt::Hlc::from_parts(ms, 0), node)
}

#[test]
fn concurrent_sets_resolve_to_the_larger_stamp() {
    let mut a = KeyState::new();
    a.set(dot(10, 1), StrVal::Int(1), SetTtl::Clear);
    let mut b = KeyState::new();
    b.set(dot(10, 2), StrVal::Int(2), SetTtl::Clear);
    assert_eq!(merged(&a, &b).read(), Some(StrVal::Int(2)));
    assert_eq!(merged(&b, &a).read(), Some(StrVal::Int(2)));
}

#[test]
fn set_concurrent_with_incr_keeps_the_unobserved_increment() {
    let mut base = KeyState::new();
    base.set(dot(1, 1), StrVal::Int(10), SetTtl::Clear);
    base.incr_by(dot(2, 2), Hlc::ZERO, 5); // seen by both sides below
    let mut setter = base.clone();
    setter.set(dot(3, 1), StrVal::Int(100), SetTtl::Clear);
    let mut incrementer = base.clone();
    incrementer.incr_by(dot(4, 2), Hlc::ZERO, 7);
    // The SET had seen +5 (absorbed) but not +7 (survives).
    assert_eq!(merged(&setter, &incrementer).read(), Some(StrVal::Int(107)));
    assert_eq!(merged(&incrementer, &setter).read(), Some(StrVal::Int(107)));
}

#[test]
fn delete_concurrent_with_incr_keeps_the_unobserved_increment() {
    let mut base = KeyState::new();
    base.incr_by(dot(1, 1), Hlc::ZERO, 3);
    let mut deleter = base.clone();
    deleter.delete(dot(2, 1));
    let mut incrementer = base.clone();
    incrementer.incr_by(dot(3, 2), Hlc::ZERO, 4);
    assert_eq!(merged(&deleter, &incrementer).read(), Some(StrVal::Int(4)));
    assert!(!merged(&deleter, &base).exists());
}

#[test]
fn concurrent_increments_on_three_nodes_sum() {
    let mut states: Vec<KeyState> = (1..=3)
        .map(|n| {
            let mut s = KeyState::new();
            s.incr_by(dot(5, n), Hlc::ZERO, n as i64 * 10);
            s
        })
        .collect();
    let c = states.pop().unwrap();
    let b = states.pop().unwrap();
    let a = states.pop().unwrap();
    assert_eq!(merged(&merged(&a, &b), &c).read(), Some(StrVal::Int(60)));
}

#[test]
fn persist_beats_a_concurrent_expire_and_longest_expire_wins() {
    let mut base = KeyState::new();
    base.set(dot(1, 1), StrVal::Int(1), SetTtl::Clear);
    let mut short = base.clone();
    short.expire_at(dot(2, 1), 5_000);
    let mut long = base.clone();
    long.expire_at(dot(2, 2), 9_000);
    assert_eq!(merged(&short, &long).expire_at_ms(), Some(9_000));
    let mut persisted = base.clone();
    persisted.persist(dot(3, 3));
    assert_eq!(merged(&merged(&short, &long), &persisted).expire_at_ms(), None);
    // A later EXPIRE that has seen the PERSIST applies again.
    let mut later = merged(&merged(&short, &long), &persisted);
    later.expire_at(dot(10, 1), 7_000);
    assert_eq!(later.expire_at_ms(), Some(7_000));
}

#[test]
fn float_increments_sum_in_node_order_everywhere() {
    let mut a = KeyState::new();
    a.incr_by_float(dot(1, 1), Hlc::ZERO, 0.1);
    let mut b = KeyState::new();
    b.incr_by_float(dot(1, 2), Hlc::ZERO, 0.2);
    let ab = merged(&a, &b);
    assert_eq!(ab, merged(&b, &a));
    assert_eq!(ab.read(), Some(StrVal::raw(Bytes::from_static(b"0.3"))));
}

#[test]
fn float_counter_keeps_precision_after_a_set_absorbs_a_huge_sum() {
    let mut s = KeyState::new();
    s.incr_by_float(dot(1, 1), Hlc::ZERO, 1e30);
    s.set(dot(2, 1), StrVal::Int(0), SetTtl::Clear);
    s.incr_by_float(dot(3, 1), Hlc::ZERO, 1e-5);
    assert_eq!(s.read(), Some(StrVal::raw(Bytes::from_static(b"0.00001"))));
}

/// INCRBY on the whole number an INCRBYFLOAT left adds as integers (as Redis adds to
/// the text), not in double precision. Found by `tests/differential_fuzz.rs`.
#[test]
fn integer_increments_on_a_whole_float_read_exactly() {
    let mut f = KeyState::new();
    f.incr_by_float(dot(1, 1), Hlc::ZERO, 0.0);
    f.incr_by(dot(2, 1), Hlc::ZERO, i64::MAX);
    assert_eq!(f.read(), Some(StrVal::Int(i64::MAX)));
    // Two nodes that overflow together still show their exact sum as text.
    let (mut a, mut b) = (KeyState::new(), KeyState::new());
    a.incr_by(dot(1, 1), Hlc::ZERO, i64::MAX);
    b.incr_by(dot(1, 2), Hlc::ZERO, 1);
    assert_eq!(merged(&a, &b).read(), Some(StrVal::raw(Bytes::from_static(b"9223372036854775808"))));
}

fn with_members(members: &[(&'static [u8], Dot)]) -> KeyState {
    let mut s = KeyState::new();
    for (m, d) in members {
        s.set_mut().write(&Bytes::from_static(m), |e| e.set(*d, MEMBER_MARK, SetTtl::Keep));
    }
    s
}

fn members_of(s: &KeyState) -> Vec<Bytes> {
    let mut all: Vec<Bytes> = s.set_members().map(|m| m.iter().map(|(m, _)| Bytes::copy_from_slice(m)).collect()).unwrap_or_default();
    all.sort();
    all
}

#[test]
fn sadd_concurrent_with_srem_of_the_same_member_keeps_it() {
    let base = with_members(&[(b"a", dot(1, 1))]);
    let mut adder = base.clone();
    adder.set_mut().write(&Bytes::from_static(b"a"), |e| e.set(dot(2, 2), MEMBER_MARK, SetTtl::Keep));
    let mut remover = base.clone();
    remover.set_mut().write(&Bytes::from_static(b"a"), |e| e.delete(dot(3, 1)));
    assert!(members_of(&remover).is_empty());
    // The SREM is later by the clock but had not seen node 2's add: add wins.
    assert_eq!(members_of(&merged(&adder, &remover)), vec![Bytes::from_static(b"a")]);
    assert_eq!(merged(&adder, &remover), merged(&remover, &adder));
}

#[test]
fn srem_removes_only_the_members_it_observed() {
    let base = with_members(&[(b"a", dot(1, 1))]);
    let mut remover = base.clone();
    remover.set_mut().write(&Bytes::from_static(b"a"), |e| e.delete(dot(3, 1)));
    let mut adder = base.clone();
    adder.set_mut().write(&Bytes::from_static(b"b"), |e| e.set(dot(2, 2), MEMBER_MARK, SetTtl::Keep));
    assert_eq!(members_of(&merged(&remover, &adder)), vec![Bytes::from_static(b"b")]);
    assert_eq!(merged(&remover, &adder).kind(), Some(KeyKind::Set));
}

#[test]
fn a_type_clash_between_a_set_a_hash_and_a_string_shows_the_latest_type() {
    let set = with_members(&[(b"a", dot(5, 1))]);
    let mut string = KeyState::new();
    string.set(dot(4, 2), StrVal::Int(1), SetTtl::Clear);
    let mut hash = KeyState::new();
    hash.hash_mut().write(&Bytes::from_static(b"f"), |e| e.set(dot(3, 3), StrVal::Int(1), SetTtl::Keep));
    let all = merged(&merged(&set, &string), &hash);
    assert_eq!(all.kind(), Some(KeyKind::Set));
    assert!(all.has_type_clash());
    assert_eq!(all, merged(&merged(&hash, &set), &string));
    // A later SET over the key replaces every member it had seen.
    let mut overwritten = all.clone();
    overwritten.set(dot(9, 2), StrVal::Int(7), SetTtl::Clear);
    assert_eq!(overwritten.kind(), Some(KeyKind::String));
    assert!(!overwritten.has_type_clash());
}

#[test]
fn a_zrem_keeps_the_increment_it_had_not_seen_and_zadd_absorbs_the_ones_it_had() {
    let m = Bytes::from_static(b"m");
    let mut base = KeyState::new();
    base.part_mut(Part::Zset).write(&m, |e| e.set(dot(1, 1), score_value(10.0), SetTtl::Keep));
    base.part_mut(Part::Zset).write(&m, |e| e.incr_by_float(dot(2, 2), Hlc::ZERO, 1.0));
    let score = |s: &KeyState| s.zset_members().and_then(|z| z.get(&m)).map(|e| e.score());
    assert_eq!(score(&base), Some(11.0));
    let mut remover = base.clone();
    remover.part_mut(Part::Zset).write(&m, |e| e.delete(dot(3, 1)));
    let mut adder = base.clone();
    adder.part_mut(Part::Zset).write(&m, |e| e.set(dot(3, 3), score_value(100.0), SetTtl::Keep));
    let mut incrementer = base.clone();
    incrementer.part_mut(Part::Zset).write(&m, |e| e.incr_by_float(dot(4, 2), Hlc::ZERO, 5.0));
    // ZREM ∥ ZINCRBY: the +5 it had not seen survives, alone.
    assert_eq!(score(&merged(&remover, &incrementer)), Some(5.0));
    assert_eq!(score(&merged(&incrementer, &remover)), Some(5.0));
    // ZADD ∥ ZINCRBY: the ZADD absorbed +1 and keeps +5.
    assert_eq!(score(&merged(&adder, &incrementer)), Some(105.0));
    assert!(score_order_matches_members(&merged(&merged(&adder, &incrementer), &remover)));
}

#[test]
fn a_whole_key_removes_element_tombstone_waits_for_the_remove_to_be_stable() {
    // Node 1 writes field f and every node holds it. Node 2 deletes the key before
    // f's write is stable, so its key-level claim covers its own writes only and f
    // stays an exact tombstone; node 2 then writes g (the key lives again, holding
    // f's tombstone). Node 3 has not received the DEL yet.
    let (f, g) = (field(0), field(1));
    let mut n1 = KeyState::new();
    let hset = n1.hash_mut().write(&f, |s| s.set(dot(10, 1), StrVal::Int(1), SetTtl::Keep));
    let hset = KeyState::hash_delta([(f.clone(), hset)]);
    let (mut n2, mut n3) = (KeyState::new(), KeyState::new());
    n2.merge(&hset);
    n3.merge(&hset);
    let del = dot(20, 2);
    let mut own = VersionVector::new();
    own.add(del);
    n2.remove_elements(Some(&own), Some(del));
    n2.delete(del);
    n2.hash_mut().write(&g, |s| s.set(dot(30, 2), StrVal::Int(2), SetTtl::Keep));
    // Every node holds node 1's write: stable covers it, but not node 2's DEL.
    let mut stable = VersionVector::new();
    stable.add(dot(10, 1));
    let mut forgotten = VersionVector::new();
    if n2.forget_stable_elements(&stable, &[]) > 0 {
        forgotten.merge(&stable);
    }
    assert_eq!(n2.element_tombstones(), 1, "f's tombstone names the DEL, which is not stable");
    // Anti-entropy both ways: f stays removed on both (before the fix node 2 had
    // dropped the tombstone, then dropped node 3's f as forgotten; node 3 kept it).
    let n3_before = n3.clone();
    n3.merge(&n2);
    n2.merge_forgetting(&n3_before, &forgotten);
    assert!(n3.hash().is_some_and(|h| h.get(&f).is_none() && h.get(&g).is_some()));
    assert_eq!(n2, n3);
}
