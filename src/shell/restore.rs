//! `meridian restore --to TIME --into DIR`: rebuild a node's data as of a point in
//! time from its object store (the newest retained checkpoint taken before that time,
//! then its segments, keeping only writes made by then), and write it to DIR as a fresh
//! data set that `meridian --data-dir DIR` serves.

use bytes::Bytes;
use object_store::ObjectStore;

use super::persistence::{execute, open_store};
use crate::config::Config;
use crate::delta::Delta;
use crate::engine::kv::keyspace::SLOT_SPACE;
use crate::persistence::layout::{self, Manifest};
use crate::persistence::restore::{delta_is_before, may_hold_writes_before, parse_time};
use crate::persistence::segment::{self, Kind};
use crate::persistence::store::{StoreOp, StoreResult};
use crate::shard::{Shard, ShardConfig, ShardOp, ShardReply, merge_recovered};

/// Keys per checkpoint part written into the restored data set.
const PART_KEYS_MAX: usize = 4096;

async fn get(store: &dyn ObjectStore, path: String) -> Result<Bytes, String> {
    match execute(store, StoreOp::Get { path: path.clone() }).await {
        StoreResult::Data(bytes) => Ok(bytes),
        StoreResult::NotFound => Err(format!("{path} is missing")),
        other => Err(format!("reading {path}: {other:?}")),
    }
}

async fn list(store: &dyn ObjectStore, prefix: String) -> Result<Vec<String>, String> {
    match execute(store, StoreOp::List { prefix: prefix.clone() }).await {
        StoreResult::Listing(paths) => Ok(paths),
        other => Err(format!("listing {prefix}: {other:?}")),
    }
}

/// Load a checkpoint if all of it is from before `target_ms`.
async fn load_checkpoint(store: &dyn ObjectStore, node: u16, seq: u64, parts: u32, target_ms: u64) -> Result<Option<Vec<Delta>>, String> {
    let mut deltas = Vec::new();
    for part in 0..parts {
        let path = layout::checkpoint_part_path(node, seq, part);
        let Ok(bytes) = get(store, path.clone()).await else { return Ok(None) };
        let (header, part_deltas) = segment::decode(&bytes).map_err(|e| format!("{path} is corrupt: {e}"))?;
        if header.hlc_max.physical_ms() > target_ms {
            return Ok(None);
        }
        deltas.extend(part_deltas);
    }
    Ok(Some(deltas))
}

pub fn run(config: &Config, to: &str, into: &std::path::Path) -> Result<(), String> {
    let target_ms = parse_time(to)?;
    if into.exists() && std::fs::read_dir(into).map_err(|e| e.to_string())?.next().is_some() {
        return Err(format!("--into {} is not empty: restore writes a fresh data set", into.display()));
    }
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    runtime.block_on(restore(config, target_ms, into))
}

async fn restore(config: &Config, target_ms: u64, into: &std::path::Path) -> Result<(), String> {
    let node = config.node_id;
    let opened = open_store(config)?;
    let (source, location) = (opened.store.as_ref(), opened.location);

    // Every checkpoint the retained manifests name, newest first.
    let mut checkpoints: Vec<(u64, u32)> = Vec::new();
    for path in list(source, layout::manifest_prefix(node)).await? {
        let text = get(source, path.clone()).await?;
        let manifest =
            std::str::from_utf8(&text).map_err(|e| e.to_string()).and_then(Manifest::decode).map_err(|e| format!("{path}: {e}"))?;
        if let Some(checkpoint) = manifest.checkpoint {
            checkpoints.push(checkpoint);
        }
    }
    checkpoints.sort_unstable();
    checkpoints.dedup();
    checkpoints.reverse();

    let mut shard = Shard::new(ShardConfig::new(0, node));
    let mut first_segment = 1;
    let mut used_checkpoint = None;
    for (seq, parts) in checkpoints {
        if let Some(deltas) = load_checkpoint(source, node, seq, parts, target_ms).await? {
            merge_recovered(std::slice::from_mut(&mut shard), deltas);
            first_segment = seq;
            used_checkpoint = Some(seq);
            break;
        }
    }

    let mut segments: Vec<u64> =
        list(source, layout::segments_prefix(node)).await?.iter().filter_map(|p| layout::trailing_number(p)).collect();
    segments.sort_unstable();
    let mut expected = first_segment;
    let mut replayed = 0;
    for seq in segments.into_iter().filter(|&s| s >= first_segment) {
        if seq != expected {
            return Err(format!(
                "segment {} is missing: the state as of the target cannot be rebuilt (the retained history starts later or has a gap)",
                layout::segment_path(node, expected)
            ));
        }
        let path = layout::segment_path(node, seq);
        let bytes = get(source, path.clone()).await?;
        let (header, deltas) = segment::decode(&bytes).map_err(|e| format!("{path} is corrupt: {e}"))?;
        if !may_hold_writes_before(header.hlc_min, target_ms) {
            break;
        }
        let past: Vec<Delta> = deltas.into_iter().filter(|d| delta_is_before(d, target_ms)).collect();
        merge_recovered(std::slice::from_mut(&mut shard), past);
        replayed += 1;
        expected += 1;
    }
    if used_checkpoint.is_none() && first_segment == 1 && replayed == 0 && expected == 1 {
        tracing::warn!("no checkpoint or segment from before the target: the restored data set is empty");
    }

    // Write the result as checkpoint 1 of a fresh data set.
    std::fs::create_dir_all(into).map_err(|e| format!("cannot create {}: {e}", into.display()))?;
    let target = super::local_store::LocalStore::new(into, true).map_err(|e| e.to_string())?;
    let mut cursor = 0;
    let mut part = 0u32;
    let mut keys = 0usize;
    loop {
        let ShardReply::Chunk { deltas, next } = shard.apply(ShardOp::ExportChunk { cursor, count: PART_KEYS_MAX }, target_ms) else {
            return Err("internal: no chunk".into());
        };
        if !deltas.is_empty() {
            keys += deltas.len();
            let data = segment::encode(node, Kind::CheckpointPart, 1, part, &deltas);
            let path = layout::checkpoint_part_path(node, 1, part);
            match execute(&target, StoreOp::Put { path: path.clone(), data: data.into(), create_only: true }).await {
                StoreResult::Stored => part += 1,
                other => return Err(format!("writing {path}: {other:?}")),
            }
        }
        if next >= SLOT_SPACE {
            break;
        }
        cursor = next;
    }
    let manifest = Manifest { node_id: node, epoch: 1, checkpoint: Some((1, part)), first_segment: 1 };
    let path = layout::manifest_path(node, 1);
    match execute(&target, StoreOp::Put { path: path.clone(), data: Bytes::from(manifest.encode()).into(), create_only: true }).await {
        StoreResult::Stored => {}
        other => return Err(format!("writing {path}: {other:?}")),
    }
    tracing::info!(
        source = %location,
        target_ms,
        checkpoint = used_checkpoint.unwrap_or(0),
        segments = replayed,
        keys,
        into = %into.display(),
        "restore complete: serve it with `meridian --data-dir {}`",
        into.display()
    );
    Ok(())
}
