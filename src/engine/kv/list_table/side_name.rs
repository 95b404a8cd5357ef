//! The key of a list's side map (`side_map.rs`): a position name ordered as its
//! bytes, compared eight bytes at a time ([`cmp_names`]). Owns that key type only.
//!
//! Why: the side map holds every pop's tombstone on a node with peers (until they have
//! all merged it), so a queue's map holds tens of thousands of names, and a lookup
//! compares a name with several of them. With the names' derived order every
//! comparison was a `memcmp` call (~1,200 instructions of an LPOP's 11,600 with two
//! peers, callgrind, 60,000 tombstones in a `BTreeMap`). A position's first eight bytes
//! are its first digit, big-endian (`position.rs`), which tells most neighbours apart.
//!
//! Must never: order or compare a name other than as its bytes (the map is probed with
//! plain slices, whose order is the slices').

use std::cmp::Ordering;

use super::Name;

/// A position name as the side map's key.
#[derive(Clone, Debug)]
pub(super) struct SideName(pub(super) Name);

impl SideName {
    pub(super) fn from_slice(name: &[u8]) -> SideName {
        SideName(Name::from_slice(name))
    }
}

/// The first eight bytes as a big-endian integer, when there are eight: integers
/// compare as those bytes do.
fn prefix(bytes: &[u8]) -> Option<u64> {
    bytes.first_chunk::<8>().map(|b| u64::from_be_bytes(*b))
}

/// `a.cmp(b)`, deciding on the first eight bytes as one integer where they differ.
#[inline]
pub(super) fn cmp_names(a: &[u8], b: &[u8]) -> Ordering {
    if let (Some(pa), Some(pb)) = (prefix(a), prefix(b))
        && pa != pb
    {
        return pa.cmp(&pb);
    }
    a.cmp(b)
}

impl AsRef<[u8]> for SideName {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The order is the bytes' for names of every length, equal prefixes and
    /// prefixes of one another included.
    #[test]
    fn side_names_order_as_their_bytes() {
        let mut names: Vec<Vec<u8>> = vec![vec![], vec![0], vec![0; 8], vec![0; 9], vec![255; 7], vec![255; 8], vec![1; 18]];
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..400 {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let len = (seed >> 59) as usize + 4;
            // Few distinct byte values, so that long shared prefixes are common.
            names.push((0..len).map(|i| ((seed >> (i % 60)) & 3) as u8).collect());
        }
        for a in &names {
            for b in &names {
                let (sa, sb) = (SideName::from_slice(a), SideName::from_slice(b));
                assert_eq!(cmp_names(sa.as_ref(), sb.as_ref()), a.as_slice().cmp(b.as_slice()), "{a:?} against {b:?}");
            }
        }
    }
}
