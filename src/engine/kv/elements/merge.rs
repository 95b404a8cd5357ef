//! Merge: joining another replica's collection, or a delta of it, into this one,
//! element by element (a list's elements through `list_form.rs`). Part of
//! [`super::Elements`]; the module docs there say what a merge must keep.

use super::*;

impl Elements {
    /// Join another replica's collection (or a delta of it) into this one. `forgotten`
    /// covers the element tombstones this node has collected: an element arriving with
    /// no entry here loses the writes it covers (they were removed here).
    pub fn merge(&mut self, other: &Elements, forgotten: &VersionVector) {
        if !self.removed.dominates(&other.removed) {
            self.remove_observed(&other.removed, false);
        }
        if other.entries_len() > 0 && !matches!(self.table, Table::List(_)) {
            unpacked(&mut self.table);
        }
        other.for_each_entry(|name, incoming| self.merge_element(name, incoming.to_state(), forgotten));
        self.repack();
    }

    /// Merge one element; the table is in the map or the list form.
    fn merge_element(&mut self, name: &[u8], mut incoming: KeyState, forgotten: &VersionVector) {
        debug_assert!(incoming.is_element());
        if incoming.has_dot_covered_by(&self.removed) {
            incoming.remove_covered_values(&self.removed);
        }
        let keeps_digest = self.digest_kept.is_kept();
        if let Table::List(list) = &mut self.table {
            // Taken out and put back: a chunk's entries are not slots to change in place.
            let held = list.remove(name).map(|stored| {
                let old_digest = if keeps_digest { stored.view().digest(name) } else { 0 };
                (stored.into_state(), old_digest)
            });
            self.merge_list_element(name, held, incoming, forgotten);
            return;
        }
        match unpacked(&mut self.table).get_full_mut(name) {
            Some((_, stored_name, slot)) => {
                let old_digest = if keeps_digest { slot.view().digest(stored_name) } else { 0 };
                let mut taken = std::mem::replace(slot, Stored::PLACEHOLDER).into_state();
                let state = &mut taken;
                if let Some(absent) = incoming.absent_writes(Some(state), forgotten) {
                    // Removed here, its removal since collected (`value::absence`).
                    incoming.remove_absent(&absent);
                }
                let was_live = state.exists();
                let old_score = self.order.is_some().then(|| live_score(state)).flatten();
                let remove_wins = crate::bugs::active(crate::bugs::Bug::RemoveWinsMerge) && was_live != incoming.exists() && {
                    let (live, dead) = if was_live { (&*state, &incoming) } else { (&incoming, &*state) };
                    !live.causal_context().dominates(&dead.causal_context())
                };
                state.merge(&incoming);
                if remove_wins {
                    let all = state.causal_context();
                    state.remove_observed(&all);
                }
                self.seen.merge(&state.causal_context());
                let keep = canonical(state, &self.removed);
                let is_live = state.exists();
                if let Some(order) = self.order.as_deref_mut() {
                    order.update(stored_name, old_score, live_score(state));
                }
                let new_digest = if keep && keeps_digest { element_digest(stored_name, state) } else { 0 };
                self.digest.toggle(old_digest ^ new_digest);
                if keep {
                    *slot = Stored::from_owned(taken);
                }
                self.account(was_live, is_live);
                if !keep {
                    self.take(name);
                }
            }
            None => {
                let context = incoming.causal_context();
                self.seen.merge(&context);
                // Everything it holds was removed here and its tombstone collected.
                if !forgotten.is_empty() && forgotten.dominates(&context) {
                    return;
                }
                if !forgotten.is_empty() && incoming.has_dot_covered_by(forgotten) {
                    // What `forgotten` covers stays removed here for good: it need not
                    // be repeated in the element's context (a node-local record that
                    // its peers would not share).
                    incoming.remove_observed(forgotten);
                    incoming.strip_context_covered_by(forgotten);
                }
                // A tombstone of writes a whole-key remove already covers adds nothing.
                if !canonical(&mut incoming, &self.removed) {
                    return;
                }
                if keeps_digest {
                    self.digest.toggle(element_digest(name, &incoming));
                }
                self.account(false, incoming.exists());
                let name = ElementName::from(name);
                if let Some(order) = self.order.as_deref_mut() {
                    order.update(&name, None, live_score(&incoming));
                }
                unpacked(&mut self.table).insert(name, Stored::from_owned(incoming));
            }
        }
    }
}
