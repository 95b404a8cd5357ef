//! [`DeltaSink`]: where a write's delta goes, as the engine hands it over. The engine
//! calls it; the shard's delta log and outbox implement it (`shard/sinks.rs`). Part of
//! the engine's interface, so it never encodes anything itself: the default methods
//! build states and defer to [`DeltaSink::key_elements_changed`].
//!
//! Must never: do I/O or read a clock (sinks are driven by the deterministic core).

use bytes::Bytes;

use super::{KeyState, collection_writes, element};
use crate::crdt::{Dot, VersionVector};
use crate::routing::ShardScope;

/// Where a write's delta goes: the shard's bounded delta log (and outbox). The key
/// handed over is always an owned, exact-size copy (the keyspace's own, or a fresh
/// one), never a slice of a client's read buffer: sinks may keep it by reference count.
pub trait DeltaSink {
    /// The key's whole new state: it supersedes any earlier state of the key not yet
    /// shipped.
    fn key_changed(&mut self, key: &[u8], state: &KeyState);
    /// Part of the key's state (some elements of a collection, or the key without its
    /// elements): joined with what came before, it supersedes nothing.
    fn key_part_changed(&mut self, key: &[u8], part: &KeyState);
    /// Some elements of one collection part, each with its new state (names distinct):
    /// the same delta as [`DeltaSink::key_part_changed`] with
    /// `KeyState::part_delta(part, elements)`. A sink that encodes writes it straight
    /// from the elements (`codec::write_part_delta`) instead of building that state.
    fn key_elements_changed(&mut self, key: &[u8], part: collection_writes::Part, elements: &[(&[u8], KeyState)]) {
        self.key_part_changed(key, &KeyState::part_delta(part, elements.iter().map(|(n, s)| (Bytes::copy_from_slice(n), s.clone()))));
    }
    /// One element of `part` that held one value at `old` removed by the write at
    /// `by`, leaving no tombstone on this node (a pop where no peer needs one): the
    /// delta is that of `KeyState::plain_removed(old, by)`. A sink that encodes writes
    /// it straight from the two dots (`codec::write_removed_element`) instead of
    /// building that state.
    fn key_element_removed(&mut self, key: &[u8], part: collection_writes::Part, name: &[u8], old: Dot, by: Dot) {
        self.key_elements_changed(key, part, &[(name, KeyState::plain_removed(old, by))]);
    }
    /// A list push's new elements, each one value at the dot its name was made with,
    /// as views ([`element::ElementRef::plain`]): the same delta as
    /// [`DeltaSink::key_elements_changed`] of their states. A sink that encodes writes
    /// it straight from the views (`codec::write_list_push`) instead of building them.
    fn key_elements_pushed(&mut self, key: &[u8], elements: &[(&[u8], element::ElementRef<'_>)]) {
        let states: Vec<(&[u8], KeyState)> = elements.iter().map(|(name, element)| (*name, element.to_state())).collect();
        self.key_elements_changed(key, collection_writes::Part::List, &states);
    }
    /// One element of a hash, set or sorted set (never a list's: see above) that now
    /// holds one value at one dot, as a view: the same delta as
    /// [`DeltaSink::key_elements_changed`] of its state. A sink that encodes writes it
    /// straight from the view (`codec::write_element_set`) instead of building it.
    fn key_element_set(&mut self, key: &[u8], part: collection_writes::Part, name: &[u8], element: element::ElementRef<'_>) {
        self.key_elements_changed(key, part, &[(name, element.to_state())]);
    }
    fn flushed(&mut self, seen: &VersionVector, scope: ShardScope);
}
