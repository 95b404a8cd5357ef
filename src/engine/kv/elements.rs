//! The elements of a collection key (a hash's fields), as an add-wins observed-remove
//! map (DESIGN §5, row Hash): each element is a small CRDT state of its own, and the
//! collection keeps what whole-key removes (DEL, a SET over the key, FLUSHALL, expiry)
//! have seen.
//!
//! Why each element carries its own state: deltas are element-sized (an HSET on a
//! 100,000-field hash ships that field, never the hash), so a replica can hold one
//! element's newest write without another's older one, and a single causal context
//! for the whole key would then claim writes it never saw. An element's state always
//! travels whole, so its own context is exact; the key-level `removed` context is only
//! ever written by a whole-key remove, and only with writes its node is sure to have
//! held all of: its own and the causally stable ones (an element's context can name a
//! write of another node that never arrived here; see [`Elements::remove_held`]).
//! Each element it held goes by that element's own history. The merge is the causal
//! join, element by element, so it is commutative, associative and idempotent whatever
//! order deltas arrive in (tested in `value_laws`).
//!
//! A removed element leaves a tombstone (its name and the dots it removed) until the
//! removal is causally stable (`KvEngine::forget_stable`): without causal delivery (our
//! links drop a window on overflow and anti-entropy repairs out of order) a late copy
//! of the removed write would otherwise come back. A whole-key remove leaves one only
//! for an element holding writes it cannot claim at key level (see
//! [`Elements::remove_held`]), and joins its own dot to it, so that it waits for the
//! remove to be stable.
//!
//! Element states are [`KeyState`]s without a TTL or elements of their own: a hash
//! field is a register or a counter exactly as a string key is (HSET is SET, HINCRBY is
//! INCRBY, HDEL is DEL). They are stored in the compact form of `element.rs` whenever
//! they hold one value at one dot (almost always), and readers see them through an
//! [`ElementRef`]; a write or merge takes the element's state out of its slot, changes
//! it as a [`KeyState`] and stores it back. Order is insertion order while the collection is small, as
//! Redis's listpack keeps it, so small hashes reply exactly as Redis does. A list's
//! elements are held in position order in chunks instead (`list_table.rs`,
//! `elements/list_form.rs`), and so are a graph's, in name order: their names exist only
//! while a chunk is decoded, so code that may see a list or a graph walks entries with
//! [`Elements::for_each_entry`], never `entries()`.
//!
//! Pure data: no I/O, no clock.

use bytes::Bytes;

use super::collection_writes::Part;
use super::element::{ElementRef, Stored};
use super::list_table::ListTable;
use super::packed::{PackLimit, Packed, PackedIter};
use super::score_order::ScoreOrder;
use super::value::KeyState;
use crate::crdt::{Dot, Hlc, NodeId, VersionVector};

mod digest;
mod element_map;
mod list_form;
pub use list_form::Removed;
mod merge;
mod name;
mod plain_write;
mod position_table;
mod prefetch;
mod removal;

/// Up to this many entries (Redis's default `hash-max-listpack-entries`) a removal
/// keeps the order of the others (as a listpack does); past it, removal swaps the last entry in (O(1), as a hashtable's order is
/// unspecified anyway).
pub const ORDERED_ENTRIES_MAX: usize = 512;

pub use name::ElementName;

use digest::{DigestKept, DigestValue};
use element_map::ElementMap;

fn new_map() -> Box<ElementMap> {
    // Seeded per cluster, as the keyspace: element names are client data too.
    Box::new(ElementMap::with_hasher(foldhash::fast::FixedState::with_seed(super::hash_seed::key_hash_seed() ^ 0x656c_656d)))
}

/// The entries themselves, in one of two forms with the same order and meaning.
#[derive(Clone, Debug)]
enum Table {
    /// A small hash's or set's compact elements in one allocation (`packed.rs`).
    Packed(Packed),
    /// Everything else but a list or a graph: a sorted set, a delta, a collection past
    /// the packed form's limits or holding an element it cannot pack (a tombstone, a
    /// counter).
    Map(Box<ElementMap>),
    /// A list's elements in position order, or a graph's in name order, packed in
    /// chunks (`list_table.rs`; see [`chunked`]).
    List(Box<ListTable>),
}

/// The map form of `table`, converting a packed one (same order). A free function so
/// that callers keep the other fields of their collection borrowable.
fn unpacked(table: &mut Table) -> &mut ElementMap {
    if let Table::Packed(packed) = table {
        let mut map = new_map();
        map.reserve(packed.len());
        for (name, element) in packed.iter() {
            map.insert(ElementName::from(name), Stored::from_view(element));
        }
        *table = Table::Map(map);
    }
    match table {
        Table::Map(map) => map,
        Table::Packed(_) => unreachable!("just unpacked"),
        Table::List(_) => unreachable!("a list's table is never a map: callers branch on it first"),
    }
}

/// Every entry of a collection in order, whichever form holds it.
pub enum Entries<'a> {
    Packed(PackedIter<'a>),
    Map(std::slice::Iter<'a, (ElementName, Stored)>),
    /// A list's: its names exist only while a chunk is decoded, so a list is walked
    /// with [`Elements::for_each_entry`] or `list()` instead (asserted in debug builds).
    None,
}

impl<'a> Iterator for Entries<'a> {
    type Item = (&'a [u8], ElementRef<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Entries::Packed(iter) => iter.next(),
            Entries::Map(iter) => iter.next().map(|(name, stored)| (name.as_ref(), stored.view())),
            Entries::None => None,
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self {
            Entries::Packed(iter) => iter.size_hint(),
            Entries::Map(iter) => iter.size_hint(),
            Entries::None => (0, Some(0)),
        }
    }
}

/// What [`Elements::write_element`] did to one element.
pub struct ElementWrite {
    /// The element's new state: the delta to ship (a removal's tombstone, even where
    /// none is kept).
    pub state: KeyState,
    /// Whether the element was live before the write (what HSET and SADD count).
    pub was_live: bool,
}

/// A collection's elements, live and removed, with what whole-key removes have seen.
#[derive(Clone, Debug)]
pub struct Elements {
    table: Table,
    /// Whether this collection takes the packed form while it fits (hashes and sets;
    /// a sorted set's and a list's indexes name their elements by `Bytes`).
    packs: bool,
    /// How far it packs (`CONFIG SET hash-max-listpack-entries` and the like), as of
    /// the last local write that set it ([`Elements::set_pack_limit`]).
    pack_limit: PackLimit,
    /// How many entries exist (the rest are tombstones). 32 bits, next to `packs`:
    /// a small collection's header fits jemalloc's 96-byte class.
    live: u32,
    /// What whole-key removes have seen: any element dot it covers is gone.
    removed: VersionVector,
    /// The join of every element context ever held here: with `removed`, what a
    /// whole-key remove of this collection has seen.
    seen: VersionVector,
    /// XOR of `merkle::digest(name, element state)` over every entry, kept write by write
    /// once `digest_kept` (`elements/digest.rs`), so that the key's digest never rereads
    /// the collection.
    digest: DigestValue,
    digest_kept: DigestKept,
    /// A sorted set's live members by score (`None` for other parts), kept in step
    /// with every change to a live member's state.
    order: Option<Box<ScoreOrder>>,
}

/// Whether a part's elements are held in name-ordered chunks (`list_table.rs`): a
/// list's (its names are positions: name order is list order) and a graph's (a million
/// small elements named by ids that mostly grow: in a chunk an edge costs its bytes and
/// a few more, where a map entry adds a slot, an index entry and two allocations, ~150
/// bytes). Deltas stay in the map form (see [`Elements::only`]).
fn chunked(part: Part) -> bool {
    matches!(part, Part::List | Part::Graph | Part::Stream)
}

/// A member's score for the order index, if it is live.
fn live_score(state: &KeyState) -> Option<f64> {
    state.exists().then(|| state.score())
}

impl Default for Elements {
    fn default() -> Self {
        Elements {
            table: Table::Map(new_map()),
            packs: false,
            pack_limit: PackLimit::CAPPED,
            live: 0,
            removed: VersionVector::new(),
            seen: VersionVector::new(),
            digest: DigestValue::default(),
            digest_kept: DigestKept::default(),
            order: None,
        }
    }
}

impl PartialEq for Elements {
    /// Equal contents, whatever the order they arrived in (replicas differ in order).
    fn eq(&self, other: &Self) -> bool {
        self.live == other.live
            && self.removed == other.removed
            && self.kept_digests_agree(other)
            && self.entries_len() == other.entries_len()
            && !self.any_entry(|name, state| other.lookup(name) != Some(state))
    }
}

fn element_digest(name: &[u8], state: &KeyState) -> u64 {
    super::merkle::digest(name, state)
}

/// Put an element in its canonical form under the collection's `removed` context: the
/// history `removed` covers is not repeated in the element's own context (so the same
/// element reads the same bytes whichever order its writes and removes arrived in).
/// Returns whether anything is left: an element with no value, no counter history and
/// no context of its own is no entry at all. (Counter slots and floors stay until
/// tombstone GC: a node still incrementing a slot a remove absorbed needs the floor.)
fn canonical(state: &mut KeyState, removed: &VersionVector) -> bool {
    state.strip_context_covered_by(removed);
    !state.is_blank()
}

impl Elements {
    pub fn new() -> Elements {
        Elements::default()
    }

    /// An empty part of kind `part` (a sorted set's keeps its members' score order).
    pub fn for_part(part: Part) -> Elements {
        let order = (part == Part::Zset).then(Box::default);
        let packs = matches!(part, Part::Hash | Part::Set);
        let table = match part {
            _ if packs => Table::Packed(Packed::default()),
            _ if chunked(part) => Table::List(Box::default()),
            _ => Table::Map(new_map()),
        };
        Elements { table, packs, order, ..Elements::default() }
    }

    /// Set how far this collection packs from the next write on (the node's current
    /// setting, handed in by each local write: the form is this node's own business,
    /// never replicated).
    pub fn set_pack_limit(&mut self, limit: PackLimit) {
        self.pack_limit = limit;
    }

    /// Whether the elements are in the packed form (OBJECT ENCODING does not ask: it
    /// reports what Redis would, by Redis's settings).
    pub fn is_packed(&self) -> bool {
        matches!(self.table, Table::Packed(_))
    }

    /// Bytes the packed form allocates (0 in the map form): MEMORY USAGE.
    pub fn packed_bytes(&self) -> usize {
        match &self.table {
            Table::Packed(packed) => packed.bytes(),
            Table::Map(_) | Table::List(_) => 0,
        }
    }

    /// Go back to the packed form if this collection takes it and its entries fit
    /// (after a change in the map form: a merge, a remove, a tombstone dropped).
    fn repack(&mut self) {
        let Table::Map(map) = &self.table else { return };
        if !self.packs || map.len() > usize::from(self.pack_limit.entries) {
            return;
        }
        if let Some(packed) = Packed::build(map.iter().map(|(name, stored)| (name.as_ref(), stored.view())), self.pack_limit) {
            self.table = Table::Packed(packed);
        }
    }

    /// An entry by name, tombstones included.
    fn lookup(&self, name: &[u8]) -> Option<ElementRef<'_>> {
        match &self.table {
            Table::Packed(packed) => packed.find(name).map(|(_, element)| element),
            Table::Map(map) => map.get(name).map(Stored::view),
            Table::List(list) => list.get(name),
        }
    }

    /// Every entry, tombstones included, whatever the form (a list's too).
    pub fn for_each_entry(&self, mut f: impl FnMut(&[u8], ElementRef<'_>)) {
        match &self.table {
            Table::List(list) => list.for_each(f),
            _ => self.entries().for_each(|(name, element)| f(name, element)),
        }
    }

    /// Live entries with their names copied out, whatever the form (a list's too): for
    /// the simulator and tests, which compare collections whole.
    pub fn live_named(&self) -> Vec<(Bytes, ElementRef<'_>)> {
        match &self.table {
            Table::List(list) => list.walk(false, true).map(|(n, e)| (Bytes::copy_from_slice(&n), e)).collect(),
            _ => self.iter().map(|(n, e)| (Bytes::copy_from_slice(n), e)).collect(),
        }
    }

    /// Whether some entry, tombstones included, satisfies `f` (a list's too).
    pub fn any_entry(&self, mut f: impl FnMut(&[u8], ElementRef<'_>) -> bool) -> bool {
        match &self.table {
            Table::List(list) => list.any(f),
            _ => self.entries().any(|(name, element)| f(name, element)),
        }
    }

    /// A sorted set's live members in score order (`None` for other parts).
    pub fn score_order(&self) -> Option<&ScoreOrder> {
        self.order.as_deref()
    }

    /// Live elements.
    pub fn len(&self) -> usize {
        self.live as usize
    }

    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Entries held, tombstones included.
    pub fn entries_len(&self) -> usize {
        match &self.table {
            Table::Packed(packed) => packed.len(),
            Table::Map(map) => map.len(),
            Table::List(list) => list.entries_len(),
        }
    }

    pub fn tombstones(&self) -> usize {
        self.entries_len() - self.live as usize
    }

    pub fn removed(&self) -> &VersionVector {
        &self.removed
    }

    /// What a remove of the whole collection has seen.
    pub fn context(&self) -> VersionVector {
        let mut ctx = self.seen.clone();
        ctx.merge(&self.removed);
        ctx
    }

    /// A live element's state.
    pub fn get(&self, name: &[u8]) -> Option<ElementRef<'_>> {
        self.lookup(name).filter(|s| s.exists())
    }

    /// Live elements in order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], ElementRef<'_>)> + '_ {
        self.entries().filter(|(_, s)| s.exists())
    }

    /// Every entry, tombstones included (the codec, the digest tests); not a list's
    /// (see [`Entries::None`]).
    pub fn entries(&self) -> Entries<'_> {
        match &self.table {
            Table::Packed(packed) => Entries::Packed(packed.iter()),
            Table::Map(map) => Entries::Map(map.iter()),
            Table::List(list) => {
                debug_assert!(list.entries_len() == 0, "a list is walked with for_each_entry");
                Entries::None
            }
        }
    }

    /// The live element at `index` among all entries, if that entry is live (random
    /// picks: HRANDFIELD draws entry indexes and skips tombstones).
    pub fn entry_at(&self, index: usize) -> Option<(&[u8], ElementRef<'_>)> {
        let entry = match &self.table {
            Table::Packed(packed) => packed.iter().nth(index),
            Table::Map(map) => map.get_index(index).map(|(name, stored)| (name.as_ref(), stored.view())),
            Table::List(_) => None,
        };
        entry.filter(|(_, s)| s.exists())
    }

    /// The newest stamp of `node` held or seen here.
    pub fn newest_stamp_of(&self, node: NodeId) -> Hlc {
        self.seen.get(node).max(self.removed.get(node))
    }

    pub fn max_hlc(&self) -> Hlc {
        self.seen.max_hlc().max(self.removed.max_hlc())
    }

    /// The newest dot among live elements (which type a clash shows; O(n), clashes only).
    pub fn newest_live_dot(&self) -> Option<Dot> {
        let mut newest = None;
        self.for_each_entry(|_, s| {
            if s.exists() {
                newest = newest.max(s.newest_dot());
            }
        });
        newest
    }

    /// Apply a local write to one element (creating it if absent) and return the
    /// element's new state: the delta to ship. `write` gets the current state (a fresh
    /// one if the element does not exist, its tombstone if it was removed).
    pub fn write(&mut self, name: &[u8], write: impl FnOnce(&mut KeyState)) -> KeyState {
        self.write_element(name, true, write).state
    }

    /// [`Elements::write`], saying whether the element was live before, and keeping
    /// no tombstone when `keep_tombstone` is false (a node without peers: a removal
    /// still returns its tombstone, the delta that persists and replicates it, but
    /// leaves nothing here). A list's element is then taken out of its chunk directly,
    /// never stored as a tombstone in the side map first.
    pub fn write_element(&mut self, name: &[u8], keep_tombstone: bool, write: impl FnOnce(&mut KeyState)) -> ElementWrite {
        // Where the map form holds the element: found once, stored back at that index
        // (a name is hashed and probed once per write, not once per step).
        let mut map_index = None;
        let keeps_digest = self.keeps_digest();
        let digest_of = |element: ElementRef<'_>, name: &[u8]| if keeps_digest { element.digest(name) } else { 0 };
        let (mut state, old_digest) = match &mut self.table {
            Table::Packed(packed) => match packed.find(name) {
                Some((_, element)) => (element.to_state(), digest_of(element, name)),
                None => (KeyState::new(), 0),
            },
            Table::Map(map) => match map.get_full_mut(name) {
                Some((index, stored_name, slot)) => {
                    map_index = Some(index);
                    let old_digest = digest_of(slot.view(), stored_name);
                    (std::mem::replace(slot, Stored::PLACEHOLDER).into_state(), old_digest)
                }
                None => (KeyState::new(), 0),
            },
            Table::List(list) => match list.get(name) {
                Some(element) => (element.to_state(), digest_of(element, name)),
                None => (KeyState::new(), 0),
            },
        };
        let old_digest = if state.is_blank() { 0 } else { old_digest };
        let was_live = state.exists();
        let old_score = self.order.is_some().then(|| live_score(&state)).flatten();
        write(&mut state);
        debug_assert!(state.is_element(), "an element holds neither a TTL nor elements");
        canonical(&mut state, &self.removed);
        let view = ElementRef::of_state(&state);
        view.add_context_to(&mut self.seen);
        let repacked = match &mut self.table {
            Table::Packed(packed) => packed.with_element(name, view, self.pack_limit),
            Table::Map(_) => None,
            Table::List(list) => {
                if !keep_tombstone && !state.exists() {
                    // Gone without a trace: the digest loses the old entry and gains
                    // none (as a tombstone stored and dropped again would leave it).
                    list.discard(name);
                    self.toggle_digest(old_digest);
                } else {
                    // Encoded straight into its chunk, never boxed on the way.
                    list.put_view(name, view);
                    self.toggle_digest(old_digest ^ digest_of(view, name));
                }
                self.account(was_live, state.exists());
                return ElementWrite { state, was_live };
            }
        };
        let stored = Stored::from_state(&state);
        match repacked {
            Some(packed) => self.table = Table::Packed(packed),
            None => {
                // The map form: the element did not pack, or the collection never does.
                // A packed collection that no longer packs has no index yet: it is
                // unpacked here and the name looked up in the new map.
                let was_map = matches!(self.table, Table::Map(_));
                let map = unpacked(&mut self.table);
                let found = if was_map { map_index } else { map.get_index_of(name) };
                debug_assert_eq!(found, map.get_index_of(name), "the element's index is where it was found");
                let index = match found {
                    Some(index) => index,
                    None => map.insert_full(ElementName::from(name), Stored::PLACEHOLDER).0,
                };
                let (stored_name, slot) = map.get_index_mut(index).expect("index just found");
                if let Some(order) = self.order.as_deref_mut() {
                    order.update(stored_name, old_score, live_score(&state));
                }
                *slot = stored;
            }
        }
        self.toggle_digest(old_digest ^ digest_of(view, name));
        self.account(was_live, state.exists());
        if !keep_tombstone && !state.exists() {
            self.drop_tombstone(name);
        }
        ElementWrite { state, was_live }
    }

    fn account(&mut self, was_live: bool, is_live: bool) {
        match (was_live, is_live) {
            (false, true) => self.live += 1,
            (true, false) => self.live -= 1,
            _ => {}
        }
    }

    /// Remove an entry outright, keeping the order of the others while the collection
    /// is small. Only for entries whose history is covered elsewhere.
    fn take(&mut self, name: &[u8]) -> Option<Stored> {
        if let Table::List(list) = &mut self.table {
            return list.remove(name);
        }
        let map = unpacked(&mut self.table);
        if map.len() <= ORDERED_ENTRIES_MAX { map.shift_remove(name) } else { map.swap_remove(name) }
    }

    /// Rebuild from decoded entries (codec): counts and contexts recomputed (the digest
    /// when first asked for).
    pub fn from_entries(part: Part, removed: VersionVector, entries: Vec<(Bytes, KeyState)>) -> Result<Elements, &'static str> {
        let mut elements = Elements { removed, ..Elements::for_part(part) };
        if !chunked(part) {
            elements.table = Table::Map(new_map());
        }
        for (name, state) in entries {
            if !state.is_element() {
                return Err("an element with a TTL or elements of its own");
            }
            elements.seen.merge(&state.causal_context());
            elements.account(false, state.exists());
            let named_twice = match &mut elements.table {
                Table::List(list) => {
                    if part == Part::List && !super::position::is_valid(&name) {
                        return Err("a list element whose name is no position");
                    }
                    list.put(&name, Stored::from_owned(state))
                }
                table => {
                    let name = ElementName::from(name.as_ref());
                    if let Some(order) = elements.order.as_deref_mut() {
                        order.update(&name, None, live_score(&state));
                    }
                    unpacked(table).insert(name, Stored::from_owned(state)).is_some()
                }
            };
            if named_twice {
                return Err("an element named twice");
            }
        }
        elements.repack();
        Ok(elements)
    }

    /// The collection with its elements left out: what a change to the key alone (a
    /// TTL) ships, so that it never carries the whole collection.
    pub fn without_entries(&self) -> Elements {
        let order = self.order.as_ref().map(|_| Box::default());
        let table = match &self.table {
            _ if self.packs => Table::Packed(Packed::default()),
            Table::List(_) => Table::List(Box::default()),
            _ => Table::Map(new_map()),
        };
        Elements { table, packs: self.packs, pack_limit: self.pack_limit, removed: self.removed.clone(), order, ..Elements::default() }
    }

    /// Only the named elements (a delta of a write to them).
    pub fn only(part: Part, names_and_states: impl IntoIterator<Item = (Bytes, KeyState)>) -> Elements {
        // Deltas stay in the map form: they live until shipped, and packing each would
        // cost the write path a second encoding. A list's is in the list form, as
        // every list is (its readers walk chunks); in name order, each put appends.
        let mut elements = Elements::for_part(part);
        if part != Part::List {
            elements.table = Table::Map(new_map());
        }
        let mut names_and_states: Vec<(Bytes, KeyState)> = names_and_states.into_iter().collect();
        if part == Part::List {
            names_and_states.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        }
        for (name, state) in names_and_states {
            elements.seen.merge(&state.causal_context());
            elements.account(false, state.exists());
            match &mut elements.table {
                Table::List(list) => {
                    list.put(&name, Stored::from_owned(state));
                }
                table => {
                    let name = ElementName::from(name.as_ref());
                    if let Some(order) = elements.order.as_deref_mut() {
                        order.update(&name, None, live_score(&state));
                    }
                    unpacked(table).insert(name, Stored::from_owned(state));
                }
            }
        }
        elements
    }
}
