//! Measures the HNSW core alone (docs/vector.md, "ANN core"): no server, no network,
//! one thread. Builds the graph over the MiniLM documents, then searches it at several
//! EF_RUNTIME values and prints inserts/s, recall@10 against the exact top 10, and
//! microseconds per query.
//!
//! cargo run --release --example vector_hnsw -- [DOCS] [DATA_DIR] [f32|f16]
//!
//! DOCS defaults to all 50,000; DATA_DIR to ../shared/data/minilm-docs. With fewer
//! documents the exact top 10 is computed here (by scan), so recall stays meaningful.

use std::time::Instant;

use meridian::engine::kv::keyspace::key_hash;
use meridian::engine::vector::distance::{Metric, normalize};
use meridian::engine::vector::hnsw::VectorStore;
use meridian::engine::vector::schema::ElementType;

#[path = "common/minilm.rs"]
mod minilm;

use minilm::DIM;

const K: usize = 10;
const QUERIES: usize = 1_000;

/// Rows of a MiniLM file, normalised (the store keeps COSINE vectors normalised).
fn read_normalised(path: &str, limit: usize) -> Vec<Vec<f32>> {
    let mut rows = minilm::read_rows(path, limit);
    rows.iter_mut().for_each(|v| normalize(v));
    rows
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let docs: usize = args.get(1).map_or(50_000, |a| a.parse().expect("DOCS is a number"));
    let dir = args.get(2).cloned().unwrap_or_else(|| "../shared/data/minilm-docs".into());
    let element = match args.get(3).map(String::as_str) {
        Some("f16") => ElementType::Float16,
        _ => ElementType::Float32,
    };
    let base = read_normalised(&format!("{dir}/base.f16"), docs);
    let queries = read_normalised(&format!("{dir}/queries.f16"), QUERIES);

    let mut store = VectorStore::new(DIM, Metric::Cosine, element, true, 16, 200, base.len());
    let start = Instant::now();
    for (i, v) in base.iter().enumerate() {
        store.insert(v, key_hash(format!("d:{i}").as_bytes()));
    }
    let build_s = start.elapsed().as_secs_f64();
    println!(
        "{} documents, M 16, EF_CONSTRUCTION 200, {element:?}: {:.0} inserts/s ({build_s:.2} s)",
        base.len(),
        base.len() as f64 / build_s
    );

    // The exact top 10 by scan over the same store (same kernels, same data).
    let truth: Vec<Vec<u32>> =
        queries.iter().map(|q| store.search_exact(q, K, 0..store.slots() as u32).iter().map(|n| n.1).collect()).collect();
    for ef in [10, 20, 40, 80, 160] {
        let start = Instant::now();
        let mut hits = 0;
        for (q, t) in queries.iter().zip(&truth) {
            let found = store.search_graph(q, K, ef, |_| true);
            hits += found.iter().filter(|n| t.contains(&n.1)).count();
        }
        let us = start.elapsed().as_secs_f64() * 1e6 / queries.len() as f64;
        let recall = hits as f64 / (queries.len() * K) as f64;
        println!("  EF_RUNTIME {ef:4}  recall@10 {recall:.3}  {us:7.1} us/query");
    }
}
