//! Numbers in arguments and stored strings, read by Redis's rules (`string2ll`,
//! `strtold` without surrounding spaces). The command parser checks arguments with
//! them and the key-value engine reads stored strings as numbers with the same rules,
//! so an argument and a stored value that look alike parse alike.

/// Parse an i64 the way Redis does: optional '-', digits, no '+', no spaces, no leading
/// zeros (except "0" itself), within range.
pub fn parse_i64(bytes: &[u8]) -> Option<i64> {
    if bytes.is_empty() || bytes.len() > 20 {
        return None;
    }
    let (negative, digits) = match bytes[0] {
        b'-' => (true, &bytes[1..]),
        _ => (false, bytes),
    };
    if digits.is_empty() || (digits[0] == b'0' && (digits.len() > 1 || negative)) {
        return None;
    }
    let mut value: i64 = 0;
    for &b in digits {
        if !b.is_ascii_digit() {
            return None;
        }
        let d = (b - b'0') as i64;
        value = if negative { value.checked_mul(10)?.checked_sub(d)? } else { value.checked_mul(10)?.checked_add(d)? };
    }
    Some(value)
}

/// An i64 whose text round-trips exactly (what may be stored as `StrVal::Int`).
pub fn parse_canonical_i64(bytes: &[u8]) -> Option<i64> {
    parse_i64(bytes)
}

/// A float as Redis's `getDoubleFromObject` / `getLongDoubleFromObject` read one
/// (ZADD's scores, ZINCRBY, INCRBYFLOAT, HINCRBYFLOAT, WEIGHTS, timeouts): C's `strtod`
/// over the whole text (so hexadecimal `0x10` and `inf` are numbers), nothing before or
/// after it, no NaN, and no overflow to infinity or underflow to zero from a finite
/// text (`ERANGE`).
pub fn parse_f64(bytes: &[u8]) -> Option<f64> {
    if bytes.first().is_none_or(|&b| is_c_space(b)) {
        return None;
    }
    let read = c_strtod(bytes);
    let out_of_range = read.range_error && (read.value.is_infinite() || read.value == 0.0);
    (read.consumed == bytes.len() && !out_of_range && !read.value.is_nan()).then_some(read.value)
}

/// A score range's end as Redis's `zslParseRange` reads it (after any `(`): `strtod`
/// over the text as C sees it (up to a NUL), leading spaces allowed, nothing after the
/// number, no NaN; out of range is infinity, and an empty text is 0.
pub fn parse_range_f64(bytes: &[u8]) -> Option<f64> {
    c_string_strtod(bytes).filter(|read| !read.value.is_nan()).map(|read| read.value)
}

/// A SORT weight as Redis reads one (`strtod` over the text as C sees it, nothing after
/// the number, no `ERANGE`, no NaN; an empty text is 0).
pub fn parse_sort_weight(bytes: &[u8]) -> Option<f64> {
    c_string_strtod(bytes).filter(|read| !read.range_error && !read.value.is_nan()).map(|read| read.value)
}

/// `strtod` over `bytes` as C sees them (up to a NUL) where the caller then checks
/// only that the end pointer reached the string's end (`eptr[0] == '\0'`): `None`
/// when something follows the number. No number at all leaves the end pointer at the
/// start, which is the end only of an empty string: that reads as 0.
fn c_string_strtod(bytes: &[u8]) -> Option<StrtodRead> {
    let text = &bytes[..bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len())];
    let read = c_strtod(text);
    if read.consumed == 0 {
        return text.is_empty().then_some(StrtodRead { value: 0.0, consumed: 0, range_error: false });
    }
    (read.consumed == text.len()).then_some(read)
}

/// What C's `strtod` read from the start of a text.
#[derive(Copy, Clone, Debug, PartialEq)]
struct StrtodRead {
    value: f64,
    /// Bytes it read; 0 when the text starts with no number.
    consumed: usize,
    /// A finite text's value overflowed to infinity or underflowed to zero or to a
    /// subnormal (`ERANGE`).
    range_error: bool,
}

/// C's `isspace` in the C locale.
fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// glibc's `strtod` in the C locale: leading white space, a sign, then a decimal
/// number, a hexadecimal one (`0x1.8p3`), `inf`, `infinity` or `nan(...)`, as long a
/// prefix as forms a number. Decimal values are rounded correctly (Rust's parser, as
/// glibc's).
fn c_strtod(text: &[u8]) -> StrtodRead {
    const NONE: StrtodRead = StrtodRead { value: 0.0, consumed: 0, range_error: false };
    let mut at = text.iter().take_while(|&&b| is_c_space(b)).count();
    let negative = match text.get(at) {
        Some(b'-') => {
            at += 1;
            true
        }
        Some(b'+') => {
            at += 1;
            false
        }
        _ => false,
    };
    let signed = |value: f64| if negative { -value } else { value };
    let rest = &text[at..];
    let starts = |word: &[u8]| rest.len() >= word.len() && rest[..word.len()].eq_ignore_ascii_case(word);
    if starts(b"infinity") || starts(b"inf") {
        let consumed = at + if starts(b"infinity") { 8 } else { 3 };
        return StrtodRead { value: signed(f64::INFINITY), consumed, range_error: false };
    }
    if starts(b"nan") {
        let mut consumed = at + 3;
        if text.get(consumed) == Some(&b'(') {
            let inner = text[consumed + 1..].iter().take_while(|b| b.is_ascii_alphanumeric() || **b == b'_').count();
            if text.get(consumed + 1 + inner) == Some(&b')') {
                consumed += inner + 2;
            }
        }
        return StrtodRead { value: f64::NAN, consumed, range_error: false };
    }
    if rest.len() > 2
        && rest[0] == b'0'
        && rest[1].eq_ignore_ascii_case(&b'x')
        && let Some((value, len)) = hex_float(&rest[2..])
    {
        let digits = rest[2..2 + len].iter().take_while(|b| !matches!(b, b'p' | b'P'));
        let underflow = value == 0.0 && digits.into_iter().any(|b| b.is_ascii_hexdigit() && *b != b'0');
        return StrtodRead { value: signed(value), consumed: at + 2 + len, range_error: value.is_infinite() || underflow };
    }
    // Decimal: digits, maybe a point and digits (one digit at least), maybe an exponent
    // with at least one digit (else the `e` is not part of the number).
    let digits = |from: usize| text[from..].iter().take_while(|b| b.is_ascii_digit()).count();
    let whole = digits(at);
    let mut end = at + whole;
    let mut fraction = 0;
    if text.get(end) == Some(&b'.') {
        fraction = digits(end + 1);
        if whole + fraction > 0 {
            end += 1 + fraction;
        }
    }
    if whole + fraction == 0 {
        return NONE;
    }
    let mantissa_nonzero = text[at..end].iter().any(|b| (b'1'..=b'9').contains(b));
    if matches!(text.get(end), Some(b'e' | b'E')) {
        let sign = usize::from(matches!(text.get(end + 1), Some(b'+' | b'-')));
        let exponent = digits(end + 1 + sign);
        if exponent > 0 {
            end += 1 + sign + exponent;
        }
    }
    let number = std::str::from_utf8(&text[at..end]).expect("ASCII digits");
    let value: f64 = number.parse().unwrap_or(0.0);
    let subnormal = value != 0.0 && value.abs() < f64::MIN_POSITIVE;
    let range_error = value.is_infinite() || (value == 0.0 && mantissa_nonzero) || subnormal;
    StrtodRead { value: signed(value), consumed: end, range_error }
}

/// The hexadecimal digits after `0x`: `h[.h][p[sign]d]`, at least one hex digit. Its
/// value (rounded once, to nearest) and the bytes it took; `None` when no digit follows.
fn hex_float(text: &[u8]) -> Option<(f64, usize)> {
    let hex = |from: usize| text[from..].iter().take_while(|b| b.is_ascii_hexdigit()).count();
    let whole = hex(0);
    let mut end = whole;
    let mut fraction = 0;
    if text.get(end) == Some(&b'.') {
        fraction = hex(end + 1);
        if whole + fraction > 0 {
            end += 1 + fraction;
        }
    }
    if whole + fraction == 0 {
        return None;
    }
    // Up to 15 significant hex digits (60 bits) are kept exactly; later ones only
    // mark the value as not exact (sticky), which is enough to round it once.
    let (mut mantissa, mut exponent, mut kept, mut sticky) = (0u64, 0i64, 0usize, false);
    for (i, &b) in text[..end].iter().enumerate().filter(|(_, b)| **b != b'.') {
        let d = u64::from((b as char).to_digit(16).expect("hex digit"));
        let in_fraction = i > whole;
        if kept < 15 && (mantissa != 0 || d != 0) {
            mantissa = mantissa << 4 | d;
            kept += 1;
            if in_fraction {
                exponent -= 4;
            }
        } else if mantissa == 0 && d == 0 {
            if in_fraction {
                exponent -= 4;
            }
        } else {
            sticky |= d != 0;
            if !in_fraction {
                exponent += 4;
            }
        }
    }
    if matches!(text.get(end), Some(b'p' | b'P')) {
        let sign_len = usize::from(matches!(text.get(end + 1), Some(b'+' | b'-')));
        let count = text[end + 1 + sign_len..].iter().take_while(|b| b.is_ascii_digit()).count();
        if count > 0 {
            let digits = std::str::from_utf8(&text[end + 1 + sign_len..end + 1 + sign_len + count]).expect("digits");
            let magnitude = digits.parse::<i64>().unwrap_or(i64::MAX / 4).min(1 << 20);
            exponent += if text[end + 1] == b'-' { -magnitude } else { magnitude };
            end += 1 + sign_len + count;
        }
    }
    // The sticky bit below the kept digits rounds like the digits it stands for.
    let mantissa = mantissa << 1 | u64::from(sticky);
    let value = mantissa as f64 * 2f64.powi((exponent - 1).clamp(-1100, 1100) as i32);
    Some((value, end))
}

/// A SCAN cursor as Redis reads it (`strtoul`): an optional sign, digits, nothing else,
/// no overflow. A minus sign wraps, as in C (`-1` is the largest cursor).
pub fn parse_scan_cursor(bytes: &[u8]) -> Option<u64> {
    let (negative, digits) = match bytes.first()? {
        b'-' => (true, &bytes[1..]),
        b'+' => (false, &bytes[1..]),
        _ => (false, bytes),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let value = std::str::from_utf8(digits).ok()?.parse::<u64>().ok()?;
    Some(if negative { value.wrapping_neg() } else { value })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// glibc's `strtod` on this machine (read through Python's ctypes) for each text:
    /// value, bytes read, `ERANGE`.
    #[test]
    fn strtod_reads_what_glibc_reads() {
        let cases: &[(&[u8], f64, usize, bool)] = &[
            (b"1", 1.0, 1, false),
            (b"-1.5", -1.5, 4, false),
            (b"0x10", 16.0, 4, false),
            (b"0X1p3", 8.0, 5, false),
            (b"-0x1.8p1", -3.0, 8, false),
            (b"0x", 0.0, 1, false),
            (b"0x.8", 0.5, 4, false),
            (b"0xg", 0.0, 1, false),
            (b" 1", 1.0, 2, false),
            (b"1 ", 1.0, 1, false),
            (b"", 0.0, 0, false),
            (b"  ", 0.0, 0, false),
            (b"inf", f64::INFINITY, 3, false),
            (b"-Infinity", f64::NEG_INFINITY, 9, false),
            (b"infin", f64::INFINITY, 3, false),
            (b"1e400", f64::INFINITY, 5, true),
            (b"-1e400", f64::NEG_INFINITY, 6, true),
            (b"1e-400", 0.0, 6, true),
            (b"1e", 1.0, 1, false),
            (b"1e+", 1.0, 1, false),
            (b".5", 0.5, 2, false),
            (b"5.", 5.0, 2, false),
            (b".", 0.0, 0, false),
            (b"+.5e1", 5.0, 5, false),
            (b"0e-400", 0.0, 6, false),
            (b"0x1p-1080", 0.0, 9, true),
            (b"0x1.fffffffffffff8p0", 2.0, 20, false),
            (b"0x123456789abcdef12p0", 2.0988295479420645e19, 21, false),
            (b"1\x00abc", 1.0, 1, false),
            (b"abc", 0.0, 0, false),
            (b"-", 0.0, 0, false),
            (b"+inf", f64::INFINITY, 4, false),
            (b"1_0", 1.0, 1, false),
        ];
        for &(text, value, consumed, range_error) in cases {
            let read = c_strtod(text);
            assert_eq!((read.value, read.consumed), (value, consumed), "{}", String::from_utf8_lossy(text));
            if consumed > 0 {
                assert_eq!(read.range_error, range_error, "ERANGE of {}", String::from_utf8_lossy(text));
            }
        }
        let nan = c_strtod(b"nan(abc)");
        assert!(nan.value.is_nan() && nan.consumed == 8);
        let subnormal = c_strtod(b"1e-310");
        assert!(subnormal.value == 1e-310 && subnormal.range_error, "a subnormal result stays, with ERANGE");
        assert_eq!(parse_sort_weight(b""), Some(0.0));
        assert_eq!(parse_sort_weight(b" 2"), Some(2.0));
        assert_eq!(parse_sort_weight(b"1e-310"), None);
        assert_eq!(parse_sort_weight(b"2x"), None);
    }

    #[test]
    fn a_float_argument_is_read_as_redis_reads_it() {
        for (text, expected) in [
            ("1.5", Some(1.5)),
            ("0x10", Some(16.0)),
            ("inf", Some(f64::INFINITY)),
            ("-inf", Some(f64::NEG_INFINITY)),
            ("1e-310", Some(1e-310)),
            ("1e400", None),
            ("1e-400", None),
            ("nan", None),
            ("", None),
            (" 1", None),
            ("1 ", None),
            ("1\u{0}", None),
            ("(1", None),
        ] {
            assert_eq!(parse_f64(text.as_bytes()), expected, "{text:?}");
        }
        for (text, expected) in [
            ("1.5", Some(1.5)),
            ("", Some(0.0)),
            (" 1", Some(1.0)),
            ("  ", None),
            ("1e400", Some(f64::INFINITY)),
            ("1e-400", Some(0.0)),
            ("1\u{0}abc", Some(1.0)),
            ("\u{0}", Some(0.0)),
            ("1 ", None),
            ("nan", None),
            ("abc", None),
            ("0x10", Some(16.0)),
        ] {
            assert_eq!(parse_range_f64(text.as_bytes()), expected, "range end {text:?}");
        }
    }
}
