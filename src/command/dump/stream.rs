//! A stream in a DUMP payload, as Redis 7.0 writes it (`RDB_TYPE_STREAM_LISTPACKS_2`)
//! and as Redis 5 to 6.2 wrote it (`RDB_TYPE_STREAM_LISTPACKS`, read only): the entries
//! in listpack nodes keyed by their master id, the stream's counters, then every
//! consumer group with its pending entries and consumers.
//!
//! A node's listpack (t_stream.c): a master entry `count deleted n-fields field...  0`,
//! then per entry `flags ms-diff seq-diff [n-fields field...] value... lp-count`, the
//! field names left out when the entry's are the master's (`SAMEFIELDS`), and an entry
//! flagged `DELETED` kept in place until its node is rewritten. Ids are the node's
//! master id plus the two differences (a `seq` difference may be negative).
//!
//! Decoding checks what Redis's deep sanitizer checks (every node's shape, counts and
//! lp-counts, a consumer's pending entries in its group's list, every pending entry
//! owned) and what Meridian relies on (entry ids ascending across nodes, the last id
//! not below the last entry). Pure: knows nothing of how Meridian stores a stream.

use std::collections::BTreeMap;

use bytes::Bytes;

use super::rdb::{self, Reader};
use super::{PayloadError, compact, put_blob};
use crate::command::stream::id::{ID_BYTES, StreamId};

type Result<T> = std::result::Result<T, PayloadError>;

const BAD: PayloadError = PayloadError::BadFormat;
const FLAG_DELETED: i64 = 1;
const FLAG_SAMEFIELDS: i64 = 2;

/// One entry: its id, its node (entries of one node share a number, ascending through
/// the payload) and its field-value pairs.
#[derive(Clone, Debug, PartialEq)]
pub struct DumpedEntry {
    pub id: StreamId,
    pub node: u64,
    /// Where it sits in its node, deleted entries before it counted (Redis's trims by
    /// `~` count them).
    pub index: u64,
    pub fields: Vec<(Bytes, Bytes)>,
}

/// A pending entry of a group: delivered to `consumer` at `delivered_ms`, `deliveries`
/// times.
#[derive(Clone, Debug, PartialEq)]
pub struct DumpedPending {
    pub id: StreamId,
    pub delivered_ms: u64,
    pub deliveries: u64,
    pub consumer: Bytes,
}

#[derive(Clone, Debug, PartialEq)]
pub struct DumpedGroup {
    pub name: Bytes,
    pub last_delivered: StreamId,
    /// Redis's `entries_read` (-1: unknown); `None` when the payload predates it (Redis
    /// estimates it on load, as the reader of this value must).
    pub entries_read: Option<i64>,
    /// In id order.
    pub pending: Vec<DumpedPending>,
    /// Names and seen times, in name order.
    pub consumers: Vec<(Bytes, u64)>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct DumpedStream {
    /// Live entries in id order.
    pub entries: Vec<DumpedEntry>,
    pub last_id: StreamId,
    pub max_deleted: StreamId,
    pub entries_added: u64,
    /// In name order.
    pub groups: Vec<DumpedGroup>,
}

fn int(text: &[u8]) -> Result<i64> {
    crate::command::numbers::parse_canonical_i64(text).ok_or(BAD)
}

fn count(text: &[u8]) -> Result<usize> {
    usize::try_from(int(text)?).map_err(|_| BAD)
}

fn id_at(r: &mut Reader) -> Result<StreamId> {
    StreamId::from_bytes(r.take(ID_BYTES)?).ok_or(BAD)
}

fn id_of_lengths(r: &mut Reader) -> Result<StreamId> {
    Ok(StreamId::new(r.length()?, r.length()?))
}

fn millis(r: &mut Reader) -> Result<u64> {
    let bytes: [u8; 8] = r.take(8)?.try_into().map_err(|_| BAD)?;
    Ok(u64::from_le_bytes(bytes))
}

/// Append the live entries of one node's listpack, whose master id is `master`, to
/// `out`; how many there were.
fn node_entries(master: StreamId, node: u64, blob: &[u8], out: &mut Vec<DumpedEntry>) -> Result<usize> {
    let items = compact::listpack_entries(blob)?;
    let mut items = items.iter();
    let mut next = || items.next().ok_or(BAD);
    let live = count(next()?)?;
    let deleted = count(next()?)?;
    let master_fields: Vec<Bytes> = (0..count(next()?)?).map(|_| next().cloned()).collect::<Result<_>>()?;
    if int(next()?)? != 0 {
        return Err(BAD);
    }
    let before = out.len();
    for index in 0..live.checked_add(deleted).ok_or(BAD)? {
        let flags = int(next()?)?;
        let ms = master.ms.wrapping_add(int(next()?)? as u64);
        let seq = master.seq.wrapping_add(int(next()?)? as u64);
        let same = flags & FLAG_SAMEFIELDS != 0;
        let names = if same { master_fields.clone() } else { (0..count(next()?)?).map(|_| next().cloned()).collect::<Result<_>>()? };
        let fields: Vec<(Bytes, Bytes)> = names.into_iter().map(|name| Ok((name, next()?.clone()))).collect::<Result<_>>()?;
        let lp_count = if same { fields.len() + 3 } else { 2 * fields.len() + 4 };
        if count(next()?)? != lp_count {
            return Err(BAD);
        }
        if flags & FLAG_DELETED == 0 {
            out.push(DumpedEntry { id: StreamId::new(ms, seq), node, index: index as u64, fields });
        }
    }
    // Nothing after the last entry, and the master's count is the live entries'.
    if next().is_ok() || out.len() - before != live {
        return Err(BAD);
    }
    Ok(live)
}

/// A stream's value after its type byte: `with_counters` for `STREAM_LISTPACKS_2`.
pub fn decode(r: &mut Reader, with_counters: bool) -> Result<DumpedStream> {
    let mut entries: Vec<DumpedEntry> = Vec::new();
    let mut live = 0usize;
    for node in 0..r.count()? as u64 {
        let key = r.string()?;
        let master = (key.len() == ID_BYTES).then(|| StreamId::from_bytes(&key)).flatten().ok_or(BAD)?;
        live += node_entries(master, node, &r.string()?, &mut entries)?;
    }
    if !entries.windows(2).all(|pair| pair[0].id < pair[1].id) || r.length()? != live as u64 {
        return Err(BAD);
    }
    let last_id = id_of_lengths(r)?;
    let (max_deleted, entries_added) = if with_counters {
        let _first = id_of_lengths(r)?;
        (id_of_lengths(r)?, r.length()?)
    } else {
        (StreamId::ZERO, live as u64)
    };
    if entries.last().is_some_and(|last| last.id > last_id) {
        return Err(BAD);
    }
    let mut groups: Vec<DumpedGroup> = Vec::new();
    for _ in 0..r.count()? {
        let name = r.string()?;
        let last_delivered = id_of_lengths(r)?;
        let entries_read = if with_counters { Some(r.length()? as i64) } else { None };
        let mut pending = Vec::new();
        for _ in 0..r.count()? {
            let id = id_at(r)?;
            pending.push(DumpedPending { id, delivered_ms: millis(r)?, deliveries: r.length()?, consumer: Bytes::new() });
        }
        pending.sort_by_key(|p| p.id);
        if pending.windows(2).any(|pair| pair[0].id == pair[1].id) {
            return Err(BAD);
        }
        let mut consumers: Vec<(Bytes, u64)> = Vec::new();
        for _ in 0..r.count()? {
            let consumer = r.string()?;
            let seen = millis(r)?;
            for _ in 0..r.count()? {
                let id = id_at(r)?;
                // Each of a consumer's ids must be its group's, and no one else's.
                let at = pending.binary_search_by_key(&id, |p| p.id).map_err(|_| BAD)?;
                if !pending[at].consumer.is_empty() {
                    return Err(BAD);
                }
                pending[at].consumer = consumer.clone();
            }
            consumers.push((consumer, seen));
        }
        consumers.sort_by(|a, b| a.0.cmp(&b.0));
        let unowned = pending.iter().any(|p| p.consumer.is_empty());
        if unowned || consumers.windows(2).any(|pair| pair[0].0 == pair[1].0) {
            return Err(BAD);
        }
        groups.push(DumpedGroup { name, last_delivered, entries_read, pending, consumers });
    }
    groups.sort_by(|a, b| a.name.cmp(&b.name));
    if groups.windows(2).any(|pair| pair[0].name == pair[1].name) {
        return Err(BAD);
    }
    Ok(DumpedStream { entries, last_id, max_deleted, entries_added, groups })
}

/// One node's listpack: the master entry takes the first entry's field names, and
/// every entry with the same names leaves them out, as Redis writes them.
fn node_listpack(entries: &[&DumpedEntry]) -> Vec<u8> {
    let master = entries[0];
    let names: Vec<&[u8]> = master.fields.iter().map(|(f, _)| f.as_ref()).collect();
    let mut texts: Vec<Vec<u8>> = Vec::new();
    let number = |n: i64| itoa::Buffer::new().format(n).as_bytes().to_vec();
    texts.push(number(entries.len() as i64));
    texts.push(number(0));
    texts.push(number(names.len() as i64));
    texts.extend(names.iter().map(|n| n.to_vec()));
    texts.push(number(0));
    for entry in entries {
        let same = entry.fields.len() == names.len() && entry.fields.iter().zip(&names).all(|((f, _), n)| f.as_ref() == *n);
        texts.push(number(if same { FLAG_SAMEFIELDS } else { 0 }));
        texts.push(number(entry.id.ms.wrapping_sub(master.id.ms) as i64));
        texts.push(number(entry.id.seq.wrapping_sub(master.id.seq) as i64));
        if !same {
            texts.push(number(entry.fields.len() as i64));
            texts.extend(entry.fields.iter().map(|(f, _)| f.to_vec()));
        }
        texts.extend(entry.fields.iter().map(|(_, v)| v.to_vec()));
        let lp_count = if same { entry.fields.len() + 3 } else { 2 * entry.fields.len() + 4 };
        texts.push(number(lp_count as i64));
    }
    let flat: Vec<&[u8]> = texts.iter().map(Vec::as_slice).collect();
    compact::listpack(&flat)
}

/// Append a stream's value (after its type byte), as `STREAM_LISTPACKS_2`: a node per
/// run of entries sharing a node number.
pub fn encode(out: &mut Vec<u8>, stream: &DumpedStream) {
    let nodes: Vec<Vec<&DumpedEntry>> = stream.entries.chunk_by(|a, b| a.node == b.node).map(|run| run.iter().collect()).collect();
    rdb::put_length(out, nodes.len());
    for node in &nodes {
        put_blob(out, &node[0].id.to_bytes());
        put_blob(out, &node_listpack(node));
    }
    let put_id = |out: &mut Vec<u8>, id: StreamId| {
        rdb::put_length(out, id.ms as usize);
        rdb::put_length(out, id.seq as usize);
    };
    rdb::put_length(out, stream.entries.len());
    put_id(out, stream.last_id);
    put_id(out, stream.entries.first().map_or(StreamId::ZERO, |e| e.id));
    put_id(out, stream.max_deleted);
    rdb::put_length(out, stream.entries_added as usize);
    rdb::put_length(out, stream.groups.len());
    for group in &stream.groups {
        rdb::put_string(out, &group.name);
        put_id(out, group.last_delivered);
        rdb::put_length(out, group.entries_read.unwrap_or(-1) as u64 as usize);
        rdb::put_length(out, group.pending.len());
        for pending in &group.pending {
            out.extend_from_slice(&pending.id.to_bytes());
            out.extend_from_slice(&pending.delivered_ms.to_le_bytes());
            rdb::put_length(out, pending.deliveries as usize);
        }
        // Each consumer's pending ids, in id order: one pass over the group's.
        let mut owned: BTreeMap<&[u8], Vec<StreamId>> = BTreeMap::new();
        for pending in &group.pending {
            owned.entry(&pending.consumer).or_default().push(pending.id);
        }
        rdb::put_length(out, group.consumers.len());
        for (consumer, seen) in &group.consumers {
            rdb::put_string(out, consumer);
            out.extend_from_slice(&seen.to_le_bytes());
            let ids = owned.get(consumer.as_ref()).map_or(&[][..], Vec::as_slice);
            rdb::put_length(out, ids.len());
            for id in ids {
                out.extend_from_slice(&id.to_bytes());
            }
        }
    }
}
