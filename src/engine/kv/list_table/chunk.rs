//! A list chunk: its entries' bytes (coded as `entry.rs` says) and the edits that
//! splice one entry in or out without recoding the rest. Part of [`super::ListTable`].
//!
//! Must never: produce an entry whose name is not in full at a chunk's start, or do I/O.

use super::entry::{
    DOT_EXPLICIT, Decoder, NAME_FULL, NAME_STEP, VALUE_INT, encode_entry, encode_head, entry_bytes_max, head_bytes_max, head_end,
    implied_dot, last_triple, set_last_triple,
};
use super::{CHUNK_ENTRIES_MAX, Name};
use crate::crdt::{Dot, Hlc};
use crate::engine::kv::element::ElementRef;
use crate::engine::kv::packed::{ByteOut, SliceOut, get_value, get_var, unzigzag};

/// The most a new end chunk reserves up front (see [`Chunk::first_of_run`]): a chunk of
/// big values regrows as it fills rather than reserving its neighbour's megabytes.
const RUN_ROOM_BYTES_MAX: usize = 16 * 1024;

/// Stack room for a head push's two coded entries (see [`Chunk::prepend_in_place`]).
const FRONT_STACK_BYTES: usize = 192;

/// Up to [`CHUNK_ENTRIES_MAX`] compact elements in name order, in one allocation.
#[derive(Clone, Debug, Default)]
pub(super) struct Chunk {
    pub(super) bytes: Vec<u8>,
    pub(super) count: u16,
    /// Where the last entry starts in `bytes` (0 when empty): with `last`, the tail
    /// entry is read without decoding the chunk (RPOP, LINDEX -1, a tail element's
    /// lookup before its write).
    last_at: u32,
    /// The last entry's name (appends are coded against it without decoding).
    pub(super) last: Name,
    /// Where every entry starts, in order, once a pop at the tail needed the entry
    /// before the last (entries are coded forward, so that takes a scan): kept while
    /// only appends and tail pops edit the chunk, so a run of RPOPs scans each chunk
    /// once instead of once per pop. Any other edit drops it. At most
    /// [`CHUNK_ENTRIES_MAX`] + 1 offsets (4 bytes each), and only on chunks popped at
    /// the tail.
    starts: Option<Vec<u32>>,
    /// Where the first entry starts: a pop at the head writes the entry after it (now
    /// first, so coded in full) over the popped entry's bytes when it fits there, and
    /// leaves the bytes before it unused rather than moving the whole chunk (LPOP
    /// runs in amortised constant time, where a listpack moves its rest). The unused
    /// prefix is reclaimed (the entries moved down) before an insert, and by a head
    /// pop once it exceeds the bytes in use, so it never exceeds them for long.
    pub(super) head: u32,
}

/// Replace `bytes[range]` with `with`, moving what follows once (`Vec::splice` fills
/// the gap byte by byte and may move the tail twice).
fn replace_range(bytes: &mut Vec<u8>, range: std::ops::Range<usize>, with: &[u8]) {
    let (start, end, len) = (range.start, range.end, bytes.len());
    debug_assert!(start <= end && end <= len);
    let new_end = start + with.len();
    if new_end > end {
        bytes.resize(len + (new_end - end), 0);
        bytes.copy_within(end..len, new_end);
    } else if new_end < end {
        bytes.copy_within(end..len, new_end);
        bytes.truncate(len - (end - new_end));
    }
    bytes[start..new_end].copy_from_slice(with);
}

impl Chunk {
    pub(super) fn build<'a>(entries: impl IntoIterator<Item = (&'a [u8], ElementRef<'a>)>) -> Chunk {
        let mut chunk = Chunk::default();
        for (name, element) in entries {
            chunk.append(name, element);
        }
        chunk.bytes.shrink_to_fit();
        chunk
    }

    /// A chunk of one entry with room for `room_bytes` (at most [`RUN_ROOM_BYTES_MAX`]):
    /// the next chunk of a run of pushes at one end, which the pushes fill about as far
    /// as they filled its full neighbour (`room_bytes`), so its bytes are allocated once
    /// instead of regrown seven or eight times on the way to ~1 KiB.
    pub(super) fn first_of_run(name: &[u8], element: ElementRef<'_>, room_bytes: usize) -> Chunk {
        let mut chunk = Chunk { bytes: Vec::with_capacity(room_bytes.min(RUN_ROOM_BYTES_MAX)), ..Chunk::default() };
        chunk.append(name, element);
        chunk
    }

    /// [`Chunk::first_of_run`] for a run of pushes at the head: the entry sits at the end
    /// of `room_bytes` (at most [`RUN_ROOM_BYTES_MAX`]), and the room before it is the
    /// unused prefix that the next pushes write into without moving anything (see
    /// [`Chunk::prepend_in_place`]).
    pub(super) fn first_of_front_run(name: &[u8], element: ElementRef<'_>, room_bytes: usize) -> Chunk {
        let mut entry = Vec::with_capacity(entry_bytes_max(name, element));
        encode_entry(&mut entry, None, name, element);
        let prefix = room_bytes.min(RUN_ROOM_BYTES_MAX).saturating_sub(entry.len());
        let mut bytes = Vec::with_capacity(prefix + entry.len());
        bytes.resize(prefix, 0);
        bytes.extend_from_slice(&entry);
        let chunk = Chunk { bytes, count: 1, last_at: prefix as u32, last: Name::from_slice(name), starts: None, head: prefix as u32 };
        chunk.debug_check_last_at();
        chunk
    }

    /// Add an entry after the last one (the caller keeps names ascending).
    pub(super) fn append(&mut self, name: &[u8], element: ElementRef<'_>) {
        debug_assert!(self.count == 0 || self.last.as_slice() < name, "chunk names ascend");
        debug_assert!((self.count as usize) < CHUNK_ENTRIES_MAX);
        let prev = (self.count > 0).then_some(self.last.as_slice());
        let at = self.bytes.len();
        encode_entry(&mut self.bytes, prev, name, element);
        self.last_at = at as u32;
        if let Some(starts) = &mut self.starts {
            starts.push(at as u32);
        }
        self.count += 1;
        self.last.clear();
        self.last.extend_from_slice(name);
        self.debug_check_last_at();
    }

    /// The last entry's element, read at `last_at` (its name is `last`): the name's
    /// coding is skipped, not decoded, since the name is known.
    pub(super) fn last_element(&self) -> Option<ElementRef<'_>> {
        if self.count == 0 {
            return None;
        }
        let bytes = &self.bytes;
        let tag = bytes[self.last_at as usize];
        let mut at = head_end(bytes, self.last_at as usize);
        let dot = if tag & DOT_EXPLICIT != 0 {
            let hlc = get_var(bytes, &mut at);
            let node = get_var(bytes, &mut at) as u16;
            Dot::new(Hlc(hlc), node)
        } else {
            implied_dot(tag, &self.last)
        };
        Some(get_value(bytes, &mut at, dot, tag & VALUE_INT != 0))
    }

    /// Debug builds: `last_at` and `last` name the entry a full decode ends on.
    fn debug_check_last_at(&self) {
        if cfg!(debug_assertions) {
            let mut decoder = Decoder::new(self);
            let mut last = None;
            while let Some((start, element)) = decoder.next_entry() {
                last = Some((start, element));
            }
            match last {
                None => debug_assert_eq!(self.count, 0),
                Some((start, element)) => {
                    debug_assert_eq!(start, self.last_at as usize, "last_at points at the last entry");
                    debug_assert_eq!(decoder.name.as_slice(), self.last.as_slice());
                    debug_assert_eq!(self.last_element(), Some(element));
                }
            }
            if let Some(starts) = &self.starts {
                debug_assert_eq!(starts.as_slice(), self.entry_starts().as_slice(), "starts names every entry's offset");
            }
        }
    }

    /// The first entry's name, stored in full.
    pub(super) fn first(&self) -> &[u8] {
        let head = self.head as usize;
        debug_assert_eq!(self.bytes[head] & 3, NAME_FULL);
        let mut at = head + 1;
        let len = get_var(&self.bytes, &mut at) as usize;
        &self.bytes[at..at + len]
    }

    pub(super) fn decode(&self) -> Vec<(Name, ElementRef<'_>)> {
        let mut out = Vec::with_capacity(self.count as usize);
        let mut decoder = Decoder::new(self);
        while let Some((_, element)) = decoder.next_entry() {
            out.push((Name::from_slice(&decoder.name), element));
        }
        debug_assert_eq!(out.len(), self.count as usize);
        out
    }

    /// Insert `name` (or replace it) at its place, not past the last entry: the bytes
    /// before it stay, the entry after it is recoded against it, the rest moves over in
    /// place (a push at the head is one move of the chunk's bytes, as a listpack's is).
    /// Returns whether it replaced an entry. May leave one entry over the bound (the
    /// caller splits).
    pub(super) fn splice_in(&mut self, name: &[u8], element: ElementRef<'_>) -> bool {
        debug_assert!(name <= self.last.as_slice());
        self.starts = None;
        if name < self.first() {
            if self.prepend_in_place(name, element) {
                return false;
            }
            if (self.count as usize) < CHUNK_ENTRIES_MAX {
                let needed = entry_bytes_max(name, element) + head_bytes_max(self.first());
                self.make_head_room(needed);
                let prepended = self.prepend_in_place(name, element);
                debug_assert!(prepended, "the room made holds the entry and the old head");
                if prepended {
                    return false;
                }
            }
        }
        self.reclaim_head();
        let mut decoder = Decoder::new(self);
        let mut prev: Option<Name> = None;
        // `last_in_middle`: where the last entry starts in `middle`, if it is recoded.
        let (start, rest, middle, replaced, last_in_middle) = loop {
            let (start, old) = decoder.next_entry().expect("a name not past the last has a place");
            let is_last = decoder.name.as_slice() == self.last.as_slice();
            match decoder.name.as_slice().cmp(name) {
                std::cmp::Ordering::Less => prev = Some(Name::from_slice(&decoder.name)),
                // The entry after keeps its coding: it was coded against this same name.
                std::cmp::Ordering::Equal => {
                    let mut middle = Vec::with_capacity(entry_bytes_max(name, element));
                    encode_entry(&mut middle, prev.as_deref(), name, element);
                    break (start, decoder.at, middle, true, is_last.then_some(0));
                }
                std::cmp::Ordering::Greater => {
                    let mut middle = Vec::with_capacity(entry_bytes_max(name, element) + entry_bytes_max(&decoder.name, old));
                    encode_entry(&mut middle, prev.as_deref(), name, element);
                    let second = middle.len();
                    encode_entry(&mut middle, Some(name), &decoder.name, old);
                    break (start, decoder.at, middle, false, is_last.then_some(second));
                }
            }
        };
        replace_range(&mut self.bytes, start..rest, &middle);
        self.last_at = match last_in_middle {
            Some(offset) => (start + offset) as u32,
            // The last entry is past the edit: it moved by the edit's growth.
            None => (self.last_at as usize + middle.len() - (rest - start)) as u32,
        };
        if !replaced {
            self.count += 1;
        }
        self.debug_check_last_at();
        replaced
    }

    /// Remove `name`, handing its element to `taken` before its bytes go (a removal
    /// that keeps nothing, as a pop on a node without peers, copies nothing out): the
    /// entry after it is recoded against the one before, the rest moves over.
    pub(super) fn splice_out<R>(&mut self, name: &[u8], taken: impl FnOnce(ElementRef<'_>) -> R) -> Option<R> {
        if self.count > 0 && name == self.last.as_slice() {
            return self.pop_last(taken);
        }
        self.starts = None;
        let mut decoder = Decoder::new(self);
        let mut prev: Option<Name> = None;
        let mut prev_start = 0;
        let (start, taken) = loop {
            let (start, element) = decoder.next_entry()?;
            match decoder.name.as_slice().cmp(name) {
                std::cmp::Ordering::Less => {
                    prev = Some(Name::from_slice(&decoder.name));
                    prev_start = start;
                }
                std::cmp::Ordering::Equal => break (start, taken(element)),
                std::cmp::Ordering::Greater => return None,
            }
        };
        // The entry after keeps its dot and value bytes: its head alone is recoded,
        // against the entry before the removed one (in full if none).
        let (rest, middle, next_is_last) = match decoder.next_entry() {
            Some((next_start, _)) => {
                let mut middle = Vec::with_capacity(head_bytes_max(&decoder.name));
                encode_head(&mut middle, self.bytes[next_start] & !3, prev.as_deref(), &decoder.name);
                (head_end(&self.bytes, next_start), middle, decoder.name.as_slice() == self.last.as_slice())
            }
            None => (self.bytes.len(), Vec::new(), false),
        };
        self.count -= 1;
        if start == self.head as usize && self.cut_head(rest, &middle, next_is_last) {
            return Some(taken);
        }
        // In place: the rest moves over (offsets are absolute: an unused prefix stays
        // as it is).
        replace_range(&mut self.bytes, start..rest, &middle);
        self.last_at = if self.last.as_slice() == name {
            // The entry before is the last now (none: the chunk is empty).
            self.last = prev.unwrap_or_default();
            prev_start as u32
        } else if next_is_last {
            start as u32
        } else {
            (self.last_at as usize + middle.len() - (rest - start)) as u32
        };
        self.debug_check_last_at();
        Some(taken)
    }

    /// Remove the first entry (LPOP), handing it and its name to `taken` before its
    /// bytes go: no search, the first entry is where the chunk starts.
    pub(super) fn pop_first<R>(&mut self, taken: impl FnOnce(&[u8], ElementRef<'_>) -> R) -> Option<(Name, R)> {
        if self.count <= 1 {
            // The first entry is the last.
            return self.pop_tail(taken);
        }
        self.starts = None;
        let mut decoder = Decoder::new(self);
        let (start, element) = decoder.next_entry()?;
        debug_assert_eq!(start, self.head as usize);
        let name = Name::from_slice(&decoder.name);
        let taken = taken(&name, element);
        let (next_start, _) = decoder.next_entry().expect("a chunk of two entries has a second");
        // The entry after keeps its dot and value bytes: its head is recoded in full.
        let mut middle = Vec::with_capacity(head_bytes_max(&decoder.name));
        encode_head(&mut middle, self.bytes[next_start] & !3, None, &decoder.name);
        let next_is_last = decoder.name.as_slice() == self.last.as_slice();
        let rest = head_end(&self.bytes, next_start);
        self.count -= 1;
        if !self.cut_head(rest, &middle, next_is_last) {
            replace_range(&mut self.bytes, start..rest, &middle);
            self.last_at = if next_is_last { start as u32 } else { (self.last_at as usize + middle.len() - (rest - start)) as u32 };
            self.debug_check_last_at();
        }
        Some((name, taken))
    }

    /// Remove the last entry (RPOP), handing it and its name to `taken`: see
    /// [`Chunk::pop_last`].
    pub(super) fn pop_tail<R>(&mut self, taken: impl FnOnce(&[u8], ElementRef<'_>) -> R) -> Option<(Name, R)> {
        // `from_slice`, not `clone`: a small vector's clone copies byte by byte.
        let name = Name::from_slice(&self.last);
        let taken = self.pop_last(|element| taken(&name, element))?;
        Some((name, taken))
    }

    /// The first entry went (`count` already lowered): its successor's head, recoded in
    /// full as `middle`, is written to end where the successor's head ended (`rest`),
    /// and the bytes before it go unused (nothing moves). False, changing nothing, when
    /// it does not fit there.
    fn cut_head(&mut self, rest: usize, middle: &[u8], next_is_last: bool) -> bool {
        let start = self.head as usize;
        if middle.len() > rest - start {
            return false;
        }
        let new_head = rest - middle.len();
        self.bytes[new_head..rest].copy_from_slice(middle);
        self.head = new_head as u32;
        if next_is_last {
            self.last_at = new_head as u32;
        }
        if self.count == 0 {
            *self = Chunk::default();
        } else if 2 * new_head > self.bytes.len() {
            // More unused than used: move the entries down (each byte moves about once
            // over a run of pops, and a queue that appends at the tail while it pops at
            // the head stays within twice its size).
            self.reclaim_head();
        }
        self.debug_check_last_at();
        true
    }

    /// Remove the last entry (RPOP): the bytes are cut where it starts, with no
    /// recoding and no move. The entry before it becomes the last: where it starts
    /// comes from `starts` (built by one scan, then kept), and its name from the
    /// removed entry's step when that is a step on the same node (a run of pushes by
    /// one node), else from a decode up to it.
    fn pop_last<R>(&mut self, taken: impl FnOnce(ElementRef<'_>) -> R) -> Option<R> {
        let taken = taken(self.last_element()?);
        let removed_at = self.last_at as usize;
        let tag = self.bytes[removed_at];
        if self.starts.is_none() {
            self.starts = Some(self.entry_starts());
        }
        let starts = self.starts.as_mut().expect("just made");
        let popped = starts.pop();
        debug_assert_eq!(popped, Some(removed_at as u32), "starts ends at the last entry");
        let new_last_at = starts.last().copied();
        self.count -= 1;
        match new_last_at {
            None => {
                debug_assert_eq!(self.count, 0);
                *self = Chunk::default();
            }
            Some(new_last_at) => {
                if tag & 3 == NAME_STEP {
                    // The removed name is the one before it with its last triple
                    // stepped: step it back.
                    let mut at = removed_at + 1;
                    let digit_step = get_var(&self.bytes, &mut at);
                    let hlc_step = unzigzag(get_var(&self.bytes, &mut at)) as u64;
                    let (digit, hlc, node) = last_triple(&self.last);
                    set_last_triple(&mut self.last, (digit - digit_step, hlc.wrapping_sub(hlc_step), node));
                } else {
                    let mut decoder = Decoder::new(self);
                    while let Some((start, _)) = decoder.next_entry() {
                        if start == new_last_at as usize {
                            break;
                        }
                    }
                    self.last = decoder.name;
                }
                self.bytes.truncate(removed_at);
                self.last_at = new_last_at;
            }
        }
        self.debug_check_last_at();
        Some(taken)
    }

    /// Insert `name` before the first entry into the unused prefix (see `head`) when the
    /// new entry and the old first one's head, recoded against it, fit where that head
    /// ended: nothing moves, and the old entry's dot and value are not read (a run of
    /// LPUSHes into a chunk made by [`Chunk::first_of_front_run`] writes each entry
    /// once, where a listpack moves its whole rest per push). Returns false, changing
    /// nothing, when they do not fit.
    fn prepend_in_place(&mut self, name: &[u8], element: ElementRef<'_>) -> bool {
        if self.count == 0 {
            return false;
        }
        // The two entries are coded on the stack when they surely fit (an element of up
        // to ~100 bytes), else in a buffer of their own.
        let max = entry_bytes_max(name, element) + head_bytes_max(self.first());
        if max <= FRONT_STACK_BYTES {
            let mut stack = [0u8; FRONT_STACK_BYTES];
            self.prepend_coded(&mut SliceOut::new(&mut stack), name, element)
        } else {
            self.prepend_coded(&mut Vec::with_capacity(max), name, element)
        }
    }

    /// [`Chunk::prepend_in_place`], coding the two entries into `front` (empty, room
    /// for both).
    fn prepend_coded(&mut self, front: &mut impl ByteOut, name: &[u8], element: ElementRef<'_>) -> bool {
        let head = self.head as usize;
        let old_end = head_end(&self.bytes, head);
        encode_entry(front, None, name, element);
        let second = front.written().len();
        encode_head(front, self.bytes[head] & !3, Some(name), self.first());
        let front = front.written();
        if front.len() > old_end {
            return false;
        }
        let new_head = old_end - front.len();
        self.bytes[new_head..old_end].copy_from_slice(front);
        if self.count == 1 {
            // The old first entry was the last too: it starts in the middle now.
            self.last_at = (new_head + second) as u32;
        }
        self.head = new_head as u32;
        self.count += 1;
        self.debug_check_last_at();
        true
    }

    /// Make room before the first entry for a run of head inserts: the entries move up
    /// once behind an unused prefix about as long as they are (at least `at_least`, at
    /// most [`RUN_ROOM_BYTES_MAX`]), so that the next inserts at the head fill it in
    /// place (amortised constant time, where moving the chunk per insert is linear in
    /// it). The prefix never exceeds the bytes in use by more than `at_least`, and a
    /// full chunk gives it back (`ListTable::put_at_end`).
    fn make_head_room(&mut self, at_least: usize) {
        let used = self.bytes.len() - self.head as usize;
        let room = used.min(RUN_ROOM_BYTES_MAX).max(at_least);
        let mut bytes = Vec::with_capacity(room + used);
        bytes.resize(room, 0);
        bytes.extend_from_slice(&self.bytes[self.head as usize..]);
        self.last_at = self.last_at - self.head + room as u32;
        if let Some(starts) = &mut self.starts {
            let shift = room as u32;
            let head = self.head;
            starts.iter_mut().for_each(|start| *start = *start - head + shift);
        }
        self.bytes = bytes;
        self.head = room as u32;
        self.debug_check_last_at();
    }

    /// Give back the unused prefix a head pop left (see `head`) by moving the entries
    /// to the front: before an insert that does not fit in it, so that pushes and pops
    /// at the head in turn do not grow the chunk, and when a chunk is full.
    pub(super) fn reclaim_head(&mut self) {
        let head = self.head as usize;
        if head == 0 {
            return;
        }
        self.bytes.drain(..head);
        self.last_at -= head as u32;
        self.head = 0;
        if let Some(starts) = &mut self.starts {
            starts.iter_mut().for_each(|start| *start -= head as u32);
        }
    }

    /// Where each entry starts, by a decode of the whole chunk.
    fn entry_starts(&self) -> Vec<u32> {
        let mut starts = Vec::with_capacity(self.count as usize);
        let mut decoder = Decoder::new(self);
        while let Some((start, _)) = decoder.next_entry() {
            starts.push(start as u32);
        }
        starts
    }

    pub(super) fn find(&self, name: &[u8]) -> Option<ElementRef<'_>> {
        match name.cmp(self.last.as_slice()) {
            std::cmp::Ordering::Greater => return None,
            // The tail entry (the one RPOP writes) is read where it starts.
            std::cmp::Ordering::Equal => return self.last_element(),
            std::cmp::Ordering::Less => {}
        }
        let mut decoder = Decoder::new(self);
        while let Some((_, element)) = decoder.next_entry() {
            match decoder.name.as_slice().cmp(name) {
                std::cmp::Ordering::Less => continue,
                std::cmp::Ordering::Equal => return Some(element),
                std::cmp::Ordering::Greater => return None,
            }
        }
        None
    }
}
