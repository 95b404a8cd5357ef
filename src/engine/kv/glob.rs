//! Redis glob patterns (KEYS, SCAN MATCH): `*`, `?`, `[abc]`, `[^a-z]`, `\x` escapes,
//! matched on raw bytes. Iterative with one backtrack point, so no pattern can make it
//! take exponential time.

pub fn glob_match(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() {
            match pattern[p] {
                b'*' => {
                    while p < pattern.len() && pattern[p] == b'*' {
                        p += 1;
                    }
                    if p == pattern.len() {
                        return true;
                    }
                    star = Some((p, t));
                    continue;
                }
                b'?' => {
                    p += 1;
                    t += 1;
                    continue;
                }
                b'[' => {
                    if let Some((matched, next)) = match_class(pattern, p, text[t])
                        && matched
                    {
                        p = next;
                        t += 1;
                        continue;
                    }
                }
                b'\\' if p + 1 < pattern.len() => {
                    if pattern[p + 1] == text[t] {
                        p += 2;
                        t += 1;
                        continue;
                    }
                }
                c => {
                    if c == text[t] {
                        p += 1;
                        t += 1;
                        continue;
                    }
                }
            }
        }
        match star {
            Some((sp, st)) => {
                p = sp;
                t = st + 1;
                star = Some((sp, st + 1));
            }
            None => return false,
        }
    }
    while p < pattern.len() && pattern[p] == b'*' {
        p += 1;
    }
    p == pattern.len()
}

/// Match `c` against the class starting at `pattern[start] == '['`. Returns whether it
/// matched and the index after the class. An unterminated class runs to the end, as in
/// Redis.
fn match_class(pattern: &[u8], start: usize, c: u8) -> Option<(bool, usize)> {
    let mut i = start + 1;
    let negate = pattern.get(i) == Some(&b'^');
    if negate {
        i += 1;
    }
    let mut matched = false;
    while i < pattern.len() && pattern[i] != b']' {
        if pattern[i] == b'\\' && i + 1 < pattern.len() {
            i += 1;
            matched |= pattern[i] == c;
            i += 1;
        } else if i + 2 < pattern.len() && pattern[i + 1] == b'-' && pattern[i + 2] != b']' {
            let (lo, hi) = (pattern[i].min(pattern[i + 2]), pattern[i].max(pattern[i + 2]));
            matched |= lo <= c && c <= hi;
            i += 3;
        } else {
            matched |= pattern[i] == c;
            i += 1;
        }
    }
    let next = if i < pattern.len() { i + 1 } else { i };
    Some((matched != negate, next))
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn globs_match_like_redis() {
        assert!(glob_match(b"*", b"anything"));
        assert!(glob_match(b"h?llo", b"hello"));
        assert!(glob_match(b"h*llo", b"heeeello"));
        assert!(glob_match(b"h[ae]llo", b"hallo"));
        assert!(!glob_match(b"h[^e]llo", b"hello"));
        assert!(glob_match(b"h[a-b]llo", b"hbllo"));
        assert!(glob_match(b"a\\*b", b"a*b"));
        assert!(!glob_match(b"a\\*b", b"axb"));
        assert!(glob_match(b"user:*:name", b"user:42:name"));
        assert!(!glob_match(b"abc", b"abcd"));
        assert!(glob_match(b"\x00*", b"\x00\xff"));
    }

    #[test]
    fn pathological_patterns_finish_quickly() {
        let text = vec![b'a'; 10_000];
        assert!(!glob_match(b"*a*a*a*a*a*a*a*a*a*b", &text));
    }
}
