//! A peer cut off for longer than `--peer-horizon-ms`, on real processes: the others
//! give up on it and collect the tombstones it would otherwise hold back, and when it
//! returns anti-entropy catches it up from what they have forgotten
//! (docs/replication.md, "A peer given up on"). The queues overflow while it is away,
//! so nothing but anti-entropy can carry the removals across.

mod common;

use std::time::Duration;

use common::cluster::Cluster;
use common::{eventually, info_u64};

const CONVERGE: Duration = Duration::from_secs(40);
const HORIZON_MS: &str = "5000";
/// 64 KiB values written by each side first: 16 MiB, more than a loopback socket pair
/// holds.
const FILL_SOCKETS: usize = 256;

fn run(con: &mut redis::Connection, args: &[&str]) -> redis::Value {
    let mut cmd = redis::cmd(args[0]);
    for arg in &args[1..] {
        cmd.arg(*arg);
    }
    cmd.query(con).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

fn get(cluster: &Cluster, node: usize, key: &str) -> Option<String> {
    redis::cmd("GET").arg(key).query(&mut cluster.con(node)).unwrap()
}

fn hget(cluster: &Cluster, node: usize, key: &str, field: &str) -> Option<String> {
    redis::cmd("HGET").arg(key).arg(field).query(&mut cluster.con(node)).unwrap()
}

/// How many times node `node` (an index) connected to peer node `peer` (a node id).
fn link_connects(cluster: &Cluster, node: usize, peer: u16) -> u64 {
    let fields = common::info_fields(&mut cluster.con(node), "replication");
    let line = fields
        .iter()
        .filter(|(name, _)| name.starts_with("peer") && name[4..].parse::<u32>().is_ok())
        .map(|(_, line)| line)
        .find(|line| line.split(',').any(|f| f == format!("node_id={peer}")))
        .unwrap_or_else(|| panic!("node {} has no link to node {peer}: {fields:?}", node + 1));
    let connects = line.split(',').find_map(|f| f.strip_prefix("connects=")).expect("connects");
    connects.parse().expect("a number")
}

fn everywhere(cluster: &Cluster, what: &str, read: impl Fn(usize) -> Option<String>, expected: Option<&str>) {
    for node in 0..cluster.nodes.len() {
        assert_eq!(read(node).as_deref(), expected, "{what} on node {}", node + 1);
    }
}

fn field(cluster: &Cluster, node: usize, name: &str) -> u64 {
    info_u64(&mut cluster.con(node), "replication", name)
}

#[test]
fn a_peer_away_past_the_horizon_is_given_up_on_and_caught_up_by_anti_entropy_when_it_returns() {
    let cluster =
        Cluster::start(3, &["--anti-entropy-interval-ms", "1000", "--peer-horizon-ms", HORIZON_MS, "--repl-backlog-bytes", "64kb"]);
    let mut a = cluster.con(0);
    for i in 0..200 {
        run(&mut a, &["SET", &format!("gone{i}"), "v"]);
        run(&mut a, &["INCRBY", &format!("count{i}"), "5"]);
        run(&mut a, &["HINCRBY", "h", &format!("f{i}"), "1"]);
    }
    for i in 0..20 {
        run(&mut a, &["SET", &format!("kept{i}"), "v"]);
    }
    cluster.wait_converged(CONVERGE);
    assert_eq!((0..3).map(|n| field(&cluster, n, "peers_given_up")).collect::<Vec<_>>(), vec![0, 0, 0]);
    // Every node has caught up with every other (a delete's tombstone is collected
    // everywhere): only then does a node count its own writes as held for good.
    run(&mut a, &["SET", "warm-up", "v"]);
    run(&mut a, &["DEL", "warm-up"]);
    let tombstones = || (0..3).map(|n| field(&cluster, n, "tombstones")).collect::<Vec<_>>();
    assert!(eventually(CONVERGE, || tombstones().iter().all(|&t| t == 0)), "warm-up tombstone left: {:?}", tombstones());

    // Node 3 is cut off. A cut link stops reading, so what is already in the sockets
    // would arrive after the heal: each side first writes more than the sockets hold,
    // so that its writer blocks and what follows stays in its queue for the other.
    cluster.isolate(2);
    let mut c = cluster.con(2);
    let big = "x".repeat(64 * 1024);
    for (con, side) in [(&mut a, "a"), (&mut c, "c")] {
        let mut pipe = redis::pipe();
        for i in 0..FILL_SOCKETS {
            pipe.cmd("SET").arg(format!("fill-{side}{i}")).arg(&big).ignore();
        }
        pipe.query::<()>(con).expect("filler");
    }
    // Node 1 deletes keys and fields; node 3, unaware, writes some of them again
    // (concurrent with the removals, so those survive) and deletes keys of its own.
    // Each side then writes more than its queue for the other holds, which drops the
    // queue: only anti-entropy can carry the removals across.
    for i in 0..200 {
        run(&mut a, &["DEL", &format!("gone{i}"), &format!("count{i}")]);
    }
    for i in 0..100 {
        run(&mut a, &["HDEL", "h", &format!("f{i}")]);
    }
    run(&mut c, &["SET", "gone7", "rewritten while away"]);
    run(&mut c, &["INCRBY", "count9", "2"]);
    run(&mut c, &["HINCRBY", "h", "f5", "10"]);
    for i in 0..10 {
        run(&mut c, &["DEL", &format!("kept{i}")]);
    }
    let filler = "x".repeat(1024);
    for i in 0..100 {
        run(&mut a, &["SET", &format!("filler-a{i}"), &filler]);
        run(&mut c, &["SET", &format!("filler-c{i}"), &filler]);
    }

    // Past the horizon nodes 1 and 2 give up on node 3, node 3 on both, and each
    // collects every tombstone it holds.
    let given_up = || (0..3).map(|n| field(&cluster, n, "peers_given_up")).collect::<Vec<_>>();
    assert!(eventually(Duration::from_secs(30), || given_up() == vec![1, 1, 2]), "given up: {:?}", given_up());
    assert!(
        eventually(Duration::from_secs(30), || tombstones().iter().all(|&t| t == 0)),
        "tombstones left: {:?}\n{:#?}",
        tombstones(),
        cluster.replication_info()
    );

    assert_eq!(get(&cluster, 2, "gone8").as_deref(), Some("v"), "node 3 has not seen the delete");
    assert_eq!(get(&cluster, 0, "kept3").as_deref(), Some("v"), "nor node 1 node 3's");
    cluster.rejoin(2);
    cluster.wait_converged(CONVERGE);
    assert!(eventually(CONVERGE, || given_up() == vec![0, 0, 0]), "every peer counts again: {:?}", given_up());
    // Giving up on a peer dropped the link to it (what was in flight on it is lost;
    // the new connection resends what is unacknowledged, then compares trees): the
    // proxies kept the first connections open through the cut, so a second connection
    // is the drop's.
    for (node, peer) in [(0, 3), (1, 3), (2, 1), (2, 2)] {
        assert!(
            link_connects(&cluster, node, peer) >= 2,
            "node {} dropped its link to node {peer} on giving up: {:#?}\n{}",
            node + 1,
            cluster.replication_info()[node],
            common::read_log(&cluster.nodes[node].log)
        );
    }
    assert!(field(&cluster, 2, "absence_removals") > 0, "node 3 removed what the others had forgotten");
    // Node 3's own removals reach node 1 either by this rule or as the tombstone node 3
    // leaves when it filters node 1's stale state on arrival (sent back in its answer);
    // which comes first depends on the rounds' timing, so only the values are checked.

    // Removals made on either side while apart hold everywhere; writes concurrent with
    // them survive; nothing removed comes back.
    everywhere(&cluster, "gone8", |n| get(&cluster, n, "gone8"), None);
    everywhere(&cluster, "count8", |n| get(&cluster, n, "count8"), None);
    everywhere(&cluster, "gone7", |n| get(&cluster, n, "gone7"), Some("rewritten while away"));
    everywhere(&cluster, "count9", |n| get(&cluster, n, "count9"), Some("2"));
    everywhere(&cluster, "kept3", |n| get(&cluster, n, "kept3"), None);
    everywhere(&cluster, "kept13", |n| get(&cluster, n, "kept13"), Some("v"));
    everywhere(&cluster, "h f6", |n| hget(&cluster, n, "h", "f6"), None);
    everywhere(&cluster, "h f5", |n| hget(&cluster, n, "h", "f5"), Some("10"));
    everywhere(&cluster, "h f150", |n| hget(&cluster, n, "h", "f150"), Some("1"));
    // The fillers, 10 kept, gone7, count9 and h.
    let keys = 2 * FILL_SOCKETS as i64 + 200 + 13;
    for node in 0..3 {
        assert_eq!(redis::cmd("DBSIZE").query::<i64>(&mut cluster.con(node)).unwrap(), keys, "node {}", node + 1);
    }
    std::thread::sleep(Duration::from_secs(3));
    cluster.wait_converged(CONVERGE);
    everywhere(&cluster, "gone8", |n| get(&cluster, n, "gone8"), None);
}
