//! The vector engine through a shard: every kind of change to an indexed hash (local
//! write, update, delete, expiry, flush, merge from a peer) shows in search answers, and
//! a filter never lets a document outside it through.

use std::sync::Arc;

use bytes::Bytes;
use rand::{Rng, SeedableRng};

use super::query::parse_search;
use super::schema::encode_args;
use super::{VectorOp, VectorReply};
use crate::command::hash::{HSetReply, HashCommand};
use crate::command::{KeyCommand, TtlChange};
use crate::delta::Delta;
use crate::shard::{Shard, ShardConfig, ShardOp, ShardReply};

const DIM: usize = 8;

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

fn blob(v: &[f32]) -> Bytes {
    Bytes::from(v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>())
}

fn definition(algorithm: &str) -> Bytes {
    let line = format!("ON HASH PREFIX 1 doc: SCHEMA v VECTOR {algorithm} 6 TYPE FLOAT32 DIM {DIM} DISTANCE_METRIC L2 t TAG n NUMERIC");
    encode_args(&line.split_whitespace().map(b).collect::<Vec<_>>())
}

fn replicating_shard(node: u16) -> Shard {
    let mut config = ShardConfig::new(0, node);
    config.replicate = true;
    Shard::new(config)
}

fn hset(shard: &mut Shard, key: &str, pairs: Vec<(Bytes, Bytes)>, now_ms: u64) {
    let op = ShardOp::Key(KeyCommand::Hash(HashCommand::Set { key: b(key), pairs, reply: HSetReply::Added }));
    assert!(matches!(shard.apply(op, now_ms), ShardReply::Frame(crate::protocol::Frame::Integer(_))));
}

fn doc(v: &[f32], tag: &str, n: i64) -> Vec<(Bytes, Bytes)> {
    vec![(b("v"), blob(v)), (b("t"), b(tag)), (b("n"), b(&n.to_string()))]
}

/// Create the index and let its build run to the end (it runs in steps on ticks).
fn sync(shard: &mut Shard, raw: &Bytes) {
    assert_eq!(shard.apply(ShardOp::Vector(VectorOp::Sync { name: b("idx"), raw: raw.clone() }), 1), ShardReply::Vector(VectorReply::Done));
    for _ in 0..10_000 {
        if !shard.vector.is_building() {
            return;
        }
        shard.tick(1);
    }
    panic!("the index build never finished");
}

/// The keys (and distances) a query answers on one shard.
fn search(shard: &mut Shard, raw: &Bytes, query: &str, q: &[f32], now_ms: u64) -> Vec<(Bytes, f32)> {
    let args = vec![b(query), b("PARAMS"), b("2"), b("q"), blob(q), b("LIMIT"), b("0"), b("1000"), b("DIALECT"), b("2")];
    let query = Arc::new(parse_search(&args).expect("query parses"));
    match shard.apply(ShardOp::Vector(VectorOp::Search { name: b("idx"), raw: raw.clone(), query }), now_ms) {
        ShardReply::Vector(VectorReply::Hits(crate::engine::vector::Found { hits, .. })) => {
            hits.into_iter().map(|h| (h.key, h.score.unwrap_or(-1.0))).collect()
        }
        other => panic!("search failed: {other:?}"),
    }
}

fn random_vector(rng: &mut impl Rng) -> Vec<f32> {
    (0..DIM).map(|_| rng.random_range(-1.0f32..1.0)).collect()
}

#[test]
fn flat_knn_with_a_filter_is_exactly_the_brute_force_answer_over_matching_documents() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    let mut shard = replicating_shard(1);
    let raw = definition("FLAT");
    let mut docs = Vec::new();
    for i in 0..300 {
        let v = random_vector(&mut rng);
        let tag = ["red", "green", "blue"][i % 3];
        hset(&mut shard, &format!("doc:{i}"), doc(&v, tag, i as i64), 10);
        docs.push((format!("doc:{i}"), v, tag, i as i64));
    }
    // Half before the index exists (built by scan), half after (followed per write).
    sync(&mut shard, &raw);
    for i in 300..600 {
        let v = random_vector(&mut rng);
        let tag = ["red", "green", "blue"][i % 3];
        hset(&mut shard, &format!("doc:{i}"), doc(&v, tag, i as i64), 10);
        docs.push((format!("doc:{i}"), v, tag, i as i64));
    }
    for _ in 0..20 {
        let q = random_vector(&mut rng);
        let found = search(&mut shard, &raw, "(@t:{red|blue} -@n:[100 199])=>[KNN 10 @v $q]", &q, 20);
        let mut expected: Vec<(String, f32)> = docs
            .iter()
            .filter(|(_, _, tag, n)| (*tag == "red" || *tag == "blue") && !(100..=199).contains(n))
            .map(|(k, v, _, _)| (k.clone(), super::distance::l2_squared(v, &q)))
            .collect();
        expected.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
        expected.truncate(10);
        let found_keys: Vec<String> = found.iter().map(|(k, _)| String::from_utf8_lossy(k).into_owned()).collect();
        let expected_keys: Vec<String> = expected.into_iter().map(|(k, _)| k).collect();
        assert_eq!(found_keys, expected_keys);
    }
}

#[test]
fn updated_deleted_and_expired_documents_leave_the_index_at_once() {
    for algorithm in ["FLAT", "HNSW"] {
        let mut shard = replicating_shard(1);
        let raw = definition(algorithm);
        sync(&mut shard, &raw);
        let near = [0.0f32; DIM];
        let mut far = [5.0f32; DIM];
        hset(&mut shard, "doc:a", doc(&near, "x", 1), 10);
        hset(&mut shard, "doc:b", doc(&far, "x", 2), 10);
        assert_eq!(search(&mut shard, &raw, "*=>[KNN 1 @v $q]", &near, 11)[0].0, b("doc:a"));
        // Update: doc:a moves far away and doc:b comes close.
        far[0] = 9.0;
        hset(&mut shard, "doc:a", vec![(b("v"), blob(&far))], 12);
        hset(&mut shard, "doc:b", vec![(b("v"), blob(&near))], 12);
        assert_eq!(search(&mut shard, &raw, "*=>[KNN 1 @v $q]", &near, 13)[0].0, b("doc:b"));
        // A tag change moves a document out of a filter.
        hset(&mut shard, "doc:b", vec![(b("t"), b("y"))], 14);
        assert!(search(&mut shard, &raw, "@t:{x}=>[KNN 5 @v $q]", &near, 15).iter().all(|(k, _)| k != "doc:b"));
        // Delete.
        assert_eq!(shard.apply(ShardOp::Del(vec![b("doc:b")]), 16), ShardReply::Count(1));
        assert!(search(&mut shard, &raw, "*=>[KNN 5 @v $q]", &near, 17).iter().all(|(k, _)| k != "doc:b"), "{algorithm}");
        // Expiry: gone from answers as soon as the TTL passes, before any active expiry.
        let expire = KeyCommand::Expire { key: b("doc:a"), ms: 5, absolute: false, condition: Default::default(), command: "pexpire" };
        shard.apply(ShardOp::Key(expire), 18);
        assert_eq!(search(&mut shard, &raw, "*=>[KNN 5 @v $q]", &near, 19).len(), 1);
        assert!(search(&mut shard, &raw, "*=>[KNN 5 @v $q]", &near, 100).is_empty(), "{algorithm}: an expired document was returned");
        // A field that no longer parses takes the document out (and counts a failure).
        hset(&mut shard, "doc:c", doc(&near, "x", 3), 101);
        hset(&mut shard, "doc:c", vec![(b("n"), b("not a number"))], 102);
        assert!(search(&mut shard, &raw, "*=>[KNN 5 @v $q]", &near, 103).is_empty());
        let _ = TtlChange::Clear;
    }
}

#[test]
fn documents_merged_from_a_peer_are_indexed_and_a_merged_delete_removes_them() {
    let raw = definition("HNSW");
    let mut writer = replicating_shard(1);
    let mut reader = replicating_shard(2);
    sync(&mut reader, &raw);
    let v = [1.0f32; DIM];
    hset(&mut writer, "doc:1", doc(&v, "x", 1), 10);
    let ship = |from: &Shard, key: &str| {
        let key = b(key);
        let hash = crate::engine::kv::key_hash(&key);
        let state =
            from.kv.keys.get(&key, hash).map(|e| e.state().clone()).or_else(|| from.kv.keys.tombstone(&key).cloned()).expect("a state");
        ShardOp::MergeRemote(vec![Delta::Key { key, state }])
    };
    reader.apply(ship(&writer, "doc:1"), 11);
    assert_eq!(search(&mut reader, &raw, "*=>[KNN 3 @v $q]", &v, 12), vec![(b("doc:1"), 0.0)]);
    writer.apply(ShardOp::Del(vec![b("doc:1")]), 13);
    reader.apply(ship(&writer, "doc:1"), 14);
    assert!(search(&mut reader, &raw, "*=>[KNN 3 @v $q]", &v, 15).is_empty());
}

#[test]
fn a_flush_empties_the_index_and_a_filter_on_an_unknown_field_matches_nothing() {
    let raw = definition("FLAT");
    let mut shard = replicating_shard(1);
    sync(&mut shard, &raw);
    hset(&mut shard, "doc:1", doc(&[0.5; DIM], "x", 1), 10);
    shard.apply(ShardOp::Keyspace(crate::command::KeyspaceCommand::Flush), 11);
    assert!(search(&mut shard, &raw, "*=>[KNN 3 @v $q]", &[0.5; DIM], 12).is_empty());
    hset(&mut shard, "doc:2", doc(&[0.5; DIM], "x", 1), 13);
    assert!(search(&mut shard, &raw, "@nope:{x}=>[KNN 3 @v $q]", &[0.5; DIM], 14).is_empty());
    let args = vec![b("@t:[1 2]"), b("DIALECT"), b("2")];
    let query = Arc::new(parse_search(&args).expect("parses"));
    let reply = shard.apply(ShardOp::Vector(VectorOp::Search { name: b("idx"), raw, query }), 15);
    assert!(matches!(reply, ShardReply::Vector(VectorReply::Error(e)) if e.contains("not a NUMERIC")));
}

#[test]
fn scores_print_like_redisearch() {
    assert_eq!(super::format_score(0.0), "0");
    assert_eq!(super::format_score(0.5), "0.5");
    assert_eq!(super::format_score(1.0e-7), "1.00000001169e-07");
    assert_eq!(super::format_score(123.25), "123.25");
}

/// The epoch the node's definition cache trusts moves with every kind of change to a
/// definition key (local write, delete, merge from a peer, expiry, flush), and only
/// with those: a write to a document leaves cached definitions good.
#[test]
fn a_shard_announces_every_change_to_a_definition_key_and_nothing_else() {
    use std::sync::atomic::{AtomicU64, Ordering};
    let epoch = Arc::new(AtomicU64::new(0));
    let mut shard = replicating_shard(1);
    shard.announce_definitions(epoch.clone());
    let now = || epoch.load(Ordering::Acquire);
    let def_key = super::def_key(b"idx");
    let def_key = std::str::from_utf8(&def_key).expect("utf8").to_string();
    hset(&mut shard, &def_key, vec![(b("schema"), definition("FLAT"))], 10);
    assert_eq!(now(), 1, "FT.CREATE's write");
    hset(&mut shard, "doc:1", doc(&[0.5; DIM], "x", 1), 11);
    hset(&mut shard, "other", vec![(b("f"), b("v"))], 11);
    assert_eq!(now(), 1, "documents are not definitions");
    hset(&mut shard, &def_key, vec![(b("schema"), definition("HNSW"))], 12);
    assert_eq!(now(), 2, "FT.ALTER's write");
    assert_eq!(shard.apply(ShardOp::Del(vec![b(&def_key)]), 13), ShardReply::Count(1));
    assert_eq!(now(), 3, "FT.DROPINDEX's delete");
    // A definition created on a peer arrives as a merged key.
    let mut peer = replicating_shard(2);
    hset(&mut peer, &def_key, vec![(b("schema"), definition("FLAT"))], 20);
    let state = peer.kv.keys.get(def_key.as_bytes(), crate::engine::kv::key_hash(def_key.as_bytes())).expect("stored").state().clone();
    shard.apply(ShardOp::MergeRemote(vec![Delta::Key { key: b(&def_key), state: state.clone() }]), 21);
    assert_eq!(now(), 4, "a peer's definition");
    shard.merge_delta(Delta::Key { key: b(&def_key), state });
    assert!(now() >= 4, "a recovered definition never moves the epoch back");
    // An expiry (active, on a tick) and a flush.
    let before = now();
    let expire = KeyCommand::Expire { key: b(&def_key), ms: 5, absolute: false, condition: Default::default(), command: "pexpire" };
    shard.apply(ShardOp::Key(expire), 30);
    assert_eq!(now(), before + 1, "a TTL set on the definition key");
    shard.tick(100);
    assert_eq!(now(), before + 2, "the definition key expired");
    hset(&mut shard, &def_key, vec![(b("schema"), definition("FLAT"))], 101);
    shard.apply(ShardOp::Keyspace(crate::command::KeyspaceCommand::Flush), 102);
    assert_eq!(now(), before + 4, "a write and a flush");
}
