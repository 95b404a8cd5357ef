//! `CALL`: the built-in procedures FalkorDB's clients rely on (`db.labels()`,
//! `db.relationshipTypes()`, `db.propertyKeys()`). Each answers a graph's schema in rank
//! order ([`store::Rank`]): the compact replies' label, type and property indexes point
//! into these lists.

use super::super::ast::Expr;
use super::super::eval::Row;
use super::super::store::{self, Rank};
use super::super::value::Value;
use super::{Exec, ROWS_MAX, too_many};

impl Exec {
    /// The rows of `CALL proc(args) YIELD ...` for each incoming row, and the names the
    /// call binds (the columns when the query ends with it).
    pub(super) fn call(
        &self,
        rows: Vec<Row>,
        proc: &str,
        args: &[Expr],
        yields: Option<&[(String, String)]>,
        filter: Option<&Expr>,
    ) -> Result<(Vec<Row>, Vec<String>), String> {
        let (outputs, values) = self.procedure(proc)?;
        if !args.is_empty() {
            return Err(format!("Procedure `{proc}` requires 0 arguments, got {}", args.len()));
        }
        let bound: Vec<(usize, String)> = match yields {
            None => outputs.iter().enumerate().map(|(i, o)| (i, (*o).to_owned())).collect(),
            Some(items) => {
                let mut bound = Vec::with_capacity(items.len());
                for (out, alias) in items {
                    let i = outputs
                        .iter()
                        .position(|o| o.eq_ignore_ascii_case(out))
                        .ok_or_else(|| format!("Procedure `{proc}` does not yield output `{out}`"))?;
                    bound.push((i, alias.clone()));
                }
                bound
            }
        };
        let mut out = Vec::new();
        for row in rows {
            for record in &values {
                let mut r = row.clone();
                for (i, alias) in &bound {
                    r.insert(alias.clone(), record[*i].clone());
                }
                let keep = match filter {
                    None => true,
                    Some(f) => self.env().holds(f, &r)?,
                };
                if keep {
                    if out.len() >= ROWS_MAX {
                        return Err(too_many());
                    }
                    out.push(r);
                }
            }
        }
        Ok((out, bound.into_iter().map(|(_, alias)| alias).collect()))
    }

    /// `db.indexes()`: one record per indexed label, its properties in rank order, in
    /// FalkorDB's columns (every index here is a node range index).
    fn indexes(&self) -> Vec<Vec<Value>> {
        let mut by_label: std::collections::BTreeMap<&str, Vec<(&Rank, &str)>> = Default::default();
        for ((label, prop), rank) in &self.graph.indexes.declared {
            by_label.entry(label).or_default().push((rank, prop));
        }
        let mut records: Vec<(Rank, Vec<Value>)> = by_label
            .into_iter()
            .map(|(label, mut props)| {
                props.sort();
                let first = *props[0].0;
                let str = |s: &str| Value::Str(s.to_owned());
                let record = vec![
                    str(label),
                    Value::List(props.iter().map(|(_, p)| str(p)).collect()),
                    Value::Map(props.iter().map(|(_, p)| ((*p).to_owned(), Value::List(vec![str("RANGE")]))).collect()),
                    Value::Map(props.iter().map(|(_, p)| ((*p).to_owned(), Value::Map(Vec::new()))).collect()),
                    str("english"),
                    Value::List(Vec::new()),
                    str("NODE"),
                    str("OPERATIONAL"),
                    Value::Map(Vec::new()),
                ];
                (first, record)
            })
            .collect();
        records.sort_by_key(|r| r.0);
        records.into_iter().map(|(_, r)| r).collect()
    }

    /// A procedure's output names and its records.
    fn procedure(&self, proc: &str) -> Result<(&'static [&'static str], Vec<Vec<Value>>), String> {
        let schema = |entries: &std::collections::HashMap<String, Rank>| {
            store::schema_order(entries).into_iter().map(|e| vec![Value::Str(e.to_owned())]).collect()
        };
        match proc.to_ascii_lowercase().as_str() {
            "db.labels" => Ok((&["label"], schema(&self.graph.labels))),
            "db.relationshiptypes" => Ok((&["relationshipType"], schema(&self.graph.types))),
            "db.propertykeys" => Ok((&["propertyKey"], schema(&self.graph.attrs))),
            "db.indexes" => {
                Ok((&["label", "properties", "types", "options", "language", "stopwords", "entitytype", "status", "info"], self.indexes()))
            }
            _ => Err(format!("Procedure `{proc}` is not registered")),
        }
    }
}
