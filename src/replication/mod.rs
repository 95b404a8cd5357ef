//! Geo-replication (DESIGN §6): what a node sends its peers and how it checks them.
//!
//! - [`wire`]: the framed, versioned, CRC-checked messages of a peer link.
//! - [`auth`]: the challenge–response that proves both ends know the cluster secret.
//! - [`outbox`]: a shard's local writes waiting for the next batch, merged per key.
//! - [`peer`]: one peer's queue of unacknowledged batches, bounded.
//! - [`merkle`]: the anti-entropy leaves, updated on every write.
//! - [`anti_entropy`]: one link's anti-entropy rounds, as a state machine.
//! - [`stability`]: which removals every node has seen (tombstone GC).
//! - [`reservation`]: which of this node's stamps may leave it (unique stamps across restarts).
//!
//! Everything here decides and encodes; nothing here opens a socket, reads a clock or
//! draws a random number. The tokio side lives in `shell::replication`.

pub mod anti_entropy;
pub mod auth;
pub mod peer;
pub mod reservation;
pub mod stability;
pub mod wire;
