//! How the shell reaches shards. A connection reaches its home shard directly and the
//! others by message ([`ShardAccess`]); a transaction's commands reach shards the
//! coordinator holds parked ([`ParkedShards`]). Multi-shard commands are written once,
//! against [`Shards`], and run either way.
//!
//! Owns no state of its own and never decides what a command means (`fanout` does).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;

use bytes::Bytes;

use super::ServerState;
use super::coordinator::Parked;
use crate::protocol::Frame;
use crate::shard::{Shard, ShardOp, ShardReply};

const SHUTTING_DOWN: &str = "ERR server is shutting down";

pub type SharedShard = Rc<RefCell<Shard>>;

/// Apply one operation on the shard owned by this thread at `now_ms` (a connection
/// reads the clock once per pipeline, not once per command).
pub fn apply_local_one(shard: &SharedShard, state: &ServerState, op: ShardOp, now_ms: u64) -> ShardReply {
    // The common case goes straight to the shard: nobody is blocked, the op is not a
    // graph query and the node is not stopping. Every command of a pipeline comes
    // through here one at a time, and the batch path's array, iterator and closures
    // moved the operation (176 bytes then) five times more on the way (callgrind:
    // ~300 instructions a command).
    if state.waiters.is_active() || super::graph_time::is_graph_query(&op) || state.stopping.load(std::sync::atomic::Ordering::SeqCst) {
        let mut reply = None;
        apply_local_each(shard, state, now_ms, [op], |r| reply = Some(r));
        return reply.expect("one reply per operation");
    }
    let mut shard = shard.borrow_mut();
    sync_settings(&mut shard, state);
    let reply = shard.apply(op, now_ms);
    super::notify::publish_raised(&mut shard, state);
    wake_batcher_if_ready(&mut shard, state);
    reply
}

/// The run-time settings a shard applies by, as they are now (CONFIG SET may have
/// changed them since its last operation).
fn sync_settings(shard: &mut Shard, state: &ServerState) {
    shard.set_string_bytes_max(state.runtime.proto_max_bulk_len());
    shard.set_encoding_limits(state.runtime.encoding_limits());
    super::notify::sync_flags(shard, state);
}

/// Apply a batch on the shard owned by this thread.
pub fn apply_local(shard: &SharedShard, state: &ServerState, ops: Vec<ShardOp>) -> Vec<ShardReply> {
    let mut replies = Vec::with_capacity(ops.len());
    apply_local_each(shard, state, super::now_ms(), ops, |reply| replies.push(reply));
    replies
}

/// Apply a batch sent from another thread: its operations are taken out in order and
/// their replies put in its `replies`, so both buffers go back to the sender for reuse.
pub fn apply_batch(shard: &SharedShard, state: &ServerState, batch: &mut super::router::Batch) {
    let super::router::Batch { ops, replies } = batch;
    apply_local_each(shard, state, super::now_ms(), ops.drain(..), |reply| replies.push(reply));
}

/// Apply operations in order on the shard owned by this thread, under one borrow of
/// it, handing each reply to `answer` in turn: the one path a single operation and a
/// batch share.
fn apply_local_each(
    shard: &SharedShard,
    state: &ServerState,
    now: u64,
    ops: impl IntoIterator<Item = ShardOp>,
    mut answer: impl FnMut(ShardReply),
) {
    // Blocked clients are woken by writes to their keys, local or merged from a peer.
    let waking = state.waiters.is_active();
    let mut written: Vec<Bytes> = Vec::new();
    let mut flushed = false;
    let mut shard = shard.borrow_mut();
    sync_settings(&mut shard, state);
    let stopping = state.stopping.load(std::sync::atomic::Ordering::SeqCst);
    for op in ops {
        if stopping && matches!(op, ShardOp::Key(_)) {
            answer(ShardReply::Frame(Frame::static_error(SHUTTING_DOWN)));
            continue;
        }
        let keys = if waking { op.written_keys() } else { Vec::new() };
        flushed |= waking && matches!(op, ShardOp::Keyspace(crate::command::KeyspaceCommand::Flush));
        let graph_query = super::graph_time::is_graph_query(&op);
        let mut reply = super::graph_time::timed(graph_query, || shard.apply(op, now));
        if graph_query {
            super::graph_config::limit_rows(&mut reply);
        }
        if !keys.is_empty() && wrote(&reply) {
            written.extend(keys);
        }
        answer(reply);
    }
    super::notify::publish_raised(&mut shard, state);
    wake_batcher_if_ready(&mut shard, state);
    if !written.is_empty() {
        state.waiters.wake(&written);
    }
    if flushed {
        state.waiters.wake_all();
    }
}

/// Whether an operation that may write its keys did: a nil or an error says it did
/// nothing, and then it wakes no blocked client. (A BLMOVE's retry that finds its source
/// empty writes nothing to its destination; were the destination's clients woken anyway,
/// two clients blocked in a circle, `BLMOVE a b` and `BLMOVE b a`, would wake each other
/// forever.)
fn wrote(reply: &ShardReply) -> bool {
    !matches!(reply, ShardReply::Frame(Frame::Null | Frame::NullArray)) && !matches!(reply, ShardReply::Frame(f) if f.is_error())
}

/// A busy shard's outbox is drained as soon as it fills to its eager size rather than
/// at the end of the batch interval (`delta::outbox`).
fn wake_batcher_if_ready(shard: &mut Shard, state: &ServerState) {
    if shard.take_outbox_ready()
        && let Some(replication) = &state.replication
    {
        replication.outbox_ready.notify_one();
    }
}

/// A way to run operations on shards, for commands that touch several.
// Plain `async fn`s: their futures run on the thread that made them (a shard thread's
// local set, or the coordinator), so they need no `Send` bound.
#[allow(async_fn_in_trait)]
pub trait Shards {
    fn state(&self) -> &ServerState;

    /// The server state, owned (for work handed to the coordinator).
    fn shared_state(&self) -> Arc<ServerState>;

    /// Run operations on one shard, in order.
    async fn run(&self, shard: usize, ops: Vec<ShardOp>) -> Vec<ShardReply>;

    /// Run one operation per shard given by `groups`; replies come back in the order of
    /// `groups`.
    async fn run_groups(&self, groups: Vec<(usize, ShardOp)>) -> Vec<ShardReply>;

    /// Run `work` with every shard in `shards` parked: nothing else runs on them.
    async fn run_atomic(&self, shards: Vec<usize>, work: impl FnOnce(&mut Parked) -> Frame + Send + 'static) -> Frame;

    fn shard_count(&self) -> usize {
        self.state().router.shard_count()
    }

    fn shard_of(&self, key: &[u8]) -> usize {
        self.state().router.shard_of(key)
    }

    async fn run_one(&self, shard: usize, op: ShardOp) -> ShardReply {
        self.run(shard, vec![op]).await.pop().unwrap_or(ShardReply::Frame(Frame::static_error(SHUTTING_DOWN)))
    }

    /// The same operation on every shard, replies in shard order.
    async fn run_everywhere(&self, op: impl Fn() -> ShardOp) -> Vec<ShardReply> {
        self.run_groups((0..self.shard_count()).map(|s| (s, op())).collect()).await
    }

    /// Group keys by shard, remembering each key's position in the request.
    fn group<T>(&self, items: Vec<T>, key: impl Fn(&T) -> &[u8]) -> BTreeMap<usize, (Vec<T>, Vec<usize>)> {
        let mut groups: BTreeMap<usize, (Vec<T>, Vec<usize>)> = BTreeMap::new();
        for (i, item) in items.into_iter().enumerate() {
            let shard = self.shard_of(key(&item));
            let entry = groups.entry(shard).or_default();
            entry.0.push(item);
            entry.1.push(i);
        }
        groups
    }
}

/// A connection's way to the shards: its home shard directly, the others by message.
#[derive(Clone)]
pub struct ShardAccess {
    pub home: usize,
    pub shard: SharedShard,
    pub state: Arc<ServerState>,
}

impl ShardAccess {
    pub fn new(home: usize, shard: SharedShard, state: Arc<ServerState>) -> ShardAccess {
        ShardAccess { home, shard, state }
    }

    /// Prefetch what the home shard's commands will read (`reads`), before a pipeline
    /// runs them ([`Shard::prefetch`]). `reads` is reordered: the home shard's first.
    /// Skipped while the shard is borrowed (never, between commands) and for a lone
    /// key, which has nothing to overlap with.
    pub fn prefetch_home(&self, reads: &mut [crate::engine::kv::keyspace::Prefetch<'_>]) {
        let mut home = reads.len();
        if self.shard_count() > 1 {
            home = 0;
            for at in 0..reads.len() {
                if self.shard_of(reads[at].key) == self.home {
                    reads.swap(home, at);
                    home += 1;
                }
            }
        }
        if home < 2 {
            return;
        }
        if let Ok(shard) = self.shard.try_borrow() {
            shard.prefetch(&reads[..home]);
        }
    }
}

impl Shards for ShardAccess {
    fn state(&self) -> &ServerState {
        &self.state
    }

    fn shared_state(&self) -> Arc<ServerState> {
        self.state.clone()
    }

    async fn run(&self, shard: usize, ops: Vec<ShardOp>) -> Vec<ShardReply> {
        if shard == self.home {
            if !super::script::home_shard_free(&self.state.script_watch).await {
                return ops.iter().map(|_| ShardReply::Frame(Frame::static_error(super::script::BUSY))).collect();
            }
            return apply_local(&self.shard, &self.state, ops);
        }
        let expected = ops.len();
        let receiver = self.state.router.send(shard, ops).await;
        match receiver.await {
            Ok(replies) => replies,
            Err(_) => (0..expected).map(|_| ShardReply::Frame(Frame::static_error(SHUTTING_DOWN))).collect(),
        }
    }

    /// Remote shards run concurrently.
    async fn run_groups(&self, groups: Vec<(usize, ShardOp)>) -> Vec<ShardReply> {
        let mut receivers = Vec::with_capacity(groups.len());
        let mut local = Vec::new();
        for (i, (shard, op)) in groups.into_iter().enumerate() {
            if shard == self.home {
                local.push((i, op));
                receivers.push(None);
            } else {
                receivers.push(Some(self.state.router.send_batch(shard, super::router::Batch::of(vec![op])).await));
            }
        }
        let mut replies: Vec<Option<ShardReply>> = (0..receivers.len()).map(|_| None).collect();
        if !local.is_empty() && !super::script::home_shard_free(&self.state.script_watch).await {
            for (i, _) in local.drain(..) {
                replies[i] = Some(ShardReply::Frame(Frame::static_error(super::script::BUSY)));
            }
        }
        for (i, op) in local {
            replies[i] = apply_local(&self.shard, &self.state, vec![op]).pop();
        }
        for (i, receiver) in receivers.into_iter().enumerate() {
            if let Some(receiver) = receiver {
                replies[i] = super::idle_poll::reply(receiver, self.state.config.idle_poll()).await.and_then(|mut b| b.replies.pop());
            }
        }
        replies.into_iter().map(|r| r.unwrap_or(ShardReply::Frame(Frame::static_error(SHUTTING_DOWN)))).collect()
    }

    async fn run_atomic(&self, shards: Vec<usize>, work: impl FnOnce(&mut Parked) -> Frame + Send + 'static) -> Frame {
        self.state.coordinator.run_atomic(shards, work).await
    }
}

/// The shards a transaction holds parked, on the coordinator's thread. Every operation
/// completes at once (the parked shard answers only us), so a command run against this
/// finishes on its first poll.
pub struct ParkedShards<'a> {
    parked: RefCell<&'a mut Parked>,
    state: Arc<ServerState>,
}

impl<'a> ParkedShards<'a> {
    pub fn new(parked: &'a mut Parked, state: Arc<ServerState>) -> ParkedShards<'a> {
        ParkedShards { parked: RefCell::new(parked), state }
    }

    /// Apply one operation on a parked shard.
    pub fn apply(&self, shard: usize, op: ShardOp) -> ShardReply {
        self.parked.borrow_mut().apply(shard, op)
    }
}

impl Shards for ParkedShards<'_> {
    fn state(&self) -> &ServerState {
        &self.state
    }

    fn shared_state(&self) -> Arc<ServerState> {
        self.state.clone()
    }

    async fn run(&self, shard: usize, ops: Vec<ShardOp>) -> Vec<ShardReply> {
        ops.into_iter().map(|op| self.apply(shard, op)).collect()
    }

    async fn run_groups(&self, groups: Vec<(usize, ShardOp)>) -> Vec<ShardReply> {
        groups.into_iter().map(|(shard, op)| self.apply(shard, op)).collect()
    }

    /// Already parked: the work runs right here (the shards it names are among ours).
    async fn run_atomic(&self, _shards: Vec<usize>, work: impl FnOnce(&mut Parked) -> Frame + Send + 'static) -> Frame {
        work(&mut self.parked.borrow_mut())
    }
}
