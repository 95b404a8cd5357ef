//! [`Props`]: the properties of one node or edge in a query's picture of the graph, as
//! a vector sorted by name, held at its exact size.
//!
//! Why not a `BTreeMap`: a node has a property or two, and a B-tree's one leaf has room
//! for eleven (about 900 bytes for a `String` key and a [`Value`]); a graph of 100,000
//! nodes spent 90 MB on them. A sorted vector costs its entries alone, and reads in the
//! same order (by name) as the map did, so replies are unchanged.
//!
//! Pure data structure: no clock, no I/O.

use super::value::Value;

/// Properties by name, in name order; each name once.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Props(Vec<(String, Value)>);

impl Props {
    pub const fn new() -> Props {
        Props(Vec::new())
    }

    fn find(&self, key: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(k, _)| k.as_str().cmp(key))
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.find(key).ok().map(|i| &self.0[i].1)
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.find(key).is_ok()
    }

    /// Set `key`, returning the value it replaces.
    pub fn insert(&mut self, key: String, value: Value) -> Option<Value> {
        match self.find(&key) {
            Ok(i) => Some(std::mem::replace(&mut self.0[i].1, value)),
            Err(i) => {
                // Exact size: most elements never get a second property.
                self.0.reserve_exact(1);
                self.0.insert(i, (key, value));
                None
            }
        }
    }

    pub fn remove(&mut self, key: &str) -> Option<Value> {
        let i = self.find(key).ok()?;
        let (_, value) = self.0.remove(i);
        self.0.shrink_to_fit();
        Some(value)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Entries in name order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&String, &Value)> + ExactSizeIterator + '_ {
        self.0.iter().map(|(k, v)| (k, v))
    }

    pub fn keys(&self) -> impl Iterator<Item = &String> + '_ {
        self.0.iter().map(|(k, _)| k)
    }

    pub fn values(&self) -> impl Iterator<Item = &Value> + '_ {
        self.0.iter().map(|(_, v)| v)
    }
}

impl<'a> IntoIterator for &'a Props {
    type Item = (&'a String, &'a Value);
    type IntoIter = std::iter::Map<std::slice::Iter<'a, (String, Value)>, fn(&'a (String, Value)) -> (&'a String, &'a Value)>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|(k, v)| (k, v))
    }
}

impl IntoIterator for Props {
    type Item = (String, Value);
    type IntoIter = std::vec::IntoIter<(String, Value)>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl FromIterator<(String, Value)> for Props {
    /// The last value of a name given twice wins, as a map's insert does.
    fn from_iter<I: IntoIterator<Item = (String, Value)>>(iter: I) -> Props {
        let mut props = Props::new();
        for (k, v) in iter {
            props.insert(k, v);
        }
        props
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// Props answer as the B-tree map they replace, through any sequence of writes.
    #[test]
    fn props_behave_as_a_sorted_map() {
        let mut props = Props::new();
        let mut model: BTreeMap<String, Value> = BTreeMap::new();
        let keys = ["b", "a", "c", "aa", "b", "", "c"];
        for (n, k) in keys.iter().enumerate() {
            assert_eq!(props.insert(k.to_string(), Value::Int(n as i64)), model.insert(k.to_string(), Value::Int(n as i64)));
            if n % 3 == 2 {
                assert_eq!(props.remove("a"), model.remove("a"));
            }
            assert!(props.iter().eq(model.iter()), "after {k}");
            assert_eq!((props.len(), props.is_empty()), (model.len(), model.is_empty()));
            for probe in ["a", "b", "zz"] {
                assert_eq!(props.get(probe), model.get(probe));
                assert_eq!(props.contains_key(probe), model.contains_key(probe));
            }
        }
        assert_eq!(props.0.capacity(), props.len(), "held at its exact size");
        let rebuilt: Props = model.clone().into_iter().collect();
        assert_eq!(rebuilt, props);
        assert!(props.into_iter().eq(model));
    }
}
