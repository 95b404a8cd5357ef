//! GRAPH.EXPLAIN and GRAPH.PROFILE: the plan the executor follows, as FalkorDB prints
//! one (the root first, each operation's child indented four spaces), and for PROFILE
//! the records each operation produced while the query ran. The operations name what
//! this executor really does, clause by clause: how each pattern's start node is found
//! (index, label, all nodes; a node bound by an earlier clause needs no operation, as in
//! FalkorDB), each hop, the filters and projections. Their text follows FalkorDB's
//! (`Conditional Traverse | (a)->(b:L)`, anonymous entities as `@anon_N`), though
//! FalkorDB's optimiser often picks another plan (see docs/graph.md).
//!
//! Explaining runs nothing and writes nothing; the counts are kept by the executor
//! ([`Exec::count`]) and only read here. The engine reads no clock, so a profile's
//! execution times are 0.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};

use super::super::ast::{Clause, Direction, NodePat, Pattern, Projection, Query, RelPat};
use super::super::eval::Row;
use super::super::project::ProjCounts;
use super::super::value::Value;
use super::plan::Start;
use super::{Exec, pattern_vars};

/// What one plan operation counts: its part of the clause it belongs to.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Part {
    /// Pattern `i`'s start node scan (candidates before its property map is checked).
    Scan(usize),
    /// Pattern `i`'s start node property map, checked after a label or full scan.
    PropFilter(usize),
    /// Pattern `i`'s step `j` (one hop, a variable-length hop, or allShortestPaths).
    Step(usize, usize),
    /// A MATCH's WHERE.
    Filter,
    /// The rows an OPTIONAL MATCH passes on.
    Optional,
    /// The rows a clause that is one operation passes on (CREATE, SET, UNWIND, ...).
    Clause,
    Project,
    Distinct,
    Sort,
    Skip,
    Limit,
    /// WITH's WHERE.
    ProjFilter,
}

/// Records produced per (clause index, part) while a query runs under PROFILE.
pub type Counts = BTreeMap<(usize, Part), u64>;

/// A query's operations, the leaf first.
pub struct Plan(Vec<Op>);

/// One operation of a plan.
struct Op {
    text: String,
    clause: usize,
    part: Part,
}

impl Exec {
    /// Count the records each plan operation produces from now on (GRAPH.PROFILE).
    pub fn start_profiling(&mut self) {
        self.profile = Some(RefCell::default());
    }

    /// The counts kept since [`Exec::start_profiling`] (empty without it).
    pub fn take_counts(&mut self) -> Counts {
        self.profile.take().map(RefCell::into_inner).unwrap_or_default()
    }

    /// `n` more records produced by `part` of the running clause, when profiling.
    pub(super) fn count(&self, part: Part, n: usize) {
        if let Some(counts) = &self.profile
            && self.counting.get()
        {
            *counts.borrow_mut().entry((self.clause_at.get(), part)).or_default() += n as u64;
        }
    }

    /// A projection's counts, recorded as its plan operations' (explain.rs).
    pub(super) fn count_projection(&self, c: &ProjCounts) {
        for (part, n) in [
            (Part::Project, c.projected),
            (Part::Distinct, c.distinct),
            (Part::Sort, c.sorted),
            (Part::Skip, c.skipped),
            (Part::Limit, c.limited),
            (Part::ProjFilter, c.filtered),
        ] {
            self.count(part, n);
        }
    }

    pub fn explain(&self, query: &Query) -> Vec<String> {
        let ops = self.plan(query);
        ops.iter().rev().enumerate().map(|(depth, op)| format!("{}{}", "    ".repeat(depth), op.text)).collect()
    }

    /// The plan a query will run, chosen against the graph as it is now (before the
    /// query changes it, as FalkorDB plans before it runs).
    pub fn plan_for_profile(&self, query: &Query) -> Plan {
        Plan(self.plan(query))
    }

    /// The plan with the records each operation produced, read from the counts the run
    /// kept. The root operation of a query without RETURN passes its records to
    /// nothing, and FalkorDB counts 0 for it.
    pub fn profile(&self, plan: &Plan, counts: &Counts) -> Vec<String> {
        let mut lines = Vec::with_capacity(plan.0.len());
        for (depth, op) in plan.0.iter().rev().enumerate() {
            let produced = if depth == 0 && op.text != "Results" { 0 } else { counts.get(&(op.clause, op.part)).copied().unwrap_or(0) };
            lines.push(format!("{}{} | Records produced: {produced}, Execution time: 0.000000 ms", "    ".repeat(depth), op.text));
        }
        lines
    }

    /// The operations in the order they run (the leaf first).
    fn plan(&self, query: &Query) -> Vec<Op> {
        let mut ops: Vec<Op> = Vec::new();
        // Variables in scope, and FalkorDB's names for anonymous entities.
        let mut bound = Row::new();
        let anon = anonymous_names(query);
        for (c, clause) in query.clauses.iter().enumerate() {
            let mut push = |text: String, part: Part| ops.push(Op { text, clause: c, part });
            match clause {
                Clause::Match { optional, patterns, filter } => {
                    let mut texts: Vec<(String, Part)> = Vec::new();
                    for (i, p) in patterns.iter().enumerate() {
                        let names = |np: &NodePat| node(np, &anon, true);
                        let (start, _) = self.start(&p.start, &bound, filter.as_ref());
                        let scan = match &start {
                            Start::Bound => None,
                            Start::Index { prop, .. } => Some(format!("Node By Index Scan | {} on {prop}", names(&p.start))),
                            Start::Label(_) => Some(format!("Node By Label Scan | {}", names(&p.start))),
                            Start::AllNodes => Some(format!("All Node Scan | {}", names(&p.start))),
                        };
                        if let Some(scan) = scan {
                            texts.push((scan, Part::Scan(i)));
                            if !p.start.props.is_empty() && !matches!(start, Start::Index { .. }) {
                                texts.push(("Filter".to_owned(), Part::PropFilter(i)));
                            }
                        }
                        texts.extend(steps(p, i, &anon));
                        for var in pattern_vars(p) {
                            bound.insert(var, Value::Null);
                        }
                    }
                    if filter.is_some() {
                        texts.push(("Filter".to_owned(), Part::Filter));
                    }
                    let traverse_only = texts.len() == 1 && matches!(texts[0].1, Part::Step(..));
                    if *optional && traverse_only {
                        // FalkorDB's one-operation form: an optional traverse from a bound node.
                        texts[0].0 = format!("Optional {}", texts[0].0);
                        texts[0].1 = Part::Optional;
                    } else if *optional && !texts.is_empty() {
                        texts.push(("Optional".to_owned(), Part::Optional));
                    }
                    for (text, part) in texts {
                        push(text, part);
                    }
                }
                Clause::Create(patterns) => {
                    push("Create".to_owned(), Part::Clause);
                    for var in patterns.iter().flat_map(pattern_vars) {
                        bound.insert(var, Value::Null);
                    }
                }
                Clause::Merge { pattern, .. } => {
                    push("Merge".to_owned(), Part::Clause);
                    for var in pattern_vars(pattern) {
                        bound.insert(var, Value::Null);
                    }
                }
                Clause::Set(_) | Clause::Remove(_) => push("Update".to_owned(), Part::Clause),
                Clause::Delete { .. } => push("Delete".to_owned(), Part::Clause),
                Clause::Unwind { alias, .. } => {
                    push("Unwind".to_owned(), Part::Clause);
                    bound.insert(alias.clone(), Value::Null);
                }
                Clause::Call { yields, .. } => {
                    push("ProcedureCall".to_owned(), Part::Clause);
                    for (_, alias) in yields.iter().flatten() {
                        bound.insert(alias.clone(), Value::Null);
                    }
                }
                Clause::CreateIndex { label, props } => push(format!("Create Index | :{label}({})", props.join(", ")), Part::Clause),
                Clause::DropIndex { label, props } => push(format!("Drop Index | :{label}({})", props.join(", ")), Part::Clause),
                Clause::With(proj) => {
                    projection(proj, &mut push);
                    if !proj.star {
                        bound.clear();
                    }
                    for (_, alias) in &proj.items {
                        bound.insert(alias.clone(), Value::Null);
                    }
                }
                Clause::Return(proj) => {
                    projection(proj, &mut push);
                    // Counted as the operation below it (set at the end).
                    push("Results".to_owned(), Part::Clause);
                }
            }
        }
        // A query that ends with CALL answers the call's rows, as through RETURN.
        if let Some((last, Clause::Call { .. })) = query.clauses.iter().enumerate().next_back() {
            ops.push(Op { text: "Results".to_owned(), clause: last, part: Part::Clause });
        }
        // Results passes on what the operation below it produced.
        for i in 1..ops.len() {
            if ops[i].text == "Results" {
                (ops[i].clause, ops[i].part) = (ops[i - 1].clause, ops[i - 1].part);
            }
        }
        ops
    }
}

/// A pattern's hops: one operation each.
fn steps(p: &Pattern, i: usize, anon: &HashMap<*const (), String>) -> Vec<(String, Part)> {
    let mut out = Vec::new();
    let mut at = &p.start;
    for (j, (rel, next)) in p.steps.iter().enumerate() {
        let text = if p.all_shortest {
            format!("Conditional Variable Length Traverse (Expand Into) | {}", var_length(at, rel, next, anon))
        } else if rel.hops.is_some() {
            format!("Conditional Variable Length Traverse | {}", var_length(at, rel, next, anon))
        } else {
            // FalkorDB prints a hop as an expression read from its source: always `->`,
            // the edge only when it is named.
            let edge = match &rel.var {
                Some(v) => format!("-[{v}{}]->", types(rel)),
                None => "->".to_owned(),
            };
            format!("Conditional Traverse | {}{edge}{}", node(at, anon, false), node(next, anon, true))
        };
        out.push((text, Part::Step(i, j)));
        at = next;
    }
    out
}

fn var_length(at: &NodePat, rel: &RelPat, next: &NodePat, anon: &HashMap<*const (), String>) -> String {
    let name = rel.var.clone().or_else(|| anon.get(&key(rel)).cloned()).unwrap_or_default();
    let (min, max) = rel.hops.unwrap_or((1, 1));
    let max = if max == u32::MAX { "INF".to_owned() } else { max.to_string() };
    let inner = format!("[{name}{}*{min}..{max}]", types(rel));
    let (l, r) = match rel.dir {
        Direction::In => ("<-", "-"),
        Direction::Out | Direction::Both => ("-", "->"),
    };
    format!("{}{l}{inner}{r}{}", node(at, anon, false), node(next, anon, true))
}

fn types(rel: &RelPat) -> String {
    if rel.types.is_empty() { String::new() } else { format!(":{}", rel.types.join("|")) }
}

/// The operations of a WITH or RETURN, in the order project.rs runs them.
fn projection(proj: &Projection, push: &mut impl FnMut(String, Part)) {
    let aggregates = proj.items.iter().any(|(e, _)| e.has_aggregate()) || proj.order.iter().any(|(e, _)| e.has_aggregate());
    push(if aggregates { "Aggregate" } else { "Project" }.to_owned(), Part::Project);
    if proj.distinct {
        push("Distinct".to_owned(), Part::Distinct);
    }
    if !proj.order.is_empty() {
        push("Sort".to_owned(), Part::Sort);
    }
    if proj.skip.is_some() {
        push("Skip".to_owned(), Part::Skip);
    }
    if proj.limit.is_some() {
        push("Limit".to_owned(), Part::Limit);
    }
    if proj.filter.is_some() {
        push("Filter".to_owned(), Part::ProjFilter);
    }
}

/// Identity of a pattern element, for naming anonymous ones.
fn key<T>(x: &T) -> *const () {
    (x as *const T).cast()
}

/// FalkorDB's `@anon_N` names: per pattern, its unnamed nodes, then its unnamed
/// relationships, numbered on through the query.
fn anonymous_names(query: &Query) -> HashMap<*const (), String> {
    let mut names = HashMap::new();
    let mut n = 0;
    let mut name = |k: *const ()| {
        names.insert(k, format!("@anon_{n}"));
        n += 1;
    };
    for clause in &query.clauses {
        let patterns: &[Pattern] = match clause {
            Clause::Match { patterns, .. } | Clause::Create(patterns) => patterns,
            Clause::Merge { pattern, .. } => std::slice::from_ref(pattern),
            _ => continue,
        };
        for p in patterns {
            for np in std::iter::once(&p.start).chain(p.steps.iter().map(|(_, np)| np)) {
                if np.var.is_none() {
                    name(key(np));
                }
            }
            for (rel, _) in &p.steps {
                if rel.var.is_none() {
                    name(key(rel));
                }
            }
        }
    }
    names
}

/// `(n:L)`, the labels left out where FalkorDB leaves them out (a hop's source).
fn node(np: &NodePat, anon: &HashMap<*const (), String>, labels: bool) -> String {
    let labels: String = if labels { np.labels.iter().map(|l| format!(":{l}")).collect() } else { String::new() };
    let name = np.var.clone().or_else(|| anon.get(&key(np)).cloned()).unwrap_or_default();
    format!("({name}{labels})")
}
