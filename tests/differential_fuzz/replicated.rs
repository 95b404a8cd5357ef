//! The random sequences on replicating nodes (anti-entropy off, so that nothing
//! repairs what a wrong delta left): whatever they write, once nothing waits to be sent
//! every node must read out alike (`recovery::readout`: every key, its type, TTL
//! presence and whole content, what each node derives from the key states included).
//! - One writer: every kind of write the generator makes is also checked as a delta
//!   applied on a peer.
//! - Writers at once, one on each of two (or three) nodes, over the same six keys, by
//!   turns in an order the seed picks, with a node cut off for a stretch of the odd
//!   seeds: the merges of concurrent writes of every kind (type clashes, a DEL or
//!   FLUSHALL against another region's writes, renames, pops, stream groups) must end
//!   in one state on every node, whatever order the deltas crossed in. Which state is
//!   the simulator's and the `*_replicated.rs` tests' business (they know the
//!   documented results); this test knows only that there must be one.
//!
//! Equal Merkle digests are not waited for: a key's tombstone lives on a node until it
//! knows its peers have it, which takes seconds longer than the removal itself
//! (docs/replication.md, `keyspace_digest`).

use std::time::{Duration, Instant};

use crate::common::cluster::Cluster;
use crate::rng::Rng;
use crate::{Side, Step, env_range, recovery, sequence, show_command};

/// Anti-entropy would repair what a wrong delta left: not within a run.
const CLUSTER_ARGS: &[&str] = &["--shards", "4", "--anti-entropy-interval-ms", "3600000"];
/// A write is batched for this long (`--repl-batch-ms`, 10 ms) before it is sent.
const BATCHED_AFTER: Duration = Duration::from_millis(30);
/// How long two nodes may read out differently once checked: a key whose TTL ends
/// between the two readouts differs for a moment.
const SETTLE: Duration = Duration::from_secs(2);
/// After a cut link heals, what it held is sent at once; a link the cut broke is
/// dialled again, which takes longer.
const SETTLE_AFTER_CUT: Duration = Duration::from_secs(20);
/// The concurrent sequences' seeds start here, away from the other tests' seeds.
const CONCURRENT_SEED_BASE: u64 = 1 << 20;

fn steps_per_seed() -> usize {
    std::env::var("MERIDIAN_FUZZ_STEPS").ok().map_or(300, |s| s.parse().expect("steps"))
}

fn call_all(side: &mut Side, commands: &[&[&str]]) {
    for args in commands {
        let args: Vec<Vec<u8>> = args.iter().map(|a| a.as_bytes().to_vec()).collect();
        side.call(&args).unwrap_or_else(|e| panic!("{}: {e}", show_command(&args)));
    }
}

fn connections(cluster: &Cluster) -> Vec<Side> {
    (0..cluster.nodes.len()).map(|node| Side::connect(&cluster.server(node).addr())).collect()
}

/// Every write the random sequences make reaches a peer as the same state: each seed's
/// sequence runs on one node of two, the first or the second by turns (replies are the
/// other test's business), and once nothing waits to be sent the peer must read out
/// exactly as the node that ran it, every 25 commands and at the end.
/// `MERIDIAN_FUZZ_REPLICA_SEEDS=A..B` (default `0..20`).
#[test]
fn a_peer_converges_to_the_state_each_random_sequence_leaves() {
    // Steps between two comparisons of the nodes.
    const PEER_CHECK_STEPS: usize = 25;
    let cluster = Cluster::start(2, CLUSTER_ARGS);
    // Even seeds write on the first node, odd ones on the second.
    let mut writers = connections(&cluster);
    // Readouts on connections of their own: the writer's may be inside MULTI.
    let mut readers = connections(&cluster);
    let seeds = env_range("MERIDIAN_FUZZ_REPLICA_SEEDS", 0..20);
    let mut report = Vec::new();
    for seed in seeds.clone() {
        let writer = &mut writers[(seed % 2) as usize];
        call_all(writer, &[&["DISCARD"], &["UNWATCH"], &["FLUSHALL"]]);
        for (i, step) in sequence(seed, steps_per_seed()).iter().enumerate() {
            if let Err(e) = writer.call(&step.args) {
                panic!("seed {seed}: the writer failed on {}: {e}", show_command(&step.args));
            }
            // Compared along the way too: a later write to a key can hide what an
            // earlier delta got wrong.
            if (i + 1) % PEER_CHECK_STEPS == 0
                && let Some(difference) = difference_once_idle(&cluster, &mut readers, SETTLE)
            {
                report.push(format!("seed {seed} (written on node {}), after step {}: {difference}", seed % 2 + 1, i + 1));
                break;
            }
        }
        // A sequence may end inside MULTI: nothing queued is written.
        call_all(writer, &[&["DISCARD"]]);
        if let Some(difference) = difference_once_idle(&cluster, &mut readers, SETTLE) {
            report.push(format!("seed {seed} (written on node {}), at its end: {difference}", seed % 2 + 1));
        }
    }
    eprintln!("replicated fuzz: seeds {seeds:?}, {} differ", report.len());
    assert!(report.is_empty(), "a peer's converged state differs:\n{}", report.join("\n"));
}

/// Two regions writing the same keys at once end in one state (the module comment):
/// each seed interleaves two random sequences, one sent to each node, and compares the
/// nodes every 50 commands and at the end once nothing waits to be sent. Odd seeds cut
/// a node off from its 100th to its 250th command, so that a stretch of each node's
/// writes meets the other's only after the heal.
/// `MERIDIAN_FUZZ_CONCURRENT_SEEDS=A..B` (default `0..10`).
#[test]
fn two_regions_writing_the_same_keys_at_once_converge() {
    regions_writing_the_same_keys_at_once_converge(2, env_range("MERIDIAN_FUZZ_CONCURRENT_SEEDS", 0..10));
}

/// The same with three regions, each writing: a node's writes also reach a third one
/// by way of the second (anti-entropy is off, but deltas are not relayed: each node
/// sends only its own writes), and the node cut off on odd seeds is one of three, so
/// the other two go on exchanging meanwhile.
/// `MERIDIAN_FUZZ_CONCURRENT3_SEEDS=A..B` (default `0..6`).
#[test]
fn three_regions_writing_the_same_keys_at_once_converge() {
    regions_writing_the_same_keys_at_once_converge(3, env_range("MERIDIAN_FUZZ_CONCURRENT3_SEEDS", 0..6));
}

fn regions_writing_the_same_keys_at_once_converge(nodes: usize, seeds: std::ops::Range<u64>) {
    const CHECK_STEPS: usize = 50;
    const CUT_STEPS: std::ops::Range<usize> = 100..250;
    let cluster = Cluster::start(nodes, CLUSTER_ARGS);
    let mut writers = connections(&cluster);
    let mut readers = connections(&cluster);
    let mut report = Vec::new();
    // Seeds that differed (each shrunk while at most `REPORTED_MAX`).
    let mut failing = 0;
    for seed in seeds.clone() {
        start_empty(&cluster, &mut writers, &mut readers);
        let base = CONCURRENT_SEED_BASE * (nodes as u64 - 1) + nodes as u64 * seed;
        let sequences: Vec<Vec<Step>> = (0..nodes).map(|node| sequence(base + node as u64, steps_per_seed())).collect();
        let mut next = vec![0usize; nodes];
        let (mut order, cut) = (Rng::new(seed), seed % 2 == 1);
        // The node cut off on odd seeds.
        let away = (seed / 2) as usize % nodes;
        let mut settle = SETTLE;
        // What was done, in order (for the shrinker).
        let mut events: Vec<Event> = Vec::new();
        for i in 0..sequences.iter().map(Vec::len).sum() {
            if cut && i == CUT_STEPS.start {
                cluster.isolate(away);
                events.push(Event::Isolate(away));
            }
            if cut && i == CUT_STEPS.end {
                cluster.rejoin(away);
                events.push(Event::Rejoin(away));
                settle = SETTLE_AFTER_CUT;
            }
            let picked = order.below(nodes);
            let node = (0..nodes).map(|k| (picked + k) % nodes).find(|&n| next[n] < sequences[n].len()).expect("steps remain");
            let step = &sequences[node][next[node]];
            next[node] += 1;
            events.push(Event::Write(node, step.clone()));
            if let Err(e) = writers[node].call(&step.args) {
                panic!("seed {seed}: node {} failed on {}: {e}", node + 1, show_command(&step.args));
            }
            if (i + 1) % CHECK_STEPS == 0 && !(cut && CUT_STEPS.contains(&i)) {
                if let Some(difference) = difference_once_idle(&cluster, &mut readers, settle) {
                    report.push(format!("seed {seed}, after step {}: {difference}", i + 1));
                    failing += 1;
                    if failing <= crate::REPORTED_MAX {
                        report.push(shrink(&cluster, &mut writers, &mut readers, events));
                    }
                    break;
                }
                events.push(Event::Settle);
            }
        }
        cluster.heal_all();
        for writer in &mut writers {
            call_all(writer, &[&["DISCARD"]]);
        }
        if let Some(difference) = difference_once_idle(&cluster, &mut readers, settle) {
            report.push(format!("seed {seed}, at its end: {difference}"));
        }
    }
    // A link that reconnects starts an anti-entropy round, which could repair what the
    // deltas left apart: say how often that happened.
    let connects: u64 = cluster
        .replication_info()
        .iter()
        .flat_map(|info| info.iter().filter(|(k, _)| k.starts_with("peer")).map(|(_, v)| v.clone()).collect::<Vec<_>>())
        .filter_map(|v| v.split(',').find_map(|f| f.strip_prefix("connects=").and_then(|n| n.parse::<u64>().ok())))
        .sum();
    eprintln!("concurrent replicated fuzz, {nodes} nodes: seeds {seeds:?}, {} differ; peer links connected {connects} times", report.len());
    assert!(report.is_empty(), "{nodes} nodes written at once did not converge:\n{}", report.join("\n"));
}

/// Every writer out of MULTI and WATCH, every node flushed, and all of them alike.
fn start_empty(cluster: &Cluster, writers: &mut [Side], readers: &mut [Side]) {
    for writer in writers.iter_mut() {
        call_all(writer, &[&["DISCARD"], &["UNWATCH"], &["FLUSHALL"]]);
    }
    if let Some(difference) = difference_once_idle(cluster, readers, SETTLE) {
        panic!("the nodes differ after FLUSHALL on each: {difference}");
    }
}

/// How every other node reads out against node 1 (through `readers`, one on each node)
/// once what was written has been batched, sent and acknowledged (`None`: alike). A
/// difference is read again until `settle` has passed before it counts.
fn difference_once_idle(cluster: &Cluster, readers: &mut [Side], settle: Duration) -> Option<String> {
    std::thread::sleep(BATCHED_AFTER);
    let deadline = Instant::now() + settle;
    loop {
        let idle = cluster.idle();
        let readouts: Vec<_> = readers.iter_mut().map(recovery::readout).collect();
        let difference = (1..readouts.len()).find_map(|node| {
            recovery::first_difference(&readouts[0], &readouts[node]).map(|d| format!("(before: node 1, after: node {}) {d}", node + 1))
        });
        if (idle && difference.is_none()) || Instant::now() >= deadline {
            return difference.or_else(|| (!idle).then(|| format!("a batch still waits to be sent after {settle:?}")));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A settle for the shrinker's tries: short, since a cut this short breaks no link.
const SETTLE_TRY: Duration = Duration::from_secs(5);

/// One thing a concurrent run did, as the shrinker replays it.
#[derive(Clone)]
enum Event {
    Write(usize, Step),
    Isolate(usize),
    Rejoin(usize),
    CutAll,
    HealAll,
    /// Wait until nothing waits to be sent (where the run compared the nodes).
    Settle,
}

/// Replay `events` from empty databases, then heal every link: the difference the
/// nodes are left with, if any.
fn replay(cluster: &Cluster, writers: &mut [Side], readers: &mut [Side], events: &[Event]) -> Option<String> {
    start_empty(cluster, writers, readers);
    for event in events {
        match event {
            Event::Write(node, step) => {
                writers[*node].call(&step.args).unwrap_or_else(|e| panic!("node {} failed on {}: {e}", node + 1, show_command(&step.args)));
            }
            Event::Isolate(node) => cluster.isolate(*node),
            Event::Rejoin(node) => cluster.rejoin(*node),
            Event::CutAll => cluster.partition_all(),
            Event::HealAll => cluster.heal_all(),
            Event::Settle => {
                std::thread::sleep(BATCHED_AFTER);
                crate::common::eventually(SETTLE, || cluster.idle());
            }
        }
    }
    cluster.heal_all();
    for writer in writers.iter_mut() {
        call_all(writer, &[&["DISCARD"]]);
    }
    difference_once_idle(cluster, readers, SETTLE_TRY)
}

/// The fewest writes (each with the node it went to) that still leave the nodes apart,
/// as lines for the report: replayed first with every link cut throughout (every write
/// of one node concurrent with every write of the others, so the result does not
/// depend on when batches left), else in the run's own schedule (its cut and its waits
/// kept, the writes between them dropped one chunk at a time).
fn shrink(cluster: &Cluster, writers: &mut [Side], readers: &mut [Side], schedule: Vec<Event>) -> String {
    let writes = schedule.iter().filter(|e| matches!(e, Event::Write(..))).cloned();
    let cut_throughout: Vec<Event> = std::iter::once(Event::CutAll).chain(writes).chain(std::iter::once(Event::HealAll)).collect();
    let (mut events, mut found, how) = if let Some(found) = replay(cluster, writers, readers, &cut_throughout) {
        (cut_throughout, found, "with the links cut throughout")
    } else if let Some(found) = replay(cluster, writers, readers, &schedule) {
        (schedule, found, "in the run's own schedule")
    } else {
        return "  (not shown again when replayed: timing-dependent)".into();
    };
    let mut chunk = (events.len() / 2).max(1);
    while chunk >= 1 {
        let mut start = 0;
        while start < events.len() {
            let end = (start + chunk).min(events.len());
            // Only writes are dropped: the schedule's cuts and waits stay.
            let fewer: Vec<Event> = events
                .iter()
                .enumerate()
                .filter(|(i, e)| !((start..end).contains(i) && matches!(e, Event::Write(..))))
                .map(|(_, e)| e.clone())
                .collect();
            if fewer.len() == events.len() {
                start = end;
                continue;
            }
            match replay(cluster, writers, readers, &fewer) {
                Some(difference) => {
                    events = fewer;
                    found = difference;
                }
                None => start = end,
            }
        }
        chunk /= 2;
    }
    let mut lines = String::from("  shown again ") + how + ":\n";
    for event in &events {
        lines += &match event {
            Event::Write(node, step) => format!("    node {}: {}\n", node + 1, show_command(&step.args)),
            Event::Isolate(node) => format!("    (node {} cut off)\n", node + 1),
            Event::Rejoin(node) => format!("    (node {} back)\n", node + 1),
            Event::CutAll => "    (every link cut)\n".into(),
            Event::HealAll => "    (every link back)\n".into(),
            Event::Settle => "    (wait until nothing waits to be sent)\n".into(),
        };
    }
    lines + &format!("  then: {found}")
}
