//! SORT and SORT_RO: parsing (`SortCommand`). Running them is `shell::sort`'s job, as
//! they read keys named by patterns on any shard.

use bytes::Bytes;

use super::errors;
use super::numbers::parse_i64;
use crate::protocol::Frame;

/// SORT key [BY pattern] [LIMIT offset count] [GET pattern ...] [ASC|DESC] [ALPHA]
/// [STORE destination]; SORT_RO has no STORE.
#[derive(Clone, Debug, PartialEq)]
pub struct SortCommand {
    pub key: Bytes,
    /// BY's pattern; one without `*` means "do not sort".
    pub by: Option<Bytes>,
    /// LIMIT offset count, as given (clamped when run).
    pub limit: Option<(i64, i64)>,
    /// GET patterns in order (`#` is the element itself).
    pub gets: Vec<Bytes>,
    pub desc: bool,
    pub alpha: bool,
    pub store: Option<Bytes>,
}

impl SortCommand {
    /// Whether BY names a constant (no `*`): the elements keep their order.
    pub fn dont_sort(&self) -> bool {
        self.by.as_ref().is_some_and(|p| !p.contains(&b'*'))
    }
}

/// Parse SORT (`readonly`: SORT_RO) from its full argument list, with Redis's errors.
pub fn parse(args: &[Bytes], readonly: bool) -> Result<SortCommand, Frame> {
    let mut sort = SortCommand { key: args[1].clone(), by: None, limit: None, gets: Vec::new(), desc: false, alpha: false, store: None };
    let mut i = 2;
    while i < args.len() {
        let left = args.len() - i - 1;
        let word = args[i].to_ascii_lowercase();
        match word.as_slice() {
            b"asc" => sort.desc = false,
            b"desc" => sort.desc = true,
            b"alpha" => sort.alpha = true,
            b"limit" if left >= 2 => {
                let (Some(offset), Some(count)) = (parse_i64(&args[i + 1]), parse_i64(&args[i + 2])) else {
                    return Err(errors::error(errors::NOT_INTEGER));
                };
                sort.limit = Some((offset, count));
                i += 2;
            }
            b"store" if left >= 1 && !readonly => {
                sort.store = Some(args[i + 1].clone());
                i += 1;
            }
            b"by" if left >= 1 => {
                sort.by = Some(args[i + 1].clone());
                i += 1;
            }
            b"get" if left >= 1 => {
                sort.gets.push(args[i + 1].clone());
                i += 1;
            }
            _ => return Err(errors::error(errors::SYNTAX)),
        }
        i += 1;
    }
    Ok(sort)
}

/// The key a pattern names for `element` and the hash field after `->`, if any
/// (`None` for a pattern without `*`, or for `#`, which is the element itself).
pub fn pattern_target(pattern: &[u8], element: &[u8]) -> Option<(Bytes, Option<Bytes>)> {
    let star = pattern.iter().position(|&b| b == b'*')?;
    let after = &pattern[star + 1..];
    let arrow = after.windows(2).position(|w| w == b"->").filter(|&at| at + 2 < after.len());
    let (postfix, field) = match arrow {
        Some(at) => (&after[..at], Some(Bytes::copy_from_slice(&after[at + 2..]))),
        None => (after, None),
    };
    let mut key = Vec::with_capacity(star + element.len() + postfix.len());
    key.extend_from_slice(&pattern[..star]);
    key.extend_from_slice(element);
    key.extend_from_slice(postfix);
    Some((Bytes::from(key), field))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<Bytes> {
        words.iter().map(|w| Bytes::copy_from_slice(w.as_bytes())).collect()
    }

    #[test]
    fn options_parse_as_redis_reads_them() {
        let sort =
            parse(&args(&["sort", "k", "BY", "w_*", "LIMIT", "0", "5", "GET", "#", "GET", "o_*->f", "DESC", "ALPHA", "STORE", "d"]), false)
                .unwrap();
        assert_eq!(sort.by.as_deref(), Some(&b"w_*"[..]));
        assert_eq!(sort.limit, Some((0, 5)));
        assert_eq!(sort.gets.len(), 2);
        assert!(sort.desc && sort.alpha && !sort.dont_sort());
        assert_eq!(sort.store.as_deref(), Some(&b"d"[..]));
        assert_eq!(parse(&args(&["sort_ro", "k", "STORE", "d"]), true), Err(errors::error(errors::SYNTAX)));
        assert_eq!(parse(&args(&["sort", "k", "LIMIT", "x", "1"]), false), Err(errors::error(errors::NOT_INTEGER)));
        assert_eq!(parse(&args(&["sort", "k", "LIMIT", "1"]), false), Err(errors::error(errors::SYNTAX)));
        assert!(parse(&args(&["sort", "k", "BY", "nosort"]), false).unwrap().dont_sort());
    }

    #[test]
    fn patterns_substitute_the_first_star_and_split_a_hash_field() {
        assert_eq!(pattern_target(b"w_*", b"3"), Some((Bytes::from_static(b"w_3"), None)));
        assert_eq!(pattern_target(b"o_*->name", b"a"), Some((Bytes::from_static(b"o_a"), Some(Bytes::from_static(b"name")))));
        assert_eq!(pattern_target(b"o_*->", b"a"), Some((Bytes::from_static(b"o_a->"), None)), "an arrow with no field is part of the key");
        assert_eq!(pattern_target(b"*_*", b"x"), Some((Bytes::from_static(b"x_*"), None)), "only the first star");
        assert_eq!(pattern_target(b"constant", b"x"), None);
    }
}
