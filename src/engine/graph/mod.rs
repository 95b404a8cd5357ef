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
pub mod lexer;
pub mod parser;
pub mod project;
pub mod reply;
pub mod store;
pub mod value;

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
        GraphCommand::Query { compact: true, .. } => Frame::static_error("ERR --compact is not supported by Meridian yet"),
        GraphCommand::Query { key, query, read_only, .. } => match run_query(kv, ctx, key, &query, read_only) {
            Ok(frame) => frame,
            Err(message) => Frame::error(message),
        },
    }
}

/// The keys of this shard that hold graphs (GRAPH.LIST).
pub fn graph_keys(kv: &mut KvEngine, now_ms: u64) -> Vec<Bytes> {
    let keys: Vec<Bytes> = kv.keys.iter().filter(|e| e.state.kind() == Some(KeyKind::Graph)).map(|e| e.key.clone()).collect();
    keys.into_iter().filter(|k| kv.live(k, key_hash(k), now_ms).is_some()).collect()
}

fn run_query(kv: &mut KvEngine, ctx: &mut WriteCtx, key: Bytes, text: &[u8], read_only: bool) -> Result<Frame, String> {
    let text = std::str::from_utf8(text).map_err(|_| "errMsg: the query is not valid UTF-8".to_owned())?;
    let parsed = parser::parse(text).map_err(|e| format!("errMsg: {e}"))?;
    let writes = parsed.query.clauses.iter().any(|c| c.is_write());
    if read_only && writes {
        return Err("graph.RO_QUERY is to be executed only on read-only queries".to_owned());
    }
    let graph = match kv.live(&key, key_hash(&key), ctx.now_ms) {
        None => GraphView::default(),
        Some(state) if state.kind() == Some(KeyKind::Graph) => GraphView::load(state.part(Part::Graph)),
        Some(_) => return Err(WRONG_TYPE.to_owned()),
    };
    let params = {
        let empty = HashMap::new();
        let env = Env { graph: &graph, params: &empty };
        let mut params = HashMap::new();
        for (name, expr) in &parsed.params {
            params.insert(name.clone(), env.eval(expr, &Row::new())?);
        }
        params
    };
    // New element ids are made from a dot of this node's clock: unique in the cluster.
    let id_base = if writes {
        let dot = ctx.next_dot();
        (dot.hlc.0, dot.node)
    } else {
        (0, 0)
    };
    let mut exec = Exec::new(graph, params, id_base);
    let outcome = exec.run(&parsed.query)?;
    let (names, values) = std::mem::take(&mut exec.writes).into_parts();
    if !names.is_empty() {
        kv.write_elements(ctx, key, Part::Graph, &names, false, |i, dot, _, element| match &values[i] {
            Some(value) => element.set(dot, StrVal::Raw(value.clone()), SetTtl::Keep),
            None => element.delete(dot),
        });
    }
    // The core reads no clock; the execution time is not measured yet.
    Ok(reply::result_set(&exec.graph, &outcome, 0.0))
}
