//! The shard: a deterministic state machine that owns one partition of the keyspace.
//!
//! `Shard::apply(op, now_ms)` is the only way data changes: it runs one operation to
//! completion and returns its reply; writes also append to the shard's delta log.
//! No I/O, no wall clock, no global randomness: time comes in as `now_ms` and the RNG
//! is seeded by the driver. The tokio actor in `shell/` and the simulator in `dst/`
//! both drive this same code.

use bytes::Bytes;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::command::{KeyCommand, KeyspaceCommand, ObjectField, SetCondition, SetOutput, SetReply, TtlChange};
use crate::crdt::Hlc;
use crate::crdt::{HlcClock, NodeId};
use crate::delta::outbox::Outbox;
use crate::delta::{Delta, DeltaLog, EncodedDeltas};
use crate::engine::kv::{DeltaSink, KvEngine, WriteCtx};
use crate::protocol::Frame;
use crate::routing;

mod absence;
mod exchange;
mod notify;
mod ops;
mod replay;
mod sinks;

pub use ops::{ShardOp, ShardReply, ShardStats};
pub use replay::{merge_recovered, split_by_shard};
use sinks::ShardSinks;

/// Keys expired per shard per tick at most, so one tick's work is bounded.
pub const EXPIRE_KEYS_PER_TICK_MAX: usize = 1_000;

/// The error a write gets when deltas can't be shipped fast enough.
pub const DELTA_LOG_FULL: &str =
    "MISCONF Meridian can't replicate or persist writes fast enough (delta log full); write refused, retry later";

#[derive(Clone, Debug)]
pub struct ShardConfig {
    pub shard_id: usize,
    pub node_id: NodeId,
    /// `proto-max-bulk-len`: the longest string a write may build.
    pub string_bytes_max: usize,
    /// Whether a consumer (replication, persistence) reads the delta log.
    pub record_deltas: bool,
    pub delta_log_entries_max: usize,
    pub delta_log_bytes_max: usize,
    pub rng_seed: u64,
    /// Replicate to peers: keep an outbox, tombstones and Merkle leaves.
    pub replicate: bool,
    pub outbox_bytes_max: usize,
    /// Past this many bytes the outbox asks to be drained before the batch interval
    /// ends (`Shard::take_outbox_ready`).
    pub outbox_eager_bytes: usize,
    /// Remote stamps further ahead of local time than this are counted (DESIGN §4).
    pub max_clock_skew_ms: u64,
    /// How many shards the node has (a FLUSHALL's scope is this shard among them).
    pub shard_count: usize,
}

impl ShardConfig {
    pub fn new(shard_id: usize, node_id: NodeId) -> ShardConfig {
        ShardConfig {
            shard_id,
            node_id,
            string_bytes_max: 512 * 1024 * 1024,
            record_deltas: false,
            delta_log_entries_max: 1 << 20,
            delta_log_bytes_max: 256 << 20,
            rng_seed: shard_id as u64,
            replicate: false,
            outbox_bytes_max: 64 << 20,
            outbox_eager_bytes: 64 << 10,
            max_clock_skew_ms: 2_000,
            shard_count: 1,
        }
    }
}

pub struct Shard {
    config: ShardConfig,
    clock: HlcClock,
    pub kv: KvEngine,
    /// FT.* indexes over this shard's hashes; they follow every change to `kv`.
    pub vector: crate::engine::vector::VectorEngine,
    rng: ChaCha8Rng,
    pub deltas: DeltaLog,
    /// Local writes waiting for the next replication batch (`None`: no peers).
    outbox: Option<Outbox>,
    ops_applied: u64,
    remote_deltas_merged: u64,
    absence_removals: u64,
    /// A peer's anti-entropy states removed here, by the absence rule, something a
    /// reader saw (`absence::AbsenceRemovals::of_live`): the next outbox drain asks
    /// every link for a round, so that a copy this node passed on before it learned
    /// is removed where it went.
    stale_copies_possible: bool,
    /// Keys shipped again because an anti-entropy round brought back a write of this
    /// node that a crash had lost here (`exchange.rs ship_own_writes_back`).
    own_writes_shipped_back: u64,
    /// The newest stamp of this node's writes among the states replayed from its store
    /// (`merge_delta`): a write of this node with a later stamp that a peer holds is
    /// one a crash may have lost here. `None`: nothing replayed.
    replayed_own_newest: Option<Hlc>,
    /// Until when (local milliseconds) rounds look for such writes
    /// (`exchange.rs after_replay`); set by the first merge from a peer.
    lost_writes_until_ms: Option<u64>,
    /// A checkpoint is reading this shard (its first chunk was taken, its last not
    /// yet): tombstone collection waits (see `ShardOp::ExportChunk`).
    checkpoint_scan_open: bool,
    /// Where this shard announces that an FT.* definition key changed: bumped once per
    /// operation that changed one, before its reply leaves (`None`: nobody caches
    /// definitions, as in the simulator). The node's definition cache checks it.
    definitions_epoch: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
    /// The keyspace's count of definition changes when last announced.
    definitions_announced: u64,
}

impl Shard {
    pub fn new(config: ShardConfig) -> Shard {
        let mut kv = KvEngine::new();
        kv.scope = routing::ShardScope { index: config.shard_id as u16, count: config.shard_count.max(1) as u16 };
        debug_assert!(config.shard_id < config.shard_count.max(1), "shard {} of {}", config.shard_id, config.shard_count);
        kv.record_expiries = config.record_deltas;
        if config.replicate {
            kv.keep_tombstones = true;
            kv.keys.enable_merkle();
        }
        kv.keys.watch_prefix(crate::engine::vector::DEF_KEY_PREFIX);
        Shard {
            clock: HlcClock::new(),
            kv,
            vector: Default::default(),
            rng: ChaCha8Rng::seed_from_u64(config.rng_seed),
            deltas: DeltaLog::new(config.record_deltas, config.delta_log_entries_max, config.delta_log_bytes_max),
            outbox: config.replicate.then(|| Outbox::new(config.node_id, config.outbox_bytes_max, config.outbox_eager_bytes)),
            ops_applied: 0,
            remote_deltas_merged: 0,
            absence_removals: 0,
            stale_copies_possible: false,
            own_writes_shipped_back: 0,
            replayed_own_newest: None,
            lost_writes_until_ms: None,
            checkpoint_scan_open: false,
            definitions_epoch: None,
            definitions_announced: 0,
            config,
        }
    }

    /// Announce every change to an FT.* definition key on `epoch` from now on.
    pub fn announce_definitions(&mut self, epoch: std::sync::Arc<std::sync::atomic::AtomicU64>) {
        self.definitions_announced = self.kv.keys.watched_changes();
        self.definitions_epoch = Some(epoch);
    }

    pub fn id(&self) -> usize {
        self.config.shard_id
    }

    /// `proto-max-bulk-len` may change at run time (CONFIG SET).
    pub fn set_string_bytes_max(&mut self, bytes: usize) {
        self.config.string_bytes_max = bytes;
    }

    /// The encoding thresholds OBJECT ENCODING reports by may change at run time.
    pub fn set_encoding_limits(&mut self, limits: crate::engine::kv::EncodingLimits) {
        self.kv.encoding = limits;
    }

    pub fn clock(&self) -> &HlcClock {
        &self.clock
    }

    fn is_write(op: &ShardOp) -> bool {
        match op {
            ShardOp::Key(cmd) => cmd.is_write(),
            ShardOp::MSet(_) | ShardOp::MSetNx(_) | ShardOp::Del(_) | ShardOp::Restore { .. } => true,
            ShardOp::Rename { .. } | ShardOp::Copy { .. } => true,
            ShardOp::SetMove { .. } | ShardOp::StoreSet { .. } => true,
            ShardOp::BitOp { .. } | ShardOp::StoreBitOp { .. } => true,
            ShardOp::SetAlgebra { output, .. } => matches!(output, SetOutput::Store(_)),
            ShardOp::ZsetMulti(cmd) => cmd.is_write(),
            ShardOp::StoreZset { .. } => true,
            ShardOp::ListMulti(_) => true,
            ShardOp::Keyspace(KeyspaceCommand::Flush) => true,
            ShardOp::Quiet(op) | ShardOp::Split(op) => Self::is_write(op),
            _ => false,
        }
    }

    /// Start loading what pipelined commands will read first (`reads`; see
    /// [`crate::engine::kv::Keyspace::prefetch`]): a hint that changes nothing.
    pub fn prefetch(&self, reads: &[crate::engine::kv::keyspace::Prefetch<'_>]) {
        self.kv.keys.prefetch(reads);
    }

    /// Apply one operation at wall-clock time `now_ms`.
    pub fn apply(&mut self, op: ShardOp, now_ms: u64) -> ShardReply {
        if let ShardOp::Transaction { watched, ops } = op {
            return self.apply_transaction(watched, ops, now_ms);
        }
        let reply = self.apply_op(op, now_ms);
        self.record_expiries();
        self.follow_indexes();
        reply
    }

    /// Hand the keys the last step changed to the FT.* indexes (every kind of change
    /// goes through the keyspace: local writes, merges, expiries, flushes).
    /// Also the one place that announces definition changes: every path that changes
    /// keys (apply, merge_delta, tick) ends here, before its reply leaves.
    fn follow_indexes(&mut self) {
        if self.vector.is_tracking() {
            self.vector.follow(&mut self.kv);
        }
        let changes = self.kv.keys.watched_changes();
        if changes != self.definitions_announced {
            self.definitions_announced = changes;
            if let Some(epoch) = &self.definitions_epoch {
                // Release: whoever sees the new epoch and then reads the definition
                // reads it as this shard left it (the reply's channel orders it too).
                epoch.fetch_add(1, std::sync::atomic::Ordering::Release);
            }
        }
    }

    /// MULTI/EXEC on one shard: nothing runs between the watch check and the last op,
    /// and every delta the ops make is in the outbox before the batcher can drain it.
    fn apply_transaction(&mut self, watched: Vec<(Bytes, u64)>, ops: Vec<ShardOp>, now_ms: u64) -> ShardReply {
        if watched.iter().any(|(key, token)| self.kv.watch_token(key, now_ms) != *token) {
            self.record_expiries();
            return ShardReply::Transaction(None);
        }
        let replies = ops
            .into_iter()
            .map(|op| {
                debug_assert!(!matches!(op, ShardOp::Transaction { .. }), "transactions do not nest");
                self.apply(op, now_ms)
            })
            .collect();
        ShardReply::Transaction(Some(replies))
    }

    /// Hand the tombstones of keys that expired to the delta log (when it records) and
    /// to the peers (`KvEngine::expired` says why they need them, as Redis's replicas
    /// get a DEL for every expiry).
    fn record_expiries(&mut self) {
        if self.kv.expired.is_empty() {
            return;
        }
        let persisted = !crate::bugs::active(crate::bugs::Bug::ExpiryNotPersisted);
        for (key, tombstone) in std::mem::take(&mut self.kv.expired) {
            if persisted {
                ShardSinks { log: &mut self.deltas, outbox: self.outbox.as_mut() }.key_changed(&key, &tombstone);
            } else if let Some(outbox) = self.outbox.as_mut() {
                outbox.key_changed(&key, &tombstone);
            }
        }
    }

    fn apply_op(&mut self, op: ShardOp, now_ms: u64) -> ShardReply {
        // The one test keyspace notifications cost a command when they are off.
        if self.kv.notify.wants(&[crate::notify::Class::KeyMiss]) {
            self.raise_key_misses(&op, now_ms);
        }
        // Tested before matching, so that the common op is not moved for them.
        if matches!(op, ShardOp::Quiet(_) | ShardOp::Notify(_) | ShardOp::Split(_)) {
            return self.apply_notification_op(op, now_ms);
        }
        self.ops_applied += 1;
        if Self::is_write(&op) && !self.deltas.has_room() {
            return ShardReply::Frame(Frame::static_error(DELTA_LOG_FULL));
        }
        let Shard { config, clock, kv, rng, deltas, outbox, .. } = self;
        let mut sinks = ShardSinks { log: deltas, outbox: outbox.as_mut() };
        let mut ctx = WriteCtx { clock, node: config.node_id, now_ms, string_bytes_max: config.string_bytes_max, deltas: &mut sinks };
        let frame = match op {
            ShardOp::Key(cmd) => apply_key(kv, &mut ctx, cmd, &mut || rng.next_u64()),
            ShardOp::MGet(keys) => {
                Frame::Array(keys.iter().map(|k| kv.read_value(k, now_ms).map_or(Frame::Null, |v| Frame::Bulk(v.into_bytes()))).collect())
            }
            ShardOp::MSet(pairs) => {
                for (key, value) in pairs {
                    kv.set(&mut ctx, key, value, SetCondition::Always, TtlChange::Clear, SetReply::Ok, "mset");
                }
                Frame::ok()
            }
            ShardOp::MSetNx(pairs) => {
                if pairs.iter().any(|(k, _)| kv.live(k, crate::engine::kv::key_hash(k), now_ms).is_some()) {
                    Frame::Integer(0)
                } else {
                    for (key, value) in pairs {
                        kv.set(&mut ctx, key, value, SetCondition::Always, TtlChange::Clear, SetReply::Ok, "mset");
                    }
                    Frame::Integer(1)
                }
            }
            ShardOp::Del(keys) => return ShardReply::Count(kv.del(&mut ctx, &keys)),
            ShardOp::CountExisting(keys) => return ShardReply::Count(kv.count_existing(&keys, now_ms)),
            ShardOp::Snapshot(key) => return ShardReply::Snapshot(kv.snapshot(&key, now_ms)),
            ShardOp::Restore { key, snapshot, replace } => return ShardReply::Restored(kv.restore(&mut ctx, key, snapshot, replace)),
            ShardOp::Rename { src, dst, nx } => {
                let Some(mut snapshot) = kv.snapshot(&src, now_ms) else {
                    return ShardReply::Frame(KvEngine::no_such_key());
                };
                if crate::bugs::active(crate::bugs::Bug::RenameDropsTtl) {
                    snapshot.expire_at_ms = None;
                }
                if src == dst {
                    return ShardReply::Frame(if nx { Frame::Integer(0) } else { Frame::ok() });
                }
                let events = notify::renamed_if_wanted(&kv.notify, &src, &dst);
                if !kv.restore(&mut ctx, dst, snapshot, !nx) {
                    return ShardReply::Frame(Frame::Integer(0));
                }
                let was_quiet = kv.notify.set_quiet(true);
                kv.del(&mut ctx, std::slice::from_ref(&src));
                kv.notify.set_quiet(was_quiet);
                kv.notify.raise_all(events);
                if nx { Frame::Integer(1) } else { Frame::ok() }
            }
            ShardOp::Copy { src, dst, replace } => {
                if src == dst {
                    return ShardReply::Frame(Frame::static_error("ERR source and destination objects are the same"));
                }
                match kv.snapshot(&src, now_ms) {
                    None => Frame::Integer(0),
                    Some(snapshot) => {
                        let events = notify::copied_if_wanted(&kv.notify, &dst);
                        let copied = kv.restore(&mut ctx, dst, snapshot, replace);
                        if copied {
                            kv.notify.raise_all(events);
                        }
                        Frame::Integer(copied as i64)
                    }
                }
            }
            ShardOp::SetMove { src, dst, member } => kv.smove(&mut ctx, src, dst, member),
            ShardOp::SetAlgebra { op, keys, output } => kv.set_algebra(&mut ctx, op, &keys, output),
            ShardOp::SetMemberLists(keys) => {
                return match kv.set_member_lists(&keys, now_ms) {
                    Ok(lists) => ShardReply::MemberLists(lists),
                    Err(error) => ShardReply::Frame(error),
                };
            }
            ShardOp::BitOp { op, dst, keys } => kv.bitop(&mut ctx, op, dst, &keys),
            ShardOp::StringValues(keys) => {
                return match kv.string_values(&keys, now_ms) {
                    Ok(values) => ShardReply::Values(values),
                    Err(error) => ShardReply::Frame(error),
                };
            }
            ShardOp::StoreBitOp { key, value } => kv.store_bitop(&mut ctx, key, value),
            ShardOp::StoreSet { key, members } => return ShardReply::Count(kv.store_set(&mut ctx, key, members)),
            ShardOp::ZsetMulti(cmd) => kv.zset_multi(&mut ctx, cmd),
            ShardOp::ScoredLists(keys) => {
                return match kv.scored_lists(&keys, now_ms) {
                    Ok(lists) => ShardReply::ScoredLists(lists),
                    Err(error) => ShardReply::Frame(error),
                };
            }
            ShardOp::ZsetRange { key, query } => {
                return match kv.zset_range_list(&key, &query, now_ms) {
                    Ok(list) => ShardReply::ScoredLists(vec![Some(list)]),
                    Err(error) => ShardReply::Frame(error),
                };
            }
            ShardOp::GeoMatches { search, distances } => {
                return match kv.geo_matches(&search, distances, now_ms) {
                    Ok(list) => ShardReply::ScoredLists(vec![Some(list)]),
                    Err(error) => ShardReply::Frame(error),
                };
            }
            ShardOp::StoreZset { key, members } => return ShardReply::Count(kv.store_zset(&mut ctx, key, members)),
            ShardOp::ListMulti(cmd) => kv.list_multi(&mut ctx, cmd),
            ShardOp::Keyspace(cmd) => match cmd {
                KeyspaceCommand::DbSize => return ShardReply::Count(kv.keys.len() as i64),
                KeyspaceCommand::Flush => {
                    kv.flush(&mut ctx);
                    Frame::ok()
                }
                KeyspaceCommand::Keys(pattern) => return ShardReply::Keys(kv.matching_keys(&pattern, now_ms)),
                KeyspaceCommand::GraphList => return ShardReply::Keys(crate::engine::graph::graph_keys(kv, now_ms)),
                KeyspaceCommand::Scan { cursor, pattern, count, type_name } => {
                    let (keys, next) = kv.scan(cursor, count, pattern.as_deref(), type_name.as_deref(), now_ms);
                    return ShardReply::ScanPage { keys, next };
                }
                KeyspaceCommand::RandomKey => return ShardReply::RandomKey(kv.random_key(now_ms, || rng.next_u64())),
            },
            ShardOp::Stats => return ShardReply::Stats(Box::new(self.stats())),
            ShardOp::ExportChunk { cursor, count } => return self.export_chunk(cursor, count),
            ShardOp::DeltaMark => return ShardReply::Count(self.deltas.recorded_total() as i64),
            ShardOp::MergeRemote(deltas) => return self.merge_remote(deltas, now_ms),
            ShardOp::MergeLeaves { leaves, deltas } => return self.merge_leaves(leaves, deltas, now_ms),
            ShardOp::ForgetStable { stable, spared } => return self.forget_stable(&stable, &spared),
            ShardOp::DrainOutbox { floor } => return self.drain_outbox(floor, now_ms),
            ShardOp::WatchTokens(keys) => return ShardReply::Tokens(keys.iter().map(|k| kv.watch_token(k, now_ms)).collect()),
            ShardOp::Transaction { .. } => unreachable!("a transaction is applied by Shard::apply"),
            ShardOp::Quiet(_) | ShardOp::Notify(_) | ShardOp::Split(_) => unreachable!("applied above"),
            ShardOp::MerkleLeaves => return ShardReply::Merkle(self.kv.keys.merkle().cloned().unwrap_or_default()),
            ShardOp::ExportLeaves(leaves) => return self.export_leaves(leaves),
            ShardOp::ResetStats => {
                self.reset_stats();
                Frame::ok()
            }
            ShardOp::Vector(op) => {
                // What changed before this op is indexed first, so a search sees it.
                self.follow_indexes();
                return ShardReply::Vector(self.vector.apply(op, &mut self.kv, now_ms));
            }
        };
        ShardReply::Frame(frame)
    }

    /// The newest stamp this shard issued or witnessed.
    pub fn clock_last(&self) -> Hlc {
        self.clock.last()
    }

    /// Move this shard's clock past `hlc` (a restarted node's stamp reservation).
    pub fn witness_clock(&mut self, hlc: Hlc) {
        self.clock.witness(hlc);
    }

    /// Apply a delta recovered from storage or received from a peer. It is not put in
    /// the outbox: it is already where it came from.
    pub fn merge_delta(&mut self, delta: Delta) {
        self.clock.witness(delta.max_hlc());
        if let Delta::Key { state, .. } = &delta {
            let own = state.newest_stamp_of(self.config.node_id);
            self.replayed_own_newest = Some(self.replayed_own_newest.unwrap_or(Hlc::ZERO).max(own));
        }
        self.merge_into_kv(delta);
        self.follow_indexes();
    }

    /// The merge itself; the caller has moved the clock past the delta's stamps.
    fn merge_into_kv(&mut self, delta: Delta) {
        match delta {
            Delta::Key { key, state } => self.kv.merge_key(key, state),
            Delta::Flush { seen, scope } => self.kv.merge_flush(&seen, scope),
            Delta::Forget { below, spared, elements, scope } => self.kv.merge_forget(&below, &spared, elements, scope),
        }
    }

    /// True once per batch window, when the outbox has filled to its eager size: the
    /// replicator should drain it now (`delta::outbox`). Cheap: asked after
    /// every command.
    pub fn take_outbox_ready(&mut self) -> bool {
        self.outbox.as_mut().is_some_and(Outbox::take_ready)
    }

    /// Take every recorded delta for the persistence streamer.
    pub fn drain_deltas(&mut self) -> EncodedDeltas {
        self.deltas.drain()
    }

    /// Periodic work: active expiry, bounded per call. Returns keys expired.
    pub fn tick(&mut self, now_ms: u64) -> usize {
        let expired = self.kv.expire_due(now_ms, EXPIRE_KEYS_PER_TICK_MAX);
        self.record_expiries();
        self.follow_indexes();
        if self.vector.is_building() {
            self.vector.advance_builds(&self.kv);
        }
        expired
    }

    /// Whether expired keys are still waiting (the driver may tick again sooner).
    pub fn has_due_expiry(&self, now_ms: u64) -> bool {
        self.kv.keys.has_due_expiry(now_ms.saturating_sub(1))
    }

    /// Whether the driver should tick again at once: expired keys wait, or an index
    /// build has steps left.
    pub fn has_due_work(&self, now_ms: u64) -> bool {
        self.has_due_expiry(now_ms) || self.vector.is_building()
    }

    pub fn stats(&mut self) -> ShardStats {
        ShardStats {
            keys: self.kv.keys.len(),
            expiring_keys: self.kv.keys.expiring(),
            expiry_sum_ms: self.kv.keys.expiry_sum_ms(),
            expired_keys: self.kv.stats.expired_keys,
            keyspace_hits: self.kv.stats.keyspace_hits,
            keyspace_misses: self.kv.stats.keyspace_misses,
            deltas_produced: self.deltas.produced,
            changes: self.deltas.changes + self.remote_deltas_merged,
            delta_log_len: self.deltas.len(),
            delta_log_bytes: self.deltas.bytes(),
            ops_applied: self.ops_applied,
            tombstones: self.kv.keys.tombstones_len(),
            tombstones_dropped: self.kv.tombstones_dropped,
            clock_skew_events: self.clock.skew_events,
            outbox_overflows: self.outbox.as_ref().map_or(0, |o| o.overflows),
            remote_deltas_merged: self.remote_deltas_merged,
            absence_removals: self.absence_removals,
            own_writes_shipped_back: self.own_writes_shipped_back,
            keyspace_digest: self.kv.keys.merkle().map_or(0, |m| m.leaves().iter().fold(0, |acc, l| acc ^ l)),
        }
    }

    pub fn reset_stats(&mut self) {
        self.kv.stats = Default::default();
    }
}

fn apply_key(kv: &mut KvEngine, ctx: &mut WriteCtx, cmd: KeyCommand, picks: &mut dyn FnMut() -> u64) -> Frame {
    let now_ms = ctx.now_ms;
    match cmd {
        KeyCommand::Get(key) => kv.get(&key, now_ms),
        KeyCommand::Set { key, value, condition, ttl, reply, command } => kv.set(ctx, key, value, condition, ttl, reply, command),
        KeyCommand::GetDel(key) => kv.getdel(ctx, &key),
        KeyCommand::GetEx { key, ttl } => kv.getex(ctx, &key, ttl),
        KeyCommand::Append { key, value } => kv.append(ctx, key, &value),
        KeyCommand::StrLen(key) => kv.strlen(&key, now_ms),
        KeyCommand::GetRange { key, start, end } => kv.getrange(&key, start, end, now_ms),
        KeyCommand::SetRange { key, offset, value } => kv.setrange(ctx, key, offset, &value),
        KeyCommand::IncrBy { key, by } => kv.incr_by(ctx, key, by),
        KeyCommand::IncrByFloat { key, by } => kv.incr_by_float(ctx, key, by),
        KeyCommand::Expire { key, ms, absolute, condition, command } => kv.expire(ctx, &key, ms, absolute, condition, command),
        KeyCommand::Ttl { key, unit } => kv.ttl(&key, unit, now_ms),
        KeyCommand::ExpireTime { key, unit } => kv.expire_time(&key, unit, now_ms),
        KeyCommand::Persist(key) => kv.persist(ctx, &key),
        KeyCommand::Type(key) => kv.type_of(&key, now_ms),
        KeyCommand::Hash(cmd) => kv.hash_command(ctx, cmd, picks),
        KeyCommand::Graph(cmd) => crate::engine::graph::command(kv, ctx, cmd),
        KeyCommand::Stream(cmd) => crate::engine::stream::command(kv, ctx, *cmd),
        KeyCommand::SetFamily(cmd) => kv.set_command(ctx, cmd, picks),
        KeyCommand::Zset(cmd) => kv.zset_command(ctx, cmd, picks),
        KeyCommand::List(cmd) => kv.list_command(ctx, cmd),
        KeyCommand::MemoryUsage(key) => kv.memory_usage(&key, now_ms),
        KeyCommand::Object { key, field: ObjectField::Encoding } => kv.object_encoding(&key, now_ms),
        KeyCommand::Object { key, field: ObjectField::Freq } => kv.object_freq(&key, now_ms),
        KeyCommand::Object { key, field: ObjectField::Refcount } => kv.object_refcount(&key, now_ms),
        KeyCommand::Dump(key) => kv.dump(&key, now_ms, &STREAM_CODEC),
        KeyCommand::Restore(cmd) => kv.restore_payload(ctx, *cmd, &STREAM_CODEC),
        KeyCommand::Bits(cmd) => kv.bit_command(ctx, cmd),
    }
}

/// How DUMP and RESTORE turn a stream's elements into a payload's stream and back
/// (`engine::stream::dumped`; the key-value engine does not know a stream's naming).
const STREAM_CODEC: crate::engine::kv::dump::StreamCodec = crate::engine::kv::dump::StreamCodec {
    dumped_of: crate::engine::stream::dumped::dumped_of,
    elements_of: crate::engine::stream::dumped::elements_of,
};

#[cfg(test)]
mod tests;
