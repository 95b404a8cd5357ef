//! The node processes of a harness run: spawned with piped stdin and stdout, each
//! stdout line handed to the harness through one bounded channel.
//!
//! Owns the children's lifetimes: `shut_down` closes every stdin (a node exits when
//! its stdin closes) and waits, killing a node that does not go within a grace period,
//! so that nothing a node writes comes after the harness's summary line.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::time::{Duration, Instant};

/// Lines read from the nodes and not yet handled, at most (a reader blocks past it).
pub const LINES_QUEUED_MAX: usize = 100_000;
/// How long a node may take to exit once its stdin closed.
const EXIT_GRACE: Duration = Duration::from_secs(5);

/// A line a node wrote (`None`: its stdout closed, it exited).
pub type NodeLine = (usize, Option<String>);

pub struct Nodes {
    children: Vec<Child>,
    stdins: Vec<Option<ChildStdin>>,
}

impl Nodes {
    /// Spawn `count` nodes of `binary` with `args`; their lines arrive on the receiver.
    /// With `stats`, each node prints what its links did when it exits (stderr).
    pub fn spawn(binary: &Path, args: &[String], count: usize, stats: bool) -> Result<(Nodes, Receiver<NodeLine>), String> {
        let (tx, rx) = sync_channel(LINES_QUEUED_MAX);
        let mut nodes = Nodes { children: Vec::new(), stdins: Vec::new() };
        for index in 0..count {
            let mut command = Command::new(binary);
            if stats {
                command.env("MERIDIAN_MAELSTROM_STATS", "1");
            }
            let mut child = command
                .args(args)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .map_err(|e| format!("cannot start {}: {e}", binary.display()))?;
            let stdout = child.stdout.take().expect("stdout is piped");
            nodes.stdins.push(child.stdin.take());
            nodes.children.push(child);
            let tx: SyncSender<NodeLine> = tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    if tx.send((index, Some(line))).is_err() {
                        return;
                    }
                }
                let _ = tx.send((index, None));
            });
        }
        Ok((nodes, rx))
    }

    /// Write one line to a node; `Err` when the node is gone.
    pub fn send(&mut self, node: usize, line: &str) -> Result<(), String> {
        let stdin = self.stdins[node].as_mut().ok_or_else(|| format!("n{node} is shut down"))?;
        stdin
            .write_all(line.as_bytes())
            .and_then(|_| stdin.write_all(b"\n"))
            .and_then(|_| stdin.flush())
            .map_err(|e| format!("n{node} stopped reading: {e}"))
    }

    /// Close every stdin and wait for every node; kill those that linger.
    pub fn shut_down(&mut self) {
        self.stdins.iter_mut().for_each(|s| drop(s.take()));
        let deadline = Instant::now() + EXIT_GRACE;
        for child in &mut self.children {
            loop {
                match child.try_wait() {
                    Ok(Some(_)) | Err(_) => break,
                    Ok(None) if Instant::now() > deadline => {
                        let _ = child.kill();
                        let _ = child.wait();
                        break;
                    }
                    Ok(None) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        }
    }
}

impl Drop for Nodes {
    fn drop(&mut self) {
        self.shut_down();
    }
}
