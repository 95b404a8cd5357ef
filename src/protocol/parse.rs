//! Incremental request parser: RESP multibulk arrays (what client libraries send) and
//! inline commands (what telnet and `redis-cli` in some modes send).
//!
//! The parser keeps its progress between calls, so a huge command arriving in many
//! reads is parsed in linear time, and it validates every declared length before
//! allocating anything for it. It knows nothing about commands.

use std::borrow::Cow;

use bytes::{Buf, Bytes, BytesMut};

/// Longest header line (`*N`, `$N`) or inline command accepted, as in Redis.
pub const INLINE_LINE_BYTES_MAX: usize = 64 * 1024;
/// Elements preallocated for a multibulk whatever it declares.
const PREALLOCATED_ARGS_MAX: usize = 1024;
/// Bulk strings up to this long are copied out of the read buffer; longer ones share
/// it. A shared slice costs an atomic increment when made and a decrement when dropped,
/// each waiting for the core's pending stores to drain (~10 % of a pipelined HSET's
/// CPU on this core, more with persistence's writes pending, and a cache line bounced
/// between cores when another shard's thread drops the argument), and a small key or
/// channel name kept by the server would pin the whole read buffer. A copy is a
/// thread-local allocation and a few bytes moved; past this length, the copy costs
/// more than the sharing.
const COPIED_ARG_BYTES_MAX: usize = 128;
/// Bulk strings at least this large get their buffer space reserved up front.
const BIG_ARG_BYTES: usize = 32 * 1024;

/// Limits applied while parsing.
#[derive(Copy, Clone, Debug)]
pub struct ParseLimits {
    /// `proto-max-bulk-len`: the longest bulk string accepted.
    pub bulk_bytes_max: usize,
    /// `client-query-buffer-limit`: the most bytes one pending command may hold.
    pub query_bytes_max: usize,
    /// Before AUTH succeeds, a client may only send small commands (as Redis since
    /// CVE-2021-32675): no one without the password can make the server allocate.
    pub unauthenticated: bool,
}

/// Elements of one command an unauthenticated client may declare at most.
pub const UNAUTHENTICATED_ARGS_MAX: i64 = 10;
/// Bytes of one argument an unauthenticated client may declare at most.
pub const UNAUTHENTICATED_BULK_BYTES_MAX: i64 = 16 * 1024;

impl Default for ParseLimits {
    fn default() -> Self {
        ParseLimits { bulk_bytes_max: 512 * 1024 * 1024, query_bytes_max: 1024 * 1024 * 1024, unauthenticated: false }
    }
}

/// A protocol violation: the connection replies `-ERR Protocol error: ...` and closes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProtocolError(pub Cow<'static, str>);

impl std::fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Protocol error: {}", self.0)
    }
}

impl std::error::Error for ProtocolError {}

#[derive(Debug, Default)]
pub struct RequestParser {
    args: Vec<Bytes>,
    /// Bulk strings still expected in the current multibulk; 0 when between commands.
    args_remaining: usize,
    /// Declared length of the bulk string being received.
    bulk_len: Option<usize>,
    /// Bytes held by the command being assembled.
    pending_bytes: usize,
}

fn find_crlf(buf: &[u8]) -> Option<usize> {
    let mut start = 0;
    while let Some(i) = buf[start..].iter().position(|&b| b == b'\r') {
        let at = start + i;
        if at + 1 < buf.len() {
            if buf[at + 1] == b'\n' {
                return Some(at);
            }
        } else {
            return None;
        }
        start = at + 1;
    }
    None
}

/// Parse the decimal integer of a header line the way Redis's `string2ll` does.
fn parse_header_int(digits: &[u8]) -> Option<i64> {
    // The common header, one or two digits (`*3`, `$16`), read directly: the general
    // parser's sign, overflow and leading-zero checks cost ~30 instructions a header,
    // four headers a command. Anything else goes the general way, so the same headers
    // are accepted and refused as before.
    match *digits {
        [d] if d.is_ascii_digit() => Some(i64::from(d - b'0')),
        [tens @ b'1'..=b'9', units @ b'0'..=b'9'] => Some(i64::from(tens - b'0') * 10 + i64::from(units - b'0')),
        _ => crate::engine::kv::value::parse_i64(digits),
    }
}

impl RequestParser {
    /// Bytes of an incomplete command's arguments already taken off the buffer (CLIENT
    /// LIST's `argv-mem`); 0 between commands. The argument being received is still
    /// the buffer's.
    pub fn partial_args_bytes(&self) -> usize {
        if self.args_remaining == 0 { 0 } else { self.pending_bytes - self.bulk_len.unwrap_or(0) }
    }

    pub fn new() -> RequestParser {
        RequestParser::default()
    }

    /// Whether a command is partially received.
    pub fn is_mid_command(&self) -> bool {
        self.args_remaining > 0
    }

    /// The next complete command in `buf`, consuming it; `Ok(None)` when more bytes are
    /// needed. Empty commands (`*0`, blank inline lines) are skipped.
    pub fn next_command(&mut self, buf: &mut BytesMut, limits: &ParseLimits) -> Result<Option<Vec<Bytes>>, ProtocolError> {
        // Bytes read past are counted in `at` and taken off `buf` once, on the way out:
        // `BytesMut::advance` is ~20 instructions, and a command took seven or more.
        let mut at = 0;
        let parsed = self.parse_from(buf, &mut at, limits);
        buf.advance(at);
        parsed
    }

    /// [`RequestParser::next_command`] over `buf[*at..]`, moving `*at` past what it
    /// consumed (`buf` itself changes only where a long argument is split off it, which
    /// first takes the consumed bytes off and sets `*at` back to 0).
    fn parse_from(&mut self, buf: &mut BytesMut, at: &mut usize, limits: &ParseLimits) -> Result<Option<Vec<Bytes>>, ProtocolError> {
        loop {
            if self.args_remaining == 0 {
                let rest = &buf[*at..];
                if rest.is_empty() {
                    return Ok(None);
                }
                if rest[0] == b'*' {
                    let Some(end) = find_crlf(rest) else {
                        if rest.len() > INLINE_LINE_BYTES_MAX {
                            return Err(ProtocolError(Cow::Borrowed("too big mbulk count string")));
                        }
                        return Ok(None);
                    };
                    let count = parse_header_int(&rest[1..end]).filter(|&n| n <= i32::MAX as i64);
                    let Some(count) = count else {
                        return Err(ProtocolError(Cow::Borrowed("invalid multibulk length")));
                    };
                    if limits.unauthenticated && count > UNAUTHENTICATED_ARGS_MAX {
                        return Err(ProtocolError(Cow::Borrowed("unauthenticated multibulk length")));
                    }
                    *at += end + 2;
                    if count <= 0 {
                        continue;
                    }
                    self.args_remaining = count as usize;
                    self.args = Vec::with_capacity((count as usize).min(PREALLOCATED_ARGS_MAX));
                    self.pending_bytes = 0;
                } else {
                    let Some(newline) = rest.iter().position(|&b| b == b'\n') else {
                        if rest.len() > INLINE_LINE_BYTES_MAX {
                            return Err(ProtocolError(Cow::Borrowed("too big inline request")));
                        }
                        return Ok(None);
                    };
                    let mut line = &rest[..newline];
                    if line.last() == Some(&b'\r') {
                        line = &line[..line.len() - 1];
                    }
                    let args = split_inline_args(line).ok_or(ProtocolError(Cow::Borrowed("unbalanced quotes in request")))?;
                    *at += newline + 1;
                    if args.is_empty() {
                        continue;
                    }
                    return Ok(Some(args));
                }
            }

            while self.args_remaining > 0 {
                let len = match self.bulk_len {
                    Some(len) => len,
                    None => {
                        let rest = &buf[*at..];
                        if rest.is_empty() {
                            return Ok(None);
                        }
                        if rest[0] != b'$' {
                            return Err(expected_dollar_message(rest[0]));
                        }
                        let Some(end) = find_crlf(rest) else {
                            if rest.len() > INLINE_LINE_BYTES_MAX {
                                return Err(ProtocolError(Cow::Borrowed("too big bulk count string")));
                            }
                            return Ok(None);
                        };
                        let declared = parse_header_int(&rest[1..end]);
                        if limits.unauthenticated && declared.is_some_and(|n| n > UNAUTHENTICATED_BULK_BYTES_MAX) {
                            return Err(ProtocolError(Cow::Borrowed("unauthenticated bulk length")));
                        }
                        let len = declared
                            .filter(|&n| n >= 0 && n as u64 <= limits.bulk_bytes_max as u64)
                            .ok_or(ProtocolError(Cow::Borrowed("invalid bulk length")))? as usize;
                        self.pending_bytes += len;
                        if self.pending_bytes > limits.query_bytes_max {
                            return Err(ProtocolError(Cow::Borrowed("query buffer limit exceeded")));
                        }
                        *at += end + 2;
                        if len >= BIG_ARG_BYTES {
                            buf.advance(std::mem::take(at));
                            buf.reserve(len + 2);
                        }
                        self.bulk_len = Some(len);
                        len
                    }
                };
                if buf.len() - *at < len + 2 {
                    return Ok(None);
                }
                let arg = if len <= COPIED_ARG_BYTES_MAX {
                    let bytes = &buf[*at..*at + len];
                    let name = if self.args.is_empty() { super::names::interned(bytes) } else { None };
                    let arg = name.unwrap_or_else(|| Bytes::copy_from_slice(bytes));
                    *at += len;
                    arg
                } else {
                    buf.advance(std::mem::take(at));
                    buf.split_to(len).freeze()
                };
                // Redis does not check the two bytes after a bulk string; neither do we.
                *at += 2;
                self.args.push(arg);
                self.bulk_len = None;
                self.args_remaining -= 1;
            }
            return Ok(Some(std::mem::take(&mut self.args)));
        }
    }
}

fn expected_dollar_message(got: u8) -> ProtocolError {
    // As Redis: the offending byte is quoted, with CR and LF shown as spaces.
    let shown = if got == b'\r' || got == b'\n' { ' ' } else { got as char };
    ProtocolError(format!("expected '$', got '{shown}'").into())
}

fn hex_value(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// Split an inline command line like Redis's `sdssplitargs`: spaces separate arguments,
/// "double quotes" understand `\n \r \t \b \a \\ \" \xHH`, 'single quotes' only `\'`.
/// A closing quote must be followed by a space or the end. `None` on unbalanced quotes.
pub fn split_inline_args(line: &[u8]) -> Option<Vec<Bytes>> {
    let mut args = Vec::new();
    let mut i = 0;
    loop {
        while i < line.len() && line[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= line.len() {
            return Some(args);
        }
        let mut current = Vec::new();
        let mut in_double = false;
        let mut in_single = false;
        loop {
            if in_double {
                let b = *line.get(i)?;
                if b == b'\\'
                    && i + 3 < line.len()
                    && line[i + 1] == b'x'
                    && let (Some(h), Some(l)) = (hex_value(line[i + 2]), hex_value(line[i + 3]))
                {
                    current.push(h * 16 + l);
                    i += 4;
                    continue;
                }
                if b == b'\\' && i + 1 < line.len() {
                    i += 1;
                    current.push(match line[i] {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 8,
                        b'a' => 7,
                        other => other,
                    });
                } else if b == b'"' {
                    if i + 1 < line.len() && !line[i + 1].is_ascii_whitespace() {
                        return None;
                    }
                    i += 1;
                    break;
                } else {
                    current.push(b);
                }
                i += 1;
            } else if in_single {
                let b = *line.get(i)?;
                if b == b'\\' && i + 1 < line.len() && line[i + 1] == b'\'' {
                    current.push(b'\'');
                    i += 2;
                    continue;
                } else if b == b'\'' {
                    if i + 1 < line.len() && !line[i + 1].is_ascii_whitespace() {
                        return None;
                    }
                    i += 1;
                    break;
                }
                current.push(b);
                i += 1;
            } else {
                match line.get(i) {
                    None => break,
                    Some(b) if b.is_ascii_whitespace() => break,
                    Some(b'"') => in_double = true,
                    Some(b'\'') => in_single = true,
                    Some(&b) => current.push(b),
                }
                i += 1;
            }
        }
        args.push(Bytes::from(current));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The direct reading of short headers accepts and refuses exactly what the general
    /// parser does, over every header of up to three bytes from digits, signs and
    /// others.
    #[test]
    fn short_headers_read_as_the_general_parser_reads_them() {
        let alphabet = b"0123456789-+ a\r";
        let mut headers: Vec<Vec<u8>> = vec![Vec::new()];
        for len in 1..=3 {
            let shorter: Vec<Vec<u8>> = headers.iter().filter(|h| h.len() == len - 1).cloned().collect();
            for header in shorter {
                headers.extend(alphabet.iter().map(|&b| [header.clone(), vec![b]].concat()));
            }
        }
        for header in headers {
            assert_eq!(parse_header_int(&header), crate::engine::kv::value::parse_i64(&header), "{header:?}");
        }
    }

    fn parse_all(input: &[u8]) -> Result<Vec<Vec<Bytes>>, ProtocolError> {
        let mut parser = RequestParser::new();
        let mut buf = BytesMut::from(input);
        let mut out = Vec::new();
        while let Some(cmd) = parser.next_command(&mut buf, &ParseLimits::default())? {
            out.push(cmd);
        }
        Ok(out)
    }

    /// Short arguments own their bytes (nothing of the read buffer is kept alive by
    /// them); long ones are slices of the read buffer, not copies.
    #[test]
    fn short_arguments_are_copied_and_long_ones_share_the_read_buffer() {
        let long = vec![b'v'; COPIED_ARG_BYTES_MAX + 1];
        let short = vec![b's'; COPIED_ARG_BYTES_MAX];
        let mut input = b"*3\r\n$3\r\nSET\r\n".to_vec();
        for arg in [&short, &long] {
            input.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
            input.extend_from_slice(arg);
            input.extend_from_slice(b"\r\n");
        }
        let mut buf = BytesMut::from(&input[..]);
        let read_buffer = buf.as_ptr() as usize..buf.as_ptr() as usize + buf.capacity();
        let args = RequestParser::new().next_command(&mut buf, &ParseLimits::default()).unwrap().unwrap();
        assert_eq!(args, vec![Bytes::from("SET"), Bytes::from(short), Bytes::from(long)]);
        let inside = |arg: &Bytes| read_buffer.contains(&(arg.as_ptr() as usize));
        assert!(!inside(&args[0]) && !inside(&args[1]), "short arguments are copies");
        assert!(inside(&args[2]), "a long argument is a slice of the read buffer");
    }

    #[test]
    fn pipelined_multibulk_commands_parse_in_order() {
        let cmds = parse_all(b"*1\r\n$4\r\nPING\r\n*2\r\n$3\r\nGET\r\n$1\r\na\r\n").unwrap();
        assert_eq!(cmds, vec![vec![Bytes::from("PING")], vec![Bytes::from("GET"), Bytes::from("a")]]);
    }

    #[test]
    fn a_command_split_across_reads_is_assembled() {
        let input = b"*2\r\n$3\r\nGET\r\n$5\r\nhello\r\n";
        for cut in 1..input.len() {
            let mut parser = RequestParser::new();
            let mut buf = BytesMut::from(&input[..cut]);
            assert_eq!(parser.next_command(&mut buf, &ParseLimits::default()).unwrap(), None);
            buf.extend_from_slice(&input[cut..]);
            let cmd = parser.next_command(&mut buf, &ParseLimits::default()).unwrap().unwrap();
            assert_eq!(cmd, vec![Bytes::from("GET"), Bytes::from("hello")]);
        }
    }

    /// What a call consumed is exactly what it parsed: short, long (shared) and big
    /// (reserved) arguments in one pipeline, cut at every byte, leave the buffer holding
    /// only the bytes of a bulk string still arriving.
    #[test]
    fn a_pipeline_of_short_long_and_big_arguments_is_consumed_exactly_at_every_cut() {
        let long = vec![b'l'; COPIED_ARG_BYTES_MAX + 7];
        let big = vec![b'b'; BIG_ARG_BYTES + 3];
        let mut input = Vec::new();
        let mut expected = Vec::new();
        for args in [vec![&b"SET"[..], b"k", &long], vec![b"PING"], vec![b"SET", b"big", &big], vec![b"GET", b"k"]] {
            input.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
            for arg in &args {
                input.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
                input.extend_from_slice(arg);
                input.extend_from_slice(b"\r\n");
            }
            expected.push(args.iter().map(|a| Bytes::copy_from_slice(a)).collect::<Vec<_>>());
        }
        for cut in (1..input.len()).step_by(97).chain([1, 2, 3, 4, 5, 20, input.len() - 1]) {
            let mut parser = RequestParser::new();
            let mut buf = BytesMut::from(&input[..cut]);
            let mut got = Vec::new();
            while let Some(cmd) = parser.next_command(&mut buf, &ParseLimits::default()).unwrap() {
                got.push(cmd);
            }
            // Whatever is left is the start of an argument's bytes or of a header.
            assert!(buf.len() <= BIG_ARG_BYTES + 5, "cut {cut}: {} bytes left", buf.len());
            buf.extend_from_slice(&input[cut..]);
            while let Some(cmd) = parser.next_command(&mut buf, &ParseLimits::default()).unwrap() {
                got.push(cmd);
            }
            assert!(got == expected, "cut {cut}: {} commands, {:?}", got.len(), got.iter().map(|c| c.len()).collect::<Vec<_>>());
            assert!(buf.is_empty() && !parser.is_mid_command(), "cut {cut}");
        }
    }

    #[test]
    fn inline_commands_understand_quotes() {
        let cmds = parse_all(b"SET k \"a b\\x00\\n\"\r\nGET 'it\\'s'\n\r\n").unwrap();
        assert_eq!(cmds[0], vec![Bytes::from("SET"), Bytes::from("k"), Bytes::from(&b"a b\0\n"[..])]);
        assert_eq!(cmds[1], vec![Bytes::from("GET"), Bytes::from("it's")]);
        assert_eq!(cmds.len(), 2);
    }

    #[test]
    fn unbalanced_quotes_are_a_protocol_error() {
        assert_eq!(parse_all(b"SET \"a\r\n").unwrap_err().0, "unbalanced quotes in request");
        assert_eq!(parse_all(b"SET \"a\"b\r\n").unwrap_err().0, "unbalanced quotes in request");
    }

    #[test]
    fn oversized_bulk_is_refused_before_allocation() {
        let err = parse_all(b"*1\r\n$9999999999999\r\n").unwrap_err();
        assert_eq!(err.0, "invalid bulk length");
        let err = parse_all(b"*1\r\n$-5\r\n").unwrap_err();
        assert_eq!(err.0, "invalid bulk length");
    }

    #[test]
    fn bad_headers_are_protocol_errors() {
        assert_eq!(parse_all(b"*x\r\n").unwrap_err().0, "invalid multibulk length");
        assert_eq!(parse_all(b"*1\r\n:1\r\n").unwrap_err().0, "expected '$', got ':'");
    }

    #[test]
    fn empty_commands_are_skipped() {
        assert_eq!(parse_all(b"*0\r\n\r\n*-1\r\n").unwrap(), Vec::<Vec<Bytes>>::new());
    }
}
