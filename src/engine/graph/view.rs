//! [`GraphView`]: a shard's decoded, query-ready picture of one graph key, compact so
//! that a graph of a million edges costs tens of bytes per edge on top of its elements.
//!
//! Nodes and edges live in dense slots (a `Vec` each, indexed by a `u32`); an element
//! id maps to its slot once (one hash lookup) and everything after that follows slots:
//! each node slot holds its out- and in-adjacency as `(edge slot, far-end node slot)`
//! pairs, so a hop reads no map at all. Relationship types are interned (a small integer
//! per edge, the name once per graph), and an edge's properties are kept only for the
//! edges that have some.
//!
//! It leaves out every edge whose endpoint is gone (a node deleted in one region while
//! an edge to it was created in another): no query ever sees a dangling edge. A deleted
//! node or edge leaves a dead slot until the view is rebuilt ([`GraphView::compacted`]),
//! so slots never move under a running query. Slots are filled in id order by a decode
//! and new elements are appended, which keeps scans in id order as long as new ids are
//! larger (they come from the writer's clock, which is ahead of every id it has seen).
//!
//! Pure data structure: no clock, no I/O, never touches the stored elements.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use foldhash::fast::FixedState;

use super::ast::Direction;
use super::index::Indexes;
use super::store::{ElemId, Rank};
use super::value::Value;

pub type Props = BTreeMap<String, Value>;

/// The properties of an edge that has none (most edges).
static NO_PROPS: Props = BTreeMap::new();

type SlotMap = HashMap<ElemId, u32, FixedState>;

#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeData {
    pub labels: Vec<String>,
    pub props: Props,
}

/// An edge as a query reads it (borrowed from the view).
#[derive(Copy, Clone, Debug)]
pub struct EdgeData<'a> {
    pub typ: &'a str,
    pub src: ElemId,
    pub dst: ElemId,
    pub props: &'a Props,
}

/// An edge in its slot: 12 bytes. `src == DEAD` marks a deleted edge's slot.
#[derive(Copy, Clone, Debug)]
struct EdgeSlot {
    typ: u32,
    src: u32,
    dst: u32,
}

const DEAD: u32 = u32::MAX;

/// `(edge slot, far-end node slot)`, the unit of adjacency.
type Hop = (u32, u32);

/// A graph's nodes: slots, each node's id, and the id-to-slot map.
#[derive(Debug, Default)]
pub struct Nodes {
    ids: Vec<ElemId>,
    data: Vec<Option<NodeData>>,
    out: Vec<Vec<Hop>>,
    inc: Vec<Vec<Hop>>,
    at: SlotMap,
}

impl Nodes {
    pub fn get(&self, id: &ElemId) -> Option<&NodeData> {
        self.data[*self.at.get(id)? as usize].as_ref()
    }

    pub fn get_mut(&mut self, id: &ElemId) -> Option<&mut NodeData> {
        self.data[*self.at.get(id)? as usize].as_mut()
    }

    pub fn contains_key(&self, id: &ElemId) -> bool {
        self.at.contains_key(id)
    }

    pub fn len(&self) -> usize {
        self.at.len()
    }

    pub fn is_empty(&self) -> bool {
        self.at.is_empty()
    }

    /// Live node ids, in slot order (id order, see the module's comment).
    pub fn keys(&self) -> impl Iterator<Item = &ElemId> + '_ {
        self.ids.iter().zip(&self.data).filter(|(_, d)| d.is_some()).map(|(id, _)| id)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&ElemId, &NodeData)> + '_ {
        self.ids.iter().zip(&self.data).filter_map(|(id, d)| Some((id, d.as_ref()?)))
    }

    /// Add a node (or replace the data of one that is there).
    pub fn insert(&mut self, id: ElemId, node: NodeData) {
        if let Some(&slot) = self.at.get(&id) {
            self.data[slot as usize] = Some(node);
            return;
        }
        self.at.insert(id, self.ids.len() as u32);
        self.ids.push(id);
        self.data.push(Some(node));
        self.out.push(Vec::new());
        self.inc.push(Vec::new());
    }

    fn slot(&self, id: &ElemId) -> Option<u32> {
        self.at.get(id).copied()
    }

    fn dead_slots(&self) -> usize {
        self.ids.len() - self.at.len()
    }
}

/// A graph as one query sees it, with the query's own writes applied as it goes.
#[derive(Debug, Default)]
pub struct GraphView {
    pub nodes: Nodes,
    edge_ids: Vec<ElemId>,
    edges: Vec<EdgeSlot>,
    edge_at: SlotMap,
    /// Properties of the edges that have any, by edge slot.
    edge_props: HashMap<u32, Props, FixedState>,
    /// Interned relationship type names: an edge holds the index.
    type_names: Vec<String>,
    type_at: HashMap<String, u32>,
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
    pub fn edge_count(&self) -> usize {
        self.edge_at.len()
    }

    pub fn edge(&self, id: ElemId) -> Option<EdgeData<'_>> {
        self.edge_at.get(&id).map(|&slot| self.edge_data(slot))
    }

    fn edge_data(&self, slot: u32) -> EdgeData<'_> {
        let e = self.edges[slot as usize];
        EdgeData {
            typ: &self.type_names[e.typ as usize],
            src: self.nodes.ids[e.src as usize],
            dst: self.nodes.ids[e.dst as usize],
            props: self.edge_props.get(&slot).unwrap_or(&NO_PROPS),
        }
    }

    /// Live edges, in slot order.
    pub fn edges(&self) -> impl Iterator<Item = (ElemId, EdgeData<'_>)> + '_ {
        self.edge_ids.iter().zip(&self.edges).enumerate().filter(|(_, (_, e))| e.src != DEAD).map(|(slot, (id, _))| (*id, self.edge_data(slot as u32)))
    }

    /// Add an edge between two nodes of the view; false (and nothing added) when an
    /// endpoint is not there: the view never holds a dangling edge.
    pub fn add_edge(&mut self, id: ElemId, typ: &str, src: ElemId, dst: ElemId) -> bool {
        let (Some(s), Some(d)) = (self.nodes.slot(&src), self.nodes.slot(&dst)) else { return false };
        if self.edge_at.contains_key(&id) {
            return true;
        }
        let typ = match self.type_at.get(typ) {
            Some(t) => *t,
            None => {
                self.type_names.push(typ.to_owned());
                self.type_at.insert(typ.to_owned(), self.type_names.len() as u32 - 1);
                self.type_names.len() as u32 - 1
            }
        };
        let slot = self.edges.len() as u32;
        self.edge_ids.push(id);
        self.edges.push(EdgeSlot { typ, src: s, dst: d });
        self.edge_at.insert(id, slot);
        self.nodes.out[s as usize].push((slot, d));
        self.nodes.inc[d as usize].push((slot, s));
        true
    }

    /// Remove an edge; its properties come back.
    pub fn remove_edge(&mut self, id: ElemId) -> Option<Props> {
        let slot = self.edge_at.remove(&id)?;
        let e = std::mem::replace(&mut self.edges[slot as usize], EdgeSlot { typ: 0, src: DEAD, dst: DEAD });
        self.nodes.out[e.src as usize].retain(|(s, _)| *s != slot);
        self.nodes.inc[e.dst as usize].retain(|(s, _)| *s != slot);
        Some(self.edge_props.remove(&slot).unwrap_or_default())
    }

    /// Remove a node whose edges are already removed (see [`Self::edges_of`]).
    pub fn remove_node(&mut self, id: ElemId) -> Option<NodeData> {
        let slot = self.nodes.at.remove(&id)? as usize;
        // Edges still attached cannot stay: they would dangle.
        let attached: Vec<u32> = self.nodes.out[slot].iter().chain(&self.nodes.inc[slot]).map(|(e, _)| *e).collect();
        for e in attached {
            if self.edges[e as usize].src != DEAD {
                self.remove_edge(self.edge_ids[e as usize]);
            }
        }
        self.nodes.out[slot] = Vec::new();
        self.nodes.inc[slot] = Vec::new();
        self.nodes.data[slot].take()
    }

    /// The edges touching `node`, each once (a self-loop is both out and in), in id order.
    pub fn edges_of(&self, node: ElemId) -> Vec<ElemId> {
        let Some(slot) = self.nodes.slot(&node) else { return Vec::new() };
        let slot = slot as usize;
        let all: BTreeSet<ElemId> =
            self.nodes.out[slot].iter().chain(&self.nodes.inc[slot]).map(|(e, _)| self.edge_ids[*e as usize]).collect();
        all.into_iter().collect()
    }

    /// The edges of one of `types` (any type when empty) a pattern may follow from `at`
    /// in `dir`, each with the node at its far end. A self-loop followed both ways is
    /// one hop.
    pub fn hops(&self, at: ElemId, dir: Direction, types: &[String]) -> Vec<(ElemId, ElemId)> {
        let Some(slot) = self.nodes.slot(&at) else { return Vec::new() };
        let wanted: Vec<u32> = types.iter().filter_map(|t| self.type_at.get(t).copied()).collect();
        if !types.is_empty() && wanted.is_empty() {
            return Vec::new();
        }
        let fits = |e: u32| wanted.is_empty() || wanted.contains(&self.edges[e as usize].typ);
        let mut hops = Vec::new();
        if matches!(dir, Direction::Out | Direction::Both) {
            for &(e, far) in &self.nodes.out[slot as usize] {
                if fits(e) {
                    hops.push((self.edge_ids[e as usize], self.nodes.ids[far as usize]));
                }
            }
        }
        if matches!(dir, Direction::In | Direction::Both) {
            for &(e, far) in &self.nodes.inc[slot as usize] {
                if fits(e) && !(dir == Direction::Both && far == slot) {
                    hops.push((self.edge_ids[e as usize], self.nodes.ids[far as usize]));
                }
            }
        }
        hops
    }

    /// Properties in schema order (as FalkorDB prints them).
    pub fn ordered<'a>(&self, props: &'a Props) -> Vec<(&'a String, &'a Value)> {
        let mut out: Vec<_> = props.iter().collect();
        out.sort_by_key(|(k, _)| (self.attrs.get(*k).copied().unwrap_or((u64::MAX, u16::MAX, i64::MAX)), (*k).clone()));
        out
    }

    pub fn props_of(&self, value: &Value) -> Option<&Props> {
        match value {
            Value::Node(id) => self.nodes.get(id).map(|n| &n.props),
            Value::Edge(id) => self.edge(*id).map(|e| e.props),
            _ => None,
        }
    }

    pub fn props_of_mut(&mut self, value: &Value) -> Option<&mut Props> {
        match value {
            Value::Node(id) => self.nodes.get_mut(id).map(|n| &mut n.props),
            Value::Edge(id) => {
                let slot = *self.edge_at.get(id)?;
                Some(self.edge_props.entry(slot).or_default())
            }
            _ => None,
        }
    }

    /// Whether dead slots (deleted elements since the last decode) outweigh the live
    /// ones enough that [`Self::compacted`] is worth its linear cost.
    pub fn is_sparse(&self) -> bool {
        let dead = self.nodes.dead_slots() + (self.edges.len() - self.edge_at.len());
        dead > 1024 && dead > self.nodes.len() + self.edge_count()
    }

    /// The same graph with no dead slots: what a fresh decode would build.
    pub fn compacted(self) -> GraphView {
        let mut out = GraphView { labels: self.labels, types: self.types, attrs: self.attrs, indexes: self.indexes, ..GraphView::default() };
        let mut nodes = self.nodes;
        for (id, data) in nodes.ids.iter().zip(nodes.data.iter_mut()) {
            if let Some(data) = data.take() {
                out.nodes.insert(*id, data);
            }
        }
        for (slot, (id, e)) in self.edge_ids.iter().zip(&self.edges).enumerate() {
            if e.src == DEAD {
                continue;
            }
            let (typ, src, dst) = (&self.type_names[e.typ as usize], nodes.ids[e.src as usize], nodes.ids[e.dst as usize]);
            if out.add_edge(*id, typ, src, dst)
                && let Some(props) = self.edge_props.get(&(slot as u32)).filter(|p| !p.is_empty())
                && let Some(mine) = out.props_of_mut(&Value::Edge(*id))
            {
                *mine = props.clone();
            }
        }
        out
    }

    /// Everything a query can observe, in id order: two views are equal when this is.
    #[allow(clippy::type_complexity)]
    fn canonical(&self) -> (Vec<(ElemId, &NodeData)>, Vec<(ElemId, &str, ElemId, ElemId, &Props)>, Vec<(ElemId, Vec<ElemId>)>) {
        let mut nodes: Vec<(ElemId, &NodeData)> = self.nodes.iter().map(|(id, n)| (*id, n)).collect();
        nodes.sort_by_key(|(id, _)| *id);
        let mut edges: Vec<_> = self.edges().map(|(id, e)| (id, e.typ, e.src, e.dst, e.props)).collect();
        edges.sort_by_key(|e| e.0);
        let mut adjacency: Vec<(ElemId, Vec<ElemId>)> = nodes.iter().map(|(id, _)| (*id, self.edges_of(*id))).collect();
        adjacency.retain(|(_, e)| !e.is_empty());
        (nodes, edges, adjacency)
    }
}

/// Equal when a query could not tell them apart (slots and dead slots aside; an edge
/// whose property map is empty equals one with none).
impl PartialEq for GraphView {
    fn eq(&self, other: &GraphView) -> bool {
        self.canonical() == other.canonical()
            && self.labels == other.labels
            && self.types == other.types
            && self.attrs == other.attrs
            && self.indexes == other.indexes
    }
}
