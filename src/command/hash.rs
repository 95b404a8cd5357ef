//! Hash commands (HSET family): their typed form and their parser, with Redis 7.0's
//! argument checks and error texts. Executing them is the key-value engine's job
//! (`engine::kv::hashes`).

use bytes::Bytes;

use super::errors::{self, wrong_arity};
use super::numbers::{parse_f64, parse_i64};
use super::table::CmdId;
use crate::protocol::Frame;

/// What an HSET-like command answers.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum HSetReply {
    /// HSET: how many fields were added.
    Added,
    /// HMSET: `+OK`.
    Ok,
    /// HSETNX: write only a new field; `1` if written, `0` if not.
    IfAbsent,
}

/// The options a SCAN-like command over one key's elements takes.
#[derive(Clone, Debug, PartialEq)]
pub struct ElementScan {
    pub cursor: u64,
    pub pattern: Option<Bytes>,
    pub count: usize,
    /// A bad option's error: Redis answers it only for a key of the right type (a
    /// missing key is an empty scan, another type WRONGTYPE), so it waits for the key.
    /// (Boxed: commands stay within their size bound.)
    pub refused: Option<Box<Frame>>,
}

impl ElementScan {
    /// The answer for a key that exists and has the scanned type, if its options were
    /// refused.
    pub fn refusal(&self, key_exists: bool) -> Option<Frame> {
        self.refused.as_deref().filter(|_| key_exists).cloned()
    }
}

/// A command on one hash key.
#[derive(Clone, Debug, PartialEq)]
pub enum HashCommand {
    Set {
        key: Bytes,
        pairs: Vec<(Bytes, Bytes)>,
        reply: HSetReply,
    },
    Get {
        key: Bytes,
        field: Bytes,
    },
    MGet {
        key: Bytes,
        fields: Vec<Bytes>,
    },
    GetAll(Bytes),
    Keys(Bytes),
    Vals(Bytes),
    Len(Bytes),
    Del {
        key: Bytes,
        fields: Vec<Bytes>,
    },
    Exists {
        key: Bytes,
        field: Bytes,
    },
    StrLen {
        key: Bytes,
        field: Bytes,
    },
    IncrBy {
        key: Bytes,
        field: Bytes,
        by: i64,
    },
    IncrByFloat {
        key: Bytes,
        field: Bytes,
        by: f64,
    },
    /// HRANDFIELD: no count answers one field (or nil); a count answers an array.
    RandField {
        key: Bytes,
        count: Option<i64>,
        with_values: bool,
    },
    Scan {
        key: Bytes,
        scan: ElementScan,
    },
}

impl HashCommand {
    pub fn key(&self) -> &Bytes {
        match self {
            HashCommand::GetAll(key) | HashCommand::Keys(key) | HashCommand::Vals(key) | HashCommand::Len(key) => key,
            HashCommand::Set { key, .. }
            | HashCommand::Get { key, .. }
            | HashCommand::MGet { key, .. }
            | HashCommand::Del { key, .. }
            | HashCommand::Exists { key, .. }
            | HashCommand::StrLen { key, .. }
            | HashCommand::IncrBy { key, .. }
            | HashCommand::IncrByFloat { key, .. }
            | HashCommand::RandField { key, .. }
            | HashCommand::Scan { key, .. } => key,
        }
    }

    pub fn is_write(&self) -> bool {
        matches!(self, HashCommand::Set { .. } | HashCommand::Del { .. } | HashCommand::IncrBy { .. } | HashCommand::IncrByFloat { .. })
    }
}

fn take(args: &mut [Bytes], i: usize) -> Bytes {
    std::mem::take(&mut args[i])
}

fn int(arg: &[u8]) -> Result<i64, Frame> {
    parse_i64(arg).ok_or_else(|| errors::error(errors::NOT_INTEGER))
}

/// Parse a hash command whose arity the caller has checked against the table.
pub fn parse(id: CmdId, name: &'static str, a: &mut [Bytes]) -> Result<HashCommand, Frame> {
    let key = take(a, 1);
    Ok(match id {
        CmdId::HSet | CmdId::HMSet => {
            if !a.len().is_multiple_of(2) {
                return Err(wrong_arity(name));
            }
            let pairs = a[2..].chunks_exact_mut(2).map(|p| (std::mem::take(&mut p[0]), std::mem::take(&mut p[1]))).collect();
            let reply = if id == CmdId::HSet { HSetReply::Added } else { HSetReply::Ok };
            HashCommand::Set { key, pairs, reply }
        }
        CmdId::HSetNx => HashCommand::Set { key, pairs: vec![(take(a, 2), take(a, 3))], reply: HSetReply::IfAbsent },
        CmdId::HGet => HashCommand::Get { key, field: take(a, 2) },
        CmdId::HMGet => HashCommand::MGet { key, fields: a[2..].iter_mut().map(std::mem::take).collect() },
        CmdId::HGetAll => HashCommand::GetAll(key),
        CmdId::HKeys => HashCommand::Keys(key),
        CmdId::HVals => HashCommand::Vals(key),
        CmdId::HLen => HashCommand::Len(key),
        CmdId::HDel => HashCommand::Del { key, fields: a[2..].iter_mut().map(std::mem::take).collect() },
        CmdId::HExists => HashCommand::Exists { key, field: take(a, 2) },
        CmdId::HStrLen => HashCommand::StrLen { key, field: take(a, 2) },
        CmdId::HIncrBy => {
            let by = int(&a[3])?;
            HashCommand::IncrBy { key, field: take(a, 2), by }
        }
        CmdId::HIncrByFloat => {
            let by = parse_f64(&a[3]).ok_or_else(|| errors::error(errors::NOT_FLOAT))?;
            if !by.is_finite() {
                return Err(Frame::static_error("ERR value is NaN or Infinity"));
            }
            HashCommand::IncrByFloat { key, field: take(a, 2), by }
        }
        CmdId::HRandField => parse_randfield(key, a)?,
        CmdId::HScan => HashCommand::Scan { key, scan: parse_element_scan(a)? },
        _ => unreachable!("{name} is not a hash command"),
    })
}

fn parse_randfield(key: Bytes, a: &[Bytes]) -> Result<HashCommand, Frame> {
    let (count, with_values) = parse_random_count(a, "withvalues")?;
    Ok(HashCommand::RandField { key, count, with_values })
}

/// `key [count [WITH...]]` of HRANDFIELD and ZRANDMEMBER (`with` names the option):
/// the count, if given, and whether the option was. Redis's checks in its order.
pub fn parse_random_count(a: &[Bytes], with: &str) -> Result<(Option<i64>, bool), Frame> {
    if a.len() < 3 {
        return Ok((None, false));
    }
    let count = int(&a[2])?;
    if count == i64::MIN {
        return Err(Frame::error(format!("ERR value is out of range, value must between {} and {}", -i64::MAX, i64::MAX)));
    }
    let with_values = match a.len() {
        3 => false,
        4 if a[3].eq_ignore_ascii_case(with.as_bytes()) => true,
        _ => return Err(errors::error(errors::SYNTAX)),
    };
    if with_values && !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&count) {
        return Err(Frame::static_error("ERR value is out of range"));
    }
    if count < -errors::RANDOM_PICKS_MAX {
        return Err(errors::random_count_too_large());
    }
    Ok((Some(count), with_values))
}

/// `cursor [MATCH pattern] [COUNT count]` from `a[2]` on (HSCAN, and SSCAN/ZSCAN to
/// come): Redis's cursor and option errors.
pub fn parse_element_scan(a: &mut [Bytes]) -> Result<ElementScan, Frame> {
    // As Redis: the cursor is read first, then the key is looked up, then the options.
    let cursor = super::numbers::parse_scan_cursor(&a[2]).ok_or_else(|| Frame::static_error("ERR invalid cursor"))?;
    let mut scan = ElementScan { cursor, pattern: None, count: 10, refused: None };
    if let Err(refusal) = parse_scan_options(a, &mut scan) {
        scan.refused = Some(Box::new(refusal));
    }
    Ok(scan)
}

fn parse_scan_options(a: &mut [Bytes], scan: &mut ElementScan) -> Result<(), Frame> {
    let mut i = 3;
    while i < a.len() {
        let has_next = i + 1 < a.len();
        if a[i].eq_ignore_ascii_case(b"count") && has_next {
            let n = int(&a[i + 1])?;
            if n < 1 {
                return Err(errors::error(errors::SYNTAX));
            }
            scan.count = n as usize;
        } else if a[i].eq_ignore_ascii_case(b"match") && has_next {
            scan.pattern = Some(take(a, i + 1));
        } else {
            return Err(errors::error(errors::SYNTAX));
        }
        i += 2;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::{Command, KeyCommand, parse_command};

    fn args(line: &str) -> Vec<Bytes> {
        line.split(' ').map(|w| Bytes::copy_from_slice(w.as_bytes())).collect()
    }

    #[test]
    fn random_picks_with_repetition_are_bounded_and_within_the_bound_accepted() {
        let within = parse_command(args(&format!("HRANDFIELD h {}", -errors::RANDOM_PICKS_MAX)));
        assert!(matches!(within, Ok(Command::Key(KeyCommand::Hash(HashCommand::RandField { count: Some(_), .. })))));
        for line in [format!("HRANDFIELD h {}", -errors::RANDOM_PICKS_MAX - 1), format!("SRANDMEMBER s {}", -errors::RANDOM_PICKS_MAX - 1)]
        {
            assert_eq!(parse_command(args(&line)), Err(errors::random_count_too_large()), "{line}");
        }
    }
}
