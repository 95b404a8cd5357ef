//! Set commands (SADD family) on one shard's keyspace, with Redis 7.0's replies.
//!
//! A set's members are [`Elements`] (DESIGN §5, row Set): each member an element whose
//! register holds [`MEMBER_MARK`], so a member exists iff its element does. SADD writes
//! a new dot even for a member already there (Redis still answers 0 for it): a
//! concurrent SREM that had seen only the older dot then loses to it (add wins). SREM
//! and SPOP remove the dots they observed. Writes change, and ship, only the members
//! they name; a key created by a write ships whole.
//!
//! Order: a set Redis would keep as an intset (every member an integer in canonical
//! form, no more than `set-max-intset-entries`) is answered sorted numerically, as
//! Redis answers it; any other set in insertion order (Redis's hashtable order is
//! unspecified).
//!
//! The multi-key commands compute here from member lists ([`combine`]), whether the
//! lists come from this shard (hash tags) or from several (the shell's fan-out).

use bytes::Bytes;

use super::collection_writes::{DistinctNames, Names, Part};
use super::elements::{Elements, ORDERED_ENTRIES_MAX};
use super::glob::glob_match;
use super::value::{KeyKind, MEMBER_MARK, SetTtl, parse_canonical_i64};
use super::{EncodingLimits, KeyState, KvEngine, WriteCtx, key_hash};
use crate::command::errors;
use crate::command::hash::ElementScan;
use crate::command::{SetAlgebra, SetCommand, SetOutput};
use crate::crdt::Dot;
use crate::notify::Class;
use crate::protocol::Frame;

/// Tries at drawing a live entry by index before a random pick lists the live members.
const RANDOM_DRAWS_MAX: usize = 64;

fn wrong_type() -> Frame {
    errors::error(errors::WRONG_TYPE)
}

/// What a write does to one member.
#[derive(Copy, Clone)]
enum MemberWrite {
    Add,
    Remove,
}

impl MemberWrite {
    fn apply(self, dot: Dot, state: &mut KeyState) {
        match self {
            MemberWrite::Add => state.set(dot, MEMBER_MARK, SetTtl::Keep),
            MemberWrite::Remove => state.delete(dot),
        }
    }
}

/// Whether Redis would keep these members as an intset.
fn intset_eligible<'a>(count: usize, mut members: impl Iterator<Item = &'a [u8]>, limits: &EncodingLimits) -> bool {
    count <= limits.set_max_intset_entries && members.all(|m| parse_canonical_i64(m).is_some())
}

/// The encoding Redis 7.0 would report for a set of these members (it has no set
/// listpack). Redis never converts a hashtable back to an intset after removals; this
/// answers from the members alone.
pub fn set_encoding(members: &Elements, limits: &EncodingLimits) -> &'static str {
    if intset_eligible(members.len(), members.iter().map(|(m, _)| m), limits) { "intset" } else { "hashtable" }
}

/// Put members in reply order: numerically sorted when Redis would hold them as an
/// intset, else as they are.
pub fn reply_order(members: &mut [Bytes], limits: &EncodingLimits) {
    if intset_eligible(members.len(), members.iter().map(|m| m.as_ref()), limits) {
        members.sort_by_key(|m| parse_canonical_i64(m).unwrap_or(0));
    }
}

/// A set's live members in reply order.
fn ordered_members(members: &Elements, limits: &EncodingLimits) -> Vec<Bytes> {
    let mut all: Vec<Bytes> = members.iter().map(|(m, _)| Bytes::copy_from_slice(m)).collect();
    reply_order(&mut all, limits);
    all
}

fn bulk_set(members: Vec<Bytes>) -> Frame {
    Frame::Set(members.into_iter().map(Frame::Bulk).collect())
}

/// SINTER/SUNION/SDIFF of member lists (`None`: a missing key, an empty set). Stops
/// at `limit` members when it is not 0 (SINTERCARD).
pub fn combine(op: SetAlgebra, lists: Vec<Option<Vec<Bytes>>>, limit: u64) -> Vec<Bytes> {
    let limit = if limit == 0 { usize::MAX } else { limit as usize };
    match op {
        SetAlgebra::Inter => {
            if lists.iter().any(|l| l.as_ref().is_none_or(|l| l.is_empty())) {
                return Vec::new();
            }
            let mut lists: Vec<Vec<Bytes>> = lists.into_iter().flatten().collect();
            // Walk the smallest, as Redis does; look the others up.
            lists.sort_by_key(|l| l.len());
            let mut rest = lists.split_off(1);
            let others: Vec<hashbrown::HashSet<Bytes>> = rest.iter_mut().map(|l| std::mem::take(l).into_iter().collect()).collect();
            let mut out = Vec::new();
            for member in lists.pop().unwrap_or_default() {
                if out.len() >= limit {
                    break;
                }
                if others.iter().all(|o| o.contains(&member)) {
                    out.push(member);
                }
            }
            out
        }
        SetAlgebra::Union => {
            let mut seen = hashbrown::HashSet::new();
            let mut out = Vec::new();
            for member in lists.into_iter().flatten().flatten() {
                if seen.insert(member.clone()) {
                    out.push(member);
                }
            }
            out
        }
        SetAlgebra::Diff => {
            let mut lists = lists.into_iter();
            let Some(Some(first)) = lists.next() else {
                return Vec::new();
            };
            let others: hashbrown::HashSet<Bytes> = lists.flatten().flatten().collect();
            let mut seen = hashbrown::HashSet::new();
            first.into_iter().filter(|m| !others.contains(m) && seen.insert(m.clone())).collect()
        }
    }
}

/// The reply of a multi-key set command that does not store (SINTER, SUNION, SDIFF,
/// SINTERCARD), from its result.
pub fn algebra_reply(output: &SetOutput, mut members: Vec<Bytes>, limits: &EncodingLimits) -> Frame {
    match output {
        SetOutput::Count { .. } => Frame::Integer(members.len() as i64),
        SetOutput::Store(_) | SetOutput::Reply => {
            reply_order(&mut members, limits);
            bulk_set(members)
        }
    }
}

impl KvEngine {
    /// The members of a live set key: `Ok(None)` if the key does not exist, WRONGTYPE
    /// if it holds another type.
    fn set_members(&mut self, key: &[u8], now_ms: u64) -> Result<Option<&Elements>, Frame> {
        match self.live(key, key_hash(key), now_ms) {
            None => Ok(None),
            Some(state) if state.kind() == Some(KeyKind::Set) => Ok(state.set_members()),
            Some(_) => Err(wrong_type()),
        }
    }

    /// The members of each key (`None` for a missing one), or WRONGTYPE if any key
    /// holds another type (the read half of the multi-key set commands).
    pub fn set_member_lists(&mut self, keys: &[Bytes], now_ms: u64) -> Result<Vec<Option<Vec<Bytes>>>, Frame> {
        let mut lists = Vec::with_capacity(keys.len());
        for key in keys {
            lists.push(self.set_members(key, now_ms)?.map(|s| s.iter().map(|(m, _)| Bytes::copy_from_slice(m)).collect()));
        }
        Ok(lists)
    }

    /// Execute a set command. `picks` supplies random numbers (SPOP, SRANDMEMBER).
    pub fn set_command(&mut self, ctx: &mut WriteCtx, cmd: SetCommand, picks: &mut dyn FnMut() -> u64) -> Frame {
        let now_ms = ctx.now_ms;
        let limits = self.encoding;
        let result = match cmd {
            SetCommand::Add { key, members } => self.sadd(ctx, key, members),
            SetCommand::Rem { key, members } => self.srem(ctx, key, members),
            SetCommand::Pop { key, count } => self.spop(ctx, key, count, picks),
            SetCommand::Members(key) => {
                self.set_members(&key, now_ms).map(|s| bulk_set(s.map(|s| ordered_members(s, &limits)).unwrap_or_default()))
            }
            SetCommand::IsMember { key, member } => {
                self.set_members(&key, now_ms).map(|s| Frame::Integer(s.and_then(|s| s.get(&member)).is_some() as i64))
            }
            SetCommand::MIsMember { key, members } => self
                .set_members(&key, now_ms)
                .map(|s| Frame::Array(members.iter().map(|m| Frame::Integer(s.and_then(|s| s.get(m)).is_some() as i64)).collect())),
            SetCommand::Card(key) => self.set_members(&key, now_ms).map(|s| Frame::Integer(s.map_or(0, |s| s.len()) as i64)),
            SetCommand::RandMember { key, count } => self.set_members(&key, now_ms).map(|s| random_members(s, count, &limits, picks)),
            SetCommand::Scan { key, scan } => {
                self.set_members(&key, now_ms).map(|s| scan.refusal(s.is_some()).unwrap_or_else(|| scan_members(s, &scan, &limits)))
            }
        };
        result.unwrap_or_else(|error| error)
    }

    /// Apply member writes at one dot (see `collection_writes`).
    /// Returns how many members were added (see [`KvEngine::write_elements`]).
    fn write_members(&mut self, ctx: &mut WriteCtx, key: Bytes, members: &[impl AsRef<[u8]>], write: MemberWrite) -> usize {
        let set_value = |_| matches!(write, MemberWrite::Add).then_some(MEMBER_MARK);
        self.write_elements_setting(ctx, key, Part::Set, members, false, set_value, |_, dot, _, s| write.apply(dot, s))
    }

    fn sadd(&mut self, ctx: &mut WriteCtx, key: Bytes, members: Vec<Bytes>) -> Result<Frame, Frame> {
        // The type check and what is added are the write's own lookups'.
        let mut unique = Names::with_capacity(members.len());
        let mut distinct = DistinctNames::new();
        for member in &members {
            if distinct.first(member) {
                unique.push(member);
            }
        }
        // Every member named gets a new dot, present or not: add wins over a concurrent
        // SREM of the older one. Redis notifies only when a member was added: the key
        // is copied for the event before the write (which takes it) and raised after.
        let event_key = self.event_key(Class::Set, &key);
        let added = self.write_elements_checked(
            ctx,
            key,
            Part::Set,
            &unique,
            false,
            |_| Some(MEMBER_MARK),
            |_, dot, _, s| MemberWrite::Add.apply(dot, s),
        )?;
        self.raise_collection_event(Class::Set, "sadd", if added > 0 { event_key } else { None });
        Ok(Frame::Integer(added as i64))
    }

    fn srem(&mut self, ctx: &mut WriteCtx, key: Bytes, members: Vec<Bytes>) -> Result<Frame, Frame> {
        let Some(existing) = self.set_members(&key, ctx.now_ms)? else {
            return Ok(Frame::Integer(0));
        };
        let mut present = Names::new();
        let mut distinct = DistinctNames::new();
        for member in &members {
            if existing.get(member).is_some() && distinct.first(member) {
                present.push(member);
            }
        }
        if !present.is_empty() {
            let event_key = self.event_key(Class::Set, &key);
            self.write_members(ctx, key, &present, MemberWrite::Remove);
            self.raise_collection_event(Class::Set, "srem", event_key);
        }
        Ok(Frame::Integer(present.len() as i64))
    }

    fn spop(&mut self, ctx: &mut WriteCtx, key: Bytes, count: Option<u64>, picks: &mut dyn FnMut() -> u64) -> Result<Frame, Frame> {
        let limits = self.encoding;
        let Some(existing) = self.set_members(&key, ctx.now_ms)? else {
            return Ok(if count.is_some() { Frame::Set(Vec::new()) } else { Frame::Null });
        };
        let popped: Vec<Bytes> = match count {
            None => draw(existing, picks).into_iter().collect(),
            Some(n) if n as usize >= existing.len() => ordered_members(existing, &limits),
            Some(n) => {
                let mut live: Vec<Bytes> = existing.iter().map(|(m, _)| Bytes::copy_from_slice(m)).collect();
                // A partial Fisher–Yates shuffle: `n` distinct members in random order.
                for i in 0..n as usize {
                    let j = i + (picks() % (live.len() - i) as u64) as usize;
                    live.swap(i, j);
                }
                live.truncate(n as usize);
                live
            }
        };
        if !popped.is_empty() {
            let event_key = self.event_key(Class::Set, &key);
            self.write_members(ctx, key, &popped, MemberWrite::Remove);
            self.raise_collection_event(Class::Set, "spop", event_key);
        }
        Ok(match count {
            None => popped.into_iter().next().map_or(Frame::Null, Frame::Bulk),
            Some(_) => bulk_set(popped),
        })
    }

    /// Replace `key` with a set of `members` (the STORE forms, across shards too): the
    /// old key, of any type, goes whole; an empty result deletes it. Returns the count.
    /// Raises `new` or `del`; the command's own event is its caller's (see
    /// [`store_event`]), raised only when the count is not 0.
    pub fn store_set(&mut self, ctx: &mut WriteCtx, key: Bytes, members: Vec<Bytes>) -> i64 {
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
        let set = state.set_mut();
        set.set_pack_limit(self.pack_limit(Part::Set));
        for member in &members {
            set.write(member, |s| s.set(dot, MEMBER_MARK, SetTtl::Keep));
        }
        let count = set.len() as i64;
        self.commit_new(ctx, key, hash, state);
        count
    }

    /// A multi-key set command whose keys (and destination) are all on this shard.
    pub fn set_algebra(&mut self, ctx: &mut WriteCtx, op: SetAlgebra, keys: &[Bytes], output: SetOutput) -> Frame {
        let limit = if let SetOutput::Count { limit } = output { limit } else { 0 };
        let result = if op == SetAlgebra::Inter {
            match self.intersect_in_place(keys, ctx.now_ms, limit) {
                Ok(result) => result,
                Err(error) => return error,
            }
        } else {
            match self.set_member_lists(keys, ctx.now_ms) {
                Ok(lists) => combine(op, lists, limit),
                Err(error) => return error,
            }
        };
        match output {
            SetOutput::Store(dst) => {
                let event_key = self.notify.key_for(&[Class::Set], &dst);
                let count = self.store_set(ctx, dst, result);
                if count > 0 {
                    self.notify.raise_for(Class::Set, store_event(op), event_key.as_ref());
                }
                Frame::Integer(count)
            }
            output => algebra_reply(&output, result, &self.encoding),
        }
    }

    /// SINTER of keys on this shard without copying the sets: walk the smallest, look
    /// its members up in the others (SINTER of a big set and a small one costs the small
    /// one). WRONGTYPE if any key holds another type, as Redis checks every key first.
    fn intersect_in_place(&mut self, keys: &[Bytes], now_ms: u64, limit: u64) -> Result<Vec<Bytes>, Frame> {
        for key in keys {
            // Expires lazily and checks the type; the sets are read below.
            self.set_members(key, now_ms)?;
        }
        let mut sets = Vec::with_capacity(keys.len());
        for key in keys {
            match self.keys.get(key, key_hash(key)).and_then(|e| e.state().set_members()).filter(|s| !s.is_empty()) {
                Some(set) => sets.push(set),
                None => return Ok(Vec::new()),
            }
        }
        sets.sort_by_key(|s| s.len());
        let limit = if limit == 0 { usize::MAX } else { limit as usize };
        let mut out = Vec::new();
        for (member, _) in sets[0].iter() {
            if out.len() >= limit {
                break;
            }
            if sets[1..].iter().all(|s| s.get(member).is_some()) {
                out.push(Bytes::copy_from_slice(member));
            }
        }
        Ok(out)
    }

    /// SMOVE with both keys on this shard.
    ///
    /// When `dst` already holds the member, only `src` changes, as in Redis: `dst` gets
    /// no new dot (so a WATCH on it holds, and a concurrent SREM of that member in
    /// another region is not overruled by this move).
    pub fn smove(&mut self, ctx: &mut WriteCtx, src: Bytes, dst: Bytes, member: Bytes) -> Frame {
        let now_ms = ctx.now_ms;
        let is_member = match self.set_members(&src, now_ms) {
            Err(error) => return error,
            Ok(None) => return Frame::Integer(0),
            Ok(Some(s)) => s.get(&member).is_some(),
        };
        let in_dst = match self.set_members(&dst, now_ms) {
            Err(error) => return error,
            Ok(members) => members.is_some_and(|s| s.get(&member).is_some()),
        };
        if src == dst || !is_member {
            return Frame::Integer(is_member as i64);
        }
        // Redis's order: `srem` (and `del`) on the source, then the destination.
        let src_event_key = self.event_key(Class::Set, &src);
        self.write_members(ctx, src, std::slice::from_ref(&member), MemberWrite::Remove);
        self.raise_collection_event(Class::Set, "srem", src_event_key);
        if !in_dst {
            let dst_event_key = self.event_key(Class::Set, &dst);
            self.write_members(ctx, dst, std::slice::from_ref(&member), MemberWrite::Add);
            self.raise_collection_event(Class::Set, "sadd", dst_event_key);
        }
        Frame::Integer(1)
    }
}

/// The event SINTERSTORE, SUNIONSTORE and SDIFFSTORE raise on their destination.
pub fn store_event(op: SetAlgebra) -> &'static str {
    match op {
        SetAlgebra::Inter => "sinterstore",
        SetAlgebra::Union => "sunionstore",
        SetAlgebra::Diff => "sdiffstore",
    }
}

/// SRANDMEMBER, by Redis's rules: no count, one member (nil for a missing key); a
/// count of 0, nothing; a negative count, that many draws with repetition; a positive
/// count, distinct members, all of them when it reaches the size.
fn random_members(members: Option<&Elements>, count: Option<i64>, limits: &EncodingLimits, picks: &mut dyn FnMut() -> u64) -> Frame {
    let Some(count) = count else {
        return members.and_then(|s| draw(s, picks)).map_or(Frame::Null, Frame::Bulk);
    };
    let Some(members) = members.filter(|s| !s.is_empty()) else {
        return Frame::Array(Vec::new());
    };
    let chosen: Vec<Bytes> = if count < 0 {
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
        ordered_members(members, limits)
    } else {
        let count = count as usize;
        let mut live: Vec<Bytes> = members.iter().map(|(m, _)| Bytes::copy_from_slice(m)).collect();
        for i in 0..count {
            let j = i + (picks() % (live.len() - i) as u64) as usize;
            live.swap(i, j);
        }
        live.truncate(count);
        live
    };
    Frame::Array(chosen.into_iter().map(Frame::Bulk).collect())
}

/// One live member at random: entries are drawn by index (tombstones skipped), and a
/// set mostly of tombstones falls back to listing its live members.
fn draw(members: &Elements, picks: &mut dyn FnMut() -> u64) -> Option<Bytes> {
    if members.is_empty() {
        return None;
    }
    for _ in 0..RANDOM_DRAWS_MAX {
        if let Some((m, _)) = members.entry_at((picks() % members.entries_len() as u64) as usize) {
            return Some(Bytes::copy_from_slice(m));
        }
    }
    members.iter().nth((picks() % members.len() as u64) as usize).map(|(m, _)| Bytes::copy_from_slice(m))
}

/// SSCAN, as HSCAN walks a hash (see `hashes::scan_fields`): a small set answers whole
/// with cursor 0 (in reply order), a big one is walked from its last entry down.
fn scan_members(members: Option<&Elements>, scan: &ElementScan, limits: &EncodingLimits) -> Frame {
    let reply = |cursor: u64, items: Vec<Frame>| Frame::Array(vec![Frame::Bulk(Bytes::from(cursor.to_string())), Frame::Array(items)]);
    let Some(members) = members else {
        return reply(0, Vec::new());
    };
    let matches = |m: &[u8]| scan.pattern.as_deref().is_none_or(|p| glob_match(p, m));
    if members.entries_len() <= ORDERED_ENTRIES_MAX {
        let items = ordered_members(members, limits).into_iter().filter(|m| matches(m)).map(Frame::Bulk).collect();
        return reply(0, items);
    }
    let len = members.entries_len() as u64;
    let mut position = if scan.cursor == 0 || scan.cursor > len { len } else { scan.cursor };
    let mut items = Vec::new();
    let mut visited = 0;
    while position > 0 && visited < scan.count {
        position -= 1;
        visited += 1;
        if let Some((m, _)) = members.entry_at(position as usize)
            && matches(m)
        {
            items.push(Frame::Bulk(Bytes::copy_from_slice(m)));
        }
    }
    reply(position, items)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use proptest::prelude::*;

    use super::*;

    fn lists_strategy() -> impl Strategy<Value = Vec<Option<Vec<u8>>>> {
        prop::collection::vec(prop::option::of(prop::collection::vec(0u8..12, 0..10)), 1..5)
    }

    fn as_lists(raw: &[Option<Vec<u8>>]) -> Vec<Option<Vec<Bytes>>> {
        raw.iter()
            .map(|l| {
                l.as_ref().map(|l| {
                    // A set's member list has no repeats.
                    let unique: BTreeSet<u8> = l.iter().copied().collect();
                    unique.into_iter().map(|m| Bytes::from(m.to_string())).collect()
                })
            })
            .collect()
    }

    fn model(op: SetAlgebra, lists: &[Option<Vec<Bytes>>]) -> BTreeSet<Bytes> {
        let sets: Vec<BTreeSet<Bytes>> = lists.iter().map(|l| l.iter().flatten().cloned().collect()).collect();
        let rest = sets[1..].iter();
        match op {
            SetAlgebra::Inter => rest.fold(sets[0].clone(), |acc, s| acc.intersection(s).cloned().collect()),
            SetAlgebra::Union => rest.fold(sets[0].clone(), |acc, s| acc.union(s).cloned().collect()),
            SetAlgebra::Diff => rest.fold(sets[0].clone(), |acc, s| acc.difference(s).cloned().collect()),
        }
    }

    proptest! {
        #[test]
        fn combine_computes_the_set_algebra_without_repeats(raw in lists_strategy(), limit in 0u64..4) {
            let lists = as_lists(&raw);
            for op in [SetAlgebra::Inter, SetAlgebra::Union, SetAlgebra::Diff] {
                let expected = model(op, &lists);
                let got = combine(op, lists.clone(), 0);
                prop_assert_eq!(got.len(), expected.len(), "{:?} repeats a member", op);
                prop_assert_eq!(got.into_iter().collect::<BTreeSet<_>>(), expected.clone());
                if op == SetAlgebra::Inter {
                    // SINTERCARD's LIMIT: at most `limit` members (0: no limit), all right ones.
                    let limited = combine(op, lists.clone(), limit);
                    let bound = if limit == 0 { expected.len() } else { expected.len().min(limit as usize) };
                    prop_assert_eq!(limited.len(), bound);
                    prop_assert!(limited.iter().all(|m| expected.contains(m)));
                }
            }
        }
    }

    #[test]
    fn reply_order_sorts_what_redis_keeps_as_an_intset_and_nothing_else() {
        let b = |s: &'static str| Bytes::from_static(s.as_bytes());
        let limits = EncodingLimits::default();
        let mut ints: Vec<Bytes> = ["10", "-3", "2"].into_iter().map(b).collect();
        reply_order(&mut ints, &limits);
        assert_eq!(ints, ["-3", "2", "10"].map(b));
        // "007" is not an integer's canonical text: a hashtable, insertion order.
        let mut mixed: Vec<Bytes> = ["10", "007", "2"].into_iter().map(b).collect();
        reply_order(&mut mixed, &limits);
        assert_eq!(mixed, ["10", "007", "2"].map(b));
        let small = EncodingLimits { set_max_intset_entries: 2, ..limits };
        let mut many: Vec<Bytes> = ["3", "1", "2"].into_iter().map(b).collect();
        reply_order(&mut many, &small);
        assert_eq!(many, ["3", "1", "2"].map(b));
    }
}
