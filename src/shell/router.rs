//! Routing keys to shards and messages to shard threads.
//!
//! Every shard runs on its own thread and is reached through a bounded mailbox. The
//! router decides which shard owns a key: a hash of the key, or of its `{hash tag}`
//! so that related keys can be kept on one shard (and multi-key commands on them stay
//! single-shard and atomic).

use std::hash::BuildHasher;
use std::net::SocketAddr;
use std::sync::mpsc as std_mpsc;

use tokio::sync::{mpsc, oneshot};

use crate::shard::{ShardOp, ShardReply};

/// Messages a shard's mailbox holds at most before senders wait.
pub const MAILBOX_MESSAGES_MAX: usize = 4096;
/// Seed of the routing hash; distinct from the keyspace hash so that the keys of one
/// shard still spread over all of its hash-table buckets.
const ROUTE_HASH_SEED: u64 = 0x726f_7574_655f_6b65;

pub enum ShardMsg {
    /// Apply these operations in order and answer with their replies.
    Batch { ops: Vec<ShardOp>, reply: oneshot::Sender<Vec<ShardReply>> },
    /// Serve a newly accepted client connection on this shard's thread.
    Connection { stream: std::net::TcpStream, peer: SocketAddr },
    /// Stop everything else and take operations only from `work` until released
    /// (multi-shard atomic commands; see `coordinator`).
    Park { parked: std_mpsc::SyncSender<()>, work: std_mpsc::Receiver<ParkedWork> },
    Shutdown,
}

pub enum ParkedWork {
    Apply { op: ShardOp, reply: std_mpsc::SyncSender<ShardReply> },
    Release,
}

/// The part of a key that decides its shard: the first non-empty `{...}` section, or
/// the whole key (Redis Cluster's hash-tag rule).
pub fn routing_part(key: &[u8]) -> &[u8] {
    if let Some(open) = key.iter().position(|&b| b == b'{') {
        if let Some(len) = key[open + 1..].iter().position(|&b| b == b'}') {
            if len > 0 {
                return &key[open + 1..open + 1 + len];
            }
        }
    }
    key
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
        let n = self.mailboxes.len();
        if n == 1 {
            return 0;
        }
        let hash = foldhash::fast::FixedState::with_seed(ROUTE_HASH_SEED).hash_one(routing_part(key));
        ((hash as u128 * n as u128) >> 64) as usize
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

#[cfg(test)]
mod tests {
    use super::routing_part;

    #[test]
    fn hash_tags_pick_the_routing_part() {
        assert_eq!(routing_part(b"user:{42}:name"), b"42");
        assert_eq!(routing_part(b"{}x"), b"{}x");
        assert_eq!(routing_part(b"plain"), b"plain");
        assert_eq!(routing_part(b"a{b"), b"a{b");
    }
}
