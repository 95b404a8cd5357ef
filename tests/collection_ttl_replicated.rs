//! A collection's TTL across real `meridian` processes: the TTL is one register for
//! the whole key, written and shipped apart from the elements (docs/semantics.md,
//! "A collection's TTL"), and an emptied collection takes its TTL with it everywhere.
//!
//! The other half, an EXPIRE reaching a node before the element its node had seen, needs
//! a batch lost with its connection and sent again after later ones: the simulator
//! finds it (docs/testing.md) and `engine::kv::ttl_tombstone_tests` replays it.

mod common;

use common::cluster::Cluster;

fn ttl_ms(cluster: &Cluster, node: usize, key: &str) -> i64 {
    redis::cmd("PTTL").arg(key).query(&mut cluster.con(node)).expect("PTTL")
}

#[test]
fn an_emptied_set_loses_its_ttl_and_a_concurrent_sadd_keeps_the_key_without_it() {
    let cluster = Cluster::start(3, &["--persistence", "off"]);
    // In Redis an SREM of the last member deletes the key, TTL and all; a concurrent
    // SADD elsewhere makes it anew. The SREM removes the TTL it had seen, as a DEL does.
    cluster.concurrently(&[&["SADD", "s", "a"], &["EXPIRE", "s", "1000"]], &[(0, &["SREM", "s", "a"]), (1, &["SADD", "s", "b"])]);
    for node in 0..3 {
        let members: Vec<String> = redis::cmd("SMEMBERS").arg("s").query(&mut cluster.con(node)).expect("SMEMBERS");
        assert_eq!(members, vec!["b".to_string()], "node {}", node + 1);
        assert_eq!(ttl_ms(&cluster, node, "s"), -1, "node {}: the emptying SREM removed the TTL it had seen", node + 1);
    }
    // The same for a list emptied by a pop.
    cluster.concurrently(&[&["RPUSH", "l", "x"], &["EXPIRE", "l", "1000"]], &[(2, &["LPOP", "l"]), (0, &["RPUSH", "l", "y"])]);
    for node in 0..3 {
        let items: Vec<String> = redis::cmd("LRANGE").arg("l").arg(0).arg(-1).query(&mut cluster.con(node)).expect("LRANGE");
        assert_eq!(items, vec!["y".to_string()], "node {}", node + 1);
        assert_eq!(ttl_ms(&cluster, node, "l"), -1, "node {}: the emptying LPOP removed the TTL it had seen", node + 1);
    }
}
