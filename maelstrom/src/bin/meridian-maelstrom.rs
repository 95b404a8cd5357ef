//! The Maelstrom node binary: `meridian-maelstrom --workload NAME [--shards N]`.
//!
//! Owns the process's I/O and nothing else: a thread reads stdin lines into a bounded
//! queue, the main thread hands each to the node state machine (`maelstrom::node`)
//! with the wall clock, ticks it every batch window, and writes what comes back to
//! stdout, one JSON message per line. Diagnostics go to stderr, never stdout (stdout is
//! Maelstrom's network). Exits when stdin closes; with `MERIDIAN_MAELSTROM_STATS` set it
//! first prints what each peer link did.

use std::io::{BufRead, BufWriter, Write};
use std::sync::mpsc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use maelstrom::message::{Envelope, LINE_BYTES_MAX};
use maelstrom::node::Node;
use maelstrom::workload::Workload;

/// The replication batch window, as `--repl-batch-ms`.
const TICK_MS: u64 = 10;
/// Lines read ahead of the node at most (the reader blocks past it).
const LINES_QUEUED_MAX: usize = 4096;

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

fn usage(error: &str) -> ! {
    eprintln!("meridian-maelstrom: {error}");
    eprintln!("usage: meridian-maelstrom --workload g-set|g-counter|pn-counter|broadcast|lin-kv [--shards N]");
    std::process::exit(2);
}

fn parse_args() -> (Workload, usize) {
    let mut workload = None;
    let mut shards = 2;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = args.next().unwrap_or_else(|| usage(&format!("{arg} needs a value")));
        match arg.as_str() {
            "--workload" => workload = Some(Workload::from_name(&value).unwrap_or_else(|| usage(&format!("unknown workload {value}")))),
            "--shards" => shards = value.parse().ok().filter(|n| (1..=64).contains(n)).unwrap_or_else(|| usage("--shards takes 1..=64")),
            _ => usage(&format!("unknown argument {arg}")),
        }
    }
    (workload.unwrap_or_else(|| usage("--workload is required: Maelstrom's `read` means something else in each")), shards)
}

fn main() {
    let (workload, shards) = parse_args();
    let (lines_tx, lines_rx) = mpsc::sync_channel::<String>(LINES_QUEUED_MAX);
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if lines_tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut node = Node::new(workload, shards);
    let mut out = BufWriter::new(std::io::stdout().lock());
    let mut next_tick_ms = now_ms() + TICK_MS;
    loop {
        let wait_ms = next_tick_ms.saturating_sub(now_ms());
        let mut sends = Vec::new();
        match lines_rx.recv_timeout(Duration::from_millis(wait_ms)) {
            Ok(line) if line.len() > LINE_BYTES_MAX => eprintln!("dropped a line of {} bytes", line.len()),
            Ok(line) if line.trim().is_empty() => {}
            Ok(line) => match Envelope::parse(&line) {
                Ok(message) => sends.extend(node.handle(message, now_ms())),
                Err(e) => eprintln!("dropped a line that is not a Maelstrom message ({e}): {}", &line[..line.len().min(200)]),
            },
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        let now = now_ms();
        if now >= next_tick_ms {
            sends.extend(node.tick(now));
            next_tick_ms = now + TICK_MS;
        }
        for message in sends {
            if writeln!(out, "{}", message.to_line()).is_err() {
                return; // stdout closed: Maelstrom is gone
            }
        }
        if out.flush().is_err() {
            return;
        }
    }
    // Set by `maelstrom-harness --verbose`: what each link did.
    if std::env::var_os("MERIDIAN_MAELSTROM_STATS").is_some() {
        for line in node.link_summary() {
            eprintln!("{line}");
        }
    }
    if node.bad_frames > 0 {
        eprintln!("{} peer frames dropped as undecodable", node.bad_frames);
    }
}
