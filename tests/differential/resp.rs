//! RESP2/RESP3 on the wire, as far as the differential test needs it: encode a command,
//! find where one reply frame ends (keeping its raw bytes), compare two replies by shape,
//! and show bytes readably. Nothing here interprets a reply.

use std::fmt::Write as _;
use std::io::{self, BufRead, Read};

/// Nesting bound for aggregate replies (a broken server must not overflow our stack).
const FRAME_DEPTH_MAX: usize = 64;
/// Bound on one bulk string or line we accept from a server.
const FRAME_BYTES_MAX: usize = 64 * 1024 * 1024;
/// Bytes of one reply shown in a report.
const SHOWN_BYTES_MAX: usize = 600;

/// A command as a RESP array of bulk strings (what every client sends).
pub fn encode_command(args: &[Vec<u8>]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// An `InvalidData` error: the server sent something that is not RESP.
pub fn protocol_error(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.into())
}

/// Reads one `\r\n`-terminated line (terminator included) and appends it to `out`;
/// returns the line's content without the type byte and terminator.
fn read_line(r: &mut impl BufRead, out: &mut Vec<u8>) -> io::Result<Vec<u8>> {
    let start = out.len();
    let mut line = Vec::new();
    let n = r.by_ref().take(FRAME_BYTES_MAX as u64).read_until(b'\n', &mut line)?;
    if n == 0 {
        return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed"));
    }
    out.extend_from_slice(&line);
    if !line.ends_with(b"\r\n") {
        return Err(protocol_error(format!("line not terminated by CRLF: {}", escape(&out[start..]))));
    }
    Ok(line[1..line.len() - 2].to_vec())
}

fn parse_len(header: &[u8]) -> io::Result<i64> {
    std::str::from_utf8(header)
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
        .ok_or_else(|| protocol_error(format!("bad length {}", escape(header))))
}

fn read_exact_into(r: &mut impl BufRead, out: &mut Vec<u8>, len: usize) -> io::Result<()> {
    let start = out.len();
    out.resize(start + len, 0);
    let read = r.read_exact(&mut out[start..]);
    if read.is_err() {
        // Keep only what really arrived out of the report.
        out.truncate(start);
    }
    read
}

/// Reads `len` payload bytes plus CRLF.
fn read_payload(r: &mut impl BufRead, out: &mut Vec<u8>, len: i64) -> io::Result<()> {
    let len = usize::try_from(len)
        .ok()
        .filter(|&l| l <= FRAME_BYTES_MAX)
        .ok_or_else(|| protocol_error(format!("bulk length {len} out of bounds")))?;
    read_exact_into(r, out, len + 2)?;
    if !out.ends_with(b"\r\n") {
        return Err(protocol_error("bulk payload not followed by CRLF"));
    }
    Ok(())
}

/// Appends exactly one complete reply frame (nested aggregates included) to `out`, as the
/// raw bytes that came off the wire. Knows only frame boundaries, not meaning: `+ - : _ , #
/// (` lines, `$ ! =` blobs (and `$-1`, streamed `$?`), `* ~ >` n frames, `% |` n pairs
/// (an attribute `|` also takes the reply it decorates), `*-1`, streamed `*?` ... `.`.
pub fn read_frame(r: &mut impl BufRead, out: &mut Vec<u8>, depth: usize) -> io::Result<()> {
    if depth > FRAME_DEPTH_MAX {
        return Err(protocol_error("reply nested too deep"));
    }
    let type_byte = {
        let buf = r.fill_buf()?;
        match buf.first() {
            Some(&b) => b,
            None => {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed"));
            }
        }
    };
    let header = read_line(r, out)?;
    match type_byte {
        // Simple types: the line is the whole frame.
        b'+' | b'-' | b':' | b'_' | b',' | b'#' | b'(' => Ok(()),
        // Blob types.
        b'$' | b'!' | b'=' => {
            if header == b"?" {
                // RESP3 streamed string: `;len` chunks until `;0`.
                for _ in 0..FRAME_BYTES_MAX {
                    if r.fill_buf()?.first() != Some(&b';') {
                        return Err(protocol_error("streamed string chunk without ';'"));
                    }
                    let len = parse_len(&read_line(r, out)?)?;
                    if len == 0 {
                        return Ok(());
                    }
                    read_payload(r, out, len)?;
                }
                return Err(protocol_error("streamed string without end"));
            }
            let len = parse_len(&header)?;
            if len < 0 {
                // RESP2 null bulk `$-1`.
                return Ok(());
            }
            read_payload(r, out, len)
        }
        // Aggregates: arrays, sets, pushes hold n frames; maps and attributes n pairs.
        b'*' | b'~' | b'>' | b'%' | b'|' => {
            if header == b"?" {
                // RESP3 streamed aggregate: frames until the `.` end marker.
                for _ in 0..FRAME_BYTES_MAX {
                    if r.fill_buf()?.first() == Some(&b'.') {
                        read_line(r, out)?;
                        return Ok(());
                    }
                    read_frame(r, out, depth + 1)?;
                }
                return Err(protocol_error("streamed aggregate without end"));
            }
            let count = parse_len(&header)?;
            if count > FRAME_BYTES_MAX as i64 {
                return Err(protocol_error(format!("aggregate of {count} elements")));
            }
            if count < 0 {
                // RESP2 null array `*-1`.
                return Ok(());
            }
            let per = if matches!(type_byte, b'%' | b'|') { 2 } else { 1 };
            for _ in 0..count * per {
                read_frame(r, out, depth + 1)?;
            }
            if type_byte == b'|' {
                // An attribute decorates the reply that follows it: same frame for us.
                read_frame(r, out, depth + 1)?;
            }
            Ok(())
        }
        other => Err(protocol_error(format!("unknown RESP type byte {:?} in {}", char::from(other), escape(out)))),
    }
}

/// Shows bytes as a Rust-like escaped string, truncated.
pub fn escape(bytes: &[u8]) -> String {
    let mut s = String::from("\"");
    for &b in bytes.iter().take(SHOWN_BYTES_MAX) {
        match b {
            b'\r' => s.push_str("\\r"),
            b'\n' => s.push_str("\\n"),
            b'\t' => s.push_str("\\t"),
            b'"' => s.push_str("\\\""),
            b'\\' => s.push_str("\\\\"),
            0x20..=0x7e => s.push(char::from(b)),
            _ => {
                let _ = write!(s, "\\x{b:02x}");
            }
        }
    }
    s.push('"');
    if bytes.len() > SHOWN_BYTES_MAX {
        let _ = write!(s, "...({} bytes)", bytes.len());
    }
    s
}

/// The `~` comparison: same RESP type (first byte); for aggregates the same header line
/// (type and element count); for bulk strings the same nullness (`$-1` or not).
pub fn same_shape(a: &[u8], b: &[u8]) -> bool {
    fn first_line(x: &[u8]) -> &[u8] {
        let end = x.windows(2).position(|w| w == b"\r\n").unwrap_or(x.len());
        &x[..end]
    }
    match (a.first(), b.first()) {
        (Some(ta), Some(tb)) if ta == tb => match ta {
            b'*' | b'~' | b'>' | b'%' | b'|' => first_line(a) == first_line(b),
            b'$' => (first_line(a) == b"$-1") == (first_line(b) == b"$-1"),
            _ => true,
        },
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufReader;

    #[test]
    fn frame_reader_finds_reply_boundaries() {
        let cases: &[&[u8]] = &[
            b"+OK\r\n",
            b"-ERR x\r\n",
            b":1\r\n",
            b"$-1\r\n",
            b"$0\r\n\r\n",
            b"$5\r\na\r\nbc\r\n",
            b"*-1\r\n",
            b"*2\r\n$1\r\na\r\n*1\r\n:1\r\n",
            b"_\r\n",
            b",1.5\r\n",
            b"#t\r\n",
            b"(123\r\n",
            b"!3\r\nerr\r\n",
            b"=7\r\ntxt:abc\r\n",
            b"%1\r\n+k\r\n*0\r\n",
            b"~2\r\n:1\r\n:2\r\n",
            b">2\r\n+a\r\n+b\r\n",
            b"|1\r\n+key\r\n+val\r\n:42\r\n",
            b"$?\r\n;2\r\nab\r\n;0\r\n",
            b"*?\r\n:1\r\n:2\r\n.\r\n",
        ];
        for &case in cases {
            let mut input = case.to_vec();
            input.extend_from_slice(b"+NEXT\r\n");
            let mut reader = BufReader::new(&input[..]);
            let mut out = Vec::new();
            read_frame(&mut reader, &mut out, 0).unwrap_or_else(|e| panic!("{}: {e}", escape(case)));
            assert_eq!(out, case, "{}", escape(case));
        }
        for bad in [&b"$5\r\nab\r\n"[..], b"*2\r\n:1\r\n", b"+OK\n", b"@x\r\n"] {
            let mut reader = BufReader::new(bad);
            assert!(read_frame(&mut reader, &mut Vec::new(), 0).is_err(), "{}", escape(bad));
        }
        assert!(same_shape(b"*2\r\n:1\r\n:2\r\n", b"*2\r\n:3\r\n:4\r\n"));
        assert!(!same_shape(b"*2\r\n:1\r\n:2\r\n", b"*1\r\n:3\r\n"));
        assert!(!same_shape(b"$-1\r\n", b"$1\r\na\r\n"));
        assert!(!same_shape(b"+OK\r\n", b"-ERR\r\n"));
    }
}
