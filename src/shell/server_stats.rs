//! The shell's own counters for INFO's Stats section (the shards keep theirs).
//!
//! The ones every pipeline bumps (commands, bytes in and out) are kept per shard
//! thread, each thread's in a cache line of its own, and summed when INFO reads them:
//! one shared counter bumped by every thread would make its cache line travel between
//! the cores on every request, which is what a node with a shard per core must not pay.
//! Owns only counting; what a figure means is INFO's (`shell/info.rs`).

use std::sync::atomic::{AtomicU64, Ordering};

/// One shard thread's traffic counters. Aligned to 128 bytes: two cache lines, as
/// adjacent-line prefetchers pull lines in pairs.
#[derive(Default)]
#[repr(align(128))]
pub struct Traffic {
    commands_processed: AtomicU64,
    net_input_bytes: AtomicU64,
    net_output_bytes: AtomicU64,
}

impl Traffic {
    pub fn commands(&self, count: usize) {
        self.commands_processed.fetch_add(count as u64, Ordering::Relaxed);
    }

    pub fn read(&self, bytes: usize) {
        self.net_input_bytes.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    pub fn wrote(&self, bytes: usize) {
        self.net_output_bytes.fetch_add(bytes as u64, Ordering::Relaxed);
    }
}

pub struct ServerStats {
    pub connections_received: AtomicU64,
    pub connections_rejected: AtomicU64,
    /// Clients closed for overcoming their class's output buffer limit (INFO
    /// `client_output_buffer_limit_disconnections`).
    pub output_buffer_disconnections: AtomicU64,
    /// The node's change count (the shards' `ShardStats::changes`) when the last SAVE
    /// began: INFO persistence's `rdb_changes_since_last_save` counts from it. 0 until
    /// the first SAVE, so it counts from the start. Not a statistic: CONFIG RESETSTAT
    /// leaves it, as Redis leaves its `dirty` figure.
    pub changes_at_save: AtomicU64,
    /// When the last SAVE ended, in Unix seconds (LASTSAVE, `rdb_last_save_time`): the
    /// node's start until the first SAVE, as Redis reports its start (or its RDB load).
    pub saved_at_secs: AtomicU64,
    /// Per shard thread (a connection counts on its home shard's).
    traffic: Box<[Traffic]>,
}

impl ServerStats {
    pub fn new(threads: usize) -> ServerStats {
        assert!(threads > 0);
        ServerStats {
            connections_received: AtomicU64::new(0),
            connections_rejected: AtomicU64::new(0),
            output_buffer_disconnections: AtomicU64::new(0),
            changes_at_save: AtomicU64::new(0),
            saved_at_secs: AtomicU64::new(super::now_ms() / 1000),
            traffic: (0..threads).map(|_| Traffic::default()).collect(),
        }
    }

    /// The counters of shard thread `thread` (the last one's for a number past them).
    pub fn traffic(&self, thread: usize) -> &Traffic {
        &self.traffic[thread.min(self.traffic.len() - 1)]
    }

    pub fn commands_processed(&self) -> u64 {
        self.sum(|t| &t.commands_processed)
    }

    pub fn net_input_bytes(&self) -> u64 {
        self.sum(|t| &t.net_input_bytes)
    }

    pub fn net_output_bytes(&self) -> u64 {
        self.sum(|t| &t.net_output_bytes)
    }

    fn sum(&self, counter: impl Fn(&Traffic) -> &AtomicU64) -> u64 {
        self.traffic.iter().map(|t| counter(t).load(Ordering::Relaxed)).sum()
    }

    /// CONFIG RESETSTAT.
    pub fn reset(&self) {
        for counter in [&self.connections_received, &self.connections_rejected, &self.output_buffer_disconnections] {
            counter.store(0, Ordering::Relaxed);
        }
        for traffic in self.traffic.iter() {
            for counter in [&traffic.commands_processed, &traffic.net_input_bytes, &traffic.net_output_bytes] {
                counter.store(0, Ordering::Relaxed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_threads_counts_add_up_and_reset_clears_them_all() {
        let stats = ServerStats::new(3);
        stats.traffic(0).commands(2);
        stats.traffic(2).commands(5);
        stats.traffic(9).commands(1); // past the last thread: counted on the last
        stats.traffic(1).read(100);
        stats.traffic(2).wrote(7);
        stats.traffic(0).wrote(3);
        assert_eq!((stats.commands_processed(), stats.net_input_bytes(), stats.net_output_bytes()), (8, 100, 10));
        assert_eq!(std::mem::align_of::<Traffic>(), 128, "each thread's counters in lines of their own");
        stats.connections_received.fetch_add(1, Ordering::Relaxed);
        stats.reset();
        assert_eq!((stats.commands_processed(), stats.net_input_bytes(), stats.net_output_bytes()), (0, 0, 0));
        assert_eq!(stats.connections_received.load(Ordering::Relaxed), 0);
    }
}
