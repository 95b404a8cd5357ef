//! Maelstrom's client requests as Meridian commands, run on the node's real shards.
//!
//! Owns the mapping of each workload onto Redis commands and of the replies back onto
//! Maelstrom bodies:
//!
//! | workload | request | command |
//! |---|---|---|
//! | g-set | `add {element}` / `read` | `SADD g-set <json>` / `SMEMBERS g-set` |
//! | g-counter, pn-counter | `add {delta}` / `read` | `INCRBY counter <delta>` / `GET counter` |
//! | broadcast | `broadcast {message}` / `read` / `topology` | `SADD broadcast <json>` / `SMEMBERS broadcast` / nothing |
//! | lin-kv | `read {key}` / `write {key, value}` / `cas {key, from, to}` | `GET` / `SET` / `GET` then `SET` |
//!
//! Commands go through the real parser (`meridian::command::parse_command`) and the
//! real key routing, as a connection's would. Never touches the network or a clock:
//! time comes in as `now_ms`.

use bytes::Bytes;
use meridian::command::{Command, parse_command};
use meridian::protocol::Frame;
use meridian::routing::shard_for_key;
use meridian::shard::{Shard, ShardOp};
use serde_json::{Map, Value, json};

use crate::message::{body, code, error_body};

/// Which Maelstrom workload a node serves: `read` means something different in each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    GSet,
    GCounter,
    PnCounter,
    Broadcast,
    LinKv,
}

impl Workload {
    pub const ALL: [Workload; 5] = [Workload::GSet, Workload::GCounter, Workload::PnCounter, Workload::Broadcast, Workload::LinKv];

    /// The workload's name as Maelstrom's `-w` spells it.
    pub fn name(self) -> &'static str {
        match self {
            Workload::GSet => "g-set",
            Workload::GCounter => "g-counter",
            Workload::PnCounter => "pn-counter",
            Workload::Broadcast => "broadcast",
            Workload::LinKv => "lin-kv",
        }
    }

    pub fn from_name(name: &str) -> Option<Workload> {
        Workload::ALL.into_iter().find(|w| w.name() == name)
    }
}

const GSET_KEY: &str = "g-set";
const COUNTER_KEY: &str = "counter";
const BROADCAST_KEY: &str = "broadcast";
/// lin-kv keys live under this prefix, followed by the key's JSON text.
const KV_PREFIX: &str = "kv:";

/// Run one Redis command on the shard that owns its key.
fn run(shards: &mut [Shard], words: &[&[u8]], now_ms: u64) -> Frame {
    assert!(!shards.is_empty() && !words.is_empty());
    let args: Vec<Bytes> = words.iter().map(|w| Bytes::copy_from_slice(w)).collect();
    match parse_command(args) {
        Ok(Command::Key(cmd)) => {
            let shard = shard_for_key(cmd.key(), shards.len());
            shards[shard].apply(ShardOp::Key(cmd), now_ms).into_frame()
        }
        Ok(_) => Frame::error("ERR the maelstrom node runs single-key commands only"),
        Err(error) => error,
    }
}

/// A shard's error reply as Maelstrom's: the write did not happen (e.g. the outbox
/// refused it), so the error is definite.
fn refused(frame: &Frame) -> Map<String, Value> {
    error_body(code::TEMPORARILY_UNAVAILABLE, format!("meridian refused: {frame:?}"))
}

/// A set's members, each parsed back from its JSON text.
fn members(frame: Frame) -> Result<Vec<Value>, Frame> {
    match frame {
        Frame::Array(items) | Frame::Set(items) => Ok(items
            .into_iter()
            .filter_map(|item| match item {
                Frame::Bulk(bytes) => serde_json::from_slice(&bytes).ok(),
                _ => None,
            })
            .collect()),
        other => Err(other),
    }
}

/// The body answering a client's request (`in_reply_to` and `msg_id` are the node's to
/// add).
pub fn serve(workload: Workload, shards: &mut [Shard], request: &Map<String, Value>, now_ms: u64) -> Map<String, Value> {
    let kind = request.get("type").and_then(Value::as_str).unwrap_or("");
    match (workload, kind) {
        (Workload::GSet, "add") => {
            let Some(element) = request.get("element") else { return malformed("add without element") };
            add_member(shards, GSET_KEY, element, "add_ok", now_ms)
        }
        (Workload::Broadcast, "broadcast") => {
            let Some(message) = request.get("message") else { return malformed("broadcast without message") };
            add_member(shards, BROADCAST_KEY, message, "broadcast_ok", now_ms)
        }
        (Workload::GSet, "read") => match members(run(shards, &[b"SMEMBERS", GSET_KEY.as_bytes()], now_ms)) {
            Ok(values) => body("read_ok", json!({"value": values})),
            Err(frame) => refused(&frame),
        },
        (Workload::Broadcast, "read") => match members(run(shards, &[b"SMEMBERS", BROADCAST_KEY.as_bytes()], now_ms)) {
            Ok(values) => body("read_ok", json!({"messages": values})),
            Err(frame) => refused(&frame),
        },
        // The node replicates to every node whatever the topology says: a topology
        // only suggests who to gossip with.
        (Workload::Broadcast, "topology") => body("topology_ok", json!({})),
        (Workload::GCounter | Workload::PnCounter, "add") => {
            let Some(delta) = request.get("delta").and_then(Value::as_i64) else { return malformed("add without an integer delta") };
            if workload == Workload::GCounter && delta < 0 {
                return malformed("g-counter deltas are never negative");
            }
            match run(shards, &[b"INCRBY", COUNTER_KEY.as_bytes(), delta.to_string().as_bytes()], now_ms) {
                Frame::Integer(_) => body("add_ok", json!({})),
                other => refused(&other),
            }
        }
        (Workload::GCounter | Workload::PnCounter, "read") => match run(shards, &[b"GET", COUNTER_KEY.as_bytes()], now_ms) {
            Frame::Null => body("read_ok", json!({"value": 0})),
            Frame::Bulk(bytes) => match std::str::from_utf8(&bytes).ok().and_then(|s| s.parse::<i64>().ok()) {
                Some(value) => body("read_ok", json!({"value": value})),
                None => error_body(code::CRASH, "the counter does not hold an integer"),
            },
            other => refused(&other),
        },
        (Workload::LinKv, "read" | "write" | "cas") => serve_kv(shards, kind, request, now_ms),
        _ => error_body(code::NOT_SUPPORTED, format!("{kind:?} is not a {} request", workload.name())),
    }
}

fn malformed(text: &str) -> Map<String, Value> {
    error_body(code::MALFORMED_REQUEST, text)
}

fn add_member(shards: &mut [Shard], key: &str, member: &Value, ok: &str, now_ms: u64) -> Map<String, Value> {
    let text = member.to_string();
    match run(shards, &[b"SADD", key.as_bytes(), text.as_bytes()], now_ms) {
        Frame::Integer(_) => body(ok, json!({})),
        other => refused(&other),
    }
}

/// lin-kv on this node's replica. A compare-and-set reads and writes within one call:
/// the node serves one message at a time, so nothing runs between its GET and its SET
/// here. Other nodes may change the key concurrently: that is why lin-kv is not
/// linearizable across nodes (docs/testing.md).
fn serve_kv(shards: &mut [Shard], kind: &str, request: &Map<String, Value>, now_ms: u64) -> Map<String, Value> {
    let Some(key) = request.get("key") else { return malformed("no key") };
    let key = format!("{KV_PREFIX}{key}");
    let current = match run(shards, &[b"GET", key.as_bytes()], now_ms) {
        Frame::Null => None,
        Frame::Bulk(bytes) => match serde_json::from_slice::<Value>(&bytes) {
            Ok(value) => Some(value),
            Err(_) => return error_body(code::CRASH, "a stored value is not JSON"),
        },
        other => return refused(&other),
    };
    let write = |shards: &mut [Shard], value: &Value, ok: &str| match run(
        shards,
        &[b"SET", key.as_bytes(), value.to_string().as_bytes()],
        now_ms,
    ) {
        Frame::Simple(_) => body(ok, json!({})),
        other => refused(&other),
    };
    match kind {
        "read" => match current {
            Some(value) => body("read_ok", json!({"value": value})),
            None => error_body(code::KEY_DOES_NOT_EXIST, "key does not exist"),
        },
        "write" => {
            let Some(value) = request.get("value") else { return malformed("write without value") };
            write(shards, value, "write_ok")
        }
        _ => {
            let (Some(from), Some(to)) = (request.get("from"), request.get("to")) else { return malformed("cas without from and to") };
            let create = request.get("create_if_not_exists").and_then(Value::as_bool).unwrap_or(false);
            match current {
                None if !create => error_body(code::KEY_DOES_NOT_EXIST, "key does not exist"),
                Some(value) if value != *from => error_body(code::PRECONDITION_FAILED, format!("expected {from}, had {value}")),
                _ => write(shards, to, "cas_ok"),
            }
        }
    }
}
