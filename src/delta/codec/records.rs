//! The records that are not key states: a FLUSHALL (`Delta::Flush`) and a tombstone
//! collection (`Delta::Forget`), each of every shard (`ShardScope::ALL`, the kinds
//! written before scopes existed) or of one shard of several. Part of [`super`] (the
//! codec).
//!
//! Must never: read a record other than it was written, or read an older kind other
//! than it was read when it was written (kinds 2, 3, 4, 7, 8 and 9 keep their bytes).

use super::{DecodeError, Reader, Writer, err, read_vv, write_vv};
use crate::crdt::{NodeId, VersionVector};
use crate::delta::Delta;
use crate::routing::ShardScope;

pub(super) const DELTA_FLUSH: u8 = 2;
pub(super) const DELTA_FORGET: u8 = 3;
pub(super) const DELTA_SHARD_FLUSH: u8 = 4;
/// A collection of element tombstones (`Delta::Forget { elements: true }`).
pub(super) const DELTA_FORGET_ELEMENTS: u8 = 7;
/// A collection of key tombstones by one shard of several: its index and the shard
/// count (u16 each), then the vector. Kinds 3 and 7 (written before scopes) read as
/// `ShardScope::ALL`, and a lone shard's record is still written as kind 3 or 7.
pub(super) const DELTA_SHARD_FORGET: u8 = 8;
/// The same for element tombstones.
pub(super) const DELTA_SHARD_FORGET_ELEMENTS: u8 = 9;
/// A collection that spared the counters of some nodes (`Delta::Forget::spared`): a
/// byte (1: element tombstones), the scope (index and count, u16 each), the vector,
/// then the count of spared nodes and each node id (u16, strictly increasing). Written
/// only when some node was spared, so every other record keeps the kinds above.
pub(super) const DELTA_FORGET_SPARING: u8 = 11;

/// A flush or forget record.
pub(super) fn write_record(w: &mut Writer, delta: &Delta) {
    match delta {
        Delta::Key { .. } => unreachable!("a key state is not a record"),
        Delta::Flush { seen, scope } if *scope == ShardScope::ALL => {
            w.u8(DELTA_FLUSH);
            write_vv(w, seen);
        }
        Delta::Flush { seen, scope } => {
            w.u8(DELTA_SHARD_FLUSH);
            write_scope(w, *scope);
            write_vv(w, seen);
        }
        Delta::Forget { below, spared, elements, scope } if !spared.is_empty() => {
            w.u8(DELTA_FORGET_SPARING);
            w.u8(u8::from(*elements));
            write_scope(w, *scope);
            write_vv(w, below);
            w.var(spared.len() as u64);
            spared.iter().for_each(|node| w.u16(*node));
        }
        Delta::Forget { below, elements, scope, .. } if *scope == ShardScope::ALL => {
            w.u8(if *elements { DELTA_FORGET_ELEMENTS } else { DELTA_FORGET });
            write_vv(w, below);
        }
        Delta::Forget { below, elements, scope, .. } => {
            w.u8(if *elements { DELTA_SHARD_FORGET_ELEMENTS } else { DELTA_SHARD_FORGET });
            write_scope(w, *scope);
            write_vv(w, below);
        }
    }
}

/// The record of kind `kind` (its byte already read), or `None` for a kind that is not
/// a record's.
pub(super) fn read_record(kind: u8, r: &mut Reader) -> Option<Result<Delta, DecodeError>> {
    let forget = |below: VersionVector, elements, scope| Delta::Forget { below, spared: Vec::new(), elements, scope };
    Some(match kind {
        DELTA_FLUSH => read_vv(r).map(|seen| Delta::Flush { seen, scope: ShardScope::ALL }),
        DELTA_SHARD_FLUSH => read_scope(r, "flush").and_then(|scope| Ok(Delta::Flush { seen: read_vv(r)?, scope })),
        DELTA_FORGET => read_vv(r).map(|below| forget(below, false, ShardScope::ALL)),
        DELTA_FORGET_ELEMENTS => read_vv(r).map(|below| forget(below, true, ShardScope::ALL)),
        DELTA_SHARD_FORGET | DELTA_SHARD_FORGET_ELEMENTS => {
            read_scope(r, "tombstone collection").and_then(|scope| Ok(forget(read_vv(r)?, kind == DELTA_SHARD_FORGET_ELEMENTS, scope)))
        }
        DELTA_FORGET_SPARING => read_sparing(r),
        _ => return None,
    })
}

fn read_sparing(r: &mut Reader) -> Result<Delta, DecodeError> {
    let elements = match r.u8()? {
        0 => false,
        1 => true,
        other => return err(format!("tombstone collection of kind {other}")),
    };
    let scope = read_scope(r, "tombstone collection")?;
    let below = read_vv(r)?;
    let n = r.count()?;
    let spared: Vec<NodeId> = (0..n).map(|_| r.u16()).collect::<Result<_, _>>()?;
    if spared.is_empty() || !spared.windows(2).all(|w| w[0] < w[1]) {
        return err("tombstone collection sparing no node, or nodes out of order".to_string());
    }
    Ok(Delta::Forget { below, spared, elements, scope })
}

fn write_scope(w: &mut Writer, scope: ShardScope) {
    w.u16(scope.index);
    w.u16(scope.count);
}

/// A shard scope: index and count, each a u16; `what` names the record in the error.
fn read_scope(r: &mut Reader, what: &str) -> Result<ShardScope, DecodeError> {
    let (index, count) = (r.u16()?, r.u16()?);
    if count == 0 || index >= count {
        return err(format!("{what} of shard {index} of {count}"));
    }
    Ok(ShardScope { index, count })
}
