//! The Prometheus text endpoint (`--metrics-port`): the figures INFO shows, in the
//! exposition format, at `GET /metrics`. A deliberately small HTTP/1.1 responder: one
//! request per connection, request head bounded, anything but `GET /metrics` gets 404.

use std::fmt::Write;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::ServerState;
use crate::shard::{ShardOp, ShardReply, ShardStats};

/// Longest request head read.
const REQUEST_HEAD_BYTES_MAX: usize = 8 * 1024;
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

pub async fn serve(listener: tokio::net::TcpListener, state: Arc<ServerState>) {
    loop {
        let Ok((mut stream, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let state = state.clone();
        tokio::spawn(async move {
            let _ = tokio::time::timeout(REQUEST_TIMEOUT, answer(&mut stream, &state)).await;
        });
    }
}

async fn answer(stream: &mut tokio::net::TcpStream, state: &ServerState) -> std::io::Result<()> {
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buf).await?;
        if n == 0 || head.len() + n > REQUEST_HEAD_BYTES_MAX {
            return Ok(());
        }
        head.extend_from_slice(&buf[..n]);
    }
    let wanted = head.starts_with(b"GET /metrics ") || head.starts_with(b"GET /metrics?");
    let (status, body) = if wanted { ("200 OK", render(state).await) } else { ("404 Not Found", "not found: try /metrics\n".to_string()) };
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}

async fn shard_stats(state: &ServerState) -> Vec<ShardStats> {
    let mut stats = Vec::new();
    for shard in 0..state.router.shard_count() {
        if let Ok(replies) = state.router.send(shard, vec![ShardOp::Stats]).await.await {
            stats.extend(replies.into_iter().filter_map(|r| if let ShardReply::Stats(s) = r { Some(*s) } else { None }));
        }
    }
    stats
}

fn metric(out: &mut String, name: &str, kind: &str, help: &str, value: impl std::fmt::Display) {
    let _ = write!(out, "# HELP meridian_{name} {help}\n# TYPE meridian_{name} {kind}\nmeridian_{name} {value}\n");
}

/// The label value escaped as the exposition format wants.
fn label(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

pub async fn render(state: &ServerState) -> String {
    let shards = shard_stats(state).await;
    let total = |f: fn(&ShardStats) -> u64| shards.iter().map(f).sum::<u64>();
    let mut out = String::new();
    metric(&mut out, "keys", "gauge", "Keys stored.", total(|s| s.keys as u64));
    metric(&mut out, "expiring_keys", "gauge", "Keys with a TTL.", total(|s| s.expiring_keys as u64));
    metric(&mut out, "expired_keys_total", "counter", "Keys removed by expiry.", total(|s| s.expired_keys));
    metric(&mut out, "keyspace_hits_total", "counter", "Reads that found their key.", total(|s| s.keyspace_hits));
    metric(&mut out, "keyspace_misses_total", "counter", "Reads that did not.", total(|s| s.keyspace_misses));
    metric(&mut out, "tombstones", "gauge", "Removal records kept for replication.", total(|s| s.tombstones as u64));
    metric(&mut out, "connected_clients", "gauge", "Client connections.", state.clients.count());
    metric(&mut out, "commands_processed_total", "counter", "Commands run.", state.stats.commands_processed());
    metric(&mut out, "uptime_seconds", "gauge", "Seconds since start.", state.started.elapsed().as_secs());
    metric(
        &mut out,
        "used_memory_bytes",
        "gauge",
        "Bytes the allocator holds (sampled every 100 ms while maxmemory is set).",
        state.memory.reported_bytes(state.runtime.maxmemory()),
    );
    metric(&mut out, "maxmemory_bytes", "gauge", "Client writes get -OOM past this (0: no limit).", state.runtime.maxmemory());
    metric(
        &mut out,
        "client_output_buffer_limit_disconnections_total",
        "counter",
        "Clients closed for overcoming their output buffer limit.",
        state.stats.output_buffer_disconnections.load(Ordering::Relaxed) + state.pubsub.disconnected.load(Ordering::Relaxed),
    );
    if let Ok(p) = state.persistence.lock()
        && p.enabled
    {
        let s = &p.stats;
        metric(&mut out, "persistence_segments_written_total", "counter", "Segments stored.", s.segments_written);
        metric(&mut out, "persistence_segment_bytes_total", "counter", "Segment bytes stored.", s.segment_bytes_written);
        metric(&mut out, "persistence_pending_bytes", "gauge", "Writes not yet stored, in bytes.", s.pending_bytes);
        metric(&mut out, "persistence_store_errors_total", "counter", "Failed object-store requests.", s.errors);
        metric(&mut out, "persistence_last_segment", "gauge", "Sequence of the last stored segment.", s.last_segment);
    }
    let Some(r) = state.replication.as_deref() else { return out };
    let now = super::now_ms();
    let peers: Vec<_> = r
        .peers
        .iter()
        .map(|p| {
            let status = p.status.lock().map(|s| s.clone()).unwrap_or_default();
            let queue = p.queue.lock().map(|q| (q.lag_ms(now), q.pending_bytes(), q.pending_deltas(), q.stats.clone())).unwrap_or_default();
            (p.addr.clone(), status, queue)
        })
        .collect();
    type PeerFigure = fn(&(String, super::replication::PeerStatus, (u64, usize, usize, crate::replication::peer::PeerQueueStats))) -> u64;
    let per_peer: [(&str, &str, &str, PeerFigure); 10] = [
        ("repl_peer_up", "gauge", "1 when the link to the peer is authenticated and open.", |p| (p.1.link == "up") as u64),
        ("repl_peer_lag_ms", "gauge", "Age of the oldest batch the peer has not acknowledged.", |p| p.2.0),
        ("repl_peer_backlog_bytes", "gauge", "Unacknowledged batch bytes queued for the peer.", |p| p.2.1 as u64),
        ("repl_peer_backlog_deltas", "gauge", "Unacknowledged deltas queued for the peer.", |p| p.2.2 as u64),
        ("repl_peer_bytes_sent_total", "counter", "Batch bytes written to the peer.", |p| p.2.3.bytes_sent),
        ("repl_peer_deltas_acked_total", "counter", "Deltas the peer acknowledged.", |p| p.2.3.deltas_acked),
        ("repl_peer_backlog_overflows_total", "counter", "Times the queue was dropped for anti-entropy.", |p| p.2.3.overflows),
        ("repl_peer_ae_rounds_total", "counter", "Anti-entropy rounds completed with the peer.", |p| p.1.ae_rounds),
        ("repl_peer_ae_keys_sent_total", "counter", "Key states sent in anti-entropy.", |p| p.1.ae_keys_sent),
        ("repl_peer_ae_keys_received_total", "counter", "Key states received in anti-entropy.", |p| p.1.ae_keys_received),
    ];
    for (name, kind, help, figure) in per_peer {
        let _ = write!(out, "# HELP meridian_{name} {help}\n# TYPE meridian_{name} {kind}\n");
        for peer in &peers {
            let node = peer.1.remote_node.map_or(String::new(), |n| n.to_string());
            let _ = writeln!(out, "meridian_{name}{{peer=\"{}\",node_id=\"{node}\"}} {}", label(&peer.0), figure(peer));
        }
    }
    let i = &r.inbound;
    metric(
        &mut out,
        "repl_auth_failures_total",
        "counter",
        "Peer links refused for a failed proof.",
        i.auth_failures.load(Ordering::Relaxed),
    );
    metric(&mut out, "repl_bad_frames_total", "counter", "Peer links closed for a bad frame.", i.bad_frames.load(Ordering::Relaxed));
    metric(
        &mut out,
        "repl_inbound_links_refused_total",
        "counter",
        "Connections to the replication port closed because too many were open.",
        i.refused.load(Ordering::Relaxed),
    );
    metric(&mut out, "repl_batches_received_total", "counter", "Batches merged from peers.", i.batches.load(Ordering::Relaxed));
    metric(&mut out, "repl_deltas_received_total", "counter", "Deltas received in batches.", i.deltas.load(Ordering::Relaxed));
    metric(
        &mut out,
        "repl_clock_skew_events_total",
        "counter",
        "Remote stamps beyond --max-clock-skew-ms.",
        total(|s| s.clock_skew_events),
    );
    metric(&mut out, "repl_outbox_overflows_total", "counter", "Times a shard outbox passed its bound.", total(|s| s.outbox_overflows));
    metric(&mut out, "tombstones_collected_total", "counter", "Tombstones dropped once causally stable.", total(|s| s.tombstones_dropped));
    let stable_ms = r.gc.stable_ms.load(Ordering::Relaxed);
    metric(
        &mut out,
        "tombstone_gc_stable_lag_ms",
        "gauge",
        "Age of the oldest entry of the causally stable vector (0: none yet).",
        if stable_ms == 0 { 0 } else { now.saturating_sub(stable_ms) },
    );
    out
}
