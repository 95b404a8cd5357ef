//! A shard's outbox: the local writes since the last replication batch.
//!
//! Each write is encoded as it happens (see [`Outgoing`]: once, on the shard's thread,
//! nothing shared with the replication thread). Deltas are whole key states, so a newer
//! state of a key supersedes the older one: a drain leaves superseded ones out and a
//! batch carries each written key once, however often it was written in the batch
//! window (DESIGN §6, "merged at the sender"). A collection's writes are parts of
//! its state (the elements written), which supersede nothing. Only local writes enter it; states
//! merged from peers never do, so nothing is echoed back. It is bounded: past its byte
//! bound it drops everything and says so, and the peers are then repaired by
//! anti-entropy instead of by unbounded memory.
//!
//! A window ends when the batch interval elapses or, under load, as soon as the outbox
//! holds `eager_bytes` ([`Outbox::take_ready`] says so once per window): the batcher
//! then works on a few tens of kilobytes that are still in the core's cache, instead of
//! ten milliseconds of writes that have long been evicted and must be read back from
//! memory, and the peers get a steady stream instead of bursts.

use crate::crdt::{Dot, NodeId, VersionVector};
use crate::delta::Delta;
use crate::delta::outgoing::Outgoing;
use crate::engine::kv::KeyState;
use crate::engine::kv::collection_writes::Part;
use crate::engine::kv::element::ElementRef;
use crate::routing::ShardScope;

/// Each key's newest item in the window's deltas, as (hash of the key, item): the key
/// itself is read back from the item's bytes, so the outbox holds no reference to it.
type ItemByKey = hashbrown::HashTable<(u64, usize)>;

/// A drained outbox starts its next window with room for what the last one held, up to
/// this: busy shards don't regrow it every window, idle ones don't hold a big one.
const REUSE_CAPACITY_BYTES_MAX: usize = 4 << 20;

fn hash_key(key: &[u8]) -> u64 {
    use std::hash::BuildHasher;
    foldhash::fast::FixedState::with_seed(0x6f75_7462_6f78).hash_one(key)
}

#[derive(Debug, Default)]
pub struct Outbox {
    own: NodeId,
    /// This window's writes, encoded as they happen, in order.
    deltas: Outgoing,
    /// Where each key's newest state is in `deltas`; an older one is superseded.
    newest: ItemByKey,
    /// Items a later write of the same key superseded (left out at the drain).
    superseded: Vec<usize>,
    bytes_max: usize,
    /// Past this many bytes the window may end early (see `take_ready`).
    eager_bytes: usize,
    /// `take_ready` said so in this window.
    ready_taken: bool,
    /// Set when the bound dropped deltas; cleared by the next drain.
    overflowed: bool,
    /// Times the bound was hit since start.
    pub overflows: u64,
}

/// What one drain hands to the replicator.
#[derive(Clone, Debug, PartialEq)]
pub struct OutboxBatch {
    pub deltas: Outgoing,
    /// Deltas were dropped since the last drain: peers need anti-entropy.
    pub overflowed: bool,
}

impl Outbox {
    pub fn new(own: NodeId, bytes_max: usize, eager_bytes: usize) -> Outbox {
        assert!(bytes_max > 0 && eager_bytes > 0);
        Outbox { own, bytes_max, eager_bytes, ..Default::default() }
    }

    /// True once per window, when the outbox first holds `eager_bytes` or more: the
    /// caller should drain it now rather than at the end of the batch interval.
    pub fn take_ready(&mut self) -> bool {
        if self.ready_taken || self.deltas.bytes_len() < self.eager_bytes {
            return false;
        }
        self.ready_taken = true;
        true
    }

    /// Deltas held (superseded ones included).
    pub fn len(&self) -> usize {
        self.deltas.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Encoded bytes held.
    pub fn bytes(&self) -> usize {
        self.deltas.bytes_len()
    }

    pub fn key_changed(&mut self, key: &[u8], state: &KeyState) {
        self.key_changed_logged(key, state, None);
    }

    /// [`Outbox::key_changed`]; `logged` is the same delta when the persistence log has
    /// just encoded it (copied instead of encoded a second time).
    pub fn key_changed_logged(&mut self, key: &[u8], state: &KeyState, logged: Option<&[u8]>) {
        let item = self.deltas.len();
        self.deltas.push_key_logged(self.own, key, state, logged);
        let hash = hash_key(key);
        let deltas = &self.deltas;
        match self.newest.entry(hash, |&(h, i)| h == hash && deltas.key_at(i) == Some(key), |&(h, _)| h) {
            hashbrown::hash_table::Entry::Occupied(mut older) => {
                self.superseded.push(older.get().1);
                older.get_mut().1 = item;
            }
            hashbrown::hash_table::Entry::Vacant(slot) => {
                slot.insert((hash, item));
            }
        }
        self.enforce_bound();
    }

    /// Part of a key's state (a collection's changed elements): it supersedes nothing
    /// and nothing supersedes it but a later whole state's drain order (a join either
    /// way, so shipping both is only bytes). Writes to one element within a window are
    /// all shipped.
    pub fn key_part_changed(&mut self, key: &[u8], part: &KeyState) {
        self.deltas.push_key(self.own, key, part);
        self.enforce_bound();
    }

    /// [`Outbox::key_part_changed`] written straight from the elements (see
    /// `DeltaSink::key_elements_changed`).
    pub fn key_elements_changed(&mut self, key: &[u8], part: Part, elements: &[(&[u8], KeyState)]) {
        self.deltas.push_part(self.own, key, part, elements);
        self.enforce_bound();
    }

    /// [`Outbox::key_elements_changed`] of a list push's new elements, written from
    /// their views (see `DeltaSink::key_elements_pushed`).
    pub fn key_elements_pushed(&mut self, key: &[u8], elements: &[(&[u8], ElementRef<'_>)], logged: Option<&[u8]>) {
        self.deltas.push_list_push(self.own, key, elements, logged);
        self.enforce_bound();
    }

    /// [`Outbox::key_elements_changed`] of one element set to one value, from its view
    /// (see `DeltaSink::key_element_set`).
    pub fn key_element_set(&mut self, key: &[u8], part: Part, name: &[u8], element: ElementRef<'_>, logged: Option<&[u8]>) {
        self.deltas.push_element_set(self.own, key, part, name, element, logged);
        self.enforce_bound();
    }

    /// [`Outbox::key_elements_changed`] of one element removed from one value at `old`
    /// by the write at `by` (see `DeltaSink::key_element_removed`).
    #[allow(clippy::too_many_arguments)]
    pub fn key_element_removed(&mut self, key: &[u8], part: Part, name: &[u8], old: Dot, by: Dot, logged: Option<&[u8]>) {
        self.deltas.push_element_removed(self.own, key, part, name, old, by, logged);
        self.enforce_bound();
    }

    pub fn flushed(&mut self, seen: &VersionVector, scope: ShardScope) {
        self.deltas.push(self.own, &Delta::Flush { seen: seen.clone(), scope });
        self.enforce_bound();
    }

    fn enforce_bound(&mut self) {
        if self.deltas.bytes_len() > self.bytes_max {
            self.deltas = Outgoing::default();
            self.newest = ItemByKey::new();
            self.superseded = Vec::new();
            self.overflowed = true;
            self.overflows += 1;
        }
    }

    /// Everything written since the last drain, each key once (its newest state), in
    /// the order written.
    pub fn drain(&mut self) -> OutboxBatch {
        // A window that ended early is followed by another under load: room for twice the
        // eager size, so it does not regrow (a copy, and fresh pages) before it ends.
        let (mut bytes, mut items) = (self.deltas.bytes_len(), self.deltas.len());
        if bytes >= self.eager_bytes {
            let room = bytes.max(2 * self.eager_bytes);
            items = items * room / bytes;
            bytes = room;
        }
        let capacity = (bytes.min(REUSE_CAPACITY_BYTES_MAX), items.min(REUSE_CAPACITY_BYTES_MAX / 32));
        let mut deltas = std::mem::replace(&mut self.deltas, Outgoing::with_capacity(capacity.0, capacity.1));
        if !self.superseded.is_empty() {
            // Compacted in place: a filtered copy grew a fresh buffer by doubling, and
            // its reallocations and copies were ~100 instructions per replicated SET.
            self.superseded.sort_unstable();
            let mut dead = self.superseded.iter().copied().peekable();
            deltas.retain(|i| {
                let superseded = dead.peek() == Some(&i);
                if superseded {
                    dead.next();
                }
                !superseded
            });
            debug_assert!(dead.next().is_none(), "every superseded item was an item of this window");
        }
        self.newest.clear();
        // The table keeps room for a window like this one, not a burst's (a window the
        // batcher took late): every write probes it, and a table past the cache misses.
        if self.newest.capacity() > 2 * capacity.1.max(64) {
            self.newest.shrink_to(capacity.1, |&(hash, _)| hash);
        }
        self.superseded.clear();
        self.ready_taken = false;
        OutboxBatch { deltas, overflowed: std::mem::take(&mut self.overflowed) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crdt::{Dot, Hlc};
    use crate::engine::kv::StrVal;
    use bytes::Bytes;

    fn state(ms: u64) -> KeyState {
        KeyState::with_value(Dot::new(Hlc::from_parts(ms, 0), 1), StrVal::Int(ms as i64), None)
    }

    #[test]
    fn a_key_written_twice_in_a_window_is_sent_once_with_its_newest_state() {
        let mut outbox = Outbox::new(1, 1 << 20, 1 << 20);
        let (key, other) = (Bytes::from_static(b"k"), Bytes::from_static(b"other"));
        outbox.key_changed(&key, &state(1));
        outbox.key_changed(&other, &state(2));
        outbox.key_changed(&key, &state(3));
        let batch = outbox.drain();
        assert_eq!(batch.deltas.decode().unwrap(), vec![Delta::Key { key: other, state: state(2) }, Delta::Key { key, state: state(3) }]);
        assert!(!batch.overflowed);
        assert!(outbox.drain().deltas.is_empty());
    }

    /// The bytes the persistence log encoded for a write, handed to the outbox, make the
    /// same batch as the outbox's own encoding: same deltas, same stamps, same dedup.
    #[test]
    fn a_delta_taken_from_the_log_ships_as_one_encoded_here() {
        let writes = [("k", 1u64, 1u16), ("other", 2, 2), ("k", 3, 1), ("big", 4, 1)];
        let stateful = |ms: u64, node: u16| {
            let value = if ms == 4 { StrVal::raw(Bytes::from(vec![b'v'; 300])) } else { StrVal::Int(ms as i64) };
            KeyState::with_value(Dot::new(Hlc::from_parts(ms, 0), node), value, if ms == 2 { Some(99) } else { None })
        };
        let mut own = Outbox::new(1, 1 << 20, 1 << 20);
        let mut copied = Outbox::new(1, 1 << 20, 1 << 20);
        let mut log = crate::delta::DeltaLog::new(true, 100, 1 << 20);
        for (key, ms, node) in writes {
            let state = stateful(ms, node);
            own.key_changed(key.as_bytes(), &state);
            let start = log.bytes();
            crate::engine::kv::DeltaSink::key_changed(&mut log, key.as_bytes(), &state);
            copied.key_changed_logged(key.as_bytes(), &state, Some(log.recorded_since(start)));
        }
        let (own, copied) = (own.drain(), copied.drain());
        assert_eq!(copied, own);
        assert_eq!(copied.deltas.len(), 3, "the first write of k was superseded");
        assert_eq!(
            (0..3).map(|i| copied.deltas.own_stamp(i)).collect::<Vec<_>>(),
            [Hlc::ZERO, Hlc::from_parts(3, 0), Hlc::from_parts(4, 0)]
        );
    }

    /// A pop's tombstone written from its two dots (`key_element_removed`), encoded
    /// here or copied from the log, ships as the built tombstone state did: the same
    /// bytes and this node's stamp in it, whoever wrote the popped element.
    #[test]
    fn a_removed_element_ships_as_its_built_tombstone() {
        let dot = |ms: u64, node: u16| Dot::new(Hlc::from_parts(ms, 0), node);
        let pops = [(dot(1, 1), dot(2, 1)), (dot(3, 2), dot(4, 1)), (dot(5, 1), dot(6, 3)), (dot(7, 3), dot(8, 2))];
        let mut built = Outbox::new(1, 1 << 20, 1 << 20);
        let mut own = Outbox::new(1, 1 << 20, 1 << 20);
        let mut copied = Outbox::new(1, 1 << 20, 1 << 20);
        let mut log = crate::delta::DeltaLog::new(true, 100, 1 << 20);
        for (i, (old, by)) in pops.into_iter().enumerate() {
            let name = [i as u8 + 1; 18];
            built.key_elements_changed(b"q", Part::List, &[(&name, KeyState::plain_removed(old, by))]);
            own.key_element_removed(b"q", Part::List, &name, old, by, None);
            let start = log.bytes();
            crate::engine::kv::DeltaSink::key_element_removed(&mut log, b"q", Part::List, &name, old, by);
            copied.key_element_removed(b"q", Part::List, &name, old, by, Some(log.recorded_since(start)));
        }
        let (built, own, copied) = (built.drain(), own.drain(), copied.drain());
        assert_eq!(own, built);
        assert_eq!(copied, built);
        assert_eq!(
            (0..4).map(|i| built.deltas.own_stamp(i)).collect::<Vec<_>>(),
            [Hlc::from_parts(2, 0), Hlc::from_parts(4, 0), Hlc::from_parts(5, 0), Hlc::ZERO]
        );
    }

    #[test]
    fn the_outbox_is_ready_once_per_window_past_its_eager_size() {
        let mut outbox = Outbox::new(1, 1 << 20, 100);
        let mut written = 0u64;
        while outbox.bytes() < 100 {
            assert!(!outbox.take_ready(), "ready at {} bytes", outbox.bytes());
            outbox.key_changed(&Bytes::from(format!("key{written}")), &state(written));
            written += 1;
        }
        assert!(outbox.take_ready());
        outbox.key_changed(&Bytes::from_static(b"more"), &state(written));
        assert!(!outbox.take_ready(), "said once per window");
        assert_eq!(outbox.drain().deltas.len() as u64, written + 1);
        assert!(!outbox.take_ready(), "an empty window is not ready");
        for i in 0..written {
            outbox.key_changed(&Bytes::from(format!("key{i}")), &state(i));
        }
        assert!(outbox.take_ready(), "the next window is ready again");
    }

    /// Superseded writes scattered through a window go, the rest keep their order; and
    /// the key table sheds a burst's room once windows are small again.
    #[test]
    fn a_drain_drops_every_superseded_write_and_a_burst_leaves_no_big_table() {
        let mut outbox = Outbox::new(1, 64 << 20, 1 << 10);
        for i in 0..20_000u64 {
            outbox.key_changed(&Bytes::from(format!("key{}", i % 15_000)), &state(i));
        }
        let burst = outbox.drain().deltas.decode().unwrap();
        let expected: Vec<Delta> =
            (5_000..20_000u64).map(|i| Delta::Key { key: Bytes::from(format!("key{}", i % 15_000)), state: state(i) }).collect();
        assert_eq!(burst, expected, "each key once, at its newest state, in the order written");
        assert!(outbox.newest.capacity() >= 15_000);
        for i in 0..10u64 {
            outbox.key_changed(&Bytes::from(format!("small{i}")), &state(i));
        }
        assert_eq!(outbox.drain().deltas.len(), 10);
        assert!(outbox.newest.capacity() < 1_000, "a burst's table is kept: {}", outbox.newest.capacity());
    }

    #[test]
    fn past_its_bound_the_outbox_drops_everything_and_reports_it_once() {
        let mut outbox = Outbox::new(1, 1000, 1000);
        for i in 0..100u64 {
            outbox.key_changed(&Bytes::from(format!("key{i}")), &state(i));
        }
        assert!(outbox.bytes() <= 1000);
        assert!(outbox.overflows >= 1);
        assert!(outbox.drain().overflowed);
        assert!(!outbox.drain().overflowed);
    }
}
