//! Fuzzes the command parser (`meridian::command::parse_command`): arguments -> typed
//! `Command` or an error reply.
//!
//! The input is split into arguments on 0x00 bytes (at most `ARGS_MAX`; so arguments
//! never contain NUL here). Beyond "never panics", every input is checked for:
//! - a command is accepted only if its name is in the table and its arity fits;
//! - the command name is case-insensitive: upper- and lower-casing it parses the same;
//! - a refusal is an error frame that encodes to exactly one RESP line (`-CODE ...\r\n`),
//!   so no client argument echoed into the message can break the reply stream
//!   (`FUZZ_ALLOW_MULTILINE_ERRORS=1` turns this one check off).
//!
//! The target only reads the command layer's public API; it must never execute commands.

#![no_main]

use bytes::{Bytes, BytesMut};
use libfuzzer_sys::fuzz_target;
use meridian::command::parse_command;
use meridian::command::table;
use meridian::protocol::{Frame, Protocol, encode};

/// Most arguments built from one input.
const ARGS_MAX: usize = 64;

fuzz_target!(|data: &[u8]| {
    // `split` yields at least one (possibly empty) piece, and parse_command requires a
    // non-empty argument list.
    let args: Vec<Bytes> = data.split(|&b| b == 0).take(ARGS_MAX).map(Bytes::copy_from_slice).collect();
    assert!(!args.is_empty() && args.len() <= ARGS_MAX);

    let parsed = parse_command(args.clone());
    match &parsed {
        Ok(_) => {
            let spec = table::lookup(&args[0]).expect("a command not in the table was accepted");
            assert!(spec.arity_ok(args.len()), "{} accepted with {} arguments", spec.name, args.len());
        }
        Err(frame) => check_error_reply(frame),
    }

    for name in [args[0].to_ascii_uppercase(), args[0].to_ascii_lowercase()] {
        let mut recased = args.clone();
        recased[0] = Bytes::from(name);
        let again = parse_command(recased);
        // Error texts echo the name as sent, so only acceptance and the command compare.
        match (&parsed, &again) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "re-casing the command name changed the command"),
            (Err(_), Err(_)) => {}
            _ => panic!("re-casing the command name changed acceptance: {parsed:?} vs {again:?}"),
        }
    }
});

fn check_error_reply(frame: &Frame) {
    let Frame::Error(text) = frame else {
        panic!("parse_command refused with a non-error frame: {frame:?}");
    };
    assert!(text.first().is_some_and(u8::is_ascii_uppercase), "error reply without an upper-case code: {text:?}");
    let mut out = BytesMut::new();
    encode(frame, Protocol::Resp2, &mut out);
    assert!(out.starts_with(b"-") && out.ends_with(b"\r\n"));
    let body = &out[1..out.len() - 2];
    assert!(multiline_errors_allowed() || !body.iter().any(|&b| b == b'\r' || b == b'\n'), "error reply spans more than one line: {out:?}");
}

/// Whether `FUZZ_ALLOW_MULTILINE_ERRORS=1` is set: it turns off the one-line error
/// check so the other checks can be fuzzed at full speed while that bug is open.
fn multiline_errors_allowed() -> bool {
    static ALLOWED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ALLOWED.get_or_init(|| std::env::var_os("FUZZ_ALLOW_MULTILINE_ERRORS").is_some_and(|v| v == "1"))
}
