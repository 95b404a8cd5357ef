//! The random sequences on two replicating nodes (anti-entropy off, so that nothing
//! repairs what a wrong delta left): whatever they write, once nothing waits to be sent
//! both nodes must read out alike (`recovery::readout`: every key, its type, TTL
//! presence and whole content, what each node derives from the key states included).
//! - One writer: every kind of write the generator makes is also checked as a delta
//!   applied on a peer.
//! - Two writers at once, one on each node, over the same six keys, by turns in an
//!   order the seed picks, with both links cut for a stretch of the odd seeds: the
//!   merges of concurrent writes of every kind (type clashes, a DEL or FLUSHALL against
//!   another region's writes, renames, pops, stream groups) must end in one state on
//!   both nodes, whatever order the deltas crossed in. Which state is the simulator's
//!   and the `*_replicated.rs` tests' business (they know the documented results); this
//!   test knows only that there must be one.
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

fn connections(cluster: &Cluster) -> [Side; 2] {
    [Side::connect(&cluster.server(0).addr()), Side::connect(&cluster.server(1).addr())]
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
/// both links from their 100th to their 250th command, so that a stretch of each
/// node's writes meets the other's only after the heal.
/// `MERIDIAN_FUZZ_CONCURRENT_SEEDS=A..B` (default `0..10`).
#[test]
fn two_regions_writing_the_same_keys_at_once_converge() {
    const CHECK_STEPS: usize = 50;
    const CUT_STEPS: std::ops::Range<usize> = 100..250;
    let cluster = Cluster::start(2, CLUSTER_ARGS);
    let mut writers = connections(&cluster);
    let mut readers = connections(&cluster);
    let seeds = env_range("MERIDIAN_FUZZ_CONCURRENT_SEEDS", 0..10);
    let mut report = Vec::new();
    for seed in seeds.clone() {
        for writer in &mut writers {
            call_all(writer, &[&["DISCARD"], &["UNWATCH"], &["FLUSHALL"]]);
        }
        if let Some(difference) = difference_once_idle(&cluster, &mut readers, SETTLE) {
            panic!("seed {seed}: the nodes differ after FLUSHALL on both: {difference}");
        }
        let sequences = [0, 1].map(|node| sequence(CONCURRENT_SEED_BASE + 2 * seed + node, steps_per_seed()));
        let mut next = [0usize; 2];
        let (mut order, cut) = (Rng::new(seed), seed % 2 == 1);
        let mut settle = SETTLE;
        // What was sent, in order, with the node it went to (for the shrinker).
        let mut sent: Vec<(usize, Step)> = Vec::new();
        for i in 0..sequences[0].len() + sequences[1].len() {
            if cut && i == CUT_STEPS.start {
                cluster.partition_all();
            }
            if cut && i == CUT_STEPS.end {
                cluster.heal_all();
                settle = SETTLE_AFTER_CUT;
            }
            let node = match order.below(2) {
                node if next[node] < sequences[node].len() => node,
                node => 1 - node,
            };
            let step = &sequences[node][next[node]];
            next[node] += 1;
            sent.push((node, step.clone()));
            if let Err(e) = writers[node].call(&step.args) {
                panic!("seed {seed}: node {} failed on {}: {e}", node + 1, show_command(&step.args));
            }
            if (i + 1) % CHECK_STEPS == 0
                && !(cut && CUT_STEPS.contains(&i))
                && let Some(difference) = difference_once_idle(&cluster, &mut readers, settle)
            {
                report.push(format!("seed {seed}, after step {}: {difference}", i + 1));
                if report.len() <= crate::REPORTED_MAX {
                    report.push(shrink(&cluster, &mut writers, &mut readers, sent.clone()));
                }
                break;
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
    eprintln!("concurrent replicated fuzz: seeds {seeds:?}, {} differ; peer links connected {connects} times", report.len());
    assert!(report.is_empty(), "two nodes written at once did not converge:\n{}", report.join("\n"));
}

/// How node 2 reads out against node 1 (through `readers`, one on each node) once what
/// was written has been batched, sent and acknowledged (`None`: alike). A difference is
/// read again until `settle` has passed before it counts.
fn difference_once_idle(cluster: &Cluster, readers: &mut [Side; 2], settle: Duration) -> Option<String> {
    std::thread::sleep(BATCHED_AFTER);
    let deadline = Instant::now() + settle;
    loop {
        let idle = cluster.idle();
        let [first, second] = readers;
        let difference = recovery::first_difference(&recovery::readout(first), &recovery::readout(second));
        if (idle && difference.is_none()) || Instant::now() >= deadline {
            return difference
                .map(|d| format!("(before: node 1, after: node 2) {d}"))
                .or_else(|| (!idle).then(|| format!("a batch still waits to be sent after {settle:?}")));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A settle for the shrinker's tries: short, since a cut this short breaks no link.
const SETTLE_TRY: Duration = Duration::from_secs(3);

/// Run `steps` from empty databases with both links cut, then heal: every write of one
/// node is concurrent with every write of the other, so whether they converge no
/// longer depends on when batches left. The difference, if they do not.
fn difference_cut_throughout(
    cluster: &Cluster,
    writers: &mut [Side; 2],
    readers: &mut [Side; 2],
    steps: &[(usize, Step)],
) -> Option<String> {
    for writer in writers.iter_mut() {
        call_all(writer, &[&["DISCARD"], &["UNWATCH"], &["FLUSHALL"]]);
    }
    if let Some(difference) = difference_once_idle(cluster, readers, SETTLE) {
        panic!("the nodes differ after FLUSHALL on both: {difference}");
    }
    cluster.partition_all();
    for (node, step) in steps {
        writers[*node].call(&step.args).unwrap_or_else(|e| panic!("node {} failed on {}: {e}", node + 1, show_command(&step.args)));
    }
    cluster.heal_all();
    for writer in writers.iter_mut() {
        call_all(writer, &[&["DISCARD"]]);
    }
    difference_once_idle(cluster, readers, SETTLE_TRY)
}

/// The fewest commands (each with the node it went to) that still leave the two nodes
/// apart when run with the links cut throughout, as lines for the report; or a line
/// saying that cutting the links throughout does not show it.
fn shrink(cluster: &Cluster, writers: &mut [Side; 2], readers: &mut [Side; 2], mut steps: Vec<(usize, Step)>) -> String {
    let Some(mut found) = difference_cut_throughout(cluster, writers, readers, &steps) else {
        return "  (not shown again with the links cut throughout: timing-dependent)".into();
    };
    let mut chunk = (steps.len() / 2).max(1);
    while chunk >= 1 {
        let mut start = 0;
        while start < steps.len() {
            let end = (start + chunk).min(steps.len());
            let mut fewer = steps[..start].to_vec();
            fewer.extend_from_slice(&steps[end..]);
            match difference_cut_throughout(cluster, writers, readers, &fewer) {
                Some(difference) => {
                    steps = fewer;
                    found = difference;
                }
                None => start = end,
            }
        }
        chunk /= 2;
    }
    let mut lines = format!("  {} command(s) show it with the links cut throughout:\n", steps.len());
    for (node, step) in &steps {
        lines += &format!("    node {}: {}\n", node + 1, show_command(&step.args));
    }
    lines + &format!("  then: {found}")
}
