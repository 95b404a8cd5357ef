//! FalkorDB's reply shapes: a result set is `[header, rows, statistics]` (or
//! `[statistics]` without RETURN); values as FalkorDB's verbose mode prints them
//! (integers as integers, floats, booleans, lists and maps as strings, nodes and edges
//! as nested `[key, value]` arrays). Pure formatting.

use super::exec::{Outcome, Stats};
use super::store::GraphView;
use super::value::Value;
use crate::protocol::Frame;

pub fn result_set(graph: &GraphView, outcome: &Outcome, elapsed_ms: f64) -> Frame {
    let stats = statistics(&outcome.stats, elapsed_ms);
    let Some(result) = &outcome.result else {
        return Frame::Array(vec![stats]);
    };
    let header = Frame::Array(result.columns.iter().map(|c| Frame::bulk_str(c)).collect());
    let rows = Frame::Array(result.rows.iter().map(|r| Frame::Array(r.iter().map(|v| value(graph, v)).collect())).collect());
    Frame::Array(vec![header, rows, stats])
}

fn statistics(s: &Stats, elapsed_ms: f64) -> Frame {
    let mut lines = Vec::new();
    for (name, n) in [
        ("Labels added", s.labels_added),
        ("Labels removed", s.labels_removed),
        ("Nodes created", s.nodes_created),
        ("Properties set", s.props_set),
        ("Properties removed", s.props_removed),
        ("Relationships created", s.rels_created),
        ("Nodes deleted", s.nodes_deleted),
        ("Relationships deleted", s.rels_deleted),
    ] {
        if n > 0 {
            lines.push(Frame::bulk_str(&format!("{name}: {n}")));
        }
    }
    // No execution plan cache: every query is parsed afresh.
    lines.push(Frame::bulk_str("Cached execution: 0"));
    lines.push(Frame::bulk_str(&format!("Query internal execution time: {elapsed_ms:.6} milliseconds")));
    Frame::Array(lines)
}

fn text(v: &Value) -> String {
    let mut out = String::new();
    v.write_text(&mut out, false);
    out
}

fn pair(key: &str, value: Frame) -> Frame {
    Frame::Array(vec![Frame::bulk_str(key), value])
}

fn props(graph: &GraphView, props: Option<&std::collections::BTreeMap<String, Value>>) -> Frame {
    let Some(props) = props else { return Frame::Array(Vec::new()) };
    Frame::Array(graph.ordered(props).into_iter().map(|(k, v)| Frame::Array(vec![Frame::bulk_str(k), value(graph, v)])).collect())
}

pub fn value(graph: &GraphView, v: &Value) -> Frame {
    match v {
        Value::Null => Frame::Null,
        Value::Int(n) => Frame::Integer(*n),
        Value::Str(s) => Frame::bulk_str(s),
        Value::Bool(_) | Value::Float(_) | Value::List(_) | Value::Map(_) => Frame::bulk_str(&text(v)),
        Value::Node(id) => {
            let node = graph.nodes.get(id);
            let labels = node.map(|n| n.labels.iter().map(|l| Frame::bulk_str(l)).collect()).unwrap_or_default();
            Frame::Array(vec![
                pair("id", Frame::Integer(id.visible())),
                pair("labels", Frame::Array(labels)),
                pair("properties", props(graph, node.map(|n| &n.props))),
            ])
        }
        Value::Edge(id) => {
            let edge = graph.edges.get(id);
            Frame::Array(vec![
                pair("id", Frame::Integer(id.visible())),
                pair("type", edge.map_or(Frame::Null, |e| Frame::bulk_str(&e.typ))),
                pair("src_node", edge.map_or(Frame::Null, |e| Frame::Integer(e.src.visible()))),
                pair("dest_node", edge.map_or(Frame::Null, |e| Frame::Integer(e.dst.visible()))),
                pair("properties", props(graph, edge.map(|e| &e.props))),
            ])
        }
    }
}
