//! `--fsync` on a real process, traced with `strace`: with `on` (the default) every
//! object the node stores in its folder (probe, manifests, segments, checkpoint parts)
//! has its bytes synced before a name points at them and its folder synced after the
//! name is made, so a power cut leaves each object whole or absent; with `off` no
//! stored object is synced. Skipped (and says so) where `strace` is missing; `.ci/run`
//! installs it.

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// One traced system call of one thread, its arguments as strace printed them (`-y`:
/// a file descriptor is followed by its path in angle brackets).
#[derive(Debug)]
struct Call {
    name: String,
    text: String,
}

/// The calls of each thread in the order it made them. A call another thread's output
/// interrupted (`<unfinished ...>` ... `<... resumed>`) counts where it started: a
/// thread makes one call at a time, so its own order is exact.
fn calls_by_thread(trace: &str) -> HashMap<u32, Vec<Call>> {
    let mut threads: HashMap<u32, Vec<Call>> = HashMap::new();
    for line in trace.lines() {
        let Some((tid, rest)) = line.trim_start().split_once(' ') else { continue };
        let Ok(tid) = tid.parse::<u32>() else { continue };
        let rest = rest.trim_start();
        if rest.starts_with("<...") || rest.starts_with("+++") || rest.starts_with("---") {
            continue;
        }
        let Some((name, _)) = rest.split_once('(') else { continue };
        threads.entry(tid).or_default().push(Call { name: name.to_string(), text: rest.to_string() });
    }
    threads
}

/// The path strace printed for the first file-descriptor argument (`fsync(7</a/b>)`).
fn fd_path(text: &str) -> Option<&str> {
    let start = text.find('<')? + 1;
    let end = start + text[start..].find('>')?;
    Some(&text[start..end])
}

/// The quoted paths among a call's arguments (`linkat(AT_FDCWD, "/a#1", AT_FDCWD, "/a", 0)`).
fn quoted_paths(text: &str) -> Vec<&str> {
    text.split('"').skip(1).step_by(2).collect()
}

/// What one stored object's write looked like in its thread's calls.
#[derive(Debug)]
struct Stored {
    dest: PathBuf,
    data_synced_before: bool,
    folder_synced_after: bool,
}

/// Every object linked or renamed into place under `root`, with whether its temporary
/// file was `fdatasync`ed before and its folder `fsync`ed after, in the same thread.
fn stored_objects(trace: &str, root: &Path) -> Vec<Stored> {
    let mut stored = Vec::new();
    for calls in calls_by_thread(trace).values() {
        for (at, call) in calls.iter().enumerate() {
            if !matches!(call.name.as_str(), "linkat" | "link" | "renameat" | "renameat2" | "rename") || !call.text.contains(") = 0") {
                continue;
            }
            let paths = quoted_paths(&call.text);
            let (Some(&staging), Some(&dest)) = (paths.first(), paths.get(1)) else { continue };
            let dest = PathBuf::from(dest);
            if !dest.starts_with(root) {
                continue;
            }
            let data_synced_before =
                calls[..at].iter().any(|c| matches!(c.name.as_str(), "fdatasync" | "fsync") && fd_path(&c.text) == Some(staging));
            let folder = dest.parent().and_then(|p| p.to_str()).unwrap_or_default().to_string();
            let folder_synced_after = calls[at + 1..].iter().any(|c| c.name == "fsync" && fd_path(&c.text) == Some(folder.as_str()));
            stored.push(Stored { dest, data_synced_before, folder_synced_after });
        }
    }
    stored
}

/// The traced server: strace, and the server it runs. Dropped, it kills the server
/// (found by its port: killing strace alone would detach it and leave it running) and
/// then strace.
struct Traced {
    strace: std::process::Child,
    port: u16,
}

impl Drop for Traced {
    fn drop(&mut self) {
        if let Some(pid) = common::serving_pid(self.port) {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
        }
        let _ = self.strace.kill();
        let _ = self.strace.wait();
    }
}

/// A connection to the traced server once it answers PING (the common helper checks
/// that the port's owner is the process it started, which here is strace).
fn connect_when_serving(traced: &mut Traced) -> redis::Connection {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let url = format!("redis://127.0.0.1:{}/", traced.port);
        let ping = redis::Client::open(url.as_str())
            .and_then(|client| client.get_connection_with_timeout(Duration::from_secs(1)))
            .and_then(|mut con| redis::cmd("PING").query::<String>(&mut con).map(|_| con));
        if let Ok(con) = ping {
            return con;
        }
        if let Ok(Some(status)) = traced.strace.try_wait() {
            panic!("the traced server exited before serving: {status}");
        }
        assert!(std::time::Instant::now() < deadline, "the traced server did not start serving");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether strace is installed and may trace here (a container without ptrace says
/// no by failing to run `true` under it).
fn strace_available() -> bool {
    Command::new("strace")
        .args(["-f", "-o", "/dev/null", "true"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Run the server under strace with `--fsync <fsync>`, make it store a probe, manifests,
/// segments and checkpoint parts (sync writes, a checkpoint every two segments), stop
/// it, and return the trace and the data folder's canonical path.
fn traced_run(fsync: &str) -> (String, PathBuf, common::TempDir) {
    let data = common::TempDir::new("fsync-data");
    let root = std::fs::canonicalize(&data.path).expect("canonical data dir");
    let trace_dir = common::TempDir::new("fsync-trace");
    let trace = trace_dir.path.join("trace.txt");
    let port = common::free_port();
    let child = Command::new("strace")
        .args(["-f", "-y", "-qq", "-e", "trace=fdatasync,fsync,link,linkat,rename,renameat,renameat2", "-o"])
        .arg(&trace)
        .arg(env!("CARGO_BIN_EXE_meridian"))
        .args(["--bind", "127.0.0.1", "--port", &port.to_string(), "--data-dir"])
        .arg(&root)
        .args(["--fsync", fsync, "--durability", "sync", "--checkpoint-every-segments", "2", "--log", "warn"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn strace");
    let mut traced = Traced { strace: child, port };
    let mut con = connect_when_serving(&mut traced);
    // Each sync write is acknowledged once a segment holding it is stored: five
    // segments, and with a checkpoint every two of them, checkpoint parts too.
    for i in 0..5 {
        let _: () = redis::cmd("SET").arg(format!("k{i}")).arg("v").query(&mut con).expect("sync SET");
    }
    let reported: Vec<String> = redis::cmd("CONFIG").arg("GET").arg("fsync").query(&mut con).expect("CONFIG GET fsync");
    assert_eq!(reported, vec!["fsync".to_string(), fsync.to_string()]);
    let _ = redis::cmd("SHUTDOWN").arg("NOSAVE").query::<()>(&mut con);
    let _ = traced.strace.wait();
    let text = std::fs::read_to_string(&trace).expect("read the trace");
    (text, root, data)
}

/// [`traced_run`] and the objects it stored; `None` (saying SKIPPED) without strace.
fn traced_stores(fsync: &str) -> Option<(String, PathBuf, Vec<Stored>, common::TempDir)> {
    if !strace_available() {
        eprintln!("SKIPPED: strace is not installed or may not trace here (.ci/run installs it)");
        return None;
    }
    let (trace, root, data) = traced_run(fsync);
    let stored = stored_objects(&trace, &root);
    Some((trace, root, stored, data))
}

#[test]
fn with_fsync_on_every_stored_object_is_synced_before_it_is_named_and_its_folder_after() {
    let Some((trace, root, stored, _data)) = traced_stores("on") else { return };
    eprintln!("{} objects stored, each synced", stored.len());
    for kind in ["probe", "manifest", "segments", "checkpoints"] {
        assert!(
            stored.iter().any(|s| s.dest.strip_prefix(&root).is_ok_and(|rel| rel.iter().any(|part| part == kind))),
            "no {kind} object was stored: {stored:#?}"
        );
    }
    let unsynced: Vec<&Stored> = stored.iter().filter(|s| !s.data_synced_before || !s.folder_synced_after).collect();
    assert!(unsynced.is_empty(), "stored without the syncs: {unsynced:#?}\n--- trace ---\n{trace}");
}

#[test]
fn with_fsync_off_no_stored_object_is_synced() {
    let Some((_, _, stored, _data)) = traced_stores("off") else { return };
    assert!(stored.iter().any(|s| s.dest.to_string_lossy().contains("/segments/")), "segments were stored: {stored:#?}");
    let synced: Vec<&Stored> = stored.iter().filter(|s| s.data_synced_before || s.folder_synced_after).collect();
    assert!(synced.is_empty(), "--fsync off synced: {synced:#?}");
}
