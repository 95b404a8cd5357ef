//! The text-relevance steps of the FT.* differential: RediSearch 2.10's scorers
//! (`SCORER TFIDF`, `TFIDF.DOCNORM`, `BM25`, `BM25STD`, `DISMAX`, `DOCSCORE`), fuzzy
//! terms (`%t%`, `%%t%%`), optional terms (`~t`), `SLOP n` and `INORDER`, and scored
//! prefixes (`t*`), on an index of their own (`art`, with SCORE_FIELD) over eight
//! `art:` hashes of different lengths, so that frequency, length, slop and the
//! document's score all change the order.
//!
//! Owns only its steps (its index, its documents, its queries); the comparison is the
//! parent's. Never rewrites a document: RediSearch keeps a rewritten document's old
//! length and term counts until its GC runs (docs/vector.md "Scorers"), which would
//! make BM25's scores depend on timing.

use super::{Check, Step, step};

/// The documents: a title (WEIGHT 2, stemmed), a body (NOSTEM), a tag, and for most a
/// score (SCORE_FIELD `sc`; the others take the index's SCORE 1).
const ARTICLES: [(&str, &str, &str, Option<&str>); 8] = [
    ("The quick brown fox", "a fox jumps over the lazy dog", "x", Some("0.5")),
    ("Running foxes", "foxes run and runners running far away from the brown dogs", "y", Some("0.9")),
    ("Lazy dog", "the dog sleeps all day", "x", None),
    ("Fox and hound", "hound chases fox through brown woods, fox escapes", "y", Some("0.2")),
    ("Quick thinking", "quick quick quick decisions by a brown fox", "x", Some("1")),
    ("Boxes of fog", "fax machines and box fog", "z", None),
    ("Brown bread", "bread is brown when baked, the dog eats it", "z", Some("0.7")),
    ("hello", "foxy fixes for fox and dog in the brown house", "y", None),
];

/// RediSearch 2.10's scorers but HAMMING (which needs payloads; Meridian refuses it by
/// name).
const SCORERS: [&str; 6] = ["TFIDF", "TFIDF.DOCNORM", "BM25", "BM25STD", "DISMAX", "DOCSCORE"];

/// Queries every scorer answers: a term, an intersection, a union, a term under a tag,
/// `*`, a fuzzy term, an optional term and a prefix.
const SCORED_QUERIES: [&str; 8] = ["fox", "brown fox", "fox | dog", "@tag:{x} fox", "*", "%fox%", "fox ~dog", "fo*"];

/// Fuzzy, optional and prefix queries under the default scorer (TFIDF); under
/// `@field:` the expansions' document counts are those of every field (a shard where a
/// term is only in another field still counts it).
const TERM_QUERIES: [&str; 13] = [
    "%fox%",
    "%%fox%%",
    "@title:%fog%",
    "@body:%%dogz%%",
    "%runing%",
    "fox ~dog",
    "~quick fox",
    "~hound",
    "fo*",
    "run*",
    "bro* dog",
    "@title:(quick* | lazy)",
    "@title:do*",
];

/// `(query, options)`: SLOP and INORDER over intersections, in both orders.
const NEAR_QUERIES: [(&str, &[&str]); 10] = [
    ("brown fox", &["SLOP", "0"]),
    ("fox brown", &["SLOP", "0"]),
    ("brown fox", &["SLOP", "1"]),
    ("brown fox", &["SLOP", "3"]),
    ("brown fox", &["INORDER"]),
    ("fox brown", &["INORDER"]),
    ("brown fox", &["SLOP", "2", "INORDER"]),
    ("fox brown", &["SLOP", "2", "INORDER"]),
    ("fox dog", &["SLOP", "4", "INORDER"]),
    ("fox @tag:{y}", &["SLOP", "0"]),
];

/// The index, the documents, then every query WITHSCORES, compared exactly (scores
/// and order).
pub(super) fn steps() -> Vec<Step> {
    let mut steps = vec![step(
        Check::Exact,
        &[
            b"FT.CREATE",
            b"art",
            b"PREFIX",
            b"1",
            b"art:",
            b"SCORE_FIELD",
            b"sc",
            b"SCHEMA",
            b"title",
            b"TEXT",
            b"WEIGHT",
            b"2",
            b"body",
            b"TEXT",
            b"NOSTEM",
            b"tag",
            b"TAG",
        ],
    )];
    for (i, (title, body, tag, score)) in ARTICLES.iter().enumerate() {
        let key = format!("art:{:02}", i + 1);
        let mut args: Vec<&[u8]> =
            vec![b"HSET", key.as_bytes(), b"title", title.as_bytes(), b"body", body.as_bytes(), b"tag", tag.as_bytes()];
        if let Some(score) = score {
            args.extend([b"sc" as &[u8], score.as_bytes()]);
        }
        steps.push(step(Check::Exact, &args));
    }
    for scorer in SCORERS {
        for query in SCORED_QUERIES {
            steps.push(search(query, &["SCORER", scorer]));
        }
    }
    for query in TERM_QUERIES {
        steps.push(search(query, &[]));
    }
    for (query, options) in NEAR_QUERIES {
        steps.push(search(query, options));
    }
    // Three clauses: the same matches, but RediSearch measures the slop (the score's
    // divisor) along its children sorted by their estimated result counts, Meridian in
    // query order (docs/vector.md "Missing"), so the ids compare as a set.
    for options in [&[][..], &["SLOP", "5"]] {
        let mut args: Vec<&[u8]> = vec![b"FT.SEARCH", b"art", b"quick fox dog"];
        args.extend(options.iter().map(|o| o.as_bytes()));
        args.extend([b"NOCONTENT" as &[u8], b"LIMIT", b"0", b"100", b"DIALECT", b"2"]);
        steps.push(step(Check::AnyOrder, &args));
    }
    steps
}

/// FT.SEARCH `query` on `art` with `options`, WITHSCORES, ids only, every hit.
fn search(query: &str, options: &[&str]) -> Step {
    let mut args: Vec<&[u8]> = vec![b"FT.SEARCH", b"art", query.as_bytes()];
    args.extend(options.iter().map(|o| o.as_bytes()));
    args.extend([b"WITHSCORES" as &[u8], b"NOCONTENT", b"LIMIT", b"0", b"100", b"DIALECT", b"2"]);
    step(Check::Exact, &args)
}
