//! The encoding of the commonest deltas: a key or an element holding one value at one
//! dot and nothing else (every SET, HSET field, SADD member and list push), written
//! through a cursor into room reserved once. The bytes are exactly those of the general
//! writers (`write_key_state` field by field; compared byte for byte in `tests.rs`).
//!
//! Why: every write encodes its delta on the shard thread (for the segment stream), and
//! through `Vec` pushes a SET's took ~610 instructions: each byte's push reloads and
//! checks the length and capacity and stores the length back, and a stamp's varint is
//! eight bytes. A cursor keeps its position in a register and checks a slice bound.
//!
//! Must never: write bytes the general path would not, or past its reservation (an
//! index out of the reserved slice is a panic, never a wrong byte), or keep a byte it
//! did not write (the one `unsafe`: `Writer::reserved`'s `set_len`).

use std::mem::MaybeUninit;

use super::{DELTA_KEY, DELTA_LIST_PUSH, VALUE_INT, VALUE_RAW, VARINT_BYTES_MAX, Writer};
use crate::crdt::Dot;
use crate::engine::kv::element::ElementRef;
use crate::engine::kv::value::StrVal;

/// Most bytes [`plain_state`] writes besides the value's own: the context and value
/// counts (one byte each), the dot (a varint and two bytes), the value's tag and its
/// length or integer (a varint), and the five empty counts after it.
pub(super) const PLAIN_STATE_BYTES_MAX: usize = 2 + VARINT_BYTES_MAX + 2 + 1 + VARINT_BYTES_MAX + 5;

/// Writes bytes in order into room reserved for them; every byte before `at` has been
/// written (what makes [`Writer::reserved`]'s `set_len` sound).
pub(super) struct Cursor<'a> {
    out: &'a mut [MaybeUninit<u8>],
    at: usize,
}

impl Cursor<'_> {
    #[inline(always)]
    pub(super) fn u8(&mut self, v: u8) {
        self.out[self.at].write(v);
        self.at += 1;
    }

    /// LEB128, as `Writer::var`.
    #[inline(always)]
    pub(super) fn var(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.u8((v as u8) | 0x80);
            v >>= 7;
        }
        self.u8(v as u8);
    }

    #[inline(always)]
    pub(super) fn bytes(&mut self, b: &[u8]) {
        self.var(b.len() as u64);
        self.out[self.at..self.at + b.len()].write_copy_of_slice(b);
        self.at += b.len();
    }

    /// `N` zero bytes.
    #[inline(always)]
    pub(super) fn zeros<const N: usize>(&mut self) {
        self.out[self.at..self.at + N].write_copy_of_slice(&[0; N]);
        self.at += N;
    }
}

impl Writer {
    /// Run `write` on a cursor over `max` reserved bytes, keeping what it wrote. The
    /// room is not zero-filled first (a `resize` cost a `memset` per delta).
    #[inline(always)]
    pub(super) fn reserved(&mut self, max: usize, write: impl FnOnce(&mut Cursor)) {
        self.buf.reserve(max);
        let start = self.buf.len();
        let mut cursor = Cursor { out: &mut self.buf.spare_capacity_mut()[..max], at: 0 };
        write(&mut cursor);
        let written = cursor.at;
        // SAFETY: the cursor writes its slice in order from its start and counts what it
        // wrote (`at`), never past the slice (indexing panics first), so the `written`
        // bytes after `start` are initialised, and they fit the capacity reserved above.
        unsafe { self.buf.set_len(start + written) };
    }
}

/// The value's own bytes (what [`PLAIN_STATE_BYTES_MAX`] leaves out).
#[inline(always)]
pub(super) fn value_bytes(value: &StrVal) -> usize {
    match value {
        StrVal::Int(_) => 0,
        StrVal::Raw(b) => b.len(),
    }
}

/// `write_key_state` of a state holding `value` at `dot` and nothing else.
#[inline(always)]
pub(super) fn plain_state(c: &mut Cursor, dot: Dot, value: &StrVal) {
    plain_state_with(c, dot, |c| plain_value(c, value));
}

/// [`plain_state`] with the value written by `value` (from a `StrVal` or a view).
#[inline(always)]
fn plain_state_with(c: &mut Cursor, dot: Dot, value: impl FnOnce(&mut Cursor)) {
    // No context entries; one value.
    c.u8(0);
    c.u8(1);
    c.var(dot.hlc.0);
    c.u8(dot.node as u8);
    c.u8((dot.node >> 8) as u8);
    value(c);
    // No int slots, int floor, float slots, float floor or TTL writes.
    c.zeros::<5>();
}

/// A value as `write_value` writes it: its kind byte, then the bytes or the integer.
#[inline(always)]
fn plain_value(c: &mut Cursor, value: &StrVal) {
    match value {
        StrVal::Int(n) => int_value(c, *n),
        StrVal::Raw(b) => raw_value(c, b),
    }
}

#[inline(always)]
fn int_value(c: &mut Cursor, n: i64) {
    c.u8(VALUE_INT);
    c.var(((n << 1) ^ (n >> 63)) as u64);
}

#[inline(always)]
fn raw_value(c: &mut Cursor, b: &[u8]) {
    c.u8(VALUE_RAW);
    c.bytes(b);
}

/// `write_key_state` of a plain state, on its own.
pub(super) fn write_plain_state(w: &mut Writer, dot: Dot, value: &StrVal) {
    w.reserved(PLAIN_STATE_BYTES_MAX + value_bytes(value), |c| plain_state(c, dot, value));
}

/// `write_key_delta` of a key whose state is one value at one dot (no collection part).
pub(super) fn write_plain_key_delta(w: &mut Writer, key: &[u8], dot: Dot, value: &StrVal) {
    w.reserved(1 + VARINT_BYTES_MAX + key.len() + PLAIN_STATE_BYTES_MAX + value_bytes(value), |c| {
        c.u8(DELTA_KEY);
        c.bytes(key);
        plain_state(c, dot, value);
    });
}

/// One element of `write_part_delta` whose state is one value at one dot: its name,
/// then its state.
pub(super) fn write_plain_element(w: &mut Writer, name: &[u8], dot: Dot, value: &StrVal) {
    w.reserved(VARINT_BYTES_MAX + name.len() + PLAIN_STATE_BYTES_MAX + value_bytes(value), |c| {
        c.bytes(name);
        plain_state(c, dot, value);
    });
}

/// Most bytes [`pushed_element`] writes besides the name's and the value's own: the
/// name's length, the value's kind byte and its length or integer.
const PUSHED_ELEMENT_BYTES_MAX: usize = VARINT_BYTES_MAX + 1 + VARINT_BYTES_MAX;

/// The value bytes of a one-value view (what [`PUSHED_ELEMENT_BYTES_MAX`] and
/// [`PLAIN_STATE_BYTES_MAX`] leave out).
#[inline(always)]
pub(super) fn view_value_bytes(element: ElementRef<'_>) -> usize {
    match element {
        ElementRef::Raw(_, b) => b.len(),
        _ => 0,
    }
}

/// A one-value view's value as `write_value` writes it (a full state is the caller's
/// bug: it panics).
#[inline(always)]
fn view_value(c: &mut Cursor, element: ElementRef<'_>) {
    match element {
        ElementRef::Int(_, n) => int_value(c, n),
        ElementRef::Raw(_, b) => raw_value(c, b),
        ElementRef::Tombstone(_) | ElementRef::Full(_) => panic!("a plain view holds one value at one dot"),
    }
}

/// One element of a `DELTA_LIST_PUSH`: its name, then its value (kind byte, then the
/// bytes or the integer), the dot left to the name. `element` holds one value at one
/// dot (a full state is the caller's bug: it panics).
#[inline(always)]
fn pushed_element(c: &mut Cursor, name: &[u8], element: ElementRef<'_>) {
    c.bytes(name);
    view_value(c, element);
}

/// [`write_plain_element`]'s bytes for an element seen through a one-value view, into
/// the caller's cursor (`part::write_element_set`).
#[inline(always)]
pub(super) fn view_element(c: &mut Cursor, name: &[u8], element: ElementRef<'_>) {
    let dot = element.plain_dot().expect("a plain view holds one value at one dot");
    c.bytes(name);
    plain_state_with(c, dot, |c| view_value(c, element));
}

/// [`pushed_element`] on its own.
pub(super) fn write_pushed_element(w: &mut Writer, name: &[u8], element: ElementRef<'_>) {
    w.reserved(PUSHED_ELEMENT_BYTES_MAX + name.len() + view_value_bytes(element), |c| pushed_element(c, name, element));
}

/// A whole `DELTA_LIST_PUSH` of one element (every LPUSH or RPUSH of one value): kind,
/// key, count 1, then the element, through one cursor.
pub(super) fn write_one_pushed(w: &mut Writer, key: &[u8], name: &[u8], element: ElementRef<'_>) {
    let max = 1 + VARINT_BYTES_MAX + key.len() + 1 + PUSHED_ELEMENT_BYTES_MAX + name.len() + view_value_bytes(element);
    w.reserved(max, |c| {
        c.u8(DELTA_LIST_PUSH);
        c.bytes(key);
        c.u8(1);
        pushed_element(c, name, element);
    });
}
