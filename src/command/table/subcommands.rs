//! The subcommands of Redis's container commands and their arities, as Redis 7.0's
//! command table has them: what Redis refuses before a command runs, and so what MULTI
//! refuses at queueing time (flagging the transaction) rather than at EXEC.
//!
//! Data and one lookup; parsing a subcommand's own arguments stays with its command.

use bytes::Bytes;

use super::CommandSpec;
use crate::command::errors;
use crate::protocol::Frame;

/// `(container, subcommand, arity)`; an arity below 0 is a minimum, as in the table.
const SUBCOMMANDS: &[(&str, &str, i32)] = &[
    ("client", "caching", 3),
    ("client", "getname", 2),
    ("client", "getredir", 2),
    ("client", "help", 2),
    ("client", "id", 2),
    ("client", "info", 2),
    ("client", "kill", -3),
    ("client", "list", -2),
    ("client", "no-evict", 3),
    ("client", "pause", -3),
    ("client", "reply", 3),
    ("client", "setinfo", 4),
    ("client", "setname", 3),
    ("client", "tracking", -3),
    ("client", "trackinginfo", 2),
    ("client", "unblock", -3),
    ("client", "unpause", 2),
    ("config", "get", -3),
    ("config", "help", 2),
    ("config", "resetstat", 2),
    ("config", "rewrite", 2),
    ("config", "set", -4),
    ("function", "delete", 3),
    ("function", "dump", 2),
    ("function", "flush", -2),
    ("function", "help", 2),
    ("function", "kill", 2),
    ("function", "list", -2),
    ("function", "load", -3),
    ("function", "restore", -3),
    ("function", "stats", 2),
    ("memory", "doctor", 2),
    ("memory", "help", 2),
    ("memory", "malloc-stats", 2),
    ("memory", "purge", 2),
    ("memory", "stats", 2),
    ("memory", "usage", -3),
    ("object", "encoding", 3),
    ("object", "freq", 3),
    ("object", "help", 2),
    ("object", "idletime", 3),
    ("object", "refcount", 3),
    ("pubsub", "channels", -2),
    ("pubsub", "help", 2),
    ("pubsub", "numpat", 2),
    ("pubsub", "numsub", -2),
    ("pubsub", "shardchannels", -2),
    ("pubsub", "shardnumsub", -2),
    ("script", "debug", 3),
    ("script", "exists", -3),
    ("script", "flush", -2),
    ("script", "help", 2),
    ("script", "kill", 2),
    ("script", "load", 3),
    ("xgroup", "create", -5),
    ("xgroup", "createconsumer", 5),
    ("xgroup", "delconsumer", 5),
    ("xgroup", "destroy", 4),
    ("xgroup", "help", 2),
    ("xgroup", "setid", -5),
    ("xinfo", "consumers", 4),
    ("xinfo", "groups", 3),
    ("xinfo", "help", 2),
    ("xinfo", "stream", -3),
];

/// What Redis answers, before running it, for a container command line (`args[0]` is
/// the container, whose own arity has been checked) naming no subcommand of it, or one
/// with the wrong number of arguments; `None` for any other command line.
pub fn refusal(spec: &CommandSpec, args: &[Bytes]) -> Option<Frame> {
    if !spec.is_container() || args.len() < 2 {
        return None;
    }
    let Some(&(_, sub, arity)) =
        SUBCOMMANDS.iter().find(|(container, sub, _)| *container == spec.name && args[1].eq_ignore_ascii_case(sub.as_bytes()))
    else {
        return Some(Frame::error(format!(
            "ERR unknown subcommand '{}'. Try {} HELP.",
            errors::sanitize(&args[1], 128),
            spec.name.to_ascii_uppercase()
        )));
    };
    let argc = args.len() as i32;
    let arity_ok = if arity >= 0 { argc == arity } else { argc >= -arity };
    (!arity_ok).then(|| errors::wrong_arity(&format!("{}|{sub}", spec.name)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::table::{COMMANDS, lookup};

    fn line(words: &[&str]) -> Vec<Bytes> {
        words.iter().map(|w| Bytes::copy_from_slice(w.as_bytes())).collect()
    }

    #[test]
    fn every_listed_container_is_a_container_and_every_container_is_listed() {
        for (container, _, _) in SUBCOMMANDS {
            assert!(lookup(container.as_bytes()).is_some_and(CommandSpec::is_container), "{container}");
        }
        for spec in COMMANDS.iter().filter(|s| s.is_container()) {
            assert!(SUBCOMMANDS.iter().any(|(c, _, _)| *c == spec.name), "{} has no subcommands listed", spec.name);
        }
    }

    #[test]
    fn unknown_subcommands_and_wrong_arities_are_refused_with_redis_text() {
        let object = lookup(b"object").expect("object");
        assert_eq!(refusal(object, &line(&["OBJECT", "nope", "k"])), Some(Frame::error("ERR unknown subcommand 'nope'. Try OBJECT HELP.")));
        assert_eq!(
            refusal(object, &line(&["object", "ENCODING", "k", "x"])),
            Some(Frame::error("ERR wrong number of arguments for 'object|encoding' command"))
        );
        assert_eq!(refusal(object, &line(&["object", "Encoding", "k"])), None);
        let xgroup = lookup(b"xgroup").expect("xgroup");
        assert_eq!(refusal(xgroup, &line(&["XGROUP", "CREATE", "k", "g", "$", "MKSTREAM"])), None);
        assert_eq!(
            refusal(xgroup, &line(&["XGROUP", "CREATE", "k", "g"])),
            Some(Frame::error("ERR wrong number of arguments for 'xgroup|create' command"))
        );
        assert_eq!(refusal(lookup(b"get").expect("get"), &line(&["GET", "k"])), None);
    }

    /// Outside MULTI the same lines are refused with the same text, before any
    /// subcommand's own parser (which would call an unsupported one unknown).
    #[test]
    fn the_parsers_refuse_what_the_table_refuses() {
        // (A minimum of 2 is every line that names the subcommand: nothing to refuse.)
        for &(container, sub, arity) in SUBCOMMANDS.iter().filter(|(_, _, arity)| *arity != -2) {
            let argc = if arity >= 0 { arity as usize + 1 } else { (-arity) as usize - 1 };
            let mut words = vec![container, sub];
            words.resize(argc, "x");
            let args = line(&words);
            let spec = lookup(container.as_bytes()).expect("listed");
            let want = refusal(spec, &args).expect("a wrong arity");
            let got = crate::command::parse_command(args.clone());
            assert_eq!(got.err(), Some(want), "{words:?}");
        }
        for container in ["object", "xgroup", "xinfo", "config", "client", "memory", "pubsub", "script", "function"] {
            let args = line(&[container, "nope", "x", "y"]);
            let want = refusal(lookup(container.as_bytes()).expect("listed"), &args).expect("unknown");
            assert_eq!(crate::command::parse_command(args).err(), Some(want), "{container}");
        }
    }
}
