//! FalkorDB's reply shapes: a result set is `[header, rows, statistics]` (or
//! `[statistics]` without RETURN); values as FalkorDB's verbose mode prints them
//! (integers as integers, floats, booleans, lists and maps as strings, nodes and edges
//! as nested `[key, value]` arrays), or as its `--compact` mode does (see [`compact`]).
//! Pure formatting.

use super::exec::{Outcome, Stats};
use super::store::GraphView;
use super::value::Value;
use crate::protocol::Frame;

/// The statistics line the shell rewrites with the time it measured around the query
/// (the engine reads no clock): always the last line of the statistics.
pub const TIME_LINE_PREFIX: &str = "Query internal execution time: ";

pub fn result_set(graph: &GraphView, outcome: &Outcome, compact: bool) -> Frame {
    let stats = statistics(&outcome.stats);
    let Some(result) = &outcome.result else {
        return Frame::Array(vec![stats]);
    };
    if compact {
        let schema = compact::Schema::of(graph);
        let header = Frame::Array(result.columns.iter().map(|c| Frame::Array(vec![Frame::Integer(1), Frame::bulk_str(c)])).collect());
        let rows =
            Frame::Array(result.rows.iter().map(|r| Frame::Array(r.iter().map(|v| compact::value(graph, &schema, v)).collect())).collect());
        return Frame::Array(vec![header, rows, stats]);
    }
    let header = Frame::Array(result.columns.iter().map(|c| Frame::bulk_str(c)).collect());
    let rows = Frame::Array(result.rows.iter().map(|r| Frame::Array(r.iter().map(|v| value(graph, v)).collect())).collect());
    Frame::Array(vec![header, rows, stats])
}

/// Format a measured execution time as FalkorDB's statistics line.
pub fn time_line(elapsed_ms: f64) -> String {
    format!("{TIME_LINE_PREFIX}{elapsed_ms:.6} milliseconds")
}

fn statistics(s: &Stats) -> Frame {
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
        ("Indices created", s.indices_created),
        ("Indices deleted", s.indices_deleted),
    ] {
        if n > 0 {
            lines.push(Frame::bulk_str(&format!("{name}: {n}")));
        }
    }
    // No execution plan cache: every query is parsed afresh.
    lines.push(Frame::bulk_str("Cached execution: 0"));
    // 0 until the shell, which holds the clock, puts in what it measured.
    lines.push(Frame::bulk_str(&time_line(0.0)));
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

fn props(graph: &GraphView, props: Option<&crate::engine::graph::view::Props>) -> Frame {
    let Some(props) = props else { return Frame::Array(Vec::new()) };
    Frame::Array(graph.ordered(props).into_iter().map(|(k, v)| Frame::Array(vec![Frame::bulk_str(k), value(graph, v)])).collect())
}

pub fn value(graph: &GraphView, v: &Value) -> Frame {
    match v {
        Value::Null => Frame::Null,
        Value::Int(n) => Frame::Integer(*n),
        Value::Str(s) => Frame::bulk_str(s),
        Value::Bool(_) | Value::Float(_) | Value::List(_) | Value::Map(_) | Value::Path(..) => Frame::bulk_str(&text(v)),
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
            let edge = graph.edge(*id);
            Frame::Array(vec![
                pair("id", Frame::Integer(id.visible())),
                pair("type", edge.map_or(Frame::Null, |e| Frame::bulk_str(e.typ))),
                pair("src_node", edge.map_or(Frame::Null, |e| Frame::Integer(e.src.visible()))),
                pair("dest_node", edge.map_or(Frame::Null, |e| Frame::Integer(e.dst.visible()))),
                pair("properties", props(graph, edge.map(|e| e.props))),
            ])
        }
    }
}

/// FalkorDB's compact result encoding (what its clients ask for): the header is
/// `[1, name]` per column, and every value is `[type, payload]` with FalkorDB's type
/// numbers; a node is `[id, [label index...], [[key index, type, payload]...]]` and an
/// edge `[id, type index, src id, dst id, props]`, the indexes pointing into the lists
/// `db.labels()`, `db.relationshipTypes()` and `db.propertyKeys()` answer.
mod compact {
    use std::collections::HashMap;

    use super::super::store::{GraphView, schema_order};
    use super::super::value::Value;
    use super::text;
    use crate::protocol::Frame;

    const NULL: i64 = 1;
    const STRING: i64 = 2;
    const INTEGER: i64 = 3;
    const BOOLEAN: i64 = 4;
    const DOUBLE: i64 = 5;
    const ARRAY: i64 = 6;
    const EDGE: i64 = 7;
    const NODE: i64 = 8;
    const PATH: i64 = 9;
    const MAP: i64 = 10;

    /// Each schema entry's index in its list.
    pub struct Schema<'a> {
        labels: HashMap<&'a str, i64>,
        types: HashMap<&'a str, i64>,
        attrs: HashMap<&'a str, i64>,
    }

    impl<'a> Schema<'a> {
        pub fn of(graph: &'a GraphView) -> Schema<'a> {
            let index = |entries| schema_order(entries).into_iter().enumerate().map(|(i, e)| (e, i as i64)).collect();
            Schema { labels: index(&graph.labels), types: index(&graph.types), attrs: index(&graph.attrs) }
        }
    }

    /// `[type, payload]`, as two frames (properties inline them after the key index).
    fn typed(graph: &GraphView, schema: &Schema, v: &Value) -> (i64, Frame) {
        match v {
            Value::Null => (NULL, Frame::Null),
            Value::Str(s) => (STRING, Frame::bulk_str(s)),
            Value::Int(n) => (INTEGER, Frame::Integer(*n)),
            Value::Bool(b) => (BOOLEAN, Frame::bulk_str(if *b { "true" } else { "false" })),
            Value::Float(_) => (DOUBLE, Frame::bulk_str(&text(v))),
            Value::List(items) => (ARRAY, Frame::Array(items.iter().map(|i| value(graph, schema, i)).collect())),
            // `[[ARRAY, nodes], [ARRAY, edges]]`.
            Value::Path(nodes, edges) => {
                let list = |ids: &[_], node: bool| {
                    let items =
                        ids.iter().map(|id| value(graph, schema, &if node { Value::Node(*id) } else { Value::Edge(*id) })).collect();
                    Frame::Array(vec![Frame::Integer(ARRAY), Frame::Array(items)])
                };
                (PATH, Frame::Array(vec![list(nodes, true), list(edges, false)]))
            }
            Value::Map(entries) => {
                let mut flat = Vec::with_capacity(2 * entries.len());
                for (k, v) in entries {
                    flat.push(Frame::bulk_str(k));
                    flat.push(value(graph, schema, v));
                }
                (MAP, Frame::Array(flat))
            }
            Value::Node(id) => {
                let node = graph.nodes.get(id);
                let labels = node.map(|n| n.labels.iter().map(|l| Frame::Integer(index(&schema.labels, l))).collect()).unwrap_or_default();
                let props = props(graph, schema, node.map(|n| &n.props));
                (NODE, Frame::Array(vec![Frame::Integer(id.visible()), Frame::Array(labels), props]))
            }
            Value::Edge(id) => {
                let edge = graph.edge(*id);
                let field = |f: &dyn Fn(&super::super::store::EdgeData) -> i64| edge.map_or(Frame::Null, |e| Frame::Integer(f(&e)));
                (
                    EDGE,
                    Frame::Array(vec![
                        Frame::Integer(id.visible()),
                        field(&|e| index(&schema.types, e.typ)),
                        field(&|e| e.src.visible()),
                        field(&|e| e.dst.visible()),
                        props(graph, schema, edge.map(|e| e.props)),
                    ]),
                )
            }
        }
    }

    /// An entry missing from the schema cannot come from a decoded graph (every write
    /// adds its entries); -1 makes a client fail loudly rather than misname it.
    fn index(entries: &HashMap<&str, i64>, entry: &str) -> i64 {
        entries.get(entry).copied().unwrap_or(-1)
    }

    fn props(graph: &GraphView, schema: &Schema, props: Option<&crate::engine::graph::view::Props>) -> Frame {
        let Some(props) = props else { return Frame::Array(Vec::new()) };
        Frame::Array(
            graph
                .ordered(props)
                .into_iter()
                .map(|(k, v)| {
                    let (t, payload) = typed(graph, schema, v);
                    Frame::Array(vec![Frame::Integer(index(&schema.attrs, k)), Frame::Integer(t), payload])
                })
                .collect(),
        )
    }

    pub fn value(graph: &GraphView, schema: &Schema, v: &Value) -> Frame {
        let (t, payload) = typed(graph, schema, v);
        Frame::Array(vec![Frame::Integer(t), payload])
    }
}
