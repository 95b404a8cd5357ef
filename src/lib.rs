//! Meridian: an eventually consistent, geo-replicated, Redis-protocol database.
//!
//! The crate is laid out as the architecture (see `DESIGN.md` §1):
//!
//! - [`protocol`]: RESP2/RESP3 request parser and reply encoder; knows no commands.
//! - [`command`]: the command table and the parser from arguments to typed commands.
//! - [`crdt`]: hybrid logical clock, dots, causal contexts, registers, counters, TTL.
//! - [`routing`]: which shard owns a key (hash tags), and a shard's scope.
//! - [`engine`]: the data engines inside a shard (today: key-value), and the Merkle
//!   leaves each keyspace keeps for anti-entropy.
//! - [`delta`]: the deltas shards produce, their byte codec, and the per-shard buffers
//!   that persistence and replication drain; beneath both and the shard.
//! - [`shard`]: the deterministic shard state machine that owns a keyspace partition.
//! - [`notify`]: keyspace notifications: their flags, the events commands raise, and
//!   the channels they are published on ([`pubsub`] says who hears them).
//! - [`replication`]: peer link messages, authentication, batching, Merkle leaves.
//! - [`persistence`]: segment codec, streamer, manifest, checkpoints and recovery.
//! - [`config`]: every setting, its flag, default and `CONFIG` name.
//! - [`shell`]: the tokio world: listener, connections, shard threads, timers.
//!
//! Everything except `shell` is a deterministic core: no I/O, no wall clock and no
//! global randomness, so the simulator in `dst/` can drive the same code.

pub mod bugs;
pub mod command;
pub mod config;
pub mod crdt;
pub mod delta;
pub mod engine;
pub mod notify;
pub mod persistence;
pub mod protocol;
pub mod pubsub;
pub mod replication;
pub mod routing;
pub mod shard;
pub mod shell;
