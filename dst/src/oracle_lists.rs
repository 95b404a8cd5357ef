//! The reference order of replicated lists (DESIGN §5, row List: "sequence CRDT,
//! element ids ordered by `(hlc, node)`; same order everywhere"), written independently
//! of the position code: every insert (LPUSH, RPUSH, LINSERT) with the list its node
//! held just before it, and rules about where its elements must end up.
//!
//! Elements are named by their positions, read from the engine (they are the elements'
//! identities, as in `oracle_collections.rs`); their byte order is never used here.
//! Which elements survive is `oracle_collections.rs`'s business; this module checks
//! the order of the survivors:
//!
//! - An insert keeps its place among what its node saw: an element the writer held
//!   before the insert's gap stays before every element of the insert, one after the
//!   gap stays after them (so one client's pushes to one end, each having seen the
//!   previous, stay in push order), and a push's own elements stay in push order.
//! - Concurrent inserts into the same gap (the same neighbours where each was made)
//!   are ordered by their dots, the smaller first, in every region: not by the order
//!   in which they arrived anywhere.
//!
//! Sound across crashes: a restarted node's inserts are judged by the list it held
//! when it made them, whatever it had lost.

use std::collections::BTreeMap;

use bytes::Bytes;
use meridian::crdt::Dot;

/// One insert of one or more elements into a list, as its writer made it.
#[derive(Clone, Debug)]
pub struct Insert {
    pub dot: Dot,
    /// The writer's live elements, in list order, just before the insert.
    pub seen: Vec<Bytes>,
    /// The inserted elements, in list order.
    pub new: Vec<Bytes>,
    /// How many of `seen` come before the inserted block.
    pub gap: usize,
    pub sim_ms: u64,
}

impl Insert {
    /// The writer's neighbours of the inserted block: the gap it went into.
    fn neighbours(&self) -> (Option<&Bytes>, Option<&Bytes>) {
        (self.gap.checked_sub(1).map(|i| &self.seen[i]), self.seen.get(self.gap))
    }
}

#[derive(Clone, Debug, Default)]
pub struct ListOracle {
    pub inserts: BTreeMap<Bytes, Vec<Insert>>,
}

fn show(name: &Bytes, values: &BTreeMap<&Bytes, (usize, &Bytes)>) -> String {
    match values.get(name) {
        Some((i, v)) => format!("{:?}@{i}", String::from_utf8_lossy(v)),
        None => "(gone)".into(),
    }
}

impl ListOracle {
    /// Record an insert: `before` and `after` are the writer's live elements in list
    /// order around it. Its new elements must form one block of `after` (a push's
    /// elements are adjacent where it was made), or the insert is refused.
    pub fn record(&mut self, key: Bytes, dot: Dot, before: &[Bytes], after: &[Bytes], sim_ms: u64) -> Result<(), String> {
        let new: Vec<Bytes> = after.iter().filter(|n| !before.contains(n)).cloned().collect();
        if new.is_empty() {
            return Ok(());
        }
        let first = after.iter().position(|n| *n == new[0]).expect("a new element is in the list after");
        if after[first..first + new.len()] != new[..] {
            return Err(format!("an insert into {key:?} at {dot:?} did not place its elements together where it was made"));
        }
        let mut kept = after[..first].to_vec();
        kept.extend_from_slice(&after[first + new.len()..]);
        if kept != before {
            return Err(format!("an insert into {key:?} at {dot:?} moved or removed elements where it was made"));
        }
        self.inserts.entry(key).or_default().push(Insert { dot, seen: before.to_vec(), new, gap: first, sim_ms });
        Ok(())
    }

    /// Check a converged list (its elements' names and values, in order) against every
    /// insert into `key`; an error says which rule broke. Returns how many pairs of
    /// inserts into one gap, both with elements left, were compared.
    pub fn check(&self, key: &Bytes, list: &[(Bytes, Bytes)]) -> Result<usize, String> {
        let Some(inserts) = self.inserts.get(key) else { return Ok(0) };
        let at: BTreeMap<&Bytes, (usize, &Bytes)> = list.iter().enumerate().map(|(i, (n, v))| (n, (i, v))).collect();
        let index = |n: &Bytes| at.get(n).map(|(i, _)| *i);
        for insert in inserts {
            let new: Vec<usize> = insert.new.iter().filter_map(index).collect();
            if new.windows(2).any(|w| w[0] > w[1]) {
                return Err(format!("the elements of the insert at {:?} are out of their order: {new:?}", insert.dot));
            }
            let (Some(&lowest), Some(&highest)) = (new.iter().min(), new.iter().max()) else { continue };
            for (i, seen) in insert.seen.iter().enumerate() {
                let Some(j) = index(seen) else { continue };
                let before = i < insert.gap;
                if (before && j > lowest) || (!before && j < highest) {
                    return Err(format!(
                        "the insert at {:?} ({} ms) went {} {}, which its node held {} its gap; it is now at {}",
                        insert.dot,
                        insert.sim_ms,
                        if before { "before" } else { "after" },
                        show(seen, &at),
                        if before { "before" } else { "after" },
                        show(&insert.new[0], &at)
                    ));
                }
            }
        }
        // Concurrent inserts into one gap: ordered by their dots.
        let mut by_gap: BTreeMap<(Option<&Bytes>, Option<&Bytes>), Vec<&Insert>> = BTreeMap::new();
        for insert in inserts {
            by_gap.entry(insert.neighbours()).or_default().push(insert);
        }
        let mut pairs = 0;
        for same_gap in by_gap.values().filter(|g| g.len() > 1) {
            let placed: Vec<(Dot, usize, &Insert)> =
                same_gap.iter().filter_map(|i| i.new.iter().filter_map(index).min().map(|at| (i.dot, at, *i))).collect();
            pairs += placed.len() * placed.len().saturating_sub(1) / 2;
            for a in &placed {
                for b in &placed {
                    if a.0 < b.0 && a.1 > b.1 {
                        return Err(format!(
                            "inserts into one gap out of dot order: {:?} ({} ms) is at {}, after {:?} ({} ms) at {}",
                            a.0, a.2.sim_ms, a.1, b.0, b.2.sim_ms, b.1
                        ));
                    }
                }
            }
        }
        Ok(pairs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use meridian::crdt::Hlc;

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    fn names(s: &[&str]) -> Vec<Bytes> {
        s.iter().map(|n| b(n)).collect()
    }

    fn list(s: &[&str]) -> Vec<(Bytes, Bytes)> {
        s.iter().map(|n| (b(n), b(n))).collect()
    }

    #[test]
    fn concurrent_pushes_at_one_end_must_follow_their_dots_not_their_arrival() {
        let mut oracle = ListOracle::default();
        let key = b("l");
        let (early, late) = (Dot::new(Hlc::from_parts(5, 0), 1), Dot::new(Hlc::from_parts(6, 0), 2));
        oracle.record(key.clone(), early, &names(&["h"]), &names(&["h", "x"]), 0).expect("an insert");
        oracle.record(key.clone(), late, &names(&["h"]), &names(&["h", "y"]), 0).expect("an insert");
        assert!(oracle.check(&key, &list(&["h", "x", "y"])).is_ok());
        assert!(oracle.check(&key, &list(&["h", "y", "x"])).is_err(), "the later dot goes second");
        assert!(oracle.check(&key, &list(&["x", "h", "y"])).is_err(), "x was pushed after h");
        assert!(oracle.check(&key, &list(&["h", "y"])).is_ok(), "a popped element is no order");
    }
}
