//! [`KeyMeta`]: the explicit causal context and the TTL register of a key state, the
//! two fields most states leave empty, held together off the state. Owns only where
//! they are stored and how a state reaches them; what they mean is `value.rs`'s.

use crate::crdt::VersionVector;
use crate::crdt::ttl::TtlRegister;

use super::KeyState;

/// The two fields most key states leave empty, kept in one box (one pointer on the
/// state instead of two, 8 bytes off every key's entry, see `keyspace.rs`):
/// - `ctx`: the causal context beyond what the dots stored in the state already imply.
///   Empty for a key written by one node and never deleted.
/// - `ttl`: the TTL register; only keys with a TTL use it, element states never do.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct KeyMeta {
    pub(super) ctx: VersionVector,
    pub(super) ttl: TtlRegister,
}

impl KeyMeta {
    pub(super) fn is_empty(&self) -> bool {
        self.ctx.is_empty() && self.ttl.is_empty()
    }
}

impl KeyState {
    /// The explicit causal context (see [`KeyMeta`]).
    pub(super) fn ctx(&self) -> &VersionVector {
        &self.meta_ref().ctx
    }

    pub(super) fn ctx_set(&mut self, ctx: VersionVector) {
        if ctx.is_empty() && self.ctx().is_empty() {
            return;
        }
        self.full_mut().meta.update(|m| m.ctx = ctx);
    }

    pub(super) fn ctx_update(&mut self, f: impl FnOnce(&mut VersionVector)) {
        self.full_mut().meta.update(|m| f(&mut m.ctx));
    }

    /// The TTL register (see [`KeyMeta`]).
    pub(super) fn ttl(&self) -> &TtlRegister {
        &self.meta_ref().ttl
    }

    pub(super) fn ttl_set(&mut self, ttl: TtlRegister) {
        if ttl.is_empty() && self.ttl().is_empty() {
            return;
        }
        self.full_mut().meta.update(|m| m.ttl = ttl);
    }

    pub(super) fn ttl_update(&mut self, f: impl FnOnce(&mut TtlRegister)) {
        self.full_mut().meta.update(|m| f(&mut m.ttl));
    }
}
