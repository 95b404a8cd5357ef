//! A collection that leaves a peer out spares the tombstones holding that peer's
//! counters (`tombstone_gc`, module doc): two engines stand for two regions, and the
//! peer's later increment, in the same running sum as one the removal absorbed,
//! arrives after the collection.

use bytes::Bytes;

use super::ttl_tombstone_tests::{Region, stable_at};
use crate::command::hash::HashCommand;
use crate::command::{SetCondition, SetReply, TtlChange};
use crate::crdt::NodeId;
use crate::engine::kv::{KvEngine, WriteCtx, key_hash};

const NOW_MS: u64 = 1_000_000;

/// The peer (node 1) increments by -3, which region A (node 2) merges and removes with
/// `remove`; the peer, cut off, increments by 3 in the same slot; A then collects
/// under a vector that covers the removal, sparing `spared`, and merges the +3 late.
/// Returns what A reads at the end, and how many tombstones the collection dropped.
fn late_increment_after_collection(
    spared: &[NodeId],
    increment: impl Fn(&mut KvEngine, &mut WriteCtx, i64),
    remove: impl Fn(&mut KvEngine, &mut WriteCtx),
    read: impl Fn(&mut KvEngine) -> Option<i64>,
) -> (Option<i64>, usize) {
    let (mut peer, mut a) = (Region::new(1), Region::new(2));
    let seen = peer.write(NOW_MS, |kv, ctx| increment(kv, ctx, -3));
    a.merge(&seen);
    assert_eq!(read(&mut a.kv), Some(-3));
    a.write(NOW_MS + 1, |kv, ctx| remove(kv, ctx));
    let unseen = peer.write(NOW_MS + 2, |kv, ctx| increment(kv, ctx, 3));
    // Every node but the peer has seen the removal: the vector covers it.
    let (keys, elements) = a.kv.forget_stable(&stable_at(NOW_MS + 1), spared);
    a.merge(&unseen);
    (read(&mut a.kv), keys + elements)
}

fn key() -> Bytes {
    Bytes::from_static(b"k")
}

fn incrby(kv: &mut KvEngine, ctx: &mut WriteCtx, by: i64) {
    kv.incr_by(ctx, key(), by);
}

fn del(kv: &mut KvEngine, ctx: &mut WriteCtx) {
    kv.del(ctx, &[key()]);
}

fn read_counter(kv: &mut KvEngine) -> Option<i64> {
    let value = kv.live(b"k", key_hash(b"k"), NOW_MS)?.read()?;
    Some(String::from_utf8(value.to_bytes().to_vec()).unwrap().parse().unwrap())
}

#[test]
fn a_key_tombstone_with_a_given_up_peers_counter_is_spared_and_its_floor_kept() {
    // The DEL absorbed the -3; the +3 is concurrent with it and survives alone.
    assert_eq!(late_increment_after_collection(&[1], incrby, del, read_counter), (Some(3), 0));
    // Collected, the floor is gone and the late sum counts the -3 again: the bug.
    assert_eq!(late_increment_after_collection(&[], incrby, del, read_counter), (Some(0), 1));
    // A peer not given up is not spared for another's sake.
    assert_eq!(late_increment_after_collection(&[3], incrby, del, read_counter).1, 1);
}

#[test]
fn a_spared_tombstone_stays_when_a_copy_of_what_it_removed_arrives_again() {
    // Seed 1228 of `dst --no-periodic-anti-entropy`: the peer's link resent a batch the
    // removal had already covered, and the merge dropped the spared tombstone because
    // what this shard forgot covered it, so the late sum counted the -3 again.
    let (mut peer, mut a) = (Region::new(1), Region::new(2));
    let seen = peer.write(NOW_MS, |kv, ctx| incrby(kv, ctx, -3));
    a.merge(&seen);
    // Another key's tombstone goes in the same collection, so that what this shard
    // forgot covers the spared one too.
    let other = Bytes::from_static(b"other");
    a.write(NOW_MS, |kv, ctx| {
        kv.set(ctx, other.clone(), Bytes::from_static(b"v"), SetCondition::Always, TtlChange::Clear, SetReply::Ok, "set");
        kv.del(ctx, std::slice::from_ref(&other));
    });
    a.write(NOW_MS + 1, del);
    let unseen = peer.write(NOW_MS + 2, |kv, ctx| incrby(kv, ctx, 3));
    assert_eq!(a.kv.forget_stable(&stable_at(NOW_MS + 1), &[1]), (1, 0));
    a.merge(&seen);
    assert!(a.kv.keys.tombstone(b"k").is_some(), "a resent copy of the removed increment dropped the spared tombstone");
    a.merge(&unseen);
    assert_eq!(read_counter(&mut a.kv), Some(3));
}

fn field() -> Bytes {
    Bytes::from_static(b"f")
}

fn hincrby(kv: &mut KvEngine, ctx: &mut WriteCtx, by: i64) {
    // A second field keeps the hash alive, so that the HDEL leaves an element tombstone.
    let other = HashCommand::IncrBy { key: key(), field: Bytes::from_static(b"g"), by: 1 };
    drop(kv.hash_command(ctx, other, &mut || 0));
    drop(kv.hash_command(ctx, HashCommand::IncrBy { key: key(), field: field(), by }, &mut || 0));
}

fn hdel(kv: &mut KvEngine, ctx: &mut WriteCtx) {
    drop(kv.hash_command(ctx, HashCommand::Del { key: key(), fields: vec![field()] }, &mut || 0));
}

fn read_field(kv: &mut KvEngine) -> Option<i64> {
    let state = kv.live(b"k", key_hash(b"k"), NOW_MS)?;
    let value = state.hash()?.get(b"f")?.read()?;
    Some(String::from_utf8(value.to_bytes().to_vec()).unwrap().parse().unwrap())
}

#[test]
fn a_hash_field_tombstone_with_a_given_up_peers_counter_is_spared() {
    assert_eq!(late_increment_after_collection(&[1], hincrby, hdel, read_field), (Some(3), 0));
    assert_eq!(late_increment_after_collection(&[], hincrby, hdel, read_field), (Some(0), 1));
}

#[test]
fn a_replayed_collection_spares_what_the_collection_spared() {
    let (mut peer, mut a) = (Region::new(1), Region::new(2));
    a.merge(&peer.write(NOW_MS, |kv, ctx| incrby(kv, ctx, -3)));
    a.write(NOW_MS + 1, del);
    let tombstone = a.kv.keys.tombstone(b"k").expect("the DEL leaves a tombstone").clone();
    for (spared, kept) in [(vec![1], true), (vec![], false)] {
        let mut replayed = KvEngine { keep_tombstones: true, ..KvEngine::default() };
        replayed.merge_key(key(), tombstone.clone());
        replayed.merge_forget(&stable_at(NOW_MS + 1), &spared, false, replayed.scope);
        assert_eq!(replayed.keys.tombstone(b"k").is_some(), kept, "spared {spared:?}");
    }
}

fn zincrby(kv: &mut KvEngine, ctx: &mut WriteCtx, by: i64) {
    let cmd = crate::command::zset::ZsetCommand::IncrBy { key: key(), by: by as f64, member: field() };
    drop(kv.zset_command(ctx, cmd, &mut || 0));
}

fn zrem(kv: &mut KvEngine, ctx: &mut WriteCtx) {
    drop(kv.zset_command(ctx, crate::command::zset::ZsetCommand::Rem { key: key(), members: vec![field()] }, &mut || 0));
}

fn read_score(kv: &mut KvEngine) -> Option<i64> {
    let score = kv.live(b"k", key_hash(b"k"), NOW_MS)?.zset_members()?.get(b"f")?.score();
    Some(score as i64)
}

#[test]
fn a_key_tombstone_whose_removed_member_holds_a_given_up_peers_counter_is_spared() {
    // The ZREM empties the sorted set: the key is a tombstone whose member holds the
    // peer's score slot and the floor (seed 5242 of `dst --no-periodic-anti-entropy`).
    assert_eq!(late_increment_after_collection(&[1], zincrby, zrem, read_score), (Some(3), 0));
    assert_eq!(late_increment_after_collection(&[], zincrby, zrem, read_score), (Some(0), 1));
}
