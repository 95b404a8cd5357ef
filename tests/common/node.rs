//! One node's data dir across processes, for the persistence tests: start a process
//! on it, kill it with SIGKILL, start the next (`tests/persistence.rs`,
//! `tests/persistence_collections.rs`).

use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::Duration;

use super::{ServerGuard, TempDir, read_log, spawn_meridian_at, start_meridian_at};

/// One node's data dir, started by one process after another; each process logs to
/// its own file beside the data.
pub struct Node {
    _dir: TempDir,
    pub data: PathBuf,
    logs: PathBuf,
}

impl Node {
    pub fn new(tag: &str) -> Node {
        let dir = TempDir::new(tag);
        let data = dir.path.join("data");
        std::fs::create_dir_all(&data).expect("create the data dir");
        Node { data, logs: dir.path.clone(), _dir: dir }
    }

    pub fn log(&self, name: &str) -> PathBuf {
        self.logs.join(format!("{name}.log"))
    }

    pub fn start(&self, name: &str, args: &[&str]) -> ServerGuard {
        start_meridian_at(&self.data, args, &[], &self.log(name))
    }

    /// Start a process: the server once it listens, or its exit status and log if it
    /// stops first (refuses to start).
    pub fn try_start(&self, name: &str, args: &[&str]) -> Result<ServerGuard, (ExitStatus, String)> {
        let (mut child, port) = spawn_meridian_at(&self.data, args, &[], &self.log(name));
        match super::wait_until_serving_or_exit(&mut child, port, Duration::from_secs(15)) {
            Ok(()) => Ok(ServerGuard { child, port, data_dir: None }),
            Err(message) => match child.try_wait().expect("try_wait") {
                Some(status) => Err((status, read_log(&self.log(name)))),
                None => {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!("meridian {args:?}: {message}");
                }
            },
        }
    }

    pub fn segments_dir(&self) -> PathBuf {
        self.data.join("node-00001").join("segments")
    }
}

/// Kill a server with SIGKILL and reap it.
pub fn kill(server: &mut ServerGuard) {
    server.child.kill().expect("SIGKILL");
    server.child.wait().expect("wait for the killed server");
}

/// Run a command that must succeed; its reply.
pub fn run(con: &mut redis::Connection, args: &[&str]) -> redis::Value {
    super::command(args).query(con).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

/// Run a command that must answer an integer.
pub fn int(con: &mut redis::Connection, args: &[&str]) -> i64 {
    super::command(args).query(con).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}
