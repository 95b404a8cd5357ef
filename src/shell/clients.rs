//! The registry of connected clients: what CLIENT LIST/INFO/KILL and INFO clients see.
//!
//! Each connection registers an `Arc<ClientInfo>`; the hot path only does relaxed
//! atomic stores on it (once per batch), and the registry lock is taken only on
//! connect, disconnect and CLIENT commands.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::command::{ClientFilter, ClientType};
use bytes::Bytes;
use futures_util::task::AtomicWaker;
use tokio::sync::Notify;

/// `repr(C)` and aligned to a cache line so that what the connection's own task touches
/// on every request (the kill flag and waker, the last command, the buffer gauges) sits
/// together at the start, in two cache lines: with fifty connections each request finds
/// its client's entry cold, and these fields spread over the struct by the compiler's
/// layout cost a first-level miss each (callgrind, P=1: five to six a request; the
/// test below keeps them together).
#[repr(C, align(64))]
pub struct ClientInfo {
    pub killed: AtomicBool,
    /// Set by [`ClientRegistry::release_idle_buffers`]: the connection should give back
    /// the buffers it holds empty (see [`ClientInfo::attention`]).
    pub release_requested: AtomicBool,
    /// Wakes the connection's task when `killed` is set (see [`ClientInfo::kill_requested`]).
    kill: AtomicWaker,
    /// When the last command ran (wall-clock unix ms, as Redis's `lastinteraction`
    /// is wall-clock time); 0 before the first.
    pub last_active_ms: AtomicU64,
    /// Index into the command table of the last command (usize::MAX: none yet).
    pub last_command: AtomicUsize,
    /// What CLIENT LIST shows of the connection's buffers and transaction.
    pub buffers: BufferGauge,
    // Fields below are read and written on connect, on CLIENT commands and on rare
    // paths only.
    pub id: u64,
    pub addr: SocketAddr,
    pub local_addr: SocketAddr,
    pub fd: i64,
    pub created: Instant,
    pub name: Mutex<Bytes>,
    /// The last container command's `container|subcommand` name.
    pub last_subcommand: Mutex<String>,
    pub resp: AtomicU8,
    /// In a blocking pop now (CLIENT UNBLOCK applies only then).
    pub blocked: AtomicBool,
    /// CLIENT UNBLOCK: wake the blocking pop, with an error when `unblock_error`.
    pub unblock: Notify,
    pub unblock_error: AtomicBool,
}

/// What CLIENT LIST shows of a connection's buffers (`qbuf`, `qbuf-free`, `rbs`, `rbp`,
/// `obl`, `omem`, `tot-mem`, `events`) and of its transaction (`multi`, `multi-mem`,
/// flag `x`). Published by the connection's own task with relaxed stores, as a pipeline
/// starts and ends and while a reply waits for the socket: nothing is counted per
/// command, no clock is read, no lock taken.
#[repr(C)]
pub struct BufferGauge {
    /// Bytes in the query buffer. While a pipeline runs, every byte of the read it came
    /// in (Redis's `qbuf` counts the whole read until its commands have run, so a
    /// client listing itself sees its own request); between pipelines, the part of a
    /// request still incomplete.
    pub query_bytes: AtomicU64,
    pub query_capacity: AtomicU64,
    /// The most bytes the query buffer has held at a pipeline's start.
    pub query_peak: AtomicU64,
    /// The same since the last sweep of idle buffers, which takes it (so that a buffer
    /// one big command grew is given back once the commands after it are small).
    pub query_peak_recent: AtomicU64,
    /// An incomplete command's arguments already taken off the query buffer.
    pub partial_args_bytes: AtomicU64,
    /// Reply bytes written to the connection but not yet taken by its socket.
    pub output_pending: AtomicU64,
    pub output_capacity: AtomicU64,
    /// Commands queued since MULTI, or -1 outside a transaction.
    pub multi_queued: AtomicI64,
    /// What the queued commands' arguments hold.
    pub multi_bytes: AtomicU64,
}

impl Default for BufferGauge {
    fn default() -> Self {
        BufferGauge {
            query_bytes: AtomicU64::new(0),
            query_capacity: AtomicU64::new(0),
            query_peak: AtomicU64::new(0),
            query_peak_recent: AtomicU64::new(0),
            partial_args_bytes: AtomicU64::new(0),
            output_pending: AtomicU64::new(0),
            output_capacity: AtomicU64::new(0),
            multi_queued: AtomicI64::new(-1),
            multi_bytes: AtomicU64::new(0),
        }
    }
}

impl BufferGauge {
    /// A pipeline starts, read from a query buffer of `bytes` (of `capacity`). Only the
    /// connection's task writes the gauge, so the peak needs no atomic read-modify-write.
    pub fn pipeline_started(&self, bytes: usize, capacity: usize) {
        self.partial_args_bytes.store(0, Ordering::Relaxed);
        self.query_bytes.store(bytes as u64, Ordering::Relaxed);
        self.query_capacity.store(capacity as u64, Ordering::Relaxed);
        if bytes as u64 > self.query_peak.load(Ordering::Relaxed) {
            self.query_peak.store(bytes as u64, Ordering::Relaxed);
        }
        // The sweep may take the recent peak between the load and the store: it then
        // sees this pipeline's bytes at its next sweep instead, which only delays a
        // shrink.
        if bytes as u64 > self.query_peak_recent.load(Ordering::Relaxed) {
            self.query_peak_recent.store(bytes as u64, Ordering::Relaxed);
        }
    }

    /// The connection waits for more of its client's bytes with `bytes` of an
    /// incomplete request in its query buffer (of `capacity`) and `partial_args` bytes
    /// of that request's arguments already parsed.
    pub fn waiting_to_read(&self, bytes: usize, capacity: usize, partial_args: usize) {
        self.query_bytes.store(bytes as u64, Ordering::Relaxed);
        self.query_capacity.store(capacity as u64, Ordering::Relaxed);
        self.partial_args_bytes.store(partial_args as u64, Ordering::Relaxed);
    }

    /// A pipeline's commands have run: what the transaction holds now. Published before
    /// the replies leave, so a client that has read its QUEUED sees it counted.
    pub fn pipeline_ran(&self, (multi_queued, multi_bytes): (i64, usize)) {
        self.multi_queued.store(multi_queued, Ordering::Relaxed);
        self.multi_bytes.store(multi_bytes as u64, Ordering::Relaxed);
    }

    /// A pipeline's replies are written: what the reply buffer holds now.
    pub fn pipeline_ended(&self, output_capacity: usize) {
        self.output_capacity.store(output_capacity as u64, Ordering::Relaxed);
    }

    /// CLIENT LIST's buffer and transaction fields, from `multi=` to `events=`.
    fn describe(&self) -> String {
        let load = |field: &AtomicU64| field.load(Ordering::Relaxed);
        let (query, query_capacity, pending) = (load(&self.query_bytes), load(&self.query_capacity), load(&self.output_pending));
        let (multi_bytes, partial_args) = (load(&self.multi_bytes), load(&self.partial_args_bytes));
        let total = query_capacity + partial_args + load(&self.output_capacity).max(pending) + multi_bytes;
        format!(
            "multi={} qbuf={query} qbuf-free={} argv-mem={partial_args} multi-mem={multi_bytes} rbs={query_capacity} rbp={} obl={pending} oll=0 omem={pending} tot-mem={total} events={}",
            self.multi_queued.load(Ordering::Relaxed),
            query_capacity.saturating_sub(query),
            load(&self.query_peak),
            if pending > 0 { "rw" } else { "r" },
        )
    }
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

    /// A command ran at `now_ms` (the pipeline's clock reading: no clock read here).
    pub fn touch(&self, command_index: usize, now_ms: u64) {
        self.last_active_ms.store(now_ms, Ordering::Relaxed);
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
        self.killed.store(true, Ordering::SeqCst);
        self.kill.wake();
    }

    /// Completes once the client has been asked to go (at once if it already has).
    /// Safe to drop in a `select!`. Only the connection's own task may wait on it: the
    /// signal keeps one waker. Why not a `Notify`: a connection waits on this around
    /// every read, and a `Notify` takes its waiter list's lock twice per wait (enqueue
    /// and drop), about 300 instructions of a request at pipeline depth 1; registering
    /// a waker that is mostly the same one is a few atomic operations.
    pub fn kill_requested(&self) -> impl std::future::Future<Output = ()> + '_ {
        self.signalled(false)
    }

    /// Completes once the client is killed, or (with `or_release`) asked to give its
    /// buffers back.
    fn signalled(&self, or_release: bool) -> impl std::future::Future<Output = ()> + '_ {
        std::future::poll_fn(move |cx| {
            // Register before looking: a signal that sets its flag after the look wakes
            // the waker just registered.
            self.kill.register(cx.waker());
            let release = or_release && self.release_requested.load(Ordering::SeqCst);
            if self.killed.load(Ordering::SeqCst) || release { std::task::Poll::Ready(()) } else { std::task::Poll::Pending }
        })
    }

    /// Ask the connection to give back the buffers it holds empty (it does so the next
    /// time it waits for its client).
    pub fn request_buffer_release(&self) {
        self.release_requested.store(true, Ordering::SeqCst);
        self.kill.wake();
    }

    /// [`ClientInfo::kill_requested`], or a buffer release asked for: what a connection
    /// waiting for its client's next bytes must wake for. The caller tells the two apart
    /// by `killed`. Same waker slot, same rules: only the connection's own task waits.
    pub fn attention(&self) -> impl std::future::Future<Output = ()> + '_ {
        self.signalled(true)
    }

    /// Whether the sweep should ask this connection to give its buffers back at
    /// `now_ms`: it holds some and has been idle for [`BUFFERS_IDLE_RELEASE_MS`], or
    /// its query buffer is past [`BUFFER_SHRINK_BYTES_MIN`] while its pipelines since
    /// the last sweep used under half of it, or its reply buffer is past that and
    /// empty. Takes the recent query peak (each sweep looks at its own period).
    fn buffers_worth_releasing(&self, now_ms: u64) -> bool {
        let load = |field: &AtomicU64| field.load(Ordering::Relaxed);
        let gauge = &self.buffers;
        let (query, output) = (load(&gauge.query_capacity), load(&gauge.output_capacity));
        let recent_peak = gauge.query_peak_recent.swap(0, Ordering::Relaxed);
        if query + output == 0 || self.release_requested.load(Ordering::Relaxed) {
            return false;
        }
        let idle_ms = match load(&self.last_active_ms) {
            0 => self.created.elapsed().as_millis() as u64,
            last_ms => now_ms.saturating_sub(last_ms),
        };
        idle_ms >= BUFFERS_IDLE_RELEASE_MS
            || (query > BUFFER_SHRINK_BYTES_MIN && recent_peak < query / 2)
            || (output > BUFFER_SHRINK_BYTES_MIN && load(&gauge.output_pending) == 0)
    }

    /// A container command's subcommand ran (`client|list`): CLIENT LIST's `cmd` names it.
    pub fn set_subcommand(&self, name: &str) {
        if let Ok(mut guard) = self.last_subcommand.lock() {
            guard.clear();
            guard.push_str(name);
        }
    }

    /// The last command's name as Redis's CLIENT LIST writes it: `get`, `client|list`,
    /// `NULL` before the first.
    fn last_command_name(&self) -> String {
        let Some(spec) = crate::command::table::COMMANDS.get(self.last_command.load(Ordering::Relaxed)) else { return "NULL".to_owned() };
        if spec.is_container()
            && let Ok(sub) = self.last_subcommand.lock()
            && sub.strip_prefix(spec.name).is_some_and(|rest| rest.starts_with('|'))
        {
            return sub.clone();
        }
        spec.name.to_owned()
    }

    /// Whether CLIENT LIST's or CLIENT KILL's `filter` selects this client, which holds
    /// `subscriptions` (by kind).
    pub fn matches(&self, filter: &ClientFilter, subscriptions: [usize; 3]) -> bool {
        let subscribed = subscriptions.iter().any(|&n| n > 0);
        filter.ids.as_ref().is_none_or(|ids| ids.contains(&self.id))
            && filter.addr.as_ref().is_none_or(|a| a.as_ref() == self.addr.to_string().as_bytes())
            && filter.laddr.as_ref().is_none_or(|a| a.as_ref() == self.local_addr.to_string().as_bytes())
            && filter.client_type.is_none_or(|t| match t {
                ClientType::Normal => !subscribed,
                ClientType::PubSub => subscribed,
                ClientType::Master | ClientType::Replica => false,
            })
    }

    /// One CLIENT LIST line, fields named as Redis names them (`subscriptions`: by
    /// kind, from the Pub/Sub broker).
    pub fn describe(&self, subscriptions: [usize; 3]) -> String {
        let age_s = self.created.elapsed().as_secs();
        let idle_s = match self.last_active_ms.load(Ordering::Relaxed) {
            0 => age_s,
            last_ms => (super::now_ms().saturating_sub(last_ms) / 1000).min(age_s),
        };
        let [sub, psub, ssub] = subscriptions;
        // In Redis's order of the flags: P(ub/sub), x (MULTI), b(locked); N for none.
        let mut flags = String::new();
        if sub + psub + ssub > 0 {
            flags.push('P');
        }
        if self.buffers.multi_queued.load(Ordering::Relaxed) >= 0 {
            flags.push('x');
        }
        if self.blocked.load(Ordering::Relaxed) {
            flags.push('b');
        }
        if flags.is_empty() {
            flags.push('N');
        }
        format!(
            "id={} addr={} laddr={} fd={} name={} age={} idle={} flags={flags} db=0 sub={sub} psub={psub} ssub={ssub} {} cmd={} user=default redir=-1 resp={}",
            self.id,
            self.addr,
            self.local_addr,
            self.fd,
            String::from_utf8_lossy(&self.name()),
            age_s,
            idle_s,
            self.buffers.describe(),
            self.last_command_name(),
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
            last_subcommand: Mutex::new(String::new()),
            resp: AtomicU8::new(2),
            killed: AtomicBool::new(false),
            release_requested: AtomicBool::new(false),
            kill: AtomicWaker::new(),
            blocked: AtomicBool::new(false),
            unblock: Notify::new(),
            unblock_error: AtomicBool::new(false),
            buffers: BufferGauge::default(),
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

    /// Ask every connection whose buffers are worth giving back to give them back
    /// (see [`ClientInfo::buffers_worth_releasing`]); how many were asked.
    pub fn release_idle_buffers(&self, now_ms: u64) -> usize {
        let Ok(clients) = self.clients.lock() else { return 0 };
        let mut asked = 0;
        for client in clients.values().filter(|c| c.buffers_worth_releasing(now_ms)) {
            client.request_buffer_release();
            asked += 1;
        }
        asked
    }
}

/// A connection idle this long gives back its empty buffers (Redis frees an idle
/// client's query buffer after two seconds too): an idle connection then holds no
/// read or reply buffer, where it held 32 KiB of them for good.
pub const BUFFERS_IDLE_RELEASE_MS: u64 = 2_000;

/// A busy connection's buffer bigger than this is given back once it is used under
/// half (query) or empty (replies): one big command or reply does not pin its buffer.
pub const BUFFER_SHRINK_BYTES_MIN: u64 = 32 * 1024;

/// How often connections' buffers are looked at.
pub const BUFFER_SWEEP_INTERVAL_MS: u64 = 250;

/// Look at every connection's buffers every [`BUFFER_SWEEP_INTERVAL_MS`] while the
/// server runs. The registry's lock is taken once a sweep, a few atomic loads a
/// connection under it.
pub async fn buffer_sweep_loop(state: std::sync::Weak<super::ServerState>) {
    let mut tick = tokio::time::interval(std::time::Duration::from_millis(BUFFER_SWEEP_INTERVAL_MS));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(state) = state.upgrade() else { return };
        state.clients.release_idle_buffers(super::now_ms());
    }
}

#[cfg(test)]
mod tests {
    use super::{BufferGauge, ClientInfo};
    use std::mem::{align_of, offset_of, size_of};

    /// What a connection touches on every request stays in the first two cache lines
    /// (the struct's layout comment says why): a field added before them, or a gauge
    /// grown past them, fails here.
    #[test]
    fn per_request_fields_share_the_first_two_cache_lines() {
        assert_eq!(align_of::<ClientInfo>(), 64);
        for (field, offset) in [
            ("killed", offset_of!(ClientInfo, killed)),
            ("kill", offset_of!(ClientInfo, kill)),
            ("last_active_ms", offset_of!(ClientInfo, last_active_ms)),
            ("last_command", offset_of!(ClientInfo, last_command)),
        ] {
            assert!(offset < 64, "{field} at byte {offset}");
        }
        let gauges_end = offset_of!(ClientInfo, buffers) + size_of::<BufferGauge>();
        assert!(gauges_end <= 128, "the buffer gauges end at byte {gauges_end}");
    }
}
