//! Replies to COMMAND, COMMAND INFO/DOCS/COUNT/LIST/GETKEYS, built from the table.

use bytes::Bytes;

use super::table::{self, COMMANDS, CommandSpec};
use crate::protocol::Frame;

fn info(spec: &CommandSpec) -> Frame {
    let mut categories = vec![format!("@{}", spec.group)];
    if spec.is_write() {
        categories.push("@write".into());
    } else if spec.flags.contains(&"readonly") {
        categories.push("@read".into());
    }
    if spec.flags.contains(&"fast") {
        categories.push("@fast".into());
    } else {
        categories.push("@slow".into());
    }
    Frame::Array(vec![
        Frame::bulk_str(spec.name),
        Frame::Integer(spec.arity as i64),
        Frame::Set(spec.flags.iter().map(|f| Frame::simple(f)).collect()),
        Frame::Integer(spec.first_key as i64),
        Frame::Integer(spec.last_key as i64),
        Frame::Integer(spec.key_step as i64),
        Frame::Set(categories.iter().map(|c| Frame::Simple(Bytes::from(c.clone()))).collect()),
        Frame::Array(vec![]),
        Frame::Array(vec![]),
        Frame::Array(vec![]),
    ])
}

fn docs(spec: &CommandSpec) -> Frame {
    Frame::Map(vec![
        (Frame::bulk_str("summary"), Frame::bulk_str(spec.summary)),
        (Frame::bulk_str("since"), Frame::bulk_str(spec.since)),
        (Frame::bulk_str("group"), Frame::bulk_str(spec.group)),
    ])
}

pub fn all() -> Frame {
    Frame::Array(COMMANDS.iter().map(info).collect())
}

pub fn count() -> Frame {
    Frame::Integer(COMMANDS.len() as i64)
}

pub fn list() -> Frame {
    Frame::Array(COMMANDS.iter().map(|s| Frame::bulk_str(s.name)).collect())
}

pub fn info_for(names: &[Bytes]) -> Frame {
    if names.is_empty() {
        return all();
    }
    Frame::Array(names.iter().map(|n| table::lookup(n).map_or(Frame::NullArray, info)).collect())
}

pub fn docs_for(names: &[Bytes]) -> Frame {
    let specs: Vec<&CommandSpec> =
        if names.is_empty() { COMMANDS.iter().collect() } else { names.iter().filter_map(|n| table::lookup(n)).collect() };
    Frame::Map(specs.into_iter().map(|s| (Frame::bulk_str(s.name), docs(s))).collect())
}

/// COMMAND GETKEYS: the keys of a full command line.
pub fn getkeys(args: &[Bytes]) -> Frame {
    let Some(spec) = args.first().and_then(|n| table::lookup(n)) else {
        return Frame::static_error("ERR Invalid command specified");
    };
    if matches!(spec.name, "lmpop" | "zmpop" | "blmpop" | "bzmpop") && spec.arity_ok(args.len()) {
        // `numkeys key [key ...]` from argument 1 (movable keys; after the timeout for
        // the blocking forms).
        let at = if spec.name.starts_with('b') { 2 } else { 1 };
        return match crate::command::numbers::parse_i64(&args[at]) {
            Some(n) if n > 0 && (n as u64) < (args.len() - at - 1) as u64 => {
                Frame::Array(args[at + 1..at + 1 + n as usize].iter().cloned().map(Frame::Bulk).collect())
            }
            _ => Frame::static_error("ERR Invalid arguments specified for command"),
        };
    }
    if matches!(spec.name, "eval" | "evalsha" | "eval_ro" | "evalsha_ro") && spec.arity_ok(args.len()) {
        // `numkeys key [key ...]` from argument 2; a bad count names no key, and these
        // commands need none (Redis's `no_mandatory_keys`): an empty array.
        return match crate::command::numbers::parse_i64(&args[2]) {
            Some(n) if n > 0 && n as u64 <= (args.len() - 3) as u64 => {
                Frame::Array(args[3..3 + n as usize].iter().cloned().map(Frame::Bulk).collect())
            }
            _ => Frame::Array(Vec::new()),
        };
    }
    if matches!(spec.name, "sort" | "sort_ro") && spec.arity_ok(args.len()) {
        return Frame::Array(sort_keys(args).into_iter().map(|i| Frame::Bulk(args[i].clone())).collect());
    }
    if spec.first_key <= 0 {
        return Frame::static_error("ERR The command has no key arguments");
    }
    if !spec.arity_ok(args.len()) {
        return Frame::static_error("ERR Invalid number of arguments specified for command");
    }
    let positions = table::key_positions(spec, args.len());
    Frame::Array(positions.into_iter().map(|i| Frame::Bulk(args[i].clone())).collect())
}

/// SORT's keys as Redis's `sortGetKeys` finds them: the sorted key, and the last
/// `STORE` destination (skipping `LIMIT`'s two arguments and `GET`'s and `BY`'s one).
fn sort_keys(args: &[Bytes]) -> Vec<usize> {
    let mut keys = vec![1];
    let mut store = None;
    let mut i = 2;
    while i < args.len() {
        let word = &args[i];
        if word.eq_ignore_ascii_case(b"limit") {
            i += 2;
        } else if word.eq_ignore_ascii_case(b"get") || word.eq_ignore_ascii_case(b"by") {
            i += 1;
        } else if word.eq_ignore_ascii_case(b"store") && i + 1 < args.len() {
            store = Some(i + 1);
        }
        i += 1;
    }
    keys.extend(store);
    keys
}

pub fn help() -> Frame {
    let lines = [
        "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "(no subcommand)",
        "    Return details about all commands.",
        "COUNT",
        "    Return the total number of commands in this server.",
        "LIST",
        "    Return a list of all commands in this server.",
        "INFO [<command-name> ...]",
        "    Return details about multiple commands.",
        "DOCS [<command-name> ...]",
        "    Return documentation details about multiple commands.",
        "GETKEYS <full-command>",
        "    Return the keys from a full command.",
        "HELP",
        "    Print this help.",
    ];
    Frame::Array(lines.iter().map(|l| Frame::simple(l)).collect())
}
