//! The segment object format: a fixed 64-byte header and a body of deltas, each part
//! with its own CRC32 (docs/persistence.md documents every byte). Checkpoint parts use
//! the same format with another kind. Written once, verified twice: after encoding
//! (debug builds decode what they wrote) and on every read.
//!
//! ```text
//! offset size field
//!      0    8 magic "MERIDIAN"
//!      8    2 format version (1), little endian
//!     10    2 node id
//!     12    1 kind: 0 delta segment, 1 checkpoint part
//!     13    3 reserved, zero
//!     16    8 sequence number (segment) or checkpoint sequence (part)
//!     24    8 smallest HLC in the body (0 when none)
//!     32    8 largest HLC in the body
//!     40    4 entry count
//!     44    8 body length in bytes
//!     52    4 part number (checkpoint parts; 0 for segments)
//!     56    4 CRC32 of the body
//!     60    4 CRC32 of bytes 0..60
//! ```

use bytes::Bytes;

use super::store::Payload;
use crate::crdt::{Hlc, NodeId};
use crate::delta::codec::{DecodeError, Reader, Writer, read_deltas_exact};
use crate::delta::{Delta, EncodedDeltas};

pub const MAGIC: &[u8; 8] = b"MERIDIAN";
/// 2: counter slots carry their writer's incarnation. 3: the forget record. 4: list
/// pushes as the compact delta kind 10 (an older binary refuses these segments by their
/// version rather than failing on the kind).
pub const FORMAT_VERSION: u16 = 4;
/// Version 2 differs only in lacking the forget record (delta kind 3): still readable.
pub const FORMAT_VERSION_OLDEST_READABLE: u16 = 2;
pub const HEADER_BYTES: usize = 64;
/// Entries in one object at most.
pub const ENTRIES_MAX: u32 = crate::delta::SEGMENT_ENTRIES_MAX;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    Segment = 0,
    CheckpointPart = 1,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    pub node_id: NodeId,
    pub kind: Kind,
    pub sequence: u64,
    pub part: u32,
    pub hlc_min: Hlc,
    pub hlc_max: Hlc,
    pub entries: u32,
    pub body_bytes: u64,
}

/// Encode deltas as one object in one buffer (checkpoint parts, tests).
pub fn encode(node_id: NodeId, kind: Kind, sequence: u64, part: u32, deltas: &[Delta]) -> Bytes {
    frame(node_id, kind, sequence, part, vec![EncodedDeltas::from_deltas(deltas)]).to_bytes()
}

/// One object from bodies already encoded (the shards' drained delta logs): the header,
/// then each body in order, as chunks (no copy). The stamp range and entry count come
/// with the bodies.
pub fn frame(node_id: NodeId, kind: Kind, sequence: u64, part: u32, bodies: Vec<EncodedDeltas>) -> Payload {
    let entries: usize = bodies.iter().map(|b| b.entries).sum();
    assert!(entries as u64 <= ENTRIES_MAX as u64, "too many entries for one object");
    let body_len: usize = bodies.iter().map(|b| b.body.len()).sum();
    let (hlc_min, hlc_max) = stamp_range(&bodies);
    let mut body_crc = crc32fast::Hasher::new();
    for b in &bodies {
        debug_assert!(!b.body.is_empty() || b.is_empty(), "entries without bytes");
        body_crc.update(&b.body);
    }
    let mut header = Writer { buf: Vec::with_capacity(HEADER_BYTES) };
    header.buf.extend_from_slice(MAGIC);
    header.u16(FORMAT_VERSION);
    header.u16(node_id);
    header.u8(kind as u8);
    header.buf.extend_from_slice(&[0, 0, 0]);
    header.u64(sequence);
    header.u64(hlc_min.0);
    header.u64(hlc_max.0);
    header.u32(entries as u32);
    header.u64(body_len as u64);
    header.u32(part);
    header.u32(body_crc.finalize());
    let header_crc = crc32fast::hash(&header.buf[..60]);
    header.u32(header_crc);
    assert_eq!(header.buf.len(), HEADER_BYTES);
    let mut chunks = Vec::with_capacity(1 + bodies.len());
    chunks.push(Bytes::from(header.buf));
    chunks.extend(bodies.into_iter().filter(|b| !b.body.is_empty()).map(|b| Bytes::from(b.body)));
    let payload = Payload::from_chunks(chunks);
    debug_assert!(
        decode(&payload.to_bytes()).is_ok_and(|(h, d)| h.sequence == sequence && d.len() == entries),
        "a segment must decode as written"
    );
    payload
}

/// The smallest and largest stamp of the bodies' entries (both `Hlc::ZERO` when there
/// are none): the header's HLC range.
pub fn stamp_range(bodies: &[EncodedDeltas]) -> (Hlc, Hlc) {
    let filled = bodies.iter().filter(|b| !b.is_empty());
    let hlc_min = filled.clone().map(|b| b.hlc_min).min().unwrap_or(Hlc::ZERO);
    let hlc_max = filled.map(|b| b.hlc_max).max().unwrap_or(Hlc::ZERO);
    (hlc_min, hlc_max)
}

/// Parse and verify just the header.
pub fn decode_header(bytes: &[u8]) -> Result<Header, DecodeError> {
    if bytes.len() < HEADER_BYTES {
        return Err(DecodeError(format!("object of {} bytes is shorter than a header", bytes.len())));
    }
    let mut r = Reader::new(&bytes[..HEADER_BYTES]);
    if r.take(8)? != MAGIC {
        return Err(DecodeError("bad magic (not a Meridian object)".into()));
    }
    let version = r.u16()?;
    if !(FORMAT_VERSION_OLDEST_READABLE..=FORMAT_VERSION).contains(&version) {
        return Err(DecodeError(format!("unsupported format version {version}")));
    }
    let node_id = r.u16()?;
    let kind = match r.u8()? {
        0 => Kind::Segment,
        1 => Kind::CheckpointPart,
        other => return Err(DecodeError(format!("unknown object kind {other}"))),
    };
    r.take(3)?;
    let sequence = r.u64()?;
    let hlc_min = Hlc(r.u64()?);
    let hlc_max = Hlc(r.u64()?);
    let entries = r.u32()?;
    let body_bytes = r.u64()?;
    let part = r.u32()?;
    let _body_crc = r.u32()?;
    let header_crc = r.u32()?;
    if crc32fast::hash(&bytes[..60]) != header_crc {
        return Err(DecodeError("header CRC mismatch".into()));
    }
    if entries > ENTRIES_MAX {
        return Err(DecodeError(format!("implausible entry count {entries}")));
    }
    Ok(Header { node_id, kind, sequence, part, hlc_min, hlc_max, entries, body_bytes })
}

/// Parse and verify a whole object: header CRC, body length, body CRC, every entry.
pub fn decode(bytes: &[u8]) -> Result<(Header, Vec<Delta>), DecodeError> {
    let header = decode_header(bytes)?;
    let body = &bytes[HEADER_BYTES..];
    if body.len() as u64 != header.body_bytes {
        return Err(DecodeError(format!("body is {} bytes, header says {}", body.len(), header.body_bytes)));
    }
    let body_crc = u32::from_le_bytes([bytes[56], bytes[57], bytes[58], bytes[59]]);
    if crc32fast::hash(body) != body_crc {
        return Err(DecodeError("body CRC mismatch".into()));
    }
    let deltas = read_deltas_exact(header.entries as usize, body)?;
    Ok((header, deltas))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crdt::Dot;
    use crate::engine::kv::{KeyState, StrVal};

    fn deltas() -> Vec<Delta> {
        (0..10)
            .map(|i| Delta::Key {
                key: Bytes::from(format!("k{i}")),
                state: KeyState::with_value(Dot::new(Hlc::from_parts(100 + i, 0), 3), StrVal::Int(i as i64), None),
            })
            .collect()
    }

    #[test]
    fn segments_round_trip_with_their_header() {
        let bytes = encode(3, Kind::Segment, 42, 0, &deltas());
        let (header, decoded) = decode(&bytes).unwrap();
        assert_eq!((header.node_id, header.sequence, header.entries), (3, 42, 10));
        assert_eq!(header.hlc_min, Hlc::from_parts(100, 0));
        assert_eq!(header.hlc_max, Hlc::from_parts(109, 0));
        assert_eq!(decoded, deltas());
    }

    #[test]
    fn any_flipped_byte_is_detected() {
        let bytes = encode(3, Kind::Segment, 42, 0, &deltas());
        for i in 0..bytes.len() {
            let mut corrupt = bytes.to_vec();
            corrupt[i] ^= 0x01;
            assert!(decode(&corrupt).is_err(), "flipping byte {i} went unnoticed");
        }
        assert!(decode(&bytes[..bytes.len() - 1]).is_err());
    }
}
