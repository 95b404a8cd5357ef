//! The node's Pub/Sub switchboard: the subscription registry (`crate::pubsub`) behind
//! one lock, and each subscribed client's mailbox, bounded in bytes.
//!
//! A PUBLISH looks its recipients up and puts the message in each one's mailbox, from
//! whatever thread the publisher runs on; the subscriber's connection task takes it out
//! and writes it. A subscriber that does not read is cut off once its mailbox holds
//! the pubsub class's hard `client-output-buffer-limit` (Redis's default, 32 MiB):
//! memory never grows without bound, and that client is disconnected, as Redis does.
//! Never touches a socket.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use tokio::sync::mpsc;

use super::clients::ClientInfo;
use crate::command::SubscriptionKind;
use crate::protocol::Frame;
use crate::pubsub::{ClientId, Registry};

/// Bytes of undelivered messages a subscriber may have waiting before it is
/// disconnected (Redis: `client-output-buffer-limit pubsub 32mb 8mb 60`, hard limit).
pub const MAILBOX_BYTES_MAX: usize = 32 * 1024 * 1024;
/// The bound when `client-output-buffer-limit pubsub` sets no hard limit (0): Redis
/// would let the mailbox grow without end; here it still stops somewhere.
pub const MAILBOX_BYTES_CEILING: usize = 1 << 30;
/// What a message costs in a mailbox beyond its bytes (frame and queue overhead).
const MESSAGE_OVERHEAD_BYTES: usize = 64;

struct Mailbox {
    sender: mpsc::UnboundedSender<(Frame, usize)>,
    queued_bytes: Arc<AtomicUsize>,
    client: Arc<ClientInfo>,
}

/// A subscribed connection's end of its mailbox.
pub struct Inbox {
    receiver: mpsc::UnboundedReceiver<(Frame, usize)>,
    queued_bytes: Arc<AtomicUsize>,
}

impl Inbox {
    /// The next message, waiting for one.
    pub async fn next(&mut self) -> Option<Frame> {
        let (frame, bytes) = self.receiver.recv().await?;
        self.queued_bytes.fetch_sub(bytes, Ordering::Relaxed);
        Some(frame)
    }

    /// A message already waiting, if any.
    pub fn try_next(&mut self) -> Option<Frame> {
        let (frame, bytes) = self.receiver.try_recv().ok()?;
        self.queued_bytes.fetch_sub(bytes, Ordering::Relaxed);
        Some(frame)
    }
}

#[derive(Default)]
struct Inner {
    registry: Registry,
    mailboxes: HashMap<ClientId, Mailbox>,
}

pub struct Broker {
    inner: Mutex<Inner>,
    /// The pubsub class's hard output buffer limit (`client-output-buffer-limit`).
    mailbox_bytes_max: AtomicUsize,
    /// Subscribers disconnected for not reading (INFO `pubsub_clients_disconnected`).
    pub disconnected: AtomicU64,
    /// Messages handed to peer links, one per peer (INFO `pubsub_messages_sent_to_peers`).
    pub sent_to_peers: AtomicU64,
    /// Messages a peer never got: its link was down or its queue full, one per peer
    /// (INFO `pubsub_messages_dropped_unsent`).
    pub dropped_unsent: AtomicU64,
    /// Messages from peers delivered here (INFO `pubsub_messages_received_from_peers`).
    pub received_from_peers: AtomicU64,
    /// Messages from peers that arrived later than `REMOTE_DELAY_MS_MAX` (a link cut
    /// off, then healed) and were dropped (INFO `pubsub_messages_dropped_late`).
    pub dropped_late: AtomicU64,
}

impl Default for Broker {
    fn default() -> Self {
        Broker {
            inner: Mutex::default(),
            mailbox_bytes_max: AtomicUsize::new(MAILBOX_BYTES_MAX),
            disconnected: AtomicU64::default(),
            sent_to_peers: AtomicU64::default(),
            dropped_unsent: AtomicU64::default(),
            received_from_peers: AtomicU64::default(),
            dropped_late: AtomicU64::default(),
        }
    }
}

/// A message from another region older than this when it arrives is dropped, not
/// delivered: Pub/Sub is at-most-once and live, and a link that was cut off must not
/// replay what was published meanwhile once it heals.
pub const REMOTE_DELAY_MS_MAX: u64 = 5_000;

/// Pub/Sub messages waiting to cross one peer link (encoded frames), bounded in bytes.
#[derive(Default)]
pub struct PeerMessages {
    frames: std::collections::VecDeque<Bytes>,
    bytes: usize,
}

/// Bytes of messages one peer link may have waiting; past it, messages for that peer
/// are dropped (and counted).
pub const PEER_MESSAGES_BYTES_MAX: usize = 8 * 1024 * 1024;

impl PeerMessages {
    /// Queue a frame; false (dropped) when the queue is full.
    pub fn push(&mut self, frame: Bytes) -> bool {
        if self.bytes + frame.len() > PEER_MESSAGES_BYTES_MAX {
            return false;
        }
        self.bytes += frame.len();
        self.frames.push_back(frame);
        true
    }

    pub fn pop(&mut self) -> Option<Bytes> {
        let frame = self.frames.pop_front()?;
        self.bytes -= frame.len();
        Some(frame)
    }

    /// Drop everything (the link went down); returns how many were dropped.
    pub fn clear(&mut self) -> usize {
        let n = self.frames.len();
        self.frames.clear();
        self.bytes = 0;
        n
    }
}

fn kind_name(kind: SubscriptionKind, subscribe: bool) -> &'static str {
    match (kind, subscribe) {
        (SubscriptionKind::Channel, true) => "subscribe",
        (SubscriptionKind::Channel, false) => "unsubscribe",
        (SubscriptionKind::Pattern, true) => "psubscribe",
        (SubscriptionKind::Pattern, false) => "punsubscribe",
        (SubscriptionKind::Shard, true) => "ssubscribe",
        (SubscriptionKind::Shard, false) => "sunsubscribe",
    }
}

fn confirmation(kind: SubscriptionKind, subscribe: bool, name: Option<Bytes>, count: usize) -> Frame {
    Frame::Push(vec![Frame::bulk_str(kind_name(kind, subscribe)), name.map_or(Frame::Null, Frame::Bulk), Frame::Integer(count as i64)])
}

impl Broker {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic elsewhere while holding the lock leaves plain maps behind: still usable.
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// SUBSCRIBE / PSUBSCRIBE / SSUBSCRIBE: one confirmation per name, and the client's
    /// inbox if this opened it (its first subscription).
    pub fn subscribe(&self, client: &Arc<ClientInfo>, kind: SubscriptionKind, names: Vec<Bytes>) -> (Frame, Option<Inbox>) {
        let mut inner = self.lock();
        let mut inbox = None;
        if let std::collections::hash_map::Entry::Vacant(slot) = inner.mailboxes.entry(client.id) {
            let (sender, receiver) = mpsc::unbounded_channel();
            let queued_bytes = Arc::new(AtomicUsize::new(0));
            slot.insert(Mailbox { sender, queued_bytes: queued_bytes.clone(), client: client.clone() });
            inbox = Some(Inbox { receiver, queued_bytes });
        }
        let replies = names
            .into_iter()
            .map(|name| {
                inner.registry.subscribe(client.id, kind, &name);
                confirmation(kind, true, Some(name), inner.registry.reply_count(client.id, kind))
            })
            .collect();
        (Frame::Replies(replies), inbox)
    }

    /// UNSUBSCRIBE / PUNSUBSCRIBE / SUNSUBSCRIBE (no names: all of that kind).
    pub fn unsubscribe(&self, client: ClientId, kind: SubscriptionKind, names: Vec<Bytes>) -> Frame {
        let mut inner = self.lock();
        let names = if names.is_empty() { inner.registry.subscriptions(client, kind) } else { names };
        if names.is_empty() {
            return Frame::Replies(vec![confirmation(kind, false, None, inner.registry.reply_count(client, kind))]);
        }
        let replies = names
            .into_iter()
            .map(|name| {
                inner.registry.unsubscribe(client, kind, &name);
                confirmation(kind, false, Some(name), inner.registry.reply_count(client, kind))
            })
            .collect();
        Frame::Replies(replies)
    }

    /// Every subscription a client holds.
    pub fn subscriptions(&self, client: ClientId) -> usize {
        self.lock().registry.total(client)
    }

    /// The client left (or RESET): forget its subscriptions and its mailbox.
    pub fn leave(&self, client: ClientId) {
        let mut inner = self.lock();
        inner.registry.remove_client(client);
        inner.mailboxes.remove(&client);
    }

    /// The pubsub class's hard limit changed (0: no limit but [`MAILBOX_BYTES_CEILING`]).
    pub fn set_mailbox_bytes_max(&self, hard_bytes: usize) {
        let bytes_max = if hard_bytes == 0 { MAILBOX_BYTES_CEILING } else { hard_bytes.min(MAILBOX_BYTES_CEILING) };
        self.mailbox_bytes_max.store(bytes_max, Ordering::Relaxed);
    }

    /// PUBLISH / SPUBLISH on this node: how many subscriptions received it.
    pub fn publish(&self, shard: bool, channel: &Bytes, message: &Bytes) -> usize {
        let mailbox_bytes_max = self.mailbox_bytes_max.load(Ordering::Relaxed);
        let inner = self.lock();
        let recipients = inner.registry.recipients(shard, channel);
        for (client, pattern) in &recipients {
            let Some(mailbox) = inner.mailboxes.get(client) else { continue };
            let bytes = channel.len() + message.len() + pattern.as_ref().map_or(0, Bytes::len) + MESSAGE_OVERHEAD_BYTES;
            if mailbox.queued_bytes.load(Ordering::Relaxed) + bytes > mailbox_bytes_max {
                if !mailbox.client.killed.swap(true, Ordering::Relaxed) {
                    tracing::warn!(client = client, "pubsub subscriber disconnected: {mailbox_bytes_max} bytes of messages unread");
                    self.disconnected.fetch_add(1, Ordering::Relaxed);
                    mailbox.client.request_kill();
                }
                continue;
            }
            let frame = match (shard, pattern) {
                (true, _) => Frame::Push(vec![Frame::bulk_str("smessage"), Frame::Bulk(channel.clone()), Frame::Bulk(message.clone())]),
                (false, None) => Frame::Push(vec![Frame::bulk_str("message"), Frame::Bulk(channel.clone()), Frame::Bulk(message.clone())]),
                (false, Some(pattern)) => Frame::Push(vec![
                    Frame::bulk_str("pmessage"),
                    Frame::Bulk(pattern.clone()),
                    Frame::Bulk(channel.clone()),
                    Frame::Bulk(message.clone()),
                ]),
            };
            mailbox.queued_bytes.fetch_add(bytes, Ordering::Relaxed);
            let _ = mailbox.sender.send((frame, bytes));
        }
        recipients.len()
    }

    /// A message published in another region, sent at `sent_ms` by the sender's clock:
    /// delivered here unless it is older than `REMOTE_DELAY_MS_MAX`.
    pub fn deliver_remote(&self, sent_ms: u64, now_ms: u64, shard: bool, channel: &Bytes, message: &Bytes) {
        if now_ms.saturating_sub(sent_ms) > REMOTE_DELAY_MS_MAX {
            self.dropped_late.fetch_add(1, Ordering::Relaxed);
            return;
        }
        self.received_from_peers.fetch_add(1, Ordering::Relaxed);
        self.publish(shard, channel, message);
    }

    /// PUBSUB CHANNELS / SHARDCHANNELS.
    pub fn channels(&self, shard: bool, pattern: Option<&[u8]>) -> Vec<Bytes> {
        self.lock().registry.channels(shard, pattern)
    }

    /// PUBSUB NUMSUB / SHARDNUMSUB.
    pub fn subscribers(&self, shard: bool, channel: &[u8]) -> usize {
        self.lock().registry.subscribers(shard, channel)
    }

    /// PUBSUB NUMPAT.
    pub fn pattern_count(&self) -> usize {
        self.lock().registry.pattern_count()
    }

    /// INFO: channels and shard channels with a subscriber, and distinct patterns.
    pub fn counts(&self) -> (usize, usize, usize) {
        let inner = self.lock();
        (inner.registry.channel_count(false), inner.registry.pattern_count(), inner.registry.channel_count(true))
    }
}
