//! FT.AGGREGATE's expressions (APPLY and FILTER): their grammar, parsed once, and
//! their evaluation against one row.
//!
//! Owns the operators, their precedence and the functions, as RediSearch 2.10 has
//! them (checked against it: `tests/vector_differential`): `&&` and `||` one level,
//! left to right, below `!`, below the comparisons, below `+ -`, below `* / % ^` (one
//! level, left to right: `2 * 3 ^ 2` is 36). A minus sign makes a negative number
//! literal only (`-@n` is a syntax error there too). Division or remainder by zero is
//! `nan`. Never reads data itself: a row's values come in through `lookup`.

use bytes::Bytes;

use super::Value;

/// Deepest nesting of parentheses, calls and operators an expression may hold.
const DEPTH_MAX: usize = 64;
/// Most arguments one call may take.
const CALL_ARGS_MAX: usize = 16;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Op {
    And,
    Or,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Pow,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Func {
    Upper,
    Lower,
    Strlen,
    Substr,
    StartsWith,
    Contains,
    Format,
    Exists,
    Abs,
    Ceil,
    Floor,
    Log,
    Log2,
    Exp,
    Sqrt,
}

impl Func {
    fn named(name: &str) -> Result<Func, String> {
        Ok(match name {
            "upper" => Func::Upper,
            "lower" => Func::Lower,
            "strlen" => Func::Strlen,
            "substr" => Func::Substr,
            "startswith" => Func::StartsWith,
            "contains" => Func::Contains,
            "format" => Func::Format,
            "exists" => Func::Exists,
            "abs" => Func::Abs,
            "ceil" => Func::Ceil,
            "floor" => Func::Floor,
            "log" => Func::Log,
            "log2" => Func::Log2,
            "exp" => Func::Exp,
            "sqrt" => Func::Sqrt,
            "split" | "matched_terms" | "timefmt" | "parsetime" | "day" | "hour" | "minute" | "month" | "dayofweek" | "dayofmonth"
            | "dayofyear" | "year" | "monthofyear" | "geodistance" => {
                return Err(format!("Function '{name}' is not supported by Meridian"));
            }
            _ => return Err(format!("Unknown function name '{name}'")),
        })
    }

    fn name(self) -> &'static str {
        match self {
            Func::Upper => "upper",
            Func::Lower => "lower",
            Func::Strlen => "strlen",
            Func::Substr => "substr",
            Func::StartsWith => "startswith",
            Func::Contains => "contains",
            Func::Format => "format",
            Func::Exists => "exists",
            Func::Abs => "abs",
            Func::Ceil => "ceil",
            Func::Floor => "floor",
            Func::Log => "log",
            Func::Log2 => "log2",
            Func::Exp => "exp",
            Func::Sqrt => "sqrt",
        }
    }

    /// How many arguments it takes (at least, at most).
    fn arity(self) -> (usize, usize) {
        match self {
            Func::Substr => (3, 3),
            Func::StartsWith | Func::Contains => (2, 2),
            Func::Format => (1, CALL_ARGS_MAX),
            _ => (1, 1),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Number(f64),
    Text(Bytes),
    /// `@name`
    Property(Bytes),
    Not(Box<Expr>),
    Binary(Op, Box<Expr>, Box<Expr>),
    Call(Func, Vec<Expr>),
}

impl Expr {
    /// Every property the expression reads, in order (`exists`'s too: RediSearch wants
    /// it loaded like any other).
    pub fn properties<'a>(&'a self, out: &mut Vec<&'a Bytes>) {
        match self {
            Expr::Property(p) => out.push(p),
            Expr::Not(e) => e.properties(out),
            Expr::Binary(_, a, b) => {
                a.properties(out);
                b.properties(out);
            }
            Expr::Call(_, args) => args.iter().for_each(|a| a.properties(out)),
            Expr::Number(_) | Expr::Text(_) => {}
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Number(f64),
    Text(Bytes),
    Property(Bytes),
    Name(String),
    Op(Op),
    Not,
    Minus,
    Open,
    Close,
    Comma,
}

/// The operators spelled with two characters (tried before the one-character ones).
const TWO_CHAR_OPS: [(&[u8; 2], Op); 6] =
    [(b"&&", Op::And), (b"||", Op::Or), (b"==", Op::Eq), (b"!=", Op::Ne), (b"<=", Op::Le), (b">=", Op::Ge)];

/// The tokens of `text` with each one's byte offset.
fn tokens(text: &[u8]) -> Result<Vec<(usize, Token)>, String> {
    let syntax = |at: usize| format!("Syntax error at offset {at} near '{}'", String::from_utf8_lossy(&text[at..(at + 1).min(text.len())]));
    let mut out = Vec::new();
    let mut i = 0;
    while i < text.len() {
        let c = text[i];
        let start = i;
        let token = if c.is_ascii_whitespace() {
            i += 1;
            continue;
        } else if c.is_ascii_digit() {
            while i < text.len() && (text[i].is_ascii_digit() || text[i] == b'.') {
                i += 1;
            }
            if i < text.len() && (text[i] == b'e' || text[i] == b'E') {
                i += 1;
                if i < text.len() && (text[i] == b'+' || text[i] == b'-') {
                    i += 1;
                }
                while i < text.len() && text[i].is_ascii_digit() {
                    i += 1;
                }
            }
            let number = std::str::from_utf8(&text[start..i]).ok().and_then(|s| s.parse::<f64>().ok()).ok_or_else(|| syntax(start))?;
            out.push((start, Token::Number(number)));
            continue;
        } else if c == b'"' || c == b'\'' {
            let mut value = Vec::new();
            i += 1;
            loop {
                match text.get(i) {
                    None => return Err(format!("Unknown symbol '{}'", String::from_utf8_lossy(&text[start + 1..]))),
                    Some(&q) if q == c => break,
                    Some(b'\\') if i + 1 < text.len() => {
                        value.push(text[i + 1]);
                        i += 2;
                    }
                    Some(&b) => {
                        value.push(b);
                        i += 1;
                    }
                }
            }
            i += 1;
            out.push((start, Token::Text(Bytes::from(value))));
            continue;
        } else if c == b'@' || c.is_ascii_alphabetic() || c == b'_' {
            i += 1;
            while i < text.len() && (text[i].is_ascii_alphanumeric() || text[i] == b'_') {
                i += 1;
            }
            if c == b'@' {
                if i == start + 1 {
                    return Err(syntax(start));
                }
                out.push((start, Token::Property(Bytes::copy_from_slice(&text[start + 1..i]))));
            } else {
                out.push((start, Token::Name(String::from_utf8_lossy(&text[start..i]).to_ascii_lowercase())));
            }
            continue;
        } else if let Some(&(_, op)) = TWO_CHAR_OPS.iter().find(|(pair, _)| text[i..].starts_with(&pair[..])) {
            Token::Op(op)
        } else {
            let token = match c {
                b'<' => Token::Op(Op::Lt),
                b'>' => Token::Op(Op::Gt),
                b'+' => Token::Op(Op::Add),
                b'-' => Token::Minus,
                b'*' => Token::Op(Op::Mul),
                b'/' => Token::Op(Op::Div),
                b'%' => Token::Op(Op::Mod),
                b'^' => Token::Op(Op::Pow),
                b'!' => Token::Not,
                b'(' => Token::Open,
                b')' => Token::Close,
                b',' => Token::Comma,
                _ => return Err(syntax(start)),
            };
            i += 1;
            out.push((start, token));
            continue;
        };
        i += 2;
        out.push((start, token));
    }
    Ok(out)
}

/// Binding power of a binary operator (higher binds tighter); `!` sits between the
/// logical operators and the comparisons.
fn power(op: Op) -> u8 {
    match op {
        Op::And | Op::Or => 1,
        Op::Eq | Op::Ne | Op::Lt | Op::Le | Op::Gt | Op::Ge => 3,
        Op::Add | Op::Sub => 4,
        Op::Mul | Op::Div | Op::Mod | Op::Pow => 5,
    }
}
const NOT_POWER: u8 = 2;

struct Parser<'a> {
    text: &'a [u8],
    tokens: Vec<(usize, Token)>,
    at: usize,
}

impl Parser<'_> {
    /// RediSearch's text: the offset of the token the parser stopped at (the last one
    /// at the end), near the last token up to it that carries a value (a number, a
    /// string, a property without its `@`, a name).
    fn error(&self) -> String {
        let at = self.at.min(self.tokens.len().saturating_sub(1));
        let offset = self.tokens.get(at).map_or(0, |t| t.0);
        let near = self.tokens[..=at.min(self.tokens.len().saturating_sub(1))]
            .iter()
            .rev()
            .find(|(_, t)| matches!(t, Token::Number(_) | Token::Text(_) | Token::Property(_) | Token::Name(_)))
            .map_or(String::new(), |(start, t)| {
                let start = if matches!(t, Token::Property(_)) { start + 1 } else { *start };
                let end = self.text[start..]
                    .iter()
                    .position(|b| !(b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.')))
                    .map_or(self.text.len(), |p| start + p);
                String::from_utf8_lossy(&self.text[start..end]).into_owned()
            });
        format!("Syntax error at offset {offset} near '{near}'")
    }

    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at).map(|t| &t.1)
    }

    fn next(&mut self) -> Option<Token> {
        let token = self.tokens.get(self.at).map(|t| t.1.clone());
        self.at += 1;
        token
    }

    /// An expression whose binary operators all bind at least `min`.
    fn expr(&mut self, min: u8, depth: usize) -> Result<Expr, String> {
        if depth > DEPTH_MAX {
            return Err("Expression is too deeply nested".into());
        }
        let mut left = if self.peek() == Some(&Token::Not) {
            self.at += 1;
            Expr::Not(Box::new(self.expr(NOT_POWER, depth + 1)?))
        } else {
            self.primary(depth)?
        };
        loop {
            let op = match self.peek() {
                Some(Token::Op(op)) => *op,
                Some(Token::Minus) => Op::Sub,
                _ => return Ok(left),
            };
            if power(op) < min {
                return Ok(left);
            }
            self.at += 1;
            let right = self.expr(power(op) + 1, depth + 1)?;
            left = Expr::Binary(op, Box::new(left), Box::new(right));
        }
    }

    fn primary(&mut self, depth: usize) -> Result<Expr, String> {
        Ok(match self.next() {
            Some(Token::Number(n)) => Expr::Number(n),
            Some(Token::Minus) => match self.next() {
                Some(Token::Number(n)) => Expr::Number(-n),
                _ => {
                    self.at -= 1;
                    return Err(self.error());
                }
            },
            Some(Token::Text(t)) => Expr::Text(t),
            Some(Token::Property(p)) => Expr::Property(p),
            Some(Token::Open) => {
                let inner = self.expr(0, depth + 1)?;
                if self.next() != Some(Token::Close) {
                    self.at -= 1;
                    return Err(self.error());
                }
                inner
            }
            Some(Token::Name(name)) => {
                let func = Func::named(&name)?;
                if self.next() != Some(Token::Open) {
                    self.at -= 1;
                    return Err(self.error());
                }
                let mut args = Vec::new();
                if self.peek() == Some(&Token::Close) {
                    self.at += 1;
                } else {
                    loop {
                        if args.len() >= CALL_ARGS_MAX {
                            return Err(format!("Invalid arguments for function '{}'", func.name()));
                        }
                        args.push(self.expr(0, depth + 1)?);
                        match self.next() {
                            Some(Token::Comma) => continue,
                            Some(Token::Close) => break,
                            _ => {
                                self.at -= 1;
                                return Err(self.error());
                            }
                        }
                    }
                }
                let (least, most) = func.arity();
                if args.len() < least || args.len() > most {
                    return Err(format!("Invalid arguments for function '{}'", func.name()));
                }
                if func == Func::Exists && !matches!(args[0], Expr::Property(_)) {
                    return Err("Invalid arguments for function 'exists'".into());
                }
                Expr::Call(func, args)
            }
            _ => {
                self.at = self.at.saturating_sub(1);
                return Err(self.error());
            }
        })
    }
}

/// Parse an APPLY or FILTER expression.
pub fn parse(text: &[u8]) -> Result<Expr, String> {
    let tokens = tokens(text)?;
    if tokens.is_empty() {
        return Err("Syntax error at offset 0 near ''".into());
    }
    let mut parser = Parser { text, tokens, at: 0 };
    let expr = parser.expr(0, 0)?;
    if parser.at < parser.tokens.len() {
        return Err(parser.error());
    }
    Ok(expr)
}

/// A value as a number: numbers are, text is parsed (an error if it is not one).
fn number(v: &Value) -> Result<f64, String> {
    v.as_number().ok_or_else(not_a_number)
}

fn not_a_number() -> String {
    "Could not convert value to a number".into()
}

pub(super) fn truthy(v: &Option<Value>) -> bool {
    match v {
        None => false,
        Some(Value::Number(n)) => *n != 0.0,
        Some(Value::Text(t)) => !t.is_empty(),
        Some(Value::List(l)) => !l.is_empty(),
    }
}

fn boolean(b: bool) -> Option<Value> {
    Some(Value::Number(if b { 1.0 } else { 0.0 }))
}

/// Compare two values: as numbers when one is a number and the other reads as one
/// (NaN equal to nothing), else as bytes.
fn compare(a: &Value, b: &Value) -> Option<std::cmp::Ordering> {
    a.order(b, f64::partial_cmp)
}

fn text_arg(func: Func, args: &[Option<Value>], i: usize) -> Result<&Bytes, String> {
    match &args[i] {
        Some(Value::Text(t)) => Ok(t),
        other => {
            let kind = match other {
                Some(Value::Number(_)) => 1,
                Some(Value::List(_)) => 5,
                _ => 4,
            };
            Err(format!("Invalid type ({kind}) for argument {i} in function '{}'. VALIDATE_ARG__STRING(v, {i}) was false.", func.name()))
        }
    }
}

fn number_arg(args: &[Option<Value>], i: usize) -> Result<f64, String> {
    args[i].as_ref().map_or_else(|| Err(not_a_number()), number)
}

/// Evaluate `expr` for one row; `lookup` gives a property's value (`None`: the row has
/// none). A property the row lacks is an error, as in RediSearch, except to `exists`.
pub fn eval(expr: &Expr, lookup: &dyn Fn(&Bytes) -> Option<Value>) -> Result<Option<Value>, String> {
    Ok(match expr {
        Expr::Number(n) => Some(Value::Number(*n)),
        Expr::Text(t) => Some(Value::Text(t.clone())),
        Expr::Property(p) => match lookup(p) {
            Some(v) => Some(v),
            None => return Err(format!("{}: has no value, consider using EXISTS if applicable", String::from_utf8_lossy(p))),
        },
        Expr::Not(e) => boolean(!truthy(&eval(e, lookup)?)),
        Expr::Binary(Op::And, a, b) => boolean(truthy(&eval(a, lookup)?) && truthy(&eval(b, lookup)?)),
        Expr::Binary(Op::Or, a, b) => boolean(truthy(&eval(a, lookup)?) || truthy(&eval(b, lookup)?)),
        Expr::Binary(op, a, b) => {
            let (Some(x), Some(y)) = (eval(a, lookup)?, eval(b, lookup)?) else { return Ok(None) };
            match op {
                Op::Eq | Op::Ne | Op::Lt | Op::Le | Op::Gt | Op::Ge => {
                    use std::cmp::Ordering::*;
                    let order = compare(&x, &y);
                    boolean(match op {
                        Op::Eq => order == Some(Equal),
                        Op::Ne => order != Some(Equal),
                        Op::Lt => order == Some(Less),
                        Op::Le => matches!(order, Some(Less | Equal)),
                        Op::Gt => order == Some(Greater),
                        _ => matches!(order, Some(Greater | Equal)),
                    })
                }
                _ => {
                    let (x, y) = (number(&x)?, number(&y)?);
                    Some(Value::Number(match op {
                        Op::Add => x + y,
                        Op::Sub => x - y,
                        Op::Mul => x * y,
                        Op::Div | Op::Mod if y == 0.0 => f64::NAN,
                        Op::Div => x / y,
                        // On the integer parts (RediSearch's `7.5 % 2` is 1); a divisor
                        // whose integer part is 0 is division by zero too.
                        Op::Mod => match (x as i64).checked_rem(y as i64) {
                            Some(r) => r as f64,
                            None if y as i64 == 0 => f64::NAN,
                            None => 0.0,
                        },
                        _ => x.powf(y),
                    }))
                }
            }
        }
        Expr::Call(Func::Exists, args) => {
            let Expr::Property(p) = &args[0] else { return Err("Invalid arguments for function 'exists'".into()) };
            boolean(lookup(p).is_some())
        }
        Expr::Call(func, args) => {
            let args: Vec<Option<Value>> = args.iter().map(|a| eval(a, lookup)).collect::<Result<_, _>>()?;
            call(*func, &args)?
        }
    })
}

fn call(func: Func, args: &[Option<Value>]) -> Result<Option<Value>, String> {
    let math = |f: fn(f64) -> f64| -> Result<Option<Value>, String> { Ok(Some(Value::Number(f(number_arg(args, 0)?)))) };
    match func {
        Func::Upper | Func::Lower => Ok(match &args[0] {
            Some(Value::Text(t)) => {
                Some(Value::Text(Bytes::from(if func == Func::Upper { t.to_ascii_uppercase() } else { t.to_ascii_lowercase() })))
            }
            _ => None,
        }),
        Func::Strlen => Ok(Some(Value::Number(text_arg(func, args, 0)?.len() as f64))),
        Func::Substr => {
            let text = text_arg(func, args, 0)?;
            let len = text.len() as i64;
            let mut offset = number_arg(args, 1)? as i64;
            if offset < 0 {
                offset += len;
            }
            let offset = offset.clamp(0, len);
            let mut count = number_arg(args, 2)? as i64;
            if count < 0 {
                count += len - offset;
            }
            let count = count.clamp(0, len - offset);
            Ok(Some(Value::Text(text.slice(offset as usize..(offset + count) as usize))))
        }
        Func::StartsWith => Ok(boolean(text_arg(func, args, 0)?.starts_with(text_arg(func, args, 1)?))),
        Func::Contains => {
            let (hay, needle) = (text_arg(func, args, 0)?, text_arg(func, args, 1)?);
            let count = if needle.is_empty() { hay.len() + 1 } else { hay.windows(needle.len()).filter(|w| w == needle).count() };
            Ok(Some(Value::Number(count as f64)))
        }
        Func::Format => format(args),
        Func::Exists => Err("Invalid arguments for function 'exists'".into()),
        Func::Abs => math(f64::abs),
        Func::Ceil => math(f64::ceil),
        Func::Floor => math(f64::floor),
        Func::Log => math(f64::ln),
        Func::Log2 => math(f64::log2),
        Func::Exp => math(f64::exp),
        Func::Sqrt => math(f64::sqrt),
    }
}

/// `format(fmt, args...)`: `%s` takes the next argument as text, `%%` is a percent
/// sign; any other specifier is an error (RediSearch's text for it).
fn format(args: &[Option<Value>]) -> Result<Option<Value>, String> {
    let fmt = text_arg(Func::Format, args, 0)?;
    let mut out = Vec::with_capacity(fmt.len());
    let mut next = 1;
    let mut i = 0;
    while i < fmt.len() {
        if fmt[i] != b'%' {
            out.push(fmt[i]);
            i += 1;
            continue;
        }
        match fmt.get(i + 1) {
            Some(b's') => {
                let arg = args.get(next).ok_or("Not enough arguments for format")?;
                next += 1;
                match arg {
                    Some(v) => out.extend_from_slice(&v.text()),
                    None => out.extend_from_slice(b"(null)"),
                }
            }
            Some(b'%') => out.push(b'%'),
            _ => return Err("Unknown format specifier passed".into()),
        }
        i += 2;
    }
    Ok(Some(Value::Text(Bytes::from(out))))
}

#[cfg(test)]
mod tests;
