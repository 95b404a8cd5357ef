//! List commands (LPUSH family): their typed form and their parser, with Redis 7.0's
//! argument checks, in Redis's order, and its error texts. Executing them is the
//! key-value engine's job (`engine::kv::lists`); LMOVE, RPOPLPUSH and LMPOP are
//! [`super::MultiKeyCommand::List`]s, run under the coordinator when their keys live on
//! several shards. The blocking pops are not here.

use bytes::Bytes;

use super::errors::{self, wrong_arity};
use super::numbers::parse_i64;
use super::table::CmdId;
use super::{Command, KeyCommand, MultiKeyCommand};
use crate::protocol::Frame;

/// Which end of a list.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum End {
    /// The head (LEFT).
    Left,
    /// The tail (RIGHT).
    Right,
}

/// LPOS's options.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PosOptions {
    /// Which match to start at: 1 the first from the head, -1 the first from the tail.
    pub rank: i64,
    /// Reply with up to this many positions (0: all) as an array; `None`: one, flat.
    pub count: Option<u64>,
    /// Compare at most this many elements (0: all).
    pub maxlen: u64,
}

/// A command on one list key.
#[derive(Clone, Debug, PartialEq)]
pub enum ListCommand {
    /// LPUSH, RPUSH, and with `only_if_exists` LPUSHX, RPUSHX.
    Push {
        key: Bytes,
        end: End,
        elements: Vec<Bytes>,
        only_if_exists: bool,
    },
    /// LPOP/RPOP: no count answers one element flat; a count answers an array.
    Pop {
        key: Bytes,
        end: End,
        count: Option<u64>,
    },
    Len(Bytes),
    /// `index` is `None` when it is not an integer: Redis answers that only once the key
    /// is found to hold a list (a missing key is nil, another type WRONGTYPE).
    Index {
        key: Bytes,
        index: Option<i64>,
    },
    Range {
        key: Bytes,
        start: i64,
        stop: i64,
    },
    /// `index` is `None` when it is not an integer, answered after the key's checks
    /// (as LINDEX's).
    Set {
        key: Bytes,
        index: Option<i64>,
        element: Bytes,
    },
    Insert {
        key: Bytes,
        before: bool,
        pivot: Bytes,
        element: Bytes,
    },
    Rem {
        key: Bytes,
        count: i64,
        element: Bytes,
    },
    Trim {
        key: Bytes,
        start: i64,
        stop: i64,
    },
    Pos {
        key: Bytes,
        element: Bytes,
        options: PosOptions,
    },
}

impl ListCommand {
    pub fn key(&self) -> &Bytes {
        match self {
            ListCommand::Len(key) => key,
            ListCommand::Push { key, .. }
            | ListCommand::Pop { key, .. }
            | ListCommand::Index { key, .. }
            | ListCommand::Range { key, .. }
            | ListCommand::Set { key, .. }
            | ListCommand::Insert { key, .. }
            | ListCommand::Rem { key, .. }
            | ListCommand::Trim { key, .. }
            | ListCommand::Pos { key, .. } => key,
        }
    }

    pub fn is_write(&self) -> bool {
        matches!(
            self,
            ListCommand::Push { .. }
                | ListCommand::Pop { .. }
                | ListCommand::Set { .. }
                | ListCommand::Insert { .. }
                | ListCommand::Rem { .. }
                | ListCommand::Trim { .. }
        )
    }
}

/// The multi-key list commands.
#[derive(Clone, Debug, PartialEq)]
pub enum ListMulti {
    /// LMOVE and RPOPLPUSH: pop one element from `src`'s end `from`, push it at `dst`'s
    /// end `to`.
    Move { src: Bytes, dst: Bytes, from: End, to: End },
    /// LMPOP: pop from the first of `keys` that holds elements.
    MPop { keys: Vec<Bytes>, end: End, count: u64 },
}

impl ListMulti {
    /// Every key the command reads or writes.
    pub fn keys(&self) -> Vec<&Bytes> {
        match self {
            ListMulti::Move { src, dst, .. } => vec![src, dst],
            ListMulti::MPop { keys, .. } => keys.iter().collect(),
        }
    }
}

fn take(args: &mut [Bytes], i: usize) -> Bytes {
    std::mem::take(&mut args[i])
}

fn int(arg: &[u8]) -> Result<i64, Frame> {
    parse_i64(arg).ok_or_else(|| errors::error(errors::NOT_INTEGER))
}

fn eq(arg: &[u8], word: &str) -> bool {
    arg.eq_ignore_ascii_case(word.as_bytes())
}

fn end(arg: &[u8]) -> Result<End, Frame> {
    if eq(arg, "left") {
        Ok(End::Left)
    } else if eq(arg, "right") {
        Ok(End::Right)
    } else {
        Err(errors::error(errors::SYNTAX))
    }
}

/// Redis's `getPositiveLongFromObjectOrReply`: an integer at or above 0, else `msg`
/// (for a non-integer too).
fn non_negative(arg: &[u8], msg: &'static str) -> Result<u64, Frame> {
    match parse_i64(arg) {
        Some(n) if n >= 0 => Ok(n as u64),
        _ => Err(Frame::static_error(msg)),
    }
}

/// LPUSH, RPUSH, LPUSHX or RPUSHX (`id`) of `elements` onto `key`.
pub fn push(id: CmdId, key: Bytes, elements: Vec<Bytes>) -> Command {
    let end = if matches!(id, CmdId::LPush | CmdId::LPushX) { End::Left } else { End::Right };
    let only_if_exists = matches!(id, CmdId::LPushX | CmdId::RPushX);
    Command::Key(KeyCommand::List(ListCommand::Push { key, end, elements, only_if_exists }))
}

/// Parse a list command; the table has checked the arity. The pushes are not parsed
/// here: `parse_command_at` builds them with [`push`] from the argument vector itself.
pub fn parse(id: CmdId, name: &str, a: &mut [Bytes]) -> Result<Command, Frame> {
    let key = |cmd: ListCommand| Ok(Command::Key(KeyCommand::List(cmd)));
    let multi = |cmd: ListMulti| Ok(Command::Multi(MultiKeyCommand::List(cmd)));
    match id {
        CmdId::LPop | CmdId::RPop => {
            let end = if id == CmdId::LPop { End::Left } else { End::Right };
            let count = match a.len() {
                2 => None,
                3 => match parse_i64(&a[2]) {
                    Some(n) if n >= 0 => Some(n as u64),
                    _ => return Err(Frame::static_error("ERR value is out of range, must be positive")),
                },
                _ => return Err(wrong_arity(name)),
            };
            key(ListCommand::Pop { key: take(a, 1), end, count })
        }
        CmdId::LLen => key(ListCommand::Len(take(a, 1))),
        CmdId::LIndex => {
            let index = parse_i64(&a[2]);
            key(ListCommand::Index { key: take(a, 1), index })
        }
        CmdId::LRange | CmdId::LTrim => {
            let (start, stop) = (int(&a[2])?, int(&a[3])?);
            let k = take(a, 1);
            key(if id == CmdId::LRange { ListCommand::Range { key: k, start, stop } } else { ListCommand::Trim { key: k, start, stop } })
        }
        CmdId::LSet => {
            let index = parse_i64(&a[2]);
            key(ListCommand::Set { key: take(a, 1), index, element: take(a, 3) })
        }
        CmdId::LInsert => {
            let before = if eq(&a[2], "before") {
                true
            } else if eq(&a[2], "after") {
                false
            } else {
                return Err(errors::error(errors::SYNTAX));
            };
            key(ListCommand::Insert { key: take(a, 1), before, pivot: take(a, 3), element: take(a, 4) })
        }
        CmdId::LRem => {
            let count = int(&a[2])?;
            key(ListCommand::Rem { key: take(a, 1), count, element: take(a, 3) })
        }
        CmdId::LPos => key(ListCommand::Pos { options: parse_lpos_options(&a[3..])?, key: take(a, 1), element: take(a, 2) }),
        CmdId::LMove => {
            let (from, to) = (end(&a[3])?, end(&a[4])?);
            multi(ListMulti::Move { src: take(a, 1), dst: take(a, 2), from, to })
        }
        CmdId::RPopLPush => multi(ListMulti::Move { src: take(a, 1), dst: take(a, 2), from: End::Right, to: End::Left }),
        CmdId::LMPop => multi(parse_lmpop(a)?),
        _ => Err(wrong_arity(name)),
    }
}

/// `LPOS key element [RANK rank] [COUNT num-matches] [MAXLEN len]`, checked option by
/// option as Redis does.
fn parse_lpos_options(opts: &[Bytes]) -> Result<PosOptions, Frame> {
    let mut options = PosOptions { rank: 1, count: None, maxlen: 0 };
    let mut j = 0;
    while j < opts.len() {
        let more = j + 1 < opts.len();
        if eq(&opts[j], "rank") && more {
            let rank = int(&opts[j + 1])?;
            if rank == 0 {
                return Err(Frame::static_error(
                    "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list",
                ));
            }
            options.rank = rank;
        } else if eq(&opts[j], "count") && more {
            options.count = Some(non_negative(&opts[j + 1], "ERR COUNT can't be negative")?);
        } else if eq(&opts[j], "maxlen") && more {
            options.maxlen = non_negative(&opts[j + 1], "ERR MAXLEN can't be negative")?;
        } else {
            return Err(errors::error(errors::SYNTAX));
        }
        j += 2;
    }
    Ok(options)
}

/// `LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count]`.
fn parse_lmpop(a: &mut [Bytes]) -> Result<ListMulti, Frame> {
    let numkeys = match parse_i64(&a[1]) {
        Some(n) if n > 0 => n as usize,
        _ => return Err(Frame::static_error("ERR numkeys should be greater than 0")),
    };
    // The keys, then LEFT|RIGHT at least.
    if numkeys as u64 >= (a.len() - 2) as u64 {
        return Err(errors::error(errors::SYNTAX));
    }
    let mut j = 2 + numkeys;
    let end = end(&a[j])?;
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
    Ok(ListMulti::MPop { keys, end, count: count.unwrap_or(1) })
}
