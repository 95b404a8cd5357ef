//! The differential script format (`tests/differential/commands.txt`): one command per
//! line, split like a shell, with an optional comparison marker or an `@` directive. The
//! format itself is documented at the top of `commands.txt`.

use std::time::Duration;

/// Bound on `@sleep`, so a typo cannot stall the test for minutes.
const SLEEP_MS_MAX: u64 = 10_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Marker {
    /// Byte-for-byte equality.
    Exact,
    /// `~`: RESP type, aggregate length and nullness only.
    TypeOnly,
    /// `?`: not compared.
    Ignore,
}

#[derive(Clone, Debug)]
pub enum Step {
    /// Send `args` as one RESP array of bulk strings; compare the replies per `marker`.
    Command { marker: Marker, args: Vec<Vec<u8>> },
    /// `@sleep MS`.
    Sleep(Duration),
    /// `@protocol`: back to the run's protocol (HELLO 2 or 3), reply not compared.
    Protocol,
}

#[derive(Clone, Debug)]
pub struct Line {
    /// 1-based line number in the script file.
    pub number: usize,
    /// The line as written (marker included), for reports.
    pub text: String,
    pub step: Step,
}

/// Splits one script line into arguments, shell-like: whitespace separates, double quotes
/// take `\\ \" \n \r \t \0 \xHH` escapes, single quotes are literal, adjacent parts join.
pub fn split_args(line: &str) -> Result<Vec<Vec<u8>>, String> {
    let bytes = line.as_bytes();
    let mut args = Vec::new();
    let mut i = 0;
    loop {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        if i == bytes.len() {
            return Ok(args);
        }
        let mut arg = Vec::new();
        while i < bytes.len() && !bytes[i].is_ascii_whitespace() {
            match bytes[i] {
                b'"' => {
                    i += 1;
                    loop {
                        let Some(&c) = bytes.get(i) else {
                            return Err("unterminated double quote".into());
                        };
                        i += 1;
                        match c {
                            b'"' => break,
                            b'\\' => {
                                let Some(&e) = bytes.get(i) else {
                                    return Err("backslash at end of line".into());
                                };
                                i += 1;
                                match e {
                                    b'\\' => arg.push(b'\\'),
                                    b'"' => arg.push(b'"'),
                                    b'n' => arg.push(b'\n'),
                                    b'r' => arg.push(b'\r'),
                                    b't' => arg.push(b'\t'),
                                    b'0' => arg.push(0),
                                    b'x' => {
                                        let hex = bytes
                                            .get(i..i + 2)
                                            .and_then(|h| std::str::from_utf8(h).ok())
                                            .and_then(|h| u8::from_str_radix(h, 16).ok())
                                            .ok_or("\\x needs two hex digits")?;
                                        arg.push(hex);
                                        i += 2;
                                    }
                                    other => {
                                        return Err(format!("unknown escape \\{}", char::from(other)));
                                    }
                                }
                            }
                            _ => arg.push(c),
                        }
                    }
                }
                b'\'' => {
                    i += 1;
                    loop {
                        let Some(&c) = bytes.get(i) else {
                            return Err("unterminated single quote".into());
                        };
                        i += 1;
                        if c == b'\'' {
                            break;
                        }
                        arg.push(c);
                    }
                }
                c => {
                    arg.push(c);
                    i += 1;
                }
            }
        }
        args.push(arg);
    }
}

pub fn parse_script(text: &str) -> Vec<Line> {
    let mut lines = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let number = index + 1;
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let step = if let Some(directive) = trimmed.strip_prefix('@') {
            let words: Vec<&str> = directive.split_whitespace().collect();
            match words.as_slice() {
                ["sleep", ms] => {
                    let ms: u64 = ms.parse().unwrap_or_else(|_| panic!("line {number}: bad @sleep argument"));
                    assert!(ms <= SLEEP_MS_MAX, "line {number}: @sleep longer than {SLEEP_MS_MAX} ms");
                    Step::Sleep(Duration::from_millis(ms))
                }
                ["protocol"] => Step::Protocol,
                _ => panic!("line {number}: unknown directive {trimmed:?}"),
            }
        } else {
            let (marker, rest) = if let Some(rest) = trimmed.strip_prefix("~ ") {
                (Marker::TypeOnly, rest)
            } else if let Some(rest) = trimmed.strip_prefix("? ") {
                (Marker::Ignore, rest)
            } else {
                (Marker::Exact, trimmed)
            };
            let args = split_args(rest).unwrap_or_else(|e| panic!("line {number}: {e}"));
            assert!(!args.is_empty(), "line {number}: a marker without a command");
            Step::Command { marker, args }
        };
        lines.push(Line { number, text: trimmed.to_string(), step });
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&[u8]]) -> Vec<Vec<u8>> {
        words.iter().map(|w| w.to_vec()).collect()
    }

    #[test]
    fn script_lines_split_like_a_shell() {
        assert_eq!(split_args("SET a b").unwrap(), args(&[b"SET", b"a", b"b"]));
        assert_eq!(
            split_args(r#"SET "a b" "\x00\xff\r\n\t\"\\" '' x"y"z '\n'"#).unwrap(),
            args(&[b"SET", b"a b", b"\x00\xff\r\n\t\"\\", b"", b"xyz", b"\\n"])
        );
        assert!(split_args(r#"SET "a"#).is_err());
        assert!(split_args(r#"SET 'a"#).is_err());
        assert!(split_args(r#"SET "\xZZ""#).is_err());
        assert!(split_args(r#"SET "\q""#).is_err());
    }

    #[test]
    fn script_markers_directives_and_comments_are_recognised() {
        let lines = parse_script("# c\n\n  ~ TIME\n? INFO\n@sleep 5\n@protocol\nGET \"\"\n");
        assert_eq!(lines.len(), 5);
        assert_eq!(lines[0].number, 3);
        assert!(matches!(&lines[0].step, Step::Command { marker: Marker::TypeOnly, .. }));
        assert!(matches!(&lines[1].step, Step::Command { marker: Marker::Ignore, .. }));
        assert!(matches!(lines[2].step, Step::Sleep(d) if d == Duration::from_millis(5)));
        assert!(matches!(lines[3].step, Step::Protocol));
        assert!(matches!(&lines[4].step, Step::Command { marker: Marker::Exact, args } if args[1].is_empty()));
    }
}
