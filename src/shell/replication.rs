//! The replication state and its batcher: gathers the shards' outboxes into batches
//! every `--repl-batch-ms` and queues them for every peer; the peer links (`peer_link`)
//! carry them. Both run on the replication thread that `repl_driver` starts, so a slow
//! or dead peer never stalls a shard. What to send and how to check it is decided in
//! `crate::replication`; this file moves bytes. It never starts links itself: the flow
//! runs one way, `repl_driver` → `peer_link` → here.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;

use bytes::Bytes;

use super::now_ms;
use super::router::Router;
use crate::config::Config;
use crate::crdt::Hlc;
use crate::crdt::VersionVector;
use crate::delta::Delta;
use crate::delta::outgoing::Outgoing;
use crate::engine::kv::merkle::MerkleLeaves;
use crate::replication::anti_entropy::RoundWait;
use crate::replication::peer::PeerQueue;
use crate::replication::reservation;
use crate::replication::stability::Stability;
use crate::replication::wire::{self, BatchHead};
use crate::shard::{ShardOp, ShardReply};

/// A batch frame is cut once its deltas pass this many (encoded) bytes.
const BATCH_FRAME_BYTES_TARGET: usize = 1 << 20;
/// An idle node still sends its stability report this often (an empty batch), so that
/// peers can collect tombstones; a busy one sends it with every batch.
const REPORT_INTERVAL_MS: u64 = 1_000;
/// Writes held back by the stamp reservation (waiting for a segment) past this are
/// dropped and left to anti-entropy.
const HELD_BYTES_MAX: usize = 64 << 20;
/// Tombstone collection runs at most this often.
const GC_INTERVAL_MS: u64 = 1_000;
/// An idle node sends its peers an empty batch at least this often.
const HEARTBEAT_INTERVAL_MS: u64 = 2_000;

/// How a link to a peer stands, for INFO.
#[derive(Clone, Debug, Default)]
pub struct PeerStatus {
    /// `connecting`, `up`, `down` or `refused`.
    pub link: &'static str,
    pub remote_node: Option<u16>,
    pub remote_region: String,
    pub last_error: String,
    pub connects: u64,
    pub ae_rounds: u64,
    pub ae_last_ms: u64,
    pub ae_keys_sent: u64,
    pub ae_keys_received: u64,
}

/// Tombstone collection, for INFO and metrics.
#[derive(Default)]
pub struct GcStats {
    pub runs: AtomicU64,
    pub tombstones_dropped: AtomicU64,
    /// Oldest entry of the last stable vector, as unix ms (0: none yet).
    pub stable_ms: AtomicU64,
}

/// One configured peer: its batch queue and its link's status.
pub struct Peer {
    /// Its place in `--peers` (what `Stability::set_member` is told).
    pub index: usize,
    pub addr: String,
    pub queue: Mutex<PeerQueue>,
    /// Woken when the queue has something new or anti-entropy is wanted.
    pub wake: Notify,
    pub status: Mutex<PeerStatus>,
    pub round_wait: Mutex<Option<RoundWait>>,
    /// Pub/Sub messages for this peer, sent after its batches.
    pub messages: Mutex<super::pubsub::PeerMessages>,
}

/// Counters of links this node accepted.
#[derive(Default)]
pub struct InboundStats {
    pub connections: AtomicU64,
    pub auth_failures: AtomicU64,
    pub bad_frames: AtomicU64,
    pub batches: AtomicU64,
    pub deltas: AtomicU64,
    pub ae_keys_received: AtomicU64,
    pub skewed_batches: AtomicU64,
    /// Inbound links open now (authenticated or still in their handshake).
    pub open: std::sync::atomic::AtomicUsize,
    /// Connections closed at once because `peer_link::INBOUND_LINKS_MAX` were open.
    pub refused: AtomicU64,
}

/// What the replication driver shares with INFO and its link tasks.
pub struct Replication {
    pub node_id: u16,
    pub region: String,
    pub repl_port: u16,
    pub secret: Vec<u8>,
    pub peers: Vec<Arc<Peer>>,
    pub inbound: InboundStats,
    pub batches_made: AtomicU64,
    pub anti_entropy_interval: Duration,
    pub max_clock_skew_ms: u64,
    /// The longest frame accepted from an authenticated peer.
    pub frame_bytes_max: usize,
    /// Mutual TLS on every link, when configured.
    pub tls: Option<super::tls::PeerTls>,
    /// Names this process in its batches: a peer treats a new session as a gap.
    pub session: u64,
    pub stability: Mutex<Stability>,
    pub gc: GcStats,
    /// The highest own stamp that may leave this node now (`replication::reservation`);
    /// refreshed every batch window (a stale value is lower: safe).
    pub stamp_ceiling: AtomicU64,
    /// A shard's outbox filled to its eager size: the batch window ends now.
    pub outbox_ready: Notify,
    /// Where Pub/Sub messages from peers are delivered.
    pub pubsub: Arc<super::pubsub::Broker>,
}

impl Replication {
    /// A PUBLISH made on this node goes to every peer whose link is up, after that
    /// peer's pending frames; a peer whose link is down (or whose queue is full) misses
    /// it, counted (Pub/Sub is at-most-once across regions).
    pub fn forward_publish(&self, shard: bool, channel: Bytes, message: Bytes) {
        let frame =
            crate::replication::wire::encode(&crate::replication::wire::Message::Publish { sent_ms: now_ms(), shard, channel, message });
        for peer in &self.peers {
            let up = peer.status.lock().map(|s| s.link == "up").unwrap_or(false);
            let queued =
                up && frame.len() <= self.frame_bytes_max && peer.messages.lock().map(|mut q| q.push(frame.clone())).unwrap_or(false);
            if queued {
                self.pubsub.sent_to_peers.fetch_add(1, Ordering::Relaxed);
                peer.wake.notify_one();
            } else {
                self.pubsub.dropped_unsent.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Whether these states may be sent to a peer now (anti-entropy).
    pub fn may_send(&self, deltas: &[Delta]) -> bool {
        reservation::may_leave(deltas, self.node_id, Hlc(self.stamp_ceiling.load(Ordering::Acquire)))
    }
}

/// Bind the replication listener (so a bad port fails start-up with a clear error)
/// and describe the peers. The links start with `repl_driver::start`.
pub fn prepare(config: &Config, pubsub: Arc<super::pubsub::Broker>) -> Result<(Arc<Replication>, Option<std::net::TcpListener>), String> {
    let listener = match config.repl_port {
        None => None,
        Some(port) => {
            let bind = config.repl_bind.clone().unwrap_or_else(|| config.bind.clone());
            let listener =
                std::net::TcpListener::bind((bind.as_str(), port)).map_err(|e| format!("cannot listen for peers on {bind}:{port}: {e}"))?;
            listener.set_nonblocking(true).map_err(|e| e.to_string())?;
            Some(listener)
        }
    };
    let tls = match (&config.repl_tls_cert, &config.repl_tls_key, &config.repl_tls_ca) {
        (Some(cert), Some(key), Some(ca)) => Some(super::tls::load(cert, key, ca)?),
        _ => None,
    };
    for peer in &config.peers {
        if tls.is_some() {
            super::tls::server_name(peer)?;
        }
    }
    let repl_port = listener.as_ref().and_then(|l| l.local_addr().ok()).map_or(0, |a| a.port());
    let peers = config
        .peers
        .iter()
        .enumerate()
        .map(|(index, addr)| {
            Arc::new(Peer {
                index,
                addr: addr.clone(),
                queue: Mutex::new(PeerQueue::with_catch_up(config.repl_backlog_bytes)),
                wake: Notify::new(),
                status: Mutex::new(PeerStatus { link: "connecting", ..Default::default() }),
                round_wait: Mutex::new(None),
                messages: Mutex::new(Default::default()),
            })
        })
        .collect();
    let replication = Replication {
        node_id: config.node_id,
        region: config.region.clone(),
        repl_port,
        secret: config.cluster_secret.clone().unwrap_or_default().into_bytes(),
        peers,
        inbound: InboundStats::default(),
        batches_made: AtomicU64::new(0),
        anti_entropy_interval: Duration::from_millis(config.anti_entropy_interval_ms),
        max_clock_skew_ms: config.max_clock_skew_ms,
        frame_bytes_max: config.proto_max_bulk_len.saturating_add(16 << 20).max(64 << 20),
        tls,
        session: rand::random::<u64>() | 1,
        stability: Mutex::new({
            let mut stability = Stability::new(config.node_id, config.peers.len());
            stability.set_horizon(config.peer_horizon_ms, now_ms());
            stability
        }),
        gc: GcStats::default(),
        stamp_ceiling: AtomicU64::new(0),
        outbox_ready: Notify::new(),
        pubsub,
    };
    Ok((Arc::new(replication), listener))
}

/// Every batch interval, or sooner when a shard's outbox fills to its eager size: take
/// every shard's outbox, cut the deltas into frames, and queue each frame for every
/// peer; then collect the tombstones that became stable.
pub(super) async fn batch_loop(
    replication: Arc<Replication>,
    router: Router,
    interval: Duration,
    durability: Option<Arc<super::persistence::Durability>>,
) {
    let mut ticker = tokio::time::interval(interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut seq = 0u64;
    let mut gap = false;
    let mut last_stable = Hlc::ZERO;
    let mut clock_floor = Hlc::ZERO;
    let mut held = Outgoing::default();
    let mut last_report = (VersionVector::new(), 0u64);
    let mut last_gc = (VersionVector::new(), 0u64);
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            _ = replication.outbox_ready.notified() => ticker.reset(),
        }
        let mut deltas = Outgoing::default();
        let mut stable = Hlc(u64::MAX);
        let mut overflowed = false;
        let mut rounds_wanted = false;
        let floor = clock_floor;
        // Where each shard's delta stream holds every own write stamped at or below
        // `stable`: once stored, this node may claim those writes (`Stability::report`).
        let mut positions = Vec::with_capacity(router.shard_count());
        for shard in 0..router.shard_count() {
            let Ok(mut replies) = router.send(shard, vec![ShardOp::DrainOutbox { floor }]).await.await else { return };
            if let Some(ShardReply::Outbox { batch, stable: shard_stable, recorded, rounds_wanted: wanted }) = replies.pop() {
                deltas.append(batch.deltas);
                overflowed |= batch.overflowed;
                rounds_wanted |= wanted;
                stable = stable.min(shard_stable);
                clock_floor = clock_floor.max(shard_stable);
                positions.push(recorded);
            }
        }
        if overflowed {
            tracing::warn!("replication outbox overflowed: peers will be repaired by anti-entropy");
            gap = true;
        }
        if overflowed || rounds_wanted {
            for peer in &replication.peers {
                if let Ok(mut queue) = peer.queue.lock() {
                    queue.needs_anti_entropy = true;
                }
                peer.wake.notify_one();
            }
        }
        if replication.peers.is_empty() {
            continue;
        }
        let ceiling = stamp_ceiling(durability.as_deref());
        replication.stamp_ceiling.store(ceiling.0, Ordering::Release);
        let (deltas, lowest_held) = reservation::hold_back(deltas, ceiling, &mut held);
        stable = reservation::stable_claim(stable, lowest_held, ceiling);
        if held.bytes_len() > HELD_BYTES_MAX {
            tracing::warn!(
                "writes waiting for their stamps to be stored passed {HELD_BYTES_MAX} bytes: peers will be repaired by anti-entropy"
            );
            held = Outgoing::default();
            gap = true;
        }
        let now = now_ms();
        let report = match replication.stability.lock() {
            Ok(mut stability) => {
                if positions.len() == router.shard_count() {
                    stability.own_drained(stable, positions);
                }
                stability.on_stored(&stored_positions(durability.as_deref(), router.shard_count()));
                stability.report(stable)
            }
            Err(_) => return,
        };
        collect_tombstones(&replication, &router, now, &mut last_gc).await;
        // Also unchanged, every `HEARTBEAT_INTERVAL_MS`: a peer's silence is what gives
        // up on it (`Stability::heard_from`).
        let report_due =
            now >= last_report.1 + REPORT_INTERVAL_MS && (report != last_report.0 || now >= last_report.1 + HEARTBEAT_INTERVAL_MS);
        if deltas.is_empty() && !report_due {
            continue;
        }
        last_report = (report.clone(), now);
        let mut chunks = deltas.chunks(BATCH_FRAME_BYTES_TARGET);
        if chunks.is_empty() {
            chunks.push((0, &[]));
        }
        let last_chunk = chunks.len() - 1;
        for (i, (count, chunk)) in chunks.into_iter().enumerate() {
            seq += 1;
            // Only the last frame of a window may claim the window's stamp: a peer that
            // has merged an earlier one has not yet got everything below it.
            let frame_stable = if i == last_chunk { stable } else { last_stable };
            let head = BatchHead { seq, session: replication.session, gap: std::mem::take(&mut gap), stable: frame_stable, seen: &report };
            let frame = wire::encode_batch(&head, count, chunk);
            replication.batches_made.fetch_add(1, Ordering::Relaxed);
            for peer in &replication.peers {
                if let Ok(mut queue) = peer.queue.lock() {
                    queue.push(seq, frame.clone(), count, now);
                }
                peer.wake.notify_one();
            }
        }
        last_stable = stable;
    }
}

/// The highest own stamp that may leave now: without persistence, any.
pub(super) fn stamp_ceiling(durability: Option<&super::persistence::Durability>) -> Hlc {
    match durability {
        Some(d) => reservation::ceiling(Hlc(d.durable_hlc.load(Ordering::Acquire))),
        None => Hlc(u64::MAX),
    }
}

/// Where each shard's delta stream is stored up to (everything, without persistence).
fn stored_positions(durability: Option<&super::persistence::Durability>, shards: usize) -> Vec<u64> {
    match durability {
        Some(d) => d.stored.iter().map(|s| s.load(Ordering::Acquire)).collect(),
        None => vec![u64::MAX; shards],
    }
}

/// Drop, in every shard, the tombstones the stable vector covers: at most every
/// `GC_INTERVAL_MS`, and only when the vector moved.
async fn collect_tombstones(replication: &Replication, router: &Router, now: u64, last: &mut (VersionVector, u64)) {
    if now < last.1 + GC_INTERVAL_MS {
        return;
    }
    let Some((stable, spared)) = replication.stability.lock().ok().and_then(|mut s| s.collection_vector(now)) else { return };
    // Runs again under an unchanged stable vector too: a merge after the last run can
    // leave a hash field tombstone that vector already covers (a remove absorbing
    // counter history it had seen), and nothing else would collect it.
    if stable.is_empty() {
        return;
    }
    *last = (stable.clone(), now);
    let oldest = stable.iter().map(|d| d.hlc.physical_ms()).min().unwrap_or(0);
    replication.gc.stable_ms.store(oldest, Ordering::Relaxed);
    replication.gc.runs.fetch_add(1, Ordering::Relaxed);
    for shard in 0..router.shard_count() {
        let Ok(mut replies) =
            router.send(shard, vec![ShardOp::ForgetStable { stable: stable.clone(), spared: spared.clone() }]).await.await
        else {
            return;
        };
        if let Some(ShardReply::Count(dropped)) = replies.pop() {
            replication.gc.tombstones_dropped.fetch_add(dropped.max(0) as u64, Ordering::Relaxed);
        }
    }
}

/// The node's anti-entropy leaves: every shard's, combined.
pub async fn node_leaves(router: &Router) -> Result<MerkleLeaves, String> {
    let mut leaves = MerkleLeaves::new();
    for shard in 0..router.shard_count() {
        let mut replies = router.send(shard, vec![ShardOp::MerkleLeaves]).await.await.map_err(|_| "shutting down".to_string())?;
        if let Some(ShardReply::Merkle(shard_leaves)) = replies.pop() {
            leaves.combine(&shard_leaves);
        }
    }
    Ok(leaves)
}

/// Every key state this node holds in `leaves`.
pub async fn export_leaves(router: &Router, leaves: &[u16]) -> Result<Vec<Delta>, String> {
    let mut deltas = Vec::new();
    for shard in 0..router.shard_count() {
        let mut replies =
            router.send(shard, vec![ShardOp::ExportLeaves(leaves.to_vec())]).await.await.map_err(|_| "shutting down".to_string())?;
        if let Some(ShardReply::Deltas(shard_deltas)) = replies.pop() {
            deltas.extend(shard_deltas);
        }
    }
    Ok(deltas)
}

/// Merge deltas from a peer into the shards that own them (a flush goes to all). A
/// shard whose persistence is behind refuses; its part is retried until it takes it.
/// Returns, per shard, the delta-stream position the merge reached (0: untouched).
pub async fn merge_into_shards(router: &Router, deltas: Vec<Delta>) -> Result<Vec<u64>, String> {
    merge_parts(router, deltas, None).await
}

/// [`merge_into_shards`] for a peer's anti-entropy states of `leaves`: every shard
/// also takes the peer's forget records (split to all, as a flush is) and removes
/// what they cover from its keys of those leaves that the states leave out
/// (`ShardOp::MergeLeaves`).
pub async fn merge_leaf_states(router: &Router, leaves: &[u16], deltas: Vec<Delta>) -> Result<Vec<u64>, String> {
    merge_parts(router, deltas, Some(leaves)).await
}

async fn merge_parts(router: &Router, deltas: Vec<Delta>, leaves: Option<&[u16]>) -> Result<Vec<u64>, String> {
    const RETRIES_MAX: usize = 600;
    let shards = router.shard_count();
    // (In a batch there is no forget record; a shard would ignore one: `Shard::merge_remote`.)
    let parts = crate::shard::split_by_shard(deltas, shards);
    let mut positions = vec![0u64; shards];
    for (shard, mut part) in parts.into_iter().enumerate() {
        if part.is_empty() {
            continue;
        }
        let mut attempt = 0;
        loop {
            let op = match leaves {
                Some(leaves) => ShardOp::MergeLeaves { leaves: leaves.to_vec(), deltas: part },
                None => ShardOp::MergeRemote(part),
            };
            let replies = router.send(shard, vec![op]).await.await.map_err(|_| "shutting down".to_string())?;
            match replies.into_iter().next() {
                Some(ShardReply::Count(position)) => {
                    positions[shard] = position.max(0) as u64;
                    break;
                }
                Some(ShardReply::MergeRefused(back)) => {
                    attempt += 1;
                    if attempt >= RETRIES_MAX {
                        return Err(format!(
                            "shard {shard} refused a peer's deltas for a minute: its delta log is full (persistence is not keeping up)"
                        ));
                    }
                    part = back;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                other => return Err(format!("shard {shard} answered a merge with {other:?}")),
            }
        }
    }
    Ok(positions)
}

/// Where every shard's delta stream stands now (what WAITAOF waits for, and what an
/// anti-entropy round's merges must be stored up to).
pub async fn delta_marks(router: &Router) -> Result<Vec<u64>, String> {
    let mut marks = Vec::with_capacity(router.shard_count());
    for shard in 0..router.shard_count() {
        let mut replies = router.send(shard, vec![ShardOp::DeltaMark]).await.await.map_err(|_| "shutting down".to_string())?;
        match replies.pop() {
            Some(ShardReply::Count(n)) => marks.push(n.max(0) as u64),
            _ => marks.push(u64::MAX),
        }
    }
    Ok(marks)
}
