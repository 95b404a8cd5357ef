//! Meridian under Maelstrom (issue 17): the real shard and replication state machines
//! behind Maelstrom's JSON protocol, and a local harness that plays Maelstrom's part.
//!
//! - [`message`]: Maelstrom's line format and the bodies this crate writes.
//! - [`workload`]: each workload's requests as Redis commands on the real shards.
//! - [`link`]: one peer link's queue, anti-entropy and in-order check, over a network
//!   that loses, duplicates and reorders.
//! - [`node`]: the node state machine: messages and ticks in, messages out.
//! - [`harness`]: N node processes, a faulty network, clients, and Maelstrom's checks
//!   (`maelstrom/check`).
//!
//! The binaries (`src/bin/`) are the only I/O: `meridian-maelstrom` is the node,
//! `maelstrom-harness` the local stand-in for Maelstrom. README.md says how to run
//! both, and how to run the node under the real Maelstrom.

pub mod harness;
pub mod link;
pub mod message;
pub mod node;
pub mod workload;
