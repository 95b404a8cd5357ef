//! The messages of a peer link and their framing (DESIGN §6; docs/replication.md has
//! the byte layout).
//!
//! A frame is `length u32 | version u8 | kind u8 | crc32 u32 | payload`, little-endian,
//! where `length` counts everything after itself and the CRC covers version, kind and
//! payload. A frame
//! that is too long, of another version, of an unknown kind, with a bad CRC or a payload
//! that does not decode whole is an error: the link is closed, never resynchronised.
//! Key states inside use the persistence codec, so one encoding is tested twice.

use bytes::{Buf, Bytes, BytesMut};

use crate::crdt::{Hlc, VersionVector};
use crate::delta::Delta;
use crate::delta::codec::{DecodeError, Reader, Writer, read_delta, read_vv, write_delta, write_vv};

/// 2: batches carry the sender's session, gap flag and stability report.
/// 3: Pub/Sub messages (`Publish`) cross links.
/// 4: list pushes travel as the compact delta kind 10 (`delta/codec.rs`).
pub const PROTOCOL_VERSION: u8 = 4;
/// Bytes before the payload: length, version, kind, CRC.
pub const HEADER_BYTES: usize = 10;
/// The longest frame a peer may send before it has authenticated.
pub const HANDSHAKE_FRAME_BYTES_MAX: usize = 4096;
pub const NONCE_BYTES: usize = 32;
pub const PROOF_BYTES: usize = 32;
/// Longest region name or refusal text carried.
const TEXT_BYTES_MAX: usize = 1024;

#[derive(Clone, Debug, PartialEq)]
pub enum Message {
    /// Dialer → listener: who I am, and a fresh challenge for you.
    Hello { node_id: u16, region: String, nonce: [u8; NONCE_BYTES] },
    /// Listener → dialer: who I am, my proof for your challenge, and my challenge.
    Challenge { node_id: u16, region: String, nonce: [u8; NONCE_BYTES], proof: [u8; PROOF_BYTES] },
    /// Dialer → listener: my proof for your challenge.
    Proof { proof: [u8; PROOF_BYTES] },
    /// Listener → dialer: authenticated; the link is open.
    Welcome,
    /// Either side, before closing: why.
    Refused { reason: String },
    /// Local writes of the sender since its previous batch. `stable` is an HLC below
    /// which the sender will never stamp another write. `session` names the sending
    /// process (its sequence numbers restart with it); `gap` says writes were dropped
    /// before this batch (the sender's outbox overflowed: anti-entropy repairs them);
    /// `seen` is the sender's stability report (see `replication::stability`).
    Batch { seq: u64, session: u64, gap: bool, stable: Hlc, seen: VersionVector, deltas: Vec<Delta> },
    /// Every batch up to `seq` has been merged.
    Ack { seq: u64 },
    /// Anti-entropy, first exchange: the sender's group hashes.
    AeGroups { round: u64, groups: Vec<u64> },
    /// Anti-entropy, second exchange: the answerer's leaves of every differing group.
    AeLeaves { round: u64, leaves: Vec<(u16, u64)> },
    /// Anti-entropy, third exchange: every key state in `leaves`, then the sender's
    /// shards' records of what they have forgotten (`Delta::Forget`: the receiver
    /// removes what they cover from what the states leave out, `shard::absence`). The
    /// initiator sends its own with `reply_wanted`; the answerer merges them and
    /// replies with its own.
    AeStates { round: u64, reply_wanted: bool, leaves: Vec<u16>, deltas: Vec<Delta> },
    /// A PUBLISH (or SPUBLISH when `shard`) made on the sender at its wall-clock
    /// `sent_ms`, for the receiver's local subscribers only (never forwarded).
    Publish { sent_ms: u64, shard: bool, channel: Bytes, message: Bytes },
}

const HELLO: u8 = 1;
const CHALLENGE: u8 = 2;
const PROOF: u8 = 3;
const WELCOME: u8 = 4;
const REFUSED: u8 = 5;
const BATCH: u8 = 6;
const ACK: u8 = 7;
const AE_GROUPS: u8 = 8;
const AE_LEAVES: u8 = 9;
const AE_STATES: u8 = 10;
const PUBLISH: u8 = 11;

impl Message {
    fn kind(&self) -> u8 {
        match self {
            Message::Hello { .. } => HELLO,
            Message::Challenge { .. } => CHALLENGE,
            Message::Proof { .. } => PROOF,
            Message::Welcome => WELCOME,
            Message::Refused { .. } => REFUSED,
            Message::Batch { .. } => BATCH,
            Message::Ack { .. } => ACK,
            Message::AeGroups { .. } => AE_GROUPS,
            Message::AeLeaves { .. } => AE_LEAVES,
            Message::AeStates { .. } => AE_STATES,
            Message::Publish { .. } => PUBLISH,
        }
    }

    /// A short name for logs and errors.
    pub fn name(&self) -> &'static str {
        match self {
            Message::Hello { .. } => "hello",
            Message::Challenge { .. } => "challenge",
            Message::Proof { .. } => "proof",
            Message::Welcome => "welcome",
            Message::Refused { .. } => "refused",
            Message::Batch { .. } => "batch",
            Message::Ack { .. } => "ack",
            Message::AeGroups { .. } => "ae-groups",
            Message::AeLeaves { .. } => "ae-leaves",
            Message::AeStates { .. } => "ae-states",
            Message::Publish { .. } => "publish",
        }
    }
}

fn write_text(w: &mut Writer, text: &str) {
    let text = &text.as_bytes()[..text.len().min(TEXT_BYTES_MAX)];
    w.bytes(text);
}

fn read_text(r: &mut Reader) -> Result<String, DecodeError> {
    let bytes = r.bytes()?;
    if bytes.len() > TEXT_BYTES_MAX {
        return Err(DecodeError("text too long".into()));
    }
    Ok(String::from_utf8_lossy(bytes).into_owned())
}

fn write_deltas(w: &mut Writer, deltas: &[Delta]) {
    w.var(deltas.len() as u64);
    for delta in deltas {
        write_delta(w, delta);
    }
}

fn read_deltas(r: &mut Reader) -> Result<Vec<Delta>, DecodeError> {
    let n = r.count()?;
    (0..n).map(|_| read_delta(r)).collect()
}

/// A Merkle leaf number, checked against the tree's size (it indexes arrays).
fn read_leaf(r: &mut Reader) -> Result<u16, DecodeError> {
    let leaf = r.u16()?;
    if leaf as usize >= crate::engine::kv::merkle::LEAVES {
        return Err(DecodeError(format!("anti-entropy leaf {leaf} out of range")));
    }
    Ok(leaf)
}

fn read_array<const N: usize>(r: &mut Reader) -> Result<[u8; N], DecodeError> {
    let mut out = [0u8; N];
    out.copy_from_slice(r.take(N)?);
    Ok(out)
}

/// Encode one message as a whole frame.
pub fn encode(message: &Message) -> Bytes {
    let mut w = Writer::default();
    w.buf.extend_from_slice(&[0u8; HEADER_BYTES]);
    match message {
        Message::Hello { node_id, region, nonce } => {
            w.u16(*node_id);
            write_text(&mut w, region);
            w.buf.extend_from_slice(nonce);
        }
        Message::Challenge { node_id, region, nonce, proof } => {
            w.u16(*node_id);
            write_text(&mut w, region);
            w.buf.extend_from_slice(nonce);
            w.buf.extend_from_slice(proof);
        }
        Message::Proof { proof } => w.buf.extend_from_slice(proof),
        Message::Welcome => {}
        Message::Refused { reason } => write_text(&mut w, reason),
        Message::Batch { seq, session, gap, stable, seen, deltas } => {
            write_batch_head(&mut w, &BatchHead { seq: *seq, session: *session, gap: *gap, stable: *stable, seen });
            write_deltas(&mut w, deltas);
        }
        Message::Ack { seq } => w.u64(*seq),
        Message::AeGroups { round, groups } => {
            w.u64(*round);
            w.var(groups.len() as u64);
            groups.iter().for_each(|g| w.u64(*g));
        }
        Message::AeLeaves { round, leaves } => {
            w.u64(*round);
            w.var(leaves.len() as u64);
            for (leaf, hash) in leaves {
                w.u16(*leaf);
                w.u64(*hash);
            }
        }
        Message::AeStates { round, reply_wanted, leaves, deltas } => {
            w.u64(*round);
            w.u8(*reply_wanted as u8);
            w.var(leaves.len() as u64);
            leaves.iter().for_each(|l| w.u16(*l));
            write_deltas(&mut w, deltas);
        }
        Message::Publish { sent_ms, shard, channel, message } => {
            w.u64(*sent_ms);
            w.u8(*shard as u8);
            w.bytes(channel);
            w.bytes(message);
        }
    }
    finish_frame(w.buf, message.kind())
}

/// A batch's fields before its deltas (see [`Message::Batch`]).
pub struct BatchHead<'a> {
    pub seq: u64,
    pub session: u64,
    pub gap: bool,
    pub stable: Hlc,
    pub seen: &'a VersionVector,
}

fn write_batch_head(w: &mut Writer, head: &BatchHead) {
    w.u64(head.seq);
    w.u64(head.session);
    w.u8(head.gap as u8);
    w.u64(head.stable.0);
    write_vv(w, head.seen);
}

/// A batch frame around `count` deltas already encoded back to back (the sender's
/// path: the shards encoded them): the same bytes `encode` makes of the decoded batch.
pub fn encode_batch(head: &BatchHead, count: usize, deltas: &[u8]) -> Bytes {
    let mut w = Writer { buf: Vec::with_capacity(HEADER_BYTES + 64 + head.seen.len() * 12 + deltas.len()) };
    w.buf.extend_from_slice(&[0u8; HEADER_BYTES]);
    write_batch_head(&mut w, head);
    w.var(count as u64);
    w.buf.extend_from_slice(deltas);
    finish_frame(w.buf, BATCH)
}

/// Fill in a frame's header (length, version, kind, CRC) before its payload.
fn finish_frame(mut buf: Vec<u8>, kind: u8) -> Bytes {
    let length = (buf.len() - 4) as u32;
    buf[0..4].copy_from_slice(&length.to_le_bytes());
    buf[4] = PROTOCOL_VERSION;
    buf[5] = kind;
    let crc = frame_crc(buf[4], buf[5], &buf[HEADER_BYTES..]);
    buf[6..10].copy_from_slice(&crc.to_le_bytes());
    Bytes::from(buf)
}

fn frame_crc(version: u8, kind: u8, payload: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&[version, kind]);
    hasher.update(payload);
    hasher.finalize()
}

/// Decode one frame's payload of `kind`.
fn decode_payload(kind: u8, payload: &[u8]) -> Result<Message, DecodeError> {
    let mut r = Reader::new(payload);
    let message = match kind {
        HELLO => Message::Hello { node_id: r.u16()?, region: read_text(&mut r)?, nonce: read_array(&mut r)? },
        CHALLENGE => {
            Message::Challenge { node_id: r.u16()?, region: read_text(&mut r)?, nonce: read_array(&mut r)?, proof: read_array(&mut r)? }
        }
        PROOF => Message::Proof { proof: read_array(&mut r)? },
        WELCOME => Message::Welcome,
        REFUSED => Message::Refused { reason: read_text(&mut r)? },
        BATCH => Message::Batch {
            seq: r.u64()?,
            session: r.u64()?,
            gap: r.u8()? != 0,
            stable: Hlc(r.u64()?),
            seen: read_vv(&mut r)?,
            deltas: read_deltas(&mut r)?,
        },
        ACK => Message::Ack { seq: r.u64()? },
        AE_GROUPS => {
            let round = r.u64()?;
            let n = r.count()?;
            Message::AeGroups { round, groups: (0..n).map(|_| r.u64()).collect::<Result<_, _>>()? }
        }
        AE_LEAVES => {
            let round = r.u64()?;
            let n = r.count()?;
            Message::AeLeaves { round, leaves: (0..n).map(|_| Ok((read_leaf(&mut r)?, r.u64()?))).collect::<Result<_, DecodeError>>()? }
        }
        AE_STATES => {
            let round = r.u64()?;
            let reply_wanted = r.u8()? != 0;
            let n = r.count()?;
            let leaves = (0..n).map(|_| read_leaf(&mut r)).collect::<Result<_, _>>()?;
            Message::AeStates { round, reply_wanted, leaves, deltas: read_deltas(&mut r)? }
        }
        PUBLISH => Message::Publish {
            sent_ms: r.u64()?,
            shard: r.u8()? != 0,
            channel: Bytes::copy_from_slice(r.bytes()?),
            message: Bytes::copy_from_slice(r.bytes()?),
        },
        other => return Err(DecodeError(format!("unknown message kind {other}"))),
    };
    if r.remaining() != 0 {
        return Err(DecodeError(format!("{} bytes left after a {} message", r.remaining(), message.name())));
    }
    Ok(message)
}

/// Take one whole frame off the front of `buf`, if one is there. Errors are final.
pub fn decode_frame(buf: &mut BytesMut, frame_bytes_max: usize) -> Result<Option<Message>, DecodeError> {
    if buf.len() < 4 {
        return Ok(None);
    }
    let length = u32::from_le_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
    if length < HEADER_BYTES - 4 {
        return Err(DecodeError(format!("frame length {length} is shorter than a header")));
    }
    if length + 4 > frame_bytes_max {
        return Err(DecodeError(format!("frame of {} bytes exceeds the limit of {frame_bytes_max}", length + 4)));
    }
    if buf.len() < length + 4 {
        buf.reserve(length + 4 - buf.len());
        return Ok(None);
    }
    let frame = buf.split_to(length + 4);
    let (version, kind) = (frame[4], frame[5]);
    if version != PROTOCOL_VERSION {
        return Err(DecodeError(format!("protocol version {version}, expected {PROTOCOL_VERSION}")));
    }
    let crc = u32::from_le_bytes([frame[6], frame[7], frame[8], frame[9]]);
    let payload = &frame[HEADER_BYTES..];
    if frame_crc(version, kind, payload) != crc {
        return Err(DecodeError("frame CRC mismatch".into()));
    }
    decode_payload(kind, payload).map(Some)
}

/// Decode a buffer holding exactly one frame (tests, the fuzz target).
pub fn decode_one(bytes: &[u8], frame_bytes_max: usize) -> Result<Message, DecodeError> {
    let mut buf = BytesMut::from(bytes);
    match decode_frame(&mut buf, frame_bytes_max)? {
        Some(message) if !buf.has_remaining() => Ok(message),
        Some(_) => Err(DecodeError("bytes after the frame".into())),
        None => Err(DecodeError("incomplete frame".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crdt::Dot;
    use crate::engine::kv::{KeyState, StrVal};

    fn samples() -> Vec<Message> {
        let state = KeyState::with_value(Dot::new(Hlc::from_parts(5, 1), 2), StrVal::raw(Bytes::from_static(b"v")), Some(99));
        let mut seen = VersionVector::new();
        seen.add(Dot::new(Hlc::from_parts(7, 0), 3));
        vec![
            Message::Hello { node_id: 1, region: "eu".into(), nonce: [7; NONCE_BYTES] },
            Message::Challenge { node_id: 2, region: "us".into(), nonce: [8; NONCE_BYTES], proof: [9; PROOF_BYTES] },
            Message::Proof { proof: [1; PROOF_BYTES] },
            Message::Welcome,
            Message::Refused { reason: "authentication failed".into() },
            Message::Batch {
                seq: 42,
                session: 77,
                gap: true,
                stable: Hlc::from_parts(100, 3),
                seen: seen.clone(),
                deltas: vec![
                    Delta::Key { key: Bytes::from_static(b"k"), state },
                    Delta::Flush { seen, scope: crate::routing::ShardScope { index: 1, count: 3 } },
                ],
            },
            Message::Ack { seq: 42 },
            Message::AeGroups { round: 1, groups: vec![1, 2, 3] },
            Message::AeLeaves { round: 1, leaves: vec![(0, 5), (4095, 6)] },
            Message::AeStates { round: 1, reply_wanted: true, leaves: vec![3, 4], deltas: vec![] },
            Message::Publish {
                sent_ms: 1_700_000_000_000,
                shard: true,
                channel: Bytes::from_static(b"news"),
                message: Bytes::from_static(b"\0hi"),
            },
        ]
    }

    #[test]
    fn every_message_round_trips_and_frames_split_anywhere_reassemble() {
        for message in samples() {
            let frame = encode(&message);
            assert_eq!(decode_one(&frame, 1 << 20).unwrap(), message);
            for cut in 0..frame.len() {
                let mut buf = BytesMut::from(&frame[..cut]);
                assert_eq!(decode_frame(&mut buf, 1 << 20).unwrap(), None, "{} cut at {cut}", message.name());
                buf.extend_from_slice(&frame[cut..]);
                assert_eq!(decode_frame(&mut buf, 1 << 20).unwrap(), Some(message.clone()));
            }
        }
    }

    #[test]
    fn a_batch_framed_from_encoded_deltas_is_the_batch_encoded_whole() {
        for message in samples() {
            let Message::Batch { seq, session, gap, stable, seen, deltas } = &message else { continue };
            let mut outgoing = crate::delta::outgoing::Outgoing::default();
            deltas.iter().for_each(|d| outgoing.push(1, d));
            let head = BatchHead { seq: *seq, session: *session, gap: *gap, stable: *stable, seen };
            assert_eq!(encode_batch(&head, outgoing.len(), &outgoing.clone().into_bytes()), encode(&message));
        }
    }

    #[test]
    fn any_flipped_bit_is_refused() {
        for message in samples() {
            let frame = encode(&message);
            for byte in 4..frame.len() {
                let mut bad = frame.to_vec();
                bad[byte] ^= 0x10;
                assert!(decode_one(&bad, 1 << 20).is_err(), "{} with byte {byte} flipped", message.name());
            }
        }
    }

    #[test]
    fn a_leaf_number_outside_the_tree_is_refused() {
        let bad = encode(&Message::AeStates { round: 1, reply_wanted: true, leaves: vec![4096], deltas: vec![] });
        assert!(decode_one(&bad, 1 << 20).is_err());
        let bad = encode(&Message::AeLeaves { round: 1, leaves: vec![(u16::MAX, 0)] });
        assert!(decode_one(&bad, 1 << 20).is_err());
    }

    #[test]
    fn oversized_frames_are_refused_before_they_are_buffered() {
        let frame = encode(&Message::Refused { reason: "x".repeat(1000) });
        let mut buf = BytesMut::from(&frame[..8]);
        assert!(decode_frame(&mut buf, 100).is_err());
    }
}
