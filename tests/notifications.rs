//! Keyspace notifications against Debian's `redis-server`: each scenario runs on both
//! servers with a subscriber on `__key*__:*`, and the notifications they publish (each
//! channel and message, in order) must be the same. Meridian runs with one shard (every
//! command on one shard) and with four (most multi-key commands cross shards), so both
//! ways a command may run are held to Redis's events.
//!
//! Plus what a differential run can't show: expiry notifications (lazy and active),
//! CONFIG GET/SET of the flags, the flag as a command-line setting, and that nothing is
//! published while the flags are empty.

mod common;
#[path = "notifications/scenarios.rs"]
mod scenarios;

use std::time::{Duration, Instant};

use common::{ServerGuard, connect, redis_server_available, start_meridian, start_redis};
use scenarios::{SCENARIOS, Scenario};

/// The channel a scenario's end is published on: every notification before it was
/// delivered (both servers publish a command's notifications before its reply).
const END: &str = "notifications-test-end";

fn cmd_of(line: &str) -> redis::Cmd {
    let mut words = line.split_whitespace();
    let mut cmd = redis::cmd(words.next().expect("a command"));
    for word in words {
        cmd.arg(word);
    }
    cmd
}

fn run_line(con: &mut redis::Connection, line: &str) {
    if let Some(rest) = line.strip_prefix("@dumprestore ") {
        let words: Vec<&str> = rest.split_whitespace().collect();
        let payload: Vec<u8> = redis::cmd("DUMP").arg(words[0]).query(con).expect("DUMP");
        let mut restore = redis::cmd("RESTORE");
        restore.arg(words[1]).arg(0).arg(payload);
        for option in &words[2..] {
            restore.arg(*option);
        }
        let _: redis::RedisResult<redis::Value> = restore.query(con);
        return;
    }
    // Replies are not compared here (tests/differential.rs does that): errors included.
    let _: redis::RedisResult<redis::Value> = cmd_of(line).query(con);
}

/// The notifications `scenario` publishes on `server`, as (channel, message) in order.
fn notifications(server: &ServerGuard, scenario: &Scenario) -> Vec<(String, String)> {
    let mut con = connect(server);
    let _: () = redis::cmd("FLUSHALL").query(&mut con).unwrap();
    let _: () = redis::cmd("CONFIG").arg("SET").arg("notify-keyspace-events").arg("").query(&mut con).unwrap();
    for line in scenario.setup {
        run_line(&mut con, line);
    }
    let _: () = redis::cmd("CONFIG").arg("SET").arg("notify-keyspace-events").arg(scenario.flags).query(&mut con).unwrap();
    let mut sub = connect(server);
    let mut pubsub = sub.as_pubsub();
    pubsub.psubscribe("__key*__:*").unwrap();
    pubsub.subscribe(END).unwrap();
    pubsub.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    for line in scenario.commands {
        run_line(&mut con, line);
    }
    let _: i64 = redis::cmd("PUBLISH").arg(END).arg("x").query(&mut con).unwrap();
    let mut seen = Vec::new();
    loop {
        let message = pubsub.get_message().expect("the end marker arrives");
        if message.get_channel_name() == END {
            break;
        }
        seen.push((message.get_channel_name().to_string(), message.get_payload::<String>().unwrap()));
    }
    let _: () = redis::cmd("CONFIG").arg("SET").arg("notify-keyspace-events").arg("").query(&mut con).unwrap();
    seen
}

#[test]
fn every_scenario_publishes_the_notifications_redis_publishes() {
    if !redis_server_available() {
        eprintln!("SKIPPED: redis-server is not installed");
        return;
    }
    let redis = start_redis(&[]);
    let one_shard = start_meridian(&["--shards", "1", "--persistence", "off"]);
    let four_shards = start_meridian(&["--shards", "4", "--persistence", "off"]);
    let mut mismatches = Vec::new();
    for scenario in SCENARIOS {
        let expected = notifications(&redis, scenario);
        assert!(!expected.is_empty() || scenario.commands.is_empty(), "{}: redis published nothing", scenario.name);
        for (label, server) in [("1 shard", &one_shard), ("4 shards", &four_shards)] {
            let got = notifications(server, scenario);
            if got != expected {
                mismatches.push(format!("{} ({label}):\n  redis:    {expected:?}\n  meridian: {got:?}", scenario.name));
            }
        }
    }
    assert!(mismatches.is_empty(), "notifications differ from redis-server's:\n{}", mismatches.join("\n"));
}

/// Read one notification's (channel, message), or `None` after `wait`. Any other
/// failure (a closed connection, a bad frame) fails the test with its cause rather
/// than passing for silence.
fn next_message(pubsub: &mut redis::PubSub, wait: Duration) -> Option<(String, String)> {
    pubsub.set_read_timeout(Some(wait.max(Duration::from_millis(1)))).unwrap();
    match pubsub.get_message() {
        Ok(message) => Some((message.get_channel_name().to_string(), message.get_payload::<String>().unwrap())),
        Err(e) if e.is_timeout() => None,
        Err(e) => panic!("reading a notification failed: {e:?}"),
    }
}

fn expired(key: &str) -> Option<(String, String)> {
    Some(("__keyevent@0__:expired".to_string(), key.to_string()))
}

#[test]
fn a_key_whose_ttl_passes_raises_expired_whether_read_or_expired_actively() {
    let server = start_meridian(&["--shards", "2", "--persistence", "off"]);
    let mut con = connect(&server);
    let _: () = redis::cmd("CONFIG").arg("SET").arg("notify-keyspace-events").arg("Ex").query(&mut con).unwrap();
    let mut sub = connect(&server);
    let mut pubsub = sub.as_pubsub();
    pubsub.psubscribe("__keyevent@0__:*").unwrap();
    // Active expiry: nobody reads the key.
    let _: () = redis::cmd("PSETEX").arg("active").arg(50).arg(1).query(&mut con).unwrap();
    assert_eq!(next_message(&mut pubsub, Duration::from_secs(5)), expired("active"));
    // Lazy expiry: a read right after the TTL passed finds it first, usually.
    let _: () = redis::cmd("PSETEX").arg("lazy").arg(1).arg(1).query(&mut con).unwrap();
    std::thread::sleep(Duration::from_millis(5));
    let value: Option<String> = redis::cmd("GET").arg("lazy").query(&mut con).unwrap();
    assert_eq!(value, None);
    assert_eq!(next_message(&mut pubsub, Duration::from_secs(5)), expired("lazy"));
    assert_eq!(next_message(&mut pubsub, Duration::from_millis(300)), None, "once, whoever removed it");
}

#[test]
fn flags_are_set_and_read_back_in_redis_spelling_and_bad_letters_are_refused() {
    let server = start_meridian(&["--persistence", "off", "--notify-keyspace-events", "KEA"]);
    let mut con = connect(&server);
    let get = |con: &mut redis::Connection| -> String {
        let pair: Vec<String> = redis::cmd("CONFIG").arg("GET").arg("notify-keyspace-events").query(con).unwrap();
        pair[1].clone()
    };
    assert_eq!(get(&mut con), "AKE", "the command-line setting, as CONFIG GET spells it");
    for (set, shown) in [("gKE", "gKE"), ("$lshzxeKE", "$lshzxeKE"), ("KA", "AK"), ("KEAnm", "AKEm"), ("nm", "nm"), ("", "")] {
        let _: () = redis::cmd("CONFIG").arg("SET").arg("notify-keyspace-events").arg(set).query(&mut con).unwrap();
        assert_eq!(get(&mut con), shown, "CONFIG SET notify-keyspace-events {set:?}");
    }
    let error = redis::cmd("CONFIG").arg("SET").arg("notify-keyspace-events").arg("KEw").query::<()>(&mut con).unwrap_err();
    assert_eq!(
        common::error_text(&error),
        "ERR CONFIG SET failed (possibly related to argument 'notify-keyspace-events') - Invalid event class character. Use 'Ag$lshzxeKEtmdn'."
    );
    assert_eq!(get(&mut con), "", "a refused value changes nothing");
}

#[test]
fn nothing_is_published_while_the_flags_are_empty_or_name_no_channel() {
    let server = start_meridian(&["--persistence", "off"]);
    let mut con = connect(&server);
    let mut sub = connect(&server);
    let mut pubsub = sub.as_pubsub();
    pubsub.psubscribe("*").unwrap();
    for flags in ["", "A", "gn"] {
        let _: () = redis::cmd("CONFIG").arg("SET").arg("notify-keyspace-events").arg(flags).query(&mut con).unwrap();
        let _: () = redis::cmd("SET").arg("k").arg(1).query(&mut con).unwrap();
        let _: i64 = redis::cmd("DEL").arg("k").query(&mut con).unwrap();
    }
    let started = Instant::now();
    assert_eq!(next_message(&mut pubsub, Duration::from_millis(300)), None, "no K or E: nothing published");
    assert!(started.elapsed() >= Duration::from_millis(250));
}

/// The next keyspace-channel notification `(key, event)` on `pubsub`, skipping keyevent
/// ones, or `None` after `wait`.
fn next_keyspace(pubsub: &mut redis::PubSub, wait: Duration) -> Option<(String, String)> {
    let deadline = Instant::now() + wait;
    while Instant::now() < deadline {
        let (channel, message) = next_message(pubsub, deadline - Instant::now())?;
        if let Some(key) = channel.strip_prefix("__keyspace@0__:") {
            return Some((key.to_string(), message));
        }
    }
    None
}

fn pair(key: &str, event: &str) -> Option<(String, String)> {
    Some((key.to_string(), event.to_string()))
}

#[test]
fn a_write_merged_from_another_region_raises_merged_there_and_the_command_event_only_where_it_ran() {
    let cluster = common::cluster::Cluster::start(2, &["--persistence", "off", "--notify-keyspace-events", "KEAn"]);
    cluster.run(0, &["SET", "warmup", "1"]);
    cluster.wait_converged(Duration::from_secs(30));
    let mut here_con = cluster.con(0);
    let mut there_con = cluster.con(1);
    let mut here = here_con.as_pubsub();
    let mut there = there_con.as_pubsub();
    here.psubscribe("__key*__:*").unwrap();
    there.psubscribe("__key*__:*").unwrap();
    let wait = Duration::from_secs(10);

    cluster.run(0, &["SET", "k", "v"]);
    assert_eq!(next_keyspace(&mut here, wait), pair("k", "new"));
    assert_eq!(next_keyspace(&mut here, wait), pair("k", "set"));
    assert_eq!(next_keyspace(&mut there, wait), pair("k", "new"), "the key appears in the other region");
    assert_eq!(next_keyspace(&mut there, wait), pair("k", "merged"));

    cluster.run(0, &["SADD", "s", "a", "b"]);
    assert_eq!(next_keyspace(&mut there, wait), pair("s", "new"));
    assert_eq!(next_keyspace(&mut there, wait), pair("s", "merged"));
    cluster.run(0, &["SREM", "s", "a"]);
    assert_eq!(next_keyspace(&mut there, wait), pair("s", "merged"), "a change to a collection");
    cluster.run(0, &["DEL", "k"]);
    assert_eq!(next_keyspace(&mut there, wait), pair("k", "merged"), "a delete");
    // A write in the other region: the same the other way round.
    cluster.run(1, &["INCR", "n"]);
    assert_eq!(next_keyspace(&mut there, wait), pair("n", "new"));
    assert_eq!(next_keyspace(&mut there, wait), pair("n", "incrby"));
    assert_eq!(next_keyspace(&mut there, Duration::from_millis(500)), None, "its own write is not merged back");
    // Node 0 saw its own events (new, set, new, sadd, srem, del) and then node 1's INCR.
    let mut seen_here = Vec::new();
    while let Some(event) = next_keyspace(&mut here, Duration::from_secs(2)) {
        let done = event == ("n".to_string(), "merged".to_string());
        seen_here.push(event);
        if done {
            break;
        }
    }
    let events: Vec<&str> = seen_here.iter().map(|(_, e)| e.as_str()).collect();
    assert_eq!(events, ["new", "sadd", "srem", "del", "new", "merged"], "{seen_here:?}");
}
