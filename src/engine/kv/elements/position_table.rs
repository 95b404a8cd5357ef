//! [`PositionTable`]: the hash index of an [`super::element_map::ElementMap`], which
//! maps each name's hash to the position of its entry. It is open addressing in
//! SwissTable's manner (hashbrown's design): one control byte a bucket (empty, deleted,
//! or the top seven bits of the hash of the name held) scanned eight at a time, and one
//! `u32` position a bucket, at most 7/8 of the buckets in use.
//!
//! Why not hashbrown's `HashTable`, which is this same table: where a name's buckets
//! lie is private to it. Prefetching a name's entry through it means *reading* the
//! control bytes, then the bucket they point to, two dependent cache misses waited on
//! in turn before the entry's own prefetch can start: under `perf`, a tenth of a
//! pipelined SADD's time on a 100,000-member set sat on those two loads. Here the
//! address of a name's first group follows from its hash alone, so a pipeline's
//! groups are all prefetched before any is read ([`PositionTable::prefetch_probe`]),
//! then read from cache to prefetch the entries ([`PositionTable::first_group`]).
//!
//! Must never: end a probe before a group holding an empty byte (so at least one bucket
//! stays empty), report a bucket that is not full, or lose or repeat a position (the
//! model test of `element_map.rs` checks the whole map against indexmap).

use crate::engine::prefetch::prefetch;

/// Control bytes read at once (one `u64`).
const GROUP: usize = 8;
/// A bucket never used since the table was built: a probe stops at a group holding one.
const EMPTY: u8 = 0xFF;
/// A bucket whose position was removed: a probe goes past it, an insert reuses it.
const DELETED: u8 = 0x80;
const LOW_BITS: u64 = 0x0101_0101_0101_0101;
const HIGH_BITS: u64 = 0x8080_8080_8080_8080;
/// The fewest buckets a table that holds anything has (at least [`GROUP`]).
const BUCKETS_MIN: usize = 16;

/// The control byte of a full bucket holding a name with this hash (bit 7 clear).
#[inline]
fn tag_of(hash: u64) -> u8 {
    (hash >> 57) as u8
}

/// Positions a table of `buckets` buckets holds before it grows.
fn capacity_of(buckets: usize) -> usize {
    buckets / 8 * 7
}

/// The buckets a table needs to hold `capacity` positions.
fn buckets_for(capacity: usize) -> usize {
    (capacity * 8).div_ceil(7).next_power_of_two().max(BUCKETS_MIN)
}

/// The bytes of `group` equal to `byte` (< 0x80), as bit 7 of each. May also report
/// a byte just above a true match that differs from `byte` in bit 0 only (a borrow):
/// such a byte is full too, and the caller compares names anyway.
#[inline]
fn match_byte(group: u64, byte: u8) -> u64 {
    let diff = group ^ (LOW_BITS * u64::from(byte));
    diff.wrapping_sub(LOW_BITS) & !diff & HIGH_BITS
}

/// The empty bytes of `group` (bits 7 and 6 set: a full byte has bit 7 clear, a deleted
/// one bit 6).
#[inline]
fn match_empty(group: u64) -> u64 {
    group & (group << 1) & HIGH_BITS
}

/// The empty or deleted bytes of `group`.
#[inline]
fn match_free(group: u64) -> u64 {
    group & HIGH_BITS
}

/// The byte offsets of the set bits of a match, lowest first.
#[inline]
fn offsets(mut bits: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        let at = (bits != 0).then(|| bits.trailing_zeros() as usize / 8)?;
        bits &= bits - 1;
        Some(at)
    })
}

/// Name hashes to positions (see the module docs). The hashes are the owner's: the
/// table keeps only seven bits of each, and asks the owner to hash a position's name
/// again when it rebuilds. The positions held are always `0..len`, each once (those of
/// `ElementMap`'s entries) whenever the table may rebuild ([`PositionTable::insert`],
/// [`PositionTable::reserve`]).
#[derive(Clone, Default)]
pub struct PositionTable {
    /// One byte a bucket, then the first [`GROUP`] again, so that a group read at any
    /// bucket is one slice. Empty while the table has no buckets.
    ctrl: Box<[u8]>,
    /// The position held in each full bucket (stale in the others).
    slots: Box<[u32]>,
    items: usize,
    /// Empty buckets that may still be filled before the table must be rebuilt.
    growth_left: usize,
}

impl PositionTable {
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.items
    }

    #[inline]
    fn mask(&self) -> usize {
        self.slots.len().wrapping_sub(1)
    }

    #[inline]
    fn group(&self, at: usize) -> u64 {
        u64::from_le_bytes(self.ctrl[at..at + GROUP].try_into().expect("a group is 8 bytes"))
    }

    fn set_ctrl(&mut self, at: usize, byte: u8) {
        let mirror = (at.wrapping_sub(GROUP) & self.mask()) + GROUP;
        self.ctrl[at] = byte;
        self.ctrl[mirror] = byte;
    }

    /// The buckets a probe for `hash` visits, a group at a time: triangular steps over
    /// a power-of-two table, which visit every group once.
    fn probe(&self, hash: u64) -> impl Iterator<Item = usize> {
        let (mask, buckets) = (self.mask(), self.slots.len());
        let mut pos = hash as usize & mask;
        let mut stride = 0;
        std::iter::from_fn(move || {
            if stride > buckets {
                return None;
            }
            let at = pos;
            stride += GROUP;
            pos = (pos + stride) & mask;
            Some(at)
        })
    }

    /// The bucket holding the position for which `eq` is true, among those stored
    /// under `hash`.
    #[inline]
    pub fn find(&self, hash: u64, mut eq: impl FnMut(u32) -> bool) -> Option<usize> {
        if self.slots.is_empty() {
            return None;
        }
        let (mask, tag) = (self.mask(), tag_of(hash));
        for pos in self.probe(hash) {
            let group = self.group(pos);
            for offset in offsets(match_byte(group, tag)) {
                let at = (pos + offset) & mask;
                if eq(self.slots[at]) {
                    return Some(at);
                }
            }
            if match_empty(group) != 0 {
                return None;
            }
        }
        unreachable!("a table always has an empty bucket")
    }

    /// The position in bucket `at` (one [`PositionTable::find`] returned).
    pub fn get(&self, at: usize) -> u32 {
        debug_assert!(self.ctrl[at] & 0x80 == 0, "a full bucket");
        self.slots[at]
    }

    /// Change the position in bucket `at` (one [`PositionTable::find`] returned).
    pub fn set(&mut self, at: usize, position: u32) {
        debug_assert!(self.ctrl[at] & 0x80 == 0, "a full bucket");
        self.slots[at] = position;
    }

    /// The first empty or deleted bucket on `hash`'s probe.
    fn free_bucket(&self, hash: u64) -> usize {
        let mask = self.mask();
        for pos in self.probe(hash) {
            if let Some(offset) = offsets(match_free(self.group(pos))).next() {
                return (pos + offset) & mask;
            }
        }
        unreachable!("a table always has an empty bucket")
    }

    /// Add `position` under `hash`, which the caller knows is not held. `rehash` gives
    /// the hash of a held position, should the table have to be rebuilt.
    pub fn insert(&mut self, hash: u64, position: u32, rehash: impl Fn(u32) -> u64) {
        let mut at = if self.slots.is_empty() { None } else { Some(self.free_bucket(hash)) };
        if at.is_none_or(|at| self.ctrl[at] == EMPTY && self.growth_left == 0) {
            self.reserve(1, rehash);
            at = Some(self.free_bucket(hash));
        }
        let at = at.expect("a free bucket");
        if self.ctrl[at] == EMPTY {
            self.growth_left -= 1;
        }
        self.set_ctrl(at, tag_of(hash));
        self.slots[at] = position;
        self.items += 1;
    }

    /// Empty bucket `at` (one [`PositionTable::find`] returned); its position.
    pub fn remove(&mut self, at: usize) -> u32 {
        debug_assert!(self.ctrl[at] & 0x80 == 0, "a full bucket");
        // A probe may have passed this bucket only if it lies in a run of at least a
        // group of buckets none of which is empty: then it must stay passable
        // (deleted); otherwise every probe through it would have stopped at an empty
        // byte beside it, and it can be empty again (hashbrown's rule).
        let before = at.wrapping_sub(GROUP) & self.mask();
        let full_before = match_empty(self.group(before)).leading_zeros() as usize / 8;
        let full_after = match_empty(self.group(at)).trailing_zeros() as usize / 8;
        let byte = if full_before + full_after >= GROUP {
            DELETED
        } else {
            self.growth_left += 1;
            EMPTY
        };
        self.set_ctrl(at, byte);
        self.items -= 1;
        self.slots[at]
    }

    /// Make room for `additional` more positions without another rebuild: rebuilt at
    /// the same size when deleted buckets are what fills it, else at the larger of the
    /// room asked for and one more than it holds now (so growth is geometric).
    pub fn reserve(&mut self, additional: usize, rehash: impl Fn(u32) -> u64) {
        if additional <= self.growth_left {
            return;
        }
        let needed = self.items.checked_add(additional).expect("a collection holds fewer than 2^32 elements");
        let full = capacity_of(self.slots.len());
        let buckets = if needed <= full / 2 { self.slots.len() } else { buckets_for(needed.max(full + 1)) };
        self.rebuild(buckets, rehash);
    }

    fn rebuild(&mut self, buckets: usize, rehash: impl Fn(u32) -> u64) {
        debug_assert!(buckets.is_power_of_two() && buckets >= BUCKETS_MIN);
        let old = std::mem::replace(
            self,
            PositionTable {
                ctrl: vec![EMPTY; buckets + GROUP].into_boxed_slice(),
                slots: vec![0; buckets].into_boxed_slice(),
                items: 0,
                growth_left: capacity_of(buckets),
            },
        );
        // The positions held are 0..items (`ElementMap`'s entries): taken in that order,
        // their names are hashed in the order they lie in memory, where bucket order
        // would read them at random (a cache miss each on a big collection).
        debug_assert!(old.positions().all(|position| (position as usize) < old.items), "positions are 0..len");
        for position in 0..old.items as u32 {
            let hash = rehash(position);
            let at = self.free_bucket(hash);
            self.set_ctrl(at, tag_of(hash));
            self.slots[at] = position;
        }
        self.items = old.items;
        self.growth_left -= old.items;
    }

    /// Remove every position, keeping the buckets.
    pub fn clear(&mut self) {
        self.ctrl.fill(EMPTY);
        self.items = 0;
        self.growth_left = capacity_of(self.slots.len());
    }

    /// Every position held, in bucket order.
    fn positions(&self) -> impl Iterator<Item = u32> + '_ {
        self.ctrl.iter().zip(self.slots.iter()).filter(|(ctrl, _)| **ctrl & 0x80 == 0).map(|(_, &position)| position)
    }

    /// Every position held, to change in place.
    pub fn positions_mut(&mut self) -> impl Iterator<Item = &mut u32> {
        self.ctrl.iter().zip(self.slots.iter_mut()).filter(|(ctrl, _)| **ctrl & 0x80 == 0).map(|(_, position)| position)
    }

    /// Start loading the first group of `hash`'s probe, control bytes and positions,
    /// into cache: addresses computed, nothing read. A hint.
    #[inline]
    pub fn prefetch_probe(&self, hash: u64) {
        if self.slots.is_empty() {
            return;
        }
        let (mask, pos) = (self.mask(), hash as usize & self.mask());
        // A group's 8 bytes and 32 bytes of positions may each straddle two lines.
        prefetch(self.ctrl.as_ptr().wrapping_add(pos));
        prefetch(self.ctrl.as_ptr().wrapping_add(pos + GROUP - 1));
        prefetch(self.slots.as_ptr().wrapping_add(pos));
        prefetch(self.slots.as_ptr().wrapping_add((pos + GROUP - 1) & mask));
    }

    /// The positions of the first group of `hash`'s probe whose control byte matches:
    /// where a held name's position almost always is (no name is compared, so some may
    /// be other names'). For prefetching their entries.
    #[inline]
    pub fn first_group(&self, hash: u64) -> impl Iterator<Item = u32> + '_ {
        let (mask, pos) = (self.mask(), hash as usize & self.mask());
        let matches = if self.slots.is_empty() { 0 } else { match_byte(self.group(pos), tag_of(hash)) };
        offsets(matches).map(move |offset| self.slots[(pos + offset) & mask])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_match_reports_every_equal_byte_and_only_full_ones() {
        let bytes = [0x12u8, EMPTY, 0x12, DELETED, 0x13, 0x12, 0x00, 0x7F];
        let group = u64::from_le_bytes(bytes);
        let found: Vec<usize> = offsets(match_byte(group, 0x12)).collect();
        for at in [0, 2, 5] {
            assert!(found.contains(&at), "{found:?}");
        }
        assert!(found.iter().all(|&at| bytes[at] & 0x80 == 0), "{found:?}");
        assert_eq!(offsets(match_empty(group)).collect::<Vec<_>>(), [1]);
        assert_eq!(offsets(match_free(group)).collect::<Vec<_>>(), [1, 3]);
    }

    /// Names whose hashes all share one home bucket and one control byte (the worst
    /// case: long probes, every byte a candidate), at positions kept `0..len` as
    /// `ElementMap` keeps them (a removed name's place taken by the last): every name is
    /// found at its position through inserts, removes and rebuilds, and none that was
    /// removed.
    #[test]
    fn colliding_hashes_are_all_found_through_removes_and_rebuilds() {
        let hash = |name: u32| u64::from(name) << 20; // low bits 0: one home bucket
        let mut table = PositionTable::default();
        let mut names: Vec<u32> = Vec::new(); // position -> name
        let find = |table: &PositionTable, names: &[u32], name: u32| table.find(hash(name), |p| names[p as usize] == name);
        for name in 0..300u32 {
            table.insert(hash(name), names.len() as u32, |p| hash(names[p as usize]));
            names.push(name);
            if name % 3 == 0 {
                let gone = name / 2;
                if let Some(bucket) = find(&table, &names, gone) {
                    let at = table.remove(bucket) as usize;
                    let last = names.len() - 1;
                    if at != last {
                        let moved = find(&table, &names, names[last]).expect("the last name is held");
                        table.set(moved, at as u32);
                    }
                    names.swap_remove(at);
                }
            }
        }
        assert_eq!(table.len(), names.len());
        for name in 0..300u32 {
            let found = find(&table, &names, name).map(|bucket| table.get(bucket) as usize);
            assert_eq!(found, names.iter().position(|&n| n == name), "name {name}");
        }
        let mut all: Vec<u32> = table.positions().collect();
        all.sort_unstable();
        assert_eq!(all, (0..names.len() as u32).collect::<Vec<_>>());
    }
}
