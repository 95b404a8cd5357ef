//! Which documents pass a compiled filter, as bitmaps over doc ids: one bit per id, so
//! AND, OR and NOT are word-wise and a result costs `docs / 8` bytes however many
//! match. Reads the postings and columns; a phrase also reads the positions of the
//! documents that have its first word (`text.rs`).

use hashbrown::HashMap;

use super::{Compiled, Index};

impl Index {
    /// The docs passing a filter, as a bitmap over doc ids.
    pub(super) fn eval(&self, filter: &Compiled) -> Vec<u64> {
        let words = self.docs.len().div_ceil(64);
        match filter {
            Compiled::All => {
                let mut bits = vec![0u64; words];
                for (id, doc) in self.docs.iter().enumerate() {
                    if doc.is_some() {
                        bits[id / 64] |= 1 << (id % 64);
                    }
                }
                bits
            }
            Compiled::Nothing => vec![0u64; words],
            Compiled::Within(distances) => {
                let mut bits = vec![0u64; words];
                for &id in distances.keys() {
                    bits[id as usize / 64] |= 1 << (id % 64);
                }
                bits
            }
            Compiled::Tag(field, values) => {
                let mut bits = vec![0u64; words];
                for value in values {
                    for &id in self.postings[*field].get(value).into_iter().flatten() {
                        bits[id as usize / 64] |= 1 << (id % 64);
                    }
                }
                bits
            }
            Compiled::Text(fields, terms, _) => {
                let mut bits = vec![0u64; words];
                for field in fields {
                    for term in terms {
                        for &id in self.postings[*field].get(term).into_iter().flatten() {
                            bits[id as usize / 64] |= 1 << (id % 64);
                        }
                    }
                }
                bits
            }
            Compiled::Phrase(fields, terms) => self.eval_phrase(fields, terms, words),
            Compiled::Range(field, lo, lo_ex, hi, hi_ex) => {
                let mut bits = vec![0u64; words];
                for (id, &n) in self.columns[*field].iter().enumerate() {
                    // NaN (no value) fails every comparison.
                    let above = if *lo_ex { n > *lo } else { n >= *lo };
                    let below = if *hi_ex { n < *hi } else { n <= *hi };
                    if above && below {
                        bits[id / 64] |= 1 << (id % 64);
                    }
                }
                bits
            }
            Compiled::Not(inner) => {
                let all = self.eval(&Compiled::All);
                let inner = self.eval(inner);
                all.iter().zip(inner).map(|(a, i)| a & !i).collect()
            }
            Compiled::Optional(_) => self.eval(&Compiled::All),
            Compiled::And(parts, near) => {
                let mut bits = parts
                    .iter()
                    .map(|p| self.eval(p))
                    .reduce(|a, b| a.iter().zip(b).map(|(x, y)| x & y).collect())
                    .unwrap_or_else(|| self.eval(&Compiled::All));
                if let Some(near) = near {
                    let failing: Vec<u32> = ids(&bits).filter(|&id| !self.near(parts, *near, id)).collect();
                    for id in failing {
                        bits[id as usize / 64] &= !(1 << (id % 64));
                    }
                }
                bits
            }
            Compiled::Or(parts) => parts
                .iter()
                .map(|p| self.eval(p))
                .reduce(|a, b| a.iter().zip(b).map(|(x, y)| x | y).collect())
                .unwrap_or_else(|| vec![0u64; words]),
        }
    }
}

/// The distances of the (one) VECTOR_RANGE inside a filter.
pub(super) fn find_within(filter: &Compiled) -> Option<&HashMap<u32, f32, foldhash::fast::FixedState>> {
    match filter {
        Compiled::Within(d) => Some(d),
        Compiled::Not(inner) | Compiled::Optional(inner) => find_within(inner),
        Compiled::And(parts, _) | Compiled::Or(parts) => parts.iter().find_map(find_within),
        _ => None,
    }
}

pub(super) fn has(bits: &[u64], id: u32) -> bool {
    bits.get(id as usize / 64).is_some_and(|w| w & (1 << (id % 64)) != 0)
}

/// The doc ids set in a bitmap, ascending.
pub(super) fn ids(bits: &[u64]) -> impl Iterator<Item = u32> + '_ {
    bits.iter().enumerate().flat_map(|(w, &word)| {
        let mut word = word;
        std::iter::from_fn(move || {
            if word == 0 {
                return None;
            }
            let bit = word.trailing_zeros();
            word &= word - 1;
            Some((w * 64) as u32 + bit)
        })
    })
}
