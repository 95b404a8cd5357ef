//! DUMP and RESTORE between a real `redis-server` 7.0 and real `meridian` processes:
//! what Redis DUMPs, Meridian RESTOREs (strings, hashes, sets, sorted sets and lists in every encoding
//! Redis picks, LZF-compressed ones included, and streams with their consumer groups,
//! pending entries and deleted entries), and what Meridian DUMPs, Redis RESTOREs,
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
    /// `XINFO STREAM key FULL` (entries, counters, groups, consumers and pending
    /// entries, with absolute times), less the radix tree's sizes (how Redis happens to
    /// hold the entries).
    Stream(String),
}

/// XINFO STREAM FULL without `radix-tree-keys` and `radix-tree-nodes`.
fn stream_read(con: &mut redis::Connection, key: &str) -> Read {
    let reply: redis::Value = redis::cmd("XINFO").arg("STREAM").arg(key).arg("FULL").query(con).expect("XINFO STREAM FULL");
    let redis::Value::Array(fields) = reply else { panic!("XINFO STREAM FULL {key}: {reply:?}") };
    let kept: Vec<String> = fields
        .chunks(2)
        .filter(|pair| !matches!(&pair[0], redis::Value::BulkString(name) if name.starts_with(b"radix-tree")))
        .map(|pair| format!("{:?} {:?}", pair[0], pair[1]))
        .collect();
    Read::Stream(kept.join("\n"))
}

fn read(con: &mut redis::Connection, key: &str) -> Read {
    let kind: String = redis::cmd("TYPE").arg(key).query(con).expect("TYPE");
    match kind.as_str() {
        "string" => Read::String(redis::cmd("GET").arg(key).query(con).expect("GET")),
        "hash" => Read::Hash(redis::cmd("HGETALL").arg(key).query(con).expect("HGETALL")),
        "set" => Read::Set(redis::cmd("SMEMBERS").arg(key).query(con).expect("SMEMBERS")),
        "zset" => Read::Zset(redis::cmd("ZRANGE").arg(key).arg(0).arg(-1).arg("WITHSCORES").query(con).expect("ZRANGE")),
        "list" => Read::List(redis::cmd("LRANGE").arg(key).arg(0).arg(-1).query(con).expect("LRANGE")),
        "stream" => stream_read(con, key),
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
    // A stream whose entries differ in their fields, with a deleted entry kept in its
    // node (XDEL), two groups, pending entries and a consumer without any.
    for (id, fields) in
        [("1-1", &["a", "1", "b", "hello"][..]), ("1-2", &["a", "2", "b", "x"]), ("2-0", &["c", "3"]), ("3-5", &["a", "7", "b", "y"])]
    {
        pipe.cmd("XADD").arg("stream:groups").arg(id).arg(fields).ignore();
    }
    pipe.cmd("XDEL").arg("stream:groups").arg("1-2").ignore();
    pipe.cmd("XGROUP").arg(&["CREATE", "stream:groups", "g1", "0"]).ignore();
    pipe.cmd("XGROUP").arg(&["CREATE", "stream:groups", "g2", "$"]).ignore();
    pipe.cmd("XREADGROUP").arg(&["GROUP", "g1", "alice", "COUNT", "2", "STREAMS", "stream:groups", ">"]).ignore();
    pipe.cmd("XGROUP").arg(&["CREATECONSUMER", "stream:groups", "g1", "bob"]).ignore();
    // Several nodes (100 entries each by default), the first ones trimmed away.
    for i in 0..450u64 {
        pipe.cmd("XADD").arg("stream:nodes").arg(format!("{}-{}", 1000 + i / 7, i % 7)).arg(&["field", &format!("value-{i}")]).ignore();
    }
    pipe.cmd("XTRIM").arg(&["stream:nodes", "MINID", "1020-3"]).ignore();
    pipe.cmd("XGROUP").arg(&["CREATE", "stream:nodes", "readers", "1030-0"]).ignore();
    pipe.cmd("XREADGROUP").arg(&["GROUP", "readers", "r1", "COUNT", "3", "STREAMS", "stream:nodes", ">"]).ignore();
    // An empty stream that remembers its last id.
    pipe.cmd("XADD").arg("stream:empty").arg("5-5").arg(&["k", "v"]).ignore();
    pipe.cmd("XDEL").arg("stream:empty").arg("5-5").ignore();
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
        "stream:groups",
        "stream:nodes",
        "stream:empty",
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
        let _: String = redis::cmd("XADD").arg(&["stream", "7-1", "f", "v"]).query(&mut con).expect("XADD");
        let _: () = redis::cmd("XGROUP").arg(&["CREATE", "stream", "g", "0"]).query(&mut con).expect("XGROUP");
        let _: redis::Value =
            redis::cmd("XREADGROUP").arg(&["GROUP", "g", "c", "STREAMS", "stream", ">"]).query(&mut con).expect("XREADGROUP");
        let payload = dump(&mut con, "src");
        restore(&mut con, "dst", 0, &payload);
        let stream_payload = dump(&mut con, "stream");
        restore(&mut con, "stream:dst", 0, &stream_payload);
        wait_flushed(&mut con, segment_before);
        payload
    };
    let server = start_meridian_on(&data, &[]);
    let mut con = connect(&server);
    assert_eq!(read(&mut con, "dst"), read(&mut con, "src"));
    assert_eq!(dump(&mut con, "dst"), payload);
    assert_eq!(read(&mut con, "stream:dst"), read(&mut con, "stream"));
}

/// RESTORE REPLACE over a hash whose fields include a counter: the restored fields come
/// in the payload's order, as Redis adds them to a new key (the old counter field's
/// absorbed floor once kept its old place, and a restart then ordered them differently
/// again: found by the simulator's `--dumps`), and a restart keeps that order and no
/// old increment.
#[test]
fn a_restore_over_a_counter_field_keeps_the_payloads_order_through_a_restart() {
    let dir = TempDir::new("dump-restore-order");
    let data = dir.path.join("data");
    std::fs::create_dir_all(&data).expect("data dir");
    let fields = |con: &mut redis::Connection| -> Vec<String> { redis::cmd("HGETALL").arg("h").query(con).expect("HGETALL") };
    {
        let server = start_meridian_on(&data, &[]);
        let mut con = connect(&server);
        let (_, segment_before) = wait_claimed(&mut con);
        let _: () = redis::cmd("HSET").arg("src").arg(&["f0", "v2", "f3", ""]).query(&mut con).expect("HSET");
        let payload = dump(&mut con, "src");
        let _: String = redis::cmd("HINCRBYFLOAT").arg(&["h", "f3", "-1.5"]).query(&mut con).expect("HINCRBYFLOAT");
        let _: i64 = redis::cmd("HINCRBY").arg(&["h", "f9", "4"]).query(&mut con).expect("HINCRBY");
        let _: () = redis::cmd("RESTORE").arg("h").arg(0).arg(&payload).arg("REPLACE").query(&mut con).expect("RESTORE");
        assert_eq!(fields(&mut con), ["f0", "v2", "f3", ""]);
        wait_flushed(&mut con, segment_before);
    }
    let server = start_meridian_on(&data, &[]);
    let mut con = connect(&server);
    assert_eq!(fields(&mut con), ["f0", "v2", "f3", ""], "after a restart");
    let _: i64 = redis::cmd("HINCRBY").arg(&["h", "f9", "1"]).query(&mut con).expect("HINCRBY");
    assert_eq!(fields(&mut con), ["f0", "v2", "f3", "", "f9", "1"], "the old increment stays removed");
}

#[test]
fn a_restored_stream_goes_on_where_it_left_off() {
    let server = start_meridian(&["--shards", "2"]);
    let mut con = connect(&server);
    let q = |con: &mut redis::Connection, args: &[&str]| -> redis::Value {
        redis::cmd(args[0]).arg(&args[1..]).query(con).unwrap_or_else(|e| panic!("{args:?}: {e}"))
    };
    q(&mut con, &["XADD", "src", "1-1", "a", "1"]);
    q(&mut con, &["XADD", "src", "2-2", "b", "2"]);
    q(&mut con, &["XGROUP", "CREATE", "src", "g", "0"]);
    q(&mut con, &["XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "src", ">"]);
    let payload = dump(&mut con, "src");
    restore(&mut con, "dst", 0, &payload);
    // The last id came along: XADD below it is refused, `*` goes above it.
    let refused = redis::cmd("XADD").arg(&["dst", "2-2", "x", "y"]).query::<String>(&mut con).unwrap_err();
    assert!(refused.to_string().contains("equal or smaller"), "{refused}");
    let added: String = redis::cmd("XADD").arg(&["dst", "*", "c", "3"]).query(&mut con).expect("XADD *");
    assert_ne!(added, "2-2");
    // The group reads on from its last delivered id, and its pending entry is still c's.
    let next: redis::Value = q(&mut con, &["XREADGROUP", "GROUP", "g", "c", "STREAMS", "dst", ">"]);
    assert!(format!("{next:?}").contains("2-2") && !format!("{next:?}").contains("1-1"), "{next:?}");
    let pending: (i64, String, String, Vec<(String, String)>) =
        redis::cmd("XPENDING").arg(&["dst", "g"]).query(&mut con).expect("XPENDING");
    assert_eq!(pending, (3, "1-1".to_owned(), added, vec![("c".to_owned(), "3".to_owned())]));
    let length: i64 = redis::cmd("XLEN").arg("dst").query(&mut con).expect("XLEN");
    assert_eq!(length, 3);
}
