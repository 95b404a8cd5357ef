//! Replication between real `meridian` processes on loopback, each peer link through a
//! proxy the test can cut (black hole) and heal: convergence after concurrent writes to
//! the DESIGN §5 results, after a pause, after a wiped disk; authentication.

mod common;

use std::io::{Read, Write};
use std::time::Duration;

use common::cluster::Cluster;
use common::{connect, eventually, info_fields, info_u64, start_meridian_at};

const CONVERGE: Duration = Duration::from_secs(30);

fn get(cluster: &Cluster, node: usize, key: &str) -> Option<String> {
    redis::cmd("GET").arg(key).query(&mut cluster.con(node)).expect("GET")
}

fn assert_everywhere(cluster: &Cluster, key: &str, expected: Option<&str>) {
    for node in 0..cluster.nodes.len() {
        assert_eq!(get(cluster, node, key).as_deref(), expected, "{key} on node {}", node + 1);
    }
}

fn run(con: &mut redis::Connection, args: &[&str]) -> redis::Value {
    let mut cmd = redis::cmd(args[0]);
    for arg in &args[1..] {
        cmd.arg(*arg);
    }
    cmd.query(con).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

#[test]
fn writes_on_any_node_appear_on_every_other() {
    let cluster = Cluster::start(3, &["--persistence", "off"]);
    for node in 0..3 {
        let mut con = cluster.con(node);
        run(&mut con, &["SET", &format!("from{node}"), &format!("value{node}")]);
        run(&mut con, &["INCRBY", "counter", &(node + 1).to_string()]);
        run(&mut con, &["MSET", &format!("a{node}"), "1", &format!("b{node}"), "2"]);
    }
    cluster.wait_converged(CONVERGE);
    for node in 0..3 {
        assert_everywhere(&cluster, &format!("from{node}"), Some(&format!("value{node}")));
        assert_everywhere(&cluster, &format!("b{node}"), Some("2"));
    }
    assert_everywhere(&cluster, "counter", Some("6"));
    let info = info_fields(&mut cluster.con(0), "replication");
    assert_eq!(info["peers_up"], "2", "{info:?}");
}

#[test]
fn a_burst_of_writes_leaves_before_its_batch_window_ends() {
    // A 10 s window and no periodic anti-entropy: only the outbox filling to its eager
    // size (64 KiB) can send these writes within the first seconds.
    let started = std::time::Instant::now();
    let cluster = Cluster::start(2, &["--persistence", "off", "--repl-batch-ms", "10000", "--anti-entropy-interval-ms", "600000"]);
    // Links up, and the anti-entropy round each link starts with done over empty trees.
    let linked = eventually(Duration::from_secs(5), || {
        cluster.replication_info().iter().all(|info| info.get("peers_up").map(String::as_str) == Some("1"))
    });
    assert!(linked, "{:?}", cluster.replication_info());
    std::thread::sleep(Duration::from_millis(500));
    let mut pipe = redis::pipe();
    for i in 0..20_000 {
        pipe.cmd("SET").arg(format!("burst:{i:06}")).arg("v").ignore();
    }
    pipe.query::<()>(&mut cluster.con(0)).expect("burst of SETs");
    let mut peer = cluster.con(1);
    let mut arrived = 0u64;
    // About 40 bytes a delta: all but the last 64 KiB (some 1,600 writes) go early.
    let early = eventually(Duration::from_secs(5), || {
        arrived = redis::cmd("DBSIZE").query(&mut peer).expect("DBSIZE");
        arrived >= 15_000
    });
    assert!(early, "only {arrived} of 20000 writes reached the peer before the window ended");
    assert!(started.elapsed() < Duration::from_secs(9), "too slow to tell an early batch from a window's end");
}

#[test]
fn concurrent_writes_on_partitioned_nodes_converge_to_the_documented_results() {
    let cluster = Cluster::start(3, &["--persistence", "off"]);
    let (mut a, mut b, mut c) = (cluster.con(0), cluster.con(1), cluster.con(2));
    for args in [
        ["SET", "set-set", "base", "", ""],
        ["SET", "incr-incr", "10", "", ""],
        ["SET", "set-incr", "10", "", ""],
        ["SET", "del-incr", "10", "", ""],
        ["SET", "expire-persist", "v", "EX", "1000"],
        ["SET", "expire-expire", "v", "EX", "1000"],
    ] {
        let args: Vec<&str> = args.into_iter().filter(|a| !a.is_empty()).collect();
        run(&mut a, &args);
    }
    cluster.wait_converged(CONVERGE);

    cluster.partition_all();
    // SET ∥ SET: the later (hlc, node) wins; node 2 writes later.
    run(&mut a, &["SET", "set-set", "from-node-1"]);
    std::thread::sleep(Duration::from_millis(5));
    run(&mut b, &["SET", "set-set", "from-node-2"]);
    // INCR ∥ INCR: every increment counts.
    run(&mut a, &["INCRBY", "incr-incr", "5"]);
    run(&mut b, &["INCRBY", "incr-incr", "7"]);
    run(&mut c, &["INCR", "incr-incr"]);
    // SET ∥ INCR: the SET's value plus the increments it had not seen.
    run(&mut a, &["INCRBY", "set-incr", "5"]);
    run(&mut b, &["SET", "set-incr", "100"]);
    // DEL ∥ INCR: observed reset; the increment the DEL had not seen survives.
    run(&mut a, &["DEL", "del-incr"]);
    run(&mut b, &["INCRBY", "del-incr", "3"]);
    // EXPIRE ∥ PERSIST: PERSIST wins. EXPIRE ∥ EXPIRE: the longest TTL wins.
    run(&mut a, &["EXPIRE", "expire-persist", "5000"]);
    run(&mut b, &["PERSIST", "expire-persist"]);
    run(&mut a, &["EXPIRE", "expire-expire", "2000"]);
    run(&mut c, &["EXPIRE", "expire-expire", "3000"]);
    // Nothing crossed the partition.
    assert_eq!(get(&cluster, 2, "set-set").as_deref(), Some("base"));
    cluster.heal_all();
    cluster.wait_converged(CONVERGE);

    assert_everywhere(&cluster, "set-set", Some("from-node-2"));
    assert_everywhere(&cluster, "incr-incr", Some("23"));
    assert_everywhere(&cluster, "set-incr", Some("105"));
    assert_everywhere(&cluster, "del-incr", Some("3"));
    for node in 0..3 {
        let mut con = cluster.con(node);
        let persisted: i64 = redis::cmd("TTL").arg("expire-persist").query(&mut con).unwrap();
        assert_eq!(persisted, -1, "PERSIST beats EXPIRE on node {}", node + 1);
        let longest: i64 = redis::cmd("TTL").arg("expire-expire").query(&mut con).unwrap();
        assert!((2990..=3000).contains(&longest), "the longest TTL wins on node {}: {longest}", node + 1);
    }
}

/// A key that expires on one node while another node writes it ends alike on both:
/// the expiring node ships its expiry (the tombstone of what expired there), as Redis
/// sends its replicas a DEL. Without that, the write reaches the node that expired
/// the key after the expiry and survives there, while the writer, merging the TTL,
/// expires its own write with the key: they disagreed until anti-entropy (off here)
/// met them. Which of the two results they agree on depends on when the expiry and
/// the write crossed; that they agree does not. The writes are made concurrent by a
/// long batch window rather than a cut link (a link that drops and reconnects starts
/// an anti-entropy round, which would hide the difference).
#[test]
fn a_key_expiring_on_one_node_while_another_writes_it_ends_alike_on_both() {
    let cluster = Cluster::start(2, &["--anti-entropy-interval-ms", "3600000", "--repl-batch-ms", "1000"]);
    let (mut a, mut b) = (cluster.con(0), cluster.con(1));
    // Within one batch window: node 1 writes over its own hash a string whose TTL ends
    // at once, or one already past when written (the random sequences' case); node 2
    // writes the hash.
    for (key, ttl) in [("short", ["PX", "50"]), ("past", ["PXAT", "1"])] {
        run(&mut a, &["HSET", key, "mine", "1"]);
        run(&mut b, &["HSET", key, "f", "1"]);
        run(&mut a, &["SET", key, "v", "XX", ttl[0], ttl[1]]);
    }
    std::thread::sleep(Duration::from_millis(100));
    // Node 1 has expired both (a read removes an expired key) before the batches left.
    let exists: i64 = redis::cmd("EXISTS").arg("short").arg("past").query(&mut a).unwrap();
    assert_eq!(exists, 0);
    let readout = |con: &mut redis::Connection, key: &str| -> (String, Vec<String>) {
        let kind: String = redis::cmd("TYPE").arg(key).query(con).unwrap();
        let fields: Vec<String> = redis::cmd("HGETALL").arg(key).query(con).unwrap_or_default();
        (kind, fields)
    };
    let alike = || {
        let (mut a, mut b) = (cluster.con(0), cluster.con(1));
        cluster.idle() && ["short", "past"].iter().all(|key| readout(&mut a, key) == readout(&mut b, key))
    };
    // Two batch windows: the writes, then the expiries they caused.
    std::thread::sleep(Duration::from_millis(2_500));
    let agreed = eventually(Duration::from_secs(10), alike);
    for key in ["short", "past"] {
        assert!(agreed, "{key}: node 1 reads {:?}, node 2 {:?}", readout(&mut a, key), readout(&mut b, key));
    }
    // And they stay so.
    std::thread::sleep(Duration::from_millis(1_500));
    assert!(alike(), "the nodes agreed, then parted");
}

#[test]
fn a_paused_node_catches_up_after_it_resumes() {
    let cluster = Cluster::start(3, &["--persistence", "off"]);
    let paused = cluster.server(2).child.id().to_string();
    assert!(std::process::Command::new("kill").args(["-STOP", &paused]).status().unwrap().success());
    let mut a = cluster.con(0);
    let mut b = cluster.con(1);
    for i in 0..500 {
        run(&mut a, &["SET", &format!("a{i}"), &i.to_string()]);
        run(&mut b, &["INCR", "shared-counter"]);
    }
    run(&mut a, &["DEL", "a7"]);
    assert!(std::process::Command::new("kill").args(["-CONT", &paused]).status().unwrap().success());
    cluster.wait_converged(CONVERGE);
    let mut c = cluster.con(2);
    assert_eq!(redis::cmd("DBSIZE").query::<i64>(&mut c).unwrap(), 500, "499 keys a* and the counter");
    assert_everywhere(&cluster, "shared-counter", Some("500"));
    assert_everywhere(&cluster, "a7", None);
    assert_everywhere(&cluster, "a499", Some("499"));
}

#[test]
fn a_node_restarted_with_an_empty_disk_catches_up_through_anti_entropy() {
    // Persistence on (each node its own data dir), anti-entropy every second.
    let mut cluster = Cluster::start(3, &["--anti-entropy-interval-ms", "1000"]);
    let mut a = cluster.con(0);
    for i in 0..1000 {
        run(&mut a, &["SET", &format!("k{i}"), &format!("v{i}")]);
    }
    run(&mut a, &["INCRBY", "counter", "41"]);
    run(&mut a, &["DEL", "k5"]);
    cluster.wait_converged(CONVERGE);

    cluster.kill_node(2, true);
    for i in 1000..1500 {
        run(&mut a, &["SET", &format!("k{i}"), &format!("v{i}")]);
    }
    run(&mut cluster.con(1), &["INCR", "counter"]);
    run(&mut a, &["DEL", "k6"]);
    cluster.start_node(2);
    cluster.wait_converged(CONVERGE);

    let mut c = cluster.con(2);
    assert_eq!(redis::cmd("DBSIZE").query::<i64>(&mut c).unwrap(), 1499, "1500 keys, two deleted, plus the counter");
    assert_everywhere(&cluster, "counter", Some("42"));
    assert_everywhere(&cluster, "k5", None);
    assert_everywhere(&cluster, "k6", None);
    assert_everywhere(&cluster, "k1499", Some("v1499"));
    assert!(info_u64(&mut c, "replication", "remote_deltas_merged") >= 1499);
}

fn tombstones(cluster: &Cluster) -> Vec<u64> {
    (0..cluster.nodes.len()).map(|i| info_u64(&mut cluster.con(i), "replication", "tombstones")).collect()
}

#[test]
fn tombstones_are_collected_once_every_node_has_the_delete_and_not_while_one_is_away() {
    // Persistence on: a node counts what it merged only once it is stored.
    let cluster = Cluster::start(3, &["--anti-entropy-interval-ms", "1000"]);
    let mut a = cluster.con(0);
    for i in 0..300 {
        run(&mut a, &["SET", &format!("gone{i}"), "v"]);
        run(&mut a, &["INCRBY", &format!("count{i}"), "5"]);
    }
    cluster.wait_converged(CONVERGE);

    // Node 3 is cut off; node 1 deletes everything; node 3, unaware, writes one of the
    // strings again (concurrent with the delete, so it survives) and increments one of
    // the counters (those increments survive; the 5 the delete saw do not).
    cluster.isolate(2);
    let mut c = cluster.con(2);
    for i in 0..300 {
        run(&mut a, &["DEL", &format!("gone{i}"), &format!("count{i}")]);
    }
    run(&mut c, &["SET", "gone7", "rewritten while away"]);
    run(&mut c, &["INCRBY", "count9", "2"]);
    std::thread::sleep(Duration::from_secs(4));
    let held = tombstones(&cluster);
    assert!(held[0] >= 600 && held[1] >= 600, "nothing may be collected while node 3 has not seen the deletes: {held:?}");

    cluster.rejoin(2);
    cluster.wait_converged(CONVERGE);
    assert!(
        eventually(CONVERGE, || tombstones(&cluster).iter().all(|&t| t == 0)),
        "every tombstone is collected once all nodes have the deletes: {:?}",
        tombstones(&cluster)
    );
    let collected: u64 = (0..3).map(|i| info_u64(&mut cluster.con(i), "replication", "tombstones_collected")).sum();
    assert!(collected >= 3 * 598, "collected on every node: {collected}");
    cluster.wait_converged(CONVERGE);
    assert_everywhere(&cluster, "gone7", Some("rewritten while away"));
    assert_everywhere(&cluster, "count9", Some("2"));
    assert_everywhere(&cluster, "gone8", None);
    assert_everywhere(&cluster, "count8", None);
    for node in 0..3 {
        assert_eq!(redis::cmd("DBSIZE").query::<i64>(&mut cluster.con(node)).unwrap(), 2, "node {}", node + 1);
    }

    // Nothing deleted and collected comes back: not by a new write elsewhere (it is
    // a new value), and not by the anti-entropy rounds that keep running.
    run(&mut cluster.con(1), &["INCR", "count8"]);
    std::thread::sleep(Duration::from_secs(3));
    cluster.wait_converged(CONVERGE);
    assert_everywhere(&cluster, "count8", Some("1"));
    assert_everywhere(&cluster, "gone8", None);
}

#[test]
fn tombstones_are_collected_after_a_restart_without_waiting_for_the_anti_entropy_period() {
    // Periodic anti-entropy effectively off. A restarted node's first batches start a
    // new session, which its peers cannot vouch for until an anti-entropy round with it,
    // begun after that batch, has completed (`replication::stability`): the round each
    // link starts when it connects may begin before that batch arrives. The peers must
    // then start one at once rather than at the next period (an hour here), or no
    // tombstone is collected for that long.
    let mut cluster = Cluster::start(3, &["--anti-entropy-interval-ms", "3600000"]);
    let mut a = cluster.con(0);
    for i in 0..50 {
        run(&mut a, &["SET", &format!("k{i}"), "v"]);
    }
    cluster.wait_converged(CONVERGE);
    for round in 0..3 {
        cluster.kill_node(2, false);
        cluster.start_node(2);
        cluster.wait_converged(CONVERGE);
        let mut a = cluster.con(0);
        for i in 0..50 {
            run(&mut a, &["DEL", &format!("k{i}")]);
            run(&mut a, &["SET", &format!("k{i}"), "again"]);
        }
        run(&mut a, &["DEL", "k0"]);
        cluster.wait_converged(CONVERGE);
        assert!(
            eventually(Duration::from_secs(20), || tombstones(&cluster).iter().all(|&t| t == 0)),
            "restart {round}: tombstones still held long after every node has the deletes: {:?} ({:#?})",
            tombstones(&cluster),
            cluster.replication_info()
        );
    }
    assert_everywhere(&cluster, "k0", None);
    assert_everywhere(&cluster, "k49", Some("again"));
}

#[test]
fn a_peer_with_a_wrong_secret_or_garbled_frames_is_refused_and_changes_nothing() {
    let cluster = Cluster::start(1, &["--persistence", "off"]);
    let repl_addr = format!("127.0.0.1:{}", cluster.nodes[0].repl_port);
    let intruder_dir = common::TempDir::new("intruder");
    let log = intruder_dir.path.with_extension("log");
    let intruder = start_meridian_at(
        &intruder_dir.path,
        &["--node-id", "9", "--peers", &repl_addr, "--persistence", "off"],
        &[("MERIDIAN_CLUSTER_SECRET", "not-the-cluster-secret")],
        &log,
    );
    let mut intruder_con = connect(&intruder);
    run(&mut intruder_con, &["SET", "planted", "by-intruder"]);
    let mut con = cluster.con(0);
    assert!(
        eventually(Duration::from_secs(10), || info_u64(&mut con, "replication", "auth_failures") >= 1),
        "the node counts the failed authentication"
    );
    let intruder_info = info_fields(&mut intruder_con, "replication");
    assert!(intruder_info["peer0"].contains("link=refused"), "{intruder_info:?}");
    assert!(common::read_log(&log).contains("authentication"), "the refusal is logged");

    // Garbage on the replication port: counted, and the connection is closed.
    let mut raw = std::net::TcpStream::connect(&repl_addr).unwrap();
    raw.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    raw.write_all(b"\x10\x00\x00\x00\x01\x01garbage-garbage-garbage").unwrap();
    let mut buf = Vec::new();
    let _ = raw.read_to_end(&mut buf);
    assert!(eventually(Duration::from_secs(5), || info_u64(&mut con, "replication", "bad_frames") >= 1));

    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(get(&cluster, 0, "planted"), None, "an unauthenticated peer changes nothing");
    assert_eq!(redis::cmd("DBSIZE").query::<i64>(&mut con).unwrap(), 0);
}

#[test]
fn replication_without_a_cluster_secret_refuses_to_start() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_meridian"))
        .args(["--port", "0", "--repl-port", "0", "--persistence", "off"])
        .env_remove("MERIDIAN_CLUSTER_SECRET")
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("--cluster-secret"), "{}", String::from_utf8_lossy(&output.stderr));
}

#[test]
fn a_partition_with_50ms_links_loses_no_acknowledged_write_and_heals_in_bounded_time() {
    let cluster = Cluster::start(3, &["--persistence", "off", "--anti-entropy-interval-ms", "2000"]);
    cluster.set_delay(Duration::from_millis(50));
    cluster.partition_scenario(|| cluster.isolate(0), || cluster.rejoin(0), Duration::from_secs(10));
}

#[test]
fn prometheus_metrics_show_the_replication_figures() {
    let cluster = Cluster::start(2, &["--persistence", "off"]);
    run(&mut cluster.con(0), &["SET", "k", "v"]);
    cluster.wait_converged(CONVERGE);
    // A third node that also serves metrics, linked to node 1.
    let dir = common::TempDir::new("metrics");
    let metrics_port = common::free_port();
    let peer = format!("127.0.0.1:{}", cluster.nodes[0].repl_port);
    let log = dir.path.with_extension("log");
    let node = start_meridian_at(
        &dir.path,
        &["--node-id", "7", "--persistence", "off", "--peers", &peer, "--metrics-port", &metrics_port.to_string()],
        &[("MERIDIAN_CLUSTER_SECRET", common::cluster::SECRET)],
        &log,
    );
    let scrape = |path: &str| {
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", metrics_port)).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        write!(stream, "GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
        let mut text = String::new();
        stream.read_to_string(&mut text).unwrap();
        text
    };
    assert!(eventually(Duration::from_secs(10), || scrape("/metrics").contains("meridian_repl_peer_up{peer=\"127.0.0.1")));
    assert!(eventually(Duration::from_secs(10), || {
        let text = scrape("/metrics");
        text.contains("meridian_repl_peer_up{peer=\"") && text.contains("node_id=\"1\"} 1") && text.contains("meridian_keys 1")
    }));
    let text = scrape("/metrics");
    assert!(text.starts_with("HTTP/1.1 200 OK"), "{text}");
    assert!(text.contains("# TYPE meridian_repl_peer_lag_ms gauge"), "{text}");
    assert!(scrape("/other").starts_with("HTTP/1.1 404"));
    drop(node);
}

/// A CA and one certificate it signed for 127.0.0.1, as PEM files in `dir`.
fn write_tls_files(dir: &std::path::Path, tag: &str) -> (String, String, String) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair, SanType};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let node_key = KeyPair::generate().unwrap();
    let mut node_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    node_params.subject_alt_names = vec![SanType::IpAddress("127.0.0.1".parse().unwrap())];
    let node = node_params.signed_by(&node_key, &ca, &ca_key).unwrap();
    let path = |name: &str| dir.join(format!("{tag}-{name}")).display().to_string();
    std::fs::write(path("ca.pem"), ca.pem()).unwrap();
    std::fs::write(path("node.pem"), node.pem()).unwrap();
    std::fs::write(path("node.key"), node_key.serialize_pem()).unwrap();
    (path("node.pem"), path("node.key"), path("ca.pem"))
}

#[test]
fn peer_links_run_over_mutual_tls_and_refuse_nodes_without_a_cluster_certificate() {
    let dir = common::TempDir::new("tls");
    let (cert, key, ca) = write_tls_files(&dir.path, "cluster");
    let tls = ["--repl-tls-cert", &cert, "--repl-tls-key", &key, "--repl-tls-ca", &ca];
    let mut args = vec!["--persistence", "off"];
    args.extend_from_slice(&tls);
    let cluster = Cluster::start(2, &args);
    run(&mut cluster.con(0), &["SET", "over", "tls"]);
    cluster.wait_converged(CONVERGE);
    assert_everywhere(&cluster, "over", Some("tls"));

    // The right secret but a certificate from another CA, then no TLS at all: refused.
    let (other_cert, other_key, other_ca) = write_tls_files(&dir.path, "other");
    let peer = format!("127.0.0.1:{}", cluster.nodes[0].repl_port);
    let other_tls = ["--repl-tls-cert", other_cert.as_str(), "--repl-tls-key", &other_key, "--repl-tls-ca", &other_ca];
    for (i, extra) in [other_tls.to_vec(), vec![]].into_iter().enumerate() {
        let node_dir = common::TempDir::new("tls-intruder");
        let mut args = vec!["--node-id", "8", "--persistence", "off", "--peers", &peer];
        args.extend_from_slice(&extra);
        let log = node_dir.path.with_extension("log");
        let intruder = start_meridian_at(&node_dir.path, &args, &[("MERIDIAN_CLUSTER_SECRET", common::cluster::SECRET)], &log);
        run(&mut connect(&intruder), &["SET", "planted", "x"]);
        let mut con = cluster.con(0);
        assert!(
            eventually(Duration::from_secs(10), || info_u64(&mut con, "replication", "auth_failures")
                + info_u64(&mut con, "replication", "bad_frames")
                > i as u64),
            "intruder {i} is refused and counted"
        );
    }
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(get(&cluster, 0, "planted"), None);
}

#[test]
fn incomplete_or_unreadable_tls_settings_stop_start_up_with_a_clear_error() {
    let run_with = |args: &[&str]| {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_meridian"))
            .args(["--port", "0", "--repl-port", "0", "--persistence", "off"])
            .args(args)
            .env("MERIDIAN_CLUSTER_SECRET", common::cluster::SECRET)
            .output()
            .unwrap();
        assert!(!output.status.success());
        String::from_utf8_lossy(&output.stderr).into_owned()
    };
    assert!(run_with(&["--repl-tls-cert", "/nonexistent.pem"]).contains("needs all of --repl-tls-cert"));
    let error =
        run_with(&["--repl-tls-cert", "/nonexistent.pem", "--repl-tls-key", "/nonexistent.key", "--repl-tls-ca", "/nonexistent-ca.pem"]);
    assert!(error.contains("--repl-tls-cert /nonexistent.pem"), "{error}");
}
