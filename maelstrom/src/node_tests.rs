//! The node state machine driven in one thread, without processes: requests in,
//! replies out, peer messages moved by hand.

use serde_json::{Value, json};

use super::Node;
use crate::message::{Envelope, PEER_FRAME_TYPE, body};
use crate::workload::Workload;

fn request(to: &str, msg_id: u64, kind: &str, fields: Value) -> Envelope {
    let mut message = body(kind, fields);
    message.insert("msg_id".into(), json!(msg_id));
    Envelope { src: "c1".into(), dest: to.into(), body: message }
}

fn cluster(workload: Workload, names: &[&str]) -> Vec<Node> {
    names
        .iter()
        .map(|name| {
            let mut node = Node::new(workload, 2);
            let reply = node.handle(request(name, 0, "init", json!({"node_id": name, "node_ids": names})), 0);
            assert_eq!(reply[0].kind(), "init_ok");
            assert_eq!(reply[0].in_reply_to(), Some(0));
            node
        })
        .collect()
}

/// One request; the reply's body.
fn ask(node: &mut Node, name: &str, kind: &str, fields: Value, now_ms: u64) -> serde_json::Map<String, Value> {
    let mut replies = node.handle(request(name, 7, kind, fields), now_ms);
    assert_eq!(replies.len(), 1);
    let reply = replies.remove(0);
    assert_eq!((reply.dest.as_str(), reply.in_reply_to()), ("c1", Some(7)));
    reply.body
}

#[test]
fn lin_kv_on_one_node_answers_maelstroms_error_codes() {
    let mut nodes = cluster(Workload::LinKv, &["n0"]);
    let node = &mut nodes[0];
    assert_eq!(ask(node, "n0", "read", json!({"key": 1}), 1)["code"], 20);
    assert_eq!(ask(node, "n0", "cas", json!({"key": 1, "from": 1, "to": 2}), 2)["code"], 20);
    assert_eq!(ask(node, "n0", "write", json!({"key": 1, "value": 5}), 3)["type"], "write_ok");
    assert_eq!(ask(node, "n0", "cas", json!({"key": 1, "from": 4, "to": 6}), 4)["code"], 22);
    assert_eq!(ask(node, "n0", "cas", json!({"key": 1, "from": 5, "to": 6}), 5)["type"], "cas_ok");
    assert_eq!(ask(node, "n0", "read", json!({"key": 1}), 6)["value"], 6);
    assert_eq!(ask(node, "n0", "cas", json!({"key": 9, "from": 0, "to": 1, "create_if_not_exists": true}), 7)["type"], "cas_ok");
    assert_eq!(ask(node, "n0", "add", json!({"delta": 1}), 8)["code"], 10, "not a lin-kv request");
}

/// Tick every node and move peer messages between them, dropping every `drop_every`th
/// (0: none), until `until_ms`.
fn exchange(nodes: &mut [Node], from_ms: u64, until_ms: u64, drop_every: usize) {
    let mut in_flight: Vec<Envelope> = Vec::new();
    let mut count = 0;
    for now in (from_ms..until_ms).step_by(10) {
        for node in nodes.iter_mut() {
            in_flight.extend(node.tick(now));
        }
        for message in std::mem::take(&mut in_flight) {
            assert_eq!(message.kind(), PEER_FRAME_TYPE);
            count += 1;
            if drop_every > 0 && count % drop_every == 0 {
                continue;
            }
            let to: usize = message.dest[1..].parse().expect("node name");
            in_flight.extend(nodes[to].handle(message, now));
        }
    }
}

#[test]
fn three_nodes_converge_on_a_set_and_a_counter_through_a_lossy_exchange() {
    let names = ["n0", "n1", "n2"];
    let mut sets = cluster(Workload::GSet, &names);
    let mut counters = cluster(Workload::PnCounter, &names);
    for i in 0..30u64 {
        let node = i as usize % 3;
        assert_eq!(ask(&mut sets[node], names[node], "add", json!({"element": i}), 1_000 + i)["type"], "add_ok");
        assert_eq!(ask(&mut counters[node], names[node], "add", json!({"delta": i as i64 - 10}), 1_000 + i)["type"], "add_ok");
        exchange(&mut sets, 1_000 + i * 10, 1_000 + i * 10 + 10, 3);
        exchange(&mut counters, 1_000 + i * 10, 1_000 + i * 10 + 10, 3);
    }
    exchange(&mut sets, 2_000, 10_000, 0);
    exchange(&mut counters, 2_000, 10_000, 0);
    let expected_sum: i64 = (0..30).map(|i| i - 10).sum();
    for node in 0..3 {
        let read = ask(&mut sets[node], names[node], "read", json!({}), 10_000);
        let mut elements: Vec<i64> = read["value"].as_array().unwrap().iter().map(|v| v.as_i64().unwrap()).collect();
        elements.sort_unstable();
        assert_eq!(elements, (0..30).collect::<Vec<_>>(), "n{node}");
        assert_eq!(ask(&mut counters[node], names[node], "read", json!({}), 10_000)["value"], expected_sum, "n{node}");
    }
}
