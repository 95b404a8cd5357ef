//! How [`super::Keyspace`]'s sub-tables grow: a full sub-table moves into a bigger one
//! ([`insert_new`]) and, once the keyspace averages more than `KEYS_PER_TABLE_MAX` keys a
//! table, every table splits in two by the next hash bit (`Keyspace::maybe_grow`). Part
//! of [`super::Keyspace`].
//!
//! Why by hand rather than hashbrown's own growth: entries do not keep their hash, so
//! moving one means reading its key, and a big keyspace's entries are not in the cache.
//! Both moves here prefetch every entry before hashing any ([`with_hashes`]).
//!
//! Must never: change a table's size from what hashbrown's growth would pick for a table
//! full of entries (memory per key is an issue 16 goal), or move a key out of its parent
//! table's slot range (SCAN cursors depend on it).

use hashbrown::HashTable;

use super::{Entry, KEYS_PER_TABLE_MAX, Keyspace, SLOT_BITS_MAX, slot_position};

impl Keyspace {
    pub(super) fn maybe_grow(&mut self) {
        if self.len <= self.tables.len() * KEYS_PER_TABLE_MAX || self.slot_bits >= SLOT_BITS_MAX {
            return;
        }
        // Split every table in two by the next hash bit; slot ranges refine in place,
        // so SCAN cursors issued before stay valid.
        let bits = self.slot_bits + 1;
        let mut tables: Vec<HashTable<Entry>> = Vec::with_capacity(1usize << bits);
        // Table `i` splits into tables `2i` and `2i + 1`. Each child is made with room for
        // exactly what it receives: a child grown from empty would rehash four or five
        // times on the way, and every rehash hashes each entry's key again (a read of the
        // entry, cold in a big keyspace). Same bucket counts as growing there, so no
        // memory changes.
        let mut moved: Vec<(u64, Entry)> = Vec::with_capacity(2 * KEYS_PER_TABLE_MAX);
        for (parent, table) in self.tables.drain(..).enumerate() {
            with_hashes(table, &mut moved);
            let child_of = |hash: u64| (slot_position(hash) >> (32 - bits)) as usize;
            let high = moved.iter().filter(|(hash, _)| child_of(*hash) & 1 == 1).count();
            let mut children = [HashTable::with_capacity(moved.len() - high), HashTable::with_capacity(high)];
            for (hash, entry) in moved.drain(..) {
                let index = child_of(hash);
                debug_assert_eq!(index >> 1, parent, "a key leaves its parent table's slot range");
                children[index & 1].insert_unique(hash, entry, |e| e.hash());
            }
            tables.extend(children);
        }
        assert_eq!(tables.len(), 1usize << bits);
        self.tables = tables;
        self.slot_bits = bits;
    }
}

/// `table`'s entries, each with its key's hash, appended to `out`. The hash is read from
/// the entry's key (entries do not keep it), and a big keyspace's entries are not in the
/// cache: all of them are prefetched first, in a pass with no dependent load, so that
/// their misses overlap instead of coming one after another as hashbrown's own rehash
/// took them (`perf`: its growth and the keyspace's splits were a fifth of SETs' time
/// while the keyspace grew).
pub(super) fn with_hashes(table: HashTable<Entry>, out: &mut Vec<(u64, Entry)>) {
    let start = out.len();
    out.extend(table.into_iter().map(|entry| {
        entry.prefetch();
        (0, entry)
    }));
    for (hash, entry) in &mut out[start..] {
        *hash = entry.hash();
    }
}

/// Insert `entry`, whose key `table` does not hold, under `hash`; the stored entry. A
/// full table is first moved into one with room for one more entry ([`with_hashes`]):
/// twice its size when it is full of entries, the sizes hashbrown's own growth picks, so
/// memory is the same; the same size or smaller when removals left it tombstones (where
/// hashbrown would rehash in place).
pub(super) fn insert_new(table: &mut HashTable<Entry>, hash: u64, entry: Entry) -> &Entry {
    if table.len() == table.capacity() {
        let mut moved = Vec::with_capacity(table.len());
        with_hashes(std::mem::take(table), &mut moved);
        let mut grown = HashTable::with_capacity(moved.len() + 1);
        for (hash, entry) in moved {
            grown.insert_unique(hash, entry, |e| e.hash());
        }
        *table = grown;
    }
    table.insert_unique(hash, entry, |e| e.hash()).into_mut()
}
