//! SORT and SORT_RO across shards: read the key's elements, look up the BY weights and
//! GET values that patterns name (keys on any shard, hash fields after `->`), sort as
//! Redis does, and answer or STORE the result as a list.
//!
//! SORT ... STORE runs with every shard parked by the coordinator, so what it stores
//! comes from one consistent read; a plain SORT reads each shard at its own instant (as
//! MGET). Decides nothing about the data itself: every read and write is an ordinary
//! command on its shard.

use std::cmp::Ordering;

use bytes::Bytes;
use futures_util::FutureExt;

use super::shards::{ParkedShards, Shards};
use crate::command::list::{End, ListCommand};
use crate::command::sort::{SortCommand, pattern_target};
use crate::command::{Command, KeyCommand, errors, parse_command};
use crate::protocol::Frame;
use crate::shard::{ShardOp, ShardReply};

const NOT_A_DOUBLE: &str = "ERR One or more scores can't be converted into double";

pub async fn sort(access: &impl Shards, command: SortCommand) -> Frame {
    if command.store.is_none() {
        return sort_on(access, command).await;
    }
    let state = access.shared_state();
    let every_shard = (0..access.shard_count()).collect();
    access
        .run_atomic(every_shard, move |parked| {
            let shards = ParkedShards::new(parked, state);
            sort_on(&shards, command)
                .now_or_never()
                .unwrap_or_else(|| Frame::static_error("ERR internal: a parked shard did not answer at once"))
        })
        .await
}

/// Run one single-key command given as words.
async fn run(access: &impl Shards, words: Vec<Bytes>) -> Frame {
    match parse_command(words) {
        Ok(Command::Key(cmd)) => access.run_one(access.shard_of(cmd.key()), ShardOp::Key(cmd)).await.into_frame(),
        Ok(other) => Frame::error(format!("ERR internal: SORT ran a command that is not single-key: {other:?}")),
        Err(error) => error,
    }
}

fn word(text: &'static str) -> Bytes {
    Bytes::from_static(text.as_bytes())
}

fn bulks(frame: Frame) -> Result<Vec<Bytes>, Frame> {
    match frame {
        Frame::Bulks(bulks) => Ok(bulks.iter().collect()),
        Frame::Array(items) | Frame::Set(items) => Ok(items
            .into_iter()
            .filter_map(|f| match f {
                Frame::Bulk(b) => Some(b),
                _ => None,
            })
            .collect()),
        other => Err(other),
    }
}

/// What each element's pattern names: the element itself (`#`), a string key's value,
/// a hash field's value, or nothing (missing, another type, or a pattern without `*`).
async fn look_up(access: &impl Shards, pattern: &[u8], elements: &[Bytes]) -> Vec<Option<Bytes>> {
    if pattern == b"#" {
        return elements.iter().cloned().map(Some).collect();
    }
    let mut values: Vec<Option<Bytes>> = vec![None; elements.len()];
    let mut strings: Vec<(usize, Bytes)> = Vec::new();
    for (i, element) in elements.iter().enumerate() {
        match pattern_target(pattern, element) {
            None => {}
            Some((key, None)) => strings.push((i, key)),
            Some((key, Some(field))) => {
                if let Frame::Bulk(value) = run(access, vec![word("HGET"), key, field]).await {
                    values[i] = Some(value);
                }
            }
        }
    }
    // String keys: one MGET per shard (MGET answers nil for another type, as wanted),
    // their `keymiss` events in element order.
    let groups = access.group(strings, |(_, key)| key);
    let mut reads = Vec::with_capacity(groups.len());
    let mut positions = Vec::with_capacity(groups.len());
    let mut targets_by_group = Vec::with_capacity(groups.len());
    for (shard, (targets, pos)) in groups {
        reads.push((shard, ShardOp::MGet(targets.iter().map(|(_, key)| key.clone()).collect())));
        positions.push(pos);
        targets_by_group.push(targets);
    }
    let replies = super::fanout::run_in_order(access, reads, &positions, false).await;
    for (targets, reply) in targets_by_group.into_iter().zip(replies) {
        if let ShardReply::Frame(Frame::Array(found)) = reply {
            for ((i, _), value) in targets.into_iter().zip(found) {
                if let Frame::Bulk(value) = value {
                    values[i] = Some(value);
                }
            }
        }
    }
    values
}

/// A weight as Redis's SORT parses it (`numbers::parse_sort_weight`).
fn parse_weight(text: &[u8]) -> Option<f64> {
    crate::command::numbers::parse_sort_weight(text)
}

async fn sort_on(access: &impl Shards, command: SortCommand) -> Frame {
    let key = command.key.clone();
    let kind = match run(access, vec![word("TYPE"), key.clone()]).await {
        Frame::Simple(kind) => kind,
        other => return other,
    };
    let read = match kind.as_ref() {
        b"none" => Ok(Vec::new()),
        b"list" => bulks(run(access, vec![word("LRANGE"), key.clone(), word("0"), word("-1")]).await),
        b"set" => bulks(run(access, vec![word("SMEMBERS"), key.clone()]).await),
        b"zset" => bulks(run(access, vec![word("ZRANGE"), key.clone(), word("0"), word("-1")]).await),
        _ => return errors::error(errors::WRONG_TYPE),
    };
    let mut elements = match read {
        Ok(elements) => elements,
        Err(error) => return error,
    };
    let is_set = kind.as_ref() == b"set";
    let (mut dont_sort, mut alpha, mut by) = (command.dont_sort(), command.alpha, command.by.clone());
    if dont_sort && is_set && command.store.is_some() {
        // A set has no order of its own: what is stored must not depend on the node.
        (dont_sort, alpha, by) = (false, true, None);
    }
    if dont_sort {
        if command.desc && !is_set {
            elements.reverse();
        }
    } else {
        let weights = match &by {
            Some(pattern) => look_up(access, pattern, &elements).await,
            None => elements.iter().cloned().map(Some).collect(),
        };
        let mut order: Vec<usize> = (0..elements.len()).collect();
        if alpha {
            let by_pattern = by.is_some();
            order.sort_by(|&a, &b| {
                let cmp = if by_pattern {
                    match (&weights[a], &weights[b]) {
                        (None, None) => Ordering::Equal,
                        (None, Some(_)) => Ordering::Less,
                        (Some(_), None) => Ordering::Greater,
                        (Some(x), Some(y)) => x.cmp(y),
                    }
                } else {
                    elements[a].cmp(&elements[b])
                };
                if command.desc { cmp.reverse() } else { cmp }
            });
        } else {
            let mut scores = Vec::with_capacity(elements.len());
            for weight in &weights {
                match weight {
                    None => scores.push(0.0),
                    Some(text) => match parse_weight(text) {
                        Some(score) => scores.push(score),
                        None => return Frame::static_error(NOT_A_DOUBLE),
                    },
                }
            }
            order.sort_by(|&a, &b| {
                // Equal scores: the elements' bytes decide, so the result is deterministic.
                let cmp = scores[a].partial_cmp(&scores[b]).unwrap_or(Ordering::Equal).then_with(|| elements[a].cmp(&elements[b]));
                if command.desc { cmp.reverse() } else { cmp }
            });
        }
        elements = order.into_iter().map(|i| elements[i].clone()).collect();
    }
    // LIMIT offset count, clamped as Redis clamps it.
    let len = elements.len() as i64;
    let (offset, count) = command.limit.unwrap_or((0, -1));
    let start = offset.clamp(0, len);
    let count = count.clamp(-1, len);
    let end = if count < 0 { len - 1 } else { (start + count - 1).min(len - 1) };
    let selected: &[Bytes] = if start < len && end >= start { &elements[start as usize..=end as usize] } else { &[] };
    let outputs: Vec<Option<Bytes>> = if command.gets.is_empty() {
        selected.iter().cloned().map(Some).collect()
    } else {
        let mut columns = Vec::with_capacity(command.gets.len());
        for pattern in &command.gets {
            columns.push(look_up(access, pattern, selected).await);
        }
        (0..selected.len()).flat_map(|row| columns.iter().map(move |column| column[row].clone())).collect()
    };
    let Some(dst) = command.store else {
        return Frame::Array(outputs.into_iter().map(|v| v.map_or(Frame::Null, Frame::Bulk)).collect());
    };
    // The delete and the push run quietly: SORT STORE raises `sortstore` (or `del` for
    // an empty result), as Redis does, not the steps' own events.
    let shard = access.shard_of(&dst);
    let existed = match access.run_one(shard, super::fanout::quiet(ShardOp::Del(vec![dst.clone()]))).await {
        ShardReply::Frame(error @ Frame::Error(_)) => return error,
        ShardReply::Count(n) => n > 0,
        _ => false,
    };
    if !outputs.is_empty() {
        let elements = outputs.iter().map(|v| v.clone().unwrap_or_default()).collect();
        let push = ListCommand::Push { key: dst.clone(), end: End::Right, elements, only_if_exists: false };
        let reply = access.run_one(shard, super::fanout::quiet(ShardOp::Key(KeyCommand::List(push)))).await.into_frame();
        if reply.is_error() {
            return reply;
        }
    }
    if super::fanout::notifying(access) {
        let events = crate::notify::stored(crate::notify::Class::List, "sortstore", &dst, existed, !outputs.is_empty());
        if !events.is_empty() {
            access.run_one(shard, ShardOp::Notify(events)).await;
        }
    }
    Frame::Integer(outputs.len() as i64)
}
