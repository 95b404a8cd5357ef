//! A replicated cluster of real `meridian` processes on loopback for tests. Every
//! directed peer link goes through its own [`Proxy`], so a test can delay a link or cut
//! it (black hole) and heal it, one link or one node at a time.

use std::path::PathBuf;
use std::time::Duration;

use super::proxy::Proxy;
use super::{ServerGuard, TempDir, connect, eventually, info_fields, read_log, start_meridian_at};

pub const SECRET: &str = "test-cluster-secret";

pub struct Node {
    pub server: Option<ServerGuard>,
    /// The loopback address its replication listener binds.
    pub ip: std::net::IpAddr,
    pub node_id: u16,
    pub repl_port: u16,
    pub data: TempDir,
    pub log: PathBuf,
    args: Vec<String>,
}

pub struct Cluster {
    pub nodes: Vec<Node>,
    /// `links[from][to]`: the proxy that `from` dials to reach `to`.
    pub links: Vec<Vec<Option<Proxy>>>,
}

impl Cluster {
    /// Start `n` nodes (ids 1..=n), each peered with all others through proxies. Each
    /// node binds its replication port itself (`--repl-port 0`: no port race with other
    /// tests); the proxies learn it once the node is up.
    pub fn start(n: usize, extra_args: &[&str]) -> Cluster {
        Cluster::start_with(n, extra_args, false)
    }

    /// Like [`Cluster::start`], with node `i` on its own loopback address 127.0.0.(11+i):
    /// its replication listener binds it, and its proxies listen on it and connect out
    /// from it, so firewall rules on addresses cut exactly the links between two nodes.
    pub fn start_on_own_addresses(n: usize, extra_args: &[&str]) -> Cluster {
        Cluster::start_with(n, extra_args, true)
    }

    pub fn node_ip(i: usize) -> std::net::IpAddr {
        std::net::IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, 11 + i as u8))
    }

    fn start_with(n: usize, extra_args: &[&str], own_addresses: bool) -> Cluster {
        let ip = |i: usize| if own_addresses { Cluster::node_ip(i) } else { "127.0.0.1".parse().unwrap() };
        let links: Vec<Vec<Option<Proxy>>> = (0..n)
            .map(|from| (0..n).map(|to| (from != to).then(|| Proxy::start_on(ip(from), own_addresses.then(|| ip(from))))).collect())
            .collect();
        let mut nodes = Vec::new();
        for (i, row) in links.iter().enumerate() {
            let peers: Vec<String> = row.iter().flatten().map(|p| p.addr()).collect();
            let mut args: Vec<String> = vec![
                "--node-id".into(),
                (i + 1).to_string(),
                "--region".into(),
                format!("region{}", i + 1),
                "--repl-port".into(),
                "0".into(),
                "--repl-bind".into(),
                ip(i).to_string(),
                "--peers".into(),
                peers.join(","),
                "--shards".into(),
                "2".into(),
            ];
            args.extend(extra_args.iter().map(|s| s.to_string()));
            let data = TempDir::new(&format!("node{}", i + 1));
            let log = data.path.with_extension("log");
            nodes.push(Node { server: None, ip: ip(i), node_id: (i + 1) as u16, repl_port: 0, data, log, args });
        }
        let mut cluster = Cluster { nodes, links };
        for i in 0..n {
            cluster.start_node(i);
        }
        cluster
    }

    pub fn start_node(&mut self, i: usize) {
        let node = &mut self.nodes[i];
        let args: Vec<&str> = node.args.iter().map(|s| s.as_str()).collect();
        let server = start_meridian_at(&node.data.path, &args, &[("MERIDIAN_CLUSTER_SECRET", SECRET)], &node.log);
        let repl_port: u16 = info_fields(&mut connect(&server), "replication")["repl_port"].parse().expect("INFO repl_port");
        node.server = Some(server);
        node.repl_port = repl_port;
        let ip = node.ip;
        for row in &self.links {
            if let Some(proxy) = &row[i] {
                proxy.set_target(&format!("{ip}:{repl_port}"));
            }
        }
    }

    /// SIGKILL node `i`; with `wipe`, its data dir is emptied too.
    pub fn kill_node(&mut self, i: usize, wipe: bool) {
        self.nodes[i].server = None;
        if wipe {
            let _ = std::fs::remove_dir_all(&self.nodes[i].data.path);
            std::fs::create_dir_all(&self.nodes[i].data.path).unwrap();
        }
    }

    pub fn server(&self, i: usize) -> &ServerGuard {
        self.nodes[i].server.as_ref().expect("node is running")
    }

    pub fn con(&self, i: usize) -> redis::Connection {
        connect(self.server(i))
    }

    /// Black-hole every link into and out of node `i`.
    pub fn isolate(&self, i: usize) {
        self.each_link_of(i, Proxy::cut);
    }

    pub fn rejoin(&self, i: usize) {
        self.each_link_of(i, Proxy::heal);
    }

    /// Cut every link: each node on its own.
    pub fn partition_all(&self) {
        self.links.iter().flatten().flatten().for_each(Proxy::cut);
    }

    pub fn heal_all(&self) {
        self.links.iter().flatten().flatten().for_each(Proxy::heal);
    }

    pub fn set_delay(&self, delay: Duration) {
        self.links.iter().flatten().flatten().for_each(|p| p.set_delay(delay));
    }

    fn each_link_of(&self, i: usize, f: impl Fn(&Proxy)) {
        for (from, row) in self.links.iter().enumerate() {
            for (to, proxy) in row.iter().enumerate() {
                if let Some(proxy) = proxy
                    && (from == i || to == i)
                {
                    f(proxy);
                }
            }
        }
    }

    /// INFO replication of every running node.
    pub fn replication_info(&self) -> Vec<std::collections::HashMap<String, String>> {
        self.nodes
            .iter()
            .filter(|n| n.server.is_some())
            .map(|n| info_fields(&mut connect(n.server.as_ref().unwrap()), "replication"))
            .collect()
    }

    /// Whether every running node holds the same key states (equal keyspace digests)
    /// and has no batch waiting for any peer.
    pub fn converged(&self) -> bool {
        let infos = self.replication_info();
        let digests: Vec<&String> = infos.iter().filter_map(|i| i.get("keyspace_digest")).collect();
        digests.len() == infos.len() && digests.windows(2).all(|w| w[0] == w[1]) && Cluster::idle_in(&infos)
    }

    /// Whether no running node has a batch waiting for any peer (everything written
    /// has been sent and acknowledged). Key tombstones may still differ: a node keeps
    /// one until it knows every peer has it, so digests can lag behind what the nodes
    /// answer.
    pub fn idle(&self) -> bool {
        Cluster::idle_in(&self.replication_info())
    }

    fn idle_in(infos: &[std::collections::HashMap<String, String>]) -> bool {
        infos.iter().all(|info| {
            info.iter()
                .filter(|(k, _)| k.strip_prefix("peer").is_some_and(|n| n.parse::<u32>().is_ok()))
                .all(|(_, v)| v.contains("backlog_bytes=0,"))
        })
    }

    /// Wait until converged; on timeout, panic with every node's INFO and log tail.
    pub fn wait_converged(&self, timeout: Duration) {
        if eventually(timeout, || self.converged()) {
            return;
        }
        let mut report = String::new();
        for (i, node) in self.nodes.iter().enumerate() {
            let info = if node.server.is_some() { format!("{:?}", info_fields(&mut self.con(i), "replication")) } else { "stopped".into() };
            let log = read_log(&node.log);
            let tail: Vec<&str> = log.lines().rev().take(15).collect();
            report.push_str(&format!(
                "\n--- node {} ---\n{info}\n{}\n",
                node.node_id,
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            ));
        }
        panic!("cluster did not converge in {timeout:?}:{report}");
    }

    /// Run one command on node `i`; panics with the command on an error reply.
    pub fn run(&self, i: usize, args: &[&str]) -> redis::Value {
        run(&mut self.con(i), args)
    }

    /// Make writes concurrent by cutting links, not by timing luck: write `setup` on
    /// node 1, converge, cut every link, run `concurrent` (node index, command) while
    /// cut, heal and converge. Returns the concurrent commands' replies.
    pub fn concurrently(&self, setup: &[&[&str]], concurrent: &[(usize, &[&str])]) -> Vec<redis::Value> {
        const CONVERGE: Duration = Duration::from_secs(30);
        let mut first = self.con(0);
        for args in setup {
            run(&mut first, args);
        }
        self.wait_converged(CONVERGE);
        self.partition_all();
        let mut replies = Vec::new();
        for (node, args) in concurrent {
            replies.push(self.run(*node, args));
            // Distinct milliseconds: the later write has the later stamp.
            std::thread::sleep(Duration::from_millis(3));
        }
        self.heal_all();
        self.wait_converged(CONVERGE);
        replies
    }

    /// The partition scenario of the partition tests: node 1 is cut off from nodes 2 and
    /// 3 by `cut`; both sides take writes (distinct keys, one counter incremented on both
    /// sides, a delete); nothing crosses; `heal` ends it; the cluster must converge within
    /// `heal_bound` with every acknowledged write on every node. Returns the time from the
    /// heal to convergence.
    pub fn partition_scenario(&self, cut: impl FnOnce(), heal: impl FnOnce(), heal_bound: Duration) -> Duration {
        let get = |node: usize, key: &str| -> Option<String> { redis::cmd("GET").arg(key).query(&mut self.con(node)).expect("GET") };
        let (mut a, mut b, mut c) = (self.con(0), self.con(1), self.con(2));
        redis::cmd("SET").arg("before").arg("partition").query::<()>(&mut a).unwrap();
        self.wait_converged(Duration::from_secs(30));

        cut();
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
        assert!(eventually(Duration::from_secs(10), || get(2, "majority:299").is_some()), "the majority replicates");
        std::thread::sleep(Duration::from_millis(500));
        assert_eq!(get(0, "majority:0"), None, "nothing crosses the partition");
        assert_eq!(get(1, "minority:0"), None, "nothing crosses the partition");

        heal();
        let healed = std::time::Instant::now();
        self.wait_converged(heal_bound.max(Duration::from_secs(30)));
        let took = healed.elapsed();
        assert!(took < heal_bound, "converged {took:?} after the heal");
        for node in 0..3 {
            let mut con = self.con(node);
            for i in 0..300 {
                for side in ["minority", "majority"] {
                    let value: Option<String> = redis::cmd("GET").arg(format!("{side}:{i}")).query(&mut con).unwrap();
                    assert_eq!(value, Some(i.to_string()), "{side}:{i} on node {}", node + 1);
                }
            }
            assert_eq!(get(node, "both-sides"), Some(increments.to_string()), "node {}", node + 1);
            assert_eq!(get(node, "before"), None, "node {}", node + 1);
        }
        took
    }
}

/// Run one command; panics with the command on an error reply.
pub fn run(con: &mut redis::Connection, args: &[&str]) -> redis::Value {
    let mut cmd = redis::cmd(args[0]);
    for arg in &args[1..] {
        cmd.arg(*arg);
    }
    cmd.query(con).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}
