//! Hash commands (HSET family) on one shard's keyspace, with Redis 7.0's replies.
//!
//! A hash's fields are [`Elements`]: each field a register or counter of its own, so a
//! write changes, and ships, only the fields it names (`DeltaSink::key_part_changed`).
//! A key created by a write ships whole (it holds only what was just written). Reads
//! never write; a read of a key of another type answers WRONGTYPE.

use bytes::Bytes;

use smallvec::SmallVec;

use super::collection_writes::{DistinctNames, NAMES_INLINE, Names, Part};
use super::element::ElementRef;
use super::elements::{Elements, ORDERED_ENTRIES_MAX};
use super::glob::glob_match;
use super::value::{KeyKind, SetTtl, format_float};
use super::{KeyState, KvEngine, StrVal, WriteCtx, key_hash};
use crate::command::errors;
use crate::command::hash::{ElementScan, HSetReply, HashCommand};
use crate::crdt::{Dot, Hlc};
use crate::notify::Class;
use crate::protocol::Frame;

/// Tries at drawing a live entry by index before HRANDFIELD lists the live fields.
const RANDOM_DRAWS_MAX: usize = 64;

fn wrong_type() -> Frame {
    errors::error(errors::WRONG_TYPE)
}

fn field_value(state: ElementRef<'_>) -> Bytes {
    state.read().map(|v| v.to_bytes()).unwrap_or_default()
}

/// What a write other than HSET's does to one field (HSET writes its values straight
/// from the command: `KvEngine::hset`).
enum FieldWrite {
    Delete,
    IncrBy(i64),
    IncrByFloat(f64),
}

impl FieldWrite {
    /// `incarnation`: when this process began incrementing (see `crdt::counter`).
    fn apply(&self, dot: Dot, incarnation: Hlc, state: &mut KeyState) {
        match self {
            FieldWrite::Delete => state.delete(dot),
            FieldWrite::IncrBy(by) => state.incr_by(dot, incarnation, *by),
            FieldWrite::IncrByFloat(by) => state.incr_by_float(dot, incarnation, *by),
        }
    }

    fn increments(&self) -> bool {
        matches!(self, FieldWrite::IncrBy(_) | FieldWrite::IncrByFloat(_))
    }
}

impl KvEngine {
    /// The fields of a live hash key: `Ok(None)` if the key does not exist, WRONGTYPE if
    /// it holds another type.
    fn hash_fields(&mut self, key: &[u8], now_ms: u64) -> Result<Option<&Elements>, Frame> {
        match self.live(key, key_hash(key), now_ms) {
            None => Ok(None),
            Some(state) if state.kind() == Some(KeyKind::Hash) => Ok(state.hash()),
            Some(_) => Err(wrong_type()),
        }
    }

    /// Execute a hash command. `picks` supplies random numbers (HRANDFIELD).
    pub fn hash_command(&mut self, ctx: &mut WriteCtx, cmd: HashCommand, picks: &mut dyn FnMut() -> u64) -> Frame {
        let now_ms = ctx.now_ms;
        let result = match cmd {
            HashCommand::Set { key, pairs, reply } => self.hset(ctx, key, pairs, reply),
            HashCommand::Del { key, fields } => self.hdel(ctx, key, fields),
            HashCommand::IncrBy { key, field, by } => self.hincr_by(ctx, key, field, by),
            HashCommand::IncrByFloat { key, field, by } => self.hincr_by_float(ctx, key, field, by),
            HashCommand::Get { key, field } => {
                self.hash_fields(&key, now_ms).map(|h| h.and_then(|h| h.get(&field)).map_or(Frame::Null, |s| Frame::Bulk(field_value(s))))
            }
            HashCommand::MGet { key, fields } => self.hash_fields(&key, now_ms).map(|h| {
                Frame::Array(fields.iter().map(|f| h.and_then(|h| h.get(f)).map_or(Frame::Null, |s| Frame::Bulk(field_value(s)))).collect())
            }),
            HashCommand::GetAll(key) => self.hash_fields(&key, now_ms).map(|h| {
                Frame::Map(
                    h.into_iter()
                        .flat_map(|h| h.iter())
                        .map(|(f, s)| (Frame::Bulk(Bytes::copy_from_slice(f)), Frame::Bulk(field_value(s))))
                        .collect(),
                )
            }),
            HashCommand::Keys(key) => self
                .hash_fields(&key, now_ms)
                .map(|h| Frame::Array(h.into_iter().flat_map(|h| h.iter()).map(|(f, _)| Frame::Bulk(Bytes::copy_from_slice(f))).collect())),
            HashCommand::Vals(key) => self
                .hash_fields(&key, now_ms)
                .map(|h| Frame::Array(h.into_iter().flat_map(|h| h.iter()).map(|(_, s)| Frame::Bulk(field_value(s))).collect())),
            HashCommand::Len(key) => self.hash_fields(&key, now_ms).map(|h| Frame::Integer(h.map_or(0, |h| h.len()) as i64)),
            HashCommand::Exists { key, field } => {
                self.hash_fields(&key, now_ms).map(|h| Frame::Integer(h.and_then(|h| h.get(&field)).is_some() as i64))
            }
            HashCommand::StrLen { key, field } => self
                .hash_fields(&key, now_ms)
                .map(|h| Frame::Integer(h.and_then(|h| h.get(&field)).and_then(|s| s.read()).map_or(0, |v| v.len() as i64))),
            HashCommand::RandField { key, count, with_values } => {
                self.hash_fields(&key, now_ms).map(|h| random_fields(h, count, with_values, picks))
            }
            HashCommand::Scan { key, scan } => {
                self.hash_fields(&key, now_ms).map(|h| scan.refusal(h.is_some()).unwrap_or_else(|| scan_fields(h, &scan)))
            }
        };
        result.unwrap_or_else(|error| error)
    }

    /// Apply `writes[i]` to field `names[i]`, each at one dot (see `collection_writes`).
    /// Returns how many fields were added (see [`KvEngine::write_elements`]).
    fn write_fields(&mut self, ctx: &mut WriteCtx, key: Bytes, names: &[impl AsRef<[u8]>], writes: &[FieldWrite]) -> usize {
        debug_assert_eq!(names.len(), writes.len());
        let increments = writes.iter().any(FieldWrite::increments);
        self.write_elements_setting(
            ctx,
            key,
            Part::Hash,
            names,
            increments,
            |_| None,
            |i, dot, incarnation, s| writes[i].apply(dot, incarnation, s),
        )
    }

    fn hset(&mut self, ctx: &mut WriteCtx, key: Bytes, pairs: Vec<(Bytes, Bytes)>, reply: HSetReply) -> Result<Frame, Frame> {
        // HSETNX writes nothing over a live field; HSET counts the fields it adds from
        // its write, which looks each field up once anyway, and checks the key's type
        // there too.
        if reply == HSetReply::IfAbsent {
            let existing = self.hash_fields(&key, ctx.now_ms)?;
            if pairs.iter().any(|(field, _)| existing.and_then(|h| h.get(field)).is_some()) {
                return Ok(Frame::Integer(0));
            }
        }
        // A field named twice takes its last value and counts once. The names and values
        // are borrowed from the command and each value copied once, where it is stored.
        let mut names = Names::with_capacity(pairs.len());
        let mut values: SmallVec<[&[u8]; NAMES_INLINE]> = SmallVec::with_capacity(pairs.len());
        let mut distinct = DistinctNames::new();
        for (field, value) in pairs.iter().rev() {
            if !distinct.first(field) {
                continue;
            }
            names.push(field);
            values.push(value);
        }
        names.reverse();
        values.reverse();
        let event_key = self.event_key(Class::Hash, &key);
        let set_value = |i: usize| Some(StrVal::from_slice(values[i]));
        let added = self.write_elements_checked(ctx, key, Part::Hash, &names, false, set_value, |i, dot, _, s| {
            s.set(dot, StrVal::from_slice(values[i]), SetTtl::Keep)
        })?;
        self.raise_collection_event(Class::Hash, "hset", event_key);
        Ok(match reply {
            HSetReply::Added => Frame::Integer(added as i64),
            HSetReply::Ok => Frame::ok(),
            HSetReply::IfAbsent => Frame::Integer(1),
        })
    }

    fn hdel(&mut self, ctx: &mut WriteCtx, key: Bytes, fields: Vec<Bytes>) -> Result<Frame, Frame> {
        let Some(existing) = self.hash_fields(&key, ctx.now_ms)? else {
            return Ok(Frame::Integer(0));
        };
        let mut names = Names::new();
        let mut distinct = DistinctNames::new();
        for field in &fields {
            if existing.get(field).is_some() && distinct.first(field) {
                names.push(field);
            }
        }
        let removed = names.len() as i64;
        if removed > 0 {
            let event_key = self.event_key(Class::Hash, &key);
            let deletes: SmallVec<[FieldWrite; NAMES_INLINE]> = names.iter().map(|_| FieldWrite::Delete).collect();
            self.write_fields(ctx, key, &names, &deletes);
            self.raise_collection_event(Class::Hash, "hdel", event_key);
        }
        Ok(Frame::Integer(removed))
    }

    fn hincr_by(&mut self, ctx: &mut WriteCtx, key: Bytes, field: Bytes, by: i64) -> Result<Frame, Frame> {
        let existing = self.hash_fields(&key, ctx.now_ms)?;
        let current = match existing.and_then(|h| h.get(&field)).and_then(|s| s.read()) {
            None => 0,
            Some(value) => value.as_i64().ok_or_else(|| Frame::static_error("ERR hash value is not an integer"))?,
        };
        let next = current.checked_add(by).ok_or_else(|| errors::error(errors::OVERFLOW))?;
        let event_key = self.event_key(Class::Hash, &key);
        self.write_fields(ctx, key, std::slice::from_ref(&field), &[FieldWrite::IncrBy(by)]);
        self.raise_collection_event(Class::Hash, "hincrby", event_key);
        Ok(Frame::Integer(next))
    }

    fn hincr_by_float(&mut self, ctx: &mut WriteCtx, key: Bytes, field: Bytes, by: f64) -> Result<Frame, Frame> {
        let existing = self.hash_fields(&key, ctx.now_ms)?;
        let current = match existing.and_then(|h| h.get(&field)).and_then(|s| s.read()) {
            None => 0.0,
            Some(value) => value.as_f64().ok_or_else(|| Frame::static_error("ERR hash value is not a float"))?,
        };
        if !(current + by).is_finite() {
            return Err(errors::error(errors::NAN_OR_INFINITY));
        }
        self.write_fields(ctx, key.clone(), std::slice::from_ref(&field), &[FieldWrite::IncrByFloat(by)]);
        let event_key = self.event_key(Class::Hash, &key);
        self.raise_collection_event(Class::Hash, "hincrbyfloat", event_key);
        let written = self.hash_fields(&key, ctx.now_ms)?.and_then(|h| h.get(&field)).and_then(|s| s.read());
        Ok(Frame::Bulk(written.map(|v| v.to_bytes()).unwrap_or_else(|| Bytes::from(format_float(current + by)))))
    }
}

/// The encoding Redis would report for a hash of these fields.
pub fn hash_encoding(fields: &Elements, limits: &super::EncodingLimits) -> &'static str {
    let value_max = limits.hash_max_listpack_value;
    let small = fields.len() <= limits.hash_max_listpack_entries
        && fields.iter().all(|(f, s)| f.len() <= value_max && s.read().is_none_or(|v| v.len() <= value_max));
    if small { "listpack" } else { "hashtable" }
}

/// HRANDFIELD, by Redis's rules: no count, one field (nil for a missing key); a count
/// of 0, nothing; a negative count, that many draws with repetition; a positive count,
/// distinct fields, all of them when it reaches the size.
fn random_fields(fields: Option<&Elements>, count: Option<i64>, with_values: bool, picks: &mut dyn FnMut() -> u64) -> Frame {
    let Some(count) = count else {
        return match fields.and_then(|h| draw(h, picks)) {
            Some((f, _)) => Frame::Bulk(Bytes::copy_from_slice(f)),
            None => Frame::Null,
        };
    };
    let Some(fields) = fields.filter(|h| !h.is_empty()) else {
        return Frame::Array(Vec::new());
    };
    let reply = |chosen: Vec<(&[u8], ElementRef<'_>)>| {
        if with_values {
            Frame::Pairs(chosen.into_iter().map(|(f, s)| (Frame::Bulk(Bytes::copy_from_slice(f)), Frame::Bulk(field_value(s)))).collect())
        } else {
            Frame::Array(chosen.into_iter().map(|(f, _)| Frame::Bulk(Bytes::copy_from_slice(f))).collect())
        }
    };
    if count < 0 {
        let draws = count.unsigned_abs() as usize;
        let mut chosen = Vec::with_capacity(draws.min(1 << 16));
        for _ in 0..draws {
            match draw(fields, picks) {
                Some(entry) => chosen.push(entry),
                None => break,
            }
        }
        return reply(chosen);
    }
    let count = count as usize;
    let mut live: Vec<(&[u8], ElementRef<'_>)> = fields.iter().collect();
    if count < live.len() {
        // A partial Fisher–Yates shuffle: `count` distinct fields in random order.
        for i in 0..count {
            let j = i + (picks() % (live.len() - i) as u64) as usize;
            live.swap(i, j);
        }
        live.truncate(count);
    }
    reply(live)
}

/// One live field at random: entries are drawn by index (tombstones skipped), and a
/// collection mostly of tombstones falls back to listing its live fields.
fn draw<'a>(fields: &'a Elements, picks: &mut dyn FnMut() -> u64) -> Option<(&'a [u8], ElementRef<'a>)> {
    if fields.is_empty() {
        return None;
    }
    for _ in 0..RANDOM_DRAWS_MAX {
        if let Some(entry) = fields.entry_at((picks() % fields.entries_len() as u64) as usize) {
            return Some(entry);
        }
    }
    let live = fields.len();
    fields.iter().nth((picks() % live as u64) as usize)
}

/// HSCAN. A small hash (what Redis keeps as a listpack) answers whole with cursor 0,
/// as Redis does. A big one is walked from its last entry to its first: the cursor is
/// the position to continue below. Removal moves only the last entry into the hole
/// (or shifts later ones down), so an entry not yet returned never moves past the
/// cursor: every field present for the whole scan is returned, some perhaps twice.
fn scan_fields(fields: Option<&Elements>, scan: &ElementScan) -> Frame {
    let reply = |cursor: u64, items: Vec<Frame>| Frame::Array(vec![Frame::Bulk(Bytes::from(cursor.to_string())), Frame::Array(items)]);
    let Some(fields) = fields else {
        return reply(0, Vec::new());
    };
    let matches = |f: &[u8]| scan.pattern.as_deref().is_none_or(|p| glob_match(p, f));
    let mut items = Vec::new();
    let mut push = |f: &[u8], s: ElementRef<'_>| {
        if matches(f) {
            items.push(Frame::Bulk(Bytes::copy_from_slice(f)));
            items.push(Frame::Bulk(field_value(s)));
        }
    };
    if fields.entries_len() <= ORDERED_ENTRIES_MAX {
        fields.iter().for_each(|(f, s)| push(f, s));
        return reply(0, items);
    }
    let len = fields.entries_len() as u64;
    let mut position = if scan.cursor == 0 || scan.cursor > len { len } else { scan.cursor };
    // COUNT bounds the entries visited, live or not, as Redis bounds buckets.
    let mut visited = 0;
    while position > 0 && visited < scan.count {
        position -= 1;
        visited += 1;
        if let Some((f, s)) = fields.entry_at(position as usize) {
            push(f, s);
        }
    }
    reply(position, items)
}
