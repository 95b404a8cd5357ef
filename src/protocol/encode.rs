//! Writes [`Frame`]s as RESP2 or RESP3 bytes.

use bytes::{BufMut, BytesMut};

use super::frame::Frame;

/// The protocol a connection speaks (`HELLO 2|3`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Protocol {
    Resp2,
    Resp3,
}

fn put_int_line(out: &mut BytesMut, prefix: u8, n: i64) {
    // The line is put together on the stack and copied out once: three puts (each a
    // capacity check, two of them a `memcpy` call) were ~100 instructions a reply.
    let mut digits = itoa::Buffer::new();
    let digits = digits.format(n).as_bytes();
    let mut line = [0u8; INT_LINE_BYTES_MAX];
    line[0] = prefix;
    line[1..1 + digits.len()].copy_from_slice(digits);
    line[1 + digits.len()..3 + digits.len()].copy_from_slice(b"\r\n");
    out.put_slice(&line[..3 + digits.len()]);
}

/// A prefix, the 20 characters of `i64::MIN` and CRLF.
const INT_LINE_BYTES_MAX: usize = 1 + 20 + 2;

fn put_bulk(out: &mut BytesMut, bytes: &[u8]) {
    put_int_line(out, b'$', bytes.len() as i64);
    out.put_slice(bytes);
    out.put_slice(b"\r\n");
}

/// Redis formats doubles with `%.17g`; Rust's shortest round-trip form prints the same
/// value with no noise digits and is what clients parse back exactly.
pub fn format_double(value: f64) -> String {
    if value.is_infinite() {
        return if value > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if value.is_nan() {
        return "nan".into();
    }
    format_g17(value)
}

/// C's `%.17g`, as Redis 7.0 writes a double reply: 17 significant digits, trailing
/// zeros dropped, exponent form (`e+17`) when the exponent is below -4 or from 17 up.
fn format_g17(value: f64) -> String {
    if value == 0.0 {
        return if value.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    // An integral value below 1e17 has at most 17 digits, all exact: `%.17g` prints it
    // as the integer it is. The common case (scores from counters and ids, ZSCORE of
    // an integer), and the general path below costs thousands of instructions a reply.
    if value.fract() == 0.0 && value.abs() < INTEGRAL_FAST_PATH_LIMIT {
        return itoa::Buffer::new().format(value as i64).to_owned();
    }
    format_g17_general(value)
}

/// Below this, an integral double prints as its integer under `%.17g` (17 digits at
/// most, so no exponent form).
const INTEGRAL_FAST_PATH_LIMIT: f64 = 1e17;

fn format_g17_general(value: f64) -> String {
    const PRECISION: i32 = 17;
    // Rounding to 17 significant digits decides the exponent, as C does.
    let scientific = format!("{:.*e}", (PRECISION - 1) as usize, value);
    let (mantissa, exponent) = scientific.split_once('e').expect("{:e} writes an exponent");
    let exponent: i32 = exponent.parse().expect("an integer exponent");
    let trim = |text: &str| -> String {
        if text.contains('.') { text.trim_end_matches('0').trim_end_matches('.').to_owned() } else { text.to_owned() }
    };
    if !(-4..PRECISION).contains(&exponent) {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{}e{}{:02}", trim(mantissa), sign, exponent.abs())
    } else {
        let decimals = (PRECISION - 1 - exponent) as usize;
        trim(&format!("{value:.decimals$}"))
    }
}

pub fn encode(frame: &Frame, protocol: Protocol, out: &mut BytesMut) {
    let resp3 = protocol == Protocol::Resp3;
    match frame {
        Frame::Simple(text) => {
            out.put_u8(b'+');
            out.put_slice(text);
            out.put_slice(b"\r\n");
        }
        Frame::Error(text) => {
            out.put_u8(b'-');
            // An error line may quote client bytes; a CR or LF there would end the reply
            // early and let the rest pass for another reply. Redis turns them into
            // spaces; so do we, for every error.
            if text.iter().any(|&b| b == b'\r' || b == b'\n') {
                out.extend(text.iter().map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b }));
            } else {
                out.put_slice(text);
            }
            out.put_slice(b"\r\n");
        }
        Frame::Integer(n) => put_int_line(out, b':', *n),
        Frame::Bulk(bytes) => put_bulk(out, bytes),
        Frame::Null if resp3 => out.put_slice(b"_\r\n"),
        Frame::Null => out.put_slice(b"$-1\r\n"),
        Frame::NullArray if resp3 => out.put_slice(b"_\r\n"),
        Frame::NullArray => out.put_slice(b"*-1\r\n"),
        Frame::Array(items) => {
            put_int_line(out, b'*', items.len() as i64);
            for item in items {
                encode(item, protocol, out);
            }
        }
        Frame::Bulks(bulks) => {
            put_int_line(out, b'*', bulks.len() as i64);
            out.put_slice(bulks.body());
        }
        Frame::Push(items) => {
            put_int_line(out, if resp3 { b'>' } else { b'*' }, items.len() as i64);
            for item in items {
                encode(item, protocol, out);
            }
        }
        Frame::Replies(replies) => {
            for reply in replies {
                encode(reply, protocol, out);
            }
        }
        Frame::Set(items) => {
            put_int_line(out, if resp3 { b'~' } else { b'*' }, items.len() as i64);
            for item in items {
                encode(item, protocol, out);
            }
        }
        Frame::Map(pairs) | Frame::Pairs(pairs) | Frame::PairMap(pairs) => {
            // A map in RESP3 (Map, PairMap), an array of two-element arrays (Pairs in
            // RESP3, PairMap in RESP2), or else one flat array.
            let (header, count, nested) = match (frame, resp3) {
                (Frame::Map(_) | Frame::PairMap(_), true) => (b'%', pairs.len(), false),
                (Frame::Pairs(_), true) | (Frame::PairMap(_), false) => (b'*', pairs.len(), true),
                _ => (b'*', 2 * pairs.len(), false),
            };
            put_int_line(out, header, count as i64);
            for (first, second) in pairs {
                if nested {
                    out.put_slice(b"*2\r\n");
                }
                encode(first, protocol, out);
                encode(second, protocol, out);
            }
        }
        Frame::Double(value) => {
            let text = format_double(*value);
            if resp3 {
                out.put_u8(b',');
                out.put_slice(text.as_bytes());
                out.put_slice(b"\r\n");
            } else {
                put_bulk(out, text.as_bytes());
            }
        }
        Frame::DoubleText(text) => {
            if resp3 {
                out.put_u8(b',');
                out.put_slice(text);
                out.put_slice(b"\r\n");
            } else {
                put_bulk(out, text);
            }
        }
        Frame::Boolean(b) if resp3 => out.put_slice(if *b { b"#t\r\n" } else { b"#f\r\n" }),
        Frame::Boolean(b) => put_int_line(out, b':', *b as i64),
        Frame::Verbatim(format, text) => {
            if resp3 {
                debug_assert_eq!(format.len(), 3);
                put_int_line(out, b'=', (text.len() + 4) as i64);
                out.put_slice(format.as_bytes());
                out.put_u8(b':');
                out.put_slice(text);
                out.put_slice(b"\r\n");
            } else {
                put_bulk(out, text);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn enc(frame: Frame, protocol: Protocol) -> Vec<u8> {
        let mut out = BytesMut::new();
        encode(&frame, protocol, &mut out);
        out.to_vec()
    }

    #[test]
    fn null_differs_between_resp2_and_resp3() {
        assert_eq!(enc(Frame::Null, Protocol::Resp2), b"$-1\r\n");
        assert_eq!(enc(Frame::NullArray, Protocol::Resp2), b"*-1\r\n");
        assert_eq!(enc(Frame::Null, Protocol::Resp3), b"_\r\n");
    }

    #[test]
    fn maps_flatten_in_resp2() {
        let map = Frame::Map(vec![(Frame::bulk_str("a"), Frame::Integer(1))]);
        assert_eq!(enc(map.clone(), Protocol::Resp2), b"*2\r\n$1\r\na\r\n:1\r\n");
        assert_eq!(enc(map, Protocol::Resp3), b"%1\r\n$1\r\na\r\n:1\r\n");
    }

    #[test]
    fn integer_lines_print_every_width_up_to_the_extremes() {
        for n in [0, 7, -7, 10, 99, -100, 123_456_789, i64::MAX, i64::MIN, i64::MIN + 1] {
            assert_eq!(enc(Frame::Integer(n), Protocol::Resp2), format!(":{n}\r\n").into_bytes());
            let bulk = vec![b'x'; n.unsigned_abs() as usize % 1000];
            let expected = [format!("${}\r\n", bulk.len()).into_bytes(), bulk.clone(), b"\r\n".to_vec()].concat();
            assert_eq!(enc(Frame::Bulk(Bytes::from(bulk)), Protocol::Resp2), expected);
        }
    }

    #[test]
    fn line_breaks_in_error_text_become_spaces() {
        let frame = Frame::error("ERR Unsupported option \r\nx");
        assert_eq!(enc(frame, Protocol::Resp2), b"-ERR Unsupported option   x\r\n");
    }

    #[test]
    fn doubles_print_as_c_does_with_17_digits() {
        let cases = [
            (1.1, "1.1000000000000001"),
            (0.1, "0.10000000000000001"),
            (3.0, "3"),
            (1.5, "1.5"),
            (1e300, "1.0000000000000001e+300"),
            (123456789012345678.0, "1.2345678901234568e+17"),
            (0.30000000000000004, "0.30000000000000004"),
            (1e-5, "1.0000000000000001e-05"),
            (0.0001, "0.0001"),
            (-2.5, "-2.5"),
            (1e16, "10000000000000000"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
        ];
        for (value, text) in cases {
            assert_eq!(format_double(value), text, "{value}");
        }
    }

    #[test]
    fn integral_doubles_take_the_fast_path_and_print_as_the_general_path_does() {
        let mut values = vec![1.0, -1.0, 9.0, 10.0, 4503599627370496.0, 9007199254740993.0, 99999999999999984.0, -99999999999999984.0];
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..20_000 {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let digits = (state >> 59) as i32; // 0..=31
            let magnitude = (state >> 8) as f64 % 10f64.powi(digits.min(17));
            let value = magnitude.trunc() * if state & 1 == 0 { 1.0 } else { -1.0 };
            values.push(value);
        }
        for value in values {
            if value == 0.0 {
                continue;
            }
            assert!(value.abs() < INTEGRAL_FAST_PATH_LIMIT);
            assert_eq!(format_g17(value), format_g17_general(value), "{value}");
        }
        // 1e17 itself and above go the general way (exponent form).
        assert_eq!(format_g17(1e17), "1e+17");
        assert_eq!(format_g17(99999999999999999.0), "1e+17");
    }

    #[test]
    fn binary_bulk_strings_are_written_verbatim() {
        let frame = Frame::Bulk(Bytes::from_static(b"a\0\xff\r\n"));
        assert_eq!(enc(frame, Protocol::Resp2), b"$5\r\na\0\xff\r\n\r\n");
    }

    #[test]
    fn encoded_bulks_write_as_the_array_of_bulks_they_equal() {
        let items: [&[u8]; 4] = [b"", b"one", b"\r\n", b"a longer element"];
        let mut builder = crate::protocol::EncodedBulksBuilder::with_capacity(1, 1);
        items.iter().for_each(|i| builder.push(i));
        let encoded = Frame::Bulks(builder.finish());
        let plain = Frame::Array(items.iter().map(|i| Frame::Bulk(Bytes::copy_from_slice(i))).collect());
        assert_eq!(encoded, plain);
        assert_eq!(plain, encoded);
        assert_ne!(encoded, Frame::Array(vec![Frame::bulk_str("one")]));
        assert_ne!(encoded, Frame::Set(Vec::new()));
        for protocol in [Protocol::Resp2, Protocol::Resp3] {
            assert_eq!(enc(encoded.clone(), protocol), enc(plain.clone(), protocol));
        }
        let empty = Frame::Bulks(crate::protocol::EncodedBulksBuilder::with_capacity(0, 0).finish());
        assert_eq!(enc(empty.clone(), Protocol::Resp3), b"*0\r\n");
        assert_eq!(empty, Frame::Array(Vec::new()));
    }
}
