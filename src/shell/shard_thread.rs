//! One shard's thread: a single-threaded tokio runtime that owns the [`Shard`], serves
//! its mailbox, runs active expiry, and hosts the client connections placed on it
//! (those reach their home shard without any channel hop).

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::LocalSet;

use super::connection_pool::ConnectionPool;
use super::router::{Batch, ParkedWork, ShardMsg};
use super::shards::{SharedShard, apply_batch, apply_local};
use super::{ServerState, connection, idle_poll, now_ms, park_gate};
use crate::engine::kv::lazyfree::Garbage;
use crate::shard::{Shard, ShardOp, ShardReply};

/// Messages held while the shard is parked, at most (then the mailbox fills and its
/// senders wait, as they would for a busy shard).
const HELD_MESSAGES_MAX: usize = super::router::MAILBOX_MESSAGES_MAX;

/// How often active expiry runs when nothing is due (Redis's default `hz 10`).
const EXPIRE_TICK_MS: u64 = 100;

pub fn spawn(
    shard: Shard,
    mailbox: mpsc::Receiver<ShardMsg>,
    state: Arc<ServerState>,
    lazyfree: std::sync::mpsc::SyncSender<Garbage>,
) -> Result<std::thread::JoinHandle<()>, String> {
    let name = format!("meridian-shard-{}", shard.id());
    std::thread::Builder::new()
        .name(name)
        .spawn(move || {
            crate::engine::kv::lazyfree::install(lazyfree);
            run(shard, mailbox, state)
        })
        .map_err(|e| format!("cannot start shard thread: {e}"))
}

fn run(shard: Shard, mut mailbox: mpsc::Receiver<ShardMsg>, state: Arc<ServerState>) {
    // Planted bugs are per thread; `shell::run` has already refused a bad name.
    let _ = crate::bugs::plant_from_env();
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            tracing::error!("cannot start shard runtime: {e}");
            return;
        }
    };
    let home = shard.id();
    let shard: SharedShard = Rc::new(RefCell::new(shard));
    let local = LocalSet::new();
    local.block_on(&runtime, async {
        tokio::task::spawn_local(expire_loop(shard.clone(), state.clone()));
        let connections = ConnectionPool::default();
        tokio::task::spawn_local(connections.run());
        // Messages that touch the shard, held while the coordinator has it parked (in
        // arrival order). New connections do not wait behind them: a client can still
        // connect, and be answered BUSY or SCRIPT KILL a script, while a script runs.
        let mut held: park_gate::Held<ShardMsg> = park_gate::Held::new(HELD_MESSAGES_MAX);
        let idle_poll = state.config.idle_poll();
        loop {
            let msg = if let Some(msg) = held.take_ready(park_gate::is_parked()) {
                msg
            } else if held.is_full() {
                // Full: the mailbox's own bound holds the senders back meanwhile.
                let watch = &state.script_watch;
                tokio::select! {
                    _ = park_gate::unparked() => {}
                    _ = watch.until_busy(), if !watch.busy() => {}
                }
                if watch.busy() {
                    refuse_while_busy(&mut held);
                }
                continue;
            } else {
                let watch = &state.script_watch;
                // Nothing held: poll a while before sleeping (`--idle-poll-us`).
                let polled = if held.is_empty() { idle_poll::poll_mailbox(&mut mailbox, idle_poll).await } else { None };
                let msg = match polled {
                    Some(Some(msg)) => msg,
                    Some(None) => break,
                    None => tokio::select! {
                        msg = mailbox.recv() => match msg {
                            Some(msg) => msg,
                            None => break,
                        },
                        _ = park_gate::unparked(), if !held.is_empty() => continue,
                        _ = watch.until_busy(), if !held.is_empty() && !watch.busy() => {
                            refuse_while_busy(&mut held);
                            continue;
                        }
                    },
                };
                let touches_shard = !matches!(msg, ShardMsg::Connection { .. } | ShardMsg::ReadBarrier { .. });
                match held.admit(msg, touches_shard, park_gate::is_parked()) {
                    park_gate::Admit::Run(msg) => msg,
                    park_gate::Admit::Held => {
                        if watch.busy() {
                            refuse_while_busy(&mut held);
                        }
                        continue;
                    }
                }
            };
            match msg {
                ShardMsg::Batch { mut batch, reply } => {
                    apply_batch(&shard, &state, &mut batch);
                    let _ = reply.send(batch);
                }
                ShardMsg::Connection { stream, peer, handover } => {
                    connections.add(connection::serve(stream, peer, handover, home, shard.clone(), state.clone()));
                }
                ShardMsg::Park { parked, work } => {
                    park_gate::park();
                    tokio::task::spawn_local(serve_parked(shard.clone(), state.clone(), parked, work));
                }
                ShardMsg::DrainDeltas { reply, spare } => {
                    let mut shard = shard.borrow_mut();
                    let deltas = shard.deltas.drain_reusing(spare);
                    let _ = reply.send((deltas, shard.deltas.drained_total()));
                }
                ShardMsg::ReadBarrier { sent_ns } => {
                    let state = state.clone();
                    tokio::task::spawn_local(async move {
                        super::read_barrier::after_next_io_poll().await;
                        state.router.read_barriers().answered(home, sent_ns);
                    });
                }
                ShardMsg::Shutdown => break,
            }
        }
    });
    // Dropping the LocalSet cancels the connections' task, which closes their sockets.
    drop(local);
}

/// A script runs past its time limit: the clients' operations held for the shard are
/// answered BUSY (they have not run and will not), as Redis answers what it reads then.
/// The node's own work (merges from peers, drains, checkpoints) keeps waiting.
fn refuse_while_busy(held: &mut park_gate::Held<ShardMsg>) {
    held.sift(|msg| match msg {
        ShardMsg::Batch { mut batch, reply } if batch.ops.iter().all(is_client_op) => {
            let busy = || ShardReply::Frame(crate::protocol::Frame::static_error(super::script::BUSY));
            let Batch { ops, replies } = &mut batch;
            replies.extend(ops.drain(..).map(|_| busy()));
            let _ = reply.send(batch);
            None
        }
        other => Some(other),
    });
}

/// Whether an operation is a client's command (or part of one), as opposed to the
/// node's own work: replication, persistence, anti-entropy, statistics.
fn is_client_op(op: &ShardOp) -> bool {
    !matches!(
        op,
        ShardOp::Stats
            | ShardOp::ResetStats
            | ShardOp::ExportChunk { .. }
            | ShardOp::DeltaMark
            | ShardOp::MergeRemote(_)
            | ShardOp::MergeLeaves { .. }
            | ShardOp::ForgetStable { .. }
            | ShardOp::DrainOutbox { .. }
            | ShardOp::MerkleLeaves
            | ShardOp::ExportLeaves(_)
    )
}

/// Serve only the coordinator until it releases this shard (the gate is already
/// shut: every other task of this thread waits before touching the shard).
async fn serve_parked(
    shard: SharedShard,
    state: Arc<ServerState>,
    parked: std::sync::mpsc::SyncSender<()>,
    mut work: mpsc::Receiver<ParkedWork>,
) {
    debug_assert!(park_gate::is_parked());
    if parked.send(()).is_ok() {
        while let Some(ParkedWork::Apply { op, reply }) = work.recv().await {
            let mut replies = apply_local(&shard, &state, vec![op]);
            let _ = reply.send(replies.pop().unwrap_or(ShardReply::Count(0)));
        }
    }
    park_gate::release();
}

async fn expire_loop(shard: SharedShard, state: Arc<ServerState>) {
    loop {
        park_gate::unparked().await;
        let more_due = {
            let mut shard = shard.borrow_mut();
            let now = now_ms();
            // Active expiry raises `expired` as a lazy one does.
            super::notify::sync_flags(&mut shard, &state);
            shard.tick(now);
            super::notify::publish_raised(&mut shard, &state);
            shard.has_due_work(now)
        };
        // When a tick hit its bound (or an index build has steps left), let other
        // tasks run and come straight back.
        if more_due {
            tokio::task::yield_now().await;
        } else {
            tokio::time::sleep(Duration::from_millis(EXPIRE_TICK_MS)).await;
        }
    }
}
