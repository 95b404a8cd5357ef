//! Pub/Sub on a real `meridian` process with real clients: subscribers on different
//! shard threads get every message once, in publish order, in RESP2 and RESP3 shapes;
//! a subscriber that stops reading is cut off at its buffer limit instead of growing
//! the server's memory.

mod common;

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use common::{connect, info_u64, raw_connect, start_meridian};

fn read_some(stream: &mut std::net::TcpStream, want: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = [0u8; 65536];
    let deadline = Instant::now() + Duration::from_secs(10);
    stream.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    while out.len() < want && Instant::now() < deadline {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(_) => continue,
        }
    }
    out
}

#[test]
fn every_subscriber_gets_every_message_once_in_publish_order() {
    let server = start_meridian(&["--shards", "4", "--persistence", "off"]);
    // Connections are spread over the shard threads; open several subscribers.
    let mut subscribers: Vec<redis::Connection> = (0..4).map(|_| connect(&server)).collect();
    let mut pubsubs = Vec::new();
    for con in subscribers.iter_mut() {
        let mut pubsub = con.as_pubsub();
        pubsub.subscribe("orders").unwrap();
        pubsub.psubscribe("ord*").unwrap();
        pubsub.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        pubsubs.push(pubsub);
    }
    let mut publisher = connect(&server);
    for i in 0..200 {
        let received: i64 = redis::cmd("PUBLISH").arg("orders").arg(i).query(&mut publisher).unwrap();
        assert_eq!(received, 8, "four channel and four pattern subscriptions");
    }
    for pubsub in pubsubs.iter_mut() {
        let (mut direct, mut by_pattern) = (Vec::new(), Vec::new());
        for _ in 0..400 {
            let message = pubsub.get_message().expect("a message");
            let payload: i64 = message.get_payload().unwrap();
            match message.from_pattern() {
                true => by_pattern.push(payload),
                false => direct.push(payload),
            }
        }
        assert_eq!(direct, (0..200).collect::<Vec<_>>(), "channel messages once each, in order");
        assert_eq!(by_pattern, (0..200).collect::<Vec<_>>(), "pattern messages once each, in order");
    }
}

#[test]
fn resp3_subscribers_get_push_frames() {
    let server = start_meridian(&["--persistence", "off"]);
    let mut sub = raw_connect(&server);
    sub.write_all(b"HELLO 3\r\n").unwrap();
    let hello = read_some(&mut sub, 1);
    assert!(hello.starts_with(b"%"), "HELLO 3 answers a map");
    sub.write_all(b"SUBSCRIBE news\r\n").unwrap();
    assert_eq!(read_some(&mut sub, 33), b">3\r\n$9\r\nsubscribe\r\n$4\r\nnews\r\n:1\r\n");
    // In RESP3 a subscribed client may run any command.
    sub.write_all(b"SET k v\r\n").unwrap();
    assert_eq!(read_some(&mut sub, 5), b"+OK\r\n");
    let mut publisher = connect(&server);
    let _: i64 = redis::cmd("PUBLISH").arg("news").arg("hi").query(&mut publisher).unwrap();
    assert_eq!(read_some(&mut sub, 35), b">3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$2\r\nhi\r\n");
}

#[test]
fn a_subscriber_that_stops_reading_is_disconnected_at_its_buffer_limit() {
    let server = start_meridian(&["--persistence", "off"]);
    // A small receive buffer, set before connecting, keeps the kernel from absorbing
    // tens of MiB (Linux autotunes loopback buffers up to `tcp_rmem`'s maximum, which
    // differs between machines): what piles up must pile up in the server's mailbox.
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    socket.set_recv_buffer_size(64 * 1024).unwrap();
    let addr: std::net::SocketAddr = server.addr().parse().unwrap();
    socket.connect(&addr.into()).unwrap();
    let mut sub: std::net::TcpStream = socket.into();
    sub.write_all(b"SUBSCRIBE firehose\r\n").unwrap();
    read_some(&mut sub, 10);
    // The subscriber reads nothing more. Publish 8 MiB at a time until the server cuts
    // it off; it must do so well before 256 MiB (8× the 32 MiB limit).
    let mut publisher = connect(&server);
    let payload = vec![b'x'; 64 * 1024];
    let mut published = 0usize;
    let mut cut_off = false;
    while !cut_off && published < 256 * 1024 * 1024 {
        let mut pipe = redis::pipe();
        for _ in 0..128 {
            pipe.cmd("PUBLISH").arg("firehose").arg(&payload[..]).ignore();
        }
        pipe.query::<()>(&mut publisher).unwrap();
        published += 128 * payload.len();
        cut_off = info_u64(&mut publisher, "stats", "pubsub_clients_disconnected") >= 1;
    }
    assert!(cut_off, "the slow subscriber was cut off (after {published} bytes published)");
    // Its socket closes once what the kernel buffered is read.
    sub.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut total = 0usize;
    let mut buf = vec![0u8; 1 << 20];
    loop {
        match sub.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => total += n,
            Err(e) => panic!("the server kept the slow subscriber's connection open: {e} after {total} bytes"),
        }
    }
    assert!(total < published, "it got less than was published ({total} of {published} bytes)");
    assert!(total < 60 * 1024 * 1024, "it got at most about its limit plus socket buffers: {total} bytes");
    let channels: Vec<String> = redis::cmd("PUBSUB").arg("CHANNELS").query(&mut publisher).unwrap();
    assert!(channels.is_empty(), "its subscription is gone: {channels:?}");
}
