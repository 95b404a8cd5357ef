//! [`StoredKey`]: the keyspace's own copy of a key's bytes, held inside its entry.
//!
//! Owns only how a key's bytes are stored; it never hashes, compares by anything but
//! bytes, or knows what a key means. Why not `Bytes`: a `Bytes` handle is 32 bytes and
//! points at a second allocation (16 bytes more for a short key, and 32 for a shared
//! header once it is cloned). Most keys are short: up to [`INLINE_BYTES_MAX`] bytes
//! they are held in the 24 bytes of the handle itself, so a short key costs its entry
//! no allocation of its own; a longer one is one exact-size boxed slice. Hand-written
//! rather than a small-string crate: what matters is the 24-byte size with this inline
//! capacity and nothing else (asserted below).

use std::ops::Deref;

use bytes::Bytes;

/// The longest key held inline.
pub const INLINE_BYTES_MAX: usize = 22;

#[derive(Clone, PartialEq, Eq)]
pub enum StoredKey {
    Inline { len: u8, bytes: [u8; INLINE_BYTES_MAX] },
    Heap(Box<[u8]>),
}

const _: () = assert!(std::mem::size_of::<StoredKey>() == 24);

impl StoredKey {
    /// An exact copy of `key`: inline when it fits, else one exact-size allocation.
    pub fn new(key: &[u8]) -> StoredKey {
        if key.len() <= INLINE_BYTES_MAX {
            let mut bytes = [0u8; INLINE_BYTES_MAX];
            bytes[..key.len()].copy_from_slice(key);
            StoredKey::Inline { len: key.len() as u8, bytes }
        } else {
            StoredKey::Heap(Box::from(key))
        }
    }

    pub fn as_bytes(&self) -> &[u8] {
        match self {
            StoredKey::Inline { len, bytes } => &bytes[..*len as usize],
            StoredKey::Heap(bytes) => bytes,
        }
    }

    /// A copy as `Bytes`, for what outlives the entry (a reply, the expiry index).
    pub fn to_bytes(&self) -> Bytes {
        Bytes::copy_from_slice(self.as_bytes())
    }
}

impl Deref for StoredKey {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl AsRef<[u8]> for StoredKey {
    fn as_ref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl std::fmt::Debug for StoredKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", Bytes::copy_from_slice(self.as_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_length_reads_back_exactly_inline_or_boxed() {
        let source: Vec<u8> = (0..200u8).collect();
        for len in [0, 1, 14, INLINE_BYTES_MAX - 1, INLINE_BYTES_MAX, INLINE_BYTES_MAX + 1, 64, 200] {
            let key = StoredKey::new(&source[..len]);
            assert_eq!(key.as_bytes(), &source[..len]);
            assert_eq!(matches!(key, StoredKey::Inline { .. }), len <= INLINE_BYTES_MAX, "length {len}");
            assert_eq!(key.to_bytes(), Bytes::copy_from_slice(&source[..len]));
        }
        // Inline padding never leaks into equality: two keys of equal bytes are equal.
        assert_eq!(StoredKey::new(b"abc"), StoredKey::new(b"abc"));
        assert_ne!(StoredKey::new(b"abc"), StoredKey::new(b"abcd"));
    }
}
