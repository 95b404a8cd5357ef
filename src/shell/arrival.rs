//! When a client's bytes reached this host: the kernel's receive stamp of each read
//! (`SO_TIMESTAMPNS`, set on the listener so that every accepted socket inherits it).
//!
//! Redis runs one event loop, so clients that block on a key are queued in the order
//! their commands arrived. Here connections live on several shard threads, and a new
//! connection reaches its thread through the accept loop: two clients that send a
//! blocking pop microseconds apart can register in either order. The kernel stamps
//! each packet as it arrives, before any of our threads sees it, so ordering blocked
//! clients by these stamps gives Redis's order whatever the threads do.
//!
//! Stamps are wall-clock nanoseconds (`CLOCK_REALTIME`, as the kernel's); where the
//! kernel gives none (the option refused, a handed-over buffer) the read's own time
//! stands in. They order waiters only: nothing else may depend on them. Never parses
//! and never decides anything.

use std::io;
use std::os::fd::AsRawFd;

use bytes::{BufMut, BytesMut};
use tokio::io::Interest;
use tokio::net::TcpStream;

/// Ask the kernel to stamp what arrives on `listener`'s connections. A failure only
/// costs the ordering precision: logged, never fatal.
#[cfg(target_os = "linux")]
pub fn enable_on_listener(listener: &std::net::TcpListener) {
    let on: libc::c_int = 1;
    // SAFETY: a valid socket descriptor, a c_int option value and its length.
    let rc = unsafe {
        libc::setsockopt(
            listener.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        tracing::warn!("SO_TIMESTAMPNS refused ({}): blocked clients are ordered by read time", io::Error::last_os_error());
    }
}

/// Elsewhere (the stamps are Linux's) reads are stamped with their own time.
#[cfg(not(target_os = "linux"))]
pub fn enable_on_listener(_listener: &std::net::TcpListener) {}

/// Now, in the stamps' clock.
pub fn now_ns() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

/// Read what is there into `buf`, waiting until something is: the byte count (0 at
/// end of stream) and when the last byte read arrived. A full (or given back, empty)
/// buffer gets `room` bytes of room once the socket is readable, not before: an idle
/// connection holds no buffer while it waits. Cancel-safe, as `read_buf` (nothing is
/// consumed unless it returns).
pub async fn read(stream: &TcpStream, buf: &mut BytesMut, room: usize) -> io::Result<(usize, u64)> {
    loop {
        // The stream's single reader waker slot, not `readable()`'s future: that one
        // links a waiter into the socket's list and unlinks it on drop, under its lock,
        // every wait (~300 instructions a request at pipeline depth 1). One task reads a
        // connection, so the single slot is enough.
        std::future::poll_fn(|cx| stream.poll_read_ready(cx)).await?;
        if buf.capacity() == buf.len() {
            buf.reserve(room.max(1));
        }
        #[cfg(target_os = "linux")]
        let read = {
            // A read that did not fill the room drained the socket: say so to tokio
            // (by answering WouldBlock, with the bytes kept aside), so that it waits for
            // the next readiness event instead of trying a read that can only fail
            // with EAGAIN, one wasted system call per pipeline. tokio's own `read_buf`
            // does the same.
            let mut drained = None;
            let room = buf.capacity() - buf.len();
            let read = stream.try_io(Interest::READABLE, || match recv_stamped(stream.as_raw_fd(), buf)? {
                (n, stamp) if n > 0 && n < room => {
                    drained = Some((n, stamp));
                    Err(io::ErrorKind::WouldBlock.into())
                }
                read => Ok(read),
            });
            match (read, drained) {
                (_, Some(read)) => Ok(read),
                (read, None) => read,
            }
        };
        #[cfg(not(target_os = "linux"))]
        let read = stream.try_read_buf(buf).map(|n| (n, now_ns()));
        match read {
            Ok(read) => return Ok(read),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) => return Err(e),
        }
    }
}

/// One `recvmsg` into `buf`'s spare room, with the stamp from its control message.
#[cfg(target_os = "linux")]
fn recv_stamped(fd: i32, buf: &mut BytesMut) -> io::Result<(usize, u64)> {
    let spare = buf.chunk_mut();
    let mut iov = libc::iovec { iov_base: spare.as_mut_ptr().cast(), iov_len: spare.len() };
    // Room for one timespec control message, aligned as cmsghdr wants.
    let mut control = [0u64; 8];
    // SAFETY: msghdr is plain data; every pointer set below outlives the call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control) as _;
    // SAFETY: `iov` points into `buf`'s spare capacity, `control` is a live buffer of
    // the length given; the kernel writes at most those lengths.
    let n = unsafe { libc::recvmsg(fd, &mut msg, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let n = n as usize;
    debug_assert!(n <= spare.len());
    // SAFETY: the kernel initialised the first `n` bytes of the spare room.
    unsafe { buf.advance_mut(n) };
    Ok((n, stamp_of(&msg).unwrap_or_else(now_ns)))
}

/// The `SCM_TIMESTAMPNS` control message's time, if the kernel sent one.
#[cfg(target_os = "linux")]
fn stamp_of(msg: &libc::msghdr) -> Option<u64> {
    // SAFETY: `msg` was filled by recvmsg; the CMSG macros walk within msg_controllen.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast());
                let ns = (ts.tv_sec as u64).checked_mul(1_000_000_000)?.checked_add(ts.tv_nsec as u64)?;
                return (ns > 0).then_some(ns);
            }
            cmsg = libc::CMSG_NXTHDR(msg, cmsg);
        }
    }
    None
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[tokio::test]
    async fn reads_carry_the_kernels_arrival_stamp_in_arrival_order() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        enable_on_listener(&listener);
        let address = listener.local_addr().expect("address");
        // The kernel turns stamping on through a deferred work item: until it has run,
        // packets arrive unstamped (and reads fall back to their own time). A server
        // enables it once at start-up; here, wait until a probe comes back stamped.
        let mut stamping = false;
        for _ in 0..200 {
            let mut probe = std::net::TcpStream::connect(address).expect("connect");
            let (accepted, _) = listener.accept().expect("accept");
            std::io::Write::write_all(&mut probe, b"p").expect("write");
            accepted.set_nonblocking(true).expect("nonblocking");
            let accepted = TcpStream::from_std(accepted).expect("tokio");
            let before_read = now_ns();
            let (_, stamp) = read(&accepted, &mut BytesMut::new(), 4096).await.expect("read");
            if stamp <= before_read {
                stamping = true;
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        assert!(stamping, "the kernel never stamped a packet");
        let mut first = std::net::TcpStream::connect(address).expect("connect");
        let mut second = std::net::TcpStream::connect(address).expect("connect");
        let (a, _) = listener.accept().expect("accept");
        let (b, _) = listener.accept().expect("accept");
        use std::io::Write;
        first.write_all(b"one").expect("write");
        second.write_all(b"two").expect("write");
        let before_reads = now_ns();
        // Read in the opposite order: the stamps still say which came first.
        a.set_nonblocking(true).expect("nonblocking");
        b.set_nonblocking(true).expect("nonblocking");
        let (a, b) = (TcpStream::from_std(a).expect("tokio"), TcpStream::from_std(b).expect("tokio"));
        let mut buf_b = BytesMut::new();
        let (n_b, stamp_b) = read(&b, &mut buf_b, 4096).await.expect("read");
        let mut buf_a = BytesMut::new();
        let (n_a, stamp_a) = read(&a, &mut buf_a, 4096).await.expect("read");
        assert_eq!((n_a, &buf_a[..], n_b, &buf_b[..]), (3, &b"one"[..], 3, &b"two"[..]));
        assert!(stamp_a < stamp_b, "first {stamp_a} second {stamp_b}");
        assert!(stamp_b <= before_reads, "kernel stamps, not read times: {stamp_b} > {before_reads}");
    }
}
