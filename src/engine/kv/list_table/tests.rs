//! Tests of the list table: reads against a model through random edits, pops at both
//! ends, memory per element; a graph's elements (names that are ids) the same way.

use super::*;
use crate::crdt::{Dot, Hlc};
use crate::engine::kv::position::{self, Placement};
use crate::engine::kv::value::{KeyState, StrVal};
use bytes::Bytes;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;

fn dot(hlc: u64, node: u16) -> Dot {
    Dot::new(Hlc(hlc), node)
}

fn raw(d: Dot, v: &[u8]) -> Stored {
    Stored::bytes_at(d, v)
}

fn names_of(table: &ListTable) -> Vec<Vec<u8>> {
    table.walk(false, false).map(|(n, _)| n.to_vec()).collect()
}

/// The table against a plain sorted map, through random puts, replaces and removes
/// (compact and not), reading back in both directions and from every index.
#[test]
fn a_table_reads_as_a_sorted_map_through_random_changes() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
    for round in 0..20 {
        let mut table = ListTable::default();
        let mut model: BTreeMap<Vec<u8>, Stored> = BTreeMap::new();
        let mut names: Vec<Vec<u8>> = Vec::new();
        for step in 0..1500u64 {
            let d = dot(100 + step, rng.random_range(1..4));
            match rng.random_range(0..10) {
                0..=5 => {
                    // A push at an end or an insert between two names.
                    let i = rng.random_range(0..=names.len());
                    let low = i.checked_sub(1).map(|j| names[j].clone());
                    let high = names.get(i).cloned();
                    let name = position::between(low.as_deref(), high.as_deref(), d, Placement::Middle);
                    let below: Vec<Vec<u8>> = (1..rng.random_range(1..4u64)).map(|k| position::below(&name, k, d)).collect();
                    for n in std::iter::once(name).chain(below) {
                        let value = format!("v{step}").into_bytes();
                        let stored =
                            if step % 7 == 0 { Stored::Int { hlc: d.hlc, node: d.node, value: step as i64 } } else { raw(d, &value) };
                        assert!(!table.put(&n, stored.clone()));
                        model.insert(n.clone(), stored);
                        let at = names.binary_search(&n).expect_err("new name");
                        names.insert(at, n);
                    }
                }
                6 if !names.is_empty() => {
                    // An LSET (explicit dot) or a tombstone / concurrent values.
                    let n = names[rng.random_range(0..names.len())].clone();
                    let stored = if rng.random_bool(0.5) {
                        raw(d, b"lset")
                    } else {
                        let mut state = KeyState::with_value(d, StrVal::from_bytes(Bytes::from_static(b"x")), None);
                        if rng.random_bool(0.5) {
                            state.delete(dot(d.hlc.0 + 1, d.node));
                        } else {
                            state.merge(&KeyState::with_value(dot(d.hlc.0, d.node + 10), StrVal::Int(3), None));
                        }
                        Stored::from_owned(state)
                    };
                    assert!(table.put(&n, stored.clone()));
                    model.insert(n, stored);
                }
                _ if !names.is_empty() => {
                    let n = names.remove(rng.random_range(0..names.len()));
                    assert_eq!(table.remove(&n), model.remove(&n));
                }
                _ => {}
            }
            if step % 100 == 0 {
                check_scans(&table, &model, &mut rng);
            }
        }
        check_scans(&table, &model, &mut rng);
        assert_eq!(table.entries_len(), model.len(), "round {round}");
        assert_eq!(names_of(&table), model.keys().cloned().collect::<Vec<_>>());
        for (n, s) in &model {
            assert_eq!(table.get(n), Some(s.view()));
        }
        let live: Vec<Vec<u8>> = model.iter().filter(|(_, s)| s.view().exists()).map(|(n, _)| n.clone()).collect();
        let back: Vec<Vec<u8>> = table.walk(true, true).map(|(n, _)| n.to_vec()).collect();
        assert_eq!(back.iter().rev().cloned().collect::<Vec<_>>(), live);
        for skip in [0, 1, 127, 128, 129, live.len() / 2, live.len()] {
            let from: Vec<Vec<u8>> = table.walk_from(skip, false).map(|(n, _)| n.to_vec()).collect();
            assert_eq!(from, live[skip.min(live.len())..].to_vec());
            let from_tail: Vec<Vec<u8>> = table.walk_from(skip, true).map(|(n, _)| n.to_vec()).collect();
            let want: Vec<Vec<u8>> = live.iter().rev().skip(skip).cloned().collect();
            assert_eq!(from_tail, want);
        }
        assert!(table.chunks.iter().all(|c| c.count > 0 && c.count as usize <= CHUNK_ENTRIES_MAX));
        assert_eq!(table.edge(false).map(|n| n.to_vec()), live.first().cloned());
        assert_eq!(table.edge(true).map(|n| n.to_vec()), live.last().cloned());
    }
}

/// `last_live` and `scan_live_from` (its chunk fast path while every live element is
/// chunked, a walk otherwise) against the model: from no name, an existing name, a
/// name between two, past the end; stopped early too.
fn check_scans(table: &ListTable, model: &BTreeMap<Vec<u8>, Stored>, rng: &mut impl Rng) {
    let live: Vec<(&Vec<u8>, ElementRef<'_>)> = model.iter().filter(|(_, s)| s.view().exists()).map(|(n, s)| (n, s.view())).collect();
    let last = table.last_live().map(|(n, e)| (n.to_vec(), e));
    assert_eq!(last, live.last().map(|(n, e)| ((*n).clone(), *e)));
    let mut froms: Vec<Vec<u8>> = vec![Vec::new(), vec![0xff; 40]];
    if !live.is_empty() {
        let picked = live[rng.random_range(0..live.len())].0.clone();
        let mut between = picked.clone();
        between.push(0);
        froms.extend([picked, between]);
    }
    for from in froms {
        let want: Vec<(Vec<u8>, ElementRef<'_>)> = live.iter().filter(|(n, _)| **n >= from).map(|(n, e)| ((*n).clone(), *e)).collect();
        let mut got = Vec::new();
        table.scan_live_from(&from, |n, e| {
            got.push((n.to_vec(), e));
            true
        });
        assert_eq!(got, want, "from {from:?}, all chunked: {}", table.live_all_chunked());
        let mut first_two = Vec::new();
        table.scan_live_from(&from, |n, _| {
            first_two.push(n.to_vec());
            first_two.len() < 2
        });
        assert_eq!(first_two, want.iter().take(2).map(|(n, _)| n.clone()).collect::<Vec<_>>());
    }
}

/// Pushes and pops at both ends (the queue workloads that take the chunk's fast
/// paths: a tail pop cut at `last_at` with the offsets kept, a head pop leaving an
/// unused prefix), by writers on several nodes (so names step with and without a
/// node change), read back against a model; a queue that pushes at one end and
/// pops at the other keeps its chunk's bytes bounded by what it holds.
#[test]
fn pops_at_both_ends_read_back_and_stay_bounded() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
    for round in 0..12 {
        let mut table = ListTable::default();
        let mut model: std::collections::VecDeque<(Vec<u8>, Stored)> = std::collections::VecDeque::new();
        let nodes = if round % 3 == 0 { 1 } else { 3 };
        // Rounds alternate a balanced mix (length wanders) and a queue held near 60.
        let queue = round % 2 == 1;
        for step in 0..4000u64 {
            let d = dot(1000 + 2 * step, rng.random_range(1..=nodes));
            let value = vec![b'v'; rng.random_range(1..40)];
            let push = if queue { model.len() < 60 } else { rng.random_bool(0.5) };
            let at_tail = rng.random_bool(0.5);
            if push {
                let stored = raw(d, &value);
                if at_tail || queue {
                    let n = position::between(model.back().map(|(n, _)| n.as_slice()), None, d, Placement::AfterLow);
                    assert!(!table.put(&n, stored.clone()));
                    model.push_back((n, stored));
                } else {
                    let n = position::between(None, model.front().map(|(n, _)| n.as_slice()), d, Placement::BeforeHigh);
                    assert!(!table.put(&n, stored.clone()));
                    model.push_front((n, stored));
                }
            } else if let Some((n, stored)) = if at_tail && !queue { model.pop_back() } else { model.pop_front() } {
                assert_eq!(table.remove(&n), Some(stored), "round {round} step {step}");
            }
            if step % 97 == 0 || model.len() < 3 {
                let want: Vec<Vec<u8>> = model.iter().map(|(n, _)| n.clone()).collect();
                assert_eq!(names_of(&table), want, "round {round} step {step}");
                assert_eq!(table.edge(true).map(|n| n.to_vec()), want.last().cloned());
                for (n, s) in model.iter().take(3).chain(model.iter().rev().take(3)) {
                    assert_eq!(table.get(n), Some(s.view()));
                }
            }
        }
        if queue {
            // ~60 entries of at most ~60 bytes each, in at most two chunks: the
            // unused prefix a head pop leaves is reclaimed, not accumulated.
            let (bytes, chunks) = table.chunk_bytes();
            assert!(bytes < 2 * 60 * 64 + chunks * 256, "round {round}: {bytes} bytes in {chunks} chunks");
        }
    }
}

#[test]
fn a_push_of_a_thousand_costs_about_its_values() {
    let mut table = ListTable::default();
    let d = dot(1 << 20, 1);
    let anchor = position::between(None, None, d, Placement::AfterLow);
    let mut names = vec![anchor.clone()];
    names.extend((1..1000).map(|k| position::below(&anchor, k, d)));
    for (i, n) in names.iter().enumerate() {
        table.put(n, raw(d, format!("member:{i:09}").as_bytes()));
    }
    let (bytes, _) = table.chunk_bytes();
    // A 16-byte value, its length, a tag, a digit step and an HLC step.
    assert!(bytes < 1000 * 24, "{bytes}");
    assert_eq!(names_of(&table), names);
    // Consecutive single-element pushes, one HLC apart.
    let mut table = ListTable::default();
    let mut last: Option<Vec<u8>> = None;
    for i in 0..1000u64 {
        let d = dot((1 << 20) + 3 * i, 2);
        let n = position::between(last.as_deref(), None, d, Placement::AfterLow);
        table.put(&n, raw(d, b"0123456789abcdef"));
        last = Some(n);
    }
    let (bytes, _) = table.chunk_bytes();
    assert!(bytes < 1000 * 24, "{bytes}");
}

/// A run of LPUSHes writes into the room a new head chunk keeps before its first entry
/// (`Chunk::first_of_front_run`): read back in order through head pops, pushes of a
/// longer value (that room runs out) and a pop at the tail, and costs about its values
/// once the run is over.
#[test]
fn lpushes_into_a_head_chunks_room_read_back_in_order() {
    let mut table = ListTable::default();
    let mut model: std::collections::VecDeque<(Vec<u8>, Stored)> = std::collections::VecDeque::new();
    for step in 0..3000u64 {
        let d = dot((1 << 20) + 2 * step, 1 + (step % 3 == 0) as u16);
        if step % 11 == 5 {
            let (n, stored) = model.pop_front().expect("pushes outnumber pops");
            assert_eq!(table.remove(&n), Some(stored), "step {step}");
        } else if step % 101 == 7 {
            let (n, stored) = model.pop_back().expect("pushes outnumber pops");
            assert_eq!(table.remove(&n), Some(stored), "step {step}");
        } else {
            // Long values now and then: coded on the stack (90 bytes) or past it (150).
            let value = if step % 400 < 40 { vec![b'w'; if step % 2 == 0 { 90 } else { 150 }] } else { format!("{step:016}").into_bytes() };
            let n = position::between(None, model.front().map(|(n, _)| n.as_slice()), d, Placement::BeforeHigh);
            let stored = raw(d, &value);
            assert!(!table.put(&n, stored.clone()));
            model.push_front((n, stored));
        }
        if step % 50 == 0 {
            let want: Vec<Vec<u8>> = model.iter().map(|(n, _)| n.clone()).collect();
            assert_eq!(names_of(&table), want, "step {step}");
            for (n, s) in model.iter().take(3).chain(model.iter().rev().take(3)) {
                assert_eq!(table.get(n), Some(s.view()), "step {step}");
            }
        }
    }
    let values: Vec<Stored> = table.walk(false, false).map(|(_, e)| Stored::from_view(e)).collect();
    assert_eq!(values, model.iter().map(|(_, s)| s.clone()).collect::<Vec<_>>());
    // Full chunks hold no room: ~2,500 entries of ~20-110 bytes, plus one head chunk's room.
    let (bytes, chunks) = table.chunk_bytes();
    let values_bytes: usize = model.iter().map(|(_, s)| s.view().read().map_or(0, |v| v.to_bytes().len())).sum();
    assert!(bytes < values_bytes + model.len() * 16 + chunks * 160 + 16 * 1024, "{bytes} bytes for {values_bytes} of values");
}

/// LPUSHes onto a chunk that has no room before its first entry (one built by
/// RPUSHes): the first makes room once (`Chunk::make_head_room`), the rest write into
/// it; the list reads back in order and the chunk's bytes stay within about twice what
/// its entries take.
#[test]
fn lpushes_onto_a_chunk_without_room_read_back_in_order_and_stay_bounded() {
    let mut table = ListTable::default();
    let mut model: std::collections::VecDeque<(Vec<u8>, Stored)> = std::collections::VecDeque::new();
    for step in 0..8u64 {
        let d = dot((1 << 20) + step, 1);
        let n = position::between(model.back().map(|(n, _)| n.as_slice()), None, d, Placement::AfterLow);
        let stored = raw(d, format!("tail{step}").as_bytes());
        table.put_at_end(true, &n, stored.view());
        model.push_back((n, stored));
    }
    for step in 0..300u64 {
        let d = dot((1 << 21) + 2 * step, 1 + (step % 5 == 0) as u16);
        let n = position::between(None, model.front().map(|(n, _)| n.as_slice()), d, Placement::BeforeHigh);
        let stored = raw(d, format!("head{step}").as_bytes());
        table.put_at_end(false, &n, stored.view());
        model.push_front((n, stored));
        let (bytes, chunks) = table.chunk_bytes();
        let used: usize = model.iter().map(|(_, s)| s.view().read().map_or(0, |v| v.to_bytes().len()) + 8).sum();
        assert!(bytes <= 2 * used + chunks * 256, "step {step}: {bytes} bytes in {chunks} chunks for {used}");
    }
    let want: Vec<Vec<u8>> = model.iter().map(|(n, _)| n.clone()).collect();
    assert_eq!(names_of(&table), want);
    for (n, s) in &model {
        assert_eq!(table.get(n), Some(s.view()));
    }
}

/// `pop_end` at both ends (LPOP's and RPOP's path: no search at the head) through
/// pushes at both ends, read back against a model after every pop.
#[test]
fn pops_from_either_end_take_the_end_entries_in_order() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(23);
    let mut table = ListTable::default();
    let mut model: std::collections::VecDeque<(Vec<u8>, Stored)> = std::collections::VecDeque::new();
    for step in 0..6000u64 {
        let d = dot((1 << 20) + 2 * step, rng.random_range(1..=3));
        if rng.random_bool(0.55) || model.is_empty() {
            let value = vec![b'v'; rng.random_range(1..30)];
            let stored = raw(d, &value);
            if rng.random_bool(0.5) {
                let n = position::between(model.back().map(|(n, _)| n.as_slice()), None, d, Placement::AfterLow);
                table.put_at_end(true, &n, stored.view());
                model.push_back((n, stored));
            } else {
                let n = position::between(None, model.front().map(|(n, _)| n.as_slice()), d, Placement::BeforeHigh);
                table.put_at_end(false, &n, stored.view());
                model.push_front((n, stored));
            }
        } else {
            let tail = rng.random_bool(0.5);
            let (name, stored) = table.pop_end(tail, |_, element| Stored::from_view(element)).expect("not empty");
            let (want_name, want) = if tail { model.pop_back() } else { model.pop_front() }.expect("not empty");
            assert_eq!((name.to_vec(), stored), (want_name, want), "step {step}");
        }
        if step % 101 == 0 {
            assert_eq!(names_of(&table), model.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>(), "step {step}");
        }
    }
}

/// A queue on a node with peers: every pop leaves its tombstone in the side map (at
/// its high end for LPOP, its low end for RPOP), and reads of the live elements, from
/// either end and any index, see exactly those, whether or not a live entry is in the
/// side map too; tombstone collection leaves the rest in order.
#[test]
fn pops_tombstones_wait_in_the_side_map_and_reads_see_only_the_live() {
    let mut table = ListTable::default();
    let mut last: Option<Vec<u8>> = None;
    let mut live: std::collections::VecDeque<Vec<u8>> = std::collections::VecDeque::new();
    for i in 0..2_000u64 {
        let d = dot(10 + i, 1 + (i % 2) as u16);
        let n = position::between(last.as_deref(), None, d, Placement::AfterLow);
        table.put_at_end(true, &n, raw(d, b"v").view());
        live.push_back(n.clone());
        last = Some(n);
    }
    let by = |i: u64| dot(1 << 30 | i, 3);
    let mut tombstones = Vec::new();
    for i in 0..1_500u64 {
        let tail = i % 3 == 0;
        let (name, old) = table.pop_end(tail, |_, element| element.plain_dot().expect("plain")).expect("not empty");
        let tombstone = Stored::Tombstone(crate::engine::kv::element::Tombstone::of_removal(old, by(i)));
        table.put_other_unchunked(&name, tombstone);
        let want = if tail { live.pop_back() } else { live.pop_front() }.expect("not empty");
        assert_eq!(name.to_vec(), want);
        tombstones.push(want);
    }
    let check = |table: &ListTable, live: &std::collections::VecDeque<Vec<u8>>| {
        let live: Vec<Vec<u8>> = live.iter().cloned().collect();
        let forward: Vec<Vec<u8>> = table.walk(false, true).map(|(n, _)| n.to_vec()).collect();
        assert_eq!(forward, live);
        let back: Vec<Vec<u8>> = table.walk(true, true).map(|(n, _)| n.to_vec()).collect();
        assert_eq!(back.into_iter().rev().collect::<Vec<_>>(), live);
        for skip in [0, 1, 100, live.len() - 1, live.len()] {
            let from: Vec<Vec<u8>> = table.walk_from(skip, false).map(|(n, _)| n.to_vec()).collect();
            assert_eq!(from, live[skip..].to_vec());
            let from_tail: Vec<Vec<u8>> = table.walk_from(skip, true).map(|(n, _)| n.to_vec()).collect();
            assert_eq!(from_tail, live.iter().rev().skip(skip).cloned().collect::<Vec<_>>());
        }
        assert_eq!(table.edge(false).map(|n| n.to_vec()), live.first().cloned());
        assert_eq!(table.edge(true).map(|n| n.to_vec()), live.last().cloned());
    };
    assert_eq!(table.entries_len(), 2_000);
    check(&table, &live);
    for name in &tombstones {
        assert!(table.get(name).is_some_and(|e| !e.exists()));
    }
    // A live entry in the side map too (concurrent values on one element).
    let middle = live[live.len() / 2].clone();
    let mut concurrent = KeyState::with_value(dot(7, 1), StrVal::Int(1), None);
    concurrent.merge(&KeyState::with_value(dot(7, 2), StrVal::Int(2), None));
    assert!(table.put(&middle, Stored::from_owned(concurrent)));
    check(&table, &live);
    // Collection of every other tombstone.
    table.retain_others(|name, element| element.exists() || name.last().is_some_and(|b| b % 2 == 0));
    let kept: Vec<Vec<u8>> = table.walk(false, false).filter(|(_, e)| !e.exists()).map(|(n, _)| n.to_vec()).collect();
    let mut want: Vec<Vec<u8>> = tombstones.into_iter().filter(|n| n.last().is_some_and(|b| b % 2 == 0)).collect();
    want.sort();
    assert_eq!(kept, want);
    check(&table, &live);
}

#[test]
fn retain_keeps_what_it_is_told_in_order() {
    let mut table = ListTable::default();
    let mut last: Option<Vec<u8>> = None;
    let mut names = Vec::new();
    for i in 0..600u64 {
        let d = dot(10 + i, 1);
        let n = position::between(last.as_deref(), None, d, Placement::AfterLow);
        table.put(&n, raw(d, b"v"));
        names.push(n.clone());
        last = Some(n);
    }
    table.retain(|_, stored| stored.view().newest_dot().is_some_and(|d| !d.hlc.0.is_multiple_of(3)));
    let want: Vec<Vec<u8>> =
        names.iter().enumerate().filter(|(i, _)| !(10 + *i as u64).is_multiple_of(3)).map(|(_, n)| n.clone()).collect();
    assert_eq!(names_of(&table), want);
    assert_eq!(table.entries_len(), want.len());
}

/// A graph element's name (`graph/store.rs`): a tag, an id, a property name.
fn graph_name(tag: u8, (hlc, node, seq): (u64, u16, u32), key: &str) -> Vec<u8> {
    let mut name = vec![tag];
    name.extend_from_slice(&hlc.to_be_bytes());
    name.extend_from_slice(&node.to_be_bytes());
    name.extend_from_slice(&seq.to_be_bytes());
    name.extend_from_slice(key.as_bytes());
    name
}

/// A graph's elements in the table (names coded as id steps, dots as the id's): read
/// back against a model through creates in id order (a node and its property at a
/// time, as a bulk load writes them: every node lands just before the properties),
/// edges, later writes to older elements' properties (an explicit dot), removes
/// anywhere and at the tail.
#[test]
fn a_graphs_elements_read_back_as_a_sorted_map() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let mut table = ListTable::default();
    let mut model: BTreeMap<Vec<u8>, Stored> = BTreeMap::new();
    let mut ids = Vec::new();
    for step in 0..6000u64 {
        // Fifty elements per write: one HLC, ids apart in their sequence number.
        let hlc = (1 << 40) + step / 50 * 65536;
        let id = (hlc, rng.random_range(1..3), (step % 50) as u32);
        let mut put = |name: Vec<u8>, stored: Stored| {
            table.put(&name, stored.clone());
            model.insert(name, stored);
        };
        match rng.random_range(0..10) {
            0..=5 => {
                let created = dot(id.0, id.1);
                put(graph_name(b'N', id, ""), raw(created, b"labels"));
                let key = ["i", "age", "a-longer-name"][rng.random_range(0..3)];
                put(graph_name(b'P', id, key), Stored::Int { hlc: created.hlc, node: created.node, value: step as i64 });
                ids.push(id);
            }
            6 if !ids.is_empty() => {
                let old = ids[rng.random_range(0..ids.len())];
                put(graph_name(b'P', old, "i"), raw(dot(hlc + 7, 3), b"later"));
            }
            7 => put(graph_name(b'E', id, ""), raw(dot(id.0, id.1), &[7; 31])),
            _ if !model.is_empty() => {
                let at = if rng.random_bool(0.3) { model.len() - 1 } else { rng.random_range(0..model.len()) };
                let n = model.keys().nth(at).cloned().expect("in range");
                assert_eq!(table.remove(&n), model.remove(&n), "step {step}");
            }
            _ => {}
        }
    }
    assert_eq!(names_of(&table), model.keys().cloned().collect::<Vec<_>>());
    for (n, s) in &model {
        assert_eq!(table.get(n), Some(s.view()));
    }
    assert!(table.chunks.iter().all(|c| c.count > 0 && c.count as usize <= CHUNK_ENTRIES_MAX));
}

/// A bulk load's shape (nodes each with a property, then edges, ids ascending): the
/// nodes' run before the properties splits there and goes on as appends, so chunks
/// stay full, and an edge costs its value and a few bytes.
#[test]
fn a_graph_bulk_load_fills_its_chunks_and_costs_about_its_values() {
    let mut table = ListTable::default();
    for seq in 0..10_000u32 {
        let id = ((1 << 40) + u64::from(seq / 5000) * 65536, 1, seq);
        let created = dot(id.0, id.1);
        table.put(&graph_name(b'N', id, ""), raw(created, b"\x06\x01\x02\x01N"));
        table.put(&graph_name(b'P', id, "i"), raw(created, &[3, 1, 2, 3, 4, 5, 6, 7, 8]));
    }
    let (_, chunks) = table.chunk_bytes();
    assert!(chunks <= 20_000 / CHUNK_ENTRIES_MAX + 3, "{chunks} chunks");
    let (before, _) = table.chunk_bytes();
    for seq in 0..10_000u32 {
        let id = ((1 << 41) + u64::from(seq / 5000) * 65536, 1, seq);
        table.put(&graph_name(b'E', id, ""), raw(dot(id.0, id.1), &[7; 31]));
    }
    let (after, _) = table.chunk_bytes();
    // A 31-byte value, its length, a tag and a three-byte id step.
    assert!(after - before < 10_000 * 40, "{} bytes an edge", (after - before) / 10_000);
    assert_eq!(table.entries_len(), 30_000);
}
