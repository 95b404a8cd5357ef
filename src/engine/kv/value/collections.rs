//! A key state's collection parts (a hash's fields, a set's or sorted set's members) and the type rules
//! over them: which type a key reads as when concurrent writes of two types met (DESIGN
//! §5, type clash), the element-sized deltas a write ships, and the tombstones the
//! parts keep. The string part and the merge are in `value.rs`.

use bytes::Bytes;

use super::super::collection_writes::Part;
use super::super::elements::Elements;
use super::{Full, KeyKind, KeyState, Repr};
use crate::crdt::{Dot, NodeId, VersionVector};

/// A key's collection parts. Almost every collection key holds one part, stored with
/// its elements' header in the key's one collection allocation (112 bytes; a table of
/// parts beside a boxed header took 48 + 96). More than one part is present only after
/// concurrent writes of different types met (a type clash). Canonical, so that equal
/// states compare equal: `Many` always holds two parts or more.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::engine::kv) enum Collections {
    One(Part, Elements),
    Many([Option<Box<Elements>>; Part::COUNT]),
}

const _: () = assert!(std::mem::size_of::<Collections>() <= 112);

impl Collections {
    fn get(&self, part: Part) -> Option<&Elements> {
        match self {
            Collections::One(held, elements) => (*held == part).then_some(elements),
            Collections::Many(parts) => parts[part as usize].as_deref(),
        }
    }

    /// The part `part`, created by `make` if absent (a second part makes this `Many`).
    fn get_or_insert_with(&mut self, part: Part, make: impl FnOnce() -> Elements) -> &mut Elements {
        if let Collections::One(held, _) = self
            && *held != part
        {
            let Collections::One(held, elements) = std::mem::replace(self, Collections::Many(Default::default())) else { unreachable!() };
            let Collections::Many(parts) = self else { unreachable!() };
            parts[held as usize] = Some(Box::new(elements));
        }
        match self {
            Collections::One(_, elements) => elements,
            Collections::Many(parts) => parts[part as usize].get_or_insert_with(|| Box::new(make())),
        }
    }

    /// Every part held, in [`Part::ALL`] order, as a fixed array of slots: walked with
    /// `flatten`, a short loop, where a chain of `flat_map`s cost ~100 instructions a
    /// walk (every type check and existence test walks the parts).
    fn parts(&self) -> [Option<(Part, &Elements)>; Part::COUNT] {
        match self {
            Collections::One(part, elements) => {
                let mut slots = [None; Part::COUNT];
                slots[0] = Some((*part, elements));
                slots
            }
            Collections::Many(parts) => Part::ALL.map(|part| Some((part, parts[part as usize].as_deref()?))),
        }
    }

    fn iter_mut(&mut self) -> impl Iterator<Item = &mut Elements> + '_ {
        let (one, many) = match self {
            Collections::One(_, elements) => (Some(elements), None),
            Collections::Many(parts) => (None, Some(parts)),
        };
        one.into_iter().chain(many.into_iter().flat_map(|parts| parts.iter_mut().filter_map(|p| p.as_deref_mut())))
    }

    /// Drop the parts `drop` picks; `None` when nothing is left. Keeps the form canonical.
    fn without(self, mut drop: impl FnMut(Part, &Elements) -> bool) -> Option<Collections> {
        match self {
            Collections::One(part, elements) => (!drop(part, &elements)).then_some(Collections::One(part, elements)),
            Collections::Many(mut parts) => {
                for part in Part::ALL {
                    if parts[part as usize].as_deref().is_some_and(|e| drop(part, e)) {
                        parts[part as usize] = None;
                    }
                }
                match parts.iter().filter(|p| p.is_some()).count() {
                    0 => None,
                    1 => {
                        let part = Part::ALL.into_iter().find(|part| parts[*part as usize].is_some())?;
                        let elements = parts[part as usize].take()?;
                        Some(Collections::One(part, *elements))
                    }
                    _ => Some(Collections::Many(parts)),
                }
            }
        }
    }
}

impl KeyState {
    /// The key-level part of this state (value, counters, TTL, what whole-key removes
    /// saw) without the elements: the delta of a change to the key alone.
    pub fn without_elements(&self) -> KeyState {
        let mut delta = match &self.repr {
            Repr::Full(full) => {
                let key_level =
                    Full { meta: full.meta.clone(), value: full.value.clone(), counters: full.counters.clone(), collections: None };
                KeyState { repr: Repr::Full(Box::new(key_level)) }
            }
            Repr::Coll(_) => KeyState::default(),
            _ => return self.clone(),
        };
        for (part, elements) in self.collection_parts() {
            delta.set_part(part, Some(elements.without_entries()));
        }
        delta.settle();
        delta
    }

    /// The one collection part of a key that holds it and nothing else (no value,
    /// context, TTL, counter or other part): the common collection key, whose digest
    /// (`merkle::digest`) needs no walk over the state's fields.
    #[inline]
    pub fn lone_part(&self) -> Option<(Part, &Elements)> {
        if let Repr::Coll(collections) = &self.repr
            && let Collections::One(part, elements) = &**collections
        {
            return Some((*part, elements));
        }
        None
    }

    /// The collection parts held, with which part each is.
    pub fn collection_parts(&self) -> impl Iterator<Item = (Part, &Elements)> + '_ {
        self.colls().map_or([None; Part::COUNT], Collections::parts).into_iter().flatten()
    }

    /// The collection part `part`, if the key has ever held one.
    pub fn part(&self, part: Part) -> Option<&Elements> {
        self.colls()?.get(part)
    }

    /// The collection part `part` (created if absent).
    pub fn part_mut(&mut self, part: Part) -> &mut Elements {
        // A new collection key, or one that is nothing else, keeps the compact form.
        if matches!(self.repr, Repr::Empty) {
            self.repr = Repr::Coll(Box::new(Collections::One(part, Elements::for_part(part))));
        }
        let collections = match self.repr {
            Repr::Coll(_) => self.colls_mut().expect("a collection key"),
            _ => self.full_mut().collections.get_or_insert_with(|| Box::new(Collections::One(part, Elements::for_part(part)))),
        };
        collections.get_or_insert_with(part, || Elements::for_part(part))
    }

    fn set_part(&mut self, part: Part, elements: Option<Elements>) {
        match elements {
            Some(elements) => {
                let held = &mut self.full_mut().collections;
                match held.as_deref_mut() {
                    Some(collections) => {
                        let mut elements = Some(elements);
                        let slot = collections.get_or_insert_with(part, || elements.take().expect("made once"));
                        if let Some(elements) = elements {
                            *slot = elements;
                        }
                    }
                    None => *held = Some(Box::new(Collections::One(part, elements))),
                }
            }
            None => self.drop_parts(|held, _| held == part),
        }
    }

    /// Rebuild with a decoded part (codec).
    pub fn with_part(mut self, part: Part, elements: Option<Elements>) -> KeyState {
        self.set_part(part, elements);
        self.normalize_collections();
        self.settle();
        self
    }

    /// A delta carrying only these elements of part `part`.
    pub fn part_delta(part: Part, elements: impl IntoIterator<Item = (Bytes, KeyState)>) -> KeyState {
        let mut delta = KeyState::default();
        delta.set_part(part, Some(Elements::only(part, elements)));
        delta.settle();
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
        self.colls_mut().into_iter().flat_map(Collections::iter_mut)
    }

    /// Whether the key has a collection part (its writes ship element-sized deltas).
    pub fn has_collection(&self) -> bool {
        self.colls().is_some()
    }

    /// Element tombstones held over every collection part.
    pub fn element_tombstones(&self) -> usize {
        // Asked on every store of a state (the keyspace notes keys holding some): the
        // common key of one part is read directly, not through the parts' array
        // (~75 instructions of an RPUSH, callgrind).
        if let Some((_, elements)) = self.lone_part() {
            return elements.tombstones();
        }
        self.collections().map(|c| c.tombstones()).sum()
    }

    /// Drop every element tombstone (a node without peers keeps none).
    pub fn drop_element_tombstones(&mut self) {
        self.collections_mut().for_each(|c| c.drop_tombstones());
    }

    /// Drop the element tombstones `stable` covers in every collection part (GC), but
    /// those holding a counter of a node in `spared` (`kv::tombstone_gc`); returns how
    /// many.
    pub fn forget_stable_elements(&mut self, stable: &VersionVector, spared: &[NodeId]) -> usize {
        self.collections_mut().map(|c| c.forget_stable(stable, spared)).sum()
    }

    /// [`KeyState::forget_stable_elements`] of a key tombstone (one kept for its TTL):
    /// a part left with no element and no removal goes too, as a removal leaves it.
    pub fn forget_stable_elements_of_tombstone(&mut self, stable: &VersionVector, spared: &[NodeId]) -> usize {
        let dropped = self.forget_stable_elements(stable, spared);
        if dropped > 0 {
            self.normalize_collections();
        }
        dropped
    }

    /// Whether a counter slot or floor of a node in `nodes` is held, in the value or in
    /// an element, tombstones included (a tombstone collection spares such a state;
    /// `kv::tombstone_gc`).
    pub fn holds_counter_of(&self, nodes: &[NodeId]) -> bool {
        !nodes.is_empty()
            && (self.counter_slots().iter().any(|(node, ..)| nodes.contains(node)) || self.collections().any(|c| c.holds_counter_of(nodes)))
    }

    /// Drop the explicit context entries `covered` covers (an element under its
    /// collection's `removed` context, which says it already).
    pub fn strip_context_covered_by(&mut self, covered: &VersionVector) {
        if !self.has_context_covered_by(covered) {
            return;
        }
        self.ctx_update(|c| c.remove_covered_by(covered));
        self.settle();
    }

    /// Join `dot` to the explicit context with no write of its own (a whole-key
    /// remove's dot on the tombstone of an element it removed; see
    /// [`Elements::remove_held`]).
    pub fn witness(&mut self, dot: Dot) {
        self.ctx_update(|c| c.add(dot));
        self.normalize_context();
        self.settle();
    }

    /// Whether `covered` covers some explicit context entry.
    pub fn has_context_covered_by(&self, covered: &VersionVector) -> bool {
        self.ctx().iter().any(|d| covered.covers(d))
    }

    /// The one value and its dot, when that is all this state holds (no explicit
    /// context, counters, TTL or elements): the compact form of an element (see
    /// `element.rs`).
    #[inline]
    pub fn plain_value(&self) -> Option<(Dot, &super::StrVal)> {
        // The compact form is exactly this case: nothing to check. Inlined, as every
        // replicated SET asks twice (its digest, its newest stamp): a call was ~23
        // instructions each, most of them saving and restoring registers.
        if let Repr::Str { node, hlc, value } = &self.repr {
            return Some((Dot::new(*hlc, *node), value));
        }
        self.plain_value_general()
    }

    /// [`KeyState::plain_value`] of a state not in the compact form.
    #[inline(never)]
    fn plain_value_general(&self) -> Option<(Dot, &super::StrVal)> {
        if !self.ctx().is_empty() || self.has_counters() || !self.ttl().is_empty() || self.has_collection() {
            return None;
        }
        let values = self.values();
        if values.len() != 1 {
            return None;
        }
        values.winner()
    }

    /// The explicit context of a state that holds nothing else (no value, counter
    /// slot, TTL write or collection): a removed element's tombstone, which the codec
    /// writes without gathering the parts.
    pub fn context_only(&self) -> Option<&VersionVector> {
        if !self.values().is_empty() || self.has_counters() || !self.ttl().is_empty() || self.has_collection() {
            return None;
        }
        Some(self.ctx())
    }

    /// Whether this is a valid element state: no TTL, no elements of its own.
    pub fn is_element(&self) -> bool {
        self.ttl().is_empty() && !self.has_collection()
    }

    /// Nothing at all: no value, no history.
    pub fn is_blank(&self) -> bool {
        self.ctx().is_empty() && self.values().is_empty() && !self.has_counters() && self.ttl().is_empty() && !self.has_collection()
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

    /// Anti-entropy's absence rule for elements (`shard::absence`): this state is a
    /// peer's whole state of a key that `held` is this node's state of. Add to it the
    /// removal of every write of an element of `held` that `forgotten` covers and the
    /// peer's element does not hold (all of them when the peer has no such element):
    /// the peer merged those writes and holds them no more, so they were removed there
    /// and the record since collected (`value::absence`). Merging the result here
    /// removes them here too. Returns whether it added any, and whether any of them
    /// removes an element that is live in `held` (one a reader sees go).
    pub fn add_removals_of_absent_elements(&mut self, held: &KeyState, forgotten: &VersionVector) -> (bool, bool) {
        let (mut added, mut of_live) = (false, false);
        for (part, mine) in held.collection_parts() {
            let theirs = self.part(part);
            let mut removals = Vec::new();
            mine.for_each_entry(|name, element| match theirs.and_then(|t| t.get(name)) {
                None if element.has_dot_covered_by(forgotten) => {
                    // Here the removal is what this element becomes.
                    let mut removal = element.to_state();
                    let before = removal.clone();
                    removal.remove_observed(forgotten);
                    of_live |= before.reads_differently_from(&removal);
                    removals.push((Bytes::copy_from_slice(name), removal));
                }
                None => {}
                Some(their_element) => {
                    let their_state = their_element.to_state();
                    let mine = element.to_state();
                    if let Some(absent) = mine.absent_writes(Some(&their_state), forgotten) {
                        of_live |= mine.removal_changes_readout(&absent);
                        let mut removal = their_state;
                        removal.remove_absent(&absent);
                        removals.push((Bytes::copy_from_slice(name), removal));
                    }
                }
            });
            if !removals.is_empty() {
                added = true;
                let removals = Elements::only(part, removals);
                self.part_mut(part).merge(&removals, &VersionVector::new());
            }
        }
        if added {
            self.normalize_collections();
            self.settle();
        }
        (added, of_live)
    }

    /// A collection part holding nothing and no history is no part at all (so equal
    /// states compare and digest equal).
    pub(super) fn normalize_collections(&mut self) {
        self.drop_parts(|_, h| h.entries_len() == 0 && h.removed().is_empty());
    }

    /// Drop the collection parts `drop` picks (nothing moves when it picks none).
    fn drop_parts(&mut self, mut drop: impl FnMut(Part, &Elements) -> bool) {
        let Some(collections) = self.colls() else { return };
        if !collections.parts().into_iter().flatten().any(|(part, elements)| drop(part, elements)) {
            return;
        }
        let held = &mut self.full_mut().collections;
        let collections = held.take().map(|c| *c);
        *held = collections.and_then(|c| c.without(drop)).map(Box::new);
        self.settle();
    }

    /// Whether the string part (a value or unabsorbed increments) exists.
    pub(super) fn string_exists(&self) -> bool {
        match self.repr {
            Repr::Str { .. } => true,
            // One slot and no floor: its increments are unabsorbed.
            Repr::Count { .. } => true,
            _ => !self.values().is_empty() || self.counters().is_some_and(|c| c.ints.has_unabsorbed() || c.floats.has_unabsorbed()),
        }
    }

    /// The newest dot of the string part (values and increments).
    pub fn newest_dot(&self) -> Option<Dot> {
        let mut newest = self.values().dots().max();
        if let Some(c) = self.counters() {
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
        // The common shape, one collection part and nothing else, without the walk
        // below (its chain of iterators cost ~100 instructions a type check).
        if let Some((part, elements)) = self.lone_part() {
            return (!elements.is_empty()).then(|| part.kind());
        }
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
