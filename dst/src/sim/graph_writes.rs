//! What a graph run's GRAPH.QUERY writes did (`graph.rs` holds the oracle): the key's
//! context before and after a query tells whether it wrote and with which dot; at the
//! end every node answers the final reads through its real shards, and each answer must
//! be the oracle's graph.

use bytes::Bytes;
use meridian::crdt::{Dot, VersionVector};
use meridian::protocol::Frame;

use super::Sim;
use super::writes::context_of;
use crate::graph::{GRAPH_KEY, READ_EDGES, READ_NODES, rows_of};

fn is_graph_query(args: &[Bytes]) -> bool {
    args.first().is_some_and(|a| a.eq_ignore_ascii_case(b"GRAPH.QUERY")) && args.get(1).is_some_and(|k| k.as_ref() == GRAPH_KEY.as_bytes())
}

impl Sim {
    /// The graph key's context before a graph query (None for any other command).
    pub(super) fn graph_context_before(&self, node: usize, args: &[Bytes]) -> Option<VersionVector> {
        is_graph_query(args).then(|| context_of(&self.nodes[node], GRAPH_KEY.as_bytes()))
    }

    /// Record what the graph query did: its dot is the writer's new entry in the key's
    /// context, if the query wrote at all.
    pub(super) fn record_graph_write(&mut self, node: usize, args: &[Bytes], before: Option<VersionVector>, reply: &Frame) {
        let Some(before) = before else { return };
        let n = &self.nodes[node];
        let after = context_of(n, GRAPH_KEY.as_bytes());
        let dot = (after.get(n.id) > before.get(n.id)).then(|| Dot::new(after.get(n.id), n.id));
        let query = String::from_utf8_lossy(&args[2]).into_owned();
        self.graph_oracle.record(&query, dot, reply);
    }

    /// Every node's graph, read through GRAPH.QUERY, against the oracle.
    pub(super) fn check_graphs(&mut self) {
        for node in 0..self.nodes.len() {
            let mut answers = Vec::new();
            for read in [READ_NODES, READ_EDGES] {
                let args =
                    vec![Bytes::from_static(b"GRAPH.QUERY"), Bytes::from_static(GRAPH_KEY.as_bytes()), Bytes::from_static(read.as_bytes())];
                let (reply, _) = self.execute(node, args);
                match rows_of(&reply) {
                    Ok(rows) => answers.push(rows),
                    Err(e) => {
                        self.fail(format!("n{node} answered `{read}` with {e}"));
                        return;
                    }
                }
            }
            if let Err(reason) = self.graph_oracle.check(&answers[0], &answers[1]) {
                self.fail(format!("n{node}: {reason}"));
                return;
            }
        }
        let (nodes, edges) = (self.graph_oracle.expected_nodes().len(), self.graph_oracle.expected_edges().len());
        let how = if self.graph_oracle.tainted { "safety only: a node restarted" } else { "exactly" };
        self.log(format!("checked every node's graph against the oracle ({how}): {nodes} nodes, {edges} edges"));
    }
}
