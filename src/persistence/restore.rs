//! Point-in-time restore: the pure parts (when a delta belongs to the past, and how a
//! time is written). The shell reads the objects and writes the restored data set.

use crate::crdt::Hlc;
use crate::delta::Delta;

/// Whether every write in `delta` happened at or before `target_ms` (physical time of
/// its newest stamp): such a delta is part of the state as of `target_ms`.
pub fn delta_is_before(delta: &Delta, target_ms: u64) -> bool {
    delta.max_hlc().physical_ms() <= target_ms
}

/// Whether a segment or part whose smallest stamp is `hlc_min` may hold writes at or
/// before `target_ms`.
pub fn may_hold_writes_before(hlc_min: Hlc, target_ms: u64) -> bool {
    hlc_min == Hlc::ZERO || hlc_min.physical_ms() <= target_ms
}

/// Parse `1700000000000` (unix milliseconds) or RFC 3339 (`2026-11-22T23:05:00Z`,
/// `2026-11-22T23:05:00.250+01:00`).
pub fn parse_time(text: &str) -> Result<u64, String> {
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        return text.parse().map_err(|_| format!("time {text:?} is out of range"));
    }
    let bad = || format!("expected unix milliseconds or RFC 3339 (2026-11-22T23:05:00Z), got {text:?}");
    let b = text.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !(b[10] == b'T' || b[10] == b't' || b[10] == b' ') || b[13] != b':' || b[16] != b':'
    {
        return Err(bad());
    }
    let num = |range: std::ops::Range<usize>| -> Result<i64, String> { text.get(range).and_then(|s| s.parse().ok()).ok_or_else(bad) };
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 || second > 60 {
        return Err(bad());
    }
    let mut rest = &text[19..];
    let mut millis = 0i64;
    if let Some(fraction) = rest.strip_prefix('.') {
        let digits: String = fraction.chars().take_while(|c| c.is_ascii_digit()).collect();
        if digits.is_empty() {
            return Err(bad());
        }
        let padded = format!("{:0<3}", &digits[..digits.len().min(3)]);
        millis = padded.parse().map_err(|_| bad())?;
        rest = &fraction[digits.len()..];
    }
    let offset_minutes = match rest {
        "Z" | "z" => 0,
        _ if rest.len() == 6 && (rest.starts_with('+') || rest.starts_with('-')) && &rest[3..4] == ":" => {
            let sign = if rest.starts_with('-') { -1 } else { 1 };
            let h: i64 = rest[1..3].parse().map_err(|_| bad())?;
            let m: i64 = rest[4..6].parse().map_err(|_| bad())?;
            sign * (h * 60 + m)
        }
        _ => return Err(bad()),
    };
    // Days from civil (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let seconds = days * 86_400 + hour * 3_600 + minute * 60 + second - offset_minutes * 60;
    let ms = seconds * 1_000 + millis;
    u64::try_from(ms).map_err(|_| format!("time {text:?} is before 1970"))
}

#[cfg(test)]
mod tests {
    use super::parse_time;

    #[test]
    fn times_parse_as_unix_ms_or_rfc3339() {
        assert_eq!(parse_time("1700000000000"), Ok(1_700_000_000_000));
        assert_eq!(parse_time("2023-11-14T22:13:20Z"), Ok(1_700_000_000_000));
        assert_eq!(parse_time("2023-11-14T23:13:20.5+01:00"), Ok(1_700_000_000_500));
        assert!(parse_time("yesterday").is_err());
        assert!(parse_time("2023-13-14T22:13:20Z").is_err());
    }
}
