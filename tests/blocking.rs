//! Blocking pops on real `meridian` processes: a client blocked in BLPOP (or BZPOPMIN,
//! BLMOVE...) is woken by a push from another client, on another shard, or merged from
//! another region; clients are served in the order they blocked; a timeout answers nil;
//! a client that goes away while blocked pops nothing.

mod common;

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use common::cluster::Cluster;
use common::{connect, info_u64, start_meridian};

/// The order tests measure who is served first while threads compete for two cores:
/// the servers of this file's other tests must not be the competition. Every test runs
/// alone.
static ONE_SERVER_AT_A_TIME: Mutex<()> = Mutex::new(());

fn alone() -> MutexGuard<'static, ()> {
    ONE_SERVER_AT_A_TIME.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn blocked_clients(con: &mut redis::Connection) -> u64 {
    info_u64(con, "clients", "blocked_clients")
}

fn wait_blocked(con: &mut redis::Connection, n: u64) {
    assert!(common::eventually(Duration::from_secs(10), || blocked_clients(con) == n), "{n} clients blocked");
}

#[test]
fn blocked_clients_are_woken_by_pushes_in_the_order_they_blocked() {
    let _alone = alone();
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
    let _alone = alone();
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
    let _alone = alone();
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
    let _alone = alone();
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

/// A command sent as raw RESP, without waiting for its reply.
fn send(stream: &mut std::net::TcpStream, args: &[&str]) {
    use std::io::Write;
    let mut out = format!("*{}\r\n", args.len());
    for arg in args {
        out.push_str(&format!("${}\r\n{arg}\r\n", arg.len()));
    }
    stream.write_all(out.as_bytes()).expect("send");
}

/// One reply's first line.
fn first_line(stream: &mut std::net::TcpStream) -> String {
    reply_line(stream).expect("a reply within the read timeout")
}

/// One reply's first line, or `None` if none came within the read timeout.
fn reply_line(stream: &mut std::net::TcpStream) -> Option<String> {
    use std::io::Read;
    let mut line = Vec::new();
    let mut byte = [0u8];
    while !line.ends_with(b"\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => line.push(byte[0]),
            Ok(_) => panic!("connection closed"),
            Err(_) => return None,
        }
    }
    Some(String::from_utf8_lossy(&line).trim_end().to_string())
}

#[test]
fn clients_that_block_microseconds_apart_on_two_threads_are_served_in_the_order_they_sent() {
    let _alone = alone();
    // Redis's "BRPOPLPUSH with multiple blocked clients": two fresh connections (so on
    // two shard threads, reached through the accept loop) send their pops back to back.
    // The first one's destination is a string, so it must be answered WRONGTYPE and the
    // element go to the second; served the other way round, the first would wait forever.
    // Before blocked clients were queued by arrival this went wrong about one time in six.
    let out_of_order = two_clients_block_then_a_push(30, true);
    assert_eq!(out_of_order, 0, "rounds served out of order, of 30");
}

#[test]
fn a_push_sent_right_after_two_blocking_pops_serves_them_in_the_order_they_sent() {
    let _alone = alone();
    // The same with the push sent at once, as Redis's test sends it: the push can run
    // while the first client's command is still unread in its socket (its thread has
    // not run yet) and wake the second. Before a woken client waited for every thread
    // to read what had arrived (`Router::read_barrier`) and a pop queued behind an
    // earlier one let it go first, this went wrong in 37-68 rounds of 1,000 here (and
    // made CI's run of Redis's list unit time out); since, in none of 6,000. What is
    // left (docs/semantics.md): a push that overtakes both pops before either thread
    // has read its client.
    // Two threads spinning meanwhile stand for a busy machine: the server's threads
    // then wait for a core, which is when one reads its client late.
    let rounds = 1000;
    let spinning = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let spinners: Vec<_> = (0..2)
        .map(|_| {
            let spinning = spinning.clone();
            std::thread::spawn(move || {
                while spinning.load(std::sync::atomic::Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            })
        })
        .collect();
    let out_of_order = two_clients_block_then_a_push(rounds, false);
    spinning.store(false, std::sync::atomic::Ordering::Relaxed);
    spinners.into_iter().for_each(|spinner| spinner.join().unwrap());
    eprintln!("{out_of_order} of {rounds} rounds out of order");
    assert!(out_of_order <= rounds / 200, "{out_of_order} of {rounds} rounds served out of order");
}

/// Rounds of Redis's test on two shard threads: how many served the two clients out of
/// the order they sent their pops.
fn two_clients_block_then_a_push(rounds: usize, wait_until_blocked: bool) -> usize {
    let server = start_meridian(&["--shards", "2", "--persistence", "off"]);
    let mut admin = connect(&server);
    let mut out_of_order = 0;
    for round in 0..rounds {
        redis::cmd("DEL").arg("blist{t}").arg("target1{t}").arg("target2{t}").query::<()>(&mut admin).unwrap();
        redis::cmd("SET").arg("target1{t}").arg("nolist").query::<()>(&mut admin).unwrap();
        let mut first = std::net::TcpStream::connect(server.addr()).unwrap();
        let mut second = std::net::TcpStream::connect(server.addr()).unwrap();
        for stream in [&mut first, &mut second] {
            stream.set_nodelay(true).unwrap();
            stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            // Served, as Redis's deferring clients are (they SELECT first): a
            // connection still being accepted is read when it is, by Redis too.
            send(stream, &["PING"]);
            assert_eq!(first_line(stream), "+PONG");
        }
        send(&mut first, &["BRPOPLPUSH", "blist{t}", "target1{t}", "0"]);
        send(&mut second, &["BRPOPLPUSH", "blist{t}", "target2{t}", "0"]);
        if wait_until_blocked {
            wait_blocked(&mut admin, 2);
        }
        redis::cmd("LPUSH").arg("blist{t}").arg("foo").query::<()>(&mut admin).unwrap();
        // Out of order, the second takes the element and the first waits for ever.
        first.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
        match reply_line(&mut first) {
            Some(line) => {
                assert!(line.starts_with("-WRONGTYPE"), "round {round}: the first is answered WRONGTYPE, not {line}");
                assert_eq!(first_line(&mut second), "$3", "round {round}: the element goes to the second");
            }
            None => {
                out_of_order += 1;
                assert_eq!(first_line(&mut second), "$3", "round {round}: the second took the element");
            }
        }
        let target: Vec<String> = redis::cmd("LRANGE").arg("target2{t}").arg(0).arg(-1).query(&mut admin).unwrap();
        assert_eq!(target, vec!["foo".to_string()], "round {round}: moved once, to the second's list");
        // A client that goes away while blocked pops nothing.
        drop((first, second));
        wait_blocked(&mut admin, 0);
    }
    out_of_order
}

#[test]
fn clients_a_push_wakes_are_served_before_the_next_command_runs() {
    let _alone = alone();
    // Redis's "Circular BRPOPLPUSH", with the two lists on two shards: the push wakes
    // the first client, whose move wakes the second, whose move puts the element back;
    // all of it before the pushing client's next command, which sees it back in place.
    let server = start_meridian(&["--shards", "2", "--persistence", "off"]);
    let mut admin = connect(&server);
    let lists = common::keys_spread_over_shards("circle", 2, 2);
    for round in 0..20 {
        let mut one = connect(&server);
        let mut two = connect(&server);
        let (a, b) = (lists[0].clone(), lists[1].clone());
        let first =
            std::thread::spawn(move || -> Option<String> { redis::cmd("BRPOPLPUSH").arg(&a).arg(&b).arg(10).query(&mut one).unwrap() });
        wait_blocked(&mut admin, 1);
        let (a, b) = (lists[0].clone(), lists[1].clone());
        let second =
            std::thread::spawn(move || -> Option<String> { redis::cmd("BRPOPLPUSH").arg(&b).arg(&a).arg(10).query(&mut two).unwrap() });
        wait_blocked(&mut admin, 2);
        redis::cmd("RPUSH").arg(&lists[0]).arg("foo").query::<()>(&mut admin).unwrap();
        let at_home: Vec<String> = redis::cmd("LRANGE").arg(&lists[0]).arg(0).arg(-1).query(&mut admin).unwrap();
        let moved: Vec<String> = redis::cmd("LRANGE").arg(&lists[1]).arg(0).arg(-1).query(&mut admin).unwrap();
        assert_eq!((at_home, moved), (vec!["foo".to_string()], Vec::<String>::new()), "round {round}");
        assert_eq!((first.join().unwrap(), second.join().unwrap()), (Some("foo".into()), Some("foo".into())));
        redis::cmd("DEL").arg(&lists[0]).query::<()>(&mut admin).unwrap();
    }
}
