//! Stream commands (XADD family, consumer groups): their typed form and their parser,
//! with Redis 7.0's argument checks, in Redis's order, and its error texts. What Redis
//! checks only after looking the key up (a group's existence, an id against the
//! stream's top) is the engine's (`engine::stream`).

use bytes::Bytes;

use super::errors::{self, wrong_arity};
use super::numbers::parse_i64;
use super::table::CmdId;
use crate::protocol::Frame;

mod groups;
pub mod id;
mod read;

pub use groups::{XGROUP_HELP, XINFO_HELP};
use groups::{parse_autoclaim, parse_claim, parse_group, parse_info, parse_pending};
use id::{AddId, StreamId};
pub use read::{XREAD_ATTEMPT_STREAMS_AT, parse_read, parse_read_command};

/// How XADD or XTRIM trims.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum TrimTo {
    MaxLen(u64),
    MinId(StreamId),
}

#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Trim {
    pub to: TrimTo,
    /// `~`: whole blocks only (see `engine::stream`), at most `limit` entries.
    pub approx: bool,
    /// 0: no limit.
    pub limit: u64,
}

/// Where an XREAD or XREADGROUP reads a stream from.
#[derive(Clone, Debug, PartialEq)]
pub enum ReadFrom {
    /// Entries after this id.
    After(StreamId),
    /// Not an id: the error, answered once the key's type (and XREADGROUP's group) has
    /// been checked, as Redis checks each stream's key before reading its id.
    Invalid(Frame),
    /// XREAD `$`: entries after the stream's last id (nothing, unless blocking).
    Last,
    /// XREADGROUP `>`: entries never delivered to the group.
    New,
}

/// XINFO's forms.
#[derive(Clone, Debug, PartialEq)]
pub enum InfoOf {
    Stream { full: Option<u64> },
    Groups,
    Consumers(Bytes),
}

/// XGROUP's subcommands.
#[derive(Clone, Debug, PartialEq)]
pub enum GroupOp {
    /// `id` `Ok(None)`: `$`; `Err`: not an id, answered after the key and group checks
    /// (as Redis reads the id last).
    Create {
        id: Result<Option<StreamId>, Frame>,
        mkstream: bool,
        entries_read: i64,
    },
    SetId {
        id: Result<Option<StreamId>, Frame>,
        entries_read: i64,
    },
    Destroy,
    CreateConsumer(Bytes),
    DelConsumer(Bytes),
}

/// XCLAIM's options.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct ClaimOptions {
    /// IDLE (as negative: ms before now) or TIME, `None` for now.
    pub idle_ms: Option<i64>,
    pub time_ms: Option<i64>,
    pub retry_count: Option<i64>,
    pub force: bool,
    pub just_id: bool,
    pub last_id: Option<StreamId>,
}

/// A command on one stream key.
#[derive(Clone, Debug, PartialEq)]
pub enum StreamCommand {
    Add {
        key: Bytes,
        id: AddId,
        fields: Vec<(Bytes, Bytes)>,
        no_mkstream: bool,
        trim: Option<Trim>,
    },
    Len(Bytes),
    Range {
        key: Bytes,
        start: StreamId,
        end: StreamId,
        empty: bool,
        count: Option<u64>,
        rev: bool,
    },
    /// `ids` is the refusal of the first invalid one, which Redis answers only once the
    /// key is found to hold a stream (a missing key is 0, another type WRONGTYPE).
    Del {
        key: Bytes,
        ids: Result<Vec<StreamId>, Frame>,
    },
    Trim {
        key: Bytes,
        trim: Trim,
    },
    SetId {
        key: Bytes,
        last: StreamId,
        entries_added: Option<i64>,
        max_deleted: Option<StreamId>,
    },
    /// One key's part of XREAD: its entries after `from`, `[key, entries]` or nothing.
    Read {
        key: Bytes,
        from: ReadFrom,
        count: u64,
    },
    /// One key's part of XREADGROUP.
    ReadGroup {
        key: Bytes,
        group: Bytes,
        consumer: Bytes,
        from: ReadFrom,
        count: u64,
        noack: bool,
    },
    /// The stream's last id (`0-0` when it does not exist): how a blocking XREAD
    /// resolves `$` before it waits. Internal, never parsed from a client.
    LastId(Bytes),
    Group {
        key: Bytes,
        group: Bytes,
        op: GroupOp,
    },
    Ack {
        key: Bytes,
        group: Bytes,
        /// `Err`: an id that is not one, answered only for a stream that has the group
        /// (as Redis: a missing key or group acknowledges nothing, 0).
        ids: Result<Vec<StreamId>, Frame>,
    },
    Pending {
        key: Bytes,
        group: Bytes,
        range: Option<PendingRange>,
    },
    Claim {
        key: Bytes,
        group: Bytes,
        consumer: Bytes,
        min_idle: i64,
        ids: Vec<StreamId>,
        options: ClaimOptions,
    },
    AutoClaim {
        key: Bytes,
        group: Bytes,
        consumer: Bytes,
        min_idle: i64,
        start: StreamId,
        count: u64,
        just_id: bool,
    },
    Info {
        key: Bytes,
        of: InfoOf,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct PendingRange {
    pub min_idle: i64,
    pub start: StreamId,
    pub end: StreamId,
    pub count: u64,
    pub consumer: Option<Bytes>,
}

impl StreamCommand {
    pub fn key(&self) -> &Bytes {
        match self {
            StreamCommand::Add { key, .. }
            | StreamCommand::Len(key)
            | StreamCommand::Range { key, .. }
            | StreamCommand::Del { key, .. }
            | StreamCommand::Trim { key, .. }
            | StreamCommand::SetId { key, .. }
            | StreamCommand::Read { key, .. }
            | StreamCommand::ReadGroup { key, .. }
            | StreamCommand::LastId(key)
            | StreamCommand::Group { key, .. }
            | StreamCommand::Ack { key, .. }
            | StreamCommand::Pending { key, .. }
            | StreamCommand::Claim { key, .. }
            | StreamCommand::AutoClaim { key, .. }
            | StreamCommand::Info { key, .. } => key,
        }
    }

    /// Whether a reader blocked on this key may find something new after it: a new
    /// entry, or its group gone (it is then answered NOGROUP).
    pub fn wakes_readers(&self) -> bool {
        matches!(self, StreamCommand::Add { .. } | StreamCommand::Group { op: GroupOp::Destroy, .. })
    }

    pub fn is_write(&self) -> bool {
        !matches!(
            self,
            StreamCommand::Len(_)
                | StreamCommand::Range { .. }
                | StreamCommand::Read { .. }
                | StreamCommand::LastId(_)
                | StreamCommand::Pending { .. }
                | StreamCommand::Info { .. }
        )
    }
}

/// XREAD and XREADGROUP over their keys (each key's part is a [`StreamCommand`]).
#[derive(Clone, Debug, PartialEq)]
pub struct StreamRead {
    /// `(group, consumer, noack)` for XREADGROUP.
    pub group: Option<(Bytes, Bytes, bool)>,
    pub keys: Vec<(Bytes, ReadFrom)>,
    /// 0: no limit.
    pub count: u64,
    /// BLOCK's milliseconds.
    pub block_ms: Option<u64>,
}

impl StreamRead {
    /// One key's part, as its shard runs it.
    pub fn part(&self, key: Bytes, from: ReadFrom) -> StreamCommand {
        match &self.group {
            Some((group, consumer, noack)) => {
                StreamCommand::ReadGroup { key, group: group.clone(), consumer: consumer.clone(), from, count: self.count, noack: *noack }
            }
            None => StreamCommand::Read { key, from, count: self.count },
        }
    }
}

fn eq(arg: &[u8], word: &str) -> bool {
    arg.eq_ignore_ascii_case(word.as_bytes())
}

fn integer(arg: &[u8]) -> Result<i64, Frame> {
    parse_i64(arg).ok_or_else(|| errors::error(errors::NOT_INTEGER))
}

fn integer_or(arg: &[u8], message: &'static str) -> Result<i64, Frame> {
    parse_i64(arg).ok_or_else(|| Frame::static_error(message))
}

fn strict_id(arg: &[u8]) -> Result<StreamId, Frame> {
    id::parse_id(arg, 0, true)
}

/// XADD's and XTRIM's options (Redis's `streamParseAddOrTrimArgsOrReply`). Returns the
/// trim and, for XADD, the index of the id argument, NOMKSTREAM and the id.
fn parse_add_or_trim(a: &[Bytes], xadd: bool) -> Result<(Option<Trim>, usize, bool, Option<AddId>), Frame> {
    let mut trim: Option<(TrimTo, bool)> = None;
    let mut limit: Option<u64> = None;
    let mut no_mkstream = false;
    let mut add_id = None;
    let mut i = 2;
    let both = "ERR syntax error, MAXLEN and MINID options at the same time are not compatible";
    while i < a.len() {
        let more = a.len() - 1 - i;
        let opt = &a[i];
        if xadd && opt.as_ref() == b"*" {
            add_id = Some(AddId::Auto);
            break;
        } else if (eq(opt, "maxlen") || eq(opt, "minid")) && more > 0 {
            if trim.is_some() {
                return Err(Frame::static_error(both));
            }
            let mut approx = false;
            if more >= 2 && a[i + 1].as_ref() == b"~" {
                approx = true;
                i += 1;
            } else if more >= 2 && a[i + 1].as_ref() == b"=" {
                i += 1;
            }
            let to = if eq(opt, "maxlen") {
                let n = integer(&a[i + 1])?;
                if n < 0 {
                    return Err(Frame::static_error("ERR The MAXLEN argument must be >= 0."));
                }
                TrimTo::MaxLen(n as u64)
            } else {
                TrimTo::MinId(strict_id(&a[i + 1])?)
            };
            trim = Some((to, approx));
            i += 1;
        } else if eq(opt, "limit") && more > 0 {
            let n = integer(&a[i + 1])?;
            if n < 0 {
                return Err(Frame::static_error("ERR The LIMIT argument must be >= 0."));
            }
            limit = Some(n as u64);
            i += 1;
        } else if xadd && eq(opt, "nomkstream") {
            no_mkstream = true;
        } else if xadd {
            let parsed = id::parse_add_id(opt)?;
            add_id = Some(parsed);
            break;
        } else {
            return Err(errors::error(errors::SYNTAX));
        }
        i += 1;
    }
    if limit.is_some_and(|l| l > 0) && trim.is_none() {
        return Err(Frame::static_error("ERR syntax error, LIMIT cannot be used without specifying a trimming strategy"));
    }
    if !xadd && trim.is_none() {
        return Err(Frame::static_error("ERR syntax error, XTRIM must be called with a trimming strategy"));
    }
    let trim = match trim {
        None => None,
        Some((to, approx)) => {
            let limit = match limit {
                Some(_) if !approx => {
                    return Err(Frame::static_error("ERR syntax error, LIMIT cannot be used without the special ~ option"));
                }
                Some(limit) => limit,
                // Filled in by the engine from stream-node-max-entries (Redis: 100
                // nodes' worth); u64::MAX marks "not given".
                None if approx => u64::MAX,
                None => 0,
            };
            Some(Trim { to, approx, limit })
        }
    };
    Ok((trim, i, no_mkstream, add_id))
}

fn parse_add(a: &mut [Bytes]) -> Result<StreamCommand, Frame> {
    let (trim, id_at, no_mkstream, add_id) = parse_add_or_trim(a, true)?;
    let fields_at = id_at + 1;
    let Some(add_id) = add_id else { return Err(wrong_arity("xadd")) };
    if a.len() < fields_at + 2 || (a.len() - fields_at) % 2 == 1 {
        return Err(wrong_arity("xadd"));
    }
    if add_id == AddId::Explicit(StreamId::ZERO) {
        return Err(Frame::static_error("ERR The ID specified in XADD must be greater than 0-0"));
    }
    let key = std::mem::take(&mut a[1]);
    let fields = a[fields_at..].chunks_exact_mut(2).map(|p| (std::mem::take(&mut p[0]), std::mem::take(&mut p[1]))).collect();
    Ok(StreamCommand::Add { key, id: add_id, fields, no_mkstream, trim })
}

fn parse_range_command(a: &mut [Bytes], rev: bool) -> Result<StreamCommand, Frame> {
    let (start_arg, end_arg) = if rev { (&a[3], &a[2]) } else { (&a[2], &a[3]) };
    let (start, end, empty) = match id::parse_range(start_arg, end_arg)? {
        Some((lo, hi)) => (lo, hi, false),
        None => (StreamId::ZERO, StreamId::ZERO, true),
    };
    let mut count = None;
    let mut j = 4;
    while j < a.len() {
        if eq(&a[j], "count") && j + 1 < a.len() {
            count = Some(integer(&a[j + 1])?.max(0) as u64);
            j += 2;
        } else {
            return Err(errors::error(errors::SYNTAX));
        }
    }
    Ok(StreamCommand::Range { key: std::mem::take(&mut a[1]), start, end, empty, count, rev })
}

fn parse_setid(a: &mut [Bytes]) -> Result<StreamCommand, Frame> {
    let last = id::parse_id(&a[2], 0, false)?;
    let mut entries_added = None;
    let mut max_deleted = None;
    let mut i = 3;
    while i < a.len() {
        let more = a.len() - i - 1;
        if eq(&a[i], "entriesadded") && more > 0 {
            let n = integer(&a[i + 1])?;
            if n < 0 {
                return Err(Frame::static_error("ERR entries_added must be positive"));
            }
            entries_added = Some(n);
            i += 2;
        } else if eq(&a[i], "maxdeletedid") && more > 0 {
            let max = id::parse_id(&a[i + 1], 0, false)?;
            if last < max {
                return Err(Frame::static_error("ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id"));
            }
            max_deleted = Some(max);
            i += 2;
        } else {
            return Err(errors::error(errors::SYNTAX));
        }
    }
    Ok(StreamCommand::SetId { key: std::mem::take(&mut a[1]), last, entries_added, max_deleted })
}

/// What a stream command line parses to: a command on one key, or XGROUP/XINFO HELP.
pub enum Parsed {
    Key(StreamCommand),
    Help(&'static [&'static str]),
}

/// Parse a single-key stream command (arity already checked by the table).
pub fn parse(id: CmdId, a: &mut [Bytes]) -> Result<Parsed, Frame> {
    let cmd = match id {
        CmdId::XAdd => parse_add(a)?,
        CmdId::XLen => StreamCommand::Len(std::mem::take(&mut a[1])),
        CmdId::XRange => parse_range_command(a, false)?,
        CmdId::XRevRange => parse_range_command(a, true)?,
        CmdId::XDel => {
            let ids = a[2..].iter().map(|arg| strict_id(arg)).collect::<Result<_, _>>();
            StreamCommand::Del { key: std::mem::take(&mut a[1]), ids }
        }
        CmdId::XTrim => {
            let (trim, _, _, _) = parse_add_or_trim(a, false)?;
            StreamCommand::Trim { key: std::mem::take(&mut a[1]), trim: trim.expect("XTRIM has a strategy") }
        }
        CmdId::XSetId => parse_setid(a)?,
        CmdId::XGroup => match parse_group(a)? {
            Some(cmd) => cmd,
            None => return Ok(Parsed::Help(XGROUP_HELP)),
        },
        CmdId::XInfo => match parse_info(a)? {
            Some(cmd) => cmd,
            None => return Ok(Parsed::Help(XINFO_HELP)),
        },
        CmdId::XAck => {
            let ids = a[3..].iter().map(|arg| strict_id(arg)).collect::<Result<_, _>>();
            StreamCommand::Ack { key: std::mem::take(&mut a[1]), group: std::mem::take(&mut a[2]), ids }
        }
        CmdId::XPending => parse_pending(a)?,
        CmdId::XClaim => parse_claim(a)?,
        CmdId::XAutoClaim => parse_autoclaim(a)?,
        _ => return Err(Frame::error(format!("ERR internal: {id:?} is not a stream command"))),
    };
    Ok(Parsed::Key(cmd))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<Bytes> {
        words.iter().map(|w| Bytes::copy_from_slice(w.as_bytes())).collect()
    }

    fn add(words: &[&str]) -> Result<StreamCommand, Frame> {
        parse_add(&mut args(words))
    }

    #[test]
    fn xadd_options_come_before_the_id_and_are_checked_as_redis_checks_them() {
        let Ok(StreamCommand::Add { trim, id, fields, .. }) = add(&["xadd", "s", "MAXLEN", "~", "10", "*", "a", "1"]) else { panic!() };
        assert_eq!(trim, Some(Trim { to: TrimTo::MaxLen(10), approx: true, limit: u64::MAX }));
        assert_eq!((id, fields.len()), (AddId::Auto, 1));
        assert!(add(&["xadd", "s", "MAXLEN", "-1", "*", "a", "1"]).is_err());
        assert!(add(&["xadd", "s", "*", "a"]).is_err(), "odd field count");
        assert!(add(&["xadd", "s", "LIMIT", "5", "*", "a", "1"]).is_err());
        assert!(add(&["xadd", "s", "MAXLEN", "5", "LIMIT", "5", "*", "a", "1"]).is_err(), "LIMIT needs ~");
        assert_eq!(add(&["xadd", "s", "0-0", "a", "1"]), Err(Frame::static_error("ERR The ID specified in XADD must be greater than 0-0")));
        assert!(add(&["xadd", "s", "MAXLEN", "1", "MINID", "1", "*", "a", "1"]).is_err());
    }

    #[test]
    fn xread_checks_its_ids_against_its_form() {
        let read = parse_read(&args(&["xread", "COUNT", "2", "STREAMS", "a", "b", "$", "1-1"]), false).unwrap();
        assert_eq!(read.keys.len(), 2);
        assert_eq!(read.keys[0].1, ReadFrom::Last);
        assert!(parse_read(&args(&["xread", "STREAMS", "a", ">"]), false).is_err());
        assert!(parse_read(&args(&["xreadgroup", "STREAMS", "a", ">"]), true).is_err(), "GROUP is required");
        assert!(parse_read(&args(&["xreadgroup", "GROUP", "g", "c", "STREAMS", "a", "$"]), true).is_err());
        assert!(parse_read(&args(&["xread", "STREAMS", "a", "b", "1"]), false).is_err(), "unbalanced");
    }
}
