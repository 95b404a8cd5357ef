//! FT.SEARCH's SLOP and INORDER: whether an intersection's matched terms sit close
//! enough together (and in the query's order) in a document, decided as RediSearch
//! decides it.
//!
//! Owns which children of an intersection have positions (text terms, phrases, unions
//! of them, and, as RediSearch's result types make it, a union of several tags: it has
//! a position list, an empty one) and the two walks over those positions. Reads only
//! the positions `reindex` stored; never data or a clock.

use super::{Compiled, Doc, Index, Proximity};

/// The end of a position list, as RediSearch marks it (`RS_OFFSETVECTOR_EOF`).
const END: u32 = u32::MAX;
/// Most rounds one check takes (each advances a list, so the positions bound it too).
const ROUNDS_MAX: usize = 1_000_000;

impl Index {
    /// Whether doc `id`, which passes every part of an intersection, passes its SLOP and
    /// INORDER too.
    pub(super) fn near(&self, parts: &[Compiled], near: Proximity, id: u32) -> bool {
        let Some(doc) = self.docs.get(id as usize).and_then(Option::as_ref) else { return false };
        let lists: Vec<Vec<u32>> = parts.iter().filter_map(|p| self.offsets(doc, p, id)).collect();
        if parts.len() <= 1 || lists.is_empty() {
            return true;
        }
        let slop = i64::from(near.slop);
        if near.in_order { in_order(&lists, slop) } else { unordered(&lists, slop) }
    }

    /// The positions of a matched node in doc `id`, sorted; `None` for a node whose
    /// result has no position list (a single tag, a range, `*`, a NOT, a vector clause,
    /// an optional clause the doc does not match, a union or intersection of only
    /// those).
    fn offsets(&self, doc: &Doc, node: &Compiled, id: u32) -> Option<Vec<u32>> {
        let mut out = Vec::new();
        match node {
            Compiled::Text(..) | Compiled::Phrase(..) => self.positions_of(doc, node, id, &mut out),
            Compiled::Tag(_, values) if values.len() > 1 => {}
            Compiled::Optional(inner) if self.terms(inner, id, &mut Vec::new()) => return self.offsets(doc, inner, id),
            Compiled::And(parts, _) | Compiled::Or(parts) => {
                let lists: Vec<Vec<u32>> =
                    parts.iter().filter(|p| self.terms(p, id, &mut Vec::new())).filter_map(|p| self.offsets(doc, p, id)).collect();
                if lists.is_empty() {
                    return None;
                }
                out = lists.concat();
            }
            _ => return None,
        }
        out.sort_unstable();
        Some(out)
    }
}

/// The next position of list `k` after index `at[k]` (or END), advancing it.
fn next(lists: &[Vec<u32>], at: &mut [usize], k: usize) -> u32 {
    let value = lists[k].get(at[k]).copied().unwrap_or(END);
    at[k] = at[k].saturating_add(1);
    value
}

/// Some position of every list, in list order, with at most `slop` positions between
/// each and the next in all (RediSearch's in-order walk: each list moves on until it
/// is not before the previous one's).
fn in_order(lists: &[Vec<u32>], slop: i64) -> bool {
    let mut at = vec![0usize; lists.len()];
    let mut positions = vec![0u32; lists.len()];
    for _ in 0..ROUNDS_MAX {
        let mut span = 0i64;
        for k in 0..lists.len() {
            let mut pos = if k == 0 { next(lists, &mut at, 0) } else { positions[k] };
            let last = if k == 0 { 0 } else { positions[k - 1] };
            while pos != END && pos < last {
                pos = next(lists, &mut at, k);
            }
            if pos == END {
                return false;
            }
            positions[k] = pos;
            if k > 0 {
                span += i64::from(pos) - i64::from(last) - 1;
                if span > slop {
                    break;
                }
            }
        }
        if span <= slop {
            return true;
        }
    }
    false
}

/// Some position of every list, in any order, within a window that leaves at most
/// `slop` other positions (RediSearch's unordered walk: the lowest list moves on).
/// Its arithmetic is RediSearch's too, C's `int` conversions of an exhausted list's
/// end mark included: a list with no positions (a union of tags) reads as END first.
fn unordered(lists: &[Vec<u32>], slop: i64) -> bool {
    let n = lists.len();
    let mut at = vec![0usize; n];
    let mut positions: Vec<u32> = (0..n).map(|k| next(lists, &mut at, k)).collect();
    // C compares an `int` holding the first value with the `uint32_t`s that follow.
    let (mut max_at, mut max) = (0usize, positions[0]);
    for (k, &p) in positions.iter().enumerate().skip(1) {
        if p >= max {
            (max_at, max) = (k, p);
        }
    }
    let _ = max_at;
    for _ in 0..ROUNDS_MAX {
        let (mut min_at, mut min) = (0usize, positions[0]);
        for (k, &p) in positions.iter().enumerate().skip(1) {
            if p < min {
                (min_at, min) = (k, p);
            }
        }
        if min != max {
            let span = i64::from(max as i32) - i64::from(min as i32) - (n as i64 - 1);
            if span <= slop {
                return true;
            }
        }
        positions[min_at] = next(lists, &mut at, min_at);
        if positions[min_at] == END {
            return false;
        }
        if positions[min_at] > max {
            max = positions[min_at];
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::{in_order, unordered};

    #[test]
    fn slop_counts_the_positions_between_the_terms() {
        // "world of hellos and a big wide world": world 1 and 5, hellos 2, big 3, wide 4.
        let (world, hello, big) = (vec![1, 5], vec![2], vec![3]);
        assert!(unordered(&[hello.clone(), world.clone()], 0));
        assert!(!unordered(&[world.clone(), big.clone()], 0));
        assert!(unordered(&[world.clone(), big.clone()], 1));
        assert!(in_order(&[hello.clone(), big.clone()], 0));
        assert!(!in_order(&[hello.clone(), world.clone()], 0), "hello is at 2, world after it only at 5");
        assert!(in_order(&[world.clone(), hello.clone()], 0));
        assert!(!in_order(&[big, hello.clone()], i64::from(i32::MAX)), "big never comes before hello");
        assert!(!unordered(&[hello], 5), "a single list never spans two positions");
    }
}
