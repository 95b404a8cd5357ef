//! `maelstrom-harness WORKLOAD [options]`: one local Maelstrom-style run (see
//! `maelstrom::harness`), wrapped by `maelstrom/check`. Exit status: 0 when the
//! workload's check passes, 1 on a violation, 2 when the harness could not run. The
//! last line printed is the one-line summary.

use std::path::PathBuf;
use std::time::Duration;

use maelstrom::harness::{self, Config};
use maelstrom::workload::Workload;

const USAGE: &str = "usage: maelstrom-harness g-set|g-counter|pn-counter|broadcast|lin-kv
  [--nodes N] [--seconds S] [--seed X] [--rate OPS_PER_S] [--clients-per-node N]
  [--latency-ms MAX] [--loss P] [--duplication P] [--client-loss P] [--no-partitions]
  [--converge-seconds S] [--shards N] [--node-bin PATH] [--verbose]
  [--plant drop-replication]   (planted fault: every node-to-node message is lost)";

fn fail(error: &str) -> ! {
    eprintln!("maelstrom-harness: {error}\n{USAGE}");
    println!("ERROR {error}");
    std::process::exit(2);
}

fn number<T: std::str::FromStr>(flag: &str, value: Option<String>) -> T {
    value.and_then(|v| v.parse().ok()).unwrap_or_else(|| fail(&format!("{flag} needs a number")))
}

/// The node binary beside this one (cargo builds both into one folder).
fn default_node_bin() -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_else(|e| fail(&format!("cannot find this executable: {e}")));
    exe.with_file_name(format!("meridian-maelstrom{}", std::env::consts::EXE_SUFFIX))
}

fn parse_args() -> Config {
    let mut args = std::env::args().skip(1);
    let workload = args.next().unwrap_or_else(|| fail("no workload"));
    let workload = Workload::from_name(&workload).unwrap_or_else(|| fail(&format!("unknown workload {workload}")));
    let mut config = Config::new(workload, default_node_bin());
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "--nodes" => config.nodes = number(&flag, args.next()),
            "--seconds" => config.seconds = number(&flag, args.next()),
            "--seed" => config.seed = number(&flag, args.next()),
            "--rate" => config.rate = number(&flag, args.next()),
            "--clients-per-node" => config.clients_per_node = number(&flag, args.next()),
            "--latency-ms" => config.faults.latency_ms_max = number(&flag, args.next()),
            "--loss" => config.faults.loss = number(&flag, args.next()),
            "--duplication" => config.faults.duplication = number(&flag, args.next()),
            "--client-loss" => config.client_loss = number(&flag, args.next()),
            "--converge-seconds" => config.converge_seconds = number(&flag, args.next()),
            "--request-timeout-ms" => config.request_timeout = Duration::from_millis(number(&flag, args.next())),
            "--shards" => config.shards_per_node = number(&flag, args.next()),
            "--no-partitions" => config.partitions = false,
            "--verbose" => config.verbose = true,
            "--node-bin" => config.node_bin = args.next().map(PathBuf::from).unwrap_or_else(|| fail("--node-bin needs a path")),
            "--plant" => match args.next().as_deref() {
                Some("drop-replication") => config.faults.drop_all = true,
                other => fail(&format!("unknown planted fault {other:?}")),
            },
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => fail(&format!("unknown argument {other}")),
        }
    }
    if !(1..=maelstrom::node::NODES_MAX).contains(&config.nodes) {
        fail(&format!("--nodes takes 1..={}", maelstrom::node::NODES_MAX));
    }
    if ![config.faults.loss, config.faults.duplication, config.client_loss].iter().all(|p| (0.0..1.0).contains(p)) {
        fail("--loss, --duplication and --client-loss take probabilities below 1");
    }
    if !(config.seconds > 0.0 && config.rate > 0.0 && config.clients_per_node >= 1 && (1..=64).contains(&config.shards_per_node)) {
        fail("--seconds, --rate, --clients-per-node and --shards must be positive (shards at most 64)");
    }
    config
}

fn main() {
    let config = parse_args();
    match harness::run(&config) {
        Ok(report) => {
            for violation in report.violations.iter().take(harness::check::VIOLATIONS_LISTED_MAX) {
                println!("violation: {violation}");
            }
            if report.violations.len() > harness::check::VIOLATIONS_LISTED_MAX {
                println!("... and {} more violations", report.violations.len() - harness::check::VIOLATIONS_LISTED_MAX);
            }
            println!("{}", report.summary);
            std::process::exit(if report.passed() { 0 } else { 1 });
        }
        Err(error) => {
            println!("ERROR {} nodes={}: the harness could not run: {error}", config.workload.name(), config.nodes);
            std::process::exit(2);
        }
    }
}
