//! Messages to shard threads. Every shard runs on its own thread and is reached
//! through a bounded mailbox; which shard owns a key is `routing`'s decision.

use std::net::SocketAddr;
use std::sync::mpsc as std_mpsc;

use tokio::sync::{mpsc, oneshot};

use super::read_barrier::{ReadBarriers, after_next_io_poll};
use crate::routing::shard_for_key;
use crate::shard::{ShardOp, ShardReply};

/// Messages a shard's mailbox holds at most before senders wait.
pub const MAILBOX_MESSAGES_MAX: usize = 4096;
/// Operations for one shard, and the room their replies go in. The shard thread sends
/// it back with `ops` emptied and `replies` filled, in order, so that a connection can
/// send the same two buffers again: a warm connection allocates nothing per remote batch.
pub struct Batch {
    pub ops: Vec<ShardOp>,
    pub replies: Vec<ShardReply>,
}

impl Batch {
    pub fn of(ops: Vec<ShardOp>) -> Batch {
        Batch { replies: Vec::with_capacity(ops.len()), ops }
    }
}

/// The replies of a batch sent with [`Router::send`]: an error when the shard thread
/// is gone (shutdown).
pub struct Replies(oneshot::Receiver<Batch>);

impl std::future::Future for Replies {
    type Output = Result<Vec<ShardReply>, oneshot::error::RecvError>;

    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<Self::Output> {
        std::pin::Pin::new(&mut self.0).poll(cx).map(|done| done.map(|batch| batch.replies))
    }
}

pub enum ShardMsg {
    /// Apply the batch's operations in order and send it back with their replies.
    Batch {
        batch: Batch,
        reply: oneshot::Sender<Batch>,
    },
    /// Serve a newly accepted client connection on this shard's thread.
    Connection {
        stream: std::net::TcpStream,
        peer: SocketAddr,
        /// Accepted while the node loaded: what it already read (see `loading`).
        handover: Option<Box<super::loading::Handover>>,
    },
    /// Touch the shard for nothing else and take operations only from `work` until
    /// released (multi-shard atomic commands and scripts; see `coordinator`). The
    /// thread keeps serving its connections meanwhile; what they ask of the shard waits
    /// (`shell::park_gate`).
    Park {
        parked: std_mpsc::SyncSender<()>,
        work: mpsc::Receiver<ParkedWork>,
    },
    /// Hand the recorded deltas to the persistence driver.
    /// The reply also says up to which position of the shard's stream it drained.
    DrainDeltas {
        reply: oneshot::Sender<(crate::delta::EncodedDeltas, u64)>,
        /// A stored segment's body buffer to record into next (`Streamer::take_spare_body`).
        spare: Option<Vec<u8>>,
    },
    /// Answer (in [`ReadBarriers`]) once this thread has polled its sockets and run the
    /// connections that had something to read ([`Router::read_barrier`]). Touches no
    /// shard.
    ReadBarrier {
        sent_ns: u64,
    },
    Shutdown,
}

pub enum ParkedWork {
    Apply { op: ShardOp, reply: std_mpsc::SyncSender<ShardReply> },
    Release,
}

#[derive(Clone)]
pub struct Router {
    mailboxes: Vec<mpsc::Sender<ShardMsg>>,
    barriers: std::sync::Arc<ReadBarriers>,
}

impl Router {
    pub fn new(mailboxes: Vec<mpsc::Sender<ShardMsg>>) -> Router {
        assert!(!mailboxes.is_empty());
        let barriers = std::sync::Arc::new(ReadBarriers::new(mailboxes.len()));
        Router { mailboxes, barriers }
    }

    pub fn shard_count(&self) -> usize {
        self.mailboxes.len()
    }

    pub fn shard_of(&self, key: &[u8]) -> usize {
        shard_for_key(key, self.mailboxes.len())
    }

    pub fn mailbox(&self, shard: usize) -> &mpsc::Sender<ShardMsg> {
        &self.mailboxes[shard]
    }

    pub fn read_barriers(&self) -> &ReadBarriers {
        &self.barriers
    }

    /// Wait until every shard thread, `home` (the caller's) included, has read what
    /// reached its sockets before `since_ns` and started the commands it held (see
    /// `read_barrier`). Microseconds on idle threads; a busy thread's current turn.
    pub async fn read_barrier(&self, home: usize, since_ns: u64) {
        let now_ns = super::arrival::now_ns().max(since_ns);
        for (thread, mailbox) in self.mailboxes.iter().enumerate() {
            // No ping is needed when one sent since `since_ns` is on its way or answered.
            if thread == home || !self.barriers.claim_ping(thread, since_ns, now_ns) {
                continue;
            }
            // A closed mailbox is a thread that stopped: it reads nothing more.
            if mailbox.send(ShardMsg::ReadBarrier { sent_ns: now_ns }).await.is_err() {
                self.barriers.answered(thread, now_ns);
            }
        }
        after_next_io_poll().await;
        for thread in (0..self.mailboxes.len()).filter(|&thread| thread != home) {
            self.barriers.wait_through(thread, since_ns).await;
        }
    }

    /// Send operations to a shard; the receiver yields their replies.
    pub async fn send(&self, shard: usize, ops: Vec<ShardOp>) -> Replies {
        Replies(self.send_batch(shard, Batch::of(ops)).await)
    }

    /// Send a batch to a shard; the receiver yields it back, replies filled (see [`Batch`]).
    pub async fn send_batch(&self, shard: usize, batch: Batch) -> oneshot::Receiver<Batch> {
        debug_assert!(batch.replies.is_empty(), "a batch is sent with room for replies, not replies");
        let (reply, receiver) = oneshot::channel();
        // A closed mailbox means the shard thread is gone (shutdown); the receiver then
        // reports the failure to the caller. Room is taken without waiting when there is
        // some (the common case: no semaphore wait set up), else waited for.
        if let Err(mpsc::error::TrySendError::Full(msg)) = self.mailboxes[shard].try_send(ShardMsg::Batch { batch, reply }) {
            let _ = self.mailboxes[shard].send(msg).await;
        }
        receiver
    }
}
