//! WAITAOF and `--durability sync`: a write reported durable survives SIGKILL.

mod common;

#[test]
fn waitaof_reports_the_write_stored_and_it_survives_sigkill() {
    let dir = common::temp_dir("waitaof");
    // A long flush interval: only WAITAOF's wait makes the write durable in time.
    let mut server = common::start_meridian_on(&dir, &["--flush-interval-ms", "500"]);
    let mut con = common::connect(&server);
    // The first segment is cut at once; the next not before 500 ms after it, so the
    // write below is durable only if WAITAOF really waits.
    let _: () = redis::cmd("SET").arg("warm").arg("up").query(&mut con).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(100));
    let _: () = redis::cmd("SET").arg("k").arg("v1").query(&mut con).unwrap();
    let acked: Vec<i64> = redis::cmd("WAITAOF").arg(1).arg(0).arg(5000).query(&mut con).unwrap();
    assert_eq!(acked, vec![1, 0], "stored locally, no replicas yet");
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    let mut server = common::start_meridian_on(&dir, &[]);
    let mut con = common::connect(&server);
    let value: Option<String> = redis::cmd("GET").arg("k").query(&mut con).unwrap();
    assert_eq!(value.as_deref(), Some("v1"));
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn save_stores_every_write_before_it_and_restarts_the_change_count() {
    let dir = common::temp_dir("save");
    // A flush interval far past the test: only SAVE can make the writes durable in time.
    let mut server = common::start_meridian_on(&dir, &["--flush-interval-ms", "60000"]);
    let mut con = common::connect(&server);
    let changes = |con: &mut redis::Connection| common::info_u64(con, "persistence", "rdb_changes_since_last_save");
    let started: i64 = redis::cmd("LASTSAVE").query(&mut con).unwrap();
    assert_eq!(common::info_u64(&mut con, "persistence", "rdb_last_save_time"), started as u64, "before any SAVE: the start");
    assert_eq!(changes(&mut con), 0);
    let _: () = redis::cmd("SET").arg("k").arg("v1").query(&mut con).unwrap();
    let _: i64 = redis::cmd("SADD").arg("s").arg("a").query(&mut con).unwrap();
    // A change per key state or element written: the SET, the new set, its new member.
    let _: i64 = redis::cmd("SADD").arg("s").arg("b").query(&mut con).unwrap();
    assert_eq!(changes(&mut con), 3);
    // An SADD of a present member is a change here (Redis counts none): it renews the
    // member's dot, so that it wins over an SREM made meanwhile in another region.
    let _: i64 = redis::cmd("SADD").arg("s").arg("b").query(&mut con).unwrap();
    assert_eq!(changes(&mut con), 4);
    // Bit 0 is the top bit of `v` (0x76): the first SETBIT sets it, the second finds it set.
    let _: i64 = redis::cmd("SETBIT").arg("k").arg(0).arg(1).query(&mut con).unwrap();
    let _: i64 = redis::cmd("SETBIT").arg("k").arg(0).arg(1).query(&mut con).unwrap();
    assert_eq!(changes(&mut con), 5, "one SETBIT changed a bit, the other nothing");
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let _: () = redis::cmd("SAVE").query(&mut con).unwrap();
    assert_eq!(changes(&mut con), 0);
    let saved: i64 = redis::cmd("LASTSAVE").query(&mut con).unwrap();
    assert!(saved > started, "LASTSAVE moves with a SAVE: {started} then {saved}");
    let _: i64 = redis::cmd("DEL").arg("s").query(&mut con).unwrap();
    assert_eq!(changes(&mut con), 1);
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    let mut server = common::start_meridian_on(&dir, &[]);
    let mut con = common::connect(&server);
    let value: Option<Vec<u8>> = redis::cmd("GET").arg("k").query(&mut con).unwrap();
    assert_eq!(value, Some(vec![b'v' | 0x80, b'1']), "SETBIT's change was saved too");
    let members: Vec<String> = redis::cmd("SMEMBERS").arg("s").query(&mut con).unwrap();
    assert_eq!(members.len(), 2, "the set as saved: {members:?}");
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn waitaof_refuses_numlocal_without_persistence() {
    let server = common::start_meridian(&["--persistence", "off"]);
    let mut con = common::connect(&server);
    let error = redis::cmd("WAITAOF").arg(1).arg(0).arg(10).query::<Vec<i64>>(&mut con).unwrap_err();
    assert!(error.to_string().contains("persistence is off"), "{error}");
    let acked: Vec<i64> = redis::cmd("WAITAOF").arg(0).arg(0).arg(10).query(&mut con).unwrap();
    assert_eq!(acked, vec![0, 0]);
}

#[test]
fn with_sync_durability_every_acknowledged_write_survives_sigkill() {
    let dir = common::temp_dir("sync");
    let mut server = common::start_meridian_on(&dir, &["--durability", "sync", "--flush-interval-ms", "300"]);
    let mut con = common::connect(&server);
    for i in 0..5 {
        let _: () = redis::cmd("SET").arg(format!("k{i}")).arg(i).query(&mut con).unwrap();
    }
    let _: i64 = redis::cmd("INCRBY").arg("counter").arg(7).query(&mut con).unwrap();
    // Killed right after the last acknowledgement: nothing may be missing.
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    let mut server = common::start_meridian_on(&dir, &[]);
    let mut con = common::connect(&server);
    for i in 0..5 {
        let value: Option<i64> = redis::cmd("GET").arg(format!("k{i}")).query(&mut con).unwrap();
        assert_eq!(value, Some(i), "k{i}");
    }
    let counter: i64 = redis::cmd("GET").arg("counter").query(&mut con).unwrap();
    assert_eq!(counter, 7);
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    let _ = std::fs::remove_dir_all(dir);
}

/// A flush interval no test outlives: any segment stored during one of the tests below
/// was stored because a writer waited for it.
const NEVER_MS: &str = "600000";

/// A connection whose replies must come within 30 s: far more than a PUT to a local
/// folder takes, far less than the flush interval, so a write that waits for the
/// interval fails the test instead of passing late.
fn connect_impatient(server: &common::ServerGuard) -> redis::Connection {
    let con = common::connect(server);
    con.set_read_timeout(Some(std::time::Duration::from_secs(30))).expect("read timeout");
    con
}

fn restart_and_check(dir: &std::path::Path, server: &mut common::ServerGuard, keys: &[(String, String)]) {
    // SIGKILL right after the last acknowledgement: nothing acknowledged may be missing.
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    let mut server = common::start_meridian_on(dir, &[]);
    let mut con = common::connect(&server);
    for (key, value) in keys {
        let stored: Option<String> = redis::cmd("GET").arg(key).query(&mut con).unwrap();
        assert_eq!(stored.as_deref(), Some(value.as_str()), "{key} after SIGKILL");
    }
    server.child.kill().unwrap();
    server.child.wait().unwrap();
}

#[test]
fn sync_writes_are_acknowledged_one_put_each_not_one_flush_interval_each() {
    let dir = common::temp_dir("sync-at-once");
    let mut server = common::start_meridian_on(&dir, &["--durability", "sync", "--flush-interval-ms", NEVER_MS]);
    let mut con = connect_impatient(&server);
    let writes = 20;
    let mut keys = Vec::new();
    for i in 0..writes {
        let (key, value) = (format!("k{i}"), format!("v{i}"));
        let _: () = redis::cmd("SET").arg(&key).arg(&value).query(&mut con).unwrap_or_else(|e| panic!("write {i}: {e}"));
        keys.push((key, value));
    }
    // Each write waited for its own segment (a lone sequential writer has nobody to
    // group with), and every one after the first was cut before the interval.
    let written = common::info_u64(&mut con, "persistence", "segments_written");
    let for_waiters = common::info_u64(&mut con, "persistence", "segments_for_waiters");
    assert_eq!(written, writes, "one segment per sequential sync write");
    assert!(for_waiters >= writes - 1, "segments cut for waiters: {for_waiters} of {written}");
    assert_eq!(common::info_u64(&mut con, "persistence", "durability_waiters"), 0);
    restart_and_check(&dir, &mut server, &keys);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn waitaof_gets_its_segment_at_once_too() {
    let dir = common::temp_dir("waitaof-at-once");
    let mut server = common::start_meridian_on(&dir, &["--flush-interval-ms", NEVER_MS]);
    let mut con = connect_impatient(&server);
    let mut keys = Vec::new();
    for i in 0..5 {
        let (key, value) = (format!("w{i}"), format!("v{i}"));
        let _: () = redis::cmd("SET").arg(&key).arg(&value).query(&mut con).unwrap();
        // Timeout 0: wait as long as it takes; only a flush for the waiter ends it.
        let acked: Vec<i64> = redis::cmd("WAITAOF").arg(1).arg(0).arg(0).query(&mut con).unwrap_or_else(|e| panic!("WAITAOF {i}: {e}"));
        assert_eq!(acked, vec![1, 0]);
        keys.push((key, value));
    }
    assert!(common::info_u64(&mut con, "persistence", "segments_for_waiters") >= 4);
    restart_and_check(&dir, &mut server, &keys);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn concurrent_sync_writers_share_segments() {
    let dir = common::temp_dir("sync-group");
    let mut server = common::start_meridian_on(&dir, &["--durability", "sync", "--flush-interval-ms", NEVER_MS]);
    let (clients, per_client) = (32, 20);
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(clients));
    let threads: Vec<_> = (0..clients)
        .map(|c| {
            let mut con = connect_impatient(&server);
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.wait();
                (0..per_client)
                    .map(|i| {
                        let (key, value) = (format!("c{c}:{i}"), format!("{c}.{i}"));
                        let _: () =
                            redis::cmd("SET").arg(&key).arg(&value).query(&mut con).unwrap_or_else(|e| panic!("client {c} write {i}: {e}"));
                        (key, value)
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let keys: Vec<(String, String)> = threads.into_iter().flat_map(|t| t.join().expect("writer")).collect();
    let writes = (clients * per_client) as u64;
    assert_eq!(keys.len() as u64, writes);
    let mut con = common::connect(&server);
    let segments = common::info_u64(&mut con, "persistence", "segments_written");
    // Writers that arrive while a PUT is in flight share the next segment. With 32
    // writers each waiting for its previous write, most PUTs carry several.
    assert!(segments * 2 <= writes, "{writes} sync writes took {segments} segments: no group commit");
    eprintln!("{writes} sync writes from {clients} clients in {segments} segments");
    restart_and_check(&dir, &mut server, &keys);
    let _ = std::fs::remove_dir_all(dir);
}
