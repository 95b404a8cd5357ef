//! What one SET costs the shard's thread, with nothing else on: plain, recording the
//! persistence delta log, replicating (outbox and Merkle leaves), and both. The shard is
//! the node's bottleneck under a write load, so these per-write costs are what bounds
//! the ratios `docker-benchmark/` measures end to end (where parsing, the network and
//! the client dilute them). `overwrite/*` sets keys chosen uniformly at random in a
//! keyspace of `KEYS` keys, `new_key/*` keys never written (the keyspace grows); values
//! are 3 bytes (redis-benchmark's default), and the logs are drained every `DRAIN_EVERY`
//! writes, as a node's windows would at about 300k writes/s.
//!
//! Run: `cargo bench --bench shard_write`

use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use meridian::command::{KeyCommand, SetCondition, SetReply, TtlChange};
use meridian::crdt::Hlc;
use meridian::shard::{Shard, ShardConfig, ShardOp};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

// The server's allocator, so the figures match the node's.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

const KEYS: usize = 1_000_000;
const DRAIN_EVERY: usize = 16_384;

/// Key `i` as a fresh buffer, as a client's command would bring it (a table of prebuilt
/// keys would add a cache miss per write that the server never has).
fn key(i: usize) -> Bytes {
    let mut buf = *b"key:000000000000";
    let mut n = i;
    for digit in buf[4..].iter_mut().rev() {
        *digit = b'0' + (n % 10) as u8;
        n /= 10;
    }
    Bytes::copy_from_slice(&buf)
}

fn set(key: Bytes) -> ShardOp {
    ShardOp::Key(KeyCommand::Set {
        key,
        value: Bytes::from_static(b"xxx"),
        condition: SetCondition::Always,
        ttl: TtlChange::Clear,
        reply: SetReply::Ok,
        command: "set",
    })
}

fn shard(persist: bool, replicate: bool) -> Shard {
    let mut config = ShardConfig::new(0, 1);
    config.record_deltas = persist;
    config.replicate = replicate;
    let mut shard = Shard::new(config);
    for i in 0..KEYS {
        shard.apply(set(key(i)), 1_000);
        if i.is_multiple_of(DRAIN_EVERY) {
            drain(&mut shard, 1_000);
        }
    }
    drain(&mut shard, 1_000);
    shard
}

fn drain(shard: &mut Shard, now_ms: u64) {
    std::hint::black_box(shard.drain_deltas());
    std::hint::black_box(shard.apply(ShardOp::DrainOutbox { floor: Hlc::default() }, now_ms));
}

/// Runs one `write()` per iteration, draining the logs as a node would.
fn bench_writes(b: &mut criterion::Bencher, shard: &mut Shard, mut write: impl FnMut() -> ShardOp) {
    let mut writes = 0usize;
    let mut now_ms = 2_000u64;
    b.iter(|| {
        let reply = shard.apply(write(), now_ms);
        writes += 1;
        if writes.is_multiple_of(DRAIN_EVERY) {
            now_ms += 50;
            drain(shard, now_ms);
        }
        reply
    })
}

fn shard_write(c: &mut Criterion) {
    let mut group = c.benchmark_group("set");
    group.throughput(Throughput::Elements(1));
    for (name, persist, replicate) in
        [("plain", false, false), ("persistence", true, false), ("replicate", false, true), ("both", true, true)]
    {
        let mut shard = shard(persist, replicate);
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        // An existing key, uniformly at random (the old state is cold, as in a big keyspace).
        group.bench_function(format!("overwrite/{name}"), |b| bench_writes(b, &mut shard, || set(key(rng.random_range(0..KEYS)))));
        // A key never written (redis-benchmark -r 100000000): the keyspace grows.
        let mut next = KEYS;
        group.bench_function(format!("new_key/{name}"), |b| {
            bench_writes(b, &mut shard, || {
                next += 1;
                set(key(next))
            })
        });
    }
    group.finish();
}

criterion_group!(benches, shard_write);
criterion_main!(benches);
