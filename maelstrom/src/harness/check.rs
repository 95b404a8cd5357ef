//! Maelstrom's rules, applied to a history: each check returns the violations it
//! found (empty: the history passes).
//!
//! - g-set and broadcast: every acknowledged add (message) is in every node's final
//!   read; nothing is ever read that no client sent; the final reads agree.
//! - g-counter and pn-counter: every node's final read equals the acknowledged deltas
//!   plus the sum of some subset of the indeterminate ones (exactly; Maelstrom checks
//!   the bounds), and the final reads agree.
//! - lin-kv: a checker that is sound but not complete: every violation it reports is a
//!   real one (no linearization exists), but it can miss some. It relies on every
//!   written value being unique (the generator makes them so) and looks for reads (and
//!   compare-and-sets, which read their `from`) that saw a value already overwritten
//!   before they began, values no write had begun, the key's absence after a write had
//!   finished, reads going back in time, and two compare-and-sets from one value.
//!
//! Judges only: never runs anything.

use std::collections::{BTreeSet, HashMap};

use serde_json::Value;

use super::history::{Op, Outcome, Request};
use crate::message::code;

/// Violations listed in full at most; the count covers all.
pub const VIOLATIONS_LISTED_MAX: usize = 5;

fn ints(value: &Value) -> BTreeSet<i64> {
    value.as_array().map(|items| items.iter().filter_map(Value::as_i64).collect()).unwrap_or_default()
}

/// g-set and broadcast: `finals[n]` is node n's final read.
pub fn sets(history: &[Op], finals: &[Value]) -> Vec<String> {
    let mut violations = Vec::new();
    let element = |op: &Op| match op.request {
        Request::Add(e) | Request::Broadcast(e) => Some(e),
        _ => None,
    };
    // A definite failure did not happen; everything else may have.
    let attempted: BTreeSet<i64> = history.iter().filter(|op| !matches!(op.outcome, Outcome::Failed(_))).filter_map(element).collect();
    let acked: BTreeSet<i64> = history.iter().filter(|op| op.is_ok()).filter_map(element).collect();
    // When each element's add was first sent: a read may hold only elements sent before it finished.
    let mut sent_us: HashMap<i64, u64> = HashMap::new();
    for op in history {
        if let Some(e) = element(op) {
            let at = sent_us.entry(e).or_insert(op.invoked_us);
            *at = (*at).min(op.invoked_us);
        }
    }
    for op in history.iter().filter(|op| op.request == Request::Read) {
        let (Outcome::Ok(value), Some(done)) = (&op.outcome, op.completed_us) else { continue };
        let items = value.as_array().map(Vec::as_slice).unwrap_or_default();
        let phantom: Vec<i64> = items.iter().filter_map(Value::as_i64).filter(|e| sent_us.get(e).is_none_or(|&at| at >= done)).collect();
        if !phantom.is_empty() {
            violations.push(format!("a read on n{} returned {phantom:?}, which no client had sent yet", op.node));
        }
    }
    let reads: Vec<BTreeSet<i64>> = finals.iter().map(ints).collect();
    for (node, read) in reads.iter().enumerate() {
        let lost: Vec<i64> = acked.difference(read).copied().collect();
        if !lost.is_empty() {
            violations.push(format!(
                "n{node}'s final read lacks {} acknowledged elements, first {:?}",
                lost.len(),
                &lost[..lost.len().min(5)]
            ));
        }
        let phantom: Vec<i64> = read.difference(&attempted).copied().collect();
        if !phantom.is_empty() {
            violations.push(format!("n{node}'s final read has elements no client sent: {phantom:?}"));
        }
    }
    if reads.windows(2).any(|w| w[0] != w[1]) {
        let sizes: Vec<usize> = reads.iter().map(BTreeSet::len).collect();
        violations.push(format!("the final reads differ between nodes (sizes {sizes:?}): the replicas did not converge"));
    }
    violations
}

/// Distinct subset sums tracked at most; past it the counter check falls back to
/// Maelstrom's bounds (every subset sum lies between them).
const SUBSET_SUMS_MAX: usize = 100_000;

/// Every sum of a subset of `deltas`, or `None` past [`SUBSET_SUMS_MAX`].
fn subset_sums(deltas: &[i64]) -> Option<BTreeSet<i64>> {
    let mut sums = BTreeSet::from([0i64]);
    for &delta in deltas.iter().filter(|&&d| d != 0) {
        let shifted: Vec<i64> = sums.iter().map(|s| s + delta).collect();
        sums.extend(shifted);
        if sums.len() > SUBSET_SUMS_MAX {
            return None;
        }
    }
    Some(sums)
}

/// g-counter and pn-counter: `finals[n]` is node n's final read. It must be the
/// acknowledged deltas plus the sum of some subset of the indeterminate ones (exactly,
/// where the subset sums are few enough to list; else within Maelstrom's bounds).
pub fn counter(history: &[Op], finals: &[Value]) -> Vec<String> {
    let mut acked = 0i64;
    let mut open = Vec::new();
    for op in history {
        let Request::Add(delta) = op.request else { continue };
        match op.outcome {
            Outcome::Ok(_) => acked += delta,
            Outcome::Failed(_) => {}
            Outcome::Pending | Outcome::Indeterminate => open.push(delta),
        }
    }
    let lower = acked + open.iter().filter(|d| **d < 0).sum::<i64>();
    let upper = acked + open.iter().filter(|d| **d > 0).sum::<i64>();
    let sums = subset_sums(&open);
    let mut violations = Vec::new();
    for (node, read) in finals.iter().enumerate() {
        match read.as_i64() {
            Some(v) if !(lower..=upper).contains(&v) => {
                violations.push(format!("n{node}'s final read {v} is outside [{lower}, {upper}] (acknowledged sum {acked})"))
            }
            Some(v) if sums.as_ref().is_some_and(|sums| !sums.contains(&(v - acked))) => violations.push(format!(
                "n{node}'s final read {v} is the acknowledged sum {acked} plus no subset of the {} indeterminate deltas",
                open.len()
            )),
            Some(_) => {}
            None => violations.push(format!("n{node}'s final read {read} is not an integer")),
        }
    }
    if finals.windows(2).any(|w| w[0] != w[1]) {
        violations.push(format!("the final reads differ between nodes: {finals:?}"));
    }
    violations
}

/// What an operation saw of its key: `Some(None)` the key absent, `Some(Some(v))` v.
fn observed(op: &Op) -> Option<Option<i64>> {
    match (&op.request, &op.outcome) {
        (Request::KvRead { .. }, Outcome::Ok(value)) => value.as_i64().map(Some),
        (Request::KvRead { .. } | Request::KvCas { .. }, Outcome::Failed(code::KEY_DOES_NOT_EXIST)) => Some(None),
        (Request::KvCas { from, .. }, Outcome::Ok(_)) => Some(Some(*from)),
        _ => None,
    }
}

/// Among operations that finished before a moment, the one with the greatest mark:
/// sorted by finish, with running maxima (so each question costs a binary search).
struct PrefixMax<'a> {
    done_us: Vec<u64>,
    best: Vec<(u64, &'a Op)>,
}

impl<'a> PrefixMax<'a> {
    /// `entries`: (finished at, mark, operation).
    fn new(mut entries: Vec<(u64, u64, &'a Op)>) -> PrefixMax<'a> {
        entries.sort_by_key(|e| e.0);
        let mut best: Vec<(u64, &Op)> = Vec::with_capacity(entries.len());
        for &(_, mark, op) in &entries {
            let running = match best.last() {
                Some(&(m, o)) if m >= mark => (m, o),
                _ => (mark, op),
            };
            best.push(running);
        }
        PrefixMax { done_us: entries.iter().map(|e| e.0).collect(), best }
    }

    /// The greatest mark among operations finished strictly before `before_us`.
    fn before(&self, before_us: u64) -> Option<(u64, &'a Op)> {
        let finished = self.done_us.partition_point(|&d| d < before_us);
        finished.checked_sub(1).map(|i| self.best[i])
    }
}

/// lin-kv (see the module's notes: sound, not complete). Each key's checks cost
/// O(n log n), so long histories check quickly.
pub fn lin_kv(history: &[Op]) -> Vec<String> {
    let mut violations = Vec::new();
    let mut keys: Vec<i64> = history.iter().filter_map(Op::kv_key).collect();
    keys.sort_unstable();
    keys.dedup();
    for key in keys {
        let ops: Vec<&Op> = history.iter().filter(|op| op.kv_key() == Some(key)).collect();
        // Each value's writer (values are unique); a definite failure wrote nothing.
        let writers: HashMap<i64, &Op> =
            ops.iter().filter(|op| !matches!(op.outcome, Outcome::Failed(_))).filter_map(|op| op.kv_written().map(|v| (v, *op))).collect();
        // Acknowledged writes by finish, marked with when they began.
        let acked_writes = PrefixMax::new(
            ops.iter()
                .filter(|op| op.is_ok() && op.kv_written().is_some())
                .filter_map(|op| Some((op.completed_us?, op.invoked_us, *op)))
                .collect(),
        );
        let observations: Vec<(&Op, Option<i64>, u64)> = ops.iter().filter_map(|op| Some((*op, observed(op)?, op.completed_us?))).collect();
        // Observations of a value by finish, marked with when the value's write began.
        let seen_values =
            PrefixMax::new(observations.iter().filter_map(|&(op, seen, done)| Some((done, writers.get(&seen?)?.invoked_us, op))).collect());
        for &(op, seen, done) in &observations {
            let what = describe(op, key);
            let Some(v) = seen else {
                if let Some((_, w)) = acked_writes.before(op.invoked_us) {
                    violations.push(format!("{what} found the key absent, after {} had completed", describe(w, key)));
                } else if let Some((_, earlier)) = seen_values.before(op.invoked_us) {
                    violations.push(format!("back in time: {what} found the key absent after {} had seen a value", describe(earlier, key)));
                }
                continue;
            };
            let Some(writer) = writers.get(&v) else {
                violations.push(format!("{what} saw {v}, which no client wrote"));
                continue;
            };
            if writer.invoked_us > done {
                violations.push(format!("{what} saw {v} before {} began", describe(writer, key)));
                continue;
            }
            // Only an acknowledged write has a known end to be overwritten after.
            let Some(written) = writer.completed_us.filter(|_| writer.is_ok()) else { continue };
            // Overwritten before this began: a later write finished before it started.
            if let Some((began, w)) = acked_writes.before(op.invoked_us)
                && began > written
            {
                violations.push(format!("stale: {what} saw {v}, but {} had completed before it began", describe(w, key)));
            } else if let Some((began, earlier)) = seen_values.before(op.invoked_us)
                && began > written
            {
                // An earlier operation saw a value written after this one's was.
                violations.push(format!("back in time: {what} saw {v} after {} had seen a newer value", describe(earlier, key)));
            }
        }
        // Values are unique, so a value is the key's value for one stretch only: two
        // successful compare-and-sets from it cannot both have found it.
        let mut cas_from: HashMap<i64, &Op> = HashMap::new();
        for op in ops.iter().filter(|op| op.is_ok()) {
            if let Request::KvCas { from, .. } = op.request
                && let Some(first) = cas_from.insert(from, op)
            {
                violations.push(format!("{} and {} both swapped from {from}", describe(first, key), describe(op, key)));
            }
        }
    }
    violations
}

fn describe(op: &Op, key: i64) -> String {
    let what = match op.request {
        Request::KvRead { .. } => "read".to_string(),
        Request::KvWrite { value, .. } => format!("write {value}"),
        Request::KvCas { from, to, .. } => format!("cas {from}->{to}"),
        _ => "op".to_string(),
    };
    let ms = |us: u64| us as f64 / 1_000.0;
    let done = op.completed_us.map_or("?".into(), |c| format!("{:.1}", ms(c)));
    format!("{what} of key {key} on n{} [{:.1}-{done} ms]", op.node, ms(op.invoked_us))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn op(node: usize, request: Request, span: (u64, u64), outcome: Outcome) -> Op {
        Op { client: node, node, request, invoked_us: span.0, completed_us: Some(span.1), outcome }
    }

    #[test]
    fn a_stale_read_after_an_acknowledged_overwrite_is_a_violation() {
        let history = vec![
            op(0, Request::KvWrite { key: 1, value: 10 }, (0, 5), Outcome::Ok(json!(null))),
            op(0, Request::KvWrite { key: 1, value: 11 }, (10, 15), Outcome::Ok(json!(null))),
            op(1, Request::KvRead { key: 1 }, (20, 25), Outcome::Ok(json!(10))),
        ];
        let violations = lin_kv(&history);
        assert!(violations.iter().any(|v| v.starts_with("stale")), "{violations:?}");
    }

    #[test]
    fn a_read_that_goes_back_behind_an_earlier_read_is_a_violation() {
        let history = vec![
            op(0, Request::KvWrite { key: 1, value: 10 }, (0, 5), Outcome::Ok(json!(null))),
            op(0, Request::KvWrite { key: 1, value: 11 }, (10, 100), Outcome::Ok(json!(null))),
            op(1, Request::KvRead { key: 1 }, (20, 25), Outcome::Ok(json!(11))),
            op(2, Request::KvRead { key: 1 }, (30, 35), Outcome::Ok(json!(10))),
        ];
        let violations = lin_kv(&history);
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert!(violations[0].starts_with("back in time"), "{violations:?}");
    }

    #[test]
    fn concurrent_reads_may_see_either_value() {
        let history = vec![
            op(0, Request::KvWrite { key: 1, value: 10 }, (0, 5), Outcome::Ok(json!(null))),
            op(0, Request::KvWrite { key: 1, value: 11 }, (10, 30), Outcome::Ok(json!(null))),
            op(1, Request::KvRead { key: 1 }, (12, 14), Outcome::Ok(json!(11))),
            op(1, Request::KvRead { key: 1 }, (20, 25), Outcome::Ok(json!(11))),
            op(2, Request::KvRead { key: 1 }, (11, 40), Outcome::Ok(json!(10))),
            op(2, Request::KvCas { key: 1, from: 11, to: 12 }, (41, 42), Outcome::Ok(json!(null))),
        ];
        assert_eq!(lin_kv(&history), Vec::<String>::new());
    }

    #[test]
    fn two_swaps_from_one_value_and_a_missing_key_after_a_write_are_violations() {
        let history = vec![
            op(0, Request::KvWrite { key: 2, value: 1 }, (0, 5), Outcome::Ok(json!(null))),
            op(1, Request::KvRead { key: 2 }, (6, 7), Outcome::Failed(code::KEY_DOES_NOT_EXIST)),
            op(0, Request::KvCas { key: 2, from: 1, to: 2 }, (8, 9), Outcome::Ok(json!(null))),
            op(1, Request::KvCas { key: 2, from: 1, to: 3 }, (8, 9), Outcome::Ok(json!(null))),
        ];
        assert_eq!(lin_kv(&history).len(), 2, "{:?}", lin_kv(&history));
    }

    #[test]
    fn a_set_read_missing_an_acknowledged_add_fails_and_indeterminate_counter_deltas_may_count() {
        let adds = vec![
            op(0, Request::Add(1), (0, 1), Outcome::Ok(json!(null))),
            Op { completed_us: None, ..op(0, Request::Add(2), (2, 0), Outcome::Indeterminate) },
        ];
        assert!(sets(&adds, &[json!([1]), json!([1, 2])]).iter().any(|v| v.contains("differ")));
        assert!(sets(&adds, &[json!([2]), json!([2])]).iter().any(|v| v.contains("lacks")));
        assert!(sets(&adds, &[json!([1, 2]), json!([1, 2])]).is_empty());
        assert!(counter(&adds, &[json!(3), json!(3)]).is_empty(), "1 acknowledged + 2 indeterminate");
        assert!(counter(&adds, &[json!(1), json!(1)]).is_empty());
        assert_eq!(counter(&adds, &[json!(4), json!(4)]).len(), 2);
        let open = |delta| Op { completed_us: None, ..op(0, Request::Add(delta), (2, 0), Outcome::Indeterminate) };
        let gaps = vec![op(0, Request::Add(1), (0, 1), Outcome::Ok(json!(null))), open(5), open(5)];
        assert!(counter(&gaps, &[json!(11), json!(11)]).is_empty(), "1 + 5 + 5");
        assert_eq!(counter(&gaps, &[json!(4), json!(4)]).len(), 2, "within the bounds [1, 11] but no subset sums to 3");
    }
}
