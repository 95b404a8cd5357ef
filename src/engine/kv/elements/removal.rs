//! Removal from a collection: whole-key removes (DEL, a SET over the key, FLUSHALL,
//! expiry) and tombstone collection once a removal is causally stable. Part of
//! [`super::Elements`]; the module docs there say what a tombstone must wait for.

use super::*;
use crate::engine::kv::lazyfree;

/// Keep the entries `keep` says to, whatever the form (a list's names are built for
/// the call: whole-key removes visit every element anyway).
fn retain_entries(table: &mut Table, mut keep: impl FnMut(&ElementName, &mut Stored) -> bool) {
    match table {
        Table::List(list) => list.retain(|name, slot| keep(&ElementName::from(name), slot)),
        other => unpacked(other).retain(|name, slot| keep(name, slot)),
    }
}

impl Elements {
    /// A whole-key remove that had seen `seen`: every element dot it covers goes, and
    /// an element left with nothing but covered history goes entirely.
    /// `absorb_counters`: the remove ran here, on the elements it held (a DEL, a SET
    /// over the key, an expiry): it absorbs their increments. A remove merged from
    /// elsewhere does not (see `KeyState::remove_covered_values`).
    pub fn remove_observed(&mut self, seen: &VersionVector, absorb_counters: bool) {
        self.removed.merge(seen);
        let removed = &self.removed;
        let keeps_digest = self.digest_kept.is_kept();
        let mut digest = *self.digest.get_mut();
        let mut live = self.live;
        let mut order = self.order.as_deref_mut();
        if let Table::Packed(packed) = &self.table
            && !packed.iter().any(|(_, element)| element.has_dot_covered_by(removed))
        {
            // Nothing held here is covered (a packed element has no context of its own).
            return;
        }
        retain_entries(&mut self.table, |name, slot| {
            let view = slot.view();
            if !view.has_dot_covered_by(removed) && !view.has_context_covered_by(removed) {
                return true;
            }
            if keeps_digest {
                digest ^= view.digest(name);
            }
            let mut taken = std::mem::replace(slot, Stored::PLACEHOLDER).into_state();
            let state = &mut taken;
            let was_live = state.exists();
            let old_score = order.is_some().then(|| live_score(state)).flatten();
            if absorb_counters {
                state.remove_observed(removed);
            } else {
                state.remove_covered_values(removed);
            }
            let keep = canonical(state, removed);
            if keep && keeps_digest {
                digest ^= element_digest(name, state);
            }
            if was_live && !state.exists() {
                live -= 1;
            }
            if let Some(order) = order.as_deref_mut() {
                order.update(name, old_score, if keep { live_score(state) } else { None });
            }
            if keep {
                *slot = Stored::from_owned(taken);
            }
            keep
        });
        *self.digest.get_mut() = digest;
        self.live = live;
        self.repack();
    }

    /// A whole-key remove run on this node (DEL, a SET or STORE over the key, RESTORE
    /// REPLACE, FLUSHALL, expiry): every element held here goes, each by exactly its
    /// own history, and the key-level `removed` context grows only by what `safe`
    /// covers: the writes this node is sure to hold *all* of (its own, and what is
    /// causally stable). Why not all it has seen: an element's context can name a
    /// write this node never received (another node's SMOVE relays member `b`'s
    /// history, whose dot also wrote member `a`; an increment relays the register it
    /// sits on), and a key-level claim over it would remove `a` on every replica
    /// although no remove here ever held it (simulator seed 50265). An element with
    /// history above `safe` stays as an exact tombstone until it is stable (GC), so a
    /// remove of a collection whose writes are all stable stays O(1) in what it ships.
    /// `safe` `None`: claim everything seen (a node without peers, where every write
    /// is its own or recovered whole).
    ///
    /// `by`: the remove's own dot (`None` for an expiry, which every node runs itself),
    /// joined to the context of every tombstone left. Why: tombstone GC drops an
    /// element tombstone once `stable` covers its context, and a context of the
    /// removed writes alone is stable as soon as every node holds *those writes*,
    /// whether or not any node but this one has received the *remove*; a node still
    /// holding the element live would then keep it for good (simulator seed 1416).
    /// With the remove's dot in it, the tombstone waits until every node has merged
    /// the remove. (A later remove here claims this node's earlier dots at key level,
    /// which strips them from the tombstones; it joins its own dot in their place.)
    pub fn remove_held(&mut self, safe: Option<&VersionVector>, by: Option<Dot>) {
        if by.is_some_and(|by| self.seen.covers(by)) {
            // This remove already ran here: the engine runs it with what is stable,
            // then `KeyState::delete` (or `set`) with its own dot alone. Running it
            // again would claim its dot at key level and strip it from the tombstones.
            return;
        }
        let claim = safe.map_or_else(|| self.seen.clone(), |safe| self.seen.meet(safe));
        if by.is_none() && self.live == 0 && self.removed.dominates(&claim) {
            // Nothing live to remove, no dot of its own to join, and nothing newly
            // claimed: every tombstone held is already canonical against `removed` and
            // the walk below would leave each as it is. A key written again after its
            // last element went (a queue emptied and refilled, its pops' tombstones
            // waiting for a peer) must not walk that history on every refill.
            return;
        }
        self.removed.merge(&claim);
        if self.removed.dominates(&self.seen) && self.all_compact() {
            // Every element is one value at a dot the claim covers: each would leave
            // nothing (see `canonical`), so the walk below would empty the collection
            // element by element. Emptied at once instead: a DEL of a million-member
            // set does not rebuild a million states while its shard waits.
            // A large emptied table (and a sorted set's index) is freed off the shard's
            // thread.
            let entries = self.entries_len();
            let empty = match &self.table {
                _ if self.packs => Table::Packed(Packed::default()),
                Table::List(_) => Table::List(Box::default()),
                _ => Table::Map(new_map()),
            };
            let table = std::mem::replace(&mut self.table, empty);
            let order = self.order.as_mut().map(std::mem::take);
            lazyfree::dispose((table, order), entries);
            *self.digest.get_mut() = 0;
            self.live = 0;
            return;
        }
        let removed = &self.removed;
        let keeps_digest = self.digest_kept.is_kept();
        let mut digest = *self.digest.get_mut();
        let mut live = self.live;
        let mut seen = VersionVector::new();
        let mut order = self.order.as_deref_mut();
        retain_entries(&mut self.table, |name, slot| {
            if keeps_digest {
                digest ^= slot.view().digest(name);
            }
            let mut taken = std::mem::replace(slot, Stored::PLACEHOLDER).into_state();
            let state = &mut taken;
            let old_score = order.is_some().then(|| live_score(state)).flatten();
            let was_live = state.exists();
            if was_live {
                live -= 1;
            }
            let own = state.causal_context();
            // Its values go and its increments are absorbed (floors kept until GC).
            state.remove_observed(&own);
            let keep = canonical(state, removed);
            if keep {
                if let Some(by) = by.filter(|by| !removed.covers(*by)) {
                    state.witness(by);
                    seen.add(by);
                }
                if keeps_digest {
                    digest ^= element_digest(name, state);
                }
            }
            if let Some(order) = order.as_deref_mut() {
                order.update(name, old_score, None);
            }
            if keep {
                *slot = Stored::from_owned(taken);
            }
            keep
        });
        *self.digest.get_mut() = digest;
        self.live = live;
        self.seen.merge(&seen);
        debug_assert_eq!(self.live, 0);
        self.repack();
    }

    /// Whether every entry is in the compact form (no tombstone, counter or
    /// concurrent value anywhere).
    fn all_compact(&self) -> bool {
        match &self.table {
            Table::Packed(_) => true,
            Table::Map(map) => map.values().all(|stored| stored.plain_dot().is_some()),
            Table::List(list) => list.all_compact(),
        }
    }

    /// Drop the element tombstones `stable` covers (tombstone GC), but those holding a
    /// counter of a node in `spared` (`kv::tombstone_gc`); returns how many.
    pub fn forget_stable(&mut self, stable: &VersionVector, spared: &[crate::crdt::NodeId]) -> usize {
        // A packed collection holds no tombstones.
        if self.live as usize == self.entries_len() {
            return 0;
        }
        let before = self.entries_len();
        let keeps_digest = self.digest_kept.is_kept();
        let mut digest = *self.digest.get_mut();
        let mut keep = |name: &[u8], state: ElementRef<'_>| {
            let drop = !state.exists() && state.context_within(stable) && !state.holds_counter_of(spared);
            if drop && keeps_digest {
                digest ^= state.digest(name);
            }
            !drop
        };
        match &mut self.table {
            // Every tombstone of a list is outside its chunks.
            Table::List(list) => list.retain_others(keep),
            table => unpacked(table).retain(|name, slot| keep(name, slot.view())),
        }
        *self.digest.get_mut() = digest;
        let dropped = before - self.entries_len();
        self.repack();
        dropped
    }

    /// Whether some entry, tombstones included, holds a counter slot or floor of a
    /// node in `nodes` (tombstone collection spares such a key; `kv::tombstone_gc`).
    pub fn holds_counter_of(&self, nodes: &[NodeId]) -> bool {
        !nodes.is_empty() && self.any_entry(|_, element| element.holds_counter_of(nodes))
    }

    /// Removals that keep insertion order while small (HDEL's tombstone replaces the
    /// entry in place, so this is only for dropping tombstones on request).
    pub fn drop_tombstone(&mut self, name: &[u8]) -> bool {
        match self.lookup(name) {
            Some(element) if !element.exists() => {
                let stored = self.take(name).expect("entry just found");
                if self.keeps_digest() {
                    self.toggle_digest(stored.view().digest(name));
                }
                self.repack();
                true
            }
            _ => false,
        }
    }

    /// Drop every element tombstone (a node without peers keeps none: what it merges is
    /// its own history, replayed in order). Keeps the order of the rest.
    pub fn drop_tombstones(&mut self) {
        if self.live as usize == self.entries_len() {
            return;
        }
        let keeps_digest = self.digest_kept.is_kept();
        let mut digest = *self.digest.get_mut();
        let mut keep = |name: &[u8], state: ElementRef<'_>| {
            let live = state.exists();
            if !live && keeps_digest {
                digest ^= state.digest(name);
            }
            live
        };
        match &mut self.table {
            Table::List(list) => list.retain_others(keep),
            table => unpacked(table).retain(|name, slot| keep(name, slot.view())),
        }
        *self.digest.get_mut() = digest;
        self.repack();
    }
}
