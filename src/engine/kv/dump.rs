//! DUMP and RESTORE on one shard's keyspace: a key's readable value becomes a Redis 7.0
//! payload (`command::dump` encodes it), and a decoded payload becomes a write.
//!
//! RESTORE is an ordinary write: it goes through the same path as COPY's second half
//! ([`KvEngine::restore`]): the old key, if replaced, is deleted at a fresh dot and the
//! new value written whole, so it persists and replicates like the SET, HSET or SADD
//! that would build it (a last-writer-wins string; a hash, set or sorted set whose
//! fields or members are add-wins elements; a stream's entries, groups and counters, whose
//! element names `engine::stream` owns: the shard hands its codec in, [`StreamCodec`]).
//! Nothing of Meridian's CRDT metadata travels in a payload, and a payload never carries
//! any: across regions a RESTORE is a new local write. Never does I/O or reads a clock.

use bytes::Bytes;

use super::collection_writes::Part;
use super::hashes::hash_encoding;
use super::keys::{KeySnapshot, SnapshotValue};
use super::sets::set_encoding;
use super::value::KeyKind;
use super::zsets::zset_encoding;
use super::{KvEngine, StrVal, WriteCtx, key_hash};
use crate::command::RestoreCommand;
use crate::command::dump::{DumpedStream, DumpedValue, Layout, encode_payload};
use crate::crdt::NodeId;
use crate::notify::{Class, KeyEvent};
use crate::protocol::Frame;

const BUSYKEY: &str = "BUSYKEY Target key name already exists.";

/// Turns a stream's live elements into a payload's stream and back: `engine::stream`
/// knows how a stream is named in elements, this engine does not (the shard hands
/// `engine::stream::dumped`'s functions in).
pub struct StreamCodec {
    pub dumped_of: fn(&[(Bytes, StrVal)]) -> DumpedStream,
    /// The elements of a restored stream, its counters the restoring node's.
    pub elements_of: fn(DumpedStream, NodeId) -> Vec<(Bytes, StrVal)>,
}

/// A decoded payload as a snapshot this engine can write.
fn snapshot_value(value: DumpedValue, streams: &StreamCodec, node: NodeId) -> SnapshotValue {
    match value {
        DumpedValue::String(s) => SnapshotValue::String(StrVal::from_bytes(s)),
        DumpedValue::Hash(pairs) => SnapshotValue::Hash(pairs.into_iter().map(|(f, v)| (f, StrVal::from_bytes(v))).collect()),
        DumpedValue::Set(members) => SnapshotValue::Set(members),
        DumpedValue::Zset(entries) => SnapshotValue::Zset(entries),
        DumpedValue::List(elements) => SnapshotValue::List(elements),
        DumpedValue::Stream(stream) => SnapshotValue::Named(Part::Stream, (streams.elements_of)(stream, node)),
    }
}

impl KvEngine {
    /// DUMP: the key's value as a payload Redis 7.0 restores, or nil. A hash or set
    /// small enough for Redis's compact encoding is written in it (what OBJECT ENCODING
    /// reports here), so small values DUMP byte for byte as in Redis.
    pub fn dump(&mut self, key: &[u8], now_ms: u64, streams: &StreamCodec) -> Frame {
        let limits = self.encoding;
        let Some(state) = self.live(key, key_hash(key), now_ms) else {
            return Frame::Null;
        };
        let compact = match state.kind() {
            Some(KeyKind::Hash) => state.hash().is_some_and(|h| hash_encoding(h, &limits) == "listpack"),
            Some(KeyKind::Set) => state.set_members().is_some_and(|s| set_encoding(s, &limits) == "intset"),
            Some(KeyKind::Zset) => state.zset_members().is_some_and(|z| zset_encoding(z, &limits) == "listpack"),
            _ => false,
        };
        let layout = if compact { Layout::Compact } else { Layout::Plain };
        let Some(snapshot) = self.snapshot(key, now_ms) else {
            return Frame::Null;
        };
        let value = match snapshot.value {
            SnapshotValue::String(v) => DumpedValue::String(v.to_bytes()),
            SnapshotValue::Hash(pairs) => DumpedValue::Hash(pairs.into_iter().map(|(f, v)| (f, v.to_bytes())).collect()),
            SnapshotValue::Set(members) => DumpedValue::Set(members),
            SnapshotValue::Zset(entries) => DumpedValue::Zset(entries),
            SnapshotValue::List(elements) => DumpedValue::List(elements),
            SnapshotValue::Named(Part::Stream, elements) => DumpedValue::Stream((streams.dumped_of)(&elements)),
            // FalkorDB's RDB encoding of a graph is not implemented (`snapshot` names
            // graphs and streams only).
            SnapshotValue::Named(..) => return Frame::static_error("ERR DUMP of a graph is not supported"),
        };
        Frame::Bulk(Bytes::from(encode_payload(&value, layout)))
    }

    /// RESTORE, with Redis 7.0's checks in its order: BUSYKEY, the TTL, the payload.
    /// A TTL already past (or one that overflows, as in Redis) writes nothing and
    /// deletes a key it would have replaced.
    pub fn restore_payload(&mut self, ctx: &mut WriteCtx, cmd: RestoreCommand, streams: &StreamCodec) -> Frame {
        let RestoreCommand { key, ttl_ms, absttl, replace, value } = cmd;
        let hash = key_hash(&key);
        let exists = self.live(&key, hash, ctx.now_ms).is_some();
        if exists && !replace {
            return Frame::static_error(BUSYKEY);
        }
        let ttl_ms = match ttl_ms {
            Ok(ttl_ms) => ttl_ms,
            Err(e) => return e,
        };
        let value = match value {
            Ok(value) => snapshot_value(value, streams, ctx.node),
            Err(e) => return e.frame(),
        };
        let absttl = absttl && !crate::bugs::active(crate::bugs::Bug::RestoreAbsttlIgnored);
        let expire_at_ms = match (ttl_ms, absttl) {
            (0, _) => None,
            (at_ms, true) => Some(Some(at_ms)),
            // Redis adds in signed 64 bits; past that the key counts as expired.
            (after_ms, false) => Some(after_ms.checked_add(ctx.now_ms).filter(|&at| at <= i64::MAX as u64)),
        };
        let expire_at_ms = match expire_at_ms {
            None => None,
            Some(Some(at_ms)) if at_ms > ctx.now_ms => Some(at_ms),
            Some(_) => {
                if exists {
                    self.delete(ctx, &key, hash);
                    self.notify.raise(Class::Generic, "del", &key);
                }
                return Frame::ok();
            }
        };
        let event_key = self.notify.key_for(&[Class::New, Class::Generic], &key);
        let written = self.restore(ctx, key, KeySnapshot { value, expire_at_ms }, true);
        debug_assert!(written, "a replacing restore always writes");
        // As Redis: the key is added anew (even over one it replaced), then `restore`.
        if let Some(key) = event_key {
            self.notify.raise_all(vec![KeyEvent::new(Class::New, "new", key.clone()), KeyEvent::new(Class::Generic, "restore", key)]);
        }
        Frame::ok()
    }
}
