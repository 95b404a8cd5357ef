//! LCS's arguments -> a typed [`LcsCommand`], and the longest common subsequence itself
//! with Redis 7.0's replies (the subsequence, its length, or the matching ranges).
//!
//! Redis looks both keys up before it reads the options, so an option's error is kept
//! in the command and reported after the keys are read, in Redis's order. Never touches
//! the keyspace: the shell reads the two strings and hands them to [`lcs`].

use bytes::Bytes;

use super::errors;
use super::numbers::parse_i64;
use crate::protocol::Frame;

pub const NOT_STRINGS: &str = "ERR The specified keys must contain string values";
const LEN_AND_IDX: &str = "ERR If you want both the length and indexes, please just use IDX.";
const TABLE_TOO_BIG: &str = "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len";
const STRING_TOO_LONG: &str = "ERR String too long for LCS";

/// What LCS answers.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum LcsReply {
    /// The subsequence itself.
    Subsequence,
    /// LEN: its length.
    Length,
    /// IDX: the matching ranges, longest-first from the strings' ends, and the length.
    Ranges { match_len_min: u64, with_match_len: bool },
}

/// LCS key1 key2 [LEN] [IDX] [MINMATCHLEN n] [WITHMATCHLEN].
#[derive(Clone, Debug, PartialEq)]
pub struct LcsCommand {
    pub a: Bytes,
    pub b: Bytes,
    /// The options, or the error Redis reports for them once the keys are read.
    pub reply: Result<LcsReply, Frame>,
}

pub fn parse(args: &mut [Bytes]) -> LcsCommand {
    LcsCommand { a: std::mem::take(&mut args[1]), b: std::mem::take(&mut args[2]), reply: parse_options(&args[3..]) }
}

fn parse_options(options: &[Bytes]) -> Result<LcsReply, Frame> {
    let (mut len, mut idx, mut with_match_len, mut match_len_min) = (false, false, false, 0u64);
    let mut i = 0;
    while i < options.len() {
        let option = &options[i];
        if option.eq_ignore_ascii_case(b"len") {
            len = true;
        } else if option.eq_ignore_ascii_case(b"idx") {
            idx = true;
        } else if option.eq_ignore_ascii_case(b"withmatchlen") {
            with_match_len = true;
        } else if option.eq_ignore_ascii_case(b"minmatchlen") && i + 1 < options.len() {
            let n = parse_i64(&options[i + 1]).ok_or_else(|| errors::error(errors::NOT_INTEGER))?;
            // As Redis: a negative minimum means no minimum.
            match_len_min = n.max(0) as u64;
            i += 1;
        } else {
            return Err(errors::error(errors::SYNTAX));
        }
        i += 1;
    }
    match (len, idx) {
        (true, true) => Err(Frame::static_error(LEN_AND_IDX)),
        (true, false) => Ok(LcsReply::Length),
        (false, true) => Ok(LcsReply::Ranges { match_len_min, with_match_len }),
        (false, false) => Ok(LcsReply::Subsequence),
    }
}

/// The reply to LCS over `a` and `b` (a missing key reads as empty). The dynamic
/// programme's table takes `(|a|+1)·(|b|+1)` 32-bit cells; like Redis, refuse when that
/// exceeds `table_bytes_max` (`proto-max-bulk-len`) instead of allocating it.
pub fn lcs(a: &[u8], b: &[u8], reply: LcsReply, table_bytes_max: u64) -> Frame {
    if a.len() as u64 >= u64::from(u32::MAX) - 1 || b.len() as u64 >= u64::from(u32::MAX) - 1 {
        return Frame::static_error(STRING_TOO_LONG);
    }
    let cells = (a.len() as u64 + 1) * (b.len() as u64 + 1);
    if cells.saturating_mul(4) > table_bytes_max {
        return Frame::static_error(TABLE_TOO_BIG);
    }
    let width = b.len() + 1;
    // table[i * width + j]: the LCS length of a[..i] and b[..j].
    let mut table = vec![0u32; cells as usize];
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            table[i * width + j] = if a[i - 1] == b[j - 1] {
                table[(i - 1) * width + j - 1] + 1
            } else {
                table[(i - 1) * width + j].max(table[i * width + j - 1])
            };
        }
    }
    let length = table[a.len() * width + b.len()];
    if reply == LcsReply::Length {
        return Frame::Integer(i64::from(length));
    }
    // Walk back from the ends, collecting the subsequence and its contiguous ranges.
    let mut subsequence = vec![0u8; length as usize];
    let mut ranges = Vec::new();
    let mut open: Option<MatchRange> = None;
    let (mut i, mut j, mut k) = (a.len(), b.len(), length as usize);
    while i > 0 && j > 0 {
        if a[i - 1] == b[j - 1] {
            k -= 1;
            subsequence[k] = a[i - 1];
            open = Some(match open {
                Some(range) => {
                    debug_assert!(range.a_start == i && range.b_start == j, "a match right after a match is contiguous");
                    MatchRange { a_start: i - 1, b_start: j - 1, ..range }
                }
                None => MatchRange { a_start: i - 1, a_end: i - 1, b_start: j - 1, b_end: j - 1 },
            });
            i -= 1;
            j -= 1;
            if i == 0 || j == 0 {
                ranges.extend(open.take());
            }
        } else {
            if table[(i - 1) * width + j] > table[i * width + j - 1] {
                i -= 1;
            } else {
                j -= 1;
            }
            ranges.extend(open.take());
        }
    }
    debug_assert_eq!(k, 0, "the walk placed every byte of the subsequence");
    match reply {
        LcsReply::Subsequence => Frame::Bulk(Bytes::from(subsequence)),
        LcsReply::Length => unreachable!("answered above"),
        LcsReply::Ranges { match_len_min, with_match_len } => {
            let matches = ranges
                .iter()
                .filter(|range| range.len() as u64 >= match_len_min)
                .map(|range| {
                    let pair = |start: usize, end: usize| Frame::Array(vec![Frame::Integer(start as i64), Frame::Integer(end as i64)]);
                    let mut entry = vec![pair(range.a_start, range.a_end), pair(range.b_start, range.b_end)];
                    if with_match_len {
                        entry.push(Frame::Integer(range.len() as i64));
                    }
                    Frame::Array(entry)
                })
                .collect();
            Frame::Map(vec![
                (Frame::bulk_str("matches"), Frame::Array(matches)),
                (Frame::bulk_str("len"), Frame::Integer(i64::from(length))),
            ])
        }
    }
}

/// A run of bytes equal in both strings, as inclusive offsets into each.
#[derive(Copy, Clone, Debug)]
struct MatchRange {
    a_start: usize,
    a_end: usize,
    b_start: usize,
    b_end: usize,
}

impl MatchRange {
    fn len(&self) -> usize {
        self.a_end - self.a_start + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranges(frame: &Frame) -> Vec<Vec<i64>> {
        let Frame::Map(entries) = frame else { panic!("IDX answers a map: {frame:?}") };
        let Frame::Array(matches) = &entries[0].1 else { panic!("matches is an array") };
        matches
            .iter()
            .map(|m| {
                let Frame::Array(parts) = m else { panic!() };
                let mut flat = Vec::new();
                for part in parts {
                    match part {
                        Frame::Array(pair) => flat.extend(pair.iter().map(|p| if let Frame::Integer(n) = p { *n } else { panic!() })),
                        Frame::Integer(n) => flat.push(*n),
                        _ => panic!(),
                    }
                }
                flat
            })
            .collect()
    }

    const A: &[u8] = b"ohmytext";
    const B: &[u8] = b"mynewtext";

    #[test]
    fn subsequence_length_and_ranges_as_redis_documents() {
        assert_eq!(lcs(A, B, LcsReply::Subsequence, u64::MAX), Frame::Bulk(Bytes::from_static(b"mytext")));
        assert_eq!(lcs(A, B, LcsReply::Length, u64::MAX), Frame::Integer(6));
        let idx = lcs(A, B, LcsReply::Ranges { match_len_min: 0, with_match_len: true }, u64::MAX);
        assert_eq!(ranges(&idx), vec![vec![4, 7, 5, 8, 4], vec![2, 3, 0, 1, 2]]);
        let long_only = lcs(A, B, LcsReply::Ranges { match_len_min: 4, with_match_len: false }, u64::MAX);
        assert_eq!(ranges(&long_only), vec![vec![4, 7, 5, 8]]);
    }

    #[test]
    fn empty_and_disjoint_strings() {
        assert_eq!(lcs(b"", b"abc", LcsReply::Subsequence, u64::MAX), Frame::Bulk(Bytes::new()));
        assert_eq!(lcs(b"abc", b"xyz", LcsReply::Length, u64::MAX), Frame::Integer(0));
        assert_eq!(ranges(&lcs(b"abc", b"xyz", LcsReply::Ranges { match_len_min: 0, with_match_len: false }, u64::MAX)).len(), 0);
    }

    #[test]
    fn the_table_is_bounded() {
        assert_eq!(lcs(&[b'a'; 100], &[b'a'; 100], LcsReply::Length, 100), Frame::static_error(TABLE_TOO_BIG));
    }

    #[test]
    fn options_in_redis_order() {
        let parse_line = |line: &str| {
            let mut args: Vec<Bytes> = line.split(' ').map(|s| Bytes::copy_from_slice(s.as_bytes())).collect();
            parse(&mut args).reply
        };
        assert_eq!(parse_line("LCS a b"), Ok(LcsReply::Subsequence));
        assert_eq!(parse_line("LCS a b len"), Ok(LcsReply::Length));
        assert_eq!(parse_line("LCS a b IDX MINMATCHLEN -3"), Ok(LcsReply::Ranges { match_len_min: 0, with_match_len: false }));
        assert_eq!(parse_line("LCS a b LEN IDX"), Err(Frame::static_error(LEN_AND_IDX)));
        assert_eq!(parse_line("LCS a b MINMATCHLEN"), Err(errors::error(errors::SYNTAX)));
        assert_eq!(parse_line("LCS a b MINMATCHLEN x"), Err(errors::error(errors::NOT_INTEGER)));
        assert_eq!(parse_line("LCS a b foo"), Err(errors::error(errors::SYNTAX)));
    }
}
