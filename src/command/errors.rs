//! Redis's error replies, word for word, so clients and tests that match on them work.

use bytes::Bytes;

use crate::protocol::Frame;

pub const SYNTAX: &str = "ERR syntax error";
pub const NOT_INTEGER: &str = "ERR value is not an integer or out of range";
pub const NOT_FLOAT: &str = "ERR value is not a valid float";
pub const OVERFLOW: &str = "ERR increment or decrement would overflow";
pub const NAN_OR_INFINITY: &str = "ERR increment would produce NaN or Infinity";
pub const WRONG_TYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
pub const NO_SUCH_KEY: &str = "ERR no such key";
pub const NOAUTH: &str = "NOAUTH Authentication required.";
pub const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";
pub const DB_INDEX_OUT_OF_RANGE: &str = "ERR DB index is out of range";
pub const STRING_TOO_LONG: &str = "ERR string exceeds maximum allowed size (proto-max-bulk-len)";
pub const OFFSET_OUT_OF_RANGE: &str = "ERR offset is out of range";

pub fn wrong_arity(name: &str) -> Frame {
    Frame::error(format!("ERR wrong number of arguments for '{name}' command"))
}

pub fn invalid_expire(command: &str) -> Frame {
    Frame::error(format!("ERR invalid expire time in '{command}' command"))
}

/// Redis quotes client text in errors; line breaks would end the reply early, so they
/// become spaces (as Redis's `addReplyErrorLength` does).
pub fn sanitize(text: &[u8], max: usize) -> String {
    let cut = &text[..text.len().min(max)];
    let cut = cut.split(|&b| b == 0).next().unwrap_or_default();
    String::from_utf8_lossy(cut).replace(['\r', '\n'], " ")
}

pub fn unknown_command(args: &[Bytes]) -> Frame {
    let mut rest = String::new();
    for arg in args.iter().skip(1) {
        if rest.len() >= 128 {
            break;
        }
        let room = 128 - rest.len();
        rest.push('\'');
        rest.push_str(&sanitize(arg, room));
        rest.push_str("' ");
    }
    let name = args.first().map(|n| sanitize(n, 128)).unwrap_or_default();
    Frame::error(format!("ERR unknown command '{name}', with args beginning with: {rest}"))
}

pub fn unknown_subcommand(sub: &[u8], container: &str) -> Frame {
    Frame::error(format!("ERR unknown subcommand '{}'. Try {} HELP.", sanitize(sub, 128), container.to_ascii_uppercase()))
}

pub fn error(text: &'static str) -> Frame {
    Frame::static_error(text)
}

/// Most elements a random pick with repetition (HRANDFIELD, SRANDMEMBER with a negative
/// count) returns in one reply. Redis has no bound and would stall for hours on
/// `-9223372036854775807`; a shard must not. Past it, [`random_count_too_large`].
pub const RANDOM_PICKS_MAX: i64 = 1 << 24;

/// The error for a negative count past [`RANDOM_PICKS_MAX`].
pub fn random_count_too_large() -> Frame {
    Frame::error(format!("ERR value is out of range, value must between {} and {}", -RANDOM_PICKS_MAX, i64::MAX))
}
