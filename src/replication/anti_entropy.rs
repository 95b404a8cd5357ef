//! The anti-entropy round of one peer link, as a state machine (DESIGN §6), driven
//! identically by the server's link task and by the simulator.
//!
//! A round, started by the link's dialer: it sends its 64 group hashes
//! ([`Message::AeGroups`]); the listener answers with its leaves of every group that
//! differs ([`answer_groups`]); the dialer then sends every key state of the leaves that
//! differ, at most [`LEAVES_PER_ROUND_MAX`] of them, and the listener merges them and
//! replies with its own states of those leaves. A round is due on every (re)connect,
//! after its queue overflowed, and every interval; one that gets no answer (its
//! connection died) is abandoned after a timeout.
//!
//! Decides only: the caller gathers leaves and key states from the shards and moves
//! the messages.

use super::wire::Message;
use crate::engine::kv::merkle::{GROUP_LEAVES, MerkleLeaves};

/// Leaves repaired per round at most; more differing leaves take more rounds, the next
/// one due at once.
pub const LEAVES_PER_ROUND_MAX: usize = 512;

/// The dialer's side of anti-entropy on one link.
#[derive(Debug)]
pub struct AntiEntropy {
    interval_ms: u64,
    timeout_ms: u64,
    next_round: u64,
    due_ms: u64,
    /// The round in flight: its number, when it started, this node's leaves then.
    in_flight: Option<(u64, u64, MerkleLeaves)>,
    /// More leaves differed than one round repairs.
    again: bool,
    /// No round starts before this instant, wanted or not (`retry_later`).
    not_before_ms: u64,
    /// The round `due` gave up on for want of an answer, until `take_abandoned`.
    abandoned: Option<u64>,
    pub rounds_completed: u64,
}

/// An anti-entropy round whose states went to the peer and whose answers are still
/// arriving (the dialer counts them; the last one completes the round for `Stability`).
#[derive(Clone, Copy, Debug)]
pub struct RoundWait {
    pub round: u64,
    /// `Stability::round_started`'s token for it.
    pub token: u64,
    pub remaining: usize,
    /// Every differing leaf was exchanged (not cut at the per-round bound).
    pub whole: bool,
    /// When its states were sent: a wait with no answer for the round timeout is
    /// given up.
    pub since_ms: u64,
}

/// How long a link waits before it starts again a round it gave up for states that
/// could not leave yet (their stamps not stored; a segment is written every 250 ms).
pub const RETRY_MS: u64 = 500;

impl AntiEntropy {
    pub fn new(interval_ms: u64, timeout_ms: u64) -> AntiEntropy {
        assert!(interval_ms > 0 && timeout_ms > 0);
        AntiEntropy {
            interval_ms,
            timeout_ms,
            next_round: 1,
            due_ms: 0,
            in_flight: None,
            again: false,
            not_before_ms: 0,
            abandoned: None,
            rounds_completed: 0,
        }
    }

    /// Whether a round should start now. `wanted`: the link asks for one (a new
    /// connection, an overflowed queue). Abandons a round that timed out.
    pub fn due(&mut self, now_ms: u64, wanted: bool) -> bool {
        if let Some((round, started, _)) = &self.in_flight
            && now_ms > started + self.timeout_ms
        {
            self.abandoned = Some(*round);
            self.in_flight = None;
        }
        self.in_flight.is_none() && now_ms >= self.not_before_ms && (wanted || self.again || now_ms >= self.due_ms)
    }

    /// The tokens of rounds that will not complete, each taken once: the round `due`
    /// gave up on (timed out before its leaves came) when `round_token` (round, token)
    /// names it, and a wait for answers older than the round timeout (a listener leaves
    /// a round unanswered while its own stamps may not leave yet). The link hands them
    /// to `Stability::round_abandoned`, so that a gap such a round was to close asks for
    /// another instead of waiting for the next period.
    pub fn stalled_rounds(&mut self, round_token: &mut Option<(u64, u64)>, wait: &mut Option<RoundWait>, now_ms: u64) -> [Option<u64>; 2] {
        let timed_out = self.abandoned.take().and_then(|round| round_token.take_if(|(r, _)| *r == round)).map(|(_, token)| token);
        let unanswered = wait.take_if(|w| now_ms > w.since_ms + self.timeout_ms).map(|w| w.token);
        [timed_out, unanswered]
    }

    /// The round in flight, or the one whose states are being exchanged, cannot finish
    /// now (states whose stamps may not leave yet): start the next one after
    /// [`RETRY_MS`], not at once (the stamps are stored within a segment interval).
    pub fn retry_later(&mut self, now_ms: u64) {
        self.in_flight = None;
        self.not_before_ms = now_ms + RETRY_MS;
    }

    /// Start a round with this node's current leaves; returns the message to send.
    pub fn start(&mut self, now_ms: u64, leaves: MerkleLeaves) -> Message {
        debug_assert!(self.in_flight.is_none());
        let round = self.next_round;
        self.next_round += 1;
        self.due_ms = now_ms + self.interval_ms;
        self.again = false;
        let groups = leaves.groups();
        self.in_flight = Some((round, now_ms, leaves));
        Message::AeGroups { round, groups }
    }

    /// The listener's leaves arrived: the leaves whose key states to send (empty: in
    /// sync). An answer for no round, or another round, is a protocol error.
    pub fn on_leaves(&mut self, round: u64, theirs: &[(u16, u64)]) -> Result<Vec<u16>, String> {
        let Some((expected, _, mine)) = self.in_flight.take() else {
            return Err(format!("anti-entropy leaves for round {round}, none in flight"));
        };
        if round != expected {
            return Err(format!("anti-entropy leaves for round {round}, expected {expected}"));
        }
        let mut differing: Vec<u16> = theirs.iter().filter(|(leaf, hash)| mine.leaf(*leaf) != *hash).map(|(leaf, _)| *leaf).collect();
        if differing.len() > LEAVES_PER_ROUND_MAX {
            differing.truncate(LEAVES_PER_ROUND_MAX);
            self.again = true;
        }
        self.rounds_completed += 1;
        Ok(differing)
    }

    /// The connection dropped: a round in flight will never be answered.
    pub fn on_disconnect(&mut self) {
        self.in_flight = None;
    }
}

/// The listener's answer to a round's group hashes: its leaves of every group whose
/// hash differs.
pub fn answer_groups(round: u64, mine: &MerkleLeaves, their_groups: &[u64]) -> Message {
    let mut leaves = Vec::new();
    for group in mine.differing_groups(their_groups) {
        let first = group as usize * GROUP_LEAVES;
        leaves.extend(mine.group_leaves(group).iter().enumerate().map(|(i, hash)| ((first + i) as u16, *hash)));
    }
    Message::AeLeaves { round, leaves }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaves_with(toggles: &[(u16, u64)]) -> MerkleLeaves {
        let mut leaves = MerkleLeaves::new();
        toggles.iter().for_each(|(leaf, digest)| leaves.toggle(*leaf, *digest));
        leaves
    }

    #[test]
    fn a_round_finds_exactly_the_differing_leaves() {
        let mine = leaves_with(&[(3, 7), (100, 9)]);
        let theirs = leaves_with(&[(3, 7), (101, 5)]);
        let mut ae = AntiEntropy::new(1000, 3000);
        assert!(ae.due(0, true));
        let Message::AeGroups { round, groups } = ae.start(0, mine.clone()) else { panic!("groups") };
        assert!(!ae.due(1, true), "one round at a time");
        let Message::AeLeaves { leaves, .. } = answer_groups(round, &theirs, &groups) else { panic!("leaves") };
        assert_eq!(ae.on_leaves(round, &leaves).unwrap(), vec![100, 101]);
        assert!(!ae.due(500, false), "next round after the interval");
        assert!(ae.due(1000, false));
    }

    #[test]
    fn a_round_that_cannot_finish_now_is_retried_after_a_pause_not_at_once() {
        let mut ae = AntiEntropy::new(1_000_000, 60_000);
        assert!(ae.due(0, true));
        let _ = ae.start(0, MerkleLeaves::new());
        ae.retry_later(10);
        assert!(!ae.due(11, true), "not in a loop, wanted or not");
        assert!(ae.due(10 + RETRY_MS, true));
        assert!(!ae.due(10 + RETRY_MS, false), "and only when wanted before its period");
    }

    #[test]
    fn a_lost_answer_times_out_and_a_stray_one_is_an_error() {
        let mut ae = AntiEntropy::new(1000, 3000);
        let _ = ae.start(0, MerkleLeaves::new());
        let (mut token, mut wait) = (Some((1, 77)), None);
        assert!(!ae.due(3000, true));
        assert_eq!(ae.stalled_rounds(&mut token, &mut wait, 3000), [None, None]);
        assert!(ae.due(3001, true), "abandoned after the timeout");
        assert_eq!(ae.stalled_rounds(&mut token, &mut wait, 3001), [Some(77), None], "the link hears of it once");
        assert_eq!(ae.stalled_rounds(&mut token, &mut wait, 3001), [None, None]);
        let mut wait = Some(RoundWait { round: 2, token: 78, remaining: 1, whole: true, since_ms: 4000 });
        assert_eq!(ae.stalled_rounds(&mut None, &mut wait, 7000), [None, None], "answers may still come");
        assert_eq!(ae.stalled_rounds(&mut None, &mut wait, 7001), [None, Some(78)], "unanswered for the timeout");
        assert!(wait.is_none());
        assert!(ae.on_leaves(1, &[]).is_err(), "no round in flight any more");
    }

    #[test]
    fn more_differing_leaves_than_a_round_repairs_make_the_next_round_due_at_once() {
        let mine = MerkleLeaves::new();
        let theirs: Vec<(u16, u64)> = (0..LEAVES_PER_ROUND_MAX as u16 + 10).map(|l| (l, 1)).collect();
        let mut ae = AntiEntropy::new(1000, 3000);
        let _ = ae.start(0, mine);
        assert_eq!(ae.on_leaves(1, &theirs).unwrap().len(), LEAVES_PER_ROUND_MAX);
        assert!(ae.due(1, false));
    }
}
