//! The replicated state of one key: register, counters and TTL together (DESIGN §5
//! rows String, Counter, Float counter, TTL, Whole key), and a hash's fields or a
//! set's members as [`Elements`] parts (rows Hash, Set, Type clash).
//!
//! `KeyState` is a delta-state CRDT. Every local operation takes a fresh [`Dot`] and
//! yields the new key state, which is also the delta shipped to peers and storage.
//! Semantics, as users see them:
//! - SET ∥ SET: the larger `(hlc, node)` wins.
//! - INCR ∥ INCR: both count (one slot per node).
//! - SET ∥ INCR: the winning SET's value plus every increment that no SET or DEL had
//!   observed. A SET or DEL *absorbs* the increments it has seen.
//! - DEL ∥ anything: what the DEL had not observed survives.
//! - EXPIRE ∥ EXPIRE: the longest TTL wins; PERSIST beats all.
//!
//! This module never does I/O and never reads a clock: dots and times come in.

use crate::crdt::counter::Counter;
use crate::crdt::register::MvRegister;
use crate::crdt::ttl::{self, TtlRegister, TtlWrite};
use crate::crdt::{Dot, Hlc, VersionVector};

use collections::Collections;

mod absence;
mod collections;
mod meta;
mod parts;
mod repr;
mod score;
mod sparse;
mod strval;

use meta::KeyMeta;
use repr::{Full, Repr};
use sparse::Sparse;

pub use absence::AbsentWrites;
pub use parts::{KeyStateParts, KeyStatePartsRef};
pub use repr::{Slots, Values};

pub use score::score_value;
pub use strval::{COPY_VALUE_BYTES_MAX, StrVal, format_float, parse_canonical_i64, parse_f64, parse_i64};

/// How a SET treats an existing TTL.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SetTtl {
    /// Remove the TTL (plain SET).
    Clear,
    /// Keep it (KEEPTTL, APPEND, SETRANGE, INCR...).
    Keep,
    /// Expire at this absolute unix time in ms.
    At(u64),
}

#[derive(Clone, Debug, Default, PartialEq)]
struct Counters {
    ints: Counter<i64>,
    /// INCRBYFLOAT's counter, off the key until the first one (most counters are
    /// integers: 8 bytes here instead of 96).
    floats: Sparse<Counter<f64>>,
}

/// The full replicated state of one key (also its delta). Its fields (explicit
/// context, TTL register, value register, counters, collection parts) are held in one
/// of the forms of `value/repr.rs`: a value at one dot or a one-writer counter inline,
/// anything else boxed. Equality is by fields, whatever the forms (see `repr.rs`).
#[derive(Clone, Debug, Default)]
pub struct KeyState {
    repr: Repr,
}

// What a key's entry is made of (see `keyspace.rs`): 32 bytes, which with the key and
// the digest make jemalloc's 64-byte class.
const _: () = assert!(std::mem::size_of::<KeyState>() == 32);
// A counter's box (jemalloc's 64-byte class): one writer's slot inline, the floor and
// INCRBYFLOAT's counter off it until used.
const _: () = assert!(std::mem::size_of::<Counters>() <= 64);

/// What a set member's register holds: a member exists iff its element does, so the
/// value itself carries nothing.
pub const MEMBER_MARK: StrVal = StrVal::Int(1);

/// Which type a key reads as.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum KeyKind {
    String,
    Hash,
    Set,
    Zset,
    List,
    Graph,
    Stream,
}

impl KeyState {
    pub fn new() -> KeyState {
        KeyState::default()
    }

    /// A fresh key holding `value`, written at `dot`.
    pub fn with_value(dot: Dot, value: StrVal, expire_at_ms: Option<u64>) -> KeyState {
        let mut state = KeyState::one_value(dot, value);
        if let Some(at_ms) = expire_at_ms {
            state.ttl_update(|t| t.write(dot, TtlWrite::At(at_ms)));
        }
        state
    }

    /// Observed-remove with a context and no new write (FLUSHALL replay): drop every
    /// value and TTL write `seen` covers and absorb the counter slots it covers.
    pub fn remove_observed(&mut self, seen: &VersionVector) {
        for part in self.collections_mut() {
            part.remove_observed(seen, true);
        }
        self.remove_covered(seen, true);
        self.settle();
    }

    /// [`KeyState::remove_observed`] of an element by its collection's whole-key
    /// `removed` context, merged from elsewhere: values and TTL writes it covers go,
    /// counter slots stay. Why: a whole-key remove covers an element's writes by a
    /// version vector, and with element-sized deltas it may cover a slot's stamp
    /// without having held the slot's sum at that stamp; absorbing the sum held here
    /// would make the result depend on arrival order. What the remove did hold it
    /// absorbed where it ran, and ships as the element's floor.
    pub fn remove_covered_values(&mut self, seen: &VersionVector) {
        self.remove_covered(seen, false);
        self.settle();
    }

    fn remove_covered(&mut self, seen: &VersionVector, absorb_counters: bool) {
        let mut ctx = self.string_context();
        // Only what `seen` covers goes: a state it covers none of keeps its form.
        if self.values().dots().any(|d| seen.covers(d)) {
            let empty: MvRegister<StrVal> = MvRegister::new();
            self.full_mut().value.merge(&ctx, &empty, seen);
        }
        if !self.ttl().is_empty() {
            self.ttl_update(|t| t.merge(&ctx, &TtlRegister::new(), seen));
        }
        if absorb_counters
            && self.has_counters()
            && let Some(c) = self.full_mut().counters.as_deref_mut()
        {
            c.ints.absorb_covered(seen);
            c.floats.update(|f| f.absorb_covered(seen));
        }
        ctx.merge(seen);
        self.set_normalized_context(ctx);
    }

    /// Whether `seen` covers some value, TTL write or unabsorbed increment held here.
    pub fn has_dot_covered_by(&self, seen: &VersionVector) -> bool {
        if self.collections().any(|part| part.any_entry(|_, element| element.has_dot_covered_by(seen))) {
            return true;
        }
        self.has_own_dot_covered_by(seen)
    }

    /// [`KeyState::has_dot_covered_by`] of the key-level writes alone (values, TTL
    /// writes, unabsorbed increments; not a collection's elements).
    pub fn has_own_dot_covered_by(&self, seen: &VersionVector) -> bool {
        self.values().dots().chain(self.ttl().dots()).any(|d| seen.covers(d))
            || self.counters().is_some_and(|c| {
                c.ints
                    .slots()
                    .iter()
                    .map(|s| (s.node, s.hlc))
                    .chain(c.floats.slots().iter().map(|s| (s.node, s.hlc)))
                    .any(|(n, h)| seen.covers(Dot::new(h, n)))
            })
    }

    /// Every counter slot and floor held: (node, incarnation, stamp of its newest
    /// increment). A floor is the part of a slot a SET or DEL absorbed.
    pub fn counter_slots(&self) -> Vec<(crate::crdt::NodeId, crate::crdt::Hlc, crate::crdt::Hlc)> {
        let Some(c) = self.counters() else { return Vec::new() };
        let ints = c.ints.slots().iter().chain(c.ints.floor()).map(|s| (s.node, s.incarnation, s.hlc));
        let floats = c.floats.slots().iter().chain(c.floats.floor()).map(|s| (s.node, s.incarnation, s.hlc));
        ints.chain(floats).collect()
    }

    /// What is left of this state once it expires: removal metadata that, merged
    /// anywhere, removes exactly what expired and nothing written after.
    pub fn expired_tombstone(&self, safe: Option<&VersionVector>) -> KeyState {
        // Elements included: each goes by its own history (see `remove_elements`); an
        // element's counter increments are absorbed where the remove ran, as floors the
        // tombstone carries (a merged remove absorbs none).
        let mut tombstone = self.clone();
        tombstone.clear_held(safe, None);
        debug_assert!(!tombstone.exists());
        tombstone
    }

    /// Remove everything held here, as a local whole-key remove with no new write of
    /// the key's own: the string part by its context, the elements as
    /// [`KeyState::remove_elements`] does (`by`: the remove's dot, if it has one).
    pub fn clear_held(&mut self, safe: Option<&VersionVector>, by: Option<Dot>) {
        self.remove_elements(safe, by);
        let seen = self.string_context();
        self.remove_covered(&seen, true);
        self.settle();
    }

    /// Whether the key exists (a state that exists only as removal metadata does not).
    pub fn exists(&self) -> bool {
        self.string_exists() || self.collections().any(|c| !c.is_empty())
    }

    /// As [`KeyState::read`], borrowing the stored value when no increment is folded
    /// into it (the common case): a reply then copies a small value's bytes instead of
    /// sharing them, which costs no reference count and, for a `Bytes` made from a
    /// `Vec`, no allocation of its shared header on the first read.
    pub fn read_borrowed(&self) -> Option<std::borrow::Cow<'_, StrVal>> {
        let folds_counters = self.counters().is_some_and(|c| c.ints.has_unabsorbed() || c.floats.has_unabsorbed());
        if folds_counters {
            return self.read().map(std::borrow::Cow::Owned);
        }
        self.values().winner().map(|(_, v)| std::borrow::Cow::Borrowed(v))
    }

    /// The value a GET returns, or `None` when the key does not exist.
    pub fn read(&self) -> Option<StrVal> {
        /// Every integer below this (2^53) is a double exactly.
        const FLOAT_EXACT_INTEGER_MAX: f64 = 9_007_199_254_740_992.0;
        let base = self.values().winner().map(|(_, v)| v);
        let Some(counters) = self.counters() else {
            return base.cloned();
        };
        let has_ints = counters.ints.has_unabsorbed();
        let has_floats = counters.floats.has_unabsorbed();
        if !has_ints && !has_floats {
            return base.cloned();
        }
        if has_floats || base.is_some_and(|b| b.as_i64().is_none()) {
            let base_f = match base {
                None => 0.0,
                Some(b) => match b.as_f64() {
                    Some(f) => f,
                    // A SET of a non-number hides the increments concurrent with it.
                    None => return Some(b.clone()),
                },
            };
            // A float part that is a whole number (an INCRBYFLOAT that left `4`) adds to
            // integer increments exactly, as Redis adds INCRBY to the text `4`: a double
            // would round them past 2^53. (Without integer increments it stays text, as
            // INCRBYFLOAT leaves it in Redis.)
            let float_part = counters.floats.contributions().fold(base_f, |sum, c| sum + c);
            if has_ints && float_part.fract() == 0.0 && float_part.abs() < FLOAT_EXACT_INTEGER_MAX {
                let total = counters.ints.contributions().fold(float_part as i128, |sum, c| sum + c as i128);
                return Some(i64::try_from(total).map_or_else(|_| StrVal::raw(total.to_string()), StrVal::Int));
            }
            let mut total = base_f;
            for c in counters.ints.contributions() {
                total += c as f64;
            }
            for c in counters.floats.contributions() {
                total += c;
            }
            if !total.is_finite() {
                return base.cloned();
            }
            return Some(StrVal::raw(format_float(total)));
        }
        let mut total: i128 = base.and_then(|b| b.as_i64()).unwrap_or(0) as i128;
        for c in counters.ints.contributions() {
            total += c as i128;
        }
        match i64::try_from(total) {
            Ok(n) => Some(StrVal::Int(n)),
            // Concurrent increments can overflow together; show their sum as text. (So
            // do one node's increments whose slot sum wrapped past i64 although each
            // value they answered was in range: docs/semantics.md.)
            Err(_) => Some(StrVal::raw(total.to_string())),
        }
    }

    /// The absolute expiry instant (unix ms), if any.
    pub fn expire_at_ms(&self) -> Option<u64> {
        ttl::resolve(self.ttl())
    }

    /// Number of concurrent register values kept (1 for a plain string).
    pub fn concurrent_values(&self) -> usize {
        self.values().len()
    }

    /// The newest stamp anywhere in this state (cheaper than the full context).
    pub fn max_hlc(&self) -> crate::crdt::Hlc {
        // One value at one dot and nothing else (most element deltas): its stamp.
        if let repr::Repr::Str { hlc, .. } = &self.repr {
            return *hlc;
        }
        // One counter slot and nothing else (every INCR's delta): the slot's stamp, as
        // `observed` below would give, without building the counters.
        if let Some(slot) = self.compact_count() {
            return slot.hlc;
        }
        let mut max = self.ctx().max_hlc();
        for dot in self.values().dots().chain(self.ttl().dots()) {
            max = max.max(dot.hlc);
        }
        if let Some(c) = self.counters() {
            for (_, hlc) in c.ints.observed().chain(c.floats.observed()) {
                max = max.max(hlc);
            }
        }
        for part in self.collections() {
            max = max.max(part.max_hlc());
        }
        max
    }

    /// The newest stamp of `node` this state holds: `causal_context().get(node)`
    /// without building the context (the replication batcher asks it of every delta).
    pub fn newest_stamp_of(&self, node: crate::crdt::NodeId) -> crate::crdt::Hlc {
        // A state of one value at one dot (every SET's) holds that dot and nothing else:
        // asked of every replicated SET, the general walk below was ~150 instructions.
        if let Some((dot, _)) = self.plain_value() {
            return if dot.node == node { dot.hlc } else { crate::crdt::Hlc::ZERO };
        }
        let mut newest = self.ctx().get(node);
        for dot in self.values().dots().chain(self.ttl().dots()).filter(|d| d.node == node) {
            newest = newest.max(dot.hlc);
        }
        if let Some(c) = self.counters() {
            for (_, hlc) in c.ints.observed().chain(c.floats.observed()).filter(|(n, _)| *n == node) {
                newest = newest.max(hlc);
            }
        }
        for part in self.collections() {
            newest = newest.max(part.newest_stamp_of(node));
        }
        newest
    }

    /// The full causal context: explicit entries plus every dot stored, elements
    /// included (what a remove of the whole key has seen).
    pub fn causal_context(&self) -> VersionVector {
        let mut ctx = self.string_context();
        for part in self.collections() {
            ctx.merge(&part.context());
        }
        ctx
    }

    /// The context of the string part alone: what its register and counters merge by.
    fn string_context(&self) -> VersionVector {
        let mut ctx = self.implied_context();
        ctx.merge(self.ctx());
        ctx
    }

    fn implied_context(&self) -> VersionVector {
        let mut ctx = VersionVector::new();
        for dot in self.values().dots().chain(self.ttl().dots()) {
            ctx.add(dot);
        }
        if let Some(c) = self.counters() {
            for (node, hlc) in c.ints.observed().chain(c.floats.observed()) {
                ctx.add(Dot::new(hlc, node));
            }
        }
        ctx
    }

    fn normalize_context(&mut self) {
        let implied = self.implied_context();
        self.ctx_update(|c| c.remove_covered_by(&implied));
    }

    /// Store `ctx` as the explicit context less what the stored dots imply: the same
    /// as setting it and normalizing, without boxing a context that normalizes away
    /// (every plain SET's would).
    fn set_normalized_context(&mut self, mut ctx: VersionVector) {
        ctx.remove_covered_by(&self.implied_context());
        self.ctx_set(ctx);
    }

    /// Run a local mutation at `dot`: whatever it removes stays in the causal context,
    /// and the write itself joins it.
    fn mutate(&mut self, dot: Dot, f: impl FnOnce(&mut KeyState)) {
        let mut ctx = self.string_context();
        debug_assert!(!ctx.covers(dot), "a local write must carry a new dot");
        f(self);
        ctx.add(dot);
        self.set_normalized_context(ctx);
    }

    fn absorb_counters(&mut self) {
        if !self.has_counters() {
            return;
        }
        if let Some(c) = self.full_mut().counters.as_deref_mut() {
            c.ints.absorb_all();
            c.floats.update(|f| f.absorb_all());
        }
    }

    /// SET and every command that writes a whole new value (APPEND, SETRANGE, GETSET...).
    pub fn set(&mut self, dot: Dot, value: StrVal, ttl: SetTtl) {
        // The common overwrite, without a move to the full form and back: a state of
        // nothing or of one value by the writing node becomes the new value alone (the
        // old dot is this node's, so the new one implies it; no TTL to keep or clear).
        let value = match ttl {
            SetTtl::Clear | SetTtl::Keep => match self.overwrite_compact(dot, value) {
                Ok(()) => return,
                Err(value) => value,
            },
            SetTtl::At(_) => value,
        };
        self.set_full(dot, value, ttl);
    }

    fn set_full(&mut self, dot: Dot, value: StrVal, ttl: SetTtl) {
        self.remove_observed_elements(dot);
        self.mutate(dot, |s| {
            s.full_mut().value.write(dot, value);
            if !crate::bugs::active(crate::bugs::Bug::SetKeepsIncrements) {
                s.absorb_counters();
            }
            match ttl {
                SetTtl::Clear => s.ttl_set(TtlRegister::new()),
                SetTtl::Keep => {}
                SetTtl::At(at_ms) => s.ttl_update(|t| t.write(dot, TtlWrite::At(at_ms))),
            }
        });
        self.settle();
    }

    /// INCRBY: the caller has checked that the current value is an integer and that the
    /// result does not overflow.
    /// `incarnation`: when the writing process began incrementing (see `crdt::counter`).
    pub fn incr_by(&mut self, dot: Dot, incarnation: Hlc, by: i64) {
        // A compact counter (or nothing) by this incarnation adds in place, as the full
        // form would (see `repr.rs`).
        if self.incr_compact(dot, incarnation, by) {
            return;
        }
        self.mutate(dot, |s| s.full_mut().counters.get_or_insert_with(Default::default).ints.add(dot.node, incarnation, dot.hlc, by));
        self.settle();
    }

    /// INCRBYFLOAT: the caller has checked the current value is a number and the result is
    /// finite.
    pub fn incr_by_float(&mut self, dot: Dot, incarnation: Hlc, by: f64) {
        self.mutate(dot, |s| {
            s.full_mut().counters.get_or_insert_with(Default::default).floats.update(|f| f.add(dot.node, incarnation, dot.hlc, by))
        });
        self.settle();
    }

    /// What [`KeyState::delete`] at `by` leaves of a plain element, one value at `old`
    /// and nothing else (no context, counters or TTL): a tombstone whose context is
    /// `old` and `by`. Built directly, without the general mutation's contexts (LPOP
    /// and RPOP remove one such element each; `element.rs`'s tests compare both ways).
    pub fn plain_removed(old: Dot, by: Dot) -> KeyState {
        debug_assert!(old.node != by.node || old.hlc < by.hlc, "a local write must carry a new dot");
        let mut ctx = VersionVector::new();
        ctx.add(old);
        ctx.add(by);
        KeyState::context_only_of(ctx)
    }

    /// A state holding the context `ctx` and nothing else: a removed element's
    /// tombstone (settled already: the context-only form, one box).
    pub fn context_only_of(ctx: VersionVector) -> KeyState {
        KeyState::of_meta(KeyMeta { ctx, ttl: TtlRegister::default() })
    }

    /// DEL: remove everything observed. The result is a tombstone unless it merged
    /// unobserved increments (it never has, locally).
    pub fn delete(&mut self, dot: Dot) {
        self.remove_observed_elements(dot);
        self.mutate(dot, |s| {
            if !s.values().is_empty() {
                s.full_mut().value.clear();
            }
            s.absorb_counters();
            s.ttl_set(TtlRegister::new());
        });
        self.settle();
        debug_assert!(!self.exists());
    }

    /// A local write of the whole key (SET, DEL) at `dot` replaces every element held,
    /// claiming at key level only this node's own writes (see
    /// [`Elements::remove_held`]). The engine first calls [`KeyState::remove_elements`]
    /// with what is causally stable too, which makes the claim (and what ships) smaller.
    fn remove_observed_elements(&mut self, dot: Dot) {
        if self.colls().is_none() {
            return;
        }
        let mut own = VersionVector::new();
        own.add(dot);
        self.remove_elements(Some(&own), Some(dot));
    }

    /// A whole-key remove of the collection parts on this node: every element held goes,
    /// exactly; the key-level claim covers only what `safe` covers (`None`: all seen,
    /// on a node without peers); `by`, the remove's dot, joins every tombstone left.
    pub fn remove_elements(&mut self, safe: Option<&VersionVector>, by: Option<Dot>) {
        for part in self.collections_mut() {
            part.remove_held(safe, by);
        }
        self.normalize_collections();
        self.settle();
    }

    /// A collection a local write emptied: Redis deletes the key, its TTL with it, so
    /// the write also removes every TTL write held here, at the write's own `dot` (the
    /// element writes' dot; key level is a part of its own). A key written again later
    /// then starts without a TTL on every node, not only on the ones that still held
    /// the emptied state. Returns whether there was a TTL write to remove (the caller
    /// ships the key-level part then).
    pub fn drop_ttl_of_emptied(&mut self, dot: Dot) -> bool {
        debug_assert!(!self.exists(), "only an emptied key loses its TTL this way");
        if self.ttl().is_empty() {
            return false;
        }
        self.mutate(dot, |s| s.ttl_set(TtlRegister::new()));
        self.settle();
        true
    }

    /// Whether tombstone collection must keep this dead state although every node has
    /// seen it: it holds a TTL write no remove has observed and whose instant is not
    /// past at `time_ms`. Such a state is not a removal but a TTL whose key's elements
    /// have not arrived yet (an EXPIRE's delta carries the key-level part alone, and
    /// may overtake, through another link, the element write its node had seen):
    /// collected, it would be forgotten, and the elements would arrive to a key with
    /// no TTL here while every other node expires it. Once the instant is past, every
    /// node that holds those elements with this TTL expires the key and ships the
    /// expiry, which removes them here too.
    pub fn holds_pending_ttl(&self, time_ms: u64) -> bool {
        !self.exists() && self.expire_at_ms().is_some_and(|at_ms| at_ms >= time_ms)
    }

    /// EXPIRE family with a future instant.
    pub fn expire_at(&mut self, dot: Dot, at_ms: u64) {
        self.mutate(dot, |s| s.ttl_update(|t| t.write(dot, TtlWrite::At(at_ms))));
        self.settle();
    }

    /// PERSIST.
    pub fn persist(&mut self, dot: Dot) {
        self.mutate(dot, |s| s.ttl_update(|t| t.write(dot, TtlWrite::Persist)));
        self.settle();
    }

    /// Join with another replica's state (or a delta) of the same key.
    pub fn merge(&mut self, other: &KeyState) {
        self.merge_forgetting(other, &VersionVector::new());
    }

    /// [`KeyState::merge`] on a node that has collected element tombstones `forgotten`
    /// covers: an element arriving with no entry here loses what that covers.
    pub fn merge_forgetting(&mut self, other: &KeyState, forgotten: &VersionVector) {
        for (part, theirs) in other.collection_parts() {
            self.part_mut(part).merge(theirs, forgotten);
        }
        if other.has_collection() {
            self.normalize_collections();
        }
        let self_ctx = self.string_context();
        let other_ctx = other.string_context();
        let theirs = other.values();
        if !self.same_values(theirs) {
            self.full_mut().value.merge_entries(&self_ctx, theirs.iter(), &other_ctx);
        }
        if !(self.ttl().is_empty() && other.ttl().is_empty()) {
            self.ttl_update(|t| t.merge(&self_ctx, other.ttl(), &other_ctx));
        }
        if let Some(theirs) = other.counters() {
            let mine = &mut self.full_mut().counters;
            match mine.as_deref_mut() {
                Some(mine) => {
                    mine.ints.merge(&theirs.ints);
                    mine.floats.update(|f| f.merge(&theirs.floats));
                }
                None => *mine = Some(Box::new(theirs.into_owned())),
            }
        }
        let mut ctx = self_ctx;
        ctx.merge(&other_ctx);
        self.set_normalized_context(ctx);
        self.settle();
    }

    /// Whether `theirs` holds exactly the values held here, none included (a merge of
    /// a state with itself, or with a delta this replica already holds, changes no
    /// value: the registers keep what both sides have).
    fn same_values(&self, theirs: Values<'_>) -> bool {
        let mine = self.values();
        mine.len() == theirs.len() && mine.iter().zip(theirs.iter()).all(|(a, b)| a.0 == b.0)
    }
}
