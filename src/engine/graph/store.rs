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
//! [`GraphView::load`] decodes the elements into a query's picture of the graph (the
//! compact structure is in `view.rs`). It leaves
//! out every edge whose endpoint is gone (a node deleted in one region while an edge to
//! it was created in another): no query ever sees a dangling edge. Properties whose
//! element is gone are left out the same way.
//!
//! This module decodes and buffers; it never reads a clock or does I/O.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};

use foldhash::fast::FixedState;

use bytes::Bytes;

use super::value::Value;
use crate::engine::kv::element::ElementRef;
use crate::engine::kv::elements::Elements;

pub use super::view::{EdgeData, GraphView, NodeData, Props};

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

/// The elements of a graph part, decoded as [`GraphView::load`] walks them (schema
/// entries go straight into the view).
#[derive(Default)]
struct Decoded {
    props: Vec<(ElemId, String, Value)>,
    nodes: Vec<(ElemId, NodeData)>,
    edges: Vec<(ElemId, String, ElemId, ElemId)>,
    declared: Vec<(String, String, Rank)>,
}

impl Decoded {
    /// Decode one live element; one that does not decode is skipped (it cannot come
    /// from this code; a newer writer's element kinds are ignored, not misread).
    fn add(&mut self, view: &mut GraphView, name: &[u8], state: ElementRef<'_>) {
        let Some(value) = state.read() else { return };
        let value = value.to_bytes();
        let Some((&tag, rest)) = name.split_first() else { return };
        match tag {
            b'I' => {
                let (Some((label, prop)), Some(dot), Some((Value::Int(seq), _))) =
                    (index_entry(rest), state.newest_dot(), Value::decode(&value))
                else {
                    return;
                };
                self.declared.push((label, prop, (dot.hlc.0, dot.node, seq)));
            }
            b'L' | b'T' | b'A' => {
                let (Ok(entry), Some(dot)) = (std::str::from_utf8(rest), state.newest_dot()) else { return };
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
                let (Some(id), Some((Value::List(labels), _))) = (ElemId::from_bytes(rest), Value::decode(&value)) else { return };
                let labels = labels.into_iter().filter_map(|l| if let Value::Str(s) = l { Some(s) } else { None }).collect();
                self.nodes.push((id, NodeData { labels, props: Props::new() }));
            }
            b'E' => {
                let (Some(id), Some(src), Some(dst)) =
                    (ElemId::from_bytes(rest), ElemId::from_bytes(&value), value.get(ID_BYTES..).and_then(ElemId::from_bytes))
                else {
                    return;
                };
                let Some((Value::Str(typ), _)) = Value::decode(&value[2 * ID_BYTES..]) else { return };
                self.edges.push((id, typ, src, dst));
            }
            b'P' => {
                let (Some(id), Some(key), Some((v, _))) =
                    (ElemId::from_bytes(rest), rest.get(ID_BYTES..).and_then(|k| std::str::from_utf8(k).ok()), Value::decode(&value))
                else {
                    return;
                };
                self.props.push((id, key.to_owned(), v));
            }
            _ => {}
        }
    }
}

impl GraphView {
    /// Decode a graph part. Elements that do not decode are skipped (they cannot come
    /// from this code; a newer writer's element kinds are ignored, not misread).
    pub fn load(elements: Option<&Elements>) -> GraphView {
        let mut view = GraphView::default();
        let Some(elements) = elements else {
            return view;
        };
        let mut decoded = Decoded::default();
        // A graph's elements are in chunks (see `Elements::for_each_entry`).
        elements.for_each_entry(|name, state| {
            if state.exists() {
                decoded.add(&mut view, name, state);
            }
        });
        let Decoded { props, mut nodes, mut edges, declared } = decoded;
        // Slots are filled in id order: scans then run in id order.
        nodes.sort_unstable_by_key(|(id, _)| *id);
        edges.sort_unstable_by_key(|(id, ..)| *id);
        // The read-time rule of DESIGN §5: an edge whose endpoint is gone is not there.
        if crate::bugs::active(crate::bugs::Bug::GraphEdgeOutlivesEndpoint) {
            // Planted: the edge stays and its missing endpoint shows as a bare node.
            let known: HashSet<ElemId> = nodes.iter().map(|(id, _)| *id).collect();
            let mut missing: Vec<ElemId> = edges.iter().flat_map(|e| [e.2, e.3]).filter(|id| !known.contains(id)).collect();
            missing.sort_unstable();
            missing.dedup();
            nodes.extend(missing.into_iter().map(|id| (id, NodeData::default())));
            nodes.sort_unstable_by_key(|(id, _)| *id);
        }
        for (id, node) in nodes {
            view.nodes.insert(id, node);
        }
        // An edge whose endpoint is not a node of the view is left out here.
        for (id, typ, src, dst) in edges {
            view.add_edge(id, &typ, src, dst);
        }
        for (id, key, v) in props {
            let target = if view.nodes.contains_key(&id) { Value::Node(id) } else { Value::Edge(id) };
            if let Some(props) = view.props_of_mut(&target) {
                props.insert(key, v);
            }
        }
        let ids: Vec<ElemId> = view.nodes.keys().copied().collect();
        for id in ids {
            if let Some(node) = view.nodes.get(&id) {
                view.indexes.add_node(id, node);
            }
        }
        for (label, prop, rank) in declared {
            view.indexes.declare(&label, &prop, rank, &view.nodes);
        }
        view
    }
}

/// The element writes a query makes, in order, each name once (the last write of a
/// name wins: a query that sets a property twice writes it once).
#[derive(Default)]
pub struct Writes {
    names: Vec<Bytes>,
    values: Vec<Option<Bytes>>,
    /// Whether this query created the name: removing it again needs no write at all.
    created: Vec<bool>,
    /// Where each name is in `names` (a fixed seed: names are this query's own ids and
    /// the client's property names, and the map never outlives the query).
    index: HashMap<Bytes, usize, FixedState>,
}

impl Writes {
    pub fn set(&mut self, name: Bytes, value: Bytes, creates: bool) {
        let i = self.put(name, Some(value));
        self.created[i] |= creates;
    }

    pub fn remove(&mut self, name: Bytes) {
        if let Some(&i) = self.index.get(&name)
            && self.created[i]
        {
            // Created and removed by the same query: nothing to ship. A tombstone
            // value (None) with no dot of its own would remove nothing anyway.
            self.values[i] = None;
            return;
        }
        self.put(name, None);
    }

    fn put(&mut self, name: Bytes, value: Option<Bytes>) -> usize {
        match self.index.entry(name) {
            Entry::Occupied(at) => {
                self.values[*at.get()] = value;
                *at.get()
            }
            Entry::Vacant(at) => {
                let i = self.names.len();
                self.names.push(at.key().clone());
                at.insert(i);
                self.values.push(value);
                self.created.push(false);
                i
            }
        }
    }

    /// The writes to make: names, and each name's value (`None`: remove it). Names
    /// created and removed within the query are left out.
    pub fn into_parts(self) -> (Vec<Bytes>, Vec<Option<Bytes>>) {
        self.names
            .into_iter()
            .zip(self.values)
            .zip(self.created)
            .filter(|((_, v), created)| v.is_some() || !created)
            .map(|(w, _)| w)
            .unzip()
    }
}
