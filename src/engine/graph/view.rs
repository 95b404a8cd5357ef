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

use std::collections::{BTreeSet, HashMap};

use foldhash::fast::FixedState;

use super::ast::Direction;
use super::index::Indexes;
use super::store::{ElemId, Rank};
use super::value::Value;

pub use super::props::Props;

/// The properties of an edge that has none (most edges).
static NO_PROPS: Props = Props::new();

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
    /// Each edge slot's id, in ascending order so that an id finds its slot by binary
    /// search (no hash map of a million edges). An edge appended out of order (its
    /// writer's clock behind an id already here: rare) holds a copy of the previous id
    /// here and its own in `unordered`, until the view is next rebuilt.
    edge_ids: Vec<ElemId>,
    unordered: HashMap<ElemId, u32, FixedState>,
    unordered_ids: HashMap<u32, ElemId, FixedState>,
    edges: Vec<EdgeSlot>,
    live_edges: usize,
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
        self.live_edges
    }

    pub fn edge(&self, id: ElemId) -> Option<EdgeData<'_>> {
        self.edge_slot(id).map(|slot| self.edge_data(slot))
    }

    /// The live slot of edge `id`.
    fn edge_slot(&self, id: ElemId) -> Option<u32> {
        let slot = match self.unordered.get(&id) {
            Some(slot) => *slot,
            None => {
                // The first slot holding `id` is its own (copies come after it).
                let at = self.edge_ids.partition_point(|x| *x < id);
                if self.edge_ids.get(at) != Some(&id) || self.unordered_ids.contains_key(&(at as u32)) {
                    return None;
                }
                at as u32
            }
        };
        (self.edges[slot as usize].src != DEAD).then_some(slot)
    }

    fn edge_id(&self, slot: u32) -> ElemId {
        if !self.unordered_ids.is_empty()
            && let Some(id) = self.unordered_ids.get(&slot)
        {
            return *id;
        }
        self.edge_ids[slot as usize]
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
        (0..self.edges.len() as u32).filter(|s| self.edges[*s as usize].src != DEAD).map(|s| (self.edge_id(s), self.edge_data(s)))
    }

    /// Add an edge between two nodes of the view; false (and nothing added) when an
    /// endpoint is not there: the view never holds a dangling edge.
    pub fn add_edge(&mut self, id: ElemId, typ: &str, src: ElemId, dst: ElemId) -> bool {
        let (Some(s), Some(d)) = (self.nodes.slot(&src), self.nodes.slot(&dst)) else { return false };
        if self.edge_slot(id).is_some() {
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
        match self.edge_ids.last() {
            Some(last) if *last >= id => {
                self.edge_ids.push(*last);
                self.unordered.insert(id, slot);
                self.unordered_ids.insert(slot, id);
            }
            _ => self.edge_ids.push(id),
        }
        self.edges.push(EdgeSlot { typ, src: s, dst: d });
        self.live_edges += 1;
        self.nodes.out[s as usize].push((slot, d));
        self.nodes.inc[d as usize].push((slot, s));
        true
    }

    /// Remove an edge; its properties come back.
    pub fn remove_edge(&mut self, id: ElemId) -> Option<Props> {
        let slot = self.edge_slot(id)?;
        self.live_edges -= 1;
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
                self.remove_edge(self.edge_id(e));
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
        let all: BTreeSet<ElemId> = self.nodes.out[slot].iter().chain(&self.nodes.inc[slot]).map(|(e, _)| self.edge_id(*e)).collect();
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
                    hops.push((self.edge_id(e), self.nodes.ids[far as usize]));
                }
            }
        }
        if matches!(dir, Direction::In | Direction::Both) {
            for &(e, far) in &self.nodes.inc[slot as usize] {
                if fits(e) && !(dir == Direction::Both && far == slot) {
                    hops.push((self.edge_id(e), self.nodes.ids[far as usize]));
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
                let slot = self.edge_slot(*id)?;
                Some(self.edge_props.entry(slot).or_default())
            }
            _ => None,
        }
    }

    /// Whether dead slots (deleted elements since the last decode) outweigh the live
    /// ones enough that [`Self::compacted`] is worth its linear cost.
    pub fn is_sparse(&self) -> bool {
        let dead = self.nodes.dead_slots() + (self.edges.len() - self.live_edges);
        (dead > 1024 && dead > self.nodes.len() + self.edge_count()) || self.unordered.len() > 1024
    }

    /// The same graph with no dead slots: what a fresh decode would build.
    pub fn compacted(self) -> GraphView {
        // Edges in id order: the rebuilt view needs no `unordered` entries.
        let mut live: Vec<(ElemId, u32)> =
            (0..self.edges.len() as u32).filter(|s| self.edges[*s as usize].src != DEAD).map(|s| (self.edge_id(s), s)).collect();
        live.sort_unstable();
        let mut out =
            GraphView { labels: self.labels, types: self.types, attrs: self.attrs, indexes: self.indexes, ..GraphView::default() };
        let mut nodes = self.nodes;
        for (id, data) in nodes.ids.iter().zip(nodes.data.iter_mut()) {
            if let Some(data) = data.take() {
                out.nodes.insert(*id, data);
            }
        }
        for (id, slot) in live {
            let e = self.edges[slot as usize];
            let (typ, src, dst) = (&self.type_names[e.typ as usize], nodes.ids[e.src as usize], nodes.ids[e.dst as usize]);
            if out.add_edge(id, typ, src, dst)
                && let Some(props) = self.edge_props.get(&slot).filter(|p| !p.is_empty())
                && let Some(mine) = out.props_of_mut(&Value::Edge(id))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn id(hlc: u64) -> ElemId {
        ElemId { hlc, node: 1, seq: 0 }
    }

    /// Edges appended out of id order (a writer whose clock is behind) are still found
    /// by id, removed, and put in order by a rebuild that changes nothing a query sees.
    #[test]
    fn edges_out_of_id_order_are_found_removed_and_rebuilt() {
        let mut view = GraphView::default();
        for n in [1, 2, 3] {
            view.nodes.insert(id(n), NodeData::default());
        }
        // Edge ids 50, 20 (out of order), 60, 10 (out of order), 70.
        let edges = [(50, 1, 2, "A"), (20, 2, 3, "B"), (60, 1, 3, "A"), (10, 3, 1, "B"), (70, 1, 1, "A")];
        for (e, s, d, t) in edges {
            assert!(view.add_edge(id(e), t, id(s), id(d)));
        }
        assert!(!view.add_edge(id(80), "A", id(1), id(9)), "an edge to a missing node is refused");
        for (e, s, d, t) in edges {
            let data = view.edge(id(e)).expect("every edge is found by id");
            assert_eq!((data.typ, data.src, data.dst), (t, id(s), id(d)), "edge {e}");
        }
        assert!(view.edge(id(55)).is_none() && view.edge(id(80)).is_none());
        let mut out: Vec<ElemId> = view.hops(id(1), Direction::Out, &["A".to_owned()]).into_iter().map(|(e, _)| e).collect();
        out.sort();
        assert_eq!(out, vec![id(50), id(60), id(70)]);
        // The self-loop is one hop when followed both ways.
        assert_eq!(view.hops(id(1), Direction::Both, &[]).len(), 4);
        assert_eq!(view.edges_of(id(3)), vec![id(10), id(20), id(60)]);

        view.props_of_mut(&Value::Edge(id(10))).expect("edge 10 is there").insert("w".to_owned(), Value::Int(7));
        assert_eq!(view.remove_edge(id(20)).map(|p| p.len()), Some(0));
        assert!(view.edge(id(20)).is_none() && view.remove_edge(id(20)).is_none());
        assert_eq!(view.edge_count(), 4);
        assert_eq!(view.remove_node(id(2)), Some(NodeData::default()));
        assert!(view.edge(id(50)).is_none(), "removing a node removes its edges");
        assert_eq!(view.edge_count(), 3);

        let rebuilt = std::mem::take(&mut view).compacted();
        assert!(rebuilt.unordered.is_empty() && rebuilt.edges.len() == 3);
        assert_eq!(rebuilt.edge(id(10)).map(|e| e.props.get("w").cloned()), Some(Some(Value::Int(7))));
        let ids: Vec<ElemId> = rebuilt.edges().map(|(e, _)| e).collect();
        assert_eq!(ids, vec![id(10), id(60), id(70)], "a rebuilt view holds its edges in id order");
        assert_eq!(rebuilt.edges_of(id(1)), vec![id(10), id(60), id(70)]);
    }
}
