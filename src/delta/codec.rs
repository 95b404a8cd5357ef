//! Binary encoding of deltas (key states and flushes): compact, versioned by the
//! segment header, and decoded without trusting a single byte — every length is checked
//! against what remains, every count against a bound, and a decode error names what was
//! wrong instead of panicking.

use bytes::Bytes;

use crate::crdt::counter::Slot;
use crate::crdt::ttl::TtlWrite;
use crate::crdt::{Dot, Hlc, VersionVector};
use crate::delta::Delta;
use crate::engine::kv::KeyState;
use crate::engine::kv::collection_writes::Part;
use crate::engine::kv::elements::Elements;
use crate::engine::kv::position;
use crate::engine::kv::value::{KeyStateParts, StrVal};

/// The longest LEB128 encoding of a u64.
const VARINT_BYTES_MAX: usize = 10;
/// Entries of one collection inside a key state at most (concurrent values, slots:
/// bounded by the number of nodes in practice).
const ITEMS_MAX: u64 = 1 << 16;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError(pub String);

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DecodeError {}

fn err<T>(what: impl Into<String>) -> Result<T, DecodeError> {
    Err(DecodeError(what.into()))
}

/// Appends primitives to a buffer.
#[derive(Default)]
pub struct Writer {
    pub buf: Vec<u8>,
}

impl Writer {
    pub fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }

    pub fn u16(&mut self, v: u16) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    pub fn u32(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    pub fn u64(&mut self, v: u64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    /// LEB128 unsigned varint. Byte by byte: appending a stack-built encoding calls
    /// memcpy for its variable length, which measured slower.
    pub fn var(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.buf.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.buf.push(v as u8);
    }

    /// Zig-zag signed varint.
    pub fn ivar(&mut self, v: i64) {
        self.var(((v << 1) ^ (v >> 63)) as u64);
    }

    pub fn bytes(&mut self, b: &[u8]) {
        self.var(b.len() as u64);
        self.buf.extend_from_slice(b);
    }

    fn dot(&mut self, dot: Dot) {
        self.var(dot.hlc.0);
        self.u16(dot.node);
    }
}

impl Writer {
    /// Run `write` appending to `buf` (a buffer owned elsewhere: a delta log, an outbox).
    pub fn append_to(buf: &mut Vec<u8>, write: impl FnOnce(&mut Writer)) {
        let mut w = Writer { buf: std::mem::take(buf) };
        write(&mut w);
        *buf = w.buf;
    }
}

/// Reads primitives from a buffer, failing (never panicking) on truncation.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf, pos: 0 }
    }

    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if n > self.remaining() {
            return err(format!("truncated: need {n} bytes at offset {}, {} left", self.pos, self.remaining()));
        }
        let slice = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(slice)
    }

    pub fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1)?[0])
    }

    pub fn u16(&mut self) -> Result<u16, DecodeError> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    pub fn u32(&mut self) -> Result<u32, DecodeError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub fn u64(&mut self) -> Result<u64, DecodeError> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    /// LEB128 varint. One pass over the bytes left, no bounds check per byte: stamps
    /// are 9-byte varints and every delta holds several (this was the hottest function
    /// of a replicated simulation).
    pub fn var(&mut self) -> Result<u64, DecodeError> {
        let rest = &self.buf[self.pos..];
        let mut value: u64 = 0;
        for (i, &byte) in rest.iter().take(VARINT_BYTES_MAX).enumerate() {
            value |= ((byte & 0x7f) as u64) << (7 * i);
            if byte & 0x80 == 0 {
                self.pos += i + 1;
                return Ok(value);
            }
        }
        if rest.len() < VARINT_BYTES_MAX {
            return err(format!("truncated: varint at offset {} runs past the {} bytes left", self.pos, rest.len()));
        }
        err("varint longer than 10 bytes")
    }

    pub fn ivar(&mut self) -> Result<i64, DecodeError> {
        let v = self.var()?;
        Ok(((v >> 1) as i64) ^ -((v & 1) as i64))
    }

    pub fn bytes(&mut self) -> Result<&'a [u8], DecodeError> {
        let len = self.var()?;
        if len > self.remaining() as u64 {
            return err(format!("byte string of {len} bytes exceeds the {} left", self.remaining()));
        }
        self.take(len as usize)
    }

    /// A collection's element count: bounded by the bytes left (each element takes at
    /// least two), not by `ITEMS_MAX`, since a hash may hold millions of fields.
    pub fn element_count(&mut self) -> Result<usize, DecodeError> {
        let n = self.var()?;
        if n > (self.remaining() / 2) as u64 {
            return err(format!("implausible element count {n}"));
        }
        Ok(n as usize)
    }

    pub fn count(&mut self) -> Result<usize, DecodeError> {
        let n = self.var()?;
        if n > ITEMS_MAX || n > self.remaining() as u64 {
            return err(format!("implausible item count {n}"));
        }
        Ok(n as usize)
    }

    fn dot(&mut self) -> Result<Dot, DecodeError> {
        let hlc = Hlc(self.var()?);
        Ok(Dot::new(hlc, self.u16()?))
    }
}

const VALUE_INT: u8 = 0;
const VALUE_RAW: u8 = 1;
const TTL_AT: u8 = 0;
const TTL_PERSIST: u8 = 1;

fn write_int_slots(w: &mut Writer, slots: &[Slot<i64>]) {
    w.var(slots.len() as u64);
    for s in slots {
        w.u16(s.node);
        w.var(s.incarnation.0);
        w.var(s.hlc.0);
        w.var(s.since.0);
        w.ivar(s.sum);
    }
}

fn write_float_slots(w: &mut Writer, slots: &[Slot<f64>]) {
    w.var(slots.len() as u64);
    for s in slots {
        w.u16(s.node);
        w.var(s.incarnation.0);
        w.var(s.hlc.0);
        w.var(s.since.0);
        w.u64(s.sum.to_bits());
    }
}

fn read_int_slots(r: &mut Reader) -> Result<Vec<Slot<i64>>, DecodeError> {
    let n = r.count()?;
    (0..n)
        .map(|_| Ok(Slot { node: r.u16()?, incarnation: Hlc(r.var()?), hlc: Hlc(r.var()?), since: Hlc(r.var()?), sum: r.ivar()? }))
        .collect()
}

fn read_float_slots(r: &mut Reader) -> Result<Vec<Slot<f64>>, DecodeError> {
    let n = r.count()?;
    (0..n)
        .map(|_| {
            let slot = Slot {
                node: r.u16()?,
                incarnation: Hlc(r.var()?),
                hlc: Hlc(r.var()?),
                since: Hlc(r.var()?),
                sum: f64::from_bits(r.u64()?),
            };
            // An infinite sum is a sorted set's score (`ZINCRBY z inf m`, as Redis
            // allows); only NaN is never a counter's.
            if slot.sum.is_nan() { err("NaN float counter") } else { Ok(slot) }
        })
        .collect()
}

pub fn write_key_state(w: &mut Writer, state: &KeyState) {
    // One value at one dot and nothing else (every pushed list element, most hash
    // fields): the bytes the general path writes for it, without gathering the parts.
    if let Some((dot, value)) = state.plain_value() {
        plain::write_plain_state(w, dot, value);
        return;
    }
    // One integer counter slot and nothing else (every INCR's delta).
    if let Some(slot) = state.compact_count() {
        // No context, no values.
        w.var(0);
        w.var(0);
        write_int_slots(w, std::slice::from_ref(&slot));
        // No int floor, float slots, float floor or TTL writes.
        w.buf.extend_from_slice(&[0; 4]);
        return;
    }
    // A removed element's tombstone: its context and nothing else.
    if let Some(ctx) = state.context_only() {
        write_context_only(w, ctx);
        return;
    }
    write_key_state_parts(w, state);
}

/// [`write_key_state`] of a state holding the context `ctx` and nothing else.
fn write_context_only(w: &mut Writer, ctx: &VersionVector) {
    w.var(ctx.len() as u64);
    for dot in ctx.iter() {
        w.dot(dot);
    }
    // No values, int slots, int floor, float slots, float floor or TTL writes.
    w.buf.extend_from_slice(&[0; 6]);
}

fn write_value(w: &mut Writer, value: &StrVal) {
    match value {
        StrVal::Int(n) => {
            w.u8(VALUE_INT);
            w.ivar(*n);
        }
        StrVal::Raw(b) => {
            w.u8(VALUE_RAW);
            w.bytes(b);
        }
    }
}

/// [`write_key_state`] field by field, whatever the state holds.
fn write_key_state_parts(w: &mut Writer, state: &KeyState) {
    let p = state.parts();
    w.var(p.ctx.len() as u64);
    for dot in p.ctx.iter() {
        w.dot(dot);
    }
    w.var(p.values.len() as u64);
    for (dot, value) in p.values.iter() {
        w.dot(dot);
        write_value(w, value);
    }
    write_int_slots(w, &p.int_slots);
    write_int_slots(w, &p.int_floor);
    write_float_slots(w, p.float_slots);
    write_float_slots(w, p.float_floor);
    w.var(p.ttl.len() as u64);
    for (dot, ttl) in p.ttl {
        w.dot(*dot);
        match ttl {
            TtlWrite::At(at) => {
                w.u8(TTL_AT);
                w.var(*at);
            }
            TtlWrite::Persist => w.u8(TTL_PERSIST),
        }
    }
}

fn read_value(r: &mut Reader) -> Result<StrVal, DecodeError> {
    match r.u8()? {
        VALUE_INT => Ok(StrVal::Int(r.ivar()?)),
        VALUE_RAW => Ok(StrVal::raw(r.bytes()?)),
        other => err(format!("unknown value kind {other}")),
    }
}

/// Kind [`DELTA_LIST_PUSH`] after its kind byte: the same delta as kind 6 of a state
/// with nothing but a list part of those elements, each one value at its name's dot.
fn read_list_push(r: &mut Reader) -> Result<Delta, DecodeError> {
    let key = Bytes::copy_from_slice(r.bytes()?);
    let n = r.element_count()?;
    let mut entries = Vec::with_capacity(n.min(1 << 16));
    for _ in 0..n {
        let name = Bytes::copy_from_slice(r.bytes()?);
        let Some(dot) = position::maker(&name) else {
            return err(format!("a pushed list element's name of {} bytes is no position", name.len()));
        };
        let value = read_value(r)?;
        let state = KeyState::from_parts(KeyStateParts { values: vec![(dot, value)], ..KeyStateParts::default() });
        entries.push((name, state.map_err(|e| DecodeError(e.to_string()))?));
    }
    let elements = Elements::from_entries(Part::List, VersionVector::new(), entries).map_err(|e| DecodeError(e.into()))?;
    let state = KeyState::from_parts(KeyStateParts::default()).map_err(|e| DecodeError(e.to_string()))?;
    Ok(Delta::Key { key, state: state.with_part(Part::List, Some(elements)) })
}

pub fn read_key_state(r: &mut Reader) -> Result<KeyState, DecodeError> {
    let mut p = KeyStateParts::default();
    for _ in 0..r.count()? {
        p.ctx.push(r.dot()?);
    }
    for _ in 0..r.count()? {
        let dot = r.dot()?;
        p.values.push((dot, read_value(r)?));
    }
    p.int_slots = read_int_slots(r)?;
    p.int_floor = read_int_slots(r)?;
    p.float_slots = read_float_slots(r)?;
    p.float_floor = read_float_slots(r)?;
    for _ in 0..r.count()? {
        let dot = r.dot()?;
        let ttl = match r.u8()? {
            TTL_AT => TtlWrite::At(r.var()?),
            TTL_PERSIST => TtlWrite::Persist,
            other => return err(format!("unknown TTL kind {other}")),
        };
        p.ttl.push((dot, ttl));
    }
    KeyState::from_parts(p).map_err(|e| DecodeError(e.to_string()))
}

const DELTA_KEY: u8 = 1;
/// A key state with a hash part: the key state as `DELTA_KEY` writes it, then what
/// whole-key removes saw and the elements (name, element state). Strings keep kind 1,
/// so what was stored before hashes existed reads as it did.
const DELTA_KEY_WITH_HASH: u8 = 5;
/// A key state with collection parts other than a lone hash (a set, a sorted set, or
/// several after a type clash): the key state, a byte of flags (bit `1 << part`:
/// hash 1, set 2, sorted set 4, list 8, graph 16, stream 32), then each part flagged in that order, as kind 5 writes
/// one. Kinds 1 and 5 stay as they were for strings and hashes.
const DELTA_KEY_WITH_PARTS: u8 = 6;
// Kinds 2, 3, 4, 7, 8, 9 and 11 are the records of `records.rs`.
/// A list push: list elements that each hold one value at the dot their name was made
/// with (its last triple, `position::maker`), the commonest collection delta (every
/// LPUSH, RPUSH and LINSERT). The key, the element count, then each element's name and
/// value (kind byte, then the bytes or the integer), in name order: the dot is not
/// written twice and the empty key state, part flags and context are left out (46
/// bytes for a 16-byte value where kind 6 took 73). Reads as kind 6 of the same
/// elements would (`tests.rs` compares the two).
const DELTA_LIST_PUSH: u8 = 10;
const PART_FLAGS_ALL: u8 = (1 << Part::COUNT) - 1;

fn part_flag(part: Part) -> u8 {
    1 << part as u8
}

fn write_elements(w: &mut Writer, elements: &Elements) {
    write_vv(w, elements.removed());
    w.var(elements.entries_len() as u64);
    elements.for_each_entry(|name, state| {
        w.bytes(name);
        write_key_state(w, &state.state());
    });
}

fn read_elements(r: &mut Reader, part: Part) -> Result<Elements, DecodeError> {
    let removed = read_vv(r)?;
    let n = r.element_count()?;
    let mut entries = Vec::with_capacity(n.min(1 << 16));
    for _ in 0..n {
        let name = Bytes::copy_from_slice(r.bytes()?);
        entries.push((name, read_key_state(r)?));
    }
    Elements::from_entries(part, removed, entries).map_err(|e| DecodeError(e.into()))
}

pub fn write_vv(w: &mut Writer, vv: &VersionVector) {
    w.var(vv.len() as u64);
    for dot in vv.iter() {
        w.dot(dot);
    }
}

pub fn read_vv(r: &mut Reader) -> Result<VersionVector, DecodeError> {
    let n = r.count()?;
    let dots: Result<Vec<Dot>, DecodeError> = (0..n).map(|_| r.dot()).collect();
    VersionVector::from_dots(dots?).map_err(|e| DecodeError(e.into()))
}

/// A key delta from borrowed parts: what the shard's delta log writes on every change
/// (no copy of the key or the state).
pub fn write_key_delta(w: &mut Writer, key: &[u8], state: &KeyState) {
    // A plain state has no collection part, so this is the `0` case below.
    if let Some((dot, value)) = state.plain_value() {
        plain::write_plain_key_delta(w, key, dot, value);
        return;
    }
    let flags = state.collection_parts().fold(0u8, |flags, (part, _)| flags | part_flag(part));
    match flags {
        0 => {
            w.u8(DELTA_KEY);
            w.bytes(key);
            write_key_state(w, state);
        }
        f if f == part_flag(Part::Hash) => {
            w.u8(DELTA_KEY_WITH_HASH);
            w.bytes(key);
            write_key_state(w, state);
            write_elements(w, state.hash().expect("flagged"));
        }
        flags => {
            w.u8(DELTA_KEY_WITH_PARTS);
            w.bytes(key);
            write_key_state(w, state);
            w.u8(flags);
            for (_, elements) in state.collection_parts() {
                write_elements(w, elements);
            }
        }
    }
}

/// What [`write_key_state`] writes for `KeyState::default()`: six empty lists (context,
/// values, four kinds of counter slots) and no TTL write, each a zero count.
const EMPTY_KEY_STATE: [u8; 7] = [0; 7];

/// Exactly `count` deltas encoded back to back, and nothing after them (a segment
/// body, a drained log, a batch's deltas). Errors name the entry.
pub fn read_deltas_exact(count: usize, bytes: &[u8]) -> Result<Vec<Delta>, DecodeError> {
    let mut r = Reader::new(bytes);
    // Bounded up front: a count is untrusted until its entries have been read.
    let mut deltas = Vec::with_capacity(count.min(1 << 16));
    for i in 0..count {
        deltas.push(read_delta(&mut r).map_err(|e| DecodeError(format!("entry {i}: {e}")))?);
    }
    if r.remaining() != 0 {
        return err(format!("{} bytes after the last entry", r.remaining()));
    }
    Ok(deltas)
}

/// The key an encoded delta names (`None` for a flush or forget record, or bytes that
/// are not a delta).
pub fn key_of_delta(encoded: &[u8]) -> Option<&[u8]> {
    let mut r = Reader::new(encoded);
    match r.u8() {
        Ok(DELTA_KEY | DELTA_KEY_WITH_HASH | DELTA_KEY_WITH_PARTS | DELTA_LIST_PUSH) => r.bytes().ok(),
        _ => None,
    }
}

pub fn write_delta(w: &mut Writer, delta: &Delta) {
    match delta {
        Delta::Key { key, state } => write_key_delta(w, key, state),
        record => records::write_record(w, record),
    }
}

pub fn read_delta(r: &mut Reader) -> Result<Delta, DecodeError> {
    let kind = r.u8()?;
    if let Some(record) = records::read_record(kind, r) {
        return record;
    }
    match kind {
        DELTA_KEY => {
            let key = Bytes::copy_from_slice(r.bytes()?);
            Ok(Delta::Key { key, state: read_key_state(r)? })
        }
        DELTA_KEY_WITH_HASH => {
            let key = Bytes::copy_from_slice(r.bytes()?);
            let state = read_key_state(r)?;
            let elements = read_elements(r, Part::Hash)?;
            Ok(Delta::Key { key, state: state.with_part(Part::Hash, Some(elements)) })
        }
        DELTA_KEY_WITH_PARTS => {
            let key = Bytes::copy_from_slice(r.bytes()?);
            let state = read_key_state(r)?;
            let flags = r.u8()?;
            if flags & !PART_FLAGS_ALL != 0 || flags == 0 {
                return err(format!("unknown key parts {flags:#x}"));
            }
            let mut state = state;
            for part in Part::ALL {
                if flags & part_flag(part) != 0 {
                    let elements = read_elements(r, part)?;
                    state = state.with_part(part, Some(elements));
                }
            }
            Ok(Delta::Key { key, state })
        }
        DELTA_LIST_PUSH => read_list_push(r),
        other => err(format!("unknown delta kind {other}")),
    }
}

mod part;
mod plain;
mod records;

pub use part::{write_element_set, write_list_push, write_part_delta, write_removed_element};
#[cfg(test)]
mod tests;
