//! Whether this shard thread's shard is parked by the coordinator, and a way to wait
//! for its release.
//!
//! A parked shard takes operations only from the coordinator (a multi-shard command or
//! a script runs on it). Its thread still runs every other task it hosts (client
//! connections, active expiry, the mailbox loop), so each of them waits here before it
//! touches the shard: one `Cell` read when nothing is parked. One gate per shard
//! thread (a thread-local), since a shard and the tasks that touch it share a thread.
//!
//! Never touches the shard itself.

use std::cell::Cell;
use std::rc::Rc;

use tokio::sync::Notify;

#[derive(Default)]
struct ParkGate {
    parked: Cell<bool>,
    released: Notify,
}

thread_local! {
    static GATE: Rc<ParkGate> = Rc::new(ParkGate::default());
}

pub fn is_parked() -> bool {
    GATE.with(|gate| gate.parked.get())
}

/// The coordinator holds this thread's shard from now on.
pub fn park() {
    GATE.with(|gate| {
        assert!(!gate.parked.get(), "a shard is parked by one coordinator job at a time");
        gate.parked.set(true);
    });
}

/// The coordinator let go: every waiter goes on.
pub fn release() {
    GATE.with(|gate| {
        gate.parked.set(false);
        gate.released.notify_waiters();
    });
}

/// Returns once this thread's shard is not parked (at once when it is not).
pub async fn unparked() {
    let gate = GATE.with(Rc::clone);
    while gate.parked.get() {
        // Made before the check below, so a release in between still wakes it.
        let released = gate.released.notified();
        if !gate.parked.get() {
            break;
        }
        released.await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waiters_go_on_at_release_and_not_before() {
        let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
        let local = tokio::task::LocalSet::new();
        local.block_on(&runtime, async {
            assert!(!is_parked());
            unparked().await;
            park();
            let done = Rc::new(Cell::new(0));
            for _ in 0..3 {
                let done = done.clone();
                tokio::task::spawn_local(async move {
                    unparked().await;
                    done.set(done.get() + 1);
                });
            }
            for _ in 0..10 {
                tokio::task::yield_now().await;
            }
            assert_eq!(done.get(), 0, "nobody passes a parked gate");
            release();
            for _ in 0..10 {
                tokio::task::yield_now().await;
            }
            assert_eq!(done.get(), 3, "every waiter goes on at release");
            assert!(!is_parked());
        });
    }
}
