//! FT.* index builds and storage through the real binary over TCP: an index created
//! over many existing documents is built in steps (FT.INFO says `indexing` until it is
//! done, and a search meanwhile answers over what is indexed so far, as RediSearch
//! does), and FLOAT16 vectors take half the memory of FLOAT32 ones.

mod common;

use std::time::{Duration, Instant};

use common::{connect, start_meridian};
use redis::Value;

const DIM: usize = 16;
/// Far more than one build step (256 keys), so the build spans many shard steps.
const DOCS: usize = 6_000;

fn text(v: &Value) -> String {
    match v {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::SimpleString(s) => s.clone(),
        Value::Int(i) => i.to_string(),
        Value::Double(d) => d.to_string(),
        other => format!("{other:?}"),
    }
}

fn info(con: &mut redis::Connection, index: &str) -> Vec<(String, String)> {
    let reply: Vec<Value> = redis::cmd("FT.INFO").arg(index).query(con).expect("FT.INFO");
    reply.chunks(2).map(|p| (text(&p[0]), text(&p[1]))).collect()
}

fn field(info: &[(String, String)], name: &str) -> String {
    info.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()).unwrap_or_else(|| panic!("FT.INFO has no {name}"))
}

fn vector(i: usize) -> Vec<f32> {
    (0..DIM).map(|d| (((i * 31 + d * 17) % 97) as f32) / 97.0 - 0.5).collect()
}

fn load(con: &mut redis::Connection, prefix: &str, element_bytes: usize) {
    let mut pipe = redis::pipe();
    for i in 0..DOCS {
        let blob: Vec<u8> = match element_bytes {
            2 => vector(i).iter().flat_map(|x| half::f16::from_f32(*x).to_le_bytes()).collect(),
            _ => vector(i).iter().flat_map(|x| x.to_le_bytes()).collect(),
        };
        pipe.cmd("HSET").arg(format!("{prefix}{i}")).arg("v").arg(blob).arg("t").arg(["a", "b"][i % 2]).ignore();
    }
    let _: () = pipe.query(con).expect("HSETs");
}

fn create(con: &mut redis::Connection, index: &str, prefix: &str, element: &str) {
    let reply: String = redis::cmd("FT.CREATE")
        .arg(index)
        .arg(&["ON", "HASH", "PREFIX", "1", prefix, "SCHEMA", "v", "VECTOR", "HNSW", "10", "TYPE", element, "DIM"])
        .arg(DIM)
        .arg(&["DISTANCE_METRIC", "L2", "M", "16", "EF_CONSTRUCTION", "64", "t", "TAG"])
        .query(con)
        .expect("FT.CREATE");
    assert_eq!(reply, "OK");
}

fn total(con: &mut redis::Connection, index: &str) -> i64 {
    let reply: Vec<Value> =
        redis::cmd("FT.SEARCH").arg(&[index, "@t:{a|b}", "NOCONTENT", "LIMIT", "0", "0"]).query(con).expect("FT.SEARCH");
    match reply.first() {
        Some(Value::Int(n)) => *n,
        other => panic!("FT.SEARCH total: {other:?}"),
    }
}

#[test]
fn an_index_over_existing_documents_builds_in_steps_and_answers_over_what_it_has_meanwhile() {
    let server = start_meridian(&["--shards", "1"]);
    let mut con = connect(&server);
    load(&mut con, "doc:", 4);
    // FT.CREATE, FT.INFO and FT.SEARCH in one pipeline: they run before the shard's
    // next build step, so they see the build after its first step.
    let mut pipe = redis::pipe();
    pipe.cmd("FT.CREATE")
        .arg(&["idx", "ON", "HASH", "PREFIX", "1", "doc:", "SCHEMA", "v", "VECTOR", "HNSW", "10", "TYPE", "FLOAT32", "DIM"])
        .arg(DIM)
        .arg(&["DISTANCE_METRIC", "L2", "M", "16", "EF_CONSTRUCTION", "64", "t", "TAG"]);
    pipe.cmd("FT.INFO").arg("idx");
    pipe.cmd("FT.SEARCH").arg(&["idx", "@t:{a|b}", "NOCONTENT", "LIMIT", "0", "0"]);
    let (created, during, found): (String, Vec<Value>, Vec<Value>) = pipe.query(&mut con).expect("pipeline");
    assert_eq!(created, "OK");
    let during: Vec<(String, String)> = during.chunks(2).map(|p| (text(&p[0]), text(&p[1]))).collect();
    assert_eq!(field(&during, "indexing"), "1", "a build of {DOCS} documents is not done in one step");
    let percent: f64 = field(&during, "percent_indexed").parse().expect("percent_indexed");
    assert!(percent > 0.0 && percent < 1.0, "percent_indexed {percent} during the build");
    let so_far = match found.first() {
        Some(Value::Int(n)) => *n as usize,
        other => panic!("FT.SEARCH total: {other:?}"),
    };
    assert!(so_far > 0 && so_far < DOCS, "a search during the build answers over what is indexed so far: {so_far}");
    assert_eq!(field(&during, "num_docs").parse::<usize>().ok(), Some(so_far));

    // Writes during the build are followed; the build ends with every document.
    let _: i64 = redis::cmd("DEL").arg("doc:5999").query(&mut con).expect("DEL");
    let started = Instant::now();
    loop {
        let now = info(&mut con, "idx");
        if field(&now, "indexing") == "0" {
            assert_eq!(field(&now, "percent_indexed"), "1");
            assert_eq!(field(&now, "num_docs"), (DOCS - 1).to_string());
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(120), "the build never finished: {now:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(total(&mut con, "idx"), (DOCS - 1) as i64);
    // Other commands were served while the build ran (the shard was never stalled for
    // the whole build): the PING below is just a liveness check after it.
    let pong: String = redis::cmd("PING").query(&mut con).expect("PING");
    assert_eq!(pong, "PONG");
}

#[test]
fn float16_vectors_take_about_half_the_memory_of_float32_ones() {
    let server = start_meridian(&["--shards", "1"]);
    let mut con = connect(&server);
    load(&mut con, "h:", 2);
    load(&mut con, "s:", 4);
    create(&mut con, "half", "h:", "FLOAT16");
    create(&mut con, "single", "s:", "FLOAT32");
    let started = Instant::now();
    let size = |con: &mut redis::Connection, index: &str| -> Option<f64> {
        let now = info(con, index);
        (field(&now, "indexing") == "0").then(|| field(&now, "vector_index_sz_mb").parse().expect("vector_index_sz_mb"))
    };
    let (half, single) = loop {
        if let (Some(h), Some(s)) = (size(&mut con, "half"), size(&mut con, "single")) {
            break (h, s);
        }
        assert!(started.elapsed() < Duration::from_secs(120), "the builds never finished");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(total(&mut con, "half"), DOCS as i64);
    // The vectors halve; the graph's links are the same for both. (Both vector
    // buffers grow alike, so the saving is half of the f32 buffer's capacity: between
    // half the f32 vectors and all of them.)
    let vectors_f32_mb = (DOCS * DIM * 4) as f64 / (1 << 20) as f64;
    let saved = single - half;
    assert!(
        saved >= 0.95 * vectors_f32_mb / 2.0 && saved <= vectors_f32_mb,
        "FLOAT16 saves {saved} MB of {single} MB; the f32 vectors take {vectors_f32_mb} MB"
    );
}
