//! The audit of a shard's indexes against its data: an index must equal the one
//! rebuilt from the shard's keys now (same documents with the same tags, terms,
//! numbers and vectors; same postings and term counts; same filter answers, with what
//! their scores are computed from; same exact KNN answers). The simulator runs it at
//! checkpoints and at the end of every run; tests run it after each kind of
//! maintenance.
//!
//! Owns only the comparison. Never changes an index or the data (the rebuilt index is
//! thrown away) and never reads a clock: `now_ms` is handed in.

use bytes::Bytes;

use super::build::build_whole;
use super::index::Index;
use super::query::parse_search;
use super::schema::{ElementType, FieldKind, IndexDef};
use super::{VectorEngine, expired};
use crate::engine::kv::{KvEngine, key_hash};

/// K of the audit's KNN queries: at least every document of a simulated shard, so the
/// answer is the whole ordered set (exact for HNSW too, and free of tie-breaks at the
/// k-th place, which depend on insertion order).
const AUDIT_K: usize = 1_000;
/// A shard with more documents than this is not audited by KNN order (the whole-set
/// answer needs K ≥ documents); its documents are still compared.
const AUDIT_DOCS_MAX: usize = AUDIT_K;

impl VectorEngine {
    /// `Err` names the first index that differs from its rebuild and how; `Ok`: the
    /// documents compared. An index whose first build is in progress is compared by
    /// the documents it has so far (each must equal its rebuild's).
    pub fn audit(&mut self, kv: &KvEngine, now_ms: u64) -> Result<usize, String> {
        let mut docs = 0;
        for (name, index) in self.indexes.iter_mut() {
            let mut rebuilt = Index::new(index.def.clone(), index.raw.clone());
            build_whole(&mut rebuilt, kv);
            let (mine, mut fresh) = (index.describe_documents(), rebuilt.describe_documents());
            // A first build in progress holds part of the documents: each must be right.
            let partial = self.builds.get(name).is_some_and(|b| b.shadow.is_none());
            if partial {
                fresh.retain(|key, _| mine.contains_key(key));
            }
            if mine != fresh {
                let keys: Vec<&Bytes> = mine.keys().chain(fresh.keys()).filter(|k| mine.get(*k) != fresh.get(*k)).collect();
                let first = keys.first().map(|k| format!("{k:?}: index {:?} / rebuilt {:?}", mine.get(*k), fresh.get(*k)));
                return Err(format!(
                    "index {:?}: {} documents differ from its rebuild ({} vs {} documents); first {}",
                    String::from_utf8_lossy(name),
                    keys.len(),
                    mine.len(),
                    fresh.len(),
                    first.unwrap_or_default()
                ));
            }
            docs += mine.len();
            if partial || mine.len() > AUDIT_DOCS_MAX {
                continue;
            }
            // The postings and counts must be what the documents imply: a posting left
            // behind by a delete or an update would not show in the documents.
            let (mine, fresh) = (index.describe_postings(), rebuilt.describe_postings());
            if mine != fresh {
                return Err(format!(
                    "index {:?}: postings differ from its rebuild's: {mine} / rebuilt {fresh}",
                    String::from_utf8_lossy(name)
                ));
            }
            for query in audit_queries(&index.def) {
                let args: Vec<Bytes> = query.iter().map(|a| Bytes::copy_from_slice(a)).collect();
                let parsed = parse_search(&args).map_err(|e| format!("audit query {query:?} does not parse: {e}"))?;
                let a = answer(index, &parsed, kv, now_ms);
                let b = answer(&mut rebuilt, &parsed, kv, now_ms);
                if a != b {
                    return Err(format!("index {:?} answers {query:?} with {a:?}, its rebuild with {b:?}", String::from_utf8_lossy(name)));
                }
            }
        }
        Ok(docs)
    }
}

/// Every hit (key, distance bits, and what its relevance score is computed from), the
/// total and the shard's counts, as text; or the error text.
fn answer(index: &mut Index, query: &super::SearchQuery, kv: &KvEngine, now_ms: u64) -> Result<Vec<String>, String> {
    let live = |key: &Bytes| kv.keys.get(key, key_hash(key)).is_some_and(|e| !expired(e.state(), now_ms));
    let mut read = |_: &Bytes| -> Option<Vec<(Bytes, Bytes)>> { None };
    let super::index::Found { total, hits, docs, total_len, counts } =
        index.search(query, &mut read, super::index::Live::Checked(&live))?;
    let mut out: Vec<String> =
        hits.into_iter().map(|h| format!("{:?} {:?} {:?} {:?}", h.key, h.score.map(f32::to_bits), h.terms, h.stats)).collect();
    out.push(format!("total {total} docs {docs} length {total_len} counts {counts:?}"));
    Ok(out)
}

/// FT.SEARCH argument lists over every field of `def`: everything, each tag field
/// (a match, a negation), each numeric field (a range), and each vector field (KNN
/// over everything, and under the first tag field's filter).
fn audit_queries(def: &IndexDef) -> Vec<Vec<Vec<u8>>> {
    let tail = |query: String, blob: Option<Vec<u8>>| {
        let mut args = vec![query.into_bytes()];
        if let Some(blob) = blob {
            args.extend([b"PARAMS".to_vec(), b"2".to_vec(), b"q".to_vec(), blob]);
        }
        args.extend([b"NOCONTENT".to_vec(), b"LIMIT".to_vec(), b"0".to_vec(), AUDIT_K.to_string().into_bytes()]);
        args.extend([b"DIALECT".to_vec(), b"2".to_vec()]);
        args
    };
    let name = |f: &[u8]| String::from_utf8_lossy(f).into_owned();
    let first_tag = def.fields.iter().find(|f| matches!(f.kind, FieldKind::Tag { .. })).map(|f| name(&f.name));
    let mut out = vec![tail("*".into(), None)];
    for field in &def.fields {
        let f = name(&field.name);
        // `if let`s, not a `match`: a field kind the audit has no query for (one added
        // later) is still compared through its documents.
        if matches!(field.kind, FieldKind::Tag { .. }) {
            out.push(tail(format!("@{f}:{{v1|v2|1}}"), None));
            out.push(tail(format!("-@{f}:{{v0}}"), None));
        } else if matches!(field.kind, FieldKind::Text { .. }) {
            // Terms, stems, prefixes, fuzzy and optional terms, scored (WITHSCORES:
            // each hit's terms, frequencies, length and slop are compared too).
            for query in [format!("@{f}:v1"), format!("@{f}:(v2|5)"), "v*".into(), "%v1%".into(), format!("3 ~@{f}:v0"), "-v0".into()] {
                let mut args = tail(query, None);
                args.push(b"WITHSCORES".to_vec());
                out.push(args);
            }
        } else if matches!(field.kind, FieldKind::Numeric) {
            out.push(tail(format!("@{f}:[-5 (5]"), None));
        } else if let FieldKind::Vector(p) = &field.kind {
            let one: Vec<u8> = match p.element {
                ElementType::Float32 => 1.0f32.to_le_bytes().to_vec(),
                ElementType::Float16 => half::f16::from_f32(1.0).to_le_bytes().to_vec(),
            };
            let blob: Vec<u8> = one.iter().copied().cycle().take(one.len() * p.dim).collect();
            out.push(tail(format!("*=>[KNN {AUDIT_K} @{f} $q]"), Some(blob.clone())));
            if let Some(tag) = &first_tag {
                out.push(tail(format!("(-@{tag}:{{v1}})=>[KNN {AUDIT_K} @{f} $q]"), Some(blob)));
            }
        }
    }
    out
}
