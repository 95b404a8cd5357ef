//! The event loop: simulated time, nodes built from real shards, clients, network and
//! faults, all driven by one seeded RNG so that a seed replays a run exactly.

use std::collections::{BTreeMap, VecDeque};
use std::panic::AssertUnwindSafe;

use bytes::Bytes;
use meridian::crdt::NodeId;
use meridian::shard::{Shard, ShardConfig};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

mod collection_writes;
mod config;
mod dumps;
mod execute;
mod finish;
mod graph_writes;
mod indexes;
mod inject;
mod link_stall;
mod notifications;
mod persist;
mod replica_checks;
mod replicate;
mod replicate_shards;
mod report;
mod stream_writes;
mod writes;

use crate::model::Model;
use crate::oracle::Oracle;
use crate::storage::{self, NodeStorage};
use crate::workload;
pub use config::{Outcome, SEEDED_HORIZON_MS, SimConfig};
use meridian::persistence::recovery::Recovered;
use meridian::persistence::streamer::Streamer;
use replicate::{QUIESCE_MS, REPL_TICK_MS, ReplNode};

/// Simulated wall-clock time starts here (a realistic Unix time in ms).
const EPOCH_MS: u64 = 1_700_000_000_000;
/// Active-expiry period of a node, as in the server.
const TICK_MS: u64 = 100;
/// How often a node's persistence driver runs.
const PERSIST_TICK_MS: u64 = 10;
/// A shard's outbox asks for an early drain past this (`--repl-batch-ms` windows end
/// early under load); small, so that simulated workloads hit it.
const OUTBOX_EAGER_BYTES: usize = 1024;
/// Trace lines kept for the failure report.
const TRACE_TAIL_LINES: usize = 60;
/// Fault events kept for the failure report (a run draws one every 250 ms of its
/// workload: a few hundred at most).
const FAULT_LOG_MAX: usize = 4_096;
/// Hard bound on events per run: a run that needs more has a liveness bug.
const EVENTS_MAX: u64 = 5_000_000;

struct Node {
    id: NodeId,
    region: usize,
    shards: Vec<Shard>,
    model: Model,
    up: bool,
    /// Bumped on every crash: messages for an older incarnation are connection resets.
    incarnation: u32,
    paused_until: u64,
    clock_offset_ms: i64,
    drift_ppm: i64,
    drift_anchor_ms: u64,
    storage: NodeStorage,
    repl: Option<ReplNode>,
    /// Keyspace notifications a command across shards gathered in argument order, for
    /// the oracle (`notifications`).
    raised: Vec<meridian::notify::KeyEvent>,
}

impl Node {
    fn local_ms(&self, sim_ms: u64) -> u64 {
        let drift = self.drift_ppm * (sim_ms - self.drift_anchor_ms) as i64 / 1_000_000;
        (EPOCH_MS as i64 + sim_ms as i64 + self.clock_offset_ms + drift).max(0) as u64
    }

    fn set_drift(&mut self, sim_ms: u64, ppm: i64) {
        self.clock_offset_ms += self.drift_ppm * (sim_ms - self.drift_anchor_ms) as i64 / 1_000_000;
        self.drift_anchor_ms = sim_ms;
        self.drift_ppm = ppm;
    }
}

fn fresh_shards(seed: u64, node: NodeId, shards: usize, replicate: bool) -> Vec<Shard> {
    (0..shards)
        .map(|s| {
            let mut config = ShardConfig::new(s, node);
            config.shard_count = shards;
            config.rng_seed = seed ^ ((node as u64) << 32) ^ s as u64;
            config.record_deltas = true;
            config.replicate = replicate;
            config.outbox_bytes_max = 64 * 1024;
            config.outbox_eager_bytes = OUTBOX_EAGER_BYTES;
            Shard::new(config)
        })
        .collect()
}

struct Client {
    region: usize,
    in_flight: bool,
}

/// A one-way cut between two regions.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Cut {
    from: usize,
    to: usize,
}

enum Event {
    Issue {
        client: usize,
    },
    Request {
        client: usize,
        node: usize,
        incarnation: u32,
        args: Vec<Bytes>,
    },
    Reply {
        client: usize,
        node: usize,
    },
    Tick {
        node: usize,
    },
    Fault,
    Restart {
        node: usize,
    },
    Heal {
        partition: u64,
    },
    /// The node's persistence driver runs: drain deltas, start a store operation.
    Persist {
        node: usize,
    },
    /// The store operation in flight for this node completes.
    StoreDone {
        node: usize,
        incarnation: u32,
    },
    /// The node's replication batch window closes.
    ReplTick {
        node: usize,
    },
    /// A shard's outbox filled to its eager size: the node's window closes early.
    OutboxReady {
        node: usize,
    },
    /// A frame arrives on the peer link `dialer -> listener` (at the dialer if
    /// `to_dialer`), written in link epoch `epoch`.
    Deliver {
        dialer: usize,
        listener: usize,
        epoch: u32,
        to_dialer: bool,
        frame: Bytes,
    },
    /// Frames of a link end wait behind a refused one: offer them again.
    RetryStalled {
        dialer: usize,
        listener: usize,
        to_dialer: bool,
    },
}

struct Sim {
    cfg: SimConfig,
    rng: ChaCha8Rng,
    now: u64,
    seq: u64,
    queue: BTreeMap<(u64, u64), Event>,
    nodes: Vec<Node>,
    clients: Vec<Client>,
    partitions: BTreeMap<u64, Vec<Cut>>,
    /// Messages waiting for a partition to heal (TCP holds them; it does not drop them).
    held: Vec<(Cut, Event)>,
    slow_until: u64,
    ops_issued: usize,
    ops_done: usize,
    events: u64,
    trace_hash: u64,
    trace: VecDeque<String>,
    failure: Option<String>,
    /// Replication runs: every accepted write, for the converged-value check.
    oracle: Oracle,
    /// Bumped when a link's connection dies: frames of older epochs are lost.
    link_epochs: Vec<Vec<u32>>,
    /// When the last frame sent each way on each link, `(dialer, listener, to_dialer)`,
    /// arrives, so that no frame overtakes an earlier one, as on the TCP connection a
    /// link is. With frames overtaking one another, an acknowledgement (cumulative)
    /// could arrive before a batch it covers, and a reset then lost that batch for
    /// good, which only a round repaired; and an anti-entropy answer held up behind a
    /// partition could arrive after frames sent later (docs/testing.md, "Links in
    /// order"). A connection that dies loses its frames (`link_epochs`).
    link_arrivals: BTreeMap<(usize, usize, bool), u64>,
    /// Per link end, frames waiting behind one whose merge was refused (`link_stall`).
    link_stalls: BTreeMap<link_stall::LinkEnd, link_stall::Stalled>,
    /// Replication runs: the workload is done and links drain until this instant.
    quiesce_until: Option<u64>,
    /// Every fault, heal and restart, with its simulated instant: a failing key's report
    /// names the ones around its writes.
    fault_log: Vec<(u64, String)>,
    /// Graph runs: the names the graph workload handed out, and what its writes did.
    graph_names: crate::graph::GraphNames,
    graph_oracle: crate::graph::GraphOracle,
    /// Streams runs: the ids the stream workload was answered, and what its writes did.
    stream_names: crate::streams::StreamNames,
    stream_oracle: crate::streams::StreamOracle,
    /// `--dumps` runs: the last payloads DUMP answered, for RESTOREs to restore.
    dumped: dumps::Dumped,
}

/// FNV-1a, so the trace hash is the same on every platform and run.
fn fnv1a(hash: u64, bytes: &[u8]) -> u64 {
    bytes.iter().fold(hash, |h, &b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3))
}

fn show_args(args: &[Bytes]) -> String {
    args.iter().map(|a| String::from_utf8_lossy(a).into_owned()).collect::<Vec<_>>().join(" ")
}

impl Sim {
    fn new(cfg: SimConfig) -> Sim {
        assert!(cfg.nodes > 0 && cfg.shards > 0 && cfg.clients > 0);
        let nodes = (0..cfg.nodes)
            .map(|i| Node {
                id: i as NodeId + 1,
                region: i,
                shards: fresh_shards(cfg.seed, i as NodeId + 1, cfg.shards, cfg.replicate),
                model: Model::default(),
                up: true,
                incarnation: 0,
                paused_until: 0,
                clock_offset_ms: 0,
                drift_ppm: 0,
                drift_anchor_ms: 0,
                storage: NodeStorage {
                    streamer: Some(Streamer::new(
                        storage::streamer_config(i as NodeId + 1),
                        &Recovered { next_segment: 1, ..Recovered::default() },
                    )),
                    ..NodeStorage::default()
                },
                repl: cfg.replicate.then(|| ReplNode::new(&cfg, i, i as u64, EPOCH_MS)),
                raised: Vec::new(),
            })
            .collect();
        let clients = (0..cfg.clients).map(|i| Client { region: i % cfg.nodes, in_flight: false }).collect();
        Sim {
            rng: ChaCha8Rng::seed_from_u64(cfg.seed),
            now: 0,
            seq: 0,
            queue: BTreeMap::new(),
            nodes,
            clients,
            partitions: BTreeMap::new(),
            held: Vec::new(),
            slow_until: 0,
            ops_issued: 0,
            ops_done: 0,
            events: 0,
            trace_hash: 0xcbf2_9ce4_8422_2325,
            trace: VecDeque::new(),
            failure: None,
            oracle: Oracle::default(),
            link_epochs: vec![vec![0; cfg.nodes]; cfg.nodes],
            link_arrivals: BTreeMap::new(),
            link_stalls: BTreeMap::new(),
            quiesce_until: None,
            fault_log: Vec::new(),
            graph_names: Default::default(),
            graph_oracle: Default::default(),
            stream_names: Default::default(),
            stream_oracle: Default::default(),
            dumped: Default::default(),
            cfg,
        }
    }

    fn log(&mut self, line: String) {
        let line = format!("{:>7} {line}", self.now);
        self.trace_hash = fnv1a(self.trace_hash, line.as_bytes());
        self.trace.push_back(line);
        if !self.cfg.trace && self.trace.len() > TRACE_TAIL_LINES {
            self.trace.pop_front();
        }
    }

    /// A fault, heal or restart: traced, and kept for the failure report.
    fn log_fault(&mut self, line: String) {
        if self.fault_log.len() < FAULT_LOG_MAX {
            self.fault_log.push((self.now, line.clone()));
        }
        self.log(line);
    }

    fn fail(&mut self, reason: String) {
        if self.failure.is_none() {
            self.log(format!("FAIL {reason}"));
            self.failure = Some(reason);
        }
    }

    fn schedule(&mut self, at: u64, event: Event) {
        self.seq += 1;
        self.queue.insert((at, self.seq), event);
    }

    fn blocked(&self, cut: Cut) -> bool {
        self.partitions.values().any(|cuts| cuts.contains(&cut))
    }

    /// One-way latency between regions: 1 ms inside a region, tens of ms across, with
    /// jitter, and ten times more on a slow path.
    fn latency(&mut self, from: usize, to: usize) -> u64 {
        let base = if from == to { 1 } else { 10 + 25 * from.abs_diff(to) as u64 };
        let jitter = self.rng.random_range(0..=base / 2 + 1);
        let slow = if self.now < self.slow_until { 10 } else { 1 };
        (base + jitter) * slow
    }

    /// Send a message across the network: delivered after the link latency, or held
    /// until the partition that cuts the link heals.
    fn send(&mut self, from: usize, to: usize, event: Event) {
        let cut = Cut { from, to };
        if self.blocked(cut) {
            self.held.push((cut, event));
        } else {
            let mut at = self.now + self.latency(from, to);
            if let Event::Deliver { dialer, listener, to_dialer, .. } = &event {
                let last = self.link_arrivals.entry((*dialer, *listener, *to_dialer)).or_default();
                at = at.max(*last);
                *last = at;
            }
            self.schedule(at, event);
        }
    }

    fn run(&mut self) {
        for node in 0..self.nodes.len() {
            self.install_indexes(node);
        }
        for client in 0..self.clients.len() {
            let at = self.rng.random_range(0..5);
            self.schedule(at, Event::Issue { client });
        }
        for node in 0..self.nodes.len() {
            self.schedule(TICK_MS + node as u64, Event::Tick { node });
            self.schedule(PERSIST_TICK_MS + node as u64, Event::Persist { node });
            if self.cfg.replicate {
                self.schedule(REPL_TICK_MS + node as u64, Event::ReplTick { node });
            }
        }
        if self.cfg.faults.total() > 0 {
            self.schedule(self.cfg.fault_interval_ms, Event::Fault);
        }
        while let Some(((at, _), event)) = self.queue.pop_first() {
            if self.failure.is_some() {
                return;
            }
            self.events += 1;
            if self.events > EVENTS_MAX {
                self.fail(format!("no quiescence after {EVENTS_MAX} events"));
                return;
            }
            debug_assert!(at >= self.now, "time never goes backwards");
            self.now = at;
            let finished = self.ops_done >= self.cfg.ops && self.clients.iter().all(|c| !c.in_flight);
            if finished && self.cfg.replicate {
                match self.quiesce_until {
                    None => self.start_quiescing(),
                    Some(until) if self.now >= until => break,
                    Some(_) => {}
                }
            } else if finished && self.held.is_empty() {
                break;
            }
            self.handle(event);
        }
        if self.failure.is_none() {
            self.quiesce_and_check();
        }
    }

    fn handle(&mut self, event: Event) {
        match event {
            Event::Issue { client } => self.issue(client),
            Event::Request { client, node, incarnation, args } => self.request(client, node, incarnation, args),
            Event::Reply { client, node } => {
                self.clients[client].in_flight = false;
                self.ops_done += 1;
                let _ = node;
                let think = self.rng.random_range(0..4);
                self.schedule(self.now + think, Event::Issue { client });
            }
            Event::Tick { node } => {
                self.tick(node);
                self.schedule(self.now + TICK_MS, Event::Tick { node });
            }
            Event::Fault => {
                if self.ops_issued < self.cfg.ops {
                    self.inject_fault();
                    self.schedule(self.now + self.cfg.fault_interval_ms, Event::Fault);
                }
            }
            Event::Restart { node } => self.restart(node),
            Event::Persist { node } => {
                self.persist(node);
                self.schedule(self.now + PERSIST_TICK_MS, Event::Persist { node });
            }
            Event::StoreDone { node, incarnation } => self.store_done(node, incarnation),
            Event::ReplTick { node } => {
                self.repl_tick(node);
                self.schedule(self.now + REPL_TICK_MS, Event::ReplTick { node });
            }
            Event::OutboxReady { node } => self.repl_tick(node),
            Event::Deliver { dialer, listener, epoch, to_dialer, frame } => self.deliver(dialer, listener, epoch, to_dialer, frame),
            Event::RetryStalled { dialer, listener, to_dialer } => self.retry_stalled((dialer, listener, to_dialer)),
            Event::Heal { partition } => {
                self.partitions.remove(&partition);
                self.log_fault(format!("heal partition {partition}"));
                let held = std::mem::take(&mut self.held);
                for (cut, event) in held {
                    self.send(cut.from, cut.to, event);
                }
            }
        }
    }

    fn issue(&mut self, client: usize) {
        if self.ops_issued >= self.cfg.ops {
            return;
        }
        self.ops_issued += 1;
        let region = self.clients[client].region;
        let node = if self.rng.random_bool(0.8) { region } else { self.rng.random_range(0..self.nodes.len()) };
        let base_ms = self.nodes[node].local_ms(self.now);
        // Graph runs only draw the extra coin: other runs replay as before.
        let args = if self.cfg.replicate && self.cfg.graph && self.rng.random_bool(0.5) {
            crate::graph::graph_command(&mut self.rng, &mut self.graph_names)
        } else if self.cfg.replicate && self.cfg.streams && self.rng.random_bool(0.5) {
            crate::streams::stream_command(&mut self.rng, &mut self.stream_names)
        } else if self.cfg.replicate && self.cfg.renames && self.rng.random_bool(0.1) {
            workload::rename_command(&mut self.rng)
        } else if self.cfg.replicate && self.cfg.dumps && self.rng.random_bool(0.1) {
            // Only `--dumps` runs draw this coin: other runs replay as before.
            self.replicated_dump_or_restore()
        } else if self.cfg.replicate {
            workload::replicated_command(&mut self.rng)
        } else if self.cfg.dumps && self.rng.random_range(0..6) == 0 {
            // Only `--dumps` runs draw this coin: other runs replay as before.
            self.dump_or_restore(base_ms)
        } else if self.rng.random_range(0..40) == 0 {
            workload::transaction(&mut self.rng, base_ms)
        } else {
            workload::command(&mut self.rng, base_ms)
        };
        self.clients[client].in_flight = true;
        let incarnation = self.nodes[node].incarnation;
        self.send(region, self.nodes[node].region, Event::Request { client, node, incarnation, args });
    }

    fn request(&mut self, client: usize, node: usize, incarnation: u32, args: Vec<Bytes>) {
        let client_region = self.clients[client].region;
        let n = &self.nodes[node];
        if !n.up || n.incarnation != incarnation {
            // The connection died with the process: the client sees a reset.
            self.log(format!("c{client} -> n{node} connection reset: {}", show_args(&args)));
            self.schedule(self.now + 1, Event::Reply { client, node });
            return;
        }
        if n.paused_until > self.now {
            let at = n.paused_until;
            self.schedule(at, Event::Request { client, node, incarnation, args });
            return;
        }
        let line = show_args(&args);
        if self.cfg.replicate {
            // Other nodes' writes arrive at any moment: replies are not checked one by
            // one; the oracle checks the converged result.
            let before = self.contexts_before(node, &args);
            let collections_before = self.collection_contexts_before(node, &args);
            let graph_before = self.graph_context_before(node, &args);
            let notify_before = self.notify_before(node, &args);
            let local = self.nodes[node].local_ms(self.now);
            let (actual, _) = self.execute(node, args.clone());
            self.log(format!("c{client} n{node} {line} -> {actual:?}"));
            self.dumped.note(dumps::is_dump(&args), &actual);
            self.notify_after(node, &line, notify_before, false);
            self.record_writes(node, &args, before, local);
            self.record_collection_writes(node, &args, collections_before, &actual);
            self.record_graph_write(node, &args, graph_before, &actual);
            self.record_stream_write(node, &args, &actual);
            // As the server's shard threads wake its batcher (every shard's signal is
            // taken: one early window serves them all).
            let mut ready = false;
            for shard in &mut self.nodes[node].shards {
                ready |= shard.take_outbox_ready();
            }
            if ready {
                self.schedule(self.now, Event::OutboxReady { node });
            }
            let region = self.nodes[node].region;
            self.send(region, client_region, Event::Reply { client, node });
            return;
        }
        let notify_before = self.notify_before(node, &args);
        let dump = dumps::is_dump(&args);
        let (actual, expected) = self.execute(node, args);
        self.log(format!("c{client} n{node} {line} -> {actual:?}"));
        self.dumped.note(dump, &actual);
        if let Some(expected) = expected
            && actual != expected
        {
            self.fail(format!("n{node} answered {actual:?} to `{line}`, the model says {expected:?}"));
            return;
        }
        self.notify_after(node, &line, notify_before, true);
        let region = self.nodes[node].region;
        self.send(region, client_region, Event::Reply { client, node });
    }

    fn tick(&mut self, node: usize) {
        let now = self.now;
        let n = &mut self.nodes[node];
        if !n.up || n.paused_until > now {
            return;
        }
        let local = n.local_ms(now);
        let due = self.notify_tick_before(node, local);
        let n = &mut self.nodes[node];
        for shard in &mut n.shards {
            shard.tick(local);
            let keys = &shard.kv.keys;
            if keys.expiry_index_len() > keys.expiry_index_bound() {
                let reason = format!("n{node} expiry index holds {} entries, bound {}", keys.expiry_index_len(), keys.expiry_index_bound());
                self.fail(reason);
                return;
            }
        }
        n.model.tick(local);
        self.notify_tick_after(node, due);
        if (now / TICK_MS).is_multiple_of(indexes::AUDIT_EVERY_TICKS) {
            self.audit_indexes(node, "checkpoint");
        }
    }
}

/// Run one seed. Panics in the code under test are failures, not crashes of the
/// simulator.
pub fn run(cfg: SimConfig) -> Outcome {
    meridian::bugs::plant(cfg.bug.as_slice());
    let seed = cfg.seed;
    let mut sim = Sim::new(cfg);
    let result = std::panic::catch_unwind(AssertUnwindSafe(|| sim.run()));
    meridian::bugs::plant(&[]);
    if let Err(payload) = result {
        let message = payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "unknown panic".into());
        sim.fail(format!("panic: {message}"));
    }
    Outcome {
        seed,
        failure: sim.failure.clone(),
        events: sim.events,
        sim_ms: sim.now,
        trace_hash: sim.trace_hash,
        trace: sim.trace.into_iter().collect(),
    }
}
