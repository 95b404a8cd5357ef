//! A key state's byte-facing forms: taken apart into [`KeyStateParts`] for the binary
//! codec (persistence, replication) and rebuilt from them with the invariants a decoder
//! cannot check, and fed field by field to the Merkle digest of anti-entropy. Owns no
//! state and decides no merge; it must never depend on which compact form a state is
//! held in (equal states give equal parts and equal digest bytes).

use crate::crdt::counter::{Counter, Slot};
use crate::crdt::register::MvRegister;
use crate::crdt::ttl::TtlWrite;
use crate::crdt::{Dot, VersionVector};

use super::meta::KeyMeta;
use super::repr::{Full, Repr, Slots, Values};
use super::sparse::Sparse;
use super::{Counters, KeyState, StrVal};

/// A key state taken apart, for the binary codec (persistence, replication).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KeyStateParts {
    pub ctx: Vec<Dot>,
    pub values: Vec<(Dot, StrVal)>,
    pub int_slots: Vec<Slot<i64>>,
    pub int_floor: Vec<Slot<i64>>,
    pub float_slots: Vec<Slot<f64>>,
    pub float_floor: Vec<Slot<f64>>,
    pub ttl: Vec<(Dot, TtlWrite)>,
}

/// A state's parts, borrowed (what the encoder writes; no copies on the write path but
/// a compact counter's one slot, unpacked on the stack).
pub struct KeyStatePartsRef<'a> {
    pub ctx: &'a VersionVector,
    pub values: Values<'a>,
    pub int_slots: Slots<'a, i64>,
    pub int_floor: Slots<'a, i64>,
    pub float_slots: &'a [Slot<f64>],
    pub float_floor: &'a [Slot<f64>],
    pub ttl: &'a [(Dot, TtlWrite)],
}

impl KeyState {
    pub fn parts(&self) -> KeyStatePartsRef<'_> {
        let (int_slots, int_floor) = self.int_slots();
        // Float counters are held in the full form only.
        let counters = self.full_counters();
        KeyStatePartsRef {
            ctx: self.ctx(),
            values: self.values(),
            int_slots,
            int_floor,
            float_slots: counters.map_or(&[], |c| c.floats.slots()),
            float_floor: counters.map_or(&[], |c| c.floats.floor()),
            ttl: self.ttl().entries(),
        }
    }

    /// Rebuild a state from decoded parts, checking the invariants a decoder can't.
    pub fn from_parts(parts: KeyStateParts) -> Result<KeyState, &'static str> {
        let has_counters =
            !(parts.int_slots.is_empty() && parts.int_floor.is_empty() && parts.float_slots.is_empty() && parts.float_floor.is_empty());
        let counters = if has_counters {
            Some(Box::new(Counters {
                ints: Counter::from_parts(parts.int_slots, parts.int_floor)?,
                floats: Sparse::from(Counter::from_parts(parts.float_slots, parts.float_floor)?),
            }))
        } else {
            None
        };
        let meta = KeyMeta { ctx: VersionVector::from_dots(parts.ctx)?, ttl: MvRegister::from_entries(parts.ttl)? };
        let full = Full { meta: Sparse::from(meta), value: MvRegister::from_entries(parts.values)?, counters, collections: None };
        let mut state = KeyState { repr: Repr::Full(Box::new(full)) };
        if !state.ctx().is_empty() {
            state.normalize_context();
        }
        state.settle();
        Ok(state)
    }

    /// Feed every field, in a fixed little-endian encoding, to a digest (the Merkle
    /// leaves of anti-entropy): equal states feed equal bytes on every platform.
    /// Generic rather than `dyn`: it runs on every write of a replicating node, and the
    /// per-field calls inline into the caller's buffer appends.
    pub fn feed_digest(&self, feed: &mut impl FnMut(&[u8])) {
        fn dot(d: Dot, feed: &mut impl FnMut(&[u8])) {
            feed(&d.hlc.0.to_le_bytes());
            feed(&d.node.to_le_bytes());
        }
        feed(&(self.ctx().len() as u32).to_le_bytes());
        for d in self.ctx().iter() {
            dot(d, feed);
        }
        let values = self.values();
        feed(&(values.len() as u32).to_le_bytes());
        for (d, value) in values.iter() {
            dot(d, feed);
            match value {
                StrVal::Int(n) => {
                    feed(&[0]);
                    feed(&n.to_le_bytes());
                }
                StrVal::Raw(bytes) => {
                    feed(&[1]);
                    feed(&(bytes.len() as u64).to_le_bytes());
                    feed(bytes);
                }
            }
        }
        feed(&(self.ttl().len() as u32).to_le_bytes());
        for (d, write) in self.ttl().entries() {
            dot(*d, feed);
            match write {
                TtlWrite::At(at_ms) => {
                    feed(&[0]);
                    feed(&at_ms.to_le_bytes());
                }
                TtlWrite::Persist => feed(&[1]),
            }
        }
        // Elements enter through their XOR, kept write by write: O(1) per write. Tag 2
        // is a hash part, 3 a set part, 4 a sorted set part, 5 a list part.
        for (kind, part) in self.collection_parts() {
            feed(&[kind.digest_tag()]);
            feed(&(part.removed().len() as u32).to_le_bytes());
            for d in part.removed().iter() {
                dot(d, feed);
            }
            feed(&(part.entries_len() as u64).to_le_bytes());
            feed(&part.digest().to_le_bytes());
        }
        if let Some(c) = self.counters().filter(|c| !(c.ints.is_empty() && c.floats.is_empty())) {
            for slots in [c.ints.slots(), c.ints.floor()] {
                feed_slots(slots, |sum| sum.to_le_bytes(), feed);
            }
            for slots in [c.floats.slots(), c.floats.floor()] {
                feed_slots(slots, |sum| sum.to_bits().to_le_bytes(), feed);
            }
        }
    }
}

/// One counter's slots, fed to the digest: their count, then each slot's identity and
/// its sum as `sum_bytes` gives it (an integer's little-endian bytes, a float's bits).
fn feed_slots<V>(slots: &[Slot<V>], sum_bytes: impl Fn(&V) -> [u8; 8], feed: &mut impl FnMut(&[u8])) {
    feed(&(slots.len() as u32).to_le_bytes());
    for s in slots {
        feed(&s.node.to_le_bytes());
        feed(&s.incarnation.0.to_le_bytes());
        feed(&s.hlc.0.to_le_bytes());
        feed(&s.since.0.to_le_bytes());
        feed(&sum_bytes(&s.sum));
    }
}
