//! String and counter commands (GET/SET family, APPEND, ranges, INCR family).

use bytes::{Bytes, BytesMut};

use super::value::{KeyKind, SetTtl, format_float};
use super::{KeyState, KvEngine, StrVal, WriteCtx, key_hash};
use crate::command::errors::{self, invalid_expire};
use crate::command::{GetExTtl, SetCondition, SetReply, TtlChange};
use crate::notify::Class;
use crate::protocol::Frame;

/// The absolute expiry of a TTL change, or Redis's error when it overflows.
pub fn resolve_ttl(change: TtlChange, now_ms: u64, command: &str) -> Result<SetTtl, Frame> {
    Ok(match change {
        TtlChange::Clear => SetTtl::Clear,
        TtlChange::Keep => SetTtl::Keep,
        TtlChange::AtMs(at_ms) => SetTtl::At(at_ms),
        TtlChange::AfterMs(ms) => match now_ms.checked_add(ms).filter(|&at| at <= i64::MAX as u64) {
            Some(at_ms) => SetTtl::At(at_ms),
            None => return Err(invalid_expire(command)),
        },
    })
}

/// WRONGTYPE unless the key is missing or holds a string.
pub(super) fn check_string(state: Option<&KeyState>) -> Result<(), Frame> {
    match state.and_then(|s| s.kind()) {
        None | Some(KeyKind::String) => Ok(()),
        Some(_) => Err(errors::error(errors::WRONG_TYPE)),
    }
}

fn value_frame(value: Option<StrVal>) -> Frame {
    match value {
        Some(v) => Frame::Bulk(v.into_bytes()),
        None => Frame::Null,
    }
}

impl KvEngine {
    pub fn get(&mut self, key: &[u8], now_ms: u64) -> Frame {
        let state = self.live(key, key_hash(key), now_ms);
        if let Err(e) = check_string(state) {
            return e;
        }
        let reply = state.and_then(|s| s.read_borrowed()).map(|v| v.to_reply_bytes());
        if reply.is_some() {
            self.stats.keyspace_hits += 1;
        } else {
            self.stats.keyspace_misses += 1;
        }
        reply.map_or(Frame::Null, Frame::Bulk)
    }

    /// The value of a key as a reply-ready string (MGET, GET).
    /// `None` for a missing key or one of another type (MGET's nil).
    pub fn read_value(&mut self, key: &[u8], now_ms: u64) -> Option<StrVal> {
        self.live(key, key_hash(key), now_ms).filter(|s| s.kind() == Some(KeyKind::String)).and_then(|s| s.read())
    }

    /// A string command's read: the value, or WRONGTYPE.
    pub(super) fn read_string(&mut self, key: &[u8], now_ms: u64) -> Result<Option<StrVal>, Frame> {
        let state = self.live(key, key_hash(key), now_ms);
        check_string(state)?;
        Ok(state.and_then(|s| s.read()))
    }

    /// SET with every option; also SETNX, SETEX, PSETEX, GETSET, MSET. The arguments
    /// are exactly SET's options, so they stay spelled out.
    #[allow(clippy::too_many_arguments)]
    pub fn set(
        &mut self,
        ctx: &mut WriteCtx,
        key: Bytes,
        value: Bytes,
        condition: SetCondition,
        ttl: TtlChange,
        reply: SetReply,
        command: &str,
    ) -> Frame {
        let ttl = match resolve_ttl(ttl, ctx.now_ms, command) {
            Ok(ttl) => ttl,
            Err(e) => return e,
        };
        let hash = key_hash(&key);
        self.expire_if_due(&key, hash, ctx.now_ms);
        let event_key = self.notify.key_for(&[Class::String, Class::Generic], &key);
        if reply == SetReply::OldValue
            && let Err(e) = check_string(self.keys.get(&key, hash).map(|e| e.state()))
        {
            return e;
        }
        // The common case, an existing key, is changed in place: one lookup, no copy.
        let mut value = Some(StrVal::from_bytes(value));
        // A SET over a collection removes its elements, claiming only what is safe. The
        // safe vector is built only then: cloning it for every SET was ~70 instructions
        // of a replicated node's SET (docs/benchmarks.md, "Thirty-second session").
        let (keep_tombstones, stable) = (self.keep_tombstones, &self.stable);
        let updated = self.keys.update(&key, hash, |stored_key, state| {
            let old_value = if reply == SetReply::OldValue { state.read() } else { None };
            let allowed = condition != SetCondition::IfAbsent;
            if allowed {
                let dot = ctx.next_dot();
                if state.has_collection() {
                    let safe = super::whole_key_safe_of(keep_tombstones, stable, Some(dot));
                    state.remove_elements(safe.as_ref(), Some(dot));
                }
                state.set(dot, value.take().unwrap_or(StrVal::Int(0)), ttl);
                ctx.deltas.key_changed(stored_key, state);
            }
            (allowed, old_value)
        });
        let (allowed, old_value) = match updated {
            Some(outcome) => outcome,
            None => {
                let allowed = condition != SetCondition::IfPresent;
                if let (true, Some(value)) = (allowed, value.take()) {
                    let dot = ctx.next_dot();
                    let at_ms = if let SetTtl::At(at) = ttl { Some(at) } else { None };
                    self.commit(ctx, key, hash, KeyState::with_value(dot, value, at_ms));
                }
                (allowed, None)
            }
        };
        if allowed {
            self.notify.raise_for(Class::String, "set", event_key.as_ref());
            if let SetTtl::At(_) = ttl {
                self.notify.raise_for(Class::Generic, "expire", event_key.as_ref());
            }
        }
        match reply {
            SetReply::OldValue => value_frame(old_value),
            SetReply::Written => Frame::Integer(allowed as i64),
            SetReply::Ok if allowed => Frame::ok(),
            SetReply::Ok => Frame::Null,
        }
    }

    pub fn getdel(&mut self, ctx: &mut WriteCtx, key: &Bytes) -> Frame {
        let hash = key_hash(key);
        let value = match self.read_string(key, ctx.now_ms) {
            Ok(value) => value,
            Err(e) => return e,
        };
        if value.is_some() {
            self.delete(ctx, key, hash);
            self.notify.raise(Class::Generic, "del", key);
        }
        value_frame(value)
    }

    pub fn getex(&mut self, ctx: &mut WriteCtx, key: &Bytes, ttl: GetExTtl) -> Frame {
        let hash = key_hash(key);
        if let Err(e) = self.read_string(key, ctx.now_ms) {
            return e;
        }
        let Some(mut state) = self.take_for_write(key, hash, ctx.now_ms) else {
            return Frame::Null;
        };
        let reply = value_frame(state.read());
        match ttl {
            GetExTtl::Unchanged => {}
            GetExTtl::Invalid(error) => return error,
            GetExTtl::Persist => {
                if state.expire_at_ms().is_some() {
                    let dot = ctx.next_dot();
                    state.persist(dot);
                    self.commit(ctx, key.clone(), hash, state);
                    self.notify.raise(Class::Generic, "persist", key);
                }
            }
            GetExTtl::Set(change) => match resolve_ttl(change, ctx.now_ms, "getex") {
                Err(e) => return e,
                Ok(SetTtl::At(at_ms)) if at_ms <= ctx.now_ms => {
                    self.delete(ctx, key, hash);
                    self.notify.raise(Class::Generic, "del", key);
                }
                Ok(SetTtl::At(at_ms)) => {
                    let dot = ctx.next_dot();
                    state.expire_at(dot, at_ms);
                    self.commit(ctx, key.clone(), hash, state);
                    self.notify.raise(Class::Generic, "expire", key);
                }
                Ok(SetTtl::Clear | SetTtl::Keep) => debug_assert!(false, "GETEX options always carry a time"),
            },
        }
        reply
    }

    pub fn append(&mut self, ctx: &mut WriteCtx, key: Bytes, suffix: &[u8]) -> Frame {
        let hash = key_hash(&key);
        let old = self.take_for_write(&key, hash, ctx.now_ms);
        if let Err(e) = check_string(old.as_ref()) {
            return e;
        }
        let current = old.as_ref().and_then(|s| s.read()).map(|v| v.into_bytes()).unwrap_or_default();
        if current.len() + suffix.len() > ctx.string_bytes_max {
            return errors::error(errors::STRING_TOO_LONG);
        }
        let mut joined = BytesMut::with_capacity(current.len() + suffix.len());
        joined.extend_from_slice(&current);
        joined.extend_from_slice(suffix);
        let len = joined.len() as i64;
        let event_key = self.notify.key_for(&[Class::String], &key);
        self.write_whole_value(ctx, key, hash, old, joined.freeze());
        self.notify.raise_for(Class::String, "append", event_key.as_ref());
        Frame::Integer(len)
    }

    /// Write a new whole value keeping the TTL (APPEND, SETRANGE, the bit commands).
    pub(super) fn write_whole_value(&mut self, ctx: &mut WriteCtx, key: Bytes, hash: u64, old: Option<KeyState>, value: Bytes) {
        let dot = ctx.next_dot();
        let mut state = old.unwrap_or_default();
        self.remove_elements_for_write(&mut state, dot);
        state.set(dot, StrVal::from_bytes(value), SetTtl::Keep);
        self.commit(ctx, key, hash, state);
    }

    pub fn strlen(&mut self, key: &[u8], now_ms: u64) -> Frame {
        match self.read_string(key, now_ms) {
            Ok(value) => Frame::Integer(value.map_or(0, |v| v.len() as i64)),
            Err(e) => e,
        }
    }

    pub fn getrange(&mut self, key: &[u8], start: i64, end: i64, now_ms: u64) -> Frame {
        let value = match self.read_string(key, now_ms) {
            Ok(value) => value.map(|v| v.into_bytes()).unwrap_or_default(),
            Err(e) => return e,
        };
        let len = value.len() as i64;
        if start < 0 && end < 0 && start > end {
            return Frame::Bulk(Bytes::new());
        }
        let mut start = if start < 0 { len + start } else { start };
        let mut end = if end < 0 { len + end } else { end };
        start = start.max(0);
        end = end.max(0);
        if end >= len {
            end = len - 1;
        }
        if start > end || len == 0 {
            return Frame::Bulk(Bytes::new());
        }
        Frame::Bulk(value.slice(start as usize..=end as usize))
    }

    pub fn setrange(&mut self, ctx: &mut WriteCtx, key: Bytes, offset: usize, patch: &[u8]) -> Frame {
        let hash = key_hash(&key);
        let old = self.take_for_write(&key, hash, ctx.now_ms);
        if let Err(e) = check_string(old.as_ref()) {
            return e;
        }
        let current = old.as_ref().and_then(|s| s.read()).map(|v| v.into_bytes()).unwrap_or_default();
        if patch.is_empty() {
            return Frame::Integer(current.len() as i64);
        }
        if offset.saturating_add(patch.len()) > ctx.string_bytes_max {
            return errors::error(errors::STRING_TOO_LONG);
        }
        let new_len = current.len().max(offset + patch.len());
        let mut value = BytesMut::with_capacity(new_len);
        value.extend_from_slice(&current);
        value.resize(new_len, 0);
        value[offset..offset + patch.len()].copy_from_slice(patch);
        let event_key = self.notify.key_for(&[Class::String], &key);
        self.write_whole_value(ctx, key, hash, old, value.freeze());
        self.notify.raise_for(Class::String, "setrange", event_key.as_ref());
        Frame::Integer(new_len as i64)
    }

    pub fn incr_by(&mut self, ctx: &mut WriteCtx, key: Bytes, by: i64) -> Frame {
        let hash = key_hash(&key);
        let old = self.take_for_write(&key, hash, ctx.now_ms);
        if let Err(e) = check_string(old.as_ref()) {
            return e;
        }
        let current = match old.as_ref().and_then(|s| s.read()) {
            None => 0,
            Some(v) => match v.as_i64() {
                Some(n) => n,
                None => return errors::error(errors::NOT_INTEGER),
            },
        };
        let Some(next) = current.checked_add(by) else {
            return errors::error(errors::OVERFLOW);
        };
        let dot = ctx.next_dot();
        let mut state = old.unwrap_or_default();
        let incarnation = self.incarnation(dot);
        state.incr_by(dot, incarnation, by);
        debug_assert_eq!(state.read().and_then(|v| v.as_i64()), Some(next));
        let event_key = self.notify.key_for(&[Class::String], &key);
        self.commit(ctx, key, hash, state);
        self.notify.raise_for(Class::String, "incrby", event_key.as_ref());
        Frame::Integer(next)
    }

    /// INCRBYFLOAT; `by` is `None` when the increment is not a float, which Redis
    /// reports only after the key's type.
    pub fn incr_by_float(&mut self, ctx: &mut WriteCtx, key: Bytes, by: Option<f64>) -> Frame {
        let hash = key_hash(&key);
        let old = self.take_for_write(&key, hash, ctx.now_ms);
        if let Err(e) = check_string(old.as_ref()) {
            return e;
        }
        let Some(by) = by else { return errors::error(errors::NOT_FLOAT) };
        let current = match old.as_ref().and_then(|s| s.read()) {
            None => 0.0,
            Some(v) => match v.as_f64() {
                Some(f) => f,
                None => return errors::error(errors::NOT_FLOAT),
            },
        };
        if !(current + by).is_finite() {
            return errors::error(errors::NAN_OR_INFINITY);
        }
        let dot = ctx.next_dot();
        let mut state = old.unwrap_or_default();
        let incarnation = self.incarnation(dot);
        state.incr_by_float(dot, incarnation, by);
        let rendered = state.read().map(|v| v.into_bytes()).unwrap_or_else(|| Bytes::from(format_float(current + by)));
        let event_key = self.notify.key_for(&[Class::String], &key);
        self.commit(ctx, key, hash, state);
        self.notify.raise_for(Class::String, "incrbyfloat", event_key.as_ref());
        Frame::Bulk(rendered)
    }
}
