//! The full-text side of an index: a document's TEXT terms as stored, a query term's
//! and a phrase's matches, and the parts of RediSearch's TFIDF that depend on where
//! terms sit (term frequency, the highest frequency, the distance between matched
//! terms). Never reads data: it works on what `reindex` stored.

use bytes::Bytes;

use super::{Compiled, Doc, Index, Term};
use crate::engine::vector::schema::FieldKind;
use crate::engine::vector::scorer::DocStats;
use crate::engine::vector::text::{self as words, Language, STEM_MARK};

/// What a stem adds to its term's frequency, per occurrence and field weight
/// (RediSearch's STEM_TOKEN_FACTOR); never less than 1.
const STEM_FACTOR: f64 = 0.2;
/// Most candidate positions a phrase check walks per document (bounds one check).
const PHRASE_STARTS_MAX: usize = 100_000;
/// Most terms a fuzzy term expands to (RediSearch's MAXPREFIXEXPANSIONS default).
const EXPANSIONS_MAX: usize = 200;

/// One field's terms as a document keeps them: the sorted terms, and beside each its
/// encoded positions and what it adds to the term's frequency (each occurrence adds
/// `max(1, floor(weight))`, a stem `max(1, floor(weight * 0.2))`, as RediSearch counts);
/// `freqs` sums each term over the document's fields; `len` adds what the words (not
/// the stems) add (RediSearch's document length).
pub(super) fn field_terms(
    terms: Vec<(Bytes, Vec<u32>)>,
    weight: f64,
    freqs: &mut std::collections::HashMap<Bytes, u32>,
    len: &mut u32,
) -> (Vec<Bytes>, Vec<(Vec<u8>, u32)>) {
    let mut tags = Vec::with_capacity(terms.len());
    let mut text = Vec::with_capacity(terms.len());
    for (term, positions) in terms {
        let factor = if term.first() == Some(&STEM_MARK) { weight * STEM_FACTOR } else { weight };
        let each = (factor.floor() as u32).max(1);
        let freq = each.saturating_mul(positions.len() as u32);
        *freqs.entry(term.clone()).or_default() += freq;
        if term.first() != Some(&STEM_MARK) {
            *len = len.saturating_add(freq);
        }
        tags.push(term);
        text.push((words::encode_positions(&positions), freq));
    }
    (tags, text)
}

/// The distinct terms of a document's TEXT fields (what the per-term document counts
/// count).
pub(super) fn distinct_terms(tags: &[Vec<Bytes>], is_text: &[bool]) -> Vec<Bytes> {
    let mut out: Vec<Bytes> = tags.iter().zip(is_text).filter(|(_, t)| **t).flat_map(|(terms, _)| terms.iter().cloned()).collect();
    out.sort_unstable();
    out.dedup();
    out
}

impl Doc {
    /// The term's frequency over all TEXT fields and its positions (sorted), or `None`
    /// when no TEXT field has it.
    fn text_term(&self, is_text: &[bool], term: &[u8]) -> Option<(u32, Vec<u32>)> {
        let mut found = None::<(u32, Vec<u32>)>;
        for (field, terms) in self.tags.iter().enumerate() {
            if !is_text.get(field).copied().unwrap_or(false) {
                continue;
            }
            if let Ok(k) = terms.binary_search_by(|t| t[..].cmp(term))
                && let Some((positions, freq)) = self.text.get(field).and_then(|t| t.get(k))
            {
                let entry = found.get_or_insert_with(|| (0, Vec::new()));
                entry.0 = entry.0.saturating_add(*freq);
                entry.1.extend(words::decode_positions(positions));
            }
        }
        if let Some((_, positions)) = found.as_mut() {
            positions.sort_unstable();
        }
        found
    }

    fn has_in(&self, fields: &[usize], term: &[u8]) -> bool {
        fields.iter().any(|&f| self.tags.get(f).is_some_and(|terms| terms.binary_search_by(|t| t[..].cmp(term)).is_ok()))
    }
}

impl Index {
    /// The tag positions of the TEXT fields a term applies to: one (`@field:`) or all.
    fn text_fields(&self, field: Option<&Bytes>) -> Result<Option<Vec<usize>>, String> {
        Ok(Some(match field {
            Some(name) => match self.def.field(name) {
                None => return Ok(None),
                Some((i, def)) if matches!(def.kind, FieldKind::Text { .. }) => vec![self.positions[i]],
                Some(_) => return Err(format!("Field `{}` is not a TEXT field", String::from_utf8_lossy(name))),
            },
            None => self
                .def
                .fields
                .iter()
                .enumerate()
                .filter(|(_, f)| matches!(f.kind, FieldKind::Text { .. }))
                .map(|(i, _)| self.positions[i])
                .collect(),
        }))
    }

    /// Where a prefix or a fuzzy term looks for its expansions: every TEXT field, even
    /// under `@field:` (RediSearch expands over its one term trie, then matches in the
    /// field). Expanding over the field's terms alone would leave out, on a shard where
    /// a term is only in another field, that term's document count, and the node's sum
    /// (the score's df) would fall short of RediSearch's.
    fn expansion_fields(&self) -> Vec<usize> {
        self.def
            .fields
            .iter()
            .enumerate()
            .filter(|(_, f)| matches!(f.kind, FieldKind::Text { .. }))
            .map(|(i, _)| self.positions[i])
            .collect()
    }

    /// A full-text term: on one TEXT field, or on every TEXT field (`field` `None`);
    /// expanded to its stems unless `verbatim`; a prefix expands over the terms indexed.
    pub(super) fn compile_text(
        &self,
        field: Option<&Bytes>,
        term: &Bytes,
        prefix: bool,
        verbatim: bool,
        language: Language,
    ) -> Result<Compiled, String> {
        let Some(fields) = self.text_fields(field)? else { return Ok(Compiled::Nothing) };
        let term = Bytes::from(term.to_ascii_lowercase());
        let terms = if prefix {
            let mut found: Vec<Bytes> = self
                .expansion_fields()
                .iter()
                .flat_map(|&p| self.expand_prefixes(p, std::slice::from_ref(&term), true))
                .filter(|t| t.first() != Some(&STEM_MARK))
                .collect();
            found.sort_unstable();
            found.dedup();
            found
        } else if verbatim {
            vec![term]
        } else {
            words::expansions(&term, language)
        };
        Ok(Compiled::Text(fields, terms, prefix))
    }

    /// A fuzzy term: the terms indexed in its fields (stems included, as RediSearch's
    /// term trie holds them) within `distance` edits, in byte order, at most
    /// `EXPANSIONS_MAX`.
    pub(super) fn compile_fuzzy(&self, field: Option<&Bytes>, term: &Bytes, distance: u8) -> Result<Compiled, String> {
        let Some(fields) = self.text_fields(field)? else { return Ok(Compiled::Nothing) };
        let mut found: Vec<Bytes> = self
            .expansion_fields()
            .iter()
            .flat_map(|&p| self.postings[p].keys())
            .filter(|t| levenshtein_within(term, t, usize::from(distance)))
            .cloned()
            .collect();
        found.sort_unstable();
        found.dedup();
        found.truncate(EXPANSIONS_MAX);
        Ok(Compiled::Text(fields, found, true))
    }

    /// An exact phrase on one TEXT field or on all.
    pub(super) fn compile_phrase(&self, field: Option<&Bytes>, terms: &[Bytes]) -> Result<Compiled, String> {
        let Some(fields) = self.text_fields(field)? else { return Ok(Compiled::Nothing) };
        Ok(Compiled::Phrase(fields, terms.to_vec()))
    }

    /// The docs where a phrase occurs, as a bitmap of `words` words.
    pub(super) fn eval_phrase(&self, fields: &[usize], terms: &[Bytes], words: usize) -> Vec<u64> {
        let mut bits = vec![0u64; words];
        let Some(first) = terms.first() else { return bits };
        let candidates: Vec<u32> = fields.iter().flat_map(|&f| self.postings[f].get(first).into_iter().flatten().copied()).collect();
        for id in candidates {
            if self.docs.get(id as usize).and_then(Option::as_ref).is_some_and(|doc| self.phrase_in(doc, fields, terms)) {
                bits[id as usize / 64] |= 1 << (id % 64);
            }
        }
        bits
    }

    /// Whether every term of the phrase is in one of `fields` and they follow each
    /// other somewhere in the document (positions run through all TEXT fields, as in
    /// RediSearch, so a phrase may span two fields).
    fn phrase_in(&self, doc: &Doc, fields: &[usize], terms: &[Bytes]) -> bool {
        let mut positions = Vec::with_capacity(terms.len());
        for term in terms {
            if !doc.has_in(fields, term) {
                return false;
            }
            match doc.text_term(&self.is_text, term) {
                Some((_, p)) => positions.push(p),
                None => return false,
            }
        }
        let Some(starts) = positions.first() else { return false };
        starts.iter().take(PHRASE_STARTS_MAX).any(|&start| {
            positions
                .iter()
                .enumerate()
                .skip(1)
                .all(|(k, p)| start.checked_add(k as u32).is_some_and(|want| p.binary_search(&want).is_ok()))
        })
    }

    /// The text terms of doc `id` a text node matched, with their frequencies.
    pub(super) fn text_terms(&self, filter: &Compiled, id: u32, out: &mut Vec<Term>) -> bool {
        let Some(doc) = self.docs.get(id as usize).and_then(Option::as_ref) else { return false };
        match filter {
            Compiled::Text(fields, terms, first) => {
                let mark = out.len();
                for term in matched(doc, fields, terms, *first) {
                    if let Some((freq, _)) = doc.text_term(&self.is_text, term) {
                        out.push(Term::Text(term.clone(), freq));
                    }
                }
                out.len() > mark
            }
            Compiled::Phrase(fields, terms) => {
                if !self.phrase_in(doc, fields, terms) {
                    return false;
                }
                for term in terms {
                    let freq = doc.text_term(&self.is_text, term).map_or(0, |(f, _)| f);
                    out.push(Term::Text(term.clone(), freq));
                }
                true
            }
            _ => false,
        }
    }

    /// Doc `id`'s figures for its score: its highest term frequency and length, and
    /// the distance between the query's matched parts in it (RediSearch's slop).
    pub(super) fn doc_stats(&self, filter: &Compiled, id: u32) -> DocStats {
        let Some(doc) = self.docs.get(id as usize).and_then(Option::as_ref) else { return DocStats::default() };
        DocStats { max_freq: doc.max_freq.max(1), slop: self.slop(doc, filter, id), len: doc.len, score: doc.score, dismax: 0.0 }
    }

    /// RediSearch's distance between the children of the query's root that matched:
    /// for each pair of neighbouring children that have positions, the closest two of
    /// their positions (`min_delta`); the integer square root of the sum of squares, or
    /// the number of children less one when that is 0. 1 when the root is not a union,
    /// intersection or phrase, or fewer than two children matched.
    fn slop(&self, doc: &Doc, filter: &Compiled, id: u32) -> u32 {
        let children: Vec<Vec<u32>> = match filter {
            Compiled::Text(fields, terms, first) => {
                matched(doc, fields, terms, *first).filter_map(|t| doc.text_term(&self.is_text, t).map(|(_, p)| p)).collect()
            }
            Compiled::Phrase(_, terms) => terms.iter().map(|t| doc.text_term(&self.is_text, t).map_or_else(Vec::new, |(_, p)| p)).collect(),
            Compiled::And(parts, _) | Compiled::Or(parts) => parts
                .iter()
                .filter(|p| self.terms(p, id, &mut Vec::new()))
                .map(|p| {
                    let mut positions = Vec::new();
                    self.positions_of(doc, p, id, &mut positions);
                    positions.sort_unstable();
                    positions
                })
                .collect(),
            _ => return 1,
        };
        if children.len() <= 1 {
            return 1;
        }
        let with_positions: Vec<&Vec<u32>> = children.iter().filter(|p| !p.is_empty()).collect();
        let sum: u64 = with_positions.windows(2).map(|pair| u64::from(min_delta(pair[0], pair[1])).pow(2)).sum();
        if sum == 0 { (children.len() - 1) as u32 } else { (sum as f64).sqrt() as u32 }
    }

    /// The positions of the text terms a matched filter node matched in doc `id`
    /// (none under a NOT, none for tags, numbers or vectors).
    pub(super) fn positions_of(&self, doc: &Doc, filter: &Compiled, id: u32, out: &mut Vec<u32>) {
        match filter {
            Compiled::Text(fields, terms, first) => {
                for term in matched(doc, fields, terms, *first) {
                    out.extend(doc.text_term(&self.is_text, term).map(|(_, p)| p).unwrap_or_default());
                }
            }
            Compiled::Phrase(_, terms) => {
                for term in terms {
                    out.extend(doc.text_term(&self.is_text, term).map(|(_, p)| p).unwrap_or_default());
                }
            }
            Compiled::And(parts, _) | Compiled::Or(parts) => {
                for part in parts.iter().filter(|p| self.terms(p, id, &mut Vec::new())) {
                    self.positions_of(doc, part, id, out);
                }
            }
            Compiled::Optional(inner) if self.terms(inner, id, &mut Vec::new()) => self.positions_of(doc, inner, id, out),
            _ => {}
        }
    }
}

/// The terms of a text node doc has in `fields`: all of them, or (a prefix's or fuzzy
/// term's quick-exit union) only the first.
fn matched<'a>(doc: &'a Doc, fields: &'a [usize], terms: &'a [Bytes], first: bool) -> impl Iterator<Item = &'a Bytes> + 'a {
    terms.iter().filter(move |t| doc.has_in(fields, t)).take(if first { 1 } else { usize::MAX })
}

/// Whether `a` and `b` are at most `max` edits apart (insertions, deletions,
/// substitutions of bytes): one row of the Levenshtein table at a time, given up as
/// soon as a whole row exceeds `max`.
fn levenshtein_within(a: &[u8], b: &[u8], max: usize) -> bool {
    if a.len().abs_diff(b.len()) > max {
        return false;
    }
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, &ca) in a.iter().enumerate() {
        let mut next = Vec::with_capacity(row.len());
        next.push(i + 1);
        for (j, &cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            next.push((row[j] + cost).min(row[j + 1] + 1).min(next[j] + 1));
        }
        if next.iter().all(|&d| d > max) {
            return false;
        }
        row = next;
    }
    row[b.len()] <= max
}

/// The closest two positions of two sorted lists, walked as RediSearch walks them: it
/// stops at a distance of 1 or less, and at the end of either list without comparing
/// the pair it just moved to.
fn min_delta(a: &[u32], b: &[u32]) -> u32 {
    let (mut i, mut j) = (0, 0);
    let (Some(&first_a), Some(&first_b)) = (a.first(), b.first()) else { return 0 };
    let mut best = first_a.abs_diff(first_b);
    while best > 1 && i < a.len() && j < b.len() {
        best = best.min(a[i].abs_diff(b[j]));
        if b[j] > a[i] {
            i += 1;
        } else {
            j += 1;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::{levenshtein_within, min_delta};

    #[test]
    fn edit_distances_are_bounded_as_asked() {
        assert!(levenshtein_within(b"hello", b"hello", 0));
        assert!(levenshtein_within(b"hello", b"hullo", 1));
        assert!(levenshtein_within(b"hello", b"hellos", 1));
        assert!(levenshtein_within(b"run", b"+run", 1));
        assert!(!levenshtein_within(b"ab", b"bar", 1));
        assert!(levenshtein_within(b"ab", b"bar", 2));
        assert!(levenshtein_within(b"hel", b"fox", 3));
        assert!(!levenshtein_within(b"hel", b"wide", 3));
    }

    #[test]
    fn the_closest_positions_of_two_lists_are_found() {
        assert_eq!(min_delta(&[1, 7], &[4]), 3);
        assert_eq!(min_delta(&[2, 4, 8], &[0, 5, 12]), 1);
        assert_eq!(min_delta(&[4, 5], &[1, 1, 2, 3]), 1);
        assert_eq!(min_delta(&[3], &[3]), 0);
    }
}
