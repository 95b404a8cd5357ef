//! Lua scripting: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT LOAD / EXISTS / FLUSH /
//! KILL, as Redis 7.0 answers them.
//!
//! How a script is atomic here: it runs on the coordinator thread with every shard
//! parked (`coordinator`), so no other command touches the data until it ends, as in
//! Redis. A parked shard thread keeps serving its connections meanwhile; their data
//! commands wait for the script (`shard_thread::ParkGate`), and once the script has run
//! past `lua-time-limit` every command but SCRIPT KILL, SHUTDOWN and the transaction
//! commands is answered `-BUSY` (`ScriptWatch::busy`, checked by the connection).
//!
//! Across regions a script replicates as its effects, exactly as a transaction over
//! several shards does (docs/semantics.md). The script cache is this node's: it is not
//! replicated or persisted (Redis does not persist it either); EVALSHA of a script this
//! node has not seen answers NOSCRIPT, and clients then send EVAL.
//!
//! Owns the cache, the running script's watch and the commands' replies; the
//! interpreter is `vm`, the value conversions `convert`.

mod convert;
mod vm;

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;

use super::ServerState;
use super::shards::{ParkedShards, Shards};
use crate::command::script::{ScriptCommand, ScriptRun};
use crate::command::{Command, parse_command_at, table};
use crate::protocol::Frame;

pub use vm::sha1_hex;

/// Scripts the cache holds at most; past it the oldest is forgotten (EVALSHA of it then
/// answers NOSCRIPT, and clients send EVAL again). Redis 7.0 has no bound.
const CACHED_SCRIPTS_MAX: usize = 10_000;
/// Bytes of script bodies the cache holds at most.
const CACHED_BYTES_MAX: usize = 64 << 20;

const NOSCRIPT: &str = "NOSCRIPT No matching script. Please use EVAL.";
pub const BUSY: &str = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";

/// Script bodies by SHA1, as EVAL and SCRIPT LOAD leave them.
#[derive(Default)]
pub struct ScriptCache {
    inner: Mutex<CacheInner>,
    /// SCRIPT FLUSHes so far: an interpreter made before the last one starts afresh.
    generation: AtomicU64,
}

#[derive(Default)]
struct CacheInner {
    bodies: HashMap<String, Bytes>,
    /// Insertion order, for forgetting the oldest past the bounds.
    order: VecDeque<String>,
    bytes: usize,
}

impl ScriptCache {
    /// Remember `body`; returns its SHA1.
    pub fn add(&self, body: &Bytes) -> String {
        let sha = sha1_hex(body);
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if inner.bodies.contains_key(&sha) {
            return sha;
        }
        while !inner.order.is_empty() && (inner.bodies.len() >= CACHED_SCRIPTS_MAX || inner.bytes + body.len() > CACHED_BYTES_MAX) {
            if let Some(oldest) = inner.order.pop_front()
                && let Some(gone) = inner.bodies.remove(&oldest)
            {
                inner.bytes -= gone.len();
            }
        }
        inner.bytes += body.len();
        inner.bodies.insert(sha.clone(), body.clone());
        inner.order.push_back(sha.clone());
        sha
    }

    pub fn get(&self, sha: &str) -> Option<Bytes> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).bodies.get(sha).cloned()
    }

    pub fn flush(&self) {
        *self.inner.lock().unwrap_or_else(|e| e.into_inner()) = CacheInner::default();
        self.generation.fetch_add(1, Ordering::SeqCst);
    }

    fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }
}

/// The running script, as other connections see it.
#[derive(Default)]
pub struct ScriptWatch {
    running: AtomicBool,
    /// Past `lua-time-limit`: other clients are answered BUSY.
    busy: AtomicBool,
    kill: AtomicBool,
    /// The script has run a write: SCRIPT KILL answers UNKILLABLE.
    wrote: AtomicBool,
    /// The node stops: every script stops at its next check, now and later.
    shutdown: AtomicBool,
    limit_ms: AtomicU64,
    /// Woken when `busy` turns on: a client waiting for a parked shard is then
    /// answered BUSY, as Redis answers what it reads while a script is busy.
    became_busy: tokio::sync::Notify,
}

impl ScriptWatch {
    /// A script runs past its time limit: everything but the commands that may run
    /// now (SCRIPT KILL, SHUTDOWN, ...) is answered BUSY.
    pub fn busy(&self) -> bool {
        self.busy.load(Ordering::Relaxed)
    }

    fn begin(&self, limit_ms: u64) {
        self.limit_ms.store(limit_ms, Ordering::SeqCst);
        self.kill.store(false, Ordering::SeqCst);
        self.wrote.store(false, Ordering::SeqCst);
        self.busy.store(false, Ordering::SeqCst);
        self.running.store(true, Ordering::SeqCst);
    }

    fn end(&self) {
        self.running.store(false, Ordering::SeqCst);
        self.busy.store(false, Ordering::SeqCst);
        self.kill.store(false, Ordering::SeqCst);
    }

    fn note_elapsed(&self, elapsed: Duration) {
        if elapsed.as_millis() as u64 >= self.limit_ms.load(Ordering::Relaxed) && !self.busy.load(Ordering::Relaxed) {
            tracing::warn!("a script has run past lua-time-limit; clients are answered BUSY until it ends or SCRIPT KILL");
            self.busy.store(true, Ordering::SeqCst);
            self.became_busy.notify_waiters();
        }
    }

    /// Returns once a script runs past its time limit (at once if one does now).
    pub async fn until_busy(&self) {
        loop {
            // Made before the check, so a change in between still wakes it.
            let notified = self.became_busy.notified();
            if self.busy() {
                return;
            }
            notified.await;
        }
    }

    fn killed(&self) -> bool {
        self.kill.load(Ordering::Relaxed) || self.shutdown.load(Ordering::Relaxed)
    }

    /// The node stops: a running script is stopped at its next check, whatever it wrote.
    pub fn stop_for_shutdown(&self) {
        self.shutdown.store(true, Ordering::SeqCst);
    }

    /// SCRIPT KILL.
    fn kill(&self) -> Frame {
        if !self.running.load(Ordering::SeqCst) {
            return Frame::static_error("NOTBUSY No scripts in execution right now.");
        }
        if self.wrote.load(Ordering::SeqCst) {
            return Frame::static_error(
                "UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.",
            );
        }
        self.kill.store(true, Ordering::SeqCst);
        Frame::ok()
    }
}

/// Wait until this thread's shard is not parked. `false`: a script went past its time
/// limit meanwhile, and the command is to be answered BUSY instead (it has not run).
pub async fn home_shard_free(watch: &ScriptWatch) -> bool {
    loop {
        if !super::park_gate::is_parked() {
            return true;
        }
        if watch.busy() {
            return false;
        }
        tokio::select! {
            _ = super::park_gate::unparked() => {}
            _ = watch.until_busy() => {}
        }
    }
}

/// Whether `args` (a command as sent) may run while a script is busy: as Redis's
/// `allow-busy` flag, plus SCRIPT KILL (whose container has no flags of its own).
pub fn allowed_while_busy(index: Option<usize>, args: &[Bytes]) -> bool {
    let Some(spec) = index.map(|i| &table::COMMANDS[i]) else { return false };
    spec.flags.contains(&"allow_busy") || (spec.name == "script" && args.get(1).is_some_and(|sub| sub.eq_ignore_ascii_case(b"kill")))
}

/// Run a SCRIPT subcommand or a script.
pub async fn execute(access: &impl Shards, command: ScriptCommand, random_pick: u64) -> Frame {
    let state = access.shared_state();
    match command {
        ScriptCommand::Load(body) => Frame::Bulk(Bytes::from(state.scripts.add(&body))),
        ScriptCommand::Exists(shas) => Frame::Array(
            shas.iter()
                .map(|sha| Frame::Integer(state.scripts.get(&String::from_utf8_lossy(sha).to_ascii_lowercase()).is_some() as i64))
                .collect(),
        ),
        ScriptCommand::Flush => {
            state.scripts.flush();
            Frame::ok()
        }
        ScriptCommand::Kill => state.script_watch.kill(),
        ScriptCommand::Run(run) => eval(access, state, run, random_pick).await,
    }
}

async fn eval(access: &impl Shards, state: Arc<ServerState>, run: ScriptRun, random_pick: u64) -> Frame {
    let every_shard = (0..access.shard_count()).collect();
    access.run_atomic(every_shard, move |parked| run_parked(&ParkedShards::new(parked, state), run, random_pick)).await
}

/// Run a script on shards already parked (EVAL's own job, or EXEC's when the
/// transaction holds an EVAL).
pub fn run_parked(shards: &ParkedShards<'_>, run: ScriptRun, random_pick: u64) -> Frame {
    let state = shards.state();
    let (sha, body) = match run.body {
        Ok(body) => (state.scripts.add(&body), body),
        Err(sha) => {
            let sha = String::from_utf8_lossy(&sha).to_ascii_lowercase();
            match state.scripts.get(&sha) {
                Some(body) => (sha, body),
                None => return Frame::static_error(NOSCRIPT),
            }
        }
    };
    let watch = state.script_watch.clone();
    let generation = state.scripts.generation();
    let mut caller = ParkedCaller { shards, read_only: run.read_only, random_pick, watch: &watch };
    let invocation = vm::Invocation { sha: &sha, body: &body, keys: &run.keys, args: &run.args };
    watch.begin(state.runtime.lua_time_limit_ms());
    let reply = vm::run(&invocation, &mut caller, &watch, generation);
    watch.end();
    reply
}

/// A script's commands, run on the parked shards.
struct ParkedCaller<'a, 'p> {
    shards: &'a ParkedShards<'p>,
    read_only: bool,
    random_pick: u64,
    watch: &'a Arc<ScriptWatch>,
}

impl vm::Caller for ParkedCaller<'_, '_> {
    fn call(&mut self, words: Vec<Bytes>) -> Frame {
        let index = table::index_of(&words[0]);
        let Some(spec) = index.map(|i| &table::COMMANDS[i]) else {
            return Frame::static_error("ERR Unknown Redis command called from script");
        };
        if !spec.arity_ok(words.len()) {
            return Frame::static_error("ERR Wrong number of args calling Redis command from script");
        }
        if spec.flags.contains(&"noscript") {
            return Frame::static_error("ERR This Redis command is not allowed from script");
        }
        let write = spec.is_write();
        if write && self.read_only {
            return Frame::static_error("ERR Write commands are not allowed from read-only scripts.");
        }
        let state = self.shards.state();
        if spec.is_denyoom() && state.memory.over(state.runtime.maxmemory()) {
            return Frame::static_error(super::memory::OOM);
        }
        let monitored = state.monitors.is_active().then(|| words.clone());
        let reply = match parse_command_at(index, words) {
            Err(error) => error,
            Ok(command) => match command {
                Command::Ping(None) => Frame::simple("PONG"),
                Command::Ping(Some(message)) | Command::Echo(message) => Frame::Bulk(message),
                Command::Select(0) => Frame::ok(),
                Command::Select(_) => crate::command::errors::error(crate::command::errors::DB_INDEX_OUT_OF_RANGE),
                Command::Time => super::time_reply(),
                Command::PubSub(crate::command::PubSubCommand::Publish { shard, channel, message }) => {
                    super::pubsub::publish(state, shard, channel, message)
                }
                // Redis refuses BLOCK of the stream reads in a script (the blocking pops
                // run as their non-blocking forms).
                Command::Blocking(blocking) if blocking.name.starts_with('x') => {
                    Frame::error(format!("ERR {} command is not allowed with BLOCK option from scripts", blocking.name))
                }
                data @ (Command::Key(_) | Command::Multi(_) | Command::Keyspace(_) | Command::Blocking(_)) => {
                    super::transaction::run_data_command(self.shards, data, self.random_pick)
                }
                _ => Frame::static_error("ERR This Redis command is not allowed from script"),
            },
        };
        if write && !reply.is_error() {
            self.watch.wrote.store(true, Ordering::SeqCst);
        }
        if let Some(words) = monitored {
            state.monitors.feed(Some(spec), &words, super::monitor::Source::Lua, state.pubsub.mailbox_bytes_max());
        }
        // Counted as run (its time is the script's); its error reaches INFO errorstats
        // only if the script returns it.
        let stats = &state.command_stats;
        if let Some(index) = index {
            stats.add_calls(0, index, 1);
            if reply.is_error() {
                stats.add_outcome(0, index, super::command_stats::Outcome::Ran { failed: true });
            }
        }
        reply
    }
}
