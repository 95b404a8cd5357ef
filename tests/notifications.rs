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

use std::time::{Duration, Instant};

use common::{ServerGuard, connect, redis_server_available, start_meridian, start_redis};

/// The channel a scenario's end is published on: every notification before it was
/// delivered (both servers publish a command's notifications before its reply).
const END: &str = "notifications-test-end";

/// A scenario: the flags, commands run before subscribing, commands whose
/// notifications are compared. `@dumprestore SRC DST [OPTION...]` is DUMP of SRC then
/// RESTORE of its payload as DST with TTL 0 and the options.
struct Scenario {
    name: &'static str,
    flags: &'static str,
    setup: &'static [&'static str],
    commands: &'static [&'static str],
}

const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "strings",
        flags: "KEA",
        setup: &[],
        commands: &[
            "set a 1",
            "set a 2",
            "set b 1 ex 100",
            "setex c 100 x",
            "psetex d 100000 x",
            "getset a 3",
            "set a 4 get",
            "mset {m}a 1 {m}e 2",
            "msetnx f 1 g 2",
            "msetnx f 1 h 2",
            "msetnx i 1 j 2 i 3",
            "set a 1 nx",
            "set zz 1 xx",
            "set a 5 xx get",
            "getex a ex 100",
            "getex a persist",
            "getex a",
            "getex a persist",
            "setnx q 1",
            "setnx q 2",
            "incr n",
            "incrby n 0",
            "decrby n 2",
            "decr n",
            "incrbyfloat fl 1.5",
            "incr a",
            "append a x",
            "append ap y",
            "setrange a 0 zz",
            "setrange sr 3 x",
            "getdel a",
            "getdel nosuch",
            "getex e pxat 1",
        ],
    },
    Scenario {
        name: "new keys",
        flags: "KEn",
        setup: &["set old 1"],
        commands: &[
            "set old 2",
            "set k1 1",
            "incr k2",
            "append k3 x",
            "hset h a 1",
            "hset h b 2",
            "sadd s a",
            "zadd z 1 a",
            "rpush l a",
            "lpush l b",
            "setbit bits 1 1",
            "sunionstore s2 s",
            "mset {n}k5 2 {n}k6 3",
        ],
    },
    Scenario {
        name: "generic",
        flags: "KEg$",
        setup: &["set p 1", "set q 1", "set u 1", "set r 1"],
        commands: &[
            "expire p 100",
            "expire p 100 nx",
            "expire p 200 gt",
            "expire p 10 xx lt",
            "pexpireat p 99999999999999",
            "persist p",
            "persist p",
            "expire p 0",
            "expire nosuch 10",
            "del q nosuch",
            "unlink u",
            "pexpire r -5",
            "touch p",
            "exists p",
        ],
    },
    Scenario {
        name: "hashes",
        flags: "KEA",
        setup: &["set str x"],
        commands: &[
            "hset h a 1",
            "hset h a 1",
            "hmset h b 2",
            "hsetnx h a 9",
            "hsetnx h c 3",
            "hincrby h a 1",
            "hincrbyfloat h a 1.5",
            "hincrby h2 x 1",
            "hincrbyfloat h3 y 1",
            "hdel h zz",
            "hdel h a b",
            "hdel h c",
            "hdel h2 x zz",
            "hset str f v",
            "hdel nonexist a",
        ],
    },
    Scenario {
        name: "sets",
        flags: "KEA",
        setup: &["sadd a1 1 2", "sadd a2 2 3"],
        commands: &[
            "sadd s a b c",
            "sadd s a",
            "srem s zz",
            "srem s a",
            "spop s",
            "sadd s2 a b c d",
            "spop s2 2",
            "spop s2 5",
            "spop s2",
            "spop s2 0",
            "sadd s3 x",
            "smove s3 s4 x",
            "sadd s3 y",
            "sadd s4 y",
            "smove s3 s4 y",
            "sadd s5 q",
            "smove s5 s5 q",
            "smove s5 s6 zz",
            "sinterstore d a1 a2",
            "sunionstore d a1 a2",
            "sdiffstore d a1 a2",
            "sinterstore d a1 nosuch",
            "sinterstore d a1 nosuch",
            "sunionstore e1 n1 n2",
            "sdiffstore a2 a2 a1",
            "sintercard 2 a1 a2",
            "sunionstore u1 a1 a2",
        ],
    },
    Scenario {
        name: "sorted sets",
        flags: "KEA",
        setup: &["zadd za 1 x 2 y", "zadd zb 1 y 3 z"],
        commands: &[
            "zadd z 1 a 2 b",
            "zadd z 1 a",
            "zadd z 5 a",
            "zadd z nx 9 a",
            "zadd z xx 9 zz",
            "zadd z ch 6 a",
            "zadd z incr 1 a",
            "zadd z nx incr 1 a",
            "zincrby z 1 b",
            "zincrby z 0 b",
            "zincrby z2 1 m",
            "zrem z zz",
            "zrem z b",
            "zadd z 1 c 2 d 3 e",
            "zremrangebyscore z 100 200",
            "zremrangebyscore z 1 1",
            "zremrangebyrank z 0 0",
            "zremrangebylex z - +",
            "zadd y 1 a 2 b 3 c",
            "zpopmin y",
            "zpopmax y",
            "zpopmin y 5",
            "zpopmin y",
            "zadd xx xx 1 a",
            "zadd n1 gt 1 a",
            "zadd n1 gt 0 a",
            "zadd n1 lt 0 a",
            "zunionstore d 2 za zb",
            "zinterstore d 2 za zb",
            "zdiffstore d 2 za zb",
            "zinterstore d 2 za nosuch",
            "zinterstore d 2 za nosuch",
            "zrangestore r za 0 -1",
            "zrangestore r za 5 6",
            "zunionstore e 1 nosuch",
            "zmpop 2 nosuch za min",
            "zmpop 2 za zb max count 5",
            "bzpopmin zb 0",
        ],
    },
    Scenario {
        name: "lists",
        flags: "KEA",
        setup: &["rpush m5 a b", "rpush one a"],
        commands: &[
            "lpush l a b",
            "rpush l c",
            "lpushx l d",
            "rpushx l e",
            "lpushx nol d",
            "lpop l",
            "rpop l",
            "lpop l 2",
            "rpop l 5",
            "lpop l",
            "rpush l a b c d e f",
            "lset l 0 z",
            "linsert l before c y",
            "linsert l after zz y",
            "lrem l 0 y",
            "lrem l 0 qq",
            "ltrim l 0 2",
            "ltrim l 0 -1",
            "ltrim l 5 1",
            "rpush m 1 2",
            "lmove m m2 left right",
            "rpoplpush m m2",
            "lmove m2 m2 left left",
            "lmpop 2 nosuch m2 left count 1",
            "blpop m2 0",
            "rpush m3 a",
            "blmove m3 m4 right left 0",
            "lmove m5 m5 left right",
            "lmove one one left right",
            "rpush m6 x",
            "lmove m6 m7 left left",
            "lmove nosuch m7 left left",
        ],
    },
    Scenario {
        name: "rename, copy, sort, bits",
        flags: "KEAn",
        setup: &["set a 1", "set b 2", "sadd st 3 1 2", "set e 1", "hset h f v", "zadd z 1 m", "rpush l x y"],
        commands: &[
            "rename a c",
            "rename c b",
            "renamenx b d",
            "renamenx e d",
            "rename d d",
            "renamenx d d",
            "copy d f",
            "copy d f",
            "copy d f replace",
            "copy nosuch g",
            "rename h h2",
            "rename z z2",
            "copy l l2",
            "rename l2 l3",
            "sort st store so",
            "sort nosuch store so",
            "sort st store so2 limit 0 0",
            "setbit bb 3 1",
            "setbit bb 3 1",
            "setbit bb 3 0",
            "bitfield bf set u8 0 1",
            "bitfield bf get u8 0",
            "bitfield bf incrby u8 0 1 overflow fail incrby u8 0 255",
            "bitop and bo d f",
            "bitop or bo nosuch",
            "bitop or bo2 nosuch",
            "flushall",
        ],
    },
    Scenario {
        name: "restore",
        flags: "KEAn",
        setup: &["set dk hello", "rpush dl a b"],
        commands: &["@dumprestore dk r", "@dumprestore dk r replace", "@dumprestore dl r replace", "@dumprestore dk r2 absttl"],
    },
    Scenario {
        name: "key misses",
        flags: "KEm",
        setup: &["set x 1", "set {m}x 1", "hset h f v"],
        commands: &[
            "get nosuch",
            "get x",
            "strlen nosuch",
            "exists nosuch x",
            "type nosuch",
            "hget nosuch a",
            "hget h nosuch",
            "lrange nosuch 0 -1",
            "smembers nosuch",
            "ttl nosuch",
            "mget {m}nosuch {m}x {m}nosuch2",
            "zscore nosuch a",
            "llen nosuch",
            "getrange nosuch 0 1",
            "touch nosuch",
            "hgetall nosuch",
            "set x 2",
            "del nosuch",
            "incr c",
        ],
    },
    Scenario {
        name: "key misses of multi-key reads",
        flags: "KEm",
        setup: &["sadd s1 a", "zadd z1 1 a", "set str abc", "rpush l1 x", "sadd s2 a b"],
        commands: &[
            "sinter s1 n1 n2",
            "sinter n1 s1 n2",
            "sunion n1 s1 n2",
            "sdiff s1 n1 n2",
            "sdiff n1 s1 n2",
            "sintercard 3 s1 n1 n2",
            "sinterstore d1 n1 s1 n2",
            "sunionstore d2 n1 s1 n2",
            "sdiffstore d3 s1 n1 n2",
            "sinter n1 str n2",
            "sunion n3 n1 str n2",
            "sdiffstore d3 n1 l1 n2",
            "sinter n1 n1",
            "zunion 3 z1 n1 n2",
            "zinter 3 n1 z1 n2",
            "zdiff 3 z1 n1 n2",
            "zintercard 3 z1 n1 n2",
            "zunionstore d4 3 z1 n1 n2",
            "zinterstore d5 3 z1 n1 n2",
            "zunion 3 n1 str n2",
            "zunion 3 n1 s2 n2",
            "zrangestore d7 n1 0 -1",
            "zrangestore d7 str 0 -1",
            "lcs str n1",
            "lcs n1 n2",
            "lcs n1 str",
            "bitop and d9 str n1 n2",
            "bitop or d10 n1 n2",
            "bitop and d11 n1 l1 n2",
            "copy n1 d12",
            "copy s1 s1copy",
            "rename n1 d13",
            "renamenx n1 d13",
            "smove n1 s1 a",
            "sort n1",
            "sort n1 store d8",
            "smismember n1 a",
            "zmscore n1 a",
            "set n4 v get",
            "getset n5 v",
            "getdel n6",
            "getex n7 ex 10",
            "object encoding n1",
            "memory usage n1",
            "dump n1",
            "bitfield n1 get u8 0",
            "mget n1 str n2 n1",
            "exists n1 str n2 n1",
            "touch n1 str n2",
            "del n1 n2",
        ],
    },
    Scenario {
        name: "multi-key commands across shards, in argument order",
        flags: "KEAnm",
        setup: &["set b 0", "set e 0", "sadd st x"],
        commands: &[
            "mset a 1 b 2 c 3 d 4 e 5 f 6",
            "mset a 1 b 2 a 3",
            "mset x1 1 x2 2 x3 3 x4 4 x5 5 x6 6 x7 7 x8 8",
            "del x8 x7 x6 x5 x4 x3 x2 x1",
            "del a nosuch b c",
            "unlink f e d nosuch2",
            "msetnx q1 1 q2 2 q3 3 q4 4",
            "msetnx q5 1 q1 2",
            "mget q4 q3 nosuch q2 q1 nosuch3",
            "exists q4 nosuch q3 q2 nosuch4 q1",
            "touch nosuch5 q1 q2 nosuch6 q3",
            "mset st 1 q1 9",
            "multi",
            "mset m1 1 m2 2 m3 3 m4 4",
            "del m4 m3 m2 m1",
            "exists m1 m2 m3",
            "exec",
        ],
    },
    Scenario { name: "masks", flags: "Ks", setup: &["sadd s a b"], commands: &["set a 1", "srem s a b", "sadd s c", "del s", "lpush l a"] },
    Scenario { name: "transaction", flags: "KEA", setup: &[], commands: &["multi", "set t 1", "lpush tl a", "incr t", "del tl", "exec"] },
];

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
