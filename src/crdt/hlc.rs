//! Hybrid logical clock (DESIGN §4): 48 bits of physical milliseconds and a 16-bit
//! logical counter in one `u64`, so stamps compare as plain integers.
//!
//! The clock never reads the wall clock itself: the caller hands in physical time
//! (the shell reads `SystemTime`, the simulator its own clock). It must never go
//! backwards, whatever the physical time handed in does.

/// The identity of a node in the cluster: the actor in every piece of CRDT metadata.
pub type NodeId = u16;

const LOGICAL_BITS: u32 = 16;
const LOGICAL_MAX: u64 = (1 << LOGICAL_BITS) - 1;
/// Largest physical time representable in 48 bits (year ~10889).
pub const PHYSICAL_MS_MAX: u64 = (1 << 48) - 1;
/// The furthest a witnessed stamp moves the clock: 2^30 ms (12 days) short of the end
/// of the representable range, so a garbage stamp (a corrupt or hostile peer's) can
/// never leave the clock unable to issue a larger one.
const WITNESS_MAX: Hlc = Hlc((PHYSICAL_MS_MAX - (1 << 30)) << LOGICAL_BITS);

/// One HLC reading. Ordered by physical time, then logical counter.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Hlc(pub u64);

impl Hlc {
    pub const ZERO: Hlc = Hlc(0);

    pub fn from_parts(physical_ms: u64, logical: u16) -> Hlc {
        debug_assert!(physical_ms <= PHYSICAL_MS_MAX);
        Hlc((physical_ms.min(PHYSICAL_MS_MAX) << LOGICAL_BITS) | logical as u64)
    }

    pub fn physical_ms(self) -> u64 {
        self.0 >> LOGICAL_BITS
    }

    pub fn logical(self) -> u16 {
        (self.0 & LOGICAL_MAX) as u16
    }
}

/// A node's (or a shard's) hybrid logical clock.
#[derive(Clone, Debug, Default)]
pub struct HlcClock {
    last: Hlc,
    /// Remote stamps seen further ahead of local physical time than the allowed skew.
    pub skew_events: u64,
}

impl HlcClock {
    pub fn new() -> HlcClock {
        HlcClock::default()
    }

    pub fn last(&self) -> Hlc {
        self.last
    }

    /// A fresh stamp, strictly greater than every stamp issued or observed before.
    pub fn tick(&mut self, physical_ms: u64) -> Hlc {
        let physical_ms = physical_ms.min(PHYSICAL_MS_MAX);
        let follows_clock_back = crate::bugs::active(crate::bugs::Bug::HlcFollowsClockBack) && physical_ms < self.last.physical_ms();
        let next = if physical_ms > self.last.physical_ms() || follows_clock_back {
            Hlc::from_parts(physical_ms, 0)
        } else if self.last.logical() as u64 == LOGICAL_MAX {
            // The logical counter is exhausted: borrow one millisecond from the future
            // rather than wrap (wrapping would move the clock backwards).
            Hlc::from_parts(self.last.physical_ms() + 1, 0)
        } else {
            Hlc(self.last.0 + 1)
        };
        assert!(next > self.last, "HLC must move forward");
        self.last = next;
        next
    }

    /// Advance past a stamp found in recovered data (no skew accounting: it is ours).
    pub fn witness(&mut self, hlc: Hlc) {
        let hlc = hlc.min(WITNESS_MAX);
        if hlc > self.last {
            self.last = hlc;
        }
    }

    /// Advance past a stamp received from elsewhere. Stamps far in the future are still
    /// accepted (they are data) but counted, so operators can see a bad clock.
    pub fn observe(&mut self, remote: Hlc, physical_ms: u64, max_skew_ms: u64) {
        if remote.physical_ms() > physical_ms.saturating_add(max_skew_ms) {
            self.skew_events += 1;
        }
        self.witness(remote);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_is_strictly_monotonic_even_when_physical_time_goes_back() {
        let mut clock = HlcClock::new();
        let a = clock.tick(1_000);
        let b = clock.tick(900);
        let c = clock.tick(1_000);
        assert!(a < b && b < c);
        assert_eq!(b.physical_ms(), 1_000);
    }

    #[test]
    fn logical_overflow_borrows_a_millisecond() {
        let mut clock = HlcClock::new();
        let mut prev = clock.tick(5);
        for _ in 0..70_000 {
            let next = clock.tick(5);
            assert!(next > prev);
            prev = next;
        }
        assert!(prev.physical_ms() > 5);
    }

    #[test]
    fn a_garbage_stamp_from_elsewhere_never_exhausts_the_clock() {
        let mut clock = HlcClock::new();
        clock.observe(Hlc(u64::MAX), 1_000, 2_000);
        assert_eq!(clock.skew_events, 1);
        let mut prev = clock.last();
        for _ in 0..200_000 {
            let next = clock.tick(1_000);
            assert!(next > prev);
            prev = next;
        }
    }

    #[test]
    fn observing_a_remote_stamp_moves_the_clock_past_it() {
        let mut clock = HlcClock::new();
        clock.observe(Hlc::from_parts(10_000, 7), 1_000, 2_000);
        assert_eq!(clock.skew_events, 1);
        assert!(clock.tick(1_000) > Hlc::from_parts(10_000, 7));
    }
}
