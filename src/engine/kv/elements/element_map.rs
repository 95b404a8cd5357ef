//! [`ElementMap`]: the map form of a collection's elements: names to stored elements,
//! in insertion order, each at a position (HRANDFIELD, SPOP and SRANDMEMBER pick by
//! position; a small collection's replies keep insertion order, as Redis's listpack).
//!
//! Why not indexmap's `IndexMap`, which is exactly this: two things it cannot give.
//! - **Prefetch.** On a collection far larger than the caches, finding an element is
//!   three dependent cache misses (the table's control bytes, its position slot, the
//!   entry): under `perf`, 90 % of an in-place HSET's own time on a 100,000-field hash.
//!   [`ElementMap::prefetch_probe`] and [`ElementMap::prefetch_entry`] start those loads
//!   for a name ahead of its command, a step at a time over a whole pipeline, as the
//!   keyspace does for a pipeline's keys, so that a pipeline's misses overlap. The
//!   table is our own for the same reason (`position_table.rs`).
//! - **Size.** Positions are `u32` (a collection holds fewer than 2³² elements, as in
//!   Redis) and an entry does not keep its name's hash (it is hashed again when the
//!   table grows: names are short): 12 bytes an element less than `IndexMap`'s `usize`
//!   positions and stored hashes.
//!
//! Must never: let a position in the table disagree with its entry's place in the
//! vector (checked against indexmap by the model test below), or hold one name twice.

use std::hash::BuildHasher;

use foldhash::fast::FixedState;

use super::ElementName;
use super::position_table::PositionTable;
use crate::engine::bytes_eq::same_bytes;
use crate::engine::kv::element::Stored;

#[derive(Clone)]
pub struct ElementMap {
    /// The position in `entries` of every name, found by the name's hash.
    table: PositionTable,
    entries: Vec<(ElementName, Stored)>,
    hasher: FixedState,
}

impl std::fmt::Debug for ElementMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.entries.iter().map(|(name, stored)| (name, stored))).finish()
    }
}

/// The hash of `name` under `hasher` (one function, so every probe agrees).
#[inline]
fn hash_of(hasher: &FixedState, name: &[u8]) -> u64 {
    hasher.hash_one(name)
}

fn position(index: usize) -> u32 {
    u32::try_from(index).expect("a collection holds fewer than 2^32 elements")
}

impl ElementMap {
    pub fn with_hasher(hasher: FixedState) -> ElementMap {
        ElementMap { table: PositionTable::default(), entries: Vec::new(), hasher }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// The hash probes of `name` use (for one hash a write: see `plain_write.rs`).
    #[inline]
    pub fn hash(&self, name: &[u8]) -> u64 {
        hash_of(&self.hasher, name)
    }

    pub fn reserve(&mut self, additional: usize) {
        let ElementMap { table, entries, hasher } = self;
        entries.reserve(additional);
        table.reserve(additional, |at| hash_of(hasher, &entries[at as usize].0));
    }

    /// The first step of a prefetch in two ([`ElementMap::prefetch_entry`] the second):
    /// start loading the table's bucket group for `hash` (its address follows from the
    /// hash: nothing is read). Between the two steps, a pipeline's other names can be
    /// started, so that their misses overlap.
    #[inline]
    pub fn prefetch_probe(&self, hash: u64) {
        self.table.prefetch_probe(hash);
    }

    /// Start loading the entry of the name whose hash is `hash`: its bucket group is
    /// read (from cache, after [`ElementMap::prefetch_probe`]) and each entry whose
    /// control byte matches is prefetched; no name is compared.
    #[inline]
    pub fn prefetch_entry(&self, hash: u64) {
        for at in self.table.first_group(hash) {
            crate::engine::prefetch::prefetch(self.entries.as_ptr().wrapping_add(at as usize));
        }
    }

    /// The position of `name`, whose hash is `hash`.
    #[inline]
    pub fn find_hashed(&self, hash: u64, name: &[u8]) -> Option<usize> {
        let entries = &self.entries;
        self.table.find(hash, |at| same_bytes(&entries[at as usize].0, name)).map(|bucket| self.table.get(bucket) as usize)
    }

    pub fn get_index_of(&self, name: &[u8]) -> Option<usize> {
        self.find_hashed(self.hash(name), name)
    }

    pub fn get(&self, name: &[u8]) -> Option<&Stored> {
        self.get_index_of(name).map(|at| &self.entries[at].1)
    }

    pub fn get_full_mut(&mut self, name: &[u8]) -> Option<(usize, &ElementName, &mut Stored)> {
        let at = self.get_index_of(name)?;
        let (name, stored) = &mut self.entries[at];
        Some((at, name, stored))
    }

    pub fn get_index(&self, at: usize) -> Option<(&ElementName, &Stored)> {
        self.entries.get(at).map(|(name, stored)| (name, stored))
    }

    pub fn get_index_mut(&mut self, at: usize) -> Option<(&ElementName, &mut Stored)> {
        self.entries.get_mut(at).map(|(name, stored)| (&*name, stored))
    }

    /// Add `name`, which the caller found absent under `hash`, at the end; its position.
    pub fn push_new_hashed(&mut self, hash: u64, name: ElementName, stored: Stored) -> usize {
        debug_assert!(self.find_hashed(hash, &name).is_none(), "pushed a name already held");
        let ElementMap { table, entries, hasher } = self;
        let at = entries.len();
        table.insert(hash, position(at), |at| hash_of(hasher, &entries[at as usize].0));
        entries.push((name, stored));
        at
    }

    /// Set `name` to `stored`: replaced in place where held (its position kept), else
    /// added at the end. Its position, and what it replaced.
    pub fn insert_full(&mut self, name: ElementName, stored: Stored) -> (usize, Option<Stored>) {
        let hash = self.hash(&name);
        match self.find_hashed(hash, &name) {
            Some(at) => (at, Some(std::mem::replace(&mut self.entries[at].1, stored))),
            None => (self.push_new_hashed(hash, name, stored), None),
        }
    }

    pub fn insert(&mut self, name: ElementName, stored: Stored) -> Option<Stored> {
        self.insert_full(name, stored).1
    }

    /// Take `name`'s position out of the table; its position.
    fn unindex(&mut self, name: &[u8]) -> Option<usize> {
        let hash = self.hash(name);
        let entries = &self.entries;
        let bucket = self.table.find(hash, |at| same_bytes(&entries[at as usize].0, name))?;
        Some(self.table.remove(bucket) as usize)
    }

    /// Remove `name`, moving every later entry one place down (the order kept): a walk
    /// of the table, for small collections.
    pub fn shift_remove(&mut self, name: &[u8]) -> Option<Stored> {
        let at = self.unindex(name)?;
        for later in self.table.positions_mut().filter(|later| **later as usize > at) {
            *later -= 1;
        }
        Some(self.entries.remove(at).1)
    }

    /// Remove `name`, moving the last entry into its place.
    pub fn swap_remove(&mut self, name: &[u8]) -> Option<Stored> {
        let at = self.unindex(name)?;
        let last = self.entries.len() - 1;
        if at != last {
            let hash = self.hash(&self.entries[last].0);
            let moved = self.table.find(hash, |held| held as usize == last).expect("the last entry is indexed");
            self.table.set(moved, position(at));
        }
        Some(self.entries.swap_remove(at).1)
    }

    /// Keep the entries `keep` says to, in order.
    pub fn retain(&mut self, mut keep: impl FnMut(&ElementName, &mut Stored) -> bool) {
        let before = self.entries.len();
        self.entries.retain_mut(|(name, stored)| keep(name, stored));
        if self.entries.len() != before {
            let ElementMap { table, entries, hasher } = self;
            table.clear();
            for (at, (name, _)) in entries.iter().enumerate() {
                table.insert(hash_of(hasher, name), position(at), |at| hash_of(hasher, &entries[at as usize].0));
            }
        }
    }

    pub fn iter(&self) -> std::slice::Iter<'_, (ElementName, Stored)> {
        self.entries.iter()
    }

    pub fn values(&self) -> impl Iterator<Item = &Stored> {
        self.entries.iter().map(|(_, stored)| stored)
    }

    /// Every position in the table names its own entry, once (the model test).
    #[cfg(test)]
    fn check(&self) -> bool {
        self.table.len() == self.entries.len() && self.entries.iter().enumerate().all(|(at, (name, _))| self.get_index_of(name) == Some(at))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crdt::{Dot, Hlc};
    use rand::{Rng, SeedableRng};

    fn stored(n: u64) -> Stored {
        Stored::Int { hlc: Hlc::from_parts(n, 0), node: 1, value: n as i64 }
    }

    /// Random inserts, overwrites, both removes and retains against indexmap's
    /// `IndexMap` doing the same: the same entries in the same order at every step.
    #[test]
    fn behaves_as_indexmap_through_random_changes() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(15);
        let mut map = ElementMap::with_hasher(FixedState::with_seed(7));
        let mut model: indexmap::IndexMap<Vec<u8>, Stored> = indexmap::IndexMap::new();
        for step in 0..20_000u64 {
            let name = format!("n{}", rng.random_range(0..600)).into_bytes();
            match rng.random_range(0..10) {
                0..=4 => {
                    let (at, old) = map.insert_full(ElementName::from(&name[..]), stored(step));
                    let (model_at, model_old) = model.insert_full(name.clone(), stored(step));
                    assert_eq!((at, old), (model_at, model_old));
                }
                5 => assert_eq!(map.shift_remove(&name), model.shift_remove(&name)),
                6 | 7 => assert_eq!(map.swap_remove(&name), model.swap_remove(&name)),
                8 if step % 50 == 0 => {
                    let cut = rng.random_range(0..600);
                    let keep = |n: &[u8]| std::str::from_utf8(&n[1..]).unwrap().parse::<u32>().unwrap() % 7 != cut % 7;
                    map.retain(|n, _| keep(n));
                    model.retain(|n, _| keep(n));
                }
                _ => {
                    let hash = map.hash(&name);
                    map.prefetch_probe(hash);
                    map.prefetch_entry(hash);
                    assert_eq!(map.get(&name), model.get(&name));
                    assert_eq!(map.get_index_of(&name), model.get_index_of(&name));
                }
            }
            assert_eq!(map.len(), model.len());
            if step % 97 == 0 {
                assert!(map.check(), "step {step}");
                let got: Vec<(&[u8], &Stored)> = map.iter().map(|(n, s)| (&n[..], s)).collect();
                let want: Vec<(&[u8], &Stored)> = model.iter().map(|(n, s)| (&n[..], s)).collect();
                assert_eq!(got, want, "step {step}");
                if let Some(at) = (!model.is_empty()).then(|| rng.random_range(0..model.len())) {
                    let (n, s) = map.get_index(at).unwrap();
                    assert_eq!((&n[..], s), model.get_index(at).map(|(n, s)| (&n[..], s)).unwrap());
                }
            }
        }
        let dot = Dot::new(Hlc::from_parts(1, 0), 1);
        let mut copy = map.clone();
        copy.reserve(1000);
        copy.insert(ElementName::from(&b"fresh"[..]), Stored::bytes_at(dot, b"v"));
        assert!(copy.check() && map.check());
        assert_eq!(copy.len(), map.len() + 1);
    }
}
