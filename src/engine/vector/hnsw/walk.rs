//! The walks over an HNSW store's graph: a greedy descent through the upper layers, a
//! layer search `ef` wide (the insert's and the KNN's), the KNN itself (over codes,
//! re-ranked exactly) and the exact scan; with what they measure from (`Probe`), the
//! scratch they reuse, and the prefetches that keep them from waiting on memory.
//!
//! Owns no state of its own beyond the scratch. Never changes the graph (`hnsw.rs`
//! links; this only reads).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::{Elements, Near, VectorStore};
use crate::engine::vector::quant::{CodedQuery, Codes};

/// What a walk measures its distances from: the query itself, or its code.
pub(super) trait Probe {
    fn distance(&self, store: &VectorStore, slot: u32) -> f32;
    /// Start loading what `distance` will read of `slot`.
    fn prefetch(&self, store: &VectorStore, slot: u32);
}

/// The query (or an inserted vector) against the stored vectors.
pub(super) struct Exact<'a>(pub(super) &'a [f32]);

impl Probe for Exact<'_> {
    #[inline(always)]
    fn distance(&self, store: &VectorStore, slot: u32) -> f32 {
        store.distance_to(self.0, slot)
    }
    #[inline(always)]
    fn prefetch(&self, store: &VectorStore, slot: u32) {
        store.prefetch(slot);
    }
}

/// A query's code against the slots' codes.
pub(super) struct Coded<'a>(pub(super) &'a Codes, pub(super) &'a CodedQuery);

impl Probe for Coded<'_> {
    #[inline(always)]
    fn distance(&self, _: &VectorStore, slot: u32) -> f32 {
        self.0.distance(self.1, slot)
    }
    #[inline(always)]
    fn prefetch(&self, store: &VectorStore, slot: u32) {
        let start = self.0.row_start(slot);
        for line in (0..store.dim.min(PREFETCH_BYTES)).step_by(64) {
            crate::engine::prefetch::prefetch(start.wrapping_add(line));
        }
    }
}

/// How much of a vector a walk prefetches before computing its distance (the hardware
/// prefetcher follows the rest).
const PREFETCH_BYTES: usize = 256;

/// What a layer search works in: visit marks and its two heaps, kept between searches
/// for their capacity.
#[derive(Default)]
pub(super) struct Scratch {
    visited: Visited,
    candidates: BinaryHeap<Reverse<Near>>,
    results: BinaryHeap<Near>,
    /// The unvisited neighbours of the node being expanded, prefetched before their
    /// distances are computed.
    unvisited: Vec<u32>,
}

/// Which slots the current search has seen: a mark equal to `epoch` means seen, so a
/// new search starts by bumping the epoch instead of clearing the marks.
#[derive(Default)]
struct Visited {
    marks: Vec<u32>,
    epoch: u32,
}

impl Visited {
    fn begin(&mut self, slots: usize) {
        if self.marks.len() < slots {
            self.marks.resize(slots, 0);
        }
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.marks.iter_mut().for_each(|v| *v = 0);
            self.epoch = 1;
        }
    }

    /// Mark `slot` seen; false if it already was.
    fn first_visit(&mut self, slot: u32) -> bool {
        let mark = &mut self.marks[slot as usize];
        if *mark == self.epoch {
            return false;
        }
        *mark = self.epoch;
        true
    }
}

impl VectorStore {
    /// Ask the CPU to start loading `slot`'s vector: a walk computes the distances of
    /// a node's neighbours one after another, and each vector is a cold cache miss.
    #[inline(always)]
    fn prefetch(&self, slot: u32) {
        let start = slot as usize * self.dim;
        let (base, bytes) = match &self.elements {
            Elements::F32(v) => (v.as_ptr().wrapping_add(start) as *const u8, self.dim * 4),
            Elements::F16(v) => (v.as_ptr().wrapping_add(start) as *const u8, self.dim * 2),
        };
        for line in (0..bytes.min(PREFETCH_BYTES)).step_by(64) {
            crate::engine::prefetch::prefetch(base.wrapping_add(line));
        }
    }

    /// Ask the CPU to start loading `slot`'s layer-0 links: a walk expands most of the
    /// candidates it keeps, and reading a list's count is otherwise a cold miss each.
    #[inline(always)]
    fn prefetch_links(&self, slot: u32, layer: usize) {
        if layer != 0 {
            return;
        }
        let list = self.layer0.as_ptr().wrapping_add(slot as usize * (self.m0 + 1)) as *const u8;
        for line in (0..(self.m0 + 1) * 4).step_by(64) {
            crate::engine::prefetch::prefetch(list.wrapping_add(line));
        }
    }

    /// From `nearest`, step to a nearer neighbour on `layer` until none is nearer.
    pub(super) fn greedy(&self, probe: &impl Probe, mut nearest: Near, layer: usize) -> Near {
        loop {
            let mut moved = false;
            for &n in self.neighbours(nearest.1, layer) {
                let d = probe.distance(self, n);
                if d < nearest.0 {
                    nearest = Near(d, n);
                    moved = true;
                }
            }
            if !moved {
                return nearest;
            }
        }
    }

    /// The `ef` nearest slots to `query` on `layer` that `accept` takes (all slots are
    /// walked through, only accepted ones are kept), nearest first.
    ///
    /// `accept` is generic, not `&dyn Fn`: it runs for every slot the walk keeps, and a
    /// static call inlines (`|_| true` while inserting costs nothing then).
    pub(super) fn search_layer(
        &self,
        scratch: &mut Scratch,
        probe: &impl Probe,
        entries: &[Near],
        ef: usize,
        layer: usize,
        accept: impl Fn(u32) -> bool,
    ) -> Vec<Near> {
        if ef == 0 {
            return Vec::new();
        }
        let Scratch { visited, candidates, results, unvisited } = scratch;
        visited.begin(self.slots());
        candidates.clear();
        results.clear();
        for &e in entries {
            if !visited.first_visit(e.1) {
                continue;
            }
            // Measured again by this walk's probe: an insert's entries come exact from
            // the layer above, and its walk may read codes.
            let e = Near(probe.distance(self, e.1), e.1);
            candidates.push(Reverse(e));
            if accept(e.1) {
                results.push(e);
            }
        }
        while let Some(Reverse(current)) = candidates.pop() {
            if results.len() >= ef && results.peek().is_some_and(|worst| current.0 > worst.0) {
                break;
            }
            unvisited.clear();
            for &n in self.neighbours(current.1, layer) {
                if visited.first_visit(n) {
                    probe.prefetch(self, n);
                    unvisited.push(n);
                }
            }
            for &n in unvisited.iter() {
                let d = probe.distance(self, n);
                let full = results.len() >= ef;
                if full && results.peek().is_some_and(|worst| d >= worst.0) {
                    continue;
                }
                candidates.push(Reverse(Near(d, n)));
                self.prefetch_links(n, layer);
                if accept(n) {
                    // Full: the new one replaces the worst in one sift (a push and a pop
                    // cost two); the heap keeps the same `ef` nearest either way.
                    if let Some(mut worst) = results.peek_mut().filter(|_| full) {
                        *worst = Near(d, n);
                    } else {
                        results.push(Near(d, n));
                    }
                }
            }
        }
        let mut found: Vec<Near> = results.drain().collect();
        found.sort_unstable();
        found
    }

    /// The `k` nearest accepted slots through the graph, searching `ef` wide. `accept`
    /// is asked only about slots not deleted.
    pub fn search_graph(&mut self, query: &[f32], k: usize, ef: usize, accept: impl Fn(u32) -> bool) -> Vec<Near> {
        debug_assert!(self.graph);
        if ef >= self.live() {
            // As wide as the live slots: a walk cannot beat a scan, and it could miss a
            // slot whose in-links were all pruned. Scan, exactly: "EF_RUNTIME at least
            // the document count gives exact answers" holds by construction.
            // `accept` is asked about live slots only, as on the walk.
            return self.search_exact(query, k, (0..self.slots() as u32).filter(|&s| !self.deleted[s as usize] && accept(s)));
        }
        let Some(entry) = self.entry else { return Vec::new() };
        let mut scratch = std::mem::take(&mut self.scratch);
        let deleted = &self.deleted;
        let live_and_accepted = |slot: u32| !deleted[slot as usize] && accept(slot);
        let width = ef.max(k);
        let mut found = match &self.codes {
            Some(codes) => {
                // Walk over the codes, then order what the walk kept by exact distance:
                // the codes choose the candidates, never the answer's order or scores.
                let coded = codes.query(query);
                let walked = self.walk(&mut scratch, &Coded(codes, &coded), entry, width, live_and_accepted);
                self.by_exact_distance(query, walked)
            }
            None => self.walk(&mut scratch, &Exact(query), entry, width, live_and_accepted),
        };
        self.scratch = scratch;
        found.truncate(k);
        found
    }

    /// What a walk over codes kept, measured again exactly and ordered by that.
    fn by_exact_distance(&self, query: &[f32], walked: Vec<Near>) -> Vec<Near> {
        let mut exact: Vec<Near> = walked.into_iter().map(|n| Near(self.distance_to(query, n.1), n.1)).collect();
        exact.sort_unstable();
        exact
    }

    /// Down the upper layers greedily from `entry`, then layer 0 `width` wide.
    fn walk(&self, scratch: &mut Scratch, probe: &impl Probe, entry: u32, width: usize, accept: impl Fn(u32) -> bool) -> Vec<Near> {
        let mut nearest = Near(probe.distance(self, entry), entry);
        for layer in (1..=self.top_level).rev() {
            nearest = self.greedy(probe, nearest, layer);
        }
        self.search_layer(scratch, probe, &[nearest], width, 0, accept)
    }

    /// The exact `k` nearest among `slots` (live ones only).
    pub fn search_exact(&self, query: &[f32], k: usize, slots: impl Iterator<Item = u32>) -> Vec<Near> {
        let mut best: BinaryHeap<Near> = BinaryHeap::with_capacity(k + 1);
        if k == 0 {
            return Vec::new();
        }
        for slot in slots {
            if self.deleted[slot as usize] {
                continue;
            }
            let near = Near(self.distance_to(query, slot), slot);
            if best.len() < k {
                best.push(near);
            } else if best.peek().is_some_and(|w| near < *w) {
                best.pop();
                best.push(near);
            }
        }
        best.into_sorted_vec()
    }
}
