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
//! have reached them, and as far as its last report claimed them: a restarted peer may
//! have lost writes that reached one node only, which the others' `merged` steps
//! over). A collection that leaves it out spares the tombstones holding its counters
//! (`engine::kv::tombstone_gc`). When it comes back it cannot be sent the tombstones collected
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
    /// Per peer: whether the last collection vector left it out (given up on), and how
    /// many times one has newly left it out (`collection_vector`).
    give_ups: BTreeMap<NodeId, (bool, u64)>,
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
            give_ups: BTreeMap::new(),
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

    /// The stable vector tombstone collection uses at `now_ms` ([`Stability::stable_vector`]),
    /// noting each peer it newly leaves out: a link to such a peer is then dropped with
    /// what is in flight on it (`shell::peer_link::liveness::until_given_up`), since a batch sent
    /// before and delivered late could carry writes this collection removes. Counted
    /// here rather than by the links' own clocks, so that a peer given up on and heard
    /// again between two of a link's checks still has its link dropped.
    ///
    /// With it, the peers it leaves out, sorted: the collection spares their counters
    /// (`engine::kv::tombstone_gc` says why).
    pub fn collection_vector(&mut self, now_ms: u64) -> Option<(VersionVector, Vec<NodeId>)> {
        let mut spared = Vec::new();
        for member in self.members.clone().into_iter().flatten() {
            let given_up = self.given_up(Some(member), now_ms);
            let (was, episodes) = self.give_ups.entry(member).or_default();
            if given_up && !*was {
                *episodes += 1;
            }
            *was = given_up;
            if given_up {
                spared.push(member);
            }
        }
        spared.sort_unstable();
        spared.dedup();
        Some((self.stable_vector(now_ms)?, spared))
    }

    /// How many times collection has newly left peer `node` out (see
    /// [`Stability::collection_vector`]): a link drops when this moves.
    pub fn give_up_episodes(&self, node: NodeId) -> u64 {
        self.give_ups.get(&node).map_or(0, |(_, episodes)| *episodes)
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
                // A peer's writes count only as far as it claims them itself, also
                // when it is given up on (its claim then comes from its last report):
                // restarted, it may lack writes that reached one other node only, and
                // the others' `merged` may step over them (a round with it cannot bring
                // them); collecting by that would take them for removed when they come.
                false => {
                    let claimed = self.reports.get(&origin).map_or(Hlc::ZERO, |r| r.get(origin));
                    self.merged.get(origin).min(claimed)
                }
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
#[path = "stability_tests.rs"]
mod tests;
