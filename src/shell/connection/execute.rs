//! What a barrier command does (anything that is not a single-key command: connection
//! state, server commands, multi-key and keyspace commands, transactions, scripts,
//! Pub/Sub, blocking commands), once everything queued before it is answered. Part of
//! [`super::Connection`].

use std::sync::atomic::Ordering;

use bytes::Bytes;

use super::Connection;
use crate::command::{Command, CommandCommand, errors, introspect};
use crate::protocol::{Frame, Protocol};
use crate::shard::{ShardOp, ShardReply, ShardStats};
use crate::shell::shards::Shards;
use crate::shell::{fanout, info};

impl Connection {
    pub(super) async fn execute(&mut self, command: Command) -> Frame {
        match command {
            // Subscribed (RESP2): PING answers in the shape of a message.
            Command::Ping(message) if self.subscriptions > 0 && self.protocol == Protocol::Resp2 => {
                Frame::Array(vec![Frame::bulk_str("pong"), Frame::Bulk(message.unwrap_or_default())])
            }
            Command::Ping(None) => Frame::simple("PONG"),
            Command::Ping(Some(message)) | Command::Echo(message) => Frame::Bulk(message),
            Command::Hello { protover, auth, setname } => self.hello(protover, auth, setname),
            Command::Auth { user, password } => self.auth(user.as_deref(), &password),
            Command::Select(0) => Frame::ok(),
            Command::Select(_) => errors::error(errors::DB_INDEX_OUT_OF_RANGE),
            Command::Quit => {
                self.closing = true;
                Frame::ok()
            }
            Command::Reset => {
                self.protocol = Protocol::Resp2;
                self.info.resp.store(2, Ordering::Relaxed);
                self.info.set_name(Bytes::new());
                self.authenticated = self.state().runtime.requirepass().is_none();
                self.transaction.reset();
                self.state().pubsub.leave(self.info.id);
                self.state().monitors.remove(self.info.id);
                self.monitoring = false;
                self.inbox = None;
                self.subscriptions = 0;
                Frame::simple("RESET")
            }
            Command::Client(command) => self.client(command),
            Command::Command(command) => match command {
                CommandCommand::All => introspect::all(),
                CommandCommand::Count => introspect::count(),
                CommandCommand::List(filter) => introspect::list(filter.as_ref()),
                CommandCommand::Info(names) => introspect::info_for(&names),
                CommandCommand::Docs(names) => introspect::docs_for(&names),
                CommandCommand::GetKeys(args) => introspect::getkeys(&args),
                CommandCommand::Help => introspect::help(),
            },
            Command::Info(sections) => {
                let stats = self.shard_stats().await;
                let text = info::render(self.state(), &stats, &sections);
                Frame::Verbatim("txt", Bytes::from(text))
            }
            Command::Config(command) => {
                if matches!(command, crate::command::ConfigCommand::ResetStat) {
                    self.access.run_everywhere(|| ShardOp::ResetStats).await;
                }
                info::config(self.state(), command)
            }
            Command::GraphConfig(command) => crate::shell::graph_config::execute(&command),
            // No scripting: no function to list or to flush.
            Command::Function(crate::command::FunctionCommand::Flush) => Frame::ok(),
            Command::Function(crate::command::FunctionCommand::List) => Frame::Array(Vec::new()),
            Command::Help(lines) => Frame::Array(lines.iter().map(|line| Frame::simple(line)).collect()),
            // A shutdown never waits for anything (replicas, a save), so none is ever
            // in progress to abort.
            Command::Shutdown { .. } => Frame::static_error("ERR No shutdown in progress."),
            Command::Time => crate::shell::time_reply(),
            Command::Role => {
                let produced: u64 = self.shard_stats().await.iter().map(|s| s.deltas_produced).sum();
                Frame::Array(vec![Frame::bulk_str("master"), Frame::Integer(produced as i64), Frame::Array(Vec::new())])
            }
            Command::WaitAof { local, replicas, timeout_ms } => self.wait_aof(local, replicas, timeout_ms).await,
            Command::Save => self.save().await,
            Command::LastSave => Frame::Integer(self.state().stats.saved_at_secs.load(std::sync::atomic::Ordering::Relaxed) as i64),
            Command::Monitor => self.monitor(),
            Command::Keyspace(command) => {
                let pick = self.next_random();
                fanout::keyspace(&self.access, command, pick).await
            }
            Command::Multi(command) => fanout::multi(&self.access, command).await,
            Command::Vector(command) => crate::shell::vector::execute(&self.access, command, self.protocol == Protocol::Resp3).await,
            Command::Transaction(command) => self.transaction(command).await,
            Command::Script(command) => {
                let random_pick = self.next_random();
                crate::shell::script::execute(&self.access, command, random_pick).await
            }
            Command::PubSub(command) => self.pubsub(command),
            Command::Blocking(command) => self.block(command).await,
            Command::Key(_) => Frame::static_error("ERR internal: key command reached the barrier path"),
        }
    }

    /// Every shard's figures for INFO (and ROLE's offset, SAVE's change count).
    pub(super) async fn shard_stats(&self) -> Vec<ShardStats> {
        let replies = self.access.run_everywhere(|| ShardOp::Stats).await;
        replies.into_iter().filter_map(|r| if let ShardReply::Stats(s) = r { Some(*s) } else { None }).collect()
    }
}
