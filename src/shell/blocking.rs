//! Clients blocked in BLPOP and the other blocking pops: who waits on which keys, and
//! waking them when one of those keys is written (by a client here, or by a write merged
//! from another region).
//!
//! A blocked client registers on its keys and then tries its command again; a write to
//! a key wakes the client that has waited longest on it (as Redis serves blocked clients
//! in order), and a client that popped something passes the wake-up on to the next one,
//! so one push of several elements serves several clients. A wake-up is a hint: the
//! woken client tries its non-blocking command, and waits again if someone else got
//! there first. Never touches a socket.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use tokio::sync::Notify;

use super::fanout;
use super::shards::Shards;
use crate::command::blocking::{Attempt, BlockingCommand};
use crate::command::{Command, parse_command};
use crate::protocol::Frame;
use crate::shard::ShardOp;

/// Per key, the blocked clients (id and wake-up) in the order they blocked.
type Queues = HashMap<Bytes, VecDeque<(u64, Arc<Notify>)>>;

#[derive(Default)]
pub struct Waiters {
    /// Per key, the blocked clients in the order they blocked.
    by_key: Mutex<Queues>,
    /// Clients blocked now (INFO `blocked_clients`); 0 lets writers skip the lock.
    blocked: AtomicUsize,
    next_id: AtomicU64,
}

/// A blocked client's place in the queues of its keys; leaving them on drop.
pub struct Registration<'a> {
    waiters: &'a Waiters,
    id: u64,
    keys: Vec<Bytes>,
    pub notify: Arc<Notify>,
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        self.waiters.leave(self.id, &self.keys);
    }
}

impl Waiters {
    fn lock(&self) -> MutexGuard<'_, Queues> {
        self.by_key.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn blocked_clients(&self) -> usize {
        self.blocked.load(Ordering::Relaxed)
    }

    /// Queue a client on `keys` (each key once).
    pub fn register(&self, keys: &[Bytes]) -> Registration<'_> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let notify = Arc::new(Notify::new());
        let mut unique: Vec<Bytes> = Vec::with_capacity(keys.len());
        for key in keys {
            if !unique.contains(key) {
                unique.push(key.clone());
            }
        }
        let mut by_key = self.lock();
        for key in &unique {
            by_key.entry(key.clone()).or_default().push_back((id, notify.clone()));
        }
        self.blocked.fetch_add(1, Ordering::Relaxed);
        Registration { waiters: self, id, keys: unique, notify }
    }

    fn leave(&self, id: u64, keys: &[Bytes]) {
        let mut by_key = self.lock();
        for key in keys {
            if let Some(queue) = by_key.get_mut(key) {
                queue.retain(|(waiter, _)| *waiter != id);
                if queue.is_empty() {
                    by_key.remove(key);
                }
            }
        }
        self.blocked.fetch_sub(1, Ordering::Relaxed);
    }

    /// Whether any client is blocked (writers look their keys up only then).
    pub fn is_active(&self) -> bool {
        self.blocked.load(Ordering::Relaxed) > 0
    }

    /// `keys` were written: wake the longest-waiting client on each.
    pub fn wake(&self, keys: &[Bytes]) {
        let by_key = self.lock();
        for key in keys {
            if let Some((_, notify)) = by_key.get(key).and_then(VecDeque::front) {
                notify.notify_one();
            }
        }
    }
}

/// One try of a blocking command's non-blocking form: its reply if it found something
/// (or failed: WRONGTYPE is answered at once, as Redis does), `None` if every key was
/// empty.
pub async fn try_once(access: &impl Shards, command: &BlockingCommand) -> Option<Frame> {
    match &command.attempt {
        Attempt::FirstKey { pop } => {
            for key in &command.keys {
                let Ok(Command::Key(cmd)) = parse_command(vec![Bytes::from_static(pop.as_bytes()), key.clone()]) else {
                    return Some(Frame::static_error("ERR internal: a blocking pop that does not parse"));
                };
                let reply = access.run_one(access.shard_of(key), ShardOp::Key(cmd)).await.into_frame();
                match reply {
                    Frame::Null | Frame::NullArray => continue,
                    Frame::Array(items) if items.is_empty() => continue,
                    Frame::Bulk(value) => return Some(Frame::Array(vec![Frame::Bulk(key.clone()), Frame::Bulk(value)])),
                    Frame::Array(items) => {
                        let mut reply = vec![Frame::Bulk(key.clone())];
                        reply.extend(items);
                        return Some(Frame::Array(reply));
                    }
                    other => return Some(other),
                }
            }
            None
        }
        Attempt::Command(args) => {
            let reply = match parse_command(args.clone()) {
                Ok(Command::Multi(cmd)) => fanout::multi(access, cmd).await,
                Ok(Command::Key(cmd)) => access.run_one(access.shard_of(cmd.key()), ShardOp::Key(cmd)).await.into_frame(),
                Ok(_) => Frame::static_error("ERR internal: a blocking command's attempt is not a data command"),
                Err(error) => error,
            };
            match reply {
                Frame::Null | Frame::NullArray => None,
                reply => Some(reply),
            }
        }
    }
}

/// Whether a WRONGTYPE met by a blocked client's retry is its destination's (BLMOVE,
/// BRPOPLPUSH: answered, as Redis does) rather than its source's (not answered while
/// blocked: the client waits until the key is a list again). A source can change type
/// between the retry and this look, so only a source that is a list now proves the
/// error came from the destination.
pub async fn wrong_type_is_the_destinations(access: &impl Shards, command: &BlockingCommand) -> bool {
    if !matches!(command.name, "blmove" | "brpoplpush") {
        return false;
    }
    let Some(source) = command.keys.first() else { return false };
    // A probe: it raises no keyspace notification (`keymiss`) of its own.
    let probe = fanout::quiet(ShardOp::Key(crate::command::KeyCommand::Type(source.clone())));
    let reply = access.run_one(access.shard_of(source), probe).await.into_frame();
    matches!(reply, Frame::Simple(name) if name.as_ref() == b"list")
}
