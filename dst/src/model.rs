//! The sequential model: what a single Redis-semantics node must answer, written
//! independently of the engine (plain bytes and an expiry instant per key, no CRDT).
//!
//! The model consumes the *typed* commands the real parser produces (the parser itself
//! is checked byte-for-byte against Redis by the differential test) and is evaluated at
//! the same node-local instant as the engine, so every reply can be compared exactly.
//! It mirrors the engine's expiry removal (lazy on access, active on ticks) so DBSIZE,
//! which counts keys not yet removed, is exact too.

use std::collections::BTreeMap;

use bytes::Bytes;
use meridian::command::errors;
use meridian::command::hash::{HSetReply, HashCommand};
use meridian::command::{ExpireCondition, GetExTtl, KeyCommand, SetCondition, SetReply, TimeUnit, TtlChange};
use meridian::engine::kv::value::{format_float, parse_f64, parse_i64};
use meridian::protocol::Frame;

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ModelEntry {
    /// A string's bytes (empty for a hash).
    pub value: Vec<u8>,
    pub expire_at_ms: Option<u64>,
    /// A hash's fields in insertion order (a removed field leaves the order; one set
    /// again goes last), as a single node keeps them: `None` for a string.
    pub hash: Option<Vec<(Bytes, Vec<u8>)>>,
    /// A set's members in insertion order (as `hash`): `None` for any other type.
    /// Replies put them in Redis's order (`model_sets::reply_order`).
    pub set: Option<Vec<Bytes>>,
    /// A sorted set's members with their scores, in score order (ties by member):
    /// `None` for any other type (`model_zsets`).
    pub zset: Option<Vec<(Bytes, f64)>>,
    /// A list's elements in order: `None` for any other type (`model_lists`).
    pub list: Option<Vec<Bytes>>,
}

/// The type of a live key, as TYPE names it.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Kind {
    String,
    Hash,
    Set,
    Zset,
    List,
}

impl ModelEntry {
    pub fn kind(&self) -> Kind {
        if self.hash.is_some() {
            Kind::Hash
        } else if self.set.is_some() {
            Kind::Set
        } else if self.zset.is_some() {
            Kind::Zset
        } else if self.list.is_some() {
            Kind::List
        } else {
            Kind::String
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct Model {
    pub keys: BTreeMap<Bytes, ModelEntry>,
}

fn bulk(v: &[u8]) -> Frame {
    Frame::Bulk(Bytes::copy_from_slice(v))
}

impl Model {
    /// Remove the key if it is expired at `now_ms`; returns whether it is live.
    pub(crate) fn touch(&mut self, key: &Bytes, now_ms: u64) -> bool {
        match self.keys.get(key) {
            None => false,
            Some(e) if e.expire_at_ms.is_some_and(|at| now_ms > at) => {
                self.keys.remove(key);
                false
            }
            Some(_) => true,
        }
    }

    pub(crate) fn live(&mut self, key: &Bytes, now_ms: u64) -> Option<&mut ModelEntry> {
        if self.touch(key, now_ms) { self.keys.get_mut(key) } else { None }
    }

    /// Active expiry: remove every key due at `now_ms`.
    pub fn tick(&mut self, now_ms: u64) {
        self.keys.retain(|_, e| e.expire_at_ms.is_none_or(|at| now_ms <= at));
    }

    /// Live keys with their values and expiry, for the end-of-run comparison.
    pub fn live_entries(&self, now_ms: u64) -> BTreeMap<Bytes, ModelEntry> {
        self.keys.iter().filter(|(_, e)| e.expire_at_ms.is_none_or(|at| now_ms <= at)).map(|(k, e)| (k.clone(), e.clone())).collect()
    }

    pub fn dbsize(&self) -> i64 {
        self.keys.len() as i64
    }

    pub fn mget(&mut self, keys: &[Bytes], now_ms: u64) -> Frame {
        let value = |e: &mut ModelEntry| if e.kind() != Kind::String { Frame::Null } else { bulk(&e.value) };
        Frame::Array(keys.iter().map(|k| self.live(k, now_ms).map_or(Frame::Null, value)).collect())
    }

    pub fn mset(&mut self, pairs: &[(Bytes, Bytes)], now_ms: u64) -> Frame {
        for (k, v) in pairs {
            self.touch(k, now_ms);
            self.keys.insert(k.clone(), ModelEntry { value: v.to_vec(), expire_at_ms: None, ..ModelEntry::default() });
        }
        Frame::ok()
    }

    pub fn del(&mut self, keys: &[Bytes], now_ms: u64) -> Frame {
        Frame::Integer(keys.iter().filter(|k| self.touch(k, now_ms) && self.keys.remove(*k).is_some()).count() as i64)
    }

    pub fn exists(&mut self, keys: &[Bytes], now_ms: u64) -> Frame {
        Frame::Integer(keys.iter().filter(|k| self.touch(k, now_ms)).count() as i64)
    }

    fn expiry(change: TtlChange, now_ms: u64, command: &str) -> Result<Option<Option<u64>>, Frame> {
        // Ok(None): keep the TTL; Ok(Some(x)): set it to x.
        match change {
            TtlChange::Keep => Ok(None),
            TtlChange::Clear => Ok(Some(None)),
            TtlChange::AtMs(at) => Ok(Some(Some(at))),
            TtlChange::AfterMs(ms) => match now_ms.checked_add(ms).filter(|&at| at <= i64::MAX as u64) {
                Some(at) => Ok(Some(Some(at))),
                None => Err(errors::invalid_expire(command)),
            },
        }
    }

    /// The model's answer to `cmd`. `actual` is the node's reply: only the random
    /// commands (SPOP, SRANDMEMBER) read it, to check it is a possible answer and to
    /// apply what was actually popped.
    pub fn apply(&mut self, cmd: &KeyCommand, now_ms: u64, actual: &Frame) -> Frame {
        // Commands of one type on a key of another answer WRONGTYPE and change nothing.
        let kind = |model: &mut Model, key: &Bytes| model.live(key, now_ms).map(|e| e.kind());
        let string_only = match cmd {
            KeyCommand::Get(k)
            | KeyCommand::GetDel(k)
            | KeyCommand::StrLen(k)
            | KeyCommand::GetEx { key: k, .. }
            | KeyCommand::Append { key: k, .. }
            | KeyCommand::GetRange { key: k, .. }
            | KeyCommand::SetRange { key: k, .. }
            | KeyCommand::IncrBy { key: k, .. }
            | KeyCommand::IncrByFloat { key: k, .. }
            | KeyCommand::Set { key: k, reply: SetReply::OldValue, .. } => Some(k),
            _ => None,
        };
        if let Some(key) = string_only
            && kind(self, key).is_some_and(|k| k != Kind::String)
        {
            return errors::error(errors::WRONG_TYPE);
        }
        if let KeyCommand::Hash(hash_cmd) = cmd {
            if kind(self, hash_cmd.key()).is_some_and(|k| k != Kind::Hash) {
                return errors::error(errors::WRONG_TYPE);
            }
            return self.apply_hash(hash_cmd, now_ms);
        }
        if let KeyCommand::SetFamily(set_cmd) = cmd {
            if kind(self, set_cmd.key()).is_some_and(|k| k != Kind::Set) {
                return errors::error(errors::WRONG_TYPE);
            }
            return self.apply_set(set_cmd, now_ms, actual);
        }
        if let KeyCommand::Zset(zset_cmd) = cmd {
            if kind(self, zset_cmd.key()).is_some_and(|k| k != Kind::Zset) {
                return errors::error(errors::WRONG_TYPE);
            }
            return self.apply_zset(zset_cmd, now_ms);
        }
        if let KeyCommand::List(list_cmd) = cmd {
            if kind(self, list_cmd.key()).is_some_and(|k| k != Kind::List) {
                return errors::error(errors::WRONG_TYPE);
            }
            return self.apply_list(list_cmd, now_ms);
        }
        match cmd {
            KeyCommand::Get(k) => self.live(k, now_ms).map_or(Frame::Null, |e| bulk(&e.value)),
            KeyCommand::Set { key, value, condition, ttl, reply, command } => {
                let ttl = match Self::expiry(*ttl, now_ms, command) {
                    Ok(t) => t,
                    Err(e) => return e,
                };
                let old = self.live(key, now_ms).cloned();
                let allowed = match condition {
                    SetCondition::Always => true,
                    SetCondition::IfAbsent => old.is_none(),
                    SetCondition::IfPresent => old.is_some(),
                };
                let answer = match reply {
                    SetReply::OldValue => old.as_ref().map_or(Frame::Null, |e| bulk(&e.value)),
                    SetReply::Written => Frame::Integer(allowed as i64),
                    SetReply::Ok if allowed => Frame::ok(),
                    SetReply::Ok => Frame::Null,
                };
                if allowed {
                    let expire_at_ms = match ttl {
                        None => old.and_then(|e| e.expire_at_ms),
                        Some(t) => t,
                    };
                    self.keys.insert(key.clone(), ModelEntry { value: value.to_vec(), expire_at_ms, ..ModelEntry::default() });
                }
                answer
            }
            KeyCommand::GetDel(k) => match self.live(k, now_ms).cloned() {
                None => Frame::Null,
                Some(e) => {
                    self.keys.remove(k);
                    bulk(&e.value)
                }
            },
            KeyCommand::GetEx { key, ttl } => {
                let Some(entry) = self.live(key, now_ms) else { return Frame::Null };
                let answer = bulk(&entry.value);
                match ttl {
                    GetExTtl::Unchanged => answer,
                    GetExTtl::Invalid(e) => e.clone(),
                    GetExTtl::Persist => {
                        entry.expire_at_ms = None;
                        answer
                    }
                    GetExTtl::Set(change) => match Self::expiry(*change, now_ms, "getex") {
                        Err(e) => e,
                        Ok(Some(Some(at))) if at <= now_ms => {
                            self.keys.remove(key);
                            answer
                        }
                        Ok(Some(at)) => {
                            entry.expire_at_ms = at;
                            answer
                        }
                        Ok(None) => answer,
                    },
                }
            }
            KeyCommand::Append { key, value } => {
                let entry = self.live(key, now_ms).cloned();
                let mut v = entry.as_ref().map(|e| e.value.clone()).unwrap_or_default();
                v.extend_from_slice(value);
                let len = v.len() as i64;
                self.keys.insert(
                    key.clone(),
                    ModelEntry { value: v, expire_at_ms: entry.and_then(|e| e.expire_at_ms), ..ModelEntry::default() },
                );
                Frame::Integer(len)
            }
            KeyCommand::StrLen(k) => Frame::Integer(self.live(k, now_ms).map_or(0, |e| e.value.len() as i64)),
            KeyCommand::GetRange { key, start, end } => {
                let v = self.live(key, now_ms).map(|e| e.value.clone()).unwrap_or_default();
                let len = v.len() as i64;
                let (mut s, mut e) = (*start, *end);
                if s < 0 && e < 0 && s > e {
                    return bulk(b"");
                }
                if s < 0 {
                    s += len;
                }
                if e < 0 {
                    e += len;
                }
                s = s.max(0);
                e = e.max(0).min(len - 1);
                if s > e || len == 0 { bulk(b"") } else { bulk(&v[s as usize..=e as usize]) }
            }
            KeyCommand::SetRange { key, offset, value } => {
                let entry = self.live(key, now_ms).cloned();
                let mut v = entry.as_ref().map(|e| e.value.clone()).unwrap_or_default();
                if value.is_empty() {
                    return Frame::Integer(v.len() as i64);
                }
                if v.len() < offset + value.len() {
                    v.resize(offset + value.len(), 0);
                }
                v[*offset..offset + value.len()].copy_from_slice(value);
                let len = v.len() as i64;
                self.keys.insert(
                    key.clone(),
                    ModelEntry { value: v, expire_at_ms: entry.and_then(|e| e.expire_at_ms), ..ModelEntry::default() },
                );
                Frame::Integer(len)
            }
            KeyCommand::IncrBy { key, by } => {
                let entry = self.live(key, now_ms).cloned();
                let current = match &entry {
                    None => 0,
                    Some(e) => match parse_i64(&e.value) {
                        Some(n) => n,
                        None => return errors::error(errors::NOT_INTEGER),
                    },
                };
                let Some(next) = current.checked_add(*by) else { return errors::error(errors::OVERFLOW) };
                self.keys.insert(
                    key.clone(),
                    ModelEntry {
                        value: next.to_string().into_bytes(),
                        expire_at_ms: entry.and_then(|e| e.expire_at_ms),
                        ..ModelEntry::default()
                    },
                );
                Frame::Integer(next)
            }
            KeyCommand::IncrByFloat { key, by } => {
                let entry = self.live(key, now_ms).cloned();
                let current = match &entry {
                    None => 0.0,
                    Some(e) => match parse_f64(&e.value) {
                        Some(f) => f,
                        None => return errors::error(errors::NOT_FLOAT),
                    },
                };
                let Some(by) = by else { return errors::error(errors::NOT_FLOAT) };
                let next = current + by;
                if !next.is_finite() {
                    return errors::error(errors::NAN_OR_INFINITY);
                }
                let text = format_float(next).into_bytes();
                self.keys.insert(
                    key.clone(),
                    ModelEntry { value: text.clone(), expire_at_ms: entry.and_then(|e| e.expire_at_ms), ..ModelEntry::default() },
                );
                Frame::Bulk(Bytes::from(text))
            }
            KeyCommand::Expire { key, ms, absolute, condition, command } => {
                let when = if *absolute { Some(*ms) } else { ms.checked_add(now_ms as i64) };
                let Some(when) = when else { return errors::invalid_expire(command) };
                let Some(entry) = self.live(key, now_ms) else { return Frame::Integer(0) };
                let current = entry.expire_at_ms.map(|a| a as i64);
                let ExpireCondition { nx, xx, gt, lt } = *condition;
                if (nx && current.is_some())
                    || (xx && current.is_none())
                    || (gt && current.is_none_or(|c| when <= c))
                    || (lt && current.is_some_and(|c| when >= c))
                {
                    return Frame::Integer(0);
                }
                if when <= now_ms as i64 {
                    self.keys.remove(key);
                } else {
                    entry.expire_at_ms = Some(when as u64);
                }
                Frame::Integer(1)
            }
            KeyCommand::Ttl { key, unit } => match self.live(key, now_ms) {
                None => Frame::Integer(-2),
                Some(ModelEntry { expire_at_ms: None, .. }) => Frame::Integer(-1),
                Some(ModelEntry { expire_at_ms: Some(at), .. }) => {
                    let left = at.saturating_sub(now_ms) as i64;
                    Frame::Integer(if *unit == TimeUnit::Millis { left } else { (left + 500) / 1000 })
                }
            },
            KeyCommand::ExpireTime { key, unit } => match self.live(key, now_ms) {
                None => Frame::Integer(-2),
                Some(ModelEntry { expire_at_ms: None, .. }) => Frame::Integer(-1),
                Some(ModelEntry { expire_at_ms: Some(at), .. }) => {
                    Frame::Integer(if *unit == TimeUnit::Millis { *at as i64 } else { (*at as i64 + 500) / 1000 })
                }
            },
            KeyCommand::Persist(k) => match self.live(k, now_ms) {
                Some(e) if e.expire_at_ms.is_some() => {
                    e.expire_at_ms = None;
                    Frame::Integer(1)
                }
                _ => Frame::Integer(0),
            },
            KeyCommand::Type(k) => Frame::simple(match self.live(k, now_ms).map(|e| e.kind()) {
                None => "none",
                Some(Kind::Hash) => "hash",
                Some(Kind::Set) => "set",
                Some(Kind::Zset) => "zset",
                Some(Kind::List) => "list",
                Some(Kind::String) => "string",
            }),
            KeyCommand::Object { .. } => Frame::static_error("ERR model does not cover OBJECT"),
            KeyCommand::Hash(_) | KeyCommand::SetFamily(_) | KeyCommand::Zset(_) | KeyCommand::List(_) => {
                unreachable!("answered above")
            }
            KeyCommand::MemoryUsage(_) => Frame::static_error("ERR model does not cover MEMORY USAGE"),
            KeyCommand::Bits(_) => Frame::static_error("ERR model does not cover the bit commands"),
            KeyCommand::Dump(key) => self.dump(key, now_ms, actual),
            KeyCommand::Restore(cmd) => self.restore(cmd, now_ms),
            // The workload sends no graph commands yet (docs/graph.md: what is missing).
            KeyCommand::Graph(_) => Frame::static_error("ERR model does not cover the graph commands"),
            // Streams are checked in replication runs by their oracle (`streams.rs`);
            // the single-node workload sends none.
            KeyCommand::Stream(_) => Frame::static_error("ERR model does not cover the stream commands"),
        }
    }
}

fn field_frame(fields: Option<&Vec<(Bytes, Vec<u8>)>>, field: &[u8]) -> Frame {
    fields.and_then(|f| f.iter().find(|(n, _)| n == field)).map_or(Frame::Null, |(_, v)| bulk(v))
}

impl Model {
    /// The hash commands the workload sends, on a live hash or a missing key (the
    /// caller answered WRONGTYPE for strings).
    fn apply_hash(&mut self, cmd: &HashCommand, now_ms: u64) -> Frame {
        let fields = |model: &mut Model, key: &Bytes| model.live(key, now_ms).and_then(|e| e.hash.clone());
        match cmd {
            HashCommand::Get { key, field } => field_frame(fields(self, key).as_ref(), field),
            HashCommand::MGet { key, fields: names } => {
                let f = fields(self, key);
                Frame::Array(names.iter().map(|n| field_frame(f.as_ref(), n)).collect())
            }
            HashCommand::GetAll(key) => Frame::Map(
                fields(self, key).unwrap_or_default().into_iter().map(|(n, v)| (Frame::Bulk(n), Frame::Bulk(Bytes::from(v)))).collect(),
            ),
            HashCommand::Len(key) => Frame::Integer(fields(self, key).map_or(0, |f| f.len() as i64)),
            HashCommand::Exists { key, field } => {
                Frame::Integer(fields(self, key).is_some_and(|f| f.iter().any(|(n, _)| n == field)) as i64)
            }
            HashCommand::Set { key, pairs, reply } => {
                let mut f = fields(self, key).unwrap_or_default();
                if *reply == HSetReply::IfAbsent && f.iter().any(|(n, _)| *n == pairs[0].0) {
                    return Frame::Integer(0);
                }
                let mut added = 0;
                for (name, value) in pairs {
                    match f.iter_mut().find(|(n, _)| n == name) {
                        Some(slot) => slot.1 = value.to_vec(),
                        None => {
                            f.push((name.clone(), value.to_vec()));
                            added += 1;
                        }
                    }
                }
                self.put_fields(key, f, now_ms);
                match reply {
                    HSetReply::Added => Frame::Integer(added),
                    HSetReply::Ok => Frame::ok(),
                    HSetReply::IfAbsent => Frame::Integer(1),
                }
            }
            HashCommand::Del { key, fields: names } => {
                let Some(mut f) = fields(self, key) else { return Frame::Integer(0) };
                let before = f.len();
                f.retain(|(n, _)| !names.contains(n));
                let removed = (before - f.len()) as i64;
                self.put_fields(key, f, now_ms);
                Frame::Integer(removed)
            }
            HashCommand::IncrBy { key, field, by } => {
                let mut f = fields(self, key).unwrap_or_default();
                let current = match f.iter().find(|(n, _)| n == field) {
                    None => 0,
                    Some((_, v)) => match parse_i64(v) {
                        Some(n) => n,
                        None => return Frame::static_error("ERR hash value is not an integer"),
                    },
                };
                let Some(next) = current.checked_add(*by) else { return errors::error(errors::OVERFLOW) };
                set_field(&mut f, field, next.to_string().into_bytes());
                self.put_fields(key, f, now_ms);
                Frame::Integer(next)
            }
            HashCommand::IncrByFloat { key, field, by } => {
                let mut f = fields(self, key).unwrap_or_default();
                let current = match f.iter().find(|(n, _)| n == field) {
                    None => 0.0,
                    Some((_, v)) => match parse_f64(v) {
                        Some(x) => x,
                        None => return Frame::static_error("ERR hash value is not a float"),
                    },
                };
                let next = current + by;
                if !next.is_finite() {
                    return errors::error(errors::NAN_OR_INFINITY);
                }
                let text = format_float(next).into_bytes();
                set_field(&mut f, field, text.clone());
                self.put_fields(key, f, now_ms);
                Frame::Bulk(Bytes::from(text))
            }
            other => Frame::error(format!("ERR the model does not cover {other:?}")),
        }
    }

    /// Store a hash's fields (keeping its TTL); an empty hash is no key.
    fn put_fields(&mut self, key: &Bytes, fields: Vec<(Bytes, Vec<u8>)>, now_ms: u64) {
        let expire_at_ms = self.live(key, now_ms).and_then(|e| e.expire_at_ms);
        if fields.is_empty() {
            self.keys.remove(key);
        } else {
            self.keys.insert(key.clone(), ModelEntry { expire_at_ms, hash: Some(fields), ..ModelEntry::default() });
        }
    }
}

fn set_field(fields: &mut Vec<(Bytes, Vec<u8>)>, field: &Bytes, value: Vec<u8>) {
    match fields.iter_mut().find(|(n, _)| n == field) {
        Some(slot) => slot.1 = value,
        None => fields.push((field.clone(), value)),
    }
}

/// A model unit test's step: parse `line` (words split on spaces) as the server does
/// and apply it at time 0.
#[cfg(test)]
pub(crate) fn run_line(model: &mut Model, line: &str) -> Frame {
    use meridian::command::{Command, parse_command};
    let args: Vec<Bytes> = line.split(' ').map(|w| Bytes::copy_from_slice(w.as_bytes())).collect();
    match parse_command(args) {
        Ok(Command::Key(cmd)) => model.apply(&cmd, 0, &Frame::Null),
        other => panic!("{line}: {other:?}"),
    }
}
