//! Pipelines and commands over several shards against the real binary: each key's
//! commands keep their order and each reply its place when batches for other shards
//! leave early, with and without idle polling (`--idle-poll-us`).

mod common;

use std::time::Duration;

use common::{connect, start_meridian};
use redis::Value;

/// A pipeline long enough that remote shards' batches are sent before it ends (they
/// fill at eight operations, or wait too long behind a slow home-shard command: the
/// 1,000-element pushes), read in growing reads: every key's commands still run in
/// pipeline order, a barrier in the middle sees everything before it, and every reply
/// lands in its slot.
#[test]
fn a_long_pipeline_over_several_shards_keeps_each_keys_order_and_each_replys_place() {
    let server = start_meridian(&["--shards", "4"]);
    pipeline_over_shards_keeps_order(&mut connect(&server));
}

/// `--idle-poll-us`: shard threads and waiting connections poll before they sleep. The
/// same pipeline and fan-outs answer as without it, and shutdown still ends the threads.
#[test]
fn with_idle_polling_pipelines_and_fan_outs_answer_alike_and_the_server_stops() {
    let server = start_meridian(&["--shards", "2", "--idle-poll-us", "300"]);
    let mut con = connect(&server);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let polling: Vec<String> = redis::cmd("CONFIG").arg("GET").arg("idle-poll-us").query(&mut con).expect("CONFIG GET");
    assert_eq!(polling, ["idle-poll-us", if cores >= 2 { "300" } else { "0" }], "{cores} cores for 2 shards");
    pipeline_over_shards_keeps_order(&mut con);
    // One command at a time, each visiting both shards, with pauses longer than the
    // polling so that threads go to sleep in between and are woken again.
    for round in 0..20 {
        let keys = common::keys_spread_over_shards(&format!("poll:{round}:"), 4, 2);
        let mut mset = redis::cmd("MSET");
        keys.iter().for_each(|k| {
            mset.arg(k).arg(round);
        });
        let () = mset.query(&mut con).expect("MSET");
        let values: Vec<i64> = redis::cmd("MGET").arg(&keys).query(&mut con).expect("MGET");
        assert_eq!(values, vec![round; keys.len()]);
        if round % 5 == 0 {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    let dbsize: i64 = redis::cmd("DBSIZE").query(&mut con).expect("DBSIZE");
    assert_eq!(dbsize, 24 * 2 + 4 + 20 * 4, "the pipeline's keys and the rounds'");
    let mut server = server;
    common::send_sigterm(&server);
    assert!(common::wait_for_exit(&mut server, Duration::from_secs(10)).is_some(), "SIGTERM stops a polling server");
}

/// A connection keeps a few emptied batch buffers for its next remote batches: with
/// more shards than it keeps, pipelines of changing lengths take some batches from the
/// kept ones and allocate the rest, and no reply lands in another's slot (errors
/// included) nor is left over from an earlier pipeline.
#[test]
fn pipelines_of_changing_lengths_over_many_shards_get_their_own_replies() {
    let server = start_meridian(&["--shards", "8"]);
    let mut con = connect(&server);
    let keys = common::keys_spread_over_shards("reuse:", 64, 8);
    let () = redis::cmd("SET").arg("reuse:text").arg("not a number").query(&mut con).expect("SET");
    for (round, length) in [1, 2, 17, 1, 40, 3, 9, 1, 64, 5, 1, 30].into_iter().enumerate() {
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        for key in &keys[..length] {
            pipe.cmd("SET").arg(key).arg(format!("{key}={round}")).ignore();
            pipe.cmd("GET").arg(key);
        }
        pipe.cmd("INCR").arg("reuse:text");
        for key in keys[..length].iter().rev() {
            pipe.cmd("APPEND").arg(key).arg("!");
        }
        let replies: Vec<Value> = pipe.query(&mut con).unwrap_or_else(|e| panic!("round {round}: {e}"));
        let want_get = keys[..length].iter().map(|key| Value::BulkString(format!("{key}={round}").into_bytes()));
        let error_at = length;
        assert_eq!(replies.len(), 2 * length + 1, "round {round}");
        assert_eq!(replies[..length], want_get.collect::<Vec<_>>()[..], "round {round}: GETs");
        let in_place = matches!(&replies[error_at], Value::ServerError(e) if e.details().is_some_and(|d| d.contains("not an integer")));
        assert!(in_place, "round {round}: INCR's error in its own slot: {:?}", replies[error_at]);
        for (at, key) in keys[..length].iter().rev().enumerate() {
            let appended = format!("{key}={round}!").len() as i64;
            assert_eq!(replies[error_at + 1 + at], Value::Int(appended), "round {round}: APPEND {key}");
        }
    }
}

fn pipeline_over_shards_keeps_order(con: &mut redis::Connection) {
    let con = &mut *con;
    const KEYS: usize = 24;
    const ROUNDS: usize = 60;
    const BULK: usize = 1_000;
    let bulk: Vec<String> = (0..BULK).map(|i| format!("element-{i}")).collect();
    let mut pipe = redis::pipe();
    for round in 0..ROUNDS {
        for k in 0..KEYS {
            pipe.cmd("RPUSH").arg(format!("list:{k}")).arg(round);
            pipe.cmd("INCR").arg(format!("count:{k}"));
            pipe.cmd("GET").arg(format!("count:{k}"));
            if k % 6 == 0 {
                pipe.cmd("RPUSH").arg(format!("bulk:{k}")).arg(&bulk);
            }
        }
        if round == ROUNDS / 2 {
            pipe.cmd("DBSIZE");
        }
    }
    let replies: Vec<Value> = pipe.query(con).expect("pipeline");
    let mut replies = replies.into_iter();
    for round in 0..ROUNDS {
        for k in 0..KEYS {
            let n = round as i64 + 1;
            assert_eq!(replies.next(), Some(Value::Int(n)), "RPUSH list:{k} in round {round}");
            assert_eq!(replies.next(), Some(Value::Int(n)), "INCR count:{k} in round {round}");
            assert_eq!(replies.next(), Some(Value::BulkString(n.to_string().into_bytes())), "GET count:{k} in round {round}");
            if k % 6 == 0 {
                assert_eq!(replies.next(), Some(Value::Int(n * BULK as i64)), "RPUSH bulk:{k} in round {round}");
            }
        }
        if round == ROUNDS / 2 {
            assert_eq!(replies.next(), Some(Value::Int(2 * KEYS as i64 + KEYS as i64 / 6)), "DBSIZE after every key was written");
        }
    }
    assert_eq!(replies.next(), None);
    for k in 0..KEYS {
        let list: Vec<usize> = redis::cmd("LRANGE").arg(format!("list:{k}")).arg(0).arg(-1).query(con).expect("LRANGE");
        assert_eq!(list, (0..ROUNDS).collect::<Vec<_>>(), "list:{k} in push order");
    }
}
