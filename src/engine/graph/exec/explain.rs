//! GRAPH.EXPLAIN: the plan the executor follows, as FalkorDB prints one (the root
//! first, each operation's child indented four spaces). The operations name what this
//! executor really does, clause by clause: how each pattern's start node is found
//! (index, label, all nodes, or a variable already bound), each hop, the filters and
//! projections. Nothing runs and nothing is written.

use super::super::ast::{Clause, Direction, NodePat, Projection, Query, RelPat};
use super::super::eval::Row;
use super::super::value::Value;
use super::plan::Start;
use super::{Exec, pattern_vars};

impl Exec {
    pub fn explain(&self, query: &Query) -> Vec<String> {
        // Operations in the order they run (the leaf first); bound: variables in scope.
        let mut ops: Vec<String> = Vec::new();
        let mut bound = Row::new();
        for clause in &query.clauses {
            match clause {
                Clause::Match { optional, patterns, filter } => {
                    let before = ops.len();
                    for p in patterns {
                        let (start, _) = self.start(&p.start, &bound, filter.as_ref());
                        ops.push(match start {
                            Start::Bound => format!("Argument | {}", node(&p.start)),
                            Start::Index { prop, .. } => format!("Node By Index Scan | {} on {prop}", node(&p.start)),
                            Start::Label(_) => format!("Node By Label Scan | {}", node(&p.start)),
                            Start::AllNodes => format!("All Node Scan | {}", node(&p.start)),
                        });
                        let mut at = &p.start;
                        for (rel, next) in &p.steps {
                            let op = if rel.hops.is_some() { "Conditional Variable Length Traverse" } else { "Conditional Traverse" };
                            ops.push(format!("{op} | {}{}{}", node(at), edge(rel), node(next)));
                            at = next;
                        }
                        for var in pattern_vars(p) {
                            bound.insert(var, Value::Null);
                        }
                    }
                    if filter.is_some() {
                        ops.push("Filter".to_owned());
                    }
                    if *optional && ops.len() > before {
                        ops.push("Optional".to_owned());
                    }
                }
                Clause::Create(patterns) => {
                    ops.push("Create".to_owned());
                    for var in patterns.iter().flat_map(pattern_vars) {
                        bound.insert(var, Value::Null);
                    }
                }
                Clause::Merge { pattern, .. } => {
                    ops.push("Merge".to_owned());
                    for var in pattern_vars(pattern) {
                        bound.insert(var, Value::Null);
                    }
                }
                Clause::Set(_) | Clause::Remove(_) => ops.push("Update".to_owned()),
                Clause::Delete { .. } => ops.push("Delete".to_owned()),
                Clause::Unwind { alias, .. } => {
                    ops.push("Unwind".to_owned());
                    bound.insert(alias.clone(), Value::Null);
                }
                Clause::Call { proc, yields, .. } => {
                    ops.push(format!("ProcedureCall | {proc}"));
                    for (_, alias) in yields.iter().flatten() {
                        bound.insert(alias.clone(), Value::Null);
                    }
                }
                Clause::CreateIndex { label, props } => ops.push(format!("Create Index | :{label}({})", props.join(", "))),
                Clause::DropIndex { label, props } => ops.push(format!("Drop Index | :{label}({})", props.join(", "))),
                Clause::With(proj) => {
                    projection(proj, &mut ops);
                    if !proj.star {
                        bound.clear();
                    }
                    for (_, alias) in &proj.items {
                        bound.insert(alias.clone(), Value::Null);
                    }
                }
                Clause::Return(proj) => {
                    projection(proj, &mut ops);
                    ops.push("Results".to_owned());
                }
            }
        }
        ops.iter().rev().enumerate().map(|(depth, op)| format!("{}{op}", "    ".repeat(depth))).collect()
    }
}

fn projection(proj: &Projection, ops: &mut Vec<String>) {
    ops.push(if proj.items.iter().any(|(e, _)| e.has_aggregate()) { "Aggregate" } else { "Project" }.to_owned());
    if proj.filter.is_some() {
        ops.push("Filter".to_owned());
    }
    if proj.distinct {
        ops.push("Distinct".to_owned());
    }
    if !proj.order.is_empty() {
        ops.push("Sort".to_owned());
    }
    if proj.skip.is_some() {
        ops.push("Skip".to_owned());
    }
    if proj.limit.is_some() {
        ops.push("Limit".to_owned());
    }
}

fn node(np: &NodePat) -> String {
    let labels: String = np.labels.iter().map(|l| format!(":{l}")).collect();
    format!("({}{labels})", np.var.as_deref().unwrap_or(""))
}

fn edge(rel: &RelPat) -> String {
    let types = if rel.types.is_empty() { String::new() } else { format!(":{}", rel.types.join("|")) };
    let hops = match rel.hops {
        Some((min, max)) => format!("*{min}..{max}"),
        None => String::new(),
    };
    let inner = format!("[{}{types}{hops}]", rel.var.as_deref().unwrap_or(""));
    match rel.dir {
        Direction::Out => format!("-{inner}->"),
        Direction::In => format!("<-{inner}-"),
        Direction::Both => format!("-{inner}-"),
    }
}
