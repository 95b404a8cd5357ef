//! The graph engine (`GRAPH.*`, FalkorDB-compatible): a property graph stored in one
//! key, queried in openCypher. DESIGN §5, row Graph.
//!
//! - [`store`]: how nodes, edges, properties and labels are elements of the key (so the
//!   key-value engine's CRDT, deltas, persistence and anti-entropy carry them), and the
//!   per-query [`store::GraphView`] that never shows an edge whose endpoint is gone.
//! - [`lexer`], [`parser`], [`ast`]: openCypher text to a syntax tree.
//! - [`exec`], [`project`], [`eval`], [`functions`], [`value`]: running it.
//! - [`reply`]: FalkorDB's result-set shape.
//!
//! This module owns the GRAPH.* commands inside a shard. Like every engine it is part
//! of the deterministic core: no clock, no I/O, no global randomness (new element ids
//! come from the write's dot). It never writes anything but its own key's graph part.

pub mod ast;
pub mod eval;
pub mod exec;
pub mod functions;
pub mod index;
pub mod lexer;
pub mod parser;
pub mod project;
pub mod props;
pub mod reply;
pub mod store;
pub mod value;
pub mod view;

#[cfg(test)]
mod tests;

use std::collections::HashMap;

use bytes::Bytes;

use crate::command::graph::GraphCommand;
use crate::engine::kv::collection_writes::Part;
use crate::engine::kv::value::SetTtl;
use crate::engine::kv::{KeyKind, KvEngine, StrVal, WriteCtx, key_hash};
use crate::protocol::Frame;
use eval::{Env, Row};
use exec::Exec;
use store::GraphView;

/// Graphs kept decoded per shard, at most this many (the least recently stored goes).
const CACHED_GRAPHS_MAX: usize = 64;

/// The decoded view of recently queried graphs, each with the digest of the graph part
/// it was decoded from: a view is used only while the part's digest is unchanged (any
/// write, merge or remove changes it), so the cache never changes an answer. A query
/// takes its view out and puts it back, so a view is never copied.
#[derive(Default)]
pub struct ViewCache {
    views: std::collections::BTreeMap<Bytes, (u64, u64, GraphView)>,
    stored: u64,
}

impl ViewCache {
    fn take(&mut self, key: &[u8], digest: u64) -> Option<GraphView> {
        let (d, _, view) = self.views.remove(key)?;
        (d == digest).then_some(view)
    }

    fn put(&mut self, key: Bytes, digest: u64, view: GraphView) {
        if self.views.len() >= CACHED_GRAPHS_MAX
            && let Some(oldest) = self.views.iter().min_by_key(|(_, (_, at, _))| *at).map(|(k, _)| k.clone())
        {
            self.views.remove(&oldest);
        }
        self.stored += 1;
        // Deletes leave dead slots behind; a view mostly dead is rebuilt, bounding them.
        let view = if view.is_sparse() { view.compacted() } else { view };
        self.views.insert(key, (digest, self.stored, view));
    }
}

fn graph_digest(kv: &mut KvEngine, key: &[u8], now_ms: u64) -> Result<Option<u64>, String> {
    match kv.live(key, key_hash(key), now_ms) {
        None => Ok(None),
        Some(state) if state.kind() == Some(KeyKind::Graph) => Ok(Some(state.part(Part::Graph).map_or(0, |p| p.digest()))),
        Some(_) => Err(WRONG_TYPE.to_owned()),
    }
}

const WRONG_TYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

/// Execute a GRAPH.* command on the key it names.
pub fn command(kv: &mut KvEngine, ctx: &mut WriteCtx, cmd: GraphCommand) -> Frame {
    match cmd {
        GraphCommand::Delete(key) => {
            match kv.live(&key, key_hash(&key), ctx.now_ms).map(|s| s.kind()) {
                None => return Frame::static_error("ERR Invalid graph operation on empty key"),
                Some(Some(KeyKind::Graph)) => {}
                Some(_) => return Frame::static_error(WRONG_TYPE),
            }
            kv.del(ctx, &[key]);
            Frame::simple("OK")
        }
        GraphCommand::Explain { key, query } => match explain(kv, ctx, key, &query) {
            Ok(frame) => frame,
            Err(message) => Frame::error(message),
        },
        GraphCommand::Query { key, query, read_only, compact } => {
            let answer = if compact { Answer::Compact } else { Answer::Verbose };
            match run_query(kv, ctx, key, &query, read_only, answer) {
                Ok(frame) => frame,
                Err(message) => Frame::error(message),
            }
        }
        GraphCommand::Profile { key, query } => match run_query(kv, ctx, key, &query, false, Answer::Profile) {
            Ok(frame) => frame,
            Err(message) => Frame::error(message),
        },
    }
}

/// The keys of this shard that hold graphs (GRAPH.LIST).
pub fn graph_keys(kv: &mut KvEngine, now_ms: u64) -> Vec<Bytes> {
    let keys: Vec<Bytes> = kv.keys.iter().filter(|e| e.state().kind() == Some(KeyKind::Graph)).map(|e| e.key_to_bytes()).collect();
    keys.into_iter().filter(|k| kv.live(k, key_hash(k), now_ms).is_some()).collect()
}

/// The graph at `key` as it is now, with its digest (`None`: no graph there): the cached
/// view when its digest still matches (taken out of the cache; put it back after the
/// query), else one loaded from the stored elements.
fn current_view(kv: &mut KvEngine, key: &Bytes, now_ms: u64) -> Result<(Option<u64>, GraphView), String> {
    let digest = graph_digest(kv, key, now_ms)?;
    let view = match digest.and_then(|d| kv.graph_views.take(key, d)) {
        Some(view) => view,
        None => GraphView::load(kv.live(key, key_hash(key), now_ms).and_then(|s| s.part(Part::Graph))),
    };
    Ok((digest, view))
}

/// The query's `CYPHER name=value ...` parameters, evaluated (they may not refer to one
/// another).
fn bind_params(graph: &GraphView, parsed: &parser::Parsed) -> Result<HashMap<String, value::Value>, String> {
    let empty = HashMap::new();
    let env = Env { graph, params: &empty, matcher: None };
    let mut params = HashMap::new();
    for (name, expr) in &parsed.params {
        params.insert(name.clone(), env.eval(expr, &Row::new())?);
    }
    Ok(params)
}

/// A query's plan (GRAPH.EXPLAIN), chosen against the graph as it is now.
fn explain(kv: &mut KvEngine, ctx: &mut WriteCtx, key: Bytes, text: &[u8]) -> Result<Frame, String> {
    let text = std::str::from_utf8(text).map_err(|_| "errMsg: the query is not valid UTF-8".to_owned())?;
    let parsed = parser::parse(text).map_err(|e| format!("errMsg: {e}"))?;
    exec::check_scopes(&parsed.query)?;
    let (digest, graph) = current_view(kv, &key, ctx.now_ms)?;
    let params = bind_params(&graph, &parsed)?;
    let exec = Exec::new(graph, params, (0, 0));
    let lines = exec.explain(&parsed.query);
    if let Some(digest) = digest {
        kv.graph_views.put(key, digest, exec.graph);
    }
    Ok(Frame::Array(lines.iter().map(|l| Frame::bulk_str(l)).collect()))
}

/// What a query run answers.
#[derive(Copy, Clone, PartialEq)]
enum Answer {
    /// FalkorDB's verbose result set.
    Verbose,
    /// `--compact`: FalkorDB's compact result set.
    Compact,
    /// GRAPH.PROFILE: the plan with the records each operation produced.
    Profile,
}

/// Run a query (GRAPH.QUERY, GRAPH.RO_QUERY, GRAPH.PROFILE: a profiled query writes as
/// any other, as FalkorDB's does).
fn run_query(kv: &mut KvEngine, ctx: &mut WriteCtx, key: Bytes, text: &[u8], read_only: bool, answer: Answer) -> Result<Frame, String> {
    let text = std::str::from_utf8(text).map_err(|_| "errMsg: the query is not valid UTF-8".to_owned())?;
    let parsed = parser::parse(text).map_err(|e| format!("errMsg: {e}"))?;
    let writes = parsed.query.clauses.iter().any(|c| c.is_write());
    if read_only && writes {
        return Err("graph.RO_QUERY is to be executed only on read-only queries".to_owned());
    }
    let (_, graph) = current_view(kv, &key, ctx.now_ms)?;
    let params = bind_params(&graph, &parsed)?;
    // New element ids are made from a dot of this node's clock: unique in the cluster.
    // The elements the query writes carry this dot too.
    let dot = writes.then(|| ctx.next_dot());
    let id_base = dot.map_or((0, 0), |dot| (dot.hlc.0, dot.node));
    let mut exec = Exec::new(graph, params, id_base);
    // The plan is chosen against the graph before the query changes it, as FalkorDB's is.
    let plan = (answer == Answer::Profile).then(|| {
        exec.start_profiling();
        exec.plan_for_profile(&parsed.query)
    });
    let outcome = exec.run(&parsed.query)?;
    let (names, values) = std::mem::take(&mut exec.writes).into_parts();
    if let Some(dot) = dot.filter(|_| !names.is_empty()) {
        kv.write_elements_at(ctx, dot, key.clone(), Part::Graph, &names, false, |i, dot, _, element| match &values[i] {
            Some(value) => element.set(dot, StrVal::raw(value.clone()), SetTtl::Keep),
            None => element.delete(dot),
        });
    }
    // The core reads no clock: the shell puts the execution time in.
    let frame = match answer {
        Answer::Profile => {
            let counts = exec.take_counts();
            let lines = plan.map(|plan| exec.profile(&plan, &counts)).unwrap_or_default();
            Frame::Array(lines.iter().map(|l| Frame::bulk_str(l)).collect())
        }
        Answer::Verbose | Answer::Compact => reply::result_set(&exec.graph, &outcome, answer == Answer::Compact),
    };
    // The view holds the query's own writes: it is the decoded new state.
    if let Some(digest) = graph_digest(kv, &key, ctx.now_ms)? {
        // Checked where it is cheap (small graphs, debug builds: every test).
        debug_assert!(
            exec.graph.nodes.len() + exec.graph.edge_count() > 1000
                || exec.graph == GraphView::load(kv.live(&key, key_hash(&key), ctx.now_ms).and_then(|s| s.part(Part::Graph))),
            "a graph's view after a query equals the view decoded from its new state"
        );
        kv.graph_views.put(key, digest, exec.graph);
    }
    Ok(frame)
}
