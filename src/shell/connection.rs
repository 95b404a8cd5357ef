//! One client connection: read, parse a pipeline, run it, write the replies in order.
//!
//! A connection lives on the thread of its *home* shard. Single-key commands for the
//! home shard run right there, with no channel hop; commands for other shards are
//! batched per shard and sent once per pipeline. Anything that is not a single-key
//! command (connection state, multi-key, whole keyspace) is a barrier: the batches
//! queued before it are sent and answered first, so replies keep request order and a
//! client always observes its own writes.

use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use bytes::{Bytes, BytesMut};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use super::ServerState;
use super::clients::ClientInfo;
use super::command_stats::CallTally;
use super::memory;
use super::pubsub::Inbox;
use super::shards::SharedShard;
use super::shards::{ShardAccess, Shards};
use super::transaction::TransactionState;
use crate::command::errors;
use crate::command::{Command, ReplyMode, parse_command_at, table};
use crate::protocol::{Frame, ParseLimits, Protocol, ProtocolError, RequestParser};
use crate::shard::ShardOp;

/// Commands parsed from the read buffer before they are run and answered.
mod client;
mod durability;
mod execute;
mod modes;
mod observe;
mod output;
mod prefetch;
mod remote;
mod thread_count;

use thread_count::ConnectionsHere;

use modes::{allowed_while_subscribed, messages_waiting};

const PIPELINE_COMMANDS_MAX: usize = 1024;
/// The most room for commands a connection keeps between pipelines (1.5 KiB): a
/// bigger one, grown by a long pipeline, is freed after it.
const PIPELINE_KEPT_CAPACITY: usize = 64;
/// Read buffer growth step.
const READ_CHUNK_BYTES: usize = 16 * 1024;
/// Largest read room: a read that fills its room doubles the next one up to this, so
/// a long pipeline of big commands (vector HSETs of 1.5 KB) arrives in reads of a
/// hundred commands, not ten, and its shards' shares overlap (see `REMOTE_WAIT_MAX`).
const READ_CHUNK_BYTES_MAX: usize = 256 * 1024;
/// Replies buffered before they are written out mid-pipeline.
const WRITE_BUFFER_BYTES_MAX: usize = 1024 * 1024;
/// Replies up to this size wait for the end of the event loop's turn (see `run`).
const HELD_REPLY_BYTES_MAX: usize = 8 * 1024;
pub async fn serve(
    stream: std::net::TcpStream,
    peer: SocketAddr,
    handover: Option<Box<super::loading::Handover>>,
    home: usize,
    shard: SharedShard,
    state: Arc<ServerState>,
) {
    let fd = stream.as_raw_fd() as i64;
    let local = stream.local_addr().unwrap_or(peer);
    if stream.set_nonblocking(true).is_err() {
        return;
    }
    let Ok(mut stream) = TcpStream::from_std(stream) else { return };
    let _ = stream.set_nodelay(true);
    if state.connected.fetch_add(1, Ordering::Relaxed) >= state.runtime.maxclients() {
        state.connected.fetch_sub(1, Ordering::Relaxed);
        state.stats.connections_rejected.fetch_add(1, Ordering::Relaxed);
        let _ = stream.write_all(b"-ERR max number of clients reached\r\n").await;
        return;
    }
    let info = state.clients.register(peer, local, fd);
    let (read_buf, parser, held, write_buf) = match handover {
        Some(h) => (h.read_buf, h.parser, h.held, h.unsent),
        None => (BytesMut::with_capacity(READ_CHUNK_BYTES), RequestParser::new(), None, BytesMut::with_capacity(READ_CHUNK_BYTES)),
    };
    let mut connection = Connection {
        stream,
        read_buf,
        write_buf,
        parser,
        held,
        pipeline: Vec::new(),
        pipeline_indexes: Vec::new(),
        names: table::NameMemo::default(),
        protocol: Protocol::Resp2,
        authenticated: state.runtime.requirepass().is_none(),
        info: info.clone(),
        access: ShardAccess::new(home, shard, state.clone()),
        read_chunk: READ_CHUNK_BYTES,
        remote: remote::RemoteQueue::default(),
        replies: Vec::new(),
        encoded: 0,
        closing: false,
        random_state: info.id.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1,
        now_ms: 0,
        sync_durability: state.config.durability == "sync" && state.config.persistence_enabled(),
        read_closed: false,
        transaction: TransactionState::default(),
        exec_wrote: false,
        inbox: None,
        subscriptions: 0,
        reply_mode: ReplyMode::On,
        skip: Skip::None,
        silenced: std::collections::VecDeque::new(),
        arrived_ns: super::arrival::now_ns(),
        tally: CallTally::default(),
        clock_read: 0,
        clock_excluded: 0,
        monitoring: false,
    };
    let _here = ConnectionsHere::count_one();
    if let Err(e) = connection.run().await {
        tracing::debug!(client = info.id, "connection closed: {e}");
    }
    state.pubsub.leave(info.id);
    state.monitors.remove(info.id);
    state.clients.unregister(info.id);
    state.connected.fetch_sub(1, Ordering::Relaxed);
}

/// A container command's `name|subcommand` (lower case), as INFO commandstats and
/// CLIENT LIST name it; `None` for any other command.
fn subcommand_row(spec: Option<&table::CommandSpec>, args: &[Bytes]) -> Option<String> {
    spec.filter(|s| s.is_container() && args.len() > 1).map(|s| {
        let mut name = format!("{}|{}", s.name, String::from_utf8_lossy(&args[1]));
        name.make_ascii_lowercase();
        name
    })
}

struct Connection {
    stream: TcpStream,
    read_buf: BytesMut,
    write_buf: BytesMut,
    parser: RequestParser,
    /// A command read while the node was loading, to run before any other.
    held: Option<Vec<Bytes>>,
    /// The commands of the next pipeline, gathered here: kept empty between pipelines
    /// (up to [`PIPELINE_KEPT_CAPACITY`]) so that its buffer is not grown again for
    /// every pipeline (three reallocations for sixteen commands).
    pipeline: Vec<Vec<Bytes>>,
    /// The command-table positions of the pipeline being run (kept as `pipeline` is).
    pipeline_indexes: Vec<Option<usize>>,
    /// The last command name looked up, kept across pipelines (at P=1 each request is one).
    names: table::NameMemo,
    protocol: Protocol,
    authenticated: bool,
    info: Arc<ClientInfo>,
    access: ShardAccess,
    /// Room made before the next read: grows while reads fill it (to
    /// `READ_CHUNK_BYTES_MAX`), back to `READ_CHUNK_BYTES` once one does not.
    read_chunk: usize,
    /// Commands for other shards: queued, sent, and their buffers (`remote`).
    remote: remote::RemoteQueue,
    /// Replies of the pipeline being run, in request order; `None` while in flight.
    replies: Vec<Option<Frame>>,
    /// Replies already encoded into `write_buf`.
    encoded: usize,
    closing: bool,
    random_state: u64,
    /// Wall-clock time read once per pipeline.
    now_ms: u64,
    /// `--durability sync`: reply to writes only once they are stored.
    sync_durability: bool,
    /// The client half-closed: nothing more will be read.
    read_closed: bool,
    /// MULTI's queue and WATCH's keys.
    transaction: TransactionState,
    /// An EXEC in this pipeline ran a write (`--durability sync` waits for it).
    exec_wrote: bool,
    /// Pub/Sub messages for this client, once it subscribed to something.
    inbox: Option<Inbox>,
    /// Subscriptions held (RESP2 allows only the Pub/Sub commands while any are).
    subscriptions: usize,
    /// CLIENT REPLY: whether replies are sent (Pub/Sub pushes always are, as Redis).
    reply_mode: ReplyMode,
    /// CLIENT REPLY SKIP's progress.
    skip: Skip,
    /// Reply slots not to send (CLIENT REPLY OFF/SKIP), ascending.
    silenced: std::collections::VecDeque<usize>,
    /// When the last bytes read arrived (the kernel's stamp): a blocking pop queues
    /// behind the clients whose commands arrived before it.
    arrived_ns: u64,
    /// This pipeline's run of one command, not yet added to INFO commandstats.
    tally: CallTally,
    /// INFO commandstats' clock when the pipeline's current run of one command began
    /// (read again only where the command changes: see `close_time_run`).
    clock_read: u64,
    /// Ticks of the current run that are no command's: waits while blocked, socket writes.
    clock_excluded: u64,
    /// MONITOR: this client is sent every command the node runs (through `inbox`).
    monitoring: bool,
}

/// CLIENT REPLY SKIP silences itself and the command after it.
#[derive(Copy, Clone, PartialEq, Eq)]
enum Skip {
    None,
    /// The SKIP command itself is being answered.
    Armed,
    /// The next command's reply goes.
    Next,
}

impl Connection {
    fn state(&self) -> &ServerState {
        &self.access.state
    }

    async fn run(&mut self) -> std::io::Result<()> {
        // Replies written while the node loaded that the client had not taken yet.
        self.write_buffered().await?;
        loop {
            let mut protocol_error = None;
            let mut commands = std::mem::take(&mut self.pipeline);
            debug_assert!(commands.is_empty());
            commands.extend(self.held.take());
            if self.info.killed.load(Ordering::Relaxed) {
                return Ok(());
            }
            let limits = ParseLimits {
                bulk_bytes_max: self.state().runtime.proto_max_bulk_len(),
                query_bytes_max: self.state().runtime.client_query_buffer_limit(),
                unauthenticated: !self.authenticated,
            };
            // Before AUTH, one command at a time: an AUTH changes the limits that apply
            // to the commands after it.
            let batch_max = if limits.unauthenticated { 1 } else { PIPELINE_COMMANDS_MAX };
            let query_bytes = self.read_buf.len();
            // An empty buffer holds no command (the parser would say so, ~140
            // instructions later: at P=1 every read ends that way).
            while commands.len() < batch_max && !self.read_buf.is_empty() {
                match self.parser.next_command(&mut self.read_buf, &limits) {
                    Ok(Some(args)) => commands.push(args),
                    Ok(None) => break,
                    Err(e) => {
                        protocol_error = Some(e);
                        break;
                    }
                }
            }
            if commands.is_empty() && protocol_error.is_none() {
                self.pipeline = commands;
                if self.read_closed {
                    // The client closed its side and everything it sent is answered.
                    return Ok(());
                }
                // A buffer given back (`give_back_buffers`) stays away while the client
                // is idle: the read makes its room once bytes are there.
                if self.read_buf.capacity() > 0 && self.read_buf.capacity() - self.read_buf.len() < self.read_chunk / 4 {
                    self.read_buf.reserve(self.read_chunk);
                }
                let room = self.read_buf.capacity() - self.read_buf.len();
                self.info.buffers.waiting_to_read(self.read_buf.len(), self.read_buf.capacity(), self.parser.partial_args_bytes());
                let read = tokio::select! {
                    biased;
                    _ = self.info.attention() => {
                        if self.info.killed.load(Ordering::Relaxed) {
                            return Ok(());
                        }
                        self.give_back_buffers();
                        continue;
                    }
                    _ = messages_waiting(&self.inbox) => {
                        self.deliver().await?;
                        continue;
                    }
                    read = super::arrival::read(&self.stream, &mut self.read_buf, self.read_chunk) => read?,
                };
                let (read, arrived_ns) = read;
                self.arrived_ns = arrived_ns;
                if read == 0 {
                    return Ok(());
                }
                self.read_chunk = if read == room { (self.read_chunk * 2).min(READ_CHUNK_BYTES_MAX) } else { READ_CHUNK_BYTES };
                self.state().stats.traffic(self.access.home).read(read);
                continue;
            }
            self.info.buffers.pipeline_started(query_bytes, self.read_buf.capacity());
            let wrote = self.run_pipeline(&mut commands).await?;
            self.info.buffers.pipeline_ran(self.transaction.queued_summary());
            if commands.capacity() <= PIPELINE_KEPT_CAPACITY {
                self.pipeline = commands;
            }
            let wrote = wrote || std::mem::take(&mut self.exec_wrote);
            if wrote && self.sync_durability {
                self.wait_until_stored().await;
            }
            if let Some(ProtocolError(message)) = protocol_error {
                // As Redis: answer the error, then close the connection.
                tracing::debug!(client = self.info.id, "protocol error: {message}");
                self.push_reply(Frame::error(format!("ERR Protocol error: {message}")));
                self.closing = true;
            }
            self.encode_ready();
            // As Redis writes every client's replies at the end of its event loop's
            // turn (beforeSleep), let the other connections that are ready read and run
            // their commands first: replies then leave back to back, and a client
            // reading many connections is woken once for them rather than once each
            // (each wake-up is a cross-core interrupt that the sending core pays for).
            // Large replies go at once: held back, they would leave the cache before
            // they leave the socket (LRANGE_100 at P=16 lost a quarter when they waited).
            // With no other connection on this thread there is nothing to send ours
            // with: the yield would only cost a turn of the runtime (~900 instructions
            // a request at pipeline depth 1).
            if !self.write_buf.is_empty() && self.write_buf.len() <= HELD_REPLY_BYTES_MAX && ConnectionsHere::others() {
                tokio::task::yield_now().await;
            }
            self.write_buffered().await?;
            self.info.buffers.pipeline_ended(self.write_buf.capacity());
            if self.closing || self.info.killed.load(Ordering::Relaxed) {
                return Ok(());
            }
        }
    }

    /// Give back the buffers the connection holds empty, as the buffer sweep asked
    /// (`ClientRegistry::release_idle_buffers`): the query buffer unless part of a
    /// request waits in it, the reply buffer unless replies wait in it, and the
    /// pipeline's kept vectors. Each comes back at its first use, from the allocator.
    fn give_back_buffers(&mut self) {
        self.info.release_requested.store(false, Ordering::SeqCst);
        if self.read_buf.is_empty() && !self.parser.is_mid_command() {
            self.read_buf = BytesMut::new();
            self.read_chunk = READ_CHUNK_BYTES;
        }
        if self.write_buf.is_empty() {
            self.write_buf = BytesMut::new();
        }
        self.pipeline = Vec::new();
        self.pipeline_indexes = Vec::new();
        self.replies = Vec::new();
        self.remote.give_back_spares();
        self.info.buffers.pipeline_ended(self.write_buf.capacity());
    }

    /// Run a pipeline's commands in order; whether any of them is a write (with
    /// `--durability sync`, the replies then wait for the store). Each name is looked up
    /// once, here.
    async fn run_pipeline(&mut self, commands: &mut Vec<Vec<Bytes>>) -> std::io::Result<bool> {
        self.state().stats.traffic(self.access.home).commands(commands.len());
        self.now_ms = super::now_ms();
        self.clock_read = self.state().command_stats.now();
        self.clock_excluded = 0;
        // The positions go in a buffer the connection keeps, not a local: a local held
        // across the awaits below lives in the connection's future, and an inline array
        // there was copied whole (1 KiB) into that future's memory every pipeline, a
        // first-level cache miss per 64 bytes of it (the future is cold after fifty
        // other connections).
        let mut indexes = std::mem::take(&mut self.pipeline_indexes);
        debug_assert!(indexes.is_empty());
        // A client mostly repeats one command: a name equal (bytewise) to the one before,
        // in this pipeline or the last, takes its position without a lookup.
        let names = &mut self.names;
        indexes.extend(commands.iter().map(|args| names.index_of(&args[0])));
        let mut last_command = None;
        let mut wrote = false;
        // The command of the run whose time is being counted.
        let mut timed_run = None;
        let mut rest = commands.drain(..);
        for at in 0.. {
            if at % prefetch::WINDOW == 0 && rest.len() > 1 {
                let (mut reads, count) = prefetch::window_reads(rest.as_slice(), &indexes[at..]);
                self.access.prefetch_home(&mut reads[..count]);
            }
            let Some(args) = rest.next() else { break };
            if self.closing {
                break;
            }
            let index = indexes[at];
            if at > 0 && index != indexes[at - 1] {
                self.close_time_run(indexes[at - 1]);
            }
            wrote |= index.is_some_and(|i| table::COMMANDS[i].is_write());
            last_command = index.or(last_command);
            self.dispatch(index, args).await;
            timed_run = Some(index);
            if self.write_buf.len() >= WRITE_BUFFER_BYTES_MAX {
                // Writing replies is no command's time.
                let paused = self.state().command_stats.now();
                self.write_buffered().await?;
                self.clock_excluded += self.state().command_stats.now().saturating_sub(paused);
            }
        }
        if let Some(index) = timed_run {
            self.close_time_run(index);
        }
        if indexes.capacity() <= PIPELINE_KEPT_CAPACITY {
            indexes.clear();
            self.pipeline_indexes = indexes;
        }
        self.flush_pending().await;
        self.tally.flush(&self.access.state.command_stats, self.access.home);
        if let Some(index) = last_command {
            self.info.touch(index, self.now_ms);
        }
        Ok(wrote)
    }

    async fn dispatch(&mut self, index: Option<usize>, args: Vec<Bytes>) {
        // As Redis: clients a write woke are served before any other command runs.
        if self.state().waiters.must_settle(self.arrived_ns) {
            let paused = self.state().command_stats.now();
            self.state().waiters.settled().await;
            self.clock_excluded += self.state().command_stats.now().saturating_sub(paused);
        }
        let slot = self.replies.len();
        self.replies.push(None);
        let spec = index.map(|i| &table::COMMANDS[i]);
        if self.state().script_watch.busy() && !super::script::allowed_while_busy(index, &args) {
            self.answer_busy(slot, index);
            return;
        }
        let out_of_memory = self.state().memory.over(self.state().runtime.maxmemory());
        if out_of_memory && spec.is_some_and(|s| s.name == "exec") && self.transaction.queued_denyoom() {
            // As Redis: an EXEC holding a write is refused whole past maxmemory.
            self.transaction.discard();
            let refusal = Frame::error(format!("EXECABORT Transaction discarded because of: {}", memory::OOM));
            self.count_rejected(index, &refusal);
            self.replies[slot] = Some(refusal);
            self.encode_ready();
            return;
        }
        if self.transaction.in_multi()
            && let Some(name) = subcommand_row(spec, &args)
        {
            // Queued or run, Redis names a container's subcommand (`client|list`) as
            // the client's last command.
            self.info.set_subcommand(&name);
        }
        let args = match self.transaction.offer(index, args, out_of_memory) {
            Ok(args) => args,
            Err(answer) => {
                // QUEUED, or refused at queueing time (the transaction then aborts).
                if answer.is_error() {
                    self.count_rejected(index, &answer);
                }
                self.replies[slot] = Some(answer);
                self.encode_ready();
                return;
            }
        };
        // A container command's subcommand, for the subscribed-state error's name.
        let subcommand = (self.subscriptions > 0).then(|| args.get(1).cloned()).flatten();
        // What the command's counters need before it is parsed: whether its arity was
        // wrong (refused, not run, as Redis counts it) and a container's subcommand row.
        let arity_ok = spec.is_some_and(|s| s.arity_ok(args.len()));
        let mut counted_as = subcommand_row(spec, &args);
        if let Some(name) = &counted_as {
            // Before it runs: CLIENT LIST names itself `client|list`.
            self.info.set_subcommand(name);
        }
        // For MONITOR, shown once it ran (reference-counted copies, and only while a
        // client monitors).
        let mut monitored = self.state().monitors.is_active().then(|| args.clone());
        // A subcommand's time is read around it (containers are never on the hot path).
        let subcommand_started = counted_as.as_ref().map(|_| self.state().command_stats.now());
        let mut rejected = false;
        let reply = match parse_command_at(index, args) {
            Err(error) => {
                rejected = !arity_ok;
                // A container's unknown subcommand is counted under the error alone, as
                // Redis counts it.
                if counted_as.take().is_some() {
                    if let Frame::Error(message) = &error {
                        self.state().command_stats.add_error_reply(message);
                    }
                    self.replies[slot] = Some(error);
                    self.silence_if_asked(slot);
                    self.encode_ready();
                    return;
                }
                Some(error)
            }
            Ok(command)
                if !self.authenticated
                    && !matches!(command, Command::Auth { .. } | Command::Hello { .. } | Command::Quit | Command::Reset) =>
            {
                rejected = true;
                Some(errors::error(errors::NOAUTH))
            }
            Ok(command) if self.subscriptions > 0 && self.protocol == Protocol::Resp2 && !allowed_while_subscribed(&command) => {
                rejected = true;
                let name = match (spec, subcommand) {
                    (Some(spec), Some(sub)) if spec.is_container() => {
                        format!("{}|{}", spec.name, String::from_utf8_lossy(&sub).to_ascii_lowercase())
                    }
                    (Some(spec), _) => spec.name.to_owned(),
                    (None, _) => String::new(),
                };
                Some(Frame::error(format!(
                    "ERR Can't execute '{name}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
                )))
            }
            // Past maxmemory, commands that may grow the data are refused (Redis's
            // `denyoom` flag); reads and deletes go on. Writes merged from peers never
            // pass here.
            Ok(_) if out_of_memory && spec.is_some_and(|s| s.is_denyoom()) => {
                rejected = true;
                Some(Frame::error(memory::OOM.to_string()))
            }
            Ok(Command::Key(command)) => {
                let shard = self.access.shard_of(command.key());
                if shard == self.access.home {
                    if self.remote.waited_too_long() {
                        self.send_pending().await;
                    }
                    // The coordinator may hold the shard (a script or a multi-shard
                    // command): this command runs after it, as in Redis, or is
                    // answered BUSY once a script runs past lua-time-limit.
                    if super::park_gate::is_parked() && !super::script::home_shard_free(&self.access.state.script_watch).await {
                        self.answer_busy(slot, index);
                        return;
                    }
                    let op = ShardOp::Key(command);
                    Some(super::shards::apply_local_one(&self.access.shard, self.state(), op, self.now_ms).into_frame())
                } else {
                    // Its call is counted now, a failure when its reply comes back.
                    self.queue(shard, ShardOp::Key(command), slot, index).await;
                    None
                }
            }
            Ok(Command::Shutdown { abort: false }) => {
                // Everything before it is answered; SHUTDOWN itself is not: as Redis, the
                // client sees its connection close when the process exits, after the
                // last segment is stored (the same path as SIGTERM).
                self.flush_pending().await;
                self.encode_ready();
                let _ = self.write_buffered().await;
                tracing::warn!(client = self.info.id, "SHUTDOWN asked by a client: stopping as on SIGTERM");
                self.state().shutdown.notify_one();
                // This task ends with its shard thread, after the final store.
                std::future::pending::<()>().await;
                None
            }
            Ok(command) => {
                // A barrier: everything before it is answered first.
                self.flush_pending().await;
                self.encode_ready();
                if let Some(index) = index {
                    self.info.touch(index, self.now_ms);
                }
                // INFO in this pipeline sees the commands before it.
                self.tally.flush(&self.access.state.command_stats, self.access.home);
                // As Redis: the time a client waits blocked is not the command's.
                let blocking = matches!(command, Command::Blocking(_));
                // As Redis: a script is shown before the commands it runs, a blocking
                // command when it starts waiting.
                if matches!(command, Command::Blocking(_) | Command::Script(crate::command::script::ScriptCommand::Run(_)))
                    && let Some(args) = monitored.take()
                {
                    self.feed_monitors(index, &args);
                }
                let paused = if blocking { Some(self.state().command_stats.now()) } else { None };
                let reply = self.execute(command).await;
                if let Some(paused) = paused {
                    self.clock_excluded += self.state().command_stats.now().saturating_sub(paused);
                }
                Some(reply)
            }
        };
        let ticks = subcommand_started.map_or(0, |started| self.state().command_stats.now().saturating_sub(started));

        self.count_call(index, reply.as_ref(), rejected, counted_as, ticks);
        if let Some(args) = monitored
            && !rejected
            && index.is_some()
        {
            self.feed_monitors(index, &args);
        }
        if let Some(frame) = reply {
            self.replies[slot] = Some(frame);
        }
        self.silence_if_asked(slot);
        self.encode_ready();
    }

    pub(super) fn next_random(&mut self) -> u64 {
        // xorshift64*: RANDOMKEY's shard choice needs no more than this.
        self.random_state ^= self.random_state >> 12;
        self.random_state ^= self.random_state << 25;
        self.random_state ^= self.random_state >> 27;
        self.random_state.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}
