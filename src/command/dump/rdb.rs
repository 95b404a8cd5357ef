//! RDB's primitive encodings as Redis 7.0 writes them (rdb.c): lengths, strings (raw,
//! integer-encoded, LZF-compressed) and scores (binary or text doubles). A bounded
//! reader over one payload and the writer's counterparts.
//!
//! Every read is checked against what is left of the payload: a length never allocates
//! more than the bytes that could back it (an LZF string at most its compressed size
//! times LZF's largest expansion). Never sees keys, TTLs or the keyspace.

use bytes::Bytes;

use super::PayloadError;
use crate::command::numbers::parse_canonical_i64;

type Result<T> = std::result::Result<T, PayloadError>;

/// Length prefixes (the first byte's top two bits).
const LEN_6BIT: u8 = 0;
const LEN_14BIT: u8 = 1;
const LEN_ENCVAL: u8 = 3;
const LEN_32BIT: u8 = 0x80;
const LEN_64BIT: u8 = 0x81;

/// The special encodings behind `LEN_ENCVAL`.
const ENC_INT8: u8 = 0;
const ENC_INT16: u8 = 1;
const ENC_INT32: u8 = 2;
const ENC_LZF: u8 = 3;

/// The longest string a payload may unpack to (Redis's `proto-max-bulk-len` default).
pub const STRING_BYTES_MAX: usize = 512 * 1024 * 1024;
/// LZF's largest expansion: a 3-byte back reference copies up to 264 bytes.
const LZF_EXPANSION_MAX: usize = 88;

/// A cursor over one payload's object bytes (the footer already cut off).
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

    pub fn byte(&mut self) -> Result<u8> {
        let b = *self.buf.get(self.pos).ok_or(PayloadError::BadFormat)?;
        self.pos += 1;
        Ok(b)
    }

    pub fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(PayloadError::BadFormat);
        }
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    /// A length, or the special encoding it names (`(value, true)`), as `rdbLoadLen`.
    fn length_or_encoding(&mut self) -> Result<(u64, bool)> {
        let first = self.byte()?;
        match first >> 6 {
            LEN_6BIT => Ok(((first & 0x3f) as u64, false)),
            LEN_14BIT => Ok(((((first & 0x3f) as u64) << 8) | self.byte()? as u64, false)),
            LEN_ENCVAL => Ok(((first & 0x3f) as u64, true)),
            _ if first == LEN_32BIT => Ok((u32::from_be_bytes(self.array()?) as u64, false)),
            _ if first == LEN_64BIT => Ok((u64::from_be_bytes(self.array()?), false)),
            _ => Err(PayloadError::BadFormat),
        }
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let bytes = self.take(N)?;
        let mut out = [0u8; N];
        out.copy_from_slice(bytes);
        Ok(out)
    }

    /// A plain length (a number such as an id's half, not a count of what follows).
    pub fn length(&mut self) -> Result<u64> {
        match self.length_or_encoding()? {
            (n, false) => Ok(n),
            (_, true) => Err(PayloadError::BadFormat),
        }
    }

    /// A count of things that follow, each at least one byte: more than the bytes left
    /// is a corrupt payload, so no caller preallocates beyond the request.
    pub fn count(&mut self) -> Result<usize> {
        let (n, _) = self.length_or_encoding()?;
        if n > self.remaining() as u64 {
            return Err(PayloadError::BadFormat);
        }
        Ok(n as usize)
    }

    /// One RDB string: raw, an integer in text form, or LZF-compressed.
    pub fn string(&mut self) -> Result<Bytes> {
        let (n, encoded) = self.length_or_encoding()?;
        if !encoded {
            let len = usize::try_from(n).map_err(|_| PayloadError::BadFormat)?;
            return Ok(Bytes::copy_from_slice(self.take(len)?));
        }
        let int = match n as u8 {
            ENC_INT8 => self.byte()? as i8 as i64,
            ENC_INT16 => i16::from_le_bytes(self.array()?) as i64,
            ENC_INT32 => i32::from_le_bytes(self.array()?) as i64,
            ENC_LZF => return self.lzf_string(),
            _ => return Err(PayloadError::BadFormat),
        };
        Ok(Bytes::from(itoa::Buffer::new().format(int).to_owned()))
    }

    fn lzf_string(&mut self) -> Result<Bytes> {
        let compressed_len = self.count()?;
        let (len, _) = self.length_or_encoding()?;
        let len = usize::try_from(len).map_err(|_| PayloadError::BadFormat)?;
        if len > STRING_BYTES_MAX || len > compressed_len.saturating_mul(LZF_EXPANSION_MAX) {
            return Err(PayloadError::BadFormat);
        }
        let compressed = self.take(compressed_len)?;
        lzf_decompress(compressed, len).map(Bytes::from)
    }

    /// A ZSET_2 score: an IEEE double, little-endian.
    pub fn binary_double(&mut self) -> Result<f64> {
        Ok(f64::from_le_bytes(self.array()?))
    }

    /// An old ZSET score: a length byte (253 NaN, 254 +inf, 255 -inf) and its text.
    pub fn text_double(&mut self) -> Result<f64> {
        match self.byte()? {
            253 => Ok(f64::NAN),
            254 => Ok(f64::INFINITY),
            255 => Ok(f64::NEG_INFINITY),
            len => parse_score(self.take(len as usize)?).ok_or(PayloadError::BadFormat),
        }
    }
}

/// A score written as text (old ZSET scores, compact-encoded zset entries).
pub fn parse_score(text: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(text).ok()?;
    match text {
        "inf" | "+inf" => Some(f64::INFINITY),
        "-inf" => Some(f64::NEG_INFINITY),
        _ => text.parse().ok(),
    }
}

/// Undo LZF (liblzf's `lzf_decompress`) into exactly `len` bytes, or fail.
fn lzf_decompress(input: &[u8], len: usize) -> Result<Vec<u8>> {
    let mut out: Vec<u8> = Vec::with_capacity(len);
    let mut i = 0;
    while i < input.len() {
        let ctrl = input[i] as usize;
        i += 1;
        if ctrl < 32 {
            // A literal run of ctrl + 1 bytes.
            let run = ctrl + 1;
            let literal = input.get(i..i + run).ok_or(PayloadError::BadFormat)?;
            if out.len() + run > len {
                return Err(PayloadError::BadFormat);
            }
            out.extend_from_slice(literal);
            i += run;
        } else {
            // A back reference: length in the top 3 bits (7 means one more byte).
            let mut run = ctrl >> 5;
            if run == 7 {
                run += *input.get(i).ok_or(PayloadError::BadFormat)? as usize;
                i += 1;
            }
            run += 2;
            let low = *input.get(i).ok_or(PayloadError::BadFormat)? as usize;
            i += 1;
            let back = ((ctrl & 0x1f) << 8) + low + 1;
            if back > out.len() || out.len() + run > len {
                return Err(PayloadError::BadFormat);
            }
            // Byte by byte: the source may overlap what this copy writes.
            let start = out.len() - back;
            for k in 0..run {
                let b = out[start + k];
                out.push(b);
            }
        }
    }
    if out.len() != len {
        return Err(PayloadError::BadFormat);
    }
    Ok(out)
}

/// Append an RDB length.
pub fn put_length(out: &mut Vec<u8>, len: usize) {
    if len < 1 << 6 {
        out.push(len as u8);
    } else if len < 1 << 14 {
        out.push((LEN_14BIT << 6) | (len >> 8) as u8);
        out.push(len as u8);
    } else if let Ok(len) = u32::try_from(len) {
        out.push(LEN_32BIT);
        out.extend_from_slice(&len.to_be_bytes());
    } else {
        out.push(LEN_64BIT);
        out.extend_from_slice(&(len as u64).to_be_bytes());
    }
}

/// Append an RDB string as Redis does without compression: an integer that fits 32
/// bits in its integer encoding (`rdbTryIntegerEncoding`), anything else raw.
pub fn put_string(out: &mut Vec<u8>, s: &[u8]) {
    let encval = LEN_ENCVAL << 6;
    match parse_canonical_i64(s) {
        Some(n) if i8::try_from(n).is_ok() => out.extend_from_slice(&[encval | ENC_INT8, n as i8 as u8]),
        Some(n) if i16::try_from(n).is_ok() => {
            out.push(encval | ENC_INT16);
            out.extend_from_slice(&(n as i16).to_le_bytes());
        }
        Some(n) if i32::try_from(n).is_ok() => {
            out.push(encval | ENC_INT32);
            out.extend_from_slice(&(n as i32).to_le_bytes());
        }
        _ => {
            put_length(out, s.len());
            out.extend_from_slice(s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_round_trip_at_every_width() {
        for len in [0usize, 63, 64, 16383, 16384, u32::MAX as usize, u32::MAX as usize + 1] {
            let mut out = Vec::new();
            put_length(&mut out, len);
            let mut reader = Reader::new(&out);
            assert_eq!(reader.length_or_encoding().unwrap(), (len as u64, false));
            assert_eq!(reader.remaining(), 0);
        }
    }

    #[test]
    fn integers_use_the_smallest_integer_encoding() {
        for (text, bytes) in [("12", 2), ("-300", 3), ("70000", 5), ("2147483648", 11), ("007", 4)] {
            let mut out = Vec::new();
            put_string(&mut out, text.as_bytes());
            assert_eq!(out.len(), bytes, "{text}");
            assert_eq!(Reader::new(&out).string().unwrap(), text.as_bytes());
        }
    }

    #[test]
    fn lzf_back_references_may_overlap_their_output() {
        // "a" literal, then a back reference of 9 bytes at distance 1.
        let compressed = [0x00, b'a', 7 << 5, 0, 0];
        assert_eq!(lzf_decompress(&compressed, 10).unwrap(), b"aaaaaaaaaa");
        assert_eq!(lzf_decompress(&compressed, 11), Err(PayloadError::BadFormat));
        assert_eq!(lzf_decompress(&[0x20, 0], 3), Err(PayloadError::BadFormat), "a reference before any output");
    }

    #[test]
    fn a_length_beyond_the_payload_is_refused_before_allocating() {
        let mut out = vec![LEN_64BIT];
        out.extend_from_slice(&u64::MAX.to_be_bytes());
        assert_eq!(Reader::new(&out).count(), Err(PayloadError::BadFormat));
        assert_eq!(Reader::new(&out).string(), Err(PayloadError::BadFormat));
    }
}
