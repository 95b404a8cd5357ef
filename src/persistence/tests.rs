//! Streamer and recovery together over the in-memory store: what a node stored, a new
//! node rebuilds; corruption and gaps stop recovery loudly; a second writer is fenced.

use bytes::Bytes;

use super::layout;
use super::memory::MemoryStore;
use super::recovery::{Recovered, Recovery, Step};
use super::store::StoreResult;
use super::streamer::{Streamer, StreamerConfig};
use crate::command::{KeyCommand, SetCondition, SetReply, TtlChange};
use crate::engine::kv::keyspace::SLOT_SPACE;
use crate::shard::{Shard, ShardConfig, ShardOp, ShardReply};

const NODE: u16 = 4;

fn shard() -> Shard {
    let mut config = ShardConfig::new(0, NODE);
    config.record_deltas = true;
    Shard::new(config)
}

fn set(shard: &mut Shard, key: &str, value: &str, now: u64) {
    let cmd = KeyCommand::Set {
        key: Bytes::from(key.to_string()),
        value: Bytes::from(value.to_string()),
        condition: SetCondition::Always,
        ttl: TtlChange::Clear,
        reply: SetReply::Ok,
        command: "set",
    };
    shard.apply(ShardOp::Key(cmd), now);
}

/// Drive the streamer until it has nothing left to do.
fn pump(streamer: &mut Streamer, shard: &mut Shard, store: &mut MemoryStore, now: &mut u64) {
    for _ in 0..10_000 {
        streamer.offer(shard.drain_deltas());
        if streamer.wants_checkpoint_chunk() {
            let mut cursor = 0;
            loop {
                let ShardReply::Chunk { deltas, next } = shard.apply(ShardOp::ExportChunk { cursor, count: 3 }, *now) else { panic!() };
                let last = next >= SLOT_SPACE;
                streamer.checkpoint_chunk(deltas, last);
                if last {
                    break;
                }
                cursor = next;
            }
        }
        match streamer.poll(*now) {
            Some(op) => streamer.complete(store.execute(op), *now),
            None if streamer.is_drained() && streamer.checkpoint_in_progress().is_none() => return,
            None => *now += 50,
        }
    }
    panic!("streamer did not drain");
}

fn recover(store: &mut MemoryStore, accept_loss: bool) -> Result<(Shard, Recovered), String> {
    let mut shard = shard();
    let mut recovery = Recovery::new(NODE, accept_loss);
    let mut step = recovery.start();
    for _ in 0..10_000 {
        step = match step {
            Step::Store(op) => recovery.next(Some(store.execute(op))),
            Step::Apply(deltas) => {
                crate::shard::merge_recovered(std::slice::from_mut(&mut shard), deltas);
                recovery.next(None)
            }
            Step::Done(recovered) => return Ok((shard, recovered)),
            Step::Failed(e) => return Err(e),
        };
    }
    Err("recovery did not finish".into())
}

fn contents(shard: &Shard) -> Vec<(Bytes, Option<Bytes>)> {
    let mut out: Vec<_> = shard.kv.keys.iter().map(|e| (e.key_to_bytes(), e.state().read().map(|v| v.to_bytes()))).collect();
    out.sort();
    out
}

#[test]
fn a_new_node_rebuilds_what_the_old_one_stored_across_checkpoints() {
    let mut store = MemoryStore::default();
    let mut node = shard();
    let mut config = StreamerConfig::new(NODE);
    config.checkpoint_every_segments = 3;
    let mut streamer = Streamer::new(config.clone(), &Recovered { next_segment: 1, ..Recovered::default() });
    let mut now = 1_000;
    for round in 0..12 {
        for i in 0..7 {
            set(&mut node, &format!("k{}", (round * 7 + i) % 20), &format!("v{round}"), now);
        }
        if round == 5 {
            node.apply(ShardOp::Del(vec![Bytes::from("k3")]), now);
        }
        now += 300;
        pump(&mut streamer, &mut node, &mut store, &mut now);
    }
    assert!(streamer.stats.checkpoints_written >= 2, "{:?}", streamer.stats);
    assert!(streamer.stats.deletes > 0, "old segments are deleted after a newer checkpoint");
    let (rebuilt, recovered) = recover(&mut store, false).unwrap();
    assert_eq!(contents(&rebuilt), contents(&node));
    // The rebuilt node continues where the old one stopped, and is then recoverable too.
    let mut rebuilt = rebuilt;
    let mut streamer = Streamer::new(config, &recovered);
    set(&mut rebuilt, "after", "restart", now);
    pump(&mut streamer, &mut rebuilt, &mut store, &mut now);
    let (again, _) = recover(&mut store, false).unwrap();
    assert_eq!(contents(&again), contents(&rebuilt));
}

#[test]
fn an_idle_node_writes_nothing_after_claiming_its_manifest() {
    let mut store = MemoryStore::default();
    let mut node = shard();
    let mut streamer = Streamer::new(StreamerConfig::new(NODE), &Recovered { next_segment: 1, ..Recovered::default() });
    let mut now = 0;
    pump(&mut streamer, &mut node, &mut store, &mut now);
    let objects = store.objects.len();
    for _ in 0..100 {
        now += 250;
        pump(&mut streamer, &mut node, &mut store, &mut now);
    }
    assert_eq!(store.objects.len(), objects);
    assert_eq!(streamer.stats.puts, 1, "only the manifest claim");
}

/// A store holding segments 1, 2 and 3, one key each.
fn three_segments() -> MemoryStore {
    let mut store = MemoryStore::default();
    let mut node = shard();
    let mut streamer = Streamer::new(StreamerConfig::new(NODE), &Recovered { next_segment: 1, ..Recovered::default() });
    let mut now = 1_000;
    for i in 0..3 {
        set(&mut node, &format!("k{i}"), "v", now);
        now += 300;
        pump(&mut streamer, &mut node, &mut store, &mut now);
    }
    store
}

#[test]
fn a_corrupt_segment_stops_recovery_naming_it_unless_loss_is_accepted() {
    let mut store = three_segments();
    let victim = layout::segment_path(NODE, 2);
    let mut bytes = store.objects[&victim].to_vec();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    store.objects.insert(victim.clone(), Bytes::from(bytes));
    let error = recover(&mut store, false).err().expect("recovery must refuse");
    assert!(error.contains(&victim) && error.contains("corrupt"), "{error}");
    let (mut partial, recovered) = recover(&mut store, true).unwrap();
    assert_eq!(contents(&partial).len(), 1, "only segment 1 replayed");
    assert!(recovered.loss.is_some());
    assert_eq!(recovered.next_segment, 4, "writing resumes after every existing segment");
    // The node checkpoints at once, so the next start no longer meets the bad segment.
    let mut streamer = Streamer::new(StreamerConfig::new(NODE), &recovered);
    let mut now = 10_000;
    set(&mut partial, "after", "loss", now);
    pump(&mut streamer, &mut partial, &mut store, &mut now);
    assert_eq!(streamer.stats.checkpoints_written, 1);
    let (again, _) = recover(&mut store, false).expect("the next start is clean");
    assert_eq!(contents(&again), contents(&partial));
}

#[test]
fn a_missing_segment_is_a_gap_not_a_silent_skip() {
    let mut store = three_segments();
    store.objects.remove(&layout::segment_path(NODE, 2));
    let error = recover(&mut store, false).err().expect("recovery must refuse");
    assert!(error.contains("missing"), "{error}");
}

#[test]
fn a_second_writer_with_the_same_node_id_is_fenced() {
    let mut store = MemoryStore::default();
    let mut first = Streamer::new(StreamerConfig::new(NODE), &Recovered { next_segment: 1, ..Recovered::default() });
    let mut second = Streamer::new(StreamerConfig::new(NODE), &Recovered { next_segment: 1, ..Recovered::default() });
    let op = first.poll(0).unwrap();
    first.complete(store.execute(op), 0);
    let op = second.poll(0).unwrap();
    second.complete(store.execute(op), 0);
    assert!(first.fenced().is_none());
    assert!(second.fenced().is_some_and(|r| r.contains("another process")));
    assert!(!second.has_room());
}

#[test]
fn store_failures_are_retried_and_nothing_is_lost() {
    let mut store = MemoryStore::default();
    let mut node = shard();
    let mut streamer = Streamer::new(StreamerConfig::new(NODE), &Recovered { next_segment: 1, ..Recovered::default() });
    let mut now = 1_000;
    set(&mut node, "a", "1", now);
    streamer.offer(node.drain_deltas());
    let mut failures = 0;
    for _ in 0..100 {
        now += 100;
        if let Some(op) = streamer.poll(now) {
            // Fail every other attempt.
            let result = if failures < 3 {
                failures += 1;
                StoreResult::Failed("503 slow down".into())
            } else {
                store.execute(op)
            };
            streamer.complete(result, now);
        }
    }
    assert_eq!(streamer.stats.errors, 3);
    assert!(streamer.is_drained());
    let (rebuilt, _) = recover(&mut store, false).unwrap();
    assert_eq!(contents(&rebuilt), contents(&node));
}

#[test]
fn a_put_that_landed_despite_reporting_failure_is_recognised_as_ours() {
    let mut store = MemoryStore::default();
    let mut node = shard();
    let mut streamer = Streamer::new(StreamerConfig::new(NODE), &Recovered { next_segment: 1, ..Recovered::default() });
    let op = streamer.poll(0).unwrap();
    streamer.complete(store.execute(op), 0);
    set(&mut node, "a", "1", 1_000);
    streamer.offer(node.drain_deltas());
    // The segment put lands but the client sees a timeout; the retry meets the object.
    let op = streamer.poll(1_000).unwrap();
    store.execute(op);
    streamer.complete(StoreResult::Failed("timeout".into()), 1_000);
    let mut now = 1_000;
    for _ in 0..10 {
        now += 500;
        if let Some(op) = streamer.poll(now) {
            let result = store.execute(op);
            streamer.complete(result, now);
        }
    }
    assert!(streamer.fenced().is_none(), "{:?}", streamer.fenced());
    assert_eq!(streamer.durable_segment(), 1);
    assert!(streamer.is_drained());
}

#[test]
fn a_wall_clock_stepped_back_delays_the_next_segment_by_one_interval_at_most() {
    let mut store = MemoryStore::default();
    let mut node = shard();
    let config = StreamerConfig::new(NODE);
    let interval = config.flush_interval_ms;
    let mut streamer = Streamer::new(config, &Recovered { next_segment: 1, ..Recovered::default() });
    let mut now = 100_000;
    set(&mut node, "before", "step", now);
    pump(&mut streamer, &mut node, &mut store, &mut now);
    let stored = streamer.durable_segment();
    // NTP steps the clock back ten seconds; a write follows.
    now -= 10_000;
    set(&mut node, "after", "step", now);
    streamer.offer(node.drain_deltas());
    let mut waited = 0;
    while streamer.durable_segment() == stored {
        assert!(waited <= interval, "no segment within {waited} ms of the step back");
        match streamer.poll(now) {
            Some(op) => streamer.complete(store.execute(op), now),
            None => {
                now += 10;
                waited += 10;
            }
        }
    }
    assert!(streamer.durable_hlc() > crate::crdt::Hlc::ZERO, "the stored stamps are known");
}

#[test]
fn a_flushall_replayed_on_another_shard_count_removes_only_what_each_shard_had() {
    // Two shards with their own clocks; shard 1's runs ahead.
    let shard_of = |i: usize| {
        let mut config = ShardConfig::new(i, NODE);
        config.shard_count = 2;
        config.record_deltas = true;
        Shard::new(config)
    };
    let mut shards = [shard_of(0), shard_of(1)];
    let key_on = |shard: usize, prefix: &str| {
        (0..).map(|i| format!("{prefix}{i}")).find(|k| crate::routing::shard_for_key(k.as_bytes(), 2) == shard).unwrap()
    };
    let (early, late) = (key_on(0, "a"), key_on(1, "b"));
    set(&mut shards[0], &early, "old", 1_000);
    set(&mut shards[1], &late, "old", 9_000);
    for shard in &mut shards {
        shard.apply(ShardOp::Keyspace(crate::command::KeyspaceCommand::Flush), 1_000);
    }
    // After the FLUSHALL, shard 0 writes with a stamp below shard 1's flush context.
    let reborn = key_on(0, "c");
    set(&mut shards[0], &reborn, "after the flush", 1_001);
    let mut deltas = Vec::new();
    for shard in &mut shards {
        deltas.extend(shard.drain_deltas().decode().unwrap());
    }
    // Replayed onto one shard (another shard count): shard 1's flush may not touch
    // shard 0's later write.
    let mut rebuilt = shard();
    crate::shard::merge_recovered(std::slice::from_mut(&mut rebuilt), deltas);
    assert_eq!(contents(&rebuilt), vec![(Bytes::from(reborn), Some(Bytes::from("after the flush")))]);
}

#[test]
fn a_waiting_writer_gets_its_segment_at_once_and_later_writes_share_the_next() {
    let mut store = MemoryStore::default();
    let mut node = shard();
    let mut streamer = Streamer::new(StreamerConfig::new(NODE), &Recovered { next_segment: 1, ..Recovered::default() });
    // The clock hardly moves: after the first segment only `flush_now` can cut one.
    let now = 1_000_000;
    let op = streamer.poll(now).expect("the manifest claim");
    streamer.complete(store.execute(op), now);
    set(&mut node, "a", "1", now);
    streamer.offer(node.drain_deltas());
    let first = streamer.poll(now).expect("the first segment is due at once");
    streamer.complete(store.execute(first), now);
    set(&mut node, "b", "1", now);
    streamer.offer(node.drain_deltas());
    assert!(streamer.poll(now + 1).is_none(), "without a waiter the interval is respected");
    streamer.flush_now();
    let segment = streamer.poll(now + 1).expect("a waiter cuts at once");
    // Three writes arrive while segment 2 is in flight; a waiter asks for them.
    for key in ["c", "d", "e"] {
        set(&mut node, key, "1", now);
    }
    streamer.offer(node.drain_deltas());
    streamer.flush_now();
    assert!(streamer.poll(now + 1).is_none(), "one operation in flight at a time");
    streamer.complete(store.execute(segment), now + 1);
    assert_eq!(streamer.durable_segment(), 2);
    let next = streamer.poll(now + 2).expect("the group's segment");
    streamer.complete(store.execute(next), now + 2);
    assert_eq!(streamer.durable_segment(), 3);
    assert!(streamer.is_drained());
    assert_eq!(streamer.stats.segments_written, 3, "five writes, three segments");
    assert_eq!(streamer.stats.segments_for_waiters, 2);
    assert!(streamer.poll(now + 3).is_none(), "nothing more to do");
    let (recovered, _) = recover(&mut store, false).expect("recovers");
    assert_eq!(contents(&recovered).len(), 5);
}

#[test]
fn a_stored_segments_body_is_kept_for_the_next_drain_and_an_idle_round_frees_it() {
    let mut store = MemoryStore::default();
    let mut streamer = Streamer::new(StreamerConfig::new(NODE), &Recovered::default());
    let mut shard = shard();
    let mut now = 1_000;
    let value = "v".repeat(512);
    for i in 0..300 {
        set(&mut shard, &format!("key:{i}"), &value, now);
    }
    pump(&mut streamer, &mut shard, &mut store, &mut now);
    let spare = streamer.take_spare_body().expect("the stored body, nothing else holding it");
    assert!(spare.capacity() >= 300 * 512);
    // The shard records its next writes into it.
    let spare_at = spare.as_ptr();
    for i in 0..300 {
        set(&mut shard, &format!("key:{i}"), &value, now);
    }
    let drained = shard.deltas.drain_reusing(Some(spare));
    assert_ne!(drained.body.as_ptr(), spare_at, "what was recorded before goes out");
    for i in 0..300 {
        set(&mut shard, &format!("key:{i}"), &value, now);
    }
    assert_eq!(shard.drain_deltas().body.as_ptr(), spare_at);
    streamer.drop_spare_bodies();
    assert!(streamer.take_spare_body().is_none());
}
