//! Unit tests of the keyspace: SCAN under growth, Merkle leaves kept per write, the
//! expiry index's bound.

use super::*;
use crate::crdt::{Dot, Hlc};
use crate::engine::kv::collection_writes::Part;
use crate::engine::kv::value::{SetTtl, StrVal};

fn state(expire: Option<u64>) -> KeyState {
    KeyState::with_value(Dot::new(Hlc::from_parts(1, 0), 1), StrVal::Int(1), expire)
}

#[test]
fn scan_returns_every_key_present_throughout_despite_growth() {
    let mut ks = Keyspace::new();
    for i in 0..500 {
        let key = Bytes::from(format!("k{i}"));
        ks.put(&key, key_hash(&key), state(None));
    }
    let mut seen = std::collections::HashSet::new();
    let mut cursor = 0;
    let mut extra = 0;
    loop {
        cursor = ks.scan(cursor, 10, |e| {
            seen.insert(e.key_to_bytes());
        });
        // Grow the keyspace a lot mid-iteration: the directory splits several times.
        for _ in 0..300 {
            let key = Bytes::from(format!("x{extra}"));
            extra += 1;
            ks.put(&key, key_hash(&key), state(None));
        }
        if cursor == SLOT_SPACE {
            break;
        }
    }
    for i in 0..500 {
        assert!(seen.contains(&Bytes::from(format!("k{i}"))), "k{i} missing");
    }
}

#[test]
fn merkle_leaves_kept_per_write_equal_leaves_computed_afresh() {
    let mut ks = Keyspace::new();
    ks.enable_merkle();
    let dot = |ms: u64| Dot::new(Hlc::from_parts(ms, 0), 1);
    for i in 0..2_000u64 {
        // 301 keys, 4 kinds of write: every key meets every kind, in every order.
        let key = Bytes::from(format!("k{}", i % 301));
        let hash = key_hash(&key);
        match i % 4 {
            0 | 1 => {
                ks.put(&key, hash, KeyState::with_value(dot(i), StrVal::Int(i as i64), None));
            }
            2 => {
                ks.update(&key, hash, |_, state| state.set(dot(i), StrVal::raw(Bytes::from(vec![b'v'; i as usize % 90])), SetTtl::Keep));
            }
            _ => {
                ks.remove(&key, hash);
            }
        }
    }
    let kept = ks.merkle().cloned().expect("leaves kept");
    ks.enable_merkle();
    assert!(!ks.is_empty());
    assert!(kept == *ks.merkle().expect("leaves kept"), "incremental leaves drifted from a fresh computation");
}

/// A hot key's writes leave its digest stale (`digests.rs`): whatever happens to a
/// stale entry before the leaves are read (more writes, removal, a new key in its
/// place, the directory splitting under it), the leaves read equal those computed
/// afresh, and the stale list stays within its bound.
#[test]
fn a_hot_keys_deferred_digests_settle_to_the_leaves_computed_afresh() {
    let mut ks = Keyspace::new();
    ks.enable_merkle();
    let dot = |ms: u64| Dot::new(Hlc::from_parts(ms, 0), 1);
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut stale_seen = 0;
    for round in 0..40u64 {
        // Runs of writes to one key (deferred after the first) over a growing set of
        // keys, so that the directory splits while entries are stale.
        for i in 0..400u64 {
            let at = round * 1_000 + i;
            let key = Bytes::from(format!("k{}", next() % (50 + round * 40)));
            let hash = key_hash(&key);
            for step in 0..1 + next() % 4 {
                match next() % 6 {
                    0 | 1 => {
                        ks.put(&key, hash, KeyState::with_value(dot(at * 8 + step), StrVal::Int(step as i64), None));
                    }
                    2 | 3 => {
                        ks.update(&key, hash, |_, state| {
                            state.set(dot(at * 8 + step), StrVal::raw(Bytes::from(vec![b'v'; (at % 90) as usize])), SetTtl::Keep)
                        });
                    }
                    4 => {
                        ks.remove(&key, hash);
                    }
                    _ => {
                        // Another key in between: the next write to `key` digests at once.
                        let other = Bytes::from(format!("o{}", next() % 7));
                        ks.put(&other, key_hash(&other), KeyState::with_value(dot(at * 8 + step), StrVal::Int(1), None));
                    }
                }
            }
            stale_seen = stale_seen.max(ks.deferred.stale.len());
            assert!(ks.deferred.stale.len() <= digests::STALE_DIGESTS_MAX);
        }
        if round % 3 == 0 {
            let kept = ks.merkle().cloned().expect("leaves kept");
            assert!(ks.deferred.stale.is_empty(), "reading the leaves settles every stale digest");
            let mut fresh = Keyspace::new();
            for entry in ks.iter() {
                fresh.put(entry.key(), entry.hash(), entry.state().clone());
            }
            fresh.enable_merkle();
            assert!(kept == *fresh.merkle().expect("leaves kept"), "round {round}: settled leaves differ from fresh ones");
        }
    }
    assert!(stale_seen > 0, "the workload left some digests stale");
    // More hot keys than the stale list holds: the ones past it digest at once.
    for i in 0..digests::STALE_DIGESTS_MAX as u64 + 500 {
        let key = Bytes::from(format!("hot{i}"));
        for step in 0..3 {
            ks.put(&key, key_hash(&key), KeyState::with_value(dot(1_000_000 + i * 4 + step), StrVal::Int(step as i64), None));
        }
    }
    assert_eq!(ks.deferred.stale.len(), digests::STALE_DIGESTS_MAX);
    let kept = ks.merkle().cloned().expect("leaves kept");
    ks.enable_merkle();
    assert!(kept == *ks.merkle().expect("leaves kept"));
}

#[test]
fn expiry_index_stays_bounded_under_ttl_rewrites() {
    let mut ks = Keyspace::new();
    let key = Bytes::from_static(b"k");
    for i in 0..10_000u64 {
        ks.put(&key, key_hash(&key), state(Some(1_000_000 + i)));
    }
    assert_eq!(ks.expiring(), 1);
    assert!(ks.expiry_index_len() <= 2 + EXPIRY_HEAP_SLACK + 1);
    assert_eq!(ks.pop_expired(2_000_000, 10), vec![key]);
}

#[test]
fn the_sum_of_expiry_instants_follows_every_ttl_change_and_removal() {
    let mut ks = Keyspace::new();
    let (a, b) = (Bytes::from_static(b"a"), Bytes::from_static(b"b"));
    ks.put(&a, key_hash(&a), state(Some(1_000)));
    ks.put(&b, key_hash(&b), state(Some(3_000)));
    assert_eq!((ks.expiring(), ks.expiry_sum_ms()), (2, 4_000));
    ks.put(&a, key_hash(&a), state(Some(2_000)));
    assert_eq!((ks.expiring(), ks.expiry_sum_ms()), (2, 5_000), "a new TTL replaces the old one's instant");
    ks.put(&b, key_hash(&b), state(None));
    assert_eq!((ks.expiring(), ks.expiry_sum_ms()), (1, 2_000), "a TTL taken off");
    ks.remove(&a, key_hash(&a));
    assert_eq!((ks.expiring(), ks.expiry_sum_ms()), (0, 0), "a removed key");
    for i in 0..1_000u64 {
        let key = Bytes::from(format!("k{i}"));
        ks.put(&key, key_hash(&key), state(Some(10_000 + i)));
    }
    ks.clear();
    assert_eq!((ks.expiring(), ks.expiry_sum_ms()), (0, 0), "FLUSHALL");
}

#[test]
fn a_split_finds_every_key_and_sizes_each_table_as_growth_would() {
    let mut ks = Keyspace::new();
    let mut splits = 0;
    for i in 0..20_000 {
        let key = Bytes::from(format!("key:{i:010}"));
        let bits = ks.slot_bits;
        ks.put(&key, key_hash(&key), state(None));
        if ks.slot_bits == bits {
            continue;
        }
        splits += 1;
        // Right after a split: each child holds what it was made for, in the bucket
        // count a table grown from empty to that many entries has (no memory change).
        for table in &ks.tables {
            let mut grown: HashTable<u64> = HashTable::new();
            for n in 0..table.len() as u64 {
                grown.insert_unique(n, n, |n| *n);
            }
            assert_eq!(table.capacity(), grown.capacity(), "a child of {} entries", table.len());
        }
        for j in 0..=i {
            let key = format!("key:{j:010}");
            assert!(ks.get(key.as_bytes(), key_hash(key.as_bytes())).is_some(), "{key} lost in split {splits}");
        }
    }
    assert!(splits >= 4, "the directory split {splits} times");
    assert_eq!(ks.len(), 20_000);
}

#[test]
fn a_new_key_is_returned_as_stored_through_splits_with_and_without_a_ttl() {
    let mut ks = Keyspace::new();
    for i in 0..5_000u64 {
        let key = format!("new:{i}");
        // Every third key carries a TTL (stored first, indexed after).
        let expire = (i % 3 == 0).then_some(1_000 + i);
        let entry = ks.put(key.as_bytes(), key_hash(key.as_bytes()), state(expire));
        assert_eq!(entry.key(), key.as_bytes());
        assert_eq!(entry.state().expire_at_ms(), expire);
    }
    assert!(ks.slot_bits >= 6, "the directory split: {} bits", ks.slot_bits);
    assert_eq!(ks.len(), 5_000);
    assert_eq!(ks.expiring(), 1_667);
    for i in 0..5_000u64 {
        let key = format!("new:{i}");
        let found = ks.get(key.as_bytes(), key_hash(key.as_bytes())).expect("every new key stored");
        assert_eq!(found.state().expire_at_ms(), (i % 3 == 0).then_some(1_000 + i));
    }
}

#[test]
fn a_full_table_moved_by_insert_new_keeps_every_entry_and_doubles() {
    let mut table: HashTable<Entry> = HashTable::new();
    let mut sizes = Vec::new();
    for i in 0..200 {
        let key = format!("t:{i}");
        let before = table.capacity();
        let entry = insert_new(&mut table, key_hash(key.as_bytes()), Entry::new(key.as_bytes(), state(None), None));
        assert_eq!(entry.key(), key.as_bytes());
        if table.capacity() != before {
            sizes.push(table.capacity());
        }
    }
    // The capacities hashbrown's own growth goes through.
    let mut grown: HashTable<u64> = HashTable::new();
    let mut expected = Vec::new();
    for n in 0..200u64 {
        let before = grown.capacity();
        grown.insert_unique(n, n, |n| *n);
        if grown.capacity() != before {
            expected.push(grown.capacity());
        }
    }
    assert_eq!(sizes, expected);
    for i in 0..200 {
        let key = format!("t:{i}");
        assert!(table.find(key_hash(key.as_bytes()), |e| e.has_key(key.as_bytes())).is_some(), "{key} lost");
    }
}

#[test]
fn prefetching_present_and_absent_keys_of_every_shape_changes_nothing() {
    let mut ks = Keyspace::new();
    let dot = Dot::new(Hlc::from_parts(1, 0), 1);
    let mut shapes = vec![
        KeyState::with_value(dot, StrVal::Int(7), None),
        KeyState::with_value(dot, StrVal::raw(vec![b'v'; 64]), None),
        KeyState::with_value(dot, StrVal::raw(Vec::new()), None),
        KeyState::with_value(dot, StrVal::Int(1), Some(50_000)),
    ];
    let mut counted = KeyState::new();
    counted.incr_by(dot, Hlc::from_parts(1, 0), 3);
    shapes.push(counted);
    // Collections: a hash in the map form (past the packed form's size), a packed set.
    for (part, count) in [(Part::Hash, 600), (Part::Set, 3)] {
        let mut collection = KeyState::new();
        for n in 0..count {
            collection.part_mut(part).write(format!("f{n}").as_bytes(), |s| s.set(dot, StrVal::Int(n), SetTtl::Keep));
        }
        shapes.push(collection);
    }
    for (i, shape) in shapes.iter().enumerate() {
        let key = format!("k{i}");
        ks.put(key.as_bytes(), key_hash(key.as_bytes()), shape.clone());
    }
    let names: Vec<String> = (0..shapes.len() + 3).map(|i| format!("k{i}")).collect();
    // Present and absent keys, repeated ones, and more than one call looks at.
    let mut keys: Vec<&[u8]> = names.iter().map(|k| k.as_bytes()).collect();
    keys.insert(1, keys[0]);
    keys.extend(names.iter().rev().map(|k| k.as_bytes()));
    keys.extend(names.iter().map(|k| k.as_bytes()));
    assert!(keys.len() > PREFETCH_KEYS_MAX);
    // With and without an element named, present (`f1`) and absent (`f`), so that a
    // repeated key is seen after a read that named one and after one that did not.
    let reads: Vec<Prefetch<'_>> =
        keys.iter().enumerate().map(|(at, key)| Prefetch { key, element: [None, Some(&b"f"[..]), Some(&b"f1"[..])][at % 3] }).collect();
    ks.prefetch(&reads);
    ks.prefetch(&[]);
    for (i, key) in names.iter().enumerate() {
        let hash = key_hash(key.as_bytes());
        assert_eq!(ks.get(key.as_bytes(), hash).map(|e| e.state().clone()), shapes.get(i).cloned(), "{key}");
    }
    assert_eq!(ks.len(), shapes.len());
}
