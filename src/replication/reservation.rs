//! Which of this node's stamps may leave it. A restarted node must never stamp a write
//! at or below a stamp that already left it (DESIGN §4: stamps are unique and grow);
//! peers would take the new write for one they had seen. Writes acknowledged from
//! memory can leave (in a batch, in an anti-entropy state) before they are stored, and
//! a crash then loses the local copy, so the restarted node cannot see their stamps.
//!
//! The rule: a stamp may leave only if it is at most [`RESERVATION_MS`] past the newest
//! stamp already stored (the *ceiling*); a restarted node starts its clocks above the
//! ceiling of what it recovered. Every stamp that left the old process is then below
//! every stamp of the new one. Under load the ceiling runs ahead of the clock and
//! nothing waits; a write after more than `RESERVATION_MS` of silence waits in its
//! batch until its segment is stored; after a quick restart the clocks run up to
//! `RESERVATION_MS` ahead of real time (concurrent SETs from this node then win LWW for
//! that long). Without persistence nothing is stored, so nothing is held back and a
//! restarted node (which starts empty) relies on its clock having moved past its old
//! stamps: see docs/replication.md.

use crate::crdt::{Hlc, NodeId};
use crate::delta::Delta;
use crate::delta::outgoing::Outgoing;

/// How far past the newest stored stamp a stamp may leave this node.
pub const RESERVATION_MS: u64 = 3_000;

/// The highest stamp that may leave this node while `stored` is the newest stored.
pub fn ceiling(stored: Hlc) -> Hlc {
    if crate::bugs::active(crate::bugs::Bug::ReservationIgnored) {
        return stored;
    }
    Hlc::from_parts((stored.physical_ms() + RESERVATION_MS).min(crate::crdt::hlc::PHYSICAL_MS_MAX), u16::MAX)
}

/// What a batch may promise as its `stable` stamp (no own write at or below it is
/// still to come), from the shards' clocks `stable`: below the lowest own stamp still
/// held back (`hold_back`; those writes have not been sent), and at most `ceiling`. An
/// idle shard's clock runs on with time, but a restarted process starts its clocks
/// only above the ceiling of what it recovered; a promise past that could be broken
/// by its first writes, which peers that had collected tombstones under the promise
/// would then take for removed ones (seed 1244 of `dst --no-periodic-anti-entropy`: a
/// clock set back across a restart).
pub fn stable_claim(stable: Hlc, lowest_held: Option<Hlc>, ceiling: Hlc) -> Hlc {
    let stable = lowest_held.map_or(stable, |lowest| stable.min(Hlc(lowest.0 - 1)));
    if crate::bugs::active(crate::bugs::Bug::ReservationIgnored) {
        return stable;
    }
    stable.min(ceiling)
}

/// Whether every delta may leave under `ceiling`.
pub fn may_leave(deltas: &[Delta], own: NodeId, ceiling: Hlc) -> bool {
    crate::bugs::active(crate::bugs::Bug::ReservationIgnored) || deltas.iter().all(|d| d.newest_stamp_of(own) <= ceiling)
}

/// Add this window's `deltas` to what was held back, and split the lot into what may
/// leave now (returned) and what stays held (left in `held`), with the lowest own stamp
/// held (a batch's `stable` must stay below it: `stable_claim`).
pub fn hold_back(deltas: Outgoing, ceiling: Hlc, held: &mut Outgoing) -> (Outgoing, Option<Hlc>) {
    let mut pending = std::mem::take(held);
    pending.append(deltas);
    if crate::bugs::active(crate::bugs::Bug::ReservationIgnored) {
        return (pending, None);
    }
    let (still_held, lowest_held) = pending.split_off_above(ceiling);
    *held = still_held;
    (pending, lowest_held)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crdt::Dot;
    use crate::engine::kv::{KeyState, StrVal};
    use bytes::Bytes;

    fn write(ms: u64, node: NodeId) -> Delta {
        let state = KeyState::with_value(Dot::new(Hlc::from_parts(ms, 0), node), StrVal::Int(1), None);
        Delta::Key { key: Bytes::from(format!("k{ms}")), state }
    }

    #[test]
    fn a_batch_never_promises_past_the_ceiling_a_restart_starts_above() {
        let stored = Hlc::from_parts(10_000, 0);
        let limit = ceiling(stored);
        // An idle clock runs on with time; the promise stops at the ceiling.
        assert_eq!(stable_claim(Hlc::from_parts(60_000, 7), None, limit), limit);
        assert_eq!(stable_claim(Hlc::from_parts(11_000, 0), None, limit), Hlc::from_parts(11_000, 0));
        // A process restarted from what was stored stamps above every promise.
        assert!(Hlc::from_parts(ceiling(stored).physical_ms() + 1, 0) > stable_claim(Hlc(u64::MAX), None, limit));
        // Below a write still held back, which has not been sent.
        let held = Hlc::from_parts(12_000, 0);
        assert_eq!(stable_claim(Hlc::from_parts(60_000, 7), Some(held), limit), Hlc(held.0 - 1));
    }

    #[test]
    fn stamps_past_the_ceiling_are_held_and_lower_the_stable_stamp() {
        let stored = Hlc::from_parts(10_000, 0);
        let limit = ceiling(stored);
        let deltas = [write(12_000, 1), write(14_000, 1), write(20_000, 2), write(13_500, 1)];
        let mut outgoing = Outgoing::default();
        deltas.iter().for_each(|d| outgoing.push(1, d));
        let mut held = Outgoing::default();
        let (send, lowest) = hold_back(outgoing, limit, &mut held);
        let (send, held_now) = (send.decode().unwrap(), held.decode().unwrap());
        assert_eq!(send.len(), 2, "own stamps within the reservation, and a peer's stamp, go");
        assert_eq!(held_now.len(), 2);
        assert_eq!(lowest, Some(Hlc::from_parts(13_500, 0)));
        assert!(may_leave(&send, 1, limit));
        assert!(!may_leave(&held_now, 1, limit));
        // Once the ceiling passes them, held writes leave with the next window's.
        let (send, lowest) = hold_back(Outgoing::default(), ceiling(Hlc::from_parts(12_000, 0)), &mut held);
        assert_eq!((send.len(), lowest, held.len()), (2, None, 0));
    }

    #[test]
    fn a_restarted_clock_starts_above_every_stamp_that_could_have_left() {
        let stored = Hlc::from_parts(10_000, 7);
        let left = ceiling(stored);
        let mut clock = crate::crdt::HlcClock::new();
        clock.witness(ceiling(stored));
        assert!(clock.tick(9_000) > left);
    }
}
