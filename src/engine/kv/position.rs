//! A list element's position: a dense, totally ordered identifier (Logoot-style) whose
//! bytes sort as the list does, so a list is a map from positions to elements and its
//! order is the byte order of their names (DESIGN §5, row List).
//!
//! A position is a path of triples `(digit, hlc, node)` compared lexicographically,
//! a prefix before its extensions. Each triple is written as fixed-width big-endian
//! bytes (8 + 8 + 2), so comparing the bytes compares the paths. The last triple of a
//! path carries the dot of the write that made it, so two positions made by different
//! writes never collide, and positions made by one write (a multi-element push) differ
//! in their digits.
//!
//! Between any two positions there is always room ([`between`]): when two neighbours'
//! digits leave no gap at one level, the new position copies the lower one's triple (or
//! takes a filler triple) and goes one level down, where everything above the lower
//! neighbour is free. No final digit is ever 0, so there is room after a filler.
//!
//! Why this rather than an RGA: positions need no tombstones to stay ordered (a removed
//! element's position is simply gone; a concurrent insert next to it still sorts in the
//! same place everywhere), so the list reuses the element machinery of hashes and sets
//! unchanged (add-wins elements, element-sized deltas, tombstone GC) and its order index
//! is a sorted set of names. Concurrent pushes at one end are ordered by their dots; a
//! push of several elements keeps them together ([`below`]: the first at an anchor, the
//! rest one level under it), so two regions' multi-element pushes never interleave, at
//! 18 more bytes for each element after a push's first. Positions can grow when many
//! inserts hit one gap; single-element pushes at either end stay one triple (RPUSH takes
//! the digit after the last one, LPUSH the one before the first).
//!
//! Pure data: no I/O, no clock.

use smallvec::SmallVec;

use crate::crdt::Dot;

/// Bytes of one `(digit, hlc, node)` triple.
pub const TRIPLE_BYTES: usize = 8 + 8 + 2;
/// The digit of the first element of an empty list: the middle, room both ways.
pub const FIRST_DIGIT: u64 = 1 << 63;
/// Levels a position may have; a deeper one is refused when decoded (a bound on what a
/// peer or storage can make us hold). Reaching it needs ~64 inserts per level into
/// one gap, 64 levels deep.
pub const LEVELS_MAX: usize = 4096;

/// A position held inline up to two levels (a push's anchor and the positions below
/// it): a push makes its names without a heap allocation.
pub type Position = SmallVec<[u8; 2 * TRIPLE_BYTES]>;

/// Where the new digit goes within a gap at its level.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Just above the lower neighbour (RPUSH: the list grows at its tail digit by digit).
    AfterLow,
    /// Just below the upper neighbour (LPUSH).
    BeforeHigh,
    /// The middle of the gap (LINSERT).
    Middle,
}

/// One triple of a path.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Triple {
    digit: u64,
    hlc: u64,
    node: u16,
}

fn triple_at(path: &[u8], level: usize) -> Option<Triple> {
    let bytes = path.get(level * TRIPLE_BYTES..(level + 1) * TRIPLE_BYTES)?;
    let u64_at = |i: usize| u64::from_be_bytes(bytes[i..i + 8].try_into().expect("8 bytes"));
    Some(Triple { digit: u64_at(0), hlc: u64_at(8), node: u16::from_be_bytes([bytes[16], bytes[17]]) })
}

fn push_triple(out: &mut Position, t: Triple) {
    // One copy of the whole triple (a small vector's append is not free per call).
    let mut bytes = [0u8; TRIPLE_BYTES];
    bytes[..8].copy_from_slice(&t.digit.to_be_bytes());
    bytes[8..16].copy_from_slice(&t.hlc.to_be_bytes());
    bytes[16..].copy_from_slice(&t.node.to_be_bytes());
    out.extend_from_slice(&bytes);
}

fn levels(path: &[u8]) -> usize {
    path.len() / TRIPLE_BYTES
}

/// The dot of the write that made the position `name`: its last triple's `(hlc,
/// node)`; `None` for a name shorter than a triple (no position).
pub fn maker(name: &[u8]) -> Option<Dot> {
    let last = triple_at(&name[name.len().checked_sub(TRIPLE_BYTES)?..], 0)?;
    Some(Dot::new(crate::crdt::Hlc(last.hlc), last.node))
}

/// A position's digits, level by level, without the dots (the planted bug
/// `list-order-by-arrival` orders by them alone).
pub fn digits(path: &[u8]) -> Vec<u64> {
    (0..levels(path)).filter_map(|level| triple_at(path, level)).map(|t| t.digit).collect()
}

/// Whether `name` is a well-formed position (codec and merge check names from peers).
pub fn is_valid(name: &[u8]) -> bool {
    !name.is_empty() && name.len().is_multiple_of(TRIPLE_BYTES) && levels(name) <= LEVELS_MAX
}

/// The `k`-th position right after `anchor` and before anything that follows it: a
/// level below `anchor`, so every such position sorts between `anchor` and the next
/// position that is not an extension of it. A push of several elements places the first
/// at an anchor and the rest below it, so that a concurrent push elsewhere never lands
/// between them. `k` is at least 1 (no final digit is 0).
pub fn below(anchor: &[u8], k: u64, dot: Dot) -> Vec<u8> {
    below_inline(anchor, k, dot).to_vec()
}

/// [`below`], inline while two levels deep.
pub fn below_inline(anchor: &[u8], k: u64, dot: Dot) -> Position {
    debug_assert!(k >= 1 && is_valid(anchor));
    let mut out = Position::with_capacity(anchor.len() + TRIPLE_BYTES);
    out.extend_from_slice(anchor);
    push_triple(&mut out, Triple { digit: k, hlc: dot.hlc.0, node: dot.node });
    out
}

/// A new position strictly between `low` and `high` (`None`: the list's start or end),
/// made by the write at `dot`. The caller guarantees `low < high`.
pub fn between(low: Option<&[u8]>, high: Option<&[u8]>, dot: Dot, placement: Placement) -> Vec<u8> {
    between_inline(low, high, dot, placement).to_vec()
}

/// [`between`], inline while two levels deep (a push's, always one level).
pub fn between_inline(low: Option<&[u8]>, high: Option<&[u8]>, dot: Dot, placement: Placement) -> Position {
    debug_assert!(matches!((low, high), (Some(l), Some(h)) if l < h) || low.is_none() || high.is_none());
    let mut out = Position::new();
    let own = |digit: u64| Triple { digit, hlc: dot.hlc.0, node: dot.node };
    if low.is_none() && high.is_none() {
        push_triple(&mut out, own(FIRST_DIGIT));
        return out;
    }
    let low = low.unwrap_or(&[]);
    // While the result equals a neighbour's prefix, that neighbour bounds this level.
    let mut equal_low = true;
    let mut equal_high = high.is_some();
    for level in 0.. {
        assert!(level <= LEVELS_MAX, "a position between two others is found within LEVELS_MAX levels");
        let low_triple = if equal_low { triple_at(low, level) } else { None };
        let high_triple = if equal_high { high.and_then(|h| triple_at(h, level)) } else { None };
        debug_assert!(!equal_high || high_triple.is_some(), "the result never equals the upper neighbour");
        let lo = low_triple.map_or(0, |t| t.digit);
        let hi = high_triple.map_or(u64::MAX, |t| t.digit);
        if hi > lo && hi - lo > 1 {
            let digit = match placement {
                Placement::AfterLow => lo + 1,
                Placement::BeforeHigh => hi - 1,
                Placement::Middle => lo + (hi - lo) / 2,
            };
            push_triple(&mut out, own(digit));
            return out;
        }
        // No room at this level: take a triple that keeps us between, and go down.
        let step = match (low_triple, high_triple) {
            (Some(l), _) => l,
            (None, Some(h)) => {
                let filler = own(0);
                if filler < h { filler } else { h }
            }
            (None, None) => unreachable!("an unbounded level always has room"),
        };
        push_triple(&mut out, step);
        equal_low = low_triple == Some(step);
        equal_high = high_triple == Some(step);
    }
    unreachable!("the loop returns")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crdt::Hlc;
    use rand::{Rng, SeedableRng};

    fn dot(hlc: u64, node: u16) -> Dot {
        Dot::new(Hlc(hlc), node)
    }

    fn check_between(low: Option<&[u8]>, high: Option<&[u8]>, d: Dot, p: Placement) -> Vec<u8> {
        let id = between(low, high, d, p);
        assert!(is_valid(&id));
        if let Some(low) = low {
            assert!(low < id.as_slice(), "{low:?} < {id:?}");
        }
        if let Some(high) = high {
            assert!(id.as_slice() < high, "{id:?} < {high:?}");
        }
        assert_ne!(triple_at(&id, levels(&id) - 1).map(|t| t.digit), Some(0), "no final digit is 0");
        id
    }

    #[test]
    fn rpush_a_hundred_thousand_times_stays_one_triple() {
        let mut last: Option<Vec<u8>> = None;
        for i in 0..100_000u64 {
            let id = check_between(last.as_deref(), None, dot(i + 1, 1), Placement::AfterLow);
            assert_eq!(id.len(), TRIPLE_BYTES);
            last = Some(id);
        }
        let mut first: Option<Vec<u8>> = None;
        for i in 0..100_000u64 {
            let id = check_between(None, first.as_deref(), dot(i + 1, 1), Placement::BeforeHigh);
            assert_eq!(id.len(), TRIPLE_BYTES);
            first = Some(id);
        }
    }

    #[test]
    fn concurrent_pushes_at_one_end_order_by_dot() {
        let head = between(None, None, dot(1, 1), Placement::AfterLow);
        let a = between(Some(&head), None, dot(5, 2), Placement::AfterLow);
        let b = between(Some(&head), None, dot(5, 3), Placement::AfterLow);
        let c = between(Some(&head), None, dot(4, 9), Placement::AfterLow);
        assert!(head < c && c < a && a < b);
        let x = between(None, Some(&head), dot(7, 1), Placement::BeforeHigh);
        let y = between(None, Some(&head), dot(6, 2), Placement::BeforeHigh);
        assert!(y < x && x < head);
    }

    #[test]
    fn between_any_two_positions_yields_one_strictly_between() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for round in 0..50 {
            let mut list: Vec<Vec<u8>> = Vec::new();
            for step in 0..400u64 {
                let i = rng.random_range(0..=list.len());
                let low = i.checked_sub(1).map(|j| list[j].clone());
                let high = list.get(i).cloned();
                let placement = [Placement::AfterLow, Placement::BeforeHigh, Placement::Middle][rng.random_range(0..3)];
                // A few nodes, clocks that collide: the worst case for equal digits.
                let d = dot(rng.random_range(0..4) + step / 8, rng.random_range(1..4));
                let id = check_between(low.as_deref(), high.as_deref(), d, placement);
                list.insert(i, id);
            }
            assert!(list.windows(2).all(|w| w[0] < w[1]), "round {round}: the list stays sorted");
        }
    }

    #[test]
    fn positions_below_an_anchor_stay_together_between_its_neighbours() {
        let head = between(None, None, dot(1, 1), Placement::AfterLow);
        // Two concurrent multi-element pushes at the tail: each stays in one block.
        let a = between(Some(&head), None, dot(5, 2), Placement::AfterLow);
        let b = between(Some(&head), None, dot(5, 3), Placement::AfterLow);
        let a_rest: Vec<Vec<u8>> = (1..4).map(|k| below(&a, k, dot(5, 2))).collect();
        let b_rest: Vec<Vec<u8>> = (1..4).map(|k| below(&b, k, dot(5, 3))).collect();
        let mut order = vec![head.clone(), a.clone()];
        order.extend(a_rest.iter().cloned());
        order.push(b.clone());
        order.extend(b_rest.iter().cloned());
        assert!(order.windows(2).all(|w| w[0] < w[1]), "head, a's block, b's block");
        // A push after the block's last element stays one level deep.
        let next = check_between(a_rest.last().map(Vec::as_slice), Some(&b), dot(6, 2), Placement::AfterLow);
        assert!(next.len() <= 2 * TRIPLE_BYTES);
        let tail = check_between(b_rest.last().map(Vec::as_slice), None, dot(7, 2), Placement::AfterLow);
        assert_eq!(tail.len(), TRIPLE_BYTES);
    }

    #[test]
    fn adjacent_digits_descend_and_fillers_leave_room() {
        // Two positions with adjacent digits: the new one goes one level down.
        let mut low = Position::new();
        push_triple(&mut low, Triple { digit: 10, hlc: 1, node: 1 });
        let mut high = Position::new();
        push_triple(&mut high, Triple { digit: 11, hlc: 1, node: 1 });
        let id = check_between(Some(&low), Some(&high), dot(2, 2), Placement::Middle);
        assert_eq!(levels(&id), 2);
        // Below a position whose first digit is 1 and above the start: a filler.
        let mut one = Position::new();
        push_triple(&mut one, Triple { digit: 1, hlc: 1, node: 1 });
        let id = check_between(None, Some(&one), dot(2, 2), Placement::BeforeHigh);
        assert_eq!(triple_at(&id, 0).map(|t| t.digit), Some(0));
        check_between(None, Some(&id), dot(3, 2), Placement::BeforeHigh);
    }
}
