//! MULTI/EXEC/DISCARD/WATCH/UNWATCH: a connection's queued commands and watched keys,
//! and running a transaction so that no other command interleaves with it on this node.
//!
//! How EXEC is atomic here:
//! - Every key of every queued command (and every watched key) on one shard, and only
//!   single-key commands: the whole transaction goes to that shard as one operation
//!   (`ShardOp::Transaction`), which checks the watched keys and runs the commands in
//!   one step of the shard's state machine.
//! - Otherwise the coordinator parks the shards involved (every shard when a multi-key
//!   or whole-keyspace command is queued), in shard order, and runs the check and the
//!   commands on them with nothing else interleaved (`coordinator`).
//!
//! Connection commands queued in a transaction (PING, ECHO, CLIENT, CONFIG...) touch no
//! data; the connection answers them in their places after the data commands ran.
//!
//! Never touches a socket; the connection owns the state and calls in here.

use std::sync::Arc;

use bytes::Bytes;
use futures_util::FutureExt;

use super::ServerState;
use super::fanout;
use super::shards::{ParkedShards, Shards};
use crate::command::blocking::empty_in_transaction;
use crate::command::script::ScriptCommand;
use crate::command::{Command, errors, parse_command_at, table};
use crate::protocol::Frame;
use crate::shard::{ShardOp, ShardReply};

/// Commands a transaction queues at most (Redis has no limit; a client that never
/// sends EXEC must not grow the server without bound).
pub const QUEUED_COMMANDS_MAX: usize = 1 << 20;
/// Keys a connection watches at most.
pub const WATCHED_KEYS_MAX: usize = 1 << 20;

/// A queued command as sent: its table index and its arguments.
pub type Queued = (Option<usize>, Vec<Bytes>);
/// A watched key and its token at WATCH time.
pub type Watched = (Bytes, u64);

const EXECABORT: &str = "EXECABORT Transaction discarded because of previous errors.";

/// One connection's transaction state.
#[derive(Default)]
pub struct TransactionState {
    /// `Some` between MULTI and EXEC/DISCARD: the queued commands as sent (parsed at
    /// EXEC, as Redis reports syntax errors per command in EXEC's reply).
    queued: Option<Vec<Queued>>,
    /// What the queued commands' arguments hold (CLIENT LIST's `multi-mem`).
    queued_bytes: usize,
    /// A command was refused while queueing: EXEC answers EXECABORT.
    dirty: bool,
    /// Watched keys and the token each had when watched.
    watched: Vec<Watched>,
}

impl TransactionState {
    pub fn in_multi(&self) -> bool {
        self.queued.is_some()
    }

    /// Between MULTI and EXEC every command is queued except the ones that steer the
    /// transaction or the connection (as Redis: EXEC, DISCARD, MULTI, WATCH, QUIT,
    /// RESET). `Ok`: run the command now as usual; `Err`: its reply (QUEUED, or an error
    /// for an unknown command or a wrong arity, which also makes EXEC abort).
    ///
    /// Past maxmemory (`out_of_memory`) nothing more is queued, as Redis: a queue is
    /// memory too.
    pub fn offer(&mut self, index: Option<usize>, args: Vec<Bytes>, out_of_memory: bool) -> Result<Vec<Bytes>, Frame> {
        let spec = index.map(|i| &table::COMMANDS[i]);
        if let Some(spec) = spec
            && spec.id == table::CmdId::Exec
            && !spec.arity_ok(args.len())
        {
            // Redis discards the transaction for a refused EXEC, in MULTI or not, and
            // with it every watched key (`execCommandAbort`).
            *self = TransactionState::default();
            return Err(Frame::error(format!(
                "EXECABORT Transaction discarded because of: wrong number of arguments for '{}' command",
                spec.name
            )));
        }
        let Some(queued) = self.queued.as_mut() else { return Ok(args) };
        let Some(spec) = spec else {
            self.dirty = true;
            return Err(errors::unknown_command(&args));
        };
        if out_of_memory && !matches!(spec.name, "exec" | "discard" | "quit" | "reset") {
            self.dirty = true;
            return Err(Frame::static_error(super::memory::OOM));
        }
        // A wrong arity is refused before anything else, the transaction's own
        // commands included (a `MULTI x` or `DISCARD x` makes EXEC abort, as in Redis).
        if !spec.arity_ok(args.len()) {
            self.dirty = true;
            return Err(errors::wrong_arity(spec.name));
        }
        // So is a container's unknown subcommand, or a subcommand's wrong arity.
        if let Some(refusal) = table::subcommand_refusal(spec, &args) {
            self.dirty = true;
            return Err(refusal);
        }
        if matches!(spec.name, "exec" | "discard" | "multi" | "watch" | "quit" | "reset") {
            return Ok(args);
        }
        if spec.is_no_multi() {
            self.dirty = true;
            return Err(Frame::static_error("ERR Command not allowed inside a transaction"));
        }
        if queued.len() >= QUEUED_COMMANDS_MAX {
            self.dirty = true;
            return Err(Frame::static_error("ERR too many commands queued in this transaction"));
        }
        self.queued_bytes += args.iter().map(|arg| arg.len() + std::mem::size_of::<Bytes>()).sum::<usize>();
        queued.push((index, args));
        Err(Frame::simple("QUEUED"))
    }

    /// CLIENT LIST's `multi` and `multi-mem`: the commands queued (-1 outside MULTI) and
    /// what their arguments hold.
    pub fn queued_summary(&self) -> (i64, usize) {
        match &self.queued {
            Some(queued) => (queued.len() as i64, self.queued_bytes),
            None => (-1, 0),
        }
    }

    /// Whether a queued command may grow the data (EXEC is refused past maxmemory then).
    pub fn queued_denyoom(&self) -> bool {
        self.queued.as_ref().is_some_and(|q| q.iter().any(|(index, _)| index.is_some_and(|i| table::COMMANDS[i].is_denyoom())))
    }

    /// A command was refused before it could be queued (BUSY): EXEC will abort, as
    /// Redis's `flagTransaction`. Nothing happens outside MULTI.
    pub fn flag_dirty(&mut self) {
        if self.in_multi() {
            self.dirty = true;
        }
    }

    pub fn multi(&mut self) -> Frame {
        if self.in_multi() {
            return Frame::static_error("ERR MULTI calls can not be nested");
        }
        self.queued = Some(Vec::new());
        self.queued_bytes = 0;
        self.dirty = false;
        Frame::ok()
    }

    pub fn discard(&mut self) -> Frame {
        if self.queued.take().is_none() {
            return Frame::static_error("ERR DISCARD without MULTI");
        }
        self.dirty = false;
        self.watched.clear();
        Frame::ok()
    }

    /// Forget everything (RESET, UNWATCH's part is `unwatch`).
    pub fn reset(&mut self) {
        *self = TransactionState::default();
    }

    pub fn unwatch(&mut self) {
        self.watched.clear();
    }

    pub fn watched_len(&self) -> usize {
        self.watched.len()
    }

    /// Remember a key's token at WATCH time (watching it again keeps the first token,
    /// as Redis keeps the first WATCH).
    pub fn watch(&mut self, key: Bytes, token: u64) {
        if self.watched.len() < WATCHED_KEYS_MAX && !self.watched.iter().any(|(k, _)| *k == key) {
            self.watched.push((key, token));
        }
    }

    /// EXEC: the queued commands and watched keys, or the error to answer. A transaction
    /// is ended either way, and its watched keys unwatched; an EXEC without MULTI
    /// changes nothing (its keys stay watched, as in Redis).
    pub fn take_for_exec(&mut self) -> Result<(Vec<Queued>, Vec<Watched>), Frame> {
        let Some(queued) = self.queued.take() else { return Err(Frame::static_error("ERR EXEC without MULTI")) };
        let dirty = std::mem::take(&mut self.dirty);
        let watched = std::mem::take(&mut self.watched);
        if dirty { Err(Frame::static_error(EXECABORT)) } else { Ok((queued, watched)) }
    }
}

/// WATCH: the current token of each key.
pub async fn watch_tokens(access: &impl Shards, keys: Vec<Bytes>) -> Result<Vec<(Bytes, u64)>, Frame> {
    let total = keys.len();
    let groups: Vec<_> = access.group(keys, |k| k).into_iter().collect();
    let ops = groups.iter().map(|(shard, (keys, _))| (*shard, ShardOp::WatchTokens(keys.clone()))).collect();
    let replies = access.run_groups(ops).await;
    let mut watched = vec![(Bytes::new(), 0); total];
    for (reply, (_, (keys, positions))) in replies.into_iter().zip(groups) {
        let ShardReply::Tokens(tokens) = reply else { return Err(reply.into_frame()) };
        for ((key, token), position) in keys.into_iter().zip(tokens).zip(positions) {
            watched[position] = (key, token);
        }
    }
    Ok(watched)
}

/// One queued command, parsed at EXEC.
pub enum Step {
    /// Runs on the shards.
    Data(Command),
    /// Touches no data: the connection answers it in its place afterwards.
    Connection(Command),
    /// Refused by the parser: its reply in EXEC's array.
    Failed(Frame),
}

pub fn parse_steps(queued: Vec<Queued>) -> Vec<Step> {
    queued
        .into_iter()
        .map(|(index, args)| match parse_command_at(index, args) {
            Err(error) => Step::Failed(error),
            Ok(
                command @ (Command::Key(_)
                | Command::Multi(_)
                | Command::Keyspace(_)
                | Command::Blocking(_)
                | Command::Script(ScriptCommand::Run(_))),
            ) => Step::Data(command),
            Ok(command) => Step::Connection(command),
        })
        .collect()
}

/// A place in EXEC's reply: answered, or a connection command for the connection to
/// answer there.
pub enum Slot {
    Reply(Frame),
    Connection(Command),
}

/// Run a transaction's data steps with nothing interleaved on this node. `None`: a
/// watched key had changed, and nothing ran.
pub async fn run(
    access: &impl Shards,
    state: Arc<ServerState>,
    steps: Vec<Step>,
    watched: Vec<(Bytes, u64)>,
    random_pick: u64,
) -> Option<Vec<Slot>> {
    let mut slots: Vec<Option<Slot>> = Vec::with_capacity(steps.len());
    let mut data: Vec<(usize, Command)> = Vec::new();
    for (i, step) in steps.into_iter().enumerate() {
        match step {
            Step::Data(command) => {
                data.push((i, command));
                slots.push(None);
            }
            Step::Connection(command) => slots.push(Some(Slot::Connection(command))),
            Step::Failed(error) => slots.push(Some(Slot::Reply(error))),
        }
    }
    // The shards involved; `None`: every shard (a multi-key or keyspace command).
    let mut shards: Option<Vec<usize>> = Some(watched.iter().map(|(k, _)| access.shard_of(k)).collect());
    for (_, command) in &data {
        match (command, shards.as_mut()) {
            (Command::Key(cmd), Some(shards)) => shards.push(access.shard_of(cmd.key())),
            (Command::Key(_), None) => {}
            _ => shards = None,
        }
    }
    let shards = shards.map(|mut s| {
        s.sort_unstable();
        s.dedup();
        s
    });
    let positions: Vec<usize> = data.iter().map(|(i, _)| *i).collect();
    let replies: Vec<Frame> = match shards.as_deref() {
        Some([]) => Vec::new(),
        Some(&[shard]) => {
            // One shard, single-key commands only: one step of that shard.
            let ops =
                data.into_iter().filter_map(|(_, c)| if let Command::Key(cmd) = c { Some(ShardOp::Key(cmd)) } else { None }).collect();
            match access.run_one(shard, ShardOp::Transaction { watched, ops }).await {
                ShardReply::Transaction(None) => return None,
                ShardReply::Transaction(Some(done)) => done.into_iter().map(ShardReply::into_frame).collect(),
                other => vec![other.into_frame(); positions.len()],
            }
        }
        _ => {
            let involved = shards.unwrap_or_else(|| (0..access.shard_count()).collect());
            let commands: Vec<Command> = data.into_iter().map(|(_, c)| c).collect();
            let frame = access
                .run_atomic(involved, move |parked| {
                    let shards = ParkedShards::new(parked, state);
                    run_parked(&shards, commands, watched, random_pick)
                })
                .await;
            match frame {
                Frame::NullArray => return None,
                Frame::Array(done) => done,
                // The coordinator could not run it (shutting down).
                error => vec![error; positions.len()],
            }
        }
    };
    debug_assert_eq!(replies.len(), positions.len());
    for (i, reply) in positions.into_iter().zip(replies) {
        slots[i] = Some(Slot::Reply(reply));
    }
    Some(slots.into_iter().map(|s| s.unwrap_or_else(|| Slot::Reply(Frame::static_error("ERR internal: no reply")))).collect())
}

/// On the coordinator's thread, with the shards parked: check the watched keys, then
/// run each data command. Answers `NullArray` when a watched key had changed, else the
/// replies in order.
fn run_parked(shards: &ParkedShards<'_>, data: Vec<Command>, watched: Vec<(Bytes, u64)>, random_pick: u64) -> Frame {
    if !watched.is_empty() {
        let keys = watched.iter().map(|(k, _)| k.clone()).collect();
        match watch_tokens(shards, keys).now_or_never() {
            Some(Ok(now)) if now == watched => {}
            Some(Ok(_)) => return Frame::NullArray,
            Some(Err(error)) => return error,
            None => return Frame::static_error("ERR internal: a parked shard did not answer at once"),
        }
    }
    Frame::Array(data.into_iter().map(|command| run_data_command(shards, command, random_pick)).collect())
}

/// One data command (key, multi-key, keyspace or blocking) on parked shards, where it
/// finishes at once: a transaction's step or a script's `redis.call`. A blocking pop
/// does not block here (as Redis): it answers what it finds, or its timeout reply.
pub fn run_data_command(shards: &ParkedShards<'_>, command: Command, random_pick: u64) -> Frame {
    let reply = match command {
        Command::Key(cmd) => Some(shards.apply(shards.shard_of(cmd.key()), ShardOp::Key(cmd)).into_frame()),
        Command::Multi(cmd) => fanout::multi(shards, cmd).now_or_never(),
        Command::Keyspace(cmd) => fanout::keyspace(shards, cmd, random_pick).now_or_never(),
        Command::Blocking(cmd) => {
            super::blocking::try_once(shards, &cmd).now_or_never().map(|found| found.unwrap_or_else(|| empty_in_transaction(cmd.name)))
        }
        // A script in a transaction runs in its place, on the shards already parked.
        Command::Script(ScriptCommand::Run(run)) => Some(super::script::run_parked(shards, run, random_pick)),
        _ => Some(Frame::static_error("ERR internal: not a data command")),
    };
    reply.unwrap_or_else(|| Frame::static_error("ERR internal: a parked shard did not answer at once"))
}
