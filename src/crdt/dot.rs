//! Dots and causal contexts.
//!
//! A [`Dot`] names one write: `(hlc, node)`. Its order (HLC first, node id second) is
//! the total order that breaks true concurrency (DESIGN §4). A [`VersionVector`] is a
//! per-key causal context: for each node, the newest of that node's writes to the key
//! that this replica has seen. Because a key's state always travels whole (deltas are
//! key states), having seen node n's write at hlc h implies having seen all of n's
//! earlier writes to that key, so one entry per node is enough.

use smallvec::SmallVec;

use super::hlc::{Hlc, NodeId};

/// One write event: when (HLC) and by whom (node). Ordered by HLC, then node id.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Dot {
    pub hlc: Hlc,
    pub node: NodeId,
}

impl Dot {
    pub fn new(hlc: Hlc, node: NodeId) -> Dot {
        Dot { hlc, node }
    }
}

impl PartialOrd for Dot {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Dot {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.hlc, self.node).cmp(&(other.hlc, other.node))
    }
}

/// Per-node maxima, sorted by node id. Most keys are written by one node, so one entry
/// is stored inline.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct VersionVector {
    entries: SmallVec<[(NodeId, Hlc); 1]>,
}

impl VersionVector {
    pub fn new() -> VersionVector {
        VersionVector::default()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn get(&self, node: NodeId) -> Hlc {
        match self.entries.binary_search_by_key(&node, |e| e.0) {
            Ok(i) => self.entries[i].1,
            Err(_) => Hlc::ZERO,
        }
    }

    /// Whether the write `dot` is known to this context.
    pub fn covers(&self, dot: Dot) -> bool {
        dot.hlc <= self.get(dot.node)
    }

    /// Record that `dot` (and so every earlier write of its node) has been seen.
    pub fn add(&mut self, dot: Dot) {
        match self.entries.binary_search_by_key(&dot.node, |e| e.0) {
            Ok(i) => {
                if dot.hlc > self.entries[i].1 {
                    self.entries[i].1 = dot.hlc;
                }
            }
            Err(i) => self.entries.insert(i, (dot.node, dot.hlc)),
        }
    }

    /// Least upper bound: per node, the larger entry.
    pub fn merge(&mut self, other: &VersionVector) {
        for &(node, hlc) in &other.entries {
            self.add(Dot::new(hlc, node));
        }
    }

    /// Greatest lower bound: per node, the smaller entry (a node missing from either
    /// is missing from the result).
    pub fn meet(&self, other: &VersionVector) -> VersionVector {
        let entries =
            self.entries.iter().filter_map(|&(node, hlc)| Some((node, hlc.min(other.get(node)))).filter(|e| e.1 > Hlc::ZERO)).collect();
        VersionVector { entries }
    }

    /// Whether every entry of `other` is covered by `self`.
    pub fn dominates(&self, other: &VersionVector) -> bool {
        other.entries.iter().all(|&(node, hlc)| hlc <= self.get(node))
    }

    /// Drop entries that `implied` already covers; used to keep the explicit part of a
    /// context minimal (a plain string carries no explicit context at all).
    pub fn remove_covered_by(&mut self, implied: &VersionVector) {
        self.entries.retain(|e| e.1 > implied.get(e.0));
    }

    /// The largest HLC of any entry (ZERO when empty).
    pub fn max_hlc(&self) -> Hlc {
        self.entries.iter().map(|e| e.1).max().unwrap_or(Hlc::ZERO)
    }

    pub fn iter(&self) -> impl Iterator<Item = Dot> + '_ {
        self.entries.iter().map(|&(node, hlc)| Dot::new(hlc, node))
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Rebuild from decoded entries: node ids must be strictly increasing.
    pub fn from_dots(dots: impl IntoIterator<Item = Dot>) -> Result<VersionVector, &'static str> {
        let mut vv = VersionVector::new();
        for dot in dots {
            if vv.entries.last().is_some_and(|last| last.0 >= dot.node) {
                return Err("version vector entries out of order");
            }
            vv.entries.push((dot.node, dot.hlc));
        }
        Ok(vv)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dot(ms: u64, node: NodeId) -> Dot {
        Dot::new(Hlc::from_parts(ms, 0), node)
    }

    #[test]
    fn dots_order_by_hlc_then_node() {
        assert!(dot(1, 9) < dot(2, 1));
        assert!(dot(2, 1) < dot(2, 2));
    }

    #[test]
    fn a_context_covers_earlier_writes_of_the_same_node_only() {
        let mut vv = VersionVector::new();
        vv.add(dot(10, 1));
        assert!(vv.covers(dot(5, 1)));
        assert!(vv.covers(dot(10, 1)));
        assert!(!vv.covers(dot(11, 1)));
        assert!(!vv.covers(dot(5, 2)));
    }

    #[test]
    fn merge_takes_per_node_maxima() {
        let mut a = VersionVector::new();
        a.add(dot(10, 1));
        a.add(dot(3, 2));
        let mut b = VersionVector::new();
        b.add(dot(7, 2));
        b.add(dot(1, 3));
        a.merge(&b);
        assert_eq!(a.get(1), Hlc::from_parts(10, 0));
        assert_eq!(a.get(2), Hlc::from_parts(7, 0));
        assert_eq!(a.get(3), Hlc::from_parts(1, 0));
        assert!(a.dominates(&b));
    }
}
