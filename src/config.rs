//! Every setting: its command-line flag, its default, and its `CONFIG GET` name.
//!
//! Settings come from the command line, optionally preceded by a `--config FILE` in
//! Redis's format (`name value` per line, `#` comments); flags given on the command
//! line win over the file. A few settings can change at run time (`CONFIG SET`); they
//! live in [`RuntimeConfig`] (`config/runtime.rs`).

use std::path::PathBuf;

use clap::Parser;

mod runtime;

pub use runtime::*;
use runtime::{parse_maxmemory_policy, parse_notify_flags, parse_size_arg};

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

    /// Local folder only (`--data-dir`): `on` syncs every stored object (segment,
    /// checkpoint part, manifest) and its folder entry to the device before it counts
    /// as stored, so it survives the machine losing power; `off` skips the syncs (a
    /// stored object then survives a killed process, not a power cut). S3 and MinIO
    /// store durably by themselves.
    #[arg(long, default_value = "on", value_parser = ["on", "off"])]
    pub fsync: String,

    /// Start even if recovery finds a corrupt or missing object, keeping what could be
    /// recovered up to it (the rest is lost; this is logged loudly).
    #[arg(long)]
    pub accept_data_loss: bool,

    /// Run on an object store that ignores conditional writes, without fencing.
    #[arg(long)]
    pub allow_unfenced: bool,

    /// After its last message, a shard thread keeps polling its mailbox (and a
    /// connection the replies it waits for) this many microseconds before it sleeps,
    /// yielding to its other tasks meanwhile: a message that comes in that time is
    /// served without a wake-up, which costs tens of microseconds on a VM (a halted
    /// vCPU). Costs up to that much CPU per idle spell of each thread: worth it only
    /// when each shard has a core of its own (with more shards than cores it is off).
    /// 0 (default): sleep at once.
    #[arg(long, default_value_t = 0)]
    pub idle_poll_us: u64,

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

    /// A peer not heard from for this long is given up on: tombstones are collected
    /// without it, and anti-entropy catches it up when it returns (0: never give up,
    /// and keep every tombstone until every peer has it).
    #[arg(long, default_value_t = 3_600_000)]
    pub peer_horizon_ms: u64,

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

/// Longest accepted `--idle-poll-us` (10 ms: past that, sleeping costs nothing worth saving).
pub const IDLE_POLL_US_MAX: u64 = 10_000;

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
        // Polling threads that outnumber the cores would take turns on them, each
        // holding a core the others need: then never poll (CONFIG GET shows the 0).
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        if config.shard_count() > cores {
            config.idle_poll_us = 0;
        }
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
        if self.idle_poll_us > IDLE_POLL_US_MAX {
            return Err(format!("--idle-poll-us must be at most {IDLE_POLL_US_MAX}, got {}", self.idle_poll_us));
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
            if self.peer_horizon_ms != 0 && self.peer_horizon_ms < 5_000 {
                // Idle peers send a batch every two seconds (`shell::replication`).
                return Err("--peer-horizon-ms must be 0 (never) or at least 5000".into());
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

    /// How long a thread polls before it sleeps (`--idle-poll-us`).
    pub fn idle_poll(&self) -> std::time::Duration {
        std::time::Duration::from_micros(self.idle_poll_us)
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
    fn idle_polling_is_bounded_and_off_when_shards_outnumber_cores() {
        let load = |extra: &[&str]| Config::load_from(["meridian"].iter().chain(extra).map(|s| s.to_string()).collect());
        assert_eq!(load(&[]).unwrap().idle_poll(), std::time::Duration::ZERO, "off by default");
        assert_eq!(load(&["--shards", "1", "--idle-poll-us", "200"]).unwrap().idle_poll_us, 200);
        let too_long = load(&["--idle-poll-us", "10001"]).unwrap_err();
        assert!(too_long.contains("--idle-poll-us must be at most 10000"), "{too_long}");
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()).to_string();
        assert_eq!(load(&["--shards", &cores, "--idle-poll-us", "200"]).unwrap().idle_poll_us, 200, "a core per shard");
        let more = (cores.parse::<usize>().unwrap() + 1).to_string();
        assert_eq!(load(&["--shards", &more, "--idle-poll-us", "200"]).unwrap().idle_poll_us, 0, "threads would share cores");
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
