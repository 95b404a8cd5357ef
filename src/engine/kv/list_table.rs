//! The storage of a list's elements: its compact elements packed in position order
//! into chunks of at most [`CHUNK_ENTRIES_MAX`], as Redis's quicklist packs a list into
//! listpacks, and the few elements with more history than one value at one dot (a
//! tombstone, concurrent LSETs) in a side map. The element semantics are those of
//! `elements.rs` (this is one of its table forms); the order is the byte order of the
//! position names (`position.rs`).
//!
//! Why chunks: an element held as a map entry costs a hash slot, an index entry, a
//! name allocation and a value allocation (~350 bytes for a 16-byte value); in a chunk
//! it costs its value, a tag byte and the few bytes by which its name and dot differ
//! from its neighbour's. Names are delta-coded: a position differs from the previous
//! one in its last triple only (a push's elements share the anchor, and consecutive
//! single-element pushes share the level), so most elements store a digit step and an
//! HLC step. An element's dot is, until an LSET, the dot in its own name's last triple
//! (the push that made it), so it is stored as one tag bit.
//!
//! Entry layout, in name order: `[tag u8]`, then the name (tag bits 0–1: `0` full,
//! `[len varint][bytes]`; `1` the previous name with its last triple's digit and HLC
//! stepped, `[digit step varint][hlc step zigzag varint]`; `2` the same plus
//! `[node varint]`), then the dot (bit 2: `0` the name's last triple; `1`
//! `[hlc varint][node varint]`), then the value (bit 3: `0` bytes `[len varint][bytes]`;
//! `1` an integer, zigzag varint). A chunk's first entry always has its name in full,
//! so a chunk's first name is read without decoding.
//!
//! Must never: hold a non-compact element in a chunk, an empty chunk, a chunk over
//! [`CHUNK_ENTRIES_MAX`], or one name twice; do I/O.

use std::collections::BTreeMap;

use bytes::Bytes;
use smallvec::SmallVec;

use super::element::{ElementRef, Stored};
use super::position::TRIPLE_BYTES;

mod chunk;

use chunk::{Chunk, Decoder};

/// Elements in one chunk at most (Redis's quicklist nodes hold ~128 small elements at
/// its default `list-max-listpack-size -2`, 8 KiB).
pub const CHUNK_ENTRIES_MAX: usize = 128;

/// A position name, held inline up to two levels (a push's elements below its anchor).
pub type Name = SmallVec<[u8; 2 * TRIPLE_BYTES]>;

/// Whether an element can live in a chunk (one value at one dot).
fn is_compact(element: ElementRef<'_>) -> bool {
    !matches!(element, ElementRef::Full(_))
}

/// A list's elements: compact ones in chunks, the rest in a side map (see the module
/// docs). Every name is in exactly one of the two.
#[derive(Clone, Debug, Default)]
pub struct ListTable {
    chunks: Vec<Chunk>,
    /// Elements that are not one value at one dot (tombstones, concurrent values).
    others: BTreeMap<Bytes, Stored>,
    /// Entries in chunks.
    chunked: usize,
    /// Live entries among `others` (when 0, an index walk skips whole chunks).
    others_live: usize,
    /// Names in the order they arrived, kept only while the planted bug
    /// `list-order-by-arrival` is active (it orders reads by arrival).
    arrivals: Vec<Name>,
}

impl ListTable {
    /// Entries held, tombstones included.
    pub fn entries_len(&self) -> usize {
        self.chunked + self.others.len()
    }

    /// Bytes the chunks allocate (MEMORY USAGE), and how many chunks.
    pub fn chunk_bytes(&self) -> (usize, usize) {
        (self.chunks.iter().map(|c| c.bytes.capacity() + std::mem::size_of::<Chunk>()).sum(), self.chunks.len())
    }

    /// Entries outside the chunks, with their names (MEMORY USAGE, tombstone walks).
    pub fn others(&self) -> impl Iterator<Item = (&Bytes, &Stored)> + '_ {
        self.others.iter()
    }

    /// Whether every entry is compact (none in the side map).
    pub fn all_compact(&self) -> bool {
        self.others.is_empty()
    }

    /// The chunk that holds `name` if any does: the last whose first name is ≤ it.
    fn chunk_for(&self, name: &[u8]) -> Option<usize> {
        // A push lands past the last chunk's first name or before the first chunk's, a
        // pop takes from the first or the last chunk: answered without a search.
        let last = self.chunks.len().checked_sub(1)?;
        if self.chunks[last].first() <= name {
            return Some(last);
        }
        if name <= self.chunks[0].last.as_slice() {
            return (self.chunks[0].first() <= name).then_some(0);
        }
        // The search compares the last names, held in the chunks' headers (one
        // contiguous array), not the first ones, which are in each chunk's bytes (a
        // cache miss per step). `j` is the first chunk whose last name is ≥ `name`:
        // it holds `name` if its first name is ≤ it, else `name` falls in the gap
        // after chunk `j - 1` (which holds the names up to its last, all < `name`).
        // `j` is in 1..=last here: chunk 0's last is < `name` and chunk `last`'s first
        // is > it.
        let j = self.chunks.partition_point(|c| c.last.as_slice() < name);
        debug_assert!((1..=last).contains(&j));
        Some(if self.chunks[j].first() <= name { j } else { j - 1 })
    }

    /// An entry by name, tombstones included.
    pub fn get(&self, name: &[u8]) -> Option<ElementRef<'_>> {
        if let Some(stored) = self.others.get(name) {
            return Some(stored.view());
        }
        self.chunk_for(name).and_then(|i| self.chunks[i].find(name))
    }

    /// Names in arrival order (empty unless the planted bug is active).
    pub fn arrivals(&self) -> &[Name] {
        &self.arrivals
    }

    fn note_arrival(&mut self, name: &[u8]) {
        if crate::bugs::active(crate::bugs::Bug::ListOrderByArrival) && !self.arrivals.iter().any(|n| n.as_slice() == name) {
            self.arrivals.push(Name::from_slice(name));
        }
    }

    /// [`ListTable::put`] from a view: a compact element is encoded straight into its
    /// chunk (a push never builds the element's stored form just to encode it).
    pub fn put_view(&mut self, name: &[u8], element: ElementRef<'_>) -> bool {
        if !is_compact(element) {
            return self.put(name, Stored::from_view(element));
        }
        self.note_arrival(name);
        let was_other = !self.others.is_empty() && self.take_other(name).is_some();
        let was_chunked = self.put_chunked(name, element);
        debug_assert!(!(was_other && was_chunked));
        was_other || was_chunked
    }

    /// Insert or replace the entry `name`; returns whether it was present.
    pub fn put(&mut self, name: &[u8], stored: Stored) -> bool {
        if is_compact(stored.view()) {
            return self.put_view(name, stored.view());
        }
        self.note_arrival(name);
        let was_chunked = self.take_chunked(name).is_some();
        if stored.view().exists() {
            self.others_live += 1;
        }
        let was_other = match self.others.insert(Bytes::copy_from_slice(name), stored) {
            Some(old) => {
                if old.view().exists() {
                    self.others_live -= 1;
                }
                true
            }
            None => false,
        };
        was_chunked || was_other
    }

    /// Remove the entry `name`, returning it.
    pub fn remove(&mut self, name: &[u8]) -> Option<Stored> {
        self.take_other(name).or_else(|| self.take_chunked(name))
    }

    fn take_other(&mut self, name: &[u8]) -> Option<Stored> {
        let old = self.others.remove(name)?;
        if old.view().exists() {
            self.others_live -= 1;
        }
        Some(old)
    }

    /// Put a compact element in its chunk; returns whether it replaced one.
    fn put_chunked(&mut self, name: &[u8], element: ElementRef<'_>) -> bool {
        let i = match self.chunk_for(name) {
            Some(i) => i,
            // Before every chunk, or none yet: a new first chunk if the first is full.
            None if self.chunks.first().is_none_or(|c| c.count as usize >= CHUNK_ENTRIES_MAX) => {
                // The full chunk grew in place (pushes at the head): its spare room goes.
                if let Some(full) = self.chunks.first_mut() {
                    full.bytes.shrink_to_fit();
                }
                self.chunks.insert(0, Chunk::build([(name, element)]));
                self.chunked += 1;
                return false;
            }
            None => 0,
        };
        let chunk = &mut self.chunks[i];
        if name > chunk.last.as_slice() {
            // After this chunk's last and before the next chunk's first: an append.
            if (chunk.count as usize) < CHUNK_ENTRIES_MAX {
                chunk.append(name, element);
            } else {
                chunk.bytes.shrink_to_fit();
                self.chunks.insert(i + 1, Chunk::build([(name, element)]));
            }
            self.chunked += 1;
            return false;
        }
        let replaced = self.chunks[i].splice_in(name, element);
        if !replaced {
            self.chunked += 1;
        }
        if self.chunks[i].count as usize > CHUNK_ENTRIES_MAX {
            // Split in two halves (once per half a chunk of inserts into it).
            let entries = self.chunks[i].decode();
            let half = entries.len() / 2;
            let halves = [
                Chunk::build(entries[..half].iter().map(|(n, e)| (n.as_slice(), *e))),
                Chunk::build(entries[half..].iter().map(|(n, e)| (n.as_slice(), *e))),
            ];
            drop(entries);
            self.chunks.splice(i..=i, halves);
        }
        replaced
    }

    fn take_chunked(&mut self, name: &[u8]) -> Option<Stored> {
        let i = self.chunk_for(name)?;
        if name > self.chunks[i].last.as_slice() {
            return None;
        }
        let taken = self.chunks[i].splice_out(name)?;
        if self.chunks[i].count == 0 {
            self.chunks.remove(i);
        }
        self.chunked -= 1;
        Some(taken)
    }

    /// Keep the entries `keep` says to (it may change them); the rest go. O(n): for
    /// whole-key removes, which visit every element anyway.
    pub fn retain(&mut self, mut keep: impl FnMut(&[u8], &mut Stored) -> bool) {
        let mut old = std::mem::take(self);
        self.arrivals = std::mem::take(&mut old.arrivals);
        let mut kept: Vec<(Name, Stored)> = Vec::with_capacity(old.entries_len());
        old.for_each(|name, element| {
            let mut stored = Stored::from_view(element);
            if keep(name, &mut stored) {
                kept.push((Name::from_slice(name), stored));
            }
        });
        for (name, stored) in kept {
            // In name order: every compact one is an append.
            self.put(&name, stored);
        }
    }

    /// Keep the side map's entries `keep` says to (tombstone collection: every
    /// tombstone is in the side map). `dropped` sees each one that goes.
    pub fn retain_others(&mut self, mut keep: impl FnMut(&[u8], ElementRef<'_>) -> bool) {
        let mut live_gone = 0;
        self.others.retain(|name, stored| {
            let kept = keep(name, stored.view());
            if !kept && stored.view().exists() {
                live_gone += 1;
            }
            kept
        });
        self.others_live -= live_gone;
    }

    /// Every entry, tombstones included, in name order.
    pub fn for_each(&self, mut f: impl FnMut(&[u8], ElementRef<'_>)) {
        let mut walk = self.walk(false, false);
        while let Some((name, element)) = walk.next_entry() {
            f(name, element);
        }
    }

    /// Whether some entry satisfies `f`.
    pub fn any(&self, mut f: impl FnMut(&[u8], ElementRef<'_>) -> bool) -> bool {
        let mut walk = self.walk(false, false);
        while let Some((name, element)) = walk.next_entry() {
            if f(name, element) {
                return true;
            }
        }
        false
    }

    /// The live element's name at the head (`tail`: at the tail), without decoding a
    /// chunk when every live element is in one (a push's neighbour).
    pub fn edge(&self, tail: bool) -> Option<Name> {
        if self.others_live == 0 {
            let chunk = if tail { self.chunks.last() } else { self.chunks.first() };
            return chunk.map(|c| if tail { c.last.clone() } else { Name::from_slice(c.first()) });
        }
        self.walk(tail, true).next().map(|(n, _)| n)
    }

    /// The entries in list order (`rev`: from the tail); `live_only` skips tombstones.
    pub fn walk(&self, rev: bool, live_only: bool) -> Walk<'_> {
        let others: Box<dyn Iterator<Item = (&Bytes, &Stored)> + '_> =
            if rev { Box::new(self.others.iter().rev()) } else { Box::new(self.others.iter()) };
        Walk {
            table: self,
            rev,
            live_only,
            chunks_left: self.chunks.len(),
            buffer: Vec::new(),
            decoder: None,
            tail_only_of: None,
            taken: 0,
            others: others.peekable(),
            current: None,
        }
    }

    /// The live entries in list order from the `skip`-th live one (`rev`: counted from
    /// the tail): whole chunks are skipped when no live element is outside them.
    pub fn walk_from(&self, skip: usize, rev: bool) -> Walk<'_> {
        let mut walk = self.walk(rev, true);
        let mut skip = skip;
        if self.others_live == 0 {
            while walk.chunks_left > 0 {
                let next = if rev { walk.chunks_left - 1 } else { self.chunks.len() - walk.chunks_left };
                let count = self.chunks[next].count as usize;
                if count > skip {
                    break;
                }
                skip -= count;
                walk.chunks_left -= 1;
            }
        }
        for _ in 0..skip {
            if walk.next_entry().is_none() {
                break;
            }
        }
        walk
    }
}

/// A walk over a list's entries in order (see [`ListTable::walk`]): a lending
/// iterator, since a chunk's names exist only while it is decoded.
pub struct Walk<'a> {
    table: &'a ListTable,
    rev: bool,
    live_only: bool,
    /// Chunks not yet decoded (the next is at the front, or the back when `rev`).
    chunks_left: usize,
    /// The decoded chunk, in list order; `taken` of it consumed from the walk's side.
    /// Forward, entries are decoded one at a time as the walk reaches them (`decoder`),
    /// so a walk that stops early (LPOP, LINDEX 0, LRANGE 0 9) decodes only what it
    /// reads; backward, a chunk's entries are coded against the one before, so the
    /// whole chunk is decoded and reversed.
    buffer: Vec<(Name, ElementRef<'a>)>,
    decoder: Option<Decoder<'a>>,
    /// Backward: the chunk whose last entry alone is in `buffer` (read without
    /// decoding, so RPOP and LINDEX -1 decode nothing); the rest of it is decoded only
    /// if the walk goes on.
    tail_only_of: Option<usize>,
    taken: usize,
    others: std::iter::Peekable<Box<dyn Iterator<Item = (&'a Bytes, &'a Stored)> + 'a>>,
    /// The entry last returned, when it came from the side map.
    current: Option<(&'a [u8], ElementRef<'a>)>,
}

impl<'a> Walk<'a> {
    /// The next chunk entry without consuming it.
    fn peek_chunked(&mut self) -> Option<&(Name, ElementRef<'a>)> {
        if !self.rev {
            return self.peek_chunked_forward();
        }
        while self.taken == self.buffer.len() {
            if let Some(i) = self.tail_only_of.take() {
                // The walk goes on past the chunk's last entry: the rest of it, backward.
                self.buffer = self.table.chunks[i].decode();
                self.buffer.pop();
                self.buffer.reverse();
                self.taken = 0;
                continue;
            }
            if self.chunks_left == 0 {
                return None;
            }
            let next = self.chunks_left - 1;
            self.chunks_left -= 1;
            let chunk = &self.table.chunks[next];
            self.buffer.clear();
            if let Some(element) = chunk.last_element() {
                self.buffer.push((chunk.last.clone(), element));
                self.tail_only_of = Some(next);
            }
            self.taken = 0;
        }
        self.buffer.get(self.taken)
    }

    /// [`Walk::peek_chunked`] forward: the buffer holds the one entry decoded last.
    fn peek_chunked_forward(&mut self) -> Option<&(Name, ElementRef<'a>)> {
        if self.taken == self.buffer.len() {
            self.buffer.clear();
            self.taken = 0;
            loop {
                if let Some(decoder) = &mut self.decoder
                    && let Some((_, element)) = decoder.next_entry()
                {
                    self.buffer.push((decoder.name.clone(), element));
                    break;
                }
                if self.chunks_left == 0 {
                    self.decoder = None;
                    return None;
                }
                let next = self.table.chunks.len() - self.chunks_left;
                self.chunks_left -= 1;
                self.decoder = Some(Decoder::new(&self.table.chunks[next]));
            }
        }
        self.buffer.get(self.taken)
    }

    /// The next entry; its name lives until the next call.
    pub fn next_entry(&mut self) -> Option<(&[u8], ElementRef<'a>)> {
        loop {
            let rev = self.rev;
            let other: Option<&'a [u8]> = self.others.peek().map(|&(n, _)| n.as_ref());
            let from_others = match (other, self.peek_chunked().map(|(n, _)| n.as_slice())) {
                (None, None) => return None,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (Some(other), Some(chunked)) => (other < chunked) != rev,
            };
            if from_others {
                let (name, stored) = self.others.next().expect("peeked");
                if self.live_only && !stored.view().exists() {
                    continue;
                }
                self.current = Some((name.as_ref(), stored.view()));
                return self.current;
            }
            self.taken += 1;
            let (name, element) = &self.buffer[self.taken - 1];
            return Some((name.as_slice(), *element));
        }
    }

    /// The next entry with its name copied out (an ordinary iterator's item).
    pub fn next_owned(&mut self) -> Option<(Name, ElementRef<'a>)> {
        self.next_entry().map(|(n, e)| (Name::from_slice(n), e))
    }
}

impl<'a> Iterator for Walk<'a> {
    type Item = (Name, ElementRef<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        self.next_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crdt::{Dot, Hlc};
    use crate::engine::kv::position::{self, Placement};
    use crate::engine::kv::value::{KeyState, StrVal};
    use rand::{Rng, SeedableRng};

    fn dot(hlc: u64, node: u16) -> Dot {
        Dot::new(Hlc(hlc), node)
    }

    fn raw(d: Dot, v: &[u8]) -> Stored {
        Stored::Raw { hlc: d.hlc, node: d.node, value: Box::from(v) }
    }

    fn names_of(table: &ListTable) -> Vec<Vec<u8>> {
        table.walk(false, false).map(|(n, _)| n.to_vec()).collect()
    }

    /// The table against a plain sorted map, through random puts, replaces and removes
    /// (compact and not), reading back in both directions and from every index.
    #[test]
    fn a_table_reads_as_a_sorted_map_through_random_changes() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        for round in 0..20 {
            let mut table = ListTable::default();
            let mut model: BTreeMap<Vec<u8>, Stored> = BTreeMap::new();
            let mut names: Vec<Vec<u8>> = Vec::new();
            for step in 0..1500u64 {
                let d = dot(100 + step, rng.random_range(1..4));
                match rng.random_range(0..10) {
                    0..=5 => {
                        // A push at an end or an insert between two names.
                        let i = rng.random_range(0..=names.len());
                        let low = i.checked_sub(1).map(|j| names[j].clone());
                        let high = names.get(i).cloned();
                        let name = position::between(low.as_deref(), high.as_deref(), d, Placement::Middle);
                        let below: Vec<Vec<u8>> = (1..rng.random_range(1..4u64)).map(|k| position::below(&name, k, d)).collect();
                        for n in std::iter::once(name).chain(below) {
                            let value = format!("v{step}").into_bytes();
                            let stored =
                                if step % 7 == 0 { Stored::Int { hlc: d.hlc, node: d.node, value: step as i64 } } else { raw(d, &value) };
                            assert!(!table.put(&n, stored.clone()));
                            model.insert(n.clone(), stored);
                            let at = names.binary_search(&n).expect_err("new name");
                            names.insert(at, n);
                        }
                    }
                    6 if !names.is_empty() => {
                        // An LSET (explicit dot) or a tombstone / concurrent values.
                        let n = names[rng.random_range(0..names.len())].clone();
                        let stored = if rng.random_bool(0.5) {
                            raw(d, b"lset")
                        } else {
                            let mut state = KeyState::with_value(d, StrVal::from_bytes(Bytes::from_static(b"x")), None);
                            if rng.random_bool(0.5) {
                                state.delete(dot(d.hlc.0 + 1, d.node));
                            } else {
                                state.merge(&KeyState::with_value(dot(d.hlc.0, d.node + 10), StrVal::Int(3), None));
                            }
                            Stored::from_owned(state)
                        };
                        assert!(table.put(&n, stored.clone()));
                        model.insert(n, stored);
                    }
                    _ if !names.is_empty() => {
                        let n = names.remove(rng.random_range(0..names.len()));
                        assert_eq!(table.remove(&n), model.remove(&n));
                    }
                    _ => {}
                }
            }
            assert_eq!(table.entries_len(), model.len(), "round {round}");
            assert_eq!(names_of(&table), model.keys().cloned().collect::<Vec<_>>());
            for (n, s) in &model {
                assert_eq!(table.get(n), Some(s.view()));
            }
            let live: Vec<Vec<u8>> = model.iter().filter(|(_, s)| s.view().exists()).map(|(n, _)| n.clone()).collect();
            let back: Vec<Vec<u8>> = table.walk(true, true).map(|(n, _)| n.to_vec()).collect();
            assert_eq!(back.iter().rev().cloned().collect::<Vec<_>>(), live);
            for skip in [0, 1, 127, 128, 129, live.len() / 2, live.len()] {
                let from: Vec<Vec<u8>> = table.walk_from(skip, false).map(|(n, _)| n.to_vec()).collect();
                assert_eq!(from, live[skip.min(live.len())..].to_vec());
                let from_tail: Vec<Vec<u8>> = table.walk_from(skip, true).map(|(n, _)| n.to_vec()).collect();
                let want: Vec<Vec<u8>> = live.iter().rev().skip(skip).cloned().collect();
                assert_eq!(from_tail, want);
            }
            assert!(table.chunks.iter().all(|c| c.count > 0 && c.count as usize <= CHUNK_ENTRIES_MAX));
            assert_eq!(table.edge(false).map(|n| n.to_vec()), live.first().cloned());
            assert_eq!(table.edge(true).map(|n| n.to_vec()), live.last().cloned());
        }
    }

    /// Pushes and pops at both ends (the queue workloads that take the chunk's fast
    /// paths: a tail pop cut at `last_at` with the offsets kept, a head pop leaving an
    /// unused prefix), by writers on several nodes (so names step with and without a
    /// node change), read back against a model; a queue that pushes at one end and
    /// pops at the other keeps its chunk's bytes bounded by what it holds.
    #[test]
    fn pops_at_both_ends_read_back_and_stay_bounded() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        for round in 0..12 {
            let mut table = ListTable::default();
            let mut model: std::collections::VecDeque<(Vec<u8>, Stored)> = std::collections::VecDeque::new();
            let nodes = if round % 3 == 0 { 1 } else { 3 };
            // Rounds alternate a balanced mix (length wanders) and a queue held near 60.
            let queue = round % 2 == 1;
            for step in 0..4000u64 {
                let d = dot(1000 + 2 * step, rng.random_range(1..=nodes));
                let value = vec![b'v'; rng.random_range(1..40)];
                let push = if queue { model.len() < 60 } else { rng.random_bool(0.5) };
                let at_tail = rng.random_bool(0.5);
                if push {
                    let stored = raw(d, &value);
                    if at_tail || queue {
                        let n = position::between(model.back().map(|(n, _)| n.as_slice()), None, d, Placement::AfterLow);
                        assert!(!table.put(&n, stored.clone()));
                        model.push_back((n, stored));
                    } else {
                        let n = position::between(None, model.front().map(|(n, _)| n.as_slice()), d, Placement::BeforeHigh);
                        assert!(!table.put(&n, stored.clone()));
                        model.push_front((n, stored));
                    }
                } else if let Some((n, stored)) = if at_tail && !queue { model.pop_back() } else { model.pop_front() } {
                    assert_eq!(table.remove(&n), Some(stored), "round {round} step {step}");
                }
                if step % 97 == 0 || model.len() < 3 {
                    let want: Vec<Vec<u8>> = model.iter().map(|(n, _)| n.clone()).collect();
                    assert_eq!(names_of(&table), want, "round {round} step {step}");
                    assert_eq!(table.edge(true).map(|n| n.to_vec()), want.last().cloned());
                    for (n, s) in model.iter().take(3).chain(model.iter().rev().take(3)) {
                        assert_eq!(table.get(n), Some(s.view()));
                    }
                }
            }
            if queue {
                // ~60 entries of at most ~60 bytes each, in at most two chunks: the
                // unused prefix a head pop leaves is reclaimed, not accumulated.
                let (bytes, chunks) = table.chunk_bytes();
                assert!(bytes < 2 * 60 * 64 + chunks * 256, "round {round}: {bytes} bytes in {chunks} chunks");
            }
        }
    }

    #[test]
    fn a_push_of_a_thousand_costs_about_its_values() {
        let mut table = ListTable::default();
        let d = dot(1 << 20, 1);
        let anchor = position::between(None, None, d, Placement::AfterLow);
        let mut names = vec![anchor.clone()];
        names.extend((1..1000).map(|k| position::below(&anchor, k, d)));
        for (i, n) in names.iter().enumerate() {
            table.put(n, raw(d, format!("member:{i:09}").as_bytes()));
        }
        let (bytes, _) = table.chunk_bytes();
        // A 16-byte value, its length, a tag, a digit step and an HLC step.
        assert!(bytes < 1000 * 24, "{bytes}");
        assert_eq!(names_of(&table), names);
        // Consecutive single-element pushes, one HLC apart.
        let mut table = ListTable::default();
        let mut last: Option<Vec<u8>> = None;
        for i in 0..1000u64 {
            let d = dot((1 << 20) + 3 * i, 2);
            let n = position::between(last.as_deref(), None, d, Placement::AfterLow);
            table.put(&n, raw(d, b"0123456789abcdef"));
            last = Some(n);
        }
        let (bytes, _) = table.chunk_bytes();
        assert!(bytes < 1000 * 24, "{bytes}");
    }

    #[test]
    fn retain_keeps_what_it_is_told_in_order() {
        let mut table = ListTable::default();
        let mut last: Option<Vec<u8>> = None;
        let mut names = Vec::new();
        for i in 0..600u64 {
            let d = dot(10 + i, 1);
            let n = position::between(last.as_deref(), None, d, Placement::AfterLow);
            table.put(&n, raw(d, b"v"));
            names.push(n.clone());
            last = Some(n);
        }
        table.retain(|_, stored| stored.view().newest_dot().is_some_and(|d| !d.hlc.0.is_multiple_of(3)));
        let want: Vec<Vec<u8>> = names.iter().enumerate().filter(|(i, _)| !(10 + *i as u64).is_multiple_of(3)).map(|(_, n)| n.clone()).collect();
        assert_eq!(names_of(&table), want);
        assert_eq!(table.entries_len(), want.len());
    }
}
