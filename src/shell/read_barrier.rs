//! Whether each shard thread has read what reached its sockets before a given moment:
//! the certificate a blocked client waits for before it tries, so that a client that
//! blocked earlier, but whose thread had not run yet, is queued ahead of it
//! (`blocking`'s module comment).
//!
//! A thread proves it by answering a ping: it answers only after its runtime has next
//! polled the sockets and run the connections that poll woke
//! ([`after_next_io_poll`]), so a ping sent at `t` and answered proves that everything
//! that arrived before `t` has been read. Pings are shared: a client that needs proof
//! for `since` waits for any ping sent at or after `since`, and sends one only if none
//! is on its way; so many clients blocking at once cost each thread about one ping per
//! round trip, not one each.
//!
//! Owns per thread the send times of the latest ping sent and answered. Never touches
//! a shard or a socket; sending the pings is the router's.

use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::Notify;

/// The longest a client waits for a thread's answer (a thread stuck that long costs
/// only the ordering precision it would have given).
pub const READ_BARRIER_WAIT_MS_MAX: u64 = 1000;

#[derive(Default)]
struct ThreadMark {
    /// When the latest ping to this thread was sent (arrival-stamp clock).
    sent_ns: AtomicU64,
    /// When the latest ping this thread answered was sent.
    answered_ns: AtomicU64,
    answered: Notify,
}

pub struct ReadBarriers {
    threads: Vec<ThreadMark>,
}

impl ReadBarriers {
    pub fn new(threads: usize) -> ReadBarriers {
        ReadBarriers { threads: (0..threads).map(|_| ThreadMark::default()).collect() }
    }

    /// Whether `thread` has proved it read everything that arrived before `since_ns`.
    pub fn is_through(&self, thread: usize, since_ns: u64) -> bool {
        self.threads[thread].answered_ns.load(Ordering::Acquire) >= since_ns
    }

    /// Whether the caller must send `thread` a ping stamped `now_ns` to learn that it
    /// read everything that arrived before `since_ns` (no ping sent since then is on
    /// its way). If so, it is counted as sent from now on.
    pub fn claim_ping(&self, thread: usize, since_ns: u64, now_ns: u64) -> bool {
        assert!(since_ns <= now_ns, "a ping proves only what arrived before it was sent");
        let sent = &self.threads[thread].sent_ns;
        // Only a caller that will send moves the mark: had one that found a ping on its
        // way moved it too, a later caller would wait for a ping nobody sent.
        sent.fetch_update(Ordering::AcqRel, Ordering::Acquire, |latest| (latest < since_ns).then_some(now_ns.max(latest))).is_ok()
    }

    /// `thread` answered the ping sent at `sent_ns` (or will never answer it: a thread
    /// that stopped reads nothing more).
    pub fn answered(&self, thread: usize, sent_ns: u64) {
        let mark = &self.threads[thread];
        mark.answered_ns.fetch_max(sent_ns, Ordering::AcqRel);
        mark.answered.notify_waiters();
    }

    /// Wait until `thread` has proved it read everything that arrived before
    /// `since_ns`, or [`READ_BARRIER_WAIT_MS_MAX`] has passed.
    pub async fn wait_through(&self, thread: usize, since_ns: u64) {
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_millis(READ_BARRIER_WAIT_MS_MAX);
        let answered = &self.threads[thread].answered;
        if !super::notify_until::until(answered, Some(deadline), || self.is_through(thread, since_ns)).await {
            tracing::debug!(thread, "no read-barrier answer within {READ_BARRIER_WAIT_MS_MAX} ms; going on");
        }
    }
}

/// Resume once this thread's runtime has polled its I/O driver and queued the tasks
/// that poll woke: tokio wakes a yielded task only after that (`yield_now`'s contract),
/// and those tasks run first, in the order they were woken.
pub async fn after_next_io_poll() {
    tokio::task::yield_now().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ping_sent_after_the_moment_is_shared_and_its_answer_proves_it() {
        let barriers = ReadBarriers::new(2);
        assert!(!barriers.is_through(1, 100));
        assert!(barriers.claim_ping(1, 100, 150), "nothing on its way: send one");
        assert!(!barriers.claim_ping(1, 120, 160), "the ping sent at 150 will do for 120");
        assert!(barriers.claim_ping(1, 155, 170), "but not for 155");
        barriers.answered(1, 150);
        assert!(barriers.is_through(1, 120) && !barriers.is_through(1, 155));
        barriers.answered(1, 170);
        assert!(barriers.is_through(1, 155));
        assert!(!barriers.is_through(0, 1), "per thread");
    }
}
