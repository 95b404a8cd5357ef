//! Sorted set commands (ZADD family) on one shard's keyspace, with Redis 7.0's replies.
//!
//! A sorted set's members are [`Elements`] of part [`Part::Zset`] (DESIGN §5, row
//! Sorted set): each member an element whose register holds its score (ZADD: last
//! writer wins) and whose float counter holds ZINCRBY's increments (they add, and an
//! increment a ZADD or ZREM had not seen survives it). The elements keep a score order
//! ([`ScoreOrder`]) in step with every change, local or merged. ZADD writes a new dot
//! even when the score is unchanged (add wins over a concurrent ZREM of the older one),
//! except where NX/XX/GT/LT leave a member alone. Writes change, and ship, only the
//! members they name; a key created by a write ships whole.
//!
//! The multi-key commands compute from member lists (`zset_query::combine`), whether
//! the lists come from this shard (hash tags) or from several (the shell's fan-out).

use bytes::Bytes;

use smallvec::SmallVec;

use super::collection_writes::{DistinctNames, NAMES_INLINE, NameIndex, Names, Part};
use super::elements::{Elements, ORDERED_ENTRIES_MAX};
use super::glob::glob_match;
use super::score_order::ScoreOrder;
use super::value::{KeyKind, SetTtl, score_value};
use super::zset_query::{self, Scored};
use super::{EncodingLimits, KeyState, KvEngine, WriteCtx, key_hash};
use crate::command::errors;
use crate::command::hash::ElementScan;
use crate::command::zset::{ZAddFlags, ZAlgebra, ZOutput, ZRange, ZsetCommand, ZsetMulti};
use crate::crdt::{Dot, Hlc};
use crate::notify::Class;
use crate::protocol::Frame;
use crate::protocol::encode::format_double;

/// Tries at drawing a live entry by index before a random pick lists the live members.
const RANDOM_DRAWS_MAX: usize = 64;

const NAN_SCORE: &str = "ERR resulting score is not a number (NaN)";

fn wrong_type() -> Frame {
    errors::error(errors::WRONG_TYPE)
}

/// What a write does to one member.
#[derive(Copy, Clone)]
enum MemberWrite {
    /// ZADD: the score, replacing the register (and absorbing increments it saw).
    Score(f64),
    /// ZINCRBY: an increment, added to the member's counter.
    Incr(f64),
    Remove,
}

impl MemberWrite {
    fn apply(self, dot: Dot, incarnation: Hlc, state: &mut KeyState) {
        match self {
            MemberWrite::Score(score) => state.set(dot, score_value(score), SetTtl::Keep),
            MemberWrite::Incr(by) => state.incr_by_float(dot, incarnation, by),
            MemberWrite::Remove => state.delete(dot),
        }
    }
}

/// The encoding Redis 7.0 would report for a sorted set of these members.
pub fn zset_encoding(members: &Elements, limits: &EncodingLimits) -> &'static str {
    let small = members.len() <= limits.zset_max_listpack_entries && members.iter().all(|(m, _)| m.len() <= limits.zset_max_listpack_value);
    if small { "listpack" } else { "skiplist" }
}

pub(super) fn order_of(members: &Elements) -> &ScoreOrder {
    members.score_order().expect("a sorted set part keeps its score order")
}

/// A sorted set's live members with their scores, in score order.
fn scored_members(members: &Elements) -> Vec<Scored> {
    order_of(members).iter(false).map(|(s, m)| (Bytes::copy_from_slice(m), s)).collect()
}

impl KvEngine {
    /// The members of a live sorted set key: `Ok(None)` if the key does not exist,
    /// WRONGTYPE if it holds another type.
    pub(super) fn zset_members(&mut self, key: &[u8], now_ms: u64) -> Result<Option<&Elements>, Frame> {
        match self.live(key, key_hash(key), now_ms) {
            None => Ok(None),
            Some(state) if state.kind() == Some(KeyKind::Zset) => Ok(state.zset_members()),
            Some(_) => Err(wrong_type()),
        }
    }

    /// Each key's members and scores (`None` for a missing key): sorted sets as they
    /// are, sets with every member at score 1 (ZUNION and ZINTER take both); WRONGTYPE
    /// if a key holds another type.
    pub fn scored_lists(&mut self, keys: &[Bytes], now_ms: u64) -> Result<Vec<Option<Vec<Scored>>>, Frame> {
        let mut lists = Vec::with_capacity(keys.len());
        for key in keys {
            let list = match self.live(key, key_hash(key), now_ms) {
                None => None,
                Some(state) => match state.kind() {
                    Some(KeyKind::Zset) => state.zset_members().map(scored_members),
                    Some(KeyKind::Set) => state.set_members().map(|s| s.iter().map(|(m, _)| (Bytes::copy_from_slice(m), 1.0)).collect()),
                    _ => return Err(wrong_type()),
                },
            };
            lists.push(list);
        }
        Ok(lists)
    }

    /// Execute a sorted set command. `picks` supplies random numbers (ZRANDMEMBER).
    pub fn zset_command(&mut self, ctx: &mut WriteCtx, cmd: ZsetCommand, picks: &mut dyn FnMut() -> u64) -> Frame {
        let now_ms = ctx.now_ms;
        let result = match cmd {
            ZsetCommand::Add { key, flags, pairs } => self.zadd(ctx, key, flags, pairs),
            ZsetCommand::IncrBy { key, by, member } => {
                self.zadd(ctx, key, ZAddFlags { incr: true, ..ZAddFlags::default() }, vec![(by, member)])
            }
            ZsetCommand::Rem { key, members } => self.zrem(ctx, key, members),
            ZsetCommand::Pop { key, max, count } => self.zpop(ctx, key, max, count),
            ZsetCommand::RemRange { key, range } => self.zremrange(ctx, key, range),
            ZsetCommand::Geo(query) => self.geo_read(*query, now_ms),
            ZsetCommand::Score { key, member } => {
                self.zset_members(&key, now_ms).map(|z| z.and_then(|z| z.get(&member)).map_or(Frame::Null, |s| Frame::Double(s.score())))
            }
            ZsetCommand::MScore { key, members } => self.zset_members(&key, now_ms).map(|z| {
                Frame::Array(members.iter().map(|m| z.and_then(|z| z.get(m)).map_or(Frame::Null, |s| Frame::Double(s.score()))).collect())
            }),
            ZsetCommand::Card(key) => self.zset_members(&key, now_ms).map(|z| Frame::Integer(z.map_or(0, |z| z.len()) as i64)),
            ZsetCommand::Count { key, min, max } => self
                .zset_members(&key, now_ms)
                .map(|z| Frame::Integer(z.map_or(0, |z| zset_query::count(order_of(z), &ZRange::Score(min, max))) as i64)),
            ZsetCommand::LexCount { key, bounds } => self
                .zset_members(&key, now_ms)
                .map(|z| Frame::Integer(z.map_or(0, |z| zset_query::count(order_of(z), &ZRange::Lex(bounds))) as i64)),
            ZsetCommand::Range { key, query } => self.zset_members(&key, now_ms).map(|z| zset_query::range_reply(z.map(order_of), &query)),
            ZsetCommand::Rank { key, member, rev } => self.zset_members(&key, now_ms).map(|z| {
                let Some((z, state)) = z.and_then(|z| Some((z, z.get(&member)?))) else {
                    return Frame::Null;
                };
                let rank = order_of(z).rank(&member, state.score());
                Frame::Integer(if rev { z.len() - 1 - rank } else { rank } as i64)
            }),
            ZsetCommand::RandMember { key, count, with_scores } => {
                self.zset_members(&key, now_ms).map(|z| random_members(z, count, with_scores, picks))
            }
            ZsetCommand::Scan { key, scan } => {
                self.zset_members(&key, now_ms).map(|z| scan.refusal(z.is_some()).unwrap_or_else(|| scan_members(z, &scan)))
            }
        };
        result.unwrap_or_else(|error| error)
    }

    /// Apply member writes at one dot (see `collection_writes`).
    /// `writes[i]` to member `names[i]`.
    fn write_zset_members(&mut self, ctx: &mut WriteCtx, key: Bytes, names: &[impl AsRef<[u8]>], writes: &[MemberWrite]) {
        debug_assert_eq!(names.len(), writes.len());
        let increments = writes.iter().any(|w| matches!(w, MemberWrite::Incr(_)));
        let set_value = |i: usize| match writes[i] {
            MemberWrite::Score(score) => Some(score_value(score)),
            _ => None,
        };
        self.write_elements_setting(ctx, key, Part::Zset, names, increments, set_value, |i, dot, incarnation, s| {
            writes[i].apply(dot, incarnation, s)
        });
    }

    /// ZADD (and ZINCRBY, as ZADD INCR), member by member as Redis's `zsetAdd`.
    fn zadd(&mut self, ctx: &mut WriteCtx, key: Bytes, flags: ZAddFlags, pairs: Vec<(f64, Bytes)>) -> Result<Frame, Frame> {
        let existing = self.zset_members(&key, ctx.now_ms)?;
        // Each member's current score as the command goes (a member named twice sees
        // its first write), and the write it ends with.
        let mut writes: SmallVec<[(&[u8], MemberWrite, Option<f64>); NAMES_INLINE]> = SmallVec::with_capacity(pairs.len());
        let (mut added, mut changed) = (0, 0);
        let mut incr_result = None;
        let mut written = NameIndex::new();
        for (score, member) in &pairs {
            let (score, member) = (*score, member);
            let pending = written.get(member);
            let current = match pending {
                Some(i) => writes[i].2,
                None => existing.and_then(|z| z.get(member)).map(|s| s.score()),
            };
            let write = match current {
                Some(_) if flags.nx => None,
                None if flags.xx => None,
                None => {
                    added += 1;
                    // A new member's ZINCRBY is an increment too: two regions' ZINCRBY
                    // of one new member both count.
                    Some((if flags.incr { MemberWrite::Incr(score) } else { MemberWrite::Score(score) }, score))
                }
                Some(current) => {
                    let new = if flags.incr { current + score } else { score };
                    if new.is_nan() {
                        return Err(Frame::static_error(NAN_SCORE));
                    }
                    if (flags.lt && new >= current) || (flags.gt && new <= current) {
                        None
                    } else {
                        if new != current {
                            changed += 1;
                        }
                        // ZINCRBY adds to the counter (increments add across regions);
                        // ZADD replaces the score.
                        let as_value = crate::bugs::active(crate::bugs::Bug::ZincrbyShipsScore);
                        Some((if flags.incr && !as_value { MemberWrite::Incr(score) } else { MemberWrite::Score(new) }, new))
                    }
                }
            };
            let Some((write, new)) = write else { continue };
            incr_result = Some(new);
            match pending {
                Some(i) => {
                    let merged = match (writes[i].1, write) {
                        (MemberWrite::Incr(a), MemberWrite::Incr(b)) => MemberWrite::Incr(a + b),
                        (_, MemberWrite::Incr(_)) => MemberWrite::Score(new),
                        (_, write) => write,
                    };
                    writes[i] = (member, merged, Some(new));
                }
                None => {
                    written.insert(member, writes.len());
                    writes.push((member, write, Some(new)));
                }
            }
        }
        if !writes.is_empty() {
            // Redis notifies when a member was added or its score changed.
            let event_key = if added + changed > 0 { self.event_key(Class::Zset, &key) } else { None };
            let (names, writes): (Names, SmallVec<[MemberWrite; NAMES_INLINE]>) = writes.into_iter().map(|(m, w, _)| (m, w)).unzip();
            self.write_zset_members(ctx, key, &names, &writes);
            self.raise_collection_event(Class::Zset, if flags.incr { "zincr" } else { "zadd" }, event_key);
        }
        Ok(if flags.incr {
            incr_result.map_or(Frame::Null, Frame::Double)
        } else {
            Frame::Integer(if flags.ch { added + changed } else { added })
        })
    }

    fn zrem(&mut self, ctx: &mut WriteCtx, key: Bytes, members: Vec<Bytes>) -> Result<Frame, Frame> {
        let Some(existing) = self.zset_members(&key, ctx.now_ms)? else {
            return Ok(Frame::Integer(0));
        };
        let mut present = Names::new();
        let mut distinct = DistinctNames::new();
        for member in &members {
            if existing.get(member).is_some() && distinct.first(member) {
                present.push(member);
            }
        }
        let removed = present.len() as i64;
        self.remove_members(ctx, key, &present, "zrem");
        Ok(Frame::Integer(removed))
    }

    /// Remove members (if any) and raise the command's `event`, then `del` if none is left.
    fn remove_members(&mut self, ctx: &mut WriteCtx, key: Bytes, members: &[impl AsRef<[u8]>], event: &'static str) {
        if !members.is_empty() {
            let event_key = self.event_key(Class::Zset, &key);
            let removes: SmallVec<[MemberWrite; NAMES_INLINE]> = members.iter().map(|_| MemberWrite::Remove).collect();
            self.write_zset_members(ctx, key, members, &removes);
            self.raise_collection_event(Class::Zset, event, event_key);
        }
    }

    /// ZPOPMIN/ZPOPMAX: no count answers one member flat, a count answers pairs.
    fn zpop(&mut self, ctx: &mut WriteCtx, key: Bytes, max: bool, count: Option<u64>) -> Result<Frame, Frame> {
        let popped = self.pop_members(ctx, key, max, count.unwrap_or(1))?.unwrap_or_default();
        Ok(match count {
            None => Frame::Array(popped.into_iter().flat_map(|(m, s)| [Frame::Bulk(m), Frame::Double(s)]).collect()),
            Some(_) => zset_query::members_reply(popped, true),
        })
    }

    /// Remove and return up to `count` lowest (`max`: highest) members; `None` if the
    /// key does not exist.
    fn pop_members(&mut self, ctx: &mut WriteCtx, key: Bytes, max: bool, count: u64) -> Result<Option<Vec<Scored>>, Frame> {
        let Some(existing) = self.zset_members(&key, ctx.now_ms)? else {
            return Ok(None);
        };
        let popped: Vec<Scored> =
            order_of(existing).iter(max).take(count.min(usize::MAX as u64) as usize).map(|(s, m)| (Bytes::copy_from_slice(m), s)).collect();
        let names: Names = popped.iter().map(|(m, _)| &m[..]).collect();
        self.remove_members(ctx, key, &names, if max { "zpopmax" } else { "zpopmin" });
        drop(names);
        Ok(Some(popped))
    }

    fn zremrange(&mut self, ctx: &mut WriteCtx, key: Bytes, range: ZRange) -> Result<Frame, Frame> {
        let Some(existing) = self.zset_members(&key, ctx.now_ms)? else {
            return Ok(Frame::Integer(0));
        };
        let doomed: Vec<Bytes> = zset_query::select(order_of(existing), &range, false, None).into_iter().map(|(m, _)| m).collect();
        let removed = doomed.len() as i64;
        let event = match range {
            ZRange::Rank(..) => "zremrangebyrank",
            ZRange::Score(..) => "zremrangebyscore",
            ZRange::Lex(..) => "zremrangebylex",
        };
        self.remove_members(ctx, key, &doomed, event);
        Ok(Frame::Integer(removed))
    }

    /// Replace `key` with a sorted set of `members` (the STORE forms, across shards
    /// too): the old key, of any type, goes whole; an empty result deletes it. Returns
    /// the count. Raises `new` or `del`; the command's own event is its caller's (see
    /// [`store_event`]), raised only when the count is not 0.
    pub fn store_zset(&mut self, ctx: &mut WriteCtx, key: Bytes, members: Vec<Scored>) -> i64 {
        let hash = key_hash(&key);
        if members.is_empty() {
            if self.delete(ctx, &key, hash) {
                self.notify.raise(Class::Generic, "del", &key);
            }
            return 0;
        }
        let old = self.take_for_write(&key, hash, ctx.now_ms);
        let mut dot = ctx.next_dot();
        let mut state = old.unwrap_or_default();
        if state.exists() || !state.is_blank() {
            self.remove_elements_for_write(&mut state, dot);
            state.delete(dot);
            // The old members' tombstones carry the remove's dot: the new members are
            // a write after it.
            dot = ctx.next_dot();
        }
        let zset = state.part_mut(Part::Zset);
        for (member, score) in &members {
            zset.write(member, |s| s.set(dot, score_value(*score), SetTtl::Keep));
        }
        let count = zset.len() as i64;
        self.commit_new(ctx, key, hash, state);
        count
    }

    /// [`KvEngine::store_zset`] and the command's `event` when it stored something.
    fn store_zset_raising(&mut self, ctx: &mut WriteCtx, dst: Bytes, members: Vec<Scored>, event: &'static str) -> i64 {
        let event_key = self.notify.key_for(&[Class::Zset], &dst);
        let count = self.store_zset(ctx, dst, members);
        if count > 0 {
            self.notify.raise_for(Class::Zset, event, event_key.as_ref());
        }
        count
    }

    /// A multi-key sorted set command whose keys are all on this shard.
    pub fn zset_multi(&mut self, ctx: &mut WriteCtx, cmd: ZsetMulti) -> Frame {
        let now_ms = ctx.now_ms;
        match cmd {
            ZsetMulti::Algebra { op, keys, weights, aggregate, output } => {
                let lists = match self.scored_lists(&keys, now_ms) {
                    Ok(lists) => lists,
                    Err(error) => return error,
                };
                if let ZOutput::Refused(error) = output {
                    // The inputs' types checked out; nothing is combined for an error.
                    return error;
                }
                let limit = if let ZOutput::Count { limit } = output { limit } else { 0 };
                let result = zset_query::combine(op, lists, weights.as_deref(), aggregate, limit);
                match output {
                    ZOutput::Store(dst) => Frame::Integer(self.store_zset_raising(ctx, dst, result, store_event(Some(op)))),
                    output => algebra_reply(&output, result),
                }
            }
            ZsetMulti::RangeStore { dst, src, query } => match self.zset_range_list(&src, &query, now_ms) {
                Ok(members) => Frame::Integer(self.store_zset_raising(ctx, dst, members, store_event(None))),
                Err(error) => error,
            },
            ZsetMulti::GeoStore { search, store } => match self.geo_matches(&search, store.distances, now_ms) {
                Ok(members) => Frame::Integer(self.store_zset_raising(ctx, store.dst, members, store.event)),
                Err(error) => error,
            },
            ZsetMulti::MPop { keys, max, count } => {
                for key in keys {
                    match self.pop_members(ctx, key.clone(), max, count) {
                        Err(error) => return error,
                        Ok(None) => continue,
                        Ok(Some(popped)) => return mpop_reply(key, popped),
                    }
                }
                Frame::NullArray
            }
        }
    }

    /// The members a range query names on a sorted set key, for ZRANGESTORE across
    /// shards; WRONGTYPE for another type (sets included, as Redis).
    pub fn zset_range_list(&mut self, key: &[u8], query: &crate::command::zset::ZRangeQuery, now_ms: u64) -> Result<Vec<Scored>, Frame> {
        Ok(self
            .zset_members(key, now_ms)?
            .map(|z| zset_query::select(order_of(z), &query.range, query.rev, query.limit))
            .unwrap_or_default())
    }
}

/// ZMPOP's reply: the key, then its popped members as `[member, score]` pairs (nested
/// in RESP2 too, unlike ZPOPMIN's).
fn mpop_reply(key: Bytes, popped: Vec<Scored>) -> Frame {
    let pairs = popped.into_iter().map(|(m, s)| Frame::Array(vec![Frame::Bulk(m), Frame::Double(s)])).collect();
    Frame::Array(vec![Frame::Bulk(key), Frame::Array(pairs)])
}

/// The event a sorted set STORE raises on its destination: ZUNIONSTORE, ZINTERSTORE,
/// ZDIFFSTORE by their algebra, ZRANGESTORE (`None`).
pub fn store_event(op: Option<ZAlgebra>) -> &'static str {
    match op {
        Some(ZAlgebra::Union) => "zunionstore",
        Some(ZAlgebra::Inter) => "zinterstore",
        Some(ZAlgebra::Diff) => "zdiffstore",
        None => "zrangestore",
    }
}

/// The reply of a multi-key sorted set command that does not store.
pub fn algebra_reply(output: &ZOutput, members: Vec<Scored>) -> Frame {
    match output {
        ZOutput::Count { .. } => Frame::Integer(members.len() as i64),
        ZOutput::Reply { with_scores } => zset_query::members_reply(members, *with_scores),
        ZOutput::Store(_) => Frame::Integer(members.len() as i64),
        ZOutput::Refused(error) => error.clone(),
    }
}

/// ZRANDMEMBER, by Redis's rules (as HRANDFIELD): no count, one member (nil for a
/// missing key); 0, nothing; negative, that many draws with repetition; positive,
/// distinct members, all of them (highest score first) when it reaches the size.
fn random_members(members: Option<&Elements>, count: Option<i64>, with_scores: bool, picks: &mut dyn FnMut() -> u64) -> Frame {
    let Some(count) = count else {
        return members.and_then(|z| draw(z, picks)).map_or(Frame::Null, |(m, _)| Frame::Bulk(m));
    };
    let Some(members) = members.filter(|z| !z.is_empty()) else {
        return Frame::Array(Vec::new());
    };
    let chosen: Vec<Scored> = if count < 0 {
        let draws = count.unsigned_abs() as usize;
        let mut chosen = Vec::with_capacity(draws.min(1 << 16));
        for _ in 0..draws {
            match draw(members, picks) {
                Some(member) => chosen.push(member),
                None => break,
            }
        }
        chosen
    } else if count as usize >= members.len() {
        // The whole sorted set, highest score first, as Redis answers it.
        order_of(members).iter(true).map(|(s, m)| (Bytes::copy_from_slice(m), s)).collect()
    } else {
        let count = count as usize;
        let mut live: Vec<Scored> = members.iter().map(|(m, s)| (Bytes::copy_from_slice(m), s.score())).collect();
        // A partial Fisher–Yates shuffle: `count` distinct members in random order.
        for i in 0..count {
            let j = i + (picks() % (live.len() - i) as u64) as usize;
            live.swap(i, j);
        }
        live.truncate(count);
        live
    };
    zset_query::members_reply(chosen, with_scores)
}

/// One live member at random: entries drawn by index (tombstones skipped), and a set
/// mostly of tombstones falls back to listing its live members.
fn draw(members: &Elements, picks: &mut dyn FnMut() -> u64) -> Option<Scored> {
    if members.is_empty() {
        return None;
    }
    for _ in 0..RANDOM_DRAWS_MAX {
        if let Some((m, s)) = members.entry_at((picks() % members.entries_len() as u64) as usize) {
            return Some((Bytes::copy_from_slice(m), s.score()));
        }
    }
    members.iter().nth((picks() % members.len() as u64) as usize).map(|(m, s)| (Bytes::copy_from_slice(m), s.score()))
}

/// ZSCAN, as HSCAN walks a hash: a small sorted set answers whole with cursor 0 (in
/// score order), a big one is walked from its last entry down. Scores are bulk
/// strings, in RESP3 too (as Redis replies).
fn scan_members(members: Option<&Elements>, scan: &ElementScan) -> Frame {
    let reply = |cursor: u64, items: Vec<Frame>| Frame::Array(vec![Frame::Bulk(Bytes::from(cursor.to_string())), Frame::Array(items)]);
    let Some(members) = members else {
        return reply(0, Vec::new());
    };
    let matches = |m: &[u8]| scan.pattern.as_deref().is_none_or(|p| glob_match(p, m));
    let item = |m: &[u8], score: f64| [Frame::Bulk(Bytes::copy_from_slice(m)), Frame::Bulk(Bytes::from(format_double(score)))];
    if members.entries_len() <= ORDERED_ENTRIES_MAX {
        let items = order_of(members).iter(false).filter(|(_, m)| matches(m)).flat_map(|(s, m)| item(m, s)).collect();
        return reply(0, items);
    }
    let len = members.entries_len() as u64;
    let mut position = if scan.cursor == 0 || scan.cursor > len { len } else { scan.cursor };
    let mut items = Vec::new();
    let mut visited = 0;
    while position > 0 && visited < scan.count {
        position -= 1;
        visited += 1;
        if let Some((m, s)) = members.entry_at(position as usize)
            && matches(m)
        {
            items.extend(item(m, s.score()));
        }
    }
    reply(position, items)
}
