//! The tokio world around the deterministic core: the listener, one thread per shard
//! (each a single-threaded runtime that also serves the connections placed on it),
//! the coordinator for multi-shard atomic commands, timers and signals.
//!
//! Kept thin on purpose: deciding things is the shard's job (`shard/`); this layer
//! moves bytes and messages, reads the wall clock, and hands both to the core.

pub mod arrival;
pub mod blocking;
pub mod clients;
pub mod command_stats;
pub mod connection;
pub mod connection_pool;
pub mod coordinator;
pub mod fanout;
pub mod graph_config;
pub mod graph_time;
pub mod idle_poll;
pub mod info;
pub mod list_fanout;
pub mod loading;
pub mod local_store;
pub mod memory;
pub mod metrics;
pub mod monitor;
pub mod notify;
pub mod notify_until;
pub mod park_gate;
pub mod peer_link;
pub mod persistence;
pub mod pubsub;
pub mod read_barrier;
pub mod repl_driver;
pub mod replication;
pub mod restore;
pub mod router;
pub mod script;
pub mod server_stats;
pub mod shard_thread;
pub mod shards;
pub mod sort;
pub mod tls;
pub mod transaction;
pub mod vector;
pub mod zset_fanout;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use tokio::sync::mpsc;

use crate::config::{Config, RuntimeConfig};
use crate::protocol::Frame;
use crate::shard::{Shard, ShardConfig};
use clients::ClientRegistry;
use coordinator::Coordinator;
use router::{MAILBOX_MESSAGES_MAX, Router, ShardMsg};
pub use server_stats::ServerStats;

/// Wall-clock milliseconds since the Unix epoch: the only clock the core ever sees.
/// Shifted by `MERIDIAN_CLOCK_OFFSET_MS` when set (see [`clock_offset_ms`]).
pub fn now_ms() -> u64 {
    let wall_ms = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0);
    wall_ms.saturating_add_signed(clock_offset_ms())
}

/// TIME's reply: seconds and microseconds of the wall clock.
pub fn time_reply() -> Frame {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    Frame::Array(vec![Frame::Bulk(Bytes::from(now.as_secs().to_string())), Frame::Bulk(Bytes::from(now.subsec_micros().to_string()))])
}

/// Most a test may shift the clock: a day either way.
const CLOCK_OFFSET_MS_MAX: i64 = 24 * 60 * 60 * 1000;

/// For tests only (the Jepsen-style test's clock nemesis, tests/jepsen/): milliseconds
/// added to the wall clock, read once from `MERIDIAN_CLOCK_OFFSET_MS` (negative moves
/// it back). Not a setting: a real node has no reason to lie about the time. Read in
/// the shell, the only place that reads the wall clock, so the core stays pure.
pub fn clock_offset_ms() -> i64 {
    static OFFSET_MS: std::sync::OnceLock<i64> = std::sync::OnceLock::new();
    *OFFSET_MS.get_or_init(|| {
        let parsed = std::env::var("MERIDIAN_CLOCK_OFFSET_MS").ok().and_then(|v| v.trim().parse::<i64>().ok());
        parsed.unwrap_or(0).clamp(-CLOCK_OFFSET_MS_MAX, CLOCK_OFFSET_MS_MAX)
    })
}

/// What every connection shares.
pub struct ServerState {
    pub config: Config,
    pub runtime: RuntimeConfig,
    pub router: Router,
    pub coordinator: Coordinator,
    pub clients: ClientRegistry,
    pub pubsub: Arc<pubsub::Broker>,
    /// Clients blocked in BLPOP and the like, by key.
    pub waiters: blocking::Waiters,
    pub stats: ServerStats,
    /// INFO commandstats and errorstats.
    pub command_stats: command_stats::CommandStats,
    /// The clients in MONITOR mode.
    pub monitors: monitor::Monitors,
    pub started: Instant,
    pub run_id: String,
    pub port: u16,
    pub connected: AtomicUsize,
    pub persistence: Arc<std::sync::Mutex<persistence::PersistenceInfo>>,
    pub durability: Arc<persistence::Durability>,
    /// Present when this node replicates.
    pub replication: Option<Arc<replication::Replication>>,
    /// Used memory, sampled for `maxmemory` and INFO.
    pub memory: Arc<memory::MemoryGauge>,
    /// FT.* index definitions, decoded, so that a query makes one hop (`vector.rs`).
    pub vector_definitions: vector::Definitions,
    /// SHUTDOWN was asked for: the accept loop stops as on SIGTERM (a stored permit, so
    /// a request that comes before the loop waits is not lost).
    pub shutdown: tokio::sync::Notify,
    /// Set once the node stops serving (signal or SHUTDOWN), before the final store:
    /// client commands are refused from then on, so none is acknowledged after the
    /// shards' deltas were drained for the last segment (it would be lost).
    pub stopping: std::sync::atomic::AtomicBool,
    /// Lua scripts by SHA1 (EVAL, SCRIPT LOAD).
    pub scripts: script::ScriptCache,
    /// The running script, if any: BUSY and SCRIPT KILL read it.
    pub script_watch: Arc<script::ScriptWatch>,
}

fn run_id() -> String {
    use rand::RngCore;
    let mut bytes = [0u8; 20];
    rand::rng().fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Start the server and serve until SIGINT, SIGTERM or SHUTDOWN.
pub fn run(config: Config) -> Result<(), String> {
    // Recovery runs on this thread, the data path on the shard threads: both carry the
    // planted bug, if any.
    let planted = crate::bugs::plant_from_env()?;
    if let Some(bug) = planted {
        tracing::warn!("PLANTED BUG {} is active (MERIDIAN_PLANTED_BUG): a test build, never for real data", bug.name());
    }
    // Before the first key is hashed: the seed of every hash table (see `hash_seed`).
    let seed = match config.cluster_secret.as_deref().filter(|s| !s.is_empty()) {
        Some(secret) => crate::engine::kv::hash_seed::seed_from_secret(secret.as_bytes()),
        None => rand::random(),
    };
    crate::engine::kv::hash_seed::set_key_hash_seed(seed)?;
    if clock_offset_ms() != 0 {
        tracing::warn!("clock shifted by {} ms (MERIDIAN_CLOCK_OFFSET_MS, for tests)", clock_offset_ms());
    }
    let shard_count = config.shard_count();
    let listener = std::net::TcpListener::bind((config.bind.as_str(), config.port))
        .map_err(|e| format!("cannot listen on {}:{}: {e}", config.bind, config.port))?;
    listener.set_nonblocking(true).map_err(|e| e.to_string())?;
    arrival::enable_on_listener(&listener);
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();

    let mut mailboxes = Vec::with_capacity(shard_count);
    let mut receivers = Vec::with_capacity(shard_count);
    for _ in 0..shard_count {
        let (tx, rx) = mpsc::channel::<ShardMsg>(MAILBOX_MESSAGES_MAX);
        mailboxes.push(tx);
        receivers.push(rx);
    }
    let router = Router::new(mailboxes);

    let metrics_listener = match config.metrics_port {
        None => None,
        Some(metrics_port) => {
            let listener = std::net::TcpListener::bind((config.bind.as_str(), metrics_port))
                .map_err(|e| format!("cannot listen for metrics on {}:{metrics_port}: {e}", config.bind))?;
            listener.set_nonblocking(true).map_err(|e| e.to_string())?;
            tracing::info!("Prometheus metrics at http://{}:{}/metrics", config.bind, listener.local_addr().map(|a| a.port()).unwrap_or(0));
            Some(listener)
        }
    };
    let broker = Arc::new(pubsub::Broker::default());
    let (replication, repl_listener) =
        if config.replication_enabled() { Some(replication::prepare(&config, broker.clone())?) } else { None }
            .map_or((None, None), |(r, l)| (Some(r), l));

    // Clients may connect from now on; they get -LOADING until the data is loaded.
    let gate = loading::open(listener, &config, router.clone())?;

    // Build the shards, and rebuild their data from the object store, before serving.
    let record_deltas = config.persistence_enabled();
    let vector_definitions = vector::Definitions::default();
    let mut shards: Vec<Shard> = (0..shard_count)
        .map(|shard_id| {
            let mut shard_config = ShardConfig::new(shard_id, config.node_id);
            shard_config.shard_count = shard_count;
            shard_config.string_bytes_max = config.proto_max_bulk_len;
            shard_config.rng_seed = rand::random();
            shard_config.record_deltas = record_deltas;
            // Half of --max-unflushed-bytes for the shards' logs, half for the streamer.
            shard_config.delta_log_bytes_max = (config.max_unflushed_bytes / 2 / shard_count).max(64 * 1024);
            shard_config.replicate = replication.is_some();
            shard_config.outbox_bytes_max = (config.repl_backlog_bytes / shard_count).max(64 * 1024);
            shard_config.max_clock_skew_ms = config.max_clock_skew_ms;
            let mut shard = Shard::new(shard_config);
            shard.announce_definitions(vector_definitions.epoch());
            shard
        })
        .collect();
    let io_runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    let durability = Arc::new(persistence::Durability::new(shard_count));
    let persistence_info = Arc::new(std::sync::Mutex::new(persistence::PersistenceInfo::default()));
    let store = if record_deltas {
        let opened = persistence::open_store(&config)?;
        let (store, location) = (opened.store.as_ref(), &opened.location);
        let nonce = run_id();
        if let Err(e) = io_runtime.block_on(persistence::probe_conditional_put(store, config.node_id, &nonce)) {
            if !config.allow_unfenced {
                return Err(e);
            }
            tracing::warn!("RUNNING WITHOUT FENCING (--allow-unfenced): {e}");
        }
        tracing::info!(%location, node_id = config.node_id, "recovering from the object store");
        if config.debug_loading_delay_ms > 0 {
            std::thread::sleep(std::time::Duration::from_millis(config.debug_loading_delay_ms));
        }
        let recovered = persistence::recover(&io_runtime, store, config.node_id, config.accept_data_loss, &mut shards)?;
        // As Redis when it loads: keys already expired are gone before anyone looks.
        let now = now_ms();
        for shard in &mut shards {
            while shard.has_due_expiry(now) && shard.tick(now) > 0 {}
        }
        if let Ok(mut info) = persistence_info.lock() {
            *info = persistence::PersistenceInfo {
                enabled: true,
                location: location.clone(),
                recovered: recovered.clone(),
                ..Default::default()
            };
        }
        if replication.is_some() {
            // Stamps that left the previous process may not have been stored: start
            // above every one that could have (see `replication::reservation`).
            let recovered_hlc = shards.iter().map(|s| s.clock_last()).max().unwrap_or_default();
            durability.durable_hlc.fetch_max(recovered_hlc.0, std::sync::atomic::Ordering::Release);
            let floor = crate::replication::reservation::ceiling(recovered_hlc);
            shards.iter_mut().for_each(|s| s.witness_clock(floor));
        }
        Some((opened, recovered))
    } else {
        tracing::warn!("persistence is off: data lives in memory only and is lost when the process stops");
        None
    };
    drop(io_runtime);

    let (coordinator, coordinator_thread) = Coordinator::start(router.clone());
    let state = Arc::new(ServerState {
        runtime: RuntimeConfig::new(&config),
        router: router.clone(),
        coordinator,
        clients: ClientRegistry::default(),
        pubsub: broker,
        waiters: blocking::Waiters::default(),
        stats: ServerStats::new(config.shard_count()),
        command_stats: command_stats::CommandStats::new(config.shard_count()),
        monitors: monitor::Monitors::default(),
        started: Instant::now(),
        run_id: run_id(),
        port,
        connected: AtomicUsize::new(0),
        persistence: persistence_info.clone(),
        durability,
        replication: replication.clone(),
        memory: Arc::new(memory::MemoryGauge::default()),
        vector_definitions,
        shutdown: tokio::sync::Notify::new(),
        stopping: std::sync::atomic::AtomicBool::new(false),
        scripts: script::ScriptCache::default(),
        script_watch: Arc::new(script::ScriptWatch::default()),
        config,
    });
    state.memory.sample();
    state.pubsub.set_mailbox_bytes_max(state.runtime.output_buffer_limits().pubsub.hard_bytes);

    // Large emptied collections are freed on this thread, not on their shard's.
    let lazyfree = crate::engine::kv::lazyfree::start()?;
    let mut shard_threads = Vec::with_capacity(shard_count);
    for (shard, receiver) in shards.into_iter().zip(receivers) {
        shard_threads.push(shard_thread::spawn(shard, receiver, state.clone(), lazyfree.clone())?);
    }
    drop(lazyfree);
    // The shards serve: the connections accepted while loading move to them.
    let listener = gate.finish()?;
    let durable_positions = store.as_ref().map(|_| state.durability.clone());
    let driver = match store {
        Some((opened, recovered)) => {
            Some(persistence::start(&state.config, opened, router.clone(), &recovered, persistence_info, state.durability.clone())?)
        }
        None => None,
    };
    let replicator = match replication {
        Some(replication) => {
            tracing::info!(
                repl_port = replication.repl_port,
                peers = %state.config.peers.join(","),
                "replicating: listening for peers on port {}",
                replication.repl_port
            );
            let interval = std::time::Duration::from_millis(state.config.repl_batch_ms);
            Some(repl_driver::start(replication, repl_listener, router.clone(), interval, durable_positions)?)
        }
        None => None,
    };

    tracing::info!(
        port,
        bind = %state.config.bind,
        shards = shard_count,
        node_id = state.config.node_id,
        region = %state.config.region,
        "meridian {} ready to accept connections",
        env!("CARGO_PKG_VERSION")
    );

    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    runtime.spawn(memory::sample_loop(Arc::downgrade(&state)));
    runtime.spawn(clients::buffer_sweep_loop(Arc::downgrade(&state)));
    if let Some(metrics) = metrics_listener {
        let metrics = runtime.block_on(async { tokio::net::TcpListener::from_std(metrics) }).map_err(|e| e.to_string())?;
        runtime.spawn(metrics::serve(metrics, state.clone()));
    }
    runtime.block_on(accept_until_signal(listener, state.clone()))?;

    tracing::info!("shutting down");
    // Before the final store drains the shards (the flag reaches each shard thread
    // ahead of the drain request, through the driver's messages).
    state.stopping.store(true, Ordering::SeqCst);
    // A running script would hold the shards, and so the final store, forever: it is
    // stopped, writes or not (as SHUTDOWN NOSAVE does in Redis). What it wrote before
    // stays and is stored (docs/scripting.md).
    state.script_watch.stop_for_shutdown();
    if let Some(replicator) = replicator {
        let _ = replicator.shutdown.send(());
        let _ = replicator.thread.join();
    }
    if let Some(driver) = driver {
        // Store what the shards still hold before they stop.
        let _ = driver.shutdown.send(());
        let _ = driver.thread.join();
    }
    for shard in 0..shard_count {
        let _ = state.router.mailbox(shard).blocking_send(ShardMsg::Shutdown);
    }
    for thread in shard_threads {
        let _ = thread.join();
    }
    drop(state);
    drop(router);
    let _ = coordinator_thread.join();
    tracing::info!("bye");
    Ok(())
}

async fn accept_until_signal(listener: std::net::TcpListener, state: Arc<ServerState>) -> Result<(), String> {
    use tokio::signal::unix::{SignalKind, signal};
    let listener = tokio::net::TcpListener::from_std(listener).map_err(|e| e.to_string())?;
    let mut terminate = signal(SignalKind::terminate()).map_err(|e| e.to_string())?;
    let mut interrupt = signal(SignalKind::interrupt()).map_err(|e| e.to_string())?;
    let shard_count = state.router.shard_count();
    let mut next_shard = 0usize;
    loop {
        tokio::select! {
            _ = terminate.recv() => return Ok(()),
            _ = interrupt.recv() => return Ok(()),
            _ = state.shutdown.notified() => return Ok(()),
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    state.stats.connections_received.fetch_add(1, Ordering::Relaxed);
                    let Ok(stream) = stream.into_std() else { continue };
                    let shard = next_shard % shard_count;
                    next_shard = next_shard.wrapping_add(1);
                    if state.router.mailbox(shard).send(ShardMsg::Connection { stream, peer, handover: None }).await.is_err() {
                        return Ok(());
                    }
                }
                Err(e) => {
                    // Out of file descriptors and the like: log, back off, keep serving.
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
            },
        }
    }
}
