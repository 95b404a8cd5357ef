//! A TCP proxy for replication tests: it stands between two nodes on loopback and can
//! delay every byte (this kernel has no `tc netem`) or black-hole the link the way a
//! firewall DROP rule does: connections stay open, nothing flows, and whatever was
//! written meanwhile arrives after the heal (TCP retransmits it; here the proxy holds it).

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// Chunks read but not yet forwarded, each with the instant it is due.
type Pending = Arc<Mutex<VecDeque<(Instant, Vec<u8>)>>>;

struct Shared {
    /// Where connections go; `None` until known (they are refused meanwhile).
    target: Mutex<Option<String>>,
    /// The local address outgoing connections come from (a node's own loopback
    /// address, so that firewall rules can tell the links apart).
    source_ip: Option<std::net::IpAddr>,
    cut: AtomicBool,
    delay_ms: AtomicU64,
    stop: AtomicBool,
    streams: Mutex<Vec<TcpStream>>,
    /// Forward the dialer's bytes whole frame by whole frame (Meridian's replication
    /// framing), keeping a copy of every batch, so that a test can replay them.
    framed: bool,
    /// Batch frames the dialer sent, as sent (at most `RECORDED_FRAMES_MAX`).
    recorded: Mutex<Vec<Vec<u8>>>,
    /// The dialer-to-listener queue of the newest connection (framed proxies only).
    dialer_queue: Mutex<Option<Pending>>,
}

/// Batch frames a framed proxy keeps for replay.
const RECORDED_FRAMES_MAX: usize = 10_000;
/// The kind byte of a replication batch frame (`replication::wire`): after the 4-byte
/// length and the version byte.
const BATCH_KIND: u8 = 6;

pub struct Proxy {
    pub port: u16,
    listen_ip: std::net::IpAddr,
    shared: Arc<Shared>,
}

impl Proxy {
    /// Listen on a free loopback port and forward every connection to `target`.
    pub fn start(target: &str) -> Proxy {
        let proxy = Proxy::start_unbound();
        proxy.set_target(target);
        proxy
    }

    /// Where connections go from now on (a restarted server's new port).
    pub fn set_target(&self, target: &str) {
        *self.shared.target.lock().unwrap() = Some(target.to_string());
    }

    /// Listen on a free loopback port; connections are refused until [`Proxy::set_target`].
    pub fn start_unbound() -> Proxy {
        Proxy::start_on("127.0.0.1".parse().unwrap(), None)
    }

    /// Listen on `listen_ip` (a loopback address), and connect out from `source_ip`.
    pub fn start_on(listen_ip: std::net::IpAddr, source_ip: Option<std::net::IpAddr>) -> Proxy {
        Proxy::start_with(listen_ip, source_ip, false)
    }

    /// A proxy that understands replication frames (plain links, not TLS): it records
    /// the batches the dialing node sends, and [`Proxy::replay_recorded`] sends them again.
    pub fn start_framed(target: &str) -> Proxy {
        let proxy = Proxy::start_with("127.0.0.1".parse().unwrap(), None, true);
        proxy.set_target(target);
        proxy
    }

    /// The `i`th batch frame recorded, as sent.
    pub fn recorded_frame(&self, i: usize) -> Vec<u8> {
        self.shared.recorded.lock().unwrap()[i].clone()
    }

    /// How many batch frames it has recorded.
    pub fn recorded_batches(&self) -> usize {
        self.shared.recorded.lock().unwrap().len()
    }

    /// Send every recorded batch again, `times` times over, into the live link, between
    /// two frames of the dialer's own: what a peer replaying old messages looks like.
    pub fn replay_recorded(&self, times: usize) -> usize {
        let frames = self.shared.recorded.lock().unwrap().clone();
        let queue = self.shared.dialer_queue.lock().unwrap().clone().expect("a link is open");
        let mut queue = queue.lock().unwrap();
        for _ in 0..times {
            for frame in &frames {
                queue.push_back((Instant::now(), frame.clone()));
            }
        }
        frames.len() * times
    }

    fn start_with(listen_ip: std::net::IpAddr, source_ip: Option<std::net::IpAddr>, framed: bool) -> Proxy {
        let listener = TcpListener::bind((listen_ip, 0)).expect("bind proxy");
        let port = listener.local_addr().unwrap().port();
        let shared = Arc::new(Shared {
            target: Mutex::new(None),
            source_ip,
            cut: AtomicBool::new(false),
            delay_ms: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            streams: Mutex::new(Vec::new()),
            framed,
            recorded: Mutex::new(Vec::new()),
            dialer_queue: Mutex::new(None),
        });
        let accept_shared = shared.clone();
        thread::spawn(move || {
            for client in listener.incoming() {
                if accept_shared.stop.load(Ordering::Relaxed) {
                    return;
                }
                let Ok(client) = client else { continue };
                let Some(target) = accept_shared.target.lock().unwrap().clone() else { continue };
                let Ok(server) = connect_from(accept_shared.source_ip, &target) else { continue };
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                if let Ok(mut streams) = accept_shared.streams.lock() {
                    streams.push(client.try_clone().unwrap());
                    streams.push(server.try_clone().unwrap());
                }
                pump(client.try_clone().unwrap(), server.try_clone().unwrap(), accept_shared.clone(), accept_shared.framed);
                pump(server, client, accept_shared.clone(), false);
            }
        });
        Proxy { port, listen_ip, shared }
    }

    pub fn addr(&self) -> String {
        format!("{}:{}", self.listen_ip, self.port)
    }

    /// Black-hole the link: nothing is forwarded until [`Proxy::heal`].
    pub fn cut(&self) {
        self.shared.cut.store(true, Ordering::SeqCst);
    }

    pub fn heal(&self) {
        self.shared.cut.store(false, Ordering::SeqCst);
    }

    /// Hold every chunk this long before forwarding it (one-way delay).
    pub fn set_delay(&self, delay: Duration) {
        self.shared.delay_ms.store(delay.as_millis() as u64, Ordering::SeqCst);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Ok(streams) = self.shared.streams.lock() {
            for stream in streams.iter() {
                let _ = stream.shutdown(Shutdown::Both);
            }
        }
        // Wake the accept loop so it sees `stop`.
        let _ = TcpStream::connect((self.listen_ip, self.port));
    }
}

fn connect_from(source_ip: Option<std::net::IpAddr>, target: &str) -> std::io::Result<TcpStream> {
    let Some(ip) = source_ip else { return TcpStream::connect(target) };
    let target: std::net::SocketAddr = target.parse().map_err(std::io::Error::other)?;
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
    socket.bind(&std::net::SocketAddr::new(ip, 0).into())?;
    socket.connect(&target.into())?;
    Ok(socket.into())
}

/// Copy `from` to `to`: a reader thread timestamps chunks, a writer thread forwards
/// each once its delay has passed and the link is not cut.
/// With `framed`, chunks are whole replication frames and batches are recorded.
fn pump(mut from: TcpStream, mut to: TcpStream, shared: Arc<Shared>, framed: bool) {
    let queue: Pending = Arc::new(Mutex::new(VecDeque::new()));
    if framed {
        *shared.dialer_queue.lock().unwrap() = Some(queue.clone());
    }
    let done = Arc::new(AtomicBool::new(false));
    let (reader_queue, reader_done, reader_shared) = (queue.clone(), done.clone(), shared.clone());
    thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        let mut partial: Vec<u8> = Vec::new();
        loop {
            // A black-holed link stops reading too, so the sender's TCP window fills
            // as it would behind a DROP rule.
            while reader_shared.cut.load(Ordering::SeqCst) && !reader_shared.stop.load(Ordering::Relaxed) {
                thread::sleep(Duration::from_millis(5));
            }
            match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) if !framed => {
                    let due = Instant::now() + Duration::from_millis(reader_shared.delay_ms.load(Ordering::SeqCst));
                    reader_queue.lock().unwrap().push_back((due, buf[..n].to_vec()));
                }
                Ok(n) => {
                    partial.extend_from_slice(&buf[..n]);
                    let due = Instant::now() + Duration::from_millis(reader_shared.delay_ms.load(Ordering::SeqCst));
                    while partial.len() >= 6 {
                        let length = u32::from_le_bytes([partial[0], partial[1], partial[2], partial[3]]) as usize;
                        if partial.len() < length + 4 {
                            break;
                        }
                        let frame: Vec<u8> = partial.drain(..length + 4).collect();
                        if frame[5] == BATCH_KIND {
                            let mut recorded = reader_shared.recorded.lock().unwrap();
                            if recorded.len() < RECORDED_FRAMES_MAX {
                                recorded.push(frame.clone());
                            }
                        }
                        reader_queue.lock().unwrap().push_back((due, frame));
                    }
                }
            }
        }
        reader_done.store(true, Ordering::SeqCst);
    });
    thread::spawn(move || {
        loop {
            let next = {
                let mut queue = queue.lock().unwrap();
                match queue.front() {
                    Some((due, _)) if *due <= Instant::now() && !shared.cut.load(Ordering::SeqCst) => queue.pop_front(),
                    _ => None,
                }
            };
            match next {
                Some((_, bytes)) => {
                    if to.write_all(&bytes).is_err() {
                        break;
                    }
                }
                None => {
                    if done.load(Ordering::SeqCst) && queue.lock().unwrap().is_empty() {
                        let _ = to.shutdown(Shutdown::Write);
                        break;
                    }
                    thread::sleep(Duration::from_millis(1));
                }
            }
        }
    });
}
