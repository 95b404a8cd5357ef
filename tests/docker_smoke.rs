//! The three-region compose stack end to end (`docker-benchmark/smoke.sh`): images
//! built offline from this build's binary, a write in one region read in the others, a
//! region whose container and volume are deleted rebuilt from the bucket and caught up
//! from its peers, a second process with its node id fenced, then `down -v`.
//!
//! Runs when Docker works here (`docker info`) and Compose is installed; otherwise it
//! prints a loud SKIPPED line with the reason and passes. It needs `redis-cli` and a
//! Python with moto (`.ci/run` installs both): without them it skips outside CI and
//! fails in CI. It hands smoke.sh the debug binary cargo built for the tests
//! (`MERIDIAN_BIN`), so it costs no release build: about 30-60 s on the 2-core machine.

use std::process::{Command, Stdio};

/// smoke.sh bounds each of its own waits; this bounds the whole run (SIGTERM lets its
/// trap take the stack down, SIGKILL follows a minute later).
const SMOKE_TIMEOUT_S: u32 = 600;
const SMOKE_KILL_AFTER_S: u32 = 60;
/// How much of smoke.sh's output a failure shows.
const OUTPUT_TAIL_LINES: usize = 120;

/// A probe (`docker info` against an unreachable daemon, say) may take no longer than this.
const PROBE_TIMEOUT_S: u32 = 60;

fn succeeds(program: &str, args: &[&str]) -> bool {
    Command::new("timeout")
        .arg(PROBE_TIMEOUT_S.to_string())
        .arg(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// Why the smoke test cannot run here, if it cannot: Docker or Compose missing.
fn docker_missing() -> Option<&'static str> {
    if !succeeds("docker", &["info"]) {
        return Some("`docker info` failed: no Docker daemon usable here");
    }
    if !succeeds("docker", &["compose", "version"]) && !succeeds("docker-compose", &["version"]) {
        return Some("neither `docker compose` nor `docker-compose` is installed");
    }
    None
}

/// What the test needs besides Docker, if anything is missing.
fn tools_missing() -> Option<&'static str> {
    if !succeeds("redis-cli", &["--version"]) {
        return Some("redis-cli is not installed (apt-get install redis-tools)");
    }
    if !succeeds("python3", &["-c", "import moto.server"]) {
        return Some("python3 has no moto (pip install 'moto[server]')");
    }
    None
}

#[test]
fn compose_stack_replicates_and_rebuilds_a_lost_region_from_the_bucket() {
    let test = "compose_stack_replicates_and_rebuilds_a_lost_region_from_the_bucket";
    if let Some(reason) = docker_missing() {
        eprintln!("\n*** SKIPPED {test}: {reason} ***\n");
        return;
    }
    if let Some(reason) = tools_missing() {
        assert!(std::env::var_os("CI").is_none(), "{test} needs, in CI: {reason}");
        eprintln!("\n*** SKIPPED {test}: {reason} ***\n");
        return;
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/docker-benchmark/smoke.sh");
    let output = Command::new("timeout")
        .args([&format!("--kill-after={SMOKE_KILL_AFTER_S}"), &SMOKE_TIMEOUT_S.to_string(), "bash", script])
        .env("MERIDIAN_BIN", env!("CARGO_BIN_EXE_meridian"))
        .stdin(Stdio::null())
        .output()
        .expect("run docker-benchmark/smoke.sh");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let summary = stdout.lines().last().unwrap_or("");
    eprintln!("{summary}");
    if !output.status.success() {
        let lines: Vec<&str> = stderr.lines().collect();
        let tail = lines[lines.len().saturating_sub(OUTPUT_TAIL_LINES)..].join("\n");
        panic!("smoke.sh failed ({}):\n{tail}\n{stdout}", output.status);
    }
    assert!(summary.starts_with("smoke: PASS"), "smoke.sh exited 0 without a PASS line: {stdout}");
}
