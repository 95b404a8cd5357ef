//! The common element write done in place: a value set (HSET, SADD, ZADD) over no
//! element, or over a plain one (one value at one dot, `element.rs`) this node wrote
//! at an older stamp. Part of [`super::Elements`].
//!
//! Why: [`Elements::write_element`] takes the element out as a [`KeyState`], changes
//! it, puts it in canonical form and stores it back (~2,500 instructions an HSET on a
//! large hash). For this case the result is known without any of that: the new value
//! alone at the new dot, exactly what `KeyState::set(dot, value, SetTtl::Keep)` leaves
//! there (its own compact overwrite: the new dot implies the old one, which is the
//! same node's), with no context to strip under `removed`. Every other case (a packed
//! or chunked table, an element with more history, another node's value) goes the
//! general way, so both paths leave the same collection (tested below and by the
//! shipped-delta tests of `collection_writes.rs`).
//!
//! Must never: store anything `write_element` would not, or skip the digest, the
//! counts, the contexts or the score order it keeps.

use super::*;
use crate::engine::kv::value::StrVal;

impl Elements {
    /// Whether [`Elements::set_plain`] may apply here at all (the map form): callers
    /// skip building the value for it otherwise.
    pub fn sets_in_place(&self) -> bool {
        matches!(self.table, Table::Map(_))
    }

    /// Set element `name` to `value` at `dot` in place, when the result is the new
    /// value alone (see the module docs), and return whether it was live before and a
    /// view of what it holds now (the delta to ship, without a copy: a write of one
    /// element ships it from the view, `DeltaSink::key_element_set`). `Err(value)`
    /// hands the value back where the general path ([`Elements::write_element`] with
    /// `KeyState::set`) must run instead.
    pub fn set_plain(&mut self, name: &[u8], dot: Dot, value: StrVal) -> Result<(bool, ElementRef<'_>), StrVal> {
        let keeps_digest = self.digest_kept.is_kept();
        let Table::Map(map) = &mut self.table else { return Err(value) };
        // One hash whether the element is there or not; a new name's insert probes
        // again, in the control bytes the lookup has just loaded.
        let hash = map.hash(name);
        let (index, was_live, old_digest, old_score) = match map.find_hashed(hash, name) {
            Some(index) => {
                let (stored_name, slot) = map.get_index_mut(index).expect("index just found");
                match slot.plain_dot() {
                    Some(old) if old.node == dot.node && old.hlc < dot.hlc => {}
                    _ => return Err(value),
                }
                let old = slot.view();
                debug_assert!(old.exists(), "a plain element is live");
                let old_score = self.order.is_some().then(|| old.score());
                let old_digest = if keeps_digest { old.digest(stored_name) } else { 0 };
                *slot = Stored::value_at(dot, value);
                (index, true, old_digest, old_score)
            }
            None => {
                let index = map.push_new_hashed(hash, ElementName::from(name), Stored::value_at(dot, value));
                (index, false, 0, None)
            }
        };
        let (stored_name, slot) = map.get_index_mut(index).expect("index just found or inserted");
        let new = slot.view();
        if let Some(order) = self.order.as_deref_mut() {
            order.update(stored_name, old_score, Some(new.score()));
        }
        if keeps_digest {
            self.digest.toggle(old_digest ^ new.digest(name));
        }
        self.seen.add(dot);
        self.account(was_live, true);
        let Table::Map(map) = &self.table else { unreachable!("the map form, matched above") };
        let element = map.get_index(index).expect("index just found or inserted").1.view();
        debug_assert_eq!(element.plain_dot(), Some(dot));
        Ok((was_live, element))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::kv::value::SetTtl;

    fn dot(ms: u64, node: NodeId) -> Dot {
        Dot::new(Hlc::from_parts(ms, 0), node)
    }

    fn value(i: u64) -> StrVal {
        if i.is_multiple_of(3) { StrVal::Int(i as i64) } else { StrVal::raw(format!("v{i}")) }
    }

    /// Writes `(name, node, value)` both ways, at growing stamps, and checks that the
    /// two collections stay equal entry by entry, digest, counts and order included.
    fn both_ways(part: Part, writes: &[(&str, NodeId, u64)]) {
        let (mut fast, mut general) = (Elements::for_part(part), Elements::for_part(part));
        // Past the packed form (where the fast path does not apply) for hashes and sets.
        for i in 0..600u64 {
            let name = format!("pre{i}");
            for elements in [&mut fast, &mut general] {
                elements.write(name.as_bytes(), |s| s.set(dot(1 + i, 1), value(i), SetTtl::Keep));
            }
        }
        let mut fast_taken = 0;
        for (step, (name, node, v)) in writes.iter().enumerate() {
            let at = dot(1_000 + step as u64, *node);
            let expected = general.write_element(name.as_bytes(), true, |s| s.set(at, value(*v), SetTtl::Keep));
            let written = match fast.set_plain(name.as_bytes(), at, value(*v)) {
                Ok((was_live, element)) => {
                    fast_taken += 1;
                    ElementWrite { state: element.to_state(), was_live }
                }
                Err(back) => fast.write_element(name.as_bytes(), true, |s| s.set(at, back, SetTtl::Keep)),
            };
            assert_eq!(written.state, expected.state, "step {step}");
            assert_eq!(written.was_live, expected.was_live, "step {step}");
            assert!(fast == general, "step {step}");
            assert_eq!(fast.context(), general.context(), "step {step}");
            if part == Part::Zset {
                let order =
                    |e: &Elements| e.score_order().expect("zset").iter(false).map(|(s, n)| (n.to_vec(), s.to_bits())).collect::<Vec<_>>();
                assert_eq!(order(&fast), order(&general), "step {step}");
            }
        }
        assert!(fast_taken > 0, "the fast path ran");
    }

    #[test]
    fn a_set_in_place_leaves_what_the_general_write_leaves() {
        let writes = [
            ("new", 1, 1),
            ("new", 1, 2),  // own older plain value: in place
            ("pre7", 1, 3), // preloaded, own: in place
            ("pre8", 2, 4), // another node's write over ours: general
            ("pre8", 2, 6), // its own older value now: in place
            ("pre8", 1, 5), // back to node 1 over node 2's: general
            ("x", 3, 9),
        ];
        for part in [Part::Hash, Part::Set, Part::Zset] {
            both_ways(part, &writes);
        }
    }
}
