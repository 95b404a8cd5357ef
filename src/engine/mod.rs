//! Data engines that live inside a shard: the key-value engine, the vector engine
//! (`FT.*`) whose indexes are derived from the key-value engine's hashes, and the graph
//! (`GRAPH.*`) and stream (`X*`) engines, whose data are elements of key-value keys.

pub mod bytes_eq;
pub mod graph;
pub mod huge_pages;
pub mod kv;
pub mod prefetch;
pub mod stream;
pub mod vector;
