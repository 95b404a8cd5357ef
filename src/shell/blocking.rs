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
//!
//! Two orders are Redis's:
//! - *Who waited longest* is who sent the command first: clients are queued by the
//!   kernel's arrival stamp of their command (`arrival.rs`), not by when their thread got
//!   round to registering them, so two clients that block microseconds apart from two
//!   shard threads are still served in the order they sent their commands.
//! - *Before the next command*: Redis serves the clients a write woke before it runs any
//!   other command. Here a wake-up counts as *serving* until the woken client has made
//!   its try (and the wake-ups its own try made, a BLMOVE pushing to a list another
//!   client waits on, are served too); every connection waits for [`Waiters::settled`]
//!   before it runs a command. The wait is bounded ([`SETTLE_WAIT_MS_MAX`]): a woken
//!   client whose thread is stuck delays the others by that much at most. A command
//!   that arrived before the wake-up does not wait: Redis would have run it before the
//!   write that woke anyone (and a blocking command among those must be able to queue).
//!
//! The two meet in one race: a write wakes the only client queued so far, while an
//! earlier client's command sits unread in its socket because its thread has not run
//! yet (one core, two busy threads); or two clients block and a push arrives, and the
//! later client's thread runs first. So before each try a wake-up asks for, a client
//! waits for every shard thread to read what had arrived
//! ([`Router::read_barrier`](super::router::Router::read_barrier)), then tries only if
//! it is first in line on one of its keys; otherwise it wakes whoever is and waits.
//! A pop's first try waits its turn too, without the barrier (which would halve
//! BLPOP's throughput on a non-empty list): queued behind an earlier client, it leaves
//! what is there to that one, whose own try is coming or who passes the wake-up on.
//! (Redis's "BRPOPLPUSH with multiple blocked clients" timed out one CI run in a few
//! before.)

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use tokio::sync::Notify;

use super::fanout;
use super::shards::Shards;
use crate::command::blocking::{Attempt, BlockingCommand};
use crate::command::{Command, parse_command};
use crate::protocol::Frame;
use crate::shard::ShardOp;

/// The longest a command waits for woken clients to be served before it runs anyway.
pub const SETTLE_WAIT_MS_MAX: u64 = 1000;

/// One blocked client: its wake-up, and whether a wake-up is owed a try.
pub struct Waiter {
    pub notify: Notify,
    /// Set by a wake-up until the client starts the try that answers it; while set, the
    /// wake-up counts in [`Waiters::serving`].
    woken: AtomicBool,
}

/// Per key, the blocked clients (arrival stamp, id, waiter), oldest arrival first.
type Queues = HashMap<Bytes, VecDeque<(u64, u64, Arc<Waiter>)>>;

#[derive(Default)]
pub struct Waiters {
    /// Per key, the blocked clients in the order their commands arrived.
    by_key: Mutex<Queues>,
    /// Clients blocked now (INFO `blocked_clients`); 0 lets writers skip the lock.
    blocked: AtomicUsize,
    next_id: AtomicU64,
    /// Wake-ups whose client has not finished its try yet.
    serving: AtomicUsize,
    /// Signalled when `serving` drops to 0.
    settled: Notify,
    /// When `serving` last rose from 0 (arrival-stamp clock): commands that arrived
    /// earlier need not wait for the wake-ups to be served.
    serving_since_ns: AtomicU64,
}

/// A blocked client's place in the queues of its keys; leaving them on drop.
pub struct Registration<'a> {
    waiters: &'a Waiters,
    id: u64,
    keys: Vec<Bytes>,
    pub waiter: Arc<Waiter>,
}

impl Registration<'_> {
    /// Start a try: whether it answers a wake-up (then [`Waiters::served`] must follow
    /// once the try, and whatever it wrote, is done).
    pub fn take_wake(&self) -> bool {
        self.waiter.woken.swap(false, Ordering::AcqRel)
    }

    /// Whether no client that arrived earlier waits ahead of this one on some key of
    /// its: then a wake-up on that key is this client's to serve.
    pub fn is_first_in_line(&self) -> bool {
        let by_key = self.waiters.lock();
        self.keys.iter().any(|key| by_key.get(key).and_then(VecDeque::front).is_some_and(|(_, id, _)| *id == self.id))
    }
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        self.waiters.leave(self.id, &self.keys);
        // Woken, but gone before its try (timeout, disconnect): the wake-up passes to
        // whoever is first in line now (who would not try otherwise), and this one is
        // no longer being served.
        if self.take_wake() {
            self.waiters.wake(&self.keys);
            self.waiters.served(true);
        }
    }
}

impl Waiters {
    fn lock(&self) -> MutexGuard<'_, Queues> {
        self.by_key.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn blocked_clients(&self) -> usize {
        self.blocked.load(Ordering::Relaxed)
    }

    /// Queue a client on `keys` (each key once), behind every client whose command
    /// arrived before `arrived_ns` and ahead of those that arrived after.
    pub fn register(&self, keys: &[Bytes], arrived_ns: u64) -> Registration<'_> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let waiter = Arc::new(Waiter { notify: Notify::new(), woken: AtomicBool::new(false) });
        let mut unique: Vec<Bytes> = Vec::with_capacity(keys.len());
        for key in keys {
            if !unique.contains(key) {
                unique.push(key.clone());
            }
        }
        let mut by_key = self.lock();
        for key in &unique {
            let queue = by_key.entry(key.clone()).or_default();
            let at = queue.partition_point(|(stamp, other, _)| (*stamp, *other) <= (arrived_ns, id));
            queue.insert(at, (arrived_ns, id, waiter.clone()));
        }
        self.blocked.fetch_add(1, Ordering::Relaxed);
        Registration { waiters: self, id, keys: unique, waiter }
    }

    fn leave(&self, id: u64, keys: &[Bytes]) {
        let mut by_key = self.lock();
        for key in keys {
            if let Some(queue) = by_key.get_mut(key) {
                queue.retain(|(_, waiter, _)| *waiter != id);
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

    /// Every key was removed (FLUSHALL): wake the longest-waiting client on each key.
    pub fn wake_all(&self) {
        let keys: Vec<Bytes> = self.lock().keys().cloned().collect();
        self.wake(&keys);
    }

    /// `keys` were written: wake the longest-waiting client on each. Each wake-up is
    /// being served until that client's try is done.
    pub fn wake(&self, keys: &[Bytes]) {
        let by_key = self.lock();
        for key in keys {
            if let Some((_, _, waiter)) = by_key.get(key).and_then(VecDeque::front) {
                if !waiter.woken.swap(true, Ordering::AcqRel) && self.serving.fetch_add(1, Ordering::AcqRel) == 0 {
                    self.serving_since_ns.store(crate::shell::arrival::now_ns(), Ordering::Release);
                }
                waiter.notify.notify_one();
            }
        }
    }

    /// A woken client's try is over (`owed`: it answered a wake-up). Call only after the
    /// try's own writes woke whoever they wake, so the count cannot pass through 0
    /// while a chain of wake-ups is still going.
    pub fn served(&self, owed: bool) {
        if owed && self.serving.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.settled.notify_waiters();
        }
    }

    /// Whether some woken client has not made its try yet.
    pub fn is_serving(&self) -> bool {
        self.serving.load(Ordering::Acquire) > 0
    }

    /// Whether a command that arrived at `arrived_ns` must wait for the woken clients
    /// ([`Waiters::settled`]): only if it arrived after the wake-ups began.
    pub fn must_settle(&self, arrived_ns: u64) -> bool {
        self.is_serving() && arrived_ns >= self.serving_since_ns.load(Ordering::Acquire)
    }

    /// Wait until every woken client has made its try (at most [`SETTLE_WAIT_MS_MAX`]).
    pub async fn settled(&self) {
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_millis(SETTLE_WAIT_MS_MAX);
        if !super::notify_until::until(&self.settled, Some(deadline), || !self.is_serving()).await {
            tracing::debug!("blocked clients still being served after {SETTLE_WAIT_MS_MAX} ms; going on");
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

/// Once a blocking XREAD or XREADGROUP without COUNT has found nothing and waits, the
/// tries it makes when woken read at most 1,000 entries per stream, as Redis serves a
/// blocked stream reader (`XREAD_BLOCKED_DEFAULT_COUNT`): a reader woken with an old id
/// is not sent a huge reply. Its first try, made before it blocked, reads everything.
pub fn bound_woken_stream_reads(command: &mut BlockingCommand) {
    const BLOCKED_DEFAULT_COUNT: &[u8] = b"1000";
    let count_at = match command.name {
        "xread" => crate::command::stream::XREAD_ATTEMPT_STREAMS_AT - 1,
        // XREADGROUP GROUP g c COUNT n: the count's value is the sixth word.
        "xreadgroup" => 5,
        _ => return,
    };
    let Attempt::Command(args) = &mut command.attempt else { return };
    if args.get(count_at).is_some_and(|n| n.as_ref() == b"0") {
        args[count_at] = Bytes::from_static(BLOCKED_DEFAULT_COUNT);
    }
}

/// Before a blocking XREAD waits: `$` means the stream's last id *now*, so each `$` in
/// its attempt is replaced by that id (0-0 for a missing key), as Redis resolves it
/// when the client blocks. Other commands are left as they are.
pub async fn resolve_last_ids(access: &impl Shards, command: &mut BlockingCommand) {
    if command.name != "xread" {
        return;
    }
    let Attempt::Command(args) = &mut command.attempt else { return };
    let streams = crate::command::stream::XREAD_ATTEMPT_STREAMS_AT;
    let n = (args.len() - streams - 1) / 2;
    for k in 0..n {
        let (key_at, id_at) = (streams + 1 + k, streams + 1 + n + k);
        if args[id_at].as_ref() != b"$" {
            continue;
        }
        let key = args[key_at].clone();
        let probe = fanout::quiet(ShardOp::Key(crate::command::KeyCommand::Stream(Box::new(
            crate::command::stream::StreamCommand::LastId(key.clone()),
        ))));
        if let Frame::Bulk(id) = access.run_one(access.shard_of(&key), probe).await.into_frame() {
            args[id_at] = id;
        }
    }
}

/// Whether a blocked XREADGROUP's stream is gone: one of its keys holds no stream now.
pub async fn stream_gone(access: &impl Shards, command: &BlockingCommand) -> bool {
    if command.name != "xreadgroup" {
        return false;
    }
    for key in &command.keys {
        let probe = fanout::quiet(ShardOp::Key(crate::command::KeyCommand::Type(key.clone())));
        let reply = access.run_one(access.shard_of(key), probe).await.into_frame();
        if !matches!(reply, Frame::Simple(name) if name.as_ref() == b"stream") {
            return true;
        }
    }
    false
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

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> Vec<Bytes> {
        vec![Bytes::copy_from_slice(name.as_bytes())]
    }

    #[test]
    fn clients_are_queued_by_when_their_command_arrived_not_when_they_registered() {
        let waiters = Waiters::default();
        let late = waiters.register(&key("q"), 200);
        let early = waiters.register(&key("q"), 100);
        waiters.wake(&key("q"));
        assert!(early.take_wake(), "the earlier arrival is woken");
        assert!(!late.take_wake());
        drop(early);
        waiters.wake(&key("q"));
        assert!(late.take_wake(), "then the next one");
    }

    #[test]
    fn a_wake_up_is_being_served_until_the_woken_clients_try_is_done() {
        let waiters = Waiters::default();
        let blocked = waiters.register(&key("q"), 1);
        assert!(!waiters.is_serving());
        waiters.wake(&key("q"));
        waiters.wake(&key("q"));
        assert!(waiters.is_serving(), "a command must wait for the woken client");
        let owed = blocked.take_wake();
        assert!(owed && !blocked.take_wake(), "two wake-ups before a try are answered by one try");
        // The try woke someone else (a BLMOVE's push): counted before this one ends.
        let other = waiters.register(&key("dst"), 2);
        waiters.wake(&key("dst"));
        waiters.served(owed);
        assert!(waiters.is_serving(), "the chain is still being served");
        // A woken client that leaves before its try (timeout, disconnect) is done too.
        drop(other);
        assert!(!waiters.is_serving());
        drop(blocked);
        assert_eq!(waiters.blocked_clients(), 0);
    }
}
