//! The persistence driver: carries out the streamer's and recovery's store operations
//! with the `object_store` crate, drains the shards' delta logs, and gathers checkpoint
//! chunks. It runs on its own thread with its own small runtime, so slow storage never
//! stalls a shard. Decisions live in `crate::persistence`; this file only moves bytes.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures_util::TryStreamExt;
use object_store::path::Path;
use object_store::{ObjectStore, PutMode, PutOptions, PutPayload};
use tokio::sync::oneshot;

use super::now_ms;
use super::router::{Router, ShardMsg};
use crate::config::Config;
use crate::delta::Delta;
use crate::engine::kv::keyspace::SLOT_SPACE;
use crate::persistence::group_commit::GroupCommit;
use crate::persistence::recovery::{Recovered, Recovery, Step};
use crate::persistence::store::{StoreOp, StoreResult};
use crate::persistence::streamer::{PersistenceStats, Streamer, StreamerConfig};
use crate::shard::{Shard, ShardOp, ShardReply};

/// Keys per checkpoint chunk request (one shard round trip).
const CHECKPOINT_CHUNK_KEYS: usize = 4096;
/// Store operations one driver round may issue at most.
const OPS_PER_ROUND_MAX: usize = 64;
/// Decoded objects waiting for each shard's recovery thread (bounds recovery memory).
const RECOVERY_BATCHES_QUEUED_MAX: usize = 2;
/// How long a clean shutdown waits for the last deltas to be stored.
const SHUTDOWN_FLUSH_SECONDS: u64 = 10;

/// Per shard, the position in its delta stream up to which everything is stored; the
/// persistence driver advances it, WAITAOF and `--durability sync` wait on it.
///
/// A waiter first raises `requested` to the positions it needs and wakes the driver,
/// which then drains the shards and cuts a segment at once (`persistence::group_commit`
/// decides; this only carries the figures across threads). The waiters are bounded by
/// the connections: each waits for one thing at a time, and `maxclients` bounds those;
/// the shared state here is a few integers per shard whatever their number.
pub struct Durability {
    pub stored: Vec<AtomicU64>,
    pub advanced: tokio::sync::Notify,
    /// Per shard, the highest position any writer waits to see stored.
    pub requested: Vec<AtomicU64>,
    /// Wakes the persistence driver when a writer starts waiting (one stored permit, so
    /// a request made while the driver is busy is seen when it looks again).
    pub wake: tokio::sync::Notify,
    /// Writers waiting now (INFO `durability_waiters`).
    pub waiters: AtomicUsize,
    /// The newest stamp stored (or recovered): what bounds the stamps that may leave
    /// this node (`replication::reservation`).
    pub durable_hlc: AtomicU64,
}

impl Durability {
    pub fn new(shards: usize) -> Durability {
        Durability {
            stored: (0..shards).map(|_| AtomicU64::new(0)).collect(),
            advanced: tokio::sync::Notify::new(),
            requested: (0..shards).map(|_| AtomicU64::new(0)).collect(),
            wake: tokio::sync::Notify::new(),
            waiters: AtomicUsize::new(0),
            durable_hlc: AtomicU64::new(0),
        }
    }

    fn covers(&self, targets: &[u64]) -> bool {
        targets.iter().zip(&self.stored).all(|(t, s)| s.load(Ordering::Acquire) >= *t)
    }

    /// What writers wait for now, per shard.
    pub fn requested_now(&self) -> Vec<u64> {
        self.requested.iter().map(|r| r.load(Ordering::Acquire)).collect()
    }

    /// Wait until every shard's stored position reaches its target, or the deadline.
    /// The driver is asked to store them at once rather than at the next interval.
    pub async fn wait(&self, targets: &[u64], deadline: Option<tokio::time::Instant>) -> bool {
        if self.covers(targets) {
            return true;
        }
        for (requested, target) in self.requested.iter().zip(targets) {
            requested.fetch_max(*target, Ordering::AcqRel);
        }
        self.waiters.fetch_add(1, Ordering::Relaxed);
        // Counted down however the wait ends (a timeout, or a dropped future when the
        // client is killed).
        let _waiting = WaiterGuard(&self.waiters);
        self.wake.notify_one();
        super::notify_until::until(&self.advanced, deadline, || self.covers(targets)).await
    }
}

struct WaiterGuard<'a>(&'a AtomicUsize);

impl Drop for WaiterGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// What INFO persistence shows.
#[derive(Clone, Debug, Default)]
pub struct PersistenceInfo {
    pub enabled: bool,
    pub location: String,
    pub recovered: Recovered,
    pub stats: PersistenceStats,
    pub fenced: Option<String>,
}

/// What a store gives back of the memory it keeps between writes when the node has
/// nothing to store (called by the persistence driver's idle rounds).
pub type IdleMemoryRelease = Arc<dyn Fn() + Send + Sync>;

/// An opened object store: the store, where it is (for logs and INFO), and what gives
/// back the memory it keeps between writes, if it keeps any.
pub struct OpenedStore {
    pub store: Arc<dyn ObjectStore>,
    pub location: String,
    pub idle_release: Option<IdleMemoryRelease>,
}

/// Open the configured object store: a local folder by default, `memory://`, or
/// `s3://bucket/prefix` with the standard `AWS_*` environment variables.
pub fn open_store(config: &Config) -> Result<OpenedStore, String> {
    let (store, location): (Arc<dyn ObjectStore>, String) = match config.object_store.as_deref() {
        None => {
            std::fs::create_dir_all(&config.data_dir)
                .map_err(|e| format!("cannot create --data-dir {}: {e}", config.data_dir.display()))?;
            let store = crate::shell::local_store::LocalStore::new(&config.data_dir, config.fsync == "on")
                .map_err(|e| format!("cannot use --data-dir {}: {e}", config.data_dir.display()))?;
            let idle_release = Some(store.window_release());
            return Ok(OpenedStore { store: Arc::new(store), location: format!("file://{}", config.data_dir.display()), idle_release });
        }
        Some("memory://") => (Arc::new(object_store::memory::InMemory::new()), "memory://".into()),
        Some(url) if url.starts_with("s3://") => {
            let rest = &url["s3://".len()..];
            let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            if bucket.is_empty() {
                return Err(format!("--object-store {url}: no bucket name"));
            }
            let s3 = object_store::aws::AmazonS3Builder::from_env()
                .with_bucket_name(bucket)
                .with_conditional_put(object_store::aws::S3ConditionalPut::ETagMatch)
                .build()
                .map_err(|e| format!("--object-store {url}: {e}"))?;
            let store: Arc<dyn ObjectStore> = if prefix.trim_matches('/').is_empty() {
                Arc::new(s3)
            } else {
                Arc::new(object_store::prefix::PrefixStore::new(s3, prefix.trim_matches('/')))
            };
            (store, url.to_string())
        }
        Some(other) => return Err(format!("--object-store {other}: expected s3://bucket/prefix or memory://")),
    };
    Ok(OpenedStore { store, location, idle_release: None })
}

/// Carry out one store operation.
pub async fn execute(store: &dyn ObjectStore, op: StoreOp) -> StoreResult {
    match op {
        StoreOp::Put { path, data, create_only } => {
            let mode = if create_only { PutMode::Create } else { PutMode::Overwrite };
            let payload: PutPayload = data.chunks().iter().cloned().collect();
            match store.put_opts(&Path::from(path), payload, PutOptions { mode, ..Default::default() }).await {
                Ok(_) => StoreResult::Stored,
                Err(object_store::Error::AlreadyExists { .. }) => StoreResult::AlreadyExists,
                Err(e) => StoreResult::Failed(e.to_string()),
            }
        }
        StoreOp::Get { path } => match store.get(&Path::from(path)).await {
            Ok(result) => match result.bytes().await {
                Ok(bytes) => StoreResult::Data(bytes),
                Err(e) => StoreResult::Failed(e.to_string()),
            },
            Err(object_store::Error::NotFound { .. }) => StoreResult::NotFound,
            Err(e) => StoreResult::Failed(e.to_string()),
        },
        StoreOp::List { prefix } => {
            let prefix = Path::from(prefix.trim_end_matches('/'));
            match store.list(Some(&prefix)).map_ok(|meta| meta.location.to_string()).try_collect::<Vec<String>>().await {
                Ok(mut paths) => {
                    paths.sort();
                    StoreResult::Listing(paths)
                }
                Err(object_store::Error::NotFound { .. }) => StoreResult::Listing(Vec::new()),
                Err(e) => StoreResult::Failed(e.to_string()),
            }
        }
        StoreOp::Delete { path } => match store.delete(&Path::from(path)).await {
            Ok(()) => StoreResult::Deleted,
            Err(object_store::Error::NotFound { .. }) => StoreResult::NotFound,
            Err(e) => StoreResult::Failed(e.to_string()),
        },
    }
}

/// Refuse stores that ignore conditional writes (fencing would silently not work):
/// create one probe object twice; the second create must fail.
pub async fn probe_conditional_put(store: &dyn ObjectStore, node: u16, nonce: &str) -> Result<(), String> {
    let path = format!("node-{node:05}/probe/{nonce}");
    let data = Bytes::from_static(b"probe");
    let first = execute(store, StoreOp::Put { path: path.clone(), data: data.clone().into(), create_only: true }).await;
    let second = execute(store, StoreOp::Put { path: path.clone(), data: data.into(), create_only: true }).await;
    let _ = execute(store, StoreOp::Delete { path }).await;
    match (first, second) {
        (StoreResult::Stored, StoreResult::AlreadyExists) => Ok(()),
        (StoreResult::Stored, StoreResult::Stored) => Err(
            "the object store ignores conditional writes (a second create-if-absent succeeded): two processes with one node id could both write; \
             restart with --allow-unfenced to run without this protection"
                .into(),
        ),
        (first, second) => Err(format!("object store probe failed: {first:?} then {second:?}")),
    }
}

/// Rebuild the shards from the store before the node serves anyone.
pub fn recover(
    runtime: &tokio::runtime::Runtime,
    store: &dyn ObjectStore,
    node: u16,
    accept_loss: bool,
    shards: &mut [Shard],
) -> Result<Recovered, String> {
    let started = std::time::Instant::now();
    let result = if std::thread::available_parallelism().map_or(1, |n| n.get()) > 1 {
        recover_in_parallel(runtime, store, node, accept_loss, shards)?
    } else {
        // With one core, threads would only take turns: read, decode and apply in one.
        run_recovery(runtime, store, node, accept_loss, |deltas| {
            crate::shard::merge_recovered(shards, deltas);
            Ok(())
        })?
    };
    if let Some(loss) = &result.loss {
        tracing::error!("DATA LOSS ACCEPTED (--accept-data-loss): {loss}");
    }
    tracing::info!(
        manifest_epoch = result.manifest.epoch,
        checkpoint_parts = result.checkpoint_parts_loaded,
        segments = result.segments_replayed,
        deltas = result.deltas_applied,
        elapsed_ms = started.elapsed().as_millis() as u64,
        "recovery complete"
    );
    Ok(result)
}

/// One applier thread per shard: the next object is read and decoded while the shards
/// apply the previous one, each its own keys (in order, per shard).
fn recover_in_parallel(
    runtime: &tokio::runtime::Runtime,
    store: &dyn ObjectStore,
    node: u16,
    accept_loss: bool,
    shards: &mut [Shard],
) -> Result<Recovered, String> {
    std::thread::scope(|scope| {
        let mut appliers = Vec::with_capacity(shards.len());
        for shard in shards.iter_mut() {
            let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<Delta>>(RECOVERY_BATCHES_QUEUED_MAX);
            std::thread::Builder::new()
                .name("meridian-recover".into())
                .spawn_scoped(scope, move || {
                    for batch in rx {
                        batch.into_iter().for_each(|delta| shard.merge_delta(delta));
                    }
                })
                .map_err(|e| format!("cannot start a recovery thread: {e}"))?;
            appliers.push(tx);
        }
        run_recovery(runtime, store, node, accept_loss, |deltas| {
            for (applier, part) in appliers.iter().zip(crate::shard::split_by_shard(deltas, appliers.len())) {
                if !part.is_empty() && applier.send(part).is_err() {
                    return Err("a recovery thread stopped".to_string());
                }
            }
            Ok(())
        })
    })
}

/// Drive the recovery state machine: its reads against the store, its decoded deltas
/// to `apply`, in order.
fn run_recovery(
    runtime: &tokio::runtime::Runtime,
    store: &dyn ObjectStore,
    node: u16,
    accept_loss: bool,
    mut apply: impl FnMut(Vec<Delta>) -> Result<(), String>,
) -> Result<Recovered, String> {
    let mut recovery = Recovery::new(node, accept_loss);
    let mut step = recovery.start();
    loop {
        step = match step {
            Step::Store(op) => recovery.next(Some(runtime.block_on(execute(store, op)))),
            Step::Apply(deltas) => {
                apply(deltas)?;
                recovery.next(None)
            }
            Step::Done(recovered) => return Ok(recovered),
            Step::Failed(e) => return Err(format!("recovery failed: {e}")),
        };
    }
}

pub struct Driver {
    pub shutdown: oneshot::Sender<()>,
    pub thread: std::thread::JoinHandle<()>,
}

/// Start the persistence thread.
pub fn start(
    config: &Config,
    store: OpenedStore,
    router: Router,
    recovered: &Recovered,
    info: Arc<Mutex<PersistenceInfo>>,
    durability: Arc<Durability>,
) -> Result<Driver, String> {
    let mut streamer_config = StreamerConfig::new(config.node_id);
    streamer_config.flush_interval_ms = config.flush_interval_ms;
    streamer_config.unflushed_bytes_max = (config.max_unflushed_bytes / 2).max(64 * 1024);
    streamer_config.checkpoint_every_segments = config.checkpoint_every_segments;
    let streamer = Streamer::new(streamer_config, recovered);
    let (shutdown, shutdown_rx) = oneshot::channel();
    let flush_interval_ms = config.flush_interval_ms;
    let thread = std::thread::Builder::new()
        .name("meridian-persistence".into())
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(r) => r,
                Err(e) => {
                    tracing::error!("cannot start the persistence runtime: {e}");
                    return;
                }
            };
            runtime.block_on(run(streamer, store, router, info, durability, shutdown_rx, flush_interval_ms));
        })
        .map_err(|e| format!("cannot start the persistence thread: {e}"))?;
    Ok(Driver { shutdown, thread })
}

/// Returns whether any shard had deltas.
async fn drain_shards(router: &Router, streamer: &mut Streamer, group: &mut GroupCommit) -> bool {
    let mut drained_any = false;
    for shard in 0..router.shard_count() {
        if !streamer.has_room() {
            return drained_any;
        }
        let (reply, receiver) = oneshot::channel();
        let spare = streamer.take_spare_body();
        if router.mailbox(shard).send(ShardMsg::DrainDeltas { reply, spare }).await.is_err() {
            return drained_any;
        }
        if let Ok((deltas, through)) = receiver.await {
            drained_any |= !deltas.is_empty();
            streamer.offer(deltas);
            group.on_drained(shard, through);
        }
    }
    drained_any
}

/// Feed checkpoint chunks while the streamer wants them; `cursor` is (shard, position).
async fn feed_checkpoint(router: &Router, streamer: &mut Streamer, cursor: &mut (usize, u64)) {
    while streamer.wants_checkpoint_chunk() {
        let (shard, position) = *cursor;
        let op = ShardOp::ExportChunk { cursor: position, count: CHECKPOINT_CHUNK_KEYS };
        let receiver = router.send(shard, vec![op]).await;
        let Ok(mut replies) = receiver.await else { return };
        let Some(ShardReply::Chunk { deltas, next }) = replies.pop() else { return };
        let (next_shard, next_position) = if next >= SLOT_SPACE { (shard + 1, 0) } else { (shard, next) };
        let last = next_shard >= router.shard_count();
        streamer.checkpoint_chunk(deltas, last);
        *cursor = if last { (0, 0) } else { (next_shard, next_position) };
    }
}

/// Copy the streamer's figures to what INFO reads.
fn publish_stats(info: &Mutex<PersistenceInfo>, streamer: &Streamer) {
    if let Ok(mut shared) = info.lock() {
        shared.stats = streamer.stats.clone();
        shared.fenced = streamer.fenced().map(str::to_string);
    }
}

fn streamer_node(streamer: &Streamer) -> u16 {
    streamer.node_id()
}

async fn run(
    mut streamer: Streamer,
    OpenedStore { store, idle_release, .. }: OpenedStore,
    router: Router,
    info: Arc<Mutex<PersistenceInfo>>,
    durability: Arc<Durability>,
    mut shutdown: oneshot::Receiver<()>,
    flush_interval_ms: u64,
) {
    let mut group = GroupCommit::new(router.shard_count());
    let round = Duration::from_millis((flush_interval_ms / 5).clamp(5, 50));
    let mut checkpoint_cursor = (0usize, 0u64);
    let mut stopping = false;
    let mut stop_deadline = None;
    // The last round stopped at its operation bound with work left: no pause.
    let mut busy = false;
    loop {
        if busy && !stopping {
            tokio::task::yield_now().await;
        } else if !stopping {
            tokio::select! {
                _ = tokio::time::sleep(round) => {}
                // A writer waits for durability: go now rather than at the next round.
                _ = durability.wake.notified() => {}
                _ = &mut shutdown => {
                    stopping = true;
                    stop_deadline = Some(std::time::Instant::now() + Duration::from_secs(SHUTDOWN_FLUSH_SECONDS));
                }
            }
        } else {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        if !drain_shards(&router, &mut streamer, &mut group).await {
            // An idle round frees the bodies kept for the shards and what the store
            // keeps between writes: an idle node holds none.
            streamer.drop_spare_bodies();
            if let Some(release) = &idle_release {
                release();
            }
        }
        feed_checkpoint(&router, &mut streamer, &mut checkpoint_cursor).await;
        busy = true;
        for _ in 0..OPS_PER_ROUND_MAX {
            // Writers that started waiting while the last PUT was in flight: take their
            // deltas now, so that they all share the next segment (group commit).
            group.request(&durability.requested_now());
            if group.wants_drain() {
                drain_shards(&router, &mut streamer, &mut group).await;
            }
            if group.wants_flush() {
                streamer.flush_now();
            }
            // When stopping, cut the last segment now rather than after the interval.
            let now = if stopping { u64::MAX / 2 } else { now_ms() };
            let Some(op) = streamer.poll(now) else {
                busy = false;
                break;
            };
            if let StoreOp::Put { path, .. } = &op
                && let Some(seq) = path
                    .strip_prefix(&crate::persistence::layout::segments_prefix(streamer_node(&streamer)))
                    .and_then(|n| n.parse::<u64>().ok())
            {
                group.on_cut(seq, streamer.pending_is_empty());
            }
            let result = execute(store.as_ref(), op).await;
            streamer.complete(result, now_ms());
            // INFO's figures first, then the waiters: a writer acknowledged by this
            // segment may ask INFO next, and must see the segment counted.
            publish_stats(&info, &streamer);
            durability.durable_hlc.fetch_max(streamer.durable_hlc().0, Ordering::Release);
            if let Some(positions) = group.on_stored(streamer.durable_segment()) {
                for (slot, position) in durability.stored.iter().zip(positions) {
                    slot.fetch_max(*position, Ordering::Release);
                }
                durability.advanced.notify_waiters();
            }
        }
        publish_stats(&info, &streamer);
        if let Some(reason) = streamer.fenced() {
            tracing::error!("FENCED: {reason}. This process stops now so that it cannot overwrite the other writer's data.");
            std::process::exit(3);
        }
        if stopping {
            let drained = streamer.is_drained();
            if drained || stop_deadline.is_some_and(|d| std::time::Instant::now() > d) {
                if !drained {
                    tracing::error!("shutdown: the object store did not take the last deltas in time; they are lost");
                }
                return;
            }
        }
    }
}
