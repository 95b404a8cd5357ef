//! Keyspace and TTL behaviour against the real binary: lazy and active expiry, SCAN
//! completeness under concurrent writes, and multi-key commands whose keys live on
//! different shards.

mod common;

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::{connect, eventually, key_on_shard, keys_spread_over_shards, query_error, shard_of, start_meridian};
use redis::Value;

const SHARDS: usize = 4;
const SHARDS_ARG: &[&str] = &["--shards", "4"];

fn info_field(con: &mut redis::Connection, section: &str, field: &str) -> Option<String> {
    let info: String = redis::cmd("INFO").arg(section).query(con).expect("INFO");
    info.lines().find_map(|line| line.strip_prefix(&format!("{field}:")).map(|v| v.trim().to_string()))
}

#[test]
fn a_key_set_with_px_50_reads_as_missing_once_expired() {
    let server = start_meridian(&[]);
    let mut con = connect(&server);
    let set_at = Instant::now();
    let ok: Value = redis::cmd("SET").arg("short").arg("v").arg("PX").arg(50).query(&mut con).expect("SET PX");
    assert_eq!(ok, Value::Okay);
    let pttl: i64 = redis::cmd("PTTL").arg("short").query(&mut con).expect("PTTL");
    let value: Option<String> = redis::cmd("GET").arg("short").query(&mut con).expect("GET before expiry");
    // Only judge the "before" replies if they really came before the deadline (a
    // loaded machine may take longer than 50 ms for two round trips).
    if set_at.elapsed() < Duration::from_millis(40) {
        assert!((1..=50).contains(&pttl), "PTTL right after SET PX 50 is {pttl}");
        assert_eq!(value.as_deref(), Some("v"));
    }

    std::thread::sleep(Duration::from_millis(120));
    let value: Option<String> = redis::cmd("GET").arg("short").query(&mut con).expect("GET after expiry");
    assert_eq!(value, None);
    let exists: i64 = redis::cmd("EXISTS").arg("short").query(&mut con).expect("EXISTS");
    assert_eq!(exists, 0);
    let ttl: i64 = redis::cmd("TTL").arg("short").query(&mut con).expect("TTL");
    assert_eq!(ttl, -2, "an expired key has no TTL");
}

#[test]
fn every_single_key_command_treats_an_expired_key_as_missing() {
    let server = start_meridian(SHARDS_ARG);
    let mut con = connect(&server);
    let mut pipe = redis::pipe();
    for name in ["g", "s", "i", "a", "r"] {
        pipe.cmd("SET").arg(name).arg("10").arg("PX").arg(30).ignore();
    }
    let _: () = pipe.query(&mut con).expect("SET PX 30");
    std::thread::sleep(Duration::from_millis(80));
    let strlen: i64 = redis::cmd("STRLEN").arg("s").query(&mut con).expect("STRLEN");
    assert_eq!(strlen, 0);
    let incr: i64 = redis::cmd("INCR").arg("i").query(&mut con).expect("INCR");
    assert_eq!(incr, 1, "INCR on an expired key starts from 0");
    let ttl: i64 = redis::cmd("TTL").arg("i").query(&mut con).expect("TTL");
    assert_eq!(ttl, -1, "the recreated key has no TTL");
    let len: i64 = redis::cmd("APPEND").arg("a").arg("x").query(&mut con).expect("APPEND");
    assert_eq!(len, 1);
    let err = query_error(redis::cmd("RENAME").arg("r").arg("r2"), &mut con);
    assert_eq!(err, "ERR no such key");
    let typ: String = redis::cmd("TYPE").arg("g").query(&mut con).expect("TYPE");
    assert_eq!(typ, "none");
}

#[test]
fn keys_with_ttl_that_are_never_read_are_removed_by_active_expiry() {
    let server = start_meridian(SHARDS_ARG);
    let mut con = connect(&server);
    let mut pipe = redis::pipe();
    for i in 0..2_000 {
        pipe.cmd("SET").arg(format!("volatile:{i}")).arg("x").arg("PX").arg(100).ignore();
    }
    for i in 0..10 {
        pipe.cmd("SET").arg(format!("durable:{i}")).arg("x").ignore();
    }
    let _: () = pipe.query(&mut con).expect("SET pipeline");

    // Never touch the volatile keys: only DBSIZE (which counts expired keys that are
    // still stored, as Redis does) and INFO are sent from now on.
    let started = Instant::now();
    let mut last = -1;
    let drained = eventually(Duration::from_secs(5), || {
        last = redis::cmd("DBSIZE").query(&mut con).expect("DBSIZE");
        last == 10
    });
    assert!(drained, "DBSIZE still {last} after {:?}: expired keys are not removed actively", started.elapsed());
    let expired: u64 = info_field(&mut con, "stats", "expired_keys").expect("expired_keys in INFO stats").parse().expect("a number");
    assert!(expired >= 2_000, "INFO expired_keys is {expired}, expected at least 2000");
    let keyspace: String = redis::cmd("INFO").arg("keyspace").query(&mut con).expect("INFO keyspace");
    assert!(keyspace.contains("db0:keys=10,expires=0"), "INFO keyspace after expiry: {keyspace:?}");
}

#[test]
fn scan_with_count_10_returns_every_key_despite_concurrent_inserts_and_deletes() {
    let server = start_meridian(SHARDS_ARG);
    let mut con = connect(&server);
    let originals: Vec<String> = (0..5_000).map(|i| format!("orig:{i}")).collect();
    let mut pipe = redis::pipe();
    for key in &originals {
        pipe.cmd("SET").arg(key).arg("1").ignore();
    }
    let _: () = pipe.query(&mut con).expect("load originals");

    // A writer inserts new keys (growing every shard's table directory several times)
    // and deletes older ones while the scan runs. The scanner waits for the writer to
    // make progress between SCAN calls so the two really interleave.
    let stop = Arc::new(AtomicBool::new(false));
    let writes = Arc::new(AtomicUsize::new(0));
    let mut writer_con = connect(&server);
    let writer = {
        let (stop, writes) = (stop.clone(), writes.clone());
        std::thread::spawn(move || -> Result<(), String> {
            let mut next = 0usize;
            while !stop.load(Ordering::Relaxed) {
                let mut pipe = redis::pipe();
                for _ in 0..50 {
                    pipe.cmd("SET").arg(format!("noise:{next}")).arg("n").ignore();
                    if next >= 200 && next.is_multiple_of(2) {
                        pipe.cmd("DEL").arg(format!("noise:{}", next - 200)).ignore();
                    }
                    next += 1;
                }
                pipe.query::<()>(&mut writer_con).map_err(|e| format!("writer: {e}"))?;
                writes.fetch_add(50, Ordering::Relaxed);
            }
            Ok(())
        })
    };

    let mut seen: HashSet<String> = HashSet::new();
    let mut cursor: u64 = 0;
    let mut calls = 0;
    loop {
        let before = writes.load(Ordering::Relaxed);
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN").arg(cursor).arg("COUNT").arg(10).query(&mut con).expect("SCAN");
        seen.extend(keys);
        calls += 1;
        assert!(calls < 100_000, "SCAN does not terminate");
        cursor = next;
        if cursor == 0 {
            break;
        }
        let deadline = Instant::now() + Duration::from_secs(2);
        while writes.load(Ordering::Relaxed) < before + 100 && Instant::now() < deadline && !writer.is_finished() {
            std::thread::yield_now();
        }
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().expect("writer thread").expect("writer succeeded");
    let written = writes.load(Ordering::Relaxed);
    assert!(written >= 1_000, "the writer made too little progress ({written} keys) to test anything");

    eprintln!("SCAN made {calls} calls while {written} noise keys were written");
    let missing: Vec<&String> = originals.iter().filter(|k| !seen.contains(*k)).collect();
    assert!(
        missing.is_empty(),
        "{} of 5000 keys never returned by SCAN ({calls} calls), e.g. {:?}",
        missing.len(),
        &missing[..missing.len().min(5)]
    );
}

#[test]
fn scan_match_and_type_filter_the_keys_returned() {
    let server = start_meridian(SHARDS_ARG);
    let mut con = connect(&server);
    let mut pipe = redis::pipe();
    for i in 0..100 {
        pipe.cmd("SET").arg(format!("user:{i}")).arg("u").ignore();
        pipe.cmd("SET").arg(format!("order:{i}")).arg("o").ignore();
    }
    let _: () = pipe.query(&mut con).expect("load");

    let scan_all = |con: &mut redis::Connection, extra: &[&str]| -> HashSet<String> {
        let mut seen = HashSet::new();
        let mut cursor: u64 = 0;
        for _ in 0..10_000 {
            let mut cmd = redis::cmd("SCAN");
            cmd.arg(cursor);
            for arg in extra {
                cmd.arg(*arg);
            }
            let (next, keys): (u64, Vec<String>) = cmd.query(con).expect("SCAN");
            seen.extend(keys);
            cursor = next;
            if cursor == 0 {
                return seen;
            }
        }
        panic!("SCAN {extra:?} does not terminate");
    };

    let users: HashSet<String> = (0..100).map(|i| format!("user:{i}")).collect();
    assert_eq!(scan_all(&mut con, &["MATCH", "user:*"]), users);
    assert_eq!(scan_all(&mut con, &["MATCH", "user:*", "COUNT", "7"]), users);
    let ones: HashSet<String> = ["user:1", "order:1"].iter().map(|s| s.to_string()).collect();
    assert_eq!(scan_all(&mut con, &["MATCH", "*:1"]), ones);
    assert_eq!(scan_all(&mut con, &["TYPE", "string"]).len(), 200);
    assert!(scan_all(&mut con, &["TYPE", "hash"]).is_empty(), "no hashes exist");
    assert_eq!(scan_all(&mut con, &["MATCH", "order:?", "TYPE", "string"]).len(), 10);
    assert!(scan_all(&mut con, &["MATCH", "nothing*"]).is_empty());
}

#[test]
fn rename_across_shards_moves_value_and_ttl() {
    let server = start_meridian(SHARDS_ARG);
    let mut con = connect(&server);
    let src = key_on_shard("src:", 0, SHARDS);
    let dst = key_on_shard("dst:", 3, SHARDS);
    let ok: Value = redis::cmd("SET").arg(&src).arg("payload").arg("EX").arg(100).query(&mut con).expect("SET EX");
    assert_eq!(ok, Value::Okay);

    let ok: Value = redis::cmd("RENAME").arg(&src).arg(&dst).query(&mut con).expect("RENAME");
    assert_eq!(ok, Value::Okay);
    let value: Option<String> = redis::cmd("GET").arg(&dst).query(&mut con).expect("GET dst");
    assert_eq!(value.as_deref(), Some("payload"));
    let ttl: i64 = redis::cmd("TTL").arg(&dst).query(&mut con).expect("TTL dst");
    assert!((95..=100).contains(&ttl), "TTL moved with the key, got {ttl}");
    let exists: i64 = redis::cmd("EXISTS").arg(&src).query(&mut con).expect("EXISTS src");
    assert_eq!(exists, 0, "the source is gone");

    // RENAME over an existing key on another shard replaces it, TTL included.
    let other = key_on_shard("other:", 1, SHARDS);
    let _: () = redis::cmd("SET").arg(&other).arg("plain").query(&mut con).expect("SET other");
    let ok: Value = redis::cmd("RENAME").arg(&other).arg(&dst).query(&mut con).expect("RENAME over existing");
    assert_eq!(ok, Value::Okay);
    let value: String = redis::cmd("GET").arg(&dst).query(&mut con).expect("GET dst");
    assert_eq!(value, "plain");
    let ttl: i64 = redis::cmd("TTL").arg(&dst).query(&mut con).expect("TTL dst");
    assert_eq!(ttl, -1, "the renamed key had no TTL, so the destination has none");

    // RENAMENX refuses an existing destination on another shard and changes nothing.
    let _: () = redis::cmd("SET").arg(&src).arg("again").query(&mut con).expect("SET src");
    let renamed: i64 = redis::cmd("RENAMENX").arg(&src).arg(&dst).query(&mut con).expect("RENAMENX");
    assert_eq!(renamed, 0);
    let values: Vec<String> = redis::cmd("MGET").arg(&src).arg(&dst).query(&mut con).expect("MGET");
    assert_eq!(values, vec!["again", "plain"]);

    let err = query_error(redis::cmd("RENAME").arg("no-such-key").arg(&dst), &mut con);
    assert_eq!(err, "ERR no such key");
}

#[test]
fn copy_across_shards_keeps_value_and_ttl_and_honours_replace() {
    let server = start_meridian(SHARDS_ARG);
    let mut con = connect(&server);
    let src = key_on_shard("csrc:", 2, SHARDS);
    let dst = key_on_shard("cdst:", 1, SHARDS);
    let _: () = redis::cmd("SET").arg(&src).arg("one").arg("PX").arg(100_000).query(&mut con).expect("SET PX");

    let copied: i64 = redis::cmd("COPY").arg(&src).arg(&dst).query(&mut con).expect("COPY");
    assert_eq!(copied, 1);
    let values: Vec<String> = redis::cmd("MGET").arg(&src).arg(&dst).query(&mut con).expect("MGET");
    assert_eq!(values, vec!["one", "one"], "COPY keeps the source");
    let pttl: i64 = redis::cmd("PTTL").arg(&dst).query(&mut con).expect("PTTL dst");
    assert!((95_000..=100_000).contains(&pttl), "the copy keeps the TTL, got {pttl}");

    let _: () = redis::cmd("SET").arg(&src).arg("two").query(&mut con).expect("SET src");
    let copied: i64 = redis::cmd("COPY").arg(&src).arg(&dst).query(&mut con).expect("COPY onto existing");
    assert_eq!(copied, 0, "COPY without REPLACE does not overwrite");
    let value: String = redis::cmd("GET").arg(&dst).query(&mut con).expect("GET dst");
    assert_eq!(value, "one");

    let copied: i64 = redis::cmd("COPY").arg(&src).arg(&dst).arg("REPLACE").query(&mut con).expect("COPY REPLACE");
    assert_eq!(copied, 1);
    let value: String = redis::cmd("GET").arg(&dst).query(&mut con).expect("GET dst");
    assert_eq!(value, "two");
    let ttl: i64 = redis::cmd("TTL").arg(&dst).query(&mut con).expect("TTL dst");
    assert_eq!(ttl, -1, "the replacing copy carries the source's (absent) TTL");

    let copied: i64 = redis::cmd("COPY").arg("no-such-key").arg(&dst).query(&mut con).expect("COPY missing");
    assert_eq!(copied, 0);
}

#[test]
fn del_and_exists_count_keys_on_every_shard() {
    let server = start_meridian(SHARDS_ARG);
    let mut con = connect(&server);
    let keys = keys_spread_over_shards("count:", 40, SHARDS);
    let mut mset = redis::cmd("MSET");
    for key in &keys {
        mset.arg(key).arg("x");
    }
    let _: () = mset.query(&mut con).expect("MSET");

    let exists: i64 = redis::cmd("EXISTS").arg(&keys).arg("missing-1").arg("missing-2").query(&mut con).expect("EXISTS");
    assert_eq!(exists, 40);
    // EXISTS counts a key once per mention, as Redis does.
    let exists: i64 = redis::cmd("EXISTS").arg(&keys[0]).arg(&keys[0]).arg(&keys[1]).query(&mut con).expect("EXISTS repeated");
    assert_eq!(exists, 3);
    let touched: i64 = redis::cmd("TOUCH").arg(&keys).arg("missing").query(&mut con).expect("TOUCH");
    assert_eq!(touched, 40);

    // DEL counts keys actually removed: repeats and missing keys add nothing.
    let deleted: i64 = redis::cmd("DEL").arg(&keys[..20]).arg(&keys[0]).arg("missing").query(&mut con).expect("DEL");
    assert_eq!(deleted, 20);
    let deleted: i64 = redis::cmd("UNLINK").arg(&keys).query(&mut con).expect("UNLINK");
    assert_eq!(deleted, 20);
    let dbsize: i64 = redis::cmd("DBSIZE").query(&mut con).expect("DBSIZE");
    assert_eq!(dbsize, 0);
}

#[test]
fn hash_tagged_keys_share_a_shard_and_multi_key_commands_on_them_work() {
    let server = start_meridian(SHARDS_ARG);
    let mut con = connect(&server);
    let tagged = ["{user}:name", "{user}:email", "{user}:visits", "x{user}y"];
    let home = shard_of(tagged[0].as_bytes(), SHARDS);
    assert!(tagged.iter().all(|k| shard_of(k.as_bytes(), SHARDS) == home), "hash tags pick one shard");

    let ok: Value =
        redis::cmd("MSET").arg("{user}:name").arg("ada").arg("{user}:email").arg("ada@example.com").query(&mut con).expect("MSET");
    assert_eq!(ok, Value::Okay);
    let visits: i64 = redis::cmd("INCRBY").arg("{user}:visits").arg(5).query(&mut con).expect("INCRBY");
    assert_eq!(visits, 5);
    let values: Vec<String> = redis::cmd("MGET").arg(&tagged[..3]).query(&mut con).expect("MGET");
    assert_eq!(values, vec!["ada", "ada@example.com", "5"]);

    let set: i64 = redis::cmd("MSETNX").arg("{user}:a").arg("1").arg("{user}:name").arg("bob").query(&mut con).expect("MSETNX");
    assert_eq!(set, 0);
    let exists: i64 = redis::cmd("EXISTS").arg("{user}:a").query(&mut con).expect("EXISTS");
    assert_eq!(exists, 0);

    let ok: Value = redis::cmd("RENAME").arg("{user}:email").arg("x{user}y").query(&mut con).expect("RENAME in tag");
    assert_eq!(ok, Value::Okay);
    let value: String = redis::cmd("GET").arg("x{user}y").query(&mut con).expect("GET renamed");
    assert_eq!(value, "ada@example.com");

    // Keys differing only outside the tag are different keys.
    let names: Vec<Option<String>> = redis::cmd("MGET").arg("{user}:name").arg("{user}:name2").query(&mut con).expect("MGET");
    assert_eq!(names, vec![Some("ada".to_string()), None]);
    let deleted: i64 = redis::cmd("DEL").arg("{user}:name").arg("{user}:visits").arg("x{user}y").query(&mut con).expect("DEL");
    assert_eq!(deleted, 3);
}

#[test]
fn expire_family_sets_reads_and_clears_ttls() {
    let server = start_meridian(&[]);
    let mut con = connect(&server);
    let _: () = redis::cmd("SET").arg("k").arg("v").query(&mut con).expect("SET");
    let ttl: i64 = redis::cmd("TTL").arg("k").query(&mut con).expect("TTL");
    assert_eq!(ttl, -1);
    let ttl: i64 = redis::cmd("TTL").arg("missing").query(&mut con).expect("TTL missing");
    assert_eq!(ttl, -2);
    let set: i64 = redis::cmd("EXPIRE").arg("missing").arg(10).query(&mut con).expect("EXPIRE missing");
    assert_eq!(set, 0);

    let set: i64 = redis::cmd("EXPIRE").arg("k").arg(100).query(&mut con).expect("EXPIRE");
    assert_eq!(set, 1);
    let ttl: i64 = redis::cmd("TTL").arg("k").query(&mut con).expect("TTL");
    assert!((99..=100).contains(&ttl), "TTL {ttl}");
    let set: i64 = redis::cmd("EXPIRE").arg("k").arg(50).arg("GT").query(&mut con).expect("EXPIRE GT");
    assert_eq!(set, 0, "GT refuses a shorter TTL");
    let set: i64 = redis::cmd("PEXPIRE").arg("k").arg(50_000).arg("LT").query(&mut con).expect("PEXPIRE LT");
    assert_eq!(set, 1);
    let pttl: i64 = redis::cmd("PTTL").arg("k").query(&mut con).expect("PTTL");
    assert!((49_000..=50_000).contains(&pttl), "PTTL {pttl}");

    let now_s = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock").as_secs() as i64;
    let set: i64 = redis::cmd("EXPIREAT").arg("k").arg(now_s + 1_000).query(&mut con).expect("EXPIREAT");
    assert_eq!(set, 1);
    let at: i64 = redis::cmd("EXPIRETIME").arg("k").query(&mut con).expect("EXPIRETIME");
    assert_eq!(at, now_s + 1_000);
    let at_ms: i64 = redis::cmd("PEXPIRETIME").arg("k").query(&mut con).expect("PEXPIRETIME");
    assert_eq!(at_ms, (now_s + 1_000) * 1_000);

    let cleared: i64 = redis::cmd("PERSIST").arg("k").query(&mut con).expect("PERSIST");
    assert_eq!(cleared, 1);
    let cleared: i64 = redis::cmd("PERSIST").arg("k").query(&mut con).expect("PERSIST again");
    assert_eq!(cleared, 0);
    let ttl: i64 = redis::cmd("TTL").arg("k").query(&mut con).expect("TTL");
    assert_eq!(ttl, -1);

    // A TTL in the past deletes the key at once.
    let set: i64 = redis::cmd("PEXPIREAT").arg("k").arg(1).query(&mut con).expect("PEXPIREAT past");
    assert_eq!(set, 1);
    let exists: i64 = redis::cmd("EXISTS").arg("k").query(&mut con).expect("EXISTS");
    assert_eq!(exists, 0);

    // SET clears a TTL unless KEEPTTL; GETEX PERSIST clears it too.
    let _: () = redis::cmd("SET").arg("t").arg("1").arg("EX").arg(100).query(&mut con).expect("SET EX");
    let _: () = redis::cmd("SET").arg("t").arg("2").arg("KEEPTTL").query(&mut con).expect("SET KEEPTTL");
    let ttl: i64 = redis::cmd("TTL").arg("t").query(&mut con).expect("TTL");
    assert!(ttl > 0, "KEEPTTL keeps the TTL, got {ttl}");
    let _: () = redis::cmd("SET").arg("t").arg("3").query(&mut con).expect("SET");
    let ttl: i64 = redis::cmd("TTL").arg("t").query(&mut con).expect("TTL");
    assert_eq!(ttl, -1, "plain SET clears the TTL");
    let value: String = redis::cmd("GETEX").arg("t").arg("EX").arg(30).query(&mut con).expect("GETEX EX");
    assert_eq!(value, "3");
    let ttl: i64 = redis::cmd("TTL").arg("t").query(&mut con).expect("TTL");
    assert!((29..=30).contains(&ttl), "GETEX set TTL {ttl}");
    let _: String = redis::cmd("GETEX").arg("t").arg("PERSIST").query(&mut con).expect("GETEX PERSIST");
    let ttl: i64 = redis::cmd("TTL").arg("t").query(&mut con).expect("TTL");
    assert_eq!(ttl, -1);
}

#[test]
fn keys_whose_ttl_was_extended_removed_or_overwritten_outlive_their_first_deadline() {
    let server = start_meridian(SHARDS_ARG);
    let mut con = connect(&server);
    let mut pipe = redis::pipe();
    for i in 0..300 {
        pipe.cmd("SET").arg(format!("ext:{i}")).arg("x").arg("PX").arg(400).ignore();
        pipe.cmd("SET").arg(format!("per:{i}")).arg("x").arg("PX").arg(400).ignore();
        pipe.cmd("SET").arg(format!("ovr:{i}")).arg("x").arg("PX").arg(400).ignore();
        pipe.cmd("SET").arg(format!("die:{i}")).arg("x").arg("PX").arg(400).ignore();
    }
    for i in 0..300 {
        pipe.cmd("PEXPIRE").arg(format!("ext:{i}")).arg(60_000).ignore();
        pipe.cmd("PERSIST").arg(format!("per:{i}")).ignore();
        pipe.cmd("SET").arg(format!("ovr:{i}")).arg("y").ignore();
    }
    let _: () = pipe.query(&mut con).expect("pipeline");
    // Wait (without touching any key) until active expiry has removed the 300 keys
    // that kept their TTL; the other 900 must all still be there.
    let mut dbsize = -1;
    let settled = eventually(Duration::from_secs(5), || {
        dbsize = redis::cmd("DBSIZE").query(&mut con).expect("DBSIZE");
        dbsize <= 900
    });
    assert!(settled, "DBSIZE stuck at {dbsize}");
    std::thread::sleep(Duration::from_millis(300));
    let dbsize: i64 = redis::cmd("DBSIZE").query(&mut con).expect("DBSIZE");
    assert_eq!(dbsize, 900, "a stale expiry deadline removed a key that no longer had it");
    let keyspace: String = redis::cmd("INFO").arg("keyspace").query(&mut con).expect("INFO keyspace");
    assert!(keyspace.contains("db0:keys=900,expires=300,"), "{keyspace:?}");
    let ttl: i64 = redis::cmd("PTTL").arg("ext:7").query(&mut con).expect("PTTL");
    assert!(ttl > 50_000, "extended TTL {ttl}");
}

#[test]
fn keys_renamed_or_copied_across_shards_still_expire_actively() {
    let server = start_meridian(SHARDS_ARG);
    let mut con = connect(&server);
    let src = key_on_shard("mv-src:", 0, SHARDS);
    let dst = key_on_shard("mv-dst:", 3, SHARDS);
    let copy_src = key_on_shard("cp-src:", 1, SHARDS);
    let copy_dst = key_on_shard("cp-dst:", 2, SHARDS);
    let _: () = redis::cmd("SET").arg(&src).arg("v").arg("PX").arg(500).query(&mut con).expect("SET src");
    let _: () = redis::cmd("SET").arg(&copy_src).arg("v").arg("PX").arg(500).query(&mut con).expect("SET copy src");
    let _: () = redis::cmd("RENAME").arg(&src).arg(&dst).query(&mut con).expect("RENAME");
    let copied: i64 = redis::cmd("COPY").arg(&copy_src).arg(&copy_dst).query(&mut con).expect("COPY");
    assert_eq!(copied, 1);
    let keyspace: String = redis::cmd("INFO").arg("keyspace").query(&mut con).expect("INFO keyspace");
    assert!(keyspace.contains("db0:keys=3,expires=3,"), "{keyspace:?}");
    let mut dbsize = -1;
    let drained = eventually(Duration::from_secs(5), || {
        dbsize = redis::cmd("DBSIZE").query(&mut con).expect("DBSIZE");
        dbsize == 0
    });
    assert!(drained, "moved or copied keys with a TTL were never removed (DBSIZE {dbsize})");
}

/// DEL and UNLINK of a large collection hand its emptied table to the lazy-free thread
/// (INFO counts it), the key is gone at once, and a small collection is freed in place;
/// EXPIRE and PERSIST on a large hash change its TTL in place and keep every field.
#[test]
fn large_collections_are_freed_off_the_shard_and_ttl_writes_keep_their_elements() {
    let server = start_meridian(&[]);
    let mut con = connect(&server);
    let members: Vec<String> = (0..1000).map(|i| format!("m{i}")).collect();
    let fields: Vec<(String, String)> = (0..1000).map(|i| (format!("f{i}"), format!("v{i}"))).collect();
    let freed_before = info_field(&mut con, "stats", "lazyfreed_objects").expect("lazyfreed_objects").parse::<u64>().unwrap();

    let _: i64 = redis::cmd("SADD").arg("big").arg(&members).query(&mut con).expect("SADD");
    let _: i64 = redis::cmd("SADD").arg("small").arg(&members[..10]).query(&mut con).expect("SADD");
    let _: i64 = redis::cmd("HSET").arg("bighash").arg(&fields).query(&mut con).expect("HSET");

    // A TTL write keeps the elements, and PERSIST takes the TTL off again.
    let set: i64 = redis::cmd("EXPIRE").arg("bighash").arg(100).query(&mut con).expect("EXPIRE");
    assert_eq!(set, 1);
    let ttl: i64 = redis::cmd("TTL").arg("bighash").query(&mut con).expect("TTL");
    assert!((1..=100).contains(&ttl), "TTL after EXPIRE 100 is {ttl}");
    let len: i64 = redis::cmd("HLEN").arg("bighash").query(&mut con).expect("HLEN");
    assert_eq!(len, 1000);
    let persisted: i64 = redis::cmd("PERSIST").arg("bighash").query(&mut con).expect("PERSIST");
    assert_eq!(persisted, 1);
    let ttl: i64 = redis::cmd("TTL").arg("bighash").query(&mut con).expect("TTL");
    assert_eq!(ttl, -1);
    let value: Option<String> = redis::cmd("HGET").arg("bighash").arg("f999").query(&mut con).expect("HGET");
    assert_eq!(value.as_deref(), Some("v999"));

    let removed: i64 = redis::cmd("UNLINK").arg("big").arg("small").query(&mut con).expect("UNLINK");
    assert_eq!(removed, 2);
    let removed: i64 = redis::cmd("DEL").arg("bighash").query(&mut con).expect("DEL");
    assert_eq!(removed, 1);
    let exists: i64 = redis::cmd("EXISTS").arg("big").arg("small").arg("bighash").query(&mut con).expect("EXISTS");
    assert_eq!(exists, 0, "removed keys are gone at once, whoever frees their memory");
    let card: i64 = redis::cmd("SCARD").arg("big").query(&mut con).expect("SCARD");
    assert_eq!(card, 0);
    // The two large ones went to the freeing thread; the 10-member set did not.
    assert!(
        eventually(Duration::from_secs(5), || {
            let freed = info_field(&mut con, "stats", "lazyfreed_objects").unwrap().parse::<u64>().unwrap();
            freed == freed_before + 2
        }),
        "lazyfreed_objects went from {freed_before} to {:?}",
        info_field(&mut con, "stats", "lazyfreed_objects")
    );
    let pending = info_field(&mut con, "memory", "lazyfree_pending_objects").expect("lazyfree_pending_objects");
    assert_eq!(pending, "0");
    // The key can be written again from scratch.
    let _: i64 = redis::cmd("SADD").arg("big").arg("again").query(&mut con).expect("SADD after UNLINK");
    let all: Vec<String> = redis::cmd("SMEMBERS").arg("big").query(&mut con).expect("SMEMBERS");
    assert_eq!(all, vec!["again".to_string()]);
}

fn memory_usage(con: &mut redis::Connection, key: &str) -> i64 {
    redis::cmd("MEMORY").arg("USAGE").arg(key).query(con).expect("MEMORY USAGE")
}

/// The compact form of small hashes and sets follows `CONFIG SET` of Redis's listpack
/// settings: a hash past `hash-max-listpack-entries` or `-value`, or a set past
/// `set-max-intset-entries`, leaves it at its next write (as Redis converts), and a
/// removal that brings it back within the limits packs it again. MEMORY USAGE tells the
/// forms apart (the packed bytes, or an entry's cost per element).
#[test]
fn the_packed_form_of_small_hashes_and_sets_follows_config_set() {
    let server = start_meridian(&[]);
    let mut con = connect(&server);
    // Keys of one length: MEMORY USAGE counts the key too.
    let fields: Vec<(String, String)> = (0..10).map(|i| (format!("f{i}"), format!("v{i}"))).collect();
    let config_set = |con: &mut redis::Connection, name: &str, value: &str| {
        let ok: String = redis::cmd("CONFIG").arg("SET").arg(name).arg(value).query(con).expect("CONFIG SET");
        assert_eq!(ok, "OK");
    };

    let _: i64 = redis::cmd("HSET").arg("ha").arg(&fields).query(&mut con).expect("HSET");
    let packed = memory_usage(&mut con, "ha");

    config_set(&mut con, "hash-max-listpack-entries", "0");
    let _: i64 = redis::cmd("HSET").arg("hb").arg(&fields).query(&mut con).expect("HSET");
    let unpacked = memory_usage(&mut con, "hb");
    assert!(unpacked > packed, "a hash written past the limit is not packed: {unpacked} vs {packed} bytes");
    let encoding: String = redis::cmd("OBJECT").arg("ENCODING").arg("hb").query(&mut con).expect("OBJECT ENCODING");
    assert_eq!(encoding, "hashtable");

    // The packed hash leaves its form at its next write, as Redis converts.
    let _: i64 = redis::cmd("HSET").arg("ha").arg("f10").arg("v10").query(&mut con).expect("HSET");
    let _: i64 = redis::cmd("HSET").arg("hb").arg("f10").arg("v10").query(&mut con).expect("HSET");
    assert_eq!(memory_usage(&mut con, "ha"), memory_usage(&mut con, "hb"), "the same fields in the same form");
    assert!(memory_usage(&mut con, "ha") > packed);

    // Back within the limits, a removal packs it again.
    config_set(&mut con, "hash-max-listpack-entries", "128");
    let _: i64 = redis::cmd("HDEL").arg("hb").arg("f10").query(&mut con).expect("HDEL");
    assert_eq!(memory_usage(&mut con, "hb"), packed, "ten fields written at one dot, packed");

    // A value longer than hash-max-listpack-value keeps a hash out of the packed form.
    config_set(&mut con, "hash-max-listpack-value", "4");
    let _: i64 = redis::cmd("HSET").arg("hc").arg(&fields[..9]).arg("f9").arg("v9-long").query(&mut con).expect("HSET");
    let _: i64 = redis::cmd("HSET").arg("hd").arg(&fields).query(&mut con).expect("HSET");
    assert_eq!(memory_usage(&mut con, "hd"), packed);
    assert!(memory_usage(&mut con, "hc") > packed + 3);
    config_set(&mut con, "hash-max-listpack-value", "64");

    // Sets follow set-max-intset-entries.
    let members: Vec<String> = (0..10).map(|i| format!("m{i}")).collect();
    let _: i64 = redis::cmd("SADD").arg("sa").arg(&members).query(&mut con).expect("SADD");
    config_set(&mut con, "set-max-intset-entries", "5");
    let _: i64 = redis::cmd("SADD").arg("sb").arg(&members).query(&mut con).expect("SADD");
    assert!(memory_usage(&mut con, "sb") > memory_usage(&mut con, "sa"));
    let members_back: HashSet<String> = redis::cmd("SMEMBERS").arg("sb").query(&mut con).expect("SMEMBERS");
    assert_eq!(members_back, members.iter().cloned().collect::<HashSet<_>>());
}
