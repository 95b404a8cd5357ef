//! Data engines that live inside a shard: the key-value engine, and the vector engine
//! (`FT.*`) whose indexes are derived from the key-value engine's hashes. The graph
//! (`GRAPH.*`) engine will sit beside them.

pub mod graph;
pub mod kv;
pub mod prefetch;
pub mod vector;
