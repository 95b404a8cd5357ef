//! DUMP and RESTORE payloads, in Redis 7.0's format: one RDB-encoded value, then the RDB
//! version (2 bytes, little-endian; 10 for Redis 7.0) and a CRC64 (Jones polynomial, as
//! Redis's crc64.c) of everything before it (8 bytes, little-endian).
//!
//! This module owns the pure codec: payload bytes <-> [`DumpedValue`], a neutral value
//! that knows nothing of Meridian's CRDTs. It never sees keys, TTLs or the keyspace, and
//! does no I/O: the engine turns a key into a `DumpedValue` (DUMP) and a `DumpedValue`
//! into a write (RESTORE).
//!
//! Decoding accepts what Redis 7.0 writes and reads: strings (raw, integer, LZF), hashes
//! (plain, ziplist, listpack), sets (plain, intset), sorted sets (ZSET, ZSET_2, ziplist,
//! listpack), lists (plain, ziplist, quicklist, quicklist 2) and streams (Redis 7.0's
//! listpacks 2, and Redis 5 to 6.2's listpacks). It checks every payload
//! as Redis's deep sanitizer (`sanitize-dump-payload yes`) does, whatever that setting
//! says: a corrupt payload is refused, never half-applied. Encoding writes what Redis
//! itself writes for a hash or set small enough to be compact (listpack, intset), and
//! the plain encodings otherwise; strings are never LZF-compressed (Redis reads both).

mod compact;
mod rdb;
mod stream;

pub use stream::{DumpedEntry, DumpedGroup, DumpedPending, DumpedStream};

use bytes::Bytes;
use hashbrown::HashSet;

use crate::protocol::Frame;
use rdb::Reader;

/// The RDB version this build writes, and the newest it reads (Redis 7.0's).
pub const RDB_VERSION: u16 = 10;
/// Version (2 bytes) and CRC64 (8 bytes) after the value.
const FOOTER_BYTES: usize = 10;

const CRC64: crc::Crc<u64> = crc::Crc::<u64>::new(&crc::CRC_64_REDIS);

/// RDB object types (rdb.h).
const TYPE_STRING: u8 = 0;
const TYPE_LIST: u8 = 1;
const TYPE_SET: u8 = 2;
const TYPE_ZSET: u8 = 3;
const TYPE_HASH: u8 = 4;
const TYPE_ZSET_2: u8 = 5;
const TYPE_MODULE: u8 = 6;
const TYPE_MODULE_2: u8 = 7;
const TYPE_HASH_ZIPMAP: u8 = 9;
const TYPE_LIST_ZIPLIST: u8 = 10;
const TYPE_SET_INTSET: u8 = 11;
const TYPE_ZSET_ZIPLIST: u8 = 12;
const TYPE_HASH_ZIPLIST: u8 = 13;
const TYPE_LIST_QUICKLIST: u8 = 14;
const TYPE_STREAM_LISTPACKS: u8 = 15;
const TYPE_HASH_LISTPACK: u8 = 16;
const TYPE_ZSET_LISTPACK: u8 = 17;
const TYPE_LIST_QUICKLIST_2: u8 = 18;
const TYPE_STREAM_LISTPACKS_2: u8 = 19;

/// A quicklist 2 node holding one element as a plain string (else a listpack).
const QUICKLIST_NODE_PLAIN: usize = 1;
const QUICKLIST_NODE_PACKED: usize = 2;

/// A value as a DUMP payload carries it, in the payload's order.
#[derive(Clone, Debug, PartialEq)]
pub enum DumpedValue {
    String(Bytes),
    /// Fields and values.
    Hash(Vec<(Bytes, Bytes)>),
    /// Members.
    Set(Vec<Bytes>),
    /// Members and scores (never NaN).
    Zset(Vec<(Bytes, f64)>),
    /// Elements, head first.
    List(Vec<Bytes>),
    Stream(DumpedStream),
}

impl DumpedValue {
    /// The Redis type name (TYPE's answer).
    pub fn type_name(&self) -> &'static str {
        match self {
            DumpedValue::String(_) => "string",
            DumpedValue::Hash(_) => "hash",
            DumpedValue::Set(_) => "set",
            DumpedValue::Zset(_) => "zset",
            DumpedValue::List(_) => "list",
            DumpedValue::Stream(_) => "stream",
        }
    }
}

/// Why a payload was refused.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum PayloadError {
    /// Too short, from a newer RDB version, or the checksum does not match.
    VersionOrChecksum,
    /// The value's bytes are corrupt (or hold an empty collection or duplicates).
    BadFormat,
    /// A well-formed value of a type Meridian has no decoder for (modules, zipmaps).
    UnsupportedType(&'static str),
}

impl PayloadError {
    /// Redis's reply for it.
    pub fn frame(self) -> Frame {
        match self {
            PayloadError::VersionOrChecksum => Frame::static_error("ERR DUMP payload version or checksum are wrong"),
            PayloadError::BadFormat => Frame::static_error("ERR Bad data format"),
            PayloadError::UnsupportedType(name) => {
                Frame::error(format!("ERR Bad data format: the payload holds a {name}, a type Meridian does not have"))
            }
        }
    }
}

/// Whether a hash or set is written in Redis's compact encoding (listpack, intset).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Layout {
    Compact,
    Plain,
}

/// Check the footer's version and checksum.
fn verify_footer(payload: &[u8]) -> Result<(), PayloadError> {
    if payload.len() < FOOTER_BYTES {
        return Err(PayloadError::VersionOrChecksum);
    }
    let footer = &payload[payload.len() - FOOTER_BYTES..];
    let version = u16::from_le_bytes([footer[0], footer[1]]);
    let crc = u64::from_le_bytes(footer[2..].try_into().map_err(|_| PayloadError::VersionOrChecksum)?);
    if version > RDB_VERSION || CRC64.checksum(&payload[..payload.len() - 8]) != crc {
        return Err(PayloadError::VersionOrChecksum);
    }
    Ok(())
}

/// Decode a RESTORE payload. Exactly as Redis 7.0 reads it: the footer is checked, then
/// the value read from the start of the whole payload, so bytes after the value are
/// ignored and a value cut short reads on into the footer's bytes (a checksummed
/// payload, so only one built that way on purpose).
pub fn decode_payload(payload: &[u8]) -> Result<DumpedValue, PayloadError> {
    verify_footer(payload)?;
    let mut r = Reader::new(payload);
    let kind = r.byte()?;
    let value = match kind {
        TYPE_STRING => return Ok(DumpedValue::String(r.string()?)),
        TYPE_SET => DumpedValue::Set(strings(&mut r)?),
        TYPE_SET_INTSET => DumpedValue::Set(compact::intset_members(&r.string()?)?),
        TYPE_HASH => DumpedValue::Hash(pairs(strings_n(&mut r, |n| n.checked_mul(2))?)?),
        TYPE_HASH_ZIPLIST => DumpedValue::Hash(pairs(compact::ziplist_entries(&r.string()?)?)?),
        TYPE_HASH_LISTPACK => DumpedValue::Hash(pairs(compact::listpack_entries(&r.string()?)?)?),
        TYPE_ZSET | TYPE_ZSET_2 => {
            let n = r.count()?;
            let mut entries = Vec::with_capacity(n);
            for _ in 0..n {
                let member = r.string()?;
                let score = if kind == TYPE_ZSET_2 { r.binary_double()? } else { r.text_double()? };
                entries.push((member, score));
            }
            DumpedValue::Zset(entries)
        }
        TYPE_ZSET_ZIPLIST => DumpedValue::Zset(scored(pairs(compact::ziplist_entries(&r.string()?)?)?)?),
        TYPE_ZSET_LISTPACK => DumpedValue::Zset(scored(pairs(compact::listpack_entries(&r.string()?)?)?)?),
        TYPE_LIST => DumpedValue::List(strings(&mut r)?),
        TYPE_LIST_ZIPLIST => DumpedValue::List(compact::ziplist_entries(&r.string()?)?),
        TYPE_LIST_QUICKLIST => {
            let mut elements = Vec::new();
            for _ in 0..r.count()? {
                elements.extend(compact::ziplist_entries(&r.string()?)?);
            }
            DumpedValue::List(elements)
        }
        TYPE_LIST_QUICKLIST_2 => {
            let mut elements = Vec::new();
            for _ in 0..r.count()? {
                match r.count()? {
                    QUICKLIST_NODE_PLAIN => elements.push(r.string()?),
                    QUICKLIST_NODE_PACKED => elements.extend(compact::listpack_entries(&r.string()?)?),
                    _ => return Err(PayloadError::BadFormat),
                }
            }
            DumpedValue::List(elements)
        }
        TYPE_STREAM_LISTPACKS | TYPE_STREAM_LISTPACKS_2 => DumpedValue::Stream(stream::decode(&mut r, kind == TYPE_STREAM_LISTPACKS_2)?),
        TYPE_MODULE | TYPE_MODULE_2 => return Err(PayloadError::UnsupportedType("module value")),
        TYPE_HASH_ZIPMAP => return Err(PayloadError::UnsupportedType("zipmap hash (Redis 2.4)")),
        _ => return Err(PayloadError::BadFormat),
    };
    check_collection(&value)?;
    Ok(value)
}

/// `count` strings after a count (SET, LIST).
fn strings(r: &mut Reader) -> Result<Vec<Bytes>, PayloadError> {
    strings_n(r, Some)
}

/// A count, then `scale(count)` strings.
fn strings_n(r: &mut Reader, scale: impl Fn(usize) -> Option<usize>) -> Result<Vec<Bytes>, PayloadError> {
    let n = scale(r.count()?).ok_or(PayloadError::BadFormat)?;
    // Each string takes at least a byte: no more room than the payload can fill.
    let mut out = Vec::with_capacity(n.min(r.remaining()));
    for _ in 0..n {
        out.push(r.string()?);
    }
    Ok(out)
}

/// Flat entries -> (field, value) pairs; an odd count is corrupt.
fn pairs(flat: Vec<Bytes>) -> Result<Vec<(Bytes, Bytes)>, PayloadError> {
    if !flat.len().is_multiple_of(2) {
        return Err(PayloadError::BadFormat);
    }
    let mut out = Vec::with_capacity(flat.len() / 2);
    let mut it = flat.into_iter();
    while let (Some(a), Some(b)) = (it.next(), it.next()) {
        out.push((a, b));
    }
    Ok(out)
}

/// Compact zset entries: (member, score text).
fn scored(entries: Vec<(Bytes, Bytes)>) -> Result<Vec<(Bytes, f64)>, PayloadError> {
    entries.into_iter().map(|(m, s)| Ok((m, rdb::parse_score(&s).ok_or(PayloadError::BadFormat)?))).collect()
}

/// What Redis refuses in any collection: no elements, a repeated field or member, a
/// NaN score.
fn check_collection(value: &DumpedValue) -> Result<(), PayloadError> {
    fn unique<'a>(names: impl ExactSizeIterator<Item = &'a Bytes>) -> Result<(), PayloadError> {
        if names.len() == 0 {
            return Err(PayloadError::BadFormat);
        }
        let mut seen = HashSet::with_capacity(names.len());
        for name in names {
            if !seen.insert(name) {
                return Err(PayloadError::BadFormat);
            }
        }
        Ok(())
    }
    match value {
        DumpedValue::String(_) => Ok(()),
        DumpedValue::Hash(pairs) => unique(pairs.iter().map(|(f, _)| f)),
        DumpedValue::Set(members) => unique(members.iter()),
        DumpedValue::Zset(entries) if entries.iter().any(|(_, s)| s.is_nan()) => Err(PayloadError::BadFormat),
        DumpedValue::Zset(entries) => unique(entries.iter().map(|(m, _)| m)),
        DumpedValue::List(elements) if elements.is_empty() => Err(PayloadError::BadFormat),
        DumpedValue::List(_) => Ok(()),
        // Checked as it was read (`stream::decode`); an empty stream is a stream.
        DumpedValue::Stream(_) => Ok(()),
    }
}

/// Encode a DUMP payload. `layout` says whether Redis would hold this hash or set in
/// its compact encoding (the caller knows the thresholds), and a zset in a listpack
/// (members in score order); strings and lists ignore it (lists are written as a
/// quicklist 2 of listpack nodes, never LZF-compressed: byte for byte as Redis for a
/// list whose listpack is at most 20 bytes). A bigger zset is written as ZSET_2, as Redis does.
pub fn encode_payload(value: &DumpedValue, layout: Layout) -> Vec<u8> {
    let mut out = Vec::new();
    match value {
        DumpedValue::String(s) => {
            out.push(TYPE_STRING);
            rdb::put_string(&mut out, s);
        }
        DumpedValue::Hash(pairs) if layout == Layout::Compact => {
            out.push(TYPE_HASH_LISTPACK);
            let flat: Vec<&[u8]> = pairs.iter().flat_map(|(f, v)| [f.as_ref(), v.as_ref()]).collect();
            put_blob(&mut out, &compact::listpack(&flat));
        }
        DumpedValue::Hash(pairs) => {
            out.push(TYPE_HASH);
            rdb::put_length(&mut out, pairs.len());
            for (field, value) in pairs {
                rdb::put_string(&mut out, field);
                rdb::put_string(&mut out, value);
            }
        }
        DumpedValue::Set(members) => {
            let ints: Option<Vec<i64>> = members.iter().map(|m| crate::command::numbers::parse_canonical_i64(m)).collect();
            match ints {
                Some(ints) if layout == Layout::Compact => {
                    out.push(TYPE_SET_INTSET);
                    put_blob(&mut out, &compact::intset(&ints));
                }
                _ => {
                    out.push(TYPE_SET);
                    rdb::put_length(&mut out, members.len());
                    for member in members {
                        rdb::put_string(&mut out, member);
                    }
                }
            }
        }
        DumpedValue::Zset(entries) if layout == Layout::Compact => {
            out.push(TYPE_ZSET_LISTPACK);
            let scores: Vec<String> = entries.iter().map(|(_, score)| compact_score(*score)).collect();
            let flat: Vec<&[u8]> = entries.iter().zip(&scores).flat_map(|((m, _), s)| [m.as_ref(), s.as_bytes()]).collect();
            put_blob(&mut out, &compact::listpack(&flat));
        }
        DumpedValue::Zset(entries) => {
            // Highest score first, as Redis writes a skiplist (it loads fastest so).
            out.push(TYPE_ZSET_2);
            rdb::put_length(&mut out, entries.len());
            for (member, score) in entries.iter().rev() {
                rdb::put_string(&mut out, member);
                out.extend_from_slice(&score.to_le_bytes());
            }
        }
        DumpedValue::List(elements) => {
            // Listpack nodes of at most 8 KiB, as Redis 7.0's default
            // `list-max-listpack-size -2` cuts them (an estimate of its cut: any cut
            // restores the same list, and a small list is one node, as in Redis).
            out.push(TYPE_LIST_QUICKLIST_2);
            let nodes = list_nodes(elements);
            rdb::put_length(&mut out, nodes.len());
            for node in nodes {
                rdb::put_length(&mut out, QUICKLIST_NODE_PACKED);
                put_blob(&mut out, &compact::listpack(&node));
            }
        }
        DumpedValue::Stream(value) => {
            out.push(TYPE_STREAM_LISTPACKS_2);
            stream::encode(&mut out, value);
        }
    }
    out.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = CRC64.checksum(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// A list's elements cut into quicklist nodes of about [`LIST_NODE_BYTES_MAX`].
fn list_nodes(elements: &[Bytes]) -> Vec<Vec<&[u8]>> {
    /// Header, entry header and back-length bytes an entry may add at most.
    const ENTRY_OVERHEAD_BYTES: usize = 11;
    let mut nodes: Vec<Vec<&[u8]>> = Vec::new();
    let mut node_bytes = 0;
    for element in elements {
        let bytes = element.len() + ENTRY_OVERHEAD_BYTES;
        match nodes.last_mut() {
            Some(node) if node_bytes + bytes <= LIST_NODE_BYTES_MAX => {
                node.push(element);
                node_bytes += bytes;
            }
            _ => {
                nodes.push(vec![element.as_ref()]);
                node_bytes = bytes;
            }
        }
    }
    nodes
}

/// A quicklist node's listpack size limit under Redis's default fill (-2).
const LIST_NODE_BYTES_MAX: usize = 8192;

/// A score as Redis's listpack holds it (`d2string`): an integer's digits when it is
/// one below 2^52 in magnitude, else `%.17g` (`inf`, `-inf`).
fn compact_score(score: f64) -> String {
    const INT_EXACT: f64 = 4_503_599_627_370_496.0;
    if score == 0.0 {
        return "0".to_owned();
    }
    if score.abs() < INT_EXACT && score == score.trunc() {
        return (score as i64).to_string();
    }
    crate::protocol::encode::format_double(score)
}

/// A compact blob as an RDB string (raw: a blob never reads as an integer).
fn put_blob(out: &mut Vec<u8>, blob: &[u8]) {
    rdb::put_length(out, blob.len());
    out.extend_from_slice(blob);
}

#[cfg(test)]
mod tests;
