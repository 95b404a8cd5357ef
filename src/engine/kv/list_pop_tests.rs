//! Pushes and pops that reach the chunk ends directly (`Elements::push_list_element`,
//! `KvEngine::pop_at_end`) against the general path they replace (a pop's walk that
//! copies the names out, then a write of each element by name): the same replies, the
//! same delta bytes, the same state and digest left, on a node without peers (no
//! tombstones kept) and on one with peers.

use bytes::Bytes;

use super::{End, element_value, list_end, pop_event, push_positions, walk};
use crate::command::list::ListCommand;
use crate::crdt::{Dot, HlcClock, VersionVector};
use crate::delta::codec::{self, Writer};
use crate::engine::kv::collection_writes::Part;
use crate::engine::kv::value::SetTtl;
use crate::engine::kv::{DeltaSink, KeyState, KvEngine, WriteCtx, key_hash};
use crate::routing::ShardScope;

/// Every element write's delta, encoded as the delta log encodes it.
#[derive(Default)]
struct Encoded(Vec<Vec<u8>>);

impl DeltaSink for Encoded {
    fn key_changed(&mut self, key: &[u8], state: &KeyState) {
        let mut w = Writer::default();
        codec::write_key_delta(&mut w, key, state);
        self.0.push(w.buf);
    }
    fn key_part_changed(&mut self, key: &[u8], part: &KeyState) {
        self.key_changed(key, part);
    }
    fn key_elements_changed(&mut self, key: &[u8], part: Part, elements: &[(&[u8], KeyState)]) {
        let mut w = Writer::default();
        codec::write_part_delta(&mut w, key, part, elements);
        self.0.push(w.buf);
    }
    // As the delta log writes it (the general path's pops ship a built tombstone, so
    // the comparisons below check these bytes against `write_part_delta`'s).
    fn key_element_removed(&mut self, key: &[u8], part: Part, name: &[u8], old: Dot, by: Dot) {
        let mut w = Writer::default();
        codec::write_removed_element(&mut w, key, part, name, old, by);
        self.0.push(w.buf);
    }
    fn flushed(&mut self, _: &VersionVector, _: ShardScope) {}
}

/// The general pop: what `list_pop` did for every list before the chunk-end path.
fn pop_by_names(kv: &mut KvEngine, ctx: &mut WriteCtx, key: &Bytes, end: End, count: u64) -> Option<Vec<Bytes>> {
    let list = kv.list_elements(key, ctx.now_ms).ok()??;
    let take = count.min(list.len() as u64) as usize;
    let mut names = Vec::new();
    let mut values = Vec::new();
    for (name, element) in walk(list, end == End::Right).take(take) {
        names.push(name);
        values.push(super::value_of(element));
    }
    kv.remove_list_elements(ctx, key.clone(), &names, pop_event(end));
    Some(values)
}

/// The general push: what `push_at` did for every list before the chunk-end path.
fn push_by_names(kv: &mut KvEngine, ctx: &mut WriteCtx, key: &Bytes, end: End, elements: &[Bytes]) {
    let (edge, _) = kv.list_elements(key, ctx.now_ms).ok().flatten().map_or((None, 0), |l| list_end(l, end));
    let dot = ctx.next_dot();
    let names = push_positions(edge.as_deref(), end, elements.len(), dot);
    kv.write_elements_at(ctx, dot, key.clone(), Part::List, &names, false, |i, dot, _, s| {
        s.set(dot, element_value(&elements[i]), SetTtl::Keep)
    });
}

/// The write context of step `step` on one of the two engines.
fn ctx_at<'a>(clock: &'a mut HlcClock, deltas: &'a mut Encoded, step: u64) -> WriteCtx<'a> {
    WriteCtx { clock, node: 1, now_ms: 1_000 + step, string_bytes_max: 1 << 20, deltas }
}

fn state_of(kv: &KvEngine, key: &[u8]) -> Option<KeyState> {
    let stored = kv.keys.get(key, key_hash(key))?.state();
    // The stored list keeps its digest from this first look on (a collection keeps it
    // only once asked, `elements/digest.rs`): later steps compare digests kept write
    // by write, not two fresh walks.
    if let Some(list) = stored.list_elements() {
        list.digest();
    }
    Some(stored.clone())
}

/// Pushes then pops of every size at both ends, across chunk boundaries (a chunk holds
/// 128 elements), down to an empty list, with both engines fed the same commands.
fn pops_match(keep_tombstones: bool) {
    let key = Bytes::from_static(b"q");
    let mut fast = KvEngine { keep_tombstones, ..KvEngine::default() };
    let mut general = KvEngine { keep_tombstones, ..KvEngine::default() };
    let (mut fast_sink, mut general_sink) = (Encoded::default(), Encoded::default());
    let (mut fast_clock, mut general_clock) = (HlcClock::new(), HlcClock::new());
    let value =
        |i: usize| if i.is_multiple_of(3) { Bytes::from(i.to_string()) } else { Bytes::from(format!("v{i}-{}", "x".repeat(i % 40))) };
    // Multi-element pushes, then runs of single ones (LPUSH's writes into a head chunk's
    // unused prefix, a new end chunk every 128).
    let mut pushes: Vec<(End, usize)> = vec![(End::Right, 300), (End::Left, 200), (End::Right, 1), (End::Left, 130), (End::Right, 2)];
    pushes.extend(std::iter::repeat_n((End::Left, 1), 150).chain(std::iter::repeat_n((End::Right, 1), 150)));
    let pops: [(End, u64); 10] = [
        (End::Left, 1),
        (End::Right, 1),
        (End::Left, 5),
        (End::Right, 130),
        (End::Left, 129),
        (End::Right, 0),
        (End::Left, 1),
        (End::Right, 2),
        (End::Left, 300),
        (End::Right, 10_000),
    ];
    let mut step = 0;
    for round in 0..2 {
        for &(end, n) in &pushes {
            let elements: Vec<Bytes> = (0..n).map(|i| value(i + round * 7)).collect();
            step += 1;
            {
                let mut ctx = ctx_at(&mut fast_clock, &mut fast_sink, step);
                fast.list_command(&mut ctx, ListCommand::Push { key: key.clone(), end, elements: elements.clone(), only_if_exists: false });
            }
            {
                let mut ctx = ctx_at(&mut general_clock, &mut general_sink, step);
                push_by_names(&mut general, &mut ctx, &key, end, &elements);
            }
            assert_eq!(fast_sink.0, general_sink.0, "step {step}: push delta bytes");
            assert_eq!(state_of(&fast, &key), state_of(&general, &key), "step {step}: state after a push");
        }
        for (end, count) in pops {
            step += 1;
            let fast_popped = {
                let mut ctx = ctx_at(&mut fast_clock, &mut fast_sink, step);
                fast.list_pop(&mut ctx, key.clone(), end, count).expect("a list")
            };
            let general_popped = {
                let mut ctx = ctx_at(&mut general_clock, &mut general_sink, step);
                pop_by_names(&mut general, &mut ctx, &key, end, count)
            };
            assert_eq!(fast_popped, general_popped, "step {step}: replies");
            assert_eq!(fast_sink.0, general_sink.0, "step {step}: delta bytes");
            let (fast_state, general_state) = (state_of(&fast, &key), state_of(&general, &key));
            assert_eq!(fast_state, general_state, "step {step}: state");
            if let (Some(f), Some(g)) = (&fast_state, &general_state) {
                let (f, g) = (f.list_elements().expect("a list"), g.list_elements().expect("a list"));
                assert_eq!(f.digest(), g.digest(), "step {step}: digest");
                assert_eq!(f.len(), g.len(), "step {step}: length");
                assert_eq!(f.tombstones(), g.tombstones(), "step {step}: tombstones");
            }
            assert_eq!(fast.keys.tombstone(&key).cloned(), general.keys.tombstone(&key).cloned(), "step {step}: key tombstone");
        }
    }
    assert!(!fast_sink.0.is_empty());
    assert!(state_of(&fast, &key).is_none(), "the last pop emptied the list");
}

#[test]
fn chunk_end_pops_on_a_lone_node_match_the_general_path() {
    pops_match(false);
}

#[test]
fn chunk_end_pops_keeping_tombstones_match_the_general_path() {
    pops_match(true);
}

/// A push or pop whose one lookup finds a key it must not write in place (expired, of
/// another type, a count of 0, no key) answers as Redis does, by the general way; a
/// list with a TTL not yet due is written in place and keeps its TTL.
#[test]
fn one_lookup_pushes_and_pops_refuse_what_they_must_not_write() {
    use crate::command::{ExpireCondition, SetCondition, SetReply, TtlChange};
    use crate::protocol::Frame;
    let mut kv = KvEngine::default();
    let mut sink = Encoded::default();
    let mut clock = HlcClock::new();
    let (list, string) = (Bytes::from_static(b"l"), Bytes::from_static(b"s"));
    let bulk = |s: &'static str| Frame::Bulk(Bytes::from_static(s.as_bytes()));
    let push = |kv: &mut KvEngine, ctx: &mut WriteCtx, end, values: &[&'static str]| {
        let elements = values.iter().map(|v| Bytes::from_static(v.as_bytes())).collect();
        kv.list_command(ctx, ListCommand::Push { key: list.clone(), end, elements, only_if_exists: false })
    };
    let pop = |kv: &mut KvEngine, ctx: &mut WriteCtx, key: &Bytes, count| {
        kv.list_command(ctx, ListCommand::Pop { key: key.clone(), end: End::Left, count })
    };

    let mut ctx = ctx_at(&mut clock, &mut sink, 0);
    assert_eq!(pop(&mut kv, &mut ctx, &list, None), Frame::Null, "LPOP of no key");
    assert_eq!(pop(&mut kv, &mut ctx, &list, Some(2)), Frame::NullArray, "LPOP with a count of no key");
    assert_eq!(push(&mut kv, &mut ctx, End::Right, &["a", "b", "c"]), Frame::Integer(3));
    assert_eq!(pop(&mut kv, &mut ctx, &list, Some(0)), Frame::Array(Vec::new()), "LPOP l 0");
    // A TTL not yet due: written in place, the TTL kept.
    assert_eq!(kv.expire(&mut ctx, &list, 100, false, ExpireCondition::default(), "pexpire"), Frame::Integer(1));
    let due = kv.keys.get(&list, key_hash(&list)).and_then(|e| e.state().expire_at_ms()).expect("a TTL");
    assert_eq!(push(&mut kv, &mut ctx, End::Left, &["z"]), Frame::Integer(4));
    assert_eq!(pop(&mut kv, &mut ctx, &list, None), bulk("z"));
    assert_eq!(kv.keys.get(&list, key_hash(&list)).and_then(|e| e.state().expire_at_ms()), Some(due), "the TTL stays");
    drop(ctx);

    // Past the TTL: the list is gone, a pop finds nothing and a push starts a new list.
    let mut ctx = ctx_at(&mut clock, &mut sink, 1_000);
    assert_eq!(pop(&mut kv, &mut ctx, &list, None), Frame::Null, "LPOP of an expired list");
    assert_eq!(push(&mut kv, &mut ctx, End::Left, &["x"]), Frame::Integer(1));
    assert_eq!(kv.keys.get(&list, key_hash(&list)).and_then(|e| e.state().expire_at_ms()), None, "a new list has no TTL");
    assert_eq!(kv.expire(&mut ctx, &list, 10, false, ExpireCondition::default(), "pexpire"), Frame::Integer(1));
    drop(ctx);
    let mut ctx = ctx_at(&mut clock, &mut sink, 2_000);
    assert_eq!(push(&mut kv, &mut ctx, End::Right, &["y", "w"]), Frame::Integer(2), "RPUSH onto an expired list");
    assert_eq!(pop(&mut kv, &mut ctx, &list, Some(5)), Frame::Array(vec![bulk("y"), bulk("w")]));

    // Another type: WRONGTYPE, the string untouched.
    kv.set(&mut ctx, string.clone(), Bytes::from_static(b"v"), SetCondition::Always, TtlChange::Clear, SetReply::Ok, "set");
    let elements = vec![Bytes::from_static(b"e")];
    let refused = kv.list_command(&mut ctx, ListCommand::Push { key: string.clone(), end: End::Left, elements, only_if_exists: false });
    assert!(matches!(&refused, Frame::Error(e) if e.starts_with(b"WRONGTYPE")), "{refused:?}");
    let refused = pop(&mut kv, &mut ctx, &string, None);
    assert!(matches!(&refused, Frame::Error(e) if e.starts_with(b"WRONGTYPE")), "{refused:?}");
    assert_eq!(kv.read_string(&string, ctx.now_ms).ok().flatten().map(|v| v.to_bytes()), Some(Bytes::from_static(b"v")));
}
