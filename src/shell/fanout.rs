//! Commands that touch several shards: multi-key commands and whole-keyspace commands.
//!
//! Reads and per-key writes fan out to the shards concerned and gather the replies in
//! request order. Commands whose meaning needs all their keys at once (MSETNX, RENAME,
//! RENAMENX, COPY) run on one shard when their keys share it, and otherwise through the
//! coordinator, which parks the shards involved so the command is atomic on this node.
//! MSET, MGET, DEL, EXISTS and TOUCH across shards are applied per shard: each shard's
//! part is atomic, the whole is not (see docs/semantics.md).

use bytes::Bytes;

use super::shards::Shards;
use crate::command::bits::BitOp;
use crate::command::lcs::{self, LcsCommand};
use crate::command::{KeyCommand, KeyspaceCommand, MultiKeyCommand, SetAlgebra, SetCommand, SetOutput};
use crate::engine::kv::keyspace::SLOT_SPACE;
use crate::notify::{self, Class, KeyEvent};
use crate::protocol::Frame;
use crate::shard::{ShardOp, ShardReply};
use crate::shell::coordinator::Parked;

/// A coordinator's internal step (a probe, RENAME's delete of its source): it raises
/// no keyspace notification of its own; the command's are raised by `ShardOp::Notify`.
pub fn quiet(op: ShardOp) -> ShardOp {
    ShardOp::Quiet(Box::new(op))
}

/// Whether keyspace notifications are on: a command across shards asks before paying
/// for the steps that only decide its events.
pub fn notifying(access: &impl Shards) -> bool {
    access.state().runtime.notify_keyspace_events() != notify::Flags::NONE
}

/// One op per shard group, `positions[g]` the argument positions of group `g`'s keys.
/// With notifications on and several groups, each part runs one key at a time and the
/// events come back with it: they are published here, in argument order, before the
/// reply (see `shell::notify::unsplit` for `until_wrong_type`). Otherwise each shard
/// publishes its part's events itself.
pub async fn run_in_order(
    access: &impl Shards,
    groups: Vec<(usize, ShardOp)>,
    positions: &[Vec<usize>],
    until_wrong_type: bool,
) -> Vec<ShardReply> {
    let split = groups.len() > 1 && notifying(access);
    let ops = groups.into_iter().map(|(shard, op)| (shard, super::notify::split(op, split))).collect();
    let replies = access.run_groups(ops).await;
    if !split {
        return replies;
    }
    let (replies, events) = super::notify::unsplit(replies, positions, until_wrong_type);
    super::notify::publish(access.state(), events);
    replies
}

/// [`run_in_order`] for a coordinator's step (the shards parked): the events are
/// raised on shard `on` (published at once, before the command's next step).
pub fn read_in_order(
    parked: &mut Parked,
    groups: Vec<(usize, ShardOp)>,
    positions: &[Vec<usize>],
    notifying: bool,
    on: usize,
) -> Vec<ShardReply> {
    let split = groups.len() > 1 && notifying;
    let replies: Vec<ShardReply> = groups.into_iter().map(|(shard, op)| parked.apply(shard, super::notify::split(op, split))).collect();
    if !split {
        return replies;
    }
    let (replies, events) = super::notify::unsplit(replies, positions, true);
    if !events.is_empty() {
        parked.apply(on, ShardOp::Notify(events));
    }
    replies
}

fn count(reply: &ShardReply) -> Result<i64, Frame> {
    match reply {
        ShardReply::Count(n) => Ok(*n),
        ShardReply::Frame(f @ Frame::Error(_)) => Err(f.clone()),
        _ => Ok(0),
    }
}

fn sum_counts(replies: &[ShardReply]) -> Frame {
    let mut total = 0;
    for reply in replies {
        match count(reply) {
            Ok(n) => total += n,
            Err(e) => return e,
        }
    }
    Frame::Integer(total)
}

pub async fn multi(access: &impl Shards, command: MultiKeyCommand) -> Frame {
    match command {
        MultiKeyCommand::MGet(keys) => {
            let total = keys.len();
            let groups = access.group(keys, |k| k);
            let (ops, positions): (Vec<_>, Vec<_>) = groups.into_iter().map(|(s, (keys, pos))| ((s, ShardOp::MGet(keys)), pos)).unzip();
            let replies = run_in_order(access, ops, &positions, false).await;
            let mut values = vec![Frame::Null; total];
            for (reply, positions) in replies.into_iter().zip(positions) {
                match reply {
                    ShardReply::Frame(Frame::Array(items)) => {
                        for (item, position) in items.into_iter().zip(positions) {
                            values[position] = item;
                        }
                    }
                    other => return other.into_frame(),
                }
            }
            Frame::Array(values)
        }
        MultiKeyCommand::MSet(pairs) => {
            let groups = access.group(pairs, |p| &p.0);
            let (ops, positions): (Vec<_>, Vec<_>) = groups.into_iter().map(|(s, (pairs, pos))| ((s, ShardOp::MSet(pairs)), pos)).unzip();
            let replies = run_in_order(access, ops, &positions, false).await;
            replies.into_iter().map(ShardReply::into_frame).find(Frame::is_error).unwrap_or(Frame::ok())
        }
        MultiKeyCommand::Del(keys) => {
            let groups = access.group(keys, |k| k);
            let (ops, positions): (Vec<_>, Vec<_>) = groups.into_iter().map(|(s, (keys, pos))| ((s, ShardOp::Del(keys)), pos)).unzip();
            sum_counts(&run_in_order(access, ops, &positions, false).await)
        }
        MultiKeyCommand::Exists(keys) | MultiKeyCommand::Touch(keys) => {
            let groups = access.group(keys, |k| k);
            let (ops, positions): (Vec<_>, Vec<_>) =
                groups.into_iter().map(|(s, (keys, pos))| ((s, ShardOp::CountExisting(keys)), pos)).unzip();
            sum_counts(&run_in_order(access, ops, &positions, false).await)
        }
        MultiKeyCommand::MSetNx(pairs) => {
            // Across shards the writes run quietly and the events follow in argument
            // order, as Redis raises them.
            let events = notifying(access).then(|| notify::set_all_new(pairs.iter().map(|p| &p.0)));
            let groups: Vec<(usize, Vec<(Bytes, Bytes)>)> = access.group(pairs, |p| &p.0).into_iter().map(|(s, (p, _))| (s, p)).collect();
            if let [(shard, _)] = groups[..] {
                let pairs = groups.into_iter().next().map(|g| g.1).unwrap_or_default();
                return access.run_one(shard, ShardOp::MSetNx(pairs)).await.into_frame();
            }
            let shards = groups.iter().map(|g| g.0).collect();
            access
                .run_atomic(shards, move |parked| {
                    for (shard, pairs) in &groups {
                        let keys = pairs.iter().map(|p| p.0.clone()).collect();
                        match count(&parked.apply(*shard, quiet(ShardOp::CountExisting(keys)))) {
                            Ok(0) => {}
                            Ok(_) => return Frame::Integer(0),
                            Err(e) => return e,
                        }
                    }
                    let last = groups.last().map_or(0, |g| g.0);
                    for (shard, pairs) in groups {
                        let reply = parked.apply(shard, quiet(ShardOp::MSet(pairs))).into_frame();
                        if reply.is_error() {
                            return reply;
                        }
                    }
                    if let Some(events) = events {
                        parked.apply(last, ShardOp::Notify(events));
                    }
                    Frame::Integer(1)
                })
                .await
        }
        MultiKeyCommand::Rename { src, dst, nx } => {
            let (from, to) = (access.shard_of(&src), access.shard_of(&dst));
            if from == to {
                return access.run_one(from, ShardOp::Rename { src, dst, nx }).await.into_frame();
            }
            let notifying = notifying(access);
            access
                .run_atomic(vec![from, to], move |parked| {
                    // RENAME's lookup of its source raises no `keymiss` (Redis's does not).
                    let snapshot = match parked.apply(from, quiet(ShardOp::Snapshot(src.clone()))) {
                        ShardReply::Snapshot(Some(snapshot)) => snapshot,
                        ShardReply::Snapshot(None) => return crate::engine::kv::KvEngine::no_such_key(),
                        other => return other.into_frame(),
                    };
                    let events = if notifying { notify::renamed(&src, &dst) } else { Vec::new() };
                    match parked.apply(to, ShardOp::Restore { key: dst, snapshot, replace: !nx }) {
                        ShardReply::Restored(true) => {}
                        ShardReply::Restored(false) => return Frame::Integer(0),
                        other => return other.into_frame(),
                    }
                    if let Err(e) = count(&parked.apply(from, quiet(ShardOp::Del(vec![src])))) {
                        return e;
                    }
                    if !events.is_empty() {
                        parked.apply(from, ShardOp::Notify(events));
                    }
                    if nx { Frame::Integer(1) } else { Frame::ok() }
                })
                .await
        }
        MultiKeyCommand::Copy { src, dst, replace } => {
            let (from, to) = (access.shard_of(&src), access.shard_of(&dst));
            if from == to {
                return access.run_one(from, ShardOp::Copy { src, dst, replace }).await.into_frame();
            }
            let notifying = notifying(access);
            access
                .run_atomic(vec![from, to], move |parked| {
                    let snapshot = match parked.apply(from, ShardOp::Snapshot(src)) {
                        ShardReply::Snapshot(Some(snapshot)) => snapshot,
                        ShardReply::Snapshot(None) => return Frame::Integer(0),
                        other => return other.into_frame(),
                    };
                    let events = if notifying { notify::copied(&dst) } else { Vec::new() };
                    match parked.apply(to, ShardOp::Restore { key: dst, snapshot, replace }) {
                        ShardReply::Restored(done) => {
                            if done && !events.is_empty() {
                                parked.apply(to, ShardOp::Notify(events));
                            }
                            Frame::Integer(done as i64)
                        }
                        other => other.into_frame(),
                    }
                })
                .await
        }
        MultiKeyCommand::SetMove { src, dst, member } => set_move(access, src, dst, member).await,
        MultiKeyCommand::Sort(cmd) => super::sort::sort(access, *cmd).await,
        MultiKeyCommand::SetAlgebra { op, keys, output } => set_algebra(access, op, keys, output).await,
        MultiKeyCommand::Zset(cmd) => super::zset_fanout::zset_multi(access, cmd).await,
        MultiKeyCommand::List(cmd) => super::list_fanout::list_multi(access, cmd).await,
        MultiKeyCommand::BitOp { op, dst, keys } => bitop(access, op, dst, keys).await,
        MultiKeyCommand::Lcs(cmd) => lcs(access, *cmd).await,
        MultiKeyCommand::StreamRead(read) => stream_read(access, read).await,
    }
}

/// SMOVE: on one shard when both keys are there; across shards under the coordinator,
/// with Redis's checks in Redis's order (a missing source answers 0 before the
/// destination's type is looked at).
async fn set_move(access: &impl Shards, src: Bytes, dst: Bytes, member: Bytes) -> Frame {
    let (from, to) = (access.shard_of(&src), access.shard_of(&dst));
    if from == to {
        return access.run_one(from, ShardOp::SetMove { src, dst, member }).await.into_frame();
    }
    access
        .run_atomic(vec![from, to], move |parked| {
            // TYPE of both keys, then SREM: O(1) whatever the sets' sizes.
            let type_of = |parked: &mut crate::shell::coordinator::Parked, shard: usize, key: &Bytes| match parked
                .apply(shard, quiet(ShardOp::Key(KeyCommand::Type(key.clone()))))
            {
                ShardReply::Frame(Frame::Simple(name)) => Ok(name),
                other => Err(other.into_frame()),
            };
            let wrong_type = || crate::command::errors::error(crate::command::errors::WRONG_TYPE);
            match type_of(parked, from, &src) {
                Ok(name) if name.as_ref() == b"none" => return Frame::Integer(0),
                Ok(name) if name.as_ref() == b"set" => {}
                Ok(_) => return wrong_type(),
                Err(error) => return error,
            }
            match type_of(parked, to, &dst) {
                Ok(name) if name.as_ref() == b"none" || name.as_ref() == b"set" => {}
                Ok(_) => return wrong_type(),
                Err(error) => return error,
            }
            let rem = SetCommand::Rem { key: src, members: vec![member.clone()] };
            let reply = parked.apply(from, ShardOp::Key(KeyCommand::SetFamily(rem))).into_frame();
            if reply != Frame::Integer(1) {
                return if reply.is_error() { reply } else { Frame::Integer(0) };
            }
            // A destination that holds the member already is left untouched, as Redis does.
            let held = SetCommand::IsMember { key: dst.clone(), member: member.clone() };
            if parked.apply(to, quiet(ShardOp::Key(KeyCommand::SetFamily(held)))).into_frame() == Frame::Integer(1) {
                return Frame::Integer(1);
            }
            let add = SetCommand::Add { key: dst, members: vec![member] };
            let reply = parked.apply(to, ShardOp::Key(KeyCommand::SetFamily(add))).into_frame();
            if reply.is_error() { reply } else { Frame::Integer(1) }
        })
        .await
}

/// SINTER, SUNION, SDIFF, SINTERCARD and the STORE forms. All keys on one shard: run
/// there, atomically. Across shards, reads gather each shard's member lists (each
/// shard's part atomic, as MGET); a STORE runs under the coordinator, so that the
/// destination is written from one consistent read of the sources.
async fn set_algebra(access: &impl Shards, op: SetAlgebra, keys: Vec<Bytes>, output: SetOutput) -> Frame {
    let mut shards: Vec<usize> = keys.iter().map(|k| access.shard_of(k)).collect();
    if let SetOutput::Store(dst) = &output {
        shards.push(access.shard_of(dst));
    }
    shards.sort_unstable();
    shards.dedup();
    if let [shard] = shards[..] {
        return access.run_one(shard, ShardOp::SetAlgebra { op, keys, output }).await.into_frame();
    }
    let limits = access.state().runtime.encoding_limits();
    let limit = if let SetOutput::Count { limit } = output { limit } else { 0 };
    let total = keys.len();
    let groups: Vec<_> = access.group(keys, |k| k).into_iter().collect();
    let gather = move |replies: Vec<ShardReply>, positions: Vec<Vec<usize>>| -> Result<Vec<Option<Vec<Bytes>>>, Frame> {
        let mut lists: Vec<Option<Vec<Bytes>>> = vec![None; total];
        for (reply, positions) in replies.into_iter().zip(positions) {
            match reply {
                ShardReply::MemberLists(found) => {
                    for (list, position) in found.into_iter().zip(positions) {
                        lists[position] = list;
                    }
                }
                other => return Err(other.into_frame()),
            }
        }
        Ok(lists)
    };
    match output {
        SetOutput::Store(dst) => {
            let to = access.shard_of(&dst);
            let notifying = notifying(access);
            access
                .run_atomic(shards, move |parked| {
                    let (reads, positions): (Vec<_>, Vec<_>) =
                        groups.into_iter().map(|(shard, (keys, pos))| ((shard, ShardOp::SetMemberLists(keys)), pos)).unzip();
                    let replies = read_in_order(parked, reads, &positions, notifying, to);
                    let lists = match gather(replies, positions) {
                        Ok(lists) => lists,
                        Err(error) => return error,
                    };
                    let members = crate::engine::kv::sets::combine(op, lists, 0);
                    let event = notifying.then(|| KeyEvent::new(Class::Set, crate::engine::kv::sets::store_event(op), dst.clone()));
                    store_and_notify(parked, to, ShardOp::StoreSet { key: dst, members }, event)
                })
                .await
        }
        output => {
            let (ops, positions): (Vec<_>, Vec<_>) =
                groups.into_iter().map(|(shard, (keys, pos))| ((shard, ShardOp::SetMemberLists(keys)), pos)).unzip();
            match gather(run_in_order(access, ops, &positions, true).await, positions) {
                Ok(lists) => crate::engine::kv::sets::algebra_reply(&output, crate::engine::kv::sets::combine(op, lists, limit), &limits),
                Err(error) => error,
            }
        }
    }
}

/// A STORE across shards: `store` (StoreSet, StoreZset) raises `new` or `del` itself;
/// the command's own `event` follows when it stored something, as Redis raises it.
/// `event` is `None` while notifications are off (no extra step then).
pub fn store_and_notify(parked: &mut crate::shell::coordinator::Parked, to: usize, store: ShardOp, event: Option<KeyEvent>) -> Frame {
    let reply = parked.apply(to, store).into_frame();
    if let Some(event) = event
        && matches!(reply, Frame::Integer(n) if n > 0)
    {
        parked.apply(to, ShardOp::Notify(vec![event]));
    }
    reply
}

/// BITOP. All keys on one shard: run there, atomically. Across shards, under the
/// coordinator (as SINTERSTORE): the sources are read and the destination written while
/// the shards involved are parked, so the result comes from one consistent read.
async fn bitop(access: &impl Shards, op: BitOp, dst: Bytes, keys: Vec<Bytes>) -> Frame {
    let mut shards: Vec<usize> = keys.iter().map(|k| access.shard_of(k)).collect();
    shards.push(access.shard_of(&dst));
    shards.sort_unstable();
    shards.dedup();
    if let [shard] = shards[..] {
        return access.run_one(shard, ShardOp::BitOp { op, dst, keys }).await.into_frame();
    }
    let total = keys.len();
    let groups: Vec<_> = access.group(keys, |k| k).into_iter().collect();
    let to = access.shard_of(&dst);
    let notifying = notifying(access);
    access
        .run_atomic(shards, move |parked| {
            let mut values = vec![Bytes::new(); total];
            let (reads, positions): (Vec<_>, Vec<_>) =
                groups.into_iter().map(|(shard, (keys, pos))| ((shard, ShardOp::StringValues(keys)), pos)).unzip();
            let replies = read_in_order(parked, reads, &positions, notifying, to);
            for (reply, positions) in replies.into_iter().zip(positions) {
                match reply {
                    ShardReply::Values(found) => {
                        for (value, position) in found.into_iter().zip(positions) {
                            values[position] = value.unwrap_or_default();
                        }
                    }
                    other => return other.into_frame(),
                }
            }
            let value = crate::engine::kv::bits::bitop(op, &values);
            parked.apply(to, ShardOp::StoreBitOp { key: dst, value }).into_frame()
        })
        .await
}

/// LCS: read both strings (each shard's read is atomic, as MGET's), then compute.
async fn lcs(access: &impl Shards, cmd: LcsCommand) -> Frame {
    let groups = access.group(vec![cmd.a, cmd.b], |k| k);
    let (ops, positions): (Vec<_>, Vec<_>) = groups.into_iter().map(|(s, (keys, pos))| ((s, ShardOp::StringValues(keys)), pos)).unzip();
    // Redis looks both keys up before it checks their types: each key's `keymiss` stands
    // alone, so the read is split even on one shard while notifications are on.
    let split = notifying(access);
    let ops = ops.into_iter().map(|(shard, op)| (shard, super::notify::split(op, split))).collect();
    let mut replies = access.run_groups(ops).await;
    if split {
        let (whole, events) = super::notify::unsplit(replies, &positions, false);
        super::notify::publish(access.state(), events);
        replies = whole;
    }
    let mut values = [Bytes::new(), Bytes::new()];
    for (reply, positions) in replies.into_iter().zip(positions) {
        match reply {
            ShardReply::Values(found) => {
                for (value, position) in found.into_iter().zip(positions) {
                    values[position] = value.unwrap_or_default();
                }
            }
            ShardReply::Frame(Frame::Error(e)) if e.starts_with(b"WRONGTYPE") => return Frame::static_error(lcs::NOT_STRINGS),
            other => return other.into_frame(),
        }
    }
    let reply = match cmd.reply {
        Ok(reply) => reply,
        Err(error) => return error,
    };
    let table_bytes_max = access.shared_state().runtime.proto_max_bulk_len() as u64;
    let [a, b] = values;
    // The table may take up to proto-max-bulk-len and seconds to fill: past a million
    // cells it is filled on a blocking thread, not on the runtime's worker that serves
    // other connections.
    const INLINE_CELLS_MAX: usize = 1 << 20;
    if a.len().saturating_mul(b.len()) <= INLINE_CELLS_MAX {
        return lcs::lcs(&a, &b, reply, table_bytes_max);
    }
    tokio::task::spawn_blocking(move || lcs::lcs(&a, &b, reply, table_bytes_max))
        .await
        .unwrap_or_else(|_| Frame::static_error("ERR LCS failed"))
}

pub async fn keyspace(access: &impl Shards, command: KeyspaceCommand, random_pick: u64) -> Frame {
    match command {
        KeyspaceCommand::DbSize => sum_counts(&access.run_everywhere(|| ShardOp::Keyspace(KeyspaceCommand::DbSize)).await),
        KeyspaceCommand::Flush => {
            let replies = access.run_everywhere(|| ShardOp::Keyspace(KeyspaceCommand::Flush)).await;
            replies.into_iter().map(ShardReply::into_frame).find(Frame::is_error).unwrap_or(Frame::ok())
        }
        KeyspaceCommand::Keys(_) | KeyspaceCommand::GraphList => {
            let replies = access.run_everywhere(|| ShardOp::Keyspace(command.clone())).await;
            let mut keys = Vec::new();
            for reply in replies {
                match reply {
                    ShardReply::Keys(found) => keys.extend(found.into_iter().map(Frame::Bulk)),
                    other => return other.into_frame(),
                }
            }
            Frame::Array(keys)
        }
        KeyspaceCommand::Scan { cursor, pattern, count, type_name } => {
            let shards = access.shard_count() as u64;
            let mut shard = cursor >> 32;
            let mut position = cursor & (SLOT_SPACE - 1);
            let mut keys = Vec::new();
            let mut next_cursor = 0;
            while shard < shards {
                let op = ShardOp::Keyspace(KeyspaceCommand::Scan {
                    cursor: position,
                    pattern: pattern.clone(),
                    count,
                    type_name: type_name.clone(),
                });
                let (found, next) = match access.run_one(shard as usize, op).await {
                    ShardReply::ScanPage { keys, next } => (keys, next),
                    other => return other.into_frame(),
                };
                keys.extend(found.into_iter().map(Frame::Bulk));
                if next >= SLOT_SPACE {
                    shard += 1;
                    position = 0;
                } else {
                    position = next;
                }
                if shard >= shards {
                    next_cursor = 0;
                    break;
                }
                next_cursor = (shard << 32) | position;
                if keys.len() >= count {
                    break;
                }
            }
            Frame::Array(vec![Frame::Bulk(Bytes::from(next_cursor.to_string())), Frame::Array(keys)])
        }
        KeyspaceCommand::RandomKey => {
            let shards = access.shard_count();
            let start = (random_pick % shards as u64) as usize;
            for i in 0..shards {
                let shard = (start + i) % shards;
                match access.run_one(shard, ShardOp::Keyspace(KeyspaceCommand::RandomKey)).await {
                    ShardReply::RandomKey(Some(key)) => return Frame::Bulk(key),
                    ShardReply::RandomKey(None) => continue,
                    other => return other.into_frame(),
                }
            }
            Frame::Null
        }
    }
}

/// XREAD and XREADGROUP: each key's part on its shard, in argument order; the reply
/// names the keys that had something (a map in RESP3), or is null when none had. Each
/// key's part is atomic on its shard; the keys together are not (as MGET across
/// shards). The first error (WRONGTYPE, NOGROUP) is the reply.
async fn stream_read(access: &impl Shards, mut read: crate::command::stream::StreamRead) -> Frame {
    let mut found = Vec::new();
    for (key, from) in std::mem::take(&mut read.keys) {
        let shard = access.shard_of(&key);
        match access.run_one(shard, ShardOp::Key(KeyCommand::Stream(Box::new(read.part(key, from))))).await.into_frame() {
            Frame::Array(mut pair) if pair.len() == 2 => {
                let entries = pair.pop().expect("two");
                let key = pair.pop().expect("two");
                found.push((key, entries));
            }
            Frame::Null => {}
            other => return other,
        }
    }
    if found.is_empty() { Frame::NullArray } else { Frame::PairMap(found) }
}
