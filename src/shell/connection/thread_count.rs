//! How many connections this thread serves now: a connection alone on its thread has
//! no other connection's replies to send its own with, so it does not yield before
//! writing them (`Connection::run`). Owns a thread-local count; never touches a
//! socket or a shard.

thread_local! {
    /// Connections served by this thread's runtime now (see [`ConnectionsHere`]).
    static CONNECTIONS_HERE: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Counts a connection served on this thread while it lives: the connection task is
/// `!Send` (a `LocalSet`'s), so it is counted and uncounted on the same thread.
pub(super) struct ConnectionsHere;

impl ConnectionsHere {
    pub(super) fn count_one() -> ConnectionsHere {
        CONNECTIONS_HERE.with(|n| n.set(n.get() + 1));
        ConnectionsHere
    }

    /// Whether another connection is served on this thread (one whose replies a yield
    /// could send together with ours).
    pub(super) fn others() -> bool {
        CONNECTIONS_HERE.with(|n| n.get() > 1)
    }
}

impl Drop for ConnectionsHere {
    fn drop(&mut self) {
        CONNECTIONS_HERE.with(|n| n.set(n.get() - 1));
    }
}
