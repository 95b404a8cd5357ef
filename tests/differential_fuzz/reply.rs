//! A reply frame's raw bytes as a tree, and the normal form two servers' replies are
//! compared in: exact, or with the order of an unordered reply (a set's members, a
//! hash's fields) sorted away, or only its shape (a random pick), or a TTL's sign.
//! Knows RESP2 and RESP3 frames; interprets nothing else.

/// How a command's reply is compared.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Norm {
    /// Byte for byte.
    Exact,
    /// An array whose order Redis leaves unspecified (SMEMBERS, SUNION, KEYS, HKEYS).
    Sorted,
    /// An array of field/value pairs, or a map, in unspecified order (HGETALL).
    SortedPairs,
    /// Only the type and the element count (SPOP, SRANDMEMBER, HRANDFIELD).
    Shape,
    /// An integer whose positive values depend on the clock (TTL): any positive is 1.
    Ttl,
    /// A float counter's text (INCRBYFLOAT): Redis's 80-bit long double prints up to 17
    /// significant digits, Meridian's double 15 (docs/semantics.md), so it is compared
    /// as a number to 12 significant digits.
    Float,
    /// A SCAN-family reply, `[cursor, [names]]`: the cursor exactly, the names sorted.
    Scan,
    /// The same with `[name, value]` pairs (HSCAN, ZSCAN), sorted as pairs.
    ScanPairs,
    /// OBJECT's reply (REFCOUNT's too) with an encoding named only by its kind, a string or a hash,
    /// set or sorted set: Redis calls a string changed in place (APPEND, SETRANGE,
    /// SETBIT...) `raw` at any length and never turns a big collection's encoding back
    /// into a small one (SORT even turns a sorted set's into a skiplist), where
    /// Meridian names the encoding by what the key holds now (docs/semantics.md).
    Encoding,
}

/// One reply frame.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Reply {
    /// `+ - : _ , # (` lines: the type byte and the line.
    Line(u8, Vec<u8>),
    /// `$ ! =` blobs; `None` is RESP2's null bulk.
    Blob(u8, Option<Vec<u8>>),
    /// `* ~ > % |` aggregates (maps and attributes flattened to their 2n frames);
    /// `None` is RESP2's null array.
    Aggregate(u8, Option<Vec<Reply>>),
}

/// Parse one complete frame (as `resp::read_frame` cut it); `None` if it is not one.
pub fn parse(bytes: &[u8]) -> Option<Reply> {
    let mut at = 0;
    let reply = parse_at(bytes, &mut at, 0)?;
    (at == bytes.len()).then_some(reply)
}

fn line<'a>(bytes: &'a [u8], at: &mut usize) -> Option<&'a [u8]> {
    let start = *at;
    let end = start + bytes[start..].windows(2).position(|w| w == b"\r\n")?;
    *at = end + 2;
    Some(&bytes[start..end])
}

fn parse_at(bytes: &[u8], at: &mut usize, depth: usize) -> Option<Reply> {
    if depth > 64 {
        return None;
    }
    let kind = *bytes.get(*at)?;
    *at += 1;
    let header = line(bytes, at)?.to_vec();
    let count = || std::str::from_utf8(&header).ok()?.parse::<i64>().ok();
    match kind {
        b'+' | b'-' | b':' | b'_' | b',' | b'#' | b'(' => Some(Reply::Line(kind, header)),
        b'$' | b'!' | b'=' => {
            let len = count()?;
            if len < 0 {
                return Some(Reply::Blob(kind, None));
            }
            let end = *at + len as usize;
            let blob = bytes.get(*at..end)?.to_vec();
            (bytes.get(end..end + 2)? == b"\r\n").then_some(())?;
            *at = end + 2;
            Some(Reply::Blob(kind, Some(blob)))
        }
        b'*' | b'~' | b'>' | b'%' | b'|' => {
            let n = count()?;
            if n < 0 {
                return Some(Reply::Aggregate(kind, None));
            }
            let per = if matches!(kind, b'%' | b'|') { 2 } else { 1 };
            let items = (0..n * per).map(|_| parse_at(bytes, at, depth + 1)).collect::<Option<Vec<_>>>()?;
            Some(Reply::Aggregate(kind, Some(items)))
        }
        _ => None,
    }
}

/// `reply` in the normal form `norm` compares it in.
pub fn normalize(reply: Reply, norm: Norm) -> Reply {
    match (norm, reply) {
        (Norm::Sorted, Reply::Aggregate(kind, Some(mut items))) => {
            items.sort();
            Reply::Aggregate(kind, Some(items))
        }
        (Norm::SortedPairs, Reply::Aggregate(kind, Some(items))) if items.len() % 2 == 0 => {
            let mut pairs: Vec<Vec<Reply>> = items.chunks(2).map(<[Reply]>::to_vec).collect();
            pairs.sort();
            Reply::Aggregate(kind, Some(pairs.concat()))
        }
        (Norm::Scan | Norm::ScanPairs, Reply::Aggregate(kind, Some(mut items))) if items.len() == 2 => {
            let names = items.pop().expect("two items");
            let inner = if norm == Norm::Scan { Norm::Sorted } else { Norm::SortedPairs };
            items.push(normalize(names, inner));
            Reply::Aggregate(kind, Some(items))
        }
        (Norm::Shape, Reply::Aggregate(kind, Some(items))) => {
            Reply::Aggregate(kind, Some(vec![Reply::Line(b'#', b"any".to_vec()); items.len()]))
        }
        (Norm::Shape, Reply::Blob(kind, Some(_))) => Reply::Blob(kind, Some(b"any".to_vec())),
        (Norm::Encoding, Reply::Blob(kind, Some(name))) if matches!(name.as_slice(), b"int" | b"embstr" | b"raw") => {
            Reply::Blob(kind, Some(b"a string".to_vec()))
        }
        (Norm::Encoding, Reply::Blob(kind, Some(name)))
            if matches!(name.as_slice(), b"listpack" | b"intset" | b"hashtable" | b"skiplist") =>
        {
            Reply::Blob(kind, Some(b"a collection".to_vec()))
        }
        // REFCOUNT: Redis shares an integer below 10,000 unless a command made it in
        // place, as for the encoding.
        (Norm::Encoding, Reply::Line(b':', n)) if n == b"1" || n == b"2147483647" => Reply::Line(b':', b"1 or shared".to_vec()),
        (Norm::Float, Reply::Blob(kind, Some(text))) if std::str::from_utf8(&text).ok().and_then(|t| t.parse::<f64>().ok()).is_some() => {
            let value: f64 = std::str::from_utf8(&text).expect("checked").parse().expect("checked");
            Reply::Blob(kind, Some(format!("{value:.11e}").into_bytes()))
        }
        (Norm::Ttl, Reply::Line(b':', n)) if std::str::from_utf8(&n).ok().and_then(|n| n.parse::<i64>().ok()).is_some_and(|n| n > 0) => {
            Reply::Line(b':', b"1".to_vec())
        }
        (_, reply) => reply,
    }
}

/// EXEC's reply: each command's reply in its own normal form (`norms`, in queue order);
/// anything else (EXECABORT, a nil for an aborted WATCH) as it is.
pub fn normalize_each(reply: Reply, norms: &[Norm]) -> Reply {
    match reply {
        Reply::Aggregate(kind, Some(items)) if items.len() == norms.len() => {
            Reply::Aggregate(kind, Some(items.into_iter().zip(norms).map(|(item, norm)| normalize(item, *norm)).collect()))
        }
        other => other,
    }
}

/// A reply as one readable line for a report.
pub fn show(reply: &Reply) -> String {
    let text = |bytes: &[u8]| bytes.iter().flat_map(|&b| std::ascii::escape_default(b)).map(char::from).collect::<String>();
    match reply {
        Reply::Line(kind, line) => format!("{}{}", char::from(*kind), text(line)),
        Reply::Blob(_, None) => "(nil)".to_string(),
        Reply::Blob(_, Some(blob)) => format!("\"{}\"", text(blob)),
        Reply::Aggregate(_, None) => "(nil array)".to_string(),
        Reply::Aggregate(kind, Some(items)) => {
            format!("{}[{}]", char::from(*kind), items.iter().map(show).collect::<Vec<_>>().join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_parse_and_normalize() {
        let set = parse(b"*3\r\n$1\r\nb\r\n$1\r\na\r\n$1\r\nc\r\n").unwrap();
        assert_eq!(show(&normalize(set, Norm::Sorted)), "*[\"a\", \"b\", \"c\"]");
        let hash = parse(b"*4\r\n$2\r\nf2\r\n$1\r\n2\r\n$2\r\nf1\r\n$1\r\n1\r\n").unwrap();
        assert_eq!(show(&normalize(hash, Norm::SortedPairs)), "*[\"f1\", \"1\", \"f2\", \"2\"]");
        assert_eq!(normalize(parse(b":99\r\n").unwrap(), Norm::Ttl), Reply::Line(b':', b"1".to_vec()));
        assert_eq!(normalize(parse(b":-2\r\n").unwrap(), Norm::Ttl), Reply::Line(b':', b"-2".to_vec()));
        assert!(parse(b"$3\r\nab\r\n").is_none(), "a short blob is not a frame");
        assert_eq!(
            parse(b"%1\r\n+a\r\n:1\r\n").unwrap(),
            Reply::Aggregate(b'%', Some(vec![Reply::Line(b'+', b"a".to_vec()), Reply::Line(b':', b"1".to_vec())]))
        );
    }
}
