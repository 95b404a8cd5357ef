//! Differential fuzzing against Debian's `redis-server`: random sequences of string,
//! counter, key, hash, set, sorted-set and list commands (`differential_fuzz/gen.rs`)
//! over a few keys of every type, each sent to both servers, every reply compared
//! (`differential_fuzz/reply.rs`: byte for byte, or with the order Redis leaves
//! unspecified sorted away). Where `tests/differential.rs` checks the cases someone
//! thought of, this finds the ones nobody did: type clashes in the middle of a sequence,
//! an edge value reaching a command in a state no script set up, error texts and their
//! precedence.
//!
//! A seed whose replies differ is shrunk (commands are dropped while the replies still
//! differ) and reported as the short sequence that shows it. Switches:
//! - `MERIDIAN_FUZZ_SEEDS=A..B` (default `0..200`; even seeds in RESP2, odd in RESP3), `MERIDIAN_FUZZ_STEPS=N` (default 300);
//! - `MERIDIAN_FUZZ_TARGET=host:port` fuzzes an already running server.
//!
//! A run that started its own server ends by checking that the server stored what the
//! run wrote and reads it back after a SIGKILL (`differential_fuzz/recovery.rs`). Two
//! more tests run the sequences on two replicating nodes, on one of them or on both at
//! once, and check that the nodes read out alike once nothing waits to be sent
//! (`differential_fuzz/replicated.rs`).

mod common;
#[path = "differential_fuzz/families.rs"]
mod families;
#[path = "differential_fuzz/gen.rs"]
mod generator;
#[path = "differential_fuzz/recovery.rs"]
mod recovery;
#[path = "differential_fuzz/replicated.rs"]
mod replicated;
#[path = "differential_fuzz/reply.rs"]
mod reply;
#[path = "differential/resp.rs"]
#[allow(dead_code)]
mod resp;
#[path = "differential_fuzz/rng.rs"]
mod rng;

use std::io::{BufReader, Write};
use std::net::TcpStream;
use std::time::Duration;

use reply::{Norm, Reply};

/// Commands kept after shrinking are tried again this many times over at most.
const SHRINK_ROUNDS_MAX: usize = 8;
/// Mismatching seeds reported in full (the rest are counted).
const REPORTED_MAX: usize = 5;

/// A blocking connection to one server (RESP2 or, after HELLO 3, RESP3).
struct Side {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Side {
    fn connect(addr: &str) -> Side {
        let stream = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect to {addr}: {e}"));
        stream.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
        stream.set_nodelay(true).expect("nodelay");
        Side { writer: stream.try_clone().expect("clone"), reader: BufReader::new(stream) }
    }

    /// Send one command and read its reply frame; `Err` if the connection broke or the
    /// reply is not RESP (itself a finding: a server must never drop a client for a
    /// well-formed command).
    fn call(&mut self, args: &[Vec<u8>]) -> Result<Reply, String> {
        self.writer.write_all(&resp::encode_command(args)).map_err(|e| format!("write: {e}"))?;
        let mut raw = Vec::new();
        resp::read_frame(&mut self.reader, &mut raw, 0).map_err(|e| format!("read: {e}"))?;
        reply::parse(&raw).ok_or_else(|| format!("not one RESP frame: {}", resp::escape(&raw)))
    }
}

/// One command of a sequence.
#[derive(Clone)]
struct Step {
    args: Vec<Vec<u8>>,
    norm: Norm,
}

fn show_command(args: &[Vec<u8>]) -> String {
    args.iter()
        .map(|a| {
            let text: String = a.iter().flat_map(|&b| std::ascii::escape_default(b)).map(char::from).collect();
            if text.is_empty() || text.contains(' ') { format!("\"{text}\"") } else { text }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The first step of `steps` (run from an empty database) whose replies differ:
/// its index and both normalized replies.
fn first_difference(redis: &mut Side, other: &mut Side, protocol: u8, steps: &[Step]) -> Option<(usize, String, String)> {
    for side in [&mut *redis, &mut *other] {
        // A sequence may have ended inside MULTI or with keys watched.
        side.call(&[b"DISCARD".to_vec()]).expect("DISCARD");
        side.call(&[b"UNWATCH".to_vec()]).expect("UNWATCH");
        side.call(&[b"HELLO".to_vec(), protocol.to_string().into_bytes()]).expect("HELLO");
        side.call(&[b"FLUSHALL".to_vec()]).expect("FLUSHALL");
    }
    // Inside MULTI: how each command queued so far is compared in EXEC's reply.
    let mut queued: Option<Vec<Norm>> = None;
    for (i, step) in steps.iter().enumerate() {
        let raw_expected =
            redis.call(&step.args).unwrap_or_else(|e| panic!("redis-server itself failed on {}: {e}", show_command(&step.args)));
        let raw_got = other.call(&step.args);
        let name = step.args[0].to_ascii_uppercase();
        let norm_of = |reply: &Reply, queued: &Option<Vec<Norm>>| match (name.as_slice(), queued) {
            (b"EXEC", Some(norms)) => reply::normalize_each(reply.clone(), norms),
            _ => reply::normalize(reply.clone(), step.norm),
        };
        let expected = norm_of(&raw_expected, &queued);
        let got = raw_got.as_ref().map(|r| norm_of(r, &queued));
        queued = match (name.as_slice(), queued.take(), &raw_expected) {
            (b"MULTI", None, Reply::Line(b'+', _)) => Some(Vec::new()),
            (b"EXEC" | b"DISCARD", Some(_), _) => None,
            (_, Some(mut norms), Reply::Line(b'+', line)) if line == b"QUEUED" => {
                norms.push(step.norm);
                Some(norms)
            }
            (_, queued, _) => queued,
        };
        match got {
            Ok(got) if got == expected => {
                if raw_got.as_ref() != Ok(&raw_expected) {
                    resync_float(redis, other, &step.args, &raw_expected);
                }
            }
            Ok(got) => return Some((i, reply::show(&expected), reply::show(&got))),
            Err(e) => {
                *other = Side::connect(&other.writer.peer_addr().expect("peer").to_string());
                return Some((i, reply::show(&expected), format!("connection lost: {e}")));
            }
        }
    }
    None
}

/// The commands of seed `seed`.
fn sequence(seed: u64, steps: usize) -> Vec<Step> {
    let (mut rng, mut in_multi) = (generator::Rng::new(seed), false);
    (0..steps)
        .map(|_| {
            let generated = generator::command(&mut rng, &mut in_multi);
            Step { args: generated.args, norm: generated.norm }
        })
        .collect()
}

/// Even seeds speak RESP2, odd ones RESP3 (maps, sets, doubles and nulls of their own).
fn protocol_of(seed: u64) -> u8 {
    2 + (seed % 2) as u8
}

/// A float counter whose texts agree only to `Norm::Float`'s digits is set to Redis's
/// text on both servers, so later reads of it compare exactly again.
fn resync_float(redis: &mut Side, other: &mut Side, args: &[Vec<u8>], redis_reply: &Reply) {
    let Reply::Blob(_, Some(text)) = redis_reply else { return };
    let set = match args[0].to_ascii_uppercase().as_slice() {
        b"INCRBYFLOAT" => vec![b"SET".to_vec(), args[1].clone(), text.clone(), b"KEEPTTL".to_vec()],
        b"HINCRBYFLOAT" => vec![b"HSET".to_vec(), args[1].clone(), args[2].clone(), text.clone()],
        _ => return,
    };
    for side in [redis, other] {
        side.call(&set).expect("resync a float counter");
    }
}

/// Drop commands from a failing sequence while some reply still differs (the failing
/// step always stays): the sequence that shows the difference, and that difference.
fn shrink(redis: &mut Side, other: &mut Side, protocol: u8, mut steps: Vec<Step>) -> (Vec<Step>, (usize, String, String)) {
    let mut found = first_difference(redis, other, protocol, &steps).expect("a failing sequence");
    steps.truncate(found.0 + 1);
    for _ in 0..SHRINK_ROUNDS_MAX {
        let before = steps.len();
        let mut chunk = (steps.len() / 2).max(1);
        while chunk >= 1 {
            let mut start = 0;
            while start + 1 < steps.len() {
                let end = (start + chunk).min(steps.len() - 1);
                let mut fewer = steps[..start].to_vec();
                fewer.extend_from_slice(&steps[end..]);
                match first_difference(redis, other, protocol, &fewer) {
                    Some(difference) => {
                        fewer.truncate(difference.0 + 1);
                        steps = fewer;
                        found = difference;
                    }
                    None => start = end,
                }
            }
            chunk /= 2;
        }
        if steps.len() == before {
            break;
        }
    }
    (steps, found)
}

fn env_range(name: &str, default: std::ops::Range<u64>) -> std::ops::Range<u64> {
    let Ok(text) = std::env::var(name) else { return default };
    let (a, b) = text.split_once("..").unwrap_or_else(|| panic!("{name}={text}: expected A..B"));
    a.parse().expect("seed")..b.parse().expect("seed")
}

/// `MERIDIAN_FUZZ_SURVEY=1`: instead of stopping a seed at its first difference, note
/// it, empty both databases and go on; print each kind of difference (command, both
/// replies) once with its count. For finding many at once, not for CI.
fn survey(redis: &mut Side, other: &mut Side, seeds: std::ops::Range<u64>, steps_per_seed: usize) {
    let mut kinds: std::collections::BTreeMap<String, (usize, String)> = Default::default();
    for seed in seeds {
        let steps = sequence(seed, steps_per_seed);
        let mut from = 0;
        while let Some((at, expected, got)) = first_difference(redis, other, protocol_of(seed), &steps[from..]) {
            let step = &steps[from + at];
            let name = String::from_utf8_lossy(&step.args[0]).to_ascii_uppercase();
            let kind = format!("{name}: redis {} / meridian {}", &expected[..expected.len().min(60)], &got[..got.len().min(60)]);
            let entry = kinds.entry(kind).or_insert((0, format!("seed {seed}: {}", show_command(&step.args))));
            entry.0 += 1;
            from += at + 1;
        }
    }
    for (kind, (count, example)) in &kinds {
        eprintln!("{count:5}  {kind}\n       e.g. {example}");
    }
}

#[test]
fn random_command_sequences_answer_as_redis_does() {
    if !common::redis_server_available() {
        eprintln!("!!! SKIPPED the differential fuzz test: redis-server is not installed");
        return;
    }
    let redis_server = common::start_redis(&[]);
    let target = std::env::var("MERIDIAN_FUZZ_TARGET").ok();
    let meridian = target.is_none().then(|| common::start_meridian(&["--shards", "4"]));
    let other_addr = target.unwrap_or_else(|| meridian.as_ref().expect("started").addr());
    let mut redis = Side::connect(&redis_server.addr());
    let mut other = Side::connect(&other_addr);
    let seeds = env_range("MERIDIAN_FUZZ_SEEDS", 0..200);
    let steps_per_seed: usize = std::env::var("MERIDIAN_FUZZ_STEPS").ok().map_or(300, |s| s.parse().expect("steps"));
    if std::env::var_os("MERIDIAN_FUZZ_SURVEY").is_some() {
        survey(&mut redis, &mut other, seeds, steps_per_seed);
        return;
    }
    let (mut failing, mut report) = (Vec::new(), String::new());
    let mut commands = 0usize;
    for seed in seeds.clone() {
        let steps = sequence(seed, steps_per_seed);
        commands += steps.len();
        if first_difference(&mut redis, &mut other, protocol_of(seed), &steps).is_none() {
            continue;
        }
        failing.push(seed);
        if failing.len() > REPORTED_MAX {
            continue;
        }
        let (shrunk, (at, expected, got)) = shrink(&mut redis, &mut other, protocol_of(seed), steps);
        report += &format!("\nseed {seed} (RESP{}): {} command(s) show it; the last one differs:\n", protocol_of(seed), shrunk.len());
        for (i, step) in shrunk.iter().enumerate() {
            report += &format!("  {} {}\n", if i == at { ">" } else { " " }, show_command(&step.args));
        }
        report += &format!("    redis-server: {expected}\n    meridian:     {got}\n");
    }
    eprintln!("differential fuzz: seeds {seeds:?}, {commands} commands, {} seed(s) differ", failing.len());
    let recovered = meridian.map(check_recovery);
    assert!(failing.is_empty(), "replies differ from redis-server's for seeds {failing:?}:\n{report}");
    if let Some(Err(problem)) = recovered {
        panic!("the fuzzed server did not store or recover what the run wrote: {problem}");
    }
}

/// Whether `server` stored everything the run wrote and holds
/// the same keys after a SIGKILL and a restart on its data (`recovery`'s module comment).
fn check_recovery(mut server: common::ServerGuard) -> Result<(), String> {
    // A connection of its own: the fuzzing one may have ended inside MULTI.
    let side = &mut Side::connect(&server.addr());
    recovery::wait_stored(side)?;
    let before = recovery::readout(side);
    let data_dir = common::TempDir { path: server.data_dir.take().expect("start_meridian makes a data dir") };
    drop(server); // SIGKILL
    let log_dir = common::TempDir::new("fuzz-recovery-log");
    let restarted = common::start_meridian_at(&data_dir.path, &["--shards", "4"], &[], &log_dir.path.join("server.log"));
    let after = recovery::readout(&mut Side::connect(&restarted.addr()));
    eprintln!("differential fuzz: {} key(s) read back alike after a SIGKILL and a restart", after.len());
    match recovery::first_difference(&before, &after) {
        Some(difference) => Err(format!("after a SIGKILL and a restart, {difference}")),
        None => Ok(()),
    }
}
