//! A key state's collection parts (a hash's fields, a set's members) and the type rules
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
        KeyState {
            ctx: self.ctx.clone(),
            value: self.value.clone(),
            counters: self.counters.clone(),
            ttl: self.ttl.clone(),
            hash: self.hash.as_deref().map(|h| Box::new(h.without_entries())),
            set: self.set.as_deref().map(|h| Box::new(h.without_entries())),
        }
    }

    /// A delta carrying only these hash fields' states.
    /// The collection part `part` (created if absent).
    pub fn part_mut(&mut self, part: Part) -> &mut Elements {
        match part {
            Part::Hash => self.hash_mut(),
            Part::Set => self.set_mut(),
        }
    }

    /// A delta carrying only these elements of part `part`.
    pub fn part_delta(part: Part, elements: impl IntoIterator<Item = (Bytes, KeyState)>) -> KeyState {
        match part {
            Part::Hash => KeyState::hash_delta(elements),
            Part::Set => KeyState::set_delta(elements),
        }
    }

    pub fn hash_delta(fields: impl IntoIterator<Item = (Bytes, KeyState)>) -> KeyState {
        KeyState { hash: Some(Box::new(Elements::only(fields))), ..KeyState::default() }
    }

    /// A delta carrying only these set members' states.
    pub fn set_delta(members: impl IntoIterator<Item = (Bytes, KeyState)>) -> KeyState {
        KeyState { set: Some(Box::new(Elements::only(members))), ..KeyState::default() }
    }

    /// The collection parts held (hash, set), for what treats them alike.
    pub(super) fn collections(&self) -> impl Iterator<Item = &Elements> + '_ {
        self.hash.as_deref().into_iter().chain(self.set.as_deref())
    }

    pub(super) fn collections_mut(&mut self) -> impl Iterator<Item = &mut Elements> + '_ {
        self.hash.as_deref_mut().into_iter().chain(self.set.as_deref_mut())
    }

    /// Whether the key has a collection part (its writes ship element-sized deltas).
    pub fn has_collection(&self) -> bool {
        self.hash.is_some() || self.set.is_some()
    }

    /// Element tombstones held over every collection part.
    pub fn element_tombstones(&self) -> usize {
        self.collections().map(|c| c.tombstones()).sum()
    }

    /// Drop the element tombstones `stable` covers in every collection part (GC);
    /// returns how many.
    /// Drop every element tombstone (a node without peers keeps none).
    pub fn drop_element_tombstones(&mut self) {
        self.collections_mut().for_each(|c| c.drop_tombstones());
    }

    pub fn forget_stable_elements(&mut self, stable: &VersionVector) -> usize {
        self.collections_mut().map(|c| c.forget_stable(stable)).sum()
    }

    /// Drop the explicit context entries `covered` covers (an element under its
    /// collection's `removed` context, which says it already).
    pub fn strip_context_covered_by(&mut self, covered: &VersionVector) {
        self.ctx.remove_covered_by(covered);
    }

    /// Whether `covered` covers some explicit context entry.
    pub fn has_context_covered_by(&self, covered: &VersionVector) -> bool {
        self.ctx.iter().any(|d| covered.covers(d))
    }

    /// Whether this is a valid element state: no TTL, no elements of its own.
    pub fn is_element(&self) -> bool {
        self.ttl.is_empty() && self.hash.is_none() && self.set.is_none()
    }

    /// Nothing at all: no value, no history.
    pub fn is_blank(&self) -> bool {
        self.ctx.is_empty() && self.value.is_empty() && self.counters.is_none() && self.ttl.is_empty() && !self.has_collection()
    }

    /// A hash's fields, if the key has ever held one.
    pub fn hash(&self) -> Option<&Elements> {
        self.hash.as_deref()
    }

    pub fn hash_mut(&mut self) -> &mut Elements {
        self.hash.get_or_insert_with(Default::default)
    }

    /// Rebuild with decoded hash fields (codec).
    pub fn with_hash(mut self, hash: Option<Elements>) -> KeyState {
        self.hash = hash.map(Box::new);
        self.normalize_collections();
        self
    }

    /// A set's members, if the key has ever held one.
    pub fn set_members(&self) -> Option<&Elements> {
        self.set.as_deref()
    }

    pub fn set_mut(&mut self) -> &mut Elements {
        self.set.get_or_insert_with(Default::default)
    }

    /// Rebuild with decoded set members (codec).
    pub fn with_set(mut self, set: Option<Elements>) -> KeyState {
        self.set = set.map(Box::new);
        self.normalize_collections();
        self
    }

    /// A collection part holding nothing and no history is no part at all (so equal
    /// states compare and digest equal).
    pub(super) fn normalize_collections(&mut self) {
        let blank = |part: &Option<Box<Elements>>| part.as_deref().is_some_and(|h| h.entries_len() == 0 && h.removed().is_empty());
        if blank(&self.hash) {
            self.hash = None;
        }
        if blank(&self.set) {
            self.set = None;
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
        let hash_live = self.hash.as_deref().is_some_and(|h| !h.is_empty());
        let set_live = self.set.as_deref().is_some_and(|h| !h.is_empty());
        match (self.string_exists(), hash_live, set_live) {
            (false, false, false) => None,
            (true, false, false) => Some(KeyKind::String),
            (false, true, false) => Some(KeyKind::Hash),
            (false, false, true) => Some(KeyKind::Set),
            (string, hash, set) => {
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
                if hash {
                    consider(self.hash.as_deref().and_then(|h| h.newest_live_dot()), KeyKind::Hash);
                }
                if set {
                    consider(self.set.as_deref().and_then(|h| h.newest_live_dot()), KeyKind::Set);
                }
                best.map(|(_, kind)| kind)
            }
        }
    }

    /// Whether more than one type's part exists (a type clash).
    pub fn has_type_clash(&self) -> bool {
        let parts = self.string_exists() as u8
            + self.hash.as_deref().is_some_and(|h| !h.is_empty()) as u8
            + self.set.as_deref().is_some_and(|h| !h.is_empty()) as u8;
        parts > 1
    }
}
