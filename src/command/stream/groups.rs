//! The consumer-group and introspection stream commands' parsers (XGROUP, XINFO,
//! XPENDING, XCLAIM, XAUTOCLAIM). Part of the stream command parser (`super`); the
//! container checks (unknown subcommand, a subcommand's arity) are the command table's.

use super::*;

fn subcommand_error(sub: &[u8], container: &str) -> Frame {
    Frame::error(format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try {container} HELP.",
        String::from_utf8_lossy(sub)
    ))
}

pub const XGROUP_HELP: &[&str] = &[
    "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CREATE <key> <groupname> <id|$> [option]",
    "    Create a new consumer group. Options are:",
    "    * MKSTREAM",
    "      Create the empty stream if it does not exist.",
    "    * ENTRIESREAD entries_read",
    "      Set the group's entries_read counter (internal use).",
    "CREATECONSUMER <key> <groupname> <consumer>",
    "    Create a new consumer in the specified group.",
    "DELCONSUMER <key> <groupname> <consumer>",
    "    Remove the specified consumer.",
    "DESTROY <key> <groupname>",
    "    Remove the specified group.",
    "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
    "    Set the current group ID and entries_read counter.",
    "HELP",
    "    Prints this help.",
];

pub const XINFO_HELP: &[&str] = &[
    "XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CONSUMERS <key> <groupname>",
    "    Show consumers of <groupname>.",
    "GROUPS <key>",
    "    Show the stream consumer groups.",
    "STREAM <key> [FULL [COUNT <count>]",
    "    Show information about the stream.",
    "HELP",
    "    Prints this help.",
];

/// XGROUP: `Ok(None)` is HELP.
pub(super) fn parse_group(a: &mut [Bytes]) -> Result<Option<StreamCommand>, Frame> {
    // Unknown subcommands and wrong arities were refused by `table::subcommand_refusal`.
    let sub = a[1].to_ascii_lowercase();
    let argc = a.len();
    // Past the table's arities, Redis's own bounds on CREATE's and SETID's options.
    let arity_ok = match &sub[..] {
        b"create" => argc <= 8,
        b"setid" => argc == 5 || argc == 7,
        _ => true,
    };
    if !arity_ok {
        return Err(subcommand_error(&a[1], "XGROUP"));
    }
    if sub == b"help" {
        return Ok(None);
    }
    let mut mkstream = false;
    let mut entries_read = -1;
    let mut i = 5;
    while i < argc {
        if sub == b"create" && eq(&a[i], "mkstream") {
            mkstream = true;
            i += 1;
        } else if (sub == b"create" || sub == b"setid") && eq(&a[i], "entriesread") && i + 1 < argc {
            entries_read = integer(&a[i + 1])?;
            if entries_read < -1 {
                return Err(Frame::static_error("ERR value for ENTRIESREAD must be positive or -1"));
            }
            i += 2;
        } else {
            return Err(subcommand_error(&a[1], "XGROUP"));
        }
    }
    let key = std::mem::take(&mut a[2]);
    let group = std::mem::take(&mut a[3]);
    let start = |arg: &[u8], strict: bool| -> Result<Option<StreamId>, Frame> {
        if arg == b"$" { Ok(None) } else { id::parse_id(arg, 0, strict).map(Some) }
    };
    let op = match &sub[..] {
        b"create" => GroupOp::Create { id: start(&a[4], true), mkstream, entries_read },
        b"setid" => GroupOp::SetId { id: start(&a[4], false), entries_read },
        b"destroy" => GroupOp::Destroy,
        b"createconsumer" => GroupOp::CreateConsumer(std::mem::take(&mut a[4])),
        _ => GroupOp::DelConsumer(std::mem::take(&mut a[4])),
    };
    Ok(Some(StreamCommand::Group { key, group, op }))
}

/// XINFO: `Ok(None)` is HELP.
pub(super) fn parse_info(a: &mut [Bytes]) -> Result<Option<StreamCommand>, Frame> {
    // Unknown subcommands and wrong arities were refused by `table::subcommand_refusal`.
    let sub = a[1].to_ascii_lowercase();
    let argc = a.len();
    let of = match &sub[..] {
        b"help" if argc == 2 => return Ok(None),
        b"consumers" if argc == 4 => InfoOf::Consumers(std::mem::take(&mut a[3])),
        b"groups" if argc == 3 => InfoOf::Groups,
        b"stream" if argc >= 3 => {
            let full = match argc {
                3 => None,
                4 if eq(&a[3], "full") => Some(10),
                6 if eq(&a[3], "full") && eq(&a[4], "count") => {
                    let n = integer(&a[5])?;
                    Some(if n < 0 { 10 } else { n as u64 })
                }
                _ => return Err(subcommand_error(&a[1], "XINFO")),
            };
            InfoOf::Stream { full }
        }
        _ => return Err(subcommand_error(&a[1], "XINFO")),
    };
    Ok(Some(StreamCommand::Info { key: std::mem::take(&mut a[2]), of }))
}

pub(super) fn parse_pending(a: &mut [Bytes]) -> Result<StreamCommand, Frame> {
    let argc = a.len();
    if argc != 3 && !(6..=9).contains(&argc) {
        return Err(errors::error(errors::SYNTAX));
    }
    let mut range = None;
    if argc >= 6 {
        let mut at = 3;
        let mut min_idle = 0;
        if eq(&a[3], "idle") {
            min_idle = integer(&a[4])?;
            if argc < 8 {
                return Err(errors::error(errors::SYNTAX));
            }
            at += 2;
        }
        let count = integer(&a[at + 2])?.max(0) as u64;
        let (mut start, start_excl) = id::parse_interval(&a[at], 0)?;
        if start_excl {
            start = start.next().ok_or_else(|| Frame::static_error("ERR invalid start ID for the interval"))?;
        }
        let (mut end, end_excl) = id::parse_interval(&a[at + 1], u64::MAX)?;
        if end_excl {
            end = end.prev().ok_or_else(|| Frame::static_error("ERR invalid end ID for the interval"))?;
        }
        // Redis reads no further: arguments after the consumer are ignored.
        let consumer = a.get_mut(at + 3).map(std::mem::take);
        range = Some(PendingRange { min_idle, start, end, count, consumer });
    }
    Ok(StreamCommand::Pending { key: std::mem::take(&mut a[1]), group: std::mem::take(&mut a[2]), range })
}

pub(super) fn parse_claim(a: &mut [Bytes]) -> Result<StreamCommand, Frame> {
    let min_idle = integer_or(&a[4], "ERR Invalid min-idle-time argument for XCLAIM")?.max(0);
    let mut ids = Vec::new();
    let mut j = 5;
    while j < a.len() {
        match strict_id(&a[j]) {
            Ok(id) => ids.push(id),
            Err(_) => break,
        }
        j += 1;
    }
    let mut options = ClaimOptions::default();
    while j < a.len() {
        let more = a.len() - 1 - j;
        let opt = &a[j];
        if eq(opt, "force") {
            options.force = true;
        } else if eq(opt, "justid") {
            options.just_id = true;
        } else if eq(opt, "idle") && more > 0 {
            j += 1;
            options.idle_ms = Some(integer_or(&a[j], "ERR Invalid IDLE option argument for XCLAIM")?);
        } else if eq(opt, "time") && more > 0 {
            j += 1;
            options.time_ms = Some(integer_or(&a[j], "ERR Invalid TIME option argument for XCLAIM")?);
        } else if eq(opt, "retrycount") && more > 0 {
            j += 1;
            options.retry_count = Some(integer_or(&a[j], "ERR Invalid RETRYCOUNT option argument for XCLAIM")?);
        } else if eq(opt, "lastid") && more > 0 {
            j += 1;
            options.last_id = Some(strict_id(&a[j])?);
        } else {
            return Err(Frame::error(format!("ERR Unrecognized XCLAIM option '{}'", String::from_utf8_lossy(opt))));
        }
        j += 1;
    }
    Ok(StreamCommand::Claim {
        key: std::mem::take(&mut a[1]),
        group: std::mem::take(&mut a[2]),
        consumer: std::mem::take(&mut a[3]),
        min_idle,
        ids,
        options,
    })
}

pub(super) fn parse_autoclaim(a: &mut [Bytes]) -> Result<StreamCommand, Frame> {
    let min_idle = integer_or(&a[4], "ERR Invalid min-idle-time argument for XAUTOCLAIM")?.max(0);
    let (mut start, excl) = id::parse_interval(&a[5], 0)?;
    if excl {
        start = start.next().ok_or_else(|| Frame::static_error("ERR invalid start ID for the interval"))?;
    }
    let mut count = 100u64;
    let mut just_id = false;
    let mut j = 6;
    while j < a.len() {
        let more = a.len() - 1 - j;
        if eq(&a[j], "count") && more > 0 {
            let max = i64::MAX / 16;
            match parse_i64(&a[j + 1]) {
                Some(n) if (1..=max).contains(&n) => count = n as u64,
                _ => return Err(Frame::static_error("ERR COUNT must be > 0")),
            }
            j += 1;
        } else if eq(&a[j], "justid") {
            just_id = true;
        } else {
            return Err(errors::error(errors::SYNTAX));
        }
        j += 1;
    }
    Ok(StreamCommand::AutoClaim {
        key: std::mem::take(&mut a[1]),
        group: std::mem::take(&mut a[2]),
        consumer: std::mem::take(&mut a[3]),
        min_idle,
        start,
        count,
        just_id,
    })
}
