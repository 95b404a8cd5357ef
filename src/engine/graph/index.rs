//! A graph's derived lookups: nodes by label, and the range indexes its schema declares
//! (`CREATE INDEX FOR (n:L) ON (n.p)`, stored as `I` elements). They are never stored
//! nor replicated: [`super::store::GraphView::load`] rebuilds them from the converged
//! elements (so after a merge from a peer or a recovery they are what the data says),
//! and a query's own writes keep them up to date as it goes. An index only narrows
//! which nodes a MATCH tries; every candidate is still checked against the pattern
//! and the WHERE clause, so an index never changes an answer.
//!
//! Pure data structure: no clock, no I/O.

use std::collections::{BTreeSet, HashMap};
use std::ops::Bound;

use super::store::{ElemId, NodeData, Rank};
use super::value::Value;
use super::view::Nodes;

/// An indexed value, ordered within its kind. Integers and floats share one kind
/// (`1 = 1.0` in Cypher), keyed by their f64: two integers past 2^53 may share a key,
/// which only makes a lookup return a candidate the query's own check then drops.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Key {
    Bool(bool),
    Num(u64),
    Str(String),
}

/// The key of a value, if it has one (lists, maps, null and NaN are not indexed: they
/// never satisfy an equality or range with a scalar).
pub fn key(v: &Value) -> Option<Key> {
    match v {
        Value::Bool(b) => Some(Key::Bool(*b)),
        Value::Int(n) => Some(Key::Num(ordered(*n as f64))),
        Value::Float(f) if !f.is_nan() => Some(Key::Num(ordered(*f))),
        Value::Str(s) => Some(Key::Str(s.clone())),
        _ => None,
    }
}

/// f64 bits mapped so that unsigned order is numeric order (-0.0 and 0.0 are one key).
fn ordered(f: f64) -> u64 {
    let f = if f == 0.0 { 0.0 } else { f };
    let bits = f.to_bits();
    if bits >> 63 == 1 { !bits } else { bits | (1 << 63) }
}

/// A lookup a MATCH asks an index for.
#[derive(Clone, Debug)]
pub enum Lookup {
    Eq(Key),
    /// Every key of the bound's kind up to it (`<`, `<=`; inclusive: the check is exact).
    AtMost(Key),
    /// Every key of the bound's kind from it on (`>`, `>=`).
    AtLeast(Key),
}

/// One declared index's entries: a key and a node each (one B-tree of pairs, not a set
/// per key: most keys hold one node, and a set of one costs a B-tree leaf).
type Entries = BTreeSet<(Key, ElemId)>;

const ID_MIN: ElemId = ElemId { hlc: 0, node: 0, seq: 0 };
const ID_MAX: ElemId = ElemId { hlc: u64::MAX, node: u16::MAX, seq: u32::MAX };

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Indexes {
    /// Every node of each label.
    pub by_label: HashMap<String, BTreeSet<ElemId>>,
    /// Declared indexes, each with its rank (properties of one label list in rank order).
    pub declared: HashMap<(String, String), Rank>,
    /// Each declared index's entries, sorted by `(label, property)`: found by a
    /// search on borrowed names (a node write asks once per label and property).
    entries: Vec<(String, String, Entries)>,
}

impl Indexes {
    fn find(&self, label: &str, prop: &str) -> Result<usize, usize> {
        self.entries.binary_search_by(|(l, p, _)| (l.as_str(), p.as_str()).cmp(&(label, prop)))
    }

    pub fn is_declared(&self, label: &str, prop: &str) -> bool {
        self.find(label, prop).is_ok()
    }

    /// Declare an index and fill it from `nodes`.
    pub fn declare(&mut self, label: &str, prop: &str, rank: Rank, nodes: &Nodes) {
        let mut entries = Entries::new();
        for id in self.by_label.get(label).into_iter().flatten() {
            if let Some(k) = nodes.get(id).and_then(|n| n.props.get(prop)).and_then(key) {
                entries.insert((k, *id));
            }
        }
        self.declared.insert((label.to_owned(), prop.to_owned()), rank);
        match self.find(label, prop) {
            Ok(at) => self.entries[at].2 = entries,
            Err(at) => self.entries.insert(at, (label.to_owned(), prop.to_owned(), entries)),
        }
    }

    pub fn drop_index(&mut self, label: &str, prop: &str) {
        self.declared.remove(&(label.to_owned(), prop.to_owned()));
        if let Ok(at) = self.find(label, prop) {
            self.entries.remove(at);
        }
    }

    pub fn add_node(&mut self, id: ElemId, node: &NodeData) {
        for label in &node.labels {
            self.by_label.entry(label.clone()).or_default().insert(id);
            for (prop, v) in &node.props {
                self.add_entry(label, prop, v, id);
            }
        }
    }

    pub fn remove_node(&mut self, id: ElemId, node: &NodeData) {
        for label in &node.labels {
            if let Some(ids) = self.by_label.get_mut(label) {
                ids.remove(&id);
                // No empty sets left behind: the structure equals a fresh build.
                if ids.is_empty() {
                    self.by_label.remove(label);
                }
            }
            for (prop, v) in &node.props {
                self.remove_entry(label, prop, v, id);
            }
        }
    }

    /// A property of a node with `labels` changes from `old` to `new`.
    pub fn update_prop(&mut self, id: ElemId, labels: &[String], prop: &str, old: Option<&Value>, new: Option<&Value>) {
        for label in labels {
            if let Some(v) = old {
                self.remove_entry(label, prop, v, id);
            }
            if let Some(v) = new {
                self.add_entry(label, prop, v, id);
            }
        }
    }

    fn add_entry(&mut self, label: &str, prop: &str, v: &Value, id: ElemId) {
        if self.entries.is_empty() {
            return;
        }
        if let (Ok(at), Some(k)) = (self.find(label, prop), key(v)) {
            self.entries[at].2.insert((k, id));
        }
    }

    fn remove_entry(&mut self, label: &str, prop: &str, v: &Value, id: ElemId) {
        if self.entries.is_empty() {
            return;
        }
        if let (Ok(at), Some(k)) = (self.find(label, prop), key(v)) {
            self.entries[at].2.remove(&(k, id));
        }
    }

    /// The nodes an index holds for a lookup, or `None` when no such index exists.
    pub fn lookup(&self, label: &str, prop: &str, lookup: &Lookup) -> Option<Vec<ElemId>> {
        let entries = &self.entries[self.find(label, prop).ok()?].2;
        let (lo, hi) = match lookup {
            Lookup::Eq(k) => ((k.clone(), ID_MIN), Bound::Included((k.clone(), ID_MAX))),
            Lookup::AtMost(k) => ((kind_min(k), ID_MIN), Bound::Included((k.clone(), ID_MAX))),
            Lookup::AtLeast(k) => ((k.clone(), ID_MIN), kind_max(k)),
        };
        let mut out: Vec<ElemId> = entries.range((Bound::Included(lo), hi)).map(|(_, id)| *id).collect();
        out.sort_unstable();
        Some(out)
    }
}

fn kind_min(k: &Key) -> Key {
    match k {
        Key::Bool(_) => Key::Bool(false),
        Key::Num(_) => Key::Num(0),
        Key::Str(_) => Key::Str(String::new()),
    }
}

fn kind_max(k: &Key) -> Bound<(Key, ElemId)> {
    match k {
        Key::Bool(_) => Bound::Included((Key::Bool(true), ID_MAX)),
        Key::Num(_) => Bound::Included((Key::Num(u64::MAX), ID_MAX)),
        // Strings are the last kind.
        Key::Str(_) => Bound::Unbounded,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_keys_order_as_numbers_and_ints_meet_floats() {
        let ks: Vec<u64> = [-1e300, -2.5, -1.0, -0.0, 0.0, 1.0, 1.5, 2.0, 1e300].iter().map(|f| ordered(*f)).collect();
        assert!(ks.windows(2).all(|w| w[0] <= w[1]), "{ks:?}");
        assert_eq!(ordered(-0.0), ordered(0.0));
        assert_eq!(key(&Value::Int(2)), key(&Value::Float(2.0)));
        assert_eq!(key(&Value::Float(f64::NAN)), None);
    }
}
