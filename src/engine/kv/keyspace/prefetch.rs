//! [`Keyspace::prefetch`]: cache hints for a pipeline's keys and the elements they
//! name, before the commands run. Part of [`super::Keyspace`].
//!
//! Must never: change what anything reads (every call here only prefetches), or look
//! at more than [`PREFETCH_KEYS_MAX`] commands at once.

use super::{Entry, Keyspace, key_hash};
use crate::engine::kv::elements::Elements;
use crate::engine::prefetch::prefetch;

/// Commands one [`Keyspace::prefetch`] looks at (the rest are not prefetched).
pub const PREFETCH_KEYS_MAX: usize = 16;

/// What a pipelined command will read first: its key, and the element of that key it
/// names (a hash field, a set or sorted-set member), if any.
#[derive(Clone, Copy, Debug, Default)]
pub struct Prefetch<'a> {
    pub key: &'a [u8],
    pub element: Option<&'a [u8]>,
}

impl Keyspace {
    /// Start loading what later commands will read (`reads`: each one's key, and the
    /// element of it the command names), a pass over all of them for each step of each
    /// chain of loads, so that no pass waits on more than one miss a key: every key's
    /// sub-table header, then its control bytes (read) and each matching bucket, then
    /// each matching bucket's entry (no key is compared), then what each state points to
    /// (a string's bytes, which a GET copies into its reply), then for each named element
    /// its collection's map header, its bucket group and its entry, in three more passes
    /// (`Elements::prefetch_map`). A key equal to the one before it is probed once (a
    /// pipeline of HSETs to one hash names one key sixteen times, and sixteen fields). A
    /// hint: it changes nothing.
    ///
    /// Why: in a keyspace or a collection far larger than the caches, reading a key is
    /// five dependent cache misses (header, control bytes, bucket, entry, value) and an
    /// element three more: under `perf`, a quarter of a pipelined SET's time, two fifths
    /// of a GET's, and most of an HSET's own on a big hash. Probing a pipeline's keys one
    /// after another before running them lets the CPU overlap those misses across
    /// commands instead of waiting on each in turn; one pass that read the control bytes
    /// and then the bucket of each key in turn still waited on both, key after key (with
    /// the key comparison's stray load, `engine::bytes_eq`, the server CPU per
    /// pipelined SET fell by a fifth when that pass was split in two).
    pub fn prefetch(&self, reads: &[Prefetch<'_>]) {
        let reads = &reads[..reads.len().min(PREFETCH_KEYS_MAX)];
        let mut hashes = [0u64; PREFETCH_KEYS_MAX];
        let mut repeats = [false; PREFETCH_KEYS_MAX];
        // Each key's sub-table header (its place in `tables` is known from the hash).
        for (at, read) in reads.iter().enumerate() {
            if at > 0 && reads[at - 1].key == read.key {
                (hashes[at], repeats[at]) = (hashes[at - 1], true);
                continue;
            }
            hashes[at] = key_hash(read.key);
            prefetch(&self.tables[self.table_index(hashes[at])]);
        }
        // Each key's control bytes are read here (the one miss this pass waits on), and
        // each bucket whose control byte matches is prefetched (its address, not yet its
        // content: a pass that waited on both misses in turn overlapped fewer keys). The
        // matches are kept, up to two a key, so that the passes after do not probe again.
        let mut matches: [Option<&Entry>; 2 * PREFETCH_KEYS_MAX] = [None; 2 * PREFETCH_KEYS_MAX];
        for at in (0..reads.len()).filter(|&at| !repeats[at]) {
            for (n, entry) in self.tables[self.table_index(hashes[at])].iter_hash(hashes[at]).take(2).enumerate() {
                prefetch(entry);
                matches[2 * at + n] = Some(entry);
            }
        }
        // The buckets now cached: each matching entry (no key is compared: a byte
        // comparison a key for a hint).
        for entry in matches.iter().flatten() {
            entry.prefetch();
        }
        // The entries now cached: what each state points to.
        for entry in matches.iter().flatten() {
            entry.state().prefetch_heap();
        }
        // The named elements, in three steps (`Elements::prefetch_map`): each collection's
        // map header, then each name's bucket group, then each name's entry.
        let mut elements: [Option<&Elements>; PREFETCH_KEYS_MAX] = [None; PREFETCH_KEYS_MAX];
        for (at, read) in reads.iter().enumerate() {
            // The key before, if the same, was looked up already unless it named no element.
            if repeats[at] && elements[at - 1].is_some() {
                elements[at] = elements[at - 1];
            } else if read.element.is_some() {
                elements[at] = self.get(read.key, hashes[at]).and_then(|entry| entry.state().named_elements());
                if let Some(found) = elements[at] {
                    found.prefetch_map();
                }
            }
        }
        let mut element_hashes: [Option<u64>; PREFETCH_KEYS_MAX] = [None; PREFETCH_KEYS_MAX];
        for (at, read) in reads.iter().enumerate() {
            if let (Some(found), Some(name)) = (elements[at], read.element) {
                element_hashes[at] = found.prefetch_probe(name);
            }
        }
        for at in 0..reads.len() {
            if let (Some(found), Some(hash)) = (elements[at], element_hashes[at]) {
                found.prefetch_entry(hash);
            }
        }
    }
}
