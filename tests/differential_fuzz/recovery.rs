//! The fuzz run's last check: the server that answered every command must also have
//! stored what they wrote, in a form it can read back. Replies do not depend on
//! persistence, so a write whose delta cannot be encoded or decoded (an infinite score
//! did once), or a persistence thread that died, would pass every reply comparison.
//! So the run ends by waiting until everything is stored (`WAITAOF`), reading every
//! key out, killing the server (SIGKILL), starting it again on its data and reading
//! every key out once more. The recovery replays the whole run's history (every seed's
//! writes and flushes), so a segment that cannot be read back fails it even when the
//! key it held is long gone.

use crate::Side;
use crate::reply::{self, Norm, Reply};

/// How long the stored state may take to catch up with the last write.
const STORED_WAIT_MS: u64 = 20_000;
/// Keys read out at most (a run's sequences use a handful).
const KEYS_READ_MAX: usize = 10_000;

fn call(side: &mut Side, args: &[&[u8]]) -> Reply {
    let args: Vec<Vec<u8>> = args.iter().map(|a| a.to_vec()).collect();
    side.call(&args).unwrap_or_else(|e| panic!("{}: {e}", crate::show_command(&args)))
}

/// Wait until every write acknowledged so far is stored; an error saying what the
/// server answered otherwise.
pub fn wait_stored(side: &mut Side) -> Result<(), String> {
    let timeout = STORED_WAIT_MS.to_string();
    let reply = call(side, &[b"WAITAOF", b"1", b"0", timeout.as_bytes()]);
    let stored = Reply::Aggregate(b'*', Some(vec![Reply::Line(b':', b"1".to_vec()), Reply::Line(b':', b"0".to_vec())]));
    if reply == stored {
        Ok(())
    } else {
        Err(format!("WAITAOF 1 0 {timeout} answered {} (the persistence is stuck or failed)", reply::show(&reply)))
    }
}

/// Every key with its type, whether it has a TTL, and its whole content (in RESP2),
/// sorted by key; unordered contents sorted too. `side` must be a connection of its
/// own (not one inside MULTI).
pub fn readout(side: &mut Side) -> Vec<(Vec<u8>, Vec<Reply>)> {
    call(side, &[b"HELLO", b"2"]);
    let Reply::Aggregate(_, Some(keys)) = call(side, &[b"KEYS", b"*"]) else { panic!("KEYS * is not an array") };
    assert!(keys.len() <= KEYS_READ_MAX, "{} keys: more than a fuzz run writes", keys.len());
    let mut state = Vec::new();
    for key in keys {
        let Reply::Blob(_, Some(key)) = key else { panic!("a key that is not a bulk string") };
        let kind = call(side, &[b"TYPE", &key]);
        let Reply::Line(_, kind_name) = &kind else { panic!("TYPE answered {}", reply::show(&kind)) };
        let reads: &[(&[&[u8]], Norm)] = match kind_name.as_slice() {
            // Its TTL ended after KEYS.
            b"none" => continue,
            b"string" => &[(&[b"GET"], Norm::Exact)],
            b"list" => &[(&[b"LRANGE", b"0", b"-1"], Norm::Exact)],
            b"hash" => &[(&[b"HGETALL"], Norm::SortedPairs)],
            b"set" => &[(&[b"SMEMBERS"], Norm::Sorted)],
            b"zset" => &[(&[b"ZRANGE", b"0", b"-1", b"WITHSCORES"], Norm::Exact)],
            b"stream" => &[(&[b"XRANGE", b"-", b"+"], Norm::Exact), (&[b"XINFO", b"GROUPS"], Norm::Exact)],
            other => panic!("TYPE answered {}", String::from_utf8_lossy(other)),
        };
        let mut content = vec![kind.clone(), reply::normalize(call(side, &[b"PTTL", &key]), Norm::Ttl)];
        for (command, norm) in reads {
            // The key goes second: `XINFO GROUPS key`, `LRANGE key 0 -1`.
            let mut args: Vec<&[u8]> = vec![command[0]];
            if command.len() > 1 && command[0] == b"XINFO" {
                args.push(command[1]);
                args.push(&key);
            } else {
                args.push(&key);
                args.extend_from_slice(&command[1..]);
            }
            content.push(reply::normalize(call(side, &args), *norm));
        }
        state.push((key, content));
    }
    state.sort();
    state
}

/// The first difference between two readouts, as a line for a report.
pub fn first_difference(before: &[(Vec<u8>, Vec<Reply>)], after: &[(Vec<u8>, Vec<Reply>)]) -> Option<String> {
    let show_key = |key: &[u8]| String::from_utf8_lossy(key).into_owned();
    for i in 0..before.len().max(after.len()) {
        match (before.get(i), after.get(i)) {
            (Some((key, was)), Some((other_key, now))) if key == other_key => {
                if was != now {
                    let show = |c: &[Reply]| c.iter().map(reply::show).collect::<Vec<_>>().join(" | ");
                    return Some(format!("key {}: before {} / after {}", show_key(key), show(was), show(now)));
                }
            }
            (Some((key, _)), Some((other_key, _))) => {
                return Some(format!("keys differ: {} before, {} after", show_key(key), show_key(other_key)));
            }
            (Some((key, _)), None) => return Some(format!("key {} lost", show_key(key))),
            (None, Some((key, _))) => return Some(format!("key {} appeared", show_key(key))),
            (None, None) => unreachable!("i is below the longer length"),
        }
    }
    None
}
