//! A key state's collection parts (a hash's fields, a set's or sorted set's members) and the type rules
//! over them: which type a key reads as when concurrent writes of two types met (DESIGN
//! §5, type clash), the element-sized deltas a write ships, and the tombstones the
//! parts keep. The string part and the merge are in `value.rs`.

use bytes::Bytes;

use super::super::collection_writes::Part;
use super::super::elements::Elements;
use super::{KeyKind, KeyState};
use crate::crdt::{Dot, VersionVector};

impl KeyState {
    /// The key-level part of this state (value, counters, TTL, what whole-key removes
    /// saw) without the elements: the delta of a change to the key alone.
    pub fn without_elements(&self) -> KeyState {
        let mut delta = KeyState {
            ctx: self.ctx.clone(),
            value: self.value.clone(),
            counters: self.counters.clone(),
            ttl: self.ttl.clone(),
            collections: None,
        };
        for (part, elements) in self.collection_parts() {
            delta.set_part(part, Some(elements.without_entries()));
        }
        delta
    }

    /// The collection parts held, with which part each is.
    pub fn collection_parts(&self) -> impl Iterator<Item = (Part, &Elements)> + '_ {
        let parts = self.collections.as_deref().map(|c| &c.parts);
        Part::ALL.into_iter().filter_map(move |part| Some((part, parts?[part as usize].as_deref()?)))
    }

    /// The collection part `part`, if the key has ever held one.
    pub fn part(&self, part: Part) -> Option<&Elements> {
        self.collections.as_deref()?.parts[part as usize].as_deref()
    }

    /// The collection part `part` (created if absent).
    pub fn part_mut(&mut self, part: Part) -> &mut Elements {
        let collections = self.collections.get_or_insert_with(Default::default);
        collections.parts[part as usize].get_or_insert_with(|| Box::new(Elements::for_part(part)))
    }

    fn set_part(&mut self, part: Part, elements: Option<Elements>) {
        match elements {
            Some(elements) => self.collections.get_or_insert_with(Default::default).parts[part as usize] = Some(Box::new(elements)),
            None => {
                if let Some(c) = self.collections.as_deref_mut() {
                    c.parts[part as usize] = None;
                }
            }
        }
    }

    /// Rebuild with a decoded part (codec).
    pub fn with_part(mut self, part: Part, elements: Option<Elements>) -> KeyState {
        self.set_part(part, elements);
        self.normalize_collections();
        self
    }

    /// A delta carrying only these elements of part `part`.
    pub fn part_delta(part: Part, elements: impl IntoIterator<Item = (Bytes, KeyState)>) -> KeyState {
        let mut delta = KeyState::default();
        delta.set_part(part, Some(Elements::only(part, elements)));
        delta
    }

    pub fn hash_delta(fields: impl IntoIterator<Item = (Bytes, KeyState)>) -> KeyState {
        KeyState::part_delta(Part::Hash, fields)
    }

    /// A delta carrying only these set members' states.
    pub fn set_delta(members: impl IntoIterator<Item = (Bytes, KeyState)>) -> KeyState {
        KeyState::part_delta(Part::Set, members)
    }

    /// The collection parts held, for what treats them alike.
    pub(super) fn collections(&self) -> impl Iterator<Item = &Elements> + '_ {
        self.collection_parts().map(|(_, elements)| elements)
    }

    pub(super) fn collections_mut(&mut self) -> impl Iterator<Item = &mut Elements> + '_ {
        self.collections.as_deref_mut().into_iter().flat_map(|c| c.parts.iter_mut().filter_map(|p| p.as_deref_mut()))
    }

    /// Whether the key has a collection part (its writes ship element-sized deltas).
    pub fn has_collection(&self) -> bool {
        self.collections.is_some()
    }

    /// Element tombstones held over every collection part.
    pub fn element_tombstones(&self) -> usize {
        self.collections().map(|c| c.tombstones()).sum()
    }

    /// Drop every element tombstone (a node without peers keeps none).
    pub fn drop_element_tombstones(&mut self) {
        self.collections_mut().for_each(|c| c.drop_tombstones());
    }

    /// Drop the element tombstones `stable` covers in every collection part (GC);
    /// returns how many.
    pub fn forget_stable_elements(&mut self, stable: &VersionVector) -> usize {
        self.collections_mut().map(|c| c.forget_stable(stable)).sum()
    }

    /// Drop the explicit context entries `covered` covers (an element under its
    /// collection's `removed` context, which says it already).
    pub fn strip_context_covered_by(&mut self, covered: &VersionVector) {
        self.ctx.update(|c| c.remove_covered_by(covered));
    }

    /// Join `dot` to the explicit context with no write of its own (a whole-key
    /// remove's dot on the tombstone of an element it removed; see
    /// [`Elements::remove_held`]).
    pub fn witness(&mut self, dot: Dot) {
        self.ctx.update(|c| c.add(dot));
        self.normalize_context();
    }

    /// Whether `covered` covers some explicit context entry.
    pub fn has_context_covered_by(&self, covered: &VersionVector) -> bool {
        self.ctx.iter().any(|d| covered.covers(d))
    }

    /// The one value and its dot, when that is all this state holds (no explicit
    /// context, counters, TTL or elements): the compact form of an element (see
    /// `element.rs`).
    pub fn plain_value(&self) -> Option<(Dot, &super::StrVal)> {
        if !self.ctx.is_empty() || self.counters.is_some() || !self.ttl.is_empty() || self.collections.is_some() {
            return None;
        }
        match self.value.entries() {
            [(dot, value)] => Some((*dot, value)),
            _ => None,
        }
    }

    /// Whether this is a valid element state: no TTL, no elements of its own.
    pub fn is_element(&self) -> bool {
        self.ttl.is_empty() && self.collections.is_none()
    }

    /// Nothing at all: no value, no history.
    pub fn is_blank(&self) -> bool {
        self.ctx.is_empty() && self.value.is_empty() && self.counters.is_none() && self.ttl.is_empty() && !self.has_collection()
    }

    /// A hash's fields, if the key has ever held one.
    pub fn hash(&self) -> Option<&Elements> {
        self.part(Part::Hash)
    }

    pub fn hash_mut(&mut self) -> &mut Elements {
        self.part_mut(Part::Hash)
    }

    /// A set's members, if the key has ever held one.
    pub fn set_members(&self) -> Option<&Elements> {
        self.part(Part::Set)
    }

    pub fn set_mut(&mut self) -> &mut Elements {
        self.part_mut(Part::Set)
    }

    /// A sorted set's members (with their score order), if the key has ever held one.
    pub fn zset_members(&self) -> Option<&Elements> {
        self.part(Part::Zset)
    }

    /// A list's elements (with their position order), if the key has ever held one.
    pub fn list_elements(&self) -> Option<&Elements> {
        self.part(Part::List)
    }

    /// A collection part holding nothing and no history is no part at all (so equal
    /// states compare and digest equal).
    pub(super) fn normalize_collections(&mut self) {
        let Some(c) = self.collections.as_deref_mut() else { return };
        for part in c.parts.iter_mut() {
            if part.as_deref().is_some_and(|h| h.entries_len() == 0 && h.removed().is_empty()) {
                *part = None;
            }
        }
        if c.parts.iter().all(Option::is_none) {
            self.collections = None;
        }
    }

    /// Whether the string part (a value or unabsorbed increments) exists.
    pub(super) fn string_exists(&self) -> bool {
        !self.value.is_empty() || self.counters.as_ref().is_some_and(|c| c.ints.has_unabsorbed() || c.floats.has_unabsorbed())
    }

    /// The newest dot of the string part (values and increments).
    pub fn newest_dot(&self) -> Option<Dot> {
        let mut newest = self.value.dots().max();
        if let Some(c) = &self.counters {
            let slots =
                c.ints.slots().iter().map(|s| Dot::new(s.hlc, s.node)).chain(c.floats.slots().iter().map(|s| Dot::new(s.hlc, s.node)));
            newest = newest.max(slots.max());
        }
        newest
    }

    /// Which type the key reads as, if it exists. When concurrent writes left more than
    /// one type (SET ∥ HSET ∥ SADD), the type whose newest live write has the largest
    /// `(hlc, node)` wins (DESIGN §5, type clash); the other parts stay until a write
    /// removes them.
    pub fn kind(&self) -> Option<KeyKind> {
        let string = self.string_exists();
        let mut live = self.collection_parts().filter(|(_, e)| !e.is_empty());
        let first = live.next();
        match (string, first) {
            (false, None) => None,
            (true, None) => Some(KeyKind::String),
            (false, Some((part, _))) if live.next().is_none() => Some(part.kind()),
            _ => {
                // A clash (rare): compare the newest live dot of each type present.
                let mut best: Option<(Option<Dot>, KeyKind)> = None;
                let mut consider = |newest: Option<Dot>, kind: KeyKind| {
                    if best.is_none_or(|(b, _)| newest > b) {
                        best = Some((newest, kind));
                    }
                };
                if string {
                    consider(self.newest_dot(), KeyKind::String);
                }
                for (part, elements) in self.collection_parts().filter(|(_, e)| !e.is_empty()) {
                    consider(elements.newest_live_dot(), part.kind());
                }
                best.map(|(_, kind)| kind)
            }
        }
    }

    /// Whether more than one type's part exists (a type clash).
    pub fn has_type_clash(&self) -> bool {
        let parts = self.string_exists() as usize + self.collection_parts().filter(|(_, e)| !e.is_empty()).count();
        parts > 1
    }
}
