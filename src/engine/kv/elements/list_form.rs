//! The list form of a collection's table: how [`Elements`] reaches a list's (or a
//! graph's) chunks (`list_table.rs`) and merges one element into them. Part of
//! [`super::Elements`]; a list's elements never take the map or packed form, nor do a
//! graph's, but in a delta (see [`Elements::only`]).

use super::*;
use crate::engine::kv::element::Tombstone;
use crate::engine::kv::list_table::Name as ListName;

/// What a pop leaves to ship ([`Elements::pop_list_end`]).
#[derive(Debug)]
pub enum Removed {
    /// An element of one value at `old` removed by `by`: the delta (and the tombstone,
    /// where one is kept) is `KeyState::plain_removed(old, by)`
    /// (`DeltaSink::key_element_removed`).
    Plain { old: Dot, by: Dot },
    /// The tombstone left (kept in the list too when tombstones are kept).
    State(KeyState),
}

impl Removed {
    /// The removal's delta as a state.
    pub fn into_state(self) -> KeyState {
        match self {
            Removed::Plain { old, by } => KeyState::plain_removed(old, by),
            Removed::State(state) => state,
        }
    }
}

impl Elements {
    /// A list's elements in position order, a graph's in name order (`None` for other parts).
    pub fn list(&self) -> Option<&ListTable> {
        match &self.table {
            Table::List(list) => Some(list),
            _ => None,
        }
    }

    /// Whether this part is held in chunks and `name` sorts past every chunked entry
    /// (a stream entry's new id): [`Elements::push_list_element`] at the tail may write
    /// it then.
    pub fn is_past_chunked_end(&self, name: &[u8]) -> bool {
        match &self.table {
            Table::List(list) => list.chunked_last().is_none_or(|last| name > last),
            _ => false,
        }
    }

    /// A push's write to a list: the element `name` is new (named after the push's own
    /// dot) and lands past the tail (`tail`) or before the head, so it is neither
    /// looked up first nor searched for: [`Elements::write_element`] of an absent
    /// element holding one value at one dot (`element`, an [`ElementRef::plain`] view:
    /// the same state, digest and context) with its chunk reached directly
    /// ([`ListTable::put_at_end`]). No state is built: the view is also the delta to ship
    /// (`DeltaSink::key_elements_pushed`).
    pub fn push_list_element(&mut self, tail: bool, name: &[u8], element: ElementRef<'_>) {
        debug_assert!(element.plain_dot().is_some(), "a push writes one value at one dot");
        // A plain state has no context of its own for `removed` to strip: the view is
        // already in its canonical form.
        debug_assert!(element.plain_dot().is_some_and(|dot| !self.removed.covers(dot)), "a push's dot is new");
        let keeps_digest = self.keeps_digest();
        let Table::List(list) = &mut self.table else { unreachable!("a list's table") };
        element.add_context_to(&mut self.seen);
        list.put_at_end(tail, name, element);
        if keeps_digest {
            self.toggle_digest(element.digest(name));
        }
        self.account(false, true);
    }

    /// A pop's write to a list: take the live element at the head (`tail`: at the
    /// tail), hand it to `read` (the reply's copy of its value), and remove it at `dot`
    /// as [`Elements::write_element`] with `KeyState::delete` would (the same state,
    /// digest, context and tombstone, kept only when `keep_tombstone`), but with no
    /// lookup by name: the element is read and cut from its chunk end in one step.
    /// Returns its name, what `read` returned and the removal's delta (the tombstone).
    /// `None`, changing nothing, unless every live element is chunked (see
    /// [`ListTable::live_all_chunked`]; the caller then walks and writes by name).
    pub fn pop_list_end<R>(
        &mut self,
        tail: bool,
        dot: Dot,
        keep_tombstone: bool,
        read: impl FnOnce(ElementRef<'_>) -> R,
    ) -> Option<(ListName, R, Removed)> {
        let keeps_digest = self.keeps_digest();
        let Table::List(list) = &mut self.table else { return None };
        if !list.live_all_chunked() {
            return None;
        }
        let (name, (value, taken, old_digest)) = list.pop_end(tail, |name, element| {
            let taken = element.plain_dot().ok_or_else(|| element.to_state());
            (read(element), taken, if keeps_digest { element.digest(name) } else { 0 })
        })?;
        if let Ok(old) = taken
            && !keep_tombstone
            && !self.removed.covers(old)
            && !self.removed.covers(dot)
        {
            // Gone without a trace (a node without peers): what the general path below
            // leaves, without building the tombstone it would ship and drop. Its
            // context, `old` and `dot` (neither covered by `removed`, so `canonical`
            // would keep both), joins the seen context as `add_context_to` joins it.
            self.seen.add(old);
            self.seen.add(dot);
            self.toggle_digest(old_digest);
            self.account(true, false);
            return Some((name, value, Removed::Plain { old, by: dot }));
        }
        if let Ok(old) = taken
            && keep_tombstone
            && !self.removed.covers(old)
            && !self.removed.covers(dot)
        {
            // The tombstone kept (a node with peers): `plain_removed(old, dot)`, which
            // `canonical` leaves as it is (`removed` covers neither dot), in its compact
            // form (no allocation), and shipped as the plain removal it is
            // (`DeltaSink::key_element_removed`, the same delta).
            let tombstone = Tombstone::of_removal(old, dot);
            let new_digest = if keeps_digest { tombstone.digest(&name) } else { 0 };
            list.put_other_unchunked(&name, Stored::Tombstone(tombstone));
            self.seen.add(old);
            self.seen.add(dot);
            if keeps_digest {
                self.toggle_digest(old_digest ^ new_digest);
            }
            self.account(true, false);
            return Some((name, value, Removed::Plain { old, by: dot }));
        }
        // A chunked element is one value at one dot: its removal's tombstone is known
        // without the general mutation (the same state: `KeyState::plain_removed`).
        let mut state = match taken {
            Ok(old) => KeyState::plain_removed(old, dot),
            Err(mut state) => {
                debug_assert!(state.exists() && !state.is_blank());
                state.delete(dot);
                state
            }
        };
        debug_assert!(state.is_element(), "an element holds neither a TTL nor elements");
        canonical(&mut state, &self.removed);
        let view = ElementRef::of_state(&state);
        view.add_context_to(&mut self.seen);
        if !keep_tombstone && !state.exists() {
            // Gone without a trace (a node without peers), as write_element leaves it.
            self.toggle_digest(old_digest);
        } else {
            list.put_view(&name, view);
            if keeps_digest {
                self.toggle_digest(old_digest ^ view.digest(&name));
            }
        }
        self.account(true, state.exists());
        Some((name, value, Removed::State(state)))
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
                if let Some(absent) = incoming.absent_writes(Some(&state), forgotten) {
                    incoming.remove_absent(&absent);
                }
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
                if keep && self.keeps_digest() {
                    self.toggle_digest(element_digest(name, &state));
                }
                self.toggle_digest(old_digest);
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
                if self.keeps_digest() {
                    self.toggle_digest(element_digest(name, &incoming));
                }
                self.account(false, incoming.exists());
                if let Table::List(list) = &mut self.table {
                    list.put(name, Stored::from_owned(incoming));
                }
            }
        }
    }
}
