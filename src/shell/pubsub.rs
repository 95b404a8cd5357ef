//! The node's Pub/Sub switchboard: the subscription registry (`crate::pubsub`) behind
//! one lock, and each subscribed client's mailbox (`mailbox`), bounded in bytes.
//!
//! A PUBLISH encodes its message once, looks its recipients up and copies the encoded
//! bytes into each one's mailbox, from whatever thread the publisher runs on; the
//! subscriber's connection task takes them out and writes them. A subscriber that does
//! not read is cut off once its mailbox holds the pubsub class's hard
//! `client-output-buffer-limit` (Redis's default, 32 MiB): memory never grows without
//! bound, and that client is disconnected, as Redis does. Never touches a socket.

mod mailbox;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::{BufMut, Bytes, BytesMut};

use super::clients::ClientInfo;
use crate::command::SubscriptionKind;
use crate::protocol::Frame;
use crate::pubsub::{ClientId, Registry};

pub use mailbox::{Inbox, Mailbox, Posted};

/// A mailbox of its own for `client` (a MONITOR client that subscribes to nothing).
pub fn open_mailbox(client: Arc<ClientInfo>) -> (Mailbox, Inbox) {
    mailbox::open(client)
}

/// PUBLISH / SPUBLISH: deliver to this node's subscribers and forward to the other
/// regions. Answers the subscribers reached on this node (those of other regions are
/// not counted).
pub fn publish(state: &super::ServerState, shard: bool, channel: Bytes, message: Bytes) -> Frame {
    let received = state.pubsub.publish(shard, &channel, &message);
    if let Some(replication) = &state.replication {
        replication.forward_publish(shard, channel, message);
    }
    Frame::Integer(received as i64)
}

/// Bytes of undelivered messages a subscriber may have waiting before it is
/// disconnected (Redis: `client-output-buffer-limit pubsub 32mb 8mb 60`, hard limit).
pub const MAILBOX_BYTES_MAX: usize = 32 * 1024 * 1024;
/// The bound when `client-output-buffer-limit pubsub` sets no hard limit (0): Redis
/// would let the mailbox grow without end; here it still stops somewhere.
pub const MAILBOX_BYTES_CEILING: usize = 1 << 30;

#[derive(Default)]
struct Inner {
    registry: Registry,
    /// Looked up once per recipient of every message: a fast fixed hash (client ids
    /// are the server's own numbers, not chosen by clients).
    mailboxes: HashMap<ClientId, Mailbox, foldhash::fast::FixedState>,
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

/// A message's bytes beyond its kind, pattern, channel and payload: an array header and
/// four bulk headers (each at most `$` + 20 digits + CRLF) and their CRLFs, plus the
/// longest kind name.
const MESSAGE_FRAMING_BYTES_MAX: usize = 4 + 4 * (1 + 20 + 2 + 2) + "pmessage".len();

/// A message as Redis sends it to a RESP2 subscriber: `[kind, pattern?, channel,
/// message]` as an array (a RESP3 subscriber gets the same with a push header).
fn encode_message(out: &mut BytesMut, kind: &[u8], pattern: Option<&[u8]>, channel: &[u8], message: &[u8]) {
    let capacity = out.capacity();
    let mut count = itoa::Buffer::new();
    out.put_u8(b'*');
    out.put_slice(count.format(3 + usize::from(pattern.is_some())).as_bytes());
    out.put_slice(b"\r\n");
    for item in [Some(kind), pattern, Some(channel), Some(message)].into_iter().flatten() {
        out.put_u8(b'$');
        out.put_slice(count.format(item.len()).as_bytes());
        out.put_slice(b"\r\n");
        out.put_slice(item);
        out.put_slice(b"\r\n");
    }
    debug_assert_eq!(out.capacity(), capacity, "encoded within the room reserved for it");
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
            let (mailbox, opened) = mailbox::open(client.clone());
            slot.insert(mailbox);
            inbox = Some(opened);
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

    /// A client's subscriptions by kind (CLIENT LIST's `sub`, `psub`, `ssub`).
    pub fn subscription_counts(&self, client: ClientId) -> [usize; 3] {
        self.lock().registry.counts(client)
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

    /// The bytes a subscriber's (or a MONITOR client's) mailbox may hold before it is
    /// disconnected.
    pub fn mailbox_bytes_max(&self) -> usize {
        self.mailbox_bytes_max.load(Ordering::Relaxed)
    }

    /// PUBLISH / SPUBLISH on this node: how many subscriptions received it.
    pub fn publish(&self, shard: bool, channel: &Bytes, message: &Bytes) -> usize {
        let mailbox_bytes_max = self.mailbox_bytes_max.load(Ordering::Relaxed);
        // Encoded once for every recipient, before the lock is taken, in a buffer sized
        // for it once (growing it step by step cost more than the encoding).
        let mut frame = BytesMut::with_capacity(MESSAGE_FRAMING_BYTES_MAX + channel.len() + message.len());
        encode_message(&mut frame, if shard { b"smessage" } else { b"message" }, None, channel, message);
        let inner = self.lock();
        let mut received = 0;
        for client in inner.registry.channel_subscribers(shard, channel) {
            received += 1;
            self.post(&inner, client, &frame, mailbox_bytes_max);
        }
        for (pattern, clients) in inner.registry.matching_patterns(shard, channel) {
            frame.clear();
            frame.reserve(MESSAGE_FRAMING_BYTES_MAX + pattern.len() + channel.len() + message.len());
            encode_message(&mut frame, b"pmessage", Some(pattern), channel, message);
            for client in clients {
                received += 1;
                self.post(&inner, client, &frame, mailbox_bytes_max);
            }
        }
        received
    }

    /// One message to one subscriber; one past its limit disconnects it instead.
    fn post(&self, inner: &Inner, client: ClientId, frame: &[u8], mailbox_bytes_max: usize) {
        let Some(mailbox) = inner.mailboxes.get(&client) else { return };
        if mailbox.post(frame, mailbox_bytes_max) == Posted::Full {
            let info = mailbox.client();
            if !info.killed.swap(true, Ordering::Relaxed) {
                tracing::warn!(client = client, "pubsub subscriber disconnected: {mailbox_bytes_max} bytes of messages unread");
                self.disconnected.fetch_add(1, Ordering::Relaxed);
                info.request_kill();
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{Protocol, encode};

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    fn client(registry: &crate::shell::clients::ClientRegistry, resp: u8) -> Arc<ClientInfo> {
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], 6379));
        let client = registry.register(addr, addr, 0);
        client.resp.store(resp, Ordering::Relaxed);
        client
    }

    fn frame(items: &[&str]) -> Frame {
        Frame::Push(items.iter().map(|item| Frame::Bulk(b(item))).collect())
    }

    fn encoded(frame: &Frame, protocol: Protocol) -> Vec<u8> {
        let mut out = BytesMut::new();
        encode(frame, protocol, &mut out);
        out.to_vec()
    }

    fn drain(inbox: &Inbox) -> Vec<u8> {
        let mut out = BytesMut::new();
        let taken = inbox.take_into(&mut out);
        inbox.written(taken);
        out.to_vec()
    }

    #[test]
    fn a_message_is_encoded_once_as_the_frame_encoder_would_for_either_protocol() {
        let clients = crate::shell::clients::ClientRegistry::default();
        let (resp2, resp3) = (client(&clients, 2), client(&clients, 3));
        let broker = Broker::default();
        let (_, inbox2) = broker.subscribe(&resp2, SubscriptionKind::Channel, vec![b("news.eu")]);
        let (_, inbox3) = broker.subscribe(&resp3, SubscriptionKind::Channel, vec![b("news.eu")]);
        broker.subscribe(&resp3, SubscriptionKind::Pattern, vec![b("news.*")]);
        let (_, shard) = broker.subscribe(&resp2, SubscriptionKind::Shard, vec![b("s")]);
        assert!(shard.is_none(), "one inbox per client, opened by its first subscription");
        assert_eq!(broker.publish(false, &b("news.eu"), &b("hello")), 3, "two subscribers and one pattern");
        assert_eq!(broker.publish(true, &b("s"), &b("")), 1);
        assert_eq!(broker.publish(false, &b("other"), &b("x")), 0);
        let message = frame(&["message", "news.eu", "hello"]);
        let (inbox2, inbox3) = (inbox2.unwrap(), inbox3.unwrap());
        assert_eq!(drain(&inbox2), [encoded(&message, Protocol::Resp2), encoded(&frame(&["smessage", "s", ""]), Protocol::Resp2)].concat());
        let pmessage = frame(&["pmessage", "news.*", "news.eu", "hello"]);
        assert_eq!(drain(&inbox3), [encoded(&message, Protocol::Resp3), encoded(&pmessage, Protocol::Resp3)].concat());
    }

    #[test]
    fn a_subscriber_past_its_limit_is_disconnected_once_and_counted() {
        let clients = crate::shell::clients::ClientRegistry::default();
        let slow = client(&clients, 2);
        let broker = Broker::default();
        broker.set_mailbox_bytes_max(100);
        let (_, inbox) = broker.subscribe(&slow, SubscriptionKind::Channel, vec![b("c")]);
        let message = b(&"x".repeat(40));
        broker.publish(false, &b("c"), &message);
        assert!(!slow.killed.load(Ordering::Relaxed), "one message fits");
        broker.publish(false, &b("c"), &message);
        broker.publish(false, &b("c"), &message);
        assert!(slow.killed.load(Ordering::Relaxed), "the second did not");
        assert_eq!(broker.disconnected.load(Ordering::Relaxed), 1, "counted once");
        assert_eq!(drain(&inbox.unwrap()).len(), 4 + 13 + 7 + 47, "only the first was kept");
    }
}
