//! The local stand-in for Maelstrom (`maelstrom/check`): N node processes, a faulty
//! network between them, clients driving one workload, and Maelstrom's checks.
//!
//! A run: start the nodes and `init` them (and send a topology for broadcast); for
//! `seconds`, clients bound to each node send requests one at a time while the
//! network loses, duplicates and delays node-to-node messages and a nemesis cuts the
//! nodes into two sides and heals them; then the network heals and calms, and (except
//! for lin-kv, whose check reads the history alone) every node is read until the
//! final reads pass or `converge_seconds` run out. The check decides the verdict.
//!
//! Owns the run's schedule and its history. Faults come from one seeded RNG, so the
//! choices repeat with the seed; the timing of real processes does not (this is not
//! the deterministic simulator: `dst/` is). Bounds: one request in flight per client,
//! the network's in-flight cap, the nodes' line queue, and time limits on every phase.

pub mod check;
pub mod history;
pub mod net;
pub mod procs;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

use crate::message::{Envelope, body};
use crate::workload::Workload;
use history::{Generator, Op, Outcome, Request};
use net::{Faults, Network};
use procs::{NodeLine, Nodes};

/// How long the nodes have to answer `init` and `topology`.
const SETUP_TIMEOUT: Duration = Duration::from_secs(10);
/// Final reads are taken again this often until they pass.
const FINAL_ROUND: Duration = Duration::from_millis(200);
/// A partition or a heal lasts this long, uniformly.
const NEMESIS_MS: std::ops::Range<u64> = 300..1_200;
/// Operations in a history at most (a run that would pass it stops issuing).
pub const HISTORY_OPS_MAX: usize = 200_000;

#[derive(Clone, Debug)]
pub struct Config {
    pub workload: Workload,
    pub nodes: usize,
    pub seconds: f64,
    pub seed: u64,
    pub node_bin: PathBuf,
    pub shards_per_node: usize,
    /// Client requests per second, all clients together.
    pub rate: f64,
    pub clients_per_node: usize,
    pub faults: Faults,
    pub partitions: bool,
    /// Probability that a client's request, or the node's answer to it, is lost: the
    /// request times out and is indeterminate (it happened or not).
    pub client_loss: f64,
    pub converge_seconds: f64,
    pub request_timeout: Duration,
    /// Print the nemesis's moves as they happen, and each node's link figures at exit.
    pub verbose: bool,
}

impl Config {
    /// CI-sized defaults.
    pub fn new(workload: Workload, node_bin: PathBuf) -> Config {
        Config {
            workload,
            nodes: 3,
            seconds: 5.0,
            seed: 1,
            node_bin,
            shards_per_node: 2,
            rate: 100.0,
            clients_per_node: 2,
            faults: Faults { latency_ms_max: 20, loss: 0.05, duplication: 0.05, drop_all: false },
            partitions: true,
            client_loss: 0.02,
            converge_seconds: 15.0,
            request_timeout: Duration::from_secs(1),
            verbose: false,
        }
    }
}

/// A run's verdict: its violations (none: it passed) and its one-line summary.
#[derive(Clone, Debug)]
pub struct Report {
    pub violations: Vec<String>,
    pub summary: String,
}

impl Report {
    pub fn passed(&self) -> bool {
        self.violations.is_empty()
    }
}

/// Who waits for a reply.
#[derive(Clone, Copy, Debug)]
enum Waiter {
    Setup,
    Op { client: usize, op: usize },
    Final { node: usize },
}

struct Client {
    node: usize,
    name: String,
    /// The request in flight: its msg_id and when it times out.
    busy: Option<(u64, Instant)>,
    next_at: Instant,
}

struct Run<'a> {
    config: &'a Config,
    start: Instant,
    rng: ChaCha8Rng,
    nodes: Nodes,
    lines: Receiver<NodeLine>,
    net: Network,
    clients: Vec<Client>,
    history: Vec<Op>,
    generator: Generator,
    next_msg_id: u64,
    waiting: HashMap<u64, Waiter>,
    setup_replies: usize,
    /// Client requests and answers lost on purpose (`Config::client_loss`).
    lost_requests: u64,
    lost_replies: u64,
    finals: Vec<Option<Value>>,
}

/// Run one workload; `Err` when the harness itself could not (a node would not start
/// or died): that is neither a pass nor a violation.
pub fn run(config: &Config) -> Result<Report, String> {
    assert!(config.nodes >= 1 && config.nodes <= crate::node::NODES_MAX);
    assert!(config.clients_per_node >= 1 && config.rate > 0.0);
    let args = vec!["--workload".into(), config.workload.name().into(), "--shards".into(), config.shards_per_node.to_string()];
    let (nodes, lines) = Nodes::spawn(&config.node_bin, &args, config.nodes, config.verbose)?;
    let now = Instant::now();
    let clients = (0..config.nodes * config.clients_per_node)
        .map(|i| Client { node: i % config.nodes, name: format!("c{}", i + 1), busy: None, next_at: now })
        .collect();
    let mut run = Run {
        config,
        start: now,
        rng: ChaCha8Rng::seed_from_u64(config.seed),
        nodes,
        lines,
        net: Network::new(config.nodes, config.faults.clone()),
        clients,
        history: Vec::new(),
        generator: Generator::new(config.workload),
        next_msg_id: 1,
        waiting: HashMap::new(),
        setup_replies: 0,
        lost_requests: 0,
        lost_replies: 0,
        finals: vec![None; config.nodes],
    };
    let result = run.all_phases();
    run.nodes.shut_down();
    result
}

impl Run<'_> {
    fn all_phases(&mut self) -> Result<Report, String> {
        self.setup()?;
        self.workload()?;
        self.net.calm();
        let (violations, detail) = match self.config.workload {
            Workload::LinKv => (check::lin_kv(&self.history), String::from("history checked")),
            _ => self.final_reads()?,
        };
        Ok(self.report(violations, detail))
    }

    fn us(&self, at: Instant) -> u64 {
        at.duration_since(self.start).as_micros() as u64
    }

    fn request(
        &mut self,
        client_name: &str,
        node: usize,
        mut message: serde_json::Map<String, Value>,
        waiter: Waiter,
    ) -> Result<u64, String> {
        let msg_id = self.next_msg_id;
        self.next_msg_id += 1;
        message.insert("msg_id".into(), json!(msg_id));
        let envelope = Envelope { src: client_name.into(), dest: format!("n{node}"), body: message };
        self.waiting.insert(msg_id, waiter);
        self.nodes.send(node, &envelope.to_line())?;
        Ok(msg_id)
    }

    /// A request lost on its way: it waits for an answer that never comes.
    fn skip_request(&mut self, waiter: Waiter) -> u64 {
        let msg_id = self.next_msg_id;
        self.next_msg_id += 1;
        self.waiting.insert(msg_id, waiter);
        msg_id
    }

    fn setup(&mut self) -> Result<(), String> {
        let names: Vec<String> = (0..self.config.nodes).map(|n| format!("n{n}")).collect();
        let mut expected = 0;
        for node in 0..self.config.nodes {
            let init = body("init", json!({"node_id": names[node], "node_ids": names}));
            self.request("c0", node, init, Waiter::Setup)?;
            expected += 1;
        }
        if self.config.workload == Workload::Broadcast {
            // A ring, as a stand-in for Maelstrom's topologies: the node replicates to
            // every node whatever it is told.
            let n = self.config.nodes;
            let topology: serde_json::Map<String, Value> =
                (0..n).map(|i| (names[i].clone(), json!([names[(i + 1) % n].clone(), names[(i + n - 1) % n].clone()]))).collect();
            for node in 0..n {
                self.request("c0", node, body("topology", json!({"topology": topology})), Waiter::Setup)?;
                expected += 1;
            }
        }
        let deadline = Instant::now() + SETUP_TIMEOUT;
        while self.setup_replies < expected {
            if Instant::now() > deadline {
                return Err(format!("the nodes answered {} of {expected} setup requests in {SETUP_TIMEOUT:?}", self.setup_replies));
            }
            self.step(deadline)?;
        }
        Ok(())
    }

    /// Clients send requests and the nemesis moves until the run's time is up; then
    /// the requests in flight finish or time out.
    fn workload(&mut self) -> Result<(), String> {
        let end = self.start + Duration::from_secs_f64(self.config.seconds);
        let nemesis = self.config.partitions && self.config.nodes > 1;
        let mut next_nemesis = Instant::now() + Duration::from_millis(self.rng.random_range(NEMESIS_MS));
        let mut partitioned = false;
        loop {
            let now = Instant::now();
            self.expire_requests(now);
            let issuing = now < end;
            if !issuing && self.clients.iter().all(|c| c.busy.is_none()) {
                return Ok(());
            }
            if nemesis && issuing && now >= next_nemesis {
                if partitioned {
                    self.net.heal();
                } else {
                    self.net.partition(&mut self.rng);
                }
                partitioned = !partitioned;
                if self.config.verbose {
                    let state = if partitioned { self.net.describe_sides() } else { "healed".into() };
                    println!("{:>8.3}s nemesis: {state}", now.duration_since(self.start).as_secs_f64());
                }
                next_nemesis = now + Duration::from_millis(self.rng.random_range(NEMESIS_MS));
            }
            if issuing && self.history.len() < HISTORY_OPS_MAX {
                self.issue(now)?;
            }
            // Wake for the next thing due; after the end only timeouts are (no spinning
            // on a nemesis or an idle client whose time passed).
            let mut wake = now + Duration::from_millis(50);
            if nemesis && issuing {
                wake = wake.min(next_nemesis.max(now));
            }
            for client in &self.clients {
                match client.busy {
                    Some((_, deadline)) => wake = wake.min(deadline.max(now)),
                    None if issuing => wake = wake.min(client.next_at.max(now)),
                    None => {}
                }
            }
            self.step(wake)?;
        }
    }

    /// Every idle client whose time has come sends its next request.
    fn issue(&mut self, now: Instant) -> Result<(), String> {
        let spacing_us = (self.clients.len() as f64 / self.config.rate * 1e6) as u64;
        for index in 0..self.clients.len() {
            let client = &self.clients[index];
            if client.busy.is_some() || client.next_at > now {
                continue;
            }
            let (node, name) = (client.node, client.name.clone());
            let request = self.generator.next(&mut self.rng);
            let message = history::request_body(self.config.workload, &request);
            let op = self.history.len();
            self.history.push(Op { client: index, node, request, invoked_us: self.us(now), completed_us: None, outcome: Outcome::Pending });
            // Half the client losses take the request, half the answer (`route`).
            let lost = self.rng.random_bool(self.config.client_loss / 2.0);
            let msg_id = if lost {
                self.lost_requests += 1;
                self.skip_request(Waiter::Op { client: index, op })
            } else {
                self.request(&name, node, message, Waiter::Op { client: index, op })?
            };
            let pause = Duration::from_micros(self.rng.random_range(0..=2 * spacing_us));
            let client = &mut self.clients[index];
            client.busy = Some((msg_id, now + self.config.request_timeout));
            client.next_at = now + pause;
        }
        Ok(())
    }

    /// Requests past their timeout are indeterminate; their clients move on.
    fn expire_requests(&mut self, now: Instant) {
        for client in &mut self.clients {
            if let Some((msg_id, deadline)) = client.busy
                && now > deadline
            {
                if let Some(Waiter::Op { op, .. }) = self.waiting.remove(&msg_id) {
                    self.history[op].outcome = Outcome::Indeterminate;
                }
                client.busy = None;
            }
        }
    }

    /// Read every node until the check passes or time runs out; the last reads'
    /// violations and how long convergence took.
    fn final_reads(&mut self) -> Result<(Vec<String>, String), String> {
        let healed = Instant::now();
        let deadline = healed + Duration::from_secs_f64(self.config.converge_seconds);
        let mut rounds = 0;
        loop {
            rounds += 1;
            self.finals = vec![None; self.config.nodes];
            for node in 0..self.config.nodes {
                let name = format!("c{}", 1_000 + node);
                self.request(&name, node, body("read", json!({})), Waiter::Final { node })?;
            }
            let round_end = Instant::now() + self.config.request_timeout;
            while self.finals.iter().any(Option::is_none) && Instant::now() < round_end {
                self.step(round_end)?;
            }
            let complete = self.finals.iter().all(Option::is_some);
            let finals: Vec<Value> = self.finals.iter().map(|f| f.clone().unwrap_or(Value::Null)).collect();
            let mut violations = match self.config.workload {
                Workload::GCounter | Workload::PnCounter => check::counter(&self.history, &finals),
                _ => check::sets(&self.history, &finals),
            };
            if !complete {
                violations.push("a node did not answer its final read".into());
            }
            let waited = healed.elapsed().as_secs_f64();
            if violations.is_empty() {
                return Ok((violations, format!("final reads pass {waited:.2} s after the heal ({rounds} rounds)")));
            }
            if Instant::now() >= deadline {
                return Ok((violations, format!("final reads still failing {waited:.2} s after the heal ({rounds} rounds)")));
            }
            let next = Instant::now() + FINAL_ROUND;
            while Instant::now() < next {
                self.step(next)?;
            }
        }
    }

    /// Deliver what the network has due, then wait until `wake_by` for one line from
    /// a node and route it.
    fn step(&mut self, wake_by: Instant) -> Result<(), String> {
        let now = Instant::now();
        while let Some((node, line)) = self.net.due(now) {
            self.nodes.send(node, &line)?;
        }
        let until = self.net.next_due().map_or(wake_by, |due| due.min(wake_by));
        match self.lines.recv_timeout(until.saturating_duration_since(now)) {
            Ok((node, Some(line))) => self.route(node, line),
            Ok((node, None)) => Err(format!("n{node} exited during the run")),
            Err(RecvTimeoutError::Timeout) => Ok(()),
            Err(RecvTimeoutError::Disconnected) => Err("every node exited".into()),
        }
    }

    fn route(&mut self, from: usize, line: String) -> Result<(), String> {
        let envelope = Envelope::parse(&line).map_err(|e| format!("n{from} wrote a line that is not a Maelstrom message ({e}): {line}"))?;
        if let Some(to) = envelope.dest.strip_prefix('n').and_then(|n| n.parse::<usize>().ok()).filter(|&n| n < self.config.nodes) {
            self.net.send(from, to, line, Instant::now(), &mut self.rng);
            return Ok(());
        }
        let Some(&waiter) = envelope.in_reply_to().and_then(|id| self.waiting.get(&id)) else {
            return Ok(()); // a reply after its request timed out
        };
        if matches!(waiter, Waiter::Op { .. }) && self.rng.random_bool(self.config.client_loss / 2.0) {
            self.lost_replies += 1;
            return Ok(()); // the client times out: indeterminate
        }
        envelope.in_reply_to().map(|id| self.waiting.remove(&id));
        let now = self.us(Instant::now());
        match waiter {
            Waiter::Setup if envelope.kind().ends_with("_ok") => self.setup_replies += 1,
            Waiter::Setup => return Err(format!("n{from} refused its setup: {line}")),
            Waiter::Op { client, op } => {
                self.history[op].outcome = history::outcome_of(&envelope.body);
                self.history[op].completed_us = Some(now);
                self.generator.observe(&self.history[op]);
                self.clients[client].busy = None;
            }
            Waiter::Final { node } => {
                if let Outcome::Ok(value) = history::outcome_of(&envelope.body) {
                    self.finals[node] = Some(value);
                }
            }
        }
        Ok(())
    }

    fn report(&self, violations: Vec<String>, detail: String) -> Report {
        let c = &self.config;
        let count = |f: fn(&Op) -> bool| self.history.iter().filter(|op| f(op)).count();
        let ok = count(Op::is_ok);
        let failed = count(|op| matches!(op.outcome, Outcome::Failed(_)));
        let indeterminate = self.history.len() - ok - failed;
        let writes = count(|op| !matches!(op.request, Request::Read | Request::KvRead { .. }));
        let s = &self.net.stats;
        let verdict = if violations.is_empty() { "PASS" } else { "FAIL" };
        let mut summary = format!(
            "{verdict} {} nodes={} seconds={} seed={}: {} ops ({writes} writes; {ok} ok, {failed} failed, {indeterminate} indeterminate); {detail}; net {} sent, {} lost, {} duplicated, {} cut in {} partitions; clients lost {} requests and {} answers",
            c.workload.name(),
            c.nodes,
            c.seconds,
            c.seed,
            self.history.len(),
            s.sent,
            s.lost,
            s.duplicated,
            s.cut,
            s.partitions,
            self.lost_requests,
            self.lost_replies
        );
        if !violations.is_empty() {
            let kind = if c.workload == Workload::LinKv { "linearizability violations" } else { "violations" };
            summary.push_str(&format!("; {} {kind}, first: {}", violations.len(), violations[0]));
        }
        Report { violations, summary }
    }
}
