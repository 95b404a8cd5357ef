//! Blocking pops on real `meridian` processes: a client blocked in BLPOP (or BZPOPMIN,
//! BLMOVE...) is woken by a push from another client, on another shard, or merged from
//! another region; clients are served in the order they blocked; a timeout answers nil;
//! a client that goes away while blocked pops nothing.

mod common;

use std::time::{Duration, Instant};

use common::cluster::Cluster;
use common::{connect, info_u64, start_meridian};

fn blocked_clients(con: &mut redis::Connection) -> u64 {
    info_u64(con, "clients", "blocked_clients")
}

fn wait_blocked(con: &mut redis::Connection, n: u64) {
    assert!(common::eventually(Duration::from_secs(10), || blocked_clients(con) == n), "{n} clients blocked");
}

#[test]
fn blocked_clients_are_woken_by_pushes_in_the_order_they_blocked() {
    let server = start_meridian(&["--shards", "4", "--persistence", "off"]);
    let mut admin = connect(&server);
    let keys = common::keys_spread_over_shards("queue", 2, 4);
    let mut waiters = Vec::new();
    for i in 0..3 {
        let mut con = connect(&server);
        let keys = keys.clone();
        waiters.push(std::thread::spawn(move || -> Option<(String, String)> {
            redis::cmd("BLPOP").arg(&keys[0]).arg(&keys[1]).arg(10).query(&mut con).expect("BLPOP")
        }));
        // One at a time, so the blocking order is known.
        wait_blocked(&mut admin, i + 1);
    }
    redis::cmd("RPUSH").arg(&keys[1]).arg("a").arg("b").arg("c").query::<()>(&mut admin).unwrap();
    let served: Vec<Option<(String, String)>> = waiters.into_iter().map(|w| w.join().unwrap()).collect();
    let expected: Vec<Option<(String, String)>> = ["a", "b", "c"].iter().map(|v| Some((keys[1].clone(), v.to_string()))).collect();
    assert_eq!(served, expected, "one element each, first blocked first served");
    assert_eq!(blocked_clients(&mut admin), 0);
}

#[test]
fn a_timeout_answers_nil_and_a_sorted_set_pop_and_a_move_wake_too() {
    let server = start_meridian(&["--shards", "2", "--persistence", "off"]);
    let mut con = connect(&server);
    let started = Instant::now();
    let none: Option<(String, String)> = redis::cmd("BLPOP").arg("nothing").arg(0.3).query(&mut con).unwrap();
    assert_eq!(none, None);
    assert!(started.elapsed() >= Duration::from_millis(290), "waited its timeout");

    let mut popper = connect(&server);
    let zpop = std::thread::spawn(move || -> Option<(String, String, f64)> {
        redis::cmd("BZPOPMIN").arg("scores").arg(10).query(&mut popper).expect("BZPOPMIN")
    });
    wait_blocked(&mut con, 1);
    redis::cmd("ZADD").arg("scores").arg(2).arg("b").arg(1).arg("a").query::<()>(&mut con).unwrap();
    assert_eq!(zpop.join().unwrap(), Some(("scores".into(), "a".into(), 1.0)));

    let mut mover = connect(&server);
    let mv = std::thread::spawn(move || -> Option<String> {
        redis::cmd("BLMOVE").arg("{j}src").arg("{j}dst").arg("LEFT").arg("RIGHT").arg(10).query(&mut mover).expect("BLMOVE")
    });
    wait_blocked(&mut con, 1);
    redis::cmd("LPUSH").arg("{j}src").arg("job").query::<()>(&mut con).unwrap();
    assert_eq!(mv.join().unwrap().as_deref(), Some("job"));
    let moved: Vec<String> = redis::cmd("LRANGE").arg("{j}dst").arg(0).arg(-1).query(&mut con).unwrap();
    assert_eq!(moved, ["job"]);
}

#[test]
fn a_client_that_leaves_while_blocked_pops_nothing() {
    let server = start_meridian(&["--persistence", "off"]);
    let mut con = connect(&server);
    {
        let mut leaving = common::raw_connect(&server);
        use std::io::Write;
        leaving.write_all(b"BLPOP jobs 0\r\n").unwrap();
        wait_blocked(&mut con, 1);
    }
    wait_blocked(&mut con, 0);
    redis::cmd("RPUSH").arg("jobs").arg("j1").query::<()>(&mut con).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let left: Vec<String> = redis::cmd("LRANGE").arg("jobs").arg(0).arg(-1).query(&mut con).unwrap();
    assert_eq!(left, ["j1"], "the element is still there for a live worker");
}

#[test]
fn a_push_in_one_region_wakes_a_client_blocked_in_another() {
    let cluster = Cluster::start(2, &["--persistence", "off"]);
    cluster.run(0, &["SET", "warmup", "1"]);
    cluster.wait_converged(Duration::from_secs(30));
    let mut worker = cluster.con(1);
    let blocked = std::thread::spawn(move || -> Option<(String, String)> {
        redis::cmd("BRPOP").arg("tasks").arg(20).query(&mut worker).expect("BRPOP")
    });
    let mut there = cluster.con(1);
    wait_blocked(&mut there, 1);
    redis::cmd("LPUSH").arg("tasks").arg("from-region-1").query::<()>(&mut cluster.con(0)).unwrap();
    assert_eq!(blocked.join().unwrap(), Some(("tasks".into(), "from-region-1".into())));
}
