//! The node's cache of FT.* index definitions: the stored bytes of each definition
//! and its parsed schema, so that a query makes one hop (the fan-out to the shards)
//! rather than two (first the shard that holds the definition key), and parses nothing.
//!
//! Owns only the cache's bookkeeping: which entry is still good, and how many there
//! may be. Validity is an *epoch*: a counter every shard bumps (`Shard::follow_indexes`)
//! after any operation that changed a definition key — FT.CREATE, FT.ALTER,
//! FT.DROPINDEX, a merge from a peer, an expiry, a flush — before that operation's
//! reply leaves. An entry is good only for the epoch that was current *before* its
//! bytes were read, so a change racing the read leaves the entry already stale. A
//! client that got FT.ALTER's reply therefore finds the epoch moved and reads the new
//! definition on its next query. Never reads the definition itself, does I/O, reads a
//! clock or draws randomness (the shell holds the epoch and does the reading).

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;

use super::INDEXES_MAX;
use super::schema::{self, IndexDef};

/// One index's definition as stored (the bytes shards build from) and parsed.
#[derive(Debug, PartialEq)]
pub struct Definition {
    pub raw: Bytes,
    pub def: IndexDef,
}

impl Definition {
    /// Parse stored definition bytes; the error a shard building from them would give.
    pub fn parse(raw: Bytes) -> Result<Definition, String> {
        let args = schema::decode_args(raw.clone()).ok_or("internal: undecodable index definition")?;
        Ok(Definition { def: schema::parse(&args)?, raw })
    }
}

struct Cached {
    /// The epoch current before `definition` was read: the entry is good while the
    /// epoch still reads this.
    epoch: u64,
    definition: Arc<Definition>,
}

/// Definitions by index name. Holds at most `INDEXES_MAX` entries (a node keeps no
/// more indexes than that); names that have no definition are never cached, so
/// queries naming random indexes cannot grow it.
#[derive(Default)]
pub struct DefinitionCache {
    entries: HashMap<Bytes, Cached>,
}

impl DefinitionCache {
    /// The definition of `name` if it was read at `epoch` (the epoch now): no definition
    /// key has changed since.
    pub fn get(&self, name: &[u8], epoch: u64) -> Option<Arc<Definition>> {
        self.entries.get(name).filter(|c| c.epoch == epoch).map(|c| c.definition.clone())
    }

    /// Keep `definition` of `name`, read after the epoch was seen to be `epoch`.
    pub fn store(&mut self, name: Bytes, epoch: u64, definition: Arc<Definition>) {
        if !self.entries.contains_key(&name) && self.entries.len() >= INDEXES_MAX {
            // Entries of older epochs are stale anyway; if every one is current (a node
            // at its index limit), start over rather than grow.
            self.entries.retain(|_, c| c.epoch >= epoch);
            if self.entries.len() >= INDEXES_MAX {
                self.entries.clear();
            }
        }
        // A slower reader of an older epoch never replaces a newer entry.
        if self.entries.get(&name).is_some_and(|c| c.epoch > epoch) {
            return;
        }
        self.entries.insert(name, Cached { epoch, definition });
        assert!(self.entries.len() <= INDEXES_MAX, "definition cache past its bound");
    }

    /// Forget `name` (its definition is gone or unreadable).
    pub fn forget(&mut self, name: &[u8]) {
        self.entries.remove(name);
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::vector::schema::encode_args;

    fn definition(fields: &str) -> Arc<Definition> {
        let line = format!("ON HASH PREFIX 1 doc: SCHEMA {fields}");
        let args: Vec<Bytes> = line.split_whitespace().map(|s| Bytes::copy_from_slice(s.as_bytes())).collect();
        Arc::new(Definition::parse(encode_args(&args)).expect("a valid definition"))
    }

    #[test]
    fn an_entry_is_good_only_for_the_epoch_it_was_read_at() {
        let mut cache = DefinitionCache::default();
        let first = definition("t TAG");
        cache.store(Bytes::from_static(b"idx"), 7, first.clone());
        assert_eq!(cache.get(b"idx", 7), Some(first));
        assert_eq!(cache.get(b"idx", 8), None, "a definition key changed since: read again");
        assert_eq!(cache.get(b"other", 7), None);
        let altered = definition("t TAG n NUMERIC");
        cache.store(Bytes::from_static(b"idx"), 8, altered.clone());
        assert_eq!(cache.get(b"idx", 8).expect("cached").def.fields.len(), 2);
        assert_eq!(cache.get(b"idx", 8), Some(altered));
    }

    #[test]
    fn a_slow_reader_of_an_older_epoch_never_replaces_a_newer_entry() {
        let mut cache = DefinitionCache::default();
        let altered = definition("t TAG n NUMERIC");
        cache.store(Bytes::from_static(b"idx"), 9, altered.clone());
        cache.store(Bytes::from_static(b"idx"), 8, definition("t TAG"));
        assert_eq!(cache.get(b"idx", 9), Some(altered));
    }

    #[test]
    fn forgetting_drops_the_entry() {
        let mut cache = DefinitionCache::default();
        cache.store(Bytes::from_static(b"idx"), 1, definition("t TAG"));
        cache.forget(b"idx");
        assert_eq!(cache.get(b"idx", 1), None);
        assert!(cache.is_empty());
    }

    #[test]
    fn the_cache_never_holds_more_than_the_index_limit() {
        let mut cache = DefinitionCache::default();
        let def = definition("t TAG");
        for i in 0..INDEXES_MAX + 10 {
            cache.store(Bytes::from(format!("idx{i}")), 1, def.clone());
            assert!(cache.len() <= INDEXES_MAX);
        }
        // Past the limit at one epoch it started over: the newest entry is there.
        assert!(cache.get(format!("idx{}", INDEXES_MAX + 9).as_bytes(), 1).is_some());
        // Stale entries go first when a newer epoch needs room.
        let mut cache = DefinitionCache::default();
        for i in 0..INDEXES_MAX {
            cache.store(Bytes::from(format!("idx{i}")), if i == 0 { 2 } else { 1 }, def.clone());
        }
        cache.store(Bytes::from_static(b"new"), 2, def.clone());
        assert_eq!(cache.len(), 2, "the entries of epoch 1 were stale and went");
        assert!(cache.get(b"idx0", 2).is_some() && cache.get(b"new", 2).is_some());
    }

    #[test]
    fn bytes_that_are_no_definition_do_not_parse() {
        assert_eq!(Definition::parse(Bytes::from_static(b"\x00\x00\x00\x09ab")), Err("internal: undecodable index definition".into()));
    }
}
