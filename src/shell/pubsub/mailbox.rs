//! One subscriber's mailbox: the Pub/Sub messages published to it and not yet written,
//! held already encoded (as Redis holds them in the client's reply buffer), bounded in
//! bytes, and the wake-up of the connection task that writes them.
//!
//! Publishers append from whatever thread they run on; the subscriber's connection takes
//! everything waiting in one go and writes it with one write, so a burst of messages
//! costs one wake-up and one system call per subscriber, not one per message. Bytes taken
//! but not yet written still count against the limit: what one subscriber holds in memory
//! never passes it. Never touches a socket.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::{BufMut, BytesMut};
use tokio::sync::Notify;

use crate::shell::clients::ClientInfo;

/// A mailbox buffer that grew past this while a burst passed is given back once it is
/// empty, so an idle subscriber does not keep a burst's worth of memory.
const SPARE_BYTES_MAX: usize = 64 * 1024;

/// What the publishers and the subscriber share.
struct Shared {
    pending: Mutex<Pending>,
    /// Rung when messages arrive in an empty mailbox (once per burst).
    ready: Notify,
    client: Arc<ClientInfo>,
}

#[derive(Default)]
struct Pending {
    /// Encoded messages not yet taken by the subscriber's connection.
    bytes: BytesMut,
    /// Bytes the connection took and is still writing.
    in_flight_bytes: usize,
}

/// What a publisher's delivery to one mailbox came to.
#[derive(Debug, PartialEq, Eq)]
pub enum Posted {
    Queued,
    /// Past the limit: the message is dropped and the subscriber must be disconnected.
    Full,
}

fn lock(shared: &Shared) -> MutexGuard<'_, Pending> {
    // A panic elsewhere while holding the lock leaves a plain buffer behind: still usable.
    shared.pending.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The publishers' end of a subscriber's mailbox.
pub struct Mailbox {
    shared: Arc<Shared>,
}

/// The subscriber connection's end of its mailbox.
#[derive(Clone)]
pub struct Inbox {
    shared: Arc<Shared>,
}

/// A new mailbox for `client`.
pub fn open(client: Arc<ClientInfo>) -> (Mailbox, Inbox) {
    let shared = Arc::new(Shared { pending: Mutex::default(), ready: Notify::new(), client });
    (Mailbox { shared: shared.clone() }, Inbox { shared })
}

impl Mailbox {
    pub fn client(&self) -> &ClientInfo {
        &self.shared.client
    }

    /// Queue one message, `frame` encoded for RESP2 (a `*` array); a RESP3 subscriber
    /// gets the same bytes as a `>` push. Refused when the subscriber's waiting bytes
    /// would pass `bytes_max`.
    pub fn post(&self, frame: &[u8], bytes_max: usize) -> Posted {
        debug_assert_eq!(frame.first(), Some(&b'*'), "a message is encoded as a RESP2 array");
        let resp3 = self.shared.client.resp.load(Ordering::Relaxed) == 3;
        let mut pending = lock(&self.shared);
        if pending.bytes.len() + pending.in_flight_bytes + frame.len() > bytes_max {
            return Posted::Full;
        }
        let was_empty = pending.bytes.is_empty();
        pending.bytes.put_u8(if resp3 { b'>' } else { b'*' });
        pending.bytes.extend_from_slice(&frame[1..]);
        drop(pending);
        // Messages already waiting mean the subscriber was rung and has not taken them
        // yet: one wake-up serves the whole burst.
        if was_empty {
            self.shared.ready.notify_one();
        }
        Posted::Queued
    }

    /// Queue `reply` as it is, whatever the client's protocol (a MONITOR line, a simple
    /// string in RESP2 and RESP3 alike), under the same bound as [`Mailbox::post`].
    pub fn post_raw(&self, reply: &[u8], bytes_max: usize) -> Posted {
        let mut pending = lock(&self.shared);
        if pending.bytes.len() + pending.in_flight_bytes + reply.len() > bytes_max {
            return Posted::Full;
        }
        let was_empty = pending.bytes.is_empty();
        pending.bytes.extend_from_slice(reply);
        drop(pending);
        if was_empty {
            self.shared.ready.notify_one();
        }
        Posted::Queued
    }
}

impl Inbox {
    /// Another publishers' end of this mailbox (MONITOR's lines go to the mailbox a
    /// subscribed client already has).
    pub fn mailbox(&self) -> Mailbox {
        Mailbox { shared: self.shared.clone() }
    }

    /// Returns once messages are waiting (at once if some are).
    pub async fn ready(&self) {
        loop {
            if !lock(&self.shared).bytes.is_empty() {
                return;
            }
            // A ring between the check and this wait is kept as a permit: not lost.
            self.shared.ready.notified().await;
        }
    }

    /// Move every waiting message to the end of `out`; the number of bytes moved, which
    /// count against the limit until [`Inbox::written`] says they are gone.
    pub fn take_into(&self, out: &mut BytesMut) -> usize {
        let mut pending = lock(&self.shared);
        let taken = pending.bytes.len();
        if out.is_empty() {
            // The usual case: hand the buffer over whole, and keep `out`'s allocation
            // for the next burst unless it is a big one.
            std::mem::swap(out, &mut pending.bytes);
            if pending.bytes.capacity() > SPARE_BYTES_MAX {
                pending.bytes = BytesMut::new();
            }
        } else {
            out.extend_from_slice(&pending.bytes);
            pending.bytes.clear();
        }
        pending.in_flight_bytes += taken;
        taken
    }

    /// `bytes` taken by [`Inbox::take_into`] were written (or the attempt ended).
    pub fn written(&self, bytes: usize) {
        let mut pending = lock(&self.shared);
        assert!(bytes <= pending.in_flight_bytes, "written {bytes} of {} in flight", pending.in_flight_bytes);
        pending.in_flight_bytes -= bytes;
    }

    /// Bytes waiting or being written (tests).
    #[cfg(test)]
    fn held_bytes(&self) -> usize {
        let pending = lock(&self.shared);
        pending.bytes.len() + pending.in_flight_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(resp: u8) -> Arc<ClientInfo> {
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], 6379));
        let client = crate::shell::clients::ClientRegistry::default().register(addr, addr, 0);
        client.resp.store(resp, Ordering::Relaxed);
        client
    }

    const FRAME: &[u8] = b"*3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$1\r\nm\r\n";

    #[test]
    fn a_burst_is_taken_whole_in_order_and_counts_until_written() {
        let (mailbox, inbox) = open(client(2));
        assert_eq!(mailbox.post(FRAME, 1024), Posted::Queued);
        assert_eq!(mailbox.post(b"*1\r\n$1\r\nx\r\n", 1024), Posted::Queued);
        let mut out = BytesMut::new();
        let taken = inbox.take_into(&mut out);
        assert_eq!(&out[..], [FRAME, b"*1\r\n$1\r\nx\r\n"].concat().as_slice());
        assert_eq!(taken, out.len());
        assert_eq!(inbox.held_bytes(), taken, "taken but unwritten bytes still count");
        assert_eq!(inbox.take_into(&mut out), 0, "nothing left");
        inbox.written(taken);
        assert_eq!(inbox.held_bytes(), 0);
    }

    #[test]
    fn a_message_past_the_limit_is_refused_and_one_within_it_is_not() {
        let (mailbox, inbox) = open(client(2));
        let limit = 2 * FRAME.len();
        assert_eq!(mailbox.post(FRAME, limit), Posted::Queued);
        assert_eq!(mailbox.post(FRAME, limit), Posted::Queued);
        assert_eq!(mailbox.post(FRAME, limit), Posted::Full);
        let mut out = BytesMut::new();
        let taken = inbox.take_into(&mut out);
        assert_eq!(mailbox.post(FRAME, limit), Posted::Full, "bytes being written still count");
        inbox.written(taken);
        assert_eq!(mailbox.post(FRAME, limit), Posted::Queued);
    }

    #[test]
    fn a_resp3_subscriber_gets_a_push_and_taking_appends_behind_pending_replies() {
        let (mailbox, inbox) = open(client(3));
        mailbox.post(FRAME, 1024);
        let mut out = BytesMut::from(&b"+OK\r\n"[..]);
        inbox.take_into(&mut out);
        assert_eq!(&out[..], [&b"+OK\r\n>"[..], &FRAME[1..]].concat().as_slice());
    }

    #[test]
    fn a_wait_returns_while_messages_wait_and_only_then() {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
        let wait = |inbox: &Inbox| {
            // The timer is made inside the runtime (it needs its clock).
            runtime.block_on(async { tokio::time::timeout(std::time::Duration::from_millis(20), inbox.ready()).await }).is_ok()
        };
        let (mailbox, inbox) = open(client(2));
        assert!(!wait(&inbox), "nothing posted yet");
        mailbox.post(FRAME, 1024);
        mailbox.post(FRAME, 1024);
        assert!(wait(&inbox), "posted before the wait");
        let mut out = BytesMut::new();
        inbox.take_into(&mut out);
        // The burst's ring is spent and the mailbox empty: the next wait lasts until
        // the next message.
        assert!(!wait(&inbox), "everything was taken");
        mailbox.post(FRAME, 1024);
        assert!(wait(&inbox), "a new burst rings again");
    }
}
