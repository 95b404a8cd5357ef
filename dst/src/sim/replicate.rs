//! Replication under simulation: every node's outbox drained into batches, the real
//! wire encoding, per-peer queues with acknowledgements and resends, Merkle
//! anti-entropy rounds, links reset by crashes; and, at the end, the replication
//! invariants: identical replicas (tombstones included), equal Merkle trees, and the
//! converged values the oracle computes (`replica_checks`).
//!
//! The link protocol here mirrors `shell::peer_link` message for message; the pieces
//! that decide (outbox, queues, Merkle diff, codec, merges, causal stability, stamp
//! reservation) are the real ones. Faults: partitions (frames held, as TCP holds them),
//! link resets (frames lost, resent), pauses, clock jumps and drift, slow links, and
//! crashes that lose what was not stored (the oracle then forgets the writes no node
//! holds any more, and models the ones only other nodes hold: docs/testing.md).

use bytes::Bytes;
use meridian::crdt::VersionVector;
use meridian::delta::Delta;
use meridian::delta::outgoing::Outgoing;
use meridian::replication::anti_entropy::{AntiEntropy, RoundWait, answer_groups};
use meridian::replication::peer::PeerQueue;
use meridian::replication::reservation;
use meridian::replication::stability::{BatchReceipt, Stability};
use meridian::replication::wire::{self, Message};
use meridian::shard::{ShardOp, ShardReply};

use super::{Event, Sim, SimConfig};

/// Batch window, as `--repl-batch-ms`.
pub const REPL_TICK_MS: u64 = 10;
/// Anti-entropy period per link.
const AE_INTERVAL_MS: u64 = 500;
/// The period of a run without periodic rounds (`SimConfig::periodic_anti_entropy`):
/// longer than any run, and far from overflowing when added to a clock.
const AE_NEVER_MS: u64 = 1 << 40;
/// A round whose answer was lost with its connection is abandoned after this long.
const AE_ROUND_TIMEOUT_MS: u64 = 3_000;
/// Per-peer queue bound: small, so that overflow and anti-entropy catch-up happen.
const PEER_QUEUE_BYTES: usize = 16 * 1024;
/// Quiet time after the workload for every link to drain and every tree to compare.
pub const QUIESCE_MS: u64 = 5_000;
/// An idle node's stability report goes out this often (the server: every second).
const REPORT_INTERVAL_MS: u64 = 100;
/// Tombstone collection runs at most this often (the server: every second).
const GC_INTERVAL_MS: u64 = 100;
/// An idle node sends an empty batch at least this often (the server: every 2 s).
const HEARTBEAT_INTERVAL_MS: u64 = 200;

/// A node's replication state: one queue and one anti-entropy state per peer, and
/// what it knows of causal stability.
pub struct ReplNode {
    queues: Vec<PeerQueue>,
    seq: u64,
    session: u64,
    /// The outbox dropped deltas: the next batch says so.
    gap: bool,
    ae: Vec<AntiEntropy>,
    /// Per peer: the round in flight and its stability token.
    round_tokens: Vec<Option<(u64, u64)>>,
    /// Per peer: the round whose states went out, waiting for the answer.
    round_waits: Vec<Option<RoundWait>>,
    pub(super) stability: Stability,
    last_report: (VersionVector, u64),
    last_gc: (VersionVector, u64),
    /// The highest shard clock at the last drain (see `ShardOp::DrainOutbox`).
    clock_floor: meridian::crdt::Hlc,
    /// Local writes whose stamps may not leave yet (`replication::reservation`).
    held: Outgoing,
    /// Per peer: the give-up episodes its link has seen (`Stability::give_up_episodes`).
    give_ups_seen: Vec<u64>,
}

impl ReplNode {
    /// `node` is this node's index; node ids are index + 1. A peer silent for the
    /// run's horizon (`SimConfig::horizon_ms`) from `now_ms` on is given up on.
    pub fn new(cfg: &SimConfig, node: usize, session: u64, now_ms: u64) -> ReplNode {
        let nodes = cfg.nodes;
        let horizon_ms = cfg.horizon_ms();
        let ae_interval_ms = if cfg.periodic_anti_entropy { AE_INTERVAL_MS } else { AE_NEVER_MS };
        let mut stability = Stability::new(node as u16 + 1, nodes - 1);
        stability.set_horizon(horizon_ms, now_ms);
        for (i, peer) in (0..nodes).filter(|&p| p != node).enumerate() {
            stability.set_member(i, peer as u16 + 1);
        }
        ReplNode {
            queues: (0..nodes).map(|_| PeerQueue::with_catch_up(PEER_QUEUE_BYTES)).collect(),
            seq: 0,
            session,
            gap: false,
            ae: (0..nodes).map(|_| AntiEntropy::new(ae_interval_ms, AE_ROUND_TIMEOUT_MS)).collect(),
            round_tokens: vec![None; nodes],
            round_waits: vec![None; nodes],
            stability,
            last_report: (VersionVector::new(), 0),
            last_gc: (VersionVector::new(), 0),
            clock_floor: meridian::crdt::Hlc::ZERO,
            held: Outgoing::default(),
            give_ups_seen: vec![0; nodes],
        }
    }
}

impl Sim {
    /// The highest own stamp that may leave `node` now.
    fn ceiling(&self, node: usize) -> meridian::crdt::Hlc {
        let stored = self.nodes[node].storage.streamer.as_ref().map_or(meridian::crdt::Hlc::ZERO, |s| s.durable_hlc());
        reservation::ceiling(stored)
    }

    /// Every shard's delta-stream position now.
    fn delta_marks(&mut self, node: usize, now: u64) -> Vec<u64> {
        let shards = &mut self.nodes[node].shards;
        shards.iter_mut().map(|s| if let ShardReply::Count(n) = s.apply(ShardOp::DeltaMark, now) { n as u64 } else { u64::MAX }).collect()
    }

    /// A round with `peer` compared every leaf and merged every differing one.
    fn complete_round(&mut self, node: usize, peer: usize, token: u64, now: u64) {
        let marks = self.delta_marks(node, now);
        if let Some(repl) = self.nodes[node].repl.as_mut() {
            repl.stability.round_completed(peer as u16 + 1, token, marks);
        }
    }

    /// Stability's durability feed and tombstone collection. A node whose writes are
    /// all in its store has stored every position it has recorded.
    fn collect_tombstones(&mut self, node: usize, now: u64, local: u64) {
        if self.fully_stored(node) {
            let marks = self.delta_marks(node, local);
            self.nodes[node].repl.as_mut().expect("replication runs").stability.on_stored(&marks);
        }
        let repl = self.nodes[node].repl.as_mut().expect("replication runs");
        if now < repl.last_gc.1 + GC_INTERVAL_MS {
            return;
        }
        let Some((stable, spared)) = repl.stability.collection_vector(local) else { return };
        // Also under an unchanged stable vector, as the server does
        // (`shell::replication::collect_tombstones`).
        if stable.is_empty() {
            return;
        }
        repl.last_gc = (stable.clone(), now);
        let mut dropped = 0;
        for shard in &mut self.nodes[node].shards {
            if let ShardReply::Count(n) = shard.apply(ShardOp::ForgetStable { stable: stable.clone(), spared: spared.clone() }, local) {
                dropped += n;
            }
        }
        if dropped > 0 {
            self.log(format!("n{node} collected {dropped} tombstones below {stable:?} sparing {spared:?}"));
        }
    }

    fn link_send(&mut self, dialer: usize, listener: usize, to_dialer: bool, message: &Message) {
        self.link_send_frame(dialer, listener, to_dialer, wire::encode(message));
    }

    fn link_send_frame(&mut self, dialer: usize, listener: usize, to_dialer: bool, frame: Bytes) {
        let epoch = self.link_epochs[dialer][listener];
        let (from, to) = if to_dialer { (listener, dialer) } else { (dialer, listener) };
        let (from_region, to_region) = (self.nodes[from].region, self.nodes[to].region);
        self.send(from_region, to_region, Event::Deliver { dialer, listener, epoch, to_dialer, frame });
    }

    /// A node's batch window: drain its outboxes into one batch for every peer, send
    /// what its queues hold, and start anti-entropy rounds that are due.
    pub(super) fn repl_tick(&mut self, node: usize) {
        let now = self.now;
        let n = &mut self.nodes[node];
        if !n.up || n.paused_until > now {
            return;
        }
        let local = n.local_ms(now);
        let own = n.id;
        let mut deltas = Outgoing::default();
        let mut stable = meridian::crdt::Hlc(u64::MAX);
        let mut overflowed = false;
        let mut rounds_wanted = false;
        let floor = n.repl.as_ref().map_or(meridian::crdt::Hlc::ZERO, |r| r.clock_floor);
        let mut clock_floor = floor;
        let mut positions = Vec::with_capacity(n.shards.len());
        for shard in &mut n.shards {
            if let ShardReply::Outbox { batch, stable: s, recorded, rounds_wanted: wanted } =
                shard.apply(ShardOp::DrainOutbox { floor }, local)
            {
                clock_floor = clock_floor.max(s);
                deltas.append(batch.deltas);
                overflowed |= batch.overflowed;
                rounds_wanted |= wanted;
                stable = stable.min(s);
                positions.push(recorded);
            }
        }
        // Only local writes are sent: every state carries a write of this node.
        let sent = match deltas.decode() {
            Ok(sent) => sent,
            Err(e) => {
                let reason = format!("n{node} outbox deltas do not decode: {e}");
                self.fail(reason);
                return;
            }
        };
        if let Some(echo) =
            sent.iter().find(|d| matches!(d, Delta::Key { state, .. } if state.causal_context().get(own) == meridian::crdt::Hlc::ZERO))
        {
            let reason = format!("n{node} sends a delta it did not write (echo): {echo:?}");
            self.fail(reason);
            return;
        }
        if rounds_wanted {
            self.log(format!("n{node} removed by the absence rule what a reader saw: every link compares trees"));
        }
        let peers = self.nodes.len();
        let stability = &mut self.nodes[node].repl.as_mut().expect("replication runs").stability;
        stability.own_drained(stable, positions);
        self.collect_tombstones(node, now, local);
        let ceiling = self.ceiling(node);
        let repl = self.nodes[node].repl.as_mut().expect("replication runs");
        repl.clock_floor = clock_floor;
        let (deltas, lowest_held) = reservation::hold_back(deltas, ceiling, &mut repl.held);
        stable = reservation::stable_claim(stable, lowest_held, ceiling);
        repl.gap |= overflowed;
        let seen = repl.stability.report(stable);
        // Also unchanged, every `HEARTBEAT_INTERVAL_MS` (as the server does): a peer's
        // silence is what gives up on it.
        let report_due = now >= repl.last_report.1 + REPORT_INTERVAL_MS
            && (seen != repl.last_report.0 || now >= repl.last_report.1 + HEARTBEAT_INTERVAL_MS);
        if !deltas.is_empty() || report_due {
            repl.last_report = (seen.clone(), now);
            repl.seq += 1;
            let count = deltas.len();
            let gap = std::mem::take(&mut repl.gap);
            let head = wire::BatchHead { seq: repl.seq, session: repl.session, gap, stable, seen: &seen };
            let frame = wire::encode_batch(&head, count, &deltas.into_bytes());
            for (peer, queue) in repl.queues.iter_mut().enumerate() {
                if peer != node {
                    queue.push(repl.seq, frame.clone(), count, now);
                }
            }
        }
        for peer in (0..peers).filter(|&p| p != node) {
            // As the server's link does (`shell::peer_link::liveness::until_given_up`): a peer
            // that collection newly left out loses the connection and what is in flight
            // on it; the new connection catches it up by a round before any batch
            // (`PeerQueue::states_sent`).
            let repl = self.nodes[node].repl.as_mut().expect("replication runs");
            let episodes = repl.stability.give_up_episodes(peer as u16 + 1);
            if std::mem::replace(&mut repl.give_ups_seen[peer], episodes) != episodes {
                self.log(format!("n{node} gives up on n{peer}: its link drops"));
                self.reset_link(node, peer);
            }
            let repl = self.nodes[node].repl.as_mut().expect("replication runs");
            if overflowed || rounds_wanted {
                repl.queues[peer].needs_anti_entropy = true;
            }
            let mut frames = Vec::new();
            while let Some(frame) = repl.queues[peer].next_to_send() {
                frames.push(frame);
            }
            // Rounds that will not complete are given up, as the server does.
            for token in repl.ae[peer].stalled_rounds(&mut repl.round_tokens[peer], &mut repl.round_waits[peer], now).into_iter().flatten()
            {
                repl.stability.round_abandoned(peer as u16 + 1, token);
            }
            let wanted =
                repl.queues[peer].needs_anti_entropy || repl.queues[peer].catching_up() || repl.stability.awaits_round(peer as u16 + 1);
            let start_round = repl.ae[peer].due(now, wanted);
            for frame in frames {
                self.link_send_frame(node, peer, false, frame);
            }
            if start_round {
                let leaves = self.leaves(node);
                let repl = self.nodes[node].repl.as_mut().expect("replication runs");
                repl.queues[peer].needs_anti_entropy = false;
                repl.queues[peer].round_started();
                let groups = repl.ae[peer].start(now, leaves);
                if let Message::AeGroups { round, .. } = &groups {
                    let token = repl.stability.round_started(peer as u16 + 1);
                    repl.round_tokens[peer] = Some((*round, token));
                }
                self.link_send(node, peer, false, &groups);
            }
        }
    }

    /// A frame arrives on the link `dialer -> listener`, at the dialer if `to_dialer`,
    /// and is taken; or is handed back when a shard refused its merge (persistence
    /// behind), for the link to offer again before anything after it (`link_stall`).
    pub(super) fn take_frame(&mut self, dialer: usize, listener: usize, epoch: u32, to_dialer: bool, frame: Bytes) -> Result<(), Bytes> {
        if epoch != self.link_epochs[dialer][listener] {
            return Ok(()); // the connection it was written on is gone
        }
        let at = if to_dialer { dialer } else { listener };
        let n = &self.nodes[at];
        if !n.up {
            return Ok(());
        }
        if n.paused_until > self.now {
            let when = n.paused_until;
            self.schedule(when, Event::Deliver { dialer, listener, epoch, to_dialer, frame });
            return Ok(());
        }
        let local = n.local_ms(self.now);
        let message = match wire::decode_one(&frame, 64 << 20) {
            Ok(message) => message,
            Err(e) => {
                self.fail(format!("n{at} cannot decode a frame from its peer: {e}"));
                return Ok(());
            }
        };
        match message {
            Message::Batch { seq, session, gap, stable, seen, deltas } if !to_dialer => {
                if let Some(positions) = self.merge(listener, deltas, local) {
                    let receipt = BatchReceipt { origin: dialer as u16 + 1, session, seq, gap, stable, seen };
                    if let Some(repl) = self.nodes[listener].repl.as_mut() {
                        repl.stability.heard_from(dialer as u16 + 1, local);
                        repl.stability.on_batch(receipt, positions);
                    }
                    self.link_send(dialer, listener, true, &Message::Ack { seq });
                } else {
                    return Err(frame);
                }
            }
            Message::Ack { seq } if to_dialer => {
                if let Some(repl) = self.nodes[dialer].repl.as_mut() {
                    repl.queues[listener].on_ack(seq);
                }
            }
            Message::AeGroups { round, groups } if !to_dialer => {
                let mine = self.leaves(listener);
                self.link_send(dialer, listener, true, &answer_groups(round, &mine, &groups));
            }
            Message::AeLeaves { round, leaves } if to_dialer => {
                let Some(repl) = self.nodes[dialer].repl.as_mut() else { return Ok(()) };
                // A stray answer (its round abandoned) closes the connection, as it does
                // in the server; the next round starts on the new one.
                let differing = match repl.ae[listener].on_leaves(round, &leaves) {
                    Ok(differing) => differing,
                    Err(_) => {
                        self.reset_link(dialer, listener);
                        return Ok(());
                    }
                };
                let whole = differing.len() < meridian::replication::anti_entropy::LEAVES_PER_ROUND_MAX;
                let token = repl.round_tokens[listener].take().filter(|(r, _)| *r == round).map(|(_, t)| t);
                if let Some(token) = token {
                    if differing.is_empty() {
                        if whole {
                            self.complete_round(dialer, listener, token, local);
                        }
                    } else {
                        repl.round_waits[listener] = Some(RoundWait { round, token, remaining: 1, whole, since_ms: self.now });
                    }
                }
                if differing.is_empty() {
                    self.nodes[dialer].repl.as_mut().expect("replication runs").queues[listener].states_sent(whole);
                } else {
                    let deltas = self.export(dialer, &differing, local);
                    // States with stamps that may not leave yet: the round is given up
                    // and another starts once they are stored (as the server does).
                    if reservation::may_leave(&deltas, self.nodes[dialer].id, self.ceiling(dialer)) {
                        self.link_send(
                            dialer,
                            listener,
                            false,
                            &Message::AeStates { round, reply_wanted: true, leaves: differing, deltas },
                        );
                        // Queued batches follow these states on the link (`PeerQueue::states_sent`).
                        self.nodes[dialer].repl.as_mut().expect("replication runs").queues[listener].states_sent(whole);
                    } else {
                        let now = self.now;
                        let repl = self.nodes[dialer].repl.as_mut().expect("replication runs");
                        if let Some(given_up) = repl.round_waits[listener].take_if(|w| w.round == round) {
                            repl.stability.round_abandoned(listener as u16 + 1, given_up.token);
                        }
                        repl.ae[listener].retry_later(now);
                    }
                }
            }
            Message::AeStates { round, reply_wanted, leaves, deltas } => {
                if self.merge_leaf_states(at, &leaves, deltas, local).is_none() {
                    return Err(frame);
                }
                if to_dialer {
                    let repl = self.nodes[dialer].repl.as_mut().expect("replication runs");
                    if let Some(RoundWait { token, whole, .. }) = repl.round_waits[listener].take_if(|w| w.round == round)
                        && whole
                    {
                        self.complete_round(dialer, listener, token, local);
                    }
                }
                if reply_wanted && !to_dialer {
                    let mine = self.export(listener, &leaves, local);
                    if reservation::may_leave(&mine, self.nodes[listener].id, self.ceiling(listener)) {
                        self.link_send(dialer, listener, true, &Message::AeStates { round, reply_wanted: false, leaves, deltas: mine });
                    }
                }
            }
            other => self.fail(format!("n{at} got an unexpected {} message", other.name())),
        }
        Ok(())
    }

    /// Whether every write the node made is in its object store (so a crash now loses
    /// only memory).
    pub(super) fn fully_stored(&self, node: usize) -> bool {
        let n = &self.nodes[node];
        n.storage.in_flight.is_none()
            && n.storage.streamer.as_ref().is_some_and(|s| s.is_drained())
            && n.shards.iter().all(|s| s.deltas.is_empty() && s.kv.expired.is_empty())
    }

    /// A crash: every link of the node drops (frames in flight lost; each peer resends
    /// what is unacknowledged and compares trees when it reconnects), and the node
    /// restarts with fresh queues.
    pub(super) fn repl_crash(&mut self, node: usize) {
        let nodes = self.nodes.len();
        for other in (0..nodes).filter(|&o| o != node) {
            self.reset_link(node, other);
            self.reset_link(other, node);
        }
        let session = ((self.nodes[node].incarnation as u64) << 16) | node as u64;
        let local = self.nodes[node].local_ms(self.now);
        self.nodes[node].repl = Some(ReplNode::new(&self.cfg, node, session, local));
    }

    /// A restart: the peers' connections to the node come up again, to the new
    /// process. While the node was down, the server's dialers could not connect, so what
    /// they queued for it stayed unsent. Here those frames went out and vanished at the
    /// dead node (`deliver`), so each link resets as a reconnect does: everything
    /// unacknowledged is sent again and the trees are compared. Without this, a peer's
    /// last stability report, sent while the node was down, never reached it. A peer
    /// sends its report again only when the report changes, so the restarted node could
    /// not count that peer (seed 20031914).
    pub(super) fn repl_restart(&mut self, node: usize) {
        for other in (0..self.nodes.len()).filter(|&o| o != node) {
            self.reset_link(node, other);
            self.reset_link(other, node);
        }
    }

    /// The connection of link `dialer -> listener` drops: frames in flight are lost,
    /// the dialer resends what is unacknowledged and compares trees on reconnect.
    pub(super) fn reset_link(&mut self, dialer: usize, listener: usize) {
        self.link_epochs[dialer][listener] += 1;
        if let Some(repl) = self.nodes[dialer].repl.as_mut() {
            repl.queues[listener].on_disconnect();
            repl.queues[listener].needs_anti_entropy = true;
            repl.ae[listener].on_disconnect();
            repl.round_tokens[listener] = None;
            repl.round_waits[listener] = None;
        }
    }

    /// Where each node's links stand, for the trace of a failure.
    pub(super) fn log_link_states(&mut self) {
        let mut lines = Vec::new();
        for (i, n) in self.nodes.iter().enumerate() {
            if let Some(r) = n.repl.as_ref() {
                let queues: Vec<String> = r
                    .queues
                    .iter()
                    .map(|q| {
                        format!(
                            "pending {} acked {} ae {} catching up {}",
                            q.pending_batches(),
                            q.acked(),
                            q.needs_anti_entropy,
                            q.catching_up()
                        )
                    })
                    .collect();
                let stored = n.storage.streamer.as_ref().map(|s| s.durable_hlc());
                lines.push(format!(
                    "n{i}: held {} queues {queues:?} frozen {} stored {stored:?}",
                    r.held.len(),
                    r.stability.frozen_origins()
                ));
            }
        }
        lines.into_iter().for_each(|l| self.log(l));
    }
}
