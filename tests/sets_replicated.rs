//! Sets across real `meridian` processes: one test per DESIGN §5 row that involves a
//! set, each made concurrent by cutting every peer link (not by timing luck), then
//! healed and checked on every node against the documented result.

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::cluster::{Cluster, run};

const CONVERGE: Duration = Duration::from_secs(30);

fn smembers(cluster: &Cluster, node: usize, key: &str) -> BTreeSet<String> {
    redis::cmd("SMEMBERS").arg(key).query(&mut cluster.con(node)).expect("SMEMBERS")
}

fn key_type(cluster: &Cluster, node: usize, key: &str) -> String {
    redis::cmd("TYPE").arg(key).query(&mut cluster.con(node)).expect("TYPE")
}

fn assert_set_everywhere(cluster: &Cluster, key: &str, expected: &[&str]) {
    let expected: BTreeSet<String> = expected.iter().map(|m| m.to_string()).collect();
    for node in 0..cluster.nodes.len() {
        assert_eq!(smembers(cluster, node, key), expected, "{key} on node {}", node + 1);
    }
}

#[test]
fn concurrent_sadds_keep_every_member() {
    let cluster = Cluster::start(3, &["--persistence", "off"]);
    cluster.concurrently(
        &[&["SADD", "s", "base"]],
        &[(0, &["SADD", "s", "a", "shared"]), (1, &["SADD", "s", "b", "shared"]), (2, &["SADD", "s", "c"])],
    );
    assert_set_everywhere(&cluster, "s", &["base", "a", "b", "c", "shared"]);
}

#[test]
fn an_sadd_concurrent_with_an_srem_of_its_member_wins() {
    let cluster = Cluster::start(3, &["--persistence", "off"]);
    // Node 2's SADD of a present member still writes a new dot, which node 1's SREM
    // (later by the clock) had not seen: add wins.
    cluster.concurrently(&[&["SADD", "s", "m", "keep"]], &[(1, &["SADD", "s", "m"]), (0, &["SREM", "s", "m"])]);
    assert_set_everywhere(&cluster, "s", &["m", "keep"]);
}

#[test]
fn an_srem_removes_only_what_it_observed() {
    let cluster = Cluster::start(3, &["--persistence", "off"]);
    cluster.concurrently(
        &[&["SADD", "s", "old", "other"]],
        &[(0, &["SREM", "s", "old", "other"]), (1, &["SADD", "s", "new"]), (2, &["SADD", "t", "x"])],
    );
    // The removed members stay removed; the member added concurrently survives.
    assert_set_everywhere(&cluster, "s", &["new"]);
    assert_set_everywhere(&cluster, "t", &["x"]);
}

#[test]
fn a_del_removes_the_members_it_had_seen_and_keeps_a_concurrent_sadd() {
    let cluster = Cluster::start(3, &["--persistence", "off"]);
    cluster.concurrently(&[&["SADD", "s", "a", "b"]], &[(0, &["DEL", "s"]), (1, &["SADD", "s", "c"])]);
    assert_set_everywhere(&cluster, "s", &["c"]);
    run(&mut cluster.con(2), &["DEL", "s"]);
    cluster.wait_converged(CONVERGE);
    assert_set_everywhere(&cluster, "s", &[]);
    for node in 0..3 {
        assert_eq!(key_type(&cluster, node, "s"), "none");
    }
}

#[test]
fn a_set_and_an_sadd_on_one_key_resolve_to_the_type_written_later() {
    let cluster = Cluster::start(2, &["--persistence", "off"]);
    cluster.concurrently(&[], &[(0, &["SET", "k1", "text"]), (1, &["SADD", "k1", "m"])]);
    cluster.concurrently(&[], &[(1, &["SADD", "k2", "m"]), (0, &["SET", "k2", "text"])]);
    cluster.concurrently(&[], &[(1, &["SADD", "k3", "m"]), (0, &["HSET", "k3", "f", "v"])]);
    for node in 0..2 {
        assert_eq!(key_type(&cluster, node, "k1"), "set", "node {}", node + 1);
        assert_eq!(key_type(&cluster, node, "k2"), "string", "node {}", node + 1);
        assert_eq!(key_type(&cluster, node, "k3"), "hash", "node {}", node + 1);
        let value: String = redis::cmd("GET").arg("k2").query(&mut cluster.con(node)).unwrap();
        assert_eq!(value, "text");
    }
    assert_set_everywhere(&cluster, "k1", &["m"]);
    // A SET that has seen the set replaces it everywhere.
    run(&mut cluster.con(1), &["SET", "k1", "plain"]);
    cluster.wait_converged(CONVERGE);
    for node in 0..2 {
        assert_eq!(key_type(&cluster, node, "k1"), "string", "node {}", node + 1);
    }
}

#[test]
fn a_flushall_keeps_a_concurrent_sadd() {
    let cluster = Cluster::start(2, &["--persistence", "off"]);
    cluster.concurrently(&[&["SADD", "s", "a"], &["SADD", "gone", "x"]], &[(0, &["FLUSHALL"]), (1, &["SADD", "s", "b"])]);
    assert_set_everywhere(&cluster, "s", &["b"]);
    assert_set_everywhere(&cluster, "gone", &[]);
}

#[test]
fn spop_on_two_nodes_at_once_may_pop_the_same_member_twice() {
    let cluster = Cluster::start(2, &["--persistence", "off"]);
    // One member: both nodes must pop it (at least once, not exactly once).
    let replies = cluster.concurrently(&[&["SADD", "s", "only", "1"], &["SREM", "s", "1"]], &[(0, &["SPOP", "s"]), (1, &["SPOP", "s"])]);
    for reply in replies {
        assert_eq!(reply, redis::Value::BulkString(b"only".to_vec()));
    }
    assert_set_everywhere(&cluster, "s", &[]);
    // A member added concurrently with a pop that did not see it survives.
    cluster.concurrently(&[&["SADD", "t", "x"]], &[(0, &["SPOP", "t"]), (1, &["SADD", "t", "y"])]);
    assert_set_everywhere(&cluster, "t", &["y"]);
}

#[test]
fn sinterstore_across_shards_replaces_what_it_had_seen_and_keeps_a_concurrent_sadd() {
    let cluster = Cluster::start(2, &["--persistence", "off", "--shards", "4"]);
    // Several source keys: with four shards some are on other shards than `dst`.
    cluster.concurrently(
        &[
            &["SADD", "src:a", "1", "2", "3", "x"],
            &["SADD", "src:b", "2", "3", "4", "x"],
            &["SADD", "src:c", "3", "2", "x", "9"],
            &["SADD", "dst", "old"],
        ],
        &[(0, &["SINTERSTORE", "dst", "src:a", "src:b", "src:c"]), (1, &["SADD", "dst", "concurrent"])],
    );
    assert_set_everywhere(&cluster, "dst", &["2", "3", "x", "concurrent"]);
    let moved: i64 = redis::cmd("SMOVE").arg("src:a").arg("dst").arg("1").query(&mut cluster.con(1)).unwrap();
    assert_eq!(moved, 1);
    cluster.wait_converged(CONVERGE);
    let card: i64 = redis::cmd("SUNIONSTORE").arg("u").arg("src:a").arg("src:b").query(&mut cluster.con(0)).unwrap();
    assert_eq!(card, 4);
    cluster.wait_converged(CONVERGE);
    assert_set_everywhere(&cluster, "dst", &["1", "2", "3", "x", "concurrent"]);
    assert_set_everywhere(&cluster, "src:a", &["2", "3", "x"]);
    assert_set_everywhere(&cluster, "u", &["2", "3", "4", "x"]);
}
