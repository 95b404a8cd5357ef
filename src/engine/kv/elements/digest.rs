//! A collection's digest (the XOR of `merkle::digest(name, element)` over every entry),
//! kept write by write only once someone has asked for it. Part of [`super::Elements`].
//!
//! Why lazy: only Merkle anti-entropy (a node with peers, which asks for every key's
//! digest after every write) and the graph engine's view cache read it. On a node
//! without peers nobody does, yet keeping it cost every HSET, SADD, ZADD, push and pop
//! one or two element digests (an xxh3 of the name, the dot and the value: 80-180
//! instructions of a 5,000-6,000-instruction command under callgrind). The first
//! [`Elements::digest`] walks the entries once (what enabling Merkle leaves costs a
//! string key too) and from then on every write keeps it.
//!
//! Must never: let a kept digest differ from the walk of the entries (debug builds
//! check small collections on every read), or walk on a write.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::Elements;

/// The digest's value: atomic so that a reader holding `&Elements` can fill it in
/// (writers, holding `&mut`, reach it without atomics), cloned as its current value.
#[derive(Debug, Default)]
pub(super) struct DigestValue(AtomicU64);

impl DigestValue {
    /// Toggle an element's digest in or out. Harmless while the digest is not kept
    /// (the first [`Elements::digest`] overwrites the value), so callers that hold a
    /// borrow of the table need not ask; they only skip computing `digest`.
    pub(super) fn toggle(&mut self, digest: u64) {
        *self.0.get_mut() ^= digest;
    }

    pub(super) fn get_mut(&mut self) -> &mut u64 {
        self.0.get_mut()
    }
}

impl Clone for DigestValue {
    fn clone(&self) -> Self {
        DigestValue(AtomicU64::new(self.0.load(Ordering::Relaxed)))
    }
}

/// Whether the digest is kept (see the module docs).
#[derive(Debug, Default)]
pub(super) struct DigestKept(AtomicBool);

impl DigestKept {
    pub(super) fn is_kept(&mut self) -> bool {
        *self.0.get_mut()
    }
}

impl Clone for DigestKept {
    fn clone(&self) -> Self {
        DigestKept(AtomicBool::new(self.0.load(Ordering::Acquire)))
    }
}

// The flag sits in the header's padding: a small collection's header stays in
// jemalloc's 96-byte class (`elements.rs`).
const _: () = assert!(std::mem::size_of::<Elements>() <= 96);

/// Entries up to which a debug build checks a kept digest against the walk on every read.
const CHECKED_ENTRIES_MAX: usize = 64;

impl Elements {
    /// The collection's digest: the XOR of every entry's element digest. The first call
    /// walks the entries; the collection keeps it from then on.
    pub fn digest(&self) -> u64 {
        if self.digest_kept.0.load(Ordering::Acquire) {
            let kept = self.digest.0.load(Ordering::Relaxed);
            debug_assert!(
                self.entries_len() > CHECKED_ENTRIES_MAX || kept == self.walked_digest(),
                "a kept collection digest differs from its entries'"
            );
            return kept;
        }
        let walked = self.walked_digest();
        self.digest.0.store(walked, Ordering::Relaxed);
        self.digest_kept.0.store(true, Ordering::Release);
        walked
    }

    fn walked_digest(&self) -> u64 {
        let mut digest = 0;
        self.for_each_entry(|name, element| digest ^= element.digest(name));
        digest
    }

    /// Whether writes must keep the digest (callers skip computing element digests
    /// otherwise).
    pub(super) fn keeps_digest(&mut self) -> bool {
        self.digest_kept.is_kept()
    }

    /// Toggle an element's digest in or out (see [`DigestValue::toggle`]).
    pub(super) fn toggle_digest(&mut self, digest: u64) {
        self.digest.toggle(digest);
    }

    /// Whether two collections' digests agree where both are kept (equal entries
    /// have equal digests; this compares what each kept, write by write).
    pub(super) fn kept_digests_agree(&self, other: &Elements) -> bool {
        let kept = |e: &Elements| e.digest_kept.0.load(Ordering::Acquire).then(|| e.digest.0.load(Ordering::Relaxed));
        match (kept(self), kept(other)) {
            (Some(a), Some(b)) => a == b,
            _ => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;
    use crate::crdt::{Dot, Hlc};
    use crate::engine::kv::collection_writes::Part;
    use crate::engine::kv::value::{SetTtl, StrVal};

    fn write(elements: &mut Elements, step: u64) {
        let name = format!("f{:03}", step % 150);
        let dot = Dot::new(Hlc::from_parts(1000 + step, 0), 1);
        if step % 7 == 3 {
            elements.write(name.as_bytes(), |s| s.delete(dot));
        } else {
            // A number: a sorted set's member reads its value as its score.
            let value = StrVal::raw(Bytes::from(step.to_string()));
            elements.write(name.as_bytes(), |s| s.set(dot, value, SetTtl::Keep));
        }
    }

    #[test]
    fn a_digest_asked_for_late_equals_one_kept_from_the_start_through_every_write() {
        // Each table form: packed (small hashes and sets), map, chunked (graphs, lists).
        for part in [Part::Hash, Part::Set, Part::Zset, Part::Graph] {
            let mut early = Elements::for_part(part);
            assert_eq!(early.digest(), 0);
            // Asked first when small (packed, for hashes and sets) and when big.
            let mut late = [(5, Elements::for_part(part)), (250, Elements::for_part(part))];
            for step in 0..400u64 {
                write(&mut early, step);
                assert_eq!(early.digest(), early.walked_digest(), "{part:?} step {step}");
                for (ask_at, elements) in &mut late {
                    write(elements, step);
                    if step == *ask_at {
                        assert!(!elements.keeps_digest());
                        assert_eq!(elements.digest(), early.digest(), "{part:?} step {step}");
                    }
                    assert_eq!(elements.keeps_digest(), step >= *ask_at);
                    assert!(early.kept_digests_agree(elements), "{part:?} step {step}");
                }
            }
            for (_, elements) in &late {
                assert_eq!(elements.digest(), elements.walked_digest(), "{part:?}");
                assert_eq!(elements.digest(), early.digest(), "{part:?}");
            }
        }
    }

    #[test]
    fn a_collection_nobody_asked_keeps_no_digest_and_a_clone_keeps_what_it_kept() {
        let mut elements = Elements::for_part(Part::Hash);
        for step in 0..10 {
            write(&mut elements, step);
        }
        assert!(!elements.keeps_digest());
        assert_eq!(*elements.digest.get_mut(), 0, "no element digest was computed");
        let digest = elements.digest();
        let mut copy = elements.clone();
        assert!(copy.keeps_digest());
        assert_eq!(*copy.digest.get_mut(), digest);
    }
}
