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
//! (`yield_now`, an exhausted budget) is polled again only after the others ready now.
//! `FuturesUnordered` returns to its caller once a future has yielded twice or every
//! future has been polled once, and wakes its caller to be polled again; that wake
//! goes to [`PassWaker`], which lets one poll of the pool task make a few such passes
//! (at most [`PASSES_MAX`]) instead of a turn of the runtime each. With few
//! connections every pass polled them all, so each request paid a turn of the runtime
//! for nothing (~300 instructions: a PUBLISH to one subscriber cost 3 % more than with
//! a task per connection until this; it is still ~2 % more, docs/benchmarks.md).
//!
//! A hand-written ready list (a slot per connection, its waker pushing the slot's
//! index under a mutex) measured the same as `FuturesUnordered` here (a P=1 GET from 50
//! clients: 4,972-5,020 instructions against 4,900-5,053), so the crate's is used.

use std::cell::RefCell;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use futures_util::stream::{FuturesUnordered, StreamExt};
use futures_util::task::AtomicWaker;

/// Passes over the ready connections in one poll of the pool task, at most; then the
/// task goes back to the runtime, which polls sockets, timers and the shard's mailbox
/// before it comes back. A pass polls each ready connection once.
const PASSES_MAX: usize = 4;

type ConnectionFuture = Pin<Box<dyn Future<Output = ()>>>;

/// Where the shard thread hands its new connections to the pool task.
#[derive(Clone, Default)]
pub struct ConnectionPool {
    /// Connections handed over and not yet taken by the pool task. Bounded by
    /// `maxclients` in practice: the pool task takes them on its next poll, and every
    /// connection over the limit ends at once (`connection::serve`).
    arrivals: Rc<RefCell<Vec<ConnectionFuture>>>,
    /// The pool task's wake-ups (its own waker is registered there on every poll).
    pass: Arc<PassWaker>,
}

impl ConnectionPool {
    /// Serve `connection` on this thread, among the others.
    pub fn add(&self, connection: impl Future<Output = ()> + 'static) {
        self.arrivals.borrow_mut().push(Box::pin(connection));
        // Never called while the pool task polls (a connection hands none over), so
        // this goes to the runtime; before the task's first poll there is no waker,
        // and that first poll takes the arrivals anyway.
        self.pass.task.wake();
    }

    /// The task that runs every connection handed to [`ConnectionPool::add`]; it never
    /// ends (dropping it drops every connection, which closes their sockets).
    pub fn run(&self) -> impl Future<Output = ()> + 'static {
        PoolTask {
            arrivals: self.arrivals.clone(),
            running: FuturesUnordered::new(),
            waker: Waker::from(self.pass.clone()),
            pass: self.pass.clone(),
        }
    }
}

struct PoolTask {
    arrivals: Rc<RefCell<Vec<ConnectionFuture>>>,
    running: FuturesUnordered<Isolated>,
    /// What `running` wakes when a connection is ready (or it wants another pass).
    pass: Arc<PassWaker>,
    /// `pass` as a waker, made once.
    waker: Waker,
}

/// The waker the connections' `FuturesUnordered` is polled with. A wake while the pool
/// task is polling only asks for another pass; any other wake (a socket or another
/// shard's reply, between polls) wakes the pool task through the runtime.
#[derive(Default)]
struct PassWaker {
    /// Set while the pool task polls its connections.
    polling: AtomicBool,
    /// Woken since the pool task last looked.
    woken: AtomicBool,
    /// The pool task's own waker.
    task: AtomicWaker,
}

impl Wake for PassWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // Sequentially consistent, with the two in `PoolTask::poll`: either this load
        // sees `polling` cleared and wakes the task, or the task's load after clearing
        // it sees `woken` (no wake is lost between them).
        self.woken.store(true, Ordering::SeqCst);
        if !self.polling.load(Ordering::SeqCst) {
            self.task.wake();
        }
    }
}

impl Future for PoolTask {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        this.pass.task.register(cx.waker());
        for connection in this.arrivals.borrow_mut().drain(..) {
            this.running.push(Isolated(connection));
        }
        this.pass.polling.store(true, Ordering::SeqCst);
        let mut passes = 0;
        let mut inner = Context::from_waker(&this.waker);
        loop {
            this.pass.woken.store(false, Ordering::SeqCst);
            // Each `Ready(Some)` is a connection that ended; `Ready(None)`, none left
            // (the next arrival wakes this task); `Pending`, the pass is over.
            while let Poll::Ready(Some(())) = this.running.poll_next_unpin(&mut inner) {}
            passes += 1;
            if !this.pass.woken.load(Ordering::SeqCst) || passes == PASSES_MAX {
                break;
            }
        }
        this.pass.polling.store(false, Ordering::SeqCst);
        if this.pass.woken.load(Ordering::SeqCst) {
            // Ready again (or woken from another thread meanwhile): after the runtime's turn.
            cx.waker().wake_by_ref();
        }
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

    /// Run `test` with a pool on a thread set up as a shard thread is.
    fn with_a_pool<F: Future<Output = ()>>(test: impl FnOnce(ConnectionPool) -> F) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        let local = tokio::task::LocalSet::new();
        local.block_on(&runtime, async {
            let pool = ConnectionPool::default();
            tokio::task::spawn_local(pool.run());
            test(pool).await;
        });
    }

    #[test]
    fn every_connection_runs_to_its_end_and_a_panic_ends_only_its_own() {
        with_a_pool(|pool| async move {
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

    #[test]
    fn a_connection_woken_from_another_thread_or_by_another_connection_runs() {
        with_a_pool(|pool| async move {
            let (reply_tx, reply_rx) = tokio::sync::oneshot::channel::<u32>();
            let (inbox_tx, mut inbox_rx) = tokio::sync::mpsc::unbounded_channel::<u32>();
            let got = Rc::new(RefCell::new(Vec::new()));
            // A "subscriber", woken by the "publisher" below on this thread.
            let seen = got.clone();
            pool.add(async move {
                while let Some(n) = inbox_rx.recv().await {
                    seen.borrow_mut().push(n);
                }
            });
            // A "publisher" waiting on a reply sent from another thread (as a remote
            // shard's), then waking the subscriber.
            pool.add(async move {
                let n = reply_rx.await.expect("reply");
                inbox_tx.send(n + 1).expect("send");
            });
            for _ in 0..5 {
                tokio::task::yield_now().await;
            }
            std::thread::spawn(move || reply_tx.send(41).expect("send")).join().expect("thread");
            // Bounded wait for the wake from the other thread to come through.
            for _ in 0..1000 {
                if !got.borrow().is_empty() {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            }
            assert_eq!(*got.borrow(), vec![42]);
        });
    }
}
