//! The blocking pops: BLPOP BRPOP BLMOVE BRPOPLPUSH BLMPOP BZPOPMIN BZPOPMAX BZMPOP.
//!
//! Each is its non-blocking command (LPOP, LMOVE, LMPOP, ZPOPMIN, ZMPOP...) tried again
//! whenever one of its keys is written, until it finds something or its timeout passes.
//! So this module parses the timeout and translates the rest into the non-blocking
//! command line, which the ordinary parser then checks: every argument error is the
//! non-blocking command's, with Redis's text. Waiting is the shell's job.

use bytes::Bytes;

use super::Command;
use super::errors;
use super::parse::parse_command;
use crate::protocol::Frame;

/// A blocking command: what to try, on which keys, and for how long.
#[derive(Clone, Debug, PartialEq)]
pub struct BlockingCommand {
    pub attempt: Attempt,
    /// The keys whose writes wake the client (every key the attempt may pop from).
    pub keys: Vec<Bytes>,
    /// 0: wait forever.
    pub timeout_ms: u64,
    /// The command's name, lower case (for INFO and errors).
    pub name: &'static str,
}

impl BlockingCommand {
    /// Whether a try takes what it finds from the clients queued behind (the pops and
    /// moves), so that they must take turns in the order they blocked. A stream read
    /// leaves the entries for every other reader.
    pub fn takes(&self) -> bool {
        !matches!(self.name, "xread" | "xreadgroup")
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Attempt {
    /// BLPOP, BRPOP, BZPOPMIN, BZPOPMAX: the first key (in order) that holds elements
    /// pops one; the reply is `[key, popped...]`. `pop` is the single-key command.
    FirstKey { pop: &'static str },
    /// BLMOVE, BRPOPLPUSH, BLMPOP, BZMPOP: this command, whose reply is the blocking
    /// command's reply when it found something.
    Command(Vec<Bytes>),
}

/// What a blocking command answers when its timeout passes: a null array, for every
/// one of them (BLMOVE and BRPOPLPUSH too, though they answer a bulk string otherwise).
pub fn timed_out(_name: &str) -> Frame {
    Frame::NullArray
}

/// What a blocking command answers inside MULTI/EXEC when it finds nothing (it does not
/// block there): its non-blocking form's empty reply, a null bulk string for BLMOVE and
/// BRPOPLPUSH.
pub fn empty_in_transaction(name: &str) -> Frame {
    match name {
        "blmove" | "brpoplpush" => Frame::Null,
        _ => Frame::NullArray,
    }
}

/// Redis's timeout: seconds as a float, never negative; 0 is forever.
fn parse_timeout(arg: &[u8]) -> Result<u64, Frame> {
    let Some(seconds) = super::numbers::parse_f64(arg) else {
        return Err(Frame::static_error("ERR timeout is not a float or out of range"));
    };
    // Past i64 milliseconds Redis's conversion wraps negative (x86): it answers
    // "negative" for those too, and so do we.
    let ms = (seconds * 1000.0).ceil();
    if ms < 0.0 || ms >= i64::MAX as f64 {
        return Err(Frame::static_error("ERR timeout is negative"));
    }
    Ok(ms as u64)
}

fn b(text: &'static str) -> Bytes {
    Bytes::from_static(text.as_bytes())
}

/// Check a translated command with the ordinary parser (its errors are Redis's).
fn checked(args: Vec<Bytes>) -> Result<Vec<Bytes>, Frame> {
    parse_command(args.clone()).map(|_| args)
}

/// Parse a blocking command (`name` lower case, arity already checked).
pub fn parse(name: &'static str, args: &[Bytes]) -> Result<Command, Frame> {
    let argc = args.len();
    let (attempt, keys, timeout_ms) = match name {
        "blpop" | "brpop" | "bzpopmin" | "bzpopmax" => {
            let timeout_ms = parse_timeout(&args[argc - 1])?;
            let pop = match name {
                "blpop" => "lpop",
                "brpop" => "rpop",
                "bzpopmin" => "zpopmin",
                _ => "zpopmax",
            };
            (Attempt::FirstKey { pop }, args[1..argc - 1].to_vec(), timeout_ms)
        }
        "blmove" => {
            let attempt = checked(vec![b("lmove"), args[1].clone(), args[2].clone(), args[3].clone(), args[4].clone()])?;
            (Attempt::Command(attempt), vec![args[1].clone()], parse_timeout(&args[5])?)
        }
        "brpoplpush" => {
            let timeout_ms = parse_timeout(&args[3])?;
            (Attempt::Command(vec![b("rpoplpush"), args[1].clone(), args[2].clone()]), vec![args[1].clone()], timeout_ms)
        }
        "blmpop" | "bzmpop" => {
            let mut attempt = vec![b(if name == "blmpop" { "lmpop" } else { "zmpop" })];
            attempt.extend(args[2..].iter().cloned());
            // As Redis: numkeys, the end and COUNT first, then the timeout.
            let attempt = checked(attempt)?;
            let timeout_ms = parse_timeout(&args[1])?;
            // numkeys was checked by the parser: the keys follow it.
            let numkeys = std::str::from_utf8(&args[2]).ok().and_then(|n| n.parse::<usize>().ok()).unwrap_or(0);
            let keys = args.get(3..3 + numkeys).map(<[Bytes]>::to_vec).ok_or_else(|| errors::error(errors::SYNTAX))?;
            (Attempt::Command(attempt), keys, timeout_ms)
        }
        _ => return Err(Frame::error(format!("ERR internal: {name} is not a blocking command"))),
    };
    Ok(Command::Blocking(BlockingCommand { attempt, keys, timeout_ms, name }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<Bytes> {
        words.iter().map(|w| Bytes::copy_from_slice(w.as_bytes())).collect()
    }

    fn blocking(words: &[&str]) -> Result<BlockingCommand, Frame> {
        let name = match words[0] {
            "blpop" => "blpop",
            "blmove" => "blmove",
            "blmpop" => "blmpop",
            "bzmpop" => "bzmpop",
            "brpoplpush" => "brpoplpush",
            _ => "bzpopmin",
        };
        match parse(name, &args(words))? {
            Command::Blocking(b) => Ok(b),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn timeouts_are_seconds_rounded_up_to_the_millisecond_and_never_negative() {
        assert_eq!(blocking(&["blpop", "a", "b", "0"]).unwrap().timeout_ms, 0);
        assert_eq!(blocking(&["blpop", "a", "0.0001"]).unwrap().timeout_ms, 1);
        assert_eq!(blocking(&["blpop", "a", "1.5"]).unwrap().timeout_ms, 1500);
        assert_eq!(blocking(&["blpop", "a", "-1"]), Err(Frame::static_error("ERR timeout is negative")));
        assert_eq!(blocking(&["blpop", "a", "x"]), Err(Frame::static_error("ERR timeout is not a float or out of range")));
        assert_eq!(blocking(&["blpop", "a", "1e300"]), Err(Frame::static_error("ERR timeout is negative")));
        assert_eq!(blocking(&["blpop", "a", "-0.0001"]).unwrap().timeout_ms, 0, "rounds up to 0: forever, as Redis");
    }

    #[test]
    fn multi_key_forms_wait_on_their_source_keys_and_check_their_options() {
        let b = blocking(&["blmpop", "0", "2", "x", "y", "LEFT", "COUNT", "3"]).unwrap();
        assert_eq!(b.keys, args(&["x", "y"]));
        assert_eq!(b.attempt, Attempt::Command(args(&["lmpop", "2", "x", "y", "LEFT", "COUNT", "3"])));
        assert!(blocking(&["blmpop", "0", "2", "x", "y", "MIDDLE"]).is_err());
        assert!(blocking(&["bzmpop", "0", "1", "z", "MIN"]).is_ok());
        let moved = blocking(&["blmove", "s", "d", "LEFT", "RIGHT", "2"]).unwrap();
        assert_eq!((moved.keys, moved.timeout_ms), (args(&["s"]), 2000));
        assert!(blocking(&["blmove", "s", "d", "UP", "RIGHT", "2"]).is_err());
        // As Redis: the timeout is read after the rest.
        let numkeys = Frame::static_error("ERR numkeys should be greater than 0");
        assert_eq!(blocking(&["blmpop", "-1", "0", "x", "LEFT"]), Err(numkeys.clone()));
        assert_eq!(blocking(&["bzmpop", "abc", "0", "x", "MIN"]), Err(numkeys));
        assert_eq!(blocking(&["bzmpop", "abc", "1", "x", "MIN"]), Err(Frame::static_error("ERR timeout is not a float or out of range")));
    }
}
