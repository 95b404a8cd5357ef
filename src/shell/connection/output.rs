//! Getting a connection's replies out: encoding them in request order, and writing
//! them to the socket under the client's output buffer limits (Redis's
//! `client-output-buffer-limit`), reading requests meanwhile so that a client that
//! sends before it reads cannot deadlock with us. Part of [`super::Connection`]; what
//! the replies are is the rest of the connection's to decide.

use std::sync::atomic::Ordering;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::modes::is_push;
use super::{Connection, READ_CHUNK_BYTES};
use crate::protocol::{Frame, encode};

impl Connection {
    pub(super) fn push_reply(&mut self, frame: Frame) {
        self.replies.push(Some(frame));
    }

    /// Encode every reply that is ready, in order, up to the first one in flight.
    pub(super) fn encode_ready(&mut self) {
        while let Some(Some(_)) = self.replies.get(self.encoded) {
            let silenced = self.silenced.front() == Some(&self.encoded);
            if silenced {
                self.silenced.pop_front();
            }
            if let Some(frame) = self.replies[self.encoded].take()
                && (!silenced || is_push(&frame))
            {
                encode(&frame, self.protocol, &mut self.write_buf);
            }
            self.replies[self.encoded] = Some(Frame::Null);
            self.encoded += 1;
        }
        // Every reply is out: let their slots go now, while they are in the cache (let go
        // at the end of the turn, after the other connections ran, dropping them read
        // each one back from memory). No slot is in flight (a reply in flight stops the
        // encoding before it), so no later filing needs the numbering. This is the one
        // place the slots are let go: `encoded` equals their count only when both are 0.
        if self.encoded == self.replies.len() {
            debug_assert!(self.silenced.is_empty(), "a silenced slot is never past the encoded ones");
            self.replies.clear();
            self.encoded = 0;
        }
    }

    /// Write the buffered replies. While the client is not reading, keep reading its
    /// requests (up to the query buffer limit): a client that sends a whole pipeline
    /// before reading any reply would otherwise deadlock with us. A kill request
    /// interrupts the wait.
    pub(super) async fn write_buffered(&mut self) -> std::io::Result<()> {
        let mut written = 0;
        let query_limit = self.state().runtime.client_query_buffer_limit();
        let limits = self.state().runtime.output_buffer_limits();
        let limit = if self.subscriptions > 0 { limits.pubsub } else { limits.normal };
        if limit.hard_bytes != 0 && self.write_buf.len() > limit.hard_bytes {
            return Err(self.output_buffer_overcome(self.write_buf.len()));
        }
        // Past the soft limit the client has `soft_seconds` to read below it.
        let soft_deadline = |pending: usize| {
            (limit.soft_bytes != 0 && pending > limit.soft_bytes)
                .then(|| tokio::time::Instant::now() + std::time::Duration::from_secs(limit.soft_seconds))
        };
        let mut over_soft_until = soft_deadline(self.write_buf.len());
        // The common case first: the socket takes every byte at once, and then no wait
        // is set up (the kill and timer futures below cost more than the write itself
        // at pipeline depth 1). A client killed meanwhile is not written to.
        if over_soft_until.is_none() && !self.write_buf.is_empty() && !self.info.killed.load(Ordering::Relaxed) {
            match self.stream.try_write(&self.write_buf) {
                Ok(n) => written = n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
        }
        let waits = written < self.write_buf.len();
        while written < self.write_buf.len() {
            // The socket is full: CLIENT LIST shows what waits (`omem`, events `rw`).
            self.info.buffers.output_pending.store((self.write_buf.len() - written) as u64, Ordering::Relaxed);
            let may_read = make_read_room(&mut self.read_buf, self.read_closed, query_limit);
            let (mut reader, mut writer) = self.stream.split();
            tokio::select! {
                biased;
                _ = self.info.kill_requested() => {
                    self.info.killed.store(true, Ordering::Relaxed);
                    return Err(std::io::Error::new(std::io::ErrorKind::ConnectionAborted, "killed by CLIENT KILL"));
                }
                _ = tokio::time::sleep_until(over_soft_until.unwrap_or_else(tokio::time::Instant::now)), if over_soft_until.is_some() => {
                    return Err(self.output_buffer_overcome(self.write_buf.len() - written));
                }
                n = writer.write(&self.write_buf[written..]) => {
                    let n = n?;
                    if n == 0 {
                        return Err(std::io::ErrorKind::WriteZero.into());
                    }
                    written += n;
                    if over_soft_until.is_some() && self.write_buf.len() - written <= limit.soft_bytes {
                        over_soft_until = None;
                    }
                }
                n = reader.read_buf(&mut self.read_buf), if may_read => {
                    if n? == 0 {
                        // The client closed its sending side (a half-close, as `nc -q`
                        // does): it may still read, so finish answering.
                        self.read_closed = true;
                    }
                }
            }
        }
        if waits {
            self.info.buffers.output_pending.store(0, Ordering::Relaxed);
        }
        self.state().stats.traffic(self.access.home).wrote(self.write_buf.len());
        self.write_buf.clear();
        Ok(())
    }

    /// The client's replies overcame its class's output buffer limit: it is closed, as
    /// Redis closes it, logged and counted.
    fn output_buffer_overcome(&self, pending_bytes: usize) -> std::io::Error {
        tracing::warn!(
            client = self.info.id,
            pending_bytes,
            "client closed for overcoming of output buffer limits (client-output-buffer-limit)"
        );
        // A subscriber's limit is the pubsub class's, whether its mailbox or its reply
        // buffer passed it first: counted where a full mailbox is.
        if self.subscriptions > 0 {
            self.state().pubsub.disconnected.fetch_add(1, Ordering::Relaxed);
        } else {
            self.state().stats.output_buffer_disconnections.fetch_add(1, Ordering::Relaxed);
        }
        std::io::Error::other("output buffer limit overcome")
    }
}

/// Whether more of a client's bytes may be read now (it has not closed its side and its
/// query buffer is under `query_limit`); if so, `read_buf` has room for a chunk. A free
/// function over the two fields, so callers holding other borrows of the connection
/// can use it.
pub(super) fn make_read_room(read_buf: &mut bytes::BytesMut, read_closed: bool, query_limit: usize) -> bool {
    let may_read = !read_closed && read_buf.len() < query_limit;
    if may_read && read_buf.capacity() - read_buf.len() < READ_CHUNK_BYTES / 4 {
        read_buf.reserve(READ_CHUNK_BYTES);
    }
    may_read
}
