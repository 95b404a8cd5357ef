//! Conflict-free replicated data types: the building blocks that make every replica
//! converge (DESIGN §4–§5).
//!
//! - [`hlc`]: hybrid logical clock and node ids.
//! - [`dot`]: write identities and per-key causal contexts.
//! - [`register`]: multi-value register read as last-writer-wins (strings, TTL).
//! - [`counter`]: per-node counter slots with observed reset (INCR family).
//! - [`ttl`]: the TTL read rule.
//!
//! Everything here is pure data and merge logic: no I/O, no clocks, no randomness.
//! Merges must be commutative, associative and idempotent; the property tests in the
//! engine modules that compose these types check it.

pub mod counter;
pub mod dot;
pub mod hlc;
pub mod register;
pub mod ttl;

pub use dot::{Dot, VersionVector};
pub use hlc::{Hlc, HlcClock, NodeId};
