//! DUMP and RESTORE between a real `redis-server` 7.0 and real `meridian` processes:
//! what Redis DUMPs, Meridian RESTOREs (strings, hashes, sets, sorted sets and lists in every encoding
//! Redis picks, LZF-compressed ones included), and what Meridian DUMPs, Redis RESTOREs,
//! with the same values on both sides. Then a RESTORE is shown to be an ordinary write:
//! it replicates to the other region and survives a restart from the object store.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use common::cluster::Cluster;
use common::{
    ServerGuard, TempDir, connect, redis_server_available, start_meridian, start_meridian_on, start_redis, wait_claimed, wait_flushed,
};

const CONVERGE: Duration = Duration::from_secs(30);

/// What a key reads as, by type, comparable across servers.
#[derive(Debug, PartialEq)]
enum Read {
    String(Vec<u8>),
    Hash(BTreeMap<Vec<u8>, Vec<u8>>),
    Set(BTreeSet<Vec<u8>>),
    /// Members and scores in score order (scores as text, as both servers print them).
    Zset(Vec<(Vec<u8>, String)>),
    /// Elements, head first.
    List(Vec<Vec<u8>>),
}

fn read(con: &mut redis::Connection, key: &str) -> Read {
    let kind: String = redis::cmd("TYPE").arg(key).query(con).expect("TYPE");
    match kind.as_str() {
        "string" => Read::String(redis::cmd("GET").arg(key).query(con).expect("GET")),
        "hash" => Read::Hash(redis::cmd("HGETALL").arg(key).query(con).expect("HGETALL")),
        "set" => Read::Set(redis::cmd("SMEMBERS").arg(key).query(con).expect("SMEMBERS")),
        "zset" => Read::Zset(redis::cmd("ZRANGE").arg(key).arg(0).arg(-1).arg("WITHSCORES").query(con).expect("ZRANGE")),
        "list" => Read::List(redis::cmd("LRANGE").arg(key).arg(0).arg(-1).query(con).expect("LRANGE")),
        other => panic!("{key} is a {other}"),
    }
}

fn dump(con: &mut redis::Connection, key: &str) -> Vec<u8> {
    redis::cmd("DUMP").arg(key).query(con).unwrap_or_else(|e| panic!("DUMP {key}: {e}"))
}

fn restore(con: &mut redis::Connection, key: &str, ttl_ms: u64, payload: &[u8]) {
    let _: () =
        redis::cmd("RESTORE").arg(key).arg(ttl_ms).arg(payload).arg("REPLACE").query(con).unwrap_or_else(|e| panic!("RESTORE {key}: {e}"));
}

/// Keys of every encoding Redis 7.0 DUMPs a string, hash or set in.
fn fill(con: &mut redis::Connection) -> Vec<&'static str> {
    let long = "abc".repeat(2000);
    let mut pipe = redis::pipe();
    pipe.cmd("SET").arg("str:raw").arg("hello world").ignore();
    pipe.cmd("SET").arg("str:int8").arg("-12").ignore();
    pipe.cmd("SET").arg("str:int32").arg("2000000000").ignore();
    pipe.cmd("SET").arg("str:int64").arg("-9223372036854775808").ignore();
    pipe.cmd("SET").arg("str:lzf").arg(&long).ignore();
    pipe.cmd("SET").arg("str:binary").arg(b"\x00\xff\r\n".as_slice()).ignore();
    pipe.cmd("HSET").arg("hash:listpack").arg(&["a", "1", "b", "-5000", "c", "hello", "d", "99999999999"]).ignore();
    pipe.cmd("HSET").arg("hash:lzf").arg(&["f1", &"x".repeat(60), "f2", &"x".repeat(60)]).ignore();
    pipe.cmd("HSET").arg("hash:plain").arg(&["big", long.as_str(), "small", "1"]).ignore();
    let many: Vec<String> = (0..600).map(|i| format!("field{i}")).collect();
    for field in &many {
        pipe.cmd("HSET").arg("hash:many").arg(field).arg(field.len()).ignore();
    }
    pipe.cmd("SADD").arg("set:intset").arg(&["3", "-1", "70000", "9000000000"]).ignore();
    pipe.cmd("SADD").arg("set:plain").arg(&["a", "b", "1"]).ignore();
    for i in 0..600 {
        pipe.cmd("SADD").arg("set:bigintset").arg(i * 7).ignore();
    }
    pipe.cmd("ZADD").arg("zset:tiny").arg(&["1", "a", "-2", "b"]).ignore();
    pipe.cmd("ZADD").arg("zset:listpack").arg(&["1", "a", "2.5", "b", "-inf", "c", "1e300", "d", "-3", "e"]).ignore();
    for i in 0..300 {
        pipe.cmd("ZADD").arg("zset:skiplist").arg(i as f64 / 3.0).arg(format!("member{i}")).ignore();
    }
    pipe.cmd("RPUSH").arg("list:tiny").arg(&["a", "1", "-2"]).ignore();
    pipe.cmd("RPUSH").arg("list:lzf").arg(&["hello", "-5000", "9999999999", "x", "y", "z", "12345678901234567890"]).ignore();
    pipe.cmd("RPUSH").arg("list:plain").arg(&[long.as_str(), "small"]).ignore();
    for i in 0..3000 {
        // Several quicklist nodes (8 KiB each by default).
        pipe.cmd("RPUSH").arg("list:nodes").arg(format!("element-{i}")).ignore();
    }
    let _: () = pipe.query(con).expect("fill redis");
    vec![
        "str:raw",
        "str:int8",
        "str:int32",
        "str:int64",
        "str:lzf",
        "str:binary",
        "hash:listpack",
        "hash:lzf",
        "hash:plain",
        "hash:many",
        "set:intset",
        "set:plain",
        "set:bigintset",
        "zset:tiny",
        "zset:listpack",
        "zset:skiplist",
        "list:tiny",
        "list:lzf",
        "list:plain",
        "list:nodes",
    ]
}

fn both() -> Option<(ServerGuard, ServerGuard)> {
    if !redis_server_available() {
        eprintln!("redis-server is not installed: nothing to compare with");
        return None;
    }
    Some((start_redis(&[]), start_meridian(&["--shards", "2"])))
}

#[test]
fn payloads_dumped_by_redis_restore_here_and_back() {
    let Some((redis_server, meridian)) = both() else { return };
    let mut redis_con = connect(&redis_server);
    let mut ours = connect(&meridian);
    for key in fill(&mut redis_con) {
        let expected = read(&mut redis_con, key);
        restore(&mut ours, key, 0, &dump(&mut redis_con, key));
        assert_eq!(read(&mut ours, key), expected, "{key} restored here");
        let back = format!("{key}:back");
        restore(&mut redis_con, &back, 0, &dump(&mut ours, key));
        assert_eq!(read(&mut redis_con, &back), expected, "{key} dumped here, restored by redis");
    }
}

#[test]
fn small_values_dump_byte_for_byte_as_redis_dumps_them() {
    let Some((redis_server, meridian)) = both() else { return };
    let mut redis_con = connect(&redis_server);
    let mut ours = connect(&meridian);
    fill(&mut redis_con);
    for key in [
        "str:raw",
        "str:int8",
        "str:int32",
        "str:int64",
        "str:binary",
        "hash:listpack",
        "set:intset",
        "zset:tiny",
        "zset:skiplist",
        "list:tiny",
    ] {
        let payload = dump(&mut redis_con, key);
        restore(&mut ours, key, 0, &payload);
        assert_eq!(dump(&mut ours, key), payload, "{key}");
    }
}

#[test]
fn restore_keeps_the_ttl_and_honours_replace_and_absttl() {
    let Some((redis_server, meridian)) = both() else { return };
    let mut redis_con = connect(&redis_server);
    let mut ours = connect(&meridian);
    let _: () = redis::cmd("HSET").arg("h").arg("f").arg("v").query(&mut redis_con).expect("HSET");
    let payload = dump(&mut redis_con, "h");
    let _: () = redis::cmd("RESTORE").arg("h").arg(100_000).arg(&payload).query(&mut ours).expect("RESTORE with a TTL");
    let ttl: i64 = redis::cmd("PTTL").arg("h").query(&mut ours).expect("PTTL");
    assert!((99_000..=100_000).contains(&ttl), "PTTL {ttl}");
    let busy = redis::cmd("RESTORE").arg("h").arg(0).arg(&payload).query::<()>(&mut ours).unwrap_err();
    assert_eq!(busy.code(), Some("BUSYKEY"));
    let _: () =
        redis::cmd("RESTORE").arg("h").arg(4102444800000u64).arg(&payload).arg("REPLACE").arg("ABSTTL").query(&mut ours).expect("ABSTTL");
    let at: i64 = redis::cmd("PEXPIRETIME").arg("h").query(&mut ours).expect("PEXPIRETIME");
    assert_eq!(at, 4102444800000);
}

#[test]
fn a_restore_replicates_to_the_other_region() {
    let cluster = Cluster::start(2, &["--persistence", "off"]);
    let mut redis_payloads = Vec::new();
    if redis_server_available() {
        let redis_server = start_redis(&[]);
        let mut redis_con = connect(&redis_server);
        for key in fill(&mut redis_con) {
            redis_payloads.push((key, dump(&mut redis_con, key), read(&mut redis_con, key)));
        }
    }
    let mut first = cluster.con(0);
    for (key, payload, _) in &redis_payloads {
        restore(&mut first, key, 0, payload);
    }
    let _: () = redis::cmd("SADD").arg("local").arg(&["x", "y"]).query(&mut first).expect("SADD");
    let local = dump(&mut first, "local");
    restore(&mut first, "copied", 600_000, &local);
    cluster.wait_converged(CONVERGE);
    let mut second = cluster.con(1);
    for (key, _, expected) in &redis_payloads {
        assert_eq!(&read(&mut second, key), expected, "{key} on node 2");
    }
    assert_eq!(read(&mut second, "copied"), Read::Set([b"x".to_vec(), b"y".to_vec()].into()));
    let ttl: i64 = redis::cmd("TTL").arg("copied").query(&mut second).expect("TTL");
    assert!((590..=600).contains(&ttl), "the TTL replicates too: {ttl}");
}

#[test]
fn a_restored_key_survives_a_restart() {
    let dir = TempDir::new("dump-restore");
    let data = dir.path.join("data");
    std::fs::create_dir_all(&data).expect("data dir");
    let payload = {
        let server = start_meridian_on(&data, &[]);
        let mut con = connect(&server);
        let (_, segment_before) = wait_claimed(&mut con);
        let _: () = redis::cmd("HSET").arg("src").arg(&["a", "1", "b", "2"]).query(&mut con).expect("HSET");
        let payload = dump(&mut con, "src");
        restore(&mut con, "dst", 0, &payload);
        wait_flushed(&mut con, segment_before);
        payload
    };
    let server = start_meridian_on(&data, &[]);
    let mut con = connect(&server);
    assert_eq!(read(&mut con, "dst"), read(&mut con, "src"));
    assert_eq!(dump(&mut con, "dst"), payload);
}
