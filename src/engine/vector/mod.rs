//! The vector engine (`FT.*`): secondary indexes over a shard's hashes, with KNN search
//! (FLAT or HNSW) filtered by tags and numbers. See docs/vector.md.
//!
//! Owns every index of one shard. An index is derived, never written to: the shard
//! hands over each key whose state changed (a local write, a merge from a peer, a
//! recovered delta, an expiry or delete, a flush) and the index re-reads that key's
//! hash. So on every node the index is a function of the converged data.
//!
//! Definitions are data too: FT.CREATE stores its arguments in a hash under a reserved
//! key (`DEF_KEY_PREFIX` + name), which replicates and persists like any key. A shard
//! builds an index the first time an FT.* operation names a definition it has not
//! built (or whose bytes changed), by scanning its keys once; from then on it follows
//! every change. The build itself runs in bounded steps (`build.rs`) on the shard's
//! ticks. The node keeps the definitions it has read, parsed, until a definition key
//! changes (`definitions.rs`). Never does I/O, reads a clock or draws randomness.

pub mod aggregate;
mod audit;
pub mod build;
pub mod definitions;
pub mod distance;
pub mod hnsw;
pub mod index;
pub mod quant;
pub mod query;
pub mod schema;
pub mod scorer;
pub mod text;

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;

use crate::engine::kv::value::KeyKind;
use crate::engine::kv::{KeyState, KvEngine, key_hash};
pub use index::{Found, Hit, Index, Live, SortValue, Term};
pub use query::SearchQuery;

/// Where index definitions live: `DEF_KEY_PREFIX` + index name, a hash whose field
/// `DEF_FIELD` holds the encoded FT.CREATE arguments. Keys under this prefix are never
/// indexed themselves.
pub const DEF_KEY_PREFIX: &[u8] = b"__meridian_ft:";
pub const DEF_FIELD: &[u8] = b"schema";
/// Most indexes one node keeps (each costs a scan to build and work on every write).
pub const INDEXES_MAX: usize = 1_024;

pub fn def_key(name: &[u8]) -> Bytes {
    let mut key = DEF_KEY_PREFIX.to_vec();
    key.extend_from_slice(name);
    Bytes::from(key)
}

/// An FT.* operation on one shard.
#[derive(Clone, Debug, PartialEq)]
pub enum VectorOp {
    /// Build (or rebuild) index `name` from definition `raw` if not already built from it.
    Sync {
        name: Bytes,
        raw: Bytes,
    },
    Search {
        name: Bytes,
        raw: Bytes,
        query: Arc<SearchQuery>,
    },
    /// The counts FT.INFO sums over shards.
    Info {
        name: Bytes,
        raw: Bytes,
    },
    /// The keys of this shard's documents (FT.DROPINDEX DD deletes them).
    Keys {
        name: Bytes,
        raw: Bytes,
    },
    /// Drop every index whose name is not listed (their definitions are gone).
    Retain(Vec<Bytes>),
}

#[derive(Clone, Debug, PartialEq)]
pub enum VectorReply {
    Done,
    Hits(Found),
    /// `build`: keys indexed so far and keys to index of a build in progress on this
    /// shard ((0, 0) when none is).
    Info {
        docs: usize,
        failures: u64,
        bytes: usize,
        build: (usize, usize),
    },
    Keys(Vec<Bytes>),
    Error(String),
}

pub struct VectorEngine {
    indexes: BTreeMap<Bytes, Index>,
    /// Builds in progress, by index name.
    builds: BTreeMap<Bytes, build::Build>,
    /// Keys all builds together index per step (`build::BUILD_KEYS_PER_STEP`; the
    /// simulator lowers it so that its small shards build over several steps).
    build_keys_per_step: usize,
}

impl Default for VectorEngine {
    fn default() -> Self {
        VectorEngine { indexes: BTreeMap::new(), builds: BTreeMap::new(), build_keys_per_step: build::BUILD_KEYS_PER_STEP }
    }
}

fn expired(state: &KeyState, now_ms: u64) -> bool {
    state.expire_at_ms().is_some_and(|at| now_ms > at)
}

/// The hash fields of a stored key as a reader (`None`: gone or not a hash).
fn hash_reader(state: Option<&KeyState>) -> Option<impl Fn(&[u8]) -> Option<Bytes> + '_> {
    let state = state.filter(|s| s.kind() == Some(KeyKind::Hash))?;
    let fields = state.hash()?;
    Some(move |name: &[u8]| fields.get(name).and_then(|f| f.read()).map(|v| v.to_bytes()))
}

impl VectorEngine {
    /// Whether some index follows this shard's writes (the keyspace then reports
    /// changed keys).
    pub fn is_tracking(&self) -> bool {
        !self.indexes.is_empty()
    }

    /// Whether a build is in progress (the shard's driver should step again soon).
    pub fn is_building(&self) -> bool {
        !self.builds.is_empty()
    }

    pub fn set_build_keys_per_step(&mut self, keys: usize) {
        assert!(keys > 0);
        self.build_keys_per_step = keys;
    }

    /// One bounded step of the builds in progress: at most `build_keys_per_step` keys
    /// in all. A finished compaction swaps its shadow in.
    pub fn advance_builds(&mut self, kv: &KvEngine) {
        let mut budget = self.build_keys_per_step;
        let mut finished = Vec::new();
        for (name, build) in self.builds.iter_mut() {
            if budget == 0 {
                break;
            }
            let Some(index) = self.indexes.get_mut(name) else {
                finished.push(name.clone());
                continue;
            };
            let before = build.progress().0;
            build.step(index, kv, budget);
            budget -= build.progress().0 - before;
            if build.is_done() {
                finished.push(name.clone());
            }
        }
        for name in finished {
            if let Some(shadow) = self.builds.remove(&name).and_then(|b| b.shadow)
                && let Some(index) = self.indexes.get_mut(&name)
            {
                *index = shadow;
            }
        }
    }

    pub fn apply(&mut self, op: VectorOp, kv: &mut KvEngine, now_ms: u64) -> VectorReply {
        match op {
            VectorOp::Sync { name, raw } => match self.ensure(&name, &raw, kv) {
                Ok(_) => VectorReply::Done,
                Err(e) => VectorReply::Error(e),
            },
            VectorOp::Info { name, raw } => {
                let counts = self.ensure(&name, &raw, kv).map(|index| (index.num_docs(), index.indexing_failures, index.memory_bytes()));
                match counts {
                    Ok((docs, failures, bytes)) => {
                        // A compaction's shadow build is invisible: the index it replaces is whole.
                        let build = self.builds.get(&name).filter(|b| b.shadow.is_none()).map_or((0, 0), |b| b.progress());
                        VectorReply::Info { docs, failures, bytes, build }
                    }
                    Err(e) => VectorReply::Error(e),
                }
            }
            VectorOp::Keys { name, raw } => match self.ensure(&name, &raw, kv) {
                Ok(index) => VectorReply::Keys(index.keys().cloned().collect()),
                Err(e) => VectorReply::Error(e),
            },
            VectorOp::Retain(names) => {
                self.indexes.retain(|name, _| names.contains(name));
                self.builds.retain(|name, _| names.contains(name));
                VectorReply::Done
            }
            VectorOp::Search { name, raw, query } => {
                if let Err(e) = self.ensure(&name, &raw, kv) {
                    return VectorReply::Error(e);
                }
                let Some(index) = self.indexes.get_mut(&name) else { return VectorReply::Error("internal: index vanished".into()) };
                let keys = &kv.keys;
                // Every indexed document's key is in the keyspace (the indexes followed
                // every change just before this op), so only a TTL can make one not
                // live: with no key carrying one, skip the lookup (a hash and a probe
                // for every slot a KNN walk keeps).
                let unexpired = |key: &Bytes| keys.get(key, key_hash(key)).is_some_and(|e| !expired(e.state(), now_ms));
                let live = if keys.expiring() > 0 { Live::Checked(&unexpired) } else { Live::All };
                let mut read = |key: &Bytes| {
                    let entry = keys.get(key, key_hash(key)).filter(|e| !expired(e.state(), now_ms))?;
                    let fields = entry.state().hash()?;
                    Some(fields.iter().filter_map(|(f, s)| s.read().map(|v| (Bytes::copy_from_slice(f), v.to_bytes()))).collect())
                };
                match index.search(&query, &mut read, live) {
                    Ok(found) => VectorReply::Hits(found),
                    Err(e) => VectorReply::Error(e),
                }
            }
        }
    }

    /// The index `name` built from definition `raw`: built now from the shard's keys if
    /// it was not, or was built from other bytes (the definition was replaced).
    fn ensure(&mut self, name: &Bytes, raw: &Bytes, kv: &mut KvEngine) -> Result<&mut Index, String> {
        let current = self.indexes.get(name).is_some_and(|i| i.raw == *raw);
        if !current {
            let args = schema::decode_args(raw.clone()).ok_or("internal: undecodable index definition")?;
            let def = schema::parse(&args)?;
            if !self.indexes.contains_key(name) && self.indexes.len() >= INDEXES_MAX {
                return Err(format!("Meridian keeps at most {INDEXES_MAX} indexes"));
            }
            let mut index = Index::new(def, raw.clone());
            // FT.ALTER re-indexes every document; RediSearch's failure count is
            // cumulative over such scans, so the old index's count carries over.
            index.indexing_failures += self.indexes.get(name).map_or(0, |old| old.indexing_failures);
            // The first step now (a small index is whole at once), the rest on ticks.
            let mut build = build::Build::start(&index, kv, None);
            self.indexes.insert(name.clone(), index);
            if let Some(index) = self.indexes.get_mut(name) {
                build.step(index, kv, self.build_keys_per_step);
            }
            if build.is_done() {
                self.builds.remove(name);
            } else {
                self.builds.insert(name.clone(), build);
            }
            kv.keys.track_changes(true);
        }
        self.indexes.get_mut(name).ok_or_else(|| "internal: index vanished".into())
    }

    /// Follow the changes the keyspace recorded since the last call.
    pub fn follow(&mut self, kv: &mut KvEngine) {
        self.follow_changes(kv, false);
    }

    /// Follow the changes a merge of a peer's deltas made (the same work as `follow`;
    /// apart so that the simulator's planted bug has a merge to live in).
    pub fn follow_merged(&mut self, kv: &mut KvEngine) {
        self.follow_changes(kv, true);
    }

    fn follow_changes(&mut self, kv: &mut KvEngine, merged: bool) {
        let (keys, cleared) = kv.keys.take_changes();
        if self.indexes.is_empty() {
            return;
        }
        if cleared {
            // Whatever survived the flush (concurrent writes) is indexed afresh, in steps.
            for (name, index) in self.indexes.iter_mut() {
                *index = Index::new(index.def.clone(), index.raw.clone());
                self.builds.insert(name.clone(), build::Build::start(index, kv, None));
            }
            return;
        }
        for key in &keys {
            if key.starts_with(DEF_KEY_PREFIX) {
                continue;
            }
            let hash = key_hash(key);
            let state = kv.keys.get(key, hash).map(|e| e.state());
            if merged && state.is_none() && crate::bugs::active(crate::bugs::Bug::MergedDeleteStaysIndexed) {
                continue;
            }
            let reader = hash_reader(state);
            let fields = reader.as_ref().map(|r| r as &dyn Fn(&[u8]) -> Option<Bytes>);
            for (name, index) in self.indexes.iter_mut().filter(|(_, i)| i.def.covers(key)) {
                index.reindex(key, hash, fields);
                if let Some(shadow) = self.builds.get_mut(name).and_then(|b| b.shadow.as_mut()) {
                    shadow.reindex(key, hash, fields);
                }
            }
        }
        for (name, index) in self.indexes.iter() {
            if index.needs_compaction() && !self.builds.contains_key(name) {
                let shadow = Index::new(index.def.clone(), index.raw.clone());
                self.builds.insert(name.clone(), build::Build::start(index, kv, Some(shadow)));
            }
        }
    }
}

/// A distance as RediSearch prints it (C's `%.12g`... close enough: 12 significant
/// digits, trailing zeros dropped).
pub fn format_score(value: f32) -> String {
    format_double(value as f64)
}

/// A number as RediSearch prints it (`%.12g`-like), e.g. FT.AGGREGATE's reduced values.
pub fn format_double(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let exponent = v.abs().log10().floor() as i32;
    if !(-5..12).contains(&exponent) {
        let text = format!("{:.11e}", v);
        let (mantissa, exp) = text.split_once('e').unwrap_or((&text, "0"));
        let mantissa = mantissa.trim_end_matches('0').trim_end_matches('.');
        let exp: i32 = exp.parse().unwrap_or(0);
        return format!("{mantissa}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs());
    }
    let decimals = (11 - exponent).max(0) as usize;
    let text = format!("{:.*}", decimals, v);
    if text.contains('.') { text.trim_end_matches('0').trim_end_matches('.').to_string() } else { text }
}

#[cfg(test)]
mod tests;
