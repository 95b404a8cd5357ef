//! "Query internal execution time" for GRAPH.* replies: the graph engine is part of the
//! deterministic core and reads no clock, so the shell times the shard step that ran
//! the query and writes the measured time into the reply's last statistics line.
//!
//! Owns nothing; never changes anything in a reply but that one line.

use std::time::Instant;

use crate::command::KeyCommand;
use crate::command::graph::GraphCommand;
use crate::engine::graph::reply::{TIME_LINE_PREFIX, time_line};
use crate::protocol::Frame;
use crate::shard::{ShardOp, ShardReply};

/// Whether `op` is a graph query (the only operations worth a clock read).
pub fn is_graph_query(op: &ShardOp) -> bool {
    matches!(op, ShardOp::Key(KeyCommand::Graph(GraphCommand::Query { .. })))
}

/// Run `apply`, timing it when `timed`, and stamp the measured time into the reply.
pub fn timed(timed: bool, apply: impl FnOnce() -> ShardReply) -> ShardReply {
    if !timed {
        return apply();
    }
    let started = Instant::now();
    let mut reply = apply();
    stamp(&mut reply, started.elapsed().as_secs_f64() * 1000.0);
    reply
}

/// A result set's statistics are its last element; the time is their last line.
fn stamp(reply: &mut ShardReply, elapsed_ms: f64) {
    let ShardReply::Frame(Frame::Array(parts)) = reply else { return };
    let Some(Frame::Array(lines)) = parts.last_mut() else { return };
    if let Some(last @ Frame::Bulk(_)) = lines.last_mut()
        && matches!(last, Frame::Bulk(b) if b.starts_with(TIME_LINE_PREFIX.as_bytes()))
    {
        *last = Frame::bulk_str(&time_line(elapsed_ms));
    }
}
