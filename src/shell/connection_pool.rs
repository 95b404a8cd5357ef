//! The client connections of one shard thread, polled as one task of its runtime.
//!
//! Owns the connections' futures from the moment the shard thread takes a connection
//! until the connection ends, and the isolation of one connection's panic from the
//! others. Never reads a socket or decides anything about a command: each future is
//! `connection::serve`, unchanged.
//!
//! Why not a task per connection: a request at pipeline depth 1 is a turn of the
//! runtime of its own, and as a task of the thread's `LocalSet` each one paid the
//! `LocalSet`'s wake and schedule, the task's own poll and the set's `run_until`
//! (~500 instructions of ~5,500 a GET; docs/benchmarks.md). Here the socket's readiness
//! wakes the connection inside a `FuturesUnordered` (a queue push), and one poll of the
//! pool task serves every connection that became ready since the last, as Redis's event
//! loop serves all ready clients in one turn.
//!
//! Fairness is the runtime's, as before: every connection's socket operations draw on
//! the cooperative budget of the pool task's poll, and a connection that yields
//! (`yield_now`, an exhausted budget) is polled again only after the others ready now
//! (`FuturesUnordered` returns to the runtime once a future has yielded twice or every
//! future has been polled once).

use std::cell::RefCell;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use futures_util::stream::{FuturesUnordered, StreamExt};

type ConnectionFuture = Pin<Box<dyn Future<Output = ()>>>;

/// Where the shard thread hands its new connections to the pool task.
#[derive(Clone, Default)]
pub struct ConnectionPool {
    arrivals: Rc<RefCell<Arrivals>>,
}

#[derive(Default)]
struct Arrivals {
    /// Connections handed over and not yet taken by the pool task. Bounded by
    /// `maxclients` in practice: the pool task takes them on its next poll, and every
    /// connection over the limit ends at once (`connection::serve`).
    waiting: Vec<ConnectionFuture>,
    /// The pool task's waker, once it has been polled.
    waker: Option<Waker>,
}

impl ConnectionPool {
    /// Serve `connection` on this thread, among the others.
    pub fn add(&self, connection: impl Future<Output = ()> + 'static) {
        let mut arrivals = self.arrivals.borrow_mut();
        arrivals.waiting.push(Box::pin(connection));
        if let Some(waker) = &arrivals.waker {
            waker.wake_by_ref();
        }
    }

    /// The task that runs every connection handed to [`ConnectionPool::add`]; it never
    /// ends (dropping it drops every connection, which closes their sockets).
    pub fn run(&self) -> impl Future<Output = ()> + 'static {
        PoolTask { arrivals: self.arrivals.clone(), running: FuturesUnordered::new() }
    }
}

struct PoolTask {
    arrivals: Rc<RefCell<Arrivals>>,
    running: FuturesUnordered<Isolated>,
}

impl Future for PoolTask {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        {
            let mut arrivals = this.arrivals.borrow_mut();
            if !arrivals.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                arrivals.waker = Some(cx.waker().clone());
            }
            for connection in arrivals.waiting.drain(..) {
                this.running.push(Isolated(connection));
            }
        }
        // Each `Ready(Some)` is a connection that ended; `Ready(None)`, none left (the
        // next arrival wakes this task); `Pending`, every ready connection has run.
        while let Poll::Ready(Some(())) = this.running.poll_next_unpin(cx) {}
        Poll::Pending
    }
}

/// A connection whose panic ends that connection alone, as a panic in a task of its own
/// did (the panic hook has reported it by the time it is caught).
struct Isolated(ConnectionFuture);

impl Future for Isolated {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let connection = self.0.as_mut();
        match std::panic::catch_unwind(AssertUnwindSafe(|| connection.poll(cx))) {
            Ok(poll) => poll,
            Err(_) => Poll::Ready(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_connection_runs_to_its_end_and_a_panic_ends_only_its_own() {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        let local = tokio::task::LocalSet::new();
        local.block_on(&runtime, async {
            let pool = ConnectionPool::default();
            tokio::task::spawn_local(pool.run());
            let done = Rc::new(RefCell::new(Vec::new()));
            for i in 0..5u32 {
                let done = done.clone();
                pool.add(async move {
                    for _ in 0..i {
                        tokio::task::yield_now().await;
                    }
                    assert!(i != 2, "planted panic of connection 2");
                    done.borrow_mut().push(i);
                });
                tokio::task::yield_now().await;
            }
            for _ in 0..50 {
                tokio::task::yield_now().await;
            }
            let mut done = done.borrow().clone();
            done.sort_unstable();
            assert_eq!(done, vec![0, 1, 3, 4]);
        });
    }
}
