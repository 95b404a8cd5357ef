//! Object names and the manifest. Every object of a node lives under `node-{id}/`;
//! names embed zero-padded numbers so that listing order is numeric order.
//!
//! ```text
//! node-00001/manifest/00000000000000000007              manifest, epoch 7 (text)
//! node-00001/segments/00000000000000000042              delta segment 42
//! node-00001/checkpoints/00000000000000000040/000003    part 3 of the checkpoint taken before segment 40
//! ```

use crate::crdt::NodeId;

pub fn node_prefix(node: NodeId) -> String {
    format!("node-{node:05}")
}

pub fn manifest_prefix(node: NodeId) -> String {
    format!("{}/manifest/", node_prefix(node))
}

pub fn manifest_path(node: NodeId, epoch: u64) -> String {
    format!("{}{epoch:020}", manifest_prefix(node))
}

pub fn segments_prefix(node: NodeId) -> String {
    format!("{}/segments/", node_prefix(node))
}

pub fn segment_path(node: NodeId, seq: u64) -> String {
    format!("{}{seq:020}", segments_prefix(node))
}

pub fn checkpoint_prefix(node: NodeId, seq: u64) -> String {
    format!("{}/checkpoints/{seq:020}/", node_prefix(node))
}

pub fn checkpoint_part_path(node: NodeId, seq: u64, part: u32) -> String {
    format!("{}{part:06}", checkpoint_prefix(node, seq))
}

/// The number at the end of an object path (`.../00000000000000000042` -> 42).
pub fn trailing_number(path: &str) -> Option<u64> {
    path.rsplit('/').next()?.parse().ok()
}

/// What a manifest records: the checkpoint to start from and the first segment to
/// replay after it. Manifests are immutable; a new epoch supersedes the previous one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Manifest {
    pub node_id: NodeId,
    pub epoch: u64,
    /// `(sequence, parts)` of the latest complete checkpoint.
    pub checkpoint: Option<(u64, u32)>,
    /// The first segment recovery replays (segments before it are covered by the
    /// checkpoint).
    pub first_segment: u64,
}

const MANIFEST_FORMAT: &str = "meridian-manifest 1";

impl Manifest {
    /// Human-readable text, one `name value` per line.
    pub fn encode(&self) -> String {
        let checkpoint = self.checkpoint.map_or("none".to_string(), |(seq, parts)| format!("{seq} {parts}"));
        format!(
            "{MANIFEST_FORMAT}\nnode_id {}\nepoch {}\ncheckpoint {checkpoint}\nfirst_segment {}\n",
            self.node_id, self.epoch, self.first_segment
        )
    }

    pub fn decode(text: &str) -> Result<Manifest, String> {
        let mut lines = text.lines();
        if lines.next() != Some(MANIFEST_FORMAT) {
            return Err("not a Meridian manifest (or an unknown format version)".into());
        }
        let mut manifest = Manifest::default();
        let mut seen = 0;
        for line in lines {
            let (name, value) = line.split_once(' ').ok_or_else(|| format!("bad manifest line {line:?}"))?;
            let number = |v: &str| v.parse::<u64>().map_err(|_| format!("bad number in manifest line {line:?}"));
            match name {
                "node_id" => manifest.node_id = number(value)?.try_into().map_err(|_| "node id out of range")?,
                "epoch" => manifest.epoch = number(value)?,
                "first_segment" => manifest.first_segment = number(value)?,
                "checkpoint" if value == "none" => manifest.checkpoint = None,
                "checkpoint" => {
                    let (seq, parts) = value.split_once(' ').ok_or("bad checkpoint line")?;
                    manifest.checkpoint = Some((number(seq)?, number(parts)? as u32));
                }
                other => return Err(format!("unknown manifest field {other:?}")),
            }
            seen += 1;
        }
        if seen != 4 {
            return Err("incomplete manifest".into());
        }
        Ok(manifest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifests_round_trip_and_paths_sort_numerically() {
        let m = Manifest { node_id: 7, epoch: 3, checkpoint: Some((40, 2)), first_segment: 40 };
        assert_eq!(Manifest::decode(&m.encode()).unwrap(), m);
        assert!(segment_path(1, 9) < segment_path(1, 10));
        assert_eq!(trailing_number(&segment_path(1, 42)), Some(42));
        assert!(Manifest::decode("garbage").is_err());
    }
}
