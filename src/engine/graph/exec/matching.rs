//! MATCH: how a query's patterns are matched against the graph: each row extended by
//! every binding of a pattern's nodes and relationships (variable-length hops walked
//! with their bounds), inline property maps and labels checked, OPTIONAL MATCH's null
//! row. Part of [`super::Exec`]; reads the graph only (`&self`), and every loop is
//! bounded by the rows it is given or by [`super::ROWS_MAX`].

use super::super::ast::*;
use super::super::eval::Row;
use super::super::store::ElemId;
use super::super::value::Value;
use super::explain::Part;
use super::{Exec, ROWS_MAX, pattern_vars, too_many};

/// Where a pattern's path starts: its first node, and how many edges the MATCH had
/// used before it.
#[derive(Copy, Clone)]
struct PathOrigin {
    node: ElemId,
    used_at: usize,
}

impl Exec {
    pub(super) fn match_clause(
        &self,
        rows: Vec<Row>,
        patterns: &[Pattern],
        filter: Option<&Expr>,
        optional: bool,
    ) -> Result<Vec<Row>, String> {
        let mut out = Vec::new();
        for row in rows {
            let mut found = Vec::new();
            self.match_patterns(patterns, filter, 0, row.clone(), &mut Vec::new(), &mut found)?;
            let before = out.len();
            self.counting.set(false);
            for r in found {
                // An error in the predicate is an error, never a dropped row.
                let keep = match filter {
                    None => true,
                    Some(f) => self.env().holds(f, &r)?,
                };
                if keep {
                    out.push(r);
                }
            }
            self.counting.set(true);
            if filter.is_some() {
                self.count(Part::Filter, out.len() - before);
            }
            if optional && out.len() == before {
                let mut r = row;
                for p in patterns {
                    for var in pattern_vars(p) {
                        r.entry(var).or_insert(Value::Null);
                    }
                }
                out.push(r);
            }
            self.count(Part::Optional, out.len() - before);
            if out.len() > ROWS_MAX {
                return Err(too_many());
            }
        }
        Ok(out)
    }

    /// Every match of a pattern comprehension's pattern from `row` (its variables in
    /// scope bound), each row extended by the pattern's own variables.
    pub(in crate::engine::graph) fn pattern_matches(&self, pattern: &Pattern, row: &Row) -> Result<Vec<Row>, String> {
        let mut found = Vec::new();
        // Not an operation of the plan: PROFILE does not count it.
        let counting = self.counting.replace(false);
        let matched = self.match_patterns(std::slice::from_ref(pattern), None, 0, row.clone(), &mut Vec::new(), &mut found);
        self.counting.set(counting);
        matched?;
        Ok(found)
    }

    /// `filter` is the MATCH's WHERE: only a hint for choosing start nodes by index
    /// (the caller still applies it to every row found).
    fn match_patterns(
        &self,
        patterns: &[Pattern],
        filter: Option<&Expr>,
        i: usize,
        row: Row,
        used: &mut Vec<ElemId>,
        out: &mut Vec<Row>,
    ) -> Result<(), String> {
        let Some(p) = patterns.get(i) else {
            if out.len() >= ROWS_MAX {
                return Err(too_many());
            }
            out.push(row);
            return Ok(());
        };
        if p.all_shortest {
            for r in self.all_shortest_rows(p, &row)? {
                self.count(Part::Step(i, 0), 1);
                self.match_patterns(patterns, filter, i + 1, r, used, out)?;
            }
            return Ok(());
        }
        for start in self.node_candidates(&p.start, &row, filter, i)? {
            let mut r = row.clone();
            if let Some(v) = &p.start.var {
                r.insert(v.clone(), Value::Node(start));
            }
            let origin = PathOrigin { node: start, used_at: used.len() };
            self.match_steps(patterns, filter, i, 0, origin, start, r, used, out)?;
        }
        Ok(())
    }

    /// The path a pattern matched: its start node, then each edge it followed (in
    /// `used`, in order, from `origin.used_at`) and the node at the edge's far end.
    fn matched_path(&self, origin: PathOrigin, used: &[ElemId]) -> Value {
        let edges = used[origin.used_at..].to_vec();
        let mut nodes = Vec::with_capacity(edges.len() + 1);
        nodes.push(origin.node);
        for e in &edges {
            let at = nodes[nodes.len() - 1];
            // A used edge is in the view (the query holds no dangling edge).
            let far = self.graph.edge(*e).map_or(at, |data| if data.src == at { data.dst } else { data.src });
            nodes.push(far);
        }
        Value::Path(nodes, edges)
    }

    #[allow(clippy::too_many_arguments)]
    fn match_steps(
        &self,
        patterns: &[Pattern],
        filter: Option<&Expr>,
        i: usize,
        step: usize,
        origin: PathOrigin,
        at: ElemId,
        row: Row,
        used: &mut Vec<ElemId>,
        out: &mut Vec<Row>,
    ) -> Result<(), String> {
        let p = &patterns[i];
        let Some((rel, next)) = p.steps.get(step) else {
            let mut row = row;
            if let Some(name) = &p.path {
                row.insert(name.clone(), self.matched_path(origin, used));
            }
            return self.match_patterns(patterns, filter, i + 1, row, used, out);
        };
        if let Some((min, max)) = rel.hops {
            let mut paths = Vec::new();
            self.walk(rel, at, min, max, &mut Vec::new(), used, &row, &mut paths)?;
            for (end, edges) in paths {
                let Some(r) = self.bind_node(next, end, row.clone())? else { continue };
                let mut r = r;
                if let Some(v) = &rel.var {
                    r.insert(v.clone(), Value::List(edges.iter().map(|e| Value::Edge(*e)).collect()));
                }
                self.count(Part::Step(i, step), 1);
                let before = used.len();
                used.extend(edges);
                self.match_steps(patterns, filter, i, step + 1, origin, end, r, used, out)?;
                used.truncate(before);
            }
            return Ok(());
        }
        for (edge, other) in self.hops_from(rel, at) {
            if used.contains(&edge) || !self.edge_fits(rel, edge, &row)? {
                continue;
            }
            let mut r = row.clone();
            if let Some(v) = &rel.var {
                match r.get(v) {
                    Some(Value::Edge(bound)) if *bound != edge => continue,
                    Some(Value::Edge(_)) => {}
                    Some(_) => return Err(format!("{v} is not a relationship")),
                    None => {
                        r.insert(v.clone(), Value::Edge(edge));
                    }
                }
            }
            let Some(r) = self.bind_node(next, other, r)? else { continue };
            self.count(Part::Step(i, step), 1);
            used.push(edge);
            self.match_steps(patterns, filter, i, step + 1, origin, other, r, used, out)?;
            used.pop();
        }
        Ok(())
    }

    /// Variable-length expansion: every path of `min..=max` distinct edges from `at`.
    #[allow(clippy::too_many_arguments)]
    fn walk(
        &self,
        rel: &RelPat,
        at: ElemId,
        min: u32,
        max: u32,
        path: &mut Vec<ElemId>,
        used: &[ElemId],
        row: &Row,
        out: &mut Vec<(ElemId, Vec<ElemId>)>,
    ) -> Result<(), String> {
        if path.len() as u32 >= min {
            if out.len() >= ROWS_MAX {
                return Err(too_many());
            }
            out.push((at, path.clone()));
        }
        if path.len() as u32 >= max {
            return Ok(());
        }
        for (edge, other) in self.hops_from(rel, at) {
            if path.contains(&edge) || used.contains(&edge) || !self.edge_fits(rel, edge, row)? {
                continue;
            }
            path.push(edge);
            self.walk(rel, other, min, max, path, used, row, out)?;
            path.pop();
        }
        Ok(())
    }

    /// The edges a relationship pattern may follow from `at` (of its types), with the
    /// node at the far end.
    pub(super) fn hops_from(&self, rel: &RelPat, at: ElemId) -> Vec<(ElemId, ElemId)> {
        self.graph.hops(at, rel.dir, &rel.types)
    }

    /// Whether an edge [`Self::hops_from`] gave fits the pattern's property map (its
    /// type was checked there).
    pub(super) fn edge_fits(&self, rel: &RelPat, edge: ElemId, row: &Row) -> Result<bool, String> {
        if rel.props.is_empty() {
            return Ok(true);
        }
        let Some(data) = self.graph.edge(edge) else { return Ok(false) };
        self.props_fit(&rel.props, data.props, row)
    }

    fn props_fit(&self, wanted: &[(String, Expr)], have: &crate::engine::graph::view::Props, row: &Row) -> Result<bool, String> {
        for (k, e) in wanted {
            let want = self.env().eval(e, row)?;
            match have.get(k) {
                Some(v) if v.equals(&want) == Some(true) => {}
                _ => return Ok(false),
            }
        }
        Ok(true)
    }

    pub(super) fn node_fits(&self, np: &NodePat, id: ElemId, row: &Row) -> Result<bool, String> {
        let Some(node) = self.graph.nodes.get(&id) else { return Ok(false) };
        if !np.labels.iter().all(|l| node.labels.contains(l)) {
            return Ok(false);
        }
        self.props_fit(&np.props, &node.props, row)
    }

    fn bind_node(&self, np: &NodePat, id: ElemId, mut row: Row) -> Result<Option<Row>, String> {
        if let Some(v) = &np.var {
            match row.get(v) {
                Some(Value::Node(bound)) if *bound != id => return Ok(None),
                Some(Value::Node(_)) => {}
                Some(Value::Null) => return Ok(None),
                Some(_) => return Err(format!("{v} is not a node")),
                None => {
                    row.insert(v.clone(), Value::Node(id));
                }
            }
        }
        Ok(self.node_fits(np, id, &row)?.then_some(row))
    }
}
