//! Sorted sets across real `meridian` processes: one test per DESIGN §5 row that
//! involves a sorted set (ZADD ∥ ZADD, ZINCRBY ∥ ZINCRBY, ZREM ∥ ZINCRBY, and the
//! whole-key rows), each made concurrent by cutting every peer link (not by timing
//! luck), then healed and checked on every node against the documented result.

mod common;

use std::time::Duration;

use common::cluster::{Cluster, run};

const CONVERGE: Duration = Duration::from_secs(30);

/// Members and scores in score order, as ZRANGE WITHSCORES answers (scores as text).
fn zrange(cluster: &Cluster, node: usize, key: &str) -> Vec<(String, String)> {
    redis::cmd("ZRANGE").arg(key).arg(0).arg(-1).arg("WITHSCORES").query(&mut cluster.con(node)).expect("ZRANGE")
}

fn assert_zset_everywhere(cluster: &Cluster, key: &str, expected: &[(&str, &str)]) {
    let expected: Vec<(String, String)> = expected.iter().map(|(m, s)| (m.to_string(), s.to_string())).collect();
    for node in 0..cluster.nodes.len() {
        assert_eq!(zrange(cluster, node, key), expected, "{key} on node {}", node + 1);
    }
}

#[test]
fn concurrent_zadds_keep_every_member_and_the_later_score_of_a_shared_one() {
    let cluster = Cluster::start(3, &["--persistence", "off"]);
    cluster.concurrently(
        &[&["ZADD", "z", "0", "base"]],
        &[(0, &["ZADD", "z", "1", "a", "7", "shared"]), (1, &["ZADD", "z", "2", "b", "5", "shared"]), (2, &["ZADD", "z", "3", "c"])],
    );
    // `shared`: node 2's ZADD is later by the clock, so its score wins.
    assert_zset_everywhere(&cluster, "z", &[("base", "0"), ("a", "1"), ("b", "2"), ("c", "3"), ("shared", "5")]);
}

#[test]
fn concurrent_zincrbys_add_up() {
    let cluster = Cluster::start(3, &["--persistence", "off"]);
    cluster.concurrently(
        &[&["ZADD", "z", "10", "m"]],
        &[
            (0, &["ZINCRBY", "z", "1", "m"]),
            (1, &["ZINCRBY", "z", "2.5", "m"]),
            (2, &["ZINCRBY", "z", "4", "fresh"]),
            (0, &["ZINCRBY", "z", "1", "fresh"]),
        ],
    );
    assert_zset_everywhere(&cluster, "z", &[("fresh", "5"), ("m", "13.5")]);
    // And they keep counting from the merged score.
    assert_eq!(run(&mut cluster.con(1), &["ZINCRBY", "z", "1", "m"]), redis::Value::BulkString(b"14.5".to_vec()));
}

#[test]
fn a_zincrby_the_zrem_had_not_seen_survives_it() {
    let cluster = Cluster::start(2, &["--persistence", "off"]);
    // The ZREM removed the score it had seen (10); node 2's increment survives alone.
    cluster.concurrently(&[&["ZADD", "z", "10", "m", "1", "keep"]], &[(0, &["ZREM", "z", "m"]), (1, &["ZINCRBY", "z", "5", "m"])]);
    assert_zset_everywhere(&cluster, "z", &[("keep", "1"), ("m", "5")]);
}

#[test]
fn a_zadd_replaces_the_score_it_saw_and_keeps_a_concurrent_increment() {
    let cluster = Cluster::start(2, &["--persistence", "off"]);
    cluster.concurrently(&[&["ZADD", "z", "10", "m"]], &[(0, &["ZADD", "z", "100", "m"]), (1, &["ZINCRBY", "z", "5", "m"])]);
    assert_zset_everywhere(&cluster, "z", &[("m", "105")]);
}

#[test]
fn a_zadd_concurrent_with_a_zrem_of_its_member_wins() {
    let cluster = Cluster::start(2, &["--persistence", "off"]);
    // Node 2's ZADD of a present member writes a new dot the (later) ZREM had not seen.
    cluster.concurrently(&[&["ZADD", "z", "1", "m", "2", "keep"]], &[(1, &["ZADD", "z", "3", "m"]), (0, &["ZREM", "z", "m"])]);
    assert_zset_everywhere(&cluster, "z", &[("keep", "2"), ("m", "3")]);
    // A ZPOPMIN on both sides at once pops its member on both (at least once).
    let replies = cluster.concurrently(&[&["ZADD", "p", "1", "only"]], &[(0, &["ZPOPMIN", "p"]), (1, &["ZPOPMIN", "p"])]);
    for reply in replies {
        assert_eq!(reply, redis::Value::Array(vec![redis::Value::BulkString(b"only".to_vec()), redis::Value::BulkString(b"1".to_vec())]));
    }
    assert_zset_everywhere(&cluster, "p", &[]);
}

#[test]
fn a_del_removes_the_members_it_had_seen_and_keeps_a_concurrent_zadd() {
    let cluster = Cluster::start(3, &["--persistence", "off"]);
    cluster.concurrently(&[&["ZADD", "z", "1", "a", "2", "b"]], &[(0, &["DEL", "z"]), (1, &["ZADD", "z", "3", "c"])]);
    assert_zset_everywhere(&cluster, "z", &[("c", "3")]);
    // A FLUSHALL likewise keeps a write it had not seen.
    cluster.concurrently(&[&["ZADD", "f", "1", "a"]], &[(0, &["FLUSHALL"]), (2, &["ZADD", "f", "2", "b"])]);
    assert_zset_everywhere(&cluster, "f", &[("b", "2")]);
}

#[test]
fn a_set_and_a_zadd_on_one_key_resolve_to_the_type_written_later() {
    let cluster = Cluster::start(2, &["--persistence", "off"]);
    cluster.concurrently(&[], &[(0, &["SET", "k1", "text"]), (1, &["ZADD", "k1", "1", "m"])]);
    cluster.concurrently(&[], &[(1, &["ZADD", "k2", "1", "m"]), (0, &["SADD", "k2", "x"])]);
    for node in 0..2 {
        let t1: String = redis::cmd("TYPE").arg("k1").query(&mut cluster.con(node)).unwrap();
        let t2: String = redis::cmd("TYPE").arg("k2").query(&mut cluster.con(node)).unwrap();
        assert_eq!((t1.as_str(), t2.as_str()), ("zset", "set"), "node {}", node + 1);
    }
    assert_zset_everywhere(&cluster, "k1", &[("m", "1")]);
}

#[test]
fn zunionstore_across_shards_replaces_what_it_had_seen_and_keeps_a_concurrent_zadd() {
    let cluster = Cluster::start(2, &["--persistence", "off", "--shards", "4"]);
    cluster.concurrently(
        &[&["ZADD", "src:a", "1", "x", "2", "y"], &["ZADD", "src:b", "10", "y", "20", "z"], &["ZADD", "dst", "5", "old"]],
        &[(0, &["ZUNIONSTORE", "dst", "2", "src:a", "src:b", "WEIGHTS", "1", "2"]), (1, &["ZADD", "dst", "7", "concurrent"])],
    );
    assert_zset_everywhere(&cluster, "dst", &[("x", "1"), ("concurrent", "7"), ("y", "22"), ("z", "40")]);
    let popped = run(&mut cluster.con(1), &["ZMPOP", "2", "missing", "src:b", "MAX"]);
    assert_eq!(
        popped,
        redis::Value::Array(vec![
            redis::Value::BulkString(b"src:b".to_vec()),
            redis::Value::Array(vec![redis::Value::Array(vec![
                redis::Value::BulkString(b"z".to_vec()),
                redis::Value::BulkString(b"20".to_vec())
            ])]),
        ])
    );
    run(&mut cluster.con(0), &["ZRANGESTORE", "top", "dst", "0", "1", "REV"]);
    cluster.wait_converged(CONVERGE);
    assert_zset_everywhere(&cluster, "src:b", &[("y", "10")]);
    assert_zset_everywhere(&cluster, "top", &[("y", "22"), ("z", "40")]);
}
