//! A connection's modes: MULTI's queue and EXEC, Pub/Sub subscriptions and message
//! delivery, CLIENT REPLY's silencing, and the BUSY answer while a script runs past
//! its time limit. Part of [`super::Connection`].

use super::{Connection, Skip};
use crate::shell::command_stats::Outcome;

use crate::command::blocking::{BlockingCommand, timed_out};
use crate::command::{Command, PubSubCommand, ReplyMode, TransactionCommand, table};
use crate::protocol::Frame;
use crate::shell::blocking;
use crate::shell::pubsub::Inbox;
use crate::shell::transaction::{self, Slot};

impl Connection {
    /// A script runs past lua-time-limit: answer `slot` BUSY, as Redis does for every
    /// command but SCRIPT KILL, SHUTDOWN and those steering a connection or a
    /// transaction. The command has not run. A refused command makes the transaction
    /// abort; a refused EXEC discards it (`EXECABORT ... because of: BUSY ...`).
    pub(super) fn answer_busy(&mut self, slot: usize, index: Option<usize>) {
        let exec = index.is_some_and(|i| table::COMMANDS[i].id == table::CmdId::Exec);
        let reply = if exec && self.transaction.in_multi() {
            self.transaction.discard();
            Frame::error(format!("EXECABORT Transaction discarded because of: {}", crate::shell::script::BUSY))
        } else {
            self.transaction.flag_dirty();
            Frame::static_error(crate::shell::script::BUSY)
        };
        self.count_rejected(index, &reply);
        self.replies[slot] = Some(reply);
        self.encode_ready();
    }

    /// BLPOP and the other blocking pops: try at once; if every key is empty, wait for a
    /// write to one of them (here or merged from a peer), the timeout, CLIENT KILL or the
    /// client closing, trying again at every wake-up. Pipelined commands that arrive
    /// meanwhile are read (up to the query buffer limit) and run after the reply.
    pub(super) async fn block(&mut self, mut command: BlockingCommand) -> Frame {
        let state = self.access.state.clone();
        blocking::resolve_last_ids(&self.access, &mut command).await;
        let deadline = (command.timeout_ms > 0).then(|| tokio::time::Instant::now() + std::time::Duration::from_millis(command.timeout_ms));
        // Registered before the first try: clients are served in the order they arrived,
        // and a write between a try and the wait wakes us.
        let registration = state.waiters.register(&command.keys, self.arrived_ns);
        let _blocked = BlockedFlag::set(&self.info);
        let mut first = true;
        loop {
            let owed = registration.take_wake();
            let tries = if owed {
                // A woken client lets every client that blocked before the wake-up, but
                // whose command was still unread, queue first; if one of those is now
                // first in line, the wake-up is theirs (`blocking`'s module comment).
                state.router.read_barrier(self.access.home, crate::shell::arrival::now_ns()).await;
                let ours = registration.is_first_in_line();
                if !ours {
                    state.waiters.wake(&command.keys);
                }
                ours
            } else {
                // Not woken: the first try, or a pipelined read came in. A pop queued
                // behind clients that blocked before it waits its turn: whatever is there
                // is theirs (the client first in line has its own try coming, or is
                // being served and passes the wake-up on).
                !command.takes() || (first && registration.is_first_in_line())
            };
            let mut found = if tries { blocking::try_once(&self.access, &command).await } else { None };
            // A blocked XREADGROUP whose stream went (deleted, replaced, flushed) is
            // answered so, as Redis answers it.
            if !first && found.as_ref().is_some_and(Frame::is_error) && blocking::stream_gone(&self.access, &command).await {
                found = Some(Frame::static_error("UNBLOCKED the stream key no longer exists"));
            }
            // A source key of another type is answered WRONGTYPE at once, but not while
            // blocked (as Redis: the client waits until it is a list again); a
            // destination of the wrong type is answered either way.
            if !first
                && found.as_ref().is_some_and(is_wrong_type)
                && command.name != "xreadgroup"
                && !blocking::wrong_type_is_the_destinations(&self.access, &command).await
            {
                found = None;
            }
            if first {
                blocking::bound_woken_stream_reads(&mut command);
            }
            first = false;
            if let Some(reply) = found {
                // A wake-up that came during this try is answered by it too.
                let late = registration.take_wake();
                drop(registration);
                // Serve the next client waiting on these keys, if more is there; only
                // then is this wake-up served (the next one is counted first).
                state.waiters.wake(&command.keys);
                state.waiters.served(owed);
                state.waiters.served(late);
                return reply;
            }
            state.waiters.served(owed);
            let query_limit = state.runtime.client_query_buffer_limit();
            let may_read = super::output::make_read_room(&mut self.read_buf, self.read_closed, query_limit);
            tokio::select! {
                biased;
                _ = self.info.kill_requested() => {
                    self.closing = true;
                    return timed_out(command.name);
                }
                _ = registration.waiter.notify.notified() => {}
                _ = self.info.unblock.notified() => {
                    return if self.info.unblock_error.swap(false, std::sync::atomic::Ordering::Relaxed) {
                        Frame::static_error("UNBLOCKED client unblocked via CLIENT UNBLOCK")
                    } else {
                        timed_out(command.name)
                    };
                }
                _ = sleep_until(deadline) => return timed_out(command.name),
                read = crate::shell::arrival::read(&self.stream, &mut self.read_buf, super::READ_CHUNK_BYTES), if may_read => match read {
                    // The client went away: nothing is popped for it.
                    Ok((0, _)) | Err(_) => {
                        self.read_closed = true;
                        self.closing = true;
                        return timed_out(command.name);
                    }
                    Ok(_) => {}
                },
            }
        }
    }

    pub(super) fn pubsub(&mut self, command: PubSubCommand) -> Frame {
        let broker = &self.access.state.pubsub;
        let reply = match command {
            PubSubCommand::Subscribe(kind, names) => {
                let (reply, inbox) = broker.subscribe(&self.info, kind, names);
                if let Some(inbox) = inbox {
                    // A monitoring client's lines now go to the mailbox it reads.
                    if self.monitoring {
                        self.access.state.monitors.remove(self.info.id);
                        self.access.state.monitors.add(inbox.mailbox());
                    }
                    self.inbox = Some(inbox);
                }
                self.subscriptions = broker.subscriptions(self.info.id);
                reply
            }
            PubSubCommand::Unsubscribe(kind, names) => {
                let reply = broker.unsubscribe(self.info.id, kind, names);
                self.subscriptions = broker.subscriptions(self.info.id);
                reply
            }
            PubSubCommand::Publish { shard, channel, message } => {
                super::super::pubsub::publish(&self.access.state, shard, channel, message)
            }
            PubSubCommand::Channels { shard, pattern } => {
                Frame::Array(broker.channels(shard, pattern.as_deref()).into_iter().map(Frame::Bulk).collect())
            }
            PubSubCommand::NumSub { shard, channels } => Frame::Array(
                channels
                    .into_iter()
                    .flat_map(|channel| {
                        let count = broker.subscribers(shard, &channel);
                        [Frame::Bulk(channel), Frame::Integer(count as i64)]
                    })
                    .collect(),
            ),
            PubSubCommand::NumPat => Frame::Integer(broker.pattern_count() as i64),
            PubSubCommand::Help => Frame::Array(
                [
                    "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                    "CHANNELS [<pattern>]",
                    "    Return the currently active channels matching a <pattern> (default: '*').",
                    "NUMPAT",
                    "    Return number of subscriptions to patterns.",
                    "NUMSUB [<channel> ...]",
                    "    Return the number of subscribers for the specified channels, excluding",
                    "    pattern subscriptions(default: no channels).",
                    "SHARDCHANNELS [<pattern>]",
                    "    Return the currently active shard level channels matching a <pattern> (default: '*').",
                    "SHARDNUMSUB [<shardchannel> ...]",
                    "    Return the number of subscribers for the specified shard level channel(s)",
                    "HELP",
                    "    Prints this help.",
                ]
                .iter()
                .map(|l| Frame::simple(l))
                .collect(),
            ),
        };
        // Only (un)subscribing changes what this client holds: PUBLISH, the hot path,
        // does not look it up again.
        reply
    }

    pub(super) async fn transaction(&mut self, command: TransactionCommand) -> Frame {
        match command {
            TransactionCommand::Multi => self.transaction.multi(),
            TransactionCommand::Discard => self.transaction.discard(),
            TransactionCommand::Unwatch => {
                self.transaction.unwatch();
                Frame::ok()
            }
            TransactionCommand::Watch(_) if self.transaction.in_multi() => Frame::static_error("ERR WATCH inside MULTI is not allowed"),
            TransactionCommand::Watch(keys) => match transaction::watch_tokens(&self.access, keys).await {
                Ok(tokens) => {
                    for (key, token) in tokens {
                        self.transaction.watch(key, token);
                    }
                    Frame::ok()
                }
                Err(error) => error,
            },
            TransactionCommand::Exec => {
                let (queued, watched) = match self.transaction.take_for_exec() {
                    Ok(taken) => taken,
                    Err(error) => return error,
                };
                self.exec_wrote |= queued.iter().any(|(index, _)| index.is_some_and(|i| table::COMMANDS[i].is_write()));
                let indexes: Vec<Option<usize>> = queued.iter().map(|(index, _)| *index).collect();
                // MONITOR shows the queued commands once EXEC ran them (not when a watched
                // key aborted it), before EXEC itself.
                let monitored = self.access.state.monitors.is_active().then(|| queued.clone());
                let steps = transaction::parse_steps(queued);
                let pick = self.next_random();
                let state = self.access.state.clone();
                let Some(slots) = transaction::run(&self.access, state, steps, watched, pick).await else {
                    return Frame::NullArray;
                };
                for (index, args) in monitored.iter().flatten() {
                    self.feed_monitors(*index, args);
                }
                let mut replies = Vec::with_capacity(slots.len());
                for slot in slots {
                    replies.push(match slot {
                        Slot::Reply(frame) => frame,
                        // Boxed: `execute` is what called us.
                        // As Redis: a client in a transaction expects one reply per command.
                        Slot::Connection(Command::Monitor) => Frame::static_error("ERR MONITOR isn't allowed for DENY BLOCKING client"),
                        Slot::Connection(command) => Box::pin(self.execute(command)).await,
                    });
                }
                // Each command EXEC ran is counted as run, and its error as its own (its
                // time is EXEC's).
                let stats = &self.access.state.command_stats;
                for (index, reply) in indexes.into_iter().zip(&replies) {
                    let Some(index) = index else { continue };
                    stats.add_calls(self.access.home, index, 1);
                    if let Frame::Error(message) = reply {
                        stats.add_error_reply(message);
                        stats.add_outcome(self.access.home, index, Outcome::Ran { failed: true });
                    }
                }
                Frame::Array(replies)
            }
        }
    }

    /// MONITOR: from now on every command the node runs is sent to this client, through
    /// the mailbox its Pub/Sub messages use (opened here if it has none).
    pub(super) fn monitor(&mut self) -> Frame {
        let inbox = match &self.inbox {
            Some(inbox) => inbox.clone(),
            None => {
                let (_, inbox) = crate::shell::pubsub::open_mailbox(self.info.clone());
                self.inbox = Some(inbox.clone());
                inbox
            }
        };
        self.access.state.monitors.add(inbox.mailbox());
        self.monitoring = true;
        Frame::ok()
    }

    /// CLIENT REPLY OFF or SKIP: drop this command's reply (a reply still in flight is
    /// dropped when it lands: its slot is marked now). Pub/Sub confirmations stay.
    pub(super) fn silence_if_asked(&mut self, slot: usize) {
        let silent = match (self.reply_mode, self.skip) {
            (ReplyMode::Off, _) => true,
            (_, Skip::Armed) => {
                self.skip = Skip::Next;
                true
            }
            (_, Skip::Next) => {
                self.skip = Skip::None;
                true
            }
            _ => false,
        };
        if silent {
            self.silenced.push_back(slot);
        }
    }

    /// Write every Pub/Sub message waiting in the inbox, with one write. They count
    /// against the subscriber's limit until written (or the connection fails).
    pub(super) async fn deliver(&mut self) -> std::io::Result<()> {
        let Some(inbox) = self.inbox.clone() else { return Ok(()) };
        let taken = inbox.take_into(&mut self.write_buf);
        let written = self.write_buffered().await;
        inbox.written(taken);
        // The mailbox's buffer came along: once a burst that grew it is written, an idle
        // subscriber does not keep its memory.
        if self.write_buf.is_empty() && self.write_buf.capacity() > super::WRITE_BUFFER_BYTES_MAX {
            self.write_buf = bytes::BytesMut::new();
        }
        written
    }
}

/// Pub/Sub confirmations, which CLIENT REPLY OFF does not silence (as Redis).
pub(super) fn is_push(frame: &Frame) -> bool {
    match frame {
        Frame::Push(_) => true,
        Frame::Replies(replies) => replies.iter().all(is_push),
        _ => false,
    }
}

/// What a RESP2 client may send while it holds subscriptions (as Redis).
pub(super) fn allowed_while_subscribed(command: &Command) -> bool {
    matches!(
        command,
        Command::PubSub(PubSubCommand::Subscribe(..) | PubSubCommand::Unsubscribe(..)) | Command::Ping(_) | Command::Quit | Command::Reset
    )
}

/// Returns once Pub/Sub messages wait in the inbox; never when the client subscribes
/// to nothing. Takes nothing: safe to drop in a `select!`.
pub(super) async fn messages_waiting(inbox: &Option<Inbox>) {
    match inbox {
        Some(inbox) => inbox.ready().await,
        None => std::future::pending().await,
    }
}

/// Sleep until `deadline`, or forever without one.
async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

fn is_wrong_type(reply: &Frame) -> bool {
    matches!(reply, Frame::Error(text) if text.starts_with(b"WRONGTYPE"))
}

/// Marks a client blocked (for CLIENT UNBLOCK) while it lives.
struct BlockedFlag<'a>(&'a crate::shell::clients::ClientInfo);

impl<'a> BlockedFlag<'a> {
    fn set(info: &'a crate::shell::clients::ClientInfo) -> BlockedFlag<'a> {
        info.blocked.store(true, std::sync::atomic::Ordering::Relaxed);
        BlockedFlag(info)
    }
}

impl Drop for BlockedFlag<'_> {
    fn drop(&mut self) {
        self.0.blocked.store(false, std::sync::atomic::Ordering::Relaxed);
    }
}
