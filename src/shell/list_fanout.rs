//! The multi-key list commands (LMOVE, RPOPLPUSH, LMPOP) when their keys live on
//! several shards. All keys on one shard: the command runs there, atomically. Across
//! shards they run under the coordinator, so that LMOVE's pop and push happen as one
//! step (no client sees the element in neither list, or in both) and LMPOP pops from
//! the first non-empty key as of one instant.

use bytes::Bytes;

use super::coordinator::Parked;
use super::fanout::{notifying, quiet};
use super::shards::Shards;
use crate::command::list::{End, ListCommand, ListMulti};
use crate::command::{KeyCommand, errors};
use crate::engine::kv::lists::{pop_event, push_event};
use crate::notify::{Class, KeyEvent};
use crate::protocol::Frame;
use crate::shard::{ShardOp, ShardReply};

/// TYPE of a key on a parked shard.
fn type_of(parked: &mut Parked, shard: usize, key: &Bytes) -> Result<Bytes, Frame> {
    match parked.apply(shard, quiet(ShardOp::Key(KeyCommand::Type(key.clone())))) {
        ShardReply::Frame(Frame::Simple(name)) => Ok(name),
        other => Err(other.into_frame()),
    }
}

pub async fn list_multi(access: &impl Shards, cmd: ListMulti) -> Frame {
    let mut shards: Vec<usize> = cmd.keys().into_iter().map(|k| access.shard_of(k)).collect();
    shards.sort_unstable();
    shards.dedup();
    if let [shard] = shards[..] {
        return access.run_one(shard, ShardOp::ListMulti(cmd)).await.into_frame();
    }
    match cmd {
        ListMulti::Move { src, dst, from, to } => {
            let (src_shard, dst_shard) = (access.shard_of(&src), access.shard_of(&dst));
            let notifying = notifying(access);
            access.run_atomic(shards, move |parked| lmove(parked, (src_shard, src, from), (dst_shard, dst, to), notifying)).await
        }
        ListMulti::MPop { keys, end, count } => {
            let targets: Vec<(usize, Bytes)> = keys.into_iter().map(|k| (access.shard_of(&k), k)).collect();
            access
                .run_atomic(shards, move |parked| {
                    for (shard, key) in targets {
                        let reply = parked.apply(shard, ShardOp::ListMulti(ListMulti::MPop { keys: vec![key], end, count })).into_frame();
                        if reply != Frame::NullArray {
                            return reply;
                        }
                    }
                    Frame::NullArray
                })
                .await
        }
    }
}

/// LMOVE across two parked shards, with Redis's checks in its order: a missing source
/// answers nil, a source or destination of another type WRONGTYPE, before anything moves.
/// The pop and the push run quietly; their events are raised after, in Redis's order
/// (the push on `dst`, then the pop on `src` and its `del` if it emptied).
fn lmove(
    parked: &mut Parked,
    (from, src, src_end): (usize, Bytes, End),
    (to, dst, dst_end): (usize, Bytes, End),
    notifying: bool,
) -> Frame {
    let wrong_type = || errors::error(errors::WRONG_TYPE);
    match type_of(parked, from, &src) {
        Ok(name) if name.as_ref() == b"none" => return Frame::Null,
        Ok(name) if name.as_ref() == b"list" => {}
        Ok(_) => return wrong_type(),
        Err(error) => return error,
    }
    let dst_is_new = match type_of(parked, to, &dst) {
        Ok(name) if name.as_ref() == b"none" => true,
        Ok(name) if name.as_ref() == b"list" => false,
        Ok(_) => return wrong_type(),
        Err(error) => return error,
    };
    let pop = ListCommand::Pop { key: src.clone(), end: src_end, count: None };
    let element = match parked.apply(from, quiet(ShardOp::Key(KeyCommand::List(pop)))).into_frame() {
        Frame::Bulk(element) => element,
        other => return other,
    };
    let push = ListCommand::Push { key: dst.clone(), end: dst_end, elements: vec![element.clone()], only_if_exists: false };
    let reply = parked.apply(to, quiet(ShardOp::Key(KeyCommand::List(push)))).into_frame();
    if reply.is_error() {
        return reply;
    }
    if notifying {
        let mut pushed = Vec::with_capacity(2);
        if dst_is_new {
            pushed.push(KeyEvent::new(Class::New, "new", dst.clone()));
        }
        pushed.push(KeyEvent::new(Class::List, push_event(dst_end), dst));
        parked.apply(to, ShardOp::Notify(pushed));
        let mut popped = vec![KeyEvent::new(Class::List, pop_event(src_end), src.clone())];
        if matches!(type_of(parked, from, &src), Ok(name) if name.as_ref() == b"none") {
            popped.push(KeyEvent::new(Class::Generic, "del", src));
        }
        parked.apply(from, ShardOp::Notify(popped));
    }
    Frame::Bulk(element)
}
