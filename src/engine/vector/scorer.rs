//! FT.SEARCH's SCORER: which of RediSearch's (2.10) scoring functions ranks the hits of
//! a non-KNN query, and the function itself.
//!
//! Owns the scorer names and the formulas: TFIDF (the default), TFIDF.DOCNORM, BM25
//! (RediSearch's legacy, non-standard BM25), BM25STD (Okapi BM25), DISMAX and
//! DOCSCORE. A shard reports each hit's matched terms (`Term`) and its document's
//! figures (`DocStats`); the node adds every shard's counts (`NodeStats`) and scores
//! here, so a score never depends on the shard count. Pure arithmetic: never reads an
//! index, data or a clock. Constants and float widths follow RediSearch's C (its `k1`
//! and `b` are `float`s, so are some intermediate sums), which is what makes scores
//! equal to the last bit rather than close.

use std::collections::HashMap;

use super::index::Term;

/// BM25's `k1` and `b`, as RediSearch declares them (`static const float`).
const K1: f32 = 1.2;
const B: f32 = 0.5;

/// A scoring function RediSearch names (FT.SEARCH `SCORER name`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Scorer {
    /// Sum of `tf * idf` over the matched terms, divided by the document's highest
    /// term frequency and by the distance between the matched terms (slop).
    #[default]
    Tfidf,
    /// TFIDF divided by the document's length (its weighted word count) instead.
    TfidfDocnorm,
    /// RediSearch's legacy BM25: `idf * f / (f + k1 * (1 - b + b * avgDocLen))`, the
    /// TFIDF idf, no document length, divided by the slop.
    Bm25,
    /// Okapi BM25 with RediSearch's BM25 idf; no slop.
    Bm25Std,
    /// A term counts its frequency; intersections add, unions take the highest.
    Dismax,
    /// The document's score (FT.CREATE's SCORE or SCORE_FIELD).
    DocScore,
}

impl Scorer {
    /// A SCORER argument; HAMMING (payloads, which Meridian does not keep) is refused
    /// by name, an unknown name with RediSearch's error.
    pub fn parse(name: &[u8]) -> Result<Scorer, String> {
        const NAMES: [(&str, Scorer); 6] = [
            ("TFIDF", Scorer::Tfidf),
            ("TFIDF.DOCNORM", Scorer::TfidfDocnorm),
            ("BM25", Scorer::Bm25),
            ("BM25STD", Scorer::Bm25Std),
            ("DISMAX", Scorer::Dismax),
            ("DOCSCORE", Scorer::DocScore),
        ];
        if let Some((_, scorer)) = NAMES.iter().find(|(n, _)| n.as_bytes() == name) {
            return Ok(*scorer);
        }
        if name == b"HAMMING" {
            return Err("SCORER HAMMING is not supported by Meridian (document payloads are not kept)".into());
        }
        Err(format!("No such scorer {}", String::from_utf8_lossy(name)))
    }

    /// Whether a hit's score needs the document's own figures beyond its terms (so two
    /// hits matching through the same terms may still score differently).
    pub fn per_document(self) -> bool {
        !matches!(self, Scorer::Bm25)
    }
}

/// What a shard knows of one hit's document.
#[derive(Clone, Debug, PartialEq)]
pub struct DocStats {
    /// The highest frequency of a term in the document (at least 1).
    pub max_freq: u32,
    /// The distance between the query's matched terms (RediSearch's slop, at least 1).
    pub slop: u32,
    /// The document's length: each word counts its field's weight (at least 1), stems
    /// nothing (RediSearch's `len`).
    pub len: u32,
    /// The document's score (1.0 unless FT.CREATE's SCORE or SCORE_FIELD say otherwise).
    pub score: f64,
    /// The DISMAX score, computed on the shard (it needs the query's tree, and no
    /// node-wide count); 0 unless that scorer was asked for.
    pub dismax: f64,
}

impl Default for DocStats {
    fn default() -> DocStats {
        DocStats { max_freq: 1, slop: 1, len: 0, score: 1.0, dismax: 0.0 }
    }
}

/// What the node adds up over its shards.
pub struct NodeStats<'a> {
    /// Documents in the index.
    pub docs: usize,
    /// The sum of their lengths (`DocStats::len`).
    pub total_len: u64,
    /// Per term: the documents having it.
    pub counts: &'a HashMap<Term, usize>,
}

impl NodeStats<'_> {
    fn df(&self, term: &Term) -> usize {
        let key = match term {
            Term::Text(text, _) => Term::Text(text.clone(), 0),
            other => other.clone(),
        };
        self.counts.get(&key).copied().unwrap_or(1)
    }

    /// RediSearch's TFIDF idf: `floor(log2(1 + N / df))`, N its doc table's size (the
    /// documents plus one).
    fn idf(&self, df: usize) -> f64 {
        (1.0 + (self.docs + 1) as f64 / df.max(1) as f64).log2().floor().max(0.0)
    }

    /// RediSearch's BM25 idf, `ln(1 + (N - df + 0.5) / (df + 0.5))`, N the documents,
    /// the fraction computed in `float` as its C does.
    fn bm25_idf(&self, df: usize) -> f64 {
        let fraction = (self.docs.saturating_sub(df) as f32 + 0.5) / (df as f32 + 0.5);
        f64::from(1.0f32 + fraction).ln()
    }

    fn avg_len(&self) -> f64 {
        if self.docs == 0 { 0.0 } else { self.total_len as f64 / self.docs as f64 }
    }
}

/// A hit's relevance score under `scorer`.
pub fn score(scorer: Scorer, terms: &[Term], doc: &DocStats, node: &NodeStats) -> f64 {
    match scorer {
        Scorer::Tfidf | Scorer::TfidfDocnorm => {
            if doc.score == 0.0 {
                return 0.0;
            }
            let sum: f64 = terms
                .iter()
                .map(|term| match term {
                    Term::All | Term::Range => 1.0,
                    Term::Tag(..) => node.idf(node.df(term)),
                    Term::Text(_, freq) => f64::from(*freq) * node.idf(node.df(term)),
                })
                .sum();
            let norm = if scorer == Scorer::Tfidf { doc.max_freq } else { doc.len };
            // RediSearch drops a score below its heap's lowest (0 at first) to 0.
            (doc.score * sum / f64::from(norm.max(1))).max(0.0) / f64::from(doc.slop.max(1))
        }
        Scorer::Bm25 => {
            let k = f64::from(K1) * (f64::from(1.0 - B) + f64::from(B) * node.avg_len());
            let sum: f64 = terms
                .iter()
                .map(|term| match term {
                    Term::All | Term::Range => 1.0 / (1.0 + k),
                    Term::Tag(..) => node.idf(node.df(term)) / (1.0 + k),
                    Term::Text(_, freq) => {
                        let f = f64::from(*freq);
                        node.idf(node.df(term)) * f / (f + k)
                    }
                })
                .sum();
            (doc.score * sum).max(0.0) / f64::from(doc.slop.max(1))
        }
        Scorer::Bm25Std => {
            let avg = node.avg_len();
            let bm25 = |idf: f64, f: f64| {
                let len = f64::from(B * doc.len as f32) / avg;
                idf * f * f64::from(K1 + 1.0) / (f + f64::from(K1) * (f64::from(1.0 - B) + len))
            };
            let sum: f64 = terms
                .iter()
                .map(|term| match term {
                    Term::All => bm25(1.0, 1.0),
                    Term::Range => 0.0,
                    Term::Tag(..) => bm25(node.bm25_idf(node.df(term)), 1.0),
                    Term::Text(_, freq) => bm25(node.bm25_idf(node.df(term)), f64::from(*freq)),
                })
                .sum();
            doc.score * sum
        }
        Scorer::Dismax => doc.dismax,
        Scorer::DocScore => doc.score,
    }
}

/// A score as RediSearch's RESP2 reply prints it: the shortest text that reads back as
/// the same double (Redis's `%.17g` successor), exponents as C prints them.
pub fn format_relevance(value: f64) -> String {
    if value == 0.0 || !value.is_finite() || (1e-5..1e17).contains(&value.abs()) {
        return if value.is_infinite() { if value > 0.0 { "inf".into() } else { "-inf".into() } } else { format!("{value}") };
    }
    let text = format!("{value:e}");
    match text.split_once('e') {
        Some((mantissa, exp)) => {
            let exp: i32 = exp.parse().unwrap_or(0);
            format!("{mantissa}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs())
        }
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn node(docs: usize, total_len: u64, counts: &[(Term, usize)]) -> (usize, u64, HashMap<Term, usize>) {
        (docs, total_len, counts.iter().cloned().collect())
    }

    /// Figures taken from RediSearch 2.10.5 on three documents (title TEXT WEIGHT 2,
    /// body TEXT NOSTEM, k TAG): d:1 "hello world running" / "foo bar" (len 8), d:2
    /// "hello" / "hello hello runs" (len 5), d:3 "the quick fox" / "jumps" (len 5).
    #[test]
    fn scores_equal_redisearch_to_the_last_bit() {
        let hello = Bytes::from_static(b"hello");
        let (docs, total_len, counts) = node(3, 18, &[(Term::Text(hello.clone(), 0), 2), (Term::Tag(0, Bytes::from_static(b"a")), 2)]);
        let stats = NodeStats { docs, total_len, counts: &counts };
        let d2 = DocStats { max_freq: 4, slop: 1, len: 5, score: 1.0, dismax: 4.0 };
        let d1 = DocStats { max_freq: 2, slop: 1, len: 8, score: 1.0, dismax: 2.0 };
        let hit = [Term::Text(hello.clone(), 4)];
        assert_eq!(format_relevance(score(Scorer::Bm25, &hit, &d2, &stats)), "0.4878048681205829");
        assert_eq!(format_relevance(score(Scorer::Bm25, &[Term::Text(hello.clone(), 2)], &d1, &stats)), "0.3225806364779916");
        assert_eq!(format_relevance(score(Scorer::Bm25, &[Term::All], &d1, &stats)), "0.19230768613561391");
        assert_eq!(format_relevance(score(Scorer::Bm25Std, &hit, &d2, &stats)), "0.8109866907236243");
        assert_eq!(format_relevance(score(Scorer::Bm25Std, &[Term::Text(hello, 2)], &d1, &stats)), "0.6082400133036425");
        assert_eq!(format_relevance(score(Scorer::Bm25Std, &[Term::All], &d1, &stats)), "0.9166666652869296");
        let d3 = DocStats { max_freq: 2, slop: 1, len: 5, score: 1.0, dismax: 1.0 };
        assert_eq!(format_relevance(score(Scorer::Bm25Std, &[Term::Tag(0, Bytes::from_static(b"a"))], &d3, &stats)), "0.49238477048215173");
        assert_eq!(score(Scorer::Bm25Std, &[Term::Range], &d3, &stats), 0.0, "a numeric range adds nothing to BM25STD");
        assert_eq!(format_relevance(score(Scorer::TfidfDocnorm, &hit, &d2, &stats)), "0.8");
        assert_eq!(format_relevance(score(Scorer::TfidfDocnorm, &[Term::All], &d1, &stats)), "0.125");
        assert_eq!(score(Scorer::Dismax, &hit, &d2, &stats), 4.0);
        assert_eq!(score(Scorer::DocScore, &hit, &d2, &stats), 1.0);
    }

    #[test]
    fn scorer_names_are_redisearchs_and_hamming_is_refused_by_name() {
        assert_eq!(Scorer::parse(b"BM25"), Ok(Scorer::Bm25));
        assert_eq!(Scorer::parse(b"TFIDF.DOCNORM"), Ok(Scorer::TfidfDocnorm));
        assert!(Scorer::parse(b"HAMMING").is_err_and(|e| e.contains("HAMMING")));
        assert_eq!(Scorer::parse(b"FOO"), Err("No such scorer FOO".into()));
    }

    #[test]
    fn relevance_prints_as_the_shortest_round_trip() {
        assert_eq!(format_relevance(1.0), "1");
        assert_eq!(format_relevance(0.0), "0");
        assert_eq!(format_relevance(4.0 / 3.0), "1.3333333333333333");
        assert_eq!(format_relevance(1.5e-7), "1.5e-07");
    }
}
