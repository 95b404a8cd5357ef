//! List commands (LPUSH family) on one shard's keyspace, with Redis 7.0's replies.
//!
//! A list is a collection part ([`Part::List`]) whose elements are named by their
//! positions (`position.rs`): dense identifiers whose byte order is the list order, so
//! the elements held in position order (in chunks, `list_table.rs`, kept in step with
//! every local write and merge) *are* the list (DESIGN §5, row List). Each element is
//! an add-wins element whose register holds its value:
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
//! Reads by index skip whole chunks and decode one (O(index / 128 + 128), as Redis's
//! quicklist skips its nodes); LLEN is O(1), a pop at either end rewrites one chunk.
//! [`KvEngine::list_pop`] pops from a key if it holds elements: what a blocked client
//! will call once woken.

use bytes::Bytes;
use smallvec::SmallVec;

use super::collection_writes::Part;
use super::element::ElementRef;
use super::elements::Elements;
use super::list_table::{ListTable, Name};
use super::position::{self, Placement};
use super::value::{KeyKind, SetTtl};
use super::{KvEngine, StrVal, WriteCtx, key_hash};
use crate::command::errors;
use crate::command::list::{End, ListCommand, ListMulti, PosOptions};
use crate::crdt::Dot;
use crate::notify::Class;
use crate::protocol::{EncodedBulksBuilder, Frame};

fn wrong_type() -> Frame {
    errors::error(errors::WRONG_TYPE)
}

fn table(list: &Elements) -> &ListTable {
    list.list().expect("a list part is in the list form")
}

/// The value a read returns.
fn value_of(element: ElementRef<'_>) -> Bytes {
    element.read().map(|v| v.to_bytes()).unwrap_or_default()
}

/// Whether the element's value is `want` (no copy for a byte-string value).
fn value_is(element: ElementRef<'_>, want: &[u8]) -> bool {
    match element {
        ElementRef::Raw(_, value) => value == want,
        other => value_of(other) == want,
    }
}

/// Live elements in list order (`rev`: from the tail), from the `skip`-th: the order
/// every read, pop and removal walks (the simulator reads lists through it too).
pub fn walk_from(list: &Elements, skip: usize, rev: bool) -> ListWalk<'_> {
    if crate::bugs::active(crate::bugs::Bug::ListOrderByArrival) {
        return ListWalk::Arrival(arrival_order(list, rev).into_iter().skip(skip));
    }
    ListWalk::Table(table(list).walk_from(skip, rev))
}

/// [`walk_from`] the first element.
pub fn walk(list: &Elements, rev: bool) -> ListWalk<'_> {
    walk_from(list, 0, rev)
}

/// What [`walk_from`] returns: the table's own walk, or the planted bug's order. An
/// enum, not a boxed iterator: a pop walks once per command and allocates nothing
/// for it.
// The table's walk is the large variant and the one always used (the other exists only
// under a planted bug): boxing it would put back the allocation this enum removes.
#[allow(clippy::large_enum_variant)]
pub enum ListWalk<'a> {
    Table(super::list_table::Walk<'a>),
    Arrival(std::iter::Skip<std::vec::IntoIter<(Name, ElementRef<'a>)>>),
}

impl<'a> Iterator for ListWalk<'a> {
    type Item = (Name, ElementRef<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            ListWalk::Table(walk) => walk.next(),
            ListWalk::Arrival(walk) => walk.next(),
        }
    }
}

/// The planted bug `list-order-by-arrival`: positions compared by their digits alone,
/// so that concurrent inserts into one gap (equal digits, different dots) tie, and the
/// tie goes to the order in which the elements arrived here instead of their dots.
fn arrival_order(list: &Elements, rev: bool) -> Vec<(Name, ElementRef<'_>)> {
    let table = table(list);
    let arrived: std::collections::HashMap<&[u8], usize> = table.arrivals().iter().enumerate().map(|(i, n)| (n.as_slice(), i)).collect();
    let mut names: Vec<(Vec<u64>, usize, Name, ElementRef<'_>)> = table
        .walk(false, true)
        .map(|(n, e)| (position::digits(&n), arrived.get(n.as_slice()).copied().unwrap_or(usize::MAX), n, e))
        .collect();
    names.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
    let mut names: Vec<(Name, ElementRef<'_>)> = names.into_iter().map(|(_, _, n, e)| (n, e)).collect();
    if rev {
        names.reverse();
    }
    names
}

/// The live element at a Redis index (negative from the tail), if in range.
fn position_at(list: &Elements, index: i64) -> Option<(Name, ElementRef<'_>)> {
    let len = list.len() as i64;
    let index = if index < 0 { index.checked_add(len)? } else { index };
    if !(0..len).contains(&index) {
        return None;
    }
    // Walk from the nearer end.
    if index < len / 2 { walk_from(list, index as usize, false).next() } else { walk_from(list, (len - 1 - index) as usize, true).next() }
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

/// The name of the element at `end` of a list (the true end, whatever order reads see:
/// the planted bug reorders reads) and the list's length: where a push goes.
fn list_end(list: &Elements, end: End) -> (Option<Name>, usize) {
    (table(list).edge(end == End::Right), list.len())
}

fn element_value(element: &[u8]) -> StrVal {
    StrVal::from_slice(element)
}

/// Names for `count` new elements pushed at `end` of a list whose end position is
/// `edge` (the last one for the tail, the first for the head), in push order. They form
/// one block (an anchor and positions below it), so a concurrent push elsewhere never
/// lands among them: for RPUSH the first element is the anchor, for LPUSH the last (the
/// new head), each later one (earlier one) below it in list order. Inline for a push of
/// one element (the common one): its name costs no allocation.
pub(super) fn push_positions(edge: Option<&[u8]>, end: End, count: usize, dot: Dot) -> SmallVec<[Name; 1]> {
    if count == 0 {
        return SmallVec::new();
    }
    let anchor = match end {
        End::Right => position::between_inline(edge, None, dot, Placement::AfterLow),
        End::Left => position::between_inline(None, edge, dot, Placement::BeforeHigh),
    };
    let below = |k: usize| position::below_inline(&anchor, k as u64, dot);
    let mut names: SmallVec<[Name; 1]> = SmallVec::with_capacity(count);
    match end {
        End::Right => {
            names.push(Name::new());
            names.extend((1..count).map(below));
            names[0] = anchor;
        }
        End::Left => {
            names.extend((1..count).rev().map(below));
            names.push(anchor);
        }
    }
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
            ListCommand::Index { key, index } => self.list_elements(&key, now_ms).and_then(|l| match (l, index) {
                (None, _) => Ok(Frame::Null),
                (Some(_), None) => Err(errors::error(errors::NOT_INTEGER)),
                (Some(l), Some(index)) => Ok(position_at(l, index).map_or(Frame::Null, |(_, e)| Frame::Bulk(value_of(e)))),
            }),
            ListCommand::Range { key, start, stop } => self.list_elements(&key, now_ms).map(|l| {
                let Some(l) = l else { return Frame::Array(Vec::new()) };
                range_values(l, start, stop)
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
        if let Some(len) = self.push_onto_live_list(ctx, &key, end, &elements) {
            return Ok(Frame::Integer(len));
        }
        let (edge, len) = match self.list_elements(&key, ctx.now_ms)? {
            Some(list) => list_end(list, end),
            None if only_if_exists => return Ok(Frame::Integer(0)),
            None => (None, 0),
        };
        Ok(Frame::Integer(self.push_at(ctx, key, end, elements, edge, len)))
    }

    /// Push `elements` at `end` of the list `key` (created if missing; the caller has
    /// checked its type). Returns the new length.
    pub fn push_elements(&mut self, ctx: &mut WriteCtx, key: Bytes, end: End, elements: Vec<Bytes>) -> i64 {
        let (edge, len) = self.list_elements(&key, ctx.now_ms).ok().flatten().map_or((None, 0), |list| list_end(list, end));
        self.push_at(ctx, key, end, elements, edge, len)
    }

    /// [`KvEngine::push_elements`] onto a list whose `end` element is `edge` and whose
    /// length is `len` (what the caller's lookup of the key found).
    fn push_at(&mut self, ctx: &mut WriteCtx, key: Bytes, end: End, elements: Vec<Bytes>, edge: Option<Name>, len: usize) -> i64 {
        let dot = ctx.next_dot();
        let names = push_positions(edge.as_deref(), end, elements.len(), dot);
        let event_key = self.notify.key_for(&[Class::List], &key);
        // Onto a list that exists: straight to its end chunk (`list_ends.rs`).
        let pushed = len > 0 && self.push_at_end(ctx, &key, end, dot, &names, &elements);
        if !pushed {
            self.write_elements_at(ctx, dot, key, Part::List, &names, false, |i, dot, _, s| {
                s.set(dot, element_value(&elements[i]), SetTtl::Keep)
            });
        }
        self.notify.raise_for(Class::List, push_event(end), event_key.as_ref());
        (len + elements.len()) as i64
    }

    /// Pop up to `count` elements from `end` of the list `key`: `Ok(None)` if the key
    /// does not exist, WRONGTYPE if it holds another type, else the elements popped in
    /// pop order. A count of 0 pops nothing. What a blocked pop calls once its key has
    /// elements.
    pub fn list_pop(&mut self, ctx: &mut WriteCtx, key: Bytes, end: End, count: u64) -> Result<Option<Vec<Bytes>>, Frame> {
        if let Some(popped) = self.pop_at_end(ctx, &key, end, count) {
            return Ok(popped);
        }
        let Some(list) = self.list_elements(&key, ctx.now_ms)? else {
            return Ok(None);
        };
        let take = count.min(list.len() as u64) as usize;
        // The names stay inline (the write borrows them): a pop of one element copies
        // no name to the heap.
        let mut names: SmallVec<[Name; 1]> = SmallVec::with_capacity(take);
        let mut values = Vec::with_capacity(take);
        for (name, element) in walk(list, end == End::Right).take(take) {
            names.push(name);
            values.push(value_of(element));
        }
        self.remove_list_elements(ctx, key, &names, pop_event(end));
        Ok(Some(values))
    }

    /// Remove these live elements (what the write saw) at one dot, and raise the
    /// command's `event` (then `del` if the list is gone) when one went.
    fn remove_list_elements(&mut self, ctx: &mut WriteCtx, key: Bytes, names: &[impl AsRef<[u8]>], event: &'static str) {
        if !names.is_empty() {
            let event_key = self.event_key(Class::List, &key);
            self.write_elements(ctx, key, Part::List, names, false, |_, dot, _, s| s.delete(dot));
            self.raise_collection_event(Class::List, event, event_key);
        }
    }

    fn list_set(&mut self, ctx: &mut WriteCtx, key: Bytes, index: Option<i64>, element: Bytes) -> Result<Frame, Frame> {
        let Some(list) = self.list_elements(&key, ctx.now_ms)? else {
            return Err(errors::error(errors::NO_SUCH_KEY));
        };
        let index = index.ok_or_else(|| errors::error(errors::NOT_INTEGER))?;
        let Some(name) = position_at(list, index).map(|(n, _)| Bytes::copy_from_slice(&n)) else {
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
        let Some((at, _)) = walk(list, false).find(|(_, e)| value_is(*e, &pivot)) else {
            return Ok(Frame::Integer(-1));
        };
        // The pivot's neighbours in the true order (the planted bug reorders reads only).
        let mut previous: Option<Name> = None;
        let mut next: Option<Name> = None;
        {
            let mut in_order = table(list).walk(false, true);
            while let Some((name, _)) = in_order.next_entry() {
                if name == at.as_slice() {
                    next = in_order.next_entry().map(|(n, _)| Name::from_slice(n));
                    break;
                }
                previous = Some(Name::from_slice(name));
            }
        }
        let (low, high) = if before { (previous, Some(at)) } else { (Some(at), next) };
        // A position is at most one level deeper than its neighbours; past the bound a
        // peer or a recovery would refuse it, so the insert is refused here instead
        // (reaching it takes ~64 inserts per level into one gap, thousands of levels).
        let levels = |p: &Option<Name>| p.as_ref().map_or(0, |p| p.len() / position::TRIPLE_BYTES);
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
        let doomed: Vec<Bytes> =
            walk(list, count < 0).filter(|(_, e)| value_is(*e, &element)).take(limit).map(|(n, _)| Bytes::copy_from_slice(&n)).collect();
        let removed = doomed.len() as i64;
        self.remove_list_elements(ctx, key, &doomed, "lrem");
        Ok(Frame::Integer(removed))
    }

    fn list_trim(&mut self, ctx: &mut WriteCtx, key: Bytes, start: i64, stop: i64) -> Result<Frame, Frame> {
        let Some(list) = self.list_elements(&key, ctx.now_ms)? else {
            return Ok(Frame::ok());
        };
        // O(removed), from both ends, as Redis trims.
        let name = |(n, _): (Name, ElementRef<'_>)| Bytes::copy_from_slice(&n);
        let doomed: Vec<Bytes> = match normalise_range(start, stop, list.len() as i64) {
            None => walk(list, false).map(name).collect(),
            Some((start, stop)) => walk(list, false).take(start).chain(walk(list, true).take(list.len() - 1 - stop)).map(name).collect(),
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
        Ok(self.list_elements(key, now_ms)?.map(|l| walk(l, false).map(|(_, e)| value_of(e)).collect()))
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

/// Up to `take` live elements from the `skip`-th (`rev`: from the tail), in walk
/// order: [`walk_from`] without copying each name out (a read that wants values only).
fn for_each_value(list: &Elements, skip: usize, rev: bool, take: usize, mut f: impl FnMut(ElementRef<'_>)) {
    if crate::bugs::active(crate::bugs::Bug::ListOrderByArrival) {
        return walk_from(list, skip, rev).take(take).for_each(|(_, e)| f(e));
    }
    let mut walk = table(list).walk_from(skip, rev);
    for _ in 0..take {
        let Some((_, element)) = walk.next_entry() else { break };
        f(element);
    }
}

/// The values LRANGE returns, in order, written straight into one encoded reply
/// (one allocation per reply, no `Frame` per element).
fn range_values(list: &Elements, start: i64, stop: i64) -> Frame {
    let len = list.len() as i64;
    let Some((start, stop)) = normalise_range(start, stop, len) else {
        return Frame::Array(Vec::new());
    };
    let take = stop - start + 1;
    let mut reply = EncodedBulksBuilder::with_capacity(take, take * RANGE_ELEMENT_BYTES_ESTIMATE);
    // From the nearer end, as Redis does.
    let rev = start as i64 > len - 1 - stop as i64;
    if !rev {
        for_each_value(list, start, false, take, |element| push_value(&mut reply, element));
        return Frame::Bulks(reply.finish());
    }
    // Walked from the tail, the values come last first: gather them, then write them
    // in order.
    let mut buffer: Vec<u8> = Vec::new();
    let mut ends: Vec<usize> = Vec::with_capacity(take);
    for_each_value(list, len as usize - 1 - stop, true, take, |element| {
        match element {
            ElementRef::Raw(_, value) => buffer.extend_from_slice(value),
            ElementRef::Int(_, n) => buffer.extend_from_slice(itoa::Buffer::new().format(n).as_bytes()),
            full => buffer.extend_from_slice(&value_of(full)),
        }
        ends.push(buffer.len());
    });
    for (i, &end) in ends.iter().enumerate().rev() {
        let begin = if i == 0 { 0 } else { ends[i - 1] };
        reply.push(&buffer[begin..end]);
    }
    Frame::Bulks(reply.finish())
}

/// What one LRANGE element is assumed to take, to size the reply's one allocation
/// (it grows if the elements are longer).
const RANGE_ELEMENT_BYTES_ESTIMATE: usize = 16;

fn push_value(reply: &mut EncodedBulksBuilder, element: ElementRef<'_>) {
    match element {
        ElementRef::Raw(_, value) => reply.push(value),
        ElementRef::Int(_, n) => reply.push_integer(n),
        full => reply.push(&value_of(full)),
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
    for (i, (_, e)) in walk(list, rev).take(scan).enumerate() {
        if !value_is(e, element) {
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

// The pushes and pops that reach a chunk end directly (no lookup by name).
#[path = "list_ends.rs"]
mod list_ends;

#[cfg(test)]
#[path = "list_pop_tests.rs"]
mod list_pop_tests;
