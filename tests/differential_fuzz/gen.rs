//! Random commands for the differential fuzz test: strings, counters, keys, hashes,
//! sets, sorted sets and lists over a handful of keys, fields and members, with
//! arguments drawn from pools that hold the edge cases (empty, binary, huge and
//! negative numbers, inf and nan, exclusive and lexical bounds, bad syntax), and now and
//! then one argument too few or too many. Only commands whose reply Redis fixes (or
//! whose unspecified part the comparison's `Norm` removes) are generated: no wall-clock
//! TTLs short enough to expire within a run (absolute ones are far ahead or long past),
//! cursors only over collections small enough to be answered whole, blocking pops only
//! with timeouts of milliseconds, no idle times of stream consumers.
//!
//! Deterministic: a seed gives the same commands on every run and machine.

use super::families::{blocking_pop, lex_command, stream_group_command, zrange};
use super::reply::Norm;
pub use super::rng::Rng;

pub const KEYS: &[&str] = &["k0", "k1", "k2", "k3", "k4", "{k}5"];
const FIELDS: &[&str] = &["f0", "f1", "f2", "f3", "a", "", "f\u{0}x"];
const VALUES: &[&str] = &[
    "",
    "0",
    "1",
    "-1",
    "10",
    "3.5",
    "-0",
    "1e3",
    "abc",
    "f1",
    "9223372036854775807",
    "-9223372036854775808",
    "9223372036854775808",
    " 1",
    "1 ",
    "0x10",
    "007",
    "inf",
    "nan",
    "\u{0}\u{7f}",
    "a long value that is longer than a small inline string and then some more bytes",
];
const INTS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "3",
    "-2",
    "5",
    "10",
    "-10",
    "100",
    "9223372036854775807",
    "-9223372036854775808",
    "9223372036854775808",
    "abc",
    "1.5",
    "",
    " 3",
    "+1",
    "007",
    "-0",
];
const FLOATS: &[&str] =
    &["0", "1", "-1", "1.5", "-2.25", "0.1", "3", "1e3", "inf", "-inf", "+inf", "nan", "abc", "", "1e308", "5.0e-1", "(1"];
/// INCRBYFLOAT's increments: Redis adds in 80-bit long double, Meridian in a double
/// (docs/semantics.md), so nothing near a double's range, and sums with few digits.
const INCREMENTS: &[&str] = &["0", "1", "-1", "1.5", "-2.25", "0.5", "3", "1e3", "inf", "-inf", "nan", "abc", "", "0x10", " 1", "(1"];
pub const SCORE_BOUNDS: &[&str] = &["-inf", "+inf", "inf", "0", "1", "-1", "(0", "(1", "2.5", "(2.5", "abc", "(", "nan", "1e3"];
pub const LEX_BOUNDS: &[&str] = &["-", "+", "[a", "(a", "[f1", "(f1", "[f3", "(f3", "a", "[", "(", "[\u{0}"];
pub const RANGE_INDEXES: &[&str] = &["0", "1", "2", "-1", "-2", "-100", "100", "9223372036854775807", "-9223372036854775808", "abc"];
/// Unix times in seconds and in milliseconds: 2100-01-01 (and a second or a
/// millisecond later), long past, and the bad ones.
const SECONDS_AT: &[&str] = &["4102444800", "4102444801", "1", "0", "-1", "abc", "9223372036854775807"];
const MILLIS_AT: &[&str] = &["4102444800000", "4102444800001", "1", "0", "-1", "abc", "9223372036854775807"];
const TTLS: &[&str] = &["1000", "100000", "0", "-1", "-100", "abc", "", "9223372036854775807", "1.5"];

/// One generated command, and how its replies are compared.
pub struct Generated {
    pub args: Vec<Vec<u8>>,
    pub norm: Norm,
}

fn words(parts: &[&str]) -> Vec<Vec<u8>> {
    parts.iter().map(|p| p.as_bytes().to_vec()).collect()
}

/// A random command; `in_multi` follows MULTI and EXEC/DISCARD as sent (a float
/// counter is not incremented inside MULTI: past 1e15 its text differs from Redis's in
/// the last digits, and EXEC's reply would show it before the test can resync it).
pub fn command(rng: &mut Rng, in_multi: &mut bool) -> Generated {
    loop {
        let generated = any_command(rng);
        let name = generated.args[0].to_ascii_uppercase();
        if *in_multi && matches!(name.as_slice(), b"INCRBYFLOAT" | b"HINCRBYFLOAT") {
            continue;
        }
        match name.as_slice() {
            b"MULTI" => *in_multi = true,
            b"EXEC" | b"DISCARD" => *in_multi = false,
            _ => {}
        }
        return generated;
    }
}

fn any_command(rng: &mut Rng) -> Generated {
    let key = |rng: &mut Rng| rng.pick(KEYS);
    let (mut args, norm): (Vec<Vec<u8>>, Norm) = match rng.below(140) {
        // Strings and counters.
        0..=3 => {
            let mut args = vec![b"SET".to_vec(), key(rng), rng.pick(VALUES)];
            for option in ["NX", "XX", "GET", "KEEPTTL"] {
                if rng.chance(15) {
                    args.push(option.as_bytes().to_vec());
                }
            }
            if rng.chance(15) {
                match rng.below(5) {
                    0 => args.extend([b"EXAT".to_vec(), rng.pick(SECONDS_AT)]),
                    1 => args.extend([b"PXAT".to_vec(), rng.pick(MILLIS_AT)]),
                    _ => args.extend([rng.pick(&["EX", "PX", "EXAT", "ex"]), rng.pick(TTLS)]),
                }
            }
            (args, Norm::Exact)
        }
        4..=5 => (vec![rng.pick(&["GET", "GETDEL", "STRLEN", "INCR", "DECR"]), key(rng)], Norm::Exact),
        6..=7 => (vec![rng.pick(&["INCRBY", "DECRBY"]), key(rng), rng.pick(INTS)], Norm::Exact),
        8 => (vec![b"INCRBYFLOAT".to_vec(), key(rng), rng.pick(INCREMENTS)], Norm::Float),
        9 => (vec![rng.pick(&["APPEND", "SETNX", "GETSET"]), key(rng), rng.pick(VALUES)], Norm::Exact),
        10 => (
            vec![b"SETRANGE".to_vec(), key(rng), rng.pick(&["0", "1", "5", "20", "-1", "abc", "536870912"]), rng.pick(VALUES)],
            Norm::Exact,
        ),
        11 => (vec![rng.pick(&["GETRANGE", "SUBSTR"]), key(rng), rng.pick(RANGE_INDEXES), rng.pick(RANGE_INDEXES)], Norm::Exact),
        12 => {
            let mut args = vec![rng.pick(&["MSET", "MSETNX"])];
            for _ in 0..1 + rng.below(3) {
                args.push(key(rng));
                args.push(rng.pick(VALUES));
            }
            (args, Norm::Exact)
        }
        13 => (std::iter::once(b"MGET".to_vec()).chain((0..1 + rng.below(4)).map(|_| key(rng))).collect(), Norm::Exact),
        14 => {
            let mut args = vec![b"GETEX".to_vec(), key(rng)];
            if rng.chance(50) {
                args.extend(match rng.below(4) {
                    0 => words(&["PERSIST"]),
                    1 => vec![b"EXAT".to_vec(), rng.pick(SECONDS_AT)],
                    2 => vec![b"PXAT".to_vec(), rng.pick(MILLIS_AT)],
                    _ => vec![rng.pick(&["EX", "PX"]), rng.pick(TTLS)],
                });
            }
            (args, Norm::Exact)
        }
        // Keys of every type.
        15..=16 => {
            (std::iter::once(rng.pick(&["DEL", "EXISTS", "UNLINK"])).chain((0..1 + rng.below(3)).map(|_| key(rng))).collect(), Norm::Exact)
        }
        17 => (vec![b"TYPE".to_vec(), key(rng)], Norm::Exact),
        18 => (vec![rng.pick(&["RENAME", "RENAMENX"]), key(rng), key(rng)], Norm::Exact),
        19 => {
            let mut args = vec![b"COPY".to_vec(), key(rng), key(rng)];
            if rng.chance(50) {
                args.push(b"REPLACE".to_vec());
            }
            (args, Norm::Exact)
        }
        20 => {
            let mut args = vec![rng.pick(&["EXPIRE", "PEXPIRE"]), key(rng), rng.pick(TTLS)];
            if rng.chance(30) {
                args.push(rng.pick(&["NX", "XX", "GT", "LT", "nx", "XY"]));
            }
            (args, Norm::Exact)
        }
        21 => (vec![rng.pick(&["TTL", "PTTL", "PERSIST"]), key(rng)], Norm::Ttl),
        22 => (words(&["DBSIZE"]), Norm::Exact),
        23 => (vec![b"KEYS".to_vec(), rng.pick(&["*", "k*", "k[0-2]", "?1", "{k}*", "\\k0"])], Norm::Sorted),
        // Hashes.
        24..=28 => {
            let mut args = vec![rng.pick(&["HSET", "HSET", "HMSET"]), key(rng)];
            for _ in 0..1 + rng.below(3) {
                args.push(rng.pick(FIELDS));
                args.push(rng.pick(VALUES));
            }
            (args, Norm::Exact)
        }
        29 => (vec![b"HSETNX".to_vec(), key(rng), rng.pick(FIELDS), rng.pick(VALUES)], Norm::Exact),
        30..=31 => (vec![rng.pick(&["HGET", "HEXISTS", "HSTRLEN"]), key(rng), rng.pick(FIELDS)], Norm::Exact),
        32 => (vec![rng.pick(&["HDEL", "HMGET"]), key(rng), rng.pick(FIELDS), rng.pick(FIELDS)], Norm::Exact),
        33 => (vec![b"HINCRBY".to_vec(), key(rng), rng.pick(FIELDS), rng.pick(INTS)], Norm::Exact),
        34 => (vec![b"HINCRBYFLOAT".to_vec(), key(rng), rng.pick(FIELDS), rng.pick(INCREMENTS)], Norm::Float),
        35 => (vec![b"HLEN".to_vec(), key(rng)], Norm::Exact),
        36 => (vec![b"HGETALL".to_vec(), key(rng)], Norm::SortedPairs),
        37 => (vec![rng.pick(&["HKEYS", "HVALS"]), key(rng)], Norm::Sorted),
        38 => (vec![b"HRANDFIELD".to_vec(), key(rng), rng.pick(&["1", "2", "-2", "0", "abc"])], Norm::Shape),
        // Sets.
        39..=42 => (
            std::iter::once(rng.pick(&["SADD", "SADD", "SREM"]))
                .chain(std::iter::once(key(rng)))
                .chain((0..1 + rng.below(3)).map(|_| rng.pick(FIELDS)))
                .collect(),
            Norm::Exact,
        ),
        43 => (vec![rng.pick(&["SISMEMBER", "SMISMEMBER"]), key(rng), rng.pick(FIELDS)], Norm::Exact),
        44 => (vec![b"SCARD".to_vec(), key(rng)], Norm::Exact),
        45 => (vec![b"SMEMBERS".to_vec(), key(rng)], Norm::Sorted),
        46 => (vec![b"SMOVE".to_vec(), key(rng), key(rng), rng.pick(FIELDS)], Norm::Exact),
        47..=48 => (
            std::iter::once(rng.pick(&["SINTER", "SUNION", "SDIFF"])).chain((0..1 + rng.below(3)).map(|_| key(rng))).collect(),
            Norm::Sorted,
        ),
        49 => (
            std::iter::once(rng.pick(&["SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"]))
                .chain((0..2 + rng.below(2)).map(|_| key(rng)))
                .collect(),
            Norm::Exact,
        ),
        50 => {
            let mut args = vec![b"SINTERCARD".to_vec(), rng.pick(&["1", "2", "0", "-1", "3"]), key(rng), key(rng)];
            if rng.chance(40) {
                args.push(b"LIMIT".to_vec());
                args.push(rng.pick(&["0", "1", "-1", "abc"]));
            }
            (args, Norm::Exact)
        }
        // SPOP changes the set by chance unless it takes every member (or none).
        51 => match rng.chance(50) {
            true => (vec![b"SPOP".to_vec(), key(rng), rng.pick(&["100", "0", "-3", "abc"])], Norm::Sorted),
            false => (vec![b"SRANDMEMBER".to_vec(), key(rng), rng.pick(&["1", "2", "-3", "0", "abc"])], Norm::Shape),
        },
        // Sorted sets.
        52..=56 => {
            let mut args = vec![b"ZADD".to_vec(), key(rng)];
            for option in ["NX", "XX", "GT", "LT", "CH", "INCR"] {
                if rng.chance(8) {
                    args.push(option.as_bytes().to_vec());
                }
            }
            for _ in 0..1 + rng.below(2) {
                args.push(rng.pick(FLOATS));
                args.push(rng.pick(FIELDS));
            }
            (args, Norm::Exact)
        }
        57 => (vec![rng.pick(&["ZSCORE", "ZRANK", "ZREVRANK", "ZREM"]), key(rng), rng.pick(FIELDS)], Norm::Exact),
        58 => (vec![b"ZMSCORE".to_vec(), key(rng), rng.pick(FIELDS), rng.pick(FIELDS)], Norm::Exact),
        59 => (vec![b"ZINCRBY".to_vec(), key(rng), rng.pick(FLOATS), rng.pick(FIELDS)], Norm::Exact),
        60 => (vec![b"ZCARD".to_vec(), key(rng)], Norm::Exact),
        61 => (vec![b"ZCOUNT".to_vec(), key(rng), rng.pick(SCORE_BOUNDS), rng.pick(SCORE_BOUNDS)], Norm::Exact),
        62 => (lex_command(rng), Norm::Exact),
        63..=65 => {
            let key = key(rng);
            (zrange(rng, key), Norm::Exact)
        }
        66 => {
            // Lexical ranges only on the lex keys (`lex_command`): over members of
            // different scores Redis leaves their result unspecified.
            let by_score = true;
            let bounds = if by_score { SCORE_BOUNDS } else { LEX_BOUNDS };
            let name = match (by_score, rng.chance(50)) {
                (true, false) => "ZRANGEBYSCORE",
                (true, true) => "ZREVRANGEBYSCORE",
                (false, false) => "ZRANGEBYLEX",
                (false, true) => "ZREVRANGEBYLEX",
            };
            let mut args = vec![name.as_bytes().to_vec(), key(rng), rng.pick(bounds), rng.pick(bounds)];
            if by_score && rng.chance(40) {
                args.push(b"WITHSCORES".to_vec());
            }
            if rng.chance(30) {
                args.extend([b"LIMIT".to_vec(), rng.pick(RANGE_INDEXES), rng.pick(RANGE_INDEXES)]);
            }
            (args, Norm::Exact)
        }
        67 => {
            let mut args = vec![rng.pick(&["ZPOPMIN", "ZPOPMAX"]), key(rng)];
            if rng.chance(60) {
                args.push(rng.pick(&["1", "2", "0", "-1", "abc", "100"]));
            }
            (args, Norm::Exact)
        }
        68 => {
            let mut args = vec![rng.pick(&["ZREMRANGEBYRANK", "ZREMRANGEBYSCORE"]), key(rng)];
            let pool = match args[0].as_slice() {
                b"ZREMRANGEBYRANK" => RANGE_INDEXES,
                b"ZREMRANGEBYSCORE" => SCORE_BOUNDS,
                _ => LEX_BOUNDS,
            };
            args.extend([rng.pick(pool), rng.pick(pool)]);
            (args, Norm::Exact)
        }
        69 => {
            let mut args = vec![
                rng.pick(&["ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE"]),
                key(rng),
                rng.pick(&["1", "2", "0", "-1", "3"]),
                key(rng),
                key(rng),
            ];
            if args[0] != b"ZDIFFSTORE" && rng.chance(40) {
                args.push(b"AGGREGATE".to_vec());
                args.push(rng.pick(&["SUM", "MIN", "MAX", "max", "AVG"]));
            }
            if args[0] != b"ZDIFFSTORE" && rng.chance(30) {
                args.extend([b"WEIGHTS".to_vec(), rng.pick(FLOATS), rng.pick(FLOATS)]);
            }
            (args, Norm::Exact)
        }
        70 => {
            let mut args = vec![rng.pick(&["ZUNION", "ZINTER", "ZDIFF"]), rng.pick(&["1", "2", "0"]), key(rng), key(rng)];
            if rng.chance(50) {
                args.push(b"WITHSCORES".to_vec());
            }
            (args, Norm::Exact)
        }
        71 => {
            let source = key(rng);
            let mut args = zrange(rng, source);
            args[0] = b"ZRANGESTORE".to_vec();
            args.insert(1, key(rng));
            args.retain(|a| a != b"WITHSCORES");
            (args, Norm::Exact)
        }
        // Lists.
        72..=77 => (
            std::iter::once(rng.pick(&["LPUSH", "RPUSH", "LPUSH", "RPUSH", "LPUSHX", "RPUSHX"]))
                .chain(std::iter::once(key(rng)))
                .chain((0..1 + rng.below(3)).map(|_| rng.pick(FIELDS)))
                .collect(),
            Norm::Exact,
        ),
        78..=79 => {
            let mut args = vec![rng.pick(&["LPOP", "RPOP"]), key(rng)];
            if rng.chance(40) {
                args.push(rng.pick(&["1", "2", "0", "-1", "abc", "10"]));
            }
            (args, Norm::Exact)
        }
        80..=81 => (vec![b"LRANGE".to_vec(), key(rng), rng.pick(RANGE_INDEXES), rng.pick(RANGE_INDEXES)], Norm::Exact),
        82 => (vec![rng.pick(&["LLEN", "LINDEX"]), key(rng), rng.pick(RANGE_INDEXES)], Norm::Exact),
        83 => (vec![b"LSET".to_vec(), key(rng), rng.pick(RANGE_INDEXES), rng.pick(FIELDS)], Norm::Exact),
        84 => (
            vec![b"LINSERT".to_vec(), key(rng), rng.pick(&["BEFORE", "AFTER", "after", "middle"]), rng.pick(FIELDS), rng.pick(FIELDS)],
            Norm::Exact,
        ),
        85 => (vec![b"LREM".to_vec(), key(rng), rng.pick(&["0", "1", "-1", "2", "-2", "abc"]), rng.pick(FIELDS)], Norm::Exact),
        86 => (vec![b"LTRIM".to_vec(), key(rng), rng.pick(RANGE_INDEXES), rng.pick(RANGE_INDEXES)], Norm::Exact),
        87 => {
            let mut args = vec![b"LPOS".to_vec(), key(rng), rng.pick(FIELDS)];
            for option in ["RANK", "COUNT", "MAXLEN"] {
                if rng.chance(30) {
                    args.push(option.as_bytes().to_vec());
                    args.push(rng.pick(&["0", "1", "-1", "2", "-2", "abc", "-9223372036854775808"]));
                }
            }
            (args, Norm::Exact)
        }
        88 => (
            vec![b"LMOVE".to_vec(), key(rng), key(rng), rng.pick(&["LEFT", "RIGHT", "left", "UP"]), rng.pick(&["LEFT", "RIGHT"])],
            Norm::Exact,
        ),
        89 => (vec![b"RPOPLPUSH".to_vec(), key(rng), key(rng)], Norm::Exact),
        90 => {
            let mut args =
                vec![b"LMPOP".to_vec(), rng.pick(&["1", "2", "0", "-1"]), key(rng), key(rng), rng.pick(&["LEFT", "RIGHT", "MIDDLE"])];
            if rng.chance(40) {
                args.extend([b"COUNT".to_vec(), rng.pick(&["1", "2", "0", "-1", "abc"])]);
            }
            (args, Norm::Exact)
        }
        91 => {
            let mut args =
                vec![b"ZMPOP".to_vec(), rng.pick(&["1", "2", "0", "-1"]), key(rng), key(rng), rng.pick(&["MIN", "MAX", "MIDDLE"])];
            if rng.chance(40) {
                args.extend([b"COUNT".to_vec(), rng.pick(&["1", "2", "0", "-1", "abc"])]);
            }
            (args, Norm::Exact)
        }
        92 => (vec![b"ZRANDMEMBER".to_vec(), key(rng), rng.pick(&["1", "2", "-2", "0", "abc"])], Norm::Shape),
        93 => (vec![rng.pick(&["SORT", "SORT_RO"]), key(rng), rng.pick(&["ALPHA", "DESC", "ASC", "LIMIT"])], Norm::Exact),
        // Bits and misc string reads.
        94 => (
            vec![
                rng.pick(&["SETBIT", "GETBIT"]),
                key(rng),
                rng.pick(&["0", "7", "100", "-1", "4294967296", "abc"]),
                rng.pick(&["0", "1", "2"]),
            ],
            Norm::Exact,
        ),
        95 => (vec![b"BITCOUNT".to_vec(), key(rng), rng.pick(RANGE_INDEXES), rng.pick(RANGE_INDEXES)], Norm::Exact),
        96 => (vec![b"LCS".to_vec(), key(rng), key(rng)], Norm::Exact),
        97 => (lex_command(rng), Norm::Exact),
        98..=99 => (vec![rng.pick(&["ECHO", "PING"]), rng.pick(VALUES)], Norm::Exact),
        // Transactions: the commands between MULTI and EXEC are queued (or refused, which
        // aborts the EXEC), WATCH aborts an EXEC after a write to its key.
        100 => (words(&["MULTI"]), Norm::Exact),
        101..=102 => (words(&["EXEC"]), Norm::Exact),
        103 => (words(&["DISCARD"]), Norm::Exact),
        104 => (std::iter::once(b"WATCH".to_vec()).chain((0..1 + rng.below(2)).map(|_| key(rng))).collect(), Norm::Exact),
        105 => (words(&["UNWATCH"]), Norm::Exact),
        // Bitmaps beyond SETBIT/GETBIT/BITCOUNT.
        106 => {
            let mut args = vec![b"BITPOS".to_vec(), key(rng), rng.pick(&["0", "1", "2"])];
            for _ in 0..rng.below(3) {
                args.push(rng.pick(RANGE_INDEXES));
            }
            if rng.chance(20) {
                args.push(rng.pick(&["BYTE", "BIT", "bits"]));
            }
            (args, Norm::Exact)
        }
        107 => {
            let op = rng.pick(&["AND", "OR", "XOR", "NOT", "nand"]);
            let mut args = vec![b"BITOP".to_vec(), op, key(rng), key(rng)];
            if rng.chance(50) {
                args.push(key(rng));
            }
            (args, Norm::Exact)
        }
        108 => {
            let mut args = vec![rng.pick(&["BITFIELD", "BITFIELD_RO"]), key(rng)];
            for _ in 0..1 + rng.below(3) {
                match rng.below(4) {
                    0 => args.extend([
                        b"GET".to_vec(),
                        rng.pick(&["u8", "i5", "u63", "i64", "u64", "x3"]),
                        rng.pick(&["0", "7", "#1", "-1", "100"]),
                    ]),
                    1 => args.extend([b"SET".to_vec(), rng.pick(&["u8", "i5", "u4"]), rng.pick(&["0", "3", "#2"]), rng.pick(INTS)]),
                    2 => args.extend([b"INCRBY".to_vec(), rng.pick(&["u8", "i5", "u2"]), rng.pick(&["0", "5"]), rng.pick(INTS)]),
                    _ => args.extend([b"OVERFLOW".to_vec(), rng.pick(&["WRAP", "SAT", "FAIL", "sat", "NONE"])]),
                }
            }
            (args, Norm::Exact)
        }
        // Streams with explicit ids (a generated `*` id reads the clock).
        109..=111 => {
            let mut args = vec![b"XADD".to_vec(), key(rng)];
            if rng.chance(20) {
                args.extend([b"MAXLEN".to_vec(), rng.pick(&["2", "0", "~", "abc"])]);
            }
            args.push(rng.pick(&[
                "1-1",
                "1-2",
                "2-0",
                "0-1",
                "5",
                "1-*",
                "3-*",
                "0-0",
                "abc",
                "18446744073709551615-18446744073709551615",
            ]));
            for _ in 0..1 + rng.below(2) {
                args.push(rng.pick(FIELDS));
                args.push(rng.pick(VALUES));
            }
            (args, Norm::Exact)
        }
        112 => {
            let mut args = vec![
                rng.pick(&["XRANGE", "XREVRANGE"]),
                key(rng),
                rng.pick(&["-", "+", "1", "1-2", "(1-1", "2", "abc"]),
                rng.pick(&["-", "+", "5", "1-1", "(5"]),
            ];
            if rng.chance(40) {
                args.extend([b"COUNT".to_vec(), rng.pick(&["1", "2", "0", "-1", "abc"])]);
            }
            (args, Norm::Exact)
        }
        113 => (vec![b"XLEN".to_vec(), key(rng)], Norm::Exact),
        114 => (vec![b"XDEL".to_vec(), key(rng), rng.pick(&["1-1", "1-2", "5-0", "abc"])], Norm::Exact),
        115 => (
            vec![b"XTRIM".to_vec(), key(rng), rng.pick(&["MAXLEN", "MINID", "maxlen"]), rng.pick(&["1", "0", "2-0", "-1", "abc"])],
            Norm::Exact,
        ),
        // Absolute expiry times: far in the future (so that the reply does not depend
        // on the clock) or long past (the key goes at once).
        116 => {
            let (name, times) = if rng.chance(50) { ("EXPIREAT", SECONDS_AT) } else { ("PEXPIREAT", MILLIS_AT) };
            let mut args = vec![name.as_bytes().to_vec(), key(rng), rng.pick(times)];
            if rng.chance(30) {
                args.push(rng.pick(&["NX", "XX", "GT", "LT", "gt", "XY"]));
            }
            (args, Norm::Exact)
        }
        117 => (vec![rng.pick(&["EXPIRETIME", "PEXPIRETIME"]), key(rng)], Norm::Ttl),
        118 => (std::iter::once(b"TOUCH".to_vec()).chain((0..1 + rng.below(3)).map(|_| key(rng))).collect(), Norm::Exact),
        119 => (words(&["RANDOMKEY"]), Norm::Shape),
        120 => (vec![b"OBJECT".to_vec(), rng.pick(&["ENCODING", "encoding", "REFCOUNT", "NOPE"]), key(rng)], Norm::Encoding),
        121 => {
            let mut args = vec![b"ZREVRANGE".to_vec(), key(rng), rng.pick(RANGE_INDEXES), rng.pick(RANGE_INDEXES)];
            if rng.chance(40) {
                args.push(rng.pick(&["WITHSCORES", "withscores", "LIMIT"]));
            }
            (args, Norm::Exact)
        }
        122 => {
            let mut args = vec![b"ZINTERCARD".to_vec(), rng.pick(&["1", "2", "0", "-1", "3"]), key(rng), key(rng)];
            if rng.chance(40) {
                args.extend([b"LIMIT".to_vec(), rng.pick(&["0", "1", "-1", "abc"])]);
            }
            (args, Norm::Exact)
        }
        // A cursor over a small collection: Redis answers it whole, with cursor 0.
        123..=124 => {
            let (name, norm) = match rng.below(3) {
                0 => ("HSCAN", Norm::ScanPairs),
                1 => ("SSCAN", Norm::Scan),
                _ => ("ZSCAN", Norm::ScanPairs),
            };
            // (No cursor past 2^64: Redis's `strtoul` then leaves ERANGE in `errno`, and
            // a later SORT of a list holding "" reads that stale `errno` as its own.)
            let mut args = vec![name.as_bytes().to_vec(), key(rng), rng.pick(&["0", "0", "0", "abc", " 0", "0x"])];
            if rng.chance(40) {
                args.extend([b"MATCH".to_vec(), rng.pick(&["*", "f*", "f[0-1]", "?", "", "\\f*"])]);
            }
            if rng.chance(30) {
                // (Not a COUNT below a collection's size: Redis walks a small hash table
                // a bucket at a time, where Meridian answers the whole collection.)
                args.extend([b"COUNT".to_vec(), rng.pick(&["10", "100", "0", "-1", "abc"])]);
            }
            (args, norm)
        }
        // Blocking pops with timeouts of a few milliseconds (never 0: an empty key
        // would block the test for good); inside MULTI they do not block.
        125..=127 => (blocking_pop(rng), Norm::Exact),
        128 => {
            let mut args = vec![b"XREAD".to_vec()];
            if rng.chance(40) {
                args.extend([b"COUNT".to_vec(), rng.pick(&["1", "2", "0", "-1", "abc"])]);
            }
            args.push(b"STREAMS".to_vec());
            let streams = 1 + rng.below(2);
            args.extend((0..streams).map(|_| key(rng)));
            args.extend((0..streams).map(|_| rng.pick(&["0", "0-0", "1-1", "1", "$", "abc"])));
            (args, Norm::Exact)
        }
        129 => {
            // Only patterns with a `*` (one without means no sorting, in a set's own
            // order), and ALPHA only without BY (Redis leaves equal weights in the
            // order its sort leaves them; by number it orders them by element).
            let mut args = vec![rng.pick(&["SORT", "SORT_RO"]), key(rng)];
            let by = rng.chance(60);
            if by {
                args.extend([b"BY".to_vec(), rng.pick(&["k*", "{k}*", "*->f0"])]);
            }
            for _ in 0..rng.below(3) {
                args.extend([b"GET".to_vec(), rng.pick(&["#", "k*", "k*->f0", "#->f0"])]);
            }
            if !by && rng.chance(30) {
                args.push(b"ALPHA".to_vec());
            }
            if args[0] == b"SORT" && rng.chance(30) {
                args.extend([b"STORE".to_vec(), key(rng)]);
            }
            (args, Norm::Exact)
        }
        130 => (stream_group_command(rng), Norm::Exact),
        131 => (vec![b"XSETID".to_vec(), key(rng), rng.pick(&["5-0", "0-0", "1-1", "18446744073709551615-0", "abc"])], Norm::Exact),
        132 => match rng.below(4) {
            0 => (vec![rng.pick(&["FLUSHALL", "FLUSHDB"]), rng.pick(&["SYNC", "ASYNC", "sync", "LAZY"])], Norm::Exact),
            _ => (vec![b"HRANDFIELD".to_vec(), key(rng), rng.pick(&["1", "2", "-3", "0", "abc"]), b"WITHVALUES".to_vec()], Norm::Shape),
        },
        _ => (vec![rng.pick(&["SETEX", "PSETEX"]), key(rng), rng.pick(TTLS), rng.pick(VALUES)], Norm::Exact),
    };
    // Now and then an argument too few or too many: the arity errors.
    // (Never SPOP's count: without one it pops a member at random.)
    // (Nor a blocking pop's: its timeout would become a key or a value such as 0.)
    let blocking =
        matches!(args[0].as_slice(), b"BLPOP" | b"BRPOP" | b"BRPOPLPUSH" | b"BLMOVE" | b"BLMPOP" | b"BZPOPMIN" | b"BZPOPMAX" | b"BZMPOP");
    if !blocking && rng.chance(3) && args.len() > 1 && args[0] != b"SPOP" {
        args.pop();
    } else if !blocking && rng.chance(3) {
        args.push(rng.pick(VALUES));
    }
    Generated { args, norm }
}
