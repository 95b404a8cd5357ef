//! INFO and CONFIG replies: figures gathered from the shards and the shell, written in
//! Redis's `field:value` format so existing dashboards and tools can read them.

use std::fmt::Write;
use std::sync::atomic::Ordering;

use bytes::Bytes;

use super::ServerState;
use crate::command::ConfigCommand;
use crate::engine::kv::glob::glob_match;
use crate::protocol::Frame;
use crate::shard::ShardStats;

/// The Redis version Meridian answers to (HELLO, INFO `redis_version`), so client
/// libraries enable the features Meridian supports.
pub const REDIS_COMPAT_VERSION: &str = "7.0.15";

/// Redis's `*_human` figures: `1.50M`, `812.00K`, `0B`.
fn human_bytes(bytes: u64) -> String {
    const UNITS: [(&str, u64); 4] = [("T", 1 << 40), ("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)];
    match UNITS.iter().find(|(_, size)| bytes >= *size) {
        Some((unit, size)) => format!("{:.2}{unit}", bytes as f64 / *size as f64),
        None => format!("{bytes}B"),
    }
}

/// INFO `replication`: Redis's field names where they mean the same (every node is a
/// primary; `master_repl_offset` counts the deltas this node produced, since Meridian
/// replicates deltas rather than a byte stream), then Meridian's own: one line per
/// peer, link counters, convergence digest.
fn render_replication(out: &mut String, state: &ServerState, shards: &[ShardStats]) {
    let now = super::now_ms();
    let total = |f: fn(&ShardStats) -> u64| shards.iter().map(f).sum::<u64>();
    let digest = shards.iter().fold(0u64, |acc, s| acc ^ s.keyspace_digest);
    let Some(r) = state.replication.as_deref() else {
        let _ = write!(
            out,
            "# Replication\r\nrole:master\r\nconnected_slaves:0\r\nmaster_repl_offset:{}\r\nreplication_enabled:0\r\nnode_id:{}\r\nregion:{}\r\n\r\n",
            total(|s| s.deltas_produced),
            state.config.node_id,
            state.config.region
        );
        return;
    };
    let up = r.peers.iter().filter(|p| p.status.lock().map(|s| s.link == "up").unwrap_or(false)).count();
    let _ = write!(
        out,
        "# Replication\r\nrole:master\r\nconnected_slaves:0\r\nmaster_repl_offset:{}\r\nreplication_enabled:1\r\nnode_id:{}\r\nregion:{}\r\nrepl_port:{}\r\npeers:{}\r\npeers_up:{}\r\n",
        total(|s| s.deltas_produced),
        r.node_id,
        r.region,
        r.repl_port,
        r.peers.len(),
        up
    );
    for (i, peer) in r.peers.iter().enumerate() {
        let status = peer.status.lock().map(|s| s.clone()).unwrap_or_default();
        let (lag_ms, backlog_bytes, backlog_deltas, acked, stats) = match peer.queue.lock() {
            Ok(q) => (q.lag_ms(now), q.pending_bytes(), q.pending_deltas(), q.acked(), q.stats.clone()),
            Err(_) => Default::default(),
        };
        let ae_ago = if status.ae_last_ms == 0 { -1 } else { now.saturating_sub(status.ae_last_ms) as i64 };
        let _ = write!(
            out,
            "peer{i}:addr={},node_id={},region={},link={},lag_ms={lag_ms},backlog_bytes={backlog_bytes},backlog_deltas={backlog_deltas},acked_seq={acked},batches_sent={},bytes_sent={},deltas_acked={},backlog_overflows={},backlog_superseded={},connects={},ae_rounds={},ae_last_ms_ago={ae_ago},ae_keys_sent={},ae_keys_received={},last_error={}\r\n",
            peer.addr,
            status.remote_node.map_or(String::new(), |n| n.to_string()),
            status.remote_region,
            status.link,
            stats.batches_sent,
            stats.bytes_sent,
            stats.deltas_acked,
            stats.overflows,
            stats.superseded,
            status.connects,
            status.ae_rounds,
            status.ae_keys_sent,
            status.ae_keys_received,
            status.last_error.replace(['\r', '\n', ','], " "),
        );
    }
    let i = &r.inbound;
    let gc_lag = match r.gc.stable_ms.load(Ordering::Relaxed) {
        0 => -1,
        ms => now.saturating_sub(ms) as i64,
    };
    let _ = write!(
        out,
        "inbound_links_accepted:{}\r\ninbound_links_open:{}\r\ninbound_links_refused:{}\r\nauth_failures:{}\r\nbad_frames:{}\r\nbatches_made:{}\r\nbatches_received:{}\r\ndeltas_received:{}\r\nae_keys_received_inbound:{}\r\nremote_deltas_merged:{}\r\nclock_skew_events:{}\r\nskewed_batches:{}\r\noutbox_overflows:{}\r\ntombstones:{}\r\ntombstones_collected:{}\r\ntombstone_gc_runs:{}\r\ntombstone_gc_stable_lag_ms:{gc_lag}\r\ntombstone_gc_waiting_origins:{}\r\npeers_given_up:{}\r\nabsence_removals:{}\r\nown_writes_shipped_back:{}\r\nkeyspace_digest:{digest:016x}\r\n\r\n",
        i.connections.load(Ordering::Relaxed),
        i.open.load(Ordering::Relaxed),
        i.refused.load(Ordering::Relaxed),
        i.auth_failures.load(Ordering::Relaxed),
        i.bad_frames.load(Ordering::Relaxed),
        r.batches_made.load(Ordering::Relaxed),
        i.batches.load(Ordering::Relaxed),
        i.deltas.load(Ordering::Relaxed),
        i.ae_keys_received.load(Ordering::Relaxed),
        total(|s| s.remote_deltas_merged),
        total(|s| s.clock_skew_events),
        i.skewed_batches.load(Ordering::Relaxed),
        total(|s| s.outbox_overflows),
        total(|s| s.tombstones as u64),
        total(|s| s.tombstones_dropped),
        r.gc.runs.load(Ordering::Relaxed),
        r.stability.lock().map_or(0, |s| s.frozen_origins()),
        r.stability.lock().map_or(0, |s| s.given_up_peers(now)),
        total(|s| s.absence_removals),
        total(|s| s.own_writes_shipped_back),
    );
}

/// The sections INFO answers with no argument or `default`, in Redis's order.
const DEFAULT_SECTIONS: &[&str] =
    &["server", "clients", "memory", "persistence", "stats", "replication", "cpu", "modules", "errorstats", "cluster", "keyspace"];

/// The sections `all` and `everything` add to the default ones (Redis's `latencystats`
/// is not kept: see docs/observability.md).
const MORE_SECTIONS: &[&str] = &["commandstats"];

/// The sections asked for, each once: names (any case), `default`, `all`,
/// `everything`; none means `default`. Unknown names add nothing, as in Redis.
fn sections_wanted(requested: &[Bytes]) -> Vec<String> {
    let mut wanted: Vec<String> = Vec::new();
    let mut add = |name: &str| {
        if !wanted.iter().any(|w| w == name) {
            wanted.push(name.to_owned());
        }
    };
    if requested.is_empty() {
        DEFAULT_SECTIONS.iter().for_each(|s| add(s));
    }
    for name in requested {
        let name = String::from_utf8_lossy(name).to_ascii_lowercase();
        match name.as_str() {
            "default" => DEFAULT_SECTIONS.iter().for_each(|s| add(s)),
            "all" | "everything" => DEFAULT_SECTIONS.iter().chain(MORE_SECTIONS).for_each(|s| add(s)),
            other => add(other),
        }
    }
    wanted
}

/// INFO `cpu`: seconds of CPU this process (and its children, and the thread that
/// answers) spent in the kernel and in user space, as Redis reports them.
fn render_cpu(out: &mut String) {
    fn usage(who: libc::c_int) -> (String, String) {
        // SAFETY: getrusage writes a `rusage` it is given room for.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: a valid `who` and a pointer to a live `rusage`.
        if unsafe { libc::getrusage(who, &mut usage) } != 0 {
            return ("0.000000".to_owned(), "0.000000".to_owned());
        }
        let seconds = |t: libc::timeval| format!("{}.{:06}", t.tv_sec, t.tv_usec);
        (seconds(usage.ru_stime), seconds(usage.ru_utime))
    }
    let (sys, user) = usage(libc::RUSAGE_SELF);
    let (sys_children, user_children) = usage(libc::RUSAGE_CHILDREN);
    let (sys_thread, user_thread) = usage(libc::RUSAGE_THREAD);
    let _ = write!(
        out,
        "# CPU\r\nused_cpu_sys:{sys}\r\nused_cpu_user:{user}\r\nused_cpu_sys_children:{sys_children}\r\nused_cpu_user_children:{user_children}\r\nused_cpu_sys_main_thread:{sys_thread}\r\nused_cpu_user_main_thread:{user_thread}\r\n\r\n"
    );
}

/// The mean time to live of the keys with one, in ms (0 without any), as INFO's
/// `avg_ttl`: exact, from each shard's sum of expiry instants (Redis estimates it by
/// sampling). A key past its instant that active expiry has not removed yet counts 0.
fn average_ttl_ms(shards: &[ShardStats], expires: u64, now_ms: u64) -> u64 {
    if expires == 0 {
        return 0;
    }
    let mean_at = shards.iter().map(|s| s.expiry_sum_ms).sum::<u128>() / u128::from(expires);
    u64::try_from(mean_at.saturating_sub(u128::from(now_ms))).unwrap_or(u64::MAX)
}

/// Render INFO for the requested sections (none, `default`, `all`, `everything`, or names).
pub fn render(state: &ServerState, shards: &[ShardStats], requested: &[Bytes]) -> String {
    let wanted = sections_wanted(requested);
    let include = |name: &str| wanted.iter().any(|w| w == name);
    let total = |f: fn(&ShardStats) -> u64| shards.iter().map(f).sum::<u64>();
    let mut out = String::new();
    let uptime = state.started.elapsed().as_secs();

    if include("server") {
        let _ = write!(
            out,
            "# Server\r\nredis_version:{REDIS_COMPAT_VERSION}\r\nmeridian_version:{}\r\nredis_mode:standalone\r\nos:{} {}\r\narch_bits:64\r\nprocess_id:{}\r\nrun_id:{}\r\ntcp_port:{}\r\nuptime_in_seconds:{}\r\nuptime_in_days:{}\r\nnode_id:{}\r\nregion:{}\r\nshards:{}\r\nexecutable:{}\r\n\r\n",
            env!("CARGO_PKG_VERSION"),
            std::env::consts::OS,
            std::env::consts::ARCH,
            std::process::id(),
            state.run_id,
            state.port,
            uptime,
            uptime / 86_400,
            state.config.node_id,
            state.config.region,
            shards.len(),
            std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_default(),
        );
    }
    if include("clients") {
        let _ = write!(
            out,
            "# Clients\r\nconnected_clients:{}\r\nmaxclients:{}\r\nblocked_clients:{}\r\n\r\n",
            state.clients.count(),
            state.runtime.maxclients(),
            state.waiters.blocked_clients()
        );
    }
    if include("memory") {
        let used = super::memory::allocated_bytes();
        let rss = super::memory::resident_bytes();
        let maxmemory = state.runtime.maxmemory();
        let _ = write!(
            out,
            "# Memory\r\nused_memory:{used}\r\nused_memory_human:{}\r\nused_memory_rss:{rss}\r\nused_memory_rss_human:{}\r\nmaxmemory:{maxmemory}\r\nmaxmemory_human:{}\r\nmaxmemory_policy:{}\r\nused_memory_sampled:{}\r\nmem_allocator:jemalloc\r\nlazyfree_pending_objects:{}\r\n\r\n",
            human_bytes(used),
            human_bytes(rss),
            human_bytes(maxmemory as u64),
            crate::config::MAXMEMORY_POLICY,
            state.memory.reported_bytes(maxmemory),
            crate::engine::kv::lazyfree::counters().0,
        );
    }
    if include("persistence")
        && let Ok(p) = state.persistence.lock()
    {
        let s = &p.stats;
        let _ = write!(
            out,
            "# Persistence\r\nloading:0\r\nasync_loading:0\r\nrdb_changes_since_last_save:{}\r\nrdb_bgsave_in_progress:0\r\nrdb_last_save_time:{}\r\nrdb_last_bgsave_status:ok\r\naof_enabled:0\r\naof_rewrite_in_progress:0\r\npersistence_enabled:{}\r\nobject_store:{}\r\nmanifest_epoch:{}\r\nlast_segment:{}\r\nlast_checkpoint:{}\r\nsegments_written:{}\r\nsegments_for_waiters:{}\r\ndurability_waiters:{}\r\nsegment_bytes_written:{}\r\ncheckpoints_written:{}\r\npending_deltas:{}\r\npending_bytes:{}\r\nstore_puts:{}\r\nstore_deletes:{}\r\nstore_errors:{}\r\nlast_store_error:{}\r\nrecovered_checkpoint_parts:{}\r\nrecovered_segments:{}\r\nrecovered_deltas:{}\r\nrecovery_data_loss:{}\r\nfenced:{}\r\n\r\n",
            total(|s| s.changes).saturating_sub(state.stats.changes_at_save.load(Ordering::Relaxed)),
            state.stats.saved_at_secs.load(Ordering::Relaxed),
            p.enabled as u8,
            p.location,
            s.manifest_epoch,
            s.last_segment,
            s.last_checkpoint,
            s.segments_written,
            s.segments_for_waiters,
            state.durability.waiters.load(Ordering::Relaxed),
            s.segment_bytes_written,
            s.checkpoints_written,
            s.pending_deltas,
            s.pending_bytes,
            s.puts,
            s.deletes,
            s.errors,
            s.last_error.as_deref().unwrap_or("").replace(['\r', '\n'], " "),
            p.recovered.checkpoint_parts_loaded,
            p.recovered.segments_replayed,
            p.recovered.deltas_applied,
            p.recovered.loss.as_deref().unwrap_or("").replace(['\r', '\n'], " "),
            p.fenced.is_some() as u8,
        );
    }
    if include("replication") {
        render_replication(&mut out, state, shards);
    }
    if include("stats") {
        let s = &state.stats;
        let pubsub = state.pubsub.counts();
        let _ = write!(
            out,
            "# Stats\r\ntotal_connections_received:{}\r\ntotal_commands_processed:{}\r\nrejected_connections:{}\r\nclient_output_buffer_limit_disconnections:{}\r\ntotal_net_input_bytes:{}\r\ntotal_net_output_bytes:{}\r\nexpired_keys:{}\r\nkeyspace_hits:{}\r\nkeyspace_misses:{}\r\ndeltas_produced:{}\r\ndelta_log_entries:{}\r\ndelta_log_bytes:{}\r\npubsub_channels:{}\r\npubsub_patterns:{}\r\npubsub_shardchannels:{}\r\npubsub_clients_disconnected:{}\r\npubsub_messages_sent_to_peers:{}\r\npubsub_messages_dropped_unsent:{}\r\npubsub_messages_received_from_peers:{}\r\npubsub_messages_dropped_late:{}\r\nlazyfreed_objects:{}\r\ntotal_error_replies:{}\r\n\r\n",
            s.connections_received.load(Ordering::Relaxed),
            s.commands_processed(),
            s.connections_rejected.load(Ordering::Relaxed),
            s.output_buffer_disconnections.load(Ordering::Relaxed) + state.pubsub.disconnected.load(Ordering::Relaxed),
            s.net_input_bytes(),
            s.net_output_bytes(),
            total(|s| s.expired_keys),
            total(|s| s.keyspace_hits),
            total(|s| s.keyspace_misses),
            total(|s| s.deltas_produced),
            total(|s| s.delta_log_len as u64),
            total(|s| s.delta_log_bytes as u64),
            pubsub.0,
            pubsub.1,
            pubsub.2,
            state.pubsub.disconnected.load(Ordering::Relaxed),
            state.pubsub.sent_to_peers.load(Ordering::Relaxed),
            state.pubsub.dropped_unsent.load(Ordering::Relaxed),
            state.pubsub.received_from_peers.load(Ordering::Relaxed),
            state.pubsub.dropped_late.load(Ordering::Relaxed),
            crate::engine::kv::lazyfree::counters().1,
            state.command_stats.error_replies(),
        );
    }
    if include("cpu") {
        render_cpu(&mut out);
    }
    if include("modules") {
        out.push_str("# Modules\r\n\r\n");
    }
    if include("commandstats") {
        state.command_stats.render_commandstats(&mut out);
    }
    if include("errorstats") {
        state.command_stats.render_errorstats(&mut out);
    }
    if include("cluster") {
        out.push_str("# Cluster\r\ncluster_enabled:0\r\n\r\n");
    }
    if include("keyspace") {
        out.push_str("# Keyspace\r\n");
        let keys = total(|s| s.keys as u64);
        if keys > 0 {
            let expires = total(|s| s.expiring_keys as u64);
            let avg_ttl = average_ttl_ms(shards, expires, super::now_ms());
            let _ = write!(out, "db0:keys={keys},expires={expires},avg_ttl={avg_ttl}\r\n");
        }
        out.push_str("\r\n");
    }
    while out.ends_with("\r\n\r\n") {
        out.truncate(out.len() - 2);
    }
    out
}

pub fn config(state: &ServerState, command: ConfigCommand) -> Frame {
    match command {
        ConfigCommand::Get(patterns) => {
            // As Redis: an exact name is echoed as the client spelled it; a glob
            // pattern answers with the canonical names it matches, each once.
            let entries = state.runtime.entries(&state.config);
            let mut pairs: Vec<(Frame, Frame)> = Vec::new();
            let mut answered: Vec<&str> = Vec::new();
            for pattern in &patterns {
                let lowered = pattern.to_ascii_lowercase();
                let is_glob = lowered.iter().any(|b| matches!(b, b'*' | b'?' | b'['));
                for (name, value) in &entries {
                    let hit = if is_glob { glob_match(&lowered, name.as_bytes()) } else { lowered == name.as_bytes() };
                    if hit && !answered.contains(name) {
                        answered.push(name);
                        let shown = if is_glob { Bytes::from_static(name.as_bytes()) } else { pattern.clone() };
                        pairs.push((Frame::Bulk(shown), Frame::Bulk(Bytes::from(value.clone()))));
                    }
                }
            }
            Frame::Map(pairs)
        }
        ConfigCommand::Set(pairs) => {
            for (name, value) in &pairs {
                let name = String::from_utf8_lossy(name).to_ascii_lowercase();
                let value = String::from_utf8_lossy(value);
                if let Err(e) = state.runtime.set(&name, &value) {
                    return Frame::error(e);
                }
                if name == "maxmemory" {
                    // The timer samples only while a limit is set: check the new one
                    // against a figure of now.
                    state.memory.sample();
                    if state.memory.over(state.runtime.maxmemory()) {
                        // As Redis: say so; with noeviction, client writes now get -OOM.
                        tracing::warn!(
                            "the new maxmemory value set via CONFIG SET ({}) is smaller than the current memory usage ({}): client writes are refused until it drops",
                            state.runtime.maxmemory(),
                            state.memory.used_bytes()
                        );
                    }
                }
                if name == "client-output-buffer-limit" {
                    state.pubsub.set_mailbox_bytes_max(state.runtime.output_buffer_limits().pubsub.hard_bytes);
                }
            }
            Frame::ok()
        }
        ConfigCommand::ResetStat => {
            state.stats.reset();
            state.command_stats.reset();
            Frame::ok()
        }
        ConfigCommand::Help => Frame::Array(
            [
                "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "GET <pattern>",
                "SET <directive> <value>",
                "RESETSTAT",
                "HELP",
            ]
            .iter()
            .map(|l| Frame::simple(l))
            .collect(),
        ),
    }
}
