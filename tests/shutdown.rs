//! SHUTDOWN on the real binary: it stops the node as SIGTERM does (the last segment is
//! stored first, so a restart finds every acknowledged write), the asking client sees
//! its connection close rather than a reply (as Redis), bad options get Redis's errors
//! and leave the node running, and no write is acknowledged after the final store
//! (writers racing the shutdown lose nothing they were told was done).

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::{TempDir, connect, is_alive, query_error, read_log, start_meridian_at, wait_claimed, wait_for_exit};

fn shutdown_and_wait(server: &mut common::ServerGuard, log: &std::path::Path) {
    let mut con = connect(server);
    let reply: redis::RedisResult<redis::Value> = redis::cmd("SHUTDOWN").query(&mut con);
    let error = reply.expect_err("SHUTDOWN gets no reply: the connection closes");
    assert!(error.is_io_error() || error.is_connection_dropped() || error.is_unrecoverable_error(), "{error:?}");
    let status = wait_for_exit(server, Duration::from_secs(15)).expect("meridian exits after SHUTDOWN");
    assert!(status.success(), "clean shutdown: {status}; log:\n{}", read_log(log));
}

#[test]
fn shutdown_stores_pending_writes_and_the_process_exits_cleanly() {
    let dir = TempDir::new("shutdown-stores");
    let (data, log) = (dir.path.join("data"), dir.path.join("first.log"));
    // A flush interval far longer than the test: only the shutdown's store can keep them.
    let mut server = start_meridian_at(&data, &["--flush-interval-ms", "60000"], &[], &log);
    let mut con = connect(&server);
    wait_claimed(&mut con);
    let _: () = redis::cmd("SET").arg("k").arg("v").query(&mut con).unwrap();
    let _: i64 = redis::cmd("HSET").arg("h").arg("f").arg("1").query(&mut con).unwrap();
    let _: i64 = redis::cmd("RPUSH").arg("l").arg("a").arg("b").query(&mut con).unwrap();
    shutdown_and_wait(&mut server, &log);

    let second = start_meridian_at(&data, &[], &[], &dir.path.join("second.log"));
    let mut con = connect(&second);
    let value: Option<String> = redis::cmd("GET").arg("k").query(&mut con).unwrap();
    assert_eq!(value.as_deref(), Some("v"));
    let field: Option<String> = redis::cmd("HGET").arg("h").arg("f").query(&mut con).unwrap();
    assert_eq!(field.as_deref(), Some("1"));
    let list: Vec<String> = redis::cmd("LRANGE").arg("l").arg(0).arg(-1).query(&mut con).unwrap();
    assert_eq!(list, ["a", "b"]);
}

#[test]
fn bad_shutdown_options_get_redis_errors_and_the_node_keeps_serving() {
    let dir = TempDir::new("shutdown-errors");
    let mut server = start_meridian_at(&dir.path.join("data"), &[], &[], &dir.path.join("node.log"));
    let mut con = connect(&server);
    let syntax = "ERR syntax error";
    for args in [&["FOO"][..], &["SAVE", "NOSAVE"], &["ABORT", "NOW"], &["NOSAVE", "ABORT"], &["NOW", "NOW", "NOW", "NOW", "NOW", "NOW"]] {
        let mut cmd = redis::cmd("SHUTDOWN");
        cmd.arg(args);
        assert_eq!(query_error(&cmd, &mut con), syntax, "SHUTDOWN {args:?}");
    }
    // A shutdown never waits (for replicas or a save), so there is none to abort.
    assert_eq!(query_error(redis::cmd("SHUTDOWN").arg("ABORT"), &mut con), "ERR No shutdown in progress.");
    // As Redis 7: refused inside MULTI, which then aborts.
    let _: () = redis::cmd("MULTI").query(&mut con).unwrap();
    assert_eq!(query_error(&redis::cmd("SHUTDOWN"), &mut con), "ERR Command not allowed inside a transaction");
    assert!(query_error(&redis::cmd("EXEC"), &mut con).starts_with("EXECABORT"));
    // COMMAND INFO reports it as Redis does.
    let info: redis::Value = redis::cmd("COMMAND").arg("INFO").arg("shutdown").query(&mut con).unwrap();
    assert!(format!("{info:?}").contains("no_multi"), "{info:?}");
    assert!(is_alive(&mut server), "the node still runs");
    let pong: String = redis::cmd("PING").query(&mut con).unwrap();
    assert_eq!(pong, "PONG");
}

/// Writers that keep writing while SHUTDOWN runs: every increment a writer saw
/// acknowledged is in the data the next process recovers. Without the refusal of client
/// commands once the node stops serving, writes acknowledged while the final segment
/// is being stored would be lost.
#[test]
fn no_write_is_acknowledged_after_the_final_store() {
    const WRITERS: usize = 4;
    let dir = TempDir::new("shutdown-race");
    let (data, log) = (dir.path.join("data"), dir.path.join("first.log"));
    let mut server = start_meridian_at(&data, &["--shards", "2", "--flush-interval-ms", "60000"], &[], &log);
    wait_claimed(&mut connect(&server));
    let go = Arc::new(AtomicBool::new(true));
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (url, go) = (server.url(), go.clone());
            std::thread::spawn(move || {
                let mut con = redis::Client::open(url).unwrap().get_connection().unwrap();
                let key = format!("counter:{w}");
                let mut acknowledged = 0i64;
                // Pipelines of 16, so that commands are in flight when the node stops.
                while go.load(Ordering::Relaxed) {
                    let mut pipe = redis::pipe();
                    for _ in 0..16 {
                        pipe.cmd("INCR").arg(&key);
                    }
                    match pipe.query::<Vec<redis::Value>>(&mut con) {
                        Ok(replies) => {
                            for reply in replies {
                                if let redis::Value::Int(n) = reply {
                                    acknowledged = acknowledged.max(n);
                                }
                            }
                        }
                        Err(_) => break,
                    }
                }
                (key, acknowledged)
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    shutdown_and_wait(&mut server, &log);
    go.store(false, Ordering::Relaxed);
    let acknowledged: Vec<(String, i64)> = writers.into_iter().map(|w| w.join().unwrap()).collect();
    assert!(acknowledged.iter().all(|(_, n)| *n > 0), "every writer wrote before the shutdown: {acknowledged:?}");

    let second = start_meridian_at(&data, &["--shards", "2"], &[], &dir.path.join("second.log"));
    let mut con = connect(&second);
    for (key, acked) in acknowledged {
        let stored: Option<i64> = redis::cmd("GET").arg(&key).query(&mut con).unwrap();
        assert!(stored.unwrap_or(0) >= acked, "{key}: {acked} acknowledged, {stored:?} recovered");
    }
}
