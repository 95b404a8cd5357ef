//! Property tests: the merge laws of DESIGN §5 for string, hash, set, sorted set and list
//! keys (registers, counters, TTL, hash fields, set members, member scores and their
//! increments, list pushes, pops, LSET and LINSERT, whole-key delete, type clashes), that
//! a sorted set's score order always matches its members' scores and a list's position
//! index its live elements, that applying the
//! element-sized deltas in any order equals merging the full states, and the
//! concurrent outcomes users are promised (one example each in `value_outcomes`).

use proptest::prelude::*;

use bytes::Bytes;

use super::value::KeyState;
use crate::crdt::{Dot, HlcClock};

mod workload;

use workload::*;
pub(super) use workload::{field, merged, score_order_matches_members};

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn merge_is_commutative(steps in prop::collection::vec(step(), 0..40)) {
        let s = run(&steps);
        prop_assert_eq!(merged(&s[0], &s[1]), merged(&s[1], &s[0]));
    }

    #[test]
    fn merge_is_associative(steps in prop::collection::vec(step(), 0..40)) {
        let s = run(&steps);
        prop_assert_eq!(merged(&merged(&s[0], &s[1]), &s[2]), merged(&s[0], &merged(&s[1], &s[2])));
    }

    #[test]
    fn merge_is_idempotent(steps in prop::collection::vec(step(), 0..40)) {
        let s = run(&steps);
        prop_assert_eq!(merged(&s[0], &s[0]), s[0].clone());
        let ab = merged(&s[0], &s[1]);
        prop_assert_eq!(merged(&ab, &s[1]), ab);
    }

    #[test]
    fn replicas_converge_after_exchanging_states(steps in prop::collection::vec(step(), 0..40)) {
        let s = run(&steps);
        let all = merged(&merged(&s[0], &s[1]), &s[2]);
        let other_order = merged(&merged(&s[2], &s[0]), &s[1]);
        prop_assert_eq!(all.read(), other_order.read());
        prop_assert_eq!(all.expire_at_ms(), other_order.expire_at_ms());
        prop_assert_eq!(all.kind(), other_order.kind());
        prop_assert_eq!(super::merkle::digest(b"k", &all), super::merkle::digest(b"k", &other_order));
        prop_assert!(s.iter().all(score_order_matches_members));
        prop_assert!(score_order_matches_members(&all) && score_order_matches_members(&other_order));
        prop_assert!(s.iter().all(positions_match_elements));
        prop_assert!(positions_match_elements(&all) && positions_match_elements(&other_order));
        // The same list, element for element, in the same order.
        let list = |s: &KeyState| s.list_elements().map(|l| super::lists::walk(l, false).map(|(p, e)| (p, e.read())).collect::<Vec<_>>());
        prop_assert_eq!(list(&all), list(&other_order));
        prop_assert_eq!(all, other_order);
    }

    #[test]
    fn merging_never_moves_a_state_backwards(steps in prop::collection::vec(step(), 0..40)) {
        // Merging what a replica already contains changes nothing (inflation).
        let s = run(&steps);
        let ab = merged(&s[0], &s[1]);
        prop_assert_eq!(merged(&ab, &s[0]), ab.clone());
        prop_assert!(ab.causal_context().dominates(&s[0].causal_context()));
    }

    #[test]
    fn applying_every_delta_in_any_order_equals_merging_the_states(steps in prop::collection::vec(step(), 0..40), seed in 0u64..1000) {
        let s = run(&steps);
        let all_states = merged(&merged(&s[0], &s[1]), &s[2]);
        let mut deltas: Vec<KeyState> = run_deltas(&steps).into_iter().flatten().collect();
        let mut forward = KeyState::new();
        deltas.iter().for_each(|d| forward.merge(d));
        // A deterministic shuffle, and every delta twice.
        let n = deltas.len().max(1);
        for i in 0..deltas.len() {
            deltas.swap(i, (seed as usize * 31 + i * 17) % n);
        }
        let mut shuffled = KeyState::new();
        deltas.iter().chain(deltas.iter().rev()).for_each(|d| shuffled.merge(d));
        prop_assert_eq!(&forward, &all_states);
        prop_assert_eq!(&shuffled, &all_states);
        prop_assert_eq!(super::merkle::digest(b"k", &shuffled), super::merkle::digest(b"k", &all_states));
        prop_assert_eq!(forward.kind(), all_states.kind());
        prop_assert!(score_order_matches_members(&forward) && score_order_matches_members(&shuffled));
        prop_assert!(positions_match_elements(&forward) && positions_match_elements(&shuffled));
    }

    #[test]
    fn collecting_element_tombstones_at_the_stable_vector_never_changes_the_outcome(steps in prop::collection::vec(step_with_gc(), 0..60)) {
        // Tombstone GC drops what every replica holds; replicas that then exchange
        // their states converge, to what they converge to without any GC.
        let mut with_gc = replicas();
        run_into(&steps, &mut with_gc);
        let without: Vec<Step> = steps.iter().filter(|s| !matches!(s, Step::Forget(_))).cloned().collect();
        let mut without_gc = replicas();
        run_into(&without, &mut without_gc);
        for replicas in [&mut with_gc, &mut without_gc] {
            for round in 0..3 {
                for from in 0..REPLICAS {
                    for to in 0..REPLICAS {
                        sync(replicas, from, to, 1_000_000);
                    }
                }
                if round == 1 {
                    (0..REPLICAS).for_each(|r| forget(replicas, r));
                }
            }
            // Everything is stable now: what GC leaves of each replica.
            let stable = stable(replicas);
            for replica in replicas.iter_mut() {
                if replica.state.exists() {
                    replica.state.forget_stable_elements(&stable, &[]);
                } else if stable.dominates(&replica.state.causal_context()) {
                    // A key tombstone goes whole (`KvEngine::forget_stable`).
                    replica.state = KeyState::new();
                }
            }
        }
        for r in 1..REPLICAS {
            prop_assert_eq!(&with_gc[r].state, &with_gc[0].state, "replica {} differs after GC", r);
        }
        prop_assert_eq!(live_view(&with_gc[0].state), live_view(&without_gc[0].state));
    }

    #[test]
    fn a_delete_never_resurrects_what_it_observed(steps in prop::collection::vec(step(), 0..30)) {
        let s = run(&steps);
        let before = s[0].clone();
        let mut deleted = before.clone();
        let mut clock = HlcClock::new();
        clock.observe(before.causal_context().max_hlc(), 0, 0);
        deleted.delete(Dot::new(clock.tick(0), 1));
        // Re-delivering the old state, in any order with the tombstone, keeps it deleted.
        prop_assert!(!merged(&deleted, &before).exists());
        prop_assert!(!merged(&before, &deleted).exists());
    }
}

/// What a client reads of a key: its type, string value, and every live element with
/// its value.
fn live_view(state: &KeyState) -> String {
    let elements = |e: Option<&super::elements::Elements>| -> Vec<(Bytes, Option<String>)> {
        let mut v: Vec<_> =
            e.into_iter().flat_map(|e| e.iter().map(|(n, s)| (Bytes::copy_from_slice(n), s.read().map(|v| format!("{v:?}"))))).collect();
        v.sort();
        v
    };
    format!(
        "{:?} {:?} {:?} {:?} {:?}",
        state.kind(),
        state.read(),
        elements(state.hash()),
        elements(state.set_members()),
        elements(state.zset_members())
    )
}

proptest! {
    #[test]
    fn the_newest_stamp_is_the_newest_entry_of_the_causal_context(steps in prop::collection::vec(step(), 0..40)) {
        for state in run(&steps) {
            prop_assert_eq!(state.max_hlc(), state.causal_context().max_hlc());
            let context = state.causal_context();
            for node in 0..5 {
                prop_assert_eq!(state.newest_stamp_of(node), context.get(node));
            }
        }
    }
}
