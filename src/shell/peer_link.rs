//! Peer links: TCP connections between replicating nodes (DESIGN §6).
//!
//! Every node dials every peer it is given; a link carries one direction of data. The
//! dialer sends its batches and starts anti-entropy rounds; the listener merges what
//! arrives, acknowledges batches and answers rounds. Both ends first prove they know
//! the cluster secret (`replication::auth`); until then only handshake frames, small
//! ones, are read. Any bad frame closes the link with a logged reason.
//!
//! The dialer reads on a task of its own that never writes, so two nodes writing large
//! frames at each other can't deadlock.

mod liveness;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

use super::now_ms;
use super::replication::{Peer, Replication, delta_marks, export_leaves, merge_into_shards, merge_leaf_states, node_leaves};
use super::router::Router;
use crate::replication::anti_entropy::{AntiEntropy, LEAVES_PER_ROUND_MAX, RoundWait, answer_groups};
use crate::replication::auth::{self, Exchange, Role};
use crate::replication::stability::BatchReceipt;
use crate::replication::wire::{self, HANDSHAKE_FRAME_BYTES_MAX, Message};
use liveness::{give_up_stalled_rounds, until_given_up};

const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
const RECONNECT_DELAY_MIN: Duration = Duration::from_millis(100);
const RECONNECT_DELAY_MAX: Duration = Duration::from_secs(2);
/// An anti-entropy round with no answer for this long is abandoned (its connection is
/// most likely gone; the next connection starts a new one).
const AE_ROUND_TIMEOUT_MS: u64 = 60_000;
/// Leaves per anti-entropy states message (bounds one message's size).
const AE_LEAVES_PER_MESSAGE: usize = 16;

/// The two halves of a link, over plain TCP or TLS.
type LinkRead = Box<dyn AsyncRead + Unpin + Send>;
type LinkWrite = Box<dyn AsyncWrite + Unpin + Send>;

fn plain(stream: TcpStream) -> (LinkRead, LinkWrite) {
    let (read, write) = stream.into_split();
    (Box::new(read), Box::new(write))
}

/// Reads whole frames off a stream.
struct FrameReader<R> {
    stream: R,
    buf: BytesMut,
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    fn new(stream: R) -> Self {
        FrameReader { stream, buf: BytesMut::with_capacity(64 * 1024) }
    }

    /// The next message. Cancel-safe: a partial frame stays in the buffer.
    async fn next(&mut self, frame_bytes_max: usize) -> Result<Message, LinkError> {
        loop {
            if let Some(message) = wire::decode_frame(&mut self.buf, frame_bytes_max).map_err(|e| LinkError::BadFrame(e.to_string()))? {
                return Ok(message);
            }
            match self.stream.read_buf(&mut self.buf).await {
                Ok(0) => return Err(LinkError::Closed),
                Ok(_) => {}
                Err(e) => return Err(LinkError::Io(e.to_string())),
            }
        }
    }
}

#[derive(Debug)]
enum LinkError {
    Closed,
    Io(String),
    BadFrame(String),
    /// The other end could not prove the secret, or refused us.
    Auth(String),
    Protocol(String),
    /// Tombstone collection left the peer out while linked (`liveness::until_given_up`).
    GivenUp,
}

impl std::fmt::Display for LinkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LinkError::Closed => write!(f, "connection closed by the peer"),
            LinkError::Io(e) => write!(f, "{e}"),
            LinkError::BadFrame(e) => write!(f, "bad frame: {e}"),
            LinkError::Auth(e) => write!(f, "authentication: {e}"),
            LinkError::Protocol(e) => write!(f, "protocol: {e}"),
            LinkError::GivenUp => {
                write!(f, "given up on: silent past --peer-horizon-ms, so the link is dropped and will be caught up anew")
            }
        }
    }
}

async fn send<W: AsyncWrite + Unpin>(stream: &mut W, message: &Message) -> Result<(), LinkError> {
    stream.write_all(&wire::encode(message)).await.map_err(|e| LinkError::Io(e.to_string()))
}

fn set_status(peer: &Peer, f: impl FnOnce(&mut super::replication::PeerStatus)) {
    if let Ok(mut status) = peer.status.lock() {
        f(&mut status);
    }
}

// ---------------------------------------------------------------------------------
// Listener side
// ---------------------------------------------------------------------------------

/// Inbound links open at once at most, handshakes included: a flood of connections to
/// the replication port costs at most this many read buffers and tasks (each
/// unauthenticated one for at most `HANDSHAKE_TIMEOUT`). A cluster needs one per peer.
pub const INBOUND_LINKS_MAX: usize = 256;

pub async fn accept_loop(listener: tokio::net::TcpListener, replication: Arc<Replication>, router: Router) {
    loop {
        match listener.accept().await {
            Ok((stream, addr)) => {
                replication.inbound.connections.fetch_add(1, Ordering::Relaxed);
                if replication.inbound.open.fetch_add(1, Ordering::Relaxed) >= INBOUND_LINKS_MAX {
                    replication.inbound.open.fetch_sub(1, Ordering::Relaxed);
                    replication.inbound.refused.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(%addr, "peer link from {addr} refused: {INBOUND_LINKS_MAX} inbound links are open");
                    drop(stream);
                    continue;
                }
                let _ = stream.set_nodelay(true);
                let replication = replication.clone();
                let router = router.clone();
                tokio::spawn(async move {
                    match serve_inbound(stream, &replication, &router).await {
                        Ok(()) | Err(LinkError::Closed) => tracing::debug!(%addr, "peer link closed"),
                        Err(e) => tracing::warn!(%addr, "peer link from {addr} closed: {e}"),
                    }
                    replication.inbound.open.fetch_sub(1, Ordering::Relaxed);
                });
            }
            Err(e) => {
                tracing::warn!("replication accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

async fn serve_inbound(stream: TcpStream, replication: &Replication, router: &Router) -> Result<(), LinkError> {
    let (read, mut write) = match &replication.tls {
        None => plain(stream),
        Some(tls) => match tokio::time::timeout(HANDSHAKE_TIMEOUT, tls.acceptor.accept(stream)).await {
            Ok(Ok(stream)) => {
                let (read, write) = tokio::io::split(stream);
                (Box::new(read) as LinkRead, Box::new(write) as LinkWrite)
            }
            Ok(Err(e)) => {
                replication.inbound.auth_failures.fetch_add(1, Ordering::Relaxed);
                return Err(LinkError::Auth(format!("TLS: {e}")));
            }
            Err(_) => return Err(LinkError::Protocol("TLS handshake timed out".into())),
        },
    };
    let mut reader = FrameReader::new(read);
    let handshake = tokio::time::timeout(HANDSHAKE_TIMEOUT, accept_handshake(&mut reader, &mut write, replication)).await;
    let remote = match handshake {
        Ok(Ok(remote)) => remote,
        Ok(Err(e)) => {
            match &e {
                LinkError::Auth(_) => replication.inbound.auth_failures.fetch_add(1, Ordering::Relaxed),
                _ => replication.inbound.bad_frames.fetch_add(1, Ordering::Relaxed),
            };
            return Err(e);
        }
        Err(_) => return Err(LinkError::Protocol("handshake timed out".into())),
    };
    tracing::info!(remote_node = remote, "peer node {remote} connected");
    let mut last_skew_log_ms = 0u64;
    loop {
        let message = match reader.next(replication.frame_bytes_max).await {
            Ok(message) => message,
            Err(e) => {
                if let LinkError::BadFrame(_) = e {
                    replication.inbound.bad_frames.fetch_add(1, Ordering::Relaxed);
                }
                return Err(e);
            }
        };
        match message {
            Message::Batch { seq, session, gap, stable, seen, deltas } => {
                let now = now_ms();
                if stable.physical_ms() > now.saturating_add(replication.max_clock_skew_ms) {
                    replication.inbound.skewed_batches.fetch_add(1, Ordering::Relaxed);
                    if now.saturating_sub(last_skew_log_ms) > 10_000 {
                        last_skew_log_ms = now;
                        tracing::warn!(
                            remote_node = remote,
                            "peer node {remote}'s clock is {} ms ahead of ours (more than --max-clock-skew-ms {})",
                            stable.physical_ms() - now,
                            replication.max_clock_skew_ms
                        );
                    }
                }
                replication.inbound.batches.fetch_add(1, Ordering::Relaxed);
                replication.inbound.deltas.fetch_add(deltas.len() as u64, Ordering::Relaxed);
                let positions = merge_into_shards(router, deltas).await.map_err(LinkError::Io)?;
                if let Ok(mut stability) = replication.stability.lock() {
                    stability.heard_from(remote, now_ms());
                    stability.on_batch(BatchReceipt { origin: remote, session, seq, gap, stable, seen }, positions);
                }
                send(&mut write, &Message::Ack { seq }).await?;
            }
            Message::Publish { sent_ms, shard, channel, message } => {
                replication.pubsub.deliver_remote(sent_ms, now_ms(), shard, &channel, &message);
            }
            Message::AeGroups { round, groups } => {
                let mine = node_leaves(router).await.map_err(LinkError::Io)?;
                send(&mut write, &answer_groups(round, &mine, &groups)).await?;
            }
            Message::AeStates { round, reply_wanted, leaves, deltas } => {
                replication.inbound.ae_keys_received.fetch_add(deltas.len() as u64, Ordering::Relaxed);
                merge_leaf_states(router, &leaves, deltas).await.map_err(LinkError::Io)?;
                if reply_wanted {
                    let mine = export_leaves(router, &leaves).await.map_err(LinkError::Io)?;
                    // Unanswered when our stamps may not leave yet: the round times out.
                    if replication.may_send(&mine) {
                        send(&mut write, &Message::AeStates { round, reply_wanted: false, leaves, deltas: mine }).await?;
                    }
                }
            }
            other => {
                let reason = format!("unexpected {} message on an inbound link", other.name());
                let _ = send(&mut write, &Message::Refused { reason: reason.clone() }).await;
                return Err(LinkError::Protocol(reason));
            }
        }
    }
}

/// The listener's half of the handshake; returns the dialer's node id.
async fn accept_handshake<R: AsyncRead + Unpin, W: AsyncWrite + Unpin>(
    reader: &mut FrameReader<R>,
    write: &mut W,
    replication: &Replication,
) -> Result<u16, LinkError> {
    let Message::Hello { node_id, nonce: dialer_nonce, .. } = reader.next(HANDSHAKE_FRAME_BYTES_MAX).await? else {
        return Err(LinkError::Protocol("expected hello".into()));
    };
    if node_id == replication.node_id {
        let reason = format!("node id {node_id} is this node's own: every node needs its own --node-id");
        let _ = send(write, &Message::Refused { reason: reason.clone() }).await;
        return Err(LinkError::Protocol(reason));
    }
    let exchange = Exchange { dialer_nonce, listener_nonce: rand::random(), dialer_id: node_id, listener_id: replication.node_id };
    let proof = auth::prove(&replication.secret, Role::Listener, &exchange);
    send(
        write,
        &Message::Challenge { node_id: replication.node_id, region: replication.region.clone(), nonce: exchange.listener_nonce, proof },
    )
    .await?;
    let proof = match reader.next(HANDSHAKE_FRAME_BYTES_MAX).await? {
        Message::Proof { proof } => proof,
        Message::Refused { reason } => return Err(LinkError::Auth(format!("node {node_id} refused our proof ({reason})"))),
        other => return Err(LinkError::Protocol(format!("expected proof, got {}", other.name()))),
    };
    if !auth::verify(&replication.secret, Role::Dialer, &exchange, &proof) {
        let _ = send(write, &Message::Refused { reason: "authentication failed: wrong cluster secret".into() }).await;
        return Err(LinkError::Auth(format!("node {node_id} failed to prove the cluster secret")));
    }
    send(write, &Message::Welcome).await?;
    Ok(node_id)
}

// ---------------------------------------------------------------------------------
// Dialer side
// ---------------------------------------------------------------------------------

pub async fn dial_loop(peer: Arc<Peer>, replication: Arc<Replication>, router: Router) {
    let mut delay = RECONNECT_DELAY_MIN;
    let mut last_error = String::new();
    loop {
        set_status(&peer, |s| s.link = "connecting");
        let result = connect_and_serve(&peer, &replication, &router).await;
        if let Ok(mut queue) = peer.queue.lock() {
            queue.on_disconnect();
        }
        // At most once: messages that did not leave before the link went are dropped.
        let dropped = peer.messages.lock().map(|mut q| q.clear()).unwrap_or(0);
        replication.pubsub.dropped_unsent.fetch_add(dropped as u64, Ordering::Relaxed);
        let error = match result {
            Ok(()) => "closed".to_string(),
            Err(e) => e.to_string(),
        };
        let refused = error.starts_with("authentication");
        set_status(&peer, |s| {
            s.link = if refused { "refused" } else { "down" };
            s.last_error = error.clone();
        });
        // Log a failure once, not once per retry.
        if error != last_error {
            tracing::warn!(peer = %peer.addr, "link to peer {} is down: {error}", peer.addr);
            last_error = error;
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(RECONNECT_DELAY_MAX);
        if peer.status.lock().map(|s| s.link == "up").unwrap_or(false) {
            delay = RECONNECT_DELAY_MIN;
        }
    }
}

async fn connect_and_serve(peer: &Arc<Peer>, replication: &Arc<Replication>, router: &Router) -> Result<(), LinkError> {
    let stream = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(&peer.addr))
        .await
        .map_err(|_| LinkError::Io("connect timed out".into()))?
        .map_err(|e| LinkError::Io(format!("connect: {e}")))?;
    let _ = stream.set_nodelay(true);
    // Closed by reset, not by sending what is still queued first: the next connection
    // catches the peer up by a round before any batch (`PeerQueue::states_sent`), and
    // batches delivered late (after this node gave up on the peer and collected
    // tombstones without it) could bring back writes those collections removed
    // (`LinkError::GivenUp`).
    let _ = stream.set_zero_linger();
    let (read, mut write) = match &replication.tls {
        None => plain(stream),
        Some(tls) => {
            let name = super::tls::server_name(&peer.addr).map_err(LinkError::Protocol)?;
            let stream = tokio::time::timeout(HANDSHAKE_TIMEOUT, tls.connector.connect(name, stream))
                .await
                .map_err(|_| LinkError::Protocol("TLS handshake timed out".into()))?
                .map_err(|e| LinkError::Auth(format!("TLS: {e}")))?;
            let (read, write) = tokio::io::split(stream);
            (Box::new(read) as LinkRead, Box::new(write) as LinkWrite)
        }
    };
    let mut reader = FrameReader::new(read);
    let (remote, region) = tokio::time::timeout(HANDSHAKE_TIMEOUT, dial_handshake(&mut reader, &mut write, replication))
        .await
        .map_err(|_| LinkError::Protocol("handshake timed out".into()))??;
    tracing::info!(peer = %peer.addr, remote_node = remote, "linked to peer node {remote} ({region}) at {}", peer.addr);
    if let Ok(mut stability) = replication.stability.lock() {
        stability.set_member(peer.index, remote);
    }
    set_status(peer, |s| {
        s.link = "up";
        s.remote_node = Some(remote);
        s.remote_region = region;
        s.connects += 1;
        s.last_error.clear();
    });
    // A new link always compares trees first, before any batch (`PeerQueue`): the peer
    // may have missed anything.
    if let Ok(mut queue) = peer.queue.lock() {
        queue.needs_anti_entropy = true;
    }
    tokio::select! {
        served = serve_outbound(reader, write, peer, remote, replication, router) => served,
        _ = until_given_up(replication, remote) => Err(LinkError::GivenUp),
    }
}

/// The dialer's half of the handshake; returns the listener's node id and region.
async fn dial_handshake<R: AsyncRead + Unpin, W: AsyncWrite + Unpin>(
    reader: &mut FrameReader<R>,
    write: &mut W,
    replication: &Replication,
) -> Result<(u16, String), LinkError> {
    let dialer_nonce: [u8; wire::NONCE_BYTES] = rand::random();
    send(write, &Message::Hello { node_id: replication.node_id, region: replication.region.clone(), nonce: dialer_nonce }).await?;
    let (listener_id, region, listener_nonce, proof) = match reader.next(HANDSHAKE_FRAME_BYTES_MAX).await? {
        Message::Challenge { node_id, region, nonce, proof } => (node_id, region, nonce, proof),
        Message::Refused { reason } => return Err(LinkError::Protocol(format!("refused: {reason}"))),
        other => return Err(LinkError::Protocol(format!("expected challenge, got {}", other.name()))),
    };
    if listener_id == replication.node_id {
        return Err(LinkError::Protocol(format!("the peer has our node id {listener_id}: every node needs its own --node-id")));
    }
    let exchange = Exchange { dialer_nonce, listener_nonce, dialer_id: replication.node_id, listener_id };
    if !auth::verify(&replication.secret, Role::Listener, &exchange, &proof) {
        let _ = send(write, &Message::Refused { reason: "authentication failed: wrong cluster secret".into() }).await;
        return Err(LinkError::Auth(format!("peer node {listener_id} failed to prove the cluster secret")));
    }
    send(write, &Message::Proof { proof: auth::prove(&replication.secret, Role::Dialer, &exchange) }).await?;
    match reader.next(HANDSHAKE_FRAME_BYTES_MAX).await? {
        Message::Welcome => Ok((listener_id, region)),
        Message::Refused { reason } => Err(LinkError::Auth(format!("refused by peer node {listener_id}: {reason}"))),
        other => Err(LinkError::Protocol(format!("expected welcome, got {}", other.name()))),
    }
}

/// What the dialer's reader task hands to its writer.
enum Inbound {
    Leaves { round: u64, leaves: Vec<(u16, u64)> },
    Failed(LinkError),
}

/// The open link: send batches as they come, run anti-entropy rounds, until an error.
async fn serve_outbound<R, W>(
    reader: FrameReader<R>,
    mut write: W,
    peer: &Arc<Peer>,
    remote: u16,
    replication: &Arc<Replication>,
    router: &Router,
) -> Result<(), LinkError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin,
{
    let (inbound_tx, mut inbound) = mpsc::channel::<Inbound>(4);
    let reader_task = tokio::spawn(read_outbound(reader, inbound_tx, peer.clone(), remote, replication.clone(), router.clone()));
    let _abort_reader = AbortOnDrop(reader_task);
    // Wake at least this often to see whether an anti-entropy round is due.
    let mut ae_check = tokio::time::interval(replication.anti_entropy_interval.min(Duration::from_millis(500)));
    ae_check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let interval_ms = replication.anti_entropy_interval.as_millis() as u64;
    let mut ae = AntiEntropy::new(interval_ms, AE_ROUND_TIMEOUT_MS);
    let mut round_token: Option<(u64, u64)> = None;
    loop {
        loop {
            let next = peer.queue.lock().ok().and_then(|mut q| q.next_to_send());
            match next {
                Some(frame) => write.write_all(&frame).await.map_err(|e| LinkError::Io(e.to_string()))?,
                None => break,
            }
        }
        // Pub/Sub messages, in publish order (bounded: each was counted into the queue).
        loop {
            let next = peer.messages.lock().ok().and_then(|mut q| q.pop());
            match next {
                Some(frame) => write.write_all(&frame).await.map_err(|e| LinkError::Io(e.to_string()))?,
                None => break,
            }
        }
        give_up_stalled_rounds(&mut ae, &mut round_token, peer, remote, replication);
        // A connection whose batches wait for a whole round's states keeps asking for one.
        let wanted = peer.queue.lock().map(|q| q.needs_anti_entropy || q.catching_up()).unwrap_or(false)
            || replication.stability.lock().map(|s| s.awaits_round(remote)).unwrap_or(false);
        if ae.due(now_ms(), wanted) {
            if let Ok(mut queue) = peer.queue.lock() {
                queue.needs_anti_entropy = false;
                queue.round_started();
            }
            let leaves = node_leaves(router).await.map_err(LinkError::Io)?;
            let start = ae.start(now_ms(), leaves);
            if let Message::AeGroups { round, .. } = &start {
                let token = replication.stability.lock().map(|mut s| s.round_started(remote)).unwrap_or(0);
                round_token = Some((*round, token));
            }
            send(&mut write, &start).await?;
        }
        tokio::select! {
            _ = peer.wake.notified() => {}
            _ = ae_check.tick() => {}
            message = inbound.recv() => match message {
                None => return Err(LinkError::Closed),
                Some(Inbound::Failed(e)) => return Err(e),
                Some(Inbound::Leaves { round, leaves }) => {
                    let differing = ae.on_leaves(round, &leaves).map_err(LinkError::Protocol)?;
                    let whole = differing.len() < LEAVES_PER_ROUND_MAX;
                    let token = round_token.take().filter(|(r, _)| *r == round).map(|(_, t)| t);
                    if let Some(token) = token {
                        let remaining = differing.chunks(AE_LEAVES_PER_MESSAGE).count();
                        if remaining == 0 {
                            if whole {
                                complete_round(replication, router, remote, token).await.map_err(LinkError::Io)?;
                            }
                        } else if let Ok(mut wait) = peer.round_wait.lock() {
                            *wait = Some(RoundWait { round, token, remaining, whole, since_ms: now_ms() });
                        }
                    }
                    let mut sent = 0u64;
                    let mut all_sent = true;
                    for chunk in differing.chunks(AE_LEAVES_PER_MESSAGE) {
                        let deltas = export_leaves(router, chunk).await.map_err(LinkError::Io)?;
                        if !replication.may_send(&deltas) {
                            all_sent = false;
                            // Stamps not yet reserved by a stored segment: the round
                            // cannot finish; another starts once they are stored.
                            let waiting = peer.round_wait.lock().ok().and_then(|mut w| w.take_if(|w| w.round == round));
                            if let Some(token) = waiting.map(|w| w.token)
                                && let Ok(mut stability) = replication.stability.lock()
                            {
                                stability.round_abandoned(remote, token);
                            }
                            ae.retry_later(now_ms());
                            break;
                        }
                        sent += deltas.len() as u64;
                        send(&mut write, &Message::AeStates { round, reply_wanted: true, leaves: chunk.to_vec(), deltas }).await?;
                    }
                    // The peer merges these before anything queued (`PeerQueue::states_sent`).
                    if all_sent && let Ok(mut queue) = peer.queue.lock() {
                        queue.states_sent(whole);
                    }
                    let rounds = ae.rounds_completed;
                    set_status(peer, |s| {
                        s.ae_rounds = rounds;
                        s.ae_last_ms = now_ms();
                        s.ae_keys_sent += sent;
                    });
                }
            },
        }
    }
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Every leaf of an anti-entropy round with `remote` was compared and the differing
/// ones merged here: tell `Stability`, with positions past those merges.
async fn complete_round(replication: &Replication, router: &Router, remote: u16, token: u64) -> Result<(), String> {
    let marks = delta_marks(router).await?;
    if let Ok(mut stability) = replication.stability.lock() {
        stability.round_completed(remote, token, marks);
    }
    Ok(())
}

/// The dialer's reader: acknowledgements, anti-entropy answers. Never writes.
async fn read_outbound<R: AsyncRead + Unpin>(
    mut reader: FrameReader<R>,
    to_writer: mpsc::Sender<Inbound>,
    peer: Arc<Peer>,
    remote: u16,
    replication: Arc<Replication>,
    router: Router,
) {
    loop {
        let message = match reader.next(replication.frame_bytes_max).await {
            Ok(message) => message,
            Err(e) => {
                let _ = to_writer.send(Inbound::Failed(e)).await;
                return;
            }
        };
        match message {
            Message::Ack { seq } => {
                if let Ok(mut queue) = peer.queue.lock() {
                    queue.on_ack(seq);
                }
            }
            Message::AeLeaves { round, leaves } => {
                if to_writer.send(Inbound::Leaves { round, leaves }).await.is_err() {
                    return;
                }
            }
            Message::AeStates { round, reply_wanted: false, leaves, deltas } => {
                let count = deltas.len() as u64;
                if let Err(e) = merge_leaf_states(&router, &leaves, deltas).await {
                    let _ = to_writer.send(Inbound::Failed(LinkError::Io(e))).await;
                    return;
                }
                set_status(&peer, |s| s.ae_keys_received += count);
                let completed = peer.round_wait.lock().ok().and_then(|mut wait| match wait.as_mut() {
                    Some(w) if w.round == round => {
                        w.remaining -= 1;
                        if w.remaining == 0 { wait.take().filter(|w| w.whole).map(|w| w.token) } else { None }
                    }
                    _ => None,
                });
                if let Some(token) = completed
                    && let Err(e) = complete_round(&replication, &router, remote, token).await
                {
                    let _ = to_writer.send(Inbound::Failed(LinkError::Io(e))).await;
                    return;
                }
            }
            Message::Refused { reason } => {
                let _ = to_writer.send(Inbound::Failed(LinkError::Protocol(format!("refused: {reason}")))).await;
                return;
            }
            other => {
                let _ = to_writer.send(Inbound::Failed(LinkError::Protocol(format!("unexpected {} message", other.name())))).await;
                return;
            }
        }
    }
}
