//! Persistence under simulation: each node streams its deltas with the real
//! [`Streamer`] into a simulated object store that outlives crashes, and restarts with
//! the real [`Recovery`]. The harness records the model as of every segment it sees
//! cut, so after a crash it knows exactly what the node must come back as: the state
//! of the last segment recovery replayed (its durable prefix).

use std::collections::BTreeMap;

use meridian::persistence::layout;
use meridian::persistence::memory::MemoryStore;
use meridian::persistence::recovery::{Recovered, Recovery, Step};
use meridian::persistence::store::StoreOp;
use meridian::persistence::streamer::{Streamer, StreamerConfig};
use meridian::shard::Shard;

use crate::model::Model;

/// Recovery steps at most (a loop beyond this is a liveness bug).
const RECOVERY_STEPS_MAX: usize = 100_000;

pub fn streamer_config(node: u16) -> StreamerConfig {
    let mut config = StreamerConfig::new(node);
    config.flush_interval_ms = 50;
    config.checkpoint_every_segments = 8;
    config.retry_backoff_ms = 40;
    config
}

#[derive(Default)]
pub struct NodeStorage {
    /// The node's bucket: survives crashes.
    pub store: MemoryStore,
    /// The streamer dies with the process.
    pub streamer: Option<Streamer>,
    /// The operation the streamer is waiting on.
    pub in_flight: Option<StoreOp>,
    /// The model as of the moment each segment was cut (every applied write drained).
    pub snapshots: BTreeMap<u64, Model>,
    /// The model as of the moment each checkpoint's state was read. A checkpoint may
    /// hold writes newer than the last segment before it (they are also in the next
    /// segment): more than the durable prefix, never less.
    pub checkpoint_snapshots: BTreeMap<u64, Model>,
}

impl NodeStorage {
    /// Rebuild `shards` from the store with the real recovery code.
    pub fn recover(&mut self, node: u16, shards: &mut [Shard]) -> Result<Recovered, String> {
        let mut recovery = Recovery::new(node, false);
        let mut step = recovery.start();
        for _ in 0..RECOVERY_STEPS_MAX {
            step = match step {
                Step::Store(op) => recovery.next(Some(self.store.execute(op))),
                Step::Apply(deltas) => {
                    meridian::shard::merge_recovered(shards, deltas);
                    recovery.next(None)
                }
                Step::Done(recovered) => return Ok(recovered),
                Step::Failed(e) => return Err(e),
            };
        }
        Err("recovery did not finish".into())
    }

    /// The model a node must equal after `recovered`: as of the last segment replayed,
    /// or of the checkpoint's start when no segment followed it.
    pub fn durable_model(&self, recovered: &Recovered) -> Model {
        let first = recovered.manifest.first_segment.max(1);
        if recovered.segments_replayed == 0
            && let Some((seq, _)) = recovered.manifest.checkpoint
        {
            return self.checkpoint_snapshots.get(&seq).cloned().unwrap_or_default();
        }
        let last = if recovered.segments_replayed > 0 { first + recovered.segments_replayed - 1 } else { first - 1 };
        if last == 0 {
            return Model::default();
        }
        self.snapshots.get(&last).cloned().unwrap_or_default()
    }

    /// After a recovery: forget the snapshots of segments and checkpoints that never
    /// became durable (their numbers will be used again).
    pub fn forget_undurable(&mut self, recovered: &Recovered) {
        self.snapshots.retain(|&seq, _| seq < recovered.next_segment);
        let committed = recovered.manifest.checkpoint.map_or(0, |c| c.0);
        self.checkpoint_snapshots.retain(|&seq, _| seq <= committed);
    }

    /// Note that a segment is being written, with the model it holds.
    pub fn note_op(&mut self, op: &StoreOp, model: &Model, node: u16) {
        if let StoreOp::Put { path, .. } = op
            && path.starts_with(&layout::segments_prefix(node))
            && let Some(seq) = layout::trailing_number(path)
        {
            // A retried put carries the same segment: keep the model of its cut.
            self.snapshots.entry(seq).or_insert_with(|| model.clone());
        }
    }
}
