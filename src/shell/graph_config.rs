//! GRAPH.CONFIG GET|SET: the FalkorDB graph settings that mean something here, and
//! applying `RESULTSET_SIZE` to graph query replies.
//!
//! Owns the settings (per process, as FalkorDB's are per server; not replicated: a
//! setting shapes replies, never data). Never touches the graph engine: a query runs
//! and counts as it would without a limit, and only the rows a reply carries are cut,
//! as FalkorDB's statistics too count every row.

use std::sync::atomic::{AtomicI64, Ordering};

use bytes::Bytes;

use crate::command::graph::GraphConfigCommand;
use crate::protocol::Frame;
use crate::shard::ShardReply;

/// `RESULTSET_SIZE`: the most rows a query's reply carries; -1 is no limit.
static RESULTSET_SIZE: AtomicI64 = AtomicI64::new(-1);

/// The settings GET answers, in FalkorDB's order. The TIMEOUT trio is 0 (no timeout):
/// Meridian does not time queries out (a query is bounded by its row limits instead),
/// so they are read-only here.
const FIELDS: [&str; 4] = ["TIMEOUT", "TIMEOUT_DEFAULT", "TIMEOUT_MAX", "RESULTSET_SIZE"];

/// FalkorDB settings with no meaning in Meridian (its thread pools, plan cache, Bolt
/// port, memory caps...): named in their error so a client learns why.
const NOT_APPLICABLE: [&str; 16] = [
    "CACHE_SIZE",
    "ASYNC_DELETE",
    "OMP_THREAD_COUNT",
    "THREAD_COUNT",
    "VKEY_MAX_ENTITY_COUNT",
    "MAX_QUEUED_QUERIES",
    "QUERY_MEM_CAPACITY",
    "DELTA_MAX_PENDING_CHANGES",
    "NODE_CREATION_BUFFER",
    "CMD_INFO",
    "MAX_INFO_QUERIES",
    "EFFECTS_THRESHOLD",
    "BOLT_PORT",
    "DELAY_INDEXING",
    "IMPORT_FOLDER",
    "TEMP_FOLDER",
];

fn value(field: &str) -> i64 {
    if field == "RESULTSET_SIZE" { RESULTSET_SIZE.load(Ordering::Relaxed) } else { 0 }
}

/// The canonical name of a setting GET or SET may name, or the error FalkorDB's names
/// that do not apply and unknown names get.
fn field(name: &Bytes) -> Result<&'static str, Frame> {
    let upper = String::from_utf8_lossy(name).to_ascii_uppercase();
    if let Some(f) = FIELDS.iter().find(|f| **f == upper) {
        return Ok(f);
    }
    if NOT_APPLICABLE.contains(&upper.as_str()) {
        return Err(Frame::error(format!("Configuration field {upper} does not apply to Meridian")));
    }
    Err(Frame::static_error("Unknown configuration field"))
}

pub fn execute(command: &GraphConfigCommand) -> Frame {
    let pair = |f: &str| Frame::Array(vec![Frame::bulk_str(f), Frame::Integer(value(f))]);
    match command {
        GraphConfigCommand::Get(name) if name.as_ref() == b"*" => Frame::Array(FIELDS.iter().map(|f| pair(f)).collect()),
        GraphConfigCommand::Get(name) => match field(name) {
            Ok(f) => pair(f),
            Err(e) => e,
        },
        GraphConfigCommand::Set(pairs) => {
            // Every pair is checked before any is applied: a refused SET changes nothing.
            let mut sizes = Vec::with_capacity(pairs.len());
            for (name, raw) in pairs {
                let f = match field(name) {
                    Ok(f) => f,
                    Err(e) => return e,
                };
                if f != "RESULTSET_SIZE" {
                    return Frame::error(format!("Meridian does not time out graph queries: {f} cannot be set"));
                }
                let Some(n) = std::str::from_utf8(raw).ok().and_then(|t| t.parse::<i64>().ok()) else {
                    return Frame::error(format!("Failed to set config value {f} to {}", String::from_utf8_lossy(raw)));
                };
                // FalkorDB stores any negative size as -1, no limit.
                sizes.push(n.max(-1));
            }
            for n in sizes {
                RESULTSET_SIZE.store(n, Ordering::Relaxed);
            }
            Frame::ok()
        }
    }
}

/// Cut a query reply's rows to `RESULTSET_SIZE`: a result set is `[header, rows,
/// statistics]` (verbose and compact alike); a reply without rows is left alone.
pub fn limit_rows(reply: &mut ShardReply) {
    let Ok(max) = usize::try_from(RESULTSET_SIZE.load(Ordering::Relaxed)) else { return };
    let ShardReply::Frame(Frame::Array(parts)) = reply else { return };
    if parts.len() == 3
        && let Frame::Array(rows) = &mut parts[1]
    {
        rows.truncate(max);
    }
}
