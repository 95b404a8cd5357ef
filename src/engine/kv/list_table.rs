//! The storage of a list's elements: its compact elements packed in position order
//! into chunks of at most [`CHUNK_ENTRIES_MAX`], as Redis's quicklist packs a list into
//! listpacks, and the few elements with more history than one value at one dot (a
//! tombstone, concurrent LSETs) in a side map. The element semantics are those of
//! `elements.rs` (this is one of its table forms); the order is the byte order of the
//! position names (`position.rs`). A graph's elements are stored here too, in the byte
//! order of their names (`graph/store.rs`): nothing below needs a name to be a position
//! (one that is not is coded in full, or stepped as bytes, see `chunk.rs`).
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
//! `[node varint]`; `3` the previous name with its graph id stepped, `[hlc step zigzag
//! varint][node varint][seq step zigzag varint]`), then the dot (bit 2: `0` implied,
//! `1` `[hlc varint][node varint]`; implied is the name's last triple, or with bit 4
//! the `(hlc, node)` of its graph id), then the value (bit 3: `0` bytes `[len
//! varint][bytes]`; `1` an integer, zigzag varint). A chunk's first entry always has
//! its name in full, so a chunk's first name is read without decoding. A graph's edge
//! created with the ones before it in a query so costs a tag, three bytes of name and
//! its value.
//!
//! Must never: hold a non-compact element in a chunk, an empty chunk, a chunk over
//! [`CHUNK_ENTRIES_MAX`], or one name twice; do I/O.

use std::collections::VecDeque;

use smallvec::SmallVec;

use super::element::{ElementRef, Stored};

mod chunk;
mod entry;
mod side_map;
mod side_name;
mod walk;

use chunk::Chunk;
use side_map::SideMap;
pub use walk::Walk;

/// Elements in one chunk at most (Redis's quicklist nodes hold ~128 small elements at
/// its default `list-max-listpack-size -2`, 8 KiB).
pub const CHUNK_ENTRIES_MAX: usize = 128;

/// A position name, held inline up to two levels (a push's elements below its anchor).
pub type Name = super::position::Position;

/// Whether an element can live in a chunk (one value at one dot; a tombstone, even
/// a compact one, lives in the side map).
fn is_compact(element: ElementRef<'_>) -> bool {
    element.plain_dot().is_some()
}

/// A list's elements: compact ones in chunks, the rest in a side map (see the module
/// docs). Every name is in exactly one of the two.
#[derive(Clone, Debug, Default)]
pub struct ListTable {
    /// In name order. A deque, not a `Vec`: a new head chunk (every 128th LPUSH) and an
    /// emptied head chunk (every 128th LPOP) would otherwise move every chunk's header,
    /// ~110 bytes per 128 elements of the list (0.9 MB at a million elements).
    chunks: VecDeque<Chunk>,
    /// Elements that are not one value at one dot (tombstones, concurrent values), in
    /// name order: sorted runs, so that a queue's pops, each leaving its tombstone
    /// next to the previous one on a node with peers, insert at a run's end
    /// (`side_map.rs`). Each name is held inline (a position of up to two levels).
    others: SideMap,
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
    pub fn others(&self) -> impl Iterator<Item = (&Name, &Stored)> + '_ {
        self.others.iter().map(|(name, stored)| (&name.0, stored))
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

    /// [`ListTable::put_view`] of a new name past the tail (`tail`) or before the head
    /// of every chunked entry (a push's: its name is new, made from the push's own
    /// dot): the end chunk is reached directly, with no search for the name's chunk.
    /// Other cases (no chunk yet, a non-compact element, a planted bug that records
    /// arrivals) go through [`ListTable::put_view`].
    pub fn put_at_end(&mut self, tail: bool, name: &[u8], element: ElementRef<'_>) {
        debug_assert!(self.get(name).is_none(), "a push's name is new");
        if !is_compact(element) || crate::bugs::active(crate::bugs::Bug::ListOrderByArrival) {
            self.put_view(name, element);
            return;
        }
        if tail {
            let Some(i) = self.chunks.len().checked_sub(1) else {
                self.put_view(name, element);
                return;
            };
            let chunk = &mut self.chunks[i];
            debug_assert!(name > chunk.last.as_slice(), "a tail push lands past every chunk");
            // As `put_chunked` appends past the last chunk's last entry.
            if (chunk.count as usize) < CHUNK_ENTRIES_MAX {
                chunk.append(name, element);
            } else {
                chunk.bytes.shrink_to_fit();
                let room = chunk.bytes.len();
                self.chunks.push_back(Chunk::first_of_run(name, element, room));
            }
        } else {
            let Some(front) = self.chunks.front_mut() else {
                self.put_view(name, element);
                return;
            };
            debug_assert!(name < front.first(), "a head push lands before every chunk");
            if front.count as usize >= CHUNK_ENTRIES_MAX {
                // As `put_chunked` starts a new first chunk before a full one.
                front.reclaim_head();
                front.bytes.shrink_to_fit();
                let room = front.bytes.len();
                self.chunks.push_front(Chunk::first_of_front_run(name, element, room));
            } else {
                let replaced = front.splice_in(name, element);
                debug_assert!(!replaced && front.count as usize <= CHUNK_ENTRIES_MAX);
            }
        }
        self.chunked += 1;
    }

    /// Insert or replace the entry `name`; returns whether it was present.
    pub fn put(&mut self, name: &[u8], stored: Stored) -> bool {
        if is_compact(stored.view()) {
            return self.put_view(name, stored.view());
        }
        self.note_arrival(name);
        let was_chunked = self.take_chunked_with(name, |_| ()).is_some();
        if stored.view().exists() {
            self.others_live += 1;
        }
        let was_other = match self.others.insert(name, stored) {
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

    /// [`ListTable::put`] of a non-compact element (a pop's tombstone) whose name the
    /// caller has just cut from its chunk ([`ListTable::pop_end`]): no chunk is
    /// searched for it again.
    pub fn put_other_unchunked(&mut self, name: &[u8], stored: Stored) {
        debug_assert!(!is_compact(stored.view()), "a compact element goes in a chunk");
        debug_assert!(self.chunk_for(name).is_none_or(|i| self.chunks[i].find(name).is_none()), "no chunk holds it");
        self.note_arrival(name);
        if stored.view().exists() {
            self.others_live += 1;
        }
        if let Some(old) = self.others.insert(name, stored)
            && old.view().exists()
        {
            self.others_live -= 1;
        }
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
            None if self.chunks.front().is_none_or(|c| c.count as usize >= CHUNK_ENTRIES_MAX) => {
                // The full chunk grew in place (pushes at the head): its spare room goes.
                let room = self.chunks.front_mut().map_or(0, |full| {
                    full.reclaim_head();
                    full.bytes.shrink_to_fit();
                    full.bytes.len()
                });
                self.chunks.push_front(Chunk::first_of_front_run(name, element, room));
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
                let room = chunk.bytes.len();
                self.chunks.insert(i + 1, Chunk::first_of_run(name, element, room));
            }
            self.chunked += 1;
            return false;
        }
        let replaced = self.chunks[i].splice_in(name, element);
        if !replaced {
            self.chunked += 1;
        }
        if self.chunks[i].count as usize > CHUNK_ENTRIES_MAX {
            // Split in two halves (once per half a chunk of inserts into it), or right
            // after the new entry when the next name is of another kind (another first
            // byte): a graph's new nodes all land just before its first property, and
            // then go on as appends to the left part instead of splices into a chunk.
            let entries = self.chunks[i].decode();
            let at = entries.iter().position(|(n, _)| n.as_slice() == name).map_or(entries.len(), |at| at + 1);
            let half = match entries.get(at) {
                Some((next, _)) if next.first() != name.first() => at,
                _ => entries.len() / 2,
            };
            let halves = [
                Chunk::build(entries[..half].iter().map(|(n, e)| (n.as_slice(), *e))),
                Chunk::build(entries[half..].iter().map(|(n, e)| (n.as_slice(), *e))),
            ];
            drop(entries);
            let [left, right] = halves;
            self.chunks[i] = left;
            self.chunks.insert(i + 1, right);
        }
        replaced
    }

    /// Whether every live element is in a chunk (none in the side map): then the live
    /// head and tail are the first and the last chunk entries (what a pop takes).
    pub fn live_all_chunked(&self) -> bool {
        self.others_live == 0
    }

    /// Take the entry at the head (`tail`: at the tail) out of its chunk, handing its
    /// name and element to `taken` before its bytes go: a pop finds, reads and removes
    /// its element in one step (no lookup by name, no second search for the removal).
    /// The caller has checked [`ListTable::live_all_chunked`], so the entry taken is the
    /// live end of the list. `None` when no chunk holds an entry.
    pub fn pop_end<R>(&mut self, tail: bool, taken: impl FnOnce(&[u8], ElementRef<'_>) -> R) -> Option<(Name, R)> {
        debug_assert!(self.live_all_chunked(), "a pop from a chunk end needs every live element chunked");
        let i = if tail { self.chunks.len().checked_sub(1)? } else { 0 };
        let chunk = self.chunks.get_mut(i)?;
        debug_assert!(chunk.count > 0, "no chunk is empty");
        let (name, taken) = if tail { chunk.pop_tail(taken)? } else { chunk.pop_first(taken)? };
        if chunk.count == 0 {
            self.chunks.remove(i);
        }
        self.chunked -= 1;
        Some((name, taken))
    }

    fn take_chunked(&mut self, name: &[u8]) -> Option<Stored> {
        self.take_chunked_with(name, Stored::from_view)
    }

    /// Remove the entry `name` and keep nothing of it (no copy of its value): returns
    /// whether it was present.
    pub fn discard(&mut self, name: &[u8]) -> bool {
        self.take_other(name).is_some() || self.take_chunked_with(name, |_| ()).is_some()
    }

    fn take_chunked_with<R>(&mut self, name: &[u8], taken: impl FnOnce(ElementRef<'_>) -> R) -> Option<R> {
        let i = self.chunk_for(name)?;
        if name > self.chunks[i].last.as_slice() {
            return None;
        }
        let taken = self.chunks[i].splice_out(name, taken)?;
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
            let kept = keep(&name.0, stored.view());
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
            let chunk = if tail { self.chunks.back() } else { self.chunks.front() };
            return chunk.map(|c| if tail { Name::from_slice(&c.last) } else { Name::from_slice(c.first()) });
        }
        self.walk(tail, true).next().map(|(n, _)| n)
    }

    /// The last chunked entry's name (a name past it can be appended to the last chunk,
    /// [`ListTable::put_at_end`]).
    pub fn chunked_last(&self) -> Option<&[u8]> {
        self.chunks.back().map(|chunk| chunk.last.as_slice())
    }

    /// How many chunks end before `name` (a forward read from `name` starts at the next;
    /// a stream's counters are in the first chunk, so that case takes no search).
    fn chunks_before(&self, name: &[u8]) -> usize {
        match self.chunks.front() {
            Some(first) if name <= &first.last[..] => 0,
            _ => self.chunks.partition_point(|c| &c.last[..] < name),
        }
    }

    /// The live entry at the tail with its name, reading only the last chunk's tail
    /// when every live element is chunked (a stream's last entry, on every XADD).
    pub fn last_live(&self) -> Option<(Name, ElementRef<'_>)> {
        if self.others_live == 0 {
            let chunk = self.chunks.back()?;
            return chunk.last_element().map(|element| (Name::from_slice(&chunk.last), element));
        }
        self.walk(true, true).next()
    }

    /// Hand the live entries from `from` on, in order, to `keep` while it says so: the
    /// chunks are decoded in place, names borrowed from the decoder, when every live
    /// element is chunked (a stream's counters, read on every XADD); a walk otherwise.
    pub fn scan_live_from<'a>(&'a self, from: &[u8], mut keep: impl FnMut(&[u8], ElementRef<'a>) -> bool) {
        if self.others_live != 0 {
            let mut walk = self.walk_at(from, false, true);
            while let Some((name, element)) = walk.next_entry() {
                if name >= from && !keep(name, element) {
                    return;
                }
            }
            return;
        }
        for chunk in self.chunks.range(self.chunks_before(from)..) {
            let mut decoder = entry::Decoder::new(chunk);
            while let Some((_, element)) = decoder.next_entry() {
                if decoder.name.as_slice() >= from && !keep(&decoder.name, element) {
                    return;
                }
            }
        }
    }

    /// The entries in list order (`rev`: from the tail); `live_only` skips tombstones.
    pub fn walk(&self, rev: bool, live_only: bool) -> Walk<'_> {
        Walk {
            table: self,
            rev,
            live_only,
            chunks_left: self.chunks.len(),
            buffer: SmallVec::new(),
            decoder: None,
            tail_only_of: None,
            taken: 0,
            // A walk of live entries passes the side map by when it holds none live (a
            // queue's pops on a node with peers leave tens of thousands of tombstones
            // there, all before the live elements: skipping them one by one made
            // LRANGE 0 9 take ~20 ms after 200,000 LPOPs).
            others: if live_only && self.others_live == 0 { self.others.iter_none() } else { self.others.iter() },
            others_next: None,
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

    /// The entries in name order from about `name` (`rev`: backward): chunks wholly
    /// before it (after it, when `rev`) are skipped unread, found by binary search. A few
    /// entries before `name` may still come (side-map entries, the first chunk's):
    /// callers skip them. Streams seek this way (XRANGE from an id).
    pub fn walk_at(&self, name: &[u8], rev: bool, live_only: bool) -> Walk<'_> {
        let mut walk = self.walk(rev, live_only);
        // A stream's counters are in the first chunk, its last entry in the last one.
        let skipped = if rev {
            // Chunks whose first name is past `name`, counted from the back.
            match self.chunks.back() {
                Some(last) if last.first() <= name => 0,
                _ => self.chunks.len() - self.chunks.partition_point(|c| c.first() <= name),
            }
        } else {
            self.chunks_before(name)
        };
        walk.chunks_left -= skipped;
        walk
    }
}

#[cfg(test)]
mod tests;
