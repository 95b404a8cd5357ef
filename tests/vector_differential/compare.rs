//! How the FT.* differential compares a RediSearch reply with Meridian's, for each
//! [`Check`]: byte for byte, numbers to 1e-4 relative (distances), as sets (orders
//! RediSearch does not define), runs of equal scores as sets (`Check::Ties`), or
//! FT.INFO's shared fields.
//!
//! Owns only the comparison; the steps and the servers are the parent's.

use redis::Value;

use super::{Check, Reply};

fn number(v: &Value) -> Option<f64> {
    match v {
        Value::BulkString(b) => std::str::from_utf8(b).ok()?.parse().ok(),
        Value::Double(d) => Some(*d),
        _ => None,
    }
}

/// Whether two replies agree under `check` (see [`Check`]).
fn same(a: &Value, b: &Value, approx: bool) -> bool {
    match (a, b) {
        (Value::Array(x), Value::Array(y)) | (Value::Set(x), Value::Set(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q, approx))
        }
        (Value::Map(x), Value::Map(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|((k1, v1), (k2, v2))| same(k1, k2, approx) && same(v1, v2, approx))
        }
        _ if a == b => true,
        _ if approx => match (number(a), number(b)) {
            (Some(x), Some(y)) => (x - y).abs() <= 1e-4 * x.abs().max(y.abs()).max(1e-3),
            _ => false,
        },
        _ => false,
    }
}

fn sorted(v: &Value) -> Value {
    match v {
        Value::Array(items) | Value::Set(items) => {
            let mut items = items.clone();
            items.sort_by_key(|i| format!("{i:?}"));
            Value::Array(items)
        }
        // RESP3: the `results` array inside the map.
        Value::Map(pairs) => Value::Map(pairs.iter().map(|(k, v)| (k.clone(), sorted(v))).collect()),
        other => other.clone(),
    }
}

/// A scored search reply with each run of equal scores sorted by id, in place: RESP2's
/// `[total, id, score, id, score, ...]` (NOCONTENT) or RESP3's `results` array of maps
/// holding a `score`. Anything else is returned as it is.
fn ties_sorted(v: &Value) -> Value {
    fn runs<T: Clone>(items: &[T], score: impl Fn(&T) -> String, key: impl Fn(&T) -> String) -> Vec<T> {
        let mut out: Vec<T> = Vec::with_capacity(items.len());
        let mut start = 0;
        while start < items.len() {
            let mut end = start + 1;
            while end < items.len() && score(&items[end]) == score(&items[start]) {
                end += 1;
            }
            let mut run = items[start..end].to_vec();
            run.sort_by_key(|i| key(i));
            out.extend(run);
            start = end;
        }
        out
    }
    match v {
        Value::Array(items) if items.len() % 2 == 1 && matches!(items.first(), Some(Value::Int(_))) => {
            let pairs: Vec<(Value, Value)> = items[1..].chunks_exact(2).map(|p| (p[0].clone(), p[1].clone())).collect();
            let pairs = runs(&pairs, |p| format!("{:?}", p.1), |p| format!("{:?}", p.0));
            let mut out = vec![items[0].clone()];
            out.extend(pairs.into_iter().flat_map(|(id, score)| [id, score]));
            Value::Array(out)
        }
        Value::Map(pairs) => {
            let field = |m: &Value, f: &str| match m {
                Value::Map(fields) => fields.iter().find(|(k, _)| name_is(k, f)).map(|(_, v)| format!("{v:?}")).unwrap_or_default(),
                _ => String::new(),
            };
            let pairs = pairs.iter().map(|(k, v)| match v {
                Value::Array(results) if name_is(k, "results") => {
                    (k.clone(), Value::Array(runs(results, |m| field(m, "score"), |m| field(m, "id"))))
                }
                _ => (k.clone(), v.clone()),
            });
            Value::Map(pairs.collect())
        }
        other => other.clone(),
    }
}

fn name_is(v: &Value, name: &str) -> bool {
    match v {
        Value::SimpleString(s) => s == name,
        Value::BulkString(b) => b.as_slice() == name.as_bytes(),
        _ => false,
    }
}

/// The FT.INFO fields both must agree on: the name, the definition, the document count
/// and the indexing failures.
fn info_fields(v: &Value) -> Vec<(String, Value)> {
    let pairs: Vec<(Value, Value)> = match v {
        Value::Array(items) => items.chunks_exact(2).map(|p| (p[0].clone(), p[1].clone())).collect(),
        Value::Map(pairs) => pairs.clone(),
        _ => return Vec::new(),
    };
    let wanted = ["index_name", "index_definition", "num_docs", "hash_indexing_failures"];
    let mut out: Vec<(String, Value)> = pairs
        .into_iter()
        .filter_map(|(k, v)| {
            let name = match k {
                Value::BulkString(b) => String::from_utf8_lossy(&b).into_owned(),
                Value::SimpleString(s) => s,
                _ => return None,
            };
            wanted.contains(&name.as_str()).then_some((name, v))
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

pub(super) fn agree(check: Check, want: &Reply, got: &Reply) -> bool {
    match (want, got) {
        (Err(a), Err(b)) => a == b,
        (Ok(a), Ok(b)) => match check {
            Check::Exact => same(a, b, false),
            Check::Scores => same(a, b, true),
            Check::Settle => true,
            Check::AnyOrder => sorted(a) == sorted(b),
            Check::Ties => same(&ties_sorted(a), &ties_sorted(b), false),
            Check::Info => {
                let (x, y) = (info_fields(a), info_fields(b));
                x.len() == 4 && x.len() == y.len() && x.iter().zip(&y).all(|((k1, v1), (k2, v2))| k1 == k2 && same(v1, v2, false))
            }
        },
        _ => false,
    }
}
