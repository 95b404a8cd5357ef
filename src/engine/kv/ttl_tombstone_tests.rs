//! A collection's TTL and tombstone collection (`tombstone_gc::collectable`,
//! `KeyState::holds_pending_ttl`, `KeyState::drop_ttl_of_emptied`): three engines stand
//! for three regions, each delta handed over by hand, in the order the test picks.

use bytes::Bytes;

use crate::command::ExpireCondition;
use crate::command::hash::{HSetReply, HashCommand};
use crate::command::set::SetCommand;
use crate::crdt::{Hlc, HlcClock, VersionVector};
use crate::engine::kv::collection_writes::lone_removal_tests::Deltas;
use crate::engine::kv::{KeyState, KvEngine, WriteCtx, key_hash};

const NOW_MS: u64 = 1_000_000;
const EXPIRE_IN_MS: i64 = 600_000;

/// A region: its engine (keeping tombstones, as a node with peers does) and clock.
pub(super) struct Region {
    pub(super) kv: KvEngine,
    clock: HlcClock,
    node: u16,
}

impl Region {
    pub(super) fn new(node: u16) -> Region {
        Region { kv: KvEngine { keep_tombstones: true, ..KvEngine::default() }, clock: HlcClock::new(), node }
    }

    /// Run `write` at `now_ms`; returns the deltas it shipped.
    pub(super) fn write(&mut self, now_ms: u64, write: impl FnOnce(&mut KvEngine, &mut WriteCtx)) -> Vec<(Bytes, KeyState)> {
        let mut sink = Deltas::default();
        let mut ctx = WriteCtx { clock: &mut self.clock, node: self.node, now_ms, string_bytes_max: 1 << 20, deltas: &mut sink };
        write(&mut self.kv, &mut ctx);
        sink.0
    }

    pub(super) fn merge(&mut self, deltas: &[(Bytes, KeyState)]) {
        for (key, state) in deltas {
            self.kv.merge_key(key.clone(), state.clone());
        }
    }

    fn pexpiretime(&mut self, key: &Bytes) -> Option<u64> {
        self.kv.live(key, key_hash(key), NOW_MS).and_then(|s| s.expire_at_ms())
    }

    fn tombstone(&self, key: &Bytes) -> Option<&KeyState> {
        self.kv.keys.tombstone(key)
    }
}

fn hset(key: &Bytes, field: &str) -> HashCommand {
    HashCommand::Set {
        key: key.clone(),
        pairs: vec![(Bytes::copy_from_slice(field.as_bytes()), Bytes::from_static(b"1"))],
        reply: HSetReply::Added,
    }
}

fn expire(kv: &mut KvEngine, ctx: &mut WriteCtx, key: &Bytes) {
    kv.expire(ctx, key, EXPIRE_IN_MS, false, ExpireCondition::default(), "expire");
}

/// A stable vector covering every write so far, its latest instant at `time_ms`.
pub(super) fn stable_at(time_ms: u64) -> VersionVector {
    let mut stable = VersionVector::new();
    for node in 1..=3 {
        stable.add(crate::crdt::Dot::new(Hlc::from_parts(time_ms, 0), node));
    }
    stable
}

#[test]
fn an_expire_that_arrives_before_the_field_it_saw_is_kept_until_the_field_comes() {
    let key = Bytes::from_static(b"h");
    let (mut a, mut b, mut c) = (Region::new(1), Region::new(2), Region::new(3));
    // C writes the field; A has it and sets the TTL; B gets the EXPIRE first.
    let field = c.write(NOW_MS, |kv, ctx| drop(kv.hash_command(ctx, hset(&key, "f"), &mut || 0)));
    a.merge(&field);
    let ttl = a.write(NOW_MS + 1, |kv, ctx| expire(kv, ctx, &key));
    let due = a.pexpiretime(&key).expect("A's key has the TTL");
    b.merge(&ttl);
    let held = b.tombstone(&key).expect("B holds the TTL with no element: a key tombstone");
    assert!(held.holds_pending_ttl(NOW_MS));

    // Every node has every write, long before the TTL is due: B keeps it.
    let before_due = stable_at(NOW_MS + 10);
    b.kv.forget_stable(&before_due, &[]);
    assert!(b.tombstone(&key).is_some(), "kept: collected, the TTL would be forgotten before its field arrives");
    // A replay of that collection decides the same, and so does a merge of the same
    // state again under what B has forgotten.
    let mut replayed = Region::new(2);
    replayed.merge(&ttl);
    replayed.kv.merge_forget(&before_due, &[], false, replayed.kv.scope);
    assert!(replayed.tombstone(&key).is_some(), "a replayed collection keeps it too");
    b.merge(&ttl);
    assert!(b.tombstone(&key).is_some(), "merged again: still kept");

    // The field arrives: the key lives, with A's TTL, as on A and C.
    b.merge(&field);
    assert_eq!(b.pexpiretime(&key), Some(due));
    c.merge(&ttl);
    assert_eq!(c.pexpiretime(&key), Some(due));

    // Once the instant is past, such a state goes like any tombstone.
    let mut late = Region::new(2);
    late.merge(&ttl);
    late.kv.forget_stable(&stable_at(due + 1), &[]);
    assert!(late.tombstone(&key).is_none(), "collected once its TTL is due");
}

#[test]
fn an_emptied_collection_ships_the_removal_of_its_ttl() {
    let key = Bytes::from_static(b"s");
    let (mut a, mut b) = (Region::new(1), Region::new(2));
    let sadd = |member: &str| SetCommand::Add { key: key.clone(), members: vec![Bytes::copy_from_slice(member.as_bytes())] };
    let mut shipped = a.write(NOW_MS, |kv, ctx| drop(kv.set_command(ctx, sadd("m"), &mut || 0)));
    shipped.extend(a.write(NOW_MS + 1, |kv, ctx| expire(kv, ctx, &key)));
    let srem = SetCommand::Rem { key: key.clone(), members: vec![Bytes::from_static(b"m")] };
    shipped.extend(a.write(NOW_MS + 2, |kv, ctx| drop(kv.set_command(ctx, srem, &mut || 0))));
    b.merge(&shipped);
    for region in [&a, &b] {
        let tombstone = region.tombstone(&key).expect("the emptied key's tombstone");
        assert_eq!(tombstone.expire_at_ms(), None, "node {}: the emptying removed the TTL", region.node);
        assert!(!tombstone.holds_pending_ttl(NOW_MS));
    }
    // A member added again on B makes a key with no TTL, as on A.
    let again = b.write(NOW_MS + 3, |kv, ctx| drop(kv.set_command(ctx, sadd("n"), &mut || 0)));
    a.merge(&again);
    assert_eq!(a.pexpiretime(&key), None);
    assert_eq!(b.pexpiretime(&key), None);
}
