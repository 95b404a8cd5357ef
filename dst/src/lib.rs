//! Deterministic simulation of Meridian (DESIGN §8).
//!
//! One thread, one seeded RNG, simulated time: N nodes built from the real shard state
//! machines, clients issuing a random workload over a simulated network, and faults
//! (crashes, pauses, clock jumps and drift, partitions, slow links). Every reply is
//! checked against a sequential model as it happens, and the final state of every node
//! against the model after the faults heal. The same seed replays the same run: the
//! trace hash proves it.
//!
//! - [`sim`]: the event loop, nodes, network and clients.
//! - [`model`]: the reference semantics replies are checked against ([`model_sets`],
//!   [`model_zsets`], [`model_lists`]: its sets, sorted sets and lists).
//! - [`oracle`]: the converged result of replicated writes (replication runs);
//!   [`oracle_collections`]: of replicated hashes, sets, sorted sets and lists
//!   (membership and values), [`oracle_lists`]: of replicated lists' order;
//!   [`oracle_notify`]: the keyspace notifications every node raises.
//! - [`workload`]: the random commands clients send; [`graph`]: the graph workload of
//!   `--graph` runs and the reference semantics of a replicated graph; [`streams`]:
//!   the same for streams (`--streams` runs).
//! - [`faults`]: fault classes and their weights.
//! - [`storage`]: the real streamer and recovery over a simulated object store.

pub mod faults;
pub mod graph;
pub mod model;
pub mod model_dump;
pub mod model_lists;
pub mod model_sets;
pub mod model_zsets;
pub mod oracle;
pub mod oracle_collections;
pub mod oracle_lists;
pub mod oracle_notify;
pub mod sim;
pub mod storage;
pub mod streams;
pub mod workload;

pub use faults::FaultWeights;
pub use meridian::bugs::Bug;
pub use sim::{Outcome, SEEDED_HORIZON_MS, SimConfig, run};
