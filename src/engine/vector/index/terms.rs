//! The query-side helpers of an index that are not the KNN walk: the query vector of a
//! KNN or VECTOR_RANGE clause, the docs within a range, tag prefix expansion, and what
//! a hit matched through, for its relevance score.
//!
//! Scores (`scorer.rs`) sum, over the leaves a document matched through (a leaf under a
//! NOT counts nothing), a weight that depends on the leaf's kind, its frequency in the
//! document and its document count (df). The df and the document count must be the
//! node's, so a shard reports the terms of each hit (`Term`) and its own counts
//! (`term_counts`), and the node scores. DISMAX needs no count but the query's tree
//! (unions take their best child), so a shard computes it (`dismax`).
//! Never reads data or a clock.

use bytes::Bytes;
use hashbrown::HashMap;

use super::{Compiled, Index, decode_vector};
use crate::engine::vector::distance::{Metric, normalize};
use crate::engine::vector::query::Filter;
use crate::engine::vector::schema::FieldKind;

/// Shortest tag prefix that matches anything (RediSearch's MINPREFIX default).
const MIN_PREFIX: usize = 2;
/// Most tags one prefix expands to (RediSearch's MAXEXPANSIONS default).
const MAX_EXPANSIONS: usize = 200;

/// A leaf a document matched through (how each weighs is the scorer's,
/// `scorer::score`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Term {
    /// `*`.
    All,
    /// A numeric range.
    Range,
    /// A tag of the `n`-th TAG field.
    Tag(usize, Bytes),
    /// A full-text term (or `+stem`) with its frequency in the hit; in the counts, with
    /// frequency 0 (the count is of documents, whatever their frequency).
    Text(Bytes, u32),
}

/// Whether every document that passes `filter` matches it through the same terms (so
/// all score alike and key order is score order). Decided on the query, not on a
/// shard's expansion of it, so that every shard decides alike.
fn uniform(filter: &Filter) -> bool {
    match filter {
        Filter::All | Filter::Range { .. } | Filter::Not(_) | Filter::VectorRange { .. } => true,
        Filter::Tag { values, .. } => values.len() <= 1,
        Filter::TagPrefix { .. } | Filter::Text { .. } | Filter::Fuzzy { .. } | Filter::Phrase { .. } | Filter::Optional(_) => false,
        Filter::And(parts) => parts.iter().all(uniform),
        Filter::Or(parts) => parts.is_empty(),
    }
}

impl Index {
    /// Whether every hit of `filter` scores alike here: the query's terms are the same
    /// for all (`uniform`), no document's score is divided by its own highest term
    /// frequency (an index without TEXT fields), and none has a score of its own (no
    /// SCORE_FIELD).
    pub(super) fn uniform(&self, filter: &Filter) -> bool {
        !self.is_text.contains(&true) && self.def.score_field.is_none() && uniform(filter)
    }

    /// The (store position, decoded and normalised vector, default EF_RUNTIME) of a
    /// query blob for vector field `field`; RediSearch's errors for a wrong one.
    pub(super) fn query_vector(&self, field: &[u8], blob: &[u8]) -> Result<(usize, Vec<f32>, usize), String> {
        let Some((i, def)) = self.def.field(field) else {
            return Err(format!("Unknown field `{}`", String::from_utf8_lossy(field)));
        };
        let FieldKind::Vector(params) = &def.kind else {
            return Err(format!("Expected a VECTOR field, but `{}` is not one", String::from_utf8_lossy(field)));
        };
        let expected = params.dim * params.element.bytes();
        if blob.len() != expected {
            return Err(format!(
                "Error parsing vector similarity query: query vector blob size ({}) does not match index's expected size ({expected}).",
                blob.len()
            ));
        }
        let mut vector = decode_vector(blob, params.element, params.dim).ok_or("Error parsing vector similarity query: bad blob")?;
        if params.metric == Metric::Cosine {
            normalize(&mut vector);
        }
        Ok((self.positions[i], vector, params.ef_runtime))
    }

    /// The docs whose vector in store `position` lies within `radius` of `query`, with
    /// their distances (an exact scan: every live slot is measured).
    pub(super) fn within(&self, position: usize, query: &[f32], radius: f64) -> HashMap<u32, f32, foldhash::fast::FixedState> {
        let (store, owners) = &self.stores[position];
        let live: Vec<u32> = (0..store.slots() as u32).filter(|&s| !store.is_deleted(s)).collect();
        let mut out = HashMap::with_hasher(foldhash::fast::FixedState::with_seed(0));
        for near in store.search_exact(query, live.len(), live.into_iter()) {
            if f64::from(near.0) <= radius {
                out.insert(owners[near.1 as usize], near.0);
            }
        }
        out
    }

    /// The tags of TAG field `position` that start with one of `prefixes`, sorted.
    pub(super) fn expand_prefixes(&self, position: usize, prefixes: &[Bytes], case_sensitive: bool) -> Vec<Bytes> {
        let mut out = Vec::new();
        for prefix in prefixes {
            let prefix = if case_sensitive { prefix.clone() } else { Bytes::from(prefix.to_ascii_lowercase()) };
            if prefix.len() < MIN_PREFIX {
                continue;
            }
            let mut found: Vec<Bytes> = self.postings[position].keys().filter(|tag| tag.starts_with(&prefix)).cloned().collect();
            found.sort_unstable();
            found.truncate(MAX_EXPANSIONS);
            out.extend(found);
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Whether doc `id` passes `filter`, and if so the terms it matched through
    /// (appended to `out`; left as it was when it does not pass).
    pub(super) fn terms(&self, filter: &Compiled, id: u32, out: &mut Vec<Term>) -> bool {
        let mark = out.len();
        let passes = match filter {
            Compiled::All => {
                out.push(Term::All);
                true
            }
            Compiled::Nothing => false,
            Compiled::Tag(field, values) => {
                for value in values {
                    if self.postings[*field].get(value).is_some_and(|ids| ids.contains(&id)) {
                        out.push(Term::Tag(*field, value.clone()));
                    }
                }
                out.len() > mark
            }
            Compiled::Text(..) | Compiled::Phrase(..) => self.text_terms(filter, id, out),
            Compiled::Range(field, lo, lo_ex, hi, hi_ex) => {
                let n = self.columns[*field].get(id as usize).copied().unwrap_or(f64::NAN);
                let passes = (if *lo_ex { n > *lo } else { n >= *lo }) && (if *hi_ex { n < *hi } else { n <= *hi });
                if passes {
                    out.push(Term::Range);
                }
                passes
            }
            Compiled::Within(distances) => distances.contains_key(&id),
            Compiled::Not(inner) => {
                let passes = !self.terms(inner, id, out);
                out.truncate(mark);
                passes
            }
            Compiled::Optional(inner) => {
                self.terms(inner, id, out);
                true
            }
            Compiled::And(parts, near) => {
                parts.iter().all(|p| self.terms(p, id, out)) && near.is_none_or(|near| self.near(parts, near, id))
            }
            Compiled::Or(parts) => parts.iter().fold(false, |any, p| self.terms(p, id, out) | any),
        };
        if !passes {
            out.truncate(mark);
        }
        passes
    }

    /// How many of this shard's docs carry each tag term `filter` names.
    pub(super) fn term_counts(&self, filter: &Compiled, out: &mut Vec<(Term, usize)>) {
        match filter {
            Compiled::Tag(field, values) => {
                for value in values {
                    out.push((Term::Tag(*field, value.clone()), self.postings[*field].get(value).map_or(0, |ids| ids.len())));
                }
            }
            Compiled::Text(_, terms, _) | Compiled::Phrase(_, terms) => {
                for term in terms {
                    out.push((Term::Text(term.clone(), 0), self.text_docs.get(term).copied().unwrap_or(0)));
                }
            }
            Compiled::Not(inner) | Compiled::Optional(inner) => self.term_counts(inner, out),
            Compiled::And(parts, _) | Compiled::Or(parts) => parts.iter().for_each(|p| self.term_counts(p, out)),
            _ => {}
        }
    }

    /// RediSearch's DISMAX of doc `id` (which passes `filter`): a term counts its
    /// frequency (a tag, a range or `*` 1), an intersection or a phrase sums its
    /// children, a union (an OR, a term's expansions, a multi-value tag) takes the
    /// highest, a NOT and a vector clause count 0.
    pub(super) fn dismax(&self, filter: &Compiled, id: u32) -> f64 {
        let mut terms = Vec::new();
        match filter {
            Compiled::All | Compiled::Range(..) | Compiled::Tag(..) => f64::from(u8::from(self.terms(filter, id, &mut terms))),
            Compiled::Text(..) => {
                self.text_terms(filter, id, &mut terms);
                terms.iter().map(|t| if let Term::Text(_, f) = t { f64::from(*f) } else { 0.0 }).fold(0.0, f64::max)
            }
            Compiled::Phrase(..) => {
                self.text_terms(filter, id, &mut terms);
                terms.iter().map(|t| if let Term::Text(_, f) = t { f64::from(*f) } else { 0.0 }).sum()
            }
            Compiled::Nothing | Compiled::Within(_) | Compiled::Not(_) => 0.0,
            Compiled::Optional(inner) => {
                if self.terms(inner, id, &mut terms) {
                    self.dismax(inner, id)
                } else {
                    0.0
                }
            }
            Compiled::And(parts, _) => parts.iter().map(|p| self.dismax(p, id)).sum(),
            Compiled::Or(parts) => {
                parts.iter().filter(|p| self.terms(p, id, &mut Vec::new())).map(|p| self.dismax(p, id)).fold(0.0, f64::max)
            }
        }
    }
}
