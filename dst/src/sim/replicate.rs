//! Replication under simulation: every node's outbox drained into batches, the real
//! wire encoding, per-peer queues with acknowledgements and resends, Merkle
//! anti-entropy rounds, links reset by crashes; and, at the end, the replication
//! invariants: identical replicas (tombstones included), equal Merkle trees, and the
//! converged values the oracle computes.
//!
//! The link protocol here mirrors `shell::peer_link` message for message; the pieces
//! that decide (outbox, queues, Merkle diff, codec, merges) are the real ones. Faults:
//! partitions (frames held, as TCP holds them), link resets (frames lost, resent),
//! pauses, clock jumps and drift, slow links, and crashes of a node whose writes are all
//! stored (losing a tail of unstored writes is not covered yet: see docs/testing.md).

use std::collections::BTreeMap;

use bytes::Bytes;
use meridian::crdt::{Dot, VersionVector};
use meridian::engine::kv::{KeyState, key_hash};
use meridian::replication::anti_entropy::{AntiEntropy, answer_groups};
use meridian::replication::merkle::MerkleLeaves;
use meridian::replication::peer::PeerQueue;
use meridian::replication::wire::{self, Message};
use meridian::shard::routing::shard_for_key;
use meridian::shard::{Delta, ShardOp, ShardReply};

use super::{Event, Node, Sim};
use crate::oracle::{Op, OpKind, Ttl};

/// Batch window, as `--repl-batch-ms`.
pub const REPL_TICK_MS: u64 = 10;
/// Anti-entropy period per link.
const AE_INTERVAL_MS: u64 = 500;
/// A round whose answer was lost with its connection is abandoned after this long.
const AE_ROUND_TIMEOUT_MS: u64 = 3_000;
/// Per-peer queue bound: small, so that overflow and anti-entropy catch-up happen.
const PEER_QUEUE_BYTES: usize = 16 * 1024;
/// Quiet time after the workload for every link to drain and every tree to compare.
pub const QUIESCE_MS: u64 = 5_000;

/// A node's replication state: one queue and one anti-entropy state per peer.
pub struct ReplNode {
    queues: Vec<PeerQueue>,
    seq: u64,
    ae: Vec<AntiEntropy>,
}

impl ReplNode {
    pub fn new(nodes: usize) -> ReplNode {
        ReplNode {
            queues: (0..nodes).map(|_| PeerQueue::new(PEER_QUEUE_BYTES)).collect(),
            seq: 0,
            ae: (0..nodes).map(|_| AntiEntropy::new(AE_INTERVAL_MS, AE_ROUND_TIMEOUT_MS)).collect(),
        }
    }
}

fn state_of(node: &Node, key: &[u8]) -> Option<KeyState> {
    let shard = &node.shards[shard_for_key(key, node.shards.len())];
    shard.kv.keys.get(key, key_hash(key)).map(|e| e.state.clone()).or_else(|| shard.kv.keys.tombstone(key).cloned())
}

fn context_of(node: &Node, key: &[u8]) -> VersionVector {
    state_of(node, key).map(|s| s.causal_context()).unwrap_or_default()
}

impl Sim {
    fn leaves(&mut self, node: usize, now: u64) -> MerkleLeaves {
        let mut leaves = MerkleLeaves::new();
        for shard in &mut self.nodes[node].shards {
            if let ShardReply::Merkle(l) = shard.apply(ShardOp::MerkleLeaves, now) {
                leaves.combine(&l);
            }
        }
        leaves
    }

    fn export(&mut self, node: usize, leaves: &[u16], now: u64) -> Vec<Delta> {
        let mut deltas = Vec::new();
        for shard in &mut self.nodes[node].shards {
            if let ShardReply::Deltas(d) = shard.apply(ShardOp::ExportLeaves(leaves.to_vec()), now) {
                deltas.extend(d);
            }
        }
        deltas
    }

    /// Merge a peer's deltas; false when a shard refused (its persistence is behind).
    fn merge(&mut self, node: usize, deltas: Vec<Delta>, now: u64) -> bool {
        let shards = self.nodes[node].shards.len();
        let mut parts: Vec<Vec<Delta>> = vec![Vec::new(); shards];
        for delta in deltas {
            match &delta {
                Delta::Key { key, .. } => parts[shard_for_key(key, shards)].push(delta),
                Delta::Flush { .. } => parts.iter_mut().for_each(|p| p.push(delta.clone())),
            }
        }
        let mut all = true;
        for (shard, part) in parts.into_iter().enumerate() {
            if !part.is_empty() && !matches!(self.nodes[node].shards[shard].apply(ShardOp::MergeRemote(part), now), ShardReply::Count(_)) {
                all = false;
            }
        }
        all
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
        let mut deltas = Vec::new();
        let mut stable = meridian::crdt::Hlc(u64::MAX);
        let mut overflowed = false;
        for shard in &mut n.shards {
            if let ShardReply::Outbox { batch, stable: s } = shard.apply(ShardOp::DrainOutbox, local) {
                deltas.extend(batch.deltas);
                overflowed |= batch.overflowed;
                stable = stable.min(s);
            }
        }
        // Only local writes are sent: every state carries a write of this node.
        if let Some(echo) =
            deltas.iter().find(|d| matches!(d, Delta::Key { state, .. } if state.causal_context().get(own) == meridian::crdt::Hlc::ZERO))
        {
            let reason = format!("n{node} sends a delta it did not write (echo): {echo:?}");
            self.fail(reason);
            return;
        }
        let peers = self.nodes.len();
        let repl = self.nodes[node].repl.as_mut().expect("replication runs");
        if !deltas.is_empty() {
            repl.seq += 1;
            let count = deltas.len();
            let frame = wire::encode(&Message::Batch { seq: repl.seq, stable, deltas });
            for (peer, queue) in repl.queues.iter_mut().enumerate() {
                if peer != node {
                    queue.push(repl.seq, frame.clone(), count, now);
                }
            }
        }
        for peer in (0..peers).filter(|&p| p != node) {
            let repl = self.nodes[node].repl.as_mut().expect("replication runs");
            if overflowed {
                repl.queues[peer].needs_anti_entropy = true;
            }
            let mut frames = Vec::new();
            while let Some(frame) = repl.queues[peer].next_to_send() {
                frames.push(frame);
            }
            let start_round = repl.ae[peer].due(now, repl.queues[peer].needs_anti_entropy);
            for frame in frames {
                self.link_send_frame(node, peer, false, frame);
            }
            if start_round {
                let leaves = self.leaves(node, local);
                let repl = self.nodes[node].repl.as_mut().expect("replication runs");
                repl.queues[peer].needs_anti_entropy = false;
                let groups = repl.ae[peer].start(now, leaves);
                self.link_send(node, peer, false, &groups);
            }
        }
    }

    /// A frame arrives on the link `dialer -> listener`, at the dialer if `to_dialer`.
    pub(super) fn deliver(&mut self, dialer: usize, listener: usize, epoch: u32, to_dialer: bool, frame: Bytes) {
        if epoch != self.link_epochs[dialer][listener] {
            return; // the connection it was written on is gone
        }
        let at = if to_dialer { dialer } else { listener };
        let n = &self.nodes[at];
        if !n.up {
            return;
        }
        if n.paused_until > self.now {
            let when = n.paused_until;
            self.schedule(when, Event::Deliver { dialer, listener, epoch, to_dialer, frame });
            return;
        }
        let local = n.local_ms(self.now);
        let message = match wire::decode_one(&frame, 64 << 20) {
            Ok(message) => message,
            Err(e) => {
                self.fail(format!("n{at} cannot decode a frame from its peer: {e}"));
                return;
            }
        };
        match message {
            Message::Batch { seq, deltas, .. } if !to_dialer => {
                if self.merge(listener, deltas, local) {
                    self.link_send(dialer, listener, true, &Message::Ack { seq });
                } else {
                    // Persistence behind: the listener takes it again a little later.
                    self.schedule(self.now + 50, Event::Deliver { dialer, listener, epoch, to_dialer, frame });
                }
            }
            Message::Ack { seq } if to_dialer => {
                if let Some(repl) = self.nodes[dialer].repl.as_mut() {
                    repl.queues[listener].on_ack(seq);
                }
            }
            Message::AeGroups { round, groups } if !to_dialer => {
                let mine = self.leaves(listener, local);
                self.link_send(dialer, listener, true, &answer_groups(round, &mine, &groups));
            }
            Message::AeLeaves { round, leaves } if to_dialer => {
                let Some(repl) = self.nodes[dialer].repl.as_mut() else { return };
                // A stray answer (its round abandoned) closes the connection, as it does
                // in the server; the next round starts on the new one.
                let differing = match repl.ae[listener].on_leaves(round, &leaves) {
                    Ok(differing) => differing,
                    Err(_) => {
                        self.reset_link(dialer, listener);
                        return;
                    }
                };
                if !differing.is_empty() {
                    let deltas = self.export(dialer, &differing, local);
                    self.link_send(dialer, listener, false, &Message::AeStates { round, reply_wanted: true, leaves: differing, deltas });
                }
            }
            Message::AeStates { round, reply_wanted, leaves, deltas } => {
                if !self.merge(at, deltas, local) {
                    return; // repaired by a later round
                }
                if reply_wanted && !to_dialer {
                    let mine = self.export(listener, &leaves, local);
                    self.link_send(dialer, listener, true, &Message::AeStates { round, reply_wanted: false, leaves, deltas: mine });
                }
            }
            other => self.fail(format!("n{at} got an unexpected {} message", other.name())),
        }
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
        self.nodes[node].repl = Some(ReplNode::new(nodes));
    }

    /// The connection of link `dialer -> listener` drops: frames in flight are lost,
    /// the dialer resends what is unacknowledged and compares trees on reconnect.
    pub(super) fn reset_link(&mut self, dialer: usize, listener: usize) {
        self.link_epochs[dialer][listener] += 1;
        if let Some(repl) = self.nodes[dialer].repl.as_mut() {
            repl.queues[listener].on_disconnect();
            repl.queues[listener].needs_anti_entropy = true;
            repl.ae[listener].on_disconnect();
        }
    }

    /// The keys a replication-workload command writes, with their contexts before it.
    pub(super) fn contexts_before(&self, node: usize, args: &[Bytes]) -> Vec<(Bytes, VersionVector)> {
        let n = &self.nodes[node];
        written_keys(args).into_iter().map(|k| (k.clone(), context_of(n, &k))).collect()
    }

    /// Record in the oracle every write the command made: a key whose context gained a
    /// new dot of this node was written.
    pub(super) fn record_writes(&mut self, node: usize, args: &[Bytes], before: Vec<(Bytes, VersionVector)>, local_ms: u64) {
        let n = &self.nodes[node];
        let own = n.id;
        let name = args[0].to_ascii_uppercase();
        for (key, ctx_before) in before {
            let ctx_after = context_of(n, &key);
            if ctx_after.get(own) <= ctx_before.get(own) {
                continue;
            }
            let dot = Dot::new(ctx_after.get(own), own);
            let kind = match name.as_slice() {
                b"SET" => {
                    let ttl = match args.iter().position(|a| a.eq_ignore_ascii_case(b"EX")) {
                        Some(i) => Ttl::At(local_ms + 1000 * parse_u64(&args[i + 1])),
                        None if args.iter().any(|a| a.eq_ignore_ascii_case(b"KEEPTTL")) => Ttl::Keep,
                        None => Ttl::Clear,
                    };
                    OpKind::Set { value: args[2].clone(), ttl }
                }
                b"MSET" => {
                    // The last value given for the key wins within one MSET.
                    let value = args[1..].chunks(2).rev().find(|p| p[0] == key).map(|p| p[1].clone()).unwrap_or_default();
                    OpKind::Set { value, ttl: Ttl::Clear }
                }
                b"INCR" => OpKind::Incr(1),
                b"INCRBY" => OpKind::Incr(parse_i64(&args[2])),
                b"DECRBY" => OpKind::Incr(-parse_i64(&args[2])),
                b"DEL" => OpKind::Del,
                b"EXPIRE" => match parse_i64(&args[2]) {
                    s if s <= 0 => OpKind::Del,
                    s => OpKind::Expire(local_ms + 1000 * s as u64),
                },
                b"PERSIST" => OpKind::Persist,
                other => {
                    let reason = format!("n{node}: {} wrote {key:?}, which the oracle does not model", String::from_utf8_lossy(other));
                    self.fail(reason);
                    return;
                }
            };
            self.oracle.record(key, Op { dot, kind, observed: ctx_before });
        }
    }

    /// After quiescence: every replica identical (live keys and tombstones), equal
    /// Merkle trees, and every live key equal to the oracle's converged value.
    pub(super) fn check_replicas(&mut self) {
        let states: Vec<BTreeMap<Bytes, KeyState>> = self.nodes.iter().map(full_state).collect();
        for node in 1..self.nodes.len() {
            if states[node] != states[0] {
                let diff: Vec<_> = states[0]
                    .keys()
                    .chain(states[node].keys())
                    .filter(|k| states[0].get(*k) != states[node].get(*k))
                    .map(|k| format!("{k:?}: n0 {:?} / n{node} {:?}", states[0].get(k), states[node].get(k)))
                    .collect();
                self.fail(format!("replicas differ after quiescence:\n  {}", diff.join("\n  ")));
                return;
            }
        }
        let now = self.now;
        let roots: Vec<u64> = (0..self.nodes.len()).map(|n| self.leaves(n, now).root()).collect();
        if roots.windows(2).any(|w| w[0] != w[1]) {
            self.fail(format!("Merkle roots differ with identical states: {roots:x?}"));
            return;
        }
        if let Err(reason) = self.oracle.check_none_lost(|key| states[0].get(key).map(|s| s.causal_context()).unwrap_or_default()) {
            self.fail(reason);
            return;
        }
        let expected = self.oracle.expected();
        let actual: BTreeMap<Bytes, (Vec<u8>, Option<u64>)> =
            states[0].iter().filter_map(|(k, s)| s.read().map(|v| (k.clone(), (v.to_bytes().to_vec(), s.expire_at_ms())))).collect();
        let wanted: BTreeMap<Bytes, (Vec<u8>, Option<u64>)> = expected.into_iter().map(|(k, e)| (k, (e.value, e.expire_at_ms))).collect();
        if actual != wanted {
            let diff: Vec<_> = actual
                .keys()
                .chain(wanted.keys())
                .filter(|k| actual.get(*k) != wanted.get(*k))
                .map(|k| {
                    format!(
                        "{k:?}: replicas {:?} / oracle {:?} (writes: {:?})",
                        actual.get(k).map(|(v, t)| (String::from_utf8_lossy(v).into_owned(), t)),
                        wanted.get(k).map(|(v, t)| (String::from_utf8_lossy(v).into_owned(), t)),
                        self.oracle.ops.get(k)
                    )
                })
                .collect();
            self.fail(format!("converged values differ from the oracle:\n  {}", diff.join("\n  ")));
            return;
        }
        self.log(format!("checked {} identical replicas, root {:016x}, {} keys", self.nodes.len(), roots[0], actual.len()));
    }
}

/// Every key state of a node, live and tombstone.
fn full_state(node: &Node) -> BTreeMap<Bytes, KeyState> {
    let mut all = BTreeMap::new();
    for shard in &node.shards {
        for entry in shard.kv.keys.iter() {
            all.insert(entry.key.clone(), entry.state.clone());
        }
        for (key, state) in shard.kv.keys.tombstones() {
            all.insert(key.clone(), state.clone());
        }
    }
    all
}

fn written_keys(args: &[Bytes]) -> Vec<Bytes> {
    let name = args[0].to_ascii_uppercase();
    match name.as_slice() {
        b"MSET" => {
            let mut keys: Vec<Bytes> = args[1..].chunks(2).map(|p| p[0].clone()).collect();
            keys.sort();
            keys.dedup();
            keys
        }
        b"SET" | b"INCR" | b"INCRBY" | b"DECRBY" | b"DEL" | b"EXPIRE" | b"PERSIST" => args.get(1).cloned().into_iter().collect(),
        _ => Vec::new(),
    }
}

fn parse_i64(b: &[u8]) -> i64 {
    std::str::from_utf8(b).ok().and_then(|s| s.parse().ok()).unwrap_or(0)
}

fn parse_u64(b: &[u8]) -> u64 {
    std::str::from_utf8(b).ok().and_then(|s| s.parse().ok()).unwrap_or(0)
}
