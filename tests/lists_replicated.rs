//! Lists across real `meridian` processes: the DESIGN §5 row List (concurrent pushes
//! and inserts end in one order everywhere, pops are at least once) and the whole-key
//! rows on lists, each made concurrent by cutting every peer link (not by timing luck),
//! then healed and checked on every node against the documented result.

mod common;

use std::time::Duration;

use common::cluster::{Cluster, run};
use common::info_fields;

const CONVERGE: Duration = Duration::from_secs(30);

fn lrange(cluster: &Cluster, node: usize, key: &str) -> Vec<String> {
    redis::cmd("LRANGE").arg(key).arg(0).arg(-1).query(&mut cluster.con(node)).expect("LRANGE")
}

fn assert_list_everywhere(cluster: &Cluster, key: &str, expected: &[&str]) {
    for node in 0..cluster.nodes.len() {
        assert_eq!(lrange(cluster, node, key), expected, "{key} on node {}", node + 1);
    }
}

fn bulk(s: &str) -> redis::Value {
    redis::Value::BulkString(s.as_bytes().to_vec())
}

#[test]
fn pushes_from_three_regions_end_in_one_order_with_every_element_everywhere() {
    let cluster = Cluster::start(3, &["--persistence", "off"]);
    cluster.concurrently(
        &[&["RPUSH", "l", "base"]],
        &[
            (0, &["RPUSH", "l", "a1", "a2"]),
            (1, &["RPUSH", "l", "b1"]),
            (2, &["LPUSH", "l", "c1"]),
            (1, &["LINSERT", "l", "AFTER", "base", "b-mid"]),
            (2, &["LINSERT", "l", "AFTER", "base", "c-mid"]),
        ],
    );
    let first = lrange(&cluster, 0, "l");
    for node in 1..3 {
        assert_eq!(lrange(&cluster, node, "l"), first, "node {} has node 1's order", node + 1);
    }
    let mut sorted = first.clone();
    sorted.sort();
    assert_eq!(sorted, ["a1", "a2", "b-mid", "b1", "base", "c-mid", "c1"], "every element once");
    let at = |e: &str| first.iter().position(|x| x == e).expect("present");
    // Each region's own writes keep their order around the element they were made at.
    assert!(at("c1") < at("base"), "{first:?}");
    assert!(at("base") < at("b-mid") && at("base") < at("c-mid"), "{first:?}");
    assert!(at("a1") + 1 == at("a2") && at("b-mid") < at("b1"), "a push's elements stay together: {first:?}");
    // Concurrent pushes at the tail order by their writes' stamps: node 1's came first.
    assert!(at("a1") < at("b1"), "{first:?}");
    // And the list keeps working from the merged order.
    run(&mut cluster.con(2), &["RPUSH", "l", "last"]);
    cluster.wait_converged(CONVERGE);
    assert_eq!(lrange(&cluster, 0, "l").last().map(String::as_str), Some("last"));
}

#[test]
fn the_same_head_popped_in_two_regions_is_returned_by_both() {
    let cluster = Cluster::start(2, &["--persistence", "off"]);
    let replies = cluster.concurrently(&[&["RPUSH", "q", "job1", "job2"]], &[(0, &["LPOP", "q"]), (1, &["LPOP", "q"])]);
    assert_eq!(replies, [bulk("job1"), bulk("job1")], "a pop is at least once across regions");
    assert_list_everywhere(&cluster, "q", &["job2"]);
    // RPOP with a count likewise; the element pushed meanwhile survives.
    let replies = cluster.concurrently(
        &[&["RPUSH", "r", "a", "b", "c"]],
        &[(0, &["RPOP", "r", "2"]), (1, &["RPOP", "r", "1"]), (1, &["RPUSH", "r", "new"])],
    );
    assert_eq!(replies[0], redis::Value::Array(vec![bulk("c"), bulk("b")]));
    assert_eq!(replies[1], redis::Value::Array(vec![bulk("c")]));
    assert_list_everywhere(&cluster, "r", &["a", "new"]);
    // LMOVE likewise: the head leaves the source once and reaches the destination twice.
    let replies = cluster.concurrently(
        &[&["RPUSH", "{q}src", "j1", "j2"]],
        &[(0, &["LMOVE", "{q}src", "{q}dst", "LEFT", "RIGHT"]), (1, &["LMOVE", "{q}src", "{q}dst", "LEFT", "RIGHT"])],
    );
    assert_eq!(replies, [bulk("j1"), bulk("j1")]);
    assert_list_everywhere(&cluster, "{q}src", &["j2"]);
    assert_list_everywhere(&cluster, "{q}dst", &["j1", "j1"]);
}

#[test]
fn a_del_keeps_a_concurrent_push() {
    let cluster = Cluster::start(3, &["--persistence", "off"]);
    cluster.concurrently(&[&["RPUSH", "l", "a", "b"]], &[(0, &["DEL", "l"]), (1, &["RPUSH", "l", "c"])]);
    assert_list_everywhere(&cluster, "l", &["c"]);
    // LTRIM removes only what it saw too.
    cluster.concurrently(&[&["RPUSH", "t", "1", "2", "3"]], &[(2, &["LTRIM", "t", "0", "0"]), (0, &["LPUSH", "t", "0"])]);
    assert_list_everywhere(&cluster, "t", &["0", "1"]);
}

#[test]
fn concurrent_lsets_of_one_element_converge_to_the_later_one() {
    let cluster = Cluster::start(3, &["--persistence", "off"]);
    cluster.concurrently(&[&["RPUSH", "l", "a", "b"]], &[(0, &["LSET", "l", "0", "x"]), (2, &["LSET", "l", "0", "y"])]);
    assert_list_everywhere(&cluster, "l", &["y", "b"]);
}

#[test]
fn lrem_removes_only_the_elements_it_saw() {
    let cluster = Cluster::start(2, &["--persistence", "off"]);
    cluster.concurrently(&[&["RPUSH", "l", "a", "b", "a"]], &[(0, &["LREM", "l", "0", "a"]), (1, &["RPUSH", "l", "a"])]);
    assert_list_everywhere(&cluster, "l", &["b", "a"]);
}

#[test]
fn lmove_and_lmpop_across_shards_replicate_both_keys() {
    let cluster = Cluster::start(2, &["--persistence", "off", "--shards", "4"]);
    run(&mut cluster.con(0), &["RPUSH", "src", "a", "b", "c"]);
    for (key, expected) in [("src", "a"), ("src", "b")] {
        assert_eq!(run(&mut cluster.con(0), &["LMOVE", key, "dst", "LEFT", "RIGHT"]), bulk(expected));
    }
    assert_eq!(run(&mut cluster.con(0), &["RPOPLPUSH", "src", "other"]), bulk("c"));
    cluster.wait_converged(CONVERGE);
    assert_eq!(
        run(&mut cluster.con(1), &["LMPOP", "3", "missing", "src", "dst", "RIGHT", "COUNT", "5"]),
        redis::Value::Array(vec![bulk("dst"), redis::Value::Array(vec![bulk("b"), bulk("a")])])
    );
    cluster.wait_converged(CONVERGE);
    assert_list_everywhere(&cluster, "src", &[]);
    assert_list_everywhere(&cluster, "dst", &[]);
    assert_list_everywhere(&cluster, "other", &["c"]);
}

#[test]
fn a_node_restarted_with_an_empty_disk_catches_its_lists_up_through_anti_entropy() {
    let mut cluster = Cluster::start(3, &["--anti-entropy-interval-ms", "1000"]);
    let mut a = cluster.con(0);
    let elements: Vec<String> = (0..500).map(|i| format!("e{i}")).collect();
    let mut push = vec!["RPUSH", "big"];
    push.extend(elements.iter().map(String::as_str));
    run(&mut a, &push);
    run(&mut a, &["RPUSH", "popped", "x", "y"]);
    cluster.wait_converged(CONVERGE);

    cluster.kill_node(2, true);
    run(&mut a, &["LPOP", "popped"]);
    run(&mut a, &["LSET", "big", "0", "changed"]);
    run(&mut cluster.con(1), &["LINSERT", "big", "AFTER", "e250", "inserted"]);
    cluster.start_node(2);
    cluster.wait_converged(CONVERGE);

    let mut expected: Vec<&str> = elements.iter().map(String::as_str).collect();
    expected[0] = "changed";
    expected.insert(251, "inserted");
    assert_list_everywhere(&cluster, "big", &expected);
    assert_list_everywhere(&cluster, "popped", &["y"]);
}

/// Segment bytes this node has stored, once nothing is pending.
fn stored_segment_bytes(con: &mut redis::Connection) -> usize {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let info = info_fields(con, "persistence");
        if info["pending_deltas"] == "0" || std::time::Instant::now() > deadline {
            return info["segment_bytes_written"].parse().expect("segment_bytes_written");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_queue_that_empties_after_every_job_while_its_peer_is_away_stores_each_job_once() {
    // Each pop's tombstone waits for the cut-off peer, and the emptied key keeps them
    // all; a refill used to rewrite (and store, and queue for the peer) that whole
    // history, so a queue that empties after every job stored O(jobs²) bytes.
    let cluster = Cluster::start(2, &[]);
    cluster.isolate(1);
    let mut con = cluster.con(0);
    let before = stored_segment_bytes(&mut con);
    const JOBS: usize = 1_500;
    for i in 0..JOBS {
        let job = format!("job-{i}");
        run(&mut con, &["LPUSH", "queue", &job]);
        assert_eq!(run(&mut con, &["RPOP", "queue"]), bulk(&job));
    }
    let written = stored_segment_bytes(&mut con) - before;
    // A push's delta and a pop's are under 100 bytes each; the old refill stored about
    // 30 bytes per earlier job on every job (~34 MB here).
    assert!(written < JOBS * 400, "{written} segment bytes for {JOBS} jobs");
    cluster.rejoin(1);
    cluster.wait_converged(CONVERGE);
    assert_list_everywhere(&cluster, "queue", &[]);
    run(&mut cluster.con(1), &["LPUSH", "queue", "after"]);
    cluster.wait_converged(CONVERGE);
    assert_list_everywhere(&cluster, "queue", &["after"]);
    assert_eq!(run(&mut con, &["RPOP", "queue"]), bulk("after"));
}
