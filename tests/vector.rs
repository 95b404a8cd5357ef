//! FT.* against the real binary over TCP: KNN exactness (FLAT against brute force),
//! filters that never let an outside document through, updates and deletes that never
//! show, recovery, and a 3-node cluster where documents written on every node become
//! searchable everywhere with identical answers.

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::cluster::Cluster;
use common::{TempDir, command, connect, query_error, start_meridian, start_meridian_on};
use rand::{Rng, SeedableRng};
use redis::Value;

const DIM: usize = 16;
const CONVERGE: Duration = Duration::from_secs(30);

fn blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn random_vector(rng: &mut impl Rng) -> Vec<f32> {
    (0..DIM).map(|_| rng.random_range(-1.0f32..1.0)).collect()
}

fn l2(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

struct Doc {
    key: String,
    v: Vec<f32>,
    tag: &'static str,
    n: i64,
}

fn create(con: &mut redis::Connection, algorithm: &str) {
    let params: Vec<String> = match algorithm {
        "FLAT" => vec!["6".into(), "TYPE".into(), "FLOAT32".into(), "DIM".into(), DIM.to_string(), "DISTANCE_METRIC".into(), "L2".into()],
        _ => ["10", "TYPE", "FLOAT32", "DIM", &DIM.to_string(), "DISTANCE_METRIC", "L2", "M", "16", "EF_CONSTRUCTION", "200"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
    };
    let reply: String = redis::cmd("FT.CREATE")
        .arg("idx")
        .arg(&["ON", "HASH", "PREFIX", "1", "doc:", "SCHEMA", "v", "VECTOR", algorithm])
        .arg(params)
        .arg(&["color", "TAG", "n", "NUMERIC"])
        .query(con)
        .expect("FT.CREATE");
    assert_eq!(reply, "OK");
}

fn write(con: &mut redis::Connection, doc: &Doc) {
    let _: i64 =
        redis::cmd("HSET").arg(&doc.key).arg("v").arg(blob(&doc.v)).arg("color").arg(doc.tag).arg("n").arg(doc.n).query(con).expect("HSET");
}

fn make_docs(seed: u64, count: usize, prefix: &str) -> Vec<Doc> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    (0..count)
        .map(|i| Doc {
            key: format!("doc:{prefix}{i}"),
            v: random_vector(&mut rng),
            tag: ["red", "green", "blue", "cyan"][i % 4],
            n: (i % 100) as i64,
        })
        .collect()
}

/// FT.SEARCH's (key, score) list for a KNN query with a filter.
fn knn(con: &mut redis::Connection, filter: &str, k: usize, q: &[f32], extra: &[&str]) -> Vec<(String, f64)> {
    let query = format!("{filter}=>[KNN {k} @v $q AS score]");
    let reply: Value = redis::cmd("FT.SEARCH")
        .arg("idx")
        .arg(query)
        .arg(&["RETURN", "2", "score", "color", "LIMIT", "0", "1000"])
        .arg(extra)
        .arg("PARAMS")
        .arg(2)
        .arg("q")
        .arg(blob(q))
        .arg(&["DIALECT", "2"])
        .query(con)
        .expect("FT.SEARCH");
    parse_hits(reply).into_iter().map(|(key, fields)| (key, fields["score"].parse::<f64>().expect("score"))).collect()
}

fn text(v: &Value) -> String {
    match v {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::SimpleString(s) => s.clone(),
        Value::Int(n) => n.to_string(),
        other => panic!("not text: {other:?}"),
    }
}

fn parse_hits(reply: Value) -> Vec<(String, HashMap<String, String>)> {
    let Value::Array(items) = reply else { panic!("FT.SEARCH answered {reply:?}") };
    let mut out = Vec::new();
    let mut rest = items.into_iter().skip(1);
    while let Some(key) = rest.next() {
        let Some(Value::Array(fields)) = rest.next() else { panic!("no field list") };
        let map = fields.chunks(2).map(|p| (text(&p[0]), text(&p[1]))).collect();
        out.push((text(&key), map));
    }
    out
}

fn brute_force(docs: &[Doc], q: &[f32], k: usize, keep: impl Fn(&Doc) -> bool) -> Vec<String> {
    let mut all: Vec<(f32, &str)> = docs.iter().filter(|d| keep(d)).map(|d| (l2(&d.v, q), d.key.as_str())).collect();
    all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(b.1)));
    all.into_iter().take(k).map(|(_, key)| key.to_string()).collect()
}

#[test]
fn flat_knn_over_four_shards_is_exactly_brute_force_and_filters_hold() {
    let server = start_meridian(&["--shards", "4"]);
    let mut con = connect(&server);
    let docs = make_docs(1, 400, "");
    // Half written before FT.CREATE (indexed by the build scan), half after.
    docs[..200].iter().for_each(|d| write(&mut con, d));
    create(&mut con, "FLAT");
    docs[200..].iter().for_each(|d| write(&mut con, d));
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2);
    for _ in 0..10 {
        let q = random_vector(&mut rng);
        let found: Vec<String> = knn(&mut con, "*", 10, &q, &[]).into_iter().map(|h| h.0).collect();
        assert_eq!(found, brute_force(&docs, &q, 10, |_| true));
        let filtered = knn(&mut con, "(@color:{red|blue} -@n:[10 (50])", 15, &q, &[]);
        let expected = brute_force(&docs, &q, 15, |d| (d.tag == "red" || d.tag == "blue") && !(10..50).contains(&d.n));
        assert_eq!(filtered.iter().map(|h| h.0.clone()).collect::<Vec<_>>(), expected);
    }
    // FT.INFO counts every shard's documents; FT._LIST names the index.
    let info: Vec<Value> = redis::cmd("FT.INFO").arg("idx").query(&mut con).expect("FT.INFO");
    let num_docs = info.chunks(2).find(|p| text(&p[0]) == "num_docs").map(|p| text(&p[1]));
    // A filter on a field the schema lacks matches nothing (as RediSearch), never all.
    let none: Value = redis::cmd("FT.SEARCH").arg(&["idx", "@nope:{x}"]).query(&mut con).expect("FT.SEARCH");
    assert_eq!(none, Value::Array(vec![Value::Int(0)]));
    assert_eq!(num_docs.as_deref(), Some("400"));
    let list: Vec<String> = redis::cmd("FT._LIST").query(&mut con).expect("FT._LIST");
    assert_eq!(list, vec!["idx".to_string()]);
}

#[test]
fn hnsw_answers_never_include_a_deleted_updated_away_or_filtered_out_document() {
    let server = start_meridian(&["--shards", "2"]);
    let mut con = connect(&server);
    create(&mut con, "HNSW");
    let mut docs = make_docs(3, 600, "");
    docs.iter().for_each(|d| write(&mut con, d));
    // Delete every third, move every fifth's tag to "gone", rewrite every seventh's vector.
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(4);
    for (i, d) in docs.iter_mut().enumerate() {
        if i % 3 == 0 {
            let _: i64 = redis::cmd("DEL").arg(&d.key).query(&mut con).expect("DEL");
        } else if i % 5 == 0 {
            d.tag = "gone";
            let _: i64 = redis::cmd("HSET").arg(&d.key).arg("color").arg("gone").query(&mut con).expect("HSET");
        } else if i % 7 == 0 {
            d.v = random_vector(&mut rng);
            let _: i64 = redis::cmd("HSET").arg(&d.key).arg("v").arg(blob(&d.v)).query(&mut con).expect("HSET");
        }
    }
    let live: Vec<&Doc> = docs.iter().enumerate().filter(|(i, _)| i % 3 != 0).map(|(_, d)| d).collect();
    let mut hits = 0;
    for _ in 0..20 {
        let q = random_vector(&mut rng);
        let found = knn(&mut con, "@color:{red|green|blue|cyan}", 10, &q, &["DIALECT", "2"]);
        for (key, score) in &found {
            let doc = live.iter().find(|d| &d.key == key).unwrap_or_else(|| panic!("{key} was deleted but returned"));
            assert_ne!(doc.tag, "gone", "{key} is outside the filter");
            assert!((l2(&doc.v, &q) as f64 - score).abs() < 1e-3, "{key}'s score is not its current vector's distance");
        }
        let owned: Vec<Doc> = live.iter().map(|d| Doc { key: d.key.clone(), v: d.v.clone(), tag: d.tag, n: d.n }).collect();
        let exact = brute_force(&owned, &q, 10, |d| d.tag != "gone");
        hits += found.iter().filter(|(k, _)| exact.contains(k)).count();
    }
    assert!(hits as f64 / 200.0 >= 0.9, "recall@10 {}", hits as f64 / 200.0);
}

#[test]
fn unsupported_or_wrong_ft_commands_are_errors_naming_what_is_wrong() {
    let server = start_meridian(&[]);
    let mut con = connect(&server);
    create(&mut con, "FLAT");
    let err = |args: &[&str]| query_error(&command(args), &mut connect(&server));
    assert_eq!(err(&["FT.CREATE", "idx", "SCHEMA", "t", "TAG"]), "Index already exists");
    assert!(err(&["FT.CREATE", "x", "SCHEMA", "at", "GEO"]).contains("GEO"));
    assert_eq!(err(&["FT.SEARCH", "nope", "*"]), "nope: no such index");
    assert!(err(&["FT.SEARCH", "idx", "hello", "SCORER", "HAMMING"]).contains("HAMMING"));
    assert!(err(&["FT.SEARCH", "idx", "hello", "LANGUAGE", "chinese"]).contains("chinese"));
    assert!(err(&["FT.SEARCH", "idx", "@n:{x}"]).contains("not a TAG"));
    assert!(err(&["FT.SEARCH", "idx", "*", "SUMMARIZE"]).contains("SUMMARIZE"));
    assert!(err(&["FT.SEARCH", "idx", "*=>[KNN 3 @v $q]", "PARAMS", "2", "q", "abc", "DIALECT", "2"]).contains("blob size"));
    assert_eq!(err(&["FT.DROPINDEX", "nope"]), "Unknown Index name");
    // NOCONTENT and a pure filter query: keys only, every match counted.
    write(&mut con, &Doc { key: "doc:x".into(), v: vec![0.0; DIM], tag: "red", n: 5 });
    write(&mut con, &Doc { key: "doc:y".into(), v: vec![0.0; DIM], tag: "blue", n: 6 });
    let reply: Value = redis::cmd("FT.SEARCH").arg(&["idx", "@n:[5 5]", "NOCONTENT"]).query(&mut con).expect("FT.SEARCH");
    assert_eq!(reply, Value::Array(vec![Value::Int(1), Value::BulkString(b"doc:x".to_vec())]));
    // DROPINDEX DD deletes the documents too.
    let _: () = redis::cmd("FT.DROPINDEX").arg(&["idx", "DD"]).query(&mut con).expect("FT.DROPINDEX");
    let exists: i64 = redis::cmd("EXISTS").arg(&["doc:x", "doc:y"]).query(&mut con).expect("EXISTS");
    assert_eq!(exists, 0);
    let list: Vec<String> = redis::cmd("FT._LIST").query(&mut con).expect("FT._LIST");
    assert!(list.is_empty());
}

#[test]
fn a_restarted_node_answers_as_before_from_its_recovered_data() {
    let data = TempDir::new("vector-recovery");
    let docs = make_docs(5, 200, "");
    let q = vec![0.1f32; DIM];
    let before = {
        let server = start_meridian_on(&data.path, &[]);
        let mut con = connect(&server);
        create(&mut con, "HNSW");
        docs.iter().for_each(|d| write(&mut con, d));
        let _: () = redis::cmd("DEL").arg(&docs[0].key).query(&mut con).expect("DEL");
        let _: Value = redis::cmd("WAITAOF").arg(&[1, 0, 0]).query(&mut con).expect("WAITAOF");
        knn(&mut con, "*", 10, &q, &[])
    };
    let server = start_meridian_on(&data.path, &[]);
    let after = knn(&mut connect(&server), "*", 10, &q, &[]);
    assert_eq!(before.iter().map(|h| &h.0).collect::<Vec<_>>(), after.iter().map(|h| &h.0).collect::<Vec<_>>());
    assert!(after.iter().all(|h| h.0 != docs[0].key), "a deleted document came back after recovery");
}

#[test]
fn documents_written_on_three_nodes_are_searchable_everywhere_with_identical_answers() {
    let cluster = Cluster::start(3, &["--persistence", "off", "--shards", "2"]);
    create(&mut cluster.con(0), "HNSW");
    let mut all = Vec::new();
    for node in 0..3 {
        let docs = make_docs(10 + node as u64, 150, &format!("n{node}-"));
        let mut con = cluster.con(node);
        docs.iter().for_each(|d| write(&mut con, d));
        all.extend(docs);
    }
    // Concurrent updates and deletes of the same documents on different nodes.
    cluster.concurrently(
        &[],
        &[
            (0, &["HSET", "doc:n1-1", "color", "gone"]),
            (1, &["DEL", "doc:n1-1"]),
            (1, &["HSET", "doc:n0-2", "color", "gone"]),
            (2, &["DEL", "doc:n2-3"]),
        ],
    );
    cluster.wait_converged(CONVERGE);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(6);
    for _ in 0..10 {
        let q = random_vector(&mut rng);
        // A wide EF_RUNTIME makes each shard's walk cover its whole graph: the answers
        // are then exact, so they must be equal on every node.
        let answers: Vec<Vec<(String, f64)>> = (0..3).map(|n| knn(&mut cluster.con(n), "-@color:{gone}", 10, &q, &[])).collect();
        let wide: Vec<Vec<String>> = (0..3)
            .map(|n| {
                let query = "-@color:{gone}=>[KNN 10 @v $q EF_RUNTIME 1000 AS score]";
                let reply: Value = redis::cmd("FT.SEARCH")
                    .arg(&["idx", query, "NOCONTENT", "PARAMS", "2", "q"])
                    .arg(blob(&q))
                    .arg(&["DIALECT", "2"])
                    .query(&mut cluster.con(n))
                    .expect("FT.SEARCH");
                let Value::Array(items) = reply else { panic!() };
                items.iter().skip(1).map(text).collect()
            })
            .collect();
        assert_eq!(wide[0], wide[1]);
        assert_eq!(wide[1], wide[2]);
        for answer in &answers {
            assert!(answer.iter().all(|(k, _)| k != "doc:n1-1" && k != "doc:n0-2" && k != "doc:n2-3"), "{answer:?}");
        }
        // The exact answer over the converged data.
        let expected = brute_force(&all, &q, 10, |d| !["doc:n1-1", "doc:n0-2", "doc:n2-3"].contains(&d.key.as_str()));
        assert_eq!(wide[0], expected);
    }
    // The definition itself reached every node.
    for node in 0..3 {
        let list: Vec<String> = redis::cmd("FT._LIST").query(&mut cluster.con(node)).expect("FT._LIST");
        assert_eq!(list, vec!["idx".to_string()], "node {node}");
    }
}
