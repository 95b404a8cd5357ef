//! Runs a parsed query against a [`GraphView`]: clause by clause over a table of rows
//! (MATCH extends rows by pattern matching, CREATE/MERGE/SET/DELETE change the view and
//! record element writes, WITH/RETURN project, see `project.rs`).
//!
//! The executor owns the query's statistics and its [`Writes`]; the caller turns the
//! writes into one delta. Under GRAPH.PROFILE it also counts the records each plan
//! operation produces (`explain.rs`); MATCH is `matching.rs`, allShortestPaths `paths.rs`. It never reads a clock: new element ids come from the dot the
//! caller hands in. Every loop is bounded by the rows it is given or by
//! [`ROWS_MAX`].

use std::cell::{Cell, RefCell};
use std::collections::{BTreeSet, HashMap};

use super::ast::*;
use super::eval::{Env, Row};
use super::project::{ProjCounts, Projected, project};
use super::store::{self, ElemId, GraphView, NodeData, Writes};
use super::value::Value;

/// The most rows a clause may produce: a query is bounded work for its shard.
pub const ROWS_MAX: usize = 1_000_000;

mod explain;
mod matching;
mod paths;
mod plan;
mod procedures;
mod update;

use explain::Part;
pub use explain::{Counts, Plan};
pub use paths::{ALL_SHORTEST_PATHS_MAX, check_scopes};

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub labels_added: u64,
    pub labels_removed: u64,
    pub nodes_created: u64,
    pub props_set: u64,
    pub props_removed: u64,
    pub rels_created: u64,
    pub nodes_deleted: u64,
    pub rels_deleted: u64,
    pub indices_created: u64,
    pub indices_deleted: u64,
}

pub struct Outcome {
    /// `None` when the query has no RETURN (FalkorDB then answers statistics alone).
    pub result: Option<Projected>,
    pub stats: Stats,
}

/// The three lists of a graph's schema.
#[derive(Copy, Clone)]
pub enum Schema {
    Label,
    Type,
    Attr,
}

pub struct Exec {
    pub graph: GraphView,
    pub params: HashMap<String, Value>,
    pub writes: Writes,
    pub stats: Stats,
    /// The dot new ids are made from, and the next index under it.
    id_base: (u64, u16),
    next_seq: u32,
    /// GRAPH.PROFILE: the records each plan operation produced (explain.rs); `None`
    /// when not profiling. A cell: matching reads the graph through `&self`.
    profile: Option<RefCell<Counts>>,
    /// The clause running now, and whether the matching running now is that clause's
    /// own (not a pattern comprehension's inside it), for [`Exec::count`].
    clause_at: Cell<usize>,
    counting: Cell<bool>,
}

pub(super) fn too_many() -> String {
    format!("query produces more than {ROWS_MAX} rows")
}

impl Exec {
    pub fn new(graph: GraphView, params: HashMap<String, Value>, id_base: (u64, u16)) -> Self {
        Exec {
            graph,
            params,
            writes: Writes::default(),
            stats: Stats::default(),
            id_base,
            next_seq: 0,
            profile: None,
            clause_at: Cell::new(0),
            counting: Cell::new(false),
        }
    }

    fn env(&self) -> Env<'_> {
        Env { graph: &self.graph, params: &self.params, matcher: Some(self) }
    }

    pub fn run(&mut self, query: &Query) -> Result<Outcome, String> {
        paths::check_scopes(query)?;
        let mut rows: Vec<Row> = vec![Row::new()];
        let mut result = None;
        // A query that ends with CALL answers the rows of what the call binds.
        let mut called: Option<Vec<String>> = None;
        for (c, clause) in query.clauses.iter().enumerate() {
            called = None;
            self.clause_at.set(c);
            self.counting.set(true);
            let mut proj_counts = ProjCounts::default();
            rows = match clause {
                Clause::Match { optional, patterns, filter } => self.match_clause(rows, patterns, filter.as_ref(), *optional)?,
                Clause::Create(patterns) => {
                    for row in &mut rows {
                        for p in patterns {
                            self.create_pattern(p, row)?;
                        }
                    }
                    rows
                }
                Clause::Merge { pattern, on_create, on_match } => self.merge(rows, pattern, on_create, on_match)?,
                Clause::Set(items) => {
                    for row in &rows {
                        self.set_items(items, row, false)?;
                    }
                    rows
                }
                Clause::Remove(items) => {
                    for row in &rows {
                        self.set_items(items, row, true)?;
                    }
                    rows
                }
                Clause::Delete { exprs, .. } => {
                    for row in &rows {
                        for e in exprs {
                            let target = self.env().eval(e, row)?;
                            self.delete(target)?;
                        }
                    }
                    rows
                }
                Clause::Unwind { expr, alias } => {
                    let mut out = Vec::new();
                    for row in rows {
                        let items = match self.env().eval(expr, &row)? {
                            Value::List(items) => items,
                            Value::Null => Vec::new(),
                            other => vec![other],
                        };
                        if out.len() + items.len() > ROWS_MAX {
                            return Err(too_many());
                        }
                        for item in items {
                            let mut r = row.clone();
                            r.insert(alias.clone(), item);
                            out.push(r);
                        }
                    }
                    out
                }
                Clause::Call { proc, args, yields, filter } => {
                    let (out, columns) = self.call(rows, proc, args, yields.as_deref(), filter.as_ref())?;
                    called = Some(columns);
                    out
                }
                Clause::CreateIndex { label, props } => {
                    self.create_index(label, props)?;
                    rows
                }
                Clause::DropIndex { label, props } => {
                    self.drop_index(label, props)?;
                    rows
                }
                Clause::With(proj) => project(&self.env(), rows, proj, &mut proj_counts)?.into_rows(),
                Clause::Return(proj) => {
                    result = Some(project(&self.env(), rows, proj, &mut proj_counts)?);
                    Vec::new()
                }
            };
            self.counting.set(true);
            match clause {
                Clause::Match { .. } | Clause::CreateIndex { .. } | Clause::DropIndex { .. } => {}
                Clause::With(_) | Clause::Return(_) => self.count_projection(&proj_counts),
                _ => self.count(Part::Clause, rows.len()),
            }
        }
        if let Some(columns) = called {
            let rows = rows.into_iter().map(|r| columns.iter().map(|c| r.get(c).cloned().unwrap_or(Value::Null)).collect()).collect();
            result = Some(Projected { columns, rows });
        }
        Ok(Outcome { result, stats: std::mem::take(&mut self.stats) })
    }

    fn new_id(&mut self) -> Result<ElemId, String> {
        let seq = self.next_seq;
        self.next_seq = seq.checked_add(1).ok_or("a query may create at most 2^32 elements")?;
        Ok(ElemId { hlc: self.id_base.0, node: self.id_base.1, seq })
    }

    // ---- CREATE / MERGE ----

    fn create_pattern(&mut self, p: &Pattern, row: &mut Row) -> Result<(), String> {
        let mut at = self.create_or_bound(&p.start, row)?;
        for (rel, np) in &p.steps {
            let next = self.create_or_bound(np, row)?;
            if rel.types.len() != 1 || rel.hops.is_some() {
                return Err("Exactly one relationship type must be specified for each relation in a CREATE pattern.".to_owned());
            }
            let (src, dst) = match rel.dir {
                Direction::Out => (at, next),
                Direction::In => (next, at),
                Direction::Both => return Err("Only directed relationships are supported in CREATE".to_owned()),
            };
            if let Some(v) = &rel.var
                && row.contains_key(v)
            {
                return Err(format!("The bound variable '{v}' can't be redeclared in a CREATE clause"));
            }
            let props = self.eval_props(&rel.props, row)?;
            let id = self.create_edge(rel.types[0].clone(), src, dst, props)?;
            if let Some(v) = &rel.var {
                row.insert(v.clone(), Value::Edge(id));
            }
            at = next;
        }
        Ok(())
    }

    fn create_or_bound(&mut self, np: &NodePat, row: &mut Row) -> Result<ElemId, String> {
        if let Some(v) = &np.var
            && let Some(bound) = row.get(v)
        {
            return match bound {
                Value::Node(id) if np.labels.is_empty() && np.props.is_empty() => Ok(*id),
                Value::Node(_) => Err(format!("The bound variable '{v}' can't be redeclared in a CREATE clause")),
                Value::Null => Err("Cannot create a relationship to or from a null node".to_owned()),
                _ => Err(format!("{v} is not a node")),
            };
        }
        let props = self.eval_props(&np.props, row)?;
        let id = self.create_node(np.labels.clone(), props)?;
        if let Some(v) = &np.var {
            row.insert(v.clone(), Value::Node(id));
        }
        Ok(id)
    }

    fn eval_props(&self, props: &[(String, Expr)], row: &Row) -> Result<Vec<(String, Value)>, String> {
        let mut out: Vec<(String, Value)> = Vec::new();
        for (k, e) in props {
            let v = self.env().eval(e, row)?;
            if !v.storable() {
                return Err(format!("Property values can only be of primitive types or arrays of primitive types, not {}", v.type_name()));
            }
            out.retain(|(key, _)| key != k);
            out.push((k.clone(), v));
        }
        Ok(out)
    }

    fn add_labels_to_schema(&mut self, labels: &[String]) {
        for l in labels {
            if self.add_to_schema(Schema::Label, l) {
                self.stats.labels_added += 1;
            }
        }
    }

    /// Add a label, relationship type or property name to the graph's schema unless
    /// it is there; true when it was added.
    pub(super) fn add_to_schema(&mut self, kind: Schema, entry: &str) -> bool {
        let entries = match kind {
            Schema::Label => &mut self.graph.labels,
            Schema::Type => &mut self.graph.types,
            Schema::Attr => &mut self.graph.attrs,
        };
        if entries.contains_key(entry) {
            return false;
        }
        // The rank store::GraphView::load decodes: this write's dot, then the index.
        let seq = entries.len() as i64;
        entries.insert(entry.to_owned(), (self.id_base.0, self.id_base.1, seq));
        let name = match kind {
            Schema::Label => store::label_name(entry),
            Schema::Type => store::type_name(entry),
            Schema::Attr => store::attr_name(entry),
        };
        self.writes.set(name, store::encode_value(&Value::Int(seq)), false);
        true
    }

    fn create_node(&mut self, mut labels: Vec<String>, props: Vec<(String, Value)>) -> Result<ElemId, String> {
        let id = self.new_id()?;
        labels.dedup();
        self.add_labels_to_schema(&labels);
        self.writes.set(store::node_name(id), store::encode_labels(&labels), true);
        let node = NodeData { labels, props: Default::default() };
        self.graph.indexes.add_node(id, &node);
        self.graph.nodes.insert(id, node);
        self.stats.nodes_created += 1;
        for (k, v) in props {
            self.set_prop(&Value::Node(id), &k, v, true);
        }
        Ok(id)
    }

    fn create_edge(&mut self, typ: String, src: ElemId, dst: ElemId, props: Vec<(String, Value)>) -> Result<ElemId, String> {
        let id = self.new_id()?;
        self.add_to_schema(Schema::Type, &typ);
        self.writes.set(store::edge_name(id), store::encode_edge(&typ, src, dst), true);
        self.graph.add_edge(id, &typ, src, dst);
        self.stats.rels_created += 1;
        for (k, v) in props {
            self.set_prop(&Value::Edge(id), &k, v, true);
        }
        Ok(id)
    }

    fn merge(&mut self, rows: Vec<Row>, pattern: &Pattern, on_create: &[SetItem], on_match: &[SetItem]) -> Result<Vec<Row>, String> {
        let mut out = Vec::new();
        for row in rows {
            let found = self.pattern_matches(pattern, &row)?;
            if found.is_empty() {
                let mut r = row;
                self.create_pattern(pattern, &mut r)?;
                self.set_items(on_create, &r, false)?;
                out.push(r);
            } else {
                for r in found {
                    self.set_items(on_match, &r, false)?;
                    out.push(r);
                }
            }
            if out.len() > ROWS_MAX {
                return Err(too_many());
            }
        }
        Ok(out)
    }
}

pub(super) fn pattern_vars(p: &Pattern) -> BTreeSet<String> {
    let mut vars = BTreeSet::new();
    vars.extend(p.path.clone());
    vars.extend(p.start.var.clone());
    for (rel, node) in &p.steps {
        vars.extend(rel.var.clone());
        vars.extend(node.var.clone());
    }
    vars
}
