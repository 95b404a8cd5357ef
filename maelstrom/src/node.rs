//! A Meridian node as a Maelstrom node: a deterministic state machine from messages
//! and ticks to messages.
//!
//! Owns the node's real shards ([`Shard`]) and one [`PeerLink`] per other node, and
//! drives them as the server's shard threads and replicator do (DESIGN §6): client
//! requests become commands on the shards (`workload`); every tick drains the shards'
//! outboxes into one batch per window (the real [`wire`] encoding), queues it for every
//! peer, and starts the anti-entropy rounds that are due; peer frames are merged into
//! the shards and answered. `dst/src/sim/replicate.rs` is the model this follows.
//!
//! Never reads a clock, a socket or stdin: the binary hands in lines and `now_ms`, and
//! writes out what comes back. Left out, because Maelstrom's workloads never remove
//! anything and nodes never restart: persistence, stamp reservation, and tombstone
//! collection (each batch's stability report is empty).

use meridian::crdt::{Hlc, VersionVector};
use meridian::delta::Delta;
use meridian::delta::outgoing::Outgoing;
use meridian::engine::kv::merkle::MerkleLeaves;
use meridian::replication::anti_entropy::answer_groups;
use meridian::replication::wire::{self, Message};
use meridian::shard::{Shard, ShardConfig, ShardOp, ShardReply};
use serde_json::{Map, Value, json};

use crate::link::{Outbound, PeerLink};
use crate::message::{self, Envelope, PEER_FRAME_TYPE, body, code, error_body};
use crate::workload::{self, Workload};

/// A node may not be told of more nodes than this (node ids are u16, and each peer
/// costs a queue).
pub const NODES_MAX: usize = 64;
/// The longest replication frame accepted from a peer.
pub const FRAME_BYTES_MAX: usize = 32 << 20;
/// Each shard's outbox bound; past it writes are dropped from the batch and the peers
/// repaired by anti-entropy.
const OUTBOX_BYTES_MAX: usize = 4 << 20;

/// What the node was told at `init`, and what it built from it.
struct Cluster {
    /// Node names in `init`'s order; node id = index + 1.
    names: Vec<String>,
    own: usize,
    shards: Vec<Shard>,
    /// One per node; `None` at this node's own index.
    links: Vec<Option<PeerLink>>,
    /// The replication batch sequence.
    seq: u64,
    /// The outboxes dropped deltas since the last batch.
    gap: bool,
    /// The highest shard clock at the last drain (see `ShardOp::DrainOutbox`).
    clock_floor: Hlc,
}

pub struct Node {
    workload: Workload,
    shard_count: usize,
    cluster: Option<Cluster>,
    next_msg_id: u64,
    /// Peer frames that failed to decode or came from an unknown node (stderr).
    pub bad_frames: u64,
}

impl Node {
    pub fn new(workload: Workload, shard_count: usize) -> Node {
        assert!((1..=64).contains(&shard_count), "1..=64 shards, not {shard_count}");
        Node { workload, shard_count, cluster: None, next_msg_id: 1, bad_frames: 0 }
    }

    /// Handle one message; the messages to send.
    pub fn handle(&mut self, message: Envelope, now_ms: u64) -> Vec<Envelope> {
        let kind = message.kind().to_string();
        if kind == "init" {
            let reply = self.init(&message);
            return vec![self.reply_to(&message, reply)];
        }
        if kind == PEER_FRAME_TYPE {
            return self.on_peer_frame(&message, now_ms);
        }
        let Some(cluster) = self.cluster.as_mut() else {
            let reply = error_body(code::TEMPORARILY_UNAVAILABLE, "not initialised yet");
            return vec![self.reply_to(&message, reply)];
        };
        let reply = workload::serve(self.workload, &mut cluster.shards, &message.body, now_ms);
        vec![self.reply_to(&message, reply)]
    }

    fn init(&mut self, message: &Envelope) -> Map<String, Value> {
        let own_name = message.body.get("node_id").and_then(Value::as_str);
        let names: Option<Vec<String>> = message
            .body
            .get("node_ids")
            .and_then(Value::as_array)
            .map(|ids| ids.iter().filter_map(|v| v.as_str().map(String::from)).collect());
        let (Some(own_name), Some(names)) = (own_name, names) else {
            return error_body(code::MALFORMED_REQUEST, "init needs node_id and node_ids");
        };
        let Some(own) = names.iter().position(|n| n == own_name) else {
            return error_body(code::MALFORMED_REQUEST, "node_id is not among node_ids");
        };
        if names.len() > NODES_MAX {
            return error_body(code::MALFORMED_REQUEST, format!("more than {NODES_MAX} nodes"));
        }
        let node_id = own as u16 + 1;
        let shards = (0..self.shard_count)
            .map(|s| {
                let mut config = ShardConfig::new(s, node_id);
                config.shard_count = self.shard_count;
                config.rng_seed = ((node_id as u64) << 32) ^ s as u64;
                config.replicate = names.len() > 1;
                config.outbox_bytes_max = OUTBOX_BYTES_MAX;
                Shard::new(config)
            })
            .collect();
        let links = (0..names.len()).map(|i| (i != own).then(PeerLink::new)).collect();
        self.cluster = Some(Cluster { names, own, shards, links, seq: 0, gap: false, clock_floor: Hlc::ZERO });
        body("init_ok", json!({}))
    }

    fn reply_to(&mut self, request: &Envelope, mut reply: Map<String, Value>) -> Envelope {
        if let Some(id) = request.msg_id() {
            reply.insert("in_reply_to".into(), json!(id));
        }
        reply.insert("msg_id".into(), json!(self.next_msg_id));
        self.next_msg_id += 1;
        Envelope { src: request.dest.clone(), dest: request.src.clone(), body: reply }
    }

    /// The batch window: drain every outbox into one batch for every peer, send what
    /// the links have to send, and start the anti-entropy rounds that are due.
    pub fn tick(&mut self, now_ms: u64) -> Vec<Envelope> {
        let Some(cluster) = self.cluster.as_mut() else { return Vec::new() };
        cluster.shards.iter_mut().for_each(|s| {
            s.tick(now_ms);
        });
        if cluster.names.len() == 1 {
            return Vec::new();
        }
        let mut deltas = Outgoing::default();
        let mut stable = Hlc(u64::MAX);
        let mut overflowed = false;
        let floor = cluster.clock_floor;
        for shard in &mut cluster.shards {
            if let ShardReply::Outbox { batch, stable: s, .. } = shard.apply(ShardOp::DrainOutbox { floor }, now_ms) {
                cluster.clock_floor = cluster.clock_floor.max(s);
                deltas.append(batch.deltas);
                overflowed |= batch.overflowed;
                stable = stable.min(s);
            }
        }
        cluster.gap |= overflowed;
        if !deltas.is_empty() {
            cluster.seq += 1;
            let count = deltas.len();
            let seen = VersionVector::new();
            let head = wire::BatchHead { seq: cluster.seq, session: 1, gap: std::mem::take(&mut cluster.gap), stable, seen: &seen };
            let frame = wire::encode_batch(&head, count, &deltas.into_bytes());
            for link in cluster.links.iter_mut().flatten() {
                link.push_batch(cluster.seq, frame.clone(), count, now_ms);
            }
        }
        let mut out = Vec::new();
        for peer in 0..cluster.names.len() {
            let Some(link) = cluster.links[peer].as_mut() else { continue };
            if overflowed {
                link.mark_gap();
            }
            let mut frames = link.batches_to_send(now_ms);
            if link.round_due(now_ms) {
                let leaves = node_leaves(&mut cluster.shards);
                let link = cluster.links[peer].as_mut().expect("a peer's link");
                frames.push(link.start_round(now_ms, leaves));
            }
            out.extend(frames.into_iter().map(|o| peer_envelope(cluster, peer, o)));
        }
        out
    }

    /// A replication frame from a peer: merged and answered as `shell::peer_link`
    /// does. Which side of the link a frame is for follows from its kind.
    fn on_peer_frame(&mut self, message: &Envelope, now_ms: u64) -> Vec<Envelope> {
        let Some(cluster) = self.cluster.as_mut() else { return Vec::new() };
        let Some(peer) = cluster.names.iter().position(|n| *n == message.src).filter(|&p| p != cluster.own) else {
            self.bad_frames += 1;
            return Vec::new();
        };
        let decoded = message::parse_peer_frame(&message.body).and_then(|(bytes, epoch, place)| {
            wire::decode_one(&bytes, FRAME_BYTES_MAX).map(|m| (m, epoch, place)).map_err(|e| e.to_string())
        });
        let Ok((frame, epoch, place)) = decoded else {
            self.bad_frames += 1;
            return Vec::new();
        };
        let answer =
            |cluster: &Cluster, frame: &Message| peer_envelope(cluster, peer, Outbound { frame: wire::encode(frame), epoch, place: 0 });
        match frame {
            Message::Batch { seq, deltas, .. } => {
                if place == 0 {
                    self.bad_frames += 1;
                    return Vec::new();
                }
                let ready = cluster.links[peer].as_mut().expect("a peer's link").accept_batch(epoch, place, (seq, deltas));
                let mut acks = Vec::new();
                for (seq, deltas) in ready {
                    merge(&mut cluster.shards, deltas, now_ms);
                    acks.push(seq);
                }
                // Acknowledgements are cumulative: the last one says it all.
                acks.last().map(|&seq| answer(cluster, &Message::Ack { seq })).into_iter().collect()
            }
            Message::Ack { seq } => {
                cluster.links[peer].as_mut().expect("a peer's link").on_ack(seq, now_ms);
                Vec::new()
            }
            Message::AeGroups { round, groups } => {
                let mine = node_leaves(&mut cluster.shards);
                vec![answer(cluster, &answer_groups(round, &mine, &groups))]
            }
            Message::AeLeaves { round, leaves } => {
                let link = cluster.links[peer].as_mut().expect("a peer's link");
                match link.on_leaves(epoch, round, &leaves) {
                    Some(differing) if !differing.is_empty() => {
                        let deltas = export(&mut cluster.shards, &differing, now_ms);
                        vec![answer(cluster, &Message::AeStates { round, reply_wanted: true, leaves: differing, deltas })]
                    }
                    _ => Vec::new(),
                }
            }
            Message::AeStates { round, reply_wanted, leaves, deltas } => {
                merge(&mut cluster.shards, deltas, now_ms);
                if !reply_wanted {
                    return Vec::new();
                }
                let mine = export(&mut cluster.shards, &leaves, now_ms);
                vec![answer(cluster, &Message::AeStates { round, reply_wanted: false, leaves, deltas: mine })]
            }
            _ => {
                self.bad_frames += 1;
                Vec::new()
            }
        }
    }

    /// One line per peer link for stderr: what the links did.
    pub fn link_summary(&self) -> Vec<String> {
        let Some(cluster) = self.cluster.as_ref() else { return Vec::new() };
        let mut lines = Vec::new();
        for (peer, link) in cluster.links.iter().enumerate() {
            if let Some(link) = link {
                lines.push(format!(
                    "{} link with {}: {:?}, {} batches pending",
                    cluster.names[cluster.own],
                    cluster.names[peer],
                    link.stats,
                    link.pending_batches()
                ));
            }
        }
        lines
    }
}

fn peer_envelope(cluster: &Cluster, peer: usize, out: Outbound) -> Envelope {
    Envelope {
        src: cluster.names[cluster.own].clone(),
        dest: cluster.names[peer].clone(),
        body: message::peer_frame_body(&out.frame, out.epoch, out.place),
    }
}

/// The node's leaves: its shards' leaves combined.
fn node_leaves(shards: &mut [Shard]) -> MerkleLeaves {
    let mut leaves = MerkleLeaves::new();
    for shard in shards {
        if let Some(l) = shard.kv.keys.merkle() {
            leaves.combine(l);
        }
    }
    leaves
}

/// Every key state of these leaves, from every shard.
fn export(shards: &mut [Shard], leaves: &[u16], now_ms: u64) -> Vec<Delta> {
    let mut deltas = Vec::new();
    for shard in shards {
        if let ShardReply::Deltas(d) = shard.apply(ShardOp::ExportLeaves(leaves.to_vec()), now_ms) {
            deltas.extend(d);
        }
    }
    deltas
}

/// Merge a peer's deltas into the shards that own them. Without persistence a shard
/// never refuses a merge (its delta log does not record).
fn merge(shards: &mut [Shard], deltas: Vec<Delta>, now_ms: u64) {
    let parts = meridian::shard::split_by_shard(deltas, shards.len());
    for (shard, part) in shards.iter_mut().zip(parts) {
        if part.is_empty() {
            continue;
        }
        let reply = shard.apply(ShardOp::MergeRemote(part), now_ms);
        assert!(matches!(reply, ShardReply::Count(_)), "a shard without persistence takes every merge: {reply:?}");
    }
}

#[cfg(test)]
#[path = "node_tests.rs"]
mod tests;
