//! The node's FT.* definition cache against the real binary over TCP: a query never
//! runs with a definition older than one whose change it could know of. FT.ALTER and
//! FT.DROPINDEX are seen by the same connection's next query, and a definition
//! created, altered or dropped on a peer node is seen by the first query after the
//! nodes converged.

mod common;

use std::time::Duration;

use common::cluster::Cluster;
use common::{connect, start_meridian};
use redis::Value;

const CONVERGE: Duration = Duration::from_secs(30);

fn run(con: &mut redis::Connection, args: &[&str]) -> redis::RedisResult<Value> {
    let mut cmd = redis::cmd(args[0]);
    for arg in &args[1..] {
        cmd.arg(*arg);
    }
    cmd.query(con)
}

fn ok(con: &mut redis::Connection, args: &[&str]) {
    match run(con, args) {
        Ok(Value::Okay) => {}
        other => panic!("{args:?} answered {other:?}"),
    }
}

/// The keys FT.SEARCH answers (NOCONTENT, every one: the default page is 10), sorted.
fn search_keys(con: &mut redis::Connection, query: &str) -> redis::RedisResult<Vec<String>> {
    let reply = run(con, &["FT.SEARCH", "idx", query, "NOCONTENT", "LIMIT", "0", "1000", "DIALECT", "2"])?;
    let Value::Array(items) = reply else { panic!("FT.SEARCH answered {reply:?}") };
    let mut keys: Vec<String> = items
        .iter()
        .skip(1)
        .map(|v| match v {
            Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
            other => panic!("not a key: {other:?}"),
        })
        .collect();
    keys.sort();
    Ok(keys)
}

fn error_text(result: redis::RedisResult<Vec<String>>) -> String {
    match result {
        Err(e) => common::error_text(&e),
        Ok(keys) => panic!("expected an error, got {keys:?}"),
    }
}

/// Documents with tags in fields `f0`..`f9`; only `color` is indexed at first.
fn setup(con: &mut redis::Connection) {
    ok(con, &["FT.CREATE", "idx", "ON", "HASH", "PREFIX", "1", "doc:", "SCHEMA", "color", "TAG"]);
    for i in 0..20 {
        let key = format!("doc:{i}");
        let mut args = vec!["HSET".to_string(), key, "color".into(), "red".into()];
        for f in 0..10 {
            args.extend([format!("f{f}"), if i % 2 == 0 { "even".into() } else { "odd".into() }]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run(con, &args).expect("HSET");
    }
}

fn evens() -> Vec<String> {
    let mut keys: Vec<String> = (0..20).step_by(2).map(|i| format!("doc:{i}")).collect();
    keys.sort();
    keys
}

#[test]
fn ft_alter_then_ft_search_on_the_same_connection_sees_the_new_field_every_time() {
    // Several shards: the definition's key lives on one, the connection on any.
    let server = start_meridian(&["--persistence", "off", "--shards", "4"]);
    let mut con = connect(&server);
    setup(&mut con);
    for f in 0..10 {
        let field = format!("f{f}");
        let query = format!("@{field}:{{even}}");
        // Queried before the field exists: the cache now holds the old definition.
        assert_eq!(search_keys(&mut con, &query).expect("FT.SEARCH"), Vec::<String>::new(), "{field} not indexed yet");
        ok(&mut con, &["FT.ALTER", "idx", "SCHEMA", "ADD", &field, "TAG"]);
        assert_eq!(search_keys(&mut con, &query).expect("FT.SEARCH"), evens(), "the query right after FT.ALTER ADD {field}");
        // FT.INFO reads the parsed schema from the cache too.
        let info = run(&mut con, &["FT.INFO", "idx"]).expect("FT.INFO");
        let Value::Array(pairs) = info else { panic!("FT.INFO answered {info:?}") };
        let attributes = pairs
            .chunks(2)
            .find(|p| {
                matches!(&p[0], Value::SimpleString(s) if s == "attributes") || matches!(&p[0], Value::BulkString(b) if b == b"attributes")
            })
            .map(|p| match &p[1] {
                Value::Array(a) => a.len(),
                other => panic!("attributes: {other:?}"),
            })
            .expect("FT.INFO lists attributes");
        assert_eq!(attributes, f + 2, "FT.INFO right after FT.ALTER ADD {field}");
    }
}

#[test]
fn ft_dropindex_then_ft_search_is_no_such_index_and_a_new_index_of_that_name_is_used() {
    let server = start_meridian(&["--persistence", "off", "--shards", "4"]);
    let mut con = connect(&server);
    setup(&mut con);
    assert_eq!(search_keys(&mut con, "@color:{red}").expect("FT.SEARCH").len(), 20);
    ok(&mut con, &["FT.DROPINDEX", "idx"]);
    let error = error_text(search_keys(&mut con, "@color:{red}"));
    assert!(error.contains("idx: no such index"), "{error}");
    // The same name again, with another schema: the next query uses it.
    ok(&mut con, &["FT.CREATE", "idx", "ON", "HASH", "PREFIX", "1", "doc:", "SCHEMA", "f0", "TAG"]);
    assert_eq!(search_keys(&mut con, "@f0:{even}").expect("FT.SEARCH"), evens());
    assert_eq!(search_keys(&mut con, "@color:{red}").expect("FT.SEARCH"), Vec::<String>::new(), "color is no longer indexed");
    // A definition key deleted by hand (not FT.DROPINDEX) is seen as well.
    let deleted: i64 = redis::cmd("DEL").arg("__meridian_ft:idx").query(&mut con).expect("DEL");
    assert_eq!(deleted, 1);
    let error = error_text(search_keys(&mut con, "@f0:{even}"));
    assert!(error.contains("idx: no such index"), "{error}");
}

#[test]
fn a_definition_created_altered_or_dropped_on_a_peer_is_seen_by_the_next_query_after_convergence() {
    let cluster = Cluster::start(2, &["--persistence", "off", "--shards", "2"]);
    let (mut here, mut peer) = (cluster.con(0), cluster.con(1));
    setup(&mut peer);
    cluster.wait_converged(CONVERGE);
    assert_eq!(search_keys(&mut here, "@color:{red}").expect("FT.SEARCH").len(), 20, "created on the peer");
    assert_eq!(search_keys(&mut here, "@f3:{even}").expect("FT.SEARCH"), Vec::<String>::new());
    ok(&mut peer, &["FT.ALTER", "idx", "SCHEMA", "ADD", "f3", "TAG"]);
    cluster.wait_converged(CONVERGE);
    assert_eq!(search_keys(&mut here, "@f3:{even}").expect("FT.SEARCH"), evens(), "altered on the peer");
    ok(&mut peer, &["FT.DROPINDEX", "idx"]);
    cluster.wait_converged(CONVERGE);
    let error = error_text(search_keys(&mut here, "@f3:{even}"));
    assert!(error.contains("idx: no such index"), "dropped on the peer: {error}");
}
