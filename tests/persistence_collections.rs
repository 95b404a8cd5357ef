//! Collections through persistence with the real binary (DESIGN §7): hashes, sets,
//! sorted sets and lists written in flushed rounds, some stored in a checkpoint and some
//! in the segments after it, survive SIGKILL onto another shard count, with their
//! deletes, TTLs, renames and counters. (The mechanisms themselves: `persistence.rs`.)

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::node::{Node, int, kill, run};
use common::{ServerGuard, connect, info_u64, wait_claimed, wait_flushed};

#[test]
fn flushed_hash_writes_survive_sigkill_through_segments_and_checkpoints() {
    let (node, mut first, mut con, mut segment) = start_flushing_often("hashes");
    // Rounds of field writes, each flushed, so that some land in a checkpoint and some
    // in the segments after it.
    for round in 0..6 {
        run(&mut con, &["HSET", "h", &format!("f{round}"), &format!("v{round}"), "shared", &format!("round-{round}")]);
        run(&mut con, &["HINCRBY", "h", "count", "2"]);
        run(&mut con, &["HINCRBYFLOAT", "h", "float", "0.5"]);
        if round > 0 {
            run(&mut con, &["HDEL", "h", &format!("f{}", round - 1)]);
        }
        segment = wait_flushed(&mut con, segment);
    }
    run(&mut con, &["HSET", "gone", "a", "1"]);
    run(&mut con, &["DEL", "gone"]);
    run(&mut con, &["HSET", "reborn", "old", "1"]);
    run(&mut con, &["DEL", "reborn"]);
    run(&mut con, &["HSET", "reborn", "new", "2"]);
    run(&mut con, &["HSET", "ttl", "f", "v"]);
    run(&mut con, &["EXPIRE", "ttl", "1000"]);
    run(&mut con, &["HSET", "src", "f", "v"]);
    run(&mut con, &["RENAME", "src", "dst"]);
    wait_flushed(&mut con, segment);
    let checkpoints = info_u64(&mut con, "persistence", "checkpoints_written");
    assert!(checkpoints >= 1, "no checkpoint was written");
    kill(&mut first);

    let second = node.start("second", &["--shards", "3"]);
    let mut con = connect(&second);
    let h: BTreeMap<String, String> = redis::cmd("HGETALL").arg("h").query(&mut con).expect("HGETALL");
    let expected: BTreeMap<String, String> =
        [("f5", "v5"), ("shared", "round-5"), ("count", "12"), ("float", "3")].into_iter().map(|(f, v)| (f.into(), v.into())).collect();
    assert_eq!(h, expected);
    assert_eq!(int(&mut con, &["EXISTS", "gone", "src"]), 0);
    let reborn: BTreeMap<String, String> = redis::cmd("HGETALL").arg("reborn").query(&mut con).expect("HGETALL");
    assert_eq!(reborn.into_iter().collect::<Vec<_>>(), vec![("new".to_string(), "2".to_string())]);
    let ttl = int(&mut con, &["TTL", "ttl"]);
    assert!((900..=1000).contains(&ttl), "TTL of a hash after recovery: {ttl}");
    assert_eq!(get_field(&mut con, "dst", "f").as_deref(), Some("v"));
    assert_eq!(int(&mut con, &["HINCRBY", "h", "count", "1"]), 13, "the field's counter keeps counting after recovery");
}

#[test]
fn flushed_set_writes_survive_sigkill_through_segments_and_checkpoints() {
    let (node, mut first, mut con, mut segment) = start_flushing_often("sets");
    // Rounds of member writes, each flushed, so that some land in a checkpoint and some
    // in the segments after it.
    for round in 0..6 {
        run(&mut con, &["SADD", "s", &format!("m{round}"), "shared", &round.to_string()]);
        if round > 0 {
            run(&mut con, &["SREM", "s", &format!("m{}", round - 1), &(round - 1).to_string()]);
        }
        segment = wait_flushed(&mut con, segment);
    }
    run(&mut con, &["SADD", "popped", "only"]);
    run(&mut con, &["SPOP", "popped"]);
    run(&mut con, &["SADD", "reborn", "old"]);
    run(&mut con, &["DEL", "reborn"]);
    run(&mut con, &["SADD", "reborn", "new"]);
    run(&mut con, &["SADD", "ttl", "m"]);
    run(&mut con, &["EXPIRE", "ttl", "1000"]);
    run(&mut con, &["SADD", "src", "1", "2"]);
    run(&mut con, &["RENAME", "src", "dst"]);
    run(&mut con, &["SADD", "x", "1", "2", "3"]);
    run(&mut con, &["SADD", "y", "2", "3", "4"]);
    run(&mut con, &["SINTERSTORE", "both", "x", "y"]);
    run(&mut con, &["SMOVE", "x", "y", "1"]);
    wait_flushed(&mut con, segment);
    let checkpoints = info_u64(&mut con, "persistence", "checkpoints_written");
    assert!(checkpoints >= 1, "no checkpoint was written");
    kill(&mut first);

    let second = node.start("second", &["--shards", "3"]);
    let mut con = connect(&second);
    let members =
        |con: &mut redis::Connection, key: &str| -> BTreeSet<String> { redis::cmd("SMEMBERS").arg(key).query(con).expect("SMEMBERS") };
    let set = |items: &[&str]| -> BTreeSet<String> { items.iter().map(|m| m.to_string()).collect() };
    assert_eq!(members(&mut con, "s"), set(&["m5", "shared", "5"]));
    assert_eq!(int(&mut con, &["EXISTS", "popped", "src"]), 0);
    assert_eq!(members(&mut con, "reborn"), set(&["new"]));
    let ttl = int(&mut con, &["TTL", "ttl"]);
    assert!((900..=1000).contains(&ttl), "TTL of a set after recovery: {ttl}");
    assert_eq!(members(&mut con, "dst"), set(&["1", "2"]));
    assert_eq!(members(&mut con, "both"), set(&["2", "3"]));
    assert_eq!(members(&mut con, "x"), set(&["2", "3"]));
    assert_eq!(members(&mut con, "y"), set(&["1", "2", "3", "4"]));
    assert_eq!(int(&mut con, &["SADD", "s", "shared", "more"]), 1, "the set keeps its members after recovery");
}

#[test]
fn flushed_sorted_set_writes_survive_sigkill_through_segments_and_checkpoints() {
    let (node, mut first, mut con, mut segment) = start_flushing_often("zsets");
    // Rounds of member writes, each flushed, so that some land in a checkpoint and some
    // in the segments after it.
    for round in 0..6 {
        run(&mut con, &["ZADD", "z", &round.to_string(), &format!("m{round}")]);
        run(&mut con, &["ZINCRBY", "z", "1.5", "counted"]);
        if round > 0 {
            run(&mut con, &["ZREM", "z", &format!("m{}", round - 1)]);
        }
        segment = wait_flushed(&mut con, segment);
    }
    run(&mut con, &["ZADD", "popped", "1", "only"]);
    run(&mut con, &["ZPOPMIN", "popped"]);
    run(&mut con, &["ZADD", "ttl", "1", "m"]);
    run(&mut con, &["EXPIRE", "ttl", "1000"]);
    run(&mut con, &["ZADD", "src", "1", "a", "2", "b"]);
    run(&mut con, &["RENAME", "src", "dst"]);
    run(&mut con, &["ZADD", "x", "1", "a", "2", "b"]);
    run(&mut con, &["ZADD", "y", "3", "b", "4", "c"]);
    run(&mut con, &["ZINTERSTORE", "both", "2", "x", "y"]);
    wait_flushed(&mut con, segment);
    assert!(info_u64(&mut con, "persistence", "checkpoints_written") >= 1, "no checkpoint was written");
    kill(&mut first);

    let second = node.start("second", &["--shards", "3"]);
    let mut con = connect(&second);
    let scored = |con: &mut redis::Connection, key: &str| -> Vec<(String, String)> {
        redis::cmd("ZRANGE").arg(key).arg(0).arg(-1).arg("WITHSCORES").query(con).expect("ZRANGE")
    };
    let pairs = |items: &[(&str, &str)]| -> Vec<(String, String)> { items.iter().map(|(m, s)| (m.to_string(), s.to_string())).collect() };
    assert_eq!(scored(&mut con, "z"), pairs(&[("m5", "5"), ("counted", "9")]));
    assert_eq!(int(&mut con, &["EXISTS", "popped", "src"]), 0);
    let ttl = int(&mut con, &["TTL", "ttl"]);
    assert!((900..=1000).contains(&ttl), "TTL of a sorted set after recovery: {ttl}");
    assert_eq!(scored(&mut con, "dst"), pairs(&[("a", "1"), ("b", "2")]));
    assert_eq!(scored(&mut con, "both"), pairs(&[("b", "5")]));
    assert_eq!(int(&mut con, &["ZRANK", "z", "counted"]), 1, "the score order is rebuilt on recovery");
    let score: String = redis::cmd("ZINCRBY").arg("z").arg("1").arg("counted").query(&mut con).unwrap();
    assert_eq!(score, "10", "the member's counter keeps counting after recovery");
}

#[test]
fn flushed_list_writes_survive_sigkill_through_segments_and_checkpoints() {
    let (node, mut first, mut con, mut segment) = start_flushing_often("lists");
    // Rounds of element writes, each flushed, so that some land in a checkpoint and some
    // in the segments after it.
    for round in 0..6 {
        run(&mut con, &["RPUSH", "l", &format!("r{round}"), &format!("s{round}")]);
        run(&mut con, &["LPUSH", "l", &format!("h{round}")]);
        run(&mut con, &["LPOP", "l"]);
        if round > 0 {
            run(&mut con, &["LREM", "l", "0", &format!("s{}", round - 1)]);
        }
        segment = wait_flushed(&mut con, segment);
    }
    run(&mut con, &["LSET", "l", "0", "first"]);
    run(&mut con, &["LINSERT", "l", "AFTER", "first", "second"]);
    run(&mut con, &["RPUSH", "popped", "only"]);
    run(&mut con, &["RPOP", "popped"]);
    run(&mut con, &["RPUSH", "ttl", "x"]);
    run(&mut con, &["EXPIRE", "ttl", "1000"]);
    run(&mut con, &["RPUSH", "src", "a", "b"]);
    run(&mut con, &["RENAME", "src", "dst"]);
    run(&mut con, &["RPUSH", "trim", "0", "1", "2", "3"]);
    run(&mut con, &["LTRIM", "trim", "1", "2"]);
    wait_flushed(&mut con, segment);
    assert!(info_u64(&mut con, "persistence", "checkpoints_written") >= 1, "no checkpoint was written");
    let before: Vec<String> = redis::cmd("LRANGE").arg("l").arg(0).arg(-1).query(&mut con).expect("LRANGE");
    kill(&mut first);

    let second = node.start("second", &["--shards", "3"]);
    let mut con = connect(&second);
    let list = |con: &mut redis::Connection, key: &str| -> Vec<String> {
        redis::cmd("LRANGE").arg(key).arg(0).arg(-1).query(con).expect("LRANGE")
    };
    let expected = ["first", "second", "r1", "r2", "r3", "r4", "r5", "s5"];
    assert_eq!(before, expected);
    assert_eq!(list(&mut con, "l"), expected, "the list and its order survive");
    assert_eq!(int(&mut con, &["EXISTS", "popped", "src"]), 0);
    let ttl = int(&mut con, &["TTL", "ttl"]);
    assert!((900..=1000).contains(&ttl), "TTL of a list after recovery: {ttl}");
    assert_eq!(list(&mut con, "dst"), ["a", "b"]);
    assert_eq!(list(&mut con, "trim"), ["1", "2"]);
    assert_eq!(int(&mut con, &["RPUSH", "l", "tail"]), 9, "the list keeps growing after recovery");
    assert_eq!(list(&mut con, "l").last().map(String::as_str), Some("tail"));
}

fn get_field(con: &mut redis::Connection, key: &str, field: &str) -> Option<String> {
    redis::cmd("HGET").arg(key).arg(field).query(con).expect("HGET")
}

/// A node on two shards that flushes every 20 ms and checkpoints every second segment,
/// its first process, a connection to it, and the segment it claimed.
fn start_flushing_often(tag: &str) -> (Node, ServerGuard, redis::Connection, u64) {
    let node = Node::new(tag);
    let first = node.start("first", &["--shards", "2", "--checkpoint-every-segments", "2", "--flush-interval-ms", "20"]);
    let mut con = connect(&first);
    let segment = wait_claimed(&mut con).1;
    (node, first, con, segment)
}
