//! Replies to COMMAND, COMMAND INFO/DOCS/COUNT/LIST/GETKEYS, built from the table.

use bytes::Bytes;

use super::CommandFilter;
use super::table::{self, COMMANDS, CommandSpec};
use crate::protocol::Frame;

/// The ACL categories COMMAND INFO reports for a command (and COMMAND LIST FILTERBY
/// ACLCAT selects by): its group's category as Redis names it (`generic` commands are
/// `@keyspace`, `sorted-set` ones `@sortedset`; `server` ones have none of their own),
/// read or write, fast or slow.
fn categories(spec: &CommandSpec) -> Vec<String> {
    let group = match spec.group {
        "generic" => Some("keyspace"),
        "sorted-set" => Some("sortedset"),
        "transactions" => Some("transaction"),
        "server" => None,
        other => Some(other),
    };
    let mut categories: Vec<String> = group.map(|g| format!("@{g}")).into_iter().collect();
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
    categories
}

fn info(spec: &CommandSpec) -> Frame {
    let categories = categories(spec);
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

/// COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN pattern]: the
/// commands' names (subcommands are not listed: see docs/semantics.md).
pub fn list(filter: Option<&CommandFilter>) -> Frame {
    let selected = |spec: &&CommandSpec| match filter {
        None => true,
        Some(CommandFilter::Module(_)) => false,
        Some(CommandFilter::AclCategory(category)) => categories(spec).iter().any(|c| c.as_bytes()[1..].eq_ignore_ascii_case(category)),
        Some(CommandFilter::Pattern(pattern)) => crate::engine::kv::glob::glob_match(&pattern.to_ascii_lowercase(), spec.name.as_bytes()),
    };
    Frame::Array(COMMANDS.iter().filter(selected).map(|s| Frame::bulk_str(s.name)).collect())
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
    // As Redis: the arity first, then the keys.
    if !spec.arity_ok(args.len()) {
        return Frame::static_error("ERR Invalid number of arguments specified for command");
    }
    let positions = match movable_keys(spec, args) {
        Some(Ok(positions)) => positions,
        Some(Err(e)) => return e,
        None if spec.first_key <= 0 => return Frame::static_error(NO_KEYS),
        None => table::key_positions(spec, args.len()),
    };
    Frame::Array(positions.into_iter().map(|i| Frame::Bulk(args[i].clone())).collect())
}

const NO_KEYS: &str = "ERR The command has no key arguments";
const INVALID_ARGUMENTS: &str = "ERR Invalid arguments specified for command";

/// The keys of a command whose key spec alone cannot place them (Redis's movable keys,
/// and the containers whose subcommands name a key), as Redis's key finders find them;
/// `None` for the rest.
fn movable_keys(spec: &CommandSpec, args: &[Bytes]) -> Option<Result<Vec<usize>, Frame>> {
    let invalid = || Frame::static_error(INVALID_ARGUMENTS);
    let subcommand = |names: &[&str]| args.get(1).is_some_and(|s| names.iter().any(|n| s.eq_ignore_ascii_case(n.as_bytes())));
    Some(match spec.name {
        // `numkeys key [key ...]`, after a destination or a timeout for some.
        "zunion" | "zinter" | "zdiff" | "zintercard" | "sintercard" | "lmpop" | "zmpop" => numkeys_keys(args, 1).ok_or_else(invalid),
        "blmpop" | "bzmpop" => numkeys_keys(args, 2).ok_or_else(invalid),
        "zunionstore" | "zinterstore" | "zdiffstore" => {
            numkeys_keys(args, 2).map(|keys| std::iter::once(1).chain(keys).collect()).ok_or_else(invalid)
        }
        // A bad count names no key, and these need none (Redis's `no_mandatory_keys`).
        "eval" | "evalsha" | "eval_ro" | "evalsha_ro" => Ok(numkeys_keys(args, 2).unwrap_or_default()),
        "sort" | "sort_ro" => Ok(sort_keys(args)),
        // The key, then the argument after the first STORE and after the first STOREDIST
        // past the fixed arguments (Redis 7.0's key specs: two keyword searches).
        "georadius" | "georadiusbymember" => {
            let first_option = if spec.name == "georadius" { 6 } else { 5 };
            let after =
                |word: &[u8]| (first_option..args.len().saturating_sub(1)).find(|&at| args[at].eq_ignore_ascii_case(word)).map(|at| at + 1);
            Ok(std::iter::once(1).chain(after(b"store")).chain(after(b"storedist")).collect())
        }
        // `... STREAMS key [key ...] id [id ...]`: the first half after the keyword
        // (rounded down, as Redis 7.0's key spec divides).
        "xread" | "xreadgroup" => {
            let keys = args.iter().position(|a| a.eq_ignore_ascii_case(b"streams")).map(|at| (at, (args.len() - at - 1) / 2));
            match keys {
                Some((at, keys)) if keys > 0 => Ok((at + 1..=at + keys).collect()),
                _ => Err(invalid()),
            }
        }
        "memory" if subcommand(&["usage"]) && args.len() > 2 => Ok(vec![2]),
        "xgroup" if subcommand(&["create", "setid", "destroy", "createconsumer", "delconsumer"]) && args.len() > 2 => Ok(vec![2]),
        "xinfo" if subcommand(&["stream", "groups", "consumers"]) && args.len() > 2 => Ok(vec![2]),
        _ => return None,
    })
}

/// The positions of `numkeys key [key ...]` with the count at `at`: `None` when the
/// count is not a positive integer or names more keys than follow it.
fn numkeys_keys(args: &[Bytes], at: usize) -> Option<Vec<usize>> {
    let count = crate::command::numbers::parse_i64(args.get(at)?)?;
    if count <= 0 || count as u64 > (args.len() - at - 1) as u64 {
        return None;
    }
    Some((at + 1..=at + count as usize).collect())
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
