//! [`same_bytes`]: whether a stored short byte string (a key in its entry, an element's
//! name) equals another, reading only the two strings' bytes.
//!
//! Why not `==`: that calls the C library's `memcmp`, which for a short slice loads a
//! whole 32-byte window under a mask, and the CPU waits for every cache line that window
//! touches. A keyspace entry's key starts 33 bytes into it and the allocator packs
//! entries back to back, so the window reached into the next entry's line, which nothing
//! prefetched: `perf` put 6 to 12 % of a pipelined SET's time on that one load (on AMD
//! EPYC hosts), after the entry's own lines had been prefetched.
//!
//! Must never: read a byte outside `a` or `b` (safe code: every read is a bounds-checked
//! slice), or answer other than `a == b`.

/// `a == b`, reading only the bytes of `a` and `b`.
///
/// Slices up to 32 bytes are compared a word at a time (the last word overlapping the
/// one before), longer ones by `==`.
#[inline]
pub fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    let word = |s: &[u8], at: usize| u64::from_ne_bytes(s[at..at + 8].try_into().expect("8 bytes"));
    let half = |s: &[u8], at: usize| u32::from_ne_bytes(s[at..at + 4].try_into().expect("4 bytes"));
    match n {
        0..4 => a == b,
        4..8 => half(a, 0) == half(b, 0) && half(a, n - 4) == half(b, n - 4),
        8..=32 => {
            let mut at = 0;
            while at + 8 < n {
                if word(a, at) != word(b, at) {
                    return false;
                }
                at += 8;
            }
            word(a, n - 8) == word(b, n - 8)
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_bytes_is_slice_equality_at_every_length_and_every_differing_byte() {
        let a: Vec<u8> = (0..40u8).map(|i| i.wrapping_mul(37)).collect();
        for len in 0..=a.len() {
            let key = &a[..len];
            assert!(same_bytes(key, &key.to_vec()), "len {len}");
            for at in 0..len {
                let mut other = key.to_vec();
                other[at] ^= 0x40;
                assert!(!same_bytes(key, &other) && !same_bytes(&other, key), "len {len}, byte {at}");
            }
            if len > 0 {
                assert!(!same_bytes(key, &key[..len - 1]) && !same_bytes(&key[..len - 1], key), "len {len} vs shorter");
            }
        }
    }
}
