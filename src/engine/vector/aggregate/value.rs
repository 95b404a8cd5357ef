//! A value in an FT.AGGREGATE row, and how one is shown, read as a number and
//! compared (shared by the pipeline, its reducers and its expressions). Pure data.

use std::cmp::Ordering;

use bytes::Bytes;

use crate::engine::vector::format_double;

/// A value in a row: a NUMERIC field's and a computed number are numbers (shown as
/// RediSearch shows them, `1.50` as `1.5`), the rest text; TOLIST makes a list.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Number(f64),
    Text(Bytes),
    List(Vec<Value>),
}

impl Value {
    /// The value as a reply shows it (a list's items joined by commas).
    pub fn text(&self) -> Bytes {
        match self {
            Value::Number(n) => Bytes::from(show_number(*n)),
            Value::Text(t) => t.clone(),
            Value::List(items) => Bytes::from(items.iter().map(|i| i.text()).collect::<Vec<_>>().join(&b","[..])),
        }
    }

    /// The value as a number: a number is one, text that reads as one is parsed.
    pub(super) fn as_number(&self) -> Option<f64> {
        match self {
            Value::Number(n) => Some(*n),
            Value::Text(t) => std::str::from_utf8(t).ok()?.trim().parse::<f64>().ok(),
            Value::List(_) => None,
        }
    }

    /// Two texts compare as bytes; otherwise as numbers (by `numbers`) where both read
    /// as one, else by their text. SORTBY and the expressions differ only in how they
    /// compare two numbers (a total order to sort by; NaN equal to nothing in `==`).
    pub(super) fn order(&self, other: &Value, numbers: fn(&f64, &f64) -> Option<Ordering>) -> Option<Ordering> {
        match (self, other) {
            (Value::Text(x), Value::Text(y)) => Some(x.cmp(y)),
            _ => match (self.as_number(), other.as_number()) {
                (Some(p), Some(q)) => numbers(&p, &q),
                _ => Some(self.text().cmp(&other.text())),
            },
        }
    }
}

/// `%.12g`, and C's spelling of the non-finite values (a NaN with its sign bit set is
/// `-nan`, as `sqrt(-1)` gives on x86).
fn show_number(n: f64) -> String {
    if n.is_nan() {
        return if n.is_sign_negative() { "-nan" } else { "nan" }.into();
    }
    if n.is_infinite() {
        return if n > 0.0 { "inf" } else { "-inf" }.into();
    }
    format_double(n)
}
