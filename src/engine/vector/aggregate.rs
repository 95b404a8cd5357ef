//! FT.AGGREGATE: its pipeline (LOAD, GROUPBY with REDUCE, SORTBY, LIMIT), parsed, and
//! run over the documents a query matched.
//!
//! Owns the pipeline grammar, RediSearch's generated reducer names and the row
//! transformations. Pure: the node gathers the matching documents from its shards and
//! hands them here as (key, hash fields) pairs; this never reads data, a clock or
//! randomness. Anything else of FT.AGGREGATE (APPLY, FILTER, WITHCURSOR, ...) is an
//! error naming it.

use std::cmp::Ordering;

use bytes::Bytes;

use super::format_double;
use super::query::{self, LIMIT_MAX, SearchQuery};
use super::schema::IndexDef;

/// Most reducers and fields one step may name.
const STEP_ARGS_MAX: usize = 1024;
/// Most steps one pipeline may hold.
const STEPS_MAX: usize = 64;

#[derive(Copy, Clone, Debug, PartialEq)]
pub enum ReduceFn {
    Count,
    Sum,
    Avg,
    Min,
    Max,
    CountDistinct,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Reducer {
    pub function: ReduceFn,
    /// The property it reads (none for COUNT).
    pub property: Option<Bytes>,
    /// The name of its output column.
    pub alias: Bytes,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    Load(Vec<Bytes>),
    GroupBy { properties: Vec<Bytes>, reducers: Vec<Reducer> },
    SortBy { keys: Vec<(Bytes, bool)>, max: Option<usize> },
    Limit { offset: usize, num: usize },
}

#[derive(Clone, Debug, PartialEq)]
pub struct AggregateQuery {
    /// The filter (and PARAMS/DIALECT) as FT.SEARCH would run it, every match wanted.
    pub search: SearchQuery,
    pub steps: Vec<Step>,
}

/// One output row: named values, in the order they were added (`None`: no value).
pub type Row = Vec<(Bytes, Option<Bytes>)>;

fn eq(arg: &[u8], word: &str) -> bool {
    arg.eq_ignore_ascii_case(word.as_bytes())
}

fn count(arg: Option<&Bytes>, what: &str) -> Result<usize, String> {
    std::str::from_utf8(arg.ok_or_else(|| format!("Bad arguments for {what}: Expected an argument, but none provided"))?)
        .ok()
        .and_then(|s| s.parse::<usize>().ok())
        .filter(|n| *n <= STEP_ARGS_MAX)
        .ok_or_else(|| format!("Bad arguments for {what}: Value is not an integer"))
}

/// `@name` -> `name`; RediSearch requires the `@`.
fn property(arg: &Bytes, step: &str) -> Result<Bytes, String> {
    match arg.strip_prefix(b"@") {
        Some(name) if !name.is_empty() => Ok(Bytes::copy_from_slice(name)),
        _ => {
            let name = String::from_utf8_lossy(arg);
            Err(format!("Bad arguments for {step}: Unknown property `{name}`. Did you mean `@{name}`?"))
        }
    }
}

/// Parse FT.AGGREGATE's arguments after the index name (query string first).
pub fn parse(args: &[Bytes]) -> Result<AggregateQuery, String> {
    let Some(text) = args.first() else {
        return Err("wrong number of arguments for 'FT.AGGREGATE' command".into());
    };
    let mut search_args = vec![text.clone()];
    let mut steps = Vec::new();
    let mut i = 1;
    while i < args.len() {
        if steps.len() >= STEPS_MAX {
            return Err(format!("Meridian runs at most {STEPS_MAX} FT.AGGREGATE steps"));
        }
        let arg = &args[i];
        if eq(arg, "PARAMS") {
            let n = count(args.get(i + 1), "PARAMS")?;
            let end = (i + 2 + n).min(args.len());
            search_args.extend_from_slice(&args[i..end]);
            i = end;
        } else if eq(arg, "DIALECT") || eq(arg, "TIMEOUT") {
            search_args.extend_from_slice(&args[i..(i + 2).min(args.len())]);
            i += 2;
        } else if eq(arg, "VERBATIM") {
            i += 1;
        } else if eq(arg, "LOAD") {
            if args.get(i + 1).is_some_and(|a| &a[..] == b"*") {
                return Err("LOAD * is not supported by Meridian".into());
            }
            let n = count(args.get(i + 1), "LOAD")?;
            let fields = args.get(i + 2..i + 2 + n).ok_or("Bad arguments for LOAD: Expected an argument, but none provided")?;
            steps.push(Step::Load(fields.iter().map(|f| property(f, "LOAD")).collect::<Result<_, _>>()?));
            i += 2 + n;
        } else if eq(arg, "GROUPBY") {
            let n = count(args.get(i + 1), "GROUPBY")?;
            let fields = args.get(i + 2..i + 2 + n).ok_or("Bad arguments for GROUPBY: Expected an argument, but none provided")?;
            let properties = fields.iter().map(|f| property(f, "GROUPBY")).collect::<Result<_, _>>()?;
            i += 2 + n;
            let mut reducers = Vec::new();
            while args.get(i).is_some_and(|a| eq(a, "REDUCE")) {
                let (reducer, used) = parse_reducer(&args[i + 1..])?;
                reducers.push(reducer);
                i += 1 + used;
            }
            steps.push(Step::GroupBy { properties, reducers });
        } else if eq(arg, "SORTBY") {
            let n = count(args.get(i + 1), "SORTBY")?;
            let list = args.get(i + 2..i + 2 + n).ok_or("Bad arguments for SORTBY: Expected an argument, but none provided")?;
            let mut keys: Vec<(Bytes, bool)> = Vec::new();
            for item in list {
                if eq(item, "ASC") || eq(item, "DESC") {
                    let last = keys.last_mut().ok_or("Bad arguments for SORTBY: MISSING ASC or DESC after sort field")?;
                    last.1 = eq(item, "ASC");
                } else {
                    keys.push((property(item, "SORTBY")?, true));
                }
            }
            i += 2 + n;
            let mut max = None;
            if args.get(i).is_some_and(|a| eq(a, "MAX")) {
                max = Some(count(args.get(i + 1), "MAX")?);
                i += 2;
            }
            steps.push(Step::SortBy { keys, max });
        } else if eq(arg, "LIMIT") {
            let (Ok(offset), Ok(num)) = (number(args.get(i + 1)), number(args.get(i + 2))) else {
                return Err("Bad arguments for LIMIT: Expected an argument, but none provided".into());
            };
            if offset.saturating_add(num) > LIMIT_MAX {
                return Err("LIMIT exceeds maximum of 1000000".into());
            }
            steps.push(Step::Limit { offset, num });
            i += 3;
        } else {
            return Err(format!("{} is not supported by Meridian's FT.AGGREGATE", String::from_utf8_lossy(arg).to_uppercase()));
        }
    }
    let mut search = query::parse_search(&search_args)?;
    if search.knn.is_some() {
        return Err("KNN in FT.AGGREGATE is not supported by Meridian (use FT.SEARCH)".into());
    }
    search.offset = 0;
    search.num = LIMIT_MAX;
    Ok(AggregateQuery { search, steps })
}

fn number(arg: Option<&Bytes>) -> Result<usize, ()> {
    std::str::from_utf8(arg.ok_or(())?).ok().and_then(|s| s.parse().ok()).ok_or(())
}

/// `FN nargs args... [AS name]`; returns the reducer and the arguments used.
fn parse_reducer(args: &[Bytes]) -> Result<(Reducer, usize), String> {
    let name = args.first().ok_or("Bad arguments for REDUCE: Expected an argument, but none provided")?;
    let function = match String::from_utf8_lossy(name).to_ascii_uppercase().as_str() {
        "COUNT" => ReduceFn::Count,
        "SUM" => ReduceFn::Sum,
        "AVG" => ReduceFn::Avg,
        "MIN" => ReduceFn::Min,
        "MAX" => ReduceFn::Max,
        "COUNT_DISTINCT" => ReduceFn::CountDistinct,
        other => return Err(format!("Reducer {other} is not supported by Meridian")),
    };
    let n = count(args.get(1), "REDUCE")?;
    let params = args.get(2..2 + n).ok_or("Bad arguments for REDUCE: Expected an argument, but none provided")?;
    let property = match (function, params) {
        (ReduceFn::Count, []) => None,
        (ReduceFn::Count, _) => return Err("Count accepts 0 values only".into()),
        (_, [p]) => Some(self::property(p, "REDUCE")?),
        _ => return Err(format!("Bad arguments for {}: wrong number of arguments", String::from_utf8_lossy(name).to_uppercase())),
    };
    let mut used = 2 + n;
    let alias = if args.get(used).is_some_and(|a| eq(a, "AS")) {
        let alias = args.get(used + 1).cloned().ok_or("Bad arguments for AS: Expected an argument, but none provided")?;
        used += 2;
        alias
    } else {
        let mut generated = b"__generated_alias".to_vec();
        generated.extend(name.to_ascii_lowercase());
        generated.extend(property.iter().flat_map(|p| p.iter().copied()));
        Bytes::from(generated)
    };
    Ok((Reducer { function, property, alias }, used))
}

/// A row and the document it came from (`None` once grouped).
struct Working<'a> {
    row: Row,
    doc: Option<&'a [(Bytes, Bytes)]>,
}

/// The hash field a property names: a schema attribute's path, else the name itself.
fn path<'a>(def: &'a IndexDef, name: &'a [u8]) -> &'a [u8] {
    def.field(name).map_or(name, |(_, f)| &f.path[..])
}

fn value_of(def: &IndexDef, w: &Working, name: &[u8]) -> Option<Bytes> {
    if let Some((_, v)) = w.row.iter().find(|(k, _)| k[..] == *name) {
        return v.clone();
    }
    let wanted = path(def, name);
    w.doc.and_then(|fields| fields.iter().find(|(f, _)| f[..] == *wanted).map(|(_, v)| v.clone()))
}

fn as_number(v: &Option<Bytes>) -> Option<f64> {
    std::str::from_utf8(v.as_ref()?).ok()?.trim().parse::<f64>().ok()
}

/// Numbers compare as numbers, anything else as bytes; missing values last.
fn compare(a: &Option<Bytes>, b: &Option<Bytes>) -> Ordering {
    match (a, b) {
        (None, None) => Ordering::Equal,
        (None, _) => Ordering::Greater,
        (_, None) => Ordering::Less,
        (Some(x), Some(y)) => match (as_number(a), as_number(b)) {
            (Some(p), Some(q)) => p.total_cmp(&q),
            _ => x.cmp(y),
        },
    }
}

/// Run the pipeline over the matched documents (in key order). Returns the total
/// RediSearch reports (groups after a GROUPBY, else matches) and the rows.
pub fn run(def: &IndexDef, steps: &[Step], docs: &[(Bytes, Vec<(Bytes, Bytes)>)]) -> (usize, Vec<Row>) {
    let mut rows: Vec<Working> = docs.iter().map(|(_, fields)| Working { row: Vec::new(), doc: Some(&fields[..]) }).collect();
    let mut total = rows.len();
    for step in steps {
        match step {
            Step::Load(names) => {
                for w in &mut rows {
                    for name in names {
                        let value = value_of(def, w, name);
                        if value.is_some() && !w.row.iter().any(|(k, _)| k == name) {
                            w.row.push((name.clone(), value));
                        }
                    }
                }
            }
            Step::GroupBy { properties, reducers } => {
                rows = group(def, rows, properties, reducers);
                total = rows.len();
            }
            Step::SortBy { keys, max } => {
                for w in &mut rows {
                    // RediSearch shows the values it sorted by.
                    for (name, _) in keys {
                        if !w.row.iter().any(|(k, _)| k == name)
                            && let Some(value) = value_of(def, w, name)
                        {
                            w.row.push((name.clone(), Some(value)));
                        }
                    }
                }
                rows.sort_by(|a, b| {
                    keys.iter()
                        .map(|(name, ascending)| {
                            let order = compare(&value_of(def, a, name), &value_of(def, b, name));
                            if *ascending { order } else { order.reverse() }
                        })
                        .find(|o| o.is_ne())
                        .unwrap_or(Ordering::Equal)
                });
                if let Some(max) = max {
                    rows.truncate(*max);
                }
            }
            Step::Limit { offset, num } => {
                rows = rows.into_iter().skip(*offset).take(*num).collect();
            }
        }
    }
    (total, rows.into_iter().map(|w| w.row).collect())
}

fn group<'a>(def: &IndexDef, rows: Vec<Working<'a>>, properties: &[Bytes], reducers: &[Reducer]) -> Vec<Working<'a>> {
    let mut groups: std::collections::BTreeMap<Vec<Option<Bytes>>, Vec<Working>> = std::collections::BTreeMap::new();
    for w in rows {
        let key: Vec<Option<Bytes>> = properties.iter().map(|p| value_of(def, &w, p)).collect();
        groups.entry(key).or_default().push(w);
    }
    groups
        .into_iter()
        .map(|(key, members)| {
            let mut row: Row = properties.iter().cloned().zip(key).collect();
            for reducer in reducers {
                let values: Vec<Option<Bytes>> = match &reducer.property {
                    Some(p) => members.iter().map(|w| value_of(def, w, p)).collect(),
                    None => Vec::new(),
                };
                let numbers: Vec<f64> = values.iter().filter_map(as_number).collect();
                let out = match reducer.function {
                    ReduceFn::Count => format_double(members.len() as f64),
                    ReduceFn::Sum => format_double(numbers.iter().sum()),
                    ReduceFn::Avg if numbers.is_empty() => "nan".into(),
                    ReduceFn::Avg => format_double(numbers.iter().sum::<f64>() / numbers.len() as f64),
                    ReduceFn::Min => numbers.iter().copied().reduce(f64::min).map_or_else(|| "inf".into(), format_double),
                    ReduceFn::Max => numbers.iter().copied().reduce(f64::max).map_or_else(|| "-inf".into(), format_double),
                    ReduceFn::CountDistinct => {
                        let mut distinct: Vec<&Bytes> = values.iter().flatten().collect();
                        distinct.sort_unstable();
                        distinct.dedup();
                        format_double(distinct.len() as f64)
                    }
                };
                row.push((reducer.alias.clone(), Some(Bytes::from(out))));
            }
            Working { row, doc: None }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<Bytes> {
        line.split_whitespace().map(|s| Bytes::copy_from_slice(s.as_bytes())).collect()
    }

    #[test]
    fn groups_reduce_sort_and_limit() {
        let def = super::super::schema::parse(&args("SCHEMA t TAG n NUMERIC")).expect("schema");
        let docs: Vec<(Bytes, Vec<(Bytes, Bytes)>)> = [("a", "red", "1"), ("b", "blue", "5"), ("c", "red", "4"), ("d", "red", "4")]
            .iter()
            .map(|(k, t, n)| (Bytes::from(*k), vec![(Bytes::from("t"), Bytes::from(*t)), (Bytes::from("n"), Bytes::from(*n))]))
            .collect();
        let q =
            parse(&args("* GROUPBY 1 @t REDUCE COUNT 0 AS c REDUCE SUM 1 @n REDUCE COUNT_DISTINCT 1 @n AS d SORTBY 2 @c DESC LIMIT 0 5"))
                .expect("parses");
        let (total, rows) = run(&def, &q.steps, &docs);
        assert_eq!(total, 2);
        let show: Vec<Vec<(String, String)>> = rows
            .iter()
            .map(|r| {
                r.iter()
                    .map(|(k, v)| {
                        (String::from_utf8_lossy(k).into_owned(), String::from_utf8_lossy(v.as_deref().unwrap_or(b"")).into_owned())
                    })
                    .collect()
            })
            .collect();
        let pair = |k: &str, v: &str| (k.to_string(), v.to_string());
        assert_eq!(show[0], vec![pair("t", "red"), pair("c", "3"), pair("__generated_aliassumn", "9"), pair("d", "2")]);
        assert_eq!(show[1], vec![pair("t", "blue"), pair("c", "1"), pair("__generated_aliassumn", "5"), pair("d", "1")]);
        assert!(parse(&args("* APPLY @n*2 AS x")).unwrap_err().contains("APPLY"));
        assert_eq!(parse(&args("* GROUPBY 1 t")).unwrap_err(), "Bad arguments for GROUPBY: Unknown property `t`. Did you mean `@t`?");
    }
}
