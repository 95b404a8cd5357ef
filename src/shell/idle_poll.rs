//! Waiting by polling first (`--idle-poll-us`): a shard thread's mailbox, or the
//! replies a connection waits for from other shards, tried again and again for a
//! bounded time before the task sleeps on them.
//!
//! Why: a thread that sleeps is woken by a futex or eventfd write, which on a VM means
//! waking a halted vCPU, tens of microseconds. A query that fans out to every shard
//! (FT.SEARCH, DBSIZE, a multi-key command) pays that twice, on the way out and back.
//! A thread that is still polling when the message comes serves it at once.
//!
//! Owns only the waiting. It never busy-waits without yielding: between tries the task
//! yields, so the thread's other tasks (its connections, active expiry) run, and the
//! runtime still polls sockets and timers. Never polls longer than the budget, which
//! the configuration bounds (`IDLE_POLL_US_MAX`); a budget of zero waits as before.

use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};

/// The next message of `mailbox`, if one comes within `budget`: `Some(None)` when the
/// mailbox is closed, `None` when the budget ran out with nothing (then sleep on it).
pub async fn poll_mailbox<T>(mailbox: &mut mpsc::Receiver<T>, budget: Duration) -> Option<Option<T>> {
    poll_within(budget, || match mailbox.try_recv() {
        Ok(msg) => Some(Some(msg)),
        Err(mpsc::error::TryRecvError::Disconnected) => Some(None),
        Err(mpsc::error::TryRecvError::Empty) => None,
    })
    .await
}

/// The reply `receiver` brings (`None`: its sender is gone), polled for up to
/// `budget`, then awaited. A closed channel is answered at once: a oneshot receiver
/// must not be awaited once `try_recv` has seen it finish.
pub async fn reply<T>(mut receiver: oneshot::Receiver<T>, budget: Duration) -> Option<T> {
    if budget.is_zero() {
        return receiver.await.ok();
    }
    let polled = poll_within(budget, || match receiver.try_recv() {
        Ok(value) => Some(Some(value)),
        Err(oneshot::error::TryRecvError::Closed) => Some(None),
        Err(oneshot::error::TryRecvError::Empty) => None,
    })
    .await;
    match polled {
        Some(outcome) => outcome,
        None => receiver.await.ok(),
    }
}

/// `attempt` tried until it answers or `budget` runs out (`None`), yielding between
/// tries so the thread's other tasks run; a zero budget never tries.
async fn poll_within<R>(budget: Duration, mut attempt: impl FnMut() -> Option<R>) -> Option<R> {
    if budget.is_zero() {
        return None;
    }
    let start = Instant::now();
    loop {
        if let Some(outcome) = attempt() {
            return Some(outcome);
        }
        if start.elapsed() >= budget {
            return None;
        }
        tokio::task::yield_now().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime")
    }

    #[test]
    fn a_mailbox_poll_takes_what_is_there_gives_up_after_its_budget_and_sees_a_close() {
        runtime().block_on(async {
            let (tx, mut rx) = mpsc::channel(4);
            tx.send(7).await.unwrap();
            assert_eq!(poll_mailbox(&mut rx, Duration::from_micros(50)).await, Some(Some(7)));
            let start = Instant::now();
            assert_eq!(poll_mailbox(&mut rx, Duration::from_micros(200)).await, None);
            assert!(start.elapsed() >= Duration::from_micros(200));
            assert_eq!(poll_mailbox(&mut rx, Duration::ZERO).await, None, "a zero budget never looks");
            drop(tx);
            assert_eq!(poll_mailbox(&mut rx, Duration::from_micros(50)).await, Some(None));
        });
    }

    #[test]
    fn a_polled_reply_sent_by_another_task_while_polling_arrives() {
        let local = tokio::task::LocalSet::new();
        local.block_on(&runtime(), async {
            for budget in [Duration::ZERO, Duration::from_micros(10), Duration::from_millis(50)] {
                let (tx, rx) = oneshot::channel();
                // Runs only once the poller yields: the poll must let it.
                tokio::task::spawn_local(async move { tx.send(42).unwrap() });
                assert_eq!(reply(rx, budget).await, Some(42), "budget {budget:?}");
            }
            for budget in [Duration::ZERO, Duration::from_micros(50)] {
                let (tx, rx) = oneshot::channel::<u8>();
                drop(tx);
                assert_eq!(reply(rx, budget).await, None, "a gone sender, budget {budget:?}");
            }
        });
    }
}
