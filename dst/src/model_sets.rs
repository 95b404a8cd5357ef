//! The sequential model of sets (SADD family) on one node: a set is its members in
//! insertion order (a removed member leaves the order; one added again goes last, as a
//! lone node keeps no tombstones), written without the engine's CRDT machinery.
//!
//! Replies put members in Redis's order: a set Redis would keep as an intset (every
//! member an integer in canonical form, at most 512 of them) sorted numerically, any
//! other set in insertion order (docs/semantics.md, "Set member order"). SPOP and
//! SRANDMEMBER draw from the shard's seeded generator: the model does not predict the
//! draw, it checks the node's reply is a possible one and applies what was popped.
//! Never reads the engine's state.

use bytes::Bytes;
use meridian::command::errors;
use meridian::command::{SetAlgebra, SetCommand, SetOutput};
use meridian::protocol::Frame;

use crate::model::{Kind, Model, ModelEntry};

/// `set-max-intset-entries`' default: the largest set Redis keeps as an intset.
const INTSET_ENTRIES_MAX: usize = 512;

fn canonical_i64(m: &[u8]) -> Option<i64> {
    let n: i64 = std::str::from_utf8(m).ok()?.parse().ok()?;
    (n.to_string().as_bytes() == m).then_some(n)
}

/// Members in the order Redis replies with them.
pub fn reply_order(mut members: Vec<Bytes>) -> Vec<Bytes> {
    if members.len() <= INTSET_ENTRIES_MAX && members.iter().all(|m| canonical_i64(m).is_some()) {
        members.sort_by_key(|m| canonical_i64(m).unwrap_or(0));
    }
    members
}

fn set_frame(members: Vec<Bytes>) -> Frame {
    Frame::Set(members.into_iter().map(Frame::Bulk).collect())
}

/// Whether `frame` holds `count` distinct members of `members` (as a Set or an Array).
fn distinct_members_of(frame: &Frame, members: &[Bytes], count: usize) -> Option<Vec<Bytes>> {
    let items = match frame {
        Frame::Set(items) | Frame::Array(items) => items,
        _ => return None,
    };
    let mut picked: Vec<Bytes> = Vec::with_capacity(items.len());
    for item in items {
        match item {
            Frame::Bulk(m) if members.contains(m) && !picked.contains(m) => picked.push(m.clone()),
            _ => return None,
        }
    }
    (picked.len() == count).then_some(picked)
}

/// What the model says when the node's random answer is impossible: a frame the node
/// cannot have answered, naming what was possible.
fn impossible(what: &str, members: &[Bytes]) -> Frame {
    let shown: Vec<String> = members.iter().map(|m| String::from_utf8_lossy(m).into_owned()).collect();
    Frame::error(format!("MODEL {what} from {shown:?}"))
}

impl Model {
    /// A live set's members (empty for a missing key); the caller checked the type.
    fn members(&mut self, key: &Bytes, now_ms: u64) -> Vec<Bytes> {
        self.live(key, now_ms).and_then(|e| e.set.clone()).unwrap_or_default()
    }

    /// Store a set's members, keeping its TTL; an empty set is no key.
    fn put_members(&mut self, key: &Bytes, members: Vec<Bytes>, now_ms: u64) {
        let expire_at_ms = self.live(key, now_ms).and_then(|e| e.expire_at_ms);
        if members.is_empty() {
            self.keys.remove(key);
        } else {
            self.keys.insert(key.clone(), ModelEntry { expire_at_ms, set: Some(members), ..ModelEntry::default() });
        }
    }

    /// The set commands, on a live set or a missing key (the caller answered WRONGTYPE
    /// for other types). `actual` is the node's reply (random commands only).
    pub(crate) fn apply_set(&mut self, cmd: &SetCommand, now_ms: u64, actual: &Frame) -> Frame {
        match cmd {
            SetCommand::Add { key, members: named } => {
                let mut members = self.members(key, now_ms);
                let mut added = 0;
                for m in named {
                    if !members.contains(m) {
                        members.push(m.clone());
                        added += 1;
                    }
                }
                self.put_members(key, members, now_ms);
                Frame::Integer(added)
            }
            SetCommand::Rem { key, members: named } => {
                let mut members = self.members(key, now_ms);
                let before = members.len();
                members.retain(|m| !named.contains(m));
                let removed = (before - members.len()) as i64;
                if removed > 0 {
                    self.put_members(key, members, now_ms);
                }
                Frame::Integer(removed)
            }
            SetCommand::Members(key) => set_frame(reply_order(self.members(key, now_ms))),
            SetCommand::IsMember { key, member } => Frame::Integer(self.members(key, now_ms).contains(member) as i64),
            SetCommand::MIsMember { key, members: named } => {
                let members = self.members(key, now_ms);
                Frame::Array(named.iter().map(|m| Frame::Integer(members.contains(m) as i64)).collect())
            }
            SetCommand::Card(key) => Frame::Integer(self.members(key, now_ms).len() as i64),
            SetCommand::Pop { key, count } => self.spop(key, *count, now_ms, actual),
            SetCommand::RandMember { key, count } => {
                let members = self.members(key, now_ms);
                srandmember(&members, *count, actual)
            }
            other => Frame::error(format!("ERR the model does not cover {other:?}")),
        }
    }

    fn spop(&mut self, key: &Bytes, count: Option<u64>, now_ms: u64, actual: &Frame) -> Frame {
        let mut members = self.members(key, now_ms);
        let popped = match count {
            None if members.is_empty() => return Frame::Null,
            None => match actual {
                Frame::Bulk(m) if members.contains(m) => vec![m.clone()],
                _ => return impossible("SPOP: one member", &members),
            },
            Some(n) if n as usize >= members.len() => {
                // Every member, in reply order: no choice to make.
                self.put_members(key, Vec::new(), now_ms);
                return set_frame(reply_order(members));
            }
            Some(n) => match distinct_members_of(actual, &members, n as usize) {
                Some(popped) => popped,
                None => return impossible(&format!("SPOP: {n} distinct members"), &members),
            },
        };
        members.retain(|m| !popped.contains(m));
        self.put_members(key, members, now_ms);
        actual.clone()
    }

    /// SMOVE with both keys on one shard: a missing source answers 0 before the
    /// destination's type is checked, as Redis does.
    pub fn smove(&mut self, src: &Bytes, dst: &Bytes, member: &Bytes, now_ms: u64) -> Frame {
        let kind = |model: &mut Model, key: &Bytes| model.live(key, now_ms).map(|e| e.kind());
        match kind(self, src) {
            None => return Frame::Integer(0),
            Some(Kind::Set) => {}
            Some(_) => return errors::error(errors::WRONG_TYPE),
        }
        if kind(self, dst).is_some_and(|k| k != Kind::Set) {
            return errors::error(errors::WRONG_TYPE);
        }
        let mut from = self.members(src, now_ms);
        if !from.contains(member) {
            return Frame::Integer(0);
        }
        if src == dst {
            return Frame::Integer(1);
        }
        from.retain(|m| m != member);
        self.put_members(src, from, now_ms);
        let mut to = self.members(dst, now_ms);
        if !to.contains(member) {
            to.push(member.clone());
        }
        self.put_members(dst, to, now_ms);
        Frame::Integer(1)
    }

    /// SINTER/SUNION/SDIFF and their STORE forms with every key on one shard. Result
    /// order is the engine's walk (documented in engine/kv/sets.rs): SINTER walks the
    /// smallest set (the first of the smallest), SUNION the sets in key order, SDIFF the
    /// first; a STORE keeps that order as insertion order, a reply puts it in reply order.
    pub fn set_algebra(&mut self, op: SetAlgebra, keys: &[Bytes], output: &SetOutput, now_ms: u64) -> Frame {
        let mut lists: Vec<Option<Vec<Bytes>>> = Vec::with_capacity(keys.len());
        for key in keys {
            match self.live(key, now_ms).map(|e| (e.kind(), e.set.clone())) {
                None => lists.push(None),
                Some((Kind::Set, members)) => lists.push(members),
                Some(_) => return errors::error(errors::WRONG_TYPE),
            }
        }
        let result: Vec<Bytes> = match op {
            SetAlgebra::Inter => {
                if lists.iter().any(|l| l.as_ref().is_none_or(|l| l.is_empty())) {
                    Vec::new()
                } else {
                    let lists: Vec<Vec<Bytes>> = lists.into_iter().flatten().collect();
                    let smallest = lists.iter().enumerate().min_by_key(|(i, l)| (l.len(), *i)).map_or(0, |(i, _)| i);
                    lists[smallest].iter().filter(|m| lists.iter().all(|l| l.contains(m))).cloned().collect()
                }
            }
            SetAlgebra::Union => {
                let mut out: Vec<Bytes> = Vec::new();
                for m in lists.into_iter().flatten().flatten() {
                    if !out.contains(&m) {
                        out.push(m);
                    }
                }
                out
            }
            SetAlgebra::Diff => {
                let mut lists = lists.into_iter();
                let first = lists.next().flatten().unwrap_or_default();
                let others: Vec<Bytes> = lists.flatten().flatten().collect();
                first.into_iter().filter(|m| !others.contains(m)).collect()
            }
        };
        match output {
            SetOutput::Reply => set_frame(reply_order(result)),
            SetOutput::Count { .. } => Frame::Integer(result.len() as i64),
            SetOutput::Store(dst) => {
                // A STORE replaces the destination whole, whatever it held: no TTL.
                let count = result.len() as i64;
                self.touch(dst, now_ms);
                self.keys.remove(dst);
                if !result.is_empty() {
                    self.keys.insert(dst.clone(), ModelEntry { set: Some(result), ..ModelEntry::default() });
                }
                Frame::Integer(count)
            }
        }
    }
}

/// SRANDMEMBER: no state change; the reply must be a possible draw.
fn srandmember(members: &[Bytes], count: Option<i64>, actual: &Frame) -> Frame {
    match count {
        None if members.is_empty() => Frame::Null,
        None => match actual {
            Frame::Bulk(m) if members.contains(m) => actual.clone(),
            _ => impossible("SRANDMEMBER: one member", members),
        },
        Some(_) if members.is_empty() => Frame::Array(Vec::new()),
        Some(n) if n >= members.len() as i64 => Frame::Array(reply_order(members.to_vec()).into_iter().map(Frame::Bulk).collect()),
        Some(n) if n >= 0 => match distinct_members_of(actual, members, n as usize) {
            Some(_) => actual.clone(),
            None => impossible(&format!("SRANDMEMBER: {n} distinct members"), members),
        },
        Some(n) => match actual {
            Frame::Array(items)
                if items.len() == n.unsigned_abs() as usize && items.iter().all(|i| matches!(i, Frame::Bulk(m) if members.contains(m))) =>
            {
                actual.clone()
            }
            _ => impossible(&format!("SRANDMEMBER: {} draws", n.unsigned_abs()), members),
        },
    }
}
