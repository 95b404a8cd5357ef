//! Used memory, as the allocator counts it, and the `maxmemory` check.
//!
//! jemalloc's `stats.allocated` (bytes the process holds in live allocations: data,
//! buffers, queues, everything) is read on the shell's own schedule, every
//! [`SAMPLE_INTERVAL_MS`] while a `maxmemory` limit is set, never per command: reading
//! it means advancing jemalloc's statistics epoch, which takes a global lock and merges
//! every arena's counters. A connection checks the last sample, one atomic load. With
//! no limit (the default) nothing samples on a timer: there is nothing to check, and
//! INFO and the metrics read a fresh figure instead. Never refuses anything itself: the
//! connection decides (only client writes flagged `denyoom`; merges from peers and
//! recovery are never refused).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// How often used memory is sampled: the most a burst of writes can overshoot
/// `maxmemory` by is what clients write in this long.
pub const SAMPLE_INTERVAL_MS: u64 = 100;

/// Redis's reply to a `denyoom` command past `maxmemory`, word for word.
pub const OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";

/// The last sample of used memory, shared by every connection.
#[derive(Default)]
pub struct MemoryGauge {
    used_bytes: AtomicU64,
}

impl MemoryGauge {
    pub fn used_bytes(&self) -> u64 {
        self.used_bytes.load(Ordering::Relaxed)
    }

    pub fn sample(&self) {
        self.used_bytes.store(allocated_bytes(), Ordering::Relaxed);
    }

    /// What INFO and the metrics report: the sample the limit is checked against while
    /// `maxmemory_bytes` sets one, a fresh reading otherwise (nothing samples then).
    pub fn reported_bytes(&self, maxmemory_bytes: usize) -> u64 {
        if maxmemory_bytes != 0 { self.used_bytes() } else { allocated_bytes() }
    }

    /// Whether used memory is over `maxmemory_bytes` (0: no limit, as Redis).
    pub fn over(&self, maxmemory_bytes: usize) -> bool {
        maxmemory_bytes != 0 && self.used_bytes() > maxmemory_bytes as u64
    }
}

/// Sample while a limit is set, until the server state is gone (or the runtime that
/// runs this ends). CONFIG SET maxmemory samples at once itself, so a new limit applies
/// from the start. Holds the state weakly: shutdown waits for the last strong holder.
pub async fn sample_loop(state: std::sync::Weak<super::ServerState>) {
    let mut tick = tokio::time::interval(Duration::from_millis(SAMPLE_INTERVAL_MS));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(state) = state.upgrade() else { return };
        if state.runtime.maxmemory() != 0 {
            state.memory.sample();
        }
    }
}

/// Bytes in live allocations; the resident set size where jemalloc is not the allocator
/// (its counters would read zero: the library's own tests run on the system allocator).
#[cfg(not(target_env = "msvc"))]
pub fn allocated_bytes() -> u64 {
    use tikv_jemalloc_ctl::{epoch, stats};
    // The statistics are cached per epoch: advance it to read fresh figures.
    let allocated = epoch::advance().ok().and_then(|_| stats::allocated::read().ok()).unwrap_or(0) as u64;
    if allocated == 0 { resident_bytes() } else { allocated }
}

#[cfg(target_env = "msvc")]
pub fn allocated_bytes() -> u64 {
    resident_bytes()
}

/// The resident set size (INFO's `used_memory_rss`).
pub fn resident_bytes() -> u64 {
    // /proc/self/statm: size resident shared ... in pages.
    let page = 4096;
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1).and_then(|v| v.parse::<u64>().ok()))
        .map_or(0, |pages| pages * page)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_limit_is_never_over_and_a_limit_below_use_is() {
        let gauge = MemoryGauge::default();
        gauge.sample();
        assert!(gauge.used_bytes() > 0, "something is allocated");
        assert!(!gauge.over(0), "maxmemory 0 means no limit");
        assert!(gauge.over(1));
        assert!(!gauge.over(usize::MAX));
    }
}
