//! Hashes across real `meridian` processes: one test per DESIGN §5 row that involves a
//! hash, each made concurrent by cutting every peer link (not by timing luck), then
//! healed and checked on every node against the documented result.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::cluster::{Cluster, run};

const CONVERGE: Duration = Duration::from_secs(30);

fn hgetall(cluster: &Cluster, node: usize, key: &str) -> BTreeMap<String, String> {
    redis::cmd("HGETALL").arg(key).query(&mut cluster.con(node)).expect("HGETALL")
}

fn key_type(cluster: &Cluster, node: usize, key: &str) -> String {
    redis::cmd("TYPE").arg(key).query(&mut cluster.con(node)).expect("TYPE")
}

fn assert_hash_everywhere(cluster: &Cluster, key: &str, expected: &[(&str, &str)]) {
    let expected: BTreeMap<String, String> = expected.iter().map(|(f, v)| (f.to_string(), v.to_string())).collect();
    for node in 0..cluster.nodes.len() {
        assert_eq!(hgetall(cluster, node, key), expected, "{key} on node {}", node + 1);
    }
}

#[test]
fn concurrent_hsets_keep_every_field_and_the_later_write_of_a_shared_one() {
    let cluster = Cluster::start(3, &["--persistence", "off"]);
    cluster.concurrently(
        &[&["HSET", "h", "base", "0"]],
        &[
            (0, &["HSET", "h", "a", "1", "shared", "from-1"]),
            (1, &["HSET", "h", "b", "2", "shared", "from-2"]),
            (2, &["HSET", "h", "c", "3"]),
        ],
    );
    assert_hash_everywhere(&cluster, "h", &[("base", "0"), ("a", "1"), ("b", "2"), ("c", "3"), ("shared", "from-2")]);
}

#[test]
fn concurrent_hincrbys_add_up_and_an_hset_keeps_the_increments_it_had_not_seen() {
    let cluster = Cluster::start(3, &["--persistence", "off"]);
    cluster.concurrently(
        &[&["HSET", "h", "n", "10", "m", "10"]],
        &[
            (0, &["HINCRBY", "h", "n", "5"]),
            (1, &["HINCRBY", "h", "n", "7"]),
            (2, &["HINCRBY", "h", "n", "-1"]),
            (0, &["HINCRBY", "h", "m", "5"]),
            (1, &["HSET", "h", "m", "100"]),
        ],
    );
    assert_hash_everywhere(&cluster, "h", &[("n", "21"), ("m", "105")]);
}

#[test]
fn an_hset_concurrent_with_an_hdel_of_its_field_wins_and_observed_fields_stay_removed() {
    let cluster = Cluster::start(3, &["--persistence", "off"]);
    cluster.concurrently(
        &[&["HSET", "h", "f", "old", "g", "old", "keep", "1"]],
        &[(0, &["HDEL", "h", "f", "g"]), (1, &["HSET", "h", "f", "new"])],
    );
    // Add wins for f; g was removed and nothing rewrote it.
    assert_hash_everywhere(&cluster, "h", &[("f", "new"), ("keep", "1")]);
}

#[test]
fn a_del_removes_the_fields_it_had_seen_and_keeps_a_concurrent_hset() {
    let cluster = Cluster::start(3, &["--persistence", "off"]);
    cluster.concurrently(&[&["HSET", "h", "a", "1", "b", "2"]], &[(0, &["DEL", "h"]), (1, &["HSET", "h", "c", "3"])]);
    assert_hash_everywhere(&cluster, "h", &[("c", "3")]);
    // And a DEL that saw everything leaves nothing behind anywhere.
    run(&mut cluster.con(2), &["DEL", "h"]);
    cluster.wait_converged(CONVERGE);
    assert_hash_everywhere(&cluster, "h", &[]);
}

#[test]
fn a_set_and_an_hset_on_one_key_resolve_to_the_type_written_later() {
    let cluster = Cluster::start(2, &["--persistence", "off"]);
    cluster.concurrently(&[], &[(0, &["SET", "k1", "text"]), (1, &["HSET", "k1", "f", "v"])]);
    cluster.concurrently(&[], &[(1, &["HSET", "k2", "f", "v"]), (0, &["SET", "k2", "text"])]);
    for node in 0..2 {
        assert_eq!(key_type(&cluster, node, "k1"), "hash", "node {}", node + 1);
        assert_eq!(key_type(&cluster, node, "k2"), "string", "node {}", node + 1);
        let value: String = redis::cmd("GET").arg("k2").query(&mut cluster.con(node)).unwrap();
        assert_eq!(value, "text");
    }
    assert_hash_everywhere(&cluster, "k1", &[("f", "v")]);
    // A SET that has seen the hash replaces it everywhere.
    run(&mut cluster.con(1), &["SET", "k1", "plain"]);
    cluster.wait_converged(CONVERGE);
    for node in 0..2 {
        assert_eq!(key_type(&cluster, node, "k1"), "string", "node {}", node + 1);
    }
}

#[test]
fn a_flushall_keeps_a_concurrent_hset_and_ttls_replicate() {
    let cluster = Cluster::start(2, &["--persistence", "off"]);
    cluster.concurrently(
        &[&["HSET", "h", "a", "1"], &["HSET", "t", "f", "v"]],
        &[(0, &["FLUSHALL"]), (1, &["HSET", "h", "b", "2"]), (1, &["EXPIRE", "t", "1000"])],
    );
    assert_hash_everywhere(&cluster, "h", &[("b", "2")]);
    // The EXPIRE was concurrent with the FLUSHALL, not a write of the hash: t is gone.
    assert_hash_everywhere(&cluster, "t", &[]);
    run(&mut cluster.con(0), &["HSET", "t", "f", "v"]);
    run(&mut cluster.con(0), &["EXPIRE", "t", "1000"]);
    cluster.wait_converged(CONVERGE);
    let ttl: i64 = redis::cmd("TTL").arg("t").query(&mut cluster.con(1)).unwrap();
    assert!((990..=1000).contains(&ttl), "TTL {ttl}");
}

#[test]
fn an_hset_on_a_big_hash_ships_the_field_not_the_hash() {
    // No periodic anti-entropy: a round that met a batch in flight would rightly ship
    // the key whole, and this test measures what the writes themselves ship.
    let cluster = Cluster::start(2, &["--persistence", "off", "--anti-entropy-interval-ms", "600000"]);
    let mut con = cluster.con(0);
    let mut pipe = redis::pipe();
    for chunk in 0..20 {
        let mut cmd = redis::cmd("HSET");
        cmd.arg("big");
        for i in 0..1_000 {
            cmd.arg(format!("field:{:06}", chunk * 1_000 + i)).arg("a-value-of-some-length-0123456789");
        }
        pipe.add_command(cmd).ignore();
    }
    pipe.query::<()>(&mut con).expect("fill");
    cluster.wait_converged(CONVERGE);
    let sent = |cluster: &Cluster| -> u64 {
        let peer = cluster.replication_info()[0]["peer0"].clone();
        let field = peer.split(',').find_map(|f| f.strip_prefix("bytes_sent=")).map(str::to_owned);
        field.and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("no bytes_sent in {peer}"))
    };
    let before = sent(&cluster);
    for i in 0..100 {
        run(&mut con, &["HSET", "big", &format!("field:{i:06}"), "changed"]);
        run(&mut con, &["HINCRBY", "big", "counter", "1"]);
    }
    cluster.wait_converged(CONVERGE);
    let per_write = (sent(&cluster) - before) / 200;
    eprintln!("bytes replicated per write to a 20,000-field hash: {per_write}");
    // The hash is some 1 MB; a field's delta is tens of bytes plus its share of a batch.
    assert!(per_write < 2_000, "{per_write} bytes replicated per write to a 20,000-field hash");
    let len: i64 = redis::cmd("HLEN").arg("big").query(&mut cluster.con(1)).unwrap();
    assert_eq!(len, 20_001);
    let counter: i64 = redis::cmd("HGET").arg("big").arg("counter").query(&mut cluster.con(1)).unwrap();
    assert_eq!(counter, 100);
}

/// A field's increment that a DEL absorbed stays absorbed on the peers when the field is
/// set again in the same replication window as the DEL. The write after the DEL ships
/// the key without its removed elements, and as a whole state it replaced the DEL's own
/// delta in the outbox: the peers never got the DEL, and `HGET h n` read 5 + 1 there
/// (the replicated fuzz test found it). The window is made long so that both writes
/// surely fall in it, and anti-entropy, which would repair it, is off.
#[test]
fn a_field_set_again_in_the_window_of_the_del_that_removed_it_keeps_its_old_increments_out() {
    let cluster = Cluster::start(2, &["--persistence", "off", "--repl-batch-ms", "500", "--anti-entropy-interval-ms", "3600000"]);
    run(&mut cluster.con(0), &["HINCRBY", "h", "n", "5"]);
    cluster.wait_converged(CONVERGE);
    assert_eq!(hgetall(&cluster, 1, "h"), BTreeMap::from([("n".to_string(), "5".to_string())]));
    let mut writer = cluster.con(0);
    run(&mut writer, &["DEL", "h"]);
    run(&mut writer, &["HSET", "h", "n", "1", "m", "2"]);
    let expected = BTreeMap::from([("n".to_string(), "1".to_string()), ("m".to_string(), "2".to_string())]);
    assert_eq!(hgetall(&cluster, 0, "h"), expected);
    let arrived = common::eventually(Duration::from_secs(10), || hgetall(&cluster, 1, "h").contains_key("m") && cluster.idle());
    assert!(arrived, "the HSET did not reach the peer");
    assert_hash_everywhere(&cluster, "h", &[("n", "1"), ("m", "2")]);
}

/// A RENAME of a string over a hash removes the hash's fields on every node, the
/// fields another node wrote included, while they are not yet stable (a field becomes
/// stable about a report round, ~1 s, after every node has it, and only then does a
/// key-level removal cover it): the RENAME ships the fields' tombstones, as a SET over
/// the hash does. It shipped only the key-level part once, so the other node kept
/// `gone` (found by the three-region fuzz test). A concurrent, later HSET wins the
/// type clash with what the RENAME had not seen.
#[test]
fn a_string_renamed_over_another_regions_hash_removes_its_fields_there_too() {
    let cluster = Cluster::start(2, &["--anti-entropy-interval-ms", "3600000"]);
    let (mut first, mut second) = (cluster.con(0), cluster.con(1));
    run(&mut second, &["DECR", "counter"]);
    run(&mut second, &["HSET", "h", "old", "1", "gone", "2"]);
    let arrived =
        common::eventually(Duration::from_secs(5), || hgetall(&cluster, 0, "h").len() == 2 && key_type(&cluster, 0, "counter") == "string");
    assert!(arrived, "node 1 did not get node 2's writes");
    // At about the same time: each write is sent before the other arrives.
    run(&mut first, &["RENAME", "counter", "h"]);
    run(&mut second, &["HSET", "h", "old", "new", "added", "3"]);
    let expected: BTreeMap<String, String> = [("old", "new"), ("added", "3")].iter().map(|(f, v)| (f.to_string(), v.to_string())).collect();
    // Until node 2's HSET arrives, node 1 holds `h` as the renamed string: HGETALL
    // answers WRONGTYPE there meanwhile, which is no reason to stop waiting.
    let hash_now = |node: usize| redis::cmd("HGETALL").arg("h").query::<BTreeMap<String, String>>(&mut cluster.con(node)).ok();
    common::eventually(Duration::from_secs(10), || cluster.idle() && (0..2).all(|node| hash_now(node).as_ref() == Some(&expected)));
    assert_hash_everywhere(&cluster, "h", &[("old", "new"), ("added", "3")]);
}
