//! The pipeline prefetch's three steps on a collection (`Keyspace::prefetch`): its map
//! header, a name's bucket group, the name's entry. Part of [`super::Elements`].
//!
//! Must never: change anything (every call here only prefetches), or touch the packed
//! and list forms, which are small or walked in order.

use super::*;

impl Elements {
    /// The first of the three steps of a pipeline's element prefetch
    /// (`Keyspace::prefetch`; the packed and list forms are small or walked in order,
    /// and are left alone): start loading the map form's header (where its table
    /// and entries are), a separate allocation. Then [`Elements::prefetch_probe`], then
    /// [`Elements::prefetch_entry`], each over the whole pipeline, so that every step's
    /// loads come from cache and its misses overlap. Hints, all three.
    #[inline]
    pub fn prefetch_map(&self) {
        if let Table::Map(map) = &self.table {
            crate::engine::prefetch::prefetch(&**map);
        }
    }

    /// The second step (see [`Elements::prefetch_map`]): start loading the table's
    /// bucket group for `name`; its hash, for the third step (`None` for the packed and
    /// list forms).
    #[inline]
    pub fn prefetch_probe(&self, name: &[u8]) -> Option<u64> {
        let Table::Map(map) = &self.table else { return None };
        let hash = map.hash(name);
        map.prefetch_probe(hash);
        Some(hash)
    }

    /// The third step (see [`Elements::prefetch_map`]): start loading the entry of the
    /// name [`Elements::prefetch_probe`] hashed to `hash`.
    #[inline]
    pub fn prefetch_entry(&self, hash: u64) {
        if let Table::Map(map) = &self.table {
            map.prefetch_entry(hash);
        }
    }
}
