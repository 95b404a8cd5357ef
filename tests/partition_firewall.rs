//! A Jepsen-style partition cut by a real firewall: three nodes, each replicating from
//! its own loopback address (127.0.0.11-13) through a proxy that delays every byte 50 ms,
//! and iptables DROP rules between the addresses of the two sides. Unlike the proxy cut
//! of `tests/replication.rs`, the kernel drops the packets: TCP retransmits with backoff
//! and the links only notice when it gets through. Needs root (CAP_NET_ADMIN) and
//! iptables; without them the test says SKIPPED loudly and passes.

mod common;

use std::net::IpAddr;
use std::process::Command;
use std::time::Duration;

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

#[test]
fn a_firewall_partition_with_50ms_links_loses_no_acknowledged_write_and_heals() {
    let Some(firewall) = Firewall::new() else {
        eprintln!("\n*** SKIPPED a_firewall_partition...: iptables is not usable here (needs root / CAP_NET_ADMIN) ***\n");
        return;
    };
    let cluster = Cluster::start_on_own_addresses(3, &["--persistence", "off", "--anti-entropy-interval-ms", "2000"]);
    cluster.set_delay(Duration::from_millis(50));
    let cut = || {
        firewall.cut(Cluster::node_ip(0), Cluster::node_ip(1));
        firewall.cut(Cluster::node_ip(0), Cluster::node_ip(2));
    };
    let took = cluster.partition_scenario(cut, || firewall.heal(), Duration::from_secs(20));
    eprintln!("firewall partition healed; converged {took:?} after the heal");
}
