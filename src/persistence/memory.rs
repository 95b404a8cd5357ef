//! An in-memory object store that carries out [`StoreOp`]s with the semantics of a
//! real one (create-only puts, listing by prefix in name order). Used by unit tests and
//! by the simulator, which adds latency and faults around it.

use std::collections::BTreeMap;

use bytes::Bytes;

use super::store::{StoreOp, StoreResult};

#[derive(Clone, Debug, Default)]
pub struct MemoryStore {
    pub objects: BTreeMap<String, Bytes>,
}

impl MemoryStore {
    pub fn execute(&mut self, op: StoreOp) -> StoreResult {
        match op {
            StoreOp::Put { path, data, create_only } => {
                if create_only && self.objects.contains_key(&path) {
                    return StoreResult::AlreadyExists;
                }
                self.objects.insert(path, data.to_bytes());
                StoreResult::Stored
            }
            StoreOp::Get { path } => self.objects.get(&path).cloned().map_or(StoreResult::NotFound, StoreResult::Data),
            StoreOp::List { prefix } => StoreResult::Listing(
                self.objects.range(prefix.clone()..).take_while(|(k, _)| k.starts_with(&prefix)).map(|(k, _)| k.clone()).collect(),
            ),
            StoreOp::Delete { path } => match self.objects.remove(&path) {
                Some(_) => StoreResult::Deleted,
                None => StoreResult::NotFound,
            },
        }
    }
}
