//! The settings `CONFIG GET`/`CONFIG SET` read and change while the node runs
//! ([`RuntimeConfig`], seeded from the command line's [`Config`]), with the parsers
//! and checks of their values (sizes, output buffer limits, eviction policy, keyspace
//! notification flags). Owns no I/O: the shell hands it values and reads them back.

use std::sync::RwLock;
use std::sync::atomic::{AtomicI64, AtomicU16, AtomicU64, AtomicUsize, Ordering};

use super::Config;
use crate::engine::kv::EncodingLimits;

/// Settings that `CONFIG SET` may change while running.
#[derive(Debug)]
pub struct RuntimeConfig {
    pub requirepass: RwLock<Option<String>>,
    proto_max_bulk_len: AtomicUsize,
    client_query_buffer_limit: AtomicUsize,
    maxclients: AtomicUsize,
    maxmemory: AtomicUsize,
    output_buffer_limits: RwLock<OutputBufferLimits>,
    /// OBJECT ENCODING's thresholds, in the order of [`ENCODING_SETTINGS`].
    encoding: [AtomicUsize; ENCODING_SETTINGS.len()],
    /// `sanitize-dump-payload`, an index into [`SANITIZE_DUMP_PAYLOAD`]: accepted and
    /// reported; RESTORE checks every payload fully whatever it says (as Redis's `yes`).
    sanitize_dump_payload: AtomicUsize,
    /// `list-max-listpack-size` and `list-compress-depth`: accepted and reported (a
    /// list's layout does not depend on them; Redis 7.0 reports every list as a
    /// quicklist whatever they say).
    list_max_listpack_size: AtomicI64,
    list_compress_depth: AtomicI64,
    /// `notify-keyspace-events`, as `crate::notify::Flags` bits.
    notify_keyspace_events: AtomicU16,
    /// `lua-time-limit` (alias `busy-reply-threshold`): milliseconds a script runs before
    /// other clients are answered BUSY and SCRIPT KILL may stop it.
    lua_time_limit_ms: AtomicU64,
}

/// Redis's default `lua-time-limit`.
const LUA_TIME_LIMIT_MS_DEFAULT: u64 = 5000;

/// The values `sanitize-dump-payload` takes, in Redis's order (its default first).
const SANITIZE_DUMP_PAYLOAD: [&str; 3] = ["no", "yes", "clients"];

/// The collection encoding settings Redis has (with their pre-7.0 `ziplist` aliases):
/// accepted, reported, and applied to what OBJECT ENCODING answers.
const ENCODING_SETTINGS: [(&str, Option<&str>); 7] = [
    ("hash-max-listpack-entries", Some("hash-max-ziplist-entries")),
    ("hash-max-listpack-value", Some("hash-max-ziplist-value")),
    ("set-max-intset-entries", None),
    ("zset-max-listpack-entries", Some("zset-max-ziplist-entries")),
    ("zset-max-listpack-value", Some("zset-max-ziplist-value")),
    ("stream-node-max-entries", None),
    ("stream-node-max-bytes", None),
];

fn encoding_values(limits: &EncodingLimits) -> [usize; ENCODING_SETTINGS.len()] {
    [
        limits.hash_max_listpack_entries,
        limits.hash_max_listpack_value,
        limits.set_max_intset_entries,
        limits.zset_max_listpack_entries,
        limits.zset_max_listpack_value,
        limits.stream_node_max_entries,
        limits.stream_node_max_bytes,
    ]
}

/// Which of [`ENCODING_SETTINGS`] a `CONFIG` name is, aliases included.
fn encoding_setting(name: &str) -> Option<usize> {
    ENCODING_SETTINGS.iter().position(|(canonical, alias)| *canonical == name || *alias == Some(name))
}

impl RuntimeConfig {
    pub fn new(config: &Config) -> RuntimeConfig {
        RuntimeConfig {
            requirepass: RwLock::new(config.requirepass.clone().filter(|p| !p.is_empty())),
            proto_max_bulk_len: AtomicUsize::new(config.proto_max_bulk_len),
            client_query_buffer_limit: AtomicUsize::new(config.client_query_buffer_limit),
            maxclients: AtomicUsize::new(config.maxclients),
            maxmemory: AtomicUsize::new(config.maxmemory),
            lua_time_limit_ms: AtomicU64::new(LUA_TIME_LIMIT_MS_DEFAULT),
            output_buffer_limits: RwLock::new(config.output_buffer_limits().unwrap_or_default()),
            encoding: encoding_values(&EncodingLimits::default()).map(AtomicUsize::new),
            sanitize_dump_payload: AtomicUsize::new(0),
            list_max_listpack_size: AtomicI64::new(-2),
            list_compress_depth: AtomicI64::new(0),
            notify_keyspace_events: AtomicU16::new(crate::notify::Flags::parse(&config.notify_keyspace_events).unwrap_or_default().bits()),
        }
    }

    pub fn notify_keyspace_events(&self) -> crate::notify::Flags {
        crate::notify::Flags::from_bits(self.notify_keyspace_events.load(Ordering::Relaxed))
    }

    pub fn encoding_limits(&self) -> EncodingLimits {
        let v = |i: usize| self.encoding[i].load(Ordering::Relaxed);
        EncodingLimits {
            hash_max_listpack_entries: v(0),
            hash_max_listpack_value: v(1),
            set_max_intset_entries: v(2),
            zset_max_listpack_entries: v(3),
            zset_max_listpack_value: v(4),
            stream_node_max_entries: v(5),
            stream_node_max_bytes: v(6),
        }
    }

    pub fn proto_max_bulk_len(&self) -> usize {
        self.proto_max_bulk_len.load(Ordering::Relaxed)
    }

    pub fn client_query_buffer_limit(&self) -> usize {
        self.client_query_buffer_limit.load(Ordering::Relaxed)
    }

    pub fn maxclients(&self) -> usize {
        self.maxclients.load(Ordering::Relaxed)
    }

    pub fn lua_time_limit_ms(&self) -> u64 {
        self.lua_time_limit_ms.load(Ordering::Relaxed)
    }

    pub fn maxmemory(&self) -> usize {
        self.maxmemory.load(Ordering::Relaxed)
    }

    pub fn output_buffer_limits(&self) -> OutputBufferLimits {
        self.output_buffer_limits.read().map(|l| *l).unwrap_or_default()
    }

    pub fn requirepass(&self) -> Option<String> {
        self.requirepass.read().map(|p| p.clone()).unwrap_or(None)
    }

    /// All `CONFIG GET` names with their current values.
    pub fn entries(&self, config: &Config) -> Vec<(&'static str, String)> {
        let mut entries = self.fixed_entries(config);
        for (i, (canonical, alias)) in ENCODING_SETTINGS.iter().enumerate() {
            let value = self.encoding[i].load(Ordering::Relaxed).to_string();
            if let Some(alias) = alias {
                entries.push((alias, value.clone()));
            }
            entries.push((canonical, value));
        }
        let listpack_size = self.list_max_listpack_size.load(Ordering::Relaxed).to_string();
        entries.push(("list-max-ziplist-size", listpack_size.clone()));
        entries.push(("list-max-listpack-size", listpack_size));
        entries.push(("list-compress-depth", self.list_compress_depth.load(Ordering::Relaxed).to_string()));
        entries.push(("notify-keyspace-events", self.notify_keyspace_events().to_string()));
        let lua_time_limit = self.lua_time_limit_ms().to_string();
        entries.push(("lua-time-limit", lua_time_limit.clone()));
        entries.push(("busy-reply-threshold", lua_time_limit));
        entries
    }

    fn fixed_entries(&self, config: &Config) -> Vec<(&'static str, String)> {
        vec![
            ("bind", config.bind.clone()),
            ("port", config.port.to_string()),
            ("shards", config.shard_count().to_string()),
            ("node-id", config.node_id.to_string()),
            ("region", config.region.clone()),
            ("data-dir", config.data_dir.display().to_string()),
            ("object-store", config.object_store.clone().unwrap_or_default()),
            ("persistence", config.persistence.clone()),
            ("flush-interval-ms", config.flush_interval_ms.to_string()),
            ("idle-poll-us", config.idle_poll_us.to_string()),
            ("max-unflushed-bytes", config.max_unflushed_bytes.to_string()),
            ("checkpoint-every-segments", config.checkpoint_every_segments.to_string()),
            ("durability", config.durability.clone()),
            ("fsync", config.fsync.clone()),
            ("repl-port", config.repl_port.map(|p| p.to_string()).unwrap_or_default()),
            ("repl-bind", config.repl_bind.clone().unwrap_or_default()),
            ("peers", config.peers.join(",")),
            ("cluster-secret", String::new()),
            ("repl-tls-cert", config.repl_tls_cert.as_ref().map(|p| p.display().to_string()).unwrap_or_default()),
            ("repl-tls-key", config.repl_tls_key.as_ref().map(|p| p.display().to_string()).unwrap_or_default()),
            ("repl-tls-ca", config.repl_tls_ca.as_ref().map(|p| p.display().to_string()).unwrap_or_default()),
            ("repl-batch-ms", config.repl_batch_ms.to_string()),
            ("repl-backlog-bytes", config.repl_backlog_bytes.to_string()),
            ("anti-entropy-interval-ms", config.anti_entropy_interval_ms.to_string()),
            ("peer-horizon-ms", config.peer_horizon_ms.to_string()),
            ("max-clock-skew-ms", config.max_clock_skew_ms.to_string()),
            ("metrics-port", config.metrics_port.map(|p| p.to_string()).unwrap_or_default()),
            ("requirepass", self.requirepass().unwrap_or_default()),
            ("proto-max-bulk-len", self.proto_max_bulk_len().to_string()),
            ("client-query-buffer-limit", self.client_query_buffer_limit().to_string()),
            ("maxclients", self.maxclients().to_string()),
            ("maxmemory", self.maxmemory().to_string()),
            ("maxmemory-policy", MAXMEMORY_POLICY.to_string()),
            ("client-output-buffer-limit", self.output_buffer_limits().to_string()),
            ("databases", "1".to_string()),
            (
                "sanitize-dump-payload",
                SANITIZE_DUMP_PAYLOAD.get(self.sanitize_dump_payload.load(Ordering::Relaxed)).copied().unwrap_or("no").to_string(),
            ),
            // Asked by redis-benchmark and other tools; Meridian has no RDB/AOF files.
            ("save", String::new()),
            ("appendonly", "no".to_string()),
        ]
    }

    /// `CONFIG SET name value`: Ok, or Redis's error text.
    pub fn set(&self, name: &str, value: &str) -> Result<(), String> {
        let parse_size = |v: &str| -> Result<usize, String> {
            parse_memory_size(v)
                .ok_or_else(|| format!("ERR CONFIG SET failed (possibly related to argument '{name}') - argument must be a memory value"))
        };
        match name {
            "requirepass" => {
                if let Ok(mut guard) = self.requirepass.write() {
                    *guard = if value.is_empty() { None } else { Some(value.to_string()) };
                }
            }
            "proto-max-bulk-len" => {
                let n = parse_size(value)?;
                if n < 1024 {
                    return Err(format!("ERR CONFIG SET failed (possibly related to argument '{name}') - argument must be at least 1024"));
                }
                self.proto_max_bulk_len.store(n, Ordering::Relaxed)
            }
            "client-query-buffer-limit" => self.client_query_buffer_limit.store(parse_size(value)?, Ordering::Relaxed),
            "maxclients" => self.maxclients.store(parse_size(value)?, Ordering::Relaxed),
            "maxmemory" => self.maxmemory.store(parse_size(value)?, Ordering::Relaxed),
            "lua-time-limit" | "busy-reply-threshold" => {
                let ms: u64 = value.parse().map_err(|_| {
                    format!("ERR CONFIG SET failed (possibly related to argument '{name}') - argument couldn't be parsed into an integer")
                })?;
                self.lua_time_limit_ms.store(ms, Ordering::Relaxed)
            }
            "maxmemory-policy" => {
                parse_maxmemory_policy(value)
                    .map_err(|why| format!("ERR CONFIG SET failed (possibly related to argument '{name}') - {why}"))?;
            }
            "client-output-buffer-limit" => {
                let failed = |why: String| format!("ERR CONFIG SET failed (possibly related to argument '{name}') - {why}");
                let mut guard = self.output_buffer_limits.write().map_err(|_| failed("poisoned".into()))?;
                *guard = OutputBufferLimits::parse(value, &guard).map_err(failed)?;
            }
            "sanitize-dump-payload" => {
                let Some(i) = SANITIZE_DUMP_PAYLOAD.iter().position(|v| v.eq_ignore_ascii_case(value)) else {
                    return Err(format!(
                        "ERR CONFIG SET failed (possibly related to argument '{name}') - argument(s) must be one of the following: {}",
                        SANITIZE_DUMP_PAYLOAD.join(", ")
                    ));
                };
                self.sanitize_dump_payload.store(i, Ordering::Relaxed)
            }
            "notify-keyspace-events" => {
                let flags = crate::notify::Flags::parse(value)
                    .map_err(|why| format!("ERR CONFIG SET failed (possibly related to argument '{name}') - {why}"))?;
                self.notify_keyspace_events.store(flags.bits(), Ordering::Relaxed)
            }
            // Meridian writes no RDB snapshots: accepted (test suites and tools set it) and
            // ignored; CONFIG GET save stays empty.
            "save" => {}
            "list-max-listpack-size" | "list-max-ziplist-size" | "list-compress-depth" => {
                let failed = |why: &str| format!("ERR CONFIG SET failed (possibly related to argument '{name}') - {why}");
                let n: i64 = value.parse().map_err(|_| failed("argument couldn't be parsed into an integer"))?;
                let min = if name == "list-compress-depth" { 0 } else { i32::MIN as i64 };
                if n < min || n > i32::MAX as i64 {
                    return Err(failed(&format!("argument must be between {min} and {} inclusive", i32::MAX)));
                }
                let setting = if name == "list-compress-depth" { &self.list_compress_depth } else { &self.list_max_listpack_size };
                setting.store(n, Ordering::Relaxed)
            }
            _ if encoding_setting(name).is_some() => {
                let i = encoding_setting(name).expect("just matched");
                self.encoding[i].store(parse_size(value)?, Ordering::Relaxed)
            }
            "bind"
            | "port"
            | "shards"
            | "node-id"
            | "region"
            | "data-dir"
            | "databases"
            | "object-store"
            | "persistence"
            | "flush-interval-ms"
            | "max-unflushed-bytes"
            | "checkpoint-every-segments"
            | "durability"
            | "fsync"
            | "repl-port"
            | "repl-bind"
            | "peers"
            | "cluster-secret"
            | "repl-tls-cert"
            | "repl-tls-key"
            | "repl-tls-ca"
            | "repl-batch-ms"
            | "repl-backlog-bytes"
            | "anti-entropy-interval-ms"
            | "max-clock-skew-ms"
            | "metrics-port" => {
                return Err(format!("ERR CONFIG SET failed (possibly related to argument '{name}') - can't set immutable config"));
            }
            _ => return Err(format!("ERR Unknown option or number of arguments for CONFIG SET - '{name}'")),
        }
        Ok(())
    }
}

/// The only `maxmemory-policy`: refuse client writes past `maxmemory`.
pub const MAXMEMORY_POLICY: &str = "noeviction";
/// Redis's other policies: known, and refused with a reason rather than as unknown words.
const EVICTION_POLICIES: [&str; 7] =
    ["volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl", "allkeys-lru", "allkeys-lfu", "allkeys-random"];

pub(super) fn parse_maxmemory_policy(text: &str) -> Result<String, String> {
    let lower = text.to_ascii_lowercase();
    if lower == MAXMEMORY_POLICY {
        Ok(lower)
    } else if EVICTION_POLICIES.contains(&lower.as_str()) {
        // Evicting on one node would be a delete the other regions replicate: a key
        // would vanish everywhere because one node was short of memory.
        Err(format!("{lower} is not supported: Meridian never evicts (only noeviction)"))
    } else {
        Err("argument(s) must be one of the following: noeviction".to_string())
    }
}

/// Redis's default `client-output-buffer-limit`.
pub const OUTPUT_BUFFER_LIMIT_DEFAULT: &str = "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60";

/// One client class's output buffer limit: disconnected past `hard_bytes` at once, or
/// past `soft_bytes` for `soft_seconds` in a row; 0 turns a limit off.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct OutputBufferLimit {
    pub hard_bytes: usize,
    pub soft_bytes: usize,
    pub soft_seconds: u64,
}

/// `client-output-buffer-limit`, per class. `replica` is accepted and reported (Redis's
/// replicas do not exist here: peer links have their own bounds, `repl-backlog-bytes`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct OutputBufferLimits {
    pub normal: OutputBufferLimit,
    pub replica: OutputBufferLimit,
    pub pubsub: OutputBufferLimit,
}

impl Default for OutputBufferLimits {
    fn default() -> Self {
        OutputBufferLimits {
            normal: OutputBufferLimit::default(),
            replica: OutputBufferLimit { hard_bytes: 256 << 20, soft_bytes: 64 << 20, soft_seconds: 60 },
            pubsub: OutputBufferLimit { hard_bytes: 32 << 20, soft_bytes: 8 << 20, soft_seconds: 60 },
        }
    }
}

impl OutputBufferLimits {
    /// Parse `class hard soft seconds ...` (any subset of the classes, as Redis's CONFIG
    /// SET: the classes not named keep their `current` limits). Errors in Redis's words.
    pub fn parse(text: &str, current: &OutputBufferLimits) -> Result<OutputBufferLimits, String> {
        let words: Vec<&str> = text.split_whitespace().collect();
        if !words.len().is_multiple_of(4) {
            return Err("Wrong number of arguments in buffer limit configuration.".to_string());
        }
        let mut limits = *current;
        for group in words.chunks(4) {
            let class = match group[0].to_ascii_lowercase().as_str() {
                "normal" => &mut limits.normal,
                "slave" | "replica" => &mut limits.replica,
                "pubsub" => &mut limits.pubsub,
                _ => return Err("Invalid client class specified in buffer limit configuration.".to_string()),
            };
            let size = |w: &str| {
                parse_memory_size(w).ok_or_else(|| "Error in hard, soft or soft_seconds setting in buffer limit configuration.".to_string())
            };
            let seconds = group[3]
                .parse::<u64>()
                .map_err(|_| "Error in hard, soft or soft_seconds setting in buffer limit configuration.".to_string())?;
            *class = OutputBufferLimit { hard_bytes: size(group[1])?, soft_bytes: size(group[2])?, soft_seconds: seconds };
        }
        Ok(limits)
    }
}

impl std::fmt::Display for OutputBufferLimits {
    /// As Redis's CONFIG GET prints it (`slave`, as Redis 7 still does).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut first = true;
        for (name, l) in [("normal", self.normal), ("slave", self.replica), ("pubsub", self.pubsub)] {
            if !first {
                f.write_str(" ")?;
            }
            first = false;
            write!(f, "{name} {} {} {}", l.hard_bytes, l.soft_bytes, l.soft_seconds)?;
        }
        Ok(())
    }
}

pub(super) fn parse_notify_flags(text: &str) -> Result<String, String> {
    crate::notify::Flags::parse(text).map(|_| text.to_string()).map_err(str::to_string)
}

pub(super) fn parse_size_arg(text: &str) -> Result<usize, String> {
    parse_memory_size(text).ok_or_else(|| format!("expected a size in bytes such as 1048576, 64kb, 512mb or 1gb, got {text:?}"))
}

/// "512mb", "1gb", "1024", "64k" -> bytes.
pub fn parse_memory_size(text: &str) -> Option<usize> {
    let lower = text.to_ascii_lowercase();
    let units: [(&str, usize); 6] = [("kb", 1024), ("mb", 1 << 20), ("gb", 1 << 30), ("k", 1000), ("m", 1_000_000), ("g", 1_000_000_000)];
    for (suffix, factor) in units {
        if let Some(number) = lower.strip_suffix(suffix) {
            return number.parse::<usize>().ok()?.checked_mul(factor);
        }
    }
    lower.parse().ok()
}
