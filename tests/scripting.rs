//! Lua scripting (EVAL, EVALSHA, SCRIPT) on real `meridian` processes with a real
//! client (redis-rs): a script is atomic across shards, redis-rs's `Script` (EVALSHA,
//! then EVAL on NOSCRIPT) works, a runaway script is answered BUSY to others and
//! stopped by SCRIPT KILL while the node keeps accepting clients, a script that wrote
//! cannot be killed, and a script's writes reach another region. Replies and errors
//! are compared byte for byte with redis-server in tests/differential/commands.txt.

mod common;

use std::time::Duration;

use common::cluster::Cluster;
use common::{connect, error_text, eventually, keys_spread_over_shards, start_meridian};

const SHARDS: usize = 4;

#[test]
fn redis_rs_script_loads_by_sha_and_falls_back_to_eval() {
    let server = start_meridian(&["--shards", &SHARDS.to_string(), "--persistence", "off"]);
    let mut con = connect(&server);
    let script = redis::Script::new("return redis.call('INCRBY', KEYS[1], ARGV[1])");
    // The first call finds no script by SHA (NOSCRIPT) and sends the body; the second
    // runs by SHA.
    let first: i64 = script.key("counter").arg(5).invoke(&mut con).expect("first run");
    let second: i64 = script.key("counter").arg(7).invoke(&mut con).expect("second run");
    assert_eq!((first, second), (5, 12));
    let exists: Vec<i64> = redis::cmd("SCRIPT").arg("EXISTS").arg(script.get_hash()).query(&mut con).unwrap();
    assert_eq!(exists, vec![1]);
    redis::cmd("SCRIPT").arg("FLUSH").query::<()>(&mut con).unwrap();
    let third: i64 = script.key("counter").arg(1).invoke(&mut con).expect("runs again after SCRIPT FLUSH");
    assert_eq!(third, 13);
}

#[test]
fn a_script_across_shards_is_never_seen_half_done() {
    let server = start_meridian(&["--shards", &SHARDS.to_string(), "--persistence", "off"]);
    let keys = keys_spread_over_shards("lua", 4, SHARDS);
    // The reader reads every key in one script (MGET alone is per-shard parts, not atomic
    // as a whole).
    common::assert_never_seen_half_done(
        &server,
        &keys,
        "script",
        |con, keys| {
            let incr_all = "for _, k in ipairs(KEYS) do redis.call('INCR', k) end return #KEYS";
            let n: i64 = redis::cmd("EVAL").arg(incr_all).arg(keys.len()).arg(keys).query(con).expect("EVAL");
            assert_eq!(n, keys.len() as i64);
        },
        |con, keys| redis::cmd("EVAL").arg("return redis.call('MGET', unpack(KEYS))").arg(keys.len()).arg(keys).query(con).expect("EVAL"),
    );
}

#[test]
fn a_runaway_script_is_answered_busy_and_stopped_by_script_kill() {
    let server = start_meridian(&["--shards", &SHARDS.to_string(), "--persistence", "off"]);
    let mut admin = connect(&server);
    redis::cmd("CONFIG").arg("SET").arg("lua-time-limit").arg("100").query::<()>(&mut admin).unwrap();
    redis::cmd("SET").arg("k").arg("before").query::<()>(&mut admin).unwrap();
    let mut runner = connect(&server);
    let runaway = std::thread::spawn(move || {
        redis::cmd("EVAL").arg("local i = 0 while true do i = i + 1 end").arg(0).query::<()>(&mut runner).expect_err("killed")
    });
    // Past the limit, other clients' commands are answered BUSY, new connections too:
    // the node keeps accepting and reading clients while the script holds the data.
    assert!(
        eventually(Duration::from_secs(10), || redis::cmd("GET")
            .arg("k")
            .query::<String>(&mut admin)
            .is_err_and(|e| error_text(&e).starts_with("BUSY Redis is busy running a script."))),
        "a command past lua-time-limit is answered BUSY"
    );
    let mut newcomer = connect(&server);
    let busy = redis::cmd("PING").query::<String>(&mut newcomer).expect_err("BUSY");
    assert!(error_text(&busy).starts_with("BUSY "), "{busy}");
    // A transaction that meets BUSY while queueing aborts.
    redis::cmd("MULTI").query::<()>(&mut newcomer).expect("MULTI is allowed while busy");
    assert!(redis::cmd("SET").arg("k").arg("in-tx").query::<()>(&mut newcomer).is_err());
    redis::cmd("SCRIPT").arg("KILL").query::<()>(&mut admin).expect("SCRIPT KILL");
    let killed = runaway.join().expect("runner");
    assert!(error_text(&killed).contains("Script killed by user with SCRIPT KILL"), "{killed}");
    let exec = redis::cmd("EXEC").query::<()>(&mut newcomer).expect_err("EXECABORT");
    assert!(error_text(&exec).starts_with("EXECABORT"), "{exec}");
    assert_eq!(redis::cmd("GET").arg("k").query::<String>(&mut admin).unwrap(), "before", "nothing ran in the aborted transaction");
    let pong: String = redis::cmd("PING").query(&mut newcomer).unwrap();
    assert_eq!(pong, "PONG", "the node serves again");
    let none = redis::cmd("SCRIPT").arg("KILL").query::<()>(&mut admin).expect_err("NOTBUSY");
    assert!(error_text(&none).starts_with("NOTBUSY"), "{none}");
}

#[test]
fn a_script_that_wrote_cannot_be_killed_and_keeps_running() {
    let server = start_meridian(&["--shards", &SHARDS.to_string(), "--persistence", "off"]);
    let mut admin = connect(&server);
    redis::cmd("CONFIG").arg("SET").arg("lua-time-limit").arg("50").query::<()>(&mut admin).unwrap();
    let mut runner = connect(&server);
    // Writes, then spins for a while (about a second), then writes again.
    let script = "redis.call('SET', KEYS[1], 'first') local t = redis.call('TIME')[1] + 0 \
                  while redis.call('TIME')[1] + 0 < t + 2 do end redis.call('SET', KEYS[2], 'second') return 'done'";
    let spinning = std::thread::spawn(move || redis::cmd("EVAL").arg(script).arg(2).arg("w1").arg("w2").query::<String>(&mut runner));
    assert!(eventually(Duration::from_secs(10), || {
        redis::cmd("SCRIPT").arg("KILL").query::<()>(&mut admin).is_err_and(|e| error_text(&e).starts_with("UNKILLABLE"))
    }));
    assert_eq!(spinning.join().expect("runner").expect("the script ran to its end"), "done");
    let values: Vec<String> = redis::cmd("MGET").arg("w1").arg("w2").query(&mut admin).unwrap();
    assert_eq!(values, vec!["first", "second"]);
}

#[test]
fn a_scripts_writes_reach_another_region() {
    let cluster = Cluster::start(2, &["--persistence", "off"]);
    let (mut here, mut there) = (cluster.con(0), cluster.con(1));
    let script = "redis.call('HSET', KEYS[1], 'by', 'script') redis.call('INCRBY', KEYS[2], 5) return 'ok'";
    let reply: String = redis::cmd("EVAL").arg(script).arg(2).arg("doc").arg("hits").query(&mut here).unwrap();
    assert_eq!(reply, "ok");
    assert!(
        eventually(Duration::from_secs(20), || {
            let by: Option<String> = redis::cmd("HGET").arg("doc").arg("by").query(&mut there).unwrap();
            let hits: Option<i64> = redis::cmd("GET").arg("hits").query(&mut there).unwrap();
            by.as_deref() == Some("script") && hits == Some(5)
        }),
        "a script's effects replicate as ordinary writes"
    );
    // The script cache is the node's own: the other region answers NOSCRIPT until it
    // sees the body (clients then send EVAL).
    let sha = redis::Script::new(script).get_hash().to_owned();
    let missing = redis::cmd("EVALSHA").arg(&sha).arg(2).arg("doc").arg("hits").query::<String>(&mut there).expect_err("NOSCRIPT");
    assert!(error_text(&missing).starts_with("NOSCRIPT"), "{missing}");
}

/// redis-py's script helpers: `register_script` (EVALSHA, then EVAL on NOSCRIPT) and
/// `Lock`, whose release and extend are scripts (a release by a client that does not
/// hold the lock must fail). redis-py comes with the `falkordb` client CI installs.
#[test]
fn redis_py_registered_scripts_and_locks_work() {
    let has_redis_py = std::process::Command::new("python3").args(["-c", "import redis"]).status().is_ok_and(|s| s.success());
    if !has_redis_py {
        assert!(std::env::var_os("CI").is_none(), "redis-py is required in CI (pip install redis)");
        eprintln!("skipped: python3 with redis-py not found");
        return;
    }
    let server = start_meridian(&["--shards", &SHARDS.to_string(), "--persistence", "off"]);
    let program = r#"
import sys, redis
r = redis.Redis(port=int(sys.argv[1]))
add = r.register_script("return redis.call('INCRBY', KEYS[1], ARGV[1])")
assert add(keys=['c'], args=[3]) == 3
assert add(keys=['c'], args=[4]) == 7
mine = r.lock('resource', timeout=10)
assert mine.acquire(blocking=False)
assert not r.lock('resource', timeout=10).acquire(blocking=False), 'held by another'
mine.extend(5)
mine.release()
assert r.exists('resource') == 0
theirs = r.lock('resource', timeout=10)
assert theirs.acquire(blocking=False)
try:
    mine.release()
    raise SystemExit('a release by a client that does not hold the lock succeeded')
except redis.exceptions.LockError:
    pass
print('ok')
"#;
    let out = std::process::Command::new("python3").args(["-c", program, &server.port.to_string()]).output().expect("run python3");
    assert!(out.status.success(), "redis-py: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ok");
}

/// The interpreter's memory is bounded (1 GiB): a script that grows a table without end
/// fails with Lua's out-of-memory error instead of taking the node down, and the next
/// script runs as usual.
#[test]
fn a_script_that_eats_memory_fails_and_the_next_one_runs() {
    let server = start_meridian(&["--persistence", "off"]);
    let mut con = connect(&server);
    let hog = "local t = {} local i = 0 while true do i = i + 1 t[i] = string.rep('x', 1048576) .. i end";
    // Filling 1 GiB took 12-14 s on the 2-core VM (release and debug builds alike),
    // past the usual reply timeout; this test is about the error and the recovery,
    // not the time.
    con.set_read_timeout(Some(std::time::Duration::from_secs(120))).expect("set read timeout");
    let failed = redis::cmd("EVAL").arg(hog).arg(0).query::<()>(&mut con).expect_err("out of memory");
    assert!(error_text(&failed).contains("not enough memory"), "{failed}");
    let after: i64 = redis::cmd("EVAL").arg("return 1 + 1").arg(0).query(&mut con).expect("the interpreter still works");
    assert_eq!(after, 2);
}
