//! Graph writes in replication runs (`SimConfig::graph`): the random GRAPH.QUERY
//! workload on one graph key, and the reference semantics of a replicated graph (DESIGN
//! §5 row Graph, docs/graph.md "Semantics across regions"), written without the graph
//! engine's code.
//!
//! Every node and edge the workload creates has a name of its own (property `k`, never
//! reused), so the oracle follows elements by name:
//! - a node exists once a CREATE that made it was accepted, until a DETACH DELETE that
//!   deleted it (a delete only matches a node its region holds: it always observed the
//!   creation, and nothing in this workload re-creates a node);
//! - property `x` of a node is the value of its write with the largest `(hlc, node)`
//!   (the CREATE writes 0; last writer wins);
//! - an edge exists once created, until deleted, and only while both its endpoints
//!   exist: an edge created in one region to a node deleted concurrently in another is
//!   never returned.
//!
//! What a write did is read from its reply's statistics and whether the key's context
//! gained a dot of the writer (the dot the write's elements carry); what survives is
//! decided here alone. A crash can lose accepted writes: a run with a restart checks
//! safety only (every returned element was created, no edge dangles).

use std::collections::BTreeMap;

use bytes::Bytes;
use meridian::crdt::Dot;
use meridian::protocol::Frame;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// The graph key of the workload.
pub const GRAPH_KEY: &str = "gr";
/// Writes name their targets among the most recent names: small enough that regions
/// collide on one node or edge, large enough that some elements live to the end.
const RECENT_NAMES: usize = 6;
/// Every returned row of a final read, at most (the workload creates fewer elements).
const ROWS_MAX: usize = 100_000;

/// The names the workload has handed out, in order.
#[derive(Default)]
pub struct GraphNames {
    nodes: u64,
    edges: u64,
}

fn recent(rng: &mut ChaCha8Rng, prefix: &str, issued: u64) -> String {
    let back = rng.random_range(0..RECENT_NAMES as u64).min(issued.saturating_sub(1));
    format!("{prefix}{}", issued.saturating_sub(1 + back))
}

/// One random graph command: a node created, an edge created between two recent
/// nodes, a property set, a node detach-deleted, an edge deleted, or a read.
pub fn graph_command(rng: &mut ChaCha8Rng, names: &mut GraphNames) -> Vec<Bytes> {
    let query = match rng.random_range(0..20) {
        0..=5 => {
            names.nodes += 1;
            format!("CREATE (:V {{k: 'v{}', x: 0}})", names.nodes - 1)
        }
        6..=10 => {
            names.edges += 1;
            let (a, b) = (recent(rng, "v", names.nodes), recent(rng, "v", names.nodes));
            format!("MATCH (a:V {{k: '{a}'}}), (b:V {{k: '{b}'}}) CREATE (a)-[:R {{k: 'e{}'}}]->(b)", names.edges - 1)
        }
        11..=14 => format!("MATCH (n:V {{k: '{}'}}) SET n.x = {}", recent(rng, "v", names.nodes), rng.random_range(1..100)),
        15..=16 => format!("MATCH (n:V {{k: '{}'}}) DETACH DELETE n", recent(rng, "v", names.nodes)),
        17 => format!("MATCH ()-[r:R {{k: '{}'}}]->() DELETE r", recent(rng, "e", names.edges)),
        _ => "MATCH (a)-[r]->(b) RETURN count(r)".to_owned(),
    };
    vec![Bytes::from_static(b"GRAPH.QUERY"), Bytes::from_static(GRAPH_KEY.as_bytes()), Bytes::from(query)]
}

#[derive(Clone, Debug)]
struct NodeFate {
    deleted: bool,
    /// The winning write of `x` so far: its dot and value.
    x: (Dot, i64),
}

#[derive(Clone, Debug)]
struct EdgeFate {
    src: String,
    dst: String,
    deleted: bool,
}

/// Every accepted graph write, by element name.
#[derive(Default)]
pub struct GraphOracle {
    nodes: BTreeMap<String, NodeFate>,
    edges: BTreeMap<String, EdgeFate>,
    /// A node restarted during the run: accepted writes may be lost.
    pub tainted: bool,
}

/// The statistic `name` of a write's reply (0 when absent).
fn statistic(reply: &Frame, name: &str) -> i64 {
    fn walk(frame: &Frame, prefix: &str) -> Option<i64> {
        match frame {
            Frame::Array(items) => items.iter().find_map(|i| walk(i, prefix)),
            Frame::Bulk(b) => std::str::from_utf8(b).ok()?.strip_prefix(prefix)?.trim().parse().ok(),
            Frame::Simple(s) => std::str::from_utf8(s).ok()?.strip_prefix(prefix)?.trim().parse().ok(),
            _ => None,
        }
    }
    walk(reply, &format!("{name}:")).unwrap_or(0)
}

/// The quoted names in a workload query, in order.
fn quoted(query: &str) -> Vec<&str> {
    query.split('\'').skip(1).step_by(2).collect()
}

impl GraphOracle {
    /// Record what the workload's `query` did, accepted with `dot` (None: it wrote
    /// nothing to the key).
    pub fn record(&mut self, query: &str, dot: Option<Dot>, reply: &Frame) {
        let Some(dot) = dot else { return };
        let names = quoted(query);
        if query.starts_with("CREATE (:V") && statistic(reply, "Nodes created") == 1 {
            self.nodes.insert(names[0].to_owned(), NodeFate { deleted: false, x: (dot, 0) });
        } else if query.contains("CREATE (a)-[:R") && statistic(reply, "Relationships created") == 1 {
            self.edges.insert(names[2].to_owned(), EdgeFate { src: names[0].to_owned(), dst: names[1].to_owned(), deleted: false });
        } else if let Some((_, value)) = query.split_once("SET n.x = ") {
            // The key gained a dot: the property's element was written with it.
            let (Some(node), Ok(value)) = (self.nodes.get_mut(names[0]), value.parse::<i64>()) else { return };
            if dot > node.x.0 {
                node.x = (dot, value);
            }
        } else if query.ends_with("DETACH DELETE n")
            && statistic(reply, "Nodes deleted") == 1
            && let Some(node) = self.nodes.get_mut(names[0])
        {
            node.deleted = true;
        } else if query.ends_with("DELETE r")
            && statistic(reply, "Relationships deleted") == 1
            && let Some(edge) = self.edges.get_mut(names[0])
        {
            edge.deleted = true;
        }
    }

    /// The nodes that must exist, with their `x`, by name.
    pub fn expected_nodes(&self) -> BTreeMap<String, i64> {
        self.nodes.iter().filter(|(_, n)| !n.deleted).map(|(k, n)| (k.clone(), n.x.1)).collect()
    }

    /// The edges that must be returned, with their endpoints, by name.
    pub fn expected_edges(&self) -> BTreeMap<String, (String, String)> {
        let alive = self.expected_nodes();
        self.edges
            .iter()
            .filter(|(_, e)| !e.deleted && alive.contains_key(&e.src) && alive.contains_key(&e.dst))
            .map(|(k, e)| (k.clone(), (e.src.clone(), e.dst.clone())))
            .collect()
    }

    /// Compare one node's answers (`nodes`: `[k, x]` rows; `edges`: `[k, source k,
    /// destination k]` rows) with the oracle: exactly, or, when tainted, for safety.
    pub fn check(&self, nodes: &[Vec<String>], edges: &[Vec<String>]) -> Result<(), String> {
        let actual_nodes: BTreeMap<String, String> = nodes.iter().map(|r| (r[0].clone(), r[1].clone())).collect();
        for e in edges {
            if !actual_nodes.contains_key(&e[1]) || !actual_nodes.contains_key(&e[2]) {
                return Err(format!("edge {} dangles: {:?} -> {:?} ({} live nodes)", e[0], e[1], e[2], actual_nodes.len()));
            }
        }
        let actual_edges: BTreeMap<String, (String, String)> = edges.iter().map(|r| (r[0].clone(), (r[1].clone(), r[2].clone()))).collect();
        if self.tainted {
            let unknown =
                actual_nodes.keys().find(|k| !self.nodes.contains_key(*k)).or(actual_edges.keys().find(|k| !self.edges.contains_key(*k)));
            return match unknown {
                Some(k) => Err(format!("{k} was never created")),
                None => Ok(()),
            };
        }
        let want_nodes: BTreeMap<String, String> = self.expected_nodes().into_iter().map(|(k, x)| (k, x.to_string())).collect();
        if actual_nodes != want_nodes {
            return Err(format!("graph nodes differ from the oracle:\n  node:   {actual_nodes:?}\n  oracle: {want_nodes:?}"));
        }
        let want_edges = self.expected_edges();
        if actual_edges != want_edges {
            return Err(format!("graph edges differ from the oracle:\n  node:   {actual_edges:?}\n  oracle: {want_edges:?}"));
        }
        Ok(())
    }
}

/// The final reads a node answers for [`GraphOracle::check`].
pub const READ_NODES: &str = "MATCH (n:V) RETURN n.k, n.x";
pub const READ_EDGES: &str = "MATCH (a)-[r:R]->(b) RETURN r.k, a.k, b.k";

/// A result set's rows as text (`null` for nil), or why it is not one.
pub fn rows_of(reply: &Frame) -> Result<Vec<Vec<String>>, String> {
    let cell = |f: &Frame| match f {
        Frame::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
        Frame::Simple(s) => String::from_utf8_lossy(s).into_owned(),
        Frame::Integer(i) => i.to_string(),
        Frame::Null => "null".to_owned(),
        other => format!("{other:?}"),
    };
    match reply {
        Frame::Array(parts) if parts.len() == 3 => match &parts[1] {
            Frame::Array(rows) if rows.len() <= ROWS_MAX => Ok(rows
                .iter()
                .map(|r| match r {
                    Frame::Array(cells) => cells.iter().map(cell).collect(),
                    other => vec![cell(other)],
                })
                .collect()),
            other => Err(format!("not rows: {other:?}")),
        },
        // No graph at all answers an empty result set too; anything else is wrong.
        other => Err(format!("not a result set: {other:?}")),
    }
}
