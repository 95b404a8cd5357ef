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

/// Parse a float argument (INCRBYFLOAT, score-like values): no surrounding spaces, the
/// whole text must be a number, NaN refused.
pub fn parse_f64(bytes: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(bytes).ok()?;
    if text.is_empty() || text.trim() != text {
        return None;
    }
    let value: f64 = text.parse().ok()?;
    if value.is_nan() { None } else { Some(value) }
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
