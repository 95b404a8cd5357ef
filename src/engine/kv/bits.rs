//! The bit commands on one shard's strings (SETBIT, GETBIT, BITCOUNT, BITPOS, BITFIELD,
//! BITFIELD_RO, and BITOP's computation), with Redis 7.0's replies.
//!
//! A string is a register: a bit write builds the whole new value and writes it as
//! APPEND and SETRANGE do ([`KvEngine::write_whole_value`]: keeps the TTL; across
//! regions the write with the larger stamp wins, whole). A write that changes nothing
//! (a bit set to what it was, a BITFIELD that fails) writes nothing, unless it created or
//! grew the string, as in Redis. A value grows only as far as the request reaches (at
//! most `proto-max-bulk-len`). Never does I/O or reads a clock.

use bytes::{Bytes, BytesMut};

use super::strings::check_string;
use super::{KvEngine, WriteCtx, key_hash};
use crate::command::bits::{BIT_OFFSET_INVALID, BitCommand, BitOp, BitRange, FieldOp, FieldOpKind, FieldType, Overflow};
use crate::command::errors;
use crate::notify::Class;
use crate::protocol::Frame;

/// Redis's normalisation of a `start end` range over `total` units: negative from the
/// end, clipped to the value. `None` when empty.
fn normalise(start: i64, end: i64, total: i64) -> Option<(i64, i64)> {
    let start = if start < 0 { start.saturating_add(total) } else { start }.max(0);
    let end = if end < 0 { end.saturating_add(total) } else { end }.max(0).min(total - 1);
    (start <= end).then_some((start, end))
}

/// The inclusive bit span a range covers in a value of `len` bytes (`end` left out:
/// the value's end).
fn bit_span(range: BitRange, len: usize) -> Option<(u64, u64)> {
    let total = if range.in_bits { len as i64 * 8 } else { len as i64 };
    let (start, end) = normalise(range.start, range.end.unwrap_or(total - 1), total)?;
    Some(if range.in_bits { (start as u64, end as u64) } else { (start as u64 * 8, end as u64 * 8 + 7) })
}

/// The bits of byte `i` that lie inside `[first, last]` (most significant bit first).
fn span_mask(i: usize, first: u64, last: u64) -> u8 {
    let mut mask = 0xffu8;
    if i as u64 == first >> 3 {
        mask &= 0xff >> (first & 7);
    }
    if i as u64 == last >> 3 {
        mask &= !((1u8 << (7 - (last & 7))) - 1);
    }
    mask
}

fn count_ones(value: &[u8], first: u64, last: u64) -> u64 {
    let (from, to) = ((first >> 3) as usize, (last >> 3) as usize);
    let edge = |i: usize| (value[i] & span_mask(i, first, last)).count_ones() as u64;
    if from == to {
        return edge(from);
    }
    let middle: u64 = value[from + 1..to].iter().map(|b| b.count_ones() as u64).sum();
    edge(from) + middle + edge(to)
}

/// The first bit equal to `bit` in `[first, last]`.
fn find_bit(value: &[u8], first: u64, last: u64, bit: bool) -> Option<u64> {
    let (from, to) = ((first >> 3) as usize, (last >> 3) as usize);
    (from..=to).find_map(|i| {
        let byte = if bit { value[i] } else { !value[i] } & span_mask(i, first, last);
        (byte != 0).then(|| i as u64 * 8 + byte.leading_zeros() as u64)
    })
}

fn get_bits(value: &[u8], offset: u64, bits: u32) -> u64 {
    (0..bits as u64).fold(0u64, |acc, i| {
        let pos = offset + i;
        let byte = value.get((pos >> 3) as usize).copied().unwrap_or(0);
        (acc << 1) | ((byte >> (7 - (pos & 7))) & 1) as u64
    })
}

/// Write `bits` bits of `raw` at `offset`; the caller has grown `value` to hold them.
fn set_bits(value: &mut [u8], offset: u64, bits: u32, raw: u64) {
    for i in 0..bits as u64 {
        let pos = offset + i;
        let mask = 1u8 << (7 - (pos & 7));
        let byte = &mut value[(pos >> 3) as usize];
        if (raw >> (bits as u64 - 1 - i)) & 1 == 1 {
            *byte |= mask;
        } else {
            *byte &= !mask;
        }
    }
}

fn field_value(raw: u64, field: FieldType) -> i128 {
    if field.signed && field.bits < 64 {
        let shift = 64 - field.bits;
        (((raw << shift) as i64) >> shift) as i128
    } else if field.signed {
        raw as i64 as i128
    } else {
        raw as i128
    }
}

/// A SET or INCRBY on a field holding `old_raw`: the bits to store and the reply, or
/// `None` when it overflows under FAIL. The overflow checks are Redis's
/// `checkSignedBitfieldOverflow` and `checkUnsignedBitfieldOverflow` step by step, C's
/// wrapping casts included: they take a SET of a signed field to a value far below its
/// range (`SET i5 0 -9223372036854775808`) for an overflow upwards, so SAT stores the
/// maximum there, and replies must match.
fn field_write(old_raw: u64, op: &FieldOp) -> Option<(u64, i64)> {
    let field = op.field;
    let old = field_value(old_raw, field) as i64;
    // Redis checks `value + incr`: INCRBY's old value and increment, SET's value and 0.
    let (value, incr) = match op.kind {
        FieldOpKind::Set(v) => (v, 0),
        FieldOpKind::IncrBy(by) => (old, by),
        FieldOpKind::Get => (old, 0),
    };
    let bits = field.bits;
    let in_range = if field.signed {
        signed_overflow(value, incr, bits, op.overflow)
    } else {
        unsigned_overflow(value as u64, incr, bits, op.overflow)
    };
    let new = match in_range {
        Ok(sum) => sum,
        Err(None) => return None,
        Err(Some(limit)) => limit,
    };
    let reply = if matches!(op.kind, FieldOpKind::Set(_)) { old } else { field_value(truncate(new as u64, bits), field) as i64 };
    Some((truncate(new as u64, bits), reply))
}

/// The low `bits` bits of `raw`.
fn truncate(raw: u64, bits: u32) -> u64 {
    if bits == 64 { raw } else { raw & ((1u64 << bits) - 1) }
}

/// `Ok(value + incr)` in range, or on overflow the value to store (`Err(Some)`) or
/// nothing under FAIL (`Err(None)`): Redis's `checkSignedBitfieldOverflow`.
fn signed_overflow(value: i64, incr: i64, bits: u32, overflow: Overflow) -> Result<i64, Option<i64>> {
    let max: i64 = if bits == 64 { i64::MAX } else { (1i64 << (bits - 1)) - 1 };
    let min = -max - 1;
    let max_incr = (max as u64).wrapping_sub(value as u64) as i64;
    let min_incr = min.wrapping_sub(value);
    let wrap = || {
        let sum = (value as u64).wrapping_add(incr as u64);
        if bits == 64 {
            return sum as i64;
        }
        let (msb, high) = (1u64 << (bits - 1), u64::MAX << bits);
        (if sum & msb != 0 { sum | high } else { sum & !high }) as i64
    };
    let limit = |saturated: i64| match overflow {
        Overflow::Wrap => Err(Some(wrap())),
        Overflow::Sat => Err(Some(saturated)),
        Overflow::Fail => Err(None),
    };
    if value > max || (bits != 64 && incr > max_incr) || (value >= 0 && incr > 0 && incr > max_incr) {
        limit(max)
    } else if value < min || (bits != 64 && incr < min_incr) || (value < 0 && incr < 0 && incr < min_incr) {
        limit(min)
    } else {
        Ok(value.wrapping_add(incr))
    }
}

/// Redis's `checkUnsignedBitfieldOverflow` (bits ≤ 63), as [`signed_overflow`].
fn unsigned_overflow(value: u64, incr: i64, bits: u32, overflow: Overflow) -> Result<i64, Option<i64>> {
    let max: u64 = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
    let max_incr = max.wrapping_sub(value) as i64;
    let min_incr = value.wrapping_neg() as i64;
    let limit = |saturated: u64| match overflow {
        Overflow::Wrap => Err(Some(truncate(value.wrapping_add(incr as u64), bits) as i64)),
        Overflow::Sat => Err(Some(saturated as i64)),
        Overflow::Fail => Err(None),
    };
    if value > max || (incr > 0 && incr > max_incr) {
        limit(max)
    } else if incr < 0 && incr < min_incr {
        limit(0)
    } else {
        Ok(value.wrapping_add(incr as u64) as i64)
    }
}

/// BITOP's result over the sources (missing keys as empty strings); empty when every
/// source is.
pub fn bitop(op: BitOp, sources: &[Bytes]) -> Vec<u8> {
    let len = sources.iter().map(|s| s.len()).max().unwrap_or(0);
    let byte = |s: &Bytes, i: usize| s.get(i).copied().unwrap_or(0);
    (0..len)
        .map(|i| {
            let rest = sources.iter().skip(1).map(|s| byte(s, i));
            let first = sources.first().map_or(0, |s| byte(s, i));
            match op {
                BitOp::Not => !first,
                BitOp::And => rest.fold(first, |a, b| a & b),
                BitOp::Or => rest.fold(first, |a, b| a | b),
                BitOp::Xor => rest.fold(first, |a, b| a ^ b),
            }
        })
        .collect()
}

impl KvEngine {
    /// BITOP's sources on this shard: each key's value (`None` if missing), or
    /// WRONGTYPE for a key that is not a string.
    pub fn string_values(&mut self, keys: &[Bytes], now_ms: u64) -> Result<Vec<Option<Bytes>>, Frame> {
        keys.iter().map(|key| self.read_string(key, now_ms).map(|v| v.map(|v| v.into_bytes()))).collect()
    }

    /// BITOP's write: `dst` becomes `value` (a SET: no TTL), or is deleted when `value`
    /// is empty. Replies with the length, as BITOP does.
    pub fn store_bitop(&mut self, ctx: &mut WriteCtx, dst: Bytes, value: Vec<u8>) -> Frame {
        let len = value.len() as i64;
        if value.is_empty() {
            self.del(ctx, std::slice::from_ref(&dst));
        } else {
            let (condition, ttl, reply) =
                (crate::command::SetCondition::Always, crate::command::TtlChange::Clear, crate::command::SetReply::Ok);
            self.set(ctx, dst, Bytes::from(value), condition, ttl, reply, "bitop");
        }
        Frame::Integer(len)
    }

    /// BITOP with every key on this shard.
    pub fn bitop(&mut self, ctx: &mut WriteCtx, op: BitOp, dst: Bytes, keys: &[Bytes]) -> Frame {
        match self.string_values(keys, ctx.now_ms) {
            Err(e) => e,
            Ok(values) => {
                let values: Vec<Bytes> = values.into_iter().map(Option::unwrap_or_default).collect();
                self.store_bitop(ctx, dst, bitop(op, &values))
            }
        }
    }

    pub fn bit_command(&mut self, ctx: &mut WriteCtx, cmd: BitCommand) -> Frame {
        let now_ms = ctx.now_ms;
        // Offsets were checked against the default limit; `proto-max-bulk-len` may be lower.
        let offset_ok = |offset: u64| (offset >> 3) < ctx.string_bytes_max as u64;
        match cmd {
            BitCommand::SetBit { offset, .. } | BitCommand::GetBit { offset, .. } if !offset_ok(offset) => {
                errors::error(BIT_OFFSET_INVALID)
            }
            BitCommand::Field { ref ops, .. } if ops.iter().any(|op| !offset_ok(op.offset)) => errors::error(BIT_OFFSET_INVALID),
            BitCommand::SetBit { key, offset, on } => self.setbit(ctx, key, offset, on),
            BitCommand::GetBit { key, offset } => match self.read_string(&key, now_ms) {
                Err(e) => e,
                Ok(value) => Frame::Integer(get_bits(&value.map(|v| v.into_bytes()).unwrap_or_default(), offset, 1) as i64),
            },
            BitCommand::Count { key, range } => match self.read_string(&key, now_ms) {
                Err(e) => e,
                Ok(None) => Frame::Integer(0),
                Ok(Some(value)) => {
                    let value = value.into_bytes();
                    let span = match range {
                        Err(e) => return e,
                        Ok(None) => (!value.is_empty()).then(|| (0, value.len() as u64 * 8 - 1)),
                        // Redis answers 0 before clipping when both ends count from
                        // the end and cross (BITPOS has no such rule).
                        Ok(Some(BitRange { start, end: Some(end), .. })) if start < 0 && end < 0 && start > end => None,
                        Ok(Some(range)) => bit_span(range, value.len()),
                    };
                    Frame::Integer(span.map_or(0, |(first, last)| count_ones(&value, first, last)) as i64)
                }
            },
            BitCommand::Pos { key, bit, range } => match self.read_string(&key, now_ms) {
                Err(e) => e,
                // A missing key is an endless run of zeros.
                Ok(None) => Frame::Integer(if bit { -1 } else { 0 }),
                Ok(Some(value)) => {
                    let value = value.into_bytes();
                    let (span, end_given) = match range {
                        Err(e) => return e,
                        Ok(None) => ((!value.is_empty()).then(|| (0, value.len() as u64 * 8 - 1)), false),
                        Ok(Some(range)) => (bit_span(range, value.len()), range.end.is_some()),
                    };
                    let Some((first, last)) = span else {
                        return Frame::Integer(-1);
                    };
                    Frame::Integer(match find_bit(&value, first, last, bit) {
                        Some(pos) => pos as i64,
                        None if bit || end_given => -1,
                        // No clear bit in the value: the first one past its end.
                        None => ((last >> 3) + 1) as i64 * 8,
                    })
                }
            },
            BitCommand::Field { key, ops } => self.bitfield(ctx, key, ops),
        }
    }

    fn setbit(&mut self, ctx: &mut WriteCtx, key: Bytes, offset: u64, on: bool) -> Frame {
        let hash = key_hash(&key);
        let old = self.take_for_write(&key, hash, ctx.now_ms);
        if let Err(e) = check_string(old.as_ref()) {
            return e;
        }
        let current = old.as_ref().and_then(|s| s.read()).map(|v| v.into_bytes()).unwrap_or_default();
        let byte = (offset >> 3) as usize;
        let was_on = get_bits(&current, offset, 1) == 1;
        if old.is_none() || byte >= current.len() || was_on != on {
            let mut value = BytesMut::with_capacity(current.len().max(byte + 1));
            value.extend_from_slice(&current);
            value.resize(current.len().max(byte + 1), 0);
            set_bits(&mut value, offset, 1, on as u64);
            let event_key = self.notify.key_for(&[Class::String], &key);
            self.write_whole_value(ctx, key, hash, old, value.freeze());
            self.notify.raise_for(Class::String, "setbit", event_key.as_ref());
        }
        Frame::Integer(was_on as i64)
    }

    fn bitfield(&mut self, ctx: &mut WriteCtx, key: Bytes, ops: Vec<FieldOp>) -> Frame {
        let hash = key_hash(&key);
        let reach = ops.iter().filter(|op| op.kind != FieldOpKind::Get).map(|op| op.offset + op.field.bits as u64 - 1).max();
        let Some(reach) = reach else {
            // Only GETs: a read (a missing key reads as zeros).
            return match self.read_string(&key, ctx.now_ms) {
                Err(e) => e,
                Ok(value) => {
                    let value = value.map(|v| v.into_bytes()).unwrap_or_default();
                    Frame::Array(
                        ops.iter()
                            .map(|op| Frame::Integer(field_value(get_bits(&value, op.offset, op.field.bits), op.field) as i64))
                            .collect(),
                    )
                }
            };
        };
        let old = self.take_for_write(&key, hash, ctx.now_ms);
        if let Err(e) = check_string(old.as_ref()) {
            return e;
        }
        let current = old.as_ref().and_then(|s| s.read()).map(|v| v.into_bytes()).unwrap_or_default();
        // As Redis: the string grows to the farthest bit a write names, before any runs.
        let len = current.len().max((reach >> 3) as usize + 1);
        let mut value = BytesMut::with_capacity(len);
        value.extend_from_slice(&current);
        value.resize(len, 0);
        let mut replies = Vec::with_capacity(ops.len());
        // Writes that ran (an overflow FAIL does not): Redis notifies `setbit` once if any.
        let mut changes = 0;
        for op in &ops {
            let raw = get_bits(&value, op.offset, op.field.bits);
            let reply = match op.kind {
                FieldOpKind::Get => Frame::Integer(field_value(raw, op.field) as i64),
                _ => match field_write(raw, op) {
                    Some((new_raw, reply)) => {
                        set_bits(&mut value, op.offset, op.field.bits, new_raw);
                        changes += 1;
                        Frame::Integer(reply)
                    }
                    None => Frame::Null,
                },
            };
            replies.push(reply);
        }
        let event_key = if changes > 0 { self.notify.key_for(&[Class::String], &key) } else { None };
        if old.is_none() || len > current.len() || value[..] != current[..] {
            self.write_whole_value(ctx, key, hash, old, value.freeze());
        }
        self.notify.raise_for(Class::String, "setbit", event_key.as_ref());
        Frame::Array(replies)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_respect_partial_bytes() {
        let value = b"foobar";
        assert_eq!(count_ones(value, 0, 47), 26);
        assert_eq!(count_ones(value, 5, 30), 17);
        assert_eq!(count_ones(value, 3, 3), 0);
        assert_eq!(count_ones(value, 1, 1), 1);
    }

    #[test]
    fn bitpos_finds_clear_and_set_bits_in_spans() {
        assert_eq!(find_bit(b"\xff\xf0\x00", 0, 23, false), Some(12));
        assert_eq!(find_bit(b"\x00\x00\x01", 0, 23, true), Some(23));
        assert_eq!(find_bit(b"\xff", 0, 7, false), None);
        assert_eq!(find_bit(b"\x80", 1, 7, true), None);
    }

    #[test]
    fn fields_read_and_write_big_endian_bits() {
        let mut value = vec![0u8; 3];
        set_bits(&mut value, 3, 10, 0b10_0000_0001);
        assert_eq!(get_bits(&value, 3, 10), 0b10_0000_0001);
        assert_eq!(field_value(get_bits(&value, 3, 10), FieldType { signed: true, bits: 10 }), -511);
    }

    #[test]
    fn overflow_modes_follow_redis() {
        let op = |kind, signed, bits, overflow| FieldOp { kind, field: FieldType { signed, bits }, offset: 0, overflow };
        assert_eq!(field_write(255, &op(FieldOpKind::IncrBy(1), false, 8, Overflow::Wrap)), Some((0, 0)));
        assert_eq!(field_write(255, &op(FieldOpKind::IncrBy(1), false, 8, Overflow::Sat)), Some((255, 255)));
        assert_eq!(field_write(255, &op(FieldOpKind::IncrBy(1), false, 8, Overflow::Fail)), None);
        assert_eq!(field_write(127, &op(FieldOpKind::IncrBy(1), true, 8, Overflow::Wrap)), Some((128, -128)));
        assert_eq!(field_write(0, &op(FieldOpKind::Set(-1), false, 8, Overflow::Wrap)), Some((255, 0)));
        assert_eq!(field_write(0, &op(FieldOpKind::Set(-1), false, 8, Overflow::Sat)), Some((255, 0)));
        assert_eq!(field_write(0, &op(FieldOpKind::IncrBy(i64::MIN), true, 64, Overflow::Sat)), Some((i64::MIN as u64, i64::MIN)));
        assert_eq!(field_write(i64::MAX as u64, &op(FieldOpKind::IncrBy(1), true, 64, Overflow::Wrap)), Some((i64::MIN as u64, i64::MIN)));
    }

    #[test]
    fn bitop_pads_shorter_sources_with_zeros() {
        let sources = [Bytes::from_static(b"\xff\x0f"), Bytes::from_static(b"\xf0")];
        assert_eq!(bitop(BitOp::And, &sources), b"\xf0\x00");
        assert_eq!(bitop(BitOp::Or, &sources), b"\xff\x0f");
        assert_eq!(bitop(BitOp::Xor, &sources), b"\x0f\x0f");
        assert_eq!(bitop(BitOp::Not, &sources[..1]), b"\x00\xf0");
    }
}
