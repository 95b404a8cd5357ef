//! Where a shard's local writes send their deltas: the persistence log, and the
//! outbox when the node has peers. Part of [`super::Shard`]; owns no state of its own
//! and never decides anything (the planted bug `hash-fields-not-persisted` aside).

use crate::crdt::{Dot, VersionVector};
use crate::delta::DeltaLog;
use crate::delta::outbox::Outbox;
use crate::engine::kv::collection_writes::Part;
use crate::engine::kv::element::ElementRef;
use crate::engine::kv::{DeltaSink, KeyState};
use crate::routing;

/// What the log recorded from byte `start` on, if anything: the delta of the write
/// just made, in the encoding the outbox would give it (the log and the outbox encode a
/// key's state, an element set and a list push with the same `delta::codec` function),
/// so the outbox copies it instead of encoding it again. Nothing when the log does not
/// record (persistence off) or skipped the write (a planted bug).
fn logged_since(log: &DeltaLog, start: usize) -> Option<&[u8]> {
    (log.is_recording() && log.bytes() > start).then(|| log.recorded_since(start))
}

/// Where a local write's delta goes: the persistence log, and the outbox when there
/// are peers.
pub(super) struct ShardSinks<'a> {
    pub(super) log: &'a mut DeltaLog,
    pub(super) outbox: Option<&'a mut Outbox>,
}

impl DeltaSink for ShardSinks<'_> {
    fn key_changed(&mut self, key: &[u8], state: &KeyState) {
        self.log.changes += 1;
        let start = self.log.bytes();
        self.log.key_changed(key, state);
        if let Some(outbox) = self.outbox.as_deref_mut() {
            outbox.key_changed_logged(key, state, logged_since(self.log, start));
        }
    }

    fn key_part_changed(&mut self, key: &[u8], part: &KeyState) {
        self.log.changes += 1;
        if !crate::bugs::active(crate::bugs::Bug::HashFieldsNotPersisted) {
            self.log.key_part_changed(key, part);
        }
        if let Some(outbox) = self.outbox.as_deref_mut() {
            outbox.key_part_changed(key, part);
        }
    }

    fn key_elements_changed(&mut self, key: &[u8], part: Part, elements: &[(&[u8], KeyState)]) {
        self.log.changes += elements.len() as u64;
        if !crate::bugs::active(crate::bugs::Bug::HashFieldsNotPersisted) {
            self.log.key_elements_changed(key, part, elements);
        }
        if let Some(outbox) = self.outbox.as_deref_mut() {
            outbox.key_elements_changed(key, part, elements);
        }
    }

    fn key_elements_pushed(&mut self, key: &[u8], elements: &[(&[u8], ElementRef<'_>)]) {
        self.log.changes += elements.len() as u64;
        let start = self.log.bytes();
        if !crate::bugs::active(crate::bugs::Bug::HashFieldsNotPersisted) {
            self.log.key_elements_pushed(key, elements);
        }
        if let Some(outbox) = self.outbox.as_deref_mut() {
            outbox.key_elements_pushed(key, elements, logged_since(self.log, start));
        }
    }

    fn key_element_set(&mut self, key: &[u8], part: Part, name: &[u8], element: ElementRef<'_>) {
        self.log.changes += 1;
        let start = self.log.bytes();
        if !crate::bugs::active(crate::bugs::Bug::HashFieldsNotPersisted) {
            self.log.key_element_set(key, part, name, element);
        }
        if let Some(outbox) = self.outbox.as_deref_mut() {
            outbox.key_element_set(key, part, name, element, logged_since(self.log, start));
        }
    }

    fn key_element_removed(&mut self, key: &[u8], part: Part, name: &[u8], old: Dot, by: Dot) {
        self.log.changes += 1;
        let start = self.log.bytes();
        if !crate::bugs::active(crate::bugs::Bug::HashFieldsNotPersisted) {
            self.log.key_element_removed(key, part, name, old, by);
        }
        if let Some(outbox) = self.outbox.as_deref_mut() {
            outbox.key_element_removed(key, part, name, old, by, logged_since(self.log, start));
        }
    }

    fn flushed(&mut self, seen: &VersionVector, scope: routing::ShardScope) {
        self.log.changes += 1;
        self.log.flushed(seen, scope);
        if let Some(outbox) = self.outbox.as_deref_mut() {
            outbox.flushed(seen, scope);
        }
    }
}
