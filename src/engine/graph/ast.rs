//! The openCypher syntax tree the parser builds and the executor walks. Data only.

use super::value::Value;

#[derive(Clone, Debug)]
pub struct Query {
    pub clauses: Vec<Clause>,
}

#[derive(Clone, Debug)]
pub enum Clause {
    Match {
        optional: bool,
        patterns: Vec<Pattern>,
        filter: Option<Expr>,
    },
    Create(Vec<Pattern>),
    Merge {
        pattern: Pattern,
        on_create: Vec<SetItem>,
        on_match: Vec<SetItem>,
    },
    Set(Vec<SetItem>),
    Remove(Vec<SetItem>),
    Delete {
        detach: bool,
        exprs: Vec<Expr>,
    },
    Unwind {
        expr: Expr,
        alias: String,
    },
    With(Projection),
    Return(Projection),
    /// `CALL proc(args) [YIELD out [AS alias], ... [WHERE e]]`: a built-in procedure's
    /// rows, joined to each incoming row. Without YIELD every output is bound.
    Call {
        proc: String,
        args: Vec<Expr>,
        yields: Option<Vec<(String, String)>>,
        filter: Option<Expr>,
    },
    /// `CREATE INDEX FOR (n:L) ON (n.p, ...)` or `CREATE INDEX ON :L(p, ...)`.
    CreateIndex {
        label: String,
        props: Vec<String>,
    },
    /// `DROP INDEX FOR (n:L) ON (n.p, ...)` or `DROP INDEX ON :L(p, ...)`.
    DropIndex {
        label: String,
        props: Vec<String>,
    },
}

impl Clause {
    pub fn is_write(&self) -> bool {
        matches!(
            self,
            Clause::Create(_)
                | Clause::Merge { .. }
                | Clause::Set(_)
                | Clause::Remove(_)
                | Clause::Delete { .. }
                | Clause::CreateIndex { .. }
                | Clause::DropIndex { .. }
        )
    }
}

#[derive(Clone, Debug)]
pub struct Projection {
    pub distinct: bool,
    /// `*`: every variable in scope, then the items.
    pub star: bool,
    pub items: Vec<(Expr, String)>,
    pub order: Vec<(Expr, bool)>,
    pub skip: Option<Expr>,
    pub limit: Option<Expr>,
    /// WITH ... WHERE.
    pub filter: Option<Expr>,
}

#[derive(Clone, Debug)]
pub enum SetItem {
    /// `n.p = e` (SET) or `n.p` (REMOVE).
    Prop { var: String, key: String, value: Expr },
    /// `n = {map}` (replace every property) or `n += {map}` (merge).
    Props { var: String, value: Expr, merge: bool },
    /// `n:L1:L2`.
    Labels { var: String, labels: Vec<String> },
}

/// A path pattern: a node, then relationship-node steps.
#[derive(Clone, Debug, PartialEq)]
pub struct Pattern {
    /// `p = (…)`: the variable the matched path is bound to (MATCH only).
    pub path: Option<String>,
    pub start: NodePat,
    pub steps: Vec<(RelPat, NodePat)>,
    /// `allShortestPaths((a)-[:R*]->(b))` (MATCH only): one variable-length step whose
    /// ends are bound by an earlier clause; every path of the fewest hops.
    pub all_shortest: bool,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodePat {
    pub var: Option<String>,
    pub labels: Vec<String>,
    pub props: Vec<(String, Expr)>,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Direction {
    /// `-[]->`
    Out,
    /// `<-[]-`
    In,
    /// `-[]-`
    Both,
}

#[derive(Clone, Debug, PartialEq)]
pub struct RelPat {
    pub var: Option<String>,
    pub types: Vec<String>,
    pub props: Vec<(String, Expr)>,
    pub dir: Direction,
    /// Variable length `*min..max` (inclusive); `None` for a single hop.
    pub hops: Option<(u32, u32)>,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum BinOp {
    Or,
    Xor,
    And,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Pow,
    In,
    StartsWith,
    EndsWith,
    Contains,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Lit(Value),
    Param(String),
    Var(String),
    Prop(Box<Expr>, String),
    Index(Box<Expr>, Box<Expr>),
    Slice(Box<Expr>, Option<Box<Expr>>, Option<Box<Expr>>),
    List(Vec<Expr>),
    Map(Vec<(String, Expr)>),
    Not(Box<Expr>),
    Neg(Box<Expr>),
    Bin(BinOp, Box<Expr>, Box<Expr>),
    IsNull(Box<Expr>, bool),
    HasLabels(Box<Expr>, Vec<String>),
    /// `name(distinct? args)`; `count(*)` has `star`.
    Call {
        name: String,
        distinct: bool,
        args: Vec<Expr>,
        star: bool,
    },
    Case {
        subject: Option<Box<Expr>>,
        arms: Vec<(Expr, Expr)>,
        default: Option<Box<Expr>>,
    },
    /// `shortestPath((from)-[:types*min..max]->(to))`: both ends bound variables.
    ShortestPath {
        from: String,
        to: String,
        types: Vec<String>,
        dir: Direction,
        min: u32,
        max: u32,
    },
    /// `[var IN list WHERE filter | map]`: `filter` and `map` are each optional.
    ListComp {
        var: String,
        list: Box<Expr>,
        filter: Option<Box<Expr>>,
        map: Option<Box<Expr>>,
    },
    /// `[(a)-[:R]->(b) WHERE filter | map]`: `map` over every match of the pattern,
    /// the variables already in scope bound.
    PatternComp {
        pattern: Box<Pattern>,
        filter: Option<Box<Expr>>,
        map: Box<Expr>,
    },
}

pub const AGGREGATES: [&str; 6] = ["count", "sum", "avg", "min", "max", "collect"];

impl Expr {
    pub fn is_aggregate_call(&self) -> bool {
        matches!(self, Expr::Call { name, .. } if AGGREGATES.contains(&name.as_str()))
    }

    /// Whether an aggregate function appears anywhere in the expression.
    pub fn has_aggregate(&self) -> bool {
        if self.is_aggregate_call() {
            return true;
        }
        match self {
            Expr::Lit(_) | Expr::Param(_) | Expr::Var(_) | Expr::ShortestPath { .. } => false,
            Expr::Prop(e, _) | Expr::Not(e) | Expr::Neg(e) | Expr::IsNull(e, _) | Expr::HasLabels(e, _) => e.has_aggregate(),
            Expr::Index(a, b) | Expr::Bin(_, a, b) => a.has_aggregate() || b.has_aggregate(),
            Expr::Slice(a, b, c) => {
                a.has_aggregate() || b.as_ref().is_some_and(|e| e.has_aggregate()) || c.as_ref().is_some_and(|e| e.has_aggregate())
            }
            Expr::List(items) => items.iter().any(Expr::has_aggregate),
            Expr::Map(entries) => entries.iter().any(|(_, e)| e.has_aggregate()),
            Expr::Call { args, .. } => args.iter().any(Expr::has_aggregate),
            // The list may aggregate (`[x IN collect(n) | …]`); the body runs per item.
            Expr::ListComp { list, .. } => list.has_aggregate(),
            Expr::PatternComp { .. } => false,
            Expr::Case { subject, arms, default } => {
                subject.as_ref().is_some_and(|e| e.has_aggregate())
                    || arms.iter().any(|(a, b)| a.has_aggregate() || b.has_aggregate())
                    || default.as_ref().is_some_and(|e| e.has_aggregate())
            }
        }
    }
}
