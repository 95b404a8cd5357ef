//! Sorted set commands (ZADD family): their typed form and their parser, with Redis
//! 7.0's argument checks, in Redis's order, and its error texts. Executing them is the
//! key-value engine's job (`engine::kv::zsets`); the multi-key ones (ZUNION, ZINTER,
//! ZDIFF and their STORE forms, ZINTERCARD, ZRANGESTORE, ZMPOP) are
//! [`super::MultiKeyCommand::Zset`]s, run by the shell's fan-out when their keys live on
//! several shards.

use bytes::Bytes;

use super::errors::{self, wrong_arity};
use super::hash::{ElementScan, parse_element_scan};
use super::numbers::{parse_f64, parse_i64, parse_range_f64};
use super::table::CmdId;
use super::{Command, KeyCommand, MultiKeyCommand};
use crate::engine::kv::score_order::{LexBound, ScoreBound};
use crate::protocol::Frame;

/// ZADD's options.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct ZAddFlags {
    pub nx: bool,
    pub xx: bool,
    pub gt: bool,
    pub lt: bool,
    /// Count changed members too, not only added ones.
    pub ch: bool,
    /// Add the score to the member's (ZINCRBY) and reply with the new score.
    pub incr: bool,
}

/// Which members a range names.
#[derive(Clone, Debug, PartialEq)]
pub enum ZRange {
    /// By 0-based rank, negatives from the end (`start`, `stop`).
    Rank(i64, i64),
    /// By score (`min`, `max`, each end maybe exclusive).
    Score(ScoreBound, ScoreBound),
    /// By member (`min`, `max`), for members of equal score. Boxed: two bounds holding
    /// bytes would make every command and shard operation 40 bytes bigger, and those
    /// are moved several times on each command's way to its shard.
    Lex(Box<(LexBound, LexBound)>),
}

/// A range query's full form (ZRANGE and every legacy range command).
#[derive(Clone, Debug, PartialEq)]
pub struct ZRangeQuery {
    pub range: ZRange,
    /// Highest first (ZREVRANGE, `REV`): for score and member ranges `min` and `max`
    /// are already in their places.
    pub rev: bool,
    /// `LIMIT offset count`: a negative count means all; a negative offset, nothing.
    pub limit: Option<(i64, i64)>,
    pub with_scores: bool,
}

/// A command on one sorted set key.
#[derive(Clone, Debug, PartialEq)]
pub enum ZsetCommand {
    Add {
        key: Bytes,
        flags: ZAddFlags,
        pairs: Vec<(f64, Bytes)>,
    },
    IncrBy {
        key: Bytes,
        by: f64,
        member: Bytes,
    },
    Rem {
        key: Bytes,
        members: Vec<Bytes>,
    },
    Score {
        key: Bytes,
        member: Bytes,
    },
    MScore {
        key: Bytes,
        members: Vec<Bytes>,
    },
    Card(Bytes),
    Count {
        key: Bytes,
        min: ScoreBound,
        max: ScoreBound,
    },
    /// `min` and `max`, boxed as in [`ZRange::Lex`].
    LexCount {
        key: Bytes,
        bounds: Box<(LexBound, LexBound)>,
    },
    Range {
        key: Bytes,
        query: ZRangeQuery,
    },
    Rank {
        key: Bytes,
        member: Bytes,
        rev: bool,
    },
    /// ZPOPMIN/ZPOPMAX: no count answers one member flat; a count answers pairs.
    Pop {
        key: Bytes,
        max: bool,
        count: Option<u64>,
    },
    RandMember {
        key: Bytes,
        count: Option<i64>,
        with_scores: bool,
    },
    RemRange {
        key: Bytes,
        range: ZRange,
    },
    Scan {
        key: Bytes,
        scan: ElementScan,
    },
    /// A GEO read (GEOPOS, GEODIST, GEOHASH, GEOSEARCH, GEORADIUS...): boxed, as
    /// [`ZRange::Lex`] is, to keep every command small.
    Geo(Box<super::geo::GeoQuery>),
}

impl ZsetCommand {
    pub fn key(&self) -> &Bytes {
        match self {
            ZsetCommand::Card(key) => key,
            ZsetCommand::Add { key, .. }
            | ZsetCommand::IncrBy { key, .. }
            | ZsetCommand::Rem { key, .. }
            | ZsetCommand::Score { key, .. }
            | ZsetCommand::MScore { key, .. }
            | ZsetCommand::Count { key, .. }
            | ZsetCommand::LexCount { key, .. }
            | ZsetCommand::Range { key, .. }
            | ZsetCommand::Rank { key, .. }
            | ZsetCommand::Pop { key, .. }
            | ZsetCommand::RandMember { key, .. }
            | ZsetCommand::RemRange { key, .. }
            | ZsetCommand::Scan { key, .. } => key,
            ZsetCommand::Geo(query) => query.key(),
        }
    }

    pub fn is_write(&self) -> bool {
        matches!(
            self,
            ZsetCommand::Add { .. }
                | ZsetCommand::IncrBy { .. }
                | ZsetCommand::Rem { .. }
                | ZsetCommand::Pop { .. }
                | ZsetCommand::RemRange { .. }
        )
    }
}

/// Which algebra a multi-key sorted set command computes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ZAlgebra {
    Union,
    Inter,
    Diff,
}

/// How ZUNION and ZINTER combine the scores of a member found in several inputs.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Aggregate {
    #[default]
    Sum,
    Min,
    Max,
}

/// What a multi-key sorted set command does with its result.
#[derive(Clone, Debug, PartialEq)]
pub enum ZOutput {
    /// Reply with the members (and scores) in score order.
    Reply { with_scores: bool },
    /// Replace this key with them and reply with their count.
    Store(Bytes),
    /// Reply with their count, stopping at this limit if not 0 (ZINTERCARD).
    Count { limit: u64 },
    /// The options after the keys were refused with this error, which is the reply once
    /// every input key's type has been checked: Redis reads the inputs before their
    /// options, so a key of another type answers WRONGTYPE first.
    Refused(Frame),
}

/// The multi-key sorted set commands.
#[derive(Clone, Debug, PartialEq)]
pub enum ZsetMulti {
    /// ZUNION, ZINTER, ZDIFF, their STORE forms and ZINTERCARD (inputs may be sets,
    /// whose members score 1).
    Algebra { op: ZAlgebra, keys: Vec<Bytes>, weights: Option<Vec<f64>>, aggregate: Aggregate, output: ZOutput },
    /// ZRANGESTORE (the query boxed, as in [`ZRange::Lex`]).
    RangeStore { dst: Bytes, src: Bytes, query: Box<ZRangeQuery> },
    /// ZMPOP: pop from the first of `keys` that holds members.
    MPop { keys: Vec<Bytes>, max: bool, count: u64 },
    /// GEOSEARCHSTORE, GEORADIUS[BYMEMBER] ... STORE/STOREDIST.
    GeoStore { search: Box<super::geo::GeoSearch>, store: super::geo::GeoStore },
}

impl ZsetMulti {
    /// Every key the command reads or writes, destination included.
    pub fn keys(&self) -> Vec<&Bytes> {
        match self {
            ZsetMulti::Algebra { keys, output, .. } => {
                let mut all: Vec<&Bytes> = keys.iter().collect();
                if let ZOutput::Store(dst) = output {
                    all.push(dst);
                }
                all
            }
            ZsetMulti::RangeStore { dst, src, .. } => vec![src, dst],
            ZsetMulti::MPop { keys, .. } => keys.iter().collect(),
            ZsetMulti::GeoStore { search, store } => vec![&search.key, &store.dst],
        }
    }

    pub fn is_write(&self) -> bool {
        !matches!(self, ZsetMulti::Algebra { output: ZOutput::Reply { .. } | ZOutput::Count { .. } | ZOutput::Refused(_), .. })
    }
}

const MIN_MAX_NOT_FLOAT: &str = "ERR min or max is not a float";
const MIN_MAX_NOT_LEX: &str = "ERR min or max not valid string range item";

fn take(args: &mut [Bytes], i: usize) -> Bytes {
    std::mem::take(&mut args[i])
}

fn rest(a: &mut [Bytes], from: usize) -> Vec<Bytes> {
    a[from..].iter_mut().map(std::mem::take).collect()
}

fn int(arg: &[u8]) -> Result<i64, Frame> {
    parse_i64(arg).ok_or_else(|| errors::error(errors::NOT_INTEGER))
}

fn float(arg: &[u8]) -> Result<f64, Frame> {
    parse_f64(arg).ok_or_else(|| errors::error(errors::NOT_FLOAT))
}

fn eq(arg: &[u8], word: &str) -> bool {
    arg.eq_ignore_ascii_case(word.as_bytes())
}

/// One end of a score range: a float, `(` before it for an exclusive end, read as
/// Redis's `zslParseRange` reads it (`parse_range_f64`: so `(` alone is an exclusive 0).
pub fn parse_score_bound(arg: &[u8]) -> Result<ScoreBound, Frame> {
    let (exclusive, text) = match arg.first() {
        Some(b'(') => (true, &arg[1..]),
        _ => (false, arg),
    };
    match parse_range_f64(text) {
        Some(value) => Ok(ScoreBound { value, exclusive }),
        None => Err(Frame::static_error(MIN_MAX_NOT_FLOAT)),
    }
}

/// One end of a member range: `-`, `+`, or `[`/`(` before a member.
pub fn parse_lex_bound(arg: &Bytes) -> Result<LexBound, Frame> {
    match arg.first() {
        Some(b'-') if arg.len() == 1 => Ok(LexBound::Min),
        Some(b'+') if arg.len() == 1 => Ok(LexBound::Max),
        Some(b'[') => Ok(LexBound::Inclusive(arg.slice(1..))),
        Some(b'(') => Ok(LexBound::Exclusive(arg.slice(1..))),
        _ => Err(Frame::static_error(MIN_MAX_NOT_LEX)),
    }
}

/// Which range kind a range command fixes, if it fixes one.
#[derive(Copy, Clone, PartialEq, Eq)]
enum RangeKind {
    Auto,
    Rank,
    Score,
    Lex,
}

/// The range query of `a[first..]` (`min max [options]`), as Redis's
/// `zrangeGenericCommand` reads it. `kind` and `rev` are fixed by the legacy commands;
/// `store` (ZRANGESTORE) refuses WITHSCORES.
fn parse_range_query(a: &[Bytes], first: usize, kind: RangeKind, rev: Option<bool>, store: bool) -> Result<ZRangeQuery, Frame> {
    let mut kind = kind;
    let mut rev = rev;
    let mut limit = None;
    let mut with_scores = false;
    let mut j = first + 2;
    while j < a.len() {
        let left = a.len() - j - 1;
        if !store && eq(&a[j], "withscores") {
            with_scores = true;
        } else if eq(&a[j], "limit") && left >= 2 {
            limit = Some((int(&a[j + 1])?, int(&a[j + 2])?));
            j += 2;
        } else if rev.is_none() && eq(&a[j], "rev") {
            rev = Some(true);
        } else if kind == RangeKind::Auto && eq(&a[j], "bylex") {
            kind = RangeKind::Lex;
        } else if kind == RangeKind::Auto && eq(&a[j], "byscore") {
            kind = RangeKind::Score;
        } else {
            return Err(errors::error(errors::SYNTAX));
        }
        j += 1;
    }
    let rev = rev.unwrap_or(false);
    if kind == RangeKind::Auto {
        kind = RangeKind::Rank;
    }
    // Redis checks the count it parsed, not whether LIMIT was given: `LIMIT 0 -1` passes.
    if kind == RangeKind::Rank && limit.is_some_and(|(_, count)| count != -1) {
        return Err(Frame::static_error("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"));
    }
    if kind == RangeKind::Lex && with_scores {
        return Err(Frame::static_error("ERR syntax error, WITHSCORES not supported in combination with BYLEX"));
    }
    let (low, high) = if rev && kind != RangeKind::Rank { (&a[first + 1], &a[first]) } else { (&a[first], &a[first + 1]) };
    let range = match kind {
        RangeKind::Score => ZRange::Score(parse_score_bound(low)?, parse_score_bound(high)?),
        RangeKind::Lex => ZRange::Lex(Box::new((parse_lex_bound(low)?, parse_lex_bound(high)?))),
        _ => ZRange::Rank(int(low)?, int(high)?),
    };
    let limit = if kind == RangeKind::Rank { None } else { limit };
    Ok(ZRangeQuery { range, rev, limit, with_scores })
}

/// Parse a sorted set command whose arity the caller has checked against the table.
pub fn parse(id: CmdId, name: &'static str, a: &mut [Bytes]) -> Result<Command, Frame> {
    let zset = |cmd: ZsetCommand| Ok(Command::Key(KeyCommand::Zset(cmd)));
    let multi = |cmd: ZsetMulti| Ok(Command::Multi(MultiKeyCommand::Zset(cmd)));
    match id {
        CmdId::ZAdd => parse_zadd(a),
        CmdId::ZIncrBy => {
            let by = float(&a[2])?;
            zset(ZsetCommand::IncrBy { key: take(a, 1), by, member: take(a, 3) })
        }
        CmdId::ZRem => zset(ZsetCommand::Rem { key: take(a, 1), members: rest(a, 2) }),
        CmdId::ZScore => zset(ZsetCommand::Score { key: take(a, 1), member: take(a, 2) }),
        CmdId::ZMScore => zset(ZsetCommand::MScore { key: take(a, 1), members: rest(a, 2) }),
        CmdId::ZCard => zset(ZsetCommand::Card(take(a, 1))),
        CmdId::ZCount => {
            let (min, max) = (parse_score_bound(&a[2])?, parse_score_bound(&a[3])?);
            zset(ZsetCommand::Count { key: take(a, 1), min, max })
        }
        CmdId::ZLexCount => {
            let bounds = Box::new((parse_lex_bound(&a[2])?, parse_lex_bound(&a[3])?));
            zset(ZsetCommand::LexCount { key: take(a, 1), bounds })
        }
        CmdId::ZRange | CmdId::ZRevRange | CmdId::ZRangeByScore | CmdId::ZRevRangeByScore | CmdId::ZRangeByLex | CmdId::ZRevRangeByLex => {
            let (kind, rev) = match id {
                CmdId::ZRange => (RangeKind::Auto, None),
                CmdId::ZRevRange => (RangeKind::Rank, Some(true)),
                CmdId::ZRangeByScore => (RangeKind::Score, Some(false)),
                CmdId::ZRevRangeByScore => (RangeKind::Score, Some(true)),
                CmdId::ZRangeByLex => (RangeKind::Lex, Some(false)),
                _ => (RangeKind::Lex, Some(true)),
            };
            let query = parse_range_query(a, 2, kind, rev, false)?;
            zset(ZsetCommand::Range { key: take(a, 1), query })
        }
        CmdId::ZRangeStore => {
            let query = parse_range_query(a, 3, RangeKind::Auto, None, true)?;
            multi(ZsetMulti::RangeStore { dst: take(a, 1), src: take(a, 2), query: Box::new(query) })
        }
        CmdId::ZRank | CmdId::ZRevRank => zset(ZsetCommand::Rank { key: take(a, 1), member: take(a, 2), rev: id == CmdId::ZRevRank }),
        CmdId::ZPopMin | CmdId::ZPopMax => {
            let count = match a.len() {
                2 => None,
                3 => match parse_i64(&a[2]) {
                    Some(n) if n >= 0 => Some(n as u64),
                    _ => return Err(Frame::static_error("ERR value is out of range, must be positive")),
                },
                _ => return Err(errors::error(errors::SYNTAX)),
            };
            zset(ZsetCommand::Pop { key: take(a, 1), max: id == CmdId::ZPopMax, count })
        }
        CmdId::ZRandMember => {
            let (count, with_scores) = super::hash::parse_random_count(a, "withscores")?;
            zset(ZsetCommand::RandMember { key: take(a, 1), count, with_scores })
        }
        CmdId::ZRemRangeByRank => {
            let range = ZRange::Rank(int(&a[2])?, int(&a[3])?);
            zset(ZsetCommand::RemRange { key: take(a, 1), range })
        }
        CmdId::ZRemRangeByScore => {
            let range = ZRange::Score(parse_score_bound(&a[2])?, parse_score_bound(&a[3])?);
            zset(ZsetCommand::RemRange { key: take(a, 1), range })
        }
        CmdId::ZRemRangeByLex => {
            let range = ZRange::Lex(Box::new((parse_lex_bound(&a[2])?, parse_lex_bound(&a[3])?)));
            zset(ZsetCommand::RemRange { key: take(a, 1), range })
        }
        CmdId::ZScan => {
            let scan = parse_element_scan(a)?;
            zset(ZsetCommand::Scan { key: take(a, 1), scan })
        }
        CmdId::ZUnion | CmdId::ZInter | CmdId::ZDiff | CmdId::ZUnionStore | CmdId::ZInterStore | CmdId::ZDiffStore => {
            multi(parse_algebra(id, name, a)?)
        }
        CmdId::ZInterCard => multi(parse_intercard(a)?),
        CmdId::ZMPop => multi(parse_mpop(a)?),
        _ => Err(wrong_arity(name)),
    }
}

/// `ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...]`.
fn parse_zadd(a: &mut [Bytes]) -> Result<Command, Frame> {
    let mut flags = ZAddFlags::default();
    let mut i = 2;
    while i < a.len() {
        let arg = &a[i];
        if eq(arg, "nx") {
            flags.nx = true;
        } else if eq(arg, "xx") {
            flags.xx = true;
        } else if eq(arg, "gt") {
            flags.gt = true;
        } else if eq(arg, "lt") {
            flags.lt = true;
        } else if eq(arg, "ch") {
            flags.ch = true;
        } else if eq(arg, "incr") {
            flags.incr = true;
        } else {
            break;
        }
        i += 1;
    }
    let elements = a.len() - i;
    if elements == 0 || !elements.is_multiple_of(2) {
        return Err(errors::error(errors::SYNTAX));
    }
    if flags.nx && flags.xx {
        return Err(Frame::static_error("ERR XX and NX options at the same time are not compatible"));
    }
    if ((flags.gt || flags.lt) && flags.nx) || (flags.gt && flags.lt) {
        return Err(Frame::static_error("ERR GT, LT, and/or NX options at the same time are not compatible"));
    }
    if flags.incr && elements > 2 {
        return Err(Frame::static_error("ERR INCR option supports a single increment-element pair"));
    }
    let mut pairs = Vec::with_capacity(elements / 2);
    for j in (i..a.len()).step_by(2) {
        pairs.push((float(&a[j])?, std::mem::take(&mut a[j + 1])));
    }
    Ok(Command::Key(KeyCommand::Zset(ZsetCommand::Add { key: take(a, 1), flags, pairs })))
}

/// `numkeys key [key ...]` at `a[at]`: the keys, and the index after them. `name` is
/// the command's, for Redis's error text.
fn parse_numkeys(a: &[Bytes], at: usize, name: &str) -> Result<(usize, usize), Frame> {
    let numkeys = int(&a[at])?;
    if numkeys < 1 {
        return Err(Frame::error(format!("ERR at least 1 input key is needed for '{name}' command")));
    }
    if numkeys as u64 > (a.len() - at - 1) as u64 {
        return Err(errors::error(errors::SYNTAX));
    }
    Ok((numkeys as usize, at + 1 + numkeys as usize))
}

/// ZUNION/ZINTER/ZDIFF and their STORE forms: `[dst] numkeys key... [WEIGHTS w...]
/// [AGGREGATE SUM|MIN|MAX] [WITHSCORES]` (ZDIFF takes neither WEIGHTS nor AGGREGATE,
/// the STORE forms no WITHSCORES).
fn parse_algebra(id: CmdId, name: &str, a: &mut [Bytes]) -> Result<ZsetMulti, Frame> {
    let store = matches!(id, CmdId::ZUnionStore | CmdId::ZInterStore | CmdId::ZDiffStore);
    let op = match id {
        CmdId::ZUnion | CmdId::ZUnionStore => ZAlgebra::Union,
        CmdId::ZInter | CmdId::ZInterStore => ZAlgebra::Inter,
        _ => ZAlgebra::Diff,
    };
    let at = if store { 2 } else { 1 };
    let (numkeys, j) = parse_numkeys(a, at, name)?;
    let options = parse_algebra_options(a, j, numkeys, op, store);
    let keys = a[at + 1..at + 1 + numkeys].iter_mut().map(std::mem::take).collect();
    let (weights, aggregate, output) = match options {
        Ok((weights, aggregate, _)) if store => (weights, aggregate, ZOutput::Store(take(a, 1))),
        Ok((weights, aggregate, with_scores)) => (weights, aggregate, ZOutput::Reply { with_scores }),
        Err(refused) => (None, Aggregate::Sum, ZOutput::Refused(refused)),
    };
    Ok(ZsetMulti::Algebra { op, keys, weights, aggregate, output })
}

/// The options after an algebra's keys, from `a[j]`: weights, aggregate, WITHSCORES.
fn parse_algebra_options(
    a: &[Bytes],
    mut j: usize,
    numkeys: usize,
    op: ZAlgebra,
    store: bool,
) -> Result<(Option<Vec<f64>>, Aggregate, bool), Frame> {
    let mut weights = None;
    let mut aggregate = Aggregate::Sum;
    let mut with_scores = false;
    while j < a.len() {
        let left = a.len() - j - 1;
        if op != ZAlgebra::Diff && eq(&a[j], "weights") && left >= numkeys {
            let mut w = Vec::with_capacity(numkeys);
            for arg in &a[j + 1..j + 1 + numkeys] {
                w.push(parse_f64(arg).ok_or_else(|| Frame::static_error("ERR weight value is not a float"))?);
            }
            weights = Some(w);
            j += numkeys;
        } else if op != ZAlgebra::Diff && eq(&a[j], "aggregate") && left >= 1 {
            aggregate = match &a[j + 1] {
                arg if eq(arg, "sum") => Aggregate::Sum,
                arg if eq(arg, "min") => Aggregate::Min,
                arg if eq(arg, "max") => Aggregate::Max,
                _ => return Err(errors::error(errors::SYNTAX)),
            };
            j += 1;
        } else if !store && eq(&a[j], "withscores") {
            with_scores = true;
        } else {
            return Err(errors::error(errors::SYNTAX));
        }
        j += 1;
    }
    Ok((weights, aggregate, with_scores))
}

/// `ZINTERCARD numkeys key [key ...] [LIMIT limit]`.
fn parse_intercard(a: &mut [Bytes]) -> Result<ZsetMulti, Frame> {
    let (numkeys, j) = parse_numkeys(a, 1, "zintercard")?;
    // As Redis: the inputs' types are checked before the options are read.
    let output = match parse_intercard_limit(&a[j..]) {
        Ok(limit) => ZOutput::Count { limit },
        Err(refusal) => ZOutput::Refused(refusal),
    };
    let keys = a[2..2 + numkeys].iter_mut().map(std::mem::take).collect();
    Ok(ZsetMulti::Algebra { op: ZAlgebra::Inter, keys, weights: None, aggregate: Aggregate::Sum, output })
}

/// ZINTERCARD's `[LIMIT limit]`: the limit, 0 for none.
fn parse_intercard_limit(options: &[Bytes]) -> Result<u64, Frame> {
    let mut limit = 0;
    let mut j = 0;
    while j < options.len() {
        if eq(&options[j], "limit") && j + 1 < options.len() {
            limit = match parse_i64(&options[j + 1]) {
                Some(n) if n >= 0 => n as u64,
                _ => return Err(Frame::static_error("ERR LIMIT can't be negative")),
            };
            j += 2;
        } else {
            return Err(errors::error(errors::SYNTAX));
        }
    }
    Ok(limit)
}

/// `ZMPOP numkeys key [key ...] MIN|MAX [COUNT count]`.
fn parse_mpop(a: &mut [Bytes]) -> Result<ZsetMulti, Frame> {
    let numkeys = match parse_i64(&a[1]) {
        Some(n) if n > 0 => n as usize,
        _ => return Err(Frame::static_error("ERR numkeys should be greater than 0")),
    };
    // The keys, then MIN|MAX at least.
    if numkeys as u64 >= (a.len() - 2) as u64 {
        return Err(errors::error(errors::SYNTAX));
    }
    let mut j = 2 + numkeys;
    let max = match &a[j] {
        arg if eq(arg, "min") => false,
        arg if eq(arg, "max") => true,
        _ => return Err(errors::error(errors::SYNTAX)),
    };
    j += 1;
    let mut count = None;
    while j < a.len() {
        if count.is_none() && eq(&a[j], "count") && j + 1 < a.len() {
            count = match parse_i64(&a[j + 1]) {
                Some(n) if n > 0 => Some(n as u64),
                _ => return Err(Frame::static_error("ERR count should be greater than 0")),
            };
            j += 2;
        } else {
            return Err(errors::error(errors::SYNTAX));
        }
    }
    let keys = a[2..2 + numkeys].iter_mut().map(std::mem::take).collect();
    Ok(ZsetMulti::MPop { keys, max, count: count.unwrap_or(1) })
}
