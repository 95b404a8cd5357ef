//! Cypher values: what expressions evaluate to, how they compare, order and add up, and
//! their byte encoding inside a graph's property elements.
//!
//! Owns the semantics of one value; knows nothing of the graph it came from (a node or
//! an edge is only its id here). Never does I/O.

use std::cmp::Ordering;
use std::fmt::Write as _;

use super::store::ElemId;

/// A value during query execution.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    List(Vec<Value>),
    /// Keys in the order written (Cypher maps keep no order; FalkorDB prints them so).
    Map(Vec<(String, Value)>),
    Node(ElemId),
    Edge(ElemId),
    /// A path: its nodes, and the edges between them (one fewer).
    Path(Vec<ElemId>, Vec<ElemId>),
}

/// Nested lists and maps deeper than this are refused when decoded: a stored value is
/// untrusted bytes (from a peer or storage).
const DEPTH_MAX: usize = 64;

impl Value {
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "Null",
            Value::Bool(_) => "Boolean",
            Value::Int(_) => "Integer",
            Value::Float(_) => "Float",
            Value::Str(_) => "String",
            Value::List(_) => "List",
            Value::Map(_) => "Map",
            Value::Node(_) => "Node",
            Value::Edge(_) => "Edge",
            Value::Path(..) => "Path",
        }
    }

    /// Whether a property may hold this value (FalkorDB stores scalars and lists of them).
    pub fn storable(&self) -> bool {
        match self {
            Value::Null | Value::Bool(_) | Value::Int(_) | Value::Float(_) | Value::Str(_) => true,
            Value::List(items) => {
                items.iter().all(|v| !matches!(v, Value::Map(_) | Value::Node(_) | Value::Edge(_) | Value::Path(..)) && v.storable())
            }
            Value::Map(_) | Value::Node(_) | Value::Edge(_) | Value::Path(..) => false,
        }
    }

    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Int(n) => Some(*n as f64),
            Value::Float(f) => Some(*f),
            _ => None,
        }
    }

    /// Cypher equality: `None` is null (unknown): comparing with null, or values whose
    /// equality is undefined.
    pub fn equals(&self, other: &Value) -> Option<bool> {
        match (self, other) {
            (Value::Null, _) | (_, Value::Null) => None,
            (Value::Int(a), Value::Int(b)) => Some(a == b),
            (a, b) if a.as_f64().is_some() && b.as_f64().is_some() => Some(a.as_f64() == b.as_f64()),
            (Value::Bool(a), Value::Bool(b)) => Some(a == b),
            (Value::Str(a), Value::Str(b)) => Some(a == b),
            (Value::Node(a), Value::Node(b)) | (Value::Edge(a), Value::Edge(b)) => Some(a == b),
            (Value::Path(a, x), Value::Path(b, y)) => Some(a == b && x == y),
            (Value::List(a), Value::List(b)) => {
                if a.len() != b.len() {
                    return Some(false);
                }
                let mut unknown = false;
                for (x, y) in a.iter().zip(b) {
                    match x.equals(y) {
                        Some(false) => return Some(false),
                        None => unknown = true,
                        Some(true) => {}
                    }
                }
                if unknown { None } else { Some(true) }
            }
            (Value::Map(a), Value::Map(b)) => {
                if a.len() != b.len() {
                    return Some(false);
                }
                for (k, v) in a {
                    match b.iter().find(|(k2, _)| k2 == k) {
                        None => return Some(false),
                        Some((_, w)) => {
                            if v.equals(w) != Some(true) {
                                return Some(false);
                            }
                        }
                    }
                }
                Some(true)
            }
            _ => Some(false),
        }
    }

    /// `<`, `>` and friends: `None` when the values are not comparable (null, or
    /// different types).
    pub fn compare(&self, other: &Value) -> Option<Ordering> {
        match (self, other) {
            (Value::Int(a), Value::Int(b)) => Some(a.cmp(b)),
            (a, b) if a.as_f64().is_some() && b.as_f64().is_some() => a.as_f64()?.partial_cmp(&b.as_f64()?),
            (Value::Str(a), Value::Str(b)) => Some(a.cmp(b)),
            (Value::Bool(a), Value::Bool(b)) => Some(a.cmp(b)),
            (Value::List(a), Value::List(b)) => {
                for (x, y) in a.iter().zip(b) {
                    match x.compare(y)? {
                        Ordering::Equal => {}
                        other => return Some(other),
                    }
                }
                Some(a.len().cmp(&b.len()))
            }
            _ => None,
        }
    }

    /// The total order ORDER BY, min and max use (openCypher's orderability): maps,
    /// nodes, edges, lists, strings, booleans, numbers, then null.
    pub fn order(&self, other: &Value) -> Ordering {
        fn rank(v: &Value) -> u8 {
            match v {
                Value::Map(_) => 0,
                Value::Node(_) => 1,
                Value::Edge(_) => 2,
                Value::List(_) | Value::Path(..) => 3,
                Value::Str(_) => 4,
                Value::Bool(_) => 5,
                Value::Int(_) | Value::Float(_) => 6,
                Value::Null => 7,
            }
        }
        match (self, other) {
            (Value::Int(a), Value::Int(b)) => a.cmp(b),
            (a, b) if rank(a) == 6 && rank(b) == 6 => {
                let (x, y) = (a.as_f64().unwrap_or(0.0), b.as_f64().unwrap_or(0.0));
                x.partial_cmp(&y).unwrap_or_else(|| x.is_nan().cmp(&y.is_nan()))
            }
            (Value::Str(a), Value::Str(b)) => a.cmp(b),
            (Value::Bool(a), Value::Bool(b)) => a.cmp(b),
            (Value::Node(a), Value::Node(b)) | (Value::Edge(a), Value::Edge(b)) => a.cmp(b),
            (Value::List(a), Value::List(b)) => {
                for (x, y) in a.iter().zip(b) {
                    match x.order(y) {
                        Ordering::Equal => {}
                        other => return other,
                    }
                }
                a.len().cmp(&b.len())
            }
            (Value::Map(a), Value::Map(b)) => a.len().cmp(&b.len()),
            (Value::Path(a, x), Value::Path(b, y)) => a.cmp(b).then_with(|| x.cmp(y)),
            (Value::Path(..), Value::List(_)) => Ordering::Greater,
            (Value::List(_), Value::Path(..)) => Ordering::Less,
            (a, b) => rank(a).cmp(&rank(b)),
        }
    }

    /// A key under which equal values group together (DISTINCT, grouping keys): equal
    /// numbers of either type share one key.
    pub fn group_key(&self, out: &mut Vec<u8>) {
        match self {
            Value::Float(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Value::Int(*f as i64).group_key(out),
            Value::List(items) => {
                out.push(b'L');
                out.extend_from_slice(&(items.len() as u64).to_le_bytes());
                items.iter().for_each(|v| v.group_key(out));
            }
            Value::Map(entries) => {
                let mut sorted: Vec<_> = entries.iter().collect();
                sorted.sort_by(|a, b| a.0.cmp(&b.0));
                out.push(b'M');
                out.extend_from_slice(&(sorted.len() as u64).to_le_bytes());
                for (k, v) in sorted {
                    encode_str(out, k);
                    v.group_key(out);
                }
            }
            Value::Node(id) => {
                out.push(b'N');
                out.extend_from_slice(&id.to_bytes());
            }
            Value::Edge(id) => {
                out.push(b'E');
                out.extend_from_slice(&id.to_bytes());
            }
            other => other.encode(out),
        }
    }

    /// The stored form of a property value (a tag byte, then the payload).
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Value::Null => out.push(0),
            Value::Bool(false) => out.push(1),
            Value::Bool(true) => out.push(2),
            Value::Int(n) => {
                out.push(3);
                out.extend_from_slice(&n.to_le_bytes());
            }
            Value::Float(f) => {
                out.push(4);
                out.extend_from_slice(&f.to_le_bytes());
            }
            Value::Str(s) => {
                out.push(5);
                encode_str(out, s);
            }
            Value::List(items) => {
                out.push(6);
                out.extend_from_slice(&(items.len() as u32).to_le_bytes());
                items.iter().for_each(|v| v.encode(out));
            }
            Value::Map(entries) => {
                out.push(7);
                out.extend_from_slice(&(entries.len() as u32).to_le_bytes());
                for (k, v) in entries {
                    encode_str(out, k);
                    v.encode(out);
                }
            }
            // Never stored (checked by `storable`); encoded as null to stay total.
            Value::Node(_) | Value::Edge(_) | Value::Path(..) => out.push(0),
        }
    }

    /// Decode one value from the front of `bytes`, returning it and the rest.
    pub fn decode(bytes: &[u8]) -> Option<(Value, &[u8])> {
        decode_at(bytes, 0)
    }

    /// How FalkorDB prints a value inside a string (lists, maps, and `toString`).
    pub fn write_text(&self, out: &mut String, nested: bool) {
        match self {
            Value::Null => out.push_str("NULL"),
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::Int(n) => {
                let _ = write!(out, "{n}");
            }
            // Inside a list FalkorDB prints floats with six decimals (C's %f).
            Value::Float(f) if nested => {
                let _ = write!(out, "{f:.6}");
            }
            Value::Float(f) => out.push_str(&format_g15(*f)),
            Value::Str(s) => out.push_str(s),
            Value::List(items) => {
                out.push('[');
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    v.write_text(out, true);
                }
                out.push(']');
            }
            Value::Map(entries) => {
                out.push('{');
                for (i, (k, v)) in entries.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    out.push_str(k);
                    out.push_str(": ");
                    v.write_text(out, true);
                }
                out.push('}');
            }
            Value::Node(id) | Value::Edge(id) => {
                let _ = write!(out, "{}", id.visible());
            }
            // FalkorDB's form: `[(node), [edge], (node)]`.
            Value::Path(nodes, edges) => {
                out.push('[');
                for (i, n) in nodes.iter().enumerate() {
                    if i > 0 {
                        let _ = write!(out, ", [{}], ", edges.get(i - 1).map_or(0, |e| e.visible()));
                    }
                    let _ = write!(out, "({})", n.visible());
                }
                out.push(']');
            }
        }
    }
}

fn encode_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn take(bytes: &[u8], n: usize) -> Option<(&[u8], &[u8])> {
    (bytes.len() >= n).then(|| bytes.split_at(n))
}

fn decode_str(bytes: &[u8]) -> Option<(String, &[u8])> {
    let (len, rest) = take(bytes, 4)?;
    let len = u32::from_le_bytes(len.try_into().ok()?) as usize;
    let (text, rest) = take(rest, len)?;
    Some((String::from_utf8(text.to_vec()).ok()?, rest))
}

fn decode_at(bytes: &[u8], depth: usize) -> Option<(Value, &[u8])> {
    if depth > DEPTH_MAX {
        return None;
    }
    let (&tag, rest) = bytes.split_first()?;
    match tag {
        0 => Some((Value::Null, rest)),
        1 => Some((Value::Bool(false), rest)),
        2 => Some((Value::Bool(true), rest)),
        3 => {
            let (n, rest) = take(rest, 8)?;
            Some((Value::Int(i64::from_le_bytes(n.try_into().ok()?)), rest))
        }
        4 => {
            let (n, rest) = take(rest, 8)?;
            Some((Value::Float(f64::from_le_bytes(n.try_into().ok()?)), rest))
        }
        5 => decode_str(rest).map(|(s, rest)| (Value::Str(s), rest)),
        6 | 7 => {
            let (n, mut rest) = take(rest, 4)?;
            let n = u32::from_le_bytes(n.try_into().ok()?) as usize;
            // Each entry takes at least one byte: a count beyond what is left is corrupt.
            if n > rest.len() {
                return None;
            }
            if tag == 6 {
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    let (v, r) = decode_at(rest, depth + 1)?;
                    items.push(v);
                    rest = r;
                }
                Some((Value::List(items), rest))
            } else {
                let mut entries = Vec::with_capacity(n);
                for _ in 0..n {
                    let (k, r) = decode_str(rest)?;
                    let (v, r) = decode_at(r, depth + 1)?;
                    entries.push((k, v));
                    rest = r;
                }
                Some((Value::Map(entries), rest))
            }
        }
        _ => None,
    }
}

/// C's `%.15g`: what FalkorDB prints for a float outside a list.
pub fn format_g15(f: f64) -> String {
    if f.is_nan() {
        return "nan".to_owned();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf".to_owned() } else { "-inf".to_owned() };
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0".to_owned() } else { "0".to_owned() };
    }
    let exponent = f.abs().log10().floor() as i32;
    // %g picks scientific notation when the exponent is < -4 or >= the precision.
    let scientific = format!("{:.14e}", f);
    let (mantissa, exp) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exp: i32 = exp.parse().unwrap_or(exponent);
    if !(-4..15).contains(&exp) {
        let mantissa = trim_zeros(mantissa);
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exp.abs());
    }
    let decimals = (14 - exp).max(0) as usize;
    trim_zeros(&format!("{f:.decimals$}")).to_owned()
}

fn trim_zeros(text: &str) -> &str {
    if !text.contains('.') {
        return text;
    }
    text.trim_end_matches('0').trim_end_matches('.')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_as_falkordb_prints_them() {
        assert_eq!(format_g15(1.5), "1.5");
        assert_eq!(format_g15(1.0), "1");
        assert_eq!(format_g15(0.1 + 0.2), "0.3");
        assert_eq!(format_g15(1e20), "1e+20");
        assert_eq!(format_g15(10.0 / 3.0), "3.33333333333333");
        assert_eq!(format_g15(-0.0), "-0");
        assert_eq!(format_g15(0.0001), "0.0001");
        assert_eq!(format_g15(0.00001), "1e-05");
    }

    #[test]
    fn stored_values_decode_to_what_was_encoded() {
        let v = Value::List(vec![Value::Int(-3), Value::Float(2.5), Value::Str("é".into()), Value::Bool(true), Value::Null]);
        let mut bytes = Vec::new();
        v.encode(&mut bytes);
        let (back, rest) = Value::decode(&bytes).expect("decodes");
        assert!(rest.is_empty());
        assert_eq!(back.equals(&v), None, "a list holding null compares unknown");
        assert_eq!(back.order(&v), Ordering::Equal);
        assert!(Value::decode(&bytes[..bytes.len() - 1]).is_none());
    }
}
