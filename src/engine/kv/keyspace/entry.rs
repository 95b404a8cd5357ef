//! [`Entry`]: one live key as the keyspace's tables hold it, in one allocation of the
//! size it needs: its state, its Merkle digest while the node keeps Merkle leaves, and
//! its key's bytes.
//!
//! Owns only that layout; it never hashes keys for placement, decides what a state
//! means, or keeps the Merkle leaves (the keyspace does all three).
//!
//! Why by hand: a struct of a 32-byte state, a 24-byte key handle (inline up to 22
//! bytes) and an 8-byte digest is 64 bytes for every key, short or long, with or
//! without replication. Laid out as `[state: 32][header: 1][digest: 8, only while
//! Merkle leaves are kept][key length: 8, only past 126 bytes][key bytes]`, a 14-byte
//! key on a node without peers takes 47 bytes, jemalloc's 48-byte class: 16 bytes a key
//! less for every string and counter (issue 16's memory goal), and nothing more for any
//! shape (a replicating node's 14-byte key takes 55 bytes, the 64-byte class it had; a
//! key of 23 bytes or more no longer pays a second allocation). No crate offers a
//! header-plus-bytes allocation with an inline, mutably borrowable struct at its head.
//!
//! The header byte: bit 7 says the digest is present; bits 0–6 are the key's length,
//! or 127 when the length follows as a `u64`. The state sits at offset 0 of an
//! allocation aligned for it, so it is borrowed in place; the digest and long lengths
//! are read and written unaligned.
//!
//! Must never: expose a pointer, let the key's bytes change after creation, or read
//! past the allocation (every offset comes from the one [`shape`] function). The unit
//! tests below also run under Miri, on a copy of this file with a stand-in state that
//! owns heap data (the crate's allocator is C code Miri cannot run):
//! `tests/miri/entry.sh`.

use std::alloc::{Layout, alloc, dealloc, handle_alloc_error};
use std::ptr::NonNull;

use bytes::Bytes;

use super::KeyState;
use crate::engine::bytes_eq::same_bytes;

const STATE_BYTES: usize = std::mem::size_of::<KeyState>();
const DIGEST_FLAG: u8 = 0x80;
/// Key lengths up to this are held in the header byte; `LONG` marks a longer key.
const SHORT_LEN_MAX: usize = 126;
const LONG: u8 = 127;

/// One live key: its state, its digest (while Merkle leaves are kept) and its bytes.
pub struct Entry {
    ptr: NonNull<u8>,
}

// SAFETY: an `Entry` owns its allocation exclusively (as a `Box` does) and what it holds
// is a `KeyState` and bytes, both `Send` and `Sync`.
unsafe impl Send for Entry {}
unsafe impl Sync for Entry {}
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<KeyState>();
};

/// Where each part of an entry lies, and the allocation's layout.
struct Shape {
    layout: Layout,
    digest_at: Option<usize>,
    key_at: usize,
}

fn shape(key_len: usize, with_digest: bool) -> Shape {
    let mut at = STATE_BYTES + 1;
    let digest_at = with_digest.then(|| {
        at += 8;
        at - 8
    });
    if key_len > SHORT_LEN_MAX {
        at += 8;
    }
    let size = at.checked_add(key_len).expect("a key's length fits in memory");
    let layout = Layout::from_size_align(size, std::mem::align_of::<KeyState>()).expect("an entry's layout is valid");
    Shape { layout, digest_at, key_at: at }
}

impl Entry {
    /// A new entry holding `key`'s bytes (copied) and `state`, with room for a digest
    /// when `digest` is given.
    pub fn new(key: &[u8], state: KeyState, digest: Option<u64>) -> Entry {
        let shape = shape(key.len(), digest.is_some());
        // SAFETY: the layout's size is at least STATE_BYTES + 1 > 0.
        let raw = unsafe { alloc(shape.layout) };
        let Some(ptr) = NonNull::new(raw) else { handle_alloc_error(shape.layout) };
        let header = if key.len() > SHORT_LEN_MAX { LONG } else { key.len() as u8 };
        let header = header | if digest.is_some() { DIGEST_FLAG } else { 0 };
        // SAFETY: every write lies inside the allocation by `shape`'s offsets; offset 0 is
        // aligned for `KeyState` (the layout's alignment is its).
        unsafe {
            ptr.as_ptr().cast::<KeyState>().write(state);
            ptr.as_ptr().add(STATE_BYTES).write(header);
            if let (Some(at), Some(digest)) = (shape.digest_at, digest) {
                ptr.as_ptr().add(at).cast::<u64>().write_unaligned(digest);
            }
            if key.len() > SHORT_LEN_MAX {
                ptr.as_ptr().add(shape.key_at - 8).cast::<u64>().write_unaligned(key.len() as u64);
            }
            std::ptr::copy_nonoverlapping(key.as_ptr(), ptr.as_ptr().add(shape.key_at), key.len());
        }
        Entry { ptr }
    }

    fn header(&self) -> u8 {
        // SAFETY: the header byte is written at creation and never changes.
        unsafe { *self.ptr.as_ptr().add(STATE_BYTES) }
    }

    /// Whether this entry has room for a digest.
    pub fn has_digest(&self) -> bool {
        self.header() & DIGEST_FLAG != 0
    }

    fn shape(&self) -> Shape {
        shape(self.key_len(), self.has_digest())
    }

    fn key_len(&self) -> usize {
        let header = self.header() & !DIGEST_FLAG;
        if header != LONG {
            return usize::from(header);
        }
        let at = STATE_BYTES + 1 + if self.has_digest() { 8 } else { 0 };
        // SAFETY: a long key's length is stored at `at` (see `shape`).
        unsafe { self.ptr.as_ptr().add(at).cast::<u64>().read_unaligned() as usize }
    }

    /// Where the key's bytes start and how many there are, from the header alone (every
    /// table probe compares a key: no `Layout` is built on that path).
    #[inline]
    fn key_span(&self) -> (usize, usize) {
        let header = self.header();
        let digest_bytes = if header & DIGEST_FLAG != 0 { 8 } else { 0 };
        let short = header & !DIGEST_FLAG;
        if short != LONG {
            return (STATE_BYTES + 1 + digest_bytes, usize::from(short));
        }
        let at = STATE_BYTES + 1 + digest_bytes;
        // SAFETY: a long key's length is stored at `at` (see `shape`).
        let len = unsafe { self.ptr.as_ptr().add(at).cast::<u64>().read_unaligned() as usize };
        (at + 8, len)
    }

    /// Ask the CPU to start loading the entry's cache lines up to 64 bytes from its start
    /// (its state and a short key's bytes): a hint with no effect on what anything reads.
    ///
    /// Why two lines: an entry of a key up to 14 bytes is 48 bytes, an allocation class
    /// the allocator packs back to back, so half of those entries cross a line boundary
    /// and their key's bytes (what a lookup compares first) lie in the second line. The
    /// byte 63 past the start is in the second line whenever an entry of up to 64 bytes
    /// may reach one (and in the first when the entry starts a line), so no third line
    /// is ever asked for.
    #[inline]
    pub fn prefetch(&self) {
        use crate::engine::prefetch::prefetch;
        prefetch(self.ptr.as_ptr());
        prefetch(self.ptr.as_ptr().wrapping_add(63));
    }

    /// The key's bytes.
    #[inline]
    pub fn key(&self) -> &[u8] {
        let (at, len) = self.key_span();
        debug_assert_eq!((at, at + len), (self.shape().key_at, self.shape().layout.size()));
        // SAFETY: the key's bytes fill the allocation from `at` to its end, and live as
        // long as `self`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().add(at), len) }
    }

    /// Whether the entry's key is `key`: what every lookup asks of each entry its
    /// control byte matches. Compared by [`same_bytes`], which reads nothing past either
    /// key (see there why that matters here).
    #[inline]
    pub fn has_key(&self, key: &[u8]) -> bool {
        same_bytes(self.key(), key)
    }

    /// A copy of the key, for what outlives the entry (a reply, the expiry index).
    pub fn key_to_bytes(&self) -> Bytes {
        Bytes::copy_from_slice(self.key())
    }

    pub fn state(&self) -> &KeyState {
        // SAFETY: a valid `KeyState` lives at offset 0 for the entry's whole life.
        unsafe { &*self.ptr.as_ptr().cast::<KeyState>() }
    }

    /// The key and its state, the state mutably (they do not overlap).
    pub fn key_and_state_mut(&mut self) -> (&[u8], &mut KeyState) {
        let (at, len) = self.key_span();
        // SAFETY: the state (bytes 0..STATE_BYTES) and the key (bytes at..) are disjoint
        // parts of the allocation, which `&mut self` borrows exclusively.
        unsafe {
            let key = std::slice::from_raw_parts(self.ptr.as_ptr().add(at), len);
            (key, &mut *self.ptr.as_ptr().cast::<KeyState>())
        }
    }

    pub fn state_mut(&mut self) -> &mut KeyState {
        self.key_and_state_mut().1
    }

    /// The digest kept with the entry, or 0 when it has no room for one.
    pub fn kept_digest(&self) -> u64 {
        if !self.has_digest() {
            return 0;
        }
        // SAFETY: a digest, when present, follows the header byte (see `shape`).
        unsafe { self.ptr.as_ptr().add(STATE_BYTES + 1).cast::<u64>().read_unaligned() }
    }

    /// Store `digest` in the entry's room for one (it must have some).
    pub fn set_digest(&mut self, digest: u64) {
        let at = self.shape().digest_at.expect("set_digest on an entry made without room for a digest");
        // SAFETY: the digest is stored at `at` (see `shape`); `&mut self` is exclusive.
        unsafe { self.ptr.as_ptr().add(at).cast::<u64>().write_unaligned(digest) }
    }

    /// The same key and state in a new entry with room for `digest` (Merkle leaves were
    /// turned on) or without any (`None`).
    pub fn with_digest(self, digest: Option<u64>) -> Entry {
        let key = self.key_to_bytes();
        Entry::new(&key, self.into_state(), digest)
    }

    /// Give the state back and free the rest.
    pub fn into_state(self) -> KeyState {
        let layout = self.shape().layout;
        let ptr = self.ptr;
        std::mem::forget(self);
        // SAFETY: the state is read out once and the allocation freed without dropping
        // it again (`self` was forgotten).
        unsafe {
            let state = ptr.as_ptr().cast::<KeyState>().read();
            dealloc(ptr.as_ptr(), layout);
            state
        }
    }

    /// Bytes this entry allocates (MEMORY USAGE counts them).
    pub fn allocated_bytes(&self) -> usize {
        self.shape().layout.size()
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        let layout = self.shape().layout;
        // SAFETY: the state is dropped once, then the allocation made with this layout
        // is freed; nothing reads the entry after.
        unsafe {
            std::ptr::drop_in_place(self.ptr.as_ptr().cast::<KeyState>());
            dealloc(self.ptr.as_ptr(), layout);
        }
    }
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entry").field("key", &self.key_to_bytes()).field("digest", &self.kept_digest()).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn string_state(value: &[u8]) -> KeyState {
        let dot = crate::crdt::Dot { node: 1, hlc: crate::crdt::Hlc(7) };
        KeyState::with_value(dot, crate::engine::kv::value::StrVal::from_bytes(Bytes::copy_from_slice(value)), Some(99))
    }

    #[test]
    fn an_entry_has_its_own_key_only() {
        let entry = Entry::new(b"key:000000123456", string_state(b"v"), None);
        assert!(entry.has_key(b"key:000000123456"));
        assert!(!entry.has_key(b"key:000000123457") && !entry.has_key(b"key:00000012345"));
    }

    #[test]
    fn every_key_length_reads_back_with_and_without_a_digest() {
        let source: Vec<u8> = (0..=255u8).cycle().take(300).collect();
        for len in [0, 1, 14, 15, SHORT_LEN_MAX - 1, SHORT_LEN_MAX, SHORT_LEN_MAX + 1, 200, 300] {
            for digest in [None, Some(0xdead_beef_u64), Some(u64::MAX)] {
                let key = &source[..len];
                let value = vec![b'v'; len % 70];
                let mut entry = Entry::new(key, string_state(&value), digest);
                assert_eq!(entry.key(), key, "len {len} digest {digest:?}");
                assert_eq!(entry.has_digest(), digest.is_some());
                assert_eq!(entry.kept_digest(), digest.unwrap_or(0));
                assert_eq!(entry.state(), &string_state(&value));
                if digest.is_some() {
                    entry.set_digest(42);
                    assert_eq!(entry.kept_digest(), 42);
                }
                let (k, state) = entry.key_and_state_mut();
                assert_eq!(k, key);
                *state = string_state(b"replaced: the old value is dropped");
                assert_eq!(entry.key(), key, "the key survives a state change");
                let entry = entry.with_digest(Some(9));
                assert_eq!((entry.key(), entry.kept_digest()), (key, 9));
                let entry = entry.with_digest(None);
                assert_eq!((entry.key(), entry.has_digest()), (key, false));
                assert_eq!(entry.into_state(), string_state(b"replaced: the old value is dropped"));
            }
        }
    }

    #[test]
    fn a_short_key_without_a_digest_fits_the_48_byte_class() {
        // The point of the layout (see the module docs): a 14-byte key and its state.
        let entry = Entry::new(b"ctr:0000000001", KeyState::new(), None);
        assert_eq!(entry.allocated_bytes(), 47);
        let entry = Entry::new(b"ctr:0000000001", KeyState::new(), Some(1));
        assert_eq!(entry.allocated_bytes(), 55);
    }
}
