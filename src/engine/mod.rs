//! Data engines that live inside a shard. Only the key-value engine exists today; the
//! vector (`FT.*`) and graph (`GRAPH.*`) engines will sit beside it.

pub mod graph;
pub mod kv;
