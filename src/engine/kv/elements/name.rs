//! An element's name in the map form of [`super::Elements`]: bytes held inline up to
//! 24 bytes. Owns the name type only.
//!
//! Must never: hash, compare or order a name other than as its bytes (maps are probed
//! with plain slices through `Borrow<[u8]>`).

/// An element's name as the map form holds it: up to 24 bytes inside the map's entry
/// (32 bytes there), longer ones in an allocation of their own. Most field and member
/// names fit, so a lookup compares the name in the entry it probes, without following
/// a pointer, and the name costs no allocation (measured against the shared `Arc<[u8]>`
/// it replaces, 2026-11-27: 300,000 16-byte set members 109 -> 90 bytes each, hash
/// fields 124 -> 106, HGET and SISMEMBER at P=16 +7 %; a sorted set's score index now
/// holds a copy where it shared the allocation, 163 -> 181 bytes a member;
/// docs/benchmarks.md).
#[derive(PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct ElementName(smallvec::SmallVec<[u8; 24]>);

// Hashing, equality and order are the bytes' (a derived impl over the one field), as
// `Borrow<[u8]>` requires: maps are probed with plain slices.
impl ElementName {
    pub fn from_bytes(name: &[u8]) -> ElementName {
        // `from_slice` copies at once; `SmallVec`'s `From` and `Clone` go byte by byte.
        ElementName(smallvec::SmallVec::from_slice(name))
    }
}

impl Clone for ElementName {
    fn clone(&self) -> ElementName {
        ElementName::from_bytes(self)
    }
}

impl From<&[u8]> for ElementName {
    fn from(name: &[u8]) -> ElementName {
        ElementName::from_bytes(name)
    }
}

impl std::ops::Deref for ElementName {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl std::borrow::Borrow<[u8]> for ElementName {
    fn borrow(&self) -> &[u8] {
        &self.0
    }
}

impl AsRef<[u8]> for ElementName {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl std::fmt::Debug for ElementName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", bytes::Bytes::copy_from_slice(&self.0))
    }
}
