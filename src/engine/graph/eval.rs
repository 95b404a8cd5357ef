//! Evaluating expressions against one row: operators with openCypher's null rules,
//! property access through the graph view, and the scalar functions. Aggregates are the
//! executor's (they see many rows); here they are an error.
//!
//! Pure: the graph, the row and the parameters come in; nothing is written.

use std::collections::HashMap;

use super::ast::{BinOp, Direction, Expr};
use super::exec::Exec;
use super::store::{ElemId, GraphView};
use super::value::Value;

pub type Row = HashMap<String, Value>;

/// A list built by one expression (`range`, list concatenation) holds at most this many
/// values: an expression is client input.
pub const LIST_LEN_MAX: usize = 10_000_000;

pub struct Env<'a> {
    pub graph: &'a GraphView,
    pub params: &'a HashMap<String, Value>,
    /// What matches a pattern comprehension's pattern; `None` where no pattern can be
    /// matched (a query's `CYPHER` parameters are evaluated before any graph is read).
    pub matcher: Option<&'a Exec>,
}

impl Env<'_> {
    pub fn eval(&self, expr: &Expr, row: &Row) -> Result<Value, String> {
        Ok(match expr {
            Expr::Lit(v) => v.clone(),
            Expr::Param(name) => self.params.get(name).cloned().ok_or("Missing parameters")?,
            Expr::Var(name) => row.get(name).cloned().ok_or_else(|| format!("{name} not defined"))?,
            Expr::Prop(base, key) => {
                let base = self.eval(base, row)?;
                match &base {
                    Value::Null => Value::Null,
                    Value::Map(entries) => entries.iter().find(|(k, _)| k == key).map_or(Value::Null, |(_, v)| v.clone()),
                    Value::Node(_) | Value::Edge(_) => self.graph.props_of(&base).and_then(|p| p.get(key)).cloned().unwrap_or(Value::Null),
                    other => return Err(format!("Type mismatch: expected Map, Node, Edge, Null, or Point but was {}", other.type_name())),
                }
            }
            Expr::Index(base, index) => index_value(self.eval(base, row)?, self.eval(index, row)?)?,
            Expr::Slice(base, from, to) => {
                let base = self.eval(base, row)?;
                let from = from.as_ref().map(|e| self.eval(e, row)).transpose()?;
                let to = to.as_ref().map(|e| self.eval(e, row)).transpose()?;
                slice_value(base, from, to)?
            }
            Expr::List(items) => Value::List(items.iter().map(|e| self.eval(e, row)).collect::<Result<_, _>>()?),
            Expr::Map(entries) => {
                Value::Map(entries.iter().map(|(k, e)| Ok((k.clone(), self.eval(e, row)?))).collect::<Result<_, String>>()?)
            }
            Expr::Not(e) => match truth(&self.eval(e, row)?)? {
                Some(b) => Value::Bool(!b),
                None => Value::Null,
            },
            Expr::Neg(e) => match self.eval(e, row)? {
                Value::Int(n) => Value::Int(n.checked_neg().ok_or("Integer overflow")?),
                Value::Float(f) => Value::Float(-f),
                Value::Null => Value::Null,
                other => return Err(format!("Type mismatch: expected Integer, Float, or Null but was {}", other.type_name())),
            },
            Expr::IsNull(e, negated) => Value::Bool(self.eval(e, row)?.is_null() != *negated),
            Expr::HasLabels(e, labels) => match self.eval(e, row)? {
                Value::Node(id) => {
                    let node = self.graph.nodes.get(&id);
                    Value::Bool(node.is_some_and(|n| labels.iter().all(|l| n.labels.contains(l))))
                }
                Value::Null => Value::Null,
                other => return Err(format!("Type mismatch: expected Node but was {}", other.type_name())),
            },
            Expr::Bin(op, a, b) => self.binary(*op, a, b, row)?,
            Expr::Call { name, args, .. } => {
                if expr.is_aggregate_call() {
                    return Err(format!("Invalid use of aggregating function '{name}'"));
                }
                let args = args.iter().map(|e| self.eval(e, row)).collect::<Result<Vec<_>, _>>()?;
                super::functions::call(self.graph, name, args)?
            }
            Expr::ShortestPath { from, to, types, dir, min, max } => {
                match (self.eval(&Expr::Var(from.clone()), row)?, self.eval(&Expr::Var(to.clone()), row)?) {
                    (Value::Node(a), Value::Node(b)) => self.shortest_path(a, b, types, *dir, *min, *max),
                    (Value::Null, _) | (_, Value::Null) => Value::Null,
                    _ => return Err("shortestPath expects its end points to be nodes".to_owned()),
                }
            }
            Expr::ListComp { var, list, filter, map } => self.list_comprehension(var, list, filter.as_deref(), map.as_deref(), row)?,
            Expr::PatternComp { pattern, filter, map } => {
                let matcher = self.matcher.ok_or("pattern comprehensions are not supported here")?;
                let mut out = Vec::new();
                for found in matcher.pattern_matches(pattern, row)? {
                    if let Some(f) = filter
                        && !self.holds(f, &found)?
                    {
                        continue;
                    }
                    out.push(self.eval(map, &found)?);
                }
                Value::List(out)
            }
            Expr::Case { subject, arms, default } => {
                let subject = subject.as_ref().map(|s| self.eval(s, row)).transpose()?;
                for (when, then) in arms {
                    let hit = match &subject {
                        Some(s) => s.equals(&self.eval(when, row)?) == Some(true),
                        None => truth(&self.eval(when, row)?)? == Some(true),
                    };
                    if hit {
                        return self.eval(then, row);
                    }
                }
                match default {
                    Some(d) => self.eval(d, row)?,
                    None => Value::Null,
                }
            }
        })
    }

    /// `[var IN list WHERE filter | map]`: the row is copied once and `var` rebound per
    /// item (it shadows a variable of the same name, as in FalkorDB).
    fn list_comprehension(&self, var: &str, list: &Expr, filter: Option<&Expr>, map: Option<&Expr>, row: &Row) -> Result<Value, String> {
        let items = match self.eval(list, row)? {
            Value::List(items) => items,
            Value::Null => return Ok(Value::Null),
            other => return Err(format!("Type mismatch: expected List or Null but was {}", other.type_name())),
        };
        let mut inner = row.clone();
        inner.insert(var.to_owned(), Value::Null);
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            *inner.get_mut(var).expect("the variable was bound above") = item;
            if let Some(f) = filter
                && truth(&self.eval(f, &inner)?)? != Some(true)
            {
                continue;
            }
            out.push(match map {
                Some(m) => self.eval(m, &inner)?,
                None => inner[var].clone(),
            });
        }
        Ok(Value::List(out))
    }

    /// Breadth-first search from `from` to `to` over edges of `types` in `dir`: the first
    /// path found of the fewest hops (at least `min`, 0 or 1, at most `max`), or null. Each
    /// node is visited once, so the search is bounded by the graph's size.
    fn shortest_path(&self, from: ElemId, to: ElemId, types: &[String], dir: Direction, min: u32, max: u32) -> Value {
        if from == to {
            return if min == 0 { Value::Path(vec![from], Vec::new()) } else { Value::Null };
        }
        let mut parent: HashMap<ElemId, (ElemId, ElemId)> = HashMap::new();
        let mut frontier = vec![from];
        let mut depth = 0;
        while !frontier.is_empty() && depth < max {
            depth += 1;
            let mut next = Vec::new();
            for at in frontier {
                // An undirected search follows edges out of each node, as before.
                let along = if dir == Direction::In { Direction::In } else { Direction::Out };
                for (e, other) in self.graph.hops(at, along, types) {
                    if other == from || parent.contains_key(&other) || !self.graph.nodes.contains_key(&other) {
                        continue;
                    }
                    parent.insert(other, (at, e));
                    if other == to {
                        let (mut nodes, mut edges) = (vec![to], Vec::new());
                        let mut cur = to;
                        while let Some(&(prev, e)) = parent.get(&cur) {
                            nodes.push(prev);
                            edges.push(e);
                            cur = prev;
                        }
                        nodes.reverse();
                        edges.reverse();
                        return Value::Path(nodes, edges);
                    }
                    next.push(other);
                }
            }
            frontier = next;
        }
        Value::Null
    }

    /// A WHERE predicate: only true keeps a row (false and null drop it).
    pub fn holds(&self, expr: &Expr, row: &Row) -> Result<bool, String> {
        Ok(truth(&self.eval(expr, row)?)? == Some(true))
    }

    fn binary(&self, op: BinOp, a: &Expr, b: &Expr, row: &Row) -> Result<Value, String> {
        // AND/OR/XOR: three-valued logic, short-circuiting where the answer is known.
        if matches!(op, BinOp::And | BinOp::Or | BinOp::Xor) {
            let left = truth(&self.eval(a, row)?)?;
            match (op, left) {
                (BinOp::And, Some(false)) => return Ok(Value::Bool(false)),
                (BinOp::Or, Some(true)) => return Ok(Value::Bool(true)),
                _ => {}
            }
            let right = truth(&self.eval(b, row)?)?;
            let out = match op {
                BinOp::And => match (left, right) {
                    (_, Some(false)) => Some(false),
                    (Some(true), Some(true)) => Some(true),
                    _ => None,
                },
                BinOp::Or => match (left, right) {
                    (_, Some(true)) => Some(true),
                    (Some(false), Some(false)) => Some(false),
                    _ => None,
                },
                _ => left.zip(right).map(|(x, y)| x != y),
            };
            return Ok(out.map_or(Value::Null, Value::Bool));
        }
        let (x, y) = (self.eval(a, row)?, self.eval(b, row)?);
        binary_values(op, x, y)
    }
}

/// A value as a predicate: `None` for null; an error for a non-boolean.
pub fn truth(v: &Value) -> Result<Option<bool>, String> {
    match v {
        Value::Bool(b) => Ok(Some(*b)),
        Value::Null => Ok(None),
        other => Err(format!("Type mismatch: expected Boolean but was {}", other.type_name())),
    }
}

pub fn binary_values(op: BinOp, x: Value, y: Value) -> Result<Value, String> {
    use std::cmp::Ordering::*;
    let cmp = |want: &[std::cmp::Ordering]| match x.compare(&y) {
        Some(o) => Value::Bool(want.contains(&o)),
        None => Value::Null,
    };
    Ok(match op {
        BinOp::Eq => x.equals(&y).map_or(Value::Null, Value::Bool),
        BinOp::Ne => x.equals(&y).map_or(Value::Null, |b| Value::Bool(!b)),
        BinOp::Lt => cmp(&[Less]),
        BinOp::Le => cmp(&[Less, Equal]),
        BinOp::Gt => cmp(&[Greater]),
        BinOp::Ge => cmp(&[Greater, Equal]),
        BinOp::In => match y {
            Value::Null => Value::Null,
            Value::List(items) => {
                let mut unknown = false;
                for item in &items {
                    match x.equals(item) {
                        Some(true) => return Ok(Value::Bool(true)),
                        None => unknown = true,
                        Some(false) => {}
                    }
                }
                if unknown { Value::Null } else { Value::Bool(false) }
            }
            other => return Err(format!("Type mismatch: expected List or Null but was {}", other.type_name())),
        },
        BinOp::StartsWith | BinOp::EndsWith | BinOp::Contains => match (&x, &y) {
            (Value::Str(s), Value::Str(t)) => Value::Bool(match op {
                BinOp::StartsWith => s.starts_with(t.as_str()),
                BinOp::EndsWith => s.ends_with(t.as_str()),
                _ => s.contains(t.as_str()),
            }),
            (Value::Null, _) | (_, Value::Null) => Value::Null,
            (a, b) => {
                let bad = if matches!(a, Value::Str(_)) { b } else { a };
                return Err(format!("Type mismatch: expected String or Null but was {}", bad.type_name()));
            }
        },
        BinOp::Add => add(x, y)?,
        BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Mod | BinOp::Pow => arithmetic(op, x, y)?,
        BinOp::And | BinOp::Or | BinOp::Xor => unreachable!("handled by the caller"),
    })
}

fn add(x: Value, y: Value) -> Result<Value, String> {
    Ok(match (x, y) {
        (Value::Null, _) | (_, Value::Null) => Value::Null,
        (Value::List(mut a), Value::List(b)) => {
            if a.len() + b.len() > LIST_LEN_MAX {
                return Err("list too long".to_owned());
            }
            a.extend(b);
            Value::List(a)
        }
        (Value::List(mut a), b) => {
            a.push(b);
            Value::List(a)
        }
        (a, Value::List(b)) => {
            let mut out = vec![a];
            out.extend(b);
            Value::List(out)
        }
        (Value::Str(a), Value::Str(b)) => Value::Str(a + &b),
        (Value::Str(a), b) if b.as_f64().is_some() || matches!(b, Value::Bool(_)) => Value::Str(a + &text(&b)),
        (a, Value::Str(b)) if a.as_f64().is_some() || matches!(a, Value::Bool(_)) => Value::Str(text(&a) + &b),
        (x, y) => arithmetic(BinOp::Add, x, y)?,
    })
}

fn text(v: &Value) -> String {
    let mut out = String::new();
    v.write_text(&mut out, false);
    out
}

fn arithmetic(op: BinOp, x: Value, y: Value) -> Result<Value, String> {
    if x.is_null() || y.is_null() {
        return Ok(Value::Null);
    }
    if let (Value::Int(a), Value::Int(b)) = (&x, &y) {
        let (a, b) = (*a, *b);
        return Ok(Value::Int(match op {
            BinOp::Add => a.wrapping_add(b),
            BinOp::Sub => a.wrapping_sub(b),
            BinOp::Mul => a.wrapping_mul(b),
            BinOp::Div => {
                if b == 0 {
                    return Err("Division by zero".to_owned());
                }
                a.wrapping_div(b)
            }
            BinOp::Mod => {
                if b == 0 {
                    return Err("Division by zero".to_owned());
                }
                a.wrapping_rem(b)
            }
            BinOp::Pow => return Ok(Value::Float((a as f64).powf(b as f64))),
            _ => unreachable!("arithmetic operators only"),
        }));
    }
    let (Some(a), Some(b)) = (x.as_f64(), y.as_f64()) else {
        let bad = if x.as_f64().is_none() { &x } else { &y };
        return Err(format!("Type mismatch: expected Integer, Float, or Null but was {}", bad.type_name()));
    };
    Ok(Value::Float(match op {
        BinOp::Add => a + b,
        BinOp::Sub => a - b,
        BinOp::Mul => a * b,
        BinOp::Div => a / b,
        BinOp::Mod => a % b,
        BinOp::Pow => a.powf(b),
        _ => unreachable!("arithmetic operators only"),
    }))
}

fn index_value(base: Value, index: Value) -> Result<Value, String> {
    Ok(match (base, index) {
        (Value::Null, _) | (_, Value::Null) => Value::Null,
        (Value::List(items), Value::Int(i)) => {
            let len = items.len() as i64;
            let i = if i < 0 { len + i } else { i };
            if (0..len).contains(&i) { items[i as usize].clone() } else { Value::Null }
        }
        (Value::Map(entries), Value::Str(k)) => entries.into_iter().find(|(key, _)| *key == k).map_or(Value::Null, |(_, v)| v),
        (Value::List(_), other) => return Err(format!("Type mismatch: expected Integer but was {}", other.type_name())),
        (other, _) => return Err(format!("Type mismatch: expected List but was {}", other.type_name())),
    })
}

fn slice_value(base: Value, from: Option<Value>, to: Option<Value>) -> Result<Value, String> {
    let Value::List(items) = base else {
        return match base {
            Value::Null => Ok(Value::Null),
            other => Err(format!("Type mismatch: expected List but was {}", other.type_name())),
        };
    };
    let len = items.len() as i64;
    let bound = |v: Option<Value>, default: i64| -> Result<Option<i64>, String> {
        match v {
            None => Ok(Some(default)),
            Some(Value::Null) => Ok(None),
            Some(Value::Int(i)) => Ok(Some((if i < 0 { len + i } else { i }).clamp(0, len))),
            Some(other) => Err(format!("Type mismatch: expected Integer but was {}", other.type_name())),
        }
    };
    let (Some(from), Some(to)) = (bound(from, 0)?, bound(to, len)?) else {
        return Ok(Value::Null);
    };
    Ok(Value::List(if from < to { items[from as usize..to as usize].to_vec() } else { Vec::new() }))
}
