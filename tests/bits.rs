//! The bit commands on real `meridian` processes: BITOP over keys on different shards
//! (run under the coordinator), and bit writes replicating to another region as whole
//! string values.

mod common;

use std::time::Duration;

use common::cluster::Cluster;
use common::{connect, keys_spread_over_shards, start_meridian};

#[test]
fn bitop_over_keys_on_every_shard_matches_one_shard() {
    let server = start_meridian(&["--shards", "4"]);
    let mut con = connect(&server);
    let keys = keys_spread_over_shards("bits", 5, 4);
    let values: [&[u8]; 4] = [b"\xff\x0f", b"\xf0", b"\x01\x02\x03", b"\xaa"];
    for (key, value) in keys.iter().zip(values) {
        let _: () = redis::cmd("SET").arg(key).arg(value).query(&mut con).expect("SET");
    }
    let (sources, dst) = (&keys[..4], &keys[4]);
    for (op, expected) in [("AND", b"\x00\x00\x00".to_vec()), ("OR", b"\xff\x0f\x03".to_vec()), ("XOR", b"\xa4\x0d\x03".to_vec())] {
        let len: i64 = redis::cmd("BITOP").arg(op).arg(dst).arg(sources).query(&mut con).expect("BITOP");
        assert_eq!(len, 3, "{op}");
        let got: Vec<u8> = redis::cmd("GET").arg(dst).query(&mut con).expect("GET");
        assert_eq!(got, expected, "{op}");
    }
    let _: i64 = redis::cmd("DEL").arg(&keys[2]).query(&mut con).expect("DEL");
    let _: i64 = redis::cmd("HSET").arg(&keys[2]).arg("f").arg("v").query(&mut con).expect("HSET");
    let err = redis::cmd("BITOP").arg("OR").arg(dst).arg(sources).query::<i64>(&mut con).unwrap_err();
    assert_eq!(err.code(), Some("WRONGTYPE"), "a source of another type on another shard");
}

#[test]
fn bit_writes_replicate_as_whole_values() {
    let cluster = Cluster::start(2, &["--persistence", "off"]);
    let mut first = cluster.con(0);
    let _: i64 = redis::cmd("SETBIT").arg("flags").arg(100).arg(1).query(&mut first).expect("SETBIT");
    let _: Vec<i64> = redis::cmd("BITFIELD").arg("counters").arg(&["INCRBY", "u8", "#2", "7"]).query(&mut first).expect("BITFIELD");
    cluster.wait_converged(Duration::from_secs(30));
    let mut second = cluster.con(1);
    let bit: i64 = redis::cmd("GETBIT").arg("flags").arg(100).query(&mut second).expect("GETBIT");
    let count: i64 = redis::cmd("BITCOUNT").arg("flags").query(&mut second).expect("BITCOUNT");
    assert_eq!((bit, count), (1, 1));
    let field: Vec<i64> = redis::cmd("BITFIELD_RO").arg("counters").arg(&["GET", "u8", "#2"]).query(&mut second).expect("BITFIELD_RO");
    assert_eq!(field, [7]);
}
