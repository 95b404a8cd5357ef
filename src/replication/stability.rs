//! Causal stability: when a removal is known to every node, with everything concurrent
//! with it already here, so that its tombstone can be collected (DESIGN §5–§6).
//!
//! Two vectors, both per origin node:
//! - **merged** (`W`): this node has merged every write of that origin stamped at or
//!   below the entry, and stored it durably. It advances with each batch from the origin
//!   that arrives without a gap (the batch's `stable` stamp), once the positions the
//!   batch reached in the shards' delta streams are stored. After a gap (the origin
//!   restarted, or dropped deltas to its bound) it freezes until an anti-entropy round
//!   with that origin, started after the gap, completes.
//! - **reports** (`R[peer]`): the `merged` vector each peer last sent in a batch.
//!
//! A node's report also claims its own writes, and only those it holds for good: up
//! to the stamp below which every own write is stored (own writes may leave before
//! they are stored, and a crash loses them here while peers keep them), and nothing
//! at all until, since this process started, an anti-entropy round with every peer
//! has completed and its merges are stored. A restarted node may lack own writes that
//! reached a peer; a claim covering them would let every node collect their
//! tombstones, and the restarted node would keep (and resend, forever) what they
//! removed. The rounds bring those writes back first.
//!
//! The stable vector is, per origin, the least of this node's `merged` and every peer's
//! report. A tombstone below it is known to every node; and since a peer's report
//! follows, on the same ordered link, every write that peer made before it, every write
//! concurrent with the removal has arrived here. Dropping it loses nothing: a late copy
//! of a removed write is below `merged`, and the shard drops such copies for keys it no
//! longer holds (`KvEngine::merge_key`). Stability waits for every configured peer; a
//! peer that never reports (down, partitioned) holds every tombstone back, until it has
//! been silent for the *horizon* (`--peer-horizon-ms`): it is then given up on, and
//! the stable vector is the least over the others (its own writes count as far as they
//! have reached them). When it comes back it cannot be sent the tombstones collected
//! meanwhile; anti-entropy catches it up instead: with a peer's leaf states comes what
//! the peer has forgotten, and a write held here that the peer merged and no longer
//! holds is removed here too (`shard::absence`). While any peer is given up, this
//! node's own writes count only as far as it claims them itself (`report`), so a
//! restarted node never collects past own writes it may have lost.
//!
//! Pure state: the shell and the simulator feed it batches, anti-entropy rounds and
//! stored positions; it never does I/O or reads a clock.

use std::collections::{BTreeMap, VecDeque};

use crate::crdt::{Dot, Hlc, NodeId, VersionVector};

/// Advances waiting for durability; past this, the oldest are folded together.
const PENDING_ADVANCES_MAX: usize = 256;
/// Own-write marks waiting for durability; past this, the oldest is dropped (a later
/// mark claims more, so that only delays the claim).
const OWN_MARKS_MAX: usize = 256;

/// The round `token` with `peer` is over (completed or given up), unless a later one
/// has started since.
fn close_round(open: &mut BTreeMap<NodeId, u64>, peer: NodeId, token: u64) {
    if open.get(&peer) == Some(&token) {
        open.remove(&peer);
    }
}

/// What a received batch says about its origin.
#[derive(Clone, Debug)]
pub struct BatchReceipt {
    pub origin: NodeId,
    pub session: u64,
    pub seq: u64,
    pub gap: bool,
    pub stable: Hlc,
    pub seen: VersionVector,
}

#[derive(Debug, Default)]
struct Origin {
    session: u64,
    last_seq: u64,
    /// Set by a gap: the anti-entropy round that will clear it, once one has started.
    frozen: bool,
    clearing_round: Option<u64>,
    /// The newest (stable, report) received while frozen.
    held: Option<(Hlc, VersionVector)>,
}

/// Advances that become true once the delta-stream positions are stored.
#[derive(Debug)]
struct Advance {
    updates: BTreeMap<NodeId, (Hlc, VersionVector)>,
    positions: Vec<u64>,
}

#[derive(Debug)]
pub struct Stability {
    own: NodeId,
    /// The node ids of the configured peers, as their handshakes tell them.
    members: Vec<Option<NodeId>>,
    origins: BTreeMap<NodeId, Origin>,
    pending: VecDeque<Advance>,
    merged: VersionVector,
    reports: BTreeMap<NodeId, VersionVector>,
    next_round_token: u64,
    /// (stamp, delta-stream positions holding every own write at or below it).
    own_marks: VecDeque<(Hlc, Vec<u64>)>,
    /// Every own write stamped at or below this is stored.
    own_stored: Hlc,
    /// Peers whose anti-entropy round since this process started has completed, with
    /// the positions its merges reached (`None` once those are stored).
    caught_up: BTreeMap<NodeId, Option<Vec<u64>>>,
    /// Per peer, the round started with it and neither completed nor given up yet
    /// (at most one a peer: a link runs one round at a time).
    rounds_open: BTreeMap<NodeId, u64>,
    /// A peer silent this long is given up on (0: never).
    horizon_ms: u64,
    /// When this process started counting (a peer never heard from is silent since).
    started_ms: u64,
    /// When each peer's last batch arrived.
    heard_ms: BTreeMap<NodeId, u64>,
    /// The newest stamp the outboxes were drained below (`own_drained`).
    own_drained_upto: Hlc,
}

impl Stability {
    pub fn new(own: NodeId, peers: usize) -> Stability {
        Stability {
            own,
            members: vec![None; peers],
            origins: BTreeMap::new(),
            pending: VecDeque::new(),
            merged: VersionVector::new(),
            reports: BTreeMap::new(),
            next_round_token: 1,
            own_marks: VecDeque::new(),
            own_stored: Hlc::ZERO,
            caught_up: BTreeMap::new(),
            rounds_open: BTreeMap::new(),
            horizon_ms: 0,
            started_ms: 0,
            heard_ms: BTreeMap::new(),
            own_drained_upto: Hlc::ZERO,
        }
    }

    /// Give up on a peer silent for `horizon_ms` (0: never), counting from `now_ms`.
    pub fn set_horizon(&mut self, horizon_ms: u64, now_ms: u64) {
        self.horizon_ms = horizon_ms;
        self.started_ms = now_ms;
    }

    /// A batch from `node` arrived (an idle peer sends an empty one at least every two
    /// seconds: `shell::replication`).
    pub fn heard_from(&mut self, node: NodeId, now_ms: u64) {
        let heard = self.heard_ms.entry(node).or_insert(now_ms);
        *heard = (*heard).max(now_ms);
    }

    /// Whether the configured peer `member` (its node id, if known) is given up on.
    fn given_up(&self, member: Option<NodeId>, now_ms: u64) -> bool {
        if self.horizon_ms == 0 {
            return false;
        }
        let heard = member.and_then(|node| self.heard_ms.get(&node).copied()).unwrap_or(self.started_ms);
        now_ms.saturating_sub(heard) > self.horizon_ms
    }

    /// Configured peers given up on now (INFO).
    pub fn given_up_peers(&self, now_ms: u64) -> usize {
        self.members.iter().filter(|m| self.given_up(**m, now_ms)).count()
    }

    /// The outboxes were drained with `stable` below every later own stamp, each
    /// shard's delta stream then holding every own write up to it at `positions`.
    pub fn own_drained(&mut self, stable: Hlc, positions: Vec<u64>) {
        self.own_drained_upto = self.own_drained_upto.max(stable);
        if self.own_marks.back().is_some_and(|(last, _)| *last >= stable) {
            return; // claims nothing more than the last mark
        }
        if self.own_marks.len() >= OWN_MARKS_MAX {
            self.own_marks.pop_front();
        }
        self.own_marks.push_back((stable, positions));
        debug_assert!(self.own_marks.len() <= OWN_MARKS_MAX);
    }

    /// The configured peer at `index` turned out to be node `node`.
    pub fn set_member(&mut self, index: usize, node: NodeId) {
        if let Some(slot) = self.members.get_mut(index) {
            *slot = Some(node);
        }
    }

    /// A batch from `origin` was merged, reaching `positions` in the shards' delta
    /// streams (0 for a shard it did not touch).
    pub fn on_batch(&mut self, receipt: BatchReceipt, positions: Vec<u64>) {
        let origin = self.origins.entry(receipt.origin).or_default();
        let same_session = origin.session == receipt.session;
        if same_session && receipt.seq <= origin.last_seq {
            return; // a resend of a batch already counted
        }
        let contiguous = same_session && !receipt.gap && origin.last_seq.checked_add(1) == Some(receipt.seq);
        if !same_session {
            // A restarted peer reports afresh (it may have lost what it had not stored).
            self.reports.remove(&receipt.origin);
        }
        let origin = self.origins.entry(receipt.origin).or_default();
        origin.session = receipt.session;
        origin.last_seq = receipt.seq;
        if !contiguous {
            origin.frozen = true;
            origin.clearing_round = None;
        }
        if origin.frozen {
            origin.held = Some((receipt.stable, receipt.seen));
            return;
        }
        self.push_advance(receipt.origin, receipt.stable, receipt.seen, positions);
    }

    /// An anti-entropy round with `peer` starts; its token goes to `round_completed`.
    pub fn round_started(&mut self, peer: NodeId) -> u64 {
        let token = self.next_round_token;
        self.next_round_token += 1;
        self.rounds_open.insert(peer, token);
        let origin = self.origins.entry(peer).or_default();
        if origin.frozen {
            origin.clearing_round = Some(token);
        }
        token
    }

    /// Whether a round with `peer` is needed that has not started: since this process
    /// started none has completed with it (until one has, this node claims none of
    /// its own writes), or its writes wait, after a gap, for one begun after the gap.
    /// The link to it starts one at once rather than at its next period: until then
    /// no tombstone of those writes can be collected, anywhere (with a long
    /// `--anti-entropy-interval-ms`, for as long).
    pub fn awaits_round(&self, peer: NodeId) -> bool {
        let never_caught_up = !self.caught_up.contains_key(&peer) && !self.rounds_open.contains_key(&peer);
        never_caught_up || self.origins.get(&peer).is_some_and(|o| o.frozen && o.clearing_round.is_none())
    }

    /// The round `token` with `peer` will not complete (it timed out, or its states
    /// could not leave yet): a gap it was to close waits for another, which
    /// [`Stability::awaits_round`] then asks for.
    pub fn round_abandoned(&mut self, peer: NodeId, token: u64) {
        close_round(&mut self.rounds_open, peer, token);
        if let Some(origin) = self.origins.get_mut(&peer)
            && origin.clearing_round == Some(token)
        {
            origin.clearing_round = None;
        }
    }

    /// The round `token` with `peer` compared every leaf and merged every differing
    /// one, reaching `positions`: everything the peer wrote before the round started is
    /// here, so a gap before that start is closed.
    pub fn round_completed(&mut self, peer: NodeId, token: u64, positions: Vec<u64>) {
        close_round(&mut self.rounds_open, peer, token);
        self.caught_up.entry(peer).or_insert_with(|| Some(positions.clone()));
        let Some(origin) = self.origins.get_mut(&peer) else { return };
        if !origin.frozen || origin.clearing_round != Some(token) {
            return;
        }
        origin.frozen = false;
        origin.clearing_round = None;
        if let Some((stable, seen)) = origin.held.take() {
            self.push_advance(peer, stable, seen, positions);
        }
    }

    fn push_advance(&mut self, origin: NodeId, stable: Hlc, seen: VersionVector, positions: Vec<u64>) {
        if self.pending.len() >= PENDING_ADVANCES_MAX
            && let Some(oldest) = self.pending.pop_front()
            && let Some(next) = self.pending.front_mut()
        {
            // Fold the oldest into the next: it then waits for the later positions,
            // which only delays it. Per origin the later update is the larger one.
            for (node, update) in oldest.updates {
                next.updates.entry(node).or_insert(update);
            }
            for (mine, theirs) in next.positions.iter_mut().zip(oldest.positions) {
                *mine = (*mine).max(theirs);
            }
        }
        let mut updates = BTreeMap::new();
        updates.insert(origin, (stable, seen));
        self.pending.push_back(Advance { updates, positions });
        debug_assert!(self.pending.len() <= PENDING_ADVANCES_MAX);
    }

    /// The shards' delta streams are stored up to `stored`: advances that were waiting
    /// for it take effect.
    pub fn on_stored(&mut self, stored: &[u64]) {
        let is_stored = |positions: &[u64]| positions.iter().zip(stored).all(|(wanted, have)| wanted <= have);
        while let Some((stamp, positions)) = self.own_marks.front() {
            if !is_stored(positions) {
                break;
            }
            self.own_stored = self.own_stored.max(*stamp);
            self.own_marks.pop_front();
        }
        for positions in self.caught_up.values_mut() {
            if positions.as_deref().is_some_and(is_stored) {
                *positions = None;
            }
        }
        while let Some(front) = self.pending.front() {
            let durable = front.positions.iter().zip(stored).all(|(wanted, have)| wanted <= have);
            if !durable {
                break;
            }
            let Some(advance) = self.pending.pop_front() else { break };
            for (origin, (stable, seen)) in advance.updates {
                self.merged.add(Dot::new(stable, origin));
                self.reports.entry(origin).or_default().merge(&seen);
            }
        }
    }

    /// What this node reports to its peers: its `merged` vector, and its own writes up
    /// to `own_stable` as far as they are stored, once it has caught up with every
    /// peer (see the module docs).
    pub fn report(&self, own_stable: Hlc) -> VersionVector {
        let mut report = self.merged.clone();
        let own = self.own_claim(own_stable);
        if own > Hlc::ZERO {
            report.add(Dot::new(own, self.own));
        }
        report
    }

    /// Up to where this node holds its own writes for good (see the module docs).
    fn own_claim(&self, own_stable: Hlc) -> Hlc {
        if self.caught_up_with_every_peer() { own_stable.min(self.own_stored) } else { Hlc::ZERO }
    }

    /// Whether an anti-entropy round with every configured peer completed since this
    /// process started, its merges stored.
    fn caught_up_with_every_peer(&self) -> bool {
        self.members.iter().all(|m| m.is_some_and(|node| matches!(self.caught_up.get(&node), Some(None))))
    }

    /// The stable vector at `now_ms`, or None while some configured peer not given up
    /// on is unknown, or a node outside the configuration has written here.
    pub fn stable_vector(&self, now_ms: u64) -> Option<VersionVector> {
        let configured: Vec<NodeId> = self.members.iter().flatten().copied().collect();
        if self.origins.keys().any(|o| !configured.contains(o)) {
            return None;
        }
        let counted: Option<Vec<NodeId>> = self.members.iter().filter(|m| !self.given_up(**m, now_ms)).copied().collect();
        let members = counted?;
        let gave_up = members.len() < self.members.len();
        if crate::bugs::active(crate::bugs::Bug::TombstoneGcUnstable) {
            // Planted: only this node's own knowledge, as if the others had all of it.
            let mut local = self.merged.clone();
            local.add(Dot::new(Hlc(u64::MAX), self.own));
            return Some(local);
        }
        let mut stable = VersionVector::new();
        for &origin in configured.iter().chain(std::iter::once(&self.own)) {
            let mine = match origin == self.own {
                // With every peer counted, their reports bound this node's own writes.
                true if !gave_up => Hlc(u64::MAX),
                true => self.own_claim(self.own_drained_upto),
                false => self.merged.get(origin),
            };
            let least = members.iter().map(|m| self.reports.get(m).map_or(Hlc::ZERO, |r| r.get(origin))).fold(mine, Hlc::min);
            if least > Hlc::ZERO {
                stable.add(Dot::new(least, origin));
            }
        }
        Some(stable)
    }

    /// Per origin, this node's merged vector (INFO).
    pub fn merged(&self) -> &VersionVector {
        &self.merged
    }

    /// Origins whose gap waits for an anti-entropy round.
    pub fn frozen_origins(&self) -> usize {
        self.origins.values().filter(|o| o.frozen).count()
    }

    /// Advances waiting for their deltas to be stored.
    pub fn pending_advances(&self) -> usize {
        self.pending.len()
    }
}

#[cfg(test)]
mod tests {
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

    #[test]
    fn a_peer_silent_past_the_horizon_is_given_up_until_it_reports_again() {
        let mut s = three();
        s.set_horizon(1_000, 0);
        open(&mut s, 2, 7);
        open(&mut s, 3, 8);
        s.heard_from(2, 0);
        s.heard_from(3, 0);
        s.on_batch(batch(2, 7, 2, 50, &[(1, 40), (2, 50), (3, 30)]), vec![10]);
        s.on_batch(batch(3, 8, 2, 60, &[(1, 45), (2, 20), (3, 60)]), vec![12]);
        s.own_drained(hlc(70), vec![12]);
        s.on_stored(&[12]);
        let everyone = Some(vv(&[(1, 40), (2, 20), (3, 30)]));
        assert_eq!(s.stable_vector(1_000), everyone, "within the horizon every peer counts");
        // Peer 3 falls silent; peer 2 reports on.
        s.heard_from(2, 1_500);
        s.on_batch(batch(2, 7, 3, 90, &[(1, 80), (2, 90), (3, 30)]), vec![13]);
        s.on_stored(&[13]);
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
}
