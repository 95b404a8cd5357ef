//! `--durability sync` and WAITAOF: a connection waiting until its writes are stored.
//! Part of [`super::Connection`]; when a segment is cut and what it releases is
//! `persistence::group_commit`'s to decide.

use std::sync::atomic::Ordering;

use super::Connection;
use crate::protocol::Frame;
use crate::shard::{ShardOp, ShardReply};
use crate::shell::shards::Shards;

impl Connection {
    /// `--durability sync`: hold this pipeline's replies until the segment holding its
    /// writes is stored (group commit: the writes of every client waiting meanwhile
    /// share it).
    pub(super) async fn wait_until_stored(&self) {
        let targets = self.durability_targets().await;
        let durability = self.state().durability.clone();
        durability.wait(&targets, None).await;
    }

    /// SAVE: Redis writes its whole dataset to disk before answering; here every write
    /// acknowledged so far is made durable in the object store (the segment holding it
    /// is written at once, as for `--durability sync`), which is what a restart then
    /// recovers. With persistence off there is no store to save to: an error says so.
    pub(super) async fn save(&mut self) -> Frame {
        if !self.state().config.persistence_enabled() {
            return Frame::static_error("ERR persistence is off (--persistence off): there is no object store to save to");
        }
        // What is saved is every change made before the wait began: those made during
        // it still count as unsaved afterwards (Redis's BGSAVE keeps them the same way).
        let changes: u64 = self.shard_stats().await.iter().map(|s| s.changes).sum();
        self.wait_until_stored().await;
        let stats = &self.state().stats;
        stats.changes_at_save.store(changes, Ordering::Relaxed);
        stats.saved_at_secs.store(crate::shell::now_ms() / 1000, Ordering::Relaxed);
        Frame::ok()
    }

    /// Where every shard's delta stream stands now: once all of it is stored, every
    /// write this client made (and others made before) is durable.
    async fn durability_targets(&self) -> Vec<u64> {
        self.access
            .run_everywhere(|| ShardOp::DeltaMark)
            .await
            .into_iter()
            .map(|r| if let ShardReply::Count(n) = r { n.max(0) as u64 } else { u64::MAX })
            .collect()
    }

    pub(super) async fn wait_aof(&mut self, local: i64, replicas: i64, timeout_ms: i64) -> Frame {
        if local > 1 {
            return Frame::static_error("ERR WAITAOF numlocal must be 0 or 1 (one node, one local store)");
        }
        let persisting = self.state().config.persistence_enabled();
        if local == 1 && !persisting {
            return Frame::static_error("ERR WAITAOF cannot be used when numlocal is set but persistence is off.");
        }
        // Peers are other regions, not Redis replicas that store this node's AOF: none
        // is counted (the reply's second number is 0, as Redis's with no replica), and
        // INFO replication's `acked_seq` shows what each peer has taken.
        let _ = replicas;
        let stored = if persisting {
            let targets = self.durability_targets().await;
            let deadline = (timeout_ms > 0).then(|| tokio::time::Instant::now() + std::time::Duration::from_millis(timeout_ms as u64));
            let durability = self.state().durability.clone();
            let wait = durability.wait(&targets, deadline);
            tokio::select! {
                biased;
                _ = self.info.kill_requested() => {
                    self.closing = true;
                    false
                }
                done = wait => done,
            }
        } else {
            false
        };
        Frame::Array(vec![Frame::Integer(stored as i64), Frame::Integer(0)])
    }
}
