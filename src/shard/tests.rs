//! The shard state machine's unit tests.

use super::*;
use crate::crdt::Dot;
use crate::engine::kv::StrVal;

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
    let state = |shard: &Shard| shard.kv.keys.get(b"s", crate::engine::kv::key_hash(b"s")).map(|e| e.state.clone()).expect("s");
    assert_eq!(state(&shard).element_tombstones(), 1);
    let stable = state(&shard).causal_context();
    assert_eq!(shard.apply(ShardOp::ForgetStable(stable), 12), ShardReply::Count(1));
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
