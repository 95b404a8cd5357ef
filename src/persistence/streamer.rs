//! The streamer: turns the shards' deltas into segments, checkpoints and manifests.
//!
//! A state machine with one store operation in flight at a time:
//! - at start it claims the node by *creating* the next manifest epoch (fencing: a second
//!   process with the same node id cannot create the same epoch, and stops);
//! - every `flush_interval_ms`, if deltas are pending, it cuts one segment and creates it
//!   (create-only too, so a fenced-out writer can never overwrite a segment); when a
//!   writer waits for durability (`flush_now`, decided by `group_commit`) it cuts at the
//!   next poll instead, ahead of checkpoint parts;
//! - every `checkpoint_every_segments` segments it writes a checkpoint in parts (the
//!   driver supplies the chunks), then a manifest naming it, then deletes what the
//!   checkpoint before it made unnecessary;
//! - failed writes are retried with backoff; the pending deltas stay bounded
//!   (`unflushed_bytes_max`), and when full the driver stops draining the shards, whose
//!   bounded delta logs then refuse writes with a clear error.
//!
//! An idle node writes nothing. No I/O and no clock here: the driver brings both.

use std::collections::VecDeque;

use bytes::Bytes;

use super::layout::{self, Manifest};
use super::recovery::Recovered;
use super::segment::{self, Kind};
use super::store::{Payload, StoreOp, StoreResult};
use crate::crdt::{Hlc, NodeId};
use crate::delta::{Delta, EncodedDeltas};

/// Stored segments' body buffers kept for the shards' next drains at most.
pub const SPARE_BODIES_MAX: usize = 8;

#[derive(Clone, Debug)]
pub struct StreamerConfig {
    pub node_id: NodeId,
    pub flush_interval_ms: u64,
    /// Pending (not yet stored) delta bytes at most.
    pub unflushed_bytes_max: usize,
    /// Deltas in one segment at most (a busy interval is cut into several segments),
    /// unless one shard's drain alone holds more (a drain is never split).
    pub segment_entries_max: usize,
    /// Segments between two checkpoints.
    pub checkpoint_every_segments: u64,
    pub retry_backoff_ms: u64,
}

impl StreamerConfig {
    pub fn new(node_id: NodeId) -> StreamerConfig {
        StreamerConfig {
            node_id,
            flush_interval_ms: 250,
            unflushed_bytes_max: 256 << 20,
            segment_entries_max: 1 << 20,
            checkpoint_every_segments: 240,
            retry_backoff_ms: 200,
        }
    }
}

/// Figures for INFO persistence.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PersistenceStats {
    pub segments_written: u64,
    pub segment_bytes_written: u64,
    pub last_segment: u64,
    pub last_checkpoint: u64,
    pub checkpoints_written: u64,
    pub manifest_epoch: u64,
    pub pending_deltas: usize,
    pub pending_bytes: usize,
    pub puts: u64,
    pub errors: u64,
    pub last_error: Option<String>,
    pub deletes: u64,
    /// Segments cut before the flush interval because a writer waited for them.
    pub segments_for_waiters: u64,
}

#[derive(Debug)]
enum InFlight {
    ClaimManifest { manifest: Manifest },
    Segment { seq: u64, bytes: usize, max_hlc: Hlc },
    CheckpointPart,
    CheckpointManifest { manifest: Manifest },
    Delete,
}

#[derive(Debug)]
struct Checkpoint {
    seq: u64,
    parts_written: u32,
    /// Encoded parts waiting to be stored.
    ready: VecDeque<Bytes>,
    /// The driver has delivered the last chunk.
    complete: bool,
}

pub struct Streamer {
    cfg: StreamerConfig,
    manifest: Manifest,
    claimed: bool,
    next_seq: u64,
    /// Drained shard logs waiting to be cut into segments, oldest first.
    pending: VecDeque<EncodedDeltas>,
    pending_entries: usize,
    pending_bytes: usize,
    /// The operation started last, what it was for, and whether it awaits a result.
    in_flight: Option<(InFlight, StoreOp)>,
    waiting: bool,
    /// After a failure: when to issue the same operation again.
    retry_at_ms: Option<u64>,
    /// The operation in flight failed at least once: a later "already exists" may be
    /// our own earlier attempt that landed after all.
    retried: bool,
    /// A create that met an existing object after a retry: the put, while we read the
    /// object back to see whether it is ours.
    verifying: Option<StoreOp>,
    last_cut_ms: u64,
    /// A writer waits for the pending deltas: cut them at the next poll.
    flush_requested: bool,
    segments_since_checkpoint: u64,
    checkpoint: Option<Checkpoint>,
    deletions: VecDeque<String>,
    /// Stored segments' body buffers, handed back to the shards for their next drain
    /// (at most [`SPARE_BODIES_MAX`]; see `DeltaLog::drain_reusing`).
    spare_bodies: Vec<Vec<u8>>,
    /// Segments before this one are covered by the checkpoint before the previous one
    /// and are deleted when the next checkpoint lands.
    retained_from_segment: u64,
    /// The checkpoint before the current one (kept for restore until the next lands).
    older_checkpoint: Option<(u64, u32)>,
    /// Highest segment sequence known stored: writes up to it are durable.
    durable_seq: u64,
    /// The newest stamp in any stored segment (or recovered): what bounds the stamps
    /// this node may let leave it (`replication::reservation`).
    durable_hlc: Hlc,
    fenced: Option<String>,
    pub stats: PersistenceStats,
}

impl Streamer {
    pub fn new(cfg: StreamerConfig, recovered: &Recovered) -> Streamer {
        assert!(cfg.flush_interval_ms > 0 && cfg.segment_entries_max > 0);
        let last = recovered.next_segment.saturating_sub(1);
        Streamer {
            manifest: Manifest { node_id: cfg.node_id, ..recovered.manifest.clone() },
            claimed: false,
            next_seq: recovered.next_segment.max(1),
            pending: VecDeque::new(),
            pending_entries: 0,
            pending_bytes: 0,
            in_flight: None,
            waiting: false,
            retry_at_ms: None,
            retried: false,
            verifying: None,
            last_cut_ms: 0,
            flush_requested: false,
            // After a start that accepted data loss, checkpoint at once: the new
            // manifest then starts after the bad object, so the next start does not
            // stop at it again.
            segments_since_checkpoint: if recovered.loss.is_some() { cfg.checkpoint_every_segments } else { 0 },
            checkpoint: None,
            deletions: VecDeque::new(),
            spare_bodies: Vec::new(),
            retained_from_segment: recovered.manifest.first_segment.max(1),
            older_checkpoint: None,
            durable_seq: last,
            durable_hlc: Hlc::ZERO,
            fenced: None,
            stats: PersistenceStats { manifest_epoch: recovered.manifest.epoch, last_segment: last, ..Default::default() },
            cfg,
        }
    }

    /// Why this node must stop writing, if another process took its node id.
    pub fn fenced(&self) -> Option<&str> {
        self.fenced.as_deref()
    }

    pub fn node_id(&self) -> NodeId {
        self.cfg.node_id
    }

    /// Whether every offered delta has been cut into a segment.
    pub fn pending_is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// Whether more deltas may be taken from the shards.
    pub fn has_room(&self) -> bool {
        self.fenced.is_none() && self.pending_bytes < self.cfg.unflushed_bytes_max
    }

    /// Segments up to this one are stored.
    pub fn durable_segment(&self) -> u64 {
        self.durable_seq
    }

    /// The newest stamp known stored (see `durable_hlc` the field).
    pub fn durable_hlc(&self) -> Hlc {
        self.durable_hlc
    }

    /// After recovery: the newest stamp the recovered state holds is stored.
    pub fn set_recovered_hlc(&mut self, hlc: Hlc) {
        self.durable_hlc = self.durable_hlc.max(hlc);
    }

    /// Whether no offered delta is waiting to be stored.
    pub fn is_drained(&self) -> bool {
        self.pending.is_empty() && !matches!(self.in_flight, Some((InFlight::Segment { .. }, _)))
    }

    /// Take a shard's drained log (in the order the shard recorded it).
    pub fn offer(&mut self, deltas: EncodedDeltas) {
        if deltas.is_empty() {
            return;
        }
        assert!(deltas.entries <= segment::ENTRIES_MAX as usize, "a drain must fit one segment");
        self.pending_entries += deltas.entries;
        self.pending_bytes += deltas.body.len();
        self.pending.push_back(deltas);
        self.stats.pending_deltas = self.pending_entries;
        self.stats.pending_bytes = self.pending_bytes;
    }

    /// A writer waits until the pending deltas are stored: cut them into a segment at
    /// the next poll rather than at the end of the flush interval. Whatever is offered
    /// before that poll joins the same segment (group commit).
    pub fn flush_now(&mut self) {
        self.flush_requested = true;
    }

    /// The sequence of the checkpoint being written, if one is.
    pub fn checkpoint_in_progress(&self) -> Option<u64> {
        self.checkpoint.as_ref().map(|c| c.seq)
    }

    /// Whether the driver should deliver checkpoint chunks now.
    pub fn wants_checkpoint_chunk(&self) -> bool {
        self.checkpoint.as_ref().is_some_and(|c| !c.complete && c.ready.len() < 2)
    }

    /// One chunk of the full state (key deltas), `last` on the final one.
    pub fn checkpoint_chunk(&mut self, deltas: Vec<Delta>, last: bool) {
        let node = self.cfg.node_id;
        if let Some(c) = self.checkpoint.as_mut() {
            if !deltas.is_empty() {
                let part = c.parts_written + c.ready.len() as u32;
                c.ready.push_back(segment::encode(node, Kind::CheckpointPart, c.seq, part, &deltas));
            }
            c.complete |= last;
        }
    }

    /// The next store operation to start, if any. Call again after `complete`.
    pub fn poll(&mut self, now_ms: u64) -> Option<StoreOp> {
        if self.waiting || self.fenced.is_some() {
            return None;
        }
        // The wall clock stepped back: time the interval and any backoff from now, or
        // nothing would be stored until the clock caught up with where it was.
        self.last_cut_ms = self.last_cut_ms.min(now_ms);
        if let Some(at) = self.retry_at_ms.as_mut() {
            *at = (*at).min(now_ms + self.cfg.retry_backoff_ms);
        }
        if let Some((_, op)) = &self.in_flight {
            // A failed operation waiting for its retry.
            if self.retry_at_ms.is_some_and(|at| now_ms >= at) {
                self.retry_at_ms = None;
                self.waiting = true;
                return Some(op.clone());
            }
            return None;
        }
        if !self.claimed {
            let manifest = Manifest { epoch: self.manifest.epoch + 1, ..self.manifest.clone() };
            let op = StoreOp::Put {
                path: layout::manifest_path(self.cfg.node_id, manifest.epoch),
                data: Bytes::from(manifest.encode()).into(),
                create_only: true,
            };
            return self.start(InFlight::ClaimManifest { manifest }, op);
        }
        // A waiting writer goes before checkpoint parts: a checkpoint is many PUTs, and
        // segments may interleave with it (they follow its sequence number).
        if self.flush_requested && !self.pending.is_empty() {
            let (in_flight, op) = self.cut_segment(now_ms);
            return self.start(in_flight, op);
        }
        if let Some((in_flight, op)) = self.next_checkpoint_op() {
            return self.start(in_flight, op);
        }
        if !self.pending.is_empty() && now_ms >= self.last_cut_ms + self.cfg.flush_interval_ms {
            let (in_flight, op) = self.cut_segment(now_ms);
            return self.start(in_flight, op);
        }
        if let Some(path) = self.deletions.pop_front() {
            return self.start(InFlight::Delete, StoreOp::Delete { path });
        }
        None
    }

    fn start(&mut self, in_flight: InFlight, op: StoreOp) -> Option<StoreOp> {
        self.in_flight = Some((in_flight, op.clone()));
        self.waiting = true;
        self.retried = false;
        self.verifying = None;
        Some(op)
    }

    fn cut_segment(&mut self, now_ms: u64) -> (InFlight, StoreOp) {
        if self.flush_requested && now_ms < self.last_cut_ms + self.cfg.flush_interval_ms {
            self.stats.segments_for_waiters += 1;
        }
        self.flush_requested = false;
        self.last_cut_ms = now_ms;
        // Whole drains, as many as fit the entry bound (at least one).
        let mut bodies: Vec<EncodedDeltas> = Vec::new();
        let mut entries = 0;
        while let Some(next) = self.pending.front()
            && (bodies.is_empty() || entries + next.entries <= self.cfg.segment_entries_max)
        {
            let Some(body) = self.pending.pop_front() else { break };
            entries += body.entries;
            self.pending_entries -= body.entries;
            self.pending_bytes -= body.body.len();
            bodies.push(body);
        }
        if crate::bugs::active(crate::bugs::Bug::StreamerDropsLastDelta) && entries > 1 {
            bodies = drop_last_delta(bodies);
        }
        self.stats.pending_deltas = self.pending_entries;
        self.stats.pending_bytes = self.pending_bytes;
        let seq = self.next_seq;
        self.next_seq += 1;
        let (_, max_hlc) = segment::stamp_range(&bodies);
        let data = segment::frame(self.cfg.node_id, Kind::Segment, seq, 0, bodies);
        let bytes = data.len();
        let op = StoreOp::Put { path: layout::segment_path(self.cfg.node_id, seq), data, create_only: true };
        (InFlight::Segment { seq, bytes, max_hlc }, op)
    }

    fn next_checkpoint_op(&mut self) -> Option<(InFlight, StoreOp)> {
        if self.checkpoint.is_none() {
            // Old objects are deleted before a new checkpoint starts, so that at most two
            // checkpoints (and the segments since the older) exist at any time.
            if self.segments_since_checkpoint >= self.cfg.checkpoint_every_segments && self.pending.is_empty() && self.deletions.is_empty()
            {
                // Every delta before `seq` is in segments < seq and already applied to
                // the shards the chunks are read from; replaying segments >= seq on top
                // of this (fuzzy) checkpoint converges because merges are idempotent.
                self.checkpoint = Some(Checkpoint { seq: self.next_seq, parts_written: 0, ready: VecDeque::new(), complete: false });
                self.segments_since_checkpoint = 0;
            }
            return None;
        }
        let node = self.cfg.node_id;
        let c = self.checkpoint.as_mut()?;
        if let Some(data) = c.ready.pop_front() {
            let path = layout::checkpoint_part_path(node, c.seq, c.parts_written);
            return Some((InFlight::CheckpointPart, StoreOp::Put { path, data: data.into(), create_only: true }));
        }
        if c.complete {
            let (seq, parts) = (c.seq, c.parts_written);
            let manifest = Manifest { node_id: node, epoch: self.manifest.epoch + 1, checkpoint: Some((seq, parts)), first_segment: seq };
            let op = StoreOp::Put {
                path: layout::manifest_path(node, manifest.epoch),
                data: Bytes::from(manifest.encode()).into(),
                create_only: true,
            };
            return Some((InFlight::CheckpointManifest { manifest }, op));
        }
        None
    }

    /// The result of the operation `poll` returned last.
    pub fn complete(&mut self, result: StoreResult, now_ms: u64) {
        self.waiting = false;
        let Some((in_flight, op)) = self.in_flight.take() else { return };
        let result = match self.verifying.take() {
            None => result,
            Some(put) => {
                // We read back an object our create found already there.
                let StoreOp::Put { data, .. } = &put else { return };
                match result {
                    StoreResult::Data(stored) if data.same_bytes(&stored) => StoreResult::Stored,
                    StoreResult::Data(_) => StoreResult::AlreadyExists,
                    StoreResult::NotFound => {
                        // Gone again: put it once more.
                        self.in_flight = Some((in_flight, put));
                        self.retry_at_ms = Some(now_ms);
                        return;
                    }
                    other => {
                        self.verifying = Some(put);
                        self.in_flight = Some((in_flight, op));
                        self.note_failure(other, now_ms);
                        return;
                    }
                }
            }
        };
        if result == StoreResult::AlreadyExists
            && self.retried
            && let StoreOp::Put { path, .. } = &op
        {
            // Perhaps our own earlier attempt landed although it reported failure.
            let get = StoreOp::Get { path: path.clone() };
            self.verifying = Some(op);
            self.in_flight = Some((in_flight, get));
            self.retry_at_ms = Some(now_ms);
            return;
        }
        match (in_flight, result) {
            (InFlight::ClaimManifest { manifest }, StoreResult::Stored) => {
                self.stats.puts += 1;
                self.stats.manifest_epoch = manifest.epoch;
                self.manifest = manifest;
                self.claimed = true;
            }
            (InFlight::Segment { seq, bytes, max_hlc }, StoreResult::Stored) => {
                assert_eq!(seq, self.durable_seq + 1, "segments are stored in order");
                if let StoreOp::Put { data, .. } = op {
                    self.keep_spare_bodies(data);
                }
                self.durable_hlc = self.durable_hlc.max(max_hlc);
                self.stats.puts += 1;
                self.stats.segments_written += 1;
                self.stats.segment_bytes_written += bytes as u64;
                self.stats.last_segment = seq;
                self.durable_seq = seq;
                self.segments_since_checkpoint += 1;
            }
            (InFlight::CheckpointPart, StoreResult::Stored) => {
                self.stats.puts += 1;
                if let Some(c) = self.checkpoint.as_mut() {
                    c.parts_written += 1;
                }
            }
            (InFlight::CheckpointManifest { manifest }, StoreResult::Stored) => {
                self.stats.puts += 1;
                self.stats.checkpoints_written += 1;
                self.stats.manifest_epoch = manifest.epoch;
                self.stats.last_checkpoint = manifest.checkpoint.map_or(0, |c| c.0);
                self.schedule_deletions();
                self.manifest = manifest;
                self.checkpoint = None;
            }
            (InFlight::Delete, StoreResult::Deleted | StoreResult::NotFound) => self.stats.deletes += 1,
            (InFlight::ClaimManifest { manifest } | InFlight::CheckpointManifest { manifest }, StoreResult::AlreadyExists) => {
                self.fence(format!(
                    "manifest epoch {} of node {} already exists: another process is writing as this node id",
                    manifest.epoch, self.cfg.node_id
                ));
            }
            (InFlight::CheckpointPart, StoreResult::AlreadyExists) => {
                self.fence(format!(
                    "a checkpoint part of node {} already exists: another process is writing as this node id",
                    self.cfg.node_id
                ));
            }
            (InFlight::Segment { seq, .. }, StoreResult::AlreadyExists) => {
                self.fence(format!(
                    "segment {} already exists: another process is writing as node {}",
                    layout::segment_path(self.cfg.node_id, seq),
                    self.cfg.node_id
                ));
            }
            (in_flight, other) => {
                // Keep the operation and issue it again after a backoff.
                self.in_flight = Some((in_flight, op));
                self.note_failure(other, now_ms);
            }
        }
    }

    /// Keep a stored segment's body buffers for the shards' next drains: only those
    /// nothing else holds any more (a `Bytes` made from a `Vec` comes back as that
    /// `Vec`, its pages still mapped), and at most [`SPARE_BODIES_MAX`].
    fn keep_spare_bodies(&mut self, data: Payload) {
        // The first chunk is the header (`segment::frame`).
        for chunk in data.into_chunks().into_iter().skip(1) {
            if self.spare_bodies.len() >= SPARE_BODIES_MAX {
                return;
            }
            if chunk.len() < crate::delta::log::SPARE_BYTES_MIN {
                continue;
            }
            if let Ok(unique) = chunk.try_into_mut() {
                self.spare_bodies.push(Vec::from(unique));
            }
        }
    }

    /// A stored segment's body buffer for a shard's next drain, if one is kept. The
    /// driver drops the rest at the first round whose drains find nothing
    /// (`drop_spare_bodies`), so an idle node holds none.
    pub fn take_spare_body(&mut self) -> Option<Vec<u8>> {
        self.spare_bodies.pop()
    }

    pub fn drop_spare_bodies(&mut self) {
        self.spare_bodies.clear();
    }

    fn note_failure(&mut self, result: StoreResult, now_ms: u64) {
        self.stats.errors += 1;
        self.stats.last_error = Some(match result {
            StoreResult::Failed(e) => e,
            unexpected => format!("unexpected store result {unexpected:?}"),
        });
        self.retried = true;
        self.retry_at_ms = Some(now_ms + self.cfg.retry_backoff_ms);
    }

    fn fence(&mut self, reason: String) {
        self.stats.last_error = Some(reason.clone());
        self.fenced = Some(reason);
    }

    /// A new checkpoint replaced the current one: keep the current one (and the segments
    /// after it) for restore, delete what came before it.
    fn schedule_deletions(&mut self) {
        let node = self.cfg.node_id;
        if let Some((seq, parts)) = self.older_checkpoint.take() {
            for part in 0..parts {
                self.deletions.push_back(layout::checkpoint_part_path(node, seq, part));
            }
        }
        let keep_from = self.manifest.first_segment.max(1);
        for seq in self.retained_from_segment..keep_from {
            self.deletions.push_back(layout::segment_path(node, seq));
        }
        self.retained_from_segment = keep_from;
        self.older_checkpoint = self.manifest.checkpoint;
    }
}

/// The planted bug `streamer-drops-last-delta`: the segment loses its newest delta.
fn drop_last_delta(bodies: Vec<EncodedDeltas>) -> Vec<EncodedDeltas> {
    let mut deltas: Vec<Delta> = bodies.iter().flat_map(|b| b.decode().unwrap_or_default()).collect();
    deltas.pop();
    vec![EncodedDeltas::from_deltas(&deltas)]
}
