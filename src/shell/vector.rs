//! FT.* on a node: find the index definition, fan the operation out to every shard,
//! merge the shards' answers into RediSearch's reply shapes.
//!
//! Owns the cross-shard part only: which shard holds a definition, how top-k lists
//! merge, how a page is cut. Each shard's index and search are the vector engine's
//! (`engine::vector`). Definitions are hashes under a reserved key, so they replicate
//! and persist with the data (see docs/vector.md). A query finds its definition in the
//! node's cache ([`Definitions`]; the rules of which entry is good are
//! `engine::vector::definitions`), and reads the key only when one changed.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use bytes::Bytes;

use super::fanout;
use super::shards::Shards;
use crate::command::hash::{HSetReply, HashCommand};
use crate::command::vector::{VectorCommand, error};
use crate::command::{KeyCommand, KeyspaceCommand, MultiKeyCommand};
use crate::engine::vector::aggregate::{self, AggregateQuery};
use crate::engine::vector::definitions::{Definition, DefinitionCache};
use crate::engine::vector::schema::{self, Algorithm, FieldKind, IndexDef};
use crate::engine::vector::scorer::{NodeStats, format_relevance, score};
use crate::engine::vector::text::Language;
use crate::engine::vector::{
    DEF_FIELD, DEF_KEY_PREFIX, Hit, SearchQuery, SortValue, Term, VectorOp, VectorReply, def_key, format_double, format_score,
};
use crate::protocol::Frame;
use crate::shard::{ShardOp, ShardReply};

/// Run an FT.* command. `resp3`: FT.SEARCH answers in RediSearch's RESP3 shape (a
/// map with `results`), not its RESP2 array.
pub async fn execute(access: &impl Shards, command: VectorCommand, resp3: bool) -> Frame {
    match command {
        VectorCommand::Create { name, raw } => create(access, name, raw).await,
        VectorCommand::Search { name, query } => match definition(access, &name).await {
            Ok(Some(def)) => search(access, name, def.raw.clone(), query, resp3).await,
            Ok(None) => error(format!("{}: no such index", String::from_utf8_lossy(&name))),
            Err(e) => e,
        },
        VectorCommand::Info(name) => match definition(access, &name).await {
            Ok(Some(def)) => info(access, name, def, resp3).await,
            Ok(None) => error("Unknown index name"),
            Err(e) => e,
        },
        VectorCommand::List => match list(access).await {
            Ok(names) => {
                // Indexes whose definitions are gone (dropped here or on a peer) go too.
                let keep = names.clone();
                access.run_everywhere(|| ShardOp::Vector(VectorOp::Retain(keep.clone()))).await;
                // RediSearch answers simple strings, as a set on RESP3.
                let names = names.into_iter().map(word).collect();
                if resp3 { Frame::Set(names) } else { Frame::Array(names) }
            }
            Err(e) => e,
        },
        VectorCommand::DropIndex { name, delete_docs } => drop_index(access, name, delete_docs).await,
        VectorCommand::Alter { name, fields } => alter(access, name, fields).await,
        VectorCommand::Aggregate { name, query } => match definition(access, &name).await {
            Ok(Some(def)) => aggregate(access, name, def, query, resp3).await,
            Ok(None) => error(format!("{}: no such index", String::from_utf8_lossy(&name))),
            Err(e) => e,
        },
    }
}

/// FT.ALTER ... SCHEMA ADD: the definition with the new fields appended replaces the
/// stored one; every shard then rebuilds from it, so existing documents are indexed
/// for the new fields too (and the change replicates like any definition).
async fn alter(access: &impl Shards, name: Bytes, fields: Vec<Bytes>) -> Frame {
    // Read fresh, not from the cache: the new definition is built from this one.
    let raw = match read_definition(access, &name).await {
        Ok(Some(raw)) => raw,
        Ok(None) => return error("Unknown index name"),
        Err(e) => return e,
    };
    let Some(mut args) = schema::decode_args(raw) else {
        return error("internal: undecodable index definition");
    };
    if fields.is_empty() {
        return error("Fields arguments are missing");
    }
    args.extend(fields);
    if let Err(e) = schema::parse(&args) {
        return error(e);
    }
    let raw = schema::encode_args(&args);
    let key = def_key(&name);
    let op = ShardOp::Key(KeyCommand::Hash(HashCommand::Set {
        key: key.clone(),
        pairs: vec![(Bytes::from_static(DEF_FIELD), raw.clone())],
        reply: HSetReply::Added,
    }));
    let reply = access.run_one(access.shard_of(&key), op).await.into_frame();
    if reply.is_error() {
        return reply;
    }
    match vector_replies(access.run_everywhere(|| ShardOp::Vector(VectorOp::Sync { name: name.clone(), raw: raw.clone() })).await) {
        Ok(_) => Frame::ok(),
        Err(e) => e,
    }
}

/// FT.AGGREGATE: every match's fields from the shards, then the pipeline on the node.
async fn aggregate(access: &impl Shards, name: Bytes, definition: Arc<Definition>, query: Arc<AggregateQuery>, resp3: bool) -> Frame {
    let search = Arc::new(query.search.clone());
    let raw = &definition.raw;
    let replies = match vector_replies(
        access.run_everywhere(|| ShardOp::Vector(VectorOp::Search { name: name.clone(), raw: raw.clone(), query: search.clone() })).await,
    ) {
        Ok(r) => r,
        Err(e) => return e,
    };
    let mut docs: Vec<(Bytes, Vec<(Bytes, Bytes)>)> = Vec::new();
    for reply in replies {
        if let VectorReply::Hits(found) = reply {
            docs.extend(found.hits.into_iter().filter_map(|hit| Some((hit.key, hit.fields?))));
        }
    }
    docs.sort_by(|a, b| a.0.cmp(&b.0));
    let aggregate::Answer { total, rows, warning } = match aggregate::run(&definition.def, &query.steps, &docs) {
        Ok(answer) => answer,
        Err(e) => return Frame::error(e),
    };
    fn value(v: Option<aggregate::Value>) -> Frame {
        match v {
            None => Frame::Null,
            Some(aggregate::Value::List(items)) => Frame::Array(items.into_iter().map(|i| value(Some(i))).collect()),
            Some(v) => Frame::Bulk(v.text()),
        }
    }
    if resp3 {
        let results = rows
            .into_iter()
            .map(|row| {
                let pairs = row.into_iter().map(|(k, v)| (Frame::Bulk(k), value(v))).collect();
                Frame::Map(vec![
                    (Frame::simple("extra_attributes"), Frame::Map(pairs)),
                    (Frame::simple("values"), Frame::Array(Vec::new())),
                ])
            })
            .collect();
        return resp3_results(total, results, warning);
    }
    // RESP2 has no place for the warning: RediSearch answers the rows alone.
    let mut out = vec![Frame::Integer(total as i64)];
    out.extend(rows.into_iter().map(|row| Frame::Array(row.into_iter().flat_map(|(k, v)| [Frame::Bulk(k), value(v)]).collect())));
    Frame::Array(out)
}

/// The node's decoded FT.* definitions, shared by every connection: the epoch every
/// shard bumps when a definition key changes (`Shard::announce_definitions`), and the
/// entries read at some epoch.
#[derive(Default)]
pub struct Definitions {
    epoch: Arc<AtomicU64>,
    cache: RwLock<DefinitionCache>,
}

impl Definitions {
    /// The counter a shard bumps (given to every shard before it serves).
    pub fn epoch(&self) -> Arc<AtomicU64> {
        self.epoch.clone()
    }

    /// How many definitions are cached (bounded by `INDEXES_MAX`).
    pub fn len(&self) -> usize {
        self.cache.read().map_or(0, |c| c.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The definition of index `name` (`None`: there is none): the cached one when no
/// definition key changed since it was read, else read from the shard holding the key.
async fn definition(access: &impl Shards, name: &Bytes) -> Result<Option<Arc<Definition>>, Frame> {
    let definitions = &access.state().vector_definitions;
    // Seen before the read: a change racing the read leaves the new entry stale.
    let epoch = definitions.epoch.load(Ordering::Acquire);
    if let Some(cached) = definitions.cache.read().ok().and_then(|c| c.get(name, epoch)) {
        return Ok(Some(cached));
    }
    let found = match read_definition(access, name).await? {
        None => None,
        Some(raw) => Some(Arc::new(Definition::parse(raw).map_err(error)?)),
    };
    if let Ok(mut cache) = definitions.cache.write() {
        match &found {
            Some(found) => cache.store(name.clone(), epoch, found.clone()),
            None => cache.forget(name),
        }
    }
    Ok(found)
}

/// The stored definition bytes of index `name` (`None`: there is none).
async fn read_definition(access: &impl Shards, name: &Bytes) -> Result<Option<Bytes>, Frame> {
    let key = def_key(name);
    let op = ShardOp::Key(KeyCommand::Hash(HashCommand::Get { key: key.clone(), field: Bytes::from_static(DEF_FIELD) }));
    match access.run_one(access.shard_of(&key), op).await.into_frame() {
        Frame::Bulk(raw) => Ok(Some(raw)),
        Frame::Null => Ok(None),
        Frame::Error(e) if e.starts_with(b"WRONGTYPE") => {
            Err(error(format!("The key {} is reserved for FT.* definitions", String::from_utf8_lossy(&key))))
        }
        other if other.is_error() => Err(other),
        _ => Ok(None),
    }
}

async fn list(access: &impl Shards) -> Result<Vec<Bytes>, Frame> {
    let mut pattern = DEF_KEY_PREFIX.to_vec();
    pattern.push(b'*');
    let mut names = Vec::new();
    for reply in access.run_everywhere(|| ShardOp::Keyspace(KeyspaceCommand::Keys(Bytes::from(pattern.clone())))).await {
        match reply {
            ShardReply::Keys(keys) => names.extend(keys.into_iter().map(|k| k.slice(DEF_KEY_PREFIX.len()..))),
            other => return Err(other.into_frame()),
        }
    }
    names.sort();
    Ok(names)
}

/// The shards' replies to a vector op, or the first error among them.
fn vector_replies(replies: Vec<ShardReply>) -> Result<Vec<VectorReply>, Frame> {
    replies
        .into_iter()
        .map(|r| match r {
            ShardReply::Vector(VectorReply::Error(e)) => Err(error(e)),
            ShardReply::Vector(reply) => Ok(reply),
            other => Err(other.into_frame()),
        })
        .collect()
}

async fn create(access: &impl Shards, name: Bytes, raw: Bytes) -> Frame {
    let key = def_key(&name);
    let op = ShardOp::Key(KeyCommand::Hash(HashCommand::Set {
        key: key.clone(),
        pairs: vec![(Bytes::from_static(DEF_FIELD), raw.clone())],
        reply: HSetReply::IfAbsent,
    }));
    match access.run_one(access.shard_of(&key), op).await.into_frame() {
        Frame::Integer(1) => {}
        Frame::Integer(_) => return error("Index already exists"),
        other => return other,
    }
    // Every shard builds its part now, so writes from here on are followed at once.
    match vector_replies(access.run_everywhere(|| ShardOp::Vector(VectorOp::Sync { name: name.clone(), raw: raw.clone() })).await) {
        Ok(_) => Frame::ok(),
        Err(e) => e,
    }
}

async fn drop_index(access: &impl Shards, name: Bytes, delete_docs: bool) -> Frame {
    // The stored bytes, even ones this build cannot parse: such an index can go too.
    let raw = match read_definition(access, &name).await {
        Ok(Some(raw)) => raw,
        Ok(None) => return error("Unknown Index name"),
        Err(e) => return e,
    };
    if delete_docs {
        let replies = access.run_everywhere(|| ShardOp::Vector(VectorOp::Keys { name: name.clone(), raw: raw.clone() })).await;
        let mut keys = Vec::new();
        match vector_replies(replies) {
            Ok(replies) => replies.into_iter().for_each(|r| {
                if let VectorReply::Keys(k) = r {
                    keys.extend(k)
                }
            }),
            Err(e) => return e,
        }
        if !keys.is_empty() {
            let reply = fanout::multi(access, MultiKeyCommand::Del(keys)).await;
            if reply.is_error() {
                return reply;
            }
        }
    }
    let reply = fanout::multi(access, MultiKeyCommand::Del(vec![def_key(&name)])).await;
    if reply.is_error() {
        return reply;
    }
    let keep = match list(access).await {
        Ok(names) => names,
        Err(e) => return e,
    };
    access.run_everywhere(|| ShardOp::Vector(VectorOp::Retain(keep.clone()))).await;
    Frame::ok()
}

async fn info(access: &impl Shards, name: Bytes, definition: Arc<Definition>, resp3: bool) -> Frame {
    let raw = &definition.raw;
    let replies =
        match vector_replies(access.run_everywhere(|| ShardOp::Vector(VectorOp::Info { name: name.clone(), raw: raw.clone() })).await) {
            Ok(r) => r,
            Err(e) => return e,
        };
    let (mut docs, mut failures, mut bytes, mut indexed, mut to_index) = (0usize, 0u64, 0usize, 0usize, 0usize);
    for reply in replies {
        if let VectorReply::Info { docs: d, failures: f, bytes: b, build } = reply {
            docs += d;
            failures += f;
            bytes += b;
            indexed += build.0;
            to_index += build.1;
        }
    }
    // Builds run in steps on every shard (engine/vector/build.rs).
    let indexing = indexed < to_index;
    let percent_indexed = if indexing { indexed as f64 / to_index as f64 } else { 1.0 };
    let def = &definition.def;
    // RediSearch's names and words are simple strings.
    let s = |t: &str| Frame::Simple(Bytes::copy_from_slice(t.as_bytes()));
    let attributes = def
        .fields
        .iter()
        .map(|f| {
            let mut a = vec![s("identifier"), word(f.path.clone()), s("attribute"), word(f.name.clone()), s("type")];
            match &f.kind {
                FieldKind::Vector(p) => a.extend([
                    s("VECTOR"),
                    s("algorithm"),
                    s(if p.algorithm == Algorithm::Flat { "FLAT" } else { "HNSW" }),
                    s("data_type"),
                    s(p.element.name()),
                    s("dim"),
                    Frame::Integer(p.dim as i64),
                    s("distance_metric"),
                    s(p.metric.name()),
                ]),
                FieldKind::Tag { separator, .. } => a.extend([s("TAG"), s("SEPARATOR"), word(Bytes::copy_from_slice(&[*separator]))]),
                FieldKind::Numeric => a.push(s("NUMERIC")),
                FieldKind::Text { weight, .. } => a.extend([s("TEXT"), s("WEIGHT"), Frame::bulk_str(&format_double(*weight))]),
            }
            if let FieldKind::Vector(p) = &f.kind
                && p.algorithm == Algorithm::Hnsw
            {
                a.extend([s("M"), Frame::Integer(p.m as i64), s("ef_construction"), Frame::Integer(p.ef_construction as i64)]);
            }
            let mut flags = Vec::new();
            if f.sortable {
                flags.push(s("SORTABLE"));
                if f.kind == FieldKind::Numeric {
                    flags.push(s("UNF"));
                }
            }
            if let FieldKind::Tag { case_sensitive: true, .. } = f.kind {
                flags.push(s("CASESENSITIVE"));
            }
            if let FieldKind::Text { nostem: true, .. } = f.kind {
                flags.push(s("NOSTEM"));
            }
            if resp3 {
                a.extend([s("flags"), Frame::Array(flags)]);
                Frame::Map(a.chunks_exact(2).map(|p| (p[0].clone(), p[1].clone())).collect())
            } else {
                // RESP2: RediSearch's flat list, the flags as bare words at its end.
                a.extend(flags);
                Frame::Array(a)
            }
        })
        .collect();
    let pair = |k: &str, v: Frame| (s(k), v);
    Frame::Map(vec![
        pair("index_name", word(name)),
        pair("index_options", Frame::Array(Vec::new())),
        pair("index_definition", Frame::Map(index_definition(def, resp3))),
        pair("attributes", Frame::Array(attributes)),
        pair("num_docs", Frame::Integer(docs as i64)),
        pair("max_doc_id", Frame::Integer(docs as i64)),
        pair("num_terms", Frame::Integer(0)),
        pair("num_records", Frame::Integer(docs as i64)),
        pair("vector_index_sz_mb", Frame::Double(bytes as f64 / (1 << 20) as f64)),
        pair("indexing", Frame::Integer(indexing as i64)),
        pair("percent_indexed", Frame::Double(percent_indexed)),
        pair("hash_indexing_failures", Frame::Integer(failures as i64)),
    ])
}

/// FT.INFO's `index_definition`, in RediSearch's order; a language, a score or a field
/// only when it is not the default (a score of 0 is left out too, as RediSearch does).
fn index_definition(def: &IndexDef, resp3: bool) -> Vec<(Frame, Frame)> {
    let s = Frame::simple;
    let mut out = vec![
        (s("key_type"), s("HASH")),
        (s("prefixes"), Frame::Array(if def.prefixes.is_empty() { vec![s("")] } else { def.prefixes.iter().cloned().map(word).collect() })),
    ];
    if def.language != Language::default() {
        out.push((s("default_language"), s(def.language.name())));
    }
    if let Some(field) = &def.language_field {
        out.push((s("language_field"), word(field.clone())));
    }
    if def.score != 0.0 {
        out.push((s("default_score"), if resp3 { Frame::Double(def.score) } else { Frame::bulk_str(&format_relevance(def.score)) }));
    }
    if let Some(field) = &def.score_field {
        out.push((s("score_field"), word(field.clone())));
    }
    out
}

async fn search(access: &impl Shards, name: Bytes, raw: Bytes, query: Arc<SearchQuery>, resp3: bool) -> Frame {
    let replies =
        access.run_everywhere(|| ShardOp::Vector(VectorOp::Search { name: name.clone(), raw: raw.clone(), query: query.clone() })).await;
    let replies = match vector_replies(replies) {
        Ok(r) => r,
        Err(e) => return e,
    };
    let (mut total, mut docs, mut total_len) = (0, 0, 0);
    let mut counts: HashMap<Term, usize> = HashMap::new();
    let mut hits: Vec<Hit> = Vec::new();
    for reply in replies {
        if let VectorReply::Hits(found) = reply {
            total += found.total;
            docs += found.docs;
            total_len += found.total_len;
            // A shard lists a term once per mention in the query: count it once.
            let shard: HashMap<Term, usize> = found.counts.into_iter().collect();
            for (term, count) in shard {
                *counts.entry(term).or_default() += count;
            }
            hits.extend(found.hits);
        }
    }
    // Relevance (the query's SCORER; 0 for KNN) with the node's counts.
    let node = NodeStats { docs, total_len, counts: &counts };
    let mut scored: Vec<(f64, Hit)> = hits
        .into_iter()
        .map(|hit| (if query.knn.is_some() { 0.0 } else { score(query.scorer, &hit.terms, &hit.stats, &node) }, hit))
        .collect();
    if let Some(knn) = &query.knn {
        // Each shard sent its own k nearest: the node's k nearest are among them.
        scored.sort_by(|(_, a), (_, b)| {
            a.score.unwrap_or(f32::INFINITY).total_cmp(&b.score.unwrap_or(f32::INFINITY)).then_with(|| a.key.cmp(&b.key))
        });
        scored.truncate(knn.k);
        total = scored.len();
    } else {
        // As RediSearch: most relevant first; ties in document order (here: key order).
        scored.sort_by(|(x, a), (y, b)| y.total_cmp(x).then_with(|| a.key.cmp(&b.key)));
    }
    if let Some(sort) = &query.sort_by {
        let by_score = query.distance_alias().is_some_and(|a| a.eq_ignore_ascii_case(&sort.field));
        scored.sort_by(|(_, a), (_, b)| {
            let order = if by_score {
                a.score.unwrap_or(f32::INFINITY).total_cmp(&b.score.unwrap_or(f32::INFINITY))
            } else {
                compare_sort(a.sort.as_ref(), b.sort.as_ref(), sort.ascending)
            };
            let order = if by_score && !sort.ascending { order.reverse() } else { order };
            order.then_with(|| a.key.cmp(&b.key))
        });
    }
    let page = scored.into_iter().skip(query.offset).take(query.num);
    if resp3 {
        let results = page
            .map(|(relevance, hit)| {
                let mut entry = vec![(Frame::simple("id"), Frame::Bulk(hit.key.clone()))];
                if query.with_scores {
                    entry.push((Frame::simple("score"), Frame::Double(relevance)));
                }
                if !query.nocontent {
                    let pairs = content(&query, hit).chunks_exact(2).map(|p| (p[0].clone(), p[1].clone())).collect();
                    entry.push((Frame::simple("extra_attributes"), Frame::Map(pairs)));
                }
                entry.push((Frame::simple("values"), Frame::Array(Vec::new())));
                Frame::Map(entry)
            })
            .collect();
        return resp3_results(total, results, None);
    }
    let mut out = vec![Frame::Integer(total as i64)];
    for (relevance, hit) in page {
        out.push(Frame::Bulk(hit.key.clone()));
        if query.with_scores {
            out.push(Frame::bulk_str(&format_relevance(relevance)));
        }
        if !query.nocontent {
            out.push(Frame::Array(content(&query, hit)));
        }
    }
    Frame::Array(out)
}

/// A name RediSearch sends as a simple string; a bulk string if it holds a line break
/// (a simple string cannot carry one).
fn word(name: Bytes) -> Frame {
    if name.iter().any(|&b| b == b'\r' || b == b'\n') { Frame::Bulk(name) } else { Frame::Simple(name) }
}

/// RediSearch's RESP3 envelope of FT.SEARCH and FT.AGGREGATE results (its keys are
/// simple strings).
fn resp3_results(total: usize, results: Vec<Frame>, warning: Option<String>) -> Frame {
    Frame::Map(vec![
        (Frame::simple("attributes"), Frame::Array(Vec::new())),
        (Frame::simple("total_results"), Frame::Integer(total as i64)),
        (Frame::simple("format"), Frame::simple("STRING")),
        (Frame::simple("results"), Frame::Array(results)),
        (Frame::simple("warning"), Frame::Array(warning.into_iter().map(|w| Frame::Bulk(w.into())).collect())),
    ])
}

/// Missing values sort last in either direction.
fn compare_sort(a: Option<&SortValue>, b: Option<&SortValue>, ascending: bool) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let missing = |v: Option<&SortValue>| matches!(v, None | Some(SortValue::Missing));
    match (missing(a), missing(b)) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        _ => {
            let order = match (a, b) {
                (Some(SortValue::Number(x)), Some(SortValue::Number(y))) => x.total_cmp(y),
                (Some(SortValue::Text(x)), Some(SortValue::Text(y))) => x.cmp(y),
                _ => Ordering::Equal,
            };
            if ascending { order } else { order.reverse() }
        }
    }
}

/// A hit's fields as RediSearch returns them: the distance under its alias first, then
/// the hash's fields; or exactly the RETURN list, in its order, skipping absent ones.
fn content(query: &SearchQuery, hit: Hit) -> Vec<Frame> {
    let alias = query.distance_alias().cloned();
    let score = hit.score.map(|s| Frame::bulk_str(&format_score(s)));
    let fields = hit.fields.unwrap_or_default();
    let mut out = Vec::new();
    match &query.return_fields {
        Some(names) => {
            for name in names {
                let wanted = name.strip_prefix(b"@").unwrap_or(name);
                if alias.as_deref() == Some(wanted) {
                    if let Some(score) = &score {
                        out.extend([Frame::Bulk(name.clone()), score.clone()]);
                    }
                } else if let Some((_, value)) = fields.iter().find(|(f, _)| f[..] == *wanted) {
                    out.extend([Frame::Bulk(name.clone()), Frame::Bulk(value.clone())]);
                }
            }
        }
        None => {
            if let (Some(alias), Some(score)) = (alias, score) {
                out.extend([Frame::Bulk(alias), score]);
            }
            for (field, value) in fields {
                out.extend([Frame::Bulk(field), Frame::Bulk(value)]);
            }
        }
    }
    out
}
