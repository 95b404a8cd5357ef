//! Per-command and per-error counters: what INFO `commandstats` (`cmdstat_<name>:calls=…,
//! usec=…,usec_per_call=…,rejected_calls=…,failed_calls=…`), INFO `errorstats`
//! (`errorstat_<CODE>:count=…`) and INFO stats' `total_error_replies` report, counted
//! as Redis counts them (see docs/observability.md for where the two differ).
//!
//! Owns the counters and their INFO lines. The connection (and EXEC and scripts, for
//! the commands they run) says what ran and how it ended; nothing here decides what a
//! client sees besides INFO.
//!
//! Must never: slow the hot path with shared writes or clock reads per command (a
//! connection sums a run of one command's calls itself, [`CallTally`], and reads the
//! clock only where the command changes; both reach here once per run), hold a lock on
//! it, or grow without bound (error codes are capped at
//! [`ERROR_CODES_MAX`], as Redis caps them; subcommand rows exist only for
//! subcommands that parsed, a bounded set).

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::command::table::COMMANDS;

/// Distinct error codes counted (Redis 7's `ERROR_STATS_NUMBER`): codes past it are
/// counted in `total_error_replies` only, so a client cannot grow the table by sending
/// commands that fail with made-up codes (a script's `redis.error_reply`).
pub const ERROR_CODES_MAX: usize = 128;

#[derive(Default)]
struct Row {
    calls: AtomicU64,
    ticks: AtomicU64,
    rejected: AtomicU64,
    failed: AtomicU64,
}

impl Row {
    fn reset(&self) {
        for counter in [&self.calls, &self.ticks, &self.rejected, &self.failed] {
            counter.store(0, Ordering::Relaxed);
        }
    }
}

/// How one command ended, for its counters: run (successfully or not), or refused
/// before it ran (wrong arity, NOAUTH, OOM, BUSY, a refused MULTI queueing).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Ran { failed: bool },
    Rejected,
}

/// The server's counters.
pub struct CommandStats {
    clock: quanta::Clock,
    /// One row a command (positions of [`COMMANDS`]) for each shard thread's
    /// connections: a thread adds to its own rows, so two threads running the same
    /// command do not write the same cache line.
    tables: Box<[Box<[Row]>]>,
    /// Container subcommands (`config|set`, `client|list`), by name.
    subcommands: Mutex<HashMap<String, Row>>,
    errors: Mutex<BTreeMap<String, u64>>,
    error_replies: AtomicU64,
}

impl CommandStats {
    pub fn new(shards: usize) -> CommandStats {
        let table = || COMMANDS.iter().map(|_| Row::default()).collect::<Box<[Row]>>();
        CommandStats {
            clock: quanta::Clock::new(),
            tables: (0..shards.max(1)).map(|_| table()).collect(),
            subcommands: Mutex::new(HashMap::new()),
            errors: Mutex::new(BTreeMap::new()),
            error_replies: AtomicU64::new(0),
        }
    }

    /// A reading of the clock the command times are counted in (the CPU's cycle
    /// counter where it is steady, else the OS's monotonic clock).
    #[inline]
    pub fn now(&self) -> u64 {
        self.clock.raw()
    }

    fn row(&self, home: usize, index: usize) -> &Row {
        debug_assert!(home < self.tables.len(), "a shard thread {home} of {}", self.tables.len());
        &self.tables[home.min(self.tables.len() - 1)][index]
    }

    /// Add `calls` runs of command `index` on the shard thread `home`.
    pub fn add_calls(&self, home: usize, index: usize, calls: u64) {
        self.row(home, index).calls.fetch_add(calls, Ordering::Relaxed);
    }

    /// Add `ticks` (differences of [`CommandStats::now`]) to command `index`'s time.
    pub fn add_ticks(&self, home: usize, index: usize, ticks: u64) {
        self.row(home, index).ticks.fetch_add(ticks, Ordering::Relaxed);
    }

    /// Count how command `index` ended beyond its call: failed (it ran, and answered
    /// an error) or rejected (it did not run). A plain success needs nothing here.
    pub fn add_outcome(&self, home: usize, index: usize, outcome: Outcome) {
        let row = self.row(home, index);
        match outcome {
            Outcome::Ran { failed: false } => {}
            Outcome::Ran { failed: true } => {
                row.failed.fetch_add(1, Ordering::Relaxed);
            }
            Outcome::Rejected => {
                row.rejected.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// A container's subcommand (`name` is `container|sub`, lower case) ran or was
    /// rejected, taking `ticks`.
    pub fn add_subcommand(&self, name: String, outcome: Outcome, ticks: u64) {
        let Ok(mut rows) = self.subcommands.lock() else { return };
        let row = rows.entry(name).or_default();
        match outcome {
            Outcome::Ran { failed } => {
                row.calls.fetch_add(1, Ordering::Relaxed);
                row.ticks.fetch_add(ticks, Ordering::Relaxed);
                if failed {
                    row.failed.fetch_add(1, Ordering::Relaxed);
                }
            }
            Outcome::Rejected => {
                row.rejected.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// An error reply left for a client (`message`: the line after `-`): counted under
    /// its code, the first word, as Redis counts it.
    pub fn add_error_reply(&self, message: &[u8]) {
        self.error_replies.fetch_add(1, Ordering::Relaxed);
        let code = message.split(|&b| b == b' ').next().unwrap_or_default();
        let Ok(mut errors) = self.errors.lock() else { return };
        let code = String::from_utf8_lossy(code);
        let room = errors.len() < ERROR_CODES_MAX;
        match errors.get_mut(code.as_ref()) {
            Some(count) => *count += 1,
            None if room => {
                errors.insert(code.into_owned(), 1);
            }
            None => {}
        }
    }

    pub fn error_replies(&self) -> u64 {
        self.error_replies.load(Ordering::Relaxed)
    }

    /// CONFIG RESETSTAT.
    pub fn reset(&self) {
        self.tables.iter().flat_map(|t| t.iter()).for_each(Row::reset);
        if let Ok(mut rows) = self.subcommands.lock() {
            rows.clear();
        }
        if let Ok(mut errors) = self.errors.lock() {
            errors.clear();
        }
        self.error_replies.store(0, Ordering::Relaxed);
    }

    fn micros(&self, ticks: u64) -> u64 {
        self.clock.delta_as_nanos(0, ticks) / 1000
    }

    /// INFO `commandstats`: a line for each command run or refused since the start (or
    /// the last CONFIG RESETSTAT), in name order.
    pub fn render_commandstats(&self, out: &mut String) {
        out.push_str("# Commandstats\r\n");
        let mut lines: Vec<(String, [u64; 4])> = Vec::new();
        for (index, spec) in COMMANDS.iter().enumerate() {
            let mut sums = [0u64; 4];
            for table in self.tables.iter() {
                let row = &table[index];
                for (sum, counter) in sums.iter_mut().zip([&row.calls, &row.ticks, &row.rejected, &row.failed]) {
                    *sum += counter.load(Ordering::Relaxed);
                }
            }
            lines.push((spec.name.to_owned(), sums));
        }
        if let Ok(rows) = self.subcommands.lock() {
            for (name, row) in rows.iter() {
                lines.push((name.clone(), [&row.calls, &row.ticks, &row.rejected, &row.failed].map(|c| c.load(Ordering::Relaxed))));
            }
        }
        lines.sort_by(|a, b| a.0.cmp(&b.0));
        for (name, [calls, ticks, rejected, failed]) in lines {
            if calls == 0 && rejected == 0 && failed == 0 {
                continue;
            }
            let usec = self.micros(ticks);
            let per_call = if calls == 0 { 0.0 } else { usec as f64 / calls as f64 };
            let _ = write!(
                out,
                "cmdstat_{name}:calls={calls},usec={usec},usec_per_call={per_call:.2},rejected_calls={rejected},failed_calls={failed}\r\n"
            );
        }
        out.push_str("\r\n");
    }

    /// INFO `errorstats`: a line for each error code answered, in name order.
    pub fn render_errorstats(&self, out: &mut String) {
        out.push_str("# Errorstats\r\n");
        if let Ok(errors) = self.errors.lock() {
            for (code, count) in errors.iter() {
                let _ = write!(out, "errorstat_{code}:count={count}\r\n");
            }
        }
        out.push_str("\r\n");
    }
}

/// A connection's count of calls in a run of one command (a pipeline mostly repeats
/// one), added to [`CommandStats`] once the command changes or the pipeline ends. (A
/// run's time is read at its ends by the connection: see `close_time_run`.)
#[derive(Default)]
pub struct CallTally {
    /// The command counted and its calls so far; `None` when nothing is.
    run: Option<(usize, u64)>,
}

impl CallTally {
    /// One call of command `index`.
    #[inline]
    pub fn add(&mut self, stats: &CommandStats, home: usize, index: usize) {
        match &mut self.run {
            Some((counted, calls)) if *counted == index => *calls += 1,
            _ => {
                self.flush(stats, home);
                self.run = Some((index, 1));
            }
        }
    }

    /// Add what is counted so far to `stats`.
    pub fn flush(&mut self, stats: &CommandStats, home: usize) {
        if let Some((index, calls)) = self.run.take() {
            stats.add_calls(home, index, calls);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::table;

    fn line(stats: &CommandStats, name: &str) -> Option<String> {
        let mut out = String::new();
        stats.render_commandstats(&mut out);
        out.split("\r\n").find(|l| l.starts_with(&format!("cmdstat_{name}:"))).map(str::to_owned)
    }

    #[test]
    fn calls_are_summed_over_threads_and_runs_and_reset() {
        let stats = CommandStats::new(2);
        let set = table::index_of(b"set").expect("a command");
        let get = table::index_of(b"get").expect("a command");
        let mut tally = CallTally::default();
        for _ in 0..3 {
            tally.add(&stats, 0, set);
        }
        // Not added until the command changes or the pipeline ends.
        assert_eq!(line(&stats, "set"), None);
        tally.add(&stats, 0, get);
        tally.flush(&stats, 0);
        stats.add_calls(1, set, 2);
        stats.add_ticks(1, set, 10);
        stats.add_outcome(1, set, Outcome::Ran { failed: true });
        stats.add_outcome(0, set, Outcome::Rejected);
        let set_line = line(&stats, "set").expect("set ran");
        assert!(set_line.starts_with("cmdstat_set:calls=5,usec="), "{set_line}");
        assert!(set_line.ends_with(",rejected_calls=1,failed_calls=1"), "{set_line}");
        assert!(line(&stats, "get").expect("get ran").starts_with("cmdstat_get:calls=1,"));
        assert_eq!(line(&stats, "del"), None, "a command never run has no line");
        stats.reset();
        assert_eq!(line(&stats, "set"), None);
    }

    #[test]
    fn errors_count_by_their_first_word_up_to_the_cap() {
        let stats = CommandStats::new(1);
        stats.add_error_reply(b"ERR syntax error");
        stats.add_error_reply(b"ERR value is not an integer or out of range");
        stats.add_error_reply(b"WRONGTYPE Operation against a key holding the wrong kind of value");
        for i in 0..2 * ERROR_CODES_MAX {
            stats.add_error_reply(format!("CODE{i} made up").as_bytes());
        }
        let mut out = String::new();
        stats.render_errorstats(&mut out);
        assert!(out.contains("\r\nerrorstat_ERR:count=2\r\n"), "{out}");
        assert!(out.contains("\r\nerrorstat_WRONGTYPE:count=1\r\n"), "{out}");
        assert_eq!(out.matches("errorstat_").count(), ERROR_CODES_MAX);
        assert_eq!(stats.error_replies(), 3 + 2 * ERROR_CODES_MAX as u64);
    }

    #[test]
    fn subcommands_have_rows_of_their_own() {
        let stats = CommandStats::new(1);
        stats.add_subcommand("config|set".to_owned(), Outcome::Ran { failed: true }, 5);
        stats.add_subcommand("config|set".to_owned(), Outcome::Ran { failed: false }, 5);
        assert!(line(&stats, "config\\|set").is_none());
        let got = line(&stats, "config|set").expect("a row");
        assert!(got.starts_with("cmdstat_config|set:calls=2,") && got.ends_with("rejected_calls=0,failed_calls=1"), "{got}");
    }
}
