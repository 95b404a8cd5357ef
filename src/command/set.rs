//! Set commands (SADD family): their typed form and their parser, with Redis 7.0's
//! argument checks and error texts. Executing them is the key-value engine's job
//! (`engine::kv::sets`); the multi-key ones (SMOVE, SINTER, SUNION, SDIFF and their
//! STORE forms, SINTERCARD) are [`super::MultiKeyCommand`]s, run by the shell's fan-out
//! when their keys live on several shards.

use bytes::Bytes;

use super::errors::{self, wrong_arity};
use super::hash::{ElementScan, parse_element_scan};
use super::numbers::parse_i64;
use super::table::CmdId;
use super::{Command, KeyCommand, MultiKeyCommand};
use crate::protocol::Frame;

/// A command on one set key.
#[derive(Clone, Debug, PartialEq)]
pub enum SetCommand {
    Add {
        key: Bytes,
        members: Vec<Bytes>,
    },
    Rem {
        key: Bytes,
        members: Vec<Bytes>,
    },
    Members(Bytes),
    IsMember {
        key: Bytes,
        member: Bytes,
    },
    MIsMember {
        key: Bytes,
        members: Vec<Bytes>,
    },
    Card(Bytes),
    /// SPOP: no count pops one member (or answers nil); a count answers an array.
    Pop {
        key: Bytes,
        count: Option<u64>,
    },
    /// SRANDMEMBER: no count answers one member (or nil); a count answers an array,
    /// with repetitions when negative.
    RandMember {
        key: Bytes,
        count: Option<i64>,
    },
    Scan {
        key: Bytes,
        scan: ElementScan,
    },
}

/// Which algebra a multi-key set command computes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SetAlgebra {
    Inter,
    Union,
    Diff,
}

/// What a multi-key set command does with its result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SetOutput {
    /// Reply with the members (SINTER, SUNION, SDIFF).
    Reply,
    /// Replace this key with them and reply with their count (the STORE forms).
    Store(Bytes),
    /// Reply with their count, stopping at this limit if not 0 (SINTERCARD).
    Count { limit: u64 },
}

impl SetCommand {
    pub fn key(&self) -> &Bytes {
        match self {
            SetCommand::Members(key) | SetCommand::Card(key) => key,
            SetCommand::Add { key, .. }
            | SetCommand::Rem { key, .. }
            | SetCommand::IsMember { key, .. }
            | SetCommand::MIsMember { key, .. }
            | SetCommand::Pop { key, .. }
            | SetCommand::RandMember { key, .. }
            | SetCommand::Scan { key, .. } => key,
        }
    }

    pub fn is_write(&self) -> bool {
        matches!(self, SetCommand::Add { .. } | SetCommand::Rem { .. } | SetCommand::Pop { .. })
    }
}

fn take(args: &mut [Bytes], i: usize) -> Bytes {
    std::mem::take(&mut args[i])
}

fn rest(a: &mut [Bytes], from: usize) -> Vec<Bytes> {
    a[from..].iter_mut().map(std::mem::take).collect()
}

/// SADD or SREM (`id`) of `members` to or from `key`.
pub fn add_or_remove(id: CmdId, key: Bytes, members: Vec<Bytes>) -> Command {
    let cmd = if id == CmdId::SAdd { SetCommand::Add { key, members } } else { SetCommand::Rem { key, members } };
    Command::Key(KeyCommand::SetFamily(cmd))
}

/// Parse a set command whose arity the caller has checked against the table. SADD and
/// SREM are not parsed here: `parse_command_at` builds them with [`add_or_remove`] from
/// the argument vector itself.
pub fn parse(id: CmdId, name: &'static str, a: &mut [Bytes]) -> Result<Command, Frame> {
    let set = |cmd: SetCommand| Ok(Command::Key(KeyCommand::SetFamily(cmd)));
    let multi = |cmd: MultiKeyCommand| Ok(Command::Multi(cmd));
    match id {
        CmdId::SMembers => set(SetCommand::Members(take(a, 1))),
        CmdId::SIsMember => set(SetCommand::IsMember { key: take(a, 1), member: take(a, 2) }),
        CmdId::SMIsMember => set(SetCommand::MIsMember { key: take(a, 1), members: rest(a, 2) }),
        CmdId::SCard => set(SetCommand::Card(take(a, 1))),
        CmdId::SPop => {
            let count = match a.len() {
                2 => None,
                3 => match parse_i64(&a[2]) {
                    Some(n) if n >= 0 => Some(n as u64),
                    _ => return Err(Frame::static_error("ERR value is out of range, must be positive")),
                },
                _ => return Err(errors::error(errors::SYNTAX)),
            };
            set(SetCommand::Pop { key: take(a, 1), count })
        }
        CmdId::SRandMember => {
            let count = match a.len() {
                2 => None,
                3 => {
                    let n = parse_i64(&a[2]).ok_or_else(|| errors::error(errors::NOT_INTEGER))?;
                    if n == i64::MIN {
                        return Err(Frame::error(format!("ERR value is out of range, value must between {} and {}", -i64::MAX, i64::MAX)));
                    }
                    if n < -errors::RANDOM_PICKS_MAX {
                        return Err(errors::random_count_too_large());
                    }
                    Some(n)
                }
                _ => return Err(errors::error(errors::SYNTAX)),
            };
            set(SetCommand::RandMember { key: take(a, 1), count })
        }
        CmdId::SScan => {
            let scan = parse_element_scan(a)?;
            set(SetCommand::Scan { key: take(a, 1), scan })
        }
        CmdId::SMove => multi(MultiKeyCommand::SetMove { src: take(a, 1), dst: take(a, 2), member: take(a, 3) }),
        CmdId::SInter | CmdId::SUnion | CmdId::SDiff => {
            let op = match id {
                CmdId::SInter => SetAlgebra::Inter,
                CmdId::SUnion => SetAlgebra::Union,
                _ => SetAlgebra::Diff,
            };
            multi(MultiKeyCommand::SetAlgebra { op, keys: rest(a, 1), output: SetOutput::Reply })
        }
        CmdId::SInterStore | CmdId::SUnionStore | CmdId::SDiffStore => {
            let op = match id {
                CmdId::SInterStore => SetAlgebra::Inter,
                CmdId::SUnionStore => SetAlgebra::Union,
                _ => SetAlgebra::Diff,
            };
            let dst = take(a, 1);
            multi(MultiKeyCommand::SetAlgebra { op, keys: rest(a, 2), output: SetOutput::Store(dst) })
        }
        CmdId::SInterCard => parse_intercard(a),
        _ => Err(wrong_arity(name)),
    }
}

/// `SINTERCARD numkeys key [key ...] [LIMIT limit]`, with Redis 7.0's checks in its order.
fn parse_intercard(a: &mut [Bytes]) -> Result<Command, Frame> {
    let numkeys = match parse_i64(&a[1]) {
        Some(n) if n > 0 => n as u64,
        _ => return Err(Frame::static_error("ERR numkeys should be greater than 0")),
    };
    if numkeys > (a.len() - 2) as u64 {
        return Err(Frame::static_error("ERR Number of keys can't be greater than number of args"));
    }
    let numkeys = numkeys as usize;
    let mut limit = 0;
    let mut i = 2 + numkeys;
    while i < a.len() {
        if a[i].eq_ignore_ascii_case(b"limit") && i + 1 < a.len() {
            limit = match parse_i64(&a[i + 1]) {
                Some(n) if n >= 0 => n as u64,
                _ => return Err(Frame::static_error("ERR LIMIT can't be negative")),
            };
            i += 2;
        } else {
            return Err(errors::error(errors::SYNTAX));
        }
    }
    let keys = a[2..2 + numkeys].iter_mut().map(std::mem::take).collect();
    Ok(Command::Multi(MultiKeyCommand::SetAlgebra { op: SetAlgebra::Inter, keys, output: SetOutput::Count { limit } }))
}
