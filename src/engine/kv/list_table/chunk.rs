//! A list chunk's byte layout (see `list_table.rs` for the entry format and why): the
//! encoder, the decoder, and the edits that splice one entry in or out of a chunk
//! without recoding the rest. Part of [`super::ListTable`].
//!
//! Must never: produce an entry whose name is not in full at a chunk's start, or do I/O.

use super::{CHUNK_ENTRIES_MAX, Name};
use crate::crdt::{Dot, Hlc};
use crate::engine::kv::element::ElementRef;
use crate::engine::kv::packed::{get_value, get_var, put_var, unzigzag, zigzag};
use crate::engine::kv::position::TRIPLE_BYTES;

const NAME_FULL: u8 = 0;
const NAME_STEP: u8 = 1;
const NAME_STEP_NODE: u8 = 2;
/// The previous name with its id stepped (see [`id_of`]): `[hlc step zigzag varint]
/// [node varint][seq step zigzag varint]`.
const NAME_ID_STEP: u8 = 3;
const DOT_EXPLICIT: u8 = 1 << 2;
const VALUE_INT: u8 = 1 << 3;
/// The dot is the `(hlc, node)` of the name's id (see [`id_of`]).
const DOT_ID: u8 = 1 << 4;

/// Where an id ends in a name that carries one after a one-byte tag.
const ID_END: usize = 1 + 8 + 2 + 4;

/// The id `(hlc, node, seq)` of a name laid out as `[tag][hlc u64][node u16][seq u32]…`,
/// as a graph's element names are (`graph/store.rs`): consecutive elements of a graph
/// differ in their id alone, and an element's dot is usually its id's. Any name of
/// that length reads as one; the coding is exact whatever the bytes mean.
fn id_of(name: &[u8]) -> Option<(u64, u16, u32)> {
    let id = name.get(1..ID_END)?;
    Some((
        u64::from_be_bytes(id[..8].try_into().expect("eight bytes")),
        u16::from_be_bytes([id[8], id[9]]),
        u32::from_be_bytes(id[10..14].try_into().expect("four bytes")),
    ))
}

fn set_id(name: &mut [u8], (hlc, node, seq): (u64, u16, u32)) {
    name[1..9].copy_from_slice(&hlc.to_be_bytes());
    name[9..11].copy_from_slice(&node.to_be_bytes());
    name[11..ID_END].copy_from_slice(&seq.to_be_bytes());
}

/// The dot of an entry coded without an explicit one (`tag`'s dot bits).
fn implied_dot(tag: u8, name: &[u8]) -> Dot {
    if tag & DOT_ID != 0 {
        let (hlc, node, _) = id_of(name).expect("coded only for a name with an id");
        return Dot::new(Hlc(hlc), node);
    }
    let (_, hlc, node) = last_triple(name);
    Dot::new(Hlc(hlc), node)
}

/// The last triple of a position: `(digit, hlc, node)`.
fn last_triple(name: &[u8]) -> (u64, u64, u16) {
    let at = name.len() - TRIPLE_BYTES;
    let digit = u64::from_be_bytes(name[at..at + 8].try_into().expect("eight bytes"));
    let hlc = u64::from_be_bytes(name[at + 8..at + 16].try_into().expect("eight bytes"));
    let node = u16::from_be_bytes([name[at + 16], name[at + 17]]);
    (digit, hlc, node)
}

fn set_last_triple(name: &mut [u8], (digit, hlc, node): (u64, u64, u16)) {
    let at = name.len() - TRIPLE_BYTES;
    name[at..at + 8].copy_from_slice(&digit.to_be_bytes());
    name[at + 8..at + 16].copy_from_slice(&hlc.to_be_bytes());
    name[at + 16..at + 18].copy_from_slice(&node.to_be_bytes());
}

/// The most a new end chunk reserves up front (see [`Chunk::first_of_run`]): a chunk of
/// big values regrows as it fills rather than reserving its neighbour's megabytes.
const RUN_ROOM_BYTES_MAX: usize = 16 * 1024;

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
    head: u32,
}

/// Append one entry coded against `prev` (the previous entry's name, `None` first).
pub(super) fn encode_entry(out: &mut Vec<u8>, prev: Option<&[u8]>, name: &[u8], element: ElementRef<'_>) {
    let (dot, value_tag) = match element {
        ElementRef::Int(dot, _) => (dot, VALUE_INT),
        ElementRef::Raw(dot, _) => (dot, 0),
        ElementRef::Full(_) => unreachable!("a chunk holds compact elements only"),
    };
    // A name shorter than a triple is no position (a test or a bad peer made it): it
    // is stored in full with its dot, and the codec refuses it when it is read back.
    let triple = (name.len() >= TRIPLE_BYTES).then(|| last_triple(name));
    let id = id_of(name);
    let dot_tag = if triple.is_some_and(|(_, hlc, node)| Dot::new(Hlc(hlc), node) == dot) {
        0
    } else if id.is_some_and(|(hlc, node, _)| Dot::new(Hlc(hlc), node) == dot) {
        DOT_ID
    } else {
        DOT_EXPLICIT
    };
    let step = triple.and_then(|(digit, hlc, node)| {
        let prev = prev.filter(|p| p.len() == name.len() && p[..p.len() - TRIPLE_BYTES] == name[..name.len() - TRIPLE_BYTES])?;
        let (p_digit, p_hlc, p_node) = last_triple(prev);
        digit.checked_sub(p_digit).map(|d| (d, zigzag(hlc.wrapping_sub(p_hlc) as i64), p_node != node, node))
    });
    // Not a position's step: an id's, when only the id differs from the previous name.
    let id_step = match (step, id, prev) {
        (None, Some((hlc, node, seq)), Some(prev))
            if prev.len() == name.len() && prev[0] == name[0] && prev[ID_END..] == name[ID_END..] =>
        {
            let (p_hlc, _, p_seq) = id_of(prev).expect("same length");
            Some((zigzag(hlc.wrapping_sub(p_hlc) as i64), node, zigzag(i64::from(seq.wrapping_sub(p_seq) as i32))))
        }
        _ => None,
    };
    let name_tag = match step {
        None if id_step.is_some() => NAME_ID_STEP,
        None => NAME_FULL,
        Some((_, _, false, _)) => NAME_STEP,
        Some((_, _, true, _)) => NAME_STEP_NODE,
    };
    out.push(name_tag | dot_tag | value_tag);
    match step {
        None => match id_step {
            Some((hlc_step, node, seq_step)) => {
                put_var(out, hlc_step);
                put_var(out, u64::from(node));
                put_var(out, seq_step);
            }
            None => {
                put_var(out, name.len() as u64);
                out.extend_from_slice(name);
            }
        },
        Some((digit_step, hlc_step, node_differs, node)) => {
            put_var(out, digit_step);
            put_var(out, hlc_step);
            if node_differs {
                put_var(out, u64::from(node));
            }
        }
    }
    if dot_tag == DOT_EXPLICIT {
        put_var(out, dot.hlc.0);
        put_var(out, u64::from(dot.node));
    }
    match element {
        ElementRef::Int(_, n) => put_var(out, zigzag(n)),
        ElementRef::Raw(_, value) => {
            put_var(out, value.len() as u64);
            out.extend_from_slice(value);
        }
        ElementRef::Full(_) => unreachable!("checked above"),
    }
}

/// Bytes [`encode_entry`] writes for an entry at most: a tag, a name in full or as
/// three varint steps, an explicit dot, and the value with its length.
fn entry_bytes_max(name: &[u8], element: ElementRef<'_>) -> usize {
    let value = match element {
        ElementRef::Raw(_, value) => value.len(),
        _ => 0,
    };
    1 + name.len().max(2 * VARINT_MAX) + VARINT_MAX + 2 * VARINT_MAX + value + VARINT_MAX
}

const VARINT_MAX: usize = 10;

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

/// Decodes a chunk's entries in order; `name` is the current entry's name.
pub(super) struct Decoder<'a> {
    bytes: &'a [u8],
    pub(super) at: usize,
    pub(super) name: Name,
}

impl<'a> Decoder<'a> {
    pub(super) fn new(chunk: &'a Chunk) -> Decoder<'a> {
        Decoder { bytes: &chunk.bytes, at: chunk.head as usize, name: Name::new() }
    }

    /// The next entry (its name is then in `self.name`), with the offset it starts at.
    pub(super) fn next_entry(&mut self) -> Option<(usize, ElementRef<'a>)> {
        if self.at >= self.bytes.len() {
            return None;
        }
        let start = self.at;
        let bytes = self.bytes;
        let tag = bytes[self.at];
        self.at += 1;
        match tag & 3 {
            NAME_FULL => {
                let len = get_var(bytes, &mut self.at) as usize;
                self.name.clear();
                self.name.extend_from_slice(&bytes[self.at..self.at + len]);
                self.at += len;
            }
            NAME_ID_STEP => {
                let (hlc, _, seq) = id_of(&self.name).expect("an id step follows a name with an id");
                let hlc = hlc.wrapping_add(unzigzag(get_var(bytes, &mut self.at)) as u64);
                let node = get_var(bytes, &mut self.at) as u16;
                let seq = seq.wrapping_add(unzigzag(get_var(bytes, &mut self.at)) as i32 as u32);
                set_id(&mut self.name, (hlc, node, seq));
            }
            kind => {
                let (digit, hlc, node) = last_triple(&self.name);
                let digit = digit + get_var(bytes, &mut self.at);
                let hlc = hlc.wrapping_add(unzigzag(get_var(bytes, &mut self.at)) as u64);
                let node = if kind == NAME_STEP_NODE { get_var(bytes, &mut self.at) as u16 } else { node };
                set_last_triple(&mut self.name, (digit, hlc, node));
            }
        }
        let dot = if tag & DOT_EXPLICIT != 0 {
            let hlc = get_var(bytes, &mut self.at);
            let node = get_var(bytes, &mut self.at) as u16;
            Dot::new(Hlc(hlc), node)
        } else {
            implied_dot(tag, &self.name)
        };
        let element = get_value(bytes, &mut self.at, dot, tag & VALUE_INT != 0);
        Some((start, element))
    }
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
        let mut at = self.last_at as usize;
        let tag = bytes[at];
        at += 1;
        match tag & 3 {
            NAME_FULL => {
                let len = get_var(bytes, &mut at) as usize;
                at += len;
            }
            kind => {
                get_var(bytes, &mut at);
                get_var(bytes, &mut at);
                if kind != NAME_STEP {
                    get_var(bytes, &mut at);
                }
            }
        }
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
        if name < self.first() && self.prepend_in_place(name, element) {
            return false;
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
        let (rest, middle, next_is_last) = match decoder.next_entry() {
            Some((_, next)) => {
                let mut middle = Vec::with_capacity(entry_bytes_max(&decoder.name, next));
                encode_entry(&mut middle, prev.as_deref(), &decoder.name, next);
                (decoder.at, middle, decoder.name.as_slice() == self.last.as_slice())
            }
            None => (self.bytes.len(), Vec::new(), false),
        };
        self.count -= 1;
        if start == self.head as usize && middle.len() <= rest - start {
            // The head entry went: its successor, coded in full now, ends where it
            // ended, and the bytes before it go unused (nothing moves).
            let new_head = rest - middle.len();
            self.bytes[new_head..rest].copy_from_slice(&middle);
            self.head = new_head as u32;
            if next_is_last {
                self.last_at = new_head as u32;
            }
            if self.count == 0 {
                *self = Chunk::default();
            } else if 2 * new_head > self.bytes.len() {
                // More unused than used: move the entries down (each byte moves about
                // once over a run of pops, and a queue that appends at the tail while
                // it pops at the head stays within twice its size).
                self.reclaim_head();
            }
            self.debug_check_last_at();
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
    /// new entry and the old first one, recoded against it, fit where the old one ended:
    /// nothing moves (a run of LPUSHes into a chunk made by [`Chunk::first_of_front_run`]
    /// writes each entry once, where a listpack moves its whole rest per push). Returns
    /// false, changing nothing, when they do not fit.
    fn prepend_in_place(&mut self, name: &[u8], element: ElementRef<'_>) -> bool {
        let mut decoder = Decoder::new(self);
        let Some((start, old)) = decoder.next_entry() else { return false };
        debug_assert_eq!(start, self.head as usize);
        let rest = decoder.at;
        let mut middle = Vec::with_capacity(entry_bytes_max(name, element) + entry_bytes_max(&decoder.name, old));
        encode_entry(&mut middle, None, name, element);
        let second = middle.len();
        encode_entry(&mut middle, Some(name), &decoder.name, old);
        if middle.len() > rest {
            return false;
        }
        let new_head = rest - middle.len();
        self.bytes[new_head..rest].copy_from_slice(&middle);
        if self.count == 1 {
            // The old first entry was the last too: it starts in the middle now.
            self.last_at = (new_head + second) as u32;
        }
        self.head = new_head as u32;
        self.count += 1;
        self.debug_check_last_at();
        true
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
