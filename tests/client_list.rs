//! CLIENT LIST's buffer and transaction fields on a real server: a client listing
//! itself sees its own request in `qbuf` (as Redis), another sees a client's MULTI
//! (`flags=x`, `multi`, `multi-mem`), a blocked client (`flags=b`), an incomplete
//! request (`qbuf`) and replies waiting for a client that does not read (`obl`,
//! `omem`, `events=rw`), and buffers given back: an idle client's, and one that a big
//! reply grew while its client stays busy with small ones.

mod common;

use std::collections::HashMap;
use std::io::Write;
use std::time::Duration;

/// CLIENT LIST's line for client `id`, field by field.
fn listed(con: &mut redis::Connection, id: i64) -> HashMap<String, String> {
    let list: String = redis::cmd("CLIENT").arg("LIST").query(con).expect("CLIENT LIST");
    let line = list.lines().find(|line| line.starts_with(&format!("id={id} "))).unwrap_or_else(|| panic!("client {id} not in {list}"));
    line.split(' ').filter_map(|field| field.split_once('=')).map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn number(fields: &HashMap<String, String>, name: &str) -> i64 {
    fields[name].parse().unwrap_or_else(|_| panic!("{name} is not a number: {fields:?}"))
}

/// The id of the client `con` is.
fn client_id(con: &mut redis::Connection) -> i64 {
    redis::cmd("CLIENT").arg("ID").query(con).expect("CLIENT ID")
}

/// Wait until client `id`'s line satisfies `check`; the last line seen otherwise.
fn eventually_listed(con: &mut redis::Connection, id: i64, check: impl Fn(&HashMap<String, String>) -> bool) -> HashMap<String, String> {
    let mut fields = listed(con, id);
    for _ in 0..250 {
        if check(&fields) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
        fields = listed(con, id);
    }
    fields
}

#[test]
fn a_client_listing_itself_sees_its_own_request_in_the_query_buffer() {
    let server = common::start_meridian(&[]);
    let mut raw = common::raw_connect(&server);
    let request = b"*2\r\n$6\r\nCLIENT\r\n$4\r\nINFO\r\n";
    raw.write_all(request).expect("write");
    raw.set_read_timeout(Some(Duration::from_millis(300))).expect("timeout");
    let (reply, _) = common::read_until_close(&mut raw);
    let line = String::from_utf8_lossy(&reply).into_owned();
    let fields: HashMap<&str, &str> = line.trim_end().split(' ').filter_map(|field| field.split_once('=')).collect();
    assert_eq!(fields["qbuf"], request.len().to_string(), "{line}");
    assert_eq!((fields["flags"], fields["multi"], fields["events"], fields["omem"]), ("N", "-1", "r", "0"), "{line}");
    let size: usize = fields["rbs"].parse().expect("rbs");
    assert!(size >= request.len(), "{line}");
    assert_eq!(fields["qbuf-free"], (size - request.len()).to_string(), "{line}");
}

#[test]
fn client_list_shows_a_transaction_and_a_blocked_client() {
    let server = common::start_meridian(&[]);
    let mut observer = common::connect(&server);
    let mut in_multi = common::connect(&server);
    let multi_id = client_id(&mut in_multi);
    let _: () = redis::cmd("MULTI").query(&mut in_multi).expect("MULTI");
    for args in [&["SET", "k", "value"][..], &["INCR", "n"], &["CLIENT", "GETNAME"]] {
        let queued: String = common::command(args).query(&mut in_multi).expect("queued");
        assert_eq!(queued, "QUEUED");
    }
    let fields = listed(&mut observer, multi_id);
    assert_eq!((fields["flags"].as_str(), number(&fields, "multi")), ("x", 3), "{fields:?}");
    // As Redis: a queued container command is named by its subcommand.
    assert_eq!(fields["cmd"], "client|getname", "{fields:?}");
    assert!(number(&fields, "multi-mem") >= ("SETkvalueINCRn".len() as i64), "{fields:?}");
    let _: redis::Value = redis::cmd("EXEC").query(&mut in_multi).expect("EXEC");
    let fields = listed(&mut observer, multi_id);
    assert_eq!((fields["flags"].as_str(), number(&fields, "multi"), number(&fields, "multi-mem")), ("N", -1, 0), "{fields:?}");

    let mut blocked = common::raw_connect(&server);
    let blocked_id = common::raw_client_id(&mut blocked);
    blocked.write_all(b"BLPOP queue 0\r\n").expect("write");
    let fields = eventually_listed(&mut observer, blocked_id, |f| f["flags"] == "b");
    assert_eq!(fields["flags"], "b", "{fields:?}");
    let _: i64 = redis::cmd("RPUSH").arg("queue").arg("x").query(&mut observer).expect("RPUSH");
    let fields = eventually_listed(&mut observer, blocked_id, |f| f["flags"] == "N");
    assert_eq!(fields["flags"], "N", "{fields:?}");
}

#[test]
fn client_list_shows_an_incomplete_request_and_replies_a_client_does_not_read() {
    let server = common::start_meridian(&[]);
    let mut observer = common::connect(&server);

    let mut partial = common::raw_connect(&server);
    let partial_id = common::raw_client_id(&mut partial);
    // SET and the key are parsed (argv-mem); the value's 3 of 5 bytes wait in the buffer.
    partial.write_all(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nval").expect("write");
    let fields = eventually_listed(&mut observer, partial_id, |f| f["qbuf"] == "3");
    assert_eq!((number(&fields, "qbuf"), number(&fields, "argv-mem")), (3, 4), "{fields:?}");
    partial.write_all(b"ue\r\n").expect("write");
    let fields = eventually_listed(&mut observer, partial_id, |f| f["qbuf"] == "0");
    assert_eq!((number(&fields, "qbuf"), number(&fields, "argv-mem")), (0, 0), "{fields:?}");
    assert!(number(&fields, "rbp") >= 3, "{fields:?}");

    // 64 MiB of replies: more than loopback's socket buffers take.
    let value = vec![b'v'; 1 << 20];
    let _: () = redis::cmd("SET").arg("big").arg(value).query(&mut observer).expect("SET");
    let mut deaf = common::raw_connect(&server);
    let deaf_id = common::raw_client_id(&mut deaf);
    deaf.write_all(&b"GET big\r\n".repeat(64)).expect("write");
    let fields = eventually_listed(&mut observer, deaf_id, |f| f["events"] == "rw");
    assert_eq!(fields["events"], "rw", "{fields:?}");
    let pending = number(&fields, "omem");
    assert!(pending > 0 && pending <= 64 << 20, "{fields:?}");
    assert_eq!(fields["obl"], fields["omem"], "{fields:?}");
    assert!(number(&fields, "tot-mem") >= pending, "{fields:?}");
    // Once the client reads everything, nothing waits.
    deaf.set_read_timeout(Some(Duration::from_millis(500))).expect("timeout");
    let (replies, _) = common::read_until_close(&mut deaf);
    assert_eq!(replies.len(), 64 * ((1 << 20) + "$1048576\r\n\r\n".len()));
    let fields = eventually_listed(&mut observer, deaf_id, |f| f["events"] == "r");
    assert_eq!((fields["events"].as_str(), number(&fields, "omem")), ("r", 0), "{fields:?}");
}

#[test]
fn an_idle_client_gives_back_its_buffers_and_a_big_reply_does_not_pin_one() {
    let server = common::start_meridian(&[]);
    let mut observer = common::connect(&server);

    let mut idle = common::connect(&server);
    let idle_id = client_id(&mut idle);
    let fields = listed(&mut observer, idle_id);
    assert!(number(&fields, "rbs") > 0 && number(&fields, "tot-mem") > 0, "a fresh client holds its buffers: {fields:?}");
    // Two seconds idle (the sweep looks every quarter second): nothing held.
    let fields = eventually_listed(&mut observer, idle_id, |f| f["tot-mem"] == "0");
    assert_eq!((number(&fields, "rbs"), number(&fields, "qbuf-free"), number(&fields, "tot-mem")), (0, 0, 0), "{fields:?}");
    assert!(number(&fields, "idle") >= 2, "{fields:?}");
    // It still serves, from buffers made again.
    let pong: String = redis::cmd("PING").query(&mut idle).expect("PING");
    assert_eq!(pong, "PONG");
    let value: Option<String> = redis::cmd("GET").arg("missing").query(&mut idle).expect("GET");
    assert_eq!(value, None);

    let mut busy = common::connect(&server);
    let busy_id = client_id(&mut busy);
    let _: () = redis::cmd("SET").arg("big").arg(vec![b'v'; 1 << 20]).query(&mut busy).expect("SET");
    let big: Vec<u8> = redis::cmd("GET").arg("big").query(&mut busy).expect("GET");
    assert_eq!(big.len(), 1 << 20);
    // Small requests every 20 ms keep it from idling; its big buffers still go.
    let mut fields = listed(&mut observer, busy_id);
    for _ in 0..100 {
        let _: Option<String> = redis::cmd("GET").arg("small").query(&mut busy).expect("GET");
        fields = listed(&mut observer, busy_id);
        if number(&fields, "tot-mem") < 64 * 1024 {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(number(&fields, "tot-mem") < 64 * 1024, "{fields:?}");
    assert!(number(&fields, "idle") < 2, "{fields:?}");
}
