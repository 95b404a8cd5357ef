//! Graphs across real `meridian` processes (DESIGN §5, row Graph; docs/graph.md):
//! concurrent CREATE / SET / DETACH DELETE made concurrent by cutting every peer link,
//! then healed; every node must answer the same graph, with no edge whose endpoint is
//! gone. And a graph survives a restart through the ordinary persistence.

mod common;

use common::cluster::Cluster;
use redis::Value;

fn cell(v: &Value) -> String {
    match v {
        Value::Nil => "null".to_owned(),
        Value::Int(n) => n.to_string(),
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::SimpleString(s) => s.clone(),
        Value::Array(items) => format!("[{}]", items.iter().map(cell).collect::<Vec<_>>().join(",")),
        other => format!("{other:?}"),
    }
}

/// The rows of a GRAPH.QUERY reply, each cell as text.
fn rows(cluster: &Cluster, node: usize, query: &str) -> Vec<Vec<String>> {
    let reply: Value = redis::cmd("GRAPH.QUERY").arg("g").arg(query).query(&mut cluster.con(node)).expect("GRAPH.QUERY");
    let Value::Array(parts) = reply else { panic!("not a result set: {reply:?}") };
    let Some(Value::Array(rows)) = parts.get(1) else { panic!("no rows: {parts:?}") };
    rows.iter()
        .map(|r| match r {
            Value::Array(cells) => cells.iter().map(cell).collect(),
            other => panic!("row {other:?}"),
        })
        .collect()
}

fn graph_everywhere(cluster: &Cluster, query: &str, expected: &[&[&str]]) {
    let expected: Vec<Vec<String>> = expected.iter().map(|r| r.iter().map(|c| c.to_string()).collect()).collect();
    for node in 0..cluster.nodes.len() {
        assert_eq!(rows(cluster, node, query), expected, "{query} on node {}", node + 1);
    }
}

/// Every edge's endpoints exist, seen three ways: a full scan, and counts that must agree.
fn no_dangling_edges(cluster: &Cluster) {
    for node in 0..cluster.nodes.len() {
        let edges = rows(cluster, node, "MATCH ()-[r]->() RETURN count(r)");
        let anchored = rows(cluster, node, "MATCH (a)-[r]->(b) WHERE a IS NOT NULL AND b IS NOT NULL RETURN count(r)");
        let outgoing = rows(cluster, node, "MATCH (a) OPTIONAL MATCH (a)-[r]->() RETURN count(r)");
        assert_eq!(edges, anchored, "node {}", node + 1);
        assert_eq!(edges, outgoing, "node {}", node + 1);
    }
}

#[test]
fn concurrent_create_set_and_detach_delete_converge_without_dangling_edges() {
    let cluster = Cluster::start(3, &["--persistence", "off"]);
    let q = |node: usize, query: &'static str| -> (usize, Vec<&'static str>) { (node, vec!["GRAPH.QUERY", "g", query]) };
    let concurrent = [
        // Node 1 deletes b; node 2 links a to b and sets a property of b, not having seen it.
        q(0, "MATCH (n:P {name:'b'}) DETACH DELETE n"),
        q(1, "MATCH (a:P {name:'a'}), (b:P {name:'b'}) CREATE (a)-[:K {w:1}]->(b)"),
        q(1, "MATCH (b:P {name:'b'}) SET b.v = 99"),
        // The same property set on two nodes: the later write wins.
        q(2, "MATCH (n:P {name:'c'}) SET n.v = 1"),
        q(1, "MATCH (n:P {name:'c'}) SET n.v = 2"),
        // New nodes and an edge between them on a third node.
        q(2, "CREATE (:P {name:'d'})-[:K {w:2}]->(:P {name:'e'})"),
        // An edge between two surviving nodes, made while another node deletes an old one.
        q(0, "MATCH (a:P {name:'a'}), (c:P {name:'c'}) CREATE (c)-[:K {w:3}]->(a)"),
        q(2, "MATCH (a:P {name:'a'})-[r:K {w:0}]->(c) DELETE r"),
    ];
    let concurrent: Vec<(usize, &[&str])> = concurrent.iter().map(|(n, a)| (*n, a.as_slice())).collect();
    let replies = cluster.concurrently(
        &[
            &["GRAPH.QUERY", "g", "CREATE (:P {name:'a'}), (:P {name:'b'}), (:P {name:'c'})"],
            &[
                "GRAPH.QUERY",
                "g",
                "MATCH (a:P {name:'a'}), (b:P {name:'b'}), (c:P {name:'c'}) CREATE (a)-[:K {w:0}]->(c), (b)-[:K {w:9}]->(c)",
            ],
        ],
        &concurrent,
    );
    assert!(replies.iter().all(|r| !matches!(r, Value::ServerError(_))), "{replies:?}");
    graph_everywhere(
        &cluster,
        "MATCH (n:P) RETURN n.name, n.v ORDER BY n.name",
        &[&["a", "null"], &["c", "2"], &["d", "null"], &["e", "null"]],
    );
    // a->b (to a deleted node) and b->c (detached) are gone; a->c was deleted; c->a and d->e stay.
    graph_everywhere(&cluster, "MATCH (x)-[r:K]->(y) RETURN x.name, r.w, y.name ORDER BY r.w", &[&["d", "2", "e"], &["c", "3", "a"]]);
    graph_everywhere(&cluster, "MATCH (n) RETURN count(n)", &[&["4"]]);
    no_dangling_edges(&cluster);
    for node in 0..3 {
        let kind: String = redis::cmd("TYPE").arg("g").query(&mut cluster.con(node)).expect("TYPE");
        assert_eq!(kind, "graphdata");
    }
}

#[test]
fn a_graph_delete_removes_what_it_saw_and_keeps_a_concurrent_create() {
    let cluster = Cluster::start(3, &["--persistence", "off"]);
    cluster.concurrently(
        &[&["GRAPH.QUERY", "g", "CREATE (:P {name:'old'})-[:K]->(:P {name:'older'})"]],
        &[(0, &["GRAPH.DELETE", "g"]), (1, &["GRAPH.QUERY", "g", "CREATE (:P {name:'new'})"])],
    );
    graph_everywhere(&cluster, "MATCH (n) RETURN n.name", &[&["new"]]);
    no_dangling_edges(&cluster);
    let listed: Vec<String> = redis::cmd("GRAPH.LIST").query(&mut cluster.con(2)).expect("GRAPH.LIST");
    assert_eq!(listed, vec!["g".to_owned()]);
}

#[test]
fn a_graph_survives_a_restart_through_persistence() {
    let mut cluster = Cluster::start(1, &[]);
    let mut con = cluster.con(0);
    for query in [
        "CREATE (:P {name:'a', n:1})-[:K {w:1.5}]->(:P {name:'b', tags:['x','y']})",
        "MATCH (a:P {name:'a'}) SET a.n = 2",
        "CREATE (:Gone)",
        "MATCH (g:Gone) DELETE g",
    ] {
        let _: Value = redis::cmd("GRAPH.QUERY").arg("g").arg(query).query(&mut con).expect("GRAPH.QUERY");
    }
    let _: Value = redis::cmd("WAITAOF").arg(1).arg(0).arg(10_000).query(&mut con).expect("WAITAOF");
    let query = "MATCH (a)-[r]->(b) RETURN a.name, a.n, r.w, b.name, b.tags";
    let before = rows(&cluster, 0, query);
    assert_eq!(before, vec![vec!["a", "2", "1.5", "b", "[x, y]"]]);
    cluster.kill_node(0, false);
    cluster.start_node(0);
    assert_eq!(rows(&cluster, 0, query), before);
    assert_eq!(rows(&cluster, 0, "MATCH (n) RETURN count(n)"), vec![vec!["2"]]);
}
