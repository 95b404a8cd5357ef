//! What the sorted set commands compute from members and scores, without touching a
//! keyspace: which members a range names (ZRANGE in all its forms, ZCOUNT, the
//! ZREMRANGEBY commands), the algebra of ZUNION/ZINTER/ZDIFF with weights and
//! aggregates, and the replies' shapes. The engine (`zsets`) and the shell's fan-out
//! (several shards) both call it.
//!
//! Pure functions: no I/O, no state.

use bytes::Bytes;

use super::score_order::ScoreOrder;
use crate::command::zset::{Aggregate, ZAlgebra, ZRange, ZRangeQuery};
use crate::protocol::{EncodedBulksBuilder, Frame};

/// A member and its score.
pub type Scored = (Bytes, f64);

/// The 0-based rank window `[start, end]` of `len` members that Redis's rank range
/// `start stop` names (negatives count from the end), or `None` if it is empty.
pub fn rank_window(start: i64, stop: i64, len: usize) -> Option<(usize, usize)> {
    let len = len as i64;
    let mut start = if start < 0 { start.saturating_add(len) } else { start };
    let mut end = if stop < 0 { stop.saturating_add(len) } else { stop };
    if start < 0 {
        start = 0;
    }
    if start > end || start >= len {
        return None;
    }
    if end >= len {
        end = len - 1;
    }
    Some((start as usize, end as usize))
}

/// The members a range query names, in reply order (`rev`: highest first), with
/// `LIMIT` applied: a negative offset names nothing, a negative count everything left.
pub fn select(order: &ScoreOrder, range: &ZRange, rev: bool, limit: Option<(i64, i64)>) -> Vec<Scored> {
    selected(order, range, rev, limit).map(|(score, member)| (Bytes::copy_from_slice(member), score)).collect()
}

/// [`select`] without copying: the members as they lie in `order`.
fn selected<'a>(
    order: &'a ScoreOrder,
    range: &ZRange,
    rev: bool,
    limit: Option<(i64, i64)>,
) -> Box<dyn Iterator<Item = (f64, &'a [u8])> + 'a> {
    let (offset, count) = limit.unwrap_or((0, -1));
    if offset < 0 {
        return Box::new(std::iter::empty());
    }
    let take = if count < 0 { usize::MAX } else { count as usize };
    match range {
        ZRange::Rank(start, stop) => match rank_window(*start, *stop, order.len()) {
            None => Box::new(std::iter::empty()),
            Some((first, last)) => Box::new(order.iter(rev).skip(first).take(last - first + 1)),
        },
        ZRange::Score(min, max) => Box::new(order.by_score(*min, *max, rev).skip(offset as usize).take(take)),
        ZRange::Lex(bounds) => Box::new(order.by_lex(&bounds.0, &bounds.1, rev).skip(offset as usize).take(take)),
    }
}

/// How many members a range names (ZCOUNT, ZLEXCOUNT).
pub fn count(order: &ScoreOrder, range: &ZRange) -> usize {
    match range {
        ZRange::Rank(start, stop) => rank_window(*start, *stop, order.len()).map_or(0, |(a, b)| b - a + 1),
        ZRange::Score(min, max) => order.by_score(*min, *max, false).count(),
        ZRange::Lex(bounds) => order.by_lex(&bounds.0, &bounds.1, false).count(),
    }
}

/// Members with their scores, as a range or pop replies: flat in RESP2, pairs in
/// RESP3 (`with_scores`), or members alone.
pub fn members_reply(members: Vec<Scored>, with_scores: bool) -> Frame {
    if with_scores {
        Frame::Pairs(members.into_iter().map(|(m, s)| (Frame::Bulk(m), Frame::Double(s))).collect())
    } else {
        Frame::Array(members.into_iter().map(|(m, _)| Frame::Bulk(m)).collect())
    }
}

/// The reply to a range query.
pub fn range_reply(order: Option<&ScoreOrder>, query: &ZRangeQuery) -> Frame {
    if query.with_scores {
        let members = order.map(|o| select(o, &query.range, query.rev, query.limit)).unwrap_or_default();
        return members_reply(members, true);
    }
    // Members alone are an array of bulk strings in either protocol: written straight
    // into one encoded reply, with no copy or `Frame` per member.
    let Some(order) = order else { return Frame::Array(Vec::new()) };
    let estimate = match query.range {
        ZRange::Rank(start, stop) => rank_window(start, stop, order.len()).map_or(0, |(a, b)| b - a + 1),
        _ => RANGE_MEMBERS_ESTIMATE,
    };
    let mut reply = EncodedBulksBuilder::with_capacity(estimate, estimate * RANGE_MEMBER_BYTES_ESTIMATE);
    selected(order, &query.range, query.rev, query.limit).for_each(|(_, member)| reply.push(member));
    Frame::Bulks(reply.finish())
}

/// What a reply to a score or lex range is assumed to hold, and the bytes a member is
/// assumed to take, to size the reply's one allocation (it grows past them).
const RANGE_MEMBERS_ESTIMATE: usize = 16;
const RANGE_MEMBER_BYTES_ESTIMATE: usize = 16;

/// Sort members by score, then by member bytes (a sorted set's order).
pub fn sort_by_score(members: &mut [Scored]) {
    members.sort_by(|(ma, sa), (mb, sb)| sa.total_cmp(sb).then_with(|| ma.cmp(mb)));
}

/// `a + b` as Redis's aggregate computes it: a NaN (`inf + -inf`) becomes 0.
fn add(a: f64, b: f64) -> f64 {
    let sum = a + b;
    if sum.is_nan() { 0.0 } else { sum }
}

fn aggregate_into(target: &mut f64, value: f64, aggregate: Aggregate) {
    *target = match aggregate {
        Aggregate::Sum => add(*target, value),
        Aggregate::Min => target.min(value),
        Aggregate::Max => target.max(value),
    };
}

/// ZUNION/ZINTER/ZDIFF of member lists (`None`: a missing key), each input's scores
/// times its weight (a NaN product, `0 * inf`, is 0), in score order. ZINTERCARD's
/// `limit` (not 0) stops an intersection at that many members.
pub fn combine(op: ZAlgebra, lists: Vec<Option<Vec<Scored>>>, weights: Option<&[f64]>, aggregate: Aggregate, limit: u64) -> Vec<Scored> {
    let weight = |i: usize| weights.map_or(1.0, |w| w[i]);
    let weighted = |score: f64, w: f64| {
        let product = score * w;
        if product.is_nan() { 0.0 } else { product }
    };
    let mut out: Vec<Scored> = match op {
        ZAlgebra::Union => {
            let mut totals: indexmap::IndexMap<Bytes, f64, foldhash::fast::FixedState> = indexmap::IndexMap::default();
            for (i, list) in lists.into_iter().enumerate() {
                for (member, score) in list.into_iter().flatten() {
                    let value = weighted(score, weight(i));
                    match totals.get_mut(&member) {
                        Some(total) => aggregate_into(total, value, aggregate),
                        None => {
                            totals.insert(member, value);
                        }
                    }
                }
            }
            totals.into_iter().collect()
        }
        ZAlgebra::Inter => {
            if lists.iter().any(|l| l.as_ref().is_none_or(|l| l.is_empty())) {
                return Vec::new();
            }
            let lists: Vec<(usize, Vec<Scored>)> = lists.into_iter().map(|l| l.unwrap_or_default()).enumerate().collect();
            // Walk the smallest input, as Redis does; look the others up.
            let smallest = lists.iter().enumerate().min_by_key(|(_, (_, l))| l.len()).map_or(0, |(i, _)| i);
            let lookups: Vec<(usize, hashbrown::HashMap<&Bytes, f64>)> =
                lists.iter().map(|(i, l)| (*i, l.iter().map(|(m, s)| (m, *s)).collect())).collect();
            let limit = if limit == 0 { usize::MAX } else { limit as usize };
            let mut out = Vec::new();
            for (member, _) in &lists[smallest].1 {
                if out.len() >= limit {
                    break;
                }
                let mut total: Option<f64> = None;
                let mut everywhere = true;
                for (i, lookup) in &lookups {
                    let Some(score) = lookup.get(member) else {
                        everywhere = false;
                        break;
                    };
                    let value = weighted(*score, weight(*i));
                    match total.as_mut() {
                        Some(total) => aggregate_into(total, value, aggregate),
                        None => total = Some(value),
                    }
                }
                if everywhere && let Some(total) = total {
                    out.push((member.clone(), total));
                }
            }
            out
        }
        ZAlgebra::Diff => {
            let mut lists = lists.into_iter();
            let Some(Some(first)) = lists.next() else {
                return Vec::new();
            };
            let others: hashbrown::HashSet<Bytes> = lists.flatten().flatten().map(|(m, _)| m).collect();
            first.into_iter().filter(|(m, _)| !others.contains(m)).collect()
        }
    };
    sort_by_score(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    fn list(items: &[(&str, f64)]) -> Option<Vec<Scored>> {
        Some(items.iter().map(|(m, s)| (b(m), *s)).collect())
    }

    #[test]
    fn rank_windows_follow_redis() {
        assert_eq!(rank_window(0, -1, 3), Some((0, 2)));
        assert_eq!(rank_window(-2, -1, 3), Some((1, 2)));
        assert_eq!(rank_window(-100, 100, 3), Some((0, 2)));
        assert_eq!(rank_window(2, 1, 3), None);
        assert_eq!(rank_window(3, 5, 3), None);
        assert_eq!(rank_window(0, -1, 0), None);
        assert_eq!(rank_window(i64::MIN, i64::MAX, 3), Some((0, 2)));
    }

    #[test]
    fn union_weights_and_aggregates() {
        let lists = vec![list(&[("a", 1.0), ("b", 2.0)]), list(&[("b", 3.0), ("c", 4.0)]), None];
        let sum = combine(ZAlgebra::Union, lists.clone(), Some(&[1.0, 2.0, 1.0]), Aggregate::Sum, 0);
        assert_eq!(sum, vec![(b("a"), 1.0), (b("b"), 8.0), (b("c"), 8.0)]);
        let max = combine(ZAlgebra::Union, lists, None, Aggregate::Max, 0);
        assert_eq!(max, vec![(b("a"), 1.0), (b("b"), 3.0), (b("c"), 4.0)]);
    }

    #[test]
    fn inter_and_diff_and_nan_products() {
        let lists = vec![list(&[("a", f64::INFINITY), ("b", 2.0)]), list(&[("a", 1.0), ("b", 3.0)])];
        let inter = combine(ZAlgebra::Inter, lists.clone(), Some(&[0.0, 1.0]), Aggregate::Sum, 0);
        // 0 * inf is NaN, taken as 0.
        assert_eq!(inter, vec![(b("a"), 1.0), (b("b"), 3.0)]);
        assert_eq!(combine(ZAlgebra::Inter, lists.clone(), None, Aggregate::Sum, 1).len(), 1);
        let diff = combine(ZAlgebra::Diff, vec![list(&[("a", 1.0), ("b", 2.0)]), list(&[("a", 5.0)])], None, Aggregate::Sum, 0);
        assert_eq!(diff, vec![(b("b"), 2.0)]);
        assert!(combine(ZAlgebra::Inter, vec![list(&[("a", 1.0)]), None], None, Aggregate::Sum, 0).is_empty());
    }
}
