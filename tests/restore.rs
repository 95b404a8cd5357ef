//! `meridian restore --to TIME`: the data as of a point in time, served from a new dir.

mod common;

use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64
}

fn restore(source: &std::path::Path, to: &str, into: &std::path::Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_meridian"))
        .arg("--data-dir")
        .arg(source)
        .args(["restore", "--to", to])
        .arg("--into")
        .arg(into)
        .output()
        .expect("run meridian restore")
}

fn get(con: &mut redis::Connection, key: &str) -> Option<String> {
    redis::cmd("GET").arg(key).query(con).unwrap()
}

#[test]
fn restore_rebuilds_the_state_as_of_a_point_in_time() {
    let source = common::temp_dir("restore-src");
    // Frequent checkpoints, so that restore has to pick the right one.
    let mut server = common::start_meridian_on(&source, &["--flush-interval-ms", "20", "--checkpoint-every-segments", "2"]);
    let mut con = common::connect(&server);
    let wait = |con: &mut redis::Connection| {
        let acked: Vec<i64> = redis::cmd("WAITAOF").arg(1).arg(0).arg(5000).query(con).unwrap();
        assert_eq!(acked[0], 1);
    };
    for i in 0..5 {
        let _: () = redis::cmd("SET").arg(format!("early{i}")).arg(i).query(&mut con).unwrap();
        wait(&mut con);
    }
    let _: () = redis::cmd("SET").arg("a").arg("before").query(&mut con).unwrap();
    wait(&mut con);
    std::thread::sleep(Duration::from_millis(50));
    let point = now_ms();
    std::thread::sleep(Duration::from_millis(50));
    let _: () = redis::cmd("SET").arg("a").arg("after").query(&mut con).unwrap();
    let _: () = redis::cmd("SET").arg("b").arg("new").query(&mut con).unwrap();
    let _: i64 = redis::cmd("DEL").arg("early0").query(&mut con).unwrap();
    wait(&mut con);
    server.child.kill().unwrap();
    server.child.wait().unwrap();

    let at_point = common::temp_dir("restore-at-point");
    let _ = std::fs::remove_dir_all(&at_point);
    let output = restore(&source, &point.to_string(), &at_point);
    assert!(output.status.success(), "restore failed: {}", String::from_utf8_lossy(&output.stderr));
    let mut restored = common::start_meridian_on(&at_point, &[]);
    let mut con = common::connect(&restored);
    assert_eq!(get(&mut con, "a").as_deref(), Some("before"));
    assert_eq!(get(&mut con, "b"), None, "written after the point");
    assert_eq!(get(&mut con, "early0").as_deref(), Some("0"), "deleted after the point");
    assert_eq!(get(&mut con, "early4").as_deref(), Some("4"));
    restored.child.kill().unwrap();
    restored.child.wait().unwrap();

    let latest = common::temp_dir("restore-latest");
    let _ = std::fs::remove_dir_all(&latest);
    let output = restore(&source, &(now_ms() + 1000).to_string(), &latest);
    assert!(output.status.success(), "restore failed: {}", String::from_utf8_lossy(&output.stderr));
    let mut restored = common::start_meridian_on(&latest, &[]);
    let mut con = common::connect(&restored);
    assert_eq!(get(&mut con, "a").as_deref(), Some("after"));
    assert_eq!(get(&mut con, "b").as_deref(), Some("new"));
    assert_eq!(get(&mut con, "early0"), None);
    restored.child.kill().unwrap();
    restored.child.wait().unwrap();

    let output = restore(&source, "not-a-time", &common::temp_dir("restore-bad"));
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("RFC 3339"));
    for dir in [source, at_point, latest] {
        let _ = std::fs::remove_dir_all(dir);
    }
}
