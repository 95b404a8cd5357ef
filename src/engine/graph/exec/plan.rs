//! Where a MATCH starts, and the index clauses. A pattern's start node is looked up
//! rather than scanned when it can be: through a declared index (an equality in the
//! node's property map, or an equality, range or `IN` on a value known before the
//! node is matched (a constant, a parameter, an expression over bound variables) in the WHERE
//! conjuncts), else through the nodes of one of its labels, else all nodes. Candidates
//! are a superset of the matches: each is still checked against the pattern and the
//! WHERE, so the plan changes how fast, never what.

use super::super::ast::{BinOp, Expr, NodePat};
use super::super::eval::Row;
use super::super::index::{self, Lookup};
use super::super::store::{self, ElemId};
use super::super::value::Value;
use super::explain::Part;
use super::{Exec, Schema};

/// How a pattern's start node is found (GRAPH.EXPLAIN prints it).
#[derive(Debug, PartialEq)]
pub enum Start {
    /// A variable bound by an earlier clause or pattern.
    Bound,
    Index {
        label: String,
        prop: String,
    },
    Label(String),
    AllNodes,
}

impl Exec {
    /// The nodes `np` may start at (`pattern`: its index in the MATCH, for PROFILE's
    /// counts of the scan and of the property-map filter above it).
    pub(super) fn node_candidates(&self, np: &NodePat, row: &Row, filter: Option<&Expr>, pattern: usize) -> Result<Vec<ElemId>, String> {
        if let Some(v) = &np.var {
            match row.get(v) {
                Some(Value::Node(id)) => return Ok(if self.node_fits(np, *id, row)? { vec![*id] } else { Vec::new() }),
                Some(Value::Null) => return Ok(Vec::new()),
                Some(_) => return Err(format!("{v} is not a node")),
                None => {}
            }
        }
        let (_, ids) = self.start(np, row, filter);
        let mut out = Vec::new();
        self.count(Part::Scan(pattern), ids.as_ref().map_or(self.graph.nodes.len(), Vec::len));
        match ids {
            Some(ids) => {
                for id in ids {
                    if self.node_fits(np, id, row)? {
                        out.push(id);
                    }
                }
            }
            None => {
                for id in self.graph.nodes.keys() {
                    if self.node_fits(np, *id, row)? {
                        out.push(*id);
                    }
                }
            }
        }
        self.count(Part::PropFilter(pattern), out.len());
        Ok(out)
    }

    /// The start chosen for `np`, with its candidates (`None`: every node).
    pub(super) fn start(&self, np: &NodePat, row: &Row, filter: Option<&Expr>) -> (Start, Option<Vec<ElemId>>) {
        if np.var.as_ref().is_some_and(|v| row.contains_key(v)) {
            return (Start::Bound, None);
        }
        for label in &np.labels {
            for (prop, e) in &np.props {
                if let Some(Some(k)) = self.constant(e, row).map(|v| index::key(&v))
                    && let Some(ids) = self.graph.indexes.lookup(label, prop, &Lookup::Eq(k))
                {
                    return (Start::Index { label: label.clone(), prop: prop.clone() }, Some(ids));
                }
            }
            if let (Some(var), Some(filter)) = (&np.var, filter) {
                for conjunct in conjuncts(filter) {
                    if let Some((prop, lookups)) = self.sargable(conjunct, var, row)
                        && self.graph.indexes.is_declared(label, &prop)
                    {
                        let mut ids: Vec<ElemId> =
                            lookups.iter().filter_map(|l| self.graph.indexes.lookup(label, &prop, l)).flatten().collect();
                        ids.sort_unstable();
                        ids.dedup();
                        return (Start::Index { label: label.clone(), prop }, Some(ids));
                    }
                }
            }
        }
        // The smallest label's nodes.
        if let Some(label) = np.labels.iter().min_by_key(|l| self.graph.indexes.by_label.get(*l).map_or(0, |s| s.len())) {
            let ids = self.graph.indexes.by_label.get(label).map(|s| s.iter().copied().collect()).unwrap_or_default();
            return (Start::Label(label.clone()), Some(ids));
        }
        (Start::AllNodes, None)
    }

    /// The value of `e` in the row matched so far: a literal, a parameter, or any
    /// expression over variables already bound (`{i: p[0]}` after `UNWIND … AS p`,
    /// `toInteger('7')`). An expression that reads a variable not bound yet (the
    /// node being chosen, a later pattern's) fails to evaluate and is not used to
    /// choose candidates, nor is one that fails for another reason (the scan that
    /// runs instead reports it where the query reads it).
    fn constant(&self, e: &Expr, row: &Row) -> Option<Value> {
        match e {
            Expr::Lit(v) => Some(v.clone()),
            _ if e.has_aggregate() => None,
            _ => self.env().eval(e, row).ok(),
        }
    }

    /// `var.prop OP constant` (either way round) or `var.prop IN [constants]`: the
    /// property and the lookups whose union holds every node that can satisfy it.
    fn sargable(&self, e: &Expr, var: &str, row: &Row) -> Option<(String, Vec<Lookup>)> {
        let Expr::Bin(op, l, r) = e else { return None };
        let prop_of = |e: &Expr| match e {
            Expr::Prop(base, prop) if matches!(base.as_ref(), Expr::Var(v) if v == var) => Some(prop.clone()),
            _ => None,
        };
        if *op == BinOp::In {
            let prop = prop_of(l)?;
            let Value::List(items) = self.constant(r, row)? else { return None };
            let lookups = items.iter().map(|v| index::key(v).map(Lookup::Eq)).collect::<Option<Vec<_>>>()?;
            return Some((prop, lookups));
        }
        let (prop, constant, op) = match (prop_of(l), prop_of(r)) {
            (Some(p), None) => (p, self.constant(r, row)?, *op),
            (None, Some(p)) => (p, self.constant(l, row)?, flip(*op)?),
            _ => return None,
        };
        let k = index::key(&constant)?;
        let lookup = match op {
            BinOp::Eq => Lookup::Eq(k),
            BinOp::Lt | BinOp::Le => Lookup::AtMost(k),
            BinOp::Gt | BinOp::Ge => Lookup::AtLeast(k),
            _ => return None,
        };
        Some((prop, vec![lookup]))
    }

    // ---- CREATE INDEX / DROP INDEX ----

    pub(super) fn create_index(&mut self, label: &str, props: &[String]) -> Result<(), String> {
        if let Some(p) = props.iter().find(|p| self.graph.indexes.is_declared(label, p)) {
            return Err(format!("Attribute '{p}' is already indexed"));
        }
        self.add_to_schema(Schema::Label, label);
        for prop in props {
            self.add_to_schema(Schema::Attr, prop);
            // The rank store::GraphView::load decodes, as for schema entries.
            let seq = self.graph.indexes.declared.len() as i64;
            self.graph.indexes.declare(label, prop, (self.id_base.0, self.id_base.1, seq), &self.graph.nodes);
            self.writes.set(store::index_name(label, prop), store::encode_value(&Value::Int(seq)), false);
            self.stats.indices_created += 1;
        }
        Ok(())
    }

    pub(super) fn drop_index(&mut self, label: &str, props: &[String]) -> Result<(), String> {
        if let Some(p) = props.iter().find(|p| !self.graph.indexes.is_declared(label, p)) {
            return Err(format!("ERR Unable to drop index on :{label}({p}): no such index."));
        }
        for prop in props {
            self.graph.indexes.drop_index(label, prop);
            self.writes.remove(store::index_name(label, prop));
            self.stats.indices_deleted += 1;
        }
        Ok(())
    }
}

/// The top-level AND-ed parts of a predicate.
fn conjuncts(e: &Expr) -> Vec<&Expr> {
    match e {
        Expr::Bin(BinOp::And, l, r) => {
            let mut out = conjuncts(l);
            out.extend(conjuncts(r));
            out
        }
        other => vec![other],
    }
}

/// `c OP x.p` read as `x.p OP' c`.
fn flip(op: BinOp) -> Option<BinOp> {
    Some(match op {
        BinOp::Eq => BinOp::Eq,
        BinOp::Lt => BinOp::Gt,
        BinOp::Le => BinOp::Ge,
        BinOp::Gt => BinOp::Lt,
        BinOp::Ge => BinOp::Le,
        _ => return None,
    })
}
