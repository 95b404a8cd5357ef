//! A collection emptied and written again on a node with peers (a queue whose consumer
//! keeps up): the key's tombstone holds every removed element until the removals are
//! stable, and a write to the key joins that history. What the write ships must be the
//! write (and the key-level part), not the history, and the state left must be the
//! same join either way; a peer that merges only what was shipped converges on it.

use bytes::Bytes;

use super::lone_removal_tests::Deltas;
use crate::command::hash::{HSetReply, HashCommand};
use crate::command::list::{End, ListCommand};
use crate::crdt::HlcClock;
use crate::engine::kv::elements::ORDERED_ENTRIES_MAX;
use crate::engine::kv::{KeyState, KvEngine, WriteCtx, key_hash, merkle};

/// The key's whole state, live or tombstone, and its anti-entropy digest.
fn held(kv: &KvEngine, key: &[u8]) -> Option<(KeyState, u64)> {
    let state = kv.keys.get(key, key_hash(key)).map(|e| e.state()).or_else(|| kv.keys.tombstone(key))?;
    Some((state.clone(), merkle::digest(key, state)))
}

/// Element entries (live and tombstones) a delta carries.
fn entries_in(state: &KeyState) -> usize {
    state.collection_parts().map(|(_, elements)| elements.entries_len()).sum()
}

/// Runs `step` for each round on a node with peers (tombstones kept, nothing stable),
/// passes every delta to a second such node, and checks after each round that the
/// second holds exactly the first's state and that no delta carried more than
/// `most_entries` elements. Returns the writer, its clock and its element tombstones
/// at the end.
fn refill_rounds(
    rounds: usize,
    most_entries: usize,
    mut step: impl FnMut(&mut KvEngine, &mut WriteCtx, usize),
) -> (KvEngine, HlcClock, usize) {
    let key = b"k";
    let mut writer = KvEngine { keep_tombstones: true, ..KvEngine::default() };
    let mut peer = KvEngine { keep_tombstones: true, ..KvEngine::default() };
    let mut clock = HlcClock::new();
    let mut sink = Deltas::default();
    let mut largest = 0;
    for round in 0..rounds {
        let mut ctx = WriteCtx { clock: &mut clock, node: 1, now_ms: 1_000, string_bytes_max: 1 << 20, deltas: &mut sink };
        step(&mut writer, &mut ctx, round);
        for (key, state) in sink.0.drain(..) {
            largest = largest.max(entries_in(&state));
            peer.merge_key(key, state);
        }
        let (mine, theirs) = (held(&writer, key), held(&peer, key));
        assert_eq!(mine.as_ref().map(|h| h.1), theirs.as_ref().map(|h| h.1), "round {round}: the peer holds the writer's state");
        assert_eq!(mine.map(|h| h.0.exists()), theirs.map(|h| h.0.exists()), "round {round}");
    }
    assert!(largest <= most_entries, "a delta carried {largest} elements; at most {most_entries} expected");
    let tombstones = held(&writer, key).map_or(0, |(state, _)| state.element_tombstones());
    (writer, clock, tombstones)
}

#[test]
fn a_list_refilled_after_each_pop_ships_its_push_not_its_history() {
    let key = Bytes::from_static(b"k");
    let rounds = ORDERED_ENTRIES_MAX * 2;
    let (mut writer, _, tombstones) = refill_rounds(rounds, 1, |kv, ctx, round| {
        let element = Bytes::from(format!("job-{round}"));
        kv.list_command(ctx, ListCommand::Push { key: key.clone(), end: End::Left, elements: vec![element], only_if_exists: false });
        kv.list_command(ctx, ListCommand::Pop { key: key.clone(), end: End::Right, count: None });
    });
    assert_eq!(tombstones, rounds, "every pop's tombstone waits for the peers (nothing is stable)");
    assert_eq!(writer.list_values(&key, 1_000).ok().flatten(), None, "the queue is empty");
}

#[test]
fn a_refilled_list_holds_the_same_join_as_the_history_merged_into_the_write() {
    // The write joined into the history (past ORDERED_ENTRIES_MAX tombstones) against
    // the history joined into the write: the same state and digest.
    let key = Bytes::from_static(b"k");
    let (mut writer, mut clock, _) = refill_rounds(ORDERED_ENTRIES_MAX / 2 + 10, 2, |kv, ctx, round| {
        let elements = vec![Bytes::from(format!("a-{round}")), Bytes::from(format!("b-{round}"))];
        kv.list_command(ctx, ListCommand::Push { key: key.clone(), end: End::Right, elements, only_if_exists: false });
        kv.list_command(ctx, ListCommand::Pop { key: key.clone(), end: End::Left, count: Some(2) });
    });
    let tombstone = writer.keys.tombstone(&key).expect("emptied").clone();
    let mut sink = Deltas::default();
    let mut ctx = WriteCtx { clock: &mut clock, node: 1, now_ms: 1_000, string_bytes_max: 1 << 20, deltas: &mut sink };
    let elements = vec![Bytes::from_static(b"x"), Bytes::from_static(b"y")];
    writer.list_command(&mut ctx, ListCommand::Push { key: key.clone(), end: End::Left, elements, only_if_exists: false });
    let (_, written) = sink.0.pop().expect("the push shipped");
    assert_eq!(entries_in(&written), 2, "the push alone");
    let mut history_into_write = written.clone();
    history_into_write.merge(&tombstone);
    let (state, digest) = held(&writer, &key).expect("live again");
    assert_eq!(digest, merkle::digest(&key, &history_into_write));
    assert_eq!(state.element_tombstones(), history_into_write.element_tombstones());
    assert_eq!(writer.list_values(&key, 1_000).ok().flatten(), Some(vec![Bytes::from_static(b"y"), Bytes::from_static(b"x")]));
}

#[test]
fn a_hash_refilled_after_each_hdel_ships_its_field_not_its_history() {
    let key = Bytes::from_static(b"k");
    let rounds = ORDERED_ENTRIES_MAX + 40;
    let (_, _, tombstones) = refill_rounds(rounds, 1, |kv, ctx, round| {
        let field = Bytes::from(format!("f{round}"));
        let set = HashCommand::Set { key: key.clone(), pairs: vec![(field.clone(), Bytes::from_static(b"v"))], reply: HSetReply::Added };
        kv.hash_command(ctx, set, &mut || 0);
        kv.hash_command(ctx, HashCommand::Del { key: key.clone(), fields: vec![field] }, &mut || 0);
    });
    assert_eq!(tombstones, rounds);
}
