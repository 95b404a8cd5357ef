//! Differential test: one command script, sent to Debian's `redis-server` and to
//! `meridian`, compared reply by reply on the RAW bytes, once in RESP2 and once in RESP3.
//!
//! - `tests/differential/commands.txt`: the script (format, markers and directives are
//!   documented at its top; read at run time, so editing it needs no rebuild);
//! - `tests/differential/script.rs`: parses it; `tests/differential/resp.rs`: encodes
//!   commands and finds reply-frame boundaries;
//! - this file: the servers, the connections, the comparison and the report; plus a test
//!   of inline commands and raw protocol edge cases that a script of commands can't send.
//!
//! Every mismatch is recorded with its line number and both replies escaped; the test
//! fails at the end with the full list. After a mismatch both connections are resynced
//! (an `ECHO` token is sent and frames are skipped until it comes back; failing that, the
//! connection is reopened) so one extra or missing frame does not cascade.
//!
//! Switches (environment variables):
//! - `MERIDIAN_DIFF_AGAINST_REDIS=1` compares redis with a second `redis-server` instead
//!   of meridian: it must pass with zero mismatches (proves the script deterministic).
//! - `MERIDIAN_DIFF_TARGET=host:port` compares against an already running server.
//! - `MERIDIAN_DIFF_SCRIPT=path` runs another script file.
//! - `MERIDIAN_DIFF_DUMP=1` prints every command with both replies (run with
//!   `--nocapture`), which is how new script lines are checked against redis.

mod common;
#[path = "differential/resp.rs"]
mod resp;
#[path = "differential/script.rs"]
mod script;

use std::io::{self, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use resp::{encode_command, escape, protocol_error, read_frame, same_shape};
use script::{Line, Marker, Step};

/// A reply slower than this is a hang: the line fails instead of blocking forever.
const READ_TIMEOUT: Duration = Duration::from_secs(5);
/// Bound on the frames skipped while resyncing a connection after a mismatch.
const RESYNC_FRAMES_MAX: usize = 10_000;
/// After this many reconnects a run is abandoned (the server is probably dead).
const RECONNECTS_MAX: usize = 20;
/// Pause between the pieces of a request written in pieces.
const SPLIT_PAUSE: Duration = Duration::from_millis(30);

// ---------------------------------------------------------------------------------------
// Connections
// ---------------------------------------------------------------------------------------

/// One connection to one server, with a buffered reader over it.
struct Side {
    name: &'static str,
    addr: String,
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    reconnects: usize,
}

fn hello(protocol: u8) -> Vec<u8> {
    encode_command(&[b"HELLO".to_vec(), protocol.to_string().into_bytes()])
}

impl Side {
    fn connect(name: &'static str, addr: &str) -> io::Result<Side> {
        let stream = TcpStream::connect(addr)?;
        stream.set_read_timeout(Some(READ_TIMEOUT))?;
        stream.set_write_timeout(Some(READ_TIMEOUT))?;
        stream.set_nodelay(true)?;
        let writer = stream.try_clone()?;
        Ok(Side { name, addr: addr.to_string(), reader: BufReader::new(stream), writer, reconnects: 0 })
    }

    /// A connection already switched to `protocol` (the HELLO reply is discarded).
    fn open(name: &'static str, addr: &str, protocol: u8) -> io::Result<Side> {
        let mut side = Side::connect(name, addr)?;
        if protocol == 3 {
            side.exchange(&hello(3))?;
        }
        Ok(side)
    }

    fn reconnect(&mut self, protocol: u8) -> io::Result<()> {
        self.reconnects += 1;
        if self.reconnects > RECONNECTS_MAX {
            return Err(io::Error::other(format!("{} reconnects, giving up", RECONNECTS_MAX)));
        }
        let fresh = Side::open(self.name, &self.addr, protocol)?;
        self.reader = fresh.reader;
        self.writer = fresh.writer;
        Ok(())
    }

    /// Sends raw bytes, reads exactly one reply frame.
    fn exchange(&mut self, request: &[u8]) -> io::Result<Vec<u8>> {
        self.writer.write_all(request)?;
        self.read_reply()
    }

    /// One reply frame; bytes already buffered behind it mean the server sent more
    /// replies than requests, which is an error too.
    fn read_reply(&mut self) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        match read_frame(&mut self.reader, &mut out, 0) {
            Ok(()) if self.reader.buffer().is_empty() => Ok(out),
            Ok(()) => Err(protocol_error(format!("extra bytes after the reply {}: {}", escape(&out), escape(self.reader.buffer())))),
            Err(e) if out.is_empty() => Err(e),
            Err(e) => Err(io::Error::new(e.kind(), format!("{e} after {}", escape(&out)))),
        }
    }

    /// Brings the connection back to a known point after a mismatch: sends an `ECHO`
    /// token and skips frames until it comes back; reconnects when that fails.
    fn resync(&mut self, token: &str, protocol: u8) -> io::Result<()> {
        let request = encode_command(&[b"ECHO".to_vec(), token.as_bytes().to_vec()]);
        let expected = format!("${}\r\n{token}\r\n", token.len()).into_bytes();
        let mut skip_to_token = || -> io::Result<()> {
            self.writer.write_all(&request)?;
            for _ in 0..RESYNC_FRAMES_MAX {
                let mut out = Vec::new();
                read_frame(&mut self.reader, &mut out, 0)?;
                if out == expected {
                    return Ok(());
                }
            }
            Err(io::Error::other("resync token never came back"))
        };
        match skip_to_token() {
            Ok(()) => Ok(()),
            Err(_) => self.reconnect(protocol),
        }
    }
}

fn show(result: &io::Result<Vec<u8>>) -> String {
    match result {
        Ok(bytes) => escape(bytes),
        Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
            format!("<no complete reply within {READ_TIMEOUT:?}: {e}>")
        }
        Err(e) => format!("<{:?}: {e}>", e.kind()),
    }
}

// ---------------------------------------------------------------------------------------
// One run of the script
// ---------------------------------------------------------------------------------------

struct Mismatch {
    protocol: u8,
    line: usize,
    command: String,
    redis: String,
    other: String,
}

/// The script run once in one protocol, on one connection to each server.
struct Run {
    protocol: u8,
    redis: Side,
    other: Side,
    mismatches: Vec<Mismatch>,
    dump: bool,
    exchanges: usize,
}

/// A run cannot go on (a server stopped answering even on a fresh connection).
struct Abandoned;

impl Run {
    /// Sends `request` to both servers, compares the replies per `marker`, records a
    /// mismatch and resyncs both connections when they differ.
    fn check(&mut self, line: usize, text: &str, request: &[u8], marker: Marker) -> Result<(), Abandoned> {
        self.exchanges += 1;
        let a = self.redis.exchange(request);
        let b = self.other.exchange(request);
        if self.dump {
            let (p, n) = (self.protocol, self.other.name);
            println!("RESP{p} {line:>4} {text}\n    redis: {}\n    {n}: {}", show(&a), show(&b));
        }
        let same = match (&a, &b, marker) {
            (Ok(_), Ok(_), Marker::Ignore) => true,
            (Ok(x), Ok(y), Marker::TypeOnly) => same_shape(x, y),
            (Ok(x), Ok(y), Marker::Exact) => x == y,
            _ => false,
        };
        if same {
            return Ok(());
        }
        self.mismatches.push(Mismatch { protocol: self.protocol, line, command: text.to_string(), redis: show(&a), other: show(&b) });
        let token = format!("__meridian_diff_resync_{}_{}__", self.protocol, self.exchanges);
        for side in [&mut self.redis, &mut self.other] {
            if let Err(e) = side.resync(&token, self.protocol) {
                self.mismatches.push(Mismatch {
                    protocol: self.protocol,
                    line,
                    command: format!("(harness: lost {}, rest of the run abandoned)", side.name),
                    redis: String::new(),
                    other: format!("<{e}>"),
                });
                return Err(Abandoned);
            }
        }
        Ok(())
    }

    fn script(&mut self, lines: &[Line]) -> Result<(), Abandoned> {
        if self.protocol == 3 {
            // Only the shape: the map holds the server's name, version and client id.
            self.check(0, "HELLO 3 (harness)", &hello(3), Marker::TypeOnly)?;
        }
        self.check(0, "FLUSHALL (harness)", &encode_command(&[b"FLUSHALL".to_vec()]), Marker::Exact)?;
        for line in lines {
            match &line.step {
                Step::Command { marker, args } => self.check(line.number, &line.text, &encode_command(args), *marker)?,
                Step::Sleep(pause) => std::thread::sleep(*pause),
                Step::Protocol => self.check(line.number, &line.text, &hello(self.protocol), Marker::Ignore)?,
            }
        }
        Ok(())
    }
}

fn run_script(lines: &[Line], protocol: u8, redis_addr: &str, other: &Target) -> Vec<Mismatch> {
    let mut run = Run {
        protocol,
        redis: Side::connect("redis", redis_addr).expect("connect to redis-server"),
        other: Side::connect(other.name, &other.addr).expect("connect to the server under test"),
        mismatches: Vec::new(),
        dump: std::env::var_os("MERIDIAN_DIFF_DUMP").is_some(),
        exchanges: 0,
    };
    // An abandoned run has already recorded why.
    let _ = run.script(lines);
    run.mismatches
}

fn report(mismatches: &[Mismatch], other_name: &str) -> String {
    let mut s = format!("{} mismatch(es) between redis-server and {other_name}:\n", mismatches.len());
    for m in mismatches {
        s.push_str(&format!(
            "\nRESP{} line {}: {}\n    redis:    {}\n    {other_name}: {}\n",
            m.protocol, m.line, m.command, m.redis, m.other
        ));
    }
    s
}

// ---------------------------------------------------------------------------------------
// Servers
// ---------------------------------------------------------------------------------------

/// The server compared with redis: meridian, a second redis (to validate the script), or
/// an address from the environment. `_guard` keeps a started process alive.
struct Target {
    _guard: Option<common::ServerGuard>,
    addr: String,
    name: &'static str,
}

fn server_under_test() -> Target {
    if let Ok(addr) = std::env::var("MERIDIAN_DIFF_TARGET") {
        return Target { _guard: None, addr, name: "target" };
    }
    if std::env::var_os("MERIDIAN_DIFF_AGAINST_REDIS").is_some() {
        let guard = common::start_redis(&[]);
        return Target { addr: guard.addr(), _guard: Some(guard), name: "redis-2" };
    }
    let guard = common::start_meridian(&["--shards", "4"]);
    Target { addr: guard.addr(), _guard: Some(guard), name: "meridian" }
}

/// The reference redis, or `None` (after a loud message) when it is not installed. In CI
/// `redis_server_available` panics instead, so CI can't skip silently.
fn redis_or_skip(test: &str) -> Option<common::ServerGuard> {
    if !common::redis_server_available() {
        eprintln!(
            "\n!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n\
             !!! SKIPPED {test}: redis-server is not installed, nothing to compare with.\n\
             !!! Install Debian's redis-server (apt-get install redis-server) to run it.\n\
             !!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n"
        );
        return None;
    }
    Some(common::start_redis(&[]))
}

fn script_path() -> String {
    std::env::var("MERIDIAN_DIFF_SCRIPT")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/tests/differential/commands.txt").to_string())
}

#[test]
fn script_replies_are_byte_identical_to_redis_in_resp2_and_resp3() {
    let Some(redis) = redis_or_skip("the differential test") else { return };
    let other = server_under_test();
    let path = script_path();
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {path}: {e}"));
    let lines = script::parse_script(&text);
    let commands = lines.iter().filter(|l| matches!(l.step, Step::Command { .. })).count();
    assert!(commands > 0, "{path} holds no commands");

    let started = Instant::now();
    let mut mismatches = Vec::new();
    for protocol in [2u8, 3] {
        mismatches.extend(run_script(&lines, protocol, &redis.addr(), &other));
    }
    println!(
        "differential: {commands} commands x RESP2+RESP3 against {} in {:?}: {} mismatch(es)",
        other.name,
        started.elapsed(),
        mismatches.len()
    );
    assert!(mismatches.is_empty(), "{}", report(&mismatches, other.name));
}

// ---------------------------------------------------------------------------------------
// Inline commands and raw protocol
// ---------------------------------------------------------------------------------------

/// One raw request and the number of reply frames it must produce.
struct RawCase {
    request: &'static [u8],
    replies: usize,
}

const fn raw(request: &'static [u8], replies: usize) -> RawCase {
    RawCase { request, replies }
}

/// One reply, then the server must close the connection.
const fn fatal(request: &'static [u8]) -> RawCase {
    RawCase { request, replies: 1 }
}

/// Cases sharing one connection, in order (FATAL_CASES each get a fresh connection).
const RAW_CASES: &[RawCase] = &[
    raw(b"PING\r\n", 1),
    raw(b"ping\r\n", 1),
    raw(b"PING hello\r\n", 1),
    raw(b"SET a b\r\n", 1),
    raw(b"GET a\r\n", 1),
    raw(b"GET    a   \r\n", 1),
    raw(b"\tGET\ta\t\r\n", 1),
    raw(b"GET a\n", 1),
    raw(b"SET \"quoted key\" \"val with \\\"q\\\" and \\x41\\n\"\r\n", 1),
    raw(b"GET \"quoted key\"\r\n", 1),
    raw(b"GET 'quoted key'\r\n", 1),
    raw(b"SET 'single' 'it\\'s'\r\n", 1),
    raw(b"GET single\r\n", 1),
    raw(b"SET bin \"\\x00\\xff\\r\\n\"\r\n", 1),
    raw(b"STRLEN bin\r\n", 1),
    raw(b"GET bin\r\n", 1),
    raw(b"SET empty \"\"\r\n", 1),
    raw(b"GET empty\r\n", 1),
    raw(b"EXISTS empty\r\n", 1),
    // Empty inline lines produce no reply at all.
    raw(b"\r\nPING\r\n", 1),
    raw(b"\r\n\r\n\nECHO x\r\n", 1),
    raw(b"   \r\nECHO y\r\n", 1),
    // Pipelined inline commands.
    raw(b"SET p 1\r\nINCR p\r\nINCRBY p 10\r\nGET p\r\n", 4),
    // Inline mixed with multibulk in one write.
    raw(b"INCR p\r\n*2\r\n$3\r\nGET\r\n$1\r\np\r\nDECR p\r\n", 3),
    raw(b"GET\r\n", 1),
    raw(b"NOSUCHCOMMAND a b\r\n", 1),
    raw(b"MGET a \"quoted key\" nosuch\r\n", 1),
    raw(b"DEL a \"quoted key\" single bin empty p\r\n", 1),
    // A multibulk with zero arguments is ignored (no reply).
    raw(b"*0\r\nPING\r\n", 1),
    raw(b"*-1\r\nPING\r\n", 1),
    // Pipelined multibulk commands in one write.
    raw(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", 2),
];

/// Requests written in pieces (with a pause between them), and the replies expected in
/// all: a server must not care where packet boundaries fall.
const SPLIT_CASES: &[(&[&[u8]], usize)] = &[
    (&[b"PI", b"NG\r", b"\n"], 1),
    (&[b"*2\r\n$4\r\nEC", b"HO\r\n$5\r\nhel", b"lo\r", b"\n"], 1),
    (&[b"*", b"2\r\n", b"$3\r\nGET\r\n$1\r\nk\r\nPING\r\n*1\r\n$4\r\nPI", b"NG\r\n"], 3),
];

/// Requests after which redis replies once and closes the connection (protocol errors,
/// QUIT).
const FATAL_CASES: &[RawCase] = &[
    // Not a protocol error, but QUIT also replies once and closes.
    fatal(b"QUIT\r\n"),
    fatal(b"*1\r\n$4\r\nQUIT\r\n"),
    fatal(b"SET \"unbalanced\r\n"),
    fatal(b"SET 'unbalanced\r\n"),
    fatal(b"SET \"a\"b c\r\n"),
    fatal(b"*1\r\n$abc\r\n"),
    fatal(b"*1\r\n$-5\r\n"),
    fatal(b"*abc\r\n"),
    fatal(b"*1\r\n+PING\r\n"),
    fatal(b"*1\r\n$600000000\r\n"),
    fatal(b"*3000000000\r\n"),
];

/// Reads until the server closes the connection; `Ok` if it closed with nothing more.
fn read_until_closed(side: &mut Side) -> Result<(), String> {
    let mut rest = Vec::new();
    match side.reader.read_to_end(&mut rest) {
        Ok(_) if rest.is_empty() => Ok(()),
        Ok(_) => Err(format!("extra bytes before close: {}", escape(&rest))),
        // A reset also proves the server dropped the connection.
        Err(e) if e.kind() == io::ErrorKind::ConnectionReset => Ok(()),
        Err(e) => Err(format!("connection not closed: {e}")),
    }
}

/// Writes `chunks` (pausing between them) and reads `replies` frames; returns them shown.
fn raw_exchange(side: &mut Side, chunks: &[&[u8]], replies: usize) -> Vec<String> {
    let mut shown = Vec::new();
    for (i, chunk) in chunks.iter().enumerate() {
        if i > 0 {
            std::thread::sleep(SPLIT_PAUSE);
        }
        if let Err(e) = side.writer.write_all(chunk) {
            shown.push(format!("<write: {e}>"));
            return shown;
        }
    }
    for _ in 0..replies {
        let mut out = Vec::new();
        let frame = read_frame(&mut side.reader, &mut out, 0).map(|()| out);
        shown.push(show(&frame));
        if frame.is_err() {
            return shown;
        }
    }
    if !side.reader.buffer().is_empty() {
        shown.push(format!("<extra bytes {}>", escape(side.reader.buffer())));
    }
    shown
}

fn run_raw(redis_addr: &str, other: &Target, protocol: u8) -> Vec<String> {
    let dump = std::env::var_os("MERIDIAN_DIFF_DUMP").is_some();
    let open = |name, addr: &str| Side::open(name, addr, protocol).expect("connect");
    let mut failures = Vec::new();
    let mut compare = |request: &[u8], redis: String, theirs: String| {
        let line = format!("RESP{protocol} raw {}\n    redis:    {redis}\n    {}: {theirs}", escape(request), other.name);
        if dump {
            println!("{line}");
        }
        if redis != theirs {
            failures.push(line);
        }
    };

    let mut redis = open("redis", redis_addr);
    let mut theirs = open(other.name, &other.addr);
    let flushall = encode_command(&[b"FLUSHALL".to_vec()]);
    redis.exchange(&flushall).expect("FLUSHALL on redis");
    theirs.exchange(&flushall).expect("FLUSHALL on the server under test");
    let shared = RAW_CASES.iter().map(|c| (vec![c.request], c.replies));
    let split = SPLIT_CASES.iter().map(|(chunks, replies)| (chunks.to_vec(), *replies));
    for (chunks, replies) in shared.chain(split) {
        let a = raw_exchange(&mut redis, &chunks, replies).join(" ");
        let b = raw_exchange(&mut theirs, &chunks, replies).join(" ");
        let differ = a != b;
        compare(&chunks.concat(), a, b);
        if differ {
            // Start over on fresh connections so one failure does not cascade.
            redis = open("redis", redis_addr);
            theirs = open(other.name, &other.addr);
        }
    }

    for case in FATAL_CASES {
        let mut results = Vec::new();
        for (name, addr) in [("redis", redis_addr), (other.name, other.addr.as_str())] {
            let mut side = open(name, addr);
            let mut shown = raw_exchange(&mut side, &[case.request], case.replies).join(" ");
            match read_until_closed(&mut side) {
                Ok(()) => shown.push_str(" then closed"),
                Err(e) => shown.push_str(&format!(" then <{e}>")),
            }
            results.push(shown);
        }
        let theirs = results.pop().unwrap_or_default();
        let redis = results.pop().unwrap_or_default();
        compare(case.request, redis, theirs);
    }
    failures
}

#[test]
fn inline_commands_and_raw_protocol_match_redis() {
    let Some(redis) = redis_or_skip("the inline/raw differential test") else { return };
    let other = server_under_test();
    let mut failures = Vec::new();
    for protocol in [2u8, 3] {
        failures.extend(run_raw(&redis.addr(), &other, protocol));
    }
    assert!(
        failures.is_empty(),
        "{} raw/inline mismatch(es) between redis-server and {}:\n\n{}",
        failures.len(),
        other.name,
        failures.join("\n\n")
    );
}
