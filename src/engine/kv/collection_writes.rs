//! The one write path of every collection type: element writes at one dot, applied in
//! place to an existing key (shipping only the elements written, as a part of the
//! key's state) or as a new key (shipping it whole). Hashes and sets call it with the
//! part they write and what each element's write does.
//!
//! No I/O, no clock: the dot comes from the write context.

use bytes::Bytes;
use smallvec::SmallVec;

use super::elements::ElementWrite;
use super::packed::PackLimit;
use super::value::{KeyKind, StrVal};
use super::{KeyState, KvEngine, WriteCtx, key_hash};
use crate::command::errors;
use crate::crdt::{Dot, Hlc};
use crate::notify::Class;
use crate::protocol::Frame;

/// Which collection part of a key a write goes to.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Part {
    Hash = 0,
    Set = 1,
    Zset = 2,
    List = 3,
    /// A graph's nodes, edges and properties (`engine::graph`).
    Graph = 4,
    /// A stream's entries, consumer groups and counters (`engine::stream`).
    Stream = 5,
}

impl Part {
    pub const COUNT: usize = 6;
    pub const ALL: [Part; Part::COUNT] = [Part::Hash, Part::Set, Part::Zset, Part::List, Part::Graph, Part::Stream];

    /// The type a key holding only this part reads as.
    pub fn kind(self) -> KeyKind {
        match self {
            Part::Hash => KeyKind::Hash,
            Part::Set => KeyKind::Set,
            Part::Zset => KeyKind::Zset,
            Part::List => KeyKind::List,
            Part::Graph => KeyKind::Graph,
            Part::Stream => KeyKind::Stream,
        }
    }

    /// The byte that introduces this part in a key's Merkle digest (after the tags of
    /// the string part's fields).
    pub fn digest_tag(self) -> u8 {
        2 + self as u8
    }
}

/// Names (and their writes) a command keeps without allocating: one, as HSET, SADD and
/// ZADD of a single element name (the common case); more spill to the heap.
pub const NAMES_INLINE: usize = 4;

/// A command's element names, inline while few (see [`NAMES_INLINE`]), borrowed from
/// the command: a clone of an argument's `Bytes` costs two atomic reference-count
/// updates, and the element is copied where it is stored anyway.
pub type Names<'a> = SmallVec<[&'a [u8]; NAMES_INLINE]>;

impl KvEngine {
    /// How far a collection of `part` packs under this node's settings: a hash by
    /// `hash-max-listpack-entries`/`-value`, a set by `set-max-intset-entries` (Redis
    /// 7.0's one compact set), each capped (`packed.rs`). Other parts never pack.
    pub(crate) fn pack_limit(&self, part: Part) -> PackLimit {
        let limits = &self.encoding;
        match part {
            Part::Hash => PackLimit::capped(limits.hash_max_listpack_entries, limits.hash_max_listpack_value),
            Part::Set => PackLimit::capped(limits.set_max_intset_entries, usize::MAX),
            Part::Zset | Part::List | Part::Graph | Part::Stream => PackLimit::CAPPED,
        }
    }

    /// A copy of `key` for a collection command's events when its class, or `del` (the
    /// key's last element may go), raises: `None` costs nothing.
    pub(super) fn event_key(&self, class: Class, key: &Bytes) -> Option<Bytes> {
        self.notify.key_for(&[class, Class::Generic], key)
    }

    /// Raise a collection command's `event` for `key` (from [`KvEngine::event_key`]),
    /// then `del` if the command removed its last element, in Redis's order.
    pub(super) fn raise_collection_event(&mut self, class: Class, event: &'static str, key: Option<Bytes>) {
        let Some(key) = key else { return };
        self.notify.raise_for(class, event, Some(&key));
        if self.keys.get(&key, key_hash(&key)).is_none() {
            self.notify.raise_for(Class::Generic, "del", Some(&key));
        }
    }

    /// Apply `write(i, dot, incarnation, element)` to the element named `names[i]`, for
    /// every `i`, at one dot. `increments`: some write adds to a counter (it needs the
    /// process's counter incarnation). The caller has checked the key's type. Returns
    /// how many of the elements were not live before and are now (HSET's and SADD's
    /// reply), found by the write's own lookup of each element.
    pub(crate) fn write_elements(
        &mut self,
        ctx: &mut WriteCtx,
        key: Bytes,
        part: Part,
        names: &[impl AsRef<[u8]>],
        increments: bool,
        write: impl Fn(usize, Dot, Hlc, &mut KeyState),
    ) -> usize {
        let dot = ctx.next_dot();
        self.write_elements_at(ctx, dot, key, part, names, increments, write)
    }

    /// [`KvEngine::write_elements`] where `set_value(i)` says which writes set a value
    /// (`Some(value)`: `write(i, ..)` is `KeyState::set(dot, value, SetTtl::Keep)`),
    /// so that those are done in place where they can be (`Elements::set_plain`: HSET,
    /// SADD and ZADD over a large collection).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn write_elements_setting(
        &mut self,
        ctx: &mut WriteCtx,
        key: Bytes,
        part: Part,
        names: &[impl AsRef<[u8]>],
        increments: bool,
        set_value: impl Fn(usize) -> Option<StrVal>,
        write: impl Fn(usize, Dot, Hlc, &mut KeyState),
    ) -> usize {
        let dot = ctx.next_dot();
        self.write_elements_inner(ctx, dot, key, part, names, increments, None, set_value, write).expect("no type check asked")
    }

    /// [`KvEngine::write_elements_setting`] with the caller's type check folded in:
    /// WRONGTYPE, writing nothing, if `key` holds another type than `part`'s. While no
    /// key has a TTL none can have expired, so the write's own lookup makes the check
    /// (one lookup of the key instead of two: HSET's and SADD's); otherwise the key is
    /// read first as a read would (`live` expires it).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn write_elements_checked(
        &mut self,
        ctx: &mut WriteCtx,
        key: Bytes,
        part: Part,
        names: &[impl AsRef<[u8]>],
        increments: bool,
        set_value: impl Fn(usize) -> Option<StrVal>,
        write: impl Fn(usize, Dot, Hlc, &mut KeyState),
    ) -> Result<usize, Frame> {
        let check = if self.keys.expiring() == 0 {
            Some(part.kind())
        } else {
            if self.live(&key, key_hash(&key), ctx.now_ms).is_some_and(|state| state.kind() != Some(part.kind())) {
                return Err(errors::error(errors::WRONG_TYPE));
            }
            None
        };
        let dot = ctx.next_dot();
        self.write_elements_inner(ctx, dot, key, part, names, increments, check, set_value, write)
            .ok_or_else(|| errors::error(errors::WRONG_TYPE))
    }

    /// [`KvEngine::write_elements`] at a dot the caller took (a list names its new
    /// elements after the dot that writes them).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn write_elements_at(
        &mut self,
        ctx: &mut WriteCtx,
        dot: Dot,
        key: Bytes,
        part: Part,
        names: &[impl AsRef<[u8]>],
        increments: bool,
        write: impl Fn(usize, Dot, Hlc, &mut KeyState),
    ) -> usize {
        self.write_elements_inner(ctx, dot, key, part, names, increments, None, |_| None, write).expect("no type check asked")
    }

    #[allow(clippy::too_many_arguments)]
    fn write_elements_inner(
        &mut self,
        ctx: &mut WriteCtx,
        dot: Dot,
        key: Bytes,
        part: Part,
        names: &[impl AsRef<[u8]>],
        increments: bool,
        check: Option<KeyKind>,
        set_value: impl Fn(usize) -> Option<StrVal>,
        write: impl Fn(usize, Dot, Hlc, &mut KeyState),
    ) -> Option<usize> {
        debug_assert!(!names.is_empty());
        let mut added = 0;
        let hash = key_hash(&key);
        let incarnation = if increments { self.incarnation(dot) } else { Hlc::ZERO };
        let keep_tombstones = self.keep_tombstones;
        let pack_limit = self.pack_limit(part);
        let updated = self.keys.update(&key, hash, |stored_key, state| {
            if check.is_some_and(|kind| state.kind() != Some(kind)) {
                return None;
            }
            let elements = state.part_mut(part);
            elements.set_pack_limit(pack_limit);
            let mut shipped: SmallVec<[(&[u8], KeyState); 1]> = SmallVec::with_capacity(names.len());
            // A write of one element done in place ships it from its view, with no state
            // built (HSET of one field, SADD and ZADD of one member on a large key).
            let ships_view = names.len() == 1 && part != Part::List;
            for (i, name) in names.iter().enumerate() {
                let name = name.as_ref();
                let planted = crate::bugs::active(crate::bugs::Bug::HdelShipsOldField);
                let before = if planted { elements.get(name).map(|e| e.to_state()) } else { None };
                // A lone node has no one to tell: a removed element leaves nothing here
                // (its tombstone is still the delta persisted and shipped).
                let in_place = if elements.sets_in_place() { set_value(i) } else { None };
                let written = match in_place.map(|value| elements.set_plain(name, dot, value)) {
                    Some(Ok((was_live, element))) if ships_view => {
                        added += usize::from(!was_live);
                        ctx.deltas.key_element_set(stored_key, part, name, element);
                        continue;
                    }
                    Some(Ok((was_live, element))) => ElementWrite { state: element.to_state(), was_live },
                    _ => elements.write_element(name, keep_tombstones, |s| write(i, dot, incarnation, s)),
                };
                let mut element = written.state;
                if element.exists() {
                    added += usize::from(!written.was_live);
                } else if let Some(before) = before {
                    element = before;
                }
                shipped.push((name, element));
            }
            // Every caller names each element once (HSET, SADD, ZADD and the removes
            // keep a name's last write; a list's names are new positions or ones a walk
            // saw once; a graph query's `store::Writes` keeps one entry per name): the
            // sink writes the delta straight from the elements, the bytes
            // `KeyState::part_delta` would encode (tested in `delta::codec`), without
            // building a collection of them per write.
            debug_assert!(
                !matches!(part, Part::Graph | Part::Stream)
                    || names.iter().map(|n| n.as_ref()).collect::<std::collections::HashSet<&[u8]>>().len() == names.len(),
                "a graph query names each element once"
            );
            if !shipped.is_empty() {
                ctx.deltas.key_elements_changed(stored_key, part, &shipped);
            }
            Some(state.exists())
        });
        match updated {
            Some(None) => return None,
            Some(Some(true)) => {}
            Some(Some(false)) => self.remove_emptied(ctx, dot, key, hash),
            None => {
                let mut state = KeyState::new();
                let elements = state.part_mut(part);
                elements.set_pack_limit(pack_limit);
                for (i, name) in names.iter().enumerate() {
                    let written = elements.write_element(name.as_ref(), true, |s| write(i, dot, incarnation, s));
                    added += usize::from(!written.was_live && written.state.exists());
                }
                // The keyspace notes element tombstones wherever a state is stored.
                self.commit_new(ctx, key, hash, state);
            }
        }
        Some(added)
    }

    /// The last element of `key` went by a local write at `dot`: the key goes, its TTL
    /// with it (`KeyState::drop_ttl_of_emptied`, shipped as the key-level part), its
    /// history kept as a tombstone.
    pub(super) fn remove_emptied(&mut self, ctx: &mut WriteCtx, dot: Dot, key: Bytes, hash: u64) {
        let Some(mut state) = self.keys.remove(&key, hash) else {
            debug_assert!(false, "the emptied key is there");
            return;
        };
        if state.drop_ttl_of_emptied(dot) {
            ctx.deltas.key_part_changed(&key, &state.without_elements());
        }
        if self.keep_tombstones {
            self.keys.put_tombstone(key, hash, state);
        }
    }
}

/// Where each name a command writes sits in its list of writes: SADD, SREM, ZADD, ZREM,
/// HSET and HDEL may name an element more than once and act on it once. A linear scan
/// while the command names few (the common case, no allocation), a hash map beyond: one
/// command naming 100,000 members must not cost 10^10 comparisons while its shard waits.
/// The first few names sit inline: a command naming one element (most) allocates nothing.
pub struct NameIndex<'a> {
    few: SmallVec<[(&'a Bytes, usize); NAMES_INLINE]>,
    many: Option<hashbrown::HashMap<&'a Bytes, usize, foldhash::fast::RandomState>>,
}

impl<'a> NameIndex<'a> {
    const LINEAR_MAX: usize = 16;

    pub fn new() -> Self {
        NameIndex { few: SmallVec::new(), many: None }
    }

    pub fn get(&self, name: &Bytes) -> Option<usize> {
        match &self.many {
            Some(many) => many.get(name).copied(),
            None => self.few.iter().find(|(n, _)| *n == name).map(|(_, i)| *i),
        }
    }

    /// Record `name` at `index`; the caller has checked that it is not there yet.
    pub fn insert(&mut self, name: &'a Bytes, index: usize) {
        debug_assert!(self.get(name).is_none(), "a name is indexed once");
        match &mut self.many {
            Some(many) => {
                many.insert(name, index);
            }
            None => {
                self.few.push((name, index));
                if self.few.len() > Self::LINEAR_MAX {
                    self.many = Some(self.few.drain(..).collect());
                }
            }
        }
    }
}

impl Default for NameIndex<'_> {
    fn default() -> Self {
        Self::new()
    }
}

/// Each name once: [`NameIndex`] without positions.
#[derive(Default)]
pub struct DistinctNames<'a>(NameIndex<'a>);

impl<'a> DistinctNames<'a> {
    pub fn new() -> Self {
        DistinctNames(NameIndex::new())
    }

    /// True the first time `name` is offered, false after.
    pub fn first(&mut self, name: &'a Bytes) -> bool {
        if self.0.get(name).is_some() {
            return false;
        }
        self.0.insert(name, 0);
        true
    }
}

#[cfg(test)]
mod distinct_tests {
    use super::DistinctNames;
    use bytes::Bytes;

    #[test]
    fn each_name_is_first_once_below_and_above_the_linear_bound() {
        let names: Vec<Bytes> = (0..100).map(|i| Bytes::from(format!("m{}", i % 40))).collect();
        let mut distinct = DistinctNames::new();
        let firsts: Vec<bool> = names.iter().map(|n| distinct.first(n)).collect();
        assert_eq!(firsts.iter().filter(|f| **f).count(), 40);
        assert!(firsts[..40].iter().all(|f| *f) && !firsts[40..].iter().any(|f| *f));
    }
}

#[cfg(test)]
mod shipped_delta_tests {
    use bytes::Bytes;

    use super::Part;
    use crate::command::hash::{HSetReply, HashCommand};
    use crate::command::set::SetCommand;
    use crate::command::zset::{ZAddFlags, ZsetCommand};
    use crate::crdt::{HlcClock, VersionVector};
    use crate::delta::codec::{self, Writer};
    use crate::engine::kv::{DeltaSink, KeyState, KvEngine, WriteCtx};
    use crate::routing::ShardScope;

    /// Encodes every element write both ways, straight from the elements and from the
    /// one-part state they used to be shipped as, and keeps both.
    #[derive(Default)]
    struct BothWays {
        pairs: Vec<(Part, Vec<u8>, Vec<u8>)>,
    }

    impl DeltaSink for BothWays {
        fn key_changed(&mut self, _: &[u8], _: &KeyState) {}
        fn key_part_changed(&mut self, _: &[u8], _: &KeyState) {}
        fn key_elements_changed(&mut self, key: &[u8], part: Part, elements: &[(&[u8], KeyState)]) {
            let (mut direct, mut built) = (Writer::default(), Writer::default());
            codec::write_part_delta(&mut direct, key, part, elements);
            codec::write_key_delta(
                &mut built,
                key,
                &KeyState::part_delta(part, elements.iter().map(|(n, s)| (Bytes::copy_from_slice(n), s.clone()))),
            );
            self.pairs.push((part, direct.buf, built.buf));
        }
        fn flushed(&mut self, _: &VersionVector, _: ShardScope) {}
    }

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    #[test]
    fn hash_set_and_zset_writes_ship_the_bytes_their_part_state_encodes() {
        let mut kv = KvEngine { keep_tombstones: true, ..KvEngine::default() };
        let mut sink = BothWays::default();
        let mut clock = HlcClock::new();
        let mut picks = {
            let mut n = 7u64;
            move || {
                n = n.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                n >> 33
            }
        };
        let many: Vec<(Bytes, Bytes)> = (0..600).map(|i| (b(&format!("f{i}")), b(&format!("v{i}")))).collect();
        let hashes = vec![
            HashCommand::Set { key: b("h"), pairs: vec![(b("a"), b("1")), (b("b"), b("x"))], reply: HSetReply::Added },
            // Existing and new fields, one named twice, an integer and a string value.
            HashCommand::Set { key: b("h"), pairs: vec![(b("a"), b("2")), (b("c"), b("y")), (b("a"), b("z"))], reply: HSetReply::Added },
            HashCommand::IncrBy { key: b("h"), field: b("n"), by: 5 },
            HashCommand::IncrBy { key: b("h"), field: b("n"), by: -2 },
            HashCommand::IncrByFloat { key: b("h"), field: b("fl"), by: 1.5 },
            HashCommand::Del { key: b("h"), fields: vec![b("b"), b("b"), b("missing"), b("n")] },
            // Back over a tombstone, then past the packed form's limits.
            HashCommand::Set { key: b("h"), pairs: vec![(b("b"), b("again"))], reply: HSetReply::Added },
            HashCommand::Set { key: b("h"), pairs: many, reply: HSetReply::Added },
            HashCommand::Set { key: b("h"), pairs: vec![(b("f3"), b("w")), (b("new"), b("v"))], reply: HSetReply::Added },
        ];
        let sets = vec![
            SetCommand::Add { key: b("s"), members: vec![b("a"), b("b")] },
            SetCommand::Add { key: b("s"), members: vec![b("b"), b("c"), b("c"), b("12")] },
            SetCommand::Rem { key: b("s"), members: vec![b("a"), b("x"), b("a")] },
            SetCommand::Add { key: b("s"), members: vec![b("a")] },
            SetCommand::Pop { key: b("s"), count: Some(2) },
        ];
        let zsets = vec![
            ZsetCommand::Add { key: b("z"), flags: ZAddFlags::default(), pairs: vec![(1.0, b("a")), (2.0, b("b"))] },
            ZsetCommand::Add {
                key: b("z"),
                flags: ZAddFlags::default(),
                pairs: vec![(3.0, b("a")), (f64::INFINITY, b("c")), (0.25, b("a"))],
            },
            ZsetCommand::IncrBy { key: b("z"), by: 2.5, member: b("b") },
            ZsetCommand::IncrBy { key: b("z"), by: -1.0, member: b("d") },
            ZsetCommand::Rem { key: b("z"), members: vec![b("a"), b("nope")] },
            ZsetCommand::Pop { key: b("z"), max: false, count: Some(1) },
        ];
        let element_writes = hashes.len() + sets.len() + zsets.len() - 3;
        {
            let mut ctx = WriteCtx { clock: &mut clock, node: 1, now_ms: 1_000, string_bytes_max: 1 << 20, deltas: &mut sink };
            for cmd in hashes {
                kv.hash_command(&mut ctx, cmd, &mut picks);
            }
            for cmd in sets {
                kv.set_command(&mut ctx, cmd, &mut picks);
            }
            for cmd in zsets {
                kv.zset_command(&mut ctx, cmd, &mut picks);
            }
        }
        // Each command but the three that created their key wrote elements in place.
        assert_eq!(sink.pairs.len(), element_writes);
        for part in [Part::Hash, Part::Set, Part::Zset] {
            assert!(sink.pairs.iter().any(|(p, _, _)| *p == part), "{part:?} wrote no elements");
        }
        for (i, (part, direct, built)) in sink.pairs.iter().enumerate() {
            assert_eq!(direct, built, "write {i} ({part:?})");
        }
    }
}

#[cfg(test)]
pub(in crate::engine::kv) mod lone_removal_tests {
    use bytes::Bytes;

    use super::Part;
    use crate::command::list::{End, ListCommand};
    use crate::crdt::{HlcClock, VersionVector};
    use crate::engine::kv::elements::Elements;
    use crate::engine::kv::{DeltaSink, KeyState, KvEngine, WriteCtx, key_hash};
    use crate::routing::ShardScope;

    /// Keeps every delta as the key state it stands for (element writes arrive through
    /// the trait's default, which builds that state). Also `refill_tests`' sink.
    #[derive(Default)]
    pub(in crate::engine::kv) struct Deltas(pub(in crate::engine::kv) Vec<(Bytes, KeyState)>);

    impl DeltaSink for Deltas {
        fn key_changed(&mut self, key: &[u8], state: &KeyState) {
            self.0.push((Bytes::copy_from_slice(key), state.clone()));
        }
        fn key_part_changed(&mut self, key: &[u8], part: &KeyState) {
            self.key_changed(key, part);
        }
        fn flushed(&mut self, _: &VersionVector, _: ShardScope) {}
    }

    fn list_of(kv: &KvEngine, key: &[u8]) -> Option<Elements> {
        let list = kv.keys.get(key, key_hash(key))?.state().list_elements()?;
        // Kept from this first look on (`elements/digest.rs`): later steps check the
        // digest kept write by write against the rebuilt one.
        list.digest();
        Some(list.clone())
    }

    #[test]
    fn pops_on_a_lone_node_leave_no_tombstone_and_ship_removals_a_peer_converges_on() {
        let key = Bytes::from_static(b"q");
        let mut lone = KvEngine::default();
        assert!(!lone.keep_tombstones, "a node without peers keeps none");
        let mut peer = KvEngine { keep_tombstones: true, ..KvEngine::default() };
        let mut sink = Deltas::default();
        let mut clock = HlcClock::new();
        let push = |end, values: &[&str]| ListCommand::Push {
            key: key.clone(),
            end,
            elements: values.iter().map(|v| Bytes::copy_from_slice(v.as_bytes())).collect(),
            only_if_exists: false,
        };
        let pop = |end, count| ListCommand::Pop { key: key.clone(), end, count };
        let commands = [
            push(End::Right, &["a", "b", "c", "d", "e"]),
            pop(End::Left, None),
            pop(End::Right, None),
            push(End::Left, &["x"]),
            pop(End::Right, Some(2)),
            pop(End::Left, Some(1)),
            pop(End::Left, Some(5)),
        ];
        for (step, cmd) in commands.into_iter().enumerate() {
            let mut ctx = WriteCtx { clock: &mut clock, node: 1, now_ms: 1_000, string_bytes_max: 1 << 20, deltas: &mut sink };
            lone.list_command(&mut ctx, cmd);
            for (key, state) in sink.0.drain(..) {
                peer.merge_key(key, state);
            }
            let live = lone.list_values(&key, 1_000).ok().flatten().unwrap_or_default();
            assert_eq!(live, peer.list_values(&key, 1_000).ok().flatten().unwrap_or_default(), "step {step}: the peer converges");
            let Some(list) = list_of(&lone, &key) else {
                assert!(live.is_empty(), "step {step}");
                continue;
            };
            assert_eq!(list.tombstones(), 0, "step {step}: a lone node keeps no tombstone");
            // The digest is that of the live elements alone, as if no removal had happened.
            let entries = list.live_named().into_iter().map(|(name, e)| (name, e.to_state())).collect();
            let rebuilt = Elements::from_entries(Part::List, list.removed().clone(), entries).expect("valid entries");
            assert_eq!(list.digest(), rebuilt.digest(), "step {step}");
        }
        // Every element went, and the peer holds the removals as tombstones.
        assert!(list_of(&lone, &key).is_none());
        assert!(list_of(&peer, &key).is_none_or(|l| l.is_empty() && l.tombstones() == 6));
    }
}

#[cfg(test)]
#[path = "type_check_tests.rs"]
mod type_check_tests;

#[cfg(test)]
#[path = "refill_tests.rs"]
mod refill_tests;
