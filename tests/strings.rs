//! String commands against the real binary: long pipelines across shards, multi-key
//! commands whose keys live on different shards, a 100 MB value, and binary safety.

mod common;

use std::collections::HashSet;

use common::{connect, keys_spread_over_shards, shard_of, start_meridian};
use redis::Value;

const SHARDS: usize = 4;
const SHARDS_ARG: &[&str] = &["--shards", "4"];

#[test]
fn pipeline_of_10000_sets_then_10000_gets_keeps_order_across_4_shards() {
    let server = start_meridian(SHARDS_ARG);
    let mut con = connect(&server);
    let n = 10_000;

    // 300-byte values: the GET replies (3 MB) overflow the server's 1 MB write buffer
    // several times while replies from other shards are still in flight.
    let value_of = |i: usize| format!("value-{i}-{}", "x".repeat(300));
    let mut sets = redis::pipe();
    for i in 0..n {
        sets.cmd("SET").arg(format!("pipe:{i}")).arg(value_of(i));
    }
    let replies: Vec<Value> = sets.query(&mut con).expect("SET pipeline");
    assert_eq!(replies.len(), n);
    assert!(replies.iter().all(|r| *r == Value::Okay), "every SET answers OK");

    let mut gets = redis::pipe();
    for i in 0..n {
        gets.cmd("GET").arg(format!("pipe:{i}"));
    }
    let values: Vec<Option<String>> = gets.query(&mut con).expect("GET pipeline");
    assert_eq!(values.len(), n);
    for (i, value) in values.iter().enumerate() {
        assert_eq!(value.as_deref(), Some(value_of(i).as_str()), "reply {i} out of order");
    }

    let dbsize: i64 = redis::cmd("DBSIZE").query(&mut con).expect("DBSIZE");
    assert_eq!(dbsize, n as i64);
}

#[test]
fn pipeline_of_10000_interleaved_set_and_get_reads_its_own_writes() {
    let server = start_meridian(SHARDS_ARG);
    let mut con = connect(&server);
    // 2,500 keys, each written twice and read after each write, in one pipeline of
    // 10,000 commands: every GET must see the SET just before it, whatever shard.
    let keys = 2_500;
    let mut pipe = redis::pipe();
    for round in 0..2 {
        for i in 0..keys {
            pipe.cmd("SET").arg(format!("k{i}")).arg(format!("r{round}-{i}"));
            pipe.cmd("GET").arg(format!("k{i}"));
        }
    }
    let replies: Vec<Value> = pipe.query(&mut con).expect("pipeline");
    assert_eq!(replies.len(), 10_000);
    for round in 0..2 {
        for i in 0..keys {
            let at = (round * keys + i) * 2;
            assert_eq!(replies[at], Value::Okay, "SET reply at {at}");
            assert_eq!(replies[at + 1], Value::BulkString(format!("r{round}-{i}").into_bytes()), "GET reply at {}", at + 1);
        }
    }
}

#[test]
fn pipeline_of_10000_incrs_returns_each_counters_running_total_in_order() {
    let server = start_meridian(SHARDS_ARG);
    let mut con = connect(&server);
    let counters = keys_spread_over_shards("counter:", 16, SHARDS);
    let mut pipe = redis::pipe();
    for i in 0..10_000 {
        pipe.cmd("INCR").arg(&counters[i % counters.len()]);
    }
    let replies: Vec<i64> = pipe.query(&mut con).expect("INCR pipeline");
    assert_eq!(replies.len(), 10_000);
    for (i, reply) in replies.iter().enumerate() {
        let expected = (i / counters.len()) as i64 + 1;
        assert_eq!(*reply, expected, "INCR reply {i} on {}", counters[i % counters.len()]);
    }
    let totals: Vec<i64> = redis::cmd("MGET").arg(&counters).query(&mut con).expect("MGET");
    assert_eq!(totals, vec![10_000 / counters.len() as i64; counters.len()]);
}

#[test]
fn mset_then_mget_across_shards_returns_values_in_request_order_with_nils_for_missing() {
    let server = start_meridian(SHARDS_ARG);
    let mut con = connect(&server);
    let keys = keys_spread_over_shards("spread:", 64, SHARDS);

    let mut mset = redis::cmd("MSET");
    for key in &keys {
        mset.arg(key).arg(format!("v:{key}"));
    }
    let ok: Value = mset.query(&mut con).expect("MSET");
    assert_eq!(ok, Value::Okay);

    // Ask in reverse order, with a missing key after every third key.
    let mut asked = Vec::new();
    for (i, key) in keys.iter().rev().enumerate() {
        asked.push(key.clone());
        if i % 3 == 0 {
            asked.push(format!("missing:{i}"));
        }
    }
    let values: Vec<Option<String>> = redis::cmd("MGET").arg(&asked).query(&mut con).expect("MGET");
    assert_eq!(values.len(), asked.len());
    for (key, value) in asked.iter().zip(&values) {
        if key.starts_with("missing:") {
            assert_eq!(value, &None, "{key} must be nil");
        } else {
            assert_eq!(value.as_deref(), Some(format!("v:{key}").as_str()), "value of {key}");
        }
    }

    // A later MSET overwrites across shards, and a repeated key takes its last value.
    let ok: Value =
        redis::cmd("MSET").arg(&keys[0]).arg("a").arg(&keys[1]).arg("b").arg(&keys[0]).arg("c").query(&mut con).expect("MSET again");
    assert_eq!(ok, Value::Okay);
    let values: Vec<String> = redis::cmd("MGET").arg(&keys[0]).arg(&keys[1]).arg(&keys[0]).query(&mut con).expect("MGET again");
    assert_eq!(values, vec!["c", "b", "c"]);
}

#[test]
fn msetnx_across_shards_sets_all_keys_or_none() {
    let server = start_meridian(SHARDS_ARG);
    let mut con = connect(&server);
    let keys = keys_spread_over_shards("nx:", 16, SHARDS);
    // The pre-existing key lives on another shard than the first key of the command.
    let blocker = keys
        .iter()
        .rev()
        .find(|k| shard_of(k.as_bytes(), SHARDS) != shard_of(keys[0].as_bytes(), SHARDS))
        .expect("a key elsewhere")
        .clone();
    let _: () = redis::cmd("SET").arg(&blocker).arg("old").query(&mut con).expect("SET blocker");

    let mut msetnx = redis::cmd("MSETNX");
    for key in &keys {
        msetnx.arg(key).arg("new");
    }
    let set: i64 = msetnx.query(&mut con).expect("MSETNX with one existing key");
    assert_eq!(set, 0, "one key exists, so nothing is set");
    let exists: i64 = redis::cmd("EXISTS").arg(&keys).query(&mut con).expect("EXISTS");
    assert_eq!(exists, 1, "only the blocker exists after a refused MSETNX");
    let blocker_value: String = redis::cmd("GET").arg(&blocker).query(&mut con).expect("GET blocker");
    assert_eq!(blocker_value, "old");

    let _: i64 = redis::cmd("DEL").arg(&blocker).query(&mut con).expect("DEL blocker");
    let set: i64 = msetnx.query(&mut con).expect("MSETNX with all keys new");
    assert_eq!(set, 1);
    let values: Vec<String> = redis::cmd("MGET").arg(&keys).query(&mut con).expect("MGET");
    assert_eq!(values, vec!["new".to_string(); keys.len()]);
}

/// A deterministic, non-repeating-looking byte pattern (so a shifted or truncated copy
/// does not compare equal).
fn pattern_bytes(len: usize) -> Vec<u8> {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        out.extend_from_slice(&state.to_le_bytes());
    }
    out.truncate(len);
    out
}

#[test]
fn a_100_megabyte_value_round_trips_byte_for_byte() {
    let server = start_meridian(&[]);
    let mut con = connect(&server);
    let len = 100 * 1024 * 1024;
    let value = pattern_bytes(len);

    let ok: Value = redis::cmd("SET").arg("big").arg(&value[..]).query(&mut con).expect("SET 100 MB");
    assert_eq!(ok, Value::Okay);
    let strlen: i64 = redis::cmd("STRLEN").arg("big").query(&mut con).expect("STRLEN");
    assert_eq!(strlen, len as i64);
    let tail: Vec<u8> = redis::cmd("GETRANGE").arg("big").arg(-16).arg(-1).query(&mut con).expect("GETRANGE tail");
    assert_eq!(tail, &value[len - 16..]);
    let back: Vec<u8> = redis::cmd("GET").arg("big").query(&mut con).expect("GET 100 MB");
    assert_eq!(back.len(), len);
    assert!(back == value, "the value read back differs from the value written");
    // The connection is still in sync after the huge reply.
    let pong: String = redis::cmd("PING").query(&mut con).expect("PING");
    assert_eq!(pong, "PONG");
}

#[test]
fn binary_keys_and_values_round_trip_without_colliding() {
    let server = start_meridian(SHARDS_ARG);
    let mut con = connect(&server);
    let keys: Vec<&[u8]> = vec![
        b"a\0b",
        b"a\0c",
        b"a",
        b"a\0",
        b"\0",
        b"",
        b" ",
        b"\xff\xfe\xfd",
        b"\xff\xfe",
        b"k\r\nv",
        b"k\r\n",
        b"k",
        b"*1\r\n$4\r\nPING\r\n",
        b"{\xc3\x28}tag",
    ];
    assert_eq!(keys.iter().collect::<HashSet<_>>().len(), keys.len(), "test keys are distinct");
    let value_of = |i: usize| -> Vec<u8> {
        let mut v = vec![0u8, b'\r', b'\n', 0xff, 0xc3, 0x28, b'$', b'-', b'1'];
        v.extend_from_slice(i.to_string().as_bytes());
        v.push(0);
        v
    };

    for (i, key) in keys.iter().enumerate() {
        let ok: Value = redis::cmd("SET").arg(*key).arg(value_of(i)).query(&mut con).expect("SET binary");
        assert_eq!(ok, Value::Okay);
    }
    let dbsize: i64 = redis::cmd("DBSIZE").query(&mut con).expect("DBSIZE");
    assert_eq!(dbsize, keys.len() as i64, "binary keys must not collide");
    for (i, key) in keys.iter().enumerate() {
        let back: Vec<u8> = redis::cmd("GET").arg(*key).query(&mut con).expect("GET binary");
        assert_eq!(back, value_of(i), "value of key {:?}", String::from_utf8_lossy(key));
        let len: i64 = redis::cmd("STRLEN").arg(*key).query(&mut con).expect("STRLEN");
        assert_eq!(len, value_of(i).len() as i64);
    }
    let mget: Vec<Vec<u8>> = redis::cmd("MGET").arg(&keys).query(&mut con).expect("MGET binary");
    assert_eq!(mget, (0..keys.len()).map(value_of).collect::<Vec<_>>());

    let listed: Vec<Vec<u8>> = redis::cmd("KEYS").arg("*").query(&mut con).expect("KEYS *");
    let listed: HashSet<Vec<u8>> = listed.into_iter().collect();
    let expected: HashSet<Vec<u8>> = keys.iter().map(|k| k.to_vec()).collect();
    assert_eq!(listed, expected, "KEYS returns every binary key exactly");

    // APPEND of binary bytes and a prefix key that is a prefix of another.
    let len: i64 = redis::cmd("APPEND").arg(&b"a\0"[..]).arg(&b"\r\n\0"[..]).query(&mut con).expect("APPEND");
    assert_eq!(len, (value_of(3).len() + 3) as i64);
    let untouched: Vec<u8> = redis::cmd("GET").arg(&b"a\0b"[..]).query(&mut con).expect("GET neighbour");
    assert_eq!(untouched, value_of(0));
    let deleted: i64 = redis::cmd("DEL").arg(&b"a\0"[..]).arg(&b""[..]).query(&mut con).expect("DEL binary");
    assert_eq!(deleted, 2);
    let exists: i64 = redis::cmd("EXISTS").arg(&keys).query(&mut con).expect("EXISTS binary");
    assert_eq!(exists, keys.len() as i64 - 2);
}

#[test]
fn setrange_getrange_and_append_edit_strings_like_redis() {
    let server = start_meridian(&[]);
    let mut con = connect(&server);
    let len: i64 = redis::cmd("SETRANGE").arg("s").arg(5).arg("abc").query(&mut con).expect("SETRANGE on missing key");
    assert_eq!(len, 8);
    let value: Vec<u8> = redis::cmd("GET").arg("s").query(&mut con).expect("GET");
    assert_eq!(value, b"\0\0\0\0\0abc", "SETRANGE pads a new string with NUL bytes");
    let len: i64 = redis::cmd("APPEND").arg("s").arg("de").query(&mut con).expect("APPEND");
    assert_eq!(len, 10);
    let middle: String = redis::cmd("GETRANGE").arg("s").arg(5).arg(-2).query(&mut con).expect("GETRANGE");
    assert_eq!(middle, "abcd");
    let none: String = redis::cmd("GETRANGE").arg("s").arg(20).arg(30).query(&mut con).expect("GETRANGE past end");
    assert_eq!(none, "");
}

#[test]
fn pipeline_of_10000_mixed_single_and_multi_key_commands_keeps_order() {
    let server = start_meridian(SHARDS_ARG);
    let mut con = connect(&server);
    // Single-key commands (batched per shard) interleaved with multi-key commands
    // (barriers that fan out): every reply must land in its own slot, and every
    // multi-key command must see the single-key writes sent before it.
    let rounds = 2_000;
    let mut pipe = redis::pipe();
    for i in 0..rounds {
        let (a, b) = (format!("mix:a:{i}"), format!("mix:b:{i}"));
        pipe.cmd("SET").arg(&a).arg(i);
        pipe.cmd("INCR").arg(&b);
        pipe.cmd("MGET").arg(&a).arg(&b).arg(format!("mix:none:{i}"));
        pipe.cmd("INCRBY").arg(&a).arg(10);
        pipe.cmd("DEL").arg(&a).arg(&b).arg(format!("mix:none:{i}"));
    }
    let replies: Vec<Value> = pipe.query(&mut con).expect("mixed pipeline");
    assert_eq!(replies.len(), rounds * 5);
    for i in 0..rounds {
        let at = i * 5;
        assert_eq!(replies[at], Value::Okay, "SET #{i}");
        assert_eq!(replies[at + 1], Value::Int(1), "INCR #{i}");
        assert_eq!(
            replies[at + 2],
            Value::Array(vec![Value::BulkString(i.to_string().into_bytes()), Value::BulkString(b"1".to_vec()), Value::Nil]),
            "MGET #{i}"
        );
        assert_eq!(replies[at + 3], Value::Int(i as i64 + 10), "INCRBY #{i}");
        assert_eq!(replies[at + 4], Value::Int(2), "DEL #{i}");
    }
    let dbsize: i64 = redis::cmd("DBSIZE").query(&mut con).expect("DBSIZE");
    assert_eq!(dbsize, 0);
}
