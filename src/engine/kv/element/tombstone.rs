//! A removed element's tombstone in the compact form: its causal context when that
//! names one or two nodes, held in the element's slot with no allocation. Part of
//! `element.rs` ([`super::Stored::Tombstone`], [`super::ElementRef::Tombstone`]).
//!
//! Why: on a node with peers every removal leaves a tombstone until it is causally
//! stable, and almost every one is a pop's, HDEL's, SREM's or ZREM's of an element of
//! one value at one dot: its context is that dot and the removal's (one node when the
//! element was written here, two when another region wrote it). As a boxed state it
//! cost two allocations (the state's box and its context's) and ~240 bytes a pop
//! (docs/benchmarks.md, "Thirty-sixth session"); here it is the slot's 32 bytes.
//!
//! Must never: hold a context of more than two nodes or with a zero stamp (the state's
//! form holds those), or two forms for one context (equal states must store equal).

use crate::crdt::{Dot, Hlc, NodeId, VersionVector};
use crate::engine::kv::merkle;
use crate::engine::kv::value::KeyState;

/// The context of a tombstone, by node ascending: `hlcs[1]` is zero (and `nodes[1]`
/// zero) when it names one node. Fields spelled out so that it packs in 24 bytes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Tombstone {
    hlcs: [Hlc; 2],
    nodes: [NodeId; 2],
}

impl Tombstone {
    /// The tombstone whose context is `ctx`, if it fits this form (one or two nodes,
    /// no zero stamp).
    pub fn of_context(ctx: &VersionVector) -> Option<Tombstone> {
        let mut dots = ctx.iter();
        let first = dots.next()?;
        let second = dots.next();
        if dots.next().is_some() || first.hlc == Hlc::ZERO || second.is_some_and(|d| d.hlc == Hlc::ZERO) {
            return None;
        }
        Some(match second {
            None => Tombstone { hlcs: [first.hlc, Hlc::ZERO], nodes: [first.node, 0] },
            // A version vector's entries ascend by node already.
            Some(second) => Tombstone { hlcs: [first.hlc, second.hlc], nodes: [first.node, second.node] },
        })
    }

    /// The tombstone an element of one value at `old` leaves when removed at `by`: the
    /// context `{old, by}` (one entry when one node made both), as
    /// `KeyState::plain_removed(old, by)` holds it, built without a version vector.
    pub fn of_removal(old: Dot, by: Dot) -> Tombstone {
        debug_assert!(old.hlc != Hlc::ZERO && by.hlc != Hlc::ZERO, "a write's dot has a stamp");
        if old.node == by.node {
            return Tombstone { hlcs: [old.hlc.max(by.hlc), Hlc::ZERO], nodes: [old.node, 0] };
        }
        let (low, high) = if old.node < by.node { (old, by) } else { (by, old) };
        Tombstone { hlcs: [low.hlc, high.hlc], nodes: [low.node, high.node] }
    }

    /// The context's dots, by node ascending.
    pub fn dots(self) -> impl Iterator<Item = Dot> {
        let len = if self.hlcs[1] == Hlc::ZERO { 1 } else { 2 };
        (0..len).map(move |i| Dot::new(self.hlcs[i], self.nodes[i]))
    }

    pub fn context(self) -> VersionVector {
        let mut ctx = VersionVector::new();
        self.dots().for_each(|dot| ctx.add(dot));
        ctx
    }

    pub fn to_state(self) -> KeyState {
        KeyState::context_only_of(self.context())
    }

    /// `merkle::digest(name, &self.to_state())`, fed without building the state: the
    /// bytes `KeyState::feed_digest` feeds for a state of a context and nothing else
    /// (the context's length and dots, then no values and no TTL writes).
    pub fn digest(self, name: &[u8]) -> u64 {
        let mut fed = [0u8; 4 + 2 * 10 + 4 + 4];
        let dots = self.dots().count();
        fed[..4].copy_from_slice(&(dots as u32).to_le_bytes());
        for (i, dot) in self.dots().enumerate() {
            let at = 4 + i * 10;
            fed[at..at + 8].copy_from_slice(&dot.hlc.0.to_le_bytes());
            fed[at + 8..at + 10].copy_from_slice(&dot.node.to_le_bytes());
        }
        // The two zero counts (values, TTL writes) are already there.
        merkle::digest_fed(name, &fed[..4 + dots * 10 + 8])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::kv::element::{ElementRef, Stored};
    use crate::engine::kv::value::StrVal;

    fn dot(ms: u64, node: NodeId) -> Dot {
        Dot::new(Hlc::from_parts(ms, 1), node)
    }

    #[test]
    fn a_removals_tombstone_is_the_state_the_general_delete_leaves_in_32_bytes() {
        let cases = [(dot(5, 1), dot(6, 1)), (dot(5, 2), dot(6, 1)), (dot(9, 1), dot(6, 2)), (dot(5, 7), dot(5, 3))];
        for (old, by) in cases {
            let mut general = KeyState::with_value(old, StrVal::Int(1), None);
            general.delete(by);
            let tombstone = Tombstone::of_removal(old, by);
            assert_eq!(tombstone.to_state(), general, "{old:?} removed at {by:?}");
            assert_eq!(Tombstone::of_context(&general.causal_context()), Some(tombstone));
            // Every constructor stores and views it compact, and it reads as the state.
            let stored = Stored::from_state(&general);
            assert_eq!(stored, Stored::Tombstone(tombstone));
            assert_eq!(Stored::from_owned(general.clone()), stored);
            let view = stored.view();
            assert_eq!(view, ElementRef::of_state(&general));
            assert_eq!(Stored::from_view(view), stored);
            assert_eq!(view.to_state(), general);
            assert!(!view.exists());
            assert_eq!((view.read(), view.value_len(), view.plain_dot()), (None, None, None));
            assert_eq!(view.score().to_bits(), general.score().to_bits());
            assert_eq!(view.newest_dot(), general.newest_dot());
            assert_eq!(view.causal_context(), general.causal_context());
            for bound in [general.causal_context(), tombstone.context(), VersionVector::from_dots([dot(9, 1)]).expect("one")] {
                assert_eq!(view.context_within(&bound), bound.dominates(&general.causal_context()), "{bound:?}");
            }
            let mut joined = VersionVector::new();
            view.add_context_to(&mut joined);
            assert_eq!(joined, general.causal_context());
            for probe in [dot(5, 1), dot(7, 2), dot(1, 3), dot(9, 7)] {
                let mut seen = VersionVector::new();
                seen.add(probe);
                assert_eq!(view.has_dot_covered_by(&seen), general.has_dot_covered_by(&seen), "{probe:?}");
                assert_eq!(view.has_context_covered_by(&seen), general.has_context_covered_by(&seen), "{probe:?}");
            }
            for name in [&b"e"[..], &[b'n'; 300][..]] {
                assert_eq!(view.digest(name), merkle::digest(name, &general));
            }
            assert_eq!(stored.into_state(), general);
        }
    }

    #[test]
    fn a_context_of_three_nodes_or_a_zero_stamp_keeps_the_whole_state() {
        let three = VersionVector::from_dots([dot(1, 1), dot(2, 2), dot(3, 3)]).expect("ascending");
        let zero = VersionVector::from_dots([Dot::new(Hlc::ZERO, 1)]).expect("one");
        for ctx in [three, zero, VersionVector::new()] {
            assert_eq!(Tombstone::of_context(&ctx), None, "{ctx:?}");
            let state = KeyState::context_only_of(ctx.clone());
            if !ctx.is_empty() {
                assert!(matches!(Stored::from_state(&state), Stored::Full(_)));
                assert!(matches!(ElementRef::of_state(&state), ElementRef::Full(_)));
            }
        }
    }
}
