//! The one write path of every collection type: element writes at one dot, applied in
//! place to an existing key (shipping only the elements written, as a part of the
//! key's state) or as a new key (shipping it whole). Hashes and sets call it with the
//! part they write and what each element's write does.
//!
//! No I/O, no clock: the dot comes from the write context.

use bytes::Bytes;

use super::value::KeyKind;
use super::{KeyState, KvEngine, WriteCtx, key_hash};
use crate::crdt::{Dot, Hlc};

/// Which collection part of a key a write goes to.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Part {
    Hash = 0,
    Set = 1,
    Zset = 2,
    List = 3,
}

impl Part {
    pub const COUNT: usize = 4;
    pub const ALL: [Part; Part::COUNT] = [Part::Hash, Part::Set, Part::Zset, Part::List];

    /// The type a key holding only this part reads as.
    pub fn kind(self) -> KeyKind {
        match self {
            Part::Hash => KeyKind::Hash,
            Part::Set => KeyKind::Set,
            Part::Zset => KeyKind::Zset,
            Part::List => KeyKind::List,
        }
    }

    /// The byte that introduces this part in a key's Merkle digest (after the tags of
    /// the string part's fields).
    pub fn digest_tag(self) -> u8 {
        2 + self as u8
    }
}

impl KvEngine {
    /// Apply `write(i, dot, incarnation, element)` to the element named `names[i]`, for
    /// every `i`, at one dot. `increments`: some write adds to a counter (it needs the
    /// process's counter incarnation). The caller has checked the key's type.
    pub(super) fn write_elements(
        &mut self,
        ctx: &mut WriteCtx,
        key: Bytes,
        part: Part,
        names: &[Bytes],
        increments: bool,
        write: impl Fn(usize, Dot, Hlc, &mut KeyState),
    ) {
        let dot = ctx.next_dot();
        self.write_elements_at(ctx, dot, key, part, names, increments, write);
    }

    /// [`KvEngine::write_elements`] at a dot the caller took (a list names its new
    /// elements after the dot that writes them).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn write_elements_at(
        &mut self,
        ctx: &mut WriteCtx,
        dot: Dot,
        key: Bytes,
        part: Part,
        names: &[Bytes],
        increments: bool,
        write: impl Fn(usize, Dot, Hlc, &mut KeyState),
    ) {
        debug_assert!(!names.is_empty());
        let hash = key_hash(&key);
        let incarnation = if increments { self.incarnation(dot) } else { Hlc::ZERO };
        let keep_tombstones = self.keep_tombstones;
        let updated = self.keys.update(&key, hash, |stored_key, state| {
            let elements = state.part_mut(part);
            let mut shipped = Vec::with_capacity(names.len());
            for (i, name) in names.iter().enumerate() {
                let before = elements.get(name).cloned();
                let mut element = elements.write(name, |s| write(i, dot, incarnation, s));
                if !element.exists() {
                    if crate::bugs::active(crate::bugs::Bug::HdelShipsOldField)
                        && let Some(before) = before
                    {
                        element = before;
                    }
                    if !keep_tombstones {
                        // A lone node has no one to tell: a removed element leaves nothing.
                        elements.drop_tombstone(name);
                    }
                }
                shipped.push((name.clone(), element));
            }
            ctx.deltas.key_part_changed(stored_key, &KeyState::part_delta(part, shipped));
            state.exists()
        });
        match updated {
            Some(true) => {}
            Some(false) => {
                // The last element went: the key goes, its history kept as a tombstone.
                if let Some(state) = self.keys.remove(&key, hash)
                    && self.keep_tombstones
                {
                    self.keys.put_tombstone(key, hash, state);
                }
            }
            None => {
                let mut state = KeyState::new();
                let elements = state.part_mut(part);
                for (i, name) in names.iter().enumerate() {
                    elements.write(name, |s| write(i, dot, incarnation, s));
                }
                // The keyspace notes element tombstones wherever a state is stored.
                self.commit_new(ctx, key, hash, state);
            }
        }
    }
}
