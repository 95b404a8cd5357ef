//! Redis's compact collection blobs, as they travel inside an RDB string: the listpack
//! (Redis 7.0's small hashes and zsets), the ziplist (what Redis 6.x wrote for them) and
//! the intset (small all-integer sets). Decoding checks them as Redis's deep sanitizer
//! does (sizes, headers, back lengths, the end mark, intset order); encoding writes the
//! bytes Redis itself would, so a small hash or set DUMPs byte for byte as in Redis.
//!
//! Pure functions over byte slices; never sees keys or the keyspace.

use bytes::Bytes;

use super::PayloadError;
use crate::command::numbers::parse_canonical_i64;

type Result<T> = std::result::Result<T, PayloadError>;

const BAD: PayloadError = PayloadError::BadFormat;
const END: u8 = 0xff;
/// A header count that means "too many to count here": walk the entries.
const LISTPACK_COUNT_UNKNOWN: u16 = u16::MAX;
const ZIPLIST_COUNT_UNKNOWN: u16 = u16::MAX;

fn int_text(n: i64) -> Bytes {
    Bytes::from(itoa::Buffer::new().format(n).to_owned())
}

fn le_int(bytes: &[u8]) -> i64 {
    // Sign-extend a little-endian integer of 1 to 8 bytes.
    let mut raw = [0u8; 8];
    raw[..bytes.len()].copy_from_slice(bytes);
    let shift = 64 - 8 * bytes.len() as u32;
    (i64::from_le_bytes(raw) << shift) >> shift
}

/// A cut of `blob` that must lie inside it.
fn slice(blob: &[u8], from: usize, len: usize) -> Result<&[u8]> {
    blob.get(from..from.checked_add(len).ok_or(BAD)?).ok_or(BAD)
}

/// How many bytes a listpack back length takes for an entry of `len` bytes.
fn backlen_size(len: usize) -> usize {
    match len {
        0..=127 => 1,
        128..16383 => 2,
        16383..2097151 => 3,
        2097151..268435455 => 4,
        _ => 5,
    }
}

fn put_backlen(out: &mut Vec<u8>, len: usize) {
    let size = backlen_size(len);
    for i in (0..size).rev() {
        let group = ((len >> (7 * i)) & 127) as u8;
        // Every byte but the first carries the continuation bit.
        out.push(if i == size - 1 { group } else { group | 128 });
    }
}

/// The entries of a listpack, each a string (integers in their decimal text).
pub fn listpack_entries(blob: &[u8]) -> Result<Vec<Bytes>> {
    let header = slice(blob, 0, 6)?;
    let total = u32::from_le_bytes([header[0], header[1], header[2], header[3]]) as usize;
    let count = u16::from_le_bytes([header[4], header[5]]);
    if total != blob.len() || blob.len() <= header.len() || blob.last() != Some(&END) {
        return Err(BAD);
    }
    let mut entries = Vec::with_capacity((count as usize).min(blob.len()));
    let mut pos = 6;
    while blob[pos] != END {
        let b = blob[pos];
        // (header bytes, payload bytes, the entry as text)
        let (head, body, entry) = if b & 0x80 == 0 {
            (1, 0, int_text((b & 0x7f) as i64))
        } else if b & 0xc0 == 0x80 {
            let len = (b & 0x3f) as usize;
            (1, len, Bytes::copy_from_slice(slice(blob, pos + 1, len)?))
        } else if b & 0xe0 == 0xc0 {
            let raw = (((b & 0x1f) as i64) << 8) | *blob.get(pos + 1).ok_or(BAD)? as i64;
            (2, 0, int_text(if raw >= 1 << 12 { raw - (1 << 13) } else { raw }))
        } else if b & 0xf0 == 0xe0 {
            let len = (((b & 0x0f) as usize) << 8) | *blob.get(pos + 1).ok_or(BAD)? as usize;
            (2, len, Bytes::copy_from_slice(slice(blob, pos + 2, len)?))
        } else {
            match b {
                0xf0 => {
                    let len = le_int(slice(blob, pos + 1, 4)?) as u32 as usize;
                    (5, len, Bytes::copy_from_slice(slice(blob, pos + 5, len)?))
                }
                0xf1..=0xf4 => {
                    let width = [2, 3, 4, 8][(b - 0xf1) as usize];
                    (1 + width, 0, int_text(le_int(slice(blob, pos + 1, width)?)))
                }
                _ => return Err(BAD),
            }
        };
        let len = head + body;
        let back = slice(blob, pos + len, backlen_size(len))?;
        let mut expected = Vec::with_capacity(5);
        put_backlen(&mut expected, len);
        if back != expected.as_slice() {
            return Err(BAD);
        }
        entries.push(entry);
        pos += len + back.len();
        if pos >= blob.len() {
            return Err(BAD);
        }
    }
    if pos != blob.len() - 1 || (count != LISTPACK_COUNT_UNKNOWN && count as usize != entries.len()) {
        return Err(BAD);
    }
    Ok(entries)
}

/// A listpack of `entries`, encoded as Redis's `lpAppend` encodes them.
pub fn listpack(entries: &[&[u8]]) -> Vec<u8> {
    let mut out = vec![0u8; 6];
    for entry in entries {
        let start = out.len();
        match parse_canonical_i64(entry) {
            Some(n @ 0..=127) => out.push(n as u8),
            Some(n @ -4096..=4095) => {
                let raw = if n < 0 { (1 << 13) + n } else { n };
                out.push(0xc0 | (raw >> 8) as u8);
                out.push(raw as u8);
            }
            Some(n) => {
                let (tag, width) = if i16::try_from(n).is_ok() {
                    (0xf1, 2)
                } else if (-(1 << 23)..1 << 23).contains(&n) {
                    (0xf2, 3)
                } else if i32::try_from(n).is_ok() {
                    (0xf3, 4)
                } else {
                    (0xf4, 8)
                };
                out.push(tag);
                out.extend_from_slice(&n.to_le_bytes()[..width]);
            }
            None if entry.len() < 64 => {
                out.push(0x80 | entry.len() as u8);
                out.extend_from_slice(entry);
            }
            None if entry.len() < 4096 => {
                out.push(0xe0 | (entry.len() >> 8) as u8);
                out.push(entry.len() as u8);
                out.extend_from_slice(entry);
            }
            None => {
                out.push(0xf0);
                out.extend_from_slice(&(entry.len() as u32).to_le_bytes());
                out.extend_from_slice(entry);
            }
        }
        let len = out.len() - start;
        put_backlen(&mut out, len);
    }
    out.push(END);
    let total = out.len() as u32;
    let count = u16::try_from(entries.len()).unwrap_or(LISTPACK_COUNT_UNKNOWN);
    out[..4].copy_from_slice(&total.to_le_bytes());
    out[4..6].copy_from_slice(&count.to_le_bytes());
    out
}

/// The entries of a ziplist (Redis before 7.0), each as a string.
pub fn ziplist_entries(blob: &[u8]) -> Result<Vec<Bytes>> {
    let header = slice(blob, 0, 10)?;
    let total = u32::from_le_bytes([header[0], header[1], header[2], header[3]]) as usize;
    let count = u16::from_le_bytes([header[8], header[9]]);
    if total != blob.len() || blob.len() <= header.len() || blob.last() != Some(&END) {
        return Err(BAD);
    }
    let mut entries = Vec::with_capacity((count as usize).min(blob.len()));
    let tail = u32::from_le_bytes([header[4], header[5], header[6], header[7]]) as usize;
    let mut pos = 10;
    let mut previous_len = 0usize;
    let mut last_start = pos;
    while blob[pos] != END {
        let start = pos;
        last_start = start;
        // The previous entry's length: one byte, or 0xfe and four.
        let prevlen = if blob[pos] < 0xfe {
            pos += 1;
            blob[start] as usize
        } else if blob[pos] == 0xfe {
            pos += 5;
            le_int(slice(blob, start + 1, 4)?) as u32 as usize
        } else {
            return Err(BAD);
        };
        if prevlen != previous_len {
            return Err(BAD);
        }
        let b = *blob.get(pos).ok_or(BAD)?;
        let (head, body) = match b >> 6 {
            0 => (1, (b & 0x3f) as usize),
            1 => (2, (((b & 0x3f) as usize) << 8) | *blob.get(pos + 1).ok_or(BAD)? as usize),
            2 if b == 0x80 => (5, u32::from_be_bytes(slice(blob, pos + 1, 4)?.try_into().map_err(|_| BAD)?) as usize),
            2 => return Err(BAD),
            _ => match b {
                0xc0 => (1, 2),
                0xd0 => (1, 4),
                0xe0 => (1, 8),
                0xf0 => (1, 3),
                0xfe => (1, 1),
                0xf1..=0xfd => (1, 0),
                _ => return Err(BAD),
            },
        };
        let data = slice(blob, pos + head, body)?;
        let entry = if b >> 6 != 3 {
            Bytes::copy_from_slice(data)
        } else if (0xf1..=0xfd).contains(&b) {
            // An immediate 0 to 12, stored as 1 to 13.
            int_text((b & 0x0f) as i64 - 1)
        } else {
            int_text(le_int(data))
        };
        entries.push(entry);
        pos += head + body;
        previous_len = pos - start;
        if pos >= blob.len() {
            return Err(BAD);
        }
    }
    if pos != blob.len() - 1 || tail != last_start || (count != ZIPLIST_COUNT_UNKNOWN && count as usize != entries.len()) {
        return Err(BAD);
    }
    Ok(entries)
}

/// The members of an intset, checked sorted and unique (as deep sanitization does).
pub fn intset_members(blob: &[u8]) -> Result<Vec<Bytes>> {
    let header = slice(blob, 0, 8)?;
    let width = u32::from_le_bytes([header[0], header[1], header[2], header[3]]) as usize;
    let count = u32::from_le_bytes([header[4], header[5], header[6], header[7]]) as usize;
    if !matches!(width, 2 | 4 | 8) || count.checked_mul(width).and_then(|n| n.checked_add(8)) != Some(blob.len()) {
        return Err(BAD);
    }
    let mut members = Vec::with_capacity(count);
    let mut previous: Option<i64> = None;
    for chunk in blob[8..].chunks_exact(width) {
        let n = le_int(chunk);
        if previous.is_some_and(|p| p >= n) {
            return Err(BAD);
        }
        previous = Some(n);
        members.push(int_text(n));
    }
    Ok(members)
}

/// An intset of these integers (sorted here), at the narrowest width that holds them.
pub fn intset(members: &[i64]) -> Vec<u8> {
    let mut sorted = members.to_vec();
    sorted.sort_unstable();
    let width_of = |n: i64| {
        if i16::try_from(n).is_ok() {
            2
        } else if i32::try_from(n).is_ok() {
            4
        } else {
            8
        }
    };
    let width = sorted.iter().map(|&n| width_of(n)).max().unwrap_or(2);
    let mut out = Vec::with_capacity(8 + width * sorted.len());
    out.extend_from_slice(&(width as u32).to_le_bytes());
    out.extend_from_slice(&(sorted.len() as u32).to_le_bytes());
    for n in sorted {
        out.extend_from_slice(&n.to_le_bytes()[..width]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(entries: &[Bytes]) -> Vec<&str> {
        entries.iter().map(|e| std::str::from_utf8(e).unwrap()).collect()
    }

    #[test]
    fn listpack_round_trips_every_encoding() {
        let long = "x".repeat(5000);
        let mid = "y".repeat(100);
        let items: Vec<&[u8]> = vec![
            b"0",
            b"127",
            b"128",
            b"-4096",
            b"4095",
            b"32767",
            b"-32768",
            b"8388607",
            b"2147483647",
            b"-9223372036854775808",
            b"hello",
            b"",
            b"007",
            mid.as_bytes(),
            long.as_bytes(),
        ];
        let blob = listpack(&items);
        let back = listpack_entries(&blob).unwrap();
        assert_eq!(back.iter().map(|b| b.as_ref()).collect::<Vec<_>>(), items);
    }

    #[test]
    fn a_listpack_from_redis_decodes() {
        // HSET h a 1 b hello on redis-server 7.0.15, from its DUMP.
        let blob = b"\x16\x00\x00\x00\x04\x00\x81a\x02\x01\x01\x81b\x02\x85hello\x06\xff";
        assert_eq!(texts(&listpack_entries(blob).unwrap()), ["a", "1", "b", "hello"]);
        assert_eq!(listpack(&[b"a", b"1", b"b", b"hello"]), blob.to_vec(), "and encodes back byte for byte");
    }

    #[test]
    fn corrupt_listpacks_are_refused() {
        let good = listpack(&[b"a", b"1"]);
        let mut short = good.clone();
        short.truncate(good.len() - 1);
        assert_eq!(listpack_entries(&short), Err(BAD));
        let mut bad_count = good.clone();
        bad_count[4] = 3;
        assert_eq!(listpack_entries(&bad_count), Err(BAD));
        let mut bad_backlen = good.clone();
        bad_backlen[8] = 9;
        assert_eq!(listpack_entries(&bad_backlen), Err(BAD));
        assert_eq!(listpack_entries(&[]), Err(BAD));
    }

    #[test]
    fn ziplist_entries_decode_strings_and_every_integer_width() {
        // Hand-built: "ab", int8 -2, imm 12, int16 300, int24, int32, int64, a 70-byte string.
        let long = vec![b'z'; 70];
        let mut raw: Vec<(Vec<u8>, Vec<u8>)> = vec![
            (vec![0x02], b"ab".to_vec()),
            (vec![0xfe], vec![0xfe]),
            (vec![0xfd], vec![]),
            (vec![0xc0], 300i16.to_le_bytes().to_vec()),
            (vec![0xf0], (-70000i32).to_le_bytes()[..3].to_vec()),
            (vec![0xd0], 2147483647i32.to_le_bytes().to_vec()),
            (vec![0xe0], i64::MIN.to_le_bytes().to_vec()),
            (vec![0x40, 70], long.clone()),
        ];
        let mut blob = vec![0u8; 10];
        let mut previous = 0usize;
        for (head, body) in raw.drain(..) {
            let start = blob.len();
            blob.push(previous as u8);
            blob.extend_from_slice(&head);
            blob.extend_from_slice(&body);
            previous = blob.len() - start;
        }
        let tail = (blob.len() - previous) as u32;
        blob.push(END);
        let total = blob.len() as u32;
        blob[..4].copy_from_slice(&total.to_le_bytes());
        blob[4..8].copy_from_slice(&tail.to_le_bytes());
        blob[8..10].copy_from_slice(&8u16.to_le_bytes());
        let entries = ziplist_entries(&blob).unwrap();
        let expected_long = String::from_utf8(long).unwrap();
        assert_eq!(texts(&entries), ["ab", "-2", "12", "300", "-70000", "2147483647", "-9223372036854775808", expected_long.as_str()]);
        blob[11] = 5;
        assert_eq!(ziplist_entries(&blob), Err(BAD), "a wrong previous length");
    }

    #[test]
    fn intsets_round_trip_and_must_be_sorted() {
        let blob = intset(&[3, 1, 2]);
        assert_eq!(blob, b"\x02\x00\x00\x00\x03\x00\x00\x00\x01\x00\x02\x00\x03\x00");
        assert_eq!(texts(&intset_members(&blob).unwrap()), ["1", "2", "3"]);
        let wide = intset(&[-1, 1 << 40]);
        assert_eq!(texts(&intset_members(&wide).unwrap()), ["-1", "1099511627776"]);
        let unsorted = b"\x02\x00\x00\x00\x02\x00\x00\x00\x02\x00\x01\x00";
        assert_eq!(intset_members(unsorted), Err(BAD));
        assert_eq!(intset_members(b"\x03\x00\x00\x00\x00\x00\x00\x00"), Err(BAD));
    }
}
