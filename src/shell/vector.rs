//! FT.* on a node: read the index definition, fan the operation out to every shard,
//! merge the shards' answers into RediSearch's reply shapes.
//!
//! Owns the cross-shard part only: which shard holds a definition, how top-k lists
//! merge, how a page is cut. Each shard's index and search are the vector engine's
//! (`engine::vector`). Definitions are hashes under a reserved key, so they replicate
//! and persist with the data (see docs/vector.md).

use std::sync::Arc;

use bytes::Bytes;

use super::fanout;
use super::shards::Shards;
use crate::command::hash::{HSetReply, HashCommand};
use crate::command::vector::{VectorCommand, error};
use crate::command::{KeyCommand, KeyspaceCommand, MultiKeyCommand};
use crate::engine::vector::schema::{self, Algorithm, FieldKind};
use crate::engine::vector::{DEF_FIELD, DEF_KEY_PREFIX, Hit, SearchQuery, SortValue, VectorOp, VectorReply, def_key, format_score};
use crate::protocol::Frame;
use crate::shard::{ShardOp, ShardReply};

/// Run an FT.* command. `resp3`: FT.SEARCH answers in RediSearch's RESP3 shape (a
/// map with `results`), not its RESP2 array.
pub async fn execute(access: &impl Shards, command: VectorCommand, resp3: bool) -> Frame {
    match command {
        VectorCommand::Create { name, raw } => create(access, name, raw).await,
        VectorCommand::Search { name, query } => match definition(access, &name).await {
            Ok(Some(raw)) => search(access, name, raw, query, resp3).await,
            Ok(None) => error(format!("{}: no such index", String::from_utf8_lossy(&name))),
            Err(e) => e,
        },
        VectorCommand::Info(name) => match definition(access, &name).await {
            Ok(Some(raw)) => info(access, name, raw).await,
            Ok(None) => error("Unknown index name"),
            Err(e) => e,
        },
        VectorCommand::List => match list(access).await {
            Ok(names) => {
                // Indexes whose definitions are gone (dropped here or on a peer) go too.
                let keep = names.clone();
                access.run_everywhere(|| ShardOp::Vector(VectorOp::Retain(keep.clone()))).await;
                Frame::Array(names.into_iter().map(Frame::Bulk).collect())
            }
            Err(e) => e,
        },
        VectorCommand::DropIndex { name, delete_docs } => drop_index(access, name, delete_docs).await,
    }
}

/// The stored definition of index `name` (`None`: there is none).
async fn definition(access: &impl Shards, name: &Bytes) -> Result<Option<Bytes>, Frame> {
    let key = def_key(name);
    let op = ShardOp::Key(KeyCommand::Hash(HashCommand::Get { key: key.clone(), field: Bytes::from_static(DEF_FIELD) }));
    match access.run_one(access.shard_of(&key), op).await.into_frame() {
        Frame::Bulk(raw) => Ok(Some(raw)),
        Frame::Null => Ok(None),
        Frame::Error(e) if e.starts_with(b"WRONGTYPE") => Err(error(format!("The key {} is reserved for FT.* definitions", String::from_utf8_lossy(&key)))),
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
    let raw = match definition(access, &name).await {
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

async fn info(access: &impl Shards, name: Bytes, raw: Bytes) -> Frame {
    let replies = match vector_replies(access.run_everywhere(|| ShardOp::Vector(VectorOp::Info { name: name.clone(), raw: raw.clone() })).await) {
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
    let Some(def) = schema::decode_args(raw).and_then(|args| schema::parse(&args).ok()) else {
        return error("internal: undecodable index definition");
    };
    let s = |t: &str| Frame::bulk_str(t);
    let attributes = def
        .fields
        .iter()
        .map(|f| {
            let mut a = vec![s("identifier"), Frame::Bulk(f.path.clone()), s("attribute"), Frame::Bulk(f.name.clone()), s("type")];
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
                FieldKind::Tag { separator, .. } => a.extend([s("TAG"), s("SEPARATOR"), Frame::Bulk(Bytes::copy_from_slice(&[*separator]))]),
                FieldKind::Numeric => a.push(s("NUMERIC")),
            }
            if let FieldKind::Vector(p) = &f.kind
                && p.algorithm == Algorithm::Hnsw
            {
                a.extend([s("M"), Frame::Integer(p.m as i64), s("ef_construction"), Frame::Integer(p.ef_construction as i64)]);
            }
            let mut flags = Vec::new();
            if f.sortable {
                flags.push(s("SORTABLE"));
            }
            if let FieldKind::Tag { case_sensitive: true, .. } = f.kind {
                flags.push(s("CASESENSITIVE"));
            }
            a.extend([s("flags"), Frame::Array(flags)]);
            // Pairs: a map in RESP3, the flat list RediSearch sends in RESP2.
            Frame::Map(a.chunks_exact(2).map(|p| (p[0].clone(), p[1].clone())).collect())
        })
        .collect();
    let pair = |k: &str, v: Frame| (s(k), v);
    Frame::Map(vec![
        pair("index_name", Frame::Bulk(name)),
        pair("index_options", Frame::Array(Vec::new())),
        pair(
            "index_definition",
            Frame::Map(vec![
                (s("key_type"), s("HASH")),
                (s("prefixes"), Frame::Array(if def.prefixes.is_empty() { vec![s("")] } else { def.prefixes.iter().cloned().map(Frame::Bulk).collect() })),
                (s("default_score"), s("1")),
            ]),
        ),
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

async fn search(access: &impl Shards, name: Bytes, raw: Bytes, query: Arc<SearchQuery>, resp3: bool) -> Frame {
    let replies = access.run_everywhere(|| ShardOp::Vector(VectorOp::Search { name: name.clone(), raw: raw.clone(), query: query.clone() })).await;
    let replies = match vector_replies(replies) {
        Ok(r) => r,
        Err(e) => return e,
    };
    let mut total = 0;
    let mut hits: Vec<Hit> = Vec::new();
    for reply in replies {
        if let VectorReply::Hits { total: t, hits: h } = reply {
            total += t;
            hits.extend(h);
        }
    }
    if let Some(knn) = &query.knn {
        // Each shard sent its own k nearest: the node's k nearest are among them.
        hits.sort_by(|a, b| a.score.unwrap_or(f32::INFINITY).total_cmp(&b.score.unwrap_or(f32::INFINITY)).then_with(|| a.key.cmp(&b.key)));
        hits.truncate(knn.k);
        total = hits.len();
    } else {
        hits.sort_by(|a, b| a.key.cmp(&b.key));
    }
    if let Some(sort) = &query.sort_by {
        let by_score = query.knn.as_ref().is_some_and(|k| k.alias.eq_ignore_ascii_case(&sort.field));
        hits.sort_by(|a, b| {
            let order = if by_score { a.score.unwrap_or(f32::INFINITY).total_cmp(&b.score.unwrap_or(f32::INFINITY)) } else { compare_sort(a.sort.as_ref(), b.sort.as_ref(), sort.ascending) };
            let order = if by_score && !sort.ascending { order.reverse() } else { order };
            order.then_with(|| a.key.cmp(&b.key))
        });
    }
    let page = hits.into_iter().skip(query.offset).take(query.num);
    if resp3 {
        let results = page
            .map(|hit| {
                let mut entry = vec![(Frame::bulk_str("id"), Frame::Bulk(hit.key.clone()))];
                if !query.nocontent {
                    let pairs = content(&query, hit).chunks_exact(2).map(|p| (p[0].clone(), p[1].clone())).collect();
                    entry.push((Frame::bulk_str("extra_attributes"), Frame::Map(pairs)));
                }
                entry.push((Frame::bulk_str("values"), Frame::Array(Vec::new())));
                Frame::Map(entry)
            })
            .collect();
        return Frame::Map(vec![
            (Frame::bulk_str("attributes"), Frame::Array(Vec::new())),
            (Frame::bulk_str("total_results"), Frame::Integer(total as i64)),
            (Frame::bulk_str("format"), Frame::bulk_str("STRING")),
            (Frame::bulk_str("results"), Frame::Array(results)),
            (Frame::bulk_str("warning"), Frame::Array(Vec::new())),
        ]);
    }
    let mut out = vec![Frame::Integer(total as i64)];
    for hit in page {
        out.push(Frame::Bulk(hit.key.clone()));
        if !query.nocontent {
            out.push(Frame::Array(content(&query, hit)));
        }
    }
    Frame::Array(out)
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
    let alias = query.knn.as_ref().map(|k| k.alias.clone());
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
