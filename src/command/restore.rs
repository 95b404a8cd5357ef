//! RESTORE's arguments -> a typed [`RestoreCommand`], with Redis 7.0's checks in Redis's
//! order. The payload is decoded here (`command::dump`), off the shard's thread, but
//! errors that Redis reports only after looking at the key (BUSYKEY comes first) are
//! kept, not returned, so the shard answers in the same order as Redis.
//!
//! Never touches the keyspace.

use bytes::Bytes;

use super::dump::{DumpedValue, PayloadError, decode_payload};
use super::errors;
use super::numbers::parse_i64;
use crate::protocol::Frame;

/// RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME s] [FREQ f].
#[derive(Clone, Debug, PartialEq)]
pub struct RestoreCommand {
    pub key: Bytes,
    /// The TTL in milliseconds (0: none), or the error Redis gives for it once it knows
    /// the key may be written.
    pub ttl_ms: Result<u64, Frame>,
    /// The TTL is a unix time in milliseconds, not a duration.
    pub absttl: bool,
    pub replace: bool,
    /// The decoded payload, or why it was refused (reported after the TTL's error).
    pub value: Result<DumpedValue, PayloadError>,
}

fn eq(arg: &[u8], word: &str) -> bool {
    arg.eq_ignore_ascii_case(word.as_bytes())
}

/// Parse a full RESTORE line (`a[0]` is the name; arity already checked).
pub fn parse(a: &mut [Bytes]) -> Result<RestoreCommand, Frame> {
    let mut replace = false;
    let mut absttl = false;
    // IDLETIME and FREQ are checked as Redis checks them and then ignored: Meridian
    // keeps no LRU or LFU data (and Redis refuses the two together).
    let mut idletime = false;
    let mut freq = false;
    let mut i = 4;
    while i < a.len() {
        let has_next = i + 1 < a.len();
        if eq(&a[i], "replace") {
            replace = true;
        } else if eq(&a[i], "absttl") {
            absttl = true;
        } else if eq(&a[i], "idletime") && has_next && !freq {
            let idle = parse_i64(&a[i + 1]).ok_or_else(|| errors::error(errors::NOT_INTEGER))?;
            if idle < 0 {
                return Err(Frame::static_error("ERR Invalid IDLETIME value, must be >= 0"));
            }
            idletime = true;
            i += 1;
        } else if eq(&a[i], "freq") && has_next && !idletime {
            let f = parse_i64(&a[i + 1]).ok_or_else(|| errors::error(errors::NOT_INTEGER))?;
            if !(0..=255).contains(&f) {
                return Err(Frame::static_error("ERR Invalid FREQ value, must be >= 0 and <= 255"));
            }
            freq = true;
            i += 1;
        } else {
            return Err(errors::error(errors::SYNTAX));
        }
        i += 1;
    }
    let ttl_ms = match parse_i64(&a[2]) {
        None => Err(errors::error(errors::NOT_INTEGER)),
        Some(ttl) if ttl < 0 => Err(Frame::static_error("ERR Invalid TTL value, must be >= 0")),
        Some(ttl) => Ok(ttl as u64),
    };
    let value = decode_payload(&a[3]);
    Ok(RestoreCommand { key: std::mem::take(&mut a[1]), ttl_ms, absttl, replace, value })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<Bytes> {
        line.split(' ').map(|s| Bytes::copy_from_slice(s.as_bytes())).collect()
    }

    fn error(line: &str) -> Frame {
        parse(&mut args(line)).unwrap_err()
    }

    #[test]
    fn options_are_checked_before_anything_else() {
        assert_eq!(error("RESTORE k 0 x foo"), errors::error(errors::SYNTAX));
        assert_eq!(error("RESTORE k 0 x IDLETIME"), errors::error(errors::SYNTAX));
        assert_eq!(error("RESTORE k 0 x IDLETIME 1 FREQ 2"), errors::error(errors::SYNTAX));
        assert_eq!(error("RESTORE k 0 x FREQ 1 IDLETIME 2"), errors::error(errors::SYNTAX));
        assert_eq!(error("RESTORE k 0 x IDLETIME -1"), Frame::static_error("ERR Invalid IDLETIME value, must be >= 0"));
        assert_eq!(error("RESTORE k 0 x FREQ 256"), Frame::static_error("ERR Invalid FREQ value, must be >= 0 and <= 255"));
        assert_eq!(error("RESTORE k 0 x IDLETIME abc"), errors::error(errors::NOT_INTEGER));
    }

    #[test]
    fn ttl_and_payload_errors_wait_for_the_key_check() {
        let cmd = parse(&mut args("RESTORE k -1 x REPLACE absttl")).unwrap();
        assert_eq!(cmd.ttl_ms, Err(Frame::static_error("ERR Invalid TTL value, must be >= 0")));
        assert_eq!(cmd.value, Err(PayloadError::VersionOrChecksum));
        assert!(cmd.replace && cmd.absttl);
        let cmd = parse(&mut args("RESTORE k abc x")).unwrap();
        assert_eq!(cmd.ttl_ms, Err(errors::error(errors::NOT_INTEGER)));
    }
}
