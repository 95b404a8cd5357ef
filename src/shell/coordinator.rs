//! Multi-shard atomic commands (MSETNX, RENAME, RENAMENX and COPY across shards,
//! transactions over several shards, SORT, Lua scripts).
//!
//! One coordinator thread runs such commands one at a time. For each, it *parks* every
//! shard involved, in shard order: a parked shard takes operations only from the
//! coordinator until released. Its thread keeps running its connections' tasks, but
//! whatever they ask of the shard waits for the release (`shell::park_gate`),
//! so a long script does not stop SCRIPT KILL or a PING from being answered. With every
//! involved shard parked, the command's steps run with nothing interleaved, so the
//! command is atomic on this node. Deadlock is impossible: only this one thread parks
//! shards, and a parked shard waits on nothing but the coordinator.

use std::collections::BTreeMap;
use std::sync::mpsc as std_mpsc;

use tokio::sync::{mpsc, oneshot};

use super::router::{ParkedWork, Router, ShardMsg};
use crate::protocol::Frame;
use crate::shard::{ShardOp, ShardReply};

/// Multi-shard commands waiting for the coordinator at most.
const JOBS_QUEUED_MAX: usize = 1024;

/// Shards held still for one atomic command.
pub struct Parked {
    links: BTreeMap<usize, mpsc::Sender<ParkedWork>>,
}

impl Parked {
    /// Apply one operation on a parked shard and wait for its reply.
    pub fn apply(&mut self, shard: usize, op: ShardOp) -> ShardReply {
        let Some(link) = self.links.get(&shard) else {
            return ShardReply::Frame(Frame::static_error("ERR internal: shard not parked"));
        };
        let (reply, receiver) = std_mpsc::sync_channel(1);
        if link.blocking_send(ParkedWork::Apply { op, reply }).is_err() {
            return ShardReply::Frame(Frame::static_error("ERR shard unavailable (shutting down)"));
        }
        receiver.recv().unwrap_or_else(|_| ShardReply::Frame(Frame::static_error("ERR shard unavailable (shutting down)")))
    }
}

type Work = Box<dyn FnOnce(&mut Parked) -> Frame + Send>;

struct Job {
    shards: Vec<usize>,
    work: Work,
    reply: oneshot::Sender<Frame>,
}

#[derive(Clone)]
pub struct Coordinator {
    jobs: mpsc::Sender<Job>,
}

impl Coordinator {
    pub fn start(router: Router) -> (Coordinator, std::thread::JoinHandle<()>) {
        let (jobs, receiver) = mpsc::channel(JOBS_QUEUED_MAX);
        let handle = std::thread::Builder::new()
            .name("meridian-coordinator".into())
            .spawn(move || run(router, receiver))
            .expect("spawn the coordinator thread");
        (Coordinator { jobs }, handle)
    }

    /// Run `work` with every shard in `shards` parked.
    pub async fn run_atomic(&self, mut shards: Vec<usize>, work: impl FnOnce(&mut Parked) -> Frame + Send + 'static) -> Frame {
        shards.sort_unstable();
        shards.dedup();
        let (reply, receiver) = oneshot::channel();
        if self.jobs.send(Job { shards, work: Box::new(work), reply }).await.is_err() {
            return Frame::static_error("ERR server is shutting down");
        }
        receiver.await.unwrap_or_else(|_| Frame::static_error("ERR server is shutting down"))
    }
}

fn run(router: Router, mut jobs: mpsc::Receiver<Job>) {
    while let Some(job) = jobs.blocking_recv() {
        let mut parked = Parked { links: BTreeMap::new() };
        let mut all_parked = true;
        for &shard in &job.shards {
            let (link, work) = mpsc::channel(1);
            let (ack, acked) = std_mpsc::sync_channel(1);
            if router.mailbox(shard).blocking_send(ShardMsg::Park { parked: ack, work }).is_err() || acked.recv().is_err() {
                all_parked = false;
                break;
            }
            parked.links.insert(shard, link);
        }
        let frame = if all_parked { (job.work)(&mut parked) } else { Frame::static_error("ERR server is shutting down") };
        for link in parked.links.values() {
            let _ = link.blocking_send(ParkedWork::Release);
        }
        let _ = job.reply.send(frame);
    }
}
