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
