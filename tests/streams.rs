//! Streams on one real `meridian` process: what survives SIGKILL (entries, deletions,
//! trims, ids, consumer groups, consumers and pending entries, through segments and a
//! checkpoint, onto another shard count), and blocked readers served by writes from
//! other connections. Redis's own units (unit/type/stream, stream-cgroups) and the
//! differential script cover the replies; this covers what they cannot: a restart.

mod common;

use std::time::Duration;

use common::{ServerGuard, TempDir, connect, info_u64, start_meridian_at, wait_claimed, wait_flushed};

fn run(con: &mut redis::Connection, args: &[&str]) -> redis::Value {
    common::cluster::run(con, args)
}

fn kill(server: &mut ServerGuard) {
    server.child.kill().expect("SIGKILL");
    server.child.wait().expect("wait for the killed server");
}

/// What a restart must bring back of stream `key` and its group `group` (times left out:
/// idle times move on).
fn observed(con: &mut redis::Connection, key: &str, group: &str) -> (redis::Value, redis::Value, redis::Value, redis::Value) {
    let entries = run(con, &["XRANGE", key, "-", "+"]);
    let groups = run(con, &["XINFO", "GROUPS", key]);
    let pending = run(con, &["XPENDING", key, group]);
    let ids: redis::Value = redis::cmd("XPENDING").arg(key).arg(group).arg("-").arg("+").arg(100).query(con).expect("XPENDING");
    // [id, consumer, idle, deliveries]: idle moves on; keep the rest.
    let ids = match ids {
        redis::Value::Array(rows) => redis::Value::Array(
            rows.into_iter()
                .map(|row| match row {
                    redis::Value::Array(mut f) if f.len() == 4 => {
                        f.remove(2);
                        redis::Value::Array(f)
                    }
                    other => other,
                })
                .collect(),
        ),
        other => other,
    };
    (entries, groups, pending, ids)
}

fn xinfo_field(con: &mut redis::Connection, key: &str, field: &str) -> redis::Value {
    let info: Vec<redis::Value> = redis::cmd("XINFO").arg("STREAM").arg(key).query(con).expect("XINFO STREAM");
    let at = info.iter().position(|v| matches!(v, redis::Value::BulkString(b) if b == field.as_bytes())).expect("field");
    info[at + 1].clone()
}

#[test]
fn flushed_stream_writes_survive_sigkill_through_segments_and_checkpoints() {
    let dir = TempDir::new("streams");
    let data = dir.path.join("data");
    std::fs::create_dir_all(&data).expect("data dir");
    let args = ["--shards", "2", "--checkpoint-every-segments", "2", "--flush-interval-ms", "20"];
    let mut first = start_meridian_at(&data, &args, &[], &dir.path.join("first.log"));
    let mut con = connect(&first);
    let mut segment = wait_claimed(&mut con).1;
    run(&mut con, &["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]);
    for round in 1..=6u64 {
        for i in 0..3 {
            run(&mut con, &["XADD", "s", &format!("{round}-{i}"), "round", &round.to_string(), "i", &i.to_string()]);
        }
        run(&mut con, &["XREADGROUP", "GROUP", "g", &format!("c{}", round % 2), "COUNT", "2", "STREAMS", "s", ">"]);
        run(&mut con, &["XACK", "s", "g", &format!("{round}-0")]);
        run(&mut con, &["XDEL", "s", &format!("{round}-2")]);
        segment = wait_flushed(&mut con, segment);
    }
    run(&mut con, &["XTRIM", "s", "MINID", "2"]);
    run(&mut con, &["XCLAIM", "s", "g", "c9", "0", "3-1", "JUSTID"]);
    run(&mut con, &["XGROUP", "CREATECONSUMER", "s", "g", "idle-one"]);
    run(&mut con, &["XADD", "t", "5-5", "only", "entry"]);
    run(&mut con, &["XSETID", "t", "9-9", "ENTRIESADDED", "7", "MAXDELETEDID", "8-8"]);
    run(&mut con, &["XADD", "gone", "1-1", "a", "b"]);
    run(&mut con, &["DEL", "gone"]);
    wait_flushed(&mut con, segment);
    assert!(info_u64(&mut con, "persistence", "checkpoints_written") >= 1, "no checkpoint was written");
    let before = observed(&mut con, "s", "g");
    let consumers_before = run(&mut con, &["XINFO", "CONSUMERS", "s", "g"]);
    kill(&mut first);

    let second = start_meridian_at(&data, &["--shards", "3"], &[], &dir.path.join("second.log"));
    let mut con = connect(&second);
    assert_eq!(observed(&mut con, "s", "g"), before, "entries, group, pending entries survive");
    let names = |v: &redis::Value| -> Vec<String> {
        let text = format!("{v:?}");
        ["c0", "c1", "c9", "idle-one"].iter().filter(|c| text.contains(&format!("\"{c}\""))).map(|c| c.to_string()).collect()
    };
    assert_eq!(names(&run(&mut con, &["XINFO", "CONSUMERS", "s", "g"])), names(&consumers_before));
    assert_eq!(xinfo_field(&mut con, "t", "last-generated-id"), redis::Value::BulkString(b"9-9".to_vec()));
    assert_eq!(xinfo_field(&mut con, "t", "entries-added"), redis::Value::Int(7));
    assert_eq!(xinfo_field(&mut con, "t", "max-deleted-entry-id"), redis::Value::BulkString(b"8-8".to_vec()));
    assert_eq!(run(&mut con, &["EXISTS", "gone"]), redis::Value::Int(0));
    // Ids go on from the recovered last id.
    let err = redis::cmd("XADD").arg("t").arg("9-9").arg("f").arg("v").query::<String>(&mut con).expect_err("not above the last id");
    assert!(err.to_string().contains("equal or smaller"), "{err}");
    assert_eq!(run(&mut con, &["XADD", "t", "9-*", "f", "v"]), redis::Value::BulkString(b"9-10".to_vec()));
}

#[test]
fn blocked_readers_are_served_by_entries_added_on_other_connections() {
    let server = common::start_meridian(&["--persistence", "off", "--shards", "2"]);
    let mut writer = connect(&server);
    run(&mut writer, &["XADD", "s", "1-1", "old", "entry"]);
    run(&mut writer, &["XGROUP", "CREATE", "s", "g", "$"]);
    // `$` is the last id when the reader blocks: the old entry is not returned.
    let mut reader = connect(&server);
    let xread = std::thread::spawn(move || -> redis::Value {
        redis::cmd("XREAD").arg("BLOCK").arg(20_000).arg("STREAMS").arg("s").arg("$").query(&mut reader).expect("XREAD")
    });
    let mut group_reader = connect(&server);
    let xreadgroup = std::thread::spawn(move || -> redis::Value {
        redis::cmd("XREADGROUP")
            .arg("GROUP")
            .arg("g")
            .arg("alice")
            .arg("BLOCK")
            .arg(20_000)
            .arg("STREAMS")
            .arg("s")
            .arg(">")
            .query(&mut group_reader)
            .expect("XREADGROUP")
    });
    assert!(common::eventually(Duration::from_secs(10), || info_u64(&mut writer, "clients", "blocked_clients") == 2));
    run(&mut writer, &["XADD", "s", "2-1", "new", "entry"]);
    for reply in [xread.join().expect("XREAD"), xreadgroup.join().expect("XREADGROUP")] {
        let text = format!("{reply:?}");
        assert!(text.contains("2-1") && !text.contains("1-1"), "only the new entry: {text}");
    }
    let pending = run(&mut writer, &["XPENDING", "s", "g", "-", "+", "10", "alice"]);
    assert!(format!("{pending:?}").contains("2-1"), "delivered to alice, pending: {pending:?}");
    // A reader woken by a burst is sent at most 1,000 entries, as Redis sends a blocked
    // reader without COUNT; its first try, before blocking, reads everything.
    let mut reader = connect(&server);
    let burst = std::thread::spawn(move || -> redis::Value {
        redis::cmd("XREAD").arg("BLOCK").arg(20_000).arg("STREAMS").arg("burst").arg("$").query(&mut reader).expect("XREAD")
    });
    assert!(common::eventually(Duration::from_secs(10), || info_u64(&mut writer, "clients", "blocked_clients") == 1));
    run(&mut writer, &["EVAL", "for i=1,1500 do redis.call('XADD', KEYS[1], '*', 'f', 'v') end return 1", "1", "burst"]);
    let entries = |reply: &redis::Value| format!("{reply:?}").matches("\"f\"").count();
    assert_eq!(entries(&burst.join().expect("XREAD")), 1000);
    let all = run(&mut writer, &["XREAD", "BLOCK", "0", "STREAMS", "burst", "0"]);
    assert_eq!(entries(&all), 1500, "a first try reads everything");
    // A timeout answers a null array; nothing is left pending for it.
    let none = redis::cmd("XREAD").arg("BLOCK").arg(50).arg("STREAMS").arg("s").arg("$").query::<redis::Value>(&mut writer).expect("XREAD");
    assert_eq!(none, redis::Value::Nil);
}
