//! What a graph costs a shard in memory, byte-exact, and what its bulk load costs the
//! shard's thread: the statements `docker-benchmark/bench-graph.py` sends, applied to
//! one shard in process (no network, no client), with the server's allocator. Memory
//! is jemalloc's `stats.allocated` (deterministic for a given build), split into the
//! stored elements and the decoded view a shard keeps for queries; the bench script's
//! RSS figure adds the allocator's page overhead and the process's buffers.
//!
//! The graph has the bench's shape (uniform sources, Zipf destinations, no loops or
//! parallel edges), from its own seeded generator: the same sizes, not the same edges.
//!
//! Run: `cargo run --release --example graph_memory -- [SCALE] [nodes]`
//! (`SCALE` 1 is 100,000 nodes and 1,000,000 edges; `nodes` loads the nodes only, the
//! run to put under `valgrind --tool=callgrind` for the node load path).

use std::collections::HashSet;

use bytes::Bytes;
use meridian::command::KeyCommand;
use meridian::command::graph::GraphCommand;
use meridian::engine::graph::store::GraphView;
use meridian::engine::kv::collection_writes::Part;
use meridian::engine::kv::key_hash;
use meridian::shard::{Shard, ShardConfig, ShardOp, ShardReply};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

const KEY: &[u8] = b"bench";
const NODE_BATCH: usize = 10_000;
const EDGE_BATCH: usize = 5_000;

fn allocated() -> usize {
    tikv_jemalloc_ctl::epoch::advance().expect("jemalloc epoch");
    tikv_jemalloc_ctl::stats::allocated::read().expect("jemalloc stats")
}

fn query(shard: &mut Shard, text: String, now_ms: u64) {
    let op = ShardOp::Key(KeyCommand::Graph(GraphCommand::Query {
        key: Bytes::from_static(KEY),
        query: Bytes::from(text),
        read_only: false,
        compact: false,
    }));
    match shard.apply(op, now_ms) {
        ShardReply::Frame(meridian::protocol::Frame::Error(e)) => panic!("query failed: {e:?}"),
        ShardReply::Frame(_) => {}
        other => panic!("unexpected reply {other:?}"),
    }
    // Persistence drains the delta log as the writes come (the server's streamer).
    std::hint::black_box(shard.drain_deltas());
}

/// Uniform sources, Zipf (exponent 1) destinations over a shuffled node order.
fn generate(nodes: usize, edges: usize, seed: u64) -> Vec<(usize, usize)> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut order: Vec<usize> = (0..nodes).collect();
    for i in (1..nodes).rev() {
        order.swap(i, rng.random_range(0..=i));
    }
    let mut cumulative = Vec::with_capacity(nodes);
    let mut total = 0.0f64;
    for rank in 0..nodes {
        total += 1.0 / (rank + 1) as f64;
        cumulative.push(total);
    }
    let (mut seen, mut out) = (HashSet::new(), Vec::with_capacity(edges));
    while out.len() < edges {
        let x = rng.random::<f64>() * total;
        let d = order[cumulative.partition_point(|c| *c < x).min(nodes - 1)];
        let s = rng.random_range(0..nodes);
        if s != d && seen.insert((s, d)) {
            out.push((s, d));
        }
    }
    out
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let scale: f64 = args.get(1).map_or(1.0, |s| s.parse().expect("SCALE is a number"));
    let nodes_only = args.get(2).is_some_and(|a| a == "nodes");
    let (nodes, edges) = ((100_000.0 * scale) as usize, (1_000_000.0 * scale) as usize);
    let edge_list = if nodes_only { Vec::new() } else { generate(nodes, edges, 20) };

    let mut config = ShardConfig::new(0, 1);
    config.record_deltas = true;
    let mut shard = Shard::new(config);
    let mut now_ms = 1_000;
    let base = allocated();
    query(&mut shard, "CREATE INDEX FOR (n:N) ON (n.i)".to_owned(), now_ms);
    let started = std::time::Instant::now();
    for a in (0..nodes).step_by(NODE_BATCH) {
        let b = (a + NODE_BATCH).min(nodes) - 1;
        now_ms += 1;
        query(&mut shard, format!("UNWIND range({a}, {b}) AS i CREATE (:N {{i: i}})"), now_ms);
    }
    let node_s = started.elapsed().as_secs_f64();
    let after_nodes = allocated();
    println!(
        "{nodes} nodes: {:.0} nodes/s in process, {:.1} B/node allocated",
        nodes as f64 / node_s,
        (after_nodes - base) as f64 / nodes as f64
    );
    if nodes_only {
        return;
    }
    let started = std::time::Instant::now();
    for batch in edge_list.chunks(EDGE_BATCH) {
        let pairs: Vec<String> = batch.iter().map(|(s, d)| format!("[{s},{d}]")).collect();
        now_ms += 1;
        query(
            &mut shard,
            format!("UNWIND [{}] AS p MATCH (a:N {{i: p[0]}}), (b:N {{i: p[1]}}) CREATE (a)-[:E]->(b)", pairs.join(",")),
            now_ms,
        );
    }
    let edge_s = started.elapsed().as_secs_f64();
    let loaded = allocated();
    shard.kv.graph_views = Default::default();
    let elements_only = allocated();
    let view = {
        let state = shard.kv.live(KEY, key_hash(KEY), now_ms).expect("the graph is there");
        GraphView::load(state.part(Part::Graph))
    };
    let with_view = allocated();
    assert_eq!((view.nodes.len(), view.edge_count()), (nodes, edges), "every node and edge is in the view");
    let per = |bytes: usize| bytes as f64 / edges as f64;
    println!("{edges} edges: {:.0} edges/s in process", edges as f64 / edge_s);
    println!("allocated after the load: {:.1} MiB, {:.1} B/edge", (loaded - base) as f64 / 1048576.0, per(loaded - base));
    println!("  elements (the key):     {:.1} MiB, {:.1} B/edge", (elements_only - base) as f64 / 1048576.0, per(elements_only - base));
    println!(
        "  decoded view:           {:.1} MiB, {:.1} B/edge",
        (with_view - elements_only) as f64 / 1048576.0,
        per(with_view - elements_only)
    );
}
