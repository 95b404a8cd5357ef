//! The multi-key sorted set commands (ZUNION, ZINTER, ZDIFF, their STORE forms,
//! ZINTERCARD, ZRANGESTORE, ZMPOP) when their keys live on several shards. All keys on
//! one shard: the command runs there, atomically. Across shards, reads gather each
//! shard's member lists (each shard's part atomic, as MGET); a command that writes runs
//! under the coordinator, so that what it writes comes from one consistent read of its
//! sources, and ZMPOP pops from the first non-empty key as of one instant.

use bytes::Bytes;

use super::shards::Shards;
use crate::command::ZsetMulti;
use crate::command::zset::ZOutput;
use crate::engine::kv::zset_query::{self, Scored};
use crate::engine::kv::zsets::algebra_reply;
use crate::notify::{Class, KeyEvent};
use crate::protocol::Frame;
use crate::shard::{ShardOp, ShardReply};

type Lists = Vec<Option<Vec<Scored>>>;

/// Put each shard's lists back in request order; the first error wins.
fn gather(total: usize, replies: Vec<ShardReply>, positions: Vec<Vec<usize>>) -> Result<Lists, Frame> {
    let mut lists: Lists = vec![None; total];
    for (reply, positions) in replies.into_iter().zip(positions) {
        match reply {
            ShardReply::ScoredLists(found) => {
                for (list, position) in found.into_iter().zip(positions) {
                    lists[position] = list;
                }
            }
            other => return Err(other.into_frame()),
        }
    }
    Ok(lists)
}

pub async fn zset_multi(access: &impl Shards, cmd: ZsetMulti) -> Frame {
    let mut shards: Vec<usize> = cmd.keys().into_iter().map(|k| access.shard_of(k)).collect();
    shards.sort_unstable();
    shards.dedup();
    if let [shard] = shards[..] {
        return access.run_one(shard, ShardOp::ZsetMulti(cmd)).await.into_frame();
    }
    match cmd {
        ZsetMulti::Algebra { op, keys, weights, aggregate, output } => {
            let total = keys.len();
            let groups: Vec<_> = access.group(keys, |k: &Bytes| k).into_iter().collect();
            let limit = if let ZOutput::Count { limit } = output { limit } else { 0 };
            match output {
                ZOutput::Store(dst) => {
                    let to = access.shard_of(&dst);
                    let notifying = super::fanout::notifying(access);
                    let event = notifying.then(|| KeyEvent::new(Class::Zset, crate::engine::kv::zsets::store_event(Some(op)), dst.clone()));
                    access
                        .run_atomic(shards, move |parked| {
                            let (reads, positions): (Vec<_>, Vec<_>) =
                                groups.into_iter().map(|(shard, (keys, pos))| ((shard, ShardOp::ScoredLists(keys)), pos)).unzip();
                            let replies = super::fanout::read_in_order(parked, reads, &positions, notifying, to);
                            match gather(total, replies, positions) {
                                Ok(lists) => {
                                    let members = zset_query::combine(op, lists, weights.as_deref(), aggregate, 0);
                                    super::fanout::store_and_notify(parked, to, ShardOp::StoreZset { key: dst, members }, event)
                                }
                                Err(error) => error,
                            }
                        })
                        .await
                }
                output => {
                    let (ops, positions): (Vec<_>, Vec<_>) =
                        groups.into_iter().map(|(shard, (keys, pos))| ((shard, ShardOp::ScoredLists(keys)), pos)).unzip();
                    match gather(total, super::fanout::run_in_order(access, ops, &positions, true).await, positions) {
                        // Refused options answer once the inputs' types checked out.
                        Ok(_) if matches!(output, ZOutput::Refused(_)) => algebra_reply(&output, Vec::new()),
                        Ok(lists) => algebra_reply(&output, zset_query::combine(op, lists, weights.as_deref(), aggregate, limit)),
                        Err(error) => error,
                    }
                }
            }
        }
        ZsetMulti::RangeStore { dst, src, query } => {
            let (from, to) = (access.shard_of(&src), access.shard_of(&dst));
            let event = super::fanout::notifying(access)
                .then(|| KeyEvent::new(Class::Zset, crate::engine::kv::zsets::store_event(None), dst.clone()));
            access
                .run_atomic(shards, move |parked| match parked.apply(from, ShardOp::ZsetRange { key: src, query: *query }) {
                    ShardReply::ScoredLists(mut lists) => {
                        let members = lists.pop().flatten().unwrap_or_default();
                        super::fanout::store_and_notify(parked, to, ShardOp::StoreZset { key: dst, members }, event)
                    }
                    other => other.into_frame(),
                })
                .await
        }
        ZsetMulti::GeoStore { search, store } => {
            let (from, to) = (access.shard_of(&search.key), access.shard_of(&store.dst));
            let event = super::fanout::notifying(access).then(|| KeyEvent::new(Class::Zset, store.event, store.dst.clone()));
            let distances = store.distances;
            access
                .run_atomic(shards, move |parked| match parked.apply(from, ShardOp::GeoMatches { search, distances }) {
                    ShardReply::ScoredLists(mut lists) => {
                        let members = lists.pop().flatten().unwrap_or_default();
                        super::fanout::store_and_notify(parked, to, ShardOp::StoreZset { key: store.dst, members }, event)
                    }
                    other => other.into_frame(),
                })
                .await
        }
        ZsetMulti::MPop { keys, max, count } => {
            let targets: Vec<(usize, Bytes)> = keys.into_iter().map(|k| (access.shard_of(&k), k)).collect();
            access
                .run_atomic(shards, move |parked| {
                    for (shard, key) in targets {
                        let reply = parked.apply(shard, ShardOp::ZsetMulti(ZsetMulti::MPop { keys: vec![key], max, count })).into_frame();
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
