//! Shared helpers for integration tests: start the real `meridian` binary (or Debian's
//! `redis-server`) on an ephemeral loopback port and stop it when the guard drops.
#![allow(dead_code)]

pub mod cluster;
pub mod falkordb;
pub mod node;
pub mod proxy;
pub mod redisearch;

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A server process that is killed (SIGKILL) when dropped.
pub struct ServerGuard {
    pub child: Child,
    pub port: u16,
    pub data_dir: Option<PathBuf>,
}

impl ServerGuard {
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }
}

impl Drop for ServerGuard {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(dir) = &self.data_dir {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// An unused loopback port, never one this test process handed out before: the tests
/// of one binary run in parallel, and the kernel may offer a port released a moment
/// ago to the next caller before the first server has bound it (two servers on one
/// port, and a test talking to another test's server). Still racy against other
/// processes, which the wait for a server checks (`serving_pid`).
pub fn free_port() -> u16 {
    use std::collections::HashSet;
    use std::sync::Mutex;
    static HANDED_OUT: Mutex<Option<HashSet<u16>>> = Mutex::new(None);
    let mut handed_out = HANDED_OUT.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let handed_out = handed_out.get_or_insert_with(HashSet::new);
    for _ in 0..1000 {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
        let port = listener.local_addr().expect("local addr").port();
        if handed_out.insert(port) {
            return port;
        }
    }
    panic!("no fresh ephemeral port in 1000 tries");
}

/// The process id the server on `port` reports in `INFO server` (`None` when it does
/// not answer it, e.g. before AUTH).
pub fn serving_pid(port: u16) -> Option<u32> {
    use std::io::{Read, Write};
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_millis(500))).ok()?;
    stream.write_all(b"*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n").ok()?;
    let mut reply = Vec::new();
    let mut chunk = [0u8; 4096];
    while !reply.ends_with(b"\r\n\r\n") && reply.len() < 64 * 1024 {
        let n = stream.read(&mut chunk).ok()?;
        if n == 0 {
            break;
        }
        reply.extend_from_slice(&chunk[..n]);
    }
    let text = String::from_utf8_lossy(&reply);
    text.lines().find_map(|line| line.strip_prefix("process_id:")).and_then(|pid| pid.trim().parse().ok())
}

/// Whether `child` itself serves `port`: it answers PING, and the process that answers
/// is `child` (another test's server on the same port would answer PING too). Panics
/// when another process answers: the test would talk to the wrong server.
fn child_serves(child: &Child, port: u16) -> bool {
    if !answers_ping(port) {
        return false;
    }
    match serving_pid(port) {
        Some(pid) if pid != child.id() => panic!("port {port} is served by process {pid}, not by the server just started ({})", child.id()),
        _ => true,
    }
}

/// Wait until the server serves: it accepts connections while it loads its data (and
/// answers `-LOADING` then), so a connect alone does not say it serves; PING does.
fn wait_until_listening(child: &mut Child, port: u16) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if child_serves(child, port) {
            return;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("server on port {port} exited before listening: {status}");
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("server on port {port} did not start serving");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A fresh temporary directory under the target dir, unique per call.
pub fn temp_dir(tag: &str) -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("meridian-test-{}-{tag}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create temp dir");
    dir
}

/// Start `meridian` with the given extra arguments on a free port.
pub fn start_meridian(extra_args: &[&str]) -> ServerGuard {
    let port = free_port();
    let data_dir = temp_dir("data");
    let mut child = Command::new(env!("CARGO_BIN_EXE_meridian"))
        .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
        .arg("--data-dir")
        .arg(&data_dir)
        .args(extra_args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn meridian");
    wait_until_listening(&mut child, port);
    ServerGuard { child, port, data_dir: Some(data_dir) }
}

/// Whether Debian's `redis-server` is installed. CI installs it; tests that need it fail
/// (rather than silently pass) when `CI` is set and it is missing.
pub fn redis_server_available() -> bool {
    let found = Command::new("redis-server")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !found && std::env::var_os("CI").is_some() {
        panic!("redis-server is required in CI (install redis-server)");
    }
    found
}

/// Start Debian's `redis-server` on a free port with no persistence.
pub fn start_redis(extra_args: &[&str]) -> ServerGuard {
    let port = free_port();
    let mut child = Command::new("redis-server")
        .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
        .args(["--save", "", "--appendonly", "no"])
        .args(extra_args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn redis-server");
    wait_until_listening(&mut child, port);
    ServerGuard { child, port, data_dir: None }
}

// ---------------------------------------------------------------------------------------
// Helpers for the integration tests that talk to a running server.
// ---------------------------------------------------------------------------------------

/// Longest a single reply may take before a test calls it a hang.
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(10);

/// A blocking RESP2 connection with read and write timeouts, so a hung server fails the
/// test instead of blocking it forever.
pub fn connect(server: &ServerGuard) -> redis::Connection {
    connect_url(&server.url())
}

/// A blocking connection to `url` (which may carry `?protocol=resp3`, a password, ...).
pub fn connect_url(url: &str) -> redis::Connection {
    let client = redis::Client::open(url).expect("valid redis url");
    let con = client.get_connection_with_timeout(REPLY_TIMEOUT).unwrap_or_else(|e| panic!("connect to {url}: {e}"));
    con.set_read_timeout(Some(REPLY_TIMEOUT)).expect("set read timeout");
    con.set_write_timeout(Some(REPLY_TIMEOUT)).expect("set write timeout");
    con
}

/// The whole error line the server sent (`ERR wrong number of ...`), rebuilt from the
/// code and detail redis-rs splits it into. Panics if `err` is not a server error.
pub fn error_text(err: &redis::RedisError) -> String {
    let code = err.code().unwrap_or_else(|| panic!("not a server error reply: {err:?}"));
    match err.detail() {
        Some(detail) => format!("{code} {detail}"),
        None => code.to_string(),
    }
}

/// Run `cmd`, expect an error reply, and return its full text.
pub fn query_error(cmd: &redis::Cmd, con: &mut redis::Connection) -> String {
    match cmd.query::<redis::Value>(con) {
        Ok(value) => panic!("expected an error reply, got {value:?}"),
        Err(e) => error_text(&e),
    }
}

/// Build a command from string arguments: `command(&["SET", "k", "v"])`.
pub fn command(args: &[&str]) -> redis::Cmd {
    let mut cmd = redis::cmd(args[0]);
    for arg in &args[1..] {
        cmd.arg(*arg);
    }
    cmd
}

/// A raw TCP connection for sending bytes no client library would send.
pub fn raw_connect(server: &ServerGuard) -> TcpStream {
    let stream = TcpStream::connect(server.addr()).expect("raw connect");
    stream.set_read_timeout(Some(Duration::from_secs(5))).expect("set read timeout");
    stream.set_write_timeout(Some(Duration::from_secs(5))).expect("set write timeout");
    stream.set_nodelay(true).expect("nodelay");
    stream
}

/// CLIENT ID asked on a raw connection, its reply read byte by byte (nothing after it).
pub fn raw_client_id(stream: &mut std::net::TcpStream) -> i64 {
    use std::io::{Read, Write};
    stream.write_all(b"CLIENT ID\r\n").expect("write");
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while !line.ends_with(b"\r\n") {
        stream.read_exact(&mut byte).expect("read CLIENT ID reply");
        line.push(byte[0]);
    }
    String::from_utf8_lossy(&line[1..line.len() - 2]).parse().expect("id")
}

/// How a raw read ended.
#[derive(Debug, PartialEq, Eq)]
pub enum ReadEnd {
    /// The server closed the connection (EOF or reset).
    Closed,
    /// Nothing more arrived before the read timeout; the connection is still open.
    TimedOut,
}

/// Read everything the server sends until it closes the connection or goes quiet for
/// the stream's read timeout.
pub fn read_until_close(stream: &mut TcpStream) -> (Vec<u8>, ReadEnd) {
    use std::io::{ErrorKind, Read};
    let mut out = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return (out, ReadEnd::Closed),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::TimedOut => return (out, ReadEnd::TimedOut),
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => return (out, ReadEnd::Closed),
        }
    }
}

/// Read exactly `len` bytes (a known reply) from a raw stream.
pub fn read_exact_reply(stream: &mut TcpStream, len: usize) -> Vec<u8> {
    use std::io::Read;
    let mut out = vec![0u8; len];
    stream.read_exact(&mut out).expect("read the expected reply");
    out
}

/// Send SIGTERM to the server process.
pub fn send_sigterm(server: &ServerGuard) {
    let status = Command::new("kill").args(["-TERM", &server.child.id().to_string()]).status().expect("run kill");
    assert!(status.success(), "kill -TERM failed: {status}");
}

/// Wait up to `timeout` for the server process to exit; `None` if it is still running.
pub fn wait_for_exit(server: &mut ServerGuard, timeout: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = server.child.try_wait().expect("try_wait") {
            return Some(status);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether the server process is still running.
pub fn is_alive(server: &mut ServerGuard) -> bool {
    server.child.try_wait().expect("try_wait").is_none()
}

/// Poll `check` every 20 ms until it returns true or `timeout` passes; returns whether
/// it became true.
pub fn eventually(timeout: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if check() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `count` keys `{prefix}{n}`, chosen with the server's own routing function so that
/// the shards (of `shards`) own them in turn: key `i` lives on shard `i % shards`.
pub fn keys_spread_over_shards(prefix: &str, count: usize, shards: usize) -> Vec<String> {
    let mut per_shard: Vec<std::collections::VecDeque<String>> = vec![std::collections::VecDeque::new(); shards];
    let quota = count.div_ceil(shards);
    for n in 0..1_000_000 {
        let key = format!("{prefix}{n}");
        let shard = meridian::routing::shard_for_key(key.as_bytes(), shards);
        if per_shard[shard].len() < quota {
            per_shard[shard].push_back(key);
        }
        if per_shard.iter().all(|q| q.len() >= quota) {
            break;
        }
    }
    let keys: Vec<String> = (0..count).map(|i| per_shard[i % shards].pop_front().expect("enough keys per shard")).collect();
    assert!(
        count < shards || keys.iter().map(|k| shard_of(k.as_bytes(), shards)).collect::<std::collections::HashSet<_>>().len() == shards
    );
    keys
}

/// The first key `{prefix}{i}` owned by `shard` (of `shards`).
pub fn key_on_shard(prefix: &str, shard: usize, shards: usize) -> String {
    (0..100_000)
        .map(|i| format!("{prefix}{i}"))
        .find(|k| meridian::routing::shard_for_key(k.as_bytes(), shards) == shard)
        .expect("a key on every shard")
}

/// The shard (of `shards`) that owns `key`.
pub fn shard_of(key: &[u8], shards: usize) -> usize {
    meridian::routing::shard_for_key(key, shards)
}

// ---------------------------------------------------------------------------------------
// Helpers for tests whose data outlives one server process (persistence).
// ---------------------------------------------------------------------------------------

/// A temporary directory that outlives the servers started on it and is removed when
/// this guard drops.
pub struct TempDir {
    pub path: PathBuf,
}

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        TempDir { path: temp_dir(tag) }
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Spawn `meridian --data-dir DATA_DIR EXTRA_ARGS` on a free port with extra environment
/// variables, its stderr (the log) appended to `log`, without waiting for it to listen.
/// The data dir is never removed by the returned process handle.
pub fn spawn_meridian_at(data_dir: &std::path::Path, extra_args: &[&str], envs: &[(&str, &str)], log: &std::path::Path) -> (Child, u16) {
    let port = free_port();
    let log_file = std::fs::OpenOptions::new().create(true).append(true).open(log).expect("open the server log file");
    let child = Command::new(env!("CARGO_BIN_EXE_meridian"))
        .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
        .arg("--data-dir")
        .arg(data_dir)
        .args(extra_args)
        .envs(envs.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(log_file))
        .spawn()
        .expect("spawn meridian");
    (child, port)
}

/// Like [`start_meridian`], but on the given data dir (kept when the server stops, so a
/// later process can recover from it), with extra environment variables, and its log
/// in `log`. Waits until it answers PING.
pub fn start_meridian_at(data_dir: &std::path::Path, extra_args: &[&str], envs: &[(&str, &str)], log: &std::path::Path) -> ServerGuard {
    let (mut child, port) = spawn_meridian_at(data_dir, extra_args, envs, log);
    if let Err(message) = wait_until_serving_or_exit(&mut child, port, Duration::from_secs(20)) {
        let _ = child.kill();
        let _ = child.wait();
        panic!("{message}\n--- server log {} ---\n{}", log.display(), read_log(log));
    }
    ServerGuard { child, port, data_dir: None }
}

/// Whether the server on `port` answers PING. The listening socket is bound before
/// recovery runs, and PING answers `-LOADING` until the data is loaded (as Redis 7), so
/// a TCP connect alone does not prove the server is serving (or will).
pub fn answers_ping(port: u16) -> bool {
    use std::io::{BufRead, Write};
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else { return false };
    let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
    if stream.write_all(b"*1\r\n$4\r\nPING\r\n").is_err() {
        return false;
    }
    let mut line = String::new();
    if std::io::BufReader::new(stream).read_line(&mut line).is_err() {
        return false;
    }
    // With requirepass a serving node answers NOAUTH; while it loads, LOADING.
    line == "+PONG\r\n" || line.starts_with("-NOAUTH")
}

/// Wait until the server answers PING; an error if it exits first or takes too long.
pub fn wait_until_serving_or_exit(child: &mut Child, port: u16, timeout: Duration) -> Result<(), String> {
    let deadline = Instant::now() + timeout;
    loop {
        if child_serves(child, port) {
            return Ok(());
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("server on port {port} exited before serving: {status}"));
        }
        if Instant::now() >= deadline {
            return Err(format!("server on port {port} did not answer PING in {timeout:?}"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A server log file's text ("" when it does not exist yet).
pub fn read_log(path: &std::path::Path) -> String {
    std::fs::read(path).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default()
}

/// `INFO section` as `field -> value`.
pub fn info_fields(con: &mut redis::Connection, section: &str) -> std::collections::HashMap<String, String> {
    let text: String = redis::cmd("INFO").arg(section).query(con).expect("INFO");
    text.lines().filter_map(|line| line.split_once(':')).map(|(name, value)| (name.to_string(), value.trim_end().to_string())).collect()
}

/// One numeric `INFO` field; panics when it is missing or not a number.
pub fn info_u64(con: &mut redis::Connection, section: &str, field: &str) -> u64 {
    let fields = info_fields(con, section);
    let value = fields.get(field).unwrap_or_else(|| panic!("INFO {section} has no {field}: {fields:?}"));
    value.parse().unwrap_or_else(|_| panic!("INFO {section} {field} is not a number: {value:?}"))
}

/// Wait (up to 10 s) until every write made so far is stored in a segment, and return
/// `last_segment`. INFO must show the shards' delta logs drained (`delta_log_entries:0`),
/// nothing pending in the streamer, and a segment stored after `segment_before`. INFO's
/// sections are sampled at different moments, so it cannot prove that the figures were
/// taken after the last drain; `WAITAOF 1 0` (which waits for the stored position to
/// pass every shard's delta stream) closes that gap.
pub fn wait_flushed(con: &mut redis::Connection, segment_before: u64) -> u64 {
    let mut last = (0, 0, 0);
    let settled = eventually(Duration::from_secs(10), || {
        let log_entries = info_u64(con, "stats", "delta_log_entries");
        let persistence = info_fields(con, "persistence");
        let number = |f: &str| persistence.get(f).and_then(|v| v.parse::<u64>().ok()).unwrap_or(u64::MAX);
        last = (log_entries, number("pending_deltas"), number("last_segment"));
        last.0 == 0 && last.1 == 0 && last.2 != u64::MAX && last.2 > segment_before
    });
    assert!(
        settled,
        "writes not flushed in 10 s: (delta_log_entries, pending_deltas, last_segment) = {last:?}, segment before = {segment_before}"
    );
    let stored: (i64, i64) = redis::cmd("WAITAOF").arg(1).arg(0).arg(5000).query(con).expect("WAITAOF");
    assert_eq!(stored, (1, 0), "WAITAOF 1 0 5000 after INFO showed everything flushed");
    info_u64(con, "persistence", "last_segment")
}

/// Wait (up to 10 s) until the node has claimed its manifest epoch (INFO persistence
/// shows zeros until the persistence thread's first round) and return
/// `(manifest_epoch, last_segment)`.
pub fn wait_claimed(con: &mut redis::Connection) -> (u64, u64) {
    let claimed = eventually(Duration::from_secs(10), || info_u64(con, "persistence", "manifest_epoch") > 0);
    assert!(claimed, "no manifest epoch claimed in 10 s: {:?}", info_fields(con, "persistence"));
    (info_u64(con, "persistence", "manifest_epoch"), info_u64(con, "persistence", "last_segment"))
}

/// Start meridian with two shards on `data_dir`, which outlives the process so that a
/// restart recovers from it; the log goes next to the data dir.
pub fn start_meridian_on(data_dir: &std::path::Path, extra_args: &[&str]) -> ServerGuard {
    let log = data_dir.with_extension("log");
    let mut args = vec!["--shards", "2"];
    args.extend_from_slice(extra_args);
    start_meridian_at(data_dir, &args, &[], &log)
}

/// Start a peer `redis-server` with `module` loaded (FalkorDB, RediSearch), no
/// persistence, on an ephemeral loopback port, with `LD_LIBRARY_PATH` set to `libs` when
/// given; wait until it answers PING (at most 20 s). `name` is for the failure message.
pub fn start_module_server(name: &str, server: &std::path::Path, module: &std::path::Path, libs: Option<&std::path::Path>) -> ServerGuard {
    let port = free_port();
    let mut command = Command::new(server);
    command.args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--loadmodule"]).arg(module);
    if let Some(libs) = libs {
        command.env("LD_LIBRARY_PATH", libs);
    }
    let child = command.stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap_or_else(|e| panic!("start {name}'s redis-server: {e}"));
    let guard = ServerGuard { child, port, data_dir: None };
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(client) = redis::Client::open(guard.url())
            && let Ok(mut con) = client.get_connection()
            && redis::cmd("PING").query::<String>(&mut con).is_ok()
        {
            return guard;
        }
        assert!(Instant::now() < deadline, "{name} did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Atomicity across shards, as a client sees it: two writers each run `increment_all`
/// (every key of `keys` incremented in one atomic step: a transaction, a script) again
/// and again for three seconds while a reader runs `read_all` (every key read in one
/// atomic step). Every read must see the keys level, and the first key must end at the
/// number of steps the writers made. `what` names the step in failure messages.
pub fn assert_never_seen_half_done(
    server: &ServerGuard,
    keys: &[String],
    what: &str,
    increment_all: fn(&mut redis::Connection, &[String]),
    read_all: fn(&mut redis::Connection, &[String]) -> Vec<Option<i64>>,
) {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..2)
        .map(|_| {
            let mut con = connect(server);
            let keys = keys.to_vec();
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut done = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    increment_all(&mut con, &keys);
                    done += 1;
                }
                done
            })
        })
        .collect();
    let mut reader = connect(server);
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut reads = 0;
    while Instant::now() < deadline {
        let values = read_all(&mut reader, keys);
        assert!(values.windows(2).all(|w| w[0] == w[1]), "a {what} saw half of another: {values:?}");
        reads += 1;
    }
    stop.store(true, Ordering::Relaxed);
    let written: u64 = writers.into_iter().map(|w| w.join().expect("writer")).sum();
    let total: i64 = redis::cmd("GET").arg(&keys[0]).query(&mut reader).expect("GET");
    assert_eq!(total as u64, written, "every {what} incremented every key once");
    assert!(reads > 10 && written > 10, "the test ran: {reads} reads, {written} writes");
}
