//! INFO commandstats, errorstats, cpu and the section arguments, against the real
//! binary with four shards (so commands answered by another shard's thread are
//! counted too), as Redis counts them.

mod common;

use common::{connect, start_meridian};

fn info(con: &mut redis::Connection, sections: &[&str]) -> String {
    let mut cmd = redis::cmd("INFO");
    for section in sections {
        cmd.arg(*section);
    }
    cmd.query(con).expect("INFO")
}

/// The value of `cmdstat_<name>` (`calls=…,usec=…,…`), if the command has a line.
fn cmdstat(con: &mut redis::Connection, name: &str) -> Option<String> {
    let text = info(con, &["commandstats"]);
    let prefix = format!("cmdstat_{name}:");
    text.split("\r\n").find_map(|line| line.strip_prefix(&prefix)).map(str::to_owned)
}

fn errorstat(con: &mut redis::Connection, code: &str) -> Option<String> {
    let text = info(con, &["errorstats"]);
    let prefix = format!("errorstat_{code}:");
    text.split("\r\n").find_map(|line| line.strip_prefix(&prefix)).map(str::to_owned)
}

fn field(text: &str, name: &str) -> Option<u64> {
    let prefix = format!("{name}=");
    text.split(',').find_map(|part| part.strip_prefix(&prefix)).and_then(|v| v.parse().ok())
}

fn stat(con: &mut redis::Connection, name: &str) -> Option<u64> {
    let text = info(con, &["stats"]);
    let prefix = format!("{name}:");
    text.split("\r\n").find_map(|line| line.strip_prefix(&prefix)).and_then(|v| v.parse().ok())
}

#[test]
fn commands_are_counted_by_calls_failures_and_refusals_on_every_shard() {
    let server = start_meridian(&["--shards", "4"]);
    let mut con = connect(&server);
    let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query(&mut con).expect("RESETSTAT");

    // 40 SETs in one pipeline over keys of all four shards, then GETs one at a time.
    let mut pipe = redis::pipe();
    for i in 0..40 {
        pipe.cmd("SET").arg(format!("key:{i}")).arg(i).ignore();
    }
    let _: () = pipe.query(&mut con).expect("SET pipeline");
    for i in 0..5 {
        let _: Option<String> = redis::cmd("GET").arg(format!("key:{i}")).query(&mut con).expect("GET");
    }
    let set = cmdstat(&mut con, "set").expect("SET has a line");
    assert_eq!((field(&set, "calls"), field(&set, "rejected_calls"), field(&set, "failed_calls")), (Some(40), Some(0), Some(0)), "{set}");
    assert!(set.contains(",usec=") && set.contains(",usec_per_call="), "{set}");
    assert_eq!(field(&cmdstat(&mut con, "get").expect("GET has a line"), "calls"), Some(5));
    assert_eq!(cmdstat(&mut con, "del"), None, "a command never run has no line");

    // Failures: WRONGTYPE from whichever shard holds the key, a syntax error.
    for i in 0..8 {
        let failed: redis::RedisResult<i64> = redis::cmd("LPUSH").arg(format!("key:{i}")).arg("x").query(&mut con);
        assert!(failed.is_err());
    }
    assert!(redis::cmd("SET").arg("k").arg("v").arg("NX").arg("XX").query::<()>(&mut con).is_err());
    // Refusals: a wrong arity; an unknown command has no line of its own.
    assert!(redis::cmd("GET").query::<()>(&mut con).is_err());
    assert!(redis::cmd("NOSUCHCOMMAND").arg("x").query::<()>(&mut con).is_err());
    let lpush = cmdstat(&mut con, "lpush").expect("LPUSH has a line");
    assert_eq!((field(&lpush, "calls"), field(&lpush, "failed_calls")), (Some(8), Some(8)), "{lpush}");
    let set = cmdstat(&mut con, "set").expect("SET has a line");
    assert_eq!((field(&set, "calls"), field(&set, "failed_calls")), (Some(41), Some(1)), "{set}");
    let get = cmdstat(&mut con, "get").expect("GET has a line");
    assert_eq!((field(&get, "calls"), field(&get, "rejected_calls")), (Some(5), Some(1)), "{get}");
    assert_eq!(cmdstat(&mut con, "nosuchcommand"), None);
    assert_eq!(errorstat(&mut con, "WRONGTYPE").as_deref(), Some("count=8"));
    // The syntax error, the arity error and the unknown command.
    assert_eq!(errorstat(&mut con, "ERR").as_deref(), Some("count=3"));
    assert_eq!(stat(&mut con, "total_error_replies"), Some(11));

    // A container's subcommands have lines of their own; an unknown one counts as an
    // error only.
    let _: Vec<String> = redis::cmd("CONFIG").arg("GET").arg("maxmemory").query(&mut con).expect("CONFIG GET");
    assert!(redis::cmd("CONFIG").arg("NOSUCH").query::<()>(&mut con).is_err());
    assert_eq!(field(&cmdstat(&mut con, "config|get").expect("a subcommand line"), "calls"), Some(1));
    assert_eq!(cmdstat(&mut con, "config|nosuch"), None);
    assert_eq!(errorstat(&mut con, "ERR").as_deref(), Some("count=4"));

    // CONFIG RESETSTAT clears them all.
    let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query(&mut con).expect("RESETSTAT");
    assert_eq!(cmdstat(&mut con, "set"), None);
    assert_eq!(errorstat(&mut con, "ERR"), None);
    assert_eq!(stat(&mut con, "total_error_replies"), Some(0));
}

#[test]
fn exec_counts_the_commands_it_ran_and_their_errors_as_theirs() {
    let server = start_meridian(&["--shards", "4"]);
    let mut con = connect(&server);
    let _: () = redis::cmd("SET").arg("string").arg("v").query(&mut con).expect("SET");
    let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query(&mut con).expect("RESETSTAT");
    let replies: redis::Value = redis::pipe()
        .atomic()
        .cmd("SET")
        .arg("a")
        .arg(1)
        .cmd("INCR")
        .arg("a")
        .cmd("LPUSH")
        .arg("string")
        .arg("x")
        .query(&mut con)
        .unwrap_or(redis::Value::Nil);
    let _ = replies;
    for (name, calls, failed) in [("multi", 1, 0), ("exec", 1, 0), ("set", 1, 0), ("incr", 1, 0), ("lpush", 1, 1)] {
        let line = cmdstat(&mut con, name).unwrap_or_else(|| panic!("{name} has a line"));
        assert_eq!((field(&line, "calls"), field(&line, "failed_calls")), (Some(calls), Some(failed)), "{name}: {line}");
    }
    assert_eq!(errorstat(&mut con, "WRONGTYPE").as_deref(), Some("count=1"));

    // A command refused while queueing: rejected, and EXEC then answers EXECABORT.
    let _: () = redis::cmd("MULTI").query(&mut con).expect("MULTI");
    assert!(redis::cmd("GET").query::<()>(&mut con).is_err());
    assert!(redis::cmd("EXEC").query::<()>(&mut con).is_err());
    assert_eq!(field(&cmdstat(&mut con, "get").expect("GET has a line"), "rejected_calls"), Some(1));
    let exec = cmdstat(&mut con, "exec").expect("EXEC has a line");
    assert_eq!((field(&exec, "calls"), field(&exec, "failed_calls")), (Some(2), Some(0)), "{exec}");
    assert_eq!(errorstat(&mut con, "EXECABORT").as_deref(), Some("count=1"));
}

#[test]
fn a_commands_time_is_counted_in_microseconds() {
    let server = start_meridian(&[]);
    let mut con = connect(&server);
    // A script that spins for tens of milliseconds.
    let script = "local i = 0 while i < 3000000 do i = i + 1 end return i";
    let started = std::time::Instant::now();
    let _: i64 = redis::cmd("EVAL").arg(script).arg(0).query(&mut con).expect("EVAL");
    let took = started.elapsed().as_micros() as u64;
    let eval = cmdstat(&mut con, "eval").expect("EVAL has a line");
    let usec = field(&eval, "usec").expect("usec");
    assert!(usec >= 1000 && usec <= took, "EVAL took {took} us by the client's clock, INFO says {usec}: {eval}");
    // A blocking command's wait is not its time (BLPOP waits 300 ms here).
    let _: Option<Vec<String>> = redis::cmd("BLPOP").arg("empty").arg("0.3").query(&mut con).expect("BLPOP");
    let blpop = cmdstat(&mut con, "blpop").expect("BLPOP has a line");
    assert!(field(&blpop, "usec").expect("usec") < 100_000, "{blpop}");
    // A pipeline's run of one command is timed as a whole.
    let mut pipe = redis::pipe();
    for i in 0..2000 {
        pipe.cmd("SET").arg(format!("k{i}")).arg(i).ignore();
    }
    let _: () = pipe.query(&mut con).expect("SET pipeline");
    let set = cmdstat(&mut con, "set").expect("SET has a line");
    assert!(field(&set, "calls") == Some(2000) && field(&set, "usec").expect("usec") > 0, "{set}");
}

#[test]
fn info_sections_follow_redis_defaults_all_and_names() {
    let server = start_meridian(&[]);
    let mut con = connect(&server);
    let _: () = redis::cmd("SET").arg("a").arg(1).query(&mut con).expect("SET");
    let headers = |text: &str| text.split("\r\n").filter(|l| l.starts_with("# ")).map(str::to_owned).collect::<Vec<_>>();
    let default = info(&mut con, &[]);
    for section in ["# Server", "# Clients", "# Memory", "# Persistence", "# Stats", "# Replication", "# CPU", "# Errorstats", "# Keyspace"]
    {
        assert!(headers(&default).iter().any(|h| h == section), "{section} in {:?}", headers(&default));
    }
    assert!(!default.contains("cmdstat_"), "commandstats is not a default section");
    assert!(default.contains("used_cpu_user:") && default.contains("master_repl_offset:"));
    assert_eq!(headers(&info(&mut con, &["default"])), headers(&default));
    for all in ["all", "everything"] {
        let text = info(&mut con, &[all]);
        assert!(text.contains("cmdstat_set:calls=1,"), "{text}");
    }
    // Names in any case; several at once, each section once.
    assert_eq!(headers(&info(&mut con, &["CPU"])), vec!["# CPU"]);
    assert_eq!(headers(&info(&mut con, &["cpu", "commandSTATS", "nosuchsection"])), vec!["# CPU", "# Commandstats"]);
    let cpu_and_all = info(&mut con, &["cpu", "all"]);
    assert_eq!(cpu_and_all.matches("used_cpu_user_children").count(), 1);
}

/// INFO's traffic counters are kept per shard thread and summed: commands and bytes of
/// clients served by different threads all count, exactly (what each PING reads and
/// writes), and CONFIG RESETSTAT clears every thread's.
#[test]
fn commands_and_bytes_of_clients_on_every_thread_add_up() {
    let server = start_meridian(&["--shards", "4"]);
    // Connections are placed on the shard threads in turn: two on each of the four.
    let mut clients: Vec<redis::Connection> = (0..8).map(|_| connect(&server)).collect();
    let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query(&mut clients[0]).expect("RESETSTAT");
    for con in clients.iter_mut() {
        for _ in 0..10 {
            let pong: String = redis::cmd("PING").query(con).expect("PING");
            assert_eq!(pong, "PONG");
        }
    }
    // RESETSTAT counts itself (as Redis's call() does after running it) and its +OK;
    // INFO counts itself and the 25 bytes of `INFO stats`, not its reply.
    let text = info(&mut clients[0], &["stats"]);
    let value = |name: &str| -> u64 {
        let prefix = format!("{name}:");
        text.split("\r\n").find_map(|line| line.strip_prefix(&prefix)).and_then(|v| v.parse().ok()).expect(name)
    };
    assert_eq!(value("total_commands_processed"), 80 + 1, "{text}");
    assert_eq!(value("total_net_input_bytes"), 80 * b"*1\r\n$4\r\nPING\r\n".len() as u64 + 25, "{text}");
    assert_eq!(value("total_net_output_bytes"), 80 * b"+PONG\r\n".len() as u64 + 5, "{text}");
}

#[test]
fn role_answers_a_primary_at_info_s_replication_offset() {
    let server = start_meridian(&["--persistence", "off", "--shards", "2"]);
    let mut con = connect(&server);
    for key in ["a", "b", "c"] {
        let _: () = redis::cmd("SET").arg(key).arg(1).query(&mut con).expect("SET");
    }
    let (role, offset, replicas): (String, i64, Vec<String>) = redis::cmd("ROLE").query(&mut con).expect("ROLE");
    assert_eq!((role.as_str(), replicas.len()), ("master", 0));
    assert_eq!(offset as u64, common::info_u64(&mut con, "replication", "master_repl_offset"));
    assert_eq!(offset, 3, "one delta a SET, whichever shard took it");
}
