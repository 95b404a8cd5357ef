//! `maelstrom-harness` (what `maelstrom/check` runs), CI-sized: every workload passes
//! on three node processes under partitions, loss, duplication and latency; lin-kv
//! passes on one node and is shown to fail on three (the eventual-consistency trade,
//! docs/testing.md); a planted fault that drops all replication makes each
//! convergence check fail. Each run takes a few seconds.

use std::process::Command;

struct Outcome {
    code: i32,
    summary: String,
    stdout: String,
}

fn harness(workload: &str, args: &[&str]) -> Outcome {
    let output = Command::new(env!("CARGO_BIN_EXE_maelstrom-harness"))
        .arg(workload)
        .args(["--seconds", "3", "--seed", "7"])
        .args(args)
        .args(["--node-bin", env!("CARGO_BIN_EXE_meridian-maelstrom")])
        .output()
        .expect("the harness runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let summary = stdout.lines().last().unwrap_or_default().to_string();
    eprintln!("{stdout}{}", String::from_utf8_lossy(&output.stderr));
    Outcome { code: output.status.code().unwrap_or(-1), summary, stdout }
}

fn assert_passes(workload: &str, args: &[&str]) {
    let run = harness(workload, args);
    assert_eq!(run.code, 0, "{workload} should pass: {}", run.stdout);
    assert!(run.summary.starts_with(&format!("PASS {workload} ")), "the summary is the last line: {}", run.summary);
}

fn assert_fails(workload: &str, args: &[&str], why: &str) {
    let run = harness(workload, args);
    assert_eq!(run.code, 1, "{workload} {args:?} should be caught: {}", run.stdout);
    assert!(run.summary.starts_with(&format!("FAIL {workload} ")), "the summary is the last line: {}", run.summary);
    assert!(run.summary.contains(why), "{why:?} in {}", run.summary);
}

#[test]
fn g_set_on_three_nodes_reads_every_acknowledged_add_everywhere_after_partitions() {
    assert_passes("g-set", &["--nodes", "3"]);
}

#[test]
fn g_counter_on_three_nodes_reads_the_acknowledged_sum_after_partitions() {
    assert_passes("g-counter", &["--nodes", "3"]);
}

#[test]
fn pn_counter_on_three_nodes_reads_the_acknowledged_sum_after_partitions() {
    assert_passes("pn-counter", &["--nodes", "3"]);
}

#[test]
fn broadcast_on_three_nodes_delivers_every_message_to_every_node() {
    assert_passes("broadcast", &["--nodes", "3"]);
}

#[test]
fn lin_kv_on_one_node_is_linearizable() {
    assert_passes("lin-kv", &["--nodes", "1"]);
}

#[test]
fn lin_kv_on_three_nodes_is_not_linearizable_and_the_checker_says_so() {
    assert_fails("lin-kv", &["--nodes", "3"], "linearizability violations");
}

#[test]
fn a_planted_fault_that_drops_replication_fails_the_set_counter_and_broadcast_checks() {
    for workload in ["g-set", "pn-counter", "broadcast"] {
        assert_fails(workload, &["--nodes", "3", "--plant", "drop-replication", "--converge-seconds", "1"], "violations");
    }
}
