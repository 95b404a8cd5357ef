//! A software prefetch: ask the CPU to start loading a cache line before the code that
//! reads it runs, so that cache misses on independent data overlap instead of being
//! waited on one after another (the engines' walks over memory far larger than the
//! caches: a pipeline's keys, an HNSW node's neighbours).
//!
//! Must never: be relied on for meaning. It is a hint; on targets without one it does
//! nothing.

/// Start loading the cache line holding `at` into every level of the cache.
#[inline(always)]
pub fn prefetch<T>(at: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults and changes nothing the program can observe,
    // whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(at as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}
