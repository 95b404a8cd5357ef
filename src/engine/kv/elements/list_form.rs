//! The list form of a collection's table: how [`Elements`] reaches a list's (or a
//! graph's) chunks (`list_table.rs`) and merges one element into them. Part of
//! [`super::Elements`]; a list's elements never take the map or packed form, nor do a
//! graph's, but in a delta (see [`Elements::only`]).

use super::*;

impl Elements {
    /// A list's elements in position order, a graph's in name order (`None` for other parts).
    pub fn list(&self) -> Option<&ListTable> {
        match &self.table {
            Table::List(list) => Some(list),
            _ => None,
        }
    }

    /// [`Elements::merge_element`] for a list: `held` is the element this list held
    /// (taken out of its table) with its digest.
    pub(super) fn merge_list_element(
        &mut self,
        name: &[u8],
        held: Option<(KeyState, u64)>,
        mut incoming: KeyState,
        forgotten: &VersionVector,
    ) {
        let Table::List(_) = &self.table else { unreachable!("a list's table") };
        match held {
            Some((mut state, old_digest)) => {
                let was_live = state.exists();
                let remove_wins = crate::bugs::active(crate::bugs::Bug::RemoveWinsMerge) && was_live != incoming.exists() && {
                    let (live, dead) = if was_live { (&state, &incoming) } else { (&incoming, &state) };
                    !live.causal_context().dominates(&dead.causal_context())
                };
                state.merge(&incoming);
                if remove_wins {
                    let all = state.causal_context();
                    state.remove_observed(&all);
                }
                self.seen.merge(&state.causal_context());
                let keep = canonical(&mut state, &self.removed);
                let is_live = state.exists();
                let new_digest = if keep { element_digest(name, &state) } else { 0 };
                self.digest ^= old_digest ^ new_digest;
                self.account(was_live, is_live);
                if keep && let Table::List(list) = &mut self.table {
                    list.put(name, Stored::from_owned(state));
                }
            }
            None => {
                let context = incoming.causal_context();
                self.seen.merge(&context);
                if !forgotten.is_empty() && forgotten.dominates(&context) {
                    return;
                }
                if !forgotten.is_empty() && incoming.has_dot_covered_by(forgotten) {
                    incoming.remove_observed(forgotten);
                    incoming.strip_context_covered_by(forgotten);
                }
                if !canonical(&mut incoming, &self.removed) {
                    return;
                }
                self.digest ^= element_digest(name, &incoming);
                self.account(false, incoming.exists());
                if let Table::List(list) = &mut self.table {
                    list.put(name, Stored::from_owned(incoming));
                }
            }
        }
    }
}
