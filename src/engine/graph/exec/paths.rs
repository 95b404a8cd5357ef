//! `MATCH p = allShortestPaths((a)-[:R*]->(b))`: every path of the fewest hops between
//! two nodes bound by an earlier clause, as FalkorDB runs it. A breadth-first search
//! from `a` records, for each node it reaches, every edge that reaches it at its
//! distance (the shortest-path DAG), stopping at the level where `b` is reached; the
//! paths are then read back from `b`. `a = b` asks for the shortest cycles through `a`.
//!
//! Owns only the search: it never writes, and it never enumerates more than
//! [`ALL_SHORTEST_PATHS_MAX`] paths for one pair of ends (a graph of `k` diamonds in a
//! row has `2^k` shortest paths): past that the query answers an error.

use std::collections::HashMap;

use super::super::ast::{Clause, Pattern, Query, RelPat};
use super::super::eval::Row;
use super::super::parser::UNRESOLVED_ENDS;
use super::super::store::ElemId;
use super::super::value::Value;
use super::{Exec, pattern_vars};

/// The most shortest paths one `allShortestPaths` enumerates for one pair of ends.
pub const ALL_SHORTEST_PATHS_MAX: usize = 100_000;

/// A query's allShortestPaths patterns are in MATCH, with both ends bound before the
/// run of consecutive (non-optional) MATCH clauses it is in: FalkorDB plans such a run as one pattern,
/// so `MATCH (a), (b) MATCH p = allShortestPaths((a)-->(b))` is refused and needs a
/// `WITH a, b` (or any other clause) between. FalkorDB decides this from the query's
/// text, before it runs, so a query that would match no row is refused too.
pub fn check_scopes(query: &Query) -> Result<(), String> {
    let mut bound: Vec<String> = Vec::new();
    // What was bound before the current run of MATCH clauses.
    let mut resolved: Vec<String> = Vec::new();
    let mut in_match_run = false;
    for clause in &query.clauses {
        // An OPTIONAL MATCH is an operation of its own: it sees all bound before it.
        let plain = matches!(clause, Clause::Match { optional: false, .. });
        if matches!(clause, Clause::Match { optional: true, .. }) || (plain && !in_match_run) {
            resolved = bound.clone();
        }
        in_match_run = plain;
        match clause {
            Clause::Match { patterns, .. } => {
                for p in patterns.iter().filter(|p| p.all_shortest) {
                    let ends = [p.start.var.as_ref(), p.steps.first().and_then(|(_, end)| end.var.as_ref())];
                    if !ends.iter().all(|v| v.is_some_and(|v| resolved.contains(v))) {
                        return Err(UNRESOLVED_ENDS.to_owned());
                    }
                }
                bound.extend(patterns.iter().flat_map(pattern_vars));
            }
            Clause::Create(patterns) => {
                refuse_outside_match(patterns)?;
                bound.extend(patterns.iter().flat_map(pattern_vars));
            }
            Clause::Merge { pattern, .. } => {
                refuse_outside_match(std::slice::from_ref(pattern))?;
                bound.extend(pattern_vars(pattern));
            }
            Clause::Unwind { alias, .. } => bound.push(alias.clone()),
            Clause::Call { yields, .. } => bound.extend(yields.iter().flatten().map(|(_, alias)| alias.clone())),
            Clause::With(proj) => {
                if !proj.star {
                    bound.clear();
                }
                bound.extend(proj.items.iter().map(|(_, alias)| alias.clone()));
            }
            Clause::Set(_) | Clause::Remove(_) | Clause::Delete { .. } | Clause::Return(_) => {}
            Clause::CreateIndex { .. } | Clause::DropIndex { .. } => {}
        }
    }
    Ok(())
}

fn refuse_outside_match(patterns: &[Pattern]) -> Result<(), String> {
    if patterns.iter().any(|p| p.all_shortest) {
        return Err("FalkorDB support allShortestPaths only in match clauses".to_owned());
    }
    Ok(())
}

/// One shortest path: its nodes from the start, and the edges between them.
pub(super) type FoundPath = (Vec<ElemId>, Vec<ElemId>);

impl Exec {
    /// Every path of the fewest hops (at least 1, at most `max`) from `from` to `to`
    /// over the edges `rel` allows (its types, direction and property map), in no
    /// particular order; none when `to` is out of reach.
    pub(super) fn all_shortest_paths(&self, rel: &RelPat, from: ElemId, to: ElemId, max: u32, row: &Row) -> Result<Vec<FoundPath>, String> {
        // For each node reached: every (previous node, edge) one hop closer to `from`.
        let mut preds: HashMap<ElemId, Vec<(ElemId, ElemId)>> = HashMap::new();
        // The hops into `to` (kept apart: when `to` is `from` it is also the origin).
        let mut into_target: Vec<(ElemId, ElemId)> = Vec::new();
        let mut frontier = vec![from];
        let mut depth = 0u32;
        while !frontier.is_empty() && depth < max && into_target.is_empty() {
            depth += 1;
            let mut next = Vec::new();
            let mut reached_now: HashMap<ElemId, Vec<(ElemId, ElemId)>> = HashMap::new();
            for &at in &frontier {
                for (edge, other) in self.hops_from(rel, at) {
                    if !self.edge_fits(rel, edge, row)? || !self.graph.nodes.contains_key(&other) {
                        continue;
                    }
                    if other == to {
                        into_target.push((at, edge));
                    } else if other != from && !preds.contains_key(&other) {
                        let entry = reached_now.entry(other).or_default();
                        if entry.is_empty() {
                            next.push(other);
                        }
                        entry.push((at, edge));
                    }
                }
            }
            preds.extend(reached_now);
            frontier = next;
        }
        let mut out = Vec::new();
        for &(prev, edge) in &into_target {
            let mut nodes = vec![to];
            let mut edges = vec![edge];
            self.paths_back(&preds, from, prev, &mut nodes, &mut edges, &mut out)?;
        }
        Ok(out)
    }

    /// Extend the reversed partial path (`nodes` from `to` back to `at`'s successor) back
    /// to `from` along every recorded predecessor; each complete path goes to `out`.
    /// Recursion depth is the path's length, which the breadth-first search bounded.
    fn paths_back(
        &self,
        preds: &HashMap<ElemId, Vec<(ElemId, ElemId)>>,
        from: ElemId,
        at: ElemId,
        nodes: &mut Vec<ElemId>,
        edges: &mut Vec<ElemId>,
        out: &mut Vec<FoundPath>,
    ) -> Result<(), String> {
        nodes.push(at);
        // Only a cycle (`from` = `to`) can repeat an edge: an undirected one may come
        // back along the edge it left by. A path uses an edge once (openCypher), so that
        // one is dropped (FalkorDB answers none there either).
        let repeats = || edges.len() > 1 && edges[1..].contains(&edges[0]);
        if at == from && !repeats() {
            if out.len() >= ALL_SHORTEST_PATHS_MAX {
                return Err(format!("allShortestPaths found more than {ALL_SHORTEST_PATHS_MAX} paths between two nodes"));
            }
            out.push((nodes.iter().rev().copied().collect(), edges.iter().rev().copied().collect()));
        } else if at != from {
            for &(prev, edge) in preds.get(&at).into_iter().flatten() {
                edges.push(edge);
                self.paths_back(preds, from, prev, nodes, edges, out)?;
                edges.pop();
            }
        }
        nodes.pop();
        Ok(())
    }

    /// The rows an allShortestPaths pattern adds to `row`: one per shortest path, the
    /// path bound to the pattern's name and (as FalkorDB binds it) to the relationship's
    /// variable. Its ends are bound (checked before the query ran); a null end matches
    /// nothing.
    pub(super) fn all_shortest_rows(&self, p: &Pattern, row: &Row) -> Result<Vec<Row>, String> {
        let (rel, end) = &p.steps[0];
        let node = |var: &Option<String>| match var.as_ref().and_then(|v| row.get(v)) {
            Some(Value::Node(id)) => Ok(Some(*id)),
            Some(Value::Null) => Ok(None),
            Some(other) => Err(format!("allShortestPaths expects its end points to be nodes, not {}", other.type_name())),
            None => Err(UNRESOLVED_ENDS.to_owned()),
        };
        let (Some(from), Some(to)) = (node(&p.start.var)?, node(&end.var)?) else { return Ok(Vec::new()) };
        if !self.node_fits(&p.start, from, row)? || !self.node_fits(end, to, row)? {
            return Ok(Vec::new());
        }
        let max = rel.hops.map_or(1, |(_, max)| max);
        let mut rows = Vec::new();
        for (nodes, edges) in self.all_shortest_paths(rel, from, to, max, row)? {
            let path = Value::Path(nodes, edges);
            let mut r = row.clone();
            if let Some(v) = &rel.var {
                r.insert(v.clone(), path.clone());
            }
            if let Some(name) = &p.path {
                r.insert(name.clone(), path);
            }
            rows.push(r);
        }
        Ok(rows)
    }
}
