//! The registry of connected clients: what CLIENT LIST/INFO/KILL and INFO clients see.
//!
//! Each connection registers an `Arc<ClientInfo>`; the hot path only does relaxed
//! atomic stores on it (once per batch), and the registry lock is taken only on
//! connect, disconnect and CLIENT commands.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::Bytes;
use tokio::sync::Notify;

pub struct ClientInfo {
    pub id: u64,
    pub addr: SocketAddr,
    pub local_addr: SocketAddr,
    pub fd: i64,
    pub created: Instant,
    pub name: Mutex<Bytes>,
    /// Milliseconds since `created` of the last command.
    pub last_active_ms: AtomicU64,
    /// Index into the command table of the last command (usize::MAX: none yet).
    pub last_command: AtomicUsize,
    pub resp: AtomicU8,
    pub killed: AtomicBool,
    pub kill: Notify,
    /// In a blocking pop now (CLIENT UNBLOCK applies only then).
    pub blocked: AtomicBool,
    /// CLIENT UNBLOCK: wake the blocking pop, with an error when `unblock_error`.
    pub unblock: Notify,
    pub unblock_error: AtomicBool,
}

impl ClientInfo {
    pub fn name(&self) -> Bytes {
        self.name.lock().map(|n| n.clone()).unwrap_or_default()
    }

    pub fn set_name(&self, name: Bytes) {
        if let Ok(mut guard) = self.name.lock() {
            *guard = name;
        }
    }

    pub fn touch(&self, command_index: usize) {
        self.last_active_ms.store(self.created.elapsed().as_millis() as u64, Ordering::Relaxed);
        self.last_command.store(command_index, Ordering::Relaxed);
    }

    /// CLIENT UNBLOCK: whether the client was blocked (and is now woken).
    pub fn request_unblock(&self, error: bool) -> bool {
        if !self.blocked.load(Ordering::Relaxed) {
            return false;
        }
        self.unblock_error.store(error, Ordering::Relaxed);
        self.unblock.notify_one();
        true
    }

    pub fn request_kill(&self) {
        self.killed.store(true, Ordering::Relaxed);
        self.kill.notify_one();
    }

    /// One CLIENT LIST line, fields named as Redis names them.
    pub fn describe(&self) -> String {
        let age_s = self.created.elapsed().as_secs();
        let idle_s = age_s.saturating_sub(self.last_active_ms.load(Ordering::Relaxed) / 1000);
        let cmd = crate::command::table::COMMANDS.get(self.last_command.load(Ordering::Relaxed)).map_or("NULL", |spec| spec.name);
        format!(
            "id={} addr={} laddr={} fd={} name={} age={} idle={} flags=N db=0 sub=0 psub=0 ssub=0 multi=-1 qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd={} user=default redir=-1 resp={}",
            self.id,
            self.addr,
            self.local_addr,
            self.fd,
            String::from_utf8_lossy(&self.name()),
            age_s,
            idle_s,
            cmd,
            self.resp.load(Ordering::Relaxed)
        )
    }
}

#[derive(Default)]
pub struct ClientRegistry {
    clients: Mutex<BTreeMap<u64, Arc<ClientInfo>>>,
    next_id: AtomicU64,
}

impl ClientRegistry {
    pub fn register(&self, addr: SocketAddr, local_addr: SocketAddr, fd: i64) -> Arc<ClientInfo> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let info = Arc::new(ClientInfo {
            id,
            addr,
            local_addr,
            fd,
            created: Instant::now(),
            name: Mutex::new(Bytes::new()),
            last_active_ms: AtomicU64::new(0),
            last_command: AtomicUsize::new(usize::MAX),
            resp: AtomicU8::new(2),
            killed: AtomicBool::new(false),
            kill: Notify::new(),
            blocked: AtomicBool::new(false),
            unblock: Notify::new(),
            unblock_error: AtomicBool::new(false),
        });
        if let Ok(mut clients) = self.clients.lock() {
            clients.insert(id, info.clone());
        }
        info
    }

    pub fn unregister(&self, id: u64) {
        if let Ok(mut clients) = self.clients.lock() {
            clients.remove(&id);
        }
    }

    pub fn count(&self) -> usize {
        self.clients.lock().map(|c| c.len()).unwrap_or(0)
    }

    pub fn all(&self) -> Vec<Arc<ClientInfo>> {
        self.clients.lock().map(|c| c.values().cloned().collect()).unwrap_or_default()
    }
}
