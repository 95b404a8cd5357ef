//! The graph's recall, deletes, filters and the walk over codes.

use super::*;
use rand::{Rng, SeedableRng};

fn random_vectors(n: usize, dim: usize, seed: u64) -> Vec<Vec<f32>> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    (0..n).map(|_| (0..dim).map(|_| rng.random_range(-1.0f32..1.0)).collect()).collect()
}

#[test]
fn graph_search_finds_most_true_neighbours_and_never_a_deleted_slot() {
    let dim = 16;
    let data = random_vectors(2_000, dim, 7);
    let mut store = VectorStore::new(dim, Metric::L2, ElementType::Float32, true, 16, 100, 0);
    for (i, v) in data.iter().enumerate() {
        store.insert(v, crate::engine::kv::key_hash(format!("k{i}").as_bytes()));
    }
    for slot in (0..2_000).step_by(3) {
        store.delete(slot);
    }
    let queries = random_vectors(50, dim, 8);
    let mut hits = 0;
    for q in &queries {
        let exact = store.search_exact(q, 10, 0..store.slots() as u32);
        let found = store.search_graph(q, 10, 64, |_| true);
        assert!(found.iter().all(|n| n.1 % 3 != 0), "a deleted slot was returned");
        hits += found.iter().filter(|n| exact.contains(n)).count();
    }
    let recall = hits as f64 / 500.0;
    assert!(recall > 0.9, "recall {recall}");
}

#[test]
fn a_walk_over_codes_answers_with_exact_distances_in_exact_order_for_every_metric() {
    let dim = 48;
    let data = random_vectors(1_500, dim, 11);
    let queries = random_vectors(40, dim, 12);
    for metric in [Metric::L2, Metric::Ip, Metric::Cosine] {
        for element in [ElementType::Float32, ElementType::Float16] {
            let normalised = |v: &Vec<f32>| {
                let mut v = v.clone();
                if metric == Metric::Cosine {
                    crate::engine::vector::distance::normalize(&mut v);
                }
                v
            };
            // The same graph walked over the vectors themselves: the codes may lose
            // a little recall against it, never much.
            let build = |codes: bool| {
                let mut store = VectorStore::new(dim, metric, element, true, 12, 80, 0);
                if !codes {
                    store.codes = None;
                }
                for (i, v) in data.iter().enumerate() {
                    store.insert(&normalised(v), crate::engine::kv::key_hash(format!("k{i}").as_bytes()));
                }
                store
            };
            let recall = |store: &mut VectorStore| {
                let mut hits = 0;
                for q in queries.iter().map(normalised) {
                    let found = store.search_graph(&q, 10, 40, |_| true);
                    assert_eq!(found.len(), 10);
                    for pair in found.windows(2) {
                        assert!(pair[0] < pair[1], "{metric:?} {element:?}: not in order");
                    }
                    for n in &found {
                        assert_eq!(n.0, store.distance_to(&q, n.1), "{metric:?} {element:?}: a coded distance leaked");
                    }
                    let exact = store.search_exact(&q, 10, 0..store.slots() as u32);
                    hits += found.iter().filter(|n| exact.contains(n)).count();
                }
                hits as f64 / 400.0
            };
            let (coded, plain) = (recall(&mut build(true)), recall(&mut build(false)));
            assert!(coded >= plain - 0.03 && coded > 0.8, "{metric:?} {element:?}: recall {coded} over codes, {plain} without");
        }
    }
}

#[test]
fn a_filtered_graph_search_returns_only_accepted_slots() {
    let data = random_vectors(500, 8, 9);
    let mut store = VectorStore::new(8, Metric::Cosine, ElementType::Float32, true, 8, 50, 0);
    for (i, v) in data.iter().enumerate() {
        store.insert(v, (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    }
    let found = store.search_graph(&data[0], 10, 20, |slot| slot % 7 == 0);
    assert!(!found.is_empty() && found.iter().all(|n| n.1 % 7 == 0));
}
