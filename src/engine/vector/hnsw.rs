//! The vector store of one index on one shard: vectors by slot, and for HNSW the
//! navigable small-world graph over them. FLAT is the same store without the graph.
//!
//! Owns slots, links and the search (the walks themselves: `hnsw/walk.rs`). Never
//! decides which document a slot is (the index's doc table does) and draws no
//! randomness: a node's level comes from the hash of its key, handed in, so the same
//! inserts in the same order build the same graph.
//!
//! Delete is a mark: a deleted slot still routes searches (its links keep the graph
//! navigable) but is never returned; an update is a delete plus an insert. The index
//! rebuilds the store once deleted slots outnumber live ones (`needs_compaction`), so
//! the dead weight stays bounded.

use std::cmp::Ordering;

use half::f16;

use crate::engine::huge_pages::HugePages;

use super::distance::{Kernels, Metric, kernels};
use super::quant::Codes;
use super::schema::ElementType;
use walk::{Coded, Exact, Scratch};

/// A (distance, slot) pair ordered by distance, then slot (total and deterministic).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Near(pub f32, pub u32);

impl Eq for Near {}
impl PartialOrd for Near {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Near {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0).then(self.1.cmp(&other.1))
    }
}

/// Highest layer a node may get (a level from a 64-bit hash never gets near it).
const LEVEL_MAX: usize = 16;
/// Deleted slots tolerated before compaction, besides "more than live ones".
const COMPACT_SLACK: usize = 1024;

/// The vectors of a store, slot after slot: f32, or FLOAT16 kept at two bytes a
/// dimension (widened in the distance kernels, never in memory).
enum Elements {
    F32(Vec<f32>),
    F16(Vec<f16>),
}

pub struct VectorStore {
    dim: usize,
    metric: Metric,
    /// The CPU's kernels, looked up once when the store is made.
    kernels: &'static Kernels,
    graph: bool,
    m: usize,
    m0: usize,
    ef_construction: usize,
    level_mult: f64,
    elements: Elements,
    /// The vectors' eight-bit codes, which a KNN walk reads (`quant.rs`); `None` for
    /// FLAT, which scans the vectors themselves.
    codes: Option<Codes>,
    levels: Vec<u8>,
    /// Layer 0's links, every slot's in one array (hnswlib's layout): slot `s` owns
    /// `layer0[s * (m0 + 1)..][..m0 + 1]`, its count first, then up to `m0` neighbours.
    /// A walk finds a list with one read instead of two pointer hops. Empty for FLAT.
    layer0: Vec<u32>,
    /// `upper[slot][layer - 1]`: the slot's neighbours on layers 1 and up (no list for
    /// the ~(M-1)/M of slots that live on layer 0 alone). Empty for FLAT.
    upper: Vec<Vec<Vec<u32>>>,
    deleted: Vec<bool>,
    deleted_count: usize,
    /// The vectors' and layer 0's buffers as last advised for huge pages (`huge_pages.rs`).
    huge_elements: HugePages,
    huge_layer0: HugePages,
    entry: Option<u32>,
    top_level: usize,
    /// Visit marks and heaps, reused from search to search (no allocation per search
    /// once they have grown).
    scratch: Scratch,
}

impl VectorStore {
    pub fn new(
        dim: usize,
        metric: Metric,
        element: ElementType,
        graph: bool,
        m: usize,
        ef_construction: usize,
        capacity: usize,
    ) -> VectorStore {
        let capacity = capacity.min(1 << 20);
        let elements = match element {
            ElementType::Float32 => Elements::F32(Vec::with_capacity(capacity * dim)),
            ElementType::Float16 => Elements::F16(Vec::with_capacity(capacity * dim)),
        };
        VectorStore {
            dim,
            metric,
            kernels: kernels(),
            graph,
            m,
            m0: 2 * m,
            ef_construction,
            level_mult: 1.0 / (m.max(2) as f64).ln(),
            elements,
            codes: graph.then(|| Codes::new(dim, metric, capacity)),
            levels: Vec::with_capacity(capacity),
            layer0: Vec::with_capacity(if graph { capacity * (2 * m + 1) } else { 0 }),
            upper: Vec::with_capacity(if graph { capacity } else { 0 }),
            deleted: Vec::with_capacity(capacity),
            deleted_count: 0,
            huge_elements: HugePages::default(),
            huge_layer0: HugePages::default(),
            entry: None,
            top_level: 0,
            scratch: Scratch::default(),
        }
    }

    pub fn slots(&self) -> usize {
        self.levels.len()
    }

    pub fn live(&self) -> usize {
        self.slots() - self.deleted_count
    }

    pub fn is_deleted(&self, slot: u32) -> bool {
        self.deleted[slot as usize]
    }

    fn range(&self, slot: u32) -> std::ops::Range<usize> {
        let start = slot as usize * self.dim;
        start..start + self.dim
    }

    /// The stored vector of `slot`, widened to f32 (for audits and tests).
    pub fn vector_f32(&self, slot: u32) -> Vec<f32> {
        let range = self.range(slot);
        match &self.elements {
            Elements::F32(v) => v[range].to_vec(),
            Elements::F16(v) => v[range].iter().map(|x| x.to_f32()).collect(),
        }
    }

    /// Bytes the vectors and links take (FT.INFO's `vector_index_sz_mb`).
    pub fn memory_bytes(&self) -> usize {
        let upper: usize = self.upper.iter().map(|l| l.capacity() * 24 + l.iter().map(|l| l.capacity() * 4).sum::<usize>()).sum();
        let links = self.layer0.capacity() * 4 + self.upper.capacity() * 24 + upper;
        let vectors = match &self.elements {
            Elements::F32(v) => v.capacity() * 4,
            Elements::F16(v) => v.capacity() * 2,
        };
        let codes = self.codes.as_ref().map_or(0, Codes::memory_bytes);
        vectors + codes + self.levels.capacity() * 2 + links
    }

    pub fn needs_compaction(&self) -> bool {
        self.deleted_count > COMPACT_SLACK && self.deleted_count > self.live()
    }

    pub fn delete(&mut self, slot: u32) {
        debug_assert!(!self.deleted[slot as usize], "slot {slot} deleted twice");
        self.deleted[slot as usize] = true;
        self.deleted_count += 1;
    }

    fn level_for(&self, key_hash: u64) -> usize {
        // A uniform draw in (0, 1] from the top 53 bits of the key's hash.
        let u = ((key_hash >> 11) + 1) as f64 / (1u64 << 53) as f64;
        ((-u.ln() * self.level_mult) as usize).min(LEVEL_MAX)
    }

    /// The distance from a query (f32, normalised for COSINE) to a stored vector.
    #[inline]
    fn distance_to(&self, query: &[f32], slot: u32) -> f32 {
        let (k, range) = (self.kernels, self.range(slot));
        match (&self.elements, self.metric) {
            (Elements::F32(v), Metric::L2) => (k.l2)(&v[range], query),
            (Elements::F32(v), Metric::Ip | Metric::Cosine) => 1.0 - (k.dot)(&v[range], query),
            (Elements::F16(v), Metric::L2) => (k.l2_f16)(&v[range], query),
            (Elements::F16(v), Metric::Ip | Metric::Cosine) => 1.0 - (k.dot_f16)(&v[range], query),
        }
    }

    /// The distance between two stored vectors that links are chosen by: their codes'
    /// where the store has codes (an insert's walk measured its candidates so too, and
    /// one pruning compares them with these), else the vectors'.
    #[inline]
    fn link_distance(&self, a: u32, b: u32) -> f32 {
        match &self.codes {
            Some(codes) => codes.distance_between(a, b),
            None => self.distance_between(a, b),
        }
    }

    /// The distance between two stored vectors.
    #[inline]
    fn distance_between(&self, a: u32, b: u32) -> f32 {
        let (k, ra, rb) = (self.kernels, self.range(a), self.range(b));
        match (&self.elements, self.metric) {
            (Elements::F32(v), Metric::L2) => (k.l2)(&v[ra], &v[rb]),
            (Elements::F32(v), Metric::Ip | Metric::Cosine) => 1.0 - (k.dot)(&v[ra], &v[rb]),
            (Elements::F16(v), Metric::L2) => (k.l2_f16_f16)(&v[ra], &v[rb]),
            (Elements::F16(v), Metric::Ip | Metric::Cosine) => 1.0 - (k.dot_f16_f16)(&v[ra], &v[rb]),
        }
    }

    /// Store a vector (already normalised for COSINE) and link it into the graph.
    pub fn insert(&mut self, vector: &[f32], key_hash: u64) -> u32 {
        assert_eq!(vector.len(), self.dim);
        let slot = u32::try_from(self.slots()).expect("fewer than 2^32 slots per shard index");
        let level = if self.graph { self.level_for(key_hash) } else { 0 };
        match &mut self.elements {
            Elements::F32(v) => {
                v.extend_from_slice(vector);
                self.huge_elements.follow(v);
            }
            Elements::F16(v) => {
                v.extend(vector.iter().map(|&x| f16::from_f32(x)));
                self.huge_elements.follow(v);
            }
        }
        let coded = self.codes.as_mut().map(|codes| codes.push(vector));
        self.levels.push(level as u8);
        self.deleted.push(false);
        if !self.graph {
            return slot;
        }
        self.layer0.extend(std::iter::repeat_n(0, self.m0 + 1));
        self.huge_layer0.follow(&self.layer0);
        self.upper.push(vec![Vec::new(); level]);
        let Some(entry) = self.entry else {
            self.entry = Some(slot);
            self.top_level = level;
            return slot;
        };
        // The walks read codes where the store has them (as a KNN does), and the links
        // are chosen by code distances too (`link_distance`): a link only has to point
        // the right way, and an exact re-measure of each layer's `ef_construction`
        // candidates and of every pruned list cost more than the walk itself.
        let mut nearest = match (&self.codes, &coded) {
            (Some(codes), Some(q)) => Near(codes.distance(q, entry), entry),
            _ => Near(self.distance_to(vector, entry), entry),
        };
        for layer in (level + 1..=self.top_level).rev() {
            nearest = match (&self.codes, &coded) {
                (Some(codes), Some(q)) => self.greedy(&Coded(codes, q), nearest, layer),
                _ => self.greedy(&Exact(vector), nearest, layer),
            };
        }
        let mut entries = vec![nearest];
        for layer in (0..=level.min(self.top_level)).rev() {
            let mut scratch = std::mem::take(&mut self.scratch);
            let found = match (&self.codes, &coded) {
                (Some(codes), Some(q)) => {
                    self.search_layer(&mut scratch, &Coded(codes, q), &entries, self.ef_construction, layer, |_| true)
                }
                _ => self.search_layer(&mut scratch, &Exact(vector), &entries, self.ef_construction, layer, |_| true),
            };
            self.scratch = scratch;
            let chosen = self.select(&found, self.m);
            self.set_neighbours(slot, layer, chosen.iter().map(|n| n.1));
            for &Near(d, neighbour) in &chosen {
                // The distance is symmetric: the neighbour's to `slot` is `d`.
                self.add_link(neighbour, layer, Near(d, slot));
            }
            entries = found;
        }
        if level > self.top_level {
            self.top_level = level;
            self.entry = Some(slot);
        }
        slot
    }

    /// Most links a slot keeps on `layer`.
    fn width(&self, layer: usize) -> usize {
        if layer == 0 { self.m0 } else { self.m }
    }

    /// The neighbours of `slot` on `layer`.
    #[inline]
    fn neighbours(&self, slot: u32, layer: usize) -> &[u32] {
        if layer == 0 {
            let at = slot as usize * (self.m0 + 1);
            let count = self.layer0[at] as usize;
            &self.layer0[at + 1..at + 1 + count]
        } else {
            &self.upper[slot as usize][layer - 1]
        }
    }

    /// Replace the neighbours of `slot` on `layer` (at most `width(layer)` of them).
    fn set_neighbours(&mut self, slot: u32, layer: usize, neighbours: impl ExactSizeIterator<Item = u32>) {
        let count = neighbours.len();
        assert!(count <= self.width(layer), "{count} links on layer {layer}");
        if layer == 0 {
            let at = slot as usize * (self.m0 + 1);
            self.layer0[at] = count as u32;
            for (cell, n) in self.layer0[at + 1..].iter_mut().zip(neighbours) {
                *cell = n;
            }
        } else {
            let list = &mut self.upper[slot as usize][layer - 1];
            list.clear();
            list.extend(neighbours);
        }
    }

    /// Link `node` to `new` on `layer`; when its list is full, keep the most useful
    /// `width` of the old ones and `new` (the selection heuristic). `new` carries its
    /// distance (computed by the insert's search already; not computed again).
    fn add_link(&mut self, node: u32, layer: usize, new: Near) {
        let width = self.width(layer);
        let current = self.neighbours(node, layer);
        if current.len() < width {
            if layer == 0 {
                let at = node as usize * (self.m0 + 1);
                let count = self.layer0[at] as usize;
                self.layer0[at + 1 + count] = new.1;
                self.layer0[at] += 1;
            } else {
                self.upper[node as usize][layer - 1].push(new.1);
            }
            return;
        }
        let mut near: Vec<Near> = current.iter().map(|&n| Near(self.link_distance(node, n), n)).collect();
        near.push(new);
        near.sort_unstable();
        let kept = self.select(&near, width);
        self.set_neighbours(node, layer, kept.iter().map(|n| n.1));
    }

    /// HNSW's neighbour selection heuristic: walk candidates nearest first, keep one only
    /// if it is nearer to the base than to every neighbour kept so far (spreads links
    /// over directions); fill up with the nearest skipped ones if fewer than `width`.
    fn select(&self, sorted: &[Near], width: usize) -> Vec<Near> {
        let mut kept: Vec<Near> = Vec::with_capacity(width);
        let mut skipped = Vec::new();
        for &candidate in sorted {
            if kept.len() >= width {
                break;
            }
            if kept.iter().all(|k| self.link_distance(candidate.1, k.1) > candidate.0) {
                kept.push(candidate);
            } else {
                skipped.push(candidate);
            }
        }
        for candidate in skipped {
            if kept.len() >= width {
                break;
            }
            kept.push(candidate);
        }
        kept
    }

    pub fn is_graph(&self) -> bool {
        self.graph
    }
}

#[cfg(test)]
mod tests;
mod walk;
