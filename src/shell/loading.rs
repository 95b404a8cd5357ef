//! The node while it loads its data: clients may connect, and get Redis's `-LOADING`.
//!
//! The listening socket is bound before recovery starts. Until the shards are built
//! and serving, a gate on its own thread accepts connections and answers each command
//! as Redis does while it loads: `-LOADING` for every command without the table's
//! `loading` flag; INFO (with `loading:1`) and QUIT answered here; any other `loading`
//! command (AUTH, HELLO, SELECT, SUBSCRIBE...) is held, unanswered, until loading ends,
//! since only a serving node can run it. Then every connection moves to a shard
//! thread with its unread bytes, its parser and the held command, and carries on as
//! any other. Never touches the data: it has none yet.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::{Buf, Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;

use super::router::{Router, ShardMsg};
use crate::command::{errors, table};
use crate::config::Config;
use crate::protocol::{Frame, ParseLimits, Protocol, ProtocolError, RequestParser, encode};

/// Redis's reply to a command that needs the data while it loads, word for word.
pub const LOADING: &str = "LOADING Redis is loading the dataset in memory";

/// What a connection accepted while loading brings to its shard thread.
pub struct Handover {
    pub read_buf: BytesMut,
    /// Mid-command, the parser holds the arguments read so far.
    pub parser: RequestParser,
    /// A `loading` command the gate could not run: the connection runs it first.
    pub held: Option<Vec<Bytes>>,
    /// Replies the client had not read yet: they are sent first.
    pub unsent: BytesMut,
}

/// The gate: stop it once the shards serve, and the listener comes back.
pub struct Gate {
    stop: watch::Sender<bool>,
    thread: std::thread::JoinHandle<Result<std::net::TcpListener, String>>,
}

/// What the gate needs to know of the configuration.
struct GateConfig {
    limits: ParseLimits,
    password_required: bool,
    maxclients: usize,
    node_id: u16,
    region: String,
    port: u16,
    started_s: u64,
}

/// Start answering on `listener` while the caller loads the data.
pub fn open(listener: std::net::TcpListener, config: &Config, router: Router) -> Result<Gate, String> {
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let gate_config = GateConfig {
        limits: ParseLimits {
            bulk_bytes_max: config.proto_max_bulk_len,
            query_bytes_max: config.client_query_buffer_limit,
            unauthenticated: config.requirepass.as_deref().is_some_and(|p| !p.is_empty()),
        },
        password_required: config.requirepass.as_deref().is_some_and(|p| !p.is_empty()),
        maxclients: config.maxclients,
        node_id: config.node_id,
        region: config.region.clone(),
        port,
        started_s: super::now_ms() / 1000,
    };
    let (stop, stopped) = watch::channel(false);
    let thread = std::thread::Builder::new()
        .name("loading-gate".into())
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
            runtime.block_on(accept_while_loading(listener, gate_config, router, stopped))
        })
        .map_err(|e| e.to_string())?;
    Ok(Gate { stop, thread })
}

impl Gate {
    /// Loading is over: hand every connection to the shard threads (which must be
    /// running) and give the listener back.
    pub fn finish(self) -> Result<std::net::TcpListener, String> {
        let _ = self.stop.send(true);
        self.thread.join().map_err(|_| "the loading gate panicked".to_string())?
    }
}

async fn accept_while_loading(
    listener: std::net::TcpListener,
    config: GateConfig,
    router: Router,
    stopped: watch::Receiver<bool>,
) -> Result<std::net::TcpListener, String> {
    let mut stop = stopped.clone();
    let listener = tokio::net::TcpListener::from_std(listener).map_err(|e| e.to_string())?;
    let config = Arc::new(config);
    let connected = Arc::new(AtomicUsize::new(0));
    let next_shard = Arc::new(AtomicUsize::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            biased;
            // Finished, or the starting node gave up (the sender is gone).
            _ = stop.wait_for(|stop| *stop) => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    tasks.spawn(serve_while_loading(stream, peer, config.clone(), router.clone(), stopped.clone(), connected.clone(), next_shard.clone()));
                }
                Err(e) => {
                    tracing::warn!("accept failed while loading: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
            },
        }
    }
    while tasks.join_next().await.is_some() {}
    listener.into_std().map_err(|e| e.to_string())
}

/// What the gate does with one command.
enum Answer {
    Reply(Frame),
    ReplyAndClose(Frame),
    /// Run it once the node serves.
    Hold,
}

fn answer(config: &GateConfig, args: &[Bytes]) -> Answer {
    let Some(spec) = table::lookup(&args[0]) else { return Answer::Reply(errors::unknown_command(args)) };
    if !spec.arity_ok(args.len()) {
        return Answer::Reply(errors::wrong_arity(spec.name));
    }
    match spec.name {
        "quit" => return Answer::ReplyAndClose(Frame::ok()),
        "auth" | "hello" | "reset" => return Answer::Hold,
        _ if config.password_required => return Answer::Reply(errors::error(errors::NOAUTH)),
        _ => {}
    }
    if !spec.allowed_while_loading() {
        return Answer::Reply(Frame::static_error(LOADING));
    }
    if spec.name == "info" {
        return Answer::Reply(Frame::Bulk(Bytes::from(info_while_loading(config))));
    }
    Answer::Hold
}

/// INFO while loading: who this is, and `loading:1` (what tools wait on).
fn info_while_loading(config: &GateConfig) -> String {
    format!(
        "# Server\r\nredis_version:{}\r\nmeridian_version:{}\r\nredis_mode:standalone\r\nprocess_id:{}\r\ntcp_port:{}\r\nnode_id:{}\r\nregion:{}\r\n\r\n# Persistence\r\nloading:1\r\nasync_loading:0\r\nloading_start_time:{}\r\n",
        super::info::REDIS_COMPAT_VERSION,
        env!("CARGO_PKG_VERSION"),
        std::process::id(),
        config.port,
        config.node_id,
        config.region,
        config.started_s,
    )
}

async fn serve_while_loading(
    mut stream: tokio::net::TcpStream,
    peer: SocketAddr,
    config: Arc<GateConfig>,
    router: Router,
    mut stopped: watch::Receiver<bool>,
    connected: Arc<AtomicUsize>,
    next_shard: Arc<AtomicUsize>,
) {
    if connected.fetch_add(1, Ordering::Relaxed) >= config.maxclients {
        let _ = stream.write_all(b"-ERR max number of clients reached\r\n").await;
        connected.fetch_sub(1, Ordering::Relaxed);
        return;
    }
    let mut handover =
        Handover { read_buf: BytesMut::with_capacity(4096), parser: RequestParser::new(), held: None, unsent: BytesMut::new() };
    let out = &mut handover.unsent;
    let mut open = true;
    // A reply that ends the connection (QUIT, a protocol error) is still written first.
    let mut closing = false;
    'serving: while open {
        while handover.held.is_none() {
            match handover.parser.next_command(&mut handover.read_buf, &config.limits) {
                Ok(Some(args)) => match answer(&config, &args) {
                    Answer::Reply(frame) => encode(&frame, Protocol::Resp2, out),
                    Answer::ReplyAndClose(frame) => {
                        encode(&frame, Protocol::Resp2, out);
                        closing = true;
                        break;
                    }
                    Answer::Hold => handover.held = Some(args),
                },
                Ok(None) => break,
                Err(ProtocolError(message)) => {
                    encode(&Frame::error(format!("ERR Protocol error: {message}")), Protocol::Resp2, out);
                    closing = true;
                    break;
                }
            }
        }
        // A client that does not read its replies must not keep the node from serving:
        // once loading ends, what it has not taken goes with the connection.
        while !out.is_empty() && open {
            tokio::select! {
                biased;
                written = stream.write(out) => match written {
                    Ok(0) | Err(_) => open = false,
                    Ok(n) => out.advance(n),
                },
                _ = stopped.wait_for(|stop| *stop) => break,
            }
        }
        if closing {
            open = false;
        }
        if !open || *stopped.borrow() {
            break;
        }
        if handover.held.is_some() {
            // Nothing more is read: the held command runs first, once the node serves.
            let _ = stopped.wait_for(|stop| *stop).await;
            break;
        }
        if handover.read_buf.capacity() - handover.read_buf.len() < 1024 {
            handover.read_buf.reserve(4096);
        }
        tokio::select! {
            biased;
            _ = stopped.wait_for(|stop| *stop) => break 'serving,
            read = stream.read_buf(&mut handover.read_buf) => match read {
                Ok(0) | Err(_) => open = false,
                Ok(_) => {}
            },
        }
    }
    connected.fetch_sub(1, Ordering::Relaxed);
    if !open || !*stopped.borrow() {
        // Closed, or the node is not starting after all.
        return;
    }
    let Ok(stream) = stream.into_std() else { return };
    let shard = next_shard.fetch_add(1, Ordering::Relaxed) % router.shard_count();
    let _ = router.mailbox(shard).send(ShardMsg::Connection { stream, peer, handover: Some(Box::new(handover)) }).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(password_required: bool) -> GateConfig {
        GateConfig {
            limits: ParseLimits::default(),
            password_required,
            maxclients: 10,
            node_id: 1,
            region: "r".into(),
            port: 1,
            started_s: 0,
        }
    }

    fn args(words: &[&str]) -> Vec<Bytes> {
        words.iter().map(|w| Bytes::copy_from_slice(w.as_bytes())).collect()
    }

    #[test]
    fn data_commands_get_loading_and_connection_commands_wait_for_the_data() {
        let c = config(false);
        assert!(matches!(answer(&c, &args(&["GET", "k"])), Answer::Reply(Frame::Error(e)) if e.as_ref() == LOADING.as_bytes()));
        assert!(matches!(answer(&c, &args(&["PING"])), Answer::Reply(Frame::Error(e)) if e.as_ref() == LOADING.as_bytes()), "as Redis 7");
        assert!(matches!(answer(&c, &args(&["INFO"])), Answer::Reply(Frame::Bulk(text)) if text.windows(9).any(|w| w == b"loading:1")));
        assert!(matches!(answer(&c, &args(&["SELECT", "0"])), Answer::Hold));
        assert!(matches!(answer(&c, &args(&["QUIT"])), Answer::ReplyAndClose(_)));
        assert!(matches!(answer(&c, &args(&["NOSUCH"])), Answer::Reply(Frame::Error(_))));
    }

    #[test]
    fn without_the_password_only_auth_waits() {
        let c = config(true);
        assert!(matches!(answer(&c, &args(&["GET", "k"])), Answer::Reply(Frame::Error(e)) if e.as_ref() == errors::NOAUTH.as_bytes()));
        assert!(matches!(answer(&c, &args(&["AUTH", "pw"])), Answer::Hold));
    }
}
