//! SET, REMOVE and DELETE: how a query changes properties, labels and elements, and
//! how each change is counted the way FalkorDB counts it.

use super::super::ast::SetItem;
use super::super::eval::Row;
use super::super::store::{self, ElemId};
use super::super::value::Value;
use super::{Exec, Schema};

impl Exec {
    // ---- SET / REMOVE / DELETE ----

    pub(super) fn set_items(&mut self, items: &[SetItem], row: &Row, remove: bool) -> Result<(), String> {
        for item in items {
            let var = match item {
                SetItem::Prop { var, .. } | SetItem::Props { var, .. } | SetItem::Labels { var, .. } => var,
            };
            let target = row.get(var).cloned().ok_or_else(|| format!("{var} not defined"))?;
            if target.is_null() {
                continue;
            }
            if !matches!(target, Value::Node(_) | Value::Edge(_)) {
                return Err(format!("Update error: alias '{var}' did not resolve to a graph entity"));
            }
            match item {
                SetItem::Prop { key, value, .. } => {
                    let v = self.env().eval(value, row)?;
                    if !v.storable() {
                        return Err(format!(
                            "Property values can only be of primitive types or arrays of primitive types, not {}",
                            v.type_name()
                        ));
                    }
                    self.set_prop(&target, key, v, false);
                }
                SetItem::Props { value, merge, .. } => {
                    let entries = match self.env().eval(value, row)? {
                        Value::Map(entries) => entries,
                        v @ (Value::Node(_) | Value::Edge(_)) => {
                            self.graph.props_of(&v).map(|p| p.iter().map(|(k, v)| (k.clone(), v.clone())).collect()).unwrap_or_default()
                        }
                        other => return Err(format!("Type mismatch: expected Map but was {}", other.type_name())),
                    };
                    if !*merge {
                        let old: Vec<String> = self.graph.props_of(&target).map(|p| p.keys().cloned().collect()).unwrap_or_default();
                        for k in old.into_iter().filter(|k| !entries.iter().any(|(e, _)| e == k)) {
                            self.set_prop(&target, &k, Value::Null, false);
                        }
                    }
                    for (k, v) in entries {
                        self.set_prop(&target, &k, v, false);
                    }
                }
                SetItem::Labels { labels, .. } => {
                    let Value::Node(id) = target else {
                        return Err("Labels can only be set on nodes".to_owned());
                    };
                    self.set_labels(id, labels, remove);
                }
            }
        }
        Ok(())
    }

    fn set_labels(&mut self, id: ElemId, labels: &[String], remove: bool) {
        let Some(node) = self.graph.nodes.get(&id) else { return };
        let mut now = node.labels.clone();
        let mut changed = 0;
        for l in labels {
            if remove && now.contains(l) {
                now.retain(|x| x != l);
                changed += 1;
            } else if !remove && !now.contains(l) {
                now.push(l.clone());
                changed += 1;
            }
        }
        if changed == 0 {
            return;
        }
        if remove {
            self.stats.labels_removed += changed;
        } else {
            // FalkorDB counts a label added to a node, not only a new label of the schema.
            self.stats.labels_added += changed;
            for l in labels {
                self.add_to_schema(Schema::Label, l);
            }
        }
        self.writes.set(store::node_name(id), store::encode_labels(&now), false);
        if let Some(node) = self.graph.nodes.get_mut(&id) {
            self.graph.indexes.remove_node(id, node);
            node.labels = now;
            self.graph.indexes.add_node(id, node);
        }
    }

    /// Set (or, with null, remove) one property, counting as FalkorDB counts: a new
    /// value is a property set, a replaced one also a property removed, the same value
    /// nothing.
    pub(super) fn set_prop(&mut self, target: &Value, key: &str, value: Value, creating: bool) {
        let id = match target {
            Value::Node(id) | Value::Edge(id) => *id,
            _ => return,
        };
        if let Value::Node(id) = target
            && let Some(node) = self.graph.nodes.get(id)
            && node.labels.iter().any(|l| self.graph.indexes.is_declared(l, key))
        {
            let (labels, old) = (node.labels.clone(), node.props.get(key).cloned());
            self.set_prop_value(target, *id, key, value, creating);
            let new = self.graph.nodes.get(id).and_then(|n| n.props.get(key)).cloned();
            self.graph.indexes.update_prop(*id, &labels, key, old.as_ref(), new.as_ref());
            return;
        }
        self.set_prop_value(target, id, key, value, creating);
    }

    fn set_prop_value(&mut self, target: &Value, id: ElemId, key: &str, value: Value, creating: bool) {
        let Some(props) = self.graph.props_of_mut(target) else { return };
        let old = props.get(key).cloned();
        match (&old, value.is_null()) {
            (None, true) => return,
            (Some(_), true) => {
                props.remove(key);
                self.stats.props_removed += 1;
                self.writes.remove(store::prop_name(id, key));
                return;
            }
            (Some(o), false) if o.equals(&value) == Some(true) && o.type_name() == value.type_name() => return,
            (Some(_), false) => self.stats.props_removed += 1,
            (None, false) => {}
        }
        self.stats.props_set += 1;
        self.writes.set(store::prop_name(id, key), store::encode_value(&value), creating);
        props.insert(key.to_owned(), value);
        self.add_to_schema(Schema::Attr, key);
    }

    pub(super) fn delete(&mut self, target: Value) -> Result<(), String> {
        match target {
            Value::Null => Ok(()),
            Value::Node(id) => {
                if !self.graph.nodes.contains_key(&id) {
                    return Ok(());
                }
                for edge in self.graph.edges_of(id) {
                    self.delete_edge(edge);
                }
                let node = self.graph.remove_node(id).unwrap_or_default();
                self.graph.indexes.remove_node(id, &node);
                for k in node.props.keys() {
                    self.writes.remove(store::prop_name(id, k));
                }
                self.writes.remove(store::node_name(id));
                self.stats.nodes_deleted += 1;
                Ok(())
            }
            Value::Edge(id) => {
                self.delete_edge(id);
                Ok(())
            }
            Value::List(items) => items.into_iter().try_for_each(|v| self.delete(v)),
            other => Err(format!("Delete type mismatch, expecting either Node or Relationship but was {}", other.type_name())),
        }
    }

    fn delete_edge(&mut self, id: ElemId) {
        let Some(props) = self.graph.remove_edge(id) else { return };
        for k in props.keys() {
            self.writes.remove(store::prop_name(id, k));
        }
        self.writes.remove(store::edge_name(id));
        self.stats.rels_deleted += 1;
    }
}
