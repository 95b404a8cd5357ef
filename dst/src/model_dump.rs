//! The sequential model's DUMP and RESTORE (`--dumps` runs; see `sim/dumps.rs`).
//!
//! The model has no encoder of its own: a DUMP's payload is the node's, decoded here
//! with Meridian's decoder (checked against Redis's own payloads by its unit tests) and
//! compared with the model's value, so a DUMP that leaves out, adds or alters anything
//! is caught. A RESTORE is applied from the payload the parser decoded, with Redis's
//! rules for BUSYKEY, the TTL and a TTL already past, so every later read of the key
//! checks what the engine restored.

use bytes::Bytes;
use meridian::command::RestoreCommand;
use meridian::command::dump::{DumpedValue, decode_payload};
use meridian::protocol::Frame;

use crate::model::{Kind, Model, ModelEntry};

impl Model {
    /// DUMP `key`: the node's answer `actual` when its payload holds the model's value.
    pub fn dump(&mut self, key: &Bytes, now_ms: u64, actual: &Frame) -> Frame {
        let Some(entry) = self.live(key, now_ms) else { return Frame::Null };
        let Frame::Bulk(payload) = actual else {
            return Frame::error(format!("model: DUMP of a live {:?} key answers a payload", entry.kind()));
        };
        match decode_payload(payload) {
            Ok(value) if holds(entry, &value) => actual.clone(),
            Ok(value) => Frame::error(format!("model: the payload holds {value:?}, the key {entry:?}")),
            Err(e) => Frame::error(format!("model: the payload does not decode: {e:?}")),
        }
    }

    /// RESTORE, as Redis 7.0 checks it: an existing key without REPLACE, then the TTL,
    /// then the payload; a TTL already past writes nothing and removes the key it would
    /// have replaced.
    pub fn restore(&mut self, cmd: &RestoreCommand, now_ms: u64) -> Frame {
        let exists = self.live(&cmd.key, now_ms).is_some();
        if exists && !cmd.replace {
            return Frame::static_error("BUSYKEY Target key name already exists.");
        }
        let ttl_ms = match &cmd.ttl_ms {
            Ok(ttl_ms) => *ttl_ms,
            Err(e) => return e.clone(),
        };
        let value = match &cmd.value {
            Ok(value) => value,
            Err(e) => return e.frame(),
        };
        let expire_at_ms = match ttl_ms {
            0 => None,
            at_ms if cmd.absttl => Some(at_ms),
            after_ms => Some(now_ms.saturating_add(after_ms)),
        };
        if expire_at_ms.is_some_and(|at| at <= now_ms) {
            self.keys.remove(&cmd.key);
            return Frame::ok();
        }
        let Some(mut entry) = entry_of(value) else { return Frame::static_error("ERR model does not cover streams") };
        entry.expire_at_ms = expire_at_ms;
        self.keys.insert(cmd.key.clone(), entry);
        Frame::ok()
    }
}

/// A restored value as the model holds it: hash fields, set members and list elements
/// in the payload's order (the order they are added in), a sorted set in score order.
fn entry_of(value: &DumpedValue) -> Option<ModelEntry> {
    let mut entry = ModelEntry::default();
    match value {
        DumpedValue::String(bytes) => entry.value = bytes.to_vec(),
        DumpedValue::Hash(fields) => entry.hash = Some(fields.iter().map(|(f, v)| (f.clone(), v.to_vec())).collect()),
        DumpedValue::Set(members) => entry.set = Some(members.clone()),
        DumpedValue::Zset(members) => {
            let mut members = members.clone();
            members.sort_by(|a, b| a.1.total_cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
            entry.zset = Some(members);
        }
        DumpedValue::List(elements) => entry.list = Some(elements.clone()),
        DumpedValue::Stream(_) => return None,
    }
    Some(entry)
}

/// Whether a decoded payload holds exactly the model's value: the same type and, but
/// for a list's order, the same contents in any order.
fn holds(entry: &ModelEntry, value: &DumpedValue) -> bool {
    fn sorted<T: Ord + Clone>(items: &[T]) -> Vec<T> {
        let mut items = items.to_vec();
        items.sort();
        items
    }
    match (entry.kind(), value) {
        (Kind::String, DumpedValue::String(bytes)) => entry.value == bytes.as_ref(),
        (Kind::Hash, DumpedValue::Hash(fields)) => {
            let model: Vec<(Bytes, Vec<u8>)> = sorted(entry.hash.as_deref().unwrap_or_default());
            sorted(&fields.iter().map(|(f, v)| (f.clone(), v.to_vec())).collect::<Vec<_>>()) == model
        }
        (Kind::Set, DumpedValue::Set(members)) => sorted(members) == sorted(entry.set.as_deref().unwrap_or_default()),
        (Kind::Zset, DumpedValue::Zset(members)) => {
            let by_member = |items: &[(Bytes, f64)]| {
                let mut items = items.to_vec();
                items.sort_by(|a, b| a.0.cmp(&b.0));
                items
            };
            by_member(members) == by_member(entry.zset.as_deref().unwrap_or_default())
        }
        (Kind::List, DumpedValue::List(elements)) => Some(elements) == entry.list.as_ref(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash(fields: &[(&str, &str)]) -> ModelEntry {
        let fields = fields.iter().map(|(f, v)| (Bytes::copy_from_slice(f.as_bytes()), v.as_bytes().to_vec())).collect();
        ModelEntry { hash: Some(fields), ..ModelEntry::default() }
    }

    fn dumped_hash(fields: &[(&str, &str)]) -> DumpedValue {
        DumpedValue::Hash(
            fields.iter().map(|(f, v)| (Bytes::copy_from_slice(f.as_bytes()), Bytes::copy_from_slice(v.as_bytes()))).collect(),
        )
    }

    /// A payload holds the key's value in any element order but a list's, and nothing
    /// more, less or different.
    #[test]
    fn a_payload_holds_the_value_exactly() {
        let entry = hash(&[("a", "1"), ("b", "2")]);
        assert!(holds(&entry, &dumped_hash(&[("b", "2"), ("a", "1")])));
        assert!(!holds(&entry, &dumped_hash(&[("a", "1")])), "a field left out");
        assert!(!holds(&entry, &dumped_hash(&[("a", "1"), ("b", "3")])), "a value changed");
        assert!(!holds(&entry, &dumped_hash(&[("a", "1"), ("b", "2"), ("c", "")])), "a field added");
        assert!(!holds(&entry, &DumpedValue::String(Bytes::from_static(b"x"))), "another type");
        let list = ModelEntry { list: Some(vec![Bytes::from_static(b"x"), Bytes::from_static(b"y")]), ..ModelEntry::default() };
        assert!(holds(&list, &DumpedValue::List(vec![Bytes::from_static(b"x"), Bytes::from_static(b"y")])));
        assert!(!holds(&list, &DumpedValue::List(vec![Bytes::from_static(b"y"), Bytes::from_static(b"x")])), "a list's order");
        let zset = ModelEntry { zset: Some(vec![(Bytes::from_static(b"m"), 1.5)]), ..ModelEntry::default() };
        assert!(holds(&zset, &DumpedValue::Zset(vec![(Bytes::from_static(b"m"), 1.5)])));
        assert!(!holds(&zset, &DumpedValue::Zset(vec![(Bytes::from_static(b"m"), 2.0)])), "a score");
    }
}
