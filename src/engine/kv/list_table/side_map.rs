//! A list's side map (`ListTable::others`): the entries that are not one value at one
//! dot (tombstones, concurrent values), in name order, as a sequence of sorted runs of
//! at most [`RUN_ENTRIES_MAX`]. Owns that structure only.
//!
//! Why not a `BTreeMap`: on a node with peers every pop leaves its tombstone here
//! until the peers have merged it, so a queue's side map holds tens of thousands of
//! names, and pops arrive in name order: an LPOP's tombstone lands just past the
//! previous LPOP's, an RPOP's just before the previous RPOP's. A B-tree searches each
//! node on its path key by key from the left and splits a full leaf in half, so an
//! insert at its right end cost ~1,700 instructions (a fifth of an LPOP with two peers,
//! callgrind) and left its leaves half full (~145 bytes a tombstone). Here an insert
//! next to the previous one is a comparison or two and a push onto a run's end, and a
//! run that fills at its end starts a new one rather than splitting, so runs filled in
//! order stay full. Anywhere else an insert is two binary searches and a move of at
//! most one run's entries (and, when a run splits, of the run headers).
//!
//! Must never: hold an empty run, a run over [`RUN_ENTRIES_MAX`], runs out of order or
//! overlapping, or one name twice; order names other than as their bytes
//! (`side_name.rs`).

use std::cmp::Ordering;
use std::collections::VecDeque;

use super::side_name::{SideName, cmp_names};
use crate::engine::kv::element::Stored;

/// Entries in one run at most: a run's insert moves at most this many entries (80
/// bytes each), and a lookup searches the runs' first names, then one run.
pub(super) const RUN_ENTRIES_MAX: usize = 64;

type Run = VecDeque<(SideName, Stored)>;

/// The side map's entries in name order (see the module docs).
#[derive(Clone, Debug, Default)]
pub(super) struct SideMap {
    runs: VecDeque<Run>,
    len: usize,
    /// The run the last insert went to: the next insert usually goes there too (a
    /// queue's pops on both ends insert in two places, each next to its previous
    /// one). Only a hint: checked before use, so a stale one costs a search.
    last_run: usize,
}

/// The entries in name order, from either end.
pub(super) type Iter<'a> = std::iter::Flatten<std::collections::vec_deque::Iter<'a, Run>>;

impl SideMap {
    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub(super) fn iter(&self) -> Iter<'_> {
        self.runs.iter().flatten()
    }

    /// An iterator of no entries (a walk that needs none of them).
    pub(super) fn iter_none(&self) -> Iter<'_> {
        self.runs.range(0..0).flatten()
    }

    /// The run that holds `name` if any does: the last whose first name is ≤ it (the
    /// first run when `name` precedes every run). The runs must not be empty.
    fn run_for(&self, name: &[u8]) -> usize {
        let last = self.runs.len() - 1;
        // A queue's tombstones land at the last run (LPOP's, RPOP's on a list popped
        // from one end only) or the first: answered without a search.
        if cmp_names(first_name(&self.runs[last]), name) != Ordering::Greater {
            return last;
        }
        if cmp_names(name, last_name(&self.runs[0])) != Ordering::Greater {
            return 0;
        }
        self.runs.partition_point(|run| cmp_names(first_name(run), name) != Ordering::Greater).saturating_sub(1)
    }

    /// [`SideMap::run_for`], trying the run of the last insert first.
    fn hinted_run_for(&self, name: &[u8]) -> usize {
        let hint = self.last_run;
        let holds = |i: usize| {
            self.runs.get(i).is_some_and(|run| cmp_names(first_name(run), name) != Ordering::Greater)
                && self.runs.get(i + 1).is_none_or(|next| cmp_names(first_name(next), name) == Ordering::Greater)
        };
        if holds(hint) { hint } else { self.run_for(name) }
    }

    pub(super) fn get(&self, name: &[u8]) -> Option<&Stored> {
        if self.runs.is_empty() {
            return None;
        }
        let run = &self.runs[self.run_for(name)];
        run.binary_search_by(|(held, _)| cmp_names(held.as_ref(), name)).ok().map(|at| &run[at].1)
    }

    /// Insert or replace the entry `name`; returns the one it replaced.
    pub(super) fn insert(&mut self, name: &[u8], stored: Stored) -> Option<Stored> {
        if self.runs.is_empty() {
            self.runs.push_back(VecDeque::from([(SideName::from_slice(name), stored)]));
            self.len = 1;
            return None;
        }
        let i = self.hinted_run_for(name);
        self.last_run = i;
        let run = &mut self.runs[i];
        // Past the run's last name (the common case: a pop next to the previous one).
        let at = if cmp_names(last_name(run), name) == Ordering::Less {
            run.len()
        } else {
            match run.binary_search_by(|(held, _)| cmp_names(held.as_ref(), name)) {
                Ok(at) => return Some(std::mem::replace(&mut run[at].1, stored)),
                Err(at) => at,
            }
        };
        let entry = (SideName::from_slice(name), stored);
        self.len += 1;
        if run.len() < RUN_ENTRIES_MAX {
            // `VecDeque::insert` at the end still takes its general path (~60
            // instructions and a wrap copy, callgrind): a queue's pops append.
            if at == run.len() { run.push_back(entry) } else { run.insert(at, entry) }
        } else if at == run.len() {
            match self.runs.get_mut(i + 1) {
                // Before the next run's first name (`run_for`), when that run has room:
                // inserts in descending order past a full run (an RPOP's tombstone after
                // a run of LPOPs' once the list emptied and filled again) fill the next
                // run from its front rather than each starting a run of its own.
                Some(next) if next.len() < RUN_ENTRIES_MAX => next.push_front(entry),
                // A full run grows at its end: a new run after it, sized for a run of
                // inserts in order (it fills, as this one did).
                _ => {
                    let mut next = VecDeque::with_capacity(RUN_ENTRIES_MAX);
                    next.push_back(entry);
                    self.runs.insert(i + 1, next);
                }
            }
        } else if at == 0 {
            // Only the first run is reached with a name before its first (`run_for`).
            debug_assert_eq!(i, 0);
            let mut before = VecDeque::with_capacity(RUN_ENTRIES_MAX);
            before.push_back(entry);
            self.runs.push_front(before);
        } else {
            let mut upper = run.split_off(RUN_ENTRIES_MAX / 2);
            if at <= RUN_ENTRIES_MAX / 2 {
                run.insert(at, entry);
            } else {
                upper.insert(at - RUN_ENTRIES_MAX / 2, entry);
            }
            self.runs.insert(i + 1, upper);
        }
        self.debug_check_around(i);
        None
    }

    pub(super) fn remove(&mut self, name: &[u8]) -> Option<Stored> {
        if self.runs.is_empty() {
            return None;
        }
        let i = self.run_for(name);
        let run = &mut self.runs[i];
        let at = run.binary_search_by(|(held, _)| cmp_names(held.as_ref(), name)).ok()?;
        let (_, stored) = run.remove(at).expect("index just found");
        if run.is_empty() {
            self.runs.remove(i);
        }
        self.len -= 1;
        Some(stored)
    }

    /// Keep the entries `keep` says to, in order. The runs left are packed full again
    /// when dropping entries left more than twice the runs they need (the walk over
    /// every entry was paid already), so a map emptied in patches stays dense.
    pub(super) fn retain(&mut self, mut keep: impl FnMut(&SideName, &mut Stored) -> bool) {
        for run in &mut self.runs {
            run.retain_mut(|(name, stored)| keep(name, stored));
        }
        self.runs.retain(|run| !run.is_empty());
        self.len = self.runs.iter().map(VecDeque::len).sum();
        if self.runs.len() > 2 * self.len.div_ceil(RUN_ENTRIES_MAX) {
            let mut packed: VecDeque<Run> = VecDeque::with_capacity(self.len.div_ceil(RUN_ENTRIES_MAX));
            for entry in std::mem::take(&mut self.runs).into_iter().flatten() {
                match packed.back_mut() {
                    Some(run) if run.len() < RUN_ENTRIES_MAX => run.push_back(entry),
                    _ => packed.push_back(VecDeque::from([entry])),
                }
            }
            self.runs = packed;
        }
        self.debug_check();
    }

    /// Debug builds, after an insert at run `i`: the runs it may have touched (it,
    /// one split or started before or after it) are non-empty, within bounds and in
    /// order with their neighbours. Local, so that a debug build's inserts stay
    /// constant-time (the whole map is checked after a retain, which walks it anyway).
    fn debug_check_around(&self, i: usize) {
        if cfg!(debug_assertions) {
            let touched = i.saturating_sub(1)..(i + 3).min(self.runs.len());
            let mut previous: Option<&[u8]> = touched.start.checked_sub(1).map(|j| last_name(&self.runs[j]));
            for run in self.runs.range(touched.clone()) {
                assert!(!run.is_empty() && run.len() <= RUN_ENTRIES_MAX);
                for (name, _) in run {
                    assert!(previous.is_none_or(|p| p < name.as_ref()), "names ascend");
                    previous = Some(name.as_ref());
                }
            }
            if let Some(next) = self.runs.get(touched.end) {
                assert!(previous.is_none_or(|p| p < first_name(next)), "names ascend");
            }
        }
    }

    /// Debug builds: the runs are non-empty, within bounds, in order and counted.
    fn debug_check(&self) {
        if cfg!(debug_assertions) {
            assert_eq!(self.len, self.runs.iter().map(VecDeque::len).sum::<usize>());
            let mut previous: Option<&[u8]> = None;
            for run in &self.runs {
                assert!(!run.is_empty() && run.len() <= RUN_ENTRIES_MAX);
                for (name, _) in run {
                    assert!(previous.is_none_or(|p| p < name.as_ref()), "names ascend");
                    previous = Some(name.as_ref());
                }
            }
        }
    }
}

fn first_name(run: &Run) -> &[u8] {
    run.front().expect("no run is empty").0.as_ref()
}

fn last_name(run: &Run) -> &[u8] {
    run.back().expect("no run is empty").0.as_ref()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crdt::Hlc;
    use std::collections::BTreeMap;

    fn stored(n: u64) -> Stored {
        Stored::Int { hlc: Hlc(n + 1), node: 1, value: n as i64 }
    }

    /// Every operation agrees with a `BTreeMap` of the same names, for inserts in
    /// order at either end (a queue's pops), in the middle, replacements, removals and
    /// retains, across many runs.
    #[test]
    fn the_side_map_behaves_as_an_ordered_map() {
        let mut map = SideMap::default();
        let mut model: BTreeMap<Vec<u8>, Stored> = BTreeMap::new();
        let name = |n: u64| {
            let mut name = n.to_be_bytes().to_vec();
            name.extend_from_slice(&[(n % 3) as u8; 10]);
            name
        };
        let mut seed = 7u64;
        let mut next = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            seed >> 33
        };
        let check = |map: &SideMap, model: &BTreeMap<Vec<u8>, Stored>| {
            assert_eq!(map.len(), model.len());
            assert!(map.iter().map(|(n, s)| (n.as_ref().to_vec(), s.clone())).eq(model.iter().map(|(n, s)| (n.clone(), s.clone()))));
            assert!(map.iter().rev().map(|(n, _)| n.as_ref().to_vec()).eq(model.keys().rev().cloned()));
        };
        // In order at the high end (LPOP's tombstones), then at the low end (RPOP's).
        for n in 10_000..10_300 {
            assert_eq!(map.insert(&name(n), stored(n)), model.insert(name(n), stored(n)));
        }
        for n in (9_700..10_000).rev() {
            assert_eq!(map.insert(&name(n), stored(n)), model.insert(name(n), stored(n)));
        }
        check(&map, &model);
        assert!(map.runs.len() <= 600usize.div_ceil(RUN_ENTRIES_MAX) + 1, "runs filled in order stay full");
        // In descending order between two full runs (RPOP's tombstones in a list that
        // LPOPs emptied and pushes filled again): they fill one run from its front.
        let boundary = map.runs[1].back().expect("not empty").0.as_ref().to_vec();
        assert_eq!(map.runs[1].len(), RUN_ENTRIES_MAX);
        for j in (0..200u8).rev() {
            let mut between = boundary.clone();
            between.push(j);
            assert_eq!(map.insert(&between, stored(j.into())), model.insert(between.clone(), stored(j.into())));
        }
        check(&map, &model);
        assert!(map.runs.len() <= 800usize.div_ceil(RUN_ENTRIES_MAX) + 2, "{} runs", map.runs.len());
        for step in 0..5_000u64 {
            let n = 9_000 + next() % 2_000;
            match next() % 4 {
                0 | 1 => assert_eq!(map.insert(&name(n), stored(step)), model.insert(name(n), stored(step))),
                2 => assert_eq!(map.remove(&name(n)), model.remove(&name(n))),
                _ => assert_eq!(map.get(&name(n)), model.get(&name(n))),
            }
        }
        check(&map, &model);
        // A lookup of names between, before and after the held ones.
        for n in 8_990..11_010 {
            assert_eq!(map.get(&name(n)), model.get(&name(n)));
            assert_eq!(map.get(&name(n)[..9]), None);
        }
        map.retain(|name, _| name.as_ref()[7] % 5 == 0);
        model.retain(|name, _| name[7] % 5 == 0);
        check(&map, &model);
        assert!(map.runs.len() <= 2 * map.len().div_ceil(RUN_ENTRIES_MAX), "a thinned map is packed again");
        map.retain(|_, _| false);
        model.clear();
        check(&map, &model);
        assert!(map.runs.is_empty() && map.get(&name(1)).is_none() && map.remove(&name(1)).is_none());
    }
}
