//! Every setting: its command-line flag, its default, and its `CONFIG GET` name.
//!
//! Settings come from the command line, optionally preceded by a `--config FILE` in
//! Redis's format (`name value` per line, `#` comments); flags given on the command
//! line win over the file. A few settings can change at run time (`CONFIG SET`); they
//! live in [`RuntimeConfig`].

use crate::engine::kv::EncodingLimits;
use std::path::PathBuf;
use std::sync::RwLock;
use std::sync::atomic::{AtomicI64, AtomicU16, AtomicUsize, Ordering};

use clap::Parser;

#[derive(Parser, Debug, Clone)]
#[command(
    name = "meridian",
    version,
    about = "Meridian: an eventually consistent, geo-replicated, Redis-protocol database",
    args_override_self = true
)]
pub struct Config {
    /// Address to listen on for clients.
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: String,

    /// Port to listen on for clients (0 picks a free port and logs it).
    #[arg(long, default_value_t = 6379)]
    pub port: u16,

    /// Shard actors (threads) that partition the keyspace. Default: one per CPU core.
    #[arg(long)]
    pub shards: Option<usize>,

    /// This node's id, unique in the cluster (the actor in all CRDT metadata).
    #[arg(long, default_value_t = 1)]
    pub node_id: u16,

    /// This node's region name (informational; shown in INFO).
    #[arg(long, default_value = "local")]
    pub region: String,

    /// Local folder for persistence (the embedded default object store).
    #[arg(long, default_value = "./meridian-data")]
    pub data_dir: PathBuf,

    /// Object store for persistence instead of --data-dir: `s3://bucket/prefix` (S3,
    /// MinIO: credentials and endpoint from AWS_* variables) or `memory://` (tests).
    #[arg(long)]
    pub object_store: Option<String>,

    /// Persist to the object store (`on`) or keep data in memory only (`off`).
    #[arg(long, default_value = "on", value_parser = ["on", "off"])]
    pub persistence: String,

    /// How often pending writes are stored as one segment, in milliseconds.
    #[arg(long, default_value_t = 250)]
    pub flush_interval_ms: u64,

    /// Writes not yet stored, in bytes, before new writes are refused (-MISCONF).
    #[arg(long, default_value = "256mb", value_parser = parse_size_arg)]
    pub max_unflushed_bytes: usize,

    /// Segments between two checkpoints.
    #[arg(long, default_value_t = 240)]
    pub checkpoint_every_segments: u64,

    /// `async`: acknowledge writes from memory (loss window: one flush interval plus
    /// the upload). `sync`: acknowledge a write only once the segment holding it is
    /// stored (group commit per flush).
    #[arg(long, default_value = "async", value_parser = ["async", "sync"])]
    pub durability: String,

    /// Start even if recovery finds a corrupt or missing object, keeping what could be
    /// recovered up to it (the rest is lost; this is logged loudly).
    #[arg(long)]
    pub accept_data_loss: bool,

    /// Run on an object store that ignores conditional writes, without fencing.
    #[arg(long)]
    pub allow_unfenced: bool,

    /// Password clients must give with AUTH (or HELLO AUTH) before other commands.
    #[arg(long, env = "MERIDIAN_REQUIREPASS", hide_env_values = true)]
    pub requirepass: Option<String>,

    /// Read settings from a Redis-style config file (`name value` lines) first.
    #[arg(long)]
    pub config: Option<PathBuf>,

    /// Longest bulk string accepted from a client, in bytes (`proto-max-bulk-len`).
    #[arg(long, default_value = "512mb", value_parser = parse_size_arg)]
    pub proto_max_bulk_len: usize,

    /// Most bytes one pending command may hold (`client-query-buffer-limit`).
    #[arg(long, default_value = "1gb", value_parser = parse_size_arg)]
    pub client_query_buffer_limit: usize,

    /// Most simultaneous client connections (`maxclients`).
    #[arg(long, default_value_t = 10_000)]
    pub maxclients: usize,

    /// Past this many bytes of used memory, client writes get Redis's `-OOM` error
    /// while reads go on (`maxmemory`); 0: no limit. Merges from peers are never refused.
    #[arg(long, default_value = "0", value_parser = parse_size_arg)]
    pub maxmemory: usize,

    /// What happens past --maxmemory (`maxmemory-policy`): only `noeviction`.
    #[arg(long, default_value = "noeviction", value_parser = parse_maxmemory_policy)]
    pub maxmemory_policy: String,

    /// Output buffer limits per client class, as Redis's `client-output-buffer-limit`:
    /// `class hard soft soft-seconds` groups (classes normal, replica, pubsub); may be
    /// given once per class, as in redis.conf. Default: `normal 0 0 0 slave 256mb 64mb 60
    /// pubsub 32mb 8mb 60`.
    #[arg(long, action = clap::ArgAction::Append)]
    pub client_output_buffer_limit: Vec<String>,

    /// Keyspace notifications (`notify-keyspace-events`): Redis's class letters
    /// `KEg$lshzxetmdnA`; empty (the default) publishes none.
    #[arg(long, default_value = "", value_parser = parse_notify_flags)]
    pub notify_keyspace_events: String,

    /// Testing only: hold recovery this long before loading the data, so that a test
    /// can watch clients get `-LOADING`.
    #[arg(long, default_value_t = 0, hide = true)]
    pub debug_loading_delay_ms: u64,

    /// Port for replication links from peers (enables replication). Peers list this
    /// node as `host:PORT` in their --peers.
    #[arg(long)]
    pub repl_port: Option<u16>,

    /// Address the replication listener binds (default: --bind).
    #[arg(long)]
    pub repl_bind: Option<String>,

    /// Replication addresses of the other nodes, `host:port,host:port`.
    #[arg(long, value_delimiter = ',')]
    pub peers: Vec<String>,

    /// The secret every node of the cluster shares; peer links prove it without
    /// sending it. Required with replication.
    #[arg(long, env = "MERIDIAN_CLUSTER_SECRET", hide_env_values = true)]
    pub cluster_secret: Option<String>,

    /// TLS for peer links: this node's certificate (PEM), signed by --repl-tls-ca.
    #[arg(long)]
    pub repl_tls_cert: Option<PathBuf>,

    /// TLS for peer links: the private key of --repl-tls-cert (PEM).
    #[arg(long)]
    pub repl_tls_key: Option<PathBuf>,

    /// TLS for peer links: the CA that signs every node's certificate (PEM). With it,
    /// links are mutual TLS: both ends must present a certificate it signed.
    #[arg(long)]
    pub repl_tls_ca: Option<PathBuf>,

    /// Local writes are gathered for at most this long, merged per key, and sent as one
    /// batch; under load a batch leaves sooner, as soon as a shard has 64 KiB of them.
    #[arg(long, default_value_t = 10)]
    pub repl_batch_ms: u64,

    /// Unacknowledged batches kept per peer, in bytes; past it the peer is caught up
    /// by anti-entropy instead.
    #[arg(long, default_value = "64mb", value_parser = parse_size_arg)]
    pub repl_backlog_bytes: usize,

    /// How often each link compares Merkle trees with its peer (also on every connect).
    #[arg(long, default_value_t = 10_000)]
    pub anti_entropy_interval_ms: u64,

    /// Remote stamps further ahead of local time than this are counted and logged.
    #[arg(long, default_value_t = 2_000)]
    pub max_clock_skew_ms: u64,

    /// Serve Prometheus metrics at http://BIND:PORT/metrics.
    #[arg(long)]
    pub metrics_port: Option<u16>,

    /// What to do instead of serving (`restore`).
    #[command(subcommand)]
    pub command: Option<Subcommand>,

    /// Log filter (tracing's EnvFilter syntax), e.g. `info` or `meridian=debug`.
    #[arg(long, default_value = "info", env = "MERIDIAN_LOG")]
    pub log: String,
}

#[derive(clap::Subcommand, Debug, Clone)]
pub enum Subcommand {
    /// Rebuild this node's data as of a point in time from its object store (the one
    /// --data-dir or --object-store names, with --node-id) into a fresh data set.
    Restore {
        /// The point in time: unix milliseconds or RFC 3339 (2026-11-22T23:05:00Z).
        #[arg(long)]
        to: String,
        /// An empty (or new) folder to write the restored data set into.
        #[arg(long)]
        into: PathBuf,
    },
}

/// Longest accepted `--shards`.
pub const SHARDS_MAX: usize = 1024;

impl Config {
    /// Parse the command line, reading `--config FILE` first when given.
    pub fn load() -> Result<Config, String> {
        let cli: Vec<String> = std::env::args().collect();
        Self::load_from(cli)
    }

    pub fn load_from(cli: Vec<String>) -> Result<Config, String> {
        let first = Config::try_parse_from(&cli).map_err(|e| e.render().to_string())?;
        let config = match &first.config {
            None => first,
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read config file {}: {e}", path.display()))?;
                let mut args = vec![cli[0].clone()];
                args.extend(config_file_args(&text)?);
                args.extend(cli[1..].iter().cloned());
                Config::try_parse_from(&args).map_err(|e| format!("in config file {}: {}", path.display(), e.render()))?
            }
        };
        let mut config = config;
        // `--peers ""` (a node that others dial, none it dials) is an empty list.
        config.peers.retain(|p| !p.trim().is_empty());
        config.validate()?;
        Ok(config)
    }

    fn validate(&self) -> Result<(), String> {
        if let Some(n) = self.shards
            && (n == 0 || n > SHARDS_MAX)
        {
            return Err(format!("--shards must be between 1 and {SHARDS_MAX}, got {n}"));
        }
        if self.flush_interval_ms == 0 {
            return Err("--flush-interval-ms must be at least 1".into());
        }
        if self.checkpoint_every_segments == 0 {
            return Err("--checkpoint-every-segments must be at least 1".into());
        }
        self.output_buffer_limits().map_err(|e| format!("--client-output-buffer-limit: {e}"))?;
        if self.proto_max_bulk_len < 1024 {
            return Err("--proto-max-bulk-len must be at least 1024".into());
        }
        if self.replication_enabled() {
            match self.cluster_secret.as_deref() {
                None | Some("") => {
                    return Err("replication (--repl-port or --peers) needs --cluster-secret or MERIDIAN_CLUSTER_SECRET".into());
                }
                Some(secret) if secret.len() < 8 => return Err("--cluster-secret must be at least 8 characters".into()),
                _ => {}
            }
            let tls = [&self.repl_tls_cert, &self.repl_tls_key, &self.repl_tls_ca].iter().filter(|f| f.is_some()).count();
            if tls != 0 && tls != 3 {
                return Err("TLS for peer links needs all of --repl-tls-cert, --repl-tls-key and --repl-tls-ca".into());
            }
            if self.repl_batch_ms == 0 || self.repl_batch_ms > 10_000 {
                return Err("--repl-batch-ms must be between 1 and 10000".into());
            }
            if self.anti_entropy_interval_ms < 10 {
                return Err("--anti-entropy-interval-ms must be at least 10".into());
            }
            if self.repl_backlog_bytes < 64 * 1024 {
                return Err("--repl-backlog-bytes must be at least 64kb".into());
            }
            if let Some(bad) =
                self.peers.iter().find(|p| p.rsplit_once(':').is_none_or(|(h, port)| h.is_empty() || port.parse::<u16>().is_err()))
            {
                return Err(format!("--peers: expected host:port, got {bad:?}"));
            }
        }
        Ok(())
    }

    /// Redis's defaults, with every `--client-output-buffer-limit` applied in turn.
    pub fn output_buffer_limits(&self) -> Result<OutputBufferLimits, String> {
        OutputBufferLimits::parse(&self.client_output_buffer_limit.join(" "), &OutputBufferLimits::default())
    }

    /// Whether this node replicates: it listens for peers or dials some.
    pub fn replication_enabled(&self) -> bool {
        self.repl_port.is_some() || !self.peers.is_empty()
    }

    pub fn persistence_enabled(&self) -> bool {
        self.persistence == "on"
    }

    pub fn shard_count(&self) -> usize {
        self.shards.unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1))
    }
}

/// Turn `name value` lines into `--name value` arguments.
fn config_file_args(text: &str) -> Result<Vec<String>, String> {
    let mut args = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (name, value) = line.split_once(char::is_whitespace).ok_or_else(|| format!("line {}: expected `name value`", number + 1))?;
        let value = value.trim().trim_matches('"');
        args.push(format!("--{}", name.trim_start_matches("--")));
        args.push(value.to_string());
    }
    Ok(args)
}

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
}

/// The values `sanitize-dump-payload` takes, in Redis's order (its default first).
const SANITIZE_DUMP_PAYLOAD: [&str; 3] = ["no", "yes", "clients"];

/// The collection encoding settings Redis has (with their pre-7.0 `ziplist` aliases):
/// accepted, reported, and applied to what OBJECT ENCODING answers.
const ENCODING_SETTINGS: [(&str, Option<&str>); 5] = [
    ("hash-max-listpack-entries", Some("hash-max-ziplist-entries")),
    ("hash-max-listpack-value", Some("hash-max-ziplist-value")),
    ("set-max-intset-entries", None),
    ("zset-max-listpack-entries", Some("zset-max-ziplist-entries")),
    ("zset-max-listpack-value", Some("zset-max-ziplist-value")),
];

fn encoding_values(limits: &EncodingLimits) -> [usize; ENCODING_SETTINGS.len()] {
    [
        limits.hash_max_listpack_entries,
        limits.hash_max_listpack_value,
        limits.set_max_intset_entries,
        limits.zset_max_listpack_entries,
        limits.zset_max_listpack_value,
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
            ("max-unflushed-bytes", config.max_unflushed_bytes.to_string()),
            ("checkpoint-every-segments", config.checkpoint_every_segments.to_string()),
            ("durability", config.durability.clone()),
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
                .ok_or_else(|| format!("ERR Invalid argument '{v}' for CONFIG SET '{name}' - argument couldn't be parsed into an integer"))
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

fn parse_maxmemory_policy(text: &str) -> Result<String, String> {
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

fn parse_notify_flags(text: &str) -> Result<String, String> {
    crate::notify::Flags::parse(text).map(|_| text.to_string()).map_err(str::to_string)
}

fn parse_size_arg(text: &str) -> Result<usize, String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_file_values_are_overridden_by_flags() {
        let dir = std::env::temp_dir().join(format!("meridian-config-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("meridian.conf");
        std::fs::write(
            &path,
            "# test\nport 7000\nregion eu\nrequirepass \"secret\"\nclient-output-buffer-limit normal 1mb 0 0\nclient-output-buffer-limit pubsub 64mb 16mb 30\n",
        )
        .unwrap();
        let args = ["meridian", "--config", path.to_str().unwrap(), "--port", "7001"].map(String::from).to_vec();
        let config = Config::load_from(args).unwrap();
        assert_eq!(config.port, 7001);
        assert_eq!(config.region, "eu");
        assert_eq!(config.requirepass.as_deref(), Some("secret"));
        let limits = config.output_buffer_limits().unwrap();
        assert_eq!(limits.normal.hard_bytes, 1 << 20, "every line of a redis.conf counts");
        assert_eq!(limits.pubsub, OutputBufferLimit { hard_bytes: 64 << 20, soft_bytes: 16 << 20, soft_seconds: 30 });
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn output_buffer_limits_parse_per_class_and_print_as_redis() {
        let defaults = OutputBufferLimits::default();
        assert_eq!(defaults.to_string(), OUTPUT_BUFFER_LIMIT_DEFAULT);
        let set = OutputBufferLimits::parse("normal 1mb 512kb 10", &defaults).unwrap();
        assert_eq!(set.normal, OutputBufferLimit { hard_bytes: 1 << 20, soft_bytes: 512 << 10, soft_seconds: 10 });
        assert_eq!(set.pubsub, defaults.pubsub, "classes not named keep their limits");
        assert!(OutputBufferLimits::parse("normal 1 2", &defaults).unwrap_err().contains("Wrong number of arguments"));
        assert!(OutputBufferLimits::parse("master 1 2 3", &defaults).unwrap_err().contains("Invalid client class"));
        assert!(OutputBufferLimits::parse("pubsub x 2 3", &defaults).is_err());
    }

    #[test]
    fn only_noeviction_is_a_maxmemory_policy() {
        assert_eq!(parse_maxmemory_policy("NoEviction").unwrap(), "noeviction");
        assert!(parse_maxmemory_policy("allkeys-lru").unwrap_err().contains("never evicts"));
        assert!(parse_maxmemory_policy("bogus").unwrap_err().contains("must be one of the following"));
    }

    #[test]
    fn memory_sizes_parse_with_units() {
        assert_eq!(parse_memory_size("512mb"), Some(512 << 20));
        assert_eq!(parse_memory_size("1024"), Some(1024));
        assert_eq!(parse_memory_size("x"), None);
    }
}
