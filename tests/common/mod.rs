//! Shared helpers for integration tests: start the real `meridian` binary (or Debian's
//! `redis-server`) on an ephemeral loopback port and stop it when the guard drops.
#![allow(dead_code)]

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

/// An unused loopback port. Racy by nature (another process may take it before the
/// server binds), which is acceptable for tests on one machine.
pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
    listener.local_addr().expect("local addr").port()
}

fn wait_until_listening(child: &mut Child, port: u16) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("server on port {port} exited before listening: {status}");
        }
        assert!(Instant::now() < deadline, "server on port {port} did not start listening");
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
    let status = Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .expect("run kill");
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
        let shard = meridian::shard::routing::shard_for_key(key.as_bytes(), shards);
        if per_shard[shard].len() < quota {
            per_shard[shard].push_back(key);
        }
        if per_shard.iter().all(|q| q.len() >= quota) {
            break;
        }
    }
    let keys: Vec<String> = (0..count).map(|i| per_shard[i % shards].pop_front().expect("enough keys per shard")).collect();
    assert!(count < shards || keys.iter().map(|k| shard_of(k.as_bytes(), shards)).collect::<std::collections::HashSet<_>>().len() == shards);
    keys
}

/// The first key `{prefix}{i}` owned by `shard` (of `shards`).
pub fn key_on_shard(prefix: &str, shard: usize, shards: usize) -> String {
    (0..100_000)
        .map(|i| format!("{prefix}{i}"))
        .find(|k| meridian::shard::routing::shard_for_key(k.as_bytes(), shards) == shard)
        .expect("a key on every shard")
}

/// The shard (of `shards`) that owns `key`.
pub fn shard_of(key: &[u8], shards: usize) -> usize {
    meridian::shard::routing::shard_for_key(key, shards)
}
