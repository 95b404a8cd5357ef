//! The sequential model of lists (LPUSH family) on one node: a list is its elements in
//! order, a plain vector, written without the engine's positions or CRDT machinery.
//!
//! Covers what the workload sends: LPUSH, RPUSH, LPUSHX, RPUSHX, LPOP and RPOP (with
//! and without a count), LLEN, LINDEX, LRANGE, LSET, LINSERT, LREM and LTRIM, with Redis
//! 7.0's replies. Never reads the engine's state.

use bytes::Bytes;
use meridian::command::errors;
use meridian::command::list::{End, ListCommand};
use meridian::protocol::Frame;

use crate::model::{Model, ModelEntry};

/// Redis's range normalisation (LRANGE, LTRIM): `Some((start, stop))` inclusive.
fn range(start: i64, stop: i64, len: usize) -> Option<(usize, usize)> {
    let len = len as i64;
    let start = if start < 0 { (len + start).max(0) } else { start };
    let stop = if stop < 0 { len + stop } else { stop };
    if start > stop || start >= len {
        return None;
    }
    Some((start as usize, stop.min(len - 1) as usize))
}

/// A Redis index (negative from the tail) into a list of `len`, if in range.
fn index(i: i64, len: usize) -> Option<usize> {
    let i = if i < 0 { i + len as i64 } else { i };
    (0..len as i64).contains(&i).then_some(i as usize)
}

impl Model {
    /// A live list's elements (`None` for a missing key); the caller checked the type.
    fn elements(&mut self, key: &Bytes, now_ms: u64) -> Option<Vec<Bytes>> {
        self.live(key, now_ms).and_then(|e| e.list.clone())
    }

    /// Store a list, keeping its TTL; an empty list is no key.
    fn put_elements(&mut self, key: &Bytes, elements: Vec<Bytes>, now_ms: u64) {
        let expire_at_ms = self.live(key, now_ms).and_then(|e| e.expire_at_ms);
        if elements.is_empty() {
            self.keys.remove(key);
        } else {
            self.keys.insert(key.clone(), ModelEntry { expire_at_ms, list: Some(elements), ..ModelEntry::default() });
        }
    }

    /// The list commands, on a live list or a missing key (the caller answered
    /// WRONGTYPE for other types).
    pub(crate) fn apply_list(&mut self, cmd: &ListCommand, now_ms: u64) -> Frame {
        match cmd {
            ListCommand::Push { key, end, elements: pushed, only_if_exists } => {
                let existing = self.elements(key, now_ms);
                if existing.is_none() && *only_if_exists {
                    return Frame::Integer(0);
                }
                let mut list = existing.unwrap_or_default();
                for element in pushed {
                    match end {
                        End::Left => list.insert(0, element.clone()),
                        End::Right => list.push(element.clone()),
                    }
                }
                let len = list.len() as i64;
                self.put_elements(key, list, now_ms);
                Frame::Integer(len)
            }
            ListCommand::Pop { key, end, count } => {
                let Some(mut list) = self.elements(key, now_ms) else {
                    return if count.is_some() { Frame::NullArray } else { Frame::Null };
                };
                let take = count.unwrap_or(1).min(list.len() as u64) as usize;
                let popped: Vec<Bytes> = match end {
                    End::Left => list.drain(..take).collect(),
                    End::Right => {
                        let mut tail: Vec<Bytes> = list.drain(list.len() - take..).collect();
                        tail.reverse();
                        tail
                    }
                };
                if take > 0 {
                    self.put_elements(key, list, now_ms);
                }
                match count {
                    None => popped.into_iter().next().map_or(Frame::Null, Frame::Bulk),
                    Some(_) => Frame::Array(popped.into_iter().map(Frame::Bulk).collect()),
                }
            }
            ListCommand::Len(key) => Frame::Integer(self.elements(key, now_ms).map_or(0, |l| l.len()) as i64),
            ListCommand::Index { key, index: i } => {
                let Some(list) = self.elements(key, now_ms) else { return Frame::Null };
                let Some(i) = i else { return errors::error(errors::NOT_INTEGER) };
                index(*i, list.len()).map_or(Frame::Null, |i| Frame::Bulk(list[i].clone()))
            }
            ListCommand::Range { key, start, stop } => {
                let list = self.elements(key, now_ms).unwrap_or_default();
                let picked = range(*start, *stop, list.len()).map_or(&[][..], |(a, b)| &list[a..=b]);
                Frame::Array(picked.iter().cloned().map(Frame::Bulk).collect())
            }
            ListCommand::Set { key, index: i, element } => {
                let Some(mut list) = self.elements(key, now_ms) else { return errors::error(errors::NO_SUCH_KEY) };
                let Some(i) = i else { return errors::error(errors::NOT_INTEGER) };
                let Some(i) = index(*i, list.len()) else { return Frame::static_error("ERR index out of range") };
                list[i] = element.clone();
                self.put_elements(key, list, now_ms);
                Frame::ok()
            }
            ListCommand::Insert { key, before, pivot, element } => {
                let Some(mut list) = self.elements(key, now_ms) else { return Frame::Integer(0) };
                let Some(at) = list.iter().position(|e| e == pivot) else { return Frame::Integer(-1) };
                list.insert(if *before { at } else { at + 1 }, element.clone());
                let len = list.len() as i64;
                self.put_elements(key, list, now_ms);
                Frame::Integer(len)
            }
            ListCommand::Rem { key, count, element } => {
                let Some(list) = self.elements(key, now_ms) else { return Frame::Integer(0) };
                let limit = if *count == 0 { usize::MAX } else { count.unsigned_abs() as usize };
                let mut removed = 0;
                let mut kept: Vec<Bytes> = Vec::with_capacity(list.len());
                let walk: Box<dyn Iterator<Item = Bytes>> =
                    if *count < 0 { Box::new(list.into_iter().rev()) } else { Box::new(list.into_iter()) };
                for e in walk {
                    if removed < limit && e == *element {
                        removed += 1;
                    } else {
                        kept.push(e);
                    }
                }
                if *count < 0 {
                    kept.reverse();
                }
                if removed > 0 {
                    self.put_elements(key, kept, now_ms);
                }
                Frame::Integer(removed as i64)
            }
            ListCommand::Trim { key, start, stop } => {
                let Some(list) = self.elements(key, now_ms) else { return Frame::ok() };
                let kept = range(*start, *stop, list.len()).map_or(Vec::new(), |(a, b)| list[a..=b].to_vec());
                if kept.len() != list.len() {
                    self.put_elements(key, kept, now_ms);
                }
                Frame::ok()
            }
            other => Frame::error(format!("ERR the model does not cover {other:?}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::run_line as run;

    fn bulks(items: &[&str]) -> Frame {
        Frame::Array(items.iter().map(|s| Frame::Bulk(Bytes::copy_from_slice(s.as_bytes()))).collect())
    }

    #[test]
    fn list_commands_follow_redis() {
        let mut m = Model::default();
        assert_eq!(run(&mut m, "LPUSHX l a"), Frame::Integer(0));
        assert_eq!(run(&mut m, "LPUSH l a b c"), Frame::Integer(3));
        assert_eq!(run(&mut m, "RPUSH l d a"), Frame::Integer(5));
        assert_eq!(run(&mut m, "LRANGE l 0 -1"), bulks(&["c", "b", "a", "d", "a"]));
        assert_eq!(run(&mut m, "LREM l -1 a"), Frame::Integer(1));
        assert_eq!(run(&mut m, "LINSERT l BEFORE d x"), Frame::Integer(5));
        assert_eq!(run(&mut m, "LINDEX l -2"), Frame::Bulk(Bytes::from("x")));
        assert_eq!(run(&mut m, "RPOP l 2"), bulks(&["d", "x"]));
        assert_eq!(run(&mut m, "LTRIM l 1 5"), Frame::ok());
        assert_eq!(run(&mut m, "LRANGE l 0 -1"), bulks(&["b", "a"]));
        assert_eq!(run(&mut m, "LSET l 5 z"), Frame::static_error("ERR index out of range"));
        assert_eq!(run(&mut m, "LPOP l 5"), bulks(&["b", "a"]));
        assert_eq!(run(&mut m, "LPOP l"), Frame::Null);
        assert_eq!(run(&mut m, "LPOP l 1"), Frame::NullArray);
        assert!(m.keys.is_empty(), "an empty list is no key");
    }
}
