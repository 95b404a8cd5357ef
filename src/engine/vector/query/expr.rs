//! FT.SEARCH's query expression (DIALECT 2), parsed by recursive descent into a
//! [`Filter`] and an optional [`Knn`] clause: terms, tags, numeric and vector ranges,
//! AND / OR / NOT / optional, phrases, fuzzy terms and parameters (the grammar is listed
//! in the parent module's documentation). Owns only the expression; FT.SEARCH's other
//! arguments are `query::parse_search`'s. Pure parsing: no index, no data, and its
//! recursion is bounded by `NESTING_MAX`.

use bytes::Bytes;

use super::{Filter, KNN_K_MAX, Knn, NESTING_MAX, eq};

pub(super) struct Parser<'a> {
    text: &'a [u8],
    pos: usize,
    params: &'a [(Bytes, Bytes)],
    /// Inside `@field:( ... )`: the TEXT field bare terms apply to.
    text_field: Option<Bytes>,
    /// NOSTOPWORDS: a stop word in the query is a term (which no document has).
    nostopwords: bool,
}

/// What a query stop word parses to: no condition (AND leaves it out).
fn neutral() -> Filter {
    Filter::And(Vec::new())
}

fn is_neutral(filter: &Filter) -> bool {
    matches!(filter, Filter::And(parts) if parts.is_empty())
}

impl<'a> Parser<'a> {
    pub(super) fn new(text: &'a [u8], params: &'a [(Bytes, Bytes)], nostopwords: bool) -> Parser<'a> {
        Parser { text, pos: 0, params, text_field: None, nostopwords }
    }
}

impl Parser<'_> {
    fn syntax(&self) -> String {
        let near = String::from_utf8_lossy(&self.text[self.pos.min(self.text.len())..]);
        format!("Syntax error at offset {} near {}", self.pos, near.split_whitespace().next().unwrap_or(""))
    }

    fn skip_ws(&mut self) {
        while self.pos < self.text.len() && self.text[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.text.get(self.pos).copied()
    }

    fn starts(&mut self, s: &[u8]) -> bool {
        self.skip_ws();
        self.text[self.pos..].starts_with(s)
    }

    fn expect(&mut self, c: u8) -> Result<(), String> {
        if self.peek() == Some(c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.syntax())
        }
    }

    pub(super) fn query(mut self) -> Result<(Filter, Option<Knn>), String> {
        let filter = self.or(0)?;
        let knn = if self.starts(b"=>") {
            self.pos += 2;
            Some(self.knn()?)
        } else {
            None
        };
        if self.peek().is_some() {
            return Err(self.syntax());
        }
        Ok((filter, knn))
    }

    fn or(&mut self, depth: usize) -> Result<Filter, String> {
        if depth > NESTING_MAX {
            return Err("Query is too deeply nested".into());
        }
        let mut parts = vec![self.and(depth)?];
        while self.peek() == Some(b'|') {
            self.pos += 1;
            parts.push(self.and(depth)?);
        }
        Ok(if parts.len() == 1 { parts.pop().unwrap_or(Filter::All) } else { Filter::Or(parts) })
    }

    fn and(&mut self, depth: usize) -> Result<Filter, String> {
        let mut parts = Vec::new();
        while let Some(c) = self.peek() {
            if c == b'|' || c == b')' || self.starts(b"=>") {
                break;
            }
            parts.push(self.unary(depth)?);
        }
        if parts.is_empty() {
            return Err(self.syntax());
        }
        // Stop words match without a condition; a clause of nothing but stop words
        // matches nothing (as RediSearch).
        parts.retain(|p| !is_neutral(p));
        match parts.len() {
            0 => Ok(Filter::Or(Vec::new())),
            1 => Ok(parts.pop().unwrap_or(Filter::All)),
            _ => Ok(Filter::And(parts)),
        }
    }

    fn unary(&mut self, depth: usize) -> Result<Filter, String> {
        match self.peek() {
            Some(b'-') => {
                self.pos += 1;
                if depth + 1 > NESTING_MAX {
                    return Err("Query is too deeply nested".into());
                }
                Ok(Filter::Not(Box::new(self.unary(depth + 1)?)))
            }
            Some(b'(') => {
                self.pos += 1;
                let inner = self.or(depth + 1)?;
                self.expect(b')')?;
                Ok(inner)
            }
            Some(b'*') => {
                self.pos += 1;
                Ok(Filter::All)
            }
            Some(b'@') => self.field_filter(),
            Some(b'~') => {
                self.pos += 1;
                if depth + 1 > NESTING_MAX {
                    return Err("Query is too deeply nested".into());
                }
                let inner = self.unary(depth + 1)?;
                // An optional stop word is no condition either.
                Ok(if is_neutral(&inner) { inner } else { Filter::Optional(Box::new(inner)) })
            }
            Some(b'"') => self.phrase(self.text_field.clone()),
            Some(b'%') => self.fuzzy(self.text_field.clone()),
            Some(_) => self.term(self.text_field.clone()),
            None => Err(self.syntax()),
        }
    }

    fn name(&mut self) -> Bytes {
        let start = self.pos;
        while self.pos < self.text.len() && (self.text[self.pos].is_ascii_alphanumeric() || b"_.".contains(&self.text[self.pos])) {
            self.pos += 1;
        }
        Bytes::copy_from_slice(&self.text[start..self.pos])
    }

    fn field_filter(&mut self) -> Result<Filter, String> {
        self.pos += 1;
        let field = self.name();
        if field.is_empty() {
            return Err(self.syntax());
        }
        self.expect(b':')?;
        match self.peek() {
            Some(b'{') => {
                self.pos += 1;
                let (values, prefixes) = self.tags()?;
                Ok(match (values.is_empty(), prefixes.is_empty()) {
                    (_, true) => Filter::Tag { field, values },
                    (true, false) => Filter::TagPrefix { field, prefixes },
                    (false, false) => Filter::Or(vec![Filter::Tag { field: field.clone(), values }, Filter::TagPrefix { field, prefixes }]),
                })
            }
            Some(b'[') => {
                self.pos += 1;
                if self.starts(b"VECTOR_RANGE") {
                    self.pos += b"VECTOR_RANGE".len();
                    return self.vector_range(field);
                }
                let (lo, lo_exclusive) = self.bound()?;
                let (hi, hi_exclusive) = self.bound()?;
                if self.peek() == Some(b']') {
                    self.pos += 1;
                    Ok(Filter::Range { field, lo, lo_exclusive, hi, hi_exclusive })
                } else {
                    Err(self.syntax())
                }
            }
            Some(b'(') => {
                self.pos += 1;
                let outer = self.text_field.replace(field);
                let inner = self.or(1);
                self.text_field = outer;
                let inner = inner?;
                self.expect(b')')?;
                Ok(inner)
            }
            Some(b'"') => self.phrase(Some(field)),
            Some(b'%') => self.fuzzy(Some(field)),
            Some(_) => self.term(Some(field)),
            None => Err(self.syntax()),
        }
    }

    /// An exact phrase at the cursor (`"a b"`): its words as a document's are cut.
    fn phrase(&mut self, field: Option<Bytes>) -> Result<Filter, String> {
        self.skip_ws();
        self.pos += 1;
        let start = self.pos;
        let Some(len) = self.text[start..].iter().position(|&b| b == b'"') else {
            return Err(self.syntax());
        };
        self.pos = start + len + 1;
        let terms: Vec<Bytes> = self.text[start..start + len]
            .split(|&b| crate::engine::vector::text::is_separator(b))
            .filter(|w| !w.is_empty())
            .take(crate::engine::vector::text::TERMS_MAX)
            .map(|w| Bytes::from(w.to_ascii_lowercase()))
            .collect();
        // Quoted words are never expanded to stems, even a single one (as RediSearch).
        Ok(if terms.is_empty() { Filter::Or(Vec::new()) } else { Filter::Phrase { field, terms } })
    }

    /// A fuzzy term at the cursor: `%term%` (1 edit), `%%term%%` (2), `%%%term%%%` (3).
    fn fuzzy(&mut self, field: Option<Bytes>) -> Result<Filter, String> {
        self.skip_ws();
        let opening = self.text[self.pos..].iter().take_while(|&&b| b == b'%').count();
        if opening > 3 {
            return Err(self.syntax());
        }
        self.pos += opening;
        self.skip_ws();
        let start = self.pos;
        while self.pos < self.text.len() && !crate::engine::vector::text::is_separator(self.text[self.pos]) {
            self.pos += 1;
        }
        let term = Bytes::from(self.text[start..self.pos].to_ascii_lowercase());
        self.skip_ws();
        let closing = self.text[self.pos..].iter().take_while(|&&b| b == b'%').count();
        if term.is_empty() || closing != opening {
            return Err(self.syntax());
        }
        self.pos += closing;
        Ok(Filter::Fuzzy { field, term, distance: opening as u8 })
    }

    /// A full-text term (`hello`, `hel*`) at the cursor; a stop word is no condition.
    fn term(&mut self, field: Option<Bytes>) -> Result<Filter, String> {
        self.skip_ws();
        let start = self.pos;
        while self.pos < self.text.len() && !crate::engine::vector::text::is_separator(self.text[self.pos]) {
            self.pos += 1;
        }
        if self.pos == start {
            return Err(self.syntax());
        }
        let term = Bytes::from(self.text[start..self.pos].to_ascii_lowercase());
        let prefix = self.text.get(self.pos) == Some(&b'*');
        if prefix {
            self.pos += 1;
        } else if !self.nostopwords && crate::engine::vector::text::is_stop_word(&term) {
            return Ok(neutral());
        }
        Ok(Filter::Text { field, term, prefix })
    }

    /// `radius $blob]` after `[VECTOR_RANGE`, then optional `=>{$YIELD_DISTANCE_AS: name}`.
    fn vector_range(&mut self, field: Bytes) -> Result<Filter, String> {
        let token = self.token();
        let value = self.param_value(&token)?;
        let radius =
            std::str::from_utf8(&value).ok().and_then(|t| t.parse::<f64>().ok()).filter(|r| *r >= 0.0).ok_or_else(|| self.syntax())?;
        let blob_token = self.token();
        if !blob_token.starts_with(b"$") {
            return Err("Vector blobs must be passed as a $parameter (PARAMS)".into());
        }
        let blob = self.param_value(&blob_token)?;
        self.expect(b']')?;
        let mut yield_as = None;
        if self.starts(b"=>{") {
            self.pos += 3;
            loop {
                self.skip_ws();
                let start = self.pos;
                while self.pos < self.text.len() && !b":;} ".contains(&self.text[self.pos]) {
                    self.pos += 1;
                }
                let name = self.text[start..self.pos].to_vec();
                self.expect(b':')?;
                self.skip_ws();
                let start = self.pos;
                while self.pos < self.text.len() && !b";} ".contains(&self.text[self.pos]) {
                    self.pos += 1;
                }
                let value = Bytes::copy_from_slice(&self.text[start..self.pos]);
                if eq(&name, "$YIELD_DISTANCE_AS") && !value.is_empty() {
                    yield_as = Some(value);
                } else if eq(&name, "$EPSILON") {
                    // A looser bound for an approximate range walk; Meridian's range
                    // search is exact, which satisfies any epsilon.
                } else {
                    return Err("Error parsing vector similarity parameters: Invalid option".into());
                }
                match self.peek() {
                    Some(b';') => self.pos += 1,
                    Some(b'}') => {
                        self.pos += 1;
                        break;
                    }
                    _ => return Err(self.syntax()),
                }
            }
        }
        Ok(Filter::VectorRange { field, radius, blob, yield_as })
    }

    /// Tag values up to `}`: `|`-separated, `\` escapes a character, spaces trimmed. A
    /// value ending in an unescaped `*` is a prefix (the second list).
    fn tags(&mut self) -> Result<(Vec<Bytes>, Vec<Bytes>), String> {
        let mut values = Vec::new();
        let mut prefixes = Vec::new();
        let mut current = Vec::new();
        let mut star = false;
        loop {
            let Some(&c) = self.text.get(self.pos) else {
                return Err(self.syntax());
            };
            self.pos += 1;
            match c {
                b'\\' => {
                    let Some(&next) = self.text.get(self.pos) else { return Err(self.syntax()) };
                    if star {
                        return Err(self.syntax());
                    }
                    current.push(next);
                    self.pos += 1;
                }
                b'|' | b'}' => {
                    let value = self.substitute(current.trim_ascii());
                    if value.is_empty() {
                        return Err(self.syntax());
                    }
                    if star {
                        prefixes.push(value)
                    } else {
                        values.push(value)
                    }
                    current.clear();
                    star = false;
                    if c == b'}' {
                        return Ok((values, prefixes));
                    }
                }
                b'*' if current.trim_ascii().is_empty() => {
                    return Err("Tag suffix and infix matching (*...) is not supported by Meridian".into());
                }
                b'*' => star = true,
                _ if star && !c.is_ascii_whitespace() => return Err("Tag infix matching (a*b) is not supported by Meridian".into()),
                _ => current.push(c),
            }
        }
    }

    /// `$name` is replaced by its PARAMS value; anything else is taken as written.
    fn substitute(&self, token: &[u8]) -> Bytes {
        if let Some(name) = token.strip_prefix(b"$")
            && let Some((_, v)) = self.params.iter().find(|(k, _)| k[..] == *name)
        {
            return v.clone();
        }
        Bytes::copy_from_slice(token)
    }

    fn token(&mut self) -> Bytes {
        self.skip_ws();
        let start = self.pos;
        while self.pos < self.text.len() && !self.text[self.pos].is_ascii_whitespace() && !b"[]()|{}".contains(&self.text[self.pos]) {
            self.pos += 1;
        }
        Bytes::copy_from_slice(&self.text[start..self.pos])
    }

    fn param_value(&self, token: &Bytes) -> Result<Bytes, String> {
        match token.strip_prefix(b"$") {
            Some(name) => self
                .params
                .iter()
                .find(|(k, _)| k[..] == *name)
                .map(|(_, v)| v.clone())
                .ok_or_else(|| format!("No such parameter `{}`", String::from_utf8_lossy(name))),
            None => Ok(token.clone()),
        }
    }

    fn bound(&mut self) -> Result<(f64, bool), String> {
        let exclusive = self.peek() == Some(b'(');
        if exclusive {
            self.pos += 1;
        }
        let token = self.token();
        let value = self.param_value(&token)?;
        let text = std::str::from_utf8(&value).map_err(|_| self.syntax())?;
        let parsed = match text.to_ascii_lowercase().as_str() {
            "-inf" => f64::NEG_INFINITY,
            "inf" | "+inf" => f64::INFINITY,
            t => t.parse::<f64>().ok().filter(|v| !v.is_nan()).ok_or_else(|| format!("Expected a number but got `{text}`"))?,
        };
        Ok((parsed, exclusive))
    }

    fn knn(&mut self) -> Result<Knn, String> {
        self.expect(b'[')?;
        let word = self.token();
        if !eq(&word, "KNN") {
            return Err(self.syntax());
        }
        let k_token = self.token();
        let k_value = self.param_value(&k_token)?;
        let k = std::str::from_utf8(&k_value).ok().and_then(|s| s.parse::<usize>().ok()).ok_or_else(|| self.syntax())?;
        if k > KNN_K_MAX {
            return Err(format!("KNN K is above Meridian's limit of {KNN_K_MAX}"));
        }
        self.skip_ws();
        if self.peek() != Some(b'@') {
            return Err(self.syntax());
        }
        self.pos += 1;
        let field = self.name();
        let blob_token = self.token();
        if !blob_token.starts_with(b"$") {
            return Err("Vector blobs must be passed as a $parameter (PARAMS)".into());
        }
        let blob = self.param_value(&blob_token)?;
        let mut knn = Knn { k, alias: Bytes::from(format!("__{}_score", String::from_utf8_lossy(&field))), field, blob, ef_runtime: None };
        loop {
            if self.peek() == Some(b']') {
                self.pos += 1;
                return Ok(knn);
            }
            let word = self.token();
            if eq(&word, "AS") {
                knn.alias = self.token();
                if knn.alias.is_empty() {
                    return Err(self.syntax());
                }
            } else if eq(&word, "EF_RUNTIME") {
                let token = self.token();
                let value = self.param_value(&token)?;
                let ef = std::str::from_utf8(&value).ok().and_then(|s| s.parse::<usize>().ok()).filter(|&v| v > 0);
                knn.ef_runtime = Some(ef.ok_or("EF_RUNTIME must be a positive integer")?);
            } else if word.is_empty() {
                return Err(self.syntax());
            } else {
                return Err(format!("{} is not supported by Meridian in a KNN clause", String::from_utf8_lossy(&word).to_uppercase()));
            }
        }
    }
}
