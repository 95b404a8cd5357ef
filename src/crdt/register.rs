//! Multi-value register with a last-writer-wins read (DESIGN §5, strings and TTL).
//!
//! Every concurrent write is kept until a later write (one that has seen it) replaces
//! it; reads take the entry with the largest dot. Keeping the concurrent losers, rather
//! than dropping them at merge time, is what keeps merge associative when a DEL has
//! observed the winner but not a loser: the loser must then survive (observed-remove).
//! At most one entry per node can be concurrent, so the set stays small.

use smallvec::SmallVec;

use super::dot::{Dot, VersionVector};

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MvRegister<T> {
    /// Sorted by dot, no two entries with the same dot.
    entries: SmallVec<[(Dot, T); 1]>,
}

impl<T> Default for MvRegister<T> {
    fn default() -> Self {
        MvRegister { entries: SmallVec::new() }
    }
}

impl<T: Clone + PartialEq> MvRegister<T> {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// The entry that reads return: the one with the largest `(hlc, node)`.
    pub fn winner(&self) -> Option<&(Dot, T)> {
        if crate::bugs::active(crate::bugs::Bug::LwwTieBreakInverted) {
            return self.entries.first();
        }
        self.entries.last()
    }

    pub fn entries(&self) -> &[(Dot, T)] {
        &self.entries
    }

    pub fn winner_mut(&mut self) -> Option<&mut (Dot, T)> {
        self.entries.last_mut()
    }

    /// Rebuild from decoded entries: dots must be strictly increasing.
    pub fn from_entries(entries: Vec<(Dot, T)>) -> Result<Self, &'static str> {
        if entries.windows(2).any(|w| w[0].0 >= w[1].0) {
            return Err("register entries out of order");
        }
        Ok(MvRegister { entries: entries.into() })
    }

    /// A local write: it has seen every current entry, so it replaces them all.
    pub fn write(&mut self, dot: Dot, value: T) {
        debug_assert!(self.entries.iter().all(|e| e.0 < dot), "a local write must be newer");
        self.entries.clear();
        self.entries.push((dot, value));
    }

    /// A local remove of everything observed.
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    pub fn dots(&self) -> impl Iterator<Item = Dot> + '_ {
        self.entries.iter().map(|e| e.0)
    }

    /// Causal merge: an entry survives if both sides have it, or if the other side has
    /// never seen its dot. `self_ctx` and `other_ctx` are the full causal contexts of the
    /// two key states being merged.
    pub fn merge(&mut self, self_ctx: &VersionVector, other: &Self, other_ctx: &VersionVector) {
        self.merge_entries(self_ctx, other.entries.iter().map(|(d, v)| (*d, v)), other_ctx);
    }

    /// [`MvRegister::merge`] with the other side's entries given in dot order (a key
    /// state's compact form holds its one entry outside any register).
    pub fn merge_entries<'a>(
        &mut self,
        self_ctx: &VersionVector,
        other: impl Iterator<Item = (Dot, &'a T)> + Clone,
        other_ctx: &VersionVector,
    ) where
        T: 'a,
    {
        let mut merged: SmallVec<[(Dot, T); 1]> = SmallVec::new();
        for entry in &self.entries {
            let in_other = other.clone().any(|o| o.0 == entry.0);
            if in_other || !other_ctx.covers(entry.0) {
                merged.push(entry.clone());
            }
        }
        for (dot, value) in other {
            let in_self = self.entries.iter().any(|s| s.0 == dot);
            debug_assert!(!in_self || self.entries.iter().any(|s| s.0 == dot && s.1 == *value), "one dot must name one value");
            if !in_self && !self_ctx.covers(dot) {
                merged.push((dot, value.clone()));
            }
        }
        merged.sort_by_key(|a| a.0);
        self.entries = merged;
    }
}
