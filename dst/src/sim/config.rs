//! What a simulation run is given (`SimConfig`, and the command line that replays it)
//! and what it reports (`Outcome`). Part of the simulator: [`super::run`] takes the one
//! and returns the other.

use crate::faults::FaultWeights;
use meridian::bugs::Bug;

#[derive(Clone, Debug)]
pub struct SimConfig {
    pub seed: u64,
    pub nodes: usize,
    pub shards: usize,
    pub clients: usize,
    /// Client operations to complete.
    pub ops: usize,
    pub faults: FaultWeights,
    /// Simulated milliseconds between two fault draws.
    pub fault_interval_ms: u64,
    pub bug: Option<Bug>,
    /// Chance that an object-store operation fails transiently, in percent.
    pub store_error_percent: u32,
    /// Keep every trace line (for `--trace`), not only the tail.
    pub trace: bool,
    /// Nodes replicate to each other (checked against the oracle; the default, the
    /// whole system) instead of each serving its own clients alone (checked reply by
    /// reply against the model; `--no-replicate`).
    pub replicate: bool,
    /// Replication runs: half the commands are graph writes and reads on one graph key
    /// (`graph.rs`), checked against the graph oracle after convergence (`--graph`).
    pub graph: bool,
    /// Replication runs: half the commands are stream writes and reads on one stream
    /// key (`streams.rs`), checked against the stream oracle after convergence
    /// (`--streams`).
    pub streams: bool,
    /// Replication runs: about one command in ten is a RENAME, RENAMENX or COPY between
    /// two string keys of one hash tag, or a SET with a TTL of one of them
    /// (`--renames`, `workload::rename_command`); the oracle takes a rename as the
    /// removal of the source (RENAME) and a SET of the destination to the value and TTL
    /// the source had on that node.
    pub renames: bool,
    /// Single-node runs: about one command in six is a DUMP of a workload key or a
    /// RESTORE (TTL, ABSTTL, REPLACE drawn) of a payload an earlier DUMP returned, one in
    /// ten of them with a byte damaged (`--dumps`, `Sim::dump_or_restore`). The model
    /// checks that a DUMP's payload decodes to the key's value and applies a RESTORE
    /// from the payload it was given, so every later read of the key checks the engine's.
    /// Replication runs: about one command in ten is a DUMP of one of four string keys
    /// or a RESTORE ... REPLACE of a string payload onto one (`replicated_dump_or_restore`),
    /// which the oracle takes as a SET of the payload's value.
    pub dumps: bool,
    /// Give up on a peer silent this long (`--peer-horizon-ms`; 0: never). `None`:
    /// chosen by the seed, so that a sweep covers both: even seeds give up after
    /// `SEEDED_HORIZON_MS`, odd ones never.
    pub peer_horizon_ms: Option<u64>,
    /// Replication runs: each link also compares Merkle trees every
    /// `AE_INTERVAL_MS` (the default, as the server does). Without
    /// (`--no-periodic-anti-entropy`) a round starts only where the server must start
    /// one (a new connection, an overflowed queue), so whatever the deltas a node sends
    /// fail to carry is still different when the run ends, and the convergence check
    /// sees it (a write's delta that leaves something out is a bug even when a later
    /// round would repair it: until then the regions answer differently). Every run
    /// delivers each link's frames in order (`Sim::send`).
    pub periodic_anti_entropy: bool,
}

/// The horizon of an even seed's run: shorter than most partitions (100-2,000 ms).
pub const SEEDED_HORIZON_MS: u64 = 600;

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            seed: 0,
            nodes: 3,
            shards: 2,
            clients: 6,
            ops: 1_500,
            faults: FaultWeights::default(),
            fault_interval_ms: 250,
            bug: None,
            store_error_percent: 5,
            trace: false,
            replicate: true,
            graph: false,
            streams: false,
            renames: false,
            dumps: false,
            peer_horizon_ms: None,
            periodic_anti_entropy: true,
        }
    }
}

impl SimConfig {
    /// The horizon this run gives up on silent peers after (0: never).
    pub fn horizon_ms(&self) -> u64 {
        self.peer_horizon_ms.unwrap_or(if self.seed.is_multiple_of(2) { SEEDED_HORIZON_MS } else { 0 })
    }

    /// The `dst` command that replays exactly this run: every setting that differs
    /// from the default, so a failure reproduces as printed.
    pub fn replay_command(&self) -> String {
        let default = SimConfig::default();
        let mut command = format!("dst --seed {}", self.seed);
        if !self.replicate {
            command.push_str(" --no-replicate");
        }
        if self.graph {
            command.push_str(" --graph");
        }
        if self.streams {
            command.push_str(" --streams");
        }
        if self.renames {
            command.push_str(" --renames");
        }
        if self.dumps {
            command.push_str(" --dumps");
        }
        if !self.periodic_anti_entropy {
            command.push_str(" --no-periodic-anti-entropy");
        }
        if let Some(horizon) = self.peer_horizon_ms {
            command.push_str(&format!(" --peer-horizon-ms {horizon}"));
        }
        for (flag, value, default) in [
            ("--nodes", self.nodes, default.nodes),
            ("--shards", self.shards, default.shards),
            ("--clients", self.clients, default.clients),
            ("--ops", self.ops, default.ops),
        ] {
            if value != default {
                command.push_str(&format!(" {flag} {value}"));
            }
        }
        let faults = self.faults.spec();
        if !faults.is_empty() {
            command.push_str(&format!(" --faults {faults}"));
        }
        if self.store_error_percent != default.store_error_percent {
            command.push_str(&format!(" --store-error-percent {}", self.store_error_percent));
        }
        if let Some(bug) = self.bug {
            command.push_str(&format!(" --inject-bug {}", bug.name()));
        }
        // Not a flag: only tests change it, and a replay from the command line cannot.
        debug_assert_eq!(self.fault_interval_ms, default.fault_interval_ms, "fault_interval_ms has no flag");
        command
    }
}

#[derive(Clone, Debug)]
pub struct Outcome {
    pub seed: u64,
    pub failure: Option<String>,
    pub events: u64,
    pub sim_ms: u64,
    pub trace_hash: u64,
    /// Every line with `trace`, else the last lines (for failure reports).
    pub trace: Vec<String>,
}

impl Outcome {
    pub fn ok(&self) -> bool {
        self.failure.is_none()
    }

    pub fn summary(&self) -> String {
        format!(
            "seed {}: {} events={} sim_ms={} trace_hash={:016x}",
            self.seed,
            if self.ok() { "ok" } else { "FAIL" },
            self.events,
            self.sim_ms,
            self.trace_hash
        )
    }
}
