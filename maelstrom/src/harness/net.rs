//! The harness's network between nodes: Maelstrom's part of carrying every
//! node-to-node message, with the faults a seeded RNG picks.
//!
//! Owns the messages in flight and the fault state: partitions (a message between
//! nodes on different sides is dropped, as Maelstrom's partition nemesis drops it),
//! loss, duplication, and latency (uniform, so messages reorder). Never touches a
//! process: the harness writes what [`Network::due`] hands back. Client messages do
//! not pass through here (Maelstrom's nemesis cuts nodes from nodes, not clients).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::time::{Duration, Instant};

use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// Messages in flight at most; past it a message is dropped (and counted as lost).
pub const IN_FLIGHT_MAX: usize = 200_000;

/// The faults a run injects between nodes.
#[derive(Clone, Debug, PartialEq)]
pub struct Faults {
    /// Highest one-way latency; each message draws uniformly from 0 to it.
    pub latency_ms_max: u64,
    /// Probability that a message is lost.
    pub loss: f64,
    /// Probability that a message is delivered twice.
    pub duplication: f64,
    /// Planted fault: every node-to-node message is dropped (shows the checkers fail).
    pub drop_all: bool,
}

/// What the network did, for the summary line.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NetStats {
    pub sent: u64,
    pub delivered: u64,
    pub lost: u64,
    pub cut: u64,
    pub duplicated: u64,
    pub partitions: u64,
}

pub struct Network {
    pub faults: Faults,
    /// The side of each node; messages cross only between nodes on one side.
    sides: Vec<usize>,
    queue: BinaryHeap<Reverse<(Instant, u64)>>,
    in_flight: HashMap<u64, (usize, String)>,
    next_id: u64,
    pub stats: NetStats,
}

impl Network {
    pub fn new(nodes: usize, faults: Faults) -> Network {
        assert!(nodes > 0);
        assert!((0.0..1.0).contains(&faults.loss) && (0.0..1.0).contains(&faults.duplication));
        Network {
            faults,
            sides: vec![0; nodes],
            queue: BinaryHeap::new(),
            in_flight: HashMap::new(),
            next_id: 0,
            stats: NetStats::default(),
        }
    }

    /// Send `line` from node `from` to node `to`, through the faults.
    pub fn send(&mut self, from: usize, to: usize, line: String, now: Instant, rng: &mut ChaCha8Rng) {
        self.stats.sent += 1;
        if self.faults.drop_all || self.sides[from] != self.sides[to] {
            self.stats.cut += 1;
            return;
        }
        if rng.random_bool(self.faults.loss) {
            self.stats.lost += 1;
            return;
        }
        let copies = if rng.random_bool(self.faults.duplication) { 2 } else { 1 };
        self.stats.duplicated += copies - 1;
        for _ in 0..copies {
            if self.in_flight.len() >= IN_FLIGHT_MAX {
                self.stats.lost += 1;
                continue;
            }
            let delay = Duration::from_micros(rng.random_range(0..=self.faults.latency_ms_max * 1_000));
            self.next_id += 1;
            self.queue.push(Reverse((now + delay, self.next_id)));
            self.in_flight.insert(self.next_id, (to, line.clone()));
        }
        debug_assert_eq!(self.queue.len(), self.in_flight.len());
    }

    /// The next message due by `now`: its destination and line.
    pub fn due(&mut self, now: Instant) -> Option<(usize, String)> {
        let Reverse((at, id)) = *self.queue.peek()?;
        if at > now {
            return None;
        }
        self.queue.pop();
        let message = self.in_flight.remove(&id).expect("every queued id is in flight");
        self.stats.delivered += 1;
        Some(message)
    }

    /// When the next message is due.
    pub fn next_due(&self) -> Option<Instant> {
        self.queue.peek().map(|Reverse((at, _))| *at)
    }

    /// A new partition: every node on a random side of two, each side non-empty (with
    /// two or more nodes); one time in two a single node is cut off alone.
    pub fn partition(&mut self, rng: &mut ChaCha8Rng) {
        let nodes = self.sides.len();
        if nodes < 2 {
            return;
        }
        if rng.random_bool(0.5) {
            let alone = rng.random_range(0..nodes);
            self.sides.iter_mut().enumerate().for_each(|(i, s)| *s = (i == alone) as usize);
        } else {
            loop {
                self.sides.iter_mut().for_each(|s| *s = rng.random_range(0..2));
                if self.sides.contains(&0) && self.sides.contains(&1) {
                    break;
                }
            }
        }
        self.stats.partitions += 1;
    }

    pub fn heal(&mut self) {
        self.sides.iter_mut().for_each(|s| *s = 0);
    }

    /// Heal and stop losing and duplicating: the run's quiet end (latency stays).
    pub fn calm(&mut self) {
        self.heal();
        self.faults.loss = 0.0;
        self.faults.duplication = 0.0;
    }

    pub fn describe_sides(&self) -> String {
        let side =
            |s: usize| self.sides.iter().enumerate().filter(|(_, x)| **x == s).map(|(i, _)| format!("n{i}")).collect::<Vec<_>>().join(",");
        format!("[{}] | [{}]", side(0), side(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn faults() -> Faults {
        Faults { latency_ms_max: 0, loss: 0.0, duplication: 0.0, drop_all: false }
    }

    #[test]
    fn a_partition_drops_messages_across_it_and_a_heal_lets_them_through() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut net = Network::new(3, faults());
        let now = Instant::now();
        net.partition(&mut rng);
        for from in 0..3 {
            for to in 0..3 {
                net.send(from, to, format!("{from}->{to}"), now, &mut rng);
            }
        }
        assert!(net.stats.cut >= 2, "some pair is cut: {:?}", net.stats);
        net.heal();
        net.send(0, 2, "after".into(), now, &mut rng);
        let mut delivered = Vec::new();
        while let Some((_, line)) = net.due(now) {
            delivered.push(line);
        }
        assert!(delivered.contains(&"after".to_string()));
        assert_eq!(delivered.len() as u64 + net.stats.cut, 10);
    }

    #[test]
    fn the_planted_fault_drops_everything() {
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let mut net = Network::new(2, Faults { drop_all: true, ..faults() });
        net.send(0, 1, "x".into(), Instant::now(), &mut rng);
        assert_eq!((net.next_due(), net.stats.cut), (None, 1));
    }
}
