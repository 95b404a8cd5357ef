//! One entry of a list chunk (see `list_table.rs` for the format and why): how an
//! entry is coded against the one before it ([`encode_entry`]) and decoded in order
//! ([`Decoder`]). The chunk's edits (`chunk.rs`) are built on these two.
//!
//! Must never: code a name in steps without the previous name it steps from, or do I/O.

use super::Name;
use super::chunk::Chunk;
use crate::crdt::{Dot, Hlc};
use crate::engine::kv::element::ElementRef;
use crate::engine::kv::packed::{ByteOut, get_value, get_var, put_var, unzigzag, zigzag};
use crate::engine::kv::position::TRIPLE_BYTES;

pub(super) const NAME_FULL: u8 = 0;
pub(super) const NAME_STEP: u8 = 1;
const NAME_STEP_NODE: u8 = 2;
/// The previous name with its id stepped (see [`id_of`]): `[hlc step zigzag varint]
/// [node varint][seq step zigzag varint]`.
const NAME_ID_STEP: u8 = 3;
pub(super) const DOT_EXPLICIT: u8 = 1 << 2;
pub(super) const VALUE_INT: u8 = 1 << 3;
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
pub(super) fn implied_dot(tag: u8, name: &[u8]) -> Dot {
    if tag & DOT_ID != 0 {
        let (hlc, node, _) = id_of(name).expect("coded only for a name with an id");
        return Dot::new(Hlc(hlc), node);
    }
    crate::engine::kv::position::maker(name).expect("an implied dot is coded only for a name of a triple or more")
}

/// The last triple of a position: `(digit, hlc, node)`.
pub(super) fn last_triple(name: &[u8]) -> (u64, u64, u16) {
    let at = name.len() - TRIPLE_BYTES;
    let digit = u64::from_be_bytes(name[at..at + 8].try_into().expect("eight bytes"));
    let hlc = u64::from_be_bytes(name[at + 8..at + 16].try_into().expect("eight bytes"));
    let node = u16::from_be_bytes([name[at + 16], name[at + 17]]);
    (digit, hlc, node)
}

pub(super) fn set_last_triple(name: &mut [u8], (digit, hlc, node): (u64, u64, u16)) {
    let at = name.len() - TRIPLE_BYTES;
    name[at..at + 8].copy_from_slice(&digit.to_be_bytes());
    name[at + 8..at + 16].copy_from_slice(&hlc.to_be_bytes());
    name[at + 16..at + 18].copy_from_slice(&node.to_be_bytes());
}

/// Append one entry coded against `prev` (the previous entry's name, `None` first).
pub(super) fn encode_entry(out: &mut impl ByteOut, prev: Option<&[u8]>, name: &[u8], element: ElementRef<'_>) {
    let (dot, value_tag) = match element {
        ElementRef::Int(dot, _) => (dot, VALUE_INT),
        ElementRef::Raw(dot, _) => (dot, 0),
        ElementRef::Tombstone(_) | ElementRef::Full(_) => unreachable!("a chunk holds one value at one dot only"),
    };
    // A name shorter than a triple is no position (a test or a bad peer made it): it
    // is stored in full with its dot, and the codec refuses it when it is read back.
    let dot_tag = if crate::engine::kv::position::maker(name) == Some(dot) {
        0
    } else if id_of(name).is_some_and(|(hlc, node, _)| Dot::new(Hlc(hlc), node) == dot) {
        DOT_ID
    } else {
        DOT_EXPLICIT
    };
    encode_head(out, dot_tag | value_tag, prev, name);
    if dot_tag == DOT_EXPLICIT {
        put_var(out, dot.hlc.0);
        put_var(out, u64::from(dot.node));
    }
    match element {
        ElementRef::Int(_, n) => put_var(out, zigzag(n)),
        ElementRef::Raw(_, value) => {
            put_var(out, value.len() as u64);
            out.put_bytes(value);
        }
        ElementRef::Tombstone(_) | ElementRef::Full(_) => unreachable!("checked above"),
    }
}

/// Append an entry's head: its tag (`flags`, the dot and value bits, with the name's
/// coding added) and its name coded against `prev`. What follows the head (the dot,
/// the value) does not depend on the entry before, so an entry whose neighbour changes
/// is recoded by rewriting its head alone (see [`head_end`]).
pub(super) fn encode_head(out: &mut impl ByteOut, flags: u8, prev: Option<&[u8]>, name: &[u8]) {
    debug_assert_eq!(flags & 3, 0, "the name's coding is chosen here");
    let triple = (name.len() >= TRIPLE_BYTES).then(|| last_triple(name));
    let step = triple.and_then(|(digit, hlc, node)| {
        let prev = prev.filter(|p| p.len() == name.len() && p[..p.len() - TRIPLE_BYTES] == name[..name.len() - TRIPLE_BYTES])?;
        let (p_digit, p_hlc, p_node) = last_triple(prev);
        digit.checked_sub(p_digit).map(|d| (d, zigzag(hlc.wrapping_sub(p_hlc) as i64), p_node != node, node))
    });
    // Not a position's step: an id's, when only the id differs from the previous name.
    let id_step = match (step, prev) {
        (None, Some(prev))
            if prev.len() == name.len() && name.len() >= ID_END && prev[0] == name[0] && prev[ID_END..] == name[ID_END..] =>
        {
            let (hlc, node, seq) = id_of(name).expect("long enough");
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
    out.put_byte(name_tag | flags);
    match step {
        None => match id_step {
            Some((hlc_step, node, seq_step)) => {
                put_var(out, hlc_step);
                put_var(out, u64::from(node));
                put_var(out, seq_step);
            }
            None => {
                put_var(out, name.len() as u64);
                out.put_bytes(name);
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
}

/// Where the head (tag and name coding, see [`encode_head`]) of the entry starting at
/// `start` ends: its length depends on its own bytes alone, not on the name before.
pub(super) fn head_end(bytes: &[u8], start: usize) -> usize {
    let mut at = start + 1;
    match bytes[start] & 3 {
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
    at
}

/// The most bytes [`encode_head`] writes: a tag and a name in full or three varints.
pub(super) fn head_bytes_max(name: &[u8]) -> usize {
    1 + VARINT_MAX + name.len().max(3 * VARINT_MAX)
}

/// Bytes [`encode_entry`] writes for an entry at most: a tag, a name in full or as
/// three varint steps, an explicit dot, and the value with its length.
pub(super) fn entry_bytes_max(name: &[u8], element: ElementRef<'_>) -> usize {
    let value = match element {
        ElementRef::Raw(_, value) => value.len(),
        _ => 0,
    };
    1 + name.len().max(2 * VARINT_MAX) + VARINT_MAX + 2 * VARINT_MAX + value + VARINT_MAX
}

const VARINT_MAX: usize = 10;

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
