//! The server under hostile or unusual clients and signals: malformed RESP and random
//! bytes get a protocol error and a closed connection while other clients carry on;
//! many concurrent clients lose no updates; SIGTERM stops the process cleanly.

mod common;

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use common::{ReadEnd, ServerGuard, connect, is_alive, raw_connect, read_until_close, send_sigterm, start_meridian, wait_for_exit};

/// Send `input` on a fresh raw connection and return what came back and how it ended.
fn exchange(server: &ServerGuard, input: &[u8]) -> (String, ReadEnd) {
    let mut stream = raw_connect(server);
    // The server may close before it has read everything; a failed write is fine.
    let _ = stream.write_all(input);
    let (reply, end) = read_until_close(&mut stream);
    (String::from_utf8_lossy(&reply).into_owned(), end)
}

/// A healthy client that runs PING / SET / GET / INCR in a loop until stopped and
/// reports the first failure.
struct HealthyClient {
    stop: Arc<AtomicBool>,
    rounds: Arc<AtomicU64>,
    handle: std::thread::JoinHandle<Result<(), String>>,
}

impl HealthyClient {
    fn start(server: &ServerGuard) -> HealthyClient {
        let mut con = connect(server);
        let stop = Arc::new(AtomicBool::new(false));
        let rounds = Arc::new(AtomicU64::new(0));
        let handle = {
            let (stop, rounds) = (stop.clone(), rounds.clone());
            std::thread::spawn(move || -> Result<(), String> {
                let mut i: u64 = 0;
                while !stop.load(Ordering::Relaxed) {
                    let pong: String = redis::cmd("PING").query(&mut con).map_err(|e| format!("PING #{i}: {e}"))?;
                    if pong != "PONG" {
                        return Err(format!("PING #{i} answered {pong:?}"));
                    }
                    let key = format!("healthy:{}", i % 64);
                    let value = format!("value-{i}");
                    redis::cmd("SET").arg(&key).arg(&value).query::<()>(&mut con).map_err(|e| format!("SET #{i}: {e}"))?;
                    let back: String = redis::cmd("GET").arg(&key).query(&mut con).map_err(|e| format!("GET #{i}: {e}"))?;
                    if back != value {
                        return Err(format!("GET #{i} answered {back:?}, expected {value:?}"));
                    }
                    let count: u64 = redis::cmd("INCR").arg("healthy:count").query(&mut con).map_err(|e| format!("INCR #{i}: {e}"))?;
                    if count != i + 1 {
                        return Err(format!("INCR #{i} answered {count}"));
                    }
                    i += 1;
                    rounds.store(i, Ordering::Relaxed);
                }
                Ok(())
            })
        };
        HealthyClient { stop, rounds, handle }
    }

    fn rounds(&self) -> u64 {
        self.rounds.load(Ordering::Relaxed)
    }

    /// Stop and return how many rounds succeeded; panics with the first failure.
    fn finish(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().expect("healthy client thread").unwrap_or_else(|e| panic!("healthy client failed: {e}"));
        self.rounds.load(Ordering::Relaxed)
    }
}

#[test]
fn malformed_resp_gets_a_protocol_error_and_a_closed_connection() {
    let server = start_meridian(&["--shards", "2"]);
    let cases: &[(&str, &[u8], &str)] = &[
        ("huge bulk length", b"*1\r\n$99999999999\r\n", "-ERR Protocol error: invalid bulk length\r\n"),
        ("negative bulk length", b"*1\r\n$-5\r\n", "-ERR Protocol error: invalid bulk length\r\n"),
        ("non-numeric bulk length", b"*1\r\n$abc\r\n", "-ERR Protocol error: invalid bulk length\r\n"),
        ("non-numeric multibulk count", b"*x\r\n", "-ERR Protocol error: invalid multibulk length\r\n"),
        ("multibulk count beyond i32", b"*3000000000\r\n", "-ERR Protocol error: invalid multibulk length\r\n"),
        ("integer where a bulk belongs", b"*1\r\n:1\r\n", "-ERR Protocol error: expected '$', got ':'\r\n"),
        ("unbalanced double quote inline", b"SET \"abc\r\n", "-ERR Protocol error: unbalanced quotes in request\r\n"),
        ("unbalanced single quote inline", b"ECHO 'it\r\n", "-ERR Protocol error: unbalanced quotes in request\r\n"),
        ("closing quote glued to text", b"SET \"a\"b c\r\n", "-ERR Protocol error: unbalanced quotes in request\r\n"),
        (
            "commands before the garbage are answered first",
            b"PING\r\n*1\r\n$4\r\nPING\r\n*x\r\nPING\r\n",
            "+PONG\r\n+PONG\r\n-ERR Protocol error: invalid multibulk length\r\n",
        ),
    ];
    for (name, input, expected) in cases {
        let (reply, end) = exchange(&server, input);
        assert_eq!(&reply, expected, "case {name:?}");
        assert_eq!(end, ReadEnd::Closed, "case {name:?}: the connection must be closed after a protocol error");
    }

    // An inline request longer than 64 KiB without a newline.
    let (reply, end) = exchange(&server, &vec![b'a'; 70 * 1024]);
    assert_eq!(reply, "-ERR Protocol error: too big inline request\r\n");
    assert_eq!(end, ReadEnd::Closed);
    // A multibulk header line longer than 64 KiB.
    let mut long_header = b"*".to_vec();
    long_header.extend(std::iter::repeat_n(b'1', 70 * 1024));
    let (reply, end) = exchange(&server, &long_header);
    assert_eq!(reply, "-ERR Protocol error: too big mbulk count string\r\n");
    assert_eq!(end, ReadEnd::Closed);

    // Single-key commands queued for other shards are answered before the error.
    let (a, b) = (common::key_on_shard("a", 0, 2), common::key_on_shard("b", 1, 2));
    let input = format!("SET {a} 1\r\nSET {b} 2\r\nGET {a}\r\nGET {b}\r\n*1\r\n$-9\r\nGET {a}\r\n");
    let (reply, end) = exchange(&server, input.as_bytes());
    assert_eq!(reply, "+OK\r\n+OK\r\n$1\r\n1\r\n$1\r\n2\r\n-ERR Protocol error: invalid bulk length\r\n");
    assert_eq!(end, ReadEnd::Closed);

    let mut con = connect(&server);
    let pong: String = redis::cmd("PING").query(&mut con).expect("PING after garbage");
    assert_eq!(pong, "PONG");
}

/// Deterministic pseudo-random bytes (xorshift64*), so a failure replays.
fn random_bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed | 1;
    (0..len)
        .map(|_| {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            (state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8
        })
        .collect()
}

#[test]
fn garbage_clients_do_not_disturb_a_healthy_client_or_kill_the_server() {
    let mut server = start_meridian(&["--shards", "4"]);
    let healthy = HealthyClient::start(&server);

    for seed in 1..=40u64 {
        let mut stream = raw_connect(&server);
        stream.set_read_timeout(Some(Duration::from_millis(300))).expect("timeout");
        let _ = stream.write_all(&random_bytes(seed, 4096 + (seed as usize * 997) % 60_000));
        // Finish our side: whatever the parser is waiting for will never come, so the
        // server must close the connection (protocol error or end of input).
        let _ = stream.shutdown(std::net::Shutdown::Write);
        stream.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
        let (reply, end) = read_until_close(&mut stream);
        assert_eq!(end, ReadEnd::Closed, "seed {seed}: connection left open after garbage");
        // Random bytes only ever earn error replies (an accidental valid command is
        // astronomically unlikely with these seeds).
        for line in String::from_utf8_lossy(&reply).split("\r\n").filter(|l| !l.is_empty()) {
            assert!(line.starts_with('-'), "seed {seed}: non-error reply line {line:?}");
        }
    }
    // Malformed RESP in between, and a client that disconnects mid-bulk.
    for input in [&b"*1\r\n$99999999999\r\n"[..], b"*x\r\n", b"SET \"unbalanced\r\n", b"*2\r\n$3\r\nSET\r\n$100\r\nshort"] {
        let mut stream = raw_connect(&server);
        let _ = stream.write_all(input);
        drop(stream);
    }

    assert!(common::eventually(Duration::from_secs(5), || healthy.rounds() >= 50), "the healthy client made no progress");
    let rounds = healthy.finish();
    assert!(rounds >= 50, "healthy client rounds: {rounds}");
    assert!(is_alive(&mut server), "the server process died");
    let mut con = connect(&server);
    let count: u64 = redis::cmd("GET").arg("healthy:count").query(&mut con).expect("GET count");
    assert_eq!(count, rounds, "every INCR of the healthy client counted exactly once");
    let dbsize: i64 = redis::cmd("DBSIZE").query(&mut con).expect("DBSIZE");
    assert!(dbsize <= 65, "garbage created keys: DBSIZE {dbsize}");
}

#[test]
fn concurrent_clients_incrementing_shared_counters_lose_no_updates() {
    let server = start_meridian(&["--shards", "4"]);
    let threads = 8;
    let per_thread = 500;
    let counters = common::keys_spread_over_shards("shared:", 8, 4);
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let mut con = connect(&server);
            let counters = counters.clone();
            std::thread::spawn(move || {
                // Half pipelined, half one by one, so both paths race.
                let mut pipe = redis::pipe();
                for i in 0..per_thread / 2 {
                    pipe.cmd("INCR").arg(&counters[(t + i) % counters.len()]).ignore();
                }
                pipe.query::<()>(&mut con).expect("INCR pipeline");
                for i in per_thread / 2..per_thread {
                    let _: i64 = redis::cmd("INCRBY").arg(&counters[(t + i) % counters.len()]).arg(1).query(&mut con).expect("INCRBY");
                }
            })
        })
        .collect();
    for handle in handles {
        handle.join().expect("client thread");
    }
    let mut con = connect(&server);
    let values: Vec<i64> = redis::cmd("MGET").arg(&counters).query(&mut con).expect("MGET");
    assert_eq!(values.iter().sum::<i64>(), (threads * per_thread) as i64, "per counter: {values:?}");
    assert_eq!(values, vec![(threads * per_thread / counters.len()) as i64; counters.len()]);
}

#[test]
fn sigterm_stops_an_idle_server_with_exit_status_success() {
    let mut server = start_meridian(&["--shards", "4"]);
    let mut con = connect(&server);
    let _: () = redis::cmd("SET").arg("k").arg("v").query(&mut con).expect("SET");
    drop(con);
    send_sigterm(&server);
    let status = wait_for_exit(&mut server, Duration::from_secs(5)).expect("the server did not exit within 5 s of SIGTERM");
    assert!(status.success(), "exit status after SIGTERM: {status}");
}

#[test]
fn sigterm_stops_a_server_with_open_and_half_sent_connections() {
    let mut server = start_meridian(&["--shards", "4"]);
    let mut idle = connect(&server);
    let _: () = redis::cmd("SET").arg("k").arg("v").query(&mut idle).expect("SET");
    let mut half = raw_connect(&server);
    half.write_all(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100\r\nonly-part").expect("write a partial command");
    let healthy = HealthyClient::start(&server);
    assert!(common::eventually(Duration::from_secs(5), || healthy.rounds() >= 10), "no progress before SIGTERM");

    send_sigterm(&server);
    let status = wait_for_exit(&mut server, Duration::from_secs(5)).expect("the server did not exit within 5 s of SIGTERM");
    assert!(status.success(), "exit status after SIGTERM: {status}");
    // The healthy client's connection is gone with the server.
    healthy.stop.store(true, Ordering::Relaxed);
    let result = healthy.handle.join().expect("thread");
    assert!(result.is_err() || redis::cmd("PING").query::<String>(&mut idle).is_err(), "the server still answers after exiting");
    let (_, end) = read_until_close(&mut half);
    assert_eq!(end, ReadEnd::Closed, "open connections are closed on shutdown");
}

#[test]
fn concurrent_cross_shard_renamenx_neither_loses_nor_duplicates_keys() {
    let server = start_meridian(&["--shards", "4"]);
    // 16 places spread over the 4 shards and 6 tokens moving between them with
    // RENAMENX from 4 clients at once. RENAMENX across shards must be atomic: a token
    // is never in two places, and two moves into one free place never both win.
    let places = common::keys_spread_over_shards("place:", 16, 4);
    let tokens = 6;
    let mut con = connect(&server);
    for (t, place) in places.iter().take(tokens).enumerate() {
        let _: () = redis::cmd("SET").arg(place).arg(format!("token-{t}")).query(&mut con).expect("SET token");
    }
    let handles: Vec<_> = (0..4u64)
        .map(|c| {
            let mut con = connect(&server);
            let places = places.clone();
            std::thread::spawn(move || -> (u64, u64) {
                let mut state = 0x1234_5678_9abc_def1u64 ^ (c + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                let mut next = move || {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    state
                };
                let (mut moved, mut refused) = (0, 0);
                for _ in 0..400 {
                    let src = &places[(next() % 16) as usize];
                    let dst = &places[(next() % 16) as usize];
                    match redis::cmd("RENAMENX").arg(src).arg(dst).query::<i64>(&mut con) {
                        Ok(1) => moved += 1,
                        Ok(0) => refused += 1,
                        Ok(other) => panic!("RENAMENX answered {other}"),
                        Err(e) => assert_eq!(common::error_text(&e), "ERR no such key", "RENAMENX {src} {dst}"),
                    }
                }
                (moved, refused)
            })
        })
        .collect();
    let mut moved = 0;
    for handle in handles {
        moved += handle.join().expect("client thread").0;
    }
    assert!(moved >= 100, "too few moves ({moved}) to test anything");
    let values: Vec<Option<String>> = redis::cmd("MGET").arg(&places).query(&mut con).expect("MGET places");
    let mut found: Vec<String> = values.into_iter().flatten().collect();
    found.sort();
    let expected: Vec<String> = (0..tokens).map(|t| format!("token-{t}")).collect();
    assert_eq!(found, expected, "after {moved} moves the tokens must all exist exactly once");
    let dbsize: i64 = redis::cmd("DBSIZE").query(&mut con).expect("DBSIZE");
    assert_eq!(dbsize, tokens as i64);
}

#[test]
fn concurrent_cross_shard_msetnx_on_one_key_set_has_exactly_one_winner() {
    let server = start_meridian(&["--shards", "4"]);
    let rounds = 150;
    let clients = 3;
    // Every round, all clients race MSETNX on the same 8 keys (spread over all shards),
    // each with its own value. Exactly one must win, and every key must hold its value.
    let barrier = Arc::new(std::sync::Barrier::new(clients));
    let handles: Vec<_> = (0..clients)
        .map(|c| {
            let mut con = connect(&server);
            let barrier = barrier.clone();
            std::thread::spawn(move || -> Vec<i64> {
                (0..rounds)
                    .map(|round| {
                        let keys = common::keys_spread_over_shards(&format!("race:{round}:"), 8, 4);
                        let mut cmd = redis::cmd("MSETNX");
                        for key in &keys {
                            cmd.arg(key).arg(format!("client-{c}"));
                        }
                        barrier.wait();
                        cmd.query::<i64>(&mut con).expect("MSETNX")
                    })
                    .collect()
            })
        })
        .collect();
    let results: Vec<Vec<i64>> = handles.into_iter().map(|h| h.join().expect("client thread")).collect();
    let mut con = connect(&server);
    for round in 0..rounds {
        let winners: Vec<usize> = results.iter().enumerate().filter(|(_, r)| r[round] == 1).map(|(c, _)| c).collect();
        assert_eq!(winners.len(), 1, "round {round}: winners {winners:?}");
        let keys = common::keys_spread_over_shards(&format!("race:{round}:"), 8, 4);
        let values: Vec<String> = redis::cmd("MGET").arg(&keys).query(&mut con).expect("MGET");
        assert_eq!(values, vec![format!("client-{}", winners[0]); 8], "round {round}: mixed values");
    }
}

#[test]
fn a_command_larger_than_the_query_buffer_limit_closes_only_that_connection() {
    let mut server = start_meridian(&["--client-query-buffer-limit", "1048576"]);
    let mut other = connect(&server);
    let mut stream = raw_connect(&server);
    let value = vec![b'v'; 2 * 1024 * 1024];
    let mut request = format!("*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n${}\r\n", value.len()).into_bytes();
    request.extend_from_slice(&value);
    request.extend_from_slice(b"\r\n");
    let _ = stream.write_all(&request);
    let (reply, end) = read_until_close(&mut stream);
    assert_eq!(end, ReadEnd::Closed, "the connection must be closed");
    let reply = String::from_utf8_lossy(&reply);
    assert!(reply.is_empty() || reply.starts_with("-ERR Protocol error:"), "reply: {reply:?}");
    let exists: i64 = redis::cmd("EXISTS").arg("big").query(&mut other).expect("EXISTS");
    assert_eq!(exists, 0, "the refused command was not run");
    // Just under the limit is fine.
    let ok: redis::Value = redis::cmd("SET").arg("fits").arg(vec![b'v'; 1000 * 1024]).query(&mut other).expect("SET under the limit");
    assert_eq!(ok, redis::Value::Okay);
    assert!(is_alive(&mut server));
}

#[test]

fn a_pipeline_with_large_requests_and_large_replies_completes() {
    // redis-rs (like most clients) writes a whole pipeline before reading any reply.
    // With 25 MB of requests and 25 MB of replies, the server must keep reading while
    // its replies wait to be read, as Redis does, or both sides block on write forever.
    let server = start_meridian(&["--shards", "2"]);
    let mut con = connect(&server);
    con.set_read_timeout(Some(Duration::from_secs(5))).expect("read timeout");
    con.set_write_timeout(Some(Duration::from_secs(5))).expect("write timeout");
    let value = vec![b'p'; 64 * 1024];
    let pairs = 400;
    let mut pipe = redis::pipe();
    for i in 0..pairs {
        pipe.cmd("SET").arg(format!("bulk:{i}")).arg(&value[..]).ignore();
        pipe.cmd("GET").arg(format!("bulk:{i}"));
    }
    let replies: Vec<Vec<u8>> = pipe.query(&mut con).expect("large pipeline (a timeout here means the server stopped reading)");
    assert_eq!(replies.len(), pairs);
    assert!(replies.iter().all(|r| *r == value));
}

#[test]

fn unauthenticated_clients_cannot_declare_large_multibulk_or_bulk_lengths() {
    // Without these limits, a client that does not know the password can make the
    // server reserve up to proto-max-bulk-len (512 MB) per connection.
    let server = start_meridian(&["--requirepass", "pw"]);
    let (reply, end) = exchange(&server, b"*1\r\n$100000\r\n");
    assert_eq!(reply, "-ERR Protocol error: unauthenticated bulk length\r\n");
    assert_eq!(end, ReadEnd::Closed);
    let (reply, end) = exchange(&server, b"*20\r\n");
    assert_eq!(reply, "-ERR Protocol error: unauthenticated multibulk length\r\n");
    assert_eq!(end, ReadEnd::Closed);
    // Once authenticated, the ordinary limits apply.
    let mut stream = raw_connect(&server);
    stream.write_all(b"AUTH pw\r\n*12\r\n$4\r\nMSET\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n$1\r\nc\r\n$1\r\n3\r\n$1\r\nd\r\n$1\r\n4\r\n$1\r\ne\r\n$1\r\n5\r\n$1\r\nf\r\n").expect("write");
    let reply = common::read_exact_reply(&mut stream, b"+OK\r\n-ERR wrong number of arguments for 'mset' command\r\n".len());
    assert_eq!(String::from_utf8_lossy(&reply), "+OK\r\n-ERR wrong number of arguments for 'mset' command\r\n");
}

#[test]
fn a_client_that_half_closes_after_sending_still_gets_every_reply() {
    use std::io::{Read, Write};
    let server = start_meridian(&["--persistence", "off"]);
    let mut stream = std::net::TcpStream::connect(server.addr()).expect("connect");
    let mut request = b"*3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\n1\r\n".to_vec();
    for _ in 0..100_000 {
        request.extend_from_slice(b"PING\r\n");
    }
    stream.write_all(&request).expect("write");
    // As `nc -q` does: stop sending, keep reading.
    stream.shutdown(std::net::Shutdown::Write).expect("half-close");
    let mut replies = Vec::new();
    stream.read_to_end(&mut replies).expect("read");
    assert!(replies.starts_with(b"+OK\r\n"));
    assert_eq!(replies.windows(7).filter(|w| w == b"+PONG\r\n").count(), 100_000);
}
