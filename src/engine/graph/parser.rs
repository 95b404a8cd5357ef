//! A hand-written recursive-descent parser for the openCypher subset Meridian runs
//! (docs/graph.md lists it). Hand-written rather than a crate: the Rust Cypher parsers
//! on crates.io are either unmaintained or pull in a parser generator and a grammar far
//! beyond what the executor supports; here every construct the executor cannot run is
//! refused by name at parse time, which is the guarantee the issue asks for (an error,
//! never a silently wrong answer).
//!
//! Recursion is bounded ([`DEPTH_MAX`]): a query is client input.

use super::ast::*;
use super::lexer::{Tok, Token, lex};
use super::value::Value;

mod expr;

const DEPTH_MAX: usize = 200;

/// FalkorDB's error for an allShortestPaths whose ends an earlier clause did not bind.
pub const UNRESOLVED_ENDS: &str = "Source and destination must already be resolved to call allShortestPaths";

/// A parsed query and its `CYPHER name=value` parameters.
pub struct Parsed {
    pub query: Query,
    pub params: Vec<(String, Expr)>,
}

pub fn parse(text: &str) -> Result<Parsed, String> {
    let tokens = lex(text)?;
    let mut p = Parser { text, tokens, pos: 0, depth: 0, open_hops_max: None };
    let params = p.params()?;
    let query = p.query()?;
    p.eat_punct(";");
    if p.peek() != &Tok::End {
        return Err(p.unexpected());
    }
    Ok(Parsed { query, params })
}

struct Parser<'a> {
    text: &'a str,
    tokens: Vec<Token>,
    pos: usize,
    depth: usize,
    /// Set while parsing a shortestPath's relationship: its open upper bound (`*`, `*n..`) is
    /// unbounded there (the search visits each node once).
    open_hops_max: Option<u32>,
}

impl Parser<'_> {
    fn peek(&self) -> &Tok {
        &self.tokens[self.pos].tok
    }

    fn peek_at(&self, n: usize) -> &Tok {
        &self.tokens[(self.pos + n).min(self.tokens.len() - 1)].tok
    }

    fn advance(&mut self) -> Tok {
        let tok = self.tokens[self.pos].tok.clone();
        if self.pos + 1 < self.tokens.len() {
            self.pos += 1;
        }
        tok
    }

    fn unexpected(&self) -> String {
        let t = &self.tokens[self.pos];
        if t.tok == Tok::End {
            format!("Invalid input at end of input, offset: {}", t.start)
        } else {
            format!("Invalid input '{}', offset: {}", &self.text[t.start..t.end], t.start)
        }
    }

    fn is_kw(&self, kw: &str) -> bool {
        matches!(self.peek(), Tok::Ident(s) if s.eq_ignore_ascii_case(kw))
    }

    fn is_kw_at(&self, n: usize, kw: &str) -> bool {
        matches!(self.peek_at(n), Tok::Ident(s) if s.eq_ignore_ascii_case(kw))
    }

    fn eat_kw(&mut self, kw: &str) -> bool {
        let yes = self.is_kw(kw);
        if yes {
            self.advance();
        }
        yes
    }

    fn expect_kw(&mut self, kw: &str) -> Result<(), String> {
        if self.eat_kw(kw) { Ok(()) } else { Err(self.unexpected()) }
    }

    fn is_punct(&self, p: &str) -> bool {
        matches!(self.peek(), Tok::Punct(q) if *q == p)
    }

    fn eat_punct(&mut self, p: &str) -> bool {
        let yes = self.is_punct(p);
        if yes {
            self.advance();
        }
        yes
    }

    fn expect_punct(&mut self, p: &str) -> Result<(), String> {
        if self.eat_punct(p) { Ok(()) } else { Err(self.unexpected()) }
    }

    fn name(&mut self) -> Result<String, String> {
        match self.peek() {
            Tok::Ident(_) | Tok::Quoted(_) => match self.advance() {
                Tok::Ident(s) | Tok::Quoted(s) => Ok(s),
                _ => unreachable!("peeked a name"),
            },
            _ => Err(self.unexpected()),
        }
    }

    fn params(&mut self) -> Result<Vec<(String, Expr)>, String> {
        let mut params = Vec::new();
        if !self.eat_kw("CYPHER") {
            return Ok(params);
        }
        while matches!(self.peek(), Tok::Ident(_) | Tok::Quoted(_)) && matches!(self.peek_at(1), Tok::Punct("=")) {
            let name = self.name()?;
            self.expect_punct("=")?;
            params.push((name, self.expr()?));
        }
        Ok(params)
    }

    fn query(&mut self) -> Result<Query, String> {
        let mut clauses = Vec::new();
        loop {
            if self.peek() == &Tok::End || self.is_punct(";") {
                break;
            }
            let clause = self.clause()?;
            let ends = matches!(clause, Clause::Return(_));
            clauses.push(clause);
            if ends {
                if self.is_kw("UNION") {
                    return Err("UNION is not supported yet".to_owned());
                }
                break;
            }
        }
        if clauses.is_empty() {
            return Err("Error: empty query.".to_owned());
        }
        if clauses.len() > 1 && clauses.iter().any(|c| matches!(c, Clause::CreateIndex { .. } | Clause::DropIndex { .. })) {
            return Err("an index is created or dropped by a query of its own".to_owned());
        }
        Ok(Query { clauses })
    }

    fn clause(&mut self) -> Result<Clause, String> {
        if self.eat_kw("OPTIONAL") {
            self.expect_kw("MATCH")?;
            return self.match_clause(true);
        }
        if self.eat_kw("MATCH") {
            return self.match_clause(false);
        }
        if self.eat_kw("CREATE") {
            if self.eat_kw("INDEX") {
                let (label, props) = self.index_target()?;
                return Ok(Clause::CreateIndex { label, props });
            }
            for kind in ["CONSTRAINT", "FULLTEXT", "VECTOR", "RANGE"] {
                if self.is_kw(kind) {
                    return Err(format!("CREATE {kind} is not supported yet"));
                }
            }
            let patterns = self.patterns()?;
            if patterns.iter().any(|p| p.path.is_some()) {
                return Err("Named paths (p = ...) in CREATE are not supported yet".to_owned());
            }
            return Ok(Clause::Create(patterns));
        }
        if self.eat_kw("MERGE") {
            let pattern = self.pattern()?;
            if pattern.path.is_some() {
                return Err("Named paths (p = ...) in MERGE are not supported yet".to_owned());
            }
            let (mut on_create, mut on_match) = (Vec::new(), Vec::new());
            while self.is_kw("ON") {
                self.advance();
                if self.eat_kw("CREATE") {
                    self.expect_kw("SET")?;
                    on_create.extend(self.set_items()?);
                } else {
                    self.expect_kw("MATCH")?;
                    self.expect_kw("SET")?;
                    on_match.extend(self.set_items()?);
                }
            }
            return Ok(Clause::Merge { pattern, on_create, on_match });
        }
        if self.eat_kw("SET") {
            return Ok(Clause::Set(self.set_items()?));
        }
        if self.eat_kw("REMOVE") {
            return Ok(Clause::Remove(self.remove_items()?));
        }
        if self.is_kw("DETACH") || self.is_kw("DELETE") {
            let detach = self.eat_kw("DETACH");
            self.expect_kw("DELETE")?;
            let mut exprs = vec![self.expr()?];
            while self.eat_punct(",") {
                exprs.push(self.expr()?);
            }
            return Ok(Clause::Delete { detach, exprs });
        }
        if self.eat_kw("UNWIND") {
            let expr = self.expr()?;
            self.expect_kw("AS")?;
            return Ok(Clause::Unwind { expr, alias: self.name()? });
        }
        if self.eat_kw("WITH") {
            return Ok(Clause::With(self.projection(true)?));
        }
        if self.eat_kw("RETURN") {
            return Ok(Clause::Return(self.projection(false)?));
        }
        if self.eat_kw("CALL") {
            return self.call_clause();
        }
        if self.is_kw("DROP") && self.is_kw_at(1, "INDEX") {
            self.advance();
            self.advance();
            let (label, props) = self.index_target()?;
            return Ok(Clause::DropIndex { label, props });
        }
        for unsupported in ["FOREACH", "LOAD", "UNION", "DROP"] {
            if self.is_kw(unsupported) {
                return Err(format!("{unsupported} is not supported yet"));
            }
        }
        Err(self.unexpected())
    }

    /// `FOR (n:L) ON (n.p, ...)` or `ON :L(p, ...)`: the label and the properties.
    fn index_target(&mut self) -> Result<(String, Vec<String>), String> {
        let mut props = Vec::new();
        let label = if self.eat_kw("ON") {
            self.expect_punct(":")?;
            let label = self.name()?;
            self.expect_punct("(")?;
            loop {
                props.push(self.name()?);
                if !self.eat_punct(",") {
                    break;
                }
            }
            self.expect_punct(")")?;
            label
        } else {
            self.expect_kw("FOR")?;
            self.expect_punct("(")?;
            if self.is_punct(")") {
                return Err("indexes on relationships are not supported yet".to_owned());
            }
            let var = self.name()?;
            self.expect_punct(":")?;
            let label = self.name()?;
            self.expect_punct(")")?;
            self.expect_kw("ON")?;
            self.expect_punct("(")?;
            loop {
                if self.name()? != var {
                    return Err(format!("an index is on properties of {var}"));
                }
                self.expect_punct(".")?;
                props.push(self.name()?);
                if !self.eat_punct(",") {
                    break;
                }
            }
            self.expect_punct(")")?;
            label
        };
        // The stored index name separates label and property with a 0 byte.
        if label.contains('\0') {
            return Err("a label of an index may not hold a 0 byte".to_owned());
        }
        Ok((label, props))
    }

    fn call_clause(&mut self) -> Result<Clause, String> {
        let mut proc = self.name()?;
        while self.eat_punct(".") {
            proc.push('.');
            proc.push_str(&self.name()?);
        }
        self.expect_punct("(")?;
        let mut args = Vec::new();
        while !self.eat_punct(")") {
            args.push(self.expr()?);
            if !self.is_punct(")") {
                self.expect_punct(",")?;
            }
        }
        let mut yields = None;
        let mut filter = None;
        if self.eat_kw("YIELD") {
            let mut items = Vec::new();
            loop {
                let out = self.name()?;
                let alias = if self.eat_kw("AS") { self.name()? } else { out.clone() };
                items.push((out, alias));
                if !self.eat_punct(",") {
                    break;
                }
            }
            yields = Some(items);
            if self.eat_kw("WHERE") {
                filter = Some(self.expr()?);
            }
        }
        Ok(Clause::Call { proc, args, yields, filter })
    }

    fn match_clause(&mut self, optional: bool) -> Result<Clause, String> {
        let patterns = self.patterns()?;
        let filter = if self.eat_kw("WHERE") { Some(self.expr()?) } else { None };
        Ok(Clause::Match { optional, patterns, filter })
    }

    fn set_items(&mut self) -> Result<Vec<SetItem>, String> {
        let mut items = Vec::new();
        loop {
            let var = self.name()?;
            if self.is_punct(":") {
                items.push(SetItem::Labels { var, labels: self.labels()? });
            } else if self.eat_punct(".") {
                let key = self.name()?;
                self.expect_punct("=")?;
                items.push(SetItem::Prop { var, key, value: self.expr()? });
            } else if self.eat_punct("+=") {
                items.push(SetItem::Props { var, value: self.expr()?, merge: true });
            } else {
                self.expect_punct("=")?;
                items.push(SetItem::Props { var, value: self.expr()?, merge: false });
            }
            if !self.eat_punct(",") {
                return Ok(items);
            }
        }
    }

    fn remove_items(&mut self) -> Result<Vec<SetItem>, String> {
        let mut items = Vec::new();
        loop {
            let var = self.name()?;
            if self.is_punct(":") {
                items.push(SetItem::Labels { var, labels: self.labels()? });
            } else {
                self.expect_punct(".")?;
                items.push(SetItem::Prop { var, key: self.name()?, value: Expr::Lit(Value::Null) });
            }
            if !self.eat_punct(",") {
                return Ok(items);
            }
        }
    }

    fn projection(&mut self, with: bool) -> Result<Projection, String> {
        let distinct = self.eat_kw("DISTINCT");
        let mut items = Vec::new();
        let star = self.eat_punct("*");
        if !star || self.eat_punct(",") {
            loop {
                let start = self.tokens[self.pos].start;
                let expr = self.expr()?;
                let end = self.tokens[self.pos - 1].end;
                let alias = if self.eat_kw("AS") {
                    self.name()?
                } else {
                    if with && !matches!(expr, Expr::Var(_)) {
                        return Err("WITH clause projections must be aliased".to_owned());
                    }
                    self.text[start..end].to_owned()
                };
                items.push((expr, alias));
                if !self.eat_punct(",") {
                    break;
                }
            }
        }
        let mut order = Vec::new();
        if self.is_kw("ORDER") {
            self.advance();
            self.expect_kw("BY")?;
            loop {
                let expr = self.expr()?;
                let ascending = !(self.eat_kw("DESC") || self.eat_kw("DESCENDING"));
                if ascending && !self.eat_kw("ASC") {
                    self.eat_kw("ASCENDING");
                }
                order.push((expr, ascending));
                if !self.eat_punct(",") {
                    break;
                }
            }
        }
        let skip = if self.eat_kw("SKIP") { Some(self.expr()?) } else { None };
        let limit = if self.eat_kw("LIMIT") { Some(self.expr()?) } else { None };
        let filter = if with && self.eat_kw("WHERE") { Some(self.expr()?) } else { None };
        Ok(Projection { distinct, star, items, order, skip, limit, filter })
    }

    fn patterns(&mut self) -> Result<Vec<Pattern>, String> {
        let mut patterns = vec![self.pattern()?];
        while self.eat_punct(",") {
            patterns.push(self.pattern()?);
        }
        Ok(patterns)
    }

    fn pattern(&mut self) -> Result<Pattern, String> {
        let mut path = None;
        if matches!(self.peek(), Tok::Ident(_) | Tok::Quoted(_)) && matches!(self.peek_at(1), Tok::Punct("=")) {
            path = Some(self.name()?);
            self.expect_punct("=")?;
        }
        if self.is_kw("allShortestPaths") && matches!(self.peek_at(1), Tok::Punct("(")) {
            self.advance();
            return self.all_shortest_paths(path);
        }
        if self.is_kw("shortestPath") || self.is_kw("allShortestPaths") {
            return Err("FalkorDB currently only supports shortestPaths in WITH or RETURN clauses".to_owned());
        }
        let start = self.node_pat()?;
        let mut steps = Vec::new();
        while self.is_punct("-") || (self.is_punct("<") && matches!(self.peek_at(1), Tok::Punct("-"))) {
            let rel = self.rel_pat()?;
            steps.push((rel, self.node_pat()?));
        }
        Ok(Pattern { path, start, steps, all_shortest: false })
    }

    /// `allShortestPaths((a)-[:R*..max]->(b))`, the keyword read: one relationship,
    /// minimum length 1, an open maximum unbounded (the search is breadth-first and
    /// bounded by the graph and by `ALL_SHORTEST_PATHS_MAX`). That `a` and `b` are bound
    /// by an earlier clause is checked against the query's scopes (exec/paths.rs).
    fn all_shortest_paths(&mut self, path: Option<String>) -> Result<Pattern, String> {
        self.expect_punct("(")?;
        let start = self.node_pat()?;
        self.open_hops_max = Some(u32::MAX);
        let rel = self.rel_pat();
        self.open_hops_max = None;
        let mut rel = rel?;
        let end = self.node_pat()?;
        if !self.is_punct(")") {
            // FalkorDB's words for a pattern of more than one relationship.
            return Err(UNRESOLVED_ENDS.to_owned());
        }
        self.expect_punct(")")?;
        let (min, max) = rel.hops.unwrap_or((1, 1));
        if min != 1 {
            return Err("allShortestPaths(...) does not support a minimal length different from 1".to_owned());
        }
        rel.hops = Some((min, max));
        Ok(Pattern { path, start, steps: vec![(rel, end)], all_shortest: true })
    }

    fn node_pat(&mut self) -> Result<NodePat, String> {
        self.expect_punct("(")?;
        let mut node = NodePat::default();
        if matches!(self.peek(), Tok::Ident(_) | Tok::Quoted(_)) {
            node.var = Some(self.name()?);
        }
        if self.is_punct(":") {
            node.labels = self.labels()?;
        }
        if self.is_punct("{") {
            node.props = self.map_entries()?;
        } else if matches!(self.peek(), Tok::Param(_)) {
            return Err("Parameters as property maps in patterns are not supported yet".to_owned());
        }
        self.expect_punct(")")?;
        Ok(node)
    }

    fn labels(&mut self) -> Result<Vec<String>, String> {
        let mut labels = Vec::new();
        while self.eat_punct(":") {
            labels.push(self.name()?);
        }
        Ok(labels)
    }

    fn rel_pat(&mut self) -> Result<RelPat, String> {
        let left = self.eat_punct("<");
        self.expect_punct("-")?;
        let mut rel = RelPat { var: None, types: Vec::new(), props: Vec::new(), dir: Direction::Both, hops: None };
        if self.eat_punct("[") {
            if matches!(self.peek(), Tok::Ident(_) | Tok::Quoted(_)) {
                rel.var = Some(self.name()?);
            }
            if self.eat_punct(":") {
                rel.types.push(self.name()?);
                while self.eat_punct("|") {
                    self.eat_punct(":");
                    rel.types.push(self.name()?);
                }
            }
            if self.eat_punct("*") {
                rel.hops = Some(self.hops()?);
            }
            if self.is_punct("{") {
                rel.props = self.map_entries()?;
            }
            self.expect_punct("]")?;
        }
        self.expect_punct("-")?;
        let right = self.eat_punct(">");
        rel.dir = match (left, right) {
            (true, false) => Direction::In,
            (false, true) => Direction::Out,
            (false, false) => Direction::Both,
            (true, true) => return Err("A relationship cannot point both ways".to_owned()),
        };
        Ok(rel)
    }

    /// `*`, `*n`, `*n..`, `*..m`, `*n..m` (the upper bound of an open range is capped:
    /// a traversal is a bounded loop).
    fn hops(&mut self) -> Result<(u32, u32), String> {
        const OPEN_HOPS_MAX: u32 = 32;
        let int = |p: &mut Self| -> Result<Option<u32>, String> {
            match p.peek().clone() {
                Tok::Int(n) if (0..=i64::from(u32::MAX)).contains(&n) => {
                    p.advance();
                    Ok(Some(n as u32))
                }
                _ => Ok(None),
            }
        };
        // The traversal recurses once per hop: a bound keeps it off the stack's edge.
        const HOPS_MAX: u32 = 1024;
        let min = int(self)?;
        let (min, max) = if self.eat_punct("..") {
            let max = int(self)?;
            (min.unwrap_or(1), max.or(self.open_hops_max).unwrap_or(OPEN_HOPS_MAX))
        } else {
            match min {
                Some(n) => (n, n),
                None => (1, self.open_hops_max.unwrap_or(OPEN_HOPS_MAX)),
            }
        };
        if max > HOPS_MAX && self.open_hops_max.is_none() {
            return Err(format!("variable-length relationships of more than {HOPS_MAX} hops are not supported"));
        }
        Ok((min, max))
    }

    fn map_entries(&mut self) -> Result<Vec<(String, Expr)>, String> {
        self.expect_punct("{")?;
        let mut entries = Vec::new();
        if !self.eat_punct("}") {
            loop {
                let key = self.name()?;
                self.expect_punct(":")?;
                entries.push((key, self.expr()?));
                if !self.eat_punct(",") {
                    break;
                }
            }
            self.expect_punct("}")?;
        }
        Ok(entries)
    }
}
