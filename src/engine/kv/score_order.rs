//! A sorted set's members in score order: `(score, member)` pairs, ordered by score
//! and then by member bytes, as Redis's skiplist orders them. It is derived data: the
//! members' states (in [`super::elements::Elements`]) are the truth, and the elements
//! keep this index in step with every change to a live member's score.
//!
//! Each pair holds a copy of the member's [`ElementName`] (up to 24 bytes inline, so a
//! pair is 40 bytes). It shared the elements' allocation while names were `Arc<[u8]>`
//! (24-byte pairs); inline names made hashes and sets smaller and their lookups
//! faster at the cost of ~18 bytes a sorted-set member (see `ElementName`).
//!
//! Ranks walk the tree (O(rank)); ranges by score or member start from a tree lookup.
//! Pure data: no I/O.

use std::cmp::Ordering;
use std::collections::BTreeSet;
use std::ops::Bound;

use bytes::Bytes;

use super::elements::ElementName;

/// A score with a total order: never NaN, and `-0` is stored as `0` (equal doubles
/// order as one, as in Redis).
#[derive(Copy, Clone, Debug)]
pub struct Score(f64);

impl Score {
    pub fn new(score: f64) -> Score {
        debug_assert!(!score.is_nan(), "a score is never NaN");
        Score(if score == 0.0 { 0.0 } else { score })
    }

    pub fn get(self) -> f64 {
        self.0
    }
}

impl PartialEq for Score {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Score {}

impl PartialOrd for Score {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Score {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// One end of a score range (ZRANGEBYSCORE's `min`/`max`: `(` makes it exclusive).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct ScoreBound {
    pub value: f64,
    pub exclusive: bool,
}

impl ScoreBound {
    /// Whether `score` is at or above this lower end.
    pub fn admits_from_below(&self, score: f64) -> bool {
        if self.exclusive { score > self.value } else { score >= self.value }
    }

    /// Whether `score` is at or below this upper end.
    pub fn admits_from_above(&self, score: f64) -> bool {
        if self.exclusive { score < self.value } else { score <= self.value }
    }
}

/// One end of a member range (ZRANGEBYLEX's `[a`, `(a`, `-`, `+`).
#[derive(Clone, Debug, PartialEq)]
pub enum LexBound {
    /// `-`: below every member.
    Min,
    /// `+`: above every member.
    Max,
    Inclusive(Bytes),
    Exclusive(Bytes),
}

impl LexBound {
    /// Whether `member` is at or above this lower end.
    pub fn admits_from_below(&self, member: &[u8]) -> bool {
        match self {
            LexBound::Min => true,
            LexBound::Max => false,
            LexBound::Inclusive(b) => member >= b.as_ref(),
            LexBound::Exclusive(b) => member > b.as_ref(),
        }
    }

    /// Whether `member` is at or below this upper end.
    pub fn admits_from_above(&self, member: &[u8]) -> bool {
        match self {
            LexBound::Min => false,
            LexBound::Max => true,
            LexBound::Inclusive(b) => member <= b.as_ref(),
            LexBound::Exclusive(b) => member < b.as_ref(),
        }
    }
}

/// The live members of a sorted set in `(score, member)` order.
#[derive(Clone, Debug, Default)]
pub struct ScoreOrder {
    pairs: BTreeSet<(Score, ElementName)>,
}

impl ScoreOrder {
    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// Note a live member's score change (`None`: not live before / after).
    pub fn update(&mut self, member: &ElementName, old: Option<f64>, new: Option<f64>) {
        if old.map(Score::new) == new.map(Score::new) {
            return;
        }
        if let Some(old) = old {
            let removed = self.pairs.remove(&(Score::new(old), member.clone()));
            debug_assert!(removed, "the index held the member's old score");
        }
        if let Some(new) = new {
            let inserted = self.pairs.insert((Score::new(new), member.clone()));
            debug_assert!(inserted, "a member is indexed once");
        }
    }

    /// Members and scores, lowest first (`rev`: highest first).
    pub fn iter(&self, rev: bool) -> Box<dyn Iterator<Item = (f64, &[u8])> + '_> {
        let pairs = self.pairs.iter().map(|(s, m)| (s.get(), &m[..]));
        if rev { Box::new(pairs.rev()) } else { Box::new(pairs) }
    }

    /// The 0-based rank of `member` at `score`, lowest first. O(rank).
    pub fn rank(&self, member: &[u8], score: f64) -> usize {
        self.pairs.range(..(Score::new(score), ElementName::from(member))).count()
    }

    /// Members whose score is within `min..=max` (each end maybe exclusive), lowest
    /// first (`rev`: highest first).
    pub fn by_score(&self, min: ScoreBound, max: ScoreBound, rev: bool) -> Box<dyn Iterator<Item = (f64, &[u8])> + '_> {
        if min.value > max.value || (min.value == max.value && (min.exclusive || max.exclusive)) {
            return Box::new(std::iter::empty());
        }
        // Start at the lowest member of the lowest admitted score, end at the highest of
        // the highest; exclusive ends are filtered.
        let lower = Bound::Included((Score::new(min.value), ElementName::from(&[][..])));
        let pairs = self
            .pairs
            .range((lower, Bound::Unbounded))
            .map(|(s, m)| (s.get(), &m[..]))
            .skip_while(move |(s, _)| !min.admits_from_below(*s))
            .take_while(move |(s, _)| max.admits_from_above(*s));
        if rev {
            // A reversed walk needs both ends: collect the (usually short) window.
            let window: Vec<(f64, &[u8])> = pairs.collect();
            Box::new(window.into_iter().rev())
        } else {
            Box::new(pairs)
        }
    }

    /// Members within a member range, in order: the first member at or above `min`,
    /// then on while at or below `max` (Redis's walk; meaningful when all scores are
    /// equal, as its documentation requires).
    pub fn by_lex(&self, min: &LexBound, max: &LexBound, rev: bool) -> Box<dyn Iterator<Item = (f64, &[u8])> + '_> {
        let window: Vec<(f64, &[u8])> = self
            .pairs
            .iter()
            .map(|(s, m)| (s.get(), &m[..]))
            .skip_while(|(_, m)| !min.admits_from_below(m))
            .take_while(|(_, m)| max.admits_from_above(m))
            .collect();
        if rev { Box::new(window.into_iter().rev()) } else { Box::new(window.into_iter()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &'static str) -> Bytes {
        Bytes::from_static(s.as_bytes())
    }

    fn name(s: &'static str) -> ElementName {
        ElementName::from(s.as_bytes())
    }

    fn order(items: &[(f64, &'static str)]) -> ScoreOrder {
        let mut order = ScoreOrder::default();
        for (score, member) in items {
            order.update(&name(member), None, Some(*score));
        }
        order
    }

    fn members<'a>(it: impl Iterator<Item = (f64, &'a [u8])>) -> Vec<&'a [u8]> {
        it.map(|(_, m)| m).collect()
    }

    #[test]
    fn orders_by_score_then_member_and_follows_updates() {
        let mut o = order(&[(2.0, "b"), (1.0, "z"), (2.0, "a"), (-0.0, "m")]);
        assert_eq!(members(o.iter(false)), [b"m" as &[u8], b"z", b"a", b"b"]);
        assert_eq!(o.rank(b"a", 2.0), 2);
        o.update(&name("z"), Some(1.0), Some(3.0));
        o.update(&name("m"), Some(0.0), None);
        assert_eq!(members(o.iter(true)), [b"z" as &[u8], b"b", b"a"]);
        assert_eq!(o.len(), 3);
    }

    #[test]
    fn score_ranges_honour_exclusive_ends_and_infinities() {
        let o = order(&[(1.0, "a"), (2.0, "b"), (2.0, "c"), (3.0, "d"), (f64::INFINITY, "e")]);
        let inc = |value| ScoreBound { value, exclusive: false };
        let exc = |value| ScoreBound { value, exclusive: true };
        assert_eq!(members(o.by_score(inc(2.0), inc(3.0), false)), [b"b" as &[u8], b"c", b"d"]);
        assert_eq!(members(o.by_score(exc(1.0), exc(3.0), true)), [b"c" as &[u8], b"b"]);
        assert_eq!(members(o.by_score(inc(f64::NEG_INFINITY), inc(f64::INFINITY), false)).len(), 5);
        assert_eq!(members(o.by_score(exc(2.0), exc(2.0), false)).len(), 0);
        assert_eq!(members(o.by_score(inc(3.0), inc(2.0), false)).len(), 0);
    }

    #[test]
    fn lex_ranges_walk_like_redis() {
        let o = order(&[(0.0, "a"), (0.0, "b"), (0.0, "c"), (0.0, "d")]);
        let got = members(o.by_lex(&LexBound::Exclusive(b("a")), &LexBound::Inclusive(b("c")), false));
        assert_eq!(got, [b"b" as &[u8], b"c"]);
        assert_eq!(members(o.by_lex(&LexBound::Min, &LexBound::Max, true)).len(), 4);
        assert_eq!(members(o.by_lex(&LexBound::Max, &LexBound::Min, false)).len(), 0);
    }
}
