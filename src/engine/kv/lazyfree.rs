//! Lazy free: a large collection that a whole-key remove empties (`DEL`, `UNLINK`, a
//! `SET` over the key, `FLUSHALL`, expiry) is dropped on a helper thread instead of on
//! the shard's, as Redis's lazy free does for `UNLINK`. Freeing a million elements one
//! allocation at a time takes the shard a second (docs/benchmarks.md, "Pauses"), while
//! every other client of that shard waits; handing the emptied table to another
//! thread takes a pointer move.
//!
//! Owns: the hand-off of already-unreachable values to the freeing thread, and its
//! counters. Must never: see a value a command can still reach (the engine hands over
//! only what it has already replaced), decide anything the state machine depends on
//! (where memory is returned changes no reply, digest or delta), or block the shard: a
//! full queue, or a thread that never installed a sink (the simulator, unit tests), frees
//! in place.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{SyncSender, TrySendError};

/// Values with at most this many elements are freed in place: a hand-off costs more than
/// freeing them (Redis's `LAZYFREE_THRESHOLD` is also 64).
pub const LAZYFREE_THRESHOLD: usize = 64;

/// Values queued for the freeing thread at most; past it, values are freed in place
/// (memory and the queue stay bounded even if the freeing thread falls behind).
pub const QUEUE_VALUES_MAX: usize = 1024;

/// Something to drop elsewhere.
pub type Garbage = Box<dyn Send>;

/// Values handed to the freeing thread and not yet freed (INFO `lazyfree_pending_objects`).
static PENDING: AtomicU64 = AtomicU64::new(0);
/// Values the freeing thread has freed since start (INFO `lazyfreed_objects`).
static FREED: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// This thread's way to the freeing thread; `None` frees in place.
    static SINK: RefCell<Option<SyncSender<Garbage>>> = const { RefCell::new(None) };
}

/// Start the freeing thread; every shard thread then calls [`install`] with a clone of
/// the sender. The thread ends when every sender is gone.
pub fn start() -> Result<SyncSender<Garbage>, String> {
    let (sender, receiver) = std::sync::mpsc::sync_channel::<Garbage>(QUEUE_VALUES_MAX);
    std::thread::Builder::new()
        .name("meridian-lazyfree".into())
        .spawn(move || {
            while let Ok(garbage) = receiver.recv() {
                drop(garbage);
                PENDING.fetch_sub(1, Ordering::Relaxed);
                FREED.fetch_add(1, Ordering::Relaxed);
            }
        })
        .map_err(|e| format!("cannot start the lazy-free thread: {e}"))?;
    Ok(sender)
}

/// Route this thread's large removed values to the freeing thread.
pub fn install(sender: SyncSender<Garbage>) {
    SINK.with(|sink| *sink.borrow_mut() = Some(sender));
}

/// Drop `value` (holding `elements` elements) here or on the freeing thread.
pub fn dispose<T: Send + 'static>(value: T, elements: usize) {
    if elements <= LAZYFREE_THRESHOLD {
        return;
    }
    SINK.with(|sink| {
        let sink = sink.borrow();
        let Some(sender) = sink.as_ref() else { return };
        PENDING.fetch_add(1, Ordering::Relaxed);
        match sender.try_send(Box::new(value)) {
            Ok(()) => {}
            // Full or gone: dropped here, as if lazy free were off.
            Err(TrySendError::Full(garbage) | TrySendError::Disconnected(garbage)) => {
                PENDING.fetch_sub(1, Ordering::Relaxed);
                drop(garbage);
            }
        }
    });
}

/// (values waiting to be freed, values freed since start), for INFO.
pub fn counters() -> (u64, u64) {
    (PENDING.load(Ordering::Relaxed), FREED.load(Ordering::Relaxed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_values_reach_the_freeing_thread_small_ones_and_sinkless_threads_free_in_place() {
        // A thread with no sink frees in place: nothing is counted.
        let (_, freed_before) = counters();
        std::thread::spawn(|| dispose(vec![0u8; 1000], 1000)).join().unwrap();
        let sender = start().unwrap();
        std::thread::spawn(move || {
            install(sender);
            dispose(vec![0u8; 10], 10); // small: in place
            dispose(vec![0u8; 1000], 1000); // large: handed over
        })
        .join()
        .unwrap();
        // The sender died with its thread, so the freeing thread drains and counts.
        for _ in 0..1000 {
            if counters().1 > freed_before {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(counters().1, freed_before + 1, "exactly the large value went to the freeing thread");
    }
}
