//! The GEO commands on real `meridian` processes: a geospatial index is a sorted set of
//! geohash scores, so it converges across regions as one (concurrent GEOADDs of a
//! member settle on the later position everywhere; a GEOADD concurrent with a ZREM of
//! its member wins), searches in every region find what any region added, and the
//! STORE forms write a destination on another shard. Replies are compared with Redis's
//! byte for byte in `tests/differential/commands.txt`, and Redis's own `unit/geo` runs
//! in `tests/redis_units.rs`.

mod common;

use common::cluster::{Cluster, run};
use redis::Value;

fn bulk(text: &str) -> Value {
    Value::BulkString(text.as_bytes().to_vec())
}

/// GEOPOS of one member on one node: its coordinates as text, or `None`.
fn position(cluster: &Cluster, node: usize, key: &str, member: &str) -> Option<(String, String)> {
    let reply: Vec<Option<(String, String)>> = redis::cmd("GEOPOS").arg(key).arg(member).query(&mut cluster.con(node)).expect("GEOPOS");
    reply.into_iter().next().flatten()
}

#[test]
fn concurrent_geoadds_of_one_member_settle_on_the_later_position_everywhere() {
    let cluster = Cluster::start(2, &["--persistence", "off"]);
    cluster.concurrently(
        &[&["GEOADD", "places", "13.361389", "38.115556", "Palermo"]],
        &[(0, &["GEOADD", "places", "13.5", "38.2", "moving"]), (1, &["GEOADD", "places", "15.087269", "37.502669", "moving"])],
    );
    // Node 2's GEOADD is the later by the clock: its position wins (a position is a
    // score, last writer wins; never a mix of the two).
    for node in 0..2 {
        assert_eq!(
            position(&cluster, node, "places", "moving"),
            Some(("15.08726745843887329".to_string(), "37.50266842333162032".to_string())),
            "node {}",
            node + 1
        );
        let found = run(&mut cluster.con(node), &["GEOSEARCH", "places", "FROMLONLAT", "15", "37", "BYRADIUS", "100", "km", "ASC"]);
        assert_eq!(found, Value::Array(vec![bulk("moving")]), "node {}", node + 1);
    }
}

#[test]
fn a_geoadd_concurrent_with_a_zrem_of_its_member_wins() {
    let cluster = Cluster::start(2, &["--persistence", "off"]);
    cluster.concurrently(
        &[&["GEOADD", "places", "13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania"]],
        &[(0, &["ZREM", "places", "Palermo", "Catania"]), (1, &["GEOADD", "places", "13.4", "38.1", "Palermo"])],
    );
    for node in 0..2 {
        let mut con = cluster.con(node);
        assert_eq!(position(&cluster, node, "places", "Catania"), None, "removed on node {}", node + 1);
        assert_eq!(
            run(&mut con, &["GEODIST", "places", "Palermo", "Palermo"]),
            bulk("0.0000"),
            "Palermo, re-added concurrently, is there on node {}",
            node + 1
        );
        assert_eq!(run(&mut con, &["GEOHASH", "places", "Palermo"]), Value::Array(vec![bulk("sqc88zvsdd0")]));
    }
}

#[test]
fn a_search_in_one_region_finds_what_another_added_and_stores_across_shards() {
    let cluster = Cluster::start(2, &["--persistence", "off", "--shards", "4"]);
    let (src, dst) = (common::key_on_shard("geo-src-", 0, 4), common::key_on_shard("geo-dst-", 3, 4));
    run(&mut cluster.con(0), &["GEOADD", &src, "13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania"]);
    cluster.wait_converged(std::time::Duration::from_secs(30));
    let mut con = cluster.con(1);
    let stored = run(&mut con, &["GEOSEARCHSTORE", &dst, &src, "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km", "ASC", "STOREDIST"]);
    assert_eq!(stored, Value::Int(2));
    let distances: Vec<(String, String)> = redis::cmd("ZRANGE").arg(&dst).arg(0).arg(-1).arg("WITHSCORES").query(&mut con).unwrap();
    assert_eq!(
        distances,
        vec![("Catania".to_string(), "56.441257870158204".to_string()), ("Palermo".to_string(), "190.44242984775784".to_string())]
    );
    // A search that finds nothing deletes the destination, as in Redis.
    assert_eq!(run(&mut con, &["GEORADIUS", &src, "0", "0", "1", "km", "STORE", &dst]), Value::Int(0));
    assert_eq!(run(&mut con, &["EXISTS", &dst]), Value::Int(0));
    // The store replicates like any write: the other region sees it.
    assert_eq!(run(&mut con, &["GEORADIUSBYMEMBER", &src, "Palermo", "10", "km", "STORE", &dst]), Value::Int(1));
    cluster.wait_converged(std::time::Duration::from_secs(30));
    assert_eq!(run(&mut cluster.con(0), &["ZRANGE", &dst, "0", "-1"]), Value::Array(vec![bulk("Palermo")]));
}
