//! One element of a collection (a hash field, a set or sorted-set member, a list or
//! graph element) as its collection stores it, and the read-only view readers get.
//!
//! An element's meaning is a [`KeyState`] without a TTL or elements of its own
//! (`elements.rs` says why each element carries a state). Almost every element holds
//! nothing but one value written at one dot: HSET, SADD and ZADD leave exactly that.
//! Such an element is stored as that dot and value alone ([`Stored::Int`],
//! [`Stored::Inline`], [`Stored::Raw`]: 32 bytes; a value of up to
//! [`INLINE_VALUE_BYTES`] inside those, a longer one in one exact-size allocation), and
//! a removed element's tombstone whose context names one or two nodes (every pop's,
//! HDEL's, SREM's) as that context alone ([`Stored::Tombstone`], `element/tombstone.rs`),
//! and only an element with more history (concurrent values, counter slots, a wider
//! context) keeps a boxed state. The two forms are one element: the
//! conversion is exact both ways, equal states store equal, and an element digests,
//! encodes and merges the same whichever form holds it (tested below and by
//! `value_laws`).
//!
//! Must never: hold a state in the boxed form that the compact form could hold (that
//! would make equal collections compare unequal), or do I/O.

use std::borrow::Cow;

mod tombstone;
pub use tombstone::Tombstone;

use super::merkle;
use super::value::{KeyState, StrVal, parse_canonical_i64, parse_f64};
use crate::crdt::{Dot, Hlc, NodeId, VersionVector};

/// The longest byte-string value a compact element holds inside its 32 bytes.
pub const INLINE_VALUE_BYTES: usize = 20;

/// One element as stored. Fields are spelled out (not a [`Dot`]) so that the node id
/// shares a word with the variant's tag: 32 bytes, not 40.
#[derive(Clone, Debug, PartialEq)]
pub enum Stored {
    /// One integer value at one dot (a set member's mark, an integer score or field).
    Int { hlc: Hlc, node: NodeId, value: i64 },
    /// One byte-string value of at most [`INLINE_VALUE_BYTES`] at one dot, held in the
    /// slot itself. Why: reading, overwriting or digesting it follows no pointer. On a
    /// 100,000-field hash the value's own allocation was a cache miss per HSET and HGET
    /// (its copy into the digest took 8% of an HSET's time under `perf`), and it cost
    /// 16 bytes plus allocator rounding per field. Bytes past `len` are zero, so equal
    /// values compare equal.
    Inline { hlc: Hlc, node: NodeId, len: u8, bytes: [u8; INLINE_VALUE_BYTES] },
    /// One byte-string value longer than [`INLINE_VALUE_BYTES`] at one dot (never a
    /// shorter one: equal states must store equal).
    Raw { hlc: Hlc, node: NodeId, value: Box<[u8]> },
    /// A removed element: its context and nothing else, when that names one or two
    /// nodes (see `element/tombstone.rs`).
    Tombstone(Tombstone),
    /// Anything else.
    Full(Box<KeyState>),
}

/// An element's state, borrowed from its collection (or rebuilt for the compact form).
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum ElementRef<'a> {
    Int(Dot, i64),
    Raw(Dot, &'a [u8]),
    Tombstone(Tombstone),
    Full(&'a KeyState),
}

impl Stored {
    /// What a slot holds for the moment its element is taken out to be changed.
    pub const PLACEHOLDER: Stored = Stored::Int { hlc: Hlc::ZERO, node: 0, value: 0 };

    /// Byte-string `value` at `dot`: inline when it fits, else in its own allocation.
    pub fn bytes_at(dot: Dot, value: &[u8]) -> Stored {
        if value.len() <= INLINE_VALUE_BYTES {
            let mut bytes = [0u8; INLINE_VALUE_BYTES];
            bytes[..value.len()].copy_from_slice(value);
            Stored::Inline { hlc: dot.hlc, node: dot.node, len: value.len() as u8, bytes }
        } else {
            Stored::Raw { hlc: dot.hlc, node: dot.node, value: Box::from(value) }
        }
    }

    /// `value` at `dot` (a long value's allocation moves in).
    pub fn value_at(dot: Dot, value: StrVal) -> Stored {
        match value {
            StrVal::Int(value) => Stored::Int { hlc: dot.hlc, node: dot.node, value },
            StrVal::Raw(value) if value.len() <= INLINE_VALUE_BYTES => Stored::bytes_at(dot, &value),
            StrVal::Raw(value) => Stored::Raw { hlc: dot.hlc, node: dot.node, value },
        }
    }

    /// The stored form of `state`: compact whenever the state is one value at one dot.
    pub fn from_state(state: &KeyState) -> Stored {
        match state.plain_value() {
            Some((dot, StrVal::Int(n))) => Stored::Int { hlc: dot.hlc, node: dot.node, value: *n },
            Some((dot, StrVal::Raw(bytes))) => Stored::bytes_at(dot, bytes),
            None => match tombstone_of(state) {
                Some(tombstone) => Stored::Tombstone(tombstone),
                None => Stored::Full(Box::new(state.clone())),
            },
        }
    }

    /// The stored form of a viewed element (same form).
    pub fn from_view(element: ElementRef<'_>) -> Stored {
        match element {
            ElementRef::Int(dot, value) => Stored::Int { hlc: dot.hlc, node: dot.node, value },
            ElementRef::Raw(dot, value) => Stored::bytes_at(dot, value),
            ElementRef::Tombstone(tombstone) => Stored::Tombstone(tombstone),
            ElementRef::Full(state) => Stored::Full(Box::new(state.clone())),
        }
    }

    /// The dot of a compact element (one value at one dot); `None` for a full state.
    pub fn plain_dot(&self) -> Option<Dot> {
        match self {
            Stored::Int { hlc, node, .. } | Stored::Inline { hlc, node, .. } | Stored::Raw { hlc, node, .. } => Some(Dot::new(*hlc, *node)),
            Stored::Tombstone(_) | Stored::Full(_) => None,
        }
    }

    /// [`Stored::from_state`], taking the state (no copy when it stays boxed).
    pub fn from_owned(state: KeyState) -> Stored {
        if state.plain_value().is_some() {
            return Stored::from_state(&state);
        }
        match tombstone_of(&state) {
            Some(tombstone) => Stored::Tombstone(tombstone),
            None => Stored::Full(Box::new(state)),
        }
    }

    /// The element's state, taken out of its slot.
    pub fn into_state(self) -> KeyState {
        match self {
            Stored::Full(state) => *state,
            other => other.view().to_state(),
        }
    }

    pub fn view(&self) -> ElementRef<'_> {
        match self {
            Stored::Int { hlc, node, value } => ElementRef::Int(Dot::new(*hlc, *node), *value),
            Stored::Inline { hlc, node, len, bytes } => ElementRef::Raw(Dot::new(*hlc, *node), &bytes[..usize::from(*len)]),
            Stored::Raw { hlc, node, value } => ElementRef::Raw(Dot::new(*hlc, *node), value),
            Stored::Tombstone(tombstone) => ElementRef::Tombstone(*tombstone),
            Stored::Full(state) => ElementRef::Full(state),
        }
    }
}

/// The compact tombstone of `state` if it is one: a context of one or two nodes and
/// nothing else.
fn tombstone_of(state: &KeyState) -> Option<Tombstone> {
    state.context_only().and_then(Tombstone::of_context)
}

impl<'a> ElementRef<'a> {
    /// The view of a state holding the bytes `value` at `dot` and nothing else, as
    /// `KeyState::set` of `StrVal::from_slice(value)` would hold them (an integer when
    /// they are one's canonical text), without building that state.
    pub fn plain(dot: Dot, value: &'a [u8]) -> ElementRef<'a> {
        match parse_canonical_i64(value) {
            Some(n) => ElementRef::Int(dot, n),
            None => ElementRef::Raw(dot, value),
        }
    }

    /// The view of `state` in the form [`Stored::from_state`] would store it (compact
    /// whenever it is one value at one dot), without storing it.
    pub fn of_state(state: &'a KeyState) -> ElementRef<'a> {
        match state.plain_value() {
            Some((dot, StrVal::Int(n))) => ElementRef::Int(dot, *n),
            Some((dot, StrVal::Raw(bytes))) => ElementRef::Raw(dot, bytes),
            None => match tombstone_of(state) {
                Some(tombstone) => ElementRef::Tombstone(tombstone),
                None => ElementRef::Full(state),
            },
        }
    }

    pub fn to_state(self) -> KeyState {
        match self {
            ElementRef::Int(dot, n) => KeyState::with_value(dot, StrVal::Int(n), None),
            ElementRef::Raw(dot, value) => KeyState::with_value(dot, StrVal::raw(value), None),
            ElementRef::Tombstone(tombstone) => tombstone.to_state(),
            ElementRef::Full(state) => state.clone(),
        }
    }

    /// [`ElementRef::to_state`], borrowing when the state is stored as one.
    pub fn state(self) -> Cow<'a, KeyState> {
        match self {
            ElementRef::Full(state) => Cow::Borrowed(state),
            compact => Cow::Owned(compact.to_state()),
        }
    }

    /// The dot of a compact element (one value at one dot); `None` for a full state.
    pub fn plain_dot(self) -> Option<Dot> {
        match self {
            ElementRef::Int(dot, _) | ElementRef::Raw(dot, _) => Some(dot),
            ElementRef::Tombstone(_) | ElementRef::Full(_) => None,
        }
    }

    /// Whether the element exists (a tombstone does not).
    pub fn exists(self) -> bool {
        match self {
            ElementRef::Int(..) | ElementRef::Raw(..) => true,
            ElementRef::Tombstone(_) => false,
            ElementRef::Full(state) => state.exists(),
        }
    }

    /// The value a read returns (see [`KeyState::read`]).
    pub fn read(self) -> Option<StrVal> {
        match self {
            ElementRef::Int(_, n) => Some(StrVal::Int(n)),
            ElementRef::Raw(_, value) => Some(StrVal::raw(value)),
            ElementRef::Tombstone(_) => None,
            ElementRef::Full(state) => state.read(),
        }
    }

    /// The length of the value a read returns, without building it.
    pub fn value_len(self) -> Option<usize> {
        match self {
            ElementRef::Int(_, n) => Some(itoa::Buffer::new().format(n).len()),
            ElementRef::Raw(_, value) => Some(value.len()),
            ElementRef::Tombstone(_) => None,
            ElementRef::Full(state) => state.read().map(|v| v.len()),
        }
    }

    /// A sorted-set member's score (see [`KeyState::score`]; `-0` reads as `0`).
    pub fn score(self) -> f64 {
        let score = match self {
            ElementRef::Int(_, n) => n as f64,
            ElementRef::Raw(_, value) => parse_f64(value).unwrap_or(0.0),
            // No value and no increments (`KeyState::score` of a tombstone).
            ElementRef::Tombstone(_) => 0.0,
            ElementRef::Full(state) => return state.score(),
        };
        if score == 0.0 { 0.0 } else { score }
    }

    /// The newest dot of the element's value and increments.
    pub fn newest_dot(self) -> Option<Dot> {
        match self {
            ElementRef::Int(dot, _) | ElementRef::Raw(dot, _) => Some(dot),
            ElementRef::Tombstone(_) => None,
            ElementRef::Full(state) => state.newest_dot(),
        }
    }

    /// Whether `seen` covers some value or unabsorbed increment held here.
    pub fn has_dot_covered_by(self, seen: &VersionVector) -> bool {
        match self {
            ElementRef::Int(dot, _) | ElementRef::Raw(dot, _) => seen.covers(dot),
            ElementRef::Tombstone(_) => false,
            ElementRef::Full(state) => state.has_dot_covered_by(seen),
        }
    }

    /// Whether `covered` covers some entry of the element's explicit context (the
    /// compact form has none).
    pub fn has_context_covered_by(self, covered: &VersionVector) -> bool {
        match self {
            ElementRef::Int(..) | ElementRef::Raw(..) => false,
            ElementRef::Tombstone(tombstone) => tombstone.dots().any(|dot| covered.covers(dot)),
            ElementRef::Full(state) => state.has_context_covered_by(covered),
        }
    }

    /// Everything the element has seen.
    pub fn causal_context(self) -> VersionVector {
        match self {
            ElementRef::Int(dot, _) | ElementRef::Raw(dot, _) => {
                let mut ctx = VersionVector::new();
                ctx.add(dot);
                ctx
            }
            ElementRef::Tombstone(tombstone) => tombstone.context(),
            ElementRef::Full(state) => state.causal_context(),
        }
    }

    /// Whether `bound` covers everything the element has seen (a tombstone's removal
    /// is then causally stable): `bound.dominates(&self.causal_context())`, without
    /// building the context of a compact tombstone.
    pub fn context_within(self, bound: &VersionVector) -> bool {
        match self {
            ElementRef::Tombstone(tombstone) => tombstone.dots().all(|dot| bound.covers(dot)),
            other => bound.dominates(&other.causal_context()),
        }
    }

    /// Whether a counter slot or floor of a node in `nodes` is held (only the full form
    /// holds counters).
    pub fn holds_counter_of(self, nodes: &[crate::crdt::NodeId]) -> bool {
        matches!(self, ElementRef::Full(state) if state.holds_counter_of(nodes))
    }

    /// Join what the element has seen into `into` (no context built for the compact form
    /// or a tombstone).
    pub fn add_context_to(self, into: &mut VersionVector) {
        match self {
            ElementRef::Int(dot, _) | ElementRef::Raw(dot, _) => into.add(dot),
            ElementRef::Tombstone(tombstone) => tombstone.dots().for_each(|dot| into.add(dot)),
            // A wider tombstone's causal context is its explicit one: joined as it is,
            // with no context gathered.
            ElementRef::Full(state) => match state.context_only() {
                Some(ctx) => into.merge(ctx),
                None => into.merge(&state.causal_context()),
            },
        }
    }

    /// The Merkle digest of `(name, element)`: exactly `merkle::digest(name, state)` of
    /// the element's state, fed without building it for the compact form (the bytes
    /// [`KeyState::feed_digest`] feeds for a state of one value at one dot).
    pub fn digest(self, name: &[u8]) -> u64 {
        // The head (`merkle::plain_head`), then a string's bytes, then no TTL write.
        match self {
            ElementRef::Full(state) => merkle::digest(name, state),
            ElementRef::Tombstone(tombstone) => tombstone.digest(name),
            ElementRef::Int(dot, n) => merkle::digest_plain(name, &merkle::plain_head(dot, 0, n.to_le_bytes()), &[]),
            ElementRef::Raw(dot, value) => {
                merkle::digest_plain(name, &merkle::plain_head(dot, 1, (value.len() as u64).to_le_bytes()), value)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::kv::value::SetTtl;
    use bytes::Bytes;

    fn dot(ms: u64, node: NodeId) -> Dot {
        Dot::new(Hlc::from_parts(ms, 3), node)
    }

    fn plain_states() -> Vec<KeyState> {
        vec![
            KeyState::with_value(dot(5, 2), StrVal::Int(1), None),
            KeyState::with_value(dot(7, 9), StrVal::Int(-42), None),
            KeyState::with_value(dot(7, 9), StrVal::raw(Bytes::from_static(b"value-00000001")), None),
            KeyState::with_value(dot(8, 1), StrVal::raw(Bytes::new()), None),
            KeyState::with_value(dot(8, 1), StrVal::raw(Bytes::from_static(b"1.5e0")), None),
            // Both sides of the inline limit.
            KeyState::with_value(dot(8, 2), StrVal::raw(vec![b'i'; INLINE_VALUE_BYTES]), None),
            KeyState::with_value(dot(8, 3), StrVal::raw(vec![b'o'; INLINE_VALUE_BYTES + 1]), None),
            // Past the digest's stack buffer (`merkle::digest_plain`).
            KeyState::with_value(dot(9, 4), StrVal::raw(Bytes::from(vec![7u8; 300])), None),
        ]
    }

    #[test]
    fn a_value_at_one_dot_is_stored_compact_and_reads_digests_and_converts_back_exactly() {
        for state in plain_states() {
            let stored = Stored::from_state(&state);
            assert!(!matches!(stored, Stored::Full(_)), "{state:?}");
            let value_len = state.read().map_or(0, |v| v.len());
            match &stored {
                Stored::Inline { .. } => assert!(value_len <= INLINE_VALUE_BYTES),
                Stored::Raw { .. } => assert!(value_len > INLINE_VALUE_BYTES),
                _ => {}
            }
            // Every constructor stores the same form (equal states store equal).
            let (dot, value) = state.plain_value().map(|(d, v)| (d, v.clone())).expect("plain");
            assert_eq!(Stored::value_at(dot, value.clone()), stored);
            assert_eq!(stored.plain_dot(), Some(dot));
            let view = stored.view();
            assert_eq!(Stored::from_view(view), stored);
            assert_eq!(view.to_state(), state);
            assert_eq!(view.read(), state.read());
            assert_eq!(view.value_len(), state.read().map(|v| v.len()));
            assert_eq!(view.score().to_bits(), state.score().to_bits());
            assert_eq!(view.causal_context(), state.causal_context());
            assert_eq!(view.newest_dot(), state.newest_dot());
            assert_eq!(view.digest(b"field"), merkle::digest(b"field", &state));
            let long_name = [b'n'; 200];
            assert_eq!(view.digest(&long_name), merkle::digest(&long_name, &state));
            assert_eq!(ElementRef::of_state(&state), view);
            assert_eq!(Stored::from_owned(state.clone()), stored);
            assert_eq!(stored.into_state(), state);
        }
    }

    #[test]
    fn a_plain_view_of_bytes_is_the_view_of_the_state_a_set_of_them_holds() {
        let texts: [&[u8]; 9] = [b"1", b"-42", b"0", b"01", b"+1", b"1.5", b"", b"value", b"9223372036854775808"];
        for text in texts {
            let mut state = KeyState::new();
            state.set(dot(4, 2), StrVal::from_slice(text), SetTtl::Keep);
            assert_eq!(ElementRef::plain(dot(4, 2), text), ElementRef::of_state(&state), "{text:?}");
            assert_eq!(ElementRef::plain(dot(4, 2), text).to_state(), state);
        }
    }

    #[test]
    fn any_other_history_keeps_the_whole_state() {
        let mut overwritten = KeyState::with_value(dot(5, 2), StrVal::Int(1), None);
        overwritten.set(dot(6, 2), StrVal::Int(2), SetTtl::Keep);
        let mut counted = KeyState::new();
        counted.incr_by(dot(5, 2), Hlc::from_parts(1, 0), 3);
        // A tombstone of three nodes' writes (one of one or two is compact: `tombstone.rs`).
        let mut removed = KeyState::with_value(dot(5, 2), StrVal::Int(1), None);
        removed.merge(&KeyState::with_value(dot(5, 3), StrVal::Int(2), None));
        removed.delete(dot(6, 1));
        let mut concurrent = KeyState::with_value(dot(5, 2), StrVal::Int(1), None);
        concurrent.merge(&KeyState::with_value(dot(5, 3), StrVal::Int(2), None));
        for state in [counted, removed, concurrent] {
            let stored = Stored::from_state(&state);
            assert!(matches!(stored, Stored::Full(_)), "{state:?}");
            assert_eq!(ElementRef::of_state(&state), stored.view());
            assert_eq!(stored.view().digest(b"m"), merkle::digest(b"m", &state));
            assert_eq!(stored.view().exists(), state.exists());
            assert_eq!(stored.into_state(), state);
        }
        // A later write at a new dot that saw the old one leaves one value again, with
        // the old dot implied by nothing: it stays compact only if nothing else is held.
        let stored = Stored::from_state(&overwritten);
        assert_eq!(stored.into_state(), overwritten);
    }

    #[test]
    fn a_plain_elements_removal_built_directly_equals_the_general_delete() {
        let encoded = |state: &KeyState| {
            let mut w = crate::delta::codec::Writer { buf: Vec::new() };
            crate::delta::codec::write_key_state(&mut w, state);
            w.buf
        };
        for state in plain_states() {
            let old = state.newest_dot().expect("a plain state has a dot");
            // Later by the same node, and by other nodes with older and newer stamps.
            for by in [Dot::new(Hlc::from_parts(old.hlc.physical_ms() + 1, 0), old.node), dot(1, old.node + 1), dot(99, old.node + 2)] {
                let mut general = state.clone();
                general.delete(by);
                let direct = KeyState::plain_removed(old, by);
                assert_eq!(direct, general, "{state:?} removed at {by:?}");
                assert_eq!(encoded(&direct), encoded(&general));
                assert_eq!(merkle::digest(b"e", &direct), merkle::digest(b"e", &general));
                assert_eq!(ElementRef::of_state(&direct), ElementRef::of_state(&general));
                assert_eq!(direct.causal_context(), general.causal_context());
                assert!(!direct.exists() && direct.is_element());
            }
        }
    }

    #[test]
    fn a_compact_element_is_32_bytes_and_a_small_collections_header_96() {
        assert!(std::mem::size_of::<Stored>() <= 32, "{}", std::mem::size_of::<Stored>());
        let header = std::mem::size_of::<crate::engine::kv::elements::Elements>();
        assert!(header <= 96, "{header}");
    }
}
