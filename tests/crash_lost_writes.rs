//! A write its node lost in a crash after it had reached one peer only (docs/replication.md,
//! "Writes a crash lost locally"), on real processes: anti-entropy brings it back to its
//! node, and its node ships it again (INFO `own_writes_shipped_back`), so the third node
//! gets it without waiting for a periodic round (here an hour away). Peers never forward
//! each other's writes. On real links the third node's own round with the restarted
//! node often ends after the write is back and carries it too, so this checks the path
//! end to end; the simulator's seeds 998 and 300 (`dst/tests/simulation.rs`) are the
//! schedules where only the second shipping delivers it, and fail without it.

mod common;

use std::time::Duration;

use common::cluster::Cluster;
use common::{eventually, info_u64};

const CONVERGE: Duration = Duration::from_secs(30);

fn get(cluster: &Cluster, node: usize, key: &str) -> Option<String> {
    redis::cmd("GET").arg(key).query(&mut cluster.con(node)).expect("GET")
}

fn link(cluster: &Cluster, from: usize, to: usize) -> &common::proxy::Proxy {
    cluster.links[from][to].as_ref().expect("a link between two nodes")
}

#[test]
fn a_write_a_crash_lost_is_shipped_again_once_anti_entropy_brings_it_back() {
    // No persistence: a killed node comes back empty, so the crash loses the write for
    // sure (with persistence it loses what its last 250 ms flush had not stored).
    let mut cluster = Cluster::start(3, &["--persistence", "off", "--anti-entropy-interval-ms", "3600000"]);
    // Every link's first round is over: from here rounds start only where one is needed.
    for node in 0..3 {
        assert!(eventually(CONVERGE, || info_u64(&mut cluster.con(node), "replication", "tombstone_gc_runs") > 0));
    }
    // Node 1 and node 3 cannot reach each other: node 1's write reaches node 2 only.
    link(&cluster, 0, 2).cut();
    link(&cluster, 2, 0).cut();
    cluster.run(0, &["SET", "k", "v"]);
    assert!(eventually(CONVERGE, || get(&cluster, 1, "k").is_some()), "node 2 has the write");
    cluster.kill_node(0, false);
    // Node 1 comes back empty. Its rounds with node 3 finish first (node 2's link is
    // slow): node 1 does not hold the write yet, so those rounds cannot carry it.
    link(&cluster, 0, 1).set_delay(Duration::from_secs(2));
    link(&cluster, 1, 0).set_delay(Duration::from_secs(2));
    link(&cluster, 0, 2).heal();
    link(&cluster, 2, 0).heal();
    cluster.start_node(0);
    assert!(eventually(CONVERGE, || get(&cluster, 0, "k").as_deref() == Some("v")), "the round with node 2 brings it back to node 1");
    assert!(info_u64(&mut cluster.con(0), "replication", "own_writes_shipped_back") >= 1);
    assert!(
        eventually(Duration::from_secs(10), || get(&cluster, 2, "k").as_deref() == Some("v")),
        "node 3 gets the write from node 1, which ships it again, well before the next periodic round"
    );
    link(&cluster, 0, 1).set_delay(Duration::ZERO);
    link(&cluster, 1, 0).set_delay(Duration::ZERO);
    cluster.wait_converged(CONVERGE);
}
