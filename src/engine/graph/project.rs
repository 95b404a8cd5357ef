//! WITH and RETURN: projection, grouping with aggregates (count, sum, avg, min, max,
//! collect), DISTINCT, ORDER BY, SKIP and LIMIT. Pure: rows in, rows out.

use std::collections::HashMap;

use super::ast::{Expr, Projection};
use super::eval::{Env, Row};
use super::value::Value;

/// A projection's result: column names and rows of values.
pub struct Projected {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Value>>,
}

impl Projected {
    /// The rows as variables for the next clause (after WITH).
    pub fn into_rows(self) -> Vec<Row> {
        let columns = self.columns;
        self.rows.into_iter().map(|values| columns.iter().cloned().zip(values).collect()).collect()
    }
}

/// One output row and what ORDER BY may still look at: the input row it came from (no
/// aggregation) or its group's rows (aggregation).
struct Out {
    values: Vec<Value>,
    rep: Row,
    group: Vec<Row>,
}

/// The rows each step of a projection passed on (GRAPH.PROFILE's counts). FalkorDB
/// sorts with a limit as a top-k: its Sort passes on at most `skip + limit` rows, and
/// these counts say the same.
#[derive(Debug, Default, PartialEq)]
pub struct ProjCounts {
    pub projected: usize,
    pub distinct: usize,
    pub sorted: usize,
    pub skipped: usize,
    pub limited: usize,
    pub filtered: usize,
}

pub fn project(env: &Env, rows: Vec<Row>, proj: &Projection, counts: &mut ProjCounts) -> Result<Projected, String> {
    let mut items: Vec<(Expr, String)> = Vec::new();
    if proj.star {
        let mut vars: Vec<String> = rows.first().map(|r| r.keys().cloned().collect()).unwrap_or_default();
        vars.sort();
        items.extend(vars.into_iter().map(|v| (Expr::Var(v.clone()), v)));
    }
    items.extend(proj.items.iter().cloned());
    if items.is_empty() {
        return Err("RETURN * is not allowed when there are no variables in scope".to_owned());
    }
    let columns: Vec<String> = items.iter().map(|(_, a)| a.clone()).collect();
    let aggregating = items.iter().any(|(e, _)| e.has_aggregate()) || proj.order.iter().any(|(e, _)| e.has_aggregate());
    let mut outs: Vec<Out> = Vec::new();
    if aggregating {
        let keys: Vec<usize> = (0..items.len()).filter(|i| !items[*i].0.has_aggregate()).collect();
        let mut groups: Vec<(Vec<Value>, Vec<Row>)> = Vec::new();
        let mut index: HashMap<Vec<u8>, usize> = HashMap::new();
        for row in rows {
            let key_values = keys.iter().map(|i| env.eval(&items[*i].0, &row)).collect::<Result<Vec<_>, _>>()?;
            let mut key = Vec::new();
            key_values.iter().for_each(|v| v.group_key(&mut key));
            match index.get(&key) {
                Some(g) => groups[*g].1.push(row),
                None => {
                    index.insert(key, groups.len());
                    groups.push((key_values, vec![row]));
                }
            }
        }
        if groups.is_empty() && keys.is_empty() {
            // Aggregates over no rows still answer one row (count 0, collect []).
            groups.push((Vec::new(), Vec::new()));
        }
        for (key_values, group) in groups {
            let rep = group.first().cloned().unwrap_or_default();
            let mut values = Vec::with_capacity(items.len());
            let mut keyed = key_values.into_iter();
            for (expr, _) in &items {
                if expr.has_aggregate() {
                    values.push(eval_aggregating(env, expr, &group, &rep)?);
                } else {
                    values.push(keyed.next().unwrap_or(Value::Null));
                }
            }
            outs.push(Out { values, rep, group });
        }
    } else {
        for row in rows {
            let values = items.iter().map(|(e, _)| env.eval(e, &row)).collect::<Result<Vec<_>, _>>()?;
            outs.push(Out { values, rep: row, group: Vec::new() });
        }
    }
    counts.projected = outs.len();
    if proj.distinct {
        let mut seen = std::collections::HashSet::new();
        outs.retain(|o| {
            let mut key = Vec::new();
            o.values.iter().for_each(|v| v.group_key(&mut key));
            seen.insert(key)
        });
    }
    counts.distinct = outs.len();
    if !proj.order.is_empty() {
        let mut keyed = Vec::with_capacity(outs.len());
        for o in outs {
            let mut env_row = if proj.distinct || aggregating { Row::new() } else { o.rep.clone() };
            for (c, v) in columns.iter().zip(&o.values) {
                env_row.insert(c.clone(), v.clone());
            }
            if aggregating {
                // Grouping keys stay visible by their variables.
                for (k, v) in &o.rep {
                    env_row.entry(k.clone()).or_insert_with(|| v.clone());
                }
            }
            let mut sort_key = Vec::with_capacity(proj.order.len());
            for (expr, _) in &proj.order {
                let v = match items.iter().position(|(e, _)| e == expr) {
                    Some(i) => o.values[i].clone(),
                    None if expr.has_aggregate() => eval_aggregating(env, expr, &o.group, &env_row)?,
                    None => env.eval(expr, &env_row)?,
                };
                sort_key.push(v);
            }
            keyed.push((sort_key, o));
        }
        // A stable sort: ties keep the order the rows came in.
        keyed.sort_by(|(a, _), (b, _)| {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                let o = x.order(y);
                let o = if proj.order[i].1 { o } else { o.reverse() };
                if o != std::cmp::Ordering::Equal {
                    return o;
                }
            }
            std::cmp::Ordering::Equal
        });
        outs = keyed.into_iter().map(|(_, o)| o).collect();
    }
    let count = |e: &Option<Expr>, what: &str| -> Result<Option<usize>, String> {
        match e.as_ref().map(|e| env.eval(e, &Row::new())).transpose()? {
            None => Ok(None),
            Some(Value::Int(n)) if n >= 0 => Ok(Some(n as usize)),
            Some(_) => Err(format!("{what} specifies a value of invalid type, must be a positive integer")),
        }
    };
    let skip = count(&proj.skip, "SKIP")?.unwrap_or(0);
    let limit = count(&proj.limit, "LIMIT")?.unwrap_or(usize::MAX);
    counts.sorted = if proj.limit.is_some() { outs.len().min(skip.saturating_add(limit)) } else { outs.len() };
    let mut rows: Vec<Vec<Value>> = outs.into_iter().skip(skip).take(limit).map(|o| o.values).collect();
    (counts.skipped, counts.limited) = (rows.len(), rows.len());
    if let Some(filter) = &proj.filter {
        let mut kept = Vec::with_capacity(rows.len());
        for values in rows {
            let row: Row = columns.iter().cloned().zip(values.iter().cloned()).collect();
            if env.holds(filter, &row)? {
                kept.push(values);
            }
        }
        rows = kept;
    }
    counts.filtered = rows.len();
    Ok(Projected { columns, rows })
}

/// Evaluate an expression holding aggregates over a group: each aggregate call is
/// computed over the group's rows, the rest over its representative row.
fn eval_aggregating(env: &Env, expr: &Expr, group: &[Row], rep: &Row) -> Result<Value, String> {
    let replaced = replace_aggregates(env, expr, group)?;
    env.eval(&replaced, rep)
}

fn replace_aggregates(env: &Env, expr: &Expr, group: &[Row]) -> Result<Expr, String> {
    if let Expr::Call { name, distinct, args, star } = expr
        && expr.is_aggregate_call()
    {
        return Ok(Expr::Lit(aggregate(env, name, *distinct, args, *star, group)?));
    }
    let r = |e: &Expr| replace_aggregates(env, e, group).map(Box::new);
    Ok(match expr {
        Expr::Lit(_) | Expr::Param(_) | Expr::Var(_) | Expr::ShortestPath { .. } => expr.clone(),
        Expr::Prop(e, k) => Expr::Prop(r(e)?, k.clone()),
        Expr::Index(a, b) => Expr::Index(r(a)?, r(b)?),
        Expr::Slice(a, b, c) => Expr::Slice(r(a)?, b.as_deref().map(r).transpose()?, c.as_deref().map(r).transpose()?),
        Expr::List(items) => Expr::List(items.iter().map(|e| replace_aggregates(env, e, group)).collect::<Result<_, _>>()?),
        Expr::Map(entries) => {
            Expr::Map(entries.iter().map(|(k, e)| Ok((k.clone(), replace_aggregates(env, e, group)?))).collect::<Result<_, String>>()?)
        }
        Expr::Not(e) => Expr::Not(r(e)?),
        Expr::Neg(e) => Expr::Neg(r(e)?),
        Expr::Bin(op, a, b) => Expr::Bin(*op, r(a)?, r(b)?),
        Expr::IsNull(e, n) => Expr::IsNull(r(e)?, *n),
        Expr::HasLabels(e, l) => Expr::HasLabels(r(e)?, l.clone()),
        Expr::Call { name, distinct, args, star } => Expr::Call {
            name: name.clone(),
            distinct: *distinct,
            args: args.iter().map(|e| replace_aggregates(env, e, group)).collect::<Result<_, _>>()?,
            star: *star,
        },
        // Only the list may aggregate (Expr::has_aggregate); the body is per item.
        Expr::ListComp { var, list, filter, map } => {
            Expr::ListComp { var: var.clone(), list: r(list)?, filter: filter.clone(), map: map.clone() }
        }
        Expr::PatternComp { .. } => expr.clone(),
        Expr::Case { subject, arms, default } => Expr::Case {
            subject: subject.as_deref().map(r).transpose()?,
            arms: arms
                .iter()
                .map(|(a, b)| Ok((replace_aggregates(env, a, group)?, replace_aggregates(env, b, group)?)))
                .collect::<Result<_, String>>()?,
            default: default.as_deref().map(r).transpose()?,
        },
    })
}

fn aggregate(env: &Env, name: &str, distinct: bool, args: &[Expr], star: bool, group: &[Row]) -> Result<Value, String> {
    if star {
        return Ok(Value::Int(group.len() as i64));
    }
    let [arg] = args else {
        return Err(format!("Received {} arguments to function '{name}', expected 1", args.len()));
    };
    if arg.has_aggregate() {
        return Err("Can't use aggregate functions inside of aggregate functions.".to_owned());
    }
    let mut values = Vec::with_capacity(group.len());
    let mut seen = std::collections::HashSet::new();
    for row in group {
        let v = env.eval(arg, row)?;
        if v.is_null() {
            continue;
        }
        if distinct {
            let mut key = Vec::new();
            v.group_key(&mut key);
            if !seen.insert(key) {
                continue;
            }
        }
        values.push(v);
    }
    Ok(match name {
        "count" => Value::Int(values.len() as i64),
        "collect" => Value::List(values),
        "min" => values.into_iter().min_by(|a, b| a.order(b)).unwrap_or(Value::Null),
        "max" => values.into_iter().max_by(|a, b| a.order(b)).unwrap_or(Value::Null),
        "sum" | "avg" => {
            let mut int_sum: i64 = 0;
            let mut float_sum = 0.0;
            let mut floats = false;
            for v in &values {
                match v {
                    Value::Int(n) => {
                        int_sum = int_sum.wrapping_add(*n);
                        float_sum += *n as f64;
                    }
                    Value::Float(f) => {
                        floats = true;
                        float_sum += f;
                    }
                    other => return Err(format!("Type mismatch: expected Integer, Float, or Null but was {}", other.type_name())),
                }
            }
            if name == "avg" {
                if values.is_empty() { Value::Null } else { Value::Float(float_sum / values.len() as f64) }
            } else {
                // FalkorDB sums in doubles, integers included.
                let _ = (floats, int_sum);
                Value::Float(float_sum)
            }
        }
        _ => return Err(format!("Unknown function '{name}'")),
    })
}
