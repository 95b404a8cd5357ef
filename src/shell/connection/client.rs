//! CLIENT, HELLO and AUTH: a connection's identity and protocol. Part of
//! [`super::Connection`].

use std::sync::atomic::Ordering;

use bytes::Bytes;

use super::{Connection, Skip};
use crate::command::{ClientCommand, ReplyMode, errors};
use crate::protocol::{Frame, Protocol};
use crate::shell::info::REDIS_COMPAT_VERSION;

impl Connection {
    pub(super) fn password_ok(&self, user: Option<&[u8]>, password: &[u8]) -> bool {
        let Some(expected) = self.state().runtime.requirepass() else { return false };
        user.is_none_or(|u| u == b"default") && constant_time_eq(expected.as_bytes(), password)
    }

    pub(super) fn auth(&mut self, user: Option<&[u8]>, password: &[u8]) -> Frame {
        if self.state().runtime.requirepass().is_none() {
            return match user {
                None => Frame::static_error(
                    "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?",
                ),
                Some(_) => errors::error(errors::WRONGPASS),
            };
        }
        if self.password_ok(user, password) {
            self.authenticated = true;
            Frame::ok()
        } else {
            errors::error(errors::WRONGPASS)
        }
    }

    pub(super) fn hello(&mut self, protover: Option<i64>, auth: Option<(Bytes, Bytes)>, setname: Option<Bytes>) -> Frame {
        let protocol = match protover {
            None => self.protocol,
            Some(2) => Protocol::Resp2,
            Some(3) => Protocol::Resp3,
            Some(_) => return Frame::static_error("NOPROTO unsupported protocol version"),
        };
        if let Some((user, password)) = auth {
            if self.state().runtime.requirepass().is_none() || !self.password_ok(Some(&user), &password) {
                return errors::error(errors::WRONGPASS);
            }
            self.authenticated = true;
        }
        if !self.authenticated {
            return Frame::static_error(
                "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time",
            );
        }
        if let Some(name) = setname {
            if let Err(e) = validate_client_name(&name) {
                return e;
            }
            self.info.set_name(name);
        }
        self.protocol = protocol;
        self.info.resp.store(if protocol == Protocol::Resp3 { 3 } else { 2 }, Ordering::Relaxed);
        Frame::Map(vec![
            (Frame::bulk_str("server"), Frame::bulk_str("redis")),
            (Frame::bulk_str("version"), Frame::bulk_str(REDIS_COMPAT_VERSION)),
            (Frame::bulk_str("proto"), Frame::Integer(if protocol == Protocol::Resp3 { 3 } else { 2 })),
            (Frame::bulk_str("id"), Frame::Integer(self.info.id as i64)),
            (Frame::bulk_str("mode"), Frame::bulk_str("standalone")),
            (Frame::bulk_str("role"), Frame::bulk_str("master")),
            (Frame::bulk_str("modules"), Frame::Array(vec![])),
        ])
    }

    pub(super) fn client(&mut self, command: ClientCommand) -> Frame {
        match command {
            ClientCommand::Id => Frame::Integer(self.info.id as i64),
            ClientCommand::GetRedir => Frame::Integer(-1),
            ClientCommand::GetName => {
                let name = self.info.name();
                if name.is_empty() { Frame::Null } else { Frame::Bulk(name) }
            }
            ClientCommand::SetName(name) => match validate_client_name(&name) {
                Ok(()) => {
                    self.info.set_name(name);
                    Frame::ok()
                }
                Err(e) => e,
            },
            ClientCommand::SetInfo => Frame::ok(),
            ClientCommand::Unblock { id, error } => {
                let client = self.state().clients.all().into_iter().find(|c| c.id == id);
                Frame::Integer(client.is_some_and(|c| c.request_unblock(error)) as i64)
            }
            ClientCommand::Reply(mode) => {
                match mode {
                    ReplyMode::On => {
                        self.reply_mode = ReplyMode::On;
                        self.skip = Skip::None;
                    }
                    ReplyMode::Off => self.reply_mode = ReplyMode::Off,
                    ReplyMode::Skip if self.reply_mode == ReplyMode::On => self.skip = Skip::Armed,
                    ReplyMode::Skip => {}
                }
                Frame::ok()
            }
            ClientCommand::Info => {
                let subscriptions = self.state().pubsub.subscription_counts(self.info.id);
                Frame::Verbatim("txt", Bytes::from(format!("{}\n", self.info.describe(subscriptions))))
            }
            ClientCommand::List(filter) => {
                let mut text = String::new();
                for client in self.state().clients.all() {
                    let subscriptions = self.state().pubsub.subscription_counts(client.id);
                    if client.matches(&filter, subscriptions) {
                        text.push_str(&client.describe(subscriptions));
                        text.push('\n');
                    }
                }
                Frame::Verbatim("txt", Bytes::from(text))
            }
            ClientCommand::Kill { filter, legacy, skip_me } => {
                let mut killed = 0;
                for client in self.state().clients.all() {
                    let is_me = client.id == self.info.id;
                    let subscriptions = self.state().pubsub.subscription_counts(client.id);
                    if client.matches(&filter, subscriptions) && !(skip_me && is_me) {
                        if is_me {
                            self.closing = true;
                        } else {
                            client.request_kill();
                        }
                        killed += 1;
                    }
                }
                match (legacy, killed) {
                    (true, 0) => Frame::static_error("ERR No such client"),
                    (true, _) => Frame::ok(),
                    (false, n) => Frame::Integer(n),
                }
            }
            ClientCommand::Help => Frame::Array(
                [
                    "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                    "ID",
                    "GETNAME",
                    "SETNAME <name>",
                    "SETINFO <attr> <value>",
                    "REPLY (ON|OFF|SKIP)",
                    "UNBLOCK <clientid> [TIMEOUT|ERROR]",
                    "INFO",
                    "LIST [TYPE (NORMAL|MASTER|REPLICA|PUBSUB)] [ID <id> [<id> ...]]",
                    "KILL <ip:port> | KILL [ID <id>] [TYPE <type>] [USER <user>] [ADDR <ip:port>] [LADDR <ip:port>] [SKIPME (YES|NO)]",
                    "HELP",
                ]
                .iter()
                .map(|l| Frame::simple(l))
                .collect(),
            ),
        }
    }
}

pub(super) fn validate_client_name(name: &[u8]) -> Result<(), Frame> {
    if name.iter().any(|&b| !(b'!'..=b'~').contains(&b)) {
        return Err(Frame::static_error("ERR Client names cannot contain spaces, newlines or special characters."));
    }
    Ok(())
}

/// Compare secrets without an early exit, so timing reveals nothing but the length.
pub(super) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
