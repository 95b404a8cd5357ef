//! Running one client command on a simulated node: the real parser, the real key
//! routing and the real shards, with the model evaluated beside them.

use std::collections::BTreeMap;

use bytes::Bytes;
use meridian::command::{Command, KeyspaceCommand, MultiKeyCommand, SetOutput, parse_command};
use meridian::protocol::Frame;
use meridian::routing::shard_for_key;
use meridian::shard::{ShardOp, ShardReply};

use super::{Node, Sim};
use crate::workload;

impl Sim {
    /// Run one command on the real shards of `node`; also evaluate the model (None when
    /// the command never reaches the data, e.g. a parse error).
    pub(super) fn execute(&mut self, node: usize, args: Vec<Bytes>) -> (Frame, Option<Frame>) {
        if args.first().is_some_and(|a| a.as_ref() == b"EXEC") {
            return self.execute_transaction(node, args);
        }
        let n = &mut self.nodes[node];
        let now = n.local_ms(self.now);
        let shards = n.shards.len();
        let command = match parse_command(args) {
            Ok(command) => command,
            Err(error) => return (error, None),
        };
        match command {
            Command::Key(cmd) => {
                let shard = shard_for_key(cmd.key(), shards);
                let actual = n.shards[shard].apply(ShardOp::Key(cmd.clone()), now).into_frame();
                // The model reads the node's reply only for random draws (SPOP, SRANDMEMBER).
                let expected = n.model.apply(&cmd, now, &actual);
                (actual, Some(expected))
            }
            // The workload sends multi-key set commands on one hash tag only: the
            // shard runs them whole, as the shell does when every key is on one shard.
            Command::Multi(MultiKeyCommand::SetMove { src, dst, member }) if shard_for_key(&src, shards) == shard_for_key(&dst, shards) => {
                let expected = n.model.smove(&src, &dst, &member, now);
                let shard = shard_for_key(&src, shards);
                (n.shards[shard].apply(ShardOp::SetMove { src, dst, member }, now).into_frame(), Some(expected))
            }
            Command::Multi(MultiKeyCommand::SetAlgebra { op, keys, output })
                if one_shard(
                    keys.iter().chain(match &output {
                        SetOutput::Store(dst) => Some(dst),
                        _ => None,
                    }),
                    shards,
                )
                .is_some() =>
            {
                let expected = n.model.set_algebra(op, &keys, &output, now);
                let shard = shard_for_key(&keys[0], shards);
                (n.shards[shard].apply(ShardOp::SetAlgebra { op, keys, output }, now).into_frame(), Some(expected))
            }
            // RENAME and COPY (`--renames`, replication runs only: the model does not
            // follow them) on one hash tag, as the shell runs them when both keys are on
            // one shard.
            Command::Multi(MultiKeyCommand::Rename { src, dst, nx }) if shard_for_key(&src, shards) == shard_for_key(&dst, shards) => {
                let shard = shard_for_key(&src, shards);
                (n.shards[shard].apply(ShardOp::Rename { src, dst, nx }, now).into_frame(), None)
            }
            Command::Multi(MultiKeyCommand::Copy { src, dst, replace }) if shard_for_key(&src, shards) == shard_for_key(&dst, shards) => {
                let shard = shard_for_key(&src, shards);
                (n.shards[shard].apply(ShardOp::Copy { src, dst, replace }, now).into_frame(), None)
            }
            Command::Multi(MultiKeyCommand::MGet(keys)) => {
                let expected = n.model.mget(&keys, now);
                let mut values = vec![Frame::Null; keys.len()];
                let (groups, positions) = per_shard(group_by_shard(&keys, shards, |k| k), ShardOp::MGet);
                for (reply, positions) in run_in_order(n, groups, &positions, now).into_iter().zip(positions) {
                    if let ShardReply::Frame(Frame::Array(items)) = reply {
                        for (item, p) in items.into_iter().zip(positions) {
                            values[p] = item;
                        }
                    }
                }
                (Frame::Array(values), Some(expected))
            }
            Command::Multi(MultiKeyCommand::MSet(pairs)) => {
                let expected = n.model.mset(&pairs, now);
                let (groups, positions) = per_shard(group_by_shard(&pairs, shards, |p| &p.0), ShardOp::MSet);
                let replies = run_in_order(n, groups, &positions, now);
                let reply = replies.into_iter().map(ShardReply::into_frame).find(Frame::is_error).unwrap_or(Frame::ok());
                (reply, Some(expected))
            }
            Command::Multi(MultiKeyCommand::Del(keys)) => {
                let expected = n.model.del(&keys, now);
                let (groups, positions) = per_shard(group_by_shard(&keys, shards, |k| k), ShardOp::Del);
                (sum_counts(run_in_order(n, groups, &positions, now)), Some(expected))
            }
            Command::Multi(MultiKeyCommand::Exists(keys)) => {
                let expected = n.model.exists(&keys, now);
                let (groups, positions) = per_shard(group_by_shard(&keys, shards, |k| k), ShardOp::CountExisting);
                (sum_counts(run_in_order(n, groups, &positions, now)), Some(expected))
            }
            Command::Keyspace(KeyspaceCommand::DbSize) => {
                let total = n.shards.iter_mut().map(|s| match s.apply(ShardOp::Keyspace(KeyspaceCommand::DbSize), now) {
                    ShardReply::Count(c) => c,
                    _ => 0,
                });
                let total: i64 = total.sum();
                (Frame::Integer(total), Some(Frame::Integer(n.model.dbsize())))
            }
            other => (Frame::error(format!("ERR dst does not drive {other:?}")), None),
        }
    }
}

impl Sim {
    /// A transaction from `workload::transaction`: one `ShardOp::Transaction` on the
    /// real shard (as the shell sends MULTI ... EXEC when every key is on one shard);
    /// the model applies its commands in order, or nothing when the WATCH was stale.
    fn execute_transaction(&mut self, node: usize, args: Vec<Bytes>) -> (Frame, Option<Frame>) {
        let n = &mut self.nodes[node];
        let now = n.local_ms(self.now);
        let shards = n.shards.len();
        let watch = args[1].clone();
        let mut commands = Vec::new();
        for words in args[2..].split(|a| a.as_ref() == workload::TRANSACTION_SEPARATOR.as_bytes()) {
            match parse_command(words.to_vec()) {
                Ok(Command::Key(cmd)) => commands.push(cmd),
                other => return (Frame::error(format!("ERR dst: not a single-key command in a transaction: {other:?}")), None),
            }
        }
        let Some(first) = commands.first() else { return (Frame::error("ERR dst: an empty transaction"), None) };
        let key = first.key().clone();
        let shard = shard_for_key(&key, shards);
        if commands.iter().any(|c| shard_for_key(c.key(), shards) != shard) {
            return (Frame::error("ERR dst: a transaction across shards"), None);
        }
        let watched = if watch.as_ref() == workload::WATCH_NONE.as_bytes() {
            Vec::new()
        } else {
            let token = match n.shards[shard].apply(ShardOp::WatchTokens(vec![key.clone()]), now) {
                ShardReply::Tokens(tokens) => tokens.first().copied().unwrap_or(0),
                other => return (other.into_frame(), None),
            };
            // WATCH looks the key up: an expired key goes, in the model too.
            n.model.live(&key, now);
            let stale = watch.as_ref() == workload::WATCH_STALE.as_bytes();
            vec![(key, if stale { token.wrapping_add(1) } else { token })]
        };
        let stale = watch.as_ref() == workload::WATCH_STALE.as_bytes();
        let ops = commands.iter().cloned().map(ShardOp::Key).collect();
        match n.shards[shard].apply(ShardOp::Transaction { watched, ops }, now) {
            ShardReply::Transaction(None) => {
                let expected = if stale { Frame::NullArray } else { Frame::error("a transaction that must run was aborted") };
                (Frame::NullArray, Some(expected))
            }
            ShardReply::Transaction(Some(replies)) => {
                let actual: Vec<Frame> = replies.into_iter().map(ShardReply::into_frame).collect();
                if stale {
                    return (Frame::Array(actual), Some(Frame::NullArray));
                }
                let expected = commands.iter().zip(&actual).map(|(cmd, reply)| n.model.apply(cmd, now, reply)).collect();
                (Frame::Array(actual), Some(Frame::Array(expected)))
            }
            other => (other.into_frame(), None),
        }
    }
}

/// The shard every key is on, if they are all on one.
fn one_shard<'a>(mut keys: impl Iterator<Item = &'a Bytes>, shards: usize) -> Option<usize> {
    let first = shard_for_key(keys.next()?, shards);
    keys.all(|k| shard_for_key(k, shards) == first).then_some(first)
}

type Groups<T> = BTreeMap<usize, (Vec<T>, Vec<usize>)>;

fn group_by_shard<T: Clone>(items: &[T], shards: usize, key: impl Fn(&T) -> &Bytes) -> Groups<T> {
    let mut groups: Groups<T> = BTreeMap::new();
    for (i, item) in items.iter().enumerate() {
        let entry = groups.entry(shard_for_key(key(item), shards)).or_default();
        entry.0.push(item.clone());
        entry.1.push(i);
    }
    groups
}

/// Each group's op, and the argument positions of its keys.
fn per_shard<T>(groups: Groups<T>, op: fn(Vec<T>) -> ShardOp) -> (Vec<(usize, ShardOp)>, Vec<Vec<usize>>) {
    groups.into_iter().map(|(shard, (items, positions))| ((shard, op(items)), positions)).unzip()
}

/// One op per shard, as the shell runs a multi-key command's parts
/// (`shell::fanout::run_in_order`): across shards each part runs one key at a time
/// and the events come back in argument order, into `node.raised` for the oracle.
fn run_in_order(node: &mut Node, groups: Vec<(usize, ShardOp)>, positions: &[Vec<usize>], now: u64) -> Vec<ShardReply> {
    let split = groups.len() > 1;
    let replies = groups.into_iter().map(|(shard, op)| node.shards[shard].apply(meridian::shell::notify::split(op, split), now)).collect();
    if !split {
        return replies;
    }
    let (replies, events) = meridian::shell::notify::unsplit(replies, positions, false);
    node.raised.extend(events);
    replies
}

fn sum_counts(replies: Vec<ShardReply>) -> Frame {
    let mut total = 0;
    for reply in replies {
        match reply {
            ShardReply::Count(c) => total += c,
            other => return other.into_frame(),
        }
    }
    Frame::Integer(total)
}
