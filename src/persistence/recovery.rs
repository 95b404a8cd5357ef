//! Recovery: rebuild a node from object storage (manifest -> checkpoint -> segments).
//!
//! A state machine: it asks for one store operation at a time and hands back the
//! deltas to apply, in order. Every object is verified (CRC, node id, sequence); a
//! missing or corrupt object stops replay at the last good one with an error naming
//! the object, unless the operator accepted the loss (`accept_loss`), in which case
//! replay stops there, is logged loudly, and writing resumes after every existing
//! object. It never skips ahead silently.

use std::collections::VecDeque;

use super::layout::{self, Manifest};
use super::segment::{self, Kind};
use super::store::{StoreOp, StoreResult};
use crate::crdt::NodeId;
use crate::delta::Delta;

/// What recovery found, for the streamer to continue from.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Recovered {
    pub manifest: Manifest,
    /// The next segment sequence to write.
    pub next_segment: u64,
    pub segments_replayed: u64,
    pub checkpoint_parts_loaded: u32,
    pub deltas_applied: u64,
    /// Set when `accept_loss` let recovery continue past a bad or missing object.
    pub loss: Option<String>,
}

/// What the driver must do next.
#[derive(Debug, PartialEq)]
pub enum Step {
    Store(StoreOp),
    /// Apply these deltas (in order), then call `next` again with `None`.
    Apply(Vec<Delta>),
    Done(Recovered),
    Failed(String),
}

#[derive(Debug)]
enum Phase {
    ListManifests,
    GetManifest,
    GetCheckpointPart(u32),
    ListSegments,
    GetSegment,
    Finished,
}

pub struct Recovery {
    node: NodeId,
    accept_loss: bool,
    phase: Phase,
    out: Recovered,
    segments: VecDeque<u64>,
    /// Highest segment that exists in the store (what writing must go past).
    highest_segment: u64,
}

impl Recovery {
    pub fn new(node: NodeId, accept_loss: bool) -> Recovery {
        Recovery {
            node,
            accept_loss,
            phase: Phase::ListManifests,
            out: Recovered { next_segment: 1, manifest: Manifest { node_id: node, ..Manifest::default() }, ..Recovered::default() },
            segments: VecDeque::new(),
            highest_segment: 0,
        }
    }

    /// The first step.
    pub fn start(&mut self) -> Step {
        Step::Store(StoreOp::List { prefix: layout::manifest_prefix(self.node) })
    }

    fn stop_or_accept(&mut self, problem: String) -> Step {
        if !self.accept_loss {
            return Step::Failed(format!(
                "{problem}; refusing to start with a partial state (restart with --accept-data-loss to keep what was recovered so far)"
            ));
        }
        self.out.loss = Some(problem);
        self.finish()
    }

    fn finish(&mut self) -> Step {
        self.phase = Phase::Finished;
        let after_replayed = self.out.manifest.first_segment.max(1) + self.out.segments_replayed;
        self.out.next_segment = after_replayed.max(self.highest_segment + 1);
        Step::Done(self.out.clone())
    }

    fn next_segment_step(&mut self) -> Step {
        match self.segments.front() {
            Some(&seq) => {
                self.phase = Phase::GetSegment;
                Step::Store(StoreOp::Get { path: layout::segment_path(self.node, seq) })
            }
            None => self.finish(),
        }
    }

    fn list_segments(&mut self) -> Step {
        self.phase = Phase::ListSegments;
        Step::Store(StoreOp::List { prefix: layout::segments_prefix(self.node) })
    }

    /// Feed the result of the last store operation (or `None` after an `Apply`).
    pub fn next(&mut self, result: Option<StoreResult>) -> Step {
        match (&self.phase, result) {
            (Phase::ListManifests, Some(StoreResult::Listing(paths))) => {
                match paths.iter().filter_map(|p| layout::trailing_number(p)).max() {
                    None => self.list_segments(),
                    Some(epoch) => {
                        self.phase = Phase::GetManifest;
                        Step::Store(StoreOp::Get { path: layout::manifest_path(self.node, epoch) })
                    }
                }
            }
            (Phase::GetManifest, Some(StoreResult::Data(bytes))) => {
                let manifest = match std::str::from_utf8(&bytes).map_err(|e| e.to_string()).and_then(Manifest::decode) {
                    Ok(m) if m.node_id == self.node => m,
                    Ok(m) => return Step::Failed(format!("manifest belongs to node {} not {}", m.node_id, self.node)),
                    Err(e) => return Step::Failed(format!("manifest unreadable: {e}")),
                };
                self.out.manifest = manifest;
                match self.out.manifest.checkpoint {
                    Some((seq, parts)) if parts > 0 => {
                        self.phase = Phase::GetCheckpointPart(0);
                        Step::Store(StoreOp::Get { path: layout::checkpoint_part_path(self.node, seq, 0) })
                    }
                    _ => self.list_segments(),
                }
            }
            (Phase::GetCheckpointPart(part), Some(StoreResult::Data(bytes))) => {
                let part = *part;
                let Some((seq, parts)) = self.out.manifest.checkpoint else { return Step::Failed("internal: no checkpoint".into()) };
                let path = layout::checkpoint_part_path(self.node, seq, part);
                match segment::decode(&bytes) {
                    Ok((h, deltas)) if h.kind == Kind::CheckpointPart && h.node_id == self.node && h.sequence == seq && h.part == part => {
                        self.out.checkpoint_parts_loaded += 1;
                        self.out.deltas_applied += deltas.len() as u64;
                        self.phase = if part + 1 < parts { Phase::GetCheckpointPart(part + 1) } else { Phase::ListSegments };
                        Step::Apply(deltas)
                    }
                    Ok((h, _)) => {
                        Step::Failed(format!("checkpoint object {path} holds node {} seq {} part {}", h.node_id, h.sequence, h.part))
                    }
                    // A checkpoint is the base everything else builds on: no partial accept.
                    Err(e) => Step::Failed(format!("checkpoint object {path} is corrupt: {e}")),
                }
            }
            (Phase::ListSegments, None) => self.list_segments(),
            (Phase::GetCheckpointPart(part), None) => {
                let Some((seq, _)) = self.out.manifest.checkpoint else { return Step::Failed("internal: no checkpoint".into()) };
                Step::Store(StoreOp::Get { path: layout::checkpoint_part_path(self.node, seq, *part) })
            }
            (Phase::ListSegments, Some(StoreResult::Listing(paths))) => {
                let mut seqs: Vec<u64> = paths.iter().filter_map(|p| layout::trailing_number(p)).collect();
                seqs.sort_unstable();
                self.highest_segment = seqs.last().copied().unwrap_or(0);
                let mut first = self.out.manifest.first_segment.max(1);
                if crate::bugs::active(crate::bugs::Bug::RecoverySkipsFirstSegment) {
                    first += 1;
                }
                let wanted: Vec<u64> = seqs.into_iter().filter(|&s| s >= first).collect();
                // Segments must be contiguous from the manifest's first one.
                let mut expected = first;
                for &seq in &wanted {
                    if seq != expected {
                        break;
                    }
                    self.segments.push_back(seq);
                    expected += 1;
                }
                if self.segments.len() < wanted.len()
                    || (wanted.first().is_some_and(|&s| s != first) && self.out.manifest.checkpoint.is_some())
                {
                    let missing = layout::segment_path(self.node, expected);
                    self.out.manifest.first_segment = first;
                    // Replay what is contiguous, then stop at the gap.
                    let gap = format!("segment {missing} is missing (segments after it exist)");
                    if !self.accept_loss {
                        return Step::Failed(format!(
                            "{gap}; refusing to start with a partial state (restart with --accept-data-loss to keep what can be recovered)"
                        ));
                    }
                    self.out.loss = Some(gap);
                }
                self.next_segment_step()
            }
            (Phase::GetSegment, None) => self.next_segment_step(),
            (Phase::GetSegment, Some(StoreResult::Data(bytes))) => {
                let Some(seq) = self.segments.pop_front() else { return self.finish() };
                let path = layout::segment_path(self.node, seq);
                match segment::decode(&bytes) {
                    Ok((h, deltas)) if h.kind == Kind::Segment && h.node_id == self.node && h.sequence == seq => {
                        self.out.segments_replayed += 1;
                        self.out.deltas_applied += deltas.len() as u64;
                        Step::Apply(deltas)
                    }
                    Ok((h, _)) => self.stop_or_accept(format!("segment {path} holds node {} sequence {}", h.node_id, h.sequence)),
                    Err(e) => self.stop_or_accept(format!("segment {path} is corrupt ({e})")),
                }
            }
            (Phase::GetSegment, Some(StoreResult::NotFound)) => {
                let seq = self.segments.front().copied().unwrap_or(0);
                self.stop_or_accept(format!("segment {} vanished during recovery", layout::segment_path(self.node, seq)))
            }
            (_, Some(StoreResult::Failed(e))) => Step::Failed(format!("object store error during recovery: {e}")),
            (phase, result) => Step::Failed(format!("internal: unexpected {result:?} in recovery phase {phase:?}")),
        }
    }
}
