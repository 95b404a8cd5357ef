//! Overload and bad peers, on real processes: `maxmemory` refuses client writes with
//! Redis's `-OOM` while reads (and merges from peers) go on; clients get `-LOADING`
//! while a node loads its data; output buffer limits per client class; a peer that
//! floods, replays old batches or stays away for long costs bounded memory and
//! changes nothing it should not.

mod common;

use std::io::{Read, Write};
use std::time::Duration;

use common::cluster::{Cluster, SECRET};
use common::proxy::Proxy;
use common::{
    ReadEnd, TempDir, command, connect, eventually, info_fields, info_u64, query_error, raw_connect, read_until_close, spawn_meridian_at,
    start_meridian, start_meridian_at,
};

const OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";
const LOADING: &str = "-LOADING Redis is loading the dataset in memory\r\n";

fn run(con: &mut redis::Connection, args: &[&str]) -> redis::Value {
    command(args).query(con).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

fn get(con: &mut redis::Connection, key: &str) -> Option<String> {
    redis::cmd("GET").arg(key).query(con).expect("GET")
}

#[test]
fn past_maxmemory_writes_get_oom_while_reads_and_deletes_go_on() {
    let server = start_meridian(&["--persistence", "off"]);
    let mut con = connect(&server);
    run(&mut con, &["SET", "kept", "value"]);
    run(&mut con, &["SET", "doomed", "value"]);
    let memory = info_fields(&mut con, "memory");
    assert_eq!(memory["maxmemory"], "0");
    assert_eq!(memory["maxmemory_policy"], "noeviction");
    assert!(memory["used_memory"].parse::<u64>().unwrap() > 0);

    // One byte: whatever the node holds is more.
    run(&mut con, &["CONFIG", "SET", "maxmemory", "1"]);
    assert!(
        eventually(Duration::from_secs(5), || command(&["SET", "k", "v"]).query::<redis::Value>(&mut con).is_err()),
        "writes are refused once used memory is sampled over maxmemory"
    );
    assert_eq!(query_error(&command(&["SET", "k", "v"]), &mut con), OOM);
    assert_eq!(query_error(&command(&["INCR", "n"]), &mut con), OOM);
    assert_eq!(query_error(&command(&["LPUSH", "l", "x"]), &mut con), OOM);
    assert_eq!(get(&mut con, "kept").as_deref(), Some("value"), "reads go on");
    assert_eq!(redis::cmd("DEL").arg("doomed").query::<i64>(&mut con).unwrap(), 1, "deletes free memory: allowed, as Redis");
    assert_eq!(redis::cmd("PING").query::<String>(&mut con).unwrap(), "PONG");
    // A transaction queues nothing past maxmemory, and its EXEC aborts.
    run(&mut con, &["MULTI"]);
    assert_eq!(query_error(&command(&["GET", "kept"]), &mut con), OOM);
    assert!(query_error(&command(&["EXEC"]), &mut con).starts_with("EXECABORT"));

    let memory = info_fields(&mut con, "memory");
    assert_eq!(memory["maxmemory"], "1");
    assert_eq!(memory["maxmemory_human"], "1B");
    let config: Vec<String> = redis::cmd("CONFIG").arg("GET").arg("maxmemory*").query(&mut con).unwrap();
    assert_eq!(config, ["maxmemory", "1", "maxmemory-policy", "noeviction"]);
    let refused = query_error(&command(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"]), &mut con);
    assert!(refused.contains("only noeviction"), "{refused}");

    // Raised again: writes go on.
    run(&mut con, &["CONFIG", "SET", "maxmemory", "0"]);
    assert!(eventually(Duration::from_secs(5), || command(&["SET", "k", "v"]).query::<redis::Value>(&mut con).is_ok()));
    assert_eq!(get(&mut con, "k").as_deref(), Some("v"));
}

#[test]
fn a_node_past_maxmemory_still_merges_what_its_peers_write() {
    let cluster = Cluster::start(2, &["--persistence", "off"]);
    run(&mut cluster.con(1), &["CONFIG", "SET", "maxmemory", "1"]);
    let mut full = cluster.con(1);
    assert!(eventually(Duration::from_secs(5), || query_error(&command(&["SET", "mine", "x"]), &mut full) == OOM));
    let mut a = cluster.con(0);
    for i in 0..200 {
        run(&mut a, &["SET", &format!("from-peer{i}"), "v"]);
    }
    run(&mut a, &["INCRBY", "counter", "7"]);
    assert!(
        eventually(Duration::from_secs(30), || get(&mut full, "counter").as_deref() == Some("7")),
        "a peer's writes are merged past maxmemory: they are not client writes"
    );
    assert_eq!(get(&mut full, "from-peer199").as_deref(), Some("v"));
    assert_eq!(get(&mut full, "mine"), None);
}

#[test]
fn maxmemory_is_a_flag_and_bad_values_stop_start_up() {
    let server = start_meridian(&["--persistence", "off", "--maxmemory", "1gb"]);
    let config: Vec<String> = redis::cmd("CONFIG").arg("GET").arg("maxmemory").query(&mut connect(&server)).unwrap();
    assert_eq!(config, ["maxmemory", (1u64 << 30).to_string().as_str()]);
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_meridian"))
        .args(["--port", "0", "--persistence", "off", "--maxmemory-policy", "allkeys-lru"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("only noeviction"), "{}", String::from_utf8_lossy(&output.stderr));
}

fn send(stream: &mut std::net::TcpStream, bytes: &[u8]) -> String {
    stream.write_all(bytes).unwrap();
    let mut buf = vec![0u8; 64 * 1024];
    let n = stream.read(&mut buf).unwrap();
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

#[test]
fn clients_get_loading_while_the_node_loads_its_data_and_then_the_data() {
    let data = TempDir::new("loading");
    let log = data.path.with_extension("log");
    {
        let server = start_meridian_at(&data.path, &["--flush-interval-ms", "20"], &[], &log);
        let mut con = connect(&server);
        for i in 0..2000 {
            run(&mut con, &["SET", &format!("key{i}"), &format!("value{i}")]);
        }
        common::send_sigterm(&server);
        let mut server = server;
        assert!(common::wait_for_exit(&mut server, Duration::from_secs(20)).is_some());
    }
    let (child, port) = spawn_meridian_at(&data.path, &["--debug-loading-delay-ms", "3000"], &[], &log);
    let _server = common::ServerGuard { child, port, data_dir: None };
    let mut early = None;
    assert!(
        eventually(Duration::from_secs(10), || {
            early = std::net::TcpStream::connect(("127.0.0.1", port)).ok();
            early.is_some()
        }),
        "the node accepts connections while it loads"
    );
    let mut early = early.unwrap();
    early.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    assert_eq!(send(&mut early, b"*2\r\n$3\r\nGET\r\n$7\r\nkey1999\r\n"), LOADING);
    assert_eq!(send(&mut early, b"*1\r\n$4\r\nPING\r\n"), LOADING, "PING too, as Redis 7");
    let info = send(&mut early, b"*2\r\n$4\r\nINFO\r\n$11\r\npersistence\r\n");
    assert!(info.contains("loading:1"), "{info}");

    // A command allowed while loading that needs the node (SELECT) waits for the data;
    // so does whatever the client sent after it.
    let mut waiting = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    waiting.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    waiting.write_all(b"*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n*2\r\n$3\r\nGET\r\n$4\r\nkey7\r\n").unwrap();

    // A client that pipelines GETs and never reads its -LOADING replies (megabytes of
    // them) does not keep the node from serving: what it has not taken goes along.
    let mut flooder = small_buffer_connect_to(port);
    flooder.set_write_timeout(Some(Duration::from_secs(1))).unwrap();
    let _ = flooder.write_all(&b"*2\r\n$3\r\nGET\r\n$4\r\nkey1\r\n".repeat(200_000));

    // Once loaded, the same connections are served.
    assert!(
        eventually(Duration::from_secs(20), || send(&mut early, b"*2\r\n$3\r\nGET\r\n$7\r\nkey1999\r\n") == "$9\r\nvalue1999\r\n"),
        "the data, once loaded"
    );
    let mut replies = Vec::new();
    while replies.len() < b"+OK\r\n$6\r\nvalue7\r\n".len() {
        let mut buf = [0u8; 256];
        let n = waiting.read(&mut buf).unwrap();
        assert!(n > 0, "closed");
        replies.extend_from_slice(&buf[..n]);
    }
    assert_eq!(String::from_utf8_lossy(&replies), "+OK\r\n$6\r\nvalue7\r\n");
    let info = send(&mut early, b"*2\r\n$4\r\nINFO\r\n$11\r\npersistence\r\n");
    assert!(info.contains("loading:0"), "{info}");

    // The flooder reads at last: its -LOADING replies, then (for the GETs the node read
    // after loading) the value.
    let mut seen = Vec::new();
    let mut buf = vec![0u8; 1 << 20];
    while !seen.windows(8).any(|w| w == b"\r\nvalue1") {
        let n = flooder.read(&mut buf).expect("the flooder's replies");
        assert!(n > 0, "closed");
        seen.extend_from_slice(&buf[..n]);
        if seen.len() > 1 << 20 {
            seen.drain(..seen.len() - 64);
        }
    }
}

#[test]
fn a_normal_client_over_its_output_buffer_limit_is_closed() {
    let server = start_meridian(&["--persistence", "off"]);
    let mut con = connect(&server);
    let limits: Vec<String> = redis::cmd("CONFIG").arg("GET").arg("client-output-buffer-limit").query(&mut con).unwrap();
    assert_eq!(limits[1], "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60", "Redis's defaults");
    run(&mut con, &["SET", "big", &"x".repeat(2 << 20)]);

    // Hard limit: a 2 MiB reply against 1 MiB closes the client.
    run(&mut con, &["CONFIG", "SET", "client-output-buffer-limit", "normal 1mb 0 0"]);
    let mut raw = raw_connect(&server);
    raw.write_all(b"*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n").unwrap();
    let (bytes, end) = read_until_close(&mut raw);
    assert_eq!(end, ReadEnd::Closed);
    assert!(bytes.len() < 2 << 20, "the reply was not sent whole: {} bytes", bytes.len());
    assert_eq!(info_u64(&mut con, "stats", "client_output_buffer_limit_disconnections"), 1);

    // Soft limit: over 64 KiB for a second while the client does not read. (16 MiB:
    // the kernel's socket buffers take a few MiB of it, which no limit counts.)
    run(&mut con, &["SET", "huge", &"x".repeat(16 << 20)]);
    run(&mut con, &["CONFIG", "SET", "client-output-buffer-limit", "normal 0 64kb 1"]);
    let mut slow = small_buffer_connect(&server);
    slow.write_all(b"*2\r\n$3\r\nGET\r\n$4\r\nhuge\r\n").unwrap();
    std::thread::sleep(Duration::from_millis(2500));
    let (bytes, end) = read_until_close(&mut slow);
    assert_eq!(end, ReadEnd::Closed);
    assert!(bytes.len() < 16 << 20);
    assert_eq!(info_u64(&mut con, "stats", "client_output_buffer_limit_disconnections"), 2);

    // With no limit (Redis's default for normal clients) a client that reads gets it.
    run(&mut con, &["CONFIG", "SET", "client-output-buffer-limit", "normal 0 0 0"]);
    assert_eq!(get(&mut connect(&server), "huge").map(|v| v.len()), Some(16 << 20));
    let bad = query_error(&command(&["CONFIG", "SET", "client-output-buffer-limit", "master 1 2 3"]), &mut con);
    assert!(bad.contains("Invalid client class"), "{bad}");
}

/// A connection with a small receive buffer, set before connecting, so that the kernel
/// does not absorb megabytes of replies (Linux autotunes loopback buffers).
fn small_buffer_connect(server: &common::ServerGuard) -> std::net::TcpStream {
    small_buffer_connect_to(server.port)
}

fn small_buffer_connect_to(port: u16) -> std::net::TcpStream {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    socket.set_recv_buffer_size(64 * 1024).unwrap();
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    socket.connect(&addr.into()).unwrap();
    let stream: std::net::TcpStream = socket.into();
    stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    stream
}

#[test]
fn a_subscriber_over_the_pubsub_class_limit_is_closed() {
    let server = start_meridian(&["--persistence", "off"]);
    let mut con = connect(&server);
    run(&mut con, &["CONFIG", "SET", "client-output-buffer-limit", "pubsub 1mb 0 0"]);
    let mut subscriber = small_buffer_connect(&server);
    subscriber.write_all(b"*2\r\n$9\r\nSUBSCRIBE\r\n$2\r\nch\r\n").unwrap();
    let mut ack = [0u8; 64];
    let _ = subscriber.read(&mut ack).unwrap();
    // It never reads again: the server cuts it off well before 16 MiB (the default
    // limit is 32 MiB).
    let payload = vec![b'm'; 64 * 1024];
    let mut published = 0usize;
    while info_u64(&mut con, "stats", "pubsub_clients_disconnected") == 0 {
        assert!(published < 16 << 20, "not cut off after {published} bytes");
        let mut pipe = redis::pipe();
        for _ in 0..16 {
            pipe.cmd("PUBLISH").arg("ch").arg(&payload[..]).ignore();
        }
        pipe.query::<()>(&mut con).unwrap();
        published += 16 * payload.len();
    }
    assert_eq!(info_u64(&mut con, "stats", "client_output_buffer_limit_disconnections"), 1, "an output buffer limit, too");
}

#[test]
fn garbage_and_floods_on_the_replication_port_are_cut_off_in_bounded_memory() {
    let cluster = Cluster::start(1, &["--persistence", "off"]);
    let repl_addr = format!("127.0.0.1:{}", cluster.nodes[0].repl_port);
    let mut con = cluster.con(0);
    let rss_before: u64 = info_fields(&mut con, "memory")["used_memory_rss"].parse().unwrap();

    // A frame that claims to be 1 GiB long, then a stream of bytes: the claim alone is
    // refused (before authentication no frame may pass 4 KiB), nothing is buffered.
    let mut flood = std::net::TcpStream::connect(&repl_addr).unwrap();
    flood.set_write_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut header = (1u32 << 30).to_le_bytes().to_vec();
    header.extend_from_slice(&[3, 1, 0, 0, 0, 0]);
    let chunk = vec![0x55u8; 1 << 20];
    let mut sent = 0usize;
    if flood.write_all(&header).is_ok() {
        while sent < 256 << 20 && flood.write_all(&chunk).is_ok() {
            sent += chunk.len();
        }
    }
    assert!(sent < 64 << 20, "the link is closed long before 64 MiB: {sent} bytes went in");
    assert!(eventually(Duration::from_secs(5), || info_u64(&mut con, "replication", "bad_frames") >= 1));

    // Many connections that never authenticate: at most INBOUND_LINKS_MAX are held.
    let idle: Vec<_> = (0..300).filter_map(|_| std::net::TcpStream::connect(&repl_addr).ok()).collect();
    assert!(
        eventually(Duration::from_secs(5), || info_u64(&mut con, "replication", "inbound_links_refused") >= 300 - 256),
        "{:?}",
        info_fields(&mut con, "replication")
    );
    assert!(info_u64(&mut con, "replication", "inbound_links_open") <= 256);
    drop(idle);
    // The idle ones time out of their handshake; the node never stopped serving.
    assert!(eventually(Duration::from_secs(15), || info_u64(&mut con, "replication", "inbound_links_open") == 0));
    run(&mut con, &["SET", "still", "serving"]);
    let rss_after: u64 = info_fields(&mut con, "memory")["used_memory_rss"].parse().unwrap();
    assert!(rss_after < rss_before + (64 << 20), "memory stayed bounded: {rss_before} -> {rss_after}");
}

#[test]
fn a_peer_replaying_old_batches_changes_nothing() {
    let listener_dir = TempDir::new("replay-listener");
    let listener_log = listener_dir.path.with_extension("log");
    let listener = start_meridian_at(
        &listener_dir.path,
        &["--node-id", "2", "--repl-port", "0", "--persistence", "off", "--shards", "2"],
        &[("MERIDIAN_CLUSTER_SECRET", SECRET)],
        &listener_log,
    );
    let mut b = connect(&listener);
    let repl_port = info_fields(&mut b, "replication")["repl_port"].clone();
    let proxy = Proxy::start_framed(&format!("127.0.0.1:{repl_port}"));
    let dialer_dir = TempDir::new("replay-dialer");
    let dialer_log = dialer_dir.path.with_extension("log");
    let dialer = start_meridian_at(
        &dialer_dir.path,
        &["--node-id", "1", "--peers", &proxy.addr(), "--persistence", "off", "--shards", "2"],
        &[("MERIDIAN_CLUSTER_SECRET", SECRET)],
        &dialer_log,
    );
    let mut a = connect(&dialer);
    run(&mut a, &["SET", "k", "old"]);
    run(&mut a, &["SADD", "s", "gone", "stays"]);
    run(&mut a, &["INCRBY", "c", "5"]);
    run(&mut a, &["SET", "deleted", "x"]);
    assert!(eventually(Duration::from_secs(20), || get(&mut b, "deleted").as_deref() == Some("x")));
    run(&mut a, &["SET", "k", "new"]);
    run(&mut a, &["SREM", "s", "gone"]);
    run(&mut a, &["DEL", "deleted"]);
    run(&mut a, &["INCRBY", "c", "1"]);
    assert!(eventually(Duration::from_secs(20), || get(&mut b, "c").as_deref() == Some("6")));
    assert!(proxy.recorded_batches() >= 2, "batches were recorded");

    let received = info_u64(&mut b, "replication", "batches_received");
    let replayed = proxy.replay_recorded(3);
    assert!(
        eventually(Duration::from_secs(20), || info_u64(&mut b, "replication", "batches_received") >= received + replayed as u64),
        "the replayed batches arrived"
    );
    assert_eq!(get(&mut b, "k").as_deref(), Some("new"), "an old SET does not win again");
    assert_eq!(get(&mut b, "deleted"), None, "a delete is not undone");
    assert_eq!(get(&mut b, "c").as_deref(), Some("6"), "increments are not counted twice");
    let members: Vec<String> = redis::cmd("SMEMBERS").arg("s").query(&mut b).unwrap();
    assert_eq!(members, ["stays"]);
    // The link still works.
    run(&mut a, &["SET", "after", "replay"]);
    assert!(eventually(Duration::from_secs(20), || get(&mut b, "after").as_deref() == Some("replay")));

    // The same frames on a connection of their own are not authenticated: refused.
    let mut raw = std::net::TcpStream::connect(format!("127.0.0.1:{repl_port}")).unwrap();
    raw.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let failures = info_u64(&mut b, "replication", "bad_frames") + info_u64(&mut b, "replication", "auth_failures");
    let _ = raw.write_all(&proxy_first_batch(&proxy));
    let mut buf = Vec::new();
    let _ = raw.read_to_end(&mut buf);
    assert!(eventually(Duration::from_secs(5), || {
        info_u64(&mut b, "replication", "bad_frames") + info_u64(&mut b, "replication", "auth_failures") > failures
    }));
    assert_eq!(get(&mut b, "k").as_deref(), Some("new"));
}

fn proxy_first_batch(proxy: &Proxy) -> Vec<u8> {
    proxy.recorded_frame(0)
}

#[test]
fn a_peer_away_for_long_costs_a_bounded_queue_and_is_caught_up_by_anti_entropy() {
    let cluster = Cluster::start(2, &["--persistence", "off", "--repl-backlog-bytes", "64kb", "--anti-entropy-interval-ms", "1000"]);
    cluster.isolate(1);
    let mut a = cluster.con(0);
    let value = "v".repeat(200);
    for i in 0..5000 {
        run(&mut a, &["SET", &format!("while-away{i}"), &value]);
    }
    run(&mut a, &["INCRBY", "counter", "3"]);
    let info = info_fields(&mut a, "replication");
    let peer = &info["peer0"];
    let field = |name: &str| -> u64 {
        peer.split(',').find_map(|kv| kv.strip_prefix(&format!("{name}="))).and_then(|v| v.parse().ok()).unwrap_or(u64::MAX)
    };
    assert!(field("backlog_bytes") <= 64 * 1024 + 64 * 1024, "the queue for the absent peer is bounded: {peer}");
    assert!(field("backlog_overflows") >= 1, "it overflowed, rather than grew: {peer}");

    cluster.rejoin(1);
    cluster.wait_converged(Duration::from_secs(60));
    let mut b = cluster.con(1);
    assert_eq!(redis::cmd("DBSIZE").query::<i64>(&mut b).unwrap(), 5001);
    assert_eq!(get(&mut b, "counter").as_deref(), Some("3"));
    assert_eq!(get(&mut b, "while-away4999").as_deref(), Some(value.as_str()));
}
