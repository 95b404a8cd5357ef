//! A Jepsen-style partition cut by a real firewall: three nodes, each replicating from
//! its own loopback address (127.0.0.11-13) through a proxy that delays every byte 50 ms,
//! and iptables DROP rules between the addresses of the two sides. Unlike the proxy cut
//! of `tests/replication.rs`, the kernel drops the packets: TCP retransmits with backoff
//! and the links only notice when it gets through. Needs root (CAP_NET_ADMIN) and
//! iptables; without them the test says SKIPPED loudly and passes.

mod common;

use std::net::IpAddr;
use std::process::Command;
use std::time::{Duration, Instant};

use common::cluster::Cluster;

/// An iptables chain of this test's own, jumped to from INPUT; removed on drop.
struct Firewall {
    chain: String,
}

fn iptables(args: &[&str]) -> bool {
    Command::new("iptables").arg("-w").args(args).output().is_ok_and(|o| o.status.success())
}

impl Firewall {
    fn new() -> Option<Firewall> {
        let chain = format!("MERIDIAN_T{}", std::process::id());
        if !iptables(&["-N", &chain]) {
            return None;
        }
        if !iptables(&["-I", "INPUT", "-j", &chain]) {
            iptables(&["-X", &chain]);
            return None;
        }
        Some(Firewall { chain })
    }

    /// Drop every packet between `a` and `b`, both ways.
    fn cut(&self, a: IpAddr, b: IpAddr) {
        for (from, to) in [(a, b), (b, a)] {
            assert!(iptables(&["-A", &self.chain, "-s", &from.to_string(), "-d", &to.to_string(), "-j", "DROP"]));
        }
    }

    fn heal(&self) {
        assert!(iptables(&["-F", &self.chain]));
    }
}

impl Drop for Firewall {
    fn drop(&mut self) {
        iptables(&["-D", "INPUT", "-j", &self.chain]);
        iptables(&["-F", &self.chain]);
        iptables(&["-X", &self.chain]);
    }
}

fn get(cluster: &Cluster, node: usize, key: &str) -> Option<String> {
    redis::cmd("GET").arg(key).query(&mut cluster.con(node)).expect("GET")
}

#[test]
fn a_firewall_partition_with_50ms_links_loses_no_acknowledged_write_and_heals() {
    let Some(firewall) = Firewall::new() else {
        eprintln!("\n*** SKIPPED a_firewall_partition...: iptables is not usable here (needs root / CAP_NET_ADMIN) ***\n");
        return;
    };
    let cluster = Cluster::start_on_own_addresses(3, &["--persistence", "off", "--anti-entropy-interval-ms", "2000"]);
    cluster.set_delay(Duration::from_millis(50));
    let (mut a, mut b, mut c) = (cluster.con(0), cluster.con(1), cluster.con(2));
    redis::cmd("SET").arg("before").arg("partition").query::<()>(&mut a).unwrap();
    cluster.wait_converged(Duration::from_secs(30));

    // Node 1 alone, nodes 2 and 3 together.
    firewall.cut(Cluster::node_ip(0), Cluster::node_ip(1));
    firewall.cut(Cluster::node_ip(0), Cluster::node_ip(2));
    let mut increments = 0;
    for i in 0..300 {
        redis::cmd("SET").arg(format!("minority:{i}")).arg(i).query::<()>(&mut a).unwrap();
        redis::cmd("SET").arg(format!("majority:{i}")).arg(i).query::<()>(&mut b).unwrap();
        for con in [&mut a, &mut c] {
            redis::cmd("INCR").arg("both-sides").query::<i64>(con).unwrap();
            increments += 1;
        }
    }
    redis::cmd("DEL").arg("before").query::<i64>(&mut b).unwrap();
    assert!(common::eventually(Duration::from_secs(10), || get(&cluster, 2, "majority:299").is_some()), "the majority replicates");
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(get(&cluster, 0, "majority:0"), None, "nothing crosses the firewall");
    assert_eq!(get(&cluster, 1, "minority:0"), None, "nothing crosses the firewall");

    firewall.heal();
    let healed = Instant::now();
    cluster.wait_converged(Duration::from_secs(60));
    let took = healed.elapsed();
    assert!(took < Duration::from_secs(20), "converged {took:?} after the heal");
    for node in 0..3 {
        let mut con = cluster.con(node);
        for i in 0..300 {
            for side in ["minority", "majority"] {
                let value: Option<String> = redis::cmd("GET").arg(format!("{side}:{i}")).query(&mut con).unwrap();
                assert_eq!(value, Some(i.to_string()), "{side}:{i} on node {}", node + 1);
            }
        }
        assert_eq!(get(&cluster, node, "both-sides"), Some(increments.to_string()), "node {}", node + 1);
        assert_eq!(get(&cluster, node, "before"), None, "node {}", node + 1);
    }
    eprintln!("firewall partition healed; converged {took:?} after the heal");
}
