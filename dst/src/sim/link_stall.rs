//! A link's frames wait behind one whose merge a shard refused (persistence behind),
//! as the server's link does: it retries the merge in place (`shell::replication`
//! `merge_parts`) and reads nothing after it meanwhile. Offered again every
//! `MERGE_RETRY_MS`, in order; a frame of a dead connection is dropped when its turn
//! comes (`take_frame` checks the epoch). Without this, a refused batch rescheduled
//! alone let later frames of its link overtake it, and refused anti-entropy states
//! were dropped, so the batches a link sends after a round's states
//! (`PeerQueue::states_sent`) could be merged without them.

use std::collections::VecDeque;

use bytes::Bytes;

use super::{Event, Sim};

/// How long a refused frame waits before it is offered again (the server: 100 ms).
const MERGE_RETRY_MS: u64 = 50;

/// One direction of one link: `(dialer, listener, to_dialer)`.
pub(super) type LinkEnd = (usize, usize, bool);

/// Frames waiting on a link end behind a refused one, with their link epochs.
pub(super) type Stalled = VecDeque<(u32, Bytes)>;

impl Sim {
    /// A frame arrives on link `dialer -> listener` (at the dialer if `to_dialer`):
    /// taken now, or queued behind a refused one.
    pub(super) fn deliver(&mut self, dialer: usize, listener: usize, epoch: u32, to_dialer: bool, frame: Bytes) {
        let end = (dialer, listener, to_dialer);
        if let Some(waiting) = self.link_stalls.get_mut(&end) {
            waiting.push_back((epoch, frame));
            return;
        }
        if let Err(frame) = self.take_frame(dialer, listener, epoch, to_dialer, frame) {
            self.stall(end, VecDeque::from([(epoch, frame)]));
        }
    }

    /// Offer a stalled link end's frames again, in order, until one is refused.
    pub(super) fn retry_stalled(&mut self, end: LinkEnd) {
        let Some(mut waiting) = self.link_stalls.remove(&end) else { return };
        let (dialer, listener, to_dialer) = end;
        while let Some((epoch, frame)) = waiting.pop_front() {
            if let Err(frame) = self.take_frame(dialer, listener, epoch, to_dialer, frame) {
                waiting.push_front((epoch, frame));
                self.stall(end, waiting);
                return;
            }
        }
    }

    fn stall(&mut self, end: LinkEnd, waiting: Stalled) {
        assert!(!waiting.is_empty() && !self.link_stalls.contains_key(&end));
        self.link_stalls.insert(end, waiting);
        let (dialer, listener, to_dialer) = end;
        self.schedule(self.now + MERGE_RETRY_MS, Event::RetryStalled { dialer, listener, to_dialer });
    }
}
