//! A vector-search load generator in Rust, for the servers' side of the comparison
//! (docs/vector.md, "Measured"): `bench-vector.py` drives the servers with redis-py,
//! whose own cost per query (~100 us) is larger than either server's search at low
//! EF_RUNTIME, so its 1-client figures measure mostly Python. This sends the same
//! commands (the same index, documents, tags and queries) over raw RESP from threads.
//!
//! cargo run --release --example vector_load -- --meridian-port 6391 --redisearch-port 6390
//!     [--meridian-port NAME=PORT ...] [--docs 50000] [--queries 1000] [--clients 16] [--ef 10,15,20,30,40,80]
//!     [--data ../shared/data/minilm-docs] [--recall-floor 0.95] [--repeat 1]
//!
//! For each server: FLUSHALL, FT.CREATE (HNSW M 16 EF_CONSTRUCTION 200, FLOAT32,
//! COSINE, a TAG field), the documents as pipelined HSETs (200 per round trip, one
//! connection, as `bench-vector.py` does), then for each EF_RUNTIME, unfiltered and
//! with a tag on 10 % of the documents: recall@10 against the exact top 10 (computed
//! here by scan), queries/s with 1 client and with `--clients`, and the server's CPU
//! per query (INFO's used_cpu_user + used_cpu_sys, every thread, before and after: what
//! a query costs the server, steadier than a 1-client q/s that is mostly waiting on the
//! round trip). `--repeat N` sends the query list N times per measurement. Then the
//! ratios Meridian / RediSearch at the best q/s, and at the least CPU per query,
//! reaching the recall floor. Either port may be left out.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::Instant;

use meridian::engine::vector::distance::{dot, normalize};

#[path = "common/minilm.rs"]
mod minilm;

use minilm::read_rows;

const K: usize = 10;
const INSERT_BATCH: usize = 200;

struct Args {
    ports: Vec<(&'static str, u16)>,
    docs: usize,
    queries: usize,
    clients: usize,
    ef: Vec<usize>,
    data: String,
    recall_floor: f64,
    /// How many times each measurement sends the query list (a longer run, steadier q/s).
    repeat: usize,
}

fn parse_args() -> Args {
    let mut args = Args {
        ports: Vec::new(),
        docs: 50_000,
        queries: 1_000,
        clients: 16,
        ef: vec![10, 15, 20, 30, 40, 80],
        data: "../shared/data/minilm-docs".into(),
        recall_floor: 0.95,
        repeat: 1,
    };
    let argv: Vec<String> = std::env::args().skip(1).collect();
    for pair in argv.chunks(2) {
        let [flag, value] = pair else { panic!("{} needs a value", pair[0]) };
        let number = || value.parse::<usize>().unwrap_or_else(|_| panic!("{flag}: not a number: {value}"));
        match flag.as_str() {
            // `PORT`, or `NAME=PORT` to compare several Meridian servers (each against RediSearch).
            "--meridian-port" => match value.split_once('=') {
                Some((name, port)) => args.ports.push((name.to_string().leak(), port.parse().expect("--meridian-port NAME=PORT"))),
                None => args.ports.push(("meridian", number() as u16)),
            },
            "--redisearch-port" => args.ports.push(("redisearch", number() as u16)),
            "--docs" => args.docs = number(),
            "--queries" => args.queries = number(),
            "--clients" => args.clients = number(),
            "--ef" => args.ef = value.split(',').map(|e| e.parse().expect("--ef: numbers separated by commas")).collect(),
            "--data" => args.data = value.clone(),
            "--recall-floor" => args.recall_floor = value.parse().expect("--recall-floor: a number"),
            "--repeat" => args.repeat = number().max(1),
            _ => panic!("unknown flag {flag}"),
        }
    }
    args
}

/// The exact cosine top K among `rows` for each query.
fn exact_truth(base: &[Vec<f32>], queries: &[Vec<f32>], rows: &[usize]) -> Vec<Vec<usize>> {
    let unit = |v: &Vec<f32>| {
        let mut v = v.clone();
        normalize(&mut v);
        v
    };
    let base: Vec<Vec<f32>> = rows.iter().map(|&r| unit(&base[r])).collect();
    queries
        .iter()
        .map(|q| {
            let q = unit(q);
            let mut scored: Vec<(f32, usize)> = base.iter().zip(rows).map(|(v, &r)| (-dot(v, &q), r)).collect();
            scored.select_nth_unstable_by(K, |a, b| a.0.total_cmp(&b.0));
            scored.truncate(K);
            scored.into_iter().map(|(_, r)| r).collect()
        })
        .collect()
}

/// One RESP connection: commands out as arrays of bulk strings, replies parsed enough
/// for what this tool reads (integers, simple and bulk strings, arrays, errors).
struct Connection {
    writer: TcpStream,
    reader: BufReader<TcpStream>,
    out: Vec<u8>,
}

#[derive(Debug)]
enum Reply {
    Int,
    Text(Vec<u8>),
    Nil,
    Array(Vec<Reply>),
}

impl Connection {
    fn open(port: u16) -> Connection {
        let stream = TcpStream::connect(("127.0.0.1", port)).unwrap_or_else(|e| panic!("port {port}: {e}"));
        stream.set_nodelay(true).expect("nodelay");
        Connection { reader: BufReader::with_capacity(1 << 16, stream.try_clone().expect("clone")), writer: stream, out: Vec::new() }
    }

    fn push(&mut self, args: &[&[u8]]) {
        write!(self.out, "*{}\r\n", args.len()).expect("buffer");
        for arg in args {
            write!(self.out, "${}\r\n", arg.len()).expect("buffer");
            self.out.extend_from_slice(arg);
            self.out.extend_from_slice(b"\r\n");
        }
    }

    fn flush(&mut self) {
        self.writer.write_all(&self.out).expect("write");
        self.out.clear();
    }

    fn read(&mut self) -> Reply {
        let mut line = Vec::new();
        self.reader.read_until(b'\n', &mut line).expect("read");
        assert!(line.ends_with(b"\r\n"), "connection closed or malformed reply: {line:?}");
        let body = &line[1..line.len() - 2];
        let number = || std::str::from_utf8(body).ok().and_then(|s| s.parse::<i64>().ok()).expect("a number");
        match line[0] {
            b'+' => Reply::Text(body.to_vec()),
            b'-' => panic!("server error: {}", String::from_utf8_lossy(body)),
            b':' => {
                number();
                Reply::Int
            }
            b'$' if number() < 0 => Reply::Nil,
            b'$' => {
                let mut data = vec![0; number() as usize + 2];
                std::io::Read::read_exact(&mut self.reader, &mut data).expect("read bulk");
                data.truncate(data.len() - 2);
                Reply::Text(data)
            }
            b'*' => Reply::Array((0..number().max(0)).map(|_| self.read()).collect()),
            other => panic!("unexpected reply type {}", other as char),
        }
    }

    fn call(&mut self, args: &[&[u8]]) -> Reply {
        self.push(args);
        self.flush();
        self.read()
    }
}

fn tag(doc: usize) -> &'static [u8] {
    // Every tenth document carries tag "a" (10 %), the rest "b" (as bench-vector.py).
    if doc.is_multiple_of(10) { b"a" } else { b"b" }
}

fn vector_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Inserts per second and the server's CPU microseconds per insert.
fn load(port: u16, base: &[Vec<f32>]) -> (f64, f64) {
    let mut con = Connection::open(port);
    con.call(&[b"FLUSHALL"]);
    let create: Vec<&[u8]> = [
        "FT.CREATE",
        "bench",
        "ON",
        "HASH",
        "PREFIX",
        "1",
        "d:",
        "SCHEMA",
        "v",
        "VECTOR",
        "HNSW",
        "10",
        "TYPE",
        "FLOAT32",
        "DIM",
        "384",
        "DISTANCE_METRIC",
        "COSINE",
        "M",
        "16",
        "EF_CONSTRUCTION",
        "200",
        "tag",
        "TAG",
    ]
    .iter()
    .map(|s| s.as_bytes())
    .collect();
    con.call(&create);
    let cpu_before = server_cpu_seconds(&mut con);
    let start = Instant::now();
    for (first, chunk) in base.chunks(INSERT_BATCH).enumerate().map(|(i, c)| (i * INSERT_BATCH, c)) {
        for (i, v) in chunk.iter().enumerate() {
            let key = format!("d:{}", first + i);
            con.push(&[b"HSET", key.as_bytes(), b"v", &vector_bytes(v), b"tag", tag(first + i)]);
        }
        con.flush();
        for _ in chunk {
            con.read();
        }
    }
    let rate = base.len() as f64 / start.elapsed().as_secs_f64();
    (rate, (server_cpu_seconds(&mut con) - cpu_before) * 1e6 / base.len() as f64)
}

fn ids(reply: Reply) -> Vec<usize> {
    let Reply::Array(items) = reply else { panic!("FT.SEARCH answered {reply:?}") };
    items
        .into_iter()
        .skip(1)
        .map(|item| match item {
            Reply::Text(key) => std::str::from_utf8(&key[2..]).expect("utf8").parse().expect("a document number"),
            other => panic!("a document key, got {other:?}"),
        })
        .collect()
}

/// The server process's CPU time so far (user + system, every thread), in seconds,
/// from INFO's CPU section (both servers report it from getrusage).
fn server_cpu_seconds(con: &mut Connection) -> f64 {
    let Reply::Text(info) = con.call(&[b"INFO", b"cpu"]) else { panic!("INFO cpu: not a bulk string") };
    let info = String::from_utf8_lossy(&info);
    let field = |name: &str| -> f64 {
        info.lines()
            .find_map(|line| line.strip_prefix(name).and_then(|rest| rest.strip_prefix(':')))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("INFO cpu has no {name}"))
    };
    field("used_cpu_user") + field("used_cpu_sys")
}

/// One measurement: recall@10, queries/s, and the server's CPU microseconds per query
/// (what a query costs the server whatever the client's and the VM's latency: the
/// figure to compare when the 1-client q/s is mostly waiting).
struct Measured {
    recall: f64,
    qps: f64,
    cpu_us: f64,
}

/// Recall@10, queries/s and server CPU per query of `queries` (sent `repeat` times)
/// split over `clients` threads, each with its own connection, one query in flight per
/// connection.
fn measure(port: u16, queries: &[Vec<u8>], truth: &[Vec<usize>], ef: usize, clients: usize, filtered: bool, repeat: usize) -> Measured {
    let query = format!("{}=>[KNN {K} @v $q EF_RUNTIME {ef} AS score]", if filtered { "@tag:{a}" } else { "*" });
    // Connected before the clock starts: set-up is not the server's search time.
    let mut connections: Vec<Connection> = (0..clients).map(|_| Connection::open(port)).collect();
    let mut control = Connection::open(port);
    let cpu_before = server_cpu_seconds(&mut control);
    let sent = queries.len() * repeat;
    let start = Instant::now();
    let hits: usize = std::thread::scope(|scope| {
        let workers: Vec<_> = connections
            .iter_mut()
            .enumerate()
            .map(|(c, con)| {
                let query = query.as_bytes();
                scope.spawn(move || {
                    let mut hits = 0;
                    for i in (c..sent).step_by(clients).map(|i| i % queries.len()) {
                        let reply = con.call(&[
                            b"FT.SEARCH",
                            b"bench",
                            query,
                            b"NOCONTENT",
                            b"LIMIT",
                            b"0",
                            b"10",
                            b"PARAMS",
                            b"2",
                            b"q",
                            &queries[i],
                            b"DIALECT",
                            b"2",
                        ]);
                        hits += ids(reply).iter().filter(|d| truth[i].contains(d)).count();
                    }
                    hits
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().expect("a client thread")).sum()
    });
    let elapsed = start.elapsed().as_secs_f64();
    let cpu = server_cpu_seconds(&mut control) - cpu_before;
    Measured { recall: hits as f64 / (sent * K) as f64, qps: sent as f64 / elapsed, cpu_us: cpu * 1e6 / sent as f64 }
}

type Rows = Vec<((bool, usize, usize), Measured)>;

/// The best (figure, EF_RUNTIME, recall) among settings reaching `floor`: the highest
/// q/s, or with `by_cpu` the fewest server CPU microseconds per query.
fn best(rows: &Rows, filtered: bool, clients: usize, floor: f64, by_cpu: bool) -> Option<(f64, usize, f64)> {
    let figure = |m: &Measured| if by_cpu { -m.cpu_us } else { m.qps };
    rows.iter()
        .filter(|((f, _, c), m)| *f == filtered && *c == clients && m.recall >= floor)
        .max_by(|a, b| figure(&a.1).total_cmp(&figure(&b.1)))
        .map(|((_, ef, _), m)| (if by_cpu { m.cpu_us } else { m.qps }, *ef, m.recall))
}

fn main() {
    let args = parse_args();
    assert!(!args.ports.is_empty(), "give --meridian-port and/or --redisearch-port");
    let base = read_rows(&format!("{}/base.f16", args.data), args.docs);
    let queries = read_rows(&format!("{}/queries.f16", args.data), args.queries);
    let all: Vec<usize> = (0..base.len()).collect();
    let tagged: Vec<usize> = all.iter().copied().filter(|&d| tag(d) == b"a").collect();
    let truth = exact_truth(&base, &queries, &all);
    let filtered_truth = exact_truth(&base, &queries, &tagged);
    let query_bytes: Vec<Vec<u8>> = queries.iter().map(|q| vector_bytes(q)).collect();
    let mut results = Vec::new();
    for &(name, port) in &args.ports {
        let (rate, insert_cpu_us) = load(port, &base);
        println!(
            "\n{name} (port {port}): insert {rate:.0} docs/s, {insert_cpu_us:.0} us server CPU per doc ({} docs, M 16, EF_CONSTRUCTION 200, FLOAT32)",
            base.len()
        );
        let mut rows: Rows = Vec::new();
        for filtered in [false, true] {
            let truth = if filtered { &filtered_truth } else { &truth };
            for &ef in &args.ef {
                for clients in [1, args.clients] {
                    let m = measure(port, &query_bytes, truth, ef, clients, filtered, args.repeat);
                    let kind = if filtered { "filtered 10%" } else { "unfiltered" };
                    println!(
                        "  {kind:13} EF_RUNTIME {ef:4}  clients {clients:2}  recall@10 {:.3}  {:8.0} q/s  {:6.1} us CPU/query",
                        m.recall, m.qps, m.cpu_us
                    );
                    rows.push(((filtered, ef, clients), m));
                }
            }
        }
        results.push((name, rate, insert_cpu_us, rows));
    }
    let Some((_, r_rate, r_insert_cpu, r_rows)) = results.iter().find(|(name, ..)| *name == "redisearch") else { return };
    for (m_name, m_rate, m_insert_cpu, m_rows) in results.iter().filter(|(name, ..)| *name != "redisearch") {
        println!("\nratios ({m_name} / redisearch), at recall@10 >= {}:", args.recall_floor);
        println!("  insert throughput: {:.2}x; inserts per server CPU-second: {:.2}x", m_rate / r_rate, r_insert_cpu / m_insert_cpu);
        for by_cpu in [false, true] {
            let unit = if by_cpu { "queries per server CPU-second" } else { "q/s" };
            for filtered in [false, true] {
                for clients in [1, args.clients] {
                    let kind = if filtered { "filtered 10%" } else { "unfiltered" };
                    let m = best(m_rows, filtered, clients, args.recall_floor, by_cpu);
                    let r = best(r_rows, filtered, clients, args.recall_floor, by_cpu);
                    match (m, r) {
                        (Some(m), Some(r)) => println!(
                            "  {kind:13} clients {clients:2}: {:.2}x {unit} (meridian EF {} recall {:.3}, redisearch EF {} recall {:.3})",
                            if by_cpu { r.0 / m.0 } else { m.0 / r.0 },
                            m.1,
                            m.2,
                            r.1,
                            r.2
                        ),
                        (m, r) => println!("  {kind:13} clients {clients:2}: n/a (meridian {m:?}, redisearch {r:?})"),
                    }
                }
            }
        }
    }
}
