//! The bounded log of deltas a shard produced: what the persistence streamer consumes
//! (replication has its own outbox, `delta::outbox`). Deltas are recorded straight in
//! their stored encoding, so a write costs one encoding on the shard's thread and
//! shares nothing with the persistence thread. When nothing consumes deltas
//! (persistence off) the log does not record, so it costs nothing; when the streamer
//! falls behind, the log fills to its bound and the shard refuses writes with a clear
//! error instead of growing without limit.

use super::codec;
use super::{Delta, EncodedDeltas, SEGMENT_ENTRIES_MAX};
use crate::crdt::{Dot, VersionVector};

use crate::engine::kv::collection_writes::Part;
use crate::engine::kv::element::ElementRef;
use crate::engine::kv::{DeltaSink, KeyState};
use crate::routing::ShardScope;

/// Drains smaller than this start a fresh buffer: reusing one saves little, and an
/// idle shard should hold no big buffer.
pub const SPARE_BYTES_MIN: usize = 64 * 1024;

#[derive(Debug)]
pub struct DeltaLog {
    recorded: EncodedDeltas,
    entries_max: usize,
    bytes_max: usize,
    recording: bool,
    /// Deltas produced since start, recorded or not.
    pub produced: u64,
    /// Changes this shard's own writes made since start, recorded or not, counted as
    /// Redis counts its `dirty` figure: one a key, one an element (`shard::sinks`
    /// counts them; merges and tombstone collections are not writes of this shard's).
    pub changes: u64,
    /// Deltas drained since start: a position in this shard's delta stream.
    drained_total: u64,
}

impl DeltaLog {
    pub fn new(recording: bool, entries_max: usize, bytes_max: usize) -> DeltaLog {
        assert!(entries_max > 0 && bytes_max > 0);
        // One drain must fit one segment, a multi-key command's overshoot included.
        assert!(entries_max <= SEGMENT_ENTRIES_MAX as usize / 2, "delta log bound {entries_max} exceeds what a segment holds");
        DeltaLog { recorded: EncodedDeltas::default(), entries_max, bytes_max, recording, produced: 0, changes: 0, drained_total: 0 }
    }

    pub fn is_recording(&self) -> bool {
        self.recording
    }

    /// Whether one more write may be admitted.
    pub fn has_room(&self) -> bool {
        !self.recording || (self.recorded.entries < self.entries_max && self.recorded.body.len() < self.bytes_max)
    }

    pub fn len(&self) -> usize {
        self.recorded.entries
    }

    pub fn is_empty(&self) -> bool {
        self.recorded.is_empty()
    }

    /// Encoded bytes waiting to be drained.
    pub fn bytes(&self) -> usize {
        self.recorded.body.len()
    }

    /// The bytes recorded from byte `start` on (`start` read from [`DeltaLog::bytes`]
    /// before a write): the encoding of what that write recorded.
    pub fn recorded_since(&self, start: usize) -> &[u8] {
        &self.recorded.body[start..]
    }

    /// Position of the newest recorded delta in this shard's stream: once everything
    /// drained up to here is stored, every write made so far is durable.
    pub fn recorded_total(&self) -> u64 {
        self.drained_total + self.recorded.entries as u64
    }

    /// Position up to which deltas were drained.
    pub fn drained_total(&self) -> u64 {
        self.drained_total
    }

    /// Take every recorded delta, oldest first (constant time: the buffer moves).
    pub fn drain(&mut self) -> EncodedDeltas {
        self.drain_reusing(None)
    }

    /// [`DeltaLog::drain`], recording next into `spare` (a stored segment's body handed
    /// back by the persistence driver) when it is big enough.
    pub fn drain_reusing(&mut self, spare: Option<Vec<u8>>) -> EncodedDeltas {
        // The next buffer starts at the size of this one (within the log's bound), so a
        // busy shard does not regrow it through every doubling each interval (at
        // 500k SETs/s a 250 ms interval is ~14 MB: a 4 MB start copied 12 MB a drain);
        // an idle shard's last drain was small, and reserved pages not yet written
        // take no memory. A busy shard records into a stored body's buffer instead:
        // its pages are already mapped, where a fresh buffer's are faulted in again
        // write by write (~3 % of a 512-byte SET's time, docs/benchmarks.md).
        let capacity = self.recorded.body.len().min(self.bytes_max);
        let body = match spare {
            Some(mut spare) if capacity >= SPARE_BYTES_MIN && spare.capacity() >= capacity => {
                spare.clear();
                spare
            }
            _ => Vec::with_capacity(capacity),
        };
        let fresh = EncodedDeltas { body, ..EncodedDeltas::default() };
        let out = std::mem::replace(&mut self.recorded, fresh);
        self.drained_total += out.entries as u64;
        out
    }

    /// Record that tombstones under `below` were dropped, sparing the counters of
    /// `spared` (see [`Delta::Forget`]).
    pub fn forgot(&mut self, below: &VersionVector, spared: &[crate::crdt::NodeId], elements: bool, scope: ShardScope) {
        self.produced += 1;
        if self.recording {
            self.recorded.push(&Delta::Forget { below: below.clone(), spared: spared.to_vec(), elements, scope });
        }
    }
}

impl DeltaSink for DeltaLog {
    fn key_changed(&mut self, key: &[u8], state: &KeyState) {
        self.produced += 1;
        if self.recording {
            // A write admitted with room left may overshoot the bound by its own deltas
            // (a multi-key command); the next write is then refused.
            self.recorded.push_with(state.max_hlc(), |w| codec::write_key_delta(w, key, state));
        }
    }

    fn key_part_changed(&mut self, key: &[u8], part: &KeyState) {
        // The log keeps every delta in order: a part is logged as a state is.
        self.key_changed(key, part);
    }

    fn key_elements_changed(&mut self, key: &[u8], part: Part, elements: &[(&[u8], KeyState)]) {
        self.produced += 1;
        if self.recording {
            // The part delta's stamp: its elements' newest (what `max_hlc` of
            // `KeyState::part_delta` reads from the contexts they join).
            let newest = elements.iter().map(|(_, state)| state.max_hlc()).max().unwrap_or_default();
            self.recorded.push_with(newest, |w| codec::write_part_delta(w, key, part, elements));
        }
    }

    fn key_elements_pushed(&mut self, key: &[u8], elements: &[(&[u8], ElementRef<'_>)]) {
        self.produced += 1;
        if self.recording {
            // The delta's stamp: its elements' newest dot (one push writes them at one).
            let newest = elements.iter().filter_map(|(_, element)| element.plain_dot()).map(|dot| dot.hlc).max().unwrap_or_default();
            self.recorded.push_with(newest, |w| codec::write_list_push(w, key, elements));
        }
    }

    fn key_element_set(&mut self, key: &[u8], part: Part, name: &[u8], element: ElementRef<'_>) {
        self.produced += 1;
        if self.recording {
            // The stamp `max_hlc` reads from the element's state: its one dot's.
            let stamp = element.plain_dot().map(|dot| dot.hlc).unwrap_or_default();
            self.recorded.push_with(stamp, |w| codec::write_element_set(w, key, part, name, element));
        }
    }

    fn key_element_removed(&mut self, key: &[u8], part: Part, name: &[u8], old: Dot, by: Dot) {
        self.produced += 1;
        if self.recording {
            // The tombstone's stamp: the newest of its context (`max_hlc`).
            self.recorded.push_with(old.hlc.max(by.hlc), |w| codec::write_removed_element(w, key, part, name, old, by));
        }
    }

    fn flushed(&mut self, seen: &VersionVector, scope: ShardScope) {
        self.produced += 1;
        if self.recording {
            self.recorded.push(&Delta::Flush { seen: seen.clone(), scope });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crdt::{Dot, Hlc};
    use crate::engine::kv::StrVal;
    use bytes::Bytes;

    #[test]
    fn a_drained_log_decodes_to_what_was_recorded_with_its_stamp_range() {
        let mut log = DeltaLog::new(true, 1000, 1 << 20);
        let states: Vec<(Bytes, KeyState)> = [(5u64, "a"), (3, "b"), (9, "c")]
            .iter()
            .map(|(ms, k)| (Bytes::from(*k), KeyState::with_value(Dot::new(Hlc::from_parts(*ms, 0), 1), StrVal::Int(*ms as i64), None)))
            .collect();
        for (key, state) in &states {
            log.key_changed(key, state);
        }
        assert_eq!((log.len(), log.recorded_total()), (3, 3));
        let drained = log.drain();
        assert_eq!((drained.entries, drained.hlc_min, drained.hlc_max), (3, Hlc::from_parts(3, 0), Hlc::from_parts(9, 0)));
        let expected: Vec<Delta> = states.into_iter().map(|(key, state)| Delta::Key { key, state }).collect();
        assert_eq!(drained.decode().unwrap(), expected);
        assert_eq!((log.len(), log.bytes(), log.drained_total(), log.recorded_total()), (0, 0, 3, 3));
    }

    #[test]
    fn a_busy_log_records_next_into_a_big_enough_spare_and_an_idle_one_into_nothing() {
        let value = StrVal::raw(Bytes::from(vec![b'v'; 512]));
        let mut log = DeltaLog::new(true, 100_000, 64 << 20);
        let fill = |log: &mut DeltaLog, from: u64| {
            for i in 0..300u64 {
                let state = KeyState::with_value(Dot::new(Hlc::from_parts(from + i, 0), 1), value.clone(), None);
                log.key_changed(&Bytes::from(format!("key:{i}")), &state);
            }
        };
        fill(&mut log, 1);
        assert!(log.bytes() >= SPARE_BYTES_MIN, "{} bytes", log.bytes());
        let first = log.drain();
        let (spare_at, spare_capacity) = (first.body.as_ptr(), first.body.capacity());
        let expected = first.decode().unwrap();
        fill(&mut log, 1);
        // The stored body comes back as the next buffer: same allocation, emptied.
        let second = log.drain_reusing(Some(first.body));
        assert_eq!(second.decode().unwrap(), expected, "what was recorded before the swap");
        fill(&mut log, 1);
        let third = log.drain_reusing(Some(second.body));
        assert_eq!(third.body.as_ptr(), spare_at, "recorded into the spare");
        assert_eq!(third.body.capacity(), spare_capacity);
        assert_eq!(third.decode().unwrap(), expected);
        // Too small a spare is not used; an idle log takes none.
        fill(&mut log, 1);
        let small = Vec::with_capacity(16);
        let small_at = small.as_ptr();
        log.drain_reusing(Some(small));
        let fourth = log.drain_reusing(None);
        assert_ne!(fourth.body.as_ptr(), small_at);
        let idle = log.drain_reusing(Some(third.body));
        assert!(idle.is_empty());
        assert_eq!(log.recorded.body.capacity(), 0, "an idle shard holds no big buffer");
    }

    #[test]
    fn a_full_log_refuses_and_a_log_that_does_not_record_counts_only() {
        let state = KeyState::with_value(Dot::new(Hlc::from_parts(1, 0), 1), StrVal::Int(1), None);
        let mut full = DeltaLog::new(true, 2, 1 << 20);
        full.key_changed(&Bytes::from_static(b"k"), &state);
        assert!(full.has_room());
        full.key_changed(&Bytes::from_static(b"k"), &state);
        assert!(!full.has_room());
        let mut off = DeltaLog::new(false, 2, 1 << 20);
        for _ in 0..5 {
            off.key_changed(&Bytes::from_static(b"k"), &state);
        }
        assert!(off.has_room() && off.is_empty());
        assert_eq!(off.produced, 5);
    }
}
