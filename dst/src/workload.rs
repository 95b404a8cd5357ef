//! The client workload: random commands over a small key space, so that keys collide,
//! expire, get overwritten and deleted often. Every data type adds its commands here
//! (and its semantics to `model.rs`).

use bytes::Bytes;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// Keys the workload uses; two share a hash tag so they always live on one shard.
const KEYS: [&str; 8] = ["a", "b", "c", "d", "{t}x", "{t}y", "n1", "n2"];

fn key(rng: &mut ChaCha8Rng) -> String {
    KEYS[rng.random_range(0..KEYS.len())].to_string()
}

fn value(rng: &mut ChaCha8Rng) -> String {
    match rng.random_range(0..10) {
        0 => format!("v{}", rng.random_range(0..5)),
        1 => (i64::MAX - rng.random_range(0..3)).to_string(),
        2 => format!("{}.5", rng.random_range(-3..3)),
        3 => String::new(),
        _ => rng.random_range(-20..20).to_string(),
    }
}

/// A hash field's value: [`value`], with two of its strings made text (drawn from the
/// same random numbers, so every seed's run stays the one it was apart from these
/// values): a sentence with a stop word, a stemmed word and a repeated term, for the
/// simulator's TEXT index (`sim/indexes.rs`), and a language name, which that index
/// reads as a document's language.
fn hash_value(rng: &mut ChaCha8Rng) -> String {
    match value(rng).as_str() {
        "v3" => "v3 running v1, the v1 runs".into(),
        "v4" => "german".into(),
        other => other.into(),
    }
}

fn ttl_option(rng: &mut ChaCha8Rng, base_ms: u64) -> Vec<String> {
    match rng.random_range(0..6) {
        0 => vec!["EX".into(), rng.random_range(1..4).to_string()],
        1 | 2 => vec!["PX".into(), rng.random_range(1..2_500).to_string()],
        3 => vec!["PXAT".into(), (base_ms + rng.random_range(0..4_000)).to_string()],
        4 => vec!["KEEPTTL".into()],
        _ => vec![],
    }
}

fn field(rng: &mut ChaCha8Rng) -> String {
    format!("f{}", rng.random_range(0..4))
}

/// One hash command on `k`: writes and reads of a few fields.
fn hash_command(rng: &mut ChaCha8Rng, k: String) -> Vec<String> {
    match rng.random_range(0..12) {
        0..=2 => {
            let mut w = vec!["HSET".into(), k, field(rng), hash_value(rng)];
            if rng.random_bool(0.3) {
                w.extend([field(rng), hash_value(rng)]);
            }
            w
        }
        3 => vec!["HSETNX".into(), k, field(rng), hash_value(rng)],
        4 => vec!["HGET".into(), k, field(rng)],
        5 => vec!["HMGET".into(), k, field(rng), field(rng)],
        6 => vec!["HGETALL".into(), k],
        7 => vec!["HDEL".into(), k, field(rng), field(rng)],
        8 => vec!["HINCRBY".into(), k, field(rng), rng.random_range(-5..6).to_string()],
        9 => vec!["HINCRBYFLOAT".into(), k, field(rng), format!("{}", rng.random_range(-4..5) as f64 * 0.5)],
        10 => vec!["HLEN".into(), k],
        _ => vec!["HEXISTS".into(), k, field(rng)],
    }
}

/// Keys single-node runs use mostly for sets (set commands also go to [`KEYS`], so
/// that WRONGTYPE and overwrites by other types are exercised). The last two share the
/// `{t}` tag with `{t}x` and `{t}y`, for SMOVE and the STORE forms.
const SET_KEYS: [&str; 3] = ["s1", "{t}s", "{t}u"];
/// Keys on the `{t}` shard, for the multi-key set commands.
const TAGGED_KEYS: [&str; 4] = ["{t}s", "{t}u", "{t}x", "{t}y"];

/// A set member: mostly small integers (a set of them replies sorted, as an intset),
/// sometimes text (insertion order).
fn member(rng: &mut ChaCha8Rng) -> String {
    match rng.random_range(0..10) {
        0..=6 => ["1", "2", "3", "10", "-4"][rng.random_range(0..5)].to_string(),
        _ => format!("m{}", rng.random_range(0..3)),
    }
}

fn members(rng: &mut ChaCha8Rng, words: &mut Vec<String>) {
    words.push(member(rng));
    while rng.random_bool(0.4) && words.len() < 8 {
        words.push(member(rng));
    }
}

fn tagged_key(rng: &mut ChaCha8Rng) -> String {
    TAGGED_KEYS[rng.random_range(0..TAGGED_KEYS.len())].to_string()
}

/// One set command on `k`, or on `{t}` keys for the multi-key ones.
fn set_command(rng: &mut ChaCha8Rng, k: String) -> Vec<String> {
    let mut w: Vec<String> = match rng.random_range(0..20) {
        0..=4 => vec!["SADD".into(), k],
        5..=6 => vec!["SREM".into(), k],
        7 => vec!["SISMEMBER".into(), k, member(rng)],
        8 => vec!["SMISMEMBER".into(), k],
        9..=10 => vec!["SMEMBERS".into(), k],
        11 => vec!["SCARD".into(), k],
        12 => vec!["SPOP".into(), k],
        13 => vec!["SPOP".into(), k, rng.random_range(0..4).to_string()],
        14 => vec!["SRANDMEMBER".into(), k, rng.random_range(-3..4).to_string()],
        15 => vec!["SMOVE".into(), tagged_key(rng), tagged_key(rng), member(rng)],
        16 => {
            let name = ["SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"][rng.random_range(0..3)];
            vec![name.into(), tagged_key(rng), tagged_key(rng), tagged_key(rng)]
        }
        17 => {
            let name = ["SINTER", "SUNION", "SDIFF"][rng.random_range(0..3)];
            vec![name.into(), tagged_key(rng), tagged_key(rng)]
        }
        18 => vec!["DEL".into(), k],
        _ => vec!["PEXPIRE".into(), k, rng.random_range(1..3_000).to_string()],
    };
    if matches!(w[0].as_str(), "SADD" | "SREM" | "SMISMEMBER") {
        members(rng, &mut w);
    }
    w
}

/// Keys single-node runs use mostly for sorted sets (their commands also go to
/// [`KEYS`], for WRONGTYPE and overwrites by other types).
const ZSET_KEYS: [&str; 2] = ["z1", "{t}z"];
/// Keys single-node runs use mostly for lists (as [`ZSET_KEYS`]).
const LIST_KEYS: [&str; 2] = ["l1", "{t}l"];

/// A sorted set member: a few names, so that members collide.
fn zmember(rng: &mut ChaCha8Rng) -> String {
    ["a", "b", "c", "d", "e"][rng.random_range(0..5)].to_string()
}

/// A score or an increment: small integers and halves, so that every sum is exact
/// (the replicated oracle adds increments in another order than the engine).
fn zscore(rng: &mut ChaCha8Rng) -> String {
    match rng.random_range(0..4) {
        0 => format!("{}.5", rng.random_range(-3..3)),
        _ => rng.random_range(-5..6).to_string(),
    }
}

/// One end of a score range (ZRANGEBYSCORE, ZCOUNT).
fn zbound(rng: &mut ChaCha8Rng) -> String {
    match rng.random_range(0..6) {
        0 => "-inf".into(),
        1 => "+inf".into(),
        2 => format!("({}", rng.random_range(-5..6)),
        _ => zscore(rng),
    }
}

/// `ZADD`'s words up to the pairs: the key and at most one or two flags.
fn zadd_head(rng: &mut ChaCha8Rng, k: String, flags: &[&str]) -> (Vec<String>, bool) {
    let mut w = vec!["ZADD".into(), k];
    let mut incr = false;
    if rng.random_bool(0.4) {
        let flag = flags[rng.random_range(0..flags.len())];
        incr = flag == "INCR";
        w.push(flag.into());
        if !incr && rng.random_bool(0.3) {
            w.push("CH".into());
        }
    }
    (w, incr)
}

/// One sorted set command on `k`.
fn zset_command(rng: &mut ChaCha8Rng, k: String) -> Vec<String> {
    match rng.random_range(0..21) {
        0..=4 => {
            let (mut w, incr) = zadd_head(rng, k, &["NX", "XX", "GT", "LT", "CH", "INCR"]);
            w.extend([zscore(rng), zmember(rng)]);
            if !incr && rng.random_bool(0.4) {
                w.extend([zscore(rng), zmember(rng)]);
            }
            w
        }
        5..=6 => vec!["ZINCRBY".into(), k, zscore(rng), zmember(rng)],
        7..=8 => {
            let mut w = vec!["ZREM".into(), k, zmember(rng)];
            if rng.random_bool(0.3) {
                w.push(zmember(rng));
            }
            w
        }
        9 => vec!["ZSCORE".into(), k, zmember(rng)],
        10 => vec!["ZMSCORE".into(), k, zmember(rng), zmember(rng)],
        11 => vec!["ZCARD".into(), k],
        12..=13 => {
            let name = if rng.random_bool(0.7) { "ZRANGE" } else { "ZREVRANGE" };
            let mut w = vec![name.into(), k, rng.random_range(-4..4).to_string(), rng.random_range(-4..4).to_string()];
            if rng.random_bool(0.5) {
                w.push("WITHSCORES".into());
            }
            w
        }
        14..=15 => {
            let name = if rng.random_bool(0.7) { "ZRANGEBYSCORE" } else { "ZREVRANGEBYSCORE" };
            let mut w = vec![name.into(), k, zbound(rng), zbound(rng)];
            if rng.random_bool(0.4) {
                w.push("WITHSCORES".into());
            }
            if rng.random_bool(0.3) {
                w.extend(["LIMIT".into(), rng.random_range(-1..3).to_string(), rng.random_range(-1..3).to_string()]);
            }
            w
        }
        16 => {
            let name = if rng.random_bool(0.5) { "ZPOPMIN" } else { "ZPOPMAX" };
            let mut w = vec![name.into(), k];
            if rng.random_bool(0.4) {
                w.push(rng.random_range(0..4).to_string());
            }
            w
        }
        17 => vec![if rng.random_bool(0.5) { "ZRANK" } else { "ZREVRANK" }.into(), k, zmember(rng)],
        18 => vec!["ZCOUNT".into(), k, zbound(rng), zbound(rng)],
        19 => vec!["DEL".into(), k],
        _ => vec!["PEXPIRE".into(), k, rng.random_range(1..3_000).to_string()],
    }
}

/// A list element: a few values, so that LREM and LINSERT find them.
fn element(rng: &mut ChaCha8Rng) -> String {
    ["a", "b", "c", "x", "1"][rng.random_range(0..5)].to_string()
}

/// A push of one to three elements at either end.
fn push(rng: &mut ChaCha8Rng, k: String) -> Vec<String> {
    let mut w = vec![if rng.random_bool(0.5) { "LPUSH" } else { "RPUSH" }.into(), k, element(rng)];
    while rng.random_bool(0.35) && w.len() < 5 {
        w.push(element(rng));
    }
    w
}

/// A pop at either end, with a count or without.
fn pop(rng: &mut ChaCha8Rng, k: String) -> Vec<String> {
    let mut w = vec![if rng.random_bool(0.5) { "LPOP" } else { "RPOP" }.into(), k];
    if rng.random_bool(0.3) {
        w.push(rng.random_range(0..4).to_string());
    }
    w
}

/// One list command on `k`.
fn list_command(rng: &mut ChaCha8Rng, k: String) -> Vec<String> {
    match rng.random_range(0..18) {
        0..=3 => push(rng, k),
        4 => vec![if rng.random_bool(0.5) { "LPUSHX" } else { "RPUSHX" }.into(), k, element(rng)],
        5..=6 => pop(rng, k),
        7 => vec!["LLEN".into(), k],
        8 => vec!["LINDEX".into(), k, rng.random_range(-3..4).to_string()],
        9..=10 => vec!["LRANGE".into(), k, rng.random_range(-4..4).to_string(), rng.random_range(-4..4).to_string()],
        11 => vec!["LSET".into(), k, rng.random_range(-3..4).to_string(), element(rng)],
        12 => vec!["LINSERT".into(), k, if rng.random_bool(0.5) { "BEFORE" } else { "AFTER" }.into(), element(rng), element(rng)],
        13 => vec!["LREM".into(), k, rng.random_range(-2..3).to_string(), element(rng)],
        14 => vec!["LTRIM".into(), k, rng.random_range(-3..3).to_string(), rng.random_range(-3..6).to_string()],
        15 => vec!["DEL".into(), k],
        16 => vec!["PEXPIRE".into(), k, rng.random_range(1..3_000).to_string()],
        _ => push(rng, k),
    }
}

/// One random command line. `base_ms` approximates node-local time, for absolute TTLs.
/// About one in eight is a hash command, on the same keys as the strings (so that
/// WRONGTYPE, overwrites and TTLs of hashes are exercised); of the rest about one in
/// ten a sorted set command and one in ten a list command, and one in six a set
/// command, each mostly on keys of its own ([`ZSET_KEYS`], [`LIST_KEYS`], [`SET_KEYS`]).
pub fn command(rng: &mut ChaCha8Rng, base_ms: u64) -> Vec<Bytes> {
    let k = key(rng);
    let own_key = |rng: &mut ChaCha8Rng, keys: &[&str], k: String| {
        if rng.random_bool(0.7) { keys[rng.random_range(0..keys.len())].to_string() } else { k }
    };
    if rng.random_range(0..8) == 0 {
        return hash_command(rng, k).into_iter().map(Bytes::from).collect();
    }
    match rng.random_range(0..10) {
        0 => {
            let k = own_key(rng, &ZSET_KEYS, k);
            return zset_command(rng, k).into_iter().map(Bytes::from).collect();
        }
        1 => {
            let k = own_key(rng, &LIST_KEYS, k);
            return list_command(rng, k).into_iter().map(Bytes::from).collect();
        }
        _ => {}
    }
    if rng.random_range(0..6) == 0 {
        let k = own_key(rng, &SET_KEYS, k);
        return set_command(rng, k).into_iter().map(Bytes::from).collect();
    }
    let words: Vec<String> = match rng.random_range(0..100) {
        0..=14 => {
            let mut w = vec!["SET".into(), k, value(rng)];
            w.extend(ttl_option(rng, base_ms));
            match rng.random_range(0..8) {
                0 => w.push("NX".into()),
                1 => w.push("XX".into()),
                2 => w.push("GET".into()),
                _ => {}
            }
            w
        }
        15..=29 => vec!["GET".into(), k],
        30..=37 => vec!["INCRBY".into(), k, rng.random_range(-5..6).to_string()],
        38..=40 => vec!["INCR".into(), k],
        41..=44 => vec!["INCRBYFLOAT".into(), k, format!("{}", rng.random_range(-4..5) as f64 * 0.5)],
        45..=47 => vec!["APPEND".into(), k, format!("x{}", rng.random_range(0..3))],
        48..=49 => vec!["SETRANGE".into(), k, rng.random_range(0..6).to_string(), "zz".into()],
        50..=51 => vec!["GETRANGE".into(), k, rng.random_range(-4..4).to_string(), rng.random_range(-4..4).to_string()],
        52..=53 => vec!["STRLEN".into(), k],
        54..=58 => {
            let mut w = vec!["DEL".into(), k];
            if rng.random_bool(0.3) {
                w.push(key(rng));
            }
            w
        }
        59..=60 => vec!["EXISTS".into(), k, key(rng)],
        61..=66 => {
            let (name, amount) = match rng.random_range(0..3) {
                0 => ("EXPIRE", rng.random_range(-1..4).to_string()),
                1 => ("PEXPIRE", rng.random_range(1..3_000).to_string()),
                _ => ("PEXPIREAT", (base_ms + rng.random_range(0..4_000)).to_string()),
            };
            let mut w = vec![name.into(), k, amount];
            match rng.random_range(0..6) {
                0 => w.push("NX".into()),
                1 => w.push("XX".into()),
                2 => w.push("GT".into()),
                3 => w.push("LT".into()),
                _ => {}
            }
            w
        }
        67..=69 => vec!["PERSIST".into(), k],
        70..=74 => vec!["PTTL".into(), k],
        75..=76 => vec!["TTL".into(), k],
        77 => vec!["PEXPIRETIME".into(), k],
        78..=79 => vec!["GETDEL".into(), k],
        80..=81 => {
            let mut w = vec!["GETEX".into(), k];
            match rng.random_range(0..3) {
                0 => w.push("PERSIST".into()),
                1 => w.extend(["PX".into(), rng.random_range(1..3_000).to_string()]),
                _ => {}
            }
            w
        }
        82..=85 => vec!["MGET".into(), k, key(rng), key(rng)],
        86..=88 => vec!["MSET".into(), k, value(rng), key(rng), value(rng)],
        89..=90 => vec!["TYPE".into(), k],
        91..=92 => vec!["DBSIZE".into()],
        93..=94 => vec!["SETNX".into(), k, value(rng)],
        95..=96 => vec!["GETSET".into(), k, value(rng)],
        97 => vec!["SETEX".into(), k, rng.random_range(1..3).to_string(), value(rng)],
        98 => vec!["DECRBY".into(), k, rng.random_range(-3..4).to_string()],
        _ => vec!["INCRBY".into(), k, "x".into()],
    };
    words.into_iter().map(Bytes::from).collect()
}

/// Any key of the single-node workload, whatever its type (what `--dumps` runs DUMP
/// and RESTORE to).
pub fn any_key(rng: &mut ChaCha8Rng) -> String {
    let all: Vec<&str> = KEYS.iter().chain(&SET_KEYS).chain(&ZSET_KEYS).chain(&LIST_KEYS).copied().collect();
    all[rng.random_range(0..all.len())].to_string()
}

/// How a simulated transaction treats WATCH (see [`transaction`]).
pub const WATCH_NONE: &str = "none";
/// Watch the first command's key just before EXEC: EXEC must run.
pub const WATCH_CURRENT: &str = "current";
/// Watch it with a token it does not have (as if another client wrote it): EXEC must
/// run nothing and answer a null array.
pub const WATCH_STALE: &str = "stale";
/// Separates the commands of a simulated transaction.
pub const TRANSACTION_SEPARATOR: &str = ";";

/// A transaction as the shell sends MULTI ... EXEC on one shard (one
/// `ShardOp::Transaction`): 1 to 4 single-key commands from the usual mix, on `{t}`
/// keys, written `EXEC <watch> cmd ; cmd ...` for the simulator (`Sim::execute`).
pub fn transaction(rng: &mut ChaCha8Rng, base_ms: u64) -> Vec<Bytes> {
    const ATTEMPTS_MAX: usize = 64;
    let watch = match rng.random_range(0..10) {
        0..=6 => WATCH_NONE,
        7..=8 => WATCH_CURRENT,
        _ => WATCH_STALE,
    };
    let mut args: Vec<Bytes> = vec![Bytes::from_static(b"EXEC"), Bytes::from_static(watch.as_bytes())];
    let wanted = rng.random_range(1..=4);
    let mut made = 0;
    for _ in 0..ATTEMPTS_MAX {
        if made == wanted {
            break;
        }
        let mut cmd = command(rng, base_ms);
        if cmd.len() < 2 {
            continue;
        }
        cmd[1] = Bytes::from(tagged_key(rng));
        if !matches!(meridian::command::parse_command(cmd.clone()), Ok(meridian::command::Command::Key(_))) {
            continue;
        }
        if made > 0 {
            args.push(Bytes::from_static(TRANSACTION_SEPARATOR.as_bytes()));
        }
        args.extend(cmd);
        made += 1;
    }
    args
}

/// Keys that replicated runs use for hashes only; their converged fields are checked
/// by `oracle_collections.rs`.
pub const HASH_KEYS: [&str; 3] = ["h1", "h2", "{t}h"];
/// Keys that replicated runs use for sets only (two share a tag, for SMOVE and the
/// STORE forms); checked by `oracle_collections.rs`.
pub const REPLICATED_SET_KEYS: [&str; 3] = ["s1", "{t}s1", "{t}s2"];

/// Keys that replicated runs use for sorted sets only; checked by
/// `oracle_collections.rs`.
pub const REPLICATED_ZSET_KEYS: [&str; 2] = ["z1", "{t}z1"];
/// Keys that replicated runs use for lists only; checked by `oracle_collections.rs`
/// (membership, values) and `oracle_lists.rs` (order).
pub const REPLICATED_LIST_KEYS: [&str; 2] = ["l1", "{t}l1"];

/// Whether a replicated run keeps `key` for a collection (its own oracle).
pub fn is_collection_key(key: &[u8]) -> bool {
    HASH_KEYS.iter().chain(&REPLICATED_SET_KEYS).chain(&REPLICATED_ZSET_KEYS).chain(&REPLICATED_LIST_KEYS).any(|k| k.as_bytes() == key)
}

/// Whether a replicated run keeps `key` for a list.
pub fn is_list_key(key: &[u8]) -> bool {
    REPLICATED_LIST_KEYS.iter().any(|k| k.as_bytes() == key)
}

/// One sorted set command for replicated runs, on a [`REPLICATED_ZSET_KEYS`] key:
/// ZADD (with its flags), ZINCRBY, ZREM, the pops, DEL, a long EXPIRE, and reads.
fn replicated_zset_command(rng: &mut ChaCha8Rng) -> Vec<String> {
    let k = REPLICATED_ZSET_KEYS[rng.random_range(0..REPLICATED_ZSET_KEYS.len())].to_string();
    match rng.random_range(0..20) {
        0..=5 => {
            let (mut w, incr) = zadd_head(rng, k, &["NX", "XX", "GT", "LT", "CH", "INCR"]);
            w.extend([zscore(rng), zmember(rng)]);
            if !incr && rng.random_bool(0.4) {
                w.extend([zscore(rng), zmember(rng)]);
            }
            w
        }
        6..=9 => vec!["ZINCRBY".into(), k, zscore(rng), zmember(rng)],
        10..=11 => vec!["ZREM".into(), k, zmember(rng)],
        12 => {
            let name = if rng.random_bool(0.5) { "ZPOPMIN" } else { "ZPOPMAX" };
            let mut w = vec![name.into(), k];
            if rng.random_bool(0.3) {
                w.push(rng.random_range(1..3).to_string());
            }
            w
        }
        13 => vec!["DEL".into(), k],
        14 => vec!["EXPIRE".into(), k, rng.random_range(500..1_000).to_string()],
        15 => vec!["ZSCORE".into(), k, zmember(rng)],
        16 => vec!["ZCARD".into(), k],
        17 => vec!["ZRANGEBYSCORE".into(), k, zbound(rng), zbound(rng), "WITHSCORES".into()],
        _ => vec!["ZRANGE".into(), k, "0".into(), "-1".into(), "WITHSCORES".into()],
    }
}

/// One list command for replicated runs, on a [`REPLICATED_LIST_KEYS`] key: pushes at
/// both ends, pops, LSET, LINSERT, LREM, short LTRIMs, DEL, a long EXPIRE, and reads.
fn replicated_list_command(rng: &mut ChaCha8Rng) -> Vec<String> {
    let k = REPLICATED_LIST_KEYS[rng.random_range(0..REPLICATED_LIST_KEYS.len())].to_string();
    match rng.random_range(0..22) {
        0..=6 => push(rng, k),
        7..=9 => pop(rng, k),
        10..=11 => vec!["LSET".into(), k, rng.random_range(-3..4).to_string(), element(rng)],
        12..=13 => vec!["LINSERT".into(), k, if rng.random_bool(0.5) { "BEFORE" } else { "AFTER" }.into(), element(rng), element(rng)],
        14 => vec!["LREM".into(), k, rng.random_range(-2..3).to_string(), element(rng)],
        15 => vec!["LTRIM".into(), k, rng.random_range(0..2).to_string(), rng.random_range(-2..12).to_string()],
        16 => vec!["DEL".into(), k],
        17 => vec!["EXPIRE".into(), k, rng.random_range(500..1_000).to_string()],
        18 => vec!["LLEN".into(), k],
        19 => vec!["LINDEX".into(), k, rng.random_range(-3..4).to_string()],
        _ => vec!["LRANGE".into(), k, "0".into(), "-1".into()],
    }
}

/// One set command for replicated runs, on a [`REPLICATED_SET_KEYS`] key: writes and
/// reads, SMOVE and the STORE forms between the two tagged keys. No TTL fires.
fn replicated_set_command(rng: &mut ChaCha8Rng) -> Vec<String> {
    let k = REPLICATED_SET_KEYS[rng.random_range(0..REPLICATED_SET_KEYS.len())].to_string();
    let (a, b) = if rng.random_bool(0.5) { ("{t}s1", "{t}s2") } else { ("{t}s2", "{t}s1") };
    let mut w: Vec<String> = match rng.random_range(0..20) {
        0..=6 => vec!["SADD".into(), k],
        7..=9 => vec!["SREM".into(), k],
        10 => vec!["SPOP".into(), k],
        11 => vec!["SPOP".into(), k, rng.random_range(1..3).to_string()],
        12..=13 => vec!["SMOVE".into(), a.into(), b.into(), member(rng)],
        14 => {
            let name = ["SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"][rng.random_range(0..3)];
            vec![name.into(), a.into(), a.into(), b.into()]
        }
        15 => vec!["DEL".into(), k],
        16 => vec!["EXPIRE".into(), k, rng.random_range(500..1_000).to_string()],
        17 => vec!["SMEMBERS".into(), k],
        18 => vec!["SCARD".into(), k],
        _ => vec!["SISMEMBER".into(), k, member(rng)],
    };
    if matches!(w[0].as_str(), "SADD" | "SREM") {
        members(rng, &mut w);
    }
    w
}

/// One random command for replication runs: about one in ten a sorted set command and
/// one in ten a list command on their keys; of the rest, the writes whose converged
/// result the oracle knows (SET, INCRBY, DEL, EXPIRE, PERSIST, MSET) and reads, about
/// one in ten a set command on a set key, and about one in eight of the rest a hash command (or a
/// DEL or EXPIRE) on a hash key. TTLs are long, so none
/// fires during a run: concurrent expiry is covered by the single-node runs.
pub fn replicated_command(rng: &mut ChaCha8Rng) -> Vec<Bytes> {
    match rng.random_range(0..10) {
        0 => return replicated_zset_command(rng).into_iter().map(Bytes::from).collect(),
        1 => return replicated_list_command(rng).into_iter().map(Bytes::from).collect(),
        _ => {}
    }
    if rng.random_range(0..10) == 0 {
        return replicated_set_command(rng).into_iter().map(Bytes::from).collect();
    }
    if rng.random_range(0..8) == 0 {
        let k = HASH_KEYS[rng.random_range(0..HASH_KEYS.len())].to_string();
        let words = match rng.random_range(0..10) {
            0 => vec!["DEL".into(), k],
            1 => vec!["EXPIRE".into(), k, rng.random_range(500..1_000).to_string()],
            _ => hash_command(rng, k),
        };
        return words.into_iter().map(Bytes::from).collect();
    }
    let k = key(rng);
    let words: Vec<String> = match rng.random_range(0..100) {
        0..=34 => {
            let mut w = vec!["SET".into(), k, value(rng)];
            match rng.random_range(0..6) {
                0 => w.extend(["EX".into(), rng.random_range(500..1_000).to_string()]),
                1 => w.push("KEEPTTL".into()),
                _ => {}
            }
            match rng.random_range(0..8) {
                0 => w.push("NX".into()),
                1 => w.push("XX".into()),
                _ => {}
            }
            w
        }
        35..=44 => vec!["GET".into(), k],
        45..=62 => vec!["INCRBY".into(), k, rng.random_range(-5..6).to_string()],
        63..=66 => vec!["INCR".into(), k],
        67..=69 => vec!["DECRBY".into(), k, rng.random_range(-3..4).to_string()],
        70..=79 => vec!["DEL".into(), k],
        80..=84 => vec!["EXPIRE".into(), k, if rng.random_bool(0.2) { "-1".into() } else { rng.random_range(500..1_000).to_string() }],
        85..=87 => vec!["PERSIST".into(), k],
        88..=92 => vec!["MSET".into(), k, value(rng), key(rng), value(rng)],
        93..=96 => vec!["MGET".into(), k, key(rng)],
        _ => vec!["DBSIZE".into()],
    };
    words.into_iter().map(Bytes::from).collect()
}

/// One RENAME, RENAMENX or COPY between two string keys that share a hash tag (so one
/// shard runs it whole), either way round, or a SET with a TTL of one of them
/// (`--renames`).
pub fn rename_command(rng: &mut ChaCha8Rng) -> Vec<Bytes> {
    // Half on keys of the string workload (renames meet increments, DELs and SETs
    // from every region), half on two keys only this command writes (a TTL survives
    // there until a rename shows what it does with it).
    let (a, b) = if rng.random_bool(0.5) { ("{t}x", "{t}y") } else { ("{r}a", "{r}b") };
    let (src, dst) = if rng.random_bool(0.5) { (a, b) } else { (b, a) };
    let words: Vec<String> = match rng.random_range(0..10) {
        // A source with a TTL, so that what a rename does with it shows.
        0..=2 => vec!["SET".into(), src.into(), value(rng), "EX".into(), rng.random_range(500..1_000).to_string()],
        3..=5 => vec!["RENAME".into(), src.into(), dst.into()],
        6 => vec!["RENAMENX".into(), src.into(), dst.into()],
        7 | 8 => vec!["COPY".into(), src.into(), dst.into(), "REPLACE".into()],
        _ => vec!["COPY".into(), src.into(), dst.into()],
    };
    words.into_iter().map(Bytes::from).collect()
}
