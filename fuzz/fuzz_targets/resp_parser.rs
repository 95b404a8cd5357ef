//! Fuzzes the RESP request parser (`meridian::protocol::RequestParser`).
//!
//! Beyond "never panics", every input is checked for:
//! - read-boundary independence: the bytes fed in one read and fed in two reads (split
//!   where the low 15 bits of the first two input bytes say) give the same commands and
//!   the same error;
//! - limits: with small limits, no multibulk argument exceeds `bulk_bytes_max` and no
//!   multibulk command holds more than `query_bytes_max` bytes; before AUTH (chosen by
//!   the top bit of the first two bytes) no multibulk has more than
//!   `UNAUTHENTICATED_ARGS_MAX` arguments; no command is empty;
//! - round trip: each command re-encoded as a RESP multibulk array parses back to the
//!   same arguments, alone and as one pipeline;
//! - error replies: a protocol error's text holds no CR or LF (it becomes one RESP line);
//!   `FUZZ_ALLOW_MULTILINE_ERRORS=1` turns this one check off.
//!
//! The target only reads the parser's public API; it must never depend on its internals.

#![no_main]

use bytes::{Bytes, BytesMut};
use libfuzzer_sys::fuzz_target;
use meridian::engine::kv::value::parse_i64;
use meridian::protocol::parse::{INLINE_LINE_BYTES_MAX, UNAUTHENTICATED_ARGS_MAX, UNAUTHENTICATED_BULK_BYTES_MAX, split_inline_args};
use meridian::protocol::{ParseLimits, ProtocolError, RequestParser};

/// Small enough that the fuzzer reaches the limit paths with inputs of a few KiB.
const BULK_BYTES_MAX: usize = 1024;
const QUERY_BYTES_MAX: usize = 4096;
/// Bytes at the front of the input that are not parsed: a little-endian `u16` whose top
/// bit says "unauthenticated" and whose other 15 bits choose the split point.
const PREFIX_BYTES: usize = 2;
const UNAUTHENTICATED_BIT: u16 = 0x8000;
// `fits` below relies on this.
const _: () = assert!((BULK_BYTES_MAX as i64) < UNAUTHENTICATED_BULK_BYTES_MAX);

/// Everything the parser said for one input: the commands in order and how it ended.
#[derive(Debug, PartialEq)]
struct Outcome {
    commands: Vec<Vec<Bytes>>,
    end: End,
}

#[derive(Debug, PartialEq)]
enum End {
    /// A protocol error; the connection would close, so what was left unread is moot
    /// (and differs by design when the error comes before the last read).
    Error(ProtocolError),
    /// Waiting for more bytes: how many are buffered and whether a multibulk is half
    /// received.
    NeedMore { leftover_bytes: usize, mid_command: bool },
}

const DRAINED: End = End::NeedMore { leftover_bytes: 0, mid_command: false };

fuzz_target!(|data: &[u8]| {
    if data.len() < PREFIX_BYTES {
        return;
    }
    let (prefix, input) = data.split_at(PREFIX_BYTES);
    let prefix = u16::from_le_bytes([prefix[0], prefix[1]]);
    let split_at = usize::from(prefix & !UNAUTHENTICATED_BIT) % (input.len() + 1);
    let limits = ParseLimits {
        bulk_bytes_max: BULK_BYTES_MAX,
        query_bytes_max: QUERY_BYTES_MAX,
        unauthenticated: prefix & UNAUTHENTICATED_BIT != 0,
    };

    let whole = parse_reads(&[input], &limits);
    check_commands(input, &whole, &limits);

    // Why only below the line limit: the "too big inline request / count string" checks
    // fire only when a read leaves a line longer than INLINE_LINE_BYTES_MAX with no end
    // in the buffer, so above it the outcome depends on read boundaries by design (as in
    // Redis). libFuzzer's default -max_len (4096) stays far below.
    if input.len() <= INLINE_LINE_BYTES_MAX {
        let (first, second) = input.split_at(split_at);
        let split = parse_reads(&[first, second], &limits);
        assert_eq!(whole, split, "one read and two reads split at {split_at} disagree");
    }

    check_round_trip(&whole.commands, &limits);
});

/// Feed `reads` to one parser in order, draining commands after each read.
fn parse_reads(reads: &[&[u8]], limits: &ParseLimits) -> Outcome {
    let mut parser = RequestParser::new();
    let mut buf = BytesMut::new();
    let mut commands = Vec::new();
    for read in reads {
        buf.extend_from_slice(read);
        // Every returned command consumes bytes (asserted below), so a read of n bytes
        // yields at most n commands; more calls than that mean the parser is stuck.
        let calls_max = buf.len() + 1;
        for call in 0.. {
            assert!(call <= calls_max, "parser returned more commands than bytes can hold");
            let buffered_bytes = buf.len();
            match parser.next_command(&mut buf, limits) {
                Ok(Some(args)) => {
                    assert!(buf.len() < buffered_bytes, "a command was returned without consuming bytes");
                    commands.push(args);
                }
                Ok(None) => break,
                Err(error) => {
                    check_error_text(&error);
                    return Outcome { commands, end: End::Error(error) };
                }
            }
        }
    }
    Outcome { commands, end: End::NeedMore { leftover_bytes: buf.len(), mid_command: parser.is_mid_command() } }
}

/// The connection replies `-ERR Protocol error: <text>\r\n`, so the text must be one
/// line: a CR or LF in it would split the reply and desynchronise the client.
fn check_error_text(error: &ProtocolError) {
    assert!(!error.0.is_empty(), "empty protocol error");
    assert!(multiline_errors_allowed() || !error.0.contains(['\r', '\n']), "protocol error text spans lines: {:?}", error.0);
}

/// Whether `FUZZ_ALLOW_MULTILINE_ERRORS=1` is set: it turns off the one-line error
/// check so the other checks can be fuzzed at full speed while that bug is open.
fn multiline_errors_allowed() -> bool {
    static ALLOWED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ALLOWED.get_or_init(|| std::env::var_os("FUZZ_ALLOW_MULTILINE_ERRORS").is_some_and(|v| v == "1"))
}

/// Re-parse `input` one command at a time to learn how each command was framed, and
/// check its arguments against the limits that framing promises.
fn check_commands(input: &[u8], outcome: &Outcome, limits: &ParseLimits) {
    let mut parser = RequestParser::new();
    let mut buf = BytesMut::from(input);
    for args in &outcome.commands {
        let offset = input.len() - buf.len();
        let multibulk = next_is_multibulk(&input[offset..]);
        let next = parser.next_command(&mut buf, limits);
        assert_eq!(next.as_ref().ok().and_then(|c| c.as_ref()), Some(args), "replay diverged");
        assert!(!args.is_empty(), "an empty command was returned");
        let arg_bytes_max = if multibulk { limits.bulk_bytes_max } else { INLINE_LINE_BYTES_MAX };
        for arg in args {
            assert!(arg.len() <= arg_bytes_max, "argument of {} bytes (multibulk: {multibulk})", arg.len());
        }
        if multibulk {
            let command_bytes: usize = args.iter().map(Bytes::len).sum();
            assert!(command_bytes <= limits.query_bytes_max, "multibulk command of {command_bytes} bytes");
            assert!(
                !limits.unauthenticated || args.len() as i64 <= UNAUTHENTICATED_ARGS_MAX,
                "unauthenticated multibulk of {} arguments",
                args.len()
            );
        }
    }
}

/// Whether the next non-empty command at the front of `rest` is a multibulk (else
/// inline). Mirrors the parser's skipping of `*0`, `*-1` and blank lines; it is only
/// called where the parser returned a command, so every line here is complete.
fn next_is_multibulk(mut rest: &[u8]) -> bool {
    loop {
        if rest.first() == Some(&b'*') {
            let Some(end) = rest.windows(2).position(|w| w == b"\r\n") else {
                panic!("a command was returned from an unterminated multibulk header");
            };
            match parse_i64(&rest[1..end]) {
                Some(count) if count <= 0 => rest = &rest[end + 2..],
                Some(_) => return true,
                None => panic!("a command was returned after an invalid multibulk header"),
            }
        } else {
            let Some(newline) = rest.iter().position(|&b| b == b'\n') else {
                panic!("a command was returned from an unterminated inline line");
            };
            let line = &rest[..newline];
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            match split_inline_args(line) {
                Some(args) if args.is_empty() => rest = &rest[newline + 1..],
                _ => return false,
            }
        }
    }
}

/// Encode `args` the way client libraries send them.
fn encode_multibulk(args: &[Bytes], out: &mut BytesMut) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
}

/// Whether `args` sent as a multibulk pass `limits`. The unauthenticated bulk cap is
/// not checked: it is above `BULK_BYTES_MAX`.
fn fits(args: &[Bytes], limits: &ParseLimits) -> bool {
    args.iter().all(|a| a.len() <= limits.bulk_bytes_max)
        && args.iter().map(Bytes::len).sum::<usize>() <= limits.query_bytes_max
        && (!limits.unauthenticated || args.len() as i64 <= UNAUTHENTICATED_ARGS_MAX)
}

fn check_round_trip(commands: &[Vec<Bytes>], limits: &ParseLimits) {
    let mut pipeline = BytesMut::new();
    for args in commands {
        let mut encoded = BytesMut::new();
        encode_multibulk(args, &mut encoded);
        pipeline.extend_from_slice(&encoded);
        // Inline commands may exceed bulk_bytes_max and the unauthenticated argument
        // count (Redis applies neither to inline commands), so those re-parse under the
        // defaults.
        let limits = if fits(args, limits) { *limits } else { ParseLimits::default() };
        let again = parse_reads(&[&encoded], &limits);
        let expected = Outcome { commands: vec![args.clone()], end: DRAINED };
        assert_eq!(again, expected, "a re-encoded command did not parse back");
    }
    let again = parse_reads(&[&pipeline], &ParseLimits::default());
    let expected = Outcome { commands: commands.to_vec(), end: DRAINED };
    assert_eq!(again, expected, "the re-encoded pipeline did not parse back");
}
