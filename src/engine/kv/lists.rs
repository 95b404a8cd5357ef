//! List commands (LPUSH family) on one shard's keyspace, with Redis 7.0's replies.
//!
//! A list is a collection part ([`Part::List`]) whose elements are named by their
//! positions (`position.rs`): dense identifiers whose byte order is the list order, so
//! the elements' position index (kept by [`Elements`] in step with every local write
//! and merge) *is* the list (DESIGN §5, row List). Each element is an add-wins element
//! whose register holds its value:
//!
//! - a push makes new elements at new positions between the end and its neighbour,
//!   named after the push's dot, and ships only them (element-sized deltas, like HSET);
//!   concurrent pushes at one end from several regions all survive, ordered by their
//!   dots, the same way everywhere, each push's elements together;
//! - LSET writes the element's register at a new dot (last writer wins);
//! - LPOP, RPOP, LREM, LTRIM remove exactly the elements they saw (their contexts): an
//!   element pushed concurrently survives, and two regions popping the same head
//!   concurrently both return it (a pop is at-least-once across regions);
//! - DEL removes what it saw: a concurrent push survives it.
//!
//! Reads by index walk the position index (O(index), as Redis's quicklist walks its
//! nodes); LLEN is O(1), a pop at either end O(log n). [`KvEngine::list_pop`] pops from
//! a key if it holds elements: what a blocked client will call once woken.

use bytes::Bytes;

use super::collection_writes::Part;
use super::elements::Elements;
use super::position::{self, Placement};
use super::value::{KeyKind, SetTtl};
use super::{KvEngine, StrVal, WriteCtx, key_hash};
use crate::command::errors;
use crate::command::list::{End, ListCommand, ListMulti, PosOptions};
use crate::crdt::Dot;
use crate::notify::Class;
use crate::protocol::Frame;

fn wrong_type() -> Frame {
    errors::error(errors::WRONG_TYPE)
}

fn positions_of(list: &Elements) -> &std::collections::BTreeSet<Bytes> {
    list.positions().expect("a list part keeps its position index")
}

/// The element at a position (live: the index only holds live ones).
fn value_at(list: &Elements, name: &Bytes) -> Bytes {
    list.get(name).and_then(|s| s.read()).map(|v| v.to_bytes()).unwrap_or_default()
}

/// Live positions in list order (`rev`: from the tail): the order every read, pop and
/// removal walks (the simulator reads lists through it too).
pub fn walk(list: &Elements, rev: bool) -> Box<dyn Iterator<Item = &Bytes> + '_> {
    if crate::bugs::active(crate::bugs::Bug::ListOrderByArrival) {
        return Box::new(arrival_order(list, rev).into_iter());
    }
    let positions = positions_of(list).iter();
    if rev { Box::new(positions.rev()) } else { Box::new(positions) }
}

/// The planted bug `list-order-by-arrival`: positions compared by their digits alone,
/// so that concurrent inserts into one gap (equal digits, different dots) tie, and the
/// tie goes to the order in which the elements arrived here instead of their dots.
fn arrival_order(list: &Elements, rev: bool) -> Vec<&Bytes> {
    let mut names: Vec<(Vec<u64>, usize, &Bytes)> =
        list.keyed_entries().enumerate().filter(|(_, (_, s))| s.exists()).map(|(i, (n, _))| (position::digits(n), i, n)).collect();
    names.sort();
    let mut names: Vec<&Bytes> = names.into_iter().map(|(_, _, n)| n).collect();
    if rev {
        names.reverse();
    }
    names
}

/// The position at a Redis index (negative from the tail), if in range.
fn position_at(list: &Elements, index: i64) -> Option<&Bytes> {
    let len = list.len() as i64;
    let index = if index < 0 { index.checked_add(len)? } else { index };
    if !(0..len).contains(&index) {
        return None;
    }
    // Walk from the nearer end.
    if index < len / 2 { walk(list, false).nth(index as usize) } else { walk(list, true).nth((len - 1 - index) as usize) }
}

/// Redis's range normalisation (LRANGE, LTRIM): `Some((start, stop))` inclusive, or
/// `None` for an empty range.
fn normalise_range(start: i64, stop: i64, len: i64) -> Option<(usize, usize)> {
    let start = if start < 0 { (len + start).max(0) } else { start };
    let stop = if stop < 0 { len + stop } else { stop };
    if start > stop || start >= len {
        return None;
    }
    Some((start as usize, stop.min(len - 1) as usize))
}

fn element_value(element: &Bytes) -> StrVal {
    StrVal::from_bytes(element.clone())
}

/// Names for `count` new elements pushed at `end` of a list whose end position is
/// `edge` (the last one for the tail, the first for the head), in push order. They form
/// one block (an anchor and positions below it), so a concurrent push elsewhere never
/// lands among them: for RPUSH the first element is the anchor, for LPUSH the last (the
/// new head), each later one (earlier one) below it in list order.
fn push_positions(edge: Option<&Bytes>, end: End, count: usize, dot: Dot) -> Vec<Bytes> {
    if count == 0 {
        return Vec::new();
    }
    let anchor = match end {
        End::Right => position::between(edge.map(|e| e.as_ref()), None, dot, Placement::AfterLow),
        End::Left => position::between(None, edge.map(|e| e.as_ref()), dot, Placement::BeforeHigh),
    };
    let below = |k: usize| Bytes::from(position::below(&anchor, k as u64, dot));
    let names: Vec<Bytes> = match end {
        End::Right => std::iter::once(Bytes::from(anchor.clone())).chain((1..count).map(below)).collect(),
        End::Left => (1..count).rev().map(below).chain(std::iter::once(Bytes::from(anchor.clone()))).collect(),
    };
    debug_assert!(match end {
        End::Right => names.windows(2).all(|w| w[0] < w[1]),
        End::Left => names.windows(2).all(|w| w[0] > w[1]),
    });
    names
}

impl KvEngine {
    /// The elements of a live list key: `Ok(None)` if the key does not exist,
    /// WRONGTYPE if it holds another type.
    fn list_elements(&mut self, key: &[u8], now_ms: u64) -> Result<Option<&Elements>, Frame> {
        match self.live(key, key_hash(key), now_ms) {
            None => Ok(None),
            Some(state) if state.kind() == Some(KeyKind::List) => Ok(state.list_elements()),
            Some(_) => Err(wrong_type()),
        }
    }

    /// Execute a list command.
    pub fn list_command(&mut self, ctx: &mut WriteCtx, cmd: ListCommand) -> Frame {
        let now_ms = ctx.now_ms;
        let result = match cmd {
            ListCommand::Push { key, end, elements, only_if_exists } => self.list_push(ctx, key, end, elements, only_if_exists),
            ListCommand::Pop { key, end, count } => self.list_pop(ctx, key, end, count.unwrap_or(1)).map(|popped| match (popped, count) {
                (None, None) => Frame::Null,
                (None, Some(_)) => Frame::NullArray,
                (Some(mut popped), None) => popped.pop().map_or(Frame::Null, Frame::Bulk),
                (Some(popped), Some(_)) => Frame::Array(popped.into_iter().map(Frame::Bulk).collect()),
            }),
            ListCommand::Len(key) => self.list_elements(&key, now_ms).map(|l| Frame::Integer(l.map_or(0, |l| l.len()) as i64)),
            ListCommand::Index { key, index } => self
                .list_elements(&key, now_ms)
                .map(|l| l.and_then(|l| position_at(l, index).map(|p| Frame::Bulk(value_at(l, p)))).unwrap_or(Frame::Null)),
            ListCommand::Range { key, start, stop } => self.list_elements(&key, now_ms).map(|l| {
                let Some(l) = l else { return Frame::Array(Vec::new()) };
                Frame::Array(range_positions(l, start, stop).into_iter().map(|p| Frame::Bulk(value_at(l, &p))).collect())
            }),
            ListCommand::Set { key, index, element } => self.list_set(ctx, key, index, element),
            ListCommand::Insert { key, before, pivot, element } => self.list_insert(ctx, key, before, pivot, element),
            ListCommand::Rem { key, count, element } => self.list_rem(ctx, key, count, element),
            ListCommand::Trim { key, start, stop } => self.list_trim(ctx, key, start, stop),
            ListCommand::Pos { key, element, options } => self.list_elements(&key, now_ms).map(|l| list_pos(l, &element, options)),
        };
        result.unwrap_or_else(|error| error)
    }

    /// LPUSH/RPUSH (and the X forms): the new length.
    fn list_push(&mut self, ctx: &mut WriteCtx, key: Bytes, end: End, elements: Vec<Bytes>, only_if_exists: bool) -> Result<Frame, Frame> {
        let existing = self.list_elements(&key, ctx.now_ms)?;
        if existing.is_none() && only_if_exists {
            return Ok(Frame::Integer(0));
        }
        Ok(Frame::Integer(self.push_elements(ctx, key, end, elements)))
    }

    /// Push `elements` at `end` of the list `key` (created if missing; the caller has
    /// checked its type). Returns the new length.
    pub fn push_elements(&mut self, ctx: &mut WriteCtx, key: Bytes, end: End, elements: Vec<Bytes>) -> i64 {
        let dot = ctx.next_dot();
        let (edge, len) = match self.list_elements(&key, ctx.now_ms).ok().flatten() {
            Some(list) => {
                let positions = positions_of(list);
                let edge = if end == End::Right { positions.last() } else { positions.first() };
                (edge.cloned(), list.len())
            }
            None => (None, 0),
        };
        let names = push_positions(edge.as_ref(), end, elements.len(), dot);
        let event_key = self.notify.key_for(&[Class::List], &key);
        self.write_elements_at(ctx, dot, key, Part::List, &names, false, |i, dot, _, s| {
            s.set(dot, element_value(&elements[i]), SetTtl::Keep)
        });
        self.notify.raise_for(Class::List, push_event(end), event_key.as_ref());
        (len + elements.len()) as i64
    }

    /// Pop up to `count` elements from `end` of the list `key`: `Ok(None)` if the key
    /// does not exist, WRONGTYPE if it holds another type, else the elements popped in
    /// pop order. A count of 0 pops nothing. What a blocked pop calls once its key has
    /// elements.
    pub fn list_pop(&mut self, ctx: &mut WriteCtx, key: Bytes, end: End, count: u64) -> Result<Option<Vec<Bytes>>, Frame> {
        let Some(list) = self.list_elements(&key, ctx.now_ms)? else {
            return Ok(None);
        };
        let take = count.min(list.len() as u64) as usize;
        let (names, values): (Vec<Bytes>, Vec<Bytes>) =
            walk(list, end == End::Right).take(take).map(|p| (p.clone(), value_at(list, p))).unzip();
        self.remove_list_elements(ctx, key, &names, pop_event(end));
        Ok(Some(values))
    }

    /// Remove these live elements (what the write saw) at one dot, and raise the
    /// command's `event` (then `del` if the list is gone) when one went.
    fn remove_list_elements(&mut self, ctx: &mut WriteCtx, key: Bytes, names: &[Bytes], event: &'static str) {
        if !names.is_empty() {
            let event_key = self.event_key(Class::List, &key);
            self.write_elements(ctx, key, Part::List, names, false, |_, dot, _, s| s.delete(dot));
            self.raise_collection_event(Class::List, event, event_key);
        }
    }

    fn list_set(&mut self, ctx: &mut WriteCtx, key: Bytes, index: i64, element: Bytes) -> Result<Frame, Frame> {
        let Some(list) = self.list_elements(&key, ctx.now_ms)? else {
            return Err(errors::error(errors::NO_SUCH_KEY));
        };
        let Some(name) = position_at(list, index).cloned() else {
            return Err(Frame::static_error("ERR index out of range"));
        };
        let event_key = self.notify.key_for(&[Class::List], &key);
        self.write_elements(ctx, key, Part::List, &[name], false, |_, dot, _, s| s.set(dot, element_value(&element), SetTtl::Keep));
        self.notify.raise_for(Class::List, "lset", event_key.as_ref());
        Ok(Frame::ok())
    }

    fn list_insert(&mut self, ctx: &mut WriteCtx, key: Bytes, before: bool, pivot: Bytes, element: Bytes) -> Result<Frame, Frame> {
        let Some(list) = self.list_elements(&key, ctx.now_ms)? else {
            return Ok(Frame::Integer(0));
        };
        let Some(at) = walk(list, false).find(|p| value_at(list, p) == pivot).cloned() else {
            return Ok(Frame::Integer(-1));
        };
        let positions = positions_of(list);
        let (low, high) = if before {
            (positions.range(..at.clone()).next_back().cloned(), Some(at))
        } else {
            let next = positions.range((std::ops::Bound::Excluded(at.clone()), std::ops::Bound::Unbounded)).next().cloned();
            (Some(at), next)
        };
        // A position is at most one level deeper than its neighbours; past the bound a
        // peer or a recovery would refuse it, so the insert is refused here instead
        // (reaching it takes ~64 inserts per level into one gap, thousands of levels).
        let levels = |p: &Option<Bytes>| p.as_ref().map_or(0, |p| p.len() / position::TRIPLE_BYTES);
        if levels(&low).max(levels(&high)) >= position::LEVELS_MAX {
            return Err(Frame::static_error("ERR too many inserts at this place of the list: its positions are as deep as they may be"));
        }
        let len = list.len() as i64 + 1;
        let dot = ctx.next_dot();
        // At an end, insert as a push does there (digits stay dense; a midpoint towards
        // the end of the digit space would run out of room after ~64 inserts).
        let placement = match (&low, &high) {
            (_, None) => Placement::AfterLow,
            (None, _) => Placement::BeforeHigh,
            _ => Placement::Middle,
        };
        let name = Bytes::from(position::between(low.as_deref(), high.as_deref(), dot, placement));
        let event_key = self.notify.key_for(&[Class::List], &key);
        self.write_elements_at(ctx, dot, key, Part::List, &[name], false, |_, dot, _, s| s.set(dot, element_value(&element), SetTtl::Keep));
        self.notify.raise_for(Class::List, "linsert", event_key.as_ref());
        Ok(Frame::Integer(len))
    }

    fn list_rem(&mut self, ctx: &mut WriteCtx, key: Bytes, count: i64, element: Bytes) -> Result<Frame, Frame> {
        let Some(list) = self.list_elements(&key, ctx.now_ms)? else {
            return Ok(Frame::Integer(0));
        };
        let limit = if count == 0 { usize::MAX } else { count.unsigned_abs().min(usize::MAX as u64) as usize };
        let doomed: Vec<Bytes> = walk(list, count < 0).filter(|p| value_at(list, p) == element).take(limit).cloned().collect();
        let removed = doomed.len() as i64;
        self.remove_list_elements(ctx, key, &doomed, "lrem");
        Ok(Frame::Integer(removed))
    }

    fn list_trim(&mut self, ctx: &mut WriteCtx, key: Bytes, start: i64, stop: i64) -> Result<Frame, Frame> {
        let Some(list) = self.list_elements(&key, ctx.now_ms)? else {
            return Ok(Frame::ok());
        };
        // O(removed), from both ends, as Redis trims.
        let doomed: Vec<Bytes> = match normalise_range(start, stop, list.len() as i64) {
            None => walk(list, false).cloned().collect(),
            Some((start, stop)) => walk(list, false).take(start).chain(walk(list, true).take(list.len() - 1 - stop)).cloned().collect(),
        };
        // Redis notifies `ltrim` even when nothing was trimmed.
        if doomed.is_empty() {
            self.notify.raise(Class::List, "ltrim", &key);
        }
        self.remove_list_elements(ctx, key, &doomed, "ltrim");
        Ok(Frame::ok())
    }

    /// Each key's elements in order (`None` for a missing key), for LMOVE across
    /// shards and RENAME; WRONGTYPE if a key holds another type.
    pub fn list_values(&mut self, key: &[u8], now_ms: u64) -> Result<Option<Vec<Bytes>>, Frame> {
        Ok(self.list_elements(key, now_ms)?.map(|l| walk(l, false).map(|p| value_at(l, p)).collect()))
    }

    /// A multi-key list command whose keys are all on this shard.
    pub fn list_multi(&mut self, ctx: &mut WriteCtx, cmd: ListMulti) -> Frame {
        match cmd {
            ListMulti::Move { src, dst, from, to } => self.list_move(ctx, src, dst, from, to),
            ListMulti::MPop { keys, end, count } => {
                for key in keys {
                    match self.list_pop(ctx, key.clone(), end, count) {
                        Err(error) => return error,
                        Ok(None) => continue,
                        Ok(Some(popped)) => {
                            return Frame::Array(vec![Frame::Bulk(key), Frame::Array(popped.into_iter().map(Frame::Bulk).collect())]);
                        }
                    }
                }
                Frame::NullArray
            }
        }
    }

    /// LMOVE/RPOPLPUSH with both keys here, with Redis's checks in its order: a missing
    /// source answers nil, then both types are checked before anything moves.
    fn list_move(&mut self, ctx: &mut WriteCtx, src: Bytes, dst: Bytes, from: End, to: End) -> Frame {
        match self.list_elements(&src, ctx.now_ms) {
            Err(error) => return error,
            Ok(None) => return Frame::Null,
            Ok(Some(_)) => {}
        }
        let dst_existed = match self.list_elements(&dst, ctx.now_ms) {
            Err(error) => return error,
            Ok(list) => list.is_some(),
        };
        // Redis raises the push on `dst` before the pop on `src` (and `del` if it went),
        // and a rotation of a one-element list neither deletes nor adds the key: the
        // steps run quietly and their events are raised here, in that order.
        let src_key = self.event_key(Class::List, &src);
        let dst_key = self.notify.key_for(&[Class::List, Class::New], &dst);
        let dst_is_new = !dst_existed && src != dst;
        let was_quiet = self.notify.set_quiet(true);
        let moved = match self.list_pop(ctx, src.clone(), from, 1) {
            Ok(Some(mut popped)) if !popped.is_empty() => {
                let element = popped.remove(0);
                self.push_elements(ctx, dst, to, vec![element.clone()]);
                Frame::Bulk(element)
            }
            Ok(_) => Frame::Null,
            Err(error) => error,
        };
        self.notify.set_quiet(was_quiet);
        if let Frame::Bulk(_) = moved {
            if dst_is_new {
                self.notify.raise_for(Class::New, "new", dst_key.as_ref());
            }
            self.notify.raise_for(Class::List, push_event(to), dst_key.as_ref());
            self.raise_collection_event(Class::List, pop_event(from), src_key);
        }
        moved
    }

    /// Replace `key` with a list of `elements` (RENAME, COPY, RESTORE): the old key
    /// goes whole at `dot`'s write; the caller commits.
    pub(super) fn list_state(dot: Dot, state: &mut super::KeyState, elements: Vec<Bytes>) {
        let names = push_positions(None, End::Right, elements.len(), dot);
        let list = state.part_mut(Part::List);
        for (name, element) in names.iter().zip(elements) {
            list.write(name, |s| s.set(dot, StrVal::from_bytes(element), SetTtl::Keep));
        }
    }
}

/// The event a push at `end` raises (LPUSH, RPUSH, their X forms, LMOVE's push).
pub fn push_event(end: End) -> &'static str {
    if end == End::Left { "lpush" } else { "rpush" }
}

/// The event a pop from `end` raises (LPOP, RPOP, LMPOP, the blocking pops, LMOVE's pop).
pub fn pop_event(end: End) -> &'static str {
    if end == End::Left { "lpop" } else { "rpop" }
}

/// The positions LRANGE names, in order.
fn range_positions(list: &Elements, start: i64, stop: i64) -> Vec<Bytes> {
    let len = list.len() as i64;
    let Some((start, stop)) = normalise_range(start, stop, len) else {
        return Vec::new();
    };
    // From the nearer end, as Redis does.
    if start as i64 > len - 1 - stop as i64 {
        let mut picked: Vec<Bytes> = walk(list, true).skip(len as usize - 1 - stop).take(stop - start + 1).cloned().collect();
        picked.reverse();
        picked
    } else {
        walk(list, false).skip(start).take(stop - start + 1).cloned().collect()
    }
}

/// LPOS: positions of `element` by Redis's rules (RANK, COUNT, MAXLEN).
fn list_pos(list: Option<&Elements>, element: &Bytes, options: PosOptions) -> Frame {
    let Some(list) = list else {
        return if options.count.is_some() { Frame::Array(Vec::new()) } else { Frame::Null };
    };
    let len = list.len();
    let rev = options.rank < 0;
    // Redis negates LONG_MIN into itself: every match then counts from the first.
    let skip = if options.rank == i64::MIN { 0 } else { options.rank.unsigned_abs() - 1 };
    let want = match options.count {
        None | Some(0) => usize::MAX,
        Some(n) => n.min(usize::MAX as u64) as usize,
    };
    let want = if options.count.is_none() { 1 } else { want };
    let scan = if options.maxlen == 0 { len } else { (options.maxlen.min(len as u64)) as usize };
    let mut found = Vec::new();
    let mut matches: u64 = 0;
    for (i, p) in walk(list, rev).take(scan).enumerate() {
        if value_at(list, p) != *element {
            continue;
        }
        matches += 1;
        if matches > skip {
            let index = if rev { len - 1 - i } else { i };
            found.push(Frame::Integer(index as i64));
            if found.len() >= want {
                break;
            }
        }
    }
    match options.count {
        Some(_) => Frame::Array(found),
        None => found.pop().unwrap_or(Frame::Null),
    }
}
