//! How a graph lives in a key: every node, edge, property and label is one element of
//! the key's graph part ([`Part::Graph`]), so the key-value engine's add-wins elements,
//! deltas, codec, Merkle leaves, persistence and anti-entropy carry graphs unchanged.
//!
//! Element names (all ids are [`ElemId`], made from the creating write's dot):
//! - `N` id: a node; its value is the node's labels.
//! - `E` id: an edge; its value is its type and its two endpoints' ids.
//! - `P` id name: property `name` of node or edge `id` (a last-writer-wins register).
//! - `L` label: the label exists in the graph's schema ("Labels added" counts new ones);
//!   its value is its index among the schema entries its write added (see [`Rank`]).
//! - `T` type: the relationship type exists in the schema; the value as for `L`.
//! - `I` label 0 name: a range index on property `name` of nodes labelled `label`; the
//!   value as for `L`. Only the declaration is stored: the entries are derived.
//! - `A` name: the property name exists in the schema; properties print in the order
//!   their names entered it (the element's dot, then its index in the writing query).
//!
//! [`GraphView`] is a query's in-memory picture of the converged elements. It leaves
//! out every edge whose endpoint is gone (a node deleted in one region while an edge to
//! it was created in another): no query ever sees a dangling edge. Properties whose
//! element is gone are left out the same way.
//!
//! This module decodes and buffers; it never reads a clock or does I/O.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use bytes::Bytes;

use super::index::Indexes;
use super::value::Value;
use crate::engine::kv::elements::Elements;

/// A node's or an edge's identity: the dot of the write that created it and its index
/// among the elements that write created. Unique in the cluster, never reused.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ElemId {
    pub hlc: u64,
    pub node: u16,
    pub seq: u32,
}

pub const ID_BYTES: usize = 14;

impl ElemId {
    pub fn to_bytes(self) -> [u8; ID_BYTES] {
        let mut out = [0u8; ID_BYTES];
        out[..8].copy_from_slice(&self.hlc.to_be_bytes());
        out[8..10].copy_from_slice(&self.node.to_be_bytes());
        out[10..].copy_from_slice(&self.seq.to_be_bytes());
        out
    }

    pub fn from_bytes(bytes: &[u8]) -> Option<ElemId> {
        if bytes.len() < ID_BYTES {
            return None;
        }
        Some(ElemId {
            hlc: u64::from_be_bytes(bytes[..8].try_into().ok()?),
            node: u16::from_be_bytes(bytes[8..10].try_into().ok()?),
            seq: u32::from_be_bytes(bytes[10..14].try_into().ok()?),
        })
    }

    /// The integer `id()` returns: the same on every node (a hash of the id, 63 bits so
    /// it stays a non-negative integer). FalkorDB's ids are dense row numbers that it
    /// reuses; ours are stable across regions instead.
    pub fn visible(self) -> i64 {
        (xxhash_rust::xxh3::xxh3_64(&self.to_bytes()) >> 1) as i64
    }
}

pub fn node_name(id: ElemId) -> Bytes {
    prefixed(b'N', id, b"")
}

pub fn edge_name(id: ElemId) -> Bytes {
    prefixed(b'E', id, b"")
}

pub fn prop_name(id: ElemId, key: &str) -> Bytes {
    prefixed(b'P', id, key.as_bytes())
}

pub fn attr_name(key: &str) -> Bytes {
    let mut name = Vec::with_capacity(1 + key.len());
    name.push(b'A');
    name.extend_from_slice(key.as_bytes());
    Bytes::from(name)
}

pub fn label_name(label: &str) -> Bytes {
    schema_name(b'L', label)
}

pub fn type_name(typ: &str) -> Bytes {
    schema_name(b'T', typ)
}

/// An index on `prop` of the nodes labelled `label`: `I` label 0x00 prop.
pub fn index_name(label: &str, prop: &str) -> Bytes {
    let mut name = Vec::with_capacity(2 + label.len() + prop.len());
    name.push(b'I');
    name.extend_from_slice(label.as_bytes());
    name.push(0);
    name.extend_from_slice(prop.as_bytes());
    Bytes::from(name)
}

fn index_entry(rest: &[u8]) -> Option<(String, String)> {
    let at = rest.iter().position(|b| *b == 0)?;
    Some((std::str::from_utf8(&rest[..at]).ok()?.to_owned(), std::str::from_utf8(&rest[at + 1..]).ok()?.to_owned()))
}

fn schema_name(tag: u8, entry: &str) -> Bytes {
    let mut name = Vec::with_capacity(1 + entry.len());
    name.push(tag);
    name.extend_from_slice(entry.as_bytes());
    Bytes::from(name)
}

/// Where a schema entry (label, relationship type, property name) stands: the dot of
/// the write that added it, then its index among the entries that write added. Entries
/// sort by rank, so a graph's schema lists only grow at the end (FalkorDB's clients
/// cache `db.labels()` and friends and map the compact replies' indexes into them),
/// except when a peer's concurrent addition merges in: the rank is still the same on
/// every node.
pub type Rank = (u64, u16, i64);

/// Schema entries in rank order (ties, which only old data has, by name).
pub fn schema_order(entries: &HashMap<String, Rank>) -> Vec<&str> {
    let mut out: Vec<(&Rank, &str)> = entries.iter().map(|(k, r)| (r, k.as_str())).collect();
    out.sort();
    out.into_iter().map(|(_, k)| k).collect()
}

fn prefixed(tag: u8, id: ElemId, rest: &[u8]) -> Bytes {
    let mut name = Vec::with_capacity(1 + ID_BYTES + rest.len());
    name.push(tag);
    name.extend_from_slice(&id.to_bytes());
    name.extend_from_slice(rest);
    Bytes::from(name)
}

pub fn encode_labels(labels: &[String]) -> Bytes {
    let mut out = Vec::new();
    Value::List(labels.iter().map(|l| Value::Str(l.clone())).collect()).encode(&mut out);
    Bytes::from(out)
}

pub fn encode_edge(typ: &str, src: ElemId, dst: ElemId) -> Bytes {
    let mut out = Vec::with_capacity(2 * ID_BYTES + 5 + typ.len());
    out.extend_from_slice(&src.to_bytes());
    out.extend_from_slice(&dst.to_bytes());
    Value::Str(typ.to_owned()).encode(&mut out);
    Bytes::from(out)
}

pub fn encode_value(value: &Value) -> Bytes {
    let mut out = Vec::new();
    value.encode(&mut out);
    Bytes::from(out)
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeData {
    pub labels: Vec<String>,
    pub props: BTreeMap<String, Value>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct EdgeData {
    pub typ: String,
    pub src: ElemId,
    pub dst: ElemId,
    pub props: BTreeMap<String, Value>,
}

/// A graph as one query sees it, with the query's own writes applied as it goes.
#[derive(Debug, Default, PartialEq)]
pub struct GraphView {
    pub nodes: BTreeMap<ElemId, NodeData>,
    pub edges: BTreeMap<ElemId, EdgeData>,
    /// Edges leaving and entering each node, in id order.
    pub out: HashMap<ElemId, BTreeSet<ElemId>>,
    pub inc: HashMap<ElemId, BTreeSet<ElemId>>,
    /// The labels of the graph's schema, each with its [`Rank`].
    pub labels: HashMap<String, Rank>,
    /// The relationship types of the schema, each with its rank.
    pub types: HashMap<String, Rank>,
    /// The property names of the schema, each with its rank.
    pub attrs: HashMap<String, Rank>,
    /// Nodes by label and the declared indexes (derived: see [`super::index`]).
    pub indexes: Indexes,
}

impl GraphView {
    /// Decode a graph part. Elements that do not decode are skipped (they cannot come
    /// from this code; a newer writer's element kinds are ignored, not misread).
    pub fn load(elements: Option<&Elements>) -> GraphView {
        let mut view = GraphView::default();
        let Some(elements) = elements else {
            return view;
        };
        let mut props: Vec<(ElemId, String, Value)> = Vec::new();
        let mut declared: Vec<(String, String, Rank)> = Vec::new();
        for (name, state) in elements.iter() {
            let Some(value) = state.read() else { continue };
            let value = value.to_bytes();
            let Some((&tag, rest)) = name.split_first() else { continue };
            match tag {
                b'I' => {
                    let (Some((label, prop)), Some(dot), Some((Value::Int(seq), _))) =
                        (index_entry(rest), state.newest_dot(), Value::decode(&value))
                    else {
                        continue;
                    };
                    declared.push((label, prop, (dot.hlc.0, dot.node, seq)));
                }
                b'L' | b'T' | b'A' => {
                    let (Ok(entry), Some(dot)) = (std::str::from_utf8(rest), state.newest_dot()) else { continue };
                    // Labels written before they had ranks hold "1": they rank by dot.
                    let seq = match Value::decode(&value) {
                        Some((Value::Int(seq), _)) => seq,
                        _ => 0,
                    };
                    let entries = match tag {
                        b'L' => &mut view.labels,
                        b'T' => &mut view.types,
                        _ => &mut view.attrs,
                    };
                    entries.insert(entry.to_owned(), (dot.hlc.0, dot.node, seq));
                }
                b'N' => {
                    let (Some(id), Some((Value::List(labels), _))) = (ElemId::from_bytes(rest), Value::decode(&value)) else { continue };
                    let labels = labels.into_iter().filter_map(|l| if let Value::Str(s) = l { Some(s) } else { None }).collect();
                    view.nodes.insert(id, NodeData { labels, props: BTreeMap::new() });
                }
                b'E' => {
                    let (Some(id), Some(src), Some(dst)) =
                        (ElemId::from_bytes(rest), ElemId::from_bytes(&value), value.get(ID_BYTES..).and_then(ElemId::from_bytes))
                    else {
                        continue;
                    };
                    let Some((Value::Str(typ), _)) = Value::decode(&value[2 * ID_BYTES..]) else { continue };
                    view.edges.insert(id, EdgeData { typ, src, dst, props: BTreeMap::new() });
                }
                b'P' => {
                    let (Some(id), Some(key), Some((v, _))) =
                        (ElemId::from_bytes(rest), rest.get(ID_BYTES..).and_then(|k| std::str::from_utf8(k).ok()), Value::decode(&value))
                    else {
                        continue;
                    };
                    props.push((id, key.to_owned(), v));
                }
                _ => {}
            }
        }
        // The read-time rule of DESIGN §5: an edge whose endpoint is gone is not there.
        if crate::bugs::active(crate::bugs::Bug::GraphEdgeOutlivesEndpoint) {
            // Planted: the edge stays and its missing endpoint shows as a bare node.
            let missing: Vec<ElemId> =
                view.edges.values().flat_map(|e| [e.src, e.dst]).filter(|id| !view.nodes.contains_key(id)).collect();
            for id in missing {
                view.nodes.entry(id).or_default();
            }
        } else {
            let nodes = &view.nodes;
            view.edges.retain(|_, e| nodes.contains_key(&e.src) && nodes.contains_key(&e.dst));
        }
        for (id, key, v) in props {
            if let Some(node) = view.nodes.get_mut(&id) {
                node.props.insert(key, v);
            } else if let Some(edge) = view.edges.get_mut(&id) {
                edge.props.insert(key, v);
            }
        }
        for (id, node) in &view.nodes {
            view.indexes.add_node(*id, node);
        }
        for (label, prop, rank) in declared {
            view.indexes.declare(&label, &prop, rank, &view.nodes);
        }
        for (id, edge) in &view.edges {
            view.out.entry(edge.src).or_default().insert(*id);
            view.inc.entry(edge.dst).or_default().insert(*id);
        }
        view
    }

    /// The edges touching `node`, each once (a self-loop is both out and in).
    pub fn edges_of(&self, node: ElemId) -> Vec<ElemId> {
        let mut all: BTreeSet<ElemId> = self.out.get(&node).cloned().unwrap_or_default();
        if let Some(inc) = self.inc.get(&node) {
            all.extend(inc.iter().copied());
        }
        all.into_iter().collect()
    }

    /// Properties in schema order (as FalkorDB prints them).
    pub fn ordered<'a>(&self, props: &'a BTreeMap<String, Value>) -> Vec<(&'a String, &'a Value)> {
        let mut out: Vec<_> = props.iter().collect();
        out.sort_by_key(|(k, _)| (self.attrs.get(*k).copied().unwrap_or((u64::MAX, u16::MAX, i64::MAX)), (*k).clone()));
        out
    }

    pub fn props_of(&self, value: &Value) -> Option<&BTreeMap<String, Value>> {
        match value {
            Value::Node(id) => self.nodes.get(id).map(|n| &n.props),
            Value::Edge(id) => self.edges.get(id).map(|e| &e.props),
            _ => None,
        }
    }

    pub fn props_of_mut(&mut self, value: &Value) -> Option<&mut BTreeMap<String, Value>> {
        match value {
            Value::Node(id) => self.nodes.get_mut(id).map(|n| &mut n.props),
            Value::Edge(id) => self.edges.get_mut(id).map(|e| &mut e.props),
            _ => None,
        }
    }

    pub fn remove_edge(&mut self, id: ElemId) -> Option<EdgeData> {
        let edge = self.edges.remove(&id)?;
        // No empty sets are left behind: the view stays equal to a fresh decode.
        if let Some(out) = self.out.get_mut(&edge.src) {
            out.remove(&id);
            if out.is_empty() {
                self.out.remove(&edge.src);
            }
        }
        if let Some(inc) = self.inc.get_mut(&edge.dst) {
            inc.remove(&id);
            if inc.is_empty() {
                self.inc.remove(&edge.dst);
            }
        }
        Some(edge)
    }
}

/// The element writes a query makes, in order, each name once (the last write of a
/// name wins: a query that sets a property twice writes it once).
#[derive(Default)]
pub struct Writes {
    names: Vec<Bytes>,
    values: Vec<Option<Bytes>>,
    index: HashMap<Bytes, usize>,
    /// Names this query created: removing one of them again needs no write at all.
    created: BTreeSet<Bytes>,
}

impl Writes {
    pub fn set(&mut self, name: Bytes, value: Bytes, creates: bool) {
        if creates {
            self.created.insert(name.clone());
        }
        self.put(name, Some(value));
    }

    pub fn remove(&mut self, name: Bytes) {
        if self.created.contains(&name) {
            if let Some(i) = self.index.get(&name) {
                // Created and removed by the same query: nothing to ship. A tombstone
                // value (None) with no dot of its own would remove nothing anyway.
                self.values[*i] = None;
            }
            return;
        }
        self.put(name, None);
    }

    fn put(&mut self, name: Bytes, value: Option<Bytes>) {
        match self.index.get(&name) {
            Some(i) => self.values[*i] = value,
            None => {
                self.index.insert(name.clone(), self.names.len());
                self.names.push(name);
                self.values.push(value);
            }
        }
    }

    /// The writes to make: names, and each name's value (`None`: remove it). Names
    /// created and removed within the query are left out.
    pub fn into_parts(self) -> (Vec<Bytes>, Vec<Option<Bytes>>) {
        let created = self.created;
        self.names.into_iter().zip(self.values).filter(|(n, v)| v.is_some() || !created.contains(n)).unzip()
    }
}
