//! Drawing and applying one fault: crash, pause, clock jump or drift, partition,
//! slow links.

use rand::Rng;

use super::{Cut, Event, Sim};
use crate::model::Model;

impl Sim {
    pub(super) fn inject_fault(&mut self) {
        let w = self.cfg.faults.clone();
        let mut pick = self.rng.random_range(0..w.total());
        let classes = [w.crash, w.pause, w.clock_jump, w.clock_drift, w.partition, w.slow_link, w.link_reset];
        let class = classes.iter().position(|&c| {
            if pick < c {
                true
            } else {
                pick -= c;
                false
            }
        });
        let node = self.rng.random_range(0..self.nodes.len());
        match class {
            // A crash loses what the node had not stored (replication runs then drop from
            // the oracle the writes no other node had either: `forget_lost_writes`).
            Some(0) if self.nodes[node].up => {
                // A request already sent may still land after the process died.
                let lands = self.rng.random_bool(0.5);
                let n = &mut self.nodes[node];
                n.up = false;
                n.incarnation += 1;
                n.shards.clear();
                n.model = Model::default();
                n.storage.streamer = None;
                if let Some(op) = n.storage.in_flight.take()
                    && lands
                {
                    n.storage.store.execute(op);
                }
                if self.cfg.replicate {
                    self.repl_crash(node);
                }
                let down_ms = self.rng.random_range(50..1_000);
                self.log_fault(format!("n{node} crash (restart in {down_ms} ms)"));
                self.schedule(self.now + down_ms, Event::Restart { node });
            }
            Some(1) => {
                let ms = self.rng.random_range(10..800);
                let n = &mut self.nodes[node];
                n.paused_until = n.paused_until.max(self.now + ms);
                self.log_fault(format!("n{node} pause {ms} ms"));
            }
            Some(2) => {
                let jump = self.rng.random_range(-3_000..3_000);
                self.nodes[node].clock_offset_ms += jump;
                self.log_fault(format!("n{node} clock jumps {jump} ms"));
            }
            Some(3) => {
                let ppm = self.rng.random_range(-50_000..50_000);
                let now = self.now;
                self.nodes[node].set_drift(now, ppm);
                self.log_fault(format!("n{node} clock drifts {ppm} ppm"));
            }
            Some(4) => {
                let regions = self.nodes.len();
                let cuts = match self.rng.random_range(0..3) {
                    // Isolate one region, both ways.
                    0 => (0..regions).filter(|&r| r != node).flat_map(|r| [Cut { from: r, to: node }, Cut { from: node, to: r }]).collect(),
                    // Asymmetric: one region can send but not receive.
                    1 => (0..regions).filter(|&r| r != node).map(|r| Cut { from: r, to: node }).collect(),
                    // Split the regions in two groups.
                    _ => {
                        let split = self.rng.random_range(1..regions.max(2));
                        (0..regions)
                            .flat_map(|a| (0..regions).map(move |b| (a, b)))
                            .filter(|&(a, b)| (a < split) != (b < split))
                            .map(|(a, b)| Cut { from: a, to: b })
                            .collect()
                    }
                };
                self.seq += 1;
                let id = self.seq;
                let heal_ms = self.rng.random_range(100..2_000);
                self.log_fault(format!("partition {id} {cuts:?} for {heal_ms} ms"));
                self.partitions.insert(id, cuts);
                self.schedule(self.now + heal_ms, Event::Heal { partition: id });
            }
            Some(5) => {
                let ms = self.rng.random_range(100..1_000);
                self.slow_until = self.slow_until.max(self.now + ms);
                self.log_fault(format!("slow links for {ms} ms"));
            }
            Some(6) if self.cfg.replicate => {
                let peer = (node + self.rng.random_range(1..self.nodes.len().max(2))) % self.nodes.len();
                if peer != node {
                    self.log_fault(format!("link n{node} -> n{peer} reset"));
                    self.reset_link(node, peer);
                }
            }
            _ => {}
        }
    }
}
