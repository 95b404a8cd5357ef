//! Key removals counted by bucket of the key's hash: what a WATCH of a key that does
//! not exist is compared by at EXEC. A live key's token is its state's digest, which
//! any write changes; a missing key has no state, and one created and removed again
//! between WATCH and EXEC would leave no trace, where Redis aborts the EXEC (the key
//! was touched). Every removal counts in its bucket, so that round trip changes the
//! token; a removal of another key in the same bucket (one in `BUCKETS`) aborts too,
//! which only costs that transaction a retry. FLUSHALL counts each key it removes.
//!
//! Must never: lose a removal of a key (a missed count would let EXEC run over a
//! change); grow (a fixed array per shard).

/// Buckets of removal counts: 4 KiB a shard.
const BUCKETS: usize = 1024;

pub struct RemovalCounts(Box<[u32]>);

impl Default for RemovalCounts {
    fn default() -> Self {
        RemovalCounts(vec![0; BUCKETS].into_boxed_slice())
    }
}

impl RemovalCounts {
    fn bucket(hash: u64) -> usize {
        // The high half: the table index takes the low bits of the same hash.
        (hash >> 32) as usize % BUCKETS
    }

    /// A key of this hash was removed.
    pub fn note(&mut self, hash: u64) {
        let count = &mut self.0[Self::bucket(hash)];
        *count = count.wrapping_add(1);
    }

    /// The token of a missing key of this hash: spread over 64 bits, so that it does
    /// not equal a live state's digest by more than chance.
    pub fn token(&self, hash: u64) -> u64 {
        let count = u64::from(self.0[Self::bucket(hash)]) + ((Self::bucket(hash) as u64) << 32);
        (count + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xA85E_17ED_0000_0001
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_removal_changes_its_buckets_token_only() {
        let mut counts = RemovalCounts::default();
        let (a, b) = (7u64 << 32, 8u64 << 32);
        let (token_a, token_b) = (counts.token(a), counts.token(b));
        assert_ne!(token_a, token_b, "buckets differ");
        counts.note(a);
        assert_ne!(counts.token(a), token_a);
        assert_eq!(counts.token(b), token_b, "another bucket is untouched");
    }
}
