//! Stream entry ids (`<ms>-<seq>`, two unsigned 64-bit numbers) as clients write them
//! and as Redis 7.0 parses them, and their 16-byte big-endian form, whose byte order is
//! id order (element names sort entries).
//!
//! Pure: no I/O, no clock.

use bytes::Bytes;

use crate::protocol::Frame;

pub const INVALID_ID: &str = "ERR Invalid stream ID specified as stream command argument";

#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamId {
    pub ms: u64,
    pub seq: u64,
}

pub const ID_BYTES: usize = 16;

impl StreamId {
    pub const ZERO: StreamId = StreamId { ms: 0, seq: 0 };
    pub const MAX: StreamId = StreamId { ms: u64::MAX, seq: u64::MAX };

    pub fn new(ms: u64, seq: u64) -> StreamId {
        StreamId { ms, seq }
    }

    pub fn to_bytes(self) -> [u8; ID_BYTES] {
        let mut out = [0u8; ID_BYTES];
        out[..8].copy_from_slice(&self.ms.to_be_bytes());
        out[8..].copy_from_slice(&self.seq.to_be_bytes());
        out
    }

    pub fn from_bytes(bytes: &[u8]) -> Option<StreamId> {
        let ms = u64::from_be_bytes(bytes.get(..8)?.try_into().ok()?);
        let seq = u64::from_be_bytes(bytes.get(8..16)?.try_into().ok()?);
        Some(StreamId { ms, seq })
    }

    /// The next id up, `None` past the last possible one.
    pub fn next(self) -> Option<StreamId> {
        match self.seq.checked_add(1) {
            Some(seq) => Some(StreamId { ms: self.ms, seq }),
            None => self.ms.checked_add(1).map(|ms| StreamId { ms, seq: 0 }),
        }
    }

    /// The next id down, `None` below 0-0.
    pub fn prev(self) -> Option<StreamId> {
        match self.seq.checked_sub(1) {
            Some(seq) => Some(StreamId { ms: self.ms, seq }),
            None => self.ms.checked_sub(1).map(|ms| StreamId { ms, seq: u64::MAX }),
        }
    }

    pub fn is_zero(self) -> bool {
        self == StreamId::ZERO
    }

    pub fn to_frame(self) -> Frame {
        // Every reply of XADD `*` carries one: itoa, not `format!` (~1,000 instructions
        // an XADD less).
        let (mut ms, mut seq) = (itoa::Buffer::new(), itoa::Buffer::new());
        let (ms, seq) = (ms.format(self.ms).as_bytes(), seq.format(self.seq).as_bytes());
        let mut text = Vec::with_capacity(ms.len() + 1 + seq.len());
        text.extend_from_slice(ms);
        text.push(b'-');
        text.extend_from_slice(seq);
        Frame::Bulk(Bytes::from(text))
    }
}

impl std::fmt::Display for StreamId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

/// Redis's `string2ull`: a strict integer (`string2ll`) that is not negative, or else
/// what C's `strtoull` reads when it reads the whole text: leading white space, a sign
/// (`-` wraps: " -1" is 18446744073709551615), then decimal digits within u64.
fn parse_u64(text: &[u8]) -> Option<u64> {
    if let Some(n) = crate::command::numbers::parse_i64(text) {
        return u64::try_from(n).ok();
    }
    let start = text.iter().position(|b| !matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r'))?;
    let (negative, digits) = match text[start] {
        b'-' => (true, &text[start + 1..]),
        b'+' => (false, &text[start + 1..]),
        _ => (false, &text[start..]),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n: u64 = std::str::from_utf8(digits).ok()?.parse().ok()?;
    Some(if negative { n.wrapping_neg() } else { n })
}

/// An id as XADD takes it: `*`, `<ms>-*`, `<ms>-<seq>` or `<ms>` (seq 0).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum AddId {
    Auto,
    /// `<ms>-*`: the sequence is generated.
    AutoSeq(u64),
    Explicit(StreamId),
}

pub fn parse_add_id(arg: &[u8]) -> Result<AddId, Frame> {
    if arg == b"*" {
        return Ok(AddId::Auto);
    }
    let invalid = || Frame::static_error(INVALID_ID);
    if arg.len() > 127 || arg == b"-" || arg == b"+" {
        return Err(invalid());
    }
    match arg.iter().position(|&b| b == b'-') {
        Some(dash) => {
            let ms = parse_u64(&arg[..dash]).ok_or_else(invalid)?;
            if &arg[dash + 1..] == b"*" {
                return Ok(AddId::AutoSeq(ms));
            }
            let seq = parse_u64(&arg[dash + 1..]).ok_or_else(invalid)?;
            Ok(AddId::Explicit(StreamId { ms, seq }))
        }
        None => Ok(AddId::Explicit(StreamId { ms: parse_u64(arg).ok_or_else(invalid)?, seq: 0 })),
    }
}

/// Redis's `streamGenericParseIDOrReply`: `<ms>-<seq>` or `<ms>` (the sequence is
/// `missing_seq`); `-` and `+` are the least and greatest ids unless `strict`.
pub fn parse_id(arg: &[u8], missing_seq: u64, strict: bool) -> Result<StreamId, Frame> {
    let invalid = || Frame::static_error(INVALID_ID);
    if arg.len() > 127 {
        return Err(invalid());
    }
    match arg {
        b"-" if !strict => return Ok(StreamId::ZERO),
        b"+" if !strict => return Ok(StreamId::MAX),
        _ => {}
    }
    match arg.iter().position(|&b| b == b'-') {
        Some(dash) => {
            let ms = parse_u64(&arg[..dash]).ok_or_else(invalid)?;
            let seq = parse_u64(&arg[dash + 1..]).ok_or_else(invalid)?;
            Ok(StreamId { ms, seq })
        }
        None => Ok(StreamId { ms: parse_u64(arg).ok_or_else(invalid)?, seq: missing_seq }),
    }
}

/// One end of an XRANGE/XPENDING interval: `(` makes it exclusive (Redis then parses
/// the rest strictly). Returns the id and whether it is exclusive.
pub fn parse_interval(arg: &[u8], missing_seq: u64) -> Result<(StreamId, bool), Frame> {
    if arg.len() > 1 && arg[0] == b'(' {
        Ok((parse_id(&arg[1..], missing_seq, true)?, true))
    } else {
        Ok((parse_id(arg, missing_seq, false)?, false))
    }
}

/// An inclusive interval from two ends as XRANGE parses them; `None` when it is empty
/// (an exclusive end that cannot move), or the error Redis gives.
pub fn parse_range(start: &[u8], end: &[u8]) -> Result<Option<(StreamId, StreamId)>, Frame> {
    let (mut lo, lo_excl) = parse_interval(start, 0)?;
    if lo_excl {
        match lo.next() {
            Some(next) => lo = next,
            None => return Err(Frame::static_error("ERR invalid start ID for the interval")),
        }
    }
    let (mut hi, hi_excl) = parse_interval(end, u64::MAX)?;
    if hi_excl {
        match hi.prev() {
            Some(prev) => hi = prev,
            None => return Err(Frame::static_error("ERR invalid end ID for the interval")),
        }
    }
    Ok((lo <= hi).then_some((lo, hi)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_parse_as_redis_parses_them() {
        assert_eq!(parse_id(b"5", 0, false), Ok(StreamId::new(5, 0)));
        assert_eq!(parse_id(b"5", u64::MAX, false), Ok(StreamId::new(5, u64::MAX)));
        assert_eq!(parse_id(b"5-3", 0, false), Ok(StreamId::new(5, 3)));
        assert_eq!(parse_id(b"-", 0, false), Ok(StreamId::ZERO));
        assert_eq!(parse_id(b"+", 0, false), Ok(StreamId::MAX));
        assert!(parse_id(b"+", 0, true).is_err());
        // strtoull's leniency, as Redis has it.
        assert_eq!(parse_id(b"+8", 0, false), Ok(StreamId::new(8, 0)));
        assert_eq!(parse_id(b"1--0", 0, false), Ok(StreamId::new(1, 0)));
        assert_eq!(parse_id(b"11- -1", 0, false), Ok(StreamId::new(11, u64::MAX)));
        for bad in [&b"-1"[..], b"1-", b"a", b"1-2-3", b"", b"18446744073709551616", b" ", b"1 "] {
            assert!(parse_id(bad, 0, false).is_err(), "{bad:?}");
        }
        assert_eq!(parse_add_id(b"*"), Ok(AddId::Auto));
        assert_eq!(parse_add_id(b"7-*"), Ok(AddId::AutoSeq(7)));
        assert_eq!(parse_add_id(b"7"), Ok(AddId::Explicit(StreamId::new(7, 0))));
        assert!(parse_add_id(b"-").is_err());
    }

    #[test]
    fn byte_order_is_id_order_and_ranges_exclude_as_asked() {
        let ids = [StreamId::new(0, 1), StreamId::new(1, 0), StreamId::new(1, u64::MAX), StreamId::new(u64::MAX, 0)];
        for pair in ids.windows(2) {
            assert!(pair[0].to_bytes() < pair[1].to_bytes());
            assert_eq!(StreamId::from_bytes(&pair[0].to_bytes()), Some(pair[0]));
        }
        assert_eq!(parse_range(b"(1-5", b"(2-0").unwrap(), Some((StreamId::new(1, 6), StreamId::new(1, u64::MAX))));
        assert_eq!(parse_range(b"(1-5", b"1-5").unwrap(), None);
        assert!(parse_range(b"(18446744073709551615-18446744073709551615", b"+").is_err());
        assert!(parse_range(b"-", b"(0-0").is_err());
        assert_eq!(StreamId::new(1, u64::MAX).next(), Some(StreamId::new(2, 0)));
        assert_eq!(StreamId::MAX.next(), None);
    }
}
