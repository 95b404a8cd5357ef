//! The packed form of a small hash or set: every element, its name, its value and its
//! dot in one allocation, as Redis's listpack holds a small hash (DESIGN §3 memory
//! budget). An element whose state is more than one value at one dot (a tombstone,
//! a counter, concurrent values) cannot be packed: its collection goes to the map form
//! of `elements.rs`, which is also the form past the size limits below.
//!
//! Layout: `[count u8][dots u8][dots × (hlc u64 LE, node u16 LE)]`, then per element
//! in insertion order `[name length, varint][name][tag u8][value]`: the tag is the
//! element's dot's index in the dot table times two, plus 0 for an integer value (a
//! zigzag varint follows) or 1 for a byte string (length varint and bytes follow).
//! Writes of one command share a dot, so the table stays short. An empty blob is an
//! empty collection.
//!
//! Must never: hold more than [`PACKED_ENTRIES_MAX`] elements or a name or value
//! longer than [`PACKED_BYTES_MAX`] (every operation is a linear walk), or do I/O.

use super::element::ElementRef;
use crate::crdt::{Dot, Hlc};

/// At most this many elements are packed (Redis's default `hash-max-listpack-entries`).
pub const PACKED_ENTRIES_MAX: usize = 128;
/// Names and values longer than this are not packed (Redis's `hash-max-listpack-value`).
pub const PACKED_BYTES_MAX: usize = 64;
/// How far one collection takes the packed form: Redis's listpack settings
/// (`hash-max-listpack-entries` and `-value`, `set-max-intset-entries`, `CONFIG SET`
/// included), capped at [`PACKED_ENTRIES_MAX`] and [`PACKED_BYTES_MAX`], past which a
/// linear walk costs more than the memory it saves. Checked when an element is written,
/// as Redis converts an encoding when a write crosses its limit.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PackLimit {
    pub entries: u8,
    pub bytes: u8,
}

impl PackLimit {
    /// The caps themselves (Redis's defaults reach them).
    pub const CAPPED: PackLimit = PackLimit { entries: PACKED_ENTRIES_MAX as u8, bytes: PACKED_BYTES_MAX as u8 };

    /// A setting's limits, capped.
    pub fn capped(entries: usize, bytes: usize) -> PackLimit {
        PackLimit { entries: entries.min(PACKED_ENTRIES_MAX) as u8, bytes: bytes.min(PACKED_BYTES_MAX) as u8 }
    }
}

const _: () = assert!(PACKED_ENTRIES_MAX <= u8::MAX as usize, "a PackLimit holds its entries in a byte");
const _: () = assert!(PACKED_BYTES_MAX <= u8::MAX as usize, "a PackLimit holds its bytes in a byte");

/// Distinct dots a packed collection may hold (the tag keeps one bit for the kind).
const PACKED_DOTS_MAX: usize = 127;
const DOT_BYTES: usize = 10;

/// A small collection's elements in one allocation.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Packed(Box<[u8]>);

/// Where varints and list entries are coded: a `Vec`, or a [`SliceOut`] over a stack
/// buffer (a head push codes its entry there and copies it into place: no
/// allocation per LPUSH).
pub(crate) trait ByteOut {
    fn put_byte(&mut self, byte: u8);
    fn put_bytes(&mut self, bytes: &[u8]);
    /// What was coded so far.
    fn written(&self) -> &[u8];
}

impl ByteOut for Vec<u8> {
    #[inline(always)]
    fn put_byte(&mut self, byte: u8) {
        self.push(byte);
    }
    #[inline(always)]
    fn put_bytes(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
    fn written(&self) -> &[u8] {
        self
    }
}

/// Codes into a slice from its start; writing past its end is a panic (callers size
/// it from the coders' bounds).
pub(crate) struct SliceOut<'a> {
    bytes: &'a mut [u8],
    len: usize,
}

impl<'a> SliceOut<'a> {
    pub(crate) fn new(bytes: &'a mut [u8]) -> SliceOut<'a> {
        SliceOut { bytes, len: 0 }
    }
}

impl ByteOut for SliceOut<'_> {
    #[inline(always)]
    fn put_byte(&mut self, byte: u8) {
        self.bytes[self.len] = byte;
        self.len += 1;
    }
    #[inline(always)]
    fn put_bytes(&mut self, bytes: &[u8]) {
        self.bytes[self.len..self.len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
    }
    fn written(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// LEB128 varint, shared with the list chunks (`list_table/chunk.rs`).
pub(crate) fn put_var(out: &mut impl ByteOut, mut n: u64) {
    while n >= 0x80 {
        out.put_byte((n as u8) | 0x80);
        n >>= 7;
    }
    out.put_byte(n as u8);
}

fn var_len(mut n: u64) -> usize {
    let mut len = 1;
    while n >= 0x80 {
        n >>= 7;
        len += 1;
    }
    len
}

/// Read a varint written by [`put_var`] (the blob is built here, so it is well formed).
pub(crate) fn get_var(bytes: &[u8], at: &mut usize) -> u64 {
    let mut n = 0u64;
    let mut shift = 0;
    loop {
        let byte = bytes[*at];
        *at += 1;
        n |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return n;
        }
        shift += 7;
    }
}

/// Read an element's value at `at`: a zigzag varint when `int`, else a varint length and
/// the bytes (shared with the list chunks, which store values the same way).
pub(crate) fn get_value<'a>(bytes: &'a [u8], at: &mut usize, dot: Dot, int: bool) -> ElementRef<'a> {
    if int {
        ElementRef::Int(dot, unzigzag(get_var(bytes, at)))
    } else {
        let len = get_var(bytes, at) as usize;
        let value = &bytes[*at..*at + len];
        *at += len;
        ElementRef::Raw(dot, value)
    }
}

pub(crate) fn zigzag(n: i64) -> u64 {
    ((n << 1) ^ (n >> 63)) as u64
}

pub(crate) fn unzigzag(n: u64) -> i64 {
    ((n >> 1) as i64) ^ -((n & 1) as i64)
}

impl Packed {
    /// Elements held.
    pub fn len(&self) -> usize {
        self.0.first().map_or(0, |n| *n as usize)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes allocated (MEMORY USAGE).
    pub fn bytes(&self) -> usize {
        self.0.len()
    }

    fn dot(&self, index: usize) -> Dot {
        let at = 2 + index * DOT_BYTES;
        let hlc = u64::from_le_bytes(self.0[at..at + 8].try_into().expect("eight bytes"));
        let node = u16::from_le_bytes(self.0[at + 8..at + 10].try_into().expect("two bytes"));
        Dot::new(Hlc(hlc), node)
    }

    /// The elements in insertion order.
    pub fn iter(&self) -> PackedIter<'_> {
        let (left, at) = match self.0.as_ref() {
            [] => (0, 0),
            [count, dots, ..] => (*count as usize, 2 + *dots as usize * DOT_BYTES),
            [_] => unreachable!("a packed blob has a header"),
        };
        PackedIter { packed: self, at, left }
    }

    /// The element named `name`, with its index.
    pub fn find(&self, name: &[u8]) -> Option<(usize, ElementRef<'_>)> {
        self.iter().enumerate().find(|(_, (n, _))| *n == name).map(|(i, (_, e))| (i, e))
    }

    /// These elements packed, if they can be: at most `limit.entries`, every one
    /// compact, with a name and value no longer than `limit.bytes`, at most
    /// [`PACKED_DOTS_MAX`] dots among them. Names are distinct (the caller's map or
    /// blob says so).
    pub fn build<'a>(items: impl Iterator<Item = (&'a [u8], ElementRef<'a>)> + Clone, limit: PackLimit) -> Option<Packed> {
        let (entries_max, bytes_max) = (usize::from(limit.entries), usize::from(limit.bytes));
        debug_assert!(entries_max <= PACKED_ENTRIES_MAX && bytes_max <= PACKED_BYTES_MAX);
        let mut dots: smallvec::SmallVec<[Dot; 4]> = smallvec::SmallVec::new();
        let mut count = 0;
        let mut body = 0;
        for (name, element) in items.clone() {
            count += 1;
            if count > entries_max || name.len() > bytes_max {
                return None;
            }
            let dot = match element {
                ElementRef::Int(dot, n) => {
                    body += var_len(zigzag(n));
                    dot
                }
                ElementRef::Raw(dot, value) if value.len() <= bytes_max => {
                    body += var_len(value.len() as u64) + value.len();
                    dot
                }
                _ => return None,
            };
            if !dots.contains(&dot) {
                if dots.len() == PACKED_DOTS_MAX {
                    return None;
                }
                dots.push(dot);
            }
            body += var_len(name.len() as u64) + name.len() + 1;
        }
        if count == 0 {
            return Some(Packed::default());
        }
        let mut out = Vec::with_capacity(2 + dots.len() * DOT_BYTES + body);
        out.push(count as u8);
        out.push(dots.len() as u8);
        for dot in &dots {
            out.extend_from_slice(&dot.hlc.0.to_le_bytes());
            out.extend_from_slice(&dot.node.to_le_bytes());
        }
        for (name, element) in items {
            put_var(&mut out, name.len() as u64);
            out.extend_from_slice(name);
            let (dot, kind) = match element {
                ElementRef::Int(dot, _) => (dot, 0),
                ElementRef::Raw(dot, _) => (dot, 1),
                ElementRef::Tombstone(_) | ElementRef::Full(_) => unreachable!("checked above"),
            };
            let index = dots.iter().position(|d| *d == dot).expect("every dot is in the table");
            out.push((index as u8) << 1 | kind);
            match element {
                ElementRef::Int(_, n) => put_var(&mut out, zigzag(n)),
                ElementRef::Raw(_, value) => {
                    put_var(&mut out, value.len() as u64);
                    out.extend_from_slice(value);
                }
                ElementRef::Tombstone(_) | ElementRef::Full(_) => unreachable!("checked above"),
            }
        }
        debug_assert_eq!(out.len(), out.capacity());
        Some(Packed(out.into_boxed_slice()))
    }

    /// This collection with `name` holding `element` (replaced in place, or added at
    /// the end), if it still packs.
    pub fn with_element(&self, name: &[u8], element: ElementRef<'_>, limit: PackLimit) -> Option<Packed> {
        let present = self.find(name).is_some();
        let items = self.iter().map(move |(n, e)| if n == name { (n, element) } else { (n, e) });
        let added = (!present).then_some((name, element));
        Packed::build(items.chain(added), limit)
    }
}

/// The elements of a [`Packed`], in order.
#[derive(Clone)]
pub struct PackedIter<'a> {
    packed: &'a Packed,
    at: usize,
    left: usize,
}

impl<'a> Iterator for PackedIter<'a> {
    type Item = (&'a [u8], ElementRef<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let bytes = &self.packed.0;
        let name_len = get_var(bytes, &mut self.at) as usize;
        let name = &bytes[self.at..self.at + name_len];
        self.at += name_len;
        let tag = bytes[self.at];
        self.at += 1;
        let dot = self.packed.dot((tag >> 1) as usize);
        let element = get_value(bytes, &mut self.at, dot, tag & 1 == 0);
        Some((name, element))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dot(ms: u64, node: u16) -> Dot {
        Dot::new(Hlc::from_parts(ms, 1), node)
    }

    #[test]
    fn packs_and_reads_back_in_order_sharing_dots() {
        let items: Vec<(&[u8], ElementRef<'_>)> = vec![
            (b"f1", ElementRef::Raw(dot(5, 1), b"value-1")),
            (b"", ElementRef::Int(dot(5, 1), -7)),
            (b"f3", ElementRef::Int(dot(9, 2), i64::MIN)),
            (b"f4", ElementRef::Raw(dot(5, 1), b"")),
            (b"f5", ElementRef::Int(dot(9, 2), i64::MAX)),
        ];
        let packed = Packed::build(items.iter().copied(), PackLimit::CAPPED).expect("packs");
        assert_eq!(packed.len(), 5);
        let back: Vec<_> = packed.iter().collect();
        assert_eq!(back, items);
        // Header, two dots, then the elements.
        // Header and two dots (22), then f1 (12), "" (3), f3 (14), f4 (5), f5 (14).
        assert_eq!(packed.bytes(), 70);
        assert_eq!(packed.find(b"f3").map(|(i, _)| i), Some(2));
        assert!(packed.find(b"f6").is_none());
        let replaced = packed.with_element(b"f3", ElementRef::Raw(dot(11, 3), b"x"), PackLimit::CAPPED).expect("packs");
        assert_eq!(replaced.find(b"f3"), Some((2, ElementRef::Raw(dot(11, 3), b"x" as &[u8]))));
        let added = replaced.with_element(b"f6", ElementRef::Int(dot(12, 3), 1), PackLimit::CAPPED).expect("packs");
        assert_eq!(added.iter().map(|(n, _)| n).collect::<Vec<_>>(), [b"f1" as &[u8], b"", b"f3", b"f4", b"f5", b"f6"]);
        assert!(Packed::build(std::iter::empty(), PackLimit::CAPPED).is_some_and(|p| p.is_empty() && p.bytes() == 0));
    }

    #[test]
    fn refuses_what_a_listpack_would_not_hold() {
        let long = [b'x'; PACKED_BYTES_MAX + 1];
        assert!(Packed::build(std::iter::once((&long[..], ElementRef::Int(dot(1, 1), 1))), PackLimit::CAPPED).is_none());
        assert!(Packed::build(std::iter::once((&b"f"[..], ElementRef::Raw(dot(1, 1), &long))), PackLimit::CAPPED).is_none());
        let names: Vec<Vec<u8>> = (0..=PACKED_ENTRIES_MAX).map(|i| format!("f{i}").into_bytes()).collect();
        let many = names.iter().map(|n| (n.as_slice(), ElementRef::Int(dot(1, 1), 1)));
        assert!(Packed::build(many.clone().take(PACKED_ENTRIES_MAX), PackLimit::CAPPED).is_some());
        assert!(Packed::build(many, PackLimit::CAPPED).is_none());
        let dotted = names.iter().enumerate().map(|(i, n)| (n.as_slice(), ElementRef::Int(dot(i as u64 + 1, 1), 1)));
        assert!(Packed::build(dotted.clone().take(PACKED_DOTS_MAX), PackLimit::CAPPED).is_some());
        assert!(Packed::build(dotted.take(PACKED_DOTS_MAX + 1), PackLimit::CAPPED).is_none());
        let state = crate::engine::kv::KeyState::new();
        assert!(Packed::build(std::iter::once((&b"f"[..], ElementRef::Full(&state))), PackLimit::CAPPED).is_none());
    }

    #[test]
    fn a_lower_limit_packs_less_and_a_zero_limit_packs_nothing_but_the_empty_collection() {
        let names: Vec<Vec<u8>> = (0..10).map(|i| format!("f{i}").into_bytes()).collect();
        let items = names.iter().map(|n| (n.as_slice(), ElementRef::Raw(dot(1, 1), b"0123456789" as &[u8])));
        assert!(Packed::build(items.clone(), PackLimit::capped(10, 64)).is_some());
        assert!(Packed::build(items.clone(), PackLimit::capped(9, 64)).is_none(), "one entry too many");
        assert!(Packed::build(items.clone(), PackLimit::capped(10, 9)).is_none(), "a value too long");
        assert!(Packed::build(items, PackLimit::capped(0, 64)).is_none());
        assert!(Packed::build(std::iter::empty(), PackLimit::capped(0, 0)).is_some());
        // Settings above the caps are capped.
        assert_eq!(PackLimit::capped(512, 1 << 20), PackLimit::CAPPED);
    }
}
