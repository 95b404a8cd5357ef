//! Tests of `stability.rs` (kept apart so that the state machine reads on its own).

use super::*;

fn hlc(ms: u64) -> Hlc {
    Hlc::from_parts(ms, 0)
}

fn vv(entries: &[(NodeId, u64)]) -> VersionVector {
    let mut v = VersionVector::new();
    entries.iter().for_each(|&(n, ms)| v.add(Dot::new(hlc(ms), n)));
    v
}

fn batch(origin: NodeId, session: u64, seq: u64, stable: u64, seen: &[(NodeId, u64)]) -> BatchReceipt {
    BatchReceipt { origin, session, seq, gap: false, stable: hlc(stable), seen: vv(seen) }
}

/// Node 1 with peers 2 and 3, all known, persistence caught up at once.
fn three() -> Stability {
    let mut s = Stability::new(1, 2);
    s.set_member(0, 2);
    s.set_member(1, 3);
    s
}

/// A first contact is a gap (the peer may hold writes it never sent); an
/// anti-entropy round started after it closes it.
fn open(s: &mut Stability, origin: NodeId, session: u64) {
    s.on_batch(batch(origin, session, 1, 1, &[]), vec![0]);
    let token = s.round_started(origin);
    s.round_completed(origin, token, vec![0]);
    s.on_stored(&[0]);
}

#[test]
fn stable_is_the_least_of_what_every_node_has_merged() {
    let mut s = three();
    assert_eq!(s.stable_vector(0), Some(VersionVector::new()), "nothing reported yet");
    open(&mut s, 2, 7);
    open(&mut s, 3, 8);
    s.on_batch(batch(2, 7, 2, 50, &[(1, 40), (2, 50), (3, 30)]), vec![10]);
    s.on_batch(batch(3, 8, 2, 60, &[(1, 45), (2, 20), (3, 60)]), vec![12]);
    assert_eq!(s.stable_vector(0), Some(VersionVector::new()), "not stored yet: nothing counts");
    s.own_drained(hlc(70), vec![12]);
    s.on_stored(&[12]);
    assert_eq!(s.stable_vector(0), Some(vv(&[(1, 40), (2, 20), (3, 30)])));
    assert_eq!(s.report(hlc(70)), vv(&[(1, 70), (2, 50), (3, 60)]));
}

#[test]
fn own_writes_are_claimed_only_once_stored() {
    let mut s = three();
    open(&mut s, 2, 7);
    open(&mut s, 3, 8);
    s.own_drained(hlc(50), vec![5]);
    assert_eq!(s.report(hlc(60)).get(1), Hlc::ZERO, "own writes up to 50 are not stored yet");
    s.on_stored(&[4]);
    assert_eq!(s.report(hlc(60)).get(1), Hlc::ZERO);
    s.on_stored(&[5]);
    assert_eq!(s.report(hlc(60)).get(1), hlc(50), "stored up to 50: no further");
    assert_eq!(s.report(hlc(40)).get(1), hlc(40), "and never past what was sent");
    s.own_drained(hlc(45), vec![9]);
    s.own_drained(hlc(80), vec![9]);
    s.on_stored(&[9]);
    assert_eq!(s.report(hlc(90)).get(1), hlc(80));
}

#[test]
fn a_process_claims_no_own_write_before_a_round_with_every_peer_is_stored() {
    // A restarted node may lack own writes that reached a peer before they were
    // stored; until it has merged back what each peer holds, it claims none.
    let mut s = three();
    s.own_drained(hlc(50), vec![1]);
    s.on_stored(&[1]);
    assert_eq!(s.report(hlc(60)).get(1), Hlc::ZERO, "no round yet");
    open(&mut s, 2, 7);
    assert_eq!(s.report(hlc(60)).get(1), Hlc::ZERO, "peer 3 not caught up with");
    s.on_batch(batch(3, 8, 1, 1, &[]), vec![0]);
    let token = s.round_started(3);
    s.round_completed(3, token, vec![6]);
    s.on_stored(&[5]);
    assert_eq!(s.report(hlc(60)).get(1), Hlc::ZERO, "the round's merges are not stored yet");
    s.on_stored(&[6]);
    assert_eq!(s.report(hlc(60)).get(1), hlc(50));
}

#[test]
fn own_marks_stay_bounded_while_storage_is_stuck() {
    let mut s = three();
    for ms in 1..5_000u64 {
        s.own_drained(hlc(ms), vec![ms]);
        assert!(s.own_marks.len() <= OWN_MARKS_MAX);
    }
    s.on_stored(&[u64::MAX]);
    assert_eq!(s.own_stored, hlc(4_999), "the newest mark is never dropped");
}

#[test]
fn an_unknown_peer_or_a_stranger_holds_collection_back() {
    let mut s = Stability::new(1, 2);
    s.set_member(0, 2);
    assert_eq!(s.stable_vector(0), None, "peer 2's node id is not known yet");
    s.set_member(1, 3);
    s.on_batch(batch(9, 1, 1, 5, &[]), vec![0]);
    assert_eq!(s.stable_vector(0), None, "node 9 writes here but is not configured");
}

#[test]
fn a_gap_freezes_an_origin_until_a_round_started_after_it_completes() {
    let mut s = three();
    open(&mut s, 2, 7);
    s.on_batch(batch(2, 7, 2, 20, &[(2, 20)]), vec![1]);
    s.on_stored(&[1]);
    assert_eq!(s.merged().get(2), hlc(20));
    let early = s.round_started(2);
    // Batch 3 was lost with an overflowing queue: 4 arrives.
    s.on_batch(batch(2, 7, 4, 40, &[(2, 40)]), vec![2]);
    s.on_batch(batch(2, 7, 5, 50, &[(2, 50)]), vec![3]);
    s.on_stored(&[3]);
    assert_eq!(s.merged().get(2), hlc(20), "frozen");
    assert_eq!(s.frozen_origins(), 1);
    assert!(s.awaits_round(2), "the link to 2 must start a round, not wait for its period");
    assert!(s.awaits_round(3), "no round with node 3 has completed since this process started");
    s.round_completed(2, early, vec![3]);
    s.on_stored(&[3]);
    assert_eq!(s.merged().get(2), hlc(20), "a round started before the gap proves nothing");
    assert!(s.awaits_round(2), "still: the round that ended began before the gap");
    let abandoned = s.round_started(2);
    assert!(!s.awaits_round(2), "one has started");
    s.round_abandoned(2, abandoned);
    assert!(s.awaits_round(2), "it will not complete: another is wanted");
    let late = s.round_started(2);
    s.round_abandoned(2, abandoned);
    assert!(!s.awaits_round(2), "an older round's end changes nothing");
    s.round_completed(2, late, vec![4]);
    s.on_stored(&[3]);
    assert_eq!(s.merged().get(2), hlc(20), "the round's merges are not stored yet");
    s.on_stored(&[4]);
    assert_eq!(s.merged().get(2), hlc(50));
    assert_eq!(s.frozen_origins(), 0);
}

#[test]
fn until_a_round_with_a_peer_completes_one_is_asked_for_even_after_one_is_given_up() {
    let mut s = three();
    assert!(s.awaits_round(2) && s.awaits_round(3), "none since this process started");
    let first = s.round_started(2);
    assert!(!s.awaits_round(2), "one is under way");
    s.round_abandoned(2, first);
    assert!(s.awaits_round(2), "it will not complete: ask again, or no own write is ever claimed");
    let second = s.round_started(2);
    s.round_completed(2, second, vec![0]);
    assert!(!s.awaits_round(2), "caught up with node 2 (and no gap)");
    assert!(s.awaits_round(3));
}

#[test]
fn a_restarted_peer_or_a_flagged_gap_freezes_and_a_resend_does_not() {
    let mut s = three();
    open(&mut s, 2, 7);
    s.on_batch(batch(2, 7, 2, 20, &[]), vec![0]);
    s.on_batch(batch(2, 7, 2, 20, &[]), vec![0]);
    assert_eq!(s.frozen_origins(), 0, "a resend after a reconnect is no gap");
    s.on_batch(batch(2, 8, 3, 30, &[]), vec![0]);
    assert_eq!(s.frozen_origins(), 1, "a new session is a gap");
    let token = s.round_started(2);
    s.round_completed(2, token, vec![0]);
    let mut flagged = batch(2, 8, 4, 40, &[]);
    flagged.gap = true;
    s.on_batch(flagged, vec![0]);
    assert_eq!(s.frozen_origins(), 1, "the sender's outbox overflowed");
}

#[test]
fn a_hostile_sequence_number_cannot_overflow() {
    let mut s = three();
    open(&mut s, 2, 7);
    s.on_batch(batch(2, 7, u64::MAX, 5, &[]), vec![0]);
    s.on_batch(batch(2, 7, u64::MAX, 6, &[]), vec![0]);
    assert_eq!(s.frozen_origins(), 1, "a jump is a gap; a repeat of the last is a resend");
}

#[test]
fn pending_advances_stay_bounded_while_storage_is_stuck() {
    let mut s = three();
    open(&mut s, 2, 7);
    for seq in 2..5_000u64 {
        s.on_batch(batch(2, 7, seq, seq, &[(2, seq)]), vec![seq]);
        assert!(s.pending_advances() <= PENDING_ADVANCES_MAX);
    }
    s.on_stored(&[u64::MAX]);
    assert_eq!(s.merged().get(2), hlc(4_999), "nothing folded away is lost");
    assert_eq!(s.pending_advances(), 0);
}

/// Node 1 with a horizon of 1,000 ms: peers 2 and 3 each report once at instant 0
/// (peer 2 has merged peer 3's writes to `two_saw_three`; peer 3 claims its own to
/// `three_claims`), node 1's own writes stored to 70; then only peer 2 reports on, at
/// 1,500 ms, having merged peer 3's to `two_saw_three` still.
fn peer_three_falls_silent(two_saw_three: u64, three_claims: u64) -> (Stability, Option<VersionVector>) {
    let mut s = three();
    s.set_horizon(1_000, 0);
    open(&mut s, 2, 7);
    open(&mut s, 3, 8);
    s.heard_from(2, 0);
    s.heard_from(3, 0);
    s.on_batch(batch(2, 7, 2, 50, &[(1, 40), (2, 50), (3, two_saw_three)]), vec![10]);
    s.on_batch(batch(3, 8, 2, 60, &[(1, 45), (2, 20), (3, three_claims)]), vec![12]);
    s.own_drained(hlc(70), vec![12]);
    s.on_stored(&[12]);
    let within = s.stable_vector(1_000);
    s.heard_from(2, 1_500);
    s.on_batch(batch(2, 7, 3, 90, &[(1, 80), (2, 90), (3, two_saw_three)]), vec![13]);
    s.on_stored(&[13]);
    (s, within)
}

#[test]
fn a_peer_silent_past_the_horizon_is_given_up_until_it_reports_again() {
    let (mut s, within) = peer_three_falls_silent(30, 60);
    let everyone = Some(vv(&[(1, 40), (2, 20), (3, 30)]));
    assert_eq!(within, everyone, "within the horizon every peer counts");
    // Peer 3 fell silent; peer 2 reported on.
    assert_eq!(s.given_up_peers(1_000), 0);
    assert_eq!(s.given_up_peers(1_001), 1);
    // Own writes: as far as this node claims them (70, stored) and peer 2 merged
    // them (80); peer 3's: as far as nodes 1 and 2 merged them (60 and 30).
    assert_eq!(s.stable_vector(1_001), Some(vv(&[(1, 70), (2, 90), (3, 30)])));
    // Peer 3 is heard from again: it counts again, and holds collection back.
    s.heard_from(3, 2_000);
    assert_eq!(s.given_up_peers(2_000), 0);
    assert_eq!(s.stable_vector(2_000), Some(vv(&[(1, 45), (2, 20), (3, 30)])));
}

#[test]
fn with_a_peer_given_up_a_node_not_caught_up_with_it_counts_none_of_its_own_writes() {
    // A restarted node may have lost own writes that only the absent peer holds.
    let mut s = three();
    s.set_horizon(1_000, 0);
    open(&mut s, 2, 7);
    s.heard_from(2, 5_000);
    s.on_batch(batch(2, 7, 2, 50, &[(1, 40), (2, 50)]), vec![1]);
    s.own_drained(hlc(70), vec![1]);
    s.on_stored(&[1]);
    let stable = s.stable_vector(5_000).expect("peer 3, never heard from, is given up");
    assert_eq!(stable.get(1), Hlc::ZERO, "no own write counts");
    assert_eq!(stable.get(2), hlc(50));
}

#[test]
fn a_peer_whose_node_id_is_unknown_is_given_up_after_the_horizon_too() {
    let mut s = Stability::new(1, 2);
    s.set_member(0, 2);
    s.set_horizon(1_000, 100);
    s.heard_from(2, 1_100);
    assert_eq!(s.stable_vector(1_100), None, "peer 2's node id is not known yet");
    assert!(s.stable_vector(1_101).is_some(), "silent since the start: given up");
    let mut never = Stability::new(1, 1);
    never.set_horizon(0, 0);
    assert_eq!(never.stable_vector(u64::MAX), None, "horizon 0: never given up");
}

#[test]
fn a_peer_given_up_on_counts_its_writes_only_as_far_as_it_claimed_them() {
    // Peer 3 restarted and lost writes that reached one node only; its batches' promise
    // has moved the others' `merged` past them (to 60), but its own report never
    // claimed them (30) (seed 1788 of `dst --no-periodic-anti-entropy`).
    let (s, _) = peer_three_falls_silent(60, 30);
    assert_eq!(s.given_up_peers(1_001), 1);
    assert_eq!(s.stable_vector(1_001).map(|v| v.get(3)), Some(hlc(30)), "nodes 1 and 2 merged to 60; peer 3 claimed 30");
}
