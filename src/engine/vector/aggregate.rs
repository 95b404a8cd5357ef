//! FT.AGGREGATE: its pipeline (LOAD, GROUPBY with REDUCE, APPLY, FILTER, SORTBY,
//! LIMIT), parsed, and run over the documents a query matched.
//!
//! Owns the pipeline grammar and the row transformations; the reducers live in
//! `reduce.rs`, APPLY's and FILTER's expressions in `expr.rs`. Pure: the node gathers
//! the matching documents from its shards and hands them here as (key, hash fields)
//! pairs; this never reads data, a clock or randomness. Anything else of FT.AGGREGATE
//! (WITHCURSOR, ...) is an error naming it.

mod expr;
mod reduce;
mod value;

use std::cmp::Ordering;

use bytes::Bytes;

use super::query::{self, LIMIT_MAX, SearchQuery};
use super::schema::{FieldKind, IndexDef};
pub use reduce::{ReduceFn, Reducer};
pub use value::Value;

/// Most reducers and fields one step may name.
const STEP_ARGS_MAX: usize = 1024;
/// Most steps one pipeline may hold.
const STEPS_MAX: usize = 64;
/// The rows a SORTBY without MAX and without a later LIMIT keeps (RediSearch's).
const SORTBY_DEFAULT_MAX: usize = 10;

#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    Load(Vec<Bytes>),
    /// `LOAD *`: every field of the document, as its text.
    LoadAll,
    GroupBy {
        properties: Vec<Bytes>,
        reducers: Vec<Reducer>,
    },
    Apply {
        expr: expr::Expr,
        alias: Bytes,
    },
    Filter(expr::Expr),
    SortBy {
        keys: Vec<(Bytes, bool)>,
        max: Option<usize>,
    },
    Limit {
        offset: usize,
        num: usize,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct AggregateQuery {
    /// The filter (and PARAMS/DIALECT) as FT.SEARCH would run it, every match wanted.
    pub search: SearchQuery,
    pub steps: Vec<Step>,
}

/// One output row: named values, in the order they were added (`None`: no value).
pub type Row = Vec<(Bytes, Option<Value>)>;

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

/// `EXPR AS alias` after APPLY (the alias is the expression's text without one).
fn parse_apply(args: &[Bytes]) -> Result<(Step, usize), String> {
    let text = args.first().ok_or("Bad arguments for APPLY: Expected an argument, but none provided")?;
    let expr = expr::parse(text)?;
    if args.get(1).is_some_and(|a| eq(a, "AS")) {
        let alias = args.get(2).cloned().ok_or("Bad arguments for AS: Expected an argument, but none provided")?;
        return Ok((Step::Apply { expr, alias }, 3));
    }
    Ok((Step::Apply { expr, alias: text.clone() }, 1))
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
                steps.push(Step::LoadAll);
                i += 2;
                continue;
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
                let (reducer, used) = reduce::parse_reducer(&args[i + 1..])?;
                reducers.push(reducer);
                i += 1 + used;
            }
            steps.push(Step::GroupBy { properties, reducers });
        } else if eq(arg, "APPLY") {
            let (step, used) = parse_apply(&args[i + 1..])?;
            steps.push(step);
            i += 1 + used;
        } else if eq(arg, "FILTER") {
            let text = args.get(i + 1).ok_or("Bad arguments for FILTER: Expected an argument, but none provided")?;
            steps.push(Step::Filter(expr::parse(text)?));
            i += 2;
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
        } else if ["WITHCURSOR", "SCORER", "ADDSCORES"].iter().any(|w| eq(arg, w)) {
            return Err(format!("{} is not supported by Meridian's FT.AGGREGATE", String::from_utf8_lossy(arg).to_uppercase()));
        } else {
            return Err(format!("Unknown argument `{}` at position {i} for <main>", String::from_utf8_lossy(arg)));
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

/// A row and the document it came from (`None` once grouped).
struct Working<'a> {
    row: Row,
    doc: Option<&'a [(Bytes, Bytes)]>,
}

/// How a pipeline reads its documents' fields.
struct Schema<'a> {
    def: &'a IndexDef,
    /// NUMERIC attributes as numbers; not in a pipeline with `LOAD *`, which (in
    /// RediSearch) loads every field as its text, those named elsewhere too.
    typed: bool,
}

/// A document's value of property `name`: its schema attribute's hash field (a
/// NUMERIC one's as a number when it reads as one), else the hash field of that name.
fn field_value(schema: &Schema, fields: &[(Bytes, Bytes)], name: &[u8]) -> Option<Value> {
    let attribute = schema.def.field(name).map(|(_, f)| f);
    let wanted = attribute.map_or(name, |f| &f.path[..]);
    let raw = fields.iter().find(|(f, _)| f[..] == *wanted).map(|(_, v)| v)?;
    let numeric = schema.typed && attribute.is_some_and(|f| f.kind == FieldKind::Numeric);
    match std::str::from_utf8(raw).ok().and_then(|s| s.trim().parse::<f64>().ok()) {
        Some(n) if numeric => Some(Value::Number(n)),
        _ => Some(Value::Text(raw.clone())),
    }
}

fn value_of(schema: &Schema, w: &Working, name: &[u8]) -> Option<Value> {
    if let Some((_, v)) = w.row.iter().find(|(k, _)| k[..] == *name) {
        return v.clone();
    }
    w.doc.and_then(|fields| field_value(schema, fields, name))
}

/// Two numbers compare as numbers and two texts as bytes (a NUMERIC field loaded by
/// `LOAD *` is text: "4" after "10", as in RediSearch); a number and a text as numbers
/// where the text reads as one. No value (`None`: a GROUPBY's group of documents
/// without the property) comes before any value.
fn compare(a: Option<&Value>, b: Option<&Value>) -> Ordering {
    match (a, b) {
        (None, None) => Ordering::Equal,
        (None, _) => Ordering::Less,
        (_, None) => Ordering::Greater,
        (Some(x), Some(y)) => x.order(y, |p, q| Some(p.total_cmp(q))).unwrap_or(Ordering::Equal),
    }
}

/// Two rows by one SORTBY key. A row without the property at all comes last in
/// either direction; one holding it with no value (a GROUPBY's group of documents
/// without it) sorts before every value, as RediSearch orders them.
fn sort_order(schema: &Schema, a: &Working, b: &Working, name: &[u8], ascending: bool) -> Ordering {
    let held = |w: &Working| match w.row.iter().find(|(k, _)| k[..] == *name) {
        Some((_, v)) => Some(v.clone()),
        None => value_of(schema, w, name).map(Some),
    };
    match (held(a), held(b)) {
        (None, None) => Ordering::Equal,
        (None, _) => Ordering::Greater,
        (_, None) => Ordering::Less,
        (Some(x), Some(y)) if ascending => compare(x.as_ref(), y.as_ref()),
        (Some(x), Some(y)) => compare(x.as_ref(), y.as_ref()).reverse(),
    }
}

/// RediSearch's check before it runs anything: APPLY and FILTER read only properties
/// that a LOAD, an earlier APPLY or a GROUPBY put in the rows, or SORTABLE attributes.
fn check_properties(def: &IndexDef, steps: &[Step]) -> Result<(), String> {
    let mut known: Vec<Bytes> = def.fields.iter().filter(|f| f.sortable).map(|f| f.name.clone()).collect();
    for step in steps {
        let mut read = Vec::new();
        match step {
            Step::Load(names) => known.extend(names.iter().cloned()),
            Step::GroupBy { properties, reducers } => {
                // A GROUPBY reads schema attributes too (it loads them itself).
                let readable = |p: &Bytes| known.contains(p) || def.field(p).is_some();
                if let Some(missing) = properties.iter().find(|p| !readable(p)) {
                    return Err(format!("No such property `{}`", String::from_utf8_lossy(missing)));
                }
                if let Some(missing) = reducers.iter().flat_map(Reducer::reads).find(|p| !readable(p)) {
                    return Err(format!("Property `{}` not present in document or pipeline", String::from_utf8_lossy(missing)));
                }
                known = properties.iter().cloned().chain(reducers.iter().map(|r| r.alias.clone())).collect();
            }
            Step::Apply { expr, .. } | Step::Filter(expr) => expr.properties(&mut read),
            Step::LoadAll | Step::SortBy { .. } | Step::Limit { .. } => {}
        }
        if let Some(missing) = read.iter().find(|p| !known.contains(p)) {
            return Err(format!("Property `{}` not loaded nor in pipeline", String::from_utf8_lossy(missing)));
        }
        if let Step::Apply { alias, .. } = step {
            known.push(alias.clone());
        }
    }
    Ok(())
}

/// Evaluate an APPLY or FILTER expression row by row, in order. A SORTABLE attribute
/// it reads that the row does not hold yet joins the row first, as in RediSearch. At
/// the first row it fails on (a property with no value, text that is not a number) it
/// stops, as RediSearch's pipeline does: the rows before it go on, that one and the
/// rest are dropped, and the error becomes the reply's warning.
fn evaluate(schema: &Schema, rows: &mut Vec<Working>, expr: &expr::Expr, warning: &mut Option<String>) -> Vec<Option<Value>> {
    let mut read = Vec::new();
    expr.properties(&mut read);
    let mut values = Vec::with_capacity(rows.len());
    for w in rows.iter_mut() {
        for name in &read {
            if !w.row.iter().any(|(k, _)| k == *name)
                && let Some(value) = w.doc.and_then(|fields| field_value(schema, fields, name))
            {
                w.row.push(((*name).clone(), Some(value)));
            }
        }
        let row = &w.row;
        match expr::eval(expr, &|p: &Bytes| row.iter().find(|(k, _)| k == p).and_then(|(_, v)| v.clone())) {
            Ok(value) => values.push(value),
            Err(e) => {
                warning.get_or_insert(e);
                break;
            }
        }
    }
    rows.truncate(values.len());
    values
}

/// What a pipeline answers: the total RediSearch reports (groups after a GROUPBY,
/// else matches), the rows, and the error that cut the rows short, if one did.
pub struct Answer {
    pub total: usize,
    pub rows: Vec<Row>,
    pub warning: Option<String>,
}

/// Every property the steps name, in step order, each once.
fn named_properties(steps: &[Step]) -> Vec<&Bytes> {
    let mut named: Vec<&Bytes> = Vec::new();
    for step in steps {
        let mut read = Vec::new();
        match step {
            Step::Load(names) => read.extend(names),
            Step::GroupBy { properties, reducers } => read.extend(properties.iter().chain(reducers.iter().flat_map(Reducer::reads))),
            Step::Apply { expr, .. } | Step::Filter(expr) => expr.properties(&mut read),
            Step::SortBy { keys, .. } => read.extend(keys.iter().map(|(k, _)| k)),
            Step::LoadAll | Step::Limit { .. } => {}
        }
        for name in read {
            if !named.contains(&name) {
                named.push(name);
            }
        }
    }
    named
}

/// Run the pipeline over the matched documents (in key order); an error for a
/// property no step provides.
pub fn run(def: &IndexDef, steps: &[Step], docs: &[(Bytes, Vec<(Bytes, Bytes)>)]) -> Result<Answer, String> {
    check_properties(def, steps)?;
    let schema = &Schema { def, typed: !steps.contains(&Step::LoadAll) };
    let mut warning: Option<String> = None;
    let mut rows: Vec<Working> = docs.iter().map(|(_, fields)| Working { row: Vec::new(), doc: Some(&fields[..]) }).collect();
    let mut total = rows.len();
    for (at, step) in steps.iter().enumerate() {
        // An expression's error before a step that needs every row (GROUPBY, SORTBY)
        // is the reply, as in RediSearch; with none, the rows before it are.
        if let Some(error) = &warning
            && steps[at..].iter().any(|s| matches!(s, Step::GroupBy { .. } | Step::SortBy { .. }))
        {
            return Err(error.clone());
        }
        match step {
            Step::Load(names) => {
                for w in &mut rows {
                    for name in names {
                        let value = value_of(schema, w, name);
                        if value.is_some() && !w.row.iter().any(|(k, _)| k == name) {
                            w.row.push((name.clone(), value));
                        }
                    }
                }
            }
            Step::LoadAll => {
                // The fields the pipeline names first (in the order it names them),
                // then the rest in the hash's order: RediSearch's row keeps the keys
                // its steps declared before the ones LOAD * finds.
                let named = named_properties(steps);
                for w in &mut rows {
                    let Some(fields) = w.doc else { continue };
                    let wanted = named.iter().filter_map(|n| fields.iter().find(|(f, _)| f == *n)).chain(fields.iter());
                    for (field, value) in wanted {
                        if !w.row.iter().any(|(k, _)| k == field) {
                            w.row.push((field.clone(), Some(Value::Text(value.clone()))));
                        }
                    }
                }
            }
            Step::GroupBy { properties, reducers } => {
                rows = group(schema, rows, properties, reducers);
                total = rows.len();
            }
            Step::Apply { expr, alias } => {
                let values = evaluate(schema, &mut rows, expr, &mut warning);
                for (w, value) in rows.iter_mut().zip(values) {
                    match w.row.iter_mut().find(|(k, _)| k == alias) {
                        Some(slot) => slot.1 = value,
                        None => w.row.push((alias.clone(), value)),
                    }
                }
            }
            Step::Filter(expr) => {
                let keep = evaluate(schema, &mut rows, expr, &mut warning);
                let mut keep = keep.into_iter();
                rows.retain(|_| keep.next().is_some_and(|v| expr::truthy(&v)));
            }
            Step::SortBy { keys, max } => {
                for w in &mut rows {
                    // RediSearch shows the values it sorted by.
                    for (name, _) in keys {
                        if !w.row.iter().any(|(k, _)| k == name)
                            && let Some(value) = value_of(schema, w, name)
                        {
                            w.row.push((name.clone(), Some(value)));
                        }
                    }
                }
                rows.sort_by(|a, b| {
                    keys.iter()
                        .map(|(name, ascending)| sort_order(schema, a, b, name, *ascending))
                        .find(|o| o.is_ne())
                        .unwrap_or(Ordering::Equal)
                });
                // RediSearch: a SORTBY without MAX keeps the 10 first rows unless a
                // LIMIT comes after it (which then cuts).
                let limited = steps[at..].iter().any(|s| matches!(s, Step::Limit { .. }));
                match max {
                    Some(max) => rows.truncate(*max),
                    None if !limited => rows.truncate(SORTBY_DEFAULT_MAX),
                    None => {}
                }
            }
            Step::Limit { offset, num } => {
                rows = rows.into_iter().skip(*offset).take(*num).collect();
            }
        }
    }
    Ok(Answer { total, rows: rows.into_iter().map(|w| w.row).collect(), warning })
}

fn group<'a>(schema: &Schema, rows: Vec<Working<'a>>, properties: &[Bytes], reducers: &[Reducer]) -> Vec<Working<'a>> {
    let mut groups: std::collections::BTreeMap<Vec<Option<Bytes>>, (Row, Vec<Working>)> = std::collections::BTreeMap::new();
    for w in rows {
        let values: Vec<Option<Value>> = properties.iter().map(|p| value_of(schema, &w, p)).collect();
        let key: Vec<Option<Bytes>> = values.iter().map(|v| v.as_ref().map(Value::text)).collect();
        groups.entry(key).or_insert_with(|| (properties.iter().cloned().zip(values).collect(), Vec::new())).1.push(w);
    }
    groups
        .into_values()
        .map(|(mut row, members)| {
            for reducer in reducers {
                let read = |p: Option<&Bytes>| -> Vec<Option<Value>> {
                    p.map_or_else(Vec::new, |p| members.iter().map(|w| value_of(schema, w, p)).collect())
                };
                let by = match &reducer.function {
                    ReduceFn::FirstValue { by: Some((by, _)) } => read(Some(by)),
                    _ => Vec::new(),
                };
                let value = reduce::reduce(reducer, members.len(), &read(reducer.property.as_ref()), &by);
                row.push((reducer.alias.clone(), value));
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
        let Answer { total, rows, .. } = run(&def, &q.steps, &docs).expect("runs");
        assert_eq!(total, 2);
        let show: Vec<Vec<(String, String)>> = rows
            .iter()
            .map(|r| {
                r.iter()
                    .map(|(k, v)| {
                        (
                            String::from_utf8_lossy(k).into_owned(),
                            String::from_utf8_lossy(&v.as_ref().map(Value::text).unwrap_or_default()).into_owned(),
                        )
                    })
                    .collect()
            })
            .collect();
        let pair = |k: &str, v: &str| (k.to_string(), v.to_string());
        assert_eq!(show[0], vec![pair("t", "red"), pair("c", "3"), pair("__generated_aliassumn", "9"), pair("d", "2")]);
        assert_eq!(show[1], vec![pair("t", "blue"), pair("c", "1"), pair("__generated_aliassumn", "5"), pair("d", "1")]);
        assert!(parse(&args("* WITHCURSOR")).unwrap_err().contains("WITHCURSOR"));
        assert_eq!(parse(&args("* FOO")).unwrap_err(), "Unknown argument `FOO` at position 1 for <main>");
        assert_eq!(parse(&args("* GROUPBY 1 t")).unwrap_err(), "Bad arguments for GROUPBY: Unknown property `t`. Did you mean `@t`?");
    }

    #[test]
    fn sortby_keeps_ten_rows_missing_values_last_and_load_all_is_text() {
        let def = super::super::schema::parse(&args("SCHEMA t TAG n NUMERIC")).expect("schema");
        // 12 documents; the first has no n.
        let docs: Vec<(Bytes, Vec<(Bytes, Bytes)>)> = (0..12)
            .map(|i| {
                let mut fields = vec![(Bytes::from("t"), Bytes::from("x"))];
                if i > 0 {
                    fields.push((Bytes::from("n"), Bytes::from(format!("{}", i * 3))));
                }
                (Bytes::from(format!("d{i:02}")), fields)
            })
            .collect();
        let first_n = |query: &str| -> Vec<String> {
            let q = parse(&args(query)).expect("parses");
            let Answer { rows, .. } = run(&def, &q.steps, &docs).expect("runs");
            rows.iter()
                .map(|r| {
                    r.iter()
                        .find(|(k, _)| &k[..] == b"n")
                        .map_or("-".into(), |(_, v)| String::from_utf8_lossy(&v.as_ref().expect("a value").text()).into_owned())
                })
                .collect()
        };
        // Ten rows without LIMIT; numbers as numbers; the row without n last both ways.
        assert_eq!(first_n("* LOAD 1 @n SORTBY 2 @n ASC"), ["3", "6", "9", "12", "15", "18", "21", "24", "27", "30"]);
        assert_eq!(
            first_n("* LOAD 1 @n SORTBY 2 @n DESC LIMIT 0 20"),
            ["33", "30", "27", "24", "21", "18", "15", "12", "9", "6", "3", "-"]
        );
        assert_eq!(first_n("* LOAD 1 @n SORTBY 2 @n ASC LIMIT 8 5"), ["27", "30", "33", "-"]);
        // LOAD *: text, so "9" sorts after "33".
        assert_eq!(first_n("* LOAD * SORTBY 2 @n DESC MAX 3"), ["9", "6", "33"]);
    }
}
