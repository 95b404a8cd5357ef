//! Messages to shard threads. Every shard runs on its own thread and is reached
//! through a bounded mailbox; which shard owns a key is `routing`'s decision.

use std::net::SocketAddr;
use std::sync::mpsc as std_mpsc;

use tokio::sync::{mpsc, oneshot};

use crate::routing::shard_for_key;
use crate::shard::{ShardOp, ShardReply};

/// Messages a shard's mailbox holds at most before senders wait.
pub const MAILBOX_MESSAGES_MAX: usize = 4096;
pub enum ShardMsg {
    /// Apply these operations in order and answer with their replies.
    Batch {
        ops: Vec<ShardOp>,
        reply: oneshot::Sender<Vec<ShardReply>>,
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
}

impl Router {
    pub fn new(mailboxes: Vec<mpsc::Sender<ShardMsg>>) -> Router {
        assert!(!mailboxes.is_empty());
        Router { mailboxes }
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

    /// Send operations to a shard; the receiver yields their replies.
    pub async fn send(&self, shard: usize, ops: Vec<ShardOp>) -> oneshot::Receiver<Vec<ShardReply>> {
        let (reply, receiver) = oneshot::channel();
        // A send error means the shard thread is gone (shutdown); the receiver then
        // reports the failure to the caller.
        let _ = self.mailboxes[shard].send(ShardMsg::Batch { ops, reply }).await;
        receiver
    }
}
