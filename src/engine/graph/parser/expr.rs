//! The expression half of the parser: operators by precedence (OR, XOR, AND, NOT,
//! comparisons, string and list predicates, arithmetic, unary, postfix), literals,
//! function calls and CASE. Recursion is bounded by the parser's depth limit.

use super::super::ast::{BinOp, Direction, Expr, NodePat};
use super::super::lexer::Tok;
use super::super::value::Value;
use super::{DEPTH_MAX, Parser};

impl Parser<'_> {
    pub(super) fn expr(&mut self) -> Result<Expr, String> {
        self.depth += 1;
        if self.depth > DEPTH_MAX {
            return Err("query nests too deeply".to_owned());
        }
        let e = self.or();
        self.depth -= 1;
        e
    }

    fn or(&mut self) -> Result<Expr, String> {
        let mut e = self.xor()?;
        while self.eat_kw("OR") {
            e = Expr::Bin(BinOp::Or, Box::new(e), Box::new(self.xor()?));
        }
        Ok(e)
    }

    fn xor(&mut self) -> Result<Expr, String> {
        let mut e = self.and()?;
        while self.eat_kw("XOR") {
            e = Expr::Bin(BinOp::Xor, Box::new(e), Box::new(self.and()?));
        }
        Ok(e)
    }

    fn and(&mut self) -> Result<Expr, String> {
        let mut e = self.not()?;
        while self.eat_kw("AND") {
            e = Expr::Bin(BinOp::And, Box::new(e), Box::new(self.not()?));
        }
        Ok(e)
    }

    fn not(&mut self) -> Result<Expr, String> {
        if self.eat_kw("NOT") {
            self.depth += 1;
            if self.depth > DEPTH_MAX {
                return Err("query nests too deeply".to_owned());
            }
            let e = self.not();
            self.depth -= 1;
            return Ok(Expr::Not(Box::new(e?)));
        }
        self.comparison()
    }

    fn comparison(&mut self) -> Result<Expr, String> {
        let mut e = self.predicate()?;
        loop {
            let op = match self.peek() {
                Tok::Punct("=") => BinOp::Eq,
                Tok::Punct("<>") | Tok::Punct("!=") => BinOp::Ne,
                Tok::Punct("<") => BinOp::Lt,
                Tok::Punct("<=") => BinOp::Le,
                Tok::Punct(">") => BinOp::Gt,
                Tok::Punct(">=") => BinOp::Ge,
                Tok::Punct("=~") => return Err("Regular expressions (=~) are not supported yet".to_owned()),
                _ => return Ok(e),
            };
            self.advance();
            let right = self.predicate()?;
            // `a < b < c` means `a < b AND b < c`.
            e = match e {
                Expr::Bin(prev, _, ref mid) if is_comparison(prev) => {
                    let mid = mid.clone();
                    Expr::Bin(BinOp::And, Box::new(e), Box::new(Expr::Bin(op, mid, Box::new(right))))
                }
                _ => Expr::Bin(op, Box::new(e), Box::new(right)),
            };
        }
    }

    fn predicate(&mut self) -> Result<Expr, String> {
        let mut e = self.additive()?;
        loop {
            if self.is_kw("IS") {
                self.advance();
                let negated = self.eat_kw("NOT");
                self.expect_kw("NULL")?;
                e = Expr::IsNull(Box::new(e), negated);
            } else if self.eat_kw("IN") {
                e = Expr::Bin(BinOp::In, Box::new(e), Box::new(self.additive()?));
            } else if self.is_kw("STARTS") && self.is_kw_at(1, "WITH") {
                self.pos += 2;
                e = Expr::Bin(BinOp::StartsWith, Box::new(e), Box::new(self.additive()?));
            } else if self.is_kw("ENDS") && self.is_kw_at(1, "WITH") {
                self.pos += 2;
                e = Expr::Bin(BinOp::EndsWith, Box::new(e), Box::new(self.additive()?));
            } else if self.eat_kw("CONTAINS") {
                e = Expr::Bin(BinOp::Contains, Box::new(e), Box::new(self.additive()?));
            } else {
                return Ok(e);
            }
        }
    }

    fn additive(&mut self) -> Result<Expr, String> {
        let mut e = self.multiplicative()?;
        loop {
            let op = match self.peek() {
                Tok::Punct("+") => BinOp::Add,
                Tok::Punct("-") => BinOp::Sub,
                _ => return Ok(e),
            };
            self.advance();
            e = Expr::Bin(op, Box::new(e), Box::new(self.multiplicative()?));
        }
    }

    fn multiplicative(&mut self) -> Result<Expr, String> {
        let mut e = self.power()?;
        loop {
            let op = match self.peek() {
                Tok::Punct("*") => BinOp::Mul,
                Tok::Punct("/") => BinOp::Div,
                Tok::Punct("%") => BinOp::Mod,
                _ => return Ok(e),
            };
            self.advance();
            e = Expr::Bin(op, Box::new(e), Box::new(self.power()?));
        }
    }

    fn power(&mut self) -> Result<Expr, String> {
        let mut e = self.unary()?;
        while self.eat_punct("^") {
            e = Expr::Bin(BinOp::Pow, Box::new(e), Box::new(self.unary()?));
        }
        Ok(e)
    }

    /// Signs are counted in a loop, not by recursion: `- - - … 1` is client input too.
    fn unary(&mut self) -> Result<Expr, String> {
        let mut negations = 0usize;
        loop {
            if self.eat_punct("-") {
                negations += 1;
            } else if !self.eat_punct("+") {
                break;
            }
        }
        if negations % 2 == 1 && self.peek() == &Tok::IntMinMagnitude {
            self.advance();
            return Ok(Expr::Lit(Value::Int(i64::MIN)));
        }
        let e = self.postfix()?;
        if negations.is_multiple_of(2) {
            return Ok(e);
        }
        Ok(match e {
            Expr::Lit(Value::Int(n)) if n != i64::MIN => Expr::Lit(Value::Int(-n)),
            Expr::Lit(Value::Float(f)) => Expr::Lit(Value::Float(-f)),
            e => Expr::Neg(Box::new(e)),
        })
    }

    fn postfix(&mut self) -> Result<Expr, String> {
        let mut e = self.atom()?;
        loop {
            if self.is_punct(".") {
                self.advance();
                e = Expr::Prop(Box::new(e), self.name()?);
            } else if self.is_punct("[") {
                self.advance();
                let from = if self.is_punct("..") { None } else { Some(Box::new(self.expr()?)) };
                if self.eat_punct("..") {
                    let to = if self.is_punct("]") { None } else { Some(Box::new(self.expr()?)) };
                    self.expect_punct("]")?;
                    e = Expr::Slice(Box::new(e), from, to);
                } else {
                    self.expect_punct("]")?;
                    e = Expr::Index(Box::new(e), from.ok_or_else(|| self.unexpected())?);
                }
            } else if self.is_punct(":") && matches!(e, Expr::Var(_)) {
                e = Expr::HasLabels(Box::new(e), self.labels()?);
            } else {
                return Ok(e);
            }
        }
    }

    fn atom(&mut self) -> Result<Expr, String> {
        match self.peek().clone() {
            Tok::Int(n) => {
                self.advance();
                Ok(Expr::Lit(Value::Int(n)))
            }
            Tok::IntMinMagnitude => Err("Integer overflow '9223372036854775808'".to_owned()),
            Tok::Float(f) => {
                self.advance();
                Ok(Expr::Lit(Value::Float(f)))
            }
            Tok::Str(s) => {
                self.advance();
                Ok(Expr::Lit(Value::Str(s)))
            }
            Tok::Param(p) => {
                self.advance();
                Ok(Expr::Param(p))
            }
            Tok::Punct("(") => {
                self.advance();
                let e = self.expr()?;
                self.expect_punct(")")?;
                Ok(e)
            }
            Tok::Punct("[") => {
                self.advance();
                let mut items = Vec::new();
                if !self.eat_punct("]") {
                    if matches!(self.peek(), Tok::Ident(_) | Tok::Quoted(_)) && self.is_kw_at(1, "IN") {
                        return self.list_comprehension();
                    }
                    if let Some(comp) = self.pattern_comprehension()? {
                        return Ok(comp);
                    }
                    loop {
                        items.push(self.expr()?);
                        if !self.eat_punct(",") {
                            break;
                        }
                    }
                    self.expect_punct("]")?;
                }
                Ok(Expr::List(items))
            }
            Tok::Punct("{") => Ok(Expr::Map(self.map_entries()?)),
            Tok::Ident(word) => {
                let upper = word.to_ascii_uppercase();
                match upper.as_str() {
                    "TRUE" => {
                        self.advance();
                        return Ok(Expr::Lit(Value::Bool(true)));
                    }
                    "FALSE" => {
                        self.advance();
                        return Ok(Expr::Lit(Value::Bool(false)));
                    }
                    "NULL" => {
                        self.advance();
                        return Ok(Expr::Lit(Value::Null));
                    }
                    "CASE" => {
                        self.advance();
                        return self.case();
                    }
                    "SHORTESTPATH" if matches!(self.peek_at(1), Tok::Punct("(")) => {
                        self.advance();
                        return self.shortest_path();
                    }
                    "ALLSHORTESTPATHS" if matches!(self.peek_at(1), Tok::Punct("(")) => {
                        return Err("FalkorDB support allShortestPaths only in match clauses".to_owned());
                    }
                    _ => {}
                }
                self.advance();
                if self.is_punct("(") {
                    return self.call(word);
                }
                if self.is_punct(".") && matches!(self.peek_at(1), Tok::Ident(_)) && matches!(self.peek_at(2), Tok::Punct("(")) {
                    // A namespaced function (db.labels(), algo.*): not ours.
                    return Err(format!(
                        "Unknown function '{word}.{}'",
                        match self.peek_at(1) {
                            Tok::Ident(s) => s.as_str(),
                            _ => "",
                        }
                    ));
                }
                Ok(Expr::Var(word))
            }
            Tok::Quoted(word) => {
                self.advance();
                Ok(Expr::Var(word))
            }
            _ => Err(self.unexpected()),
        }
    }

    /// `[var IN list WHERE filter | map]`, the `[` already read.
    fn list_comprehension(&mut self) -> Result<Expr, String> {
        let var = self.name()?;
        self.expect_kw("IN")?;
        let list = Box::new(self.expr()?);
        let filter = if self.eat_kw("WHERE") { Some(Box::new(self.expr()?)) } else { None };
        let map = if self.eat_punct("|") { Some(Box::new(self.expr()?)) } else { None };
        self.expect_punct("]")?;
        Ok(Expr::ListComp { var, list, filter, map })
    }

    /// `[(a)-[:R]->(b) WHERE filter | map]` or `[p = (a)-->(b) | map]`, the `[` already
    /// read; `None` (nothing consumed) where the list is a list literal instead: a
    /// pattern has at least one relationship, which `[(1), x = (2)]` cannot parse as.
    fn pattern_comprehension(&mut self) -> Result<Option<Expr>, String> {
        let named = matches!(self.peek(), Tok::Ident(_) | Tok::Quoted(_))
            && matches!(self.peek_at(1), Tok::Punct("="))
            && matches!(self.peek_at(2), Tok::Punct("("));
        if !named && !self.is_punct("(") {
            return Ok(None);
        }
        let (pos, depth) = (self.pos, self.depth);
        let pattern = match self.pattern() {
            Ok(p) if !p.steps.is_empty() && (self.is_kw("WHERE") || self.is_punct("|") || self.is_punct("]")) => p,
            _ => {
                self.pos = pos;
                self.depth = depth;
                return Ok(None);
            }
        };
        let filter = if self.eat_kw("WHERE") { Some(Box::new(self.expr()?)) } else { None };
        if !self.eat_punct("|") {
            return Err("A pattern comprehension needs a projection: [pattern WHERE predicate | expression]".to_owned());
        }
        let map = Box::new(self.expr()?);
        self.expect_punct("]")?;
        Ok(Some(Expr::PatternComp { pattern: Box::new(pattern), filter, map }))
    }

    fn call(&mut self, name: String) -> Result<Expr, String> {
        self.expect_punct("(")?;
        let lower = name.to_ascii_lowercase();
        if self.eat_punct("*") {
            self.expect_punct(")")?;
            if lower != "count" {
                return Err(format!("'*' is only valid in count(*), not in {name}"));
            }
            return Ok(Expr::Call { name: lower, distinct: false, args: Vec::new(), star: true });
        }
        let distinct = self.eat_kw("DISTINCT");
        let mut args = Vec::new();
        if !self.eat_punct(")") {
            loop {
                args.push(self.expr()?);
                if !self.eat_punct(",") {
                    break;
                }
            }
            self.expect_punct(")")?;
        }
        Ok(Expr::Call { name: lower, distinct, args, star: false })
    }

    /// `shortestPath((a)-[:R*min..max]->(b))`, the leading keyword already read.
    fn shortest_path(&mut self) -> Result<Expr, String> {
        self.expect_punct("(")?;
        let start = self.node_pat()?;
        self.open_hops_max = Some(u32::MAX);
        let rel = self.rel_pat();
        self.open_hops_max = None;
        let rel = rel?;
        let end = self.node_pat()?;
        if !self.is_punct(")") {
            return Err("shortestPath requires a path containing a single relationship".to_owned());
        }
        self.expect_punct(")")?;
        if !rel.props.is_empty() {
            return Err("FalkorDB does not currently support filters on relationships in shortestPath".to_owned());
        }
        if rel.dir == Direction::Both {
            return Err("FalkorDB does not currently support undirected shortestPath traversals".to_owned());
        }
        let (min, max) = rel.hops.unwrap_or((1, 1));
        if min > 1 {
            return Err("shortestPath does not support a minimal length different from 0 or 1".to_owned());
        }
        let bare = |n: &NodePat| n.labels.is_empty() && n.props.is_empty();
        let (Some(from), Some(to)) = (start.var.clone(), end.var.clone()) else {
            return Err("shortestPath with an unnamed end node is not supported yet".to_owned());
        };
        if !bare(&start) || !bare(&end) {
            return Err("shortestPath with labels or properties on its end nodes is not supported yet".to_owned());
        }
        Ok(Expr::ShortestPath { from, to, types: rel.types, dir: rel.dir, min, max })
    }

    fn case(&mut self) -> Result<Expr, String> {
        let subject = if self.is_kw("WHEN") { None } else { Some(Box::new(self.expr()?)) };
        let mut arms = Vec::new();
        while self.eat_kw("WHEN") {
            let when = self.expr()?;
            self.expect_kw("THEN")?;
            arms.push((when, self.expr()?));
        }
        let default = if self.eat_kw("ELSE") { Some(Box::new(self.expr()?)) } else { None };
        self.expect_kw("END")?;
        if arms.is_empty() {
            return Err(self.unexpected());
        }
        Ok(Expr::Case { subject, arms, default })
    }
}

fn is_comparison(op: BinOp) -> bool {
    matches!(op, BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge)
}
