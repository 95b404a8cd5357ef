//! The connection and server commands whose first argument is a subcommand (HELLO,
//! CLIENT, COMMAND, FUNCTION, CONFIG, PUBSUB, MEMORY, OBJECT), with Redis's arity and
//! unknown-subcommand errors. Part of the parser (`super`).

use super::*;

pub(super) fn parse_hello(a: &mut [Bytes]) -> Parsed {
    let mut protover = None;
    let mut auth = None;
    let mut setname = None;
    if a.len() >= 2 {
        match parse_i64(&a[1]) {
            Some(v) => protover = Some(v),
            None => return Err(Frame::static_error("ERR Protocol version is not an integer or out of range")),
        }
        let mut i = 2;
        while i < a.len() {
            let remaining = a.len() - i - 1;
            if eq(&a[i], "auth") && remaining >= 2 {
                auth = Some((a[i + 1].clone(), a[i + 2].clone()));
                i += 3;
            } else if eq(&a[i], "setname") && remaining >= 1 {
                setname = Some(a[i + 1].clone());
                i += 2;
            } else {
                return Err(Frame::error(format!("ERR Syntax error in HELLO option '{}'", String::from_utf8_lossy(&a[i]))));
            }
        }
    }
    Ok(Command::Hello { protover, auth, setname })
}

/// A client type as CLIENT LIST and CLIENT KILL name it, with Redis's error.
fn client_type(name: &[u8]) -> Result<ClientType, Frame> {
    match name.to_ascii_lowercase().as_slice() {
        b"normal" => Ok(ClientType::Normal),
        b"pubsub" => Ok(ClientType::PubSub),
        b"master" => Ok(ClientType::Master),
        b"replica" | b"slave" => Ok(ClientType::Replica),
        _ => Err(Frame::error(format!("ERR Unknown client type '{}'", String::from_utf8_lossy(name)))),
    }
}

pub(super) fn parse_client(a: &mut [Bytes]) -> Parsed {
    let sub = a[1].to_ascii_lowercase();
    let argc = a.len();
    let arity = |ok: bool, name: &str| if ok { Ok(()) } else { Err(wrong_arity(name)) };
    let cmd = match &sub[..] {
        b"id" => arity(argc == 2, "client|id").map(|_| ClientCommand::Id)?,
        b"getname" => arity(argc == 2, "client|getname").map(|_| ClientCommand::GetName)?,
        b"setname" => arity(argc == 3, "client|setname").map(|_| ClientCommand::SetName(take(a, 2)))?,
        b"info" => arity(argc == 2, "client|info").map(|_| ClientCommand::Info)?,
        b"list" => {
            let mut filter = ClientFilter::default();
            if argc == 4 && eq(&a[2], "type") {
                filter.client_type = Some(client_type(&a[3])?);
            } else if argc >= 4 && eq(&a[2], "id") {
                let ids = a[3..].iter().map(|id| parse_i64(id).filter(|&n| n > 0).map(|n| n as u64));
                filter.ids = Some(ids.collect::<Option<Vec<u64>>>().ok_or_else(|| Frame::static_error("ERR Invalid client ID"))?);
            } else if argc != 2 {
                return Err(errors::error(errors::SYNTAX));
            }
            ClientCommand::List(filter)
        }
        b"setinfo" => arity(argc == 4, "client|setinfo").map(|_| ClientCommand::SetInfo)?,
        b"unblock" => {
            if argc != 3 && argc != 4 {
                return Err(Frame::error(format!(
                    "ERR unknown subcommand or wrong number of arguments for '{}'. Try CLIENT HELP.",
                    String::from_utf8_lossy(&a[1])
                )));
            }
            let id = parse_i64(&a[2]).ok_or_else(|| errors::error(errors::NOT_INTEGER))?;
            let error = match a.get(3).map(|r| r.to_ascii_lowercase()) {
                None => false,
                Some(reason) if reason.as_slice() == b"timeout" => false,
                Some(reason) if reason.as_slice() == b"error" => true,
                Some(_) => return Err(Frame::static_error("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")),
            };
            ClientCommand::Unblock { id: id as u64, error }
        }
        b"reply" => {
            arity(argc == 3, "client|reply")?;
            match a[2].to_ascii_lowercase().as_slice() {
                b"on" => ClientCommand::Reply(ReplyMode::On),
                b"off" => ClientCommand::Reply(ReplyMode::Off),
                b"skip" => ClientCommand::Reply(ReplyMode::Skip),
                _ => return Err(errors::error(errors::SYNTAX)),
            }
        }
        b"help" => arity(argc == 2, "client|help").map(|_| ClientCommand::Help)?,
        // Client-side caching needs tracking, which Meridian does not offer: Redis's
        // answers for a client that has it off.
        b"getredir" => arity(argc == 2, "client|getredir").map(|_| ClientCommand::GetRedir)?,
        b"caching" => {
            arity(argc == 3, "client|caching")?;
            return Err(Frame::static_error(
                "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled",
            ));
        }
        b"kill" => {
            arity(argc >= 3, "client|kill")?;
            if argc == 3 {
                let filter = ClientFilter { addr: Some(take(a, 2)), ..ClientFilter::default() };
                ClientCommand::Kill { filter, legacy: true, skip_me: false }
            } else {
                let mut filter = ClientFilter::default();
                let mut skip_me = true;
                let mut at = 2;
                while at < argc {
                    // Every filter takes a value: one without is a syntax error.
                    let Some(value) = a.get(at + 1) else { return Err(errors::error(errors::SYNTAX)) };
                    let name = &a[at];
                    if eq(name, "id") {
                        let n = parse_i64(value)
                            .filter(|&n| n > 0)
                            .ok_or_else(|| Frame::static_error("ERR client-id should be greater than 0"))?;
                        filter.ids = Some(vec![n as u64]);
                    } else if eq(name, "type") {
                        filter.client_type = Some(client_type(value)?);
                    } else if eq(name, "addr") {
                        filter.addr = Some(value.clone());
                    } else if eq(name, "laddr") {
                        filter.laddr = Some(value.clone());
                    } else if eq(name, "user") {
                        // One user exists, `default`, and every client is it.
                        if value.as_ref() != b"default" {
                            return Err(Frame::error(format!("ERR No such user '{}'", String::from_utf8_lossy(value))));
                        }
                    } else if eq(name, "skipme") {
                        if eq(value, "yes") {
                            skip_me = true;
                        } else if eq(value, "no") {
                            skip_me = false;
                        } else {
                            return Err(errors::error(errors::SYNTAX));
                        }
                    } else {
                        return Err(errors::error(errors::SYNTAX));
                    }
                    at += 2;
                }
                ClientCommand::Kill { filter, legacy: false, skip_me }
            }
        }
        _ => return Err(errors::unknown_subcommand(&a[1], "CLIENT")),
    };
    Ok(Command::Client(cmd))
}

pub(super) fn parse_command_command(a: &mut [Bytes]) -> Parsed {
    if a.len() == 1 {
        return Ok(Command::Command(CommandCommand::All));
    }
    let sub = a[1].to_ascii_lowercase();
    let rest = a[2..].to_vec();
    let cmd = match &sub[..] {
        b"count" if a.len() == 2 => CommandCommand::Count,
        b"count" => return Err(wrong_arity("command|count")),
        b"info" => CommandCommand::Info(rest),
        b"docs" => CommandCommand::Docs(rest),
        b"list" => match rest.as_slice() {
            [] => CommandCommand::List(None),
            [filterby, kind, value] if eq(filterby, "filterby") => {
                let filter = if eq(kind, "module") {
                    CommandFilter::Module(value.clone())
                } else if eq(kind, "aclcat") {
                    CommandFilter::AclCategory(value.clone())
                } else if eq(kind, "pattern") {
                    CommandFilter::Pattern(value.clone())
                } else {
                    return Err(errors::error(errors::SYNTAX));
                };
                CommandCommand::List(Some(filter))
            }
            _ => return Err(errors::error(errors::SYNTAX)),
        },
        b"help" => CommandCommand::Help,
        b"getkeys" if a.len() >= 4 => CommandCommand::GetKeys(rest),
        b"getkeys" => return Err(wrong_arity("command|getkeys")),
        _ => return Err(errors::unknown_subcommand(&a[1], "COMMAND")),
    };
    Ok(Command::Command(cmd))
}

pub(super) fn parse_function(a: &mut [Bytes]) -> Parsed {
    let sub = a[1].to_ascii_lowercase();
    let cmd = match &sub[..] {
        b"flush" if a.len() <= 3 => {
            if a.len() == 3 && !eq(&a[2], "sync") && !eq(&a[2], "async") {
                return Err(Frame::static_error("ERR FUNCTION FLUSH only supports SYNC|ASYNC option"));
            }
            FunctionCommand::Flush
        }
        b"flush" => return Err(wrong_arity("function|flush")),
        b"list" => FunctionCommand::List,
        _ => return Err(errors::unknown_subcommand(&a[1], "FUNCTION")),
    };
    Ok(Command::Function(cmd))
}

pub(super) fn parse_config(a: &mut [Bytes]) -> Parsed {
    let sub = a[1].to_ascii_lowercase();
    let cmd = match &sub[..] {
        b"get" if a.len() >= 3 => ConfigCommand::Get(a[2..].to_vec()),
        b"get" => return Err(wrong_arity("config|get")),
        b"set" if a.len() >= 4 && a.len().is_multiple_of(2) => ConfigCommand::Set(pairs(a[2..].to_vec())),
        b"set" => return Err(wrong_arity("config|set")),
        b"resetstat" if a.len() == 2 => ConfigCommand::ResetStat,
        b"resetstat" => return Err(wrong_arity("config|resetstat")),
        b"help" => ConfigCommand::Help,
        _ => return Err(errors::unknown_subcommand(&a[1], "CONFIG")),
    };
    Ok(Command::Config(cmd))
}

/// PUBSUB's subcommands, with Redis's arity and unknown-subcommand errors.
pub(super) fn parse_pubsub(a: &mut [Bytes]) -> Parsed {
    let sub = a[1].to_ascii_lowercase();
    let arity_error = || {
        Err(Frame::error(format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try PUBSUB HELP.",
            String::from_utf8_lossy(&a[1]).chars().take(128).collect::<String>()
        )))
    };
    let command = match (sub.as_slice(), a.len()) {
        (b"channels" | b"shardchannels", 2 | 3) => {
            PubSubCommand::Channels { shard: sub.as_slice() == b"shardchannels", pattern: a.get(2).cloned() }
        }
        (b"channels" | b"shardchannels", _) => return arity_error(),
        (b"numsub" | b"shardnumsub", _) => PubSubCommand::NumSub { shard: sub.as_slice() == b"shardnumsub", channels: a[2..].to_vec() },
        (b"numpat", 2) => PubSubCommand::NumPat,
        (b"numpat", _) => return Err(wrong_arity("pubsub|numpat")),
        (b"help", 2) => PubSubCommand::Help,
        (b"help", _) => return Err(wrong_arity("pubsub|help")),
        _ => {
            return Err(Frame::error(format!(
                "ERR unknown subcommand '{}'. Try PUBSUB HELP.",
                String::from_utf8_lossy(&a[1]).chars().take(128).collect::<String>()
            )));
        }
    };
    Ok(Command::PubSub(command))
}

pub(super) fn parse_memory(a: &mut [Bytes]) -> Parsed {
    if !eq(&a[1], "usage") {
        return Err(errors::unknown_subcommand(&a[1], "MEMORY"));
    }
    match a.len() {
        3 => {}
        5 if eq(&a[3], "samples") => {
            int(&a[4])?;
        }
        n if n < 3 => return Err(wrong_arity("memory|usage")),
        _ => return Err(errors::error(errors::SYNTAX)),
    }
    Ok(Command::Key(KeyCommand::MemoryUsage(take(a, 2))))
}

pub(super) fn parse_object(a: &mut [Bytes]) -> Parsed {
    let sub = &a[1];
    let (field, name) = if eq(sub, "encoding") {
        (ObjectField::Encoding, "object|encoding")
    } else if eq(sub, "refcount") {
        (ObjectField::Refcount, "object|refcount")
    } else if eq(sub, "freq") {
        (ObjectField::Freq, "object|freq")
    } else if eq(sub, "help") && a.len() == 2 {
        return Ok(Command::Help(OBJECT_HELP));
    } else {
        // IDLETIME needs a per-key access clock Meridian does not keep.
        return Err(errors::unknown_subcommand(sub, "OBJECT"));
    };
    if a.len() != 3 {
        return Err(wrong_arity(name));
    }
    Ok(Command::Key(KeyCommand::Object { key: take(a, 2), field }))
}

const OBJECT_HELP: &[&str] = &[
    "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "ENCODING <key>",
    "    Return the kind of internal representation used in order to store the value",
    "    associated with a <key>.",
    "REFCOUNT <key>",
    "    Return the number of references of the value associated with the specified",
    "    <key>.",
    "HELP",
    "    Prints this help.",
];
