//! A sorted-set member's score as a key state holds it (DESIGN §5, row Sorted set):
//! ZADD writes the score to the member's register (last writer wins), ZINCRBY adds to
//! its float counter (increments add, and survive a concurrent ZADD or ZREM that had
//! not seen them). The score is the register's value plus every unabsorbed increment.

use super::{KeyState, StrVal};

/// Integers up to this magnitude are exact in a double: a score in that range is
/// stored as an integer (no text to parse on every read).
const EXACT_INT_MAX: f64 = 9_007_199_254_740_992.0;

/// The register value that holds `score` exactly (`-0` is stored as `0`, as Redis's
/// listpack stores it).
pub fn score_value(score: f64) -> StrVal {
    debug_assert!(!score.is_nan());
    if score == score.trunc() && score.abs() <= EXACT_INT_MAX {
        return StrVal::Int(score as i64);
    }
    // Rust's `{:e}` writes the shortest text that parses back to the same double.
    StrVal::raw(format!("{score:e}"))
}

impl KeyState {
    /// The score of a sorted-set member's state: its register's value plus every
    /// unabsorbed increment. Increments that would make it NaN together (concurrent
    /// `+inf` and `-inf`) leave the register's value, as a non-number hides counters in
    /// [`KeyState::read`]. A member state never holds a register that is not a number.
    pub fn score(&self) -> f64 {
        let base = match self.values().winner() {
            Some((_, StrVal::Int(n))) => *n as f64,
            Some((_, value)) => value.as_f64().unwrap_or(0.0),
            None => 0.0,
        };
        let Some(counters) = self.counters() else {
            return normalize(base);
        };
        let mut total = base;
        for c in counters.ints.contributions() {
            total += c as f64;
        }
        for c in counters.floats.contributions() {
            total += c;
        }
        if total.is_nan() { normalize(base) } else { normalize(total) }
    }
}

/// `-0` reads as `0` (Redis orders and prints them alike).
fn normalize(score: f64) -> f64 {
    if score == 0.0 { 0.0 } else { score }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_round_trip_exactly_through_the_register() {
        for score in [0.0, -0.0, 1.0, -3.0, 1.1, 0.1 + 0.2, 1e300, -1e-300, f64::INFINITY, f64::NEG_INFINITY, 123456789012345678.0] {
            let stored = score_value(score);
            let back = stored.as_f64().expect("a score's text is a number");
            assert_eq!(back.to_bits(), normalize(score).to_bits(), "{score}");
        }
        assert_eq!(score_value(3.0), StrVal::Int(3));
    }
}
