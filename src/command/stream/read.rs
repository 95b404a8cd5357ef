//! XREAD and XREADGROUP's parser: options, streams and ids, and the blocking form's
//! attempt. Part of the stream command parser (`super`).

use super::*;

/// XREAD and XREADGROUP (Redis's `xreadCommand` parse, before any key is read).
pub fn parse_read(a: &[Bytes], group_form: bool) -> Result<StreamRead, Frame> {
    let mut count = 0u64;
    let mut block_ms = None;
    let mut group = None;
    let mut noack = false;
    let mut streams_at = None;
    let mut i = 1;
    while i < a.len() {
        let more = a.len() - i - 1;
        let opt = &a[i];
        if eq(opt, "block") && more > 0 {
            i += 1;
            let ms = parse_i64(&a[i]).ok_or_else(|| Frame::static_error("ERR timeout is not an integer or out of range"))?;
            if ms < 0 {
                return Err(Frame::static_error("ERR timeout is negative"));
            }
            block_ms = Some(ms as u64);
        } else if eq(opt, "count") && more > 0 {
            i += 1;
            count = integer(&a[i])?.max(0) as u64;
        } else if eq(opt, "streams") && more > 0 {
            let n = a.len() - (i + 1);
            if !n.is_multiple_of(2) {
                return Err(Frame::static_error(
                    "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.",
                ));
            }
            streams_at = Some(i + 1);
            break;
        } else if eq(opt, "group") && more >= 2 {
            if !group_form {
                return Err(Frame::static_error("ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead."));
            }
            group = Some((a[i + 1].clone(), a[i + 2].clone()));
            i += 2;
        } else if eq(opt, "noack") {
            if !group_form {
                return Err(Frame::static_error("ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead."));
            }
            noack = true;
        } else {
            return Err(errors::error(errors::SYNTAX));
        }
        i += 1;
    }
    let Some(at) = streams_at else { return Err(errors::error(errors::SYNTAX)) };
    if group_form && group.is_none() {
        return Err(Frame::static_error("ERR Missing GROUP option for XREADGROUP"));
    }
    let n = (a.len() - at) / 2;
    let mut keys = Vec::with_capacity(n);
    for k in 0..n {
        let (key, arg) = (&a[at + k], &a[at + n + k]);
        let from = match arg.as_ref() {
            b"$" if group_form => {
                return Err(Frame::static_error(
                    "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.",
                ));
            }
            b"$" => ReadFrom::Last,
            b">" if !group_form => {
                return Err(Frame::static_error(
                    "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.",
                ));
            }
            b">" => ReadFrom::New,
            other => strict_id(other).map_or_else(ReadFrom::Invalid, ReadFrom::After),
        };
        keys.push((key.clone(), from));
    }
    let group = group.map(|(g, c)| (g, c, noack));
    Ok(StreamRead { group, keys, count, block_ms })
}

/// Where `STREAMS` is in a blocking XREAD's attempt (see [`parse_read_command`]); its
/// COUNT's value is the word before it (XREADGROUP's is the sixth word).
pub const XREAD_ATTEMPT_STREAMS_AT: usize = 3;

/// XREAD and XREADGROUP: a blocking command with BLOCK (its attempt is the same read
/// without BLOCK, tried at every write to one of its keys), a read of its keys without.
/// The attempt is written out in one form, `XREAD COUNT n STREAMS ...` or `XREADGROUP
/// GROUP g c COUNT n [NOACK] STREAMS ...`, so that `$` is found by position (a group or
/// key may be named `streams` or `block`).
pub fn parse_read_command(name: &'static str, a: &mut [Bytes]) -> Result<crate::command::Command, Frame> {
    let read = parse_read(a, name == "xreadgroup")?;
    // A read with a bad id answers an error without waiting (which error, in key order,
    // is found by reading).
    let invalid = read.keys.iter().any(|(_, from)| matches!(from, ReadFrom::Invalid(_)));
    let Some(timeout_ms) = read.block_ms.filter(|_| !invalid) else {
        return Ok(crate::command::Command::Multi(crate::command::MultiKeyCommand::StreamRead(read)));
    };
    let word = |w: &'static str| Bytes::from_static(w.as_bytes());
    let mut attempt = vec![word(name)];
    if let Some((group, consumer, _)) = &read.group {
        attempt.extend([word("GROUP"), group.clone(), consumer.clone()]);
    }
    attempt.extend([word("COUNT"), Bytes::from(read.count.to_string())]);
    if read.group.as_ref().is_some_and(|g| g.2) {
        attempt.push(word("NOACK"));
    }
    attempt.push(word("STREAMS"));
    debug_assert!(read.group.is_some() || attempt.len() == XREAD_ATTEMPT_STREAMS_AT + 1);
    attempt.extend(read.keys.iter().map(|(k, _)| k.clone()));
    attempt.extend(read.keys.iter().map(|(_, from)| match from {
        ReadFrom::After(id) => Bytes::from(id.to_string()),
        ReadFrom::Invalid(_) => unreachable!("a read with a bad id does not block"),
        ReadFrom::Last => word("$"),
        ReadFrom::New => word(">"),
    }));
    let keys = read.keys.into_iter().map(|(k, _)| k).collect();
    Ok(crate::command::Command::Blocking(crate::command::blocking::BlockingCommand {
        attempt: crate::command::blocking::Attempt::Command(attempt),
        keys,
        timeout_ms,
        name,
    }))
}
