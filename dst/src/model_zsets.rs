//! The sequential model of sorted sets (ZADD family) on one node: a sorted set is its
//! members with their scores, kept in score order (ties by member bytes), written
//! without the engine's CRDT machinery (no register, no counter: a score is a number).
//!
//! Covers what the workload sends: ZADD with NX/XX/GT/LT/CH/INCR, ZINCRBY, ZREM,
//! ZSCORE, ZMSCORE, ZCARD, ZCOUNT, ZRANK, ZRANGE by rank and by score (REV, LIMIT,
//! WITHSCORES, and the legacy forms), ZPOPMIN and ZPOPMAX. Never reads the engine's
//! state.

use bytes::Bytes;
use meridian::command::zset::{ZRange, ZRangeQuery, ZsetCommand};
use meridian::protocol::Frame;

use crate::model::{Model, ModelEntry};

const NAN_SCORE: &str = "ERR resulting score is not a number (NaN)";

/// `-0` is `0` (Redis stores and prints them alike).
fn normalize(score: f64) -> f64 {
    if score == 0.0 { 0.0 } else { score }
}

/// Put members in a sorted set's order: by score, then by member bytes.
fn sort(members: &mut [(Bytes, f64)]) {
    members.sort_by(|(ma, sa), (mb, sb)| sa.total_cmp(sb).then_with(|| ma.cmp(mb)));
}

fn scored_reply(members: Vec<(Bytes, f64)>, with_scores: bool) -> Frame {
    if with_scores {
        Frame::Pairs(members.into_iter().map(|(m, s)| (Frame::Bulk(m), Frame::Double(s))).collect())
    } else {
        Frame::Array(members.into_iter().map(|(m, _)| Frame::Bulk(m)).collect())
    }
}

/// Redis's rank window: `Some((first, last))` inclusive, or `None` when empty.
fn rank_window(start: i64, stop: i64, len: usize) -> Option<(usize, usize)> {
    let len = len as i64;
    let start = if start < 0 { (start + len).max(0) } else { start };
    let stop = if stop < 0 { stop + len } else { stop };
    if start > stop || start >= len {
        return None;
    }
    Some((start as usize, stop.min(len - 1) as usize))
}

/// The members a range query names, in reply order.
fn select(members: &[(Bytes, f64)], query: &ZRangeQuery) -> Result<Vec<(Bytes, f64)>, Frame> {
    let mut ordered = members.to_vec();
    if query.rev {
        ordered.reverse();
    }
    match &query.range {
        ZRange::Rank(start, stop) => Ok(match rank_window(*start, *stop, ordered.len()) {
            None => Vec::new(),
            Some((first, last)) => ordered[first..=last].to_vec(),
        }),
        ZRange::Score(min, max) => {
            let (offset, count) = query.limit.unwrap_or((0, -1));
            if offset < 0 {
                return Ok(Vec::new());
            }
            let take = if count < 0 { usize::MAX } else { count as usize };
            let within = ordered.into_iter().filter(|(_, s)| min.admits_from_below(*s) && max.admits_from_above(*s));
            Ok(within.skip(offset as usize).take(take).collect())
        }
        ZRange::Lex(..) => Err(Frame::static_error("ERR the model does not cover member ranges")),
    }
}

impl Model {
    /// A live sorted set's members in order (empty for a missing key); the caller
    /// checked the type.
    fn scored(&mut self, key: &Bytes, now_ms: u64) -> Vec<(Bytes, f64)> {
        self.live(key, now_ms).and_then(|e| e.zset.clone()).unwrap_or_default()
    }

    /// Store a sorted set's members (sorted here), keeping its TTL; an empty one is no key.
    fn put_scored(&mut self, key: &Bytes, mut members: Vec<(Bytes, f64)>, now_ms: u64) {
        let expire_at_ms = self.live(key, now_ms).and_then(|e| e.expire_at_ms);
        if members.is_empty() {
            self.keys.remove(key);
        } else {
            sort(&mut members);
            self.keys.insert(key.clone(), ModelEntry { expire_at_ms, zset: Some(members), ..ModelEntry::default() });
        }
    }

    /// The sorted set commands, on a live sorted set or a missing key (the caller
    /// answered WRONGTYPE for other types).
    pub(crate) fn apply_zset(&mut self, cmd: &ZsetCommand, now_ms: u64) -> Frame {
        let score_of = |members: &[(Bytes, f64)], m: &Bytes| members.iter().find(|(n, _)| n == m).map(|(_, s)| *s);
        match cmd {
            ZsetCommand::Add { key, flags, pairs } => {
                let mut members = self.scored(key, now_ms);
                let (mut added, mut changed) = (0, 0);
                let mut incr_result = None;
                let mut wrote = false;
                for (score, member) in pairs {
                    let new = match score_of(&members, member) {
                        Some(_) if flags.nx => continue,
                        None if flags.xx => continue,
                        None => {
                            added += 1;
                            members.push((member.clone(), normalize(*score)));
                            normalize(*score)
                        }
                        Some(current) => {
                            let new = if flags.incr { current + score } else { *score };
                            if new.is_nan() {
                                // Nothing of the command is applied.
                                return Frame::static_error(NAN_SCORE);
                            }
                            if (flags.lt && new >= current) || (flags.gt && new <= current) {
                                continue;
                            }
                            if new != current {
                                changed += 1;
                            }
                            let new = normalize(new);
                            members.iter_mut().filter(|(n, _)| n == member).for_each(|slot| slot.1 = new);
                            new
                        }
                    };
                    wrote = true;
                    incr_result = Some(new);
                }
                if wrote {
                    self.put_scored(key, members, now_ms);
                }
                if flags.incr {
                    incr_result.map_or(Frame::Null, Frame::Double)
                } else {
                    Frame::Integer(if flags.ch { added + changed } else { added })
                }
            }
            ZsetCommand::IncrBy { key, by, member } => {
                let mut members = self.scored(key, now_ms);
                let new = match score_of(&members, member) {
                    None => normalize(*by),
                    Some(current) if (current + by).is_nan() => return Frame::static_error(NAN_SCORE),
                    Some(current) => normalize(current + by),
                };
                members.retain(|(n, _)| n != member);
                members.push((member.clone(), new));
                self.put_scored(key, members, now_ms);
                Frame::Double(new)
            }
            ZsetCommand::Rem { key, members: named } => {
                let mut members = self.scored(key, now_ms);
                let before = members.len();
                members.retain(|(n, _)| !named.contains(n));
                let removed = (before - members.len()) as i64;
                if removed > 0 {
                    self.put_scored(key, members, now_ms);
                }
                Frame::Integer(removed)
            }
            ZsetCommand::Score { key, member } => score_of(&self.scored(key, now_ms), member).map_or(Frame::Null, Frame::Double),
            ZsetCommand::MScore { key, members: named } => {
                let members = self.scored(key, now_ms);
                Frame::Array(named.iter().map(|m| score_of(&members, m).map_or(Frame::Null, Frame::Double)).collect())
            }
            ZsetCommand::Card(key) => Frame::Integer(self.scored(key, now_ms).len() as i64),
            ZsetCommand::Count { key, min, max } => Frame::Integer(
                self.scored(key, now_ms).iter().filter(|(_, s)| min.admits_from_below(*s) && max.admits_from_above(*s)).count() as i64,
            ),
            ZsetCommand::Rank { key, member, rev } => {
                let members = self.scored(key, now_ms);
                match members.iter().position(|(n, _)| n == member) {
                    None => Frame::Null,
                    Some(rank) => Frame::Integer(if *rev { members.len() - 1 - rank } else { rank } as i64),
                }
            }
            ZsetCommand::Range { key, query } => match select(&self.scored(key, now_ms), query) {
                Ok(members) => scored_reply(members, query.with_scores),
                Err(e) => e,
            },
            ZsetCommand::Pop { key, max, count } => {
                let mut members = self.scored(key, now_ms);
                if *max {
                    members.reverse();
                }
                let take = count.unwrap_or(1).min(members.len() as u64) as usize;
                let popped: Vec<(Bytes, f64)> = members.drain(..take).collect();
                if take > 0 {
                    self.put_scored(key, members, now_ms);
                }
                match count {
                    None => Frame::Array(popped.into_iter().flat_map(|(m, s)| [Frame::Bulk(m), Frame::Double(s)]).collect()),
                    Some(_) => scored_reply(popped, true),
                }
            }
            other => Frame::error(format!("ERR the model does not cover {other:?}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::run_line as run;

    #[test]
    fn zadd_flags_and_zincrby_follow_redis() {
        let mut m = Model::default();
        assert_eq!(run(&mut m, "ZADD z 1 a 2 b"), Frame::Integer(2));
        assert_eq!(run(&mut m, "ZADD z NX 5 a 3 c"), Frame::Integer(1));
        assert_eq!(run(&mut m, "ZADD z XX CH 7 a 9 d"), Frame::Integer(1));
        assert_eq!(run(&mut m, "ZADD z GT 6 a"), Frame::Integer(0));
        assert_eq!(run(&mut m, "ZSCORE z a"), Frame::Double(7.0));
        assert_eq!(run(&mut m, "ZADD z LT INCR 1 a"), Frame::Null);
        assert_eq!(run(&mut m, "ZINCRBY z -0.5 b"), Frame::Double(1.5));
        assert_eq!(run(&mut m, "ZRANGE z 0 -1"), Frame::Array(["b", "c", "a"].map(|s| Frame::Bulk(Bytes::from(s))).to_vec()));
        assert_eq!(run(&mut m, "ZPOPMAX z"), Frame::Array(vec![Frame::Bulk(Bytes::from("a")), Frame::Double(7.0)]), "the highest first");
        assert_eq!(run(&mut m, "ZRANGEBYSCORE z (1.5 +inf"), Frame::Array(vec![Frame::Bulk(Bytes::from("c"))]));
        assert!(matches!(m.keys.get(&Bytes::from("z")), Some(e) if e.kind() == crate::model::Kind::Zset));
    }
}
