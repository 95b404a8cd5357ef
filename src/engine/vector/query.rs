//! FT.SEARCH's query: the filter expression, the KNN clause and the options, parsed.
//!
//! Owns the query grammar (DIALECT 2): `*`, `@tag:{a|b|pre*}`, `@num:[lo hi]` (with `(`
//! for an exclusive bound and `-inf`/`+inf`), `@vec:[VECTOR_RANGE r $blob]` (with
//! `=>{$YIELD_DISTANCE_AS: name}`), juxtaposition for AND, `|` for OR, `-` for NOT,
//! parentheses, full-text terms (`hello`, `@title:hello`, `hel*`), fuzzy terms
//! (`%term%`, `%%term%%`, `%%%term%%%`), optional clauses (`~x`), exact phrases
//! (`"a b"`, `@title:"a b"`) and `=>[KNN k @field $param [EF_RUNTIME n] [AS alias]]`.
//! `$name` parameters come from PARAMS. Anything else (GEO, tag suffixes, ...) is an
//! error naming it: a query must never run with part of its filter ignored.
//! Pure parsing: it knows no index and no data.

use bytes::Bytes;

use super::scorer::Scorer;
use super::text::Language;

mod expr;

use expr::Parser;

/// How deep parentheses and negations may nest (bounds the recursion).
pub const NESTING_MAX: usize = 64;
/// Largest K a KNN clause may ask for.
pub const KNN_K_MAX: usize = 100_000;
/// Most results LIMIT may ask for (RediSearch's MAXSEARCHRESULTS default).
pub const LIMIT_MAX: usize = 1_000_000;

#[derive(Clone, Debug, PartialEq)]
pub enum Filter {
    All,
    /// Any of these tags on the field.
    Tag {
        field: Bytes,
        values: Vec<Bytes>,
    },
    /// Any tag on the field that starts with one of these (`{ab*}`).
    TagPrefix {
        field: Bytes,
        prefixes: Vec<Bytes>,
    },
    /// A full-text term (lower-cased) on one TEXT field or on all (`field` `None`);
    /// `prefix`: any term starting with it (`hel*`).
    Text {
        field: Option<Bytes>,
        term: Bytes,
        prefix: bool,
    },
    /// An exact phrase: these terms (lower-cased, never stemmed; a stop word in it
    /// matches nothing, as in RediSearch's DIALECT 2) at consecutive positions.
    Phrase {
        field: Option<Bytes>,
        terms: Vec<Bytes>,
    },
    /// A fuzzy term (`%term%`): any indexed term within `distance` (1 to 3) edits of
    /// it (Levenshtein), on one TEXT field or on all.
    Fuzzy {
        field: Option<Bytes>,
        term: Bytes,
        distance: u8,
    },
    /// An optional clause (`~x`): every document passes; those that match `x` score
    /// what `x` adds.
    Optional(Box<Filter>),
    /// Documents whose vector is within `radius` of `blob` (VECTOR_RANGE); the distance
    /// is returned under `yield_as` when given.
    VectorRange {
        field: Bytes,
        radius: f64,
        blob: Bytes,
        yield_as: Option<Bytes>,
    },
    Range {
        field: Bytes,
        lo: f64,
        lo_exclusive: bool,
        hi: f64,
        hi_exclusive: bool,
    },
    Not(Box<Filter>),
    And(Vec<Filter>),
    Or(Vec<Filter>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Knn {
    pub k: usize,
    pub field: Bytes,
    pub blob: Bytes,
    pub ef_runtime: Option<usize>,
    /// The name the distance is returned under (`AS`, else `__<field>_score`).
    pub alias: Bytes,
}

#[derive(Clone, Debug, PartialEq)]
pub struct SortBy {
    pub field: Bytes,
    pub ascending: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct SearchQuery {
    pub filter: Filter,
    pub knn: Option<Knn>,
    pub offset: usize,
    pub num: usize,
    pub nocontent: bool,
    pub return_fields: Option<Vec<Bytes>>,
    pub sort_by: Option<SortBy>,
    /// WITHSCORES: each hit's relevance score goes with it.
    pub with_scores: bool,
    /// VERBATIM: text terms are not expanded to their stems.
    pub verbatim: bool,
    /// LANGUAGE: the stemmer for the query's terms (else the index's).
    pub language: Option<Language>,
    /// SCORER: how hits are ranked and scored (TFIDF unless named).
    pub scorer: Scorer,
    /// SLOP: in every intersection, at most this many words between the matched terms.
    pub slop: Option<u32>,
    /// INORDER: in every intersection, the matched terms in the query's order.
    pub in_order: bool,
}

impl SearchQuery {
    /// The VECTOR_RANGE clause of the filter, if any (a query has at most one).
    pub fn vector_range(&self) -> Option<&Filter> {
        fn find(filter: &Filter) -> Option<&Filter> {
            match filter {
                Filter::VectorRange { .. } => Some(filter),
                Filter::Not(inner) | Filter::Optional(inner) => find(inner),
                Filter::And(parts) | Filter::Or(parts) => parts.iter().find_map(find),
                _ => None,
            }
        }
        find(&self.filter)
    }

    /// The name a distance is returned under: KNN's alias, or VECTOR_RANGE's
    /// `$YIELD_DISTANCE_AS`.
    pub fn distance_alias(&self) -> Option<&Bytes> {
        match (&self.knn, self.vector_range()) {
            (Some(knn), _) => Some(&knn.alias),
            (None, Some(Filter::VectorRange { yield_as, .. })) => yield_as.as_ref(),
            _ => None,
        }
    }
}

fn eq(arg: &[u8], word: &str) -> bool {
    arg.eq_ignore_ascii_case(word.as_bytes())
}

fn number(arg: Option<&Bytes>) -> Option<usize> {
    std::str::from_utf8(arg?).ok()?.parse().ok()
}

/// Parse FT.SEARCH's arguments after the index name (query string first).
pub fn parse_search(args: &[Bytes]) -> Result<SearchQuery, String> {
    let Some(query) = args.first() else {
        return Err("wrong number of arguments for 'FT.SEARCH' command".into());
    };
    let mut params: Vec<(Bytes, Bytes)> = Vec::new();
    let mut out = SearchQuery {
        filter: Filter::All,
        knn: None,
        offset: 0,
        num: 10,
        nocontent: false,
        return_fields: None,
        sort_by: None,
        with_scores: false,
        verbatim: false,
        language: None,
        scorer: Scorer::Tfidf,
        slop: None,
        in_order: false,
    };
    let mut nostopwords = false;
    let mut i = 1;
    while i < args.len() {
        let arg = &args[i];
        if eq(arg, "NOCONTENT") {
            out.nocontent = true;
            i += 1;
        } else if eq(arg, "WITHSCORES") {
            out.with_scores = true;
            i += 1;
        } else if eq(arg, "VERBATIM") {
            out.verbatim = true;
            i += 1;
        } else if eq(arg, "NOSTOPWORDS") {
            nostopwords = true;
            i += 1;
        } else if eq(arg, "LANGUAGE") {
            let name = args.get(i + 1).ok_or("Bad arguments for LANGUAGE: Expected an argument, but none provided")?;
            out.language = Some(Language::parse(name)?);
            i += 2;
        } else if eq(arg, "SCORER") {
            let name = args.get(i + 1).ok_or("Bad arguments for SCORER: Expected an argument, but none provided")?;
            out.scorer = Scorer::parse(name)?;
            i += 2;
        } else if eq(arg, "SLOP") {
            let arg = args.get(i + 1).ok_or("Bad arguments for SLOP: Expected an argument, but none provided")?;
            match std::str::from_utf8(arg).ok().and_then(|a| a.parse::<i64>().ok()) {
                // RediSearch takes -1 as "no slop".
                Some(-1) => out.slop = None,
                Some(n) if (0..=i64::from(i32::MAX)).contains(&n) => out.slop = Some(n as u32),
                Some(_) => return Err("Bad arguments for SLOP: a negative SLOP other than -1 is not supported by Meridian".into()),
                None => return Err("Bad arguments for SLOP: Could not convert argument to expected type".into()),
            }
            i += 2;
        } else if eq(arg, "INORDER") {
            out.in_order = true;
            i += 1;
        } else if eq(arg, "RETURN") {
            let n = number(args.get(i + 1)).ok_or("Bad arguments for RETURN: Expected an argument, but none provided")?;
            // `n` comes from the client: compared without an addition that could wrap.
            if n > args.len().saturating_sub(i + 2) {
                return Err("Bad arguments for RETURN: Expected an argument, but none provided".into());
            }
            out.return_fields = Some(args[i + 2..i + 2 + n].to_vec());
            i += 2 + n;
        } else if eq(arg, "LIMIT") {
            let (Some(offset), Some(num)) = (number(args.get(i + 1)), number(args.get(i + 2))) else {
                return Err("Bad arguments for LIMIT: Expected an argument, but none provided".into());
            };
            if offset.saturating_add(num) > LIMIT_MAX {
                return Err("OFFSET exceeds maximum of 1000000".into());
            }
            out.offset = offset;
            out.num = num;
            i += 3;
        } else if eq(arg, "SORTBY") {
            let field = args.get(i + 1).ok_or("Bad arguments for SORTBY: Expected an argument, but none provided")?;
            let field = Bytes::copy_from_slice(field.strip_prefix(b"@").unwrap_or(field));
            let mut ascending = true;
            i += 2;
            if let Some(dir) = args.get(i)
                && (eq(dir, "ASC") || eq(dir, "DESC"))
            {
                ascending = eq(dir, "ASC");
                i += 1;
            }
            out.sort_by = Some(SortBy { field, ascending });
        } else if eq(arg, "PARAMS") {
            let n = number(args.get(i + 1)).ok_or("Bad arguments for PARAMS: Expected an argument, but none provided")?;
            if n % 2 != 0 || n > args.len().saturating_sub(i + 2) {
                return Err("Bad arguments for PARAMS: Expected an argument, but none provided".into());
            }
            params.extend(args[i + 2..i + 2 + n].chunks_exact(2).map(|p| (p[0].clone(), p[1].clone())));
            i += 2 + n;
        } else if eq(arg, "DIALECT") {
            match number(args.get(i + 1)) {
                Some(1 | 2) => {}
                Some(d @ 3..=4) => return Err(format!("DIALECT {d} is not supported by Meridian (use 2)")),
                _ => return Err("DIALECT requires a non negative integer >=1 and <= 4".into()),
            }
            i += 2;
        } else if eq(arg, "TIMEOUT") {
            number(args.get(i + 1)).ok_or("Bad arguments for TIMEOUT: Expected an argument, but none provided")?;
            i += 2;
        } else {
            return Err(format!("{} is not supported by Meridian's FT.SEARCH", String::from_utf8_lossy(arg).to_uppercase()));
        }
    }
    let (filter, knn) = Parser::new(query, &params, nostopwords).query()?;
    out.filter = filter;
    out.knn = knn;
    if out.vector_range().is_some() {
        if out.knn.is_some() {
            return Err("VECTOR_RANGE combined with KNN is not supported by Meridian".into());
        }
        if count_ranges(&out.filter) > 1 {
            return Err("More than one VECTOR_RANGE in a query is not supported by Meridian".into());
        }
    }
    Ok(out)
}

fn count_ranges(filter: &Filter) -> usize {
    match filter {
        Filter::VectorRange { .. } => 1,
        Filter::Not(inner) | Filter::Optional(inner) => count_ranges(inner),
        Filter::And(parts) | Filter::Or(parts) => parts.iter().map(count_ranges).sum(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests;
