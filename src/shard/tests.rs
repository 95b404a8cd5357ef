//! The shard state machine's unit tests.

use super::*;
use crate::crdt::Dot;
use crate::engine::kv::{KeyState, StrVal};

#[test]
fn a_merge_refused_while_the_delta_log_is_full_hands_the_deltas_back_untouched() {
    let mut config = ShardConfig::new(0, 2);
    config.record_deltas = true;
    config.delta_log_entries_max = 1;
    let mut shard = Shard::new(config);
    let remote = |key: &'static str, ms: u64| Delta::Key {
        key: Bytes::from_static(key.as_bytes()),
        state: KeyState::with_value(Dot::new(Hlc::from_parts(ms, 0), 1), StrVal::Int(ms as i64), None),
    };
    assert!(matches!(shard.apply(ShardOp::MergeRemote(vec![remote("a", 1)]), 10), ShardReply::Count(_)));
    let offered = vec![remote("b", 2), remote("c", 3)];
    match shard.apply(ShardOp::MergeRemote(offered.clone()), 10) {
        ShardReply::MergeRefused(back) => assert_eq!(back, offered),
        other => panic!("merged into a full log: {other:?}"),
    }
    assert_eq!(shard.kv.keys.len(), 1, "nothing of a refused merge is applied");
    shard.drain_deltas();
    assert!(matches!(shard.apply(ShardOp::MergeRemote(offered), 10), ShardReply::Count(_)));
    assert_eq!(shard.kv.keys.len(), 3);
}

#[test]
fn a_removed_set_member_leaves_a_tombstone_until_the_removal_is_stable() {
    let mut config = ShardConfig::new(0, 1);
    config.replicate = true;
    let mut shard = Shard::new(config);
    let b = |s: &'static str| Bytes::from_static(s.as_bytes());
    let set = |cmd: crate::command::SetCommand| ShardOp::Key(KeyCommand::SetFamily(cmd));
    let add = set(crate::command::SetCommand::Add { key: b("s"), members: vec![b("a"), b("b")] });
    assert_eq!(shard.apply(add, 10), ShardReply::Frame(Frame::Integer(2)));
    let rem = set(crate::command::SetCommand::Rem { key: b("s"), members: vec![b("a")] });
    assert_eq!(shard.apply(rem, 11), ShardReply::Frame(Frame::Integer(1)));
    let state = |shard: &Shard| shard.kv.keys.get(b"s", crate::engine::kv::key_hash(b"s")).map(|e| e.state().clone()).expect("s");
    assert_eq!(state(&shard).element_tombstones(), 1);
    let stable = state(&shard).causal_context();
    assert_eq!(shard.apply(ShardOp::ForgetStable { stable, spared: Vec::new() }, 12), ShardReply::Count(1));
    assert_eq!(state(&shard).element_tombstones(), 0);
    let members = shard.apply(set(crate::command::SetCommand::Members(b("s"))), 13);
    assert_eq!(members, ShardReply::Frame(Frame::Set(vec![Frame::Bulk(b("b"))])));
}

#[test]
fn a_lone_nodes_log_replays_a_del_that_absorbed_a_fields_increments() {
    // A node without peers keeps no element tombstone, but its log must carry the
    // counter floors a DEL absorbed: replay merges the DEL, and a merged remove
    // absorbs no increment itself (simulator: single-node seed 27).
    let mut config = ShardConfig::new(0, 1);
    config.record_deltas = true;
    let mut shard = Shard::new(config);
    let b = |s: &'static str| Bytes::from_static(s.as_bytes());
    let hash = |cmd: crate::command::HashCommand| ShardOp::Key(KeyCommand::Hash(cmd));
    let incr = hash(crate::command::HashCommand::IncrByFloat { key: b("h"), field: b("f"), by: -1.0 });
    assert_eq!(shard.apply(incr, 10), ShardReply::Frame(Frame::Bulk(b("-1"))));
    assert_eq!(shard.apply(ShardOp::Del(vec![b("h")]), 11), ShardReply::Count(1));
    let log = shard.drain_deltas().decode().expect("the shard's own log decodes");
    let mut recovered = [Shard::new(ShardConfig::new(0, 1))];
    merge_recovered(&mut recovered, log);
    assert_eq!(recovered[0].kv.keys.len(), 0, "the DEL's replay removes the increment too");
}

/// Two replicating, recording shards of one node (node id 1).
fn two_shards() -> [Shard; 2] {
    [0, 1].map(|id| {
        let mut config = ShardConfig::new(id, 1);
        config.shard_count = 2;
        config.replicate = true;
        config.record_deltas = true;
        Shard::new(config)
    })
}

fn key_of_shard(shard: usize, shards: usize) -> Bytes {
    (0..).map(|i| Bytes::from(format!("k{i}"))).find(|k| routing::shard_for_key(k, shards) == shard).expect("some key")
}

fn incr(key: &Bytes, by: i64) -> ShardOp {
    ShardOp::Key(KeyCommand::IncrBy { key: key.clone(), by })
}

fn get(shard: &mut Shard, key: &Bytes) -> ShardReply {
    shard.apply(ShardOp::Key(KeyCommand::Get(key.clone())), 100)
}

/// Shard 1 holds a counter written at 10; shard 0 deleted a key at 12 and collected
/// its tombstone under a stable vector that covers the counter's write too.
fn shard_zero_collects_over_shard_ones_counter() -> ([Shard; 2], Bytes) {
    let mut shards = two_shards();
    let (k0, k1) = (key_of_shard(0, 2), key_of_shard(1, 2));
    assert_eq!(shards[1].apply(incr(&k1, 5), 10), ShardReply::Frame(Frame::Integer(5)));
    shards[0].apply(incr(&k0, 1), 11);
    assert_eq!(shards[0].apply(ShardOp::Del(vec![k0]), 12), ShardReply::Count(1));
    let mut stable = crate::crdt::VersionVector::new();
    stable.add(Dot::new(Hlc::from_parts(20, u16::MAX), 1));
    assert_eq!(shards[0].apply(ShardOp::ForgetStable { stable: stable.clone(), spared: Vec::new() }, 20), ShardReply::Count(1));
    assert_eq!(shards[1].apply(ShardOp::ForgetStable { stable, spared: Vec::new() }, 20), ShardReply::Count(0));
    (shards, k1)
}

#[test]
fn replay_applies_a_shards_tombstone_collection_to_that_shards_keys_only() {
    // A stored stream interleaves the shards' logs: shard 0's collection record can come
    // before shard 1's earlier writes (a checkpoint holds shard 0's chunks first, and
    // a segment each shard's drain in turn). Applied to shard 1's keys, the record made
    // them look collected and removed the writes it covered; the restarted node then
    // spread that removal to every replica (Jepsen-style test, `--faults restart`).
    let (mut shards, k1) = shard_zero_collects_over_shard_ones_counter();
    // The logs, shard 0's first.
    let mut log = shards[0].drain_deltas().decode().expect("decodes");
    log.extend(shards[1].drain_deltas().decode().expect("decodes"));
    assert!(log.iter().any(|d| matches!(d, Delta::Forget { scope, .. } if scope.index == 0 && scope.count == 2)));
    let mut recovered = two_shards();
    merge_recovered(&mut recovered, log);
    assert_eq!(get(&mut recovered[1], &k1), ShardReply::Frame(Frame::Bulk(Bytes::from_static(b"5"))), "segments");
    // A checkpoint: shard 0's chunks (with its record last), then shard 1's.
    let mut chunks = Vec::new();
    for shard in &mut shards {
        match shard.apply(ShardOp::ExportChunk { cursor: 0, count: usize::MAX }, 30) {
            ShardReply::Chunk { deltas, next } => {
                assert_eq!(next, crate::engine::kv::keyspace::SLOT_SPACE);
                chunks.extend(deltas);
            }
            other => panic!("{other:?}"),
        }
    }
    let mut recovered = two_shards();
    merge_recovered(&mut recovered, chunks);
    assert_eq!(get(&mut recovered[1], &k1), ShardReply::Frame(Frame::Bulk(Bytes::from_static(b"5"))), "checkpoint");
    // Once replay is over, the record covers every key: a stale copy of a collected
    // key arriving at shard 1 stays removed.
    recovered[1].kv.settle_replayed_forgets();
    let stale = KeyState::with_value(Dot::new(Hlc::from_parts(5, 0), 1), StrVal::Int(9), None);
    let gone = (0..).map(|i| Bytes::from(format!("gone{i}"))).find(|k| routing::shard_for_key(k, 2) == 1).expect("some key");
    recovered[1].apply(ShardOp::MergeRemote(vec![Delta::Key { key: gone.clone(), state: stale }]), 40);
    assert_eq!(get(&mut recovered[1], &gone), ShardReply::Frame(Frame::Null));
}

#[test]
fn no_tombstone_is_collected_while_a_checkpoint_reads_the_shard() {
    let mut config = ShardConfig::new(0, 1);
    config.replicate = true;
    let mut shard = Shard::new(config);
    for i in 0..20_000 {
        shard.apply(incr(&Bytes::from(format!("k{i}")), 1), 10);
    }
    shard.apply(ShardOp::Del(vec![Bytes::from_static(b"k0")]), 11);
    let mut stable = crate::crdt::VersionVector::new();
    stable.add(Dot::new(Hlc::from_parts(20, u16::MAX), 1));
    let ShardReply::Chunk { next, .. } = shard.apply(ShardOp::ExportChunk { cursor: 0, count: 1 }, 12) else { panic!() };
    assert!(next < crate::engine::kv::keyspace::SLOT_SPACE, "the scan takes more than one chunk");
    assert_eq!(
        shard.apply(ShardOp::ForgetStable { stable: stable.clone(), spared: Vec::new() }, 13),
        ShardReply::Count(0),
        "waits for the scan"
    );
    assert_eq!(shard.kv.keys.tombstones().count(), 1);
    let ShardReply::Chunk { next, .. } = shard.apply(ShardOp::ExportChunk { cursor: next, count: usize::MAX }, 14) else { panic!() };
    assert_eq!(next, crate::engine::kv::keyspace::SLOT_SPACE);
    assert_eq!(shard.apply(ShardOp::ForgetStable { stable, spared: Vec::new() }, 15), ShardReply::Count(1), "runs once the scan is over");
}

#[test]
fn a_tombstone_a_collection_spared_stays_after_replaying_its_log_or_loading_a_checkpoint() {
    // Node 1's shard merges peer 2's increment and deletes the key; peer 2 is given up
    // on, so a collection under a vector covering the DEL spares that tombstone (it
    // holds the floor of peer 2's counter) and drops another key's.
    let mut config = ShardConfig::new(0, 1);
    config.replicate = true;
    config.record_deltas = true;
    let mut shard = Shard::new(config);
    let (counted, plain) = (Bytes::from_static(b"counted"), Bytes::from_static(b"plain"));
    let mut peers = KeyState::new();
    peers.incr_by(Dot::new(Hlc::from_parts(5, 0), 2), Hlc::from_parts(1, 0), -3);
    shard.apply(ShardOp::MergeRemote(vec![Delta::Key { key: counted.clone(), state: peers }]), 10);
    shard.apply(ShardOp::MSet(vec![(plain.clone(), Bytes::from_static(b"v"))]), 10);
    assert_eq!(shard.apply(ShardOp::Del(vec![counted.clone(), plain.clone()]), 11), ShardReply::Count(2));
    let mut stable = crate::crdt::VersionVector::new();
    stable.add(Dot::new(Hlc::from_parts(20, u16::MAX), 1));
    stable.add(Dot::new(Hlc::from_parts(20, u16::MAX), 2));
    assert_eq!(shard.apply(ShardOp::ForgetStable { stable, spared: vec![2] }, 20), ShardReply::Count(1));
    let tombstones = |shard: &Shard| shard.kv.keys.tombstones().map(|(k, _)| k.clone()).collect::<Vec<_>>();
    assert_eq!(tombstones(&shard), vec![counted.clone()]);
    let log = shard.drain_deltas().decode().expect("decodes");
    assert!(log.iter().any(|d| matches!(d, Delta::Forget { spared, .. } if spared == &[2])), "the record names the spared peer");
    let mut replayed = [Shard::new(ShardConfig::new(0, 1))];
    replayed[0].kv.keep_tombstones = true;
    merge_recovered(&mut replayed, log);
    assert_eq!(tombstones(&replayed[0]), vec![counted.clone()], "replayed segments");
    // A checkpoint the recovered node takes before its first collection keeps it too.
    let ShardReply::Chunk { deltas, .. } = replayed[0].apply(ShardOp::ExportChunk { cursor: 0, count: usize::MAX }, 25) else { panic!() };
    let mut reloaded = [Shard::new(ShardConfig::new(0, 1))];
    reloaded[0].kv.keep_tombstones = true;
    merge_recovered(&mut reloaded, deltas);
    assert_eq!(tombstones(&reloaded[0]), vec![counted.clone()], "a checkpoint taken after replay");
    let ShardReply::Chunk { deltas, .. } = shard.apply(ShardOp::ExportChunk { cursor: 0, count: usize::MAX }, 30) else { panic!() };
    let mut loaded = [Shard::new(ShardConfig::new(0, 1))];
    loaded[0].kv.keep_tombstones = true;
    merge_recovered(&mut loaded, deltas);
    assert_eq!(tombstones(&loaded[0]), vec![counted], "a loaded checkpoint");
}
