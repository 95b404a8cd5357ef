//! Pub/Sub across real `meridian` processes: a PUBLISH in one region reaches the
//! subscribers of every region once each, in publish order; while a region is cut off
//! its messages are dropped (at most once, as Redis's Pub/Sub) and counted in INFO,
//! and nothing else is lost.

mod common;

use std::time::Duration;

use common::cluster::Cluster;
use common::info_u64;

fn subscriber(cluster: &Cluster, node: usize, channel: &str) -> redis::PubSub<'static> {
    // Leaked: the PubSub borrows its connection for the test's lifetime.
    let con: &'static mut redis::Connection = Box::leak(Box::new(cluster.con(node)));
    let mut pubsub = con.as_pubsub();
    pubsub.subscribe(channel).expect("SUBSCRIBE");
    pubsub
}

fn next_payload(pubsub: &mut redis::PubSub<'_>, wait: Duration) -> Option<String> {
    pubsub.set_read_timeout(Some(wait)).unwrap();
    pubsub.get_message().ok().map(|m| m.get_payload().expect("a text payload"))
}

fn links_up(cluster: &Cluster) {
    cluster.run(0, &["SET", "warmup", "1"]);
    cluster.wait_converged(Duration::from_secs(30));
}

#[test]
fn a_publish_reaches_every_region_once_in_publish_order() {
    let cluster = Cluster::start(3, &["--persistence", "off"]);
    links_up(&cluster);
    let mut in_two = subscriber(&cluster, 1, "events");
    let mut in_three = subscriber(&cluster, 2, "events");
    let mut local = subscriber(&cluster, 0, "events");
    let mut publisher = cluster.con(0);
    for i in 0..100 {
        let here: i64 = redis::cmd("PUBLISH").arg("events").arg(i.to_string()).query(&mut publisher).unwrap();
        assert_eq!(here, 1, "PUBLISH counts this node's subscribers");
    }
    for (name, sub) in [("node 2", &mut in_two), ("node 3", &mut in_three), ("node 1", &mut local)] {
        let got: Vec<String> =
            (0..100).map(|_| next_payload(sub, Duration::from_secs(10)).unwrap_or_else(|| panic!("{name}: a message"))).collect();
        assert_eq!(got, (0..100).map(|i| i.to_string()).collect::<Vec<_>>(), "{name}: every message once, in order");
        assert_eq!(next_payload(sub, Duration::from_millis(300)), None, "{name}: nothing twice");
    }
}

#[test]
fn a_partition_drops_and_counts_messages_and_nothing_else() {
    let cluster = Cluster::start(3, &["--persistence", "off"]);
    links_up(&cluster);
    let mut far = subscriber(&cluster, 1, "alerts");
    cluster.isolate(0);
    let mut publisher = cluster.con(0);
    for i in 0..10 {
        let _: i64 = redis::cmd("PUBLISH").arg("alerts").arg(format!("cut-{i}")).query(&mut publisher).unwrap();
        redis::cmd("INCR").arg("writes-while-cut").query::<()>(&mut publisher).unwrap();
    }
    assert_eq!(next_payload(&mut far, Duration::from_millis(500)), None, "nothing crosses a cut link");
    // Stay cut off longer than a message may be late, then heal.
    std::thread::sleep(Duration::from_millis(5_500));
    cluster.rejoin(0);
    cluster.wait_converged(Duration::from_secs(30));
    assert_eq!(next_payload(&mut far, Duration::from_millis(1_000)), None, "a healed link does not replay old messages");
    let counted: u64 = (0..3)
        .map(|n| {
            let mut con = cluster.con(n);
            info_u64(&mut con, "stats", "pubsub_messages_dropped_unsent") + info_u64(&mut con, "stats", "pubsub_messages_dropped_late")
        })
        .sum();
    assert!(counted >= 20, "10 messages × 2 peers dropped and counted, got {counted}");
    for n in 0..3 {
        let value: i64 = redis::cmd("GET").arg("writes-while-cut").query(&mut cluster.con(n)).unwrap();
        assert_eq!(value, 10, "data written meanwhile is not dropped (node {})", n + 1);
    }
    // And the link carries messages again.
    let _: i64 = redis::cmd("PUBLISH").arg("alerts").arg("after").query(&mut publisher).unwrap();
    assert_eq!(next_payload(&mut far, Duration::from_secs(10)).as_deref(), Some("after"));
}
