//! GROUPBY's reducers: their arguments, RediSearch's generated names for their
//! columns, and what each makes of one group's values.
//!
//! Owns COUNT, SUM, AVG, MIN, MAX, COUNT_DISTINCT, TOLIST, STDDEV, QUANTILE and
//! FIRST_VALUE. Pure: a group's values come in already read from its rows.

use std::cmp::Ordering;

use bytes::Bytes;

use super::{Value, compare, count, eq, property};

#[derive(Clone, Debug, PartialEq)]
pub enum ReduceFn {
    Count,
    Sum,
    Avg,
    Min,
    Max,
    CountDistinct,
    /// The distinct values (RediSearch keeps them in a hash set: their order is not
    /// something to rely on; here first-seen order).
    ToList,
    /// The sample standard deviation (n - 1), of the values that are numbers.
    StdDev,
    /// The value at this fraction of the sorted numbers: the `ceil(q * n)`-th
    /// smallest. RediSearch estimates it with a streaming sketch, which gives the same
    /// for the small groups compared; on large groups its estimate may differ.
    Quantile(f64),
    /// The property's value in the group's first row, or in the row with the least
    /// (ascending) or greatest `by` value.
    FirstValue {
        by: Option<(Bytes, bool)>,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct Reducer {
    pub function: ReduceFn,
    /// The property it reads (none for COUNT).
    pub property: Option<Bytes>,
    /// The name of its output column.
    pub alias: Bytes,
}

impl Reducer {
    /// Every property it reads.
    pub fn reads(&self) -> impl Iterator<Item = &Bytes> {
        let by = match &self.function {
            ReduceFn::FirstValue { by: Some((by, _)) } => Some(by),
            _ => None,
        };
        self.property.iter().chain(by)
    }
}

/// `FN nargs args... [AS name]`; returns the reducer and the arguments used.
pub fn parse_reducer(args: &[Bytes]) -> Result<(Reducer, usize), String> {
    let name = args.first().ok_or("Bad arguments for REDUCE: Expected an argument, but none provided")?;
    let upper = String::from_utf8_lossy(name).to_ascii_uppercase();
    let n = count(args.get(1), "REDUCE")?;
    let params = args.get(2..2 + n).ok_or("Bad arguments for REDUCE: Expected an argument, but none provided")?;
    let wrong_count = || format!("Bad arguments for {upper}: wrong number of arguments");
    let first = |params: &[Bytes]| -> Result<Bytes, String> { property(params.first().ok_or_else(wrong_count)?, "REDUCE") };
    let (function, property) = match upper.as_str() {
        "COUNT" if params.is_empty() => (ReduceFn::Count, None),
        "COUNT" => return Err("Count accepts 0 values only".into()),
        "SUM" | "AVG" | "MIN" | "MAX" | "COUNT_DISTINCT" | "TOLIST" | "STDDEV" if params.len() == 1 => {
            let function = match upper.as_str() {
                "SUM" => ReduceFn::Sum,
                "AVG" => ReduceFn::Avg,
                "MIN" => ReduceFn::Min,
                "MAX" => ReduceFn::Max,
                "COUNT_DISTINCT" => ReduceFn::CountDistinct,
                "TOLIST" => ReduceFn::ToList,
                _ => ReduceFn::StdDev,
            };
            (function, Some(first(params)?))
        }
        "SUM" | "AVG" | "MIN" | "MAX" | "COUNT_DISTINCT" | "TOLIST" | "STDDEV" => return Err(wrong_count()),
        "QUANTILE" => {
            let fraction = params
                .get(1)
                .filter(|_| params.len() == 2)
                .and_then(|p| std::str::from_utf8(p).ok()?.parse::<f64>().ok())
                .ok_or("Bad arguments for QUANTILE: Could not convert argument to expected type")?;
            if !(0.0..=1.0).contains(&fraction) {
                return Err("Percentage must be between 0.0 and 1.0".into());
            }
            (ReduceFn::Quantile(fraction), Some(first(params)?))
        }
        "FIRST_VALUE" => {
            let by = match params {
                [_] => None,
                [_, word, by] if eq(word, "BY") => Some((property(by, "REDUCE")?, true)),
                [_, word, by, order] if eq(word, "BY") && (eq(order, "ASC") || eq(order, "DESC")) => {
                    Some((property(by, "REDUCE")?, eq(order, "ASC")))
                }
                _ => return Err(wrong_count()),
            };
            (ReduceFn::FirstValue { by }, Some(first(params)?))
        }
        _ => return Err(format!("Reducer {upper} is not supported by Meridian")),
    };
    let mut used = 2 + n;
    let alias = if args.get(used).is_some_and(|a| eq(a, "AS")) {
        let alias = args.get(used + 1).cloned().ok_or("Bad arguments for AS: Expected an argument, but none provided")?;
        used += 2;
        alias
    } else {
        // RediSearch's: the function in lower case, then its arguments joined by
        // commas, properties without their `@`, keywords in lower case.
        let mut generated = b"__generated_alias".to_vec();
        generated.extend(name.to_ascii_lowercase());
        for (i, param) in params.iter().enumerate() {
            if i > 0 {
                generated.push(b',');
            }
            match param.strip_prefix(b"@") {
                Some(p) => generated.extend_from_slice(p),
                None => generated.extend(param.to_ascii_lowercase()),
            }
        }
        Bytes::from(generated)
    };
    Ok((Reducer { function, property, alias }, used))
}

/// What `reducer` makes of one group: `values` holds its property's value in each row
/// (empty for COUNT), `by` the FIRST_VALUE BY property's, `rows` the group's size.
pub fn reduce(reducer: &Reducer, rows: usize, values: &[Option<Value>], by: &[Option<Value>]) -> Option<Value> {
    let numbers: Vec<f64> = values.iter().flatten().filter_map(Value::as_number).collect();
    let number = |n: f64| Some(Value::Number(n));
    match &reducer.function {
        ReduceFn::Count => number(rows as f64),
        ReduceFn::Sum => number(numbers.iter().sum()),
        ReduceFn::Avg if numbers.is_empty() => number(f64::NAN),
        ReduceFn::Avg => number(numbers.iter().sum::<f64>() / numbers.len() as f64),
        ReduceFn::Min => number(numbers.iter().copied().reduce(f64::min).unwrap_or(f64::INFINITY)),
        ReduceFn::Max => number(numbers.iter().copied().reduce(f64::max).unwrap_or(f64::NEG_INFINITY)),
        ReduceFn::CountDistinct => number(distinct(values).len() as f64),
        ReduceFn::ToList => Some(Value::List(distinct(values))),
        ReduceFn::StdDev if numbers.len() < 2 => number(0.0),
        ReduceFn::StdDev => {
            let mean = numbers.iter().sum::<f64>() / numbers.len() as f64;
            let squares: f64 = numbers.iter().map(|x| (x - mean) * (x - mean)).sum();
            number((squares / (numbers.len() - 1) as f64).sqrt())
        }
        ReduceFn::Quantile(_) if numbers.is_empty() => None,
        ReduceFn::Quantile(q) => {
            let mut sorted = numbers;
            sorted.sort_by(f64::total_cmp);
            let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
            number(sorted[rank - 1])
        }
        ReduceFn::FirstValue { by: None } => values.iter().flatten().next().cloned(),
        ReduceFn::FirstValue { by: Some((_, ascending)) } => {
            // The first row with the least (or greatest) `by` value; rows without one
            // only when no row has one.
            let mut best: Option<usize> = None;
            for (i, key) in by.iter().enumerate() {
                let better = match best {
                    None => true,
                    Some(b) => match (key, &by[b]) {
                        (Some(_), None) => true,
                        (None, _) => false,
                        (Some(k), Some(bk)) => {
                            let order = compare(Some(k), Some(bk));
                            if *ascending { order == Ordering::Less } else { order == Ordering::Greater }
                        }
                    },
                };
                if better {
                    best = Some(i);
                }
            }
            best.and_then(|b| values[b].clone())
        }
    }
}

/// The distinct values present, in first-seen order.
fn distinct(values: &[Option<Value>]) -> Vec<Value> {
    let mut seen = hashbrown::HashSet::new();
    values.iter().flatten().filter(|v| seen.insert(v.text())).cloned().collect()
}
