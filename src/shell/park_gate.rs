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
use std::collections::VecDeque;
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

/// A shard thread's mailbox messages that touch the shard, held while it is parked:
/// the rule that keeps them in arrival order. A message that does not touch the shard
/// (a new connection) never waits.
pub struct Held<T> {
    queue: VecDeque<T>,
    capacity: usize,
}

/// What to do with a message the mailbox just gave.
pub enum Admit<T> {
    /// Handle it now.
    Run(T),
    /// Held behind the others.
    Held,
}

impl<T> Held<T> {
    pub fn new(capacity: usize) -> Held<T> {
        assert!(capacity > 0);
        Held { queue: VecDeque::new(), capacity }
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Full: stop taking from the mailbox (its own bound then holds the senders back).
    pub fn is_full(&self) -> bool {
        self.queue.len() >= self.capacity
    }

    /// The oldest held message, once the shard is free: it runs now, before anything the
    /// mailbox gives later.
    pub fn take_ready(&mut self, parked: bool) -> Option<T> {
        if parked { None } else { self.queue.pop_front() }
    }

    /// A message from the mailbox: it runs now unless it touches the shard and the shard
    /// is parked or older messages are still held.
    pub fn admit(&mut self, message: T, touches_shard: bool, parked: bool) -> Admit<T> {
        if touches_shard && (parked || !self.queue.is_empty()) {
            self.queue.push_back(message);
            Admit::Held
        } else {
            Admit::Run(message)
        }
    }

    /// Take every held message for `decide`, which hands back those to keep holding.
    pub fn sift(&mut self, mut decide: impl FnMut(T) -> Option<T>) {
        let held = std::mem::take(&mut self.queue);
        self.queue.extend(held.into_iter().filter_map(&mut decide));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Drives `Held` as the shard thread does, over every interleaving of arrivals and
    /// park/release up to a length: messages that touch the shard run in arrival order,
    /// never while parked, and a held message taken out always runs (the loop that once
    /// put it back behind the others spun forever).
    #[test]
    fn held_messages_run_in_arrival_order_and_never_while_parked() {
        // Steps: 0 = a shard message arrives, 1 = a connection arrives, 2 = park,
        // 3 = release.
        for length in 1..=7u32 {
            for code in 0..4u32.pow(length) {
                let steps: Vec<u32> = (0..length).map(|i| code / 4u32.pow(i) % 4).collect();
                let mut held = Held::new(64);
                let (mut parked, mut next, mut ran) = (false, 0u32, Vec::new());
                let run_ready = |held: &mut Held<u32>, parked: bool, ran: &mut Vec<u32>| {
                    let mut rounds = 0;
                    while let Some(m) = held.take_ready(parked) {
                        assert!(!parked);
                        ran.push(m);
                        rounds += 1;
                        assert!(rounds <= 64, "taking held messages ends");
                    }
                };
                for step in steps {
                    match step {
                        0 | 1 => {
                            let touches = step == 0;
                            let message = if touches { next } else { 1000 + next };
                            next += 1;
                            if let Admit::Run(m) = held.admit(message, touches, parked) {
                                assert!(!(touches && parked), "a shard message never runs while parked");
                                if touches {
                                    ran.push(m);
                                }
                            }
                        }
                        2 => parked = true,
                        _ => {
                            parked = false;
                            run_ready(&mut held, parked, &mut ran);
                        }
                    }
                }
                parked = false;
                run_ready(&mut held, parked, &mut ran);
                let mut sorted = ran.clone();
                sorted.sort_unstable();
                assert_eq!(ran, sorted, "shard messages run in arrival order");
                assert!(held.is_empty());
            }
        }
    }

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
