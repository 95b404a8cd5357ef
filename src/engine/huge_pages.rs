//! Large arrays backed by 2 MiB pages: asks the kernel (transparent huge pages in its
//! `madvise` mode, Debian's default) to map an array's memory with huge pages.
//!
//! Why: an HNSW walk reads one vector code and one link list after another at random
//! across arrays of tens of megabytes; with 4 KiB pages nearly every read is a TLB miss
//! too, and a prefetch that misses the TLB waits for the page walk. Measured in
//! docs/vector.md ("Links over codes, prefetched link lists, huge pages").
//!
//! Must never: change what a program computes (it is a hint; without THP, on other
//! systems or when the kernel refuses, nothing happens), or be asked for small arrays
//! (only whole 2 MiB regions inside an allocation are advised, so a small one is a no-op,
//! and memory that small allocations share is never touched).

const HUGE_PAGE: usize = 2 << 20;

/// Remembers which buffer of a growing `Vec` was last advised, so that the advice costs
/// a comparison per push and a system call only when the buffer moved or grew.
#[derive(Clone, Copy, Debug, Default)]
pub struct HugePages {
    start: usize,
    bytes: usize,
}

impl HugePages {
    /// Advise `vec`'s whole buffer (its capacity, not only its length: the tail is what
    /// the next pushes fill) if it is not the buffer advised last time.
    #[inline]
    pub fn follow<T>(&mut self, vec: &Vec<T>) {
        let (start, bytes) = (vec.as_ptr() as usize, vec.capacity() * size_of::<T>());
        if (start, bytes) != (self.start, self.bytes) {
            *self = HugePages { start, bytes };
            advise(start, bytes);
        }
    }
}

/// Advise the whole 2 MiB regions inside `[start, start + bytes)`.
fn advise(start: usize, bytes: usize) {
    let first = start.next_multiple_of(HUGE_PAGE);
    let end = (start + bytes) / HUGE_PAGE * HUGE_PAGE;
    if end <= first {
        return;
    }
    #[cfg(target_os = "linux")]
    // SAFETY: the range lies inside one live allocation of ours; MADV_HUGEPAGE changes
    // how its pages are backed, never their contents. A refusal (no THP) is harmless.
    unsafe {
        libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_is_advised_again_only_when_it_moved_or_grew() {
        let mut pages = HugePages::default();
        let mut v: Vec<u8> = Vec::with_capacity(5 * HUGE_PAGE);
        pages.follow(&v);
        let advised = (pages.start, pages.bytes);
        assert_eq!(advised, (v.as_ptr() as usize, 5 * HUGE_PAGE));
        v.push(1);
        pages.follow(&v);
        assert_eq!((pages.start, pages.bytes), advised, "a push within capacity is not a new buffer");
        v.reserve(20 * HUGE_PAGE);
        pages.follow(&v);
        assert_eq!((pages.start, pages.bytes), (v.as_ptr() as usize, v.capacity()));
        assert_eq!(v[0], 1);
    }
}
