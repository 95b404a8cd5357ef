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
