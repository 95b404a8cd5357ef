//! MONITOR against the real binary (four shards, so commands run by another shard's
//! thread are shown too): the lines Redis writes, in the order Redis writes them,
//! passwords and administrative commands kept out, and a monitor that stops reading
//! disconnected at its output buffer limit instead of buffered without end.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::time::Duration;

use common::{ReadEnd, command, connect, eventually, raw_connect, read_until_close, start_meridian};

/// A client in MONITOR mode: reads one line per command shown.
struct Monitor {
    reader: BufReader<std::net::TcpStream>,
}

impl Monitor {
    fn start(server: &common::ServerGuard, hello3: bool) -> Monitor {
        let mut stream = raw_connect(server);
        if hello3 {
            stream.write_all(b"HELLO 3\r\n").expect("write");
        }
        stream.write_all(b"MONITOR\r\n").expect("write");
        let mut reader = BufReader::new(stream);
        if hello3 {
            // HELLO's map: read until MONITOR's +OK.
            let mut line = String::new();
            while line != "+OK\r\n" {
                line.clear();
                reader.read_line(&mut line).expect("HELLO reply");
            }
        } else {
            let mut ok = String::new();
            reader.read_line(&mut ok).expect("MONITOR reply");
            assert_eq!(ok, "+OK\r\n");
        }
        Monitor { reader }
    }

    /// The next line, without its `+<time> ` prefix: `[0 addr] "cmd" "arg"...`.
    fn next(&mut self) -> String {
        let mut line = String::new();
        self.reader.read_line(&mut line).expect("a monitor line");
        assert!(line.starts_with('+') && line.ends_with("\r\n"), "{line:?}");
        let (time, rest) = line[1..].split_once(' ').unwrap_or_else(|| panic!("{line:?}"));
        let (secs, micros) = time.split_once('.').unwrap_or_else(|| panic!("{line:?}"));
        assert!(secs.parse::<u64>().is_ok() && micros.len() == 6 && micros.parse::<u32>().is_ok(), "{line:?}");
        rest.trim_end().to_owned()
    }

    /// The next line's arguments part (after `[0 source] `).
    fn next_command(&mut self) -> String {
        let line = self.next();
        line.split_once("] ").map(|(_, command)| command.to_owned()).unwrap_or(line)
    }
}

#[test]
fn monitor_shows_each_command_that_ran_in_order_as_redis_writes_it() {
    let server = start_meridian(&["--shards", "4"]);
    // Connected first: a client library's own set-up commands come before the monitor.
    let mut con = connect(&server);
    let mut other = connect(&server);
    let local_addr = {
        let info: String = redis::cmd("CLIENT").arg("INFO").query(&mut con).expect("CLIENT INFO");
        info.split(' ').find_map(|f| f.strip_prefix("addr=")).expect("addr").to_owned()
    };
    let mut monitor = Monitor::start(&server, false);
    for i in 0..6 {
        let _: () = redis::cmd("SET").arg(format!("key:{i}")).arg("two words\n").query(&mut con).expect("SET");
    }
    let line = monitor.next();
    assert_eq!(line, format!("[0 {local_addr}] \"SET\" \"key:0\" \"two words\\n\""));
    for i in 1..6 {
        assert_eq!(monitor.next_command(), format!("\"SET\" \"key:{i}\" \"two words\\n\""));
    }
    // Refused (wrong arity) and administrative commands are not shown; a failed one is.
    assert!(redis::cmd("GET").query::<()>(&mut con).is_err());
    let _: Vec<String> = redis::cmd("CONFIG").arg("GET").arg("maxmemory").query(&mut con).expect("CONFIG GET");
    let _: String = redis::cmd("CLIENT").arg("LIST").query(&mut con).expect("CLIENT LIST");
    assert!(redis::cmd("LPUSH").arg("key:0").arg("x").query::<()>(&mut con).is_err());
    assert_eq!(monitor.next_command(), "\"LPUSH\" \"key:0\" \"x\"");
    // A script before the commands it runs, theirs marked `lua`.
    let _: Option<String> = redis::cmd("EVAL").arg("return redis.call('get', KEYS[1])").arg(1).arg("key:1").query(&mut con).expect("EVAL");
    assert_eq!(monitor.next_command(), "\"EVAL\" \"return redis.call('get', KEYS[1])\" \"1\" \"key:1\"");
    assert_eq!(monitor.next(), "[0 lua] \"get\" \"key:1\"");
    // A transaction: MULTI, its commands as EXEC runs them, then EXEC.
    let _: () = redis::pipe().atomic().cmd("SET").arg("a").arg(1).ignore().cmd("INCR").arg("a").ignore().query(&mut con).expect("MULTI");
    assert_eq!(monitor.next_command(), "\"MULTI\"");
    assert_eq!(monitor.next_command(), "\"SET\" \"a\" \"1\"");
    assert_eq!(monitor.next_command(), "\"INCR\" \"a\"");
    assert_eq!(monitor.next_command(), "\"EXEC\"");
    // A transaction a watched key aborted ran nothing: MULTI and EXEC alone are shown.
    let _: () = redis::cmd("WATCH").arg("w").query(&mut con).expect("WATCH");
    let _: () = redis::cmd("SET").arg("w").arg(1).query(&mut other).expect("SET");
    let _: () = redis::cmd("MULTI").query(&mut con).expect("MULTI");
    let queued: String = redis::cmd("SET").arg("w").arg(2).query(&mut con).expect("queued");
    assert_eq!(queued, "QUEUED");
    let aborted: redis::Value = redis::cmd("EXEC").query(&mut con).expect("EXEC");
    assert_eq!(aborted, redis::Value::Nil);
    for expected in ["\"WATCH\" \"w\"", "\"SET\" \"w\" \"1\"", "\"MULTI\"", "\"EXEC\""] {
        assert_eq!(monitor.next_command(), expected);
    }
    // Passwords are never shown.
    assert!(command(&["AUTH", "not-real"]).query::<()>(&mut con).is_err());
    assert_eq!(monitor.next_command(), "\"AUTH\" \"(redacted)\"");
    assert!(command(&["HELLO", "2", "AUTH", "user", "secret"]).query::<()>(&mut con).is_err());
    assert_eq!(monitor.next_command(), "\"HELLO\" \"2\" \"AUTH\" \"(redacted)\" \"(redacted)\"");
    // A blocking command is shown when it starts waiting.
    let _: Option<Vec<String>> = redis::cmd("BLPOP").arg("empty").arg("0.05").query(&mut con).expect("BLPOP");
    assert_eq!(monitor.next_command(), "\"BLPOP\" \"empty\" \"0.05\"");
}

#[test]
fn a_resp3_monitor_gets_the_same_lines_and_reset_ends_monitoring() {
    let server = start_meridian(&[]);
    let mut con = connect(&server);
    let mut monitor = Monitor::start(&server, true);
    let _: () = redis::cmd("SET").arg("k").arg("v").query(&mut con).expect("SET");
    assert_eq!(monitor.next_command(), "\"SET\" \"k\" \"v\"");
    monitor.reader.get_mut().write_all(b"RESET\r\n").expect("write");
    let mut reply = String::new();
    monitor.reader.read_line(&mut reply).expect("RESET reply");
    assert_eq!(reply, "+RESET\r\n");
    let _: () = redis::cmd("SET").arg("k").arg("w").query(&mut con).expect("SET");
    monitor.reader.get_mut().write_all(b"PING\r\n").expect("write");
    let mut reply = String::new();
    monitor.reader.read_line(&mut reply).expect("PING reply");
    assert_eq!(reply, "+PONG\r\n", "no monitor line after RESET");
}

#[test]
fn a_monitor_that_stops_reading_is_disconnected_at_its_buffer_limit() {
    let server = start_meridian(&[]);
    let mut con = connect(&server);
    let _: () =
        redis::cmd("CONFIG").arg("SET").arg("client-output-buffer-limit").arg("pubsub 65536 0 0").query(&mut con).expect("CONFIG SET");
    let mut stalled = raw_connect(&server);
    stalled.write_all(b"MONITOR\r\n").expect("write");
    // Shrink what the kernel holds for it, so that the server's buffer is what fills.
    let big = "x".repeat(16 * 1024);
    let mut pipe = redis::pipe();
    for _ in 0..400 {
        pipe.cmd("SET").arg("k").arg(&big).ignore();
    }
    let disconnected = eventually(Duration::from_secs(20), || {
        let _: () = pipe.query(&mut con).expect("SET pipeline");
        let list: String = redis::cmd("CLIENT").arg("LIST").query(&mut con).expect("CLIENT LIST");
        list.lines().count() == 1
    });
    assert!(disconnected, "the stalled monitor is still connected");
    stalled.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    let (_, end) = read_until_close(&mut stalled);
    assert_eq!(end, ReadEnd::Closed);
}
