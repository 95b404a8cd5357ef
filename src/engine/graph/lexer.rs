//! Splits an openCypher query into tokens, each with its byte offset (FalkorDB names a
//! result column by the text the user wrote, so the parser needs the spans).

/// A query longer than this is refused before it is lexed.
pub const QUERY_BYTES_MAX: usize = 1 << 20;

#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    /// An identifier or keyword (keywords are matched case-insensitively).
    Ident(String),
    /// A backquoted identifier: never a keyword.
    Quoted(String),
    Int(i64),
    /// 9223372036854775808: i64::MIN's magnitude, an integer only after a minus.
    IntMinMagnitude,
    Float(f64),
    Str(String),
    Param(String),
    Punct(&'static str),
    End,
}

#[derive(Clone, Debug)]
pub struct Token {
    pub tok: Tok,
    pub start: usize,
    pub end: usize,
}

const PUNCT2: [&str; 7] = ["<=", ">=", "<>", "!=", "..", "+=", "=~"];
const PUNCT1: [&str; 19] = ["(", ")", "[", "]", "{", "}", ",", ".", ":", "|", ";", "+", "-", "*", "/", "%", "^", "=", "<"];

pub fn lex(text: &str) -> Result<Vec<Token>, String> {
    if text.len() > QUERY_BYTES_MAX {
        return Err(format!("query longer than {QUERY_BYTES_MAX} bytes"));
    }
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if text[i..].starts_with("//") {
            i = text[i..].find('\n').map_or(bytes.len(), |n| i + n);
            continue;
        }
        if text[i..].starts_with("/*") {
            i = text[i + 2..].find("*/").map_or(bytes.len(), |n| i + n + 4);
            continue;
        }
        let start = i;
        let tok = if c.is_ascii_alphabetic() || c == b'_' || c >= 0x80 {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_' || bytes[i] >= 0x80) {
                i += 1;
            }
            Tok::Ident(text[start..i].to_owned())
        } else if c == b'`' {
            let close = text[i + 1..].find('`').ok_or("unterminated `identifier`")?;
            i += close + 2;
            Tok::Quoted(text[start + 1..i - 1].to_owned())
        } else if c == b'$' {
            i += 1;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            Tok::Param(text[start + 1..i].to_owned())
        } else if c.is_ascii_digit() || (c == b'.' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit) && !prev_is_value(&out)) {
            let (tok, next) = number(text, i)?;
            i = next;
            tok
        } else if c == b'\'' || c == b'"' {
            let (s, next) = string(text, i)?;
            i = next;
            Tok::Str(s)
        } else if let Some(p) = PUNCT2.iter().find(|p| text[i..].starts_with(**p)) {
            i += 2;
            Tok::Punct(p)
        } else if c == b'>' {
            i += 1;
            Tok::Punct(">")
        } else if let Some(p) = PUNCT1.iter().find(|p| text[i..].starts_with(**p)) {
            i += 1;
            Tok::Punct(p)
        } else {
            return Err(format!("Invalid input '{}' at offset {start}", &text[start..].chars().next().unwrap_or(' ')));
        };
        out.push(Token { tok, start, end: i });
    }
    out.push(Token { tok: Tok::End, start: bytes.len(), end: bytes.len() });
    Ok(out)
}

/// Whether the previous token ends a value (then `.` is property access, not a float).
fn prev_is_value(out: &[Token]) -> bool {
    matches!(out.last().map(|t| &t.tok), Some(Tok::Ident(_) | Tok::Quoted(_) | Tok::Punct(")" | "]" | "}")))
}

fn number(text: &str, start: usize) -> Result<(Tok, usize), String> {
    let bytes = text.as_bytes();
    let mut i = start;
    if text[i..].starts_with("0x") || text[i..].starts_with("0X") {
        i += 2;
        while i < bytes.len() && bytes[i].is_ascii_hexdigit() {
            i += 1;
        }
        let n = i64::from_str_radix(&text[start + 2..i], 16).map_err(|_| format!("Integer overflow '{}'", &text[start..i]))?;
        return Ok((Tok::Int(n), i));
    }
    let mut float = false;
    while i < bytes.len() && bytes[i].is_ascii_digit() {
        i += 1;
    }
    // `1..3` is a range, not the float `1.`.
    if i < bytes.len() && bytes[i] == b'.' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit) {
        float = true;
        i += 1;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
    }
    if i < bytes.len() && (bytes[i] == b'e' || bytes[i] == b'E') {
        let mut j = i + 1;
        if j < bytes.len() && (bytes[j] == b'-' || bytes[j] == b'+') {
            j += 1;
        }
        if j < bytes.len() && bytes[j].is_ascii_digit() {
            float = true;
            i = j;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
        }
    }
    let digits = &text[start..i];
    if float {
        digits.parse::<f64>().map(|f| (Tok::Float(f), i)).map_err(|_| format!("Invalid number '{digits}'"))
    } else {
        match digits.parse::<i64>() {
            Ok(n) => Ok((Tok::Int(n), i)),
            // `-9223372036854775808`: only valid negated (the parser checks).
            Err(_) if digits == "9223372036854775808" => Ok((Tok::IntMinMagnitude, i)),
            Err(_) => Err(format!("Integer overflow '{digits}'")),
        }
    }
}

fn string(text: &str, start: usize) -> Result<(String, usize), String> {
    let quote = text.as_bytes()[start] as char;
    let mut out = String::new();
    let mut chars = text[start + 1..].char_indices();
    while let Some((offset, c)) = chars.next() {
        match c {
            c if c == quote => return Ok((out, start + 1 + offset + 1)),
            '\\' => match chars.next().map(|(_, e)| e) {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('r') => out.push('\r'),
                Some('b') => out.push('\u{8}'),
                Some('f') => out.push('\u{c}'),
                Some('0') => out.push('\0'),
                Some(other) => out.push(other),
                None => break,
            },
            c => out.push(c),
        }
    }
    Err("unterminated string literal".to_owned())
}
