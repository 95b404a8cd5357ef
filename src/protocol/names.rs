//! The names of the commands clients send most, as static bytes: a request's first
//! argument that spells one of them exactly (upper or lower case, as clients send
//! names) is handed out without a copy.
//!
//! Why: the parser copies every short argument out of the read buffer (see
//! `parse.rs`), and a command's name is copied only to be looked up and freed: an
//! allocation and a free, ~150 instructions of a pipelined RPUSH's ~4,900 (callgrind,
//! 2026-12-04). A name handed out here is the same bytes, so everything that reads the
//! arguments (lookup, MONITOR, errors) sees what the client sent.
//!
//! Must never: know what a command does (this layer knows bytes only), or hand out
//! bytes other than the ones asked about.

use bytes::Bytes;

macro_rules! interned {
    ($name:expr, $($upper:literal $lower:literal)*) => {
        match $name {
            $($upper => Some(Bytes::from_static($upper)), $lower => Some(Bytes::from_static($lower)),)*
            _ => None,
        }
    };
}

/// `name` as static bytes, when it is one of the common names spelled exactly so.
#[inline]
pub fn interned(name: &[u8]) -> Option<Bytes> {
    if name.len() > 9 {
        return None;
    }
    interned!(name,
        b"GET" b"get" b"SET" b"set" b"DEL" b"del" b"MGET" b"mget" b"MSET" b"mset"
        b"INCR" b"incr" b"INCRBY" b"incrby" b"DECR" b"decr" b"EXISTS" b"exists" b"EXPIRE" b"expire"
        b"TTL" b"ttl" b"SETEX" b"setex" b"GETSET" b"getset" b"UNLINK" b"unlink" b"PING" b"ping"
        b"HSET" b"hset" b"HGET" b"hget" b"HMGET" b"hmget" b"HGETALL" b"hgetall" b"HDEL" b"hdel"
        b"HINCRBY" b"hincrby" b"SADD" b"sadd" b"SREM" b"srem" b"SISMEMBER" b"sismember" b"SMEMBERS" b"smembers"
        b"ZADD" b"zadd" b"ZREM" b"zrem" b"ZSCORE" b"zscore" b"ZRANGE" b"zrange" b"ZINCRBY" b"zincrby"
        b"LPUSH" b"lpush" b"RPUSH" b"rpush" b"LPOP" b"lpop" b"RPOP" b"rpop" b"LRANGE" b"lrange"
        b"LLEN" b"llen" b"LINDEX" b"lindex" b"BLPOP" b"blpop" b"BRPOP" b"brpop" b"PUBLISH" b"publish"
        b"MULTI" b"multi" b"EXEC" b"exec" b"XADD" b"xadd" b"EVALSHA" b"evalsha"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_interned_only_as_the_very_bytes_asked_about() {
        for name in [&b"RPUSH"[..], b"rpush", b"GET", b"sismember", b"EVALSHA"] {
            let got = interned(name).expect("a common name");
            assert_eq!(&got[..], name);
            assert_eq!(got.as_ptr(), interned(name).unwrap().as_ptr(), "static: the same bytes each time");
        }
        // Mixed case, other names, prefixes and longer names are not.
        for name in [&b"RPush"[..], b"RPUSHX", b"RPUS", b"", b"FT.SEARCH", b"SISMEMBERS"] {
            assert_eq!(interned(name), None, "{:?}", String::from_utf8_lossy(name));
        }
    }
}
