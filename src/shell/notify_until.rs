//! Waiting until a condition holds that another task signals through a [`Notify`]
//! (with `notify_waiters`) whenever it may have changed, up to a deadline: the durable
//! writes' wait for the store, a command's wait for woken blocked clients, a blocked
//! client's wait for the shard threads' read barrier. Owns nothing; never decides what
//! the condition is.

use tokio::sync::Notify;
use tokio::time::Instant;

/// Wait until `holds()` is true (then true) or `deadline` passes (then what `holds()`
/// says at that moment); `None` waits as long as it takes.
pub async fn until(notify: &Notify, deadline: Option<Instant>, holds: impl Fn() -> bool) -> bool {
    loop {
        let notified = notify.notified();
        tokio::pin!(notified);
        // Registered before the look, so a signal in between is not missed.
        notified.as_mut().enable();
        if holds() {
            return true;
        }
        match deadline {
            Some(deadline) => {
                if tokio::time::timeout_at(deadline, notified).await.is_err() {
                    return holds();
                }
            }
            None => notified.await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    #[test]
    fn a_signal_after_the_condition_changed_ends_the_wait_and_the_deadline_bounds_it() {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().expect("runtime");
        runtime.block_on(async {
            let notify = Arc::new(Notify::new());
            let flag = Arc::new(AtomicBool::new(false));
            let (n, f) = (notify.clone(), flag.clone());
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(5)).await;
                f.store(true, Ordering::Release);
                n.notify_waiters();
            });
            assert!(until(&notify, None, || flag.load(Ordering::Acquire)).await);
            let soon = Instant::now() + Duration::from_millis(5);
            assert!(!until(&notify, Some(soon), || false).await, "the deadline ends a wait that never holds");
        });
    }
}
