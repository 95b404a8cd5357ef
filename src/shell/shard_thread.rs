//! One shard's thread: a single-threaded tokio runtime that owns the [`Shard`], serves
//! its mailbox, runs active expiry, and hosts the client connections placed on it
//! (those reach their home shard without any channel hop).

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::LocalSet;

use super::router::{ParkedWork, ShardMsg};
use super::shards::{SharedShard, apply_local};
use super::{ServerState, connection, now_ms};
use crate::engine::kv::lazyfree::Garbage;
use crate::shard::{Shard, ShardReply};

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
        while let Some(msg) = mailbox.recv().await {
            match msg {
                ShardMsg::Batch { ops, reply } => {
                    let _ = reply.send(apply_local(&shard, &state, ops));
                }
                ShardMsg::Connection { stream, peer, handover } => {
                    tokio::task::spawn_local(connection::serve(stream, peer, handover, home, shard.clone(), state.clone()));
                }
                ShardMsg::Park { parked, work } => serve_parked(&shard, &state, parked, work),
                ShardMsg::DrainDeltas { reply } => {
                    let mut shard = shard.borrow_mut();
                    let deltas = shard.drain_deltas();
                    let _ = reply.send((deltas, shard.deltas.drained_total()));
                }
                ShardMsg::Shutdown => break,
            }
        }
    });
    // Dropping the LocalSet cancels the connection tasks, which closes their sockets.
    drop(local);
}

/// Serve only the coordinator until it releases this shard. Blocks the thread on
/// purpose: nothing else may touch the shard meanwhile.
fn serve_parked(
    shard: &SharedShard,
    state: &ServerState,
    parked: std::sync::mpsc::SyncSender<()>,
    work: std::sync::mpsc::Receiver<ParkedWork>,
) {
    if parked.send(()).is_err() {
        return;
    }
    while let Ok(ParkedWork::Apply { op, reply }) = work.recv() {
        let mut replies = apply_local(shard, state, vec![op]);
        let _ = reply.send(replies.pop().unwrap_or(ShardReply::Count(0)));
    }
}

async fn expire_loop(shard: SharedShard, state: Arc<ServerState>) {
    loop {
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
