//! The differential fuzz generator's commands that take several choices of their own:
//! lexical-range commands on the lex keys, ZRANGE forms, blocking pops and consumer
//! groups. Part of the generator (`super::generator`), which picks among them.

use super::generator::{KEYS, LEX_BOUNDS, RANGE_INDEXES, Rng, SCORE_BOUNDS};

/// Sorted sets whose members all score 0, the only ones lexical ranges are asked of
/// (Redis leaves a lexical range over different scores unspecified).
const LEX_KEYS: &[&str] = &["lex0", "lex1"];
const LEX_MEMBERS: &[&str] = &["a", "aa", "b", "c", "f1", "f3", "", "\u{0}", "zz"];

/// A command on a lex key: members added at score 0, removed, popped, or read and
/// removed by lexical range.
pub fn lex_command(rng: &mut Rng) -> Vec<Vec<u8>> {
    let key = rng.pick(LEX_KEYS);
    let (low, high) = (rng.pick(LEX_BOUNDS), rng.pick(LEX_BOUNDS));
    let mut args = match rng.below(9) {
        0..=2 => {
            let mut args = vec![b"ZADD".to_vec(), key];
            for _ in 0..1 + rng.below(3) {
                args.push(b"0".to_vec());
                args.push(rng.pick(LEX_MEMBERS));
            }
            args
        }
        3 => vec![rng.pick(&["ZREM", "ZSCORE", "ZRANK"]), key, rng.pick(LEX_MEMBERS)],
        4 => vec![b"ZLEXCOUNT".to_vec(), key, low, high],
        5 => vec![rng.pick(&["ZRANGEBYLEX", "ZREVRANGEBYLEX"]), key, low, high],
        6 => vec![b"ZRANGE".to_vec(), key, low, high, b"BYLEX".to_vec()],
        7 => vec![b"ZREMRANGEBYLEX".to_vec(), key, low, high],
        _ => vec![b"ZRANGESTORE".to_vec(), rng.pick(LEX_KEYS), key, low, high, b"BYLEX".to_vec()],
    };
    if matches!(args[0].as_slice(), b"ZRANGE" | b"ZRANGESTORE") && rng.chance(30) {
        args.push(b"REV".to_vec());
    }
    if matches!(args[0].as_slice(), b"ZRANGEBYLEX" | b"ZREVRANGEBYLEX" | b"ZRANGE" | b"ZRANGESTORE") && rng.chance(30) {
        args.extend([b"LIMIT".to_vec(), rng.pick(RANGE_INDEXES), rng.pick(RANGE_INDEXES)]);
    }
    args
}

/// A ZRANGE by rank or score, maybe reversed, limited, with scores.
pub fn zrange(rng: &mut Rng, key: Vec<u8>) -> Vec<Vec<u8>> {
    let by = rng.below(2);
    let bounds = [RANGE_INDEXES, SCORE_BOUNDS][by];
    let mut args = vec![b"ZRANGE".to_vec(), key, rng.pick(bounds), rng.pick(bounds)];
    if by == 1 {
        args.push(b"BYSCORE".to_vec());
    }
    if rng.chance(30) {
        args.push(b"REV".to_vec());
    }
    if rng.chance(25) {
        args.extend([b"LIMIT".to_vec(), rng.pick(RANGE_INDEXES), rng.pick(RANGE_INDEXES)]);
    }
    if rng.chance(40) {
        args.push(b"WITHSCORES".to_vec());
    }
    args
}

/// Timeouts short enough that a pop on an empty key costs the test a few milliseconds.
const BLOCK_TIMEOUTS: &[&str] = &["0.01", "0.01", "0.002", "-1", "abc", "0.01x", "-0.5"];

/// A blocking pop of any kind.
pub fn blocking_pop(rng: &mut Rng) -> Vec<Vec<u8>> {
    let key = |rng: &mut Rng| rng.pick(KEYS);
    let timeout = rng.pick(BLOCK_TIMEOUTS);
    match rng.below(6) {
        0 => {
            let mut args = vec![rng.pick(&["BLPOP", "BRPOP", "BZPOPMIN", "BZPOPMAX"])];
            args.extend((0..1 + rng.below(2)).map(|_| key(rng)));
            args.push(timeout);
            args
        }
        1 => vec![b"BRPOPLPUSH".to_vec(), key(rng), key(rng), timeout],
        2 => vec![b"BLMOVE".to_vec(), key(rng), key(rng), rng.pick(&["LEFT", "RIGHT", "UP"]), rng.pick(&["LEFT", "RIGHT"]), timeout],
        3 | 4 => {
            let (name, ends) = if rng.chance(50) { ("BLMPOP", ["LEFT", "RIGHT", "MIDDLE"]) } else { ("BZMPOP", ["MIN", "MAX", "MIDDLE"]) };
            let mut args = vec![name.as_bytes().to_vec(), timeout, rng.pick(&["1", "2", "0", "-1"]), key(rng), key(rng), rng.pick(&ends)];
            if rng.chance(40) {
                args.extend([b"COUNT".to_vec(), rng.pick(&["1", "2", "0", "-1", "abc"])]);
            }
            args
        }
        _ => vec![rng.pick(&["BLPOP", "BZPOPMIN"]), key(rng), timeout],
    }
}

/// Consumer groups on the stream keys: create and destroy groups and consumers, read
/// new and pending entries, acknowledge, and ask the pending summary (no idle times).
pub fn stream_group_command(rng: &mut Rng) -> Vec<Vec<u8>> {
    let key = rng.pick(KEYS);
    let group = rng.pick(&["g1", "g2"]);
    let consumer = rng.pick(&["c1", "c2"]);
    match rng.below(7) {
        0 | 1 => {
            let mut args = vec![b"XGROUP".to_vec(), b"CREATE".to_vec(), key, group, rng.pick(&["0", "$", "1-1", "abc"])];
            if rng.chance(40) {
                args.push(b"MKSTREAM".to_vec());
            }
            args
        }
        2 => vec![
            b"XGROUP".to_vec(),
            rng.pick(&["DESTROY", "CREATECONSUMER", "DELCONSUMER", "SETID", "NOPE"]),
            key,
            group,
            rng.pick(&["c1", "0", "$"]),
        ],
        3 | 4 => {
            let mut args = vec![b"XREADGROUP".to_vec(), b"GROUP".to_vec(), group, consumer];
            if rng.chance(50) {
                args.extend([b"COUNT".to_vec(), rng.pick(&["1", "2", "0", "abc"])]);
            }
            if rng.chance(20) {
                args.push(b"NOACK".to_vec());
            }
            args.extend([b"STREAMS".to_vec(), key, rng.pick(&[">", ">", "0", "1-1", "abc"])]);
            args
        }
        5 => vec![b"XACK".to_vec(), key, group, rng.pick(&["1-1", "1-2", "2-0", "abc"])],
        _ => vec![b"XPENDING".to_vec(), key, group],
    }
}
