//! The bit commands' arguments -> typed [`BitCommand`]s (SETBIT, GETBIT, BITCOUNT,
//! BITPOS, BITFIELD, BITFIELD_RO) and BITOP's operator, with Redis 7.0's checks and
//! error texts. Where Redis looks the key up before it reads an argument (BITCOUNT's and
//! BITPOS's range), the argument's error is kept in the command and reported by the
//! shard after the lookup, in Redis's order.
//!
//! Never touches the keyspace.

use bytes::Bytes;

use super::errors;
use super::numbers::parse_i64;
use crate::protocol::Frame;

pub const BIT_OFFSET_INVALID: &str = "ERR bit offset is not an integer or out of range";
pub const BIT_VALUE_INVALID: &str = "ERR bit is not an integer or out of range";
const BITFIELD_TYPE_INVALID: &str = "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.";
/// The default `proto-max-bulk-len`: offsets are checked against it here and against
/// the running setting by the shard.
const STRING_BYTES_MAX_DEFAULT: u64 = 512 * 1024 * 1024;

/// A BITCOUNT or BITPOS range: `start` and `end` in bytes, or in bits with `BIT`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct BitRange {
    pub start: i64,
    /// BITPOS may leave it out (then the search runs past the string's end).
    pub end: Option<i64>,
    pub in_bits: bool,
}

/// What BITFIELD does when a write leaves the field's range.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Overflow {
    Wrap,
    Sat,
    Fail,
}

/// A BITFIELD field: signedness and width (i1..i64, u1..u63).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct FieldType {
    pub signed: bool,
    pub bits: u32,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum FieldOpKind {
    Get,
    Set(i64),
    IncrBy(i64),
}

/// One BITFIELD operation, with the OVERFLOW mode in force where it appears.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct FieldOp {
    pub kind: FieldOpKind,
    pub field: FieldType,
    /// In bits.
    pub offset: u64,
    pub overflow: Overflow,
}

/// BITOP's operator.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum BitOp {
    And,
    Or,
    Xor,
    Not,
}

#[derive(Clone, Debug, PartialEq)]
pub enum BitCommand {
    SetBit {
        key: Bytes,
        offset: u64,
        on: bool,
    },
    GetBit {
        key: Bytes,
        offset: u64,
    },
    /// `range`: none for the whole string, or its parse (errors come after the lookup).
    Count {
        key: Bytes,
        range: Result<Option<BitRange>, Frame>,
    },
    Pos {
        key: Bytes,
        bit: bool,
        range: Result<Option<BitRange>, Frame>,
    },
    Field {
        key: Bytes,
        ops: Vec<FieldOp>,
    },
}

impl BitCommand {
    pub fn key(&self) -> &Bytes {
        match self {
            BitCommand::SetBit { key, .. }
            | BitCommand::GetBit { key, .. }
            | BitCommand::Count { key, .. }
            | BitCommand::Pos { key, .. }
            | BitCommand::Field { key, .. } => key,
        }
    }

    pub fn is_write(&self) -> bool {
        match self {
            BitCommand::SetBit { .. } => true,
            BitCommand::Field { ops, .. } => ops.iter().any(|op| op.kind != FieldOpKind::Get),
            _ => false,
        }
    }
}

fn eq(arg: &[u8], word: &str) -> bool {
    arg.eq_ignore_ascii_case(word.as_bytes())
}

fn int(arg: &[u8]) -> Result<i64, Frame> {
    parse_i64(arg).ok_or_else(|| errors::error(errors::NOT_INTEGER))
}

/// A bit offset (`#n` counts in fields of `field_bits` for BITFIELD), as Redis's
/// `getBitOffsetFromArgument`.
fn bit_offset(arg: &[u8], field_bits: Option<u32>) -> Result<u64, Frame> {
    let invalid = || errors::error(BIT_OFFSET_INVALID);
    let (digits, scale) = match (arg.first(), field_bits) {
        (Some(b'#'), Some(bits)) => (&arg[1..], bits as i64),
        _ => (arg, 1),
    };
    let offset = parse_i64(digits).and_then(|n| n.checked_mul(scale)).ok_or_else(invalid)?;
    if offset < 0 || (offset as u64 >> 3) >= STRING_BYTES_MAX_DEFAULT {
        return Err(invalid());
    }
    Ok(offset as u64)
}

/// `start end [BYTE|BIT]` (BITCOUNT) or `start [end [BYTE|BIT]]` (BITPOS).
fn range(args: &[Bytes], end_optional: bool) -> Result<Option<BitRange>, Frame> {
    let syntax = || errors::error(errors::SYNTAX);
    match args.len() {
        0 => return Ok(None),
        1 if !end_optional => return Err(syntax()),
        1..=3 => {}
        _ => return Err(syntax()),
    }
    let start = int(&args[0])?;
    // Redis reads BITCOUNT's end before the unit, and BITPOS's unit before the end.
    let early_end = if end_optional { None } else { Some(int(&args[1])?) };
    if let Some(end) = early_end
        && start < 0
        && end < 0
        && start > end
    {
        // Redis answers 0 for ends that count from the end and cross before it reads
        // the unit, so a bad unit goes unremarked there (the shard applies the rule).
        return Ok(Some(BitRange { start, end: Some(end), in_bits: false }));
    }
    let in_bits = match args.get(2) {
        None => false,
        Some(unit) if eq(unit, "bit") => true,
        Some(unit) if eq(unit, "byte") => false,
        Some(_) => return Err(syntax()),
    };
    let end = match early_end {
        Some(end) => Some(end),
        None => args.get(1).map(|e| int(e)).transpose()?,
    };
    Ok(Some(BitRange { start, end, in_bits }))
}

fn field_type(arg: &[u8]) -> Result<FieldType, Frame> {
    let invalid = || errors::error(BITFIELD_TYPE_INVALID);
    let signed = match arg.first() {
        Some(b'i') => true,
        Some(b'u') => false,
        _ => return Err(invalid()),
    };
    let bits = parse_i64(&arg[1..]).ok_or_else(invalid)?;
    let bits_max = if signed { 64 } else { 63 };
    if !(1..=bits_max).contains(&bits) {
        return Err(invalid());
    }
    Ok(FieldType { signed, bits: bits as u32 })
}

fn key_of(a: &mut [Bytes]) -> Bytes {
    std::mem::take(&mut a[1])
}

pub fn parse_setbit(a: &mut [Bytes]) -> Result<BitCommand, Frame> {
    let offset = bit_offset(&a[2], None)?;
    let on = match parse_i64(&a[3]) {
        Some(0) => false,
        Some(1) => true,
        _ => return Err(errors::error(BIT_VALUE_INVALID)),
    };
    Ok(BitCommand::SetBit { key: key_of(a), offset, on })
}

pub fn parse_getbit(a: &mut [Bytes]) -> Result<BitCommand, Frame> {
    let offset = bit_offset(&a[2], None)?;
    Ok(BitCommand::GetBit { key: key_of(a), offset })
}

pub fn parse_bitcount(a: &mut [Bytes]) -> Result<BitCommand, Frame> {
    let range = range(&a[2..], false);
    Ok(BitCommand::Count { key: key_of(a), range })
}

pub fn parse_bitpos(a: &mut [Bytes]) -> Result<BitCommand, Frame> {
    let bit = match int(&a[2])? {
        0 => false,
        1 => true,
        _ => return Err(Frame::static_error("ERR The bit argument must be 1 or 0.")),
    };
    let range = range(&a[3..], true);
    Ok(BitCommand::Pos { key: key_of(a), bit, range })
}

/// BITFIELD and (`read_only`) BITFIELD_RO.
pub fn parse_bitfield(a: &mut [Bytes], read_only: bool) -> Result<BitCommand, Frame> {
    let mut ops = Vec::new();
    let mut overflow = Overflow::Wrap;
    let mut j = 2;
    while j < a.len() {
        let left = a.len() - j - 1;
        let sub = &a[j];
        let kind_args = if eq(sub, "get") && left >= 2 {
            0
        } else if (eq(sub, "set") || eq(sub, "incrby")) && left >= 3 {
            1
        } else if eq(sub, "overflow") && left >= 1 {
            overflow = match &a[j + 1] {
                m if eq(m, "wrap") => Overflow::Wrap,
                m if eq(m, "sat") => Overflow::Sat,
                m if eq(m, "fail") => Overflow::Fail,
                _ => return Err(Frame::static_error("ERR Invalid OVERFLOW type specified")),
            };
            j += 2;
            continue;
        } else {
            return Err(errors::error(errors::SYNTAX));
        };
        let field = field_type(&a[j + 1])?;
        let offset = bit_offset(&a[j + 2], Some(field.bits))?;
        let kind = match kind_args {
            0 => FieldOpKind::Get,
            _ if eq(&a[j], "set") => FieldOpKind::Set(int(&a[j + 3])?),
            _ => FieldOpKind::IncrBy(int(&a[j + 3])?),
        };
        ops.push(FieldOp { kind, field, offset, overflow });
        j += 3 + kind_args;
    }
    if read_only && ops.iter().any(|op| op.kind != FieldOpKind::Get) {
        return Err(Frame::static_error("ERR BITFIELD_RO only supports the GET subcommand"));
    }
    Ok(BitCommand::Field { key: key_of(a), ops })
}

/// BITOP's operator, and Redis's check that NOT has exactly one source.
pub fn parse_bitop(name: &[u8], sources: usize) -> Result<BitOp, Frame> {
    let op = match name {
        n if eq(n, "and") => BitOp::And,
        n if eq(n, "or") => BitOp::Or,
        n if eq(n, "xor") => BitOp::Xor,
        n if eq(n, "not") => BitOp::Not,
        _ => return Err(errors::error(errors::SYNTAX)),
    };
    if op == BitOp::Not && sources != 1 {
        return Err(Frame::static_error("ERR BITOP NOT must be called with a single source key."));
    }
    Ok(op)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<Bytes> {
        line.split(' ').map(|s| Bytes::copy_from_slice(s.as_bytes())).collect()
    }

    #[test]
    fn offsets_are_checked_against_512_mb() {
        assert_eq!(bit_offset(b"4294967295", None), Ok(4294967295));
        assert_eq!(bit_offset(b"4294967296", None), Err(errors::error(BIT_OFFSET_INVALID)));
        assert_eq!(bit_offset(b"-1", None), Err(errors::error(BIT_OFFSET_INVALID)));
        assert_eq!(bit_offset(b"#3", Some(8)), Ok(24));
        assert_eq!(bit_offset(b"#3", None), Err(errors::error(BIT_OFFSET_INVALID)));
    }

    #[test]
    fn bitfield_ops_carry_the_overflow_in_force() {
        let BitCommand::Field { ops, .. } = parse_bitfield(&mut args("BITFIELD k GET u8 0 OVERFLOW SAT INCRBY i5 #1 -3"), false).unwrap()
        else {
            panic!("a bitfield");
        };
        assert_eq!(
            ops[0],
            FieldOp { kind: FieldOpKind::Get, field: FieldType { signed: false, bits: 8 }, offset: 0, overflow: Overflow::Wrap }
        );
        assert_eq!(
            ops[1],
            FieldOp { kind: FieldOpKind::IncrBy(-3), field: FieldType { signed: true, bits: 5 }, offset: 5, overflow: Overflow::Sat }
        );
        assert_eq!(field_type(b"u64"), Err(errors::error(BITFIELD_TYPE_INVALID)));
        assert!(parse_bitfield(&mut args("BITFIELD_RO k SET u8 0 1"), true).is_err());
    }

    #[test]
    fn range_errors_wait_for_the_lookup() {
        let BitCommand::Count { range, .. } = parse_bitcount(&mut args("BITCOUNT k a b")).unwrap() else { panic!() };
        assert_eq!(range, Err(errors::error(errors::NOT_INTEGER)));
        let BitCommand::Pos { range, .. } = parse_bitpos(&mut args("BITPOS k 1 0")).unwrap() else { panic!() };
        assert_eq!(range, Ok(Some(BitRange { start: 0, end: None, in_bits: false })));
    }
}
