//! `dst`: run the deterministic simulator for one seed or a sweep of seeds.
//!
//! ```text
//! dst --seed 42 --trace          replay one run, printing its event trace
//! dst --seeds 0..1000            sweep the whole system: nodes replicate, persist,
//!                                crash and recover; replicas must converge to the oracle
//! dst --inject-bug NAME          plant a known bug (see --list-bugs): the sweep must fail
//! dst --no-replicate --seeds 0..100  nodes alone, each checked reply by reply
//! dst --graph --seeds 0..100     half the commands are graph writes (GRAPH.QUERY)
//! dst --streams --seeds 0..100   half the commands are stream writes (XADD, XDEL)
//! dst --renames --seeds 0..100   one command in ten a RENAME, RENAMENX, COPY or SET EX
//! dst --no-replicate --dumps --seeds 0..100  one command in six a DUMP, or a RESTORE
//!                                of a payload an earlier DUMP gave (the model checks both)
//! dst --dumps --seeds 0..100     one command in ten a DUMP or RESTORE of a string key,
//!                                checked against the oracle after convergence
//! dst --no-periodic-anti-entropy --seeds 0..100  anti-entropy only after a reconnect:
//!                                the deltas alone must make replicas converge
//! dst --seeds 0..100000 --jobs 8 a sweep on 8 threads (default: every core)
//! ```
//!
//! A failing seed prints its report and the exact command that replays it.

use std::process::ExitCode;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use clap::Parser;

#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;
use dst::{Bug, FaultWeights, SimConfig, run};

#[derive(Parser, Debug)]
#[command(name = "dst", about = "Deterministic simulation of Meridian nodes under injected faults")]
struct Args {
    /// Run exactly this seed.
    #[arg(long, conflicts_with = "seeds")]
    seed: Option<u64>,
    /// Sweep a range of seeds, `A..B` (B excluded).
    #[arg(long)]
    seeds: Option<String>,
    /// Print every event of the run (with --seed).
    #[arg(long)]
    trace: bool,
    /// Plant a known bug (names: --list-bugs).
    #[arg(long)]
    inject_bug: Option<String>,
    /// List the bugs --inject-bug knows, one per line.
    #[arg(long)]
    list_bugs: bool,
    /// Simulated nodes (one region each).
    #[arg(long, default_value_t = 3)]
    nodes: usize,
    /// Shards per node.
    #[arg(long, default_value_t = 2)]
    shards: usize,
    /// Concurrent clients.
    #[arg(long, default_value_t = 6)]
    clients: usize,
    /// Client operations per run.
    #[arg(long, default_value_t = 1_500)]
    ops: usize,
    /// Fault weights, e.g. `crash=2,pause=0,clock-jump=1,clock-drift=1,partition=3,slow-link=1`;
    /// `none` disables all faults.
    #[arg(long, default_value = "")]
    faults: String,
    /// Chance in percent that an object-store operation fails transiently.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(0..=100))]
    store_error_percent: u32,
    /// Nodes do not replicate: each serves its own clients alone, checked reply by reply
    /// against the sequential model (without it, the default, nodes replicate and the
    /// converged state is checked against the oracle).
    #[arg(long)]
    no_replicate: bool,
    /// The default; still accepted so that replay lines printed before it was are
    /// replayed as they were.
    #[arg(long, hide = true, conflicts_with = "no_replicate")]
    replicate: bool,
    /// Replication runs: half the commands are graph writes and reads on one graph,
    /// checked against the graph oracle after convergence.
    #[arg(long)]
    graph: bool,
    /// Replication runs: half the commands are stream writes and reads on one stream,
    /// checked against the stream oracle after convergence.
    #[arg(long)]
    streams: bool,
    /// Replication runs: about one command in ten is a RENAME, RENAMENX or COPY between
    /// two string keys, checked against the oracle after convergence.
    #[arg(long)]
    renames: bool,
    /// Single-node runs: about one command in six is a DUMP of a workload key or a
    /// RESTORE of a payload an earlier DUMP returned (sometimes damaged), each checked
    /// against the model. Replication runs: about one in ten is a DUMP or a RESTORE
    /// REPLACE of a string key, checked against the oracle after convergence.
    #[arg(long)]
    dumps: bool,
    /// Replication runs: give up on a peer silent this long (0: never). Default: by
    /// the seed, even seeds after 600 ms, odd ones never.
    #[arg(long)]
    peer_horizon_ms: Option<u64>,
    /// Replication runs: anti-entropy rounds only where a link must have one (a new
    /// connection, an overflowed queue), none every 500 ms, so that the deltas alone
    /// must make the replicas converge.
    #[arg(long)]
    no_periodic_anti_entropy: bool,
    /// Stop a sweep at the first failing seed.
    #[arg(long)]
    fail_fast: bool,
    /// Threads a sweep runs seeds on (default: every core).
    #[arg(long)]
    jobs: Option<usize>,
}

/// Lines of a failure's report a sweep prints (the replay prints it whole).
const FAILURE_LINES_MAX: usize = 40;

fn parse_range(text: &str) -> Result<(u64, u64), String> {
    let (a, b) = text.split_once("..").ok_or("expected A..B")?;
    let a: u64 = a.parse().map_err(|_| "bad range start")?;
    let b: u64 = b.parse().map_err(|_| "bad range end")?;
    if b <= a {
        return Err("empty range".into());
    }
    Ok((a, b))
}

fn main() -> ExitCode {
    let args = Args::parse();
    if args.list_bugs {
        for bug in Bug::ALL {
            println!("{}", bug.name());
        }
        return ExitCode::SUCCESS;
    }
    let bug = match args.inject_bug.as_deref().map(|n| Bug::from_name(n).ok_or(n)) {
        None => None,
        Some(Ok(bug)) => Some(bug),
        Some(Err(name)) => {
            eprintln!("unknown bug {name:?}; `dst --list-bugs` lists them");
            return ExitCode::from(2);
        }
    };
    let faults = if args.faults == "none" { Ok(FaultWeights::none()) } else { FaultWeights::parse(&args.faults) };
    let faults = match faults {
        Ok(f) => f,
        Err(e) => {
            eprintln!("--faults: {e}");
            return ExitCode::from(2);
        }
    };
    let base = SimConfig {
        nodes: args.nodes,
        shards: args.shards,
        clients: args.clients,
        ops: args.ops,
        faults,
        bug,
        store_error_percent: args.store_error_percent,
        // `--replicate` says what the default is already.
        replicate: args.replicate || !args.no_replicate,
        graph: args.graph,
        streams: args.streams,
        renames: args.renames,
        dumps: args.dumps,
        peer_horizon_ms: args.peer_horizon_ms,
        periodic_anti_entropy: !args.no_periodic_anti_entropy,
        ..SimConfig::default()
    };
    if let Some(seed) = args.seed {
        let outcome = run(SimConfig { seed, trace: args.trace, ..base });
        if args.trace || !outcome.ok() {
            for line in &outcome.trace {
                println!("{line}");
            }
        }
        if let Some(reason) = &outcome.failure {
            println!("failure: {reason}");
        }
        println!("{}", outcome.summary());
        return if outcome.ok() { ExitCode::SUCCESS } else { ExitCode::FAILURE };
    }

    let (start, end) = match parse_range(args.seeds.as_deref().unwrap_or("0..100")) {
        Ok(range) => range,
        Err(e) => {
            eprintln!("--seeds: {e}");
            return ExitCode::from(2);
        }
    };
    let jobs = args.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())).clamp(1, 256);
    // Panics inside the code under test are reported as failures; keep them quiet.
    std::panic::set_hook(Box::new(|_| {}));
    let started = Instant::now();
    let next_seed = AtomicU64::new(start);
    let stop = AtomicBool::new(false);
    let ran = AtomicU64::new(0);
    let failed = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            scope.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    let seed = next_seed.fetch_add(1, Ordering::Relaxed);
                    if seed >= end {
                        break;
                    }
                    let config = SimConfig { seed, ..base.clone() };
                    let outcome = run(config.clone());
                    ran.fetch_add(1, Ordering::Relaxed);
                    if let Some(reason) = &outcome.failure {
                        // One block per failure, printed whole under the lock.
                        let mut failed = failed.lock().unwrap_or_else(|e| e.into_inner());
                        println!("{}", outcome.summary());
                        for line in reason.lines().take(FAILURE_LINES_MAX) {
                            println!("  {line}");
                        }
                        println!("  replay: {}", config.replay_command());
                        failed.push(seed);
                        if args.fail_fast {
                            stop.store(true, Ordering::Relaxed);
                        }
                    }
                }
            });
        }
    });
    let failed = failed.into_inner().unwrap_or_else(|e| e.into_inner());
    let ran = ran.into_inner();
    let seconds = started.elapsed().as_secs_f64();
    println!("seeds={ran} failed={} jobs={jobs} seconds={seconds:.1} seeds_per_sec={:.1}", failed.len(), ran as f64 / seconds.max(1e-9));
    if failed.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}
