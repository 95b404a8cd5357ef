//! MULTI/EXEC/WATCH on real `meridian` processes with a real client: transactions
//! across shards are atomic on the node (no reader ever sees half of one), WATCH is
//! aborted by another client's write and by a write merged from another region, and a
//! single-shard transaction reaches another region in one step.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::cluster::Cluster;
use common::{connect, eventually, keys_spread_over_shards, start_meridian};

const SHARDS: usize = 4;

fn exec_pair(con: &mut redis::Connection, cmds: &[(&str, &str)]) -> Option<Vec<redis::Value>> {
    let mut pipe = redis::pipe();
    pipe.atomic();
    for (name, key) in cmds {
        pipe.cmd(name).arg(*key);
    }
    pipe.query(con).expect("EXEC")
}

#[test]
fn a_transaction_across_shards_is_never_seen_half_done() {
    let server = start_meridian(&["--shards", &SHARDS.to_string(), "--persistence", "off"]);
    let keys = keys_spread_over_shards("tx", 4, SHARDS);
    // The reader reads every key in one transaction (MGET alone is per-shard parts, not
    // atomic as a whole).
    common::assert_never_seen_half_done(
        &server,
        &keys,
        "transaction",
        |con, keys| {
            let cmds: Vec<(&str, &str)> = keys.iter().map(|k| ("INCR", k.as_str())).collect();
            exec_pair(con, &cmds).expect("no WATCH: EXEC always runs");
        },
        |con, keys| {
            let cmds: Vec<(&str, &str)> = keys.iter().map(|k| ("GET", k.as_str())).collect();
            exec_pair(con, &cmds).expect("EXEC").into_iter().map(|v| redis::from_redis_value(v).expect("an integer or nil")).collect()
        },
    );
}

#[test]
fn watch_is_aborted_by_another_clients_write_and_not_by_reads() {
    let server = start_meridian(&["--shards", &SHARDS.to_string(), "--persistence", "off"]);
    let (mut a, mut b) = (connect(&server), connect(&server));
    let keys = keys_spread_over_shards("w", 2, SHARDS);
    redis::cmd("SET").arg(&keys[0]).arg("1").query::<()>(&mut a).unwrap();

    redis::cmd("WATCH").arg(&keys[0]).arg(&keys[1]).query::<()>(&mut a).unwrap();
    let _: Option<String> = redis::cmd("GET").arg(&keys[0]).query(&mut b).unwrap();
    let ran = exec_pair(&mut a, &[("INCR", &keys[0]), ("INCR", &keys[1])]);
    assert!(ran.is_some(), "a read does not abort a WATCH");

    redis::cmd("WATCH").arg(&keys[1]).query::<()>(&mut a).unwrap();
    redis::cmd("SET").arg(&keys[1]).arg("x").query::<()>(&mut b).unwrap();
    assert_eq!(exec_pair(&mut a, &[("INCR", &keys[0])]), None, "another client's write aborts EXEC");
    let value: String = redis::cmd("GET").arg(&keys[0]).query(&mut a).unwrap();
    assert_eq!(value, "2", "the aborted transaction ran nothing");

    // An expiry is a change too.
    redis::cmd("SET").arg(&keys[0]).arg("v").arg("PX").arg("50").query::<()>(&mut a).unwrap();
    redis::cmd("WATCH").arg(&keys[0]).query::<()>(&mut a).unwrap();
    std::thread::sleep(Duration::from_millis(120));
    assert_eq!(exec_pair(&mut a, &[("GET", &keys[1])]), None, "a watched key that expired aborts EXEC");
}

#[test]
fn watch_is_aborted_by_a_write_merged_from_another_region() {
    let cluster = Cluster::start(2, &["--persistence", "off"]);
    let (mut here, mut there) = (cluster.con(0), cluster.con(1));
    redis::cmd("SET").arg("balance").arg("10").query::<()>(&mut here).unwrap();
    assert!(eventually(Duration::from_secs(20), || {
        redis::cmd("GET").arg("balance").query::<Option<String>>(&mut there).unwrap().as_deref() == Some("10")
    }));
    redis::cmd("WATCH").arg("balance").query::<()>(&mut here).unwrap();
    redis::cmd("INCRBY").arg("balance").arg("5").query::<()>(&mut there).unwrap();
    let mut probe = cluster.con(0);
    assert!(
        eventually(Duration::from_secs(20), || redis::cmd("GET").arg("balance").query::<String>(&mut probe).unwrap() == "15"),
        "the write from the other region arrives"
    );
    assert_eq!(exec_pair(&mut here, &[("INCR", "balance")]), None, "a merged write aborts EXEC like a local one");
    assert_eq!(redis::cmd("GET").arg("balance").query::<String>(&mut here).unwrap(), "15");
}

#[test]
fn a_single_shard_transaction_reaches_another_region_in_one_step() {
    let cluster = Cluster::start(2, &["--persistence", "off", "--shards", "2"]);
    let mut writer = cluster.con(0);
    let mut reader = cluster.con(1);
    const ROUNDS: i64 = 300;
    let done = Arc::new(AtomicBool::new(false));
    let write_done = done.clone();
    let write = std::thread::spawn(move || {
        for i in 1..=ROUNDS {
            let mut pipe = redis::pipe();
            pipe.atomic().cmd("SET").arg("{acct}a").arg(i).cmd("SET").arg("{acct}b").arg(i).cmd("SET").arg("{acct}c").arg(i);
            pipe.query::<()>(&mut writer).expect("EXEC");
        }
        write_done.store(true, Ordering::Relaxed);
    });
    // MGET of keys on one shard is atomic on that shard: it sees each merged
    // transaction whole or not at all.
    let mut last = 0;
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        let values: Vec<Option<i64>> = redis::cmd("MGET").arg("{acct}a").arg("{acct}b").arg("{acct}c").query(&mut reader).unwrap();
        assert!(values.windows(2).all(|w| w[0] == w[1]), "a reader in the other region saw half a transaction: {values:?}");
        last = values[0].unwrap_or(0);
        if done.load(Ordering::Relaxed) && last == ROUNDS {
            break;
        }
    }
    write.join().unwrap();
    assert_eq!(last, ROUNDS, "every transaction arrived");
}

#[test]
fn queueing_errors_and_errors_inside_exec_are_redis_s() {
    let server = start_meridian(&["--persistence", "off"]);
    let mut con = connect(&server);
    redis::cmd("MULTI").query::<()>(&mut con).unwrap();
    let queued: String = redis::cmd("SET").arg("k").arg("v").query(&mut con).unwrap();
    assert_eq!(queued, "QUEUED");
    let err = redis::cmd("GET").query::<()>(&mut con).unwrap_err();
    assert!(common::error_text(&err).contains("wrong number of arguments for 'get' command"), "{err}");
    let err = redis::cmd("EXEC").query::<()>(&mut con).unwrap_err();
    assert!(common::error_text(&err).starts_with("EXECABORT"), "{err}");
    assert_eq!(redis::cmd("EXISTS").arg("k").query::<i64>(&mut con).unwrap(), 0, "an aborted transaction ran nothing");
    // A runtime error fails its own command only.
    redis::cmd("SET").arg("s").arg("text").query::<()>(&mut con).unwrap();
    let mut pipe = redis::pipe();
    pipe.atomic().cmd("INCR").arg("s").ignore().cmd("SET").arg("k").arg("v").ignore();
    assert!(pipe.query::<()>(&mut con).is_err(), "INCR of a non-integer fails inside EXEC");
    assert_eq!(redis::cmd("GET").arg("k").query::<String>(&mut con).unwrap(), "v", "the other command ran");
}
