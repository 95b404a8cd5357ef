//! GRAPH.QUERY, GRAPH.RO_QUERY, GRAPH.EXPLAIN, GRAPH.PROFILE, GRAPH.DELETE and GRAPH.CONFIG: their typed form and argument checks.
//! The query text is parsed and run by the graph engine (`engine::graph`), inside the
//! shard that owns the key; GRAPH.LIST is a keyspace command.

use bytes::Bytes;

use super::table::CmdId;
use crate::protocol::Frame;

#[derive(Clone, Debug, PartialEq)]
pub enum GraphCommand {
    Query {
        key: Bytes,
        query: Bytes,
        /// GRAPH.RO_QUERY: a query that would write is refused.
        read_only: bool,
        /// `--compact`: FalkorDB's compact result encoding.
        compact: bool,
    },
    Delete(Bytes),
    /// GRAPH.EXPLAIN: the plan of a query, which is not run.
    Explain {
        key: Bytes,
        query: Bytes,
    },
    /// GRAPH.PROFILE: the query is run (its writes too) and its plan answered with the
    /// records each operation produced.
    Profile {
        key: Bytes,
        query: Bytes,
    },
}

impl GraphCommand {
    pub fn key(&self) -> &Bytes {
        match self {
            GraphCommand::Query { key, .. }
            | GraphCommand::Delete(key)
            | GraphCommand::Explain { key, .. }
            | GraphCommand::Profile { key, .. } => key,
        }
    }

    pub fn is_write(&self) -> bool {
        !matches!(self, GraphCommand::Query { read_only: true, .. } | GraphCommand::Explain { .. })
    }
}

pub fn parse(id: CmdId, a: &mut [Bytes]) -> Result<GraphCommand, Frame> {
    let key = std::mem::take(&mut a[1]);
    if id == CmdId::GraphDelete {
        return Ok(GraphCommand::Delete(key));
    }
    let query = std::mem::take(&mut a[2]);
    if id == CmdId::GraphExplain {
        return Ok(GraphCommand::Explain { key, query });
    }
    if id == CmdId::GraphProfile {
        // FalkorDB's PROFILE ignores what follows the query (`--compact`, TIMEOUT, ...).
        return Ok(GraphCommand::Profile { key, query });
    }
    let mut compact = false;
    let mut i = 3;
    // FalkorDB's trailing options: --compact, and TIMEOUT n (accepted; a query here is
    // bounded by its row limits instead).
    while i < a.len() {
        if a[i].eq_ignore_ascii_case(b"--compact") {
            compact = true;
            i += 1;
        } else if a[i].eq_ignore_ascii_case(b"timeout") && i + 1 < a.len() {
            i += 2;
        } else {
            return Err(Frame::error(format!("ERR Unknown argument '{}'", String::from_utf8_lossy(&a[i]))));
        }
    }
    Ok(GraphCommand::Query { key, query, read_only: id == CmdId::GraphRoQuery, compact })
}

/// GRAPH.CONFIG: a server setting, answered by the shell (src/shell/graph_config.rs).
#[derive(Clone, Debug, PartialEq)]
pub enum GraphConfigCommand {
    /// `GET name` or `GET *`.
    Get(Bytes),
    /// `SET name value [name value ...]`: every pair checked before any is applied.
    Set(Vec<(Bytes, Bytes)>),
}

/// FalkorDB's argument checks and error texts for GRAPH.CONFIG.
pub fn parse_config(a: &[Bytes]) -> Result<GraphConfigCommand, Frame> {
    let wrong = || Frame::static_error("ERR wrong number of arguments for 'graph.CONFIG' command");
    if a[1].eq_ignore_ascii_case(b"get") {
        return if a.len() == 3 { Ok(GraphConfigCommand::Get(a[2].clone())) } else { Err(wrong()) };
    }
    if a[1].eq_ignore_ascii_case(b"set") {
        if a.len() < 4 || !a.len().is_multiple_of(2) {
            return Err(wrong());
        }
        return Ok(GraphConfigCommand::Set(a[2..].chunks(2).map(|p| (p[0].clone(), p[1].clone())).collect()));
    }
    Err(Frame::static_error("Unknown subcommand for GRAPH.CONFIG"))
}
